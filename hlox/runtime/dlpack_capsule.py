"""Reading the shape and dtype out of a DLPack capsule, before jaxlib consumes it.

jaxlib's ``dlpack_managed_tensor_to_buffer`` returns a buffer whose Python-side shape and
dtype are filled in by JAX (it asks ``jax.core`` for an aval); without JAX they are absent.
So the capsule's own ``DLTensor`` header (a stable C ABI: DLPack's ``dlpack.h``) is read here.
"""
from __future__ import annotations

import ctypes

import numpy as np

from hlox.core import dtypes


class _DLDevice(ctypes.Structure):
  _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
  _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
  _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
              ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
              ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLPackVersion(ctypes.Structure):
  _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
  # (the unversioned DLManagedTensor starts with its DLTensor, so it needs no struct here)
  _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
              ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


# DLDataTypeCode -> NumPy kind letter (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool)
_CODES = {0: "i", 1: "u", 2: "f", 4: "bfloat", 5: "c", 6: "b"}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]


def _np_dtype(code: int, bits: int, lanes: int) -> np.dtype:
  kind = _CODES.get(code)
  if kind is None or lanes != 1:
    raise TypeError(f"from_dlpack: unsupported DLPack dtype (code={code}, bits={bits}, "
                    f"lanes={lanes})")
  if kind == "bfloat" and bits == 16:
    return np.dtype(dtypes.bfloat16)
  if kind == "b" and bits == 8:
    return np.dtype(np.bool_)
  try:
    return np.dtype(f"{kind}{bits // 8}")
  except TypeError:
    raise TypeError(f"from_dlpack: unsupported DLPack dtype (code={code}, bits={bits})") from None


def capsule_shape_dtype(capsule) -> tuple[tuple[int, ...], np.dtype]:
  """The shape and NumPy dtype of the tensor a fresh (unconsumed) DLPack capsule holds."""
  name = _get_name(capsule)
  pointer = _get_pointer(capsule, name)
  if name == b"dltensor_versioned":
    tensor = _DLManagedTensorVersioned.from_address(pointer).dl_tensor
  elif name == b"dltensor":
    tensor = _DLTensor.from_address(pointer)
  else:
    raise TypeError(f"from_dlpack: __dlpack__() returned a capsule named {name!r}, "
                    "not a DLPack tensor")
  shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
  return shape, _np_dtype(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
