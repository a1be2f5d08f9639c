"""Set operations on arrays: ``isin``, ``union1d``, ``intersect1d``, ``setdiff1d``,
``setxor1d`` and the array-API ``unique_*`` functions (built on ``sorting.unique``).

Results whose length depends on the values need concrete inputs unless ``size=`` is given.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, shapes, sorting, ufuncs, util

__all__ = ["isin", "union1d", "intersect1d", "setdiff1d", "setxor1d", "unique_values",
           "unique_counts", "unique_inverse", "unique_all"]


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each entry of ``element`` is in ``test_elements`` (elementwise, shape of
  ``element``)."""
  util.check_arraylike("isin", element, test_elements)
  element, test = creation.asarray(element), shapes.ravel(creation.asarray(test_elements))
  result = reductions.any(shapes.expand_dims(element, -1) == test, axis=-1)
  return ufuncs.logical_not(result) if invert else result


def unique_values(x, *, size=None, fill_value=None):
  """The sorted unique values of ``x`` (array API)."""
  return sorting.unique(x, size=size, fill_value=fill_value)


def unique_counts(x, *, size=None, fill_value=None):
  """``(values, counts)`` of the unique values of ``x`` (array API)."""
  values, counts = sorting.unique(x, return_counts=True, size=size, fill_value=fill_value)
  return _UniqueCounts(values, counts)


def unique_inverse(x, *, size=None, fill_value=None):
  """``(values, inverse_indices)``; the inverse has ``x``'s shape (array API)."""
  values, inverse = sorting.unique(x, return_inverse=True, size=size, fill_value=fill_value)
  return _UniqueInverse(values, shapes.reshape(inverse, get_aval(creation.asarray(x)).shape))


def unique_all(x, *, size=None, fill_value=None):
  """``(values, indices, inverse_indices, counts)`` of the unique values (array API)."""
  values, index, inverse, counts = sorting.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True, size=size,
                                              fill_value=fill_value)
  return _UniqueAll(values, index, shapes.reshape(inverse, get_aval(creation.asarray(x)).shape),
                    counts)


class _UniqueCounts(NamedTuple):
  values: object
  counts: object


class _UniqueInverse(NamedTuple):
  values: object
  inverse_indices: object


class _UniqueAll(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values in either array."""
  util.check_arraylike("union1d", ar1, ar2)
  return sorting.unique(shapes.concatenate([shapes.ravel(ar1), shapes.ravel(ar2)]), size=size,
                    fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted unique values in both arrays (computed on concrete values)."""
  util.check_arraylike("intersect1d", ar1, ar2)
  ar1, ar2 = util.from_jax_array(ar1), util.from_jax_array(ar2)
  a, b = util.concrete_value("intersect1d", ar1), util.concrete_value("intersect1d", ar2)
  res = np.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
  return _finish_set_op(res if return_indices else res[0], size, fill_value,
                        dtypes.result_type(ar1, ar2))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values of ``ar1`` that are not in ``ar2``."""
  util.check_arraylike("setdiff1d", ar1, ar2)
  ar1, ar2 = util.from_jax_array(ar1), util.from_jax_array(ar2)
  a, b = util.concrete_value("setdiff1d", ar1), util.concrete_value("setdiff1d", ar2)
  return _finish_set_op(np.setdiff1d(a, b, assume_unique=assume_unique), size,
                        0 if fill_value is None else fill_value,
                        get_aval(creation.asarray(ar1)).dtype)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values in exactly one of the arrays."""
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
