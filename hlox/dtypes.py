"""``hlox.dtypes``: JAX's public ``jax.dtypes`` names, over ``hlox.core.dtypes``.

The promotion lattice, canonicalization (x64) and the ml_dtypes types live in ``core``; this
module only gives them JAX's public spelling and signatures, and knows the extended dtypes
(typed PRNG keys' ``key<fry>``, an ``issubdtype`` of ``prng_key`` and ``extended``).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from hlox.core import dtypes as _core

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]

TypePromotionError = _core.TypePromotionError
bfloat16 = ml_dtypes.bfloat16
float0 = _core.float0
extended = _core.extended
prng_key = _core.prng_key
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo
issubdtype = _core.issubdtype


def _is_extended(dtype) -> bool:
  return isinstance(getattr(dtype, "type", None), type) and issubclass(dtype.type, extended)


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
  """The dtype hlox stores for ``dtype`` (64-bit types become 32-bit unless x64 is on).
  Extended dtypes (PRNG keys) pass through only with ``allow_extended_dtype=True``."""
  if _is_extended(dtype):
    if allow_extended_dtype:
      return dtype
    raise ValueError(f"canonicalize_dtype: called on extended dtype {dtype} with "
                     "allow_extended_dtype=False")
  return _core.canonicalize_dtype(dtype)


def result_type(*args, return_weak_type_flag: bool = False):
  """The dtype JAX's promotion gives ``args`` (arrays, dtypes, Python scalars, which are
  weakly typed); with ``return_weak_type_flag``, ``(dtype, weak)``."""
  return _core.result_type(*args, return_weak_type_flag=return_weak_type_flag)


def itemsize_bits(dtype) -> int:
  """The size of one element of ``dtype`` in bits (4 for int4, 8 for bool)."""
  if dtype is None:
    raise ValueError("itemsize_bits: dtype cannot be None")
  dtype = np.dtype(dtype)
  if dtype in _core.narrow_int_dtypes:
    return ml_dtypes.iinfo(dtype).bits
  int1 = getattr(ml_dtypes, "int1", None)
  if int1 is not None and dtype in (np.dtype(int1), np.dtype(ml_dtypes.uint1)):
    return 1
  return dtype.itemsize * 8


def scalar_type_of(x) -> type:
  """``bool``, ``int``, ``float`` or ``complex``: the Python scalar type matching the dtype
  of the value ``x`` (an array, a NumPy or Python scalar, or a dtype)."""
  if isinstance(x, (bool, int, float, complex)):
    return type(x) if type(x) in (bool, int, float, complex) else _core.scalar_type_of(
        _core.python_scalar_dtype(x))
  dtype = getattr(x, "dtype", None)
  if dtype is None:
    dtype = np.dtype(x)
  return _core.scalar_type_of(dtype)
