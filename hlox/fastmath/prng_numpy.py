"""threefry2x32 keys and samplers written in NumPy, bit for bit those of ``hlox.random``.

The NumPy backend of ``hlox.fastmath`` draws from here, so a model initialised under either
backend from the same key gets the same numbers. Everything mirrors ``hlox.random`` (JAX
0.10.2 with partitionable threefry): keys are ``uint32[2]``, ``split`` hashes the positions
``(0, i)``, ``fold_in`` hashes ``(0, data)``, 32-bit random bits are the xor of the two
output words.

Floats are built the way XLA:CPU evaluates ``hlox.random``'s programs, because
bit-exactness needs the same roundings: ``xla_cpu_math`` supplies the fused multiply-adds LLVM
contracts ``a * b + c`` into, and XLA's own ``log``, ``log1p`` and ``erf_inv``. ``uniform``,
``normal``, ``randint`` and ``bernoulli`` then equal the hlox backend's bit for bit, in float32
and float64 (all 2^23 float32 values the normal sampler can produce were compared with
XLA once; the tests compare a quarter of them).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from hlox.config import config
from hlox.fastmath import xla_cpu_math

__all__ = ["PRNGKey", "split", "fold_in", "random_bits", "uniform", "normal", "randint",
           "bernoulli", "threefry2x32"]

_u32 = np.dtype(np.uint32)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_TO_32 = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
          np.dtype(np.uint64): np.dtype(np.uint32), np.dtype(np.complex128):
          np.dtype(np.complex64)}


def _x64():
  return bool(config.enable_x64)


def _canonical(dtype):
  dtype = np.dtype(dtype)
  return dtype if _x64() else _TO_32.get(dtype, dtype)


def _default_float():
  return np.dtype(np.float64 if _x64() else np.float32)


def threefry2x32(k1, k2, x1, x2):
  """Threefry-2x32 (20 rounds) of the words ``x1, x2`` under the key ``(k1, k2)``."""
  k1, k2 = np.uint32(k1), np.uint32(k2)
  ks = (k1, k2, np.uint32(k1 ^ k2 ^ np.uint32(0x1BD11BDA)))
  x0 = np.add(x1, ks[0], dtype=_u32)
  x1 = np.add(x2, ks[1], dtype=_u32)
  tmp = np.empty_like(x1)
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x0 += x1
      # x1 = x0 ^ rotl(x1, r), in place to keep 1e6-element draws fast
      np.left_shift(x1, np.uint32(r), out=tmp)
      x1 >>= np.uint32(32 - r)
      x1 |= tmp
      x1 ^= x0
    x0 += ks[(i + 1) % 3]
    x1 += ks[(i + 2) % 3]
    x1 += np.uint32(i + 1)
  return x0, x1


def _check_key(name, key):
  key = np.asarray(key)
  if key.dtype != _u32 or key.shape != (2,):
    raise TypeError(f"{name}: expected a PRNG key, a uint32 array of shape (2,) from "
                    f"fastmath.random.get_prng(seed); got an array of {key.dtype}{list(key.shape)}")
  return key


def _canonical_shape(name, shape):
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  try:
    shape = tuple(int(d) for d in shape)
  except TypeError:
    raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape must be non-negative, got {shape}")
  return shape


def PRNGKey(seed):
  """The key ``uint32[2]`` = (high, low) 32 bits of an integer seed (high only with x64)."""
  if isinstance(seed, (bool, np.bool_)):
    seed = int(seed)
  if np.ndim(seed):
    raise TypeError(f"get_prng: the seed must be a scalar, got an array of shape "
                    f"{np.shape(seed)}")
  if isinstance(seed, (float, complex)):
    raise TypeError(f"get_prng: the seed must be an integer, got {type(seed).__name__}")
  if not isinstance(seed, int):
    try:
      seed = np.asarray(seed)  # NumPy scalars and arrays, hlox Arrays
    except Exception:  # noqa: BLE001  (any object NumPy cannot read is no seed)
      seed = None
    if seed is None or not np.issubdtype(seed.dtype, np.integer):
      raise TypeError(f"get_prng: the seed must be an integer, got "
                      f"{'an object' if seed is None else seed.dtype}")
  wide = _x64() if isinstance(seed, int) else seed.dtype.itemsize == 8
  s = int(seed)
  hi = (s >> 32) & 0xFFFFFFFF if wide else 0
  return np.array([hi, s & 0xFFFFFFFF], _u32)


def _positions(shape):
  n = math.prod(shape)
  return np.zeros(n, _u32), np.arange(n, dtype=_u32)


def split(key, num=2):
  """``num`` (an int or a shape) new keys from ``key``, stacked along new leading axes."""
  key = _check_key("split", key)
  shape = _canonical_shape("split", num)
  hi, lo = _positions(shape)
  b1, b2 = threefry2x32(key[0], key[1], hi, lo)
  return np.stack([b1, b2], axis=-1).reshape(shape + (2,))


def fold_in(key, data):
  """A new key made from ``key`` and the 32-bit integer ``data``."""
  key = _check_key("fold_in", key)
  if np.ndim(data):
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                    f"{np.shape(data)}")
  d = np.array([int(data) & 0xFFFFFFFF], _u32)
  y1, y2 = threefry2x32(key[0], key[1], np.zeros(1, _u32), d)
  return np.concatenate([y1, y2])


def random_bits(key, bit_width, shape):
  """Uniform random bits of ``bit_width`` (8/16/32/64) in ``shape``."""
  hi, lo = _positions(shape)
  b1, b2 = threefry2x32(key[0], key[1], hi, lo)
  if bit_width == 64:
    out = (b1.astype(np.uint64) << np.uint64(32)) | b2.astype(np.uint64)
  else:
    out = b1 ^ b2
    if bit_width != 32:
      out = out.astype(np.dtype(f"uint{bit_width}"))
  return out.reshape(shape)


def _fma(a, b, c):
  if a.dtype == np.float32:
    return xla_cpu_math.fma32(a, b, c)
  return xla_cpu_math.fma64(a, b, c)


def _is_float(dtype):
  try:
    ml_dtypes.finfo(dtype)
  except (TypeError, ValueError):
    return False
  return not np.issubdtype(dtype, np.complexfloating)


def _finfo_bits(dtype):
  info = ml_dtypes.finfo(dtype)
  return info.bits, info.nmant


def _uniform_bits(key, shape, dtype, minval, maxval):
  nbits, nmant = _finfo_bits(dtype)
  rng_bits = 8 if nmant < 8 else nbits
  uint = np.dtype(f"uint{nbits}")
  b = random_bits(key, rng_bits, shape)
  if rng_bits != nbits:
    b = b.astype(uint)
  one_bits = np.array(1.0, dtype).view(uint)
  fbits = (b >> uint.type(rng_bits - nmant)) | one_bits
  floats = fbits.view(dtype) - np.array(1.0, dtype)
  minval = np.broadcast_to(np.asarray(minval, dtype), shape)
  maxval = np.asarray(maxval, dtype)
  span = np.asarray(maxval - minval, dtype)
  if span.ndim == 0 and span > 0 and np.frexp(span)[0] == 0.5 and dtype in (
      np.float32, np.float64):
    # A power-of-two span makes the product exact: the fused and the plain sums agree.
    scaled = floats * span + minval
  elif dtype in (np.float32, np.float64):
    scaled = _fma(floats, np.broadcast_to(span, shape), minval)
  elif xla_cpu_math.xla_fuses_half(dtype):
    scaled = xla_cpu_math.fma_half(floats, span, minval)
  else:
    scaled = (floats * span).astype(dtype) + minval
  return np.maximum(minval, scaled)


def _float_dtype(name, dtype):
  dtype = _default_float() if dtype is None else np.dtype(dtype)
  if not _is_float(dtype):
    raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
  return _canonical(dtype)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Uniform samples in ``[minval, maxval)``, the same bits as ``hlox.random.uniform``."""
  key = _check_key("uniform", key)
  dtype = _float_dtype("uniform", dtype)
  return _uniform_bits(key, _canonical_shape("uniform", shape), dtype, minval, maxval)


def _erf_inv(x):
  flat = x.reshape(-1)
  if x.dtype == np.float64:
    return xla_cpu_math.erf_inv64(flat).reshape(x.shape)
  # float32, and the narrower floats, which XLA evaluates in float32
  out = xla_cpu_math.erf_inv32(flat.astype(np.float32)).reshape(x.shape)
  return out.astype(x.dtype)


def normal(key, shape=(), dtype=None):
  """Standard normal samples ``sqrt(2) * erf_inv(u)``, ``u`` uniform on (-1, 1)."""
  key = _check_key("normal", key)
  dtype = _float_dtype("normal", dtype)
  shape = _canonical_shape("normal", shape)
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype))
  u = _uniform_bits(key, shape, dtype, lo, 1.)
  return (np.array(np.sqrt(2), dtype) * _erf_inv(u)).astype(dtype)


def bernoulli(key, p=0.5, shape=None):
  """Booleans that are True with probability ``p``."""
  key = _check_key("bernoulli", key)
  if isinstance(p, float):
    dtype = _default_float()
  else:
    dtype = np.asarray(p).dtype
    if not _is_float(dtype):
      raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    dtype = _canonical(dtype)
  p = np.asarray(p, dtype)
  shape = p.shape if shape is None else _canonical_shape("bernoulli", shape)
  return _uniform_bits(key, shape, dtype, 0., 1.) < p


def _clip_to(val, dtype):
  vi, di = np.iinfo(val.dtype), np.iinfo(dtype)
  lo, hi = max(di.min, vi.min), min(di.max, vi.max)
  return np.clip(val, np.array(lo, val.dtype), np.array(hi, val.dtype)).astype(dtype)


def randint(key, shape, minval, maxval, dtype=np.int32):
  """Integers in ``[minval, maxval)``, the same as ``hlox.random.randint``."""
  key = _check_key("randint", key)
  dtype = np.dtype(dtype)
  if not np.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  dtype = _canonical(dtype)
  shape = _canonical_shape("randint", shape)
  info = np.iinfo(dtype)
  default_int = np.dtype(np.int64 if _x64() else np.int32)
  minval, maxval = np.asarray(minval), np.asarray(maxval)
  minval = minval if np.issubdtype(minval.dtype, np.integer) else minval.astype(default_int)
  maxval = maxval if np.issubdtype(maxval.dtype, np.integer) else maxval.astype(default_int)
  minval, maxval = minval.astype(_canonical(minval.dtype)), maxval.astype(
      _canonical(maxval.dtype))
  sample = dtype
  if info.bits < 32:
    sample = np.dtype(np.int32)
    minval = np.clip(minval.astype(np.int32), int(info.min), int(info.max))
    maxval = np.clip(maxval.astype(np.int32), int(info.min), int(info.max) + 1)
  out = _randint(key, shape, minval, maxval, sample)
  return out.astype(dtype)


def _randint(key, shape, minval, maxval, dtype):
  for v in (minval, maxval):
    try:
      ok = np.broadcast_shapes(shape, v.shape) == shape
    except ValueError:
      ok = False
    if not ok:
      raise ValueError(f"randint parameter shapes must be broadcast-compatible with shape "
                       f"argument {shape}, got {v.shape}")
  dmax = _clip_to(np.array(np.iinfo(dtype).max, dtype), maxval.dtype)
  out_of_range = maxval > dmax
  minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
  nbits = np.iinfo(dtype).bits
  keys = split(key, 2)
  higher = random_bits(keys[0], nbits, shape)
  lower = random_bits(keys[1], nbits, shape)
  udt = np.dtype(f"uint{nbits}")
  with np.errstate(over="ignore"):
    span = (maxval - minval).astype(udt)
    empty = maxval <= minval
    span = np.where(empty, udt.type(1), span)
    span = np.where(out_of_range & ~empty, span + udt.type(1), span).astype(udt)
    span = np.broadcast_to(span, shape)
    # (hi * 2**nbits + lo) mod span, with 2**nbits mod span computed without overflow.
    mult = np.array(2 ** (nbits // 2), udt) % span
    mult = (mult * mult) % span
    off = ((higher % span) * mult + lower % span) % span
    return (np.broadcast_to(minval, shape) + off.astype(dtype)).astype(dtype)
