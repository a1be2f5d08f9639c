"""Compile+run time of a small CNN's forward and gradient, hlox vs JAX (separate processes).

    python bench/conv_cnn.py [--rounds 3]

Three 3x3 'SAME' convolutions (NHWC/HWIO) with relu on a [8, 32, 32, 3] batch, summed; the
first call of ``jit(grad)`` (trace + lower + compile + run) and the median of later calls.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

_WORKER = r"""
import json, sys, time
import numpy as np
lib = sys.argv[1]
if lib == "jax":
  import jax, jax.numpy as jnp
  from jax import lax
  mod = jax
else:
  import hlox as mod, hlox.numpy as jnp
  from hlox import lax
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 32, 32, 3)).astype(np.float32)
ws = [rng.standard_normal(s).astype(np.float32) * 0.1
      for s in [(3, 3, 3, 16), (3, 3, 16, 32), (3, 3, 32, 32)]]

def loss(ws, x):
  for w in ws:
    x = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x = jnp.maximum(x, 0.0)
  return jnp.sum(x)

def timed(f):
  t = time.perf_counter(); out = f(ws, x)
  for leaf in (out if isinstance(out, list) else [out]):
    np.asarray(leaf)
  return time.perf_counter() - t

res = {}
res["fwd_first"] = timed(mod.jit(loss))
g = mod.jit(mod.grad(loss))
res["grad_first"] = timed(g)
res["grad_steady"] = sorted(timed(g) for _ in range(10))[5]
print(json.dumps(res))
"""


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--rounds", type=int, default=3)
  ap.add_argument("--libs", default="hlox,jax")
  args = ap.parse_args()
  results = {}
  for _ in range(args.rounds):
    for lib in args.libs.split(","):
      out = subprocess.run([sys.executable, "-c", _WORKER, lib], capture_output=True,
                           text=True, env={"JAX_PLATFORMS": "cpu", "PATH": "",
                                           "PYTHONPATH": sys.path[0] + "/.."})
      if out.returncode:
        raise SystemExit(out.stderr[-3000:])
      r = json.loads(out.stdout.strip().splitlines()[-1])
      for k, v in r.items():
        results.setdefault(lib, {}).setdefault(k, []).append(v)
  for lib, r in results.items():
    print(lib, {k: f"min {min(v) * 1e3:.1f} ms" for k, v in r.items()})


if __name__ == "__main__":
  main()
