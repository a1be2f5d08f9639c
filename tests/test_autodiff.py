"""Autodiff API: jvp, vjp, grad, value_and_grad, linearize, jacobians, custom rules, remat,
higher order, composition with jit, and the errors for bad input."""
import collections
import functools

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64

from check_grads import check_grads


def tanh_composite(x):
  e = jnp.exp(-2.0 * x)
  return (1.0 - e) / (1.0 + e)


def test_grad_of_tanh_and_third_derivative():
  g = hlox.grad(tanh_composite)
  assert float(g(1.0)) == pytest.approx(0.4199743, rel=1e-5)
  g3 = hlox.grad(hlox.grad(hlox.grad(tanh_composite)))
  assert float(g3(1.0)) == pytest.approx(0.62162673, rel=1e-4)


def test_fourth_order_matches_closed_form():
  f = lambda x: jnp.sin(x) * x
  d4 = hlox.grad(hlox.grad(hlox.grad(hlox.grad(f))))
  x = 0.7
  expected = x * np.sin(x) - 4 * np.cos(x)  # d^4/dx^4 [x sin x]
  assert float(d4(x)) == pytest.approx(expected, rel=1e-4)


def test_no_perturbation_confusion():
  def f(x):
    return x * hlox.grad(lambda y: x + y)(x)
  for x in (0.0, 1.0, 3.5):
    assert float(hlox.grad(f)(x)) == pytest.approx(1.0)


def test_closure_over_outer_tracer():
  def f(x):
    return hlox.grad(lambda y: x * y * y)(x)  # 2 x^2
  assert float(hlox.grad(f)(3.0)) == pytest.approx(12.0)


def test_jvp_and_linearize_match():
  f = lambda x: jnp.sin(x) * jnp.cos(x)
  x = np.linspace(0.1, 1.0, 5).astype(np.float32)
  t = np.ones(5, np.float32)
  y, y_dot = hlox.jvp(f, (x,), (t,))
  y2, f_jvp = hlox.linearize(f, x)
  np.testing.assert_allclose(np.asarray(y), np.asarray(y2), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(f_jvp(t)), np.asarray(y_dot), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(y_dot), np.cos(2 * x), rtol=1e-5)


def test_vjp_pytrees():
  def f(params, x):
    return {"out": params["w"] * x + params["b"], "aux": (x,)}
  params = {"w": np.float32(2.0), "b": np.float32(1.0)}
  out, f_vjp = hlox.vjp(f, params, np.float32(3.0))
  ct = {"out": np.float32(1.0), "aux": (np.float32(0.0),)}
  g_params, g_x = f_vjp(ct)
  assert float(g_params["w"]) == 3.0 and float(g_params["b"]) == 1.0 and float(g_x) == 2.0


def test_grad_argnums_has_aux_and_value_and_grad():
  def loss(w, b, x):
    y = jnp.sum(w * x + b)
    return y * y, {"y": y}
  w, b, x = np.float32(2.0), np.float32(1.0), np.arange(3, dtype=np.float32)
  (gw, gb), aux = hlox.grad(loss, argnums=(0, 1), has_aux=True)(w, b, x)
  y = float(np.sum(2.0 * x + 1.0))
  assert float(aux["y"]) == y
  assert float(gw) == pytest.approx(2 * y * x.sum()) and float(gb) == pytest.approx(2 * y * 3)
  (v, aux2), g = hlox.value_and_grad(loss, has_aux=True)(w, b, x)
  assert float(v) == pytest.approx(y * y) and float(g) == pytest.approx(float(gw))


def test_grad_of_pytree_params():
  Params = collections.namedtuple("Params", "w b")
  p = Params(np.ones((2, 2), np.float32), np.zeros(2, np.float32))
  x = np.array([1.0, 2.0], np.float32)
  g = hlox.grad(lambda p: jnp.sum(jnp.tanh(p.w @ x + p.b)))(p)
  assert isinstance(g, Params) and g.w.shape == (2, 2) and g.b.shape == (2,)
  expected_b = 1 - np.tanh(np.ones((2, 2)) @ x) ** 2
  np.testing.assert_allclose(np.asarray(g.b), expected_b, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(g.w), np.outer(expected_b, x), rtol=1e-5)


def test_grad_jit_compositions_agree():
  f = lambda x: jnp.sum(jnp.sin(x) ** 2 * x)
  x = np.linspace(-1, 1, 4).astype(np.float32)
  ref = np.asarray(hlox.grad(f)(x))
  for g in (hlox.jit(hlox.grad(f)), hlox.grad(hlox.jit(f)), hlox.jit(hlox.grad(hlox.jit(f)))):
    np.testing.assert_allclose(np.asarray(g(x)), ref, rtol=1e-6)


def test_grad_of_jit_keeps_jit_equations():
  f = hlox.jit(lambda x: jnp.sin(x) * x)
  jaxpr = hlox.make_jaxpr(hlox.grad(f))(1.0)
  assert sum(e.primitive.name == "jit" for e in jaxpr.eqns) == 2  # forward and transposed


def test_gradient_jaxpr_contains_transposed_primitives():
  w = np.ones((3, 2), np.float32)
  jaxpr = str(hlox.make_jaxpr(hlox.grad(lambda w, x: jnp.sum(x @ w)))(w, np.ones((4, 3),
                                                                                  np.float32)))
  assert "dot_general" in jaxpr and "transpose" in jaxpr and "broadcast_in_dim" in jaxpr


def test_jit_of_grad_is_one_executable():
  from hlox import monitoring
  f = lambda x: jnp.sum(jnp.tanh(x))
  g = hlox.jit(hlox.grad(f))
  x = np.ones(3, np.float32)
  with monitoring.count_events() as counts:
    g(x)
    g(x)
  assert counts["compile"] == 1


def test_symbolic_zeros_for_unused_inputs():
  def f(x, unused):
    return jnp.sin(x)
  jaxpr = hlox.make_jaxpr(hlox.grad(f, argnums=(0, 1)))(1.0, np.ones(1000, np.float32))
  assert all("1000" not in str(e) for e in jaxpr.eqns[:-1] if e.primitive.name != "broadcast_in_dim")
  g0, g1 = hlox.grad(f, argnums=(0, 1))(1.0, np.ones(3, np.float32))
  np.testing.assert_array_equal(np.asarray(g1), np.zeros(3))


def test_integer_inputs_get_float0_with_allow_int():
  g = hlox.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
  assert float(g[0]) == 3.0
  assert np.asarray(g[1]).dtype == hlox.numpy.float0


def test_undifferentiated_numpy_primals_stay_on_the_host():
  # As JAX: vjp hands integer (not differentiated) NumPy inputs to the function as NumPy
  # arrays in the canonical dtype, so NumPy's arithmetic applies to them (no jnp promotion
  # rule, strict or not), and an output that is such an input comes back as NumPy.
  seen = []

  def f(x):
    seen.append((type(x), x.dtype))
    return jnp.sum(x + 0.)

  with hlox.numpy_dtype_promotion("strict"):
    g = hlox.grad(f, allow_int=True)(np.ones((2, 4), dtype=np.int64))
  assert seen == [(np.ndarray, np.dtype(np.int32))]
  assert g.dtype == hlox.dtypes.float0 and g.shape == (2, 4)
  np.testing.assert_array_equal(g.reshape((4, 2)), np.zeros((4, 2), hlox.dtypes.float0))
  np.testing.assert_array_equal(g.transpose(), np.zeros((4, 2), hlox.dtypes.float0))
  out, f_vjp = hlox.vjp(lambda i, x: (i, x * 2.), np.arange(3), np.float32(1.))
  assert type(out[0]) is np.ndarray and out[0].dtype == np.int32
  np.testing.assert_array_equal(out[0], np.arange(3))
  assert float(out[1]) == 2.
  ct_i, ct_x = f_vjp((np.zeros(3, hlox.dtypes.float0), np.float32(1.)))
  assert ct_i.dtype == hlox.dtypes.float0 and float(ct_x) == 2.
  # Arrays stay Arrays; differentiated NumPy inputs are traced as before.
  assert isinstance(hlox.vjp(lambda i: i, jnp.arange(3))[0], hlox.Array)


def test_hessian_and_jacobians():
  f = lambda x: jnp.sum(x ** 3)
  x = np.array([1.0, 2.0], np.float32)
  np.testing.assert_allclose(np.asarray(hlox.hessian(f)(x)), np.diag(6 * x), rtol=1e-5)
  g = lambda x: jnp.stack([x[0] * x[1], jnp.sin(x[0])])
  expected = np.array([[x[1], x[0]], [np.cos(x[0]), 0.0]])
  np.testing.assert_allclose(np.asarray(hlox.jacfwd(g)(x)), expected, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(hlox.jacrev(g)(x)), expected, rtol=1e-5)
  jac = hlox.jacrev(lambda d: {"a": d["x"] * 2.0})({"x": x})
  np.testing.assert_allclose(np.asarray(jac["a"]["x"]), 2 * np.eye(2))


def test_check_grads_on_a_composite_function_float64():
  with enable_x64():
    f = lambda x, y: jnp.sum(jnp.tanh(x) * jnp.exp(y) / (1.0 + x * x))
    x = np.linspace(-1, 1, 3)
    y = np.linspace(0, 0.5, 3)
    check_grads(f, (x, y), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


# --- custom rules and remat -----------------------------------------------------------------

def test_custom_jvp_under_jit_and_grad():
  @hlox.custom_jvp
  def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))

  @log1pexp.defjvp
  def log1pexp_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))

  g = hlox.jit(hlox.grad(log1pexp))
  assert float(g(100.0)) == pytest.approx(1.0)  # the naive derivative would be nan
  assert float(hlox.grad(hlox.grad(log1pexp))(0.0)) == pytest.approx(0.25, rel=1e-5)


def test_custom_jvp_nondiff_argnums_and_defjvps():
  @functools.partial(hlox.custom_jvp, nondiff_argnums=(0,))
  def scale(k, x):
    return k * x

  @scale.defjvp
  def scale_jvp(k, primals, tangents):
    return scale(k, primals[0]), 10.0 * tangents[0]

  assert float(hlox.grad(lambda x: scale(3.0, x))(1.0)) == 10.0

  f = hlox.custom_jvp(lambda x, y: x * y)
  f.defjvps(lambda t, ans, x, y: t * y * 2.0, lambda t, ans, x, y: t * x)
  gx, gy = hlox.grad(f, argnums=(0, 1))(2.0, 3.0)
  assert (float(gx), float(gy)) == (6.0, 2.0)


def test_custom_vjp_and_its_errors():
  @hlox.custom_vjp
  def clip_gradient(x):
    return x

  def fwd(x):
    return x, None

  def bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)

  clip_gradient.defvjp(fwd, bwd)
  assert float(hlox.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0
  assert float(hlox.jit(hlox.grad(lambda x: 5.0 * clip_gradient(x)))(2.0)) == 1.0
  with pytest.raises(TypeError, match="forward-mode"):
    hlox.jvp(clip_gradient, (1.0,), (1.0,))
  clip_gradient.defvjp(fwd, lambda _, g: (g, g))
  with pytest.raises(TypeError, match="clip_gradient.*structure"):
    hlox.grad(clip_gradient)(1.0)


def test_checkpoint_policies_agree_and_recompute():
  def block(x):
    return jnp.sin(jnp.sin(x) @ jnp.ones((3, 3), np.float32))

  x = np.linspace(0, 1, 3).astype(np.float32)
  ref = np.asarray(hlox.grad(lambda x: jnp.sum(block(x)))(x))
  for policy in (None, hlox.checkpoint_policies.everything_saveable,
                 hlox.checkpoint_policies.dots_saveable):
    g = hlox.grad(lambda x: jnp.sum(hlox.checkpoint(block, policy=policy)(x)))
    np.testing.assert_allclose(np.asarray(g(x)), ref, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(hlox.jit(g)(x)), ref, rtol=1e-6)
  saved_nothing = str(hlox.make_jaxpr(hlox.grad(lambda x: jnp.sum(hlox.checkpoint(block)(x))))(x))
  assert saved_nothing.count(" sin ") >= 3  # the inner sin is recomputed for the backward pass


def test_stop_gradient():
  f = lambda x: x * lax.stop_gradient(x)
  assert float(hlox.grad(f)(3.0)) == 3.0
  tree = lax.stop_gradient({"a": np.float32(1.0), "n": np.int32(2)})
  assert int(tree["n"]) == 2


# --- bad input ------------------------------------------------------------------------------

def test_grad_of_non_scalar_output():
  with pytest.raises(TypeError, match=r"Output had shape: \(3,\)"):
    hlox.grad(lambda x: x * 2.0)(np.ones(3, np.float32))


def test_grad_of_integer_input_and_complex_output():
  with pytest.raises(TypeError, match="allow_int"):
    hlox.grad(lambda x: x * 2)(3)
  with pytest.raises(TypeError, match="holomorphic"):
    hlox.grad(lambda x: x * (1 + 1j))(1.0)


def test_argnums_out_of_range():
  with pytest.raises(TypeError, match="argnums"):  # JAX's type for grad
    hlox.grad(lambda x: x, argnums=2)(1.0)


def test_missing_rule_names_primitive():
  from hlox.core.primitive import Primitive
  from hlox.lax.utils import standard_primitive
  p = standard_primitive(lambda x: x.shape, lambda x: x.dtype, "mystery_op")
  with pytest.raises(NotImplementedError, match="mystery_op"):
    hlox.grad(lambda x: p.bind(x))(1.0)


def test_checkpoint_around_calls_and_scan():
  def body(c, x):
    return jnp.sin(c * x), c

  f = lambda c: jnp.sum(lax.scan(body, c, jnp.arange(1.0, 4.0))[0])
  h = lambda x: jnp.sum(hlox.jit(jnp.sin)(x) ** 2)
  for fun, x in ((f, 0.5), (h, 1.0)):
    expected = float(hlox.grad(fun)(x))
    assert float(hlox.grad(hlox.checkpoint(fun))(x)) == pytest.approx(expected, rel=1e-6)
    assert float(hlox.jit(hlox.grad(hlox.checkpoint(fun)))(x)) == pytest.approx(expected,
                                                                                rel=1e-6)


def test_eager_grad_and_vmap_of_jit_reuse_compiled_programs():
  from hlox import monitoring
  f = hlox.jit(lambda x: jnp.sin(x) * 2)
  g = hlox.grad(lambda x: f(x).sum())
  v = hlox.vmap(f)
  x = np.ones(3, np.float32)
  g(x), v(np.ones((2, 3), np.float32))
  with monitoring.count_events() as counts:
    for _ in range(2):
      out = g(x)
      v(np.ones((2, 3), np.float32))
  assert counts.get("compile", 0) == 0, counts
  np.testing.assert_allclose(np.asarray(out), 2 * np.cos(x), rtol=1e-6)


def test_zero_gradients_and_aux_are_arrays():
  # An unused argument's gradient is an Array of zeros (not a NumPy scalar), weakly typed
  # when the argument is; traced aux values come back as concrete Arrays.
  g = hlox.grad(lambda x, y: x * 2.0, argnums=1)(1.0, np.float32(2.0))
  assert isinstance(g, hlox.Array) and not g.weak_type and float(g) == 0.0
  g = hlox.grad(lambda x, y: x * 2.0, argnums=1)(1.0, 2.0)
  assert isinstance(g, hlox.Array) and g.weak_type
  (v, aux), g = hlox.value_and_grad(lambda x: (x * x, {"x": x * 3.0}), has_aux=True)(2.0)
  assert isinstance(aux["x"], hlox.Array) and float(aux["x"]) == 6.0 and float(g) == 4.0


def test_grad_of_vmapped_custom_vjp():
  # vmap binds the custom_vjp call with a batched rule; differentiating it then needs the
  # batched rule's count of leading non-argument operands (nested vmap too).
  @hlox.custom_vjp
  def f(x, y):
    return jnp.sin(x) * y

  f.defvjp(lambda x, y: (jnp.sin(x) * y, (x, y)),
           lambda res, g: (2 * g * jnp.cos(res[0]) * res[1], g * jnp.sin(res[0])))
  xs = jnp.arange(3.0)
  gx = hlox.grad(lambda x: hlox.vmap(f, (0, None))(x, 3.0).sum())(xs)
  np.testing.assert_allclose(np.asarray(gx), 6 * np.cos(np.arange(3.0)), rtol=1e-6)
  gy = hlox.jit(hlox.grad(lambda y: hlox.vmap(f, (0, None))(xs, y).sum()))(3.0)
  np.testing.assert_allclose(float(gy), np.sin(np.arange(3.0)).sum(), rtol=1e-6)
  gxx = hlox.grad(lambda x: hlox.vmap(hlox.vmap(f, (0, None)), (0, None))(x, 3.0).sum())(
      jnp.ones((2, 3)))
  np.testing.assert_allclose(np.asarray(gxx), 6 * np.cos(1.0) * np.ones((2, 3)), rtol=1e-6)
