"""``hlox.experimental.multihost_utils`` (JAX's ``jax.experimental.multihost_utils``): moving
host values between the processes of a multi-process run (see ``hlox.distributed``).

Each helper gathers through one program over every device of the run: each process puts
its value on its devices as its block of a global array split over processes, and a
jitted identity with a replicated result hands every process the whole. In a single
process that is the value itself, and no program runs.
"""
from __future__ import annotations

import zlib

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.api import jit
from hlox.runtime import client
from hlox.runtime import placement
from hlox.runtime.array import Array
from hlox.runtime import array as array_lib
from hlox.runtime import sharding as sharding_lib

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather",
           "sync_global_devices"]


def _process_mesh():
  """A mesh of every device with one row per process (axis ``processes``)."""
  rows = {}
  for d in client.devices():
    rows.setdefault(getattr(d, "process_index", 0), []).append(d)
  per_process = min(len(r) for r in rows.values())
  grid = np.empty((len(rows), per_process), dtype=object)
  for i, p in enumerate(sorted(rows)):
    grid[i, :] = rows[p][:per_process]
  return sharding_lib.Mesh(grid, ("processes", "local"))


def _host_value(x) -> np.ndarray:
  if isinstance(x, Array):
    if x.is_fully_addressable:
      return np.asarray(x)
    raise NotImplementedError("process_allgather: a global array spread over several "
                              "processes; gather it inside a jitted function instead")
  return np.asarray(x)


def _gather_leaf(x, tiled: bool) -> np.ndarray:
  value = _host_value(x)
  n = client.process_count()
  if n == 1:
    stacked = value[None]
  else:
    mesh = _process_mesh()
    split = sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec("processes"))
    whole = sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec())
    global_array = placement.make_array_from_process_local_data(split, value[None],
                                                                (n,) + value.shape)
    stacked = np.asarray(jit(lambda a: a, out_shardings=whole)(global_array)
                         .addressable_data(0))
  if tiled and value.ndim:
    return stacked.reshape((-1,) + value.shape[1:])
  return stacked


def process_allgather(in_tree, tiled: bool = False):
  """Every process's value of each leaf of ``in_tree``, as NumPy arrays: stacked along a
  new leading axis (one row per process), or, with ``tiled``, concatenated along axis 0."""
  return tree_util.tree_map(lambda x: _gather_leaf(x, tiled), in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
  """Each leaf of ``in_tree`` as the source process has it (process 0 unless ``is_source``
  says otherwise; exactly one process must be the source), on every process."""
  if is_source is None:
    is_source = client.process_index() == 0

  def leaf(x):
    value = _host_value(x)
    if client.process_count() == 1:
      return array_lib.device_put(value)
    mine = value if is_source else np.zeros_like(value)
    summed = _gather_leaf(mine, tiled=False).sum(axis=0, dtype=value.dtype)
    return array_lib.device_put(summed)
  return tree_util.tree_map(leaf, in_tree)


def sync_global_devices(name: str) -> None:
  """Wait until every process reaches this call with the same ``name``."""
  assert_equal(np.uint32(zlib.crc32(name.encode())), f"sync_global_devices name mismatch "
               f"('{name}')")


def assert_equal(in_tree, fail_message: str = "") -> None:
  """Raise ``AssertionError`` unless every process holds equal leaves in ``in_tree``."""
  def check(x):
    gathered = _gather_leaf(x, tiled=False)
    if not all(np.array_equal(gathered[0], g) for g in gathered[1:]):
      raise AssertionError(f"{fail_message} Expected: {gathered[0]}; got: {gathered}.")
  tree_util.tree_map(check, in_tree)
