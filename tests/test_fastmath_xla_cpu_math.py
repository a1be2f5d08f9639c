"""fastmath.xla_cpu_math: NumPy's log, log1p, erf_inv and fused multiply-add give, bit for bit,
what hlox's jitted programs compute on XLA:CPU (and what exact arithmetic says for the fma)."""
from fractions import Fraction

import numpy as np
import pytest

import hlox
import hlox.numpy as hnp
from hlox import lax
from hlox.config import enable_x64
from hlox.fastmath import xla_cpu_math as m

_RNG = np.random.default_rng(14)
_EDGES32 = np.array([0., -0., 1e-45, -1e-45, 1e-40, 1.1754942e-38, 1.1754944e-38, 1e-30, 0.5,
                     0.70710677, 0.7071068, 1., 2., 3.4e38, np.inf, -np.inf, np.nan, -1.,
                     -1e-30], np.float32)
_EDGES64 = np.array([0., -0., 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.5,
                     0.7071067811865476, 1., 2., 1.7e308, np.inf, -np.inf, np.nan, -1.])


def _floats_from(lo, count, step=1, dtype=np.float32):
  """``count`` consecutive (every ``step``-th) floats from ``lo`` up."""
  uint = np.uint32 if dtype == np.float32 else np.uint64
  start = np.array(lo, dtype).view(uint)
  return (start + np.arange(0, count * step, step, dtype=uint)).view(dtype)


def _sampler_inputs32(step):
  """Every ``step``-th float32 that ``normal``'s uniform draw can be: -1 + 2^-24 + k 2^-22."""
  lo = np.nextafter(np.float32(-1), np.float32(0))
  f = (np.arange(0, 2**23, step, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32)
  return np.maximum(lo, (f - np.float32(1)) * np.float32(2) + lo)


def assert_same_bits(actual, expected):
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  uint = f"uint{actual.dtype.itemsize * 8}"
  both_nan = np.isnan(actual) & np.isnan(expected)
  bad = (actual.view(uint) != expected.view(uint)) & ~both_nan
  assert not bad.any(), (bad.sum(), actual[bad][:5], expected[bad][:5])


def test_log32_every_float_of_one_binade_and_a_wide_sample():
  x = np.concatenate([_floats_from(0.5, 2**21, 4),  # mantissas, both sides of sqrt(1/2)
                      np.exp2(_RNG.uniform(-126, 128, 10**6)).astype(np.float32),
                      _RNG.uniform(0, 1, 10**6).astype(np.float32), _EDGES32])
  assert_same_bits(m.log32(x), hlox.jit(hnp.log)(x))


def test_log1p32_and_erf_inv32():
  u = _sampler_inputs32(4)
  x = np.concatenate([u, _RNG.uniform(-1, 1, 10**5).astype(np.float32),
                      np.exp2(_RNG.uniform(-60, 0, 10**5)).astype(np.float32), _EDGES32,
                      -_EDGES32])
  assert_same_bits(m.erf_inv32(x), hlox.jit(lax.erf_inv)(x))
  with np.errstate(over="ignore"):
    y = np.concatenate([-x * x, x])
  assert_same_bits(m.log1p32(y), hlox.jit(hnp.log1p)(y))


def test_float64_log_log1p_erf_inv():
  x = np.concatenate([_RNG.uniform(-1, 1, 10**5), 1 - np.exp(_RNG.uniform(-36, -1, 3 * 10**4)),
                      np.exp(_RNG.uniform(-700, 700, 3 * 10**4)), _EDGES64, -_EDGES64])
  with enable_x64():
    assert_same_bits(m.log64(np.abs(x)), hlox.jit(hnp.log)(np.abs(x)))
    with np.errstate(over="ignore"):
      y = -x * x
    assert_same_bits(m.log1p64(y), hlox.jit(hnp.log1p)(y))
    small = x[np.abs(x) <= 1]
    assert_same_bits(m.erf_inv64(small), hlox.jit(lax.erf_inv)(small))


def _exact_fma(a, b, c, dtype):
  return np.array([float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                   if dtype == np.float64 else _round32(Fraction(float(x)) * Fraction(float(y))
                                                        + Fraction(float(z)))
                   for x, y, z in zip(a, b, c)], dtype)


def _round32(q):
  # float32 rounding of an exact rational (normal range): float() rounds to float64 first,
  # so go through the neighbours instead.
  lo = np.float32(float(q))
  for cand in (np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))):
    if Fraction(float(cand)) <= q:
      below = cand
  above = np.nextafter(below, np.float32(np.inf))
  d_lo, d_hi = q - Fraction(float(below)), Fraction(float(above)) - q
  if d_lo != d_hi:
    return below if d_lo < d_hi else above
  return below if below.view(np.uint32) % 2 == 0 else above


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype):
  a, b = _RNG.standard_normal((2, 3000)).astype(dtype)
  c = (_RNG.standard_normal(3000) * np.exp2(_RNG.integers(-60, 5, 3000))).astype(dtype)
  # Ties of the float32 rounding that a float64 sum would resolve wrongly: (1 + 2^-12)^2 =
  # 1 + 2^-11 + 2^-24 sits halfway between two float32; a tiny c decides the direction.
  t = dtype(1 + 2.0 ** -12)
  a = np.concatenate([a, [t, t, -t, t]]).astype(dtype)
  b = np.concatenate([b, [t, t, t, t]]).astype(dtype)
  c = np.concatenate([c, [2.0 ** -60, -2.0 ** -60, 2.0 ** -60, 0.]]).astype(dtype)
  fma = m.fma32 if dtype == np.float32 else m.fma64
  assert_same_bits(fma(a, b, c), _exact_fma(a, b, c, dtype))
  assert_same_bits(fma(a[:1], b[:1], c[:1]), _exact_fma(a[:1], b[:1], c[:1], dtype))
  # a signed zero comes out as the plain sum gives it
  z = np.array([-0.], dtype)
  assert np.signbit(fma(z, np.array([1.], dtype), z))[0]


def test_horner_matches_a_chain_of_fmas():
  x = _RNG.uniform(-2, 2, 1000)
  coeffs = (0.3, -1.7, 2.5, 1e-3)
  p64 = np.full_like(x, coeffs[0])
  p32 = p64.astype(np.float32)
  for c in coeffs[1:]:
    p64 = m.fma64(p64, x, c)
    p32 = m.fma32(p32, x.astype(np.float32), np.float32(c))
  assert_same_bits(m.horner64(x, coeffs), p64)
  assert_same_bits(m.horner32(x.astype(np.float32), coeffs), p32)
