"""Batched compressed-sparse-row arrays (``jax.experimental.sparse.BCSR``).

A BCSR array of shape ``batch + (rows, cols) + dense`` stores, per batch element, ``data`` of
shape ``(nse,) + dense``, column ``indices`` of shape ``(nse,)`` and row pointers ``indptr`` of
shape ``(rows + 1,)``: the entries of row ``r`` are ``indptr[r]:indptr[r + 1]``, and entries
past ``indptr[-1]`` are padding. Operations convert to BCOO (the row of each entry comes from
``indptr``) and use BCOO's compositions, so transformations come with them.
"""
import operator

import numpy as np

from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.experimental.sparse import bcoo
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo_indexing import bcoo_getitem
from hlox.experimental.sparse.bcoo_layout import bcoo_broadcast_in_dim, bcoo_concatenate
from hlox.experimental.sparse.bcoo_products import bcoo_matmul
from hlox.experimental.sparse.util import SparseInfo, _count_stored_elements, _csr_to_coo, nfold_vmap
from hlox.interpreters import batching
from hlox._tree_transform import register_pytree_node_class

__all__ = ["BCSR", "bcsr_broadcast_in_dim", "bcsr_concatenate", "bcsr_dot_general",
           "bcsr_eliminate_zeros", "bcsr_extract", "bcsr_fromdense", "bcsr_sum_duplicates",
           "bcsr_todense"]


def _compatible(batch, shape) -> bool:
  return all(b in (1, s) for b, s in zip(batch, shape))


def _validate_indices(indices, indptr, shape):
  """``(n_batch, n_dense, nse)`` of BCSR index buffers for an array of ``shape``."""
  for name, buf in (("indices", indices), ("indptr", indptr)):
    if not dtypes.issubdtype(buf.dtype, np.integer):
      raise TypeError(f"BCSR {name} must be integers, got {buf.dtype}")
  shape = tuple(shape)
  n_batch = indices.ndim - 1
  n_dense = len(shape) - n_batch - 2
  if n_batch < 0 or n_dense < 0:
    raise ValueError(f"Invalid {indices.shape=} for {shape=}: BCSR arrays have 2 sparse "
                     "dimensions")
  if not _compatible(indices.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"indices batch dimensions not compatible for {indices.shape=}, {shape=}")
  if indptr.ndim != n_batch + 1 or not _compatible(indptr.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"indptr batch dimensions not compatible for {indptr.shape=}, {shape=}")
  if indptr.shape[n_batch] != shape[n_batch] + 1:
    raise ValueError("indptr shape must match the matrix shape plus 1.")
  return n_batch, n_dense, indices.shape[-1]


def _validate(data, indices, indptr, shape):
  n_batch, n_dense, nse = _validate_indices(indices, indptr, shape)
  shape = tuple(shape)
  if not _compatible(data.shape[:n_batch], shape[:n_batch]):
    raise ValueError(f"data batch dimensions not compatible for {data.shape=}, {shape=}")
  if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + 2:]:
    raise ValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
  return n_batch, n_dense, nse


def _bcsr_to_bcoo(indices, indptr, *, shape):
  """BCOO indices (``batch + (nse, 2)``) of the entries BCSR ``indices``/``indptr`` hold."""
  n_batch, _, _ = _validate_indices(indices, indptr, shape)
  to_coo = lambda i, p: jnp.stack(_csr_to_coo(i, p), axis=-1)
  return nfold_vmap(to_coo, n_batch)(indices, indptr)


def _bcoo_to_bcsr(indices, *, shape, index_dtype=None):
  """BCSR ``(indices, indptr)`` of row-major sorted BCOO ``indices`` with 2 sparse dims."""
  props = bcoo._validate_indices(indices, shape)
  if props.n_sparse != 2:
    raise ValueError("Must have 2 sparse dimensions to be converted to BCSR.")
  index_dtype = indices.dtype if index_dtype is None else np.dtype(index_dtype)
  n_rows = shape[props.n_batch]

  def pointers(rows):
    # Entries of out-of-bounds rows (padding) are dropped by the scatter.
    counts = jnp.zeros(n_rows + 1, index_dtype).at[rows + 1].add(1, mode="drop")
    return jnp.cumsum(counts).astype(index_dtype)
  indptr = nfold_vmap(pointers, props.n_batch, broadcasted=False)(indices[..., 0])
  return indices[..., 1].astype(index_dtype), indptr


# --- conversions --------------------------------------------------------------------------

def bcsr_fromdense(mat, *, nse=None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> "BCSR":
  """The BCSR form of the dense ``mat`` (``nse`` stored entries per batch element; by default
  the largest count of nonzeros, which needs concrete values)."""
  mat = jnp.asarray(mat)
  if mat.ndim - n_batch - n_dense != 2:
    raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
  if nse is None:
    nse = _count_stored_elements(mat, n_batch, n_dense)
  if isinstance(nse, Tracer):
    raise ConcretizationTypeError(
        "bcsr_fromdense needs a concrete nse (number of stored elements) to be used in "
        "traced or compiled code: pass nse=... explicitly.")
  bufs = _bcsr_fromdense(mat, nse=operator.index(nse), n_batch=n_batch, n_dense=n_dense,
                         index_dtype=index_dtype)
  return BCSR(bufs, shape=mat.shape, indices_sorted=True, unique_indices=True)


def _bcsr_fromdense(mat, *, nse, n_batch=0, n_dense=0, index_dtype=np.int32):
  """``(data, indices, indptr)`` of the BCSR form of ``mat``."""
  mat = jnp.asarray(mat)
  if mat.ndim - n_batch - n_dense != 2:
    raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
  data, coo = bcoo._fromdense_buffers(mat, nse=operator.index(nse), n_batch=n_batch,
                                      n_dense=n_dense, index_dtype=np.dtype(index_dtype))
  indices, indptr = _bcoo_to_bcsr(coo, shape=mat.shape, index_dtype=index_dtype)
  return data, indices, indptr


def bcsr_todense(mat: "BCSR"):
  """The dense array the BCSR array ``mat`` represents (duplicates summed)."""
  return _bcsr_todense(mat.data, mat.indices, mat.indptr, spinfo=mat._info)


def _bcsr_todense(data, indices, indptr, *, spinfo):
  data, indices, indptr = map(jnp.asarray, (data, indices, indptr))
  coo = _bcsr_to_bcoo(indices, indptr, shape=spinfo.shape)
  return bcoo._todense_buffers(data, coo, shape=tuple(spinfo.shape))


def bcsr_extract(indices, indptr, mat):
  """The values of the dense ``mat`` at the entries BCSR ``indices``/``indptr`` describe."""
  indices, indptr, mat = map(jnp.asarray, (indices, indptr, mat))
  coo = _bcsr_to_bcoo(indices, indptr, shape=mat.shape)
  return bcoo._bcoo_extract(coo, mat)


# --- operations (through BCOO) ------------------------------------------------------------

def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """``lax.dot_general`` of a BCSR ``lhs`` and a dense ``rhs``."""
  if not isinstance(lhs, BCSR) or isinstance(rhs, JAXSparse):
    raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and "
                              "ndarray rhs.")
  return bcoo.bcoo_dot_general(lhs.to_bcoo(), rhs, dimension_numbers=dimension_numbers,
                               precision=precision,
                               preferred_element_type=preferred_element_type,
                               out_sharding=out_sharding)


def bcsr_sum_duplicates(mat: "BCSR", nse=None) -> "BCSR":
  """``mat`` with entries at the same position added together (explicit zeros kept)."""
  return BCSR.from_bcoo(bcoo.bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_eliminate_zeros(mat: "BCSR", nse=None) -> "BCSR":
  """``mat`` with duplicates summed and explicit zeros removed."""
  return BCSR.from_bcoo(bcoo.bcoo_eliminate_zeros(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat: "BCSR", *, shape, broadcast_dimensions, sharding=None):
  """``lax.broadcast_in_dim`` of a BCSR array (new axes must be batch axes)."""
  del sharding
  out = bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape,
                                   broadcast_dimensions=broadcast_dimensions)
  return BCSR.from_bcoo(out)


def bcsr_concatenate(operands, *, dimension: int) -> "BCSR":
  """``lax.concatenate`` of BCSR arrays of one layout along a batch or sparse axis."""
  return BCSR.from_bcoo(bcoo_concatenate([m.to_bcoo() for m in operands], dimension=dimension))


# --- the array type -----------------------------------------------------------------------

@register_pytree_node_class
class BCSR(JAXSparse):
  """A batched compressed-sparse-row array, built from ``(data, indices, indptr)`` and
  ``shape``; a pytree with those three leaves."""

  def __init__(self, args, *, shape, indices_sorted: bool = False,
               unique_indices: bool = False):
    self.data, self.indices, self.indptr = map(jnp.asarray, args)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    super().__init__(args, shape=shape)
    _validate(self.data, self.indices, self.indptr, self.shape)

  @property
  def _info(self) -> SparseInfo:
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def _bufs(self):
    return (self.data, self.indices, self.indptr)

  @property
  def nse(self) -> int:
    return self.indices.shape[-1]

  @property
  def dtype(self):
    return self.data.dtype

  @property
  def n_batch(self) -> int:
    return self.indices.ndim - 1

  @property
  def n_sparse(self) -> int:
    return 2

  @property
  def n_dense(self) -> int:
    return self.data.ndim - self.indices.ndim

  @property
  def _sparse_shape(self):
    return tuple(self.shape[self.n_batch:self.n_batch + 2])

  def _repr_extra(self) -> str:
    extra = f", nse={self.nse}"
    if self.n_batch:
      extra += f", n_batch={self.n_batch}"
    if self.n_dense:
      extra += f", n_dense={self.n_dense}"
    return extra

  def transpose(self, *args, **kwargs):
    raise NotImplementedError("Transpose is not implemented.")

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCSR.tree_unflatten: invalid {aux_data=}")
    obj.__dict__.update(**aux_data)
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
    shape = tuple(shape)
    if min(n_dense, n_batch, nse) < 0:
      raise ValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
    if len(shape) - n_dense - n_batch != 2:
      raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
    batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], \
        shape[n_batch + 2:]
    data = jnp.zeros((*batch, nse, *dense), dtype)
    indices = jnp.full((*batch, nse), cols, index_dtype)
    indptr = jnp.zeros((*batch, rows + 1), index_dtype)
    return cls((data, indices, indptr), shape=shape)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
    if n_batch or n_dense:
      raise NotImplementedError("BCSR eye with n_batch or n_dense")
    out = bcoo.BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype)
    return cls.from_bcoo(out)

  def sum_duplicates(self, nse=None, remove_zeros: bool = True) -> "BCSR":
    """A copy with duplicates summed (and with ``remove_zeros`` explicit zeros dropped);
    pass ``nse`` to use it under ``jit``."""
    return (bcsr_eliminate_zeros if remove_zeros else bcsr_sum_duplicates)(self, nse=nse)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """A BCSR array holding the nonzeros of the dense ``mat``."""
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  def todense(self):
    """The dense array this one represents."""
    return bcsr_todense(self)

  def to_bcoo(self) -> bcoo.BCOO:
    """The same array in BCOO format."""
    coo = _bcsr_to_bcoo(self.indices, self.indptr, shape=self.shape)
    return bcoo.BCOO((self.data, coo), shape=self.shape)

  @classmethod
  def from_bcoo(cls, arr: bcoo.BCOO) -> "BCSR":
    """The BCSR form of a BCOO array with two sparse dimensions."""
    if arr.n_sparse != 2:
      raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got {arr.n_sparse=}")
    if not arr.indices_sorted:
      arr = arr.sort_indices()
    indices, indptr = _bcoo_to_bcsr(arr.indices, shape=arr.shape)
    return cls((arr.data, indices, indptr), shape=arr.shape)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """A BCSR array from a 2-d ``scipy.sparse`` array."""
    if n_dense or n_batch:
      raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
    if mat.ndim != 2:
      raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
    mat = mat.tocsr()
    index_dtype = index_dtype or np.int32
    return cls((jnp.asarray(mat.data), jnp.asarray(mat.indices, index_dtype),
                jnp.asarray(mat.indptr, index_dtype)), shape=mat.shape)

  def __matmul__(self, other):
    return bcoo_matmul(self, other)

  def __rmatmul__(self, other):
    return bcoo_matmul(other, self)

  def __getitem__(self, idx):
    out = bcoo_getitem(self.to_bcoo(), idx)
    return BCSR.from_bcoo(out) if isinstance(out, bcoo.BCOO) and out.n_sparse == 2 else out


def _to_elt(cont, _, val, axis):
  """The element ``vmap`` sees for a BCSR stack mapped along batch axis ``axis``."""
  if axis is None:
    return val
  if not 0 <= axis < val.n_batch:
    raise ValueError(f"Cannot map in_axis={axis} for BCSR array with n_batch={val.n_batch}. "
                     "in_axes for batched BCSR operations must correspond to a batched "
                     "dimension.")
  return BCSR((cont(val.data, axis), cont(val.indices, axis), cont(val.indptr, axis)),
              shape=val.shape[:axis] + val.shape[axis + 1:],
              indices_sorted=val.indices_sorted, unique_indices=val.unique_indices)


def _from_elt(cont, axis_size, elt, axis):
  """The stack of ``vmap``'s BCSR outputs, with the mapped axis a new batch axis ``axis``."""
  if axis is None:
    return elt
  if not 0 <= axis <= elt.n_batch:
    raise ValueError(f"BCSR: cannot add out_axis={axis} for BCSR array with "
                     f"n_batch={elt.n_batch}. BCSR batch axes must be a contiguous block of "
                     "leading dimensions.")
  return BCSR((cont(axis_size, elt.data, axis), cont(axis_size, elt.indices, axis),
               cont(axis_size, elt.indptr, axis)),
              shape=elt.shape[:axis] + (axis_size,) + elt.shape[axis:],
              indices_sorted=elt.indices_sorted, unique_indices=elt.unique_indices)


batching.register_vmappable(BCSR, int, int, _to_elt, _from_elt, None)
