"""``hlox.numpy.linalg``: the linear-algebra functions that compose from ``hlox.numpy``.

Norms, and an LU factorization with partial pivoting written as an unrolled loop of array
operations (so ``det``, ``slogdet``, ``solve`` and ``inv`` differentiate, batch and jit like
any composition). The loops unroll over the matrix size, which suits the small and medium
matrices typical of tests and notebooks. Decompositions that need iterative eigen-solvers
(``eigh``, ``svd``, ``qr``, ...) are not available yet.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import util
from hlox.numpy.linalg_spectral import *  # noqa: F401,F403
from hlox.numpy.linalg_spectral import __all__ as _spectral_all, svdvals as _svdvals

__all__ = ["norm", "vector_norm", "matrix_norm", "det", "slogdet", "solve", "inv",
           "cholesky", "matrix_power", "multi_dot", "outer", "cross", "matmul", "tensordot",
           "vecdot", "trace", "diagonal", "matrix_transpose"]
__all__ += _spectral_all + ["cond"]  # eigh, svd, pinv, ... (linalg_spectral.py)


def _inexact(name, *args):
  util.check_arraylike(name, *args)
  return util.promote_dtypes_inexact(*[jnp.asarray(a) for a in args])


def _check_square(name, a):
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"{name}: argument must be a (batch of) square matrices, got shape "
                     f"{shape}")
  return shape[-1]


# --- norms ---------------------------------------------------------------------------------

def _abs_real(x):
  return jnp.abs(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """The ``ord``-norm of ``x`` along ``axis`` (all axes, flattened, by default)."""
  x, = _inexact("vector_norm", x)
  if axis is None:
    result = vector_norm(jnp.ravel(x), axis=0, ord=ord)
    return jnp.reshape(result, (1,) * get_aval(x).ndim) if keepdims else result
  a = _abs_real(x)
  if ord is None or ord == 2:
    return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), axis=axis, keepdims=keepdims))
  if ord == np.inf:
    return jnp.max(a, axis=axis, keepdims=keepdims)
  if ord == -np.inf:
    return jnp.min(a, axis=axis, keepdims=keepdims)
  if ord == 0:
    return jnp.sum(a != 0, axis=axis, keepdims=keepdims).astype(get_aval(a).dtype)
  if ord == 1:
    return jnp.sum(a, axis=axis, keepdims=keepdims)
  if isinstance(ord, str):
    raise ValueError(f"Invalid order '{ord}' for vector norm.")
  p = float(ord)
  return jnp.power(jnp.sum(jnp.power(a, p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """The ``ord``-norm of the matrices in the last two axes of ``x``."""
  x, = _inexact("matrix_norm", x)
  return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
  """Vector or matrix norm (NumPy's ``linalg.norm``; matrix ``ord`` 2, -2 and 'nuc' through
  the singular values)."""
  x, = _inexact("norm", x)
  nd = get_aval(x).ndim
  if axis is None:
    if ord is None:
      result = jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x))))
      return jnp.reshape(result, (1,) * nd) if keepdims else result
    if nd == 1:
      axis = (0,)
    elif nd == 2:
      axis = (0, 1)
    else:
      raise ValueError("Improper number of axes for norm: pass axis= for arrays of rank > 2")
  if isinstance(axis, (int, np.integer)):
    axis = (operator.index(axis),)
  axis = tuple(operator.index(a) for a in axis)
  if len(axis) == 1:
    return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
  if len(axis) != 2:
    raise ValueError(f"Improper number of dimensions to norm: axis={axis}")
  row, col = (a % nd for a in axis)
  if row == col:
    raise ValueError(f"Duplicate axes given to norm: axis={axis}")
  a = _abs_real(x)
  if ord is None or ord == "fro":
    return jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), axis=(row, col), keepdims=keepdims))
  if ord in (1, -1):
    sums = jnp.sum(a, axis=row, keepdims=True)
    red = jnp.max if ord == 1 else jnp.min
    result = red(sums, axis=col, keepdims=True)
  elif ord in (np.inf, -np.inf):
    sums = jnp.sum(a, axis=col, keepdims=True)
    red = jnp.max if ord == np.inf else jnp.min
    result = red(sums, axis=row, keepdims=True)
  elif ord in (2, -2, "nuc"):
    sv = _svdvals(jnp.moveaxis(x, (row, col), (-2, -1)))
    if ord == 2:
      y = jnp.max(sv, axis=-1, initial=0)
    elif ord == -2:
      y = jnp.min(sv, axis=-1)
    else:
      y = jnp.sum(sv, axis=-1)
    return jnp.expand_dims(y, (row, col)) if keepdims else y
  else:
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  return result if keepdims else jnp.squeeze(result, axis=(row, col))


# --- LU with partial pivoting --------------------------------------------------------------

def _lu(a):
  """Packed LU of the (batched) square ``a`` with partial pivoting: ``(lu, perm, sign)``,
  where ``a[..., perm, :] = L @ U`` and ``sign`` is the permutation's parity."""
  shape = get_aval(a).shape
  n = shape[-1]
  batch = shape[:-2]
  rows = jnp.arange(n)
  perm = jnp.broadcast_to(rows, batch + (n,))
  sign = jnp.ones(batch, get_aval(a).dtype)
  for k in range(n):
    col = jnp.abs(a[..., k:, k])
    p = jnp.argmax(col, axis=-1) + k
    pe = p[..., None]
    src = jnp.where(rows == k, pe, jnp.where(rows == pe, k, rows))  # (..., n)
    a = jnp.take_along_axis(a, jnp.broadcast_to(src[..., None], batch + (n, n)), axis=-2)
    perm = jnp.take_along_axis(perm, src, axis=-1)
    sign = jnp.where(p != k, -sign, sign)
    if k == n - 1:
      break
    pivot = a[..., k, k]
    safe = jnp.where(pivot == 0, jnp.ones_like(pivot), pivot)
    l = a[..., k + 1:, k] / safe[..., None]
    a = a.at[..., k + 1:, k].set(l)
    a = a.at[..., k + 1:, k + 1:].add(-l[..., :, None] * a[..., k, k + 1:][..., None, :])
  return a, perm, sign


def det(a):
  """Determinant of the (batched) square matrices ``a``."""
  a, = _inexact("det", a)
  n = _check_square("det", a)
  if n == 0:
    return jnp.ones(get_aval(a).shape[:-2], get_aval(a).dtype)
  lu, _, sign = _lu(a)
  return sign * jnp.prod(jnp.diagonal(lu, axis1=-2, axis2=-1), axis=-1)


class SlogdetResult(tuple):
  """``(sign, logabsdet)``, also as attributes."""

  def __new__(cls, sign, logabsdet):
    return super().__new__(cls, (sign, logabsdet))

  sign = property(lambda self: self[0])
  logabsdet = property(lambda self: self[1])


def slogdet(a, *, method=None):
  """Sign and natural log of the absolute value of the determinant."""
  a, = _inexact("slogdet", a)
  n = _check_square("slogdet", a)
  dtype = get_aval(a).dtype
  if n == 0:
    batch = get_aval(a).shape[:-2]
    return SlogdetResult(jnp.ones(batch, dtype), jnp.zeros(batch, jnp.real(a).dtype))
  lu, _, sign = _lu(a)
  diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
  absdiag = jnp.abs(diag)
  logdet = jnp.sum(jnp.log(absdiag), axis=-1)
  unit = diag / jnp.where(absdiag == 0, 1, absdiag).astype(dtype)
  s = sign * jnp.prod(unit, axis=-1)
  s = jnp.where(jnp.any(absdiag == 0, axis=-1), jnp.zeros_like(s), s)
  return SlogdetResult(s, logdet)


def _lu_solve(lu, perm, b):
  """Solve with the packed LU for ``b`` of shape (..., n, k)."""
  n = get_aval(lu).shape[-1]
  bshape = get_aval(b).shape
  b = jnp.take_along_axis(b, jnp.broadcast_to(perm[..., None], perm.shape + (bshape[-1],)),
                          axis=-2)
  rows = []
  for i in range(n):  # forward: unit lower triangle
    r = b[..., i, :]
    for j in range(i):
      r = r - lu[..., i, j][..., None] * rows[j]
    rows.append(r)
  xs = [None] * n
  for i in range(n - 1, -1, -1):  # backward: upper triangle
    r = rows[i]
    for j in range(i + 1, n):
      r = r - lu[..., i, j][..., None] * xs[j]
    xs[i] = r / lu[..., i, i][..., None]
  return jnp.stack(xs, axis=-2)


def solve(a, b):
  """Solve ``a @ x = b``: ``b`` is a vector (1-d) or a (batch of) matrix of right-hand sides
  of shape (..., n, k)."""
  a, b = _inexact("solve", a, b)
  n = _check_square("solve", a)
  a_batch = get_aval(a).shape[:-2]
  b_shape = get_aval(b).shape
  # As in JAX 0.10: a 1-d b is one vector; otherwise b holds matrices (..., n, k).
  if len(b_shape) == 1:
    if b_shape[0] != n:
      raise ValueError(f"solve: incompatible shapes {get_aval(a).shape} and {b_shape}")
    bm = b[:, None]
  else:
    if b_shape[-2] != n:
      raise ValueError(f"solve: incompatible shapes {get_aval(a).shape} and {b_shape}")
    bm = b
  batch = util.broadcast_shapes(a_batch, get_aval(bm).shape[:-2])
  a = jnp.broadcast_to(a, batch + (n, n))
  bm = jnp.broadcast_to(bm, batch + get_aval(bm).shape[-2:])
  if n == 0:
    x = bm
  else:
    lu, perm, _ = _lu(a)
    x = _lu_solve(lu, perm, bm)
  return x[..., 0] if len(b_shape) == 1 else x


def inv(a):
  """Inverse of the (batched) square matrices ``a``."""
  a, = _inexact("inv", a)
  n = _check_square("inv", a)
  eye = jnp.broadcast_to(jnp.eye(n, dtype=get_aval(a).dtype), get_aval(a).shape)
  return solve(a, eye)


def cholesky(a, *, upper=False, symmetrize_input=True):
  """Lower (or ``upper``) Cholesky factor of the Hermitian positive-definite ``a`` (NaN when
  ``a`` is not positive definite)."""
  a, = _inexact("cholesky", a)
  n = _check_square("cholesky", a)
  if symmetrize_input:
    a = (a + jnp.conj(jnp.swapaxes(a, -1, -2))) / 2
  cols = []  # column j of L, entries j.. n-1
  L = jnp.zeros_like(a)
  for j in range(n):
    s = a[..., j:, j]
    if j:
      s = s - jnp.einsum("...ik,...k->...i", L[..., j:, :j], jnp.conj(L[..., j, :j]))
    d = jnp.sqrt(jnp.real(s[..., 0]))
    col = jnp.concatenate([d[..., None].astype(get_aval(a).dtype),
                           s[..., 1:] / d[..., None]], axis=-1)
    L = L.at[..., j:, j].set(col)
  return jnp.conj(jnp.swapaxes(L, -1, -2)) if upper else L


def matrix_power(a, n):
  """``a`` multiplied by itself ``n`` times (``n < 0`` uses the inverse)."""
  util.check_arraylike("matrix_power", a)
  a = jnp.asarray(a)
  size = _check_square("matrix_power", a)
  n = operator.index(n)
  if n == 0:
    return jnp.broadcast_to(jnp.eye(size, dtype=get_aval(a).dtype), get_aval(a).shape)
  if n < 0:
    a, n = inv(a), -n
  result = None
  while n:
    if n & 1:
      result = a if result is None else jnp.matmul(result, a)
    n >>= 1
    if n:
      a = jnp.matmul(a, a)
  return result


def multi_dot(arrays, *, precision=None):
  """``arrays[0] @ arrays[1] @ ...`` (1-d first/last arrays act as row/column vectors)."""
  if len(arrays) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got {len(arrays)}")
  result = arrays[0]
  for x in arrays[1:]:
    result = jnp.matmul(result, x, precision=precision)
  return result


def outer(x1, x2, /):
  """Outer product of two 1-d arrays."""
  x1, x2 = jnp.asarray(x1), jnp.asarray(x2)
  if get_aval(x1).ndim != 1 or get_aval(x2).ndim != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim="
                     f"{get_aval(x1).ndim} and x2.ndim={get_aval(x2).ndim}")
  return jnp.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
  """Cross product of 3-vectors along ``axis``."""
  if get_aval(jnp.asarray(x1)).shape[axis] != 3 or get_aval(jnp.asarray(x2)).shape[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
  return jnp.cross(x1, x2, axis=axis)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  """``x1 @ x2``."""
  return jnp.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
  """``jnp.tensordot`` with the array-API signature."""
  return jnp.tensordot(x1, x2, axes=axes, precision=precision,
                       preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Conjugated dot product along ``axis``."""
  return jnp.vecdot(x1, x2, axis=axis, precision=precision,
                    preferred_element_type=preferred_element_type)


def trace(x, /, *, offset=0, dtype=None):
  """Trace of the matrices in the last two axes."""
  return jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
  """Diagonals of the matrices in the last two axes."""
  return jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  return jnp.matrix_transpose(x)


def cond(x, p=None):
  """Condition number of the matrices in the last two axes of ``x`` in the ``p``-norm
  (2 and -2 through the singular values, other norms as ``norm(x) * norm(inv(x))``); inf
  where that is NaN although ``x`` has no NaN, as JAX."""
  util.check_arraylike("cond", x)
  arr = jnp.asarray(x)
  shape = get_aval(arr).shape
  if len(shape) < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got arr.shape={shape}")
  if shape[-1] == 0 or shape[-2] == 0:
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got arr.shape={shape}")
  if p is None or p == 2:
    s = _svdvals(arr)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = _svdvals(arr)
    r = s[..., -1] / s[..., 0]
  else:
    if shape[-2] != shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                       f"arr.shape={shape}")
    r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
  return jnp.where(jnp.isnan(r) & ~jnp.isnan(arr).any(axis=(-2, -1)), np.inf, r)
