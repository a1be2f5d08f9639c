"""A checkpoint policy applies inside a pmapped function (JAX's pmap is a jit of a
shard_map, whose bodies the policy splits): what the backward pass recomputes is JAX's,
residuals leave the forward pmap stacked along its axis, and the gradients stay right.
(The JAX oracle's counts are checked in test_remat_known_control_flow.py.)"""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


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
