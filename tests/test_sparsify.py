"""sparsify (``jax.experimental.sparse.sparsify``): sparsified functions against the dense
function on the same inputs, with both implementations (jaxpr interpreter and tracer)."""
import operator

import numpy as np
import pytest

import hlox
from hlox import lax
from hlox import numpy as jnp
from hlox.experimental import sparse
from hlox.experimental.sparse import BCOO, BCSR, SparseTracer, sparsify
from hlox.experimental.sparse.transform import (
    SparsifyEnv, SparsifyValue, arrays_to_spvalues, sparsify_raw, spvalues_to_arrays)

M = np.array([[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 4., 0.]], np.float32)

both = pytest.mark.parametrize("use_tracer", [False, True])


def dense(x):
  return np.asarray(x.todense() if isinstance(x, (BCOO, BCSR)) else x)


def duplicated():
  """The matrix M stored with its (0, 3) entry split in two and a padding entry."""
  data = np.array([1., 1.5, 3., 4., 0.5, 9.], np.float32)
  indices = np.array([[0, 1], [0, 3], [1, 0], [2, 2], [0, 3], [3, 4]], np.int32)
  return BCOO((data, indices), shape=(3, 4))


@both
@pytest.mark.parametrize("op", [lax.neg, lax.sin, lax.sqrt, lax.tanh, lax.expm1, lax.abs,
                                lambda x: lax.integer_pow(x, 3), jnp.copy,
                                lambda x: lax.convert_element_type(x, np.complex64)])
def test_unary_ops_sum_duplicates_first_when_not_linear(op, use_tracer):
  x = duplicated()
  np.testing.assert_array_equal(dense(x), M)
  out = sparsify(op, use_tracer=use_tracer)(x)
  assert isinstance(out, BCOO)
  np.testing.assert_allclose(dense(out), np.asarray(op(jnp.asarray(M))), rtol=1e-6)
  if op in (lax.neg, jnp.copy):  # linear: the stored entries are kept as they are
    np.testing.assert_array_equal(np.asarray(out.indices), np.asarray(x.indices))


@both
def test_arithmetic_matches_dense(use_tracer):
  sp = lambda f: sparsify(f, use_tracer=use_tracer)
  x = BCOO.fromdense(M)
  v = np.arange(4, dtype=np.float32)
  f = lambda a, v: -jnp.sin(jnp.pi * a).T.T @ (v + 1)
  np.testing.assert_allclose(np.asarray(sp(f)(x, v)), np.asarray(f(M, v)), rtol=1e-5)
  g = lambda a: (a.sum(), a.sum(0), a.sum(1), 2 * a / 4, a * jnp.arange(4.), a.T * 3)
  for got, want in zip(sp(g)(x), g(jnp.asarray(M))):
    np.testing.assert_allclose(dense(got), np.asarray(want), rtol=1e-6)
  # Two sparse operands with their own indices: the entries are put side by side.
  y = BCOO.fromdense(2 * M)
  out = sp(operator.add)(x, y)
  assert out.nse == x.nse + y.nse
  np.testing.assert_array_equal(dense(out), 3 * M)
  np.testing.assert_array_equal(dense(sp(operator.sub)(x, y)), -M)
  np.testing.assert_array_equal(dense(sp(operator.mul)(x, duplicated())), M * M)
  # Sparse plus a dense array of the full shape is dense.
  out = sp(operator.add)(x, jnp.ones((3, 4)))
  assert not isinstance(out, BCOO)
  np.testing.assert_array_equal(np.asarray(out), M + 1)
  # Mixed dtypes and a sparse vector operand of dot_general.
  xi = BCOO.fromdense(np.arange(12, dtype=np.int32).reshape(3, 4))
  out = sp(lax.dot)(x, BCOO.fromdense(np.ones(4, np.float32)))
  np.testing.assert_allclose(dense(out), M @ np.ones(4), rtol=1e-6)
  out = sp(operator.mul)(2, xi)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(dense(out), 2 * np.arange(12).reshape(3, 4))


@both
def test_shared_indices_use_data_only(use_tracer):
  x = BCOO.fromdense(M)
  spenv = SparsifyEnv([x.indices, x.data, 2 * x.data])
  a = spenv.sparse(x.shape, data_ref=1, indices_ref=0, unique_indices=True)
  b = spenv.sparse(x.shape, data_ref=2, indices_ref=0, unique_indices=True)
  for op in (operator.add, operator.mul, operator.sub):
    out_values, _ = sparsify_raw(op)(spenv, a, b)
    out, = spvalues_to_arrays(spenv, out_values)
    assert out.nse == x.nse
    np.testing.assert_array_equal(dense(out), op(M, 2 * M))


def test_spvalues_round_trip():
  x = jnp.arange(5)
  xs = BCOO.fromdense(x)
  spenv = SparsifyEnv()
  values = arrays_to_spvalues(spenv, (x, xs))
  assert values == (SparsifyValue((5,), 0), SparsifyValue((5,), 1, 2, indices_sorted=True,
                                                          unique_indices=True))
  assert len(spenv._buffers) == 3
  back = spvalues_to_arrays(spenv, values)
  np.testing.assert_array_equal(np.asarray(back[0]), np.arange(5))
  assert isinstance(back[1], BCOO) and back[1].unique_indices
  np.testing.assert_array_equal(dense(back[1]), np.arange(5))
  with pytest.raises(ValueError, match="data_ref=7"):
    spenv.sparse((5,), data_ref=7, indices_ref=2)


@both
def test_control_flow_and_calls(use_tracer):
  sp = lambda f: sparsify(f, use_tracer=use_tracer)
  x = BCOO.fromdense(M)
  v = np.ones(4, np.float32)

  def loop(a):
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, 2 * c[1], c[1]), (0, a, a))
  i, a, b = sp(loop)(x)
  assert int(i) == 3 and isinstance(a, BCOO)
  np.testing.assert_array_equal(dense(a), 8 * M)
  np.testing.assert_array_equal(dense(b), 4 * M)
  out = sp(lambda a: lax.cond(True, lambda a: 3 * a, lambda a: a, a))(x)
  np.testing.assert_array_equal(dense(out), 3 * M)
  fori = lambda a, w: lax.fori_loop(0, 2, lambda i, w: (a @ w) / 2, w)
  np.testing.assert_allclose(np.asarray(sp(fori)(BCOO.fromdense(M[:, :3]), v[:3])),
                             np.asarray(fori(M[:, :3], v[:3])), rtol=1e-6)

  def dropped(a):  # a jitted call whose first result is never used
    _, y = hlox.jit(lambda a: (2 * a, 3 * a))(a)
    return y * 4
  np.testing.assert_array_equal(dense(sp(dropped)(x)), 12 * M)
  np.testing.assert_array_equal(dense(sp(hlox.jit(lambda a: a.sum(1)))(x)), M.sum(1))
  # sparse.todense inside the function densifies; also under jit around sparsify.
  f = sp(lambda a: sparse.todense(a) + 1)
  np.testing.assert_array_equal(np.asarray(f(x)), M + 1)
  np.testing.assert_array_equal(np.asarray(hlox.jit(f)(x)), M + 1)
  np.testing.assert_array_equal(np.asarray(f(BCSR.fromdense(M))), M + 1)

  square = hlox.custom_jvp(lambda a: a ** 2)
  square.defjvp(lambda p, t: (p[0] ** 2, 2 * p[0] * t[0]))
  np.testing.assert_array_equal(dense(sp(square)(x)), M ** 2)


@both
def test_errors_match_jax(use_tracer):
  sp = lambda f: sparsify(f, use_tracer=use_tracer)
  x = BCOO.fromdense(jnp.arange(5.0))
  with pytest.raises(NotImplementedError,
                     match=r"^sparse rule for cos is not implemented because it would result"):
    sp(lax.cos)(x)
  with pytest.raises(NotImplementedError, match=r"^sparse rule for complex is not implemented\.$"):
    sp(lax.complex)(x, x)
  with pytest.raises(NotImplementedError, match="Addition between a sparse array X and a dense"):
    sp(operator.add)(x, 1.)
  with pytest.raises(NotImplementedError, match="Subtraction between sparse and dense"):
    sp(operator.sub)(x, jnp.ones(5))
  with pytest.raises(NotImplementedError, match="Division by a sparse array"):
    sp(operator.truediv)(jnp.ones(5), x)
  with pytest.raises(NotImplementedError, match="integer_pow with non-positive exponent -1"):
    sp(lambda a: a ** -1)(x)
  mismatch = sp(lambda a, b: lax.cond(False, lambda p: p[0], lambda p: p[1], (a, b)))
  with pytest.raises(TypeError, match="sparsified true_fun output must have same type"):
    mismatch(x, jnp.arange(5.0))


def test_tracer_is_what_the_function_sees():
  seen = []
  sparsify(lambda a: seen.append(type(a)), use_tracer=True)(jnp.arange(3))
  sparsify(lambda a: seen.append(type(a)))(jnp.arange(3))
  assert issubclass(seen[0], SparseTracer) and not issubclass(seen[1], SparseTracer)


def test_bcoo_methods_are_sparsified():
  x = BCOO.fromdense(M)
  np.testing.assert_array_equal(dense(x ** 2), M ** 2)
  np.testing.assert_array_equal(dense(-x), -M)
  np.testing.assert_array_equal(dense(abs(-x)), M)
  np.testing.assert_array_equal(dense(x / np.full((3, 4), 2., np.float32)), M / 2)
  np.testing.assert_array_equal(dense(x * 2), 2 * M)
  np.testing.assert_array_equal(dense(2 * x), 2 * M)
  np.testing.assert_allclose(np.asarray(x @ np.ones(4, np.float32)), M.sum(1))
  np.testing.assert_allclose(np.asarray(jnp.ones(3) @ x), M.sum(0))
  assert float(x.sum()) == M.sum()
  np.testing.assert_array_equal(dense(x.sum(0)), M.sum(0))
  assert x.astype(np.int32).dtype == np.int32
  np.testing.assert_array_equal(dense(x + x), 2 * M)
  with pytest.raises(NotImplementedError, match="integer_pow with non-positive exponent"):
    x ** -1
  with pytest.raises(NotImplementedError, match="sparse rule for gt"):
    x > 0


def test_bcsr_unary_keeps_layout():
  x = BCSR.fromdense(M)
  out = sparsify(lambda a: -jnp.sin(a))(x)
  assert isinstance(out, BCSR)
  np.testing.assert_allclose(dense(out), -np.sin(M), rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(out.indptr), np.asarray(x.indptr))


@both
def test_layout_rules_call_the_format_operations(use_tracer):
  sp = lambda f: sparsify(f, use_tracer=use_tracer)
  x, y = BCOO.fromdense(M), BCOO.fromdense(2 * M)
  cases = [
      (lambda a, b: jnp.vstack([a, b]), (x, y)),
      (lambda a, b: jnp.stack([a, b]), (x, y)),
      (lambda a: a.reshape(2, 6), (x,)),
      (lambda a: lax.squeeze(a[None], (0,)), (x,)),
      (lambda a: lax.slice(a, (1, 1), (3, 4)), (x,)),
      (lambda a: lax.rev(a, (1,)), (x,)),
  ]
  for f, args in cases:
    out = sp(f)(*args)
    assert isinstance(out, BCOO)
    np.testing.assert_array_equal(dense(out), np.asarray(f(*map(dense, args))))
  out = x.reshape(4, 3)
  assert isinstance(out, BCOO) and out.shape == (4, 3)
  np.testing.assert_array_equal(dense(out), M.reshape(4, 3))
