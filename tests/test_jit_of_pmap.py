"""jit of pmap: a jitted function containing pmaps compiles into ONE replicated executable
(the code outside the pmaps computed on every replica), cached like any jit executable, and
its results live on the pmap's devices as JAX 0.10.2's do (conftest gives 8 CPU devices)."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox import monitoring

from check_grads import check_grads_x64
from util import assert_close, run_in_jax


def rng_normal(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


psum_pmap = hlox.pmap(lambda v: lax.psum(v, "i"), axis_name="i")


def test_jit_of_pmap_matches_numpy_and_eager_pmap():
  x = rng_normal(8, 3)
  f = hlox.pmap(lambda v: jnp.sin(v) * lax.psum(v, "i"), axis_name="i")
  expected = np.sin(x) * x.sum(0)
  y = hlox.jit(f)(x)
  assert_close(y, expected, rtol=1e-5, atol=1e-5)
  assert_close(y, f(x), rtol=1e-6, atol=1e-6)
  assert y.shape == (8, 3) and y.dtype == np.float32
  assert y.devices() == set(hlox.devices()[:8])  # as JAX: on the pmap's devices


def test_code_around_the_pmap_runs_in_the_same_program():
  x = rng_normal(8, 4)

  def f(x):
    y = psum_pmap(x * 2.0)
    return y + 1.0, (x.sum(), jnp.int32(3))
  out, (total, three) = hlox.jit(f)(x)
  assert_close(out, np.broadcast_to(2 * x.sum(0), (8, 4)) + 1, rtol=1e-5, atol=1e-5)
  assert_close(total, np.float32(x.sum()), rtol=1e-5, atol=1e-5)
  assert int(three) == 3 and three.dtype == np.int32 and total.shape == ()


@pytest.mark.parametrize("name", ["psum", "pmean", "all_gather", "ppermute", "axis_index"])
def test_collectives_inside(name):
  x = rng_normal(8, 2, seed=1)
  bodies = {
      "psum": (lambda v: lax.psum(v, "i"), np.broadcast_to(x.sum(0), x.shape)),
      "pmean": (lambda v: lax.pmean(v, "i") - v, x.mean(0) - x),
      "all_gather": (lambda v: lax.all_gather(v, "i"), np.broadcast_to(x, (8, 8, 2))),
      "ppermute": (lambda v: lax.ppermute(v, "i", [(k, (k + 1) % 8) for k in range(8)]),
                   np.roll(x, 1, axis=0)),
      "axis_index": (lambda v: v * lax.axis_index("i"), x * np.arange(8)[:, None]),
  }
  body, expected = bodies[name]
  p = hlox.pmap(body, axis_name="i")
  f = hlox.jit(lambda x: p(x * 3.0) / 3.0)
  assert_close(f(x), expected, rtol=1e-5, atol=1e-5)
  assert_close(f(x), p(x * 3.0) / 3.0, rtol=1e-6, atol=1e-6)


def test_in_axes_none_out_axes_and_fewer_devices():
  x, s = rng_normal(4, 3), np.float32(2.5)
  p = hlox.pmap(lambda a, b: (a * b, lax.psum(a, "i")), axis_name="i", in_axes=(0, None),
                out_axes=(1, None))
  f = hlox.jit(lambda a, b: p(a, b))
  y, t = f(x, s)
  assert_close(y, (x * s).T, rtol=1e-6)
  assert_close(t, x.sum(0), rtol=1e-5, atol=1e-5)
  assert len(y.devices()) == 4


def test_nested_in_scan_and_cond_under_jit():
  x = rng_normal(8, 3, seed=2)

  def scanned(x):
    def body(c, _):
      c = psum_pmap(c) / 8.0
      return c, c.sum()
    return lax.scan(body, x, None, length=3)

  def branched(p, x):
    return lax.cond(p, lambda v: psum_pmap(v) * 2.0, lambda v: v - 1.0, x)
  c, sums = hlox.jit(scanned)(x)
  mean = np.broadcast_to(x.mean(0), x.shape)
  assert_close(c, mean, rtol=1e-5, atol=1e-5)
  assert_close(sums, np.full(3, mean.sum(), np.float32), rtol=1e-5, atol=1e-5)
  jb = hlox.jit(branched)
  assert_close(jb(True, x), 2 * np.broadcast_to(x.sum(0), x.shape), rtol=1e-5, atol=1e-5)
  assert_close(jb(False, x), x - 1, rtol=1e-6)


def test_one_compile_no_eager_dispatch_and_cache_hits():
  x = rng_normal(8, 5, seed=3)
  p = hlox.pmap(lambda v: jnp.tanh(v) + lax.psum(v, "i"), axis_name="i")
  f = hlox.jit(lambda x: p(x * 2.0).sum(0) + 1.0)
  with monitoring.count_events() as counts:
    y = f(x)
  assert counts["compile"] == 1 and counts["lower"] == 1 and counts["jit_trace"] == 1
  assert counts["eager_compile"] == 0
  expected = (np.tanh(2 * x) + 2 * x.sum(0)).sum(0) + 1
  assert_close(y, expected, rtol=1e-5, atol=1e-5)
  with monitoring.count_events() as counts:
    for _ in range(3):
      y = f(x)
    f(jnp.asarray(x))
  assert sum(counts.values()) == 0  # no trace, lowering, compile nor eager op
  assert_close(y, expected, rtol=1e-5, atol=1e-5)
  # Results fed back in (already on the replicas) and a new wrapper: still nothing compiles.
  g = hlox.jit(lambda x: psum_pmap(x) / 8.0)
  z = g(x)
  with monitoring.count_events() as counts:
    z = g(g(z))
    hlox.jit(lambda x: p(x * 2.0).sum(0) + 1.0)  # a new lambda: its own trace cache
  assert sum(counts.values()) == 0
  assert_close(z, np.broadcast_to(x.mean(0), x.shape), rtol=1e-5, atol=1e-5)


def test_results_stay_split_like_eager_pmap_and_elementwise_work_runs_on_pieces():
  x = rng_normal(8, 4, seed=8)
  p = hlox.pmap(lambda v: jnp.tanh(v) * lax.psum(v, "i"), axis_name="i")
  f = hlox.jit(lambda x: p(x * 0.5) + 1.0)
  text = f.lower(x).as_text()
  # Each replica holds its row of the argument and of the result: nothing gathered.
  assert ('main(%arg0: tensor<1x4xf32>) -> (tensor<1x4xf32> {jax.result_info = "result"})'
          in text)
  assert "all_gather" not in text and "dynamic_slice" not in text
  y = f(x)
  eager = p(x * 0.5)
  assert y.sharding is eager.sharding
  assert [s.data.shape for s in y.addressable_shards] == [(1, 4)] * 8
  assert_close(y, np.tanh(x / 2) * (x / 2).sum(0) + 1, rtol=1e-5, atol=1e-5)
  # An eager pmap's result, and the jitted one's, are taken as they are.
  with monitoring.count_events() as counts:
    z = f(eager)
    w = f(y)
  assert sum(counts.values()) == 0
  assert_close(z, f(np.asarray(eager)), rtol=1e-6, atol=1e-6)
  assert_close(w, f(np.asarray(y)), rtol=1e-6, atol=1e-6)
  # A value arriving whole over the devices: one more program (for that layout), then cached.
  whole = hlox.jit(lambda x: psum_pmap(x).sum(0) * 0.0 + x.T.T)(x)
  assert whole.addressable_shards[0].data.shape == (8, 4)
  with monitoring.count_events() as counts:
    assert_close(f(whole), f(x), rtol=1e-6, atol=1e-6)
    f(whole)
  assert counts["compile"] == 1


def test_split_values_gathered_for_other_ops_bools_and_two_pmap_sizes():
  x = rng_normal(8, 3, seed=9)
  positive = hlox.pmap(lambda v: v > 0)
  f = hlox.jit(lambda x: (positive(x), positive(x).any(1), psum_pmap(x)[::-1] @ x.T))
  pos, anyrow, prod = f(x)
  assert pos.dtype == np.bool_ and (np.asarray(pos) == (x > 0)).all()
  assert (np.asarray(anyrow) == (x > 0).any(1)).all()
  assert_close(prod, np.broadcast_to(x.sum(0), x.shape)[::-1] @ x.T, rtol=1e-4, atol=1e-4)
  four = hlox.pmap(lambda v: lax.psum(v, "j"), axis_name="j")
  g = hlox.jit(lambda a, b: (four(a) + 1.0, psum_pmap(b) * four(a).sum()))
  a, b = rng_normal(4, 2, seed=10), rng_normal(8, 2, seed=11)
  u, v = g(a, b)
  assert_close(u, np.broadcast_to(a.sum(0), a.shape) + 1, rtol=1e-5, atol=1e-5)
  assert_close(v, np.broadcast_to(b.sum(0), b.shape) * 4 * a.sum(), rtol=1e-4, atol=1e-4)
  assert len(u.devices()) == 8  # the program's replicas: as many as the larger pmap needs


def test_lower_and_compile_share_the_executable():
  x = rng_normal(8, 2, seed=4)
  f = hlox.jit(lambda x: psum_pmap(x) - 1.0)
  lowered = f.lower(x)
  assert "mhlo.num_replicas = 8" in lowered.as_text()
  compiled = lowered.compile()
  assert_close(compiled(x), np.broadcast_to(x.sum(0), x.shape) - 1, rtol=1e-5, atol=1e-5)
  with monitoring.count_events() as counts:
    assert_close(f(x), compiled(x), rtol=0, atol=0)
  assert counts["compile"] == 0


def test_donated_argument():
  x_np = rng_normal(8, 3, seed=5)
  f = hlox.jit(lambda x: psum_pmap(x) * 0.5, donate_argnums=0)
  y = f(jnp.asarray(x_np))
  expected = np.broadcast_to(0.5 * x_np.sum(0), (8, 3))
  assert_close(y, expected, rtol=1e-5, atol=1e-5)
  z = f(y)  # a result (already on the replicas) donated to the next call
  assert y.is_deleted()
  assert_close(z, 4 * expected, rtol=1e-5, atol=1e-5)
  with pytest.raises(Exception, match="deleted|donated"):
    f(y)


def test_donated_split_array_reused_raises_in_eager_pmap_too():
  p = hlox.pmap(lambda v: v * 2.0, donate_argnums=0)
  y = p(np.ones((8, 2), np.float32))
  z = p(y)
  assert y.is_deleted()
  assert_close(z, np.full((8, 2), 4.0, np.float32))
  with pytest.raises(hlox.errors.DeletedArrayError, match="deleted"):
    p(y)
  with pytest.raises(hlox.errors.DeletedArrayError, match="deleted"):
    hlox.jit(p)(y)


def test_grad_and_vmap_of_jit_of_pmap():
  x = rng_normal(8, 3, seed=6)
  p = hlox.pmap(lambda v: jnp.sin(v) * lax.psum(v, "i"), axis_name="i")
  f = hlox.jit(lambda x: p(x))
  loss = lambda x: (f(x) ** 2).sum()
  s = x.sum(0)
  # d/dx_k sum_j (sin x_j s)^2 = 2 sin x_k cos x_k s^2 + sum_j 2 sin^2 x_j s
  expected = 2 * np.sin(x) * np.cos(x) * s ** 2 + (2 * np.sin(x) ** 2 * s).sum(0)
  assert_close(hlox.grad(loss)(x), expected, rtol=1e-4, atol=1e-4)
  assert_close(hlox.jit(hlox.grad(loss))(x), expected, rtol=1e-4, atol=1e-4)
  check_grads_x64(lambda x: f(x), (x.astype(np.float64),), order=1)
  xs = rng_normal(2, 8, 3, seed=7)
  batched = hlox.vmap(f)(xs)
  assert_close(batched, np.stack([np.asarray(p(xi)) for xi in xs]), rtol=1e-5, atol=1e-5)


_JAX_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
programs = json.loads(sys.stdin.read())
out = {}
for name, body in programs.items():
  ns = {}
  exec("def prog(m, jnp, lax, np):\\n  " + body, ns)
  ys = ns["prog"](jax, jnp, lax, np)
  out[name] = [{"value": np.asarray(y).tolist(), "dtype": str(y.dtype), "shape": list(y.shape),
                "devices": len(y.devices()),
                "shard": list(y.addressable_shards[0].data.shape)} for y in ys]
print(json.dumps(out))
"""

_PROGRAMS = {
    "jit_pmap": "x = np.arange(24, dtype=np.float32).reshape(8, 3)\n"
                "  return [m.jit(m.pmap(lambda v: lax.psum(v, 'i') * 2, axis_name='i'))(x)]",
    "around": "x = np.arange(8, dtype=np.int32)\n"
              "  p = m.pmap(lambda v: lax.psum(v, 'i') + v, axis_name='i')\n"
              "  return list(m.jit(lambda x: (p(x) * 2 + 1, p(x).sum(), (x > 3).any()))(x))",
    "four": "x = np.ones((4, 2), np.float32)\n"
            "  return [m.jit(m.pmap(lambda v: lax.pmean(v, 'i') / 2, axis_name='i'))(x)]",
}


def test_against_jax():
  pytest.importorskip("jax")
  expected = run_in_jax(_JAX_RUNNER, _PROGRAMS,
                        {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
  for name, body in _PROGRAMS.items():
    ns = {}
    exec("def prog(m, jnp, lax, np):\n  " + body, ns)
    got = ns["prog"](hlox, jnp, lax, np)
    for y, e in zip(got, expected[name]):
      assert list(y.shape) == e["shape"] and str(y.dtype) == e["dtype"], name
      assert len(y.devices()) == e["devices"], name
      assert list(y.addressable_shards[0].data.shape) == e["shard"], name  # split or whole
      assert_close(y, np.asarray(e["value"], dtype=e["dtype"]), rtol=1e-6, atol=1e-6)


def test_jit_of_pmap_returning_booleans():
  # The mapped boolean outputs are gathered over the axis like any others
  # (export_harnesses_multi_platform_test's test_all_gather with bool).
  x = np.arange(16).reshape(4, 4) % 3 == 0
  f = hlox.pmap(lambda v: lax.all_gather(v, axis_name="i"), axis_name="i")
  y = hlox.jit(f)(x)
  assert y.dtype == np.bool_
  np.testing.assert_array_equal(np.asarray(y), np.broadcast_to(x, (4, 4, 4)))
  g = hlox.jit(hlox.pmap(lambda v: v > 1.5))
  np.testing.assert_array_equal(np.asarray(g(np.arange(4.0))), [False, False, True, True])
