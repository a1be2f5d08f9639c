"""Coordinate-format sparse matrices (``jax.experimental.sparse.COO``): 2-d arrays stored as
``data``, ``row`` and ``col`` vectors of equal length, duplicates adding up.

As everywhere in ``hlox.experimental.sparse``, the operations are dense compositions (a
scatter-add for densifying and products, a gather for extraction), with no GPU sparse
kernels, so ``jit``, ``vmap`` and autodiff with respect to ``data`` come from them.
"""
import operator
from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.experimental.sparse._base import JAXSparse
from hlox._tree_transform import register_pytree_node_class

__all__ = ["COO", "COOInfo", "coo_fromdense", "coo_matmat", "coo_matvec", "coo_todense"]


class COOInfo(NamedTuple):
  """The static part of a COO matrix: its shape and whether rows/columns are sorted."""
  shape: tuple
  rows_sorted: bool = False
  cols_sorted: bool = False


def _concrete_nse(nse, what: str) -> int:
  if isinstance(nse, Tracer):
    raise ConcretizationTypeError(
        f"The nse argument of {what} must be concrete (a Python int or a concrete array) to "
        "be used in traced or compiled code: pass nse=... explicitly.")
  return operator.index(nse)


def _nonzero_entries(mat, nse: int, index_dtype):
  """``(data, row, col, valid)`` of the first ``nse`` nonzeros of a 2-d ``mat`` in row-major
  order; slots past the count hold zero data at ``(0, 0)`` and ``valid`` False."""
  mat = jnp.asarray(mat)
  if mat.ndim != 2:
    raise ValueError(f"expected a 2-dimensional matrix, got shape {mat.shape}")
  row, col = jnp.nonzero(mat, size=nse)
  valid = jnp.arange(nse) < (mat != 0).sum()
  data = jnp.where(valid, mat[row, col], jnp.zeros((), mat.dtype))
  return data, row.astype(index_dtype), col.astype(index_dtype), valid


def coo_fromdense(mat, *, nse=None, index_dtype=jnp.int32) -> "COO":
  """The COO form of a 2-d dense ``mat`` (``nse`` stored entries; by default the number of
  nonzeros, which needs concrete values)."""
  mat = jnp.asarray(mat)
  if nse is None:
    nse = (mat != 0).sum()
  nse = _concrete_nse(nse, "coo_fromdense()")
  return COO(_coo_fromdense(mat, nse=nse, index_dtype=index_dtype), shape=mat.shape,
             rows_sorted=True)


def _coo_fromdense(mat, *, nse, index_dtype=jnp.int32):
  """``(data, row, col)`` of the COO form of ``mat``."""
  nse = _concrete_nse(nse, "coo_fromdense()")
  data, row, col, _ = _nonzero_entries(mat, nse, np.dtype(index_dtype))
  return data, row, col


def coo_todense(mat: "COO"):
  """The dense matrix ``mat`` represents."""
  return _coo_todense(mat.data, mat.row, mat.col, spinfo=mat._info)


def _coo_todense(data, row, col, *, spinfo):
  data = jnp.asarray(data)
  return jnp.zeros(tuple(spinfo.shape), data.dtype).at[row, col].add(data)


def coo_matvec(mat: "COO", v, transpose: bool = False):
  """``mat @ v`` (``mat.T @ v`` with ``transpose``) for a dense vector ``v``."""
  return _coo_matvec(mat.data, mat.row, mat.col, v, spinfo=mat._info, transpose=transpose)


def _coo_matvec(data, row, col, v, *, spinfo, transpose=False):
  v = jnp.asarray(v)
  rows, cols = spinfo.shape
  if transpose:
    row, col, rows, cols = col, row, cols, rows
  if v.shape != (cols,):
    raise ValueError(f"matvec: vector of shape {v.shape} for a matrix of shape {(rows, cols)}")
  products = data * v[col]
  return jnp.zeros(rows, products.dtype).at[row].add(products)


def coo_matmat(mat: "COO", B, *, transpose: bool = False):
  """``mat @ B`` (``mat.T @ B`` with ``transpose``) for a dense matrix ``B``."""
  return _coo_matmat(mat.data, mat.row, mat.col, B, spinfo=mat._info, transpose=transpose)


def _coo_matmat(data, row, col, B, *, spinfo, transpose=False):
  B = jnp.asarray(B)
  rows, cols = spinfo.shape
  if transpose:
    row, col, rows, cols = col, row, cols, rows
  if B.ndim != 2 or B.shape[0] != cols:
    raise ValueError(f"matmat: matrix of shape {B.shape} for a matrix of shape "
                     f"{(rows, cols)}")
  products = jnp.asarray(data)[:, None] * B[col]
  return jnp.zeros((rows, B.shape[1]), products.dtype).at[row].add(products)


def _matmul(mat, other, matvec, matmat):
  """``mat @ other`` for a dense vector or matrix ``other``, dtypes promoted."""
  if isinstance(other, JAXSparse):
    raise NotImplementedError("matmul between two sparse objects.")
  other = jnp.asarray(other)
  dtype = jnp.result_type(mat.dtype, other.dtype)
  data, other = mat.data.astype(dtype), other.astype(dtype)
  if other.ndim == 1:
    return matvec(data, other)
  if other.ndim == 2:
    return matmat(data, other)
  raise NotImplementedError(f"matmul with object of shape {other.shape}")


def _diagonal(N, M, k, index_dtype):
  """Rows and columns of the ``k``-th diagonal of an ``(N, M)`` matrix."""
  size = min(N, M - k) if k > 0 else min(N + k, M)
  idx = np.arange(max(size, 0))
  return (jnp.asarray(idx - min(k, 0), index_dtype), jnp.asarray(idx + max(k, 0), index_dtype))


@register_pytree_node_class
class COO(JAXSparse):
  """A 2-d sparse matrix in coordinate format, built from ``(data, row, col)`` and
  ``shape``. Prefer ``BCOO``, which has many more operations."""

  def __init__(self, args, *, shape, rows_sorted: bool = False, cols_sorted: bool = False):
    self.data, self.row, self.col = map(jnp.asarray, args)
    self._rows_sorted = rows_sorted
    self._cols_sorted = cols_sorted
    super().__init__(args, shape=shape)

  @property
  def _info(self) -> COOInfo:
    return COOInfo(self.shape, self._rows_sorted, self._cols_sorted)

  @property
  def _bufs(self):
    return (self.data, self.row, self.col)

  @property
  def nse(self) -> int:
    return self.data.size

  @property
  def dtype(self):
    return self.data.dtype

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32) -> "COO":
    """A COO matrix holding the nonzeros of the dense ``mat``."""
    return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

  def _sort_indices(self) -> "COO":
    """A copy with entries sorted by row, then column."""
    if self._rows_sorted:
      return self
    row, col, data = lax.sort((self.row, self.col, self.data), num_keys=2)
    return COO((data, row, col), shape=self.shape, rows_sorted=True)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32") -> "COO":
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"COO must have ndim=2; got {shape=}")
    index = jnp.zeros(0, index_dtype)
    return cls((jnp.zeros(0, dtype), index, index), shape=shape, rows_sorted=True,
               cols_sorted=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32") -> "COO":
    row, col = _diagonal(N, M, k, index_dtype)
    return cls((jnp.ones(row.shape[0], dtype), row, col), shape=(N, M), rows_sorted=True,
               cols_sorted=True)

  def todense(self):
    """The dense matrix this one represents."""
    return coo_todense(self)

  def transpose(self, axes=None) -> "COO":
    """The transposed matrix (rows and columns swap roles; no data moves)."""
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return COO((self.data, self.col, self.row), shape=self.shape[::-1],
               rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

  def __matmul__(self, other):
    info = self._info
    return _matmul(self, other,
                   lambda d, v: _coo_matvec(d, self.row, self.col, v, spinfo=info),
                   lambda d, B: _coo_matmat(d, self.row, self.col, B, spinfo=info))

  def tree_flatten(self):
    return (self.data, self.row, self.col), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    if aux_data.keys() != {"shape", "rows_sorted", "cols_sorted"}:
      raise ValueError(f"COO.tree_unflatten: invalid {aux_data=}")
    obj = object.__new__(cls)
    obj.data, obj.row, obj.col = children
    obj.shape = aux_data["shape"]
    obj._rows_sorted = aux_data["rows_sorted"]
    obj._cols_sorted = aux_data["cols_sorted"]
    return obj
