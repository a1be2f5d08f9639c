"""Reprs of meshes, specs and shardings as JAX prints them, and ``PartitionSpec``'s
``unreduced`` / ``reduced`` axes (stored, checked, and laid out by ``device_put``)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import hlox
from hlox.sharding import (AbstractMesh, AxisType, NamedSharding, PartitionSpec as P,
                           SingleDeviceSharding)


@pytest.fixture
def mesh():
  return hlox.make_mesh((4, 2), ("X", "Y"))


def test_sharding_reprs(mesh):
  assert repr(NamedSharding(mesh, P("X", "Y"))) == (
      "NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit)), "
      "spec=P('X', 'Y'), memory_kind=device)")
  d = hlox.devices()[0]
  assert repr(SingleDeviceSharding(d)) == (
      "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)")
  assert NamedSharding(mesh, P()).memory_kind == "device"
  assert SingleDeviceSharding(d).memory_kind == "device"
  assert repr(mesh) == ("Mesh(axis_sizes=(4, 2), axis_names=('X', 'Y'), "
                        "axis_types=(Explicit, Explicit))")
  assert repr(AbstractMesh((4, 2), ("X", "Y"))) == (
      "AbstractMesh('X': 4, 'Y': 2, axis_types=(Auto, Auto))")
  with hlox.sharding.set_mesh(mesh):
    assert repr(hlox.sharding.get_abstract_mesh()) == (
        "AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit), device_kind=cpu, "
        "num_cores=None, platform=cpu)")


def test_spec_reprs():
  assert [repr(s) for s in (P(), P(None), P(("X", "Y")), P(("X",)), P(()))] == [
      "P()", "P(None,)", "P(('X', 'Y'),)", "P('X',)", "P(None,)"]
  assert repr(P("X", None, unreduced={"Y"})) == "P('X', None, unreduced={'Y'})"
  assert str(P(unreduced={"Y"})) == "P(unreduced={'Y'})"
  assert repr(P("X", reduced={"Y"}, unreduced={"Z"})) == (
      "P('X', unreduced={'Z'}, reduced={'Y'})")


def test_spec_unreduced_fields_and_errors(mesh):
  s = P("X", None, unreduced={"Y"})
  assert s.unreduced == frozenset({"Y"}) and s.reduced == frozenset()
  assert s.partitions == ("X", None) and len(s) == 2
  assert s == P("X", None, unreduced={"Y"}) and hash(s) == hash(P("X", unreduced={"Y"}))
  assert s != P("X", None) and P("X", reduced={"Y"}) != s
  assert pickle.loads(pickle.dumps(s)) == s
  with pytest.raises(ValueError, match="partitions cannot overlap with unreduced"):
    P("X", unreduced={"X"})
  with pytest.raises(TypeError, match="should of type `frozenset` or `set`"):
    P("X", unreduced="Y")
  with pytest.raises(ValueError, match="cannot overlap"):
    P(unreduced={"Y"}, reduced={"Y"})
  with pytest.raises(ValueError, match="Please use spec.partitions"):
    s[0]
  with pytest.raises(ValueError, match="Please use \\*spec.partitions"):
    list(s)
  with pytest.raises(ValueError, match="Unreduced axes Z is not found"):
    NamedSharding(mesh, P("X", unreduced={"Z"}))
  auto = hlox.make_mesh((4, 2), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
  with pytest.raises(ValueError, match="of type `Explicit`"):
    NamedSharding(auto, P("X", unreduced={"Y"}))


def _shards(y):
  return {s.device.id: np.asarray(s.data).tolist() for s in y.addressable_shards}


def test_device_put_unreduced_from_host(mesh):
  x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
  y = hlox.device_put(x, NamedSharding(mesh, P("X", None, unreduced={"Y"})))
  assert str(y.sharding.spec) == "P('X', None, unreduced={'Y'})"
  assert not y.is_fully_replicated
  shards = _shards(y)
  for i in range(4):  # the device at Y=0 holds the block, the one at Y=1 zeros
    assert shards[2 * i] == x[2 * i:2 * i + 2].tolist()
    assert shards[2 * i + 1] == [[0.0] * 4] * 2
  assert repr(y).startswith("Array(shape=(8, 4), dtype=float32, sharding=NamedSharding(")
  with pytest.raises(NotImplementedError):
    np.asarray(y)


def test_device_put_unreduced_keeps_pieces(mesh):
  x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
  src = hlox.device_put(x, NamedSharding(mesh, P("X", "Y")))
  y = hlox.device_put(src, NamedSharding(mesh, P("X", None, unreduced={"Y"})))
  shards = _shards(y)
  for i in range(4):  # each device keeps its own columns, zeros in the others
    rows = x[2 * i:2 * i + 2]
    assert shards[2 * i] == np.concatenate([rows[:, :2], 0 * rows[:, 2:]], 1).tolist()
    assert shards[2 * i + 1] == np.concatenate([0 * rows[:, :2], rows[:, 2:]], 1).tolist()
    assert (np.asarray(shards[2 * i]) + np.asarray(shards[2 * i + 1]) == rows).all()


_ORACLE = r"""
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
if sys.argv[1] == "hlox":
  import hlox as jax
  from hlox.sharding import NamedSharding, SingleDeviceSharding, AbstractMesh, PartitionSpec as P
else:
  import jax
  from jax.sharding import NamedSharding, SingleDeviceSharding, AbstractMesh, PartitionSpec as P
mesh = jax.make_mesh((4, 2), ("X", "Y"))
print(repr(NamedSharding(mesh, P("X", "Y"))), repr(SingleDeviceSharding(jax.devices()[0])))
print(repr(mesh), str(mesh), repr(AbstractMesh((4, 2), ("X", "Y"))))
for s in [P(), P(None), P(("X", "Y")), P(("X",)), P("X", None, unreduced={"Y"}),
          P(reduced={"Y"})]:
  print(repr(s), s.partitions, sorted(s.unreduced), sorted(s.reduced))
x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
for src in [None, P("X", "Y"), P(None, "Y"), P("Y", None), P()]:
  v = x if src is None else jax.device_put(x, NamedSharding(mesh, src))
  y = jax.device_put(v, NamedSharding(mesh, P("X", None, unreduced={"Y"})))
  print(src, [(s.device.id, np.asarray(s.data).tolist()) for s in y.addressable_shards])
with jax.set_mesh(mesh):
  print(jax.sharding.get_abstract_mesh())
"""


@pytest.mark.jax_oracle
def test_matches_jax():
  pytest.importorskip("jax")
  run = lambda lib: subprocess.run([sys.executable, "-c", _ORACLE, lib], capture_output=True,
                                   text=True, check=True, env=dict(os.environ)).stdout
  assert run("hlox") == run("jax")


def test_visualize_layout(mesh, capsys):
  x = hlox.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("X", "Y")))
  hlox.debug.visualize_array_sharding(x, use_color=False)
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == "┌" + "─" * 7 + "┬" + "─" * 7 + "┐"
  assert lines[1] == "│ CPU 0 │ CPU 1 │"
  assert len(lines) == 9
  v = hlox.device_put(np.zeros(16, np.float32), NamedSharding(mesh, P()))
  hlox.debug.visualize_array_sharding(v)
  assert capsys.readouterr().out.splitlines()[1] == "│CPU 0,1,2,3,4,5,6,7│"


_VISUALIZE = r"""
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
if sys.argv[1] == "hlox":
  import hlox as jax
  from hlox.sharding import NamedSharding, PartitionSpec as P
else:
  import jax
  from jax.sharding import NamedSharding, PartitionSpec as P
m, m2, m8 = (jax.make_mesh(s, n) for s, n in [((4, 2), ("X", "Y")), ((2, 4), ("x", "y")), ((8,), ("a",))])
for shape, mesh, spec in [((8, 4), m, P("X", "Y")), ((8, 4), m, P("Y", "X")), ((8, 4), m, P("X")),
                          ((8, 4), m, P()), ((8, 8), m2, P("x", "y")), ((16,), m8, P("a")),
                          ((16,), m, P("X")), ((32, 8), m2, P("y", "x"))]:
  x = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, spec))
  jax.debug.visualize_array_sharding(x, use_color=False)
"""


@pytest.mark.jax_oracle
def test_visualize_matches_jax():
  pytest.importorskip("jax")
  rich = "/tmp/survey19/pylib"
  env = dict(os.environ)
  try:
    import rich as _  # noqa: F401
  except ImportError:
    if not os.path.isdir(os.path.join(rich, "rich")):
      pytest.skip("JAX draws these tables with rich, which is not installed")
    env["PYTHONPATH"] = os.pathsep.join([env.get("PYTHONPATH", ""), rich])
  run = lambda lib: subprocess.run([sys.executable, "-c", _VISUALIZE, lib], capture_output=True,
                                   text=True, check=True, env=env).stdout
  assert run("hlox") == run("jax")
