"""hlox.experimental.roofline: counts of flops, memory and interconnect bytes per jaxpr,
checked against the analytic figures for each kind of operation (the same formulas JAX's
roofline uses, worked out by hand here)."""
from functools import partial
import logging

import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental import roofline
from hlox.extend import core
from hlox.sharding import PartitionSpec as P


def test_result_arithmetic():
  a = roofline.RooflineResult(flops=2, ici_bytes={"x": 1}, peak_hbm_bytes=5)
  b = roofline.RooflineResult(flops=3, ici_bytes={"x": 2, "y": 4}, peak_hbm_bytes=3)
  assert a + b == roofline.RooflineResult(flops=5, ici_bytes={"x": 3, "y": 4},
                                          peak_hbm_bytes=5)
  assert 2 * b == roofline.RooflineResult(flops=6, ici_bytes={"x": 4, "y": 8},
                                          peak_hbm_bytes=6)


def test_elementwise_and_peak():
  x = jnp.zeros((3, 8), jnp.float32)
  out, r = roofline.roofline(lambda x: jnp.sin(x) + x * x)(x)
  assert out.shape == (3, 8)
  assert r.unfused_flops == 3 * 24          # sin, mul, add
  assert r.unfused_hbm_bytes == 4 * 24 * (2 + 3 + 3)
  # Peaks are measured after each equation, once its last-used operands are freed: x and
  # sin(x), then sin(x) and x * x (x's last use), then the sum.
  assert r.peak_hbm_bytes == 2 * 4 * 24
  _, r = roofline.roofline(lambda a, b: a + b)(jnp.zeros((3, 8)), jnp.ones((1, 1)))
  assert r.unfused_flops == 24


def test_dot_general_reduce_sum_select():
  _, r = roofline.roofline(lambda a, b: a @ b)(jnp.zeros((3, 7)), jnp.ones((7, 5)))
  assert (r.flops, r.unfused_flops) == (2 * 3 * 7 * 5, 2 * 3 * 7 * 5)
  assert r.hbm_bytes == 4 * (21 + 35 + 15)
  _, r = roofline.roofline(lambda a, b: a @ b, pin_lhs_in_vmem=True)(
      jnp.zeros((3, 7)), jnp.ones((7, 5)))
  assert r.hbm_bytes == 4 * 35
  _, r = roofline.roofline(lambda x: jnp.sum(x, axis=0))(jnp.zeros((11, 4)))
  assert (r.unfused_flops, r.unfused_hbm_bytes) == (10 * 4, 4 * (44 + 4))
  _, r = roofline.roofline(lax.select_n)(jnp.zeros((4, 8), bool), jnp.zeros((4, 8)),
                                         jnp.ones((4, 8)))
  assert (r.unfused_flops, r.unfused_hbm_bytes) == (32, 32 + 4 * 32)


def test_conv_counts_only_taps_inside_the_input():
  lhs, rhs = jnp.zeros((1, 1, 5)), jnp.zeros((1, 1, 3))
  _, r = roofline.roofline(lambda a, b: lax.conv_general_dilated(a, b, (1,), [(1, 1)]))(
      lhs, rhs)
  # 5 outputs x 3 taps, less the two taps that read padding: 13 multiply-adds.
  assert r.unfused_flops == 2 * 13


def test_calls_are_opened_and_unknown_primitives_count_nothing(caplog):
  @hlox.custom_jvp
  def f(x):
    return jnp.sin(x) + x ** 2
  f.defjvp(lambda p, t: (f(p[0]), t[0]))
  x = jnp.ones((3, 8))
  _, plain = roofline.roofline(lambda x: jnp.sin(x) + x ** 2)(x)
  _, custom = roofline.roofline(lambda x: hlox.jit(f)(x))(x)
  assert custom.unfused_flops == plain.unfused_flops == 3 * 24

  mystery_p = core.Primitive("roofline_test_mystery")
  mystery_p.def_impl(lambda x: x)
  mystery_p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))
  with caplog.at_level(logging.WARNING):
    _, r = roofline.roofline(lambda x: jnp.abs(mystery_p.bind(x)))(x)
  assert "No roofline rule for roofline_test_mystery" in caplog.text
  assert r.unfused_flops == 24


def test_gather_and_scatter():
  operand, idx, upd = jnp.zeros((3, 3)), jnp.zeros((2, 1), jnp.int32), jnp.ones((2, 3))
  dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  _, r = roofline.roofline(lambda x, i, u: lax.scatter_add(x, i, u, dn))(operand, idx, upd)
  assert (r.unfused_flops, r.unfused_hbm_bytes) == (6, 3 * 4 * 6 + 4 * 2)
  _, r = roofline.roofline(lambda x, i: lax.scatter_apply(
      x, i, lambda v: jnp.sin(v) + v ** 2, dn, update_shape=(2, 3)))(operand, idx)
  assert r.unfused_flops == 3 * 6
  gdn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                   start_index_map=(0,))
  _, r = roofline.roofline(lambda x, i: lax.gather(
      x, i, gdn, (1, 3), mode=lax.GatherScatterMode.FILL_OR_DROP))(operand, idx)
  assert (r.unfused_flops, r.unfused_hbm_bytes) == (4 * 2 + 6, 2 * 4 * 6 + 4 * 2)


def _inputs(*specs, dtype=jnp.float32):
  mesh = hlox.make_mesh((2, 2, 2), ("x", "y", "z"),
                        axis_types=(hlox.sharding.AxisType.Auto,) * 3)
  return mesh, [hlox.ShapeDtypeStruct((8, 8), dtype,
                                      sharding=hlox.sharding.NamedSharding(mesh, s))
                for s in specs]


def test_collectives_in_a_shard_map_body():
  spec = P(None, "x")
  mesh, (a,) = _inputs(spec, dtype=jnp.int8)

  @partial(roofline.roofline, mesh=mesh, in_specs=(spec,), out_specs=spec)
  def gather_then_scatter(a):
    a = lax.all_gather(a, "x", axis=1, tiled=True)
    return lax.psum_scatter(a, "x", scatter_dimension=1, tiled=True)

  out, r = gather_then_scatter(a)
  assert out.sharding.spec == spec
  # Each ring step sends one 8x4 shard over the one other device, both ways.
  assert r.ici_bytes == {"x": 2 * 32} and r.ici_latency == {"x": 4}
  assert r.peak_hbm_bytes == 64  # the gathered 8x8 (the 8x4 shard is freed as it is made)

  spec = P("z", ("x", "y"))
  mesh, (b,) = _inputs(spec)

  @partial(roofline.roofline, mesh=mesh, in_specs=(spec,), out_specs=spec)
  def swap(b):
    return lax.ppermute(b, "z", perm=((1, 0), (0, 1)))

  _, r = swap(b)
  # Both 4x2 float32 shards cross the one z link.
  assert r.ici_bytes == {"z": 2 * 32} and r.ici_latency == {"z": 1}


def test_roofline_and_grad_counts_a_bfloat16_backward_pass():
  spec = P("x", None)
  mesh, (a, b) = _inputs(spec, P(None, None))
  shapes, fwd, bwd = roofline.roofline_and_grad(
      lambda a, b: a @ b, mesh=mesh, in_specs=(spec, P(None, None)), out_specs=spec)(a, b)
  assert fwd.flops == 2 * 4 * 8 * 8
  assert bwd.flops == 2 * fwd.flops          # two products for the two cotangents
  assert bwd.hbm_bytes == 2 * 2 * (32 + 64 + 32)   # bfloat16 operands


def test_config_read():
  assert hlox.config.read("jax_enable_x64") is hlox.config.enable_x64
  with pytest.raises(AttributeError, match="Unrecognized config option"):
    hlox.config.read("jax_no_such_option")
