"""jit's warning for many bytes of captured constants (JAX's option and text), and
device_put's refusal of NumPy masked arrays."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.config import config
from hlox.interpreters.captured_constants import pprint_bytes


@pytest.fixture
def options():
  before = (config.captured_constants_warn_bytes, config.captured_constants_report_frames)
  yield
  config.update("captured_constants_warn_bytes", before[0])
  config.update("captured_constants_report_frames", before[1])


def _captured_warnings(fn, *args):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = fn(*args)
  return out, [str(w.message) for w in caught if "constants were captured" in str(w.message)]


def test_threshold_and_disabling(options):
  y = jnp.ones((128, 128), np.float32)
  x = jnp.arange(128, dtype=np.float32)
  config.update("jax_captured_constants_warn_bytes", y.nbytes)
  f = hlox.jit(lambda v: v @ y)
  out, seen = _captured_warnings(f, x)
  np.testing.assert_allclose(out, np.full(128, x.sum()))
  assert seen == [
      "A large amount of constants were captured during lowering (65.54KB total). If this is "
      "intentional, disable this warning by setting HLOX_CAPTURED_CONSTANTS_WARN_BYTES=-1 "
      "(JAX's spelling works too). To obtain a report of where these constants were "
      "encountered, set HLOX_CAPTURED_CONSTANTS_REPORT_FRAMES=-1."]
  assert _captured_warnings(f, x)[1] == []  # lowered once: no second warning
  config.update("captured_constants_warn_bytes", y.nbytes + 1)
  assert _captured_warnings(hlox.jit(lambda v: v @ y), x)[1] == []
  config.update("captured_constants_warn_bytes", -1)
  assert _captured_warnings(hlox.jit(lambda v: v @ y), x)[1] == []
  config.update("captured_constants_warn_bytes", 2 * 10 ** 9)
  assert _captured_warnings(hlox.jit(lambda v: v @ y), x)[1] == []


def test_report_names_the_largest_constants(options):
  big, small = jnp.ones((64, 64), np.float32), jnp.ones((4,), np.float32)
  config.update("captured_constants_warn_bytes", 100)
  config.update("captured_constants_report_frames", -1)
  _, [text] = _captured_warnings(hlox.jit(lambda v: (v @ big)[:4] + small),
                                 jnp.ones(64, np.float32))
  assert "(16.40KB total)" in text and "Largest 2 allocation(s):" in text
  lines = text.splitlines()
  first = next(i for i, l in enumerate(lines) if l.startswith("  Constant"))
  assert lines[first].endswith("f32[64,64], 16.38KB captured at:")
  assert "test_captured_constants.py" in lines[first + 1]
  assert any(l.endswith("f32[4], 16.00B captured at:") for l in lines)


def test_aot_lowering_warns_too(options):
  y = np.ones((32, 32), np.float32)
  config.update("captured_constants_warn_bytes", y.nbytes)
  _, seen = _captured_warnings(lambda: hlox.jit(lambda v: v @ jnp.asarray(y)).lower(
      jnp.ones(32, np.float32)), )
  assert len(seen) == 1 and "(4.10KB total)" in seen[0]


def test_pprint_bytes():
  assert [pprint_bytes(n) for n in (0, 999, 1000, 65536, 2 * 10 ** 9, 10 ** 15)] == [
      "0.00B", "999.00B", "1.00KB", "65.54KB", "2.00GB", "1000.00TB"]


def test_device_put_rejects_masked_arrays():
  value = np.ma.array([1, 2, 3], mask=[True, False, True])
  with pytest.raises(ValueError, match="numpy masked arrays are not supported as direct "
                                       "inputs to JAX functions. Use arr.filled()"):
    hlox.device_put(value, hlox.devices()[0])
  with pytest.raises(ValueError, match="numpy masked arrays are not supported"):
    hlox.jit(lambda v: v)(value)
  np.testing.assert_array_equal(hlox.device_put(value.filled(0)), [0, 2, 0])
