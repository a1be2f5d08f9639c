"""Packing booleans into the bits of ``uint8`` and back: ``packbits``, ``unpackbits``."""
from __future__ import annotations

import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, shapes, util

__all__ = ["packbits", "unpackbits"]


def _check_bitorder(name, bitorder):
  if bitorder not in ("little", "big"):
    raise ValueError(f"{name}: 'order' must be either 'little' or 'big', got {bitorder!r}")


def _shifts(bitorder):
  """The shift of each of the 8 bits of a byte, most significant first for 'big'."""
  bits = np.arange(8, dtype=np.uint8)
  return bits[::-1].copy() if bitorder == "big" else bits


def packbits(a, axis=None, bitorder="big"):
  """Pack the truth values of an array into the bits of ``uint8`` bytes.

  Each run of 8 elements along ``axis`` becomes one byte (any non-zero element is a 1 bit); the
  last run is padded with zeros. Only integer and bool inputs are accepted (others raise a
  TypeError). ``axis`` and ``bitorder`` are static.

  Args:
    a: integer or bool array to pack.
    axis: the axis to pack along; None (default) packs the flattened array.
    bitorder: ``'big'`` (default: the first element is the most significant bit) or ``'little'``;
      anything else raises a ValueError.

  Returns:
    A uint8 array: ``a``'s shape with the length ``n`` of ``axis`` replaced by ``ceil(n / 8)`` (a
    1-d array when ``axis`` is None).

  Examples:
    >>> jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 1, 1]))
    Array([177, 128], dtype=uint8)
    >>> jnp.packbits(jnp.array([True, False, True]), bitorder='little')
    Array([5], dtype=uint8)

  See also:
    :func:`hlox.numpy.unpackbits`.
  """
  util.check_arraylike("packbits", a)
  arr = creation.asarray(a)
  dtype = get_aval(arr).dtype
  if not (dtypes.is_int(dtype) or dtype == dtypes.bool_):
    raise TypeError(f"packbits: expected an input array of integer or boolean data type, "
                    f"got {dtype}")
  _check_bitorder("packbits", bitorder)
  arr = lax.convert_element_type(lax.ne(arr, lax.full_like(arr, 0)), np.uint8)
  if axis is None:
    arr, axis = shapes.ravel(arr), 0
  arr = shapes.swapaxes(arr, axis, -1)
  shape = get_aval(arr).shape
  remainder = shape[-1] % 8
  if remainder:
    arr = shapes.pad(arr, [(0, 0)] * (len(shape) - 1) + [(0, 8 - remainder)])
  shape = get_aval(arr).shape
  arr = shapes.reshape(arr, (*shape[:-1], shape[-1] // 8, 8))
  packed = reductions.sum(arr << _shifts(bitorder), axis=-1, dtype=np.uint8)
  return shapes.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  """Unpack the bits of ``uint8`` bytes into an array of 0s and 1s.

  Each byte along ``axis`` becomes 8 elements. Only uint8 inputs are accepted (others raise a
  TypeError). ``axis``, ``count`` and ``bitorder`` are static.

  Args:
    a: uint8 array to unpack.
    axis: the axis to unpack along; None (default) unpacks the flattened array.
    count: the number of bits to keep along ``axis``: fewer cuts the result, more pads it with
      zeros. None (default) keeps all ``8 * n``.
    bitorder: ``'big'`` (default: the most significant bit first) or ``'little'``; anything else
      raises a ValueError.

  Returns:
    A uint8 array: ``a``'s shape with the length ``n`` of ``axis`` replaced by ``8 * n`` (or
    ``count``); a 1-d array when ``axis`` is None.

  Examples:
    >>> jnp.unpackbits(jnp.array([177, 3], dtype=jnp.uint8))
    Array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1], dtype=uint8)
    >>> jnp.unpackbits(jnp.array([5], dtype=jnp.uint8), count=4, bitorder='little')
    Array([1, 0, 1, 0], dtype=uint8)

  See also:
    :func:`hlox.numpy.packbits`.
  """
  util.check_arraylike("unpackbits", a)
  arr = creation.asarray(a)
  if get_aval(arr).dtype != np.uint8:
    raise TypeError(f"unpackbits: expected an input array of unsigned byte data type, got "
                    f"{get_aval(arr).dtype}")
  _check_bitorder("unpackbits", bitorder)
  if axis is None:
    arr, axis = shapes.ravel(arr), 0
  arr = shapes.swapaxes(arr, axis, -1)
  masks = (np.uint8(1) << _shifts(bitorder)).astype(np.uint8)
  bits = lax.convert_element_type((arr[..., None] & masks) > 0, np.uint8)
  shape = get_aval(bits).shape
  bits = shapes.reshape(bits, (*shape[:-2], shape[-2] * 8))
  if count is not None:
    count = operator.index(count)
    n = get_aval(bits).shape[-1]
    if count > n:
      bits = shapes.pad(bits, [(0, 0)] * (len(shape) - 2) + [(0, count - n)])
    else:
      bits = bits[..., :count]
  return shapes.swapaxes(bits, axis, -1)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["packbits", "unpackbits"], {},
                    default_static=("axis", "bitorder", "count"),
                    staged=("packbits", "unpackbits"))
