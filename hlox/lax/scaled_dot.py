"""``scaled_dot``: ``(lhs * lhs_scale) @ (rhs * rhs_scale)`` with block scales (one scale per
block of the contracting dimensions, the microscaling formats' layout).

It is a ``composite`` named ``xla.scaled_dot`` (as in JAX), so a backend with native scaled
matmuls may take it over; its decomposition repeats each scale over its block, rounds
operands and scales to bfloat16, multiplies and contracts with ``dot_general``.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import elementwise as _ew
from hlox.lax import shapes as _shapes
from hlox.lax.base import convert_element_type
from hlox.lax.compiler_hints import composite
from hlox.lax.dot import _canonicalize_dimension_numbers, dot_general

__all__ = ["scaled_dot"]


def _repeat_blocks(scale, operand_shape, contracting):
  """``scale`` with each entry repeated over its block of the contracting dimensions."""
  for d in contracting:
    shape = get_aval(scale).shape
    if shape[d] == operand_shape[d]:
      continue
    block = operand_shape[d] // shape[d]
    wide = shape[:d + 1] + (block,) + shape[d + 1:]
    dims = tuple(i for i in range(len(wide)) if i != d + 1)
    scale = _shapes.reshape(_shapes.broadcast_in_dim(scale, wide, dims),
                            shape[:d] + (shape[d] * block,) + shape[d + 1:])
  return scale


def _scaled_dot_decomposition(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                              preferred_element_type):
  (lhs_contracting, rhs_contracting), _ = dimension_numbers
  bf16 = dtypes.bfloat16
  sides = []
  for x, s, contracting in ((lhs, lhs_scale, lhs_contracting),
                            (rhs, rhs_scale, rhs_contracting)):
    s = _repeat_blocks(s, get_aval(x).shape, contracting)
    sides.append(_ew.mul(convert_element_type(x, bf16), convert_element_type(s, bf16)))
  return dot_general(sides[0], sides[1], dimension_numbers,
                     preferred_element_type=np.dtype(preferred_element_type))


_scaled_dot = composite(_scaled_dot_decomposition, "xla.scaled_dot")


def _check_scale(name, side, operand, scale, contracting):
  x, s = get_aval(operand), get_aval(scale)
  if x.ndim != s.ndim:
    raise TypeError(f"scaled_dot: {name} {s.str_short()} must have the rank of {side} "
                    f"{x.str_short()}")
  for d in range(x.ndim):
    if d in contracting:
      if s.shape[d] == 0 or x.shape[d] % s.shape[d]:
        raise ValueError(f"scaled_dot: contracting dimension {d} of {side} "
                         f"{x.str_short()} must be a multiple of that of {name} "
                         f"{s.str_short()}")
    elif s.shape[d] != x.shape[d]:
      raise ValueError(f"scaled_dot: non-contracting dimension {d} of {name} "
                       f"{s.str_short()} must match {side} {x.str_short()}")


def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """A block-scaled matrix product, as used for narrow (fp8) formats.

  Computes ``dot_general(lhs * lhs_scale, rhs * rhs_scale)`` in bfloat16 and returns it as
  ``preferred_element_type`` (default bfloat16). A scale has its operand's shape except along
  the contracting dimension, where it holds one entry per block (the operand's size there
  must be a multiple of the scale's); a missing scale is all ones. The default dimension
  numbers contract ``lhs``'s last dimension with ``rhs``'s second-to-last, batching the
  leading ones.

  Args:
    lhs: left operand.
    rhs: right operand.
    lhs_scale: keyword-only; optional per-block scales of ``lhs``.
    rhs_scale: keyword-only; optional per-block scales of ``rhs``.
    dimension_numbers: keyword-only; optional ``dot_general`` dimension numbers.
    preferred_element_type: keyword-only; the result dtype.

  Returns:
    The scaled product.

  Examples:
    >>> lax.scaled_dot(jnp.ones((1, 2, 4)), jnp.ones((1, 4, 3)), lhs_scale=jnp.full((1, 2, 2), 2.),
    ...                preferred_element_type=jnp.float32)
    Array([[[8., 8., 8.],
            [8., 8., 8.]]], dtype=float32)
  """
  lhs_aval = get_aval(lhs)
  if dimension_numbers is None:
    n = lhs_aval.ndim
    if n < 2:
      raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
    dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
  dimension_numbers = _canonicalize_dimension_numbers(dimension_numbers)
  (lhs_contracting, rhs_contracting), _ = dimension_numbers
  scales = []
  for name, side, x, s, contracting in (("lhs_scale", "lhs", lhs, lhs_scale, lhs_contracting),
                                        ("rhs_scale", "rhs", rhs, rhs_scale, rhs_contracting)):
    if s is None:
      shape = tuple(1 if d in contracting else n for d, n in enumerate(get_aval(x).shape))
      s = np.ones(shape, dtypes.bfloat16)
    _check_scale(name, side, x, s, contracting)
    scales.append(s)
  out_dtype = dtypes.bfloat16 if preferred_element_type is None else \
      dtypes.canonicalize_dtype(np.dtype(preferred_element_type))
  return _scaled_dot(lhs, rhs, *scales, dimension_numbers=dimension_numbers,
                     preferred_element_type=out_dtype.name)
