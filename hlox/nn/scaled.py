"""Block-scaled matrix products: ``scaled_matmul``, ``scaled_dot_general`` and their
configurations (JAX's ``jax.nn`` names), computed the way JAX computes them on CPU.

``scaled_matmul(a, b, a_scales, b_scales)`` multiplies each block of ``block = K // K_s``
contracting elements by its scale (in ``preferred_element_type``) and contracts the last
axes. ``scaled_dot_general`` quantizes high-precision operands block by block to the
config's data type (MXFP8: float8_e4m3fn data, power-of-two E8M0 scales rounded up), runs
``scaled_matmul`` and differentiates with a straight-through estimator (the backward products
are quantized with the third config). E8M0 scales are exact powers of two, so they are held
in float32 here (hlox does not lower the float8_e8m0fnu type); the numbers are the same.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.custom_derivatives import custom_vjp

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]


@dataclasses.dataclass
class BlockScaleConfig:
  """How one operand is block-quantized: ``mode`` ('mxfp8' or 'nvfp4'), ``block_size``
  elements per scale, the quantized ``data_type`` and ``scale_type``, an optional
  ``global_scale`` (nvfp4) and ``infer_only``."""
  mode: str
  block_size: int
  data_type: Any
  scale_type: Any
  global_scale: Any
  infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None) -> BlockScaleConfig:
  """The block-scaling quantization config of a named mode, for ``scaled_dot_general``.

  ``'mxfp8'``: blocks of 32, float8_e4m3fn data and E8M0 (float8_e8m0fnu) scales.
  ``'nvfp4'``: blocks of 16, float4_e2m1fn data, float8_e4m3fn scales and a float32 global
  scale. Other modes raise ValueError.

  Args:
    mode: ``"mxfp8"`` or ``"nvfp4"``.
    global_scale: optional float32 array of shape ``(1,)`` for ``'nvfp4'`` (default ones).

  Returns:
    A ``BlockScaleConfig`` (mode, block_size, data_type, scale_type, global_scale,
    infer_only).

  Examples:
    >>> c = hlox.nn.get_scaled_dot_general_config("mxfp8")
    >>> c.block_size, c.data_type
    (32, dtype(float8_e4m3fn))
  """
  if mode == "mxfp8":
    return BlockScaleConfig("mxfp8", 32, dtypes.float8_e4m3fn,
                            np.dtype(ml_dtypes.float8_e8m0fnu), None, False)
  if mode == "nvfp4":
    one = jnp.ones((1,), np.float32)
    return BlockScaleConfig("nvfp4", 16, np.dtype(ml_dtypes.float4_e2m1fn),
                            dtypes.float8_e4m3fn, one if global_scale is None else global_scale,
                            False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """Batched matmul of block-scaled operands: ``lhs @ rhs^T`` with per-block scales.

  Computes ``einsum('BMK,BNK->BMN', lhs * expand(lhs_scales), rhs * expand(rhs_scales))``,
  where each scale multiplies a block of ``K / K_s`` consecutive contraction elements. All
  four inputs must be 3-d with matching batch and contraction sizes, and the scales' last
  dimension must divide ``K``; otherwise ValueError.

  Args:
    lhs: array of shape ``(B, M, K)`` (typically a low-precision float type).
    rhs: array of shape ``(B, N, K)``.
    lhs_scales: array of shape ``(B, M, K_s)``.
    rhs_scales: array of shape ``(B, N, K_s)``.
    preferred_element_type: dtype of the result (default float32).

  Returns:
    An array of shape ``(B, M, N)`` and dtype ``preferred_element_type``.

  Examples:
    >>> a, b = jnp.ones((1, 2, 32)), jnp.ones((1, 3, 32))
    >>> hlox.nn.scaled_matmul(a, b, jnp.ones((1, 2, 1)), jnp.full((1, 3, 1), 2.))
    Array([[[64., 64., 64.],
            [64., 64., 64.]]], dtype=float32)
  """
  a, b, sa, sb = (jnp.asarray(t) for t in (lhs, rhs, lhs_scales, rhs_scales))
  if not all(t.ndim == 3 for t in (a, b, sa, sb)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays, got "
                     f"shapes {a.shape}, {b.shape}, {sa.shape}, {sb.shape}")
  (B, M, K), (Bb, N, Kb) = a.shape, b.shape
  if K != Kb or B != Bb:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  if sa.shape[2] != sb.shape[2] or sa.shape[0] != sb.shape[0]:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {sa.shape} and {sb.shape}")
  if sa.shape[1] != M or sb.shape[1] != N:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                     f"{sa.shape}, b_scales: {sb.shape}")
  if K % sa.shape[2]:
    raise ValueError(f"scaled_matmul: the scales' last dimension {sa.shape[2]} must divide "
                     f"K = {K}")
  out_dtype = dtypes.canonicalize_dtype(preferred_element_type)
  return _scaled_matmul(a, b, sa, sb, out_dtype)


def _scaled_matmul(a, b, sa, sb, out_dtype):
  # As JAX on CPU: everything cast to the output type first (CPU has no float8 arithmetic).
  a, b, sa, sb = (t.astype(out_dtype) for t in (a, b, sa, sb))

  def scaled(x, s):
    Bx, R, K = x.shape
    k = s.shape[2]
    return jnp.reshape(jnp.reshape(x, (Bx, R, k, K // k)) * s[..., None], (Bx, R, K))
  return lax.dot_general(scaled(a, sa), scaled(b, sb), (((2,), (2,)), ((0,), (0,))),
                         preferred_element_type=out_dtype)


# --- scaled_dot_general -------------------------------------------------------------------

def _to_3d(x, contract, batch):
  """``x`` transposed and reshaped to (batch, kept, contracting)."""
  batch_order = [d for d in range(x.ndim) if d in batch]
  contract_order = [d for d in range(x.ndim) if d in contract]
  kept = [d for d in range(x.ndim) if d not in contract and d not in batch]
  size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=int))
  t = jnp.transpose(x, batch_order + kept + contract_order)
  return jnp.reshape(t, (size(batch_order), size(kept), size(contract_order)))


def _dot_out_shape(lhs_shape, rhs_shape, lhs_dn, rhs_dn):
  (lc, lb), (rc, rb) = lhs_dn, rhs_dn
  return (tuple(lhs_shape[i] for i in range(len(lhs_shape)) if i in lb)
          + tuple(lhs_shape[i] for i in range(len(lhs_shape)) if i not in lc and i not in lb)
          + tuple(rhs_shape[i] for i in range(len(rhs_shape)) if i not in rc and i not in rb))


def _e8m0_round_up(s):
  """The power of two E8M0 stores for the (non-negative float32) scale ``s``, rounded up:
  the exponent field plus one unless the mantissa is 0 (or the value is a small denormal)."""
  bits = lax.bitcast_convert_type(s.astype(np.float32), np.uint32)
  exp = bits >> np.uint32(23)
  mant = bits & np.uint32(0x7FFFFF)
  up = jnp.logical_and(jnp.logical_and(mant > 0, exp != 0xFE),
                       ~jnp.logical_and(exp == 0, mant <= 0x400000))
  exp = jnp.where(up, exp + np.uint32(1), exp) & np.uint32(0xFF)
  return exp


def _e8m0_value(exp, dtype):
  value = lax.bitcast_convert_type(exp.astype(np.uint32) << np.uint32(23), np.float32)
  tiny = 2. ** -15 if np.dtype(dtype) == np.float16 else 2. ** -127
  return jnp.where(value == 0, jnp.array(tiny, np.float32), value).astype(dtype)


def _quantize(x, config):
  """(quantized data, scales): ``x`` (B, M, K) in blocks of the config's size along K."""
  B, M, K = x.shape
  bs = config.block_size
  if K < bs or K % bs:
    raise ValueError(f"scaled_dot_general: the contracting size {K} must be a multiple of "
                     f"the block size {bs}")
  x = jnp.reshape(x, (B, M, K // bs, bs))
  data_max = np.array(float(ml_dtypes.finfo(config.data_type).max), x.dtype)
  block_scales = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / data_max
  if config.mode == "mxfp8":
    scales = _e8m0_value(_e8m0_round_up(block_scales), x.dtype)
    scaled = x / scales
  else:
    raise ValueError(f"scaled_dot_general: mode {config.mode!r} needs the float4_e2m1fn "
                     "type, which hlox does not lower; use 'mxfp8'")
  x_q = jnp.clip(scaled, -data_max, data_max).astype(config.data_type)
  return jnp.reshape(x_q, (B, M, K)), jnp.reshape(scales, (B, M, K // bs)).astype(np.float32)


def _scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  (lc, rc), (lb, rb) = dimension_numbers
  lhs_q, lhs_s = _quantize(_to_3d(lhs, lc, lb), configs[0])
  rhs_q, rhs_s = _quantize(_to_3d(rhs, rc, rb), configs[1])
  out = _scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s, preferred_element_type)
  return jnp.reshape(out, _dot_out_shape(lhs.shape, rhs.shape, (lc, lb), (rc, rb)))


def _transpose_lhs(g, x, y, dimension_numbers, preferred_element_type, configs,
                   swap_ans=False):
  """The cotangent of ``x`` in ``dot_general(x, y)`` (or of ``y`` in ``dot_general(y, x)``
  when ``swap_ans``), computed as a scaled product of ``g`` and ``y``."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_kept = [d for d in range(x.ndim) if d not in x_contract and d not in x_batch]
  y_kept = [d for d in range(y.ndim) if d not in y_contract and d not in y_batch]
  nb = len(x_batch)
  ans_batch = list(range(nb))
  if swap_ans:
    ans_y = list(range(nb, nb + len(y_kept)))
  else:
    ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
  x_contract_by_y = list(np.take(x_contract, np.argsort(y_contract)))
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
  y_3d = _to_3d(y, y_kept, y_batch)
  g_3d = _to_3d(g, ans_y, ans_batch)
  g_q, g_s = _quantize(g_3d, configs[0])
  y_q, y_s = _quantize(y_3d, configs[1])
  out = _scaled_matmul(g_q, y_q, g_s, y_s, preferred_element_type)
  out = jnp.reshape(out, _dot_out_shape(g.shape, y.shape, (ans_y, ans_batch),
                                        (y_kept, y_batch)))
  return lax.transpose(out, tuple(int(a) for a in out_axes))


def _scaled_dot(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  return _scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs)


def _scaled_dot_fwd(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  return (_scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs),
          (lhs, rhs))


def _scaled_dot_bwd(dimension_numbers, preferred_element_type, configs, res, g):
  lhs, rhs = res
  (lc, rc), (lb, rb) = dimension_numbers
  grad_lhs = _transpose_lhs(g, lhs, rhs, dimension_numbers, preferred_element_type,
                            [configs[2], configs[1]])
  grad_rhs = _transpose_lhs(g, rhs, lhs, ((rc, lc), (rb, lb)), preferred_element_type,
                            [configs[2], configs[0]], swap_ans=True)
  return grad_lhs.astype(lhs.dtype), grad_rhs.astype(rhs.dtype)


_scaled_dot_fn = custom_vjp(_scaled_dot, nondiff_argnums=(2, 3, 4))
_scaled_dot_fn.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)


class _Configs(tuple):
  """The configs as a hashable static argument (a BlockScaleConfig is a mutable dataclass)."""

  def __hash__(self):
    return hash(tuple((c.mode, c.block_size) for c in self))

  def __eq__(self, other):
    return isinstance(other, _Configs) and len(self) == len(other) and all(
        a is b or a == b for a, b in zip(self, other))


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """``lax.dot_general`` with block-scaled quantization of both operands.

  Each operand is quantized along its contracting dimension in blocks (as the configs say),
  multiplied with :func:`scaled_matmul`, and the result laid out as ``lax.dot_general``'s:
  batch dimensions first, then the free dimensions of ``lhs``, then those of ``rhs``. Under
  ``grad`` the cotangent is quantized with the third config. With ``configs=None`` this is
  plain ``lax.dot_general``.

  Args:
    lhs: left operand.
    rhs: right operand.
    dimension_numbers: ``((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``, as in
      ``lax.dot_general``.
    preferred_element_type: result dtype: float32 (default), bfloat16 or float16 (else
      TypeError).
    configs: None, or three ``BlockScaleConfig`` (lhs, rhs, cotangent), e.g.
      ``[get_scaled_dot_general_config('mxfp8')] * 3``.
    implementation: accepted and ignored, as in JAX.

  Returns:
    The (approximate) product, of ``dot_general``'s shape and ``preferred_element_type``.

  Examples:
    >>> c = hlox.nn.get_scaled_dot_general_config("mxfp8")
    >>> x, y = jnp.arange(64.).reshape(2, 32) / 64, jnp.ones((32, 3))
    >>> hlox.nn.scaled_dot_general(x, y, (((1,), (0,)), ((), ())), configs=[c] * 3)
    Array([[ 7.75,  7.75,  7.75],
           [23.75, 23.75, 23.75]], dtype=float32)
  """
  if configs is None:
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  out_dtype = np.dtype(preferred_element_type)
  if out_dtype not in (np.dtype(np.float32), dtypes.bfloat16, np.dtype(np.float16)):
    raise TypeError("scaled_dot_general: only preferred_element_type in (f32, bf16, f16) "
                    f"is supported, but got {out_dtype}")
  (lc, rc), (lb, rb) = dimension_numbers
  lc, rc, lb, rb = (tuple(int(d) for d in t) for t in (lc, rc, lb, rb))
  squeeze = not lb
  if squeeze:  # a batch dimension of size 1 at the end of each operand, dropped afterwards
    lhs, rhs = jnp.expand_dims(lhs, lhs.ndim), jnp.expand_dims(rhs, rhs.ndim)
    lb, rb = (lhs.ndim - 1,), (rhs.ndim - 1,)
  out = _scaled_dot_fn(lhs, rhs, ((lc, rc), (lb, rb)), out_dtype, _Configs(configs))
  return jnp.squeeze(out, axis=0) if squeeze else out
