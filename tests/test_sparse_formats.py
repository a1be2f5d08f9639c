"""hlox.experimental.sparse formats beyond BCOO's basics: BCSR, COO, CSR/CSC, BCOO's layout
operations and indexing, sparse autodiff, random_bcoo, spsolve and the sparse test_util,
checked against dense NumPy references, through jit, vmap and grad; bad input raises JAX's
error classes."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.errors import ConcretizationTypeError
from hlox.experimental import sparse
from hlox.experimental.sparse import bcsr as sparse_bcsr
from hlox.experimental.sparse import test_util as sptu

RNG = np.random.default_rng(0)


def _rand_sparse(shape, density=0.4, seed=0, dtype=np.float32):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape).astype(dtype)
  return np.where(rng.random(shape) < density, x, 0).astype(dtype)


X3 = _rand_sparse((2, 3, 4), seed=1)
X2 = X3[0]


# --- BCSR ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (0, 1), (1, 0)])
def test_bcsr_roundtrip_and_bcoo_conversion(n_batch, n_dense):
  m = sparse.BCSR.fromdense(X3 if n_batch + n_dense else X2, n_batch=n_batch, n_dense=n_dense)
  x = X3 if n_batch + n_dense else X2
  assert (m.n_batch, m.n_sparse, m.n_dense) == (n_batch, 2, n_dense)
  np.testing.assert_array_equal(np.asarray(m.todense()), x)
  np.testing.assert_array_equal(np.asarray(m.to_bcoo().todense()), x)
  back = sparse.BCSR.from_bcoo(m.to_bcoo())
  np.testing.assert_array_equal(np.asarray(back.indptr), np.asarray(m.indptr))
  np.testing.assert_array_equal(np.asarray(back.todense()), x)


def test_bcsr_buffers_match_scipy():
  import scipy.sparse
  m = sparse.BCSR.fromdense(X2)
  ref = scipy.sparse.csr_matrix(X2)
  np.testing.assert_array_equal(np.asarray(m.indptr), ref.indptr)
  np.testing.assert_array_equal(np.asarray(m.indices), ref.indices)
  np.testing.assert_array_equal(np.asarray(m.data), ref.data)
  data, indices, indptr = sparse_bcsr._bcsr_fromdense(X2, nse=m.nse + 2)
  assert data.shape == (m.nse + 2,) and int(indptr[-1]) == m.nse  # padding past indptr[-1]
  np.testing.assert_array_equal(np.asarray(sparse.bcsr_extract(indices, indptr, X2)),
                                np.asarray(data))


def test_bcsr_dot_general_jit_grad_and_vmap():
  m = sparse.BCSR.fromdense(X3, n_batch=1)
  y = RNG.standard_normal((2, 4, 5)).astype(np.float32)
  dn = (((2,), (1,)), ((0,), (0,)))
  out = hlox.jit(lambda m, y: sparse.bcsr_dot_general(m, y, dimension_numbers=dn))(m, y)
  np.testing.assert_allclose(np.asarray(out), np.einsum("bij,bjk->bik", X3, y), rtol=1e-5,
                             atol=1e-5)
  np.testing.assert_allclose(np.asarray(m @ y), X3 @ y, rtol=1e-5, atol=1e-5)
  # The gradient with respect to the stored values is the dense gradient at their positions.
  g = hlox.grad(lambda d: sparse.bcsr_dot_general(
      sparse.BCSR((d, m.indices, m.indptr), shape=m.shape), y, dimension_numbers=dn).sum())(
          m.data)
  # d/d data of sum(A @ y) at entry (b, row, col) is sum_k y[b, col, k] (padding: ignored).
  cols = np.asarray(m.indices)
  want = np.take_along_axis(y.sum(-1), cols, axis=1)
  valid = np.arange(m.nse)[None] < np.asarray(m.indptr)[:, -1:]
  np.testing.assert_allclose(np.asarray(g)[valid], want[valid], rtol=1e-5)
  # vmap over the batch axis gives a BCSR element per batch, and back.
  dense = hlox.vmap(lambda e: e.todense())(m)
  np.testing.assert_array_equal(np.asarray(dense), X3)
  same = hlox.vmap(lambda e: e)(m)
  assert isinstance(same, sparse.BCSR) and same.shape == m.shape and same._info == m._info


def test_bcsr_bad_input():
  with pytest.raises(ValueError, match="indptr shape"):
    sparse.BCSR((jnp.ones(2), jnp.array([0, 1]), jnp.array([0, 1, 2])), shape=(3, 3))
  with pytest.raises(ValueError, match="data.shape"):
    sparse.BCSR((jnp.ones(3), jnp.array([0, 1]), jnp.array([0, 1, 2, 2])), shape=(3, 3))
  with pytest.raises(ValueError, match="2 sparse dimensions"):
    sparse.BCSR.fromdense(X3)
  with pytest.raises(ConcretizationTypeError):
    hlox.jit(lambda x: sparse.BCSR.fromdense(x))(X2)
  with pytest.raises(NotImplementedError):
    sparse.bcsr_dot_general(X2, X2.T, dimension_numbers=(((1,), (0,)), ((), ())))


# --- COO, CSR, CSC ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["COO", "CSR", "CSC"])
def test_coo_csr_csc_against_dense(fmt):
  cls = getattr(sparse, fmt)
  m = cls.fromdense(X2)
  assert m.nse == int((X2 != 0).sum())
  np.testing.assert_array_equal(np.asarray(m.todense()), X2)
  np.testing.assert_array_equal(np.asarray(m.T.todense()), X2.T)
  v = RNG.standard_normal(4).astype(np.float32)
  B = RNG.standard_normal((4, 2)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(m @ v), X2 @ v, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.jit(lambda m, B: m @ B)(m, B)), X2 @ B,
                             rtol=1e-5, atol=1e-6)
  eye = sparse.eye(3, 4, k=1, sparse_format=fmt.lower())
  np.testing.assert_array_equal(np.asarray(eye.todense()), np.eye(3, 4, 1))
  empty = sparse.empty((3, 4), sparse_format=fmt.lower())
  np.testing.assert_array_equal(np.asarray(empty.todense()), np.zeros((3, 4)))


def test_coo_csr_functions_transpose_and_grad():
  coo, csr = sparse.coo_fromdense(X2), sparse.csr_fromdense(X2)
  v3, v4 = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32)
  for mat, matvec, matmat in ((coo, sparse.coo_matvec, sparse.coo_matmat),
                              (csr, sparse.csr_matvec, sparse.csr_matmat)):
    np.testing.assert_allclose(np.asarray(matvec(mat, v4)), X2 @ v4, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(matvec(mat, v3, transpose=True)), X2.T @ v3,
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(matmat(mat, v3[:, None], transpose=True)),
                               X2.T @ v3[:, None], rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(sparse.coo_todense(coo)), X2)
  np.testing.assert_array_equal(np.asarray(sparse.csr_todense(csr)), X2)
  # d/d data of sum(A @ v) is v[col] for every stored entry.
  g = hlox.grad(lambda d: sparse.coo_matvec(
      sparse.COO((d, coo.row, coo.col), shape=coo.shape), v4).sum())(coo.data)
  np.testing.assert_array_equal(np.asarray(g), v4[np.asarray(coo.col)])
  with pytest.raises(ConcretizationTypeError):
    hlox.jit(sparse.coo_fromdense)(X2)
  with pytest.raises(ValueError, match="matvec"):
    sparse.coo_matvec(coo, v3)


# --- BCOO layout operations and indexing ----------------------------------------------------

def _layout_ops(m, s):
  """Each layout operation on ``m``, densified (one compiled program for all of them)."""
  return [a.todense() for a in (
      sparse.bcoo_slice(m, start_indices=(0, 1, 0), limit_indices=(2, 3, 4), strides=(1, 1, 2)),
      sparse.bcoo_dynamic_slice(m, (0, s, 1), (2, 2, 3)),
      sparse.bcoo_rev(m, (0, 1, 2)),
      sparse.bcoo_concatenate([m, m], dimension=1),
      m[:, None], m[1, ::-2],
      sparse.bcoo_squeeze(m[:, :1], dimensions=(1,)),
      sparse.bcoo_update_layout(m, n_batch=0, n_dense=0))]


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 1)])
def test_bcoo_layout_ops_against_numpy(n_batch, n_dense):
  m = sparse.BCOO.fromdense(X3, n_batch=n_batch, n_dense=n_dense)
  got = hlox.jit(_layout_ops)(m, 5)
  # The dynamic start 5 is clamped so the slice fits, as in lax.dynamic_slice.
  want = [X3[:, 1:3, ::2], X3[:, 1:3, 1:4], X3[::-1, ::-1, ::-1], np.concatenate([X3, X3], 1),
          X3[:, None], X3[1, ::-2], X3[:, 0], X3]
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), w)
  assert sparse.bcoo_update_layout(m, n_batch=0, n_dense=0).n_batch == 0


def test_bcoo_reshape_broadcast_and_errors():
  m = sparse.BCOO.fromdense(X3, n_batch=1)
  np.testing.assert_array_equal(np.asarray(m.reshape(2, 12).todense()), X3.reshape(2, 12))
  b = sparse.bcoo_broadcast_in_dim(m, shape=(5, 2, 3, 4), broadcast_dimensions=(1, 2, 3))
  assert b.n_batch == 2
  np.testing.assert_array_equal(np.asarray(b.todense()), np.broadcast_to(X3, (5, 2, 3, 4)))
  with pytest.raises(ValueError, match="cannot mix batch and sparse"):
    m.reshape(3, 2, 4)
  with pytest.raises(sparse.SparseEfficiencyError):
    sparse.bcoo_update_layout(sparse.BCOO.fromdense(X3), n_batch=2)
  with pytest.warns(sparse.SparseEfficiencyWarning):
    sparse.bcoo_update_layout(sparse.BCOO.fromdense(X3), n_batch=2, on_inefficient="warn")
  with pytest.raises(NotImplementedError, match="dense dimensions"):
    sparse.bcoo_concatenate([sparse.BCOO.fromdense(X3, n_dense=1)] * 2, dimension=2)
  with pytest.raises(ValueError, match="size not equal to one"):
    sparse.bcoo_squeeze(m, dimensions=(1,))


def test_bcoo_products():
  a, b = sparse.BCOO.fromdense(X2), sparse.BCOO.fromdense(X3[1])
  np.testing.assert_allclose(np.asarray(hlox.jit(lambda a, b: a * b)(a, b).todense()),
                             X2 * X3[1])
  np.testing.assert_allclose(np.asarray((a + b).todense()), X2 + X3[1])
  A, B = RNG.standard_normal((3, 5)).astype(np.float32), RNG.standard_normal((5, 4))
  dn = (((1,), (0,)), ((), ()))
  sampled = sparse.bcoo_dot_general_sampled(A, B.astype(np.float32), a.indices,
                                            dimension_numbers=dn)
  np.testing.assert_allclose(np.asarray(sampled), (A @ B)[tuple(np.asarray(a.indices).T)],
                             rtol=1e-5)
  y = RNG.standard_normal((2, 4, 5)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(a @ y), X2 @ y, rtol=1e-5, atol=1e-6)
  lhs = sparse.BCOO.fromdense(np.array([[[0, 1, 0, 2, 0]]], np.float32), n_batch=2)
  rhs = np.array([[[1, 2, 3]]], np.float32)
  out = sparse.bcoo_conv_general_dilated(lhs, rhs, window_strides=(1,), padding="SAME")
  want = lax.conv_general_dilated(lhs.todense(), rhs, (1,), "SAME")
  np.testing.assert_allclose(np.asarray(out.todense()), np.asarray(want))


def test_vmap_of_bcoo_keeps_its_shape():
  made = hlox.vmap(lambda x: sparse.BCOO.fromdense(x, nse=12))(X3)
  assert made.shape == (2, 3, 4) and made.n_batch == 1
  np.testing.assert_array_equal(np.asarray(made.todense()), X3)
  m = sparse.BCOO.fromdense(X3, n_batch=2)
  out = hlox.vmap(lambda e: e.todense().sum(0), in_axes=1)(m)
  np.testing.assert_allclose(np.asarray(out), X3.sum(0))
  with pytest.raises(ValueError, match="in_axes"):
    hlox.vmap(lambda e: e, in_axes=2)(m)


# --- autodiff, random, solver, test_util --------------------------------------------------

def test_sparse_grad_and_jacobian():
  m, y = sparse.BCOO.fromdense(X2), np.arange(4, dtype=np.float32)
  f = lambda m, y: (m @ y).sum()
  g = sparse.grad(f)(m, y)
  assert isinstance(g, sparse.BCOO) and g.shape == m.shape
  rows = np.asarray(m.indices)
  np.testing.assert_array_equal(np.asarray(g.data), y[rows[:, 1]])
  value, (gm, gy) = sparse.value_and_grad(f, argnums=(0, 1))(m, y)
  np.testing.assert_allclose(float(value), (X2 @ y).sum(), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gy), X2.sum(0), rtol=1e-6)
  jac = sparse.jacrev(lambda m: m @ y)(m)
  assert isinstance(jac, sparse.BCOO) and jac.shape == (3, 3, 4) and jac.n_batch == 1
  np.testing.assert_allclose(np.asarray(jac.todense()),
                             np.einsum("ij,k->ijk", np.eye(3), y) * (X2 != 0), rtol=1e-6)


def test_random_bcoo_and_spsolve():
  m = sparse.random_bcoo(hlox.random.PRNGKey(0), (3, 10), n_batch=1, nse=0.3,
                         indices_dtype=np.int16)
  assert m.nse == 3 and m.indices.dtype == np.int16
  assert all(len({int(i) for i in row}) == 3 for row in np.asarray(m.indices)[..., 0])
  a = _rand_sparse((6, 6), seed=3) + 4 * np.eye(6, dtype=np.float32)
  csr = sparse.CSR.fromdense(a)
  b = np.arange(6, dtype=np.float32)
  x = sparse.linalg.spsolve(csr.data, csr.indices, csr.indptr, b)
  np.testing.assert_allclose(a @ np.asarray(x), b, rtol=1e-4, atol=1e-4)


def test_test_util_helpers():
  rng = np.random.RandomState(0)
  m = sptu.rand_bcoo(rng, n_batch=1, nse=3)((2, 4, 5), np.float32)
  assert isinstance(m, sparse.BCOO) and (m.n_batch, m.nse) == (1, 3)
  c = sptu.rand_bcsr(rng, n_batch=1)((2, 4, 5), np.float32)
  assert isinstance(c, sparse.BCSR) and c.nse == 10
  assert np.all(np.diff(np.asarray(c.indptr), axis=-1) >= 0)
  d = sptu.rand_sparse(rng, nse=4)((3, 5), np.float32)
  assert (d != 0).sum() <= 4
  assert list(sptu.iter_subsets([1, 2])) == [(), (1,), (2,), (1, 2)]
  assert [tuple(l) for l in sptu.iter_sparse_layouts((2, 3))] == [
      (0, 0, 2), (0, 1, 1), (0, 2, 0), (1, 0, 1), (1, 1, 0), (2, 0, 0)]
  assert [tuple(l) for l in sptu.iter_bcsr_layouts((2, 3, 4))] == [(0, 1, 2), (1, 0, 2)]
  assert sptu.is_sparse(m) and not sptu.is_sparse(d)
