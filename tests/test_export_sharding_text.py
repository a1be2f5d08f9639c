"""Shardings in exported and lowered modules, as JAX writes them: only arguments given a
layout carry ``sdy.sharding``, jit's ``out_shardings`` are the results' attributes, the
exported VJP is laid out as its primal, and calling an exported function constrains its
arguments and results to the exported layouts over the exported mesh."""
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import export
from hlox.config import config
from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P

f32 = np.float32


def _main_attrs(text):
  """(arg0 attributes, arg1 attributes, result attributes) of a VJP's ``main``."""
  return re.search(r"func.func public @main\(%arg0: tensor<10x20xf32> (.*), "
                   r"%arg1: tensor<20x10xf32> (.*)\) -> \(tensor<10x20xf32> (.*)",
                   text).groups()


@pytest.mark.parametrize("in_sharded", [False, True])
@pytest.mark.parametrize("out_sharded", [False, True])
def test_exported_vjp_is_laid_out_as_its_primal(in_sharded, out_sharded):
  mesh = Mesh(hlox.devices()[:2], "d")
  kwargs = {}
  if in_sharded:
    kwargs["in_shardings"] = NamedSharding(mesh, P(None, "d"))
  if out_sharded:
    kwargs["out_shardings"] = NamedSharding(mesh, P("d", None))
  x = np.arange(200, dtype=f32).reshape(10, 20)
  exp = export.export(hlox.jit(lambda x: jnp.sin(x.T), **kwargs))(x)
  assert (exp.out_shardings_jax()[0] is not None) == out_sharded
  vjp = exp.vjp()
  arg0, arg1, res = _main_attrs(vjp.mlir_module())
  in_attr = '#sdy.sharding<@mesh, [{}, {"d"}]>'
  out_attr = '#sdy.sharding<@mesh, [{"d"}, {}]>'
  assert (in_attr in arg0) == in_sharded and (in_attr in res) == in_sharded
  assert (out_attr in arg1) == out_sharded
  if not in_sharded:
    assert "sdy.sharding" not in arg0 and "sdy.sharding" not in res
  if not out_sharded:
    assert "sdy.sharding" not in arg1
  assert vjp.nr_devices == (2 if in_sharded or out_sharded else 1)
  # the exported VJP (and its VJP) compute the right values
  call_mesh = Mesh(hlox.devices()[:vjp.nr_devices], "e")
  whole = NamedSharding(call_mesh, P())
  got = hlox.jit(vjp.call, in_shardings=(whole, whole))(x, x.T)
  np.testing.assert_allclose(got[0], np.cos(x) * x, rtol=1e-5)
  vjp2 = vjp.vjp()
  got2 = hlox.jit(vjp2.call, in_shardings=(whole,) * 3)(x, x.T, x)
  np.testing.assert_allclose(got2[1], (np.cos(x) * x).T, rtol=1e-5)


def test_lowered_text_annotates_given_layouts_only():
  mesh = Mesh(hlox.devices()[:2], "d")
  s = NamedSharding(mesh, P("d"))
  x = np.ones((4, 3), f32)
  text = hlox.jit(lambda x: hlox.lax.with_sharding_constraint(x * 2, s)).lower(x).as_text()
  assert "sdy.sharding_constraint" in text
  # neither the unlaid-out argument nor the constrained (not declared) result has one
  assert re.search(r"@main\(%arg0: tensor<4x3xf32>\)", text)
  assert not re.search(r"-> \(tensor<4x3xf32> \{[^}]*sdy.sharding", text)
  text = hlox.jit(lambda x: x * 2, out_shardings=s).lower(x).as_text()
  assert re.search(r'-> \(tensor<4x3xf32> \{[^}]*sdy.sharding = #sdy.sharding<@mesh, '
                   r'\[\{"d"\}, \{\}\]>', text)
  np.testing.assert_allclose(hlox.jit(lambda x: x * 2, out_shardings=s)(x), 2 * x)


def test_call_constrains_to_exported_layouts_over_the_exported_mesh():
  devices = hlox.devices()[:2]
  export_mesh = Mesh(devices, ("x",))
  a = np.arange(16 * 4, dtype=f32).reshape(16, 4)
  f = hlox.jit(lambda b: b * 2.0, in_shardings=(NamedSharding(export_mesh, P("x", None)),),
               out_shardings=NamedSharding(export_mesh, P(None, "x")))
  exp = export.export(f)(a)
  assert exp.out_shardings_jax()[0].spec == P(None, "x")
  run_mesh = Mesh(devices[::-1], "y")
  a_device = hlox.device_put(a, NamedSharding(run_mesh, P()))
  text = hlox.jit(exp.call).lower(a_device).as_text()
  # the program's mesh is named after the exported one, which keeps its name
  assert re.search(r'sdy.mesh @mesh_0 = <\["y"=2\]>', text)
  assert re.search(r'sdy.mesh @mesh = <\["x"=2\]>', text)
  assert re.search(r"@main\(%arg0: tensor<16x4xf32> \{sdy.sharding = "
                   r"#sdy.sharding<@mesh_0, \[\{\}, \{\}\]>\}", text)
  assert re.search(r'sdy.sharding_constraint %arg0 <@mesh, \[\{"x"\}, \{\}\]>.*'
                   r'%1 = call @call_exported.*sdy.sharding_constraint %1 <@mesh, '
                   r'\[\{\}, \{"x"\}\]>', text, re.DOTALL)
  np.testing.assert_allclose(exp.call(a_device), 2 * a)
  np.testing.assert_allclose(hlox.jit(exp.call)(a_device), 2 * a)


def test_module_exported_with_shardy_needs_shardy():
  mesh = Mesh(hlox.devices()[:2], ("a",))
  f = hlox.jit(lambda x, y: hlox.lax.with_sharding_constraint(x + y,
                                                             NamedSharding(mesh, P("a"))))
  spec = hlox.ShapeDtypeStruct((8, 4), f32, sharding=NamedSharding(mesh, P("a")))
  exp = export.export(f)(spec, spec)
  a = hlox.device_put(np.ones((8, 4), f32), NamedSharding(mesh, P("a")))
  with _shardy_off():
    with pytest.raises(ValueError, match="Please enable Shardy"):
      hlox.jit(exp.call)(a, a)
  np.testing.assert_allclose(hlox.jit(exp.call)(a, a), 2 * np.ones((8, 4), f32))


class _shardy_off:
  def __enter__(self):
    self.old = config.use_shardy_partitioner
    config.update("use_shardy_partitioner", False)

  def __exit__(self, *exc):
    config.update("use_shardy_partitioner", self.old)
