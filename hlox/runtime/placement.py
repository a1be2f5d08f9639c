"""Placing values on devices: the public, pytree-aware ``device_put`` (one device or sharding
for all leaves, or a tree prefix of them), and, as ``pmap`` lays out its inputs,
``device_put_sharded`` (one value per device, stacked) and ``device_put_replicated``."""
from __future__ import annotations

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core.avals import MemorySpace, ShapedArray
from hlox.core.tracer import Tracer
from hlox.runtime import spmd, transfer_guard
from hlox.runtime import sharding as sharding_lib
from hlox.runtime import array as array_lib
from hlox.runtime.array import Array, wrap_multi


def _is_device_spec(d) -> bool:
  return (d is None or hasattr(d, "platform") or hasattr(d, "_hlox_device")
          or isinstance(d, sharding_lib.Sharding))


def _resolve_specs(device):
  """PartitionSpecs (alone or in a tree of device specs) as NamedShardings over the current
  mesh (``set_mesh``), as JAX reads ``device_put(x, P('x'))``."""
  is_spec = lambda d: isinstance(d, sharding_lib.PartitionSpec)
  if not is_spec(device) and not isinstance(device, (tuple, list, dict)):
    return device

  def resolve(d):
    if not is_spec(d):
      return d
    mesh = sharding_lib.current_mesh()
    if mesh is None:
      raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed "
                       "to device_put")
    return sharding_lib.NamedSharding(mesh, d)
  if is_spec(device):
    return resolve(device)
  return tree_util.tree_map(resolve, device, is_leaf=lambda d: is_spec(d) or d is None)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Put every leaf of the pytree ``x`` on ``device``: a device or sharding for all leaves,
  or a tree prefix of ``x`` giving one per subtree (``None``: the default device; Arrays
  stay where they are). With ``donate=True`` an input Array copied elsewhere is deleted;
  ``may_alias=False`` copies an Array even where it already is. ``src`` is accepted for
  JAX's signature."""
  del src
  if may_alias and donate:
    raise ValueError("may_alias and donate cannot be True at the same time.")
  device = _resolve_specs(device)
  leaves, tree = tree_util.tree_flatten(x)
  if _is_device_spec(device):
    devices = [device] * len(leaves)
  else:
    try:
      devices = tree_util.broadcast_prefix(device, x, is_leaf=_is_device_spec)
    except (ValueError, TypeError):
      errors = tree_util.prefix_errors(device, x, "device", is_leaf=_is_device_spec)
      details = "".join(f"\n  {m}" for m in errors)
      raise ValueError(
          "device_put device specification must be a tree prefix of the corresponding "
          f"value; got specification {device!r} for value tree {tree}."
          + (f"\n  Mismatch details ({len(errors)} found):{details}" if errors else "")
      ) from None
  if any(isinstance(d, MemorySpace) for d in devices):
    return tree.unflatten([_put_in_space(leaf, d) if isinstance(d, MemorySpace)
                           else device_put(leaf, d) for leaf, d in zip(leaves, devices)])
  for d in devices:
    if not _is_device_spec(d):
      raise ValueError(f"device_put: Received invalid value {d!r} for the device: expected a "
                       "Device, a Sharding or None.")
  if any(isinstance(leaf, Tracer) for leaf in leaves):
    # A traced value passes through: under a transformation it is not on any device yet
    # (JAX's device_put is the identity there too); the others are placed.
    return tree.unflatten([leaf if isinstance(leaf, Tracer) else array_lib.device_put(leaf, d)
                           for leaf, d in zip(leaves, devices)])
  with transfer_guard.explicit():
    out = [array_lib.device_put(leaf, d) for leaf, d in zip(leaves, devices)]
    if may_alias is False:  # a new Array (and buffer) even where nothing moved
      out = [array_lib.copy_array(new) if new is leaf else new
             for leaf, new in zip(leaves, out)]
  if donate:
    for leaf, new in zip(leaves, out):
      if isinstance(leaf, Array) and new is not leaf:
        leaf.delete()
  return tree.unflatten(out)


def _put_in_space(x, space):
  """``x`` typed as living in memory ``space`` (``jax.memory.Space.Host``/``Device``), on
  the device it is on. hlox keeps the buffer where it is: the space is the array's type,
  which programs lowered with it see (``f32<host>[3]``); under a trace the value passes
  through, as other device_puts do."""
  if space is MemorySpace.Any:
    raise ValueError("device_put: jax.memory.Space.Any is not a place an array can be put "
                     "in; use Space.Device or Space.Host")
  if isinstance(x, Tracer):
    return x
  with transfer_guard.explicit():
    arr = x if isinstance(x, Array) else array_lib.device_put(x)
  aval = arr.aval.update(memory_space=space)
  if aval is arr.aval:
    return arr
  committed = arr._sig is not arr.aval
  return Array(arr._single(), aval, arr.device if committed else None)


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


# --- arrays assembled from pieces (JAX's make_array_from_*), for one-device shardings ------

def _sharding_device(name, sharding):
  """The one device of ``sharding`` (a single-device sharding, e.g. an Array's
  ``.sharding``, or a device); other shardings are not available in hlox yet."""
  if hasattr(sharding, "platform") and hasattr(sharding, "id"):
    return sharding
  device = getattr(sharding, "_hlox_device", None)
  if device is not None:
    return device
  devices = getattr(sharding, "_device_assignment", None)
  if devices is None:
    raise TypeError(f"{name}: sharding should be a sharding (e.g. an Array's .sharding) or a "
                    f"device. Got {sharding!r} of type {type(sharding)}")
  if len(devices) != 1:
    raise NotImplementedError(f"{name}: only single-device shardings are supported today; "
                              f"got one over {len(devices)} devices ({sharding!r})")
  return devices[0]


def _put(x, device):
  with transfer_guard.explicit():  # as JAX, these put data where they are asked to
    return array_lib.device_put(x, device)


def _check_shard_shape(name, shape, value, sharding):
  if tuple(value.shape) != tuple(shape):
    raise ValueError(f"{name}: Expected shard shape {tuple(shape)} doesn't match the single "
                     f"device array shape {tuple(value.shape)}, with sharding {sharding!r}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """The Array of global ``shape`` laid out by ``sharding``, each device's piece made by
  ``data_callback(index)`` (``index`` a tuple of slices into the global array). With a
  single-device sharding there is one piece, the whole array."""
  shape = tuple(shape)
  if isinstance(sharding, sharding_lib.NamedSharding) or (
      isinstance(sharding, sharding_lib.Sharding) and sharding.num_devices > 1):
    return _from_callback_sharded(shape, sharding, data_callback, dtype)
  device = _sharding_device("make_array_from_callback", sharding)
  piece = data_callback((slice(None),) * len(shape))
  if isinstance(piece, Array):
    _check_shard_shape("make_array_from_callback", shape, piece, sharding)
    return _put(piece if dtype is None else piece.astype(dtype), device)
  value = np.asarray(piece, dtype=dtype)
  _check_shard_shape("make_array_from_callback", shape, value, sharding)
  return _put(value, device)


def _from_callback_sharded(shape, sharding, data_callback, dtype):
  """Each device's block from ``data_callback(index)``, assembled into the global array and
  laid out by ``sharding`` (blocks held by several devices are asked for once)."""
  value = None
  done = set()
  for index in sharding.devices_indices_map(shape).values():
    key = tuple(i.indices(n) for i, n in zip(index, shape))
    if key in done:
      continue
    done.add(key)
    block = np.asarray(data_callback(index), dtype=dtype)
    if value is None:
      value = np.empty(shape, dtype=block.dtype)
    expected = value[index].shape
    if block.shape != expected:
      raise ValueError(f"make_array_from_callback: Expected shard shape {expected} doesn't "
                       f"match the single device array shape {block.shape}, with sharding "
                       f"{sharding!r}")
    value[index] = block
  return _put(value, sharding)


def _from_process_local_data(sharding, local_data, global_shape):
  """The global array whose blocks on this process's devices come from ``local_data``: the
  part of the global array those devices hold, in order (its shape along a dimension split
  across processes is the global size divided by the processes sharing it)."""
  value = local_data._value() if isinstance(local_data, Array) else np.asarray(local_data)
  dtype = dtypes.canonicalize_dtype(value.dtype)
  value = value.astype(dtype, copy=False)
  mesh = sharding.mesh
  if global_shape is None:
    # A dimension grows by the number of its blocks over the number held here.
    internal = sharding_lib.internal(sharding, value.ndim)
    global_shape = list(value.shape)
    for d in range(value.ndim):
      count = 1
      for a in sharding.spec.axes_of(d):
        count *= mesh.shape[a]
      probe = tuple(count if k == d else 1 for k in range(value.ndim))
      held = {sharding_lib.indices_of(internal._hlo, probe, len(internal._devs))[p][d]
              .indices(count)[0] for p in internal.local_positions}
      global_shape[d] = value.shape[d] * count // len(held)
  global_shape = tuple(global_shape)
  aval = ShapedArray(global_shape, dtype)
  internal = sharding_lib.internal(sharding, len(global_shape))
  indices = sharding_lib.indices_of(internal._hlo, global_shape, len(internal._devs))
  local = [indices[p] for p in internal.local_positions]
  # This process's data covers the bounding box of its devices' blocks.
  starts = [min(i[d].indices(n)[0] for i in local) for d, n in enumerate(global_shape)]
  blocks = []
  for idx in local:
    shifted = tuple(slice(s.indices(n)[0] - o, s.indices(n)[1] - o)
                    for s, n, o in zip(idx, global_shape, starts))
    blocks.append(value[shifted])
  with transfer_guard.explicit():
    buf = spmd.put_blocks(blocks, aval, internal)
  return array_lib.wrap_partitioned(buf, aval)


def _check_single_device_arrays(arrays, dtype):
  """JAX's checks of ``make_array_from_single_device_arrays``'s ``arrays``."""
  name = "jax.make_array_from_single_device_arrays"
  if not isinstance(arrays, (list, tuple)):
    raise TypeError(f"{name} `arrays` argument must be a list or tuple, but got "
                    f"{type(arrays)}.")
  if any(isinstance(a, Tracer) for a in arrays):
    raise ValueError(f"{name} requires a list of concrete arrays as input, but got types "
                     f"{set(map(type, arrays))}")
  if not arrays and dtype is None:
    raise ValueError("If the Array has no addressable shards, `dtype` must be provided via "
                     f"the `dtype` argument to `{name}`.")
  for a in arrays:
    if isinstance(a, Array) and a._multi is not None and len(a.devices()) != 1:
      raise ValueError("When making an array from single-device arrays the input arrays "
                       "must have one shard each. An argument array had "
                       f"{len(a.devices())} shard(s).")


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """The Array of global ``shape`` whose pieces are ``arrays`` (one Array per device of
  ``sharding``, each already on its device), without copying where they already lie."""
  shape = tuple(shape)
  _check_single_device_arrays(arrays, dtype)
  if isinstance(sharding, sharding_lib.NamedSharding):
    return _from_single_device_arrays(shape, sharding, list(arrays), dtype)
  device = _sharding_device("make_array_from_single_device_arrays", sharding)
  arrays = list(arrays)
  if len(arrays) != 1:
    raise ValueError(f"make_array_from_single_device_arrays: the sharding has 1 device, got "
                     f"{len(arrays)} arrays")
  (piece,) = arrays
  if not isinstance(piece, Array):
    raise TypeError("make_array_from_single_device_arrays: arrays must be hlox Arrays, got "
                    f"{type(piece).__name__}")
  _check_shard_shape("make_array_from_single_device_arrays", shape, piece, sharding)
  if dtype is not None and np.dtype(dtype) != piece.dtype:
    raise ValueError(f"make_array_from_single_device_arrays: dtype {np.dtype(dtype)} does "
                     f"not match the arrays' dtype {piece.dtype}")
  return _put(piece, device)


def _from_single_device_arrays(shape, sharding, arrays, dtype):
  """The array of global ``shape`` whose block on each of this process's devices is the one
  of ``arrays`` on that device."""
  name = "make_array_from_single_device_arrays"
  internal = sharding_lib.internal(sharding, len(shape))
  by_device = {}
  for a in arrays:
    if not isinstance(a, Array) or a._multi is not None:
      raise TypeError(f"{name}: arrays must be single-device hlox Arrays, got "
                      f"{type(a).__name__}")
    by_device[a.device] = a
  if set(by_device) != set(internal.local_devices) or len(arrays) != len(by_device):
    raise ValueError(f"{name}: expected one array on each of the {len(internal.local_devices)}"
                     f" addressable devices of {sharding!r}, got arrays on "
                     f"{[a.device for a in arrays]}")
  indices = sharding_lib.indices_of(internal._hlo, shape, len(internal._devs))
  first = arrays[0]
  if dtype is not None and np.dtype(dtype) != first.dtype:
    raise ValueError(f"{name}: dtype {np.dtype(dtype)} does not match the arrays' dtype "
                     f"{first.dtype}")
  blocks = []
  for p, device in zip(internal.local_positions, internal.local_devices):
    a = by_device[device]
    expected = np.empty(shape, dtype=bool)[indices[p]].shape
    if tuple(a.shape) != expected:
      raise ValueError(f"{name}: Expected shard shape {expected} doesn't match the single "
                       f"device array shape {tuple(a.shape)}, with sharding {sharding!r}")
    with transfer_guard.explicit():
      blocks.append(a._value())
  aval = ShapedArray(shape, first.dtype)
  return array_lib.wrap_partitioned(spmd.put_blocks(blocks, aval, internal), aval)


def _is_shape(s) -> bool:
  return isinstance(s, tuple) and all(isinstance(n, (int, np.integer)) for n in s)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """Build a global Array from this process's part of the data.

  In a single-process run the local data is the whole array. Applies to a pytree of local
  arrays too, each leaf laid out alike. A ``PartitionSpec`` needs a current mesh
  (``set_mesh``), else ValueError.

  Args:
    sharding: a ``Sharding``, or a ``PartitionSpec`` over the current mesh.
    local_data: this process's data (array-like, or a pytree of them).
    global_shape: optional global shape (one for every leaf, or a pytree of them); default:
      inferred from the local data.

  Returns:
    An Array (or pytree of Arrays) laid out by ``sharding``.

  Examples:
    >>> from hlox.sharding import PartitionSpec as P
    >>> s = hlox.NamedSharding(hlox.make_mesh((1,), ("x",)), P("x"))
    >>> hlox.make_array_from_process_local_data(s, np.arange(4.))
    Array([0., 1., 2., 3.], dtype=float32)
  """
  if isinstance(sharding, sharding_lib.PartitionSpec):
    mesh = sharding_lib.current_mesh()
    if mesh is None or mesh.empty:
      raise ValueError("make_array_from_process_local_data: a PartitionSpec sharding "
                       f"({sharding!r}) needs a mesh: use a NamedSharding or set one with "
                       "`set_mesh`")
    sharding = sharding_lib.NamedSharding(mesh, sharding)
  leaves, treedef = tree_util.tree_flatten(local_data)
  if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # one array
    return _array_from_process_local_data(sharding, local_data, global_shape)
  if global_shape is None or _is_shape(global_shape):
    shapes = [global_shape] * len(leaves)
  else:
    shapes = treedef.flatten_up_to(global_shape)
  return treedef.unflatten([_array_from_process_local_data(sharding, leaf, shape)
                            for leaf, shape in zip(leaves, shapes)])


def _array_from_process_local_data(sharding, local_data, global_shape):
  if isinstance(sharding, sharding_lib.NamedSharding):
    return _from_process_local_data(sharding, local_data, global_shape)
  device = _sharding_device("make_array_from_process_local_data", sharding)
  value = local_data if isinstance(local_data, Array) else np.asarray(local_data)
  if global_shape is not None:
    _check_shard_shape("make_array_from_process_local_data", global_shape, value, sharding)
  return _put(value, device)
