"""``debug.print`` stages the ``debug_print`` primitive, as JAX 0.10.2 does: its parameters
(format, argument structure, NumPy print options, ordering) print as JAX's, and the values
print under jit, vmap and grad."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

from tests.util import printed_here, printed_in_jax


def _f(x):
  hlox.debug.print("x={} y={y}", x, y=x * 2)
  hlox.debug.print("hi", ordered=True)
  return x


def test_params_and_rules(capsys):
  jaxpr = hlox.make_jaxpr(_f)(1.0)
  [eqn1, eqn2] = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "debug_print"]
  assert eqn1.params["fmt"] == "x={} y={y}" and eqn1.params["has_placeholders"]
  assert eqn1.params["ordered"] is False and eqn2.params["ordered"] is True
  assert eqn1.params["static_args"] == () and eqn1.params["logging_record"] is None
  assert dict(eqn1.params["np_printoptions"])["precision"] == np.get_printoptions()["precision"]
  hlox.jit(_f)(3.0)
  hlox.vmap(_f)(jnp.arange(2.0))
  assert hlox.grad(_f)(5.0) == 1.0
  out = capsys.readouterr().out.splitlines()
  assert sorted(out) == sorted(["x=3.0 y=6.0", "hi", "x=0.0 y=0.0", "x=1.0 y=2.0", "hi",
                                "x=5.0 y=10.0", "hi"])


def test_static_arguments_are_parameters(capsys):
  jaxpr = hlox.make_jaxpr(lambda x: hlox.debug.print("{} {}", "label", x))(2.0)
  [eqn] = jaxpr.jaxpr.eqns
  assert eqn.params["static_args"] == ((0, "label"),) and len(eqn.invars) == 1
  hlox.jit(lambda x: hlox.debug.print("{} {}", "label", x))(2.0)
  assert capsys.readouterr().out == "label 2.0\n"


@pytest.mark.jax_oracle
def test_printed_jaxprs_match_jax():
  pytest.importorskip("jax")
  prelude = ("def f(x):\n"
             "  m.debug.print('x={} y={y}', x, y=x * 2)\n"
             "  m.debug.print('hi', ordered=True)\n"
             "  return x\n")
  programs = {
      "plain": "print(str(m.make_jaxpr(f)(1.)).replace('] \\n', ']\\n'))",
      "vmap": "print(str(m.make_jaxpr(m.vmap(f))(jnp.ones(2))).replace('] \\n', ']\\n'))",
      "grad": "print(str(m.make_jaxpr(m.grad(f))(1.)).replace('] \\n', ']\\n'))",
      "static": "print(m.make_jaxpr(lambda x: m.debug.print('{} {}', 'a', x))(1.))",
  }
  expected = printed_in_jax(programs, prelude)
  for name, src in programs.items():
    assert printed_here(src, prelude) == expected[name], name
