"""Collectives in the optimised HLO of the sharded benchmark programs, hlox against JAX.

    python bench/sharding_hlo.py

Compiles the data-parallel and 2x4 data+model-parallel MLP steps and the shard_map psum of
``worker.py`` with each library (in its own process, 8 CPU devices) and prints how many of
each collective XLA's partitioner put in the compiled program: the two libraries should
agree, since both hand XLA the same program and layouts.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
               "collective-permute")

PROGRAM = r'''
import json, os, re, sys
os.environ["HLOX_NUM_CPU_DEVICES"] = "8"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
lib = sys.argv[1]
if lib == "hlox":
  sys.modules["jax"] = None
  import hlox as mod, hlox.numpy as jnp
else:
  import jax as mod, jax.numpy as jnp
import numpy as np
NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
auto = lambda n: (mod.sharding.AxisType.Auto,) * n

def mlp(mesh, batch, w1, w2):
  put = lambda shape, spec: mod.device_put(np.ones(shape, np.float32), NS(mesh, spec))
  params = (put((256, 512), w1), put((512, 10), w2))
  x, y = put((512, 256), batch), put((512, 10), batch)
  def loss(params, x, y):
    a, b = params
    return jnp.mean((jnp.tanh(x @ a) @ b - y) ** 2)
  step = mod.jit(lambda p, x, y: tuple(q - 0.01 * g for q, g in zip(p, mod.grad(loss)(p, x, y))))
  return step.lower(params, x, y).compile().as_text()

mesh8 = mod.make_mesh((8,), ("data",), axis_types=auto(1))
mesh24 = mod.make_mesh((2, 4), ("data", "model"), axis_types=auto(2))
f = mod.shard_map(lambda x: mod.lax.psum(x, "i"), mesh=mod.make_mesh((8,), ("i",), axis_types=auto(1)),
                  in_specs=P("i"), out_specs=P("i"))
texts = {
    "dp_mlp_step_8": mlp(mesh8, P("data"), P(), P()),
    "dp_mp_step_2x4": mlp(mesh24, P("data"), P(None, "model"), P("model", None)),
    "shard_map_psum_8": mod.jit(f).lower(np.zeros((8, 1024), np.float32)).compile().as_text(),
}
names = %r
counts = {k: {c: len(re.findall(r"[ )}] ?" + c + r"(?:-start)?\(", t)) for c in names}
          for k, t in texts.items()}
print(json.dumps(counts))
''' % (COLLECTIVES,)


def counts(lib: str) -> dict:
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
  out = subprocess.run([sys.executable, "-c", PROGRAM, lib], capture_output=True, text=True,
                       env=env)
  if out.returncode:
    raise RuntimeError(out.stderr[-3000:])
  return json.loads(out.stdout.strip().splitlines()[-1])


def main():
  hlox_counts = counts("hlox")
  jax_counts = counts("jax")
  same = True
  for program, per_op in hlox_counts.items():
    line = ", ".join(f"{op} {n}/{jax_counts[program][op]}" for op, n in per_op.items()
                     if n or jax_counts[program][op])
    agree = per_op == jax_counts[program]
    same &= agree
    print(f"{program:<20} hlox/jax: {line or 'none'}  {'same' if agree else 'DIFFERENT'}")
  return 0 if same else 1


if __name__ == "__main__":
  sys.exit(main())
