"""Elementwise primitives: arithmetic, transcendental, special functions, complex parts,
comparison, bitwise, select/clamp, conversions and the identity ``copy``.

Each primitive is defined with its rules right below it (lowering, then JVP and, for the
linear ones, transpose, then batching). Operands broadcast when they are scalars or have
equal ranks with size-1 dimensions; they must share a dtype (``hlox.numpy`` promotes). For
convenience a Python scalar next to array operands takes their dtype, but only when its kind
fits (an ``int`` may become a float, a ``float`` never an integer), so a scalar can never be
silently truncated.
"""
from __future__ import annotations

import builtins
import enum
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax.base import (_PY_SCALARS, broadcast_in_dim, convert_element_type,
                           convert_element_type_p, defbroadcasting, full_like, reduce_sum,
                           reshape)
from hlox.lax.utils import (any_kinds, binop, bool_or_int, broadcasting_shape_rule,
                            defvectorized, float_kinds, int_kinds, nary_lowering,
                            number_kinds, real_float, shape_str, standard_primitive, unop)
from hlox.runtime.array import Array, copy_array, device_put

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
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma",
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
    # primitives
    "add_p", "sub_p", "mul_p", "div_p", "rem_p", "pow_p", "integer_pow_p", "max_p", "min_p",
    "neg_p", "sign_p", "abs_p", "square_p", "nextafter_p", "floor_p", "ceil_p", "round_p",
    "is_finite_p", "exp_p", "exp2_p", "log_p", "log1p_p", "expm1_p", "sqrt_p", "rsqrt_p",
    "cbrt_p", "tanh_p", "logistic_p", "sin_p", "cos_p", "tan_p", "asin_p", "acos_p",
    "atan_p", "atan2_p", "sinh_p", "cosh_p", "asinh_p", "acosh_p", "atanh_p", "erf_p",
    "erfc_p", "erf_inv_p", "lgamma_p", "digamma_p", "polygamma_p", "real_p", "imag_p",
    "conj_p", "complex_p", "eq_p", "ne_p", "lt_p", "le_p", "gt_p", "ge_p", "not_p", "and_p", "or_p",
    "xor_p", "shift_left_p", "shift_right_logical_p", "shift_right_arithmetic_p",
    "population_count_p", "clz_p", "select_n_p", "clamp_p", "convert_element_type_p",
    "bitcast_convert_type_p", "reduce_precision_p", "copy_p",
]

# This module defines ``abs``, ``max``, ``min``, ``round``, ``pow`` and ``complex``: inside it
# the Python builtins are always spelled ``builtins.x``. (``_PY_SCALARS``, the Python scalar
# types, comes from ``base``.)


# --- operand handling --------------------------------------------------------------------

def _operands(name, *args):
  """The operands of a ``lax`` elementwise primitive, as given.

  ``lax`` does not promote (as JAX): a Python scalar is an array of its default dtype
  (int32/float32/complex64, 64-bit with x64 on) and must then match the other operands'
  dtype exactly, so ``lax.add(f32, 1.0)`` works without x64 but ``lax.add(i32, 1.5)``,
  ``lax.add(f32, 1)`` and ``lax.lt(5, u16)`` are the dtype rule's TypeError. The weak-scalar
  convenience belongs to ``hlox.numpy``; rules inside hlox build their constants with
  ``_const``. Kept as the one place every binary primitive's operands pass through.
  """
  return args


def _strong_zero(x):
  """A zero NumPy scalar of ``x``'s dtype (not weakly typed)."""
  return np.zeros((), get_aval(x).dtype)


def _const(x, value):
  """``value`` as a scalar of ``x``'s dtype and weak type, to combine with ``x`` in ``lax``:
  a Python scalar where its default dtype is ``x``'s (a weak literal), else a NumPy scalar of
  ``x``'s dtype, or a weak 0-d array when ``x`` is weak. A Python-scalar ``x`` gets a Python
  scalar of its own type."""
  t = type(x)
  if t in _PY_SCALARS:
    return t(value)
  aval = get_aval(x)
  dtype = aval.dtype
  py_value = dtypes.scalar_type_of(dtype)(value)
  if dtypes.python_scalar_dtype(py_value) == dtype:
    return py_value
  if type(py_value) is int and dtypes.is_int(dtype):
    info = dtypes.iinfo(dtype)
    if not info.min <= py_value <= info.max:
      raise OverflowError(f"Python int {py_value} is out of bounds for {dtype.name}")
  array = np.asarray(py_value, dtype=dtype)
  if aval.weak_type:
    # A weak value of a dtype no Python scalar maps to: a weak 0-d Array (under a trace it
    # becomes a weak literal).
    return device_put(array, weak_type=True)
  return array[()]


class AccuracyMode(enum.Enum):
  """Requested accuracy of a transcendental function (``accuracy=`` of ``exp``, ``log``,
  ``sin``, ...): ``HIGHEST`` or the backend's ``DEFAULT``."""

  HIGHEST = 1
  DEFAULT = 2


class Tolerance:
  """An accuracy request as error bounds: absolute ``atol``, relative ``rtol`` and ``ulps``
  (units in the last place); a value passed as ``accuracy=``."""

  __slots__ = ("atol", "rtol", "ulps")

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0 or rtol < 0 or ulps < 0:
      raise ValueError(f"Tolerance values must be non-negative, got atol={atol}, rtol={rtol}, "
                       f"ulps={ulps}")
    self.atol, self.rtol, self.ulps = float(atol), float(rtol), int(ulps)

  def _key(self):
    return (self.atol, self.rtol, self.ulps)

  def __eq__(self, other):
    return isinstance(other, Tolerance) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def _check_accuracy(name, accuracy):
  # Accepted and validated; the CPU backend computes every function at its one accuracy
  # (as JAX on CPU, which ignores the request).
  if accuracy is not None and not isinstance(accuracy, (AccuracyMode, Tolerance)):
    raise TypeError(f"lax.{name}: accuracy must be None, a lax.AccuracyMode or a "
                    f"lax.Tolerance, got {accuracy!r}")


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


# --- autodiff helpers --------------------------------------------------------------------
# The rules below run on the JVP trace's parent (or while transposing), so they call the
# public functions of this module; their constants take the other operand's dtype (_const).



def _shape(x) -> tuple:
  return get_aval(x).shape


def _broadcast_shape(*xs) -> tuple:
  """The shape an elementwise primitive gives operands ``xs``."""
  return broadcasting_shape_rule("broadcast", *(get_aval(x) for x in xs))


def _unbroadcast(aval, ct):
  """Undo an elementwise primitive's broadcasting of an operand of ``aval``: each operand
  element fed several output elements, so its cotangent is the sum of theirs."""
  ct_shape = _shape(ct)
  if ct_shape == aval.shape:
    return ct
  if not aval.shape:
    return reduce_sum(ct, tuple(range(len(ct_shape))))
  dims = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct_shape)) if a != c)
  return reshape(reduce_sum(ct, dims), aval.shape)


def _maybe_broadcast(shape, t):
  """``t`` broadcast to the output ``shape`` (the tangent of a broadcast operand)."""
  t_shape = _shape(t)
  if t_shape == shape:
    return t
  dims = () if not t_shape else tuple(range(len(shape)))
  return broadcast_in_dim(t, shape, dims)


def _zeros_like(x):
  return full_like(x, 0)


def _replace_zero(x):
  """``x`` with its zeros replaced by ones (a safe divisor, or log argument)."""
  return select(eq(x, _const(x, 0)), full_like(x, 1), x)


# --- arithmetic --------------------------------------------------------------------------

add_p = binop(number_kinds, "add")
xla.register_lowering(add_p, nary_lowering(hlo.add))

def _add_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = add_p.bind(x, y)
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  if type(tx) is ad.Zero:
    return out, _maybe_broadcast(_shape(out), ty)
  if type(ty) is ad.Zero:
    return out, _maybe_broadcast(_shape(out), tx)
  return out, add(tx, ty)

def _add_transpose(ct, x, y):
  # Only the undefined (linear) operands get cotangents; a defined one can appear when a
  # zero was instantiated as a constant.
  if type(ct) is ad.Zero:
    return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in (x, y)]
  return [_unbroadcast(a.aval, ct) if ad.is_undefined_primal(a) else None for a in (x, y)]

ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_transposes[add_p] = _add_transpose
defbroadcasting(add_p)

def add(x, y):
  """Elementwise addition ``x + y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.add`` does that).
  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.add(jnp.array([1, 2]), jnp.array([3, 4]))
    Array([4, 6], dtype=int32)
    >>> lax.add(jnp.array([1., 2.]), 1.)
    Array([2., 3.], dtype=float32)

  See also:
    ``jnp.add`` for the NumPy-style version with promotion and broadcasting.
  """
  return add_p.bind(*_operands("add", x, y))


sub_p = binop(number_kinds, "sub")
xla.register_lowering(sub_p, nary_lowering(hlo.subtract))

def _sub_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  out = sub_p.bind(x, y)
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  if type(tx) is ad.Zero:
    return out, _maybe_broadcast(_shape(out), neg(ty))
  if type(ty) is ad.Zero:
    return out, _maybe_broadcast(_shape(out), tx)
  return out, sub(tx, ty)

def _sub_transpose(ct, x, y):
  if type(ct) is ad.Zero:
    return [ad.Zero(a.aval) if ad.is_undefined_primal(a) else None for a in (x, y)]
  return [_unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, neg(ct)) if ad.is_undefined_primal(y) else None]

ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[sub_p] = _sub_transpose
defbroadcasting(sub_p)

def sub(x, y):
  """Elementwise subtraction ``x - y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.subtract`` does that).
  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.sub(jnp.array([5., 7.]), jnp.array([1., 2.]))
    Array([4., 5.], dtype=float32)

  See also:
    ``jnp.subtract`` for the NumPy-style version with promotion and broadcasting.
  """
  return sub_p.bind(*_operands("sub", x, y))


mul_p = binop(number_kinds, "mul")
xla.register_lowering(mul_p, nary_lowering(hlo.multiply))
ad.defbilinear(mul_p,
               lambda ct, x, y: _unbroadcast(x.aval, mul(ct, y)),
               lambda ct, x, y: _unbroadcast(y.aval, mul(x, ct)))
defbroadcasting(mul_p)

def mul(x, y, *, out_dtype=None):
  """Elementwise multiplication ``x * y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.multiply`` does that).
  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  With ``out_dtype`` the operands (which may then differ in dtype) are converted to that
  dtype first and the product has it.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.
    out_dtype: keyword-only; optional dtype of the product.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.mul(jnp.array([1., 2.]), jnp.array([3., 4.]))
    Array([3., 8.], dtype=float32)
    >>> lax.mul(jnp.array([100], jnp.int8), jnp.array([3], jnp.int8), out_dtype=jnp.int32)
    Array([300], dtype=int32)

  See also:
    ``jnp.multiply`` for the NumPy-style version with promotion and broadcasting.
  """
  if out_dtype is not None:
    out_dtype = dtypes.canonicalize_dtype(np.dtype(out_dtype))
    x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
  return mul_p.bind(*_operands("mul", x, y))


div_p = binop(number_kinds, "div")
xla.register_lowering(div_p, nary_lowering(hlo.divide))

def _div_transpose(ct, x, y):
  # div is linear in the numerator only.
  if ad.is_undefined_primal(y):
    raise ValueError("div: the transpose is defined for a linear numerator only, but the "
                     "denominator depends on the linear input (div is not linear in it)")
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval), None]
  return [_unbroadcast(x.aval, div(ct, y)), None]

ad.defjvp(div_p,
          lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
ad.primitive_transposes[div_p] = _div_transpose
defbroadcasting(div_p)

def div(x, y):
  """Elementwise division ``x / y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.divide`` does that).
  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Integer division rounds toward zero, as in C (unlike ``jnp.floor_divide``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.div(jnp.array([7, -7]), jnp.array([2, 2]))
    Array([ 3, -3], dtype=int32)
    >>> lax.div(jnp.array([1., 3.]), 2.)
    Array([0.5, 1.5], dtype=float32)

  See also:
    ``jnp.divide`` for the NumPy-style version with promotion and broadcasting.
  """
  return div_p.bind(*_operands("div", x, y))


rem_p = binop(("int", "float"), "rem")
xla.register_lowering(rem_p, nary_lowering(hlo.remainder))
# rem(x, y) == x - y * trunc(x / y), and trunc(x / y) is piecewise constant.
ad.defjvp(rem_p,
          lambda g, x, y: _maybe_broadcast(_broadcast_shape(x, y), g),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))
defbroadcasting(rem_p)

def rem(x, y):
  """Elementwise remainder of ``x / y``, with the sign of ``x``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.fmod`` does that).
  Defined for integer and floating dtypes (others raise ``TypeError``).

  As C's ``fmod``: ``x - div(x, y) * y`` (unlike ``jnp.remainder``, which follows ``y``'s sign).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.rem(jnp.array([7, -7]), jnp.array([3, 3]))
    Array([ 1, -1], dtype=int32)

  See also:
    ``jnp.fmod`` for the NumPy-style version with promotion and broadcasting.
  """
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

def _pow_jvp_base(g, ans, x, y):
  shape = _shape(ans)
  if dtypes.is_int(get_aval(y).dtype):
    # An integer exponent: y * x ** (y - 1), but exactly 0 where y == 0 (even at x == 0,
    # where x ** -1 is infinite).
    y = _maybe_broadcast(shape, convert_element_type(y, get_aval(x).dtype))
    jac = select(eq(y, _const(y, 0)), _zeros_like(y),
                 mul(_replace_zero(y), pow(x, sub(y, _const(y, 1)))))
  else:
    jac = mul(y, pow(x, sub(y, _const(y, 1))))
  return mul(g, jac)

def _pow_jvp_exponent(g, ans, x, y):
  # d/dy x ** y == log(x) * x ** y; taken as 0 at x == 0 (where x ** y is 0 or 1).
  return mul(g, mul(log(_replace_zero(x)), ans))

ad.defjvp2(pow_p, _pow_jvp_base, _pow_jvp_exponent)
defbroadcasting(pow_p)

def pow(x, y):
  """Elementwise power ``x ** y``.

  The base ``x`` is floating or complex; the exponent ``y`` is an integer array or has ``x``'s
  dtype. Both must have the same shape or be scalars (else ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the base (floating or complex).
    y: the exponent (integer, or of ``x``'s dtype).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.pow(jnp.array([2., 3.]), jnp.array([3., 2.]))
    Array([8., 9.], dtype=float32)
    >>> lax.pow(jnp.array([2., 3.]), jnp.array([2, 3]))
    Array([ 4., 27.], dtype=float32)
  """
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
  if y == 3:
    # (x * x) * x, JAX's order (square-and-multiply gives x * (x * x): complex products then
    # round differently).
    return hlo.multiply(hlo.multiply(x, x), x)
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

def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros_like(g)
  if y == 1:
    return g
  if y == 2:
    return mul(g, mul(_const(x, 2), x))
  return mul(g, mul(_const(x, y), integer_pow(x, y - 1)))

ad.defjvp(integer_pow_p, _integer_pow_jvp)
defvectorized(integer_pow_p)

def integer_pow(x, y: int):
  """Elementwise power ``x ** y`` for a static Python integer ``y``.

  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Lowered to repeated multiplication. A negative ``y`` is allowed only for floating and complex
  ``x``.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the exponent, a static Python int.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.integer_pow(jnp.array([1, 2, 3]), 3)
    Array([ 1,  8, 27], dtype=int32)
    >>> lax.integer_pow(jnp.array([2., 4.]), -1)
    Array([0.5 , 0.25], dtype=float32)
  """
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


def _balanced_eq(x, ans, other):
  """The share of the output tangent that comes from ``x`` in ``max``/``min``: 1 where ``x``
  was chosen, 0 where it was not, and 1/2 at ties (as JAX: equal arguments split it)."""
  dtype = get_aval(ans).dtype
  chosen = convert_element_type(eq(x, ans), dtype)
  tie = convert_element_type(eq(other, ans), dtype)
  return div(chosen, add(tie, _const(tie, 1)))


max_p = binop(any_kinds, "max")
xla.register_lowering(max_p, _minmax_lowering(hlo.maximum, "GT"))
ad.defjvp2(max_p,
           lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defbroadcasting(max_p)

def max(x, y):
  """Elementwise maximum.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.maximum`` does that).

  NaN propagates; complex numbers compare lexicographically. At ties the gradient is split
  equally between the operands.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.max(jnp.array([1., 5.]), jnp.array([3., 2.]))
    Array([3., 5.], dtype=float32)

  See also:
    ``jnp.maximum`` for the NumPy-style version with promotion and broadcasting.
  """
  return max_p.bind(*_operands("max", x, y))


min_p = binop(any_kinds, "min")
xla.register_lowering(min_p, _minmax_lowering(hlo.minimum, "LT"))
ad.defjvp2(min_p,
           lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
defbroadcasting(min_p)

def min(x, y):
  """Elementwise minimum.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.minimum`` does that).

  NaN propagates; complex numbers compare lexicographically. At ties the gradient is split
  equally between the operands.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.min(jnp.array([1., 5.]), jnp.array([3., 2.]))
    Array([1., 2.], dtype=float32)

  See also:
    ``jnp.minimum`` for the NumPy-style version with promotion and broadcasting.
  """
  return min_p.bind(*_operands("min", x, y))


neg_p = unop(number_kinds, "neg")
xla.register_lowering(neg_p, nary_lowering(hlo.negate))
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])
defvectorized(neg_p)

def neg(x):
  """Elementwise negation ``-x``.

  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.neg(jnp.array([1, -2]))
    Array([-1,  2], dtype=int32)
  """
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
ad.defjvp_zero(sign_p)
defvectorized(sign_p)

def sign(x):
  """Elementwise sign: -1, 0 or 1.

  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  For complex ``x`` it is ``x / abs(x)`` (0 at 0); NaN stays NaN.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.sign(jnp.array([-3., 0., 2.]))
    Array([-1.,  0.,  1.], dtype=float32)
  """
  return sign_p.bind(x)


abs_p = unop(("signed", "float", "complex"), "abs", result_dtype=_real_dtype, narrow_ints=False)
xla.register_lowering(abs_p, nary_lowering(hlo.abs))

def _abs_jvp(g, ans, x):
  dtype = get_aval(x).dtype
  if dtypes.is_complex(dtype):
    # d|x| = Re(conj(x) / |x| * dx), taken as 0 at x == 0.
    scale = div(conj(x), _replace_zero(convert_element_type(ans, dtype)))
    return real(mul(g, scale))
  # As JAX: the slope at 0 is +1 (select(x >= 0, g, -g)), not sign(0) == 0.
  return select(ge(x, _const(x, 0)), g, neg(g))

ad.defjvp2(abs_p, _abs_jvp)
defvectorized(abs_p)

def abs(x):
  """Elementwise absolute value.

  Defined for signed integer, floating and complex dtypes (others raise ``TypeError``).

  For complex ``x`` it is the modulus, of the component dtype (complex64 gives float32).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape (of the component dtype for complex ``x``).

  Examples:
    >>> lax.abs(jnp.array([-1, 2]))
    Array([1, 2], dtype=int32)
    >>> lax.abs(jnp.array([3 + 4j]))
    Array([5.], dtype=float32)
  """
  return abs_p.bind(x)


square_p = unop(number_kinds, "square")

def _square_lowering(ctx, x):
  if dtypes.is_complex(ctx.avals_in[0].dtype):
    return chlo.square(x)  # more accurate than x * x near |re| == |im|
  return hlo.multiply(x, x)

xla.register_lowering(square_p, _square_lowering)
ad.defjvp(square_p, lambda g, x: mul(g, mul(_const(x, 2), x)))
defvectorized(square_p)

def square(x):
  """Elementwise square ``x * x``.

  Defined for integer, floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.square(jnp.array([2., -3.]))
    Array([4., 9.], dtype=float32)
  """
  return square_p.bind(x)


def reciprocal(x):
  """Elementwise reciprocal ``1 / x``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Computed as ``integer_pow(x, -1)``.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.reciprocal(jnp.array([2., 4.]))
    Array([0.5 , 0.25], dtype=float32)
  """
  return integer_pow(x, -1)


nextafter_p = binop(real_float, "nextafter")
xla.register_lowering(nextafter_p, nary_lowering(chlo.next_after))
ad.defjvp_zero(nextafter_p)
defbroadcasting(nextafter_p)

def nextafter(x1, x2):
  """The next representable value after ``x1`` in the direction of ``x2``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.nextafter`` does that).
  Defined for floating dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x1: the starting values.
    x2: the direction.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.nextafter(jnp.float32(1), jnp.float32(2)) - 1
    Array(1.1920929e-07, dtype=float32)

  See also:
    ``jnp.nextafter`` for the NumPy-style version with promotion and broadcasting.
  """
  return nextafter_p.bind(*_operands("nextafter", x1, x2))


# --- rounding ----------------------------------------------------------------------------

floor_p = unop(real_float, "floor")
xla.register_lowering(floor_p, nary_lowering(hlo.floor))
ad.defjvp_zero(floor_p)
defvectorized(floor_p)

def floor(x):
  """Elementwise rounding toward negative infinity.

  Defined for floating dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.floor(jnp.array([1.5, -1.5]))
    Array([ 1., -2.], dtype=float32)
  """
  return floor_p.bind(x)


ceil_p = unop(real_float, "ceil")
xla.register_lowering(ceil_p, nary_lowering(hlo.ceil))
ad.defjvp_zero(ceil_p)
defvectorized(ceil_p)

def ceil(x):
  """Elementwise rounding toward positive infinity.

  Defined for floating dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.ceil(jnp.array([1.5, -1.5]))
    Array([ 2., -1.], dtype=float32)
  """
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
ad.defjvp_zero(round_p)
defvectorized(round_p)

def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Elementwise rounding to the nearest integer.

  Defined for floating dtypes (others raise ``TypeError``).

  Ties are broken by ``rounding_method``: ``RoundingMethod.AWAY_FROM_ZERO`` (0, the default) or
  ``RoundingMethod.TO_NEAREST_EVEN`` (1, NumPy's choice); another value raises ``ValueError``.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).
    rounding_method: how ties are broken (a ``RoundingMethod`` or its int value).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.round(jnp.array([0.5, 1.5, -0.5]))
    Array([ 1.,  2., -1.], dtype=float32)
    >>> lax.round(jnp.array([0.5, 1.5, -0.5]), lax.RoundingMethod.TO_NEAREST_EVEN)
    Array([ 0.,  2., -0.], dtype=float32)
  """
  try:
    rounding_method = RoundingMethod(rounding_method)
  except ValueError:
    raise ValueError(f"round: unknown rounding_method {rounding_method!r}; use "
                     "lax.RoundingMethod.AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1)") from None
  return round_p.bind(x, rounding_method=rounding_method)


is_finite_p = unop(real_float, "is_finite", result_dtype=lambda d: dtypes.bool_)
xla.register_lowering(is_finite_p, nary_lowering(hlo.is_finite))
ad.defjvp_zero(is_finite_p)
defvectorized(is_finite_p)

def is_finite(x):
  """Elementwise test for values that are neither infinite nor NaN.

  Defined for floating dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> lax.is_finite(jnp.array([1., jnp.inf, jnp.nan]))
    Array([ True, False, False], dtype=bool)
  """
  return is_finite_p.bind(x)


# --- exponential, logarithm, roots -------------------------------------------------------

exp_p = unop(float_kinds, "exp")
xla.register_lowering(exp_p, nary_lowering(hlo.exponential))
ad.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
defvectorized(exp_p)

def exp(x, *, accuracy=None):
  """Elementwise exponential ``e ** x``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.exp(jnp.array([0., 1.]))
    Array([1.       , 2.7182817], dtype=float32)
  """
  _check_accuracy("exp", accuracy)
  return exp_p.bind(x)


exp2_p = unop(float_kinds, "exp2")

def _exp2_lowering(ctx, x):
  # StableHLO has no exp2: exp(log(2) * x), JAX's lowering, so that results agree with JAX's
  # to the last bit (pow(2, x) would be exact for integral x, but differs elsewhere).
  log2 = xla.full_like_aval(np.log(2), ctx.avals_in[0])
  return hlo.exponential(hlo.multiply(log2, x))

xla.register_lowering(exp2_p, _exp2_lowering)
ad.defjvp2(exp2_p, lambda g, ans, x: mul(g, mul(ans, _const(ans, np.log(2)))))
defvectorized(exp2_p)

def exp2(x, *, accuracy=None):
  """Elementwise base-2 exponential ``2 ** x``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.exp2(jnp.array([0., 3.]))
    Array([1., 8.], dtype=float32)
  """
  _check_accuracy("exp2", accuracy)
  return exp2_p.bind(x)


log_p = unop(float_kinds, "log")
xla.register_lowering(log_p, nary_lowering(hlo.log))
ad.defjvp(log_p, lambda g, x: div(g, x))
defvectorized(log_p)

def log(x, *, accuracy=None):
  """Elementwise natural logarithm.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.log(jnp.array([1., 2.]))
    Array([0.       , 0.6931472], dtype=float32)
  """
  _check_accuracy("log", accuracy)
  return log_p.bind(x)


log1p_p = unop(float_kinds, "log1p")
xla.register_lowering(log1p_p, nary_lowering(hlo.log_plus_one))
ad.defjvp(log1p_p, lambda g, x: div(g, add(x, _const(x, 1))))
defvectorized(log1p_p)

def log1p(x, *, accuracy=None):
  """Elementwise ``log(1 + x)``, accurate for small ``x``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.log1p(jnp.array([0., 1e-8]))
    Array([0.e+00, 1.e-08], dtype=float32)
  """
  _check_accuracy("log1p", accuracy)
  return log1p_p.bind(x)


expm1_p = unop(float_kinds, "expm1")
xla.register_lowering(expm1_p, nary_lowering(hlo.exponential_minus_one))
ad.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _const(ans, 1))))
defvectorized(expm1_p)

def expm1(x, *, accuracy=None):
  """Elementwise ``exp(x) - 1``, accurate for small ``x``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.expm1(jnp.array([0., 1e-8]))
    Array([0.e+00, 1.e-08], dtype=float32)
  """
  _check_accuracy("expm1", accuracy)
  return expm1_p.bind(x)


sqrt_p = unop(float_kinds, "sqrt")
xla.register_lowering(sqrt_p, nary_lowering(hlo.sqrt))
ad.defjvp2(sqrt_p, lambda g, ans, x: mul(g, div(_const(ans, 0.5), ans)))
defvectorized(sqrt_p)

def sqrt(x, *, accuracy=None):
  """Elementwise square root.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Negative real inputs give NaN.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.sqrt(jnp.array([4., 2.]))
    Array([2.       , 1.4142135], dtype=float32)
  """
  _check_accuracy("sqrt", accuracy)
  return sqrt_p.bind(x)


rsqrt_p = unop(float_kinds, "rsqrt")
xla.register_lowering(rsqrt_p, nary_lowering(hlo.rsqrt))
ad.defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(ans, -0.5), div(ans, x))))
defvectorized(rsqrt_p)

def rsqrt(x, *, accuracy=None):
  """Elementwise reciprocal square root ``1 / sqrt(x)``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.rsqrt(jnp.array([4., 0.25]))
    Array([0.5, 2. ], dtype=float32)
  """
  _check_accuracy("rsqrt", accuracy)
  return rsqrt_p.bind(x)


cbrt_p = unop(real_float, "cbrt")
xla.register_lowering(cbrt_p, nary_lowering(hlo.cbrt))
ad.defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(_const(ans, 1 / 3), integer_pow(ans, -2))))
defvectorized(cbrt_p)

def cbrt(x, *, accuracy=None):
  """Elementwise real cube root.

  Defined for floating dtypes (others raise ``TypeError``).

  Negative inputs give negative roots.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.cbrt(jnp.array([8., -27.]))
    Array([ 2., -3.], dtype=float32)
  """
  _check_accuracy("cbrt", accuracy)
  return cbrt_p.bind(x)


tanh_p = unop(float_kinds, "tanh")
xla.register_lowering(tanh_p, nary_lowering(hlo.tanh))
# (1 + ans) (1 - ans) rather than 1 - ans**2: no cancellation where ans is near -1.
ad.defjvp2(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_const(ans, 1), ans)))
defvectorized(tanh_p)

def tanh(x, *, accuracy=None):
  """Elementwise hyperbolic tangent.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.tanh(jnp.array([0., 1.]))
    Array([0.       , 0.7615942], dtype=float32)
  """
  _check_accuracy("tanh", accuracy)
  return tanh_p.bind(x)


logistic_p = unop(float_kinds, "logistic")
xla.register_lowering(logistic_p, nary_lowering(hlo.logistic))
ad.defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_const(ans, 1), ans))))
defvectorized(logistic_p)

def logistic(x, *, accuracy=None):
  """Elementwise logistic sigmoid ``1 / (1 + exp(-x))``.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.logistic(jnp.array([0., 2.]))
    Array([0.5     , 0.880797], dtype=float32)
  """
  _check_accuracy("logistic", accuracy)
  return logistic_p.bind(x)


# --- trigonometric and hyperbolic --------------------------------------------------------

# Complex sine and cosine are lowered as JAX lowers them, from the real parts' sin, cos and
# expm1 (cosh and sinh of the imaginary part as sums of expm1: no cancellation near 0),
# rather than with XLA's own complex expansion, whose last bits differ.
def _sinh_cosh_of_imag(x):
  a, b = real(x), imag(x)
  e1m, e2m = expm1(b), expm1(neg(b))
  two = _const(a, 2)
  return a, div(sub(e1m, e2m), two), div(add(add(e1m, e2m), two), two)


def _sin_complex(x):
  a, snh, csh = _sinh_cosh_of_imag(x)
  re, im = mul(sin(a), csh), mul(cos(a), snh)
  # A zero real part gives an exactly zero real result (not 0 * inf = nan for huge imag).
  return select(eq(a, _const(a, 0)), complex(_const(a, 0), im), complex(re, im))


def _cos_complex(x):
  a, snh, csh = _sinh_cosh_of_imag(x)
  re, im = mul(cos(a), csh), mul(neg(sin(a)), snh)
  return select(eq(a, _const(a, 0)), complex(re, _const(a, 0)), complex(re, im))


def _real_or_complex_lowering(real_op, complex_fun):
  real_rule, complex_rule = nary_lowering(real_op), xla.lower_fun(complex_fun, False)
  def rule(ctx, x):
    return (complex_rule if dtypes.is_complex(ctx.avals_in[0].dtype) else real_rule)(ctx, x)
  return rule


sin_p = unop(float_kinds, "sin")
xla.register_lowering(sin_p, _real_or_complex_lowering(hlo.sine, _sin_complex))
ad.defjvp(sin_p, lambda g, x: mul(g, cos(x)))
defvectorized(sin_p)

def sin(x, *, accuracy=None):
  """Elementwise sine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.sin(jnp.array([0., 1.]))
    Array([0.        , 0.84147096], dtype=float32)
  """
  _check_accuracy("sin", accuracy)
  return sin_p.bind(x)


cos_p = unop(float_kinds, "cos")
xla.register_lowering(cos_p, _real_or_complex_lowering(hlo.cosine, _cos_complex))
ad.defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
defvectorized(cos_p)

def cos(x, *, accuracy=None):
  """Elementwise cosine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.cos(jnp.array([0., 1.]))
    Array([1.       , 0.5403023], dtype=float32)
  """
  _check_accuracy("cos", accuracy)
  return cos_p.bind(x)


tan_p = unop(float_kinds, "tan")
xla.register_lowering(tan_p, nary_lowering(hlo.tan))
ad.defjvp2(tan_p, lambda g, ans, x: mul(g, add(_const(ans, 1), square(ans))))
defvectorized(tan_p)

def tan(x, *, accuracy=None):
  """Elementwise tangent.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).
    accuracy: keyword-only; optional ``AccuracyMode`` or ``Tolerance`` the backend's
      implementation should meet (None: the default).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.tan(jnp.array([0., 1.]))
    Array([0.       , 1.5574077], dtype=float32)
  """
  _check_accuracy("tan", accuracy)
  return tan_p.bind(x)


# StableHLO has no inverse trigonometric or (other) hyperbolic functions: CHLO's
# decompositions provide them.
asin_p = unop(float_kinds, "asin")
xla.register_lowering(asin_p, nary_lowering(chlo.asin))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
defvectorized(asin_p)

def asin(x):
  """Elementwise arc sine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Real inputs outside ``[-1, 1]`` give NaN.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.asin(jnp.array([0., 1.]))
    Array([0.       , 1.5707964], dtype=float32)
  """
  return asin_p.bind(x)


acos_p = unop(float_kinds, "acos")
xla.register_lowering(acos_p, nary_lowering(chlo.acos))
ad.defjvp(acos_p, lambda g, x: neg(mul(g, rsqrt(sub(_const(x, 1), square(x))))))
defvectorized(acos_p)

def acos(x):
  """Elementwise arc cosine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Real inputs outside ``[-1, 1]`` give NaN.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.acos(jnp.array([1., 0.]))
    Array([0.       , 1.5707964], dtype=float32)
  """
  return acos_p.bind(x)


atan_p = unop(float_kinds, "atan")
xla.register_lowering(atan_p, nary_lowering(chlo.atan))
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))
defvectorized(atan_p)

def atan(x):
  """Elementwise arc tangent.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.atan(jnp.array([0., 1.]))
    Array([0.       , 0.7853981], dtype=float32)
  """
  return atan_p.bind(x)


atan2_p = binop(float_kinds, "atan2")
xla.register_lowering(atan2_p, nary_lowering(hlo.atan2))
# atan2(x, y) is the angle of the point (y, x): its gradient is (y, -x) / (x**2 + y**2).
ad.defjvp(atan2_p,
          lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))
defbroadcasting(atan2_p)

def atan2(x, y):
  """Elementwise arc tangent of ``x / y``, choosing the quadrant from both signs.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.arctan2`` does that).
  Defined for floating dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: the numerator (the sine side).
    y: the denominator (the cosine side).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.atan2(jnp.array([1., 1.]), jnp.array([1., -1.]))
    Array([0.7853982, 2.3561945], dtype=float32)

  See also:
    ``jnp.arctan2`` for the NumPy-style version with promotion and broadcasting.
  """
  return atan2_p.bind(*_operands("atan2", x, y))


sinh_p = unop(float_kinds, "sinh")
xla.register_lowering(sinh_p, nary_lowering(chlo.sinh))
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
defvectorized(sinh_p)

def sinh(x):
  """Elementwise hyperbolic sine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.sinh(jnp.array([0., 1.]))
    Array([0.       , 1.1752012], dtype=float32)
  """
  return sinh_p.bind(x)


cosh_p = unop(float_kinds, "cosh")
xla.register_lowering(cosh_p, nary_lowering(chlo.cosh))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
defvectorized(cosh_p)

def cosh(x):
  """Elementwise hyperbolic cosine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.cosh(jnp.array([0., 1.]))
    Array([1.       , 1.5430806], dtype=float32)
  """
  return cosh_p.bind(x)


asinh_p = unop(float_kinds, "asinh")
xla.register_lowering(asinh_p, nary_lowering(chlo.asinh))
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _const(x, 1)))))
defvectorized(asinh_p)

def asinh(x):
  """Elementwise inverse hyperbolic sine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.asinh(jnp.array([0., 1.]))
    Array([0.        , 0.88137364], dtype=float32)
  """
  return asinh_p.bind(x)


acosh_p = unop(float_kinds, "acosh")
xla.register_lowering(acosh_p, nary_lowering(chlo.acosh))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _const(x, 1)))))
defvectorized(acosh_p)

def acosh(x):
  """Elementwise inverse hyperbolic cosine.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Real inputs below 1 give NaN.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.acosh(jnp.array([1., 2.]))
    Array([0.      , 1.316958], dtype=float32)
  """
  return acosh_p.bind(x)


atanh_p = unop(float_kinds, "atanh")
xla.register_lowering(atanh_p, nary_lowering(chlo.atanh))
# 1 / ((1 + x) (1 - x)) rather than 1 / (1 - x**2): accurate near |x| == 1.
ad.defjvp(atanh_p, lambda g, x: mul(integer_pow(add(x, _const(x, 1)), -1),
                                    div(g, sub(_const(x, 1), x))))
defvectorized(atanh_p)

def atanh(x):
  """Elementwise inverse hyperbolic tangent.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  Real inputs outside ``[-1, 1]`` give NaN.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.atanh(jnp.array([0., 0.5]))
    Array([0.        , 0.54930615], dtype=float32)
  """
  return atanh_p.bind(x)


# --- special functions -------------------------------------------------------------------

# A Python float, so that it takes the operand's dtype (NumPy scalars are strongly typed).
_TWO_OVER_SQRT_PI = 2 / float(np.sqrt(np.pi))

erf_p = unop(real_float, "erf")
xla.register_lowering(erf_p, nary_lowering(chlo.erf))
ad.defjvp(erf_p, lambda g, x: mul(_const(x, _TWO_OVER_SQRT_PI), mul(g, exp(neg(square(x))))))
defvectorized(erf_p)

def erf(x):
  """Elementwise error function.

  Defined for floating dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.erf(jnp.array([0., 1.]))
    Array([0.        , 0.84270084], dtype=float32)
  """
  return erf_p.bind(x)


erfc_p = unop(real_float, "erfc")
xla.register_lowering(erfc_p, nary_lowering(chlo.erfc))
ad.defjvp(erfc_p, lambda g, x: mul(_const(x, -_TWO_OVER_SQRT_PI),
                                   mul(g, exp(neg(square(x))))))
defvectorized(erfc_p)

def erfc(x):
  """Elementwise complementary error function ``1 - erf(x)``.

  Defined for floating dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.erfc(jnp.array([0., 1.]))
    Array([1.        , 0.15729924], dtype=float32)
  """
  return erfc_p.bind(x)


erf_inv_p = unop(real_float, "erf_inv")
xla.register_lowering(erf_inv_p, nary_lowering(chlo.erf_inv))
ad.defjvp2(erf_inv_p,
           lambda g, ans, x: mul(_const(ans, 1 / _TWO_OVER_SQRT_PI), mul(g, exp(square(ans)))))
defvectorized(erf_inv_p)

def erf_inv(x):
  """Elementwise inverse error function.

  Defined for floating dtypes (others raise ``TypeError``).

  Defined on ``[-1, 1]``; the endpoints give infinities.

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.erf_inv(jnp.array([0., 0.5]))
    Array([0.        , 0.47693628], dtype=float32)
  """
  return erf_inv_p.bind(x)


lgamma_p = unop(real_float, "lgamma")
xla.register_lowering(lgamma_p, nary_lowering(chlo.lgamma))
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
defvectorized(lgamma_p)

def lgamma(x):
  """Elementwise logarithm of the absolute value of the gamma function.

  Defined for floating dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.lgamma(jnp.array([0.5, 3.]))
    Array([0.5723648, 0.6931474], dtype=float32)
  """
  return lgamma_p.bind(x)


digamma_p = unop(real_float, "digamma")
xla.register_lowering(digamma_p, nary_lowering(chlo.digamma))
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))
defvectorized(digamma_p)

def digamma(x):
  """Elementwise digamma function, the derivative of ``lgamma``.

  Defined for floating dtypes (others raise ``TypeError``).

  Differentiable in forward and reverse mode and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.digamma(jnp.array([1., 2.]))
    Array([-0.5772154 ,  0.42278463], dtype=float32)
  """
  return digamma_p.bind(x)


polygamma_p = binop(real_float, "polygamma")
xla.register_lowering(polygamma_p, nary_lowering(chlo.polygamma))

def _polygamma_jvp_order(g, m, x):
  raise ValueError("polygamma: differentiation with respect to the order m is not "
                   "supported (m is an integer; pass it as a constant)")

ad.defjvp(polygamma_p, _polygamma_jvp_order,
          lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))
defbroadcasting(polygamma_p)

def polygamma(m, x):
  """Elementwise polygamma function, the ``m``-th derivative of ``digamma``.

  Defined for floating dtypes (others raise ``TypeError``).

  ``m`` holds non-negative integer values in ``x``'s float dtype; both operands must share
  dtype and shape (or be scalars). Differentiable in ``x``.

  Args:
    m: the derivative order (non-negative integral values).
    x: the argument.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.polygamma(jnp.array([0., 1.]), jnp.array([1., 1.]))
    Array([-0.5772154,  1.644934 ], dtype=float32)
  """
  return polygamma_p.bind(*_operands("polygamma", m, x))


# --- complex numbers ---------------------------------------------------------------------

real_p = unop(("complex",), "real", result_dtype=_real_dtype)
xla.register_lowering(real_p, nary_lowering(hlo.real))
# Transposes of the complex-part primitives follow JAX's convention: the pairing of a
# complex cotangent c with a tangent t is Re(c * t) (no conjugate), so real's transpose
# embeds ct as a real part and imag's as -1j * ct.
# The zero imaginary (real) part is a strong scalar, so a cotangent of a real part is a
# complex64, never weak, whatever the weak type of ``ct`` (as JAX's).
ad.deflinear(real_p, lambda ct, x: [complex(ct, _strong_zero(ct))])
defvectorized(real_p)

def real(x):
  """Elementwise real part of a complex array.

  Defined for complex dtypes (others raise ``TypeError``).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and component dtype.

  Examples:
    >>> lax.real(jnp.array([1 + 2j]))
    Array([1.], dtype=float32)
  """
  return real_p.bind(x)


imag_p = unop(("complex",), "imag", result_dtype=_real_dtype)
xla.register_lowering(imag_p, nary_lowering(hlo.imag))
ad.deflinear(imag_p, lambda ct, x: [complex(_strong_zero(ct), neg(ct))])
defvectorized(imag_p)

def imag(x):
  """Elementwise imaginary part of a complex array.

  Defined for complex dtypes (others raise ``TypeError``).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and component dtype.

  Examples:
    >>> lax.imag(jnp.array([1 + 2j]))
    Array([2.], dtype=float32)
  """
  return imag_p.bind(x)


complex_p = binop(real_float, "complex", result_dtype=_complex_dtype("complex"))
xla.register_lowering(complex_p, nary_lowering(hlo.complex))

def _complex_transpose(ct, x, y):
  return [_unbroadcast(x.aval, real(ct)) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, neg(imag(ct))) if ad.is_undefined_primal(y) else None]

ad.deflinear(complex_p, _complex_transpose)
defbroadcasting(complex_p)

def complex(x, y):
  """Elementwise complex number ``x + 1j * y`` from real and imaginary parts.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.complex`` does that).
  Defined for floating dtypes (others raise ``TypeError``).

  The parts must be float32 (giving complex64) or float64 (complex128).

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: the real parts.
    y: the imaginary parts.

  Returns:
    A complex array.

  Examples:
    >>> lax.complex(jnp.array([1.]), jnp.array([2.]))
    Array([1.+2.j], dtype=complex64)
  """
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

def _conj_transpose(ct, x, *, input_dtype):
  if dtypes.is_complex(input_dtype):
    return [conj(ct)]
  return [real(ct)]  # a real operand was embedded: the transpose keeps the real part

ad.deflinear(conj_p, _conj_transpose)
defvectorized(conj_p)

def conj(x):
  """Elementwise complex conjugate.

  Defined for floating and complex dtypes (others raise ``TypeError``).

  A real float32 or float64 operand is converted to the matching complex dtype.

  Linear: differentiable, with a transpose, and batched under ``vmap``.

  Args:
    x: input array (or scalar).

  Returns:
    A complex array of ``x``'s shape.

  Examples:
    >>> lax.conj(jnp.array([1 + 2j]))
    Array([1.-2.j], dtype=complex64)
    >>> lax.conj(jnp.array([1.]))
    Array([1.+0.j], dtype=complex64)
  """
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
  ad.defjvp_zero(prim)
  defbroadcasting(prim)
  return prim


eq_p = _comparison("eq", "EQ")
ne_p = _comparison("ne", "NE")
lt_p = _comparison("lt", "LT", ("bool", "int", "float"))
le_p = _comparison("le", "LE", ("bool", "int", "float"))
gt_p = _comparison("gt", "GT", ("bool", "int", "float"))
ge_p = _comparison("ge", "GE", ("bool", "int", "float"))

def eq(x, y):
  """Elementwise comparison ``x == y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.equal`` does that).

  NaN equals nothing, itself included.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.eq(jnp.array([1, 2, 3]), 2)
    Array([False,  True, False], dtype=bool)

  See also:
    ``jnp.equal`` for the NumPy-style version with promotion and broadcasting.
  """
  return eq_p.bind(*_operands("eq", x, y))

def ne(x, y):
  """Elementwise comparison ``x != y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.not_equal`` does that).

  NaN is unequal to everything, itself included.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.ne(jnp.array([1, 2, 3]), 2)
    Array([ True, False,  True], dtype=bool)

  See also:
    ``jnp.not_equal`` for the NumPy-style version with promotion and broadcasting.
  """
  return ne_p.bind(*_operands("ne", x, y))

def lt(x, y):
  """Elementwise comparison ``x < y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.less`` does that).
  Defined for bool, integer and floating dtypes (others raise ``TypeError``).

  Comparisons involving NaN are false.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.lt(jnp.array([1, 2, 3]), 2)
    Array([ True, False, False], dtype=bool)

  See also:
    ``jnp.less`` for the NumPy-style version with promotion and broadcasting.
  """
  return lt_p.bind(*_operands("lt", x, y))

def le(x, y):
  """Elementwise comparison ``x <= y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.less_equal`` does that).
  Defined for bool, integer and floating dtypes (others raise ``TypeError``).

  Comparisons involving NaN are false.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.le(jnp.array([1, 2, 3]), 2)
    Array([ True,  True, False], dtype=bool)

  See also:
    ``jnp.less_equal`` for the NumPy-style version with promotion and broadcasting.
  """
  return le_p.bind(*_operands("le", x, y))

def gt(x, y):
  """Elementwise comparison ``x > y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.greater`` does that).
  Defined for bool, integer and floating dtypes (others raise ``TypeError``).

  Comparisons involving NaN are false.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.gt(jnp.array([1, 2, 3]), 2)
    Array([False, False,  True], dtype=bool)

  See also:
    ``jnp.greater`` for the NumPy-style version with promotion and broadcasting.
  """
  return gt_p.bind(*_operands("gt", x, y))

def ge(x, y):
  """Elementwise comparison ``x >= y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.greater_equal`` does that).
  Defined for bool, integer and floating dtypes (others raise ``TypeError``).

  Comparisons involving NaN are false.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    A bool array of the operands' shape.

  Examples:
    >>> lax.ge(jnp.array([1, 2, 3]), 2)
    Array([False,  True,  True], dtype=bool)

  See also:
    ``jnp.greater_equal`` for the NumPy-style version with promotion and broadcasting.
  """
  return ge_p.bind(*_operands("ge", x, y))


# --- bitwise -----------------------------------------------------------------------------

not_p = unop(bool_or_int, "not")
xla.register_lowering(not_p, nary_lowering(hlo.not_))
ad.defjvp_zero(not_p)
defvectorized(not_p)

def bitwise_not(x):
  """Elementwise NOT: logical for bool, bitwise (``~x``) for integers.

  Defined for bool and integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.bitwise_not(jnp.array([True, False]))
    Array([False,  True], dtype=bool)
    >>> lax.bitwise_not(jnp.array([0, 5]))
    Array([-1, -6], dtype=int32)
  """
  return not_p.bind(x)


and_p = binop(bool_or_int, "and")
xla.register_lowering(and_p, nary_lowering(hlo.and_))
ad.defjvp_zero(and_p)
defbroadcasting(and_p)

def bitwise_and(x, y):
  """Elementwise AND: logical for bool, bitwise for integers.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.bitwise_and`` does that).
  Defined for bool and integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.bitwise_and(jnp.array([True, True, False]), jnp.array([True, False, False]))
    Array([ True, False, False], dtype=bool)
    >>> lax.bitwise_and(jnp.array([12]), jnp.array([10]))
    Array([8], dtype=int32)

  See also:
    ``jnp.bitwise_and`` for the NumPy-style version with promotion and broadcasting.
  """
  return and_p.bind(*_operands("and", x, y))


or_p = binop(bool_or_int, "or")
xla.register_lowering(or_p, nary_lowering(hlo.or_))
ad.defjvp_zero(or_p)
defbroadcasting(or_p)

def bitwise_or(x, y):
  """Elementwise OR: logical for bool, bitwise for integers.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.bitwise_or`` does that).
  Defined for bool and integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.bitwise_or(jnp.array([True, True, False]), jnp.array([True, False, False]))
    Array([ True,  True, False], dtype=bool)
    >>> lax.bitwise_or(jnp.array([12]), jnp.array([10]))
    Array([14], dtype=int32)

  See also:
    ``jnp.bitwise_or`` for the NumPy-style version with promotion and broadcasting.
  """
  return or_p.bind(*_operands("or", x, y))


xor_p = binop(bool_or_int, "xor")
xla.register_lowering(xor_p, nary_lowering(hlo.xor))
ad.defjvp_zero(xor_p)
defbroadcasting(xor_p)

def bitwise_xor(x, y):
  """Elementwise XOR: logical for bool, bitwise for integers.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.bitwise_xor`` does that).
  Defined for bool and integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.bitwise_xor(jnp.array([True, True, False]), jnp.array([True, False, False]))
    Array([False,  True, False], dtype=bool)
    >>> lax.bitwise_xor(jnp.array([12]), jnp.array([10]))
    Array([6], dtype=int32)

  See also:
    ``jnp.bitwise_xor`` for the NumPy-style version with promotion and broadcasting.
  """
  return xor_p.bind(*_operands("xor", x, y))


# Shifts by the bit width or more give 0 (or all sign bits for the arithmetic right shift).
shift_left_p = binop(int_kinds, "shift_left")
xla.register_lowering(shift_left_p, nary_lowering(hlo.shift_left))
ad.defjvp_zero(shift_left_p)
defbroadcasting(shift_left_p)

def shift_left(x, y):
  """Elementwise left shift ``x << y``.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.left_shift`` does that).
  Defined for integer dtypes (others raise ``TypeError``).

  Shift amounts at or beyond the bit width give 0.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the values shifted.
    y: the shift amounts (same dtype as ``x``).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.shift_left(jnp.array([1, 3]), jnp.array([2, 1]))
    Array([4, 6], dtype=int32)

  See also:
    ``jnp.left_shift`` for the NumPy-style version with promotion and broadcasting.
  """
  return shift_left_p.bind(*_operands("shift_left", x, y))


shift_right_logical_p = binop(int_kinds, "shift_right_logical")
xla.register_lowering(shift_right_logical_p, nary_lowering(hlo.shift_right_logical))
ad.defjvp_zero(shift_right_logical_p)
defbroadcasting(shift_right_logical_p)

def shift_right_logical(x, y):
  """Elementwise right shift filling with zero bits.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.right_shift`` does that).
  Defined for integer dtypes (others raise ``TypeError``).

  The bits of ``x`` are shifted as if unsigned, so negative numbers become large positive ones.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the values shifted.
    y: the shift amounts (same dtype as ``x``).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.shift_right_logical(jnp.array([8, -8]), jnp.array([1, 1]))
    Array([         4, 2147483644], dtype=int32)
  """
  return shift_right_logical_p.bind(*_operands("shift_right_logical", x, y))


shift_right_arithmetic_p = binop(int_kinds, "shift_right_arithmetic")
xla.register_lowering(shift_right_arithmetic_p, nary_lowering(hlo.shift_right_arithmetic))
ad.defjvp_zero(shift_right_arithmetic_p)
defbroadcasting(shift_right_arithmetic_p)

def shift_right_arithmetic(x, y):
  """Elementwise right shift filling with the sign bit.

  Operands must have the same dtype and the same shape, or be scalars (a Python scalar has its
  kind's default dtype). Mismatches raise ``TypeError``: nothing is promoted or broadcast
  (``jnp.right_shift`` does that).
  Defined for integer dtypes (others raise ``TypeError``).

  For signed integers this is floor division by ``2 ** y``.

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the values shifted.
    y: the shift amounts (same dtype as ``x``).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.shift_right_arithmetic(jnp.array([8, -8]), jnp.array([1, 1]))
    Array([ 4, -4], dtype=int32)

  See also:
    ``jnp.right_shift`` for the NumPy-style version with promotion and broadcasting.
  """
  return shift_right_arithmetic_p.bind(*_operands("shift_right_arithmetic", x, y))


population_count_p = unop(int_kinds, "population_count")
xla.register_lowering(population_count_p, nary_lowering(hlo.popcnt))
ad.defjvp_zero(population_count_p)
defvectorized(population_count_p)

def population_count(x):
  """Elementwise number of set bits.

  Defined for integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.population_count(jnp.array([0, 7, -1]))
    Array([ 0,  3, 32], dtype=int32)
  """
  return population_count_p.bind(x)


clz_p = unop(int_kinds, "clz")
xla.register_lowering(clz_p, nary_lowering(hlo.count_leading_zeros))
ad.defjvp_zero(clz_p)
defvectorized(clz_p)

def clz(x):
  """Elementwise number of leading zero bits.

  Defined for integer dtypes (others raise ``TypeError``).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: input array (or scalar).

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.clz(jnp.array([1, 256]))
    Array([31, 23], dtype=int32)
  """
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

def _select_n_jvp(primals, tangents):
  which, *cases = primals
  case_tangents = tangents[1:]  # ``which`` is boolean or integer: it has no tangent
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in case_tangents):
    return out, ad.Zero.from_primal_value(out)
  case_tangents = [ad.instantiate_zeros(t) for t in case_tangents]
  return out, select_n_p.bind(which, *case_tangents)

def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n: the transpose is not defined for a linear `which`")
  if type(ct) is ad.Zero:
    return [None] + [ad.Zero(c.aval) if ad.is_undefined_primal(c) else None for c in cases]
  zeros = _zeros_like(ct)
  which_is_bool = get_aval(which).dtype == dtypes.bool_

  def case_ct(i):
    # Case i gets the cotangent where it was chosen and zero elsewhere.
    if which_is_bool:
      return select_n(which, zeros, ct) if i else select_n(which, ct, zeros)
    return select_n(eq(which, _const(which, i)), zeros, ct)
  return [None] + [case_ct(i) if ad.is_undefined_primal(c) else None
                   for i, c in enumerate(cases)]

ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose

def _select_n_batch_rule(axis_data, vals, dims):
  which, *cases = vals
  which_bdim, *case_bdims = dims
  which_ndim = get_aval(which).ndim
  case_shape = get_aval(cases[0]).shape
  # Fast paths, no data movement: everything batched along one dimension; or an unbatched
  # scalar `which` picking among cases batched alike.
  if all(d == which_bdim for d in case_bdims):
    if which_ndim != len(case_shape):
      # A per-example scalar `which` next to array cases: spread it along the cases.
      which = broadcast_in_dim(which, case_shape, (which_bdim,))
    return select_n_p.bind(which, *cases), which_bdim
  if which_bdim is None and which_ndim == 0 and all(d is not None for d in case_bdims):
    bdim = case_bdims[0]
    cases = [batching.moveaxis(c, d, bdim) for c, d in zip(cases, case_bdims)]
    return select_n_p.bind(which, *cases), bdim
  # General case: the batch dimension goes to the front of every operand. The cases must
  # share one shape, so unbatched non-scalar cases (and unbatched scalars next to batched
  # ones) are broadcast along the batch; an unbatched scalar `which` stays a scalar.
  size = axis_data.size
  if which_bdim is not None or which_ndim:
    which = batching.bdim_at_front(which, which_bdim, size)
  if any(d is not None or get_aval(c).ndim for c, d in zip(cases, case_bdims)):
    cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, case_bdims)]
  which_ndim, case_shape = get_aval(which).ndim, get_aval(cases[0]).shape
  if 0 < which_ndim < len(case_shape):
    # `which` is a per-example scalar (now of shape (size,)), the cases are arrays.
    which = broadcast_in_dim(which, case_shape, (0,))
  elif which_ndim > len(case_shape):
    # Only `which` is batched and the cases are scalars: they are spread to its shape.
    which_shape = get_aval(which).shape
    cases = [broadcast_in_dim(c, which_shape, ()) for c in cases]
  return select_n_p.bind(which, *cases), 0

batching.fancy_primitive_batchers[select_n_p] = _select_n_batch_rule

def select_n(which, *cases):
  """Elementwise choice among ``cases`` by the index array ``which``.

  The result takes, at each position, the element of ``cases[which]``. ``which`` is bool
  (choosing between at most two cases: False picks ``cases[0]``) or integer, and is a scalar
  or has the cases' shape; all cases share shape and dtype (else ``TypeError``). An index
  outside ``range(len(cases))`` gives an unspecified case. Differentiable in the cases (not
  in ``which``) and batched under ``vmap``.

  Args:
    which: bool or integer array (or scalar) of case indices.
    *cases: one or more arrays of the same shape and dtype.

  Returns:
    An array of the cases' shape and dtype.

  Examples:
    >>> lax.select_n(jnp.array([0, 2, 1]), jnp.array([1, 1, 1]), jnp.array([2, 2, 2]),
    ...              jnp.array([3, 3, 3]))
    Array([1, 3, 2], dtype=int32)
    >>> lax.select_n(True, jnp.array([1., 2.]), jnp.array([3., 4.]))
    Array([3., 4.], dtype=float32)
  """
  if not cases:
    raise ValueError("select_n() needs at least one case")
  try:
    return select_n_p.bind(which, *_operands("select_n", *cases))
  except TypeError:
    # Arrays of an extended dtype (typed PRNG keys) select their own data.
    if dtypes.extended_dtype_of(cases[0]) is not None:
      return cases[0]._select_n(which, cases)
    raise


def select(pred, on_true, on_false):
  """Elementwise ``on_true if pred else on_false``.

  ``pred`` is a bool array of the operands' shape, or a scalar; ``on_true`` and ``on_false``
  must share shape and dtype (else ``TypeError``). Both branches are computed; only the
  chosen values pass on, and so do only their gradients. ``select_n(pred, on_false,
  on_true)``.

  Args:
    pred: boolean predicate.
    on_true: values where ``pred`` is true.
    on_false: values where ``pred`` is false.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.select(jnp.array([True, False]), jnp.array([1., 2.]), jnp.array([3., 4.]))
    Array([1., 4.], dtype=float32)
    >>> hlox.grad(lambda x: lax.select(x > 0, x, 0.))(2.)
    Array(1., dtype=float32, weak_type=True)

  See also:
    ``jnp.where`` for the NumPy-style version with promotion and broadcasting.
  """
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

def _clamp_jvp_rule(picks):
  """The tangent of one of clamp's arguments passes where ``picks(min, x, max)`` says the
  output is that argument (as JAX: at ties with a bound, the bound's tangent is dropped and
  so is x's)."""
  def rule(g, lo, x, hi):
    shape = _shape(x)
    return select(picks(lo, x, hi), _maybe_broadcast(shape, g), _zeros_like(x))
  return rule

ad.defjvp(clamp_p,
          _clamp_jvp_rule(lambda lo, x, hi: bitwise_and(gt(lo, x), lt(lo, hi))),
          _clamp_jvp_rule(lambda lo, x, hi: bitwise_and(gt(x, lo), lt(x, hi))),
          _clamp_jvp_rule(lambda lo, x, hi: lt(hi, x)))

def _clamp_batch_rule(axis_data, vals, dims):
  lo, x, hi = vals
  lo_bdim, x_bdim, hi_bdim = dims
  # The operand keeps its batch dimension (an unbatched one gets it in front); the bounds
  # follow it. Unbatched scalar bounds need nothing: clamp takes scalar bounds.
  bdim = 0 if x_bdim is None else x_bdim
  x = batching.matchaxis(x, x_bdim, bdim, axis_data.size)
  x_shape = get_aval(x).shape

  def bound(b, b_bdim):
    ndim = get_aval(b).ndim
    if b_bdim is None:
      return b if ndim == 0 else batching.matchaxis(b, None, bdim, axis_data.size)
    if ndim == 1 and len(x_shape) > 1:
      # A per-example scalar bound next to an array operand: spread it along the operand.
          return broadcast_in_dim(b, x_shape, (bdim,))
    return batching.moveaxis(b, b_bdim, bdim)
  return clamp_p.bind(bound(lo, lo_bdim), x, bound(hi, hi_bdim)), bdim

batching.fancy_primitive_batchers[clamp_p] = _clamp_batch_rule

def clamp(min, x, max):
  """Elementwise ``min(max(x, min), max)``: ``x`` limited to ``[min, max]``.

  ``min`` and ``max`` are scalars or have ``x``'s shape, and share its dtype (else
  ``TypeError``). The gradient flows to ``x`` where it lies strictly inside the bounds, and
  to a bound where that bound is chosen.

  Args:
    min: lower bound.
    x: the values to clamp.
    max: upper bound.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> lax.clamp(0., jnp.array([-1., 0.5, 2.]), 1.)
    Array([0. , 0.5, 1. ], dtype=float32)

  See also:
    ``jnp.clip``.
  """
  return clamp_p.bind(*_operands("clamp", min, x, max))


# --- conversion (``convert_element_type`` is in base, re-exported here) ------------------

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
ad.defjvp_zero(bitcast_convert_type_p)  # reinterpreting bits is not differentiable

def _bitcast_batch_rule(vals, dims, *, new_dtype):
  x, = vals
  bdim, = dims
  aval = get_aval(x)
  # Check the per-example shape: on the batched one, a widening cast could consume the batch
  # dimension instead of the example's last dimension.
  example_shape = aval.shape[:bdim] + aval.shape[bdim + 1:]
  _bitcast_shape_rule(aval.update(shape=example_shape), new_dtype=new_dtype)
  # A narrowing cast appends a trailing dimension and a widening one consumes the last:
  # neither moves the batch dimension, unless it is the last one and would be consumed.
  if _bit_width(new_dtype) > _bit_width(aval.dtype) and bdim == aval.ndim - 1:
    x, bdim = batching.moveaxis(x, bdim, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), bdim

batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batch_rule

def bitcast_convert_type(operand, new_dtype):
  """Reinterprets the bits of ``operand`` as ``new_dtype``.

  No value conversion happens. With equal bit widths the shape is kept; a narrower
  ``new_dtype`` adds a trailing dimension (one wide element becomes several narrow ones) and
  a wider one consumes a trailing dimension of the matching size. Not differentiable.

  Args:
    operand: input array.
    new_dtype: the dtype to read the bits as.

  Returns:
    An array of ``new_dtype`` holding the same bits.

  Examples:
    >>> lax.bitcast_convert_type(jnp.float32(1), jnp.int32)
    Array(1065353216, dtype=int32)
    >>> lax.bitcast_convert_type(jnp.array([1.], jnp.float32), jnp.uint8)
    Array([[  0,   0, 128,  63]], dtype=uint8)
  """
  new_dtype = dtypes.check_user_dtype(new_dtype, "bitcast_convert_type", user_only=True)
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
# Treated as the identity up to rounding: the tangent and the cotangent are rounded alike.
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
defvectorized(reduce_precision_p)

def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Rounds ``operand`` to the values of a narrower floating-point format.

  The format has ``exponent_bits`` exponent and ``mantissa_bits`` mantissa bits (bfloat16 is
  8 and 7); the result keeps ``operand``'s dtype. Non-integer or traced bit counts raise
  ``TypeError``. Its gradient passes through unchanged.

  Args:
    operand: floating-point array.
    exponent_bits: number of exponent bits (a static positive int).
    mantissa_bits: number of mantissa bits (a static int).

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.reduce_precision(jnp.array([1.0001, 3.14159]), exponent_bits=8, mantissa_bits=7)
    Array([1.      , 3.140625], dtype=float32)
  """
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
ad.deflinear(copy_p, lambda ct, x: [copy_p.bind(ct)])


def _copy_impl(x):
  # An array over several devices that eager dispatch does not key on its layout (a pmap's
  # result, replicated or split by pieces) is copied piece by piece where it lies, as
  # JAX's copy keeps the sharding.
  if type(x) is Array and x._multi is not None:
    return copy_array(x)
  return xla.apply_primitive(copy_p, x)

copy_p.def_impl(_copy_impl)
defvectorized(copy_p)

def copy(x):
  """A copy of ``x`` (a new buffer when run eagerly)."""
  return copy_p.bind(x)



# --- total-order comparisons and mulhi ---------------------------------------------------
# ``eq_to``/``le_to``/``lt_to`` compare floats in IEEE total order (-NaN < -inf < ... < -0.0
# < +0.0 < ... < inf < NaN), the order sort uses; on other dtypes they are ``eq``/``le``/``lt``.

def _total_order_lowering(direction):
  def rule(ctx, x, y):
    dtype = ctx.avals_in[0].dtype
    x, y = xla.multi_broadcast((x, y), ctx.avals_in, ctx.avals_out[0].shape)
    if not dtypes.is_float(dtype):
      return xla.compare_hlo(x, y, direction, dtype)
    return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                       compare_type=hlo.ComparisonTypeAttr.get("TOTALORDER"))
  return rule


def _total_order_comparison(name, direction, kinds):
  prim = binop(kinds, name, result_dtype=_to_bool)
  xla.register_lowering(prim, _total_order_lowering(direction))
  ad.defjvp_zero(prim)
  defbroadcasting(prim)
  return prim


eq_to_p = _total_order_comparison("eq_to", "EQ", any_kinds)
le_to_p = _total_order_comparison("le_to", "LE", ("bool", "int", "float"))
lt_to_p = _total_order_comparison("lt_to", "LT", ("bool", "int", "float"))


mulhi_p = binop(int_kinds, "mulhi")
xla.register_lowering(mulhi_p, nary_lowering(chlo.mulhi))
ad.defjvp_zero(mulhi_p)
defbroadcasting(mulhi_p)

def mulhi(x, y):
  """Elementwise high half of the double-width product of two integers.

  Defined for integer dtypes (others raise ``TypeError``).

  For N-bit integers, the top N bits of the 2N-bit product ``x * y`` (signed or unsigned as
  the dtype).

  Its derivative is zero (piecewise constant, or integer/boolean valued).

  Args:
    x: the first operand.
    y: the second operand.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.mulhi(jnp.array([2 ** 30], jnp.uint32), jnp.array([8], jnp.uint32))
    Array([2], dtype=uint32)
  """
  return mulhi_p.bind(*_operands("mulhi", x, y))


__all__ += ["eq_to_p", "le_to_p", "lt_to_p", "mulhi", "mulhi_p"]

__all__ += ["AccuracyMode", "Tolerance"]


# Sharding in types: every elementwise primitive splits its result as its operands are split.
for _name in __all__:
  if _name.endswith("_p"):
    sharding_types.sharding_rules[globals()[_name]] = sharding_types.broadcasting_rule(
        _name[:-2])
