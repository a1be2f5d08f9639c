"""``hlox.experimental.shard_alike``: both results get the layout the partitioner picks for
either (a sharded input's), inside ``jit`` and eagerly; values unchanged; AD and vmap."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental.shard_alike import shard_alike
from hlox.sharding import AxisType, NamedSharding, PartitionSpec as P


def _mesh(shape, names):
  # Auto axes: the partitioner picks layouts (Explicit ones are fixed by the values' types).
  return hlox.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


def test_result_takes_the_input_layout_in_jit():
  mesh = _mesh((2, 2), ("x", "y"))
  s = NamedSharding(mesh, P("x", "y"))
  np_inp = np.arange(16.).reshape(8, 2)
  inp = hlox.device_put(np_inp, s)

  @hlox.jit
  def f(x):
    z = x * x * 2
    _, z = shard_alike(x, z)
    return z * 2

  out = f(inp)
  assert out.sharding == s
  np.testing.assert_array_equal(out, np_inp * np_inp * 4)
  text = f.lower(inp).as_text()
  assert text.count("sdy.sharding_group") == 2


def test_a_fresh_value_and_a_host_argument_take_the_sharded_layout():
  mesh = _mesh((2,), ("x",))
  s = NamedSharding(mesh, P("x"))
  arr = hlox.device_put(np.arange(8.), s)
  out1, out2 = hlox.jit(lambda x: shard_alike(x, jnp.arange(8.) * 3))(arr)
  assert out1.sharding == s and out2.sharding == s
  np.testing.assert_array_equal(out2, np.arange(8.) * 3)
  # Eagerly too, and with a NumPy operand.
  e1, e2 = shard_alike(arr, np.arange(8.) + 1)
  assert e1.sharding == s and e2.sharding == s
  np.testing.assert_array_equal(e2, np.arange(8.) + 1)


def test_without_a_mesh_it_is_the_identity():
  x, y = shard_alike({"a": jnp.ones(3)}, {"a": jnp.arange(3.)})
  np.testing.assert_array_equal(y["a"], [0, 1, 2])
  assert "sharding_group" not in hlox.jit(shard_alike).lower(1.0, 2.0).as_text()


def test_bad_arguments():
  with pytest.raises(ValueError, match="leaves shapes of `x` and `y` should match"):
    shard_alike(jnp.ones((2, 3)), jnp.ones((3, 2)))
  with pytest.raises(ValueError, match="Trees should be equal"):
    shard_alike((jnp.ones(2),), [jnp.ones(2)])


def test_grad_and_vmap():
  mesh = _mesh((4,), ("x",))
  s = NamedSharding(mesh, P("x"))
  inp = hlox.device_put(np.arange(8.), s)

  def f(x):
    x_, y_ = shard_alike(x, jnp.arange(8.))
    return jnp.sum(x_ * y_)

  np.testing.assert_allclose(hlox.grad(f)(inp), np.arange(8.))
  np.testing.assert_allclose(hlox.jit(hlox.grad(f))(inp), np.arange(8.))

  mesh2 = _mesh((2, 2), ("x", "y"))
  a = hlox.device_put(np.arange(16.).reshape(8, 2), NamedSharding(mesh2, P("x", "y")))
  b = hlox.device_put(np.arange(16.).reshape(2, 8), NamedSharding(mesh2, P("y", "x")))
  o1, o2 = hlox.jit(hlox.vmap(shard_alike, in_axes=(0, 1)))(a, b)
  assert o1.sharding == o2.sharding == NamedSharding(mesh2, P("x", "y"))
  np.testing.assert_array_equal(o2, np.arange(16.).reshape(2, 8).T)
  # One operand unmapped: it is broadcast along the batch axis.
  r1, r2 = hlox.vmap(shard_alike, in_axes=(0, None))(jnp.ones((3, 2)), jnp.arange(2.))
  np.testing.assert_array_equal(r2, np.tile(np.arange(2.), (3, 1)))


def test_full_like_keeps_a_mesh_layout():
  mesh = _mesh((8,), ("i",))
  x = hlox.device_put(np.arange(16.).reshape(8, 2), NamedSharding(mesh, P("i", None)))
  y = jnp.full_like(x, 1)
  assert y.sharding == x.sharding
  np.testing.assert_array_equal(y, np.ones((8, 2)))
