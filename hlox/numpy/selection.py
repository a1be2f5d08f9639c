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
  """Pick each entry from the first choice whose condition holds there.

  Args:
    condlist: a non-empty sequence of boolean array-likes.
    choicelist: a sequence of array-likes, as many as ``condlist``.
    default: the value where no condition holds.

  Returns:
    An array of the broadcast shape of all inputs and the promoted dtype of the choices and
    ``default``.

  Examples:
    >>> x = jnp.arange(6)
    >>> jnp.select([x < 2, x > 3], [x, 10 * x], default=-1)
    Array([ 0,  1, -1, -1, 40, 50], dtype=int32)
  """
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
  """Build an array from ``choices``: the entry at each position comes from ``choices[a]``.

  ``a`` and the choices broadcast together; the result at position ``i`` is
  ``choices[a[i]][i]``.

  Args:
    a: integer array-like of indices into ``choices``.
    choices: a sequence of array-likes.
    out: unsupported (raises ``NotImplementedError``).
    mode: 'raise' (the default: out-of-range indices raise ``ValueError``, which needs a
      concrete ``a``), 'wrap' (indices taken modulo ``len(choices)``) or 'clip' (clamped).

  Returns:
    An array of the broadcast shape and the choices' promoted dtype.

  Examples:
    >>> choices = [jnp.array([0, 1, 2]), jnp.array([10, 11, 12])]
    >>> jnp.choose(jnp.array([1, 0, 1]), choices)
    Array([10,  1, 12], dtype=int32)
    >>> jnp.choose(jnp.array([2, -1, 0]), choices, mode='clip')
    Array([10,  1,  2], dtype=int32)
  """
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
  """The slices of ``a`` along an axis where ``condition`` is true.

  The result's length depends on ``condition``'s values, so it must be concrete unless
  ``size`` is given.

  Args:
    condition: a 1-d boolean array-like (a shorter one selects from the leading slices only).
    a: array-like input.
    axis: the axis to select along; None flattens ``a`` first.
    size: keyword-only static length of the result along ``axis``: the selection is cut or
      padded with ``fill_value``.
    fill_value: keyword-only padding value used with ``size``.
    out: unsupported (raises ``NotImplementedError``).

  Returns:
    An array of ``a``'s dtype with the selected slices along ``axis``.

  Examples:
    >>> x = jnp.array([[1, 2], [3, 4], [5, 6]])
    >>> jnp.compress(jnp.array([True, False, True]), x, axis=0)
    Array([[1, 2],
           [5, 6]], dtype=int32)
    >>> jnp.compress(jnp.array([False, True]), x, axis=1, size=1)
    Array([[2],
           [4],
           [6]], dtype=int32)
  """
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
  """The entries of ``ravel(arr)`` where ``ravel(condition)`` is non-zero.

  Args:
    condition: array-like of ``arr``'s size (concrete unless ``size`` is given).
    arr: array-like input.
    size: keyword-only static length of the result (cut or padded with ``fill_value``).
    fill_value: keyword-only padding value used with ``size``.

  Returns:
    A 1-d array of ``arr``'s dtype.

  Examples:
    >>> x = jnp.array([[1, 2], [3, 4]])
    >>> jnp.extract(x % 2 == 0, x)
    Array([2, 4], dtype=int32)
    >>> jnp.extract(x > 1, x, size=4, fill_value=-1)
    Array([ 2,  3,  4, -1], dtype=int32)
  """
  util.check_arraylike("extract", condition, arr)
  return compress(shapes.ravel(condition) != 0, shapes.ravel(arr), size=size,
                  fill_value=fill_value)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """``arr`` without the entries (or slices along ``axis``) selected by ``obj``.

  Args:
    arr: array-like input.
    obj: an int, slice, sequence of ints, or boolean mask of the axis' length: what to
      remove. It must be concrete, unless ``assume_unique_indices`` is True.
    axis: the axis to delete along; None flattens ``arr`` first.
    assume_unique_indices: keyword-only; promise that integer ``obj`` entries are unique and
      in range, which lets a traced ``obj`` be used under ``jit``.

  Returns:
    An array of ``arr``'s dtype, shorter along ``axis``.

  Examples:
    >>> x = jnp.array([10, 11, 12, 13])
    >>> jnp.delete(x, 1)
    Array([10, 12, 13], dtype=int32)
    >>> jnp.delete(x, jnp.array([0, 2]), assume_unique_indices=True)
    Array([11, 13], dtype=int32)
    >>> jnp.delete(jnp.array([[1, 2], [3, 4]]), 0, axis=1)
    Array([[2],
           [4]], dtype=int32)
  """
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
  """``a`` with the entries at flat positions ``ind`` replaced by ``v``.

  NumPy's ``put`` writes into ``a``; hlox arrays are immutable, so ``inplace=False`` is
  required (the default raises ``ValueError``) and a new array is returned.

  Args:
    a: array-like input.
    ind: integer array-like of flat indices.
    v: values to write, repeated or cut to ``ind``'s size and cast to ``a``'s dtype.
    mode: None or 'fill' (out-of-range indices are dropped), 'clip' (clamped) or 'wrap'
      (taken modulo ``a.size``).
    inplace: keyword-only; must be False.

  Returns:
    An array of ``a``'s shape and dtype.

  Examples:
    >>> jnp.put(jnp.zeros(4, int), jnp.array([0, 2]), jnp.array([5, 6]), inplace=False)
    Array([5, 0, 6, 0], dtype=int32)
    >>> jnp.put(jnp.zeros(4, int), 5, 1, mode='wrap', inplace=False)
    Array([0, 1, 0, 0], dtype=int32)
  """
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
  """``arr`` with the entries where ``mask`` is true replaced, in order, by ``vals``.

  ``vals`` is repeated when too short and cut when too long. NumPy's ``place`` writes into
  ``arr``; hlox arrays are immutable, so ``inplace=False`` is required (the default raises
  ``ValueError``).

  Args:
    arr: array-like input.
    mask: boolean array-like of ``arr``'s size.
    vals: 1-d array-like of replacement values.
    inplace: keyword-only; must be False.

  Returns:
    An array of ``arr``'s shape and dtype.

  Examples:
    >>> x = jnp.array([1, 2, 3, 4])
    >>> jnp.place(x, x > 1, jnp.array([0, 9]), inplace=False)
    Array([1, 0, 9, 0], dtype=int32)
  """
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
