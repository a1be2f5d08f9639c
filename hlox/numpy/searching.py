"""Finding entries: ``nonzero``, ``flatnonzero``, ``argwhere`` (indices of the non-zero
entries; ``size=`` makes them work on traced values), and ``searchsorted``, ``digitize``
(insertion points into sorted arrays, NaNs sorting last as in NumPy).
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, indexing, reductions, shapes, ufuncs, util
from hlox.runtime.array import device_put

__all__ = ["nonzero", "flatnonzero", "argwhere", "searchsorted", "digitize"]


def nonzero(a, *, size=None, fill_value=None):
  """The indices of the non-zero entries of ``a``, one array per dimension.

  Args:
    a: array-like input of at least one dimension (a scalar raises ``ValueError``).
    size: keyword-only static number of non-zero entries to return: the result is cut or
      padded (with ``fill_value``) to it. Without it ``a`` must be concrete, since the result's
      length depends on its values; with it the function works under ``jit``.
    fill_value: keyword-only padding index (default 0), used with ``size`` only; a scalar or
      one value per dimension.

  Returns:
    A tuple of ``a.ndim`` 1-d integer arrays, such that ``a[result]`` are the non-zero
    entries in row-major order.

  Examples:
    >>> x = jnp.array([[0, 3], [4, 0]])
    >>> jnp.nonzero(x)
    (Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    >>> jnp.nonzero(jnp.array([0, 5, 0, 7]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
  """
  util.check_arraylike("nonzero", a)
  if size is None:
    value = util.concrete_value("nonzero", a)
    if value.ndim == 0:
      raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(x) "
                       "instead.")
    if fill_value is not None:
      raise ValueError("nonzero: fill_value requires size to be specified")
    return tuple(device_put(i.astype(util.index_dtype())) for i in np.nonzero(value))
  return ufuncs._nonzero_sized(a, size, fill_value)


def flatnonzero(a, *, size=None, fill_value=None):
  """The indices of the non-zero entries of ``ravel(a)``.

  Args:
    a: array-like input.
    size: keyword-only static number of non-zero entries to return: the result is cut or
      padded (with ``fill_value``) to it. Without it ``a`` must be concrete, since the result's
      length depends on its values; with it the function works under ``jit``.
    fill_value: keyword-only padding index (default 0), used with ``size`` only.

  Returns:
    A 1-d integer array.

  Examples:
    >>> jnp.flatnonzero(jnp.array([[0, 3], [4, 0]]))
    Array([1, 2], dtype=int32)
  """
  util.check_arraylike("flatnonzero", a)
  return nonzero(shapes.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The indices of the non-zero entries of ``a``, one row per entry.

  Args:
    a: array-like input.
    size: keyword-only static number of non-zero entries to return: the result is cut or
      padded (with ``fill_value``) to it. Without it ``a`` must be concrete, since the result's
      length depends on its values; with it the function works under ``jit``.
    fill_value: keyword-only padding index (default 0), used with ``size`` only.

  Returns:
    An integer array of shape ``(N, a.ndim)``, ``N`` the number of non-zero entries (or
    ``size``).

  Examples:
    >>> jnp.argwhere(jnp.array([[0, 3], [4, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    >>> jnp.argwhere(jnp.array([1, 0, 1]), size=3, fill_value=-1)
    Array([[ 0],
           [ 2],
           [-1]], dtype=int32)
  """
  util.check_arraylike("argwhere", a)
  a = creation.asarray(a)
  scalar = get_aval(a).ndim == 0
  if scalar:
    a = shapes.atleast_1d(a)
  result = shapes.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)
  return result[:, :0] if scalar else result


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """The indices at which ``v``'s entries would be inserted into the sorted ``a`` to keep it sorted.

  NaNs sort after every other value, as in NumPy.

  Args:
    a: 1-d array-like, sorted in increasing order (unless ``sorter`` sorts it).
    v: array-like of values to insert.
    side: 'left' (the first suitable index) or 'right' (the last).
    sorter: optional integer array-like of indices that sort ``a``.
    method: keyword-only; how to compute it: 'scan' (the default), 'scan_unrolled', 'sort' or
      'compare_all'. All give the same result.

  Returns:
    An integer array of ``v``'s shape.

  Examples:
    >>> a = jnp.array([1, 2, 2, 4])
    >>> jnp.searchsorted(a, jnp.array([0, 2, 3, 5]))
    Array([0, 1, 3, 4], dtype=int32)
    >>> jnp.searchsorted(a, 2, side='right')
    Array(3, dtype=int32)
  """
  util.check_arraylike("searchsorted", a, v)
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                     "['left', 'right']")
  if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
    raise ValueError(f"{method!r} is an invalid value for keyword 'method'. Expected one of "
                     "['compare_all', 'scan', 'scan_unrolled', 'sort']")
  a, v = creation.asarray(a), creation.asarray(v)
  if get_aval(a).ndim != 1:
    raise ValueError("a should be 1-dimensional")
  if sorter is not None:
    a = indexing.take(a, sorter)
  a, v = util.promote_dtypes(a, v)
  n = get_aval(a).shape[0]
  if n == 0:
    return creation.zeros(get_aval(v).shape, util.int_dtype_for_dim(n))
  # Count the entries of a that come before each v (NaNs sort last, as in NumPy).
  vv = shapes.expand_dims(v, -1)
  if side == "left":
    before = _sort_less(a, vv)
  else:
    before = ufuncs.logical_not(_sort_less(vv, a))
  return reductions.sum(before, axis=-1, dtype=util.int_dtype_for_dim(n))


def _sort_less(x, y):
  """``x < y`` in sort order: NaN after everything."""
  if dtypes.is_inexact(get_aval(creation.asarray(x)).dtype):
    x_nan, y_nan = ufuncs.isnan(x), ufuncs.isnan(y)
    return ufuncs.where(x_nan, False, ufuncs.where(y_nan, True, x < y))
  return x < y


def digitize(x, bins, right=False, *, method=None):
  """The index of the bin each entry of ``x`` falls into.

  For increasing ``bins``, entry ``v`` gets ``i`` with ``bins[i-1] <= v < bins[i]`` (``<`` and
  ``<=`` swapped when ``right`` is True); decreasing ``bins`` are also accepted.

  Args:
    x: array-like of values.
    bins: 1-d array-like of monotonic bin edges.
    right: whether the bins include their right edge instead of their left one.
    method: keyword-only; the ``searchsorted`` method to use (None: its default).

  Returns:
    An integer array of ``x``'s shape, with values in ``[0, len(bins)]``.

  Examples:
    >>> bins = jnp.array([0., 1., 2.])
    >>> jnp.digitize(jnp.array([-0.5, 0., 1.5, 2.]), bins)
    Array([0, 1, 2, 3], dtype=int32)
    >>> jnp.digitize(jnp.array([-0.5, 0., 1.5, 2.]), bins, right=True)
    Array([0, 0, 2, 2], dtype=int32)
  """
  util.check_arraylike("digitize", x, bins)
  bins = creation.asarray(bins)
  if get_aval(bins).ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  if get_aval(bins).shape[0] == 0:
    return creation.zeros(get_aval(creation.asarray(x)).shape, dtype=util.int_dtype_for_dim(0))
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  increasing = searchsorted(bins, x, side=side, **kw)
  decreasing = get_aval(bins).shape[0] - searchsorted(bins[::-1], x,
                                                      side="right" if right else "left", **kw)
  return ufuncs.where(bins[-1] >= bins[0], increasing, decreasing)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["searchsorted", "digitize"], {},
                    default_static=("side", "method", "right"),
                    staged=("searchsorted", "digitize"))
