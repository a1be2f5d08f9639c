"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather, scatter (+add/mul/min/max).

These are XLA's indexing operations with JAX's ``lax`` API:

* ``dynamic_slice`` / ``dynamic_update_slice`` take one scalar start index per dimension; XLA
  clamps the start so that the whole slice fits in the operand. The public functions first
  wrap negative starts (``allow_negative_indices``), as JAX does.
* ``gather`` / ``scatter*`` use ``GatherDimensionNumbers`` / ``ScatterDimensionNumbers`` with an
  implicit index vector dimension: the last dimension of the indices.
* ``GatherScatterMode`` says what happens to out-of-bounds windows: ``CLIP`` clamps the start
  indices; ``FILL_OR_DROP`` makes a gather return ``fill_value`` for the whole window and a
  scatter skip the whole update window; ``PROMISE_IN_BOUNDS`` does what XLA does natively
  (gathers clamp, scatters drop). ``lax.gather`` defaults to ``PROMISE_IN_BOUNDS`` and the
  scatters to ``FILL_OR_DROP`` (``GatherScatterMode.from_any(None)``), as in JAX.
"""
from __future__ import annotations

import enum
import functools
import operator
from typing import Callable, NamedTuple, Sequence

import numpy as np

from hlox.core import dtypes, sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.shape_poly import _DimExpr, canonical_dim, dimension_as_value, is_symbolic_dim
from hlox.core.jaxpr import trace_to_jaxpr
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad, batching, cost, dim_lowering, xla
from hlox.lax import elementwise as ew
from hlox.lax.base import convert_element_type
from hlox.lax.shapes import broadcast_in_dim, concatenate, full_like, iota, reshape, slice_p
from hlox.lax.utils import shape_str, standard_primitive
from hlox.core.extended_functions import refused as _refused

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["scatter_sub", 
    "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
    "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
    "scatter_apply",
    "dynamic_slice_p", "dynamic_update_slice_p", "gather_p", "scatter_p", "scatter_add_p",
    "scatter_mul_p", "scatter_min_p", "scatter_max_p", "scatter_apply_p",
]


def _keep_operand_dtype(operand, *args, **params):
  return operand.dtype


def _operand_weak_type(operand, *args, **params):
  # The indices (often weakly typed Python ints) never make the result weak.
  return operand.weak_type


# --- start indices of dynamic_slice / dynamic_update_slice -------------------------------

def _index_dtype(indices) -> np.dtype:
  """The common dtype of scalar start indices (XLA needs one). Static ints count as int32, so
  that e.g. an int8 start next to a start of 200 does not overflow."""
  avals = [get_aval(i) for i in indices]
  for i, a in zip(indices, avals):
    if not dtypes.is_int(a.dtype):
      raise TypeError(f"index arguments must be integers, got {a.str_short()} ({i!r})")
  static = [a.weak_type or _is_static_int(i) for i, a in zip(indices, avals)]
  kinds = {a.dtype for a, s in zip(avals, static) if not s}
  if any(static):
    kinds.add(dtypes.canonicalize_dtype(dtypes.int32))
  return functools.reduce(dtypes.promote_types, sorted(kinds, key=str))


def _is_static_int(x) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _normalize_start(i, size: int, allow_negative: bool, dtype):
  """``i`` as a scalar of ``dtype``; negative values count from the end when allowed."""
  if _is_static_int(i):
    i = int(i)
    if i < 0:
      if not allow_negative:
        raise ValueError(f"Index {i} is out of bounds for dimension {size} if "
                         "allow_negative_indices=False")
      i += size
    if type(i) is not int:  # counted from a symbolic size
      return convert_element_type(i, dtype)
    return np.asarray(i, dtype=dtype)[()]
  aval = get_aval(i)
  if aval.ndim != 0:
    raise TypeError(f"start indices must be scalars, got an index of shape {aval.shape}")
  i = ew.convert_element_type(i, dtype)
  if not allow_negative or dtypes.is_unsigned_int(dtype):
    return i
  size_c = convert_element_type(size, dtype)
  return ew.select(ew.lt(i, np.asarray(0, dtype=dtype)[()]), ew.add(i, size_c), i)


def _split_start_indices(name: str, start_indices, ndim: int) -> list:
  """A 1-D array of start indices is split into scalars; a sequence is kept."""
  if isinstance(start_indices, (Tracer, np.ndarray)) or hasattr(start_indices, "aval"):
    aval = get_aval(start_indices)
    if aval.ndim != 1:
      raise ValueError(f"{name}: start_indices must be a 1-D array or a sequence of scalars, "
                       f"got shape {aval.shape}")
    if isinstance(start_indices, np.ndarray):
      return list(start_indices)
    if aval.shape[0] != ndim:
      raise ValueError(f"{name}: got {aval.shape[0]} start indices for an operand of rank "
                       f"{ndim}")
    # Take each element with a one-element dynamic slice: no other primitive needed.
    out = []
    for k in range(aval.shape[0]):
      piece = dynamic_slice_p.bind(start_indices, np.asarray(k, dtype=aval.dtype)[()],
                                   slice_sizes=(1,))
      out.append(reshape(piece, ()))
    return out
  return list(start_indices)


def _canonical_starts(name, operand_shape, start_indices, allow_negative_indices):
  starts = _split_start_indices(name, start_indices, len(operand_shape))
  if len(starts) != len(operand_shape):
    raise ValueError(f"{name}: the number of start indices ({len(starts)}) must equal the "
                     f"rank of the operand (shape {tuple(operand_shape)})")
  if isinstance(allow_negative_indices, (bool, np.bool_)):
    allow = [bool(allow_negative_indices)] * len(starts)
  else:
    allow = [bool(a) for a in allow_negative_indices]
    if len(allow) != len(starts):
      raise ValueError(f"{name}: allow_negative_indices must have one entry per dimension")
  if not starts:
    return []
  if _DimExpr in map(type, starts):  # symbolic sizes as starts: their values
    starts = [dimension_as_value(i) if is_symbolic_dim(i) else i for i in starts]
  # As in JAX, indices of explicit dtypes must agree (Python ints adapt to the others).
  avals = [get_aval(i) for i in starts]
  explicit = sorted({a.dtype.name for a in avals if not a.weak_type})
  if len(explicit) > 1 or not all(dtypes.is_int(a.dtype) for a in avals):
    raise TypeError(f"index arguments to {name} must be integers of the same type, got: "
                    f"{', '.join(a.dtype.name for a in avals)}")
  dtype = _index_dtype(starts)
  return [_normalize_start(i, d, a, dtype) for i, d, a in zip(starts, operand_shape, allow)]


def _check_start_avals(name, operand, start_avals):
  if len(start_avals) != operand.ndim:
    raise TypeError(f"{name}: got {len(start_avals)} start indices for operand "
                    f"{operand.str_short()}; need one per dimension")
  for a in start_avals:
    if a.ndim != 0:
      raise TypeError(f"{name}: start indices must be scalars, got {shape_str(start_avals)}")
    if not dtypes.is_int(a.dtype):
      raise TypeError(f"{name}: start indices must be integers, got {shape_str(start_avals)}")
  if len({a.dtype for a in start_avals}) > 1:
    raise TypeError(f"{name}: start indices must all have the same dtype, got "
                    f"{shape_str(start_avals)}")


# --- autodiff helpers -------------------------------------------------------------------

def _zeros(shape, dtype, like=None):
  """Zeros to scatter or update cotangents into (split as the aval ``like`` when it records
  a split over Explicit mesh axes)."""
  sharding = getattr(like, "_sharding", None)
  return ad.zeros_like_aval(ShapedArray(tuple(shape), np.dtype(dtype), sharding=sharding))


def _aval_of(x):
  """The aval of a transpose-rule argument (an ``UndefinedPrimal`` or a value)."""
  return x.aval if ad.is_undefined_primal(x) else get_aval(x)


# --- dynamic_slice -----------------------------------------------------------------------

def _dynamic_slice_shape_rule(operand, *start_indices, slice_sizes):
  _check_start_avals("dynamic_slice", operand, start_indices)
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must have one entry per "
                    f"dimension of operand {operand.str_short()}")
  if any(s < 0 for s in slice_sizes):
    raise TypeError(f"dynamic_slice: slice_sizes must be non-negative, got {slice_sizes}")
  if any(s > d for s, d in zip(slice_sizes, operand.shape)):
    raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must not exceed the operand "
                    f"shape {operand.shape}")
  return tuple(slice_sizes)


dynamic_slice_p = standard_primitive(_dynamic_slice_shape_rule, _keep_operand_dtype,
                                     "dynamic_slice", weak_type_rule=_operand_weak_type)

def _dynamic_slice_lowering(ctx, operand, *start_indices, slice_sizes):
  if not start_indices:
    return operand  # a rank-0 slice is the operand (and its MLIR text would not parse)
  return xla.dynamic_slice(operand, ctx.avals_in[0], ctx.avals_out[0], start_indices)

xla.register_lowering(dynamic_slice_p, _dynamic_slice_lowering)

# Linear in the operand; the (integer) start indices get no tangent.
ad.defjvp(dynamic_slice_p,
          lambda g, operand, *starts, slice_sizes:
          dynamic_slice_p.bind(g, *starts, slice_sizes=slice_sizes))

def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
  assert ad.is_undefined_primal(operand) and not any(map(ad.is_undefined_primal, starts))
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval)] + [None] * len(starts)
  # The update is clamped exactly as the slice was, so the cotangent lands where it was read.
  zeros = _zeros(operand.aval.shape, get_aval(ct).dtype, operand.aval)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)

ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose


def _batched_start_indices(starts, dims):
  """Scalar start indices, some batched (shape ``(B,)``), as one ``(B, n)`` index array."""
  size = next(get_aval(s).shape[0] for s, d in zip(starts, dims) if d is not None)
  columns = [broadcast_in_dim(s, (size, 1), () if d is None else (0,))
             for s, d in zip(starts, dims)]
  if sharding_types.active[0]:
    # the columns of unbatched starts are split as the batched ones (along the batch)
    split = next((sharding_types.split_of(c) for c, d in zip(columns, dims)
                  if d is not None and sharding_types.split_of(c) is not None), None)
    if split is not None:
      columns = [c if d is not None else sharding_types.constrain(c, split)
                 for c, d in zip(columns, dims)]
  return concatenate(columns, 1)


def _dynamic_slice_batch_rule(vals, dims, *, slice_sizes):
  operand, *starts = vals
  operand_bdim, *start_bdims = dims
  if all(d is None for d in start_bdims):
    # The same window for every batch element: still a dynamic slice, one that takes the
    # whole batch dimension.
    size = get_aval(operand).shape[operand_bdim]
    zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int32)[()]
    starts = starts[:operand_bdim] + [zero] + starts[operand_bdim:]
    sizes = slice_sizes[:operand_bdim] + (size,) + slice_sizes[operand_bdim:]
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes), operand_bdim
  # A window per batch element: a gather of one clamped window per index vector.
  n = len(starts)
  dn = GatherDimensionNumbers(offset_dims=tuple(range(n)), collapsed_slice_dims=(),
                              start_index_map=tuple(range(n)))
  index = _batched_start_indices(starts, start_bdims)
  return _gather_batch_rule([operand, index], [operand_bdim, 0], dimension_numbers=dn,
                            slice_sizes=tuple(slice_sizes), unique_indices=True,
                            indices_are_sorted=True, mode=GatherScatterMode.CLIP,
                            fill_value=None)

batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch_rule


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """The slice of ``operand`` of shape ``slice_sizes`` starting at ``start_indices``.

  Unlike ``slice``, the start indices may be traced scalars (one per dimension); the sizes
  are static. Negative starts count from the end (unless ``allow_negative_indices`` is
  False), then, as in XLA, each start is clamped to ``[0, operand.shape[i] - slice_sizes[i]]``
  so the slice always fits: out-of-range starts never raise. Slice sizes larger than the
  operand raise ``TypeError``. Differentiable in the operand (the transpose is a
  ``dynamic_update_slice`` into zeros); batches under ``vmap``, including batched indices.

  Args:
    operand: input array.
    start_indices: one scalar integer start per dimension (may be traced).
    slice_sizes: the static slice shape.
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    An array of shape ``slice_sizes`` and ``operand``'s dtype.

  Examples:
    >>> lax.dynamic_slice(jnp.arange(12).reshape(3, 4), (1, 1), (2, 2))
    Array([[ 5,  6],
           [ 9, 10]], dtype=int32)
    >>> lax.dynamic_slice(jnp.arange(5), (3,), (3,))  # start clamped to 2
    Array([2, 3, 4], dtype=int32)
    >>> hlox.jit(lambda i: lax.dynamic_slice(jnp.arange(5), (i,), (2,)))(-2)
    Array([3, 4], dtype=int32)

  See also:
    ``dynamic_update_slice``, ``dynamic_slice_in_dim``.
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_slice", operand, start_indices, slice_sizes,
                    allow_negative_indices=allow_negative_indices)
  starts = _canonical_starts("dynamic_slice", shape, start_indices, allow_negative_indices)
  return dynamic_slice_p.bind(operand, *starts,
                              slice_sizes=tuple(map(canonical_dim, slice_sizes)))


def _slice_impl(operand, *, start_indices, limit_indices, strides):
  """An eager ``slice`` as a ``dynamic_slice`` of the same sizes, as JAX runs it.

  A static slice bakes its starts into the program, so ``x[0]``, ``x[1]``, ... in a Python loop
  would each compile one; with the starts as arguments, one program serves every start.
  Traced slices (under ``jit``, ``grad``, ``vmap``) stay static, and so do strided, empty and
  invalid ones (the static path reports the error).
  """
  shape = operand.shape if hasattr(operand, "shape") else np.shape(operand)
  if (shape and len(start_indices) == len(limit_indices) == len(shape)
      and (strides is None or (len(strides) == len(shape) and all(st == 1 for st in strides)))
      and all(0 <= s < lim <= d for s, lim, d in zip(start_indices, limit_indices, shape))):
    # The slice fits, so dynamic_slice's clamping of the starts never moves it. The starts go
    # in as the runtime's shared scalar buffers, the cheapest way to pass a Python int.
    device = xla._committed_device((operand,))
    starts = [xla.scalar_argument(s, device) for s in start_indices]
    sizes = tuple(lim - s for s, lim in zip(start_indices, limit_indices))
    return xla.apply_primitive(dynamic_slice_p, operand, *starts, slice_sizes=sizes)
  return xla.apply_primitive(slice_p, operand, start_indices=start_indices,
                             limit_indices=limit_indices, strides=strides)

slice_p.def_impl(_slice_impl)


# --- dynamic_update_slice ----------------------------------------------------------------

def _dynamic_update_slice_shape_rule(operand, update, *start_indices):
  _check_start_avals("dynamic_update_slice", operand, start_indices)
  if update.ndim != operand.ndim:
    raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the rank "
                    f"of operand {operand.str_short()}")
  if any(u > d for u, d in zip(update.shape, operand.shape)):
    raise TypeError(f"dynamic_update_slice: update {update.str_short()} must fit inside "
                    f"operand {operand.str_short()}")
  return operand.shape


def _dynamic_update_slice_dtype_rule(operand, update, *start_indices):
  if operand.dtype != update.dtype:
    raise TypeError(f"dynamic_update_slice: update dtype must equal operand dtype, got "
                    f"{operand.str_short()} and {update.str_short()}")
  return operand.dtype


dynamic_update_slice_p = standard_primitive(
    _dynamic_update_slice_shape_rule, _dynamic_update_slice_dtype_rule,
    "dynamic_update_slice", weak_type_rule=_operand_weak_type)

def _dynamic_update_slice_lowering(ctx, operand, update, *start_indices):
  if not start_indices:
    return update  # rank 0: the update replaces the operand
  return hlo.dynamic_update_slice(operand, update, list(start_indices))

xla.register_lowering(dynamic_update_slice_p, _dynamic_update_slice_lowering)

def _dynamic_update_slice_jvp(primals, tangents):
  operand, update, *starts = primals
  g_operand, g_update = tangents[:2]
  out = dynamic_update_slice_p.bind(operand, update, *starts)
  if type(g_operand) is ad.Zero and type(g_update) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  # Linear in (operand, update) together for fixed starts.
  return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(g_operand),
                                          ad.instantiate_zeros(g_update), *starts)

ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
  update_shape = _aval_of(update).shape
  nones = [None] * len(starts)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None,
            ad.Zero(update.aval) if ad.is_undefined_primal(update) else None] + nones
  ct_operand = ct_update = None
  if ad.is_undefined_primal(operand):
    # The overwritten block does not reach the output: its cotangent is zero.
    zeros = _zeros(update_shape, get_aval(ct).dtype, _aval_of(update))
    ct_operand = dynamic_update_slice_p.bind(ct, zeros, *starts)
  if ad.is_undefined_primal(update):
    ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=tuple(update_shape))
  return [ct_operand, ct_update] + nones

ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose


def _dynamic_update_slice_batch_rule(vals, dims):
  operand, update, *starts = vals
  operand_bdim, update_bdim, *start_bdims = dims
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  if all(d is None for d in start_bdims):
    # The same block for every batch element: a dynamic update slice whose block spans
    # the batch dimension (an unbatched operand or update is broadcast along it).
    bdim = operand_bdim if operand_bdim is not None else update_bdim
    operand = batching.matchaxis(operand, operand_bdim, bdim, size)
    update = batching.matchaxis(update, update_bdim, bdim, size)
    zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int32)[()]
    starts = starts[:bdim] + [zero] + starts[bdim:]
    return dynamic_update_slice_p.bind(operand, update, *starts), bdim
  # A block per batch element: a scatter with a batching dimension, clamped like the
  # dynamic update slice (each block then lies inside the operand, so none overlap).
  n = len(starts)
  operand = batching.bdim_at_front(operand, operand_bdim, size)
  update = batching.bdim_at_front(update, update_bdim, size)
  index = _batched_start_indices(starts, start_bdims)
  window = tuple(range(1, n + 1))
  dn = ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=(),
                               scatter_dims_to_operand_dims=window,
                               operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  return scatter_p.bind(operand, index, update, dimension_numbers=dn, indices_are_sorted=True,
                        unique_indices=True, mode=GatherScatterMode.CLIP), 0

batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch_rule


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  """``operand`` with the block ``update`` written at ``start_indices``.

  Start indices may be traced; they are wrapped (negative values) and clamped so that the
  whole update fits, as in ``dynamic_slice``. ``update`` must have ``operand``'s dtype and
  rank, and fit in it (else ``TypeError``). Linear in ``operand`` and ``update`` jointly, so
  differentiable in both; batches under ``vmap``.

  Args:
    operand: the array to update.
    update: the block to write.
    start_indices: one scalar integer start per dimension (may be traced).
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    An array like ``operand`` with the block replaced.

  Examples:
    >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (1,))
    Array([0., 1., 1., 0., 0.], dtype=float32)
    >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (4,))  # clamped to 3
    Array([0., 0., 0., 1., 1.], dtype=float32)
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_update_slice", operand, update, start_indices,
                    allow_negative_indices=allow_negative_indices)
  starts = _canonical_starts("dynamic_update_slice", shape, start_indices,
                             allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, update, *starts)


# --- the *_in_dim conveniences -----------------------------------------------------------

def _zero_like_index(i):
  if _is_static_int(i):
    return 0
  return np.asarray(0, dtype=get_aval(i).dtype)[()]


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
  """``operand[..., start_index:start_index + slice_size, ...]`` along ``axis``.

  A ``dynamic_slice`` that keeps the other dimensions whole; the start is clamped the same
  way.

  Args:
    operand: input array.
    start_index: scalar integer start (may be traced).
    slice_size: static size of the slice.
    axis: the dimension to slice.
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    The slice.

  Examples:
    >>> lax.dynamic_slice_in_dim(jnp.arange(12).reshape(3, 4), 1, 2, axis=1)
    Array([[ 1,  2],
           [ 5,  6],
           [ 9, 10]], dtype=int32)
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_slice_in_dim",
                    operand, start_index, slice_size, axis, allow_negative_indices=allow_negative_indices)
  axis = _axis(axis, len(shape), "dynamic_slice_in_dim")
  starts = [_zero_like_index(start_index)] * len(shape)
  starts[axis] = start_index
  sizes = list(shape)
  sizes[axis] = canonical_dim(slice_size)
  allow = [False] * len(shape)
  allow[axis] = allow_negative_indices
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
  """``operand[..., index, ...]`` along ``axis`` for a possibly traced scalar ``index``.

  The index is clamped into range as in ``dynamic_slice``.

  Args:
    operand: input array.
    index: scalar integer index (may be traced).
    axis: the dimension to index.
    keepdims: if True (the default), keep ``axis`` with size 1.
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    The indexed slice.

  Examples:
    >>> x = jnp.arange(12).reshape(3, 4)
    >>> lax.dynamic_index_in_dim(x, 2, axis=0, keepdims=False)
    Array([ 8,  9, 10, 11], dtype=int32)
    >>> lax.dynamic_index_in_dim(x, 2).shape
    (1, 4)
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_index_in_dim",
                    operand, index, axis, keepdims, allow_negative_indices=allow_negative_indices)
  axis = _axis(axis, len(shape), "dynamic_index_in_dim")
  out = dynamic_slice_in_dim(operand, index, 1, axis,
                             allow_negative_indices=allow_negative_indices)
  if keepdims:
    return out
  return reshape(out, shape[:axis] + shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices: bool = True):
  """``operand`` with ``update`` written at ``start_index`` along ``axis``.

  A ``dynamic_update_slice`` starting at 0 in every other dimension; the start is clamped so
  the update fits.

  Args:
    operand: the array to update.
    update: the block to write (same rank and dtype as ``operand``).
    start_index: scalar integer start (may be traced).
    axis: the dimension along which to place the update.
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    An array like ``operand`` with the block replaced.

  Examples:
    >>> lax.dynamic_update_slice_in_dim(jnp.zeros((2, 4), jnp.int32),
    ...                                 jnp.ones((2, 2), jnp.int32), 1, axis=1)
    Array([[0, 1, 1, 0],
           [0, 1, 1, 0]], dtype=int32)
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_update_slice_in_dim",
                    operand, update, start_index, axis, allow_negative_indices=allow_negative_indices)
  axis = _axis(axis, len(shape), "dynamic_update_slice_in_dim")
  starts = [_zero_like_index(start_index)] * len(shape)
  starts[axis] = start_index
  allow = [False] * len(shape)
  allow[axis] = allow_negative_indices
  return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
  """``operand`` with its slice at ``index`` along ``axis`` replaced by ``update``.

  ``update`` may have ``operand``'s rank (with size 1 along ``axis``) or lack ``axis``; any
  other rank raises ``TypeError``. The index is clamped into range.

  Args:
    operand: the array to update.
    update: the new slice.
    index: scalar integer index (may be traced).
    axis: the dimension indexed.
    allow_negative_indices: keyword-only; if True (the default), negative starts count from
      the end; a sequence gives one flag per dimension.

  Returns:
    An array like ``operand`` with the slice replaced.

  Examples:
    >>> x = jnp.zeros((2, 3), jnp.int32)
    >>> lax.dynamic_update_index_in_dim(x, jnp.array([7, 8, 9]), 1, 0)
    Array([[0, 0, 0],
           [7, 8, 9]], dtype=int32)
  """
  try:
    shape = get_aval(operand).shape
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "dynamic_update_index_in_dim",
                    operand, update, index, axis, allow_negative_indices=allow_negative_indices)
  axis = _axis(axis, len(shape), "dynamic_update_index_in_dim")
  uaval = get_aval(update)
  if uaval.ndim + 1 == len(shape):
    update = reshape(update, uaval.shape[:axis] + (1,) + uaval.shape[axis:])
  elif uaval.ndim != len(shape):
    raise TypeError(f"dynamic_update_index_in_dim: update {uaval.str_short()} must have "
                    f"rank {len(shape)} or {len(shape) - 1}")
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


def _axis(axis, ndim, name):
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}")
  return axis % ndim


# --- dimension numbers and modes ---------------------------------------------------------

class GatherDimensionNumbers(NamedTuple):
  """How the dimensions of a gather's operand, indices and output correspond (XLA Gather).

  offset_dims: output dimensions that hold the (non-collapsed) slice dimensions, ascending.
  collapsed_slice_dims: operand dimensions of slice size 1 that do not appear in the output.
  start_index_map: for each entry of an index vector, the operand dimension it starts.
  operand_batching_dims / start_indices_batching_dims: paired batch dimensions.
  The index vector dimension is always the last dimension of the indices.
  """
  offset_dims: tuple
  collapsed_slice_dims: tuple
  start_index_map: tuple
  operand_batching_dims: tuple = ()
  start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
  """How the dimensions of a scatter's operand, indices and updates correspond (XLA Scatter).

  update_window_dims: dimensions of ``updates`` that are window dimensions, ascending.
  inserted_window_dims: size-1 operand window dimensions absent from ``updates``.
  scatter_dims_to_operand_dims: for each entry of an index vector, its operand dimension.
  operand_batching_dims / scatter_indices_batching_dims: paired batch dimensions.
  The index vector dimension is always the last dimension of the indices.
  """
  update_window_dims: tuple
  inserted_window_dims: tuple
  scatter_dims_to_operand_dims: tuple
  operand_batching_dims: tuple = ()
  scatter_indices_batching_dims: tuple = ()


def _canonical_dnums(cls, dnums, name):
  if not isinstance(dnums, tuple) or len(dnums) != len(cls._fields):
    raise TypeError(f"{name}: dimension_numbers must be a {cls.__name__}, got {dnums!r}")
  try:
    return cls(*(tuple(int(d) for d in field) for field in dnums))
  except TypeError:
    raise TypeError(f"{name}: every field of {cls.__name__} must be a sequence of ints, "
                    f"got {dnums!r}") from None


class GatherScatterMode(enum.Enum):
  """What gathers and scatters do with out-of-bounds indices.

  CLIP: clamp the start indices so that the whole window is in bounds.
  FILL_OR_DROP: a gather returns ``fill_value`` for any window that is partly out of bounds;
    a scatter skips such a window entirely.
  PROMISE_IN_BOUNDS: the caller promises in-bounds indices; XLA clamps gathers and drops
    scatters.
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()

  @staticmethod
  def from_any(s) -> "GatherScatterMode":
    """A mode from a ``GatherScatterMode``, ``'clip'``, ``'fill'``/``'drop'`` or
    ``'promise_in_bounds'``; ``None`` means FILL_OR_DROP."""
    if isinstance(s, GatherScatterMode):
      return s
    if s is None or s in ("fill", "drop"):
      return GatherScatterMode.FILL_OR_DROP
    if s == "clip":
      return GatherScatterMode.CLIP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    raise ValueError(f"Unknown gather/scatter mode {s!r}: use 'clip', 'fill', 'drop' or "
                     "'promise_in_bounds'")


# --- shared checks -----------------------------------------------------------------------
# The phrases are XLA's shape-inference messages, as JAX raises them (people search for them);
# ``where`` adds the operand shapes.

def _check_sorted(dims, op, what, where):
  if list(dims) != sorted(dims):
    raise TypeError(f"{what} in {op} op must be sorted; got {dims} ({where})")


def _check_no_repeats(dims, op, what, where):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{what} in {op} op must not repeat; got: {dims} ({where})")


def _check_range(dims, rank, op, what, where):
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {what} set in {op} op; valid range is [0, {rank}); got: {d} "
                      f"({where})")


def _check_disjoint(dims1, dims2, op, what1, what2, where):
  if set(dims1) & set(dims2):
    raise TypeError(f"{what1} and {what2} in {op} op must be disjoint; got: {dims1} and "
                    f"{dims2} ({where})")


def _check_index_map(dims, rank, what, where):
  for i, d in enumerate(dims):
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {what}; domain is [0, {rank}), got: {i}->{d} ({where})")


def _check_index_vector_len(dims, indices, op, what, where):
  ivd = indices.ndim - 1
  if len(dims) != indices.shape[ivd]:
    raise TypeError(f"{op.capitalize()} op has {len(dims)} elements in {what} and the bound "
                    f"of dimension index_vector_dim={ivd} of indices is {indices.shape[ivd]}. "
                    f"These two numbers must be equal. ({where})")


def _check_indices_batching_dims(op_dims, idx_dims, operand, indices, op, what, where):
  """The batching dimensions of indices: in range, not the index vector dimension, paired
  one to one with the operand's, of equal sizes."""
  _check_no_repeats(idx_dims, op, what, where)
  _check_range(idx_dims, indices.ndim, op, what, where)
  if indices.ndim - 1 in idx_dims:
    raise TypeError(f"{op.capitalize()} op cannot have the index vector dimension as a "
                    f"batching dimension; got {idx_dims} ({where})")
  if len(op_dims) != len(idx_dims):
    raise TypeError(f"{op.capitalize()} op requires equal numbers of operand_batching_dims "
                    f"and {what}, got {op_dims} and {idx_dims} ({where})")
  op_shape = tuple(operand.shape[d] for d in op_dims)
  idx_shape = tuple(indices.shape[d] for d in idx_dims)
  if op_shape != idx_shape:
    raise TypeError(f"{op.capitalize()} op requires operand batching dimensions and indices "
                    f"batching dimensions to have the same shape, got {op_shape} and "
                    f"{idx_shape} ({where})")


# --- gather ------------------------------------------------------------------------------

def _gather_shape_rule(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                       indices_are_sorted, mode, fill_value):
  dn = dimension_numbers
  where = f"operand {operand.str_short()}, indices {indices.str_short()}"
  if indices.ndim < 1:
    raise TypeError(f"gather: indices must have at least one dimension (the last holds the "
                    f"index vectors), got {where}")
  batch_shape = indices.shape[:-1]
  out_rank = len(dn.offset_dims) + len(batch_shape)
  _check_sorted(dn.offset_dims, "gather", "offset_dims", where)
  _check_no_repeats(dn.offset_dims, "gather", "offset_dims", where)
  for i, d in enumerate(dn.offset_dims):
    if not 0 <= d < out_rank:
      raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                      f"should have been in [0, {out_rank}) ({where})")
  _check_index_vector_len(dn.start_index_map, indices, "gather", "start_index_map", where)
  _check_index_map(dn.start_index_map, operand.ndim, "start_index_map", where)
  _check_no_repeats(dn.start_index_map, "gather", "start_index_map", where)
  _check_sorted(dn.collapsed_slice_dims, "gather", "collapsed_slice_dims", where)
  _check_range(dn.collapsed_slice_dims, operand.ndim, "gather", "collapsed_slice_dims", where)
  _check_no_repeats(dn.collapsed_slice_dims, "gather", "collapsed_slice_dims", where)
  _check_no_repeats(dn.operand_batching_dims, "gather", "operand_batching_dims", where)
  _check_sorted(dn.operand_batching_dims, "gather", "operand_batching_dims", where)
  _check_range(dn.operand_batching_dims, operand.ndim, "gather", "operand_batching_dims",
               where)
  _check_disjoint(dn.collapsed_slice_dims, dn.operand_batching_dims, "gather",
                  "collapsed_slice_dims", "operand_batching_dims", where)
  _check_disjoint(dn.start_index_map, dn.operand_batching_dims, "gather", "start_index_map",
                  "operand_batching_dims", where)
  _check_indices_batching_dims(dn.operand_batching_dims, dn.start_indices_batching_dims,
                               operand, indices, "gather", "start_indices_batching_dims",
                               where)
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                    f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim} "
                    f"(slice_sizes {slice_sizes}, {where})")
  if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                          + len(dn.operand_batching_dims)):
    raise TypeError(f"All components of the offset index in a gather op must either be a "
                    f"offset dimension or explicitly collapsed/batching; got "
                    f"len(slice_sizes)={len(slice_sizes)}, {dn} ({where})")
  if indices.size:
    for i, (s, d) in enumerate(zip(slice_sizes, operand.shape)):
      if not 0 <= s <= d:
        raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                        f"within [0, {d} + 1), got {s} (slice_sizes {slice_sizes}, {where})")
  for i, d in enumerate(dn.collapsed_slice_dims):
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                      f"{slice_sizes[d]} for index {d} at position {i}. (slice_sizes "
                      f"{slice_sizes}, {where})")
  for i, d in enumerate(dn.operand_batching_dims):
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, but "
                      f"bound is {slice_sizes[d]} for index {d} at position {i}. "
                      f"(slice_sizes {slice_sizes}, {where})")
  offsets = iter(s for i, s in enumerate(slice_sizes)
                 if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims)
  batch = iter(batch_shape)
  return tuple(next(offsets) if i in dn.offset_dims else next(batch) for i in range(out_rank))


def _gather_dtype_rule(operand, indices, **params):
  if not dtypes.is_int(indices.dtype):
    raise TypeError(f"gather: indices must be integers, got {indices.str_short()}")
  return operand.dtype


gather_p = standard_primitive(_gather_shape_rule, _gather_dtype_rule, "gather",
                              weak_type_rule=_operand_weak_type)


def _in_bounds_mask(indices, idx_aval, operand_shape, window_sizes, dims):
  """Boolean ``indices.shape[:-1]``: is every start ``0 <= i <= shape[d] - window[d]``?"""
  i64 = ShapedArray(idx_aval.shape, dtypes.int64)
  if idx_aval.dtype != dtypes.int64:
    indices = hlo.convert(xla.aval_to_ir_type(i64), indices)
  upper = [operand_shape[d] - window_sizes[d] for d in dims]
  if all(type(u) is int for u in upper):
    upper = xla.ir_constant(np.array(upper, dtype=np.int64))
  else:
    upper = dim_lowering.shape_tensor(upper)
  upper = xla.broadcast_in_dim(upper, i64, (idx_aval.ndim - 1,))
  zero = xla.full_like_aval(0, i64)
  ok = hlo.and_(xla.compare_hlo(indices, zero, "GE", dtypes.int64),
                xla.compare_hlo(indices, upper, "LE", dtypes.int64))
  out_aval = ShapedArray(idx_aval.shape[:-1], dtypes.bool_)
  scalar = xla.aval_to_ir_type(ShapedArray((), dtypes.bool_))
  op = hlo.ReduceOp([xla.aval_to_ir_type(out_aval)], [ok], [xla.ir_constant(np.True_)],
                    xla.dense_i64([idx_aval.ndim - 1]))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.and_(*block.arguments)])
  return op.result


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes,
                     unique_indices, indices_are_sorted, mode, fill_value):
  op_aval, idx_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  if aval_out.size == 0:
    return xla.full_like_aval(0, aval_out)
  dn = dimension_numbers
  attr = hlo.GatherDimensionNumbers.get(
      offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
      operand_batching_dims=list(dn.operand_batching_dims),
      start_indices_batching_dims=list(dn.start_indices_batching_dims),
      start_index_map=list(dn.start_index_map), index_vector_dim=idx_aval.ndim - 1)
  # XLA's gather clamps start indices, which is exactly CLIP (and what PROMISE_IN_BOUNDS does).
  if all(type(s) is int for s in slice_sizes):
    out = hlo.gather(operand, indices, attr, xla.dense_i64(slice_sizes),
                     indices_are_sorted=ir.BoolAttr.get(bool(indices_are_sorted)))
  else:  # symbolic window sizes: the sizes are an operand
    out = hlo.DynamicGatherOp.build_generic(
        results=[xla.aval_to_ir_type(aval_out)],
        operands=[operand, indices, dim_lowering.shape_tensor(slice_sizes)],
        attributes={"dimension_numbers": attr,
                    "indices_are_sorted": ir.BoolAttr.get(bool(indices_are_sorted))}).result
  if mode is not GatherScatterMode.FILL_OR_DROP:
    return out
  mask = _in_bounds_mask(indices, idx_aval, op_aval.shape, slice_sizes, dn.start_index_map)
  batch_dims = [d for d in range(aval_out.ndim) if d not in dn.offset_dims]
  mask = xla.broadcast_in_dim(mask, ShapedArray(aval_out.shape, dtypes.bool_), batch_dims)
  return hlo.select(mask, out, xla.full_like_aval(fill_value, aval_out))

xla.register_lowering(gather_p, _gather_lowering)

def _gather_jvp(g, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
  # Filled windows are constants: their tangent is zero.
  fill = _tangent_fill(mode, get_aval(g).dtype)
  return gather_p.bind(g, indices, dimension_numbers=dimension_numbers,
                       slice_sizes=slice_sizes, unique_indices=unique_indices,
                       indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill)

ad.defjvp(gather_p, _gather_jvp, None)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      unique_indices, indices_are_sorted, mode, fill_value):
  assert ad.is_undefined_primal(operand) and not ad.is_undefined_primal(indices)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval), None]
  # Every gathered element sends its cotangent back to where it was read, adding up where
  # windows overlap. The scatter treats out-of-bounds windows as the gather did for CLIP
  # and FILL_OR_DROP (clamped resp. dropped, where the gather read a constant fill value).
  dn = dimension_numbers
  scatter_dn = ScatterDimensionNumbers(
      update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dn.start_index_map,
      operand_batching_dims=dn.operand_batching_dims,
      scatter_indices_batching_dims=dn.start_indices_batching_dims)
  zeros = _zeros(operand.aval.shape, get_aval(ct).dtype, operand.aval)
  return [scatter_add_p.bind(zeros, indices, ct, dimension_numbers=scatter_dn,
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode), None]

ad.primitive_transposes[gather_p] = _gather_transpose


def _shift(dims, by=1):
  return tuple(d + by for d in dims)


def _gather_batch_rule(vals, dims, *, dimension_numbers, slice_sizes, unique_indices,
                       indices_are_sorted, mode, fill_value):
  operand, indices = vals
  operand_bdim, indices_bdim = dims
  dn = dimension_numbers
  params = dict(unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                mode=mode, fill_value=fill_value)
  if indices_bdim is None:
    # Same indices for every batch element: the batch dimension becomes a leading offset
    # dimension whose window is the whole batch.
    operand = batching.moveaxis(operand, operand_bdim, 0)
    size = get_aval(operand).shape[0]
    new_dn = GatherDimensionNumbers(
        offset_dims=(0,) + _shift(dn.offset_dims),
        collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
        start_index_map=_shift(dn.start_index_map),
        operand_batching_dims=_shift(dn.operand_batching_dims),
        start_indices_batching_dims=dn.start_indices_batching_dims)
    return gather_p.bind(operand, indices, dimension_numbers=new_dn,
                         slice_sizes=(size,) + tuple(slice_sizes), **params), 0
  # The index vectors stay in the last dimension; the batch goes in front of the other
  # index dimensions, which puts it first in the output (offset dimensions shift past it).
  indices = batching.moveaxis(indices, indices_bdim, 0)
  if operand_bdim is None:
    new_dn = GatherDimensionNumbers(
        offset_dims=_shift(dn.offset_dims),
        collapsed_slice_dims=dn.collapsed_slice_dims,
        start_index_map=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
    # Different batch elements may read the same window: no longer unique or sorted.
    params.update(unique_indices=False, indices_are_sorted=False)
    return gather_p.bind(operand, indices, dimension_numbers=new_dn,
                         slice_sizes=tuple(slice_sizes), **params), 0
  # Both batched: pair the two batch dimensions as gather batching dimensions.
  operand = batching.moveaxis(operand, operand_bdim, 0)
  size = get_aval(operand).shape[0]
  new_dn = GatherDimensionNumbers(
      offset_dims=_shift(dn.offset_dims),
      collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
      start_index_map=_shift(dn.start_index_map),
      operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
      start_indices_batching_dims=(0,) + _shift(dn.start_indices_batching_dims))
  return gather_p.bind(operand, indices, dimension_numbers=new_dn,
                       slice_sizes=(min(size, 1),) + tuple(slice_sizes), **params), 0

batching.primitive_batchers[gather_p] = _gather_batch_rule


def _tangent_fill(mode, dtype):
  """The ``fill_value`` parameter of a gather of tangents (zero, when there is one)."""
  return _canonical_fill_value(0, dtype) if mode is GatherScatterMode.FILL_OR_DROP else None


def _default_fill_value(dtype):
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_signed_int(dtype):
    return int(dtypes.iinfo(dtype).min)
  if dtypes.is_unsigned_int(dtype):
    return int(dtypes.iinfo(dtype).max)
  if dtype == dtypes.bool_:
    return True
  raise ValueError(f"gather: no default fill_value for dtype {dtype}")


def _canonical_fill_value(fill_value, dtype):
  """A hashable Python scalar of ``dtype`` (parameters must be hashable and compare equal:
  every NaN becomes the one ``np.nan`` object)."""
  if isinstance(fill_value, Tracer):
    raise TypeError("gather: fill_value must be a concrete scalar, not a traced value")
  value = np.asarray(fill_value)
  if value.ndim != 0:
    raise ValueError(f"gather: fill_value must be a scalar, got shape {value.shape}")
  if dtypes.is_complex(value.dtype) and not dtypes.is_complex(dtype):
    raise TypeError(f"gather: complex fill_value {fill_value} for a {dtype} operand")
  with np.errstate(invalid="ignore", over="ignore"):
    item = value.astype(dtype).item()
  if isinstance(item, float) and item != item:
    return np.nan
  return item


def gather(operand, start_indices, dimension_numbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False, mode=None,
           fill_value=None):
  """XLA's Gather: slices of ``operand`` of size ``slice_sizes`` taken at ``start_indices``.

  The last dimension of ``start_indices`` holds index vectors; ``dimension_numbers`` (a
  ``GatherDimensionNumbers``) maps their components to operand dimensions
  (``start_index_map``), says which slice dimensions are dropped (``collapsed_slice_dims``)
  and where the remaining slice dimensions go in the result (``offset_dims``), plus optional
  batching dimensions. ``mode`` (default ``PROMISE_IN_BOUNDS``, which behaves like ``'clip'``
  here) says what out-of-bounds windows do: ``'clip'`` clamps the start, ``'fill'`` returns
  ``fill_value`` for the whole window (default NaN for inexact dtypes, the minimum of signed
  and the maximum of unsigned integers, True for bool). Differentiable in ``operand`` (its
  transpose is a scatter-add); batches under ``vmap``.

  Args:
    operand: the array to gather from.
    start_indices: integer array of index vectors (in its last dimension).
    dimension_numbers: a ``GatherDimensionNumbers``.
    slice_sizes: static size of each slice, one per operand dimension.
    unique_indices: keyword-only promise that indices do not repeat.
    indices_are_sorted: keyword-only promise that indices are sorted.
    mode: keyword-only ``GatherScatterMode`` or its name (``'clip'``, ``'fill'``,
      ``'promise_in_bounds'``).
    fill_value: keyword-only value of out-of-bounds windows in ``'fill'`` mode.

  Returns:
    The gathered array.

  Examples:
    >>> x = jnp.arange(6.).reshape(3, 2)
    >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
    ...                                 start_index_map=(0,))
    >>> lax.gather(x, jnp.array([[2], [0]]), dn, (1, 2))  # rows 2 and 0
    Array([[4., 5.],
           [0., 1.]], dtype=float32)
    >>> lax.gather(x, jnp.array([[5], [0]]), dn, (1, 2), mode='fill')
    Array([[nan, nan],
           [ 0.,  1.]], dtype=float32)
  """
  dn = _canonical_dnums(GatherDimensionNumbers, dimension_numbers, "gather")
  mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else \
      GatherScatterMode.from_any(mode)
  dtype = get_aval(operand).dtype
  if mode is GatherScatterMode.FILL_OR_DROP:
    fill_value = _canonical_fill_value(
        _default_fill_value(dtype) if fill_value is None else fill_value, dtype)
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices, dimension_numbers=dn,
                       slice_sizes=tuple(map(canonical_dim, slice_sizes)),
                       unique_indices=bool(unique_indices),
                       indices_are_sorted=bool(indices_are_sorted), mode=mode,
                       fill_value=fill_value)


# --- scatter -----------------------------------------------------------------------------

def _scatter_shape_rule(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                        unique_indices, mode, update_jaxpr=None, name="scatter"):
  dn = dimension_numbers
  where = (f"operand {operand.str_short()}, indices {indices.str_short()}, updates "
           f"{updates.str_short()}")
  if indices.ndim < 1:
    raise TypeError(f"{name}: indices must have at least one dimension (the last holds the "
                    f"index vectors); {where}")
  batch_shape = indices.shape[:-1]
  # ``name`` says which scatter the user called; the phrases name "scatter op" as XLA does.
  if name != "scatter":
    where = f"{name}: {where}"
  if updates.ndim != len(batch_shape) + len(dn.update_window_dims):
    raise TypeError(f"Updates tensor must be of rank "
                    f"{len(batch_shape) + len(dn.update_window_dims)}; got {updates.ndim}. "
                    f"({len(batch_shape)} batch dimensions of indices + "
                    f"{len(dn.update_window_dims)} update_window_dims; {where})")
  for what, dims, rank in (("update_window_dims", dn.update_window_dims, updates.ndim),
                           ("inserted_window_dims", dn.inserted_window_dims, operand.ndim),
                           ("operand_batching_dims", dn.operand_batching_dims, operand.ndim)):
    _check_sorted(dims, "scatter", what, where)
    _check_no_repeats(dims, "scatter", what, where)
    _check_range(dims, rank, "scatter", what, where)
  _check_disjoint(dn.inserted_window_dims, dn.operand_batching_dims, "scatter",
                  "inserted_window_dims", "operand_batching_dims", where)
  _check_disjoint(dn.scatter_dims_to_operand_dims, dn.operand_batching_dims, "scatter",
                  "scatter_dims_to_operand_dims", "operand_batching_dims", where)
  _check_indices_batching_dims(dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                               operand, indices, "scatter", "scatter_indices_batching_dims",
                               where)
  window_rank = (len(dn.update_window_dims) + len(dn.inserted_window_dims)
                 + len(dn.operand_batching_dims))
  if window_rank != operand.ndim:
    raise TypeError(f"Scatter op has window of size {window_rank}; doesn't match operand of "
                    f"rank {operand.ndim}. (update_window_dims, inserted_window_dims and "
                    f"operand_batching_dims must together cover the operand's dimensions, "
                    f"got {dn}; {where})")
  _check_index_vector_len(dn.scatter_dims_to_operand_dims, indices, "scatter",
                          "scatter_dims_to_operand_dims", where)
  _check_index_map(dn.scatter_dims_to_operand_dims, operand.ndim,
                   "scatter_dims_to_operand_dims mapping", where)
  _check_no_repeats(dn.scatter_dims_to_operand_dims, "scatter",
                    "scatter_dims_to_operand_dims", where)
  window_operand_dims = [d for d in range(operand.ndim)
                         if d not in dn.inserted_window_dims
                         and d not in dn.operand_batching_dims]
  for ud, od in zip(dn.update_window_dims, window_operand_dims):
    if updates.shape[ud] > operand.shape[od]:
      raise TypeError(f"Bounds of the window dimensions of updates must not exceed the bounds "
                      f"of the corresponding dimensions of operand. For dimension {ud}, "
                      f"updates bound is {updates.shape[ud]}, operand bound is "
                      f"{operand.shape[od]} (operand dimension {od}; {where})")
  scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  for ud, size in zip(scatter_dims, batch_shape):
    if updates.shape[ud] != size:
      raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as the "
                      f"bounds of the corresponding dimensions of scatter indices. For "
                      f"scatter dimension {ud}, updates bound is {updates.shape[ud]}, indices "
                      f"bound is {size} ({where})")
  return operand.shape


def _scatter_dtype_rule(operand, indices, updates, *, name="scatter", **params):
  if not dtypes.is_int(indices.dtype):
    raise TypeError(f"{name}: indices must be integers, got {indices.str_short()}")
  if operand.dtype != updates.dtype:
    raise TypeError(f"{name}: updates must have the operand's dtype, got operand "
                    f"{operand.str_short()} and updates {updates.str_short()}")
  return operand.dtype


def _scatter_window_sizes(operand_shape, updates_shape, dn):
  sizes, pos = [], 0
  for d in range(len(operand_shape)):
    if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
      sizes.append(1)
    else:
      sizes.append(updates_shape[dn.update_window_dims[pos]])
      pos += 1
  return sizes


def _scatter_lowering(combine: Callable | None):
  """Lowering through ``stablehlo.scatter``; ``combine(old, new, dtype)`` builds the region's
  scalar result (``None``: the region comes from the ``update_jaxpr`` parameter)."""
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode, update_jaxpr=None):
    op_aval, idx_aval, upd_aval = ctx.avals_in
    aval_out = ctx.avals_out[0]
    if upd_aval.size == 0 or aval_out.size == 0:
      return operand
    dn = dimension_numbers
    if mode is GatherScatterMode.CLIP:
      window = _scatter_window_sizes(op_aval.shape, upd_aval.shape, dn)
      upper = np.array([op_aval.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims],
                       dtype=idx_aval.dtype)
      upper = xla.broadcast_in_dim(xla.ir_constant(upper), idx_aval, (idx_aval.ndim - 1,))
      indices = hlo.clamp(xla.full_like_aval(0, idx_aval), indices, upper)
    attr = hlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims),
        inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=idx_aval.ndim - 1)
    op = hlo.ScatterOp([xla.aval_to_ir_type(aval_out)], [operand], indices, [updates], attr,
                       indices_are_sorted=ir.BoolAttr.get(bool(indices_are_sorted)),
                       unique_indices=ir.BoolAttr.get(bool(unique_indices)))
    scalar = xla.aval_to_ir_type(ShapedArray((), op_aval.dtype))
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      old, new = block.arguments
      if combine is not None:
        result = combine(old, new, op_aval.dtype)
      else:
        consts = [xla.ir_constant(np.asarray(c)) for c in update_jaxpr.consts]
        result, = xla.lower_jaxpr(ctx.module_context, update_jaxpr.jaxpr, consts, [old])
      hlo.return_([result])
    return op.result
  return rule


def _scatter_primitive(name, combine, kinds=None):
  def dtype_rule(operand, indices, updates, **params):
    dtype = _scatter_dtype_rule(operand, indices, updates, name=name)
    if kinds is not None and not kinds(dtype):
      raise TypeError(f"{name} does not accept dtype {dtype.name}")
    return dtype

  def shape_rule(operand, indices, updates, **params):
    return _scatter_shape_rule(operand, indices, updates, name=name, **params)

  prim = standard_primitive(shape_rule, dtype_rule, name, weak_type_rule=_operand_weak_type)
  xla.register_lowering(prim, _scatter_lowering(combine))
  return prim


def _combiner(op):
  """Booleans combine with or/and (NumPy's add/multiply on bool); other dtypes with ``op``."""
  def combine(old, new, dtype):
    if dtype == dtypes.bool_:
      return (hlo.or_ if op in (hlo.add, hlo.maximum) else hlo.and_)(old, new)
    return op(old, new)
  return combine


def _not_complex(dtype):
  return not dtypes.is_complex(dtype)


scatter_p = _scatter_primitive("scatter", lambda old, new, dtype: new)
scatter_add_p = _scatter_primitive("scatter_add", _combiner(hlo.add))
scatter_mul_p = _scatter_primitive("scatter_mul", _combiner(hlo.multiply))
scatter_min_p = _scatter_primitive("scatter_min", _combiner(hlo.minimum), _not_complex)
scatter_max_p = _scatter_primitive("scatter_max", _combiner(hlo.maximum), _not_complex)
scatter_apply_p = _scatter_primitive("scatter_apply", None)


# --- autodiff of the scatters ------------------------------------------------------------
#
# The indices are integers and get no tangent. Where several update windows hit the same
# operand element, ``scatter_add`` sums them (linear), ``scatter_mul`` multiplies them,
# ``scatter_min``/``max`` keep the extreme one (the derivative is shared equally among the
# candidates that attain it, as in JAX), and ``scatter`` keeps one of them (XLA does not say
# which; the JVP finds out which one won by scattering ids, as JAX does).

def _scatter_windows(x, indices, dn, updates_shape, mode):
  """The windows of ``x`` that a scatter with ``dn`` writes, one per update window: a gather
  shaped like the updates (zeros for the windows the scatter drops)."""
  aval = get_aval(x)
  gather_dn = GatherDimensionNumbers(
      offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
      start_index_map=dn.scatter_dims_to_operand_dims,
      operand_batching_dims=dn.operand_batching_dims,
      start_indices_batching_dims=dn.scatter_indices_batching_dims)
  sizes = tuple(_scatter_window_sizes(aval.shape, updates_shape, dn))
  return gather_p.bind(x, indices, dimension_numbers=gather_dn, slice_sizes=sizes,
                       unique_indices=False, indices_are_sorted=False, mode=mode,
                       fill_value=_tangent_fill(mode, aval.dtype))


def _scatter_zero_cts(ct, operand, updates):
  return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
          ad.Zero(updates.aval) if ad.is_undefined_primal(updates) else None]


def _scatter_add_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  g_operand, _, g_updates = tangents
  out = scatter_add_p.bind(operand, indices, updates, **params)
  if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, scatter_add_p.bind(ad.instantiate_zeros(g_operand), indices,
                                 ad.instantiate_zeros(g_updates), **params)

ad.primitive_jvps[scatter_add_p] = _scatter_add_jvp


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
  assert not ad.is_undefined_primal(indices)
  if type(ct) is ad.Zero:
    return _scatter_zero_cts(ct, operand, updates)
  ct_operand = ct if ad.is_undefined_primal(operand) else None
  ct_updates = None
  if ad.is_undefined_primal(updates):
    ct_updates = _scatter_windows(ct, indices, dimension_numbers, updates.aval.shape, mode)
  return [ct_operand, None, ct_updates]

ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose


_SCATTER_MUL_NOT_UNIQUE = ("scatter_mul gradients are only implemented if "
                           "`unique_indices=True`")


def _scatter_mul_jvp_updates(g, operand, indices, updates, **params):
  # out[j] = operand[j] * updates[k] for the one update k that hits j. With repeated
  # indices the tangent needs the product of the other updates at j: as JAX, not done.
  if not params["unique_indices"]:
    raise NotImplementedError(_SCATTER_MUL_NOT_UNIQUE)
  zeros = _zeros(get_aval(operand).shape, get_aval(g).dtype, get_aval(operand))
  return ew.mul(operand, scatter_add_p.bind(zeros, indices, g, **params))


ad.defjvp(scatter_mul_p,
          lambda g, operand, indices, updates, **params:
          scatter_mul_p.bind(g, indices, updates, **params),
          None,
          _scatter_mul_jvp_updates)


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
  assert not ad.is_undefined_primal(indices)
  if type(ct) is ad.Zero:
    return _scatter_zero_cts(ct, operand, updates)
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  ct_operand = ct_updates = None
  if ad.is_undefined_primal(operand):
    # Each operand element is scaled by the product of its updates: a diagonal map.
    ct_operand = scatter_mul_p.bind(ct, indices, updates, **params)
  if ad.is_undefined_primal(updates):
    if ad.is_undefined_primal(operand):
      raise ValueError("scatter_mul is not linear in operand and updates together")
    if not unique_indices:
      raise NotImplementedError(_SCATTER_MUL_NOT_UNIQUE)
    ct_updates = _scatter_windows(ew.mul(ct, operand), indices, dimension_numbers,
                                  updates.aval.shape, mode)
  return [ct_operand, None, ct_updates]

ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremal_jvp(prim, primals, tangents, **params):
  operand, indices, updates = primals
  g_operand, _, g_updates = tangents
  out = prim.bind(operand, indices, updates, **params)
  if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  g_operand = ad.instantiate_zeros(g_operand)
  g_updates = ad.instantiate_zeros(g_updates)
  dn, mode = params["dimension_numbers"], params["mode"]
  shape = get_aval(updates).shape

  def windows(x):
    return _scatter_windows(x, indices, dn, shape, mode)

  # At each update window: which candidates attain the result (each update, and the
  # operand's own value), how many updates attain it and how many updates hit it at all.
  # All of this is primal work; the tangent below is linear in (g_operand, g_updates).
  zeros_u, ones_u = full_like(updates, 0), full_like(updates, 1)
  zeros_x = full_like(operand, 0)
  result = windows(out)
  update_wins = ew.eq(updates, result)
  operand_wins = ew.eq(windows(operand), result)
  n_update_wins = windows(scatter_add_p.bind(
      zeros_x, indices, ew.select(update_wins, ones_u, zeros_u), **params))
  n_hits = windows(scatter_add_p.bind(zeros_x, indices, ones_u, **params))
  n_winners = ew.add(n_update_wins, ew.select(operand_wins, ones_u, zeros_u))
  share = ew.div(ones_u, ew.max(n_winners, ones_u))  # the max only guards dropped windows
  update_coef = ew.select(update_wins, share, zeros_u)
  # The operand's tangent is already in ``g_operand`` once; each of the ``n_hits`` updates
  # at that element takes away its part and adds back the operand's share.
  operand_coef = ew.div(ew.sub(ew.select(operand_wins, share, zeros_u), ones_u),
                        ew.max(n_hits, ones_u))
  t_updates = ew.add(ew.mul(windows(g_operand), operand_coef),
                     ew.mul(g_updates, update_coef))
  return out, scatter_add_p.bind(g_operand, indices, t_updates, **params)

ad.primitive_jvps[scatter_min_p] = functools.partial(_scatter_extremal_jvp, scatter_min_p)
ad.primitive_jvps[scatter_max_p] = functools.partial(_scatter_extremal_jvp, scatter_max_p)


def _winning_updates(operand_shape, indices, updates_shape, params):
  """Which update elements of a ``scatter`` reach its output (another update at the same
  element may overwrite them)? Scatters a distinct positive id per update window into
  zeros and reads back which id each window's elements hold. Returns the boolean mask,
  shaped like the updates, and the scattered ids (zero where the operand survives)."""
  dn = params["dimension_numbers"]
  ids_shape = tuple(1 if d in dn.update_window_dims else s
                    for d, s in enumerate(updates_shape))
  n = int(np.prod(ids_shape, dtype=np.int64))
  id_dtype = np.dtype(np.int32) if n < 2 ** 31 - 1 else dtypes.canonicalize_dtype(np.int64)
  ids = ew.add(iota(id_dtype, n), np.asarray(1, id_dtype)[()])
  ids = broadcast_in_dim(reshape(ids, ids_shape), tuple(updates_shape),
                         tuple(range(len(updates_shape))))
  scattered = scatter_p.bind(_zeros(operand_shape, id_dtype), indices, ids, **params)
  return ew.eq(ids, _scatter_windows(scattered, indices, dn, updates_shape,
                                     params["mode"])), scattered


def _scatter_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  g_operand, _, g_updates = tangents
  if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
    out = scatter_p.bind(operand, indices, updates, **params)
    return out, ad.Zero.from_primal_value(out)
  g_operand = ad.instantiate_zeros(g_operand)
  g_updates = ad.instantiate_zeros(g_updates)
  if params["unique_indices"]:
    # No two windows overlap: linear in (operand, updates) together.
    return (scatter_p.bind(operand, indices, updates, **params),
            scatter_p.bind(g_operand, indices, g_updates, **params))
  # Which of several overlapping updates survives is up to XLA, and nothing promises that
  # two scatters pick the same one. So find the survivors once (by their ids), mask away
  # everything else, and compute both the output and its tangent as scatter_adds of the
  # masked values, which then agree by construction.
  won, scattered = _winning_updates(get_aval(operand).shape, indices,
                                    get_aval(updates).shape, params)
  kept = ew.eq(scattered, full_like(scattered, 0))  # operand elements nobody overwrote

  def masked(mask, x):
    return ew.select(mask, x, full_like(x, 0))

  out = scatter_add_p.bind(masked(kept, operand), indices, masked(won, updates), **params)
  tangent = scatter_add_p.bind(masked(kept, g_operand), indices, masked(won, g_updates),
                               **params)
  return out, tangent

ad.primitive_jvps[scatter_p] = _scatter_jvp


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers,
                       indices_are_sorted, unique_indices, mode):
  assert not ad.is_undefined_primal(indices)
  if type(ct) is ad.Zero:
    return _scatter_zero_cts(ct, operand, updates)
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  updates_shape = _aval_of(updates).shape
  ct_operand = ct_updates = None
  if ad.is_undefined_primal(operand):
    # Overwritten elements do not reach the output.
    zeros = _zeros(updates_shape, get_aval(ct).dtype, _aval_of(updates))
    ct_operand = scatter_p.bind(ct, indices, zeros, **params)
  if ad.is_undefined_primal(updates):
    ct_updates = _scatter_windows(ct, indices, dimension_numbers, updates_shape, mode)
    if not unique_indices:
      # Only the surviving update of each element gets its cotangent. (The JVP above never
      # emits a non-unique scatter of tangents; this is for other linear uses of scatter.
      # It assumes XLA picks the same survivor in this id scatter as in the transposed one,
      # which holds for a deterministic backend such as CPU.)
      won, _ = _winning_updates(operand.aval.shape if ad.is_undefined_primal(operand)
                                else get_aval(operand).shape, indices, updates_shape, params)
      ct_updates = ew.select(won, ct_updates, _zeros(updates_shape, get_aval(ct).dtype,
                                                         _aval_of(updates)))
  return [ct_operand, None, ct_updates]

ad.primitive_transposes[scatter_p] = _scatter_transpose


def _scatter_apply_jvp(primals, tangents, **params):
  raise NotImplementedError(
      "Differentiation of scatter_apply (x.at[idx].apply(func)) is not implemented (nor in "
      "JAX); write x.at[idx].set(func(x[idx])) instead")

ad.primitive_jvps[scatter_apply_p] = _scatter_apply_jvp


def _scatter_batch_rule(prim, vals, dims, *, dimension_numbers, **params):
  # The result is batched whenever anything is: operand and updates get the batch
  # dimension in front (broadcast when unbatched).
  operand, indices, updates = vals
  operand_bdim, indices_bdim, updates_bdim = dims
  dn = dimension_numbers
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  operand = batching.bdim_at_front(operand, operand_bdim, size)
  updates = batching.bdim_at_front(updates, updates_bdim, size)
  if indices_bdim is None:
    # Same indices for every batch element: the batch is a leading window dimension.
    new_dn = ScatterDimensionNumbers(
        update_window_dims=(0,) + _shift(dn.update_window_dims),
        inserted_window_dims=_shift(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=_shift(dn.operand_batching_dims),
        scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
  else:
    # Indices per batch element: pair the batch dimensions of operand and indices.
    indices = batching.moveaxis(indices, indices_bdim, 0)
    new_dn = ScatterDimensionNumbers(
        update_window_dims=_shift(dn.update_window_dims),
        inserted_window_dims=_shift(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
        scatter_indices_batching_dims=(0,) + _shift(dn.scatter_indices_batching_dims))
  return prim.bind(operand, indices, updates, dimension_numbers=new_dn, **params), 0

for _prim in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p,
              scatter_apply_p):
  batching.primitive_batchers[_prim] = functools.partial(_scatter_batch_rule, _prim)
del _prim


def _bind_scatter(prim, operand, scatter_indices, updates, dimension_numbers,
                  indices_are_sorted, unique_indices, mode, **extra):
  dn = _canonical_dnums(ScatterDimensionNumbers, dimension_numbers, prim.name)
  return prim.bind(operand, scatter_indices, updates, dimension_numbers=dn,
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices),
                   mode=GatherScatterMode.from_any(mode), **extra)


def scatter(operand, scatter_indices, updates, dimension_numbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """XLA's Scatter: ``operand`` with ``updates`` written at ``scatter_indices``.

  The last dimension of ``scatter_indices`` holds index vectors; ``dimension_numbers`` (a
  ``ScatterDimensionNumbers``) maps them to operand dimensions
  (``scatter_dims_to_operand_dims``) and says which update dimensions are window dimensions
  (``update_window_dims``) and which operand dimensions windows lack
  (``inserted_window_dims``). With repeated indices one of the updates wins, which one is
  unspecified. ``updates`` must have ``operand``'s dtype (else ``TypeError``).
  Differentiable in ``operand`` and ``updates``; batches under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter(jnp.zeros(4), jnp.array([[1], [3]]), jnp.array([1., 2.]), dn)
    Array([0., 1., 0., 2.], dtype=float32)
  """
  return _bind_scatter(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_add(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """Scatter that adds ``updates`` to the elements of ``operand`` at ``scatter_indices``.

  Dimension numbers and modes are as in ``scatter``; repeated indices accumulate.
  Differentiable and batched under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> idx, upd = jnp.array([[1], [3], [1]]), jnp.array([1., 2., 3.])
    >>> lax.scatter_add(jnp.ones(4), idx, upd, dn)
    Array([1., 5., 1., 3.], dtype=float32)
  """
  return _bind_scatter(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """Scatter that subtracts ``updates`` from the elements of ``operand`` at ``scatter_indices``.

  Dimension numbers and modes are as in ``scatter``; repeated indices accumulate.
  Differentiable and batched under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> idx, upd = jnp.array([[1], [3], [1]]), jnp.array([1., 2., 3.])
    >>> lax.scatter_sub(jnp.ones(4), idx, upd, dn)
    Array([ 1., -3.,  1., -1.], dtype=float32)
  """
  return _bind_scatter(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """Scatter that multiplies by ``updates`` the elements of ``operand`` at ``scatter_indices``.

  Dimension numbers and modes are as in ``scatter``; repeated indices accumulate.
  Differentiable and batched under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> idx, upd = jnp.array([[1], [3], [1]]), jnp.array([1., 2., 3.])
    >>> lax.scatter_mul(jnp.ones(4), idx, upd, dn)
    Array([1., 3., 1., 2.], dtype=float32)
  """
  return _bind_scatter(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_min(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """Scatter keeping the minimum of ``operand``'s elements and ``updates`` at ``scatter_indices``.

  Dimension numbers and modes are as in ``scatter``; repeated indices keep the minimum of all.
  Differentiable and batched under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> idx, upd = jnp.array([[1], [3], [1]]), jnp.array([1., 2., 3.])
    >>> lax.scatter_min(jnp.ones(4), idx, upd, dn)
    Array([1., 1., 1., 1.], dtype=float32)
  """
  return _bind_scatter(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


def scatter_max(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
  """Scatter keeping the maximum of ``operand``'s elements and ``updates`` at ``scatter_indices``.

  Dimension numbers and modes are as in ``scatter``; repeated indices keep the maximum of all.
  Differentiable and batched under ``vmap``.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    updates: the values to combine into ``operand`` (of ``operand``'s dtype).
    dimension_numbers: a ``ScatterDimensionNumbers``.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name: None and ``'fill'`` drop
      out-of-bounds updates, ``'clip'`` clamps them into range.

  Returns:
    An array like ``operand`` with the updates applied.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> idx, upd = jnp.array([[1], [3], [1]]), jnp.array([1., 2., 3.])
    >>> lax.scatter_max(jnp.ones(4), idx, upd, dn)
    Array([1., 3., 1., 2.], dtype=float32)
  """
  return _bind_scatter(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode)


@functools.lru_cache(maxsize=128)
def _unary_scalar_jaxpr(func, dtype):
  """``func`` traced on a scalar of ``dtype`` (cached, so that the eager executable of a
  repeated ``scatter_apply`` is reused), its result converted back to ``dtype``."""

  def fun(x):
    return [convert_element_type(func(x), dtype)]

  closed = trace_to_jaxpr(fun, [ShapedArray((), dtype)], debug_info="scatter_apply")
  if any(isinstance(c, Tracer) for c in closed.consts):
    raise TypeError("scatter_apply: func must not close over traced values")
  out = closed.out_avals[0]
  if out.shape != ():
    raise TypeError(f"scatter_apply: func must map a scalar to a scalar, got {out.str_short()}")
  return closed


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode=None):
  """Applies the scalar function ``func`` to the elements of ``operand`` at ``scatter_indices``.

  Like a scatter whose update is ``func(old)``; ``update_shape`` is the shape an updates
  array would have. ``func`` must map a scalar to a scalar and must not close over traced
  values (else ``TypeError``); its result is cast back to ``operand``'s dtype. Repeated
  indices apply ``func`` repeatedly.

  Args:
    operand: the array to update.
    scatter_indices: integer array of index vectors (in its last dimension).
    func: function of one scalar.
    dimension_numbers: a ``ScatterDimensionNumbers``.
    update_shape: keyword-only shape of the (implicit) updates array.
    indices_are_sorted: keyword-only promise that indices are sorted.
    unique_indices: keyword-only promise that indices do not repeat.
    mode: keyword-only ``GatherScatterMode`` or its name.

  Returns:
    An array like ``operand`` with ``func`` applied at the indexed positions.

  Examples:
    >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                  scatter_dims_to_operand_dims=(0,))
    >>> lax.scatter_apply(jnp.ones(4), jnp.array([[1], [3]]), lambda z: z * 5, dn,
    ...                   update_shape=(2,))
    Array([1., 5., 1., 5.], dtype=float32)
  """
  dtype = get_aval(operand).dtype
  jaxpr = _unary_scalar_jaxpr(func, dtype)
  updates = broadcast_in_dim(np.zeros((), dtype), tuple(update_shape), ())
  return _bind_scatter(scatter_apply_p, operand, scatter_indices, updates, dimension_numbers,
                       indices_are_sorted, unique_indices, mode, update_jaxpr=jaxpr)


# --- scatter_sub -------------------------------------------------------------------------
# Its own primitive (JAX's ``scatter-sub``), linear in operand and updates like scatter_add.

scatter_sub_p = _scatter_primitive("scatter-sub", lambda old, new, dtype: hlo.subtract(old, new),
                                   lambda d: d != dtypes.bool_)


def _scatter_sub_jvp(primals, tangents, **params):
  operand, indices, updates = primals
  g_operand, _, g_updates = tangents
  out = scatter_sub_p.bind(operand, indices, updates, **params)
  if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
    return out, ad.Zero.from_primal_value(out)
  return out, scatter_sub_p.bind(ad.instantiate_zeros(g_operand), indices,
                                 ad.instantiate_zeros(g_updates), **params)

ad.primitive_jvps[scatter_sub_p] = _scatter_sub_jvp


def _scatter_sub_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
  ct_operand, _, ct_updates = _scatter_add_transpose(
      ct, operand, indices, updates, dimension_numbers=dimension_numbers,
      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
  if ct_updates is not None and type(ct_updates) is not ad.Zero:
    ct_updates = ew.neg(ct_updates)
  return [ct_operand, None, ct_updates]

ad.primitive_transposes[scatter_sub_p] = _scatter_sub_transpose
batching.primitive_batchers[scatter_sub_p] = functools.partial(_scatter_batch_rule,
                                                               scatter_sub_p)
__all__ += ["scatter_sub_p"]


def index_take(src, idxs, axes):
  """Takes entries of ``src`` by index arrays along ``axes``, as one gather.

  Like ``src[idxs[0], idxs[1], ...]`` with the indexed ``axes``: the index arrays are 1-d and
  of equal length, negative indices wrap, and the remaining dimensions follow the picked
  entries. A count of index arrays different from ``len(axes)`` raises ``ValueError``.

  Args:
    src: the array to index.
    idxs: a sequence of 1-d integer index arrays.
    axes: the dimensions they index (static).

  Returns:
    An array of shape ``(len(idxs[0]),) + remaining dimensions``.

  Examples:
    >>> x = jnp.arange(6.).reshape(3, 2)
    >>> lax.index_take(x, (jnp.array([2, -1]),), (0,))
    Array([[4., 5.],
           [4., 5.]], dtype=float32)
  """
  axes = tuple(operator.index(a) for a in axes)
  idxs = list(idxs)
  if len(idxs) != len(axes):
    raise ValueError(f"index_take: got {len(idxs)} index arrays for {len(axes)} axes")
  src_aval = get_aval(src)
  columns = []
  for i, ax in zip(idxs, axes):
    size = src_aval.shape[ax]
    i_aval = get_aval(i)
    dtype = i_aval.dtype if dtypes.is_int(i_aval.dtype) else np.dtype(np.int32)
    i = convert_element_type(i, dtype)
    r = ew.rem(i, np.asarray(size, dtype))
    r = ew.select(ew.lt(r, np.asarray(0, dtype)), ew.add(r, np.asarray(size, dtype)), r)
    columns.append(reshape(r, (get_aval(r).shape[0], 1)))
  indices = concatenate(columns, 1) if len(columns) > 1 else columns[0]
  slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(src_aval.shape))
  dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, src_aval.ndim - len(axes) + 1)),
                                 collapsed_slice_dims=tuple(sorted(axes)),
                                 start_index_map=axes)
  return gather(src, indices, dnums, slice_sizes)


__all__ += ["index_take"]


# Pure data movement: bytes but no arithmetic in the cost estimates (hlox.viz).
for _p in (dynamic_slice_p, dynamic_update_slice_p, gather_p):
  cost.register_cost(_p, cost.data_movement_cost)
del _p


sharding_types.sharding_rules[gather_p] = sharding_types.gather_rule
sharding_types.sharding_rules[dynamic_slice_p] = sharding_types.varying_shape_rule(
    "dynamic_slice")
sharding_types.sharding_rules[dynamic_update_slice_p] = \
    sharding_types.dynamic_update_slice_rule
for _p in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p,
           scatter_apply_p, scatter_sub_p):
  sharding_types.sharding_rules[_p] = sharding_types.scatter_rule
