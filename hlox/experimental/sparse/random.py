"""Random sparse arrays (``jax.experimental.sparse.random_bcoo``)."""
import math
import operator

from hlox import numpy as jnp
from hlox import random
from hlox.api import vmap
from hlox.core import dtypes
from hlox.experimental.sparse.bcoo import BCOO

__all__ = ["random_bcoo"]


def random_bcoo(key, shape, *, dtype=jnp.float_, indices_dtype=None, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False,
                generator=random.uniform, **kwds) -> BCOO:
  """A BCOO array with ``nse`` entries per batch element (a fraction of the sparse size when
  below 1) at random positions (distinct ones with ``unique_indices``), their values drawn
  by ``generator(key, shape=..., dtype=dtype, **kwds)``."""
  shape = tuple(operator.index(s) for s in shape)
  n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
    raise ValueError(f"Invalid {n_batch=}, {n_dense=} for {shape=}")
  n_sparse = len(shape) - n_batch - n_dense
  batch = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense = shape[n_batch + n_sparse:]
  sparse_size = math.prod(sparse_shape)
  if not 0 <= nse < sparse_size:
    raise ValueError(f"got {nse=}, expected to be between 0 and {sparse_size}")
  if 0 < nse < 1:
    nse = math.ceil(nse * sparse_size)
  nse = operator.index(nse)
  if indices_dtype is None:
    indices_dtype = dtypes.canonicalize_dtype(jnp.int_)
  if sparse_size > jnp.iinfo(indices_dtype).max:
    raise ValueError(f"{indices_dtype=} does not have enough range to generate sparse "
                     f"indices of size {sparse_size}.")

  def one_batch(k):
    if not sparse_shape:
      return jnp.zeros((nse, n_sparse), indices_dtype)
    flat = random.choice(k, sparse_size, shape=(nse,), replace=not unique_indices)
    return jnp.column_stack(jnp.unravel_index(flat.astype(indices_dtype), sparse_shape))

  keys = random.split(key, math.prod(batch) + 1)
  data = generator(keys[0], shape=(*batch, nse, *dense), dtype=dtype, **kwds)
  indices = vmap(one_batch)(keys[1:]).reshape((*batch, nse, n_sparse))
  mat = BCOO((data, indices.astype(indices_dtype)), shape=shape)
  return mat.sort_indices() if sorted_indices else mat
