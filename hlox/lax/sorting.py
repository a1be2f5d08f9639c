"""sort (several operands, num_keys, stability) and top_k.

``sort_p`` sorts several same-shaped operands together along one dimension, ordered
lexicographically by the first ``num_keys`` of them. The comparator puts floats in a total
order: ``-inf < ... < -0.0 == 0.0 < ... < inf < NaN`` (every NaN equal and last), which is
what JAX does and what makes stable sorts of floats well defined. Complex numbers compare by
(real, imag); integers signed or unsigned as their dtype says; ``False < True``.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox.core import dtypes, sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import indexing
from hlox.lax.shapes import broadcast_in_dim, broadcasted_iota, expand_dims
from hlox.lax.utils import canonicalize_axis, shape_str, standard_primitive
from hlox.runtime import client

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

__all__ = ["sort", "sort_key_val", "top_k", "sort_p", "top_k_p"]


# --- sort --------------------------------------------------------------------------------

def _sort_shape_rule(*operands, dimension, is_stable, num_keys):
  if not operands:
    raise TypeError("sort requires at least one operand")
  shape = operands[0].shape
  if any(a.shape != shape for a in operands[1:]):
    raise TypeError(f"sort requires operands of equal shapes, got {shape_str(operands)}")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"sort: dimension {dimension} is out of range for operands of shape "
                     f"{shape}")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                     f"operands ({len(operands)})")
  return [shape] * len(operands)


def _sort_dtype_rule(*operands, **params):
  for a in operands:
    if a.dtype == dtypes.float0:
      raise TypeError(f"sort does not accept float0 operands, got {shape_str(operands)}")
  return [a.dtype for a in operands]


def _sort_weak_rule(*operands, **params):
  return [a.weak_type for a in operands]


sort_p = standard_primitive(_sort_shape_rule, _sort_dtype_rule, "sort",
                            weak_type_rule=_sort_weak_rule, multiple_results=True)


def _scalar_type(dtype) -> ir.Type:
  return xla.aval_to_ir_type(ShapedArray((), dtype))


def _compare(x, y, direction: str, compare_type: str) -> ir.Value:
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(compare_type))


def _canonical_float(x, dtype) -> ir.Value:
  """Map -0.0 to 0.0 and every NaN to one positive NaN, so that the total order of
  ``compare TOTALORDER`` treats them as equal (and puts NaN last)."""
  zero = xla.ir_constant(np.zeros((), dtype))
  nan = xla.ir_constant(np.full((), np.nan, dtype))
  x = hlo.select(_compare(x, zero, "EQ", "FLOAT"), zero, x)
  return hlo.select(_compare(x, x, "NE", "FLOAT"), nan, x)


def _sort_keys(x, y, dtype):
  """Pairs of (x_key, y_key, compare_type) whose lexicographic order is the order of x, y."""
  if dtypes.is_complex(dtype):
    part = np.finfo(dtype).dtype
    return [(_canonical_float(f(x), part), _canonical_float(f(y), part), "TOTALORDER")
            for f in (hlo.real, hlo.imag)]
  if dtypes.is_float(dtype):
    return [(_canonical_float(x, dtype), _canonical_float(y, dtype), "TOTALORDER")]
  if dtype == dtypes.bool_ or dtypes.is_unsigned_int(dtype):
    return [(x, y, "UNSIGNED")]
  return [(x, y, "SIGNED")]


def _lexicographic(keys, direction: str) -> ir.Value:
  """``x <direction> y`` lexicographically over ``keys`` (the first key is primary)."""
  result = None
  for xk, yk, compare_type in reversed(keys):
    strict = _compare(xk, yk, direction, compare_type)
    if result is None:
      result = strict
    else:
      result = hlo.or_(strict, hlo.and_(_compare(xk, yk, "EQ", compare_type), result))
  return result


def _build_sort(operands, avals, dimension, is_stable, num_keys, direction="LT"):
  """A ``stablehlo.sort`` of ``operands`` whose comparator orders by the first ``num_keys``
  operands (ascending for ``LT``, descending for ``GT``)."""
  op = hlo.SortOp([xla.aval_to_ir_type(a) for a in avals], list(operands),
                  dimension=xla.i64_attr(dimension), is_stable=ir.BoolAttr.get(is_stable))
  scalar_types = []
  for a in avals:
    scalar_types += [_scalar_type(a.dtype)] * 2
  block = op.comparator.blocks.append(*scalar_types)
  with ir.InsertionPoint(block):
    args = list(block.arguments)
    keys = []
    for i in range(num_keys):
      keys += _sort_keys(args[2 * i], args[2 * i + 1], avals[i].dtype)
    hlo.return_([_lexicographic(keys, direction)])
  return list(op.results)


def _sort_lowering(ctx, *operands, dimension, is_stable, num_keys):
  return _build_sort(operands, ctx.avals_in, dimension, is_stable, num_keys)

xla.register_lowering(sort_p, _sort_lowering)


def _take_along(t, indices, axis):
  """``t`` permuted along ``axis`` by ``indices`` (``indices`` has ``t``'s shape except
  along ``axis``): a gather whose other dimensions are batch dimensions, so it transposes
  into a scatter-add."""
  ndim = get_aval(t).ndim
  others = tuple(d for d in range(ndim) if d != axis)
  dnums = indexing.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=others, start_indices_batching_dims=others)
  return indexing.gather(t, expand_dims(indices, (ndim,)), dnums, (1,) * ndim,
                         mode=indexing.GatherScatterMode.PROMISE_IN_BOUNDS)


def _index_dtype_for(size):
  if type(size) is not int:  # a symbolic size: the default integer, as JAX's
    return dtypes.canonicalize_dtype(np.int64)
  return dtypes.int32 if size <= np.iinfo(np.int32).max else dtypes.canonicalize_dtype(
      np.int64)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  # Sort an iota along with the operands to learn the permutation, then move every tangent
  # with it.
  shape = get_aval(primals[0]).shape
  iota = broadcasted_iota(_index_dtype_for(shape[dimension]), shape, dimension)
  *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                            num_keys=num_keys)
  t_outs = [ad.Zero.from_primal_value(o) if type(t) is ad.Zero or not
            dtypes.is_inexact(get_aval(o).dtype) else _take_along(t, perm, dimension)
            for o, t in zip(outs, tangents)]
  return outs, t_outs

ad.primitive_jvps[sort_p] = _sort_jvp


def _sort_batch_rule(vals, dims, *, dimension, is_stable, num_keys):
  # Operands are sorted together, so they need equal shapes: unbatched ones are broadcast
  # along the first batched operand's batch dimension.
  bdim, prototype = next((d, v) for v, d in zip(vals, dims) if d is not None)
  shape = get_aval(prototype).shape
  others = tuple(i for i in range(len(shape)) if i != bdim)
  operands = [broadcast_in_dim(v, shape, others) if d is None else
              batching.moveaxis(v, d, bdim) for v, d in zip(vals, dims)]
  outs = sort_p.bind(*operands, dimension=dimension + (dimension >= bdim),
                     is_stable=is_stable, num_keys=num_keys)
  return outs, [bdim] * len(outs)

batching.primitive_batchers[sort_p] = _sort_batch_rule


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """Sorts ``operand`` along ``dimension`` in ascending order.

  For floats, -0.0 and 0.0 compare equal and NaNs sort last. ``operand`` may be a sequence
  of arrays of one shape: they are sorted together, ordered lexicographically by the first
  ``num_keys`` of them, and a tuple is returned. An out-of-range ``dimension`` raises
  ``ValueError``. Differentiable (the tangent is permuted like the values); batches under
  ``vmap``.

  Args:
    operand: an array, or a sequence of arrays of the same shape.
    dimension: the dimension to sort along (negative counts from the end).
    is_stable: if True, equal keys keep their order.
    num_keys: how many leading operands act as sort keys.

  Returns:
    The sorted array, or a tuple of sorted arrays for a sequence operand.

  Examples:
    >>> lax.sort(jnp.array([3., jnp.nan, -1., 2.]))
    Array([-1.,  2.,  3., nan], dtype=float32)
    >>> lax.sort((jnp.array([2, 1, 2]), jnp.array([0., 5., -1.])), num_keys=2)
    (Array([1, 2, 2], dtype=int32), Array([ 5., -1.,  0.], dtype=float32))
  """
  if isinstance(operand, (list, tuple)):
    if not operand:
      raise TypeError("sort requires at least one operand")
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                       f"operands ({len(operand)})")
    ndim = get_aval(operand[0]).ndim
    dimension = canonicalize_axis(dimension, ndim, "sort")
    return tuple(sort_p.bind(*operand, dimension=dimension, is_stable=bool(is_stable),
                             num_keys=int(num_keys)))
  if num_keys != 1:
    raise ValueError(f"sort: num_keys={num_keys} must be 1 for a single operand")
  dimension = canonicalize_axis(dimension, get_aval(operand).ndim, "sort")
  return sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
  """Sorts ``keys`` along ``dimension`` and permutes ``values`` the same way.

  Args:
    keys: the array sorted by.
    values: an array of ``keys``'s shape, carried along.
    dimension: the dimension to sort along.
    is_stable: if True, equal keys keep their order.

  Returns:
    A pair ``(sorted_keys, permuted_values)``.

  Examples:
    >>> lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([10, 20, 30]))
    (Array([1, 2, 3], dtype=int32), Array([20, 30, 10], dtype=int32))
  """
  dimension = canonicalize_axis(dimension, get_aval(keys).ndim, "sort_key_val")
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=bool(is_stable), num_keys=1)
  return k, v


# --- top_k -------------------------------------------------------------------------------

def _top_k_shape_rule(operand, *, k, axis, is_stable):
  if operand.ndim == 0:
    raise TypeError(f"top_k requires an operand of rank at least 1, got {operand.str_short()}")
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"top_k: axis {axis} is out of range for {operand.str_short()}")
  if k < 0:
    raise ValueError(f"top_k: k must be non-negative, got k={k}")
  if k > operand.shape[axis]:
    raise ValueError(f"top_k: k={k} must be no larger than the size of axis {axis} of "
                     f"{operand.str_short()}")
  if operand.shape[axis] > np.iinfo(np.int32).max:
    raise ValueError(f"top_k returns int32 indices, which will overflow: axis {axis} of "
                     f"{operand.str_short()} is too large")
  shape = list(operand.shape)
  shape[axis] = k
  return [tuple(shape)] * 2


def _top_k_dtype_rule(operand, **params):
  if dtypes.is_complex(operand.dtype) or operand.dtype == dtypes.float0:
    raise TypeError(f"top_k does not accept {operand.dtype.name} operands")
  return [operand.dtype, dtypes.int32]


def _top_k_weak_rule(operand, **params):
  return [operand.weak_type, False]


top_k_p = standard_primitive(_top_k_shape_rule, _top_k_dtype_rule, "top_k",
                             weak_type_rule=_top_k_weak_rule, multiple_results=True)


def _top_k_lowering(ctx, operand, *, k, axis, is_stable):
  # chlo.top_k along the last axis, as JAX lowers it: XLA's CPU backend runs it as one
  # partial-selection kernel, where a full sort of (operand, iota) then a slice costs
  # O(n log n) per row (120x slower on f32[64, 16384], k=8) and a comparator to compile.
  ndim = ctx.avals_in[0].ndim
  perm = None
  if axis != ndim - 1:
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    operand = hlo.transpose(operand, xla.dense_i64(perm))
  results = list(chlo.top_k(operand, k))
  if perm is not None:
    results = [hlo.transpose(r, xla.dense_i64(perm)) for r in results]
  return results

xla.register_lowering(top_k_p, _top_k_lowering)


def _top_k_jvp(primals, tangents, *, k, axis, is_stable):
  (operand,), (t,) = primals, tangents
  values, indices = top_k_p.bind(operand, k=k, axis=axis, is_stable=is_stable)
  if type(t) is ad.Zero or not dtypes.is_inexact(get_aval(operand).dtype):
    t_values = ad.Zero.from_primal_value(values)
  else:
    t_values = _take_along(t, indices, axis)
  return [values, indices], [t_values, ad.Zero.from_primal_value(indices)]

ad.primitive_jvps[top_k_p] = _top_k_jvp


def _top_k_batch_rule(vals, dims, *, k, axis, is_stable):
  # top_k takes its axis as a parameter, so the batch dimension can stay where it is.
  (operand,), (bdim,) = vals, dims
  outs = top_k_p.bind(operand, k=k, axis=axis + (axis >= bdim), is_stable=is_stable)
  return outs, [bdim, bdim]

batching.primitive_batchers[top_k_p] = _top_k_batch_rule


def top_k(operand, k: int, *, axis: int = -1, is_stable: bool = True):
  """The ``k`` largest entries along ``axis`` and their indices.

  Entries come in descending order; equal entries in index order, and NaN counts as the
  largest. ``k`` larger than the axis raises ``ValueError``. Differentiable in the values
  (the gradient flows to the selected entries).

  Args:
    operand: input array.
    k: how many entries to keep (static).
    axis: keyword-only; the dimension searched (default the last).
    is_stable: keyword-only; if True, ties keep index order.

  Returns:
    A pair ``(values, indices)``, with ``axis`` of size ``k``; indices are int32.

  Examples:
    >>> lax.top_k(jnp.array([1., 5., 3., 5.]), 2)
    (Array([5., 5.], dtype=float32), Array([1, 3], dtype=int32))
  """
  try:
    k = operator.index(k)  # a float k is an error (as JAX), not silently truncated
  except TypeError:
    raise TypeError(f"top_k: k must be a static integer, got {k!r} of type "
                    f"{type(k).__name__}") from None
  if k < 0:
    raise ValueError(f"top_k: k must be non-negative, got k={k}")
  aval = get_aval(operand)
  if aval.ndim == 0:
    raise TypeError(f"top_k requires an operand of rank at least 1, got {aval.str_short()}")
  axis = canonicalize_axis(axis, aval.ndim, "top_k")
  values, indices = top_k_p.bind(operand, axis=axis, is_stable=bool(is_stable), k=k)
  return values, indices


# --- approx_max_k / approx_min_k ---------------------------------------------------------
# TPUs have an approximate top-k; elsewhere (as JAX's CPU fallback) the answer is the exact
# one: a stable sort of (operand, iota) along the reduction dimension, then a slice. The
# recall target is accepted and has nothing to trade off here. With
# ``aggregate_to_topk=False`` the result keeps the partial reduction's size (XLA's rule, for
# a later exact top-k over several shards): the best of them, sorted.

def _approx_top_k_shape_rule(operand, *, k, reduction_dimension, recall_target, is_max_k,
                             reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"approx_top_k: k must be positive, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got "
                    f"{operand.str_short()}")
  if operand.shape[reduction_dimension] < k:
    raise ValueError(f"approx_top_k: k must be smaller than the size of reduction_dim "
                     f"{operand.shape[reduction_dimension]}, got {k}")
  shape = list(operand.shape)
  shape[reduction_dimension] = k if aggregate_to_topk else client.approx_top_k_output_size(
      shape[reduction_dimension], operand.ndim, k, recall_target, False,
      reduction_input_size_override)
  return [tuple(shape)] * 2


def _approx_top_k_dtype_rule(operand, **params):
  if not dtypes.is_float(operand.dtype):
    raise ValueError(f"approx_top_k: operand must be a floating type, got "
                     f"{operand.str_short()}")
  return [operand.dtype, dtypes.int32]


approx_top_k_p = standard_primitive(_approx_top_k_shape_rule, _approx_top_k_dtype_rule,
                                    "approx_top_k", weak_type_rule=_top_k_weak_rule,
                                    multiple_results=True)


def _approx_top_k_lowering(ctx, operand, *, k, reduction_dimension, is_max_k, **params):
  aval = ctx.avals_in[0]
  axis = reduction_dimension
  iota_aval = aval.update(dtype=dtypes.int32, weak_type=False)
  iota = hlo.iota(xla.aval_to_ir_type(iota_aval), xla.i64_attr(axis))
  values, indices = _build_sort([operand, iota], [aval, iota_aval], axis, True, 1,
                                direction="GT" if is_max_k else "LT")
  limit = list(aval.shape)
  limit[axis] = ctx.avals_out[0].shape[axis]  # k, or the partial reduction's size
  start, strides = [0] * aval.ndim, [1] * aval.ndim
  return [hlo.slice(x, xla.dense_i64(start), xla.dense_i64(limit), xla.dense_i64(strides))
          for x in (values, indices)]

xla.register_lowering(approx_top_k_p, _approx_top_k_lowering)


def _approx_top_k_jvp(primals, tangents, **params):
  (operand,), (t,) = primals, tangents
  values, indices = approx_top_k_p.bind(operand, **params)
  if type(t) is ad.Zero:
    t_values = ad.Zero.from_primal_value(values)
  else:
    t_values = _take_along(t, indices, params["reduction_dimension"])
  return [values, indices], [t_values, ad.Zero.from_primal_value(indices)]

ad.primitive_jvps[approx_top_k_p] = _approx_top_k_jvp


def _approx_top_k_batch_rule(vals, dims, *, reduction_dimension, **params):
  (operand,), (bdim,) = vals, dims
  dim = reduction_dimension + (reduction_dimension >= bdim)
  return approx_top_k_p.bind(operand, reduction_dimension=dim, **params), [bdim, bdim]

batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch_rule


def _approx_top_k(name, is_max_k, operand, k, reduction_dimension, recall_target,
                  reduction_input_size_override, aggregate_to_topk):
  if not 0 < recall_target <= 1:
    raise ValueError(f"{name}: recall_target must be in (0, 1], got {recall_target}")
  aval = get_aval(operand)
  if aval.ndim == 0:
    raise TypeError(f"{name} operand must have >= 1 dimension, got {aval.str_short()}")
  dim = canonicalize_axis(reduction_dimension, aval.ndim, name)
  return tuple(approx_top_k_p.bind(
      operand, k=int(k), reduction_dimension=dim, recall_target=float(recall_target),
      is_max_k=is_max_k, reduction_input_size_override=int(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk)))


def approx_max_k(operand, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True):
  """The ``k`` largest values along ``reduction_dimension`` and their indices.

  On TPUs this may be approximate; on the backends hlox runs here the result is exact, and
  ``recall_target``, ``reduction_input_size_override`` and ``aggregate_to_topk`` are accepted
  for compatibility. Values come in descending order.

  Args:
    operand: input array.
    k: how many entries to keep (static).
    reduction_dimension: the dimension searched (default the last).
    recall_target: requested recall of the approximation.
    reduction_input_size_override: size assumed for the recall computation (-1: actual).
    aggregate_to_topk: if True, return exactly ``k`` entries.

  Returns:
    A pair ``(values, indices)``; indices are int32.

  Examples:
    >>> lax.approx_max_k(jnp.array([1., 5., 3., 4.]), 2)
    (Array([5., 4.], dtype=float32), Array([1, 3], dtype=int32))
  """
  return _approx_top_k("approx_max_k", True, operand, k, reduction_dimension, recall_target,
                       reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True):
  """The ``k`` smallest values along ``reduction_dimension`` and their indices.

  On TPUs this may be approximate; on the backends hlox runs here the result is exact, and
  ``recall_target``, ``reduction_input_size_override`` and ``aggregate_to_topk`` are accepted
  for compatibility. Values come in ascending order.

  Args:
    operand: input array.
    k: how many entries to keep (static).
    reduction_dimension: the dimension searched (default the last).
    recall_target: requested recall of the approximation.
    reduction_input_size_override: size assumed for the recall computation (-1: actual).
    aggregate_to_topk: if True, return exactly ``k`` entries.

  Returns:
    A pair ``(values, indices)``; indices are int32.

  Examples:
    >>> lax.approx_min_k(jnp.array([1., 5., 3., 4.]), 2)
    (Array([1., 3.], dtype=float32), Array([0, 2], dtype=int32))
  """
  return _approx_top_k("approx_min_k", False, operand, k, reduction_dimension, recall_target,
                       reduction_input_size_override, aggregate_to_topk)


__all__ += ["approx_max_k", "approx_min_k", "approx_top_k_p"]


sharding_types.sharding_rules[sort_p] = sharding_types.sort_rule


sharding_types.sharding_rules[top_k_p] = sharding_types.top_k_rule
