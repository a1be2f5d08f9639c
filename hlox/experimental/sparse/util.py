"""Warnings and errors of ``hlox.experimental.sparse`` (``jax.experimental.sparse.util``),
and small shape helpers the formats share."""
from typing import NamedTuple

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
