"""hlox.experimental.sparse: BCOO arrays against dense NumPy/SciPy references, through jit,
vmap and grad; sparsify; LOBPCG against numpy.linalg.eigh; printed forms against JAX."""
import numpy as np
import pytest
import scipy.sparse

import hlox
import hlox.numpy as jnp
from hlox.experimental import sparse
from hlox.experimental.sparse import linalg
from tests.util import printed_here, printed_in_jax


def _rand_sparse(rng, shape, density=0.4, dtype=np.float32):
  x = rng.standard_normal(shape).astype(dtype)
  return np.where(rng.random(shape) < density, x, 0).astype(dtype)


M = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)


def test_fromdense_layout_and_attributes():
  m = sparse.BCOO.fromdense(M)
  assert (m.nse, m.n_batch, m.n_sparse, m.n_dense, m.shape, m.ndim) == (4, 0, 2, 0, (3, 4), 2)
  assert m.indices_sorted and m.unique_indices and m.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(m.data), [1., 2., 3., 4.])
  np.testing.assert_array_equal(np.asarray(m.indices), [[0, 1], [0, 3], [1, 0], [2, 2]])
  assert m.indices.dtype == np.int32
  np.testing.assert_array_equal(np.asarray(m.todense()), M)
  np.testing.assert_array_equal(np.asarray(sparse.bcoo_todense(m)), M)
  np.testing.assert_array_equal(np.asarray(sparse.todense(m)), M)
  assert repr(m) == "BCOO(float32[3, 4], nse=4)"


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1), (2, 0), (0, 3)])
def test_fromdense_todense_roundtrip_layouts(n_batch, n_dense):
  x = _rand_sparse(np.random.default_rng(n_batch * 7 + n_dense), (3, 4, 2))
  m = sparse.bcoo_fromdense(x, n_batch=n_batch, n_dense=n_dense)
  assert (m.n_batch, m.n_dense, m.n_sparse) == (n_batch, n_dense, 3 - n_batch - n_dense)
  mask = (x != 0).any(tuple(range(3 - n_dense, 3))) if n_dense else x != 0
  assert m.nse == mask.reshape(mask.shape[:n_batch] + (-1,)).sum(-1).max(initial=0) or \
      m.n_sparse == 0
  np.testing.assert_array_equal(np.asarray(m.todense()), x)
  # Extra padding slots change nothing.
  padded = sparse.bcoo_fromdense(x, nse=m.nse + 2, n_batch=n_batch, n_dense=n_dense)
  np.testing.assert_array_equal(np.asarray(padded.todense()), x)


def test_constructor_validates_and_sums_duplicates():
  data = jnp.array([1., 2., 5.])
  indices = jnp.array([[0, 0], [0, 0], [2, 1]])
  m = sparse.BCOO((data, indices), shape=(3, 3))
  want = np.zeros((3, 3), np.float32)
  want[0, 0], want[2, 1] = 3., 5.
  np.testing.assert_array_equal(np.asarray(m.todense()), want)
  summed = m.sum_duplicates()
  assert summed.nse == 2 and summed.unique_indices and summed.indices_sorted
  np.testing.assert_array_equal(np.asarray(summed.indices), [[0, 0], [2, 1]])
  np.testing.assert_array_equal(np.asarray(summed.data), [3., 5.])
  with pytest.raises(ValueError):
    sparse.BCOO((data, indices), shape=(3, 3, 4, 5, 6)[:1] + (3,) * 0)


def test_sort_indices_and_sum_duplicates_padding():
  m = sparse.BCOO((jnp.array([1., 2., 3.]), jnp.array([[2, 1], [0, 3], [0, 1]])), shape=(3, 4))
  s = m.sort_indices()
  np.testing.assert_array_equal(np.asarray(s.indices), [[0, 1], [0, 3], [2, 1]])
  np.testing.assert_array_equal(np.asarray(s.data), [3., 2., 1.])
  p = m.sum_duplicates(nse=5, remove_zeros=False)
  np.testing.assert_array_equal(np.asarray(p.indices[3:]), [[3, 4], [3, 4]])
  np.testing.assert_array_equal(np.asarray(p.todense()), np.asarray(m.todense()))
  z = sparse.BCOO((jnp.array([0., 2.]), jnp.array([[0, 0], [1, 1]])), shape=(2, 2))
  assert z.sum_duplicates().nse == 1 and z.sum_duplicates(remove_zeros=False).nse == 2


def test_transpose_matmul_and_scipy_input():
  rng = np.random.default_rng(0)
  x = _rand_sparse(rng, (5, 4))
  m = sparse.BCOO.fromdense(x)
  np.testing.assert_array_equal(np.asarray(m.T.todense()), x.T)
  assert not m.T.indices_sorted
  v, w = rng.standard_normal(4).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(m @ v), x @ v, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(m.T @ w), x.T @ w, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(jnp.asarray(w.T) @ m), w.T @ x, rtol=1e-5, atol=1e-6)
  s = sparse.BCOO.from_scipy_sparse(scipy.sparse.coo_matrix(x))
  dn = (((1,), (0,)), ((), ()))
  np.testing.assert_allclose(np.asarray(sparse.bcoo_dot_general(s, v, dimension_numbers=dn)),
                             x @ v, rtol=1e-5, atol=1e-6)
  # A batched layout takes the dense path and still agrees.
  b = sparse.bcoo_fromdense(x, n_batch=1)
  np.testing.assert_allclose(np.asarray(b @ v), x @ v, rtol=1e-5, atol=1e-6)


def test_elementwise_and_reductions():
  rng = np.random.default_rng(1)
  x = _rand_sparse(rng, (3, 4))
  m = sparse.BCOO.fromdense(x)
  y = rng.standard_normal((3, 4)).astype(np.float32)
  np.testing.assert_allclose(np.asarray((m * y).todense()), x * y, rtol=1e-6)
  np.testing.assert_allclose(np.asarray((2 * m).todense()), 2 * x)
  np.testing.assert_allclose(np.asarray((-m).todense()), -x)
  row = rng.standard_normal(4).astype(np.float32)
  np.testing.assert_allclose(np.asarray((m * row).todense()), x * row, rtol=1e-6)
  np.testing.assert_allclose(float(m.sum()), x.sum(), rtol=1e-5)
  for axis in (0, 1):
    np.testing.assert_allclose(np.asarray(m.sum(axis).todense()), x.sum(axis), rtol=1e-5,
                               atol=1e-6)
  bx = _rand_sparse(rng, (2, 3, 4))
  b = sparse.bcoo_fromdense(bx, n_batch=1)
  for axes in [(0,), (1,), (0, 2), (0, 1, 2)]:
    got = sparse.bcoo_reduce_sum(b, axes=axes)
    np.testing.assert_allclose(np.asarray(got.todense()), bx.sum(axes), rtol=1e-5, atol=1e-6)


def test_empty_and_eye():
  e = sparse.empty((2, 3))
  assert e.nse == 0 and e.shape == (2, 3)
  np.testing.assert_array_equal(np.asarray(e.todense()), np.zeros((2, 3)))
  for k in (-2, -1, 0, 1, 3, 5):
    np.testing.assert_array_equal(np.asarray(sparse.eye(3, 4, k=k).todense()), np.eye(3, 4, k))
    np.testing.assert_array_equal(
        np.asarray(sparse.eye(3, 4, k=k, n_batch=1).todense()), np.eye(3, 4, k))


def test_bcoo_is_a_pytree_through_jit_vmap_grad():
  rng = np.random.default_rng(2)
  x = _rand_sparse(rng, (4, 3))
  m = sparse.BCOO.fromdense(x)
  v = rng.standard_normal(3).astype(np.float32)
  f = hlox.jit(lambda m, v: m @ v)
  np.testing.assert_allclose(np.asarray(f(m, v)), x @ v, rtol=1e-5, atol=1e-6)
  out = hlox.jit(lambda m: m.T)(m)
  assert isinstance(out, sparse.BCOO) and out.shape == (3, 4)
  vs = rng.standard_normal((5, 3)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(hlox.vmap(lambda v: m @ v)(vs)), vs @ x.T, rtol=1e-5,
                             atol=1e-6)
  # Gradient with respect to the stored values: d/d data of sum(M @ v) = v[col].
  rebuild = lambda d: sparse.BCOO((d, m.indices), shape=m.shape)
  g = hlox.grad(lambda d: (rebuild(d) @ v).sum())(m.data)
  np.testing.assert_allclose(np.asarray(g), v[np.asarray(m.indices)[:, 1]], rtol=1e-6)
  g2 = hlox.grad(lambda d: (rebuild(d) * rebuild(d)).sum())(m.data)
  np.testing.assert_allclose(np.asarray(g2), 2 * np.asarray(m.data), rtol=1e-6)
  gv = hlox.grad(lambda v: (m.T @ jnp.ones(4) * v).sum())(v)
  np.testing.assert_allclose(np.asarray(gv), x.sum(0), rtol=1e-5)
  # fromdense under jit needs a static nse.
  np.testing.assert_array_equal(
      np.asarray(hlox.jit(lambda a: sparse.BCOO.fromdense(a, nse=6).todense())(x)), x)
  with pytest.raises(hlox.errors.ConcretizationTypeError):
    hlox.jit(lambda a: sparse.BCOO.fromdense(a))(x)


def test_sparsify():
  m = sparse.BCOO.fromdense(M)
  y = np.array([3., 6., 5.], np.float32)
  f = lambda a, v: 2 * jnp.dot(jnp.log1p(a.T), v) + 1
  np.testing.assert_allclose(np.asarray(sparse.sparsify(f)(m, y)), np.asarray(f(M, y)),
                             rtol=1e-6)
  scaled = sparse.sparsify(lambda a: jnp.abs(-3 * a).T)(m)
  assert isinstance(scaled, sparse.BCOO)
  np.testing.assert_array_equal(np.asarray(scaled.todense()), 3 * M.T)
  # A primitive whose result would be dense has no sparse rule (as in JAX); densifying on
  # purpose goes through sparse.todense.
  with pytest.raises(NotImplementedError, match="sparse rule for exp .* dense output"):
    sparse.sparsify(jnp.exp)(m)
  np.testing.assert_allclose(np.asarray(sparse.sparsify(lambda a: jnp.exp(sparse.todense(a)))(m)),
                             np.exp(M), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lobpcg_matches_eigh(dtype):
  rng = np.random.default_rng(3)
  n, k = 40, 3
  q, _ = np.linalg.qr(rng.standard_normal((n, n)))
  a = (q * np.linspace(1., 50., n)) @ q.T
  x = rng.standard_normal((n, k))
  with hlox.enable_x64(dtype == np.float64):
    theta, u, i = linalg.lobpcg_standard(jnp.asarray(a, dtype), jnp.asarray(x, dtype), m=60,
                                         tol=1e-6)
    assert theta.dtype == dtype and u.shape == (n, k) and 0 < int(i) < 60
    want = np.linalg.eigh(a)[0][::-1][:k]
    np.testing.assert_allclose(np.asarray(theta), want, rtol=1e-4)
    u = np.asarray(u, np.float64)
    np.testing.assert_allclose(np.abs(u.T @ u), np.eye(k), atol=1e-3)
    # A callable operator takes the same path.
    theta2, _, _ = linalg.lobpcg_standard(lambda v: jnp.asarray(a, dtype) @ v,
                                          jnp.asarray(x, dtype), m=60, tol=1e-6)
    np.testing.assert_allclose(np.asarray(theta2), want, rtol=1e-4)


def test_lobpcg_validates_arguments():
  a = jnp.eye(20)
  x = jnp.ones((20, 2))
  with pytest.raises(ValueError, match="search dim > 0"):
    linalg.lobpcg_standard(a, x[:, :0])
  with pytest.raises(ValueError, match=r"search dim \* 5 < matrix dim"):
    linalg.lobpcg_standard(a[:8, :8], x[:8])
  with pytest.raises(ValueError, match="A, X must have same dtypes"):
    linalg.lobpcg_standard(lambda v: v.astype(jnp.float16), x)
  with pytest.raises(ValueError, match=r"A must be \(20, 20\)"):
    linalg.lobpcg_standard(a[:12], x)


_PROGRAMS = {
    "repr": """
M = jnp.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]])
s = sparse.BCOO.fromdense(M)
print(s, s.T, sparse.bcoo_fromdense(M, n_batch=1), sparse.bcoo_fromdense(M, n_dense=1))
print(s.sum(), s.sum(0), sparse.eye(3), sparse.empty((2, 3), nse=2))
print(s.data.dtype, s.indices.dtype, s.T.indices.tolist(), s.T.data.tolist())
print((s * 2).indices_sorted, s.T.indices_sorted, s.sum_duplicates().nse)
print(sparse.bcoo_reduce_sum(sparse.bcoo_fromdense(M, n_batch=1), axes=(0,)))
""",
}
_PRELUDE = """
import importlib
sparse = importlib.import_module(m.__name__ + ".experimental.sparse")
"""


@pytest.mark.jax_oracle
def test_printed_forms_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert printed_here(src, _PRELUDE) == expected[name], name


def test_repr_of_layouts_invalid_and_traced_matrices():
  # JAX's texts (sparse_bcoo_bcsr_test's test_repr); under jit the data is a
  # DynamicJaxprTracer, JAX's class name for a value traced into a jaxpr.
  y = sparse.BCOO.fromdense(jnp.arange(6, dtype="float32").reshape(2, 3), n_batch=1)
  assert repr(y) == "BCOO(float32[2, 3], nse=3, n_batch=1)"
  y = sparse.BCOO.fromdense(jnp.arange(6, dtype="float32").reshape(2, 3), n_batch=1, n_dense=1)
  assert repr(y) == "BCOO(float32[2, 3], nse=1, n_batch=1, n_dense=1)"
  bad = sparse.BCOO.fromdense(jnp.arange(6, dtype="float32").reshape(2, 3))
  bad.indices = jnp.array([])
  assert repr(bad) == "BCOO(<invalid>)"
  seen = []
  hlox.jit(lambda m: seen.append(repr(m)))(sparse.BCOO.fromdense(jnp.arange(5.0)))
  assert seen == ["DynamicJaxprTracer[BCOO(float32[5], nse=4)]"]
