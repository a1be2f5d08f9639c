"""``jnp.convolve``/``correlate`` of inexact inputs are one ``conv_general_dilated`` (as in
JAX), so transformations with rules for convolutions handle them: ``sparsify`` of a
convolution with a BCOO operand gives NumPy's values."""
from functools import partial

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental import sparse


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na, nv", [(10, 5), (5, 10), (7, 7), (1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_matches_numpy(mode, na, nv, dtype):
  rng = np.random.RandomState(na * 10 + nv)
  a = rng.randn(na).astype(dtype)
  v = rng.randn(nv).astype(dtype)
  if dtype == np.complex64:
    a = a + 1j * rng.randn(na).astype(np.float32)
  np.testing.assert_allclose(jnp.convolve(a, v, mode=mode), np.convolve(a, v, mode=mode),
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(jnp.correlate(a, v, mode=mode), np.correlate(a, v, mode=mode),
                             rtol=1e-5, atol=1e-5)


def test_one_convolution_in_the_jaxpr():
  prims = [e.primitive.name for e in hlox.make_jaxpr(jnp.convolve)(
      np.ones(4, np.float32), np.ones(3, np.float32)).eqns[0].params["jaxpr"].jaxpr.eqns]
  assert prims.count("conv_general_dilated") == 1 and "gather" not in prims


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sparse_lhs", [True, False])
def test_sparsify_convolve(mode, sparse_lhs):
  rng = np.random.RandomState(0)
  x = np.where(rng.rand(10) > 0.5, rng.randn(10), 0).astype(np.float32)
  y = rng.randn(5).astype(np.float32)
  args = (sparse.BCOO.fromdense(x), y) if sparse_lhs else (y, sparse.BCOO.fromdense(x))
  dense = (x, y) if sparse_lhs else (y, x)
  out = sparse.sparsify(partial(jnp.convolve, mode=mode))(*args)
  assert isinstance(out, sparse.BCOO)
  np.testing.assert_allclose(out.todense(), np.convolve(*dense, mode=mode), rtol=1e-5,
                             atol=1e-5)
