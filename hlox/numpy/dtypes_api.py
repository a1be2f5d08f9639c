"""Dtype objects and constants of ``hlox.numpy`` (``float32``, ``inf``, ``newaxis``, ...)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from hlox.core import dtypes as _dtypes
from hlox.numpy.conversion import asarray

__all__ = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "bfloat16", "complex64", "complex128",
           "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float0",
           "inf", "nan", "pi", "e", "euler_gamma", "newaxis", "dtype", "result_type",
           "promote_types", "issubdtype", "iinfo", "finfo", "can_cast", "isdtype",
           "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",
           "inexact", "number", "generic", "bool", "float_", "int_", "complex_", "single",
           "double", "uint", "csingle", "cdouble"]
__all__ += ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
            "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
            "int1", "int2", "uint1", "uint2", "character", "flexible", "object_",
            "ComplexWarning"]

class _ScalarType(type):
  """Metaclass of ``hlox.numpy.float32`` and friends: like JAX's scalar types, calling one
  makes a 0-d (or n-d) ``Array`` of that dtype, while ``np.dtype(jnp.float32)``, ``==`` with
  NumPy dtypes/types and ``isinstance`` of NumPy scalars behave as with the NumPy type."""

  def __call__(cls, x=0):
    return asarray(x, dtype=cls.dtype)

  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type, name=None):
  dtype = np.dtype(np_type)
  return _ScalarType(name or dtype.type.__name__, (object,),
                     {"dtype": dtype, "__module__": "hlox.numpy",
                      "__doc__": f"The ``{dtype.name}`` scalar type: calling it makes an Array."})


bool_ = _scalar_type(np.bool_, "bool")
bool = bool_  # noqa: A001  (NumPy 2 spelling)
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t)
                                 for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = _scalar_type(np.complex64), _scalar_type(np.complex128)
bfloat16 = _scalar_type(_dtypes.bfloat16)
float8_e4m3fn = _scalar_type(_dtypes.float8_e4m3fn)
float8_e5m2 = _scalar_type(_dtypes.float8_e5m2)
int4, uint4 = _scalar_type(_dtypes.int4), _scalar_type(_dtypes.uint4)
float0 = _dtypes.float0
float_, int_, complex_ = float64, int64, complex128
single, double = float32, float64
csingle, cdouble = complex64, complex128
uint = uint64

inf, nan, pi, e, euler_gamma = np.inf, np.nan, np.pi, np.e, np.euler_gamma
newaxis = None
dtype = np.dtype
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
floating, complexfloating, inexact = np.floating, np.complexfloating, np.inexact
number, generic = np.number, np.generic

result_type = _dtypes.result_type
promote_types = _dtypes.promote_types_uncanonical


def issubdtype(arg1, arg2) -> bool:
  """Whether ``arg1`` is a sub-dtype of ``arg2`` in NumPy's dtype hierarchy.

  The hierarchy is extended so that bfloat16 and the float8 types are ``floating``, int4 and the
  other narrow integers are ``signedinteger`` or ``unsignedinteger``, and typed PRNG key dtypes
  are subtypes of ``hlox.dtypes.prng_key`` only. Both arguments may be dtypes, concrete or
  abstract scalar types (``jnp.floating``, ``jnp.integer``, ...) or dtype names.

  Args:
    arg1: the dtype or scalar type to test.
    arg2: the dtype or abstract category to test against.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.issubdtype(jnp.float32, jnp.floating)
    True
    >>> jnp.issubdtype(jnp.bfloat16, jnp.inexact)
    True
    >>> jnp.issubdtype(jnp.int8, jnp.floating)
    False

  See also:
    :func:`hlox.numpy.isdtype`.
  """
  return _dtypes.issubdtype(arg1, arg2)


iinfo = _dtypes.iinfo
finfo = _dtypes.finfo


def can_cast(from_, to, casting="safe"):
  """Whether a cast from one dtype to another is allowed under a casting rule.

  It forwards to ``numpy.can_cast``, so NumPy's casting rules apply (not JAX's promotion lattice);
  NumPy knows the ml_dtypes types such as bfloat16.

  Args:
    from_: the source dtype, scalar type or dtype name.
    to: the target dtype, scalar type or dtype name.
    casting: one of ``'no'``, ``'equiv'``, ``'safe'`` (default), ``'same_kind'`` and ``'unsafe'``.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.can_cast(jnp.int8, jnp.int32)
    True
    >>> jnp.can_cast(jnp.float32, jnp.int32)
    False
    >>> jnp.can_cast(jnp.float32, jnp.int32, casting='unsafe')
    True

  See also:
    :func:`hlox.numpy.result_type`.
  """
  return np.can_cast(from_, to, casting=casting)


_ISDTYPE_KINDS = {
    "bool": lambda d: d == np.dtype(np.bool_),
    "signed integer": _dtypes.is_signed_int,
    "unsigned integer": _dtypes.is_unsigned_int,
    "integral": _dtypes.is_int,
    "real floating": _dtypes.is_float,
    "complex floating": _dtypes.is_complex,
    "numeric": lambda d: d != np.dtype(np.bool_) and (_dtypes.is_int(d) or
                                                     _dtypes.is_inexact(d)),
}


def isdtype(dtype, kind):
  """Whether ``dtype`` is of the given kind (the Array API's ``isdtype``).

  Kinds are dtypes or the names ``'bool'``, ``'signed integer'``, ``'unsigned integer'``,
  ``'integral'``, ``'real floating'``, ``'complex floating'`` and ``'numeric'``; bfloat16 and the
  float8 types are ``'real floating'``, int4 is ``'signed integer'``. An unknown kind name raises
  a ValueError.

  Args:
    dtype: the dtype to test (anything ``numpy.dtype`` accepts).
    kind: a dtype, a kind name, or a tuple of them (true if any matches).

  Returns:
    A Python bool.

  Examples:
    >>> jnp.isdtype(jnp.float32, 'real floating')
    True
    >>> jnp.isdtype(jnp.bfloat16, ('integral', 'real floating'))
    True
    >>> jnp.isdtype(jnp.int8, 'unsigned integer')
    False

  See also:
    :func:`hlox.numpy.issubdtype`.
  """
  dtype = np.dtype(dtype)
  kinds = kind if isinstance(kind, tuple) else (kind,)
  for k in kinds:
    if isinstance(k, str):
      if k not in _ISDTYPE_KINDS:
        raise ValueError(f"Unrecognized kind: {k!r}; expected one of "
                         f"{sorted(_ISDTYPE_KINDS)}")
      if _ISDTYPE_KINDS[k](dtype):
        return True
    elif np.dtype(k) == dtype:
      return True
  return False


# The narrow ml_dtypes types, as scalar types like JAX's. ``np.dtype(jnp.int2)``, ``==`` and
# ``isinstance`` work for every one of them, and so does making an Array of one; computing
# with it needs a dtype that hlox's core and lowering know (not yet float8_e3m4, float8_e4m3,
# float8_e8m0fnu, the float6/float4 types and int1/int2/uint1/uint2).
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
int1, uint1 = _scalar_type(ml_dtypes.int1), _scalar_type(ml_dtypes.uint1)
int2, uint2 = _scalar_type(ml_dtypes.int2), _scalar_type(ml_dtypes.uint2)

# NumPy's abstract and object scalar types, which JAX re-exports unchanged.
character, flexible, object_ = np.character, np.flexible, np.object_
ComplexWarning = np.exceptions.ComplexWarning
