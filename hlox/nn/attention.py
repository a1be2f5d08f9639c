"""``dot_product_attention``: scaled dot-product attention written with einsum (JAX's 'xla'
implementation of ``jax.nn.dot_product_attention``).

Shapes use JAX's letters: B batch, T query length, S key/value length, N query heads,
K key/value heads, G = N // K query heads per key/value head, H head size. Grouped-query
attention runs the core once per group member (a vmap over G), so keys and values are never
repeated. Masked logits get a large negative number (not -inf), so a fully masked row gives
a uniform average instead of NaN, as in JAX.
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import vmap
from hlox.core import dtypes
from hlox.scipy.special import logsumexp

__all__ = ["dot_product_attention"]


def _large_negative(dtype):
  big = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
  return jnp.asarray(-0.7 * big, dtype=dtype)


def _softmax(x):
  unnormalized = jnp.exp(x - lax.stop_gradient(jnp.max(x, -1, keepdims=True)))
  return unnormalized / jnp.sum(unnormalized, -1, keepdims=True)


def _combined_mask(T, S, mask, is_causal, q_seqlen, kv_seqlen, local_window_size):
  """The boolean mask (broadcastable to BNTS) of the logits that take part, or None."""
  masks = [] if mask is None else [mask]
  q_pos = jnp.arange(T)[:, None]
  k_pos = jnp.arange(S)[None, :]
  if is_causal:
    masks.append((q_pos >= k_pos)[None, None])
  if local_window_size is not None:
    left, right = local_window_size
    masks.append(jnp.logical_and(q_pos <= k_pos + left, q_pos >= k_pos - right)[None, None])
  if q_seqlen is not None:
    masks.append((jnp.arange(T)[None, :, None] < q_seqlen[:, None, None])[:, None])
  if kv_seqlen is not None:
    masks.append((jnp.arange(S)[None, None, :] < kv_seqlen[:, None, None])[:, None])
  if not masks:
    return None
  combined = masks[0]
  for m in masks[1:]:
    combined = jnp.logical_and(combined, m)
  return combined


def _attention_core(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                    local_window_size, return_residual):
  # query BTNH, key/value BSNH, bias/mask broadcastable to BNTS (one group member).
  logits_dtype = jnp.promote_types(query.dtype, np.float32)
  logits = jnp.einsum("BTNH,BSNH->BNTS", query, key, preferred_element_type=logits_dtype)
  logits = logits * jnp.array(scale, dtype=logits.dtype)
  if bias is not None:
    logits = (logits + bias).astype(logits.dtype)
  T, S = logits.shape[2], logits.shape[3]
  combined = _combined_mask(T, S, mask, is_causal, q_seqlen, kv_seqlen, local_window_size)
  if combined is not None:
    logits = jnp.where(combined, logits, _large_negative(logits.dtype))
  logits = logits.astype(np.float32)
  probs = _softmax(logits).astype(key.dtype)
  encoded = jnp.einsum("BNTS,BSNH->BTNH", probs, value)
  if q_seqlen is not None:
    # Padded query positions give zeros, not an average over the keys.
    encoded = encoded * (jnp.arange(T)[None, :] < q_seqlen[:, None])[:, :, None, None].astype(
        encoded.dtype)
  if return_residual:
    lse = jnp.transpose(logsumexp(logits, axis=-1).astype(key.dtype), (0, 2, 1))
    return encoded, lax.stop_gradient(lse)
  return encoded


def _attention_xla(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                   local_window_size, return_residual):
  B, T, N, H = query.shape
  _, S, K, _ = key.shape
  G = N // K
  query = jnp.reshape(query, (B, T, K, G, H))

  def grouped(t):
    # bias/mask of N heads (or 1) in BNTS -> B K G T S, with G the axis the vmap maps over.
    if t is None:
      return None
    tB, tN, tT, tS = t.shape
    if tN == 1:
      return jnp.broadcast_to(t[:, :, None], (tB, 1, G, tT, tS))
    return jnp.reshape(t, (tB, K, G, tT, tS))

  core = vmap(_attention_core, in_axes=(3, None, None, 2, 2, None, None, None, None, None,
                                        None), out_axes=3)
  out = core(query, key, value, grouped(bias), grouped(mask), is_causal, scale, q_seqlen,
             kv_seqlen, local_window_size, return_residual)
  if return_residual:
    encoded, lse = out
    return jnp.reshape(encoded, (B, T, N, H)), jnp.reshape(lse, (B, T, N))
  return jnp.reshape(out, (B, T, N, H))


def _check(t, shape, dtype, name):
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"dot_product_attention: {name} ndim should be {len(shape)}, but got "
                     f"{t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"dot_product_attention: {name} dtype should be {dtype}, but got "
                     f"{t.dtype}")
  for want, got in zip(shape, t.shape):
    if want != -1 and want != got:
      raise ValueError(f"dot_product_attention: {name} shape should be {tuple(shape)}: but "
                       f"got {t.shape}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
  """Scaled dot-product attention: ``softmax(Q K^T * scale + bias) V`` per head.

  Letters name the axes: B batch, T query length, S key/value length, N query heads, K
  key/value heads, H head size. ``N`` must be a multiple of ``K`` (grouped-query attention;
  ``K == 1`` is multi-query). The logits are computed in at least float32. Masked logits get a
  large negative value rather than ``-inf``, so a fully masked row averages all values
  uniformly instead of giving NaN. Shapes or dtypes that do not fit raise ValueError. Only the
  'xla' implementation (einsums) exists; ``None`` means it.

  Args:
    query: array of shape ``BTNH`` (or ``TNH`` without a batch).
    key: array of shape ``BSKH`` (or ``SKH``), of ``query``'s dtype.
    value: array of ``key``'s shape and dtype.
    bias: optional array broadcastable to ``BNTS``, added to the logits.
    mask: optional boolean array broadcastable to ``BNTS``: True where a query may attend.
    scale: multiplier of the logits (keyword-only; default ``1 / sqrt(H)``).
    is_causal: if True, each query attends only to keys at or before its position.
    query_seq_lengths: optional int32 array of shape ``(B,)``: valid query lengths.
    key_value_seq_lengths: optional int32 array of shape ``(B,)``: valid key lengths.
    local_window_size: optional ``(left, right)`` (or one int for both): each query attends
      only to keys within that many positions.
    implementation: None or ``"xla"``; anything else raises ValueError.
    return_residual: if True, also return the logsumexp of the logits.

  Returns:
    The attention output, of ``query``'s shape; with ``return_residual``, the pair of it and
    the logsumexp, of shape ``BTN`` (or ``TN``).

  Examples:
    >>> q, k = jnp.ones((2, 1, 2)), jnp.ones((3, 1, 2))
    >>> v = jnp.arange(6.).reshape(3, 1, 2)
    >>> hlox.nn.dot_product_attention(q, k, v)
    Array([[[2., 3.]],
    <BLANKLINE>
           [[2., 3.]]], dtype=float32)
    >>> hlox.nn.dot_product_attention(q, k, v, is_causal=True)
    Array([[[0., 1.]],
    <BLANKLINE>
           [[1., 2.]]], dtype=float32)
  """
  if implementation not in (None, "xla"):
    if implementation == "cudnn":
      raise ValueError("dot_product_attention: implementation='cudnn' needs cuDNN on an "
                       "NVIDIA GPU, which hlox does not use; use 'xla' or None")
    raise ValueError(f"Unsupported implementation option: {implementation}")
  output_shape = jnp.asarray(query).shape

  def as_4d(t):
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t

  query, key, value = as_4d(query), as_4d(key), as_4d(value)
  bias = None if bias is None else as_4d(bias)
  mask = None if mask is None else as_4d(mask)
  q_seqlen = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
  kv_seqlen = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)
  B, S, K, H = key.shape
  _check(value, (B, S, K, H), key.dtype, "value")
  _check(query, (B, -1, -1, H), key.dtype, "query")
  _check(mask, (-1,) * 4, np.dtype(bool), "mask")
  _check(bias, (-1,) * 4, None, "bias")
  _check(q_seqlen, (B,), np.dtype(np.int32), "query_seq_lengths")
  _check(kv_seqlen, (B,), np.dtype(np.int32), "key_value_seq_lengths")
  if query.shape[-2] % K:
    raise ValueError("dot_product_attention: the number of query heads must be a multiple "
                     f"of key/value heads, but got {query.shape[-2]} vs {K}")
  scale = 1.0 / np.sqrt(H) if scale is None else scale
  out = _attention_xla(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                       local_window_size, return_residual)
  if return_residual:
    encoded, lse = out
    return jnp.reshape(encoded, output_shape), jnp.reshape(lse, output_shape[:-1])
  return jnp.reshape(out, output_shape)
