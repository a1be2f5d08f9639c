"""Shape primitives: iota, broadcast_in_dim, reshape, transpose, squeeze, rev, pad,
concatenate and slice, with the functions built from them (``broadcast``, ``expand_dims``,
``slice_in_dim``, ``index_in_dim``, ``collapse``, ``full``, ...).

Every primitive here only moves or replicates elements, so each keeps its operand's dtype
and weak type; the shape rules check their static parameters and say what is wrong.

``broadcast_in_dim``, ``broadcast``, ``reshape``, ``transpose``, ``full`` and ``full_like``
live in ``hlox.lax.base`` (every primitive's rules need them) and are re-exported here.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.dims import dilate_dim, stride_dim
from hlox.core.shape_poly import canonical_dim, dimension_as_value
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, cost, xla
from hlox.lax.base import (_check_shapelike, _is_array, _keep_dtype, _keep_weak, _shape_tuple,
                           _static_dims, _static_ints, broadcast, broadcast_in_dim, broadcast_in_dim_p,
                           convert_element_type, full, full_like, reduce_sum, reshape,
                           reshape_p, transpose, transpose_p)
from hlox.lax.elementwise import _operands, select, sub
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.utils import shape_str, standard_primitive
from hlox.core.extended_functions import refused as _refused

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["broadcast_to_rank", "iota", "broadcasted_iota", "broadcast_in_dim", "broadcast", "reshape",
           "transpose", "squeeze", "expand_dims", "rev", "pad", "concatenate", "slice",
           "slice_in_dim", "index_in_dim", "split", "collapse", "full", "full_like",
           "zeros_like_array",
           "iota_p", "broadcast_in_dim_p", "reshape_p", "transpose_p", "squeeze_p", "rev_p",
           "pad_p", "concatenate_p", "slice_p",
           "split_p", "stack", "stack_p", "unstack", "unstack_p", "tile", "tile_p",
           "broadcast_shapes", "broadcast_like", "empty", "shape_as_value"]


# --- iota --------------------------------------------------------------------------------

def _iota_shape_rule(*, dtype, shape, dimension, sharding=None):
  _check_shapelike("iota", "shape", shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"iota: shape {shape} has negative dimensions")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota: dimension {dimension} is out of range for shape {shape} "
                     f"(must be in [0, {len(shape)}))")
  return tuple(shape)


def _iota_dtype_rule(*, dtype, shape, dimension, sharding=None):
  dtype = np.dtype(dtype)
  if not (dtypes.is_int(dtype) or dtypes.is_inexact(dtype)):
    raise TypeError(f"iota does not accept dtype {dtype.name}; use an integer, floating or "
                    "complex dtype")
  return dtype


iota_p = standard_primitive(_iota_shape_rule, _iota_dtype_rule, "iota")

def _iota_lowering(ctx, *, dtype, shape, dimension, sharding=None):
  aval_out = ctx.avals_out[0]
  if dtypes.is_complex(aval_out.dtype) or aval_out.dtype in dtypes.float8_dtypes:
    # stablehlo.iota has no complex form (and CPU none for 8-bit floats): count in a wider
    # real type, then convert.
    wide = np.finfo(aval_out.dtype).dtype if dtypes.is_complex(aval_out.dtype) \
        else dtypes.float32
    x = hlo.iota(xla.aval_to_ir_type(aval_out.update(dtype=wide)), xla.i64_attr(dimension))
    return hlo.convert(xla.aval_to_ir_type(aval_out), x)
  return xla.iota(aval_out, dimension)

xla.register_lowering(iota_p, _iota_lowering)
ad.defjvp_zero(iota_p)  # no inputs: nothing to differentiate
# iota has no operands, so it is never batched: vmap binds it on the parent trace.


def iota(dtype, size: int):
  """``[0, 1, ..., size - 1]`` as a 1-d array of ``dtype``.

  Args:
    dtype: the element dtype.
    size: the length (static).

  Returns:
    A 1-d array of ``dtype``.

  Examples:
    >>> lax.iota(jnp.int32, 4)
    Array([0, 1, 2, 3], dtype=int32)
  """
  return broadcasted_iota(dtypes.check_user_dtype(dtype, "iota", user_only=True), (size,), 0)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
  """An array of ``shape`` whose entries count up along ``dimension``.

  Each entry equals its own index along ``dimension``.

  Args:
    dtype: the element dtype.
    shape: the result shape (static).
    dimension: the dimension that counts.
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> lax.broadcasted_iota(jnp.int32, (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
  """
  dtype = dtypes.check_user_dtype(dtype, "broadcasted_iota", user_only=True)
  shape = _shape_tuple("broadcasted_iota", shape)
  try:
    dimension = operator.index(dimension)
  except TypeError:
    raise TypeError(f"broadcasted_iota: dimension must be a static integer, got "
                    f"{dimension!r}") from None
  return apply_out_sharding(iota_p.bind(dtype=dtype, shape=shape, dimension=dimension,
                                        sharding=None), out_sharding, "broadcasted_iota")


# --- squeeze / expand_dims ---------------------------------------------------------------

def _squeeze_shape_rule(operand, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"squeeze: dimensions are not unique: {dimensions}")
  if any(not 0 <= d < operand.ndim for d in dimensions):
    raise ValueError(f"squeeze: dimensions {dimensions} out of range for operand "
                     f"{operand.str_short()}")
  bad = [d for d in dimensions if operand.shape[d] != 1]
  if bad:
    raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not "
                     f"equal to one: dimensions {tuple(bad)} of operand {operand.str_short()}")
  return tuple(s for i, s in enumerate(operand.shape) if i not in dimensions)


squeeze_p = standard_primitive(_squeeze_shape_rule, _keep_dtype, "squeeze",
                               weak_type_rule=_keep_weak)

def _squeeze_lowering(ctx, x, *, dimensions):
  return xla.reshape(x, ctx.avals_out[0])

xla.register_lowering(squeeze_p, _squeeze_lowering)
# Squeezing only drops size-1 dimensions, so a reshape puts them back.
ad.deflinear(squeeze_p, lambda ct, operand, *, dimensions: [reshape(ct, operand.aval.shape)])

def _squeeze_batch_rule(vals, dims, *, dimensions):
  operand, = vals
  bdim, = dims
  new_dims = tuple(d + (d >= bdim) for d in dimensions)
  out_bdim = bdim - builtins.sum(d < bdim for d in new_dims)
  return squeeze_p.bind(operand, dimensions=new_dims), out_bdim

batching.primitive_batchers[squeeze_p] = _squeeze_batch_rule


def squeeze(array, dimensions):
  """Removes the given size-1 dimensions.

  Negative dimensions count from the end; a listed dimension whose size is not 1 raises
  ``ValueError``.

  Args:
    array: input array.
    dimensions: the dimensions to remove (static).

  Returns:
    The array without those dimensions.

  Examples:
    >>> lax.squeeze(jnp.ones((1, 3, 1)), (0, 2)).shape
    (3,)
  """
  try:
    ndim = get_aval(array).ndim
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "squeeze", array, dimensions)
  dims = []
  for d in _static_ints("squeeze", "dimensions", dimensions):
    if not -ndim <= d < ndim:
      raise ValueError(f"squeeze: axis {d} is out of bounds for array of dimension {ndim}")
    dims.append(d % ndim)
  dims = tuple(sorted(dims))
  if not dims and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
  """Inserts size-1 dimensions at the given positions of the result.

  Args:
    array: input array.
    dimensions: positions of the new dimensions in the result (static).

  Returns:
    The array with the new dimensions.

  Examples:
    >>> lax.expand_dims(jnp.array([1, 2]), (0, 2)).shape
    (1, 2, 1)
  """
  dimensions = _static_ints("expand_dims", "dimensions", dimensions)
  try:
    aval = get_aval(array)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "expand_dims", array, dimensions)
  ndim_out = aval.ndim + len(dimensions)
  dims = []
  for d in dimensions:
    if not -ndim_out <= d < ndim_out:
      raise ValueError(f"expand_dims: dimension {d} out of range for a result of rank "
                       f"{ndim_out}")
    dims.append(d % ndim_out)
  if len(set(dims)) != len(dims):
    raise ValueError(f"expand_dims: repeated dimensions {dimensions}")
  shape = list(aval.shape)
  for d in sorted(dims):
    shape.insert(d, 1)
  kept = [i for i in range(ndim_out) if i not in dims]
  return broadcast_in_dim(array, shape, kept)


# --- rev ---------------------------------------------------------------------------------

def _rev_shape_rule(operand, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"rev: dimensions {dimensions} are not unique")
  if any(not 0 <= d < operand.ndim for d in dimensions):
    raise ValueError(f"rev: dimensions {dimensions} out of range for operand "
                     f"{operand.str_short()}")
  return operand.shape


rev_p = standard_primitive(_rev_shape_rule, _keep_dtype, "rev", weak_type_rule=_keep_weak)

def _rev_lowering(ctx, x, *, dimensions):
  return hlo.reverse(x, xla.dense_i64(dimensions))

xla.register_lowering(rev_p, _rev_lowering)
ad.deflinear(rev_p, lambda ct, operand, *, dimensions: [rev(ct, dimensions)])

def _rev_batch_rule(vals, dims, *, dimensions):
  operand, = vals
  bdim, = dims
  return rev_p.bind(operand, dimensions=tuple(d + (d >= bdim) for d in dimensions)), bdim

batching.primitive_batchers[rev_p] = _rev_batch_rule


def rev(operand, dimensions):
  """Reverses ``operand`` along each of ``dimensions``.

  Args:
    operand: input array.
    dimensions: the dimensions to reverse (static).

  Returns:
    The reversed array.

  Examples:
    >>> lax.rev(jnp.arange(4).reshape(2, 2), (0, 1))
    Array([[3, 2],
           [1, 0]], dtype=int32)
  """
  dimensions = _static_ints("rev", "dimensions", dimensions)
  if not dimensions and _is_array(operand):
    return operand
  try:
    return rev_p.bind(operand, dimensions=dimensions)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "rev", operand, dimensions)


# --- pad ---------------------------------------------------------------------------------

def _pad_shape_rule(operand, padding_value, *, padding_config):
  if padding_value.ndim != 0:
    raise ValueError(f"pad: padding_value must be a scalar; got {padding_value.str_short()}")
  if len(padding_config) != operand.ndim:
    raise ValueError(f"pad: length of padding_config must equal the number of axes of "
                     f"operand, got padding_config {padding_config} for operand "
                     f"{operand.str_short()} (one (low, high, interior) triple per dimension)")
  if any(i < 0 for _, _, i in padding_config):
    raise ValueError(f"pad: interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  result = tuple(lo + hi + (d + (d - 1) * interior if d else 0) if type(d) is int else
                 lo + hi + dilate_dim(d, interior + 1)
                 for (lo, hi, interior), d in zip(padding_config, operand.shape))
  if any(d < 0 for d in result):
    raise ValueError(f"pad: Dimension size after padding is not at least 0, got result shape "
                     f"{result}, for padding_config {padding_config} and operand "
                     f"{operand.str_short()} (negative padding removes more than there is)")
  return result


def _pad_dtype_rule(operand, padding_value, *, padding_config):
  if operand.dtype != padding_value.dtype:
    raise TypeError(f"pad: operand and padding_value must have the same dtype, got "
                    f"{shape_str((operand, padding_value))}")
  return operand.dtype


pad_p = standard_primitive(_pad_shape_rule, _pad_dtype_rule, "pad")  # weak only if both are

def _pad_lowering(ctx, x, padding_value, *, padding_config):
  low, high, interior = zip(*padding_config) if padding_config else ((), (), ())
  return xla.pad(x, padding_value, ctx.avals_out[0], low, high, interior)

xla.register_lowering(pad_p, _pad_lowering)

def _pad_transpose(ct, operand, padding_value, *, padding_config):
  # The operand's cotangent is the non-padding part of ``ct``: undo the edge padding (a
  # negative low/high padding cropped elements, whose cotangent is zero), then take every
  # ``interior + 1``-th element. The padding value fed every other output element, so its
  # cotangent is the sum of the rest of ``ct``.
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  zero = np.zeros((), get_aval(ct).dtype)[()]
  unpadded = pad(ct, zero, tuple((-a, -b, 0) for a, b in zip(lo, hi)))
  ct_operand = slice(unpadded, (0,) * len(lo), get_aval(unpadded).shape,
                     tuple(i + 1 for i in interior))
  ct_padding = None
  if ad.is_undefined_primal(padding_value):
    axes = tuple(range(len(lo)))
    ct_padding = sub(reduce_sum(ct, axes), reduce_sum(ct_operand, axes))
  return [ct_operand if ad.is_undefined_primal(operand) else None, ct_padding]

ad.deflinear(pad_p, _pad_transpose)

def _pad_batch_rule(vals, dims, *, padding_config):
  operand, padding_value = vals
  operand_bdim, value_bdim = dims
  if value_bdim is None:
    config = padding_config[:operand_bdim] + ((0, 0, 0),) + padding_config[operand_bdim:]
    return pad_p.bind(operand, padding_value, padding_config=config), operand_bdim
  # One padding value per batch element: pad with anything, then select the padding
  # positions (found by padding a mask the same way) from the broadcast values.
  size = get_aval(padding_value).shape[value_bdim]
  bdim = 0 if operand_bdim is None else operand_bdim
  operand = batching.matchaxis(operand, operand_bdim, bdim, size)
  config = padding_config[:bdim] + ((0, 0, 0),) + padding_config[bdim:]
  aval = get_aval(operand)
  zero = np.zeros((), aval.dtype)[()]
  padded = pad_p.bind(operand, zero, padding_config=config)
  out_shape = get_aval(padded).shape
  inside = pad_p.bind(broadcast_in_dim(np.True_, aval.shape, ()), np.False_,
                      padding_config=config)
  values = broadcast_in_dim(batching.moveaxis(padding_value, value_bdim, 0), out_shape,
                            (bdim,))
  out = select(inside, padded, values)
  if aval.weak_type and not get_aval(out).weak_type:
    out = convert_element_type(out, aval.dtype, weak_type=True)  # pad keeps the operand's
  return out, bdim

batching.primitive_batchers[pad_p] = _pad_batch_rule


def pad(operand, padding_value, padding_config):
  """Pads ``operand`` with ``padding_value`` at the edges and between elements.

  ``padding_config`` holds one ``(low, high, interior)`` triple per dimension: ``low`` and
  ``high`` elements are added at the start and end, ``interior`` between neighbouring
  elements. Negative ``low``/``high`` remove elements from the edges. ``padding_value`` must
  be a scalar of ``operand``'s dtype (else ``TypeError``). Linear in both operands.

  Args:
    operand: input array.
    padding_value: scalar fill value (may be traced).
    padding_config: a ``(low, high, interior)`` triple per dimension (static).

  Returns:
    The padded array.

  Examples:
    >>> lax.pad(jnp.array([1, 2, 3]), 0, [(1, 2, 1)])
    Array([0, 1, 0, 2, 0, 3, 0, 0], dtype=int32)
    >>> lax.pad(jnp.array([1, 2, 3]), 0, [(-1, 0, 0)])
    Array([2, 3], dtype=int32)
  """
  try:
    try:
      config = tuple((operator.index(lo), operator.index(hi), operator.index(interior))
                     for lo, hi, interior in padding_config)
    except TypeError:  # symbolic paddings (shape polymorphism) stay as they are
      config = tuple(tuple(map(canonical_dim, triple)) for triple in padding_config)
      if any(len(t) != 3 for t in config):
        raise ValueError from None
  except (TypeError, ValueError):
    raise TypeError(f"pad: padding_config must be a sequence of (low, high, interior) "
                    f"integer triples, got {padding_config!r}") from None
  # A Python scalar stays weak, as in JAX.
  operand, padding_value = _operands("pad", operand, padding_value)
  return pad_p.bind(operand, padding_value, padding_config=config)


# --- concatenate -------------------------------------------------------------------------

def _concatenate_shape_rule(*operands, dimension):
  if not operands:
    raise TypeError("concatenate: expected at least one operand")
  if len({o.ndim for o in operands}) != 1:
    raise TypeError(f"concatenate: operands must have the same rank, got "
                    f"{shape_str(operands)}")
  ndim = operands[0].ndim
  if not 0 <= dimension < ndim:
    raise TypeError(f"concatenate: dimension {dimension} out of range for operands "
                    f"{shape_str(operands)}")
  rest = {o.shape[:dimension] + o.shape[dimension + 1:] for o in operands}
  if len(rest) != 1:
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {', '.join(str(o.shape) for o in operands)}.")
  shape = operands[0].shape
  return shape[:dimension] + (sum(o.shape[dimension] for o in operands),) + \
      shape[dimension + 1:]


def _concatenate_dtype_rule(*operands, dimension):
  if len({o.dtype for o in operands}) != 1:
    raise TypeError(f"concatenate: operands must have the same dtype, got "
                    f"{shape_str(operands)} (hlox.numpy.concatenate promotes)")
  return operands[0].dtype


concatenate_p = standard_primitive(_concatenate_shape_rule, _concatenate_dtype_rule,
                                   "concatenate")

def _concatenate_lowering(ctx, *xs, dimension):
  return hlo.concatenate(list(xs), xla.i64_attr(dimension))

xla.register_lowering(concatenate_p, _concatenate_lowering)

def _concatenate_transpose(ct, *operands, dimension):
  cts, start = [], 0
  for o in operands:
    size = (o.aval if ad.is_undefined_primal(o) else get_aval(o)).shape[dimension]
    cts.append(slice_in_dim(ct, start, start + size, 1, dimension)
               if ad.is_undefined_primal(o) else None)
    start += size
  return cts

ad.deflinear(concatenate_p, _concatenate_transpose)

def _concatenate_batch_rule(vals, dims, *, dimension):
  # All operands take the batch dimension of the first batched one (unbatched operands are
  # broadcast along it); the joined dimension shifts past it.
  bdim = next(d for d in dims if d is not None)
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  operands = [batching.matchaxis(v, d, bdim, size) for v, d in zip(vals, dims)]
  return concatenate_p.bind(*operands, dimension=dimension + (dimension >= bdim)), bdim

batching.primitive_batchers[concatenate_p] = _concatenate_batch_rule


def concatenate(operands, dimension: int):
  """Joins ``operands`` along an existing dimension.

  All operands must have the same dtype and rank and equal sizes in the other dimensions
  (else ``TypeError``); unlike ``jnp.concatenate`` nothing is promoted.

  Args:
    operands: a sequence of arrays.
    dimension: the dimension to join along (static).

  Returns:
    The concatenated array.

  Examples:
    >>> lax.concatenate([jnp.array([1, 2]), jnp.array([3])], 0)
    Array([1, 2, 3], dtype=int32)
  """
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate: requires a non-empty sequence of arrays")
  dimension = operator.index(dimension)
  if len(operands) == 1 and _is_array(operands[0]):
    aval = operands[0].aval
    _concatenate_shape_rule(aval, dimension=dimension)
    return operands[0]
  try:
    return concatenate_p.bind(*operands, dimension=dimension)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "concatenate", operands, dimension)


# --- slice -------------------------------------------------------------------------------

def _slice_shape_rule(operand, *, start_indices, limit_indices, strides):
  ndim = operand.ndim
  if len(start_indices) != ndim or len(limit_indices) != ndim:
    raise TypeError(f"slice: start_indices {start_indices} and limit_indices "
                    f"{limit_indices} must have one entry per dimension of operand "
                    f"{operand.str_short()}")
  if any(s < 0 for s in start_indices):
    raise TypeError(f"slice: start_indices {start_indices} must be non-negative")
  if any(lim > d for lim, d in zip(limit_indices, operand.shape)):
    raise TypeError(f"slice: limit_indices {limit_indices} exceed operand shape "
                    f"{operand.shape}")
  if any(lim < s for s, lim in zip(start_indices, limit_indices)):
    raise TypeError(f"slice: limit_indices {limit_indices} must not be less than "
                    f"start_indices {start_indices}")
  if strides is None:
    strides = (1,) * ndim
  if len(strides) != ndim:
    raise TypeError(f"slice: strides {strides} must have one entry per dimension of operand "
                    f"{operand.str_short()}")
  if any(s <= 0 for s in strides):
    raise TypeError(f"slice: strides must be positive, got {strides}")
  if all(type(d) is int for d in (*start_indices, *limit_indices, *strides)):
    return tuple((lim - s + st - 1) // st if lim > s else 0
                 for s, lim, st in zip(start_indices, limit_indices, strides))
  # Symbolic bounds: JAX's form of the count, so that equal sizes print (and compare) alike.
  return tuple(lim - s if st == 1 else stride_dim(lim - s, 1, st)
               for s, lim, st in zip(start_indices, limit_indices, strides))


slice_p = standard_primitive(_slice_shape_rule, _keep_dtype, "slice",
                             weak_type_rule=_keep_weak)

def _slice_lowering(ctx, x, *, start_indices, limit_indices, strides):
  strides = (1,) * len(start_indices) if strides is None else strides
  return xla.slice_op(x, ctx.avals_out[0], start_indices, limit_indices, strides)

xla.register_lowering(slice_p, _slice_lowering)

def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
  # Put ``ct`` back where the slice read it, zeros elsewhere: low padding up to the start,
  # ``stride - 1`` zeros between elements, and high padding after the last element read.
  shape = operand.aval.shape
  strides = (1,) * len(shape) if strides is None else strides
  out_shape = get_aval(ct).shape
  config = []
  for start, stride, n, size in zip(start_indices, strides, out_shape, shape):
    if type(n) is int:
      end = start + (n - 1) * stride + 1 if n else start
    else:  # a symbolic count may be 0
      end = start + dilate_dim(n, stride)
    config.append((start, size - end, stride - 1))
  return [pad(ct, np.zeros((), get_aval(ct).dtype)[()], config)]

ad.deflinear(slice_p, _slice_transpose)

def _slice_batch_rule(vals, dims, *, start_indices, limit_indices, strides):
  operand, = vals
  bdim, = dims
  size = get_aval(operand).shape[bdim]
  starts = start_indices[:bdim] + (0,) + start_indices[bdim:]
  limits = limit_indices[:bdim] + (size,) + limit_indices[bdim:]
  if strides is not None:
    strides = strides[:bdim] + (1,) + strides[bdim:]
  return slice_p.bind(operand, start_indices=starts, limit_indices=limits,
                      strides=strides), bdim

batching.primitive_batchers[slice_p] = _slice_batch_rule


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (JAX's name)
  """A static strided slice of ``operand``.

  Keeps, in each dimension ``i``, the indices ``start_indices[i] <= j < limit_indices[i]``
  stepping by ``strides[i]``. The bounds are static; see ``dynamic_slice`` for traced starts.

  Args:
    operand: input array.
    start_indices: a start per dimension.
    limit_indices: an exclusive end per dimension.
    strides: optional step per dimension (default 1).

  Returns:
    The sliced array.

  Examples:
    >>> lax.slice(jnp.arange(10), (1,), (8,), (3,))
    Array([1, 4, 7], dtype=int32)
    >>> lax.slice(jnp.arange(12).reshape(3, 4), (0, 1), (2, 3))
    Array([[1, 2],
           [5, 6]], dtype=int32)
  """
  start_indices = _static_dims("slice", "start_indices", start_indices)
  limit_indices = _static_dims("slice", "limit_indices", limit_indices)
  if strides is not None:
    strides = _static_dims("slice", "strides", strides)
  try:
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "slice", operand, start_indices, limit_indices, strides)
  if (_is_array(operand) and start_indices == (0,) * aval.ndim
      and limit_indices == aval.shape and (strides is None or set(strides) <= {1})):
    return operand
  return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices,
                      strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
  """``lax.slice`` along one ``axis``, other dimensions whole.

  ``None`` bounds and negative indices behave as in Python slicing.

  Args:
    operand: input array.
    start_index: start (or None).
    limit_index: exclusive end (or None).
    stride: step.
    axis: the dimension sliced.

  Returns:
    The sliced array.

  Examples:
    >>> lax.slice_in_dim(jnp.arange(10), -3, None)
    Array([7, 8, 9], dtype=int32)
  """
  try:
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "slice_in_dim", operand, start_index, limit_index, stride, axis)
  axis = operator.index(axis)
  if not -aval.ndim <= axis < aval.ndim:
    raise ValueError(f"slice_in_dim: axis {axis} out of range for operand {aval.str_short()}")
  axis %= aval.ndim
  size = aval.shape[axis]
  start = 0 if start_index is None else canonical_dim(start_index)
  limit = size if limit_index is None else canonical_dim(limit_index)
  start = start + size if start < 0 else start
  limit = limit + size if limit < 0 else limit
  starts = [0] * aval.ndim
  limits = list(aval.shape)
  strides = [1] * aval.ndim
  starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
  """Element ``index`` along ``axis``, for a static index.

  Negative indices count from the end.

  Args:
    operand: input array.
    index: a static integer index.
    axis: the dimension indexed.
    keepdims: if True (the default), keep ``axis`` with size 1.

  Returns:
    The indexed slice.

  Examples:
    >>> lax.index_in_dim(jnp.arange(6).reshape(2, 3), 1, axis=1, keepdims=False)
    Array([1, 4], dtype=int32)
  """
  try:
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "index_in_dim", operand, index, axis, keepdims)
  index, axis = canonical_dim(index), operator.index(axis)
  if not -aval.ndim <= axis < aval.ndim:
    raise ValueError(f"index_in_dim: axis {axis} out of range for operand {aval.str_short()}")
  axis %= aval.ndim
  size = aval.shape[axis]
  wrapped = index + size if index < 0 else index
  if (type(wrapped) is int and type(size) is int) and not 0 <= wrapped < size:
    raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} with "
                     f"size {size}")
  result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return result if keepdims else squeeze(result, (axis,))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
  """Merges dimensions ``[start_dimension, stop_dimension)`` into one, row-major.

  Args:
    operand: input array.
    start_dimension: first merged dimension.
    stop_dimension: end of the merged range, exclusive (None: the last dimension included).

  Returns:
    The reshaped array.

  Examples:
    >>> lax.collapse(jnp.ones((2, 3, 4)), 0, 2).shape
    (6, 4)
  """
  shape = get_aval(operand).shape
  lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
  if hi < lo:
    raise ValueError(f"collapse: invalid dimension range [{start_dimension}:{stop_dimension}] "
                     f"for shape {shape}")
  size = math.prod(shape[lo:hi])
  return reshape(operand, shape[:lo] + (size,) + shape[hi:])


# --- filled arrays (``full`` and ``full_like`` are in base) -------------------------------

def zeros_like_array(x):
  """Zeros with the shape and dtype of ``x``."""
  return full_like(x, 0)


def broadcast_to_rank(x, rank: int):
  """Adds leading size-1 dimensions to ``x`` up to ``rank``.

  An ``x`` of rank ``rank`` or more is returned unchanged.

  Args:
    x: input array.
    rank: the target rank.

  Returns:
    ``x`` reshaped to rank ``rank``.

  Examples:
    >>> lax.broadcast_to_rank(jnp.ones(3), 3).shape
    (1, 1, 3)
  """
  ndim = get_aval(x).ndim
  if ndim >= rank:
    return x
  return broadcast(x, (1,) * (rank - ndim))


# --- split, stack, unstack, tile ---------------------------------------------------------
# Each is one primitive (as in JAX) rather than a chain of slices, so a jaxpr shows the
# intent and transposition is a single concatenate / stack / reduce.

def _split_shape_rule(operand, *, sizes, axis):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"split: axis {axis} out of range for operand {operand.str_short()}")
  if any(s < 0 for s in sizes):
    raise ValueError(f"split: Sizes passed to split must be nonnegative, got {sizes} (operand "
                     f"{operand.str_short()}, axis {axis})")
  if builtins.sum(sizes) != operand.shape[axis]:
    raise ValueError(f"split: Sum of sizes {builtins.sum(sizes)} must be equal to dimension "
                     f"{axis} of the operand shape {operand.shape}; sizes {sizes}")
  return [operand.shape[:axis] + (s,) + operand.shape[axis + 1:] for s in sizes]


split_p = standard_primitive(_split_shape_rule,
                             lambda operand, *, sizes, axis: [operand.dtype] * len(sizes),
                             "split", weak_type_rule=_keep_weak, multiple_results=True)

def _split_lowering(ctx, x, *, sizes, axis):
  outs, start = [], 0
  shape = ctx.avals_in[0].shape
  for s in sizes:
    lo = [0] * len(shape)
    hi = list(shape)
    lo[axis], hi[axis] = start, start + s
    outs.append(hlo.slice(x, xla._dense_i64(lo), xla._dense_i64(hi),
                          xla._dense_i64([1] * len(shape))))
    start += s
  return outs

xla.register_lowering(split_p, _split_lowering)

def _split_jvp(primals, tangents, *, sizes, axis):
  outs = split_p.bind(primals[0], sizes=sizes, axis=axis)
  if type(tangents[0]) is ad.Zero:
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  return outs, split_p.bind(tangents[0], sizes=sizes, axis=axis)

ad.primitive_jvps[split_p] = _split_jvp

def _split_transpose(cts, operand, *, sizes, axis):
  shape = operand.aval.shape
  pieces = [full(shape[:axis] + (s,) + shape[axis + 1:], 0, operand.aval.dtype)
            if type(ct) is ad.Zero else ct for ct, s in zip(cts, sizes)]
  return [concatenate(pieces, axis)]

ad.primitive_transposes[split_p] = _split_transpose

def _split_batch_rule(vals, dims, *, sizes, axis):
  (x,), (d,) = vals, dims
  outs = split_p.bind(x, sizes=sizes, axis=axis + (axis >= d))
  return outs, [d] * len(outs)

batching.primitive_batchers[split_p] = _split_batch_rule


def split(operand, sizes, axis: int = 0):
  """Splits ``operand`` along ``axis`` into pieces of the given sizes.

  The sizes must sum to the size of ``axis`` (else ``ValueError``).

  Args:
    operand: input array.
    sizes: the size of each piece (static).
    axis: the dimension split.

  Returns:
    A list of arrays.

  Examples:
    >>> lax.split(jnp.arange(5), (2, 3))
    [Array([0, 1], dtype=int32), Array([2, 3, 4], dtype=int32)]
  """
  aval = get_aval(operand)
  axis = operator.index(axis)
  if not -aval.ndim <= axis < aval.ndim:
    raise ValueError(f"split: axis {axis} is out of bounds for array of dimension "
                     f"{aval.ndim} (operand {aval.str_short()})")
  sizes = _static_ints("split", "sizes", sizes)
  return list(split_p.bind(operand, sizes=sizes, axis=axis % aval.ndim))


def _stack_shape_rule(*operands, axis):
  if not operands:
    raise ValueError("stack: expected at least one operand")
  if len({o.shape for o in operands}) != 1:
    raise TypeError(f"stack: operands must have the same shape, got {shape_str(operands)}")
  shape = operands[0].shape
  if not 0 <= axis <= len(shape):
    raise ValueError(f"stack: axis {axis} out of range for operands {shape_str(operands)}")
  return shape[:axis] + (len(operands),) + shape[axis:]


def _stack_dtype_rule(*operands, axis):
  if len({o.dtype for o in operands}) != 1:
    raise TypeError(f"stack: operands must have the same dtype, got {shape_str(operands)}")
  return operands[0].dtype


stack_p = standard_primitive(_stack_shape_rule, _stack_dtype_rule, "stack")

def _stack_lowering(ctx, *xs, axis):
  shape = ctx.avals_in[0].shape
  piece = ctx.avals_in[0].update(shape=shape[:axis] + (1,) + shape[axis:])
  parts = [hlo.reshape(xla.aval_to_ir_type(piece), x) for x in xs]
  return hlo.concatenate(parts, xla.i64_attr(axis)) if len(parts) > 1 else parts[0]

xla.register_lowering(stack_p, _stack_lowering)

def _stack_transpose(ct, *operands, axis):
  pieces = unstack_p.bind(ct, axis=axis)
  return [p if ad.is_undefined_primal(o) else None for p, o in zip(pieces, operands)]

ad.deflinear(stack_p, _stack_transpose)

def _stack_batch_rule(vals, dims, *, axis):
  d = dims[0]
  if d is not None and all(e == d for e in dims):
    # every operand batched at the same place: stack around it, no transposes (as JAX)
    return stack_p.bind(*vals, axis=axis if axis <= d else axis + 1), d + (axis <= d)
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  operands = [batching.matchaxis(v, d, 0, size) for v, d in zip(vals, dims)]
  return stack_p.bind(*operands, axis=axis + 1), 0

batching.primitive_batchers[stack_p] = _stack_batch_rule


def stack(operands, axis: int = 0):
  """Joins equally shaped ``operands`` along a new dimension ``axis``.

  Args:
    operands: a sequence of arrays of one shape and dtype.
    axis: position of the new dimension.

  Returns:
    The stacked array.

  Examples:
    >>> lax.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
  """
  operands = list(operands)
  if not operands:
    raise ValueError("stack: requires a non-empty sequence of arrays")
  ndim = get_aval(operands[0]).ndim
  axis = operator.index(axis)
  if not -(ndim + 1) <= axis <= ndim:
    raise ValueError(f"stack: axis {axis} is out of bounds for arrays of dimension {ndim}")
  return stack_p.bind(*operands, axis=axis % (ndim + 1))


def _unstack_shape_rule(operand, *, axis):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"unstack: axis {axis} out of range for operand {operand.str_short()}")
  return [operand.shape[:axis] + operand.shape[axis + 1:]] * operand.shape[axis]


unstack_p = standard_primitive(_unstack_shape_rule,
                               lambda operand, *, axis: [operand.dtype] * operand.shape[axis],
                               "unstack", weak_type_rule=_keep_weak, multiple_results=True)

def _unstack_lowering(ctx, x, *, axis):
  shape = ctx.avals_in[0].shape
  out_type = xla.aval_to_ir_type(ctx.avals_out[0]) if ctx.avals_out else None
  outs = []
  for i in range(shape[axis]):
    lo, hi = [0] * len(shape), list(shape)
    lo[axis], hi[axis] = i, i + 1
    piece = hlo.slice(x, xla._dense_i64(lo), xla._dense_i64(hi),
                      xla._dense_i64([1] * len(shape)))
    outs.append(hlo.reshape(out_type, piece))
  return outs

xla.register_lowering(unstack_p, _unstack_lowering)

def _unstack_jvp(primals, tangents, *, axis):
  outs = unstack_p.bind(primals[0], axis=axis)
  if type(tangents[0]) is ad.Zero:
    return outs, [ad.Zero.from_primal_value(o) for o in outs]
  return outs, unstack_p.bind(tangents[0], axis=axis)

ad.primitive_jvps[unstack_p] = _unstack_jvp

def _unstack_transpose(cts, operand, *, axis):
  aval = operand.aval
  piece = aval.shape[:axis] + aval.shape[axis + 1:]
  cts = [full(piece, 0, aval.dtype) if type(ct) is ad.Zero else ct for ct in cts]
  if not cts:
    return [full(aval.shape, 0, aval.dtype)]
  return [stack_p.bind(*cts, axis=axis)]

ad.primitive_transposes[unstack_p] = _unstack_transpose

def _unstack_batch_rule(vals, dims, *, axis):
  # the batch dimension stays where it is (as JAX): the unstacked axis is found around it
  (x,), (d,) = vals, dims
  outs = unstack_p.bind(x, axis=axis if axis < d else axis + 1)
  return outs, [d - (axis < d)] * len(outs)

batching.primitive_batchers[unstack_p] = _unstack_batch_rule


def unstack(x, axis: int = 0):
  """The slices of ``x`` along ``axis``.

  Args:
    x: input array.
    axis: the dimension unstacked.

  Returns:
    A tuple of arrays with one dimension less.

  Examples:
    >>> lax.unstack(jnp.arange(4).reshape(2, 2))
    (Array([0, 1], dtype=int32), Array([2, 3], dtype=int32))
  """
  ndim = get_aval(x).ndim
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"unstack: axis {axis} is out of bounds for an array of dimension "
                     f"{ndim}")
  return tuple(unstack_p.bind(x, axis=axis % ndim))


def _tile_shape_rule(operand, *, reps):
  if len(reps) != operand.ndim:
    raise TypeError(f"tile: reps {reps} must have one entry per dimension of "
                    f"{operand.str_short()}")
  if any(r < 0 for r in reps):
    raise ValueError(f"tile: reps {reps} must be non-negative")
  return tuple(d * r for d, r in zip(operand.shape, reps))


tile_p = standard_primitive(_tile_shape_rule, _keep_dtype, "tile", weak_type_rule=_keep_weak)

def _tile_lowering(ctx, x, *, reps):
  aval = ctx.avals_in[0]
  # (d0, d1, ...) -> (1, d0, 1, d1, ...) -> broadcast (r0, d0, r1, d1, ...) -> flatten pairs.
  expanded = aval.update(shape=tuple(k for d in aval.shape for k in (1, d)))
  x = hlo.reshape(xla.aval_to_ir_type(expanded), x)
  wide = aval.update(shape=tuple(k for r, d in zip(reps, aval.shape) for k in (r, d)))
  x = xla.broadcast_in_dim(x, wide, list(range(2 * aval.ndim)))
  return hlo.reshape(xla.aval_to_ir_type(ctx.avals_out[0]), x)

xla.register_lowering(tile_p, _tile_lowering)

def _tile_transpose(ct, operand, *, reps):
  shape = operand.aval.shape
  wide = reshape(ct, tuple(k for r, d in zip(reps, shape) for k in (r, d)))
  return [reduce_sum(wide, tuple(range(0, 2 * len(shape), 2)))]

ad.deflinear(tile_p, _tile_transpose)

def _tile_batch_rule(vals, dims, *, reps):
  (x,), (d,) = vals, dims
  return tile_p.bind(x, reps=reps[:d] + (1,) + reps[d:]), d

batching.primitive_batchers[tile_p] = _tile_batch_rule


def tile(operand, reps):
  """``operand`` repeated ``reps[i]`` times along each dimension ``i``.

  Args:
    operand: input array.
    reps: a repetition count per dimension (static).

  Returns:
    The tiled array.

  Examples:
    >>> lax.tile(jnp.array([[1, 2]]), (2, 2))
    Array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
  """
  return tile_p.bind(operand, reps=_static_ints("tile", "reps", reps))


# --- shape helpers -----------------------------------------------------------------------

def broadcast_shapes(*shapes):
  """The shape that NumPy broadcasting gives ``shapes``.

  Ranks align at the right and size-1 dimensions stretch; incompatible shapes raise
  ``ValueError``.

  Args:
    *shapes: shapes (tuples of ints).

  Returns:
    The broadcast shape as a tuple.

  Examples:
    >>> lax.broadcast_shapes((2, 1), (3,))
    (2, 3)
  """
  if not shapes:
    return ()
  checked = []
  for s in shapes:
    try:
      checked.append(_shape_tuple("broadcast_shapes", s))
    except ValueError:  # negative sizes (JAX: TypeError)
      raise TypeError(f"broadcast_shapes: Only non-negative indices are allowed when "
                      f"broadcasting static shapes, but got shape {s!r}.") from None
  shapes = checked
  rank = builtins.max(len(s) for s in shapes)
  padded = [(1,) * (rank - len(s)) + s for s in shapes]
  result = []
  for dims in zip(*padded):
    non_one = {d for d in dims if d != 1}
    if len(non_one) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
    result.append(non_one.pop() if non_one else 1)
  return tuple(result)


def broadcast_like(arr, like_arr):
  """``arr`` broadcast (NumPy rules) to the shape of ``like_arr``.

  Args:
    arr: the array to broadcast.
    like_arr: array whose shape is used.

  Returns:
    An array of ``like_arr``'s shape and ``arr``'s dtype.

  Examples:
    >>> lax.broadcast_like(jnp.array([1, 2]), jnp.zeros((3, 2)))
    Array([[1, 2],
           [1, 2],
           [1, 2]], dtype=int32)
  """
  shape, like = get_aval(arr).shape, get_aval(like_arr).shape
  ok = len(shape) <= len(like) and all(
      d in (1, n) for d, n in zip(shape, like[len(like) - len(shape):]))
  if not ok:
    raise ValueError(f"broadcast_like: cannot broadcast an array of shape {shape} to the "
                     f"shape {like} of like_arr")
  nlead = len(like) - len(shape)
  return broadcast_in_dim(arr, like, tuple(range(nlead, len(like))))


def empty(shape, dtype, *, out_sharding=None):
  """An array of ``shape`` and ``dtype`` whose contents do not matter.

  hlox fills it with zeros; code must not rely on that.

  Args:
    shape: the result shape.
    dtype: the element dtype.
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    An array of ``shape`` and ``dtype``.

  Examples:
    >>> lax.empty((2,), jnp.float32).shape
    (2,)
  """
  return full(shape, 0, dtypes.canonicalize_dtype(dtype), sharding=out_sharding)


def shape_as_value(shape):
  """A shape as an integer vector.

  When every size is known this is a NumPy constant; under shape polymorphism symbolic
  sizes become values computed from the program's argument shapes.

  Args:
    shape: a tuple of (possibly symbolic) sizes.

  Returns:
    A 1-d integer array of the sizes.

  Examples:
    >>> lax.shape_as_value((2, 3)).tolist()
    [2, 3]
  """
  shape = _shape_tuple("shape_as_value", shape)
  if all(isinstance(d, int) for d in shape):
    return np.asarray(shape, dtype=np.int64)
  int64 = dtypes.canonicalize_dtype(np.int64)  # (int32 unless x64 is on, without a warning)
  sizes = [expand_dims(convert_element_type(dimension_as_value(d), int64), (0,))
           for d in shape]
  return concatenate(sizes, 0)


def dtype(x):
  """The canonical dtype of ``x``.

  An array's (or tracer's) dtype, a Python scalar's default dtype, or ``x`` itself read as a
  dtype; 64-bit types are narrowed unless x64 is enabled.

  Args:
    x: an array, scalar, or dtype-like value.

  Returns:
    A NumPy dtype.

  Examples:
    >>> lax.dtype(1.0)
    dtype('float32')
    >>> lax.dtype(jnp.int8(1))
    dtype('int8')
  """
  if isinstance(x, (type, np.dtype, str)):
    return dtypes.canonicalize_dtype(np.dtype(x))
  return dtypes.dtype_of(x)


__all__ += ["dtype"]


# Pure data movement: bytes but no arithmetic in the cost estimates (hlox.viz).
for _p in (squeeze_p, rev_p, pad_p, concatenate_p, slice_p, split_p, stack_p, unstack_p,
           tile_p):
  cost.register_cost(_p, cost.data_movement_cost)
del _p


sharding_types.sharding_rules.update({
    squeeze_p: sharding_types.squeeze_rule,
    rev_p: sharding_types.same_as_operand_rule,
    pad_p: sharding_types.varying_shape_rule("padding"),
    slice_p: sharding_types.varying_shape_rule("slicing"),
    concatenate_p: sharding_types.concatenate_rule,
    stack_p: sharding_types.stack_rule,
    unstack_p: sharding_types.unstack_rule,
})
