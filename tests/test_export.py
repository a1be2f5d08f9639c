"""hlox.export (JAX's jax.export): exporting jitted functions, calling them (eagerly, inside
jit, under grad through the exported VJPs), serializing them (in this process and another),
exporting for other platforms, and the errors for bad calls and bad blobs."""
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import export, lax, monitoring, tree_util
from tests.util import run_in_jax

f32 = np.float32


def _f(x, y, *, scale):
  return {"a": jnp.sin(x) * y + scale, "b": (x.sum(), jnp.arange(3) + 1)}


def _args():
  return (np.linspace(-1, 1, 3, dtype=f32), f32(2.0)), {"scale": np.ones(3, f32)}


def _assert_trees_close(actual, expected):
  leaves_a, tree_a = tree_util.tree_flatten(actual)
  leaves_e, tree_e = tree_util.tree_flatten(expected)
  assert tree_a == tree_e
  for a, e in zip(leaves_a, leaves_e):
    assert np.asarray(a).dtype == np.asarray(e).dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6)


def test_export_fields_and_call_match_jit():
  args, kwargs = _args()
  exp = export.export(hlox.jit(_f))(*args, **kwargs)
  assert exp.fun_name == "_f"
  assert exp.in_tree == tree_util.tree_structure((args, kwargs))
  assert [repr(a) for a in exp.in_avals] == [
      "ShapedArray(float32[3])", "ShapedArray(float32[])", "ShapedArray(float32[3])"]
  assert [repr(a) for a in exp.out_avals] == [
      "ShapedArray(float32[3])", "ShapedArray(float32[])", "ShapedArray(int32[3])"]
  assert exp.out_tree == tree_util.tree_structure({"a": 0, "b": (0, 0)})
  assert exp.platforms == (export.default_export_platform(),) == ("cpu",)
  assert exp.nr_devices == 1 and exp.calling_convention_version == 10
  assert exp.ordered_effects == () and exp.unordered_effects == ()
  assert exp.in_shardings_hlo == (None,) * 3 and exp.out_shardings_hlo == (None,) * 3
  assert exp.in_shardings_jax(None) == (None,) * 3
  assert exp.module_kept_var_idx == (0, 1, 2) and not exp.uses_global_constants
  assert exp.mlir_module_serialized[:2] == b"ML"  # MLIR bytecode
  assert re.search(r"func.func public @main\(%arg0: tensor<3xf32>", exp.mlir_module())
  assert str(exp) == "Exported(fun_name=_f, ...)"
  _assert_trees_close(exp.call(*args, **kwargs), hlox.jit(_f)(*args, **kwargs))


def test_unused_arguments_are_dropped_and_constants_kept():
  w = np.arange(6, dtype=f32).reshape(2, 3)
  exp = export.export(hlox.jit(lambda x, unused: jnp.tanh(w @ x)))(np.ones(3, f32), 1.0)
  assert exp.module_kept_var_idx == (0,)
  x = np.linspace(0, 1, 3, dtype=f32)
  np.testing.assert_allclose(exp.call(x, 5.0), np.tanh(w @ x), rtol=1e-6)


def test_call_inside_jit_is_one_program():
  exp = export.export(hlox.jit(lambda x: 2 * x * x))(hlox.ShapeDtypeStruct((), f32))
  def g(x):
    return exp.call(x) + exp.call(x * 2)
  assert str(hlox.make_jaxpr(g)(f32(1))).count("call_exported[exported=Exported(") == 2
  jitted = hlox.jit(g)
  text = jitted.lower(f32(1)).as_text()
  assert text.count("func.func private @call_exported_") == 1  # spliced once, called twice
  with monitoring.count_events() as counts:
    out = jitted(f32(3))
    jitted(f32(4))
  assert counts["compile"] == 1
  assert float(out) == 2 * 9 + 2 * 36


def test_weak_type_and_guide_example():
  exp = export.export(hlox.jit(lax.cos))(1.0)
  assert exp.in_avals[0].weak_type and exp.out_avals[0].weak_type
  out = exp.call(1.0)
  assert out.weak_type and out.dtype == f32
  np.testing.assert_allclose(out, np.cos(1.0), rtol=1e-6)
  exp = export.export(hlox.jit(lambda x: 2 * x * x))(hlox.ShapeDtypeStruct((), f32))
  rehydrated = export.deserialize(exp.serialize())
  assert float(3.0 * rehydrated.call(1.0 * 4.0)) == 96.0


def test_grad_through_serialized_vjps():
  f = lambda x: 7 * x * x * x
  blob = export.export(hlox.jit(f))(1.0).serialize(vjp_order=3)
  rf = export.deserialize(blob).call
  np.testing.assert_allclose(rf(0.1), 0.007, rtol=1e-5)
  np.testing.assert_allclose(hlox.grad(rf)(0.1), 0.21, rtol=1e-5)
  np.testing.assert_allclose(hlox.grad(hlox.grad(rf))(0.1), 4.2, rtol=1e-5)
  np.testing.assert_allclose(hlox.grad(hlox.grad(hlox.grad(rf)))(0.1), 42.0, rtol=1e-5)
  with pytest.raises(ValueError, match="No VJP is available"):
    hlox.grad(hlox.grad(hlox.grad(hlox.grad(rf))))(0.1)
  with pytest.raises(ValueError, match="No VJP is available"):
    hlox.grad(export.deserialize(export.export(hlox.jit(f))(1.0).serialize()).call)(0.1)


def test_vjp_with_integer_arguments_and_results():
  h = lambda x, i: (x * i, i + 1)
  exp = export.export(hlox.jit(h))(np.ones(3, f32), np.int32(2))
  vjp = exp.vjp()
  assert vjp.in_avals[3].dtype == hlox.dtypes.float0
  assert [a.dtype for a in vjp.out_avals] == [np.dtype(f32), hlox.dtypes.float0]
  x = np.array([1.0, 2.0, 3.0], f32)
  g = hlox.jit(hlox.grad(lambda x: (exp.call(x, np.int32(3))[0] ** 2).sum()))(x)
  np.testing.assert_allclose(g, 2 * 9 * x)


def test_grad_of_pytree_call_matches_jit():
  args, kwargs = _args()
  exp = export.export(hlox.jit(_f))(*args, **kwargs)
  loss = lambda fn: (lambda x, y: (fn(x, y, scale=kwargs["scale"])["a"] ** 2).sum())
  expected = hlox.grad(loss(_f), argnums=(0, 1))(*args)
  _assert_trees_close(hlox.grad(loss(exp.call), argnums=(0, 1))(*args), expected)
  _assert_trees_close(hlox.jit(hlox.grad(loss(exp.call), argnums=(0, 1)))(*args), expected)


Point = collections.namedtuple("Point", ["x", "y"])
export.register_namedtuple_serialization(Point, serialized_name="tests.test_export.Point")


class Box:
  def __init__(self, label, value):
    self.label, self.value = label, value


tree_util.register_pytree_node(Box, lambda b: ((b.value,), b.label),
                               lambda label, children: Box(label, *children))
export.register_pytree_node_serialization(
    Box, serialized_name="tests.test_export.Box",
    serialize_auxdata=lambda label: label.encode(),
    deserialize_auxdata=lambda raw: raw.decode())


def test_serialize_round_trips_every_field():
  def f(p, box, od):
    return Box(box.label, p.x * box.value + od["k"]), Point(p.y, p.x)
  args = (Point(np.ones(2, f32), np.int32(3)), Box("lbl", np.full(2, 2.0, f32)),
          collections.OrderedDict(k=np.ones(2, f32)))
  exp = export.export(hlox.jit(f), disabled_checks=[
      export.DisabledSafetyCheck.custom_call("some_target")])(*args)
  back = export.deserialize(exp.serialize())
  for field in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "nr_devices",
                "platforms", "ordered_effects", "unordered_effects", "disabled_safety_checks",
                "mlir_module_serialized", "calling_convention_version",
                "module_kept_var_idx", "uses_global_constants", "in_shardings_hlo",
                "out_shardings_hlo", "_in_named_shardings", "_out_named_shardings"):
    assert getattr(back, field) == getattr(exp, field), field
  assert back.mlir_module() == exp.mlir_module()
  box, point = back.call(*args)
  assert box.label == "lbl" and isinstance(point, Point)
  np.testing.assert_allclose(box.value, np.full(2, 3.0))
  assert int(point.x) == 3


def test_unregistered_node_types_cannot_be_serialized():
  Unregistered = collections.namedtuple("Unregistered", ["a"])
  exp = export.export(hlox.jit(lambda t: t.a))(Unregistered(np.ones(2, f32)))
  with pytest.raises(ValueError, match="Cannot serialize PyTreeDef containing an "
                                       "unregistered type"):
    exp.serialize()
  with pytest.raises(ValueError, match="Duplicate serialization registration"):
    export.register_namedtuple_serialization(Point, serialized_name="other")
  with pytest.raises(ValueError, match="types other than `collections.namedtuple`"):
    export.register_namedtuple_serialization(dict, serialized_name="dict")


def test_corrupt_and_foreign_blobs_are_refused():
  blob = export.export(hlox.jit(jnp.sin))(np.ones(2, f32)).serialize()
  with pytest.raises(ValueError, match="not a serialized hlox Exported"):
    export.deserialize(b"garbage")
  flipped = bytearray(blob)
  flipped[-5] ^= 0xFF
  with pytest.raises(ValueError, match="corrupt \\(checksum mismatch\\)"):
    export.deserialize(flipped)
  with pytest.raises(ValueError, match="corrupt"):
    export.deserialize(blob[:len(blob) // 2])
  future = bytearray(blob)
  future[8:10] = (99).to_bytes(2, "little")
  with pytest.raises(ValueError, match="format version 99 is not supported"):
    export.deserialize(future)
  np.testing.assert_allclose(export.deserialize(blob).call(np.ones(2, f32)), np.sin(1.0),
                             rtol=1e-6)


def test_bad_calls_raise_jax_errors():
  exp = export.export(hlox.jit(lambda x, y: x + y))(np.ones(3, f32), 2.0)
  with pytest.raises(ValueError, match=re.escape(
      "Shape mismatch for args[0].shape[0] (expected same constant): expected (3,) and "
      "called with (4,)")):
    exp.call(np.ones(4, f32), 2.0)
  with pytest.raises(ValueError, match=re.escape(
      "Dtype mismatch for args[0]: expected float32 and called with int32")):
    exp.call(np.ones(3, np.int32), 2.0)
  with pytest.raises(ValueError, match=re.escape(
      "Rank mismatch for args[0]: expected (3,) and called with (3, 1)")):
    hlox.jit(exp.call)(np.ones((3, 1), f32), 2.0)
  with pytest.raises(ValueError, match=re.escape(
      "args is a tuple of length 1 in the invocation and a tuple of length 2 when "
      "exported, so the lengths do not match")):
    exp.call(np.ones(3, f32))
  with pytest.raises(ValueError, match="must be the result of `jit`"):
    export.export(lambda x: x)
  with pytest.raises(ValueError, match="platforms must be a non-empty sequence"):
    export.export(hlox.jit(jnp.sin), platforms=[])(1.0)


def test_export_for_other_platforms():
  exp = export.export(hlox.jit(lax.cos), platforms=["tpu"])(1.0)
  assert exp.platforms == ("tpu",)
  with pytest.raises(ValueError, match=re.escape(
      "Function 'cos' was exported for platforms '('tpu',)' but it is used on "
      "'('cpu',)'.")):
    exp.call(1.0)
  unsafe = export.export(hlox.jit(lax.cos), platforms=["cuda"],
                         disabled_checks=[export.DisabledSafetyCheck.platform()])(1.0)
  np.testing.assert_allclose(unsafe.call(1.0), np.cos(1.0), rtol=1e-6)
  multi = export.export(hlox.jit(lax.cos), platforms=["tpu", "cpu", "cuda"])(1.0)
  assert multi.uses_global_constants
  assert 'jax.global_constant = "_platform_index"' in multi.mlir_module()
  np.testing.assert_allclose(multi.call(1.0), np.cos(1.0), rtol=1e-6)
  np.testing.assert_allclose(export.deserialize(multi.serialize()).call(1.0), np.cos(1.0),
                             rtol=1e-6)


def test_multi_platform_lowerings_that_differ():
  # The Cholesky factorization lowers to LAPACK on the CPU and to XLA's own op on TPUs: the
  # module holds both, picked by the platform index.
  a = np.array([[4.0, 2.0], [2.0, 3.0]], f32)
  exp = export.export(hlox.jit(jnp.linalg.cholesky), platforms=["tpu", "cpu"])(a)
  text = exp.mlir_module()
  assert "stablehlo.case" in text and "lapack_spotrf_ffi" in text
  np.testing.assert_allclose(exp.call(a), np.linalg.cholesky(a), rtol=1e-6)


def _custom_call_primitive():
  from jaxlib.mlir import ir
  from jaxlib.mlir.dialects import stablehlo as hlo
  from hlox.extend import core
  from hlox.interpreters import mlir
  prim = core.Primitive("unstable_op")
  prim.def_abstract_eval(lambda x: x)
  mlir.register_lowering(prim, lambda ctx, x: hlo.CustomCallOp(
      [x.type], [x], call_target_name=ir.StringAttr.get("my_unstable_target")).results)
  return prim


def test_custom_calls_without_guarantees_need_a_disabled_check():
  prim = _custom_call_primitive()
  with pytest.raises(ValueError, match="Cannot serialize code with custom calls whose "
                                       "targets have no compatibility guarantees"):
    export.export(hlox.jit(prim.bind))(1.0)
  check = export.DisabledSafetyCheck.custom_call("my_unstable_target")
  assert check.is_custom_call() == "my_unstable_target"
  assert export.DisabledSafetyCheck.platform().is_custom_call() is None
  exp = export.export(hlox.jit(prim.bind), disabled_checks=[check])(1.0)
  assert exp.disabled_safety_checks == (check,)
  export.export(hlox.jit(prim.bind),
                disabled_checks=[export.DisabledSafetyCheck.custom_call("ALL")])(1.0)


_CHILD = """
import json, sys
import numpy as np
from hlox import export
exp = export.deserialize(open(sys.argv[1], "rb").read())
import hlox
out = exp.call(np.arange(3, dtype=np.float32), 2.0, scale=np.ones(3, np.float32))
g = hlox.grad(lambda x: exp.call(x, 2.0, scale=np.ones(3, np.float32))["a"].sum())(
    np.arange(3, dtype=np.float32))
print(json.dumps({"a": np.asarray(out["a"]).tolist(), "b1": np.asarray(out["b"][1]).tolist(),
                  "fun_name": exp.fun_name, "grad": np.asarray(g).tolist()}))
"""


def test_serialized_blob_runs_in_another_process(tmp_path):
  args, kwargs = _args()
  blob = export.export(hlox.jit(_f))(*args, **kwargs).serialize(vjp_order=1)
  path = tmp_path / "f.hloxexp"
  path.write_bytes(blob)
  env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
  out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                       text=True, timeout=300, env=env)
  assert out.returncode == 0, out.stderr[-3000:]
  got = json.loads(out.stdout.strip().splitlines()[-1])
  x = np.arange(3, dtype=f32)
  assert got["fun_name"] == "_f"
  np.testing.assert_allclose(got["a"], np.sin(x) * 2 + 1, rtol=1e-6)
  assert got["b1"] == [1, 2, 3]
  np.testing.assert_allclose(got["grad"], 2 * np.cos(x), rtol=1e-6)


def test_calling_convention_constants_and_default_platform():
  assert export.minimum_supported_calling_convention_version == 9
  assert export.maximum_supported_calling_convention_version == 10
  assert export.default_export_platform() == "cpu"
  with pytest.raises(ValueError, match="Function to be exported must be the result of"):
    export.export(_f)
  with pytest.raises(ValueError, match="must be an export.Exported"):
    export.Exported.call("not an Exported")


# Programs exported by JAX and by hlox: the same types in and out and the same results.
_ORACLE = {
    "pytree": ("lambda x, y: {'s': jnp.sin(x) * y, 'n': (x.sum(), jnp.argmax(x))}",
               "(np.linspace(-1, 1, 5, dtype=np.float32), 2.0)"),
    "matmul": ("lambda a, b: jnp.tanh(a @ b).astype(jnp.float16)",
               "(np.arange(6, dtype=np.float32).reshape(2, 3) / 6, np.ones((3, 2), np.float32))"),
    "weak": ("lambda x: lax.cos(x) + 1", "(1.0,)"),
    "unused": ("lambda x, y, z: x * z", "(np.ones(2, np.int32), 3.0, np.int32(4))"),
}

_ORACLE_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import export, lax
out = {}
for name, (fun, args) in json.loads(sys.stdin.read()).items():
  args = eval(args)
  exp = export.export(jax.jit(eval(fun)))(*args)
  res = jax.tree_util.tree_leaves(exp.call(*args))
  out[name] = {"in": [repr(a) for a in exp.in_avals], "out": [repr(a) for a in exp.out_avals],
               "kept": list(exp.module_kept_var_idx),
               "res": [np.asarray(r, np.float64).tolist() for r in res]}
print(json.dumps(out))
"""


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
def test_matches_jax_export():
  expected = run_in_jax(_ORACLE_RUNNER, _ORACLE)
  for name, (fun, args) in _ORACLE.items():
    args = eval(args)
    exp = export.export(hlox.jit(eval(fun)))(*args)
    res = tree_util.tree_leaves(exp.call(*args))
    assert [repr(a) for a in exp.in_avals] == expected[name]["in"], name
    assert [repr(a) for a in exp.out_avals] == expected[name]["out"], name
    assert list(exp.module_kept_var_idx) == expected[name]["kept"], name
    for r, e in zip(res, expected[name]["res"]):
      np.testing.assert_allclose(np.asarray(r, np.float64), e, rtol=1e-3)


def test_symbolic_shapes_parse_for_export():
  assert not export.is_symbolic_dim(3)
  b, four = export.symbolic_shape("b, 4")
  assert export.is_symbolic_dim(b) and four == 4 and str(2 * b + 1) == "2*b + 1"
  spec, = export.symbolic_args_specs((np.ones(3, np.float32),), "b")
  assert str(spec.shape[0]) == "b" and spec.dtype == np.float32


def test_sharded_export_runs_on_other_devices_and_meshes():
  from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P
  devices = hlox.devices()[:2]
  mesh = Mesh(devices, ("x",))
  a = np.arange(16 * 4, dtype=f32).reshape(16, 4)
  f = hlox.jit(lambda b: b * 2.0, in_shardings=(NamedSharding(mesh, P("x", None)),))
  exp = export.export(f)(a)
  assert exp.nr_devices == 2
  assert exp.in_shardings_jax(mesh)[0].spec == P("x", None)
  back = export.deserialize(exp.serialize())
  assert back.nr_devices == 2 and back._in_named_shardings == exp._in_named_shardings
  with pytest.raises(ValueError, match="was exported for 2 devices and is called in a "
                                       "context with 1 devices"):
    exp.call(a)
  run_mesh = Mesh(devices[::-1], ("y",))  # other devices, another axis name
  arg = hlox.device_put(a, NamedSharding(run_mesh, P()))
  np.testing.assert_allclose(back.call(arg), 2 * a)
  with pytest.raises(ValueError, match="does not match the mesh used for export"):
    exp.in_shardings_jax(Mesh(devices, ("z",)))


def test_exported_types_carry_explicit_splits():
  from hlox.sharding import AxisType, NamedSharding, PartitionSpec as P
  mesh = hlox.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
  amesh = mesh.abstract_mesh
  with hlox.sharding.use_mesh(mesh):
    a = hlox.device_put(np.arange(16.).reshape(8, 2), NamedSharding(mesh, P("x", None)))
    b = hlox.device_put(np.arange(16.).reshape(2, 8), NamedSharding(mesh, P(None, "y")))
    exp = export.export(hlox.jit(lambda x, y: x @ y))(a, b)
    assert exp.in_avals[0].sharding == NamedSharding(amesh, P("x", None))
    assert exp.in_avals[1].sharding == NamedSharding(amesh, P(None, "y"))
    assert exp.out_avals[0].sharding == NamedSharding(amesh, P("x", "y"))
    assert str(exp.in_avals[0]) == "float32[8@x,2]"
    np.testing.assert_allclose(exp.call(a, b), np.asarray(a) @ np.asarray(b))


def test_calling_convention_version_option():
  assert hlox.config.jax_export_calling_convention_version == \
      export.maximum_supported_calling_convention_version
  spec = hlox.ShapeDtypeStruct(export.symbolic_shape("w, h"), np.float32)
  x = np.arange(30, dtype=np.float32).reshape((5, 6))
  try:
    for v in (export.minimum_supported_calling_convention_version - 1,
              export.maximum_supported_calling_convention_version + 1):
      hlox.config.update("jax_export_calling_convention_version", v)
      with pytest.raises(ValueError, match=f"requested export calling convention version {v}"):
        export.export(hlox.jit(jnp.sin))(spec)
    hlox.config.update("jax_export_calling_convention_version",
                       export.minimum_supported_calling_convention_version)
    exp = export.export(hlox.jit(jnp.sin))(spec)
    assert exp.calling_convention_version == export.minimum_supported_calling_convention_version
    np.testing.assert_allclose(exp.call(x), np.sin(x), rtol=1e-6)
  finally:
    hlox.config.update("jax_export_calling_convention_version",
                       export.maximum_supported_calling_convention_version)


def test_multi_platform_donation_needs_every_platform_or_none_to_donate():
  f = hlox.jit(jnp.sin, donate_argnums=(0,))
  x = np.arange(3, dtype=np.float32)
  exp = export.export(f, platforms=["cpu", "tpu"])(x)
  np.testing.assert_allclose(hlox.jit(lambda x: x + exp.call(x))(x), x + np.sin(x), rtol=1e-6)
  with pytest.raises(NotImplementedError, match="either all or no lowering platforms"):
    export.export(f, platforms=["cpu", "tpu", "other"])(x)
  assert export.export(hlox.jit(jnp.sin), platforms=["cpu", "other"])(x).platforms == \
      ("cpu", "other")
