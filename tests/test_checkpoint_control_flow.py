"""checkpoint around control flow (while, scan, cond) and its CSE barrier."""
import functools
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


def _while_sin3(x):
  return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]


def _sin3_grad(x):
  return np.cos(np.sin(np.sin(x))) * np.cos(np.sin(x)) * np.cos(x)


@pytest.mark.parametrize("wrap", [lambda f: f, hlox.checkpoint,
                                  functools.partial(hlox.checkpoint,
                                                    policy=lambda p, *_, **__: str(p) == "cos")])
def test_linearize_while_loop(wrap):
  y, f_lin = hlox.linearize(wrap(_while_sin3), 3.)
  np.testing.assert_allclose(y, np.sin(np.sin(np.sin(3.))), rtol=1e-6)
  np.testing.assert_allclose(f_lin(2.), 2 * _sin3_grad(3.), rtol=1e-5)
  # No per-iteration residuals: the linear function reruns the loop (sin and cos).
  text = str(f_lin.func.args[0])
  assert "while" in text and " sin " in text and " cos " in text


def test_while_loop_reverse_mode_still_refused():
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    hlox.grad(hlox.checkpoint(_while_sin3))(3.)


def test_while_loop_known_carry_only_forward():
  # The loop counter is known, the float carry is not: the known loop runs over the
  # counter alone, the unknown one reruns everything.
  def f(x):
    return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * x, c[2] + 1.),
                          (0, 1., 0.))
  (i, p, s), f_lin = hlox.linearize(f, 2.)
  assert int(i) == 4 and float(s) == 4. and float(p) == 16.
  _, dp, ds = f_lin(1.)
  np.testing.assert_allclose(dp, 4 * 2. ** 3, rtol=1e-6)
  assert float(ds) == 0.


def test_remat_of_scan_recomputes():
  f = lambda x: lax.scan(lambda c, _: (jnp.sin(c), jnp.sin(c)), x, None, length=3)
  g = hlox.checkpoint(f)
  text = str(hlox.make_jaxpr(hlox.linearize(g, 4.)[1])(1.))
  assert " sin " in text and " cos " in text
  gx = hlox.grad(lambda x: g(x)[0] + g(x)[1].sum())(0.3)
  ex = hlox.grad(lambda x: f(x)[0] + f(x)[1].sum())(0.3)
  np.testing.assert_allclose(gx, ex, rtol=1e-6)


def test_remat_of_cond_grad():
  f = lambda x: lax.cond(x > 0., lambda c: jnp.sin(jnp.sin(c)), lambda c: c * 2., x)
  for x in (0.7, -0.4):
    np.testing.assert_allclose(hlox.grad(hlox.checkpoint(f))(x), hlox.grad(f)(x), rtol=1e-6)


def test_cse_barrier_only_when_differentiated():
  g = hlox.checkpoint(lambda x: (lax.sin(lax.sin(x)), 3.))
  f = lambda x: g(x)[0]
  assert "opt-barrier" not in hlox.jit(f).lower(2.).as_text("hlo")
  assert "opt-barrier" in hlox.jit(hlox.grad(f)).lower(2.).as_text("hlo")
  g = hlox.checkpoint(lambda x: (lax.sin(lax.sin(x)), 3.), prevent_cse=False)
  f = lambda x: g(x)[0]
  assert "opt-barrier" not in hlox.jit(hlox.grad(f)).lower(2.).as_text("hlo")


@pytest.mark.parametrize("cse", [(False, True), ({"W": False, "x": True},)])
def test_partial_prevent_cse(cse):
  if isinstance(cse[0], dict):
    layer = hlox.checkpoint(lambda d: d["x"] @ d["W"] + jnp.array([1., 2., 3.]),
                            prevent_cse=cse)
    apply = lambda W, x: layer(dict(W=W, x=x))
  else:
    layer = hlox.checkpoint(lambda W, x: x @ W + jnp.array([1., 2., 3.]), prevent_cse=cse)
    apply = layer

  def loss(Ws, x):
    for W in Ws:
      x = apply(W, x)
    return jnp.sum(x ** 2)

  def plain(Ws, x):
    for W in Ws:
      x = x @ W + jnp.array([1., 2., 3.])
    return jnp.sum(x ** 2)
  Ws, x = [jnp.ones((3, 3)) * 0.5 for _ in range(2)], jnp.ones(3)
  txt = hlox.jit(hlox.grad(loss, (0, 1))).lower(Ws, x).as_text()
  barriers = re.findall(r"optimization_barrier ([^:]*):", txt)
  # The barrier covers x's side (and the residuals), never W alone.
  assert barriers and all("," in b for b in barriers)
  for a, e in zip(hlox.tree_util.tree_leaves(hlox.grad(loss, (0, 1))(Ws, x)),
                  hlox.tree_util.tree_leaves(hlox.grad(plain, (0, 1))(Ws, x))):
    np.testing.assert_allclose(a, e, rtol=1e-6)
