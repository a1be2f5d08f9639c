"""Lowered programs name their results as JAX's do: ``jax.result_info`` on each result of
``main`` (its place in the function's result), and the module is named after the function
(``jit(<lambda>)`` -> ``@jit__lambda``)."""
import re

import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax


def _main_signature(text: str) -> str:
  return next(line for line in text.splitlines() if "func.func public @main" in line)


def test_result_info_names_each_result_by_its_path():
  def f(x, y):
    return {"a": x + y, "b": (x * 2, jnp.sin(y))}

  text = hlox.jit(f).lower(jnp.ones(3), 2.0).as_text()
  assert re.findall(r'jax.result_info = "([^"]*)"', text) == [
      "result['a']", "result['b'][0]", "result['b'][1]"]
  assert text.startswith("module @jit_f attributes")


def test_single_result_and_lambda_module_name():
  text = hlox.jit(lambda x: x + 1).lower(jnp.ones(3)).as_text()
  assert text.startswith("module @jit__lambda attributes")
  assert '{jax.result_info = "result"}' in _main_signature(text)


def test_result_info_does_not_change_results_or_recompile():
  f = hlox.jit(lambda x: (x + 1, {"k": x * 2}))
  x = jnp.arange(3.0)
  compiled = f.lower(x).compile()
  out = compiled(x)
  assert out[0].tolist() == [1.0, 2.0, 3.0] and out[1]["k"].tolist() == [0.0, 2.0, 4.0]
  assert f(x)[1]["k"].tolist() == [0.0, 2.0, 4.0]


_PROGRAMS = {
    "dict_tuple": ("def f(x, y):\n  return {'a': x + y, 'b': (x * 2, jnp.sin(y))}\n"
                   "print(m.jit(f).lower(jnp.ones(3), 2.0).as_text().splitlines()[1])"),
    "lambda": "print(m.jit(lambda x: x @ x).lower(jnp.ones((2, 2))).as_text().splitlines()[:2])",
    "none_and_list": ("print(m.jit(lambda x: [x, None, (x, x)]).lower(1.0).as_text()"
                      ".splitlines()[:2])"),
}


@pytest.mark.jax_oracle
def test_lowered_signatures_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name
