"""hlox.scipy.linalg's spectral functions (hlox/scipy/_linalg_spectral.py): eigh, svd, schur,
hessenberg, polar, sqrtm, expm, expm_frechet against SciPy, by identities, under jit, vmap and
differentiation, with bad inputs, and against JAX when installed."""
import numpy as np
import pytest
import scipy.linalg as sla

import hlox
import hlox.numpy as jnp
import hlox.scipy.linalg as hsl
from hlox.config import enable_x64

from tests.check_grads import check_grads

_TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10,
        np.dtype(np.complex64): 1e-4, np.dtype(np.complex128): 1e-10}


def _close(actual, expected, dtype, scale=1.0):
  tol = _TOL[np.dtype(dtype)] * scale
  np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def _rand(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_expm_matches_scipy(dtype):
  rng = np.random.default_rng(0)
  expm = hlox.jit(hsl.expm)  # one compilation for the four norms
  with enable_x64():
    # Norms from tiny to large pick every Padé degree and several squarings.
    for scale in (1e-3, 0.3, 1.0, 4.0):
      a = scale * _rand(rng, (4, 4), dtype)
      ref = sla.expm(a.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64))
      out = expm(a)
      assert out.dtype == dtype
      _close(out, ref, dtype, 20 * max(1.0, np.abs(ref).max()))
    batch = _rand(rng, (2, 3, 3, 3), dtype)
    _close(hlox.jit(hsl.expm)(batch), np.stack([[sla.expm(m) for m in b] for b in batch]),
           dtype, 50)


def test_expm_upper_triangular_and_too_many_squarings():
  rng = np.random.default_rng(1)
  a = np.triu(rng.standard_normal((4, 4))).astype(np.float32)
  _close(hsl.expm(a, upper_triangular=True), sla.expm(a), np.float32, 20)
  big = 1e4 * np.eye(2, dtype=np.float32)
  assert np.isnan(np.asarray(hsl.expm(big, max_squarings=4))).all()
  with pytest.raises(ValueError, match="square matrix"):
    hsl.expm(np.ones((2, 3), np.float32))


def test_expm_frechet_and_grads():
  rng = np.random.default_rng(2)
  with enable_x64():
    a, e = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    expm_a, frechet = hlox.jit(hsl.expm_frechet)(a, e)
    ref_expm, ref_frechet = sla.expm_frechet(a, e)
    _close(expm_a, ref_expm, np.float64, 10)
    _close(frechet, ref_frechet, np.float64, 10)
    check_grads(hlox.jit(hsl.expm), (0.5 * a,), order=1, atol=1e-5, rtol=1e-5)
  with pytest.raises(ValueError, match="same shape"):
    hsl.expm_frechet(np.eye(2), np.eye(3))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_sqrtm_matches_scipy(dtype):
  rng = np.random.default_rng(3)
  a = _rand(rng, (4, 4), dtype)
  a = a @ np.conj(a.T) + np.eye(4, dtype=dtype)
  s = hsl.sqrtm(a)
  assert s.dtype == np.complex64  # complex, as JAX
  _close(s, sla.sqrtm(a), dtype, 50)
  _close(np.asarray(s) @ np.asarray(s), a, dtype, 50)
  with pytest.raises(NotImplementedError):
    hsl.sqrtm(a, blocksize=2)


def test_schur_outputs():
  rng = np.random.default_rng(4)
  a = rng.standard_normal((4, 4)).astype(np.float32)
  for output in ("real", "complex"):
    t, z = hsl.schur(a, output=output)
    assert t.dtype == (np.float32 if output == "real" else np.complex64)
    t, z = np.asarray(t), np.asarray(z)
    _close(z @ t @ np.conj(z.T), a, np.float32, 20)
  assert np.allclose(np.tril(t, -1), 0)  # the complex form is triangular
  with pytest.raises(ValueError, match="output"):
    hsl.schur(a, output="bad")


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_hessenberg_matches_scipy(dtype):
  rng = np.random.default_rng(5)
  with enable_x64():
    a = _rand(rng, (5, 5), dtype)
    h, q = hsl.hessenberg(a, calc_q=True)
    h_ref, q_ref = sla.hessenberg(a, calc_q=True)
    _close(h, h_ref, dtype, 20)
    _close(q, q_ref, dtype, 20)
    _close(np.asarray(q) @ np.asarray(h) @ np.conj(np.asarray(q).T), a, dtype, 20)
    _close(hsl.hessenberg(a), h_ref, dtype, 20)
    assert hsl.hessenberg(np.zeros((0, 0), dtype)).shape == (0, 0)


@pytest.mark.parametrize("side,shape", [("right", (5, 3)), ("left", (3, 5)), ("right", (4, 4))])
def test_polar_matches_scipy(side, shape):
  rng = np.random.default_rng(6)
  a = rng.standard_normal(shape).astype(np.float32)
  for method in ("qdwh", "svd"):
    u, p = hsl.polar(a, side=side, method=method)
    u_ref, p_ref = sla.polar(a, side=side)
    _close(u, u_ref, np.float32, 20)
    _close(p, p_ref, np.float32, 20)
  ub, pb = hlox.vmap(lambda x: hsl.polar(x, side=side, method="svd"))(np.stack([a, 2 * a]))
  _close(pb[1], 2 * p_ref, np.float32, 50)
  # JAX's QDWH path takes tall matrices on the right and wide ones on the left only.
  with pytest.raises(NotImplementedError, match="qdwh"):
    hsl.polar(np.ones((2, 3), np.float32), side="right")
  with pytest.raises(NotImplementedError, match="qdwh"):
    hsl.polar(np.ones((3, 2), np.float32), side="left")
  with pytest.raises(ValueError, match="side"):
    hsl.polar(a, side="up")


def test_eigh_and_svd_scipy_api():
  rng = np.random.default_rng(7)
  a = rng.standard_normal((4, 4)).astype(np.float32)
  s = a + a.T
  w, v = hsl.eigh(s)
  _close(w, np.linalg.eigvalsh(s), np.float32, 20)
  _close(hsl.eigh(s, eigvals_only=True), w, np.float32)
  # As JAX, the input is symmetrized first (``lower`` only matters for symmetric input).
  t = np.triu(s)
  _close(hsl.eigh(t, lower=False, eigvals_only=True), np.linalg.eigvalsh((t + t.T) / 2),
         np.float32, 20)
  with pytest.raises(NotImplementedError, match="b=None"):
    hsl.eigh(s, np.eye(4))
  u, sv, vh = hsl.svd(a)
  _close(sv, sla.svd(a, compute_uv=False), np.float32, 20)
  _close(hsl.svd(a, compute_uv=False), sv, np.float32)
  assert hsl.svd(np.eye(3, dtype=np.int32), compute_uv=False).dtype == np.float32


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax")
  import jax.scipy.linalg as jsl
  rng = np.random.default_rng(8)
  a = rng.standard_normal((4, 4)).astype(np.float32)
  spd = a @ a.T + np.eye(4, dtype=np.float32)
  cases = [
      (lambda L: L.expm(a), 1e-4),
      (lambda L: L.expm(3 * a), 1e-3),
      (lambda L: L.sqrtm(spd), 1e-4),
      (lambda L: L.polar(a, method="svd")[1], 1e-4),
      (lambda L: L.polar(a)[1], 1e-3),
      (lambda L: L.hessenberg(a), 1e-4),
      (lambda L: L.expm_frechet(a, spd, compute_expm=False), 1e-3),
  ]
  for i, (prog, tol) in enumerate(cases):
    ours = np.asarray(hlox.jit(lambda: prog(hsl))())
    theirs = np.asarray(jax.jit(lambda: prog(jsl))())
    assert ours.dtype == theirs.dtype, i
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol * np.abs(theirs).max(),
                               err_msg=f"case {i}")
  g_ours = hlox.jit(hlox.grad(lambda x: jnp.sum(hsl.expm(x))))(0.5 * a)
  g_jax = jax.jit(jax.grad(lambda x: jax.numpy.sum(jsl.expm(x))))(0.5 * a)
  np.testing.assert_allclose(np.asarray(g_ours), np.asarray(g_jax), rtol=1e-3, atol=1e-3)
