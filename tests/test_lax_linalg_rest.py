"""hlox.lax.linalg's ormqr, symmetric_product, cholesky_update and qdwh against SciPy/NumPy
(and JAX where installed): values in float32/float64/complex, jit vs eager, vmap vs a loop,
gradients, bad input; and numpy.linalg.tensorsolve with ``axes`` against NumPy."""
import numpy as np
import pytest
import scipy.linalg as sla

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.lax import linalg as L
from hlox.lax.linalg import products
from tests.check_grads import check_grads


@pytest.fixture
def x64():
  with enable_x64():
    yield


def _randn(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _tol(dtype):
  return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


# --- ormqr ---------------------------------------------------------------------------------

@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_ormqr_against_scipy(dtype, shape, x64):
  rng = np.random.default_rng(0)
  a = _randn(rng, shape, dtype)
  (h, taus), _ = sla.qr(a, mode="raw")
  q = sla.qr(a)[0]
  m = shape[0]
  for left in (True, False):
    for transpose in (False, True):
      c = _randn(rng, (m, 2) if left else (2, m), dtype)
      qo = np.conj(q.T) if transpose else q
      expected = qo @ c if left else c @ qo
      got = L.ormqr(h, taus, c, left=left, transpose=transpose)
      assert got.dtype == dtype and got.shape == c.shape
      np.testing.assert_allclose(np.asarray(got), expected, rtol=_tol(dtype), atol=_tol(dtype))
      # The loop over reflectors (the lowering off CPU) agrees with LAPACK's ?ormqr.
      comp = hlox.jit(lambda h, t, c: products.ormqr_composition(
          h, t, c, left=left, transpose=transpose))(h, taus, c)
      np.testing.assert_allclose(np.asarray(comp), expected, rtol=_tol(dtype),
                                 atol=_tol(dtype))


def test_ormqr_batched_vmap_jit_and_jvp(x64):
  rng = np.random.default_rng(1)
  a = rng.standard_normal((3, 5, 3))
  hs, ts = zip(*[sla.qr(x, mode="raw")[0] for x in a])
  h, taus = np.stack(hs), np.stack(ts)
  c = rng.standard_normal((3, 5, 2))
  expected = np.stack([sla.qr(x)[0] @ y for x, y in zip(a, c)])
  np.testing.assert_allclose(np.asarray(L.ormqr(h, taus, c)), expected, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(np.asarray(hlox.jit(L.ormqr)(h, taus, c)), expected, rtol=1e-12,
                             atol=1e-12)
  got = hlox.vmap(L.ormqr, in_axes=(0, 0, 2), out_axes=2)(h, taus, np.moveaxis(c, 0, 2))
  np.testing.assert_allclose(np.moveaxis(np.asarray(got), 2, 0), expected, rtol=1e-12,
                             atol=1e-12)
  # A linear map of c: the JVP (and so the VJP, by transposition of the linear part).
  check_grads(lambda c: L.ormqr(h[0], taus[0], c, transpose=True), (c[0],), order=1)
  with pytest.raises(NotImplementedError, match="ormqr"):
    hlox.jvp(lambda h: L.ormqr(h, taus[0], c[0]), (h[0],), (h[0],))


def test_ormqr_bad_input():
  h, taus = np.ones((4, 3), np.float32), np.ones((3,), np.float32)
  with pytest.raises(ValueError, match="same number of rows"):
    L.ormqr(h, taus, np.ones((3, 2), np.float32))
  with pytest.raises(ValueError, match="same number of columns"):
    L.ormqr(h, taus, np.ones((3, 2), np.float32), left=False)
  with pytest.raises(TypeError, match="ormqr"):
    L.ormqr(h.astype(np.int32), taus, np.ones((4, 2), np.float32))


# --- symmetric_product ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symmetric_product(dtype, x64):
  rng = np.random.default_rng(2)
  a = rng.standard_normal((2, 3, 4)).astype(dtype)
  c = rng.standard_normal((2, 3, 3)).astype(dtype)
  c = c + np.swapaxes(c, -1, -2)
  expected = 2.0 * a @ np.swapaxes(a, -1, -2) - 0.5 * c
  f = lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=-0.5)  # noqa: E731
  for got in (f(a, c), hlox.jit(f)(a, c), hlox.vmap(f)(a, c)):
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), expected, rtol=_tol(dtype), atol=_tol(dtype))
  # symmetrize_output copies the lower triangle up (c here is not symmetric).
  c_ns = rng.standard_normal((3, 3)).astype(dtype)
  got = L.symmetric_product(a[0], c_ns, beta=1.0, symmetrize_output=True)
  lower = np.tril(a[0] @ a[0].T + c_ns)
  np.testing.assert_allclose(np.asarray(got), lower + np.tril(lower, -1).T, rtol=_tol(dtype),
                             atol=_tol(dtype))
  if dtype == np.float64:
    check_grads(f, (a, c), order=2)


def test_symmetric_product_bad_input():
  with pytest.raises(ValueError, match="symmetric_product"):
    L.symmetric_product(np.ones((3, 4), np.float32), np.ones((4, 4), np.float32))
  with pytest.raises(TypeError, match="symmetric_product"):
    L.symmetric_product(np.ones((3, 4), np.complex64), np.ones((3, 3), np.complex64))


# --- cholesky_update -----------------------------------------------------------------------

def _spd_factor(rng, n, dtype):
  x = rng.standard_normal((n, n))
  return sla.cholesky(x @ x.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_update(dtype, x64):
  rng = np.random.default_rng(3)
  r = np.stack([_spd_factor(rng, 4, dtype) for _ in range(3)])
  w = rng.standard_normal((3, 4)).astype(dtype)
  w[1, 0] = 0  # the rotation that has nothing to zero
  expected = np.stack([sla.cholesky(x.T @ x + np.outer(v, v)) for x, v in zip(r, w)])
  tol = 1e-4 if dtype == np.float32 else 1e-12
  for got in (L.cholesky_update(r[0], w[0])[None], hlox.jit(L.cholesky_update)(r, w),
              hlox.vmap(L.cholesky_update)(r, w)):
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), expected[:len(got)], rtol=tol, atol=tol)
  if dtype == np.float64:
    # Perturb R within the upper triangles only: the update reads them as Cholesky factors.
    f = lambda r, w: L.cholesky_update(jnp.triu(r), w)  # noqa: E731
    check_grads(f, (r[0], w[0]), order=1, atol=1e-6, rtol=1e-6)


def test_cholesky_update_bad_input():
  with pytest.raises(ValueError, match="Rank-1 update"):
    L.cholesky_update(np.eye(3, dtype=np.float32), np.ones(4, np.float32))


# --- qdwh ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_qdwh_against_scipy_polar(dtype, x64):
  rng = np.random.default_rng(4)
  x = _randn(rng, (6, 4), dtype)
  u_ref, h_ref = sla.polar(x)
  tol = 1e-5 if dtype == np.float32 else 1e-12
  # Eagerly once (op by op, slow); jitted for every dtype.
  runs = [hlox.jit(L.qdwh)(x)] + ([L.qdwh(x)] if dtype == np.float32 else [])
  for u, h, k, ok in runs:
    assert u.dtype == dtype and h.dtype == dtype
    assert bool(ok) and 0 < int(k) <= 10
    np.testing.assert_allclose(np.asarray(u), u_ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(h), h_ref, rtol=tol, atol=tol * 10)


def test_qdwh_dynamic_shape_vmap_and_errors(x64):
  rng = np.random.default_rng(5)
  x = rng.standard_normal((5, 3))
  padded = np.zeros((7, 5))
  padded[:5, :3] = x
  u, h, _, ok = hlox.jit(lambda p: L.qdwh(p, dynamic_shape=(5, 3)))(padded)
  u_ref, h_ref = sla.polar(x)
  assert bool(ok)
  np.testing.assert_allclose(np.asarray(u)[:5, :3], u_ref, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(np.asarray(h)[:3, :3], h_ref, rtol=1e-11, atol=1e-11)
  xs = rng.standard_normal((3, 4, 4))
  us, hs, ks, oks = hlox.jit(hlox.vmap(L.qdwh))(xs)
  qdwh = hlox.jit(L.qdwh)
  for i in range(3):
    u_i, h_i, k_i, _ = qdwh(xs[i])
    np.testing.assert_allclose(np.asarray(us[i]), np.asarray(u_i), rtol=1e-12, atol=1e-12)
    assert int(ks[i]) == int(k_i)
  assert np.all(np.asarray(oks))
  # A capped iteration count reports that it has not converged.
  _, _, k, ok = hlox.jit(lambda x: L.qdwh(x, max_iterations=1))(xs[0])
  assert int(k) == 1 and not bool(ok)
  with pytest.raises(ValueError, match="M >= N"):
    L.qdwh(np.ones((2, 3)))
  with pytest.raises(ValueError, match="qdwh"):
    L.qdwh(np.ones(3))


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax", reason="JAX is an optional test oracle")
  jl = jax.lax.linalg
  rng = np.random.default_rng(6)
  x = rng.standard_normal((6, 4)).astype(np.float32)
  (h, taus), _ = sla.qr(x, mode="raw")
  c = rng.standard_normal((6, 3)).astype(np.float32)
  r = _spd_factor(rng, 4, np.float32)
  w = rng.standard_normal(4).astype(np.float32)
  sym = rng.standard_normal((6, 6)).astype(np.float32)
  cases = [
      lambda M: M.qdwh(x),
      lambda M: M.ormqr(h, taus, c, transpose=True),
      lambda M: M.cholesky_update(r, w),
      lambda M: M.symmetric_product(x, sym, alpha=0.5, beta=2.0, symmetrize_output=True),
  ]
  for f in cases:
    mine, theirs = hlox.jit(lambda: f(L))(), f(jl)
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(mine, theirs):
      assert np.asarray(a).dtype == np.asarray(b).dtype
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


# --- numpy.linalg.tensorsolve with axes (was "moveaxis: repeated axis") ---------------------

def test_tensorsolve_axes_against_numpy(x64):
  rng = np.random.default_rng(7)
  a = rng.standard_normal((6, 2, 3))
  b = rng.standard_normal((2, 3))
  np.testing.assert_allclose(np.asarray(jnp.linalg.tensorsolve(a, b, axes=(0,))),
                             np.linalg.tensorsolve(a, b, axes=(0,)), rtol=1e-10)
  a = rng.standard_normal((2, 3, 2, 3))
  b = rng.standard_normal((2, 3))
  for axes in [(1, 0), (0, 1), (3, 2)]:
    np.testing.assert_allclose(np.asarray(jnp.linalg.tensorsolve(a, b, axes=axes)),
                               np.linalg.tensorsolve(a, b, axes=axes), rtol=1e-9, atol=1e-12)
  f = hlox.jit(lambda a, b: jnp.linalg.tensorsolve(a, b, axes=(1, 0)))
  np.testing.assert_allclose(np.asarray(f(a, b)), np.linalg.tensorsolve(a, b, axes=(1, 0)),
                             rtol=1e-9, atol=1e-12)
