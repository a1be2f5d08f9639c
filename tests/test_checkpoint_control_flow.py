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


def _counting_add_one():
  from hlox.core.primitive import Primitive
  from hlox.interpreters import ad
  p, count = Primitive("add_one_counted"), [0]

  def impl(x):
    count[0] += 1
    return x + 1
  p.def_impl(impl)
  p.def_abstract_eval(lambda x: x)

  def jvp(primals, tangents):
    out = p.bind(primals[0])
    return out, out * tangents[0]
  ad.primitive_jvps[p] = jvp
  return p.bind, count


def test_nested_checkpoint_recompute_counts():
  add_one, count = _counting_add_one()
  g = hlox.checkpoint(lambda x: add_one(hlox.checkpoint(add_one)(x)))
  count[0] = 0
  _, vjp = hlox.vjp(g, np.zeros(1))
  assert count[0] == 2
  count[0] = 0
  vjp(np.ones(1))
  assert count[0] == 3  # the outer body twice (its inner call included), the inner once

  def nest(funs):
    if len(funs) <= 2:
      return lambda x: funs[0](funs[-1](x)) if len(funs) == 2 else funs[0](x)
    f1, f2 = nest(funs[:len(funs) // 2]), nest(funs[len(funs) // 2:])
    return lambda x: f1(hlox.checkpoint(f2)(x))
  for n, bwd in [(4, 2), (8, 8)]:
    f = nest([add_one] * n)
    count[0] = 0
    _, vjp = hlox.vjp(f, np.ones(()))
    assert count[0] == n
    count[0] = 0
    vjp(np.ones(()))
    assert count[0] == bwd


def test_policy_applies_inside_cond():
  f = lambda x: lax.cond(x > 0., lambda c: (jnp.sin(c), jnp.sin(c)),
                         lambda c: (jnp.sin(c), jnp.sin(c)), x)
  text = str(hlox.make_jaxpr(hlox.linearize(hlox.checkpoint(f), 4.)[1])(1.))
  # The tangent needs cos(x) only: recomputed inside the unknown branch, no sin.
  assert " sin " not in text and " cos " in text
  save_cos = lambda prim, *_, **__: str(prim) == "cos"
  g = hlox.checkpoint(lambda x: lax.cond(x > 0, jnp.sin, lambda x: x, x), policy=save_cos)
  text = str(hlox.make_jaxpr(hlox.linearize(g, 4.)[1])(1.))
  assert text.count(" sin ") == 0 and text.count(" cos ") == 0  # cos saved in its slot
  for x in (0.8, -0.3):
    np.testing.assert_allclose(hlox.grad(g)(x), np.cos(x) if x > 0 else 1., rtol=1e-6)
    np.testing.assert_allclose(hlox.grad(lambda x: hlox.checkpoint(f)(x)[0])(x), np.cos(x),
                               rtol=1e-6)


def test_dots_policy_inside_cond_counts():
  x = jnp.ones((5,))

  @functools.partial(hlox.checkpoint, policy=hlox.checkpoint_policies.checkpoint_dots)
  def f(W):
    def body(x):
      for _ in range(3):
        x = jnp.sin(jnp.dot(x, W, precision=lax.Precision.HIGHEST))
      return x
    return lax.cond(x.sum() > 0, body, lambda x: x, x)
  W = jnp.ones((5, 5)) * 0.1
  y, f_vjp = hlox.vjp(f, W)
  text = str(hlox.make_jaxpr(f_vjp)(y))
  assert (text.count(" sin "), text.count(" cos "), text.count(" dot_")) == (2, 3, 5)

  def ref(W):
    x_ = x
    for _ in range(3):
      x_ = jnp.sin(jnp.dot(x_, W, precision=lax.Precision.HIGHEST))
    return x_
  np.testing.assert_allclose(f_vjp(y)[0], hlox.vjp(ref, W)[1](y)[0], rtol=1e-5)
