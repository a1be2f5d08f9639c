"""What a linearized checkpoint does with its residuals, as JAX: floating residuals are
rounded to their dtype where they are computed (``reduce_precision``), what is saved is
logged, and the CSE barrier of the backward pass pins the flagged inputs, the computed
residuals and (unless ``remat_barrier_no_cotangents``) the cotangents."""
import logging
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax


def _barriers(text):
  return re.findall(r"optimization_barrier ([^:]*):", text)


def test_residuals_rounded_to_their_dtype():
  # A bf16 dot whose result the forward pass converts to f32: XLA may keep the dot's excess
  # precision in the fused forward pass, while the backward pass gets the bf16 residual.
  @hlox.custom_vjp
  def dot(x):
    return jnp.dot(x, x)
  dot.defvjp(lambda x: (dot(x), None), lambda _, g: (g,))

  @hlox.custom_vjp
  def widen(x):
    return jnp.float32(1.) * x.astype("float32")
  widen.defvjp(lambda x: (widen(x), x), lambda x, _: (jnp.float32(1.) * x.astype("float32"),))

  f = hlox.jit(hlox.checkpoint(lambda x: widen(dot(x)), policy=lambda *_, **__: True))
  eps = float(jnp.finfo("bfloat16").eps)
  x = (jnp.bfloat16(1) + eps) * jnp.eye(2, dtype="bfloat16")
  y, f_vjp = hlox.vjp(f, x)
  y_, = f_vjp(jnp.ones_like(y))
  np.testing.assert_array_equal(np.asarray(y), np.asarray(y_))
  # (1 + eps)^2 rounded to bfloat16 is 1 + 2 eps
  np.testing.assert_array_equal(np.asarray(y), (1 + 2 * eps) * np.eye(2, dtype=np.float32))
  text = str(hlox.make_jaxpr(lambda x: hlox.vjp(f, x))(x))
  assert text.count("reduce_precision[exponent_bits=8 mantissa_bits=7]") == 1


def test_saved_inputs_are_not_rounded():
  f = hlox.checkpoint(lambda x: jnp.sin(x))
  text = str(hlox.make_jaxpr(lambda x: hlox.vjp(f, x))(1.))
  assert "reduce_precision" not in text
  np.testing.assert_allclose(hlox.grad(f)(1.), np.cos(1.), rtol=1e-6)


def _logged(caplog, f, x):
  caplog.clear()
  with caplog.at_level(logging.DEBUG, logger="hlox.checkpoint"):
    hlox.grad(f)(x)
  return [r.getMessage() for r in caplog.records if r.name == "hlox.checkpoint"]


def test_saved_residuals_are_logged(caplog):
  def f(x):
    return jnp.cos(jnp.sin(x).sum())
  x = jnp.arange(3.)
  lines = _logged(caplog, hlox.checkpoint(f), x)
  assert len(lines) == 1 and "saving inputs with shapes:\n  float32[3]" in lines[0]
  assert "intermediates" not in lines[0]
  lines = _logged(caplog, hlox.checkpoint(f, policy=lambda *_, **__: True), x)
  assert "saving inputs" not in lines[0]
  assert "saving these intermediates:" in lines[0]
  assert "float32[3] from output of cos" in lines[0] and "float32[] from output of sin" in lines[0]
  lines = _logged(caplog, hlox.checkpoint(f, policy=lambda p, *_, **__: str(p) == "cos"), x)
  assert "saving inputs with shapes:" in lines[0]
  assert "and saving these intermediates:" in lines[0]
  assert " cos " in lines[0] and " sin " not in lines[0]


def test_log_checkpoint_residuals_logs_at_warning(caplog):
  f = hlox.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
  with _option("log_checkpoint_residuals", True):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hlox.checkpoint"):
      hlox.grad(f)(1.)
  assert any(r.levelno == logging.WARNING and "remat-decorated function" in r.getMessage()
             for r in caplog.records)


class _option:
  def __init__(self, name, value):
    self.name, self.value = name, value

  def __enter__(self):
    self.old = getattr(hlox.config, self.name)
    hlox.config.update("jax_" + self.name, self.value)

  def __exit__(self, *exc):
    hlox.config.update("jax_" + self.name, self.old)


def _layers(prevent_cse, dict_arg):
  if dict_arg:
    layer = hlox.checkpoint(lambda d: d["x"] @ d["W"], prevent_cse=prevent_cse)
    apply = lambda W, x: layer(dict(W=W, x=x))
  else:
    apply = hlox.checkpoint(lambda W, x: x @ W, prevent_cse=prevent_cse)

  def loss(Ws, x):
    for W in Ws:
      x = apply(W, x)
    return jnp.sum(x ** 2)
  return loss


@pytest.mark.parametrize("prevent_cse,dict_arg", [
    (({"W": False, "x": True},), True), (((False, True),), True), ((False, True), False)])
def test_prevent_cse_prefix_forms(prevent_cse, dict_arg):
  # A tuple stands for any container with as many children: ((False, True),) is
  # {'W': False, 'x': True} for one dict argument.
  loss = _layers(prevent_cse, dict_arg)
  Ws, x = [jnp.ones((3, 3)) * 0.5 for _ in range(2)], jnp.ones(3)
  text = hlox.jit(hlox.grad(loss, (0, 1))).lower(Ws, x).as_text()
  barriers = _barriers(text)
  # W is left out: each barrier pins x's side and the cotangent (two f32[3] values).
  assert len(barriers) == 2 and all(b.count("%") == 2 for b in barriers)
  grads = hlox.grad(loss, (0, 1))(Ws, x)
  W = np.full((3, 3), .5)
  x2 = np.ones(3) @ W @ W
  np.testing.assert_allclose(grads[1], 2 * x2 @ (W @ W).T, rtol=1e-6)
  np.testing.assert_allclose(grads[0][1], 2 * np.outer(np.ones(3) @ W, x2), rtol=1e-6)


def test_prevent_cse_prefix_mismatch_is_a_value_error():
  f = hlox.checkpoint(lambda d: d["x"] * d["W"], prevent_cse=((False, True, True),))
  with pytest.raises(ValueError, match="prevent_cse"):
    f(dict(W=1., x=2.))


@pytest.mark.parametrize("prevent_cse", [True, (True, True)])
def test_barrier_without_cotangents(prevent_cse):
  layer = hlox.checkpoint(lambda W, x: x @ W, prevent_cse=prevent_cse)
  loss = lambda W, x: jnp.sum(layer(W, x) ** 2)
  W, x = jnp.ones((3, 3)), jnp.ones(3)
  pinned = _barriers(hlox.jit(hlox.grad(loss, (0, 1))).lower(W, x).as_text())
  assert [b.count("%") for b in pinned] == [3]  # W, x and the cotangent
  with _option("remat_barrier_no_cotangents", True):
    pinned = _barriers(hlox.jit(hlox.grad(loss, (0, 1))).lower(W, x).as_text())
    assert [b.count("%") for b in pinned] == [2]  # W and x only
    gW, gx = hlox.grad(loss, (0, 1))(W, x)
  np.testing.assert_allclose(gx, 2 * 3. * W.sum(1), rtol=1e-6)


_PROGRAMS = {
    # the backward pass's barrier flags: the saved W keeps its False, the cotangent is pinned
    "partial": "layer = m.checkpoint(lambda W, x: x @ W + jnp.array([1., 2., 3.]), "
               "prevent_cse=(False, True))\n"
               "j = m.make_jaxpr(m.grad(lambda W, x: jnp.sum(layer(W, layer(W, x)) ** 2), "
               "(0, 1)))(jnp.ones((3, 3)), jnp.ones(3))\n"
               "print([e.params['prevent_cse'] for e in j.jaxpr.eqns "
               "if e.primitive.name == 'remat2'])",
    "residual_rounded": "f = m.checkpoint(lambda x: jnp.sin(jnp.sin(x)), "
                        "policy=lambda *_, **__: True)\n"
                        "print(str(m.make_jaxpr(lambda x: m.vjp(f, x))(1.))"
                        ".count('reduce_precision'))",
}


@pytest.mark.jax_oracle
def test_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert not expected[name].startswith("!!!"), expected[name]
    assert printed_here(src) == expected[name], name


def test_static_argnames_and_unhashable_statics():
  f = hlox.checkpoint(lambda x, d: x * d["scale"], static_argnums=1)
  g = hlox.grad(lambda x: jnp.sum(f(x, {"scale": 2.0})))(jnp.ones(4))
  np.testing.assert_allclose(g, np.full(4, 2.))
  h = hlox.checkpoint(lambda x, cfg: x * cfg["scale"] if cfg["on"] else x,
                      static_argnames="cfg")
  g = hlox.grad(lambda x: jnp.sum(h(x, cfg={"scale": 3.0, "on": True})))(jnp.ones(4))
  np.testing.assert_allclose(g, np.full(4, 3.))
  g = hlox.grad(lambda x: jnp.sum(h(x, cfg={"scale": 3.0, "on": False})))(jnp.ones(4))
  np.testing.assert_allclose(g, np.ones(4))
  # a hashable static keyword: one trace per value
  k = hlox.checkpoint(lambda x, n: x ** n, static_argnames=("n",))
  np.testing.assert_allclose(hlox.grad(k)(2., n=3), 12.)
  np.testing.assert_allclose(hlox.grad(k)(2., n=2), 4.)
