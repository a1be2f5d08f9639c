"""Autodiff rules of dot_general (``hlox/lax/dot.py``) and sort/top_k
(``hlox/lax/sorting.py``): JVPs against finite differences, transposes against the JVPs,
second order, under ``jit``, explicit cotangents against NumPy, and the NumPy-level
functions built on them (``jnp.dot/matmul/einsum/sort``)."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.core import dtypes

from check_grads import check_grads
from util import assert_close

RNG = np.random.default_rng(0)


def check(f, args, order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6):
  """``check_grads`` (first and second order, forward and reverse) in float64."""
  with enable_x64():
    check_grads(f, tuple(np.asarray(a) for a in args), order=order, modes=modes, atol=atol,
                rtol=rtol)


def prims_of(f, *args):
  return [e.primitive.name for e in hlox.make_jaxpr(f)(*args).jaxpr.eqns]


# --- dot_general ---------------------------------------------------------------------------

DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),                 # matmul
    ((4,), (4,), (((0,), (0,)), ((), ()))),                     # vector dot
    ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),                 # contract leading dims
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),       # batched matmul
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),       # batch dims not leading
    ((2, 3, 4, 5), (5, 4, 6), (((2, 3), (1, 0)), ((), ()))),    # contracting dims crossed
    ((2, 3, 4), (3, 2, 4), (((1, 2), (0, 2)), ((0,), (1,)))),   # batch + two contracting
    ((2, 3), (4,), (((), ()), ((), ()))),                       # outer product
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dnums", DOT_CASES)
def test_dot_general_grads(lhs_shape, rhs_shape, dnums):
  x, y = RNG.standard_normal(lhs_shape), RNG.standard_normal(rhs_shape)
  check(lambda x, y: lax.dot_general(x, y, dnums), (x, y))


def test_dot_general_cotangents_match_numpy():
  x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
  ct = RNG.standard_normal((3, 5))
  f = lambda x, y: lax.dot(x, y)  # noqa: E731
  with enable_x64():
    gx, gy = hlox.vjp(f, x, y)[1](ct)
    jx, jy = hlox.jit(lambda x, y, ct: hlox.vjp(f, x, y)[1](ct))(x, y, ct)
  assert_close(gx, ct @ y.T)
  assert_close(gy, x.T @ ct)
  assert_close(jx, ct @ y.T)
  assert_close(jy, x.T @ ct)


def test_dot_general_batch_cotangents_match_numpy():
  x, y = RNG.standard_normal((3, 2, 4)), RNG.standard_normal((4, 5, 2))
  dnums = (((2,), (0,)), ((1,), (2,)))
  ct = RNG.standard_normal((2, 3, 5))
  with enable_x64():
    gx, gy = hlox.vjp(lambda x, y: lax.dot_general(x, y, dnums), x, y)[1](ct)
  assert_close(gx, np.einsum("bij,kjb->ibk", ct, y))
  assert_close(gy, np.einsum("ibk,bij->kjb", x, ct))


def test_dot_general_complex_cotangent_is_a_transpose_not_an_adjoint():
  # As in JAX: the VJP of a holomorphic linear map applies its transpose (no conjugation).
  x = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
  y = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
  ct = RNG.standard_normal((2, 2)) + 1j * RNG.standard_normal((2, 2))
  with enable_x64():
    gx, gy = hlox.vjp(lambda x, y: lax.dot(x, y), x, y)[1](ct)
    _, t = hlox.jvp(lambda x: lax.dot(x, y), (x,), (ct @ y.T,))
  assert_close(gx, ct @ y.T)
  assert_close(gy, x.T @ ct)
  assert_close(t, ct @ y.T @ y)


def test_dot_general_preferred_element_type_grads_keep_operand_dtypes():
  x = RNG.standard_normal((3, 4)).astype(dtypes.bfloat16)
  y = RNG.standard_normal((4, 2)).astype(dtypes.bfloat16)

  def f(x, y):
    return lax.reduce_sum(lax.dot(x, y, preferred_element_type=np.float32), (0, 1))
  gx, gy = hlox.grad(f, argnums=(0, 1))(x, y)
  assert gx.dtype == dtypes.bfloat16 and gy.dtype == dtypes.bfloat16
  xf, yf = np.asarray(x, np.float32), np.asarray(y, np.float32)
  assert_close(np.asarray(gx, np.float32), np.ones((3, 2)) @ yf.T, rtol=2e-2, atol=2e-2,
               check_dtype=False)
  assert_close(np.asarray(gy, np.float32), xf.T @ np.ones((3, 2)), rtol=2e-2, atol=2e-2,
               check_dtype=False)
  _, t = hlox.jvp(lambda x: lax.dot(x, y, preferred_element_type=np.float32), (x,), (x,))
  assert t.dtype == np.float32


def test_dot_general_mixed_dtypes_cotangents_take_each_operand_dtype():
  with enable_x64():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = RNG.standard_normal((4, 2))
    gx, gy = hlox.grad(lambda x, y: lax.reduce_sum(lax.dot(x, y), (0, 1)),
                       argnums=(0, 1))(x, y)
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    assert_close(gx, np.ones((3, 2)) @ y.T, rtol=1e-5, check_dtype=False)
    assert_close(gy, x.astype(np.float64).T @ np.ones((3, 2)), rtol=1e-5)


def test_dot_general_integer_operand_has_no_tangent():
  x = np.arange(6, dtype=np.int32).reshape(2, 3)
  y = RNG.standard_normal((3, 2)).astype(np.float32)
  gy = hlox.grad(lambda y: lax.reduce_sum(lax.dot(x, y), (0, 1)))(y)
  assert_close(gy, x.T.astype(np.float32) @ np.ones((2, 2), np.float32))


def test_dot_general_grad_under_jit_and_jaxpr():
  x, y = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((4, 5)).astype(
      np.float32)
  f = lambda x, y: lax.reduce_sum(lax.dot(x, y), (0, 1))  # noqa: E731
  g = hlox.jit(hlox.grad(f, argnums=(0, 1)))(x, y)
  assert_close(g[0], np.ones((3, 5), np.float32) @ y.T, rtol=1e-5)
  assert_close(g[1], x.T @ np.ones((3, 5), np.float32), rtol=1e-5)
  prims = prims_of(hlox.grad(f, argnums=(0, 1)), x, y)
  assert prims.count("dot_general") == 3 and "transpose" in prims


# --- sort ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dimension", [((7,), 0), ((3, 5), 1), ((4, 3), 0),
                                             ((2, 3, 4), 1)])
def test_sort_grads(shape, dimension):
  x = RNG.permutation(np.prod(shape)).reshape(shape) + RNG.uniform(0, .1, shape)
  check(lambda x: lax.sort(x, dimension), (x,))


def test_sort_gradient_follows_the_permutation_with_ties():
  # Equal keys keep their order (stable), and each output's gradient goes to the element
  # that landed there.
  x = np.array([3., 1., 2., 1., 0.], np.float32)
  w = np.array([1., 10., 100., 1000., 10000.], np.float32)
  f = lambda x: lax.reduce_sum(lax.mul(lax.sort(x), w), (0,))  # noqa: E731
  perm = np.argsort(x, kind="stable")
  expected = np.zeros(5, np.float32)
  expected[perm] = w
  assert_close(hlox.grad(f)(x), expected)
  assert_close(hlox.jit(hlox.grad(f))(x), expected)


def test_sort_multiple_operands_tangents_follow_the_keys():
  keys = np.array([[2., 0., 1.], [0., 1., 0.]])
  vals = RNG.standard_normal((2, 3))
  check(lambda k, v: lax.sort((k, v), 1, num_keys=1), (keys + .01 * RNG.uniform(
      size=(2, 3)), vals))
  # Two keys: lexicographic order; both outputs' tangents move with the same permutation.
  k2 = np.array([1., 0., 1., 0.])
  k1 = np.array([0., 0., 0., 0.])
  v = np.array([10., 20., 30., 40.])
  with enable_x64():
    outs, touts = hlox.jvp(lambda a, b, c: lax.sort((a, b, c), 0, num_keys=2), (k1, k2, v),
                           (np.arange(4.), np.arange(4.) * 10, np.arange(4.) * 100))
  perm = np.lexsort((k2, k1))
  assert_close(outs[2], v[perm])
  assert_close(touts[0], np.arange(4.)[perm])
  assert_close(touts[1], (np.arange(4.) * 10)[perm])
  assert_close(touts[2], (np.arange(4.) * 100)[perm])


def test_sort_integer_values_carry_no_tangent():
  keys = np.array([0.3, 0.1, 0.2], np.float32)
  idx = np.arange(3, dtype=np.int32)
  (sk, si), (tk, ti) = hlox.jvp(lambda k, i: lax.sort((k, i), 0), (keys, idx),
                                (np.ones(3, np.float32), np.zeros(3, dtypes.float0)))
  assert_close(si, np.array([1, 2, 0], np.int32))
  assert_close(tk, np.ones(3, np.float32))
  assert ti.dtype == dtypes.float0


def test_sort_grad_jaxpr_scatters_the_cotangent_back():
  x = np.array([[3., 1., 2.]], np.float32)
  prims = prims_of(hlox.grad(lambda x: lax.reduce_sum(lax.sort(x, 1), (0, 1))), x)
  assert "sort" in prims and "iota" in prims and "scatter_add" in prims


# --- top_k ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,k", [((6,), 3), ((3, 5), 2), ((2, 3, 4), 4)])
def test_top_k_grads(shape, k):
  x = RNG.permutation(np.prod(shape)).reshape(shape) + RNG.uniform(0, .1, shape)
  check(lambda x: lax.top_k(x, k)[0], (x,))


def test_top_k_gradient_goes_to_the_selected_entries():
  x = np.array([[1., 5., 3., 5.], [0., -1., 2., 7.]], np.float32)
  w = np.array([[1., 10.]], np.float32)
  f = lambda x: lax.reduce_sum(lax.mul(lax.top_k(x, 2)[0], w), (0, 1))  # noqa: E731
  expected = np.array([[0., 1., 0., 10.], [0., 0., 10., 1.]], np.float32)
  assert_close(hlox.grad(f)(x), expected)
  assert_close(hlox.jit(hlox.grad(f))(x), expected)


def test_top_k_indices_have_float0_tangents():
  x = np.array([1., 3., 2.], np.float32)
  (v, i), (tv, ti) = hlox.jvp(lambda x: lax.top_k(x, 2), (x,), (np.array([1., 2., 3.],
                                                                          np.float32),))
  assert_close(tv, np.array([2., 3.], np.float32))
  assert ti.dtype == dtypes.float0 and ti.shape == (2,)


# --- NumPy functions -----------------------------------------------------------------------

def test_numpy_products_grads():
  a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
  v = RNG.standard_normal(4)
  check(jnp.dot, (a, b))
  check(jnp.dot, (v, v))
  check(jnp.matmul, (a, b))
  check(jnp.matmul, (RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 5))))
  check(lambda a, b: jnp.einsum("ij,jk->ik", a, b), (a, b))
  check(lambda a, b: jnp.einsum("bij,bjk->bki", a, b), (RNG.standard_normal((2, 3, 4)),
                                                        RNG.standard_normal((2, 4, 2))))
  check(lambda a: jnp.einsum("ij->j", a), (a,))


def test_numpy_sort_grads():
  x = RNG.permutation(12).reshape(3, 4) + RNG.uniform(0, .1, (3, 4))
  check(lambda x: jnp.sort(x, axis=0), (x,))
  check(lambda x: jnp.sort(x, axis=None), (x,))
  g = hlox.jit(hlox.grad(lambda x: jnp.sort(x)[..., -1].sum()))(x.astype(np.float32))
  expected = (x == x.max(axis=1, keepdims=True)).astype(np.float32)
  assert_close(g, expected)
