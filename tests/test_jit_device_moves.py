"""Where a jitted call runs when its arguments sit on different devices, as JAX has it:
``jit(f, device=d)`` moves its arguments to ``d`` implicitly (the transfer guards judge the
moves) and commits its results there, also with no arguments; arguments committed to two
devices are refused with JAX's message, naming them."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


@pytest.fixture(scope="module")
def devices():
  devs = hlox.devices()
  if len(devs) < 2:
    pytest.skip("needs 2 CPU devices (conftest asks for 8)")
  return devs


def _jit_on(fun, device):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    return hlox.jit(fun, device=device)


def test_jit_on_device_commits_results(devices):
  out = _jit_on(lambda: lax.add(3., 4.), devices[1])()
  assert out.devices() == {devices[1]} and out.committed and float(out) == 7.
  out = _jit_on(lambda x: x * 2, devices[1])(jnp.arange(3.))
  assert out.devices() == {devices[1]} and out.committed
  np.testing.assert_array_equal(out, [0., 2., 4.])
  # Without device=, a call with nothing committed stays uncommitted on the default device.
  plain = hlox.jit(lambda: lax.add(3., 4.))()
  assert plain.devices() == {devices[0]} and not plain.committed


def test_jit_on_device_moves_are_implicit(devices):
  x = jnp.ones(2)  # on devices[0]
  f = _jit_on(lambda v: v + 1, devices[1])
  with hlox.transfer_guard_device_to_device("disallow"):
    with pytest.raises(hlox.errors.JaxRuntimeError,
                       match="Disallowed device-to-device transfer.*an implicit transfer"):
      f(x)
    # Already there: nothing moves.
    y = hlox.device_put(x, devices[1])
    np.testing.assert_array_equal(f(y), [2., 2.])
  with hlox.transfer_guard_device_to_device("disallow_explicit"):
    with pytest.raises(hlox.errors.JaxRuntimeError, match="device-to-device"):
      f(x)
  with hlox.transfer_guard_host_to_device("disallow"):
    with pytest.raises(hlox.errors.JaxRuntimeError, match="host-to-device"):
      f(np.ones(2, np.float32))
  np.testing.assert_array_equal(f(x), [2., 2.])


def test_arguments_on_two_devices_are_refused_by_name(devices):
  x = hlox.device_put(1., devices[0])
  y = hlox.device_put(2., devices[1])

  def g(a, b):
    return a + b

  expected = ("Received incompatible devices for jitted computation. Got argument a of g "
              "with shape float32[] and with device ids [0] on platform CPU and argument b "
              "of g with shape float32[] and with device ids [1] on platform CPU")
  for call in (lambda: hlox.jit(g)(x, y), lambda: hlox.jit(g)(x, b=y)):
    with pytest.raises(ValueError) as info:
      call()
    assert str(info.value) == expected

  def h(p, q):
    return p["k"] * q

  with pytest.raises(ValueError, match=r"argument p\['k'\] of h .* argument q of h"):
    hlox.jit(h)({"k": x}, y)
  # An uncommitted argument goes where the committed one is.
  out = hlox.jit(g)(1., y)
  assert out.devices() == {devices[1]} and out.committed and float(out) == 3.
