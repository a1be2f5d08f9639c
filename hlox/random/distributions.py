"""Random distributions on threefry bits, with JAX 0.10.2's signatures and algorithms.

The samplers marked "bit-exact" in the tests reproduce JAX's numbers exactly: they consume
the same bits in the same order (same splits) and apply the same float operations.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import ConcretizationTypeError
from hlox.numpy.util import promote_dtypes_inexact
from hlox.random.prng import (PRNGKeyArray, _canonical_shape, _check_key, clone,
                              keys_random_bits, split_keys, threefry_prng_impl)
from hlox.api import jit, vmap
from hlox.interpreters import ad, batching, xla
from hlox.interpreters.key_reuse import (KeyReuseSignature, Sink, key_reuse_signatures,
                                         keyed_primitives)
from hlox.lax.utils import standard_primitive
from hlox.runtime.array import Array

__all__ = ["uniform", "normal", "truncated_normal", "bernoulli", "randint", "categorical",
           "choice", "permutation", "gumbel", "exponential", "laplace", "logistic", "cauchy",
           "rademacher", "random_gamma_p", "gamma", "loggamma", "beta", "dirichlet", "t", "chisquare",
           "lognormal", "poisson", "multivariate_normal", "orthogonal", "pareto", "weibull_min",
           "maxwell", "double_sided_maxwell", "rayleigh", "wald", "geometric", "triangular",
           "f", "generalized_normal", "ball", "binomial", "multinomial"]


# --- helpers -------------------------------------------------------------------------------

def _float_dtype(name, dtype):
  dtype = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not dtypes.is_float(dtype):
    raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
  return dtype


def _shape(x):
  return tuple(get_aval(x).shape) if isinstance(x, (Array, Tracer)) else np.shape(x)


def _check_shape(name, shape, *param_shapes):
  if param_shapes:
    try:
      if all(type(d) is int for s in (shape, *param_shapes) for d in s):
        out = np.broadcast_shapes(shape, *param_shapes)
      else:  # symbolic sizes (shape polymorphism)
        out = lax.broadcast_shapes(tuple(shape), *map(tuple, param_shapes))
    except ValueError:
      out = None
    if out != tuple(shape):
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       f"argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {out} for shape argument {shape}.")


def _as(x, dtype):
  """``x`` converted to ``dtype`` (Python and NumPy values become NumPy constants, except
  of a 64-bit dtype with x64 off, kept under 'allow', which NumPy values would not stay)."""
  if isinstance(x, (Array, Tracer)):
    return x if get_aval(x).dtype == dtype else lax.convert_element_type(x, dtype)
  value = np.asarray(x, dtype)
  if dtypes.canonicalize_dtype(dtype) != dtype:
    return lax.convert_element_type(value, dtype)
  return value


def _to_rank(x, rank):
  shape = _shape(x)
  if len(shape) == rank:
    return x
  if len(shape) > rank:
    raise ValueError(f"parameter of shape {shape} has more dimensions than the output")
  new = (1,) * (rank - len(shape)) + tuple(shape)
  return lax.reshape(x, new) if isinstance(x, (Array, Tracer)) else np.reshape(x, new)


_JITTED = {}


def _call(impl, *args, **static):
  """``impl(*args, **static)`` under one ``jit`` (static keyword parameters), as JAX jits
  each sampler: XLA then fuses the float arithmetic the same way, which bit-exactness needs
  (e.g. multiply-add contracted to FMA), and eager calls compile once per signature."""
  f = _JITTED.get(impl)
  if f is None:
    f = _JITTED[impl] = jit(impl, static_argnames=tuple(sorted(static)))
  return f(*args, **static)


# The samplers take typed keys (``PRNGKeyArray``, raw keys wrapped by ``_check_key``), so
# the implementation travels with them (static under ``jit``) and every draw and split below
# goes through it.

def _bits(keys, nbits, shape):
  return keys_random_bits(keys, nbits, shape)


def _split_data(keys, shape):
  return split_keys(keys, shape)


def _split2(keys):
  keys = split_keys(keys, (2,))
  return keys[0], keys[1]


def _uniform(data, shape, dtype, minval, maxval):
  finfo = jnp.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  minval, maxval = _as(minval, dtype), _as(maxval, dtype)
  # Concrete scalar bounds stay 0-d, so they are literals of the program (as in JAX) that
  # XLA folds (``* 1.0``, ``+ 0.0``); reshaped to [1, ..., 1] they would be constants that
  # a jit hoists into executable parameters, costing a multiply and an add per draw.
  if isinstance(minval, (Array, Tracer)) or np.ndim(minval):
    minval = _to_rank(minval, len(shape))
  if isinstance(maxval, (Array, Tracer)) or np.ndim(maxval):
    maxval = _to_rank(maxval, len(shape))
  rng_bits = 8 if nmant < 8 else nbits
  uint = np.dtype(f"uint{nbits}")
  b = _bits(data, rng_bits, shape)
  if rng_bits != nbits:
    b = lax.convert_element_type(b, uint)
  # Random mantissa under the exponent of 1.0 gives a float in [1, 2); subtract 1.
  one_bits = _as(np.array(1.0, dtype).view(uint), uint)
  fbits = lax.bitwise_or(lax.shift_right_logical(b, _as(rng_bits - nmant, uint)), one_bits)
  floats = lax.sub(lax.bitcast_convert_type(fbits, dtype), _as(1.0, dtype))
  return lax.max(minval, lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval))


# --- samplers ------------------------------------------------------------------------------

def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Sample uniform random values in ``[minval, maxval)``.

  The bits come from the key's PRNG and are mapped to floats of ``dtype``, so the values are
  those JAX gives for the same key. ``minval`` and ``maxval`` may be arrays broadcastable to
  ``shape`` (the result is differentiable in them). Like every sampler it is a pure function of
  the key: the same key gives the same values eagerly and under ``jit``, and ``vmap`` over a
  batch of keys gives one sample per key.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    minval: lower bound (inclusive), scalar or array.
    maxval: upper bound (exclusive), scalar or array.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> k = random.key(0)
    >>> random.uniform(k, (3,))
    Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)
    >>> random.uniform(k, (2,), minval=-1., maxval=1.)
    Array([0.895334  , 0.95715976], dtype=float32)
  """
  data, _ = _check_key("uniform", key)
  dtype = _float_dtype("uniform", dtype)
  shape = _canonical_shape("uniform", shape)
  return _call(_uniform_impl, data, minval, maxval, shape=shape, dtype=dtype)


def _uniform_impl(data, minval, maxval, *, shape, dtype):
  return _uniform(data, shape, dtype, minval, maxval)


def normal(key, shape=(), dtype=None):
  """Sample standard normal (mean 0, variance 1) random values.

  Computed as ``sqrt(2) * erfinv(u)`` with ``u`` uniform on (-1, 1), so the values are JAX's.
  A complex ``dtype`` gives samples whose real and imaginary parts are independent normals of
  variance 1/2.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating or complex dtype (default float32, float64 with x64); other
      dtypes raise ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> k = random.key(0)
    >>> random.normal(k, (3,))
    Array([ 1.6226422 ,  2.0252647 , -0.43359444], dtype=float32)
    >>> random.normal(k, (2,), dtype=jnp.bfloat16)
    Array([0.386719, 0.182617], dtype=bfloat16)
  """
  data, _ = _check_key("normal", key)
  if dtype is not None and dtypes.is_complex(np.dtype(dtype)):
    dtype = dtypes.check_user_dtype(dtype)
  else:
    dtype = _float_dtype("normal", dtype)
  shape = _canonical_shape("normal", shape)
  return _call(_normal_impl, data, shape=shape, dtype=dtype)


def _normal_impl(data, *, shape, dtype):
  if dtypes.is_complex(dtype):
    # Independent real and imaginary parts, each of variance 1/2 (JAX's construction).
    k_re, k_im = _split2(data)
    real = np.array(0, dtype).real.dtype
    re = lax.convert_element_type(_normal(k_re, shape, real), dtype)
    im = lax.convert_element_type(_normal(k_im, shape, real), dtype)
    z = lax.add(re, lax.mul(np.array(1j, dtype), im))
    return lax.div(z, np.array(np.sqrt(2), dtype))
  return _normal(data, shape, dtype)


def _normal(data, shape, dtype):
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype))
  u = _uniform(data, shape, dtype, lo, 1.)
  return lax.mul(_as(np.sqrt(2), dtype), lax.erf_inv(u))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
  """Sample standard normal values truncated to ``(lower, upper)``.

  Drawn by the inverse CDF, so every value lies strictly inside the bounds (up to rounding).

  Args:
    key: a PRNG key, typed or raw.
    lower: lower bound, scalar or array broadcastable to ``shape``.
    upper: upper bound, scalar or array broadcastable to ``shape``.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.truncated_normal(random.key(0), -1., 1., (3,))
    Array([ 0.8618594,  0.9412883, -0.2910484], dtype=float32)
  """
  data, _ = _check_key("truncated_normal", key)
  dtype = _float_dtype("truncated_normal", dtype)
  if shape is None:
    shape = np.broadcast_shapes(_shape(lower), _shape(upper))
  else:
    shape = _canonical_shape("truncated_normal", shape)
    _check_shape("truncated_normal", shape, _shape(lower), _shape(upper))
  return _call(_truncated_normal_impl, data, lower, upper, shape=shape, dtype=dtype)


def _truncated_normal_impl(data, lower, upper, *, shape, dtype):
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower, upper = _as(lower, dtype), _as(upper, dtype)
  a = lax.erf(lax.div(lower, sqrt2))
  b = lax.erf(lax.div(upper, sqrt2))
  out = lax.mul(sqrt2, lax.erf_inv(_uniform(data, shape, dtype, a, b)))
  # Rounding may land on the bounds: keep the samples strictly inside.
  lo = lax.nextafter(lax.stop_gradient(lower), np.full(_shape(lower), np.inf, dtype))
  hi = lax.nextafter(lax.stop_gradient(upper), np.full(_shape(upper), -np.inf, dtype))
  return jnp.clip(out, lo, hi)


def bernoulli(key, p=np.float32(0.5), shape=None, mode="low"):
  """Sample booleans that are True with probability ``p``.

  ``p`` must be floating (TypeError otherwise); the samples compare uniform values in ``p``'s
  dtype with ``p``. ``mode='high'`` draws twice as many bits for finer resolution of small
  probabilities.

  Args:
    key: a PRNG key, typed or raw.
    p: probability of True, a float or floating array broadcastable to ``shape``.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    mode: ``"low"`` (default) or ``"high"``; anything else raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    A bool array of ``shape``.

  Examples:
    >>> k = random.key(0)
    >>> random.bernoulli(k, 0.5, (4,))
    Array([False, False,  True,  True], dtype=bool)
    >>> random.bernoulli(k, jnp.array([0., 1.]))
    Array([False,  True], dtype=bool)
  """
  data, _ = _check_key("bernoulli", key)
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  if isinstance(p, float):
    dtype = dtypes.default_float_dtype()
  else:
    dtype = get_aval(p).dtype
  if not dtypes.is_float(dtype):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  dtype = dtypes.canonicalize_dtype(dtype)
  p = _as(p, dtype)
  if shape is None:
    shape = _shape(p)
  else:
    shape = _canonical_shape("bernoulli", shape)
    _check_shape("bernoulli", shape, _shape(p))
  return _call(_bernoulli_impl, data, p, shape=shape, mode=mode)


def _bernoulli_impl(data, p, *, shape, mode):
  dtype = get_aval(p).dtype
  p = _to_rank(p, len(shape))
  if mode == "high":
    u = _uniform(data, (2, *shape), dtype, 0., 1.)
    u1, u2 = u[0], u[1]
    u2 = lax.mul(u2, np.array(2.0 ** -jnp.finfo(dtype).nmant, dtype))
    return lax.lt(u2, lax.sub(p, u1))
  return lax.lt(_uniform(data, shape, dtype, 0., 1.), p)


def _clip_to(val, dtype):
  """Integer ``val`` converted to integer ``dtype``, clipping instead of wrapping."""
  vi, di = np.iinfo(get_aval(val).dtype), np.iinfo(dtype)
  lo = np.array(max(di.min, vi.min), get_aval(val).dtype)
  hi = np.array(min(di.max, vi.max), get_aval(val).dtype)
  return lax.convert_element_type(lax.clamp(lo, val, hi), dtype)


def randint(key, shape, minval, maxval, dtype=None):
  """Sample uniform random integers in ``[minval, maxval)``.

  Two draws of random bits are reduced modulo the span, which keeps the bias negligible; dtypes
  narrower than 32 bits sample in int32 and convert. Bounds outside the dtype's range are
  clipped to it. A non-integer dtype raises TypeError.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    minval: lower bound (inclusive), int or integer array broadcastable to ``shape``.
    maxval: upper bound (exclusive), likewise.
    dtype: optional integer dtype (default int32, int64 with x64).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An integer array of ``shape`` and ``dtype``.

  Examples:
    >>> random.randint(random.key(0), (4,), 0, 10)
    Array([9, 0, 2, 3], dtype=int32)
  """
  data, _ = _check_key("randint", key)
  dtype = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not (dtypes.is_int(dtype) or dtypes.is_unsigned_int(dtype)) or dtype == np.bool_:
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  shape = _canonical_shape("randint", shape)
  info = np.iinfo(dtype)
  sample_dtype = dtype
  minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
  if info.bits < 32:
    # Sample in 32 bits so that the modulo bias stays small.
    sample_dtype = np.dtype(np.int32)
    minval = jnp.clip(minval.astype(np.int32), int(info.min), int(info.max))
    maxval = jnp.clip(maxval.astype(np.int32), int(info.min), int(info.max) + 1)
  out = _call(_randint_impl, data, minval, maxval, shape=shape, dtype=sample_dtype)
  return out if out.dtype == dtype else lax.convert_element_type(out, dtype)


def _randint_impl(data, minval, maxval, *, shape, dtype):
  _check_shape("randint", shape, _shape(minval), _shape(maxval))
  if not dtypes.is_int(minval.dtype) and not dtypes.is_unsigned_int(minval.dtype):
    minval = minval.astype(dtypes.default_int_dtype())
  if not dtypes.is_int(maxval.dtype) and not dtypes.is_unsigned_int(maxval.dtype):
    maxval = maxval.astype(dtypes.default_int_dtype())
  # maxval beyond dtype's range (e.g. 256 for uint8) widens the span by one.
  dmax = _clip_to(jnp.asarray(np.array(np.iinfo(dtype).max, dtype)), maxval.dtype)
  out_of_range = lax.gt(maxval, dmax)
  minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
  minval, maxval = _to_rank(minval, len(shape)), _to_rank(maxval, len(shape))
  out_of_range = _to_rank(out_of_range, len(shape))
  nbits = np.iinfo(dtype).bits
  k1, k2 = _split2(data)
  higher, lower = _bits(k1, nbits, shape), _bits(k2, nbits, shape)
  udt = np.dtype(f"uint{nbits}")
  span = lax.convert_element_type(lax.sub(maxval, minval), udt)
  empty = lax.le(maxval, minval)
  span = lax.select(empty, lax.full_like(span, 1), span)
  span = lax.select(lax.bitwise_and(out_of_range, lax.bitwise_not(empty)),
                    lax.add(span, np.array(1, udt)), span)
  # (hi * 2**nbits + lo) mod span, with 2**nbits mod span computed without overflow.
  mult = lax.rem(np.array(2 ** (nbits // 2), udt), span)
  mult = lax.rem(lax.mul(mult, mult), span)
  off = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
  off = lax.rem(off, span)
  return lax.add(minval, lax.convert_element_type(off, dtype))


def _shuffle(data, x, axis):
  return _call(_shuffle_impl, data, x, axis=axis)


def _shuffle_impl(data, x, *, axis):
  # Sort by fresh random 32-bit keys, enough rounds that ties are unlikely (JAX's rule).
  size = math.prod(_shape(x))
  rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
  for _ in range(rounds):
    data, sub = _split2(data)
    _, x = lax.sort_key_val(_bits(sub, 32, _shape(x)), x, axis)
  return x


def permutation(key, x, axis: int = 0, independent: bool = False):
  """Randomly permute ``range(x)``, or the entries of ``x`` along an axis.

  With an integer ``x`` (which must be concrete, not traced) the result is a shuffle of
  ``arange(x)``. With an array, its slices along ``axis`` are shuffled together, or, with
  ``independent=True``, each 1-d fiber along ``axis`` is shuffled on its own.

  Args:
    key: a PRNG key, typed or raw.
    x: a non-negative int, or an array of at least one dimension.
    axis: the axis to permute along (static).
    independent: if True, permute every fiber along ``axis`` independently.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    The permuted array (``x``'s shape and dtype), or a permutation of ``arange(x)``.

  Examples:
    >>> random.permutation(random.key(0), 5)
    Array([0, 1, 4, 3, 2], dtype=int32)
    >>> random.permutation(random.key(1), jnp.array([[1, 2], [3, 4], [5, 6]])).shape
    (3, 2)
  """
  data, _ = _check_key("permutation", key)
  if not isinstance(x, (Array, Tracer)):
    x = np.asarray(x)
  ndim = len(_shape(x))
  if not ndim:
    dt = get_aval(x).dtype if isinstance(x, (Array, Tracer)) else x.dtype
    if not (dtypes.is_int(dt) or dtypes.is_unsigned_int(dt)):
      raise TypeError("x must be an integer or at least 1-dimensional")
    if isinstance(x, Tracer):
      raise ConcretizationTypeError(x, "argument x of hlox.random.permutation(): an integer "
                                    "x must be concrete")
    if axis not in (0, -1):  # an integer x stands for arange(x), which has one axis
      raise ValueError(f"permutation: axis {axis} is out of bounds for array of dimension 1")
    n = int(x)
    if n < 0:
      raise ValueError(f"permutation: x must be non-negative, got {n}")
    return _shuffle(data, jnp.arange(n), 0)
  axis = axis + ndim if axis < 0 else axis
  if not 0 <= axis < ndim:
    raise ValueError(f"permutation: axis {axis} out of bounds for {ndim}-d array")
  x = jnp.asarray(x)
  if independent or ndim == 1:
    return _shuffle(data, x, axis)
  ind = _shuffle(data, jnp.arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis)


def gumbel(key, shape=(), dtype=None, mode=None):
  """Sample standard Gumbel random values.

  Computed as ``-log(-log(u))`` with ``u`` uniform; ``mode='high'`` draws twice as many bits
  to resolve the tail near ``u = 0``.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    mode: None or ``"low"`` (default), or ``"high"``; anything else raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.gumbel(random.key(0), (3,))
    Array([ 2.9233725 ,  3.8326178 , -0.09689324], dtype=float32)
  """
  data, _ = _check_key("gumbel", key)
  dtype = _float_dtype("gumbel", dtype)
  shape = _canonical_shape("gumbel", shape)
  mode = "low" if mode is None else mode
  if mode not in ("high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _call(_gumbel_impl, data, shape=shape, dtype=dtype, mode=mode)


def _gumbel_impl(data, *, shape, dtype, mode):
  return _gumbel(data, shape, dtype, mode)


def _gumbel(data, shape, dtype, mode):
  info = jnp.finfo(dtype)
  if mode == "high":
    u = _uniform(data, (2,) + shape, dtype, 0., 1.)
    high, low = u[0], u[1]
    x = jnp.where(high >= 0.5, high,
                  high + np.array(2.0 ** -info.nmant, dtype) * low + np.array(info.tiny, dtype))
    return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
  u = _uniform(data, shape, dtype, np.array(info.tiny, dtype), 1.)
  return lax.neg(lax.log(lax.neg(lax.log(u))))


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True, mode=None):
  """Sample category indices with probabilities ``softmax(logits)`` along ``axis``.

  Uses the Gumbel-max trick: the argmax over ``axis`` of ``logits`` plus Gumbel noise.
  ``logits`` must be floating (TypeError) with at least one dimension (ValueError). Without
  replacement the noisy logits are ranked once, so the draws along the extra leading axes of
  ``shape`` are distinct.

  Args:
    key: a PRNG key, typed or raw.
    logits: floating array of unnormalized log-probabilities.
    axis: the category axis of ``logits``.
    shape: optional result shape (static): the batch shape of ``logits`` (its shape without
      ``axis``) with optional extra leading axes of draws. None: the batch shape.
    replace: if False, draw without replacement (at most as many draws as categories).
    mode: None or ``"low"`` (default), or ``"high"``, as in :func:`gumbel`.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An int32 array of ``shape`` with indices into ``axis``.

  Examples:
    >>> k = random.key(0)
    >>> random.categorical(k, jnp.log(jnp.array([0.1, 0.2, 0.7])), shape=(5,))
    Array([1, 2, 2, 1, 2], dtype=int32)
    >>> random.categorical(k, jnp.array([[0., 9.], [9., 0.]]))
    Array([1, 0], dtype=int32)
  """
  data, _ = _check_key("categorical", key)
  logits = jnp.asarray(logits)
  if not dtypes.is_float(logits.dtype):
    raise TypeError(f"categorical: logits must be floating, got {logits.dtype}")
  ndim = logits.ndim
  if ndim == 0:
    raise ValueError("categorical: logits must have at least one dimension")
  # Any integer-like axis (a NumPy integer, a concrete 0-d integer array) is accepted, as in
  # JAX; it is a static argument of the sampler, so it must become a hashable int.
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"categorical: axis {axis} out of bounds for logits of shape "
                     f"{logits.shape}")
  batch_shape = tuple(np.delete(logits.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _canonical_shape("categorical", shape)
    _check_shape("categorical", shape, batch_shape)
  mode = "low" if mode is None else mode
  prefix = shape[:len(shape) - len(batch_shape)]
  if not replace and math.prod(prefix) > logits.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({math.prod(prefix)}) cannot "
                     f"exceed number of categories ({logits.shape[axis]}).")
  return _call(_categorical_impl, data, logits, axis=axis, shape=shape,
               batch_shape=batch_shape, replace=replace, mode=mode)


def _categorical_impl(data, logits, *, axis, shape, batch_shape, replace, mode):
  ndim = logits.ndim
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    ax = axis - ndim if axis >= 0 else axis
    lshape = list(shape[len(shape) - len(batch_shape):])
    lshape.insert(ax % ndim, logits.shape[ax])
    g = _gumbel(data, (*prefix, *lshape), logits.dtype, mode)
    return jnp.argmax(lax.add(g, lax.expand_dims(logits, tuple(range(len(prefix))))),
                      axis=ax)
  logits = lax.add(logits, _gumbel(data, logits.shape, logits.dtype, mode))
  k = math.prod(prefix)
  _, idx = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
  dims = (idx.ndim - 1, *range(idx.ndim - 1))
  return lax.reshape(idx, shape, dims)


def _searchsorted_left(sorted_1d, v):
  # Count of entries < v: the left insertion point (sorted_1d is a small 1-d array).
  cmp = lax.lt(lax.expand_dims(sorted_1d, tuple(range(v.ndim))), lax.expand_dims(v, (v.ndim,)))
  return jnp.sum(cmp.astype(np.int32), axis=-1)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0, mode=None):
  """Sample entries of ``a`` (or of ``range(a)``), with or without replacement.

  With an integer ``a`` (concrete, not traced) the draws are from ``arange(a)``; with an array,
  slices along ``axis`` are drawn. ``p`` weights the draws (it need not be normalized). Drawing
  more than the population without replacement raises ValueError.

  Args:
    key: a PRNG key, typed or raw.
    a: a positive int, or an array to draw slices from.
    shape: tuple of ints (static): the shape of the draws (it must be a sequence).
    replace: if False, no entry is drawn twice.
    p: optional 1-d array of weights of length ``a`` (or ``a.shape[axis]``).
    axis: the axis of ``a`` to draw along.
    mode: None or ``"low"`` (default), or ``"high"`` (for weighted draws without replacement).

  Returns:
    For an integer ``a``, an array of ``shape``; otherwise ``a``'s shape with ``axis``
    replaced by ``shape``, of ``a``'s dtype.

  Examples:
    >>> k = random.key(0)
    >>> random.choice(k, 5, (3,), replace=False)
    Array([0, 1, 4], dtype=int32)
    >>> random.choice(k, jnp.array([10, 20, 30]), (4,), p=jnp.array([0.5, 0.5, 0.]))
    Array([10, 10, 20, 20], dtype=int32)
  """
  data, _ = _check_key("choice", key)
  if not isinstance(shape, (tuple, list)):
    raise TypeError(f"shape argument of hlox.random.choice must be a sequence, got {shape}")
  shape = _canonical_shape("choice", shape)
  arr = jnp.asarray(a)
  if arr.ndim == 0:
    if isinstance(a, Tracer):
      raise TypeError("choice: an integer a must be concrete (not traced)")
    n_inputs = int(a)
  else:
    axis = axis + arr.ndim if axis < 0 else axis
    if not 0 <= axis < arr.ndim:
      raise ValueError(f"choice: axis {axis} out of bounds for a of shape {arr.shape}")
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
      result = lax.slice_in_dim(perm, 0, n_draws, axis=0 if arr.ndim == 0 else axis)
  else:
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
      p = p.astype(dtypes.default_float_dtype())
    if p.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p.shape} and a.shape[axis] is {n_inputs}.")
    ind = _call(_choice_p_impl, data, p, shape=shape, replace=bool(replace),
                mode="low" if mode is None else mode)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:]
  return jnp.reshape(result, out_shape)


def _choice_p_impl(data, p, *, shape, replace, mode):
  if replace:
    cum = jnp.cumsum(p)
    u = _uniform(data, shape, p.dtype, 0., 1.)
    return _searchsorted_left(cum, cum[-1] * (1 - u))
  g = lax.add(_gumbel(data, p.shape, p.dtype, mode), jnp.log(p))
  return lax.top_k(g, math.prod(shape))[1]


def exponential(key, shape=(), dtype=None):
  """Sample standard exponential (rate 1) random values.

  Computed as ``-log1p(-u)`` with ``u`` uniform on [0, 1); scale the result for other rates.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.exponential(random.key(0), (3,))
    Array([2.950128  , 3.8434246 , 0.40390354], dtype=float32)
  """
  data, _ = _check_key("exponential", key)
  dtype = _float_dtype("exponential", dtype)
  shape = _canonical_shape("exponential", shape)
  return _call(_exponential_impl, data, shape=shape, dtype=dtype)


def _exponential_impl(data, *, shape, dtype):
  u = _uniform(data, shape, dtype, 0., 1.)
  return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key, shape=(), dtype=None):
  """Sample standard Laplace (location 0, scale 1) random values.

  Drawn by the inverse CDF from a uniform value on (-1, 1).

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.laplace(random.key(0), (3,))
    Array([-2.2569816 , -3.1502788 ,  0.40859544], dtype=float32)
  """
  data, _ = _check_key("laplace", key)
  dtype = _float_dtype("laplace", dtype)
  shape = _canonical_shape("laplace", shape)
  return _call(_laplace_impl, data, shape=shape, dtype=dtype)


def _laplace_impl(data, *, shape, dtype):
  u = _uniform(data, shape, dtype,
               np.array(-1. + jnp.finfo(dtype).epsneg, dtype), 1.)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
  """Sample standard logistic random values.

  Computed as ``log(u) - log1p(-u)`` with ``u`` uniform on (0, 1).

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.logistic(random.key(0), (3,))
    Array([ 2.896376 ,  3.8217716, -0.6978392], dtype=float32)
  """
  data, _ = _check_key("logistic", key)
  dtype = _float_dtype("logistic", dtype)
  shape = _canonical_shape("logistic", shape)
  return _call(_logistic_impl, data, shape=shape, dtype=dtype)


def _logistic_impl(data, *, shape, dtype):
  u = _uniform(data, shape, dtype,
               np.array(jnp.finfo(dtype).tiny, dtype), 1.)
  return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def cauchy(key, shape=(), dtype=None):
  """Sample standard Cauchy random values.

  Computed as ``tan(pi * (u - 1/2))`` with ``u`` uniform on (0, 1); heavy-tailed, with no mean.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.cauchy(random.key(0), (3,))
    Array([ 6.0274944 , 14.837895  , -0.58172226], dtype=float32)
  """
  data, _ = _check_key("cauchy", key)
  dtype = _float_dtype("cauchy", dtype)
  shape = _canonical_shape("cauchy", shape)
  return _call(_cauchy_impl, data, shape=shape, dtype=dtype)


def _cauchy_impl(data, *, shape, dtype):
  u = _uniform(data, shape, dtype,
               np.array(jnp.finfo(dtype).eps, dtype), 1.)
  return lax.tan(lax.mul(np.array(np.pi, dtype), lax.sub(u, np.array(0.5, dtype))))


def rademacher(key, shape=(), dtype=None):
  """Sample -1 or +1 with equal probability.

  Drawn from a fair ``bernoulli``; the dtype may be any numeric dtype.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional numeric dtype of the result (default int32, int64 with x64).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype`` holding -1 and 1.

  Examples:
    >>> k = random.key(0)
    >>> random.rademacher(k, (4,))
    Array([-1, -1,  1,  1], dtype=int32)
    >>> random.rademacher(k, (2,), dtype=jnp.float32)
    Array([-1., -1.], dtype=float32)
  """
  dtype = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  b = bernoulli(key, np.array(0.5, dtypes.default_float_dtype()), shape)
  b = lax.convert_element_type(b, dtype)
  return lax.sub(lax.mul(np.array(2, dtype), b), np.array(1, dtype))


def lognormal(key, sigma=np.float32(1.), shape=None, dtype=None):
  """Sample log-normal random values: ``exp(sigma * z)`` for standard normal ``z``.

  Args:
    key: a PRNG key, typed or raw.
    sigma: standard deviation of the underlying normal, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype`` of positive values.

  Examples:
    >>> random.lognormal(random.key(0), 0.5, (3,))
    Array([2.2508795, 2.752838 , 0.8050932], dtype=float32)
  """
  data, _ = _check_key("lognormal", key)
  dtype = _float_dtype("lognormal", dtype)
  if shape is None:
    shape = _shape(sigma)
  shape = _canonical_shape("lognormal", shape)
  _check_shape("lognormal", shape, _shape(sigma))
  sigma = _to_rank(_as(sigma, dtype), len(shape))
  return lax.exp(lax.mul(_normal(data, shape, dtype), sigma))


# --- gamma family --------------------------------------------------------------------------
# Marsaglia-Tsang rejection with lax.while_loop, splitting keys exactly as JAX does (one key per
# element, vmapped scalar loops), so gamma, loggamma, beta, dirichlet, chisquare and t give
# JAX's numbers. The sampler is a primitive, random_gamma_p: the rejection loop has no useful
# derivative, so (as JAX) a sample's derivative in alpha is that of the alpha-quantile it
# landed on, lax.random_gamma_grad (implicit reparameterization); the other samplers
# differentiate through it.

def _random_gamma_shape_rule(keys, a, *, log_space, impl):
  ks = impl.key_shape
  if keys.shape != a.shape + ks or keys.dtype != np.uint32:
    raise TypeError(f"random_gamma: keys must be uint32 key data of shape a.shape + {ks} = "
                    f"{a.shape + ks}, got {keys.str_short()} for a {a.str_short()}")
  return a.shape


def _random_gamma_dtype_rule(keys, a, *, log_space, impl):
  if not dtypes.issubdtype(a.dtype, np.floating):
    raise TypeError(f"random_gamma: a must be a float array, got {a.str_short()}")
  return a.dtype


# Gamma(a, 1) samples, one per element of ``a``, each from its own key (``keys[..., :]``
# holds the data of one key of ``impl`` per element); ``log`` of them when ``log_space``. A primitive as
# in JAX (``random_gamma_p``), so that vmap batches keys and parameters together and the
# derivative in ``a`` is the implicit-reparameterization rule below.
random_gamma_p = standard_primitive(_random_gamma_shape_rule, _random_gamma_dtype_rule,
                                    "random_gamma", weak_type_rule=lambda *a, **p: False)


def _random_gamma_composition(keys, a, *, log_space, impl):
  shape = _shape(a)
  n = math.prod(shape)
  keys = PRNGKeyArray(lax.reshape(keys, (n,) + impl.key_shape), impl)
  if impl is threefry_prng_impl:
    out = vmap(lambda k, a_: _gamma_one(k, a_, log_space))(keys, lax.reshape(a, (n,)))
  else:
    # As JAX: other implementations loop over the keys (under vmap, rng_bit_generator would
    # draw every element's bits from the first key).
    out = lax.map(lambda ka: _gamma_one(ka[0], ka[1], log_space), (keys, lax.reshape(a, (n,))))
  return lax.reshape(out, tuple(shape))


xla.register_lowering(random_gamma_p, xla.lower_fun(_random_gamma_composition,
                                                    multiple_results=False))


def _random_gamma_jvp(a_dot, sample, keys, a, *, log_space, impl):
  # The sample as a function of alpha at a fixed quantile u = P(alpha, x) of its
  # distribution: dx/dalpha = -(dP/dalpha) / (dP/dx) (JAX's rule).
  if not log_space:
    return lax.mul(a_dot, lax.random_gamma_grad(a, sample))
  # d log(x) = dx / x; x = exp(log x) may round to 0, then the smallest normal stands in.
  x = lax.exp(sample)
  dtype = get_aval(x).dtype
  x = lax.select(lax.eq(x, np.array(0, dtype)),
                 lax.full_like(x, np.array(jnp.finfo(dtype).tiny, dtype)), x)
  return lax.mul(a_dot, lax.div(lax.random_gamma_grad(a, x), x))


ad.defjvp2(random_gamma_p, None, _random_gamma_jvp)


def _random_gamma_batch_rule(vals, dims, *, log_space, impl):
  keys, a = vals
  key_dim, a_dim = dims
  size = get_aval(keys).shape[key_dim] if key_dim is not None else get_aval(a).shape[a_dim]
  keys = batching.bdim_at_front(keys, key_dim, size)
  a = batching.bdim_at_front(a, a_dim, size)
  return random_gamma_p.bind(keys, a, log_space=log_space, impl=impl), 0


batching.primitive_batchers[random_gamma_p] = _random_gamma_batch_rule
# For the key-reuse checker: the sampler consumes its keys (as JAX's random_gamma_p).
key_reuse_signatures[random_gamma_p] = KeyReuseSignature(Sink(0))
keyed_primitives.add(random_gamma_p)


def _gamma_one(data, alpha, log_space):
  """One Gamma(alpha, 1) sample (``log`` of it when ``log_space``) from one key, scalar alpha.

  Marsaglia-Tsang rejection in JAX's order of key splits, so the numbers match JAX's. The
  squeeze test compares against ``0.0331 * X * X`` with ``X = x * x`` as JAX does."""
  dtype = get_aval(alpha).dtype
  c0, c1 = np.array(0, dtype), np.array(1, dtype)
  c_half, c_third = np.array(0.5, dtype), np.array(1 / 3, dtype)
  squeeze = np.array(0.0331, dtype)
  boost_mask = lax.ge(alpha, c1)
  a = lax.select(boost_mask, alpha, lax.add(alpha, c1))  # boost alpha < 1 to alpha + 1
  d = lax.sub(a, c_third)
  c = lax.div(c_third, lax.sqrt(d))

  def reject(state):
    _, xx, v, u = state
    return lax.bitwise_and(
        lax.ge(u, lax.sub(c1, lax.mul(squeeze, lax.mul(xx, xx)))),
        lax.ge(lax.log(u), lax.add(lax.mul(xx, c_half),
                                   lax.mul(d, lax.add(lax.sub(c1, v), lax.log(v))))))

  def draw_positive_v(state):
    k, _, _ = state
    k, sub = _split2(k)
    x = _normal(sub, (), dtype)
    return k, x, lax.add(c1, lax.mul(x, c))

  def candidate(state):
    k = state[0]
    keys = _split_data(k, (3,))
    k, x_key, u_key = keys[0], keys[1], keys[2]
    _, x, v = lax.while_loop(lambda st: lax.le(st[2], c0), draw_positive_v,
                             (x_key, c0, np.array(-1, dtype)))
    u = _uniform(u_key, (), dtype, 0., 1.)
    return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

  k, sub = _split2(data)
  # (X, V, U) = (0, 1, 2) makes the rejection test true, so at least one candidate is drawn.
  _, _, v, _ = lax.while_loop(reject, candidate,
                              (k, c0, c1, np.array(2, dtype)))
  if log_space:
    log_u = lax.neg(lax.neg(lax.log1p(lax.neg(_uniform(sub, (), dtype, 0., 1.)))))
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, c0)), c0,
                           lax.mul(log_u, lax.div(c1, alpha)))
    return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
  u = lax.sub(c1, _uniform(sub, (), dtype, 0., 1.))
  boost = lax.select(boost_mask, c1, lax.pow(u, lax.div(c1, alpha)))
  return lax.mul(lax.mul(d, v), boost)


def _gamma_unit(data, alpha, shape, dtype, log_space=False):
  """Gamma(alpha, 1) samples of ``shape`` (alpha broadcast to shape, > 0); ``log`` of them
  when ``log_space``. Differentiable in ``alpha``."""
  alpha = lax.broadcast_in_dim(_as(alpha, dtype), shape,
                               tuple(range(len(shape) - len(_shape(alpha)), len(shape))))
  # As JAX: one key per element, split from ``data``.
  keys = _split_data(data, (math.prod(shape),)).reshape(tuple(shape))
  return random_gamma_p.bind(keys._base, alpha, log_space=log_space, impl=keys._impl)


def _param_shape(name, shape, *params):
  if shape is None:
    shapes = [_shape(p) for p in params]
    try:
      return np.broadcast_shapes(*shapes)
    except ValueError:
      raise ValueError(f"{name}: the parameters' shapes {', '.join(map(str, shapes))} are not "
                       "broadcast-compatible") from None
  shape = _canonical_shape(name, shape)
  _check_shape(name, shape, *map(_shape, params))
  return shape


def gamma(key, a, shape=None, dtype=None):
  """Sample Gamma random values of shape ``a`` and unit scale.

  Drawn by Marsaglia and Tsang's rejection method with one key per element, so the values are
  JAX's. Differentiable in ``a``: the derivative is that of the ``a``-quantile the sample
  landed on (implicit reparameterization). Divide by a rate (or multiply by a scale) for other
  scales.

  Args:
    key: a PRNG key, typed or raw.
    a: positive shape parameter, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype`` of positive values.

  Examples:
    >>> k = random.key(0)
    >>> random.gamma(k, 2., (3,))
    Array([1.5897877, 1.7599413, 1.1290071], dtype=float32)
    >>> random.gamma(k, jnp.array([0.5, 5.]))
    Array([0.8845648, 4.8216043], dtype=float32)
  """
  data, _ = _check_key("gamma", key)
  dtype = _float_dtype("gamma", dtype)
  shape = _param_shape("gamma", shape, a)
  return _call(_gamma_impl, data, a, shape=shape, dtype=dtype)


def _gamma_impl(data, a, *, shape, dtype):
  return _gamma_unit(data, a, shape, dtype)


def loggamma(key, a, shape=None, dtype=None):
  """Sample the logarithm of Gamma random values of shape ``a``.

  Computed in log space, so it stays accurate for small ``a`` where the Gamma samples
  themselves underflow to zero. Differentiable in ``a`` like :func:`gamma`.

  Args:
    key: a PRNG key, typed or raw.
    a: positive shape parameter, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.loggamma(random.key(0), 0.01, (3,))
    Array([ -11.478928,   -9.828522, -137.9457  ], dtype=float32)
  """
  data, _ = _check_key("loggamma", key)
  dtype = _float_dtype("loggamma", dtype)
  shape = _param_shape("loggamma", shape, a)
  return _call(_loggamma_impl, data, a, shape=shape, dtype=dtype)


def _loggamma_impl(data, a, *, shape, dtype):
  return _gamma_unit(data, a, shape, dtype, log_space=True)


def beta(key, a, b, shape=None, dtype=None):
  """Sample Beta(a, b) random values in [0, 1].

  Computed as ``Ga / (Ga + Gb)`` from two Gamma samples, taken in log space for accuracy with
  small parameters.

  Args:
    key: a PRNG key, typed or raw.
    a: positive first shape parameter, scalar or array.
    b: positive second shape parameter, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.beta(random.key(0), 2., 3., (3,))
    Array([0.23627362, 0.49045965, 0.68379486], dtype=float32)
  """
  data, _ = _check_key("beta", key)
  dtype = _float_dtype("beta", dtype)
  shape = _param_shape("beta", shape, a, b)
  return _call(_beta_impl, data, a, b, shape=shape, dtype=dtype)


def _beta_impl(data, a, b, *, shape, dtype):
  ka, kb = _split2(data)
  # As JAX: both gammas in log space, scaled by the larger before exponentiating.
  la = _gamma_unit(ka, a, shape, dtype, log_space=True)
  lb = _gamma_unit(kb, b, shape, dtype, log_space=True)
  m = lax.max(la, lb)
  ga, gb = lax.exp(lax.sub(la, m)), lax.exp(lax.sub(lb, m))
  return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
  """Sample Dirichlet(alpha) random vectors along the last axis.

  Each sample is a probability vector (non-negative, summing to 1) of length
  ``alpha.shape[-1]``, made from normalized log-space Gamma samples. ``alpha`` must have at
  least one dimension (ValueError).

  Args:
    key: a PRNG key, typed or raw.
    alpha: positive concentration parameters, of shape ``(..., k)``.
    shape: optional batch shape (static), broadcast-compatible with ``alpha.shape[:-1]``;
      None: ``alpha.shape[:-1]``.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of shape ``shape + (k,)`` and ``dtype``.

  Examples:
    >>> k = random.key(0)
    >>> random.dirichlet(k, jnp.array([1., 2., 3.]))
    Array([0.1422856 , 0.4048826 , 0.45283177], dtype=float32)
    >>> random.dirichlet(k, jnp.ones(3), (2,)).shape
    (2, 3)
  """
  data, _ = _check_key("dirichlet", key)
  dtype = _float_dtype("dirichlet", dtype)
  ashape = _shape(alpha)
  if len(ashape) < 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
  if shape is None:
    shape = ashape[:-1]
  shape = _canonical_shape("dirichlet", shape)
  _check_shape("dirichlet", shape, ashape[:-1])
  return _call(_dirichlet_impl, data, alpha, shape=shape + ashape[-1:], dtype=dtype)


def _dirichlet_impl(data, alpha, *, shape, dtype):
  # As JAX: log-space gammas, then a softmax over the last axis.
  lg = _gamma_unit(data, alpha, shape, dtype, log_space=True)
  e = lax.exp(lax.sub(lg, jnp.max(lg, axis=-1, keepdims=True)))
  return lax.div(e, jnp.sum(e, axis=-1, keepdims=True))


def chisquare(key, df, shape=None, dtype=None):
  """Sample chi-square random values with ``df`` degrees of freedom.

  Computed as ``2 * Gamma(df / 2)``.

  Args:
    key: a PRNG key, typed or raw.
    df: positive degrees of freedom, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.chisquare(random.key(0), 3., (3,))
    Array([2.205084 , 2.4899669, 1.4557135], dtype=float32)
  """
  data, _ = _check_key("chisquare", key)
  dtype = _float_dtype("chisquare", dtype)
  shape = _param_shape("chisquare", shape, df)
  return _call(_chisquare_impl, data, df, shape=shape, dtype=dtype)


def _chisquare_impl(data, df, *, shape, dtype):
  half = lax.div(_as(df, dtype), np.array(2, dtype))
  return lax.mul(lax.exp(_gamma_unit(data, half, shape, dtype, log_space=True)),
                 np.array(2, dtype))


def t(key, df, shape=(), dtype=None):
  """Sample Student's t random values with ``df`` degrees of freedom.

  Computed as ``z * sqrt(df / 2 / G)`` with ``z`` standard normal and ``G ~ Gamma(df / 2)``.

  Args:
    key: a PRNG key, typed or raw.
    df: positive degrees of freedom, scalar or array.
    shape: tuple of ints (static): the result's shape, broadcast-compatible with ``df``'s
      (ValueError otherwise); None: ``df``'s shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.t(random.key(0), 4., (3,))
    Array([ 0.7160013, -2.417441 , -1.414403 ], dtype=float32)
  """
  data, _ = _check_key("t", key)
  dtype = _float_dtype("t", dtype)
  shape = _param_shape("t", shape, df)
  return _call(_t_impl, data, df, shape=shape, dtype=dtype)


def _t_impl(data, df, *, shape, dtype):
  kn, kg = _split2(data)
  n = _normal(kn, shape, dtype)
  half = lax.div(_as(df, dtype), np.array(2, dtype))
  g = _gamma_unit(kg, half, shape, dtype)
  return lax.mul(n, lax.sqrt(lax.div(_to_rank(half, len(shape)), g)))


# --- poisson -------------------------------------------------------------------------------
# As JAX: lam < 10 (or NaN) uses Knuth's product of uniforms; larger lam uses Hormann's
# transformed rejection. Both loop over the whole array with one key per iteration until
# every element is done, so the numbers match JAX's.


def poisson(key, lam, shape=None, dtype=None):
  """Sample Poisson random counts with rate ``lam``.

  Knuth's product of uniforms for ``lam < 10`` and Hormann's transformed rejection above, each
  in a ``lax.while_loop``, so the values are JAX's. Only the threefry2x32 PRNG is supported
  (NotImplementedError for others); a non-integer dtype raises TypeError.

  Args:
    key: a PRNG key, typed or raw.
    lam: non-negative rate, scalar or array (computed in float32).
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional integer dtype of the counts (default int32, int64 with x64).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An integer array of ``shape`` and ``dtype``.

  Examples:
    >>> k = random.key(0)
    >>> random.poisson(k, 3., (4,))
    Array([0, 0, 4, 4], dtype=int32)
    >>> random.poisson(k, jnp.array([1., 100.]))
    Array([ 0, 95], dtype=int32)
  """
  data, _ = _check_key("poisson", key)
  if data._impl is not threefry_prng_impl:
    raise NotImplementedError("`poisson` with method='exact' is only implemented for the "
                              f"threefry2x32 RNG, not {data._impl}")
  dtype = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not dtypes.is_int(dtype) and not dtypes.is_unsigned_int(dtype):
    raise TypeError(f"dtype argument to `poisson` must be an int type, got {dtype}")
  shape = _param_shape("poisson", shape, lam)
  return _call(_poisson_impl, data, lam, shape=shape, dtype=dtype)


def _poisson_knuth(data, lam, shape, dtype, max_iters):
  f32 = np.dtype(np.float32)
  neg_lam = lax.neg(lam)

  def body(carry):
    i, k, key, log_prod = carry
    key, sub = _split2(key)
    k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, np.array(1, dtype)), k)
    u = _uniform(sub, shape, f32, 0., 1.)
    return lax.add(i, np.int32(1)), k, key, lax.add(log_prod, lax.log(u))

  def cond(carry):
    i, log_prod = carry[0], carry[3]
    return lax.bitwise_and(jnp.any(lax.gt(log_prod, neg_lam)), lax.lt(i, max_iters))

  init = (np.int32(0), lax.full(shape, 0, dtype), data, lax.full(shape, 0, f32))
  k = lax.while_loop(cond, body, init)[1]
  return lax.sub(k, np.array(1, dtype))


def _poisson_rejection(data, lam, shape, dtype, max_iters):
  f32 = np.dtype(np.float32)
  c = lambda v: np.array(v, f32)
  log_lam = lax.log(lam)
  b = lax.add(c(0.931), lax.mul(c(2.53), lax.sqrt(lam)))
  a = lax.add(c(-0.059), lax.mul(c(0.02483), b))
  inv_alpha = lax.add(c(1.1239), lax.div(c(1.1328), lax.sub(b, c(3.4))))
  v_r = lax.sub(c(0.9277), lax.div(c(3.6224), lax.sub(b, c(2))))

  def body(carry):
    i, k_out, accepted, key = carry
    keys = _split_data(key, (3,))
    key, k0, k1 = keys[0], keys[1], keys[2]
    u = lax.sub(_uniform(k0, shape, f32, 0., 1.), c(0.5))
    v = _uniform(k1, shape, f32, 0., 1.)
    us = lax.sub(c(0.5), lax.abs(u))
    k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(c(2), a), us), b), u), lam),
                          c(0.43)))
    s = lax.log(lax.div(lax.mul(v, inv_alpha), lax.add(lax.div(a, lax.mul(us, us)), b)))
    t_ = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lax.lgamma(lax.add(k, c(1))))
    accept1 = lax.bitwise_and(lax.ge(us, c(0.07)), lax.le(v, v_r))
    reject = lax.bitwise_or(lax.lt(k, c(0)),
                            lax.bitwise_and(lax.lt(us, c(0.013)), lax.gt(v, us)))
    accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), lax.le(s, t_)))
    return (lax.add(i, np.int32(1)), lax.select(accept, k, k_out),
            lax.bitwise_or(accepted, accept), key)

  def cond(carry):
    i, _, accepted, _ = carry
    return lax.bitwise_and(jnp.any(lax.bitwise_not(accepted)), lax.lt(i, max_iters))

  init = (np.int32(0), lax.full(shape, -1, f32), lax.full(shape, False, np.dtype(bool)), data)
  k = lax.while_loop(cond, body, init)[1]
  return lax.convert_element_type(k, dtype)


def _poisson_impl(data, lam, *, shape, dtype):
  f32 = np.dtype(np.float32)
  lam = lax.broadcast_in_dim(_as(lam, f32), shape,
                             tuple(range(len(shape) - len(_shape(lam)), len(shape))))
  use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, np.array(10, f32)))
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0))
  # Rejection's acceptance rate is highest for large lam; Knuth's elements use a dummy.
  lam_rej = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  # JAX bounds the loops by the output dtype's max (never reached in practice).
  max_iters = np.int32(min(np.iinfo(dtype).max, np.iinfo(np.int32).max))
  # As JAX, both algorithms draw from the one key (each element keeps one result): the
  # clone (the same values) tells the key-reuse checker that this second use is meant.
  out = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                   _poisson_rejection(clone(data), lam_rej, shape, dtype, max_iters))
  return lax.select(lax.eq(lam, np.array(0, f32)), lax.full_like(out, 0), out)


# --- multivariate normal and orthogonal (small private factorizations) ----------------------

def _cholesky(a):
  """Lower Cholesky factor of symmetric positive definite ``a[..., n, n]`` (n static, small):
  column by column, as hlox has no linalg module yet."""
  n = a.shape[-1]
  cols = []
  for j in range(n):
    col = a[..., :, j]
    for k in range(j):
      col = col - cols[k] * cols[k][..., j:j + 1]
    diag = jnp.sqrt(col[..., j:j + 1])
    mask = (np.arange(n) >= j).astype(a.dtype)
    cols.append(col / diag * mask)
  return jnp.stack(cols, axis=-1)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
  """Sample multivariate normal random vectors with mean ``mean`` and covariance ``cov``.

  Computed as ``mean + F @ z`` with standard normal ``z`` and ``F @ F.T == cov``: ``F`` is the
  Cholesky factor (default), or comes from an eigendecomposition (``'eigh'``) or SVD
  (``'svd'``), which also accept singular covariances. Shapes that do not fit raise ValueError.

  Args:
    key: a PRNG key, typed or raw.
    mean: mean vectors, of shape ``(..., n)``.
    cov: covariance matrices, of shape ``(..., n, n)``.
    shape: optional batch shape (static), broadcast-compatible with the batch shapes of
      ``mean`` and ``cov``; None: their broadcast.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    method: ``"cholesky"``, ``"eigh"`` or ``"svd"``; anything else raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of shape ``shape + (n,)`` and ``dtype``.

  Examples:
    >>> cov = jnp.array([[1., 0.5], [0.5, 1.]])
    >>> random.multivariate_normal(random.key(0), jnp.zeros(2), cov, (3,))
    Array([[ 1.6226422 ,  2.5652518 ],
           [-0.43359444, -0.28488183],
           [ 0.1760909 , -0.7538085 ]], dtype=float32)
  """
  data, _ = _check_key("multivariate_normal", key)
  if method not in ("svd", "eigh", "cholesky"):
    raise ValueError(f"multivariate_normal: method must be one of {{'svd', 'eigh', "
                     f"'cholesky'}}, got {method!r}")
  dtype = _float_dtype("multivariate_normal", dtype)
  mean, cov = jnp.asarray(mean, dtype), jnp.asarray(cov, dtype)
  if mean.ndim < 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{mean.ndim}")
  if cov.ndim < 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
  n = mean.shape[-1]
  if cov.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                     f"got cov.shape == {cov.shape}.")
  if shape is None:
    shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
  else:
    shape = _canonical_shape("multivariate_normal", shape)
    _check_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
  return _call(_mvn_impl, data, mean, cov, shape=tuple(shape), dtype=dtype, method=method)


def _mvn_impl(data, mean, cov, *, shape, dtype, method):
  n = mean.shape[-1]
  if method == "svd":
    u, s, _ = jnp.linalg.svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = jnp.linalg.eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = _cholesky(cov)
  z = _normal(data, shape + (n,), dtype)
  return mean + jnp.sum(factor * z[..., None, :], axis=-1)


def orthogonal(key, n: int, shape=(), dtype=None, m=None):
  """Sample random orthogonal (or unitary) matrices, uniformly (Haar measure).

  Made from the QR factorization of a Gaussian matrix with the signs of ``R``'s diagonal
  folded into ``Q``. With ``m != n`` the result has orthonormal columns (``n > m``) or rows
  (``n < m``). A complex ``dtype`` gives unitary matrices.

  Args:
    key: a PRNG key, typed or raw.
    n: number of rows (a static int).
    shape: tuple of ints (static): batch shape.
    dtype: optional floating or complex dtype (default float32, float64 with x64).
    m: optional number of columns (default ``n``).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of shape ``shape + (n, m)`` and ``dtype``.

  Examples:
    >>> q = random.orthogonal(random.key(0), 3)
    >>> bool(jnp.allclose(q @ q.T, jnp.eye(3), atol=1e-5))
    True
  """
  data, _ = _check_key("orthogonal", key)
  if dtype is not None and dtypes.is_complex(np.dtype(dtype)):  # unitary matrices
    dtype = dtypes.check_user_dtype(dtype)
  else:
    dtype = _float_dtype("orthogonal", dtype)
  shape = _canonical_shape("orthogonal", shape)
  n = int(n)
  m = n if m is None else int(m)
  if n < 0 or m < 0:
    raise ValueError(f"orthogonal: n and m must be non-negative, got n={n}, m={m}")
  return _call(_orthogonal_impl, data, shape=shape, dtype=dtype, n=n, m=m)


def _orthogonal_impl(data, *, shape, dtype, n, m):
  # As JAX: QR of a Gaussian matrix, Q's columns multiplied by the signs of R's diagonal
  # (so the distribution is Haar), one LAPACK factorization whatever the size.
  z = _normal_impl(data, shape=(*shape, max(n, m), min(n, m)), dtype=dtype)
  q, r = jnp.linalg.qr(z)
  d = jnp.diagonal(r, 0, -2, -1)
  q = q * lax.expand_dims(lax.div(d, abs(d).astype(d.dtype)), [-2])
  return jnp.swapaxes(q, -1, -2) if n < m else q


# --- more distributions (JAX's algorithms and order of operations, so the same numbers) ----

def _int_dtype(name, dtype):
  dtype = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
  if not (dtypes.is_int(dtype) or dtypes.is_unsigned_int(dtype)) or dtype == np.bool_:
    raise ValueError(f"dtype argument to `{name}` must be an int dtype, got {dtype}")
  return dtype


def _inexact(x):
  """``x`` in a floating dtype (integers and bools promote to the default float; a weak
  type stays weak)."""
  return promote_dtypes_inexact(x)[0]


def _check_real(name, *params):
  for x in params:
    dt = get_aval(x).dtype if isinstance(x, (Array, Tracer)) else np.result_type(x)
    if dtypes.is_complex(dt):
      raise TypeError(f"{name}: parameters must be real, got an argument of dtype {dt}")


def _bcast(x, dtype, shape):
  """``x`` converted to ``dtype`` and broadcast to ``shape``."""
  return jnp.broadcast_to(lax.convert_element_type(x, dtype), shape)


def pareto(key, b, shape=None, dtype=None):
  """Sample Pareto random values with shape ``b``, supported on [1, inf).

  Computed as ``exp(E / b)`` with ``E`` standard exponential. Complex ``b`` raises TypeError.

  Args:
    key: a PRNG key, typed or raw.
    b: positive shape parameter, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.pareto(random.key(0), 3., (3,))
    Array([2.6734667, 3.6007476, 1.1441185], dtype=float32)
  """
  data, _ = _check_key("pareto", key)
  dtype = _float_dtype("pareto", dtype)
  _check_real("pareto", b)
  shape = _param_shape("pareto", shape, b)
  return _call(_pareto_impl, data, b, shape=shape, dtype=dtype)


def _pareto_impl(data, b, *, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  return lax.exp(_exponential_impl(data, shape=shape, dtype=dtype) / b)


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Sample Weibull random values with the given scale and concentration.

  Computed by the inverse CDF as ``scale * E ** (1 / concentration)`` with ``E`` standard
  exponential. The parameters broadcast against ``shape``. Complex parameters raise TypeError.

  Args:
    key: a PRNG key, typed or raw.
    scale: positive scale, scalar or array.
    concentration: positive shape parameter, scalar or array.
    shape: tuple of ints (static): the shape of the uniform draws.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.

  Returns:
    An array of ``dtype`` of the broadcast of ``shape`` and the parameters' shapes.

  Examples:
    >>> random.weibull_min(random.key(0), 1., 2., (3,))
    Array([1.7175937 , 1.9604654 , 0.63553405], dtype=float32)
  """
  data, _ = _check_key("weibull_min", key)
  dtype = _float_dtype("weibull_min", dtype)
  _check_real("weibull_min", scale, concentration)
  shape = _canonical_shape("weibull_min", shape)
  return _call(_weibull_min_impl, data, scale, concentration, shape=shape, dtype=dtype)


def _weibull_min_impl(data, scale, concentration, *, shape, dtype):
  u = _uniform(data, shape, dtype, 0., 1.)
  return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def maxwell(key, shape=(), dtype=None):
  """Sample one-sided Maxwell random values.

  Each value is the length of a vector of three independent standard normals.

  Args:
    key: a PRNG key, typed or raw.
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.maxwell(random.key(0), (3,))
    Array([2.6310966 , 0.99103284, 0.9649306 ], dtype=float32)
  """
  data, _ = _check_key("maxwell", key)
  dtype = _float_dtype("maxwell", dtype)
  shape = _canonical_shape("maxwell", shape)
  return _call(_maxwell_impl, data, shape=shape, dtype=dtype)


def _maxwell_impl(data, *, shape, dtype):
  z = _normal(data, shape + (3,), dtype)
  return jnp.sqrt(jnp.sum(z * z, axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Sample double-sided Maxwell random values: ``loc + scale * s * M``.

  ``M`` is a one-sided Maxwell sample and ``s`` a random sign. As in JAX the result shape is
  ``shape + broadcast(loc, scale)``, with ``shape`` defaulting to the parameters' shape when
  empty. Complex parameters raise TypeError.

  Args:
    key: a PRNG key, typed or raw.
    loc: location, scalar or array.
    scale: scale, scalar or array.
    shape: tuple of ints (static): leading shape of the samples.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.

  Returns:
    An array of shape ``shape + broadcast(loc, scale)`` and ``dtype``.

  Examples:
    >>> random.double_sided_maxwell(random.key(0), 0., 1., (3,))
    Array([ 1.5457209,  1.5741276, -2.0825305], dtype=float32)
  """
  data, _ = _check_key("double_sided_maxwell", key)
  dtype = _float_dtype("double_sided_maxwell", dtype)
  _check_real("double_sided_maxwell", loc, scale)
  shape = _canonical_shape("double_sided_maxwell", shape)
  params_shape = np.broadcast_shapes(_shape(loc), _shape(scale))
  shape = (shape or params_shape) + params_shape
  return _call(_double_sided_maxwell_impl, data, loc, scale, shape=shape, dtype=dtype)


def _double_sided_maxwell_impl(data, loc, scale, *, shape, dtype):
  k_maxwell, k_sign = _split2(data)
  m = _maxwell_impl(k_maxwell, shape=shape, dtype=dtype)
  sign = rademacher(k_sign, shape, dtype)
  return sign * m * scale + loc


def rayleigh(key, scale, shape=None, dtype=None):
  """Sample Rayleigh random values: ``scale * sqrt(-2 log u)`` for uniform ``u``.

  Args:
    key: a PRNG key, typed or raw.
    scale: positive scale, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.rayleigh(random.key(0), 2., (3,))
    Array([0.65575665, 0.41620055, 2.9688284 ], dtype=float32)
  """
  data, _ = _check_key("rayleigh", key)
  dtype = _float_dtype("rayleigh", dtype)
  _check_real("rayleigh", scale)
  shape = _param_shape("rayleigh", shape, scale)
  return _call(_rayleigh_impl, data, scale, shape=shape, dtype=dtype)


def _rayleigh_impl(data, scale, *, shape, dtype):
  u = _uniform(data, shape, dtype, 0., 1.)
  scale = _bcast(scale, dtype, shape)
  return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), np.array(-2, dtype))))


def wald(key, mean, shape=None, dtype=None):
  """Sample Wald (inverse Gaussian, unit shape) random values with mean ``mean``.

  Uses the Michael-Schucany-Haas transformation of a normal and a uniform sample.

  Args:
    key: a PRNG key, typed or raw.
    mean: positive mean, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.wald(random.key(0), 1., (3,))
    Array([0.3805977 , 0.41566527, 0.48107237], dtype=float32)
  """
  data, _ = _check_key("wald", key)
  dtype = _float_dtype("wald", dtype)
  _check_real("wald", mean)
  shape = _param_shape("wald", shape, mean)
  return _call(_wald_impl, data, mean, shape=shape, dtype=dtype)


def _wald_impl(data, mean, *, shape, dtype):
  k_normal, k_uniform = _split2(data)
  mean = _bcast(mean, dtype, shape)
  v = _normal(k_normal, shape, dtype)
  z = _uniform(k_uniform, shape, dtype, 0., 1.)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  # The smaller root of the quadratic; the larger one, mean**2 / x, with probability
  # x / (mean + x).
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
  """Sample geometric random counts: the number of trials up to the first success.

  Each trial succeeds with probability ``p``; the counts start at 1. A non-integer dtype
  raises TypeError.

  Args:
    key: a PRNG key, typed or raw.
    p: success probability in (0, 1], scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional integer dtype (default int32, int64 with x64).
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An integer array of ``shape`` and ``dtype``.

  Examples:
    >>> random.geometric(random.key(0), 0.3, (4,))
    Array([1, 1, 4, 3], dtype=int32)
  """
  data, _ = _check_key("geometric", key)
  dtype = _int_dtype("geometric", dtype)
  _check_real("geometric", p)
  shape = _param_shape("geometric", shape, p)
  return _call(_geometric_impl, data, p, shape=shape, dtype=dtype)


def _geometric_impl(data, p, *, shape, dtype):
  p = _inexact(p)
  u = _uniform(data, shape, get_aval(p).dtype, 0., 1.)
  # JAX maps u = 0 to 1 (not log1p(u - 1)), which keeps its numbers; so do we.
  u = jnp.where(u == 0, 1, u)
  log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
  g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
  return g.astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
  """Sample triangular random values on ``[left, right]`` peaking at ``mode``.

  Drawn by the inverse CDF from a uniform sample. Complex parameters raise TypeError.

  Args:
    key: a PRNG key, typed or raw.
    left: lower limit, scalar or array.
    mode: the peak, ``left <= mode <= right``.
    right: upper limit.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.triangular(random.key(0), 0., 1., 3., (3,))
    Array([2.4396448, 2.6415021, 0.998436 ], dtype=float32)
  """
  data, _ = _check_key("triangular", key)
  dtype = _float_dtype("triangular", dtype)
  _check_real("triangular", left, mode, right)
  shape = _param_shape("triangular", shape, left, mode, right)
  return _call(_triangular_impl, data, left, mode, right, shape=shape, dtype=dtype)


def _triangular_impl(data, left, mode, right, *, shape, dtype):
  left, mode, right = (_bcast(v, dtype, shape) for v in (left, mode, right))
  fc = (mode - left) / (right - left)
  u = _uniform(data, shape, dtype, 0., 1.)
  below = left + lax.sqrt(u * (right - left) * (mode - left))
  above = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
  return lax.select(u < fc, below, above)


def f(key, dfnum, dfden, shape=None, dtype=None):
  """Sample F-distributed random values.

  Each value is the ratio of two independent chi-square samples, each divided by its degrees
  of freedom. Complex parameters raise TypeError.

  Args:
    key: a PRNG key, typed or raw.
    dfnum: positive degrees of freedom of the numerator, scalar or array.
    dfden: positive degrees of freedom of the denominator, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.f(random.key(0), 2., 5., (3,))
    Array([2.8760655 , 0.04095018, 0.07408794], dtype=float32)
  """
  data, _ = _check_key("f", key)
  dtype = _float_dtype("f", dtype)
  _check_real("f", dfnum, dfden)
  shape = _param_shape("f", shape, dfnum, dfden)
  return _call(_f_impl, data, dfnum, dfden, shape=shape, dtype=dtype)


def _f_impl(data, dfnum, dfden, *, shape, dtype):
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  k_den, k_num = _split2(data)
  num = lax.div(_chisquare_impl(k_num, dfnum, shape=shape, dtype=dtype), dfnum)
  den = lax.div(_chisquare_impl(k_den, dfden, shape=shape, dtype=dtype), dfden)
  return lax.div(num, den)


def generalized_normal(key, p, shape=(), dtype=None):
  """Sample generalized normal random values, of density proportional to ``exp(-|x|**p)``.

  Computed as ``s * G ** (1/p)`` with ``G ~ Gamma(1/p)`` and a random sign ``s``; ``p = 2``
  gives a normal of variance 1/2, ``p = 1`` a Laplace.

  Args:
    key: a PRNG key, typed or raw.
    p: positive shape parameter (scalar or array broadcastable to ``shape``).
    shape: tuple of ints (static): the result's shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> random.generalized_normal(random.key(0), 1., (3,))
    Array([ 0.6031933 ,  0.14317222, -1.2520036 ], dtype=float32)
  """
  data, _ = _check_key("generalized_normal", key)
  dtype = _float_dtype("generalized_normal", dtype)
  _check_real("generalized_normal", p)
  shape = _canonical_shape("generalized_normal", shape)
  return _call(_generalized_normal_impl, data, p, shape=shape, dtype=dtype)


def _generalized_normal_impl(data, p, *, shape, dtype):
  k_gamma, k_sign = _split2(data)
  g = _gamma_unit(k_gamma, 1 / p, shape, dtype)
  r = rademacher(k_sign, shape, dtype)
  return r * g ** (1 / p)


def ball(key, d: int, p=2, shape=(), dtype=None):
  """Sample points uniformly from the unit ``p``-norm ball in ``d`` dimensions.

  Uses the construction of Barthe, Guedon, Mendelson and Naor (generalized normal directions
  scaled with an exponential sample). ``d`` must be a concrete non-negative int.

  Args:
    key: a PRNG key, typed or raw.
    d: the dimension (static int).
    p: the norm's exponent (default 2).
    shape: tuple of ints (static): batch shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.
    out_sharding: optional sharding of the result (keyword-only).

  Returns:
    An array of shape ``shape + (d,)`` and ``dtype``.

  Examples:
    >>> random.ball(random.key(0), 2, shape=(2,))
    Array([[ 0.917222  ,  0.39276883],
           [ 0.0426431 , -0.90932965]], dtype=float32)
  """
  data, _ = _check_key("ball", key)
  dtype = _float_dtype("ball", dtype)
  _check_real("ball", p)
  shape = _canonical_shape("ball", shape)
  if isinstance(d, Tracer):
    raise TypeError("ball: the dimension d must be a concrete int (not traced)")
  if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
    raise TypeError(f"ball: the dimension d must be an int, got {d!r}")
  if d < 0:
    raise ValueError(f"ball: the dimension d must be non-negative, got {d}")
  return _call(_ball_impl, data, p, d=int(d), shape=shape, dtype=dtype)


def _ball_impl(data, p, *, d, shape, dtype):
  k_dirs, k_exp = _split2(data)
  g = _generalized_normal_impl(k_dirs, p, shape=(*shape, d), dtype=dtype)
  e = _exponential_impl(k_exp, shape=shape, dtype=dtype)
  return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# Binomial: as JAX (and TensorFlow), inversion by sums of geometric variables where
# n * min(p, 1-p) <= 10, Hormann's BTRS transformed rejection elsewhere, both looping over the
# whole array with fresh keys until every element is done.

def _stirling_tail_table():
  # log(k!) - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2), for k = 0..9.
  return np.array([math.lgamma(k + 1) - (k + 0.5) * math.log(k + 1) + (k + 1)
                   - 0.5 * math.log(2 * math.pi) for k in range(10)])


_STIRLING_TAIL = _stirling_tail_table()


def _stirling_approx_tail(k):
  dtype = get_aval(k).dtype
  table = jnp.asarray(_STIRLING_TAIL.astype(dtype))
  small = k <= 9
  k = lax.clamp(np.array(0, dtype), k, np.array(9, dtype))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = jnp.floor(k)
  return lax.select(small, table[jnp.asarray(k, dtype=np.int32)], approx)


def _binomial_inversion(data, count, prob, shape, dtype, max_iters):
  log1minusprob = jnp.log1p(-prob)

  def body(carry):
    i, num_geom, geom_sum, key = carry
    sub, key = _split2(key)
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = _uniform(sub, shape, get_aval(prob).dtype, 0., 1.)
    geom = jnp.ceil(jnp.log(u) / log1minusprob)
    return i + 1, num_geom_out, geom_sum + geom, key

  def cond(carry):
    i, geom_sum = carry[0], carry[2]
    return lax.bitwise_and(jnp.any(geom_sum <= count), i < max_iters)

  zeros = lax.full(shape, 0, get_aval(prob).dtype)
  k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, data))[1]
  return (k - 1).astype(dtype)


def _btrs(data, count, prob, shape, dtype, max_iters):
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)
  pdtype = get_aval(prob).dtype

  def body(carry):
    i, k_out, accepted, key = carry
    keys = _split_data(key, (3,))
    key, k0, k1 = keys[0], keys[1], keys[2]
    u = _uniform(k0, shape, pdtype, 0., 1.)
    v = _uniform(k1, shape, pdtype, 0., 1.)
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m)
          + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k)
          - _stirling_approx_tail(count - k))
    accept = accept1 | (~reject & (v <= ub))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, accepted = carry[0], carry[2]
    return lax.bitwise_and(jnp.any(~accepted), i < max_iters)

  init = (np.int32(0), lax.full(shape, -1, pdtype), lax.full(shape, False, np.dtype(bool)),
          data)
  return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
  """Sample binomial random counts: successes in ``n`` trials of probability ``p``.

  Inversion for small ``n * min(p, 1 - p)`` and Hormann's BTRS rejection otherwise, so the
  values are JAX's. The counts are returned as floats. NaN or negative ``n`` and ``p`` outside
  [0, 1] give NaN; infinite ``n`` gives inf; a non-integer ``n`` is floored.

  Args:
    key: a PRNG key, typed or raw.
    n: number of trials, scalar or array.
    p: success probability, scalar or array.
    shape: optional tuple of ints (static): the result's shape; it must be the broadcast of
      itself with the parameters' shapes (ValueError otherwise). None: the parameters'
      broadcast shape.
    dtype: optional floating dtype of the samples (default float32, float64 with x64); a
      non-floating dtype raises ValueError.

  Returns:
    A floating array of ``shape`` and ``dtype`` holding whole numbers.

  Examples:
    >>> random.binomial(random.key(0), 10., 0.5, (4,))
    Array([6., 7., 5., 6.], dtype=float32)
  """
  data, _ = _check_key("binomial", key)
  dtype = _float_dtype("binomial", dtype)
  _check_real("binomial", n, p)
  shape = _param_shape("binomial", shape, n, p)
  return _call(_binomial_impl, data, n, p, shape=shape, dtype=dtype)


def _binomial_impl(data, count, prob, *, shape, dtype):
  prob = _inexact(prob)
  pdtype = get_aval(prob).dtype
  count = jnp.broadcast_to(lax.convert_element_type(count, pdtype), shape)
  prob = jnp.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
  count_inf = jnp.isinf(count)
  q_is_nan = jnp.isnan(q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = jnp.floor(count)  # as np.random.binomial does for float counts
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  # JAX bounds the loops by the dtype's max (never reached); an int32 counter here.
  max_iters = np.int32(np.iinfo(np.int32).max)
  samples = lax.select(use_inversion,
                       _binomial_inversion(data, count_inv, q, shape, dtype, max_iters),
                       _btrs(data, count_btrs, q_btrs, shape, dtype, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(count_inf & (~invalid), jnp.full_like(samples, np.inf, dtype),
                       samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                    count.astype(dtype) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Sample multinomial counts: ``n`` draws over the categories of ``p``'s last axis.

  One binomial per category, on the draws the earlier categories left (a ``lax.scan``). The
  counts are returned as floats. ``p`` must have at least one dimension (ValueError).

  Args:
    key: a PRNG key, typed or raw.
    n: number of draws, scalar or array broadcastable to ``shape[:-1]``.
    p: category probabilities, of shape ``(..., k)``.
    shape: optional full result shape (static, keyword-only), ending with ``k``; ``p``
      broadcasts to it and ``n`` to ``shape[:-1]``. None: the broadcast of the two.
    dtype: optional floating dtype of the counts (keyword-only); a non-floating dtype raises
      ValueError.
    unroll: the unroll factor of the scan over categories (keyword-only).

  Returns:
    A floating array of counts summing to ``n`` along the last axis.

  Examples:
    >>> random.multinomial(random.key(0), 10., jnp.array([0.2, 0.3, 0.5]))
    Array([1., 1., 8.], dtype=float32)
  """
  data, _ = _check_key("multinomial", key)
  dtype = _float_dtype("multinomial", dtype)
  _check_real("multinomial", n, p)
  n, p = jnp.asarray(n), jnp.asarray(p)
  if p.ndim < 1:
    raise ValueError(f"multinomial: p must have at least one dimension (the categories), "
                     f"got shape {p.shape}")
  if shape is None:
    shape = p.shape
  shape = _canonical_shape("multinomial", shape)
  if not shape:
    raise ValueError("multinomial: shape must include the categories' axis, got ()")
  _check_shape("multinomial", shape, p.shape)
  _check_shape("multinomial", shape[:-1], n.shape)
  return _call(_multinomial_impl, data, n, p, shape=shape, dtype=dtype, unroll=unroll)


def _multinomial_impl(data, n, p, *, shape, dtype, unroll):
  n, p = promote_dtypes_inexact(n, p)
  ftype = get_aval(p).dtype
  n = jnp.broadcast_to(n, shape[:-1])
  p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
  remaining = lax.cumsum(p, 0, reverse=True)
  ratios = p / jnp.where(remaining == 0, 1, remaining)
  keys = _split_data(data, (shape[-1],))

  def step(remainder, ratio_key):
    ratio, k = ratio_key
    count = _binomial_impl(k, remainder, jnp.clip(ratio, 0, 1),
                           shape=tuple(get_aval(remainder).shape), dtype=ftype)
    return remainder - count, count

  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  return jnp.moveaxis(counts, 0, -1).astype(dtype)
