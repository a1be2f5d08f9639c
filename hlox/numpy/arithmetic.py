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
  """Greatest common divisor of integers, elementwise.

  The inputs broadcast together and are promoted to a common integer dtype (a bool beside an
  integer becomes an integer). The result is non-negative, and ``gcd(0, 0)`` is 0. Non-integer
  inputs raise a ValueError. It runs Euclid's algorithm in a ``lax.while_loop``, so it works under
  ``jit``.

  Args:
    x1: first integer array or scalar.
    x2: second integer array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs, with their promoted integer dtype.

  Examples:
    >>> jnp.gcd(jnp.array([12, 18, -8, 0]), jnp.array([8, 12, 6, 0]))
    Array([4, 6, 2, 0], dtype=int32)
    >>> jnp.gcd(jnp.array([15, 21]), 6)
    Array([3, 3], dtype=int32)

  See also:
    :func:`hlox.numpy.lcm`.
  """
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
  """Least common multiple of integers, elementwise.

  The inputs broadcast together and are promoted to a common integer dtype. The result is
  non-negative unless the product overflows (it wraps, as in NumPy); it is 0 when either input is
  0. Non-integer inputs raise a ValueError.

  Args:
    x1: first integer array or scalar.
    x2: second integer array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs, with their promoted integer dtype.

  Examples:
    >>> jnp.lcm(jnp.array([4, 6, -3, 0]), jnp.array([6, 8, 5, 7]))
    Array([12, 24, 15,  0], dtype=int32)

  See also:
    :func:`hlox.numpy.gcd`.
  """
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
  """Multiply by an integer power of two elementwise: ``x1 * 2 ** x2``.

  ``x1`` is promoted to an inexact dtype (integers become the default float dtype); ``x2`` must be
  an integer or bool array, else a ValueError is raised. The scaling is done in two steps so that
  large exponents do not overflow early; zeros and infinities are returned unchanged.

  Args:
    x1: mantissas, an array or scalar.
    x2: integer exponents, an array or scalar; broadcast against ``x1``.

  Returns:
    An array of the broadcast shape of the inputs, with the inexact dtype of ``x1``.

  Examples:
    >>> jnp.ldexp(jnp.array([1., 0.75, -3.]), jnp.array([3, 2, -1]))
    Array([ 8. ,  3. , -1.5], dtype=float32)

  See also:
    :func:`hlox.numpy.frexp`, its inverse.
  """
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
  """Split floats into mantissa and exponent elementwise: ``x == m * 2 ** e``.

  The mantissa ``m`` has a magnitude in ``[0.5, 1)`` and the sign of ``x``; for zeros, infinities
  and NaN it is ``x`` itself and the exponent is 0. Integer inputs are promoted to the default
  float dtype; complex inputs raise a TypeError.

  Args:
    x: input array or scalar.

  Returns:
    A tuple ``(m, e)`` of arrays of ``x``'s shape: ``m`` with ``x``'s inexact dtype and ``e`` as
    int32.

  Examples:
    >>> jnp.frexp(jnp.array([8., 0.3, -5., 0.]))
    (Array([ 0.5  ,  0.6  , -0.625,  0.   ], dtype=float32), Array([ 4, -1,  3,  0], dtype=int32))

  See also:
    :func:`hlox.numpy.ldexp`, its inverse.
  """
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
  """Distance from ``x`` to the next representable float away from zero, elementwise.

  This is the unit in the last place of each value: ``nextafter(x, copysign(inf, x)) - x``. It
  depends on the dtype, so integer inputs are first promoted to the default float dtype (float32).
  Complex inputs raise a ValueError.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape, with ``x``'s inexact dtype (negative for negative ``x``).

  Examples:
    >>> jnp.spacing(jnp.array([1., -1., 1024.]))
    Array([ 1.1920929e-07, -1.1920929e-07,  1.2207031e-04], dtype=float32)

  See also:
    :func:`hlox.numpy.nextafter`, :func:`hlox.numpy.finfo`.
  """
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
  """Modified Bessel function of the first kind of order zero, elementwise.

  It is summed from its power series for ``|x| <= 30`` and from the asymptotic expansion beyond;
  inputs narrower than 32 bits are computed in float32 and rounded back. Integer inputs are
  promoted to the default float dtype; complex inputs raise a ValueError.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape, with ``x``'s inexact dtype.

  Examples:
    >>> jnp.i0(jnp.array([0., 1., -2.]))
    Array([1.       , 1.266066 , 2.2795851], dtype=float32)
  """
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
