"""Set operations on arrays: ``isin``, ``union1d``, ``intersect1d``, ``setdiff1d``,
``setxor1d`` and the array-API ``unique_*`` functions (built on ``sorting.unique``).

Results whose length depends on the values need concrete inputs unless ``size=`` is given.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, shapes, sorting, ufuncs, util

__all__ = ["isin", "union1d", "intersect1d", "setdiff1d", "setxor1d", "unique_values",
           "unique_counts", "unique_inverse", "unique_all"]


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each entry of ``element`` occurs in ``test_elements``.

  Works under ``jit`` (every entry is compared with every test element).

  Args:
    element: array-like input.
    test_elements: array-like of values to look for (flattened).
    assume_unique: accepted for NumPy compatibility; it does not change the result.
    invert: if True, return whether each entry does *not* occur.
    method: keyword-only; accepted for compatibility (all methods compare directly).

  Returns:
    A boolean array of ``element``'s shape.

  Examples:
    >>> jnp.isin(jnp.array([1, 2, 3, 4]), jnp.array([2, 4, 6]))
    Array([False,  True, False,  True], dtype=bool)
    >>> jnp.isin(jnp.array([[1, 2]]), 2, invert=True)
    Array([[ True, False]], dtype=bool)
  """
  util.check_arraylike("isin", element, test_elements)
  element, test = creation.asarray(element), shapes.ravel(creation.asarray(test_elements))
  result = reductions.any(shapes.expand_dims(element, -1) == test, axis=-1)
  return ufuncs.logical_not(result) if invert else result


def unique_values(x, *, size=None, fill_value=None):
  """The sorted unique values of ``x``.

  The array API's form of :func:`hlox.numpy.unique` (NaNs count as one value).

  Args:
    x: array-like input (flattened).
    size: keyword-only static number of unique values to return (padded or cut); without it
      ``x`` must be concrete.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest value).

  Returns:
    A 1-d array of ``x``'s dtype.

  Examples:
    >>> jnp.unique_values(jnp.array([3, 1, 3, 2]))
    Array([1, 2, 3], dtype=int32)
  """
  return sorting.unique(x, size=size, fill_value=fill_value)


def unique_counts(x, *, size=None, fill_value=None):
  """The unique values of ``x`` and how often each occurs.

  The array API's form of :func:`hlox.numpy.unique` (NaNs count as one value).

  Args:
    x: array-like input (flattened).
    size: keyword-only static number of unique values to return (padded or cut); without it
      ``x`` must be concrete.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest value).

  Returns:
    A named tuple ``(values, counts)``: 1-d arrays of ``x``'s dtype and of the default
    integer dtype.

  Examples:
    >>> values, counts = jnp.unique_counts(jnp.array([3, 1, 3, 2]))
    >>> values, counts
    (Array([1, 2, 3], dtype=int32), Array([1, 1, 2], dtype=int32))
  """
  values, counts = sorting.unique(x, return_counts=True, size=size, fill_value=fill_value)
  return _UniqueCountsResult(values, counts)


def unique_inverse(x, *, size=None, fill_value=None):
  """The unique values of ``x`` and the indices that rebuild ``x`` from them.

  The array API's form of :func:`hlox.numpy.unique` (NaNs count as one value).

  Args:
    x: array-like input (flattened).
    size: keyword-only static number of unique values to return (padded or cut); without it
      ``x`` must be concrete.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest value).

  Returns:
    A named tuple ``(values, inverse_indices)``: the 1-d values, and indices of ``x``'s
    shape such that ``values[inverse_indices]`` equals ``x``.

  Examples:
    >>> r = jnp.unique_inverse(jnp.array([3, 1, 3, 2]))
    >>> r.values, r.inverse_indices
    (Array([1, 2, 3], dtype=int32), Array([2, 0, 2, 1], dtype=int32))
  """
  values, inverse = sorting.unique(x, return_inverse=True, size=size, fill_value=fill_value)
  return _UniqueInverseResult(values, shapes.reshape(inverse, get_aval(creation.asarray(x)).shape))


def unique_all(x, *, size=None, fill_value=None):
  """The unique values of ``x`` with their first indices, inverse indices and counts.

  The array API's form of :func:`hlox.numpy.unique` (NaNs count as one value).

  Args:
    x: array-like input (flattened).
    size: keyword-only static number of unique values to return (padded or cut); without it
      ``x`` must be concrete.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest value).

  Returns:
    A named tuple ``(values, indices, inverse_indices, counts)``; ``inverse_indices`` has
    ``x``'s shape.

  Examples:
    >>> r = jnp.unique_all(jnp.array([3, 1, 3, 2]))
    >>> r.values, r.indices, r.counts
    (Array([1, 2, 3], dtype=int32), Array([1, 3, 0], dtype=int32), Array([1, 1, 2], dtype=int32))
  """
  values, index, inverse, counts = sorting.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True, size=size,
                                              fill_value=fill_value)
  return _UniqueAllResult(values, index, shapes.reshape(inverse, get_aval(creation.asarray(x)).shape),
                    counts)


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values found in either array.

  Args:
    ar1: array-like input (flattened).
    ar2: array-like input (flattened).
    size: keyword-only static length of the result: it is padded with ``fill_value`` or cut.
      Without it the inputs must be concrete (the length depends on the values); with it the
      function works under ``jit``.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest value).

  Returns:
    A 1-d array of the inputs' promoted dtype.

  Examples:
    >>> jnp.union1d(jnp.array([3, 1, 3]), jnp.array([2, 1]))
    Array([1, 2, 3], dtype=int32)
    >>> jnp.union1d(jnp.array([3, 1]), jnp.array([2, 1]), size=5, fill_value=0)
    Array([1, 2, 3, 0, 0], dtype=int32)
  """
  util.check_arraylike("union1d", ar1, ar2)
  return sorting.unique(shapes.concatenate([shapes.ravel(ar1), shapes.ravel(ar2)]), size=size,
                    fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted unique values found in both arrays.

  Args:
    ar1: array-like input (flattened).
    ar2: array-like input (flattened).
    assume_unique: promise that each input has no repeated values (faster).
    return_indices: also return where each common value first occurs in ``ar1`` and ``ar2``.
    size: keyword-only static length of the result: it is padded with ``fill_value`` or cut.
      Without it the inputs must be concrete (the length depends on the values); with it the
      function works under ``jit``.
    fill_value: keyword-only padding value used with ``size`` (default: the smallest common
      value); padded indices are the arrays' sizes.

  Returns:
    A 1-d array of the inputs' promoted dtype; with ``return_indices``, a tuple
    ``(values, indices_in_ar1, indices_in_ar2)``.

  Examples:
    >>> a, b = jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2, 1])
    >>> jnp.intersect1d(a, b)
    Array([1, 3], dtype=int32)
    >>> jnp.intersect1d(a, b, return_indices=True)
    (Array([1, 3], dtype=int32), Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
  """
  util.check_arraylike("intersect1d", ar1, ar2)
  a, b = (shapes.ravel(x) for x in util.promote_dtypes(creation.asarray(ar1),
                                                      creation.asarray(ar2)))
  if size is not None:
    return _intersect1d_sized(a, b, assume_unique, return_indices, operator.index(size),
                              fill_value)
  a_np, b_np = util.concrete_value("intersect1d", a), util.concrete_value("intersect1d", b)
  res = np.intersect1d(a_np, b_np, assume_unique=assume_unique, return_indices=True)
  if not return_indices:
    return creation.asarray(res[0].astype(get_aval(a).dtype))
  return (creation.asarray(res[0].astype(get_aval(a).dtype)),
          *(creation.asarray(i.astype(util.index_dtype())) for i in res[1:]))


def _unique_1d(x, assume_unique):
  """``(values, positions, valid)``: the distinct entries of 1-d ``x`` sorted to the front
  (static length ``x.size``), where each first occurs in ``x``, and which entries are real
  rather than padding."""
  n = get_aval(x).shape[0]
  if assume_unique:
    values, pos = lax.sort((x, lax.iota(util.index_dtype(), n)), num_keys=1)
    return values, pos, creation.ones((n,), bool)
  values, pos, counts = sorting.unique(x, return_index=True, return_counts=True, size=n,
                                       fill_value=0 if n == 0 else None)
  return values, pos, counts > 0


def _first_true(mask, size):
  """Positions of the first ``size`` True entries of 1-d ``mask`` (clipped into range) and
  which of them are real."""
  n = get_aval(mask).shape[0]
  pos, valid = ufuncs._nonzero_flat_positions(mask, size)
  return ufuncs.minimum(pos, max(n - 1, 0)), valid


def _fill_padding(values, valid, fill_value):
  # JAX's default padding is the smallest result (the first, results being sorted), or 0.
  if fill_value is None:
    first = values[0] if get_aval(values).shape[0] else 0
    fill_value = ufuncs.where(valid[0], first, 0) if get_aval(valid).shape[0] else 0
  return ufuncs.where(valid, values, creation.asarray(fill_value, get_aval(values).dtype))


def _intersect1d_sized(a, b, assume_unique, return_indices, size, fill_value):
  n1, n2 = get_aval(a).shape[0], get_aval(b).shape[0]
  idx = util.index_dtype()
  if n1 == 0 or n2 == 0:
    vals = creation.full((size,), 0 if fill_value is None else fill_value, get_aval(a).dtype)
    if not return_indices:
      return vals
    return vals, creation.full((size,), n1, idx), creation.full((size,), n2, idx)
  ua, ia, va = _unique_1d(a, assume_unique)
  ub, ib, vb = _unique_1d(b, assume_unique)
  equal = (ua[:, None] == ub[None, :]) & va[:, None] & vb[None, :]
  pos, valid = _first_true(reductions.any(equal, axis=1), size)
  vals = _fill_padding(ua[pos], valid, fill_value)
  if not return_indices:
    return vals
  in_b = reductions.argmax(equal, axis=1)[pos]
  return (vals, ufuncs.where(valid, ia[pos], n1).astype(idx),
          ufuncs.where(valid, ib[in_b], n2).astype(idx))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values of ``ar1`` that are not in ``ar2``.

  Args:
    ar1: array-like input (flattened).
    ar2: array-like of values to leave out (flattened).
    assume_unique: promise that ``ar1`` has no repeated values.
    size: keyword-only static length of the result: it is padded with ``fill_value`` or cut.
      Without it the inputs must be concrete (the length depends on the values); with it the
      function works under ``jit``.
    fill_value: keyword-only padding value used with ``size`` (default 0).

  Returns:
    A 1-d array of ``ar1``'s dtype.

  Examples:
    >>> jnp.setdiff1d(jnp.array([5, 1, 3, 1]), jnp.array([3]))
    Array([1, 5], dtype=int32)
    >>> jnp.setdiff1d(jnp.array([5, 1, 3]), jnp.array([3]), size=3, fill_value=-1)
    Array([ 1,  5, -1], dtype=int32)
  """
  util.check_arraylike("setdiff1d", ar1, ar2)
  a, b = shapes.ravel(creation.asarray(ar1)), shapes.ravel(creation.asarray(ar2))
  dtype = get_aval(a).dtype
  fill = 0 if fill_value is None else fill_value
  if size is not None:
    size = operator.index(size)
    if get_aval(a).shape[0] == 0:
      return creation.full((size,), fill, dtype)
    if assume_unique:  # NumPy keeps ar1's order when told its values are unique
      ua, va = a, creation.ones(get_aval(a).shape, bool)
    else:
      ua, _, va = _unique_1d(a, False)
    keep = va & ~_isin_1d(ua, b)
    pos, valid = _first_true(keep, size)
    return ufuncs.where(valid, ua[pos], creation.asarray(fill, dtype))
  a_np, b_np = util.concrete_value("setdiff1d", a), util.concrete_value("setdiff1d", b)
  return creation.asarray(np.setdiff1d(a_np, b_np, assume_unique=assume_unique).astype(dtype))


def _isin_1d(x, test):
  """Whether each entry of 1-d ``x`` occurs in 1-d ``test`` (False when ``test`` is empty)."""
  if get_aval(test).shape[0] == 0:
    return creation.zeros(get_aval(x).shape, bool)
  return reductions.any(x[:, None] == test[None, :], axis=1)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values that occur in exactly one of the arrays.

  Args:
    ar1: array-like input (flattened).
    ar2: array-like input (flattened).
    assume_unique: promise that each input has no repeated values.
    size: keyword-only static length of the result: it is padded with ``fill_value`` or cut.
      Without it the inputs must be concrete (the length depends on the values); with it the
      function works under ``jit``.
    fill_value: keyword-only padding value used with ``size``.

  Returns:
    A 1-d array of the inputs' promoted dtype.

  Examples:
    >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
    Array([1, 4], dtype=int32)
  """
  util.check_arraylike("setxor1d", ar1, ar2)
  ar1, ar2 = util.from_jax_array(ar1), util.from_jax_array(ar2)
  a, b = util.concrete_value("setxor1d", ar1), util.concrete_value("setxor1d", ar2)
  return _finish_set_op(np.setxor1d(a, b, assume_unique=assume_unique), size, fill_value,
                        dtypes.result_type(ar1, ar2))


def _pad_to(values, size, fill_value):
  if size is None:
    return values
  if len(values) >= size:
    return values[:size]
  if fill_value is None:
    fill_value = values[0] if len(values) else 0
  return np.concatenate([values, np.full(size - len(values), fill_value, values.dtype)])


def _finish_set_op(res, size, fill_value, dtype):
  if isinstance(res, tuple):
    values, i1, i2 = res
    return (creation.asarray(_pad_to(values, size, fill_value).astype(dtype)),
            creation.asarray(_pad_to(i1, size, 0).astype(util.index_dtype())),
            creation.asarray(_pad_to(i2, size, 0).astype(util.index_dtype())))
  return creation.asarray(_pad_to(res, size, fill_value).astype(dtype))
