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
  """Pack the truth values of ``a`` along ``axis`` (the flattened array when None) into
  ``uint8``: each group of 8 becomes one byte, the last group padded with zeros."""
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
  """The bits of the ``uint8`` array ``a`` along ``axis`` (flattened when None), 8 per
  byte; ``count`` keeps that many (padding with zeros when it asks for more)."""
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
