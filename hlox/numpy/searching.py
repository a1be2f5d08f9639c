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
  """Indices of the non-zero entries of ``a``, one array per dimension.

  The result length depends on the values, so ``a`` must be concrete unless ``size`` is given;
  with ``size`` the result is cut or padded (with ``fill_value``, default 0) to that length.
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
  """Indices of the non-zero entries of ``ravel(a)``."""
  util.check_arraylike("flatnonzero", a)
  return nonzero(shapes.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The indices of the non-zero entries of ``a`` as rows of an ``(N, a.ndim)`` array."""
  util.check_arraylike("argwhere", a)
  a = creation.asarray(a)
  scalar = get_aval(a).ndim == 0
  if scalar:
    a = shapes.atleast_1d(a)
  result = shapes.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)
  return result[:, :0] if scalar else result


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Indices where ``v``'s entries would be inserted into the sorted 1-d ``a``."""
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
  """Index of the bin of ``bins`` (increasing or decreasing) each ``x`` falls into."""
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
