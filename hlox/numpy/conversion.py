"""``array`` and ``asarray``: Python scalars, NumPy arrays, Arrays, tracers and nested
sequences of them as Arrays, with JAX's dtype and weak-type rules.

The bottom room of ``hlox.numpy``: it imports no other ``hlox.numpy`` module, so ``util``
(whose argument helpers turn lists into arrays) and every other room can use it.
``creation`` re-exports both functions.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import Tracer, eval_trace, trace_ctx
from hlox.lax.device_put import put_traced_as_created
from hlox.runtime.array import (Array, Sharding, SingleDeviceSharding, device_put,
                                put_requested)

__all__ = ["array", "asarray"]

_python_scalars = (bool, int, float, complex)


def _user_dtype(dtype, name: str):
  """A user-supplied dtype, canonicalized (``float`` -> float32 unless x64; an explicit
  64-bit dtype per ``explicit_x64_dtypes``)."""
  if dtype is None:
    return None
  if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
    raise TypeError(f"{name}: cannot interpret {dtype!r} as a data type (did you mean to "
                    "pass the shape as a tuple?)")
  try:
    return dtypes.check_user_dtype(dtype, name)
  except TypeError as e:
    if dtypes.is_extended(dtype):  # a typed key's dtype: only keys are of it
      return dtype
    raise TypeError(f"{name}: invalid dtype {dtype!r}: {e}") from None


def _put(x, device, out_sharding=None, name: str = "array"):
  """``x`` placed as the caller's ``device=`` (a device or a sharding) or ``out_sharding=``
  (a sharding or a ``PartitionSpec`` over the current mesh) asks; JAX takes only one."""
  if out_sharding is not None:
    if device is not None:
      raise ValueError(f"{name}: only one of `device` or `out_sharding` can be set, got "
                       f"device={device!r} and out_sharding={out_sharding!r}")
    return lax.apply_out_sharding(x, out_sharding, name)
  if device is None:
    return x
  if isinstance(x, Tracer):
    # As JAX: a sharding over a mesh lays the value out; a device (as the single-device
    # sharding JAX makes of it) is a ``device_put`` equation, which places the program.
    if isinstance(device, Sharding) and not isinstance(device, SingleDeviceSharding):
      return lax.apply_out_sharding(x, device, name)
    return put_traced_as_created(x, device)
  if isinstance(x, Array) and x.committed and hasattr(device, "platform"):
    # as JAX (a conversion computed on ``x``'s device asked to give its result on another)
    here = x.sharding.device_set
    if device not in here:
      ids = sorted(d.id for d in here)
      raise ValueError(
          "Received incompatible devices for jitted computation. Got argument x of "
          f"convert_element_type with shape {x.dtype.name}{list(x.shape)} and device ids "
          f"{ids} on platform {device.platform.upper()} and device ids [{device.id}] on "
          f"platform {device.platform.upper()}")
  return device_put(x, device)


def array(object, dtype=None, *args, copy=True, order="K", ndmin: int = 0, device=None,
          out_sharding=None):
  """Create an Array from array data.

  Accepts Arrays, tracers, NumPy arrays and scalars, Python scalars, objects with
  ``__jax_array__`` and nested lists or tuples of these. Sequences holding traced values are
  assembled with ``lax`` operations, so ``jnp.array([x, 2 * x])`` works under ``jit``. Without
  ``dtype`` the dtype is inferred with JAX's promotion rules and canonicalized (64-bit values
  become 32-bit unless x64 is enabled); the result is weakly typed only when ``object`` itself is
  (a Python scalar or a weakly typed array). Python ints that do not fit the dtype raise an
  OverflowError; ragged sequences raise a ValueError.

  With ``copy=True`` (the default) an Array input gets its own buffer, as in JAX: the original may
  be donated (and deleted) while the copy lives on.

  Args:
    object: the data: an array, scalar, or (nested) sequence of them.
    dtype: the dtype of the result; None (default) infers it from ``object``.
    *args: deprecated positional spellings of ``copy``, ``order`` and ``ndmin`` (they warn with a
      DeprecationWarning).
    copy: whether an Array input is copied into a new buffer. Default True.
    order: memory layout; only ``'K'`` (the default) or None is supported, anything else raises
      NotImplementedError.
    ndmin: the minimum number of dimensions of the result: leading axes of length 1 are added as
      needed. Default 0.
    device: a device or sharding to place the result on; None (default) uses the default device
      (or leaves a traced value where it is).
    out_sharding: a sharding or ``PartitionSpec`` (over the current mesh) for the result; give at
      most one of ``device`` and ``out_sharding``.

  Returns:
    An Array (a tracer inside a transformation) of ``object``'s shape, with at least ``ndmin``
    dimensions, and the given or inferred dtype.

  Examples:
    >>> jnp.array([1, 2.5])
    Array([1. , 2.5], dtype=float32)
    >>> jnp.array([[1, 2], [3, 4]], dtype=jnp.int8)
    Array([[1, 2],
           [3, 4]], dtype=int8)
    >>> jnp.array(3)
    Array(3, dtype=int32, weak_type=True)

  See also:
    :func:`hlox.numpy.asarray`, which does not copy by default.
  """
  if args:
    copy, order, ndmin = _positional_options(args, copy, order, ndmin)
  if order is not None and order != "K":
    raise NotImplementedError("array: only order='K' is supported")
  dtype = _user_dtype(dtype, "array")
  ndmin = operator.index(ndmin)
  if dtype is not None and getattr(dtype, "kind", None) == "T":  # (key dtypes have none)
    return _string_array(object, dtype, ndmin, device)
  if hasattr(object, "__jax_array__") and not isinstance(object, (Array, Tracer)):
    object = object.__jax_array__()
  weak = dtype is None and dtypes.is_weakly_typed(object)

  if (dtype is None and ndmin == 0 and device is None and out_sharding is None
      and trace_ctx.trace is not eval_trace and _stageable(object)):
    # Traced, a NumPy array or a number is lifted into the trace as it is (JAX's
    # ``lax.stage``): one constant per array object, however many times it is converted,
    # and a number stays a literal of the jaxpr.
    if type(object) in _python_scalars:
      _check_scalar_fits(object, None)
    return lax.stage(object)
  if isinstance(object, (Array, Tracer)):
    out = object
    if dtype is not None:
      out = lax.convert_element_type(out, dtype, weak_type=False)
    elif (not copy and isinstance(out, Tracer) and dtypes.extended_dtype_of(out) is None
          and out.to_concrete_value() is not None):
      # As JAX: a traced value whose value is known (a JVP primal) is still converted, so that
      # its transformations' results are Arrays (the tangent of jvp(asarray)).
      out = lax.convert_element_type_p.bind(out, new_dtype=out.dtype,
                                            weak_type=out.aval.weak_type)
    if copy and out is object:
      # A fresh buffer: the original may be donated (deleted) while the copy lives on. Traced
      # too, so that transformations (jvp, vjp, vmap) give copies of their values as well.
      out = lax.copy_p.bind(out)
  elif isinstance(object, (list, tuple)):
    leaves = _leaves(object)
    if dtype is None:
      dtype = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
    out = _assemble(object, dtype)
    if not isinstance(out, (Array, Tracer)):
      out = put_requested(out)  # of the user's dtype or a canonical one
  elif dtypes.extended_dtype_of(object) is not None:
    # Typed PRNG keys are arrays of their own dtype (immutable: no copy needed).
    if dtype is not None and dtype != object.dtype:
      raise ValueError(f"Cannot convert_element_type from {object.dtype} to {dtype}")
    if ndmin > object.ndim:
      object = object.reshape((1,) * (ndmin - object.ndim) + object.shape)
    return object
  else:
    if object is None:
      raise ValueError("None is not a valid value for jnp.array")
    if type(object) in _python_scalars:
      _check_scalar_fits(object, dtype)
    elif type(object) is np.ndarray and object.dtype.kind == "T":
      return _string_array(object, dtype, ndmin, device)
    out = _host_array(object, dtype, weak)
  if ndmin > out.ndim:
    out = lax.expand_dims(out, tuple(range(ndmin - out.ndim)))
  return _put(out, device, out_sharding, "array")


def _stageable(object) -> bool:
  """Whether traced ``jnp.array(object)`` is ``object`` itself lifted into the trace: a
  Python number, or a NumPy array or number of a canonical numeric dtype."""
  if type(object) in _python_scalars:
    return True
  if type(object) is np.ndarray or isinstance(object, np.number):
    return (object.dtype.kind in "biufc"
            and dtypes.canonicalize_dtype(object.dtype) == object.dtype)
  return False


def _string_array(object, dtype, ndmin, device):
  """A NumPy StringDType array on a CPU device (no XLA type holds strings: such arrays are
  only stored and read back); JAX's TypeErrors for anything else."""
  if not isinstance(object, np.ndarray):
    raise TypeError("Currently, string arrays can only be made from NumPy arrays. Got:  "
                    f"{type(object)}.")
  if dtype is not None and (object.dtype.kind == "T") != (dtype.kind == "T"):
    raise TypeError(f"Cannot make an array with dtype {dtype} from an object with dtype "
                    f"{object.dtype}.")
  if ndmin > object.ndim:
    raise TypeError(f"ndmin {ndmin} cannot be greater than object's ndims {object.ndim} for "
                    "string arrays.")
  return device_put(object, device)


def _positional_options(args, copy, order, ndmin):
  """``copy``, ``order`` and ``ndmin`` passed positionally (deprecated in JAX, as here)."""
  if len(args) > 3:
    raise TypeError(f"array() takes at most 5 positional arguments but {len(args) + 2} were "
                    "given")
  given = [copy, order, ndmin]
  for i, name in enumerate(("copy", "order", "ndmin")):
    if i < len(args) and given[i] != (True, "K", 0)[i]:
      raise TypeError(f"array() got multiple values for argument '{name}'")
  warnings.warn("Passing the copy, order, and ndmin arguments to jnp.array positionally is "
                "deprecated. Use keyword arguments instead.", DeprecationWarning, stacklevel=3)
  return (list(args) + given[len(args):])[:3]


def _check_scalar_fits(x, dtype, in_list: bool = False) -> None:
  """Python ints must fit the integer dtype they become (NumPy 2 and JAX raise too, with
  these texts: NumPy's for an element of a list, JAX's own for a lone scalar)."""
  if type(x) is not int:
    return
  target = dtypes.python_scalar_dtype(x) if dtype is None else dtype
  if dtypes.is_int(target):
    info = dtypes.iinfo(target)
    if not info.min <= x <= info.max:
      if in_list:
        raise OverflowError(f"Python int too large to convert to {np.dtype(target).name}: "
                            f"{x}")
      raise OverflowError(f"Python int {x} too large to convert to {np.dtype(target).name}")


def _host_array(x, dtype, weak):
  """A NumPy-convertible host value on the device, cast to ``dtype``."""
  if type(x) in _python_scalars and dtype is None:
    return device_put(x)
  value = np.asarray(x) if dtype is None else _numpy_cast(x, dtype)
  # ml_dtypes (bfloat16, float8, int4...) are NumPy "void" kinds that hlox does support.
  ml_dtype = value.dtype.type.__module__.startswith("ml_dtypes")
  if value.dtype.kind in "OUSV" and value.dtype != dtypes.float0 and not ml_dtype:
    raise TypeError(f"JAX only supports number, bool, and string dtypes, got dtype "
                    f"{value.dtype}: jnp.array cannot convert a value of type "
                    f"{type(x).__name__}")
  if value.ndim == 0 and not weak and trace_ctx.trace is not eval_trace and not ml_dtype:
    # Traced, a host scalar stays one: a literal of the jaxpr, as JAX's (its conversion
    # to ``dtype`` is folded at trace time), not a device constant -- unless it is of a
    # 64-bit dtype the user asked for that 'allow' keeps (a literal would be narrowed).
    canonical = dtypes.canonicalize_dtype(value.dtype)
    if canonical.kind in "biufc" and (dtype is None or canonical == value.dtype):
      return lax.stage(value.astype(canonical, copy=False))
  if dtype is not None:  # the user's dtype (a 64-bit one kept under 'allow' stays)
    return put_requested(value, weak_type=weak)
  return device_put(value, weak_type=weak)


def _numpy_cast(x, dtype):
  value = np.asarray(x)
  if value.dtype.kind == "c" and not dtypes.is_complex(dtype):
    value = value.real  # dropping the imaginary part, as hlox.numpy.astype does
  return value.astype(dtype)


def _leaves(tree) -> list:
  out = []
  stack = [tree]
  while stack:
    x = stack.pop()
    if isinstance(x, (list, tuple)):
      stack.extend(reversed(x))
    elif x is None:
      raise ValueError("None is not a valid value for jnp.array")
    else:
      if hasattr(x, "__jax_array__") and not isinstance(x, (Array, Tracer)):
        x = x.__jax_array__()
      out.append(x)
  return out


def _has_device_values(tree) -> bool:
  if isinstance(tree, (list, tuple)):
    return any(_has_device_values(x) for x in tree)
  return isinstance(tree, (Array, Tracer)) or hasattr(tree, "__jax_array__")


def _assemble(tree, dtype):
  """Stack a nested sequence: a NumPy array if it holds only host values, else an Array or
  tracer built with ``lax.concatenate``."""
  if not _has_device_values(tree):
    if isinstance(tree, (list, tuple)):
      for leaf in _leaves(tree):
        if type(leaf) in _python_scalars:
          _check_scalar_fits(leaf, dtype, in_list=True)
    return _numpy_cast(tree, dtype)
  if not isinstance(tree, (list, tuple)):
    if hasattr(tree, "__jax_array__") and not isinstance(tree, (Array, Tracer)):
      tree = tree.__jax_array__()
    return lax.convert_element_type(tree, dtype)
  # Each element is converted and given its leading axis before the next one is converted
  # (JAX's order: a traced jnp.array([a, b]) prints convert, broadcast, convert, broadcast).
  rows, shapes = [], set()
  for x in tree:
    p = _assemble(x, dtype)
    shapes.add(np.shape(p))
    rows.append(p[None] if isinstance(p, np.ndarray) else lax.expand_dims(p, (0,)))
  if len(shapes) != 1:
    raise ValueError(f"array: setting an array element with a sequence: the nested sequence "
                     f"has an inhomogeneous shape (elements of shapes "
                     f"{sorted(shapes, key=len)})")
  # Wide lists are joined as a tree of concatenations, which compiles faster.
  while len(rows) > 16:
    rows = [lax.concatenate(rows[i:i + 16], 0) for i in range(0, len(rows), 16)]
  return lax.concatenate(rows, 0)


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """Convert the input to an Array, without copying when it already is one.

  It is :func:`hlox.numpy.array` with ``copy=False`` by default: an Array of the requested dtype
  is returned as it is. NumPy arrays, scalars and (nested) sequences are converted with JAX's
  dtype rules (a Python scalar gives a weakly typed Array).

  Args:
    a: the data: an array, scalar, or (nested) sequence of them.
    dtype: the dtype of the result; None (default) infers it from ``a``.
    order: memory layout; only ``'K'`` or None (the default) is supported.
    copy: if True, an Array input is copied into a new buffer; None or False (default) reuse it
      when no conversion is needed.
    device: a device or sharding to place the result on; None (default) uses the default device.
    out_sharding: a sharding or ``PartitionSpec`` (over the current mesh) for the result; give at
      most one of ``device`` and ``out_sharding``.

  Returns:
    An Array (a tracer inside a transformation) of ``a``'s shape with the given or inferred dtype.

  Examples:
    >>> jnp.asarray(np.arange(3))
    Array([0, 1, 2], dtype=int32)
    >>> jnp.asarray([1, 2], dtype=jnp.float32)
    Array([1., 2.], dtype=float32)
    >>> x = jnp.array([1., 2.])
    >>> jnp.asarray(x) is x
    True

  See also:
    :func:`hlox.numpy.array`.
  """
  if dtype is not None:
    dtype = _user_dtype(dtype, "asarray")
  return array(a, dtype=dtype, copy=bool(copy), order=order or "K", device=device,
               out_sharding=out_sharding)
