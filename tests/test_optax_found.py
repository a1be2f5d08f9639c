"""JAX behaviours the optax library relies on, found by running optax's own tests with
``jax`` pointing at hlox. Each test reproduces the underlying JAX behaviour directly (optax
itself is not needed)."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

from tests.util import printed_here, printed_in_jax


def test_out_sharding_of_a_types_sharding_outside_a_mesh():
  # ``typeof(x).sharding`` outside any mesh is a NamedSharding over the empty mesh; passed on
  # as ``out_sharding=`` (optax.tree.random_like does) it asks for no layout at all.
  x = jnp.ones((2, 3))
  empty = hlox.typeof(x).sharding
  assert empty.mesh.empty
  key = hlox.random.key(0)

  def f(x):
    return (hlox.random.normal(key, x.shape, x.dtype, out_sharding=empty),
            hlox.random.uniform(key, (2,), out_sharding=empty),
            jnp.zeros(3, out_sharding=empty),
            jnp.reshape(x, (3, 2), out_sharding=empty),
            jnp.dot(x, x.T, out_sharding=empty))

  def g(x):
    return (hlox.random.normal(key, x.shape, x.dtype), hlox.random.uniform(key, (2,)),
            jnp.zeros(3), jnp.reshape(x, (3, 2)), jnp.dot(x, x.T))

  for got in (f(x), hlox.jit(f)(x)):
    for a, b in zip(got, g(x)):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


_PROGRAMS = {
    "reshard_empty": """
try:
  m.sharding.reshard(jnp.ones(2), m.typeof(jnp.ones(2)).sharding)
except ValueError as e:
  print(e)
""",
    "wsc_empty": """
try:
  m.jit(lambda x: m.lax.with_sharding_constraint(x, m.typeof(x).sharding))(jnp.ones(2))
except ValueError as e:
  print(e)
""",
    "random_in_jit": """
def f(x, k):
  s = m.typeof(x).sharding
  return m.random.normal(k, x.shape, x.dtype, out_sharding=s)
print(m.jit(f)(jnp.ones(2), m.random.key(0)))
""",
}


@pytest.mark.jax_oracle
def test_printed_as_jax_prints():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name


def test_empty_mesh_sharding_refused_where_jax_refuses_it():
  # Outside ``out_sharding=``, JAX takes a NamedSharding over the empty mesh for a mistake.
  x = jnp.ones((2, 3))
  empty = hlox.typeof(x).sharding
  for fn in (hlox.sharding.reshard, hlox.lax.with_sharding_constraint):
    for g in (fn, hlox.jit(fn, static_argnums=1)):
      with pytest.raises(ValueError, match="empty"):
        g(x, empty)
