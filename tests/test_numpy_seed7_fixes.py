"""hlox.numpy behaviours that JAX's own tests check, against NumPy references: ``cov`` /
``corrcoef`` transposing a single row with ``rowvar=False``, ``polymul`` trimming leading
zeros, ``take_along_axis`` staged as a nested jit."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


@pytest.mark.parametrize("shape", [(1, 3), (3, 1), (2, 4)])
@pytest.mark.parametrize("rowvar", [True, False])
def test_cov_corrcoef_transpose_rowvar(shape, rowvar):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) ** 1.5 + 1
  got = jnp.cov(x, rowvar=rowvar, ddof=0)
  want = np.cov(x, rowvar=rowvar, ddof=0)
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-5)
  with np.errstate(all="ignore"):
    want_c = np.corrcoef(x, rowvar=rowvar)
  assert jnp.corrcoef(x, rowvar=rowvar).shape == want_c.shape


def test_cov_one_dim_m_with_y_rowvar_false():
  rng = np.random.default_rng(0)
  a, b = rng.random(5), rng.random((5, 2))
  np.testing.assert_allclose(jnp.cov(a, b, rowvar=False), np.cov(a, b, rowvar=False),
                             rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("a1,a2", [([0., 0., 1., 2.], [0., 3., 4.]), ([0.], [0., 0.]),
                                   ([0., 2.], [5.]), ([1., 2.], [3.])])
def test_polymul_trim_leading_zeros(a1, a2):
  got = jnp.polymul(jnp.array(a1), jnp.array(a2), trim_leading_zeros=True)
  want = np.polymul(a1, a2)
  assert got.shape == want.shape
  np.testing.assert_allclose(got, want)
  # Untrimmed, the length is always len(a1) + len(a2) - 1.
  assert jnp.polymul(jnp.array(a1), jnp.array(a2)).shape == (len(a1) + len(a2) - 1,)


def test_polymul_integer_inputs_give_float():
  got = jnp.polymul(jnp.array([1, 2]), jnp.array([3, 4]))
  assert jnp.issubdtype(got.dtype, jnp.floating)
  np.testing.assert_allclose(got, np.polymul([1, 2], [3, 4]))


@pytest.mark.parametrize("wrap,want_dtype", [(False, np.int8), (True, np.int32)])
def test_take_along_axis_is_nested_jit(wrap, want_dtype):
  arr = jnp.arange(200, dtype=jnp.float32)
  fun = lambda i: jnp.take_along_axis(arr, i, axis=0, mode="promise_in_bounds",
                                      wrap_negative_indices=wrap)
  idx = jnp.array([1, 2, -3], dtype=jnp.int8)
  jaxpr = hlox.make_jaxpr(fun)(idx)
  [jit_eqn] = [e for e in jaxpr.eqns if e.primitive.name == "jit"]
  [gather] = [e for e in jit_eqn.params["jaxpr"].eqns if e.primitive == lax.gather_p]
  assert gather.invars[1].aval.dtype == want_dtype
  if wrap:
    np.testing.assert_array_equal(fun(idx), [1., 2., 197.])
  else:
    np.testing.assert_array_equal(fun(idx[:2]), [1., 2.])


@pytest.mark.parametrize("shape", [(0, 2), (2, 0), (0, 0)])
@pytest.mark.parametrize("ord", [1, 2, np.inf, "fro", "nuc"])
def test_empty_matrix_norm_is_zero(shape, ord):
  norm = jnp.linalg.matrix_norm(jnp.zeros(shape, jnp.float32), ord=ord)
  assert norm.shape == () and float(norm) == 0.0


def test_empty_vector_inf_norm_is_zero():
  assert float(jnp.linalg.vector_norm(jnp.zeros(0), ord=np.inf)) == 0.0
  np.testing.assert_allclose(jnp.linalg.norm(np.arange(6.).reshape(2, 3), ord=np.inf),
                             np.linalg.norm(np.arange(6.).reshape(2, 3), ord=np.inf))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_categorical_accepts_array_axis(axis):
  logits = hlox.random.normal(hlox.random.key(1), (8, 9))
  n = logits.shape[axis]
  other = 17 - n
  out = hlox.random.categorical(hlox.random.key(0), logits, axis=jnp.array(axis),
                                shape=(3, other), replace=False)
  assert out.shape == (3, other)
  out = np.asarray(out)
  assert ((0 <= out) & (out < n)).all()
  for col in out.T:  # without replacement: distinct draws per distribution
    assert len(set(col.tolist())) == 3


def test_cumulative_sum_rank_error_text():
  with pytest.raises(ValueError, match=r"The input array has rank 2, however"):
    jnp.cumulative_sum(jnp.ones((2, 3)))
  with pytest.raises(ValueError, match=r"The input must be non-scalar"):
    jnp.cumulative_prod(jnp.ones(()))


@pytest.mark.parametrize("op", ["quantile", "nanquantile", "percentile", "nanpercentile"])
@pytest.mark.parametrize("shape,axis,keepdims", [((10,), None, False), ((4, 3, 5), 0, True),
                                                 ((2, 3, 4), (2, 0), False)])
def test_weighted_quantile_matches_numpy(op, shape, axis, keepdims):
  rng = np.random.default_rng(0)
  a = rng.standard_normal(shape).astype(np.float32)
  if "nan" in op:
    a[rng.random(shape) < 0.2] = np.nan
  w = rng.uniform(0.1, 3.0, shape).astype(np.float32)
  q = np.array([0.1, 0.5, 0.9], np.float32) * (100 if "percentile" in op else 1)
  kw = dict(axis=axis, method="inverted_cdf", keepdims=keepdims)
  with np.errstate(all="ignore"):
    want = getattr(np, op)(a, q, weights=w, **kw)
    want_unweighted = getattr(np, op)(a, q, **kw)
  got = getattr(jnp, op)(a, q, weights=w, **kw)
  assert got.shape == want.shape and got.dtype == np.float32
  np.testing.assert_allclose(got, want, equal_nan=True)
  np.testing.assert_allclose(getattr(jnp, op)(a, q, **kw), want_unweighted, equal_nan=True)


def test_weighted_quantile_errors_and_bad_weights():
  x = np.arange(6.0).reshape(2, 3)
  with pytest.raises(NotImplementedError, match="inverted_cdf"):
    jnp.quantile(x, 0.5, weights=np.ones((2, 3)))
  with pytest.raises(ValueError, match="axis is None"):
    jnp.quantile(x, 0.5, weights=np.ones(3), method="inverted_cdf")
  with pytest.raises(ValueError, match="must match reduction axes"):
    jnp.quantile(x, 0.5, axis=1, weights=np.ones(2), method="inverted_cdf")
  # One weight per position along the reduced axis, broadcast over the others.
  got = jnp.quantile(x, 0.5, axis=1, weights=np.array([1.0, 0.5, 3.0]), method="inverted_cdf")
  np.testing.assert_allclose(got, np.quantile(x, 0.5, axis=1, method="inverted_cdf",
                                              weights=np.tile([1.0, 0.5, 3.0], (2, 1))))
  # A negative weight makes that slice NaN (as JAX does).
  got = jnp.quantile(x, 0.5, axis=1, weights=np.array([[1.0, -1, 1], [1, 1, 1]]),
                     method="inverted_cdf")
  assert np.isnan(got[0]) and got[1] == 4.0


def test_searchsorted_too_long_for_int32_without_x64():
  v = hlox.ShapeDtypeStruct((), np.float32)
  fits = hlox.ShapeDtypeStruct((np.iinfo(np.int32).max,), np.float32)
  assert hlox.eval_shape(jnp.searchsorted, fits, v).dtype == np.int32
  too_long = hlox.ShapeDtypeStruct((np.iinfo(np.int32).max + 1,), np.float32)
  with pytest.warns(UserWarning, match="Explicitly requested dtype.*int64"):
    with pytest.raises(OverflowError, match="Python integer 2147483648 out of bounds"):
      hlox.eval_shape(jnp.searchsorted, too_long, v)


def test_key_arrays_compare_equal():
  k = hlox.random.key(0)
  ks = hlox.random.split(k, 3)
  assert bool(k == k) and not bool(k != k) and bool(jnp.isclose(k, k))
  np.testing.assert_array_equal(ks != ks[::-1], [True, False, True])
  np.testing.assert_array_equal(hlox.jit(jnp.equal)(ks, ks[1]), [False, True, False])
  with pytest.raises(TypeError):
    jnp.equal(k, 1)


@pytest.mark.parametrize("op", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_bfloat16_convolution_rounds_once(op, mode):
  rng = np.random.default_rng(0)
  x, y = (rng.standard_normal(12) * 5).astype(jnp.bfloat16), \
      (rng.standard_normal(12) * 5).astype(jnp.bfloat16)
  want = getattr(np, op)(x.astype(np.float64), y.astype(np.float64), mode=mode)
  got = getattr(jnp, op)(x, y, mode=mode)
  assert got.dtype == jnp.bfloat16
  # One final rounding to bfloat16 (8 bits of mantissa); each-step rounding is far worse.
  np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-2,
                             atol=1e-3 * np.abs(want).max())
