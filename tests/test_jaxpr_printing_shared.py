"""Printed jaxprs as JAX prints them: nested jaxprs used more than once, or of more than 10
equations, are printed once above the top level (``let name = {...} in``) and referred to by
name; small parameter lists holding tiny jaxprs stay on one line."""
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
def body(c, x):
  a = c * x; b = a + 1; d = jnp.sin(b); e = d * d; f = e - x; g = f / 2; h = g + c
  i = h * h; j = i + 1; k = j * 2; l = k - 1
  return l, a
x = jnp.arange(5.0)
"""

_PROGRAMS = {
    "scan_big_body": "print(m.make_jaxpr(lambda x: m.lax.scan(body, 1.0, x))(x))",
    "cond_one_big_branch": ("print(m.make_jaxpr(lambda x: m.lax.cond(x[0] > 0, "
                            "lambda x: body(x, x)[0], lambda x: x, x))(x))"),
    "jit_used_three_times": ("g = m.jit(lambda x: x + 1)\n"
                             "print(m.make_jaxpr(lambda x: g(x) + g(x) * g(2 * x))(x))"),
    "two_big_jits_same_name": ("print(m.make_jaxpr(lambda x: m.jit(lambda y: body(y, y)[0])(x)"
                               " + m.jit(lambda y: body(y, y)[0])(x))(x))"),
    "grad_of_big_jit": ("inner = m.jit(lambda x, y: body(x * y, y)[0])\n"
                        "print(m.make_jaxpr(m.grad(lambda x: inner(x, 2.0).sum()))(x))"),
    "small_jit_inline": "print(m.make_jaxpr(lambda x: m.jit(lambda y: y + 1)(x))(x))",
    "annotated": ("print(m.make_jaxpr(lambda x: m.lax.scan(body, 1.0, x))(x)"
                  ".pretty_print(source_info=False, name_stack=True))"),
}


@pytest.mark.jax_oracle
def test_shared_jaxprs_printed_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert printed_here(src, _PRELUDE) == expected[name], name


def test_shared_jaxpr_printed_once_and_named():
  g = hlox.jit(lambda x: x + 1)
  text = str(hlox.make_jaxpr(lambda x: g(x) * g(x))(jnp.ones(3)))
  assert text.startswith("let lambda = { lambda ; ")
  assert text.count("jaxpr=lambda") == 2
  assert text.count("add") == 1


def test_big_scan_body_hoisted_small_one_not():
  def big(c, x):
    for _ in range(11):
      c = c * x
    return c, x

  text = str(hlox.make_jaxpr(lambda xs: hlox.lax.scan(big, 1.0, xs))(jnp.ones(3)))
  assert text.startswith("let jaxpr = {") and "jaxpr=jaxpr" in text
  text = str(hlox.make_jaxpr(lambda xs: hlox.lax.scan(lambda c, x: (c * x, x), 1.0, xs))(
      jnp.ones(3)))
  assert not text.startswith("let") and "jaxpr={ lambda" in text
