"""hlox.lax.linalg factorizations (cholesky, triangular_solve, lu, qr, householder_product)
and the hlox.numpy.linalg functions on them: NumPy/SciPy references, reconstruction
identities, gradients, vmap, jit, bad input, failures as NaN, and JAX as an oracle."""
import numpy as np
import pytest
import scipy.linalg as sla

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.interpreters import xla
from hlox.runtime import ffi
from tests.check_grads import check_grads

FLOATS = [np.float32, np.float64, np.complex64, np.complex128]
slow = pytest.mark.slow
# Every dtype in the slow sweep; float32 and complex128 in the default run.
SWEEP = [np.float32, pytest.param(np.float64, marks=slow),
         pytest.param(np.complex64, marks=slow), np.complex128]
ORDERS = [1, pytest.param(2, marks=slow)]


def _tol(dtype):
  return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _rand(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _spd(rng, shape, dtype):
  a = _rand(rng, shape, dtype)
  n = shape[-1]
  return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.fixture
def x64():
  with enable_x64():
    yield


# --- plumbing --------------------------------------------------------------------------

def test_lapack_targets_registered_lazily_and_lowering_is_per_platform():
  with enable_x64():
    a = np.eye(3)
    text = hlox.jit(lax.linalg.cholesky).lower(a).as_text()
  assert "lapack_dpotrf_ffi" in text and "api_version = 4" in text
  # Fortran-order operand layout for the matrix, as LAPACK expects.
  assert "operand_layouts = [dense<[0, 1]>" in text
  assert "lapack_dpotrf_ffi" in ffi.registered_targets("cpu")
  # The platform-less rule is a portable StableHLO op; the CPU rule wins on CPU.
  assert xla.get_lowering_rule(lax.linalg.cholesky_p, "cpu") is not \
      xla.get_lowering_rule(lax.linalg.cholesky_p, "tpu")
  assert xla.get_lowering_rule(lax.linalg.cholesky_p, "tpu") is \
      xla.lowering_rules[lax.linalg.cholesky_p]


# --- cholesky --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (0, 0)])
def test_cholesky_against_numpy(dtype, shape, x64):
  rng = np.random.default_rng(0)
  a = _spd(rng, shape, dtype)
  L = np.asarray(lax.linalg.cholesky(a))
  assert L.dtype == dtype and L.shape == shape
  if a.size:
    np.testing.assert_allclose(L, np.linalg.cholesky(a), rtol=_tol(dtype), atol=_tol(dtype))
  np.testing.assert_allclose(np.asarray(hlox.jit(jnp.linalg.cholesky)(a)), L,
                             rtol=_tol(dtype), atol=_tol(dtype))
  U = np.asarray(jnp.linalg.cholesky(a, upper=True))
  np.testing.assert_allclose(U, np.conj(np.swapaxes(L, -1, -2)), rtol=_tol(dtype),
                             atol=_tol(dtype))


def test_cholesky_not_positive_definite_gives_nan_per_matrix():
  rng = np.random.default_rng(1)
  a = _spd(rng, (3, 4, 4), np.float32)
  a[1] = -a[1]
  L = np.asarray(jnp.linalg.cholesky(a))
  assert np.isnan(L[1][np.tril_indices(4)]).all()
  assert (L[1][np.triu_indices(4, 1)] == 0).all()  # as JAX: NaN, then the lower triangle
  np.testing.assert_allclose(L[0], np.linalg.cholesky(a[0]), rtol=1e-5, atol=1e-5)


def test_cholesky_symmetrize_input_false_reads_lower_triangle(x64):
  rng = np.random.default_rng(2)
  a = _spd(rng, (4, 4), np.float64)
  junk = a + np.triu(rng.standard_normal((4, 4)) * 100, 1)
  np.testing.assert_allclose(np.asarray(lax.linalg.cholesky(junk, symmetrize_input=False)),
                             np.linalg.cholesky(a), rtol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_grads(dtype, order, x64):
  rng = np.random.default_rng(3)
  a = _spd(rng, (2, 4, 4), dtype)
  # Complex: forward mode against finite differences (check_grads' reverse-mode identity
  # assumes real inner products).
  modes = ("fwd", "rev") if dtype == np.float64 else ("fwd",)
  check_grads(jnp.linalg.cholesky, (a,), order=order, modes=modes, atol=1e-6, rtol=1e-6)


def test_cholesky_vmap_matches_loop():
  rng = np.random.default_rng(4)
  a = _spd(rng, (3, 2, 4, 4), np.float32)
  out = hlox.vmap(jnp.linalg.cholesky, in_axes=1)(a)
  ref = np.stack([np.asarray(jnp.linalg.cholesky(a[:, i])) for i in range(2)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)


def test_cholesky_bad_input():
  with pytest.raises(ValueError, match="square"):
    lax.linalg.cholesky(np.ones((2, 3), np.float32), symmetrize_input=False)
  with pytest.raises(TypeError, match="square"):  # JAX: a TypeError from x + x^H
    jnp.linalg.cholesky(np.ones((2, 3), np.float32))
  with pytest.raises(TypeError, match="rank at least 2"):
    lax.linalg.cholesky(np.ones((3,), np.float32), symmetrize_input=False)
  with pytest.raises(TypeError, match="int32"):
    lax.linalg.cholesky(np.eye(3, dtype=np.int32), symmetrize_input=False)
  # jnp promotes integers to float, as JAX does.
  np.testing.assert_allclose(np.asarray(jnp.linalg.cholesky(np.eye(2, dtype=np.int32))),
                             np.eye(2))


# --- triangular_solve ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SWEEP)
def test_triangular_solve_against_numpy(dtype, x64):
  rng = np.random.default_rng(5)
  a = _rand(rng, (4, 4), dtype) + 4 * np.eye(4, dtype=dtype)
  for left_side in (True, False):
    for lower in (True, False):
      for transpose_a, conjugate_a in [(False, False), (True, False), (True, True),
                                       (False, True)]:
        b = _rand(rng, (4, 3) if left_side else (3, 4), dtype)
        x = np.asarray(lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                                   transpose_a=transpose_a,
                                                   conjugate_a=conjugate_a))
        t = np.tril(a) if lower else np.triu(a)
        op = t.T if transpose_a else t
        op = np.conj(op) if conjugate_a else op
        lhs = op @ x if left_side else x @ op
        np.testing.assert_allclose(lhs, b, rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)


def test_triangular_solve_unit_diagonal_and_vector(x64):
  rng = np.random.default_rng(6)
  a = rng.standard_normal((4, 4)) + 3 * np.eye(4)
  b = rng.standard_normal(4)
  x = np.asarray(lax.linalg.triangular_solve(a, b, left_side=True, lower=True,
                                             unit_diagonal=True))
  np.testing.assert_allclose(x, sla.solve_triangular(a, b, lower=True, unit_diagonal=True),
                             rtol=1e-12)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_grads_and_vmap(left_side, x64):
  rng = np.random.default_rng(7)
  a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
  b = rng.standard_normal((3, 2) if left_side else (2, 3))

  def f(a, b):
    return lax.linalg.triangular_solve(a, b, left_side=left_side, lower=True,
                                       transpose_a=True)
  check_grads(f, (a, b), order=1, atol=1e-6, rtol=1e-6)
  bs = rng.standard_normal((5,) + b.shape)
  for in_axes in [(None, 0), (0, 0), (0, None)]:
    aa = np.stack([a] * 5) + 0.1 * rng.standard_normal((5, 3, 3)) if in_axes[0] == 0 else a
    bb = bs if in_axes[1] == 0 else b
    out = hlox.vmap(f, in_axes=in_axes)(aa, bb)
    ref = np.stack([np.asarray(f(aa[i] if in_axes[0] == 0 else aa,
                                 bb[i] if in_axes[1] == 0 else bb)) for i in range(5)])
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-10, atol=1e-12)


# --- lu --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (5, 3)])
def test_lu_reconstructs_and_matches_scipy(dtype, shape, x64):
  rng = np.random.default_rng(8)
  a = _rand(rng, shape, dtype)
  lu, piv, perm = (np.asarray(t) for t in lax.linalg.lu(a))
  m, n = shape[-2:]
  k = min(m, n)
  assert lu.shape == shape and piv.shape == shape[:-2] + (k,) and perm.shape == shape[:-1]
  assert piv.dtype == np.int32 and perm.dtype == np.int32
  l = np.tril(lu, -1)[..., :, :k] + np.eye(m, k, dtype=dtype)
  u = np.triu(lu)[..., :k, :]
  permuted = np.take_along_axis(a, perm[..., None], axis=-2)
  np.testing.assert_allclose(l @ u, permuted, rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)
  flat_a, flat_piv = a.reshape((-1, m, n)), piv.reshape((-1, k))
  for i in range(flat_a.shape[0]):
    if m == n:
      ref_lu, ref_piv = sla.lu_factor(flat_a[i])
      np.testing.assert_array_equal(flat_piv[i], ref_piv)
  np.testing.assert_array_equal(
      np.asarray(lax.linalg.lu_pivots_to_permutation(piv, m)), perm)


def test_lu_pivots_to_permutation_known_values():
  piv = np.array([[2, 2, 3], [0, 1, 2]], np.int32)
  out = np.asarray(lax.linalg.lu_pivots_to_permutation(piv, 5))
  np.testing.assert_array_equal(out, [[2, 0, 3, 1, 4], [0, 1, 2, 3, 4]])
  with pytest.raises(ValueError, match="permutation size"):
    lax.linalg.lu_pivots_to_permutation(piv, 2)


def test_lu_singular_keeps_factorization():
  # A zero pivot (info > 0) still returns the factors, as LAPACK and JAX do.
  lu, _, _ = lax.linalg.lu(np.zeros((3, 3), np.float32))
  np.testing.assert_array_equal(np.asarray(lu), np.zeros((3, 3)))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_lu_grads(shape, order, x64):
  rng = np.random.default_rng(9)
  a = rng.standard_normal(shape)
  check_grads(lambda x: lax.linalg.lu(x)[0], (a,), order=order, atol=1e-6, rtol=1e-6)


def test_lu_vmap_and_jit(x64):
  rng = np.random.default_rng(10)
  a = rng.standard_normal((4, 3, 3))
  out = hlox.vmap(lax.linalg.lu)(a)
  ref = [lax.linalg.lu(a[i]) for i in range(4)]
  for j in range(3):
    np.testing.assert_array_equal(np.asarray(out[j]), np.stack([np.asarray(r[j]) for r in ref]))
  jitted = hlox.jit(lax.linalg.lu)(a)
  for j in range(3):
    np.testing.assert_allclose(np.asarray(jitted[j]), np.asarray(lax.linalg.lu(a)[j]))


# --- qr --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 4)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_reconstructs(dtype, shape, full_matrices, x64):
  rng = np.random.default_rng(11)
  a = _rand(rng, shape, dtype)
  q, r = (np.asarray(t) for t in lax.linalg.qr(a, full_matrices=full_matrices))
  mode = "complete" if full_matrices else "reduced"
  qn, rn = np.linalg.qr(a, mode=mode)
  assert q.shape == qn.shape and r.shape == rn.shape and q.dtype == dtype
  tol = _tol(dtype) * 10
  np.testing.assert_allclose(q @ r, a, rtol=tol, atol=tol)
  k = q.shape[-1]
  qhq = np.conj(np.swapaxes(q, -1, -2)) @ q
  np.testing.assert_allclose(qhq, np.broadcast_to(np.eye(k), qhq.shape), atol=tol)
  np.testing.assert_array_equal(np.tril(r, -1), 0)
  # LAPACK's Householder QR: the same factors as NumPy's (also LAPACK).
  np.testing.assert_allclose(np.abs(r), np.abs(rn), rtol=tol, atol=tol)


def test_qr_pivoting(x64):
  rng = np.random.default_rng(12)
  a = rng.standard_normal((5, 4))
  q, r, p = (np.asarray(t) for t in lax.linalg.qr(a, pivoting=True, full_matrices=False))
  _, rs, ps = sla.qr(a, pivoting=True, mode="economic")
  np.testing.assert_array_equal(p, ps)
  np.testing.assert_allclose(q @ r, a[:, p], rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(np.abs(r), np.abs(rs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,full_matrices", [((4, 3), False), ((3, 3), True),
                                                 ((3, 4), False), ((4, 3), True)])
@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.complex128, marks=slow)])
def test_qr_grads(shape, full_matrices, dtype, x64):
  rng = np.random.default_rng(13)
  a = _rand(rng, shape, dtype)
  # Q of a full QR of a tall matrix is not unique in its last columns; check R and the
  # first columns of Q there, as JAX's tests do.
  k = min(shape)

  def f(x):
    q, r = lax.linalg.qr(x, full_matrices=full_matrices)
    return q[..., :k], r
  modes = ("fwd", "rev") if dtype == np.float64 else ("fwd",)
  check_grads(f, (a,), order=1, modes=modes, atol=1e-5, rtol=1e-5)


@slow
def test_qr_grads_order_2(x64):
  rng = np.random.default_rng(13)
  for shape in [(4, 3), (3, 4)]:
    check_grads(lambda x: lax.linalg.qr(x, full_matrices=False), (rng.standard_normal(shape),),
                order=2, atol=1e-5, rtol=1e-5)


def test_householder_product_matches_scipy(x64):
  rng = np.random.default_rng(14)
  a = rng.standard_normal((5, 3))
  h, taus = lax.linalg.geqrf(a)
  q = np.asarray(lax.linalg.householder_product(h, taus))
  np.testing.assert_allclose(q, np.linalg.qr(a)[0], rtol=1e-12, atol=1e-12)
  with pytest.raises(ValueError, match="at least as many rows"):
    lax.linalg.householder_product(np.ones((2, 3)), np.ones((2,)))


def test_qr_vmap():
  rng = np.random.default_rng(15)
  a = rng.standard_normal((3, 5, 4)).astype(np.float32)
  q, r = hlox.vmap(jnp.linalg.qr)(a)
  for i in range(3):
    qi, ri = jnp.linalg.qr(a[i])
    np.testing.assert_allclose(np.asarray(q[i]), np.asarray(qi), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(r[i]), np.asarray(ri), rtol=1e-6, atol=1e-6)


# --- hlox.numpy.linalg on the primitives -------------------------------------------------

@pytest.mark.parametrize("dtype", SWEEP)
def test_numpy_linalg_against_numpy(dtype, x64):
  rng = np.random.default_rng(16)
  a = _rand(rng, (2, 5, 5), dtype) + 3 * np.eye(5, dtype=dtype)
  b = _rand(rng, (2, 5, 3), dtype)
  tol = dict(rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)
  for f, ref, args in [(jnp.linalg.solve, np.linalg.solve, (a, b)),
                       (jnp.linalg.inv, np.linalg.inv, (a,)),
                       (jnp.linalg.det, np.linalg.det, (a,))]:
    np.testing.assert_allclose(np.asarray(f(*args)), ref(*args), **tol)
    np.testing.assert_allclose(np.asarray(hlox.jit(f)(*args)), ref(*args), **tol)
  sign, logdet = jnp.linalg.slogdet(a)
  rs, rl = np.linalg.slogdet(a)
  np.testing.assert_allclose(np.asarray(sign), rs, **tol)
  np.testing.assert_allclose(np.asarray(logdet), rl, **tol)
  np.testing.assert_allclose(np.asarray(jnp.linalg.solve(a[0], b[0, :, 0])),
                             np.linalg.solve(a[0], b[0, :, 0]), **tol)
  for mode in ["reduced", "complete"]:
    q, r = jnp.linalg.qr(b, mode=mode)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), b, **tol)
  assert jnp.linalg.qr(b, mode="r").shape == (2, 3, 3)


def test_slogdet_qr_method_and_singular(x64):
  rng = np.random.default_rng(17)
  a = rng.standard_normal((3, 4, 4))
  s, l = jnp.linalg.slogdet(a, method="qr")
  rs, rl = np.linalg.slogdet(a)
  np.testing.assert_allclose(np.asarray(s), rs)
  np.testing.assert_allclose(np.asarray(l), rl, rtol=1e-12)
  sing = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]])
  s, l = jnp.linalg.slogdet(np.stack([sing, sing]))
  assert (np.asarray(s) == 0).all() and (np.asarray(l) == -np.inf).all()
  assert np.isinf(np.asarray(jnp.linalg.inv(np.zeros((3, 3))))).any() or \
      np.isnan(np.asarray(jnp.linalg.inv(np.zeros((3, 3))))).all()


def test_det_grads_including_singular(x64):
  rng = np.random.default_rng(18)
  for n in (2, 3, 4):
    check_grads(jnp.linalg.det, (rng.standard_normal((n, n)),), order=1, atol=1e-6,
                rtol=1e-6)
  # Rank n-1 with the zero pivot last: the gradient is the (nonzero) cofactor matrix, as
  # JAX computes it.
  sing = np.array([[10., 1., 1., 0.], [1., 10., 1., 1.], [0., 1., 10., 2.], [0., 0., 0., 0.]])
  sing[3] = 0.01 * (sing[0] + sing[1] + sing[2])
  g = np.asarray(hlox.grad(jnp.linalg.det)(sing))
  cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(sing, i, 0), j, 1))
                   for j in range(4)] for i in range(4)])
  assert np.abs(cof).max() > 1
  np.testing.assert_allclose(g, cof, atol=1e-8)


def test_solve_inv_slogdet_grads(x64):
  rng = np.random.default_rng(19)
  a = rng.standard_normal((2, 4, 4)) + 3 * np.eye(4)
  b = rng.standard_normal((2, 4, 2))
  for f, args in [(jnp.linalg.solve, (a, b)), (jnp.linalg.inv, (a,)),
                  (lambda x: jnp.linalg.slogdet(x)[1], (a,))]:
    check_grads(f, args, order=1, atol=1e-6, rtol=1e-6)
    check_grads(f, args, order=2, modes=("fwd",), atol=1e-6, rtol=1e-6)
  c = (rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))) + 3 * np.eye(4)
  check_grads(lambda x: jnp.linalg.solve(x, b[0].astype(complex)), (c,), order=1,
              modes=("fwd",), atol=1e-6, rtol=1e-6)


def test_solve_vmap_matches_loop():
  rng = np.random.default_rng(20)
  a = (rng.standard_normal((3, 4, 4)) + 3 * np.eye(4)).astype(np.float32)
  b = rng.standard_normal((3, 4)).astype(np.float32)
  out = hlox.vmap(jnp.linalg.solve)(a, b)
  ref = np.stack([np.asarray(jnp.linalg.solve(a[i], b[i])) for i in range(3)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)
  out = hlox.vmap(jnp.linalg.solve, in_axes=(None, 0))(a[0], b)
  ref = np.stack([np.asarray(jnp.linalg.solve(a[0], b[i])) for i in range(3)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)


def test_tensorsolve_tensorinv(x64):
  rng = np.random.default_rng(21)
  a = rng.standard_normal((6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3
  b = rng.standard_normal(6)
  np.testing.assert_allclose(np.asarray(jnp.linalg.tensorsolve(a, b)),
                             np.linalg.tensorsolve(a, b), rtol=1e-10)
  t = rng.standard_normal((4, 6, 8, 3))
  np.testing.assert_allclose(np.asarray(jnp.linalg.tensorinv(t, ind=2)),
                             np.linalg.tensorinv(t, ind=2), rtol=1e-8, atol=1e-10)
  with pytest.raises(ValueError, match="ind must be a positive integer"):
    jnp.linalg.tensorinv(t, ind=0)
  with pytest.raises(ValueError, match="leading shape of a must match"):
    jnp.linalg.tensorsolve(a, np.ones(5))


def test_numpy_linalg_bad_input():
  with pytest.raises(ValueError, match="square"):
    jnp.linalg.det(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
    jnp.linalg.inv(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="at least two dimensional"):
    jnp.linalg.solve(np.ones(3, np.float32), np.ones(3, np.float32))
  with pytest.raises(ValueError, match="shapes"):
    jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))
  with pytest.raises(ValueError, match="Unsupported QR decomposition mode"):
    jnp.linalg.qr(np.eye(3), mode="bogus")


# --- JAX as an oracle --------------------------------------------------------------------

@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax", reason="JAX is an optional test oracle")
  jjnp = jax.numpy
  rng = np.random.default_rng(22)
  a = (rng.standard_normal((2, 4, 4)) + 3 * np.eye(4)).astype(np.float32)
  spd = _spd(rng, (2, 4, 4), np.float32)
  b = rng.standard_normal((2, 4, 3)).astype(np.float32)
  sing = np.array([[1., 2.], [2., 4.]], np.float32)
  not_pd = -spd
  cases = [
      (lambda m, L: L.linalg.cholesky(m), (spd,)),
      (lambda m, L: L.linalg.cholesky(m), (not_pd,)),
      (lambda m, v, L: L.linalg.solve(m, v), (a, b)),
      (lambda m, L: L.linalg.inv(m), (a,)),
      (lambda m, L: L.linalg.det(m), (a,)),
      (lambda m, L: L.linalg.slogdet(m), (a,)),
      (lambda m, L: L.linalg.slogdet(m), (sing,)),
      (lambda m, L: L.linalg.qr(m), (b,)),
      (lambda m, L: L.linalg.qr(m, mode="complete"), (b,)),
  ]
  for f, args in cases:
    mine = f(*args, jnp)
    theirs = f(*args, jjnp)
    for x, y in zip(jax.tree_util.tree_leaves(mine) if isinstance(mine, tuple) else [mine],
                    jax.tree_util.tree_leaves(theirs) if isinstance(theirs, tuple)
                    else [theirs]):
      assert np.asarray(x).dtype == np.asarray(y).dtype
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)
  lu_mine = lax.linalg.lu(a)
  lu_jax = jax.lax.linalg.lu(a)
  for x, y in zip(lu_mine, lu_jax):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-6)
  for kw in [dict(left_side=True, lower=True), dict(left_side=False, lower=False,
                                                    transpose_a=True)]:
    bb = b if kw["left_side"] else np.swapaxes(b, -1, -2)
    np.testing.assert_allclose(np.asarray(lax.linalg.triangular_solve(a, bb, **kw)),
                               np.asarray(jax.lax.linalg.triangular_solve(a, bb, **kw)),
                               rtol=1e-5, atol=1e-5)
  g_mine = hlox.grad(lambda m: jnp.linalg.det(m).sum())(a)
  g_jax = jax.grad(lambda m: jjnp.linalg.det(m).sum())(a)
  np.testing.assert_allclose(np.asarray(g_mine), np.asarray(g_jax), rtol=1e-4, atol=1e-4)
  g_mine = hlox.grad(lambda m: jnp.linalg.qr(m)[1].sum())(b)
  g_jax = jax.grad(lambda m: jjnp.linalg.qr(m)[1].sum())(b)
  np.testing.assert_allclose(np.asarray(g_mine), np.asarray(g_jax), rtol=1e-4, atol=1e-4)


@slow
def test_det_grads_order_2(x64):
  rng = np.random.default_rng(23)
  for n in (2, 3, 5):
    check_grads(jnp.linalg.det, (rng.standard_normal((n, n)),), order=2, atol=1e-6,
                rtol=1e-6)


# --- tridiagonal_solve -----------------------------------------------------------------

def test_tridiagonal_solve(x64):
  rng = np.random.default_rng(24)
  m = 5
  dl, d, du = rng.standard_normal((3, 2, m))
  d = d + 4
  b = rng.standard_normal((2, m, 3))
  x = np.asarray(lax.linalg.tridiagonal_solve(dl, d, du, b))
  for i in range(2):
    banded = np.stack([np.r_[0, du[i, :-1]], d[i], np.r_[dl[i, 1:], 0]])
    np.testing.assert_allclose(x[i], sla.solve_banded((1, 1), banded, b[i]), rtol=1e-12)
  np.testing.assert_allclose(
      np.asarray(lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)), x,
      rtol=1e-12)
  check_grads(lax.linalg.tridiagonal_solve, (dl, d, du, b), order=1, atol=1e-6, rtol=1e-6)
  out = hlox.vmap(lambda v: lax.linalg.tridiagonal_solve(dl[0], d[0], du[0], v))(b)
  ref = np.stack([np.asarray(lax.linalg.tridiagonal_solve(dl[0], d[0], du[0], b[i]))
                  for i in range(2)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12)
  # Singular: NaN, as JAX.
  z = np.zeros(3)
  assert np.isnan(np.asarray(lax.linalg.tridiagonal_solve(z, z, z, np.ones((3, 1))))).all()
  with pytest.raises(TypeError, match="same shape"):
    lax.linalg.tridiagonal_solve(np.ones(3), np.ones(4), np.ones(3), np.ones((3, 1)))
