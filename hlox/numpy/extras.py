"""More of the NumPy API, composed from the rest of ``hlox.numpy`` (no new primitives):
searching (``nonzero``, ``searchsorted``, ``isin``), set operations, index helpers, differences,
polynomials, histograms, quantiles and a few small utilities."""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.numpy import util

__all__ = ["nonzero", "flatnonzero", "argwhere", "searchsorted", "digitize", "diff", "ediff1d",
           "isin", "union1d", "intersect1d", "setdiff1d", "setxor1d", "unique_values",
           "unique_counts", "unique_inverse", "unique_all", "bincount", "histogram",
           "histogram_bin_edges", "interp", "polyval", "polyadd", "polysub", "polymul",
           "polyder", "polyint", "vander", "convolve", "correlate", "select", "unravel_index",
           "ravel_multi_index", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "diag_indices", "diag_indices_from", "diagflat",
           "fill_diagonal", "cross", "cov", "corrcoef", "trapezoid", "quantile", "percentile",
           "nanquantile", "nanpercentile", "nanmedian", "gcd", "lcm", "ldexp", "frexp",
           "array_equal", "array_equiv", "isscalar", "iscomplexobj", "isrealobj", "iscomplex",
           "isreal", "copy", "rollaxis", "unstack", "ix_", "compress", "extract", "delete",
           "choose", "resize", "apply_along_axis", "vectorize", "fromfunction", "block",
           "hanning", "hamming", "blackman", "bartlett", "kaiser", "i0", "single", "double",
           "uint", "csingle", "cdouble", "matvec", "vecmat", "gradient", "unwrap",
           "piecewise", "trim_zeros", "put", "spacing", "mgrid", "ogrid", "apply_over_axes",
           "iterable"]


def _index_dtype():
  return dtypes.default_int_dtype()


def _concrete(name, x):
  """The NumPy value of ``x``; an error naming ``name`` when it is traced."""
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      from hlox.errors import ConcretizationTypeError
      raise ConcretizationTypeError(x, f"{name} needs a concrete value here (its result "
                                    "shape depends on it); pass size= or call it outside jit")
    return np.asarray(value)
  return np.asarray(x)


# --- nonzero and friends -------------------------------------------------------------------

def _nonzero_flat_positions(mask_flat, size):
  """Positions of the True entries of a 1-d bool array, in order, the first ``size`` of them
  (then filled with n, the length), and the number of True entries."""
  n = get_aval(mask_flat).shape[0]
  idx_dtype = _index_dtype()
  iota = lax.iota(idx_dtype, n)
  # A stable sort on "is zero" brings the nonzero positions to the front, in order.
  key = lax.convert_element_type(lax.bitwise_not(mask_flat), np.int8)
  _, pos = lax.sort((key, iota), num_keys=1)
  if size > n:
    pos = jnp.concatenate([pos, jnp.full((size - n,), n, idx_dtype)])
  pos = pos[:size]
  count = jnp.sum(mask_flat, dtype=idx_dtype)
  valid = lax.lt(lax.iota(idx_dtype, size), lax.broadcast_in_dim(count, (size,), ()))
  return pos, valid


def _nonzero_sized(a, size, fill_value):
  """``nonzero`` with a static result length: works on traced values."""
  a = jnp.asarray(a)
  shape = get_aval(a).shape
  if not shape:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(x) "
                     "instead.")
  size = operator.index(size)
  mask = jnp.ravel(a != 0) if a.dtype != np.bool_ else jnp.ravel(a)
  idx_dtype = _index_dtype()
  if get_aval(mask).shape[0] == 0:
    pos = jnp.zeros((size,), idx_dtype)
    valid = jnp.zeros((size,), bool)
  else:
    pos, valid = _nonzero_flat_positions(mask, size)
    pos = jnp.minimum(pos, get_aval(mask).shape[0] - 1)
  out = []
  stride = math.prod(shape)
  fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
  if len(fills) != len(shape):
    raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {len(shape)}; "
                     f"got {fill_value}")
  for d, fill in zip(shape, fills):
    stride //= d
    coord = (pos // stride) % d if d else pos
    fill = 0 if fill is None else fill
    out.append(jnp.where(valid, coord, jnp.asarray(fill).astype(idx_dtype)))
  return tuple(out)


def nonzero(a, *, size=None, fill_value=None):
  """Indices of the non-zero entries of ``a``, one array per dimension.

  The result length depends on the values, so ``a`` must be concrete unless ``size`` is given;
  with ``size`` the result is cut or padded (with ``fill_value``, default 0) to that length.
  """
  util.check_arraylike("nonzero", a)
  if size is None:
    value = _concrete("nonzero", a)
    if value.ndim == 0:
      raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(x) "
                       "instead.")
    if fill_value is not None:
      raise ValueError("nonzero: fill_value requires size to be specified")
    from hlox.runtime.array import device_put
    return tuple(device_put(i.astype(_index_dtype())) for i in np.nonzero(value))
  return _nonzero_sized(a, size, fill_value)


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the non-zero entries of ``ravel(a)``."""
  util.check_arraylike("flatnonzero", a)
  return nonzero(jnp.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The indices of the non-zero entries of ``a`` as rows of an ``(N, a.ndim)`` array."""
  util.check_arraylike("argwhere", a)
  a = jnp.asarray(a)
  scalar = get_aval(a).ndim == 0
  if scalar:
    a = jnp.atleast_1d(a)
  result = jnp.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)
  return result[:, :0] if scalar else result


# --- searching -----------------------------------------------------------------------------

def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Indices where ``v``'s entries would be inserted into the sorted 1-d ``a``."""
  util.check_arraylike("searchsorted", a, v)
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                     "['left', 'right']")
  if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
    raise ValueError(f"{method!r} is an invalid value for keyword 'method'. Expected one of "
                     "['compare_all', 'scan', 'scan_unrolled', 'sort']")
  a, v = jnp.asarray(a), jnp.asarray(v)
  if get_aval(a).ndim != 1:
    raise ValueError("a should be 1-dimensional")
  if sorter is not None:
    a = jnp.take(a, sorter)
  a, v = util.promote_dtypes(a, v)
  n = get_aval(a).shape[0]
  if n == 0:
    return jnp.zeros(get_aval(v).shape, _index_dtype())
  # Count the entries of a that come before each v (NaNs sort last, as in NumPy).
  vv = jnp.expand_dims(v, -1)
  if side == "left":
    before = _sort_less(a, vv)
  else:
    before = jnp.logical_not(_sort_less(vv, a))
  return jnp.sum(before, axis=-1, dtype=_index_dtype())


def _sort_less(x, y):
  """``x < y`` in sort order: NaN after everything."""
  if dtypes.is_inexact(get_aval(jnp.asarray(x)).dtype):
    x_nan, y_nan = jnp.isnan(x), jnp.isnan(y)
    return jnp.where(x_nan, False, jnp.where(y_nan, True, x < y))
  return x < y


def digitize(x, bins, right=False, *, method=None):
  """Index of the bin of ``bins`` (increasing or decreasing) each ``x`` falls into."""
  util.check_arraylike("digitize", x, bins)
  bins = jnp.asarray(bins)
  if get_aval(bins).ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  if get_aval(bins).shape[0] == 0:
    return jnp.zeros(get_aval(jnp.asarray(x)).shape, dtype=_index_dtype())
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  increasing = searchsorted(bins, x, side=side, **kw)
  decreasing = get_aval(bins).shape[0] - searchsorted(bins[::-1], x,
                                                      side="right" if right else "left", **kw)
  return jnp.where(bins[-1] >= bins[0], increasing, decreasing)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each entry of ``element`` is in ``test_elements`` (elementwise, shape of
  ``element``)."""
  util.check_arraylike("isin", element, test_elements)
  element, test = jnp.asarray(element), jnp.ravel(jnp.asarray(test_elements))
  result = jnp.any(jnp.expand_dims(element, -1) == test, axis=-1)
  return jnp.logical_not(result) if invert else result


# --- set operations ------------------------------------------------------------------------

def unique_values(x, *, size=None, fill_value=None):
  """The sorted unique values of ``x`` (array API)."""
  return jnp.unique(x, size=size, fill_value=fill_value)


def unique_counts(x, *, size=None, fill_value=None):
  """``(values, counts)`` of the unique values of ``x`` (array API)."""
  values, counts = jnp.unique(x, return_counts=True, size=size, fill_value=fill_value)
  return _UniqueCounts(values, counts)


def unique_inverse(x, *, size=None, fill_value=None):
  """``(values, inverse_indices)``; the inverse has ``x``'s shape (array API)."""
  values, inverse = jnp.unique(x, return_inverse=True, size=size, fill_value=fill_value)
  return _UniqueInverse(values, jnp.reshape(inverse, get_aval(jnp.asarray(x)).shape))


def unique_all(x, *, size=None, fill_value=None):
  """``(values, indices, inverse_indices, counts)`` of the unique values (array API)."""
  values, index, inverse, counts = jnp.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True, size=size,
                                              fill_value=fill_value)
  return _UniqueAll(values, index, jnp.reshape(inverse, get_aval(jnp.asarray(x)).shape),
                    counts)


from typing import NamedTuple  # noqa: E402


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


def _unique_sized(ar, size, fill_value, return_index, return_inverse, return_counts,
                  equal_nan):
  """``unique(ravel(ar))`` with a static result length: works on traced values."""
  x = jnp.ravel(ar)
  n = get_aval(x).shape[0]
  idx_dtype = _index_dtype()
  size = operator.index(size)
  if n == 0:
    zeros = jnp.zeros((size,), idx_dtype)
    values = jnp.full((size,), 0 if fill_value is None else fill_value, get_aval(x).dtype)
    outs = [values] + [zeros] * (return_index + return_counts) + (
        [jnp.zeros(get_aval(jnp.asarray(ar)).shape, idx_dtype)] if return_inverse else [])
    if return_inverse:  # keep NumPy's order: values, index, inverse, counts
      outs = [values] + ([zeros] if return_index else []) + [outs[-1]] + (
          [zeros] if return_counts else [])
    return outs[0] if len(outs) == 1 else tuple(outs)
  perm = jnp.argsort(x, stable=True).astype(idx_dtype)
  sx = x[perm]
  new = sx[1:] != sx[:-1]
  if equal_nan and dtypes.is_inexact(get_aval(x).dtype):
    new = new & ~(jnp.isnan(sx[1:]) & jnp.isnan(sx[:-1]))
  new = jnp.concatenate([jnp.ones((1,), bool), new])
  pos, valid = _nonzero_flat_positions(new, size)
  pos = jnp.minimum(pos, n - 1)
  values = sx[pos]
  fill = sx[0] if fill_value is None else jnp.asarray(fill_value, get_aval(x).dtype)
  values = jnp.where(valid, values, fill)
  outs = [values]
  if return_index:
    outs.append(jnp.where(valid, perm[pos], perm[0]))  # padding: the first's index, as JAX
  group = jnp.cumsum(new, dtype=idx_dtype) - 1  # group of each sorted entry
  if return_inverse:
    inverse = jnp.zeros((n,), idx_dtype).at[perm].set(group)
    outs.append(jnp.reshape(inverse, get_aval(jnp.asarray(ar)).shape))
  if return_counts:
    counts = jnp.zeros((size,), idx_dtype).at[group].add(1, mode="drop")
    outs.append(counts)
  return outs[0] if len(outs) == 1 else tuple(outs)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values in either array."""
  util.check_arraylike("union1d", ar1, ar2)
  return jnp.unique(jnp.concatenate([jnp.ravel(ar1), jnp.ravel(ar2)]), size=size,
                    fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted unique values in both arrays (computed on concrete values)."""
  util.check_arraylike("intersect1d", ar1, ar2)
  a, b = _concrete("intersect1d", ar1), _concrete("intersect1d", ar2)
  res = np.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
  return _finish_set_op(res if return_indices else res[0], size, fill_value,
                        jnp.result_type(ar1, ar2))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values of ``ar1`` that are not in ``ar2``."""
  util.check_arraylike("setdiff1d", ar1, ar2)
  a, b = _concrete("setdiff1d", ar1), _concrete("setdiff1d", ar2)
  return _finish_set_op(np.setdiff1d(a, b, assume_unique=assume_unique), size,
                        0 if fill_value is None else fill_value,
                        get_aval(jnp.asarray(ar1)).dtype)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values in exactly one of the arrays."""
  util.check_arraylike("setxor1d", ar1, ar2)
  a, b = _concrete("setxor1d", ar1), _concrete("setxor1d", ar2)
  return _finish_set_op(np.setxor1d(a, b, assume_unique=assume_unique), size, fill_value,
                        jnp.result_type(ar1, ar2))


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
    return (jnp.asarray(_pad_to(values, size, fill_value).astype(dtype)),
            jnp.asarray(_pad_to(i1, size, 0).astype(_index_dtype())),
            jnp.asarray(_pad_to(i2, size, 0).astype(_index_dtype())))
  return jnp.asarray(_pad_to(res, size, fill_value).astype(dtype))


# --- differences ---------------------------------------------------------------------------

def diff(a, n=1, axis=-1, prepend=None, append=None):
  """The ``n``-th discrete difference along ``axis``."""
  util.check_arraylike("diff", a)
  a = jnp.asarray(a)
  n = operator.index(n)
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if n == 0:
    return a
  nd = get_aval(a).ndim
  if nd == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = util.canonicalize_axis_tuple(axis, nd, "diff")[0]
  parts = []
  for extra in (prepend, None, append):
    if extra is None:
      continue
    extra = jnp.asarray(extra)
    if get_aval(extra).ndim == 0:
      shape = list(get_aval(a).shape)
      shape[axis] = 1
      extra = jnp.broadcast_to(extra, tuple(shape))
    parts.append(extra)
  if prepend is not None or append is not None:
    pieces = ([parts[0]] if prepend is not None else []) + [a] + (
        [parts[-1]] if append is not None else [])
    a = jnp.concatenate(pieces, axis)
  for _ in range(n):
    size = get_aval(a).shape[axis]
    lo = lax.slice_in_dim(a, 0, max(size - 1, 0), axis=axis)
    hi = lax.slice_in_dim(a, min(1, size), size, axis=axis)
    a = jnp.not_equal(hi, lo) if get_aval(a).dtype == np.bool_ else jnp.subtract(hi, lo)
  return a


def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive entries of ``ravel(ary)``, with optional ends."""
  util.check_arraylike("ediff1d", ary)
  arr = jnp.ravel(ary)
  result = arr[1:] - arr[:-1]
  dtype = get_aval(result).dtype
  if to_begin is not None:
    result = jnp.concatenate([jnp.ravel(jnp.asarray(to_begin)).astype(dtype), result])
  if to_end is not None:
    result = jnp.concatenate([result, jnp.ravel(jnp.asarray(to_end)).astype(dtype)])
  return result


def gradient(f, *varargs, axis=None, edge_order=None):
  """Second-order central differences inside, first-order at the edges (NumPy's
  ``gradient`` with unit or scalar spacing)."""
  util.check_arraylike("gradient", f)
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  f = jnp.asarray(f)
  nd = get_aval(f).ndim
  if f.dtype not in _inexact_set():
    f = f.astype(dtypes.default_float_dtype())
  axes = (tuple(range(nd)) if axis is None else
          util.canonicalize_axis_tuple(axis, nd, "gradient") if not isinstance(axis, int)
          else (axis % nd,))
  if isinstance(axis, (tuple, list)):
    axes = tuple(a % nd for a in axis)
  if not varargs:
    spacing = [1.0] * len(axes)
  elif len(varargs) == 1:
    spacing = list(varargs) * len(axes)
  elif len(varargs) == len(axes):
    spacing = list(varargs)
  else:
    raise TypeError("Invalid number of spacing arguments")
  outs = []
  for ax, h in zip(axes, spacing):
    size = get_aval(f).shape[ax]
    if size < 2:
      raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                       "(edge_order + 1) elements are required.")
    h = jnp.asarray(h)
    if get_aval(h).ndim == 0:
      sl = lambda s, e: lax.slice_in_dim(f, s, e, axis=ax)
      inner = (sl(2, size) - sl(0, size - 2)) / (2 * h)
      first = (sl(1, 2) - sl(0, 1)) / h
      last = (sl(size - 1, size) - sl(size - 2, size - 1)) / h
      outs.append(jnp.concatenate([first, inner, last], axis=ax))
    else:
      # Non-uniform coordinates along the axis.
      dx = jnp.diff(h)
      sl = lambda s, e: lax.slice_in_dim(f, s, e, axis=ax)
      shape = [1] * nd
      shape[ax] = -1
      dx1 = jnp.reshape(dx[:-1], shape)
      dx2 = jnp.reshape(dx[1:], shape)
      a = -dx2 / (dx1 * (dx1 + dx2))
      b = (dx2 - dx1) / (dx1 * dx2)
      c = dx1 / (dx2 * (dx1 + dx2))
      inner = a * sl(0, size - 2) + b * sl(1, size - 1) + c * sl(2, size)
      first = (sl(1, 2) - sl(0, 1)) / jnp.reshape(dx[:1], shape)
      last = (sl(size - 1, size) - sl(size - 2, size - 1)) / jnp.reshape(dx[-1:], shape)
      outs.append(jnp.concatenate([first, inner, last], axis=ax))
  return outs[0] if len(outs) == 1 else outs


def _inexact_set():
  return {d for d in dtypes.all_dtypes if dtypes.is_inexact(d)}


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """Unwrap phase angles by replacing jumps larger than ``discont`` by their ``period``
  complement."""
  util.check_arraylike("unwrap", p)
  p, period = util.promote_dtypes(jnp.asarray(p), period)
  if dtypes.is_complex(get_aval(p).dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if discont is None:
    discont = period / 2
  interval = period // 2 if dtypes.is_int(get_aval(p).dtype) else period / 2
  dd = diff(p, axis=axis)
  ddmod = jnp.mod(dd + interval, period) - interval
  ddmod = jnp.where((ddmod == -interval) & (dd > 0), interval, ddmod)
  ph_correct = jnp.where(jnp.abs(dd) < discont, 0, ddmod - dd)
  axis = axis % get_aval(p).ndim
  first = lax.slice_in_dim(p, 0, 1, axis=axis)
  rest = lax.slice_in_dim(p, 1, get_aval(p).shape[axis], axis=axis)
  return jnp.concatenate([first, rest + jnp.cumsum(ph_correct, axis=axis)], axis=axis)


# --- histograms ----------------------------------------------------------------------------

def bincount(x, weights=None, minlength=0, *, length=None):
  """Counts (or summed ``weights``) of each non-negative integer in ``x``.

  The output length is ``max(max(x) + 1, minlength)``, which needs concrete ``x``; under jit
  pass ``length``. Negative entries are not counted; entries past ``length`` are dropped.
  """
  util.check_arraylike("bincount", x)
  x = jnp.asarray(x)
  if not dtypes.is_int(get_aval(x).dtype) and get_aval(x).dtype != np.bool_:
    raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
  if get_aval(x).ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = operator.index(minlength)
  if minlength < 0:
    raise ValueError(f"minlength must be non-negative; got {minlength}")
  if length is None:
    value = _concrete("bincount (without length=)", x)
    length = builtins.max(minlength, int(value.max()) + 1 if value.size else 0)
  else:
    length = operator.index(length)
  if weights is None:
    weights = jnp.ones(get_aval(x).shape, _index_dtype())
  else:
    weights = jnp.asarray(weights)
    if get_aval(weights).dtype == np.bool_:
      weights = weights.astype(_index_dtype())
  idx = jnp.clip(x, 0, None)  # negative entries count toward bin 0, as in JAX
  return jnp.zeros(length, get_aval(weights).dtype).at[idx].add(weights, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """The edges of ``bins`` equal-width bins over ``range`` (default: min to max of ``a``)."""
  util.check_arraylike("histogram_bin_edges", a)
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  a = jnp.ravel(a)
  dtype = dtypes.to_inexact_dtype(get_aval(a).dtype)
  dtype = dtypes.canonicalize_dtype(dtype)
  if get_aval(jnp.asarray(bins)).ndim == 1:
    return jnp.asarray(bins, dtype=dtype)
  bins = operator.index(bins)
  if range is None:
    lo, hi = jnp.min(a), jnp.max(a)
  else:
    lo, hi = range
    if np.ndim(lo) == 0 and np.ndim(hi) == 0 and not isinstance(lo, Tracer) and \
        not isinstance(hi, Tracer) and lo > hi:
      raise ValueError("max must be larger than min in range parameter.")
    lo, hi = jnp.asarray(lo), jnp.asarray(hi)
  lo, hi = lo.astype(dtype), hi.astype(dtype)
  # An empty range widens to +/- 0.5, as NumPy does.
  same = lo == hi
  lo = jnp.where(same, lo - 0.5, lo)
  hi = jnp.where(same, hi + 0.5, hi)
  return jnp.linspace(lo, hi, bins + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """``(counts, bin_edges)`` of ``a``; the last bin includes its right edge."""
  util.check_arraylike("histogram", a)
  if weights is not None and get_aval(jnp.asarray(weights)).shape != get_aval(
      jnp.asarray(a)).shape:
    raise ValueError("weights should have the same shape as a.")
  edges = histogram_bin_edges(a, bins, range, weights)
  a = jnp.ravel(a)
  w = jnp.ones(get_aval(a).shape, get_aval(edges).dtype) if weights is None else jnp.ravel(
      weights)
  nbins = get_aval(edges).shape[0] - 1
  bin_idx = searchsorted(edges, a, side="right")
  bin_idx = jnp.where(a == edges[-1], nbins, bin_idx)
  # Out-of-range entries (index 0 or nbins + 1) go to scratch bins that are dropped.
  counts = jnp.zeros(nbins + 2, get_aval(w).dtype).at[bin_idx].add(w)[1:-1]
  if density:
    widths = jnp.diff(edges)
    counts = counts / widths / jnp.sum(counts)
  return counts, edges


def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at ``x``."""
  util.check_arraylike("interp", x, xp, fp)
  x, xp, fp = jnp.asarray(x), jnp.asarray(xp), jnp.asarray(fp)
  if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1:
    raise ValueError("xp and fp must be one-dimensional")
  if get_aval(xp).shape[0] != get_aval(fp).shape[0]:
    raise ValueError("xp and fp must be the same length")
  if get_aval(xp).shape[0] == 0:
    raise ValueError("xp and fp must be non-empty")
  if dtypes.is_complex(get_aval(fp).dtype):
    dtype = dtypes.canonicalize_dtype(jnp.result_type(x, xp, fp))
    x, xp = x.astype(dtypes.to_inexact_dtype(jnp.result_type(x, xp))), xp
  else:
    dtype = dtypes.canonicalize_dtype(
        dtypes.to_inexact_dtype(jnp.result_type(x, xp, fp)))
  x, xp, fp = x.astype(dtype) if not dtypes.is_complex(dtype) else x, \
      xp.astype(dtype) if not dtypes.is_complex(dtype) else xp, fp.astype(dtype)
  if period is not None:
    if get_aval(jnp.asarray(period)).ndim != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = jnp.abs(period)
    x = x % period
    xp = xp % period
    order = jnp.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = jnp.concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
  i = jnp.clip(searchsorted(xp, x, side="right"), 1, get_aval(xp).shape[0] - 1)
  dx = xp[i] - xp[i - 1]
  delta = x - xp[i - 1]
  eps = np.finfo(np.dtype(dtypes.to_inexact_dtype(get_aval(xp).dtype))).eps
  safe = jnp.abs(dx) > eps * jnp.abs(xp[i])
  f = jnp.where(safe, fp[i - 1] + (delta / jnp.where(safe, dx, 1)) * (fp[i] - fp[i - 1]),
                fp[i - 1])
  if period is None:
    f = jnp.where(x < xp[0], fp[0] if left is None else left, f)
    f = jnp.where(x > xp[-1], fp[-1] if right is None else right, f)
  return f.astype(dtype) if f.dtype != dtype else f


# --- polynomials ---------------------------------------------------------------------------

def polyval(p, x, *, unroll=16):
  """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x``."""
  util.check_arraylike("polyval", p, x)
  p, x = util.promote_dtypes(jnp.asarray(p), jnp.asarray(x) if not isinstance(
      x, (int, float, complex)) else x)
  shape = get_aval(p).shape[1:] if get_aval(p).ndim else ()
  y = jnp.zeros(util.broadcast_shapes(shape, get_aval(x).shape), dtype=get_aval(x).dtype)
  if get_aval(p).ndim == 0:
    raise ValueError("polyval: p must be at least 1-dimensional")
  for k in builtins.range(get_aval(p).shape[0]):
    y = y * x + p[k]
  return y


def polyadd(a1, a2):
  """Sum of two polynomials (coefficients highest degree first)."""
  util.check_arraylike("polyadd", a1, a2)
  a1, a2 = util.promote_dtypes(jnp.atleast_1d(a1), jnp.atleast_1d(a2))
  n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
  if n1 < n2:
    a1 = jnp.pad(a1, (n2 - n1, 0))
  elif n2 < n1:
    a2 = jnp.pad(a2, (n1 - n2, 0))
  return a1 + a2


def polysub(a1, a2):
  """Difference of two polynomials."""
  util.check_arraylike("polysub", a1, a2)
  return polyadd(a1, -jnp.asarray(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
  """Product of two polynomials."""
  util.check_arraylike("polymul", a1, a2)
  a1, a2 = util.promote_dtypes(jnp.atleast_1d(a1), jnp.atleast_1d(a2))
  if get_aval(a1).shape[0] == 0:
    a1 = jnp.zeros(1, a1.dtype)
  if get_aval(a2).shape[0] == 0:
    a2 = jnp.zeros(1, a2.dtype)
  return convolve(a1, a2, mode="full")


def polyder(p, m=1):
  """The ``m``-th derivative of the polynomial ``p``."""
  util.check_arraylike("polyder", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  p, = util.promote_dtypes_inexact(jnp.asarray(p))
  if m == 0:
    return p
  n = get_aval(p).shape[0]
  # Coefficient of x^j after m derivatives is j!/(j-m)! for the original power j.
  powers = np.arange(n - 1, m - 1, -1)
  fact = np.array([math.prod(builtins.range(j - m + 1, j + 1)) for j in powers])
  dtype = jnp.result_type(p, 1)
  return p[:builtins.max(n - m, 0)] * jnp.asarray(fact).astype(dtype)


def polyint(p, m=1, k=None):
  """The ``m``-th antiderivative of ``p`` (integration constants ``k``, default 0)."""
  util.check_arraylike("polyint", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  p = jnp.asarray(p)
  k = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k))
  if len(k) == 1:
    k = np.repeat(k, m)
  if len(k) != m:
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(get_aval(p).dtype))
  p = p.astype(dtype)
  for i in builtins.range(m):
    n = get_aval(p).shape[0]
    p = jnp.concatenate([p / jnp.arange(n, 0, -1, dtype=dtype), jnp.asarray([k[i]], dtype)])
  return p


def vander(x, N=None, increasing=False):
  """The Vandermonde matrix of the 1-d ``x``: columns are powers of ``x``."""
  util.check_arraylike("vander", x)
  x = jnp.asarray(x)
  if get_aval(x).ndim != 1:
    raise ValueError("x must be a one-dimensional array")
  n = get_aval(x).shape[0] if N is None else operator.index(N)
  if n < 0:
    raise ValueError("N must be nonnegative")
  powers = jnp.arange(n, dtype=_index_dtype())
  if not increasing:
    powers = powers[::-1]
  return jnp.power(x[:, None], powers.astype(get_aval(x).dtype) if dtypes.is_inexact(
      get_aval(x).dtype) else powers)


def _conv1d(name, a, v, mode, flip):
  util.check_arraylike(name, a, v)
  a, v = util.promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(v))
  if get_aval(a).ndim != 1 or get_aval(v).ndim != 1:
    raise ValueError(f"{name}() only support 1-dimensional inputs.")
  na, nv = get_aval(a).shape[0], get_aval(v).shape[0]
  if na == 0 or nv == 0:
    raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}.")
  if dtypes.is_complex(get_aval(v).dtype) and not flip:
    v = jnp.conj(v)
  if flip:
    v = v[::-1]
  # full[k] = sum_j a[j] * v'[j - k + nv - 1], with v' (flipped for convolve) sliding over a.
  n_full = na + nv - 1
  a_pad = jnp.pad(a, (nv - 1, nv - 1))
  rows = jnp.arange(n_full)[:, None] + jnp.arange(nv)[None, :]
  full = jnp.sum(a_pad[rows] * v[None, :], axis=1) if get_aval(a).dtype != np.bool_ else \
      jnp.any(a_pad[rows] & v[None, :], axis=1)
  if mode == "full":
    return full
  if mode == "same":
    n = builtins.max(na, nv)
    start = (n_full - n) // 2
    return full[start:start + n]
  if mode == "valid":
    n = builtins.max(na, nv) - builtins.min(na, nv) + 1
    start = builtins.min(na, nv) - 1
    return full[start:start + n]
  raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """Discrete 1-d convolution of ``a`` and ``v``."""
  if get_aval(jnp.asarray(v)).shape and get_aval(jnp.asarray(a)).shape and \
      get_aval(jnp.asarray(v)).shape[0] > get_aval(jnp.asarray(a)).shape[0]:
    a, v = v, a
  return _conv1d("convolve", a, v, mode, flip=True)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Discrete 1-d cross-correlation of ``a`` and ``v``."""
  na, nv = get_aval(jnp.asarray(a)).shape, get_aval(jnp.asarray(v)).shape
  if na and nv and nv[0] > na[0]:
    return _conv1d("correlate", v, a, mode, flip=False)[::-1] if not dtypes.is_complex(
        jnp.result_type(a, v)) else jnp.conj(_conv1d("correlate", v, a, mode, flip=False)[::-1])
  return _conv1d("correlate", a, v, mode, flip=False)


# --- choosing ------------------------------------------------------------------------------

def select(condlist, choicelist, default=0):
  """The entries of ``choicelist`` chosen by the first true entry of ``condlist``."""
  if len(condlist) != len(choicelist):
    raise ValueError("condlist must have length equal to choicelist ({} vs {})".format(
        len(condlist), len(choicelist)))
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  for c in condlist:
    if get_aval(jnp.asarray(c)).dtype != np.bool_:
      raise ValueError("condlist must be a list of boolean arrays")
  util.check_arraylike("select", *condlist, *choicelist, default)
  result = default
  for cond, choice in zip(reversed(condlist), reversed(choicelist)):
    result = jnp.where(cond, choice, result)
  shape = util.broadcast_shapes(*[get_aval(jnp.asarray(x)).shape
                                  for x in (*condlist, *choicelist, default)])
  return jnp.broadcast_to(result, shape)


def choose(a, choices, out=None, mode="raise"):
  """``choices[a[i]][i]`` for each position ``i`` (broadcasting ``a`` and the choices)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  util.check_arraylike("choose", a, *choices)
  a = jnp.asarray(a)
  if not dtypes.is_int(get_aval(a).dtype):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  if mode == "raise":
    value = _concrete("choose (mode='raise')", a)
    if np.any((value < 0) | (value >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = a % n
  elif mode == "clip":
    a = jnp.clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  choices = util.promote_dtypes(*[jnp.asarray(c) for c in choices])
  stacked = jnp.stack(jnp.broadcast_arrays(a, *choices)[1:], axis=0)
  a = jnp.broadcast_to(a, get_aval(stacked).shape[1:])
  return jnp.take_along_axis(stacked, a[None], axis=0)[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of ``a`` along ``axis`` where ``condition`` is true."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  util.check_arraylike("compress", condition, a)
  condition = jnp.asarray(condition)
  if get_aval(condition).ndim != 1:
    raise ValueError("condition must be a 1D array")
  a = jnp.asarray(a)
  if axis is None:
    axis = 0
    a = jnp.ravel(a)
  else:
    a = jnp.moveaxis(a, axis, 0)
  n = get_aval(a).shape[0]
  c = get_aval(condition).shape[0]
  if c > n:
    extra = _concrete("compress", condition)[n:] if size is None else None
    if extra is not None and np.any(extra):
      raise ValueError("compress: condition has True entries beyond the array's length")
    condition = condition[:n]
  elif c < n:
    a = a[:c]
  if size is None:
    idx = nonzero(condition)[0]
    result = a[idx]
  else:
    idx, = nonzero(condition, size=size, fill_value=get_aval(condition).shape[0])
    valid = idx < get_aval(condition).shape[0]
    result = jnp.take(a, jnp.minimum(idx, builtins.max(get_aval(a).shape[0] - 1, 0)), axis=0)
    valid = jnp.reshape(valid, (-1,) + (1,) * (get_aval(result).ndim - 1))
    result = jnp.where(valid, result, jnp.asarray(fill_value, dtype=get_aval(result).dtype))
  return jnp.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
  """The entries of ``ravel(arr)`` where ``ravel(condition)`` is non-zero."""
  util.check_arraylike("extract", condition, arr)
  return compress(jnp.ravel(condition) != 0, jnp.ravel(arr), size=size, fill_value=fill_value)


def piecewise(x, condlist, funclist, *args, **kw):
  """``funclist[i](x)`` where ``condlist[i]`` holds (a trailing extra function or constant is
  the default)."""
  util.check_arraylike("piecewise", x)
  x = jnp.asarray(x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    default, funclist = funclist[-1], funclist[:-1]
  elif nf == nc:
    default = 0
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected;"
                     f" got {nf}")
  def apply(f):
    return f(x, *args, **kw) if callable(f) else jnp.asarray(f, dtype=get_aval(x).dtype)
  result = jnp.broadcast_to(apply(default), get_aval(x).shape).astype(get_aval(x).dtype)
  for cond, f in zip(condlist, funclist):
    result = jnp.where(cond, jnp.asarray(apply(f)).astype(get_aval(x).dtype), result)
  return result


# --- index helpers -------------------------------------------------------------------------

def unravel_index(indices, shape):
  """The coordinates, one array per dimension of ``shape``, of flat ``indices`` (negative
  indices count from the end; out-of-range ones are clipped)."""
  util.check_arraylike("unravel_index", indices)
  indices = jnp.asarray(indices)
  shape = tuple(operator.index(d) for d in np.atleast_1d(shape))
  if not dtypes.is_int(get_aval(indices).dtype):
    raise TypeError("Only integer indices are allowed, got " + str(indices.dtype))
  total = math.prod(shape)
  indices = jnp.where(indices < 0, indices + total, indices)
  indices = jnp.clip(indices, 0, builtins.max(total - 1, 0))
  out = []
  stride = total
  for d in shape:
    stride //= d if d else 1
    out.append((indices // stride) % d if d else indices * 0)
  return tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
  """Flat indices of the coordinate arrays ``multi_index`` into an array of shape ``dims``."""
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  util.check_arraylike("ravel_multi_index", *multi_index)
  dims = tuple(operator.index(d) for d in dims)
  index = [jnp.asarray(i) for i in multi_index]
  for i in index:
    if not dtypes.is_int(get_aval(i).dtype):
      raise TypeError("only int indices permitted")
  if mode == "raise":
    for i, d in zip(index, dims):
      value = _concrete("ravel_multi_index (mode='raise')", i)
      if np.any((value < 0) | (value >= d)):
        raise ValueError("invalid entry in coordinates array")
  elif mode == "wrap":
    index = [i % d for i, d in zip(index, dims)]
  elif mode == "clip":
    index = [jnp.clip(i, 0, d - 1) for i, d in zip(index, dims)]
  else:
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
  if order == "F":
    index, dims = index[::-1], dims[::-1]
  elif order != "C":
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  result = jnp.asarray(0, _index_dtype())
  for i, d in zip(index, dims):
    result = result * d + i.astype(_index_dtype())
  return result


def tril_indices(n, k=0, m=None):
  """Row and column indices of the lower triangle of an ``(n, m)`` array."""
  n = operator.index(n)
  k = operator.index(k)
  m = n if m is None else operator.index(m)
  return tuple(jnp.asarray(i.astype(_index_dtype())) for i in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
  """Row and column indices of the upper triangle of an ``(n, m)`` array."""
  n = operator.index(n)
  k = operator.index(k)
  m = n if m is None else operator.index(m)
  return tuple(jnp.asarray(i.astype(_index_dtype())) for i in np.triu_indices(n, k, m))


def _check_2d(name, arr):
  shape = get_aval(jnp.asarray(arr)).shape
  if len(shape) != 2:
    raise ValueError(f"input array must be 2-d; got shape {shape}")
  return shape


def tril_indices_from(arr, k=0):
  """``tril_indices`` for the shape of the 2-d ``arr``."""
  n, m = _check_2d("tril_indices_from", arr)
  return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
  """``triu_indices`` for the shape of the 2-d ``arr``."""
  n, m = _check_2d("triu_indices_from", arr)
  return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
  """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``."""
  n, ndim = operator.index(n), operator.index(ndim)
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (jnp.arange(n, dtype=_index_dtype()),) * ndim


def diag_indices_from(arr):
  """``diag_indices`` for the (equal-sided, at least 2-d) ``arr``."""
  util.check_arraylike("diag_indices_from", arr)
  shape = get_aval(jnp.asarray(arr)).shape
  if len(shape) < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(shape[0], len(shape))


def diagflat(v, k=0):
  """A 2-d array with the flattened ``v`` on its ``k``-th diagonal."""
  util.check_arraylike("diagflat", v)
  return jnp.diag(jnp.ravel(v), k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """``a`` with its main diagonal set to ``val`` (``inplace=False`` is required: arrays are
  immutable)."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  util.check_arraylike("fill_diagonal", a, val)
  a = jnp.asarray(a)
  shape = get_aval(a).shape
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  n = builtins.min(shape)
  idx = jnp.arange(n)
  val = jnp.ravel(jnp.asarray(val))
  if get_aval(val).shape[0] == 0:
    return a
  val = jnp.resize(val, (n,)) if get_aval(val).shape[0] != n else val
  return a.at[(idx,) * len(shape)].set(val)


def ix_(*args):
  """Open-mesh index arrays: the i-th 1-d argument reshaped to broadcast along axis i."""
  util.check_arraylike("ix", *args)
  n = len(args)
  out = []
  for i, a in enumerate(args):
    a = jnp.asarray(a)
    if get_aval(a).ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{a.shape}")
    if get_aval(a).dtype == np.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = get_aval(a).shape[0]
    out.append(jnp.reshape(a, shape) if get_aval(a).shape[0] else
               jnp.zeros(shape, dtype=_index_dtype()))
  return tuple(out)


def _grid(name, sparse):
  class _Grid:
    def __getitem__(self, key):
      if isinstance(key, slice):
        key = (key,)
        single = True
      else:
        single = False
      arrays = []
      for s in key:
        start = 0 if s.start is None else s.start
        step = 1 if s.step is None else s.step
        stop = s.stop
        if isinstance(step, complex):
          arrays.append(jnp.linspace(start, stop, int(abs(step))))
        else:
          arrays.append(jnp.arange(start, stop, step))
      if single:
        return arrays[0]
      if sparse:
        return tuple(jnp.meshgrid(*arrays, indexing="ij", sparse=True))
      return jnp.stack(jnp.meshgrid(*arrays, indexing="ij"), 0)
  _Grid.__name__ = name
  return _Grid()


mgrid = _grid("mgrid", sparse=False)
ogrid = _grid("ogrid", sparse=True)


# --- products and statistics ---------------------------------------------------------------

def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross product of 3-vectors (or 2-vectors) along the given axes."""
  util.check_arraylike("cross", a, b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = util.promote_dtypes(jnp.asarray(a), jnp.asarray(b))
  a = jnp.moveaxis(a, axisa, -1)
  b = jnp.moveaxis(b, axisb, -1)
  na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
  if na not in (2, 3) or nb not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  if na == 2 and nb == 2:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
  a0, a1 = a[..., 0], a[..., 1]
  a2 = a[..., 2] if na == 3 else jnp.zeros_like(a0)
  b0, b1 = b[..., 0], b[..., 1]
  b2 = b[..., 2] if nb == 3 else jnp.zeros_like(b0)
  c = jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
  return jnp.moveaxis(c, -1, axisc)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
  """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``."""
  util.check_arraylike("cov", m)
  if ddof is not None and not isinstance(ddof, int):
    raise ValueError("ddof must be integer")
  x = jnp.atleast_2d(m)
  if get_aval(x).ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  if get_aval(jnp.asarray(m)).ndim == 1:
    rowvar = True
  if not rowvar and get_aval(x).shape[0] != 1:
    x = x.T
  if get_aval(x).shape[0] == 0:
    return jnp.array([]).reshape(0, 0)
  if y is not None:
    y = jnp.atleast_2d(y)
    if not rowvar and get_aval(y).shape[0] != 1:
      y = y.T
    x = jnp.concatenate([x, y], axis=0)
  dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(get_aval(x).dtype))
  x = x.astype(dtype)
  if ddof is None:
    ddof = 1 if not bias else 0
  n = get_aval(x).shape[1]
  w = None
  if fweights is not None:
    w = jnp.asarray(fweights)
  if aweights is not None:
    aw = jnp.asarray(aweights)
    w = aw if w is None else w * aw
  if w is None:
    avg = jnp.mean(x, axis=1)
    fact = n - ddof
  else:
    w = w.astype(dtype)
    w_sum = jnp.sum(w)
    avg = jnp.sum(x * w, axis=1) / w_sum
    if ddof == 0:
      fact = w_sum
    elif aweights is None:
      fact = w_sum - ddof
    else:
      fact = w_sum - ddof * jnp.sum(w * jnp.asarray(aweights)) / w_sum
  xc = x - avg[:, None]
  xw = xc if w is None else xc * w
  c = jnp.dot(xw, jnp.conj(xc).T) / fact
  return jnp.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
  """Pearson correlation coefficients (``cov`` normalized by the standard deviations)."""
  util.check_arraylike("corrcoef", x)
  c = cov(x, y, rowvar)
  if get_aval(c).ndim == 0:
    return c / c
  d = jnp.diag(c)
  stddev = jnp.sqrt(jnp.real(d)).astype(get_aval(c).dtype)
  c = c / stddev[:, None] / stddev[None, :]
  if dtypes.is_complex(get_aval(c).dtype):
    return lax.complex(jnp.clip(jnp.real(c), -1, 1), jnp.clip(jnp.imag(c), -1, 1))
  return jnp.clip(c, -1, 1)


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integral of ``y`` along ``axis`` by the trapezoidal rule."""
  util.check_arraylike("trapezoid", y)
  y = jnp.asarray(y)
  if x is None:
    y, = util.promote_dtypes_inexact(y)
    dx_arr = dx
  else:
    y, x = util.promote_dtypes_inexact(y, jnp.asarray(x))
    if get_aval(x).ndim == 1:
      dx_arr = jnp.diff(x)
    else:
      dx_arr = jnp.moveaxis(jnp.diff(x, axis=axis), axis, -1)
  y = jnp.moveaxis(y, axis, -1)
  return 0.5 * jnp.sum(dx_arr * (y[..., 1:] + y[..., :-1]), axis=-1) if x is not None else \
      0.5 * dx_arr * jnp.sum(y[..., 1:] + y[..., :-1], axis=-1)


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf",
                     "averaged_inverted_cdf", "closest_observation",
                     "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
                     "normal_unbiased")


def _quantile(name, a, q, axis, method, keepdims, squash_nans):
  util.check_arraylike(name, a, q)
  if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
    raise ValueError(f"{name}: method={method!r} is not supported; use one of "
                     "linear, lower, higher, midpoint, nearest")
  a = jnp.asarray(a)
  q = jnp.asarray(q)
  if dtypes.is_complex(get_aval(a).dtype) or dtypes.is_complex(get_aval(q).dtype):
    raise ValueError(f"{name} does not support complex input")
  if get_aval(q).ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
  a, q = util.promote_dtypes_inexact(a, q)
  nd = get_aval(a).ndim
  if axis is None:
    dims = tuple(builtins.range(nd))
  else:
    dims = util.canonicalize_axis_tuple(axis, nd, name)
  keep_shape = tuple(1 if i in dims else d for i, d in enumerate(get_aval(a).shape))
  rest = [i for i in builtins.range(nd) if i not in dims]
  a = jnp.transpose(a, rest + list(dims))
  out_shape = get_aval(a).shape[:len(rest)]
  a = jnp.reshape(a, out_shape + (-1,))
  n = get_aval(a).shape[-1]
  a = jnp.sort(a, axis=-1)  # NaNs last
  if squash_nans:
    counts = jnp.sum(jnp.logical_not(jnp.isnan(a)), axis=-1, keepdims=True).astype(q.dtype)
  else:
    counts = jnp.full(out_shape + (1,), n, q.dtype)
  qq = jnp.reshape(q, (-1,))  # (nq,)
  pos = qq * (counts - 1)  # (..., nq)
  low = jnp.floor(pos)
  high = jnp.ceil(pos)
  frac = pos - low
  maxi = jnp.maximum(counts - 1, 0)
  low_i = jnp.clip(low, 0, maxi).astype(np.int32)
  high_i = jnp.clip(high, 0, maxi).astype(np.int32)
  lo_v = jnp.take_along_axis(a, low_i, axis=-1)
  hi_v = jnp.take_along_axis(a, high_i, axis=-1)
  if method == "linear":
    result = lo_v * (1 - frac) + hi_v * frac
  elif method == "lower":
    result = lo_v
  elif method == "higher":
    result = hi_v
  elif method == "midpoint":
    result = 0.5 * (lo_v + hi_v)
  else:  # nearest: round half to even, as NumPy
    near = jnp.clip(jnp.round(pos), 0, maxi).astype(np.int32)
    result = jnp.take_along_axis(a, near, axis=-1)
  if not squash_nans:
    any_nan = jnp.any(jnp.isnan(a), axis=-1, keepdims=True)
    result = jnp.where(any_nan, jnp.nan, result)
  else:
    result = jnp.where(counts == 0, jnp.nan, result)
  # result: out_shape + (nq,) -> (nq,) + out_shape
  result = jnp.moveaxis(result, -1, 0)
  if keepdims:
    result = jnp.reshape(result, get_aval(result).shape[:1] + keep_shape)
  if get_aval(q).ndim == 0:
    result = result[0]
  return result


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, interpolation=None):
  """The ``q``-th quantiles (``q`` in [0, 1]) of ``a`` along ``axis``."""
  _check_quantile_args("quantile", out, overwrite_input, interpolation)
  return _quantile("quantile", a, q, axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, interpolation=None):
  """``quantile`` ignoring NaNs."""
  _check_quantile_args("nanquantile", out, overwrite_input, interpolation)
  return _quantile("nanquantile", a, q, axis, method, keepdims, True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, interpolation=None):
  """The ``q``-th percentiles (``q`` in [0, 100]) of ``a`` along ``axis``."""
  _check_quantile_args("percentile", out, overwrite_input, interpolation)
  util.check_arraylike("percentile", a, q)
  q = jnp.true_divide(q, 100.0)
  return _quantile("percentile", a, q, axis, method, keepdims, False)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, interpolation=None):
  """``percentile`` ignoring NaNs."""
  _check_quantile_args("nanpercentile", out, overwrite_input, interpolation)
  util.check_arraylike("nanpercentile", a, q)
  q = jnp.true_divide(q, 100.0)
  return _quantile("nanpercentile", a, q, axis, method, keepdims, True)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median of ``a`` along ``axis``, ignoring NaNs."""
  _check_quantile_args("nanmedian", out, overwrite_input, None)
  return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


def _check_quantile_args(name, out, overwrite_input, interpolation):
  if out is not None:
    raise ValueError(f"{name}: the 'out' argument is not supported")
  if overwrite_input:
    raise ValueError(f"{name}: overwrite_input=True is not supported")
  if interpolation is not None:
    raise TypeError(f"{name}: the 'interpolation' argument is removed; use 'method'")


# --- integer and float helpers -------------------------------------------------------------

def gcd(x1, x2, /):
  """Greatest common divisor of integers (elementwise, non-negative)."""
  util.check_arraylike("gcd", x1, x2)
  if not all(dtypes.is_int(dtypes.dtype_of(x)) for x in (x1, x2)):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  x1, x2 = util.promote_args_numeric("gcd", x1, x2)
  a, b = jnp.abs(x1), jnp.abs(x2)
  a, b = jnp.broadcast_arrays(a, b)
  def cond(c):
    return jnp.any(c[1] != 0)
  def body(c):
    x, y = c
    nz = y != 0
    safe_y = jnp.where(nz, y, 1)
    return jnp.where(nz, y, x), jnp.where(nz, x % safe_y, 0)
  return lax.while_loop(cond, body, (a, b))[0]


def lcm(x1, x2, /):
  """Least common multiple of integers (elementwise, non-negative)."""
  util.check_arraylike("lcm", x1, x2)
  if not all(dtypes.is_int(dtypes.dtype_of(x)) for x in (x1, x2)):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  x1, x2 = util.promote_args_numeric("lcm", x1, x2)
  d = gcd(x1, x2)
  return jnp.where(d == 0, jnp.zeros_like(d), jnp.abs(jnp.multiply(x1, jnp.floor_divide(
      x2, jnp.where(d == 0, 1, d)))))


def ldexp(x1, x2, /):
  """``x1 * 2 ** x2`` (``x2`` integer)."""
  util.check_arraylike("ldexp", x1, x2)
  x2 = jnp.asarray(x2)
  if not dtypes.is_int(get_aval(x2).dtype) and get_aval(x2).dtype != np.bool_:
    raise ValueError(f"ldexp: x2 must be an integer array, got dtype {x2.dtype}")
  x1, = util.promote_dtypes_inexact(jnp.asarray(x1) if not isinstance(x1, (int, float))
                                    else x1)
  x1 = jnp.asarray(x1)
  dtype = get_aval(x1).dtype
  # Two steps so that 2**x2 itself neither overflows nor underflows too early.
  half = jnp.floor_divide(x2, 2)
  two = jnp.asarray(2, dtype)
  return x1 * jnp.power(two, half.astype(dtype)) * jnp.power(two, (x2 - half).astype(dtype))


def frexp(x, /):
  """Mantissa in [0.5, 1) and integer exponent with ``x == mantissa * 2 ** exponent``."""
  util.check_arraylike("frexp", x)
  x, = util.promote_dtypes_inexact(jnp.asarray(x))
  if dtypes.is_complex(get_aval(x).dtype):
    raise TypeError("frexp does not support complex-valued inputs")
  finite = jnp.isfinite(x) & (x != 0)
  safe = jnp.where(finite, jnp.abs(x), 1)
  e = jnp.floor(jnp.log2(safe)).astype(np.int32) + 1
  # Scale by 2**-e in two halves: for subnormals 2**-e alone overflows.
  two = jnp.asarray(2, get_aval(x).dtype)
  half = e // 2
  m = x * jnp.power(two, (-half).astype(two.dtype)) * jnp.power(two, (half - e).astype(two.dtype))
  # log2 can be off by one near powers of two: correct to keep |m| in [0.5, 1).
  too_big = jnp.abs(m) >= 1
  too_small = jnp.abs(m) < 0.5
  m = jnp.where(too_big, m / 2, jnp.where(too_small, m * 2, m))
  e = jnp.where(too_big, e + 1, jnp.where(too_small, e - 1, e))
  return jnp.where(finite, m, x), jnp.where(finite, e, 0)


def spacing(x, /):
  """Distance from ``x`` to the next representable value away from zero."""
  util.check_arraylike("spacing", x)
  x, = util.promote_dtypes_inexact(jnp.asarray(x))
  dtype = get_aval(x).dtype
  inf = jnp.asarray(np.inf, dtype)
  return jnp.where(jnp.isnan(x), x, jnp.nextafter(x, jnp.where(x >= 0, inf, -inf)) - x)


# --- predicates and small utilities --------------------------------------------------------

def array_equal(a1, a2, equal_nan=False):
  """Whether the arrays have the same shape and entries (a bool Array)."""
  try:
    a1, a2 = jnp.asarray(a1), jnp.asarray(a2)
  except Exception:
    return jnp.asarray(False)
  if get_aval(a1).shape != get_aval(a2).shape:
    return jnp.asarray(False)
  eq = a1 == a2
  if equal_nan:
    eq = eq | (jnp.isnan(a1) & jnp.isnan(a2))
  return jnp.all(eq)


def array_equiv(a1, a2):
  """Whether the arrays broadcast together and are equal everywhere."""
  try:
    a1, a2 = jnp.asarray(a1), jnp.asarray(a2)
    util.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
  except Exception:
    return jnp.asarray(False)
  return jnp.all(a1 == a2)


def isscalar(element):
  """True for Python/NumPy scalars and 0-d arrays."""
  if hasattr(element, "__jax_array__"):
    element = element.__jax_array__()
  if isinstance(element, (bool, int, float, complex, np.generic)):
    return True
  aval = getattr(element, "aval", None)
  if aval is not None:
    return aval.ndim == 0
  return isinstance(element, np.ndarray) and element.ndim == 0


def iterable(y):
  """Whether ``iter(y)`` works."""
  try:
    iter(y)
  except TypeError:
    return False
  return True


def iscomplexobj(x):
  """Whether ``x`` has a complex dtype."""
  if x is None:
    return False
  try:
    dtype = x.dtype
  except AttributeError:
    dtype = jnp.result_type(x)
  return dtypes.is_complex(dtype)


def isrealobj(x):
  """Whether ``x`` does not have a complex dtype."""
  return not iscomplexobj(x)


def iscomplex(x):
  """Elementwise: a non-zero imaginary part."""
  util.check_arraylike("iscomplex", x)
  i = jnp.imag(x)
  return i != (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


def isreal(x):
  """Elementwise: a zero imaginary part."""
  util.check_arraylike("isreal", x)
  i = jnp.imag(x)
  return i == (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


def copy(a, order=None):
  """A copy of ``a`` (arrays are immutable, so this is ``asarray(a)`` with a fresh buffer)."""
  util.check_arraylike("copy", a)
  return jnp.array(a, copy=True, order=order)


def rollaxis(a, axis, start=0):
  """Move ``axis`` to position ``start`` (NumPy's older spelling of ``moveaxis``)."""
  util.check_arraylike("rollaxis", a)
  a = jnp.asarray(a)
  nd = get_aval(a).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "rollaxis")[0]
  start = operator.index(start)
  if not -nd <= start <= nd:
    raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
  if start < 0:
    start += nd
  if start > axis:
    start -= 1
  return jnp.moveaxis(a, axis, start)


def unstack(x, /, *, axis=0):
  """The slices of ``x`` along ``axis``, as a tuple."""
  util.check_arraylike("unstack", x)
  x = jnp.asarray(x)
  if get_aval(x).ndim == 0:
    raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                     "passed.")
  x = jnp.moveaxis(x, axis, 0)
  return tuple(x[i] for i in builtins.range(get_aval(x).shape[0]))


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """``arr`` without the entries (or slices along ``axis``) selected by ``obj``."""
  util.check_arraylike("delete", arr)
  a = jnp.asarray(arr)
  if axis is None:
    a = jnp.ravel(a)
    axis = 0
  nd = get_aval(a).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "delete")[0]
  n = get_aval(a).shape[axis]
  if isinstance(obj, slice):
    keep = np.ones(n, bool)
    keep[obj] = False
  else:
    idx = _concrete("delete", obj)
    if idx.dtype == np.bool_:
      if idx.shape != (n,):
        raise ValueError(f"np.delete(arr, obj): for boolean indices, obj must be one-dimensional"
                         f" with length matching specified axis.")
      keep = ~idx
    else:
      if not np.issubdtype(idx.dtype, np.integer) and idx.size:
        raise ValueError("np.delete(arr, obj): index must be an integer or a boolean array")
      idx = np.atleast_1d(idx).astype(np.int64)
      if np.any((idx < -n) | (idx >= n)):
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
      keep = np.ones(n, bool)
      keep[idx] = False
  return jnp.take(a, jnp.asarray(np.nonzero(keep)[0].astype(np.int32)), axis=axis)


def resize(a, new_shape):
  """``ravel(a)`` repeated (or cut) to fill ``new_shape``."""
  util.check_arraylike("resize", a)
  new_shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else tuple(
      operator.index(d) for d in new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  a = jnp.ravel(a)
  size = math.prod(new_shape)
  n = get_aval(a).shape[0]
  if n == 0 or size == 0:
    return jnp.zeros(new_shape, get_aval(a).dtype)
  reps = -(-size // n)
  return jnp.reshape(jnp.tile(a, reps)[:size], new_shape)


def put(a, ind, v, mode=None, *, inplace=True):
  """``a`` with the flat positions ``ind`` set to ``v`` (``inplace=False`` is required)."""
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("put", a, ind, v)
  a = jnp.asarray(a)
  ind = jnp.ravel(jnp.asarray(ind))
  v = jnp.ravel(jnp.asarray(v))
  if get_aval(ind).shape[0] == 0 or get_aval(v).shape[0] == 0:
    return a
  if get_aval(v).shape[0] != get_aval(ind).shape[0]:
    v = resize(v, get_aval(ind).shape)
  size = math.prod(get_aval(a).shape)
  if mode is None or mode == "fill":
    scatter_mode = "drop"
  elif mode == "clip":
    ind, scatter_mode = jnp.clip(ind, 0, size - 1), "promise_in_bounds"
  elif mode == "wrap":
    ind, scatter_mode = ind % size, "promise_in_bounds"
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  flat = jnp.ravel(a).at[ind].set(v.astype(get_aval(a).dtype), mode=scatter_mode)
  return jnp.reshape(flat, get_aval(a).shape)


def trim_zeros(filt, trim="fb"):
  """``filt`` (1-d, concrete) without its leading (``'f'``) and/or trailing (``'b'``) zeros."""
  util.check_arraylike("trim_zeros", filt)
  value = _concrete("trim_zeros", filt)
  if value.ndim != 1:
    raise TypeError(f"'filt' must be 1-D array, but received {value.ndim}-D array.")
  nz = np.nonzero(value)[0]
  if nz.size == 0:
    return jnp.asarray(filt)[:0]
  start = nz[0] if "f" in trim.lower() else 0
  end = nz[-1] + 1 if "b" in trim.lower() else len(value)
  return jnp.asarray(filt)[start:end]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """``func1d`` applied to the 1-d slices of ``arr`` along ``axis`` (by ``vmap``)."""
  from hlox import api
  util.check_arraylike("apply_along_axis", arr)
  arr = jnp.asarray(arr)
  nd = get_aval(arr).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "apply_along_axis")[0]
  func = lambda x: func1d(x, *args, **kwargs)
  for i in builtins.range(1, nd - axis):
    func = api.vmap(func, in_axes=i, out_axes=-1)
  for i in builtins.range(axis):
    func = api.vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func, a, axes):
  """``func(a, axis)`` applied for each axis in turn, keeping the reduced dimensions."""
  util.check_arraylike("apply_over_axes", a)
  a = jnp.asarray(a)
  for axis in axes:
    b = func(a, axis)
    if get_aval(b).ndim == get_aval(a).ndim - 1:
      b = jnp.expand_dims(b, axis)
    a = b
  return a


class vectorize:
  """NumPy's ``vectorize`` built on ``vmap``: ``pyfunc`` is mapped over the leading
  (broadcast) dimensions of its array arguments; ``signature`` gives core dimensions."""

  def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
    self.pyfunc = pyfunc
    self.excluded = excluded
    self.signature = signature
    self.__doc__ = getattr(pyfunc, "__doc__", None)
    self.__name__ = getattr(pyfunc, "__name__", "vectorized")

  def __call__(self, *args, **kwargs):
    from hlox import api
    excluded = {i for i in self.excluded if isinstance(i, int)}
    kw_excluded = {k for k in self.excluded if isinstance(k, str)}
    static_kwargs = {k: v for k, v in kwargs.items() if k in kw_excluded}
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in kw_excluded}
    if dyn_kwargs:
      # Keyword arguments are mapped like positional ones.
      names = list(dyn_kwargs)
      n_pos = len(args)
      def with_kwargs(*all_args):
        return self.pyfunc(*all_args[:n_pos], **dict(zip(names, all_args[n_pos:])),
                           **static_kwargs)
      return vectorize(with_kwargs, excluded=self.excluded, signature=self.signature)(
          *args, *dyn_kwargs.values())
    dyn_idx = [i for i in builtins.range(len(args)) if i not in excluded]
    dyn_args = [jnp.asarray(args[i]) for i in dyn_idx]
    if self.signature is None:
      core_in = [()] * len(dyn_args)
      core_out = None
    else:
      core_in, core_out = _parse_signature(self.signature)
      if len(core_in) != len(dyn_args):
        raise TypeError(f"wrong number of positional arguments: expected {len(core_in)}, got "
                        f"{len(dyn_args)}")
    def call(*dyn):
      full = list(args)
      for i, v in zip(dyn_idx, dyn):
        full[i] = v
      return self.pyfunc(*full, **static_kwargs)
    # Broadcast the loop dimensions of every argument together.
    loop_shapes = []
    for a, core in zip(dyn_args, core_in):
      nd_core = len(core)
      shape = get_aval(a).shape
      if len(shape) < nd_core:
        raise ValueError(f"input with shape {shape} does not have enough dimensions for "
                         f"its core dimensions {core}")
      loop_shapes.append(shape[:len(shape) - nd_core])
    loop_shape = util.broadcast_shapes(*loop_shapes) if loop_shapes else ()
    bargs = []
    for a, core, ls in zip(dyn_args, core_in, loop_shapes):
      core_shape = get_aval(a).shape[len(ls):]
      bargs.append(jnp.broadcast_to(a, loop_shape + core_shape))
    f = call
    for _ in builtins.range(len(loop_shape)):
      f = api.vmap(f)
    return f(*bargs)


def _parse_signature(signature):
  import re
  m = re.fullmatch(r"\s*(.*?)\s*->\s*(.*?)\s*", signature)
  if m is None:
    raise ValueError(f"not a valid gufunc signature: {signature}")
  def parse(s):
    return [tuple(d.strip() for d in g.split(",") if d.strip())
            for g in re.findall(r"\(([^()]*)\)", s)]
  return parse(m.group(1)), parse(m.group(2))


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """``function(*indices)`` evaluated on the index grids of ``shape``."""
  from hlox import api
  shape = tuple(operator.index(d) for d in shape)
  f = lambda *idx: function(*idx, **kwargs)
  for i in builtins.range(len(shape) - 1, -1, -1):
    f = api.vmap(f, in_axes=tuple(0 if j == i else None for j in builtins.range(len(shape))))
  return f(*(jnp.arange(d, dtype=dtype) for d in shape))


def block(arrays):
  """Assemble an array from nested lists of blocks (the innermost list joins the last axis)."""
  def depth(x):
    return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)
  if isinstance(arrays, tuple):
    raise TypeError("jax.numpy.block does not allow tuples, got " + str(arrays))
  d = depth(arrays)
  def max_ndim(x):
    if isinstance(x, list):
      return builtins.max((max_ndim(y) for y in x), default=0)
    return get_aval(jnp.asarray(x)).ndim
  nd = builtins.max(max_ndim(arrays), d)
  def rec(x, level):
    if isinstance(x, list):
      if not x:
        raise ValueError("Lists cannot be empty")
      parts = [rec(y, level + 1) for y in x]
      return jnp.concatenate(parts, axis=-(d - level))
    x = jnp.asarray(x)
    return jnp.reshape(x, (1,) * (nd - get_aval(x).ndim) + get_aval(x).shape)
  return rec(arrays, 0)


# --- window functions ----------------------------------------------------------------------

def _window(M, fn):
  M = operator.index(M)
  dtype = dtypes.default_float_dtype()
  if M <= 0:
    return jnp.zeros(0, dtype)
  if M == 1:
    return jnp.ones(1, dtype)
  n = jnp.arange(M, dtype=dtype)
  return fn(n, M)


def hanning(M):
  """The Hann window of ``M`` points."""
  return _window(M, lambda n, M: 0.5 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1)))


def hamming(M):
  """The Hamming window of ``M`` points."""
  return _window(M, lambda n, M: 0.54 - 0.46 * jnp.cos(2 * np.pi * n / (M - 1)))


def blackman(M):
  """The Blackman window of ``M`` points."""
  return _window(M, lambda n, M: 0.42 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1)) +
                 0.08 * jnp.cos(4 * np.pi * n / (M - 1)))


def bartlett(M):
  """The Bartlett (triangular) window of ``M`` points."""
  return _window(M, lambda n, M: 1 - jnp.abs(2 * n - M + 1) / (M - 1))


def i0(x):
  """Modified Bessel function of the first kind, order 0 (power series)."""
  util.check_arraylike("i0", x)
  x, = util.promote_dtypes_inexact(jnp.asarray(x))
  if dtypes.is_complex(get_aval(x).dtype):
    raise ValueError("i0 does not support complex-valued inputs")
  dtype = get_aval(x).dtype
  if dtype.itemsize < 4:  # sum the series in float32, then round once
    return i0(x.astype(np.float32)).astype(dtype)
  ax = jnp.abs(x)
  # Small: the series sum (x/2)^(2k) / (k!)^2; large: the asymptotic expansion.
  y = (ax / 2) ** 2
  term = jnp.ones_like(ax)
  total = jnp.ones_like(ax)
  for k in builtins.range(1, 40):
    term = term * y / (k * k)
    total = total + term
  safe = jnp.where(ax > 30, ax, 30.0)
  big = jnp.exp(safe) / jnp.sqrt(2 * np.pi * safe) * (
      1 + 1 / (8 * safe) + 9 / (128 * safe ** 2) + 225 / (3072 * safe ** 3))
  return jnp.where(ax > 30, big, total)


def kaiser(M, beta):
  """The Kaiser window of ``M`` points with shape parameter ``beta``."""
  M = operator.index(M)
  dtype = dtypes.default_float_dtype()
  if M <= 0:
    return jnp.zeros(0, dtype)
  if M == 1:
    return jnp.ones(1, dtype)
  n = jnp.arange(M, dtype=dtype)
  alpha = (M - 1) / 2.0
  return i0(beta * jnp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(jnp.asarray(beta, dtype))


# --- products (NumPy 2 names) --------------------------------------------------------------

def matvec(x1, x2, /):
  """Batched matrix-vector product: ``x1[..., i, j] * x2[..., j]`` summed over ``j``."""
  util.check_arraylike("matvec", x1, x2)
  return jnp.matmul(x1, jnp.asarray(x2)[..., None])[..., 0]


def vecmat(x1, x2, /):
  """Batched vector-matrix product: ``conj(x1[..., j]) * x2[..., j, i]`` summed over ``j``."""
  util.check_arraylike("vecmat", x1, x2)
  return jnp.matmul(jnp.conj(jnp.asarray(x1))[..., None, :], x2)[..., 0, :]


from hlox.numpy import dtypes_api as _dt  # noqa: E402

single, double = _dt.float32, _dt.float64
csingle, cdouble = _dt.complex64, _dt.complex128
uint = _dt.uint64
