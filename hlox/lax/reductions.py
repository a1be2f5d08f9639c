"""Reductions over axes: reduce_sum/prod/max/min/and/or/xor, argmax/argmin."""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.interpreters import xla
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["reduce_sum", "reduce_sum_p"]


def _reduce_shape_rule(operand, *, axes, out_sharding=None):
  axes = tuple(axes)
  if any(not 0 <= a < operand.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} out of range for {operand.str_short()}")
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate reduction axes {axes}")
  return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


def _keep_dtype(operand, **params):
  return operand.dtype


def _keep_weak(operand, **params):
  return operand.weak_type


def reduce_lowering(body_op, init_value):
  """Lowering via ``stablehlo.reduce`` with scalar computation ``body_op`` and init value
  ``init_value(dtype)``."""
  def rule(ctx, x, *, axes, out_sharding=None):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    scalar_type = xla.aval_to_ir_type(ShapedArray((), aval_in.dtype))
    init = xla.ir_constant(np.asarray(init_value(aval_in.dtype), dtype=aval_in.dtype))
    op = hlo.ReduceOp([xla.aval_to_ir_type(aval_out)], [x], [init], xla.dense_i64(axes))
    block = op.regions[0].blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
      hlo.return_([body_op(*block.arguments)])
    return op.result
  return rule


reduce_sum_p = standard_primitive(_reduce_shape_rule, _keep_dtype, "reduce_sum",
                                  weak_type_rule=_keep_weak)
xla.register_lowering(reduce_sum_p, reduce_lowering(hlo.add, lambda dtype: 0))


def reduce_sum(operand, axes):
  """Sum of ``operand`` over ``axes``."""
  return reduce_sum_p.bind(operand, axes=tuple(int(a) for a in axes), out_sharding=None)
