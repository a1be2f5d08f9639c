"""A JAX oracle for programs using ``jax.example_libraries`` and ``jax.experimental.ode``:
each program is the body of ``prog(jax, jnp, stax, optimizers, odeint, np)`` returning a pytree
of arrays; it runs once with JAX (in a subprocess, ``tests.util.run_in_jax``) and once with
hlox, and the leaves are compared."""
import numpy as np

from tests.util import run_in_jax

RUNNER = """
import json, sys
import numpy as np
import jax
import jax.numpy as jnp
from jax.example_libraries import stax, optimizers
from jax.experimental.ode import odeint
programs = json.loads(sys.stdin.read())
out = {}
for name, body in programs.items():
  ns = {}
  exec("def prog(jax, jnp, stax, optimizers, odeint, np):\\n" + body, ns)
  leaves = jax.tree.leaves(ns["prog"](jax, jnp, stax, optimizers, odeint, np))
  out[name] = [{"value": np.asarray(v).astype(np.float64).tolist(), "shape": list(np.shape(v)),
                "dtype": str(np.asarray(v).dtype)} for v in leaves]
print(json.dumps(out))
"""


def run_here(body):
  import hlox
  import hlox.numpy as jnp
  from hlox.example_libraries import optimizers, stax
  from hlox.experimental.ode import odeint
  ns = {}
  exec("def prog(jax, jnp, stax, optimizers, odeint, np):\n" + body, ns)
  return hlox.tree.leaves(ns["prog"](hlox, jnp, stax, optimizers, odeint, np))


def check_against_jax(programs, rtol, atol):
  """Run every program in JAX and hlox (a program wanting float64 enables x64 itself, with
  ``jax.enable_x64(True)``); assert equal shapes, dtypes and values within tolerance."""
  expected = run_in_jax(RUNNER, programs)
  problems = []
  for name, body in sorted(programs.items()):
    got = run_here(body)
    want = expected[name]
    if len(got) != len(want):
      problems.append(f"{name}: {len(got)} leaves vs JAX's {len(want)}")
      continue
    for i, (g, w) in enumerate(zip(got, want)):
      g = np.asarray(g)
      if list(g.shape) != w["shape"] or str(g.dtype) != w["dtype"]:
        problems.append(f"{name}[{i}]: {g.dtype}{list(g.shape)} vs JAX's "
                        f"{w['dtype']}{w['shape']}")
      elif not np.allclose(g.astype(np.float64), np.asarray(w["value"], np.float64),
                           rtol=rtol, atol=atol):
        problems.append(f"{name}[{i}]: values differ\n{g}\nvs\n{np.asarray(w['value'])}")
  assert not problems, "\n".join(problems)
