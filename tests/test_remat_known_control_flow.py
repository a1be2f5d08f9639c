"""Scans and conds under a checkpoint policy whose known outputs the backward pass needs:
the unknown loop or cond computes them again (as JAX's), rather than saving them, and a
scan or cond of known operands only (one inside a custom_jvp rule) is split by the policy
too; so is a pmapped body. What the linearized and VJP programs recompute is JAX's; the
gradients stay right."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.test_util import check_grads
from tests.util import printed_here, printed_in_jax

# Written against ``m`` (jax in the oracle, hlox here).
_PRELUDE = """
lax = m.lax
save_cos = lambda prim, *_, **__: str(prim) == 'cos'
save_sin = lambda prim, *_, **__: str(prim) == 'sin'
nothing = m.checkpoint_policies.nothing_saveable

def counts(j):
  s = str(j)
  return [s.count(' sin '), s.count(' cos ')]

def show(f, x):
  print('lin', counts(m.make_jaxpr(m.linearize(f, x)[1])(x)))
  _, f_vjp = m.vjp(f, x)
  print('vjp', counts(m.make_jaxpr(f_vjp)(f(x))))

def scan_apply(f, x):
  return lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]

def cond_apply(f, x):
  return lax.cond(True, f, lambda x: x, x)

def pred_cond_apply(f, x):
  return lax.cond(x.sum() > -jnp.inf, f, lambda x: x, x)

def sin_rule(apply):
  @m.custom_jvp
  def s(x):
    return jnp.sin(x)
  def rule(p, t):
    y, c = apply(lambda xs: (jnp.sin(xs[0]), jnp.cos(xs[1])), (p[0], p[0]))
    return y, c * t[0]
  s.defjvp(rule)
  return s

def jit_rule():
  @m.custom_jvp
  def s(x):
    return jnp.sin(x)
  def rule(p, t):
    y, c = m.jit(lambda: (jnp.sin(p[0]), jnp.cos(p[0])))()
    return y, c * t[0]
  s.defjvp(rule)
  return s

scan_sin, cond_sin, jit_sin = sin_rule(scan_apply), sin_rule(cond_apply), jit_rule()

def show_pmap(policy):
  f = m.checkpoint(m.pmap(lambda x: jnp.sin(jnp.sin(x))), policy=policy)
  x = jnp.arange(1.)
  y, f_vjp = m.vjp(f, x)
  print('vjp', counts(m.make_jaxpr(f_vjp)(y)))
"""

_PROGRAMS = {}
for _outer in ("scan", "cond"):
  for _policy in ("save_cos", "save_sin", "nothing"):
    _PROGRAMS[f"{_outer}_of_{_outer}_{_policy}"] = (
        f"show(m.checkpoint(lambda x: {_outer}_apply({_outer}_sin, x), policy={_policy}), 4.)")
_PROGRAMS.update({
    "cond_of_jit_nested": "show(m.checkpoint(lambda x: pred_cond_apply(jit_sin, "
                          "pred_cond_apply(jit_sin, x)), policy=nothing), 4.)",
    "scan_of_jit_nested": "show(m.checkpoint(lambda x: scan_apply(jit_sin, "
                          "scan_apply(jit_sin, x)), policy=nothing), 4.)",
    "cond_of_cond_nested": "show(m.checkpoint(lambda x: cond_apply(cond_sin, "
                           "cond_apply(cond_sin, x)), policy=nothing), 4.)",
    # a pmapped function: the policy applies inside it
    "pmap_save_cos": "show_pmap(save_cos)",
    "pmap_save_sin": "show_pmap(save_sin)",
    "pmap_nothing": "show_pmap(nothing)",
    "scan_policy": "show(m.checkpoint(lambda x: lax.scan(lambda c, _: (jnp.sin(c), "
                   "jnp.sin(c)), x, None, length=3)[0], policy=save_cos), 4.)",
})


@pytest.mark.jax_oracle
def test_recomputation_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert expected[name].startswith(("lin [", "vjp [")), expected[name]  # the oracle ran it
    assert printed_here(src, _PRELUDE) == expected[name], name


def _lin_counts(f, x):
  text = str(hlox.make_jaxpr(hlox.linearize(f, x)[1])(x))
  return text.count(" sin "), text.count(" cos ")


def _sin_by(apply):
  @hlox.custom_jvp
  def s(x):
    return jnp.sin(x)

  def rule(p, t):
    y, c = apply(lambda xs: (jnp.sin(xs[0]), jnp.cos(xs[1])), (p[0], p[0]))
    return y, c * t[0]
  s.defjvp(rule)
  return s


_scan_apply = lambda f, x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]
_cond_apply = lambda f, x: lax.cond(True, f, lambda x: x, x)
_save_cos = lambda prim, *_, **__: str(prim) == "cos"


@pytest.mark.parametrize("apply", [_scan_apply, _cond_apply], ids=["scan", "cond"])
def test_known_loop_inside_a_rule_is_split_by_the_policy(apply):
  # The rule's loop has known operands only; with cos saved, the backward pass recomputes
  # no cos (it was computed inside that loop, and saved from there).
  f = hlox.checkpoint(lambda x: apply(_sin_by(apply), x), policy=_save_cos)
  assert _lin_counts(f, 4.)[1] == 0
  check_grads(f, (np.float32(3.),), order=2, modes=("rev",), atol=2e-2, rtol=2e-2)
  np.testing.assert_allclose(hlox.grad(f)(np.float32(3.)), np.cos(3.), rtol=1e-6)


def test_nested_loops_gradients():
  s = _sin_by(_scan_apply)
  for apply in (_scan_apply, _cond_apply):
    f = hlox.checkpoint(lambda x: apply(s, apply(s, x)),
                        policy=hlox.checkpoint_policies.nothing_saveable)
    np.testing.assert_allclose(hlox.grad(f)(np.float32(0.8)),
                               np.cos(np.sin(0.8)) * np.cos(0.8), rtol=1e-6)
    check_grads(f, (np.float32(0.8),), order=2, modes=("rev",), atol=2e-2, rtol=2e-2)


def test_unread_loop_outputs_are_dropped():
  # A scan's carry that nothing reads goes (with its work); so do a cond's unread results
  # and the operands no branch then reads.
  def f(x):
    c, _ = lax.scan(lambda c, _: ((jnp.sin(c[0]), jnp.cos(c[1])), None), (x, x), None,
                    length=2)
    return c[1]
  ck = hlox.checkpoint(f)
  assert _lin_counts(ck, 2.)[0] == 1  # only the derivative of the cos carry: -sin
  expected = -np.sin(np.cos(2.)) * -np.sin(2.)
  np.testing.assert_allclose(hlox.grad(ck)(np.float32(2.)), expected, rtol=1e-5)
