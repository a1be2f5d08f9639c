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
  """An array of the items of ``dtype`` stored in ``buffer``.

  ``dtype`` is canonicalized (``float`` means float32 unless x64 is enabled).

  Args:
    buffer: ``bytes`` or any object with the buffer protocol.
    dtype: the dtype of the items.
    count: the number of items to read (-1: all that remain).
    offset: the number of bytes to skip first.

  Returns:
    A 1-d array of ``count`` (or all) items.

  Examples:
    >>> jnp.frombuffer(bytes([1, 2, 3]), dtype=jnp.uint8)
    Array([1, 2, 3], dtype=uint8)
    >>> jnp.frombuffer(np.array([1., 2.], np.float32).tobytes(), dtype=jnp.float32, count=1)
    Array([1.], dtype=float32)
  """
  return conversion.asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """An array parsed from a text of numbers.

  NumPy's binary mode of ``fromstring`` is deprecated, so ``sep`` is required; use
  ``frombuffer`` for binary data.

  Args:
    string: the text.
    dtype: the dtype of the values (canonicalized).
    count: the number of values to read (-1: all).
    sep: keyword-only separator between the numbers (whitespace around it is ignored).

  Returns:
    A 1-d array.

  Examples:
    >>> jnp.fromstring('1, 2, 3', dtype=int, sep=',')
    Array([1, 2, 3], dtype=int32)
  """
  return conversion.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def _no_like(name, like):
  if like is not None:  # NumPy's array-function dispatch: hlox makes its own Arrays only
    raise NotImplementedError(f"jnp.{name}: the 'like' argument is not supported")


def fromiter(iter, dtype, count=-1, *, like=None):  # noqa: A002  (NumPy's name)
  """An array of the values an iterable yields.

  JAX leaves this unimplemented, since consuming an iterator is a side effect that a traced
  function would do only once; hlox builds it on the host as NumPy does, so call it outside
  ``jit``.

  Args:
    iter: an iterable of scalars.
    dtype: the dtype of the result (canonicalized).
    count: the number of values to take (-1: all).
    like: keyword-only; NumPy's array-protocol hook, must be None.

  Returns:
    A 1-d array.

  Examples:
    >>> jnp.fromiter((i * i for i in range(4)), dtype=int)
    Array([0, 1, 4, 9], dtype=int32)
  """
  _no_like("fromiter", like)
  return conversion.asarray(np.fromiter(iter, dtype=dtype, count=count))


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
  """An array read from a binary or text file, as ``numpy.fromfile`` reads it.

  JAX leaves this unimplemented because reading a file is a side effect; hlox reads it on the
  host, so call it outside ``jit`` (a traced function would read the file only once).

  Args:
    file: a path or an open file object.
    dtype: the dtype of the items (canonicalized).
    count: the number of items to read (-1: all).
    sep: '' for binary data, otherwise the separator of a text file.
    offset: the number of bytes to skip first (binary files only).
    like: keyword-only; NumPy's array-protocol hook, must be None.

  Returns:
    A 1-d array.

  Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.bin')
    >>> np.array([1, 2, 3], np.int32).tofile(path)
    >>> jnp.fromfile(path, dtype=jnp.int32)
    Array([1, 2, 3], dtype=int32)
  """
  _no_like("fromfile", like)
  return conversion.asarray(np.fromfile(file, dtype=dtype, count=count, sep=sep,
                                        offset=offset))


def load(file, *args, **kwargs):
  """Load arrays saved by ``numpy.save`` (or ``hlox.numpy.save``), returning hlox arrays.

  NumPy cannot name bfloat16, so it saves such arrays as 2-byte voids; those come back as
  bfloat16. Archives from ``savez`` come back as NumPy's lazy ``NpzFile``, and arrays of
  dtypes hlox cannot hold (strings, objects) stay NumPy arrays, as in JAX.

  Args:
    file: a path or an open file object.
    *args: further positional arguments of ``numpy.load``.
    **kwargs: keyword arguments of ``numpy.load`` (``mmap_mode``, ``allow_pickle``, ...).

  Returns:
    An hlox array for a ``.npy`` file; otherwise what ``numpy.load`` returns.

  Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), 'x.npy')
    >>> np.save(path, np.array([1., 2.], np.float32))
    >>> jnp.load(path)
    Array([1., 2.], dtype=float32)
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
  """An array from an object that implements the DLPack protocol.

  The object must have ``__dlpack__`` and ``__dlpack_device__``: a NumPy array, a PyTorch or
  CuPy tensor, on the host or a device hlox drives. The memory is shared, not copied, where
  it can be (see ``hlox.dlpack.from_dlpack``).

  Args:
    x: the DLPack-capable object.
    device: keyword-only; optional device or sharding to place the result on.
    copy: keyword-only; whether to copy the data (None: only when it cannot be shared).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> jnp.from_dlpack(np.arange(3, dtype=np.int32))
    Array([0, 1, 2], dtype=int32)
  """
  return array_from_dlpack(x, device=device, copy=copy)
