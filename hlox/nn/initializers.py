"""``hlox.nn.initializers``: functions ``init(key, shape, dtype) -> Array`` that make initial
weights (JAX's ``jax.nn.initializers``), drawing from ``hlox.random``."""
from __future__ import annotations

import math
from typing import Protocol, Sequence

import numpy as np

from hlox import numpy as jnp
from hlox import random
from hlox.core import dtypes

__all__ = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
           "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling",
           "xavier_normal", "xavier_uniform", "zeros", "Initializer", "delta_orthogonal"]


class Initializer(Protocol):
  """What every initializer here is: ``init(key, shape, dtype=None, out_sharding=None)``
  returning a new array of ``shape`` (for static type checks; no runtime behaviour)."""

  def __call__(self, key, shape, dtype=None, out_sharding=None):
    raise NotImplementedError


def _float_dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


def zeros(key, shape, dtype=None, out_sharding=None):
  """All zeros (``key`` is unused)."""
  return jnp.zeros(shape, _float_dtype(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
  """All ones (``key`` is unused)."""
  return jnp.ones(shape, _float_dtype(dtype))


def constant(value, dtype=None):
  """An initializer filling arrays with ``value``."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    return jnp.full(shape, value, dtype=_float_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=None):
  """An initializer drawing uniformly from ``[0, scale)``."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=None):
  """An initializer drawing from a normal distribution of mean 0 and ``stddev``."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
  """An initializer drawing from a standard normal truncated to ``[lower, upper]``, scaled
  by ``stddev``."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    return random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev, dtype)
  return init


def _size(shape, axes):
  if isinstance(axes, int):
    return shape[axes]
  return math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out) of a weight of ``shape``: the in/out sizes times the receptive field
  (every axis that is neither in, out nor batch)."""
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor with default in_axis. Must be at least 2D or specify "
                     "in_axis explicitly.")
  in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
  batch_size = _size(shape, batch_axis)
  receptive = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive, out_size * receptive


def _complex_uniform(key, shape, dtype):
  """Complex values uniform on the disk, of zero mean and unit variance."""
  real_dtype = np.array(0, dtype).real.dtype
  key_r, key_theta = random.split(key)
  r = jnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
  theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """Complex normal values whose modulus is truncated to ``upper``."""
  real_dtype = np.array(0, dtype).real.dtype
  key_r, key_theta = random.split(key)
  t = (1 - jnp.exp(jnp.array(-(upper ** 2), dtype))) * random.uniform(key_r, shape,
                                                                         real_dtype).astype(dtype)
  r = jnp.sqrt(-jnp.log(1 - t))
  theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None):
  """An initializer whose variance is ``scale / n``, ``n`` the fan given by ``mode``
  (``fan_in``, ``fan_out``, ``fan_avg``, ``fan_geo_avg``), drawing from ``distribution``
  (``truncated_normal``, ``normal`` or ``uniform``)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = tuple(int(d) for d in shape)
    dtype = _float_dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    if mode == "fan_in":
      denominator = fan_in
    elif mode == "fan_out":
      denominator = fan_out
    elif mode == "fan_avg":
      denominator = (fan_in + fan_out) / 2
    elif mode == "fan_geo_avg":
      denominator = (fan_in * fan_out) ** 0.5
    else:
      raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    variance = jnp.array(scale / denominator, dtype=dtype)
    real = dtypes.is_float(np.dtype(dtype))
    if distribution == "truncated_normal":
      if real:
        # 0.8796... is the standard deviation of a standard normal truncated to (-2, 2).
        stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
      # ... and 0.9531... that of a complex standard normal truncated to modulus 2.
      stddev = jnp.sqrt(variance) / jnp.array(.95311164380491208, dtype)
      return _complex_truncated_normal(key, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
      if real:
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
      return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
  return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) uniform: ``variance_scaling(1, "fan_avg", "uniform")``."""
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) normal: ``variance_scaling(1, "fan_avg", "truncated_normal")``."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun uniform: ``variance_scaling(1, "fan_in", "uniform")``."""
  return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun normal: ``variance_scaling(1, "fan_in", "truncated_normal")``."""
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) uniform: ``variance_scaling(2, "fan_in", "uniform")``."""
  return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) normal: ``variance_scaling(2, "fan_in", "truncated_normal")``."""
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis: int = -1, dtype=None):
  """An initializer of (semi-)orthogonal matrices (on ``column_axis`` against the product of
  the other axes), scaled by ``scale``."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if any(d == 0 for d in shape):
      return jnp.zeros(shape, dtype=dtype)
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    q = random.orthogonal(key, n_rows, (), dtype, n_cols)
    q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
    q = jnp.moveaxis(q, -1, column_axis)
    return jnp.array(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis: int = -1, dtype=None) -> Initializer:
  """An initializer of convolution kernels (3-, 4- or 5-D, ``fan_in <= fan_out``) that are
  zero except at the spatial centre, which holds an orthogonal ``(fan_in, fan_out)``
  matrix (the delta-orthogonal scheme of Xiao et al., 2018)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    shape = tuple(shape)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape, got "
                       f"{shape}.")
    if shape[-1] < shape[-2]:
      raise ValueError(f"`fan_in` must be less or equal than `fan_out`, got shape {shape}.")
    matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp.zeros(shape, dtype).at[centre].set(matrix)
  return init
