"""``python -m hlox``: a tour of hlox on this machine.

Prints the devices, the jaxpr of a small function, the StableHLO of its jitted version, runs
it, and compares the time per call of the jitted and the eager versions.
"""
from __future__ import annotations

import time

import numpy as np

import hlox
import hlox.numpy as jnp


def predict(w, b, x):
  """A tiny dense layer with a tanh nonlinearity."""
  return jnp.tanh(x @ w + b) if hasattr(jnp, "matmul") else jnp.tanh(x * w + b)


def tanh_composite(x):
  """tanh written with exp, to differentiate."""
  e = jnp.exp(-2.0 * x)
  return (1.0 - e) / (1.0 + e)


def _time_per_call(fn, *args, rounds=5, calls=200) -> float:
  best = float("inf")
  for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(calls):
      out = fn(*args)
    hlox.block_until_ready(out)
    best = min(best, (time.perf_counter() - start) / calls)
  return best


def pmap_section() -> None:
  n = hlox.device_count()
  print(f"\n# pmap: one replica per device ({n} devices), psum across them")
  f = hlox.pmap(lambda x: x / hlox.lax.psum(x, "i"), axis_name="i")
  y = f(jnp.arange(float(n)))
  print(f"pmap(lambda x: x / psum(x, 'i'))(arange({n}.)) = {np.asarray(y).tolist()}")
  print(f"result spread over: {sorted(d.id for d in y.devices())}")


def main() -> None:
  import os
  if "HLOX_NUM_CPU_DEVICES" not in os.environ:
    hlox.config.update("num_cpu_devices", 4)  # a few CPU devices, for the pmap section
  print(f"hlox {hlox.version.hlox_version} (JAX {hlox.__version__} API) — backend: "
        f"{hlox.default_backend()}")
  print(f"devices: {hlox.devices()}")

  rng = np.random.default_rng(0)
  w = jnp.asarray(rng.standard_normal((4, 3)).astype(np.float32))
  b = jnp.asarray(rng.standard_normal(3).astype(np.float32))
  x = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32))

  print("\n# The jaxpr of predict(w, b, x):")
  print(hlox.make_jaxpr(predict)(w, b, x))

  fast = hlox.jit(predict)
  print("\n# The StableHLO of jit(predict):")
  print(fast.lower(w, b, x).as_text())

  out = fast(w, b, x)
  print("# jit(predict)(w, b, x) =")
  print(out)
  eager = predict(w, b, x)
  print(f"matches eager: {bool(np.allclose(np.asarray(out), np.asarray(eager), atol=1e-6))}")

  print("\n# Autodiff: tanh(x) = (1 - exp(-2x)) / (1 + exp(-2x))")
  g = hlox.grad(tanh_composite)
  print(f"grad at 1.0: {float(g(1.0)):.7f}")
  g3 = hlox.grad(hlox.grad(g))
  print(f"third derivative at 1.0: {float(g3(1.0)):.8f}")
  print("# The jaxpr of grad(tanh):")
  print(hlox.make_jaxpr(g)(1.0))

  print("\n# vmap: per-example gradients of a linear model's squared error")
  loss = lambda w, xi, yi: jnp.sum((xi @ w - yi) ** 2)
  xs = jnp.asarray(rng.standard_normal((32, 4)).astype(np.float32))
  ys = jnp.asarray(rng.standard_normal((32, 3)).astype(np.float32))
  per_example = hlox.jit(hlox.vmap(hlox.grad(loss), in_axes=(None, 0, 0)))
  grads = per_example(w, xs, ys)
  print(f"per-example gradient shape: {grads.shape}")
  single = hlox.jit(hlox.grad(loss))
  loop = lambda w, xs, ys: [single(w, xs[i], ys[i]) for i in range(xs.shape[0])]
  looped = loop(w, xs, ys)
  same = all(np.allclose(np.asarray(grads[i]), np.asarray(looped[i]), atol=1e-5)
             for i in range(32))
  print(f"matches a Python loop: {same}")
  vmap_t = _time_per_call(per_example, w, xs, ys, calls=50)
  loop_t = _time_per_call(loop, w, xs, ys, calls=5)
  print(f"time: vmap {vmap_t * 1e6:.0f} us, Python loop {loop_t * 1e6:.0f} us "
        f"({loop_t / vmap_t:.0f}x faster)")

  print("\n# Random numbers (threefry2x32, the same bits as JAX)")
  key = hlox.random.PRNGKey(0)
  print(f"uniform(key, (3,)): {np.asarray(hlox.random.uniform(key, (3,))).tolist()}")
  print(f"split(key): {np.asarray(hlox.random.split(key)).tolist()}")

  pmap_section()

  jit_t = _time_per_call(fast, w, b, x)
  eager_t = _time_per_call(predict, w, b, x)
  print(f"\ntime per call: jit {jit_t * 1e6:.1f} us, eager {eager_t * 1e6:.1f} us "
        f"({eager_t / jit_t:.1f}x)")


if __name__ == "__main__":
  main()
