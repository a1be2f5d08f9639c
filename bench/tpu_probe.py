"""Probe: run a set of programs with `hlox` or `jax` (argv[1]) on the default device, save results
to $OUT/probe_<lib>.npz and print per-check status and timings."""
import os, sys, time, traceback, json
import numpy as np
lib = sys.argv[1]
OUT = os.environ.get("OUT", "/tmp")
if lib == "hlox":
  import hlox as jax
  import hlox.numpy as jnp
  from hlox import lax, random
  import hlox.scipy as jsp
else:
  import jax
  import jax.numpy as jnp
  from jax import lax, random
  import jax.scipy as jsp
t0 = time.perf_counter()
print(lib, "devices", jax.devices(), "backend", jax.default_backend(), f"{time.perf_counter()-t0:.1f}s", flush=True)
results = {}
status = {}
rng = np.random.RandomState(0)
A = rng.randn(64, 64).astype(np.float32)
SPD = (A @ A.T + 64 * np.eye(64)).astype(np.float32)
X = rng.randn(128, 32).astype(np.float32)

def check(name, fn):
  t = time.perf_counter()
  try:
    out = fn()
    leaves = out if isinstance(out, (tuple, list)) else [out]
    for i, l in enumerate(leaves):
      results[f"{name}/{i}"] = np.asarray(l)
    status[name] = f"ok {time.perf_counter()-t:.2f}s"
  except Exception as e:
    status[name] = f"FAIL {type(e).__name__}: {str(e)[:300]}"
    traceback.print_exc(limit=3)
  print(f"{name:28s} {status[name]}", flush=True)

hp = lax.Precision.HIGHEST
check("sin", lambda: jnp.sin(jnp.asarray(X)))
check("exp_log_tanh", lambda: (jnp.exp(X), jnp.log(jnp.abs(X) + 1), jnp.tanh(X), jax.scipy.special.erf(X)))
check("matmul_default", lambda: jnp.asarray(X) @ jnp.asarray(X).T)
check("matmul_highest", lambda: jnp.matmul(X, X.T, precision=hp))
check("bf16_matmul", lambda: (jnp.asarray(X, jnp.bfloat16) @ jnp.asarray(X.T, jnp.bfloat16)).astype(jnp.float32))
check("reductions", lambda: (X.sum(), jnp.sum(X, 0), jnp.max(X, 1), jnp.argmax(X, 1), jnp.cumsum(X, 0), jnp.mean(X), jnp.var(X, 0)))
check("sort", lambda: (jnp.sort(X, 0), jnp.argsort(X[:, 0]), lax.top_k(X, 3)[0]))
check("int_ops", lambda: (jnp.arange(100) * 3 // 7, jnp.arange(10, dtype=jnp.int32) << 2, jnp.bitwise_xor(jnp.arange(8), 5)))
check("random_bits", lambda: (random.bits(random.PRNGKey(0), (1000,)), random.normal(random.PRNGKey(1), (1000,)), random.uniform(random.key(2), (5, 7)), random.randint(random.PRNGKey(3), (100,), 0, 10)))
check("random_split_fold", lambda: (random.key_data(random.split(random.key(0), 4)), random.key_data(random.fold_in(random.key(0), 7))))
check("random_bernoulli_perm", lambda: (random.bernoulli(random.PRNGKey(4), 0.3, (1000,)), random.permutation(random.PRNGKey(5), 20)))
def mlp_grad():
  W1 = jnp.asarray(rng.randn(32, 64).astype(np.float32) * 0.1); W2 = jnp.asarray(rng.randn(64, 10).astype(np.float32) * 0.1)
  def loss(p, x):
    h = jnp.tanh(jnp.dot(x, p[0], precision=hp)); return jnp.mean(jax.nn.log_softmax(jnp.dot(h, p[1], precision=hp)) ** 2)
  return jax.jit(jax.grad(loss))((W1, W2), X)
check("jit_grad_mlp", mlp_grad)
check("vmap_grad", lambda: jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)))(X))
check("scan", lambda: lax.scan(lambda c, r: (jnp.sin(c) + r, c.sum()), X[0], X))
check("while", lambda: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.1), (0, jnp.ones(3))))
check("cond_switch", lambda: (lax.cond(X[0, 0] > 0, jnp.sin, jnp.cos, X), lax.switch(2, [jnp.sin, jnp.cos, jnp.tanh], X)))
check("fori_jit", lambda: jax.jit(lambda x: lax.fori_loop(0, 5, lambda i, v: v * 2 + i, x))(X))
check("conv", lambda: lax.conv_general_dilated(X.reshape(1, 1, 128, 32), np.ones((4, 1, 3, 3), np.float32), (1, 1), "SAME", precision=hp))
check("gather_scatter", lambda: (jnp.asarray(X)[jnp.array([3, 1, 7])], jnp.asarray(X).at[2, 3].set(9.), jnp.asarray(X).at[jnp.array([1, 1, 2])].add(1.)))
check("fft", lambda: (jnp.fft.fft(X[0].astype(np.complex64)), jnp.fft.rfft(X, axis=0), jnp.fft.ifft2(X.astype(np.complex64))))
check("cholesky", lambda: jnp.linalg.cholesky(SPD))
check("qr", lambda: jnp.abs(jnp.linalg.qr(A)[1]))
check("lu_solve", lambda: jnp.linalg.solve(SPD, X[:64]))
check("inv_det", lambda: (jnp.linalg.inv(SPD), jnp.linalg.slogdet(SPD)[1]))
check("eigh", lambda: jnp.linalg.eigh(SPD)[0])
check("eigh_300", lambda: jnp.linalg.eigvalsh(np.eye(300, dtype=np.float32) * 2 + rng.randn(300, 300).astype(np.float32) * 0.01 * (lambda m: m + m.T)(np.ones((300, 300), np.float32))))
check("svd", lambda: jnp.linalg.svd(A, compute_uv=False))
check("triangular_solve", lambda: jsp.linalg.solve_triangular(np.tril(SPD), X[:64], lower=True))
check("tridiagonal_solve", lambda: lax.linalg.tridiagonal_solve(np.ones(8, np.float32), 4 * np.ones(8, np.float32), np.ones(8, np.float32), np.ones((8, 2), np.float32)))
check("pure_callback", lambda: jax.jit(lambda x: jax.pure_callback(lambda a: np.sin(a), jax.ShapeDtypeStruct(x.shape, x.dtype), x))(X))
check("debug_print", lambda: jax.jit(lambda x: (jax.debug.print("v={v}", v=x[0, 0]), x * 2)[1])(X))
check("x64_off_dtypes", lambda: (jnp.ones(3, jnp.float16) * 2, jnp.ones(3, jnp.int8) + 1, jnp.ones(3, bool) & True))
check("donate", lambda: jax.jit(lambda x: x + 1, donate_argnums=0)(jnp.ones(1000)))
check("device_put_cpu", lambda: jax.device_put(jnp.ones(3), jax.devices("cpu")[0]) * 2)
check("dlpack_np", lambda: np.from_dlpack(jnp.arange(5.0)) if hasattr(np, "from_dlpack") else np.arange(5.0))
# timings
def timeit(name, f, *args, n=200):
  try:
    f(*args); jax.block_until_ready(f(*args))
    best = 1e9
    for _ in range(5):
      t = time.perf_counter()
      for _ in range(n):
        r = f(*args)
      jax.block_until_ready(r)
      best = min(best, (time.perf_counter() - t) / n)
    print(f"TIME {name:28s} {best*1e6:10.1f} us", flush=True)
  except Exception as e:
    print(f"TIME {name} FAIL {type(e).__name__}: {e}", flush=True)
x = jnp.ones((128,)); y = jnp.ones((128,))
timeit("eager_sin", jnp.sin, x)
timeit("eager_add", lambda a, b: a + b, x, y)
timeit("eager_mul_scalar", lambda a: a * 1.5, x)
f1 = jax.jit(lambda a: a + 1)
timeit("jit_dispatch", f1, x)
big = jnp.ones((4096, 4096), jnp.bfloat16)
mm = jax.jit(lambda a: a @ a)
timeit("bf16_matmul_4096", mm, big, n=20)
t = time.perf_counter(); jax.block_until_ready(jax.jit(lambda k: random.normal(k, (10_000_000,)))(random.PRNGKey(0))); print(f"TIME first_call_normal_1e7 {(time.perf_counter()-t)*1e3:.1f} ms")
np.savez(os.path.join(OUT, f"probe_{lib}.npz"), **results)
json.dump(status, open(os.path.join(OUT, f"status_{lib}.json"), "w"), indent=1)
print("total", f"{time.perf_counter()-t0:.1f}s")
