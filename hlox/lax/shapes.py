"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, pad,
concatenate, iota, slice and friends."""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import xla
from hlox.lax.utils import shape_str, standard_primitive

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["broadcast_in_dim", "broadcast", "reshape", "broadcast_in_dim_p", "reshape_p"]


def _keep_dtype(operand, **params):
  return operand.dtype


def _keep_weak(operand, **params):
  return operand.weak_type


# --- broadcast_in_dim --------------------------------------------------------------------

def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions, sharding=None):
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must have "
                    f"one entry per operand dimension, operand {operand.str_short()}")
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise ValueError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} out of "
                     f"range for result shape {shape}")
  if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
    raise ValueError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
                     "strictly increasing")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(f"broadcast_in_dim: operand {operand.str_short()} cannot be broadcast "
                      f"to shape {shape} along dimensions {broadcast_dimensions}")
  return tuple(shape)


broadcast_in_dim_p = standard_primitive(_broadcast_in_dim_shape_rule, _keep_dtype,
                                        "broadcast_in_dim", weak_type_rule=_keep_weak)

def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions, sharding=None):
  return xla.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)

xla.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
  """Broadcast ``operand`` to ``shape``; operand dim ``i`` maps to ``broadcast_dimensions[i]``."""
  shape = tuple(int(d) for d in shape)
  broadcast_dimensions = tuple(int(d) for d in broadcast_dimensions)
  aval = get_aval(operand)
  if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))) and \
      hasattr(operand, "aval"):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape,
                                 broadcast_dimensions=broadcast_dimensions, sharding=None)


def broadcast(operand, sizes):
  """Add leading dimensions ``sizes`` to ``operand``."""
  aval = get_aval(operand)
  sizes = tuple(sizes)
  dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
  return broadcast_in_dim(operand, sizes + aval.shape, dims)


# --- reshape -----------------------------------------------------------------------------

def _reshape_shape_rule(operand, *, new_sizes, dimensions, sharding=None):
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape: new_sizes must be non-negative, got {new_sizes}")
  if int(np.prod(new_sizes, dtype=np.int64)) != operand.size:
    raise TypeError(f"reshape: cannot reshape {operand.str_short()} (size {operand.size}) "
                    f"to shape {new_sizes}")
  if dimensions is not None:
    raise NotImplementedError("reshape with dimensions: transpose first")
  return tuple(new_sizes)


reshape_p = standard_primitive(_reshape_shape_rule, _keep_dtype, "reshape",
                               weak_type_rule=_keep_weak)

def _reshape_lowering(ctx, x, *, new_sizes, dimensions, sharding=None):
  return hlo.reshape(xla.aval_to_ir_type(ctx.avals_out[0]), x)

xla.register_lowering(reshape_p, _reshape_lowering)


def reshape(operand, new_sizes, dimensions=None, out_sharding=None):
  """Reshape ``operand`` to ``new_sizes`` (row-major); ``dimensions`` permutes first."""
  new_sizes = tuple(int(d) for d in new_sizes)
  if dimensions is not None:
    from hlox.lax import transpose
    operand = transpose(operand, dimensions)
  aval = get_aval(operand)
  if aval.shape == new_sizes and hasattr(operand, "aval"):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None, sharding=None)
