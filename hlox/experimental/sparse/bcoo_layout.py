"""Shape and layout operations on BCOO arrays: ``bcoo_broadcast_in_dim``,
``bcoo_concatenate``, ``bcoo_reshape``, ``bcoo_rev``, ``bcoo_slice``, ``bcoo_dynamic_slice``,
``bcoo_squeeze`` and ``bcoo_update_layout`` (``jax.experimental.sparse``'s).

Batch and dense axes move with the buffers (they are axes of ``data`` and ``indices``); sparse
axes move by rewriting index columns. An entry whose rewritten index leaves the array becomes
padding: its index is set to the out-of-bounds fill and its data to zero, so no later
rewriting can bring it back in bounds.
"""
import math
import operator
import warnings

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import ShapeDtypeStruct, eval_shape
from hlox.experimental.sparse.bcoo import (
    BCOO, _fromdense_buffers, bcoo_sum_duplicates, bcoo_transpose)
from hlox.experimental.sparse.util import SparseEfficiencyError, SparseEfficiencyWarning

__all__ = ["bcoo_broadcast_in_dim", "bcoo_concatenate", "bcoo_dynamic_slice", "bcoo_reshape",
           "bcoo_rev", "bcoo_slice", "bcoo_squeeze", "bcoo_update_layout"]


def _sparse_shape(mat: BCOO) -> tuple:
  return mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse]


def _with_padding(data, indices, keep, sparse_shape):
  """Entries where ``keep`` is False become padding (fill index, zero data)."""
  fill = jnp.array(sparse_shape, indices.dtype)
  indices = jnp.where(keep[..., None], indices, fill)
  keep = keep.reshape(keep.shape + (1,) * (data.ndim - keep.ndim))
  return jnp.where(keep, data, jnp.zeros((), data.dtype)), indices


def _in_bounds(indices, sparse_shape):
  return ((indices >= 0) & (indices < jnp.array(sparse_shape, indices.dtype))).all(-1)


def _limit_nse(mat: BCOO) -> BCOO:
  """``mat`` with at most one entry per sparse position (summing duplicates) when it stores
  more entries than its sparse part has positions."""
  max_nse = math.prod(_sparse_shape(mat))
  if mat.nse > max_nse:
    return bcoo_sum_duplicates(mat, nse=max_nse)
  return mat


# --- new and removed axes -----------------------------------------------------------------

def bcoo_broadcast_in_dim(mat: BCOO, *, shape, broadcast_dimensions, sharding=None) -> BCOO:
  """``lax.broadcast_in_dim`` of a BCOO array. New axes before the first sparse axis are
  batch axes, new axes among the sparse axes sparse (of size 1), after them dense."""
  del sharding
  shape = tuple(operator.index(s) for s in shape)
  dims = tuple(operator.index(d) for d in broadcast_dimensions)
  if len(dims) != mat.ndim:
    raise ValueError(f"{mat.shape=} and broadcast_dimensions={dims} must have the same "
                     "length")
  n_batch, n_sparse, n_dense = mat.n_batch, mat.n_sparse, mat.n_dense
  batch_dims, sparse_dims = dims[:n_batch], dims[n_batch:n_batch + n_sparse]
  dense_dims = dims[n_batch + n_sparse:]
  if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
    raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
  if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
    raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
  new_batch = min(dims[n_batch:], default=len(shape))
  new_dense = len(shape) - min(dense_dims) if n_dense else 0
  new_sparse = len(shape) - new_batch - new_dense
  if math.prod(_sparse_shape(mat)) != math.prod(shape[new_batch:new_batch + new_sparse]):
    raise NotImplementedError("Adding sparse dimensions with lengths != 1")
  data, indices, nse = mat.data, mat.indices, mat.nse
  if (new_batch, new_dense) != (n_batch, n_dense):
    data = lax.broadcast_in_dim(
        data, (*shape[:new_batch], nse, *shape[new_batch + new_sparse:]),
        (*batch_dims, new_batch, *(d + 1 - new_sparse for d in dense_dims)))
    indices = lax.broadcast_in_dim(indices, (*shape[:new_batch], nse, n_sparse),
                                   (*batch_dims, new_batch, new_batch + 1))
  if new_sparse != n_sparse:
    # New sparse axes have size 1: every entry sits at index 0 along them.
    columns = np.array(sparse_dims, np.int32) - new_batch
    indices = jnp.zeros((*indices.shape[:-1], new_sparse), indices.dtype) \
        .at[..., columns].set(indices)
  return BCOO((data, indices), shape=shape)


def bcoo_squeeze(arr: BCOO, *, dimensions) -> BCOO:
  """``lax.squeeze`` of a BCOO array: drop the given axes, all of size 1."""
  ndim = arr.ndim
  dims = sorted({operator.index(d) % ndim if ndim else operator.index(d)
                 for d in dimensions})
  if any(not 0 <= d < ndim for d in dims) or any(arr.shape[d] != 1 for d in dims):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, "
                     f"got shape={arr.shape} and dimensions={tuple(dimensions)}")
  n_batch, n_sparse = arr.n_batch, arr.n_sparse
  batch = [d for d in dims if d < n_batch]
  sparse = [d - n_batch for d in dims if n_batch <= d < n_batch + n_sparse]
  dense = [d - n_sparse + 1 for d in dims if d >= n_batch + n_sparse]
  data = lax.squeeze(arr.data, batch + dense)
  indices = lax.squeeze(arr.indices, batch)
  kept = [c for c in range(n_sparse) if c not in sparse]
  out_shape = tuple(s for d, s in enumerate(arr.shape) if d not in dims)
  new_sparse_shape = tuple(arr.shape[n_batch + c] for c in kept)
  if sparse:
    # An entry out of bounds in a dropped column is padding; it must stay padding.
    keep = _in_bounds(indices, _sparse_shape(arr))
    indices = indices[..., np.array(kept, np.int32)] if kept else \
        jnp.zeros(indices.shape[:-1] + (0,), indices.dtype)
    data, indices = _with_padding(data, indices, keep, new_sparse_shape)
  return BCOO((data, indices), shape=out_shape, indices_sorted=arr.indices_sorted,
              unique_indices=arr.unique_indices)


# --- concatenation and reversal ---------------------------------------------------------

def _set_nse(mat: BCOO, nse: int) -> BCOO:
  """``mat`` padded (or truncated) to ``nse`` entries per batch element."""
  if nse == mat.nse:
    return mat
  if nse < mat.nse:
    data = mat.data[(slice(None),) * mat.n_batch + (slice(nse),)]
    return BCOO((data, mat.indices[..., :nse, :]), shape=mat.shape)
  pad = nse - mat.nse
  data = jnp.concatenate([mat.data, jnp.zeros((*mat.data.shape[:mat.n_batch], pad,
                                               *mat.data.shape[mat.n_batch + 1:]),
                                              mat.dtype)], axis=mat.n_batch)
  fill = jnp.broadcast_to(jnp.array(_sparse_shape(mat), mat.indices.dtype),
                          (*mat.indices.shape[:-2], pad, mat.n_sparse))
  indices = jnp.concatenate([mat.indices, fill], axis=-2)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
              unique_indices=mat.unique_indices)


def _full_batch(mat: BCOO) -> BCOO:
  """``mat`` with its buffers' batch axes materialised to the array's batch shape."""
  batch = mat.shape[:mat.n_batch]
  data = jnp.broadcast_to(mat.data, batch + mat.data.shape[mat.n_batch:])
  indices = jnp.broadcast_to(mat.indices, batch + mat.indices.shape[mat.n_batch:])
  return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
              unique_indices=mat.unique_indices)


def bcoo_concatenate(operands, *, dimension: int) -> BCOO:
  """``lax.concatenate`` of BCOO arrays with one layout, along a batch or sparse axis."""
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequence of operands")
  out = eval_shape(lambda *xs: lax.concatenate(xs, dimension),
                   *(ShapeDtypeStruct(op.shape, op.dtype) for op in operands))
  dimension = operator.index(dimension)
  if len({op.n_dense for op in operands}) > 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
  if len({op.n_batch for op in operands}) > 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching batch dimensions.")
  n_batch, n_sparse = operands[0].n_batch, operands[0].n_sparse
  operands = [_full_batch(op) for op in operands]
  if dimension < n_batch:
    nse = max(op.nse for op in operands)
    operands = [_set_nse(op, nse) for op in operands]
    data = jnp.concatenate([op.data for op in operands], axis=dimension)
    indices = jnp.concatenate([op.indices for op in operands], axis=dimension)
  elif dimension < n_batch + n_sparse:
    col = dimension - n_batch
    total = out.shape[dimension]
    offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
    shifted = []
    for op, offset in zip(operands, offsets):
      ind = op.indices
      oob = ~_in_bounds(ind, _sparse_shape(op))[..., None]
      moved = ind.at[..., col].add(ind.dtype.type(offset))
      # Padding must stay out of bounds of the concatenated axis too.
      shifted.append(jnp.where(oob, moved.at[..., col].set(total), moved))
    data = jnp.concatenate([op.data for op in operands], axis=n_batch)
    indices = jnp.concatenate(shifted, axis=n_batch)
  else:
    raise NotImplementedError("Concatenation along dense dimensions.")
  return BCOO((data, indices), shape=out.shape)


def bcoo_rev(operand: BCOO, dimensions) -> BCOO:
  """``lax.rev`` of a BCOO array: reverse the order of elements along ``dimensions``."""
  n_batch, n_sparse = operand.n_batch, operand.n_sparse
  data, indices = operand.data, operand.indices
  for d in sorted({operator.index(d) for d in dimensions}):
    if not 0 <= d < operand.ndim:
      raise ValueError(f"rev dimensions {tuple(dimensions)} out of range for shape "
                       f"{operand.shape}")
    if d < n_batch:  # a batch buffer of size 1 is shared and stays as it is
      data = jnp.flip(data, d) if data.shape[d] > 1 else data
      indices = jnp.flip(indices, d) if indices.shape[d] > 1 else indices
    elif d < n_batch + n_sparse:
      col, size = d - n_batch, operand.shape[d]
      column = indices[..., col]
      indices = indices.at[..., col].set(jnp.where(column < size, size - 1 - column, column))
    else:
      data = jnp.flip(data, d - n_sparse + 1)
  return BCOO((data, indices), shape=operand.shape, unique_indices=operand.unique_indices)


# --- slicing ------------------------------------------------------------------------------

def _slice_sparse(mat: BCOO, data, indices, starts, sizes, strides, out_shape) -> BCOO:
  """Rewrite the sparse index columns for a slice of ``sizes`` elements from ``starts`` with
  ``strides`` (per sparse axis); entries outside it become padding."""
  if mat.n_sparse:
    starts = jnp.stack([jnp.asarray(s, indices.dtype) for s in starts])
    strides_arr = jnp.array(strides, indices.dtype)
    offset = indices - starts
    new = offset // strides_arr
    keep = _in_bounds(indices, _sparse_shape(mat)) & \
        ((offset % strides_arr) == 0).all(-1) & _in_bounds(new, tuple(sizes))
    data, indices = _with_padding(data, new, keep, tuple(sizes))
  return _limit_nse(BCOO((data, indices), shape=out_shape))


def bcoo_slice(mat: BCOO, *, start_indices, limit_indices, strides=None) -> BCOO:
  """``lax.slice`` of a BCOO array (the layout is kept; surplus entries are merged away)."""
  ndim = mat.ndim
  starts = [operator.index(i) for i in start_indices]
  limits = [operator.index(i) for i in limit_indices]
  strides = [1] * ndim if strides is None else [operator.index(s) for s in strides]
  if not len(starts) == len(limits) == len(strides) == ndim:
    raise ValueError(f"bcoo_slice: start_indices, limit_indices and strides must each have "
                     f"length {ndim} for shape {mat.shape}")
  if any(not 0 <= s <= l <= n for s, l, n in zip(starts, limits, mat.shape)):
    raise ValueError(f"bcoo_slice: invalid slice {starts=}, {limits=} for shape {mat.shape}")
  if any(s < 1 for s in strides):
    raise ValueError(f"bcoo_slice: strides must be positive, got {strides}")
  out_shape = tuple(-(-(l - s) // st) for s, l, st in zip(starts, limits, strides))
  n_batch, n_sparse = mat.n_batch, mat.n_sparse

  def batch_slice(buf, extra):
    lo = [0 if buf.shape[d] == 1 else starts[d] for d in range(n_batch)]
    hi = [1 if buf.shape[d] == 1 else limits[d] for d in range(n_batch)]
    st = [1 if buf.shape[d] == 1 else strides[d] for d in range(n_batch)]
    return lax.slice(buf, lo + [0] * extra, hi + list(buf.shape[n_batch:]), st + [1] * extra)
  data = batch_slice(mat.data, 1 + mat.n_dense)
  indices = batch_slice(mat.indices, 2)
  dense = range(n_batch + n_sparse, ndim)
  data = lax.slice(data, [0] * (n_batch + 1) + [starts[d] for d in dense],
                   list(data.shape[:n_batch + 1]) + [limits[d] for d in dense],
                   [1] * (n_batch + 1) + [strides[d] for d in dense])
  sp = range(n_batch, n_batch + n_sparse)
  return _slice_sparse(mat, data, indices, [starts[d] for d in sp],
                       [out_shape[d] for d in sp], [strides[d] for d in sp], out_shape)


def bcoo_dynamic_slice(mat: BCOO, start_indices, slice_sizes) -> BCOO:
  """``lax.dynamic_slice`` of a BCOO array: starts may be traced, and are clamped so the
  slice fits, as in ``lax.dynamic_slice``."""
  ndim = mat.ndim
  sizes = [operator.index(s) for s in slice_sizes]
  if len(start_indices) != ndim or len(sizes) != ndim:
    raise ValueError(f"bcoo_dynamic_slice: start_indices and slice_sizes must each have "
                     f"length {ndim} for shape {mat.shape}")
  if any(not 0 <= s <= n for s, n in zip(sizes, mat.shape)):
    raise TypeError(f"slice_sizes {tuple(sizes)} must be within the shape {mat.shape}")
  starts = [jnp.clip(jnp.asarray(s).astype(np.int32), 0, n - size)
            for s, n, size in zip(start_indices, mat.shape, sizes)]
  n_batch, n_sparse = mat.n_batch, mat.n_sparse

  def batch_slice(buf):
    lo = [0 if buf.shape[d] == 1 else starts[d] for d in range(n_batch)]
    size = [1 if buf.shape[d] == 1 else sizes[d] for d in range(n_batch)]
    rest = buf.ndim - n_batch
    return lax.dynamic_slice(buf, lo + [0] * rest, size + list(buf.shape[n_batch:]))
  data, indices = batch_slice(mat.data), batch_slice(mat.indices)
  dense = range(n_batch + n_sparse, ndim)
  data = lax.dynamic_slice(data, [0] * (n_batch + 1) + [starts[d] for d in dense],
                           list(data.shape[:n_batch + 1]) + [sizes[d] for d in dense])
  sp = range(n_batch, n_batch + n_sparse)
  return _slice_sparse(mat, data, indices, [starts[d] for d in sp], [sizes[d] for d in sp],
                       [1] * n_sparse, tuple(sizes))


# --- reshaping and layout -------------------------------------------------------------------

def bcoo_reshape(mat: BCOO, *, new_sizes, dimensions=None, sharding=None) -> BCOO:
  """``lax.reshape`` of a BCOO array: batch axes reshape among themselves, sparse axes among
  themselves (by re-raveling the indices), and dense axes among themselves."""
  del sharding
  new_sizes = tuple(operator.index(s) for s in new_sizes)
  if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
    mat = bcoo_transpose(mat, permutation=dimensions)
  if math.prod(new_sizes) != mat.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                    f"shape {mat.shape}")
  n_batch, n_sparse = mat.n_batch, mat.n_sparse
  batch_shape = mat.shape[:n_batch]
  if mat.data.shape[:n_batch] != batch_shape or mat.indices.shape[:n_batch] != batch_shape:
    if n_batch:
      raise NotImplementedError("reshape of arrays with broadcasted batch dimensions.")
  batch_size, sparse_size = math.prod(batch_shape), math.prod(_sparse_shape(mat))
  cumulative = np.cumprod((1,) + new_sizes)
  if batch_size != 1 and batch_size not in cumulative:
    raise ValueError("bcoo_reshape: new shape cannot mix batch and sparse dimensions; got "
                     f"shape={mat.shape} new_shape={new_sizes} with n_batch={n_batch}")
  if sparse_size != 1 and batch_size * sparse_size not in cumulative:
    raise ValueError("bcoo_reshape: new shape cannot mix sparse and dense dimensions; got "
                     f"shape={mat.shape} new_shape={new_sizes} with n_dense={mat.n_dense}")
  # Size-1 axes at a boundary go to the earlier kind, as JAX splits them.
  i1 = int(np.searchsorted(cumulative[1:], batch_size, side="right"))
  i2 = int(np.searchsorted(cumulative[1:], batch_size * sparse_size, side="right"))
  new_batch, new_sparse, new_dense = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
  data = mat.data.reshape((*new_batch, mat.nse, *new_dense))
  indices = mat.indices.reshape((*new_batch, mat.nse, n_sparse))
  keep = _in_bounds(indices, _sparse_shape(mat))
  if new_sparse and n_sparse:
    flat = jnp.ravel_multi_index(tuple(indices[..., i] for i in range(n_sparse)),
                                 _sparse_shape(mat), mode="clip")
    indices = jnp.stack(jnp.unravel_index(flat, new_sparse), axis=-1).astype(indices.dtype)
  else:  # all sparse axes have size 1: every entry sits at index 0
    indices = jnp.zeros((*new_batch, mat.nse, len(new_sparse)), indices.dtype)
  data, indices = _with_padding(data, indices, keep, new_sparse)
  return BCOO((data, indices), shape=new_sizes)


def bcoo_update_layout(mat: BCOO, *, n_batch=None, n_dense=None,
                       on_inefficient="error") -> BCOO:
  """``mat`` with ``n_batch`` batch and ``n_dense`` dense axes. Adding batch or dense axes
  (of size > 1) can store many zeros: by default that raises ``SparseEfficiencyError``
  (``on_inefficient='warn'`` warns, ``None`` allows it)."""
  n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
  n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
  if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
    return mat
  if on_inefficient not in ("error", "warn", None):
    raise ValueError(f"on_inefficent={on_inefficient!r}; expected one of "
                     "['error', 'warn', None].")
  if n_batch < 0:
    raise ValueError(f"n_batch must be non-negative; got {n_batch}")
  if n_dense < 0:
    raise ValueError(f"n_dense must be non-negative; got {n_dense}")
  if n_batch + n_dense > mat.ndim:
    raise ValueError(f"sum of {n_batch=} and {n_dense=} cannot be larger than "
                     f"mat.ndim={mat.ndim}.")

  def inefficient(msg):
    if on_inefficient == "error":
      raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                  "argument of bcoo_update_layout to 'warn' or None.")
    if on_inefficient == "warn":
      warnings.warn(msg + " To disable this warning, set the on_inefficient argument of "
                    "bcoo_update_layout to None.", SparseEfficiencyWarning, stacklevel=2)
  shape = mat.shape
  if n_dense > mat.n_dense and any(d > 1 for d in shape[mat.ndim - n_dense:
                                                        mat.ndim - mat.n_dense]):
    inefficient(f"For matrix of shape {shape}, increasing n_dense from {mat.n_dense} to "
                f"{n_dense} results in inefficient storage.")
  if n_batch > mat.n_batch and any(d > 1 for d in shape[mat.n_batch:n_batch]):
    inefficient(f"For matrix of shape {shape}, increasing n_batch from {mat.n_batch} to "
                f"{n_batch} results in inefficient storage.")
  # Entries per new batch element: old batch axes folded in multiply them, and so do dense
  # axes turned sparse; axes moving the other way can only merge entries.
  nse = mat.nse * math.prod(shape[n_batch:mat.n_batch]) * \
      math.prod(shape[mat.ndim - mat.n_dense:mat.ndim - n_dense])
  nse = min(nse, math.prod(shape[n_batch:mat.ndim - n_dense]))
  # The conversion goes through the dense array (XLA has no sparse kernels to do better).
  data, indices = _fromdense_buffers(mat.todense(), nse=nse, n_batch=n_batch,
                                     n_dense=n_dense, index_dtype=mat.indices.dtype)
  return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)



# --- BCOO methods built on these operations (installed here: bcoo.py cannot import this
# module, which needs the class) ---------------------------------------------------------------

def _reshape_method(self, *args, **kwargs) -> BCOO:
  """The array with a new shape (``jnp.reshape``'s arguments; C order only)."""
  order = kwargs.pop("order", "C")
  shape = kwargs.pop("shape", kwargs.pop("newshape", None))
  if kwargs or order != "C":
    raise NotImplementedError(f"BCOO.reshape with {kwargs or {'order': order}}")
  if shape is None:
    shape = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
  shape = tuple(operator.index(s) for s in shape)
  if shape.count(-1) == 1:
    known = math.prod(s for s in shape if s != -1)
    shape = tuple(self.size // known if s == -1 else s for s in shape)
  return bcoo_reshape(self, new_sizes=shape)


def _update_layout_method(self, *, n_batch=None, n_dense=None,
                          on_inefficient="error") -> BCOO:
  """The array with ``n_batch`` batch and ``n_dense`` dense axes (see
  ``bcoo_update_layout``)."""
  return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                            on_inefficient=on_inefficient)


BCOO.reshape = _reshape_method
BCOO.update_layout = _update_layout_method
