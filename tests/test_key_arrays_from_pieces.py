"""Typed key arrays assembled from per-device pieces (``make_array_from_single_device_arrays``,
``make_array_from_callback``), as JAX allows: the keys' words are placed, the key
dimensions unsplit."""
import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import random
from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P


def _sharding():
  devices = hlox.devices()
  return NamedSharding(Mesh(np.array(devices), ("x",)), P("x")), devices


def test_from_single_device_key_arrays():
  sharding, devices = _sharding()
  n = len(devices)
  keys = random.split(random.key(0), n)
  pieces = [hlox.device_put(keys[i:i + 1], d) for i, d in enumerate(devices)]
  out = hlox.make_array_from_single_device_arrays((n,), sharding, pieces)
  assert out.dtype == keys.dtype and out.shape == (n,)
  assert out.sharding == sharding
  np.testing.assert_array_equal(random.key_data(out), random.key_data(keys))


def test_from_callback_with_key_pieces_calls_once_per_device():
  sharding, devices = _sharding()
  n = len(devices)
  calls = []

  def callback(index):
    calls.append(index)
    return hlox.vmap(random.key)(jnp.arange(n)[index[0]])

  out = hlox.make_array_from_callback((n,), sharding, callback)
  want = hlox.vmap(random.key)(jnp.arange(n))
  assert out.dtype == want.dtype and out.shape == (n,)
  np.testing.assert_array_equal(random.key_data(out), random.key_data(want))
  assert len(calls) == n and all(len(i) == 1 for i in calls)


def test_from_callback_plain_values_unchanged():
  sharding, devices = _sharding()
  n = len(devices)
  calls = []
  value = np.arange(n * 3.0).reshape(n, 3)
  out = hlox.make_array_from_callback((n, 3), sharding,
                                      lambda i: (calls.append(i), value[i])[1])
  np.testing.assert_array_equal(out, value)
  assert len(calls) == n
