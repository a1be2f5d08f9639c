"""Name stacks record the transformations an equation went through (``jvp``, ``vmap``,
``transpose``) as JAX's, and the lowered module's op locations print them the same way:
``jit(f)/vmap(jvp(foo))/sin``, ``cond/branch_0_fun``, ``while/body``, ``checkpoint``."""
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core.source_info import NameStack, Transform
from tests.util import printed_here, printed_in_jax


def _stacks(jaxpr):
  return [str(e.source_info.name_stack) for e in jaxpr.eqns]


def _locations(f, *args):
  text = hlox.jit(f).lower(*args).as_text(debug_info=True)
  return set(re.findall(r'loc\("([^"]*)"\(', text))


def test_name_stack_text():
  stack = NameStack(("foo", Transform("vmap"), Transform("jvp"), "bar", "baz"))
  assert str(stack) == "foo/vmap(jvp(bar))/baz"
  assert str(NameStack(("foo", Transform("jvp")))) == "foo/jvp()"
  assert str(NameStack()) == ""
  assert str(stack[:2] + ("x",)) == "foo/vmap(x)"
  assert NameStack((Transform("jvp"),)) != NameStack(("jvp",))


def test_plain_and_scoped_stacks():
  assert _stacks(hlox.make_jaxpr(lambda x: x + 1)(2)) == [""]
  f = hlox.named_scope("foo")(lambda x: x + 1)
  assert _stacks(hlox.make_jaxpr(f)(2)) == ["foo"]


def test_transformations_wrap_the_scope_inside_them():
  def f(x):
    with hlox.named_scope("foo"):
      return 2 * jnp.sin(x)
  stacks = _stacks(hlox.make_jaxpr(hlox.value_and_grad(f))(1.0))
  assert stacks[0] == "jvp(foo)"
  assert stacks[-1] == "transpose(jvp(foo))"
  stacks = _stacks(hlox.make_jaxpr(hlox.vmap(hlox.grad(f)))(jnp.ones(2)))
  assert set(stacks) == {"vmap(jvp(foo))", "vmap(transpose(jvp(foo)))"}


def test_traced_bodies_are_named_relative_to_themselves():
  @hlox.jit
  def f(x):
    with hlox.named_scope("bar"):
      return jnp.square(x)
  g = hlox.named_scope("foo")(lambda x, t: hlox.jvp(f, (x,), (t,)))
  jaxpr = hlox.make_jaxpr(g)(1.0, 1.0)
  assert _stacks(jaxpr) == ["foo/jvp()"]
  assert set(_stacks(jaxpr.eqns[0].params["jaxpr"])) == {"bar"}
  locs = _locations(g, 1.0, 1.0)
  assert "jit(<lambda>)/foo/jvp(jit(f))" in locs  # the call
  assert "bar/mul" in locs  # the callee's ops, named relative to it


def test_region_names_of_control_flow():
  def f(x, y):
    with hlox.named_scope("foo"):
      return lax.cond(y, hlox.named_scope("t")(lambda x: x + 1),
                      hlox.named_scope("e")(lambda x: x - 1), x)
  locs = _locations(hlox.vmap(f, in_axes=(0, None)), np.arange(2.0), True)
  assert "jit(f)/vmap(foo)/cond/branch_0_fun/e/sub" in locs
  assert "jit(f)/vmap(foo)/cond/branch_1_fun/t/add" in locs
  w = lambda x: lax.while_loop(lambda x: x < 5.0, lambda x: x + 1.0, x)
  locs = _locations(lambda x, t: hlox.jvp(w, (x,), (t,)), 1.0, 1.0)
  assert "jit(<lambda>)/jvp()/while/body/add" in locs
  assert "jit(<lambda>)/jvp()/while/cond/lt" in locs


def test_remat_names():
  f = hlox.remat(jnp.sin)
  assert _locations(f, 2.0) >= {"jit(sin)/checkpoint/sin"}
  assert not any("remat" in n for n in _locations(f, 2.0))
  assert any(n.endswith("checkpoint/rematted_computation/cos")
             for n in _locations(hlox.grad(f), 2.0))


_PRELUDE = """
import re, functools
lax = m.lax
def names(f, *args, want):
  text = m.jit(f).lower(*args).as_text(debug_info=True)
  locs = set(re.findall(r'loc\\("([^"]*)"\\(', text))
  print([w for w in want if any(l.startswith(w) for l in locs)])
def stacks(f, *args):
  print(sorted({str(e.source_info.name_stack) for e in m.make_jaxpr(f)(*args).eqns}))
def f(x):
  with m.named_scope('foo'):
    return 2 * jnp.sin(x)
def lin(x):
  with m.named_scope('s'):
    return 2.0 * x
def c(x, y):
  with m.named_scope('foo'):
    return lax.cond(y, m.named_scope('t')(lambda x: x * x), m.named_scope('e')(lambda x: x / x), x)
"""

# Each program prints the JAX location names (or name stacks) it expects that hlox gives too.
_PROGRAMS = {
    "grad": "names(m.value_and_grad(f), 1.0, want=['jit(f)/jvp(foo)/sin', "
            "'jit(f)/jvp(foo)/cos', 'jit(f)/transpose(jvp(foo))/mul'])",
    "vmap_grad_stacks": "stacks(m.vmap(m.grad(f)), jnp.ones(2))",
    "vmap_grad_cond": "names(m.vmap(m.grad(c), in_axes=(0, None)), jnp.ones(2), True, want=["
                      "'jit(c)/vmap(transpose(jvp(foo)))/cond/branch_1_fun/t/mul', "
                      "'jit(c)/vmap(transpose(jvp(foo)))/cond/branch_0_fun/e/div'])",
    "jvp_jit": "names(lambda x, t: m.jvp(m.jit(f), (x,), (t,)), 1.0, 1.0, "
               "want=['jit(<lambda>)/jvp(jit(f))', 'foo/sin', 'foo/cos'])",
    "linearize": "stacks(lambda x: m.linearize(f, x)[1](x), 1.0)",
    "linear_transpose": "stacks(m.linear_transpose(lin, 1.0), 1.0)",
    "vjp": "stacks(lambda x: m.vjp(lin, x)[1](x), 1.0)",
    "scan": "names(m.grad(lambda x: lax.scan(lambda c, y: (c * m.named_scope('s')(jnp.sin)(y), "
            "None), x, jnp.arange(3.0))[0]), 1.0, want=['jit(<lambda>)/jvp()/while/body', "
            "'jit(<lambda>)/transpose(jvp())/while/body', 'jit(<lambda>)/jvp()/while/cond/lt'])",
}


@pytest.mark.jax_oracle
def test_location_names_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert printed_here(src, _PRELUDE) == expected[name], name
