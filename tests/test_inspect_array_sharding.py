"""``debug.inspect_array_sharding`` hands each value's layout to a callback: eagerly, under
``grad``, and from inside ``jit`` over a mesh (where XLA's partitioner picks the layout);
compared with what JAX reports for the same programs."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

from tests.util import printed_here, printed_in_jax

_PRELUDE = """
import importlib
Mesh, NamedSharding = m.sharding.Mesh, m.sharding.NamedSharding
shard_alike = importlib.import_module(m.__name__ + ".experimental.shard_alike").shard_alike
mesh = Mesh(np.array(m.devices()[:4]), ('x',))
inp = m.device_put(np.arange(8.), NamedSharding(mesh, P('x')))
def show(s):
  print(s.spec, s.is_fully_replicated, len(s.device_set), s.shard_shape((8,)))
"""

_PROGRAMS = {
    "eager": "m.debug.inspect_array_sharding(inp, callback=show)",
    "pytree": "m.debug.inspect_array_sharding({'a': inp, 'b': [inp * 2]}, callback=show)",
    "jit_follows_input": """
def f(x):
  m.debug.inspect_array_sharding(jnp.sin(x), callback=show)
  return x * 2
print(m.jit(f)(inp))
""",
    "grad_of_shard_alike": """
def f(x):
  x_, y_ = shard_alike(x, jnp.arange(8.))
  m.debug.inspect_array_sharding(y_, callback=show)
  return jnp.sum(x_ + y_)
print(m.grad(f)(inp))
print(m.grad(m.jit(f))(inp))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_reports_layout_like_jax(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)[name]
  assert "!!!" not in expected
  assert printed_here(_PROGRAMS[name], _PRELUDE) == expected


def test_one_device_program_reports_the_whole_value():
  seen = []
  hlox.jit(lambda x: hlox.debug.inspect_array_sharding(x * 2, callback=seen.append))(
      jnp.ones(3))
  (s,) = seen
  assert s.is_fully_replicated and len(s.device_set) == 1 and s.shard_shape((3,)) == (3,)


def test_vmap_inspects_the_batched_value():
  seen = []
  hlox.vmap(lambda x: hlox.debug.inspect_array_sharding(x, callback=seen.append))(
      jnp.ones((5, 2)))
  assert len(seen) == 1 and seen[0].shard_shape((5, 2)) == (5, 2)
  assert np.asarray(hlox.vmap(lambda x: x + 1)(jnp.ones(2))).tolist() == [2.0, 2.0]


def test_callback_must_be_callable():
  with pytest.raises(TypeError, match="callable"):
    hlox.debug.inspect_array_sharding(jnp.ones(2), callback=None)
