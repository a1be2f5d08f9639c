"""What hlox keeps alive: compiled programs hold their executable, not the StableHLO module
they were compiled from (nor the MLIR context it pins), and the executable cache is keyed on
a digest of the module text rather than the text."""
import gc

import numpy as np

import hlox
import hlox.numpy as jnp
from hlox.interpreters import xla

from jaxlib.mlir import ir


def _alive(cls):
  gc.collect()
  return sum(1 for o in gc.get_objects() if isinstance(o, cls))


def test_compiled_functions_keep_no_modules():
  before = _alive(xla.Lowered)
  contexts_before = _alive(ir.Context)  # other tests' programs (pmap keeps its module) count
  fns = [hlox.jit(lambda v, i=i: jnp.sin(v) * i + jnp.tanh(v) @ v) for i in range(30)]
  outs = [f(jnp.ones((i + 1,), jnp.float32)) for i, f in enumerate(fns)]
  for i, out in enumerate(outs):
    v = np.ones(i + 1, np.float32)
    np.testing.assert_allclose(np.asarray(out), np.sin(v) * i + np.tanh(v) @ v, rtol=1e-6)
  # Each jit call above lowered one module; once compiled, none is kept.
  assert _alive(xla.Lowered) <= before
  # The thread's current context (reused by the next few lowerings) may stay; no more.
  assert _alive(ir.Context) <= contexts_before + 2


def test_executable_cache_keys_hold_no_module_text():
  f = hlox.jit(lambda v: jnp.cos(v) + 3.0)
  x = jnp.arange(4.0)
  np.testing.assert_allclose(np.asarray(f(x)), np.cos(np.arange(4.0)) + 3.0, rtol=1e-6)
  text = f.lower(x).as_text()
  for key in list(xla._executable_cache._data):
    assert not any(isinstance(k, str) and len(k) > 64 for k in key), key
  assert len(text) > 64


def test_lowered_compile_still_shares_the_executable():
  from hlox import monitoring
  f = hlox.jit(lambda v: jnp.exp(v) * 0.5 + 0.25)
  x = jnp.arange(3.0)
  lowered = f.lower(x)
  assert "stablehlo" in lowered.as_text()
  compiled = lowered.compile()
  before = monitoring.count("compile")
  got = f(x)
  np.testing.assert_allclose(np.asarray(got), np.exp(np.arange(3.0)) * 0.5 + 0.25, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(got), rtol=0)
  assert monitoring.count("compile") == before


def _shared_copy_case():
  from hlox import api
  w = np.random.default_rng(0).standard_normal((128, 256)).astype(np.float32)
  x = np.ones((2, 128), np.float32)
  fns = [hlox.jit(lambda v, i=i: v @ w + i) for i in range(3)]
  for i, f in enumerate(fns):
    np.testing.assert_allclose(np.asarray(f(x)), x @ w + i, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(f(x)), x @ w + i, rtol=1e-5)  # the fast path
  assert sum(1 for k in api._const_copies if k[0] == id(w)) == 1
  # Changed in place: a function traced afterwards sees the new values, not the old copy.
  w[:] = 0.5
  g = hlox.jit(lambda v: v @ w - 1.0)
  np.testing.assert_allclose(np.asarray(g(x)), x @ w - 1.0, rtol=1e-5)
  return id(w)


def test_jitted_functions_share_the_device_copy_of_a_closed_over_array():
  from hlox import api
  w_id = _shared_copy_case()
  gc.collect()
  # The entry went with the array (and the functions that closed over it).
  assert not any(k[0] == w_id for k in api._const_copies)
