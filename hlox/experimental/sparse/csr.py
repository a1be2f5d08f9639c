"""Compressed sparse row and column matrices (``jax.experimental.sparse.CSR`` and ``CSC``).

A CSR matrix stores ``data`` and column ``indices`` of its entries in row order and row
pointers ``indptr`` (row ``r`` holds entries ``indptr[r]:indptr[r + 1]``); a CSC matrix is
the CSR form of its transpose. Operations expand the row pointers to a row per entry and use
the COO compositions.
"""
import numpy as np

from hlox import numpy as jnp
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.coo import (
    COOInfo, _concrete_nse, _coo_matmat, _coo_matvec, _coo_todense, _diagonal, _matmul,
    _nonzero_entries)
from hlox.experimental.sparse.util import _csr_to_coo
from hlox._tree_transform import register_pytree_node_class

__all__ = ["CSC", "CSR", "csr_fromdense", "csr_matmat", "csr_matvec", "csr_todense"]


def _row_pointers(row, n_rows: int, index_dtype):
  """``indptr`` of entries with rows ``row`` in row order (rows past the end are dropped)."""
  counts = jnp.zeros(n_rows + 1, index_dtype).at[row + 1].add(1, mode="drop")
  return jnp.cumsum(counts).astype(index_dtype)


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32) -> "CSR":
  """The CSR form of a 2-d dense ``mat`` (``nse`` stored entries; by default the number of
  nonzeros, which needs concrete values)."""
  mat = jnp.asarray(mat)
  if nse is None:
    nse = (mat != 0).sum()
  return CSR(_csr_fromdense(mat, nse=nse, index_dtype=index_dtype), shape=mat.shape)


def _csr_fromdense(mat, *, nse, index_dtype=np.int32):
  """``(data, indices, indptr)`` of the CSR form of ``mat``."""
  mat = jnp.asarray(mat)
  nse = _concrete_nse(nse, "csr_fromdense()")
  index_dtype = np.dtype(index_dtype)
  data, row, col, valid = _nonzero_entries(mat, nse, index_dtype)
  # Padding slots count in no row: they sit past indptr[-1].
  row = jnp.where(valid, row, mat.shape[0])
  return data, col, _row_pointers(row, mat.shape[0], index_dtype)


def csr_todense(mat: "CSR"):
  """The dense matrix ``mat`` represents."""
  return _csr_todense(mat.data, mat.indices, mat.indptr, shape=mat.shape)


def _csr_todense(data, indices, indptr, *, shape):
  row, col = _csr_to_coo(indices, indptr)
  return _coo_todense(data, row, col, spinfo=COOInfo(shape=tuple(shape)))


def csr_matvec(mat: "CSR", v, transpose: bool = False):
  """``mat @ v`` (``mat.T @ v`` with ``transpose``) for a dense vector ``v``."""
  return _csr_matvec(mat.data, mat.indices, mat.indptr, v, shape=mat.shape,
                     transpose=transpose)


def _csr_matvec(data, indices, indptr, v, *, shape, transpose=False):
  row, col = _csr_to_coo(indices, indptr)
  return _coo_matvec(data, row, col, v, spinfo=COOInfo(shape=tuple(shape)),
                     transpose=transpose)


def csr_matmat(mat: "CSR", B, *, transpose: bool = False):
  """``mat @ B`` (``mat.T @ B`` with ``transpose``) for a dense matrix ``B``."""
  return _csr_matmat(mat.data, mat.indices, mat.indptr, B, shape=mat.shape,
                     transpose=transpose)


def _csr_matmat(data, indices, indptr, B, *, shape, transpose=False):
  row, col = _csr_to_coo(indices, indptr)
  return _coo_matmat(data, row, col, B, spinfo=COOInfo(shape=tuple(shape)),
                     transpose=transpose)


class _Compressed(JAXSparse):
  """What CSR and CSC share: three buffers and a shape."""

  def __init__(self, args, *, shape):
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    super().__init__(args, shape=shape)

  @property
  def _bufs(self):
    return (self.data, self.indices, self.indptr)

  @property
  def nse(self) -> int:
    return self.data.size

  @property
  def dtype(self):
    return self.data.dtype

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    if aux_data.keys() != {"shape"}:
      raise ValueError(f"{cls.__name__}.tree_unflatten: invalid {aux_data=}")
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.shape = aux_data["shape"]
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"{cls.__name__} must have ndim=2; got {shape=}")
    n_pointers = (shape[0] if cls is CSR else shape[1]) + 1
    return cls((jnp.zeros(0, dtype), jnp.zeros(0, index_dtype),
                jnp.zeros(n_pointers, index_dtype)), shape=shape)


@register_pytree_node_class
class CSR(_Compressed):
  """A 2-d sparse matrix in compressed-row format, built from ``(data, indices, indptr)``
  and ``shape``."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32) -> "CSR":
    """A CSR matrix holding the nonzeros of the dense ``mat``."""
    return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32") -> "CSR":
    row, col = _diagonal(N, M, k, index_dtype)
    indptr = _row_pointers(row, N, np.dtype(index_dtype))
    return cls((jnp.ones(row.shape[0], dtype), col, indptr), shape=(N, M))

  def todense(self):
    """The dense matrix this one represents."""
    return csr_todense(self)

  def transpose(self, axes=None) -> "CSC":
    """The transposed matrix, as CSC (the same buffers)."""
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    bufs, shape = (self.indices, self.indptr), self.shape
    return _matmul(self, other, lambda d, v: _csr_matvec(d, *bufs, v, shape=shape),
                   lambda d, B: _csr_matmat(d, *bufs, B, shape=shape))


@register_pytree_node_class
class CSC(_Compressed):
  """A 2-d sparse matrix in compressed-column format: the CSR buffers of its transpose."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32) -> "CSC":
    """A CSC matrix holding the nonzeros of the dense ``mat``."""
    mat = jnp.asarray(mat)
    return csr_fromdense(mat.T, nse=nse, index_dtype=index_dtype).T

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32") -> "CSC":
    return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

  def todense(self):
    """The dense matrix this one represents."""
    return csr_todense(self.T).T

  def transpose(self, axes=None) -> CSR:
    """The transposed matrix, as CSR (the same buffers)."""
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    bufs, shape = (self.indices, self.indptr), self.shape[::-1]
    return _matmul(self, other,
                   lambda d, v: _csr_matvec(d, *bufs, v, shape=shape, transpose=True),
                   lambda d, B: _csr_matmat(d, *bufs, B, shape=shape, transpose=True))
