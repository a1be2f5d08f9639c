"""pmap: replicated programs over the CPU devices (conftest gives 8), arrays split over
devices, and composition with grad, vmap, jit and nested pmaps."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox import monitoring

from check_grads import check_grads_x64
from util import assert_close


def rng_normal(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_issue_example_psum_normalizes():
  f = hlox.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")
  y = f(jnp.arange(4.))
  assert_close(y, np.array([0, 1 / 6, 1 / 3, 1 / 2], np.float32))
  assert isinstance(y, hlox.Array) and y.shape == (4,)
  assert len(y.devices()) == 4


def test_result_is_split_over_devices_and_reusable_without_copies():
  f = hlox.pmap(lambda x: x * 2)
  x = rng_normal(8, 3)
  y = f(x)
  shards = y.addressable_shards
  assert [s.device for s in shards] == hlox.devices()[:8]
  for k, s in enumerate(shards):
    assert_close(s.data, 2 * x[k:k + 1])
  # Fed to a pmap over the same devices, the split buffer is passed as it is.
  g = hlox.pmap(lambda x: x + 1)
  z = g(y)
  assert z._multi is not None and y._multi is not None
  assert_close(z, 2 * x + 1)
  # Ordinary operations gather it onto one device first.
  assert_close(y.sum(), (2 * x).sum(), rtol=1e-5, atol=1e-5)
  assert_close(hlox.jit(lambda a: a @ a.T)(y), (2 * x) @ (2 * x).T, rtol=1e-4, atol=1e-4)
  assert_close(y[3], 2 * x[3])


def test_compiles_once_and_caches():
  f = hlox.pmap(lambda x: jnp.tanh(x) + 1.0)
  x = rng_normal(4, 5)
  f(x)
  with monitoring.count_events() as counts:
    for _ in range(3):
      y = f(x)
    y = f(y)
  assert counts.get("jit_trace", 0) == 0 and counts.get("compile", 0) == 0
  assert_close(y, np.tanh(np.tanh(x) + 1) + 1, rtol=1e-5, atol=1e-5)


def test_in_axes_out_axes_pytrees_and_broadcast_args():
  def f(tree, scale):
    return {"s": tree["a"] * scale + tree["b"].sum(), "p": (tree["a"], lax.axis_index("i"))}
  a = rng_normal(3, 4)  # mapped along axis 1
  b = rng_normal(4, 2)  # mapped along axis 0
  out = hlox.pmap(f, axis_name="i", in_axes=({"a": 1, "b": 0}, None),
                  out_axes={"s": 1, "p": 0})({"a": a, "b": b}, np.float32(3.))
  assert out["s"].shape == (3, 4)
  assert_close(out["s"], a * 3 + b.sum(1)[None, :], rtol=1e-5, atol=1e-5)
  assert_close(out["p"][0], a.T)
  assert_close(out["p"][1], np.arange(4, dtype=np.int32))


def test_static_broadcasted_argnums_and_kwargs():
  f = hlox.pmap(lambda x, n, *, y: x ** n + y, static_broadcasted_argnums=1)
  x = rng_normal(2, 3)
  assert_close(f(x, 3, y=x), x ** 3 + x, rtol=1e-5, atol=1e-5)
  assert_close(f(x, 2, y=x), x ** 2 + x, rtol=1e-5, atol=1e-5)


def test_devices_argument_and_axis_size():
  devs = hlox.devices()[4:6]
  y = hlox.pmap(lambda x: x - 1, devices=devs)(np.ones((2, 3), np.float32))
  assert y.devices() == set(devs)
  assert_close(y, np.zeros((2, 3)))
  z = hlox.pmap(lambda: lax.axis_index("i") * 2, axis_name="i", axis_size=3)()
  assert_close(z, np.array([0, 2, 4], np.int32))


def test_donation_deletes_input():
  f = hlox.pmap(lambda x: x * 3, donate_argnums=0)
  x = hlox.pmap(lambda x: x)(np.ones((4, 2), np.float32))
  y = f(x)
  assert_close(y, 3 * np.ones((4, 2)))
  assert x.is_deleted()
  with pytest.raises(Exception, match="deleted"):
    np.asarray(x)


def test_lower_shows_replicated_module():
  text = hlox.pmap(lambda x: lax.psum(x, "i"), axis_name="i").lower(
      np.zeros((4, 2), np.float32)).as_text()
  assert "mhlo.num_replicas = 4" in text
  assert "stablehlo.all_reduce" in text and "[[0, 1, 2, 3]]" in text


def test_make_jaxpr_shows_xla_pmap():
  text = str(hlox.make_jaxpr(hlox.pmap(lambda x: lax.psum(x, "i"), axis_name="i"))(
      np.zeros((4,), np.float32)))
  assert "xla_pmap[" in text and "axis_name=i" in text and "psum[" in text


# --- composition -------------------------------------------------------------------------

def test_grad_of_pmap():
  x = np.arange(1., 5., dtype=np.float32)

  def f(x):
    return jnp.sum(hlox.pmap(lambda y: jnp.sin(y) * lax.psum(y, "i"), axis_name="i")(x))
  expected = np.cos(x) * x.sum() + np.sin(x).sum()
  assert_close(hlox.grad(f)(x), expected, rtol=1e-5, atol=1e-5)
  assert_close(hlox.jit(hlox.grad(f))(x), expected, rtol=1e-5, atol=1e-5)


def test_grad_of_pmap_numerically():
  pf = hlox.pmap(lambda y, w: jnp.tanh(y * w) * lax.pmean(y, "i"), axis_name="i",
                 in_axes=(0, None))
  check_grads_x64(lambda y, w: pf(y, w), (rng_normal(4, 3).astype(np.float64),
                                          rng_normal(3, seed=1).astype(np.float64)),
                  order=2, atol=1e-5, rtol=1e-5)


def test_grad_of_unmapped_input_sums_over_devices():
  x = rng_normal(4)
  f = lambda w, ys: jnp.sum(hlox.pmap(lambda y, w: y * w, in_axes=(0, None))(ys, w))
  assert_close(hlox.grad(f)(np.float32(2.), x), x.sum(), rtol=1e-5, atol=1e-5)


def test_data_parallel_sgd_step_matches_single_device():
  rng = np.random.default_rng(0)
  X = rng.standard_normal((16, 3)).astype(np.float32)
  Y = rng.standard_normal(16).astype(np.float32)
  params = {"w": rng.standard_normal(3).astype(np.float32), "b": np.float32(0.5)}

  def loss(p, xb, yb):
    return jnp.mean((xb @ p["w"] + p["b"] - yb) ** 2)

  def step(p, xb, yb):
    g = lax.pmean(hlox.grad(loss)(p, xb, yb), "batch")
    return hlox.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
  parallel = hlox.pmap(step, axis_name="batch", in_axes=(None, 0, 0))(
      params, X.reshape(4, 4, 3), Y.reshape(4, 4))
  single = hlox.jit(lambda p: hlox.tree_util.tree_map(
      lambda a, b: a - 0.1 * b, p, hlox.grad(loss)(p, X, Y)))(params)
  for k in range(4):
    assert_close(parallel["w"][k], single["w"], rtol=1e-5, atol=1e-6)
    assert_close(parallel["b"][k], single["b"], rtol=1e-5, atol=1e-6)


def test_vmap_of_pmap_and_pmap_of_vmap():
  xs = rng_normal(3, 4)
  vp = hlox.vmap(hlox.pmap(lambda y: y * lax.psum(y, "i"), axis_name="i"))
  assert_close(vp(xs), xs * xs.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
  vp1 = hlox.vmap(hlox.pmap(lambda y: y * lax.psum(y, "i"), axis_name="i"), in_axes=1)
  assert_close(vp1(xs.T), xs * xs.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
  both = hlox.pmap(hlox.vmap(lambda y: lax.psum(y, ("i", "j")), axis_name="j"), axis_name="i")
  assert_close(both(xs), np.full((3, 4), xs.sum()), rtol=1e-5, atol=1e-5)
  inner = hlox.pmap(hlox.vmap(lambda y: y - lax.pmean(y, "i"), axis_name="j"), axis_name="i")
  assert_close(inner(xs), xs - xs.mean(0), rtol=1e-5, atol=1e-5)


def test_vmap_with_axis_name_equals_pmap():
  xs = rng_normal(4, 3)
  f = lambda y: jnp.exp(y) / lax.psum(jnp.exp(y), "i") + lax.axis_index("i")
  assert_close(hlox.pmap(f, axis_name="i")(xs), hlox.vmap(f, axis_name="i")(xs),
               rtol=1e-5, atol=1e-6)


def test_jit_inside_and_around_pmap():
  x = rng_normal(4)
  inside = hlox.pmap(hlox.jit(lambda y: lax.psum(y * 2, "i")), axis_name="i")
  assert_close(inside(x), np.full(4, 2 * x.sum()), rtol=1e-5, atol=1e-5)
  around = hlox.jit(lambda y: hlox.pmap(lambda z: z + lax.psum(z, "i"), axis_name="i")(y) * 2)
  assert_close(around(x), (x + x.sum()) * 2, rtol=1e-5, atol=1e-5)


def test_nested_pmap_over_2d_devices():
  a = rng_normal(2, 4)
  f = hlox.pmap(hlox.pmap(
      lambda y: lax.psum(y, "j") + 10 * lax.axis_index("i") + 100 * lax.axis_index("j"),
      axis_name="j"), axis_name="i")
  expected = a.sum(1, keepdims=True) + 10 * np.arange(2)[:, None] + 100 * np.arange(4)[None]
  assert_close(f(a), expected, rtol=1e-5, atol=1e-4)
  outer = hlox.pmap(hlox.pmap(lambda y: lax.psum(y, "i"), axis_name="j"), axis_name="i")
  assert_close(outer(a), np.broadcast_to(a.sum(0), (2, 4)), rtol=1e-5, atol=1e-5)
  both = hlox.pmap(hlox.pmap(lambda y: lax.psum(y, ("i", "j")), axis_name="j"), axis_name="i")
  assert_close(both(a), np.full((2, 4), a.sum()), rtol=1e-5, atol=1e-5)


def test_second_order_through_pmap():
  x = rng_normal(4)
  f = lambda x: jnp.sum(hlox.pmap(lambda y: jnp.sin(y) ** 2)(x))
  h = hlox.grad(lambda x: jnp.sum(hlox.grad(f)(x)))(x)
  assert_close(h, 2 * np.cos(2 * x), rtol=1e-4, atol=1e-5)


# --- bad input ---------------------------------------------------------------------------

def test_too_many_devices_names_both_numbers_and_the_setting():
  with pytest.raises(ValueError, match=r"needs 9 devices but only 8.*HLOX_NUM_CPU_DEVICES"):
    hlox.pmap(lambda y: y)(np.ones((9, 2)))


def test_axis_a_multiple_of_the_devices_says_what_each_device_would_hold():
  # JAX's words for an axis a multiple of the devices (it spreads the axis over them and
  # the body's squeeze fails), at top level, under jit and inside a loop; indivisible sizes
  # and nested pmaps keep the plain message.
  squeeze = (r"cannot select an axis to squeeze out which has size not equal to one, got "
             r"shape=\({}\) and dimensions=\({},\)")
  psum = hlox.pmap(lambda z: lax.psum(jnp.sin(z), "i"), axis_name="i")
  body = lambda i, x: psum(x) + x  # noqa: E731
  for f in (psum, hlox.jit(psum), lambda x: lax.fori_loop(0, 3, body, x)):
    with pytest.raises(ValueError, match=r"needs 16 devices but only 8.*"
                                         + squeeze.format("2,", 0) + ".*HLOX_NUM_CPU"):
      f(jnp.ones(16))
  with pytest.raises(ValueError, match=squeeze.format("3, 2", 1)):
    hlox.pmap(lambda a, z: z * a, in_axes=(None, 1))(1., jnp.ones((3, 16)))
  with pytest.raises(ValueError, match=r"devices= lists 3\. .*" + squeeze.format("2,", 0)):
    hlox.pmap(lambda z: z * 2, devices=hlox.devices()[:3])(jnp.ones(6))
  with pytest.raises(ValueError, match=r"only 8 are available\. On the CPU"):
    hlox.pmap(lambda z: z * 2)(jnp.ones(12))


def test_unbound_axis_name_lists_bound_ones():
  with pytest.raises(NameError, match=r"unbound axis name: '?k'?\b.*'i'"):
    hlox.pmap(lambda y: lax.psum(y, "k"), axis_name="i")(np.ones((2, 2)))


def test_inconsistent_sizes():
  with pytest.raises(ValueError, match="inconsistent sizes"):
    hlox.pmap(lambda a, b: a + b)(np.ones((2, 2)), np.ones((3, 2)))


def test_in_axes_out_of_range_and_wrong_length():
  with pytest.raises(ValueError, match="rank"):
    hlox.pmap(lambda a: a, in_axes=2)(np.ones((2, 2)))
  with pytest.raises(ValueError, match="in_axes"):
    hlox.pmap(lambda a, b: a, in_axes=(0,))(np.ones((2, 2)), np.ones((2, 2)))
  with pytest.raises(ValueError, match="non-None"):
    hlox.pmap(lambda a: a, in_axes=None)(np.ones((2, 2)))


def test_device_put_sharded_and_replicated_feed_pmap_without_copies():
  devs = hlox.devices()[:4]
  parts = [np.full((2,), k, np.float32) for k in range(4)]
  x = hlox.device_put_sharded(parts, devs)
  assert x.shape == (4, 2) and x.devices() == set(devs)
  assert_close(x, np.stack(parts))
  f = hlox.pmap(lambda a, b: a + b["w"])
  w = hlox.device_put_replicated({"w": np.arange(2, dtype=np.float32)}, devs)
  assert w["w"].shape == (4, 2)
  y = f(x, w)
  assert_close(y, np.stack(parts) + np.arange(2))
  with pytest.raises(ValueError, match="one shape"):
    hlox.device_put_sharded([np.ones(2), np.ones(3)], devs[:2])
  with pytest.raises(ValueError, match="3 values for 4 devices"):
    hlox.device_put_sharded(parts[:3], devs)


def test_traces_are_not_reused_across_different_named_axes():
  h = hlox.jit(lambda x: x * lax.axis_size("i"))
  assert_close(hlox.vmap(h, axis_name="i")(np.ones(3, np.float32)), np.full(3, 3.))
  assert_close(hlox.vmap(h, axis_name="i")(np.ones(2, np.float32)), np.full(2, 2.))
  g = hlox.jit(lambda x: lax.all_gather(x, "i"))
  assert_close(hlox.pmap(g, axis_name="i")(np.arange(4.)), np.tile(np.arange(4.), (4, 1)))
  assert_close(hlox.pmap(g, axis_name="i")(np.arange(2.)), np.tile(np.arange(2.), (2, 1)))
  body = lambda c, x: (c + lax.psum(x, "i"), None)
  scan_sum = lambda xs: lax.scan(body, 0., xs)[0]
  assert_close(hlox.vmap(scan_sum, in_axes=1, axis_name="i")(np.ones((2, 3))), np.full(3, 6.))
  assert_close(hlox.vmap(scan_sum, in_axes=1, axis_name="i")(np.ones((2, 5))), np.full(5, 10.))


def test_eager_grad_and_vmap_of_pmap_reuse_compiled_programs():
  f = hlox.pmap(lambda y: jnp.sin(y) * lax.psum(y, "i"), axis_name="i")
  g = hlox.grad(lambda x: f(x).sum())
  v = hlox.vmap(f)
  x = rng_normal(4)
  g(x), v(rng_normal(2, 4))
  with monitoring.count_events() as counts:
    out = g(x)
    v(rng_normal(2, 4))
  assert counts.get("compile", 0) == 0, counts
  assert_close(out, np.cos(x) * x.sum() + np.sin(x).sum(), rtol=1e-5, atol=1e-5)


def test_deleting_a_result_does_not_break_the_next_launch():
  f = hlox.pmap(lambda x: lax.psum(x, "i"), axis_name="i")
  y = f(np.ones((4, 2), np.float32))
  y.delete()
  assert_close(f(np.ones((4, 2), np.float32)), np.full((4, 2), 4.))


def test_out_axes_none_returns_one_copy_and_differentiates_as_jax():
  f = hlox.pmap(lambda x: lax.psum(x, "i"), axis_name="i", out_axes=None)
  x = np.arange(4.0, dtype=np.float32)
  y = f(x)
  assert y.shape == () and float(y) == 6.0
  # An unmapped output is one device's copy of a replicated value: each device's share of
  # the cotangent is 1/size (JAX 0.10.2 gives the same).
  assert_close(hlox.grad(f)(x), np.ones(4))
  assert_close(hlox.pmap(lambda x: x * 2, out_axes=None)(x), np.float32(0.0))
  both = hlox.pmap(lambda x: (x * 2, lax.pmean(x, "i")), axis_name="i", out_axes=(0, None))
  a, m = both(x)
  assert_close(a, 2 * x)
  assert_close(m, np.float32(1.5))
  v = hlox.vmap(f)(np.arange(8.0, dtype=np.float32).reshape(2, 4))
  assert_close(v, np.array([6.0, 22.0]))
  g = hlox.jvp(f, (x,), (np.ones(4, np.float32),))[1]
  assert_close(g, np.float32(4.0))


def test_make_jaxpr_with_axis_env_and_eval_shape_of_pmap():
  text = str(hlox.make_jaxpr(lambda x: lax.psum(x, "i") * lax.axis_size("i"),
                             axis_env=[("i", 4)])(1.0))
  assert "psum[axes=('i',)" in text and "mul" in text
  shape = hlox.eval_shape(hlox.pmap(lambda x: lax.all_gather(x, "i"), axis_name="i"),
                          hlox.ShapeDtypeStruct((2, 3), np.float32))
  assert shape.shape == (2, 2, 3) and shape.dtype == np.float32


def test_pmap_inside_loops_and_branches():
  pf = hlox.pmap(lambda v: v * lax.psum(v, "i"), axis_name="i")

  def body(c, x):
    return c + pf(x).sum(), c
  xs = rng_normal(3, 4)
  expected = sum((x * x.sum()).sum() for x in xs)
  total, carries = lax.scan(body, 0., xs)
  assert_close(total, np.float32(expected), rtol=1e-5, atol=1e-5)
  assert carries.shape == (3,)
  assert_close(hlox.jit(lambda xs: lax.scan(body, 0., xs)[0])(xs), np.float32(expected),
               rtol=1e-5, atol=1e-5)
  assert_close(hlox.grad(lambda xs: lax.scan(body, 0., xs)[0])(xs),
               np.broadcast_to(2 * xs.sum(1, keepdims=True), xs.shape), rtol=1e-5, atol=1e-5)
  assert_close(lax.cond(True, pf, lambda x: x, xs[0]), xs[0] * xs[0].sum(), rtol=1e-5,
               atol=1e-5)
  grow = lax.fori_loop(0, 3, lambda i, c: c + pf(c), jnp.ones(4))
  assert_close(grow, np.full(4, 44205.))
