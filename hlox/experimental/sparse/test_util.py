"""Test helpers for sparse arrays (``jax.experimental.sparse.test_util``): random sparse
operands, iteration over sparse layouts, and ``SparseTestCase``, whose checks compare a sparse
operation with its dense counterpart under ``jit``, autodiff and ``vmap``."""
from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import jit, vmap
from hlox.autodiff import jacfwd, jacrev
from hlox.experimental import sparse
from hlox.experimental.sparse._test_case import JaxTestCase, rand_default
from hlox._tree_transform import tree_flatten, tree_map, tree_unflatten

__all__ = ["BatchedDotGeneralProperties", "MATMUL_TOL", "SparseLayout", "SparseTestCase",
           "is_sparse", "iter_bcsr_layouts", "iter_sparse_layouts", "iter_subsets",
           "rand_bcoo", "rand_bcsr", "rand_sparse"]

# Tolerances of sparse products against dense ones (summation order differs).
MATMUL_TOL = {np.float32: 1e-5, np.float64: 1e-10, np.complex64: 1e-5, np.complex128: 1e-10}


def is_sparse(x) -> bool:
  """Whether ``x`` is a sparse array (any ``JAXSparse`` format)."""
  return isinstance(x, sparse.JAXSparse)


def _todense_tree(tree):
  return tree_map(sparse.todense, tree, is_leaf=is_sparse)


class BatchedDotGeneralProperties(NamedTuple):
  """Operand shapes, sparse layout and dimension numbers of one batched dot_general case."""
  lhs_shape: tuple
  rhs_shape: tuple
  n_batch: int
  n_dense: int
  dimension_numbers: tuple


class SparseLayout(NamedTuple):
  """How many leading batch, middle sparse and trailing dense axes a sparse array has."""
  n_batch: int
  n_dense: int
  n_sparse: int


class SparseTestCase(JaxTestCase):
  """A test case with checks of sparse operations against dense ones."""

  def assertSparseArraysEquivalent(self, x, y, *, check_dtypes=True, atol=None, rtol=None,
                                   canonicalize_dtypes=True, err_msg=""):
    """``x`` and ``y`` have the same pytree structure (format, shape, flags) and close
    buffers."""
    x_leaves, x_tree = tree_flatten(x)
    y_leaves, y_tree = tree_flatten(y)
    self.assertEqual(x_tree, y_tree)
    self.assertAllClose(x_leaves, y_leaves, check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                        canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)

  def _CheckAgainstDense(self, dense_op, sparse_op, args_maker, check_jit=True,
                         check_dtypes=True, tol=None, atol=None, rtol=None,
                         canonicalize_dtypes=True):
    """``sparse_op`` on sparse arguments densifies to ``dense_op`` on their dense forms (and
    under ``jit`` gives the same sparse result)."""
    args = args_maker()
    expected = dense_op(*_todense_tree(args))
    result = sparse_op(*args)
    self.assertAllClose(expected, _todense_tree(result), check_dtypes=check_dtypes,
                        atol=atol or tol, rtol=rtol or tol,
                        canonicalize_dtypes=canonicalize_dtypes)
    if check_jit:
      self.assertSparseArraysEquivalent(result, jit(sparse_op)(*args), atol=atol or tol,
                                        rtol=rtol or tol)

  def _CheckGradsSparse(self, dense_fun, sparse_fun, args_maker, *, argnums=None,
                        modes=("fwd", "rev"), atol=None, rtol=None):
    """Jacobians with respect to the arguments' buffers agree between the dense and the
    sparse function (sparse arguments differentiate through their ``data``)."""
    if not set(modes) <= {"fwd", "rev"}:
      raise ValueError(f"modes must be among 'fwd' and 'rev'; got {modes}")
    args = args_maker()
    leaves, treedef = tree_flatten(args)
    first_leaf = np.cumsum([0] + [len(tree_flatten(a)[0]) for a in args[:-1]]).tolist()
    if argnums is not None:
      first_leaf = [first_leaf[n] for n in argnums]

    def dense_flat(*flat):
      return dense_fun(*_todense_tree(tree_unflatten(treedef, flat)))

    def sparse_flat(*flat):
      return _todense_tree(sparse_fun(*tree_unflatten(treedef, flat)))

    for mode, jac in (("rev", jacrev), ("fwd", jacfwd)):
      if mode in modes:
        self.assertAllClose(jac(dense_flat, argnums=first_leaf)(*leaves),
                            jac(sparse_flat, argnums=first_leaf)(*leaves), atol=atol,
                            rtol=rtol)

  def _random_bdims(self, *ndims):
    rng = self.rng()
    return [rng.randint(0, n + 1) for n in ndims]

  def _CheckBatchingSparse(self, dense_fun, sparse_fun, args_maker, *, batch_size=3,
                           bdims=None, check_jit=False, check_dtypes=True, tol=None,
                           atol=None, rtol=None, canonicalize_dtypes=True):
    """``vmap`` of ``sparse_fun`` agrees with ``vmap`` of ``dense_fun`` over ``batch_size``
    stacked argument sets (sparse ones stacked along a batch axis)."""
    if bdims is None:
      bdims = self._random_bdims(*(a.n_batch if is_sparse(a) else a.ndim
                                   for a in args_maker()))

    def stack(values, bdim):
      return _concatenate([_expand_dims(v, bdim) for v in values], bdim)

    def batched_args():
      columns = list(zip(*(args_maker() for _ in range(batch_size))))
      if len(columns) != len(bdims):
        raise ValueError(f"{len(bdims)} batch dims for {len(columns)} arguments")
      return [col[0] if bdim is None else stack(col, bdim) for col, bdim in zip(columns, bdims)]

    self._CheckAgainstDense(vmap(dense_fun, bdims), vmap(sparse_fun, bdims), batched_args,
                            check_dtypes=check_dtypes, tol=tol, atol=atol, rtol=rtol,
                            check_jit=check_jit, canonicalize_dtypes=canonicalize_dtypes)


def _expand_dims(x, dim):
  """``x`` with a new axis of size 1 at ``dim`` (a batch axis of a sparse ``x``)."""
  if isinstance(x, sparse.BCOO):
    dims = [d if d < dim else d + 1 for d in range(x.ndim)]
    shape = x.shape[:dim] + (1,) + x.shape[dim:]
    return sparse.bcoo_broadcast_in_dim(x, shape=shape, broadcast_dimensions=dims)
  if isinstance(x, sparse.BCSR):
    return sparse.BCSR.from_bcoo(_expand_dims(x.to_bcoo(), dim))
  return lax.expand_dims(x, [dim])


def _concatenate(values, dim):
  if isinstance(values[0], sparse.BCOO):
    return sparse.bcoo_concatenate(values, dimension=dim)
  if isinstance(values[0], sparse.BCSR):
    return sparse.bcsr_concatenate(values, dimension=dim)
  return lax.concatenate(values, dim)


def _rand_sparse(shape, dtype, *, rng, rand_method, nse, n_batch, n_dense, sparse_format):
  """A random sparse array: random data at uniformly random (possibly repeated) indices;
  ``nse`` below 1 is a fraction of the sparse size."""
  if sparse_format not in ("bcoo", "bcsr"):
    raise ValueError(f"Sparse format {sparse_format} not supported.")
  shape = tuple(shape)
  n_sparse = len(shape) - n_batch - n_dense
  if min(n_sparse, n_batch, n_dense) < 0:
    raise ValueError(f"Invalid parameters: {shape=} {n_batch=} {n_sparse=}")
  if sparse_format == "bcsr" and n_sparse != 2:
    raise ValueError(f"bcsr array must have 2 sparse dimensions; {n_sparse} is given.")
  batch = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense = shape[n_batch + n_sparse:]
  if 0 <= nse < 1:
    nse = math.ceil(nse * math.prod(sparse_shape))
  nse = int(nse)
  data = jnp.array(rand_method(rng)((*batch, nse, *dense), dtype))
  if sparse_format == "bcoo":
    indices = rng.randint(0, sparse_shape, size=(*batch, nse, n_sparse), dtype=np.int32)
    return sparse.BCOO((data, jnp.array(indices)), shape=shape)
  indices = rng.randint(0, sparse_shape[1], size=(*batch, nse), dtype=np.int32)
  indptr = np.sort(rng.randint(0, nse + 1, size=(*batch, sparse_shape[0] + 1),
                               dtype=np.int32), axis=-1)
  indptr[..., 0] = 0
  return sparse.BCSR((data, jnp.array(indices), jnp.array(indptr)), shape=shape)


def rand_bcoo(rng, rand_method=rand_default, nse=0.5, n_batch=0, n_dense=0):
  """A generator ``(shape, dtype) -> BCOO`` of random arrays with this layout."""
  return functools.partial(_rand_sparse, rng=rng, rand_method=rand_method, nse=nse,
                           n_batch=n_batch, n_dense=n_dense, sparse_format="bcoo")


def rand_bcsr(rng, rand_method=rand_default, nse=0.5, n_batch=0, n_dense=0):
  """A generator ``(shape, dtype) -> BCSR`` of random arrays with this layout."""
  return functools.partial(_rand_sparse, rng=rng, rand_method=rand_method, nse=nse,
                           n_batch=n_batch, n_dense=n_dense, sparse_format="bcsr")


def iter_subsets(s):
  """Every subset of the sequence ``s`` as a tuple, smallest first."""
  s = tuple(s)
  return itertools.chain.from_iterable(itertools.combinations(s, n)
                                       for n in range(len(s) + 1))


def iter_sparse_layouts(shape, min_n_batch=0):
  """Every ``SparseLayout`` of an array of ``shape`` with at least ``min_n_batch`` batch
  axes: by number of batch axes, then of dense axes."""
  ndim = len(shape)
  for n_batch in range(min_n_batch, ndim + 1):
    for n_dense in range(ndim - n_batch + 1):
      yield SparseLayout(n_batch=n_batch, n_dense=n_dense,
                         n_sparse=ndim - n_batch - n_dense)


def iter_bcsr_layouts(shape, min_n_batch=0):
  """The layouts of ``shape`` with exactly two sparse axes (BCSR's)."""
  for n_batch in range(min_n_batch, len(shape) - 1):
    yield SparseLayout(n_batch=n_batch, n_dense=len(shape) - 2 - n_batch, n_sparse=2)


def rand_sparse(rng, nse=0.5, post=lambda x: x, rand_method=rand_default):
  """A generator ``(shape, dtype) -> array`` of dense arrays with ``nse`` nonzeros at most (a
  fraction of the size when below 1), passed through ``post``."""
  def generate(shape, dtype, nse=nse):
    size = math.prod(shape)
    count = min(size, int(nse * size if 0 <= nse < 1 else nse))
    out = rand_method(rng)(shape, dtype)
    out.flat[rng.choice(size, size - count, replace=False)] = 0
    return post(out)
  return generate
