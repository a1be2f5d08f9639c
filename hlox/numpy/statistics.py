"""Statistics: histograms (``bincount``, ``histogram``, ``histogram_bin_edges``),
covariance and correlation (``cov``, ``corrcoef``) and order statistics (``quantile``,
``percentile`` and their NaN-ignoring forms, ``nanmedian``). Means and variances are
reductions (``reductions.py``).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes, sharding_types
from hlox.core.shape_poly import canonical_dim
from hlox.core.tracer import Tracer, get_aval
from hlox.numpy import (calculus, creation, indexing, products, reductions, searching, shapes,
                        sorting, ufuncs, util)

__all__ = ["bincount", "histogram", "histogram_bin_edges", "cov", "corrcoef", "quantile",
           "percentile", "nanquantile", "nanpercentile", "nanmedian"]


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
  """Count the occurrences of each non-negative integer in ``x``.

  The result's length is ``max(max(x) + 1, minlength)``, which needs a concrete ``x``; under
  ``jit`` pass ``length``. Negative entries are not counted, and entries at or past ``length``
  are dropped.

  Args:
    x: 1-d array-like of integers.
    weights: optional array-like of ``x``'s shape: each entry adds its weight instead of 1.
    minlength: the least length of the result.
    length: keyword-only static length of the result (overrides the computed one).
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    A 1-d array: of the default integer dtype, or of ``weights``' dtype when given.

  Examples:
    >>> jnp.bincount(jnp.array([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int32)
    >>> jnp.bincount(jnp.array([0, 1, 1]), weights=jnp.array([0.5, 1., 2.]), length=4)
    Array([0.5, 3. , 0. , 0. ], dtype=float32)
  """
  util.check_arraylike("bincount", x)
  x = creation.asarray(x)
  if not dtypes.is_int(get_aval(x).dtype) and get_aval(x).dtype != np.bool_:
    raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
  if get_aval(x).ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = operator.index(minlength)
  if minlength < 0:
    raise ValueError(f"minlength must be non-negative; got {minlength}")
  if length is None:
    value = util.concrete_value("bincount (without length=)", x)
    length = builtins.max(minlength, int(value.max()) + 1 if value.size else 0)
  else:
    length = canonical_dim(length)
  if weights is None:
    weights = creation.ones(get_aval(x).shape, util.index_dtype())
  else:
    weights = creation.asarray(weights)
    if get_aval(weights).dtype == np.bool_:
      weights = weights.astype(util.index_dtype())
  idx = ufuncs.clip(x, 0, None)  # negative entries count toward bin 0, as in JAX
  return creation.zeros(length, get_aval(weights).dtype).at[idx].add(
      weights, mode="drop", out_sharding=out_sharding)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """The edges of equal-width histogram bins.

  Args:
    a: array-like data (flattened).
    bins: the number of bins, or a 1-d array of edges (returned as they are). String
      estimators raise ``NotImplementedError``.
    range: optional ``(lower, upper)`` bounds (default: the minimum and maximum of ``a``;
      an empty range is widened by 0.5 on either side).
    weights: unused; accepted for NumPy compatibility.

  Returns:
    A 1-d array of ``bins + 1`` edges, of a floating dtype.

  Examples:
    >>> jnp.histogram_bin_edges(jnp.array([1, 2, 5]), bins=4)
    Array([1., 2., 3., 4., 5.], dtype=float32)
  """
  util.check_arraylike("histogram_bin_edges", a)
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  a = shapes.ravel(a)
  dtype = dtypes.to_inexact_dtype(get_aval(a).dtype)
  dtype = dtypes.canonicalize_dtype(dtype)
  if get_aval(creation.asarray(bins)).ndim == 1:
    return creation.asarray(bins, dtype=dtype)
  bins = operator.index(bins)
  if range is None:
    lo, hi = reductions.min(a), reductions.max(a)
  else:
    lo, hi = range
    if np.ndim(lo) == 0 and np.ndim(hi) == 0 and not isinstance(lo, Tracer) and \
        not isinstance(hi, Tracer) and lo > hi:
      raise ValueError("max must be larger than min in range parameter.")
    lo, hi = creation.asarray(lo), creation.asarray(hi)
  lo, hi = lo.astype(dtype), hi.astype(dtype)
  # An empty range widens to +/- 0.5, as NumPy does.
  same = lo == hi
  lo = ufuncs.where(same, lo - 0.5, lo)
  hi = ufuncs.where(same, hi + 0.5, hi)
  return creation.linspace(lo, hi, bins + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """Histogram of the values of ``a``.

  Bins are half-open ``[edge_i, edge_i+1)``, except the last one, which includes its right
  edge. Values outside the range are not counted.

  Args:
    a: array-like data (flattened).
    bins: the number of equal-width bins, or a 1-d array of monotonically increasing edges.
    range: optional ``(lower, upper)`` bounds (default: the minimum and maximum of ``a``).
    weights: optional array-like of ``a``'s shape: each value adds its weight instead of 1.
    density: if True, normalize the counts so that the histogram integrates to 1.

  Returns:
    A tuple ``(counts, bin_edges)`` of 1-d arrays of floating dtype, of lengths ``bins`` and
    ``bins + 1``.

  Examples:
    >>> counts, edges = jnp.histogram(jnp.array([1, 2, 2, 3, 5]), bins=4)
    >>> counts
    Array([1., 2., 1., 1.], dtype=float32)
    >>> edges
    Array([1., 2., 3., 4., 5.], dtype=float32)
  """
  util.check_arraylike("histogram", a)
  if weights is not None and get_aval(creation.asarray(weights)).shape != get_aval(
      creation.asarray(a)).shape:
    raise ValueError("weights should have the same shape as a.")
  edges = histogram_bin_edges(a, bins, range, weights)
  a = shapes.ravel(a)
  w = (creation.ones(get_aval(a).shape, get_aval(edges).dtype) if weights is None
       else shapes.ravel(weights))
  nbins = get_aval(edges).shape[0] - 1
  bin_idx = searching.searchsorted(edges, a, side="right")
  bin_idx = ufuncs.where(a == edges[-1], nbins, bin_idx)
  # Out-of-range entries (index 0 or nbins + 1) go to scratch bins that are dropped.
  counts = creation.zeros(nbins + 2, get_aval(w).dtype).at[bin_idx].add(w)[1:-1]
  if density:
    widths = calculus.diff(edges)
    counts = counts / widths / reductions.sum(counts)
  return counts, edges


def _check_inexact_dtype(name, dtype):
  if dtype is not None and not (dtypes.is_float(np.dtype(dtype)) or
                                dtypes.is_complex(np.dtype(dtype))):
    raise ValueError(f"{name}: dtype must be a subclass of float or complex; got "
                     f"dtype={np.dtype(dtype).name}")


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """Covariance matrix of a set of variables.

  Args:
    m: 1-d or 2-d array-like: each row (with ``rowvar``) or column is a variable, each
      column (or row) an observation.
    y: optional second set of variables, stacked below those of ``m``.
    rowvar: whether the rows of ``m`` are the variables.
    bias: if True, normalize by ``N`` instead of ``N - 1``.
    ddof: optional degrees-of-freedom correction, overriding ``bias``.
    fweights: optional 1-d integer frequency weights, one per observation.
    aweights: optional 1-d observation weights.
    dtype: optional inexact dtype to compute in.

  Returns:
    A ``(V, V)`` array for ``V`` variables (a scalar array for a single variable), of a
    floating dtype.

  Examples:
    >>> x = jnp.array([[0., 1., 2.], [2., 1., 0.]])
    >>> jnp.cov(x)
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    >>> jnp.cov(jnp.array([1., 2., 4.]))
    Array(2.3333333, dtype=float32)
  """
  util.check_arraylike("cov", m)
  if ddof is not None and not isinstance(ddof, int):
    raise ValueError("ddof must be integer")
  _check_inexact_dtype("cov", dtype)
  x = shapes.atleast_2d(m)
  if get_aval(x).ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  # NumPy >= 2.2 transposes every 2-d ``m`` when ``rowvar`` is False, a single row
  # included; only a 1-d ``m`` (always one variable) stays as it is.
  if not rowvar and get_aval(creation.asarray(m)).ndim != 1:
    x = x.T
  if get_aval(x).shape[0] == 0:
    return creation.array([]).reshape(0, 0)
  if y is not None:
    y = shapes.atleast_2d(y)
    if not rowvar and get_aval(y).shape[0] != 1:
      y = y.T
    x = shapes.concatenate([x, y], axis=0)
  if dtype is None:
    dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(get_aval(x).dtype))
  else:
    dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  x = x.astype(dtype)
  if get_aval(x).shape[1] == 0:  # no observations: NaN, as NumPy (which also warns)
    k = get_aval(x).shape[0]
    return creation.full(() if k == 1 else (k, k), np.nan, dtype=dtype)
  if ddof is None:
    ddof = 1 if not bias else 0
  n = get_aval(x).shape[1]
  w = None
  if fweights is not None:
    w = creation.asarray(fweights)
  if aweights is not None:
    aw = creation.asarray(aweights)
    w = aw if w is None else w * aw
  if w is None:
    avg = reductions.mean(x, axis=1)
    fact = n - ddof
  else:
    w = w.astype(dtype)
    w_sum = reductions.sum(w)
    avg = reductions.sum(x * w, axis=1) / w_sum
    if ddof == 0:
      fact = w_sum
    elif aweights is None:
      fact = w_sum - ddof
    else:
      fact = w_sum - ddof * reductions.sum(w * creation.asarray(aweights)) / w_sum
  xc = x - avg[:, None]
  xw = xc if w is None else xc * w
  c = products.dot(xw, ufuncs.conj(xc).T) / fact
  return shapes.squeeze(c)


def corrcoef(x, y=None, rowvar=True, dtype=None):
  """Pearson correlation coefficients: ``cov`` normalized by the standard deviations.

  Args:
    x: 1-d or 2-d array-like of variables (as for ``cov``).
    y: optional second set of variables.
    rowvar: whether the rows of ``x`` are the variables.
    dtype: optional inexact dtype to compute in.

  Returns:
    A ``(V, V)`` array of coefficients in ``[-1, 1]``, of a floating dtype.

  Examples:
    >>> jnp.corrcoef(jnp.array([[1., 2., 3.], [3., 1., 2.]]))
    Array([[ 1. , -0.5],
           [-0.5,  1. ]], dtype=float32)
  """
  util.check_arraylike("corrcoef", x)
  _check_inexact_dtype("corrcoef", dtype)
  c = cov(x, y, rowvar, dtype=dtype)
  if get_aval(c).ndim == 0:
    return c / c
  d = creation.diag(c)
  stddev = ufuncs.sqrt(ufuncs.real(d)).astype(get_aval(c).dtype)
  c = c / stddev[:, None] / stddev[None, :]
  if dtypes.is_complex(get_aval(c).dtype):
    return lax.complex(ufuncs.clip(ufuncs.real(c), -1, 1), ufuncs.clip(ufuncs.imag(c), -1, 1))
  return ufuncs.clip(c, -1, 1)


_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf",
                     "averaged_inverted_cdf", "closest_observation",
                     "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
                     "normal_unbiased")


def _quantile(name, a, q, axis, method, keepdims, squash_nans, weights=None):
  util.check_arraylike(name, a, q)
  if method not in ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"):
    raise ValueError(f"{name}: method={method!r} is not supported; use one of "
                     "linear, lower, higher, midpoint, nearest, inverted_cdf")
  a = creation.asarray(a)
  q = creation.asarray(q)
  if dtypes.is_complex(get_aval(a).dtype) or dtypes.is_complex(get_aval(q).dtype):
    raise ValueError(f"{name} does not support complex input")
  if get_aval(q).ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
  nd = get_aval(a).ndim
  if axis is None:
    dims = tuple(builtins.range(nd))
  else:
    dims = util.canonicalize_axis_tuple(axis, nd, name)
  if weights is not None:
    a, weights = _check_quantile_weights(name, a, weights, axis, dims, method)
  else:
    # The result takes a's inexact dtype alone (as JAX): q is computed in it.
    a, = util.promote_dtypes_inexact(a)
  q = lax.convert_element_type(q, get_aval(a).dtype)
  # keepdims of a 0-d input gives shape (1,), as JAX (which ravels first).
  keep_shape = tuple(1 if i in dims else d for i, d in enumerate(get_aval(a).shape)) or (1,)
  rest = [i for i in builtins.range(nd) if i not in dims]
  a = shapes.transpose(a, rest + list(dims))
  out_shape = get_aval(a).shape[:len(rest)]
  a = shapes.reshape(a, out_shape + (-1,))
  n = get_aval(a).shape[-1]
  if weights is None:
    a = sorting.sort(a, axis=-1)  # NaNs last
  else:
    weights = shapes.reshape(shapes.transpose(weights, rest + list(dims)), out_shape + (-1,))
    order = sorting.argsort(a, axis=-1)  # NaNs last; the weights follow their values
    a = indexing.take_along_axis(a, order, axis=-1)
    weights = indexing.take_along_axis(weights, order, axis=-1)
  if squash_nans:
    counts = reductions.sum(ufuncs.logical_not(ufuncs.isnan(a)), axis=-1,
                            keepdims=True).astype(q.dtype)
  else:
    counts = creation.full(out_shape + (1,), n, q.dtype)
  qq = shapes.reshape(q, (-1,))  # (nq,)
  pos = qq * (counts - 1)  # (..., nq)
  low = ufuncs.floor(pos)
  high = ufuncs.ceil(pos)
  frac = pos - low
  maxi = ufuncs.maximum(counts - 1, 0)
  low_i = ufuncs.clip(low, 0, maxi).astype(np.int32)
  high_i = ufuncs.clip(high, 0, maxi).astype(np.int32)
  lo_v = indexing.take_along_axis(a, low_i, axis=-1)
  hi_v = indexing.take_along_axis(a, high_i, axis=-1)
  if method == "linear":
    result = lo_v * (1 - frac) + hi_v * frac
  elif method == "lower":
    result = lo_v
  elif method == "higher":
    result = hi_v
  elif method == "midpoint":
    result = 0.5 * (lo_v + hi_v)
  elif method == "inverted_cdf":
    result = _inverted_cdf(a, qq, weights, maxi)
  else:  # nearest: round half to even, as NumPy
    near = ufuncs.clip(ufuncs.round(pos), 0, maxi).astype(np.int32)
    result = indexing.take_along_axis(a, near, axis=-1)
  if not squash_nans:
    any_nan = reductions.any(ufuncs.isnan(a), axis=-1, keepdims=True)
    result = ufuncs.where(any_nan, np.nan, result)
  else:
    result = ufuncs.where(counts == 0, np.nan, result)
  if weights is not None:
    # Negative or NaN weights make that slice's quantiles NaN (as JAX; NumPy raises).
    bad = reductions.any((weights < 0) | ufuncs.isnan(weights), axis=-1, keepdims=True)
    result = ufuncs.where(bad, np.nan, result)
  # result: out_shape + (nq,) -> (nq,) + out_shape
  result = shapes.moveaxis(result, -1, 0)
  if keepdims:
    result = shapes.reshape(result, get_aval(result).shape[:1] + keep_shape)
  if get_aval(q).ndim == 0:
    result = result[0]
  return result


def _check_quantile_weights(name, a, weights, axis, dims, method):
  """``a`` and ``weights`` promoted together, weights broadcast to ``a``'s shape."""
  util.check_arraylike(name, weights)
  weights = creation.asarray(weights)
  if dtypes.is_complex(get_aval(weights).dtype):
    raise ValueError("Weights cannot be complex types.")
  if method != "inverted_cdf":
    raise NotImplementedError(f"{method} doesn't support weights. Only method "
                              "'inverted_cdf' supports weights.")
  a, weights = util.promote_dtypes_inexact(a, weights)
  shape, wshape = get_aval(a).shape, get_aval(weights).shape
  if wshape != shape:
    if axis is None:
      raise ValueError("Weights shape must match 'a' shape when axis is None.")
    # Otherwise one weight per position along the reduced axes (in the order given).
    reduced = tuple(shape[d] for d in dims)
    if wshape != reduced:
      raise ValueError(f"Weights shape {wshape} must match reduction axes {reduced}")
    order = sorted(builtins.range(len(dims)), key=lambda i: dims[i])
    weights = lax.broadcast_in_dim(shapes.transpose(weights, order), shape, sorted(dims))
  return a, weights


def _inverted_cdf(a, qq, weights, maxi):
  """Weighted inverted-CDF quantiles of the sorted last axis of ``a``: the first value whose
  cumulative weight reaches ``q`` times the total (NaN data weighs nothing)."""
  nan_data = ufuncs.isnan(a)
  if weights is None:
    weights = creation.ones_like(a)
  bad = (weights < 0) | ufuncs.isnan(weights) | nan_data
  cw = reductions.cumsum(ufuncs.where(bad, 0, weights), axis=-1)  # (..., n)
  target = qq * cw[..., -1:]  # (..., nq)
  below = cw[..., None, :] < target[..., :, None]  # (..., nq, n)
  idx = reductions.sum(below.astype(np.int32), axis=-1)
  idx = ufuncs.minimum(idx, maxi.astype(np.int32))
  return indexing.take_along_axis(a, idx, axis=-1)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  """The ``q``-th quantiles of the data along the given axes.

  NaNs in a slice make its quantile NaN (see ``nanquantile``).

  Args:
    a: array-like data.
    q: a scalar or array of probabilities in ``[0, 1]``.
    axis: an int or tuple of ints to reduce over (None: all axes).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    method: 'linear' (the default), 'lower', 'higher', 'midpoint', 'nearest' or
      'inverted_cdf': how to pick a value between two data points.
    keepdims: if True, reduced axes stay in the result with size 1.
    weights: keyword-only optional weights (with ``method='inverted_cdf'`` only, otherwise
      ``NotImplementedError``), shaped as ``a`` or as the reduced axes.

  Returns:
    An array of ``q``'s shape followed by ``a``'s shape without the reduced axes, of a floating
    dtype.

  Examples:
    >>> x = jnp.array([1., 2., 3., 4.])
    >>> jnp.quantile(x, 0.5)
    Array(2.5, dtype=float32)
    >>> jnp.quantile(x, jnp.array([0.25, 0.75]), method='lower')
    Array([1., 3.], dtype=float32)
  """
  _check_quantile_args("quantile", out, overwrite_input)
  return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  """The ``q``-th quantiles of the data along the given axes, ignoring NaNs.

  NaNs (and their weights) are left out; an all-NaN slice gives NaN.

  Args:
    a: array-like data.
    q: a scalar or array of probabilities in ``[0, 1]``.
    axis: an int or tuple of ints to reduce over (None: all axes).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    method: 'linear' (the default), 'lower', 'higher', 'midpoint', 'nearest' or
      'inverted_cdf': how to pick a value between two data points.
    keepdims: if True, reduced axes stay in the result with size 1.
    weights: keyword-only optional weights (with ``method='inverted_cdf'`` only, otherwise
      ``NotImplementedError``), shaped as ``a`` or as the reduced axes.

  Returns:
    An array of ``q``'s shape followed by ``a``'s shape without the reduced axes, of a floating
    dtype.

  Examples:
    >>> jnp.nanquantile(jnp.array([1., jnp.nan, 3.]), 0.5)
    Array(2., dtype=float32)
  """
  _check_quantile_args("nanquantile", out, overwrite_input)
  return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, out_sharding=None):
  """The ``q``-th percentiles of the data along the given axes.

  Same as ``quantile`` with ``q / 100``.

  Args:
    a: array-like data.
    q: a scalar or array of percentages in ``[0, 100]``.
    axis: an int or tuple of ints to reduce over (None: all axes).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    method: 'linear' (the default), 'lower', 'higher', 'midpoint', 'nearest' or
      'inverted_cdf': how to pick a value between two data points.
    keepdims: if True, reduced axes stay in the result with size 1.
    weights: keyword-only optional weights (with ``method='inverted_cdf'`` only, otherwise
      ``NotImplementedError``), shaped as ``a`` or as the reduced axes.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of ``q``'s shape followed by ``a``'s shape without the reduced axes, of a floating
    dtype.

  Examples:
    >>> jnp.percentile(jnp.array([1., 2., 3., 4., 5.]), jnp.array([10, 50]))
    Array([1.4, 3. ], dtype=float32)
  """
  _check_quantile_args("percentile", out, overwrite_input)
  util.check_arraylike("percentile", a, q)
  q = ufuncs.true_divide(q, 100.0)
  if out_sharding is not None and sharding_types.active[0]:
    # as JAX's (which computes it over Auto axes): the data is gathered whole first, so the
    # sorts see no split dimension
    split = sharding_types.split_of(a)
    if split is not None:
      a = sharding_types.constrain(
          a, sharding_types.TypeSharding(split.mesh, [None] * len(split.entries)))
  out = _quantile("percentile", a, q, axis, method, keepdims, False, weights)
  return lax.apply_out_sharding(out, out_sharding, "percentile")


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  """The ``q``-th percentiles of the data along the given axes, ignoring NaNs.

  NaNs (and their weights) are left out; an all-NaN slice gives NaN.

  Args:
    a: array-like data.
    q: a scalar or array of percentages in ``[0, 100]``.
    axis: an int or tuple of ints to reduce over (None: all axes).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    method: 'linear' (the default), 'lower', 'higher', 'midpoint', 'nearest' or
      'inverted_cdf': how to pick a value between two data points.
    keepdims: if True, reduced axes stay in the result with size 1.
    weights: keyword-only optional weights (with ``method='inverted_cdf'`` only, otherwise
      ``NotImplementedError``), shaped as ``a`` or as the reduced axes.

  Returns:
    An array of ``q``'s shape followed by ``a``'s shape without the reduced axes, of a floating
    dtype.

  Examples:
    >>> jnp.nanpercentile(jnp.array([1., jnp.nan, 3.]), 50)
    Array(2., dtype=float32)
  """
  _check_quantile_args("nanpercentile", out, overwrite_input)
  util.check_arraylike("nanpercentile", a, q)
  q = ufuncs.true_divide(q, 100.0)
  return _quantile("nanpercentile", a, q, axis, method, keepdims, True, weights)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median along the given axes, ignoring NaNs.

  An all-NaN slice gives NaN. Integer inputs give the default floating dtype.

  Args:
    a: array-like data.
    axis: an int or tuple of ints to reduce over (None: all axes).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    keepdims: if True, reduced axes stay in the result with size 1.

  Returns:
    An array of ``a``'s shape without the reduced axes, of a floating dtype.

  Examples:
    >>> jnp.nanmedian(jnp.array([[1., jnp.nan, 3.], [4., 5., 9.]]), axis=1)
    Array([2., 5.], dtype=float32)
  """
  _check_quantile_args("nanmedian", out, overwrite_input)
  return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


def _check_quantile_args(name, out, overwrite_input):
  if out is not None:
    raise ValueError(f"{name}: the 'out' argument is not supported")
  if overwrite_input:
    raise ValueError(f"{name}: overwrite_input=True is not supported")


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["cov", "corrcoef", "quantile", "nanquantile", "percentile", "nanpercentile",
                "nanmedian"], {},
    default_static=("rowvar", "bias", "ddof", "dtype", "axis", "overwrite_input", "keepdims",
                    "method", "out_sharding"),
    staged=("cov", "corrcoef", "quantile", "nanquantile", "percentile", "nanpercentile",
            "nanmedian"))
