"""JAX's Array and sharding API details (as JAX's array_test.py and pjit_test.py use them):
Array's private helpers (``_committed``, ``_check_if_deleted``, ``_arrays``, ...),
``to_device``, the ``np.dtype(x)`` deprecation, interned PartitionSpecs and cached Meshes,
empty meshes, ``check_compatible_aval``, pmap results' shardings,
``make_array_from_*`` errors and trees, and ``experimental.multihost_utils`` in one
process."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental import multihost_utils
from hlox.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P


# --- Array --------------------------------------------------------------------------------

def test_committed_matches_placement():
  x = jnp.array([1, 2, 3])
  assert x._committed is False
  assert [s.data._committed for s in x.addressable_shards] == [False]
  y = hlox.device_put(x, hlox.devices()[1])
  assert y._committed is True
  assert [s.data._committed for s in y.addressable_shards] == [True]
  np.testing.assert_array_equal(y.addressable_shards[0].data, [1, 2, 3])


def test_deleted_array_helpers():
  x = hlox.device_put(np.array([1, 2, 3]), hlox.devices()[0])
  np.testing.assert_array_equal(np.asarray(x), [1, 2, 3])
  assert x._npy_value is not None
  np.testing.assert_array_equal(x._npy_value, [1, 2, 3])
  assert len(x._arrays) == 1
  np.testing.assert_array_equal(x._arrays[0], [1, 2, 3])
  x._check_if_deleted()  # alive: no error
  x.delete()
  with pytest.raises(RuntimeError, match="Array has been deleted"):
    x._check_if_deleted()
  assert x._npy_value is None
  assert x._arrays is None


def test_is_ready_and_arrays_of_sharded_array():
  mesh = hlox.make_mesh((4,), ("x",))
  x = hlox.device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
  x.block_until_ready()
  assert x.is_ready() is True
  pieces = x._arrays
  assert len(pieces) == 4
  np.testing.assert_array_equal(np.concatenate([np.asarray(p) for p in pieces]),
                                np.arange(8.0))


def test_to_device():
  mesh = hlox.make_mesh((2,), ("x",))
  sharding = NamedSharding(mesh, P("x"))
  x = jnp.ones((2, 10))
  on_device = x.to_device(hlox.devices()[-1])
  assert on_device.device == hlox.devices()[-1]
  assert on_device._committed
  split = x.to_device(sharding)
  assert split.sharding == sharding
  assert [s.data.shape for s in split.addressable_shards] == [(1, 10), (1, 10)]
  np.testing.assert_array_equal(split, np.ones((2, 10)))
  with pytest.raises(NotImplementedError, match="stream"):
    x.to_device(hlox.devices()[0], stream=1)


@pytest.mark.skipif(tuple(map(int, np.__version__.split(".")[:2])) < (2, 4),
                    reason="__numpy_dtype__ is read by NumPy 2.4 and later")
def test_numpy_dtype_of_array_is_deprecated():
  x = jnp.arange(4)
  with pytest.warns(DeprecationWarning, match="Implicit conversion of an array to a dtype"):
    assert np.dtype(x) == np.dtype("int32")


# --- PartitionSpec ---------------------------------------------------------------------------

def test_partition_spec_is_interned():
  assert P(None, "x", "y") is P((), "x", "y")
  assert hash(P(None, "x")) == hash(P((), "x"))
  assert P(("x",), "y") is P("x", "y")
  assert P("x") is not P("x", None)
  assert P("x", "y", "z").index("z") == 2


def test_partition_spec_list_entry_is_a_tuple():
  assert P(["x"]) is P("x")
  assert P(["x", "y"], None) == P(("x", "y"))
  mesh = hlox.make_mesh((2,), ("x",), axis_types=(hlox.sharding.AxisType.Auto,))
  with mesh:
    out = hlox.lax.with_sharding_constraint(jnp.arange(8), P(["x"]))
  assert out.sharding == NamedSharding(mesh, P("x"))
  np.testing.assert_array_equal(out, np.arange(8))


def test_partition_spec_errors():
  with pytest.raises(ValueError, match="cannot contain a nested tuple"):
    P("x", "y", ("z", ("a",)))
  with pytest.raises(ValueError, match="cannot contain a nested tuple"):
    P((("a", "b"), "c"))
  with pytest.raises(TypeError, match="Subclassing `jax.P` is prohibited"):
    class MyP(P):  # noqa: F841
      pass
  with pytest.raises(TypeError, match="mesh axis names"):
    P(3)


# --- meshes -----------------------------------------------------------------------------

def test_mesh_construction_is_cached():
  m1 = Mesh(hlox.devices(), "x")
  m2 = Mesh(np.array(hlox.devices()), ("x",))
  assert m1 is m2
  assert Mesh(hlox.devices(), "y") is not m1
  assert m1.update(axis_names=("y",)) is Mesh(hlox.devices(), "y")
  grid = np.array(hlox.devices()).reshape(4, 2)
  assert Mesh(grid, ("a", "b")).shape == {"a": 4, "b": 2}


def test_empty_mesh():
  mesh = Mesh(devices=np.empty((), dtype=object), axis_names=[])
  assert mesh.empty and mesh.size == 0
  assert mesh.abstract_mesh.empty and mesh.abstract_mesh.size == 0
  abstract = AbstractMesh((), ())
  assert abstract.empty and abstract.size == 0
  assert not Mesh(hlox.devices()[:2], "x").empty


def test_abstract_mesh_update_and_abstract_device():
  am = Mesh(hlox.devices(), "x").abstract_mesh
  auto = hlox.sharding.AxisType.Auto
  new = am.update(axis_sizes=(2, 4), axis_names=("a", "b"), axis_types=(auto, auto))
  assert new.shape == {"a": 2, "b": 4} and new.size == 8
  device = hlox.sharding.AbstractDevice(device_kind="cpu", num_cores=None, platform="cpu")
  assert device.platform == "cpu"
  with_device = AbstractMesh((2,), ("x",), abstract_device=device)
  assert "platform=cpu" in repr(with_device)


def test_mesh_as_decorator():
  mesh = Mesh(np.array(hlox.devices()[:4]).reshape(2, 2), ("x", "y"))

  @mesh
  def inside():
    return hlox.sharding.get_mesh()
  assert hlox.sharding.get_mesh() is not mesh
  assert inside() is mesh


# --- shardings --------------------------------------------------------------------------

def test_check_compatible_aval():
  mesh = hlox.make_mesh((1, 1, 2), ("replica", "data", "mdl"))
  s = NamedSharding(mesh, P(None, ("mdl",), None, None))
  with pytest.raises(ValueError, match="only valid for values of rank at least 4, but was "
                                       "applied to a value of rank 2"):
    s.check_compatible_aval((8, 2))
  s.check_compatible_aval((8, 2, 4, 4))  # rank 4: fine
  scalar = NamedSharding(hlox.make_mesh((1,), ("x",)), P("x"))
  with pytest.raises(ValueError, match=r"For scalars the PartitionSpec should be P\(\)"):
    scalar.check_compatible_aval(())
  hlox.numpy.zeros(3).sharding.check_compatible_aval(())  # one device: any shape


def test_to_xla_hlo_sharding():
  mesh = hlox.make_mesh((4, 2), ("x", "y"))
  s = NamedSharding(mesh, P("y", "x"))
  hlo = s._to_xla_hlo_sharding(2)
  assert hlo.is_tiled()
  assert hlo.tile_assignment_dimensions() == [2, 4]
  assert hlo.tile_assignment_devices() == [0, 2, 4, 6, 1, 3, 5, 7]
  assert s.devices_indices_map((8, 4))[mesh.devices.flat[0]] == (slice(0, 4), slice(0, 1))
  assert NamedSharding(mesh, P())._to_xla_hlo_sharding(2).is_replicated()


@pytest.mark.parametrize("shape,axis", [((4, 2), 0), ((4, 2), 1), ((4, 2, 4), 2),
                                        ((2, 4), 1)])
def test_pmap_result_sharding(shape, axis):
  x = jnp.arange(int(np.prod(shape))).reshape(shape)
  out = hlox.pmap(lambda v: v * 2, in_axes=axis, axis_name="x")(x)
  n = shape[axis]
  expected = NamedSharding(Mesh(hlox.devices()[:n], "x"), P("x"))
  assert out.sharding == expected
  assert out.sharding._device_assignment == tuple(hlox.devices()[:n])
  np.testing.assert_array_equal(out, np.moveaxis(np.asarray(x), axis, 0) * 2)
  # a result goes into the next pmap (of another axis name) as it is
  again = hlox.pmap(lambda v: v + 1)(out)
  np.testing.assert_array_equal(again, np.moveaxis(np.asarray(x), axis, 0) * 2 + 1)
  assert again.sharding.spec == P("_internal_pmap_axis_name")


def test_pmap_replicated_result_sharding():
  n = len(hlox.local_devices())
  x = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
  out = hlox.pmap(lambda v: hlox.lax.psum(v, "x"), out_axes=None, axis_name="x")(x)
  assert out.sharding == NamedSharding(Mesh(hlox.local_devices(), "x"), P())
  np.testing.assert_allclose(out, x.sum(0))


# --- making arrays ----------------------------------------------------------------------

def test_make_array_from_single_device_arrays_errors():
  x = jnp.arange(10)
  with pytest.raises(TypeError, match="`arrays` argument must be a list or tuple"):
    hlox.make_array_from_single_device_arrays(x.shape, x.sharding, x)
  with pytest.raises(ValueError, match="requires a list of concrete arrays"):
    hlox.jit(lambda v: hlox.make_array_from_single_device_arrays(v.shape, x.sharding,
                                                                   [v]))(x)
  mesh = hlox.make_mesh((4, 2), ("x", "y"))
  with pytest.raises(ValueError, match="`dtype` must be provided"):
    hlox.make_array_from_single_device_arrays((8, 2), NamedSharding(mesh, P("x", "y")), [])
  s = NamedSharding(hlox.make_mesh((2,), ("x",)), P("x"))
  y = hlox.device_put(x, s)
  with pytest.raises(ValueError, match=r"must have one shard each. An argument array had "
                                       r"2 shard\(s\)"):
    hlox.make_array_from_single_device_arrays(y.shape, s, [y, y])
  # the good case still works, from a tuple
  made = hlox.make_array_from_single_device_arrays(
      x.shape, s, tuple(hlox.device_put(np.arange(10)[i], d)
                        for d, i in s.addressable_devices_indices_map((10,)).items()))
  np.testing.assert_array_equal(made, np.arange(10))


@pytest.mark.parametrize("global_shape", [None, (2, 5), {"a": (2, 5)}])
def test_make_array_from_process_local_data_tree(global_shape):
  data = {"a": np.arange(10).reshape(2, 5)}
  out = hlox.make_array_from_process_local_data(hlox.devices()[0], data, global_shape)
  assert set(out) == {"a"}
  np.testing.assert_array_equal(out["a"], data["a"])


def test_make_array_from_process_local_data_spec_over_current_mesh():
  mesh = hlox.make_mesh((2, 1), ("x", "y"))
  data = np.arange(16.0).reshape(4, 4)
  with hlox.sharding.set_mesh(mesh):
    out = hlox.make_array_from_process_local_data(P("x"), data)
  assert out.sharding == NamedSharding(mesh, P("x"))
  np.testing.assert_array_equal(out, data)
  with pytest.raises(ValueError, match="needs a mesh"):
    hlox.make_array_from_process_local_data(P("x"), data)


# --- multihost_utils in one process --------------------------------------------------------

def test_process_allgather_single_process():
  x = jnp.arange(8.0)
  tiled = multihost_utils.process_allgather(x, tiled=True)
  np.testing.assert_array_equal(tiled, np.arange(8.0))
  stacked = multihost_utils.process_allgather({"x": x, "s": 3})
  assert stacked["x"].shape == (1, 8)
  np.testing.assert_array_equal(stacked["x"], np.arange(8.0)[None])
  np.testing.assert_array_equal(stacked["s"], [3])


def test_broadcast_one_to_all_single_process():
  x = jnp.arange(8, dtype=jnp.uint8)
  out = multihost_utils.broadcast_one_to_all(x)
  assert out.dtype == np.uint8 and out.shape == (8,)
  np.testing.assert_array_equal(out, np.arange(8, dtype=np.uint8))
  multihost_utils.sync_global_devices("test")
  multihost_utils.assert_equal({"a": x})


# --- AOT shardings and ShapeDtypeStruct.like --------------------------------------------------

def test_compiled_input_and_output_shardings():
  mesh = hlox.make_mesh((8,), ("x",))
  s = NamedSharding(mesh, P("x"))
  sds = hlox.ShapeDtypeStruct((16,), jnp.float32, sharding=s)
  compiled = hlox.jit(lambda x: x * 2).lower(sds).compile()
  (args, kwargs), out = compiled.input_shardings, compiled.output_shardings
  assert kwargs == {} and len(args) == 1
  assert args[0] == s and out == s
  assert out._to_xla_hlo_sharding(1) == s._to_xla_hlo_sharding(1)
  x = hlox.device_put(np.arange(16.0, dtype=np.float32), s)
  np.testing.assert_array_equal(compiled(x), np.arange(16.0) * 2)
  # an unused argument keeps its place
  unused = hlox.jit(lambda x, y: x).lower(np.arange(8), np.arange(8)).compile()
  (args, _), out = unused.input_shardings, unused.output_shardings
  one = hlox.sharding.SingleDeviceSharding(hlox.devices()[0])
  assert args == (one, one) and out == one


def test_shape_dtype_struct_like_keeps_committed_shardings_only():
  S = hlox.ShapeDtypeStruct
  assert S.like(jnp.array(1.0)).sharding is None and S.like(jnp.array(1.0)).weak_type
  assert not S.like(np.array(1.0)).weak_type
  one = hlox.sharding.SingleDeviceSharding(hlox.devices()[0])
  assert S.like(hlox.device_put(jnp.arange(8), one)).sharding == one
  mesh = hlox.make_mesh((2,), ("x",))
  x = hlox.device_put(jnp.arange(8), NamedSharding(mesh, P("x")))
  assert S.like(x).sharding == NamedSharding(mesh, P("x"))
  specs = []

  @hlox.jit
  def f(a):
    sds = S.like(a)
    specs.append(sds.sharding.spec)
    return jnp.ones(sds.shape, sds.dtype, out_sharding=sds.sharding)
  with hlox.sharding.set_mesh(mesh):
    out = f(x)
  assert specs == [P("x")]
  assert out.sharding.spec == P("x")
  np.testing.assert_array_equal(out, np.ones(8))


def test_mesh_axis_types_must_be_axis_types():
  # As JAX: a TypeError naming the bad axis types (not a mesh that silently has none).
  with pytest.raises(TypeError, match="axis_types passed to Mesh must be of type"):
    hlox.make_mesh((1,), ("x",), axis_types=("Explicit",))
  with pytest.raises(TypeError, match="axis_types passed to AbstractMesh must be of type"):
    hlox.sharding.AbstractMesh((1,), ("x",), axis_types=(1,))
  assert hlox.make_mesh((1,), ("x",)).axis_types == (hlox.sharding.AxisType.Explicit,)
