"""The hlox backend of ``hlox.fastmath`` (its default, also reachable as 'jax'): Trax's
JAX backend table, with every entry taken from hlox's public API.

``hlox.fastmath`` loads this module only when the hlox backend is first used, so programs
that stay on the NumPy backend never import XLA.
"""
from __future__ import annotations

import numpy as np

import hlox
from hlox import lax
from hlox import numpy as jnp
from hlox import random as hrandom
from hlox.fastmath import nested
from hlox.fastmath import numpy_backend

__all__ = ["HLOX_BACKEND"]


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
  """``log(sum(b * exp(a)))`` over ``axis`` without overflow (JAX's/SciPy's signature)."""
  a = jnp.asarray(a)
  if not jnp.issubdtype(a.dtype, jnp.inexact):
    a = a.astype(jnp.float32)
  if b is not None:
    a, b = jnp.broadcast_arrays(a, jnp.asarray(b))
  dims = tuple(range(a.ndim)) if axis is None else axis
  amax = jnp.max(a, axis=dims, keepdims=True)
  # The shift only guards against overflow: no gradient flows through it.
  amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
  e = jnp.exp(a - amax)
  if b is not None:
    e = e * b
  s = jnp.sum(e, axis=dims, keepdims=True)
  sign = jnp.sign(s)
  out = jnp.log(jnp.abs(s)) + amax
  if not keepdims:
    out, sign = jnp.squeeze(out, dims), jnp.squeeze(sign, dims)
  if return_sign:
    return out, sign
  if b is not None:
    out = jnp.where(sign < 0, jnp.nan, out)
  return out


def conv(inp, fltr, window_strides, padding, dimension_numbers, filter_dilation=None):
  """``lax.conv_general_dilated`` without input dilation (Trax's ``conv``)."""
  return lax.conv_general_dilated(inp, fltr, window_strides, padding, lhs_dilation=None,
                                  rhs_dilation=filter_dilation,
                                  dimension_numbers=dimension_numbers)


def _spatial_padding(padding, nspatial):
  """String padding as it is; explicit pairs for the spatial dimensions only."""
  if isinstance(padding, str):
    return padding
  pads = [tuple(p) for p in padding]
  return pads[1:-1] if len(pads) == nspatial + 2 else pads


def _pool(x, init, reducer, pool_size, strides, padding):
  pool_size = tuple(int(p) for p in pool_size)
  strides = tuple(int(s) for s in strides) if strides else (1,) * len(pool_size)
  padding = _spatial_padding(padding, len(pool_size))
  if not isinstance(padding, str):
    padding = [(0, 0)] + padding + [(0, 0)]
  return lax.reduce_window(x, init, reducer, (1,) + pool_size + (1,), (1,) + strides + (1,),
                           padding)


def max_pool(x, pool_size, strides, padding):
  """Maximum over each window of an NHWC-style array."""
  return _pool(x, -jnp.inf, lax.max, pool_size, strides, padding)


def sum_pool(x, pool_size, strides, padding):
  """Sum over each window of an NHWC-style array."""
  return _pool(x, 0., lax.add, pool_size, strides, padding)


def avg_pool(x, pool_size, strides, padding):
  """Mean over the real (unpadded) elements of each window of an NHWC-style array."""
  x = jnp.asarray(x)
  sums = _pool(x, 0., lax.add, pool_size, strides, padding)
  pool_size = tuple(int(p) for p in pool_size)
  strides = tuple(int(s) for s in strides) if strides else (1,) * len(pool_size)
  counts = lax.reduce_window(jnp.ones(x.shape[1:-1], x.dtype), 0., lax.add, pool_size,
                             strides, _spatial_padding(padding, len(pool_size)))
  return sums / counts[..., None]


def abstract_eval(f):
  """A function giving the ``ShapeDtype``s of ``f``'s outputs for arguments that are arrays
  or ``ShapeDtype``s (nothing is computed)."""
  def shape_fun(*args, **kwargs):
    def spec(x):
      if isinstance(x, nested.ShapeDtype):
        return hlox.ShapeDtypeStruct(x.shape, x.dtype)
      return x
    args = [nested.nested_map(spec, a) for a in args]
    return nested.nested_map(nested.signature, hlox.eval_shape(f, *args, **kwargs))
  return shape_fun


def randint(key, shape, minval, maxval, dtype=np.int32):
  """``hlox.random.randint`` with Trax's default dtype int32 (on every backend)."""
  return hrandom.randint(key, shape, minval=minval, maxval=maxval, dtype=dtype)


def bernoulli(key, p=0.5, shape=None):
  return hrandom.bernoulli(key, p, shape)


def custom_grad(f_vjp, f_original):
  """``f_original`` whose gradient comes from ``f_vjp(*args) -> (out, vjp_fn)``, with
  ``vjp_fn(g)`` returning one cotangent per argument."""
  f = hlox.custom_vjp(f_original)

  def fwd(*args):
    out, _ = f_vjp(*args)
    # A vjp closure is no array: keep the arguments and rebuild it in the backward pass.
    return out, args

  def bwd(args, g):
    _, vjp_fn = f_vjp(*args)
    return tuple(vjp_fn(g))
  f.defvjp(fwd, bwd)
  return f


def custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
  """Trax's custom VJP: ``f_bwd(residual, g)`` returns one cotangent per argument of ``f``
  (``None`` for none). As on Trax's JAX backend, ``nondiff_argnums`` only documents which
  arguments get ``None``; they are not handed to ``f_bwd``."""
  del nondiff_argnums
  fn = hlox.custom_vjp(f)
  fn.defvjp(f_fwd, f_bwd)
  return fn


HLOX_BACKEND = {
    "name": "hlox",
    "np": jnp,
    "abstract_eval": abstract_eval,
    "avg_pool": avg_pool,
    "cond": lax.cond,
    "conv": conv,
    "custom_vjp": custom_vjp,
    "custom_grad": custom_grad,
    "dataset_as_numpy": numpy_backend.dataset_as_numpy,
    "dynamic_slice": lax.dynamic_slice,
    "dynamic_slice_in_dim": lax.dynamic_slice_in_dim,
    "dynamic_update_slice": lax.dynamic_update_slice,
    "dynamic_update_slice_in_dim": lax.dynamic_update_slice_in_dim,
    "erf": lax.erf,
    "expit": lax.logistic,
    "fori_loop": lax.fori_loop,
    "global_device_count": hlox.device_count,
    "grad": hlox.grad,
    "value_and_grad": hlox.value_and_grad,
    "index_add": lambda x, idx, y: jnp.asarray(x).at[idx].add(y),
    "index_max": lambda x, idx, y: jnp.asarray(x).at[idx].max(y),
    "index_min": lambda x, idx, y: jnp.asarray(x).at[idx].min(y),
    "index_update": lambda x, idx, y: jnp.asarray(x).at[idx].set(y),
    "jit": hlox.jit,
    "local_device_count": hlox.local_device_count,
    "logsumexp": logsumexp,
    "lt": lax.lt,
    "map": lax.map,
    "max_pool": max_pool,
    "pmap": hlox.pmap,
    "psum": lax.psum,
    "random_bernoulli": bernoulli,
    "random_get_prng": hrandom.PRNGKey,
    "random_normal": hrandom.normal,
    "random_randint": randint,
    "random_split": hrandom.split,
    "random_fold_in": hrandom.fold_in,
    "random_uniform": hrandom.uniform,
    "remat": hlox.remat,
    "scan": lax.scan,
    "sort_key_val": lax.sort_key_val,
    "stop_gradient": lax.stop_gradient,
    "sum_pool": sum_pool,
    "top_k": lax.top_k,
    "vjp": hlox.vjp,
    "vmap": hlox.vmap,
}
