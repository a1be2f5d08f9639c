"""jnp.vectorize's checks (signature, excluded, None arguments, rank promotion) and the
set operations with a static ``size`` under jit, against NumPy."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import assert_close


def test_vectorize_excluded_is_checked():
  with pytest.raises(TypeError, match="can only exclude integer or string"):
    jnp.vectorize(lambda x: x, excluded={1.5})
  with pytest.raises(ValueError, match=r"excluded=\{-1\} contains negative numbers"):
    jnp.vectorize(lambda x: x, excluded={-1})


def test_vectorize_signature_checks_inputs():
  matmat = jnp.vectorize(jnp.dot, signature="(n,m),(m,k)->(n,k)")
  with pytest.raises(TypeError, match="wrong number of positional arguments"):
    matmat(jnp.zeros((3, 2)))
  with pytest.raises(ValueError, match=r"input with shape \(2,\) does not have enough"):
    matmat(jnp.zeros((2,)), jnp.zeros((2, 2)))
  with pytest.raises(ValueError, match="inconsistent size for core dimension 'm': 4 vs 3"):
    matmat(jnp.zeros((2, 3)), jnp.zeros((4, 5)))
  a, b = np.arange(24.).reshape(2, 3, 4), np.arange(20.).reshape(4, 5)
  assert_close(matmat(a, b), np.matmul(a, b), np.float32)


def test_vectorize_signature_checks_outputs():
  with pytest.raises(TypeError, match="output must be a tuple"):
    jnp.vectorize(jnp.dot, signature="(n,m),(m,k)->(n,k),()")(jnp.zeros((2, 2)),
                                                              jnp.zeros((2, 2)))
  with pytest.raises(TypeError, match="wrong number of output arguments: expected 3, got 2"):
    jnp.vectorize(lambda *a: a, signature="(),()->(),(),()")(1, 2)
  with pytest.raises(ValueError, match=r"output shape \(2, 2\) does not match"):
    jnp.vectorize(jnp.dot, signature="(n,m),(m,k)->(n)")(jnp.zeros((2, 2)), jnp.zeros((2, 2)))
  with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
    jnp.vectorize(jnp.dot, signature="(n,m),(m,k)->(n,n)")(jnp.zeros((2, 3)),
                                                          jnp.zeros((3, 4)))


def test_vectorize_none_arguments_pass_through():
  f = jnp.vectorize(lambda x, y: x if y is None else x + y)
  x = np.arange(10)
  assert_close(f(x, None), x, np.int32)
  assert_close(f(x, np.arange(10, 20)), x + np.arange(10, 20), np.int32)
  g = jnp.vectorize(lambda x, y: x, signature="(k),(k)->(k)")
  with pytest.raises(ValueError, match=r"Cannot pass None at locations \{1\} with "
                     r"signature='\(k\),\(k\)->\(k\)'"):
    g(x, None)


def test_vectorize_rank_promotion_option():
  f = jnp.vectorize(jnp.add, signature="(),()->()")
  rank2, rank1, rank0 = jnp.zeros((10, 10)), jnp.ones(10), jnp.zeros(())
  with hlox.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="require rank promotion"):
      f(rank2, rank1)
    assert_close(f(rank1, rank0), np.ones(10), np.float32)  # scalars are no promotion
    assert f(rank2, rank0).shape == (10, 10)
    f2 = jnp.vectorize(jnp.add, signature="(n),()->(n)")
    assert_close(f2(rank2, rank1), np.broadcast_to(np.ones(10)[:, None], (10, 10)),
                 np.float32)
  with hlox.numpy_rank_promotion("warn"):
    with pytest.warns(UserWarning, match="require rank promotion"):
      f(rank2, rank1)


def test_vectorize_size_one_loop_dims_are_not_mapped():
  calls = []
  def f(a, b):
    calls.append((a.shape, b.shape))
    return a * b
  a, b = np.arange(3.).reshape(3, 1), np.arange(4.).reshape(1, 4)
  out = jnp.vectorize(f)(a, b)
  assert_close(out, a * b, np.float32)
  # Multiple outputs and a loop dimension that nothing maps keep NumPy's shapes.
  two = jnp.vectorize(lambda x: (x, 2 * x))(np.ones((1, 3)))
  assert isinstance(two, tuple) and two[1].shape == (1, 3)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert jnp.vectorize(lambda x: x + 1)(np.ones((1, 1))).shape == (1, 1)


def _padded(values, size, fill):
  values = values[:size]
  return np.concatenate([values, np.full(size - len(values), fill, values.dtype)])


def test_setdiff1d_with_size_under_jit():
  a, b = np.array([5, 1, 3, 3, 8, 1]), np.array([3, 9])
  f = hlox.jit(lambda a, b: jnp.setdiff1d(a, b, size=5, fill_value=-1))
  assert_close(f(a, b), _padded(np.setdiff1d(a, b), 5, -1), np.int32)
  g = hlox.jit(lambda a, b: jnp.setdiff1d(a, b, size=2))
  assert_close(g(a, b), np.setdiff1d(a, b)[:2], np.int32)
  u = np.array([4, 2, 7])
  assert_close(jnp.setdiff1d(u, b, assume_unique=True, size=4),
               _padded(np.setdiff1d(u, b, assume_unique=True), 4, 0), np.int32)


@pytest.mark.parametrize("assume_unique", [False, True])
def test_intersect1d_with_size_and_indices(assume_unique):
  if assume_unique:
    a, b = np.array([7, 2, 5, 9, 1]), np.array([5, 4, 1, 8])
  else:
    a, b = np.array([7, 2, 5, 2, 1, 5]), np.array([5, 5, 1, 8, 1])
  vals, i1, i2 = np.intersect1d(a, b, assume_unique=assume_unique, return_indices=True)
  f = hlox.jit(lambda a, b: jnp.intersect1d(a, b, assume_unique=assume_unique,
                                            return_indices=True, size=4))
  got = f(a, b)
  assert_close(got[0], _padded(vals, 4, vals.min()), np.int32)
  assert_close(got[1], _padded(i1, 4, a.size), np.int32)
  assert_close(got[2], _padded(i2, 4, b.size), np.int32)
  assert_close(jnp.intersect1d(a, b, size=1, fill_value=-3), vals[:1], np.int32)
  empty = jnp.intersect1d(np.array([1, 2]), np.array([3]), size=2)
  assert_close(empty, np.zeros(2), np.int32)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_unique_size_along_an_axis(axis):
  x = np.array([[3, 1, 3, 0], [2, 2, 2, 0], [3, 1, 3, 0]])
  u, ind, inv, counts = np.unique(x, return_index=True, return_inverse=True,
                                  return_counts=True, axis=axis)
  n = u.size if axis is None else u.shape[axis]
  size = n + 2
  kw = dict(return_index=True, return_inverse=True, return_counts=True, size=size, axis=axis)
  for fn in (lambda x: jnp.unique(x, **kw), hlox.jit(lambda x: jnp.unique(x, **kw))):
    got = fn(x)
    ax = 0 if axis is None else axis
    pad_shape = list(np.moveaxis(u, ax, 0).shape)
    pad_shape[0] = 2
    pad = np.broadcast_to(np.take(u, [0], axis=ax).reshape(-1) if axis is None
                          else np.moveaxis(np.take(u, [0], axis=ax), ax, 0), pad_shape)
    want = np.moveaxis(np.concatenate([np.moveaxis(u, ax, 0), pad]), 0, ax)
    assert_close(got[0], want, np.int32)
    assert_close(got[1], np.concatenate([ind, [ind[0]] * 2]), np.int32)
    assert_close(got[2], inv.reshape(got[2].shape), np.int32)
    assert_close(got[3], np.concatenate([counts, [0, 0]]), np.int32)


def test_unique_size_slice_fill_value():
  x = np.array([[1, 5], [0, 5], [1, 5]])
  f = hlox.jit(lambda x: jnp.unique(x, axis=1, size=3, fill_value=np.array([7, 8, 9])))
  assert_close(f(x), np.array([[1, 5, 7], [0, 5, 8], [1, 5, 9]]), np.int32)
  assert_close(jnp.unique(x, axis=1, size=3, fill_value=np.array([7, 8, 9])),
               np.array([[1, 5, 7], [0, 5, 8], [1, 5, 9]]), np.int32)
  with pytest.raises(ValueError, match="fill_value must be specified"):
    jnp.unique(np.zeros((0,)), size=2)


def test_unique_result_tuples_are_named_as_jax_names_them():
  # Printed results name their tuple type: JAX's are _Unique*Result.
  x = jnp.array([3, 1, 3])
  values, counts = jnp.unique_counts(x)
  assert type(jnp.unique_counts(x)).__name__ == "_UniqueCountsResult"
  assert type(jnp.unique_inverse(x)).__name__ == "_UniqueInverseResult"
  assert type(jnp.unique_all(x)).__name__ == "_UniqueAllResult"
  np.testing.assert_array_equal(values, [1, 3])
  np.testing.assert_array_equal(counts, [1, 2])
  assert repr(jnp.unique_counts(x)).startswith("_UniqueCountsResult(values=Array([1, 3]")
