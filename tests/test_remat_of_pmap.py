"""A checkpoint policy applies inside a pmapped function (JAX's pmap is a jit of a
shard_map, whose bodies the policy splits): what the backward pass recomputes is JAX's,
residuals leave the forward pmap stacked along its axis, and the gradients stay right."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
g = m.pmap(lambda x: jnp.sin(jnp.sin(x)))
x = jnp.arange(1.)

def show(policy):
  f = m.checkpoint(g, policy=policy)
  y, f_vjp = m.vjp(f, x)
  s = str(m.make_jaxpr(f_vjp)(y))
  print([s.count(' sin '), s.count(' cos ')])
"""

_PROGRAMS = {
    "save_cos": "show(lambda prim, *_, **__: str(prim) == 'cos')",
    "save_sin": "show(lambda prim, *_, **__: str(prim) == 'sin')",
    "nothing": "show(lambda prim, *_, **__: False)",
}


@pytest.mark.jax_oracle
def test_recomputation_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert expected[name].startswith("["), expected[name]  # the oracle ran it
    assert printed_here(src, _PRELUDE) == expected[name], name


@pytest.mark.parametrize("saved", ["cos", "sin", None])
def test_gradient_and_residual_types(saved):
  g = hlox.pmap(lambda x: jnp.sin(jnp.sin(x)))
  f = hlox.checkpoint(g, policy=lambda prim, *_, **__: str(prim) == saved)
  x = jnp.arange(1.) + 0.5
  y, f_vjp = hlox.vjp(f, x)
  ct, = f_vjp(jnp.ones_like(y))
  np.testing.assert_allclose(ct, np.cos(np.sin(0.5)) * np.cos([0.5]), rtol=1e-6)
  # the saved values are stacked along the pmapped axis, as the backward pmap maps them
  for leaf in hlox.tree_util.tree_leaves(f_vjp):
    if np.ndim(leaf):
      assert np.shape(leaf)[0] == 1
  text = str(hlox.make_jaxpr(f_vjp)(y))
  expected = {"cos": (0, 0), "sin": (0, 2), None: (1, 2)}[saved]
  assert (text.count(" sin "), text.count(" cos ")) == expected
