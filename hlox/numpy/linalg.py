"""``hlox.numpy.linalg``: NumPy's linear-algebra API.

Norms compose from ``hlox.numpy``; factorization-based functions (``solve``, ``inv``, ``det``,
``slogdet``, ``cholesky``, ``qr``, ``tensorsolve``, ``tensorinv``) sit on the LAPACK-backed
primitives of ``hlox.lax.linalg`` with JAX's derivative rules (``det`` and ``slogdet`` have
custom JVPs; ``solve`` reuses one LU factorization for its derivative).
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from hlox.core import dtypes
from hlox.custom_derivatives import custom_jvp
from hlox.lax import linalg as lax_linalg
from hlox.core.tracer import get_aval
from hlox.numpy import conversion, creation, indexing, products, reductions, shapes, ufuncs, util
from hlox.numpy.linalg_spectral import *  # noqa: F401,F403
from hlox.numpy.linalg_spectral import __all__ as _spectral_all, svdvals as _svdvals

__all__ = ["norm", "vector_norm", "matrix_norm", "det", "slogdet", "solve", "inv",
           "cholesky", "qr", "tensorinv", "tensorsolve", "matrix_power", "multi_dot", "outer", "cross", "matmul", "tensordot",
           "vecdot", "trace", "diagonal", "matrix_transpose"]
__all__ += _spectral_all + ["cond"]  # eigh, svd, pinv, ... (linalg_spectral.py)


def _inexact(name, *args):
  util.check_arraylike(name, *args)
  return util.promote_dtypes_inexact(*[conversion.asarray(a) for a in args])


def _check_square(name, a):
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"{name}: argument must be a (batch of) square matrices, got shape "
                     f"{shape}")
  return shape[-1]


# --- norms ---------------------------------------------------------------------------------

def _abs_real(x):
  return ufuncs.abs(x)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """The ``ord``-norm of ``x`` along ``axis`` (all axes, flattened, by default)."""
  x, = _inexact("vector_norm", x)
  if axis is None:
    result = vector_norm(shapes.ravel(x), axis=0, ord=ord)
    return shapes.reshape(result, (1,) * get_aval(x).ndim) if keepdims else result
  a = _abs_real(x)
  if ord is None or ord == 2:
    return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=axis, keepdims=keepdims))
  if ord == np.inf:
    # initial=0: the norm of an empty vector is 0, not an error (as JAX).
    return reductions.max(a, axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return reductions.min(a, axis=axis, keepdims=keepdims)
  if ord == 0:
    return reductions.sum(a != 0, axis=axis, keepdims=keepdims).astype(get_aval(a).dtype)
  if ord == 1:
    return reductions.sum(a, axis=axis, keepdims=keepdims)
  if isinstance(ord, str):
    raise ValueError(f"Invalid order '{ord}' for vector norm.")
  p = float(ord)
  return ufuncs.power(reductions.sum(ufuncs.power(a, p), axis=axis, keepdims=keepdims), 1.0 / p)


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
      result = ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x))))
      return shapes.reshape(result, (1,) * nd) if keepdims else result
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
    return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=(row, col), keepdims=keepdims))
  if ord in (1, -1):
    sums = reductions.sum(a, axis=row, keepdims=True)
    result = (reductions.max(sums, axis=col, keepdims=True, initial=0) if ord == 1
              else reductions.min(sums, axis=col, keepdims=True))
  elif ord in (np.inf, -np.inf):
    sums = reductions.sum(a, axis=col, keepdims=True)
    # The max norms of an empty matrix are 0 (initial=0), as in JAX; the min ones raise.
    result = (reductions.max(sums, axis=row, keepdims=True, initial=0) if ord == np.inf
              else reductions.min(sums, axis=row, keepdims=True))
  elif ord in (2, -2, "nuc"):
    sv = _svdvals(shapes.moveaxis(x, (row, col), (-2, -1)))
    if ord == 2:
      y = reductions.max(sv, axis=-1, initial=0)
    elif ord == -2:
      y = reductions.min(sv, axis=-1)
    else:
      y = reductions.sum(sv, axis=-1)
    return shapes.expand_dims(y, (row, col)) if keepdims else y
  else:
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  return result if keepdims else shapes.squeeze(result, axis=(row, col))


# --- factorization-based functions (on hlox.lax.linalg's LAPACK primitives) ---------------

def _check_square_det(name, a):
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"{name}: argument must be a (batch of) square matrices of shape "
                     f"[..., n, n], got {shape}")
  return shape[-1]


def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] +
          a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0] +
          a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] -
          a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0] -
          a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] -
          a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def _pivot_parity(pivots):
  n = get_aval(pivots).shape[-1]
  return reductions.count_nonzero(pivots != creation.arange(n, dtype=pivots.dtype), axis=-1)


def _slogdet_from_lu(a):
  dtype = get_aval(a).dtype
  lu, pivots, _ = lax_linalg.lu(a)
  diag = creation.diagonal(lu, axis1=-2, axis2=-1)
  is_zero = reductions.any(diag == conversion.array(0, dtype=dtype), axis=-1)
  parity = _pivot_parity(pivots)
  if dtypes.is_complex(dtype):
    sign = reductions.prod(diag / ufuncs.abs(diag).astype(dtype), axis=-1)
  else:
    sign = conversion.array(1, dtype=dtype)
    parity = parity + reductions.count_nonzero(diag < 0, axis=-1)
  sign = ufuncs.where(is_zero, conversion.array(0, dtype=dtype),
                   sign * conversion.array(-2 * (parity % 2) + 1, dtype=dtype))
  logdet = ufuncs.where(is_zero, conversion.array(-np.inf, dtype=dtype),
                     reductions.sum(ufuncs.log(ufuncs.abs(diag)).astype(dtype), axis=-1))
  return sign, ufuncs.real(logdet)


def _slogdet_small_fn(a):
  n = get_aval(a).shape[-1]
  det = a[..., 0, 0] if n == 1 else _det_2x2(a)
  return ufuncs.sign(det), ufuncs.real(ufuncs.log(ufuncs.abs(det)))


def _slogdet_tangents(x, g, sign, ans_dot):
  if dtypes.is_complex(get_aval(x).dtype):
    sign_dot = (ans_dot - ufuncs.real(ans_dot).astype(get_aval(ans_dot).dtype)) * sign
    return sign_dot, ufuncs.real(ans_dot)
  return creation.zeros_like(sign), ans_dot


# sign(det) is discontinuous at det = 0 and log|det| is undefined there: as JAX does, the
# derivative is written out (d log|det A| = tr(A^-1 dA)) rather than found by autodiff.
_slogdet_lu = custom_jvp(_slogdet_from_lu)
_slogdet_small = custom_jvp(_slogdet_small_fn)


@_slogdet_lu.defjvp
def _slogdet_lu_jvp(primals, tangents):
  x, = primals
  g, = tangents
  sign, ans = _slogdet_lu(x)
  ans_dot = products.trace(_solve_fn(x, g), axis1=-1, axis2=-2)
  return (sign, ans), _slogdet_tangents(x, g, sign, ans_dot)


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
  x, = primals
  g, = tangents
  sign, ans = _slogdet_small(x)
  if get_aval(x).shape[-1] == 1:
    ans_dot = g[..., 0, 0] / x[..., 0, 0]
  else:
    ans_dot = (g[..., 0, 0] * x[..., 1, 1] - g[..., 0, 1] * x[..., 1, 0]
               - g[..., 1, 0] * x[..., 0, 1] + g[..., 1, 1] * x[..., 0, 0]) / _det_2x2(x)
  return (sign, ans), _slogdet_tangents(x, g, sign, ans_dot)


class SlogdetResult(NamedTuple):
  """``(sign, logabsdet)``."""
  sign: object
  logabsdet: object


def slogdet(a, *, method=None):
  """Sign and natural log of the absolute value of the determinant (LU, or ``method='qr'``)."""
  a, = _inexact("slogdet", a)
  n = _check_square_det("slogdet", a)
  if method is None or method == "lu":
    if n in (1, 2):
      return SlogdetResult(*_slogdet_small(a))
    if n == 0:
      batch = get_aval(a).shape[:-2]
      return SlogdetResult(creation.ones(batch, get_aval(a).dtype),
                           creation.zeros(batch, get_aval(ufuncs.real(a)).dtype))
    return SlogdetResult(*_slogdet_lu(a))
  if method == "qr":
    return SlogdetResult(*_slogdet_qr(a))
  raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), "
                   "and 'qr'.")


def _slogdet_qr_fn(a):
  if dtypes.is_complex(get_aval(a).dtype):
    raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
  n = get_aval(a).shape[-1]
  r, taus = lax_linalg.geqrf(a)
  diag = creation.diagonal(r, axis1=-2, axis2=-1)
  log_abs_det = reductions.sum(ufuncs.log(ufuncs.abs(diag)), axis=-1)
  sign_diag = reductions.prod(ufuncs.sign(diag), axis=-1)
  # Each reflector actually applied (tau != 0) has determinant -1.
  sign_taus = reductions.prod(ufuncs.where(taus[..., :n - 1] != 0, -1, 1), axis=-1).astype(
      get_aval(sign_diag).dtype)
  return sign_diag * sign_taus, log_abs_det


_slogdet_qr = custom_jvp(_slogdet_qr_fn)


@_slogdet_qr.defjvp
def _slogdet_qr_jvp(primals, tangents):
  x, = primals
  g, = tangents
  sign, ans = _slogdet_qr(x)
  ans_dot = products.trace(_solve_fn(x, g), axis1=-1, axis2=-2)
  return (sign, ans), _slogdet_tangents(x, g, sign, ans_dot)


def _cofactor_solve(a, b):
  """``(det(a), adj(a) @ b)``, well defined for singular ``a`` too (JAX's det gradient):
  the LU's last pivot is replaced so that the adjugate of a rank n-1 matrix survives, and
  matrices of rank < n - 1 (whose adjugate is 0) give zeros."""
  n = get_aval(a).shape[-1]
  if n == 1:
    return a[..., 0, 0], b
  dtype = get_aval(a).dtype
  lu, pivots, permutation = lax_linalg.lu(a)
  diag = creation.diagonal(lu, axis1=-2, axis2=-1)
  sign = conversion.asarray(-2 * (_pivot_parity(pivots) % 2) + 1, dtype=dtype)
  partial_det = reductions.cumprod(diag, axis=-1) * sign[..., None]
  lu = lu.at[..., -1, -1].set(1.0 / partial_det[..., -2])
  ones = creation.ones(get_aval(b).shape[:-1], get_aval(b).dtype)
  d = lax_linalg.triangular_solve(lu, ones, left_side=True, lower=False)
  not_full_rank = reductions.any(ufuncs.isnan(d) | ufuncs.isinf(d), axis=-1)[..., None, None]
  x = ufuncs.where(not_full_rank, creation.zeros_like(b), b)
  x = indexing.take_along_axis(x, shapes.broadcast_to(permutation[..., None], get_aval(x).shape),
                          axis=-2)
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
  x = shapes.concatenate((x[..., :-1, :] * partial_det[..., -1, None, None], x[..., -1:, :]),
                      axis=-2)
  x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
  x = ufuncs.where(not_full_rank, creation.zeros_like(x), x)
  return partial_det[..., -1], x


def _det_fn(a):
  sign, logdet = slogdet(a)
  return sign * ufuncs.exp(logdet).astype(get_aval(sign).dtype)


_det = custom_jvp(_det_fn)


@_det.defjvp
def _det_jvp(primals, tangents):
  x, = primals
  g, = tangents
  y, z = _cofactor_solve(x, g)
  return y, products.trace(z, axis1=-1, axis2=-2)


def det(a):
  """Determinant of the (batched) square matrices ``a`` (closed forms for 2x2 and 3x3, LU
  otherwise)."""
  a, = _inexact("det", a)
  n = _check_square_det("det", a)
  if n == 2:
    return _det_2x2(a)
  if n == 3:
    return _det_3x3(a)
  if n == 0:
    return creation.ones(get_aval(a).shape[:-2], get_aval(a).dtype)
  return _det(a)


def _solve_fn(a, b):
  lu, _, permutation = lax_linalg.lu(a)
  return lax_linalg.lu_solve(lu, permutation, b)


# One LU serves the solve and its derivative: dx = A^-1 (db - dA x).
_solve_matrix = custom_jvp(_solve_fn)


@_solve_matrix.defjvp
def _solve_matrix_jvp(primals, tangents):
  a, b = primals
  da, db = tangents
  lu, _, permutation = lax_linalg.lu(a)
  x = lax_linalg.lu_solve(lu, permutation, b)
  rhs = db - products.matmul(da, x)
  return x, lax_linalg.lu_solve(lu, permutation, rhs)


def solve(a, b):
  """Solve ``a @ x = b``: ``b`` is a vector (1-d) or a (batch of) matrix of right-hand sides
  of shape (..., n, k). Singular ``a`` gives inf/NaN, as in JAX."""
  a, b = _inexact("solve", a, b)
  a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
  if len(a_shape) < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape="
                     f"{a_shape}")
  if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and a_shape[-1] == b_shape[-1]
      and a_shape[-1] != b_shape[-2]):
    raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX v0.5.0, "
                     "this would have been treated as a batched 1-dimensional solve. To "
                     "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
  n = a_shape[-1]
  vector = len(b_shape) == 1
  if a_shape[-2] != n or (vector and b_shape[0] != n) or (not vector and b_shape[-2] != n):
    raise ValueError("The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] "
                     f"or b=[..., m]; got a={a_shape} and b={b_shape}")
  bm = b[:, None] if vector else b
  batch = util.broadcast_shapes(a_shape[:-2], get_aval(bm).shape[:-2])
  a = shapes.broadcast_to(a, batch + (n, n))
  bm = shapes.broadcast_to(bm, batch + get_aval(bm).shape[-2:])
  x = bm if n == 0 else _solve_matrix(a, bm)
  return x[..., 0] if vector else x


def inv(a):
  """Inverse of the (batched) square matrices ``a`` (inf/NaN where singular, as JAX)."""
  a, = _inexact("inv", a)
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
  eye = shapes.broadcast_to(creation.eye(shape[-1], dtype=get_aval(a).dtype), shape)
  return solve(a, eye)


def cholesky(a, *, upper=False, symmetrize_input=True):
  """Lower (or ``upper``) Cholesky factor of the Hermitian positive-definite ``a`` (NaN when
  ``a`` is not positive definite)."""
  a, = _inexact("cholesky", a)
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return ufuncs.conj(shapes.swapaxes(L, -1, -2)) if upper else L


class QRResult(NamedTuple):
  """``(Q, R)``."""
  Q: object
  R: object


def qr(a, mode="reduced"):
  """QR decomposition of the (batched) matrices ``a``: ``mode`` is ``'reduced'`` (Q is
  ``[..., m, k]``, R ``[..., k, n]``, ``k = min(m, n)``), ``'complete'`` (Q square),
  ``'r'`` (R only) or ``'raw'`` (LAPACK's Householder form, ``(h, tau)``)."""
  a, = _inexact("qr", a)
  if get_aval(a).ndim < 2:
    raise ValueError(f"qr: argument must have at least 2 dimensions, got shape "
                     f"{get_aval(a).shape}")
  if mode == "raw":
    h, taus = lax_linalg.geqrf(a)
    return QRResult(shapes.swapaxes(h, -1, -2), taus)
  if mode in ("reduced", "r", "full"):
    full_matrices = False
  elif mode == "complete":
    full_matrices = True
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
  if mode == "r":
    return r
  return QRResult(q, r)


def tensorinv(a, ind=2):
  """The inverse of ``a`` seen as a linear map from its first ``ind`` axes to the rest."""
  util.check_arraylike("tensorinv", a)
  a = conversion.asarray(a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer; got ind={ind}")
  shape = get_aval(a).shape
  contracting, batch = shape[:ind], shape[ind:]
  flat = (int(np.prod(contracting)), int(np.prod(batch)))
  if flat[0] != flat[1]:
    raise ValueError("tensorinv is only possible when the product of the first `ind` "
                     "dimensions equals that of the remaining dimensions. got "
                     f"arr.shape={shape} with ind={ind}.")
  return shapes.reshape(inv(shapes.reshape(a, flat)), batch + contracting)


def tensorsolve(a, b, axes=None):
  """Solve ``tensordot(a, x, axes=x.ndim) = b`` for ``x``."""
  util.check_arraylike("tensorsolve", a, b)
  a, b = conversion.asarray(a), conversion.asarray(b)
  if axes is not None:
    # NumPy's rule: each axis named in ``axes`` moves to the end, in the order given.
    nd = get_aval(a).ndim
    axes = [operator.index(ax) % nd for ax in axes]
    a = shapes.transpose(a, [ax for ax in range(nd) if ax not in axes] + axes)
  a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
  out_shape = a_shape[len(b_shape):]
  if a_shape[:len(b_shape)] != b_shape:
    raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                     f"got a.shape={a_shape}, b.shape={b_shape}")
  b_size, out_size = int(np.prod(b_shape)), int(np.prod(out_shape))
  if b_size != out_size:
    raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == prod(a.shape[b.ndim:]); "
                     f"got a.shape={a_shape}, b.ndim={len(b_shape)}.")
  return shapes.reshape(solve(shapes.reshape(a, (b_size, out_size)), shapes.ravel(b)), out_shape)


def matrix_power(a, n):
  """``a`` multiplied by itself ``n`` times (``n < 0`` uses the inverse)."""
  util.check_arraylike("matrix_power", a)
  a = conversion.asarray(a)
  size = _check_square("matrix_power", a)
  n = operator.index(n)
  if n == 0:
    return shapes.broadcast_to(creation.eye(size, dtype=get_aval(a).dtype), get_aval(a).shape)
  if n < 0:
    a, n = inv(a), -n
  result = None
  while n:
    if n & 1:
      result = a if result is None else products.matmul(result, a)
    n >>= 1
    if n:
      a = products.matmul(a, a)
  return result


def multi_dot(arrays, *, precision=None):
  """``arrays[0] @ arrays[1] @ ...`` (1-d first/last arrays act as row/column vectors)."""
  if len(arrays) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got {len(arrays)}")
  result = arrays[0]
  for x in arrays[1:]:
    result = products.matmul(result, x, precision=precision)
  return result


def outer(x1, x2, /):
  """Outer product of two 1-d arrays."""
  x1, x2 = conversion.asarray(x1), conversion.asarray(x2)
  if get_aval(x1).ndim != 1 or get_aval(x2).ndim != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim="
                     f"{get_aval(x1).ndim} and x2.ndim={get_aval(x2).ndim}")
  return products.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
  """Cross product of 3-vectors along ``axis``."""
  if get_aval(conversion.asarray(x1)).shape[axis] != 3 or get_aval(conversion.asarray(x2)).shape[axis] != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors")
  return products.cross(x1, x2, axis=axis)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  """``x1 @ x2``."""
  return products.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
  """``jnp.tensordot`` with the array-API signature."""
  return products.tensordot(x1, x2, axes=axes, precision=precision,
                       preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """Conjugated dot product along ``axis``."""
  return products.vecdot(x1, x2, axis=axis, precision=precision,
                    preferred_element_type=preferred_element_type)


def trace(x, /, *, offset=0, dtype=None):
  """Trace of the matrices in the last two axes."""
  return products.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
  """Diagonals of the matrices in the last two axes."""
  return creation.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  return shapes.matrix_transpose(x)


def cond(x, p=None):
  """Condition number of the matrices in the last two axes of ``x`` in the ``p``-norm
  (2 and -2 through the singular values, other norms as ``norm(x) * norm(inv(x))``); inf
  where that is NaN although ``x`` has no NaN, as JAX."""
  util.check_arraylike("cond", x)
  arr = conversion.asarray(x)
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
  return ufuncs.where(ufuncs.isnan(r) & ~ufuncs.isnan(arr).any(axis=(-2, -1)), np.inf, r)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["cholesky", "matrix_power", "slogdet", "det", "inv", "norm", "qr", "solve",
                "cond"], {"matrix_power": ("n",)},
    default_static=("upper", "symmetrize_input", "method", "ord", "axis", "keepdims", "mode",
                    "p"),
    staged=("cholesky", "matrix_power", "slogdet", "det", "inv", "norm", "qr", "solve",
            "cond"))
