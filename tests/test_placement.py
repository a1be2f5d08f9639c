"""Committed and uncommitted placement, as JAX has it: ``device_put`` to a device commits an
array (also to the default device); results computed from committed arrays are committed
where they are; uncommitted operands move to a committed operand's device; operands
committed to different devices are refused."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


@pytest.fixture(scope="module")
def devices():
  devs = hlox.devices()
  if len(devs) < 3:
    pytest.skip("needs 3 CPU devices (conftest asks for 8)")
  return devs


def test_committed_flag(devices):
  u = jnp.arange(4.0)
  assert not u.committed and not (u * 2).committed
  assert not hlox.jit(lambda x: x * 2)(u).committed
  on_default = hlox.device_put(u, devices[0])
  assert on_default.committed and not u.committed  # a committed twin; u stays as it was
  assert (on_default * 2).committed and hlox.jit(lambda x: x * 2)(on_default).committed
  assert hlox.device_put(np.ones(3), devices[1]).committed
  assert hlox.device_put(on_default) is on_default


@pytest.mark.parametrize("op", [
    lambda u, c: u + c,                                 # an eager jnp function
    lambda u, c: lax.add(u, c),                         # an eager primitive
    lambda u, c: jnp.where(u > 1, c, u),                # a composite of several ops
    lambda u, c: hlox.jit(lambda a, b: a * b + 1.0)(u, c),
    lambda u, c: hlox.jit(lambda a, b, s: a * s - b)(u, c, 2.0),   # a host scalar as well
])
def test_uncommitted_operands_follow_committed_ones(devices, op):
  u = jnp.arange(4.0)
  c = hlox.device_put(np.full(4, 3.0, np.float32), devices[2])
  expected = np.asarray(op(np.arange(4.0, dtype=np.float32), np.full(4, 3.0, np.float32)))
  for _ in range(2):  # the second call is a cache hit
    out = op(u, c)
    assert out.devices() == {devices[2]} and out.committed
    np.testing.assert_allclose(np.asarray(out), expected)
  assert u.devices() == {devices[0]} and not u.committed  # the operand itself did not move


def test_operands_committed_to_different_devices_are_refused(devices):
  a = hlox.device_put(1.0, devices[0])
  b = hlox.device_put(2.0, devices[2])
  with pytest.raises(ValueError, match=r"(?s)incompatible devices.*args\[0\] of add .*"
                                       r"device ids \[0\].*args\[1\] of add .*device ids \[2\]"):
    lax.add(a, b)  # (JAX's text)
  with pytest.raises(ValueError, match="device"):
    hlox.jit(lambda x, y: x + y)(a, b)
