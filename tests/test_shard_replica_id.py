"""``Shard.replica_id``: which copy of its piece a shard is (0 for the first device holding
that piece, then 1, ...), as JAX numbers them; copies of multi-device arrays keep their
layout."""
import numpy as np

import hlox
import hlox.numpy as jnp
from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P


def test_replica_ids_count_copies_of_each_piece():
  devices = hlox.devices()
  n = len(devices)
  assert n % 2 == 0
  mesh = Mesh(np.array(devices).reshape(2, n // 2), ("x", "y"))
  x = hlox.device_put(jnp.arange(float(n)), NamedSharding(mesh, P("y")))
  seen = {}
  for shard in x.addressable_shards:
    key = tuple((s.start, s.stop) for s in shard.index)
    assert shard.replica_id == seen.get(key, 0)
    seen[key] = shard.replica_id + 1
    np.testing.assert_array_equal(shard.data, np.arange(float(n))[shard.index])
  assert sorted(seen.values()) == [2] * (n // 2)
  # a split array: every piece once; a copy keeps index and replica numbering
  y = hlox.device_put(jnp.arange(float(n)), NamedSharding(mesh, P(("x", "y"))))
  assert [s.replica_id for s in y.addressable_shards] == [0] * n
  z = jnp.copy(x)
  assert [(s.index, s.replica_id) for s in z.addressable_shards] == \
      [(s.index, s.replica_id) for s in x.addressable_shards]
  assert jnp.ones(3).addressable_shards[0].replica_id == 0


def test_copy_of_pmap_results_keeps_their_layout():
  n = hlox.device_count()
  replicated = hlox.pmap(lambda x: x, in_axes=0, out_axes=None)(jnp.arange(n))
  copied = jnp.copy(replicated)
  assert copied.sharding == replicated.sharding
  assert isinstance(copied.sharding, hlox.sharding.NamedSharding)
  assert int(copied) == 0
  split = hlox.pmap(lambda x: 2 * x)(jnp.arange(float(n)))
  copied = jnp.copy(split)
  assert copied.sharding == split.sharding
  np.testing.assert_array_equal(copied, 2 * np.arange(float(n)))
