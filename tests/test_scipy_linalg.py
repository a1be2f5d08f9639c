"""hlox.scipy.linalg against SciPy: factor/solve pairs, lu, qr, solve_triangular, solve,
block_diag, toeplitz; gradients, jit, vmap, bad input, and JAX as an oracle."""
import numpy as np
import pytest
import scipy.linalg as sla

import hlox
from hlox.config import enable_x64
from hlox.scipy import linalg as hsl
from tests.check_grads import check_grads


@pytest.fixture
def x64():
  with enable_x64():
    yield


def _mats(seed=0, dtype=np.float64):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((4, 4)) + 3 * np.eye(4)
  if np.dtype(dtype).kind == "c":
    a = a + 1j * rng.standard_normal((4, 4))
  spd = a @ np.conj(a.T) + 4 * np.eye(4)
  b = rng.standard_normal((4, 2)).astype(dtype)
  return a.astype(dtype), spd.astype(dtype), b


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_factor_solve_pairs_against_scipy(dtype, x64):
  a, spd, b = _mats(0, dtype)
  for lower in (False, True):
    np.testing.assert_allclose(np.asarray(hsl.cholesky(spd, lower=lower)),
                               sla.cholesky(spd, lower=lower), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(hsl.cho_solve(hsl.cho_factor(spd, lower=lower), b)),
                               sla.cho_solve(sla.cho_factor(spd, lower=lower), b), rtol=1e-10)
  lu, piv = hsl.lu_factor(a)
  ref_lu, ref_piv = sla.lu_factor(a)
  np.testing.assert_allclose(np.asarray(lu), ref_lu, rtol=1e-12, atol=1e-12)
  np.testing.assert_array_equal(np.asarray(piv), ref_piv)
  for trans in (0, 1, 2):
    np.testing.assert_allclose(np.asarray(hsl.lu_solve((lu, piv), b, trans=trans)),
                               sla.lu_solve((ref_lu, ref_piv), b, trans=trans), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(hsl.lu_solve((lu, piv), b[:, 0])),
                             sla.lu_solve((ref_lu, ref_piv), b[:, 0]), rtol=1e-10)


def test_lu_qr_triangular_against_scipy(x64):
  rng = np.random.default_rng(1)
  for shape in [(4, 4), (5, 3), (3, 5)]:
    a = rng.standard_normal(shape)
    for got, ref in zip(hsl.lu(a), sla.lu(a)):
      np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)
    pl, u = hsl.lu(a, permute_l=True)
    np.testing.assert_allclose(np.asarray(pl) @ np.asarray(u), a, rtol=1e-12, atol=1e-12)
    for mode in ("full", "economic"):
      q, r = hsl.qr(a, mode=mode)
      qs, rs = sla.qr(a, mode=mode)
      assert q.shape == qs.shape and r.shape == rs.shape
      np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(rs), rtol=1e-10, atol=1e-12)
    r, = hsl.qr(a, mode="r")
    np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(sla.qr(a, mode="r")[0]),
                               rtol=1e-10, atol=1e-12)
  a, _, b = _mats(2)
  for trans in (0, 1, 2, "N", "T", "C"):
    for lower in (False, True):
      np.testing.assert_allclose(
          np.asarray(hsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=lower)),
          sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=lower),
          rtol=1e-10)


def test_solve_inv_det(x64):
  a, spd, b = _mats(3)
  np.testing.assert_allclose(np.asarray(hsl.solve(a, b)), sla.solve(a, b), rtol=1e-10)
  for lower in (False, True):
    np.testing.assert_allclose(np.asarray(hsl.solve(spd, b, assume_a="pos", lower=lower)),
                               sla.solve(spd, b, assume_a="pos", lower=lower), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(hsl.inv(a)), sla.inv(a), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(hsl.det(a)), sla.det(a), rtol=1e-10)
  np.testing.assert_allclose(np.asarray(hlox.jit(hsl.solve)(a, b)), sla.solve(a, b),
                             rtol=1e-10)


def test_grads(x64):
  a, spd, b = _mats(4)
  # The factorization reads one triangle while the derivative (as JAX's) uses all of dA:
  # differentiate along symmetric directions.
  check_grads(lambda m, v: hsl.solve((m + m.T) / 2, v, assume_a="pos"), (spd, b), order=1,
              atol=1e-6, rtol=1e-6)
  check_grads(lambda m, v: hsl.solve_triangular(m, v, lower=True), (a, b), order=1,
              atol=1e-6, rtol=1e-6)
  check_grads(lambda m, v: hsl.lu_solve(hsl.lu_factor(m), v), (a, b), order=1, atol=1e-6,
              rtol=1e-6)
  check_grads(lambda m: hsl.cholesky((m + m.T) / 2, lower=True), (spd,), order=1,
              atol=1e-6, rtol=1e-6)


def test_vmap_matches_loop(x64):
  rng = np.random.default_rng(5)
  a = rng.standard_normal((3, 4, 4)) + 3 * np.eye(4)
  b = rng.standard_normal((3, 4))
  out = hlox.vmap(lambda m, v: hsl.lu_solve(hsl.lu_factor(m), v))(a, b)
  ref = np.stack([sla.lu_solve(sla.lu_factor(a[i]), b[i]) for i in range(3)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-10)


def test_block_diag_toeplitz():
  x = np.ones((2, 2), np.float32)
  y = 3 * np.ones((1, 3), np.float32)
  z = np.array([5.], np.float32)
  np.testing.assert_array_equal(np.asarray(hsl.block_diag(x, y, z)), sla.block_diag(x, y, z))
  assert hsl.block_diag().shape == (1, 0)
  c = np.array([1., 2., 3.], np.float32)
  r = np.array([9., 5., 6., 7.], np.float32)
  np.testing.assert_array_equal(np.asarray(hsl.toeplitz(c, r)), sla.toeplitz(c, r))
  cc = np.array([1 + 1j, 2, 3j], np.complex64)
  np.testing.assert_array_equal(np.asarray(hsl.toeplitz(cc)), sla.toeplitz(cc))
  batched = np.asarray(hsl.toeplitz(np.stack([c, 2 * c])))
  np.testing.assert_array_equal(batched[1], sla.toeplitz(2 * c))


def test_bad_input():
  with pytest.raises(ValueError, match="square"):
    hsl.cholesky(np.ones((2, 3)))
  with pytest.raises(ValueError, match="incompatible shapes"):
    hsl.solve_triangular(np.eye(3), np.ones(4))
  with pytest.raises(ValueError, match="Invalid 'trans'"):
    hsl.solve_triangular(np.eye(3), np.ones(3), trans=3)
  with pytest.raises(ValueError, match="assume_a"):
    hsl.solve(np.eye(3), np.ones(3), assume_a="banded")
  with pytest.raises(ValueError, match="Unsupported QR"):
    hsl.qr(np.eye(3), mode="raw")
  with pytest.raises(ValueError, match="at most 2 dimensions"):
    hsl.block_diag(np.ones((2, 2, 2)))
  with pytest.raises(TypeError):
    hsl.toeplitz([1, 2, 3])  # lists are not arrays, as in JAX


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax", reason="JAX is an optional test oracle")
  jsl = jax.scipy.linalg
  a, spd, b = (x.astype(np.float32) for x in _mats(6))
  cases = [
      lambda L: L.cholesky(spd),
      lambda L: L.cho_solve(L.cho_factor(spd, lower=True), b),
      lambda L: L.lu_factor(a),
      lambda L: L.lu(a),
      lambda L: L.lu_solve(L.lu_factor(a), b, trans=1),
      lambda L: L.solve_triangular(a, b, lower=True, trans="T"),
      lambda L: L.solve(spd, b, assume_a="pos"),
      lambda L: L.qr(a),
      lambda L: L.block_diag(a, b),
      lambda L: L.toeplitz(b[:, 0], b[:, 1]),
  ]
  for f in cases:
    mine, theirs = f(hsl), f(jsl)
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for x, y in zip(mine, theirs):
      assert np.asarray(x).dtype == np.asarray(y).dtype
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)
