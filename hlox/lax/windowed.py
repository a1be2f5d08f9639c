"""Windowed reductions: reduce_window (sum/max/min and generic), with their JVPs through
select_and_gather_add / select_and_scatter_add, and the padding helper ``padtype_to_pads``.
The cumulative reductions (cumsum, cumprod, ...) are in ``hlox.lax.cumulative`` and
re-exported here.

Everything here lowers to ``stablehlo.reduce_window``.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes, sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import elementwise as _ew
from hlox.lax import reducer_util as _ru
from hlox.lax import reductions as _red
from hlox.lax import shapes as _shapes
from hlox.lax.cumulative import (cumlogsumexp, cumlogsumexp_p, cummax, cummax_p, cummin,
                                  cummin_p, cumprod, cumprod_p, cumsum, cumsum_p)
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
      raise TypeError(f"{name}: {what} must have every element be strictly positive, got "
                      f"{tuple(v)} for operand {operand.str_short()}")
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
  """Explicit ``(low, high)`` padding for a padding string.

  ``'VALID'`` pads nothing; ``'SAME'`` pads so that the output has ``ceil(in / stride)``
  elements, putting an odd extra pad element at the end, and ``'SAME_LOWER'`` puts it at the
  start. Other strings raise ``ValueError``.

  Args:
    in_shape: the input's spatial shape.
    window_shape: the window's shape.
    window_strides: the strides.
    padding: ``'VALID'``, ``'SAME'`` or ``'SAME_LOWER'``.

  Returns:
    A list of ``(low, high)`` pairs, one per dimension.

  Examples:
    >>> lax.padtype_to_pads((5,), (2,), (2,), 'SAME')
    [(0, 1)]
    >>> lax.padtype_to_pads((4,), (3,), (1,), 'SAME_LOWER')
    [(1, 1)]
  """
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
    d, w, s = int(d), int(w), int(s)  # Python ints out, whatever integers came in (as JAX)
    out = -(-d // s)
    total = max(0, (out - 1) * s + w - d)
    small, large = total // 2, total - total // 2
    pads.append((small, large) if mode == "SAME" else (large, small))
  return pads


def _batched_window_params(bdim, *, window_dimensions, window_strides, padding,
                           base_dilation=None, window_dilation=None, **params):
  """Window parameters for an operand with a batch dimension inserted at ``bdim``: a window
  of size 1 (stride 1, no padding or dilation) along it keeps the examples apart."""
  def ins(values, value):
    return tuple(values[:bdim]) + (value,) + tuple(values[bdim:])
  new = dict(params, window_dimensions=ins(window_dimensions, 1),
             window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)))
  if base_dilation is not None:
    new["base_dilation"] = ins(base_dilation, 1)
  if window_dilation is not None:
    new["window_dilation"] = ins(window_dilation, 1)
  return new


def _window_batch_rule(prim):
  """Batching for a windowed primitive whose operands all have the same shape (after the
  batch dimension is added): they share the first batched operand's batch dimension."""
  def rule(axis_data, vals, dims, **params):
    bdim = next(d for d in dims if d is not None)
    vals = [batching.matchaxis(v, d, bdim, axis_data.size) for v, d in zip(vals, dims)]
    return prim.bind(*vals, **_batched_window_params(bdim, **params)), bdim
  batching.fancy_primitive_batchers[prim] = rule


# --- reduce_window_{sum,max,min} ---------------------------------------------------------

def _monoid_window_lowering(kind, identity):
  body = _ru.scalar_body(kind)

  def rule(ctx, x, **params):
    dtype = ctx.avals_in[0].dtype
    init = xla.ir_constant(np.asarray(identity(dtype), dtype=dtype))
    op, block = _ru.reduce_window_op(ctx, [x], [init], ctx.avals_out, **params)
    with ir.InsertionPoint(block):
      hlo.return_([body(*block.arguments)])
    return op.result
  return rule


def _window_primitive(name, kind, identity, accepted, what):
  prim = standard_primitive(functools.partial(_window_shape_rule, name),
                            _ru._dtype_rule(name, accepted, what), name)
  xla.register_lowering(prim, _monoid_window_lowering(kind, identity))
  return prim


reduce_window_sum_p = _window_primitive("reduce_window_sum", "sum", _ru._zero,
                                        _ru._is_number, "integer, floating or complex types")
reduce_window_max_p = _window_primitive("reduce_window_max", "max", _ru._max_identity,
                                        _ru._any_dtype, "bool or numeric types")
reduce_window_min_p = _window_primitive("reduce_window_min", "min", _ru._min_identity,
                                        _ru._any_dtype, "bool or numeric types")


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  # Each input element receives the cotangents of the windows it fell in. Dilating the
  # cotangent by the strides and padding it so that a window (of the same size and window
  # dilation) striding by the base dilation lands on each input element gathers exactly those.
  aval = operand.aval
  out_shape = get_aval(ct).shape
  if 0 in aval.shape or 0 in out_shape:
    return [ad.zeros_like_aval(aval)]
  config = []
  for n, w, s, (lo, _), bd, wd, o in zip(aval.shape, window_dimensions, window_strides,
                                          padding, base_dilation, window_dilation, out_shape):
    span = _dilate(w, wd)
    before = span - 1 - lo
    after = _dilate(n, bd) + span - 1 - _dilate(o, s) - before
    config.append((before, after, s - 1))
  padded = _shapes.pad(ct, np.zeros((), get_aval(ct).dtype), config)
  ndim = aval.ndim
  out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                 window_strides=base_dilation, padding=((0, 0),) * ndim,
                                 base_dilation=(1,) * ndim, window_dilation=window_dilation)
  return [out]

ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
_window_batch_rule(reduce_window_sum_p)


# The derivative of a max/min window reduction is the tangent at the chosen element of each
# window: ``select_and_gather_add`` picks it (a reduce_window over (operand, tangent) pairs),
# and its transpose ``select_and_scatter_add`` sends each cotangent back to the chosen
# element (stablehlo.select_and_scatter). Both are linear in their first argument. As in
# JAX, ties pick one element (not an equal split), and the two ops agree when there are none.

def _chooses_hlo(select, x, y, dtype):
  """Whether ``x`` is kept over ``y`` (``select`` is 'ge' for max, 'le' for min); complex
  numbers compare lexicographically, as reduce_window_max/min do."""
  direction = "GE" if select == "ge" else "LE"
  if not dtypes.is_complex(dtype):
    return xla.compare_hlo(x, y, direction, dtype)
  strict = "GT" if select == "ge" else "LT"
  rx, ry = hlo.real(x), hlo.real(y)
  real_eq = xla.compare_hlo(rx, ry, "EQ", dtypes.float32)
  real_cmp = xla.compare_hlo(rx, ry, strict, dtypes.float32)
  imag_cmp = xla.compare_hlo(hlo.imag(x), hlo.imag(y), direction, dtypes.float32)
  return hlo.select(real_eq, imag_cmp, real_cmp)


def _select_identity(select, dtype):
  return (_ru._max_identity if select == "ge" else _ru._min_identity)(dtype)


def _select_and_gather_add_shape_rule(tangents, operand, *, select, **params):
  if tangents.shape != operand.shape:
    raise TypeError(f"select_and_gather_add: tangents {tangents.str_short()} and operand "
                    f"{operand.str_short()} must have the same shape")
  return _window_shape_rule("select_and_gather_add", operand, **params)


select_and_gather_add_p = standard_primitive(_select_and_gather_add_shape_rule,
                                             lambda t, o, **params: t.dtype,
                                             "select_and_gather_add")


def _select_and_gather_add_lowering(ctx, tangents, operand, *, select, **params):
  t_aval, o_aval = ctx.avals_in
  out_aval = ctx.avals_out[0]
  inits = [xla.ir_constant(np.zeros((), t_aval.dtype)),
           xla.ir_constant(np.asarray(_select_identity(select, o_aval.dtype), o_aval.dtype))]
  op, block = _ru.reduce_window_op(ctx, [tangents, operand], inits,
                                [out_aval, out_aval.update(dtype=o_aval.dtype)], **params)
  with ir.InsertionPoint(block):
    tx, ox, ty, oy = block.arguments
    keep_x = _chooses_hlo(select, ox, oy, o_aval.dtype)
    hlo.return_([hlo.select(keep_x, tx, ty), hlo.select(keep_x, ox, oy)])
  return op.results[0]

xla.register_lowering(select_and_gather_add_p, _select_and_gather_add_lowering)


def _select_and_gather_add_jvp(primals, tangents, *, select, **params):
  (t, operand), (t_dot, _) = primals, tangents
  out = select_and_gather_add_p.bind(t, operand, select=select, **params)
  if type(t_dot) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, select_and_gather_add_p.bind(t_dot, operand, select=select, **params)


def _select_and_gather_add_transpose(ct, t, operand, *, select, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
  if ad.is_undefined_primal(operand):
    raise NotImplementedError("select_and_gather_add is linear only in its tangents")
  if type(ct) is ad.Zero:
    return [ad.Zero(t.aval), None]
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError(f"reverse-mode derivative of reduce_window_max/min with window "
                              f"dilation {window_dilation} is not implemented (as in JAX)")
  dilated = any(d != 1 for d in base_dilation)
  if dilated:
    # Spread the operand out as the base dilation does; the holes never win a window.
    operand = _shapes.pad(operand, np.asarray(_select_identity(select, get_aval(operand).dtype),
                                              get_aval(operand).dtype),
                          [(0, 0, d - 1) for d in base_dilation])
  out = select_and_scatter_add_p.bind(ct, operand, select=select,
                                      window_dimensions=window_dimensions,
                                      window_strides=window_strides, padding=padding)
  if dilated:
    out = _shapes.slice(out, (0,) * len(base_dilation), get_aval(out).shape, base_dilation)
  return [out, None]

ad.primitive_jvps[select_and_gather_add_p] = _select_and_gather_add_jvp
ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose
_window_batch_rule(select_and_gather_add_p)


def _select_and_scatter_add_shape_rule(source, operand, *, select, window_dimensions,
                                       window_strides, padding):
  ndim = operand.ndim
  expected = _window_shape_rule("select_and_scatter_add", operand,
                                window_dimensions=window_dimensions,
                                window_strides=window_strides, padding=padding,
                                base_dilation=(1,) * ndim, window_dilation=(1,) * ndim)
  if source.shape != expected:
    raise TypeError(f"select_and_scatter_add: source {source.str_short()} must have the "
                    f"windowed shape {expected} of operand {operand.str_short()}")
  return operand.shape


select_and_scatter_add_p = standard_primitive(_select_and_scatter_add_shape_rule,
                                              lambda s, o, **params: s.dtype,
                                              "select_and_scatter_add")


def _select_and_scatter_add_lowering(ctx, source, operand, *, select, window_dimensions,
                                     window_strides, padding):
  s_aval, o_aval = ctx.avals_in
  pad_attr = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(-1, 2),
                                         shape=(len(padding), 2))
  op = hlo.SelectAndScatterOp(xla.aval_to_ir_type(ctx.avals_out[0]), operand, source,
                              xla.ir_constant(np.zeros((), s_aval.dtype)),
                              window_dimensions=xla.dense_i64(window_dimensions),
                              window_strides=xla.dense_i64(window_strides), padding=pad_attr)
  o_type = xla.aval_to_ir_type(ShapedArray((), o_aval.dtype))
  s_type = xla.aval_to_ir_type(ShapedArray((), s_aval.dtype))
  block = op.select.blocks.append(o_type, o_type)
  with ir.InsertionPoint(block):
    hlo.return_([_chooses_hlo(select, *block.arguments, o_aval.dtype)])
  block = op.scatter.blocks.append(s_type, s_type)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.add(*block.arguments)])
  return op.result

xla.register_lowering(select_and_scatter_add_p, _select_and_scatter_add_lowering)


def _select_and_scatter_add_jvp(primals, tangents, *, select, **params):
  (source, operand), (s_dot, _) = primals, tangents
  out = select_and_scatter_add_p.bind(source, operand, select=select, **params)
  if type(s_dot) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, select_and_scatter_add_p.bind(s_dot, operand, select=select, **params)


def _select_and_scatter_add_transpose(ct, source, operand, *, select, window_dimensions,
                                      window_strides, padding):
  if ad.is_undefined_primal(operand):
    raise NotImplementedError("select_and_scatter_add is linear only in its source")
  if type(ct) is ad.Zero:
    return [ad.Zero(source.aval), None]
  ndim = len(window_dimensions)
  out = select_and_gather_add_p.bind(ct, operand, select=select,
                                     window_dimensions=window_dimensions,
                                     window_strides=window_strides, padding=padding,
                                     base_dilation=(1,) * ndim, window_dilation=(1,) * ndim)
  return [out, None]

ad.primitive_jvps[select_and_scatter_add_p] = _select_and_scatter_add_jvp
ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose
_window_batch_rule(select_and_scatter_add_p)


def _reduce_window_chooser_jvp(select):
  def rule(t, operand, **params):
    return select_and_gather_add_p.bind(t, operand, select=select, **params)
  return rule

ad.defjvp(reduce_window_max_p, _reduce_window_chooser_jvp("ge"))
ad.defjvp(reduce_window_min_p, _reduce_window_chooser_jvp("le"))
_window_batch_rule(reduce_window_max_p)
_window_batch_rule(reduce_window_min_p)


# --- generic reduce_window ---------------------------------------------------------------

def _generic_window_abstract_eval(*avals, jaxpr, window_dimensions, window_strides, padding,
                                  base_dilation, window_dilation):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if len({a.shape for a in operands}) != 1:
    raise ValueError(f"reduce_window: operands must all have the same shape, got "
                     f"{', '.join(a.str_short() for a in operands)}")
  shown = (f"operands {', '.join(a.str_short() for a in operands)} and initial values "
           f"{', '.join(a.str_short() for a in inits)}")
  if any(init.dtype != op.dtype for op, init in zip(operands, inits)):
    raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                    f"{shown}")
  if any(init.shape != () for init in inits):
    raise TypeError(f"reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[init.shape for init in inits]}. ({shown})")
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
  op, block = _ru.reduce_window_op(ctx, values[:n], values[n:], ctx.avals_out, **params)
  _ru.lower_region(ctx, block, jaxpr)
  return list(op.results)

xla.register_lowering(reduce_window_p, _generic_window_lowering)


@functools.lru_cache(maxsize=256)
def _jvp_window_jaxpr(jaxpr, differentiable):
  """The computation of a reduce_window over (operands, tangents of the ``differentiable``
  operands): pairs of (primal, tangent) scalars combine by the JVP of ``jaxpr``."""
  n = len(differentiable)
  nz = list(differentiable) * 2
  jvp_closed, _ = ad.jvp_jaxpr(jaxpr, nz, instantiate=list(differentiable))
  k = sum(differentiable)
  avals = list(jaxpr.in_avals[:n]) + [a.to_tangent_aval() for a, d in
                                      zip(jaxpr.in_avals[:n], differentiable) if d]

  def fun(*args):
    xs, ys = args[:n + k], args[n + k:]
    return eval_jaxpr(jvp_closed.jaxpr, jvp_closed.consts,
                      *xs[:n], *ys[:n], *xs[n:], *ys[n:])

  return trace_to_jaxpr(fun, avals * 2, "reduce_window jvp computation")


def _generic_window_jvp(primals, tangents, *, jaxpr, **params):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError("reduce_window: differentiating with respect to the initial "
                              "values is not supported")
  differentiable = tuple(dtypes.is_inexact(get_aval(x).dtype) for x in operands)
  t_operands = [ad.instantiate_zeros(t) for t, d in zip(tangents[:n], differentiable) if d]
  t_inits = [np.zeros((), get_aval(x).dtype) for x, d in zip(operands, differentiable) if d]
  jvp_jaxpr = _jvp_window_jaxpr(jaxpr, differentiable)
  # The primal outputs come from their own reduce_window, so that they do not depend on the
  # tangents (linearize needs them known); the dual one's primal outputs are dropped.
  outs = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr, **params)
  duals = reduce_window_p.bind(*operands, *t_operands, *inits, *t_inits, jaxpr=jvp_jaxpr,
                               **params)
  t_outs = iter(duals[n:])
  return outs, [next(t_outs) if d else ad.Zero.from_primal_value(o)
                for o, d in zip(outs, differentiable)]

ad.primitive_jvps[reduce_window_p] = _generic_window_jvp


def _generic_window_batch_rule(axis_data, vals, dims, *, jaxpr, **params):
  n = len(vals) // 2
  size = axis_data.size
  bdim = next((d for d in dims[:n] if d is not None), 0)
  operands = [batching.matchaxis(x, d, bdim, size) for x, d in zip(vals[:n], dims[:n])]
  # Initial values are identities of the computation (padding holds them too), so batched
  # ones stand for one scalar.
  inits = _red.batched_init_values(vals[n:], dims[n:], size)
  outs = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr,
                              **_batched_window_params(bdim, **params))
  return outs, [bdim] * n

batching.fancy_primitive_batchers[reduce_window_p] = _generic_window_batch_rule


def _window_monoid(computation, init, dtype):
  kind = _red.get_monoid(computation, init, dtype)
  return {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
          "min": reduce_window_min_p}.get(kind)


def _integer_identity(computation, operand, init):
  """JAX compares ``init_value`` with the identity of the init value's own dtype, so the
  float identities ``-inf`` (max) and ``inf`` (min) select max/min pooling on integer and
  boolean operands too (Trax's ``max_pool`` passes ``-inf`` for int arrays). Map them to the
  operand dtype's identity; any other init value is left alone."""
  dtype = np.dtype(get_aval(operand).dtype)
  if not (dtype == np.bool_ or np.issubdtype(dtype, np.integer)):
    return init
  value = _red._concrete_scalar(init)
  if value is None or not np.issubdtype(value.dtype, np.floating) or not np.isinf(value):
    return init
  if computation is _ew.max and value < 0:
    return np.array(False if dtype == np.bool_ else np.iinfo(dtype).min, dtype)
  if computation is _ew.min and value > 0:
    return np.array(True if dtype == np.bool_ else np.iinfo(dtype).max, dtype)
  return init


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduces each window of ``operand`` with a scalar computation (pooling).

  ``operand`` is an array or a pytree of equally shaped arrays, with ``init_value`` a
  matching pytree of scalars; ``computation`` combines two such pytrees of scalars.
  ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs, and padded
  elements hold ``init_value``. ``lax.add``, ``lax.max`` and ``lax.min`` with their identities
  use dedicated primitives, which are differentiable; other computations form a generic
  ``reduce_window`` primitive.

  Args:
    operand: array or pytree of arrays.
    init_value: scalar (or pytree of scalars) starting each window.
    computation: function of two pytrees of scalars returning one.
    window_dimensions: window size per dimension.
    window_strides: stride per dimension (default 1).
    padding: padding string or ``(low, high)`` pairs.
    base_dilation: optional input dilation per dimension.
    window_dilation: optional window dilation per dimension.

  Returns:
    The reduced windows, one per output position.

  Examples:
    >>> lax.reduce_window(jnp.arange(5.), 0., lax.add, (2,), (1,))
    Array([1., 3., 5., 7.], dtype=float32)
    >>> lax.reduce_window(jnp.arange(6.).reshape(2, 3), -jnp.inf, lax.max, (2, 2), (1, 1),
    ...                   'SAME')
    Array([[4., 5., 5.],
           [4., 5., 5.]], dtype=float32)
  """
  flat_operands, treedef = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if treedef != init_tree:
    raise ValueError(f"reduce_window: operand and init_value must have the same structure, "
                     f"got {treedef} and {init_tree}")
  if not flat_operands:
    raise ValueError("reduce_window: at least one operand is required")
  if len(flat_operands) == 1:
    flat_inits = [_integer_identity(computation, flat_operands[0], flat_inits[0])]
  flat_inits = _red.init_values_like("reduce_window", flat_operands, flat_inits, computation)
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
    # As JAX: 'SAME' is worked out on the undilated operand with the dilated window (the
    # base dilation does not enter the padding).
    padding = padtype_to_pads(aval.shape,
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


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The output shape of a windowed reduction.

  Args:
    operand_shape: the input's shape.
    window_dimensions: window size per dimension.
    window_strides: stride per dimension.
    padding: explicit ``(low, high)`` pairs.
    base_dilation: optional input dilation per dimension.
    window_dilation: optional window dilation per dimension.

  Returns:
    The output shape as a tuple.

  Examples:
    >>> lax.reduce_window_shape_tuple((5, 5), (2, 2), (2, 2), ((0, 1), (0, 1)))
    (3, 3)
  """
  n = len(operand_shape)
  return reduce_window_shape(tuple(operand_shape), tuple(window_dimensions),
                             tuple(window_strides), [tuple(p) for p in padding],
                             (1,) * n if base_dilation is None else tuple(base_dilation),
                             (1,) * n if window_dilation is None else tuple(window_dilation))


__all__ += ["reduce_window_shape_tuple", "select_and_gather_add_p", "select_and_scatter_add_p"]


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p, reduce_window_p,
           select_and_gather_add_p):
  sharding_types.sharding_rules[_p] = sharding_types.windowed_rule("reduce_window")
del _p
# (source, operand) -> a result of the operand's shape, split as it
sharding_types.sharding_rules[select_and_scatter_add_p] = (
    lambda in_avals, in_shardings, out_avals, **params: in_shardings[1])
