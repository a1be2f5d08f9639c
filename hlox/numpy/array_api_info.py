"""The Python array API's inspection object (``hlox.numpy.__array_namespace_info__()``):
what the namespace can do, its default device and dtypes, and the dtypes it offers by kind.

The standard's dtypes are the NumPy ones hlox computes in; the 64-bit ones only with
``enable_x64``, since without it they are not dtypes an array can have.
"""
from __future__ import annotations

import numpy as np

from hlox.config import config
from hlox.core import dtypes
from hlox.runtime.array import all_devices

__all__ = ["ArrayNamespaceInfo", "__array_namespace_info__"]

_NARROW = ("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
           "complex64")
_WIDE = ("int64", "uint64", "float64", "complex128")

# Each kind the standard names, as a test on a NumPy dtype's kind letter.
_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


class ArrayNamespaceInfo:
  """What ``hlox.numpy`` offers as an array API namespace (``capabilities``, ``devices``,
  ``default_device``, ``default_dtypes``, ``dtypes``)."""

  def capabilities(self) -> dict:
    """Under transformations shapes are static: no boolean-mask indexing, no shapes that
    depend on values; XLA allows at most 64 dimensions."""
    return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

  def default_device(self):
    """None: an array made without a device is uncommitted, placed where it is used."""
    return None

  def devices(self) -> list:
    """None (uncommitted) followed by the devices of every initialised platform."""
    return [None, *all_devices()]

  def default_dtypes(self, *, device=None) -> dict:
    """The dtypes arrays get by default (the same on every device)."""
    del device
    return {"real floating": dtypes.default_float_dtype(),
            "complex floating": dtypes.default_complex_dtype(),
            "integral": dtypes.default_int_dtype(),
            "indexing": dtypes.default_int_dtype()}

  def dtypes(self, *, device=None, kind: str | tuple[str, ...] | None = None) -> dict:
    """The standard's dtypes by name, all of them (``kind=None``: numeric and bool) or those
    of ``kind``, a kind name or a tuple of them (a KeyError for another name)."""
    del device
    names = _NARROW + (_WIDE if config.enable_x64 else ())
    kinds = ("numeric", "bool") if kind is None else kind if isinstance(kind, tuple) else (kind,)
    letters = "".join(_KINDS[k] for k in kinds)
    return {name: np.dtype(name) for name in names if np.dtype(name).kind in letters}


def __array_namespace_info__() -> ArrayNamespaceInfo:
  """The array API inspection object of ``hlox.numpy``."""
  return ArrayNamespaceInfo()
