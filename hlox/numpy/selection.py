"""Picking and placing entries by condition or index: ``select``, ``choose``,
``compress``, ``extract``, ``delete`` and ``put`` (``put`` returns a new array: Arrays are
immutable).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.numpy import creation, indexing, searching, shapes, ufuncs, util

__all__ = ["select", "compress", "extract", "delete", "choose", "put", "place"]


def select(condlist, choicelist, default=0):
  """The entries of ``choicelist`` chosen by the first true entry of ``condlist``."""
  if len(condlist) != len(choicelist):
    raise ValueError("condlist must have length equal to choicelist ({} vs {})".format(
        len(condlist), len(choicelist)))
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  for c in condlist:
    if get_aval(creation.asarray(c)).dtype != np.bool_:
      raise ValueError("condlist must be a list of boolean arrays")
  util.check_arraylike("select", *condlist, *choicelist, default)
  result = default
  for cond, choice in zip(reversed(condlist), reversed(choicelist)):
    result = ufuncs.where(cond, choice, result)
  shape = util.broadcast_shapes(*[get_aval(creation.asarray(x)).shape
                                  for x in (*condlist, *choicelist, default)])
  return shapes.broadcast_to(result, shape)


def choose(a, choices, out=None, mode="raise"):
  """``choices[a[i]][i]`` for each position ``i`` (broadcasting ``a`` and the choices)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  util.check_arraylike("choose", a, *choices)
  a = creation.asarray(a)
  if not dtypes.is_int(get_aval(a).dtype):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  if mode == "raise":
    value = util.concrete_value("choose (mode='raise')", a)
    if np.any((value < 0) | (value >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = a % n
  elif mode == "clip":
    a = ufuncs.clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  choices = util.promote_dtypes(*[creation.asarray(c) for c in choices])
  stacked = shapes.stack(shapes.broadcast_arrays(a, *choices)[1:], axis=0)
  a = shapes.broadcast_to(a, get_aval(stacked).shape[1:])
  return indexing.take_along_axis(stacked, a[None], axis=0)[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of ``a`` along ``axis`` where ``condition`` is true."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  util.check_arraylike("compress", condition, a)
  condition = creation.asarray(condition)
  if get_aval(condition).ndim != 1:
    raise ValueError("condition must be a 1D array")
  a = creation.asarray(a)
  if axis is None:
    axis = 0
    a = shapes.ravel(a)
  else:
    a = shapes.moveaxis(a, axis, 0)
  n = get_aval(a).shape[0]
  c = get_aval(condition).shape[0]
  if c > n:
    extra = util.concrete_value("compress", condition)[n:] if size is None else None
    if extra is not None and np.any(extra):
      raise ValueError("compress: condition has True entries beyond the array's length")
    condition = condition[:n]
  elif c < n:
    a = a[:c]
  if size is None:
    idx = searching.nonzero(condition)[0]
    result = a[idx]
  else:
    idx, = searching.nonzero(condition, size=size, fill_value=get_aval(condition).shape[0])
    valid = idx < get_aval(condition).shape[0]
    result = indexing.take(a, ufuncs.minimum(idx, builtins.max(get_aval(a).shape[0] - 1, 0)),
                           axis=0)
    valid = shapes.reshape(valid, (-1,) + (1,) * (get_aval(result).ndim - 1))
    result = ufuncs.where(valid, result,
                          creation.asarray(fill_value, dtype=get_aval(result).dtype))
  return shapes.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
  """The entries of ``ravel(arr)`` where ``ravel(condition)`` is non-zero."""
  util.check_arraylike("extract", condition, arr)
  return compress(shapes.ravel(condition) != 0, shapes.ravel(arr), size=size,
                  fill_value=fill_value)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """``arr`` without the entries (or slices along ``axis``) selected by ``obj``."""
  util.check_arraylike("delete", arr)
  a = creation.asarray(arr)
  if axis is None:
    a = shapes.ravel(a)
    axis = 0
  nd = get_aval(a).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "delete")[0]
  n = get_aval(a).shape[axis]
  obj = util.from_jax_array(obj)
  if isinstance(obj, slice):
    keep = np.ones(n, bool)
    keep[obj] = False
  elif assume_unique_indices and _traced(obj):
    return _delete_unique_traced(a, obj, axis, n)
  else:
    idx = util.concrete_value("delete", obj)
    if idx.dtype == np.bool_:
      if idx.shape != (n,):
        raise ValueError("np.delete(arr, obj): for boolean indices, obj must be one-dimensional"
                         " with length matching specified axis.")
      keep = ~idx
    else:
      if not np.issubdtype(idx.dtype, np.integer) and idx.size:
        raise ValueError("np.delete(arr, obj): index must be an integer or a boolean array")
      idx = np.atleast_1d(idx).astype(np.int64)
      if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
      keep = np.ones(n, bool)
      keep[idx] = False
  return indexing.take(a, creation.asarray(np.nonzero(keep)[0].astype(np.int32)), axis=axis)


def _traced(x) -> bool:
  return isinstance(x, Tracer) and x.to_concrete_value() is None


def _delete_unique_traced(a, obj, axis, n):
  """``delete`` of run-time integer indices, promised unique (and in bounds): the result
  has the static length ``n - obj.size``; the kept positions come from a mask."""
  idx = shapes.ravel(obj)
  if not dtypes.is_int(get_aval(idx).dtype):
    raise ValueError("np.delete(arr, obj): index must be an integer or a boolean array")
  count = get_aval(idx).shape[0]
  if count > n:
    raise ValueError(f"delete: {count} unique indices cannot be deleted from an axis of size "
                     f"{n}")
  idx = ufuncs.where(idx < 0, idx + n, idx)
  keep = creation.ones(n, bool).at[idx].set(False, mode="drop")
  positions = searching.nonzero(keep, size=n - count, fill_value=0)[0]
  return indexing.take(a, positions, axis=axis, mode="clip")


def put(a, ind, v, mode=None, *, inplace=True):
  """``a`` with the flat positions ``ind`` set to ``v`` (``inplace=False`` is required)."""
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("put", a, ind, v)
  a = creation.asarray(a)
  ind = shapes.ravel(creation.asarray(ind))
  v = shapes.ravel(creation.asarray(v))
  if get_aval(ind).shape[0] == 0 or get_aval(v).shape[0] == 0:
    return a
  if get_aval(v).shape[0] != get_aval(ind).shape[0]:
    v = shapes.resize(v, get_aval(ind).shape)
  size = math.prod(get_aval(a).shape)
  if mode is None or mode == "fill":
    scatter_mode = "drop"
  elif mode == "clip":
    ind, scatter_mode = ufuncs.clip(ind, 0, size - 1), "promise_in_bounds"
  elif mode == "wrap":
    ind, scatter_mode = ind % size, "promise_in_bounds"
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  flat = shapes.ravel(a).at[ind].set(v.astype(get_aval(a).dtype), mode=scatter_mode)
  return shapes.reshape(flat, get_aval(a).shape)


def place(arr, mask, vals, *, inplace=True):
  """A copy of ``arr`` with the entries where ``mask`` is true replaced, in order, by the
  entries of ``vals`` (repeated when too few, cut when too many). NumPy's ``place`` writes
  into ``arr``; hlox arrays are immutable, so (as in JAX) ``inplace=False`` is required."""
  util.check_arraylike("place", arr, mask, vals)
  if inplace:
    raise ValueError("hlox.numpy.place cannot modify arrays in place, because hlox arrays "
                     "are immutable; pass inplace=False to get the updated array back.")
  data, mask, vals = (creation.asarray(a) for a in (arr, mask, vals))
  vals = shapes.ravel(vals)
  size = math.prod(get_aval(data).shape)
  if math.prod(get_aval(mask).shape) != size:
    raise ValueError(f"place: arr and mask must be the same size, got shapes "
                     f"{get_aval(data).shape} and {get_aval(mask).shape}")
  if not get_aval(vals).shape[0]:
    raise ValueError("place: cannot place values from an empty array")
  if not size:
    return data
  # Masked positions first, then out-of-range fillers whose updates are dropped.
  idx, = searching.nonzero(shapes.ravel(mask), size=size, fill_value=size)
  vals = shapes.resize(vals, (size,))
  out = shapes.ravel(data).at[idx].set(vals, mode="drop")
  return shapes.reshape(out, get_aval(data).shape)
