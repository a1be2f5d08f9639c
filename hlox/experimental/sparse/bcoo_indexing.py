"""Basic NumPy indexing of BCOO arrays (``x[1, ::2, None]``): integers, slices (any step),
``None`` and ``Ellipsis``, as compositions of ``bcoo_slice``, ``bcoo_rev``, ``bcoo_squeeze``
and ``bcoo_broadcast_in_dim``. Indexing with arrays is not supported."""
import operator

import numpy as np

from hlox.experimental.sparse.bcoo import BCOO
from hlox.experimental.sparse.bcoo_layout import (
    bcoo_broadcast_in_dim, bcoo_rev, bcoo_slice, bcoo_squeeze)

__all__ = ["bcoo_getitem"]


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


def bcoo_getitem(mat: BCOO, idx):
  """``mat[idx]`` for basic indices; the result keeps ``mat``'s kind of each axis, and new
  axes are batch axes where they precede the sparse ones."""
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
      if isinstance(i, (np.ndarray, list)) or hasattr(i, "shape") and np.ndim(i) > 0:
        raise NotImplementedError("indexing BCOO arrays with arrays (advanced indexing)")
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


def _getitem_method(self, idx):
  return bcoo_getitem(self, idx)


# Installed here: bcoo.py cannot import this module, which needs the class.
BCOO.__getitem__ = _getitem_method
