"""Shared test helpers: tolerances per dtype, random inputs, eager-vs-jit-vs-NumPy checks."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import hlox
from hlox.core import dtypes

_tolerance = {
    np.dtype(np.float16): 1e-2, dtypes.bfloat16: 5e-2, np.dtype(np.float32): 1e-5,
    np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 1e-5,
    np.dtype(np.complex128): 1e-12,
}


def tolerance(dtype, scale=1.0):
  return _tolerance.get(np.dtype(dtype), 0) * scale


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, check_dtype=True):
  """Compare an hlox result with a NumPy reference (dtype-aware tolerances)."""
  actual_np = np.asarray(actual)
  expected_np = np.asarray(expected)
  if check_dtype and dtype is not None:
    assert actual_np.dtype == np.dtype(dtype), (actual_np.dtype, dtype)
  assert actual_np.shape == expected_np.shape, (actual_np.shape, expected_np.shape)
  tol_dtype = dtype if dtype is not None else actual_np.dtype
  rtol = tolerance(tol_dtype) if rtol is None else rtol
  atol = tolerance(tol_dtype) if atol is None else atol
  if actual_np.dtype.kind in "biu" or actual_np.dtype == np.bool_:
    np.testing.assert_array_equal(actual_np, expected_np)
  else:
    np.testing.assert_allclose(actual_np.astype(np.complex128 if actual_np.dtype.kind == "c"
                                                else np.float64),
                               expected_np.astype(np.complex128 if expected_np.dtype.kind == "c"
                                                  else np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def rand(rng, shape, dtype, low=-3.0, high=3.0):
  """Random NumPy array of ``dtype`` (integers in [low, high), bools half True)."""
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    lo = 0 if dtype.kind == "u" else int(low)
    return rng.integers(lo, max(int(high), lo + 1), size=shape).astype(dtype)
  if dtype.kind == "c":
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
  return rng.uniform(low, high, shape).astype(dtype)


def check_eager_and_jit(fun, args, reference, dtype=None, **tol):
  """``fun`` eagerly and under jit both match ``reference`` (a NumPy result)."""
  eager = fun(*args)
  jitted = hlox.jit(fun)(*args)
  assert_close(eager, reference, dtype, **tol)
  assert_close(jitted, reference, dtype, **tol)
  return eager


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
float_dtypes = st.sampled_from([np.float32])


def once_per_test_run(tag: str, key, compute):
  """``compute()`` (a JSON-able result) once per test run. Under pytest-xdist the first
  worker to ask computes it while the others wait on a lock, then read the result from a
  file keyed by the run and ``key``: an oracle's results are computed once, not per worker."""
  import fcntl
  import hashlib
  import json
  import os
  import tempfile
  run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
  if run_id is None:
    return compute()
  digest = hashlib.sha256((run_id + json.dumps(key, sort_keys=True)).encode()).hexdigest()
  path = os.path.join(tempfile.gettempdir(), f"hlox_{tag}_{digest[:16]}.json")
  with open(path + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
      if os.path.exists(path):
        with open(path) as f:
          return json.load(f)
      out = compute()
      with open(path + ".tmp", "w") as f:
        json.dump(out, f)
      os.replace(path + ".tmp", path)
      return out
    finally:
      fcntl.flock(lock, fcntl.LOCK_UN)


def selected_params(request, argname: str) -> set:
  """The values of ``argname`` in the tests of ``request``'s module that this run selected
  (after ``-m``/``-k``): a module fixture computes oracle results for those only."""
  return {item.callspec.params[argname] for item in request.session.items
          if getattr(item, "module", None) is request.module
          and argname in getattr(getattr(item, "callspec", None), "params", {})}


def run_in_jax(script: str, programs, extra_env=None):
  """Run ``script`` (a JAX oracle runner that reads ``programs`` as JSON on stdin and prints
  its results as one JSON line last) in a fresh process on JAX's CPU backend; the parsed
  results, computed once per test run. JAX runs in its own process so that hlox and JAX
  never share one."""
  import json
  import subprocess
  import sys
  env = {"JAX_PLATFORMS": "cpu", "PATH": "", **(extra_env or {})}

  def compute():
    out = subprocess.run([sys.executable, "-c", script], input=json.dumps(programs),
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
  return once_per_test_run("jax_oracle", [script, programs, env], compute)


# A JAX oracle runner for programs written against one module: each program is
# (module, body), e.g. ("image", "return m.resize(np.ones((2, 3)), (4, 5), 'linear')"); the
# body sees ``m`` (jax.<module> there, hlox.<module> here) and ``np`` and returns an array or
# a tuple of arrays.
MODULE_ORACLE_RUNNER = """
import importlib, json, sys
import numpy as np
import jax
programs = json.loads(sys.stdin.read())
out = {}
for name, (module, body) in programs.items():
  ns = {}
  exec("def prog(m, np):\\n  " + body, ns)
  m = importlib.import_module("jax." + module)
  r = ns["prog"](m, np)
  r = r if isinstance(r, (tuple, list)) else (r,)
  out[name] = [{"value": np.asarray(v).astype(np.complex128).real.tolist(),
                "shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)} for v in r]
print(json.dumps(out))
"""


def check_against_jax_modules(programs, rtol=2e-5, atol=2e-5):
  """Run ``programs`` (see MODULE_ORACLE_RUNNER) in JAX and in hlox; assert they agree in
  shape, dtype and value."""
  import importlib
  expected_all = run_in_jax(MODULE_ORACLE_RUNNER, programs)
  mismatches = []
  for name, (module, body) in sorted(programs.items()):
    ns = {}
    exec("def prog(m, np):\n  " + body, ns)
    r = ns["prog"](importlib.import_module("hlox." + module), np)
    r = r if isinstance(r, (tuple, list)) else (r,)
    for got, want in zip(r, expected_all[name]):
      got = np.asarray(got)
      if list(got.shape) != want["shape"] or str(got.dtype) != want["dtype"]:
        mismatches.append(f"{name}: {got.dtype}{list(got.shape)} vs JAX's "
                          f"{want['dtype']}{want['shape']}")
      elif not np.allclose(got.astype(np.float64), np.asarray(want["value"], np.float64),
                           rtol=rtol, atol=atol, equal_nan=True):
        mismatches.append(f"{name}: values differ\n{got}\nvs\n{np.asarray(want['value'])}")
  assert not mismatches, "\n".join(mismatches)


# --- lowering for a platform, compared with JAX's -----------------------------------------

def custom_calls(module_text: str) -> list:
  """The ``stablehlo.custom_call`` ops of a module's text, in program order, each as a dict
  that two lowerings of the same call agree on: the target, the operand and result types,
  layouts, operand aliases, side effect, and the handler's attributes. (JAX writes a typed-FFI
  call's attributes as ``mhlo.backend_config`` with API version 1, hlox as ``backend_config``
  with version 4; XLA hands both to the handler as the same attribute dictionary.)"""
  from jaxlib.mlir import ir
  from hlox.interpreters import xla
  ctx = xla.make_ir_context()
  ctx.allow_unregistered_dialects = True
  with ctx:
    module = ir.Module.parse(module_text)
    calls = []

    def attr(op, name):
      return op.attributes[name] if name in op.attributes else None

    def visit(op):
      if op.name == "stablehlo.custom_call":
        config = attr(op, "backend_config")
        if not isinstance(config, ir.DictAttr):
          config = attr(op, "mhlo.backend_config")
        side = attr(op, "has_side_effect")
        calls.append({
            "target": ir.StringAttr(attr(op, "call_target_name")).value,
            "operands": [str(v.type) for v in op.operands],
            "results": [str(r.type) for r in op.results],
            "operand_layouts": str(attr(op, "operand_layouts")),
            "result_layouts": str(attr(op, "result_layouts")),
            "aliases": str(attr(op, "output_operand_aliases")),
            "side_effect": bool(side is not None and ir.BoolAttr(side).value),
            "attributes": {} if config is None else
                          {a.name: str(a.attr) for a in ir.DictAttr(config)},
        })
      for region in op.regions:
        for block in region.blocks:
          for inner in block.operations:
            visit(inner.operation)

    visit(module.operation)
  return calls


# Lowers JAX programs for a platform: each program is (platform, body, args), ``body`` a
# lambda's source over ``jax``, ``jnp``, ``lax`` and ``np``, ``args`` a list of
# (shape, dtype) of its arguments; prints each program's StableHLO text (or the error's class
# and message, for rules JAX does not have).
LOWERING_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
jax.config.update("jax_enable_x64", True)
programs = json.loads(sys.stdin.read())
out = {}
for name, (platform, body, args) in programs.items():
  f = eval(body)
  specs = [jax.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in args]
  try:
    out[name] = {"text": jax.jit(f).trace(*specs).lower(
        lowering_platforms=(platform,)).as_text()}
  except Exception as e:
    out[name] = {"error": type(e).__name__, "message": str(e)}
print(json.dumps(out))
"""


def lower_in_hlox(platform: str, body: str, args) -> str:
  """hlox's StableHLO text of ``body`` (as in LOWERING_RUNNER) lowered for ``platform``."""
  import hlox.numpy as jnp
  from hlox import lax
  f = eval(body, {"jax": hlox, "jnp": jnp, "lax": lax, "np": np})
  specs = [hlox.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in args]
  return hlox.jit(f).trace(*specs).lower(lowering_platforms=(platform,)).as_text()


# Programs compared by what they print: each is source text written against ``m`` (``jax``
# in the oracle, ``hlox`` here), ``jnp``, ``P``, ``np`` and ``AxisType``, run after an
# optional ``prelude`` (more names, written against ``m`` too); an exception ends a
# program's output with ``!!! <class>: <message>``.
PRINTING_ORACLE = """
import contextlib, io, json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P
given = json.load(sys.stdin)
out = {}
for name, src in given["programs"].items():
  buf = io.StringIO()
  scope = {"m": jax, "jnp": jnp, "P": P, "np": np, "AxisType": AxisType}
  try:
    with contextlib.redirect_stdout(buf):
      exec(given["prelude"], scope)
      exec(src, scope)
  except Exception as e:
    print(f"!!! {type(e).__name__}: {e}", file=buf)
  out[name] = buf.getvalue()
print(json.dumps(out))
"""


def printed_in_jax(programs: dict, prelude: str = "") -> dict:
  """What each program prints with JAX on 8 CPU devices (computed once per test run)."""
  return run_in_jax(PRINTING_ORACLE, {"programs": programs, "prelude": prelude},
                    extra_env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})


def printed_here(src: str, prelude: str = "") -> str:
  """What ``src`` prints with hlox (as ``printed_in_jax``); a mesh the program sets lasts
  only for the program, and its host callbacks have run when it returns."""
  import contextlib
  import io
  import hlox
  import hlox.numpy as jnp
  from hlox.runtime import sharding as sharding_lib
  from hlox.sharding import AxisType, PartitionSpec
  before = sharding_lib._swap(sharding_lib.concrete_mesh(),
                              sharding_lib.context_abstract_mesh())
  buf = io.StringIO()
  scope = {"m": hlox, "jnp": jnp, "P": PartitionSpec, "np": np, "AxisType": AxisType}
  try:
    with contextlib.redirect_stdout(buf):
      exec(prelude, scope)
      exec(src, scope)
      hlox.effects_barrier()
  except Exception as e:
    print(f"!!! {type(e).__name__}: {e}", file=buf)
  finally:
    sharding_lib._restore(before)
  return buf.getvalue()
