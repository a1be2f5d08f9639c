"""Dtype objects and constants of ``hlox.numpy`` (``float32``, ``inf``, ``newaxis``, ...)."""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes as _dtypes

__all__ = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "bfloat16", "complex64", "complex128",
           "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float0",
           "inf", "nan", "pi", "e", "euler_gamma", "newaxis", "dtype", "result_type",
           "promote_types", "issubdtype", "iinfo", "finfo", "can_cast", "isdtype",
           "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",
           "inexact", "number", "generic", "bool", "float_", "int_", "complex_"]

bool_ = np.bool_
bool = np.bool_  # noqa: A001  (NumPy 2 spelling)
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
bfloat16 = _dtypes.bfloat16.type
float8_e4m3fn = _dtypes.float8_e4m3fn.type
float8_e5m2 = _dtypes.float8_e5m2.type
int4, uint4 = _dtypes.int4.type, _dtypes.uint4.type
float0 = _dtypes.float0
float_, int_, complex_ = np.float64, np.int64, np.complex128

inf, nan, pi, e, euler_gamma = np.inf, np.nan, np.pi, np.e, np.euler_gamma
newaxis = None
dtype = np.dtype
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
floating, complexfloating, inexact = np.floating, np.complexfloating, np.inexact
number, generic = np.number, np.generic

result_type = _dtypes.result_type
promote_types = _dtypes.promote_types
issubdtype = _dtypes.issubdtype
iinfo = _dtypes.iinfo
finfo = _dtypes.finfo


def can_cast(from_, to, casting="safe"):
  return np.can_cast(from_, to, casting=casting)


def isdtype(dtype, kind):
  return np.isdtype(np.dtype(dtype), kind)
