"""NumPy indexing of BCOO arrays. Basic indices (``x[1, ::2, None]``: integers, slices of
any step, ``None``, ``Ellipsis``) are compositions of ``bcoo_slice``, ``bcoo_rev``,
``bcoo_squeeze`` and ``bcoo_broadcast_in_dim`` and keep the layout. Indices with concrete
integer or boolean arrays map every stored entry to the output positions that read it (NumPy
computes that map on positions), so the result has only sparse axes."""
import math
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import ShapeDtypeStruct, eval_shape, vmap
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.experimental.sparse.bcoo import BCOO, bcoo_transpose
from hlox.experimental.sparse.bcoo_layout import (
    bcoo_broadcast_in_dim, bcoo_dynamic_slice, bcoo_reshape, bcoo_rev, bcoo_slice,
    bcoo_squeeze, bcoo_update_layout)

__all__ = ["bcoo_gather", "bcoo_getitem"]


def _expand(idx, ndim: int) -> list:
  """``idx`` as a list with ``Ellipsis`` expanded and trailing full slices added."""
  idx = list(idx) if isinstance(idx, tuple) else [idx]
  if sum(i is Ellipsis for i in idx) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  n_real = sum(i is not None and i is not Ellipsis for i in idx)
  if n_real > ndim:
    raise IndexError(f"Too many indices: {ndim}-dimensional array, but {n_real} were indexed")
  if Ellipsis in idx:
    at = idx.index(Ellipsis)
    idx[at:at + 1] = [slice(None)] * (ndim - n_real)
    return idx
  return idx + [slice(None)] * (ndim - n_real)


def _is_array_index(i) -> bool:
  return isinstance(i, (np.ndarray, list, Tracer)) or (hasattr(i, "shape") and
                                                       not isinstance(i, np.generic))


def _advanced_getitem(mat: BCOO, idx) -> BCOO:
  """``mat[idx]`` with array indices: each output position reads one input position, so a
  stored entry at position ``q`` is copied to every output position reading ``q``."""
  if mat.n_dense:
    raise NotImplementedError("array indexing of BCOO arrays with dense dimensions")
  if any(isinstance(i, Tracer) for i in (idx if isinstance(idx, tuple) else (idx,))):
    raise ConcretizationTypeError(
        "indexing a BCOO array with traced arrays: the index arrays must be concrete.")
  idx = tuple(np.asarray(i) if _is_array_index(i) else i
              for i in (idx if isinstance(idx, tuple) else (idx,)))
  reads = np.arange(mat.size).reshape(mat.shape)[idx]  # input position of each output
  out_shape = reads.shape
  counts = np.bincount(reads.ravel(), minlength=mat.size)
  copies = int(counts.max(initial=0))
  # table[q, c]: the c-th output position reading q (out-of-range index where none is).
  fill = math.prod(out_shape)
  table = np.full((mat.size + 1, max(copies, 1)), fill, np.int64)
  order = np.argsort(reads.ravel(), kind="stable")
  starts = np.concatenate([[0], np.cumsum(counts)])
  for q in np.nonzero(counts)[0]:
    table[q, :counts[q]] = order[starts[q]:starts[q + 1]]
  flat = bcoo_update_layout(mat, n_batch=0)
  positions = jnp.ravel_multi_index(tuple(flat.indices[:, i] for i in range(flat.n_sparse)),
                                    mat.shape, mode="clip") if mat.ndim else \
      jnp.zeros(flat.nse, np.int32)
  in_bounds = (flat.indices < jnp.array(mat.shape, flat.indices.dtype)).all(-1)
  positions = jnp.where(in_bounds, positions, mat.size)
  targets = jnp.asarray(table[:, :copies])[positions].reshape(-1)  # (nse * copies,)
  data = jnp.repeat(flat.data, copies, axis=0)
  valid = targets < fill
  data = jnp.where(valid, data, jnp.zeros((), data.dtype))
  if out_shape:
    indices = jnp.stack(jnp.unravel_index(jnp.where(valid, targets, 0), out_shape), -1)
    indices = jnp.where(valid[:, None], indices, jnp.array(out_shape))
  else:
    indices = jnp.zeros((targets.shape[0], 0), np.int32)
  out = BCOO((data, indices.astype(mat.indices.dtype)), shape=out_shape)
  return out.todense() if not out_shape else out


def bcoo_getitem(mat: BCOO, idx):
  """``mat[idx]``. With basic indices the result keeps ``mat``'s kind of each axis (new axes
  are batch axes where they precede the sparse ones); with array indices it is all sparse."""
  if any(_is_array_index(i) for i in (idx if isinstance(idx, tuple) else (idx,))):
    return _advanced_getitem(mat, idx)
  idx = _expand(idx, mat.ndim)
  starts, limits, strides, reverse, squeeze, new_axes = [], [], [], [], [], []
  dim = out_dim = 0
  for i in idx:
    if i is None:
      new_axes.append(out_dim)
      out_dim += 1
      continue
    n = mat.shape[dim]
    if isinstance(i, slice):
      rng = range(*i.indices(n))
      step = rng.step
      if len(rng) == 0:
        lo = hi = 0
        step = 1
      elif step > 0:
        lo, hi = rng[0], rng[-1] + 1
      else:  # slice the same elements in increasing order, then reverse the axis
        lo, hi, step = rng[-1], rng[0] + 1, -step
        reverse.append(dim)
      starts.append(lo)
      limits.append(hi)
      strides.append(step)
      out_dim += 1
    else:
      try:
        k = operator.index(i)
      except TypeError:
        raise TypeError(f"BCOO indices must be integers, slices, None or Ellipsis; got "
                        f"{i!r}") from None
      if not -n <= k < n:
        raise IndexError(f"index {k} is out of bounds for axis {dim} with size {n}")
      k %= n
      starts.append(k)
      limits.append(k + 1)
      strides.append(1)
      squeeze.append(dim)
    dim += 1
  out = mat
  if (starts, limits, strides) != ([0] * mat.ndim, list(mat.shape), [1] * mat.ndim):
    out = bcoo_slice(out, start_indices=starts, limit_indices=limits, strides=strides)
  if reverse:
    out = bcoo_rev(out, reverse)
  if squeeze:
    out = bcoo_squeeze(out, dimensions=squeeze)
  if new_axes:
    shape = list(out.shape)
    for a in new_axes:
      shape.insert(a, 1)
    kept = [d for d in range(len(shape)) if d not in new_axes]
    out = bcoo_broadcast_in_dim(out, shape=tuple(shape), broadcast_dimensions=kept)
  if out.ndim == 0:
    return out.todense()
  return out


def bcoo_gather(operand: BCOO, start_indices, dimension_numbers, slice_sizes, *,
                unique_indices=False, indices_are_sorted=False, mode=None,
                fill_value=None) -> BCOO:
  """``lax.gather`` of a BCOO operand (``mode`` must promise in-bounds indices): one
  ``bcoo_dynamic_slice`` per start index, mapped with ``vmap`` (its slices stack along a new
  batch axis), then arranged as ``lax.gather`` arranges its output."""
  if mode is not None and lax.GatherScatterMode.from_any(mode) != \
      lax.GatherScatterMode.PROMISE_IN_BOUNDS:
    raise NotImplementedError(f"bcoo_gather: {mode=} not yet supported.")
  start_indices = jnp.asarray(start_indices)
  out = eval_shape(lambda x, i: lax.gather(
      x, i, dimension_numbers, slice_sizes, unique_indices=unique_indices,
      indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill_value),
      ShapeDtypeStruct(operand.shape, operand.dtype),
      ShapeDtypeStruct(start_indices.shape, start_indices.dtype))
  offset_dims = tuple(dimension_numbers.offset_dims)
  starts = [jnp.zeros((), start_indices.dtype)] * operand.ndim
  axes = [None] * operand.ndim
  sizes = list(operand.shape)
  for i, d in enumerate(dimension_numbers.start_index_map):
    starts[d] = start_indices[..., i].ravel()
    sizes[d] = slice_sizes[d]
    axes[d] = 0

  def one_slice(starts):
    piece = bcoo_dynamic_slice(operand, starts, slice_sizes=sizes)
    return bcoo_squeeze(piece, dimensions=dimension_numbers.collapsed_slice_dims)
  result = vmap(one_slice, in_axes=(axes,))(starts)
  result = bcoo_reshape(result, new_sizes=(*start_indices.shape[:-1], *result.shape[1:]))
  if result.ndim:
    # Gather's batch axes fill the output positions that are not offset dims.
    batch = tuple(d for d in range(len(out.shape)) if d not in offset_dims)
    perm = np.zeros(result.ndim, int)
    perm[np.array(batch + offset_dims, int)] = np.arange(result.ndim)
    if set(perm[:result.n_batch]) != set(range(result.n_batch)):
      result = bcoo_update_layout(result, n_batch=0)
    result = bcoo_transpose(result, permutation=tuple(int(p) for p in perm))
  return bcoo_reshape(result, new_sizes=out.shape).astype(out.dtype)


def _getitem_method(self, idx):
  return bcoo_getitem(self, idx)


# Installed here: bcoo.py cannot import this module, which needs the class.
BCOO.__getitem__ = _getitem_method
