"""Batched-coordinate sparse arrays (``jax.experimental.sparse.BCOO``) and their operations.

A BCOO array of shape ``batch + sparse + dense`` stores ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``: for every batch
element, ``nse`` stored entries, each a dense block placed at a sparse coordinate. Batch
dimensions of the buffers may be 1 (shared by all batch elements); duplicate coordinates add
up; padding entries carry the out-of-bounds coordinate ``sparse shape`` and are ignored.

XLA has no sparse kernels on CPU (and JAX lowers to generic ops there too), so every operation
here is a composition of dense gathers, scatter-adds and sorts on the buffers. Being
compositions, they get ``jit``, ``vmap`` and autodiff (with respect to ``data``) from hlox's
transformations; where JAX falls back to dense computation, so do these.
"""
import math
import operator
from functools import partial
from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import ShapeDtypeStruct, eval_shape, jit
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.core import dtypes
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.util import SparseInfo, _count_stored_elements, nfold_vmap
from hlox.interpreters import batching
from hlox._tree_transform import register_pytree_node_class

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_extract", "bcoo_fromdense", "bcoo_multiply_dense",
           "bcoo_reduce_sum", "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense",
           "bcoo_transpose", "bcoo_eliminate_zeros"]


class BCOOProperties(NamedTuple):
  n_batch: int
  n_sparse: int
  n_dense: int
  nse: int


def _validate_indices(indices, shape) -> BCOOProperties:
  if not dtypes.issubdtype(indices.dtype, np.integer):
    raise TypeError(f"BCOO indices must be integers, got {indices.dtype}")
  if indices.ndim < 2:
    raise ValueError(f"BCOO indices must have at least 2 dimensions, got {indices.shape=}")
  shape = tuple(shape)
  nse, n_sparse = indices.shape[-2:]
  n_batch = indices.ndim - 2
  n_dense = len(shape) - n_batch - n_sparse
  if n_dense < 0:
    raise ValueError(f"Invalid {indices.shape=} for {shape=}")
  if any(i not in (1, s) for i, s in zip(indices.shape[:n_batch], shape[:n_batch])):
    raise ValueError(f"indices batch dimensions not compatible for {indices.shape=}, {shape=}")
  return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def _validate(data, indices, shape) -> BCOOProperties:
  props = _validate_indices(indices, shape)
  n_batch, n_sparse, n_dense, nse = props
  shape = tuple(shape)
  if any(d not in (1, s) for d, s in zip(data.shape[:n_batch], shape[:n_batch])):
    raise ValueError(f"data batch dimensions not compatible for {data.shape=}, {shape=}")
  if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse:]:
    raise ValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
  return props


def _coordinates(indices, shape, props):
  """Index arrays addressing every stored entry in a dense array of ``shape``: one per batch
  dimension (an iota) and one per sparse dimension, all broadcasting to ``batch + (nse,)``."""
  n_batch = props.n_batch
  batch = tuple(np.arange(s).reshape((1,) * b + (s,) + (1,) * (n_batch - b))
                for b, s in enumerate(shape[:n_batch]))
  sparse = tuple(indices[..., i] for i in range(props.n_sparse))
  return batch + sparse


def _sparse_fill(indices, shape, props):
  """The out-of-bounds coordinate that marks padding entries."""
  return jnp.array(shape[props.n_batch:props.n_batch + props.n_sparse], dtype=indices.dtype)


# --- conversions --------------------------------------------------------------------------

def bcoo_todense(mat: "BCOO"):
  """The dense array that the BCOO array ``mat`` represents (duplicates summed)."""
  return _todense_buffers(jnp.asarray(mat.data), jnp.asarray(mat.indices), shape=mat.shape)


def _bcoo_todense(data, indices, *, spinfo):
  """The dense array of BCOO buffers ``data``/``indices`` for ``spinfo.shape``."""
  return _todense_buffers(jnp.asarray(data), jnp.asarray(indices), shape=tuple(spinfo.shape))


@partial(jit, static_argnames=("shape",))
def _todense_buffers(data, indices, *, shape):
  data, indices = jnp.asarray(data), jnp.asarray(indices)
  props = _validate(data, indices, shape)
  if props.n_sparse == 0:
    return jnp.broadcast_to(data.sum(props.n_batch, dtype=data.dtype), shape)
  # Padding coordinates are out of bounds, and the scatter drops them.
  return jnp.zeros(shape, data.dtype).at[_coordinates(indices, shape, props)].add(data)


def bcoo_extract(sparr: "BCOO", arr, *, assume_unique=None) -> "BCOO":
  """A BCOO array with ``sparr``'s indices holding the values of the dense ``arr`` there.
  Unless the indices are known unique (``assume_unique``, by default ``sparr``'s flag), only
  the first of equal indices gets the value, so the result densifies back to ``arr``'s
  values at those positions."""
  if not isinstance(sparr, BCOO):
    raise TypeError(f"First argument to bcoo_extract should be a BCOO array. Got {sparr=}")
  arr = jnp.asarray(arr)
  if tuple(arr.shape) != sparr.shape:
    raise ValueError(f"shape mismatch: {sparr.shape=} {arr.shape=}")
  if assume_unique is None:
    assume_unique = sparr.unique_indices
  data = _bcoo_extract(sparr.indices, arr, assume_unique=assume_unique)
  return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
              unique_indices=sparr.unique_indices)


def _bcoo_extract(indices, arr, *, assume_unique=True):
  """The values of the dense ``arr`` at BCOO ``indices`` (zero at padding entries)."""
  indices, arr = jnp.asarray(indices), jnp.asarray(arr)
  props = _validate_indices(indices, arr.shape)
  n_batch = props.n_batch
  if props.n_sparse == 0:
    # Every stored block of a batch element is the whole element.
    out = lax.expand_dims(arr, (n_batch,))
    out = jnp.broadcast_to(out, out.shape[:n_batch] + (props.nse,) + out.shape[n_batch + 1:])
  else:
    out = arr.at[_coordinates(indices, arr.shape, props)].get(mode="fill", fill_value=0)
  if assume_unique:
    return out
  first = _first_occurrences(indices, props)
  first = first.reshape(first.shape + (1,) * props.n_dense)
  return jnp.where(first, out, jnp.zeros((), out.dtype))


def _first_occurrences(indices, props):
  """Whether each entry is the first with its index in its batch element."""
  nse = props.nse
  earlier = np.tril(np.ones((nse, nse), bool), -1)  # earlier[i, j]: j comes before i
  if props.n_sparse == 0:
    same = np.ones((nse, nse), bool)
  else:
    same = (indices[..., :, None, :] == indices[..., None, :, :]).all(-1)
  return ~(same & earlier).any(-1)


def _bcoo_fromdense(mat, *, nse, n_batch=0, n_dense=0, index_dtype=np.int32):
  """``(data, indices)`` of the BCOO form of ``mat`` with ``nse`` entries per batch
  element."""
  mat = jnp.asarray(mat)
  if min(n_batch, n_dense, mat.ndim - n_batch - n_dense) < 0:
    raise ValueError(f"Invalid {n_batch=}, {n_dense=} for array of shape {mat.shape}")
  return _fromdense_buffers(mat, nse=operator.index(nse), n_batch=n_batch, n_dense=n_dense,
                            index_dtype=np.dtype(index_dtype))


def bcoo_fromdense(mat, *, nse=None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> "BCOO":
  """The BCOO form of the dense ``mat``, with ``n_batch`` leading batch and ``n_dense``
  trailing dense dimensions and ``nse`` stored entries per batch element (by default the
  largest count of nonzeros; pass it explicitly under ``jit``)."""
  mat = jnp.asarray(mat)
  n_sparse = mat.ndim - n_batch - n_dense
  if n_batch < 0 or n_dense < 0 or n_sparse < 0:
    raise ValueError(f"Invalid {n_batch=}, {n_dense=} for array of shape {mat.shape}")
  if nse is None:
    nse = _count_stored_elements(mat, n_batch, n_dense)
  if isinstance(nse, Tracer):
    raise ConcretizationTypeError(
        "bcoo_fromdense needs a concrete nse (number of stored elements) to be used in "
        "traced or compiled code: pass nse=... explicitly.")
  return BCOO(_fromdense_buffers(mat, nse=operator.index(nse), n_batch=n_batch,
                                 n_dense=n_dense, index_dtype=np.dtype(index_dtype)),
              shape=mat.shape, indices_sorted=True, unique_indices=True)


# One compiled program per layout, as JAX's primitive implementations are; op-by-op eager
# dispatch under the batch vmaps would compile every small step separately.
@partial(jit, static_argnames=("nse", "n_batch", "n_dense", "index_dtype"))
def _fromdense_buffers(mat, *, nse, n_batch, n_dense, index_dtype):
  n_sparse = mat.ndim - n_batch - n_dense
  mask = mat != 0
  if n_dense:
    mask = mask.any(tuple(range(mat.ndim - n_dense, mat.ndim)))
  if n_sparse == 0:
    indices = jnp.zeros(mat.shape[:n_batch] + (nse, 0), index_dtype)
  else:
    fill = mat.shape[n_batch:n_batch + n_sparse]
    find = lambda m: jnp.stack(jnp.nonzero(m, size=nse, fill_value=fill), axis=-1)
    indices = nfold_vmap(find, n_batch, broadcasted=False)(mask).astype(index_dtype)
  data = _bcoo_extract(indices, mat)
  if n_sparse == 0:
    # Each slot repeats the whole block: keep the first. The mask is by position, not by
    # value, so the derivative reaches every element of the block (zero or not), as the
    # derivative of JAX's bcoo_fromdense does. Padding slots of n_sparse > 0 need no mask:
    # their out-of-bounds indices extract zeros.
    first = (jnp.arange(nse) == 0).reshape((1,) * n_batch + (nse,) + (1,) * n_dense)
    data = jnp.where(first, data, jnp.zeros((), data.dtype))
  return data, indices


# --- layout -------------------------------------------------------------------------------

def bcoo_transpose(mat: "BCOO", *, permutation) -> "BCOO":
  """``mat`` with its axes permuted; batch, sparse and dense axes must each stay among their
  own kind."""
  permutation = tuple(operator.index(p) for p in permutation)
  n_batch, n_sparse = mat.n_batch, mat.n_sparse
  if tuple(sorted(permutation)) != tuple(range(mat.ndim)):
    raise ValueError(f"'permutation' must be a permutation of range({mat.ndim}); "
                     f"got {permutation}")
  batch_perm = permutation[:n_batch]
  sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
  dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
  if (tuple(sorted(batch_perm)) != tuple(range(n_batch))
      or tuple(sorted(sparse_perm)) != tuple(range(n_sparse))):
    raise NotImplementedError(
        "bcoo_transpose: batch, sparse and dense dimensions must each be permuted among "
        f"themselves; got {permutation=} for {n_batch=}, {n_sparse=}, n_dense={mat.n_dense}")
  data = mat.data.transpose((*batch_perm, n_batch, *(n_batch + 1 + d for d in dense_perm)))
  indices = mat.indices.transpose((*batch_perm, n_batch, n_batch + 1))
  if n_sparse:
    indices = indices[..., np.array(sparse_perm, dtype=np.int32)]
  unchanged = tuple(sparse_perm) == tuple(range(n_sparse))
  return BCOO((data, indices), shape=tuple(mat.shape[p] for p in permutation),
              indices_sorted=mat.indices_sorted and unchanged,
              unique_indices=mat.unique_indices)


def bcoo_sort_indices(mat: "BCOO") -> "BCOO":
  """``mat`` with each batch element's entries in lexicographic order of their indices."""
  if mat.n_sparse == 0:
    return BCOO((mat.data, mat.indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)

  def sort_one(indices):
    nse, n = indices.shape
    *columns, perm = lax.sort((*(indices[:, i] for i in range(n)),
                               lax.iota(indices.dtype, nse)), num_keys=n)
    return jnp.stack(columns, axis=1), perm

  indices, perm = nfold_vmap(sort_one, mat.n_batch, broadcasted=False)(mat.indices)
  data = nfold_vmap(lambda d, p: d[p], mat.n_batch)(mat.data, perm)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
              unique_indices=mat.unique_indices)


def bcoo_sum_duplicates(mat: "BCOO", nse=None) -> "BCOO":
  """``mat`` with entries at the same index added together and indices sorted. Without
  ``nse`` the output size is found from the values (not traceable); a larger ``nse`` pads,
  a smaller one drops entries."""
  props = _validate(mat.data, mat.indices, mat.shape)
  shape = mat.shape
  if props.n_sparse == 0:
    nse = 1 if nse is None else operator.index(nse)
    data = mat.data.sum(props.n_batch, keepdims=True, dtype=mat.dtype)
    pad = [(0, 0)] * data.ndim
    pad[props.n_batch] = (0, max(nse - 1, 0))
    data = jnp.pad(data, pad)[(slice(None),) * props.n_batch + (slice(0, nse),)]
    indices = jnp.zeros(mat.indices.shape[:-2] + (nse, 0), mat.indices.dtype)
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)
  fill = _sparse_fill(mat.indices, shape, props)

  def unique_one(indices):
    oob = (indices >= fill).any(-1, keepdims=True)
    indices = jnp.where(oob, fill, indices)
    out, inverse = jnp.unique(indices, axis=0, size=props.nse, fill_value=fill,
                              return_inverse=True)
    uniques = jnp.sum(~(out == fill).all(-1))
    return out, inverse.ravel(), uniques

  indices, mapping, counts = nfold_vmap(unique_one, props.n_batch,
                                        broadcasted=False)(mat.indices)
  if nse is None:
    nse = int(counts.max())
  nse = operator.index(nse)
  if nse <= props.nse:
    indices = indices[..., :nse, :]
  else:
    pad = jnp.broadcast_to(fill, indices.shape[:-2] + (nse - props.nse, props.n_sparse))
    indices = jnp.concatenate([indices, pad], axis=-2)
  batch = tuple(map(max, mat.indices.shape[:props.n_batch], mat.data.shape[:props.n_batch]))
  data_out = jnp.zeros((*batch, nse, *mat.data.shape[props.n_batch + 1:]), mat.dtype)
  scatter = lambda out, m, d: out.at[m].add(d, mode="drop")
  data_out = nfold_vmap(scatter, props.n_batch)(data_out, mapping, mat.data)
  return BCOO((data_out, indices), shape=shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat: "BCOO", nse=None) -> "BCOO":
  """``mat`` without its explicitly stored zeros (duplicates summed, indices sorted)."""
  props = _validate(mat.data, mat.indices, mat.shape)
  zero = (mat.data == 0).all(tuple(range(props.n_batch + 1, mat.data.ndim)))
  shared = tuple(i for i, s in enumerate(mat.indices.shape[:props.n_batch]) if s == 1)
  zero = zero.all(shared, keepdims=True)
  fill = _sparse_fill(mat.indices, mat.shape, props)
  indices = jnp.where(zero[..., None], fill, mat.indices)
  return bcoo_sum_duplicates(BCOO((mat.data, indices), shape=mat.shape), nse=nse)


# --- arithmetic ---------------------------------------------------------------------------

def bcoo_multiply_dense(sp_mat: "BCOO", v):
  """The stored values of ``sp_mat * v`` for a dense ``v`` broadcasting to its shape (the
  result has ``sp_mat``'s indices)."""
  v = jnp.asarray(v)
  if v.ndim == 0:
    return sp_mat.data * v
  shape = sp_mat.shape
  if jnp.broadcast_shapes(v.shape, shape) != shape:
    raise NotImplementedError(
        "multiplication between sparse and dense is only implemented for cases where the "
        f"output shape matches the sparse matrix shape. Got {shape=}, {v.shape=}")
  # Products distribute over duplicates, so no deduplication is needed.
  return sp_mat.data * _bcoo_extract(sp_mat.indices, jnp.broadcast_to(v, shape))


def bcoo_reduce_sum(mat: "BCOO", *, axes) -> "BCOO":
  """``mat`` summed over ``axes``, as a BCOO array: dense axes are summed in ``data``, sparse
  axes by dropping their index column (entries then coincide), batch axes by folding them
  into the stored entries."""
  shape, data, indices = mat.shape, mat.data, mat.indices
  axes = sorted({operator.index(a) + (len(shape) if a < 0 else 0) for a in axes})
  if any(not 0 <= a < len(shape) for a in axes):
    raise ValueError(f"axes {axes} out of range for shape {shape}")
  n_batch, n_sparse, _, nse = _validate(data, indices, shape)
  data = data.sum(tuple(a - n_sparse + 1 for a in axes if a >= n_batch + n_sparse))
  if n_sparse:
    # Padding entries would become in-bounds once their columns are dropped: zero them.
    valid = jnp.all(indices < _sparse_fill(indices, shape, mat._props), -1)
    data = jnp.where(valid.reshape(valid.shape + (1,) * (data.ndim - valid.ndim)), data,
                     jnp.zeros((), data.dtype))
  kept = [i for i in range(n_sparse) if i + n_batch not in axes]
  indices = indices[..., np.array(kept, dtype=np.int32)] if kept else \
      jnp.zeros(indices.shape[:-1] + (0,), indices.dtype)
  batch_axes = [a for a in axes if a < n_batch]
  for a in batch_axes:  # make data and indices agree on each summed batch axis
    if data.shape[a] == 1 and indices.shape[a] == 1:
      data = data * shape[a]
    elif data.shape[a] == 1:
      data = jnp.broadcast_to(data, data.shape[:a] + (shape[a],) + data.shape[a + 1:])
    elif indices.shape[a] == 1:
      data = data.sum(a, keepdims=True)
  # The summed batch axes become part of the entry axis, in data and indices alike.
  target = [data.shape[a] if a in batch_axes else indices.shape[a] for a in range(n_batch)]
  indices = jnp.broadcast_to(indices, (*target, *indices.shape[n_batch:]))
  kept_batch = [i for i in range(n_batch) if i not in batch_axes]
  order = (*kept_batch, *batch_axes)
  new_nse = nse * math.prod(data.shape[a] for a in batch_axes)
  data = data.transpose((*order, *range(n_batch, data.ndim)))
  data = data.reshape((*data.shape[:len(kept_batch)], new_nse, *data.shape[n_batch + 1:]))
  indices = indices.transpose((*order, n_batch, n_batch + 1))
  indices = indices.reshape((*indices.shape[:len(kept_batch)], new_nse, indices.shape[-1]))
  out_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
  return BCOO((data, indices), shape=out_shape)


def _dot_dtype(lhs_aval, rhs_aval, dimension_numbers, preferred_element_type):
  out = eval_shape(lambda a, b: lax.dot_general(
      a, b, dimension_numbers, preferred_element_type=preferred_element_type),
      lhs_aval, rhs_aval)
  return out.shape, out.dtype


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """``lax.dot_general`` where either operand (or both) may be a BCOO array; the result is
  dense when one operand is, and a BCOO array when both are."""
  del out_sharding
  (lhs_c, rhs_c), (lhs_b, rhs_b) = dimension_numbers
  dn = ((tuple(lhs_c), tuple(rhs_c)), (tuple(lhs_b), tuple(rhs_b)))
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    out = lax.dot_general(lhs.todense(), rhs.todense(), dn, precision=precision,
                          preferred_element_type=preferred_element_type)
    n_batch = len(lhs_b)
    return bcoo_fromdense(out, nse=math.prod(out.shape[n_batch:]) if out.ndim > n_batch
                          else 1, n_batch=n_batch)
  if isinstance(lhs, BCOO):
    rhs = jnp.asarray(rhs)
    _, dtype = _dot_dtype(_aval(lhs.shape, lhs.dtype), rhs, dn, preferred_element_type)
    if lhs.n_batch or lhs.n_dense or lhs_b:
      return lax.dot_general(lhs.todense(), rhs, dn, precision=precision,
                             preferred_element_type=preferred_element_type)
    return _spdot(lhs, rhs, dn[0][0], dn[0][1], dtype)
  if isinstance(rhs, BCOO):
    lhs = jnp.asarray(lhs)
    _, dtype = _dot_dtype(lhs, _aval(rhs.shape, rhs.dtype), dn, preferred_element_type)
    if rhs.n_batch or rhs.n_dense or rhs_b:
      return lax.dot_general(lhs, rhs.todense(), dn, precision=precision,
                             preferred_element_type=preferred_element_type)
    out = _spdot(rhs, lhs, dn[0][1], dn[0][0], dtype)
    # _spdot puts rhs's free axes first; dot_general wants lhs's first.
    n_rhs_free = rhs.ndim - len(rhs_c)
    return out.transpose((*range(n_rhs_free, out.ndim), *range(n_rhs_free)))
  return lax.dot_general(lhs, rhs, dn, precision=precision,
                         preferred_element_type=preferred_element_type)


def _aval(shape, dtype):
  return ShapeDtypeStruct(shape, dtype)


def _spdot(sp, dense, sp_contract, dense_contract, dtype):
  """Contract an unbatched, all-sparse BCOO array with a dense array: gather the dense rows
  each stored entry meets, scale them by the entry, and scatter-add them to the entry's
  free coordinates. Output axes: ``sp``'s free axes, then ``dense``'s."""
  sp_free = [d for d in range(sp.ndim) if d not in sp_contract]
  dense_free = [d for d in range(dense.ndim) if d not in dense_contract]
  moved = dense.transpose((*dense_contract, *dense_free)).astype(dtype)
  idx = sp.indices
  if sp_contract:
    rows = moved.at[tuple(idx[:, c] for c in sp_contract)].get(mode="fill", fill_value=0)
  else:
    rows = jnp.broadcast_to(moved, (sp.nse,) + moved.shape)
  data = sp.data.astype(dtype).reshape((sp.nse,) + (1,) * len(dense_free))
  products = data * rows
  out_shape = tuple(sp.shape[d] for d in sp_free) + tuple(dense.shape[d] for d in dense_free)
  if not sp_free:
    # Padding entries gathered zeros (mode="fill"), so they add nothing.
    return products.sum(0)
  return jnp.zeros(out_shape, dtype).at[tuple(idx[:, f] for f in sp_free)].add(products)


# --- the array type -----------------------------------------------------------------------

@register_pytree_node_class
class BCOO(JAXSparse):
  """A batched-coordinate sparse array, built from ``(data, indices)`` and ``shape``.

  ``data`` has shape ``batch + (nse,) + dense`` and ``indices`` shape
  ``batch + (nse, n_sparse)``; entries with equal indices add up. It is a pytree (leaves
  ``data`` and ``indices``), so it passes through ``jit``, ``vmap`` and ``grad``. Its
  arithmetic methods (``+``, ``*``, ``**``, ``@``, ``sum``, ``reshape``...) are those of the
  dense array under ``sparsify`` and are installed by ``transform``.
  """

  def __init__(self, args, *, shape, indices_sorted: bool = False,
               unique_indices: bool = False):
    self.data, self.indices = map(jnp.asarray, args)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    super().__init__(args, shape=shape)
    _validate(self.data, self.indices, self.shape)

  @property
  def _info(self) -> SparseInfo:
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def _props(self) -> BCOOProperties:
    return _validate(self.data, self.indices, self.shape)

  @property
  def _bufs(self):
    return (self.data, self.indices)

  @property
  def nse(self) -> int:
    return self.indices.shape[-2]

  @property
  def dtype(self):
    return self.data.dtype

  @property
  def n_batch(self) -> int:
    return self.indices.ndim - 2

  @property
  def n_sparse(self) -> int:
    return self.indices.shape[-1]

  @property
  def n_dense(self) -> int:
    return self.data.ndim - 1 - self.n_batch

  def _repr_extra(self) -> str:
    extra = f", nse={self.nse}"
    if self.n_batch:
      extra += f", n_batch={self.n_batch}"
    if self.n_dense:
      extra += f", n_dense={self.n_dense}"
    return extra

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense: int = 0,
                n_batch: int = 0) -> "BCOO":
    """A BCOO array holding the nonzeros of the dense ``mat``."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense: int = 0,
                        n_batch: int = 0) -> "BCOO":
    """A BCOO array from a ``scipy.sparse`` matrix or array."""
    if n_dense or n_batch:
      raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
    mat = mat.tocoo()
    indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
    return cls((jnp.asarray(mat.data), jnp.asarray(indices)), shape=mat.shape)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense: int = 0,
             n_batch: int = 0, nse: int = 0) -> "BCOO":
    shape = tuple(shape)
    n_sparse = len(shape) - n_dense - n_batch
    if min(n_sparse, n_dense, n_batch, nse) < 0:
      raise ValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
    batch, sparse = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    data = jnp.zeros((*batch, nse, *shape[n_batch + n_sparse:]), dtype)
    indices = jnp.broadcast_to(jnp.array(sparse, index_dtype), (*batch, nse, n_sparse))
    return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch: int = 0,
           n_dense: int = 0) -> "BCOO":
    if 2 - n_batch - n_dense < 0 or n_batch < 0 or n_dense < 0:
      raise ValueError(f"Invalid inputs: shape={(N, M)}, {n_dense=}, {n_batch=}")
    size = min(N, M - k) if k > 0 else min(N + k, M)
    if size <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch,
                        n_dense=n_dense)
    if n_dense or n_batch > 1:
      return cls.fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch, n_dense=n_dense,
                           index_dtype=index_dtype)
    if n_batch == 0:
      diag = np.arange(size)
      rows, cols = diag - min(k, 0), diag + max(k, 0)
      return cls((jnp.ones(size, dtype), jnp.asarray(np.stack([rows, cols], 1), index_dtype)),
                 shape=(N, M), indices_sorted=True, unique_indices=True)
    # One entry per row: column r + k, or the out-of-bounds M where the diagonal misses it.
    cols = np.arange(N) + k
    hit = (cols >= 0) & (cols < M)
    data = jnp.asarray(hit[:, None], dtype if dtype is not None else jnp.float_)
    indices = jnp.asarray(np.where(hit, cols, M)[:, None, None], index_dtype)
    return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)

  def todense(self):
    """The dense array this one represents."""
    return bcoo_todense(self)

  def transpose(self, axes=None) -> "BCOO":
    """The array with axes permuted (reversed by default)."""
    perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
    return bcoo_transpose(self, permutation=perm)

  def sort_indices(self) -> "BCOO":
    """A copy with indices sorted lexicographically."""
    return bcoo_sort_indices(self)

  def sum_duplicates(self, nse=None, remove_zeros: bool = True) -> "BCOO":
    """A copy with duplicate indices summed and indices sorted; with ``remove_zeros`` also
    explicit zeros dropped. Pass ``nse`` to use it under ``jit``."""
    if remove_zeros:
      return bcoo_eliminate_zeros(self, nse=nse)
    return bcoo_sum_duplicates(self, nse=nse)

  def _with_data(self, data) -> "BCOO":
    return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                unique_indices=self.unique_indices)

  def __mul__(self, other):
    if isinstance(other, JAXSparse):
      return NotImplemented  # bcoo_products installs the sparse-sparse product
    return self._with_data(bcoo_multiply_dense(self, other))

  __rmul__ = __mul__

  # Indexing, reshape and update_layout are installed by bcoo_indexing and bcoo_layout, the
  # products by bcoo_products, and the other operators (the dense ones under sparsify, as
  # in JAX) by transform.

  def tree_flatten(self):
    return (self.data, self.indices), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCOO.tree_unflatten: invalid {aux_data=}")
    obj.__dict__.update(**aux_data)
    return obj


def _bcoo_dot_general(lhs_data, lhs_indices, rhs, *, dimension_numbers,
                      preferred_element_type=None, lhs_spinfo, out_sharding=None):
  """``bcoo_dot_general`` of the BCOO array with buffers ``lhs_data``/``lhs_indices`` and
  static part ``lhs_spinfo`` with a dense ``rhs``."""
  lhs = BCOO((lhs_data, lhs_indices), shape=lhs_spinfo.shape,
             indices_sorted=lhs_spinfo.indices_sorted,
             unique_indices=lhs_spinfo.unique_indices)
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                          preferred_element_type=preferred_element_type,
                          out_sharding=out_sharding)


def _to_elt(cont, _, val, axis):
  """The element ``vmap`` sees for a BCOO stack mapped along batch axis ``axis``."""
  if axis is None:
    return val
  if not 0 <= axis < val.n_batch:
    raise ValueError(f"Cannot map in_axis={axis} for BCOO array with n_batch={val.n_batch}. "
                     "in_axes for batched BCOO operations must correspond to a batch "
                     "dimension.")
  return BCOO((cont(val.data, axis), cont(val.indices, axis)),
              shape=val.shape[:axis] + val.shape[axis + 1:],
              indices_sorted=val.indices_sorted, unique_indices=val.unique_indices)


def _from_elt(cont, axis_size, elt, axis):
  """The stack of ``vmap``'s BCOO outputs: the mapped axis becomes batch axis ``axis`` (so
  the result's shape has it, which a plain pytree stacking would miss)."""
  if axis is None:
    return elt
  if not 0 <= axis <= elt.n_batch:
    raise ValueError(f"BCOO: cannot add out_axis={axis} for BCOO array with "
                     f"n_batch={elt.n_batch}. BCOO batch axes must be a contiguous block of "
                     "leading dimensions.")
  return BCOO((cont(axis_size, elt.data, axis), cont(axis_size, elt.indices, axis)),
              shape=elt.shape[:axis] + (axis_size,) + elt.shape[axis:],
              indices_sorted=elt.indices_sorted, unique_indices=elt.unique_indices)


batching.register_vmappable(BCOO, int, int, _to_elt, _from_elt, None)
