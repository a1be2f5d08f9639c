"""Arrays spread over several devices, and replicated programs (one replica per device).

``pmap`` runs one program on ``R`` devices. A value it maps is split along one axis into
``R // groups`` pieces (piece ``k`` of size 1 lives on devices ``k*groups .. k*groups +
groups - 1``: ``groups > 1`` when nested pmaps need several replicas per outer position);
an unmapped value is copied to every device. ``PmapSharding`` describes such a layout to
jaxlib (a GSPMD tile sharding) and to hlox (how to put and gather host values).

Replicated programs with collectives must not overlap on the CPU backend: with fewer cores
than devices, replicas of the next launch can take the threads that the previous launch's
replicas need to reach their rendezvous, and XLA aborts the process. ``Replicated.run``
therefore waits for the previous multi-device launch before starting another.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from jaxlib import _jax

from hlox.config import config
from hlox.core import dtypes
from hlox.runtime import callbacks, client, compilation_cache, distributed
from hlox.runtime import sharding as sharding_lib

_sharding_cache: dict = {}
_ShardingClass = None


def _make_sharding_class():
  global _ShardingClass
  if _ShardingClass is not None:
    return _ShardingClass
  xc = client._xc()

  @sharding_lib.jaxlib_facing
  class PmapSharding(xc.GSPMDSharding):
    """``devices`` hold a value split along ``axis`` (None: copied to all) in pieces of
    size 1, each piece on ``groups`` consecutive devices."""

    def __init__(self, devices, axis, ndim, groups, name=None):
      dims = [1] * ndim
      n_pieces = len(devices) // groups
      if axis is None:
        hlo_sharding = xc.HloSharding.replicate()
      else:
        dims[axis] = n_pieces
        tiles = ",".join(map(str, dims + ([groups] if groups > 1 else [])))
        last = " last_tile_dim_replicate" if groups > 1 else ""
        hlo_sharding = xc.HloSharding.from_string(
            f"{{devices=[{tiles}]<=[{len(devices)}]{last}}}")
      dev_list = xc.DeviceList(tuple(devices))
      super().__init__(dev_list, hlo_sharding)
      self._hlo = hlo_sharding
      self._devs = tuple(devices)
      self._dev_list = dev_list
      self.axis = axis
      self.ndim = ndim
      self.groups = groups
      self.num_pieces = n_pieces
      me = client.process_index()
      self.local_positions = [p for p, d in enumerate(devices)
                              if getattr(d, "process_index", 0) == me]
      self.local_devices = [devices[p] for p in self.local_positions]
      self.local_pieces = sorted({p // groups for p in self.local_positions})
      self.axis_name = name if isinstance(name, str) else _PMAP_AXIS
      self._named = None
      # The same layout without a name (``self`` when unnamed): what pmap's inputs use, so
      # a result of one pmap goes into the next without a copy, whatever their axis names.
      self.base = self if name is None else pmap_sharding(devices, axis, ndim, groups)

    def named(self):
      """This layout as JAX 0.10.2 reports a pmap result's ``.sharding``: a NamedSharding
      over a one-axis mesh of the devices, named after pmap's axis, splitting ``axis``
      (none: replicated). Nested pmaps' layouts (several devices per piece) stay as
      they are."""
      if self.groups != 1:
        return self
      if self._named is None:
        mesh = sharding_lib.Mesh(np.array(self._devs, dtype=object), (self.axis_name,))
        spec = (sharding_lib.PartitionSpec() if self.axis is None else
                sharding_lib.PartitionSpec(*(None,) * self.axis, self.axis_name))
        self._named = sharding_lib.NamedSharding(mesh, spec)
      return self._named

    def __repr__(self):
      where = "replicated" if self.axis is None else f"split along axis {self.axis}"
      return f"PmapSharding({where} over {len(self._devs)} devices)"

  _ShardingClass = PmapSharding
  return PmapSharding


# The mesh axis name of a pmap without ``axis_name`` (as JAX names it).
_PMAP_AXIS = "_internal_pmap_axis_name"


def pmap_sharding(devices, axis, ndim: int, groups: int = 1, name=None):
  """The (cached, so comparable by identity) sharding for this layout; ``name`` (pmap's
  axis name) only names the mesh axis of its public view (``named``)."""
  name = name if isinstance(name, str) else None
  key = (tuple(devices), axis, ndim, groups, name)
  sharding = _sharding_cache.get(key)
  if sharding is None:
    sharding = _sharding_cache[key] = _make_sharding_class()(tuple(devices), axis, ndim, groups,
                                                             name)
  return sharding


def is_multi_device(buf) -> bool:
  return type(buf._sharding) is _ShardingClass


# --- host <-> devices --------------------------------------------------------------------

def put_sharded(value: np.ndarray, global_aval, sharding):
  """Copy this process's part of ``value`` to the devices of ``sharding``.

  ``value`` holds the local pieces along ``sharding.axis`` (all of them in one process).
  """
  xc = client._xc()
  if global_aval.dtype == dtypes.float0:
    value, global_aval = client.float0_carrier(value, global_aval)
  axis, groups = sharding.axis, sharding.groups
  if axis is None:
    xs = [value] * len(sharding.local_devices)
  else:
    index = {piece: k for k, piece in enumerate(sharding.local_pieces)}
    xs = []
    for p in sharding.local_positions:
      k = index[p // groups]
      xs.append(np.take(value, [k], axis=axis))
  return xc.batched_device_put(global_aval, sharding, xs, sharding.local_devices, True, False,
                               xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
                               bool(config._values["enable_x64"]))


_buffer_protocol_kinds = frozenset("biufc")


def _first_shard_to_numpy(buf) -> np.ndarray:
  if buf._sharding._internal_device_list[0].platform != "cpu":  # DLPack: CPU memory only
    buf = client.spread_on_host(buf)
  return np.array(np.from_dlpack(_DLPackView(_jax.buffer_to_dlpack_managed_tensor(buf))),
                  copy=True)


class _DLPackView:
  """Hands NumPy a DLPack capsule (of a CPU buffer)."""
  __slots__ = ("capsule",)

  def __init__(self, capsule):
    self.capsule = capsule

  def __dlpack__(self, *args, **kwargs):
    return self.capsule

  def __dlpack_device__(self):
    return (1, 0)  # kDLCPU


def _pieces_by_position(buf) -> dict:
  """{device position: NumPy copy of its shard} for this process's devices of a buffer laid
  out by a ``hlox.runtime.sharding`` layout (the same trick as ``local_pieces``)."""
  xc = client._xc()
  sharding = buf._sharding
  devices = list(sharding._device_assignment)
  local = sharding.local_positions
  pieces = {local[0]: _first_shard_to_numpy(buf)}
  for p in local[1:]:
    order = list(devices)
    order[local[0]], order[p] = order[p], order[local[0]]
    swapped = xc.GSPMDSharding(xc.DeviceList(tuple(order)), sharding._hlo)
    moved = xc.reorder_shards(buf, swapped, _jax.ArrayCopySemantics.REUSE_INPUT)
    pieces[p] = _first_shard_to_numpy(moved)
  return pieces


def put_partitioned(value: np.ndarray, aval, sharding):
  """Copy each of this process's devices its block of the host array ``value`` (``sharding``
  a jaxlib layout from ``sharding_lib.internal``)."""
  indices = sharding_lib.indices_of(sharding._hlo, value.shape, len(sharding._devs))
  return put_blocks([value[indices[p]] for p in sharding.local_positions], aval, sharding)


def put_blocks(blocks, aval, sharding):
  """One array of global type ``aval`` from this process's devices' blocks (in the order of
  ``sharding.local_devices``)."""
  xc = client._xc()
  if aval.dtype == dtypes.float0:  # no XLA type: each block travels as boolean zeros
    carried = [client.float0_carrier(b, aval) for b in blocks]
    blocks = [value for value, _ in carried]
    aval = aval.update(dtype=dtypes.bool_, weak_type=False)
  # Copies, not views: jaxlib fails ("bad_function_call") on a view into a bigger array.
  xs = [np.array(b, copy=True) for b in blocks]
  return xc.batched_device_put(aval, sharding, xs, sharding.local_devices, True, False,
                               xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
                               bool(config._values["enable_x64"]))


def shard_values(buf, dtype) -> list:
  """``(position, NumPy block)`` of this process's shards of a partitioned buffer."""
  dtype = np.dtype(dtype)
  decode = None
  if dtype.kind not in _buffer_protocol_kinds or dtype in dtypes.narrow_int_dtypes:
    buf, decode = exotic_converter(buf, dtype)
  pieces = _pieces_by_position(buf)
  return [(p, decode(v) if decode is not None else v) for p, v in sorted(pieces.items())]


def _gather_partitioned(buf, dtype) -> np.ndarray:
  sharding = buf._sharding
  shape = tuple(buf.aval.shape)
  indices = sharding_lib.indices_of(sharding._hlo, shape, len(sharding._devs))
  covered = np.zeros(shape, dtype=bool)
  for p in sharding.local_positions:
    covered[indices[p]] = True
  if not covered.all():  # some blocks live only on other processes' devices
    raise RuntimeError("Fetching value for `hlox.Array` that spans non-addressable (non "
                       "process local) devices is not possible. You can use "
                       "`hlox.experimental.multihost_utils.process_allgather` to print "
                       "the global array or use `.addressable_shards` method of hlox.Array "
                       "to inspect the addressable (process local) shards.")
  shards = shard_values(buf, dtype)
  if sharding._hlo.is_replicated():
    return shards[0][1]
  value = np.empty(shape, dtype=shards[0][1].dtype)
  for p, block in shards:
    value[indices[p]] = block
  return value


def local_pieces(buf) -> list:
  """NumPy copies of the buffers on this process's devices, in their order.

  Not ``buf._arrays``: every jaxlib route that makes single-device arrays out of a
  multi-device one has jaxlib's C++ import JAX's Python modules (see RUNTIME_NOTES). jaxlib's
  DLPack export reads the first addressable shard, so each device's buffer is brought to
  the front with ``reorder_shards`` (the same buffers, relabelled) and exported.
  """
  xc = client._xc()
  sharding = buf._sharding
  devices = list(sharding._device_assignment)
  local = sharding.local_positions
  pieces = [_first_shard_to_numpy(buf)]
  for p in local[1:]:
    order = list(devices)
    order[local[0]], order[p] = order[p], order[local[0]]
    swapped = pmap_sharding(order, sharding.axis, sharding.ndim, sharding.groups,
                            sharding.axis_name)
    moved = xc.reorder_shards(buf, swapped, _jax.ArrayCopySemantics.REUSE_INPUT)
    pieces.append(_first_shard_to_numpy(moved))
  return pieces


# Set by interpreters/xla.py: converts a multi-device buffer of a dtype NumPy cannot take
# through DLPack (bfloat16, float8, int4, int2...) to (buffer of an integer carrier, how to decode).
exotic_converter = None


def wait_ready(buf) -> None:
  """In a multi-process run, waits until ``buf`` is computed in 1-ms naps rather than inside
  jaxlib, so that losing a process ends the wait with a ``DistributedRuntimeError``: a
  collective whose peer died may never finish. Elsewhere it does nothing."""
  if client._distributed is None:
    return
  while not buf.is_ready():
    if client._distributed_failure is not None:
      client._distributed_failure()
    time.sleep(0.001)


def gather_to_host(buf, dtype) -> np.ndarray:
  """This process's pieces of a multi-device buffer, as one NumPy array of ``dtype``."""
  if client._distributed is not None:
    wait_ready(buf)
    try:
      return _gather_to_host(buf, dtype)
    except Exception as e:
      distributed.execution_failed(e)  # a collective lost its peer: DistributedRuntimeError
      raise
  return _gather_to_host(buf, dtype)


def _gather_to_host(buf, dtype) -> np.ndarray:
  if sharding_lib.is_partitioned(buf):
    return _gather_partitioned(buf, dtype)
  dtype = np.dtype(dtype)
  decode = None
  if dtype.kind not in _buffer_protocol_kinds or dtype in dtypes.narrow_int_dtypes:
    buf, decode = exotic_converter(buf, dtype)
  sharding = buf._sharding
  if sharding.axis is None:  # every device holds the whole value: read one
    value = _first_shard_to_numpy(buf)
  else:
    parts = local_pieces(buf)
    seen, firsts = set(), []
    for part, p in zip(parts, sharding.local_positions):
      piece = p // sharding.groups
      if piece not in seen:  # the other devices of a group hold copies
        seen.add(piece)
        firsts.append(part)
    value = np.concatenate(firsts, axis=sharding.axis)
  return decode(value) if decode is not None else value


# --- replicated executables --------------------------------------------------------------

_launch_lock = threading.Lock()
_in_flight = [None]  # outputs of the last multi-device launch


def wait_in_flight() -> None:
  """Wait until the last multi-device program launched has finished (its host callbacks
  included): ``effects_barrier``. One-device programs finish before their call returns."""
  with _launch_lock:
    _wait_for(_in_flight[0])


def _wait_for(outs) -> None:
  for out in outs or ():
    if not out.is_deleted():  # e.g. donated to a later call, or deleted by the user
      wait_ready(out)
      try:
        out.block_until_ready()
      except Exception:  # the failure is that launch's caller's to see, on its results
        pass


class Replicated:
  """A program compiled for ``len(devices)`` replicas, with a result handler per output."""

  def __init__(self, loaded, devices, out_avals, out_shardings):
    xc = client._xc()
    self.loaded = loaded
    self.devices = tuple(devices)
    self.out_avals = list(out_avals)
    self.out_shardings = list(out_shardings)
    self.handlers = [xc.array_result_handler(a, s, True, True)
                     for a, s in zip(out_avals, out_shardings)]
    execute = loaded.execute_sharded
    handlers = self.handlers

    def run(bufs):
      with _launch_lock:
        _wait_for(_in_flight[0])
        if client._distributed_failure is not None:  # a process of the run is gone
          client._distributed_failure()
        try:
          outs = execute(bufs).consume_with_handlers(handlers)
        except Exception as e:
          if client._distributed is not None:
            distributed.execution_failed(e)  # a lost peer: DistributedRuntimeError
          raise
        _in_flight[0] = outs
      return outs
    self.run = run


def encode_inspect_sharding_callback(callback) -> bytes:
  """The backend config of an ``InspectSharding`` custom call: XLA's partitioner calls
  ``callback(hlo_sharding)`` with the layout it picked for the call's operand. The encoding
  holds no reference: the caller keeps ``callback`` alive until compilation ends."""
  return _jax.encode_inspect_sharding_callback(callback)


def compile_partitioned(mlir_text: str, devices, host_callbacks=(), module=None):
  """Compile a program for XLA's SPMD partitioner (Shardy) over ``devices`` (the mesh's, in
  order); returns the loaded executable and its results' ``HloSharding``s (None when there
  is one device: every result is whole)."""
  xc = client._xc()
  options = xc.CompileOptions()
  build = options.executable_build_options
  build.num_replicas = 1
  build.num_partitions = len(devices)
  build.use_spmd_partitioning = True
  build.use_shardy_partitioner = True
  build.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]))
  device_list = xc.DeviceList(tuple(devices))
  if host_callbacks:
    loaded = callbacks.compile_with_callbacks(devices[0].client, module, device_list,
                                              options, host_callbacks)
  else:
    loaded = compilation_cache.compile_and_load(devices[0].client, mlir_text, device_list,
                                                options)
  shardings = loaded.get_output_shardings()  # None for a mesh of one device
  out = None if shardings is None else [xc.HloSharding.from_proto(s) for s in shardings]
  return client.guard_execution(loaded, mlir_text), out


def compile_replicated(mlir_text: str, devices, out_avals, out_shardings, host_callbacks=(),
                       module=None, compiler_options: dict | None = None) -> Replicated:
  """Compile a program for ``len(devices)`` replicas; a program with Python host callbacks
  passes them and its ``ir.Module`` (as ``client.compile_mlir``); each replica calls them.
  ``compiler_options``: XLA's options by name, as ``client.compile_mlir`` takes them."""
  xc = client._xc()
  options = xc.CompileOptions()
  if compiler_options:
    options.env_option_overrides = [(k, client.option_value(v))
                                    for k, v in compiler_options.items()]
  build = options.executable_build_options
  build.num_replicas = len(devices)
  build.num_partitions = 1
  build.device_assignment = xc.DeviceAssignment.create(
      np.array([[d.id] for d in devices]))
  if host_callbacks:
    loaded = callbacks.compile_with_callbacks(devices[0].client, module,
                                              xc.DeviceList(tuple(devices)), options,
                                              host_callbacks)
  else:
    loaded = compilation_cache.compile_and_load(devices[0].client, mlir_text,
                                                xc.DeviceList(tuple(devices)), options)
  return Replicated(client.guard_execution(loaded, mlir_text), devices, out_avals,
                    out_shardings)
