"""Operators and NumPy-style methods of ``hlox.Array`` and of tracers.

Installed onto both classes at import time, so a traced value behaves like an Array.
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.refs import AbstractRef
from hlox.core.tracer import Tracer
from hlox.lax import ref_view, state
from hlox.errors import ConcretizationTypeError
from hlox.numpy import (conversion, creation, indexing, products, reductions, searching,
                        selection, shapes,
                        sorting, ufuncs, util)
from hlox.runtime.array import Array

# As JAX: lists and tuples are not operands (``x + [1, 2]`` is a TypeError, and a NamedTuple
# with its own operators gets its turn).
_known_operand_types = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


_rejected_operand_types = (dict, list, set, tuple)


def _defer_to_others(binary, symbol, swapped=False):
  """Return NotImplemented for operand types we do not know, so Python tries the other side.

  Builtin collections are almost always a mistake, so they raise (as JAX), naming the two
  types in the order the user wrote them. Exact types only: a NamedTuple with its own
  operators gets its turn."""
  def method(self, other):
    if not isinstance(other, _known_operand_types) and not hasattr(other, "__jax_array__"):
      if type(other) in _rejected_operand_types:
        left, right = (other, self) if swapped else (self, other)
        raise TypeError(f"unsupported operand type(s) for {symbol}: "
                        f"{type(left).__name__!r} and {type(right).__name__!r}")
      return NotImplemented
    return binary(self, other)
  return method


def _swap(binary):
  return lambda self, other: binary(other, self)


def _operators():
  ops = {}
  binary = {
      "add": (ufuncs.add, "+"), "sub": (ufuncs.subtract, "-"), "mul": (ufuncs.multiply, "*"),
      "truediv": (ufuncs.true_divide, "/"), "floordiv": (ufuncs.floor_divide, "//"),
      "mod": (ufuncs.mod, "%"), "pow": (ufuncs.power, "**"), "matmul": (products.matmul, "@"),
      "and": (ufuncs.bitwise_and, "&"), "or": (ufuncs.bitwise_or, "|"),
      "xor": (ufuncs.bitwise_xor, "^"), "lshift": (ufuncs.left_shift, "<<"),
      "rshift": (ufuncs.right_shift, ">>"), "divmod": (ufuncs.divmod, "divmod()"),
  }
  for name, (fn, symbol) in binary.items():
    ops[f"__{name}__"] = _defer_to_others(fn, symbol)
    ops[f"__r{name}__"] = _defer_to_others(_swap(fn), symbol, swapped=True)
  comparisons = {"eq": (ufuncs.equal, "=="), "ne": (ufuncs.not_equal, "!="),
                 "lt": (ufuncs.less, "<"), "le": (ufuncs.less_equal, "<="),
                 "gt": (ufuncs.greater, ">"), "ge": (ufuncs.greater_equal, ">=")}
  for name, (fn, symbol) in comparisons.items():
    ops[f"__{name}__"] = _defer_to_others(fn, symbol)
  ops["__neg__"] = ufuncs.negative
  ops["__pos__"] = lambda x: x
  ops["__abs__"] = ufuncs.abs
  ops["__invert__"] = ufuncs.invert
  ops["__getitem__"] = indexing._getitem
  ops["__contains__"] = _contains
  ops["__round__"] = _operator_round
  ops["__setitem__"] = _setitem
  return ops


def _setitem(x, idx, value):
  raise TypeError("JAX arrays are immutable and do not support in-place item assignment. "
                  "Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                  "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


def _methods():
  methods = {}
  for room, names in (
      (reductions, ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all",
                    "cumsum", "cumprod", "var", "std", "ptp")),
      (ufuncs, ("round", "conj", "conjugate")),
      (products, ("dot",)),
      (shapes, ("ravel", "squeeze", "swapaxes", "repeat")),
      (sorting, ("sort", "argsort", "argpartition")),
      (searching, ("nonzero", "searchsorted")),
      (indexing, ("take",)),
      (creation, ("diagonal", "copy"))):
    for name in names:
      methods[name] = getattr(room, name)
  # The bounds go by keyword, as JAX's method passes them (its staged ``clip`` call takes them
  # in keyword order: ``max``, then ``min``).
  methods["clip"] = lambda x, min=None, max=None: ufuncs.clip(x, min=min, max=max)
  # (JAX's method passes the offset, a traced argument of its staged ``trace``.)
  methods["trace"] = lambda x, offset=0, axis1=0, axis2=1, dtype=None, out=None: \
      products.trace(x, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype, out=out)
  methods["compress"] = lambda x, condition, axis=None, **kw: selection.compress(condition, x,
                                                                                 axis, **kw)
  methods["choose"] = lambda x, choices, mode="raise": selection.choose(x, choices, mode=mode)
  methods["reshape"] = _reshape_method
  methods["transpose"] = _transpose_method
  methods["T"] = property(lambda x: shapes.transpose(x))
  methods["mT"] = property(lambda x: shapes.swapaxes(x, -1, -2))
  methods["real"] = property(ufuncs.real)
  methods["imag"] = property(ufuncs.imag)
  methods["astype"] = _astype_method
  methods["flatten"] = lambda x, order="C", *, out_sharding=None: shapes.ravel(
      x, order, out_sharding=out_sharding)
  methods["at"] = property(_at_property)
  methods["view"] = _view
  methods["byteswap"] = _byteswap
  methods["tobytes"] = _tobytes
  methods["tolist"] = _tolist
  methods["itemsize"] = property(lambda x: x.aval.dtype.itemsize)
  methods["nbytes"] = property(lambda x: x.aval.size * x.aval.dtype.itemsize)
  return methods


def _reshape_method(x, *shape, order="C", out_sharding=None):
  if len(shape) == 1 and not isinstance(shape[0], int) and hasattr(shape[0], "__iter__") \
      and (isinstance(shape[0], (list, tuple)) or np.ndim(shape[0]) != 0):
    shape = tuple(shape[0])
  elif len(shape) == 1:
    shape = shape[0]  # (a 0-d array or tracer: one dimension, for reshape to judge)
  return shapes.reshape(x, shape, order=order, out_sharding=out_sharding)


def _transpose_method(x, *axes):
  if len(axes) == 1 and (axes[0] is None or hasattr(axes[0], "__iter__")):
    axes = axes[0]
  return shapes.transpose(x, axes or None)


def _astype_method(x, dtype, copy=False, device=None):
  return shapes.astype(x, dtype, copy=copy, device=device)


def _contains(x, other):
  # As JAX (departing from NumPy's oddities): a 1-D array searched for a scalar.
  if other is None or isinstance(other, str):
    raise TypeError(f"Array.__contains__: unsupported operand type {type(other)}.")
  if not util.is_arraylike(other):
    raise TypeError(f"Array.__contains__: unsupported operand type {type(other)}.")
  query = other
  if x.ndim != 1:
    raise ValueError(f"Array.__contains__: search array must be one-dimensional, got "
                     f"arr.shape={x.shape}.")
  if np.ndim(query) != 0:
    raise ValueError(f"Array.__contains__: query value must be a scalar, got "
                     f"query.shape={np.shape(query)}")
  return reductions.any(ufuncs.equal(x, query))


def _operator_round(x, ndigits=None):
  out = ufuncs.round(x, ndigits or 0)
  # round(x) without digits is an integer for Python floats; as JAX, an integer array.
  return shapes.astype(out, int) if ndigits is None else out


def _bits(dtype) -> int:
  return (dtypes.iinfo(dtype).bits if dtype in dtypes.narrow_int_dtypes
          else 8 * np.dtype(dtype).itemsize)


def _view(x, dtype=None, type=None):
  """The bits of ``x`` read as ``dtype`` (NumPy's ``ndarray.view``): a different item size
  changes the size of the last axis. Views to bool are defined only for 0/1 bytes."""
  if type is not None:
    raise NotImplementedError("Array.view: the `type` argument is not supported")
  if dtype is None:
    return x
  dtype = dtypes.check_user_dtype(dtype, "view")
  src = x.aval.dtype
  nbits_in, nbits_out = _bits(src), _bits(dtype)
  if x.ndim == 0:
    if nbits_in != nbits_out:
      raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged, "
                       f"got {src.name} -> {dtype.name}")
    return shapes.squeeze(_view(shapes.expand_dims(x, 0), dtype), 0)
  if (x.shape[-1] * nbits_in) % nbits_out != 0:
    raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                     f"total size in bytes of the last axis of the array (view of shape "
                     f"{x.shape} from {src.name} to {dtype.name}).")
  if src == dtype:
    return x
  # bitcast_convert_type knows neither bool nor complex: go through uint8 / the real type.
  if src == np.bool_:
    return _view(lax.convert_element_type(x, np.uint8), dtype)
  if dtypes.is_complex(src):
    real = ufuncs.real(x)
    parts = shapes.stack([real, ufuncs.imag(x)], axis=-1)
    return _view(shapes.reshape(parts, x.shape[:-1] + (2 * x.shape[-1],)), dtype)
  if dtype == np.bool_:
    return lax.convert_element_type(_view(x, np.uint8), np.bool_)
  if dtypes.is_complex(dtype):
    parts = _view(x, np.finfo(dtype).dtype)
    parts = shapes.reshape(parts, parts.shape[:-1] + (parts.shape[-1] // 2, 2))
    return lax.complex(parts[..., 0], parts[..., 1])
  if nbits_in < nbits_out:
    factor = nbits_out // nbits_in
    grouped = shapes.reshape(x, x.shape[:-1] + (x.shape[-1] // factor, factor))
    return lax.bitcast_convert_type(grouped, dtype)
  out = lax.bitcast_convert_type(x, dtype)
  if nbits_in > nbits_out:
    out = shapes.reshape(out, out.shape[:-2] + (out.shape[-2] * out.shape[-1],))
  return out


def _byteswap(x, inplace=False):
  """``x`` with the bytes of each element reversed (same dtype)."""
  if inplace:
    raise ValueError("Array.byteswap: inplace=True is not supported (arrays are immutable)")
  dtype = x.aval.dtype
  if dtypes.is_complex(dtype):
    return lax.complex(_byteswap(ufuncs.real(x)), _byteswap(ufuncs.imag(x)))
  if dtype.itemsize == 1:
    return creation.copy(x)
  as_bytes = lax.bitcast_convert_type(x, np.uint8)
  return lax.bitcast_convert_type(lax.rev(as_bytes, (x.ndim,)), dtype)


def _host_value(x, method):
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"The {method}() method was called on traced array with shape "
          f"{x.aval.str_short()}; it needs the array's value on the host")
    return np.asarray(value)
  return np.asarray(x)


def _tobytes(x, order="C"):
  """The array's raw bytes (NumPy's ``ndarray.tobytes``)."""
  return _host_value(x, "tobytes").tobytes(order)


def _tolist(x):
  """The array's values as nested Python lists of Python scalars."""
  return _host_value(x, "tolist").tolist()


def _at_property(x):
  if type(x.aval) is AbstractRef:  # a traced reference: ``x.at[idx]`` is a view of it
    return ref_view.ref_at(x)
  return indexing._IndexUpdateHelper(x)


# What a traced reference offers beyond indexing, as the eager ``Ref`` box does.
_REF_METHODS = {
    "get": lambda r: lambda idx=(): state.get(r, idx),
    "set": lambda r: lambda value, idx=(): state.set(r, idx, value),
    "swap": lambda r: lambda value, idx=(): state.swap(r, idx, value),
    "addupdate": lambda r: lambda value, idx=(): state.addupdate(r, idx, value),
    "freeze": lambda r: lambda: state.freeze(r),
}


def _tracer_getattr(x, name):
  # Only reached when ordinary lookup fails (a missing ``aval`` fails here too: no loop).
  if name in _REF_METHODS:
    if type(getattr(x, "aval", None)) is AbstractRef:
      return _REF_METHODS[name](x)
  for klass in type(x).__mro__:  # a property that refused (``sharding``): its own error
    attr = vars(klass).get(name)
    if isinstance(attr, property):
      return attr.__get__(x, type(x))
  raise AttributeError(f"{type(x).__name__!r} object has no attribute {name!r}")


def install():
  for cls in (Array, Tracer):
    for name, fn in {**_operators(), **_methods()}.items():
      setattr(cls, name, fn)
  # copy.copy / copy.deepcopy of an Array give a new buffer, as JAX's (one of them may be
  # deleted or donated while the other lives on); tracers are values and stay themselves.
  Array.__copy__ = creation.copy
  Array.__deepcopy__ = lambda x, memo: creation.copy(x)
  # Arrays and tracers are unhashable even though they define __eq__.
  Array.__hash__ = Array.__dict__.get("__hash__") or _unhashable
  Tracer.__hash__ = _unhashable
  # A tracer that stands for an array reference is indexed by reading and writing it.
  Tracer.__getitem__ = _ref_aware(Tracer.__getitem__, state.get)
  Tracer.__setitem__ = _ref_aware(Tracer.__setitem__, state.set)
  state.set_device_value(conversion.asarray)
  if "__getattr__" not in Tracer.__dict__:
    Tracer.__getattr__ = _tracer_getattr


def _ref_aware(array_op, ref_op):
  def op(x, *args):
    if type(x.aval) is AbstractRef:
      return ref_op(x, *args)
    return array_op(x, *args)
  op.__name__ = array_op.__name__
  return op


def _unhashable(self):
  raise TypeError(f"unhashable type: {type(self).__name__}")
