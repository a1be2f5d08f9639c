"""Small behaviours JAX's shard_map tests rely on: its error texts for a missing mesh, a
``zip`` as ``ppermute``'s ``perm`` and a collective outside any mapping; ``get_mesh()``
without a mesh; ``ShapeDtypeStruct`` equality counting the sharding."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.sharding import NamedSharding, PartitionSpec as P


def test_no_mesh_context_error():
  f = hlox.shard_map(lambda x: x, in_specs=P("x"), out_specs=P("x"))
  with pytest.raises(ValueError, match="The context mesh cannot be empty"):
    f(jnp.arange(8))


def test_ppermute_zip_error():
  mesh = hlox.make_mesh((2,), ("x",), axis_types=(hlox.sharding.AxisType.Auto,))
  perm = zip([0, 1], [1, 0])
  f = hlox.shard_map(lambda x: hlox.lax.ppermute(x, "x", perm), mesh=mesh,
                     in_specs=P("x"), out_specs=P("x"))
  with pytest.raises(TypeError, match="`perm` passed to `jax.lax.ppermute` must be a list"):
    f(hlox.device_put(np.arange(8), NamedSharding(mesh, P("x"))))
  g = hlox.shard_map(lambda x: hlox.lax.ppermute(x, "x", [(0, 1), (1, 0)]), mesh=mesh,
                     in_specs=P("x"), out_specs=P("x"))
  np.testing.assert_array_equal(np.asarray(g(np.arange(8))), [4, 5, 6, 7, 0, 1, 2, 3])


def test_psum_not_under_shard_map_error():
  with pytest.raises(NameError, match="Found an unbound axis name: x. To fix this, please "
                     "call psum under `jax.shard_map`"):
    hlox.jit(lambda x: hlox.lax.psum(x, "x"))(jnp.arange(8.))
  mesh = hlox.make_mesh((2,), ("x",), axis_types=(hlox.sharding.AxisType.Auto,))
  out = hlox.shard_map(lambda x: hlox.lax.psum(x, "x"), mesh=mesh, in_specs=P("x"),
                       out_specs=P())(np.arange(8.))
  np.testing.assert_array_equal(np.asarray(out), np.arange(4.) + np.arange(4., 8.))


def test_get_mesh_without_a_mesh_is_empty():
  m = hlox.sharding.get_mesh()
  assert m.empty and m.size == 0 and m.axis_names == () and str(m) == "Mesh()"
  assert repr(m) == "Mesh(axis_sizes=(), axis_names=())"
  mesh = hlox.make_mesh((2,), ("x",))
  with hlox.set_mesh(mesh):
    assert hlox.sharding.get_mesh() == mesh


def test_shape_dtype_struct_equality_counts_sharding():
  mesh = hlox.make_mesh((2,), ("x",))
  s = NamedSharding(mesh, P("x"))
  a = hlox.ShapeDtypeStruct((4,), jnp.float32, sharding=s)
  b = hlox.ShapeDtypeStruct((4,), jnp.float32)
  c = hlox.ShapeDtypeStruct((4,), jnp.float32, sharding=NamedSharding(mesh, P("x")))
  assert a != b and a == c and hash(a) == hash(c) and len({a, b, c}) == 2
  # An array placed on purpose passes its sharding on; one made without a placement not.
  assert hlox.ShapeDtypeStruct.like(hlox.device_put(np.ones(4, np.float32), s)) == a
  assert hlox.ShapeDtypeStruct.like(jnp.ones(4, jnp.float32)) == b
