"""``jax.dlpack``: exchanging arrays with other libraries (NumPy, PyTorch, CuPy, ...) through
the DLPack protocol, sharing memory instead of copying it where the devices allow.

Going out needs nothing here: an ``Array`` has ``__dlpack__`` and ``__dlpack_device__``, so
``torch.from_dlpack(x)`` or ``np.from_dlpack(x)`` take it directly.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.runtime.array import array_from_dlpack

__all__ = ["from_dlpack", "is_supported_dtype", "SUPPORTED_DTYPES"]

# The dtypes DLPack can describe (as JAX's ``jax.dlpack.SUPPORTED_DTYPES``).
SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128,
    np.bool_))


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of ``dtype`` can cross DLPack."""
  return np.dtype(dtype) in SUPPORTED_DTYPES


def from_dlpack(external_array, device=None, copy: bool | None = None):
  """An Array from any object with ``__dlpack__`` and ``__dlpack_device__``.

  The result views the producer's memory when it is on a device hlox drives (the CPU, or a
  GPU through its plugin) and suitably aligned; otherwise, or with ``copy=True``, it is a
  copy (``copy=False`` then raises a ValueError). ``device`` places the result there.
  As in JAX, float64 data becomes float32 unless ``enable_x64`` is set.
  """
  return array_from_dlpack(external_array, device=device, copy=copy)
