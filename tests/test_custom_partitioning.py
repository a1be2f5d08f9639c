"""hlox.experimental.custom_partitioning: the function as written where nothing is
partitioned; over a mesh, a HloxCustomSPMDPartitioning call laid out by its sharding rule whose
``partition`` callback gives each device's program (collectives included)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental.custom_partitioning import (SdyShardingRule, ArrayMapping,
                                                   custom_partitioning)
from hlox.sharding import NamedSharding, PartitionSpec as P

f32 = np.float32


def _doubling():
  """``f(x) = x``, whose partitioned program doubles (so the test sees which ran)."""
  seen = []

  def partition(mesh, arg_shapes, result_shape):
    seen.append((arg_shapes[0].sharding, result_shape.sharding, arg_shapes[0].shape))
    return mesh, lambda x: x * 2, arg_shapes[0].sharding, (arg_shapes[0].sharding,)

  @custom_partitioning
  def f(x):
    return x
  f.def_partition(partition=partition, sharding_rule="i j -> i j")
  return f, seen


def test_unpartitioned_calls_run_the_function():
  f, seen = _doubling()
  x = np.arange(12, dtype=f32).reshape(3, 4)
  np.testing.assert_array_equal(f(x), x)
  np.testing.assert_array_equal(hlox.jit(f)(x), x)
  assert seen == []


def test_partition_callback_gives_each_devices_program():
  f, seen = _doubling()
  mesh = hlox.make_mesh((4, 2), ("x", "y"))
  x = np.arange(32 * 16, dtype=f32).reshape(32, 16)
  with hlox.set_mesh(mesh):
    jit_f = hlox.jit(lambda a: a + f(a), in_shardings=P(None, "x"), out_shardings=P("x"))
    text = jit_f.lower(hlox.device_put(x, P(None, "x"))).as_text()
    assert "custom_call @HloxCustomSPMDPartitioning" in text
    assert "sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=32, j=16}" in text
    out = jit_f(hlox.device_put(x, P(None, "x")))
  np.testing.assert_array_equal(out, 3 * x)
  arg_sharding, result_sharding, shape = seen[-1]
  assert arg_sharding.spec == P(None, "x") and result_sharding.spec == P(None, "x")
  assert shape == (32, 16)


def test_pytree_arguments_static_arguments_and_collectives():
  def partition(scale, mesh, arg_shapes, result_shape):
    def lower_fn(xs):
      x, y = xs
      return lax.psum(jnp.sum(x + y), "x") * scale
    shardings = hlox.tree.map(lambda s: s.sharding, arg_shapes)
    return mesh, lower_fn, NamedSharding(mesh, P()), shardings

  @custom_partitioning
  def g(xs, scale):
    x, y = xs
    return jnp.sum(x + y) * scale
  g = custom_partitioning(g.fun, static_argnums=(1,))
  g.def_partition(partition, sharding_rule=SdyShardingRule(
      (ArrayMapping("i", "j"), ArrayMapping("i", "j")), (ArrayMapping(),)))
  mesh = hlox.make_mesh((4,), ("x",))
  x = np.ones((8, 16), f32)
  with hlox.set_mesh(mesh):
    xs = hlox.device_put(x, P(None, "x"))
    got = hlox.jit(lambda a: g((a, a), 3.0), in_shardings=P(None, "x"))(xs)
  assert float(got) == 2 * 8 * 16 * 3.0
  assert float(g((x, x), 3.0)) == 2 * 8 * 16 * 3.0


def test_errors_as_jax():
  @custom_partitioning
  def f(x):
    return x
  with pytest.raises(ValueError, match="Unknown keyword arguments"):
    f.def_partition(lambda *a: None, sharding_rule=None, i=2)
  f.def_partition(lambda *a: None, infer_sharding_from_operands=lambda *a: None)
  with pytest.raises(NotImplementedError, match="provide sharding_rule to migrate to Shardy"):
    f(np.ones(3, f32))


def test_partitioner_registration_imports_no_jax():
  code = textwrap.dedent("""
      import sys
      class Block:
          def find_spec(self, name, path=None, target=None):
              if name == "jax" or name.startswith("jax."):
                  raise ImportError(name)
      sys.meta_path.insert(0, Block())
      import numpy as np, hlox
      from hlox.sharding import PartitionSpec as P
      from hlox.experimental.custom_partitioning import custom_partitioning
      @custom_partitioning
      def f(x):
          return x
      f.def_partition(lambda mesh, a, r: (mesh, lambda x: -x, a[0].sharding,
                                          (a[0].sharding,)), sharding_rule="i -> i")
      with hlox.set_mesh(hlox.make_mesh((2,), ("x",))):
          x = hlox.device_put(np.arange(4.0, dtype=np.float32), P("x"))
          print(np.asarray(hlox.jit(f)(x)).tolist(), "jax" in sys.modules)
  """)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.strip().splitlines()[-1] == "[-0.0, -1.0, -2.0, -3.0] False"


def test_compound_factors_and_explicit_result_types():
  def partition(mesh, arg_shapes, result_shape):
    shardings = hlox.tree.map(lambda s: s.sharding, arg_shapes)
    return mesh, lambda x, y: x.reshape((4,)) + y, result_shape.sharding, shardings

  @custom_partitioning
  def f(x, y):
    return x.reshape((8,)) + y
  f.def_partition(partition, sharding_rule="(i k) j, (i k j) -> (i k j)", i=2, k=2,
                  need_replication_factors=("k",))
  mesh = hlox.make_mesh((2, 4), ("x", "y"))
  x = hlox.device_put(np.arange(8).reshape(4, 2), NamedSharding(mesh, P("x", None)))
  y = hlox.device_put(np.arange(8), NamedSharding(mesh, P("x")))
  text = hlox.jit(f).lower(x, y).as_text()
  assert ("#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=2} "
          "need_replication={j}, custom>") in text
  out = hlox.jit(f)(x, y)
  np.testing.assert_array_equal(out, np.arange(8) * 2)
  np.testing.assert_array_equal(f(x, y), np.arange(8) * 2)
  assert out.sharding == NamedSharding(mesh, P("x"))
  with pytest.raises(ValueError, match="do not make up a dimension of size 4"):
    g = custom_partitioning(f.fun)
    g.def_partition(partition, sharding_rule="(i k) j, (i k j) -> (i k j)", i=2, k=3)
    hlox.jit(g)(x, y)
