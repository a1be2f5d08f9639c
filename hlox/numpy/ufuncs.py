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
  """Add arguments elementwise: ``x + y``.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. For bools the sum is the logical OR (as in NumPy). It
  is a :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``,
  ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x + y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.add(jnp.array([1, 2, 3]), 10)
    Array([11, 12, 13], dtype=int32)
    >>> jnp.add(jnp.array([True, False]), jnp.array([True, True]))
    Array([ True,  True], dtype=bool)
    >>> jnp.add.reduce(jnp.array([1., 2., 3.]))
    Array(6., dtype=float32)

  See also:
    the ``+`` operator; :func:`hlox.numpy.subtract`.
  """
  x, y = _args("add", x, y)
  return lax.bitwise_or(x, y) if _dtype(x) == dtypes.bool_ else lax.add(x, y)


def subtract(x, y, /):
  """Subtract arguments elementwise: ``x - y``.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. Bool operands raise a TypeError (as in NumPy, which has
  no boolean subtraction). It is a :class:`hlox.numpy.ufunc`, so it also has the methods
  ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x - y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.subtract(jnp.array([5, 7]), jnp.array([1, 2]))
    Array([4, 5], dtype=int32)
    >>> jnp.subtract.outer(jnp.array([1, 2]), jnp.array([0, 1, 2]))
    Array([[ 1,  0, -1],
           [ 2,  1,  0]], dtype=int32)
  """
  return lax.sub(*_args("subtract", x, y))


def multiply(x, y, /):
  """Multiply arguments elementwise: ``x * y``.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. For bools the product is the logical AND. It is a
  :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``, ``reduceat``,
  ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x * y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.multiply(jnp.array([1., 2., 3.]), 2)
    Array([2., 4., 6.], dtype=float32)
    >>> jnp.multiply.accumulate(jnp.array([1, 2, 3, 4]))
    Array([ 1,  2,  6, 24], dtype=int32)
  """
  x, y = _args("multiply", x, y)
  return lax.bitwise_and(x, y) if _dtype(x) == dtypes.bool_ else lax.mul(x, y)


def true_divide(x1, x2, /):
  """Divide arguments elementwise: ``x1 / x2``, always in an inexact dtype.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). So ``int32 / int32`` is float32 (float64 with x64), and
  division by zero gives ``inf`` or ``nan`` as in IEEE arithmetic.

  Args:
    x1: dividend array or scalar.
    x2: divisor array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 / x2``, with the promoted inexact
    dtype.

  Examples:
    >>> jnp.true_divide(jnp.array([1, 2, 3]), 2)
    Array([0.5, 1. , 1.5], dtype=float32)
    >>> jnp.true_divide(1., jnp.array([0., 4.]))
    Array([ inf, 0.25], dtype=float32)

  See also:
    :func:`hlox.numpy.floor_divide` for integer (floored) division.
  """
  return lax.div(*_args_inexact("true_divide", x1, x2))


def divide(x1, x2, /):
  """Alias of :func:`hlox.numpy.true_divide`."""
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
  """Floored division elementwise: ``x1 // x2``, rounded toward negative infinity.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. Integer inputs give integers; for floats the quotient
  matches ``divmod(x1, x2)[0]``. Complex inputs raise a TypeError.

  Args:
    x1: dividend array or scalar.
    x2: divisor array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 // x2``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.floor_divide(jnp.array([7, -7, 7]), jnp.array([2, 2, -2]))
    Array([ 3, -4, -4], dtype=int32)
    >>> jnp.floor_divide(jnp.array([7.5, -7.5]), 2)
    Array([ 3., -4.], dtype=float32)
  """
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
  """Remainder of floored division elementwise: ``x1 % x2``, with the sign of ``x2``.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. For integers, ``x % 0`` is 0 (NumPy's answer). Complex
  inputs raise a TypeError.

  Args:
    x1: dividend array or scalar.
    x2: divisor array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 - floor(x1 / x2) * x2``, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.remainder(jnp.array([7, -7, 7]), jnp.array([3, 3, -3]))
    Array([ 1,  2, -2], dtype=int32)
    >>> jnp.remainder(jnp.array([5.5, -5.5]), 2.)
    Array([1.5, 0.5], dtype=float32)

  See also:
    :func:`hlox.numpy.fmod` for the remainder with the sign of ``x1``.
  """
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
  """Alias of :func:`hlox.numpy.remainder`."""
  return remainder(x1, x2)


def fmod(x1, x2, /):
  """Remainder of truncated division elementwise, with the sign of ``x1`` (C's ``fmod``).

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. For integers, ``fmod(x, 0)`` is 0. Complex inputs raise
  a TypeError.

  Args:
    x1: dividend array or scalar.
    x2: divisor array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 - trunc(x1 / x2) * x2``, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.fmod(jnp.array([7, -7, 7]), jnp.array([3, 3, -3]))
    Array([ 1, -1,  1], dtype=int32)
    >>> jnp.fmod(jnp.array([5.5, -5.5]), 2.)
    Array([ 1.5, -1.5], dtype=float32)

  See also:
    :func:`hlox.numpy.remainder` for the remainder with the sign of ``x2``.
  """
  x1, x2 = _args_numeric("fmod", x1, x2)
  _check_not_complex("fmod", x1)
  if dtypes.is_int(_dtype(x2)):
    x2 = _where(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
  return lax.rem(x1, x2)


def divmod(x1, x2, /):
  """Floored quotient and remainder elementwise, in one call.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. The result is ``(floor_divide(x1, x2), remainder(x1,
  x2))``. Complex inputs raise a TypeError.

  Args:
    x1: dividend array or scalar.
    x2: divisor array or scalar; broadcast against ``x1``.

  Returns:
    A tuple ``(quotient, remainder)`` of two arrays of the broadcast shape of the inputs, both
    with their promoted dtype.

  Examples:
    >>> jnp.divmod(jnp.array([7, -7]), 3)
    (Array([ 2, -3], dtype=int32), Array([1, 2], dtype=int32))
    >>> jnp.divmod(jnp.array([7.5, -7.5]), 2.)
    (Array([ 3., -4.], dtype=float32), Array([1.5, 0.5], dtype=float32))
  """
  x1, x2 = _args_numeric("divmod", x1, x2)
  if dtypes.is_int(_dtype(x1)):
    return floor_divide(x1, x2), remainder(x1, x2)
  _check_not_complex("divmod", x1)
  return _float_divmod(x1, x2)


def modf(x, /):
  """Fractional and integral parts of ``x`` elementwise.

  Both parts carry the sign of ``x``, and ``x == frac + whole``. Integer and bool inputs are
  promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A tuple ``(frac, whole)`` of two arrays of ``x``'s shape, with ``x``'s dtype when it is
    inexact, else the default float dtype.

  Examples:
    >>> jnp.modf(jnp.array([2.5, -1.25, 3.]))
    (Array([ 0.5 , -0.25,  0.  ], dtype=float32), Array([ 2., -1.,  3.], dtype=float32))
  """
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
  """Raise ``x1`` to the power ``x2`` elementwise: ``x1 ** x2``.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. A concrete (not traced) integer exponent is computed by
  repeated multiplication with ``lax.integer_pow``, so integer bases with a negative such exponent
  raise a TypeError. Integer bases with integer array exponents stay integers; a float or complex
  base with an integer array exponent keeps the base's dtype.

  Args:
    x1: base array or scalar.
    x2: exponent array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 ** x2``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.power(jnp.array([1, 2, 3]), 2)
    Array([1, 4, 9], dtype=int32)
    >>> jnp.power(2., jnp.array([0.5, -1., 3.]))
    Array([1.4142135, 0.5      , 8.       ], dtype=float32)

  See also:
    :func:`hlox.numpy.float_power`.
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
  """Alias of :func:`hlox.numpy.power`."""
  return power(x1, x2)


def float_power(x1, x2, /):
  """Raise ``x1`` to the power ``x2`` elementwise, computed in an inexact dtype.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). Unlike NumPy, which always computes in at least float64,
  integer inputs give the default float dtype (float32 unless x64 is enabled).

  Args:
    x1: base array or scalar.
    x2: exponent array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 ** x2``, with the promoted inexact
    dtype.

  Examples:
    >>> jnp.float_power(jnp.array([1, 2, 3]), 2)
    Array([1., 4., 9.], dtype=float32)
    >>> jnp.float_power(4., jnp.array([0.5, -1.]))
    Array([2.  , 0.25], dtype=float32)

  See also:
    :func:`hlox.numpy.power`.
  """
  return lax.pow(*_args_inexact("float_power", x1, x2))


def negative(x, /):
  """Numerical negative elementwise: ``-x``.

  Unsigned integers wrap around; bools raise a TypeError. It is a unary :class:`hlox.numpy.ufunc`:
  of the ufunc methods only ``at`` applies.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``-x``, with ``x``'s dtype.

  Examples:
    >>> jnp.negative(jnp.array([1., -2., 0.]))
    Array([-1.,  2., -0.], dtype=float32)
    >>> jnp.negative(jnp.array([1, 2], dtype=jnp.uint8))
    Array([255, 254], dtype=uint8)
    >>> jnp.negative.at(jnp.array([1, 2, 3]), 1, inplace=False)
    Array([ 1, -2,  3], dtype=int32)
  """
  return lax.neg(*_args("negative", x))


def positive(x, /):
  """Numerical positive elementwise: ``+x``, i.e. ``x`` itself as an array.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the values of ``x``, with ``x``'s dtype.

  Examples:
    >>> jnp.positive(jnp.array([1, -2]))
    Array([ 1, -2], dtype=int32)
  """
  return _asarray(*_args("positive", x))


def maximum(x, y, /):
  """Elementwise maximum of two arrays.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. A NaN in either input gives NaN at that position (see
  :func:`hlox.numpy.fmax` to ignore NaNs). It is a :class:`hlox.numpy.ufunc`, so it also has the
  methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding the larger of each pair, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.maximum(jnp.array([1, 5, 3]), jnp.array([4, 2, 3]))
    Array([4, 5, 3], dtype=int32)
    >>> jnp.maximum(jnp.array([1., jnp.nan]), 2.)
    Array([ 2., nan], dtype=float32)

  See also:
    :func:`hlox.numpy.max` to reduce along axes.
  """
  return lax.max(*_args("maximum", x, y))


def minimum(x, y, /):
  """Elementwise minimum of two arrays.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. A NaN in either input gives NaN at that position (see
  :func:`hlox.numpy.fmin` to ignore NaNs). It is a :class:`hlox.numpy.ufunc`, so it also has the
  methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding the smaller of each pair, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.minimum(jnp.array([1, 5, 3]), jnp.array([4, 2, 3]))
    Array([1, 2, 3], dtype=int32)
    >>> jnp.minimum(jnp.array([1., jnp.nan]), 0.)
    Array([ 0., nan], dtype=float32)

  See also:
    :func:`hlox.numpy.min` to reduce along axes.
  """
  return lax.min(*_args("minimum", x, y))


def fmax(x1, x2, /):
  """Elementwise maximum of two arrays, ignoring NaNs.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. Where exactly one input is NaN the other one is
  returned; the result is NaN only where both are.

  Args:
    x1: first input array or scalar.
    x2: second input array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding the larger of each pair, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.fmax(jnp.array([1., jnp.nan, jnp.nan]), jnp.array([2., 3., jnp.nan]))
    Array([ 2.,  3., nan], dtype=float32)

  See also:
    :func:`hlox.numpy.maximum` (NaN-propagating).
  """
  x1, x2 = _args("fmax", x1, x2)
  return _where(lax.bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2, /):
  """Elementwise minimum of two arrays, ignoring NaNs.

  The inputs broadcast together and are promoted with JAX's rules: Python scalars are weakly
  typed, so ``int8_array + 1`` stays int8. Where exactly one input is NaN the other one is
  returned; the result is NaN only where both are.

  Args:
    x1: first input array or scalar.
    x2: second input array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding the smaller of each pair, with the
    promoted dtype of the inputs.

  Examples:
    >>> jnp.fmin(jnp.array([1., jnp.nan, jnp.nan]), jnp.array([2., 3., jnp.nan]))
    Array([ 1.,  3., nan], dtype=float32)

  See also:
    :func:`hlox.numpy.minimum` (NaN-propagating).
  """
  x1, x2 = _args("fmin", x1, x2)
  return _where(lax.bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


def absolute(x, /):
  """Absolute value elementwise: ``|x|``.

  For complex ``x`` this is the modulus, in the matching real dtype. Bools and unsigned integers
  are returned unchanged; the most negative signed integer wraps to itself (as in NumPy).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``|x|``, with ``x``'s dtype (its real counterpart for
    complex ``x``).

  Examples:
    >>> jnp.absolute(jnp.array([-2, 0, 3]))
    Array([2, 0, 3], dtype=int32)
    >>> jnp.absolute(jnp.array([3+4j]))
    Array([5.], dtype=float32)

  See also:
    :func:`hlox.numpy.fabs`.
  """
  x, = _arraylike("absolute", x)
  dtype = _dtype(x)
  if dtype == dtypes.bool_ or dtypes.is_unsigned_int(dtype):
    return _asarray(x)
  return lax.abs(x)


def abs(x, /):
  """Alias of :func:`hlox.numpy.absolute`."""
  return absolute(x)


def fabs(x, /):
  """Absolute value elementwise, in an inexact dtype.

  Unlike :func:`hlox.numpy.absolute`, integers are converted to floats. Integer and bool inputs
  are promoted to the default float dtype (float32, or float64 with x64 enabled). Complex inputs
  raise a TypeError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``|x|``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.fabs(jnp.array([-2, 0, 3]))
    Array([2., 0., 3.], dtype=float32)
    >>> jnp.fabs(jnp.array([-1.5, 2.5]))
    Array([1.5, 2.5], dtype=float32)
  """
  x, = _arraylike("fabs", x)
  _check_not_complex("fabs", x)
  return lax.abs(*_args_inexact("fabs", x))


def sign(x, /):
  """Sign of ``x`` elementwise: -1, 0 or 1.

  For complex ``x`` it is ``x / |x|`` (0 where ``x`` is 0); NaN stays NaN.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the signs, with ``x``'s dtype.

  Examples:
    >>> jnp.sign(jnp.array([-3., 0., 2.]))
    Array([-1.,  0.,  1.], dtype=float32)
    >>> jnp.sign(jnp.array([-3, 0, 2]))
    Array([-1,  0,  1], dtype=int32)
  """
  return lax.sign(*_args("sign", x))


def reciprocal(x, /):
  """Reciprocal elementwise: ``1 / x``.

  Unlike NumPy, which keeps integers (and truncates the result), integer and bool inputs are
  promoted to the default float dtype.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``1 / x``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.reciprocal(jnp.array([1., 2., 4.]))
    Array([1.  , 0.5 , 0.25], dtype=float32)
    >>> jnp.reciprocal(jnp.array([2, 4]))
    Array([0.5 , 0.25], dtype=float32)
  """
  x, = _arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


def square(x, /):
  """Square elementwise: ``x * x``.

  Bools are promoted to the default integer dtype.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``x * x``, with ``x``'s dtype.

  Examples:
    >>> jnp.square(jnp.array([-2, 3]))
    Array([4, 9], dtype=int32)
    >>> jnp.square(jnp.array([1.5, 1j]))
    Array([ 2.25+0.j, -1.  +0.j], dtype=complex64)
  """
  x, = _arraylike("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


def sqrt(x, /):
  """Non-negative square root elementwise.

  Negative real inputs give NaN; pass complex values for complex roots. Integer and bool inputs
  are promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``sqrt(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.sqrt(jnp.array([1., 4., 9.]))
    Array([1., 2., 3.], dtype=float32)
    >>> jnp.sqrt(jnp.array([-1.]))
    Array([nan], dtype=float32)
    >>> jnp.sqrt(jnp.array([-1+0j]))
    Array([0.+1.j], dtype=complex64)
  """
  return lax.sqrt(*_args_inexact("sqrt", x))


def cbrt(x, /):
  """Real cube root elementwise.

  Complex inputs raise a TypeError. Integer and bool inputs are promoted to the default float
  dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``x ** (1/3)`` (negative for negative ``x``), with ``x``'s
    dtype when it is inexact, else the default float dtype.

  Examples:
    >>> jnp.cbrt(jnp.array([8., -27., 2.]))
    Array([ 2.       , -3.       ,  1.2599211], dtype=float32)
  """
  return lax.cbrt(*_args_inexact("cbrt", x))


# --- rounding ----------------------------------------------------------------------------

def _is_integral(x) -> bool:
  dtype = _dtype(x)
  return dtypes.is_int(dtype) or dtype == dtypes.bool_


def floor(x, /):
  """Round down elementwise, toward negative infinity.

  Integer and bool inputs are returned unchanged (as in NumPy 2). Complex inputs raise a
  TypeError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the largest integral values ``<= x``, with ``x``'s dtype.

  Examples:
    >>> jnp.floor(jnp.array([-1.5, 0.2, 2.7]))
    Array([-2.,  0.,  2.], dtype=float32)

  See also:
    :func:`hlox.numpy.ceil`, :func:`hlox.numpy.trunc`, :func:`hlox.numpy.rint`.
  """
  x, = _arraylike("floor", x)
  if _is_integral(x):
    return _asarray(x)
  return lax.floor(*_args_inexact("floor", x))


def ceil(x, /):
  """Round up elementwise, toward positive infinity.

  Integer and bool inputs are returned unchanged (as in NumPy 2). Complex inputs raise a
  TypeError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the smallest integral values ``>= x``, with ``x``'s dtype.

  Examples:
    >>> jnp.ceil(jnp.array([-1.5, 0.2, 2.7]))
    Array([-1.,  1.,  3.], dtype=float32)

  See also:
    :func:`hlox.numpy.floor`, :func:`hlox.numpy.trunc`, :func:`hlox.numpy.rint`.
  """
  x, = _arraylike("ceil", x)
  if _is_integral(x):
    return _asarray(x)
  return lax.ceil(*_args_inexact("ceil", x))


def trunc(x, /):
  """Round toward zero elementwise (drop the fractional part).

  Integer and bool inputs are returned unchanged. Complex inputs raise a TypeError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the integral parts of ``x``, with ``x``'s dtype.

  Examples:
    >>> jnp.trunc(jnp.array([-1.7, 0.2, 2.7]))
    Array([-1.,  0.,  2.], dtype=float32)

  See also:
    :func:`hlox.numpy.floor`, :func:`hlox.numpy.ceil`.
  """
  x, = _arraylike("trunc", x)
  if _is_integral(x):
    return _asarray(x)
  x, = _args_inexact("trunc", x)
  _check_not_complex("trunc", x)
  return _where(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


def rint(x, /):
  """Round to the nearest integer elementwise, ties to even.

  Integer and bool inputs become the default float dtype (strongly typed), as in JAX. Complex
  inputs round their real and imaginary parts separately.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the rounded values, with ``x``'s dtype when it is inexact,
    else the default float dtype.

  Examples:
    >>> jnp.rint(jnp.array([0.5, 1.5, 2.5, -1.7]))
    Array([ 0.,  2.,  2., -2.], dtype=float32)
    >>> jnp.rint(jnp.array([1, 2]))
    Array([1., 2.], dtype=float32)

  See also:
    :func:`hlox.numpy.round`.
  """
  x, = _arraylike("rint", x)
  if _is_integral(x):  # a strong default float whatever the width (as JAX), even when weak
    dtype = dtypes.default_float_dtype()
    return lax.convert_element_type(_asarray(x), dtype, weak_type=False)
  x, = _args_inexact("rint", x)
  if dtypes.is_complex(_dtype(x)):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals=0, out=None):
  """Round to the given number of decimals elementwise, ties to even.

  Floats are scaled by ``10 ** decimals``, rounded and scaled back, so results can differ from the
  exact decimal rounding in the last bit. Integer inputs are returned unchanged; integers with
  ``decimals < 0`` raise NotImplementedError. Complex inputs round both parts.

  Args:
    a: input array or scalar.
    decimals: number of decimal places to keep, a static (not traced) Python int; negative values
      round to tens, hundreds, and so on. Default 0.
    out: unsupported; must be None (arrays are immutable), else NotImplementedError is raised.

  Returns:
    An array of ``a``'s shape and dtype holding the rounded values.

  Examples:
    >>> jnp.round(jnp.array([0.5, 1.5, 2.567]))
    Array([0., 2., 3.], dtype=float32)
    >>> jnp.round(jnp.array([2.567, 123.4]), 1)
    Array([  2.6000001, 123.4      ], dtype=float32)
    >>> jnp.round(jnp.array([1234.5]), -2)
    Array([1200.], dtype=float32)

  See also:
    :func:`hlox.numpy.rint`, :func:`hlox.numpy.floor`.
  """
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
  """Alias of :func:`hlox.numpy.round`."""
  return round(a, decimals, out)


def _real_dtype_of(dtype):
  return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(
      np.dtype(dtype), np.dtype(dtype))


# --- exponential and logarithm -----------------------------------------------------------

def exp(x, /):
  """Exponential elementwise: ``e ** x``.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``exp(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.exp(jnp.array([0., 1., -1.]))
    Array([1.        , 2.7182817 , 0.36787945], dtype=float32)
    >>> jnp.exp(jnp.array([1, 2]))
    Array([2.7182817, 7.389056 ], dtype=float32)

  See also:
    :func:`hlox.numpy.expm1`, :func:`hlox.numpy.exp2`, :func:`hlox.numpy.log`.
  """
  return lax.exp(*_args_inexact("exp", x))


def exp2(x, /):
  """Base-2 exponential elementwise: ``2 ** x``.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``2 ** x``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.exp2(jnp.array([0., 3., -1.]))
    Array([1. , 8. , 0.5], dtype=float32)

  See also:
    :func:`hlox.numpy.exp`, :func:`hlox.numpy.log2`.
  """
  return lax.exp2(*_args_inexact("exp2", x))


def expm1(x, /):
  """Elementwise ``exp(x) - 1``, accurate for small ``x``.

  For ``|x|`` near zero it keeps the digits that ``exp(x) - 1`` would cancel away. Integer and
  bool inputs are promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``exp(x) - 1``, with ``x``'s dtype when it is inexact, else
    the default float dtype.

  Examples:
    >>> jnp.expm1(jnp.array([0., 1e-6, 1.]))
    Array([0.0000000e+00, 1.0000005e-06, 1.7182817e+00], dtype=float32)

  See also:
    :func:`hlox.numpy.log1p`.
  """
  return lax.expm1(*_args_inexact("expm1", x))


def log(x, /):
  """Natural logarithm elementwise.

  Negative real inputs give NaN and zero gives ``-inf``; complex inputs give the principal value.
  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``log(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.log(jnp.array([1., jnp.e, 0.]))
    Array([0.        , 0.99999994,       -inf], dtype=float32)
    >>> jnp.log(jnp.array([-1+0j]))
    Array([0.+3.1415927j], dtype=complex64)

  See also:
    :func:`hlox.numpy.log1p`, :func:`hlox.numpy.log2`, :func:`hlox.numpy.log10`.
  """
  return lax.log(*_args_inexact("log", x))


def log1p(x, /):
  """Elementwise ``log(1 + x)``, accurate for small ``x``.

  For ``|x|`` near zero it keeps the digits that forming ``1 + x`` would round away. Integer and
  bool inputs are promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``log(1 + x)``, with ``x``'s dtype when it is inexact, else
    the default float dtype.

  Examples:
    >>> jnp.log1p(jnp.array([0., 1e-6, jnp.e - 1]))
    Array([0.000000e+00, 9.999995e-07, 1.000000e+00], dtype=float32)

  See also:
    :func:`hlox.numpy.expm1`.
  """
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
  """Base-2 logarithm elementwise.

  Computed as ``log(x) / log(2)``; the result is never weakly typed. Integer and bool inputs are
  promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``log2(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.log2(jnp.array([1., 8., 0.5]))
    Array([ 0.,  3., -1.], dtype=float32)

  See also:
    :func:`hlox.numpy.log`, :func:`hlox.numpy.exp2`.
  """
  return _log_base("log2", x, 2.0)


def log10(x, /):
  """Base-10 logarithm elementwise.

  Computed as ``log(x) / log(10)``; the result is never weakly typed. Integer and bool inputs are
  promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``log10(x)``, with ``x``'s dtype when it is inexact, else
    the default float dtype.

  Examples:
    >>> jnp.log10(jnp.array([1., 100., 0.1]))
    Array([ 0.,  2., -1.], dtype=float32)

  See also:
    :func:`hlox.numpy.log`.
  """
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
  """Elementwise ``log(exp(x1) + exp(x2))``, computed without overflow.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). It is evaluated as ``max(x1, x2) + log1p(exp(-|x1 - x2|))``,
  and its derivative is defined by a custom rule that splits ties evenly. It is a
  :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``, ``reduceat``,
  ``outer`` and ``at``. ``logaddexp.reduce`` is a stable log-sum-exp.

  Args:
    x1: first input array or scalar.
    x2: second input array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``log(exp(x1) + exp(x2))``, with the
    promoted inexact dtype.

  Examples:
    >>> jnp.logaddexp(jnp.array([0., 1000.]), jnp.array([0., 1000.]))
    Array([6.9314718e-01, 1.0006932e+03], dtype=float32)
    >>> jnp.logaddexp.reduce(jnp.array([1., 2., 3.]))
    Array(3.407606, dtype=float32)

  See also:
    :func:`hlox.numpy.logaddexp2`.
  """
  return _logaddexp_custom(*_args_inexact("logaddexp", x1, x2))


def logaddexp2(x1, x2, /):
  """Elementwise ``log2(2 ** x1 + 2 ** x2)``, computed without overflow.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). Its derivative is defined by a custom rule that splits ties
  evenly. It is a :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``,
  ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x1: first input array or scalar.
    x2: second input array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``log2(2 ** x1 + 2 ** x2)``, with the
    promoted inexact dtype.

  Examples:
    >>> jnp.logaddexp2(jnp.array([0., 1., 200.]), jnp.array([0., 3., 200.]))
    Array([  1.      ,   3.321928, 201.      ], dtype=float32)

  See also:
    :func:`hlox.numpy.logaddexp`.
  """
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
  """Trigonometric sine elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar, angles in radians.

  Returns:
    An array of ``x``'s shape holding ``sin(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.sin(jnp.array([0., jnp.pi / 2, jnp.pi / 6]))
    Array([0. , 1. , 0.5], dtype=float32)

  See also:
    :func:`hlox.numpy.cos`, :func:`hlox.numpy.arcsin`.
  """
  return lax.sin(*_args_inexact("sin", x))


def cos(x, /):
  """Trigonometric cosine elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar, angles in radians.

  Returns:
    An array of ``x``'s shape holding ``cos(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.cos(jnp.array([0., jnp.pi / 3, jnp.pi]))
    Array([ 1.        ,  0.49999997, -1.        ], dtype=float32)

  See also:
    :func:`hlox.numpy.sin`, :func:`hlox.numpy.arccos`.
  """
  return lax.cos(*_args_inexact("cos", x))


def tan(x, /):
  """Trigonometric tangent elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar, angles in radians.

  Returns:
    An array of ``x``'s shape holding ``tan(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.tan(jnp.array([0., jnp.pi / 4]))
    Array([0., 1.], dtype=float32)

  See also:
    :func:`hlox.numpy.arctan`.
  """
  return lax.tan(*_args_inexact("tan", x))


def arcsin(x, /):
  """Inverse sine elementwise.

  Real inputs outside ``[-1, 1]`` give NaN; complex inputs give the principal value. Integer and
  bool inputs are promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding angles in radians in ``[-pi/2, pi/2]``, with ``x``'s dtype
    when it is inexact, else the default float dtype.

  Examples:
    >>> jnp.arcsin(jnp.array([0., 1., 2.]))
    Array([0.       , 1.5707964,       nan], dtype=float32)

  See also:
    :func:`hlox.numpy.sin`.
  """
  return lax.asin(*_args_inexact("arcsin", x))


def arccos(x, /):
  """Inverse cosine elementwise.

  Real inputs outside ``[-1, 1]`` give NaN; complex inputs give the principal value. Integer and
  bool inputs are promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding angles in radians in ``[0, pi]``, with ``x``'s dtype when it
    is inexact, else the default float dtype.

  Examples:
    >>> jnp.arccos(jnp.array([1., 0., -1.]))
    Array([0.       , 1.5707964, 3.1415927], dtype=float32)

  See also:
    :func:`hlox.numpy.cos`.
  """
  return lax.acos(*_args_inexact("arccos", x))


def arctan(x, /):
  """Inverse tangent elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding angles in radians in ``(-pi/2, pi/2)``, with ``x``'s dtype
    when it is inexact, else the default float dtype.

  Examples:
    >>> jnp.arctan(jnp.array([0., 1., jnp.inf]))
    Array([0.       , 0.7853981, 1.5707964], dtype=float32)

  See also:
    :func:`hlox.numpy.arctan2` to recover the quadrant.
  """
  return lax.atan(*_args_inexact("arctan", x))


def arctan2(x1, x2, /):
  """Elementwise arc tangent of ``x1 / x2``, in the quadrant given by the signs of both.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). Complex inputs are not supported.

  Args:
    x1: y-coordinates, an array or scalar.
    x2: x-coordinates, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding angles in radians in ``[-pi, pi]``, with
    the promoted inexact dtype.

  Examples:
    >>> jnp.arctan2(jnp.array([1., 1., -1.]), jnp.array([1., -1., -1.]))
    Array([ 0.7853982,  2.3561945, -2.3561945], dtype=float32)

  See also:
    :func:`hlox.numpy.arctan`, :func:`hlox.numpy.angle`.
  """
  return lax.atan2(*_args_inexact("arctan2", x1, x2))


def sinh(x, /):
  """Hyperbolic sine elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``sinh(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.sinh(jnp.array([0., 1., -1.]))
    Array([ 0.       ,  1.1752012, -1.1752012], dtype=float32)

  See also:
    :func:`hlox.numpy.arcsinh`.
  """
  return lax.sinh(*_args_inexact("sinh", x))


def cosh(x, /):
  """Hyperbolic cosine elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``cosh(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.cosh(jnp.array([0., 1., -1.]))
    Array([1.       , 1.5430806, 1.5430806], dtype=float32)

  See also:
    :func:`hlox.numpy.arccosh`.
  """
  return lax.cosh(*_args_inexact("cosh", x))


def tanh(x, /):
  """Hyperbolic tangent elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``tanh(x)``, with ``x``'s dtype when it is inexact, else the
    default float dtype.

  Examples:
    >>> jnp.tanh(jnp.array([0., 1., -20.]))
    Array([ 0.       ,  0.7615942, -1.       ], dtype=float32)

  See also:
    :func:`hlox.numpy.arctanh`.
  """
  return lax.tanh(*_args_inexact("tanh", x))


def arcsinh(x, /):
  """Inverse hyperbolic sine elementwise.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``arcsinh(x)``, with ``x``'s dtype when it is inexact, else
    the default float dtype.

  Examples:
    >>> jnp.arcsinh(jnp.array([0., 1., -1.]))
    Array([ 0.        ,  0.88137364, -0.88137364], dtype=float32)

  See also:
    :func:`hlox.numpy.sinh`.
  """
  return lax.asinh(*_args_inexact("arcsinh", x))


def arccosh(x, /):
  """Inverse hyperbolic cosine elementwise.

  Real inputs below 1 give NaN; for complex inputs the principal value with a non-negative real
  part is returned (NumPy's branch). Integer and bool inputs are promoted to the default float
  dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``arccosh(x)``, non-negative, with ``x``'s dtype when it is
    inexact, else the default float dtype.

  Examples:
    >>> jnp.arccosh(jnp.array([1., 2., 0.]))
    Array([0.      , 1.316958,      nan], dtype=float32)

  See also:
    :func:`hlox.numpy.cosh`.
  """
  x, = _args_inexact("arccosh", x)
  out = lax.acosh(x)
  if dtypes.is_complex(_dtype(out)):
    # NumPy's principal value has a non-negative real part.
    out = _where(lax.lt(lax.real(out), _const(lax.real(out), 0)), lax.neg(out), out)
  return out


def arctanh(x, /):
  """Inverse hyperbolic tangent elementwise.

  Real inputs outside ``[-1, 1]`` give NaN and ``+-1`` give ``+-inf``. Integer and bool inputs are
  promoted to the default float dtype (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``arctanh(x)``, with ``x``'s dtype when it is inexact, else
    the default float dtype.

  Examples:
    >>> jnp.arctanh(jnp.array([0., 0.5, 1.]))
    Array([0.        , 0.54930615,        inf], dtype=float32)

  See also:
    :func:`hlox.numpy.tanh`.
  """
  return lax.atanh(*_args_inexact("arctanh", x))


# Array API names.
def asin(x, /):
  """Alias of :func:`hlox.numpy.arcsin`.

  The Array API name of the function.
  """
  return arcsin(x)

def acos(x, /):
  """Alias of :func:`hlox.numpy.arccos`.

  The Array API name of the function.
  """
  return arccos(x)

def atan(x, /):
  """Alias of :func:`hlox.numpy.arctan`.

  The Array API name of the function.
  """
  return arctan(x)

def atan2(x1, x2, /):
  """Alias of :func:`hlox.numpy.arctan2`.

  The Array API name of the function.
  """
  return arctan2(x1, x2)

def asinh(x, /):
  """Alias of :func:`hlox.numpy.arcsinh`.

  The Array API name of the function.
  """
  return arcsinh(x)

def acosh(x, /):
  """Alias of :func:`hlox.numpy.arccosh`.

  The Array API name of the function.
  """
  return arccosh(x)

def atanh(x, /):
  """Alias of :func:`hlox.numpy.arctanh`.

  The Array API name of the function.
  """
  return arctanh(x)


def deg2rad(x, /):
  """Convert angles from degrees to radians.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: angles in degrees, an array or scalar.

  Returns:
    An array of ``x``'s shape holding ``x * pi / 180``, with ``x``'s dtype when it is inexact,
    else the default float dtype.

  Examples:
    >>> jnp.deg2rad(jnp.array([0., 90., 180.]))
    Array([0.       , 1.5707964, 3.1415927], dtype=float32)

  See also:
    :func:`hlox.numpy.rad2deg`.
  """
  x, = _args_inexact("deg2rad", x)
  return lax.mul(x, _const(x, np.pi / 180))


def rad2deg(x, /):
  """Convert angles from radians to degrees.

  Integer and bool inputs are promoted to the default float dtype (float32, or float64 with x64
  enabled).

  Args:
    x: angles in radians, an array or scalar.

  Returns:
    An array of ``x``'s shape holding ``x * 180 / pi``, with ``x``'s dtype when it is inexact,
    else the default float dtype.

  Examples:
    >>> jnp.rad2deg(jnp.array([0., jnp.pi / 2, jnp.pi]))
    Array([  0.,  90., 180.], dtype=float32)

  See also:
    :func:`hlox.numpy.deg2rad`.
  """
  x, = _args_inexact("rad2deg", x)
  return lax.mul(x, _const(x, 180 / np.pi))


def radians(x, /):
  """Alias of :func:`hlox.numpy.deg2rad`."""
  return deg2rad(x)


def degrees(x, /):
  """Alias of :func:`hlox.numpy.rad2deg`."""
  return rad2deg(x)


def hypot(x1, x2, /):
  """Elementwise hypotenuse ``sqrt(x1 ** 2 + x2 ** 2)``, without intermediate overflow.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). An infinite input gives ``inf`` even when the other one is NaN
  (as C's ``hypot``). Complex inputs raise a ValueError (use ``abs`` first).

  Args:
    x1: first leg, an array or scalar.
    x2: second leg, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding the hypotenuses, with the promoted
    inexact dtype.

  Examples:
    >>> jnp.hypot(jnp.array([3., 6.]), jnp.array([4., 8.]))
    Array([ 5., 10.], dtype=float32)
    >>> jnp.hypot(jnp.float32(3e37), jnp.float32(4e37))
    Array(5.e+37, dtype=float32)
  """
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
  """Normalized sinc elementwise: ``sin(pi x) / (pi x)``.

  The value at 0 is 1, and derivatives of every order at 0 are exact (they come from the Taylor
  series, not from the quotient). Integer and bool inputs are promoted to the default float dtype
  (float32, or float64 with x64 enabled).

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``sinc(x)``, 1 at ``x == 0``, with ``x``'s dtype when it is
    inexact, else the default float dtype.

  Examples:
    >>> jnp.sinc(jnp.array([0., 0.5, -0.5]))
    Array([1.        , 0.63661975, 0.63661975], dtype=float32)
  """
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
  """Test elementwise for finite values (not infinite and not NaN).

  Integer and bool inputs are always finite. A complex value is finite when both parts are.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isfinite(jnp.array([1., jnp.inf, -jnp.inf, jnp.nan]))
    Array([ True, False, False, False], dtype=bool)

  See also:
    :func:`hlox.numpy.isinf`, :func:`hlox.numpy.isnan`.
  """
  x, = _arraylike("isfinite", x)
  dtype = _dtype(x)
  if dtypes.is_float(dtype):
    return lax.is_finite(x)
  if dtypes.is_complex(dtype):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_like(x, True, dtypes.bool_)


def isinf(x, /):
  """Test elementwise for positive or negative infinity.

  Integer and bool inputs are never infinite. A complex value is infinite when either part is.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isinf(jnp.array([1., jnp.inf, -jnp.inf, jnp.nan]))
    Array([False,  True,  True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.isposinf`, :func:`hlox.numpy.isneginf`.
  """
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
  """Test elementwise for positive infinity.

  Integer and bool inputs give False everywhere; complex inputs raise a ValueError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).
    out: unsupported; must be None, else NotImplementedError is raised.

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isposinf(jnp.array([1., jnp.inf, -jnp.inf]))
    Array([False,  True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.isneginf`, :func:`hlox.numpy.isinf`.
  """
  _no_out(out)
  return _isinf_signed("isposinf", x, np.inf)


def isneginf(x, /, out=None):
  """Test elementwise for negative infinity.

  Integer and bool inputs give False everywhere; complex inputs raise a ValueError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).
    out: unsupported; must be None, else NotImplementedError is raised.

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isneginf(jnp.array([1., jnp.inf, -jnp.inf]))
    Array([False, False,  True], dtype=bool)

  See also:
    :func:`hlox.numpy.isposinf`, :func:`hlox.numpy.isinf`.
  """
  _no_out(out)
  return _isinf_signed("isneginf", x, -np.inf)


def isnan(x, /):
  """Test elementwise for NaN (not a number).

  Integer and bool inputs are never NaN. A complex value is NaN when either part is.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isnan(jnp.array([1., jnp.nan, jnp.inf]))
    Array([False,  True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.isfinite`, :func:`hlox.numpy.nan_to_num`.
  """
  x, = _arraylike("isnan", x)
  # Also for integers (never NaN): the result is then weak when x is, as in JAX.
  return lax.ne(x, x)


_SIGNED_OF_WIDTH = {8: dtypes.int8, 16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}


def signbit(x, /):
  """Test elementwise whether the sign bit is set.

  Unlike ``x < 0`` this is True for ``-0.0`` and for NaNs with the sign bit set. Bools give False;
  complex inputs raise a ValueError.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.signbit(jnp.array([-1., -0., 0., 2.]))
    Array([ True,  True, False, False], dtype=bool)
    >>> jnp.signbit(jnp.array([-3, 3]))
    Array([ True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.copysign`, :func:`hlox.numpy.sign`.
  """
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
  """Elementwise magnitude of ``x1`` with the sign of ``x2``.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). The sign of ``x2`` is its sign bit, so ``-0.0`` counts as
  negative. Complex inputs raise a TypeError.

  Args:
    x1: magnitudes, an array or scalar.
    x2: signs, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``|x1|`` signed like ``x2``, with the
    promoted inexact dtype.

  Examples:
    >>> jnp.copysign(jnp.array([1., -2., 3.]), jnp.array([-1., 1., -0.]))
    Array([-1.,  2., -3.], dtype=float32)

  See also:
    :func:`hlox.numpy.signbit`.
  """
  x1, x2 = _args_inexact("copysign", x1, x2)
  _check_not_complex("copysign", x1)
  magnitude = lax.abs(x1)
  return _where(signbit(x2), lax.neg(magnitude), magnitude)


def nextafter(x1, x2, /):
  """Elementwise next representable floating point value after ``x1`` toward ``x2``.

  The inputs broadcast together and are promoted to a common inexact dtype (integers and bools
  become the default float dtype). Where ``x1 == x2`` the result is ``x2``. The step is taken in
  the promoted dtype, so it depends on the precision (float32 by default).

  Args:
    x1: starting values, an array or scalar.
    x2: directions, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding the neighbouring values, with the
    promoted inexact dtype.

  Examples:
    >>> jnp.nextafter(jnp.array([1., 1.]), jnp.array([2., 0.])) - 1
    Array([ 1.1920929e-07, -5.9604645e-08], dtype=float32)

  See also:
    :func:`hlox.numpy.spacing`.
  """
  return lax.nextafter(*_args_inexact("nextafter", x1, x2))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """Replace NaN and infinities by finite numbers elementwise.

  Non-float inputs are returned unchanged; complex inputs are handled part by part. The
  replacement values are converted to ``x``'s dtype.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).
    copy: ignored; accepted for NumPy compatibility (arrays are immutable, the result is always a
      new array).
    nan: value for NaN entries. Default 0.0.
    posinf: value for ``+inf`` entries; None (default) means the largest finite value of the
      dtype.
    neginf: value for ``-inf`` entries; None (default) means the most negative finite value of the
      dtype.

  Returns:
    An array of ``x``'s shape and dtype with the replacements made.

  Examples:
    >>> jnp.nan_to_num(jnp.array([1., jnp.nan, jnp.inf, -jnp.inf]))
    Array([ 1.0000000e+00,  0.0000000e+00,  3.4028235e+38, -3.4028235e+38],      dtype=float32)
    >>> jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf]), nan=-1., posinf=100.)
    Array([ -1., 100.], dtype=float32)

  See also:
    :func:`hlox.numpy.isnan`, :func:`hlox.numpy.isinf`.
  """
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
  """Heaviside step function elementwise.

  It is 0 where ``x1 < 0``, ``x2`` where ``x1 == 0`` and 1 where ``x1 > 0``; NaN in ``x1`` stays
  NaN. The inputs broadcast together and are promoted to a common inexact dtype (integers and
  bools become the default float dtype). Complex inputs raise a TypeError.

  Args:
    x1: input array or scalar.
    x2: the value at ``x1 == 0``, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding the step values, with the promoted
    inexact dtype.

  Examples:
    >>> jnp.heaviside(jnp.array([-2., 0., 3.]), 0.5)
    Array([0. , 0.5, 1. ], dtype=float32)
  """
  x1, x2 = _args_inexact("heaviside", x1, x2)
  _check_not_complex("heaviside", x1)
  zero, one = (_jit_const(x1, v) for v in (0, 1))
  at_zero = _where(lax.ne(x1, x1), x1, x2)  # NaN stays NaN
  return _where(lax.lt(x1, zero), zero, _where(lax.gt(x1, zero), one, at_zero))


# --- logical and bitwise -----------------------------------------------------------------

def logical_and(x, y, /):
  """Elementwise logical AND: the truth value of ``x and y``.

  Inputs of any dtype are accepted: non-zero values count as True. It is a
  :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``, ``reduceat``,
  ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.logical_and(jnp.array([True, True, False]), jnp.array([True, False, False]))
    Array([ True, False, False], dtype=bool)
    >>> jnp.logical_and.reduce(jnp.array([1, 2, 0]))
    Array(False, dtype=bool)

  See also:
    :func:`hlox.numpy.bitwise_and`, :func:`hlox.numpy.all`.
  """
  return lax.bitwise_and(*map(_to_bool, _args("logical_and", x, y)))


def logical_or(x, y, /):
  """Elementwise logical OR: the truth value of ``x or y``.

  Inputs of any dtype are accepted: non-zero values count as True. It is a
  :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``, ``reduceat``,
  ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.logical_or(jnp.array([True, False, False]), jnp.array([False, False, True]))
    Array([ True, False,  True], dtype=bool)
    >>> jnp.logical_or(jnp.array([0., 2.]), 0)
    Array([False,  True], dtype=bool)

  See also:
    :func:`hlox.numpy.bitwise_or`, :func:`hlox.numpy.any`.
  """
  return lax.bitwise_or(*map(_to_bool, _args("logical_or", x, y)))


def logical_xor(x, y, /):
  """Elementwise logical XOR: whether exactly one of ``x`` and ``y`` is true.

  Inputs of any dtype are accepted: non-zero values count as True. It is a
  :class:`hlox.numpy.ufunc`, so it also has the methods ``reduce``, ``accumulate``, ``reduceat``,
  ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.logical_xor(jnp.array([True, True, False]), jnp.array([True, False, False]))
    Array([False,  True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.bitwise_xor`.
  """
  return lax.bitwise_xor(*map(_to_bool, _args("logical_xor", x, y)))


def logical_not(x, /):
  """Elementwise logical NOT: the truth value of ``not x``.

  Inputs of any dtype are accepted: non-zero values count as True.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.logical_not(jnp.array([True, False]))
    Array([False,  True], dtype=bool)
    >>> jnp.logical_not(jnp.array([0, 3]))
    Array([ True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.invert`.
  """
  return lax.bitwise_not(*map(_to_bool, _args("logical_not", x)))


def _check_bitwise(name, *args):
  for a in args:
    dtype = _dtype(a)
    if not (dtypes.is_int(dtype) or dtype == dtypes.bool_):
      raise TypeError(f"{name} is only defined for integer and boolean inputs, got "
                      f"{', '.join(_dtype(b).name for b in args)}")


def bitwise_and(x, y, /):
  """Elementwise bitwise AND: ``x & y``.

  Only integer and bool inputs are accepted (others raise a TypeError); for bools it is the
  logical operation. The inputs broadcast together and are promoted with JAX's rules: Python
  scalars are weakly typed, so ``int8_array + 1`` stays int8. It is a :class:`hlox.numpy.ufunc`,
  so it also has the methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x & y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.bitwise_and(jnp.array([12, 10]), 6)
    Array([4, 2], dtype=int32)
    >>> jnp.bitwise_and(jnp.array([True, True]), jnp.array([True, False]))
    Array([ True, False], dtype=bool)

  See also:
    :func:`hlox.numpy.logical_and`.
  """
  args = _args("bitwise_and", x, y)
  _check_bitwise("bitwise_and", *args)
  return lax.bitwise_and(*args)


def bitwise_or(x, y, /):
  """Elementwise bitwise OR: ``x | y``.

  Only integer and bool inputs are accepted (others raise a TypeError); for bools it is the
  logical operation. The inputs broadcast together and are promoted with JAX's rules: Python
  scalars are weakly typed, so ``int8_array + 1`` stays int8. It is a :class:`hlox.numpy.ufunc`,
  so it also has the methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x | y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.bitwise_or(jnp.array([12, 10]), 6)
    Array([14, 14], dtype=int32)
    >>> jnp.bitwise_or.reduce(jnp.array([1, 2, 8]))
    Array(11, dtype=int32)

  See also:
    :func:`hlox.numpy.logical_or`.
  """
  args = _args("bitwise_or", x, y)
  _check_bitwise("bitwise_or", *args)
  return lax.bitwise_or(*args)


def bitwise_xor(x, y, /):
  """Elementwise bitwise XOR: ``x ^ y``.

  Only integer and bool inputs are accepted (others raise a TypeError); for bools it is the
  logical operation. The inputs broadcast together and are promoted with JAX's rules: Python
  scalars are weakly typed, so ``int8_array + 1`` stays int8. It is a :class:`hlox.numpy.ufunc`,
  so it also has the methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at``.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x ^ y``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.bitwise_xor(jnp.array([12, 10]), 6)
    Array([10, 12], dtype=int32)

  See also:
    :func:`hlox.numpy.logical_xor`.
  """
  args = _args("bitwise_xor", x, y)
  _check_bitwise("bitwise_xor", *args)
  return lax.bitwise_xor(*args)


def bitwise_not(x, /):
  """Alias of :func:`hlox.numpy.invert`."""
  args = _args("bitwise_not", x)
  _check_bitwise("bitwise_not", *args)
  return lax.bitwise_not(*args)


def invert(x, /):
  """Elementwise bitwise NOT: ``~x``.

  Only integer and bool inputs are accepted (others raise a TypeError); for bools it is the
  logical operation. Signed integers use two's complement, so ``~x == -x - 1``.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding ``~x``, with ``x``'s dtype.

  Examples:
    >>> jnp.invert(jnp.array([0, 5, -1]))
    Array([-1, -6,  0], dtype=int32)
    >>> jnp.invert(jnp.array([0, 5], dtype=jnp.uint8))
    Array([255, 250], dtype=uint8)
    >>> jnp.invert(jnp.array([True, False]))
    Array([False,  True], dtype=bool)

  See also:
    :func:`hlox.numpy.logical_not`.
  """
  return bitwise_not(x)


def bitwise_invert(x, /):
  """Alias of :func:`hlox.numpy.invert`."""
  return bitwise_not(x)


def left_shift(x1, x2, /):
  """Elementwise left bit shift: ``x1 << x2``.

  Only integer and bool inputs are accepted (others raise a TypeError); bools are promoted to
  integers. Bits shifted out are lost, and shifts by at least the bit width give 0.

  Args:
    x1: values to shift, an integer array or scalar.
    x2: numbers of bits to shift by, an integer array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 << x2``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.left_shift(jnp.array([1, 3, -1]), 2)
    Array([ 4, 12, -4], dtype=int32)

  See also:
    :func:`hlox.numpy.right_shift`.
  """
  args = _args_numeric("left_shift", x1, x2)
  _check_bitwise("left_shift", *args)
  return lax.shift_left(*args)


def right_shift(x1, x2, /):
  """Elementwise right bit shift: ``x1 >> x2``.

  The shift is arithmetic for signed integers (the sign is kept) and logical for unsigned ones.
  Only integer and bool inputs are accepted (others raise a TypeError); bools are promoted to
  integers.

  Args:
    x1: values to shift, an integer array or scalar.
    x2: numbers of bits to shift by, an integer array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs holding ``x1 >> x2``, with the promoted dtype of
    the inputs.

  Examples:
    >>> jnp.right_shift(jnp.array([8, 13, -8]), 2)
    Array([ 2,  3, -2], dtype=int32)

  See also:
    :func:`hlox.numpy.left_shift`.
  """
  x1, x2 = _args_numeric("right_shift", x1, x2)
  _check_bitwise("right_shift", x1, x2)
  if dtypes.is_unsigned_int(_dtype(x1)):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


def bitwise_left_shift(x1, x2, /):
  """Alias of :func:`hlox.numpy.left_shift`."""
  return left_shift(x1, x2)


def bitwise_right_shift(x1, x2, /):
  """Alias of :func:`hlox.numpy.right_shift`."""
  return right_shift(x1, x2)


def bitwise_count(x, /):
  """Elementwise number of set bits (population count) of ``|x|``.

  Only integer and bool inputs are accepted (others raise a TypeError). Negative values are
  counted by their absolute value, as in NumPy.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    A uint8 array of ``x``'s shape holding the bit counts.

  Examples:
    >>> jnp.bitwise_count(jnp.array([0, 7, -8, 255]))
    Array([0, 3, 1, 8], dtype=uint8)
  """
  x, = _args_numeric("bitwise_count", x)
  _check_bitwise("bitwise_count", x)
  magnitude = x if dtypes.is_unsigned_int(_dtype(x)) else lax.abs(x)
  return lax.convert_element_type(lax.population_count(magnitude), dtypes.uint8)


# --- comparisons -------------------------------------------------------------------------

def equal(x, y, /):
  """Elementwise comparison ``x == y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.equal(jnp.array([1, 2, 3]), 2)
    Array([False,  True, False], dtype=bool)
    >>> jnp.equal(jnp.array([jnp.nan, 1.]), jnp.array([jnp.nan, 1.]))
    Array([False,  True], dtype=bool)

  See also:
    the ``==`` operator.
  """
  try:
    return lax.eq(*_args("equal", x, y))
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "equal", x, y)


def not_equal(x, y, /):
  """Elementwise comparison ``x != y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.not_equal(jnp.array([1, 2, 3]), 2)
    Array([ True, False,  True], dtype=bool)

  See also:
    the ``!=`` operator.
  """
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
  """Elementwise comparison ``x < y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything. Complex numbers are ordered lexicographically: by real part, then by imaginary part.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.less(jnp.array([1, 2, 3]), 2)
    Array([ True, False, False], dtype=bool)
    >>> jnp.less(jnp.array([1+2j, 1+2j]), jnp.array([1+3j, 0+5j]))
    Array([ True, False], dtype=bool)

  See also:
    the ``<`` operator.
  """
  return _ordered_compare(lax.lt, *_args("less", x, y))


def less_equal(x, y, /):
  """Elementwise comparison ``x <= y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything. Complex numbers are ordered lexicographically: by real part, then by imaginary part.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.less_equal(jnp.array([1, 2, 3]), 2)
    Array([ True,  True, False], dtype=bool)

  See also:
    the ``<=`` operator.
  """
  return _ordered_compare(lax.le, *_args("less_equal", x, y))


def greater(x, y, /):
  """Elementwise comparison ``x > y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything. Complex numbers are ordered lexicographically: by real part, then by imaginary part.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.greater(jnp.array([1, 2, 3]), 2)
    Array([False, False,  True], dtype=bool)

  See also:
    the ``>`` operator.
  """
  return _ordered_compare(lax.gt, *_args("greater", x, y))


def greater_equal(x, y, /):
  """Elementwise comparison ``x >= y``.

  The inputs broadcast together and are promoted to a common dtype first. NaN compares unequal to
  everything. Complex numbers are ordered lexicographically: by real part, then by imaginary part.

  Args:
    x: first input array or scalar.
    y: second input array or scalar; broadcast against ``x``.

  Returns:
    A bool array of the broadcast shape of the inputs.

  Examples:
    >>> jnp.greater_equal(jnp.array([1, 2, 3]), 2)
    Array([False,  True,  True], dtype=bool)

  See also:
    the ``>=`` operator.
  """
  return _ordered_compare(lax.ge, *_args("greater_equal", x, y))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Elementwise test whether ``a`` and ``b`` are equal within a tolerance.

  Finite values are close when ``|a - b| <= atol + rtol * |b|`` (not symmetric in ``a`` and
  ``b``); infinities are close only to the same infinity. Integer inputs are compared in the
  default float dtype; the tolerances are converted to the inputs' real dtype, so float32 inputs
  are compared in float32.

  Args:
    a: first input array or scalar.
    b: second input array or scalar (the reference); broadcast against ``a``.
    rtol: relative tolerance, scaled by ``|b|``. Default 1e-05.
    atol: absolute tolerance. Default 1e-08.
    equal_nan: whether NaNs in the same position count as close. Default False.

  Returns:
    A bool array of the broadcast shape of ``a`` and ``b``.

  Examples:
    >>> jnp.isclose(jnp.array([1., 1.1, jnp.inf]), jnp.array([1. + 1e-7, 1., jnp.inf]))
    Array([ True, False,  True], dtype=bool)
    >>> jnp.isclose(jnp.array([jnp.nan]), jnp.nan, equal_nan=True)
    Array([ True], dtype=bool)

  See also:
    :func:`hlox.numpy.allclose`.
  """
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
  """Whether all elements of ``a`` and ``b`` are equal within a tolerance.

  It is ``all(isclose(a, b, rtol, atol, equal_nan))``; the answer is a 0-d bool Array, not a
  Python bool, so it can be traced (convert it with ``bool()`` outside ``jit``).

  Args:
    a: first input array or scalar.
    b: second input array or scalar (the reference); broadcast against ``a``.
    rtol: relative tolerance, scaled by ``|b|``. Default 1e-05.
    atol: absolute tolerance. Default 1e-08.
    equal_nan: whether NaNs in the same position count as close. Default False.

  Returns:
    A 0-d bool array.

  Examples:
    >>> jnp.allclose(jnp.array([1., 2.]), jnp.array([1., 2. + 1e-6]))
    Array(True, dtype=bool)
    >>> jnp.allclose(jnp.array([1., 2.]), jnp.array([1., 2.1]))
    Array(False, dtype=bool)

  See also:
    :func:`hlox.numpy.isclose`, :func:`hlox.numpy.array_equal`.
  """
  if dtypes.extended_dtype_of(a) is None and dtypes.extended_dtype_of(b) is None:
    check_arraylike("allclose", a, b)  # typed keys are no numbers, but isclose takes them
  close = isclose(a, b, rtol, atol, equal_nan)
  ndim = get_aval(close).ndim
  if ndim == 0:
    return _asarray(close)
  return lax.reduce_and(close, tuple(range(ndim)))


# --- complex numbers ---------------------------------------------------------------------

def real(val, /):
  """Real part of ``val`` elementwise.

  Real inputs are returned unchanged.

  Args:
    val: input array or scalar.

  Returns:
    An array of ``val``'s shape, in the real dtype matching ``val``'s (``val``'s own dtype when it
    is real).

  Examples:
    >>> jnp.real(jnp.array([1+2j, 3-4j]))
    Array([1., 3.], dtype=float32)
    >>> jnp.real(jnp.array([1, 2]))
    Array([1, 2], dtype=int32)

  See also:
    :func:`hlox.numpy.imag`.
  """
  val, = _arraylike("real", val)
  return lax.real(val) if dtypes.is_complex(_dtype(val)) else _asarray(val)


def imag(val, /):
  """Imaginary part of ``val`` elementwise.

  Real inputs give zeros of their own dtype.

  Args:
    val: input array or scalar.

  Returns:
    An array of ``val``'s shape, in the real dtype matching ``val``'s (``val``'s own dtype when it
    is real).

  Examples:
    >>> jnp.imag(jnp.array([1+2j, 3-4j]))
    Array([ 2., -4.], dtype=float32)
    >>> jnp.imag(jnp.array([1., 2.]))
    Array([0., 0.], dtype=float32)

  See also:
    :func:`hlox.numpy.real`.
  """
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
  """Complex conjugate elementwise.

  Real inputs are returned unchanged.

  Args:
    x: input array or scalar (Python scalars, NumPy arrays and Arrays are accepted).

  Returns:
    An array of ``x``'s shape holding the conjugates, with ``x``'s dtype.

  Examples:
    >>> jnp.conjugate(jnp.array([1+2j, 3-4j]))
    Array([1.-2.j, 3.+4.j], dtype=complex64)
  """
  x, = _arraylike("conjugate", x)
  return lax.conj(x) if dtypes.is_complex(_dtype(x)) else _asarray(x)


def conj(x, /):
  """Alias of :func:`hlox.numpy.conjugate`."""
  return conjugate(x)


def angle(z, deg=False):
  """Argument (phase angle) of complex values elementwise.

  Computed as ``arctan2(imag(z), real(z))``. Integer inputs (and real 0-d floats) give the default
  float dtype, as in JAX.

  Args:
    z: input array or scalar, complex or real.
    deg: if True return degrees, else radians. Default False.

  Returns:
    An array of ``z``'s shape holding angles in ``[-pi, pi]`` (or ``[-180, 180]``), in the real
    dtype matching ``z``'s.

  Examples:
    >>> jnp.angle(jnp.array([1+1j, -1+0j, -1j]))
    Array([ 0.7853982,  3.1415927, -1.5707964], dtype=float32)
    >>> jnp.angle(jnp.array([1+1j]), deg=True)
    Array([45.], dtype=float32)

  See also:
    :func:`hlox.numpy.arctan2`, :func:`hlox.numpy.absolute`.
  """
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
  """Select elements from ``x`` or ``y`` depending on ``condition``.

  ``where(condition, x, y)`` is ``x`` where ``condition`` is true and ``y`` elsewhere; the three
  broadcast together and ``x`` and ``y`` are promoted to a common dtype. Both branches are always
  computed and differentiated: a NaN in the derivative of the unselected branch still makes the
  gradient NaN (make its input safe with an inner ``where``).

  ``where(condition)`` returns the indices of the non-zero elements, like
  :func:`hlox.numpy.nonzero`. Its result shape depends on the values, so under ``jit`` it needs a
  static ``size``; otherwise ``condition`` must be concrete, else a ConcretizationTypeError is
  raised.

  Args:
    condition: boolean array (other dtypes are tested for non-zero).
    x: values where ``condition`` is true; give both ``x`` and ``y`` or neither.
    y: values where ``condition`` is false.
    size: one-argument form only: the static number of indices to return; extra ones are cut off,
      missing ones padded with ``fill_value``.
    fill_value: one-argument form only: the padding index (a scalar, or a tuple with one per
      dimension). Default 0.

  Returns:
    With ``x`` and ``y``: an array of the broadcast shape of the three inputs, with the promoted
    dtype of ``x`` and ``y``. With only ``condition``: a tuple of ``condition.ndim`` 1-d integer
    arrays of indices.

  Examples:
    >>> jnp.where(jnp.array([True, False, True]), jnp.array([1, 2, 3]), 0)
    Array([1, 0, 3], dtype=int32)
    >>> jnp.where(jnp.array([0, 5, 0, 7]))
    (Array([1, 3], dtype=int32),)
    >>> jnp.where(jnp.array([0, 5, 0, 7]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)

  See also:
    :func:`hlox.numpy.select`, :func:`hlox.numpy.nonzero`.
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
  """Limit the values of an array to the interval ``[min, max]``.

  It is ``minimum(max, maximum(min, arr))``; either bound may be None to leave that side open, and
  the bounds broadcast against ``arr``. Complex inputs raise a ValueError, since complex numbers
  have no order.

  Args:
    arr: input array or scalar.
    min: lower bound (array or scalar), or None.
    max: upper bound (array or scalar), or None.
    a: NumPy's name for ``arr``; give the array only once.
    a_min: NumPy's name for ``min``.
    a_max: NumPy's name for ``max``.

  Returns:
    An array of the broadcast shape of ``arr`` and the bounds, with their promoted dtype.

  Examples:
    >>> jnp.clip(jnp.array([-2, 0, 3, 8]), 0, 5)
    Array([0, 0, 3, 5], dtype=int32)
    >>> jnp.clip(jnp.array([-2., 0.5, 3.]), max=1.)
    Array([-2. ,  0.5,  1. ], dtype=float32)
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
