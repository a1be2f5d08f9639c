"""``hlox.ffi`` (``jax.ffi``): call C/C++ functions registered with XLA from hlox programs.

A handler written against XLA's FFI headers (``include_dir()``) is registered by name with
``register_ffi_target`` (a ``PyCapsule`` of its function pointer: ``pycapsule``), then called
with ``ffi_call(name, result_shape_dtypes)(*arrays, **attributes)`` inside or outside ``jit``.
``ffi_lowering`` makes a lowering rule for primitives defined with ``hlox.extend``.
"""
from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from hlox.api import typeof
from hlox.core.avals import ShapedArray, abstract_token
from hlox.core.hashable import FrozenDict, HashableArray
from hlox.random import key_data
from hlox.random.prng import PRNGKeyArray
from hlox.lax.ffi_call import (VMAP_METHODS, build_ffi_lowering_function, default_layout,
                               ffi_call_p, ffi_lowering, layout_for_lowering)
from hlox.runtime import ffi as runtime_ffi

__all__ = ["abstract_token", "build_ffi_lowering_function", "ffi_call", "ffi_lowering",
           "include_dir", "pycapsule", "register_ffi_target",
           "register_ffi_target_as_batch_partitionable", "register_ffi_type",
           "register_ffi_type_id"]


def register_ffi_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                        **kwargs) -> None:
  """Register the handler ``fn`` (a ``PyCapsule``, or a dict of them per FFI stage such as
  ``"execute"``) as target ``name`` on ``platform``. ``api_version`` 1 is XLA's typed FFI,
  0 the older custom-call ABI; ``kwargs`` (e.g. ``traits``) go to jaxlib."""
  runtime_ffi.register_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj, platform: str = "cpu") -> None:
  """Removed in JAX (jaxlib > 0.3.81): use ``register_ffi_type``. Always raises."""
  raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration, platform: str = "cpu") -> None:
  """Register a user type for FFI handlers: ``type_registration`` is a dict with a
  ``"type_id"`` capsule (and optionally ``"type_info"``)."""
  runtime_ffi.register_type(name, type_registration, platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
  """Declare target ``name`` batch partitionable: a call sharded along its leading
  dimensions runs the target independently on each shard, with no gathering."""
  runtime_ffi.register_batch_partitionable(name)


def pycapsule(funcptr):
  """Wrap a ``ctypes`` function pointer (e.g. ``ctypes.cdll.LoadLibrary(path).fn``) in the
  ``PyCapsule`` that ``register_ffi_target`` takes."""
  destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
  new_capsule = ctypes.pythonapi.PyCapsule_New
  new_capsule.restype = ctypes.py_object
  new_capsule.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
  return new_capsule(funcptr, None, destructor(0))


def include_dir() -> str:
  """The directory of the XLA FFI headers bundled with jaxlib (``xla/ffi/api/ffi.h``)."""
  return runtime_ffi.include_dir()


def _result_avals(results) -> tuple:
  avals = []
  for position, result in enumerate(results):
    if result is abstract_token:
      avals.append(result)
      continue
    if not (hasattr(result, "shape") and hasattr(result, "dtype")):
      raise ValueError("All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                       f"attributes. Got {result} at position {position}.")
    # Declared dtypes are kept as given (int64 stays int64 without x64), as in JAX: the
    # handler writes buffers of exactly these types.
    avals.append(ShapedArray(tuple(result.shape), np.dtype(result.dtype)))
  return tuple(avals)


def _same_type(a, b) -> bool:
  if a is abstract_token or b is abstract_token:
    return a is b
  return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype


def _call_layouts(avals, layouts, count_error: str) -> tuple:
  """Minor-to-major layouts for ``avals`` from ``ffi_call``'s (None: row-major throughout;
  else one per value, major-to-minor sequences or Layouts; XLA wants minor-to-major)."""
  if layouts is None:
    return tuple(map(default_layout, avals))
  if len(layouts) != len(avals):
    raise ValueError(count_error.format(n=len(avals), m=len(layouts)))
  return tuple(layout_for_lowering(aval, layout if layout is None
                                   or hasattr(layout, "major_to_minor") else layout[::-1])
               for aval, layout in zip(avals, layouts))


def _hashable_attributes(kwargs) -> tuple:
  out = []
  for name, value in sorted(kwargs.items()):
    if isinstance(value, np.ndarray):
      value = HashableArray(value)
    elif isinstance(value, dict):
      value = FrozenDict(value)
    else:
      try:
        hash(value)
      except TypeError as e:
        raise TypeError(f"Non-hashable keyword argument to ffi_call {name}: {value}") from e
    out.append((name, value))
  return tuple(out)


def ffi_call(target_name: str, result_shape_dtypes, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases: dict | None = None, custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None):
  """A function that calls the FFI target ``target_name``: ``ffi_call(name, results)(*args,
  **attributes)``.

  ``result_shape_dtypes`` is one object with ``shape`` and ``dtype`` (``ShapeDtypeStruct``,
  an array; ``abstract_token`` for a token) or a sequence of them: the call returns one
  array or a sequence. Keyword arguments of the call are the handler's attributes (numbers,
  strings, NumPy arrays, dicts). Layouts are major-to-minor sequences or ``Layout`` objects
  per input / output (``None``: row-major); ``input_output_aliases`` maps an input index to
  the output that reuses its buffer. ``vmap_method`` says how ``vmap`` runs the call
  (``"sequential"``, ``"sequential_unrolled"``, ``"expand_dims"``, ``"broadcast_all"``,
  ``"legacy_vectorized"``); with ``None`` it cannot be vmapped. ``has_side_effect`` keeps
  calls whose results are unused. Targets of custom-call API versions below 4 take
  ``legacy_backend_config`` (an opaque string) instead of attributes.
  """
  if vmap_method is not None and vmap_method not in VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods "
                     f"{[*VMAP_METHODS, None]}, but got: {vmap_method}")
  multiple_results = isinstance(result_shape_dtypes, Sequence)
  if multiple_results:
    result_avals = _result_avals(result_shape_dtypes)
    output_layouts_ = output_layouts
  else:
    result_avals = _result_avals([result_shape_dtypes])
    output_layouts_ = (output_layouts,)
  if custom_call_api_version >= 4 and legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")

  def call(*args, **attributes):
    # A typed PRNG key array is passed as its data (the handler sees the uint32 words).
    args = [key_data(x) if isinstance(x, PRNGKeyArray) else x for x in args]
    in_avals = [typeof(x) for x in args]
    in_layouts = _call_layouts(in_avals, input_layouts,
                               "The number of input arguments ({n}) must equal the number of "
                               "input layouts ({m}).")
    out_layouts = _call_layouts(result_avals, output_layouts_,
                                "The number of outputs ({n}) must equal the number of output "
                                "layouts ({m}).")
    aliases = _checked_aliases(input_output_aliases, in_avals, result_avals, in_layouts,
                               out_layouts)
    results = ffi_call_p.bind(
        *args, result_avals=result_avals, vmap_method=vmap_method, target_name=target_name,
        has_side_effect=has_side_effect, input_layouts=in_layouts, output_layouts=out_layouts,
        input_output_aliases=aliases, custom_call_api_version=custom_call_api_version,
        legacy_backend_config=legacy_backend_config,
        attributes=_hashable_attributes(attributes))
    if not multiple_results:
      return results[0]
    return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)

  return call


def _checked_aliases(aliases, in_avals, out_avals, in_layouts=None, out_layouts=None, *,
                     n_inputs=None) -> tuple:
  """``input_output_aliases`` as sorted ``(input, output)`` pairs, each checked to join an
  input and an output of the same type (and layout, when layouts are given).

  ``n_inputs``: the bound input indices are checked against (the flat inputs by default;
  ``buffer_callback`` checks against its positional arguments, as JAX's does)."""
  n_inputs = len(in_avals) if n_inputs is None else n_inputs
  checked = []
  for i, o in sorted((aliases or {}).items()):
    i, o = int(i), int(o)
    mapping = f"input_output_aliases contains the mapping '{i}:{o}'"
    if i >= n_inputs:
      raise ValueError(f"{mapping} with input index {i} outside the range [0, {n_inputs}).")
    if o >= len(out_avals):
      raise ValueError(f"{mapping} with output index {o} outside the range "
                       f"[0, {len(out_avals)}).")
    if not _same_type(in_avals[i], out_avals[o]):
      raise ValueError(f"{mapping} referring to an input with abstract value {in_avals[i]} "
                       f"and an output with a different abstract value {out_avals[o]}.")
    if in_layouts is not None and in_layouts[i] != out_layouts[o]:
      raise ValueError(f"{mapping} referring to an input with layout {in_layouts[i]} and an "
                       f"output with a different layout {out_layouts[o]}.")
    checked.append((i, o))
  return tuple(checked)
