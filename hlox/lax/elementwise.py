"""Elementwise primitives: arithmetic, transcendental, special functions, complex parts,
comparison, bitwise, select/clamp, conversions and the identity ``copy``.

Each primitive is defined with its rules right below it. Operands broadcast when they are
scalars or have equal ranks with size-1 dimensions; they must share a dtype (``hlox.numpy``
promotes). For convenience a Python scalar next to array operands takes their dtype, but
only when its kind fits (an ``int`` may become a float, a ``float`` never an integer), so a
scalar can never be silently truncated.
"""
from __future__ import annotations

import builtins
import enum
import operator

import numpy as np

from hlox import tree_util
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import xla
from hlox.lax.utils import (any_kinds, binop, bool_or_int, broadcasting_shape_rule,
                            float_kinds, int_kinds, nary_lowering, number_kinds, real_float,
                            shape_str, standard_primitive, unop)
from hlox.runtime.array import device_put

from jaxlib.mlir.dialects import chlo, stablehlo as hlo

__all__ = [
    # arithmetic
    "add", "sub", "mul", "div", "rem", "pow", "integer_pow", "max", "min", "neg", "sign",
    "abs", "square", "reciprocal", "nextafter",
    # rounding
    "floor", "ceil", "round", "RoundingMethod", "is_finite",
    # exponential, logarithm, roots
    "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt", "tanh", "logistic",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh",
    "atanh",
    # special functions
    "erf", "erfc", "erf_inv", "lgamma", "digamma",
    # complex numbers
    "real", "imag", "conj", "complex",
    # comparisons
    "eq", "ne", "lt", "le", "gt", "ge",
    # bitwise
    "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "population_count", "clz",
    # selection
    "select_n", "select", "clamp",
    # conversions and identities
    "convert_element_type", "bitcast_convert_type", "reduce_precision", "copy",
    "stop_gradient",
    # primitives
    "add_p", "sub_p", "mul_p", "div_p", "rem_p", "pow_p", "integer_pow_p", "max_p", "min_p",
    "neg_p", "sign_p", "abs_p", "square_p", "nextafter_p", "floor_p", "ceil_p", "round_p",
    "is_finite_p", "exp_p", "exp2_p", "log_p", "log1p_p", "expm1_p", "sqrt_p", "rsqrt_p",
    "cbrt_p", "tanh_p", "logistic_p", "sin_p", "cos_p", "tan_p", "asin_p", "acos_p",
    "atan_p", "atan2_p", "sinh_p", "cosh_p", "asinh_p", "acosh_p", "atanh_p", "erf_p",
    "erfc_p", "erf_inv_p", "lgamma_p", "digamma_p", "real_p", "imag_p", "conj_p",
    "complex_p", "eq_p", "ne_p", "lt_p", "le_p", "gt_p", "ge_p", "not_p", "and_p", "or_p",
    "xor_p", "shift_left_p", "shift_right_logical_p", "shift_right_arithmetic_p",
    "population_count_p", "clz_p", "select_n_p", "clamp_p", "convert_element_type_p",
    "bitcast_convert_type_p", "reduce_precision_p", "copy_p",
]

# This module defines ``abs``, ``max``, ``min``, ``round``, ``pow`` and ``complex``: inside it
# the Python builtins are always spelled ``builtins.x``.
_PY_SCALARS = (bool, int, float, builtins.complex)


# --- operand handling --------------------------------------------------------------------

def _operands(name, *args):
  """Python scalars among array operands take the arrays' dtype (they are weakly typed).

  A scalar whose Python type already maps to that dtype stays a Python scalar (a weak
  literal). Otherwise it is converted when its kind fits the dtype; a converted scalar stays
  weak when every array operand is weak. A scalar that does not fit (``1.5`` next to an
  int32 array) is left alone, and the dtype rule then reports the mismatch.
  """
  strong = [get_aval(a) for a in args if type(a) not in _PY_SCALARS]
  if not strong or len(strong) == len(args):
    return args
  dtype = strong[0].dtype
  weak = all(a.weak_type for a in strong)
  return tuple(_scalar_as(name, a, dtype, weak) if type(a) in _PY_SCALARS else a
               for a in args)


def _scalar_fits(x, dtype) -> bool:
  t = type(x)
  if t is bool:
    return dtype == dtypes.bool_
  if t is int:
    return dtypes.is_int(dtype) or dtypes.is_inexact(dtype)
  if t is float:
    return dtypes.is_inexact(dtype)
  return dtypes.is_complex(dtype)


def _scalar_as(name, x, dtype, weak):
  if dtypes.python_scalar_dtype(x) == dtype or not _scalar_fits(x, dtype):
    return x
  if type(x) is int and dtypes.is_int(dtype):
    info = dtypes.iinfo(dtype)
    if not info.min <= x <= info.max:
      raise OverflowError(f"{name}: Python int {x} is out of bounds for {dtype.name}")
  value = np.asarray(x, dtype=dtype)
  if weak:
    # A weak-typed value of a dtype no Python scalar maps to: a weak 0-d Array (under a trace
    # it becomes a weak literal).
    return device_put(value, weak_type=True)
  return value[()]


def _check_accuracy(name, accuracy):
  if accuracy is not None:
    raise NotImplementedError(f"lax.{name}: the accuracy argument is not supported yet")


def _real_dtype(dtype):
  """The component dtype of a complex dtype (other dtypes map to themselves)."""
  dtype = np.dtype(dtype)
  return {dtypes.complex64: dtypes.float32,
          dtypes.complex128: dtypes.float64}.get(dtype, dtype)


def _complex_dtype(name):
  """Result dtype of ``complex``/``conj``: float32 -> complex64, float64 -> complex128."""
  def rule(dtype):
    dtype = np.dtype(dtype)
    if dtypes.is_complex(dtype):
      return dtype
    if dtype == dtypes.float32:
      return dtypes.complex64
    if dtype == dtypes.float64:
      return dtypes.complex128
    raise TypeError(f"{name} does not accept dtype {dtype.name}; accepted: float32, "
                    "float64 and complex types")
  return rule


def _ones(aval):
  return xla.full_like_aval(1, aval)


def _zeros(aval):
  return xla.full_like_aval(0, aval)


# --- arithmetic --------------------------------------------------------------------------

add_p = binop(number_kinds, "add")
xla.register_lowering(add_p, nary_lowering(hlo.add))

def add(x, y):
  """Elementwise ``x + y``."""
  return add_p.bind(*_operands("add", x, y))


sub_p = binop(number_kinds, "sub")
xla.register_lowering(sub_p, nary_lowering(hlo.subtract))

def sub(x, y):
  """Elementwise ``x - y``."""
  return sub_p.bind(*_operands("sub", x, y))


mul_p = binop(number_kinds, "mul")
xla.register_lowering(mul_p, nary_lowering(hlo.multiply))

def mul(x, y):
  """Elementwise ``x * y``."""
  return mul_p.bind(*_operands("mul", x, y))


div_p = binop(number_kinds, "div")
xla.register_lowering(div_p, nary_lowering(hlo.divide))

def div(x, y):
  """Elementwise ``x / y``; integer division rounds toward zero (as in C)."""
  return div_p.bind(*_operands("div", x, y))


rem_p = binop(("int", "float"), "rem")
xla.register_lowering(rem_p, nary_lowering(hlo.remainder))

def rem(x, y):
  """Elementwise remainder of ``x / y`` with the sign of the dividend ``x`` (C's ``fmod``)."""
  return rem_p.bind(*_operands("rem", x, y))


def _pow_dtype_rule(x, y):
  if not (dtypes.is_inexact(x.dtype)):
    raise TypeError(f"pow: the base must have a float or complex dtype, got "
                    f"{shape_str([x, y])}")
  if dtypes.is_int(y.dtype) or y.dtype == x.dtype:
    return x.dtype
  raise TypeError("pow: the exponent must be an integer or have the base's dtype, got "
                  f"{shape_str([x, y])}")

pow_p = standard_primitive(lambda x, y: broadcasting_shape_rule("pow", x, y), _pow_dtype_rule,
                           "pow")

def _pow_lowering(ctx, x, y):
  x_aval, y_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  if y_aval.dtype != x_aval.dtype:
    # An integer exponent: stablehlo.power wants both operands of one type.
    new_y_aval = y_aval.update(dtype=x_aval.dtype)
    y = xla.convert_hlo(y, y_aval, new_y_aval)
    y_aval = new_y_aval
  x, y = xla.multi_broadcast((x, y), (x_aval, y_aval), aval_out.shape)
  return hlo.power(x, y)

xla.register_lowering(pow_p, _pow_lowering)

def pow(x, y):
  """Elementwise ``x ** y`` for a float or complex base; ``y`` is an integer array or has
  ``x``'s dtype."""
  return pow_p.bind(*_operands("pow", x, y))


def _integer_pow_shape_rule(x, *, y):
  return x.shape

def _integer_pow_dtype_rule(x, *, y):
  if not (dtypes.is_int(x.dtype) or dtypes.is_inexact(x.dtype)):
    raise TypeError(f"integer_pow does not accept dtype {x.dtype.name}; accepted: int, "
                    "float, complex types")
  if y < 0 and dtypes.is_int(x.dtype):
    raise TypeError(f"integer_pow: integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y})")
  return x.dtype


integer_pow_p = standard_primitive(_integer_pow_shape_rule, _integer_pow_dtype_rule,
                                   "integer_pow")

def _integer_pow_lowering(ctx, x, *, y):
  aval = ctx.avals_in[0]
  if y == 0:
    return _ones(aval)
  # Square-and-multiply: log2(|y|) squarings instead of |y| - 1 multiplications.
  acc, base, n = None, x, builtins.abs(y)
  while n:
    if n & 1:
      acc = base if acc is None else hlo.multiply(acc, base)
    n >>= 1
    if n:
      base = hlo.multiply(base, base)
  return hlo.divide(_ones(aval), acc) if y < 0 else acc

xla.register_lowering(integer_pow_p, _integer_pow_lowering)

def integer_pow(x, y: int):
  """Elementwise ``x ** y`` for a static Python integer ``y`` (negative only for inexact
  ``x``)."""
  try:
    y = operator.index(y)
  except TypeError:
    raise TypeError(f"integer_pow: the exponent must be a static Python integer, got "
                    f"{y!r}") from None
  return integer_pow_p.bind(x, y=y)


def _minmax_lowering(hlo_op, direction):
  def rule(ctx, x, y):
    aval_out = ctx.avals_out[0]
    x, y = xla.multi_broadcast((x, y), ctx.avals_in, aval_out.shape)
    if not dtypes.is_complex(aval_out.dtype):
      return hlo_op(x, y)
    # Complex numbers are ordered lexicographically: real part first, then imaginary part.
    rx, ry = hlo.real(x), hlo.real(y)
    part_dtype = _real_dtype(aval_out.dtype)
    real_eq = xla.compare_hlo(rx, ry, "EQ", part_dtype)
    real_cmp = xla.compare_hlo(rx, ry, direction, part_dtype)
    imag_cmp = xla.compare_hlo(hlo.imag(x), hlo.imag(y), direction, part_dtype)
    return hlo.select(hlo.select(real_eq, imag_cmp, real_cmp), x, y)
  return rule


max_p = binop(any_kinds, "max")
xla.register_lowering(max_p, _minmax_lowering(hlo.maximum, "GT"))

def max(x, y):
  """Elementwise maximum (NaN propagates; complex numbers compare lexicographically)."""
  return max_p.bind(*_operands("max", x, y))


min_p = binop(any_kinds, "min")
xla.register_lowering(min_p, _minmax_lowering(hlo.minimum, "LT"))

def min(x, y):
  """Elementwise minimum (NaN propagates; complex numbers compare lexicographically)."""
  return min_p.bind(*_operands("min", x, y))


neg_p = unop(number_kinds, "neg")
xla.register_lowering(neg_p, nary_lowering(hlo.negate))

def neg(x):
  """Elementwise ``-x``."""
  return neg_p.bind(x)


sign_p = unop(number_kinds, "sign")

def _sign_lowering(ctx, x):
  aval = ctx.avals_in[0]
  if dtypes.is_unsigned_int(aval.dtype):
    # stablehlo.sign is defined for signed and floating types only.
    is_zero = xla.compare_hlo(x, _zeros(aval), "EQ", aval.dtype)
    return hlo.select(is_zero, _zeros(aval), _ones(aval))
  return hlo.sign(x)

xla.register_lowering(sign_p, _sign_lowering)

def sign(x):
  """Elementwise sign: -1, 0 or 1 (``x / |x|`` for complex ``x``; NaN stays NaN)."""
  return sign_p.bind(x)


abs_p = unop(("signed", "float", "complex"), "abs", result_dtype=_real_dtype)
xla.register_lowering(abs_p, nary_lowering(hlo.abs))

def abs(x):
  """Elementwise absolute value (the modulus, of the component dtype, for complex ``x``)."""
  return abs_p.bind(x)


square_p = unop(number_kinds, "square")

def _square_lowering(ctx, x):
  if dtypes.is_complex(ctx.avals_in[0].dtype):
    return chlo.square(x)  # more accurate than x * x near |re| == |im|
  return hlo.multiply(x, x)

xla.register_lowering(square_p, _square_lowering)

def square(x):
  """Elementwise ``x * x``."""
  return square_p.bind(x)


def reciprocal(x):
  """Elementwise ``1 / x`` (``integer_pow(x, -1)``)."""
  return integer_pow(x, -1)


nextafter_p = binop(real_float, "nextafter")
xla.register_lowering(nextafter_p, nary_lowering(chlo.next_after))

def nextafter(x1, x2):
  """The next representable value after ``x1`` in the direction of ``x2``."""
  return nextafter_p.bind(*_operands("nextafter", x1, x2))


# --- rounding ----------------------------------------------------------------------------

floor_p = unop(real_float, "floor")
xla.register_lowering(floor_p, nary_lowering(hlo.floor))

def floor(x):
  """Elementwise round toward negative infinity."""
  return floor_p.bind(x)


ceil_p = unop(real_float, "ceil")
xla.register_lowering(ceil_p, nary_lowering(hlo.ceil))

def ceil(x):
  """Elementwise round toward positive infinity."""
  return ceil_p.bind(x)


class RoundingMethod(enum.IntEnum):
  """How ``lax.round`` breaks ties between two integers."""
  AWAY_FROM_ZERO = 0   # 0.5 -> 1, -0.5 -> -1
  TO_NEAREST_EVEN = 1  # 0.5 -> 0, 1.5 -> 2 (banker's rounding, NumPy's choice)


round_p = unop(real_float, "round")

def _round_lowering(ctx, x, *, rounding_method):
  if rounding_method == RoundingMethod.AWAY_FROM_ZERO:
    return hlo.round_nearest_afz(x)
  return hlo.round_nearest_even(x)

xla.register_lowering(round_p, _round_lowering)

def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Elementwise round to the nearest integer, ties broken by ``rounding_method``."""
  try:
    rounding_method = RoundingMethod(rounding_method)
  except ValueError:
    raise ValueError(f"round: unknown rounding_method {rounding_method!r}; use "
                     "lax.RoundingMethod.AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1)") from None
  return round_p.bind(x, rounding_method=rounding_method)


is_finite_p = unop(real_float, "is_finite", result_dtype=lambda d: dtypes.bool_)
xla.register_lowering(is_finite_p, nary_lowering(hlo.is_finite))

def is_finite(x):
  """Elementwise test for neither infinite nor NaN."""
  return is_finite_p.bind(x)


# --- exponential, logarithm, roots -------------------------------------------------------

exp_p = unop(float_kinds, "exp")
xla.register_lowering(exp_p, nary_lowering(hlo.exponential))

def exp(x, *, accuracy=None):
  """Elementwise ``e ** x``."""
  _check_accuracy("exp", accuracy)
  return exp_p.bind(x)


exp2_p = unop(float_kinds, "exp2")

def _exp2_lowering(ctx, x):
  # stablehlo has no exp2; pow(2, x) is exact for integral x, unlike exp(x * log(2)).
  two = xla.full_like_aval(2, ctx.avals_in[0])
  return hlo.power(two, x)

xla.register_lowering(exp2_p, _exp2_lowering)

def exp2(x, *, accuracy=None):
  """Elementwise ``2 ** x``."""
  _check_accuracy("exp2", accuracy)
  return exp2_p.bind(x)


log_p = unop(float_kinds, "log")
xla.register_lowering(log_p, nary_lowering(hlo.log))

def log(x, *, accuracy=None):
  """Elementwise natural logarithm."""
  _check_accuracy("log", accuracy)
  return log_p.bind(x)


log1p_p = unop(float_kinds, "log1p")
xla.register_lowering(log1p_p, nary_lowering(hlo.log_plus_one))

def log1p(x, *, accuracy=None):
  """Elementwise ``log(1 + x)``, accurate for small ``x``."""
  _check_accuracy("log1p", accuracy)
  return log1p_p.bind(x)


expm1_p = unop(float_kinds, "expm1")
xla.register_lowering(expm1_p, nary_lowering(hlo.exponential_minus_one))

def expm1(x, *, accuracy=None):
  """Elementwise ``exp(x) - 1``, accurate for small ``x``."""
  _check_accuracy("expm1", accuracy)
  return expm1_p.bind(x)


sqrt_p = unop(float_kinds, "sqrt")
xla.register_lowering(sqrt_p, nary_lowering(hlo.sqrt))

def sqrt(x, *, accuracy=None):
  """Elementwise square root."""
  _check_accuracy("sqrt", accuracy)
  return sqrt_p.bind(x)


rsqrt_p = unop(float_kinds, "rsqrt")
xla.register_lowering(rsqrt_p, nary_lowering(hlo.rsqrt))

def rsqrt(x, *, accuracy=None):
  """Elementwise ``1 / sqrt(x)``."""
  _check_accuracy("rsqrt", accuracy)
  return rsqrt_p.bind(x)


cbrt_p = unop(real_float, "cbrt")
xla.register_lowering(cbrt_p, nary_lowering(hlo.cbrt))

def cbrt(x, *, accuracy=None):
  """Elementwise real cube root (negative for negative ``x``)."""
  _check_accuracy("cbrt", accuracy)
  return cbrt_p.bind(x)


tanh_p = unop(float_kinds, "tanh")
xla.register_lowering(tanh_p, nary_lowering(hlo.tanh))

def tanh(x, *, accuracy=None):
  """Elementwise hyperbolic tangent."""
  _check_accuracy("tanh", accuracy)
  return tanh_p.bind(x)


logistic_p = unop(float_kinds, "logistic")
xla.register_lowering(logistic_p, nary_lowering(hlo.logistic))

def logistic(x, *, accuracy=None):
  """Elementwise logistic sigmoid ``1 / (1 + exp(-x))``."""
  _check_accuracy("logistic", accuracy)
  return logistic_p.bind(x)


# --- trigonometric and hyperbolic --------------------------------------------------------

sin_p = unop(float_kinds, "sin")
xla.register_lowering(sin_p, nary_lowering(hlo.sine))

def sin(x, *, accuracy=None):
  """Elementwise sine."""
  _check_accuracy("sin", accuracy)
  return sin_p.bind(x)


cos_p = unop(float_kinds, "cos")
xla.register_lowering(cos_p, nary_lowering(hlo.cosine))

def cos(x, *, accuracy=None):
  """Elementwise cosine."""
  _check_accuracy("cos", accuracy)
  return cos_p.bind(x)


tan_p = unop(float_kinds, "tan")
xla.register_lowering(tan_p, nary_lowering(hlo.tan))

def tan(x, *, accuracy=None):
  """Elementwise tangent."""
  _check_accuracy("tan", accuracy)
  return tan_p.bind(x)


# StableHLO has no inverse trigonometric or (other) hyperbolic functions: CHLO's
# decompositions provide them.
asin_p = unop(float_kinds, "asin")
xla.register_lowering(asin_p, nary_lowering(chlo.asin))

def asin(x):
  """Elementwise arc sine."""
  return asin_p.bind(x)


acos_p = unop(float_kinds, "acos")
xla.register_lowering(acos_p, nary_lowering(chlo.acos))

def acos(x):
  """Elementwise arc cosine."""
  return acos_p.bind(x)


atan_p = unop(float_kinds, "atan")
xla.register_lowering(atan_p, nary_lowering(chlo.atan))

def atan(x):
  """Elementwise arc tangent."""
  return atan_p.bind(x)


atan2_p = binop(float_kinds, "atan2")
xla.register_lowering(atan2_p, nary_lowering(hlo.atan2))

def atan2(x, y):
  """Elementwise arc tangent of ``x / y``, using both signs to choose the quadrant."""
  return atan2_p.bind(*_operands("atan2", x, y))


sinh_p = unop(float_kinds, "sinh")
xla.register_lowering(sinh_p, nary_lowering(chlo.sinh))

def sinh(x):
  """Elementwise hyperbolic sine."""
  return sinh_p.bind(x)


cosh_p = unop(float_kinds, "cosh")
xla.register_lowering(cosh_p, nary_lowering(chlo.cosh))

def cosh(x):
  """Elementwise hyperbolic cosine."""
  return cosh_p.bind(x)


asinh_p = unop(float_kinds, "asinh")
xla.register_lowering(asinh_p, nary_lowering(chlo.asinh))

def asinh(x):
  """Elementwise inverse hyperbolic sine."""
  return asinh_p.bind(x)


acosh_p = unop(float_kinds, "acosh")
xla.register_lowering(acosh_p, nary_lowering(chlo.acosh))

def acosh(x):
  """Elementwise inverse hyperbolic cosine."""
  return acosh_p.bind(x)


atanh_p = unop(float_kinds, "atanh")
xla.register_lowering(atanh_p, nary_lowering(chlo.atanh))

def atanh(x):
  """Elementwise inverse hyperbolic tangent."""
  return atanh_p.bind(x)


# --- special functions -------------------------------------------------------------------

erf_p = unop(real_float, "erf")
xla.register_lowering(erf_p, nary_lowering(chlo.erf))

def erf(x):
  """Elementwise error function."""
  return erf_p.bind(x)


erfc_p = unop(real_float, "erfc")
xla.register_lowering(erfc_p, nary_lowering(chlo.erfc))

def erfc(x):
  """Elementwise complementary error function ``1 - erf(x)``."""
  return erfc_p.bind(x)


erf_inv_p = unop(real_float, "erf_inv")
xla.register_lowering(erf_inv_p, nary_lowering(chlo.erf_inv))

def erf_inv(x):
  """Elementwise inverse error function (on ``[-1, 1]``)."""
  return erf_inv_p.bind(x)


lgamma_p = unop(real_float, "lgamma")
xla.register_lowering(lgamma_p, nary_lowering(chlo.lgamma))

def lgamma(x):
  """Elementwise ``log(|gamma(x)|)``."""
  return lgamma_p.bind(x)


digamma_p = unop(real_float, "digamma")
xla.register_lowering(digamma_p, nary_lowering(chlo.digamma))

def digamma(x):
  """Elementwise digamma function, the derivative of ``lgamma``."""
  return digamma_p.bind(x)


# --- complex numbers ---------------------------------------------------------------------

real_p = unop(("complex",), "real", result_dtype=_real_dtype)
xla.register_lowering(real_p, nary_lowering(hlo.real))

def real(x):
  """Elementwise real part of a complex array."""
  return real_p.bind(x)


imag_p = unop(("complex",), "imag", result_dtype=_real_dtype)
xla.register_lowering(imag_p, nary_lowering(hlo.imag))

def imag(x):
  """Elementwise imaginary part of a complex array."""
  return imag_p.bind(x)


complex_p = binop(real_float, "complex", result_dtype=_complex_dtype("complex"))
xla.register_lowering(complex_p, nary_lowering(hlo.complex))

def complex(x, y):
  """Elementwise ``x + 1j * y`` from float32 or float64 parts."""
  return complex_p.bind(*_operands("complex", x, y))


def _conj_shape_rule(x, *, input_dtype):
  return x.shape

def _conj_dtype_rule(x, *, input_dtype):
  if not (dtypes.is_float(x.dtype) or dtypes.is_complex(x.dtype)):
    raise TypeError(f"conj does not accept dtype {x.dtype.name}; accepted: float32, "
                    "float64 and complex types")
  return _complex_dtype("conj")(x.dtype)


# ``input_dtype`` records whether the operand was real, which the transpose rule needs.
conj_p = standard_primitive(_conj_shape_rule, _conj_dtype_rule, "conj")

def _conj_lowering(ctx, x, *, input_dtype):
  aval_in = ctx.avals_in[0]
  if dtypes.is_complex(aval_in.dtype):
    return hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))
  return hlo.complex(x, _zeros(aval_in))

xla.register_lowering(conj_p, _conj_lowering)

def conj(x):
  """Elementwise complex conjugate (a real float32/float64 operand becomes complex)."""
  return conj_p.bind(x, input_dtype=get_aval(x).dtype)


# --- comparisons -------------------------------------------------------------------------

def _compare_lowering(direction):
  def rule(ctx, x, y):
    x, y = xla.multi_broadcast((x, y), ctx.avals_in, ctx.avals_out[0].shape)
    return xla.compare_hlo(x, y, direction, ctx.avals_in[0].dtype)
  return rule


def _to_bool(dtype):
  return dtypes.bool_


def _comparison(name, direction, kinds=any_kinds):
  prim = binop(kinds, name, result_dtype=_to_bool)
  xla.register_lowering(prim, _compare_lowering(direction))
  return prim


eq_p = _comparison("eq", "EQ")
ne_p = _comparison("ne", "NE")
lt_p = _comparison("lt", "LT", ("bool", "int", "float"))
le_p = _comparison("le", "LE", ("bool", "int", "float"))
gt_p = _comparison("gt", "GT", ("bool", "int", "float"))
ge_p = _comparison("ge", "GE", ("bool", "int", "float"))

def eq(x, y):
  """Elementwise ``x == y``."""
  return eq_p.bind(*_operands("eq", x, y))

def ne(x, y):
  """Elementwise ``x != y``."""
  return ne_p.bind(*_operands("ne", x, y))

def lt(x, y):
  """Elementwise ``x < y``."""
  return lt_p.bind(*_operands("lt", x, y))

def le(x, y):
  """Elementwise ``x <= y``."""
  return le_p.bind(*_operands("le", x, y))

def gt(x, y):
  """Elementwise ``x > y``."""
  return gt_p.bind(*_operands("gt", x, y))

def ge(x, y):
  """Elementwise ``x >= y``."""
  return ge_p.bind(*_operands("ge", x, y))


# --- bitwise -----------------------------------------------------------------------------

not_p = unop(bool_or_int, "not")
xla.register_lowering(not_p, nary_lowering(hlo.not_))

def bitwise_not(x):
  """Elementwise NOT: logical for bool, bitwise (``~x``) for integers."""
  return not_p.bind(x)


and_p = binop(bool_or_int, "and")
xla.register_lowering(and_p, nary_lowering(hlo.and_))

def bitwise_and(x, y):
  """Elementwise AND: logical for bool, bitwise for integers."""
  return and_p.bind(*_operands("and", x, y))


or_p = binop(bool_or_int, "or")
xla.register_lowering(or_p, nary_lowering(hlo.or_))

def bitwise_or(x, y):
  """Elementwise OR: logical for bool, bitwise for integers."""
  return or_p.bind(*_operands("or", x, y))


xor_p = binop(bool_or_int, "xor")
xla.register_lowering(xor_p, nary_lowering(hlo.xor))

def bitwise_xor(x, y):
  """Elementwise XOR: logical for bool, bitwise for integers."""
  return xor_p.bind(*_operands("xor", x, y))


# Shifts by the bit width or more give 0 (or all sign bits for the arithmetic right shift).
shift_left_p = binop(int_kinds, "shift_left")
xla.register_lowering(shift_left_p, nary_lowering(hlo.shift_left))

def shift_left(x, y):
  """Elementwise ``x << y``."""
  return shift_left_p.bind(*_operands("shift_left", x, y))


shift_right_logical_p = binop(int_kinds, "shift_right_logical")
xla.register_lowering(shift_right_logical_p, nary_lowering(hlo.shift_right_logical))

def shift_right_logical(x, y):
  """Elementwise right shift filling with zeros (the bits of ``x`` read as unsigned)."""
  return shift_right_logical_p.bind(*_operands("shift_right_logical", x, y))


shift_right_arithmetic_p = binop(int_kinds, "shift_right_arithmetic")
xla.register_lowering(shift_right_arithmetic_p, nary_lowering(hlo.shift_right_arithmetic))

def shift_right_arithmetic(x, y):
  """Elementwise right shift filling with the sign bit."""
  return shift_right_arithmetic_p.bind(*_operands("shift_right_arithmetic", x, y))


population_count_p = unop(int_kinds, "population_count")
xla.register_lowering(population_count_p, nary_lowering(hlo.popcnt))

def population_count(x):
  """Elementwise number of set bits."""
  return population_count_p.bind(x)


clz_p = unop(int_kinds, "clz")
xla.register_lowering(clz_p, nary_lowering(hlo.count_leading_zeros))

def clz(x):
  """Elementwise number of leading zero bits."""
  return clz_p.bind(x)


# --- selection ---------------------------------------------------------------------------

def _select_n_shape_rule(which, *cases):
  if not cases:
    raise TypeError("select_n needs at least one case")
  if any(c.shape != cases[0].shape for c in cases[1:]):
    raise TypeError(f"select_n: all cases must have the same shape, got "
                    f"{shape_str(cases)}")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select_n: `which` must be a scalar or have the cases' shape "
                    f"{cases[0].shape}, got {which.str_short()}")
  return cases[0].shape


def _select_n_dtype_rule(which, *cases):
  if not (which.dtype == dtypes.bool_ or dtypes.is_int(which.dtype)):
    raise TypeError(f"select_n: `which` must be a boolean or integer array, got "
                    f"{which.str_short()}")
  if which.dtype == dtypes.bool_ and len(cases) > 2:
    raise TypeError(f"select_n: a boolean `which` selects between at most 2 cases, got "
                    f"{len(cases)}")
  if any(c.dtype != cases[0].dtype for c in cases[1:]):
    raise TypeError(f"select_n: all cases must have the same dtype, got {shape_str(cases)}")
  return cases[0].dtype


def _select_n_weak_rule(which, *cases):
  return all(c.weak_type for c in cases)


select_n_p = standard_primitive(_select_n_shape_rule, _select_n_dtype_rule, "select_n",
                                weak_type_rule=_select_n_weak_rule)

def _select_n_lowering(ctx, which, *cases):
  which_aval = ctx.avals_in[0]
  aval_out = ctx.avals_out[0]
  if len(cases) == 1:
    return cases[0]
  if which_aval.dtype == dtypes.bool_:
    return hlo.select(which, cases[1], cases[0])  # a 0-d predicate picks whole arrays
  if which_aval.shape != aval_out.shape:
    # The comparisons below give the predicates: broadcast a scalar index to the cases'
    # shape once, rather than in each comparison.
    which_aval = aval_out.update(dtype=which_aval.dtype)
    which = xla.broadcast_in_dim(which, which_aval, ())

  def pick(offset, cases):
    # A balanced tree of selects: which < offset + mid chooses the lower half.
    if len(cases) == 1:
      return cases[0]
    mid = len(cases) // 2
    bound = xla.full_like_aval(offset + mid, which_aval)
    pred = xla.compare_hlo(which, bound, "LT", which_aval.dtype)
    return hlo.select(pred, pick(offset, cases[:mid]), pick(offset + mid, cases[mid:]))
  return pick(0, list(cases))

xla.register_lowering(select_n_p, _select_n_lowering)

def select_n(which, *cases):
  """Elementwise ``cases[which]``: ``which`` is bool (2 cases at most) or integer, scalar or
  of the cases' shape; out-of-range indices are undefined behaviour."""
  if not cases:
    raise ValueError("select_n() needs at least one case")
  return select_n_p.bind(which, *_operands("select_n", *cases))


def select(pred, on_true, on_false):
  """Elementwise ``on_true if pred else on_false`` (``pred`` is a bool array)."""
  return select_n(pred, on_false, on_true)


def _clamp_shape_rule(min, operand, max):
  for what, bound in (("min", min), ("max", max)):
    if bound.shape and bound.shape != operand.shape:
      raise TypeError(f"clamp: {what} must be a scalar or have the operand's shape "
                      f"{operand.shape}, got {bound.str_short()}")
  return operand.shape


def _clamp_dtype_rule(min, operand, max):
  if not (dtypes.is_int(operand.dtype) or dtypes.is_float(operand.dtype)
          or operand.dtype == dtypes.bool_):
    raise TypeError(f"clamp does not accept dtype {operand.dtype.name}")
  if min.dtype != operand.dtype or max.dtype != operand.dtype:
    raise TypeError(f"clamp requires min, operand and max to have the same dtype, got "
                    f"{shape_str([min, operand, max])}")
  return operand.dtype


clamp_p = standard_primitive(_clamp_shape_rule, _clamp_dtype_rule, "clamp")
# stablehlo.clamp accepts 0-d bounds next to an array operand.
xla.register_lowering(clamp_p, lambda ctx, lo, x, hi: hlo.clamp(lo, x, hi))

def clamp(min, x, max):
  """Elementwise ``min(max(x, min), max)``; ``min`` and ``max`` may be scalars."""
  return clamp_p.bind(*_operands("clamp", min, x, max))


# --- conversion --------------------------------------------------------------------------

def _convert_shape_rule(operand, *, new_dtype, weak_type):
  return operand.shape

def _convert_dtype_rule(operand, *, new_dtype, weak_type):
  return new_dtype

def _convert_weak_rule(operand, *, new_dtype, weak_type):
  return weak_type


convert_element_type_p = standard_primitive(_convert_shape_rule, _convert_dtype_rule,
                                            "convert_element_type",
                                            weak_type_rule=_convert_weak_rule)

def _convert_lowering(ctx, x, *, new_dtype, weak_type):
  return xla.convert_hlo(x, ctx.avals_in[0], ctx.avals_out[0])

xla.register_lowering(convert_element_type_p, _convert_lowering)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Cast ``operand`` to ``new_dtype`` (canonicalized: 64-bit only with x64 on).

  Float to int conversion rounds toward zero; conversion to bool tests ``!= 0``.
  """
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  if not hasattr(operand, "aval"):
    # Python scalars and NumPy values convert on the host: no primitive, and under a trace
    # they become literals or constants.
    if type(operand) in _PY_SCALARS:
      operand = np.asarray(operand, dtype=dtypes.python_scalar_dtype(operand))
    value = np.asarray(operand)
    if dtypes.is_complex(value.dtype) and not dtypes.is_complex(new_dtype):
      value = value.real
    value = value.astype(new_dtype)
    if weak_type:
      # NumPy values cannot be weakly typed. A scalar becomes the Python scalar of that dtype
      # (a weak literal under a trace); anything else a weak Array.
      py_type = dtypes.scalar_type_of(new_dtype)
      if (value.shape == () and py_type is not bool
          and dtypes.python_scalar_dtype(py_type(0)) == new_dtype):
        return py_type(value.item())
      return device_put(value, weak_type=True)
    return value
  aval = get_aval(operand)
  if aval.dtype == new_dtype and aval.weak_type == weak_type:
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _bit_width(dtype) -> int:
  dtype = np.dtype(dtype)
  if dtypes.is_int(dtype):
    return dtypes.iinfo(dtype).bits
  if dtypes.is_float(dtype):
    return dtypes.finfo(dtype).bits
  return dtype.itemsize * 8


def _bitcast_shape_rule(operand, *, new_dtype):
  old_bits, new_bits = _bit_width(operand.dtype), _bit_width(new_dtype)
  if old_bits == new_bits:
    return operand.shape
  if old_bits > new_bits:
    # One wide element becomes a trailing dimension of narrow ones.
    return (*operand.shape, old_bits // new_bits)
  last = operand.shape[-1] if operand.shape else 1
  if not operand.shape or last * old_bits != new_bits:
    raise ValueError(f"bitcast_convert_type: converting {operand.str_short()} to "
                     f"{np.dtype(new_dtype).name} needs a last dimension of size "
                     f"{new_bits // old_bits} ({new_bits} bits / {old_bits} bits)")
  return operand.shape[:-1]


def _bitcast_dtype_rule(operand, *, new_dtype):
  old = operand.dtype
  for d in (old, np.dtype(new_dtype)):
    if (d == dtypes.bool_ or dtypes.is_complex(d)) and old != new_dtype:
      raise TypeError(f"bitcast_convert_type does not convert bool or complex values "
                      f"(from {old.name} to {np.dtype(new_dtype).name})")
  return new_dtype


bitcast_convert_type_p = standard_primitive(_bitcast_shape_rule, _bitcast_dtype_rule,
                                            "bitcast_convert_type",
                                            weak_type_rule=lambda operand, **_: False)

def _bitcast_lowering(ctx, x, *, new_dtype):
  return hlo.bitcast_convert(xla.aval_to_ir_type(ctx.avals_out[0]), x)

xla.register_lowering(bitcast_convert_type_p, _bitcast_lowering)

def bitcast_convert_type(operand, new_dtype):
  """Reinterpret the bits of ``operand`` as ``new_dtype``.

  A narrower ``new_dtype`` adds a trailing dimension (one wide element becomes several
  narrow ones); a wider one consumes a trailing dimension of the matching size.
  """
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def _reduce_precision_shape_rule(operand, *, exponent_bits, mantissa_bits):
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be positive, got "
                     f"{exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative, got "
                     f"{mantissa_bits}")
  return operand.shape


def _reduce_precision_dtype_rule(operand, *, exponent_bits, mantissa_bits):
  if not dtypes.is_float(operand.dtype):
    raise TypeError(f"reduce_precision does not accept dtype {operand.dtype.name}; "
                    "accepted: float types")
  return operand.dtype


reduce_precision_p = standard_primitive(_reduce_precision_shape_rule,
                                        _reduce_precision_dtype_rule, "reduce_precision")

def _reduce_precision_lowering(ctx, x, *, exponent_bits, mantissa_bits):
  return hlo.reduce_precision(x, xla.i32_attr(exponent_bits), xla.i32_attr(mantissa_bits))

xla.register_lowering(reduce_precision_p, _reduce_precision_lowering)

def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Round ``operand`` to the values of a float format with the given exponent and
  mantissa bits (the result keeps ``operand``'s dtype)."""
  try:
    exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
  except TypeError:
    raise TypeError("reduce_precision: exponent_bits and mantissa_bits must be static "
                    f"integers, got {exponent_bits!r} and {mantissa_bits!r}") from None
  return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                 mantissa_bits=mantissa_bits)


# --- identities --------------------------------------------------------------------------

copy_p = standard_primitive(lambda x: x.shape, lambda x: x.dtype, "copy",
                            weak_type_rule=lambda x: x.weak_type)
xla.register_lowering(copy_p, lambda ctx, x: x)

def copy(x):
  """A copy of ``x`` (a new buffer when run eagerly)."""
  return copy_p.bind(x)


def stop_gradient(x):
  """``x`` unchanged (any pytree), marked as a constant for differentiation.

  TODO(AD): today this is the identity. When ``interpreters/ad.py`` lands, the inexact leaves
  must go through a primitive whose JVP is zero (JAX's ``stop_gradient``), so that gradients
  do not flow through it.
  """
  return tree_util.tree_map(lambda leaf: leaf, x)
