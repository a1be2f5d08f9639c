"""Elementwise arithmetic composed from the ufuncs rather than one ``lax`` operation:
``gcd``, ``lcm`` (a ``while_loop`` of remainders), ``ldexp``, ``frexp``, ``spacing`` and the
modified Bessel function ``i0``.
"""
from __future__ import annotations

import builtins

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, shapes, ufuncs, util

__all__ = ["gcd", "lcm", "ldexp", "frexp", "i0", "spacing"]


def gcd(x1, x2, /):
  """Greatest common divisor of integers (elementwise, non-negative)."""
  util.check_arraylike("gcd", x1, x2)
  # Promoted first: a bool operand beside an integer one is an integer (as in NumPy).
  x1, x2 = util.promote_args_numeric("gcd", x1, x2)
  if not dtypes.is_int(dtypes.dtype_of(x1)):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  a, b = ufuncs.abs(x1), ufuncs.abs(x2)
  a, b = shapes.broadcast_arrays(a, b)
  def cond(c):
    return reductions.any(c[1] != 0)
  def body(c):
    x, y = c
    nz = y != 0
    safe_y = ufuncs.where(nz, y, 1)
    return ufuncs.where(nz, y, x), ufuncs.where(nz, x % safe_y, 0)
  return lax.while_loop(cond, body, (a, b))[0]


def lcm(x1, x2, /):
  """Least common multiple of integers (elementwise, non-negative)."""
  util.check_arraylike("lcm", x1, x2)
  # Promoted first: a bool operand beside an integer one is an integer (as in NumPy).
  x1, x2 = util.promote_args_numeric("lcm", x1, x2)
  if not dtypes.is_int(dtypes.dtype_of(x1)):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  # Magnitudes first, then the product, which wraps on overflow as NumPy's does (the sign
  # of a wrapped result is kept: lcm(-16, 11) in int8 is -80, as in NumPy).
  x1, x2 = ufuncs.abs(x1), ufuncs.abs(x2)
  d = gcd(x1, x2)
  return ufuncs.where(d == 0, creation.zeros_like(d), ufuncs.multiply(
      x1, ufuncs.floor_divide(x2, ufuncs.where(d == 0, 1, d))))


def ldexp(x1, x2, /):
  """``x1 * 2 ** x2`` (``x2`` integer)."""
  util.check_arraylike("ldexp", x1, x2)
  x2 = creation.asarray(x2)
  if not dtypes.is_int(get_aval(x2).dtype) and get_aval(x2).dtype != np.bool_:
    raise ValueError(f"ldexp: x2 must be an integer array, got dtype {x2.dtype}")
  x1, = util.promote_dtypes_inexact(creation.asarray(x1) if not isinstance(x1, (int, float))
                                    else x1)
  x1 = creation.asarray(x1)
  dtype = get_aval(x1).dtype
  # Two steps so that 2**x2 itself neither overflows nor underflows too early.
  half = ufuncs.floor_divide(x2, 2)
  two = creation.asarray(2, dtype)
  out = (x1 * ufuncs.power(two, half.astype(dtype))
         * ufuncs.power(two, (x2 - half).astype(dtype)))
  # Zeros and infinities stay themselves (the factors can be 0 or inf: 0 * inf is NaN).
  return ufuncs.where(ufuncs.isinf(x1) | (x1 == 0), x1, out)


def frexp(x, /):
  """Mantissa in [0.5, 1) and integer exponent with ``x == mantissa * 2 ** exponent``."""
  util.check_arraylike("frexp", x)
  x, = util.promote_dtypes_inexact(creation.asarray(x))
  if dtypes.is_complex(get_aval(x).dtype):
    raise TypeError("frexp does not support complex-valued inputs")
  finite = ufuncs.isfinite(x) & (x != 0)
  safe = ufuncs.where(finite, ufuncs.abs(x), 1)
  e = ufuncs.floor(ufuncs.log2(safe)).astype(np.int32) + 1
  # Scale by 2**-e in two halves: for subnormals 2**-e alone overflows.
  two = creation.asarray(2, get_aval(x).dtype)
  half = e // 2
  m = (x * ufuncs.power(two, (-half).astype(two.dtype))
       * ufuncs.power(two, (half - e).astype(two.dtype)))
  # log2 can be off by one near powers of two: correct to keep |m| in [0.5, 1).
  too_big = ufuncs.abs(m) >= 1
  too_small = ufuncs.abs(m) < 0.5
  m = ufuncs.where(too_big, m / 2, ufuncs.where(too_small, m * 2, m))
  e = ufuncs.where(too_big, e + 1, ufuncs.where(too_small, e - 1, e))
  return ufuncs.where(finite, m, x), ufuncs.where(finite, e, 0)


def spacing(x, /):
  """Distance from ``x`` to the next representable value away from zero."""
  util.check_arraylike("spacing", x)
  x, = util.promote_dtypes_inexact(creation.asarray(x))
  dtype = get_aval(x).dtype
  if dtypes.is_complex(dtype):
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  inf = creation.asarray(np.inf, dtype)
  if dtype == np.float16:  # NumPy's float16 spacing steps towards +inf whatever the sign
    return ufuncs.nextafter(x, inf) - x
  result = ufuncs.nextafter(x, ufuncs.copysign(inf, x)) - x
  # Where the step is subnormal the device may flush the difference to zero: the step there
  # is the smallest subnormal (as NumPy computes it).
  tiny = creation.asarray(dtypes.finfo(dtype).smallest_subnormal, dtype)
  return ufuncs.where(result == 0, ufuncs.copysign(tiny, x), result)


def i0(x):
  """Modified Bessel function of the first kind, order 0 (power series)."""
  util.check_arraylike("i0", x)
  x, = util.promote_dtypes_inexact(creation.asarray(x))
  if dtypes.is_complex(get_aval(x).dtype):
    raise ValueError("i0 does not support complex-valued inputs")
  dtype = get_aval(x).dtype
  if dtype.itemsize < 4:  # sum the series in float32, then round once
    return i0(x.astype(np.float32)).astype(dtype)
  ax = ufuncs.abs(x)
  # Small: the series sum (x/2)^(2k) / (k!)^2; large: the asymptotic expansion.
  y = (ax / 2) ** 2
  term = creation.ones_like(ax)
  total = creation.ones_like(ax)
  for k in builtins.range(1, 40):
    term = term * y / (k * k)
    total = total + term
  safe = ufuncs.where(ax > 30, ax, 30.0)
  big = ufuncs.exp(safe) / ufuncs.sqrt(2 * np.pi * safe) * (
      1 + 1 / (8 * safe) + 9 / (128 * safe ** 2) + 225 / (3072 * safe ** 3))
  return ufuncs.where(ax > 30, big, total)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["gcd", "lcm", "i0", "ldexp", "frexp"], {},
                    staged=("gcd", "lcm", "i0", "ldexp", "frexp"))
