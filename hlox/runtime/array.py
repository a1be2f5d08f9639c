"""``hlox.Array``: an array living on a device, and moving values to and from devices."""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.tracer import Tracer
from hlox.errors import DeletedArrayError, TracerArrayConversionError
from hlox.runtime import client


_buffer_protocol_dtypes = frozenset(
    np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                          np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                          np.float64, np.complex64, np.complex128))


def _no_reader(buf, aval):
  raise NotImplementedError(f"cannot read arrays of dtype {aval.dtype} back to the host")


# Set by interpreters/xla.py: reads a buffer of an ml_dtypes type through an on-device bitcast.
host_value_reader = _no_reader


class Array:
  """A device-resident array (the result of every hlox computation).

  Arithmetic operators and NumPy-style methods are installed by ``hlox.numpy``.
  """

  __slots__ = ("_buf", "aval", "_npy", "_sig", "__weakref__")
  __array_priority__ = 100

  def __init__(self, buf, aval, device=None):
    self._buf = buf
    self.aval = aval
    self._npy = None
    # The jit fast path keys its cache on ``_sig``: the aval for arrays on the default
    # device, (aval, device) otherwise.
    self._sig = aval if device is None else (aval, device)

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
  def sharding(self):
    return self._buf._sharding

  def devices(self) -> set:
    return {client.buffer_device(self._buf)}

  @property
  def device(self):
    return client.buffer_device(self._buf)

  # --- host access ---
  def _value(self) -> np.ndarray:
    if self._npy is None:
      if self._buf.is_deleted():
        raise DeletedArrayError(
            f"Array {self.aval.str_short()} has been deleted (or donated to a jitted "
            "function); it can no longer be used.")
      if self.aval.dtype in _buffer_protocol_dtypes:
        value = np.asarray(self._buf)
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

  def tolist(self):
    return self._value().tolist()

  def item(self, *args):
    return self._value().item(*args)

  def _scalar(self, kind):
    if self.aval.size != 1:
      raise TypeError(f"only size-1 arrays can be converted to Python scalars ({kind}() of "
                      f"an array of shape {self.shape})")
    return self._value().reshape(()).item()

  def __bool__(self):
    return bool(self._scalar("bool"))

  def __int__(self):
    return int(self._scalar("int"))

  def __float__(self):
    return float(self._scalar("float"))

  def __complex__(self):
    return complex(self._scalar("complex"))

  def __index__(self):
    if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool_:
      raise TypeError(f"only integer scalar arrays can be converted to an index, got "
                      f"{self.aval.str_short()}")
    return int(self._scalar("index"))

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
    value = self._value()
    if value.dtype == dtypes.float0:
      body = f"float0[{','.join(map(str, self.shape))}]"
    elif value.size == 0 and value.ndim > 1:
      body = f"[], shape={self.shape}"
    else:
      body = np.array2string(value, separator=", ", prefix=prefix)
    weak = ", weak_type=True" if self.aval.weak_type else ""
    return f"{prefix}{body}, dtype={self.dtype.name}{weak})"

  def __str__(self):
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
  def block_until_ready(self):
    self._buf.block_until_ready()
    return self

  def delete(self):
    self._buf.delete()
    self._npy = None

  def is_deleted(self) -> bool:
    return self._buf.is_deleted()

  def copy_to_host_async(self):
    pass

  def unsafe_buffer_pointer(self):
    return self._buf.unsafe_buffer_pointer()

  def on_device_size_in_bytes(self):
    return self._buf.on_device_size_in_bytes()

  def check_alive(self):
    if self._buf.is_deleted():
      raise DeletedArrayError(
          f"Array {self.aval.str_short()} has been deleted (or donated to a jitted "
          "function); it can no longer be used.")


def _reconstruct(value, weak_type):
  return device_put(value, weak_type=weak_type)


# --- putting values on devices -----------------------------------------------------------

def _device_key(device):
  return None if device is None or device == client.default_device() else device


def wrap_buffer(buf, aval, device=None) -> Array:
  return Array(buf, aval, device)


def device_put(x, device=None, *, weak_type=None) -> Array:
  """Move ``x`` (Array, NumPy array, Python scalar or nested list) to ``device``.

  Without ``device``, values go to the default device and Arrays stay where they are.
  64-bit values are converted to 32-bit unless x64 is enabled.
  """
  if isinstance(x, Tracer):
    raise TracerArrayConversionError(x)
  if device is not None and not hasattr(device, "platform"):
    sharding_device = getattr(device, "_hlox_device", None)
    if sharding_device is None:
      raise TypeError(f"device_put: {device!r} is not a device")
    device = sharding_device
  if isinstance(x, Array):
    x.check_alive()
    if device is None or device == x.device:
      return x
    buf = client.copy_buffer_to_device(x._buf, x.aval, device)
    return Array(buf, x.aval, _device_key(device))
  if type(x) in (int, float, complex, bool):
    dtype = dtypes.python_scalar_dtype(x)
    value = np.asarray(x, dtype=dtype)
    weak = type(x) is not bool if weak_type is None else weak_type
  else:
    if isinstance(x, (list, tuple)):
      x = _nested_sequence_to_numpy(x)
    value = np.asarray(x)
    if value.dtype == object:
      raise TypeError(f"device_put: cannot convert a value of type {type(x).__name__} with "
                      "object elements to an array")
    dtype = dtypes.canonicalize_dtype(value.dtype)
    if value.dtype != dtype:
      value = value.astype(dtype)
    weak = bool(weak_type)
  aval = ShapedArray(value.shape, dtype, weak)
  target = device if device is not None else client.default_device()
  buf = client.put_buffer(value, aval, target)
  return Array(buf, aval, _device_key(device))


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
  """Copy every Array in ``tree`` back to NumPy (other leaves are returned unchanged)."""
  from hlox import tree_util
  return tree_util.tree_map(lambda x: x._value() if isinstance(x, Array) else x, tree)


def block_until_ready(tree):
  """Wait for every Array in ``tree`` to be computed; returns ``tree``."""
  from hlox import tree_util
  for leaf in tree_util.tree_leaves(tree):
    if isinstance(leaf, Array):
      leaf.block_until_ready()
  return tree
