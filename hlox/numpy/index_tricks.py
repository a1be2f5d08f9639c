"""Index helpers: flat and multi-dimensional indices (``unravel_index``,
``ravel_multi_index``), triangle and diagonal indices, ``diagflat``, ``fill_diagonal``,
open and dense grids (``ix_``, ``mgrid``, ``ogrid``), the concatenating index objects
``r_`` and ``c_``, and ``mask_indices``.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.numpy import creation, searching, shapes, ufuncs, util

__all__ = ["unravel_index", "ravel_multi_index", "tril_indices", "triu_indices",
           "tril_indices_from", "triu_indices_from", "diag_indices", "diag_indices_from",
           "diagflat", "fill_diagonal", "ix_", "mgrid", "ogrid", "r_", "c_", "mask_indices"]


def unravel_index(indices, shape):
  """Convert flat indices into coordinates in an array of the given shape (row-major).

  Negative indices count from the end; out-of-range ones are clipped into range.

  Args:
    indices: integer array-like of flat indices.
    shape: an int or a 1-d sequence of ints, the array's shape.

  Returns:
    A tuple of ``len(shape)`` integer arrays of ``indices``' shape.

  Examples:
    >>> jnp.unravel_index(jnp.array([1, 5, -1]), (2, 3))
    (Array([0, 1, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
  """
  util.check_arraylike("unravel_index", indices)
  indices = creation.asarray(indices)
  if not dtypes.is_int(get_aval(indices).dtype):
    raise TypeError("Only integer indices are allowed, got " + str(indices.dtype))
  # The dimensions stay as given (Python ints are weak: the indices' dtype wins); they may
  # be traced, as under jit of the whole call.
  dims = list(shape) if isinstance(shape, (list, tuple)) or np.ndim(shape) == 1 else [shape]
  if any(np.ndim(d) != 0 for d in dims):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  coords = [None] * len(dims)
  rest = indices
  for i in reversed(builtins.range(len(dims))):
    rest, coords[i] = ufuncs.divmod(rest, dims[i])
  # What is left is 0 for indices in range, -1 for negative ones in range (the floor
  # division wrapped them, as NumPy counts from the end); beyond, clip to the edges.
  above = rest > 0
  if dtypes.is_unsigned_int(get_aval(indices).dtype):  # -1 would wrap to the maximum
    return tuple(ufuncs.where(above, d - 1, c) for d, c in zip(dims, coords))
  below = rest < -1
  return tuple(ufuncs.where(above, d - 1, ufuncs.where(below, 0, c))
               for d, c in zip(dims, coords))


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
  """Convert coordinate arrays into flat indices into an array of shape ``dims``.

  Args:
    multi_index: a tuple of integer array-likes, one per dimension of ``dims``, broadcast
      together.
    dims: the array's shape, a sequence of ints.
    mode: 'raise' (out-of-range coordinates raise ``ValueError``; needs concrete indices),
      'wrap' (taken modulo each dimension), 'clip' (clamped) or 'ignore' (no check:
      out-of-range coordinates give meaningless flat indices).
    order: 'C' (row-major) or 'F' (column-major).
    dtype: keyword-only integer dtype of the result (default: the indices' promoted dtype).

  Returns:
    An integer array of the broadcast shape of ``multi_index``.

  Examples:
    >>> jnp.ravel_multi_index((jnp.array([0, 1]), jnp.array([2, 0])), (2, 3))
    Array([2, 3], dtype=int32)
    >>> jnp.ravel_multi_index((jnp.array([0, 1]), jnp.array([2, 0])), (2, 3), order='F')
    Array([4, 1], dtype=int32)
  """
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  util.check_arraylike("ravel_multi_index", *multi_index)
  dims = tuple(operator.index(d) for d in dims)
  index = [creation.asarray(i) for i in multi_index]
  for i in index:
    if not dtypes.is_int(get_aval(i).dtype):
      raise TypeError("only int indices permitted")
  if dtype is None:
    # A Python int is weak: the indices' own type wins (int8 indices give int8 results).
    dtype = dtypes.result_type(1, *index)
  else:
    dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  if not dtypes.is_int(dtype):
    raise ValueError(f"dtype={np.dtype(dtype).name} is not an integer type.")
  if math.prod(dims) - 1 > np.iinfo(dtype).max:
    raise ValueError(f"jnp.ravel_multi_index: dtype={np.dtype(dtype).name} not large enough to "
                     f"hold flattened index for dims={dims}. Use the dtype argument to pass a "
                     "suitable dtype (e.g. dtype=np.min_scalar_type(prod(dims))).")
  if mode == "raise":
    for i, d in zip(index, dims):
      if isinstance(i, Tracer) and i.to_concrete_value() is None:
        raise ConcretizationTypeError(
            i, "The error occurred because ravel_multi_index was jit-compiled with "
            "mode='raise'. Use mode='wrap' or mode='clip' instead.")
      value = util.concrete_value("ravel_multi_index (mode='raise')", i)
      if np.any((value < 0) | (value >= d)):
        raise ValueError("invalid entry in coordinates array")
  elif mode == "wrap":
    index = [i % d for i, d in zip(index, dims)]
  elif mode == "clip":
    index = [ufuncs.clip(i, 0, d - 1) for i, d in zip(index, dims)]
  elif mode != "ignore":
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
  if order == "F":
    index, dims = index[::-1], dims[::-1]
  elif order != "C":
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  result = creation.asarray(0, dtype)
  for i, d in zip(index, dims):
    result = result * np.asarray(d, dtype) + i.astype(dtype)
  return result


def tril_indices(n, k=0, m=None):
  """Row and column indices of the lower triangle of an ``(n, m)`` array.

  Args:
    n: the number of rows.
    k: the diagonal bounding the triangle: entries at and below diagonal ``k`` are included.
    m: the number of columns (default ``n``).

  Returns:
    A tuple ``(rows, cols)`` of 1-d integer arrays, in row-major order.

  Examples:
    >>> jnp.tril_indices(3)
    (Array([0, 1, 1, 2, 2, 2], dtype=int32), Array([0, 0, 1, 0, 1, 2], dtype=int32))
  """
  n = operator.index(n)
  k = operator.index(k)
  m = n if m is None else operator.index(m)
  return tuple(creation.asarray(i.astype(util.index_dtype())) for i in np.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
  """Row and column indices of the upper triangle of an ``(n, m)`` array.

  Args:
    n: the number of rows.
    k: the diagonal bounding the triangle: entries at and above diagonal ``k`` are included.
    m: the number of columns (default ``n``).

  Returns:
    A tuple ``(rows, cols)`` of 1-d integer arrays, in row-major order.

  Examples:
    >>> jnp.triu_indices(3, k=1)
    (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
    >>> jnp.triu_indices(2, m=3)
    (Array([0, 0, 0, 1, 1], dtype=int32), Array([0, 1, 2, 1, 2], dtype=int32))
  """
  n = operator.index(n)
  k = operator.index(k)
  m = n if m is None else operator.index(m)
  return tuple(creation.asarray(i.astype(util.index_dtype())) for i in np.triu_indices(n, k, m))


def _check_2d(name, arr):
  shape = get_aval(creation.asarray(arr)).shape
  if len(shape) != 2:
    raise ValueError(f"input array must be 2-d; got shape {shape}")
  return shape


def tril_indices_from(arr, k=0):
  """``tril_indices`` for the shape of the 2-d ``arr``.

  Args:
    arr: a 2-d array (other ranks raise ``ValueError``).
    k: the diagonal bounding the triangle (as for ``tril_indices``).

  Returns:
    A tuple ``(rows, cols)`` of 1-d integer arrays.

  Examples:
    >>> jnp.tril_indices_from(jnp.zeros((2, 3)))
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
  """
  n, m = _check_2d("tril_indices_from", arr)
  return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
  """``triu_indices`` for the shape of the 2-d ``arr``.

  Args:
    arr: a 2-d array (other ranks raise ``ValueError``).
    k: the diagonal bounding the triangle (as for ``triu_indices``).

  Returns:
    A tuple ``(rows, cols)`` of 1-d integer arrays.

  Examples:
    >>> jnp.triu_indices_from(jnp.zeros((2, 3)), k=1)
    (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
  """
  n, m = _check_2d("triu_indices_from", arr)
  return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
  """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``.

  Args:
    n: the length of every axis (non-negative).
    ndim: the number of dimensions (non-negative).

  Returns:
    A tuple of ``ndim`` identical 1-d arrays ``arange(n)``.

  Examples:
    >>> jnp.diag_indices(3)
    (Array([0, 1, 2], dtype=int32), Array([0, 1, 2], dtype=int32))
  """
  n, ndim = operator.index(n), operator.index(ndim)
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (creation.arange(n, dtype=util.index_dtype()),) * ndim


def diag_indices_from(arr):
  """Indices of the main diagonal of ``arr``.

  Args:
    arr: an array of at least two dimensions, all of equal length.

  Returns:
    A tuple of ``arr.ndim`` 1-d integer arrays.

  Examples:
    >>> jnp.diag_indices_from(jnp.zeros((2, 2)))
    (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
  """
  util.check_arraylike("diag_indices_from", arr)
  shape = get_aval(creation.asarray(arr)).shape
  if len(shape) < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(shape[0], len(shape))


def diagflat(v, k=0):
  """A 2-d array with the flattened ``v`` on diagonal ``k`` and zeros elsewhere.

  Args:
    v: array-like input (flattened).
    k: the diagonal: 0 the main one, positive above it, negative below.

  Returns:
    A square array of side ``v.size + abs(k)`` and ``v``'s dtype.

  Examples:
    >>> jnp.diagflat(jnp.array([[1, 2]]), k=-1)
    Array([[0, 0, 0],
           [1, 0, 0],
           [0, 2, 0]], dtype=int32)
  """
  util.check_arraylike("diagflat", v)
  return creation.diag(shapes.ravel(v), k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """``a`` with its main diagonal set to ``val``.

  NumPy's ``fill_diagonal`` writes into ``a``; hlox arrays are immutable, so ``inplace=False``
  is required (the default raises ``NotImplementedError``) and a new array is returned.

  Args:
    a: an array of at least two dimensions (all of equal length when more than two).
    val: a scalar or array-like of values, repeated along the diagonal as needed.
    wrap: only False is supported (True raises ``NotImplementedError``).
    inplace: keyword-only; must be False.

  Returns:
    An array of ``a``'s shape and dtype.

  Examples:
    >>> jnp.fill_diagonal(jnp.zeros((2, 3), int), 7, inplace=False)
    Array([[7, 0, 0],
           [0, 7, 0]], dtype=int32)
  """
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  util.check_arraylike("fill_diagonal", a, val)
  a = creation.asarray(a)
  shape = get_aval(a).shape
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  n = builtins.min(shape)
  idx = creation.arange(n)
  val = shapes.ravel(creation.asarray(val))
  if get_aval(val).shape[0] == 0:
    return a
  val = shapes.resize(val, (n,)) if get_aval(val).shape[0] != n else val
  return a.at[(idx,) * len(shape)].set(val)


def ix_(*args):
  """Open-mesh index arrays for cross-indexing.

  The ``i``-th argument is reshaped to broadcast along axis ``i``, so ``a[ix_(rows, cols)]``
  selects the sub-array of those rows and columns.

  Args:
    *args: 1-d integer array-likes (boolean ones raise ``NotImplementedError``).

  Returns:
    A tuple of ``len(args)`` arrays; the ``i``-th has shape ``(1, ..., n_i, ..., 1)``.

  Examples:
    >>> x = jnp.arange(9).reshape(3, 3)
    >>> x[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 2]))]
    Array([[1, 2],
           [7, 8]], dtype=int32)
  """
  util.check_arraylike("ix", *args)
  n = len(args)
  out = []
  for i, a in enumerate(args):
    a = creation.asarray(a)
    if get_aval(a).ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{a.shape}")
    if get_aval(a).dtype == np.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = get_aval(a).shape[0]
    out.append(shapes.reshape(a, shape) if get_aval(a).shape[0] else
               creation.zeros(shape, dtype=util.index_dtype()))
  return tuple(out)


def _grid(name, sparse):
  class _Grid:
    def __getitem__(self, key):
      if isinstance(key, slice):
        key = (key,)
        single = True
      else:
        single = False
      arrays = [_slice_grid(s, name) for s in key]
      if single:
        return arrays[0]
      arrays = util.promote_dtypes(*arrays)
      if sparse:
        return list(creation.meshgrid(*arrays, indexing="ij", sparse=True))
      if not arrays:
        return creation.arange(0)
      return shapes.stack(creation.meshgrid(*arrays, indexing="ij"), 0)
  _Grid.__name__ = name
  return _Grid()


mgrid = _grid("mgrid", sparse=False)


ogrid = _grid("ogrid", sparse=True)


def mask_indices(n, mask_func, k=0, *, size=None):
  """The indices where ``mask_func(ones((n, n)), k)`` is non-zero.

  With ``mask_func=jnp.triu`` these are the indices of the upper triangle, and so on.

  Args:
    n: the side of the square array.
    mask_func: a function ``(array, k) -> array`` of the same shape, such as ``triu``.
    k: the offset passed to ``mask_func``.
    size: keyword-only static number of indices to return (needed under ``jit``).

  Returns:
    A tuple ``(rows, cols)`` of 1-d integer arrays.

  Examples:
    >>> jnp.mask_indices(3, jnp.triu, 1)
    (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
  """
  return tuple(searching.nonzero(mask_func(creation.ones((n, n)), k), size=size))


def _slice_grid(s, name):
  """``arange`` for a slice, or ``linspace`` (end included) when its step is imaginary."""
  for part in ("start", "stop", "step"):
    value = getattr(s, part)
    if isinstance(value, Tracer) and value.to_concrete_value() is None:
      raise ConcretizationTypeError(
          value, f"slice {part} of jnp.{name}: the bounds of a grid's slice fix its length, "
          "so they must be concrete")
  start = 0 if s.start is None else s.start
  step = 1 if s.step is None else s.step
  if np.iscomplex(step):
    return creation.linspace(start, s.stop, int(abs(step)))
  return creation.arange(start, s.stop, step)


class _AxisConcat:
  """Index object that concatenates slices (as ranges), scalars and arrays along ``axis``,
  after raising each to ``ndmin`` dimensions. A leading string directive overrides the
  settings: ``'axis,ndmin,trans1d'`` (``trans1d`` says where an upgraded array's own axes
  go), or ``'r'``/``'c'`` to make a 1-d result a row/column."""

  axis, ndmin, trans1d, name = 0, 1, -1, "r_"

  def __getitem__(self, key):
    items = key if isinstance(key, tuple) else (key,)
    axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
    if items and isinstance(items[0], str):
      directive, items = items[0], items[1:]
      if directive in ("r", "c"):
        matrix = 0 if directive == "r" else 1
      else:
        fields = directive.split(",")[:3]
        try:
          values = [int(f) for f in fields]
        except ValueError:
          raise ValueError(f"could not understand directive {directive!r} "
                           f"(jnp.{self.name})") from None
        axis, ndmin, trans1d = values + [axis, ndmin, trans1d][len(values):]
    pieces = []
    for item in items:
      if isinstance(item, slice):
        piece, item_ndim = _slice_grid(item, self.name), 1
      elif isinstance(item, str):
        raise ValueError(f"hlox.numpy.{self.name}: a string directive must be placed at "
                         "the beginning")
      else:
        piece = creation.asarray(item)
        item_ndim = get_aval(piece).ndim
      piece_ndim = get_aval(piece).ndim
      if piece_ndim < ndmin:
        piece = shapes.reshape(piece, (1,) * (ndmin - piece_ndim) + get_aval(piece).shape)
      if trans1d != -1 and ndmin - item_ndim > 0:
        # The item's own axes (last after the upgrade) start at position trans1d; NumPy's
        # rule, which JAX's agrees with for 1-d items.
        lo, hi = trans1d, ndmin - item_ndim
        if lo < 0:
          lo += hi + 1
        order = list(builtins.range(ndmin))
        piece = shapes.transpose(piece, order[:lo] + order[hi:] + order[lo:hi])
      pieces.append(piece)
    if not pieces:
      return creation.array([])
    result = shapes.concatenate(pieces, axis=axis)
    if matrix != -1 and get_aval(result).ndim == 1:
      result = shapes.expand_dims(result, matrix)
    return result

  def __len__(self):
    return 0


class RClass(_AxisConcat):
  """``r_[...]``: concatenate slices, scalars and arrays along the first axis."""
  axis, ndmin, trans1d, name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
  """``c_[...]``: concatenate along the last axis, raising pieces to 2-d as columns."""
  axis, ndmin, trans1d, name = -1, 2, 0, "c_"


r_ = RClass()
c_ = CClass()
