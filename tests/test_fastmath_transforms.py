"""Transformations through hlox.fastmath on the hlox backend (Trax's forms: value_and_grad
with has_aux, custom_grad, custom_vjp with None cotangents), gradient checks of the
backend's operations, and the two hlox fixes Trax's layers need (checked against JAX)."""
import functools

import numpy as onp
import pytest

import hlox
import hlox.fastmath as fastmath
from hlox import lax
from hlox.config import enable_x64
from hlox.fastmath import numpy as np
from tests.check_grads import check_grads, check_grads_x64


@pytest.fixture(autouse=True)
def _hlox_backend():
  with fastmath.use_backend("hlox"):
    yield


def loss(w, x):
  return np.sum(np.tanh(x @ w) ** 2)


def test_grad_vjp_and_value_and_grad_forms():
  w = onp.linspace(-1, 1, 6, dtype=onp.float32).reshape(3, 2)
  x = onp.ones((4, 3), onp.float32)
  g = fastmath.grad(loss)(w, x)
  onp.testing.assert_allclose(g, hlox.grad(loss)(w, x), rtol=1e-6)
  value, g2 = fastmath.value_and_grad(loss)(w, x)
  assert float(value) == pytest.approx(float(loss(w, x)), rel=1e-6)
  onp.testing.assert_allclose(g2, g, rtol=1e-6)
  aux_loss = lambda w, x: (loss(w, x), {"norm": np.sum(w * w)})
  (value, aux), g3 = fastmath.value_and_grad(aux_loss, has_aux=True)(w, x)  # Trax's form
  assert float(aux["norm"]) == pytest.approx(float(onp.sum(w * w)), rel=1e-6)
  onp.testing.assert_allclose(g3, g, rtol=1e-6)
  out, vjp_fn = fastmath.vjp(lambda w: loss(w, x), w)
  onp.testing.assert_allclose(vjp_fn(np.ones(()))[0], g, rtol=1e-6)


def test_value_and_grad_fallback_from_grad(monkeypatch):
  table = fastmath.backend()
  monkeypatch.delitem(table, "value_and_grad")
  w = onp.ones((3, 2), onp.float32)
  x = onp.ones((4, 3), onp.float32)
  aux_loss = lambda w, x: (loss(w, x), 7.0)
  (value, aux), g = fastmath.value_and_grad(aux_loss, has_aux=True)(w, x)
  assert aux == 7.0 and float(value) == pytest.approx(float(loss(w, x)))
  onp.testing.assert_allclose(g, hlox.grad(loss)(w, x), rtol=1e-6)
  value, g = fastmath.value_and_grad(loss)(w, x)
  onp.testing.assert_allclose(g, hlox.grad(loss)(w, x), rtol=1e-6)


def test_jit_vmap_remat_stop_gradient():
  f = lambda x: np.sin(x) * fastmath.stop_gradient(x)
  x = onp.linspace(0, 2, 5).astype(onp.float32)
  onp.testing.assert_allclose(fastmath.jit(f)(x), f(x), rtol=1e-6)
  onp.testing.assert_allclose(fastmath.vmap(f)(x), [f(v) for v in x], rtol=1e-6)
  onp.testing.assert_allclose(fastmath.grad(lambda x: np.sum(f(x)))(x), onp.cos(x) * x,
                              rtol=1e-5)
  onp.testing.assert_allclose(fastmath.grad(lambda x: np.sum(fastmath.remat(f)(x)))(x),
                              onp.cos(x) * x, rtol=1e-5)


def test_pmap_and_psum():
  n = fastmath.local_device_count()
  x = onp.arange(n * 3, dtype=onp.float32).reshape(n, 3)
  out = fastmath.pmap(lambda v: fastmath.psum(v, "batch"), axis_name="batch")(x)
  onp.testing.assert_allclose(out, onp.broadcast_to(x.sum(0), x.shape))
  # Trax's decorator form.
  summed = functools.partial(fastmath.pmap, axis_name="i")(lambda v: fastmath.psum(v * 2, "i"))
  onp.testing.assert_allclose(summed(x), onp.broadcast_to(2 * x.sum(0), x.shape))


def test_custom_grad():
  def f_vjp(x, y):
    return x * y, lambda g: (g * 10.0, g * 20.0)
  f = fastmath.custom_grad(f_vjp, lambda x, y: x * y)
  assert float(f(2.0, 3.0)) == 6.0
  gx, gy = fastmath.grad(lambda a, b: f(a, b), argnums=(0, 1))(2.0, 3.0)
  assert (float(gx), float(gy)) == (10.0, 20.0)


def test_custom_vjp_trax_layer_style():
  """Trax's ``layers/base.py``: nondiff_argnums=(0, 1), a bwd taking (residual, g) and
  returning None for the state and the rng (a state dict and a uint32 key)."""
  def _f(state, rng, y, weights):
    return y * weights["w"], state

  def _f_fwd(state, rng, y, weights):
    return _f(state, rng, y, weights), (y, weights)

  def _f_bwd(residual, grad):
    y, weights = residual
    g = grad[0]
    return (None, None, g * weights["w"] * 3.0, {"w": np.sum(g * y) * 3.0})

  do_forward = fastmath.custom_vjp(_f, _f_fwd, _f_bwd, nondiff_argnums=(0, 1))
  state = {"count": np.zeros((), np.int32), "stats": (np.ones(2),)}
  rng = fastmath.random.get_prng(0)
  weights = {"w": np.asarray(2.0)}

  def total(y, weights):
    out, new_state = do_forward(state, rng, y, weights)
    return np.sum(out)
  y = onp.ones(3, onp.float32)
  out, _ = do_forward(state, rng, y, weights)
  onp.testing.assert_allclose(out, 2 * y)
  gy, gw = fastmath.grad(total, argnums=(0, 1))(y, weights)
  onp.testing.assert_allclose(gy, 3 * 2 * y)
  assert float(gw["w"]) == pytest.approx(9.0)


def test_custom_vjp_fallback_with_nondiff_prefix(monkeypatch):
  """The custom_grad route (a backend without custom_vjp), as Trax builds it."""
  monkeypatch.delitem(fastmath.backend(), "custom_vjp")
  f = lambda scale, x: scale * np.sin(x)
  f_fwd = lambda scale, x: (f(scale, x), (scale, x))
  f_bwd = lambda res, g: (None, g * res[0] * np.cos(res[1]))
  fm = fastmath.custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=(0,))
  assert float(fm(2.0, 0.5)) == pytest.approx(2 * onp.sin(0.5), rel=1e-6)
  g = fastmath.grad(lambda x: fm(2.0, x))(0.5)
  assert float(g) == pytest.approx(2 * onp.cos(0.5), rel=1e-5)
  with pytest.raises(ValueError, match="nondiff_argnums must be a prefix"):
    fastmath.custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=(1,))


def test_gradients_of_backend_operations():
  x = onp.linspace(-2, 2, 1 * 4 * 4 * 2).reshape(1, 4, 4, 2)
  w = onp.linspace(-1, 1, 2 * 2 * 2 * 3).reshape(2, 2, 2, 3)
  check_grads_x64(lambda a: fastmath.logsumexp(a, axis=(1, 2)), (x,))
  check_grads_x64(lambda a: fastmath.avg_pool(a, (3, 3), (1, 1), "SAME"), (x,), order=1)
  check_grads_x64(lambda a, b: fastmath.conv(a, b, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")),
                  (x, w), order=1, modes=("rev",))
  check_grads_x64(lambda a: fastmath.expit(a) * fastmath.erf(a), (x[0, 0],), order=1)


def test_hlox_and_jit_of_fastmath_ops_agree():
  x = onp.linspace(-3, 3, 2 * 5 * 5 * 1, dtype=onp.float32).reshape(2, 5, 5, 1)
  for op in (lambda a: fastmath.avg_pool(a, (2, 2), (1, 1), "SAME"),
             lambda a: fastmath.max_pool(a, (3, 3), (2, 2), "SAME"),
             lambda a: fastmath.logsumexp(a, axis=(1, 2, 3))):
    onp.testing.assert_allclose(fastmath.jit(op)(x), op(x), rtol=1e-6)


# --- hlox fixes Trax's layers rely on --------------------------------------------------------

def test_custom_vjp_none_cotangent_for_a_whole_subtree():
  f = hlox.custom_vjp(lambda s, x: x * 2.0)
  f.defvjp(lambda s, x: (x * 2.0, None), lambda r, g: (None, g * 2.0))
  s = {"a": np.ones(3), "b": (np.zeros(2), np.ones(()))}
  gs, gx = hlox.grad(lambda s, x: f(s, x), argnums=(0, 1))(s, 3.0)
  assert float(gx) == 2.0
  assert all(onp.all(onp.asarray(v) == 0) for v in hlox.tree_util.tree_leaves(gs))
  assert hlox.tree_util.tree_structure(gs) == hlox.tree_util.tree_structure(s)
  # None inside a dict, for some of its entries.
  h = hlox.custom_vjp(lambda s, x: x * s["a"].sum())
  h.defvjp(lambda s, x: (x * s["a"].sum(), s), lambda r, g: ({"a": g * np.ones(3), "b": None},
                                                             g * r["a"].sum()))
  gs, gx = hlox.grad(lambda s, x: h(s, x), argnums=(0, 1))(s, 2.0)
  onp.testing.assert_allclose(gs["a"], onp.ones(3))
  assert float(gx) == 3.0
  # A cotangent array where a subtree belongs is still an error.
  bad = hlox.custom_vjp(lambda s, x: x * 2.0)
  bad.defvjp(lambda s, x: (x * 2.0, None), lambda r, g: (g, g * 2.0))
  with pytest.raises(TypeError, match="must produce an output with the same container"):
    hlox.grad(lambda s, x: bad(s, x), argnums=(0, 1))(s, 3.0)


@pytest.mark.parametrize("dtype", [onp.int32, onp.uint8, onp.int8, onp.bool_])
def test_reduce_window_float_identities_on_integer_operands(dtype):
  x = (onp.arange(16).reshape(1, 4, 4, 1) % 7).astype(dtype)
  for init, op, reducer in ((-onp.inf, lax.max, onp.max), (onp.inf, lax.min, onp.min),
                            (-float("inf"), lax.max, onp.max), (onp.float32(-onp.inf), lax.max,
                                                                onp.max)):
    out = lax.reduce_window(x, init, op, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    assert out.dtype == dtype
    ref = reducer(x.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(4, 4), axis=1)
    onp.testing.assert_array_equal(onp.asarray(out).ravel(), ref)
  same = lax.reduce_window(x, -onp.inf, lax.max, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
  assert same.dtype == dtype
  # Trax's max_pool on an int array goes through exactly this.
  onp.testing.assert_array_equal(fastmath.max_pool(x, (3, 3), (1, 1), "SAME"), same)


@pytest.mark.jax_oracle
def test_hlox_fixes_match_jax():
  jax = pytest.importorskip("jax", reason="JAX is the oracle of this test")
  x = (onp.arange(32).reshape(1, 4, 4, 2) * 7 % 11).astype(onp.int32)
  for init, op_h, op_j, pad in ((-onp.inf, lax.max, jax.lax.max, "SAME"),
                                (onp.inf, lax.min, jax.lax.min, "VALID")):
    ours = lax.reduce_window(x, init, op_h, (1, 3, 2, 1), (1, 1, 2, 1), pad)
    theirs = jax.lax.reduce_window(x, init, op_j, (1, 3, 2, 1), (1, 1, 2, 1), pad)
    assert ours.dtype == theirs.dtype
    onp.testing.assert_array_equal(ours, theirs)

  def make(custom_vjp):
    f = custom_vjp(lambda s, x: x * s["k"])
    f.defvjp(lambda s, x: (x * s["k"], s["k"]), lambda r, g: (None, g * r))
    return f
  s = {"k": onp.float32(3.0), "z": (onp.ones(2, onp.float32),)}
  ours = hlox.grad(lambda s, x: make(hlox.custom_vjp)(s, x), argnums=(0, 1))(s, 2.0)
  theirs = jax.grad(lambda s, x: make(jax.custom_vjp)(s, x), argnums=(0, 1))(s, 2.0)
  for a, b in zip(hlox.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
    onp.testing.assert_array_equal(onp.asarray(a), onp.asarray(b))


@pytest.mark.jax_oracle
def test_fastmath_ops_match_jax():
  jax = pytest.importorskip("jax", reason="JAX is the oracle of this test")
  jnp = jax.numpy
  x = onp.random.default_rng(1).standard_normal((2, 6, 5, 3)).astype(onp.float32)
  w = onp.random.default_rng(2).standard_normal((3, 2, 3, 4)).astype(onp.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  ours = fastmath.conv(x, w, (2, 1), "SAME", dn, filter_dilation=(1, 2))
  theirs = jax.lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2),
                                        dimension_numbers=dn)
  onp.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
  ours = fastmath.top_k(x[0, 0], 2)
  theirs = jax.lax.top_k(x[0, 0], 2)
  for a, b in zip(ours, theirs):
    onp.testing.assert_array_equal(a, b)
  key = fastmath.random.get_prng(3)
  for name, kwargs in (("uniform", {"shape": (50,)}), ("normal", {"shape": (50,)})):
    ours = getattr(fastmath.random, name)(key, **kwargs)
    theirs = getattr(jax.random, name)(jax.random.PRNGKey(3), **kwargs)
    onp.testing.assert_array_equal(onp.asarray(ours), onp.asarray(theirs))
  ours = fastmath.random.randint(key, (50,), 0, 100)
  theirs = jax.random.randint(jax.random.PRNGKey(3), (50,), 0, 100, dtype=jnp.int32)
  onp.testing.assert_array_equal(onp.asarray(ours), onp.asarray(theirs))
