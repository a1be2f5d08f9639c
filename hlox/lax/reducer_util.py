"""The machinery every reduction is built from: axis and dtype rules, identities,
``stablehlo.reduce``/``reduce_window`` op and region builders, and the batching registrar.

Imports no primitive module: ``reduce_sum`` (in ``base``), the other reductions
(``reductions``), the cumulative and windowed ones all build on it.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.interpreters import batching, cost, xla
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo


# --- shared rules ------------------------------------------------------------------------

def _check_axes(name, operand, axes):
  axes = tuple(axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"{name}: duplicate value in 'axes' of reduction: {axes} (operand "
                     f"{operand.str_short()})")
  if any(not 0 <= a < operand.ndim for a in axes):
    raise ValueError(f"{name}: axes {axes} out of range for operand {operand.str_short()} "
                     f"(lax axes must be in [0, {operand.ndim}); jax.numpy accepts negative "
                     "axes)")
  return axes


def _reduce_shape_rule(name, operand, *, axes, **params):
  axes = frozenset(_check_axes(name, operand, axes))
  return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


def _dtype_rule(name, accepted, what):
  def rule(operand, **params):
    if not accepted(operand.dtype):
      raise TypeError(f"{name} does not accept dtype {operand.dtype.name} (operand "
                      f"{operand.str_short()}); accepted: {what}")
    return operand.dtype
  return rule


def _is_number(dtype):
  return dtypes.is_int(dtype) or dtypes.is_inexact(dtype)


def _is_bool_or_int(dtype):
  return dtype == dtypes.bool_ or dtypes.is_int(dtype)


def _any_dtype(dtype):
  return dtype == dtypes.bool_ or _is_number(dtype)


def _keep_weak(operand, **params):
  return operand.weak_type


def _strip_weak(*avals, **params):
  return False


# --- identities --------------------------------------------------------------------------

def _has_inf(dtype) -> bool:
  return dtypes.is_inexact(dtype) and bool(np.isinf(
      np.array(np.inf).astype(dtype, casting="unsafe")))


def _max_identity(dtype):
  """The smallest value of ``dtype`` (the identity of max): -inf, int min or False."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    if dtypes.is_complex(dtype):
      return np.array(-np.inf, dtype)
    return np.array(-np.inf if _has_inf(dtype) else dtypes.finfo(dtype).min, dtype)
  if dtypes.is_int(dtype):
    return np.array(dtypes.iinfo(dtype).min, dtype)
  return np.array(False)


def _min_identity(dtype):
  """The largest value of ``dtype`` (the identity of min): +inf, int max or True."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    if dtypes.is_complex(dtype):
      return np.array(np.inf, dtype)
    return np.array(np.inf if _has_inf(dtype) else dtypes.finfo(dtype).max, dtype)
  if dtypes.is_int(dtype):
    return np.array(dtypes.iinfo(dtype).max, dtype)
  return np.array(True)


def _and_identity(dtype):
  return np.array(-1).astype(dtype)  # all bits set (True for bool)


def _zero(dtype):
  return np.array(0, dtype)


def _one(dtype):
  return np.array(1, dtype)


# --- scalar ops used in regions ----------------------------------------------------------

def _compare(x, y, direction, dtype):
  return xla.compare_hlo(x, y, direction, dtype)


def _minmax_hlo(which: str, x, y):
  """``max``/``min`` of two values; complex values compare lexicographically (real, imag)
  as NumPy does, and float NaNs propagate (stablehlo.maximum/minimum do)."""
  element_type = ir.RankedTensorType(x.type).element_type
  if not isinstance(element_type, ir.ComplexType):
    return (hlo.maximum if which == "max" else hlo.minimum)(x, y)
  direction = "GT" if which == "max" else "LT"
  rx, ry = hlo.real(x), hlo.real(y)
  real_eq = _compare(rx, ry, "EQ", dtypes.float32)  # only FLOAT-ness matters here
  real_cmp = _compare(rx, ry, direction, dtypes.float32)
  imag_cmp = _compare(hlo.imag(x), hlo.imag(y), direction, dtypes.float32)
  return hlo.select(hlo.select(real_eq, imag_cmp, real_cmp), x, y)


max_hlo = functools.partial(_minmax_hlo, "max")
min_hlo = functools.partial(_minmax_hlo, "min")


def scalar_body(kind: str):
  """The scalar computation ``(x, y) -> value`` of a monoid reduction (for regions)."""
  if kind == "sum":
    return hlo.add
  if kind == "prod":
    return hlo.multiply
  if kind == "max":
    return max_hlo
  if kind == "min":
    return min_hlo
  return {"and": hlo.and_, "or": hlo.or_, "xor": hlo.xor}[kind]


def add_region(op, region_index, scalar_dtypes):
  """Append the entry block of ``op``'s region: two arguments per reduced operand."""
  types = [xla.aval_to_ir_type(ShapedArray((), d)) for d in scalar_dtypes]
  return op.regions[region_index].blocks.append(*(types + types))


def reduce_lowering(body_op, init_value):
  """Lowering via ``stablehlo.reduce`` with scalar computation ``body_op`` and init value
  ``init_value(dtype)``."""
  def rule(ctx, x, *, axes, **params):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    init = xla.ir_constant(np.asarray(init_value(aval_in.dtype), dtype=aval_in.dtype))
    op = hlo.ReduceOp([xla.aval_to_ir_type(aval_out)], [x], [init], xla.dense_i64(axes))
    block = add_region(op, 0, [aval_in.dtype])
    with ir.InsertionPoint(block):
      hlo.return_([body_op(*block.arguments)])
    return op.result
  return rule


def shift_axes_for_batch(axes, bdim):
  """``axes`` of an unbatched operand renumbered for the operand with a batch dimension at
  ``bdim``, and where that batch dimension ends up once ``axes`` are reduced away."""
  new_axes = tuple(a + (a >= bdim) for a in axes)
  return new_axes, bdim - sum(a < bdim for a in axes)


def defreducer(prim):
  """Batching for a primitive reducing its one operand over ``axes``: reduce the same axes
  of the batched operand (renumbered around the batch dimension, which stays put)."""
  def rule(vals, dims, *, axes, **params):
    (x,), (bdim,) = vals, dims
    new_axes, out_bdim = shift_axes_for_batch(axes, bdim)
    return prim.bind(x, axes=new_axes, **params), out_bdim
  batching.primitive_batchers[prim] = rule


def _reducer(name, accepted, what, weak_rule, body, identity):
  prim = standard_primitive(functools.partial(_reduce_shape_rule, name),
                            _dtype_rule(name, accepted, what), name,
                            weak_type_rule=weak_rule)
  xla.register_lowering(prim, reduce_lowering(body, identity))
  cost.register_cost(prim, cost.reduction_cost)
  return prim


def _axes_param(axes):
  if isinstance(axes, (int, np.integer)):
    axes = (axes,)
  return tuple(int(a) for a in axes)


# --- autodiff helpers --------------------------------------------------------------------

def _kept_dims(ndim, axes):
  return tuple(i for i in range(ndim) if i not in axes)


# --- regions -----------------------------------------------------------------------------

def lower_region(ctx, block, closed):
  """Lower the scalar jaxpr ``closed`` as the body of ``block`` (a reduce-like region)."""
  with ir.InsertionPoint(block):
    consts = [xla.ir_constant(np.asarray(c)) for c in closed.consts]
    outs = xla.lower_jaxpr(ctx.module_context, closed.jaxpr, consts, list(block.arguments))
    hlo.return_(outs)


def reduce_window_op(ctx, operands, inits, out_avals, *, window_dimensions, window_strides,
                      padding, base_dilation, window_dilation):
  """A ``stablehlo.reduce_window`` op and the entry block of its (still empty) region."""
  pad_attr = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(-1, 2),
                                         shape=(len(padding), 2))
  op = hlo.ReduceWindowOp([xla.aval_to_ir_type(a) for a in out_avals], list(operands),
                          list(inits), xla.dense_i64(window_dimensions),
                          window_strides=xla.dense_i64(window_strides),
                          base_dilations=xla.dense_i64(base_dilation),
                          window_dilations=xla.dense_i64(window_dilation),
                          padding=pad_attr)
  scalar_dtypes = [a.dtype for a in ctx.avals_in[:len(operands)]]
  return op, add_region(op, 0, scalar_dtypes)
