"""Windowed reductions: reduce_window (sum/max/min and generic) and the cumulative reductions
cumsum, cumprod, cummax, cummin, cumlogsumexp.

Everything here lowers to ``stablehlo.reduce_window``. A cumulative reduction along an axis
of length n is a window of length n over that axis padded with n-1 identities in front (or
behind, for ``reverse``); XLA rewrites such windows into efficient scans.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox import tree_util
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import xla
from hlox.lax import reductions as _red
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "reduce_window",
           "padtype_to_pads",
           "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p",
           "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p",
           "reduce_window_p"]


# --- window geometry ---------------------------------------------------------------------

def _check_window(name, operand, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
  n = operand.ndim
  for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                  ("padding", padding), ("base_dilation", base_dilation),
                  ("window_dilation", window_dilation)):
    if len(v) != n:
      raise TypeError(f"{name}: {what} {tuple(v)} must have one entry per dimension of the "
                      f"operand {operand.str_short()}")
  for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                  ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
    if any(d < 1 for d in v):
      raise ValueError(f"{name}: {what} must be positive, got {tuple(v)} for operand "
                       f"{operand.str_short()}")
  if any(len(p) != 2 for p in padding):
    raise ValueError(f"{name}: padding must be (low, high) pairs, got {padding}")


def _dilate(d, dilation):
  return 0 if d == 0 else 1 + dilation * (d - 1)


def reduce_window_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
  out = []
  for d, w, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides, padding,
                                        base_dilation, window_dilation):
    padded = _dilate(d, bd) + lo + hi
    window = _dilate(w, wd)
    out.append(max(0, (padded - window) // s + 1) if padded >= window else 0)
  return tuple(out)


def _window_shape_rule(name, operand, *, window_dimensions, window_strides, padding,
                       base_dilation, window_dilation):
  _check_window(name, operand, window_dimensions, window_strides, padding, base_dilation,
                window_dilation)
  return reduce_window_shape(operand.shape, window_dimensions, window_strides, padding,
                             base_dilation, window_dilation)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """``'VALID'``, ``'SAME'`` or ``'SAME_LOWER'`` as explicit (low, high) pads per dimension.

  SAME pads so that the output has ``ceil(in / stride)`` elements, putting an odd extra pad
  element at the end (SAME) or at the start (SAME_LOWER)."""
  if not isinstance(padding, str):
    return [tuple(int(v) for v in p) for p in padding]
  mode = padding.upper()
  if mode == "VALID":
    return [(0, 0)] * len(in_shape)
  if mode not in ("SAME", "SAME_LOWER"):
    raise ValueError(f"unknown padding {padding!r}: expected 'VALID', 'SAME', 'SAME_LOWER' "
                     "or a sequence of (low, high) pairs")
  pads = []
  for d, w, s in zip(in_shape, window_shape, window_strides):
    out = -(-d // s)
    total = max(0, (out - 1) * s + w - d)
    small, large = total // 2, total - total // 2
    pads.append((small, large) if mode == "SAME" else (large, small))
  return pads


def _reduce_window_op(ctx, operands, inits, out_avals, *, window_dimensions, window_strides,
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
  return op, _red.add_region(op, 0, scalar_dtypes)


# --- reduce_window_{sum,max,min} ---------------------------------------------------------

def _monoid_window_lowering(kind, identity):
  body = _red.scalar_body(kind)

  def rule(ctx, x, **params):
    dtype = ctx.avals_in[0].dtype
    init = xla.ir_constant(np.asarray(identity(dtype), dtype=dtype))
    op, block = _reduce_window_op(ctx, [x], [init], ctx.avals_out, **params)
    with ir.InsertionPoint(block):
      hlo.return_([body(*block.arguments)])
    return op.result
  return rule


def _window_dtype_rule(name, accepted, what):
  def rule(operand, **params):
    if not accepted(operand.dtype):
      raise TypeError(f"{name} does not accept dtype {operand.dtype.name} (operand "
                      f"{operand.str_short()}); accepted: {what}")
    return operand.dtype
  return rule


def _window_primitive(name, kind, identity, accepted, what):
  prim = standard_primitive(functools.partial(_window_shape_rule, name),
                            _window_dtype_rule(name, accepted, what), name)
  xla.register_lowering(prim, _monoid_window_lowering(kind, identity))
  return prim


reduce_window_sum_p = _window_primitive("reduce_window_sum", "sum", _red._zero,
                                        _red._is_number, "integer, floating or complex types")
reduce_window_max_p = _window_primitive("reduce_window_max", "max", _red._max_identity,
                                        _red._any_dtype, "bool or numeric types")
reduce_window_min_p = _window_primitive("reduce_window_min", "min", _red._min_identity,
                                        _red._any_dtype, "bool or numeric types")


# --- generic reduce_window ---------------------------------------------------------------

def _generic_window_abstract_eval(*avals, jaxpr, window_dimensions, window_strides, padding,
                                  base_dilation, window_dilation):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if len({a.shape for a in operands}) != 1:
    raise ValueError(f"reduce_window: operands must all have the same shape, got "
                     f"{', '.join(a.str_short() for a in operands)}")
  for op, init in zip(operands, inits):
    if init.shape != () or init.dtype != op.dtype:
      raise TypeError(f"reduce_window: initial values must be scalars of the operands' "
                      f"dtypes, got operands {', '.join(a.str_short() for a in operands)} "
                      f"and initial values {', '.join(a.str_short() for a in inits)}")
  shape = _window_shape_rule("reduce_window", operands[0],
                             window_dimensions=window_dimensions,
                             window_strides=window_strides, padding=padding,
                             base_dilation=base_dilation, window_dilation=window_dilation)
  return [ShapedArray(shape, op.dtype, op.weak_type and init.weak_type)
          for op, init in zip(operands, inits)]


reduce_window_p = Primitive("reduce_window")
reduce_window_p.multiple_results = True
reduce_window_p.def_impl(functools.partial(xla.apply_primitive, reduce_window_p))
reduce_window_p.def_abstract_eval(_generic_window_abstract_eval)


def _generic_window_lowering(ctx, *values, jaxpr, **params):
  n = len(values) // 2
  op, block = _reduce_window_op(ctx, values[:n], values[n:], ctx.avals_out, **params)
  _red.lower_region(ctx, block, jaxpr)
  return list(op.results)

xla.register_lowering(reduce_window_p, _generic_window_lowering)


def _window_monoid(computation, init, dtype):
  kind = _red.get_monoid(computation, init, dtype)
  return {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
          "min": reduce_window_min_p}.get(kind)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduce each window of ``operand`` (an array or a tree of equally shaped arrays) with
  ``computation`` on scalars, starting from ``init_value``.

  ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or (low, high) pairs; the padded
  elements hold ``init_value``. ``lax.add``/``lax.max``/``lax.min`` with their identities
  use dedicated primitives.
  """
  flat_operands, treedef = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if treedef != init_tree:
    raise ValueError(f"reduce_window: operand and init_value must have the same structure, "
                     f"got {treedef} and {init_tree}")
  if not flat_operands:
    raise ValueError("reduce_window: at least one operand is required")
  flat_inits = _red.init_values_like("reduce_window", flat_operands, flat_inits)
  aval = get_aval(flat_operands[0])
  window_dimensions = tuple(int(d) for d in window_dimensions)
  ndim = len(window_dimensions)
  window_strides = (1,) * ndim if window_strides is None else \
      tuple(int(s) for s in window_strides)
  base_dilation = (1,) * ndim if base_dilation is None else tuple(int(d) for d in base_dilation)
  window_dilation = (1,) * ndim if window_dilation is None else \
      tuple(int(d) for d in window_dilation)
  if isinstance(padding, str):
    if len(aval.shape) != ndim or len(window_strides) != ndim:
      raise TypeError(f"reduce_window: window_dimensions {window_dimensions} and "
                      f"window_strides {window_strides} must have one entry per dimension "
                      f"of the operand {aval.str_short()}")
    padding = padtype_to_pads([_dilate(d, b) for d, b in zip(aval.shape, base_dilation)],
                              [_dilate(w, d) for w, d in zip(window_dimensions,
                                                             window_dilation)],
                              window_strides, padding)
  padding = tuple(tuple(int(v) for v in p) for p in padding)
  params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
  if len(flat_operands) == 1:
    prim = _window_monoid(computation, flat_inits[0], aval.dtype)
    if prim is not None:
      return tree_util.tree_unflatten(treedef, [prim.bind(flat_operands[0], **params)])
  init_avals = tuple(ShapedArray((), get_aval(v).dtype) for v in flat_inits)
  jaxpr = _red.computation_jaxpr("reduce_window", computation, init_avals, treedef)
  out = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **params)
  return tree_util.tree_unflatten(treedef, out)


# --- cumulative reductions ---------------------------------------------------------------

def _cumred_shape_rule(name, operand, *, axis, reverse):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"{name}: axis {axis} is out of range for operand {operand.str_short()} "
                     f"(lax axes must be in [0, {operand.ndim}))")
  return operand.shape


def _logaddexp_hlo(x, y):
  """``log(exp(x) + exp(y))`` without overflow: max + log1p(exp(-|x - y|)). When x - y is
  NaN because both are the same infinity, x + y is the answer (and NaN inputs stay NaN)."""
  amax = hlo.maximum(x, y)
  delta = hlo.subtract(x, y)
  delta_nan = hlo.compare(delta, delta, hlo.ComparisonDirectionAttr.get("NE"),
                          compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
  stable = hlo.add(amax, hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta)))))
  return hlo.select(delta_nan, hlo.add(x, y), stable)


def _cumred_lowering(body, identity):
  def rule(ctx, x, *, axis, reverse):
    aval = ctx.avals_in[0]
    n = aval.shape[axis]
    if n == 0:
      return x
    ndim = aval.ndim
    window = [1] * ndim
    window[axis] = n
    padding = [(0, 0)] * ndim
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    init = xla.ir_constant(np.asarray(identity(aval.dtype), dtype=aval.dtype))
    op, block = _reduce_window_op(ctx, [x], [init], ctx.avals_out, window_dimensions=window,
                                  window_strides=[1] * ndim, padding=padding,
                                  base_dilation=[1] * ndim, window_dilation=[1] * ndim)
    with ir.InsertionPoint(block):
      hlo.return_([body(*block.arguments)])
    return op.result
  return rule


def _neg_inf(dtype):
  return _red._max_identity(dtype)


def _cumulative(name, body, identity, accepted, what):
  prim = standard_primitive(functools.partial(_cumred_shape_rule, name),
                            _window_dtype_rule(name, accepted, what), name)
  xla.register_lowering(prim, _cumred_lowering(body, identity))
  return prim


cumsum_p = _cumulative("cumsum", hlo.add, _red._zero, _red._is_number,
                       "integer, floating or complex types")
cumprod_p = _cumulative("cumprod", hlo.multiply, _red._one, _red._is_number,
                        "integer, floating or complex types")
cummax_p = _cumulative("cummax", _red.max_hlo, _red._max_identity, _red._is_number,
                       "integer, floating or complex types")
cummin_p = _cumulative("cummin", _red.min_hlo, _red._min_identity, _red._is_number,
                       "integer, floating or complex types")
cumlogsumexp_p = _cumulative("cumlogsumexp", _logaddexp_hlo, _neg_inf, dtypes.is_float,
                             "floating types")


def _bind_cumulative(prim, operand, axis, reverse):
  return prim.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumsum(operand, axis: int = 0, reverse: bool = False):
  """Cumulative sum along ``axis`` (from the end when ``reverse``)."""
  return _bind_cumulative(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
  """Cumulative product along ``axis`` (from the end when ``reverse``)."""
  return _bind_cumulative(cumprod_p, operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
  """Cumulative maximum along ``axis`` (NaN propagates; from the end when ``reverse``)."""
  return _bind_cumulative(cummax_p, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
  """Cumulative minimum along ``axis`` (NaN propagates; from the end when ``reverse``)."""
  return _bind_cumulative(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
  """Cumulative ``log(sum(exp(x)))`` along ``axis``, computed stably (no overflow)."""
  return _bind_cumulative(cumlogsumexp_p, operand, axis, reverse)
