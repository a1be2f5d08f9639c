"""Elementwise NumPy functions (ufuncs) written on ``lax``, with JAX's dtype promotion.

Arguments are promoted with JAX's lattice (Python scalars are weakly typed), so
``float32_array * 2.0`` stays float32 and ``int32_array / 2`` is float32. Transcendental
functions of integers and bools compute in the default float dtype. Constants inside the
compositions are Python scalars, so a weakly-typed input gives a weakly-typed result.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.custom_derivatives import custom_jvp
from hlox.errors import ConcretizationTypeError
# The select helpers live in ``util`` (``reductions`` needs ``_where`` too, as in JAX).
from hlox.numpy.util import (_const, _dtype, _jit_const, _strong_const, _strong_scalars,
                             _to_bool)
from hlox.numpy import creation, reductions, shapes, util
from hlox.numpy.util import (broadcast_shapes, broadcast_to_shape, check_arraylike,
                             ensure_array, promote_args, promote_args_inexact,
                             promote_args_numeric, promote_dtypes_inexact,
                             promote_dtypes_numeric, promote_shapes)
from hlox.runtime.array import Array, device_put
from hlox.core.extended_functions import refused as _refused

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power", "pow",
    "float_power", "mod", "remainder", "fmod", "divmod", "modf", "negative", "positive",
    "maximum", "minimum", "fmax", "fmin", "abs", "absolute", "fabs", "sign", "reciprocal",
    "square", "sqrt", "cbrt",
    # rounding
    "floor", "ceil", "trunc", "rint", "round", "around",
    # exponential and logarithm
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "atan2", "asinh", "acosh",
    "atanh", "deg2rad", "rad2deg", "degrees", "radians", "hypot", "sinc",
    # floating point classification and manipulation
    "isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit", "copysign",
    "nextafter", "nan_to_num", "heaviside",
    # logical and bitwise
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "invert", "bitwise_invert", "left_shift", "right_shift",
    "bitwise_left_shift", "bitwise_right_shift", "bitwise_count",
    # comparisons
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isclose",
    "allclose",
    # complex numbers
    "real", "imag", "conj", "conjugate", "angle",
    # selection
    "where", "clip",
]

# This module defines ``abs``, ``round``, ``pow`` and ``divmod``, shadowing the builtins:
# the code below does not use those builtins.


# --- helpers -----------------------------------------------------------------------------

def _args(name, *args):
  return _strong_scalars(promote_args(name, *args))


_INEXACT = frozenset(d for d in dtypes.all_dtypes if dtypes.is_inexact(d))


def _args_inexact(name, *args):
  if len(args) == 1:  # fast path: one array that is already inexact
    aval = getattr(args[0], "aval", None)
    if aval is not None and aval.dtype in _INEXACT \
        and not hasattr(aval, "inner_aval"):  # a reference is no array (checked below)
      return args
  check_arraylike(name, *args)
  return _strong_scalars(promote_args_inexact(name, *args))


def _args_numeric(name, *args):
  return _strong_scalars(promote_args_numeric(name, *args))


def _arraylike(name, *args):
  """Check ``args`` and turn lists into arrays; Python scalars and NumPy values pass."""
  check_arraylike(name, *args)
  return [ensure_array(a) for a in args]



def _asarray(x):
  """``x`` as an Array (or tracer); a Python scalar keeps its weak type."""
  if isinstance(x, (Array, Tracer)):
    return x
  return device_put(x)


def _full_like(x, value, dtype=None):
  """An array of ``x``'s shape filled with ``value`` (strongly typed)."""
  dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else _dtype(x))
  return lax.broadcast_in_dim(np.asarray(value, dtype=dtype), get_aval(x).shape, ())


def _check_not_complex(name, *args, error=TypeError):
  if any(dtypes.is_complex(_dtype(a)) for a in args):
    raise error(f"{name} does not support complex inputs, got dtypes "
                f"{', '.join(_dtype(a).name for a in args)}")


# --- arithmetic --------------------------------------------------------------------------

def add(x, y, /):
  """Elementwise ``x + y`` (logical OR for bools)."""
  x, y = _args("add", x, y)
  return lax.bitwise_or(x, y) if _dtype(x) == dtypes.bool_ else lax.add(x, y)


def subtract(x, y, /):
  """Elementwise ``x - y`` (bools are not accepted, as in NumPy)."""
  return lax.sub(*_args("subtract", x, y))


def multiply(x, y, /):
  """Elementwise ``x * y`` (logical AND for bools)."""
  x, y = _args("multiply", x, y)
  return lax.bitwise_and(x, y) if _dtype(x) == dtypes.bool_ else lax.mul(x, y)


def true_divide(x1, x2, /):
  """Elementwise ``x1 / x2`` in an inexact dtype (``int32 / int32`` is float32)."""
  return lax.div(*_args_inexact("true_divide", x1, x2))


def divide(x1, x2, /):
  """Elementwise ``x1 / x2`` (same as ``true_divide``)."""
  return true_divide(x1, x2)


def _float_divmod(x1, x2):
  """NumPy's floating ``divmod``: the floored quotient and the remainder with ``x2``'s sign."""
  mod = lax.rem(x1, x2)
  # (x1 - mod) / x2 is very nearly an integer; where x2 == 0 keep x1 / 0 (inf or nan).
  div = lax.div(_where(lax.eq(x2, _const(x2, 0)), x1, lax.sub(x1, mod)), x2)
  fix = lax.bitwise_and(lax.ne(mod, _const(mod, 0)),
                        lax.ne(lax.lt(x2, _const(x2, 0)), lax.lt(mod, _const(mod, 0))))
  mod = lax.select(fix, lax.add(mod, x2), mod)
  div = lax.select(fix, lax.sub(div, _const(div, 1)), div)
  return lax.round(div, lax.RoundingMethod.TO_NEAREST_EVEN), mod


def floor_divide(x1, x2, /):
  """Elementwise ``x1 // x2``: the quotient rounded toward negative infinity."""
  x1, x2 = _args_numeric("floor_divide", x1, x2)
  dtype = _dtype(x1)
  if dtypes.is_unsigned_int(dtype):
    return lax.div(x1, x2)
  if dtypes.is_int(dtype):
    # C division truncates; step down when the signs differ and the division is inexact.
    quotient = lax.div(x1, x2)
    inexact = lax.ne(lax.rem(x1, x2), _const(x1, 0))
    signs_differ = lax.ne(lax.sign(x1), lax.sign(x2))
    return _where(lax.bitwise_and(inexact, signs_differ),
                  lax.sub(quotient, _const(quotient, 1)), quotient)
  _check_not_complex("floor_divide", x1)
  return _float_divmod(x1, x2)[0]


def remainder(x1, x2, /):
  """Elementwise remainder of floored division: the result has the sign of ``x2``."""
  x1, x2 = _args_numeric("remainder", x1, x2)
  _check_not_complex("remainder", x1)
  if dtypes.is_int(_dtype(x2)):
    # x % 0 is 0 (NumPy's answer) instead of XLA's x.
    x2 = _where(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
  trunc_mod = lax.rem(x1, x2)
  fix = lax.bitwise_and(lax.ne(trunc_mod, _const(trunc_mod, 0)),
                        lax.ne(lax.lt(trunc_mod, _const(trunc_mod, 0)),
                               lax.lt(x2, _const(x2, 0))))
  return lax.select(fix, lax.add(trunc_mod, x2), trunc_mod)


def mod(x1, x2, /):
  """Elementwise ``x1 % x2`` (same as ``remainder``)."""
  return remainder(x1, x2)


def fmod(x1, x2, /):
  """Elementwise remainder of truncated division: the result has the sign of ``x1``."""
  x1, x2 = _args_numeric("fmod", x1, x2)
  _check_not_complex("fmod", x1)
  if dtypes.is_int(_dtype(x2)):
    x2 = _where(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
  return lax.rem(x1, x2)


def divmod(x1, x2, /):
  """``(floor_divide(x1, x2), remainder(x1, x2))``."""
  x1, x2 = _args_numeric("divmod", x1, x2)
  if dtypes.is_int(_dtype(x1)):
    return floor_divide(x1, x2), remainder(x1, x2)
  _check_not_complex("divmod", x1)
  return _float_divmod(x1, x2)


def modf(x, /):
  """``(fractional part, integral part)`` of ``x``, both with ``x``'s sign."""
  x, = _args_inexact("modf", x)
  whole = trunc(x)
  return lax.sub(x, whole), whole


def _static_int_exponent(x2):
  """``x2`` as a Python int when it is a concrete integer scalar, else None."""
  if isinstance(x2, Tracer):
    return None
  if isinstance(x2, (int, np.integer)) and not isinstance(x2, (bool, np.bool_)):
    return operator.index(x2)
  if isinstance(x2, (Array, np.ndarray)) and x2.shape == () and dtypes.is_int(x2.dtype):
    return operator.index(x2)
  return None


def _int_pow(x1, x2):
  """Integer ``x1 ** x2`` for a traced exponent: square-and-multiply over its low bits."""
  # Six bits cover every exponent whose power fits in 64 bits for |x1| >= 2; bases 0, 1 and
  # -1 are right for any exponent since their even powers repeat.
  zero, one = _const(x2, 0), _const(x2, 1)
  shape = broadcast_shapes(get_aval(x1).shape, get_aval(x2).shape)
  x1, x2 = (broadcast_to_shape(a, shape) for a in (x1, x2))
  # 0 ** n is 0 for n != 0; everything else starts from 1 (and 0 ** 0 is 1).
  acc = lax.select(lax.bitwise_and(lax.eq(x1, _const(x1, 0)), lax.ne(x2, zero)),
                   _full_like(x1, 0), _full_like(x1, 1))
  for _ in range(6):
    acc = lax.select(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


def power(x1, x2, /):
  """Elementwise ``x1 ** x2``.

  A concrete integer exponent uses ``lax.integer_pow`` (so integer bases with negative
  exponents raise TypeError); integer bases with integer arrays stay integers; a float or
  complex base with an integer array exponent keeps the base's dtype.
  """
  check_arraylike("power", x1, x2)
  x1, x2 = ensure_array(x1), ensure_array(x2)
  y = _static_int_exponent(x2)
  if y is not None:
    x1, = promote_dtypes_numeric(x1)
    return lax.integer_pow(x1, y)
  x1, x2 = promote_shapes("power", x1, x2)
  p1, p2 = _strong_scalars(promote_dtypes_numeric(x1, x2))
  if dtypes.is_int(_dtype(p1)):
    return _int_pow(p1, p2)
  if dtypes.is_inexact(_dtype(x1)) and dtypes.is_int(_dtype(x2)):
    return lax.pow(x1, x2)
  return lax.pow(p1, p2)


def pow(x1, x2, /):
  """Elementwise ``x1 ** x2`` (same as ``power``)."""
  return power(x1, x2)


def float_power(x1, x2, /):
  """Elementwise ``x1 ** x2`` computed in an inexact dtype."""
  return lax.pow(*_args_inexact("float_power", x1, x2))


def negative(x, /):
  """Elementwise ``-x``."""
  return lax.neg(*_args("negative", x))


def positive(x, /):
  """Elementwise ``+x`` (a copy of ``x`` as an array)."""
  return _asarray(*_args("positive", x))


def maximum(x, y, /):
  """Elementwise maximum; NaN propagates."""
  return lax.max(*_args("maximum", x, y))


def minimum(x, y, /):
  """Elementwise minimum; NaN propagates."""
  return lax.min(*_args("minimum", x, y))


def fmax(x1, x2, /):
  """Elementwise maximum ignoring NaN (NaN only when both are NaN)."""
  x1, x2 = _args("fmax", x1, x2)
  return _where(lax.bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2, /):
  """Elementwise minimum ignoring NaN (NaN only when both are NaN)."""
  x1, x2 = _args("fmin", x1, x2)
  return _where(lax.bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


def absolute(x, /):
  """Elementwise absolute value (the modulus, as a real dtype, for complex ``x``)."""
  x, = _arraylike("absolute", x)
  dtype = _dtype(x)
  if dtype == dtypes.bool_ or dtypes.is_unsigned_int(dtype):
    return _asarray(x)
  return lax.abs(x)


def abs(x, /):
  """Elementwise absolute value (same as ``absolute``)."""
  return absolute(x)


def fabs(x, /):
  """Elementwise absolute value in an inexact dtype (no complex inputs)."""
  x, = _arraylike("fabs", x)
  _check_not_complex("fabs", x)
  return lax.abs(*_args_inexact("fabs", x))


def sign(x, /):
  """Elementwise sign: -1, 0 or 1 (``x / |x|`` for complex)."""
  return lax.sign(*_args("sign", x))


def reciprocal(x, /):
  """Elementwise ``1 / x`` in an inexact dtype."""
  x, = _arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


def square(x, /):
  """Elementwise ``x * x`` (bools become integers)."""
  x, = _arraylike("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


def sqrt(x, /):
  """Elementwise square root."""
  return lax.sqrt(*_args_inexact("sqrt", x))


def cbrt(x, /):
  """Elementwise real cube root."""
  return lax.cbrt(*_args_inexact("cbrt", x))


# --- rounding ----------------------------------------------------------------------------

def _is_integral(x) -> bool:
  dtype = _dtype(x)
  return dtypes.is_int(dtype) or dtype == dtypes.bool_


def floor(x, /):
  """Elementwise round toward negative infinity (integers pass unchanged)."""
  x, = _arraylike("floor", x)
  if _is_integral(x):
    return _asarray(x)
  return lax.floor(*_args_inexact("floor", x))


def ceil(x, /):
  """Elementwise round toward positive infinity (integers pass unchanged)."""
  x, = _arraylike("ceil", x)
  if _is_integral(x):
    return _asarray(x)
  return lax.ceil(*_args_inexact("ceil", x))


def trunc(x, /):
  """Elementwise round toward zero (integers pass unchanged)."""
  x, = _arraylike("trunc", x)
  if _is_integral(x):
    return _asarray(x)
  x, = _args_inexact("trunc", x)
  _check_not_complex("trunc", x)
  return _where(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


def rint(x, /):
  """Elementwise round to the nearest integer, ties to even; integers become floats."""
  x, = _arraylike("rint", x)
  if _is_integral(x):  # a strong default float whatever the width (as JAX), even when weak
    dtype = dtypes.default_float_dtype()
    return lax.convert_element_type(_asarray(x), dtype, weak_type=False)
  x, = _args_inexact("rint", x)
  if dtypes.is_complex(_dtype(x)):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals=0, out=None):
  """Round to ``decimals`` decimal places, ties to even (NumPy's ``round``)."""
  a, = _arraylike("round", a)
  if out is not None:
    raise NotImplementedError("round: the 'out' argument is not supported")
  try:
    decimals = operator.index(decimals)
  except TypeError:
    raise TypeError(f"round: decimals must be a static integer, got {decimals!r}") from None
  dtype = _dtype(a)
  if _is_integral(a):
    if decimals < 0:
      raise NotImplementedError("round: integer rounding with decimals < 0 is not "
                                "implemented")
    return _asarray(a)
  if decimals > np.log10(float(dtypes.finfo(_real_dtype_of(dtype)).max)):
    return _asarray(a)  # every value is already an integer multiple of 10**-decimals

  def round_real(x):
    if decimals == 0:
      return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    part_dtype = _dtype(x)
    # float16 has too little range for x * 10**decimals: scale in float32.
    if part_dtype == dtypes.float16:
      x = lax.convert_element_type(x, dtypes.float32)
    factor = _const(x, 10.0 ** decimals)
    out = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(out, part_dtype) if part_dtype == dtypes.float16 else out

  if dtypes.is_complex(dtype):
    return lax.complex(round_real(lax.real(a)), round_real(lax.imag(a)))
  return round_real(a)


def around(a, decimals=0, out=None):
  """Round to ``decimals`` decimal places (same as ``round``)."""
  return round(a, decimals, out)


def _real_dtype_of(dtype):
  return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(
      np.dtype(dtype), np.dtype(dtype))


# --- exponential and logarithm -----------------------------------------------------------

def exp(x, /):
  """Elementwise ``e ** x``."""
  return lax.exp(*_args_inexact("exp", x))


def exp2(x, /):
  """Elementwise ``2 ** x``."""
  return lax.exp2(*_args_inexact("exp2", x))


def expm1(x, /):
  """Elementwise ``exp(x) - 1``."""
  return lax.expm1(*_args_inexact("expm1", x))


def log(x, /):
  """Elementwise natural logarithm."""
  return lax.log(*_args_inexact("log", x))


def log1p(x, /):
  """Elementwise ``log(1 + x)``."""
  return lax.log1p(*_args_inexact("log1p", x))


def _log_base(name, x, base):
  x, = _args_inexact(name, x)
  ln = lax.log(x)
  # A strongly-typed constant, as in JAX: the result is never weak.
  scale = np.asarray(1.0 / np.log(base), dtype=_real_dtype_of(_dtype(x)))[()]
  if dtypes.is_complex(_dtype(x)):
    # Scale the parts separately: complex * float would need a complex constant.
    return lax.complex(lax.mul(lax.real(ln), scale), lax.mul(lax.imag(ln), scale))
  return lax.mul(ln, scale)


def log2(x, /):
  """Elementwise base-2 logarithm."""
  return _log_base("log2", x, 2.0)


def log10(x, /):
  """Elementwise base-10 logarithm."""
  return _log_base("log10", x, 10.0)


def _logaddexp_base(name, x1, x2, exp_fn, log_scale):
  """``log_b(b ** x1 + b ** x2)`` as ``max + log1p(b ** -|x1 - x2|) * log_scale``."""
  x1, x2 = _args_inexact(name, x1, x2)
  amax = lax.max(x1, x2)
  scale = None if log_scale is None else _jit_const(x1, log_scale)

  def scaled(v):
    return v if scale is None else lax.mul(v, scale)

  if dtypes.is_complex(_dtype(x1)):
    # The other operand minus the larger one is x1 + x2 - 2 * amax; the imaginary part
    # (a phase, in units of the base's log) is wrapped back into its principal range.
    delta = lax.sub(lax.sub(lax.add(x1, x2), amax), amax)
    out = lax.add(amax, scaled(lax.log1p(exp_fn(delta))))
    half_period = np.pi if log_scale is None else np.pi * log_scale
    return lax.complex(lax.real(out), _wrap_between(lax.imag(out), half_period))
  delta = lax.sub(x1, x2)
  # delta is NaN for a NaN operand or for two infinities of the same sign: x1 + x2 is the
  # answer then (NaN, +inf or -inf).
  tail = scaled(lax.log1p(exp_fn(lax.neg(lax.abs(delta)))))
  return _where(lax.ne(delta, delta), lax.add(x1, x2), lax.add(amax, tail))


def logaddexp(x1, x2, /):
  """Elementwise ``log(exp(x1) + exp(x2))`` without overflow."""
  return _logaddexp_custom(*_args_inexact("logaddexp", x1, x2))


def logaddexp2(x1, x2, /):
  """Elementwise ``log2(2 ** x1 + 2 ** x2)`` without overflow."""
  return _logaddexp2_custom(*_args_inexact("logaddexp2", x1, x2))


def _replace_inf(x):
  return _where(lax.eq(x, _const(x, np.inf)), _const(x, 0), x)


def _logaddexp_jvp_rule(exp_fn, base_fn):
  """The derivative weights each input by its share ``exp(x_i - out)``, so ties split
  equally (JAX's custom rule; differentiating the max-based formula would not)."""
  def rule(primals, tangents):
    x1, x2 = primals
    t1, t2 = tangents
    out = base_fn(x1, x2)
    # As JAX: +inf counts as 0 in the weights, so a +inf input gets a finite derivative
    # instead of inf - inf = nan.
    finite_out = _replace_inf(out)
    w1 = exp_fn(lax.sub(_replace_inf(x1), finite_out))
    w2 = exp_fn(lax.sub(_replace_inf(x2), finite_out))
    return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))
  return rule


def _make_logaddexp(name, exp_fn, scale):
  base = lambda x1, x2: _logaddexp_base(name, x1, x2, exp_fn, scale)
  fn = custom_jvp(base)
  # The rule's output goes through ``fn`` itself, so higher derivatives use the rule again
  # (through the max-based formula they would be wrong where x1 == x2).
  fn.defjvp(_logaddexp_jvp_rule(exp_fn, fn))
  return fn


_logaddexp_custom = _make_logaddexp("logaddexp", lax.exp, None)
_logaddexp2_custom = _make_logaddexp("logaddexp2", lax.exp2, 1.0 / np.log(2.0))


def _wrap_between(x, half_period):
  """``x`` moved into ``[-half_period, half_period)`` by whole periods."""
  period = _const(x, 2 * half_period)
  shifted = lax.rem(lax.add(x, _const(x, half_period)), period)
  shifted = lax.select(lax.lt(shifted, _const(shifted, 0)), lax.add(shifted, period),
                       shifted)
  return lax.sub(shifted, _const(x, half_period))


# --- trigonometric and hyperbolic --------------------------------------------------------

def sin(x, /):
  """Elementwise sine."""
  return lax.sin(*_args_inexact("sin", x))


def cos(x, /):
  """Elementwise cosine."""
  return lax.cos(*_args_inexact("cos", x))


def tan(x, /):
  """Elementwise tangent."""
  return lax.tan(*_args_inexact("tan", x))


def arcsin(x, /):
  """Elementwise inverse sine."""
  return lax.asin(*_args_inexact("arcsin", x))


def arccos(x, /):
  """Elementwise inverse cosine."""
  return lax.acos(*_args_inexact("arccos", x))


def arctan(x, /):
  """Elementwise inverse tangent."""
  return lax.atan(*_args_inexact("arctan", x))


def arctan2(x1, x2, /):
  """Elementwise arc tangent of ``x1 / x2`` choosing the quadrant from both signs."""
  return lax.atan2(*_args_inexact("arctan2", x1, x2))


def sinh(x, /):
  """Elementwise hyperbolic sine."""
  return lax.sinh(*_args_inexact("sinh", x))


def cosh(x, /):
  """Elementwise hyperbolic cosine."""
  return lax.cosh(*_args_inexact("cosh", x))


def tanh(x, /):
  """Elementwise hyperbolic tangent."""
  return lax.tanh(*_args_inexact("tanh", x))


def arcsinh(x, /):
  """Elementwise inverse hyperbolic sine."""
  return lax.asinh(*_args_inexact("arcsinh", x))


def arccosh(x, /):
  """Elementwise inverse hyperbolic cosine (NumPy's branch for complex inputs)."""
  x, = _args_inexact("arccosh", x)
  out = lax.acosh(x)
  if dtypes.is_complex(_dtype(out)):
    # NumPy's principal value has a non-negative real part.
    out = _where(lax.lt(lax.real(out), _const(lax.real(out), 0)), lax.neg(out), out)
  return out


def arctanh(x, /):
  """Elementwise inverse hyperbolic tangent."""
  return lax.atanh(*_args_inexact("arctanh", x))


# Array API names.
def asin(x, /):
  """Elementwise inverse sine (same as ``arcsin``)."""
  return arcsin(x)

def acos(x, /):
  """Elementwise inverse cosine (same as ``arccos``)."""
  return arccos(x)

def atan(x, /):
  """Elementwise inverse tangent (same as ``arctan``)."""
  return arctan(x)

def atan2(x1, x2, /):
  """Elementwise two-argument inverse tangent (same as ``arctan2``)."""
  return arctan2(x1, x2)

def asinh(x, /):
  """Elementwise inverse hyperbolic sine (same as ``arcsinh``)."""
  return arcsinh(x)

def acosh(x, /):
  """Elementwise inverse hyperbolic cosine (same as ``arccosh``)."""
  return arccosh(x)

def atanh(x, /):
  """Elementwise inverse hyperbolic tangent (same as ``arctanh``)."""
  return arctanh(x)


def deg2rad(x, /):
  """Convert angles from degrees to radians."""
  x, = _args_inexact("deg2rad", x)
  return lax.mul(x, _const(x, np.pi / 180))


def rad2deg(x, /):
  """Convert angles from radians to degrees."""
  x, = _args_inexact("rad2deg", x)
  return lax.mul(x, _const(x, 180 / np.pi))


def radians(x, /):
  """Convert angles from degrees to radians (same as ``deg2rad``)."""
  return deg2rad(x)


def degrees(x, /):
  """Convert angles from radians to degrees (same as ``rad2deg``)."""
  return rad2deg(x)


def hypot(x1, x2, /):
  """Elementwise ``sqrt(x1**2 + x2**2)`` without intermediate overflow or underflow."""
  x1, x2 = _args_inexact("hypot", x1, x2)
  if dtypes.is_complex(_dtype(x1)):
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please convert "
                     f"to real values first, such as by using abs(x) (got {_dtype(x1).name})")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  big, small = lax.max(x1, x2), lax.min(x1, x2)
  big_is_zero = lax.eq(big, _const(big, 0))
  ratio = lax.div(small, _where(big_is_zero, _const(big, 1), big))
  out = _where(big_is_zero, big,
               lax.mul(big, lax.sqrt(lax.add(_const(ratio, 1), lax.square(ratio)))))
  # inf with NaN is inf (as in C's hypot); the formula above would give NaN.
  any_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
  return _where(any_inf, _jit_const(out, np.inf), out)


def sinc(x, /):
  """Elementwise normalized sinc ``sin(pi x) / (pi x)``, 1 at 0."""
  x, = _arraylike("sinc", x)
  x, = promote_dtypes_inexact(x)
  is_zero = lax.eq(x, _const(x, 0))
  # Divide by 1 instead of 0 where x == 0 (that entry is replaced), so no NaN is produced.
  pi_x = lax.mul(x, _const(x, np.pi))
  safe = _where(is_zero, _const(x, 1), pi_x)
  # At 0 the value and every derivative come from the Taylor series (the quotient's own
  # derivatives there are 0/0), so grad(grad(sinc))(0.) is -pi**2/3 as it should be.
  return _where(is_zero, _sinc_taylor(0)(pi_x), lax.div(lax.sin(safe), safe))


_sinc_taylor_fns: dict = {}


def _sinc_taylor(k: int):
  """``x -> d^k/dx^k (sin x / x)`` at 0, broadcast like ``x``, as a function whose own
  derivative is the next term's (so that any order of differentiation is exact at 0)."""
  fn = _sinc_taylor_fns.get(k)
  if fn is None:
    # sin(x)/x = sum_n (-1)^n x^(2n) / (2n+1)!: the 2n-th derivative at 0 is (-1)^n/(2n+1).
    value = 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)
    fn = custom_jvp(lambda x: lax.full_like(x, value))
    fn.defjvp(lambda primals, tangents: (fn(*primals),
                                         lax.mul(_sinc_taylor(k + 1)(*primals), tangents[0])))
    _sinc_taylor_fns[k] = fn
  return fn


# --- floating point classification and manipulation --------------------------------------

def isfinite(x, /):
  """Elementwise test for finite values (integers always are)."""
  x, = _arraylike("isfinite", x)
  dtype = _dtype(x)
  if dtypes.is_float(dtype):
    return lax.is_finite(x)
  if dtypes.is_complex(dtype):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_like(x, True, dtypes.bool_)


def isinf(x, /):
  """Elementwise test for positive or negative infinity."""
  x, = _arraylike("isinf", x)
  dtype = _dtype(x)
  if dtypes.is_float(dtype):
    return lax.eq(lax.abs(x), _strong_const(x, np.inf))
  if dtypes.is_complex(dtype):
    re, im = lax.real(x), lax.imag(x)
    return lax.bitwise_or(lax.eq(lax.abs(re), _strong_const(re, np.inf)),
                          lax.eq(lax.abs(im), _strong_const(im, np.inf)))
  return _full_like(x, False, dtypes.bool_)


def _isinf_signed(name, x, value):
  x, = _arraylike(name, x)
  dtype = _dtype(x)
  if dtypes.is_complex(dtype):
    raise ValueError(f"{name} is not defined for complex inputs")
  if dtypes.is_float(dtype):
    return lax.eq(x, _strong_const(x, value))
  return _full_like(x, False, dtypes.bool_)


def _no_out(out):
  if out is not None:  # NumPy's signature; arrays are immutable, so nothing to write into
    raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")


def isposinf(x, /, out=None):
  """Elementwise test for positive infinity (``out`` must be None)."""
  _no_out(out)
  return _isinf_signed("isposinf", x, np.inf)


def isneginf(x, /, out=None):
  """Elementwise test for negative infinity (``out`` must be None)."""
  _no_out(out)
  return _isinf_signed("isneginf", x, -np.inf)


def isnan(x, /):
  """Elementwise test for NaN."""
  x, = _arraylike("isnan", x)
  # Also for integers (never NaN): the result is then weak when x is, as in JAX.
  return lax.ne(x, x)


_SIGNED_OF_WIDTH = {8: dtypes.int8, 16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}


def signbit(x, /):
  """Elementwise test for a set sign bit (True for -0.0 and negative NaNs too)."""
  x, = _args("signbit", x)
  dtype = _dtype(x)
  if dtypes.is_int(dtype):
    return lax.lt(x, _strong_const(x, 0))
  if dtype == dtypes.bool_:
    return _full_like(x, False, dtypes.bool_)
  if not dtypes.is_float(dtype):
    raise ValueError(f"signbit is not defined for {dtype.name}")
  # The sign bit is the top bit: as a signed integer of the same width, the value is < 0.
  int_dtype = _SIGNED_OF_WIDTH[dtypes.finfo(dtype).bits]
  bits = lax.bitcast_convert_type(x, int_dtype)
  return lax.lt(bits, _const(bits, 0))


def copysign(x1, x2, /):
  """Elementwise ``|x1|`` with the sign (bit) of ``x2``."""
  x1, x2 = _args_inexact("copysign", x1, x2)
  _check_not_complex("copysign", x1)
  magnitude = lax.abs(x1)
  return _where(signbit(x2), lax.neg(magnitude), magnitude)


def nextafter(x1, x2, /):
  """The next representable value after ``x1`` toward ``x2``."""
  return lax.nextafter(*_args_inexact("nextafter", x1, x2))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """Replace NaN with ``nan`` and infinities with ``posinf``/``neginf`` (default: the
  dtype's largest finite values)."""
  del copy
  x, = _arraylike("nan_to_num", x)
  dtype = _dtype(x)
  if not dtypes.is_inexact(dtype):
    return _asarray(x)
  if dtypes.is_complex(dtype):
    parts = [nan_to_num(p, nan=nan, posinf=posinf, neginf=neginf)
             for p in (lax.real(x), lax.imag(x))]
    return lax.complex(*parts)
  info = dtypes.finfo(dtype)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = _where(isnan(x), _fill(nan, dtype), x)
  out = _where(isposinf(out), _fill(posinf, dtype), out)
  return _where(isneginf(out), _fill(neginf, dtype), out)


def _fill(value, dtype):
  """A replacement value converted to ``dtype`` (it must not change the result dtype)."""
  if isinstance(value, (Array, Tracer)):
    return lax.convert_element_type(value, dtype)
  return np.asarray(value, dtype=dtype)


def heaviside(x1, x2, /):
  """Heaviside step: 0 for ``x1 < 0``, ``x2`` for ``x1 == 0``, 1 for ``x1 > 0``."""
  x1, x2 = _args_inexact("heaviside", x1, x2)
  _check_not_complex("heaviside", x1)
  zero, one = (_jit_const(x1, v) for v in (0, 1))
  at_zero = _where(lax.ne(x1, x1), x1, x2)  # NaN stays NaN
  return _where(lax.lt(x1, zero), zero, _where(lax.gt(x1, zero), one, at_zero))


# --- logical and bitwise -----------------------------------------------------------------

def logical_and(x, y, /):
  """Elementwise truth of ``x and y``."""
  return lax.bitwise_and(*map(_to_bool, _args("logical_and", x, y)))


def logical_or(x, y, /):
  """Elementwise truth of ``x or y``."""
  return lax.bitwise_or(*map(_to_bool, _args("logical_or", x, y)))


def logical_xor(x, y, /):
  """Elementwise truth of ``bool(x) != bool(y)``."""
  return lax.bitwise_xor(*map(_to_bool, _args("logical_xor", x, y)))


def logical_not(x, /):
  """Elementwise truth of ``not x``."""
  return lax.bitwise_not(*map(_to_bool, _args("logical_not", x)))


def _check_bitwise(name, *args):
  for a in args:
    dtype = _dtype(a)
    if not (dtypes.is_int(dtype) or dtype == dtypes.bool_):
      raise TypeError(f"{name} is only defined for integer and boolean inputs, got "
                      f"{', '.join(_dtype(b).name for b in args)}")


def bitwise_and(x, y, /):
  """Elementwise bitwise AND (logical for bools)."""
  args = _args("bitwise_and", x, y)
  _check_bitwise("bitwise_and", *args)
  return lax.bitwise_and(*args)


def bitwise_or(x, y, /):
  """Elementwise bitwise OR (logical for bools)."""
  args = _args("bitwise_or", x, y)
  _check_bitwise("bitwise_or", *args)
  return lax.bitwise_or(*args)


def bitwise_xor(x, y, /):
  """Elementwise bitwise XOR (logical for bools)."""
  args = _args("bitwise_xor", x, y)
  _check_bitwise("bitwise_xor", *args)
  return lax.bitwise_xor(*args)


def bitwise_not(x, /):
  """Elementwise bitwise NOT, ``~x`` (logical for bools)."""
  args = _args("bitwise_not", x)
  _check_bitwise("bitwise_not", *args)
  return lax.bitwise_not(*args)


def invert(x, /):
  """Elementwise bitwise NOT (same as ``bitwise_not``)."""
  return bitwise_not(x)


def bitwise_invert(x, /):
  """Elementwise bitwise NOT (same as ``bitwise_not``)."""
  return bitwise_not(x)


def left_shift(x1, x2, /):
  """Elementwise ``x1 << x2`` (bools become integers)."""
  args = _args_numeric("left_shift", x1, x2)
  _check_bitwise("left_shift", *args)
  return lax.shift_left(*args)


def right_shift(x1, x2, /):
  """Elementwise ``x1 >> x2``: arithmetic for signed, logical for unsigned integers."""
  x1, x2 = _args_numeric("right_shift", x1, x2)
  _check_bitwise("right_shift", x1, x2)
  if dtypes.is_unsigned_int(_dtype(x1)):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


def bitwise_left_shift(x1, x2, /):
  """Elementwise ``x1 << x2`` (same as ``left_shift``)."""
  return left_shift(x1, x2)


def bitwise_right_shift(x1, x2, /):
  """Elementwise ``x1 >> x2`` (same as ``right_shift``)."""
  return right_shift(x1, x2)


def bitwise_count(x, /):
  """Elementwise number of set bits in ``|x|``, as uint8."""
  x, = _args_numeric("bitwise_count", x)
  _check_bitwise("bitwise_count", x)
  magnitude = x if dtypes.is_unsigned_int(_dtype(x)) else lax.abs(x)
  return lax.convert_element_type(lax.population_count(magnitude), dtypes.uint8)


# --- comparisons -------------------------------------------------------------------------

def equal(x, y, /):
  """Elementwise ``x == y``."""
  try:
    return lax.eq(*_args("equal", x, y))
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "equal", x, y)


def not_equal(x, y, /):
  """Elementwise ``x != y``."""
  try:
    return lax.ne(*_args("not_equal", x, y))
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "not_equal", x, y)


def _ordered_compare(lax_op, x, y):
  if dtypes.is_complex(_dtype(x)):
    # Complex numbers are ordered lexicographically (real part, then imaginary part).
    return lax.select(*(_broadcast_all(lax.eq(lax.real(x), lax.real(y)),
                                       lax_op(lax.imag(x), lax.imag(y)),
                                       lax_op(lax.real(x), lax.real(y)))))
  return lax_op(x, y)


def _broadcast_all(*args):
  shape = broadcast_shapes(*(get_aval(a).shape for a in args))
  return [broadcast_to_shape(a, shape) for a in args]


def less(x, y, /):
  """Elementwise ``x < y``."""
  return _ordered_compare(lax.lt, *_args("less", x, y))


def less_equal(x, y, /):
  """Elementwise ``x <= y``."""
  return _ordered_compare(lax.le, *_args("less_equal", x, y))


def greater(x, y, /):
  """Elementwise ``x > y``."""
  return _ordered_compare(lax.gt, *_args("greater", x, y))


def greater_equal(x, y, /):
  """Elementwise ``x >= y``."""
  return _ordered_compare(lax.ge, *_args("greater_equal", x, y))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Elementwise ``|a - b| <= atol + rtol * |b|`` (infinities must be equal)."""
  if dtypes.extended_dtype_of(a) is not None or dtypes.extended_dtype_of(b) is not None:
    return equal(a, b)  # keys have no tolerance: close means equal (as JAX)
  a, b = _args("isclose", a, b)
  if not dtypes.is_inexact(_dtype(a)):
    a, b = promote_dtypes_inexact(a, b)
  tol_dtype = _real_dtype_of(_dtype(a))
  rtol, atol = (lax.convert_element_type(t, tol_dtype) for t in (rtol, atol))
  # In JAX's order (its jaxprs show the NaN test even when ``equal_nan`` is off).
  both_nan = lax.bitwise_and(isnan(a), isnan(b))
  finite = isfinite(b)
  in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(finite, in_range))
  return lax.bitwise_or(out, both_nan) if equal_nan else out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Whether every element of ``a`` is close to ``b`` (a 0-d bool array)."""
  if dtypes.extended_dtype_of(a) is None and dtypes.extended_dtype_of(b) is None:
    check_arraylike("allclose", a, b)  # typed keys are no numbers, but isclose takes them
  close = isclose(a, b, rtol, atol, equal_nan)
  ndim = get_aval(close).ndim
  if ndim == 0:
    return _asarray(close)
  return lax.reduce_and(close, tuple(range(ndim)))


# --- complex numbers ---------------------------------------------------------------------

def real(val, /):
  """Elementwise real part (real inputs pass unchanged)."""
  val, = _arraylike("real", val)
  return lax.real(val) if dtypes.is_complex(_dtype(val)) else _asarray(val)


def imag(val, /):
  """Elementwise imaginary part (zeros for real inputs)."""
  val, = _arraylike("imag", val)
  if dtypes.is_complex(_dtype(val)):
    return lax.imag(val)
  aval = get_aval(val)
  zero = _const(val, 0)
  if aval.weak_type and dtypes.python_scalar_dtype(zero) == aval.dtype:
    # Broadcasting a Python scalar keeps the result weak, like the input.
    return lax.broadcast_in_dim(zero, aval.shape, ())
  return _full_like(val, 0)


def conjugate(x, /):
  """Elementwise complex conjugate (real inputs pass unchanged)."""
  x, = _arraylike("conjugate", x)
  return lax.conj(x) if dtypes.is_complex(_dtype(x)) else _asarray(x)


def conj(x, /):
  """Elementwise complex conjugate (same as ``conjugate``)."""
  return conjugate(x)


def angle(z, deg=False):
  """Elementwise argument (phase) of ``z``, in radians or, with ``deg``, degrees."""
  z, = _arraylike("angle", z)
  re, im = real(z), imag(z)
  # As in JAX: integers, and real 0-d floats too, give a (strong) default-float result.
  if not dtypes.is_inexact(_dtype(re)) or (dtypes.is_float(_dtype(z))
                                           and get_aval(z).ndim == 0):
    dtype = dtypes.default_float_dtype()
    re, im = (lax.convert_element_type(p, dtype) for p in (re, im))
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


# --- selection ---------------------------------------------------------------------------

def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """``where(c, x, y)``: elementwise ``x if c else y``, all three broadcast together.

  ``where(c)`` gives the indices of the non-zero elements of ``c`` (NumPy's ``nonzero``),
  padded or cut to ``size`` when it is given. Its result shape depends on the values, so
  ``c`` must be concrete (not traced).
  """
  if x is None and y is None:
    try:
      check_arraylike("where", condition)
    except TypeError:  # typed keys: their own implementation (which refuses them here)
      return _refused("hlox.numpy", "where", condition, size=size, fill_value=fill_value)
    return _nonzero(condition, size=size, fill_value=fill_value)
  if x is None or y is None:
    raise ValueError("where: give both x and y, or neither (for the indices of the "
                     f"non-zero elements), got x={x!r} and y={y!r}")
  if size is not None or fill_value is not None:
    raise ValueError("where: size and fill_value only apply to the one-argument form")
  try:
    condition, x, y = _arraylike("where", condition, x, y)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "where", condition, x, y, size=size, fill_value=fill_value)
  return _where(condition, x, y)


def _nonzero(condition, *, size=None, fill_value=None):
  """The one-argument ``where``, computed with NumPy on the concrete value."""
  condition = ensure_array(condition)
  if isinstance(condition, Tracer) and size is not None:
    # A static size makes the result shape known: compute on the device (works under jit).
    return _nonzero_sized(condition, size, fill_value)
  if isinstance(condition, Tracer):
    value = condition.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          condition, "the one-argument form of jnp.where (nonzero) has a result shape that "
          "depends on the values; it needs a concrete argument")
    condition = value
  value = np.asarray(condition)
  if value.ndim == 0:
    raise ValueError("where: the one-argument form needs an array of at least 1 dimension "
                     "(use jnp.atleast_1d)")
  indices = np.nonzero(value)
  if size is not None:
    size = operator.index(size)
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * value.ndim
    if len(fills) != value.ndim:
      raise ValueError(f"where: fill_value must be a scalar or a tuple of {value.ndim} "
                       f"values, got {fill_value!r}")
    padded = []
    for idx, fill in zip(indices, fills):
      idx = idx[:size]
      pad = np.full(size - len(idx), 0 if fill is None else fill, dtype=idx.dtype)
      padded.append(np.concatenate([idx, pad]))
    indices = tuple(padded)
  int_dtype = dtypes.default_int_dtype()
  return tuple(device_put(np.asarray(idx, dtype=int_dtype)) for idx in indices)


# The on-device (sized) nonzero lives here, beside the one-argument ``where`` that needs it:
# ``searching.nonzero`` and ``sorting.unique`` import it from this room, never the reverse.

def _nonzero_flat_positions(mask_flat, size):
  """Positions of the True entries of a 1-d bool array, in order, the first ``size`` of them
  (then filled with n, the length), and the number of True entries."""
  n = get_aval(mask_flat).shape[0]
  idx_dtype = util.index_dtype()
  iota = lax.iota(idx_dtype, n)
  # A stable sort on "is zero" brings the nonzero positions to the front, in order.
  key = lax.convert_element_type(lax.bitwise_not(mask_flat), np.int8)
  _, pos = lax.sort((key, iota), num_keys=1)
  if size > n:
    pos = shapes.concatenate([pos, creation.full((size - n,), n, idx_dtype)])
  pos = pos[:size]
  count = reductions.sum(mask_flat, dtype=idx_dtype)
  valid = lax.lt(lax.iota(idx_dtype, size), lax.broadcast_in_dim(count, (size,), ()))
  return pos, valid


def _nonzero_sized(a, size, fill_value):
  """``nonzero`` with a static result length: works on traced values."""
  a = creation.asarray(a)
  shape = get_aval(a).shape
  if not shape:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(x) "
                     "instead.")
  size = operator.index(size)
  mask = shapes.ravel(a != 0) if a.dtype != np.bool_ else shapes.ravel(a)
  idx_dtype = util.index_dtype()
  if get_aval(mask).shape[0] == 0:
    pos = creation.zeros((size,), idx_dtype)
    valid = creation.zeros((size,), bool)
  else:
    pos, valid = _nonzero_flat_positions(mask, size)
    pos = minimum(pos, get_aval(mask).shape[0] - 1)
  out = []
  stride = math.prod(shape)
  fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
  if len(fills) != len(shape):
    raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {len(shape)}; "
                     f"got {fill_value}")
  for d, fill in zip(shape, fills):
    # An empty array has no nonzero entries: its coordinates are all fill values.
    stride = stride // d if d else 1
    coord = (pos // stride) % d if d else pos
    fill = 0 if fill is None else fill
    out.append(where(valid, coord, creation.asarray(fill).astype(idx_dtype)))
  return tuple(out)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):
  """Limit values to ``[min, max]``; either bound may be None (no limit on that side).

  The NumPy spellings ``a``, ``a_min`` and ``a_max`` are accepted too.
  """
  if a is not None:
    if arr is not None:
      raise TypeError("clip: give the array once, positionally or as `a`")
    arr = a
  if a_min is not None:
    if min is not None:
      raise TypeError("clip: give the lower bound once, as `min` or `a_min`")
    min = a_min
  if a_max is not None:
    if max is not None:
      raise TypeError("clip: give the upper bound once, as `max` or `a_max`")
    max = a_max
  if arr is None:
    raise ValueError("clip: no input array was given")
  args = [v for v in (arr, min, max) if v is not None]
  args = _arraylike("clip", *args)
  if any(dtypes.is_complex(_dtype(v)) for v in args):
    raise ValueError("Clip received a complex value either through the input or the min/max "
                     "keywords. Complex values have no ordering and cannot be clipped. Please "
                     "convert to a real value or array by taking the real or imaginary "
                     "components via jax.numpy.real/imag respectively.")
  arr = args[0]
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return _asarray(arr)


# --- eager calls as one executable ---------------------------------------------------------
# As JAX's jit-wrapped ufuncs: outside any trace each call runs one cached executable for its
# argument signature (whatever the promotion and broadcasting code above does), with Python
# scalars as weak-typed arguments; traced, the body is inlined. ``power`` is left out: a
# concrete integer exponent takes ``integer_pow`` (as in JAX), which a trace would not see.
_STATIC_ARGNAMES = {
    "round": ("decimals", "out"), "around": ("decimals", "out"),
    "nan_to_num": ("copy",), "isclose": ("equal_nan",), "allclose": ("equal_nan",),
    "angle": ("deg",), "where": ("size",),
}
# The ones JAX jits without ``inline=True``: a nested ``jit`` equation in traced programs.
_STAGED = ("clip", "round", "around", "nan_to_num", "isclose", "allclose", "fmin", "fmax",
           "trunc", "angle", "arccosh", "bitwise_count", "rint", "copysign", "floor_divide",
           "divmod", "signbit", "remainder", "fmod", "modf", "isinf", "heaviside", "hypot",
           "sinc")
util.fuse_functions(globals(), __all__, _STATIC_ARGNAMES, skip=("power", "pow", "positive"),
                    staged=_STAGED)
# The three-argument ``where`` after its checks (every ``where`` in the package goes through
# it), staged as JAX's ``_where``: in ``util``, where it lives (``util`` itself is imported
# before ``hlox.api`` can be), for every module that calls ``util._where``.
util.fuse_functions(vars(util), ["_where"], {}, staged=("_where",))
_where = util._where
