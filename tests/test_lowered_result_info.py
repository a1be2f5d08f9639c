"""Lowered programs name their arguments and results as JAX's do: ``jax.result_info`` on each
result of ``main`` (its place in the function's result), arguments located at their names
(``loc("x")``: the HLO parameters are named after them, the HLO instructions after the ops),
and the module after the function (``jit(<lambda>)`` -> ``@jit__lambda``)."""
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


class _Checked:
  """A pytree node whose constructor checks its child (as batching_test's NamedArray)."""

  def __init__(self, names, data):
    assert len(names) == data.ndim
    self.names, self.data = names, data


hlox.tree_util.register_pytree_node(_Checked, lambda c: ((c.data,), c.names),
                                    lambda names, xs: _Checked(names, xs[0]))


def test_result_of_a_node_that_checks_its_children():
  # Naming the results must not rebuild the user's node from placeholders it refuses.
  f = hlox.jit(lambda c: _Checked(c.names, c.data * 2))
  out = f(_Checked(["i", "j"], jnp.ones((2, 3))))
  assert out.names == ["i", "j"] and out.data.tolist() == [[2.0] * 3] * 2
  text = f.lower(_Checked(["i", "j"], jnp.ones((2, 3)))).as_text()
  assert re.findall(r'jax.result_info = "([^"]*)"', text) == ["result[0]"]


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
    "hlo_names": ("def f(x, y):\n  return jnp.sin(x) * y\n"
                  "print(m.jit(f).lower(1.0, 2.0).as_text('hlo'))\n"
                  "print(m.jit(lambda d, s: d['w'] * s, static_argnums=1)"
                  ".lower({'w': jnp.ones(2)}, 3).as_text('hlo'))"),
    "arg_locations": ("def f(x, *rest, k):\n  return x + rest[0] + k\n"
                      "t = m.jit(f).lower(1.0, 2.0, k=3.0).as_text(debug_info=True)\n"
                      "print([l for l in t.splitlines() if l.startswith('#loc') and "
                      "'(' in l and '\"' in l and ':' not in l.split('\"')[1]][:3])"),
    "none_and_list": ("print(m.jit(lambda x: [x, None, (x, x)]).lower(1.0).as_text()"
                      ".splitlines()[:2])"),
}


@pytest.mark.jax_oracle
def test_lowered_signatures_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name


def test_compiled_refuses_tracers_as_jax():
  f = hlox.jit(lambda x: x + 4).lower(1.0).compile()
  with pytest.raises(TypeError, match="Cannot apply JAX transformations to a function lowered "
                     "and compiled for a particular signature. Detected .*BatchTracer"):
    hlox.vmap(lambda x: f(x) + 2)(jnp.ones(3))
  with pytest.raises(TypeError, match="Detected .*Tracer"):
    hlox.grad(lambda x: f(x))(1.0)
  assert float(f(2.0)) == 6.0
