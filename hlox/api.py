"""User-facing transformations: jit, vmap, pmap, make_jaxpr, eval_shape, and friends.

This module handles arguments (pytrees, static arguments, donation, mapped axes) and caching;
the transformations themselves live in ``interpreters/`` (batching, the pmap replica
machinery) and ``lax/call.py`` (the ``jit`` primitive).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import operator
import threading
import types
import warnings
import weakref
from typing import Callable

import numpy as np

from hlox import monitoring

from hlox import _tree_transform as tree_util
from hlox.cache import LRUCache
from hlox.config import TRACED_OPTIONS, config
from hlox.config import default_device as default_device_option
from hlox.core import dtypes, sharding_types
from hlox.core import source_info as source_info_lib
from hlox.core.source_info import named_scope
from hlox.core.traceback_util import api_boundary, hide_wrapper_frames
from hlox.core.wrapping import LazySignature, wraps
from hlox.core.avals import ShapedArray, Token, abstract_token
from hlox.core.jaxpr import JaxprTrace, convert_constvars, trace_to_jaxpr
from hlox.core.refs import is_ref_aval
from hlox.core.shape_poly import is_symbolic_dim
from hlox.core.tracer import Tracer, eval_trace, extend_axis_env, get_aval, trace_ctx
from hlox.errors import (ConcretizationTypeError, DistributedRuntimeError,
                         NonConcreteBooleanIndexError, TracerArrayConversionError,
                         TracerIntegerConversionError)
from hlox.interpreters import (batching, captured_constants, key_reuse, nan_checks,
                               state_discharge, xla)
from hlox.interpreters import pmap as pmap_interp
from hlox.interpreters import partitioned, replicated
from hlox.interpreters.ad import JVPTrace, inlined_call_results
from hlox.lax.call import (CompiledCall, argument_buffers, compile_closed_jaxpr,
                           forget_compiled, host_outputs, jit_p, signature)
from hlox.lax import ref_view
from hlox.lax import state as ref_lib
from hlox.runtime import client, introspection, placement
from hlox.runtime import sharding as sharding_lib
from hlox.runtime import layout as layout_lib
from hlox.lax.entry_layout import entry_layout_p
from hlox.lax.sharding_constraint import constrain as with_sharding_constraint
from hlox.runtime.array import SCALAR_TYPES, Array, device_put
from hlox.runtime.array import type_sharding as array_type_sharding

flatten_fast = tree_util.flatten_fast
_get_sig = operator.attrgetter("_sig")

__all__ = ["jit", "make_jaxpr", "eval_shape", "ShapeDtypeStruct", "disable_jit", "vmap", "pmap",
           "named_call", "named_scope", "copy_to_host_async"]

sharding_types.drop_size_one_axes = lambda: config._values["remove_size_one_mesh_axis_from_type"]


class ShapeDtypeStruct:
  """A shape and dtype standing in for an array (e.g. the results of ``eval_shape``)."""

  __slots__ = ("shape", "dtype", "weak_type", "_sharding", "_layout")

  def __init__(self, shape, dtype, weak_type: bool = False, sharding=None):
    self.shape = tuple(shape)
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified.")
    # (An extended dtype, such as a typed key's ``key<fry>``, is kept as it is.)
    self.dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
    self.weak_type = weak_type
    if sharding is not None and not isinstance(
        sharding, (sharding_lib.Sharding, sharding_lib.PartitionSpec, layout_lib.Format)):
      raise ValueError("sharding should be an instance of `hlox.sharding.Sharding`, "
                       "`hlox.sharding.PartitionSpec` or `hlox.experimental.layout.Format`. "
                       f"Got {sharding} of type {type(sharding)}.")
    self._layout = None  # a device-local layout, given in a Format
    if isinstance(sharding, layout_lib.Format):
      if isinstance(sharding.layout, layout_lib.AutoLayout):
        raise TypeError("`Layout.AUTO` cannot be used in place of a device-local layout in "
                        f"a `ShapeDtypeStruct`. Got {sharding}")
      self._layout = sharding.layout
      sharding = sharding.sharding
    self._sharding = sharding

  @property
  def format(self):
    """The ``Format``: the device-local layout given (or None) and the sharding."""
    return layout_lib.Format(self._layout, self.sharding)

  @property
  def sharding(self):
    """The sharding given; a PartitionSpec is read over the current mesh (as JAX)."""
    if isinstance(self._sharding, sharding_lib.PartitionSpec):
      mesh = sharding_lib.concrete_mesh()
      if mesh is None:
        raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context "
                        "mesh cannot be empty. Please use `hlox.set_mesh` to set the mesh "
                        "context.")
      return sharding_lib.NamedSharding(mesh, self._sharding)
    return self._sharding

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return int(np.prod(self.shape, dtype=np.int64))

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  @property
  def aval(self):
    if dtypes.is_extended(self.dtype):
      return ShapedArray(self.shape, self.dtype)
    return ShapedArray(self.shape, dtypes.canonicalize_explicit(self.dtype), self.weak_type)

  @classmethod
  def like(cls, x) -> "ShapeDtypeStruct":
    """The shape, dtype, weak type (and sharding, if any) of ``x``: an array, a tracer, a
    NumPy value, a Python scalar or anything with ``shape`` and ``dtype``."""
    if isinstance(x, ShapeDtypeStruct):
      return cls(x.shape, x.dtype, weak_type=x.weak_type, sharding=x.sharding)
    if dtypes.is_extended(getattr(x, "dtype", None)) and not isinstance(x, Tracer):
      # typed keys: their words' sharding if those are committed to it
      (words,), _ = tree_util.tree_flatten(x)
      committed = isinstance(words, Array) and words.committed
      return cls(x.shape, x.dtype, sharding=x.sharding if committed else None)
    aval = _abstractify(x)
    if isinstance(x, Tracer):  # as its type says (split over Explicit mesh axes), if it is
      # (over the concrete mesh, where JAX's is over the abstract one: hlox's creation
      # functions take concrete shardings)
      split = getattr(x, "type_sharding", None)
      sharding = None if split is None else sharding_lib.named_of_type(split)
    elif isinstance(x, Array):  # as JAX: uncommitted arrays have no sharding to keep
      sharding = x.sharding if x.committed else None
    else:
      sharding = getattr(x, "sharding", None)
    return cls(aval.shape, aval.dtype, weak_type=aval.weak_type, sharding=sharding)

  def update(self, **kwargs) -> "ShapeDtypeStruct":
    """A copy with the given fields (``shape``, ``dtype``, ``weak_type``, ``sharding``)
    replaced."""
    unknown = set(kwargs) - {"shape", "dtype", "weak_type", "sharding"}
    if unknown:
      raise TypeError(f"ShapeDtypeStruct.update got unexpected fields {sorted(unknown)}")
    return ShapeDtypeStruct(kwargs.get("shape", self.shape), kwargs.get("dtype", self.dtype),
                            weak_type=kwargs.get("weak_type", self.weak_type),
                            sharding=kwargs.get("sharding", self.sharding if self._layout is
                                                None else self.format))

  def __repr__(self):
    sharding = self.sharding
    split = f", sharding={sharding}" if sharding is not None else ""
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{split}{weak})"

  def _compared(self) -> tuple:
    # As JAX: the sharding counts (a PartitionSpec as read over the current mesh).
    try:
      sharding = self.sharding
    except TypeError:  # a PartitionSpec and no mesh
      sharding = self._sharding
    return (self.shape, self.dtype, sharding, self.weak_type, self._layout)

  def __eq__(self, other):
    return isinstance(other, ShapeDtypeStruct) and self._compared() == other._compared()

  def __hash__(self):
    return hash(self._compared())


def _abstractify(x):
  if isinstance(x, ShapeDtypeStruct):
    return x.aval
  if type(x) is ShapedArray:  # a type itself (``jit(f).lower(core.ShapedArray(...))``)
    return x.strip_sharding() if x._sharding is not None else x
  try:
    return get_aval(x)
  except TypeError:
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type: pass arrays, "
                    "NumPy arrays or Python scalars (or mark the argument static)") from None


_OUTPUT_TYPES = (Tracer, Array, np.ndarray, np.generic, int, float, complex, bool)


def _check_outputs(fun, what, out, out_leaves) -> list:
  """``out_leaves``, a symbolic dimension among them turned into its value (shape
  polymorphism); JAX's TypeError for a leaf that is not an array, naming the function (and
  where it is defined) and the leaf's path in the output."""
  for i, leaf in enumerate(out_leaves):
    if not isinstance(leaf, _OUTPUT_TYPES) and is_symbolic_dim(leaf):
      out_leaves = list(out_leaves)
      out_leaves[i] = leaf.dimension_as_value()
    elif not isinstance(leaf, _OUTPUT_TYPES) and not _is_abstractable(leaf):
      path = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
      code = getattr(fun, "__code__", None)
      where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
      raise TypeError(f"function {_fun_name(fun)}{where} traced for {what} returned a value of "
                      f"type {type(leaf)} at output component {path or '()'}, which is not a "
                      "valid JAX type")
  return out_leaves


def fun_source_info(fun) -> str:
  """``name at file:line`` of a function (through partials and ``functools.wraps``), as JAX's
  messages name a traced function."""
  while isinstance(fun, functools.partial):
    fun = fun.func
  fun = inspect.unwrap(fun)
  code = getattr(fun, "__code__", None)
  if code is None:
    return _fun_name(fun)
  return f"{_fun_name(fun)} at {code.co_filename}:{code.co_firstlineno}"


def _is_abstractable(x) -> bool:
  try:
    _abstractify(x)
  except TypeError:
    return False
  return True


def abstractify_spec(x):
  """The aval of an argument of an abstract-only entry point (``eval_shape``, ``make_jaxpr``,
  ``linear_transpose``): an array, a ``ShapeDtypeStruct``, or, as in JAX, any object with
  ``shape`` and ``dtype`` attributes (and optionally ``weak_type``)."""
  if isinstance(x, ShapeDtypeStruct) or hasattr(x, "aval") or type(x) in (int, float, complex,
                                                                          bool):
    return _abstractify(x)
  shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
  if shape is not None and dtype is not None and not isinstance(x, (type, np.ndarray,
                                                                    np.generic)):
    try:
      return ShapedArray(tuple(shape), dtypes.canonicalize_dtype(np.dtype(dtype)),
                         bool(getattr(x, "weak_type", False)))
    except TypeError:
      pass
  return _abstractify(x)


def _argument_paths(fun, args, kwargs, static_argnums, static_argnames) -> list:
  """The path of each dynamic leaf of a jitted call, as JAX's messages name them: ``x``,
  ``x[0]['k']`` by parameter name, ``rest[2]`` for the third of ``*rest`` (``args[i]`` when
  the signature is unknown), ``y`` for keywords."""
  varargs = "args"
  try:
    params = inspect.signature(fun).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), "args")
  except (TypeError, ValueError):
    names = []
  positions = [i for i in range(len(args)) if i not in static_argnums]
  dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
  paths = []
  for p, _ in tree_util.tree_flatten_with_path(
      (tuple(args[i] for i in positions), dyn_kwargs))[0]:
    if p[0].idx == 0:
      i = positions[p[1].idx]
      paths.append((names[i] if i < len(names) else f"{varargs}[{i - len(names)}]")
                   + tree_util.keystr(p[2:]))
    else:
      paths.append(tree_util.keystr(p[1:], simple=True, separator="."))
  return paths


def _check_committed_devices(wrapped, args, kwargs, sigs) -> None:
  """JAX's error for arguments committed to different single devices, naming two of them
  (a signature is a tuple ``(aval, device)`` for an Array committed to one device)."""
  placed = [(i, s) for i, s in enumerate(sigs) if type(s) is tuple and hasattr(s[1], "platform")]
  if len({s[1] for _, s in placed}) < 2:
    return
  first = placed[0]
  second = next(p for p in placed if p[1][1] != first[1][1])
  paths = _argument_paths(wrapped.fun, args, kwargs, wrapped.static_argnums,
                          wrapped.static_argnames)
  described = [f"argument {paths[i] if i < len(paths) else f'args[{i}]'} of {wrapped.name} "
               f"with shape {sharding_types.type_str(sig[0], None)} and with device ids "
               f"[{sig[1].id}] on platform {sig[1].platform.upper()}" for i, sig in (first, second)]
  raise ValueError("Received incompatible devices for jitted computation. Got "
                   f"{described[0]} and {described[1]}")


def check_no_strings(leaves, avals) -> None:
  """JAX's TypeError for a string array given to a transformation that computes (string
  arrays can be stored, moved and vmapped over as they are, but no XLA program takes one)."""
  for x, aval in zip(leaves, avals):
    if getattr(getattr(aval, "dtype", None), "kind", None) == "T":  # (tokens have none)
      raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type.")


def _argument_error(fun_name, fun, args, kwargs, static_argnums, static_argnames, leaves,
                    bad) -> Exception:
  """JAX's message for a jit argument that is not an array, naming its path."""
  x = leaves[bad]
  paths = _argument_paths(fun, args, kwargs, static_argnums, static_argnames)
  path = paths[bad] if bad < len(paths) else f"args[{bad}]"
  if hasattr(x, "__jax_array__"):
    # As JAX: jit does not convert its arguments; an object that converts itself is passed
    # as a pytree (register it), or converted by the caller.
    return ValueError(
        f"Triggering __jax_array__() during abstractification is no longer supported: the "
        f"argument to {fun_name} at path {path} (of type {type(x)}) is not an array. Register "
        "its type as a pytree, or call jnp.asarray on it before passing it.")
  return TypeError(
      f"Error interpreting argument to {fun} as an abstract array. The problematic value "
      f"is of type {type(x)} and was passed to the function at path {path}.\nThis typically "
      "means that a jit-wrapped function was called with a non-array argument, and this "
      "argument was not marked as static using the static_argnums or static_argnames "
      "parameters of jax.jit.")


class disable_jit:
  """Context manager (and flag) that makes jitted functions run op by op, for debugging."""

  def __init__(self, disable: bool = True):
    self.disable = disable

  def __enter__(self):
    self._prev = config.disable_jit
    config.update("disable_jit", self.disable)

  def __exit__(self, *exc):
    config.update("disable_jit", self._prev)


def _fun_name(fun) -> str:
  name = getattr(fun, "__name__", None)
  if name:
    return name
  if isinstance(fun, functools.partial):  # as JAX: a partial is named after its function
    return _fun_name(fun.func)
  return type(fun).__name__


def _normalize_argnums(fun, argnums, argnames, what):
  """Resolve static/donate argnums and argnames against each other via the signature: as in
  JAX, one that is not given (None) is completed from the other; both given, they stand as
  the user wrote them (an argument is static only when passed the way they name it)."""
  complete = argnums is None or argnames is None
  if argnums is None:
    argnums = ()
  elif isinstance(argnums, int):
    argnums = (argnums,)
  if argnames is None:
    argnames = ()
  elif isinstance(argnames, str):
    argnames = (argnames,)
  argnums, argnames = tuple(int(i) for i in argnums), tuple(argnames)
  if not argnums and not argnames:  # nothing to resolve: skip the (slow) signature
    return argnums, argnames
  try:
    params = list(inspect.signature(fun).parameters.values())
  except (TypeError, ValueError):
    if what == "donate" and argnames:  # as JAX: names cannot be resolved without it
      raise ValueError(f"Getting the signature of function {fun} failed. Pass donate_argnums "
                       "instead of donate_argnames.") from None
    return argnums, argnames
  var = {p.name for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)} & set(argnames)
  if var:
    raise ValueError(f"Jitted function has invalid argnames {var} in {what}_argnames. These "
                     "are variable-length arguments (*args or **kwargs), which cannot be named")
  positional = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  if argnums and not any(p.kind == p.VAR_POSITIONAL for p in params):
    # As JAX: argnums must index the positional parameters (negative ones from the end).
    n = len(positional)
    if -min(argnums) > n or max(argnums) >= n:
      raise ValueError(f"Jitted function has {what}_argnums={argnums}, but only accepts {n} "
                       "positional arguments.")
    argnums = tuple(i % n for i in argnums)
  keyword = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
  pos_only = {p.name for p in params if p.kind == p.POSITIONAL_ONLY} & set(argnames)
  if pos_only:
    raise ValueError(f"Jitted function has invalid argnames {pos_only} in {what}_argnames. "
                     "These are positional-only")
  unknown = set(argnames) - keyword
  if unknown and not any(p.kind == p.VAR_KEYWORD for p in params):
    raise ValueError(f"Jitted function has invalid argnames {unknown} in {what}_argnames. "
                     "Function does not take these args.")
  names = set(argnames)
  nums = set(argnums)
  if not complete:
    return tuple(sorted(nums)), tuple(sorted(names))
  for i in argnums:
    if 0 <= i < len(positional) and params[i].kind != inspect.Parameter.POSITIONAL_ONLY:
      names.add(positional[i])
  for name in argnames:
    if name in positional:
      nums.add(positional.index(name))
  return tuple(sorted(nums)), tuple(sorted(names))


class _HashableStatic:
  """Wraps a static argument so cache keys compare it by ``==`` and ``hash``."""

  __slots__ = ("value", "_hash")

  def __init__(self, value, what):
    try:
      self._hash = hash(value)
    except TypeError as e:
      # JAX raises a ValueError here.
      raise ValueError(f"Non-hashable static arguments are not supported: static argument "
                       f"{what} of type {type(value).__name__}: {value!r} ({e}). Static "
                       "arguments must be hashable (use a tuple instead of a list, or pass "
                       "the value as a traced array argument)") from None
    self.value = value

  def __eq__(self, other):
    if type(other) is not _HashableStatic or type(self.value) is not type(other.value):
      return False
    try:
      return self.value == other.value
    except Exception as e:
      raise _static_comparison_error(self.value, other.value, e) from e

  def __hash__(self):
    return self._hash


def _static_comparison_error(a, b, error) -> ValueError:
  """JAX's ValueError for static arguments whose ``==`` raised while a cache was searched
  (two static values with the same hash are compared to tell cache entries apart)."""
  return ValueError(f"static arguments should be comparable using __eq__. Comparing two "
                    f"objects of types {type(a)} and {type(b)} raised "
                    f"{type(error).__name__}: {error}")


def _fast_key_comparison_error(wrapped, args, kwargs):
  """The ValueError to raise when searching the cache-hit path's keys for this call raised
  from a static argument's ``__eq__`` (None when it does not): the failed call compares
  again, pair by pair, the keys a dictionary lookup would have compared (same hash and
  length). Keys hold static values as they are, so that a hit costs nothing more."""
  keys = []
  try:
    if not kwargs:
      keys.append(wrapped._flat_key(args)[0])
    keys.append(wrapped._general_key(args, kwargs)[0])
    hashes = [None if k is None else hash(k) for k in keys]
  except Exception:
    return None
  for cached in list(wrapped._fast_cache):
    if type(cached) is not tuple:
      continue
    for key, h in zip(keys, hashes):
      if key is None or len(cached) != len(key) or hash(cached) != h:
        continue
      for a, b in zip(cached, key):
        if a is b:
          continue
        try:
          a == b
        except Exception as e:
          return _static_comparison_error(b, a, e)
  return None


# Leaf types a jitted call's positional arguments may have for the shortest cache-hit path:
# Arrays, and the host values whose signature is their type's (scalars) or their own aval.
_ARRAY_TYPE = frozenset((Array,))
_FLAT_LEAF_TYPES = SCALAR_TYPES | {np.ndarray, Array}
class _Marker:
  """A unique object compared by identity; pickled by reference (its name in this module),
  so that a pickled jitted function (cloudpickle) still recognizes it."""
  __slots__ = ("_name",)

  def __init__(self, name: str):
    self._name = name

  def __reduce__(self):
    return self._name

  def __repr__(self):
    return self._name


_HOST_ARGUMENTS = _Marker("_HOST_ARGUMENTS")  # marks flat keys of calls with host values
_STATIC_ARGUMENTS = _Marker("_STATIC_ARGUMENTS")  # in a flat key, before the static ones


class _FlatEntry(tuple):
  """A cache-hit entry for positional leaf arguments (see ``JitWrapped._remember_fast``):
  ``(execute, handlers, out_avals, device_keys, out_tree, single, compiled, device)``. A
  tuple, so the hot path unpacks it at C speed; its own type, so counting entries can skip
  it."""
  __slots__ = ()

  def __new__(cls, *fields):
    return tuple.__new__(cls, fields)


class _Traced:
  """A traced jitted function: the jaxpr (consts turned into leading args) and its output tree."""

  __slots__ = ("jaxpr", "consts", "out_tree", "in_avals", "ref_positions", "_discharged",
               "lowered")

  def __init__(self, jaxpr, consts, out_tree, in_avals):
    self.jaxpr = jaxpr
    self.consts = consts
    self.out_tree = out_tree
    self.in_avals = in_avals
    # Where the program's arguments (consts first) are array references: such a call runs
    # the discharged program and writes the references' new values back.
    self.ref_positions = tuple(i for i, v in enumerate(jaxpr.jaxpr.invars)
                               if is_ref_aval(v.aval))
    self._discharged = None
    self.lowered = False  # compiled for a call once (the captured-constants check ran)

  def discharged(self):
    """``(pure jaxpr, its consts)``: references in, their final values out after the
    outputs (``interpreters/state_discharge.py``)."""
    if self._discharged is None:
      self._discharged = convert_constvars(state_discharge.discharge_jaxpr(self.jaxpr))
    return self._discharged


# Device copies of big NumPy constants that jitted functions close over, shared by every
# function that closes over the same array (a weight matrix captured by several jitted
# steps is copied to the device once, not once per function). An entry lives as long as
# its NumPy array and is reused only while the array's contents are unchanged.
_const_copies: dict = {}


def _device_const(c, device):
  if type(c) is Token:  # no data: a token argument is not passed to the program
    return c
  if type(c) is not np.ndarray or c.nbytes < (1 << 16):
    return device_put(c, device)
  key = (id(c), device)
  hit = _const_copies.get(key)
  if hit is not None and hit[0]() is c and np.array_equal(np.asarray(hit[1]), c):
    return hit[1]
  arr = device_put(c, device)
  _const_copies[key] = (weakref.ref(c, lambda _, key=key: _const_copies.pop(key, None)), arr)
  return arr


class JitWrapped:
  """The callable ``jit(fun)`` returns. Call it, or ``.lower(*args)`` to see its StableHLO."""

  def __init__(self, fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
               keep_unused, inline):
    self.fun = fun
    self.static_argnums, self.static_argnames = _normalize_argnums(
        fun, static_argnums, static_argnames, "static")
    self.donate_argnums, self.donate_argnames = _normalize_argnums(
        fun, donate_argnums, donate_argnames, "donate")
    overlap = set(self.static_argnums) & set(self.donate_argnums)
    if overlap:
      # Name the parameters the user passed (JAX checks names and numbers separately).
      as_set = lambda v: {v} if isinstance(v, str) else set(v or ())
      by_name = as_set(static_argnames) & as_set(donate_argnames)
      kind = ("static_argnames and donate_argnames" if by_name
              else "static_argnums and donate_argnums")
      raise ValueError(f"jit: {kind} cannot intersect: arguments "
                       f"{sorted(by_name) or sorted(overlap)} cannot be both static and donated")
    self.keep_unused = keep_unused
    # What a nested ``jit`` equation of this function says (``eager_fused`` keeps its eager
    # executables' arguments, but its staged calls are as JAX's ``jit``, which does not).
    self.call_keep_unused = keep_unused
    self.inline = inline
    # jit's ``out_shardings`` (a tree prefix of the results), which its function applies as
    # constraints: kept for the results' attributes in the lowered text and for ``export``.
    self.out_shardings = None
    self.name = _fun_name(fun)
    self._simple = not (self.static_argnums or self.static_argnames or self.donate_argnums
                        or self.donate_argnames)
    self._static_positions = frozenset(self.static_argnums)
    # Calls with fewer positional arguments pass no static one (the shortest path's test).
    self._first_static = min(self.static_argnums, default=1 << 30)
    settings = (self.static_argnums, self.static_argnames, self.donate_argnums,
                self.donate_argnames, keep_unused, inline)
    # The trace cache, and (in_tree, *signatures) -> (fast call, consts, out_tree), read
    # directly on the fast path; shared by every jit of the same function and settings.
    self._trace_cache, self._call_cache = _shared_caches(fun, settings)
    self._fast_cache = self._call_cache._data
    functools.update_wrapper(self, fun, updated=())

  def __get__(self, obj, objtype=None):  # behave like a function when used as a method
    if obj is None:
      return self
    return functools.partial(self, obj)

  def _state(self) -> dict:
    """What JAX's jitted functions report from ``__getstate__``: the function, its name and
    its static arguments."""
    return {"function_name": self.name, "fun": self.fun, "static_argnums": self.static_argnums,
            "static_argnames": self.static_argnames}

  def __deepcopy__(self, memo):
    # Like a Python function, a jitted function has no state of its own to copy: its caches
    # are shared by every jit of the same function and settings anyway.
    return self

  # --- the call path ---
  def __call__(self, *args, **kwargs):
    return self._call_slow(args, kwargs)

  def _split_args(self, args, kwargs):
    """(dynamic args, dynamic kwargs, static key, donated flags per dynamic leaf)."""
    statics = []
    dyn_args = []
    for i, a in enumerate(args):
      if i in self.static_argnums:
        statics.append((i, _HashableStatic(a, f"at position {i}")))
      else:
        dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
      if k in self.static_argnames:
        statics.append((k, _HashableStatic(v, f"{k!r}")))
      else:
        dyn_kwargs[k] = v
    return tuple(dyn_args), dyn_kwargs, tuple(statics)

  def _donated_leaves(self, args, kwargs, dyn_args, dyn_kwargs):
    flags = []
    pos = [i for i in range(len(args)) if i not in self.static_argnums]
    for i, a in zip(pos, dyn_args):
      flags += [i in self.donate_argnums] * len(tree_util.tree_leaves(a))
    kw_flags = []
    for k in sorted(dyn_kwargs):
      kw_flags += [k in self.donate_argnames] * len(tree_util.tree_leaves(dyn_kwargs[k]))
    return tuple(flags + kw_flags)

  @api_boundary
  def _call_slow(self, args, kwargs):
    if config.disable_jit:
      return self.fun(*args, **kwargs)
    if self.inline and trace_ctx.trace is not eval_trace:
      if type(trace_ctx.trace) is JVPTrace:  # its results are a call's (arrays), as in JAX
        return inlined_call_results(trace_ctx.trace, self.fun(*args, **kwargs))
      return self.fun(*args, **kwargs)
    dyn_args, dyn_kwargs, statics = self._split_args(args, kwargs)
    leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    traced = self._get_traced(in_tree, leaves, statics, args, kwargs)
    if traced.ref_positions:
      return self._call_with_refs(traced, leaves, args, kwargs)
    # As JAX: no donation while NaN checks are on (a re-run needs the arguments).
    donated = self._donated_leaves(args, kwargs, dyn_args, dyn_kwargs) if (
        (self.donate_argnums or self.donate_argnames) and not nan_checks.enabled) else ()
    n_consts = len(traced.consts)
    donated_invars = (False,) * n_consts + donated if any(donated) else ()
    if trace_ctx.trace is not eval_trace or any(isinstance(x, Tracer) for x in leaves) or \
        any(isinstance(c, Tracer) for c in traced.consts):
      outs = jit_p.bind(*traced.consts, *leaves, jaxpr=traced.jaxpr, name=self.name,
                        donated_invars=donated_invars or (False,) * (n_consts + len(leaves)),
                        keep_unused=self.call_keep_unused, inline=self.inline)
      return traced.out_tree.unflatten(outs)
    after_keys = None
    if config.debug_key_reuse:  # JAX's eager key-reuse checks around the call
      untracked = {i for i, leaf in enumerate(tree_util._public.tree_leaves(
          (dyn_args, dyn_kwargs))) if getattr(leaf, "_untracked_keys", False)}
      after_keys = key_reuse.jit_call_checks(traced.jaxpr, traced.consts, leaves, untracked)
    sigs = tuple(signature(x) for x in leaves)
    _check_committed_devices(self, args, kwargs, sigs)
    const_sigs = tuple(signature(c) for c in traced.consts)
    if not traced.lowered:
      traced.lowered = True
      captured_constants.warn_if_large(traced.jaxpr.jaxpr, traced.consts)
    compiled = compile_closed_jaxpr(traced.jaxpr, const_sigs + sigs, self.name,
                                    donated_invars, self.keep_unused)
    if getattr(compiled, "replicated", False):  # jit of pmap: it places its own consts
      consts = list(traced.consts)
    else:
      device = compiled.device if compiled.device_key is not None else None
      consts = [c if type(c) is Array else _device_const(c, device) for c in traced.consts]
    if not donated_invars and compiled.executable is not None:
      if kwargs or not self._simple:  # the key the fast path in ``_make_jitted`` builds
        key = self._general_key(args, kwargs)[0]
      else:
        key = (flatten_fast(args)[1], *sigs)
      flat_key = None
      if not kwargs and not (self.donate_argnums or self.donate_argnames):
        flat_key = self._flat_key(args)[0]
      self._remember_fast(key, compiled, consts, traced.out_tree, traced.jaxpr.out_avals,
                          flat_key)
    outs = host_outputs(compiled, traced.jaxpr.out_avals)(consts + leaves)
    if donated_invars:
      _forget_donated(leaves, donated)
    if after_keys is not None:
      after_keys(outs)
    return traced.out_tree.unflatten(outs)

  def _call_with_refs(self, traced, leaves, args, kwargs):
    """A call whose program reads or writes array references (arguments or closed over):
    the references' values go in, the discharged program runs as one ``jit`` (staged under
    an outer trace), and their final values are written back."""
    flat = list(traced.consts) + list(leaves)
    n_consts = len(traced.consts)
    refs = [flat[i] for i in traced.ref_positions]
    _check_ref_aliasing(self.fun, refs, traced.ref_positions, n_consts, lambda: _argument_paths(
        self.fun, args, kwargs, self.static_argnums, self.static_argnames))
    if type(trace_ctx.trace) is JaxprTrace:
      # Staged as JAX stages it: one ``jit`` equation on the references themselves (its
      # discharge rule makes it pure when the enclosing program is lowered).
      outs = jit_p.bind(*flat, jaxpr=traced.jaxpr, name=self.name,
                        donated_invars=(False,) * len(flat), keep_unused=self.call_keep_unused,
                        inline=self.inline)
      return traced.out_tree.unflatten(outs)
    jaxpr, consts = traced.discharged()
    for i, r in zip(traced.ref_positions, refs):
      flat[i] = ref_lib.get(r, ...)
    outs = jit_p.bind(*consts, *flat, jaxpr=jaxpr, name=self.name,
                      donated_invars=(False,) * (len(consts) + len(flat)),
                      keep_unused=self.call_keep_unused, inline=self.inline)
    n_out = len(outs) - len(refs)
    for r, new in zip(refs, outs[n_out:]):
      ref_lib.set(r, ..., new)
    return traced.out_tree.unflatten(outs[:n_out])

  def _flat_key(self, args):
    """``(key, dynamic arguments)`` of a call with positional arguments only on the shortest
    cache-hit path, or ``(None, None)`` when its dynamic arguments are not all leaves
    (Arrays, scalars, NumPy arrays) or a static one is unhashable. The key is the dynamic
    arguments' signatures (after ``_HOST_ARGUMENTS`` when some are host values: a scalar's
    signature can equal an Array's), then ``_STATIC_ARGUMENTS`` and each static argument
    with its type (as ``_HashableStatic`` compares them) when there are any. It never equals
    a general key, whose first element is a PyTreeDef."""
    static_pos = self._static_positions
    if static_pos and len(args) > self._first_static:
      dyn, statics = [], [_STATIC_ARGUMENTS]
      for i, a in enumerate(args):
        if i in static_pos:
          statics += (a, type(a))
        else:
          dyn.append(a)
    else:
      dyn, statics = args, ()
    types = set(map(type, dyn))
    try:
      if types <= _ARRAY_TYPE:
        key = (*map(_get_sig, dyn), *statics)
      elif types <= _FLAT_LEAF_TYPES:
        key = (_HOST_ARGUMENTS, *map(signature, dyn), *statics)
      else:  # pytrees, or leaves of other types
        return None, None
      if statics:
        hash(key)
    except Exception:  # no signature, or an unhashable static value: the general path
      return None, None
    return key, dyn

  def _general_key(self, args, kwargs):
    """``(fast-cache key, dynamic leaves)`` for a call with static arguments or keywords
    (the cache-hit path of such calls): static values with their types (as
    ``_HashableStatic`` compares them), the dynamic arguments' tree and signatures."""
    static_pos = self.static_argnums
    statics = []
    if static_pos:
      dyn_args = []
      for i, a in enumerate(args):
        if i in static_pos:
          statics += (i, a, type(a))
        else:
          dyn_args.append(a)
      dyn_args = tuple(dyn_args)
    else:
      dyn_args = args
    dyn_kwargs = kwargs
    names = self.static_argnames
    if kwargs and names:
      dyn_kwargs = {}
      for k, v in kwargs.items():
        if k in names:
          statics += (k, v, type(v))
        else:
          dyn_kwargs[k] = v
    leaves, tree = flatten_fast((dyn_args, dyn_kwargs))
    try:
      key = (tree, *statics, *map(_get_sig, leaves))
    except AttributeError:  # NumPy arrays or Python scalars among the arguments
      key = (tree, *statics, *map(signature, leaves))
    return key, leaves

  def _remember_fast(self, key, compiled, consts, out_tree, out_avals, flat_key=None):
    """Store what the cache-hit path needs, flat: consts already on the device.

    With ``flat_key`` (positional arguments only, the dynamic ones all leaves: see
    ``_flat_key``), a plain program (no consts, every argument used, nothing moved or made
    on the host) is also stored under that key: the shortest path in ``_make_jitted``
    needs no flattening then."""
    n_out = len(compiled.out_avals)
    if type(compiled) is nan_checks.CheckedCall:  # the checks on: called as a whole
      device = compiled.device if compiled.device_key is not None else None
      const_arrays = [c if type(c) is Array else _device_const(c, device) for c in consts]
      self._call_cache.put(key, (None, None, compiled.out_avals, None, const_arrays, None,
                                 out_tree, False, compiled))
      return
    if getattr(compiled, "replicated", False):  # jit of pmap: consts copied to its replicas
      const_arrays = [compiled.place(c, i) for i, c in enumerate(consts)]
      entry = (None, None, compiled.out_avals, None, const_arrays, None, out_tree,
               out_tree.num_nodes == 1 and n_out == 1, compiled)
      self._call_cache.put(key, entry)
      if flat_key is not None and not const_arrays and \
          type(compiled) is partitioned.PartitionedCall:
        # a program over a mesh places its own arguments: the shortest path calls it whole
        self._call_cache.put(flat_key, _FlatEntry(None, None, compiled.out_avals, None,
                                                  out_tree, False, compiled, None))
      return
    device = compiled.device if compiled.device_key is not None else None
    const_arrays = [c if type(c) is Array else _device_const(c, device) for c in consts]
    with_host = host_outputs(compiled, out_avals)
    if with_host is not compiled or compiled.moves:
      # called as a whole: its float0s and tokens made on the host, or its uncommitted
      # arguments moved to its device
      self._call_cache.put(key, (None, None, compiled.out_avals, None, const_arrays, None,
                                 out_tree, False, with_host))
      return
    entry = (compiled.executable.loaded.execute_sharded, compiled.executable.handlers,
             compiled.out_avals, [compiled.device_key] * n_out, const_arrays, compiled.kept,
             out_tree, out_tree.num_nodes == 1 and n_out == 1, compiled)
    self._call_cache.put(key, entry)
    if flat_key is not None and not const_arrays and compiled.kept is None and \
        type(compiled) is CompiledCall:
      self._call_cache.put(flat_key, _FlatEntry(*entry[:4], *entry[6:], device))

  def _get_traced(self, in_tree, leaves, statics, args, kwargs) -> _Traced:
    try:
      avals = tuple(_abstractify(x) for x in leaves)
    except TypeError:
      bad = next(i for i, x in enumerate(leaves) if not _is_abstractable(x))
      raise _argument_error(self.name, self.fun, args, kwargs, self.static_argnums,
                            self.static_argnames, leaves, bad) from None
    check_no_strings(leaves, avals)
    # Named axes in scope (vmap/pmap) change what collectives in ``fun`` trace to.
    key = (in_tree, avals, statics, tuple(trace_ctx.axis_env))
    # The equations record the XLA metadata in effect (``set_xla_metadata``).
    metadata = source_info_lib.current_xla_metadata()
    if metadata:
      key += (metadata,)
    # PartitionSpecs and types inside are resolved against the mesh in effect.
    mesh = sharding_lib.current_mesh()
    if mesh is not None:
      key += (mesh,)
    # Arguments split over Explicit mesh axes give their tracers types that say so.
    splits = tuple(map(_type_sharding, leaves))
    if not any(s is not None for s in splits):
      splits = None
    else:
      key += (splits,)
    traced = self._trace_cache.get(key)
    if traced is None:
      traced = self._trace(in_tree, avals, statics, args, kwargs, splits)
      # A trace that closed over outer tracers is only valid inside that outer trace.
      if not any(isinstance(c, Tracer) for c in traced.consts):
        self._trace_cache.put(key, traced)
    return traced

  def _explain_miss(self, in_tree, avals, statics, args, kwargs) -> str:
    """Why the trace cache missed, against the closest earlier trace of this function (as
    JAX's ``explain_cache_misses``): a new function, another input pytree, other static
    arguments, other input types (each named by its path), or another tracing context."""
    seen = list(self._trace_cache._data)
    if not seen:
      context = self._context_differences(in_tree, avals, statics)
      if context:
        return ("\n  TRACING CACHE MISS because: tracing context doesn't match, e.g. due to "
                "config or context manager:\n" + context)
      return "\n  TRACING CACHE MISS because: never seen function " + self.name
    axis_env = tuple(trace_ctx.axis_env)
    same_tree = [k for k in seen if k[0] == in_tree]
    if not same_tree:
      return (f"\n  TRACING CACHE MISS because: different input pytree:\n    now {in_tree}"
              f"\n    and before {seen[-1][0]}")
    same_static = [k for k in same_tree if k[2] == statics]
    if not same_static:
      return "\n  TRACING CACHE MISS because: different static arguments"
    # The closest earlier signature: the fewest leaves whose types differ.
    best = min(same_static, key=lambda k: sum(a != b for a, b in zip(k[1], avals)))
    if tuple(best[1]) == tuple(avals):
      if best[3] != axis_env:
        return ("\n  TRACING CACHE MISS because: tracing context doesn't match (named axes "
                f"now {axis_env} and before {best[3]})")
      return ""
    paths = _argument_paths(self.fun, args, kwargs, self.static_argnums, self.static_argnames)
    lines = [f"    * at {p}, now {a.str_short()} and before {b.str_short()}"
             for p, a, b in zip(paths, avals, best[1]) if a != b]
    return "\n  TRACING CACHE MISS because: different input types:\n" + "\n".join(lines)

  def _context_differences(self, in_tree, avals, statics) -> str:
    """The options (of those that key the caches) that differ from a setting under which
    this signature was traced before, one line each; empty when there was none."""
    stash = self._trace_cache._stash or {}
    now = tuple(getattr(config, name) for name in TRACED_OPTIONS)
    for state, entries in reversed(list(stash.items())):
      if any(k[:3] == (in_tree, avals, statics) for k in entries):
        return "\n".join(f"    * {name} differs: now {a} and before {b}"
                         for name, a, b in zip(TRACED_OPTIONS, now, state) if a != b)
    return ""

  def _trace(self, in_tree, avals, statics, args, kwargs, splits=None) -> _Traced:
    if config._values["no_tracing"]:
      raise RuntimeError(f"re-tracing function {self.name} for `jit`, but 'no_tracing' is set")
    # As JAX, whose trace caches hold the function weakly: a callable that cannot be
    # weakly referenced (``__slots__`` without ``__weakref__``) raises Python's TypeError.
    weakref.ref(self.fun)
    monitoring.test_event("jit_trace", name=self.name)
    if config.explain_cache_misses:
      monitoring.logger.warning("jit %s: tracing for %s%s", self.name,
                                ", ".join(a.str_short() for a in avals),
                                self._explain_miss(in_tree, avals, statics, args, kwargs))
    static_pos = {k: s.value for k, s in statics if isinstance(k, int)}
    static_kw = {k: s.value for k, s in statics if isinstance(k, str)}
    out_tree_box = []

    def flat_fun(*flat_args):
      dyn_args, dyn_kwargs = in_tree.unflatten(flat_args)
      it = iter(dyn_args)
      n = len(dyn_args) + len(static_pos)
      full_args = [static_pos[i] if i in static_pos else next(it) for i in range(n)]
      out = self.fun(*full_args, **dyn_kwargs, **static_kw)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_leaves = _check_outputs(self.fun, "jit", out, out_leaves)
      _check_no_ref_outputs(self.fun, out_leaves, flat_args, origin[2])
      out_tree_box.append(out_tree)
      return out_leaves

    origin = (fun_source_info(self.fun), "jit", _argument_paths(
        self.fun, args, kwargs, self.static_argnums, self.static_argnames))
    with monitoring.log_elapsed_time("Finished tracing %s for jit in %.9f sec", self.name,
                                     monitoring.TRACE_EVENT):
      closed = trace_to_jaxpr(flat_fun, avals, debug_info=self.name, in_shardings=splits,
                              origin=origin)
    out_tree = out_tree_box[0]
    closed.jaxpr.result_paths = functools.partial(_result_paths, out_tree)
    if len(origin[2]) == len(closed.jaxpr.invars):
      closed.jaxpr.arg_names = tuple(origin[2])
    jaxpr, consts = convert_constvars(closed)
    return _Traced(jaxpr, consts, out_tree, avals)

  # --- ahead-of-time ---
  def lower(self, *args, **kwargs) -> "Lowered":
    """Trace and lower for these arguments (arrays or ShapeDtypeStructs)."""
    return self.trace(*args, **kwargs).lower()

  def _lower(self, traced, in_tree, leaves, args, kwargs, dyn_args, dyn_kwargs,
             platform: str | None = None) -> "Lowered":
    donated = self._donated_leaves(args, kwargs, dyn_args, dyn_kwargs) if (
        self.donate_argnums or self.donate_argnames) else ()
    donated_invars = (False,) * len(traced.consts) + donated if any(donated) else ()
    captured_constants.warn_if_large(traced.jaxpr.jaxpr, traced.consts)
    lowered = None
    if platform is None:  # pmaps inside: one replicated program for this process's devices
      lowered = replicated.lower_replicated(traced.jaxpr, self.name, donated_invars,
                                             self.keep_unused)
    if lowered is None:
      sigs = [_lowering_signature(x) for x in (*traced.consts, *leaves)]
      lowered = partitioned.lower_partitioned(
          traced.jaxpr, sigs, self.name, donated_invars, self.keep_unused, platform=platform,
          result_shardings=self._declared_result_shardings(traced))
    if lowered is None:
      lowered = xla.lower_jaxpr_to_module(traced.jaxpr, f"jit({self.name})", donated_invars,
                                          self.keep_unused, platform=platform)
    return Lowered(lowered, traced, in_tree, donated_invars, self.name,
                   tuple(sorted(self.donate_argnums)), (self.fun, self.static_argnums),
                   platform=platform)

  def _declared_result_shardings(self, traced) -> list | None:
    """Each flat result's NamedSharding from ``out_shardings`` (None where it gives none),
    or None without ``out_shardings``."""
    if self.out_shardings is None:
      return None
    n = traced.out_tree.num_leaves
    if n != len(traced.jaxpr.out_avals):
      return None
    if _is_sharding_leaf(self.out_shardings):
      per_leaf = [self.out_shardings] * n
    else:
      per_leaf = tree_util.broadcast_prefix(self.out_shardings,
                                            traced.out_tree.unflatten([0] * n),
                                            is_leaf=_is_sharding_leaf)
    mesh = sharding_lib.current_mesh()
    return [s if isinstance(s, sharding_lib.NamedSharding)
            else sharding_lib.NamedSharding(mesh, s)
            if isinstance(s, sharding_lib.PartitionSpec) and mesh is not None else None
            for s in per_leaf]

  def trace(self, *args, **kwargs) -> "Traced":
    """Trace for these arguments (arrays or ShapeDtypeStructs): the ``Traced`` stage, whose
    ``jaxpr`` shows the program and whose ``lower()`` lowers it (for another platform too)."""
    dyn_args, dyn_kwargs, statics = self._split_args(args, kwargs)
    leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    traced = self._get_traced(in_tree, leaves, statics, args, kwargs)
    return Traced(self, traced, in_tree, leaves, args, kwargs, dyn_args, dyn_kwargs)

  def eval_shape(self, *args, **kwargs):
    return eval_shape(self, *args, **kwargs)

  def clear_cache(self):
    """Forget every trace and program of this function (shared by every ``jit`` of it)."""
    parts = [part for entry in list(self._call_cache._data.values())
             if isinstance(entry, tuple) for part in entry]
    self._trace_cache.clear()
    self._call_cache.clear()
    forget_compiled(parts)

  def _cache_size(self) -> int:
    """How many argument signatures the cache-hit path holds for this function (JAX's
    ``_cache_size``: shared, as the cache is, by every ``jit`` of the same function)."""
    return sum(type(v) is not _FlatEntry for v in list(self._call_cache._data.values()))


def _result_paths(out_tree) -> tuple:
  """Each output leaf's place in a traced function's result, as JAX names them in lowered
  programs: ``result``, ``result[0]``, ``result['a'][1]``."""
  try:
    placeholder = out_tree.unflatten([0] * out_tree.num_leaves)
    leaves, _ = tree_util.tree_flatten_with_path(placeholder)
  except Exception:  # a custom node whose unflatten checks its children (JAX reads the
    # paths off the real outputs): positional names, what JAX gives a keyless node
    return tuple(f"result[{i}]" for i in range(out_tree.num_leaves))
  return tuple("result" + tree_util.keystr(path) for path, _ in leaves)


def _check_ref_aliasing(fun, refs, positions, n_consts, paths) -> None:
  """JAX's errors for a reference passed twice, or passed and closed over, in one call."""
  seen = {}
  for r, i in zip(refs, positions):
    if id(r) in seen:
      j = seen[id(r)]
      names = paths()
      if j < n_consts:
        raise ValueError(f"when tracing {fun_source_info(fun)} for jit, a mutable array "
                         f"reference of type {get_aval(r)} was both closed over and passed as "
                         f"the argument {names[i - n_consts]}")
      raise ValueError("only one reference to a mutable array may be passed as an argument "
                       f"to a function, but when tracing {fun_source_info(fun)} for jit the "
                       f"mutable array reference of type {get_aval(r)} appeared at both "
                       f"{names[j - n_consts]} and {names[i - n_consts]}.")
    seen[id(r)] = i


def _check_no_ref_outputs(fun, out_leaves, in_leaves, paths) -> None:
  """JAX's error for a jitted function that returns an array reference."""
  for leaf in out_leaves:
    if is_ref_aval(getattr(leaf, "aval", None)):
      text = (f"function {fun_source_info(fun)} traced for jit returned a mutable array "
              f"reference of type {leaf.aval}, but mutable array references cannot be "
              "returned.")
      where = next((i for i, x in enumerate(in_leaves) if x is leaf), None)
      if where is not None:
        text += f"\n\nThe returned mutable array was passed in as the argument {paths[where]}."
      raise ValueError(text)


def _lowering_signature(x):
  """A leaf's signature for ``lower``: an Array's own, a ShapeDtypeStruct's sharding."""
  if type(x) is Array:
    return x._sig
  aval = _abstractify(x)
  if type(x) is ShapedArray:  # a type says no layout over devices
    return aval
  s = getattr(x, "sharding", None)
  return (aval, s) if isinstance(s, sharding_lib.NamedSharding) else aval


def _forget_donated(leaves, donated):
  """Arrays whose buffers XLA took over drop them, so that using one again fails in hlox
  (``DeletedArrayError``) before it reaches XLA."""
  for x, d in zip(leaves, donated):
    if d and type(x) is Array and x._multi is None and x._buf.is_deleted():
      x.mark_deleted()


class ArgInfo:
  """What ``Lowered.args_info`` says of one argument: its type and whether it is donated."""

  __slots__ = ("_aval", "donated")

  def __init__(self, aval, donated: bool):
    self._aval = aval
    self.donated = donated

  @property
  def shape(self):
    return self._aval.shape

  @property
  def dtype(self):
    return self._aval.dtype

  def __repr__(self):
    return f"ArgInfo(shape={self.shape}, dtype={self.dtype}, donated={self.donated})"


# The platforms a module can be lowered for, by the names JAX's ``lowering_platforms`` takes.
_LOWERING_PLATFORMS = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda", "rocm": "rocm",
                       "tpu": "tpu"}


class Traced:
  """A jitted function traced for one signature (JAX's ``jit(f).trace(*args)``): ``jaxpr``
  is the program, ``lower()`` lowers it, ``lower(lowering_platforms=("cuda",))`` for another
  platform than this process's (to read or export; it compiles only where it can run)."""

  def __init__(self, wrapped, traced, in_tree, leaves, args, kwargs, dyn_args, dyn_kwargs):
    self._wrapped = wrapped
    self._traced = traced
    self._call = (in_tree, leaves, args, kwargs, dyn_args, dyn_kwargs)
    self.in_tree = in_tree
    self.out_tree = traced.out_tree

  @property
  def jaxpr(self):
    return self._traced.jaxpr

  @property
  def consts(self):
    return self._traced.consts

  @property
  def in_avals(self):
    """The arguments' types as JAX gives them: ``(positional, keyword)``."""
    return self.in_tree.unflatten(list(self._traced.in_avals))

  @property
  def fun_name(self) -> str:
    return self._wrapped.name

  @property
  def out_info(self):
    """The outputs' ``ShapeDtypeStruct``s, in the output tree (with their types'
    shardings over the abstract mesh)."""
    return _out_info(self._traced.jaxpr, self.out_tree)

  def lower(self, *, lowering_platforms: tuple | None = None) -> "Lowered":
    """Lower to StableHLO, for this process's default platform or for
    ``lowering_platforms`` (one of ``"cpu"``, ``"cuda"``, ``"rocm"``, ``"tpu"``): each
    primitive takes that platform's lowering rule (its library calls: LAPACK on the CPU,
    cuSOLVER on CUDA, ...)."""
    platform = None
    if lowering_platforms is not None:
      platforms = tuple(lowering_platforms)
      unknown = [p for p in platforms if p not in _LOWERING_PLATFORMS]
      if unknown or not platforms:
        raise ValueError(f"lower: unknown lowering platform(s) {unknown or platforms}; "
                         f"expected some of {sorted(set(_LOWERING_PLATFORMS))}")
      if len(platforms) > 1:
        raise NotImplementedError(
            f"lower: hlox lowers for one platform at a time, got {platforms}")
      platform = _LOWERING_PLATFORMS[platforms[0]]
      if platform == client.lowering_platform(client.default_device()):
        platform = None  # this process's own: the ordinary lowering
    return self._wrapped._lower(self._traced, *self._call, platform=platform)


def _out_info(closed, out_tree, abstract: bool = True):
  """The ShapeDtypeStructs of ``closed``'s results; their shardings those of their types
  (over the concrete mesh unless ``abstract``)."""
  out = []
  for a, v in zip(closed.out_avals, closed.jaxpr.outvars):
    split = getattr(v, "sharding", None)
    if abstract:
      s = _result_type_sharding(a, split)
    else:
      mesh = split.mesh if split is not None else sharding_lib.current_mesh()
      s = None if mesh is None else sharding_lib.NamedSharding(
          mesh, sharding_lib.named_of_type(split).spec if split is not None else
          sharding_lib.PartitionSpec(*[None] * len(a.shape)))
    out.append(ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type, sharding=s))
  return out_tree.unflatten(out)


class _LoweringView:
  """``Lowered._lowering``: ``hlo()`` (jaxlib's XlaComputation) and ``stablehlo()`` (the
  MLIR module), as JAX's internal lowering object offers them."""

  def __init__(self, lowered):
    self._of = lowered

  def hlo(self):
    return self._of.compiler_ir("hlo")

  def stablehlo(self):
    return self._of.compiler_ir("stablehlo")


class Lowered:
  """A jitted function lowered for one signature: ``as_text()``, ``compile()``."""

  @property
  def out_info(self):
    """The outputs' ``ShapeDtypeStruct``s, in the output tree, with the shardings of their
    types over the mesh."""
    return _out_info(self._traced.jaxpr, self.out_tree, abstract=False)

  _no_kwargs = False  # JAX's flag for stages that cannot take keyword arguments

  def __init__(self, lowered, traced, in_tree, donated_invars, name, donate_argnums=(),
               fun_and_statics=(None, ()), platform: str | None = None):
    self._fun_and_statics = fun_and_statics
    self._platform = platform  # lowered for another platform than this process's default
    self._lowered = lowered
    self._traced = traced
    self.in_tree = in_tree
    self.out_tree = traced.out_tree
    self._donated = donated_invars
    self._name = name
    self._donate_argnums = donate_argnums

  @property
  def args_info(self):
    """``(args, kwargs)`` as the function got them, with each array leaf an ``ArgInfo``
    (``shape``, ``dtype``, ``donated``), as JAX's ``Lowered.args_info``."""
    return _args_info(self._traced, self.in_tree, self._donated)

  def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
    """The program as text: ``dialect="stablehlo"`` (default) the lowered module,
    ``"hlo"`` the HLO module XLA is given (before its optimisations; ``Compiled.as_text``
    shows it after). ``debug_info`` adds source locations."""
    dialect = _check_dialect(dialect)
    if dialect == "stablehlo":
      return self._stablehlo_text(debug_info)
    # (XLA names the HLO instructions after the ops' locations, as JAX's text shows them.)
    return introspection.hlo_text(self._stablehlo_text(True), debug_info)

  def _stablehlo_text(self, debug_info: bool) -> str:
    if not debug_info:
      return self._lowered.as_text()
    with self._lowered.context:
      return self._lowered.module.operation.get_asm(enable_debug_info=True)

  @property
  def _lowering(self):
    """JAX's private view of the lowering (``hlo()``, ``stablehlo()``), which some of JAX's
    tests and user code reach for: the same objects as ``compiler_ir``."""
    return _LoweringView(self)

  def compiler_ir(self, dialect: str | None = None):
    """The program as an object: the MLIR ``ir.Module`` (``"stablehlo"``) or jaxlib's
    ``XlaComputation`` (``"hlo"``)."""
    if _check_dialect(dialect) == "stablehlo":
      return self._lowered.module
    return introspection.hlo_computation(self._stablehlo_text(True))

  def cost_analysis(self) -> dict | None:
    """XLA's cost estimate (``'flops'``, ``'bytes accessed'``, ...: a dict of floats) of the
    program before optimisation; ``compile().cost_analysis()`` estimates the optimised one.
    ``None`` where the backend has no estimate."""
    try:
      return introspection.hlo_cost_analysis(self._lowered.as_text())
    except NotImplementedError:
      return None

  @property
  def in_avals(self):
    """The arguments' avals, in the tree of ``(args, kwargs)``."""
    return self.in_tree.unflatten(list(self._traced.in_avals))

  @property
  def donate_argnums(self):
    """The positions of the donated positional arguments (JAX's ``Lowered.donate_argnums``:
    argument numbers, whatever was given by name)."""
    return self._donate_argnums

  # lays the arguments out as a jit with Formats takes them
  _formats = None

  def compile(self, compiler_options: dict | None = None) -> "Compiled":
    """Compile with XLA; ``compiler_options`` are XLA's options by name, as JAX's
    (``{"xla_embed_ir_in_executable": True}``)."""
    compiled = self._compile(compiler_options)
    compiled._formats = self._formats
    compiled._donated = self._donated
    return compiled

  def _compile(self, compiler_options):
    if self._platform is not None:
      raise RuntimeError(
          f"compile: this program was lowered for {self._platform!r}, which this process "
          f"does not compile for (its default platform is "
          f"{client.lowering_platform(client.default_device())!r}; platforms present: "
          f"{', '.join(client.clients())})")
    if self._lowered.partitioned is not None:  # over a mesh
      closed, sigs = self._lowered.partitioned
      call = partitioned.compile_partitioned(closed, sigs, self._name,
                                             self._lowered.donated_invars,
                                             len(self._lowered.kept_var_idx) == len(sigs))
      return Compiled(call, self._traced, self.in_tree, self._name, self._donate_argnums,
                      self._fun_and_statics)
    if self._lowered.replicas is not None:  # it contains pmaps
      call = replicated.compile_replicated_call(self._lowered)
      return Compiled(call, self._traced, self.in_tree, self._name, self._donate_argnums,
                      self._fun_and_statics)
    executable = xla.compile_lowered(self._lowered, compiler_options=compiler_options)
    return Compiled(CompiledCall(executable, self._lowered, None), self._traced, self.in_tree,
                    self._name, self._donate_argnums, self._fun_and_statics)

  def jaxpr(self):
    return self._traced.jaxpr


def _args_info(traced, in_tree, donated):
  """``(args, kwargs)`` with each array leaf an ``ArgInfo``; closed-over constants (the
  program's leading arguments) are not among them."""
  avals = traced.in_avals
  n_consts = len(traced.consts)
  donated = donated[n_consts:] if donated else (False,) * len(avals)
  return in_tree.unflatten([ArgInfo(a, bool(d)) for a, d in zip(avals, donated)])


class Compiled:
  """A compiled jitted function for one signature; call it with matching arguments."""

  _no_kwargs = False
  _donated = ()  # which of the program's arguments are donated (set by ``Lowered.compile``)

  @property
  def args_info(self):
    """``(args, kwargs)`` with each array leaf an ``ArgInfo`` (``shape``, ``dtype``,
    ``donated``), as JAX's ``Compiled.args_info``."""
    return _args_info(self._traced, self.in_tree, self._donated)

  def __init__(self, call, traced, in_tree, name: str = "jit", donate_argnums=(),
               fun_and_statics=(None, ())):
    self._call = call
    self._traced = traced
    self.in_tree = in_tree
    self.out_tree = traced.out_tree
    self._name = name
    self.donate_argnums = donate_argnums
    self._fun_and_statics = fun_and_statics  # to name arguments in errors

  @property
  def in_avals(self):
    """The arguments' avals, in the tree of ``(args, kwargs)``."""
    return self.in_tree.unflatten(list(self._traced.in_avals))

  _formats = None  # as ``Lowered._formats``

  def __call__(self, *args, **kwargs):
    if self._formats is not None:
      args = tuple(self._formats(args))
    return self._call_flat(args, kwargs)

  def _call_flat(self, args, kwargs):
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self.in_tree:
      raise TypeError(f"Function compiled with input pytree does not match the input pytree it "
                      f"was called with: called with arguments of structure {in_tree}, but it "
                      f"was compiled for {self.in_tree}")
    for x in leaves:
      if isinstance(x, Tracer):
        raise TypeError("Cannot apply JAX transformations to a function lowered and compiled "
                        "for a particular signature. Detected argument of Tracer type "
                        f"{type(x)}.")
    avals = [_abstractify(x) for x in leaves]
    expected = self._traced.in_avals
    if list(map(_shape_dtype, avals)) != list(map(_shape_dtype, expected)):
      paths = self._argument_names(args, kwargs)
      diffs = "\n".join(
          f"Argument '{p}' compiled with {e.str_short(short_dtypes=False)} and called with "
          f"{a.str_short(short_dtypes=False)}" for p, a, e in zip(paths, avals, expected)
          if _shape_dtype(a) != _shape_dtype(e))
      raise TypeError("Argument types differ from the types for which this computation was "
                      f"compiled. The mismatches are:\n{diffs}")
    self._check_committed_layouts(args, kwargs, leaves)
    call = self._call
    if nan_checks.enabled and type(call) is CompiledCall:  # checked as a jitted call is
      call = nan_checks.CheckedCall(call, self._traced.jaxpr, self._name)
    call = self._host_outputs(call)
    return self.out_tree.unflatten(call(list(self._traced.consts) + leaves))

  def _host_outputs(self, call):
    return host_outputs(call, self._traced.jaxpr.out_avals)

  _in_layouts = None  # the executable's argument layouts (after the consts), when not all default

  def _check_committed_layouts(self, args, kwargs, leaves) -> None:
    """JAX's ValueError for committed Arrays whose layout is not the one the program was
    compiled for (an uncommitted one is laid out as the program needs)."""
    if self._in_layouts is None:
      layouts = self._flat_layouts("in")[len(self._traced.consts):]
      default = all(l == layout_lib.default_layout(a.ndim)
                    for l, a in zip(layouts, self._traced.in_avals))
      self._in_layouts = () if default else layouts
    want = self._in_layouts
    candidates = [i for i, x in enumerate(leaves) if type(x) is Array and x.committed
                  and (want or x._laid_out is not None)]
    if not candidates:
      return
    want = want or [layout_lib.default_layout(a.ndim) for a in self._traced.in_avals]
    names = None
    errors = []
    for i in candidates:
      passed = leaves[i].format.layout
      if passed != want[i]:
        names = names or self._argument_names(args, kwargs)
        errors.append(f"Argument {names[i]} with shape "
                      f"{leaves[i].aval.str_short(short_dtypes=False)}:\n"
                      f"  Passed layout: {passed}\n  Required layout: {want[i]}")
    if errors:
      shown = errors[:5]
      count = (f"the {len(errors)} mismatches" if len(errors) < 5 else
               f"5 mismatches out of {len(errors)}")
      raise ValueError("Computation was compiled for input layouts that disagree with the "
                       f"layouts of arguments passed to it. Here are {count}:\n" +
                       "\n".join(shown))

  def _flat_shardings(self, which: str) -> list:
    call = self._call
    avals = self._traced.jaxpr.in_avals if which == "in" else self._traced.jaxpr.out_avals
    shardings = getattr(call, f"{which}_shardings", None)
    if isinstance(call, partitioned.PartitionedCall):
      return list(shardings)
    device = getattr(call, "device", None) or client.default_device()
    if shardings is not None or getattr(call, "replicated", False):
      raise NotImplementedError(f"Compiled.{which}put_shardings of a program with pmaps")
    return [sharding_lib.SingleDeviceSharding(device)] * len(avals)

  @property
  def input_shardings(self):
    """The arguments' shardings as the program takes them, in the tree of
    ``(args, kwargs)`` (arguments the program does not use included)."""
    flat = self._flat_shardings("in")
    return self.in_tree.unflatten(flat[len(self._traced.consts):])

  @property
  def output_shardings(self):
    """The results' shardings as the program lays them out, in the results' tree."""
    return self.out_tree.unflatten(self._flat_shardings("out"))

  def _flat_layouts(self, which: str) -> list:
    """The layouts the executable takes its arguments (every invar: consts, then the
    arguments; an unused one in the default layout) or gives its results in."""
    loaded = self.runtime_executable()
    avals = self._traced.jaxpr.in_avals if which == "in" else self._traced.jaxpr.out_avals
    try:
      compiled = (loaded.get_parameter_layouts() if which == "in"
                  else loaded.get_output_layouts())
    except Exception:  # a platform without layouts: row-major everywhere
      compiled = None
    if compiled is None:
      return [layout_lib.default_layout(a.ndim) for a in avals]
    compiled = [layout_lib.from_pjrt_layout(l) for l in compiled]
    if which == "out":
      return compiled
    kept = getattr(self._call, "kept", None)
    kept = range(len(avals)) if kept is None else kept
    flat = [layout_lib.default_layout(a.ndim) for a in avals]
    for pos, i in enumerate(kept):
      flat[i] = compiled[pos]
    return flat

  @property
  def input_formats(self):
    """``(args, kwargs)`` of ``Format``s: each argument's layout and sharding as the
    program takes it."""
    n_consts = len(self._traced.consts)
    layouts = self._flat_layouts("in")[n_consts:]
    shardings = self._flat_shardings("in")[n_consts:]
    return self.in_tree.unflatten([layout_lib.Format(l, s)
                                   for l, s in zip(layouts, shardings)])

  @property
  def output_formats(self):
    """The results' ``Format``s (layout and sharding), in the results' tree."""
    return self.out_tree.unflatten([
        layout_lib.Format(l, s)
        for l, s in zip(self._flat_layouts("out"), self._flat_shardings("out"))])

  def _argument_names(self, args, kwargs) -> list:
    """The flat arguments' names in errors: by parameter name (x, x[0]...) where the
    function's signature gives one, else args[i]...; keyword arguments by name."""
    fun, static_argnums = self._fun_and_statics
    positions = list(itertools.islice((i for i in itertools.count()
                                       if i not in static_argnums), len(args)))
    paths = _argument_paths(fun, args, kwargs, (), ()) if fun is not None else None
    if paths is not None and positions != list(range(len(args))):
      full = [None] * (max(positions, default=-1) + 1)
      for i, a in zip(positions, args):
        full[i] = a
      paths = _argument_paths(fun, tuple(full), kwargs,
                              [i for i in range(len(full)) if i not in positions], ())
    if paths is None:
      paths = [("args" + tree_util.keystr(p[1:])) if p[0].idx == 0
               else tree_util.keystr(p[1:], simple=True, separator=".")
               for p, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]]
    return paths

  def as_text(self) -> str | None:
    """The optimised HLO text XLA compiled (``None`` where the backend cannot print it)."""
    return self._ask(introspection.executable_hlo_text)

  def cost_analysis(self) -> dict | None:
    """XLA's cost estimate of the optimised program: a dict of floats (``'flops'``,
    ``'bytes accessed'``, ``'transcendentals'``, ...), or ``None`` where there is none."""
    return self._ask(introspection.executable_cost_analysis)

  def memory_analysis(self):
    """XLA's memory estimate of the program: an object with ``argument_size_in_bytes``,
    ``output_size_in_bytes``, ``temp_size_in_bytes``, ``alias_size_in_bytes``,
    ``generated_code_size_in_bytes`` (and their ``host_`` twins, ``peak_memory_in_bytes``),
    or ``None`` where there is none."""
    return self._ask(introspection.executable_memory_analysis)

  def runtime_executable(self):
    """jaxlib's ``LoadedExecutable`` behind this function."""
    return self._call.executable.loaded

  def _ask(self, question):
    try:
      return question(self._call.executable.loaded)
    except NotImplementedError:
      return None


def _shape_dtype(aval):
  return aval.shape, getattr(aval, "dtype", None)  # tokens have no dtype


def _check_dialect(dialect: str | None) -> str:
  dialect = "stablehlo" if dialect is None else dialect
  if dialect not in ("stablehlo", "hlo"):
    raise ValueError(f"unknown dialect: {dialect!r} (expected 'stablehlo' or 'hlo')")
  return dialect


def jit(fun: Callable | None = None, *, static_argnums=None, static_argnames=None,
        donate_argnums=None, donate_argnames=None, keep_unused: bool = False,
        inline: bool = False, **unsupported):
  """Compile ``fun`` with XLA: traced once per argument signature, then cached.

  The returned function traces ``fun`` with abstract arguments (shape, dtype, weak type and
  sharding of each array leaf), lowers the jaxpr to StableHLO, compiles it and runs the
  executable. Later calls whose arguments have the same signature (and equal static arguments)
  reuse the executable without retracing. Inside ``fun`` the array arguments are tracers, so
  Python control flow on their values raises ``TracerBoolConversionError`` or
  ``ConcretizationTypeError``; make such arguments static or use ``lax.cond``/``lax.while_loop``.
  A jitted function composes with ``grad``, ``vmap`` and other transformations, and a jit
  called inside another trace becomes a ``jit`` equation of the outer jaxpr. Usable as a
  decorator, with or without keyword arguments (``@partial(jit, static_argnums=0)``).

  Args:
    fun: function of arrays (pytrees of arrays) returning arrays (a pytree of arrays).
    static_argnums: int or sequence of ints: positional arguments treated as compile-time
      constants; their values must be hashable, and a new value retraces.
    static_argnames: str or sequence of str: keyword arguments treated as static likewise.
    donate_argnums: int or sequence of ints: positional arguments whose buffers XLA may reuse
      for the outputs; donated Arrays are deleted after the call.
    donate_argnames: str or sequence of str: keyword arguments donated likewise.
    keep_unused: if True, arguments the function does not use stay parameters of the compiled
      program (by default they are pruned).
    inline: if True, a call traced inside another function inlines the body instead of making
      a ``jit`` equation.
    **unsupported: ``in_shardings``, ``out_shardings``, ``device`` and ``backend`` place the
      arguments and results; ``abstracted_axes`` and ``compiler_options`` are accepted and
      ignored; any other keyword raises TypeError.

  Returns:
    The compiled function, with the signature of ``fun`` and the methods ``lower``, ``trace``
    and ``eval_shape``; when ``fun`` is None, a decorator taking ``fun``.

  Examples:
    >>> f = hlox.jit(lambda x, y: x * 2 + y)
    >>> f(jnp.arange(3.), 1.)
    Array([1., 3., 5.], dtype=float32)
    >>> from functools import partial
    >>> @partial(hlox.jit, static_argnums=1)
    ... def power(x, n):
    ...   return x ** n
    >>> power(jnp.array([1., 2.]), 3)
    Array([1., 8.], dtype=float32)

  See also:
    :func:`hlox.make_jaxpr`, :func:`hlox.eval_shape`, :class:`hlox.disable_jit`.
  """
  in_shardings = unsupported.pop("in_shardings", None)
  out_shardings = unsupported.pop("out_shardings", None)
  device = unsupported.pop("device", None)
  backend = unsupported.pop("backend", None)
  if unsupported:
    ignored = {"abstracted_axes", "compiler_options"}
    bad = set(unsupported) - ignored
    if bad:
      raise TypeError(f"jit() got unexpected keyword arguments {sorted(bad)}")
  if fun is None:
    return functools.partial(jit, static_argnums=static_argnums,
                             static_argnames=static_argnames, donate_argnums=donate_argnums,
                             donate_argnames=donate_argnames, keep_unused=keep_unused,
                             inline=inline, in_shardings=in_shardings,
                             out_shardings=out_shardings,
                             **({} if device is None else {"device": device}),
                             **({} if backend is None else {"backend": backend}))
  if device is not None or backend is not None:
    return _jit_on_device(fun, device, backend, in_shardings, out_shardings, dict(
        static_argnums=static_argnums, static_argnames=static_argnames,
        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
        keep_unused=keep_unused, inline=inline))
  if in_shardings is not None or out_shardings is not None:
    return _jit_with_shardings(fun, in_shardings, out_shardings, dict(
        static_argnums=static_argnums, static_argnames=static_argnames,
        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
        keep_unused=keep_unused, inline=inline))
  if isinstance(fun, staticmethod):
    raise TypeError(f"staticmethod arguments are not supported, got {fun}: apply jit to the "
                    "function first, then staticmethod (put @jit below @staticmethod)")
  if not callable(fun):
    raise TypeError(f"jit: Expected a callable value, got {fun!r} of type "
                    f"{type(fun).__name__}")
  if inspect.isgeneratorfunction(fun):
    raise TypeError(f"Expected a function, got a generator function: {fun}")
  wrapped = JitWrapped(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                       keep_unused, inline)
  return _make_jitted(wrapped)


def _is_sharding_leaf(s) -> bool:
  return s is None or isinstance(s, (sharding_lib.Sharding, sharding_lib.PartitionSpec))


def _jit_with_shardings(fun, in_shardings, out_shardings, jit_kwargs):
  in_shardings, in_layouts = _split_formats(in_shardings)
  out_shardings, out_layouts = _split_formats(out_shardings)
  if in_layouts is None and out_layouts is not None and _platform_defaults_only(
      out_layouts, out_shardings):
    # As JAX: result layouts that are what the devices give anyway ask for nothing, and the
    # program is the plain one (its donated arguments alias the results); the layouts'
    # ranks are still checked when the function is traced.
    return _jit_with_plain_shardings(_checking_out_ranks(fun, out_layouts), None,
                                     out_shardings, jit_kwargs)
  if in_layouts is not None or out_layouts is not None:
    return _jit_with_formats(fun, in_shardings, out_shardings, in_layouts, out_layouts,
                             jit_kwargs)
  return _jit_with_plain_shardings(fun, in_shardings, out_shardings, jit_kwargs)


def _jit_with_plain_shardings(fun, in_shardings, out_shardings, jit_kwargs):
  """``jit`` with ``in_shardings`` / ``out_shardings`` (a sharding or ``PartitionSpec`` for
  all, or a tree prefix of the positional arguments / the outputs; None: XLA decides):
  arguments are laid out before the call, outputs are constrained inside the program."""
  if out_shardings is not None:
    @wraps(fun)
    def constrained(*args, **kwargs):
      out = fun(*args, **kwargs)
      _check_out_shardings(out, out_shardings)
      return _constrain_outputs(out, out_shardings)
  else:
    constrained = fun
  inner = jit(constrained, **jit_kwargs)
  inner._jit.out_shardings = out_shardings
  static = jit_kwargs["static_argnums"]
  static = () if static is None else (static,) if isinstance(static, int) else tuple(static)

  def place(args, as_specs=False):
    positions = [i for i in range(len(args))
                 if i not in static and i - len(args) not in static]
    dyn = tuple(args[i] for i in positions)
    paths = _argument_paths(fun, args, {}, set(range(len(args))) - set(positions), ())
    if _is_sharding_leaf(in_shardings):
      per_leaf = [in_shardings] * len(tree_util.tree_leaves(dyn))
    else:
      shardings = tuple(in_shardings) if isinstance(in_shardings, list) else in_shardings
      try:
        per_leaf = tree_util.broadcast_prefix(shardings, dyn, is_leaf=_is_sharding_leaf)
      except (ValueError, TypeError):
        raise ValueError(f"jit in_shardings {in_shardings!r} must be a tree prefix of the "
                         f"positional arguments (got {len(dyn)} of them)") from None
    leaves, tree = tree_util.tree_flatten(dyn)
    placed = []
    for leaf, s, path in zip(leaves, per_leaf, paths):
      if s is None:
        placed.append(leaf)
      elif isinstance(leaf, Tracer):
        placed.append(with_sharding_constraint(leaf, s))
      elif not as_specs and not isinstance(leaf, (Array, np.ndarray, np.generic, int, float,
                                                  complex, bool)):
        placed.append(leaf)  # ShapeDtypeStructs given to ``lower``
      else:
        if isinstance(s, sharding_lib.PartitionSpec):
          mesh = sharding_lib.current_mesh()
          if mesh is None:
            raise ValueError(f"jit in_shardings: the PartitionSpec {s!r} needs a mesh: use a "
                             "NamedSharding or `hlox.sharding.set_mesh(mesh)`")
          s = sharding_lib.NamedSharding(mesh, s)
        if as_specs:  # tracing only: the type with its layout, no transfer
          aval = _abstractify(leaf)
          placed.append(ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type,
                                         sharding=s))
        else:
          placed.append(_place_argument(leaf, s, path))
    out = list(args)
    for i, v in zip(positions, tree.unflatten(placed)):
      out[i] = v
    return out

  @wraps(fun)
  def call(*args, **kwargs):
    if in_shardings is not None:
      args = place(args)
    return inner(*args, **kwargs)

  def lower(*args, **kwargs):
    return inner.lower(*(place(args) if in_shardings is not None else args), **kwargs)
  def trace(*args, **kwargs):
    return inner.trace(*(place(args, True) if in_shardings is not None else args), **kwargs)
  call.lower = lower
  call.trace = trace
  call.eval_shape = inner.eval_shape
  call.clear_cache = inner.clear_cache
  call._jit = inner._jit
  return call


# --- jit with Formats (device-local layouts, ``hlox.experimental.layout``) ---------------

def _is_format_leaf(x) -> bool:
  return _is_sharding_leaf(x) or isinstance(x, (layout_lib.Format, layout_lib.Layout,
                                                layout_lib.AutoLayout))


def _split_formats(tree):
  """``(shardings, layouts)`` of an in/out_shardings value: layouts is None when it holds
  no ``Format``; else both are trees of its shape (a Format's sharding and layout)."""
  if tree is None or _is_sharding_leaf(tree) and not isinstance(tree, layout_lib.Format):
    return tree, None
  leaves, treedef = tree_util.tree_flatten(tree, is_leaf=_is_format_leaf)
  for leaf in leaves:
    if isinstance(leaf, (layout_lib.Layout, layout_lib.AutoLayout)):
      raise ValueError("`jax.jit` does not accept device-local layouts directly. Create a "
                       "`Format` instance wrapping this device-local layout and pass that to "
                       f"`jit` instead. Got {leaf}")
  if not any(isinstance(x, layout_lib.Format) for x in leaves):
    return tree, None
  shardings = [x.sharding if isinstance(x, layout_lib.Format) else x for x in leaves]
  layouts = [x.layout if isinstance(x, layout_lib.Format) else None for x in leaves]
  if _is_format_leaf(tree):  # one Format for every leaf
    unflat = lambda xs: xs[0]  # noqa: E731
  else:
    unflat = treedef.unflatten
  shardings = unflat(shardings)
  if all(s is None for s in tree_util.tree_leaves(shardings, is_leaf=lambda x: x is None)):
    shardings = None
  return shardings, unflat(layouts)


def _platform_defaults_only(layouts, shardings) -> bool:
  """Whether every layout of ``layouts`` (a tree, as ``_split_formats`` gives) is None or
  the default of its sharding's platform."""
  flat = tree_util.tree_leaves(layouts, is_leaf=_is_layout_leaf)
  shards = ([shardings] * len(flat) if _is_sharding_leaf(shardings)
            else tree_util.tree_leaves(shardings, is_leaf=_is_sharding_leaf))
  return len(shards) == len(flat) and all(
      l is None or layout_lib.is_platform_default(l, s) for l, s in zip(flat, shards))


def _checking_out_ranks(fun, out_layouts):
  """``fun``, whose results are checked (when traced) against the ranks of their layouts."""
  @wraps(fun)
  def checked(*args, **kwargs):
    out = fun(*args, **kwargs)
    for x, l in zip(tree_util.tree_leaves(out), _per_leaf(out_layouts, out, "out_shardings")):
      if l is not None:
        l.check_compatible_aval(np.shape(x))
    return out
  return checked


def _is_layout_leaf(x) -> bool:
  return x is None or isinstance(x, (layout_lib.Layout, layout_lib.AutoLayout))


def _per_leaf(layouts, tree, what: str, is_leaf=_is_layout_leaf) -> list:
  """One layout (or None) per leaf of ``tree``, from ``layouts`` (a tree prefix of it)."""
  n = len(tree_util.tree_leaves(tree))
  if layouts is None:
    return [None] * n
  if is_leaf(layouts):
    return [layouts] * n
  layouts = tuple(layouts) if isinstance(layouts, list) else layouts
  try:
    return tree_util.broadcast_prefix(layouts, tree, is_leaf=is_leaf)
  except (ValueError, TypeError):
    raise ValueError(f"jit {what} {layouts!r} must be a tree prefix of the "
                     f"{'positional arguments' if what == 'in_shardings' else 'outputs'}"
                     ) from None


def _mode(layout, ndim: int):
  """The ``mhlo.layout_mode`` for a leaf (None: no layout asked, XLA's default)."""
  if layout is None:
    return None
  return layout_lib.layout_mode(layout, ndim)


def _mark(leaves, layouts, role: str) -> list:
  return [x if l is None else entry_layout_p.bind(x, mode=_mode(l, np.ndim(x)), role=role)
          for x, l in zip(leaves, layouts)]


_relayouts: dict = {}


def _relayout(x, mode_out):
  """``x`` passed through an identity program giving it in layout ``mode_out``."""
  fn = _relayouts.get(mode_out)
  if fn is None:
    fn = _relayouts[mode_out] = jit(
        lambda y: entry_layout_p.bind(y, mode=mode_out, role="out"))
  return fn(x)


def _buffer(x):
  multi = x._multi
  return multi if multi is not None else x._buf


def _laid_out_view(x, layout, sharding, path: str):
  """Argument ``x`` as a program compiled for ``layout`` takes it: an Array whose buffer is
  in that layout. A committed Array in another layout is a ValueError, as in JAX; other
  values are laid out anew."""
  want = layout.update() if isinstance(layout, layout_lib.Layout) else None
  if want is None:
    return x
  if isinstance(x, Array):
    own = x.format.layout
    if own != want:
      if x.committed:
        raise ValueError(
            "Layout passed to jit does not match the layout on the respective arg. Got jit "
            f"layout: {want},\\narg layout: {own} for arg {path} of type "
            f"{x.aval.str_short(short_dtypes=False)}")
      x = _put_laid_out(x, want, sharding if sharding is not None else x.sharding)
  else:
    x = _put_laid_out(x, want, sharding)
  if x._laid_out is None:
    return x
  view = Array.__new__(Array)
  view.aval, view._npy, view._sig = x.aval, None, x._sig
  view._multi = x._laid_out if x._multi is not None else None
  if x._multi is None:
    view._buf = x._laid_out
  return view


def _named(s):
  """A jit's sharding for an argument, a PartitionSpec read over the current mesh."""
  if isinstance(s, sharding_lib.PartitionSpec):
    mesh = sharding_lib.current_mesh()
    return None if mesh is None else sharding_lib.NamedSharding(mesh, s)
  return s


def _put_laid_out(x, layout, sharding):
  """``x`` placed by ``sharding`` (None: the default device) in ``layout``."""
  layout.check_compatible_aval(np.shape(x))
  if sharding is not None:
    x = placement.device_put(x, sharding)
  elif not isinstance(x, Array):
    x = device_put(x)
  if layout.is_default():
    return x
  return _relayout(x, layout_lib.layout_mode(layout, x.ndim))


def _jit_with_formats(fun, in_shardings, out_shardings, in_layouts, out_layouts, jit_kwargs):
  """``jit`` whose in/out_shardings hold ``Format``s: the shardings as
  ``_jit_with_plain_shardings`` treats them; each layout asked for is marked on its argument
  or result (``entry_layout_p``), so XLA compiles the program for it."""
  static = jit_kwargs["static_argnums"]
  static = () if static is None else (static,) if isinstance(static, int) else tuple(static)
  donating = jit_kwargs["donate_argnums"] not in (None, ()) or \
      jit_kwargs["donate_argnames"] not in (None, ())

  def dynamic(args):
    return [i for i in range(len(args)) if i not in static and i - len(args) not in static]

  @wraps(fun)
  def with_layouts(*args, **kwargs):
    positions = dynamic(args)
    dyn = tuple(args[i] for i in positions)
    leaves, tree = tree_util.tree_flatten(dyn)
    marked = tree.unflatten(_mark(leaves, _per_leaf(in_layouts, dyn, "in_shardings"), "in"))
    args = list(args)
    for i, v in zip(positions, marked):
      args[i] = v
    out = fun(*args, **kwargs)
    if out_shardings is not None:  # constrained first: the layouts are the results' own
      _check_out_shardings(out, out_shardings)
      out = with_sharding_constraint(out, out_shardings)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    return out_tree.unflatten(_mark(out_leaves, _per_leaf(out_layouts, out, "out_shardings"),
                                    "out"))

  inner = _jit_with_plain_shardings(with_layouts, in_shardings, None, jit_kwargs)
  wraps(fun)(inner)

  def laid_out(args, all_dynamic=False):
    positions = list(range(len(args))) if all_dynamic else dynamic(args)
    dyn = tuple(args[i] for i in positions)
    leaves, tree = tree_util.tree_flatten(dyn)
    per_leaf = _per_leaf(in_layouts, dyn, "in_shardings")
    if all(not isinstance(l, layout_lib.Layout) for l in per_leaf):
      return args
    paths = _argument_paths(fun, args, {}, set(range(len(args))) - set(positions), ())
    shardings = _per_leaf(in_shardings, dyn, "in_shardings", _is_sharding_leaf)
    views = [x if isinstance(x, Tracer) else _laid_out_view(x, l, _named(s), p)
             for x, l, s, p in zip(leaves, per_leaf, shardings, paths)]
    args = list(args)
    for i, v in zip(positions, tree.unflatten(views)):
      args[i] = v
    return args

  @wraps(fun)
  def call(*args, **kwargs):
    _check_auto_donation(donating, in_layouts, out_layouts, args)
    views = laid_out(args)
    out = inner(*views, **kwargs)
    if donating:  # the callers' Arrays, not only the views of them, are gone
      for a, v in zip(args, views):
        if a is not v:
          for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(v)):
            if type(x) is Array and type(y) is Array and y.is_deleted() and x is not y:
              x.delete()
    return out

  def lower(*args, **kwargs):
    _check_auto_donation(donating, in_layouts, out_layouts, args)
    lowered = inner.lower(*args, **kwargs)
    lowered._formats = functools.partial(laid_out, all_dynamic=True)  # static ones bound
    return lowered

  def shapes(*args, **kwargs):
    out = inner.eval_shape(*args, **kwargs)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    per_leaf = _per_leaf(out_layouts, out, "out_shardings")
    shardings = _per_leaf(out_shardings, out, "out_shardings", _is_sharding_leaf)
    return out_tree.unflatten([
        o.update(sharding=layout_lib.Format(l, o.sharding or s))
        if isinstance(l, layout_lib.Layout) and (o.sharding or s) is not None else o
        for o, l, s in zip(out_leaves, per_leaf, shardings)])

  call.lower = lower
  call.trace = inner.trace
  call.eval_shape = call._formats_eval_shape = shapes
  call.clear_cache = inner.clear_cache
  call._jit = inner._jit
  return call


def put_with_format(x, fmt):
  """``device_put(x, Format(layout, sharding))``: both must be concrete (a ``Layout`` or
  None, and a ``Sharding``); the result is laid out so on each device."""
  layout, sharding = fmt.layout, fmt.sharding
  if layout is None and sharding is None:
    return placement.device_put(x, None)
  if not isinstance(sharding, sharding_lib.Sharding) or not isinstance(
      layout, (layout_lib.Layout, type(None))):
    aval = _abstractify(x)
    raise ValueError("sharding and layout in `Layout` instance should be concrete. Got "
                     f"layout: {fmt} for input {aval.str_short()}")
  if layout is None:
    return placement.device_put(x, sharding)
  if isinstance(x, Array) and x.format == fmt:
    return x
  return _put_laid_out(x, layout, sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """Assemble a global Array from per-device pieces.

  ``arrays`` holds one Array per device of ``sharding``, each already on its device and of
  the shape of that device's shard (typed key arrays too); they are used without copying.

  Args:
    shape: the global shape.
    sharding: the ``Sharding`` that lays the global array out.
    arrays: a sequence of single-device Arrays, one per addressable device of ``sharding``.
    dtype: optional dtype (keyword-only; default: the pieces').

  Returns:
    An Array of ``shape`` laid out by ``sharding``.

  Examples:
    >>> from hlox.sharding import PartitionSpec as P
    >>> s = hlox.NamedSharding(hlox.make_mesh((1,), ("x",)), P("x"))
    >>> piece = hlox.device_put(np.arange(4.), hlox.devices()[0])
    >>> hlox.make_array_from_single_device_arrays((4,), s, [piece])
    Array([0., 1., 2., 3.], dtype=float32)
  """
  parts = [_key_parts(a) for a in arrays] if isinstance(arrays, (list, tuple)) else [None]
  if not parts or parts[0] is None:
    return placement.make_array_from_single_device_arrays(shape, sharding, arrays, dtype=dtype)
  if any(p is None or p[1] != parts[0][1] for p in parts):
    raise TypeError("make_array_from_single_device_arrays: the arrays must all be typed keys "
                    "of one implementation, or none")
  data, tree = parts[0]
  key_dims = tuple(data.shape[len(arrays[0].shape):])
  out = placement.make_array_from_single_device_arrays(
      tuple(shape) + key_dims, sharding, [d for d, _ in parts])
  return tree.unflatten([out])


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """Build a global Array, each device's piece made by a callback.

  ``data_callback(index)`` is called once per addressable device with ``index``, a tuple of
  slices into the global array, and returns that device's piece (an array-like of the
  shard's shape).

  Args:
    shape: the global shape.
    sharding: a ``Sharding``, or a ``Format`` with a concrete layout.
    data_callback: callable from an index (tuple of slices) to the piece.
    dtype: optional dtype of the result (default: the pieces').

  Returns:
    An Array of ``shape`` laid out by ``sharding``.

  Examples:
    >>> from hlox.sharding import PartitionSpec as P
    >>> s = hlox.NamedSharding(hlox.make_mesh((1,), ("x",)), P("x"))
    >>> data = np.arange(4.)
    >>> hlox.make_array_from_callback((4,), s, lambda index: data[index])
    Array([0., 1., 2., 3.], dtype=float32)
  """
  layout = None
  if isinstance(sharding, layout_lib.Format):
    layout = sharding.layout
    if isinstance(layout, layout_lib.AutoLayout):
      raise TypeError("`Layout.AUTO` cannot be used in place of a device-local layout when "
                      f"calling `jax.make_array_from_callback`. Got {sharding}")
    sharding = sharding.sharding
    if not isinstance(sharding, sharding_lib.Sharding):
      raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of "
                      f"type {type(sharding)}")
  out = _from_callback(tuple(shape), sharding, data_callback, dtype)
  if layout is None:
    return out
  return _put_laid_out(out, layout, None)


def _key_parts(x):
  """``(data, treedef)`` of a typed key array (its words, and how to wrap them back into
  keys), else None."""
  if not dtypes.is_extended(getattr(x, "dtype", None)):
    return None
  (data,), tree = tree_util.tree_flatten(x)
  return data, tree


def _from_callback(shape, sharding, data_callback, dtype):
  """``placement.make_array_from_callback``, for pieces that are typed keys too: the first
  piece tells; keys are placed as their words (the key dimensions unsplit) and wrapped back.
  The first piece is asked for once only."""
  if not isinstance(sharding, sharding_lib.Sharding):  # its error
    return placement.make_array_from_callback(shape, sharding, data_callback, dtype)
  first_index = next(iter(sharding.addressable_devices_indices_map(shape).values()))
  index_key = lambda index: tuple((i.start, i.stop, i.step) if isinstance(i, slice) else i
                                  for i in index)
  first = {index_key(first_index): data_callback(first_index)}
  piece_of = lambda index: first.pop(index_key(index), None) if first else None

  first_piece = next(iter(first.values()))
  parts = _key_parts(first_piece)
  if parts is None:
    def plain(index):
      piece = piece_of(index)
      return data_callback(index) if piece is None else piece
    return placement.make_array_from_callback(shape, sharding, plain, dtype)
  data, tree = parts
  n = len(shape)
  key_dims = tuple(data.shape[len(first_piece.shape):])  # the words of one key

  def words(index):
    index = tuple(index[:n])
    piece = piece_of(index)
    return _key_parts(data_callback(index) if piece is None else piece)[0]

  out = placement.make_array_from_callback(shape + key_dims, sharding, words, None)
  return tree.unflatten([out])


def _check_auto_donation(donating, in_layouts, out_layouts, args=()) -> None:
  """As JAX: a donated argument laid out by XLA (AUTO) needs an AUTO output layout too, and
  the other way round, since the two must agree for the buffer to be reused. (JAX checks
  this where it pairs donated arguments with results while lowering, which it has done
  earlier for arguments of known sharding: committed Arrays are not checked.)"""
  if not donating:
    return
  placed = lambda x: (isinstance(x, Array) and x.committed) or (  # noqa: E731
      isinstance(x, ShapeDtypeStruct) and x.sharding is not None)
  leaves = tree_util.tree_leaves(args)
  if leaves and all(map(placed, leaves)):
    return
  is_auto = lambda l: isinstance(l, layout_lib.AutoLayout)  # noqa: E731
  auto_in = any(map(is_auto, tree_util.tree_leaves(in_layouts, is_leaf=_is_layout_leaf)))
  auto_out = any(map(is_auto, tree_util.tree_leaves(out_layouts, is_leaf=_is_layout_leaf)))
  if auto_in and not auto_out:
    raise ValueError("Donation with an input layout of `Layout.AUTO` needs the output layout "
                     "chosen by the compiler too. Did you mean to set the output layout to "
                     "`Layout.AUTO`?")
  if auto_out and not auto_in:
    raise ValueError("Donation with an output layout of `Layout.AUTO` needs the input layout "
                     "chosen by the compiler too. Did you mean to set the input layout to "
                     "`Layout.AUTO`?")


def _jit_on_device(fun, device, backend, in_shardings, out_shardings, jit_kwargs):
  """JAX's deprecated ``jit(f, device=d)`` / ``jit(f, backend='cpu')``: the arguments are
  copied to that device (or the backend's first), wherever they are, as ``device_put`` would,
  so the program runs there and its results stay there."""
  warnings.warn("backend and device argument on jit is deprecated. You can use "
                "`hlox.device_put(..., hlox.local_devices(backend=\"cpu\")[0])` on the inputs "
                "to the jitted function to get the same behavior.", DeprecationWarning,
                stacklevel=3)
  if device is not None and backend is not None:
    raise ValueError("can't specify both a device and a backend for jit, got "
                     f"device={device!r} and backend={backend!r}")
  for name, value in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
    if value is not None:
      raise ValueError(f"If backend or device is specified on jit, then {name} should not "
                       "be specified.")
  if device is not None and not hasattr(device, "platform"):
    raise TypeError(f"jit: device= expects a device (e.g. hlox.devices()[0]), got {device!r}")
  inner = jit(fun, **jit_kwargs)
  static = jit_kwargs["static_argnums"]
  static = () if static is None else (static,) if isinstance(static, int) else tuple(static)

  def place(args):
    # Implicit transfers (``device_put`` of the runtime, not the public, explicit one): the
    # transfer guards judge them as JAX judges this jit's moves.
    target = device if device is not None else client.local_devices(backend=backend)[0]
    return [a if i in static or i - len(args) in static else tree_util.tree_map(
        lambda x: device_put(x, target) if isinstance(
            x, (Array, np.ndarray, np.generic, int, float, complex, bool)) else x, a)
        for i, a in enumerate(args)]

  @wraps(fun)
  def call(*args, **kwargs):
    target = device if device is not None else client.local_devices(backend=backend)[0]
    # A program without array arguments runs there too; its results are committed to it.
    with default_device_option(target):
      out = inner(*place(args), **kwargs)
    return tree_util.tree_map(
        lambda x: device_put(x, target) if type(x) is Array else x, out)

  call.lower = lambda *args, **kwargs: inner.lower(*place(args), **kwargs)
  call.trace = inner.trace
  call.eval_shape = inner.eval_shape
  call.clear_cache = inner.clear_cache
  call._jit = inner._jit
  return call


def _place_argument(x, sharding, path: str):
  """Argument ``x`` (at ``path``) of a jit with ``in_shardings`` laid out as ``sharding``.
  As JAX: an Array committed to devices (placed there on purpose) is not moved to another
  layout, that is a ValueError; other values are copied over."""
  if isinstance(sharding, sharding_lib.NamedSharding):
    sharding.check_shape(np.shape(x), f"jit argument {path}")
  if isinstance(x, Array) and x.committed:
    own = x.sharding
    if own != sharding and not own.is_equivalent_to(sharding, x.ndim):
      raise ValueError(
          f"Sharding passed to jit does not match the sharding on the respective arg. Got "
          f"jit sharding: {sharding},\narg sharding: {own} for arg {path} of type "
          f"{x.aval.str_short(short_dtypes=False)}")
  return placement.device_put(x, sharding)


def _constrain_outputs(out, out_shardings):
  """``out`` laid out as jit's ``out_shardings`` says; a None in the prefix leaves its
  subtree to XLA, as a None ``out_shardings`` does for all outputs."""
  if _is_sharding_leaf(out_shardings):
    return with_sharding_constraint(out, out_shardings)
  per_leaf = tree_util.broadcast_prefix(out_shardings, out, is_leaf=_is_sharding_leaf)
  leaves, tree = tree_util.tree_flatten(out)
  return tree.unflatten([leaf if s is None else with_sharding_constraint(leaf, s)
                         for leaf, s in zip(leaves, per_leaf)])


def _check_out_shardings(out, out_shardings) -> None:
  """A jit's outputs must fit its ``out_shardings`` (rank, evenly divided dimensions)."""
  if _is_sharding_leaf(out_shardings):
    per_leaf = [out_shardings] * len(tree_util.tree_leaves(out))
  else:
    try:
      per_leaf = tree_util.broadcast_prefix(out_shardings, out, is_leaf=_is_sharding_leaf)
    except (ValueError, TypeError):
      errors = tree_util.prefix_errors(out_shardings, out, "pjit out_shardings",
                                       is_leaf=_is_sharding_leaf)
      if not errors:
        return  # the constraint reports a structure mismatch itself
      details = "\n  ".join(errors)
      raise ValueError("pjit out_shardings specification must be a tree prefix of the "
                       "corresponding value; got pjit out_shardings specification "
                       f"{out_shardings!r}.\n  Mismatch details ({len(errors)} found):\n  "
                       f"{details}") from None
  mesh = sharding_lib.current_mesh()
  for (path, leaf), s in zip(tree_util.tree_flatten_with_path(out)[0], per_leaf):
    if isinstance(s, sharding_lib.PartitionSpec) and mesh is not None:
      s = sharding_lib.NamedSharding(mesh, s)
    if isinstance(s, sharding_lib.NamedSharding):
      s.check_shape(np.shape(leaf), f"jit output {tree_util.keystr(path) or 'result'}")


def eager_fused(fun: Callable | None = None, *, static_argnames=(),
                call_name: str | None = None) -> Callable:
  """``fun`` (an ``hlox.numpy``-style function of arrays) run eagerly as one cached
  executable per argument signature: as JAX's jit-wrapped ``jnp`` functions. An eager call
  costs one dispatch whatever the Python inside ``fun``, and eager and jitted results agree
  in the last bit. Python scalars are traced as weak-typed arguments, so new values do not
  recompile. Calls the cache cannot handle (unhashable static values, non-array arguments, a
  trace that needs concrete values) run ``fun`` itself.

  Traced, ``fun`` is inlined, unless ``call_name`` is given: then it is staged as a nested
  ``jit`` call named ``call_name`` (as JAX's functions jitted without ``inline=True`` show in
  jaxprs), its dynamic arguments passed to the call; a call that cannot be staged (the same
  cases as above) is inlined."""
  if fun is None:
    return functools.partial(eager_fused, static_argnames=static_argnames,
                             call_name=call_name)
  wrapped = JitWrapped(fun, None, static_argnames, None, None, True, call_name is None)
  if call_name is not None:
    wrapped.name = call_name
    wrapped.call_keep_unused = False
  return _make_jitted(wrapped, eager_fallback=True)


# What tracing a function with abstract arguments raises where it needs concrete values: an
# ``eager_fused`` call that meets one runs the function itself.
_NEEDS_CONCRETE = (ConcretizationTypeError, TracerIntegerConversionError,
                   TracerArrayConversionError, NonConcreteBooleanIndexError)


# The leaves a staged ``eager_fused`` call passes to its ``jit`` equation; any other leaf (an
# object with ``__jax_array__``, a string) makes the call inline, so that ``fun`` sees it.
_STAGED_LEAF_TYPES = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _stageable(wrapped, args, kwargs) -> bool:
  """Whether a traced call of an ``eager_fused`` function can be staged as a ``jit`` call:
  hashable static values and array-like dynamic leaves."""
  try:
    dyn_args, dyn_kwargs, statics = wrapped._split_args(args, kwargs)
    hash(statics)
  except (TypeError, ValueError):  # an unhashable static value (a tracer, a list)
    return False
  return all(isinstance(leaf, _STAGED_LEAF_TYPES)
             for leaf in tree_util.tree_leaves((dyn_args, dyn_kwargs)))


# --- caches per function ------------------------------------------------------------------
# JAX keys its caches on the wrapped function (weakly) and its static configuration, not on the
# wrapper object: every ``jit(f)`` of the same ``f`` shares one trace cache and one call cache,
# so ``for ...: jit(f)(x)`` and ``jit(partial(g, k))(x)`` trace and compile once. Only plain
# Python functions (and partials of them with hashable arguments) share: other callables may
# compare equal while behaving differently. The caches hold no reference to the function, so
# a function (a lambda made in a loop) is still freed with its entry.
_caches_by_function: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_caches_by_partial = LRUCache(maxsize=256)


# Every jitted function's call cache (the cache-hit path's entries), to drop them all when
# the NaN checks are switched: an entry runs its executable checked or not.
_call_caches: "weakref.WeakSet[LRUCache]" = weakref.WeakSet()


def _new_caches() -> tuple:
  call_cache = LRUCache()
  _call_caches.add(call_cache)
  return LRUCache(), call_cache


def _on_config_change(name, value):
  if name in ("debug_nans", "debug_infs"):
    for cache in list(_call_caches):
      cache.clear()

config.add_watcher(_on_config_change)


def _shared_caches(fun, settings) -> tuple:
  """``(trace cache, call cache)`` for ``jit(fun)`` with ``settings`` (its static
  configuration), shared with every other such wrapper when ``fun`` allows it."""
  try:
    if type(fun) is types.FunctionType:
      per_setting = _caches_by_function.get(fun)
      if per_setting is None:
        per_setting = _caches_by_function[fun] = {}
      caches = per_setting.get(settings)
      if caches is None:
        caches = per_setting[settings] = _new_caches()
      return caches
    if type(fun) is functools.partial and type(fun.func) is types.FunctionType:
      key = (fun.func, fun.args, tuple(sorted(fun.keywords.items())), settings)
      caches = _caches_by_partial.get(key)
      if caches is None:
        caches = _new_caches()
        _caches_by_partial.put(key, caches)
      return caches
  except TypeError:  # unhashable arguments or settings: caches of its own
    pass
  return _new_caches()


def _make_jitted(wrapped: JitWrapped, eager_fallback: bool = False) -> Callable:
  """The function ``jit`` returns: the cache-hit path inline, everything else in
  ``JitWrapped``. (A closure is cheaper to call than an object's ``__call__``, and this path
  is measured against JAX's C++ dispatch in ``bench/``.)

  With ``eager_fallback`` (``eager_fused``), arguments the cache cannot key on (unhashable
  static values, leaves that are not arrays) and functions that turn out to need concrete
  values run ``fun`` itself, unjitted, so they give the errors and results of the plain
  function."""
  cache = wrapped._fast_cache
  cache_get, touch = cache.get, cache.move_to_end
  slow = wrapped._call_slow
  simple = wrapped._simple
  inline = wrapped.inline
  fun = wrapped.fun
  ctx = trace_ctx
  get_buf = operator.attrgetter("_buf")
  get_sig = _get_sig
  new_array = Array
  flat_key = wrapped._flat_key
  first_static = wrapped._first_static
  # What the last positional call's arguments were (Arrays, Arrays and host values, or
  # pytrees): the shortest path tries the likeliest key first.
  ARRAYS, HOST_VALUES, PYTREES = "arrays", "host values", "pytrees"
  arguments = [ARRAYS]
  general_key = wrapped._general_key
  donating = bool(wrapped.donate_argnums or wrapped.donate_argnames)
  options = config._values
  if eager_fallback:
    unfusable = set()  # cache keys whose trace needed concrete values
    staged = not inline

    def traced_call(args, kwargs):
      # A staged call that cannot be keyed, or whose body needs concrete values (an
      # argument JAX would hold static), is inlined: as the eager fallback, ``fun`` decides.
      if not _stageable(wrapped, args, kwargs):
        return fun(*args, **kwargs)
      try:
        return slow(args, kwargs)
      except _NEEDS_CONCRETE:
        return fun(*args, **kwargs)

    def fallback(args, kwargs):
      return fun(*args, **kwargs)

    def miss(key, args, kwargs):
      if key in unfusable:
        return fun(*args, **kwargs)
      try:
        return slow(args, kwargs)
      except _NEEDS_CONCRETE:
        unfusable.add(key)
        return fun(*args, **kwargs)
  else:
    staged = traced_call = None  # (every cell of the closure holds a value: cloudpickle)

    def fallback(args, kwargs):
      return slow(args, kwargs)  # it raises JAX's error for the argument

    def miss(key, args, kwargs):
      return slow(args, kwargs)

  def jitted(*args, **kwargs):
    # The fast path: a cache hit does no tracing and builds no IR. (The ``try`` costs
    # nothing until an exception: then the frames of this wrapper leave its traceback.)
    try:
      # (``debug_key_reuse`` takes the slow path, which checks the keys passed; one derived
      # flag says it or ``disable_jit`` is on.)
      if ctx.trace is eval_trace and not options["_jit_slow_path"]:
        if not kwargs and not donating and (arguments[0] is not PYTREES or not simple):
          # The shortest path: positional leaves, keyed on their signatures (``_flat_key``).
          # Arrays alone are keyed inline; when the last call had other leaves (host values:
          # an exception costs ~1 us) or static arguments, ``_flat_key`` does it.
          key = None
          if arguments[0] is ARRAYS and len(args) <= first_static:
            try:
              key, dyn, host = tuple(map(get_sig, args)), args, False
            except AttributeError:
              pass
          if key is None:
            key, dyn = flat_key(args)
            host = key is not None and key[:1] == (_HOST_ARGUMENTS,)
            arguments[0] = PYTREES if key is None else HOST_VALUES if host else ARRAYS
          entry = cache_get(key) if key is not None else None
          if entry is not None:
            if len(cache) * 2 > options["cache_size"]:  # near eviction: keep LRU order
              touch(key)
            execute, handlers, out_avals, device_keys, out_tree, single, compiled, device = \
                entry
            if execute is None:  # a program over a mesh: it takes the arguments as they are
              return out_tree.unflatten(compiled(list(dyn)))
            try:
              bufs = argument_buffers(dyn, device) if host else list(map(get_buf, dyn))
              outs = execute(bufs).consume_with_handlers(handlers)
            except DistributedRuntimeError:
              raise
            except Exception:  # a deleted buffer: the slow call says so
              return out_tree.unflatten(compiled(list(dyn)))
            if single:
              return new_array(outs[0], out_avals[0], device_keys[0])
            return out_tree.unflatten(list(map(new_array, outs, out_avals, device_keys)))
        host = False  # scalars or NumPy arrays among the arguments (no ``_buf`` to take)
        try:
          if simple and not kwargs:
            leaves, in_tree = flatten_fast(args)
            if arguments[0] is PYTREES and \
                in_tree.num_leaves == len(args) == in_tree.num_nodes - 1:
              arguments[0] = HOST_VALUES  # positional leaves again: the shortest path next
            try:
              key = (in_tree, *map(get_sig, leaves))
            except AttributeError:
              key = (in_tree, *map(signature, leaves))
              host = True
          elif donating:
            return slow(args, kwargs)
          else:
            key, leaves = general_key(args, kwargs)
          entry = cache_get(key)
        except TypeError:  # an unhashable static argument, or a leaf that is not an array
          return fallback(args, kwargs)
        if entry is None:
          return miss(key, args, kwargs)
        if len(cache) * 2 > options["cache_size"]:  # near eviction: keep LRU order
          touch(key)
        execute, handlers, out_avals, device_keys, consts, kept, out_tree, single, compiled = \
            entry
        if consts:
          leaves = consts + leaves
        if execute is None:  # a replicated program (jit of pmap) places its own arguments
          return out_tree.unflatten(compiled(leaves))
        passed = leaves if kept is None else [leaves[i] for i in kept]
        if host:  # known already: skip the attempt below (an exception costs ~1 µs)
          bufs = argument_buffers(passed, compiled.device if compiled.device_key is not None
                                  else None)
        else:
          try:
            bufs = list(map(get_buf, passed))
          except AttributeError:
            bufs = argument_buffers(passed, compiled.device if compiled.device_key is not None
                                    else None)
        try:
          outs = execute(bufs).consume_with_handlers(handlers)
        except DistributedRuntimeError:  # a lost process, raised asynchronously: not ours to hide
          raise
        except Exception:  # a deleted buffer: the slow call says so
          return out_tree.unflatten(compiled(leaves))
        if single:
          return new_array(outs[0], out_avals[0], device_keys[0])
        return out_tree.unflatten(list(map(new_array, outs, out_avals, device_keys)))
      if inline and ctx.trace is not eval_trace:
        if type(ctx.trace) is JVPTrace:  # its results are a call's (arrays), as in JAX
          return inlined_call_results(ctx.trace, fun(*args, **kwargs))
        return fun(*args, **kwargs)
      if eager_fallback and staged and ctx.trace is not eval_trace:
        return traced_call(args, kwargs)
      return slow(args, kwargs)
    except Exception as e:
      if type(e) is OverflowError and not kwargs:
        named = _argument_overflow(wrapped.fun, args)
        if named is not None:
          hide_wrapper_frames(named)
          raise named from e
      if not simple:  # static arguments' ``==`` may raise
        named = _fast_key_comparison_error(wrapped, args, kwargs)
        if named is not None:
          hide_wrapper_frames(named)
          raise named from e
      if getattr(e, "_hlox_jit_output", None) and ctx.trace is eval_trace:
        try:  # an invalid value came out (NaN checks): run ``fun`` itself, as JAX
          return _call_deoptimized(fun, args, kwargs, e)
        except Exception as found:
          hide_wrapper_frames(found)
          raise
      hide_wrapper_frames(e)
      raise

  wraps(wrapped.fun)(jitted)
  jitted.__signature__ = LazySignature(wrapped.fun)  # its own, as JAX's (chex reads it)
  # (An attribute of the function, which Python prefers to the method of its type.)
  jitted.__getstate__ = wrapped._state
  jitted._jit = wrapped
  jitted.lower = wrapped.lower
  jitted.trace = wrapped.trace
  jitted.eval_shape = wrapped.eval_shape
  jitted.clear_cache = wrapped.clear_cache
  jitted._cache_size = wrapped._cache_size
  jitted._call_cache = wrapped._call_cache
  jitted._fast_cache = wrapped._fast_cache
  return jitted


def _argument_overflow(fun, args):
  """JAX's OverflowError for a Python integer argument out of the default integer type's
  range, naming the argument (None when no argument is the cause)."""
  info = np.iinfo(dtypes.default_int_dtype())
  names = _argument_names(fun, args, {})
  for name, leaf in zip(names, tree_util.tree_leaves((args, {}))):
    if type(leaf) is int and not info.min <= leaf <= info.max:
      path = name[len("argument "):] if name.startswith("argument ") else name
      return OverflowError("An overflow was encountered while parsing an argument to a "
                           f"jitted computation, whose argument path is {path}.")
  return None


@api_boundary
def _call_deoptimized(fun, args, kwargs, error):
  """JAX's answer to a NaN or inf in the output of a jitted call while ``debug_nans`` /
  ``debug_infs`` is on: run the Python function itself (its nested jitted calls do the
  same), so that the error comes from the operation that made the value, on the user's
  line, with Python's own semantics for Python values (``0. / 0.`` is a
  ZeroDivisionError). If the function runs clean, ``error`` (what the de-optimized jaxpr
  showed) is raised."""
  print(f"Invalid {error._hlox_jit_output} value encountered in the output of a jax.jit "
        "function. Calling the de-optimized version.")
  try:
    fun(*args, **kwargs)
  except (FloatingPointError, ZeroDivisionError) as found:
    raise found from None
  raise error


def copy_to_host_async(x):
  """Start copying every array leaf of ``x`` to the host, without waiting.

  A later ``np.asarray`` (or ``device_get``) of those arrays then does not wait for the
  transfer. Leaves without a ``copy_to_host_async`` method (Python scalars, NumPy arrays) are
  skipped. Not for use on tracers inside a transformation.

  Args:
    x: a pytree of arrays.

  Returns:
    ``x`` itself.

  Examples:
    >>> x = jnp.arange(3)
    >>> hlox.copy_to_host_async({"a": x})["a"] is x
    True
  """
  for leaf in tree_util.tree_leaves(x):
    method = getattr(leaf, "copy_to_host_async", None)
    if method is not None:
      method()  # outside any try: its own AttributeError is the caller's to see
  return x


def typeof(x):
  """The abstract type of ``x``: its shape, dtype and weak type.

  Works alike for Arrays, tracers (inside ``jit``/``vmap``/``grad``), NumPy values and Python
  scalars (which are weakly typed, printed with a leading ``~``). For a value split over
  Explicit mesh axes the type also carries its ``sharding`` (printed ``float32[8@X,4]``); for a
  reference it is the ``Ref`` type. Values that are not arrays raise TypeError.

  Args:
    x: an array, tracer, NumPy value or Python scalar.

  Returns:
    A ``ShapedArray`` (or the reference's type) describing ``x``.

  Examples:
    >>> hlox.typeof(jnp.ones((2, 3)))
    ShapedArray(float32[2,3])
    >>> print(hlox.typeof(1.0))
    ~float32[]
  """
  if not isinstance(x, Tracer) and dtypes.is_extended(getattr(x, "dtype", None)):
    return ShapedArray(x.shape, x.dtype)  # a typed key array: ``key<fry>[...]``
  try:
    aval = get_aval(x)
  except TypeError as e:
    raise TypeError(f"typeof: {e}") from None
  if aval is abstract_token or is_ref_aval(aval):
    return aval  # a reference's type is Ref{inner}, its array's own type inside
  vma = getattr(x, "vma_in_mesh_order", None)  # a value of an eager shard_map body
  if vma is not None:
    aval = aval.update(vma=vma())
  split = _type_sharding(x)
  if split is not None:
    return aval.update(sharding=sharding_lib.named_of_type(split, abstract=True))
  # Unsplit: replicated over the mesh of its layout, or the mesh in effect (as JAX, whose
  # types always name a mesh; host values have none).
  if type(x) is Array and x._multi is not None and isinstance(x.sharding,
                                                              sharding_lib.NamedSharding):
    mesh = x.sharding.mesh.abstract_mesh
  elif isinstance(x, (Tracer, Array)):
    mesh = sharding_lib.get_abstract_mesh()
  else:
    mesh = sharding_lib.EMPTY_ABSTRACT_MESH
  return aval.update(sharding=sharding_lib.NamedSharding(
      mesh, sharding_lib.PartitionSpec(*[None] * len(aval.shape))))


def _type_sharding(x):
  """How ``x`` (an Array, a tracer or a ShapeDtypeStruct) is split over Explicit mesh axes
  (``core/sharding_types.py``), or None."""
  if type(x) is ShapeDtypeStruct:
    s = x.sharding
    if isinstance(s, sharding_lib.NamedSharding) and isinstance(s.mesh, sharding_lib.Mesh):
      return sharding_types.of_named(s, len(x.shape))
    return None
  return array_type_sharding(x)


def _check_vmap_splits(leaves, dims):
  """Under sharding in types, as JAX: the mapped dimensions of the inputs must be split
  alike, and the unmapped inputs not split over the mesh axes that split them."""
  def spec_str(entry):
    return "None" if entry is None else repr(entry[0]) if len(entry) == 1 else repr(entry)

  mapped, seen = None, False
  for x, d in zip(leaves, dims):
    if d is None:
      continue
    split = sharding_types.split_of(x)
    entry = split.entries[d] if split is not None and d < len(split.entries) else None
    if seen and entry != mapped:
      raise ValueError("Mapped away dimension of inputs passed to vmap should be sharded the "
                       f"same. Got inconsistent axis specs: {spec_str(mapped)} vs "
                       f"{spec_str(entry)}")
    mapped, seen = entry, True
  if not mapped:
    return
  for x, d in zip(leaves, dims):
    if d is not None:
      continue
    split = sharding_types.split_of(x)
    if split is not None and any(a in mapped for e in split.entries for a in (e or ())):
      raise ValueError(
          "Unmapped values passed to vmap cannot be sharded along the mesh axis you are "
          f"vmapping over. Got type: {sharding_types.type_str(get_aval(x), split)}, in_axes: "
          f"{d} and vmapped mesh axis: {mapped}")


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
  """Wrap ``fun`` so its equations carry ``name`` in their name stack.

  The name shows in the name stacks of printed jaxprs (with source info) and in the op names
  of the lowered program, which profilers display; the computation itself is unchanged and no
  call boundary is made. The wrapper composes with every transformation.

  Args:
    fun: the function to wrap.
    name: the name to push (default: ``fun.__name__``); a non-string raises TypeError.

  Returns:
    A function with ``fun``'s signature and results.

  Examples:
    >>> inc = hlox.named_call(lambda x: x + 1, name="inc")
    >>> inc(jnp.array([1., 2.]))
    Array([2., 3.], dtype=float32)

  See also:
    :func:`hlox.named_scope`.
  """
  if name is None:
    name = getattr(fun, "__name__", None)
  if not isinstance(name, str):
    raise TypeError(f"named_call: name must be a string, got {name!r}")

  @wraps(fun)
  def named(*args, **kwargs):
    with source_info_lib.extend_name_stack(name):
      return fun(*args, **kwargs)
  return named


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False,
               axis_env=None):
  """Return a function that traces ``fun`` and gives its ClosedJaxpr (and output shapes).

  The returned function takes the same arguments as ``fun``; array arguments (and
  ``ShapeDtypeStruct``s) are replaced by abstract values of their shape and dtype, Python
  scalars by weakly typed ones, and ``fun`` is traced to a jaxpr without compiling or running
  anything. Nested ``jit``, ``cond``, ``scan`` and so on show as equations with sub-jaxprs;
  transformations applied inside ``fun`` (``grad``, ``vmap``) are traced through, so their
  result's equations show.

  Args:
    fun: the function to trace.
    static_argnums: int or ints: positional arguments passed to ``fun`` as they are (not
      traced), left out of the jaxpr's inputs.
    return_shape: if True, the returned function also gives the output's pytree of
      ``ShapeDtypeStruct``.
    axis_env: optional sequence of (name, size) pairs of named axes bound while tracing, so
      a function using collectives can be inspected outside vmap/pmap.

  Returns:
    A function returning the ``ClosedJaxpr`` of ``fun`` for the given arguments, or the pair
    ``(closed_jaxpr, shapes)`` under ``return_shape``.

  Examples:
    >>> print(hlox.make_jaxpr(lambda x: jnp.sin(x) * 2.)(1.))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    >>> jaxpr, shape = hlox.make_jaxpr(jnp.sum, return_shape=True)(jnp.ones(3))
    >>> shape
    ShapeDtypeStruct(shape=(), dtype=float32)
  """
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(static_argnums)

  @wraps(fun)
  def make(*args, **kwargs):
    dyn_args = [a for i, a in enumerate(args) if i not in static_argnums]
    # (typed-key structs are traced as keys over their words, as concrete keys are)
    dyn_args, kwargs = tree_util.tree_map(_key_struct_as_words, (dyn_args, kwargs))
    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    avals = [abstractify_spec(x) for x in leaves]
    out_tree_box = []

    def flat_fun(*flat):
      dyn, kw = in_tree.unflatten(flat)
      it = iter(dyn)
      full = [args[i] if i in static_argnums else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return out_leaves

    with contextlib.ExitStack() as stack:
      for name, size in (axis_env or ()):  # named axes to trace collectives against
        stack.enter_context(extend_axis_env(name, size))
      splits = [_type_sharding(x) for x in leaves]
      origin = (fun_source_info(fun), "jit",
                _argument_paths(fun, args, kwargs, static_argnums, ()))
      closed = trace_to_jaxpr(flat_fun, avals, debug_info=_fun_name(fun),
                              trace_name="make_jaxpr",
                              in_shardings=splits if any(splits) else None, origin=origin)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
      return closed, out_tree_box[0].unflatten(shapes)
    return closed
  make = api_boundary(make)
  # Named for what it makes, as JAX names it (``make_jaxpr(f)``, in module ``jax``).
  make.__module__ = "hlox"
  if hasattr(fun, "__qualname__"):
    make.__qualname__ = f"make_jaxpr({fun.__qualname__})"
  if hasattr(fun, "__name__"):
    make.__name__ = f"make_jaxpr({fun.__name__})"
  return make


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
  """Shapes and dtypes of ``fun(*args, **kwargs)``, computed without running it.

  ``fun`` is traced with abstract values of the arguments (each leaf's shape, dtype and weak
  type) and nothing is compiled or executed, so it is cheap even for large shapes. Arguments
  may be Arrays, NumPy arrays, scalars or ``ShapeDtypeStruct``s (or anything with ``shape`` and
  ``dtype``). Errors that tracing finds (shape mismatches, bad dtypes) raise as they would when
  calling ``fun``.

  Args:
    fun: the function to evaluate abstractly.
    *args: its positional arguments (pytrees of arrays or ``ShapeDtypeStruct``s).
    **kwargs: its keyword arguments, likewise.

  Returns:
    A pytree of the structure of ``fun``'s output with a ``ShapeDtypeStruct`` for each leaf.

  Examples:
    >>> hlox.eval_shape(lambda x: x @ x.T, jnp.ones((2, 3)))
    ShapeDtypeStruct(shape=(2, 2), dtype=float32)
    >>> hlox.eval_shape(jnp.add, hlox.ShapeDtypeStruct((4, 3), jnp.int8), 1)
    ShapeDtypeStruct(shape=(4, 3), dtype=int8)
  """
  with_formats = getattr(fun, "_formats_eval_shape", None)
  if with_formats is not None:  # a jit with Formats: its results' Formats too
    return with_formats(*args, **kwargs)
  args, kwargs = tree_util.tree_map(_key_struct_as_words, (args, kwargs))
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  avals = [abstractify_spec(x) for x in leaves]
  out_tree_box = []

  def flat_fun(*flat):
    a, kw = in_tree.unflatten(flat)
    out = fun(*a, **kw)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_leaves = _check_outputs(fun, "eval_shape", out, out_leaves)
    out_tree_box.append(out_tree)
    return out_leaves

  splits = [_type_sharding(x) for x in leaves]
  closed = trace_to_jaxpr(flat_fun, avals, debug_info=_fun_name(fun), trace_name="eval_shape",
                          in_shardings=splits if any(splits) else None)
  shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type,
                             sharding=_result_type_sharding(a, getattr(v, "sharding", None)))
            for a, v in zip(closed.out_avals, closed.jaxpr.outvars)]
  out = out_tree_box[0].unflatten(shapes)
  return tree_util._public.tree_map(_words_as_key_struct, out)


def _key_struct_as_words(x):
  """A typed-key ``ShapeDtypeStruct`` as keys over a struct of their words (what the
  transformations trace), for ``eval_shape``."""
  if not (isinstance(x, ShapeDtypeStruct) and dtypes.is_extended(x.dtype)):
    return x
  return x.dtype._from_words(ShapeDtypeStruct(x.shape + tuple(x.dtype.impl.key_shape),
                                              np.uint32))


def _words_as_key_struct(x):
  """Keys over a struct of words (a traced key result of ``eval_shape``) as the typed-key
  ``ShapeDtypeStruct`` JAX gives."""
  if isinstance(x, ShapeDtypeStruct) or not dtypes.is_extended(getattr(x, "dtype", None)):
    return x
  (words,), _ = tree_util.tree_flatten(x)
  if not isinstance(words, ShapeDtypeStruct):
    return x
  sharding = words.sharding
  if isinstance(sharding, sharding_lib.NamedSharding):  # without the key dimensions
    spec = tuple(sharding.spec) + (None,) * (len(words.shape) - len(sharding.spec))
    sharding = sharding_lib.NamedSharding(sharding.mesh,
                                          sharding_lib.PartitionSpec(*spec[:len(x.shape)]))
  return ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)


def _result_type_sharding(aval, split):
  """The sharding of a result's type, as ``eval_shape`` reports it: over the abstract mesh
  (None when no mesh is in effect and the result is not split)."""
  if split is not None:
    return sharding_lib.named_of_type(split, abstract=True)
  mesh = sharding_lib.get_abstract_mesh()
  if mesh.empty:
    return None
  return sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec(*[None] * len(aval.shape)))


# --- vmap ----------------------------------------------------------------------------------

def _is_none(x) -> bool:
  return x is None


def _flatten_axes(what: str, tree_def, axes, leaves_count: int, is_leaf=_is_none):
  """Broadcast an axes spec (int/None, or a tree prefix of the arguments) to one entry per
  leaf; a spec that is not a prefix raises ValueError naming ``what``. ``is_leaf`` tells the
  spec's leaves (None, and specs of vmappable types where those are registered)."""
  if axes is None or type(axes) is int or (is_leaf is not _is_none and is_leaf(axes)):
    return [axes] * leaves_count
  try:
    proxy = tree_util.tree_unflatten(tree_def, [object()] * leaves_count)
    return tree_util.broadcast_prefix(axes, proxy, is_leaf=is_leaf)
  except (ValueError, TypeError) as e:
    errors = tree_util.prefix_errors(axes, proxy, f"vmap {what}", is_leaf=is_leaf)
    if not errors:  # a failure prefix_errors cannot explain: say what was compared
      raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                       f"value; got specification {axes!r} for value tree {tree_def}.") from e
    details = "".join(f"\n  {m}" for m in errors)
    raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                     f"value; \n  Mismatch details ({len(errors)} found):{details}") from None


def mapped_axis_size(what: str, avals, axes, axis_size=None, leaf_names=None):
  """Normalize mapped axes (per leaf, int or None) against the leaves' ranks and check that
  every mapped axis has one size; returns (axes, size). Errors name ``what`` (vmap/pmap) and,
  where ``leaf_names`` (a callable giving each leaf's description, such as ``argument x`` or
  ``kwargs['y']``) is given, the arguments, in JAX's words."""
  axes = list(axes)
  sizes = {}
  for i, (aval, ax) in enumerate(zip(avals, axes)):
    if ax is None:
      continue
    if not -aval.ndim <= ax < aval.ndim:
      raise ValueError(f"{what} was requested to map its argument along axis {ax}, which "
                       f"implies that its rank should be at least {max(ax + 1, -ax)}, but is "
                       f"only {aval.ndim} (its shape is {aval.shape})")
    axes[i] = ax % aval.ndim
    sizes[i] = aval.shape[axes[i]]
  distinct = set(sizes.values())
  if len(distinct) > 1 or (axis_size is not None and distinct and distinct != {axis_size}):
    raise ValueError(_inconsistent_sizes_message(what, avals, axes, sizes, axis_size,
                                                 leaf_names))
  if sizes:
    size = next(iter(sizes.values()))
    if axis_size is not None and axis_size != size:
      raise ValueError(f"{what} got axis_size={axis_size} but the mapped axes have size {size}")
    return axes, size
  if axis_size is None:
    if what == "pmap":
      raise ValueError("pmap requires at least one argument with a mapped axis: in_axes must "
                       "have a non-None entry for an array argument")
    raise ValueError(f"{what} must have at least one non-None value in in_axes or axis_size "
                     "must be specified")
  return axes, axis_size


def _inconsistent_sizes_message(what, avals, axes, sizes, axis_size, leaf_names):
  names = leaf_names() if leaf_names is not None else [f"argument leaf {i}"
                                                       for i in range(len(avals))]
  lines = []
  if axis_size is not None:
    lines.append(f"  * the `axis_size` argument was {axis_size}")
  counts = {}
  for i, n in sizes.items():
    counts.setdefault(n, []).append(i)
  ranked = sorted(counts.items(), key=lambda kv: -len(kv[1]))  # stable: first seen first
  for rank, (n, leaves) in enumerate(ranked):
    i = leaves[0]
    where = (f"axis {axes[i]} of {names[i]} of type "
             f"{avals[i].str_short(short_dtypes=False)}")
    if len(leaves) == 1:
      lines.append(f"  * one axis had size {n}: {where}")
    else:
      most = "most" if rank == 0 else "some"
      lines.append(f"  * {most} axes ({len(leaves)} of them) had size {n}, e.g. {where}")
  return f"{what} got inconsistent sizes for array axes to be mapped:\n" + ";\n".join(lines)


def _check_in_axes_length(in_axes, args) -> None:
  # As JAX: a tuple in_axes has one entry per positional argument.
  if isinstance(in_axes, tuple) and len(in_axes) != len(args):
    raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                     f"corresponding to the positional arguments passed to the function, but "
                     f"got len(in_axes)={len(in_axes)}, len(args)={len(args)}")


def _check_some_leaves(leaves, axis_size, args, kwargs) -> None:
  # Without any leaf there is nothing to take the mapped size from.
  if not leaves and axis_size is None:
    raise ValueError("vmap wrapped function must be passed at least one argument containing "
                     f"an array or axis_size must be specified, got empty *args={args} and "
                     f"**kwargs={kwargs}")


def _argument_names(fun, args, kwargs, is_leaf=None) -> list:
  """Each leaf of ``(args, kwargs)`` described as JAX's messages do: ``argument x``,
  ``argument b[0]`` (by the parameter's name where the signature gives one), ``kwargs['y']``."""
  try:
    params = [p.name for p in inspect.signature(fun).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  except (TypeError, ValueError):
    params = []
  names = []
  for path, _ in tree_util.tree_flatten_with_path((args, kwargs), is_leaf=is_leaf)[0]:
    if path[0].idx == 0:
      i = path[1].idx
      head = f"argument {params[i]}" if i < len(params) else f"args[{i}]"
      names.append(head + tree_util.keystr(path[2:]))
    else:
      names.append("kwargs" + tree_util.keystr(path[1:]))
  return names


def _reject_ref_views(name, args) -> None:
  # As JAX: a view of a reference (``ref.at[idx]``) cannot be a vmapped argument.
  for path, leaf in tree_util.tree_flatten_with_path(args, is_leaf=ref_view.is_ref_view)[0]:
    if ref_view.is_ref_view(leaf):
      raise TypeError(f"When tracing {name} for vmap, TransformedRefs are not allowed, but "
                      f"got a TransformedRef with name {tree_util.keystr(path)}.")


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None,
         spmd_axis_name=None):
  """Vectorize ``fun`` over an axis of its arguments.

  The returned function runs ``fun`` once on abstract per-example values (the mapped axis
  removed) and rewrites every primitive into its batched form, so the result equals stacking
  ``fun`` applied to each slice, computed in one go. All mapped axes must have the same size;
  unequal sizes raise ValueError naming the arguments. ``vmap`` composes with ``jit``, ``grad``
  and itself (nest it to map over several axes). Python control flow on mapped values raises,
  as under ``jit``; use ``lax.cond``/``jnp.where`` instead.

  Args:
    fun: function of arrays (pytrees of arrays) returning arrays.
    in_axes: an int, None, or a tuple with one entry per positional argument, each an int, None
      or a pytree prefix of that argument with int/None leaves: the axis of each argument to
      map over (None: not mapped, the same value for every example). Keyword arguments are
      always mapped over axis 0.
    out_axes: an int, None, or a pytree prefix of the outputs: where the mapped axis goes in
      each output (None only for outputs that do not depend on the mapped axis, else
      ValueError).
    axis_name: optional hashable name of the mapped axis, for collectives such as
      ``lax.psum(x, axis_name)`` inside ``fun``.
    axis_size: the mapped size; required when no argument is mapped, else must agree with the
      arguments.
    spmd_axis_name: accepted for compatibility; not used.

  Returns:
    The batched function, taking arguments with the extra mapped axes and returning outputs
    with the mapped axis at ``out_axes``.

  Examples:
    >>> hlox.vmap(jnp.dot)(jnp.ones((2, 3)), jnp.ones((2, 3)))
    Array([3., 3.], dtype=float32)
    >>> hlox.vmap(lambda x, y: x + y, in_axes=(0, None))(jnp.arange(3.), 10.)
    Array([10., 11., 12.], dtype=float32)
    >>> hlox.vmap(lambda x: x.sum(), in_axes=1)(jnp.arange(6.).reshape(2, 3))
    Array([3., 5., 7.], dtype=float32)

  See also:
    :func:`hlox.pmap`, :func:`hlox.lax.map`.
  """
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  # As JAX: the top level of in_axes stands for the positional arguments (a tuple, or one
  # int/None for all), and every leaf of either spec is an int (not a bool) or None.
  if not (in_axes is None or type(in_axes) in (int, tuple) or
          type(in_axes) in batching.spec_types):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got {in_axes}.")
  for name, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
    if any(leaf is not None and type(leaf) is not int and type(leaf) not in batching.spec_types
           for leaf in tree_util.tree_leaves(spec, is_leaf=lambda x: x is None)):
      raise TypeError(f"vmap {name} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {spec}.")

  @wraps(fun)
  def vmapped(*args, **kwargs):
    _reject_ref_views(getattr(fun, "__name__", "fun"), (args, kwargs))
    # Values of registered vmappable types (sparse arrays) among the arguments: leaves with
    # stacking of their own. Only then: vmap's own path (its errors, name stacks) otherwise.
    if batching.vmappables and _any_vmappable((args, kwargs)):
      return _vmap_vmappable(fun, args, kwargs, in_axes, out_axes, axis_name, axis_size)
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    _check_in_axes_length(in_axes, args)
    args_tree = tree_util.tree_structure(args)
    n_arg_leaves = args_tree.num_leaves
    arg_axes = _flatten_axes("in_axes", args_tree, in_axes, n_arg_leaves)
    dims = list(arg_axes) + [0] * (len(leaves) - n_arg_leaves)
    _check_some_leaves(leaves, axis_size, args, kwargs)
    # Leaves that are not mapped pass through as they are (functions, objects ...).
    avals = [None if d is None else _abstractify(x) for x, d in zip(leaves, dims)]
    dims, size = mapped_axis_size("vmap", avals, dims, axis_size,
                                  lambda: _argument_names(fun, args, kwargs))
    if sharding_types.active[0]:
      _check_vmap_splits(leaves, dims)
    out_tree_box = []

    def flat_fun(*flat):
      a, kw = tree_util.tree_unflatten(in_tree, flat)
      out = fun(*a, **kw)
      if batching.vmappables and _any_vmappable(out):
        raise _VmappableOutputs  # stacked by their own rules: the other path, from the start
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return out_leaves

    axis_data = batching.AxisData(size, axis_name)
    try:
      outs, out_dims = batching.batch(flat_fun, leaves, dims, axis_data, transform_stack=True)
    except _VmappableOutputs:
      return _vmap_vmappable(fun, args, kwargs, in_axes, out_axes, axis_name, axis_size)
    out_tree = out_tree_box[0]
    spec = _flatten_axes("out_axes", out_tree, out_axes, len(outs))
    final = []
    for i, (o, d, dst) in enumerate(zip(outs, out_dims, spec)):
      if dst is None:
        if d is not None:
          path = tree_util.keystr(tree_util.tree_flatten_with_path(
              out_tree.unflatten(list(range(len(outs)))))[0][i][0])
          raise ValueError(batching.unmapped_output_message(axis_name, path, d))
        final.append(o)
        continue
      try:
        ndim = get_aval(o).ndim + (d is None)
      except TypeError:
        raise TypeError(f"Output from batched function {o!r} with type {type(o)} is not a "
                        "valid JAX type") from None
      if not -ndim <= dst < ndim:
        raise ValueError(f"vmap out_axes: axis {dst} is out of bounds for output leaf {i} of "
                         f"rank {ndim}")
      final.append(batching.matchaxis(o, d, dst % ndim, size))
    return tree_util.tree_unflatten(out_tree, final)

  name = _fun_name(fun)
  doc = (f"Vectorized version of {name}. Takes similar arguments as {name} but with additional "
         f"array axes over which {name} is mapped.")
  if getattr(fun, "__doc__", None):
    doc += "\n\nOriginal documentation:\n\n" + fun.__doc__
  vmapped.__doc__ = doc  # as JAX's
  return api_boundary(vmapped)


class _VmappableOutputs(Exception):
  """A function vmapped on plain arrays returned vmappable values (a sparse array built in
  the body): ``vmap`` starts again on the path that stacks them by their own rules."""


def _any_vmappable(tree) -> bool:
  return any(map(batching.is_vmappable, tree_util.tree_leaves(tree,
                                                              is_leaf=batching.is_vmappable)))


def _vmap_vmappable(fun, args, kwargs, in_axes, out_axes, axis_name, axis_size):
  """``vmap`` with values of registered vmappable types among the arguments or outputs
  (``batching.register_vmappable``): they and their specs are leaves of the trees. The
  arguments are checked as on the plain path, with the same messages."""
  is_vmappable = batching.is_vmappable

  def is_spec(x):
    return x is None or type(x) in batching.spec_types
  leaves, in_tree = tree_util.tree_flatten((args, kwargs), is_leaf=is_vmappable)
  _check_in_axes_length(in_axes, args)
  args_tree = tree_util.tree_structure(args, is_leaf=is_vmappable)
  n_arg_leaves = args_tree.num_leaves
  specs = (_flatten_axes("in_axes", args_tree, in_axes, n_arg_leaves, is_leaf=is_spec)
           + [0] * (len(leaves) - n_arg_leaves))
  _check_some_leaves(leaves, axis_size, args, kwargs)
  # The size comes from what is mapped along an int axis: arrays, and vmappable values
  # with a ``shape`` (sparse arrays), which tell their size as an array does.
  sized = [type(s) is int and (not is_vmappable(x) or hasattr(x, "shape"))
           for x, s in zip(leaves, specs)]
  if axis_size is None and not any(sized) and any(s is not None for s in specs):
    raise ValueError("vmap: axis_size must be given when no array argument is mapped along "
                     "an integer axis (vmappable values cannot tell their size)")
  avals = [None if not ok else ShapeDtypeStruct(tuple(x.shape), np.float32)
           if is_vmappable(x) else _abstractify(x) for x, ok in zip(leaves, sized)]
  _, size = mapped_axis_size(
      "vmap", avals, [s if ok else None for s, ok in zip(specs, sized)], axis_size,
      lambda: _argument_names(fun, args, kwargs, is_leaf=is_vmappable))
  out_tree_box = []

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(in_tree, flat)
    out_leaves, out_tree = tree_util.tree_flatten(fun(*a, **kw), is_leaf=is_vmappable)
    out_tree_box.append(out_tree)
    return out_leaves

  def out_specs():
    out_tree = out_tree_box[0]
    return _flatten_axes("out_axes", out_tree, out_axes, out_tree.num_leaves, is_leaf=is_spec)

  def out_where():
    out_tree = out_tree_box[0]
    paths = tree_util.tree_flatten_with_path(
        out_tree.unflatten(list(range(out_tree.num_leaves))))[0]
    return [tree_util.keystr(p) for p, _ in paths]
  outs = batching.batch_vmappable(flat_fun, leaves, specs, batching.AxisData(size, axis_name),
                                  out_specs, out_where)
  return tree_util.tree_unflatten(out_tree_box[0], outs)


# --- pmap: the transform (the replica machinery is in interpreters/pmap.py) ---------------

class _AxisName:
  """The name of an axis pmap was not given a name for (collectives cannot refer to it)."""
  __slots__ = ()

  def __repr__(self):
    return "<unnamed pmap axis>"


def _pmap_leaf_axes(in_tree, in_axes, kwargs_given: bool) -> list:
  """One mapped axis per leaf of ``(args, kwargs)``: ``in_axes`` is a prefix of the tuple of
  positional arguments, and every keyword argument is mapped over its leading axis."""
  n = in_tree.num_leaves
  spec = (in_axes, 0)
  proxy = tree_util.tree_unflatten(in_tree, [object()] * n)
  try:
    return list(tree_util.broadcast_prefix(spec, proxy, is_leaf=lambda x: x is None))
  except (ValueError, TypeError) as e:
    errors = tree_util.prefix_errors(spec, proxy, "pmap in_axes", is_leaf=lambda x: x is None)
    if not errors:
      raise ValueError(f"pmap in_axes {in_axes!r} is not a tree prefix of the positional "
                       f"arguments {in_tree}") from e
    msg = (f"{errors[0]}\n\nThe full pytree is (positional arguments, keyword arguments) "
           "as the pmapped function was called; `in_axes` must be a tree prefix of the tuple "
           "of positional arguments, and it is not.")
    if kwargs_given:
      msg += ("\n\nArguments passed by keyword take no part in that comparison: each "
              "argument passed by keyword is mapped over its leading axis (see `in_axes` in "
              "the `pmap` docstring).")
    raise ValueError(msg) from None


def _pmap_out_axes(out_tree, out_axes, n: int) -> list:
  """One entry of ``out_axes`` (a prefix of the output tree) per output leaf."""
  if out_axes is None or isinstance(out_axes, int):
    return [out_axes] * n
  proxy = tree_util.tree_unflatten(out_tree, [object()] * n)
  try:
    return list(tree_util.broadcast_prefix(out_axes, proxy, is_leaf=lambda x: x is None))
  except (ValueError, TypeError) as e:
    errors = tree_util.prefix_errors(out_axes, proxy, "pmap out_axes",
                                     is_leaf=lambda x: x is None)
    if not errors:
      raise ValueError(f"pmap out_axes {out_axes!r} is not a tree prefix of the outputs "
                       f"{out_tree}") from e
    raise ValueError(f"{errors[0]}\n\n`out_axes` must be a tree prefix of the pmapped "
                     "function's output, and it is not.") from None


def _check_pmap_axes_spec(what: str, spec) -> None:
  """An axes spec's leaves are ints or None (``False`` is no axis; it is a common typo)."""
  for leaf in tree_util.tree_leaves(spec, is_leaf=lambda x: x is None):
    if leaf is not None and (type(leaf) is bool or not isinstance(leaf, (int, np.integer))):
      raise TypeError(f"pmap {what} must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {spec!r}.")


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums=(), devices=None, backend=None, axis_size=None,
         donate_argnums=(), global_arg_shapes=None) -> Callable:
  """Map ``fun`` over an axis of its arguments, running each slice on its own device.

  Like ``vmap`` (``in_axes``/``out_axes`` are ints, None, or pytree prefixes) but the slices
  run in parallel as replicas of one compiled program (``fun`` is compiled, as with ``jit``),
  and collectives over ``axis_name`` communicate between devices. The mapped size must not
  exceed the number of devices, else ValueError (``HLOX_NUM_CPU_DEVICES`` sets how many CPU
  devices there are). Results stay split over the devices; converting them to NumPy gathers
  them.

  Args:
    fun: function of arrays (pytrees of arrays) returning arrays.
    axis_name: optional hashable name of the mapped axis, for collectives inside ``fun``.
    in_axes: int, None or pytree prefix of the positional arguments: the axis of each to map
      over (None: broadcast to every device).
    out_axes: int, None or pytree prefix of the outputs: where the mapped axis goes.
    static_broadcasted_argnums: int or ints: positional arguments that are static (hashable,
      passed to every replica as they are).
    devices: optional sequence of devices to run on (default: the first local devices).
    backend: optional platform name ("cpu", "tpu", ...) whose devices to use.
    axis_size: the mapped size, when no argument is mapped.
    donate_argnums: int or ints: positional arguments whose buffers may be reused.
    global_arg_shapes: unsupported; must be None (else NotImplementedError).

  Returns:
    The mapped function; its outputs carry the mapped axis at ``out_axes``.

  Examples:
    >>> n = hlox.local_device_count()
    >>> out = hlox.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.ones(n))
    >>> bool((out == n).all())
    True

  See also:
    :func:`hlox.vmap`, :func:`hlox.shard_map`.
  """
  if not callable(fun):
    raise TypeError(f"pmap: expected a callable, got {fun!r}")
  if backend is not None:
    client.client_of(backend)  # JAX's "Unknown backend" RuntimeError
    if devices is None and client.client_of(backend) is not client.get_client():
      devices = client.local_devices(backend=backend)
  if global_arg_shapes is not None:
    raise NotImplementedError("pmap: global_arg_shapes is not supported")
  if isinstance(static_broadcasted_argnums, int):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  if isinstance(donate_argnums, int):
    donate_argnums = (donate_argnums,)
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  _check_pmap_axes_spec("in_axes", in_axes)
  _check_pmap_axes_spec("out_axes", out_axes)
  if devices is not None and len(devices) == 0:
    raise ValueError("'devices' argument to pmap must be non-empty, or None.")
  wrapped = _PmapFunction(fun, axis_name if axis_name is not None else _AxisName(), in_axes,
                          out_axes, tuple(static_broadcasted_argnums),
                          None if devices is None else tuple(devices), axis_size,
                          tuple(donate_argnums))

  fast_cache = wrapped._fast_cache
  ctx = trace_ctx
  simple = not static_broadcasted_argnums and not donate_argnums

  @wraps(fun)
  def pmapped(*args, **kwargs):
    # Cache hit: the arguments' structure and layouts were seen before; no tracing, no
    # lookups beyond one dict access (``_PmapFunction.__call__`` fills the cache).
    if simple and not kwargs and ctx.trace is eval_trace:
      leaves, in_tree = tree_util.tree_flatten(args)
      key = (in_tree, *map(pmap_interp.signature, leaves))
      entry = fast_cache.get(key)
      if entry is not None:
        compiled, consts, out_tree = entry
        return out_tree.unflatten(compiled(consts + leaves))
    return wrapped(args, kwargs)
  pmapped._pmap = wrapped
  pmapped.lower = wrapped.lower
  return pmapped


_pmap_tracing = threading.local()  # .depth: how many pmap bodies are being traced


class _PmapTraced:
  __slots__ = ("jaxpr", "consts", "out_tree", "in_axes", "out_axes")

  def __init__(self, jaxpr, consts, out_tree, in_axes, out_axes):
    self.jaxpr, self.consts, self.out_tree = jaxpr, consts, out_tree
    self.in_axes, self.out_axes = in_axes, out_axes


class _PmapFunction:
  def __init__(self, fun, axis_name, in_axes, out_axes, static_argnums, devices, axis_size,
               donate_argnums):
    self.fun = fun
    self.name = getattr(fun, "__name__", "fun")
    self.axis_name = axis_name
    self.in_axes = in_axes
    self.out_axes = out_axes
    self.static_argnums = static_argnums
    self.devices = devices
    self.axis_size = axis_size
    self.donate_argnums = donate_argnums
    self._trace_cache = LRUCache()
    self._fast_cache = {}

  def _prepare(self, args, kwargs, aval_of=get_aval):
    """Flat dynamic arguments, their mapped axes, size, donation, and the trace key."""
    n = len(args)
    statics = []
    dyn_args = []
    for i, a in enumerate(args):
      if i in self.static_argnums or i - n in self.static_argnums:
        try:
          hash(a)
        except TypeError:
          raise ValueError(f"Non-hashable static arguments are not supported: pmap's "
                           f"static_broadcasted_argnums argument at position {i} must be "
                           f"hashable, got {type(a).__name__}") from None
        statics.append((i, a))
      else:
        dyn_args.append(a)
    dyn_args = tuple(dyn_args)
    if len(statics) < len(self.static_argnums):
      raise ValueError(f"pmapped function has static_broadcasted_argnums="
                       f"{self.static_argnums} but was called with only {n} positional "
                       f"argument{'s' if n != 1 else ''}. All static broadcasted arguments "
                       "must be passed positionally.")
    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    in_axes = self.in_axes
    if isinstance(in_axes, tuple) and len(in_axes) != len(dyn_args) and len(in_axes) == n:
      # Given for all positional arguments, statics included.
      in_axes = tuple(a for i, a in enumerate(in_axes) if i not in {s for s, _ in statics})
    axes = _pmap_leaf_axes(in_tree, in_axes, bool(kwargs))
    avals = [aval_of(x) for x in leaves]
    axes, size = mapped_axis_size("pmap", avals, axes, self.axis_size)
    donated = []
    pos = [i for i in range(n) if i not in {s for s, _ in statics}]
    for i, a in zip(pos, dyn_args):
      donated += [i in self.donate_argnums] * len(tree_util.tree_leaves(a))
    donated += [False] * (len(leaves) - len(donated))
    return leaves, in_tree, tuple(axes), size, tuple(statics), tuple(donated), avals

  def _trace(self, in_tree, avals, axes, size, statics, kwargs_given):
    global_size = size
    outermost = not getattr(_pmap_tracing, "depth", 0)
    if self.devices is None and outermost and client.process_count() > 1:
      # Across processes every process maps its own devices' slices (JAX's convention);
      # pmaps nested inside it stay within each outer position.
      local = client.local_device_count()
      if size != local:
        raise ValueError(f"pmap over several processes: the mapped axis has size {size} but "
                         f"this process has {local} devices; each process passes one slice "
                         "per local device")
      global_size = size * client.process_count()
    key = (in_tree, tuple(avals), axes, size, statics, tuple(trace_ctx.axis_env),
           source_info_lib.current_xla_metadata())
    traced = self._trace_cache.get(key)
    if traced is not None:
      return traced, global_size
    static_pos = dict(statics)
    out_tree_box = []

    def flat_fun(*flat):
      dyn_args, kw = in_tree.unflatten(flat)
      it = iter(dyn_args)
      n = len(dyn_args) + len(static_pos)
      full = [static_pos[i] if i in static_pos else next(it) for i in range(n)]
      out = self.fun(*full, **kw)
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return out_leaves

    inner_avals = [a if ax is None else pmap_interp.remove_axis(a, ax) for a, ax in zip(avals, axes)]
    _pmap_tracing.depth = getattr(_pmap_tracing, "depth", 0) + 1
    try:
      with extend_axis_env(self.axis_name, global_size):
        closed = trace_to_jaxpr(flat_fun, inner_avals, debug_info=self.name,
                                trace_name="pmap")
    finally:
      _pmap_tracing.depth -= 1
    jaxpr, consts = convert_constvars(closed)
    out_tree = out_tree_box[0]
    out_axes = []
    for i, (ax, a) in enumerate(zip(_pmap_out_axes(out_tree, self.out_axes,
                                                   len(jaxpr.out_avals)), jaxpr.out_avals)):
      if ax is None:
        out_axes.append(None)
        continue
      if not -(a.ndim + 1) <= ax <= a.ndim:
        raise ValueError(f"pmap out_axes {ax} is out of bounds for output leaf {i} of rank "
                         f"{a.ndim + 1}")
      out_axes.append(ax % (a.ndim + 1))
    traced = _PmapTraced(jaxpr, consts, out_tree, axes, tuple(out_axes))
    if not any(isinstance(c, Tracer) for c in consts):
      self._trace_cache.put(key, traced)
    return traced, global_size

  def _traced_params(self, args, kwargs, aval_of=get_aval):
    """Trace (or reuse the trace) for these arguments: (traced, flat args, primitive params,
    whether the cache-hit path may remember this call)."""
    leaves, in_tree, axes, size, statics, donated, avals = self._prepare(args, kwargs, aval_of)
    traced, global_size = self._trace(in_tree, avals, axes, size, statics, bool(kwargs))
    n_consts = len(traced.consts)
    params = dict(jaxpr=traced.jaxpr, axis_name=self.axis_name, axis_size=size,
                  global_axis_size=global_size,
                  in_axes=(None,) * n_consts + axes, out_axes=traced.out_axes,
                  devices=self.devices, donated_invars=(False,) * n_consts + donated,
                  name=self.name)
    rememberable = not kwargs and not statics and not any(donated)
    return traced, leaves, params, rememberable

  @api_boundary
  def __call__(self, args, kwargs):
    traced, leaves, params, rememberable = self._traced_params(args, kwargs)
    if trace_ctx.trace is eval_trace and not any(isinstance(x, Tracer) for x in leaves) and \
        not any(isinstance(c, Tracer) for c in traced.consts):
      args_all = [*traced.consts, *leaves]
      compiled = pmap_interp.compiled_for(args_all, params)
      if rememberable and len(self._fast_cache) < 64:
        key = (tree_util.tree_structure(args), *map(pmap_interp.signature, leaves))
        self._fast_cache[key] = (compiled, list(traced.consts), traced.out_tree)
      return traced.out_tree.unflatten(compiled(args_all))
    outs = pmap_interp.xla_pmap_p.bind(*traced.consts, *leaves, **params)
    return traced.out_tree.unflatten(outs)

  def lower(self, *args, **kwargs) -> "_PmapLowered":
    """The replicated program for arguments like these (arrays, or ``ShapeDtypeStruct`` /
    ``ShapedArray`` descriptions of them), as jit's ``Lowered``: ``as_text()``,
    ``compiler_ir()``, ``cost_analysis()``, ``compile()``."""
    traced, leaves, params, _ = self._traced_params(args, kwargs, _lower_aval)
    in_avals = [*map(get_aval, traced.consts), *map(_lower_aval, leaves)]
    lowering = pmap_interp.PmapLowering(in_avals=in_avals, **params)
    staged = _Traced(traced.jaxpr, traced.consts, traced.out_tree,
                     in_avals[len(traced.consts):])
    in_tree = tree_util.tree_structure(self._dynamic(args, kwargs))
    return _PmapLowered(lowering, staged, in_tree, params["donated_invars"], self.name)

  def _dynamic(self, args, kwargs):
    """``(args, kwargs)`` without the static arguments."""
    n = len(args)
    return (tuple(a for i, a in enumerate(args) if i not in self.static_argnums
                  and i - n not in self.static_argnums), kwargs)


def _lower_aval(x):
  """The aval of an argument to ``lower``: an array, or a description of one."""
  if isinstance(x, ShapedArray):
    return x
  return _abstractify(x)


class _PmapLowered(Lowered):
  """A pmapped function lowered for one signature (``pmap(f).lower(x)``)."""

  def __init__(self, lowering, staged, in_tree, donated_invars, name):
    super().__init__(lowering.lowered, staged, in_tree, donated_invars, f"pmap({name})")
    self._pmap_lowering = lowering

  def compile(self, compiler_options: dict | None = None) -> "_PmapCompiled":
    """Compile with XLA for the replicas; ``compiler_options`` as for jit's ``compile``."""
    return _PmapCompiled(self._pmap_lowering.compile(compiler_options), self._traced,
                         self.in_tree, self._name)


class _PmapCompiled(Compiled):
  """A compiled pmapped function: called with arguments of the types it was compiled for,
  it runs the replicas (arguments may live anywhere; they are split over the devices)."""

  def _host_outputs(self, call):
    return call  # the replicas' program makes its float0 results itself

  def _argument_names(self, args, kwargs) -> list:
    # JAX's pmap compiles a function of the flat arguments and names them so.
    return [f"flat_args[{i}]" for i in range(len(self._traced.in_avals))]
