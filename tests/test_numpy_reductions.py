"""hlox.numpy reductions against NumPy: values (eager and jit), JAX's dtype rules, axis /
keepdims / where / initial handling, NaN behaviour and errors."""
import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox.core import dtypes
from hlox.runtime.array import device_put
from tests.util import assert_close, check_eager_and_jit, rand


@st.composite
def shape_and_axis(draw, min_side=0):
  """A shape and an axis argument: None, an int or a tuple, maybe negative."""
  shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=0, max_size=3)))
  ndim = len(shape)
  kind = draw(st.sampled_from(["none", "int", "tuple"] if ndim else ["none", "tuple"]))
  if kind == "none":
    return shape, None
  if kind == "int":
    return shape, draw(st.integers(-ndim, ndim - 1))
  dims = sorted(draw(st.sets(st.integers(0, ndim - 1), max_size=ndim))) if ndim else []
  axis = tuple(d - ndim if draw(st.booleans()) else d for d in dims)
  return shape, axis


_keepdims = st.booleans()
_seeds = st.integers(0, 2**16)


def _check(fun, x, expected, dtype, **tol):
  check_eager_and_jit(fun, (x,), np.asarray(expected).astype(dtype), dtype, **tol)


# --- sum / prod / max / min / all / any --------------------------------------------------

@given(sa=shape_and_axis(), keepdims=_keepdims, seed=_seeds)
def test_sum_prod_float32(sa, keepdims, seed):
  shape, axis = sa
  x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)
  _check(lambda x: jnp.sum(x, axis=axis, keepdims=keepdims), x,
         np.sum(x, axis=axis, keepdims=keepdims), np.float32, atol=1e-4)
  _check(lambda x: jnp.prod(x, axis=axis, keepdims=keepdims), x,
         np.prod(x, axis=axis, keepdims=keepdims), np.float32, rtol=1e-4)


@given(sa=shape_and_axis(min_side=1), keepdims=_keepdims, seed=_seeds)
def test_max_min_ptp(sa, keepdims, seed):
  shape, axis = sa
  x = np.random.default_rng(seed).integers(-5, 5, shape).astype(np.int32)
  for jfn, nfn in ((jnp.max, np.max), (jnp.min, np.min), (jnp.amax, np.amax),
                   (jnp.ptp, np.ptp)):
    _check(lambda x: jfn(x, axis=axis, keepdims=keepdims), x,
           nfn(x, axis=axis, keepdims=keepdims), np.int32)


@given(sa=shape_and_axis(), keepdims=_keepdims, seed=_seeds)
def test_all_any_count_nonzero(sa, keepdims, seed):
  shape, axis = sa
  x = np.random.default_rng(seed).integers(0, 3, shape).astype(np.float32)
  _check(lambda x: jnp.all(x, axis=axis, keepdims=keepdims), x,
         np.all(x, axis=axis, keepdims=keepdims), np.bool_)
  _check(lambda x: jnp.any(x, axis=axis, keepdims=keepdims), x,
         np.any(x, axis=axis, keepdims=keepdims), np.bool_)
  _check(lambda x: jnp.count_nonzero(x, axis=axis, keepdims=keepdims), x,
         np.count_nonzero(x, axis=axis, keepdims=keepdims), np.int32)


@pytest.mark.parametrize("dtype, expected", [
    (np.bool_, np.int32), (np.int8, np.int32), (np.uint8, np.uint32), (np.int16, np.int32),
    (np.int32, np.int32), (np.uint32, np.uint32), (np.float16, np.float16),
    (np.float32, np.float32),
    (np.complex64, np.complex64)])
def test_sum_prod_dtypes(dtype, expected):
  x = rand(np.random.default_rng(0), (2, 3), dtype, low=-2, high=3)
  ref = x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
  tol = dict(rtol=5e-2, atol=5e-2) if np.dtype(dtype).itemsize == 2 else {}
  _check(lambda x: jnp.sum(x, axis=1), x, np.sum(ref, axis=1), expected, **tol)
  _check(lambda x: jnp.prod(x, axis=0), x, np.prod(ref, axis=0), expected, **tol)


def test_bfloat16_sum_dtype():
  # Only dtypes: reading bfloat16 arrays back to NumPy is a runtime matter.
  x = np.ones((2, 3), dtypes.bfloat16)
  assert jnp.sum(x, axis=1).dtype == dtypes.bfloat16
  assert hlox.jit(lambda x: jnp.mean(x))(x).dtype == dtypes.bfloat16


def test_sum_dtype_arguments():
  x = np.array([[100, 100], [100, 27]], np.int8)
  _check(lambda x: jnp.sum(x, promote_integers=False), x, np.int8(71), np.int8)
  _check(lambda x: jnp.sum(x, dtype=np.float32), x, 327.0, np.float32)
  _check(lambda x: jnp.sum(x, axis=0, dtype=np.int16), x, [200, 127], np.int16)
  b = np.array([True, False, True])
  _check(lambda x: jnp.sum(x, dtype=bool), b, True, np.bool_)
  _check(lambda x: jnp.prod(x, dtype=bool), b, False, np.bool_)
  # float16 accumulates in float32: 2048 + 1s would stall in float16.
  h = np.concatenate([[2048.0], np.ones(8)]).astype(np.float16)
  _check(lambda x: jnp.sum(x), h, 2056.0, np.float16)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.float16,
                                   np.float32])
def test_max_min_keep_dtype(dtype):
  x = rand(np.random.default_rng(1), (3, 4), dtype, low=-3, high=3)
  _check(lambda x: jnp.max(x, axis=0), x, np.max(x, axis=0), dtype)
  _check(lambda x: jnp.min(x, axis=-1, keepdims=True), x, np.min(x, axis=-1, keepdims=True),
         dtype)
  _check(lambda x: jnp.all(x, axis=0), x, np.all(x, axis=0), np.bool_)
  _check(lambda x: jnp.any(x), x, np.any(x), np.bool_)


def test_complex_all_any_max():
  c = np.array([0j, 1j, 2 + 0j], np.complex64)
  _check(lambda x: jnp.any(x[:2]), c, True, np.bool_)
  _check(lambda x: jnp.all(x), c, False, np.bool_)
  _check(lambda x: jnp.max(x), c, np.max(c), np.complex64)
  _check(lambda x: jnp.count_nonzero(x), c, 2, np.int32)


def test_where_and_initial():
  rng = np.random.default_rng(2)
  x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
  w = rng.random((3, 4)) < 0.5
  w[1] = False
  row = np.array([True, False, True, True])  # broadcast against x
  for mask in (w, row):
    kw = dict(where=mask)
    check_eager_and_jit(lambda x, m: jnp.sum(x, axis=1, where=m), (x, mask),
                        np.sum(x, axis=1, **kw), np.float32, atol=1e-5)
    check_eager_and_jit(lambda x, m: jnp.prod(x, axis=0, where=m, keepdims=True), (x, mask),
                        np.prod(x, axis=0, keepdims=True, **kw), np.float32)
    check_eager_and_jit(lambda x, m: jnp.max(x, axis=1, where=m, initial=-1.0), (x, mask),
                        np.max(x, axis=1, initial=-1.0, **kw), np.float32)
    check_eager_and_jit(lambda x, m: jnp.min(x, where=m, initial=0.5), (x, mask),
                        np.min(x, initial=0.5, **kw), np.float32)
    check_eager_and_jit(lambda x, m: jnp.all(x > 0, axis=1, where=m), (x, mask),
                        np.all(x > 0, axis=1, **kw), np.bool_)
    check_eager_and_jit(lambda x, m: jnp.any(x > 0, axis=0, where=m), (x, mask),
                        np.any(x > 0, axis=0, **kw), np.bool_)
  _check(lambda x: jnp.sum(x, axis=0, initial=10.0), x, np.sum(x, axis=0, initial=10.0),
         np.float32, atol=1e-5)
  _check(lambda x: jnp.max(x, axis=0, initial=1.0), x, np.max(x, axis=0, initial=1.0),
         np.float32)
  i = np.arange(6, dtype=np.int32).reshape(2, 3)
  _check(lambda x: jnp.max(x, axis=1, initial=4), i, [4, 5], np.int32)


def test_empty_reductions():
  e = np.zeros((0, 3), np.float32)
  _check(lambda x: jnp.sum(x), e, 0.0, np.float32)
  _check(lambda x: jnp.sum(x, axis=0), e, np.zeros(3), np.float32)
  _check(lambda x: jnp.prod(x, axis=0), e, np.ones(3), np.float32)
  _check(lambda x: jnp.all(x, axis=0), e, np.ones(3, bool), np.bool_)
  _check(lambda x: jnp.any(x), e, False, np.bool_)
  _check(lambda x: jnp.max(x, axis=1), e, np.zeros((0,)), np.float32)  # nothing reduced empty
  _check(lambda x: jnp.max(x, axis=0, initial=2.0), e, np.full(3, 2.0), np.float32)
  _check(lambda x: jnp.mean(x, axis=0), e, np.full(3, np.nan), np.float32)
  with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
    jnp.max(e, axis=0)
  with pytest.raises(ValueError, match="zero-size array to reduction operation min"):
    jnp.min(e)
  with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
    jnp.argmax(e)
  with pytest.raises(ValueError, match="attempt to get argmin of an empty sequence"):
    jnp.argmin(e, axis=0)


def test_nan_max_min():
  x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
  _check(lambda x: jnp.max(x, axis=1), x, np.max(x, axis=1), np.float32)
  _check(lambda x: jnp.min(x, axis=0), x, np.min(x, axis=0), np.float32)
  _check(lambda x: jnp.ptp(x, axis=1), x, np.ptp(x, axis=1), np.float32)


# --- argmax / argmin ---------------------------------------------------------------------

@st.composite
def shape_and_int_axis(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
  return shape, axis


@given(sa=shape_and_int_axis(), keepdims=_keepdims, seed=_seeds,
       nan_frac=st.sampled_from([0.0, 0.25]))
def test_argmax_argmin(sa, keepdims, seed, nan_frac):
  shape, axis = sa
  rng = np.random.default_rng(seed)
  x = rng.integers(-2, 3, shape).astype(np.float32)  # ties are common
  x[rng.random(shape) < nan_frac] = np.nan
  for jfn, nfn in ((jnp.argmax, np.argmax), (jnp.argmin, np.argmin)):
    _check(lambda x: jfn(x, axis=axis, keepdims=keepdims), x,
           nfn(x, axis=axis, keepdims=keepdims), np.int32)


def test_argmax_dtypes_and_nanargmax():
  b = np.array([[False, True, True], [False, False, False]])
  _check(lambda x: jnp.argmax(x, axis=1), b, [1, 0], np.int32)
  _check(lambda x: jnp.argmin(x), b, 0, np.int32)
  u = np.array([3, 250, 7, 250], np.uint8)
  _check(lambda x: jnp.argmax(x), u, 1, np.int32)
  y = np.array([[np.nan, 2.0, np.nan, 5.0], [np.nan] * 4, [1.0, 1.0, -1.0, np.nan]],
               np.float32)
  _check(lambda x: jnp.nanargmax(x, axis=1), y, [3, -1, 0], np.int32)
  _check(lambda x: jnp.nanargmin(x, axis=1, keepdims=True), y, [[1], [-1], [2]], np.int32)
  _check(lambda x: jnp.nanargmax(x), u, 1, np.int32)


# --- mean / var / std / average / median -------------------------------------------------

@given(sa=shape_and_axis(min_side=1), keepdims=_keepdims, seed=_seeds,
       ddof=st.sampled_from([0, 1]))
def test_mean_var_std(sa, keepdims, seed, ddof):
  shape, axis = sa
  x = np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)
  tol = dict(rtol=1e-4, atol=1e-5)
  _check(lambda x: jnp.mean(x, axis=axis, keepdims=keepdims), x,
         np.mean(x, axis=axis, keepdims=keepdims), np.float32, **tol)
  with np.errstate(divide="ignore", invalid="ignore"):
    import warnings
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)
      ref_var = np.var(x.astype(np.float64), axis=axis, ddof=ddof, keepdims=keepdims)
  _check(lambda x: jnp.var(x, axis=axis, ddof=ddof, keepdims=keepdims), x, ref_var,
         np.float32, **tol)
  _check(lambda x: jnp.std(x, axis=axis, correction=ddof, keepdims=keepdims), x,
         np.sqrt(ref_var), np.float32, **tol)


@pytest.mark.parametrize("dtype, expected", [
    (np.bool_, np.float32), (np.int8, np.float32), (np.int32, np.float32),
    (np.float16, np.float16), (np.float32, np.float32), (np.complex64, np.complex64)])
def test_mean_dtypes(dtype, expected):
  x = rand(np.random.default_rng(3), (3, 4), dtype, low=-3, high=3)
  tol = dict(rtol=1e-2, atol=1e-2) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
  _check(lambda x: jnp.mean(x, axis=0), x, np.mean(x.astype(np.complex128), axis=0)
         if np.dtype(dtype).kind == "c" else np.mean(x.astype(np.float64), axis=0),
         expected, **tol)
  var_dtype = np.float32 if np.dtype(dtype).kind == "c" else expected
  _check(lambda x: jnp.var(x, axis=1), x, np.var(x.astype(np.complex128 if np.dtype(dtype)
                                                          .kind == "c" else np.float64),
                                                 axis=1), var_dtype, **tol)
  _check(lambda x: jnp.std(x), x, np.std(x.astype(np.complex128 if np.dtype(dtype).kind == "c"
                                                  else np.float64)), var_dtype, **tol)


def test_mean_var_where_and_dtype():
  rng = np.random.default_rng(4)
  x = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
  w = rng.random((3, 5)) < 0.6
  w[0, :] = [True, False, False, False, False]  # one element: var with ddof=1 is NaN
  tol = dict(rtol=1e-5, atol=1e-6)
  with np.errstate(all="ignore"):
    import warnings
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)
      ref_mean = np.mean(x, axis=1, where=w)
      ref_var = np.var(x.astype(np.float64), axis=1, where=w, ddof=1)
  check_eager_and_jit(lambda x, w: jnp.mean(x, axis=1, where=w), (x, w), ref_mean,
                      np.float32, **tol)
  check_eager_and_jit(lambda x, w: jnp.var(x, axis=1, where=w, ddof=1), (x, w), ref_var,
                      np.float32, **tol)
  i = np.arange(10, dtype=np.int32).reshape(2, 5)
  _check(lambda x: jnp.mean(x, axis=1, dtype=np.float16), i, [2.0, 7.0], np.float16)
  _check(lambda x: jnp.var(x, ddof=10), i, np.nan, np.float32)  # N - ddof <= 0


def test_average():
  rng = np.random.default_rng(5)
  x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
  full_w = rng.uniform(0.1, 1, (3, 4)).astype(np.float32)
  w1 = rng.uniform(0.1, 1, (4,)).astype(np.float32)
  tol = dict(rtol=1e-5, atol=1e-6)
  _check(lambda x: jnp.average(x), x, np.average(x), np.float32, **tol)
  check_eager_and_jit(lambda x, w: jnp.average(x, weights=w), (x, full_w),
                      np.average(x, weights=full_w), np.float32, **tol)
  check_eager_and_jit(lambda x, w: jnp.average(x, axis=1, weights=w), (x, w1),
                      np.average(x, axis=1, weights=w1), np.float32, **tol)
  w2 = rng.uniform(0.1, 1, (4, 3)).astype(np.float32)
  check_eager_and_jit(lambda x, w: jnp.average(x, axis=(1, 0), weights=w), (x, w2),
                      np.average(x, axis=(1, 0), weights=w2), np.float32, **tol)
  avg, wsum = jnp.average(x, axis=0, weights=full_w, returned=True, keepdims=True)
  ref_avg, ref_wsum = np.average(x, axis=0, weights=full_w, returned=True, keepdims=True)
  assert_close(avg, ref_avg, np.float32, **tol)
  assert_close(wsum, ref_wsum, np.float32, **tol)
  avg, count = jnp.average(np.arange(6).reshape(2, 3), axis=1, returned=True)
  assert_close(avg, [1.0, 4.0], np.float32)
  assert_close(count, [3.0, 3.0], np.float32)
  with pytest.raises(ValueError, match="axis must be specified"):
    jnp.average(x, weights=w1)
  with pytest.raises(ValueError, match="shape of weights"):
    jnp.average(x, axis=0, weights=w1)


@given(sa=shape_and_axis(min_side=1), keepdims=_keepdims, seed=_seeds,
       with_nan=st.booleans())
def test_median(sa, keepdims, seed, with_nan):
  shape, axis = sa
  rng = np.random.default_rng(seed)
  x = rng.integers(-5, 5, shape).astype(np.float32)
  if with_nan and x.size:
    x.flat[rng.integers(0, x.size)] = np.nan
  want = np.median(x, axis=axis, keepdims=keepdims)
  if keepdims and x.ndim == 0:
    want = np.reshape(want, (1,))  # JAX (and hlox) keep a 0-d input as shape (1,)
  _check(lambda x: jnp.median(x, axis=axis, keepdims=keepdims), x, want, np.float32)


def test_median_int_input():
  i = np.array([[3, 1, 2, 10], [5, 5, 4, 0]], np.int32)
  _check(lambda x: jnp.median(x, axis=1), i, [2.5, 4.5], np.float32)
  _check(lambda x: jnp.median(x), i, 3.5, np.float32)


# --- nan-ignoring reductions -------------------------------------------------------------

_nan_x = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan] * 4, [0.5, 2.0, np.nan, 4.0]],
                  np.float32)


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean",
                                  "nanvar", "nanstd"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), (-1, True)])
def test_nan_reductions(name, axis, keepdims):
  import warnings
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    expected = getattr(np, name)(_nan_x, axis=axis, keepdims=keepdims)
  _check(lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims), _nan_x, expected,
         np.float32, rtol=1e-5, atol=1e-6)


def test_nan_reductions_extra_arguments():
  import warnings
  x = _nan_x
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    _check(lambda x: jnp.nanvar(x, axis=1, ddof=1), x, np.nanvar(x, axis=1, ddof=1),
           np.float32, rtol=1e-5)
    _check(lambda x: jnp.nanstd(x, axis=0, ddof=1), x, np.nanstd(x, axis=0, ddof=1),
           np.float32, rtol=1e-5)
  _check(lambda x: jnp.nanmax(x, axis=1, initial=2.5), x, np.nanmax(x, axis=1, initial=2.5),
         np.float32)
  _check(lambda x: jnp.nansum(x, axis=1, initial=1.0), x, np.nansum(x, axis=1, initial=1.0),
         np.float32)
  w = np.array([True, True, False, True])
  _check(lambda x: jnp.nansum(x, axis=1, where=w), x, np.nansum(x, axis=1, where=w),
         np.float32)
  # Integer input: no NaNs to drop, the plain reductions' dtype rules apply.
  i = np.arange(6, dtype=np.int8).reshape(2, 3)
  _check(lambda x: jnp.nansum(x, axis=1), i, [3, 12], np.int32)
  _check(lambda x: jnp.nanmax(x), i, 5, np.int8)
  _check(lambda x: jnp.nanmean(x, axis=0), i, [1.5, 2.5, 3.5], np.float32)


# --- cumulative --------------------------------------------------------------------------

@st.composite
def shape_and_cum_axis(draw):
  shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
  if not shape:
    return shape, None
  return shape, draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))


@given(sa=shape_and_cum_axis(), seed=_seeds)
def test_cumsum_cumprod(sa, seed):
  shape, axis = sa
  x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)
  _check(lambda x: jnp.cumsum(x, axis=axis), x, np.cumsum(x, axis=axis), np.float32,
         atol=1e-5)
  _check(lambda x: jnp.cumprod(x, axis=axis), x, np.cumprod(x, axis=axis), np.float32)


def test_cumulative_dtypes():
  b = np.array([True, True, False, True])
  _check(lambda x: jnp.cumsum(x), b, [1, 2, 2, 3], np.int32)  # bool -> default int
  i8 = np.array([100, 100, -50], np.int8)
  _check(lambda x: jnp.cumsum(x), i8, np.cumsum(i8).astype(np.int8), np.int8)  # JAX: kept
  _check(lambda x: jnp.cumsum(x, dtype=np.int32), i8, [100, 200, 150], np.int32)
  _check(lambda x: jnp.cumsum(x, dtype=bool), np.array([0, -1, 1, 0]), [False, True, True,
                                                                        True], np.bool_)
  _check(lambda x: jnp.cumulative_sum(x), i8, [100, 200, 150], np.int32)
  _check(lambda x: jnp.cumulative_sum(x, include_initial=True), i8, [0, 100, 200, 150],
         np.int32)
  m = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
  _check(lambda x: jnp.cumulative_prod(x, axis=1, include_initial=True), m,
         np.cumulative_prod(m, axis=1, include_initial=True), np.float32)
  _check(lambda x: jnp.cumulative_sum(x, axis=-2), m, np.cumulative_sum(m, axis=-2),
         np.float32)
  _check(lambda x: jnp.cumprod(x, axis=0), np.array([[2, 3], [4, 5]], np.uint8),
         [[2, 3], [8, 15]], np.uint8)


def test_nancumsum_nancumprod():
  x = np.array([[1.0, np.nan, 2.0], [np.nan, 3.0, 4.0]], np.float32)
  _check(lambda x: jnp.nancumsum(x, axis=1), x, np.nancumsum(x, axis=1), np.float32)
  _check(lambda x: jnp.nancumprod(x), x, np.nancumprod(x), np.float32)


def test_cumulative_errors():
  with pytest.raises(ValueError, match="non-scalar"):
    jnp.cumulative_sum(np.float32(1))
  with pytest.raises(ValueError, match="axis was not set to an explicit value"):
    jnp.cumulative_sum(np.ones((2, 2)))
  with pytest.raises(ValueError, match="jnp.cumsum: axis 2 is out of bounds"):
    jnp.cumsum(np.ones((2, 2)), axis=2)


# --- methods, weak types, errors ---------------------------------------------------------

def test_array_methods():
  x = device_put(np.arange(12, dtype=np.float32).reshape(3, 4))
  assert_close(x.sum(axis=0), np.arange(12).reshape(3, 4).sum(0), np.float32)
  assert_close(x.mean(), 5.5, np.float32)
  assert_close(x.max(axis=1, keepdims=True), [[3], [7], [11]], np.float32)
  assert_close(x.argmin(axis=1), [0, 0, 0], np.int32)
  assert_close(x.cumsum(axis=1)[:, -1] if hasattr(x, "__getitem__") else x.sum(1),
               [6, 22, 38], np.float32)
  assert_close(x.var(ddof=1), np.var(np.arange(12), ddof=1), np.float32)
  assert_close(hlox.jit(lambda x: x.std(axis=0))(x), np.arange(12).reshape(3, 4).std(0),
               np.float32)


def test_results_are_strongly_typed():
  # As in JAX: reductions convert their input to a concrete dtype first, so a weakly typed
  # input gives a strongly typed result.
  weak = device_put(np.ones((2, 3), np.float32), weak_type=True)
  assert weak.weak_type
  for fn in (jnp.sum, jnp.max, jnp.mean, jnp.prod, jnp.var):
    out = fn(weak, axis=0)
    assert out.dtype == np.float32 and not out.weak_type
  assert not jnp.sum(2.0).weak_type
  assert jnp.sum(2).dtype == np.int32


def test_errors():
  x = np.zeros((2, 3), np.float32)
  with pytest.raises(ValueError, match="jnp.sum: axis 2 is out of bounds for array of "
                                       "dimension 2"):
    jnp.sum(x, axis=2)
  with pytest.raises(ValueError, match="jnp.mean: axis -3 is out of bounds"):
    jnp.mean(x, axis=(0, -3))
  with pytest.raises(ValueError, match="duplicate value in 'axis'"):
    jnp.max(x, axis=(1, -1))
  with pytest.raises(ValueError, match="where must be None or a boolean array"):
    jnp.sum(x, where=np.ones((2, 3), np.int32))
  with pytest.raises(ValueError, match="reduction operation max does not have an identity"):
    jnp.max(x, where=np.ones((2, 3), bool))
  with pytest.raises(ValueError, match="initial value must be a scalar"):
    jnp.sum(x, initial=np.zeros(2))
  with pytest.raises(NotImplementedError, match="'out' argument to jnp.sum"):
    jnp.sum(x, out=np.zeros(()))
  with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments"):
    jnp.sum([1.0, 2.0])
  with pytest.raises(ValueError, match="ddof and correction"):
    jnp.var(x, ddof=1, correction=1)
  with pytest.raises(ValueError, match="jnp.std: dtype must be inexact"):
    jnp.std(x, dtype=np.int32)
  with pytest.raises(TypeError, match="jnp.sum: axis must be an integer"):
    jnp.sum(x, axis=1.5)
  with pytest.raises(Exception, match="(?i)concrete|static|trac"):
    hlox.jit(lambda x, a: jnp.sum(x, axis=a))(x, 1)
