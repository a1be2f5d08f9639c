"""Warnings and errors of ``hlox.experimental.sparse`` (``jax.experimental.sparse.util``),
and small shape helpers the formats share."""
from typing import NamedTuple

from hlox import numpy as jnp
from hlox.api import vmap


class SparseEfficiencyError(ValueError):
  """An operation would store far more elements than the sparse array holds."""


class SparseEfficiencyWarning(UserWarning):
  """An operation on a sparse array is correct but stores many explicit zeros."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
  """A GPU sparse kernel was unavailable and a slower path was taken."""


class SparseInfo(NamedTuple):
  """The static part of a sparse array: its shape and what is known of its indices."""
  shape: tuple
  indices_sorted: bool = False
  unique_indices: bool = False


def nfold_vmap(fun, n: int, *, broadcasted: bool = True, in_axes=0):
  """``fun`` mapped over ``n`` leading axes. With ``broadcasted``, an argument whose leading
  axis has size 1 is broadcast against the others (BCOO batch dims may be 1 to share)."""
  for _ in range(n):
    fun = _broadcasting_vmap(fun, in_axes) if broadcasted else vmap(fun, in_axes=in_axes)
  return fun


def _broadcasting_vmap(fun, in_axes):
  def mapped(*args):
    sizes = {a.shape[0] for a in args if getattr(a, "ndim", 0)}
    size = max(sizes) if sizes else 1
    axes = tuple(None if getattr(a, "ndim", 0) == 0 or (a.shape[0] == 1 and size != 1)
                 else in_axes for a in args)
    squeezed = tuple(a[0] if ax is None and getattr(a, "ndim", 0) else a
                     for a, ax in zip(args, axes))
    return vmap(fun, in_axes=axes, axis_size=size)(*squeezed)
  return mapped


def _count_stored_elements_per_batch(mat, n_batch: int = 0, n_dense: int = 0):
  """How many entries (dense blocks with a nonzero) each batch element of ``mat`` needs."""
  mask = jnp.asarray(mat) != 0
  if n_dense:
    mask = mask.any(tuple(range(mask.ndim - n_dense, mask.ndim)))
  return mask.sum(tuple(range(n_batch, mask.ndim)))


def _count_stored_elements(mat, n_batch: int = 0, n_dense: int = 0):
  """The number of stored elements a sparse form of ``mat`` needs: the largest per-batch
  count."""
  return _count_stored_elements_per_batch(mat, n_batch, n_dense).max(initial=0)


def _csr_to_coo(indices, indptr):
  """``(row, col)`` of CSR entries: entry ``j`` lies in the row whose pointer range holds it
  (rows past the last pointer, i.e. padding, get the row count)."""
  indices, indptr = jnp.asarray(indices), jnp.asarray(indptr)
  starts = jnp.zeros(indices.shape[-1], indices.dtype).at[indptr[1:]].add(1, mode="drop")
  return jnp.cumsum(starts).astype(indices.dtype), indices
