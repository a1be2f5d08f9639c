"""An identity ``broadcast_in_dim`` (to the operand's own shape) records no equation in a
traced jaxpr, whatever its operand (a NumPy constant included), as in JAX."""
import numpy as np

import hlox
from hlox import lax


def test_trivial_broadcast_of_a_constant_is_elided():
  jaxpr = hlox.make_jaxpr(lambda: lax.broadcast(np.float32(3), ()))()
  assert jaxpr.eqns == []
  assert float(hlox.jit(lambda: lax.broadcast(np.float32(3), ()))()) == 3.0
  c = np.arange(3, dtype=np.float32)
  jaxpr = hlox.make_jaxpr(lambda: lax.broadcast_in_dim(c, (3,), (0,)))()
  assert jaxpr.eqns == []
  np.testing.assert_array_equal(hlox.jit(lambda: lax.broadcast_in_dim(c, (3,), (0,)))(), c)


def test_real_broadcasts_are_kept():
  jaxpr = hlox.make_jaxpr(lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)))(np.ones(3, np.float32))
  assert [e.primitive.name for e in jaxpr.eqns] == ["broadcast_in_dim"]
  g = hlox.grad(lambda x: (lax.broadcast_in_dim(x, (), ()) * 2.0))(1.0)
  assert float(g) == 2.0
