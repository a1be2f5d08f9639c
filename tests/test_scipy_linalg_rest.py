"""The rest of hlox.scipy.linalg against SciPy (and JAX where installed): the special
matrices, qr_multiply, rsf2csf, funm, solve_sylvester and eigh_tridiagonal; float32/float64,
batches, jit vs eager, vmap vs a loop, gradients and bad input."""
import numpy as np
import pytest
import scipy.linalg as sla

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.scipy import linalg as hsl
from tests.check_grads import check_grads


@pytest.fixture
def x64():
  with enable_x64():
    yield


def _close(got, expected, tol, dtype=None):
  got = np.asarray(got)
  assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
  if dtype is not None:
    assert got.dtype == dtype, (got.dtype, dtype)
  np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# --- special matrices ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_matrices_against_scipy(dtype, x64):
  rng = np.random.default_rng(0)
  c = rng.standard_normal(5).astype(dtype)
  r = rng.standard_normal(4).astype(dtype)
  tol = 1e-5 if dtype == np.float32 else 1e-12
  cases = [
      (lambda L: L.circulant(c), None), (lambda L: L.hankel(c), None),
      (lambda L: L.hankel(c, r), None), (lambda L: L.leslie(c, r), None),
      (lambda L: L.companion(c), None), (lambda L: L.fiedler(c), None),
      (lambda L: L.fiedler_companion(c), None), (lambda L: L.fiedler_companion(c[:2]), None),
      (lambda L: L.toeplitz(c, r), None),
  ]
  for n in (2, 5, 7):
    for mode in ("full", "valid", "same"):
      cases.append((lambda L, n=n, mode=mode: L.convolution_matrix(c, n, mode), None))
  # Eagerly in float32; in float64 all cases as one jitted program.
  if dtype == np.float32:
    for f, _ in cases:
      _close(f(hsl), f(sla), tol, dtype)
  got = hlox.jit(lambda c, r: [f(hsl) for f, _ in cases])(c, r)
  for (f, _), g in zip(cases, got):
    _close(g, f(sla), tol, dtype)


def test_vector_matrices_batch_vmap_and_grads(x64):
  rng = np.random.default_rng(1)
  cs = rng.standard_normal((3, 4))
  rs = rng.standard_normal((3, 3))
  for name, args in [("circulant", (cs,)), ("hankel", (cs, rs)), ("leslie", (cs, rs)),
                     ("companion", (cs,)), ("fiedler", (cs,)), ("fiedler_companion", (cs,))]:
    f = getattr(hsl, name)
    loop = np.stack([getattr(sla, name)(*(a[i] for a in args)) for i in range(3)])
    _close(f(*args), loop, 1e-12)  # leading dimensions are a batch
    _close(hlox.vmap(f)(*args), loop, 1e-12)
  _close(hsl.convolution_matrix(cs, 3, "same"),
         np.stack([sla.convolution_matrix(x, 3, "same") for x in cs]), 1e-12)
  check_grads(lambda c, r: hsl.hankel(c, r), (cs[0], rs[0]), order=1)
  check_grads(hsl.companion, (cs[0] + 3.0,), order=1)
  check_grads(lambda c: hsl.convolution_matrix(c, 3), (cs[0],), order=1)


def test_size_matrices_against_scipy(x64):
  for n in (1, 6):
    # Everything for one n in one jitted program (eagerly it is the same code).
    got = hlox.jit(lambda: (
        hsl.hilbert(n), hsl.invhilbert(n), hsl.helmert(n), hsl.helmert(n, full=True),
        [hsl.pascal(n, k) for k in ("symmetric", "lower", "upper")],
        [hsl.invpascal(n, k) for k in ("symmetric", "lower", "upper")],
        [hsl.dft(n, sc) for sc in (None, "sqrtn", "n")]))()
    h, ih, he, hef, pas, ipas, dfts = got
    _close(h, sla.hilbert(n), 1e-12, np.float64)
    _close(ih, sla.invhilbert(n), 1e-7, np.float64)
    _close(he, sla.helmert(n), 1e-12, np.float64)
    _close(hef, sla.helmert(n, full=True), 1e-12, np.float64)
    for kind, p, ip in zip(("symmetric", "lower", "upper"), pas, ipas):
      _close(p, sla.pascal(n, kind), 1e-4, np.float32)  # float32, as JAX
      _close(ip, sla.invpascal(n, kind), 1e-9, np.float64)
    for scale, f in zip((None, "sqrtn", "n"), dfts):
      _close(f, sla.dft(n, scale), 1e-12, np.complex128)
  _close(hsl.invhilbert(4), sla.invhilbert(4), 1e-9, np.float64)  # eagerly, once
  _close(hsl.dft(4, dtype=np.complex64), sla.dft(4), 1e-6, np.complex64)
  for n in (1, 8):
    _close(hsl.hadamard(n), sla.hadamard(n), 0, np.int64)
    _close(hsl.hadamard(n, dtype=np.float32), sla.hadamard(n), 0, np.float32)


def test_special_matrices_default_dtypes():
  assert hsl.hilbert(3).dtype == np.float32 and hsl.dft(3).dtype == np.complex64
  assert hsl.hadamard(2).dtype == np.int32 and hsl.invhilbert(3).dtype == np.float32


def test_special_matrices_bad_input():
  with pytest.raises(ValueError, match="at least 2"):
    hsl.leslie(np.ones(1), np.ones(0))
  with pytest.raises(ValueError, match="one less"):
    hsl.leslie(np.ones(3), np.ones(3))
  with pytest.raises(ValueError, match="at least 2"):
    hsl.companion(np.ones(1))
  with pytest.raises(ValueError, match="nonzero"):
    hsl.fiedler_companion(np.ones(0))
  with pytest.raises(ValueError, match="n must be a positive"):
    hsl.convolution_matrix(np.ones(3), 0)
  with pytest.raises(ValueError, match="mode"):
    hsl.convolution_matrix(np.ones(3), 2, "bad")
  with pytest.raises(ValueError, match="power of 2"):
    hsl.hadamard(3)
  with pytest.raises(ValueError, match="kind"):
    hsl.pascal(3, "diagonal")
  with pytest.raises(ValueError, match="complex"):
    hsl.dft(3, dtype=np.float32)
  with pytest.raises(ValueError, match="scale"):
    hsl.dft(3, scale="m")
  with pytest.raises(ValueError, match="scalar"):
    hsl.hankel(np.float32(1))
  with pytest.raises(TypeError):
    hsl.circulant([1.0, 2.0])  # lists are not arrays, as in JAX


# --- qr_multiply ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_qr_multiply_against_scipy(dtype, x64):
  rng = np.random.default_rng(2)
  tol = 1e-5 if dtype == np.float32 else 1e-12
  for shape in [(5, 3), (3, 5)]:
    a = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
      a = a + 1j * rng.standard_normal(shape)
    k = min(shape)
    calls = []
    for mode in ("left", "right"):
      c = rng.standard_normal((k, 2) if mode == "left" else (2, shape[0])).astype(dtype)
      cv = c[:, 0] if mode == "left" else c[0]
      calls += [(c, dict(mode=mode, conjugate=conj)) for conj in (False, True)]
      calls += [(cv, dict(mode=mode)), (c, dict(mode=mode, pivoting=True))]
    # One jitted program for all the calls on this matrix (one eagerly).
    got = hlox.jit(lambda a: [hsl.qr_multiply(a, c, **kw) for c, kw in calls])(a)
    got.append(hsl.qr_multiply(a, *calls[0][:1], **calls[0][1]))
    calls.append(calls[0])
    for g, (c, kw) in zip(got, calls):
      for x, ref in zip(g, sla.qr_multiply(a, c, **kw)):
        _close(x, ref, tol)


def test_qr_multiply_batched_jit_and_errors(x64):
  rng = np.random.default_rng(3)
  a = rng.standard_normal((2, 5, 3))
  c = rng.standard_normal((2, 4, 5))
  cq, r = hlox.jit(lambda a, c: hsl.qr_multiply(a, c))(a, c)
  for i in range(2):
    ref = sla.qr_multiply(a[i], c[i])
    _close(cq[i], ref[0], 1e-12)
    _close(r[i], ref[1], 1e-12)
  cq_v, _ = hlox.vmap(hsl.qr_multiply)(a, c)
  _close(cq_v, cq, 1e-12)
  with pytest.raises(ValueError, match="c @ Q"):
    hsl.qr_multiply(a[0], c[0][:, :3])
  with pytest.raises(ValueError, match="Q @ c"):
    hsl.qr_multiply(a[0], c[0], mode="left")
  with pytest.raises(ValueError, match="mode"):
    hsl.qr_multiply(a[0], c[0], mode="up")


# --- rsf2csf, funm, solve_sylvester --------------------------------------------------------

def test_rsf2csf_against_scipy(x64):
  rng = np.random.default_rng(4)
  a = rng.standard_normal((2, 5, 5))
  for i in range(2):
    t, z = sla.schur(a[i])
    for got, ref in zip(hsl.rsf2csf(t, z), sla.rsf2csf(t, z)):
      _close(got, ref, 1e-12, np.complex128)
  t, z = np.stack([sla.schur(x)[0] for x in a]), np.stack([sla.schur(x)[1] for x in a])
  tt, zz = hlox.jit(hsl.rsf2csf)(t, z)
  np.testing.assert_allclose(np.asarray(zz @ tt @ np.conj(np.swapaxes(zz, -1, -2))), a,
                             atol=1e-12)
  t32, z32 = sla.schur(a[0].astype(np.float32))
  tc, _ = hsl.rsf2csf(t32, z32)
  assert tc.dtype == np.complex64
  _close(tc, sla.rsf2csf(t32, z32)[0], 1e-5)
  with pytest.raises(ValueError, match="square"):
    hsl.rsf2csf(np.ones((2, 3)), np.ones((2, 2)))
  with pytest.raises(ValueError, match="must match"):
    hsl.rsf2csf(np.eye(2), np.eye(3))


def test_funm_against_scipy(x64):
  rng = np.random.default_rng(5)
  a = rng.standard_normal((4, 4))
  f, err = hlox.jit(lambda a: hsl.funm(a, jnp.exp, disp=False))(a)
  ref, ref_err = sla.funm(a, np.exp, disp=False)
  _close(f, ref, 1e-11)
  assert float(err) < 1e-10 and abs(float(err) - ref_err) < 1e-12
  _close(hsl.funm(a.astype(np.float32), jnp.exp), sla.expm(a), 1e-4, np.complex64)
  with pytest.raises(ValueError, match="square"):
    hsl.funm(np.ones((2, 3)), jnp.exp)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(method, x64):
  rng = np.random.default_rng(6)
  a = rng.standard_normal((2, 4, 4))
  b = rng.standard_normal((2, 3, 3))
  c = rng.standard_normal((2, 4, 3))
  ref = np.stack([sla.solve_sylvester(a[i], b[i], c[i]) for i in range(2)])
  if method == "eigen":
    _close(hsl.solve_sylvester(a, b, c, method=method), ref, 1e-10, np.float64)
  _close(hlox.jit(lambda a, b, c: hsl.solve_sylvester(a, b, c, method=method))(a, b, c), ref,
         1e-10)
  # A and -B sharing an eigenvalue: no unique solution, NaNs as in JAX.
  assert np.isnan(np.asarray(hsl.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)),
                                                 method=method))).all()
  if method == "schur":
    got = hsl.solve_sylvester(a[0].astype(np.float32), b[0].astype(np.float32),
                              c[0].astype(np.float32))
    _close(got, ref[0], 1e-4, np.float32)


def test_solve_sylvester_bad_input():
  with pytest.raises(ValueError, match="Incompatible shapes"):
    hsl.solve_sylvester(np.eye(3), np.eye(3), np.ones((2, 3)))
  with pytest.raises(ValueError, match="Unrecognized method"):
    hsl.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="magic")


# --- eigh_tridiagonal ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_eigh_tridiagonal(dtype, x64):
  rng = np.random.default_rng(7)
  d = rng.standard_normal(8).astype(dtype)
  e = rng.standard_normal(7).astype(dtype)
  if np.dtype(dtype).kind == "c":
    e = e + 1j * rng.standard_normal(7)
  # JAX's convention: e is the superdiagonal, conj(e) the subdiagonal.
  t = np.diag(d) + np.diag(np.conj(e), -1) + np.diag(e, 1)
  w_ref = np.linalg.eigvalsh(t)
  tol = 1e-5 if dtype == np.float32 else 1e-12
  w = hsl.eigh_tridiagonal(d, e, eigvals_only=True)
  _close(w, w_ref, tol, np.finfo(dtype).dtype)
  _close(hlox.jit(lambda d, e: hsl.eigh_tridiagonal(d, e, eigvals_only=True))(d, e), w_ref,
         tol)
  _close(hsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 5)),
         w_ref[2:6], tol)
  if dtype == np.float32:
    return  # eigenvectors in the double-precision cases
  w, v = hlox.jit(hsl.eigh_tridiagonal)(d, e)
  v = np.asarray(v)
  assert v.dtype == dtype
  np.testing.assert_allclose(t @ v, v * np.asarray(w)[None, :], atol=tol * 100)
  np.testing.assert_allclose(np.conj(v.T) @ v, np.eye(8), atol=tol * 100)
  if dtype == np.float64:
    _, v_ref = sla.eigh_tridiagonal(d, e)
    _close(np.abs(v), np.abs(v_ref), 1e-10)


def test_eigh_tridiagonal_clusters_vmap_and_errors(x64):
  # A repeated eigenvalue: inverse iteration must orthogonalize within the cluster.
  d = np.array([1., 1., 1., 2., 3.])
  e = np.array([0., 0., 1e-9, 0.5])
  w, v = hlox.jit(hsl.eigh_tridiagonal)(d, e)
  t = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
  np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(t), atol=1e-12)
  np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(5), atol=1e-10)
  rng = np.random.default_rng(8)
  ds, es = rng.standard_normal((3, 6)), rng.standard_normal((3, 5))
  got = hlox.jit(hlox.vmap(lambda d, e: hsl.eigh_tridiagonal(d, e, eigvals_only=True)))(ds,
                                                                                         es)
  _close(got, np.stack([sla.eigh_tridiagonal(x, y, eigvals_only=True)
                        for x, y in zip(ds, es)]), 1e-12)
  _close(hsl.eigh_tridiagonal(np.array([2.]), np.zeros(0), eigvals_only=True), [2.], 0)
  with pytest.raises(TypeError, match="same dtype"):
    hsl.eigh_tridiagonal(ds[0], es[0].astype(np.float32))
  with pytest.raises(TypeError, match="float32 and float64"):
    hsl.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.int32))
  with pytest.raises(NotImplementedError, match="select='v'"):
    hsl.eigh_tridiagonal(ds[0], es[0], eigvals_only=True, select="v")
  with pytest.raises(ValueError, match="select_range"):
    hsl.eigh_tridiagonal(ds[0], es[0], eigvals_only=True, select="i")


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax", reason="JAX is an optional test oracle")
  jsl = jax.scipy.linalg
  rng = np.random.default_rng(9)
  a = rng.standard_normal((4, 4)).astype(np.float32)
  c = rng.standard_normal(4).astype(np.float32)
  r = rng.standard_normal(3).astype(np.float32)
  d, e = rng.standard_normal(5).astype(np.float32), rng.standard_normal(4).astype(np.float32)
  cases = [
      lambda L, M: (L.circulant(c), L.hankel(c, r), L.leslie(c, r), L.companion(c),
                    L.fiedler_companion(c), L.convolution_matrix(c, 3, "same")),
      lambda L, M: (L.hilbert(4), L.invhilbert(4), L.pascal(4), L.invpascal(4),
                    L.helmert(4, full=True), L.hadamard(4), L.dft(4)),
      lambda L, M: L.qr_multiply(a, a[:2]) + (L.funm(a, M.exp),
                                              L.eigh_tridiagonal(d, e, eigvals_only=True)),
  ]
  for f in cases:
    # One jitted program per case on each side.
    mine, theirs = hlox.jit(lambda: f(hsl, jnp))(), jax.jit(lambda: f(jsl, jax.numpy))()
    mine = mine if isinstance(mine, tuple) else (mine,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for x, y in zip(mine, theirs):
      assert np.asarray(x).dtype == np.asarray(y).dtype, (np.asarray(x).dtype, y.dtype)
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-4)
