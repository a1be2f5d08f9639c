"""``array_garbage_collection_guard``: Arrays freed by the cycle collector are reported when
the option says so, and only then; Arrays take attributes as JAX's do."""
import contextlib
import gc
import io
import weakref

import pytest

import hlox
import hlox.numpy as jnp
from hlox.runtime import gc_guard
from hlox.runtime.array import ArrayImpl


def _array_cycle():
  a, b = jnp.ones((2, 2)), jnp.zeros((2, 2))
  a.next, b.next = b, a  # attributes on Arrays, as on JAX's
  return weakref.ref(a)


@contextlib.contextmanager
def _guard(mode):
  before = hlox.config.array_garbage_collection_guard
  hlox.config.update("array_garbage_collection_guard", mode)
  try:
    yield
  finally:
    hlox.config.update("array_garbage_collection_guard", before)


def _stderr_of(fn):
  buf = io.StringIO()
  with contextlib.redirect_stderr(buf):
    fn()
  return buf.getvalue()


def _collect_cycle():
  ref = _array_cycle()
  assert ref() is not None
  gc.collect()
  assert ref() is None


def test_silent_by_default_and_with_allow():
  assert "__del__" not in ArrayImpl.__dict__  # no finalizer cost while off
  assert gc_guard.MESSAGE not in _stderr_of(_collect_cycle)
  with _guard("allow"):
    assert gc_guard.MESSAGE not in _stderr_of(_collect_cycle)


def test_log_reports_arrays_in_or_reachable_from_cycles_only():
  class Holder:
    pass

  def reachable_from_cycle():
    h = Holder()
    h.me, h.array = h, jnp.arange(3.)
    del h
    gc.collect()

  def freed_by_refcount():
    a = jnp.arange(3.)
    del a

  with _guard("log"):
    assert gc_guard.MESSAGE in _stderr_of(_collect_cycle)
    assert "Array: f32[2,2]" in _stderr_of(_collect_cycle)
    assert gc_guard.MESSAGE in _stderr_of(reachable_from_cycle)
    assert gc_guard.MESSAGE not in _stderr_of(freed_by_refcount)
  assert "__del__" not in ArrayImpl.__dict__  # removed again with the option


def test_attributes_and_bad_values():
  x = jnp.ones(3)
  x.note = "kept"
  assert x.note == "kept" and float(x.sum()) == 3.0
  with pytest.raises(ValueError, match="must be None or in"):
    hlox.config.update("array_garbage_collection_guard", "sometimes")
