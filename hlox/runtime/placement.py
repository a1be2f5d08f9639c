"""Placing host values on several devices as ``pmap`` lays out its inputs:
``device_put_sharded`` (one value per device, stacked) and ``device_put_replicated``."""
from __future__ import annotations

import numpy as np

from hlox import tree_util
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.runtime import spmd
from hlox.runtime.array import wrap_multi


def _stack_on_devices(values, devices, name):
  devices = tuple(devices)
  if len(values) != len(devices):
    raise ValueError(f"{name}: got {len(values)} values for {len(devices)} devices")
  arrays = [np.asarray(v) for v in values]
  if len({(a.shape, a.dtype) for a in arrays}) > 1:
    raise ValueError(f"{name}: all values must have one shape and dtype, got "
                     f"{sorted({(a.shape, str(a.dtype)) for a in arrays})}")
  stacked = np.stack(arrays)
  dtype = dtypes.canonicalize_dtype(stacked.dtype)
  stacked = stacked.astype(dtype, copy=False)
  aval = ShapedArray(stacked.shape, dtype)
  sharding = spmd.pmap_sharding(devices, 0, stacked.ndim)
  return wrap_multi(spmd.put_sharded(stacked, aval, sharding), aval)


def device_put_sharded(shards, devices):
  """Stack ``shards`` (one array, or pytree of arrays, per device) into Arrays whose leading
  axis is split over ``devices`` as ``pmap`` lays out its inputs (no copy when pmapped)."""
  shards = list(shards)
  if not shards:
    raise ValueError("device_put_sharded: got no shards")
  return tree_util.tree_map(
      lambda *leaves: _stack_on_devices(leaves, devices, "device_put_sharded"), *shards)


def device_put_replicated(x, devices):
  """Copy ``x`` (an array or pytree) to every device in ``devices``: the results have a
  leading axis of size ``len(devices)``, split over them as ``pmap`` expects."""
  devices = list(devices)
  if not devices:
    raise ValueError("device_put_replicated: got no devices")
  return tree_util.tree_map(
      lambda leaf: _stack_on_devices([leaf] * len(devices), devices, "device_put_replicated"),
      x)
