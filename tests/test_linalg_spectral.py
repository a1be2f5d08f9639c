"""Spectral linear algebra (hlox/lax/linalg/spectral.py, hlox/numpy/linalg_spectral.py):
eigh, svd, eig, schur, hessenberg, tridiagonal and jnp.linalg's eigh/eig/svd/pinv/lstsq/
matrix_rank/cond/norm, against NumPy/SciPy, by reconstruction identities, under jit, vmap and
differentiation (check_grads in float64), with bad inputs, and against JAX when installed."""
import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings, strategies as st

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.lax import linalg

from tests.check_grads import check_grads

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
_TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}


def _tol(dtype):
  return _TOL[np.dtype(dtype).type]


def _rand(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _herm(a):
  return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _H(a):
  return np.conj(np.swapaxes(a, -1, -2))


def _close(actual, expected, dtype, scale=1.0):
  tol = _tol(dtype) * scale
  np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


# --- eigh ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh_matches_numpy_and_reconstructs(dtype, shape):
  rng = np.random.default_rng(0)
  with enable_x64():
    a = _herm(_rand(rng, shape, dtype))
    v, w = linalg.eigh(a)
    vj, wj = hlox.jit(linalg.eigh)(a)
    real = np.finfo(dtype).dtype
    assert v.dtype == dtype and w.dtype == real
    assert v.shape == shape and w.shape == shape[:-1]
    v, w = np.asarray(v), np.asarray(w)
    _close(w, np.linalg.eigvalsh(a), dtype, 10)
    _close(wj, w, dtype)
    _close(v @ (w[..., None] * _H(v)), a, dtype, 10)  # V diag(w) V^H = A
    _close(_H(v) @ v, np.broadcast_to(np.eye(shape[-1]), shape), dtype, 10)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle_without_symmetrizing(lower):
  rng = np.random.default_rng(1)
  a = rng.standard_normal((5, 5)).astype(np.float32)  # not symmetric
  v, w = linalg.eigh(a, lower=lower, symmetrize_input=False)
  ref = np.linalg.eigvalsh(a, UPLO="L" if lower else "U")
  _close(w, ref, np.float32, 10)
  w2 = jnp.linalg.eigvalsh(a, UPLO="L" if lower else "U", symmetrize_input=False)
  _close(w2, ref, np.float32, 10)


def test_eigh_subset_by_index():
  rng = np.random.default_rng(2)
  a = _herm(_rand(rng, (2, 6, 6), np.float32))
  v_full, w_full = linalg.eigh(a)
  v, w = linalg.eigh(a, subset_by_index=(2, 5))
  assert v.shape == (2, 6, 3) and w.shape == (2, 3)
  _close(w, np.asarray(w_full)[..., 2:5], np.float32)
  _close(np.abs(np.asarray(v)), np.abs(np.asarray(v_full))[..., 2:5], np.float32, 10)
  with pytest.raises(ValueError, match="subset_by_index"):
    linalg.eigh(a, subset_by_index=(4, 7))


def test_eigh_empty_and_nan():
  v, w = linalg.eigh(np.zeros((2, 0, 0), np.float32))
  assert v.shape == (2, 0, 0) and w.shape == (2, 0)
  a = np.stack([np.eye(3), np.full((3, 3), np.nan)]).astype(np.float32)
  v, w = jnp.linalg.eigh(a)[::-1]
  assert np.isnan(np.asarray(w)[1]).all() and np.isnan(np.asarray(v)[1]).all()
  _close(np.asarray(w)[0], np.ones(3), np.float32)


def test_eigh_grads_float64():
  rng = np.random.default_rng(3)

  def f(x):
    v, w = linalg.eigh(x)
    # Eigenvectors only up to sign: compare sign-invariant products.
    return w, v * v[..., :1, :]
  with enable_x64():
    check_grads(f, (rng.standard_normal((4, 4)),), order=2, atol=1e-5, rtol=1e-5)
    check_grads(jnp.linalg.eigvalsh, (rng.standard_normal((2, 3, 3)),), order=1,
                atol=1e-5, rtol=1e-5)


def test_eigh_grads_complex128():
  rng = np.random.default_rng(4)

  def f(x):
    v, w = linalg.eigh(x)
    return w, v * jnp.conj(v[..., :1, :])  # invariant under a phase per eigenvector
  with enable_x64():
    check_grads(f, (_rand(rng, (3, 3), np.complex128),), order=2, atol=1e-5, rtol=1e-5)


def test_eigh_degenerate_gradient_of_eigenvalues_is_finite():
  # Equal eigenvalues make eigenvector tangents infinite (as JAX), but the eigenvalues' own
  # derivative stays finite and exact: d(sum w)/dA = I.
  g = hlox.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x)))(np.eye(3, dtype=np.float32))
  _close(g, np.eye(3), np.float32)


# --- svd -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 3, 5)])
def test_svd_matches_numpy_and_reconstructs(dtype, shape):
  rng = np.random.default_rng(5)
  with enable_x64():
    a = _rand(rng, shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    for full in (True, False):
      u, s, vh = linalg.svd(a, full_matrices=full)
      assert s.dtype == np.finfo(dtype).dtype and u.dtype == dtype
      assert u.shape == shape[:-2] + (m, m if full else k)
      assert vh.shape == shape[:-2] + (n if full else k, n)
      u, s, vh = (np.asarray(x) for x in (u, s, vh))
      _close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
      _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)  # U S V^H = A
      ku = u.shape[-1]
      _close(_H(u) @ u, np.broadcast_to(np.eye(ku), u.shape[:-2] + (ku, ku)), dtype, 10)
    s_only = hlox.jit(lambda x: linalg.svd(x, compute_uv=False))(a)
    _close(s_only, s, dtype, 10)


def test_svd_qr_algorithm_and_subset():
  rng = np.random.default_rng(6)
  a = rng.standard_normal((6, 4)).astype(np.float32)
  u, s, vh = linalg.svd(a, full_matrices=False, algorithm=linalg.SvdAlgorithm.QR)
  _close(s, np.linalg.svd(a, compute_uv=False), np.float32, 10)
  _close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), a, np.float32, 10)
  u2, s2, vh2 = linalg.svd(a, full_matrices=False, subset_by_index=(1, 3))
  assert u2.shape == (6, 2) and s2.shape == (2,) and vh2.shape == (2, 4)
  _close(s2, np.asarray(s)[1:3], np.float32, 10)
  with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
    linalg.svd(a, subset_by_index=(1, 3))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
def test_svd_empty(shape):
  a = np.zeros(shape, np.float32)
  for full in (True, False):
    u, s, vh = jnp.linalg.svd(a, full_matrices=full)
    ref = np.linalg.svd(a, full_matrices=full)
    assert [x.shape for x in (u, s, vh)] == [x.shape for x in ref]
  assert jnp.linalg.svd(a, compute_uv=False).shape == shape[:-2] + (0,)


def _svd_vectors(x):
  u, s, vh = linalg.svd(x, full_matrices=False)
  # Singular vectors only up to a sign per pair: compare sign-invariant products.
  return s, u * u[..., :1, :], vh * vh[..., :, :1]


@pytest.mark.parametrize("shape,order", [((5, 3), 2), ((4, 4), 1), ((3, 5), 1)])
def test_svd_grads_float64(shape, order):
  rng = np.random.default_rng(7)
  with enable_x64():
    x = rng.standard_normal(shape)
    check_grads(_svd_vectors, (x,), order=order, atol=1e-5, rtol=1e-5)
    check_grads(jnp.linalg.svdvals, (x,), order=order, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4)])
def test_svd_grads_float64_order2_all_shapes(shape):
  rng = np.random.default_rng(7)
  with enable_x64():
    check_grads(_svd_vectors, (rng.standard_normal(shape),), order=2, atol=1e-5, rtol=1e-5)


def test_svd_grads_complex128():
  rng = np.random.default_rng(8)
  with enable_x64():
    check_grads(jnp.linalg.svdvals, (_rand(rng, (3, 4), np.complex128),), order=1, atol=1e-5,
                rtol=1e-5)
    # U S V^H is invariant under the phases and equals the input: its derivative is the
    # identity map.
    def recon(x):
      u, s, vh = linalg.svd(x, full_matrices=False)
      return (u * s[..., None, :].astype(u.dtype)) @ vh
    check_grads(recon, (_rand(rng, (3, 3), np.complex128),), order=1, atol=1e-5, rtol=1e-5)


def test_svd_full_matrices_jvp_not_implemented_for_rectangular():
  with pytest.raises(NotImplementedError, match="full matrices"):
    hlox.jvp(lambda x: linalg.svd(x)[0], (np.ones((3, 2), np.float32),),
             (np.ones((3, 2), np.float32),))


# --- eig -----------------------------------------------------------------------------------

def _sort_complex(w):
  w = np.asarray(w)
  return np.take_along_axis(w, np.lexsort((w.imag, w.real), axis=-1), -1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_numpy_and_identities(dtype):
  rng = np.random.default_rng(9)
  with enable_x64():
    a = _rand(rng, (2, 4, 4), dtype)
    w, vl, vr = linalg.eig(a)
    cdt = np.result_type(dtype, np.complex64)
    assert w.dtype == cdt and vl.dtype == cdt and vr.dtype == cdt
    w, vl, vr = (np.asarray(x) for x in (w, vl, vr))
    _close(_sort_complex(w), _sort_complex(np.linalg.eigvals(a)), dtype, 10)
    _close(a @ vr, vr * w[..., None, :], dtype, 10)  # A vr = vr diag(w)
    _close(_H(vl) @ a, w[..., :, None] * _H(vl), dtype, 10)  # vl^H A = diag(w) vl^H
    w_only, = linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    _close(w_only, w, dtype, 10)
    w2, vr2 = hlox.jit(lambda x: linalg.eig(x, compute_left_eigenvectors=False))(a)
    _close(vr2, vr, dtype, 10)


def test_eig_numpy_api():
  rng = np.random.default_rng(10)
  a = rng.standard_normal((5, 5)).astype(np.float32)
  w, v = jnp.linalg.eig(a)
  _close(_sort_complex(w), _sort_complex(np.linalg.eigvals(a)), np.float32, 10)
  _close(a @ np.asarray(v), np.asarray(v) * np.asarray(w), np.float32, 10)
  _close(jnp.linalg.eigvals(a), w, np.float32)
  w0, v0 = jnp.linalg.eig(np.zeros((0, 0), np.float32))
  assert w0.shape == (0,) and v0.shape == (0, 0)


def test_eig_grads_float64():
  rng = np.random.default_rng(19)
  with enable_x64():
    # Eigenvalues: order 1 (a second derivative needs eigenvector derivatives; JAX raises
    # there too).
    check_grads(jnp.linalg.eigvals, (rng.standard_normal((4, 4)),), order=1, atol=1e-5,
                rtol=1e-5)
    check_grads(jnp.linalg.eigvals, (_rand(rng, (3, 3), np.complex128),), order=1, atol=1e-5,
                rtol=1e-5)
    # Eigenvectors (opt-in), at a matrix with distinct real eigenvalues.
    q = rng.standard_normal((4, 4))
    a = q @ np.diag([1., 2., 3.5, 5.]) @ np.linalg.inv(q)
    check_grads(lambda x: linalg.eig(x, enable_eigvec_derivs=True), (a,), order=1, atol=1e-5,
                rtol=1e-5)


def test_eig_eigenvector_derivatives_need_opt_in():
  a = np.diag(np.arange(1., 4., dtype=np.float32))
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
    hlox.jvp(lambda x: jnp.linalg.eig(x)[1], (a,), (a,))


# --- schur, hessenberg, tridiagonal --------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_schur_reconstructs(dtype):
  rng = np.random.default_rng(11)
  with enable_x64():
    a = _rand(rng, (2, 4, 4), dtype)
    t, q = linalg.schur(a)
    t, q = np.asarray(t), np.asarray(q)
    _close(q @ t @ _H(q), a, dtype, 10)  # A = Q T Q^H
    _close(_H(q) @ q, np.broadcast_to(np.eye(4), a.shape), dtype, 10)
    below = np.tril(np.ones((4, 4)), -2 if np.dtype(dtype).kind == "f" else -1).astype(bool)
    assert np.all(t[..., below] == 0)  # (quasi-)upper triangular
    _close(_sort_complex(np.linalg.eigvals(t)), _sort_complex(np.linalg.eigvals(a)), dtype, 10)
    _close(linalg.schur(a, compute_schur_vectors=False), t, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg_matches_scipy(dtype):
  rng = np.random.default_rng(12)
  with enable_x64():
    a = _rand(rng, (5, 5), dtype)
    h, taus = linalg.hessenberg(a)
    assert h.shape == (5, 5) and taus.shape == (4,)
    _close(np.triu(np.asarray(h), -1), sla.hessenberg(a), dtype, 10)
    hb, tb = hlox.vmap(linalg.hessenberg)(np.stack([a, 2 * a]))
    _close(hb[1], hlox.jit(linalg.hessenberg)(2 * a)[0], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_lapack(dtype, lower):
  rng = np.random.default_rng(13)
  with enable_x64():
    a = _herm(_rand(rng, (5, 5), dtype))
    arr, d, e, taus = linalg.tridiagonal(a, lower=lower)
    real = np.finfo(dtype).dtype
    assert d.dtype == real and e.dtype == real and taus.dtype == dtype
    name = "hetrd" if np.dtype(dtype).kind == "c" else "sytrd"
    routine, = sla.get_lapack_funcs((name,), (a,))
    c_ref, d_ref, e_ref, tau_ref, info = routine(a, lower=int(lower))
    assert info == 0
    _close(d, d_ref, dtype, 10)
    _close(e, e_ref, dtype, 10)
    _close(taus, tau_ref, dtype, 10)
    # The tridiagonal matrix has A's eigenvalues.
    tri = np.diag(np.asarray(d)) + np.diag(np.asarray(e), 1) + np.diag(np.asarray(e), -1)
    _close(np.linalg.eigvalsh(tri), np.linalg.eigvalsh(a), dtype, 10)


# --- vmap and jit --------------------------------------------------------------------------

@pytest.mark.parametrize("name,fun", [
    ("eigh", lambda x: linalg.eigh(x)[1]),
    ("svd", lambda x: linalg.svd(x, compute_uv=False)),
    ("eig", lambda x: linalg.eig(x, compute_left_eigenvectors=False,
                                 compute_right_eigenvectors=False)[0]),
    ("schur", lambda x: jnp.abs(jnp.diagonal(linalg.schur(x)[0], axis1=-2, axis2=-1))),
])
def test_vmap_matches_loop(name, fun):
  rng = np.random.default_rng(14)
  x = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)  # mapped axis 1
  x = x + np.swapaxes(x, -1, -2)
  out = hlox.vmap(fun, in_axes=1)(x)
  loop = np.stack([np.asarray(fun(x[:, i])) for i in range(x.shape[1])])
  jitted = hlox.jit(hlox.vmap(fun, in_axes=1))(x)
  if name == "eig":
    out, loop, jitted = _sort_complex(out), _sort_complex(loop), _sort_complex(jitted)
  _close(out, loop, np.float32, 10)
  _close(jitted, out, np.float32, 10)


# --- bad input -----------------------------------------------------------------------------

def test_bad_input_errors():
  with pytest.raises(TypeError, match="eigh must have rank at least 2"):
    linalg.eigh(np.ones(3, np.float32), symmetrize_input=False)
  with pytest.raises(ValueError, match=r"\[\.\.\., n, n\].*\(2, 3\)"):
    linalg.eigh(np.ones((2, 3), np.float32), symmetrize_input=False)
  with pytest.raises(ValueError, match="eig must be a square matrix"):
    linalg.eig(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="schur must be a square matrix"):
    linalg.schur(np.ones((2, 3), np.float32))
  with pytest.raises(TypeError, match="svd must have rank at least 2"):
    jnp.linalg.svd(np.ones(3, np.float32))
  with pytest.raises(TypeError, match="eigh does not accept dtype int32"):
    linalg.eigh(np.eye(3, dtype=np.int32), symmetrize_input=False)
  with pytest.raises(NotImplementedError, match="float16"):
    jnp.linalg.eigh(np.eye(3, dtype=np.float16))
  with pytest.raises(TypeError, match="jnp.linalg.eigh"):
    jnp.linalg.eigh([[1., 0.], [0., 1.]])
  with pytest.raises(TypeError, match=r"jnp.linalg.eigh.*\(3,\)"):
    jnp.linalg.eigh(np.ones(3, np.float32))
  with pytest.raises(TypeError, match=r"jnp.linalg.eigh.*square.*\(2, 3\)"):
    jnp.linalg.eigh(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="UPLO"):
    jnp.linalg.eigh(np.eye(2), UPLO="X")
  with pytest.raises(TypeError, match="two-dimensional"):
    jnp.linalg.lstsq(np.ones((2, 3, 3)), np.ones((2, 3)))
  with pytest.raises(ValueError, match="Leading dimensions"):
    jnp.linalg.lstsq(np.ones((3, 3)), np.ones(2))
  with pytest.raises(ValueError, match="at least 2D"):
    jnp.linalg.cond(np.ones(3))
  with pytest.raises(ValueError, match="must not be empty"):
    jnp.linalg.cond(np.ones((0, 0)))
  with pytest.raises(ValueError, match="must be square"):
    jnp.linalg.cond(np.ones((2, 3)), 1)
  with pytest.raises(ValueError, match="Invalid order"):
    jnp.linalg.norm(np.ones((3, 3)), ord=3)
  with pytest.raises(ValueError, match="only one of"):
    jnp.linalg.pinv(np.ones((3, 3)), rtol=0.1, rcond=0.1)
  with pytest.raises(ValueError, match="only one of"):
    jnp.linalg.matrix_rank(np.ones((3, 3)), rtol=0.1, tol=0.1)


def test_failure_gives_nan_not_an_exception():
  bad = np.full((3, 3), np.inf, np.float32)
  for out in (jnp.linalg.svd(bad), jnp.linalg.eig(bad)):
    assert all(np.isnan(np.asarray(x)).all() for x in out)


# --- jnp.linalg against NumPy --------------------------------------------------------------

def _numpy_suite(np_, a, sq, b):
  """The jnp.linalg functions on one draw (one program, so one compilation per draw)."""
  out = dict(
      svdvals=np_.linalg.svd(a, compute_uv=False), pinv=np_.linalg.pinv(a),
      rank=np_.linalg.matrix_rank(a), norm2=np_.linalg.norm(a, 2, axis=(-2, -1)),
      nuc=np_.linalg.norm(a, "nuc", axis=(-2, -1)),
      norm_m2=np_.linalg.norm(a, -2, axis=(-1, -2), keepdims=True),
      cond=np_.linalg.cond(sq), eigvalsh=np_.linalg.eigvalsh(sq + np_.conj(np_.swapaxes(sq, -1, -2))))
  if b is not None:
    x, resid, rank, s = np_.linalg.lstsq(a, b, **({} if np_ is jnp else dict(rcond=None)))
    out.update(lstsq_x=x, lstsq_rank=rank, lstsq_s=s)
    if a.shape[0] > a.shape[1]:
      out.update(lstsq_resid=resid)
  return out


@settings(max_examples=8, deadline=None)
@given(m=st.integers(1, 5), n=st.integers(1, 5), batch=st.sampled_from([(), (2,)]),
       dtype=st.sampled_from([np.float32, np.complex64]), seed=st.integers(0, 2**16))
def test_numpy_functions_match_numpy(m, n, batch, dtype, seed):
  rng = np.random.default_rng(seed)
  a = _rand(rng, batch + (m, n), dtype)
  sq = _rand(rng, batch + (n, n), dtype) + 3 * np.eye(n, dtype=dtype)
  b = None if batch else _rand(rng, (m, 2), dtype)
  ours = hlox.jit(lambda a, sq, b: _numpy_suite(jnp, a, sq, b))(a, sq, b)
  ref = _numpy_suite(np, a, sq, b)
  scale = dict(pinv=200, cond=200, lstsq_x=500, lstsq_resid=2000)
  for k, v in ref.items():
    if "rank" in k:
      np.testing.assert_array_equal(ours[k], v, err_msg=k)
      assert ours[k].dtype == np.int32
    else:
      _close(ours[k], v, dtype, scale.get(k, 20))


def test_numpy_svd_hermitian_and_matrix_rank():
  rng = np.random.default_rng(15)
  a = _herm(rng.standard_normal((4, 4))).astype(np.float32)
  u, s, vh = jnp.linalg.svd(a, hermitian=True)
  _close(s, np.linalg.svd(a, hermitian=True, compute_uv=False), np.float32, 10)
  _close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), a, np.float32, 10)
  _close(jnp.linalg.svd(a, hermitian=True, compute_uv=False), s, np.float32)
  low_rank = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 5))
  assert int(jnp.linalg.matrix_rank(low_rank.astype(np.float32))) == 2
  assert int(jnp.linalg.matrix_rank(np.ones(3))) == 1
  assert int(jnp.linalg.matrix_rank(np.zeros(3))) == 0
  _close(jnp.linalg.cond(np.diag([1., 1e-3]).astype(np.float32), -2), 1e-3, np.float32)
  b = rng.standard_normal((3, 3)).astype(np.float32) + 2 * np.eye(3, dtype=np.float32)
  ps = (1, -1, np.inf, -np.inf, "fro")
  conds = hlox.jit(lambda b: [jnp.linalg.cond(b, p) for p in ps])(b)
  for p, c in zip(ps, conds):
    _close(c, np.linalg.cond(b, p), np.float32, 50)


def test_pinv_and_lstsq_grads_float64():
  rng = np.random.default_rng(16)
  with enable_x64():
    for shape, order in [((4, 3), 2), ((3, 4), 1)]:
      check_grads(jnp.linalg.pinv, (rng.standard_normal(shape),), order=order, atol=1e-5,
                  rtol=1e-5)
    sym = _herm(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    check_grads(lambda x: jnp.linalg.pinv(x, hermitian=True), (sym,), order=1, atol=1e-5,
                rtol=1e-5)
    b = rng.standard_normal((4, 2))
    check_grads(lambda a, b: jnp.linalg.lstsq(a, b)[0], (rng.standard_normal((4, 3)), b),
                order=1, atol=1e-5, rtol=1e-5)


def test_pinv_is_jittable_and_batched():
  rng = np.random.default_rng(17)
  a = rng.standard_normal((2, 4, 3)).astype(np.float32)
  _close(hlox.jit(jnp.linalg.pinv)(a), np.linalg.pinv(a), np.float32, 100)
  _close(hlox.vmap(jnp.linalg.pinv)(a), np.linalg.pinv(a), np.float32, 100)
  assert jnp.linalg.pinv(np.zeros((0, 3), np.float32)).shape == (3, 0)


# --- against JAX ---------------------------------------------------------------------------

@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  rng = np.random.default_rng(18)
  a = rng.standard_normal((3, 4, 4)).astype(np.float32)
  sym = _herm(a)
  rect = a[:, :3]
  programs = [
      lambda np_, x, s, r: np_.linalg.eigvalsh(s),
      lambda np_, x, s, r: np_.linalg.svd(r, compute_uv=False),
      lambda np_, x, s, r: np_.linalg.pinv(r),
      lambda np_, x, s, r: np_.linalg.lstsq(r[0], x[0, :3, 0])[0],
      lambda np_, x, s, r: np_.linalg.matrix_rank(r),
      lambda np_, x, s, r: np_.linalg.cond(x),
      lambda np_, x, s, r: np_.linalg.norm(r, "nuc", axis=(-2, -1)),
      lambda np_, x, s, r: np_.linalg.norm(x[0], 2),
      lambda np_, x, s, r: np_.sort(np_.abs(np_.linalg.eigvals(x)), axis=-1),
      lambda np_, x, s, r: np_.abs(np_.linalg.svd(r, full_matrices=False)[0]),
      lambda np_, x, s, r: np_.abs(np_.linalg.eigh(s)[1]),
  ]
  for i, prog in enumerate(programs):
    ours = hlox.jit(lambda *xs: prog(jnp, *xs))(a, sym, rect)
    theirs = jax.jit(lambda *xs: prog(jjnp, *xs))(a, sym, rect)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype, i
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-4, atol=2e-4,
                               err_msg=f"program {i}")
  # Gradients through eigh, svd and pinv.
  grads = [
      lambda np_, g: g(lambda x: np_.sum(np_.linalg.eigvalsh(x) ** 3))(sym[0]),
      lambda np_, g: g(lambda x: np_.sum(np_.linalg.svd(x, compute_uv=False) ** 2))(rect[0]),
      lambda np_, g: g(lambda x: np_.sum(np_.linalg.pinv(x)))(rect[0]),
      lambda np_, g: g(lambda x: np_.sum(np_.linalg.eigh(x)[1][:, 0] ** 2 * np_.arange(4.)))(
          sym[0]),
      lambda np_, g: g(lambda x: np_.sum(np_.abs(np_.linalg.eigvals(x)) ** 2))(a[0]),
  ]
  for i, prog in enumerate(grads):
    ours = prog(jnp, lambda f: hlox.jit(hlox.grad(f)))
    theirs = prog(jjnp, lambda f: jax.jit(jax.grad(f)))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-3, atol=2e-3,
                               err_msg=f"gradient {i}")
  # Eigenvector derivatives (opt-in) agree with JAX's.
  q = rng.standard_normal((4, 4))
  m = (q @ np.diag([1., 2., 3.5, 5.]) @ np.linalg.inv(q)).astype(np.float32)

  def eigvec_loss(eig, np_):
    return lambda x: np_.sum(np_.abs(eig(x, enable_eigvec_derivs=True)[2]) ** 2
                             * np_.arange(4.))
  np.testing.assert_allclose(np.asarray(hlox.grad(eigvec_loss(linalg.eig, jnp))(m)),
                             np.asarray(jax.grad(eigvec_loss(jax.lax.linalg.eig, jjnp))(m)),
                             rtol=2e-3, atol=2e-3)
  # Weak types follow the input, as JAX's standard rule.
  w_ours = jnp.linalg.eigvalsh(jnp.full((2, 2), 1.0))
  w_jax = jjnp.linalg.eigvalsh(jjnp.full((2, 2), 1.0))
  assert w_ours.aval.weak_type == w_jax.aval.weak_type
