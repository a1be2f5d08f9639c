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
