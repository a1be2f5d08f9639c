"""The runtime's device-resident array (an instance of the public ``hlox.Array`` type), and
moving values to and from devices."""
from __future__ import annotations

import warnings

import numpy as np

from hlox.core import basearray
from hlox.core import dtypes, sharding_types
from hlox.config import config
from hlox.core.avals import ShapedArray
from hlox.core import jaxpr as jaxpr_lib
from hlox.core.tracer import Tracer
from hlox.errors import DeletedArrayError, TracerArrayConversionError
from hlox import _tree_transform as tree_util
from hlox.runtime import client, spmd, transfer_guard
from hlox.runtime import sharding as sharding_lib
from hlox.runtime import layout as layout_lib
from hlox.runtime.dlpack_capsule import capsule_shape_dtype
from jaxlib._jax import ArrayCopySemantics  # noqa: F401  (``device_put``'s copy semantics)
from jaxlib._jax import batched_block_until_ready as _batched_block_until_ready

# Libraries (hlox.numpy) see the runtime only through this module.
Sharding = sharding_lib.Sharding
SingleDeviceSharding = sharding_lib.SingleDeviceSharding


_buffer_protocol_dtypes = frozenset(
    np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                          np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                          np.float64, np.complex64, np.complex128))


def type_sharding(x):
  """How ``x`` (an Array or a tracer) is split over Explicit mesh axes, as its type says
  (``core/sharding_types.py``), or None."""
  if isinstance(x, Tracer):
    return getattr(x, "type_sharding", None)
  if type(x) is Array and x._multi is not None:
    s = x.sharding
    if isinstance(s, sharding_lib.NamedSharding):
      return sharding_types.of_named(s, x.ndim)
  return None


def _no_reader(buf, aval):
  raise NotImplementedError(f"cannot read arrays of dtype {aval.dtype} back to the host")


# Set by interpreters/xla.py: reads a buffer of an ml_dtypes type through an on-device bitcast.
host_value_reader = _no_reader


def all_devices() -> list:
  """The devices of every initialised platform, the default platform's first (for the array
  API's ``devices()``)."""
  return [d for c in client.clients().values() for d in c.devices()]


def deleted_message(aval) -> str:
  """JAX's words for using an array whose buffer was deleted or donated."""
  return (f"Array has been deleted with shape={aval.str_short(short_dtypes=False)} (deleted "
          "with .delete() or donated to a jitted function); it can no longer be used.")


def check_not_deleted(args):
  """Raises ``DeletedArrayError`` for the first deleted or donated Array among ``args``
  (called where an execution failed, to say why in JAX's words)."""
  for x in args:
    if isinstance(x, Array) and x.is_deleted():
      raise DeletedArrayError(deleted_message(x.aval)) from None


class DeletedBuffer:
  """What a deleted (or donated) Array holds instead of its jaxlib buffer.

  Passing it to an executable fails in the argument conversion, before XLA sees it (XLA
  would log an error line to stderr and raise its own text); the dispatch paths turn that
  failure into ``DeletedArrayError``. Any other use of the buffer raises it directly.
  """

  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def is_deleted(self) -> bool:
    return True

  def delete(self):
    pass

  def __getattr__(self, name):
    raise DeletedArrayError(deleted_message(self.aval))


# DLPack's device types (``DLDeviceType``) by the platform a device reports.
_DLPACK_DEVICE_TYPES = {"cpu": 1, "gpu": 2, "cuda": 2, "rocm": 10}


class ArrayImpl:
  """A device-resident array (the result of every hlox computation); the concrete class of
  the public ``hlox.Array`` type, named as JAX's (``ArrayImpl``).

  Arithmetic operators and NumPy-style methods are installed by ``hlox.numpy``.

  An array made by ``pmap`` lives on several devices: its ``_multi`` holds that buffer and
  its single-device ``_buf`` (what jit and eager operations consume) is made on first use
  by gathering the pieces onto the default device (see ``_single``).

  An array a program gave in a non-default device-local layout (``jit`` with a ``Format``,
  ``hlox.experimental.layout``) holds that buffer in ``_laid_out`` (what ``format`` reports
  and programs compiled for that layout take); its ``_buf``/``_multi`` is a row-major copy,
  what everything else reads (see ``hlox/lax/entry_layout.py``).
  """

  # ``__dict__``: users may attach attributes to Arrays, as to JAX's (created only when used).
  __slots__ = ("_buf", "aval", "_npy", "_sig", "_multi", "__weakref__", "__dict__")
  __array_priority__ = 100

  def __init__(self, buf, aval, device=None):
    self._buf = buf
    self.aval = aval
    self._npy = None
    self._multi = None
    # The jit fast path keys its cache on ``_sig``: the aval for uncommitted arrays (on the
    # default device), (aval, device) for arrays committed to a device.
    self._sig = aval if device is None else (aval, device)

  # An array in the default layout has no ``_laid_out`` (set in the instance's ``__dict__``
  # when it has one). No ``__getattr__``: NumPy probes attributes (``__array_struct__``,
  # ``__array_interface__``) before ``__array__``, and a Python ``__getattr__`` that fails
  # made ``np.asarray(x)`` seven times slower.
  _laid_out = None

  def _single(self):
    """The single-device buffer: ``_buf``; for an array spread over several devices (no
    ``_buf`` until something needs one) its value gathered onto the default device, kept."""
    try:
      return self._buf
    except AttributeError:
      multi = self._multi
      if multi is None:
        raise
      self._check_multi_alive(multi)
      buf = client.put_buffer(self._value(), self.aval, client.default_device())
      self._buf = buf
      return buf

  def _check_multi_alive(self, multi):
    if multi.is_deleted():
      raise DeletedArrayError(deleted_message(self.aval))

  # --- metadata ---
  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  @property
  def ndim(self):
    return len(self.aval.shape)

  @property
  def size(self):
    return self.aval.size

  @property
  def weak_type(self):
    return self.aval.weak_type

  @property
  def itemsize(self):
    return self.aval.dtype.itemsize

  @property
  def nbytes(self):
    return self.aval.size * self.aval.dtype.itemsize

  @property
  def committed(self) -> bool:
    """Whether the array was placed on its device(s) on purpose (``device_put`` to a device
    or sharding, or computed from such arrays): it stays there, and uncommitted operands
    of a computation with it move to it. Arrays made without a placement are not."""
    return self._sig is not self.aval or self._multi is not None

  @property
  def _committed(self) -> bool:  # JAX's name
    return self.committed

  @property
  def sharding(self):
    multi = self._multi
    if multi is not None and spmd.is_multi_device(multi):  # pmap's layout, as JAX shows it
      return multi._sharding.named()
    return sharding_lib.public((multi if multi is not None else self._buf)._sharding)

  @property
  def format(self):
    """The array's ``Format``: its device-local layout (each shard's) and its sharding."""
    buf = self._laid_out
    if buf is None:
      multi = self._multi
      buf = multi if multi is not None else self._buf
    return layout_lib.Format(layout_lib.buffer_layout(buf, self.ndim), self.sharding)

  @property
  def is_fully_addressable(self) -> bool:
    multi = self._multi
    if multi is None:
      return True
    s = multi._sharding
    return len(getattr(s, "local_positions", s._device_assignment)) == \
        len(s._device_assignment)

  @property
  def is_fully_replicated(self) -> bool:
    multi = self._multi
    if multi is None:
      return True
    return multi._sharding._to_xla_hlo_sharding(self.ndim).is_replicated()

  def devices(self) -> set:
    multi = self._multi
    if multi is not None:
      return set(multi._sharding._device_assignment)
    return {client.buffer_device(self._buf)}

  @property
  def device(self):
    """The device holding this array (its sharding when it spans several devices)."""
    multi = self._multi
    if multi is not None:
      return self.sharding
    return client.buffer_device(self._buf)

  @property
  def addressable_shards(self) -> list:
    """The pieces of this array held by this process's devices, one per device."""
    multi = self._multi
    if multi is None:
      return [Shard(self.device, (slice(None),) * self.ndim, self)]
    if self.aval.dtype.kind == "T":  # strings: cut from the host value (jaxlib's blocks
      return _string_shards(multi, self._value())  # cannot be read without JAX)
    if sharding_lib.is_partitioned(multi):
      return _shards_of_partitioned(multi, self.aval)
    return _shards_of_multi(multi, self.aval)

  @property
  def global_shards(self) -> list:
    """Every device's piece (the addressable ones, when this process holds them all)."""
    if not self.is_fully_addressable:
      raise NotImplementedError("global_shards of an array spread over several processes")
    return self.addressable_shards

  def addressable_data(self, index: int) -> "Array":
    """The block held by this process's ``index``-th device, as an Array on that device."""
    return self.addressable_shards[index].data

  # --- host access ---
  def _value(self) -> np.ndarray:
    if self._npy is None:
      multi = self._multi
      if multi is not None:
        self._check_multi_alive(multi)
        if _is_unreduced(sharding_lib.public(multi._sharding)):
          raise NotImplementedError("device_indices_map doesn't work with unreduced. Please "
                                    "file a bug at https://github.com/jax-ml/jax/issues")
        value = (np.zeros(self.aval.shape, dtypes.float0) if self.aval.dtype == dtypes.float0
                 else spmd.gather_to_host(multi, self.aval.dtype))
        value.flags.writeable = False
        self._npy = value
        return value
      if self._buf.is_deleted():
        raise DeletedArrayError(deleted_message(self.aval))
      if (config._values["transfer_guard_device_to_host"] is not None
          and client.buffer_device(self._buf).platform != "cpu"):
        # As JAX: reading a CPU buffer is no transfer, so the guard does not apply there.
        transfer_guard.check("device-to-host", self.aval, self._buf._sharding)
      if self.aval.dtype in _buffer_protocol_dtypes:
        value = client.buffer_to_numpy(self._buf)
      elif self.aval.dtype == dtypes.float0:  # on the device as booleans; zeros by definition
        value = np.zeros(self.aval.shape, dtypes.float0)
      else:  # bfloat16, float8, int4...: the buffer protocol cannot describe them
        value = host_value_reader(self._buf, self.aval)
      value.flags.writeable = False
      self._npy = value
    return self._npy

  def __array__(self, dtype=None, copy=None):
    value = self._value()
    if dtype is not None and np.dtype(dtype) != value.dtype:
      return value.astype(dtype)
    if copy:
      return value.copy()
    return value

  # --- the buffer protocol (Python 3.12+ calls this for ``memoryview(x)``) ---
  def __buffer__(self, flags: int) -> memoryview:
    """A read-only view of a one-device CPU array's memory (jaxlib's buffer exports it; it
    keeps the memory alive after ``delete()``, as in JAX). jaxlib's BufferError for dtypes
    the protocol cannot describe (bfloat16...) and for other platforms."""
    if self._multi is not None and len(self.devices()) > 1:
      raise BufferError("memoryview: the array spans several devices; take one of its "
                        "addressable_shards first")
    try:
      return memoryview(self._single())
    except (TypeError, DeletedArrayError):  # a deleted or donated buffer
      raise BufferError(deleted_message(self.aval)) from None

  # --- DLPack (zero-copy exchange with NumPy, PyTorch, CuPy, ...) ---
  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule viewing this array's device buffer (no copy unless ``copy``).
    ``stream`` is the consumer's stream on a GPU (None on the CPU)."""
    if self._multi is not None and len(self.devices()) > 1:
      raise BufferError("__dlpack__: the array spans several devices; take one of its "
                        "addressable_shards first")
    buf = self._single()
    if buf.is_deleted():
      raise DeletedArrayError(deleted_message(self.aval))
    if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
      raise BufferError(f"__dlpack__: the array is on {self.__dlpack_device__()}, not on "
                        f"the requested DLPack device {tuple(dl_device)}")
    if copy:
      buf = client.copy_buffer_to_device(buf, self.aval, client.buffer_device(buf))
    from jaxlib import _jax
    return _jax.buffer_to_dlpack_managed_tensor(buf, stream=stream)

  def __dlpack_device__(self) -> tuple:
    """(DLPack device type, device id): (1, 0) for the CPU, (2, n) for CUDA device n."""
    device = client.buffer_device(self._single())
    kind = _DLPACK_DEVICE_TYPES.get(device.platform)
    if kind is None:
      raise BufferError(f"__dlpack_device__: DLPack has no device type for {device}")
    return kind, (device.local_hardware_id if kind != 1 else 0) or 0

  @property
  def __cuda_array_interface__(self):
    """CUDA's array interface of this array's GPU buffer (CuPy, Numba read it). Arrays on
    other devices have none: the AttributeError says so and ``hasattr`` is False."""
    if self._multi is not None and len(self.devices()) > 1:
      raise AttributeError("__cuda_array_interface__ is only supported for unsharded arrays.")
    return self._single().__cuda_array_interface__

  def tolist(self):
    return self._value().tolist()

  def item(self, *args):
    return self._value().item(*args)

  def _scalar(self, kind):
    if self.aval.shape:  # as JAX (NumPy still converts size-1 arrays, with a warning)
      raise TypeError(f"Only scalar arrays can be converted to Python scalars. ({kind}() of "
                      f"an array of shape {self.shape})")
    return self._value().reshape(()).item()

  def __bool__(self):
    if self.aval.size != 1:  # NumPy's and JAX's ValueError, not a conversion TypeError
      if self.aval.size == 0:
        raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` "
                         "to check that an array is not empty.")
      raise ValueError("The truth value of an array with more than one element is ambiguous. "
                       "Use a.any() or a.all()")
    return bool(self._value().reshape(()).item())

  def __int__(self):
    return int(self._scalar("int"))

  def __float__(self):
    return float(self._scalar("float"))

  def __complex__(self):
    return complex(self._scalar("complex"))

  def __index__(self):
    if self.aval.shape or not (dtypes.is_int(self.dtype) or self.dtype == dtypes.bool_):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index. (got "
                      f"{self.aval.str_short()})")
    return int(self._value().reshape(()).item())

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object (a 0-d Array)")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d Array")
    # One transfer, then slices wrapped back as arrays (fast and matches NumPy order).
    return (device_put(row) if isinstance(row, np.ndarray) else row
            for row in (self[i] for i in range(self.shape[0])))

  def __repr__(self):
    prefix = "Array("
    if self._multi is not None and _is_unreduced(self.sharding):  # as JAX: no value to show
      return f"Array(shape={self.shape}, dtype={self.dtype.name}, sharding={self.sharding})"
    value = self._value()
    if value.dtype == dtypes.float0:
      body = f"float0[{','.join(map(str, self.shape))}]"
    elif value.size == 0:
      body = f"[], shape={self.shape}"
    else:
      body = np.array2string(value, separator=", ", prefix=prefix, suffix=",")
    dtype = f"dtype={self.dtype.name}" + (", weak_type=True" if self.aval.weak_type else "")
    # As JAX: a dtype that would overflow the last line is set apart by the prefix's width
    # (on that same line).
    last = len(body) - body.rfind("\n") + 1
    sep = " " * len(prefix) if last + len(dtype) + 2 > np.get_printoptions()["linewidth"] else " "
    return f"{prefix}{body},{sep}{dtype})"

  def __str__(self):
    if self._multi is not None and _is_unreduced(self.sharding):
      return repr(self)
    return str(self._value())

  def __format__(self, spec):
    if self.ndim == 0:
      return format(self._value().item(), spec)
    return format(self._value(), spec)

  def __hash__(self):
    raise TypeError("unhashable type: 'Array' (use a tuple or a NumPy array as a static "
                    "argument or dictionary key)")

  def __reduce__(self):
    return (_reconstruct, (self._value(), self.aval.weak_type))

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  # --- buffer lifetime ---
  def _buffers(self) -> list:
    """The device buffers that exist now (without gathering a multi-device array)."""
    bufs = [] if self._laid_out is None else [self._laid_out]
    multi = self._multi
    if multi is not None:
      bufs.append(multi)
    try:
      bufs.append(object.__getattribute__(self, "_buf"))
    except AttributeError:
      pass
    return bufs

  def block_until_ready(self):
    # The multi-device buffer, if any, holds the value (a gathered copy is made from it).
    # Kept short: it runs while the computation it waits for competes for the cores.
    multi = self._multi
    buf = multi if multi is not None else self._buf
    if client._distributed is not None:  # a lost process raises instead of hanging
      self.check_alive()
      spmd.wait_ready(buf)
    try:
      buf.block_until_ready()
    except Exception:
      self.check_alive()  # deleted or donated: JAX's error rather than jaxlib's
      raise
    return self

  def delete(self):
    for buf in self._buffers():
      buf.delete()
    self.mark_deleted()

  def mark_deleted(self):
    """After ``delete`` or a donating call: drop the dead buffer (see ``DeletedBuffer``)."""
    if self._multi is None:
      self._buf = DeletedBuffer(self.aval)
    self._npy = None

  def is_deleted(self) -> bool:
    multi = self._multi
    return (multi if multi is not None else self._buf).is_deleted()

  def copy_to_host_async(self):
    pass

  def unsafe_buffer_pointer(self):
    return self._single().unsafe_buffer_pointer()

  def on_device_size_in_bytes(self):
    return self._single().on_device_size_in_bytes()

  def check_alive(self):
    if self.is_deleted():
      raise DeletedArrayError(deleted_message(self.aval))

  _check_if_deleted = check_alive  # JAX's name

  def is_ready(self) -> bool:
    """Whether the value has been computed (``block_until_ready`` would not wait)."""
    self.check_alive()
    multi = self._multi
    return (multi if multi is not None else self._buf).is_ready()

  @property
  def _npy_value(self):
    """The host copy of the value, if one was made (None after ``delete``)."""
    return self._npy

  @property
  def _arrays(self):
    """The single-device Arrays holding this array's pieces (None once deleted)."""
    if self.is_deleted():
      return None
    if self._multi is None:
      return [self]
    return [shard.data for shard in self.addressable_shards]

  def to_device(self, device, *, stream=None):
    """The Array API standard's ``x.to_device(device)``: this array on ``device`` (a device
    or a sharding), as ``device_put`` places it."""
    if stream is not None:
      raise NotImplementedError("to_device: the `stream` argument is not supported")
    return device_put(self, device)

  @property
  def __numpy_dtype__(self):
    # NumPy >= 2.4 reads this for ``np.dtype(x)``; JAX 0.10.2 deprecates that conversion.
    warnings.warn("Implicit conversion of an array to a dtype is deprecated; rather than "
                  "dtype=arr use dtype=arr.dtype. In the future this will result in an "
                  "error.", DeprecationWarning, stacklevel=2)
    return self.aval.dtype


# hlox's own name for it (what the rest of the package imports).
Array = ArrayImpl


def _reconstruct(value, weak_type):
  return device_put(value, weak_type=weak_type)


class Shard:
  """One device's piece of an array: ``device``, ``index`` (slices into the whole array),
  ``replica_id`` (which copy of that piece it is: 0 for the first device holding it, 1 for
  the next...) and ``data`` (an Array on that device)."""

  __slots__ = ("device", "index", "data", "replica_id")

  def __init__(self, device, index, data, replica_id: int = 0):
    self.device = device
    self.index = index
    self.data = data
    self.replica_id = replica_id

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, "
            f"replica_id={self.replica_id}, data={self.data!r})")


def _number_replicas(shards: list) -> list:
  """Sets each shard's ``replica_id``: how many shards before it hold the same piece."""
  seen = {}
  for shard in shards:
    key = tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in shard.index)
    shard.replica_id = seen.get(key, 0)
    seen[key] = shard.replica_id + 1
  return shards


def wrap_multi(buf, aval) -> Array:
  """An Array for a buffer spread over several devices (see ``hlox.runtime.spmd``)."""
  x = Array.__new__(Array)
  x.aval = aval
  x._npy = None
  x._sig = aval
  x._multi = buf
  return x


def wrap_partitioned(buf, aval) -> Array:
  """An Array for a buffer laid out by a sharding (``hlox.runtime.sharding``): jit and
  eager operations keep it where it is (its signature carries the public sharding)."""
  x = wrap_multi(buf, aval)
  x._sig = (aval, buf._sharding._public)
  return x


def copy_array(x: Array) -> Array:
  """A copy of ``x`` in new buffers, laid out as ``x`` is."""
  value = x._value()
  if x._multi is not None and sharding_lib.is_partitioned(x._multi):
    internal = x._multi._sharding
    return wrap_partitioned(spmd.put_partitioned(np.asarray(value), x.aval, internal), x.aval)
  if x._multi is not None:
    return wrap_multi(spmd.put_sharded(value, x.aval, x._multi._sharding), x.aval)
  device = client.buffer_device(x._buf)
  return Array(client.put_buffer(value, x.aval, device), x.aval, x._sig[1] if type(
      x._sig) is tuple else None)


def put_with_sharding(x, sharding, what: str = "One of device_put args") -> Array:
  """``x`` (an Array or host value) laid out by ``sharding`` (a multi-device one)."""
  source = None
  if isinstance(x, Array):
    if x._multi is not None and x._multi._sharding is sharding_lib.internal(sharding, x.ndim):
      return x
    source = x.sharding
    if _is_unreduced(source):
      raise NotImplementedError("device_put: hlox cannot re-lay-out an array with unreduced "
                                f"axes ({source})")
    with transfer_guard.explicit():
      value = x._value()
    aval = x.aval
  else:
    array = device_put(x)  # dtype rules and errors of a plain put
    value, aval = array._value(), array.aval
  if isinstance(sharding, sharding_lib.NamedSharding):
    sharding.check_shape(aval.shape, what)
  if aval.dtype.kind == "T":
    _check_string_placement(sharding)
  internal = sharding_lib.internal(sharding, aval.ndim)
  if config._values["transfer_guard_host_to_device"] is not None:
    transfer_guard.check("host-to-device", aval, internal)
  if _is_unreduced(sharding):
    if internal._hlo.is_replicated():  # JAX fails here too (for host and replicated values)
      raise NotImplementedError("device_indices_map doesn't work with unreduced. Please file "
                                "a bug at https://github.com/jax-ml/jax/issues")
    blocks = _unreduced_blocks(np.asarray(value), source, sharding, internal)
    return wrap_partitioned(spmd.put_blocks(blocks, aval, internal), aval)
  out = wrap_partitioned(spmd.put_partitioned(np.asarray(value), aval, internal), aval)
  if aval.dtype.kind == "T":
    out._npy = value
  return out


def _is_unreduced(sharding) -> bool:
  return isinstance(sharding, sharding_lib.NamedSharding) and bool(sharding.spec.unreduced)


def _unreduced_blocks(value, source, sharding, internal) -> list:
  """This process's blocks of ``value`` laid out by ``sharding``, whose spec has unreduced
  axes: the devices along those axes hold pieces that sum to their block, as JAX's
  device_put makes them. An unreduced axis that split a dimension of the source layout
  (``source``, when the target only drops it from that dimension) leaves each device its
  own piece (zeros elsewhere: nothing moves); over any other unreduced axis the device at
  index 0 holds the whole block and the others zeros."""
  mesh, spec = sharding.mesh, sharding.spec
  kept = set()  # unreduced axes whose pieces stay where the source had them
  if isinstance(source, sharding_lib.NamedSharding) and source.mesh == mesh:
    for d in range(value.ndim):
      axes = source.spec.axes_of(d)
      rest = tuple(a for a in axes if a not in spec.unreduced)
      if rest == spec.axes_of(d):
        kept.update(a for a in axes if a in spec.unreduced)
  owner_axes = [mesh.axis_names.index(a) for a in spec.unreduced if a not in kept]
  held = source.devices_indices_map(value.shape) if kept else None
  indices = sharding_lib.indices_of(internal._hlo, value.shape, len(internal._devs))
  blocks = []
  for p, device in zip(internal.local_positions, internal.local_devices):
    coords = np.unravel_index(p, mesh.devices.shape)
    if any(coords[a] for a in owner_axes):
      blocks.append(np.zeros_like(value[indices[p]]))
      continue
    if held is None:
      blocks.append(value[indices[p]])
      continue
    piece = np.zeros_like(value)
    piece[held[device]] = value[held[device]]
    blocks.append(piece[indices[p]])
  return blocks


# --- putting values on devices -----------------------------------------------------------

def needs_moves(sigs, device) -> bool:
  """Whether a program for ``device`` with arguments of signatures ``sigs`` gets
  uncommitted arguments (on the default device) that ``moved_buffers`` must copy to it."""
  return (device is not None and device != client.default_device()
          and any(type(s) is not tuple for s in sigs))


def moved_buffers(args, device) -> list:
  """The buffers of the Arrays ``args`` for a program that runs on ``device``: an
  uncommitted Array living elsewhere (on the default device) is copied there, as JAX moves
  uncommitted values to where committed ones are."""
  bufs = []
  for x in args:
    if x._sig is x.aval and x._multi is None and client.buffer_device(x._buf) != device:
      x = device_put(x, device)
    bufs.append(x._buf if x._multi is None else x._single())
  return bufs


def single_buffers(args) -> list:
  """The single-device buffers of the Arrays ``args`` (an array spread over several devices
  gathered onto the default device, once)."""
  return [x._buf if x._multi is None else x._single() for x in args]


def committed_device(x):
  """The device a single-device Array ``x`` is committed to (where values made "like" it
  go too), else None."""
  if type(x) is Array and x._sig is not x.aval and x._multi is None:
    return x._sig[1]
  return None


# DLPack device types (``__dlpack_device__()[0]``) -> the platform holding such memory.
_DLPACK_PLATFORMS = {1: "cpu", 2: "gpu", 3: "gpu", 10: "gpu", 11: "gpu"}


def array_from_dlpack(external, device=None, copy=None) -> Array:
  """An Array viewing the memory of ``external`` (anything with ``__dlpack__`` and
  ``__dlpack_device__``: a NumPy array, a PyTorch or CuPy tensor, another Array) without a
  copy where it can: memory on a device hlox drives, suitably aligned. ``copy=True`` always
  copies, ``copy=False`` raises where a copy would be needed. ``device`` moves the result
  (a copy, unless it is already there)."""
  if not hasattr(external, "__dlpack__") or not hasattr(external, "__dlpack_device__"):
    raise TypeError("The array passed to from_dlpack must have __dlpack__ and "
                    "__dlpack_device__ methods.")
  kind, device_id = external.__dlpack_device__()
  platform = _DLPACK_PLATFORMS.get(int(kind))
  if platform is None:
    raise TypeError(f"Array passed to from_dlpack is on unsupported device type "
                    f"(DLDeviceType: {kind}, array: {type(external).__name__})")
  source = client.client_of(platform).device_from_local_hardware_id(int(device_id))
  if device is not None and device != source and copy is False:
    raise ValueError(f"Specified device={device!r} which requires a copy since the source "
                     f"device is {source!r}, however copy=False. Set copy=True or copy=None.")
  stream = None
  if int(kind) in (2, 10):  # the consumer's stream, which the producer waits for
    try:
      stream = source.get_stream_for_external_ready_events()
    except Exception:  # platforms without external streams
      stream = None
  if int(kind) == 1:
    out = _from_host_dlpack(external, source, copy)
    if out is not None:
      return out if device is None or device == source else device_put(out, device)
  capsule = external.__dlpack__(stream=stream) if stream is not None else external.__dlpack__()
  shape, dtype = capsule_shape_dtype(capsule)  # (the buffer made from it knows neither without JAX)
  from jaxlib import _jax
  try:
    # (``copy=True`` is done below: jaxlib's CPU path would still share the memory.)
    buf = _jax.dlpack_managed_tensor_to_buffer(capsule, source, stream, copy and None,
                                               int(kind))
  except Exception as err:
    if "is not aligned to" in str(err) and copy is False:
      detail = str(err)[str(err).index("is not aligned to"):].strip().rstrip(".")
      raise ValueError(f"Specified input which requires a copy in from_dlpack: the source "
                       f"buffer {detail} (XLA needs that to share it), but copy=False. "
                       "Set copy=True or copy=None.") from None
    if "is not aligned to" not in str(err):
      raise
    capsule = external.__dlpack__()  # a capsule is consumed once: ask again, then copy
    buf = _jax.dlpack_managed_tensor_to_buffer(capsule, source, stream, True, int(kind))
  aval = ShapedArray(shape, dtype)
  # (hlox's own sharding on the buffer: jaxlib's bare one lacks what hlox reads off it)
  buf = buf._rewrap_with_aval_and_sharding(aval, client.single_device_sharding(source))
  committed = source if source != client.default_device() else None
  out = Array(buf, aval, committed)
  canonical = dtypes.canonicalize_dtype(aval.dtype)
  if canonical != aval.dtype:  # float64 without x64, as JAX's asarray would make it
    out = device_put(np.asarray(out).astype(canonical), committed)
  elif copy:
    out = copy_array(out)
  if device is not None and device != source:
    out = device_put(out, device)
  return out


# XLA:CPU shares host memory only at this alignment (else it copies).
_XLA_CPU_ALIGNMENT = 64


def _from_host_dlpack(external, source, copy) -> Array | None:
  """``from_dlpack`` of host memory: NumPy's DLPack import and a zero-copy transfer. (jaxlib's
  own DLPack import makes its C++ side import JAX, for the buffer's aval, once per process;
  the package must not cause that.) None where NumPy cannot take the tensor (bfloat16)."""
  try:
    view = np.from_dlpack(external)
  except (BufferError, TypeError, ValueError, RuntimeError):
    return None
  shareable = view.flags.c_contiguous and view.ctypes.data % _XLA_CPU_ALIGNMENT == 0
  if not shareable and view.size and copy is False:
    why = ("is not aligned to 64 bytes" if view.flags.c_contiguous else
           "is not in row-major order")
    raise ValueError(f"Specified input which requires a copy in from_dlpack: the source "
                     f"buffer {why} (XLA needs that to share it), but copy=False. "
                     "Set copy=True or copy=None.")
  committed = source if source != client.default_device() else None
  canonical = dtypes.canonicalize_dtype(view.dtype)
  if canonical != view.dtype or copy:  # (float64 without x64 becomes float32, as in JAX)
    return device_put(view.astype(canonical), committed)
  return Array(client.share_host_buffer(view, ShapedArray(view.shape, view.dtype), source),
               ShapedArray(view.shape, view.dtype), committed)


def wrap_buffer(buf, aval, device=None) -> Array:
  return Array(buf, aval, device)


def device_put(x, device=None, *, weak_type=None) -> Array:
  """Move ``x`` (Array, NumPy array, Python scalar or nested list) to ``device``.

  Without ``device``, values go to the default device and Arrays stay where they are.
  64-bit values are converted to 32-bit unless x64 is enabled.
  """
  if isinstance(x, Tracer):
    raise TracerArrayConversionError(x)
  if isinstance(device, sharding_lib.Sharding) and not isinstance(
      device, sharding_lib.SingleDeviceSharding):
    if device.num_devices > 1 or isinstance(device, sharding_lib.NamedSharding):
      return put_with_sharding(x, device)
    device = device._device_assignment[0]
  if device is not None and not hasattr(device, "platform"):
    sharding_device = getattr(device, "_hlox_device", None)
    if sharding_device is None:
      raise TypeError(f"device_put: {device!r} is not a device")
    device = sharding_device
  # A device named here commits the result to it (its signature carries the device, so
  # computations on it run there and their results are committed too), as in JAX.
  if isinstance(x, Array):
    x.check_alive()
    if device is None:
      return x
    if device == x.device:
      # The same buffer; an uncommitted Array gets a committed twin.
      return x if x._sig is not x.aval or x._multi is not None else Array(x._buf, x.aval,
                                                                          device)
    if x.aval.dtype.kind == "T":
      return _put_strings(x._value(), device)
    if x._multi is not None or x.aval.dtype not in _buffer_protocol_dtypes:
      # bfloat16, float8, int4...: the buffer protocol cannot describe them, so the copy goes
      # through the host value (read as hlox reads it).
      return Array(client.put_buffer(x._value(), x.aval, device), x.aval, device)
    buf = client.copy_buffer_to_device(x._buf, x.aval, device)
    return Array(buf, x.aval, device)
  if type(x) in (int, float, complex, bool):
    dtype = dtypes.python_scalar_dtype(x)
    value = np.asarray(x, dtype=dtype)
    weak = type(x) is not bool if weak_type is None else weak_type
  else:
    if isinstance(x, (list, tuple)):
      x = _nested_sequence_to_numpy(x)
    elif type(x) is not np.ndarray and isinstance(x, np.ma.MaskedArray):
      raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                       "functions. Use arr.filled() to convert the value to a standard numpy "
                       "array.")
    value = np.asarray(x)
    if value.dtype == object:
      raise TypeError(f"device_put: cannot convert a value of type {type(x).__name__} with "
                      "object elements to an array")
    if value.dtype.kind in "SUMmT":  # strings, bytes, dates: no XLA element type (bfloat16
      # and the other ml_dtypes are kind "V")
      if value.dtype.kind == "T":  # NumPy 2's StringDType: jaxlib keeps it on CPU devices
        return _put_strings(value, device)
      raise TypeError(f"device_put: hlox arrays hold numbers and booleans only, got a "
                      f"{type(x).__name__} of dtype {value.dtype} (shape {value.shape})")
    dtype = dtypes.canonicalize_dtype(value.dtype)
    if value.dtype != dtype:
      value = value.astype(dtype)
    weak = bool(weak_type)
  aval = ShapedArray(value.shape, dtype, weak)
  target = device if device is not None else client.default_device()
  buf = client.put_buffer(value, aval, target)
  return Array(buf, aval, device)


def _check_string_placement(where):
  """String arrays live only on CPU devices (jaxlib keeps them as host strings); JAX's
  TypeError for another placement."""
  devices = ([where] if hasattr(where, "platform") else where._device_assignment
             if where is not None else [client.default_device()])
  if any(d.platform != "cpu" for d in devices):
    raise TypeError("String arrays can only be sharded to CPU devices. Received unsupported "
                    f"device or sharding: {where}")


def _put_strings(value: np.ndarray, device) -> Array:
  """A StringDType array on ``device`` (a CPU device, or None for the default one). jaxlib
  holds it as strings, but reading it back through jaxlib would import JAX: the Array keeps
  its host value, which is immutable as every Array is."""
  _check_string_placement(device)
  value = value.copy()
  value.flags.writeable = False
  aval = ShapedArray(value.shape, value.dtype)
  target = device if device is not None else client.default_device()
  out = Array(client.put_buffer(value, aval, target), aval, device)
  out._npy = value
  return out


def put_exact(value: np.ndarray, weak_type: bool = False) -> Array:
  """``value`` on the default device with its own dtype: a 64-bit dtype is kept even with
  x64 off (as for values made inside ``enable_x64()``), where ``device_put`` would narrow it.
  For values that must match an existing 64-bit type (a gradient's seed)."""
  value = np.asarray(value)
  aval = ShapedArray(value.shape, value.dtype, weak_type)
  target = client.default_device()
  return Array(client.put_buffer(value, aval, target, keep_64bit=True), aval, None)


def put_requested(value: np.ndarray, weak_type: bool = False) -> Array:
  """``value``, converted on the host to a dtype the user asked for, on the default device:
  as ``device_put``, except that a 64-bit dtype (one ``explicit_x64_dtypes='allow'`` kept
  with x64 off) stays 64-bit."""
  if dtypes.canonicalize_dtype(value.dtype) != value.dtype:
    return put_exact(value, weak_type)
  return device_put(value, weak_type=weak_type)


def _exact_scalar(value, aval) -> Array:
  return put_exact(np.asarray(value, aval.dtype), weak_type=aval.weak_type)


jaxpr_lib.register_exact_scalar(_exact_scalar)
jaxpr_lib.device_array_types.add(ArrayImpl)


# Device buffers of recently used Python and NumPy scalars, for the arguments an operation
# converts internally (``x * 1.5`` eagerly, a jitted function called with a Python float): a
# transfer costs far more than the lookup, and a constant in a loop is the same value every
# time. Keyed on the scalar's type and value (``0.0`` and ``-0.0`` apart, and ``1``, ``1.0``
# and ``True``; NaN never matches), x64 mode and device. Only transient Arrays wrap these
# buffers (they never reach the user), and a buffer found deleted is replaced.
_scalar_buffers: dict = {}
_SCALAR_BUFFERS_MAX = 256


_COMPLEX_TYPES = frozenset((complex, np.complex64, np.complex128))


def _scalar_key(x, device):
  t = type(x)
  if t in _COMPLEX_TYPES or (x == 0 and t is not int and t is not bool):
    # 0.0 == -0.0 (and complex parts likewise): tell them apart by their text
    return (t, str(x), config._values["enable_x64"], device)
  return (t, x, config._values["enable_x64"], device)


# The types ``scalar_argument`` takes: Python scalars and NumPy scalars of array dtypes.
SCALAR_TYPES = frozenset((bool, int, float, complex, np.bool_, np.int8, np.int16, np.int32,
                          np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
                          np.float32, np.float64, np.complex64, np.complex128))


def scalar_argument(x, device=None) -> Array:
  """A transient Array for the scalar ``x`` (a type in ``SCALAR_TYPES``), for passing
  straight to an executable; never hand it to the user (its buffer is shared)."""
  key = _scalar_key(x, device)
  hit = _scalar_buffers.get(key)
  if hit is not None and not hit._buf.is_deleted():
    return hit
  array = device_put(x, device)
  if len(_scalar_buffers) >= _SCALAR_BUFFERS_MAX:
    _scalar_buffers.clear()  # a loop over many values: start again rather than grow
  _scalar_buffers[key] = array
  return array


def _nested_sequence_to_numpy(x):
  leaves = []

  def walk(v):
    if isinstance(v, (list, tuple)):
      for item in v:
        walk(item)
    else:
      leaves.append(v)
  walk(x)
  if any(isinstance(v, Array) for v in leaves):
    return np.asarray([_nested_sequence_to_numpy(v) if isinstance(v, (list, tuple))
                       else np.asarray(v) for v in x])
  if leaves and all(type(v) in (int, float, complex, bool) for v in leaves):
    dtype = dtypes.result_type(*leaves)
    return np.asarray(x, dtype=dtype)
  return np.asarray(x)


def device_get(tree):
  """Copy every Array in a pytree to the host, as NumPy arrays.

  The transfer is explicit, so it is allowed under ``transfer_guard("disallow")``. Leaves that
  are not Arrays are returned unchanged.

  Args:
    tree: a pytree of Arrays and other values.

  Returns:
    A pytree of the same structure with each Array replaced by a ``numpy.ndarray``.

  Examples:
    >>> hlox.device_get({"a": jnp.arange(2), "b": 1.5})
    {'a': array([0, 1], dtype=int32), 'b': 1.5}
  """
  with transfer_guard.explicit():
    return tree_util.tree_map(lambda x: x._value() if isinstance(x, Array) else x, tree)


def block_until_ready(tree):
  """Wait until every Array in a pytree has been computed.

  hlox dispatches computations asynchronously: an Array may be returned before its values
  exist. This blocks until they do (useful for timing), raising any error the computation hit.
  Leaves that are not Arrays are ignored; a deleted (or donated) Array raises
  ``DeletedArrayError`` (a RuntimeError).

  Args:
    tree: a pytree whose Array leaves to wait for.

  Returns:
    ``tree`` itself.

  Examples:
    >>> hlox.block_until_ready((jnp.ones(2), 1))
    (Array([1., 1.], dtype=float32), 1)
  """
  arrays = [leaf for leaf in tree_util.tree_leaves(tree) if isinstance(leaf, Array)]
  if client._distributed is None:
    # One wait for them all (jaxlib's batched wait, as JAX's): a leaf's own wait costs a
    # Python call each, and they run while the computations compete for the cores.
    try:
      _batched_block_until_ready([a._multi if a._multi is not None else a._buf
                                  for a in arrays])
      return tree
    except Exception:  # a deleted or donated array: its own wait gives JAX's error
      pass
  for leaf in arrays:
    leaf.block_until_ready()
  return tree


def _shards_of_multi(buf, aval) -> list:
  """``Shard``s (device, index, a copy as a single-device Array) of this process's pieces."""
  sharding = buf._sharding
  whole = spmd.gather_to_host(buf, aval.dtype)
  shards = []
  for p, device in zip(sharding.local_positions, sharding.local_devices):
    index = [slice(None)] * aval.ndim
    if sharding.axis is not None:
      piece = sharding.local_pieces.index(p // sharding.groups)
      index[sharding.axis] = slice(piece, piece + 1)
    index = tuple(index)
    shards.append(Shard(device, index, device_put(whole[index], device)))
  return _number_replicas(shards)


def _string_shards(buf, value) -> list:
  sharding = buf._sharding
  indices = sharding_lib.indices_of(sharding._hlo, value.shape, len(sharding._devs))
  return _number_replicas([Shard(sharding._devs[p], indices[p],
                                 _put_strings(value[indices[p]], sharding._devs[p]))
                           for p in sharding.local_positions])


def _shards_of_partitioned(buf, aval) -> list:
  sharding = buf._sharding
  indices = sharding_lib.indices_of(sharding._hlo, aval.shape, len(sharding._devs))
  shards = []
  with transfer_guard.explicit():
    for p, block in spmd.shard_values(buf, aval.dtype):
      device = sharding._devs[p]
      shards.append(Shard(device, indices[p], device_put(block, device)))
  return _number_replicas(shards)


# Device arrays are instances of the public ``hlox.Array`` type (tracers are, too).
basearray.Array.register(Array)


sharding_types.value_split = type_sharding
