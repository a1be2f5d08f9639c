"""One benchmark measurement in a fresh process, for hlox or JAX; prints one JSON line.

Run by ``bench/run.py``; for hlox, ``import jax`` is blocked so a hidden dependency on JAX
fails loudly instead of distorting the figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def block_jax():
  class BlockJax:
    def find_spec(self, name, path=None, target=None):
      if name == "jax" or name.startswith("jax."):
        raise ImportError(f"import of {name} is blocked in the hlox benchmark process")
      return None
  sys.meta_path.insert(0, BlockJax())


def load(lib):
  if lib == "hlox":
    block_jax()
    import hlox as mod
    import hlox.numpy as jnp
    return mod, jnp, mod.clear_caches
  import jax as mod
  import jax.numpy as jnp
  return mod, jnp, mod.clear_caches


def best_per_call(fn, calls: int, repeats: int = 7) -> float:
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(calls):
      fn()
    best = min(best, (time.perf_counter() - start) / calls)
  return best


def bench_jit_dispatch(lib):
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(8, dtype=np.float32))
  f = mod.jit(lambda a: jnp.sin(a))
  f(x).block_until_ready()
  return best_per_call(lambda: f(x), 3000)


def bench_eager_sin(lib):
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(8, dtype=np.float32))
  jnp.sin(x).block_until_ready()
  return best_per_call(lambda: jnp.sin(x), 3000)


def _eager(lib, op, calls=2000):
  """Per-call time of one eager operation on small arrays (``op(jnp, x, y, m)``)."""
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
  y = jnp.asarray(np.ones((3, 4), np.float32))
  m = jnp.asarray(np.ones((4, 4), np.float32))
  op(jnp, x, y, m).block_until_ready()
  return best_per_call(lambda: op(jnp, x, y, m), calls)


def bench_eager_mul_scalar(lib):
  return _eager(lib, lambda jnp, x, y, m: x * 1.5)


def bench_eager_add(lib):
  return _eager(lib, lambda jnp, x, y, m: x + y)


def bench_eager_where(lib):
  return _eager(lib, lambda jnp, x, y, m: jnp.where(x > 1, x, 0.))


def bench_eager_dot(lib):
  return _eager(lib, lambda jnp, x, y, m: jnp.dot(x, m))


def bench_eager_reshape(lib):
  return _eager(lib, lambda jnp, x, y, m: x.reshape(4, 3))


def bench_eager_slice(lib):
  return _eager(lib, lambda jnp, x, y, m: x[1:3])


def bench_eager_sum_axis(lib):
  return _eager(lib, lambda jnp, x, y, m: x.sum(0))


def bench_eager_at_set(lib):
  return _eager(lib, lambda jnp, x, y, m: x.at[1].set(2.0))


def bench_eager_chain_20(lib):
  return _eager(lib, lambda jnp, x, y, m: _chain(jnp, 20)(x), calls=200)


def bench_jit_dispatch_6_in_4_out(lib):
  mod, jnp, _ = load(lib)
  import numpy as np
  args = [jnp.asarray(np.full(8, i, np.float32)) for i in range(6)]
  f = mod.jit(lambda a, b, c, d, e, g: (a + b, c * d, e - g, a * g))
  f(*args)[0].block_until_ready()
  return best_per_call(lambda: f(*args), 3000)


def _mlp(jnp, layers):
  def predict(params, x):
    for w, b in params:
      x = jnp.tanh(x @ w + b)
    return x
  return predict


def bench_first_call_mlp(lib):
  """Trace + lower + compile + run of a fresh 20-layer dense tanh network."""
  mod, jnp, clear = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  params = [(jnp.asarray(rng.standard_normal((64, 64)).astype(np.float32) * 0.1),
             jnp.asarray(np.zeros(64, np.float32))) for _ in range(20)]
  x = jnp.asarray(rng.standard_normal((8, 64)).astype(np.float32))
  # Warm the library itself (first-use imports, client) with an unrelated function.
  mod.jit(lambda a: a + 1)(x).block_until_ready()
  best = float("inf")
  for _ in range(5):
    clear()
    f = mod.jit(_mlp(jnp, 20))
    start = time.perf_counter()
    f(params, x).block_until_ready()
    best = min(best, time.perf_counter() - start)
  return best


def _chain(jnp, n):
  def f(x):
    for i in range(n):
      x = jnp.sin(x) + 1.0 if i % 2 else x * 1.0001
    return x
  return f


def _trace_lower(lib, n):
  mod, jnp, clear = load(lib)
  import numpy as np
  x = jnp.asarray(np.ones(8, np.float32))
  best = float("inf")
  for _ in range(3):
    clear()
    f = mod.jit(_chain(jnp, n))
    start = time.perf_counter()
    f.lower(x).as_text()
    best = min(best, time.perf_counter() - start)
  return best


def bench_trace_lower_200(lib):
  return _trace_lower(lib, 200)


def bench_trace_lower_2000(lib):
  return _trace_lower(lib, 2000)


def _grad_mlp_setup(lib):
  mod, jnp, clear = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  sizes = [784, 512, 512, 10]
  params = [(jnp.asarray(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m)),
             jnp.asarray(np.zeros(n, np.float32))) for m, n in zip(sizes[:-1], sizes[1:])]
  x = jnp.asarray(rng.standard_normal((128, 784)).astype(np.float32))
  y = jnp.asarray(rng.standard_normal((128, 10)).astype(np.float32))

  def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
      h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    out = h @ w + b
    return jnp.sum((out - y) ** 2) / out.shape[0]
  return mod, jnp, clear, params, x, y, loss


def bench_grad_mlp_step(lib):
  """Steady-state jit(grad(loss)) step of a 784-512-512-10 tanh MLP, batch 128."""
  mod, jnp, clear, params, x, y, loss = _grad_mlp_setup(lib)
  step = mod.jit(mod.grad(loss))
  mod.block_until_ready(step(params, x, y))
  return best_per_call(lambda: mod.block_until_ready(step(params, x, y)), 50)


def bench_grad_mlp_first_call(lib):
  """Trace + AD + lower + compile + run of jit(grad(loss)), fresh each time."""
  mod, jnp, clear, params, x, y, loss = _grad_mlp_setup(lib)
  mod.jit(lambda a: a + 1)(x).block_until_ready()
  best = float("inf")
  for _ in range(3):
    clear()
    step = mod.jit(mod.grad(loss))
    start = time.perf_counter()
    mod.block_until_ready(step(params, x, y))
    best = min(best, time.perf_counter() - start)
  return best


def bench_make_jaxpr_grad(lib):
  best = float("inf")
  for i in range(8):
    # A fresh loss function each time, so no library cache can answer.
    mod, jnp, clear, params, x, y, loss = _grad_mlp_setup(lib)
    start = time.perf_counter()
    mod.make_jaxpr(mod.grad(loss))(params, x, y)
    if i:  # the first round pays one-time imports
      best = min(best, time.perf_counter() - start)
  return best


def _per_example_setup(lib, sizes):
  mod, jnp, clear = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  params = [(jnp.asarray(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m)),
             jnp.asarray(np.zeros(n, np.float32))) for m, n in zip(sizes[:-1], sizes[1:])]
  xs = jnp.asarray(rng.standard_normal((64, sizes[0])).astype(np.float32))
  ys = jnp.asarray(rng.standard_normal((64, sizes[-1])).astype(np.float32))

  def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
      h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return jnp.sum((h @ w + b - y) ** 2)
  return mod, params, xs, ys, loss


def _per_example_vmap(lib, sizes):
  mod, params, xs, ys, loss = _per_example_setup(lib, sizes)
  f = mod.jit(mod.vmap(mod.grad(loss), in_axes=(None, 0, 0)))
  mod.block_until_ready(f(params, xs, ys))
  return best_per_call(lambda: mod.block_until_ready(f(params, xs, ys)), 100)


def bench_per_example_grads_64_32_10(lib):
  """jit(vmap(grad(loss))) over a batch of 64 on a 64-32-10 tanh MLP."""
  return _per_example_vmap(lib, [64, 32, 10])


def bench_per_example_grads_256_128_10(lib):
  return _per_example_vmap(lib, [256, 128, 10])


def bench_per_example_loop_64_32_10(lib):
  """The same per-example gradients by a Python loop of jit(grad(loss)) calls."""
  mod, params, xs, ys, loss = _per_example_setup(lib, [64, 32, 10])
  g = mod.jit(mod.grad(loss))
  rows = [(xs[i], ys[i]) for i in range(64)]
  mod.block_until_ready(g(params, *rows[0]))

  def run():
    return mod.block_until_ready([g(params, x, y) for x, y in rows])
  return best_per_call(run, 5)


def bench_random_normal_1m(lib):
  """Steady-state jitted draw of 1M standard normals (threefry bits, erfinv)."""
  mod, _, _ = load(lib)
  random = mod.random
  key = random.PRNGKey(0)
  f = mod.jit(lambda k: random.normal(k, (1_000_000,)))
  mod.block_until_ready(f(key))
  return best_per_call(lambda: mod.block_until_ready(f(key)), 20)


def bench_pmap_psum_8(lib):
  """``pmap(psum)`` over 8 CPU devices on f32[8, 1024], one call waited for each time (the
  CPU backend aborts when launches of collective programs overlap on a 2-core machine, in
  JAX as well), the input already split over the devices by the previous call."""
  import os
  os.environ["HLOX_NUM_CPU_DEVICES"] = "8"
  os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
  mod, _, _ = load(lib)
  import numpy as np
  psum = mod.lax.psum
  f = mod.pmap(lambda x: psum(x, "i"), axis_name="i")
  return _fed_back(f, np.zeros((8, 1024), np.float32))  # zeros: repeated sums stay finite


def _fed_back(f, x, calls=200):
  """Per-call time of ``x = f(x)`` (each result is the next call's argument)."""
  state = [f(x)]
  state[0].block_until_ready()

  def run():
    state[0] = f(state[0])
    state[0].block_until_ready()
  return best_per_call(run, calls)


def _rnn_scan_setup(lib):
  mod, jnp, clear = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  T, B, D, H = 100, 32, 128, 128
  params = {"wx": jnp.asarray((rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32)),
            "wh": jnp.asarray((rng.standard_normal((H, H)) / np.sqrt(H)).astype(np.float32)),
            "wo": jnp.asarray((rng.standard_normal((H, 1)) / np.sqrt(H)).astype(np.float32))}
  xs = jnp.asarray(rng.standard_normal((T, B, D)).astype(np.float32))
  y = jnp.asarray(rng.standard_normal((B, 1)).astype(np.float32))
  scan = mod.lax.scan

  def rnn_loss(params, xs, y):
    def step(h, x):
      h = jnp.tanh(x @ params["wx"] + h @ params["wh"])
      return h, None
    h, _ = scan(step, jnp.zeros((B, H), jnp.float32), xs)
    return jnp.mean((h @ params["wo"] - y) ** 2)
  return mod, clear, params, xs, y, rnn_loss


def bench_rnn_scan_grad_step(lib):
  """Steady-state jit(grad(rnn_loss)): a tanh RNN scanned over 100 steps, hidden 128,
  batch 32."""
  mod, clear, params, xs, y, rnn_loss = _rnn_scan_setup(lib)
  step = mod.jit(mod.grad(rnn_loss))
  mod.block_until_ready(step(params, xs, y))
  return best_per_call(lambda: mod.block_until_ready(step(params, xs, y)), 20)


def bench_rnn_scan_grad_first_call(lib):
  """Trace + AD of scan + lower + compile + run of jit(grad(rnn_loss)), fresh each time."""
  mod, clear, params, xs, y, rnn_loss = _rnn_scan_setup(lib)
  mod.jit(lambda a: a + 1)(y).block_until_ready()
  best = float("inf")
  for _ in range(3):
    clear()
    step = mod.jit(mod.grad(rnn_loss))
    start = time.perf_counter()
    mod.block_until_ready(step(params, xs, y))
    best = min(best, time.perf_counter() - start)
  return best


def bench_fft_c64_1024x1024(lib):
  """Steady-state ``jit(jnp.fft.fft)`` over the last axis of a complex64 [1024, 1024]."""
  mod, jnp, _ = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  x = jnp.asarray((rng.standard_normal((1024, 1024)) + 1j * rng.standard_normal(
      (1024, 1024))).astype(np.complex64))
  f = mod.jit(jnp.fft.fft)
  mod.block_until_ready(f(x))
  return best_per_call(lambda: mod.block_until_ready(f(x)), 10)


def bench_jit_wrap_call(lib):
  """``jit(f)`` made once and called: what ``fastmath.jit(f)(x)`` is measured against."""
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(8, dtype=np.float32))

  def f(a):
    return jnp.sin(a)
  g = mod.jit(f)
  g(x).block_until_ready()
  return best_per_call(lambda: (mod.jit(f), g(x)), 3000)


def bench_jit_inline_new_wrapper(lib):
  """``jit(f)(x)`` written inline: a new wrapper of the same ``f`` on every call (a cache hit
  in JAX, keyed on ``f``)."""
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(8, dtype=np.float32))

  def f(a):
    return jnp.sin(a) * 2.0
  mod.block_until_ready(mod.jit(f)(x))
  return best_per_call(lambda: mod.block_until_ready(mod.jit(f)(x)), 500)


def bench_jit_inline_partial(lib):
  """``jit(partial(g, k))(x)`` inline: a new partial (same function and arguments) each call."""
  mod, jnp, _ = load(lib)
  import functools
  import numpy as np
  x = jnp.asarray(np.arange(8, dtype=np.float32))

  def g(k, a):
    return a * k
  mod.block_until_ready(mod.jit(functools.partial(g, 2.0))(x))
  return best_per_call(lambda: mod.block_until_ready(mod.jit(functools.partial(g, 2.0))(x)), 20)


def _fastmath(lib):
  """hlox.fastmath (hlox backend) for hlox; JAX's own functions for JAX (the baseline)."""
  mod, jnp, _ = load(lib)
  if lib != "hlox":
    return mod, jnp, mod.jit
  import hlox.fastmath as fastmath
  return mod, fastmath.numpy, fastmath.jit


def bench_fastmath_numpy_sin(lib):
  """``fastmath.numpy.sin(x)`` through the lazy proxy; minus ``eager_sin`` it is the
  proxy's cost per call (target <= 1 us)."""
  _, np_, _ = _fastmath(lib)
  import numpy as np
  x = np_.asarray(np.arange(8, dtype=np.float32))
  np_.sin(x).block_until_ready()
  return best_per_call(lambda: np_.sin(x), 3000)


def bench_fastmath_jit_wrap_call(lib):
  """``fastmath.jit(f)`` plus a call of the (already compiled) result; minus
  ``jit_wrap_call`` it is fastmath.jit's cost per use (target <= 1 us). (Both wrap every
  time; hlox compiles again for a new jit wrapper of the same function, so the compiled
  function is called, not the fresh wrapper.)"""
  _, np_, jit = _fastmath(lib)
  import numpy as np
  x = np_.asarray(np.arange(8, dtype=np.float32))

  def f(a):
    return np_.sin(a)
  g = jit(f)
  g(x).block_until_ready()
  return best_per_call(lambda: (jit(f), g(x)), 3000)


def bench_fastmath_numpy_normal_1m(lib):
  """1M standard normals from the NumPy backend's threefry (NumPy only, no XLA), against
  JAX's jitted draw (target < 0.5 s)."""
  if lib == "hlox":
    block_jax()
    import hlox.fastmath as fastmath
    key = None
    with fastmath.use_backend("numpy"):
      key = fastmath.random.get_prng(0)
      return best_per_call(lambda: fastmath.random.normal(key, (1_000_000,)), 1, repeats=5)
  mod, _, _ = load(lib)
  key = mod.random.PRNGKey(0)
  f = mod.jit(lambda k: mod.random.normal(k, (1_000_000,)))
  mod.block_until_ready(f(key))
  return best_per_call(lambda: mod.block_until_ready(f(key)), 5, repeats=5)


def _linalg_bench(lib, name, shape, calls=50):
  mod, jnp, _ = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  a = rng.standard_normal(shape).astype(np.float32)
  n = shape[-1]
  if name == "cholesky":
    a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)
  x = jnp.asarray(a)
  if name == "solve":
    b = jnp.asarray(rng.standard_normal(shape[:-1] + (1,)).astype(np.float32))
    f = mod.jit(jnp.linalg.solve)
    call = lambda: f(x, b)
  else:
    f = mod.jit(getattr(jnp.linalg, name))
    call = lambda: f(x)
  mod.block_until_ready(call())
  return best_per_call(lambda: mod.block_until_ready(call()), calls)


# GPU-sized workloads (bench/gpu.sh runs them with --platform cuda): too slow for the CPU runs.
def _best_of_few(mod, call) -> float:
  mod.block_until_ready(call())
  return best_per_call(lambda: mod.block_until_ready(call()), 10, repeats=5)


def bench_gpu_random_normal_1e7(lib):
  mod, jnp, _ = load(lib)
  key = mod.random.PRNGKey(0)
  f = mod.jit(lambda k: mod.random.normal(k, (10_000_000,)))
  return _best_of_few(mod, lambda: f(key))


def bench_gpu_solve_2048(lib):
  return _linalg_bench(lib, "solve", (2048, 2048), calls=10)


def bench_gpu_cholesky_2048(lib):
  return _linalg_bench(lib, "cholesky", (2048, 2048), calls=10)


def bench_gpu_batched_matmul_64x512(lib):
  mod, jnp, _ = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  a = jnp.asarray(rng.standard_normal((64, 512, 512)).astype(np.float32))
  b = jnp.asarray(rng.standard_normal((64, 512, 512)).astype(np.float32))
  f = mod.jit(jnp.matmul)
  return _best_of_few(mod, lambda: f(a, b))


def bench_cholesky_256(lib):
  return _linalg_bench(lib, "cholesky", (256, 256))


def bench_cholesky_64x32(lib):
  return _linalg_bench(lib, "cholesky", (64, 32, 32))


def bench_solve_256(lib):
  return _linalg_bench(lib, "solve", (256, 256))


def bench_solve_64x32(lib):
  return _linalg_bench(lib, "solve", (64, 32, 32))


def bench_qr_256(lib):
  return _linalg_bench(lib, "qr", (256, 256))


def bench_qr_64x32(lib):
  return _linalg_bench(lib, "qr", (64, 32, 32))





def _spectral_bench(lib, name, shape, calls):
  """Steady-state jit(jnp.linalg.<name>) on a float32 input of ``shape``."""
  mod, jnp, _ = load(lib)
  import numpy as np
  a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  x = jnp.asarray(a + np.swapaxes(a, -1, -2))  # symmetric, so eigh and svd see one input
  f = mod.jit(getattr(jnp.linalg, name))
  mod.block_until_ready(f(x))
  return best_per_call(lambda: mod.block_until_ready(f(x)), calls)


def bench_eigh_256(lib):
  """jit(jnp.linalg.eigh) on float32 [256, 256] (LAPACK ssyevd)."""
  return _spectral_bench(lib, "eigh", (256, 256), 5)


def bench_eigh_batched_64_32(lib):
  """jit(jnp.linalg.eigh) on float32 [64, 32, 32]."""
  return _spectral_bench(lib, "eigh", (64, 32, 32), 10)


def bench_svd_256(lib):
  """jit(jnp.linalg.svd) on float32 [256, 256] (LAPACK sgesdd, full matrices)."""
  return _spectral_bench(lib, "svd", (256, 256), 5)


def bench_svd_batched_64_32(lib):
  """jit(jnp.linalg.svd) on float32 [64, 32, 32]."""
  return _spectral_bench(lib, "svd", (64, 32, 32), 10)


def _scipy_mod(lib):
  mod, jnp, _ = load(lib)
  if lib == "hlox":
    import hlox.scipy.special as special
    import hlox.scipy.stats as stats
  else:
    import jax.scipy.special as special
    import jax.scipy.stats as stats
  return mod, jnp, special, stats


def bench_scipy_special_mix_1m(lib):
  """Steady-state jitted ndtri + log_ndtr + erfcx + gammaln on 1M float32 values."""
  mod, jnp, special, _ = _scipy_mod(lib)
  import numpy as np
  x = jnp.asarray(np.linspace(0.001, 0.999, 1 << 20, dtype=np.float32))
  f = mod.jit(lambda v: special.ndtri(v) + special.log_ndtr(v * 8 - 4)
              + special.erfcx(v * 6 - 1) + special.gammaln(v * 10))
  f(x).block_until_ready()
  return best_per_call(lambda: f(x).block_until_ready(), 5)


def bench_scipy_stats_logpdf_1m(lib):
  """Steady-state jitted norm/t/gamma/beta logpdf sum on 1M float32 values."""
  mod, jnp, _, stats = _scipy_mod(lib)
  import numpy as np
  x = jnp.asarray(np.linspace(0.001, 0.999, 1 << 20, dtype=np.float32))
  f = mod.jit(lambda v: stats.norm.logpdf(v, 0.3, 2.0) + stats.t.logpdf(v, 3.0)
              + stats.gamma.logpdf(v, 2.5) + stats.beta.logpdf(v, 2.0, 3.0))
  f(x).block_until_ready()
  return best_per_call(lambda: f(x).block_until_ready(), 10)



def bench_jit_of_pmap_8(lib):
  """``jit`` of a function with a ``pmap(psum)`` over 8 CPU devices and elementwise work
  before and after it, on f32[8, 1024]: one replicated program per call (waited for, as in
  ``bench_pmap_psum_8``), its result fed back in."""
  import os
  os.environ["HLOX_NUM_CPU_DEVICES"] = "8"
  os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
  mod, jnp, _ = load(lib)
  import numpy as np
  psum = mod.lax.psum
  p = mod.pmap(lambda x: psum(x, "i"), axis_name="i")
  f = mod.jit(lambda x: jnp.tanh(p(x * 0.5) * 0.125) + 0.25)
  return _fed_back(f, np.zeros((8, 1024), np.float32))


# --- sharded arrays (issue 19): 8 CPU devices, programs partitioned by XLA ---------------

def _mesh(mod, shape, names, axis_type="Auto"):
  types = (getattr(mod.sharding.AxisType, axis_type),) * len(shape)
  return mod.make_mesh(shape, names, axis_types=types)


def _eight_devices():
  import os
  os.environ["HLOX_NUM_CPU_DEVICES"] = "8"
  os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"


def _mlp_sharded_step(lib, mesh_shape, names, batch_spec, w1_spec, w2_spec, axis_type="Auto"):
  _eight_devices()
  mod, jnp, _ = load(lib)
  import numpy as np
  NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
  mesh = _mesh(mod, mesh_shape, names, axis_type)
  rng = np.random.default_rng(0)
  put = lambda v, spec: mod.device_put(v.astype(np.float32), NS(mesh, P(*spec)))
  params = (put(rng.standard_normal((256, 512)) / 16, w1_spec),
            put(rng.standard_normal((512, 10)) / 22, w2_spec))
  xb = put(rng.standard_normal((512, 256)), batch_spec)
  yb = put(rng.standard_normal((512, 10)), batch_spec)

  def loss(params, x, y):
    w1, w2 = params
    return jnp.mean((jnp.tanh(x @ w1) @ w2 - y) ** 2)

  @mod.jit
  def step(params, x, y):
    g = mod.grad(loss)(params, x, y)
    return tuple(p - 0.01 * gp for p, gp in zip(params, g))
  state = [step(params, xb, yb)]
  mod.block_until_ready(state[0])

  def run():
    state[0] = step(state[0], xb, yb)
    mod.block_until_ready(state[0])
  return best_per_call(run, 50)


def bench_sharded_dp_mlp_step_8(lib):
  """A data-parallel MLP training step (256-512-10, batch 512 split over 8 devices, weights
  replicated), its result fed back."""
  return _mlp_sharded_step(lib, (8,), ("data",), ("data",), (), ())


def bench_explicit_dp_mlp_step_8(lib):
  """The data-parallel step on a mesh of Explicit axes (make_mesh's default): the split is
  part of every value's type (sharding in types); the gradients' products contract the split
  batch dimension, typed by the transpose rules."""
  return _mlp_sharded_step(lib, (8,), ("data",), ("data",), (), (), axis_type="Explicit")


def bench_sharded_dp_mp_step_2x4(lib):
  """The same step on a 2x4 mesh: batch split over 'data', the hidden layer over 'model'."""
  return _mlp_sharded_step(lib, (2, 4), ("data", "model"), ("data",), (None, "model"),
                           ("model", None))


def bench_shard_map_psum_8(lib):
  """``shard_map(psum)`` over a mesh of 8 devices on f32[8, 1024] split along 'i', its result
  fed back (each call waited for)."""
  _eight_devices()
  mod, _, _ = load(lib)
  import numpy as np
  NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
  mesh = _mesh(mod, (8,), ("i",))
  psum = mod.lax.psum
  f = mod.jit(mod.shard_map(lambda x: psum(x, "i"), mesh=mesh, in_specs=P("i"),
                            out_specs=P("i")))
  x = mod.device_put(np.zeros((8, 1024), np.float32), NS(mesh, P("i")))
  return _fed_back(f, x)


# --- peak memory ------------------------------------------------------------------------
# ``bench_rss_*`` return the process's peak resident set size in GB (not seconds): run.py
# prints them in MB. Each runs a representative workload to its steady state in a fresh
# process, so the figure is the library's import footprint plus what the workload keeps.

def _peak_rss_gb() -> float:
  import resource
  # ru_maxrss is in KiB on Linux (bytes on macOS).
  kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  return kib * (1 if sys.platform == "darwin" else 1024) / 1e9


def bench_rss_import(lib):
  """Peak RSS after importing the library and its NumPy API (GB)."""
  load(lib)
  return _peak_rss_gb()


def _rss_mlp_train(lib):
  mod, jnp, clear, params, x, y, loss = _grad_mlp_setup(lib)
  step = mod.jit(lambda p, x, y: mod.tree_util.tree_map(
      lambda a, g: a - 0.01 * g, p, mod.grad(loss)(p, x, y)))
  for _ in range(20):
    params = step(params, x, y)
  mod.block_until_ready(params)


def _rss_per_example(lib):
  mod, params, xs, ys, loss = _per_example_setup(lib, [256, 128, 10])
  f = mod.jit(mod.vmap(mod.grad(loss), in_axes=(None, 0, 0)))
  for _ in range(20):
    mod.block_until_ready(f(params, xs, ys))


def _rss_rnn_scan_grad(lib):
  mod, clear, params, xs, y, rnn_loss = _rnn_scan_setup(lib)
  step = mod.jit(mod.grad(rnn_loss))
  for _ in range(20):
    mod.block_until_ready(step(params, xs, y))


def _rss_eager(lib):
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.arange(64, dtype=np.float32).reshape(8, 8))
  for _ in range(50):
    y = jnp.sin(x) * 1.5 + 0.5
    y = jnp.where(y > 1, y, 0.0) @ x
    y = y.reshape(64)[1:3].sum(0) + x.sum(0)
    x = x.at[0].set(y[0] * 0.0)
  mod.block_until_ready(x)


def bench_rss_mlp_train(lib):
  """Peak RSS (GB) of 20 jitted SGD steps on the 784-512-512-10 tanh MLP, batch 128."""
  _rss_mlp_train(lib)
  return _peak_rss_gb()


def bench_rss_per_example(lib):
  """Peak RSS (GB) of jit(vmap(grad)) per-example gradients, 256-128-10 MLP, batch 64."""
  _rss_per_example(lib)
  return _peak_rss_gb()


def bench_rss_rnn_scan_grad(lib):
  """Peak RSS (GB) of jit(grad) of the 100-step tanh RNN scan (hidden 128, batch 32)."""
  _rss_rnn_scan_grad(lib)
  return _peak_rss_gb()


def bench_rss_worker(lib):
  """Peak RSS (GB) of one 1-device worker running all of the above in turn: MLP training,
  per-example gradients, the RNN scan gradient, eager ops, a 1M normal draw."""
  _rss_mlp_train(lib)
  _rss_per_example(lib)
  _rss_rnn_scan_grad(lib)
  _rss_eager(lib)
  mod, _, _ = load(lib)
  f = mod.jit(lambda k: mod.random.normal(k, (1_000_000,)))
  mod.block_until_ready(f(mod.random.PRNGKey(0)))
  return _peak_rss_gb()


def bench_rss_many_compiles(lib):
  """Peak RSS (GB) after 300 distinct jitted programs (new functions, new shapes), each
  compiled once and kept callable: what the compile caches hold per program."""
  mod, jnp, _ = load(lib)
  fns = []
  for i in range(300):
    f = mod.jit(lambda v, i=i: jnp.tanh(jnp.sin(v) * i + jnp.cos(v)) @ v + jnp.sum(v * v))
    mod.block_until_ready(f(jnp.ones((i + 1,), jnp.float32)))
    fns.append(f)
  return _peak_rss_gb()


def bench_rss_scan_invariant(lib):
  """Peak RSS (GB) of jit(grad) of a 200-step scan whose body uses ``tanh(W)`` of a
  closed-over 512x512 ``W``: a residual that does not change between steps must be saved
  once, not stacked 200 times (which would be 210 MB)."""
  mod, jnp, _ = load(lib)
  import numpy as np
  rng = np.random.default_rng(0)
  w = jnp.asarray((rng.standard_normal((512, 512)) / 23).astype(np.float32))
  xs = jnp.asarray(rng.standard_normal((200, 8, 512)).astype(np.float32))

  def loss(w, xs):
    def step(h, x):
      return jnp.tanh(h @ jnp.tanh(w) + x), None
    h, _ = mod.lax.scan(step, jnp.zeros((8, 512), jnp.float32), xs)
    return jnp.sum(h * h)
  g = mod.jit(mod.grad(loss))
  for _ in range(5):
    mod.block_until_ready(g(w, xs))
  return _peak_rss_gb()


def bench_rss_closed_over_consts(lib):
  """Peak RSS (GB) of 6 jitted functions that close over one 16 MB NumPy weight matrix,
  each compiled and called twice: one device copy of the matrix is enough."""
  mod, jnp, _ = load(lib)
  import numpy as np
  w = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
  x = jnp.ones((4, 2048), jnp.float32)
  fns = [mod.jit(lambda v, i=i: v @ w + i) for i in range(6)]
  for f in fns:
    for _ in range(2):
      mod.block_until_ready(f(x))
  return _peak_rss_gb()


def bench_debug_print_jit(lib):
  """A jitted function with 10 ordered ``debug.print``s of scalars, stdout discarded: the
  per-call cost (the issue asks for at most 50 us per printed value over the plain call)."""
  import io
  import sys
  mod, jnp, _ = load(lib)
  import numpy as np

  def f(x):
    for i in range(10):
      mod.debug.print("v {}", x + i, ordered=True)
    return x + 1

  g = mod.jit(f)
  x = jnp.asarray(np.float32(1))
  wait = getattr(mod, "effects_barrier", lambda: None)  # JAX runs callbacks asynchronously

  class _Null(io.TextIOBase):
    def write(self, s):
      return len(s)

  real, sys.stdout = sys.stdout, _Null()
  try:
    g(x).block_until_ready()
    wait()

    def call():
      g(x).block_until_ready()
      wait()
    return best_per_call(call, 100)
  finally:
    sys.stdout = real



def _vae_setup(lib):
  """A VAE on synthetic binarised 28x28 images, modelled on JAX's examples/mnist_vae.py:
  encoder 784-512-512-(10, 10) and decoder 10-512-512-784 tanh MLPs, softplus variances,
  a Monte Carlo ELBO, a hand-written momentum optimizer, and an epoch that is one jitted
  ``fori_loop`` over 10 batches of 32."""
  mod, jnp, clear = load(lib)
  import numpy as np
  random, lax, tree_map = mod.random, mod.lax, mod.tree_util.tree_map
  rng = np.random.default_rng(0)

  def dense(m, n):
    return (jnp.asarray((rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)),
            jnp.asarray(np.zeros(n, np.float32)))
  params = ([dense(784, 512), dense(512, 512), dense(512, 10), dense(512, 10)],
            [dense(10, 512), dense(512, 512), dense(512, 784)])
  batch_size, num_batches, step_size, mass = 32, 10, 1e-3, 0.9
  images = jnp.asarray(rng.random((batch_size * num_batches, 784)).astype(np.float32))
  softplus = lambda v: jnp.logaddexp(0., v)

  def mlp(layers, h):
    for w, b in layers[:-1]:
      h = jnp.tanh(h @ w + b)
    w, b = layers[-1]
    return h @ w + b

  def encode(enc, x):
    h = x
    for w, b in enc[:2]:
      h = jnp.tanh(h @ w + b)
    (wm, bm), (ws, bs) = enc[2:]
    return h @ wm + bm, softplus(h @ ws + bs)

  def elbo(key, params, x):
    enc, dec = params
    mu, sigmasq = encode(enc, x)
    z = mu + jnp.sqrt(sigmasq) * random.normal(key, mu.shape)
    logits = mlp(dec, z)
    log_px = -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))
    kl = -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu ** 2. - sigmasq)
    return log_px - kl

  def run_epoch(key, state, images):
    def body(i, state):
      params, velocity = state
      elbo_key, data_key = random.split(random.fold_in(key, i))
      batch = random.bernoulli(data_key, lax.dynamic_slice_in_dim(
          images, i * batch_size, batch_size))
      g = mod.grad(lambda p: -elbo(elbo_key, p, batch) / batch_size)(params)
      velocity = tree_map(lambda v, d: mass * v + d, velocity, g)
      params = tree_map(lambda p, v: p - step_size * v, params, velocity)
      return params, velocity
    return lax.fori_loop(0, num_batches, body, state)

  def image_grid(nrow, ncol, imagevecs):
    images = iter(imagevecs.reshape((-1, 28, 28)))
    return jnp.vstack([jnp.hstack([next(images).T for _ in range(ncol)][::-1])
                       for _ in range(nrow)]).T

  def evaluate(key, params, images):
    """The test ELBO and a 20x25 grid of 500 images drawn from the decoder."""
    elbo_key, data_key, code_key, image_key = random.split(key, 4)
    test_elbo = elbo(elbo_key, params, random.bernoulli(data_key, images)) / images.shape[0]
    logits = mlp(params[1], random.normal(code_key, (500, 10)))
    sampled = random.bernoulli(image_key, softplus(logits))
    return test_elbo, image_grid(20, 25, sampled)

  state = (params, tree_map(jnp.zeros_like, params))
  # Warm the library itself (first-use imports, client) with an unrelated function.
  mod.jit(lambda a: a + 1)(images).block_until_ready()
  return mod, random, images, state, mod.jit(run_epoch), mod.jit(evaluate)


def bench_vae_epoch_first_call(lib):
  """Trace + AD + lower + compile + run of the jitted VAE epoch (a fresh process)."""
  mod, random, images, state, run_epoch, _ = _vae_setup(lib)
  key = random.PRNGKey(0)
  start = time.perf_counter()
  mod.block_until_ready(run_epoch(key, state, images))
  return time.perf_counter() - start


def bench_vae_epoch_step(lib):
  """Steady-state call of the jitted VAE epoch (10 batches of 32)."""
  mod, random, images, state, run_epoch, _ = _vae_setup(lib)
  key = random.PRNGKey(0)
  mod.block_until_ready(run_epoch(key, state, images))
  return best_per_call(lambda: mod.block_until_ready(run_epoch(key, state, images)), 3, 5)


def bench_vae_eval_first_call(lib):
  """Trace + lower + compile + run of the jitted VAE evaluation: the ELBO of 320 images and
  500 Bernoulli images drawn from the decoder, tiled into a grid by 500 slices."""
  mod, random, images, state, _, evaluate = _vae_setup(lib)
  key = random.PRNGKey(1)
  start = time.perf_counter()
  mod.block_until_ready(evaluate(key, state[0], images))
  return time.perf_counter() - start


def bench_vae_eval_step(lib):
  """Steady-state call of the jitted VAE evaluation."""
  mod, random, images, state, _, evaluate = _vae_setup(lib)
  key = random.PRNGKey(1)
  mod.block_until_ready(evaluate(key, state[0], images))
  return best_per_call(lambda: mod.block_until_ready(evaluate(key, state[0], images)), 3, 5)


def bench_convnet_step(lib):
  """Steady-state jit(grad) of bench/conv_cnn.py's network: three 3x3 'SAME' convolutions
  (NHWC/HWIO) with relu on an [8, 32, 32, 3] batch, summed."""
  mod, jnp, _ = load(lib)
  import numpy as np
  lax = mod.lax
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((8, 32, 32, 3)).astype(np.float32))
  ws = [jnp.asarray(rng.standard_normal(s).astype(np.float32) * 0.1)
        for s in [(3, 3, 3, 16), (3, 3, 16, 32), (3, 3, 32, 32)]]

  def loss(ws, x):
    for w in ws:
      x = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
      x = jnp.maximum(x, 0.0)
    return jnp.sum(x)
  g = mod.jit(mod.grad(loss))
  mod.block_until_ready(g(ws, x))
  return best_per_call(lambda: mod.block_until_ready(g(ws, x)), 20)


def bench_top_k_64x16384(lib):
  """Steady-state jitted ``lax.top_k(x, 8)`` over the rows of an f32[64, 16384]."""
  mod, jnp, _ = load(lib)
  import numpy as np
  x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 16384)).astype(np.float32))
  f = mod.jit(lambda v: mod.lax.top_k(v, 8))
  mod.block_until_ready(f(x))
  return best_per_call(lambda: mod.block_until_ready(f(x)), 20)

BENCHES = {name[len("bench_"):]: fn for name, fn in globals().items()
           if name.startswith("bench_")}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--lib", choices=["hlox", "jax"], required=True)
  parser.add_argument("--bench", choices=sorted(BENCHES), required=True)
  args = parser.parse_args()
  seconds = BENCHES[args.bench](args.lib)
  print(json.dumps({"lib": args.lib, "bench": args.bench, "seconds": seconds}))


if __name__ == "__main__":
  main()
