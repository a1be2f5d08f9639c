"""Float arithmetic in NumPy with the roundings XLA:CPU gives, for bit-exact samplers.

``prng_numpy`` builds its floats here so that they equal, bit for bit, what ``hlox.random``'s
programs compute on XLA:CPU. Three things decide those bits, all read off XLA's optimized LLVM
IR and its object code (``XLA_FLAGS=--xla_dump_to=DIR``) for jaxlib 0.10.2:

* LLVM contracts every ``fmul`` whose only use is an ``fadd``/``fsub`` into one fused
  multiply-add (x86 FMA). ``fma32`` reproduces it from float64 (exact products), ``fma64``
  from error-free transformations and an addition rounded to odd.
* float32 ``log`` is XLA's own inlined intrinsic: Cephes' ``logf`` in the form Eigen writes
  it (``log32``). float64 ``log`` is a call to the C library's ``log`` (glibc's, which Python's
  ``math.log`` also is; NumPy's own SIMD ``log`` differs in the last bit on ~1% of inputs).
* ``log1p`` is XLA's expansion (a Cephes rational below sqrt(2) - 1, ``log(1 + x)`` above) and
  ``erf_inv`` is StableHLO's CHLO decomposition (Giles' polynomials, evaluated by Horner).

Everything here works on 1-D arrays of one dtype; callers reshape. ``xla_fuses_half``
reads the host CPU's features: whether XLA fuses half-width arithmetic depends on them.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["fma32", "fma64", "horner32", "horner64", "log32", "log64", "log1p32", "log1p64",
           "erf_inv32", "erf_inv64", "fma_half", "xla_fuses_half"]

_f32, _f64 = np.float32, np.float64
_LOW29 = np.uint64((1 << 29) - 1)
_HALF29 = np.uint64(1 << 28)


def _round_fused(s, a64, b64, c64, scratch=None):
  """float32 rounding of ``s = a64 * b64 + c64`` (float64 arrays, the product exact) as a
  fused multiply-add rounds it.

  The product of two float32 is exact in float64, so ``s`` is off only by its own rounding
  error. Rounding ``s`` to float32 is then what the fused operation gives, unless ``s`` sits
  exactly halfway between two float32 numbers: there the sign of the error (TwoSum) decides.
  ``scratch``: ``(float32, uint64, bool)`` buffers of ``s``'s shape to reuse (a loop of
  Horner steps over a million elements spends as long allocating fresh ones as computing).
  """
  if scratch is None:
    out = s.astype(_f32)
    tie = (s.view(np.uint64) & _LOW29) == _HALF29
  else:
    out, low, tie = scratch
    np.copyto(out, s, casting="same_kind")
    np.bitwise_and(s.view(np.uint64), _LOW29, out=low)
    np.equal(low, _HALF29, out=tie)
  if tie.any():
    idx = np.nonzero(tie)
    p = np.broadcast_to(a64, s.shape)[idx] * np.broadcast_to(b64, s.shape)[idx]
    c = np.broadcast_to(c64, s.shape)[idx]
    t = s[idx]
    bb = t - p
    err = (p - (t - bb)) + (c - bb)
    trunc = (t.view(np.uint64) & ~_LOW29).view(_f64).astype(_f32)
    up = np.nextafter(trunc, np.copysign(_f32(np.inf), trunc))
    fixed = np.where((err > 0) == (t > 0), up, trunc)
    out[idx] = np.where(err != 0, fixed, out[idx])
  return out


def fma32(a, b, c):
  """``a * b + c`` for float32 values with one rounding, as a hardware FMA gives it."""
  a64, b64, c64 = (np.asarray(v, _f64) for v in (a, b, c))
  s = np.atleast_1d(a64 * b64 + c64)
  shape = np.broadcast_shapes(a64.shape, b64.shape, c64.shape)
  return _round_fused(s, a64, b64, c64).reshape(shape)


def horner32(x, coeffs):
  """``coeffs[0] * x**n + ... + coeffs[n]`` for float32 ``x`` (1-D), one fused
  multiply-add per step, in float64 working arrays to keep the many steps cheap."""
  x64 = x.astype(_f64)
  p64 = np.full_like(x64, float(_f32(coeffs[0])))
  p32 = p64.astype(_f32)
  s = np.empty_like(x64)
  scratch = (np.empty(x64.shape, _f32), np.empty(x64.shape, np.uint64),
             np.empty(x64.shape, np.bool_))
  for c in coeffs[1:]:
    c = _f64(_f32(c))
    np.multiply(p64, x64, out=s)
    s += c
    p32 = _round_fused(s, p64, x64, c, scratch)
    np.copyto(p64, p32)
  return p32.copy()


# --- float64: an exact fused multiply-add without a wider type ------------------------------

_SPLITTER = _f64(2.0 ** 27 + 1)  # Veltkamp: splits a double into two 26-bit halves


def _two_sum(a, b):
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
  p = a * b
  t = _SPLITTER * a
  ah = t - (t - a)
  al = a - ah
  t = _SPLITTER * b
  bh = t - (t - b)
  bl = b - bh
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd(v, err):
  """Turns ``v = RN(exact)``, ``err = exact - v``, into the exact sum rounded to odd, in place."""
  fix = (err != 0) & ((v.view(np.uint64) & np.uint64(1)) == 0)
  if fix.any():
    v[fix] = np.nextafter(v[fix], np.copysign(np.inf, err[fix]))


def fma64(a, b, c):
  """``a * b + c`` for float64 with one rounding (finite values, no overflow or underflow).

  The product is split exactly into ``ph + pl``; ``c + ph`` exactly into ``th + tl``; then
  ``th + RO(tl + pl)``, with the inner sum rounded to odd, rounds as the exact sum does
  (Boldo and Melquiond's emulation of FMA).
  """
  a, b, c = (np.asarray(v, _f64) for v in (a, b, c))
  ph, pl = _two_prod(a, b)
  th, tl = _two_sum(c, ph)
  v, err = _two_sum(tl, pl)
  v = np.array(v)
  _round_to_odd(v, np.asarray(err))
  out = th + v
  # An exact zero takes its sign from the plain sum (-0 * 1 + -0 is -0, th + v says +0).
  return np.where(out == 0, a * b + c, out)


def horner64(x, coeffs):
  """``coeffs[0] * x**n + ... + coeffs[n]`` for float64 ``x`` (1-D), one fused multiply-add
  per step: ``fma64`` with the split of ``x`` made once and every step in reused buffers
  (fresh million-element temporaries cost as much as the arithmetic)."""
  t = _SPLITTER * x
  xh = t - (t - x)
  xl = x - xh
  p = np.full_like(x, coeffs[0])
  ph, h, lo, pl, th, tl, tmp = (np.empty_like(x) for _ in range(7))
  for c in coeffs[1:]:
    c = _f64(c)
    np.multiply(p, x, out=ph)
    # Veltkamp's split p = h + lo, then Dekker's pl = p * x - ph, exactly
    np.multiply(p, _SPLITTER, out=t)
    np.subtract(t, p, out=h)
    np.subtract(t, h, out=h)
    np.subtract(p, h, out=lo)
    np.multiply(h, xh, out=pl)
    pl -= ph
    np.multiply(h, xl, out=tmp)
    pl += tmp
    np.multiply(lo, xh, out=tmp)
    pl += tmp
    np.multiply(lo, xl, out=tmp)
    pl += tmp
    # th + tl = ph + c exactly (TwoSum)
    np.add(ph, c, out=th)
    np.subtract(th, ph, out=tmp)
    np.subtract(th, tmp, out=tl)
    np.subtract(ph, tl, out=tl)
    np.subtract(c, tmp, out=tmp)
    tl += tmp
    v, err = _two_sum(tl, pl)
    _round_to_odd(v, err)
    np.add(th, v, out=t)
    zero = t == 0
    if zero.any():  # an exact zero takes its sign from the plain sum
      t[zero] = p[zero] * x[zero] + c
    p, t = t, p
  return p


# --- XLA:CPU runs with denormals flushed to zero, in inputs (DAZ) and results (FTZ) --------

def _daz(x):
  tiny = np.finfo(x.dtype).tiny
  sub = (np.abs(x) < tiny) & (x != 0)
  return np.where(sub, np.copysign(x.dtype.type(0), x), x) if sub.any() else x


_ftz = _daz


# --- log --------------------------------------------------------------------------------

def _f32_bits(*words):
  return tuple(np.uint32(w).view(_f32) for w in words)


# Cephes' logf: log(1 + x) ~ x - x^2/2 + x^3 * P(x) on [sqrt(1/2) - 1, sqrt(2) - 1], with
# log(2) split into two parts so that e * log(2) adds without rounding error.
_LOGF_P = _f32_bits(0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50,
                    0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA)
_LOGF_LN2_LO, _LOGF_LN2_HI = _f32_bits(0xB95E8083, 0x3F318000)
_SQRT_HALF_F32, = _f32_bits(0x3F3504F3)
_TINY_F32 = _f32(np.finfo(_f32).tiny)


def log32(v):
  """XLA:CPU's float32 ``log`` of a 1-D float32 array, bit for bit.

  The mantissa m in [1/2, 1) and exponent e of ``v`` (non-positive and subnormal inputs are
  first raised to the smallest normal, as XLA does, then patched); m < sqrt(1/2) is doubled so
  that x = m - 1 lies in [sqrt(1/2) - 1, sqrt(2) - 1). The three interleaved Horner chains and
  the order of the final sums follow Eigen's ``plog_float``; each ``fma32`` is one of LLVM's
  contractions. Where a sum has two products, LLVM fuses the first operand.
  """
  v = _daz(v)
  with np.errstate(invalid="ignore"):
    c = np.where(v > _TINY_F32, v, _TINY_F32)
  bits = c.view(np.uint32)
  m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(_f32)
  e = ((bits >> np.uint32(23)).astype(np.int32) - 126).astype(_f32)
  small = m < _SQRT_HALF_F32
  x = (m - _f32(1)) + np.where(small, m, _f32(0))  # exact
  e -= small
  x2 = x * x
  x3 = x2 * x
  # The chains run on float64 copies holding float32 values (each step rounded to float32).
  x64, x3_64, p = x.astype(_f64), x3.astype(_f64), [_f64(c) for c in _LOGF_P]

  def fused(a, b, c):
    return _round_fused(np.atleast_1d(a * b + c), a, b, c).astype(_f64)

  y0 = fused(fused(p[0], x64, p[1]), x64, p[2])
  y1 = fused(fused(p[3], x64, p[4]), x64, p[5])
  y2 = fused(fused(p[6], x64, p[7]), x64, p[8])
  y = fused(fused(y0, x3_64, y1), x3_64, y2)
  y = fused(y, x3_64, (e * _LOGF_LN2_LO).astype(_f64)).astype(_f32)
  out = fma32(e, _LOGF_LN2_HI, (x - x2 * _f32(0.5)) + y)
  # log(0) = -inf, log(inf) = inf, log(negative or NaN) = NaN
  out[v == 0] = -np.inf
  out[v == np.inf] = np.inf
  with np.errstate(invalid="ignore"):
    out[~(v >= 0)] = np.nan
  return out


def log64(v):
  """XLA:CPU's float64 ``log``: a call to the C library's ``log``, which ``math.log`` is."""
  v = _daz(v)
  out = np.empty_like(v)
  finite = (v > 0) & (v < np.inf)
  out[finite] = np.frompyfunc(math.log, 1, 1)(v[finite]).astype(_f64)
  out[v == 0] = -np.inf
  out[v == np.inf] = np.inf
  with np.errstate(invalid="ignore"):
    out[~(v >= 0)] = np.nan
  return out


# --- log1p --------------------------------------------------------------------------------

# XLA's log1p: a Cephes rational approximation below sqrt(2) - 1, log(1 + x) above.
_LOG1P_NUM = (4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
              6.5787325942061044846969E0, 2.9911919328553073277375E1,
              6.0949667980987787057556E1, 5.7112963590585538103336E1,
              2.0039553499201281259648E1)
_LOG1P_DEN = (1., 1.5062909083469192043167E1, 8.3047565967967209469434E1,
              2.2176239823732856465394E2, 3.0909872225312059774938E2,
              2.1642788614495947685003E2, 6.0118660497603843919306E1)
_LOG1P_SMALL = 0.41421356237309504880


def _log1p(x, dtype, horner, fma, log):
  x = _daz(x)
  small = np.abs(x) < dtype.type(_LOG1P_SMALL)
  out = np.empty_like(x)
  xs = x[small]
  x2 = xs * xs
  ratio = horner(xs, _LOG1P_NUM) / horner(xs, _LOG1P_DEN)
  out[small] = xs + fma(x2, dtype.type(-0.5), (xs * x2) * ratio)
  out[~small] = log(x[~small] + dtype.type(1))
  return out


def log1p32(x):
  """XLA:CPU's float32 ``log1p`` of a 1-D float32 array, bit for bit."""
  return _log1p(x, np.dtype(_f32), horner32, fma32, log32)


def log1p64(x):
  """XLA:CPU's float64 ``log1p`` of a 1-D float64 array, bit for bit."""
  return _log1p(x, np.dtype(_f64), horner64, fma64, log64)


# --- erf_inv -------------------------------------------------------------------------------

# Giles' single-precision erfinv, in the form StableHLO's CHLO decomposition evaluates it:
# w = -log1p(-x*x); a degree-8 polynomial in w - 2.5 (w < 5) or sqrt(w) - 3.
_ERFINV32_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV32_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                   0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)

# Giles' double-precision erfinv: polynomials in w - 3.125 (w < 6.25), sqrt(w) - 3.25
# (w < 16) and sqrt(w) - 5.
_ERFINV64_SMALL = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
_ERFINV64_MID = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
_ERFINV64_LARGE = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
    2.9147953450901081e-08, -6.7711997758452339e-08, 2.2900482228026655e-07,
    -9.9298272942317e-07, 4.5260625972231537e-06, -1.9681778105531671e-05,
    7.5995277030017761e-05, -0.00021503011930044477, -0.00013871931833623122,
    1.0103004648645344, 4.8499064014085844)


def _erf_inv(x, dtype, log1p, horner, branches):
  """``branches``: (upper bound of w or None, use sqrt(w), shift, coefficients), in order."""
  t = dtype.type
  x = _daz(x)
  with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
    w = -log1p(-x * x)
    out = np.empty_like(x)
    rest = np.ones(x.shape, bool)
    for bound, use_sqrt, shift, coeffs in branches:
      where = rest.copy() if bound is None else rest & (w < t(bound))
      rest &= ~where
      ws = w[where]
      z = (np.sqrt(ws) if use_sqrt else ws) - t(shift)
      out[where] = horner(z, coeffs) * x[where]
    return _ftz(np.where(np.abs(x) == 1, x * t(np.inf), out))


def erf_inv32(x):
  """XLA:CPU's float32 ``erf_inv`` of a 1-D float32 array, bit for bit."""
  return _erf_inv(x, np.dtype(_f32), log1p32, horner32,
                  ((5., False, 2.5, _ERFINV32_SMALL), (None, True, 3., _ERFINV32_LARGE)))


def erf_inv64(x):
  """XLA:CPU's float64 ``erf_inv`` of a 1-D float64 array, bit for bit."""
  return _erf_inv(x, np.dtype(_f64), log1p64, horner64,
                  ((6.25, False, 3.125, _ERFINV64_SMALL), (16., True, 3.25, _ERFINV64_MID),
                   (None, True, 5., _ERFINV64_LARGE)))


def fma_half(a, b, c):
  """A half-width fused ``a * b + c``: the product and the sum are exact in float64, so one
  rounding at the end is the fused operation's."""
  return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(a.dtype)


# Host CPU features under which XLA:CPU computes a half-width dtype natively, so that LLVM
# fuses ``a * b + c`` into one multiply-add. Only x86's AVX512-FP16 has been verified (against
# XLA, on a Sapphire Rapids Xeon); elsewhere XLA computes in float32 and rounds after each
# operation. Linux spells the flag ``avx512_fp16`` in /proc/cpuinfo (LLVM's name is
# ``avx512fp16``): both are accepted.
_NATIVE_HALF_CPU_FLAGS = {"float16": ("avx512_fp16", "avx512fp16")}


@functools.cache
def _cpu_flags() -> frozenset:
  """The feature flags Linux reports for the host CPU (empty where it reports none)."""
  try:
    with open("/proc/cpuinfo") as f:
      lines = f.read().splitlines()
  except OSError:
    return frozenset()
  flags = set()
  for line in lines:
    key, _, value = line.partition(":")
    if key.strip() in ("flags", "Features"):
      flags.update(value.split())
  return frozenset(flags)


def xla_fuses_half(dtype) -> bool:
  """Whether XLA:CPU contracts a half-width ``a * b + c`` into one fused multiply-add here.

  That depends on the host CPU, not on jaxlib: it is read off the CPU's feature flags, so the
  NumPy backend compiles nothing (a test checks the answer against XLA).
  """
  native = _NATIVE_HALF_CPU_FLAGS.get(np.dtype(dtype).name, ())
  return any(flag in _cpu_flags() for flag in native)
