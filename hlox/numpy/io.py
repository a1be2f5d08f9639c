"""Moving arrays between hlox and bytes, files and other libraries: ``frombuffer``,
``fromstring``, ``fromiter``, ``fromfile``, ``load``, ``save``, ``savez``, ``from_dlpack``.

Everything here runs on the host with NumPy and then moves the result to the device with
``asarray``; it reads concrete data, so none of it can run on traced values.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.numpy import conversion
from hlox.runtime.array import array_from_dlpack

__all__ = ["frombuffer", "fromstring", "fromiter", "fromfile", "load", "save", "savez",
           "from_dlpack"]

# NumPy's writers take anything with ``__array__``, so hlox Arrays are saved as they are.
save = np.save
savez = np.savez


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  """An Array of the ``count`` items of ``dtype`` in ``buffer`` (bytes or any object with
  the buffer protocol), starting ``offset`` bytes in; ``dtype`` is canonicalized
  (``float`` is float32 unless x64 is enabled)."""
  return conversion.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """An Array parsed from the text ``string`` of numbers separated by ``sep`` (required:
  NumPy's binary mode of ``fromstring`` is deprecated; use ``frombuffer``)."""
  return conversion.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _no_like(name, like):
  if like is not None:  # NumPy's array-function dispatch: hlox makes its own Arrays only
    raise NotImplementedError(f"jnp.{name}: the 'like' argument is not supported")


def fromiter(iter, dtype, count=-1, *, like=None):  # noqa: A002  (NumPy's name)
  """An Array of the values an iterable yields (``count`` of them, or all when -1).

  JAX leaves this unimplemented, since consuming an iterator is a side effect that a
  traced function would do only once; hlox builds it on the host as NumPy does, so call it
  outside ``jit``. ``like`` (NumPy's) must be None.
  """
  _no_like("fromiter", like)
  return conversion.asarray(np.fromiter(iter, dtype=dtype, count=count))


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
  """An Array read from a binary (``sep=''``) or text file, as ``numpy.fromfile``.

  JAX leaves this unimplemented because reading a file is a side effect; hlox reads it on
  the host, so call it outside ``jit`` (a traced function would read the file only once).
  ``like`` (NumPy's) must be None.
  """
  _no_like("fromfile", like)
  return conversion.asarray(np.fromfile(file, dtype=dtype, count=count, sep=sep,
                                        offset=offset))


def load(file, *args, **kwargs):
  """``numpy.load``, returning an hlox Array for a file written by ``save``.

  NumPy cannot name bfloat16, so it saves such arrays as 2-byte voids; those come back as
  bfloat16. Archives from ``savez`` come back as NumPy's lazy ``NpzFile``, and arrays of
  dtypes hlox cannot hold (strings, objects) stay NumPy arrays, as in JAX.
  """
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == np.dtype("V2"):
      out = out.view(dtypes.bfloat16)
    try:
      out = conversion.asarray(out)
    except (TypeError, ValueError):
      pass
  return out


def from_dlpack(x, /, *, device=None, copy=None):
  """An Array from any object that implements the DLPack protocol (``__dlpack__`` and
  ``__dlpack_device__``): a NumPy array, a PyTorch or CuPy tensor, on the host or a GPU
  hlox drives. The memory is shared, not copied, where it can be (see
  ``hlox.dlpack.from_dlpack``)."""
  return array_from_dlpack(x, device=device, copy=copy)
