"""Autodiff rules of the reductions (``hlox/lax/reductions.py``) and the windowed and
cumulative reductions (``hlox/lax/windowed.py``): JVPs against finite differences,
transposes against the JVPs, second order, under ``jit``, values at non-differentiable
points (ties, zeros, infinities) as JAX defines them, and the NumPy-level reductions."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.core import dtypes
from hlox.interpreters import ad

from check_grads import check_grads
from util import assert_close

RNG = np.random.default_rng(0)


def check(f, args, order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6, eps=1e-4):
  """``check_grads`` (first and second order, forward and reverse) in float64."""
  with enable_x64():
    check_grads(f, tuple(np.asarray(a) for a in args), order=order, modes=modes, atol=atol,
                rtol=rtol, eps=eps)


def grad_both(f, x):
  """``grad(f)(x)`` eagerly and under ``jit`` (checked equal)."""
  eager = hlox.grad(f)(x)
  assert_close(hlox.jit(hlox.grad(f))(x), eager)
  return np.asarray(eager)


def prims_of(f, *args):
  return [e.primitive.name for e in hlox.make_jaxpr(f)(*args).jaxpr.eqns]


def total(x):
  return lax.reduce_sum(x, tuple(range(np.ndim(x))))


# --- reduce_sum ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes", [((5,), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)),
                                        ((2, 3, 4), (0, 2)), ((3, 4), ())])
def test_reduce_sum_grads(shape, axes):
  check(lambda x: lax.reduce_sum(x, axes), (RNG.standard_normal(shape),))


def test_reduce_sum_transposes_to_broadcast_in_dim():
  x = np.ones((2, 3), np.float32)
  ct = np.array([1., 2.], np.float32)
  g = hlox.vjp(lambda x: lax.reduce_sum(x, (1,)), x)[1](ct)[0]
  assert_close(g, np.array([[1., 1., 1.], [2., 2., 2.]], np.float32))
  prims = prims_of(lambda x: hlox.vjp(lambda x: lax.reduce_sum(x, (1,)), x)[1](ct)[0], x)
  assert prims[-1] == "broadcast_in_dim"


# --- reduce_prod ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape,axes", [((5,), (0,)), ((3, 4), (1,)), ((2, 3, 2), (0, 2)),
                                        ((3, 4), ())])
def test_reduce_prod_grads(shape, axes):
  x = RNG.uniform(0.5, 1.5, shape) * RNG.choice([-1, 1], shape)
  check(lambda x: lax.reduce_prod(x, axes), (x,))


def _prod_others(x):
  return np.array([np.prod(np.delete(x, i)) for i in range(x.size)])


@pytest.mark.parametrize("x", [[2., 0., 3., 4.], [0., 0., 3., 4.], [0., 5., 0., 0.],
                               [1.5, -2., 3., 0.5]])
def test_reduce_prod_gradient_with_zeros(x):
  x = np.array(x, np.float32)
  assert_close(grad_both(lambda x: lax.reduce_prod(x, (0,)), x), _prod_others(x))


def test_reduce_prod_second_order_with_zeros():
  x = np.array([[0., 2., 3.], [0., 0., 4.]])
  check(lambda x: lax.reduce_prod(x, (1,)), (x,))


def test_reduce_prod_empty_and_integer():
  x = np.zeros((3, 0), np.float32)
  _, t = hlox.jvp(lambda x: lax.reduce_prod(x, (1,)), (x,), (x,))
  assert_close(t, np.zeros(3, np.float32))
  i = np.arange(1, 4, dtype=np.int32)
  out, t = hlox.jvp(lambda i: lax.reduce_prod(i, (0,)), (i,), (np.zeros(3, dtypes.float0),))
  assert int(out) == 6 and t.dtype == dtypes.float0


# --- reduce_max / reduce_min ---------------------------------------------------------------

@pytest.mark.parametrize("reducer", [lax.reduce_max, lax.reduce_min])
@pytest.mark.parametrize("shape,axes", [((6,), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2))])
def test_reduce_max_min_grads(reducer, shape, axes):
  x = RNG.permutation(np.prod(shape)).reshape(shape) + RNG.uniform(0, .1, shape)
  check(lambda x: reducer(x, axes), (x,))


@pytest.mark.parametrize("reducer", [lax.reduce_max, lax.reduce_min])
def test_reduce_max_min_split_ties_equally(reducer):
  x = np.array([[1., 3., 3., 0.], [2., 2., 2., 2.], [0., 5., 1., 1.]], np.float32)
  g = grad_both(lambda x: total(reducer(x, (1,))), x)
  ext = x.max(1, keepdims=True) if reducer is lax.reduce_max else x.min(1, keepdims=True)
  hits = (x == ext).astype(np.float32)
  assert_close(g, hits / hits.sum(1, keepdims=True))


def test_reduce_max_integer_has_no_tangent():
  x = np.array([1, 5, 2], np.int32)
  out, t = hlox.jvp(lambda x: lax.reduce_max(x, (0,)), (x,), (np.zeros(3, dtypes.float0),))
  assert int(out) == 5 and t.dtype == dtypes.float0


# --- logical reductions and argmax/argmin ---------------------------------------------------

@pytest.mark.parametrize("fun", [
    lambda x: lax.argmax(x, 0, np.int32), lambda x: lax.argmin(x, 1, np.int32),
    lambda x: lax.reduce_or(lax.gt(x, 0.), (0,)),
    lambda x: lax.reduce_and(lax.gt(x, 0.), (0, 1)),
    lambda x: lax.reduce_xor(lax.convert_element_type(x, np.int32), (1,))])
def test_integer_reductions_have_zero_tangents(fun):
  x = RNG.standard_normal((3, 4)).astype(np.float32) * 3
  out, t = hlox.jvp(fun, (x,), (np.ones_like(x),))
  assert t.dtype == dtypes.float0 and t.shape == np.shape(out)
  assert lax.argmax_p in ad.primitive_jvps and lax.reduce_xor_p in ad.primitive_jvps


def test_gradient_through_argmax_selection():
  x = np.array([[1., 4., 2.], [3., 0., 3.]], np.float32)

  def f(x):
    i = lax.argmax(x, 1, np.int32)
    return total(jnp.take_along_axis(x, i[:, None], axis=1))
  assert_close(grad_both(f, x), np.array([[0., 1., 0.], [1., 0., 0.]], np.float32))


# --- generic reduce ------------------------------------------------------------------------

def test_generic_reduce_grads():
  x = RNG.standard_normal((4, 5))
  # Not ``lax.add`` itself, so the generic reduce primitive is used.
  check(lambda x: lax.reduce(x, 0., lambda a, b: lax.add(a, b), (1,)), (x,))
  check(lambda x: lax.reduce(x, 1., lambda a, b: lax.mul(a, b), (0,)), (x,))
  check(lambda x: lax.reduce(x, -np.inf, lambda a, b: lax.max(a, b), (0, 1)), (x,),
        order=1)
  assert "reduce" in prims_of(lambda x: lax.reduce(x, 0., lambda a, b: lax.add(a, b), (1,)),
                              x)


def test_generic_reduce_two_operands():
  # (value, index) pairs: the gradient of the selected value reaches its element.
  x = np.array([[1., 4., 2.], [3., 0., 5.]], np.float32)
  idx = np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3))

  def pick(a, b):
    take_a = lax.ge(a[0], b[0])
    return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])

  def f(x):
    v, i = lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), pick, (1,))
    return total(v)
  assert_close(grad_both(f, x), np.array([[0., 1., 0.], [0., 0., 1.]], np.float32))


def test_generic_reduce_init_value_tangent_is_rejected():
  x = np.ones((3,), np.float32)
  with pytest.raises(NotImplementedError, match="initial values"):
    hlox.jvp(lambda x, i: lax.reduce(x, i, lambda a, b: lax.add(a, b), (0,)),
             (x, np.float32(0)), (x, np.float32(1)))


# --- reduce_window -------------------------------------------------------------------------

WINDOW_CASES = [  # window, strides, padding, base dilation, window dilation
    ((2, 3), (1, 1), "VALID", None, None),
    ((2, 2), (2, 1), "SAME", None, None),
    ((3, 2), (2, 3), ((1, 0), (0, 1)), None, None),
    ((2, 2), (1, 1), ((1, 0), (0, 1)), (2, 1), None),
    ((2, 2), (1, 2), "VALID", None, (2, 1)),
]


@pytest.mark.parametrize("window,strides,padding,base,wdil", WINDOW_CASES)
def test_reduce_window_sum_grads(window, strides, padding, base, wdil):
  x = RNG.standard_normal((5, 6))
  check(lambda x: lax.reduce_window(x, 0., lax.add, window, strides, padding, base, wdil),
        (x,))


@pytest.mark.parametrize("window,strides,padding,base,wdil", WINDOW_CASES)
@pytest.mark.parametrize("op,init", [(lax.max, -np.inf), (lax.min, np.inf)])
def test_reduce_window_max_min_grads(op, init, window, strides, padding, base, wdil):
  x = RNG.permutation(30).reshape(5, 6) + RNG.uniform(0, .1, (5, 6))
  f = lambda x: lax.reduce_window(x, init, op, window, strides, padding, base, wdil)  # noqa
  if wdil is None:
    check(f, (x,))
  else:  # as in JAX, only forward mode with window dilation
    check(f, (x,), modes=("fwd",))
    with pytest.raises(NotImplementedError, match="window dilation"):
      hlox.grad(lambda x: total(f(x)))(x)


def test_max_pool_gradient_counts_window_wins():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  g = grad_both(lambda x: total(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1),
                                                  "SAME")), x)
  assert_close(g, np.array([[0, 0, 0, 0], [0, 1, 1, 2], [0, 2, 2, 4]], np.float32))
  prims = prims_of(hlox.grad(lambda x: total(lax.reduce_window(
      x, -np.inf, lax.max, (2, 2), (1, 1), "SAME"))), x)
  assert "select_and_scatter_add" in prims


def test_generic_reduce_window_forward_mode():
  x = RNG.standard_normal((4, 5))
  f = lambda x: lax.reduce_window(x, 1., lambda a, b: lax.mul(a, b), (2, 2), (1, 1),  # noqa
                                  "VALID")
  check(f, (x,), modes=("fwd",))
  # Two operands, one of them integer.
  x32 = x.astype(np.float32)
  idx = np.broadcast_to(np.arange(5, dtype=np.int32), (4, 5))

  def g(x):
    def pick(a, b):
      take_a = lax.ge(a[0], b[0])
      return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])
    return lax.reduce_window((x, idx), (np.float32(-np.inf), np.int32(0)), pick, (1, 2),
                             (1, 1), "VALID")[0]
  t = RNG.standard_normal((4, 5)).astype(np.float32)
  _, tout = hlox.jvp(g, (x32,), (t,))
  windows = np.stack([x32[:, :-1], x32[:, 1:]])
  t_windows = np.stack([t[:, :-1], t[:, 1:]])
  assert_close(tout, np.where(windows[0] >= windows[1], t_windows[0], t_windows[1]))
  with pytest.raises(NotImplementedError, match="reduce_window"):
    hlox.grad(lambda x: total(g(x)))(x32)  # as in JAX: no transpose for the generic op


# --- cumulative reductions -----------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 1), ((4, 3), 0)])
def test_cumsum_grads(shape, axis, reverse):
  check(lambda x: lax.cumsum(x, axis, reverse), (RNG.standard_normal(shape),))


def test_cumsum_transposes_to_reverse_cumsum():
  x = np.ones(4, np.float32)
  g = hlox.vjp(lambda x: lax.cumsum(x), x)[1](np.array([1., 2., 3., 4.], np.float32))[0]
  assert_close(g, np.array([10., 9., 7., 4.], np.float32))
  eqn = hlox.make_jaxpr(lambda ct: hlox.vjp(lax.cumsum, x)[1](ct)[0])(x).jaxpr.eqns[-1]
  assert eqn.primitive is lax.cumsum_p and eqn.params["reverse"] is True


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("prim", [lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp])
@pytest.mark.parametrize("shape,axis,reverse,order", [((7,), 0, False, 2), ((3, 5), 1, True, 2),
                                                      ((4, 3), 0, True, 1)])
def test_cumulative_grads(prim, shape, axis, reverse, order):
  # (Eagerly, every small op of the JVP's scan compiles on its own: keep the sweep small.)
  if prim is lax.cumprod:
    x = RNG.uniform(0.5, 1.5, shape) * RNG.choice([-1, 1], shape)
  else:
    x = RNG.permutation(np.prod(shape)).reshape(shape) + RNG.uniform(0, .1, shape)
  check(lambda x: prim(x, axis, reverse), (x,), order=order)


def _cumprod_jacobian(x):
  n = len(x)
  jac = np.zeros((n, n))
  for i in range(n):
    for j in range(i + 1):
      jac[i, j] = np.prod(np.delete(x[:i + 1], j))
  return jac


@pytest.mark.parametrize("x", [[2., 0., 3., 4.], [0., 2., 0., 3., 5.], [1., 2., 3., 0.]])
def test_cumprod_gradient_with_zeros(x):
  x = np.array(x)
  ct = np.arange(1., len(x) + 1)
  with enable_x64():
    g = hlox.vjp(lax.cumprod, x)[1](ct)[0]
    _, t = hlox.jvp(lax.cumprod, (x,), (ct,))
    gr = hlox.vjp(lambda x: lax.cumprod(x, reverse=True), x)[1](ct)[0]
  jac = _cumprod_jacobian(x)
  assert_close(g, jac.T @ ct)
  assert_close(t, jac @ ct)
  assert_close(gr, (_cumprod_jacobian(x[::-1]).T @ ct[::-1])[::-1])
  if len(x) == 5:
    # Second order too, with two zeros. The VJP is a degree-9 polynomial: a smaller step
    # keeps the finite difference's truncation error (eps**2 times its third derivative)
    # under the float64 tolerance.
    check(lax.cumprod, (x,), eps=1e-6)


def test_cummax_gradient_goes_to_the_running_maximum_ties_split():
  x = np.array([1., 3., 2., 3., 5., 4.], np.float32)
  ct = np.array([1., 10., 100., 1000., 10000., 100000.], np.float32)
  g = hlox.vjp(lax.cummax, x)[1](ct)[0]
  # Outputs 1..3 equal 3, reached at positions 1 and 3 (from output 3 on: split 1/2).
  assert_close(g, np.array([1., 10. + 100. + 500., 0., 500., 110000., 0.], np.float32))
  gj = hlox.jit(lambda x, ct: hlox.vjp(lax.cummax, x)[1](ct)[0])(x, ct)
  assert_close(gj, g)
  # The last output of cummax is the max: the same gradient as reduce_max.
  assert_close(grad_both(lambda x: lax.cummin(x, reverse=True)[0], x),
               grad_both(lambda x: lax.reduce_min(x, (0,)), x))


def test_cumlogsumexp_gradient_is_stable():
  # Log-probabilities far apart would overflow exp() in float32.
  x = np.array([-1000., 0., 500., -2000., 501.], np.float32)
  ct = np.ones(5, np.float32)
  g = np.asarray(hlox.vjp(lax.cumlogsumexp, x)[1](ct)[0])
  out = np.logaddexp.accumulate(x.astype(np.float64))
  expected = np.array([sum(np.exp(x[j] - out[i]) for i in range(j, 5)) for j in range(5)])
  assert np.all(np.isfinite(g))
  assert_close(g, expected.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_cumlogsumexp_with_infinities():
  x = np.array([-np.inf, -np.inf, 0., np.inf, 1.], np.float32)
  _, t = hlox.jvp(lax.cumlogsumexp, (x,), (np.ones(5, np.float32),))
  # -inf outputs have zero tangent; after inf the output stays inf, driven by that element.
  assert_close(t, np.array([0., 0., 1., 1., 1.], np.float32))


def test_cumulative_integer_has_no_tangent():
  x = np.array([1, 2, 3], np.int32)
  for prim in (lax.cumsum, lax.cumprod, lax.cummax):
    _, t = hlox.jvp(prim, (x,), (np.zeros(3, dtypes.float0),))
    assert t.dtype == dtypes.float0


# --- NumPy reductions ----------------------------------------------------------------------

@pytest.mark.parametrize("fun", [
    jnp.sum, lambda x: jnp.sum(x, axis=1), jnp.mean, lambda x: jnp.mean(x, axis=0),
    lambda x: jnp.max(x, axis=1), jnp.min, jnp.prod, lambda x: jnp.prod(x, axis=0),
    jnp.var, lambda x: jnp.std(x, axis=1), lambda x: jnp.var(x, axis=0, ddof=1),
    lambda x: jnp.cumsum(x, axis=1), lambda x: jnp.cumprod(x, axis=0), jnp.cumsum],
    ids=["sum", "sum1", "mean", "mean0", "max1", "min", "prod", "prod0", "var", "std1",
         "var0ddof1", "cumsum1", "cumprod0", "cumsum_flat"])
def test_numpy_reduction_grads(fun):
  x = RNG.permutation(12).reshape(3, 4) / 4. + 0.5 + RNG.uniform(0, .1, (3, 4))
  check(fun, (x,))


def test_numpy_mean_grad_value():
  x = np.ones((2, 5), np.float32)
  assert_close(grad_both(jnp.mean, x), np.full((2, 5), 0.1, np.float32))
