"""Jitted functions pickle by value with cloudpickle (as JAX's do): their caches come back
empty (no lock, no executables), while the process-wide objects they hold (the options, the
trace context, the eval trace, markers) come back as the live ones, so the loaded function
still takes the fast path and follows option changes."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import api, cache
from hlox.config import config
from hlox.core import tracer

cloudpickle = pytest.importorskip("cloudpickle")


def _make():
  @hlox.jit
  def f(x, y):
    return x * y

  @hlox.jit
  def g(z):
    return f(z, z + 77)

  return g


def test_cloudpickled_jitted_function_runs_after_loading():
  g = _make()
  expected = g(32)
  assert len(g._fast_cache) > 0
  loaded = pickle.loads(cloudpickle.dumps(g))
  assert loaded is not g
  # Its cache is its own, empty until the first call, then filled (the fast path's table).
  assert len(loaded._fast_cache) == 0
  assert int(loaded(32)) == int(expected) == 32 * 109
  assert len(loaded._fast_cache) > 0
  np.testing.assert_array_equal(loaded(jnp.arange(3.)), np.arange(3.) * (np.arange(3.) + 77))
  assert float(hlox.grad(loaded)(2.)) == 2 * 2. + 77
  free = dict(zip(loaded.__code__.co_freevars, (c.cell_contents for c in loaded.__closure__)))
  assert free["options"] is config._values
  assert free["ctx"] is tracer.trace_ctx
  assert loaded.__globals__["eval_trace"] is tracer.eval_trace
  assert loaded.__globals__["_HOST_ARGUMENTS"] is api._HOST_ARGUMENTS


def test_loaded_function_follows_live_options():
  g = pickle.loads(cloudpickle.dumps(_make()))
  with hlox.disable_jit():
    # Unjitted, the inner functions run op by op: still the same values.
    assert int(g(1)) == 78
  with hlox.enable_x64():
    assert g(np.float64(1.5)).dtype == np.float64


def test_lru_cache_pickles_empty():
  c = cache.LRUCache(maxsize=7)
  c.put("k", object())
  loaded = pickle.loads(pickle.dumps(c))
  assert len(loaded) == 0 and loaded.maxsize == 7 and len(c) == 1
  loaded.put("a", 1)  # a fresh lock
  assert loaded.get("a") == 1
  assert loaded in cache._all_caches  # cleared by clear_caches like the others
  cache.clear_caches()
  assert len(loaded) == 0


def test_process_singletons_pickle_by_reference():
  assert pickle.loads(pickle.dumps(tracer.eval_trace)) is tracer.eval_trace
  assert pickle.loads(pickle.dumps(tracer.trace_ctx)) is tracer.trace_ctx
  assert pickle.loads(pickle.dumps(config._values)) is config._values
  assert pickle.loads(pickle.dumps(api._STATIC_ARGUMENTS)) is api._STATIC_ARGUMENTS
  flatten = pickle.loads(pickle.dumps(hlox.tree_util.flatten_fast))
  leaves, treedef = flatten({"a": 1, "b": (2, 3)})
  assert leaves == [1, 2, 3] and treedef == hlox.tree_util.tree_structure({"a": 0, "b": (0, 0)})
