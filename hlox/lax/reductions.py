"""Reductions over axes: reduce_sum/prod/max/min/and/or/xor, argmax/argmin, generic reduce.

The monoid reductions each lower to one ``stablehlo.reduce`` whose region applies a single
scalar op; ``argmax``/``argmin`` use a variadic reduce over (value, index) pairs; ``reduce``
traces a user computation on scalars into a jaxpr and lowers it into the region.

``reduce_sum`` lives in ``hlox.lax.base`` (every transpose that unbroadcasts needs it) and
the shared machinery (axis and dtype rules, identities, regions, ``defreducer``) in
``hlox.lax.reducer_util``; both are re-exported here.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.jaxpr import eval_jaxpr, trace_to_jaxpr
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import elementwise as _ew
from hlox.lax import shapes as _shapes
from hlox.lax.base import _broadcast_back, reduce_sum, reduce_sum_p
from hlox.lax.cumulative import cumprod
from hlox.lax.reducer_util import (
    _and_identity, _any_dtype, _axes_param, _compare, _is_bool_or_int,
    _is_number, _keep_weak, _kept_dims, _max_identity, _min_identity, _one, _reduce_shape_rule,
    _reducer, _strip_weak, _zero, add_region, defreducer, lower_region, max_hlo, min_hlo,
    reduce_lowering, scalar_body, shift_axes_for_batch)  # noqa: F401  (re-exported)
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "reduce_xor", "argmax", "argmin", "reduce",
           "reduce_sum_p", "reduce_prod_p", "reduce_max_p", "reduce_min_p", "reduce_and_p",
           "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p", "reduce_p"]


def _zero_tangent(aval):
  return ad.Zero(aval.to_tangent_aval())


# --- monoid reductions (``reduce_sum`` is in base, re-exported here) ----------------------

reduce_prod_p = _reducer("reduce_prod", _is_number, "integer, floating or complex types",
                         _keep_weak, hlo.multiply, _one)

def _products_of_others(x, aval, axes):
  """For each element of ``x``, the product of the other elements of its reduction group
  (over ``axes``): exclusive prefix products times exclusive suffix products along the
  flattened group, so zeros need no special case and no division happens."""
  kept = _kept_dims(aval.ndim, axes)
  kept_shape = tuple(aval.shape[i] for i in kept)
  group_shape = tuple(aval.shape[a] for a in axes)
  n = int(np.prod(group_shape, dtype=np.int64))
  perm = kept + tuple(axes)
  flat = _shapes.reshape(_shapes.transpose(x, perm), kept_shape + (n,))
  last = len(kept_shape)
  one = np.array(1, aval.dtype)
  no_pad = [(0, 0, 0)] * last
  prefix = _shapes.pad(_shapes.slice_in_dim(cumprod(flat, last), 0, n - 1, axis=last), one,
                       no_pad + [(1, 0, 0)])
  suffix = _shapes.pad(_shapes.slice_in_dim(cumprod(flat, last, reverse=True), 1, n,
                                            axis=last), one, no_pad + [(0, 1, 0)])
  others = _shapes.reshape(_ew.mul(prefix, suffix), kept_shape + group_shape)
  return _shapes.transpose(others, tuple(int(i) for i in np.argsort(perm)))


def _reduce_prod_jvp(primals, tangents, *, axes):
  (x,), (t,) = primals, tangents
  out = reduce_prod_p.bind(x, axes=axes)
  aval = get_aval(x)
  if type(t) is ad.Zero or not dtypes.is_inexact(aval.dtype):
    return out, ad.Zero.from_primal_value(out)
  if not axes:
    return out, t
  if any(aval.shape[a] == 0 for a in axes):  # the empty product is the constant 1
    return out, ad.Zero.from_primal_value(out)
  others = _products_of_others(x, aval, axes)
  return out, reduce_sum(_ew.mul(t, others), axes)

ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp
defreducer(reduce_prod_p)


def reduce_prod(operand, axes):
  """Product of the elements of ``operand`` over ``axes``.

  Accepts integer, float and complex dtypes; the result keeps the operand's dtype.
  Differentiable (the gradient handles zeros).

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).

  Returns:
    An array of ``operand``'s shape without ``axes``.

  Examples:
    >>> lax.reduce_prod(jnp.array([[2., 3.], [4., 5.]]), (1,))
    Array([ 6., 20.], dtype=float32)
  """
  return reduce_prod_p.bind(operand, axes=_axes_param(axes))


reduce_max_p = _reducer("reduce_max", _any_dtype, "bool, integer, floating or complex types",
                        _keep_weak, max_hlo, _max_identity)

def _reduce_chooser_jvp(t, out, operand, *, axes):
  # The tangent at the extremum; equal extrema share it equally (as JAX does). A NaN result
  # matches no element, so its tangent is NaN.
  aval = get_aval(operand)
  if not dtypes.is_inexact(aval.dtype):
    return _zero_tangent(get_aval(out))
  hits = _ew.convert_element_type(_ew.eq(operand, _broadcast_back(out, aval, axes)),
                                  get_aval(t).dtype)
  return _ew.div(reduce_sum(_ew.mul(t, hits), axes), reduce_sum(hits, axes))

ad.defjvp2(reduce_max_p, _reduce_chooser_jvp)
defreducer(reduce_max_p)


def reduce_max(operand, axes, *, out_sharding=None):
  """Maximum of ``operand`` over ``axes``.

  NaN propagates; complex numbers compare lexicographically. An empty reduction gives the
  dtype's smallest value (-inf for floats). The gradient goes to the maximal elements, split
  equally among ties.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    An array of ``operand``'s shape and dtype without ``axes``.

  Examples:
    >>> lax.reduce_max(jnp.array([[1, 5], [3, 2]]), (0,))
    Array([3, 5], dtype=int32)
    >>> lax.reduce_max(jnp.zeros((0,)), (0,))
    Array(-inf, dtype=float32)
  """
  with sharding_types.result_sharding_given(out_sharding is not None):
    out = reduce_max_p.bind(operand, axes=_axes_param(axes))
  return apply_out_sharding(out, out_sharding, "reduce_max")


reduce_min_p = _reducer("reduce_min", _any_dtype, "bool, integer, floating or complex types",
                        _keep_weak, min_hlo, _min_identity)

ad.defjvp2(reduce_min_p, _reduce_chooser_jvp)
defreducer(reduce_min_p)


def reduce_min(operand, axes, *, out_sharding=None):
  """Minimum of ``operand`` over ``axes``.

  NaN propagates; complex numbers compare lexicographically. An empty reduction gives the
  dtype's largest value (+inf for floats). The gradient goes to the minimal elements, split
  equally among ties.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    An array of ``operand``'s shape and dtype without ``axes``.

  Examples:
    >>> lax.reduce_min(jnp.array([[1, 5], [3, 2]]), (1,))
    Array([1, 2], dtype=int32)
  """
  with sharding_types.result_sharding_given(out_sharding is not None):
    out = reduce_min_p.bind(operand, axes=_axes_param(axes))
  return apply_out_sharding(out, out_sharding, "reduce_min")


reduce_and_p = _reducer("reduce_and", _is_bool_or_int, "bool or integer types", _strip_weak,
                        hlo.and_, _and_identity)

ad.defjvp_zero(reduce_and_p)
defreducer(reduce_and_p)


def reduce_and(operand, axes):
  """Logical (bool) or bitwise (integer) AND of ``operand`` over ``axes``.

  Only bool and integer dtypes are accepted (others raise ``TypeError``); the result is
  strongly typed. Its derivative is zero.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).

  Returns:
    An array of ``operand``'s shape and dtype without ``axes``.

  Examples:
    >>> lax.reduce_and(jnp.array([True, False]), (0,))
    Array(False, dtype=bool)
  """
  return reduce_and_p.bind(operand, axes=_axes_param(axes))


reduce_or_p = _reducer("reduce_or", _is_bool_or_int, "bool or integer types", _strip_weak,
                       hlo.or_, _zero)

ad.defjvp_zero(reduce_or_p)
defreducer(reduce_or_p)


def reduce_or(operand, axes):
  """Logical (bool) or bitwise (integer) OR of ``operand`` over ``axes``.

  Only bool and integer dtypes are accepted (others raise ``TypeError``); the result is
  strongly typed. Its derivative is zero.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).

  Returns:
    An array of ``operand``'s shape and dtype without ``axes``.

  Examples:
    >>> lax.reduce_or(jnp.array([True, False]), (0,))
    Array(True, dtype=bool)
  """
  return reduce_or_p.bind(operand, axes=_axes_param(axes))


reduce_xor_p = _reducer("reduce_xor", _is_bool_or_int, "bool or integer types", _strip_weak,
                        hlo.xor, _zero)

ad.defjvp_zero(reduce_xor_p)
defreducer(reduce_xor_p)


def reduce_xor(operand, axes):
  """Logical (bool) or bitwise (integer) XOR of ``operand`` over ``axes``.

  Only bool and integer dtypes are accepted (others raise ``TypeError``); the result is
  strongly typed. Its derivative is zero.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).

  Returns:
    An array of ``operand``'s shape and dtype without ``axes``.

  Examples:
    >>> lax.reduce_xor(jnp.array([5, 3]), (0,))
    Array(6, dtype=int32)
  """
  return reduce_xor_p.bind(operand, axes=_axes_param(axes))


# --- argmax / argmin ---------------------------------------------------------------------

def _argminmax_shape_rule(name, operand, *, axes, index_dtype):
  if len(axes) != 1:
    raise ValueError(f"{name}: exactly one axis is reduced, got axes {axes}")
  axis, = axes
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"{name}: Invalid axis {axis} for operand {operand.str_short()} (lax "
                     f"axes must be in [0, {operand.ndim}); jax.numpy accepts negative axes)")
  if operand.shape[axis] < 1:
    raise ValueError(f"{name}: argmin and argmax require non-empty reduced dimension, got "
                     f"operand {operand.str_short()} with axis {axis}")
  return operand.shape[:axis] + operand.shape[axis + 1:]


def _argminmax_dtype_rule(name, operand, *, axes, index_dtype):
  if not dtypes.is_int(index_dtype):
    raise TypeError(f"{name}: index_dtype must be an integer type, got "
                    f"{np.dtype(index_dtype).name}")
  if not (operand.dtype == dtypes.bool_ or dtypes.is_int(operand.dtype)
          or dtypes.is_float(operand.dtype)):
    raise TypeError(f"{name} does not accept dtype {operand.dtype.name} (operand "
                    f"{operand.str_short()}); accepted: bool, integer or floating types")
  return np.dtype(index_dtype)


def _argminmax_lowering(direction, identity):
  """Variadic reduce over (value, index). The comparator is symmetric in its two pairs, so
  XLA may combine them in any order: a NaN beats any number, and between equal values (or
  two NaNs) the smaller index wins; hence the result is the first NaN, else the first
  extremum."""
  def rule(ctx, x, *, axes, index_dtype):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    axis, = axes
    dtype = aval_in.dtype
    indices = xla.iota(ShapedArray(aval_in.shape, index_dtype), axis)
    op = hlo.ReduceOp([xla.aval_to_ir_type(ShapedArray(aval_out.shape, dtype)),
                       xla.aval_to_ir_type(aval_out)],
                      [x, indices],
                      [xla.ir_constant(identity(dtype)),
                       xla.ir_constant(np.array(0, index_dtype))],
                      xla.dense_i64(axes))
    block = add_region(op, 0, [dtype, index_dtype])
    with ir.InsertionPoint(block):
      xv, xi, yv, yi = block.arguments
      x_better = _compare(xv, yv, direction, dtype)
      tie = _compare(xv, yv, "EQ", dtype)
      if dtypes.is_inexact(dtype):
        x_nan = _compare(xv, xv, "NE", dtype)
        y_nan = _compare(yv, yv, "NE", dtype)
        true = xla.ir_constant(np.array(True))
        x_better = hlo.or_(x_better, hlo.and_(x_nan, hlo.xor(y_nan, true)))
        tie = hlo.or_(tie, hlo.and_(x_nan, y_nan))
      x_first = _compare(xi, yi, "LT", index_dtype)
      pick_x_index = hlo.or_(x_better, hlo.and_(tie, x_first))
      hlo.return_([hlo.select(x_better, xv, yv), hlo.select(pick_x_index, xi, yi)])
    return op.results[1]
  return rule


def _argminmax(name, direction, identity):
  prim = standard_primitive(functools.partial(_argminmax_shape_rule, name),
                            functools.partial(_argminmax_dtype_rule, name), name,
                            weak_type_rule=_strip_weak)
  xla.register_lowering(prim, _argminmax_lowering(direction, identity))
  return prim


argmax_p = _argminmax("argmax", "GT", _max_identity)
argmin_p = _argminmax("argmin", "LT", _min_identity)
ad.defjvp_zero(argmax_p)
ad.defjvp_zero(argmin_p)
defreducer(argmax_p)
defreducer(argmin_p)


def _index_dtype(name, index_dtype):
  try:
    dtype = np.dtype(index_dtype)
  except TypeError:
    raise TypeError(f"{name}: index_dtype {index_dtype!r} is not a dtype") from None
  if not dtypes.is_int(dtype):
    raise TypeError(f"{name}: index_dtype must be an integer type, got {dtype.name}")
  return dtypes.canonicalize_dtype(dtype)


def argmax(operand, axis: int, index_dtype):
  """Index of the maximum of ``operand`` along ``axis``.

  Ties give the first occurrence; a NaN counts as the maximum, so the first NaN's index is
  returned when there is one. ``index_dtype`` must be an integer dtype (else ``TypeError``).
  Not differentiable (integer output).

  Args:
    operand: input array.
    axis: the dimension to reduce (static, non-negative).
    index_dtype: integer dtype of the result.

  Returns:
    An array of ``operand``'s shape without ``axis``, of ``index_dtype``.

  Examples:
    >>> lax.argmax(jnp.array([1., 3., 3.]), 0, 'int32')
    Array(1, dtype=int32)
    >>> lax.argmax(jnp.array([[1., 9.], [8., 0.]]), 1, jnp.int32)
    Array([1, 0], dtype=int32)
  """
  return argmax_p.bind(operand, axes=(int(axis),),
                       index_dtype=_index_dtype("argmax", index_dtype))


def argmin(operand, axis: int, index_dtype):
  """Index of the minimum of ``operand`` along ``axis``.

  Ties give the first occurrence; a NaN counts as the minimum, so the first NaN's index is
  returned when there is one. ``index_dtype`` must be an integer dtype (else ``TypeError``).
  Not differentiable (integer output).

  Args:
    operand: input array.
    axis: the dimension to reduce (static, non-negative).
    index_dtype: integer dtype of the result.

  Returns:
    An array of ``operand``'s shape without ``axis``, of ``index_dtype``.

  Examples:
    >>> lax.argmin(jnp.array([2., 1., 1.]), 0, 'int32')
    Array(1, dtype=int32)
    >>> lax.argmin(jnp.array([[1., 9.], [8., 0.]]), 1, jnp.int32)
    Array([0, 1], dtype=int32)
  """
  return argmin_p.bind(operand, axes=(int(axis),),
                       index_dtype=_index_dtype("argmin", index_dtype))


# --- generic reduce ----------------------------------------------------------------------

def _split(avals):
  n = len(avals) // 2
  return avals[:n], avals[n:]


def _reduce_abstract_eval(*avals, computation, jaxpr, dimensions):
  operands, inits = _split(avals)
  if not operands:
    raise ValueError("reduce: at least one operand is required")
  shapes = {a.shape for a in operands}
  if len(shapes) != 1:
    raise ValueError(f"reduce: operands must all have the same shape, got "
                     f"{', '.join(a.str_short() for a in operands)}")
  if any(a.shape != () for a in inits):
    raise ValueError(f"reduce found non-scalar initial value: initial values must be "
                     f"scalars, got "
                     f"{', '.join(a.str_short() for a in inits)}")
  for op, init in zip(operands, inits):
    if op.dtype != init.dtype:
      raise TypeError(f"reduce: operand dtypes must match their initial values' dtypes, "
                      f"got operands {', '.join(a.str_short() for a in operands)} and "
                      f"initial values {', '.join(a.str_short() for a in inits)}")
  shape = _reduce_shape_rule("reduce", operands[0], axes=dimensions)
  return [ShapedArray(shape, op.dtype, op.weak_type and init.weak_type)
          for op, init in zip(operands, inits)]


reduce_p = Primitive("reduce")
reduce_p.multiple_results = True
reduce_p.def_impl(functools.partial(xla.apply_primitive, reduce_p))
reduce_p.def_abstract_eval(_reduce_abstract_eval)


def _reduce_lowering(ctx, *values, computation, jaxpr, dimensions):
  operands, inits = _split(list(values))
  init_avals = ctx.avals_in[len(operands):]
  op = hlo.ReduceOp([xla.aval_to_ir_type(a) for a in ctx.avals_out], operands, inits,
                    xla.dense_i64(dimensions))
  block = add_region(op, 0, [a.dtype for a in init_avals])
  lower_region(ctx, block, jaxpr)
  return list(op.results)

xla.register_lowering(reduce_p, _reduce_lowering)


def _reduce_tree(combine, inits, xs, axes):
  """Reduce the equally shaped arrays ``xs`` over ``axes`` by halving: the group is moved
  to the front and flattened, then its two halves are combined elementwise (the odd one out
  is padded with the initial values) until one element is left. Made of differentiable
  primitives only, which is how ``reduce`` gets its derivative."""
  aval = get_aval(xs[0])
  kept = _kept_dims(aval.ndim, axes)
  kept_shape = tuple(aval.shape[i] for i in kept)
  n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
  perm = tuple(axes) + kept
  xs = [_shapes.reshape(_shapes.transpose(x, perm), (n,) + kept_shape) for x in xs]
  if n == 0:
    return [_shapes.broadcast_in_dim(i, kept_shape, ()) for i in inits]
  while n > 1:
    half = (n + 1) // 2
    lo = [_shapes.slice_in_dim(x, 0, half) for x in xs]
    hi = [_shapes.slice_in_dim(x, half, n) for x in xs]
    if n % 2:
      config = [(0, 1, 0)] + [(0, 0, 0)] * len(kept_shape)
      hi = [_shapes.pad(h, i, config) for h, i in zip(hi, inits)]
    xs = combine(*lo, *hi)
    n = half
  return [_shapes.reshape(x, kept_shape) for x in xs]


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise NotImplementedError("reduce: differentiating with respect to the initial values "
                              "is not supported (use an identity of the computation)")

  def combine(*args):
    # The computation was traced on scalars; applied to arrays it acts elementwise as long
    # as every operation in it broadcasts scalars, which elementwise primitives do.
    try:
      return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    except (TypeError, ValueError) as e:
      raise NotImplementedError(
          f"reduce: the derivative needs a computation made of elementwise operations; "
          f"applying it to arrays failed: {e}") from e

  return ad.jvp(lambda *xs: _reduce_tree(combine, inits, list(xs), dimensions),
                list(operands), list(tangents[:n]))

ad.primitive_jvps[reduce_p] = _reduce_jvp


def batched_init_values(inits, init_dims, size):
  """Scalar initial values standing for the batched ``inits``. An initial value must be an
  identity of the computation, and an identity is unique, so every example holds the same
  one: the first example's is used (any value of the dtype when the batch is empty)."""
  out = []
  for init, d in zip(inits, init_dims):
    if d is not None:
      aval = get_aval(init)
      init = (_shapes.index_in_dim(init, 0, d, keepdims=False) if size
              else np.zeros((), aval.dtype))
    out.append(init)
  return out


def _reduce_batch_rule(axis_data, vals, dims, *, computation, jaxpr, dimensions):
  # Operands share one batch dimension (the first batched operand's); the reduced
  # dimensions are renumbered around it.
  n = len(vals) // 2
  size = axis_data.size
  bdim = next((d for d in dims[:n] if d is not None), 0)
  operands = [batching.matchaxis(x, d, bdim, size) for x, d in zip(vals[:n], dims[:n])]
  inits, init_dims = vals[n:], dims[n:]
  new_dimensions, out_bdim = shift_axes_for_batch(dimensions, bdim)
  shape = get_aval(operands[0]).shape
  if any(shape[d] == 0 for d in new_dimensions) and any(d is not None for d in init_dims):
    # Nothing to reduce: each example's result is its own initial value.
    out_shape = tuple(s for i, s in enumerate(shape) if i not in new_dimensions)
    outs = [_shapes.broadcast_in_dim(i, out_shape, (out_bdim,) if d is not None else ())
            for i, d in zip(inits, init_dims)]
    return outs, [out_bdim] * n
  outs = reduce_p.bind(*operands, *batched_init_values(inits, init_dims, size),
                       computation=computation, jaxpr=jaxpr, dimensions=new_dimensions)
  return outs, [out_bdim] * n

batching.fancy_primitive_batchers[reduce_p] = _reduce_batch_rule


@functools.lru_cache(maxsize=512)
def computation_jaxpr(name, computation, flat_avals, treedef):
  """Trace ``computation(xs, ys)`` (trees of scalars shaped like ``treedef``) to a jaxpr
  whose outputs have the same dtypes as its inputs. Cached, so the same computation gives
  the same jaxpr object (and eager calls hit the executable cache)."""
  n = len(flat_avals)

  def flat_fun(*args):
    xs = tree_util.tree_unflatten(treedef, args[:n])
    ys = tree_util.tree_unflatten(treedef, args[n:])
    out = computation(xs, ys)
    flat_out, out_tree = tree_util.tree_flatten(out)
    if out_tree != treedef:
      raise ValueError(f"{name} output must have the same tree structure as the operands "
                       f"{treedef} vs. {out_tree} (the computation's return value)")
    return flat_out

  closed = trace_to_jaxpr(flat_fun, list(flat_avals) * 2, debug_info=f"{name} computation")
  if any(isinstance(c, Tracer) for c in closed.consts):
    raise NotImplementedError(f"{name}: the computation may not close over traced values")
  for a, b in zip(closed.out_avals, flat_avals):
    if a.shape != () or a.dtype != b.dtype:
      raise TypeError(f"{name}: the computation must return scalars of the operands' dtypes "
                      f"{[x.str_short() for x in flat_avals]}, got "
                      f"{[x.str_short() for x in closed.out_avals]}")
  return closed


def init_values_like(name, flat_operands, flat_inits, computation=None):
  """Python-scalar initial values as arrays: of their operand's dtype when the value is the
  identity of a built-in monoid ``computation`` (the dedicated reduction ignores its dtype),
  else of the scalar's own default dtype, so that a mismatch is the dtype check's TypeError
  (as in JAX: ``lax.reduce(f32, 1, lax.add, ...)`` is an error, ``0`` is fine)."""
  out = []
  for x, init in zip(flat_operands, flat_inits):
    if type(init) in (int, float, complex, bool):
      dtype = get_aval(x).dtype
      own = dtypes.python_scalar_dtype(init)
      if own != dtype and not (len(flat_operands) == 1 and _scalar_fits(init, dtype) and
                               get_monoid(computation, np.asarray(init, dtype), dtype)):
        dtype = own
      init = np.asarray(init, dtype=dtype)
    out.append(init)
  return out


def _scalar_fits(x, dtype) -> bool:
  """Whether Python scalar ``x``'s kind can be held by ``dtype`` (no float in an int)."""
  if type(x) in (bool, int):
    return True
  if type(x) is float:
    return dtypes.is_inexact(dtype)
  return dtypes.is_complex(dtype)


def _concrete_scalar(x):
  """The value of ``x`` when it is a known scalar (not traced), else None."""
  if isinstance(x, Tracer):
    return None
  value = np.asarray(x)
  return value if value.shape == () else None


def get_monoid(computation, init, dtype):
  """``'sum'``, ``'max'``, ... when ``computation`` with ``init`` is one of the built-in
  monoids of ``dtype`` (so the dedicated primitive can be used), else None."""
  value = _concrete_scalar(init)
  if value is None:
    return None
  dtype = np.dtype(dtype)
  intlike = dtype == dtypes.bool_ or dtypes.is_int(dtype)
  candidates = [("add", "sum", _zero), ("mul", "prod", _one), ("max", "max", _max_identity),
                ("min", "min", _min_identity)]
  if intlike:
    candidates += [("bitwise_and", "and", _and_identity), ("bitwise_or", "or", _zero),
                   ("bitwise_xor", "xor", _zero)]
  for fn_name, kind, identity in candidates:
    fn = getattr(_ew, fn_name, None)
    if fn is not None and computation is fn:
      if kind in ("sum", "prod") and dtype == dtypes.bool_:
        return None
      return kind if bool(value.astype(dtype) == identity(dtype)) else None
  return None


_monoid_fns = {"sum": lambda x, a: reduce_sum(x, a), "prod": reduce_prod,
               "max": lambda x, a: reduce_max(x, a), "min": lambda x, a: reduce_min(x, a),
               "and": reduce_and, "or": reduce_or, "xor": reduce_xor}


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
  """Reduces arrays over dimensions with an arbitrary scalar computation.

  ``operands`` is one array or a pytree of equally shaped arrays and ``init_values`` a
  matching pytree of scalars; ``computation(xs, ys)`` combines two such pytrees of scalars
  into one. ``init_values`` should be an identity of ``computation``, which must be
  associative and commutative: XLA may combine elements in any order. Common monoids
  (``lax.add``, ``lax.mul``, ``lax.max``, ``lax.min``, bitwise ops with their identities) are
  bound as the dedicated reduction primitives, which differentiate; a general
  ``computation`` becomes one ``reduce`` primitive. The result is weakly typed only when both
  operand and init value are. Mismatched pytree structures raise ``ValueError``.

  Args:
    operands: an array, or a pytree of arrays of one shape.
    init_values: a scalar, or a pytree of scalars matching ``operands``.
    computation: function of two pytrees of scalars returning one.
    dimensions: the dimensions to reduce (static).
    out_sharding: optional sharding of the result.

  Returns:
    A pytree like ``operands`` with ``dimensions`` removed.

  Examples:
    >>> lax.reduce(jnp.arange(6).reshape(2, 3), 0, lax.add, (1,))
    Array([ 3, 12], dtype=int32)
    >>> def keep_max(a, b):  # (value, index) pairs: the larger value and its index
    ...   return lax.max(a[0], b[0]), lax.select(a[0] >= b[0], a[1], b[1])
    >>> lax.reduce((jnp.array([1., 5., 3.]), jnp.arange(3)), (-jnp.inf, 0), keep_max, (0,))
    (Array(5., dtype=float32), Array(1, dtype=int32))
  """
  flat_operands, treedef = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if treedef != init_tree:
    raise ValueError(f"reduce: Operands must have the same tree structure as init_values, got "
                     f"{treedef} and {init_tree}")
  dimensions = _axes_param(dimensions)
  init_weak = [dtypes.is_weakly_typed(v) for v in flat_inits]
  flat_inits = init_values_like("reduce", flat_operands, flat_inits, computation)
  if len(flat_operands) == 1:
    aval = get_aval(flat_operands[0])
    kind = get_monoid(computation, flat_inits[0], aval.dtype)
    if kind is not None:
      out = _monoid_fns[kind](flat_operands[0], dimensions)
      if get_aval(out).weak_type and not init_weak[0]:
        # As for the generic reduce: weak only when operand and init value both are.
        out = _ew.convert_element_type(out, aval.dtype, weak_type=False)
      return tree_util.tree_unflatten(treedef, [apply_out_sharding(out, out_sharding, "reduce")])
  init_avals = tuple(ShapedArray((), get_aval(v).dtype) for v in flat_inits)
  jaxpr = computation_jaxpr("reduce", computation, init_avals, treedef)
  out = reduce_p.bind(*flat_operands, *flat_inits, computation=computation, jaxpr=jaxpr,
                      dimensions=dimensions)
  return tree_util.tree_unflatten(treedef, [apply_out_sharding(o, out_sharding, "reduce")
                                            for o in out])


for _p in (reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p,
           argmax_p, argmin_p):
  sharding_types.sharding_rules[_p] = sharding_types.nonlinear_reduction_rule(_p.name)
