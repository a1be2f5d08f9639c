"""Checkpoint policies apply inside scan, nested jit, nested checkpoint and custom_jvp /
custom_vjp calls: what the linearized and VJP programs recompute (their sin/cos/dot counts)
and which residuals they keep (the linearized program's constants) are JAX's, and the
gradients stay right."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.test_util import check_grads
from tests.util import printed_here, printed_in_jax

# Written against ``m`` (jax in the oracle, hlox here); ``show`` prints, for the linearized
# and the VJP program, how many sin/cos/dot equations they hold, and the residuals' types.
_PRELUDE = """
lax = m.lax
save_cos = lambda prim, *_, **__: str(prim) == 'cos'
save_sin = lambda prim, *_, **__: str(prim) == 'sin'
dots = m.checkpoint_policies.checkpoint_dots
W = jnp.full((3, 3), 0.1, jnp.float32)

def counts(j):
  s = str(j)
  return [s.count(' sin '), s.count(' cos '), s.count(' dot_general')]

def show(f, x):
  lin = m.make_jaxpr(m.linearize(f, x)[1])(x)
  # (scalar residuals left out: hlox's make_jaxpr writes scalar constants inline)
  print('lin', counts(lin), sorted(str(c.shape) for c in lin.consts if np.ndim(c)))
  _, f_vjp = m.vjp(f, x)
  print('vjp', counts(m.make_jaxpr(f_vjp)(f(x))))

def sin_scan(c, _):
  return jnp.sin(c), jnp.sin(c)

def dot_scan(c, _):
  return jnp.sin(W @ c), None

@m.custom_jvp
def cj(x):
  return jnp.sin(x)
cj.defjvp(lambda p, t: (cj(p[0]), jnp.cos(p[0]) * t[0]))

@m.custom_jvp
def cj_jit(x):
  return jnp.sin(x)

def cj_jit_rule(p, t):
  y, c = m.jit(lambda: (jnp.sin(p[0]), jnp.cos(p[0])))()
  return y, c * t[0]
cj_jit.defjvp(cj_jit_rule)

def scan_apply(f, x):
  return lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]

@m.custom_vjp
def cv(x):
  return jnp.sin(x)
cv.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda r, g: (r * g,))
"""

_PROGRAMS = {
    "scan_save_cos": "show(m.checkpoint(lambda x: sum(lax.scan(sin_scan, x, None, length=3)"
                     "[1]), policy=save_cos), 4.)",
    "scan_nothing": "show(m.checkpoint(lambda x: lax.scan(sin_scan, x, None, length=3)[0]),"
                    " 4.)",
    "scan_dots": "show(m.checkpoint(lambda x: lax.scan(dot_scan, x, None, length=3)[0],"
                 " policy=dots), jnp.ones(3))",
    "scan_dots_nothing": "show(m.checkpoint(lambda x: lax.scan(dot_scan, x, None, length=3)"
                         "[0]), jnp.ones(3))",
    # (W an argument of the jit: a jit's closed-over arrays are its arguments in hlox)
    "jit_in_scan_dots": "show(m.checkpoint(lambda x: m.jit(lambda W, x: lax.scan(lambda c, _:"
                        " (jnp.sin(W @ c), None), x, None, length=3)[0])(W, x), policy=dots),"
                        " jnp.ones(3))",
    "jit_save_cos": "show(m.checkpoint(m.jit(lambda y: jnp.sin(jnp.sin(y))),"
                    " policy=save_cos), 2.)",
    "jit_nothing": "show(m.checkpoint(m.jit(lambda y: jnp.sin(jnp.sin(y)))), 2.)",
    "nested_save_cos": "show(m.checkpoint(m.checkpoint(lambda y: jnp.sin(jnp.sin(y))),"
                       " policy=save_cos), 2.)",
    "custom_jvp_save_cos": "show(m.checkpoint(lambda x: cj(jnp.sin(x)), policy=save_cos), 2.)",
    "custom_vjp_save_cos": "show(m.checkpoint(lambda x: cv(jnp.sin(x)), policy=save_cos), 2.)",
    # a jit inside a custom_jvp rule inside a scan (JAX's test_remat_of_scan_funky_custom_jvp)
    "funky_save_cos": "show(m.checkpoint(lambda x: scan_apply(cj_jit, x), policy=save_cos),"
                      " 4.)",
    "funky_save_sin": "show(m.checkpoint(lambda x: scan_apply(cj_jit, x), policy=save_sin),"
                      " 4.)",
    "funky_nothing": "show(m.checkpoint(lambda x: scan_apply(cj_jit, scan_apply(cj_jit, x))),"
                     " 4.)",
    "names_in_scan": "show(m.checkpoint(lambda x: lax.scan(lambda c, _: (jnp.sin("
                     "m.ad_checkpoint.checkpoint_name(jnp.sin(c), 'a')), None), x, None,"
                     " length=3)[0], policy=m.checkpoint_policies.save_only_these_names('a')),"
                     " 2.)",
}


@pytest.mark.jax_oracle
def test_recomputation_and_residuals_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, "import jax.ad_checkpoint\n" + _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert expected[name].startswith("lin ["), expected[name]  # the oracle ran it
    assert printed_here(src, _PRELUDE) == expected[name], name


def test_policy_inside_scan_counts():
  # Independent of the oracle: with cos saved, the linearized scan recomputes nothing.
  save_cos = lambda prim, *_, **__: str(prim) == "cos"
  loop = lambda x: lax.scan(lambda c, _: (jnp.sin(c), jnp.sin(c)), x, None, length=3)
  text = str(hlox.make_jaxpr(hlox.linearize(hlox.checkpoint(loop, policy=save_cos),
                                            4.)[1])(1.))
  assert text.count(" sin ") == 0 and text.count(" cos ") == 0
  # Without a policy the loop is recomputed (JAX's test_remat_of_scan).
  text = str(hlox.make_jaxpr(hlox.linearize(hlox.checkpoint(loop), 4.)[1])(1.))
  assert " sin " in text and " cos " in text


def _grad_cases():
  save_cos = lambda prim, *_, **__: str(prim) == "cos"
  dots = hlox.checkpoint_policies.checkpoint_dots
  W = jnp.asarray(np.linspace(-0.5, 0.5, 9, dtype=np.float32).reshape(3, 3))

  def dot_loop(x, W=W):
    return lax.scan(lambda c, w: (jnp.sin(W @ c) * w, jnp.cos(c)), x,
                    jnp.asarray([1., .5, .25], np.float32))

  return {
      "scan_save_cos": (hlox.checkpoint(lambda x: lax.scan(
          lambda c, _: (jnp.sin(c), jnp.sin(c)), x, None, length=3), policy=save_cos),
          np.float32(0.7)),
      "scan_dots": (hlox.checkpoint(dot_loop, policy=dots), np.ones(3, np.float32)),
      "scan_nothing": (hlox.checkpoint(dot_loop), np.ones(3, np.float32)),
      "jit_dots": (hlox.checkpoint(hlox.jit(dot_loop), policy=dots),
                   np.ones(3, np.float32)),
      "nested": (hlox.checkpoint(lambda x: hlox.checkpoint(
          lambda y: jnp.sin(jnp.sin(y)) * y)(x) + x, policy=save_cos), np.float32(0.4)),
  }


@pytest.mark.parametrize("name", sorted(_grad_cases()))
def test_gradients_stay_right(name):
  f, x = _grad_cases()[name]
  check_grads(f, (x,), order=2, modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


def test_scan_policy_gradient_values():
  # Against the loop without checkpoint.
  W = jnp.asarray(np.linspace(-0.5, 0.5, 9, dtype=np.float32).reshape(3, 3))
  body = lambda c, _: (jnp.sin(W @ c), jnp.sum(c))
  plain = lambda x: jnp.sum(lax.scan(body, x, None, length=4)[1])
  x = np.linspace(0.1, 0.3, 3).astype(np.float32)
  for policy in (None, hlox.checkpoint_policies.checkpoint_dots,
                 hlox.checkpoint_policies.everything_saveable):
    ck = hlox.checkpoint(plain, policy=policy)
    np.testing.assert_allclose(hlox.grad(ck)(x), hlox.grad(plain)(x), rtol=1e-5, atol=1e-6)
