"""Option scopes are per thread (as JAX's context managers): ``with enable_x64()`` in one
thread leaves other threads' options alone, while ``config.update`` sets every thread's.
Dtypes and values are checked against NumPy's."""
import concurrent.futures
import threading

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.config import config


def _in_threads(*functions):
  """Run each function in its own thread, all at once (a barrier lines them up inside
  their scopes), and return their results."""
  barrier = threading.Barrier(len(functions))
  with concurrent.futures.ThreadPoolExecutor(len(functions)) as pool:
    futures = [pool.submit(f, barrier) for f in functions]
    return [f.result(timeout=120) for f in futures]


def test_x64_scopes_of_two_threads_at_once():
  def under(x64):
    def run(barrier):
      with hlox.enable_x64(x64):
        barrier.wait()
        dtype = jnp.array(np.int64(0)).dtype
        barrier.wait()  # both inside their scopes until both have looked
        return dtype, hlox.enable_x64.value
    return run
  (d32, v32), (d64, v64) = _in_threads(under(False), under(True))
  assert (d32, v32) == (np.int32, False)
  assert (d64, v64) == (np.int64, True)
  assert hlox.enable_x64.value is False


def test_jit_and_eager_ops_in_threads_with_different_x64():
  f = hlox.jit(lambda x: x * 2 + 1)
  f(np.int64(3))  # filled under the global setting (x64 off)

  def under(x64):
    def run(barrier):
      with hlox.enable_x64(x64):
        barrier.wait()
        outs = []
        for _ in range(10):
          outs.append(f(np.int64(2 ** 40 if x64 else 3)))
          outs.append(jnp.arange(3) + 1)
        barrier.wait()
        return outs
    return run
  outs32, outs64 = _in_threads(under(False), under(True))
  for y in outs32[0::2]:
    assert y.dtype == np.int32 and int(y) == 7
  for y in outs64[0::2]:
    assert y.dtype == np.int64 and int(y) == 2 ** 41 + 1
  for y in outs32[1::2]:
    assert y.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(y), np.arange(3) + 1)
  for y in outs64[1::2]:
    assert y.dtype == np.int64
  # Back in this thread, no scope open: the global setting, through the cache-hit path.
  assert f(np.int64(3)).dtype == np.int32 and int(f(np.int64(3))) == 7


def test_a_scope_does_not_leak_into_another_thread():
  started, release = threading.Event(), threading.Event()
  seen = {}

  def scoped():
    with hlox.numpy_rank_promotion("raise"):
      started.set()
      release.wait(60)
      seen["scoped"] = hlox.numpy_rank_promotion.value

  t = threading.Thread(target=scoped)
  t.start()
  try:
    started.wait(60)
    # The other thread's scope is open; this one still allows rank promotion.
    assert hlox.numpy_rank_promotion.value == "allow"
    np.testing.assert_array_equal(np.asarray(jnp.ones(3) + jnp.ones((2, 3))),
                                  np.full((2, 3), 2.0, np.float32))
  finally:
    release.set()
    t.join(60)
  assert seen["scoped"] == "raise"


def test_update_is_global_and_a_scope_keeps_its_value():
  def run(barrier):
    with hlox.numpy_rank_promotion("raise"):
      barrier.wait()  # the main thread updates now
      barrier.wait()
      inside = hlox.numpy_rank_promotion.value
    return inside, hlox.numpy_rank_promotion.value

  barrier = threading.Barrier(2)
  try:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
      future = pool.submit(run, barrier)
      barrier.wait()
      config.update("numpy_rank_promotion", "warn")
      barrier.wait()
      inside, after = future.result(timeout=120)
    assert inside == "raise"  # the thread's scope is in effect there
    assert after == "warn"  # out of it, the thread sees the global value
    assert hlox.numpy_rank_promotion.value == "warn"
  finally:
    config.update("numpy_rank_promotion", "allow")


def test_scopes_nest_and_unwind_in_one_thread():
  with hlox.enable_x64():
    assert jnp.array(np.int64(1)).dtype == np.int64
    with hlox.enable_x64(False):
      assert jnp.array(np.int64(1)).dtype == np.int32
      assert hlox.enable_x64.get_global() is False
    assert jnp.array(np.int64(1)).dtype == np.int64
  assert jnp.array(np.int64(1)).dtype == np.int32
  # No scope open anywhere: the global values are a plain lookup again.
  assert type(config._values).__getitem__ is dict.__getitem__


def test_a_failing_scope_value_is_refused_and_undone():
  with pytest.raises(ValueError):
    with hlox.numpy_rank_promotion("sometimes"):
      pass
  assert hlox.numpy_rank_promotion.value == "allow"
