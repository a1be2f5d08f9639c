"""The spectral part of ``hlox.numpy.linalg``: eigendecompositions, the SVD and what is built
on it (``pinv``, ``lstsq``, ``matrix_rank``, ``svdvals``), on the ``hlox.lax.linalg``
primitives, with JAX's semantics (result tuples, dtypes, the custom JVP of ``pinv``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.custom_derivatives import custom_jvp
from hlox.lax import elementwise as lax_ew, shapes as lax_shapes, sorting as lax_sorting
from hlox.lax.dot import Precision
from hlox.lax.linalg import spectral as lax_linalg
from hlox.numpy import creation, products, reductions, shapes, ufuncs, util
from hlox.numpy.indexing import take_along_axis

__all__ = ["eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "pinv", "lstsq",
           "matrix_rank", "EighResult", "EigResult", "SVDResult"]


class EighResult(NamedTuple):
  """``(eigenvalues, eigenvectors)`` of a Hermitian eigendecomposition."""
  eigenvalues: object
  eigenvectors: object


class EigResult(NamedTuple):
  """``(eigenvalues, eigenvectors)`` of a general eigendecomposition."""
  eigenvalues: object
  eigenvectors: object


class SVDResult(NamedTuple):
  """``(U, S, Vh)`` of a singular value decomposition."""
  U: object
  S: object
  Vh: object


def _inexact(name, *args):
  util.check_arraylike(name, *args)
  return util.promote_dtypes_inexact(*[creation.asarray(a) for a in args])


def _check_matrix(name, a, square=False):
  shape = get_aval(a).shape
  if len(shape) < 2:
    raise TypeError(f"{name}: input must have rank at least 2 (a batch of matrices), got "
                    f"shape {shape}")
  if square and shape[-1] != shape[-2]:
    raise TypeError(f"{name}: input must be a (batch of) square matrices, got shape {shape}")


def _H(x):
  return ufuncs.conj(shapes.swapaxes(x, -1, -2))


def _matmul(a, b):
  return products.matmul(a, b, precision=Precision.HIGHEST)


# --- eigendecompositions -------------------------------------------------------------------

def eigh(a, UPLO=None, symmetrize_input=True):
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices ``a[..., n, n]``.

  ``UPLO`` ('L' or 'U') names the triangle read when ``symmetrize_input`` is false; by
  default ``a`` is replaced by ``(a + a^H) / 2``. Returns ``EighResult(eigenvalues,
  eigenvectors)``.
  """
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  a, = _inexact("jnp.linalg.eigh", a)
  _check_matrix("jnp.linalg.eigh", a, square=True)
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """Eigenvalues (ascending) of Hermitian matrices."""
  return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
  """Eigenvalues and right eigenvectors of general square matrices (complex results; CPU
  only). Returns ``EigResult(eigenvalues, eigenvectors)``."""
  a, = _inexact("jnp.linalg.eig", a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  """Eigenvalues of general square matrices (complex)."""
  a, = _inexact("jnp.linalg.eigvals", a)
  return lax_linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


# --- SVD -----------------------------------------------------------------------------------

def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """Singular value decomposition ``a = U @ diag(S) @ Vh`` (``S`` descending).

  Returns ``SVDResult(U, S, Vh)``, or ``S`` alone when ``compute_uv`` is false. With
  ``hermitian`` the decomposition comes from ``eigh`` (as JAX).
  """
  a, = _inexact("jnp.linalg.svd", a)
  if hermitian:
    _check_matrix("jnp.linalg.svd", a, square=True)
    v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    s = ufuncs.abs(w)
    if not compute_uv:
      return lax_shapes.rev(lax_sorting.sort(s, dimension=-1), (get_aval(s).ndim - 1,))
    nd = get_aval(s).ndim
    sign = lax_ew.sign(w)
    idxs = lax_shapes.broadcasted_iota(np.int32, get_aval(s).shape, nd - 1)
    s, idxs, sign = lax_sorting.sort((s, idxs, sign), dimension=-1, num_keys=1)
    s, idxs, sign = (lax_shapes.rev(x, (nd - 1,)) for x in (s, idxs, sign))
    u = take_along_axis(v, idxs[..., None, :], axis=-1)
    vh = _H(u * sign[..., None, :].astype(get_aval(u).dtype))
    return SVDResult(u, s, vh)
  if compute_uv:
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                              subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                        subset_by_index=subset_by_index)


def svdvals(x, /):
  """Singular values (descending) of the matrices in the last two axes of ``x``."""
  util.check_arraylike("jnp.linalg.svdvals", x)
  return svd(x, compute_uv=False, hermitian=False)


def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
  """Number of singular values above ``rtol`` (default ``max(m, n) * eps * largest``)."""
  util.check_arraylike("jnp.linalg.matrix_rank", M)
  if tol is not None:
    if rtol is not None:
      raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
    rtol = tol
  M, = util.promote_dtypes_inexact(creation.asarray(M))
  shape = get_aval(M).shape
  if len(shape) < 2:
    return reductions.any(M != 0).astype(np.int32)
  S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
  s_dtype = get_aval(S).dtype
  if rtol is None:
    rtol = reductions.max(S, axis=-1) * np.asarray(max(shape[-2:]), s_dtype) \
        * np.asarray(dtypes.finfo(s_dtype).eps, s_dtype)
  rtol = creation.asarray(rtol)
  rtol = shapes.expand_dims(rtol, get_aval(rtol).ndim)
  return reductions.sum(S > rtol, axis=-1)


# --- pinv ----------------------------------------------------------------------------------

def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """Moore-Penrose pseudo-inverse of matrices ``a[..., m, n]`` (through the SVD; singular
  values at or below ``rtol`` times the largest are dropped). Its derivative is the
  Golub-Pereyra formula, as in JAX."""
  if rcond is not None:
    if rtol is not None:
      raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  a, = _inexact("jnp.linalg.pinv", a)
  _check_matrix("jnp.linalg.pinv", a)
  dtype = get_aval(a).dtype
  if rtol is None:
    rtol = 10. * max(get_aval(a).shape[-2:]) * np.asarray(dtypes.finfo(dtype).eps)
  rtol = creation.asarray(rtol)
  return _pinv(a, rtol, bool(hermitian))


def _pinv_impl(a, rtol, hermitian):
  m, n = get_aval(a).shape[-2:]
  if m == 0 or n == 0:
    return creation.empty(get_aval(a).shape[:-2] + (n, m), get_aval(a).dtype)
  arr = ufuncs.conj(a)
  u, s, vh = svd(arr, full_matrices=False, hermitian=hermitian)
  s_nd = get_aval(s).ndim
  rtol = rtol[..., None]
  rtol = lax_shapes.expand_dims(rtol, tuple(range(s_nd - get_aval(rtol).ndim)))
  cutoff = rtol * s[..., 0:1]
  s = ufuncs.where(s > cutoff, s, np.inf).astype(get_aval(u).dtype)
  res = _matmul(shapes.swapaxes(vh, -1, -2), ufuncs.divide(shapes.swapaxes(u, -1, -2),
                                                          s[..., None]))
  return res.astype(get_aval(a).dtype)


def _pinv(a, rtol, hermitian):
  # ``hermitian`` is static; rtol's tangent is ignored (JAX makes it non-differentiable).
  return _pinv_by_flag[hermitian](a, rtol)


def _make_pinv(hermitian):
  @custom_jvp
  def f(a, rtol):
    return _pinv_impl(a, rtol, hermitian)

  @f.defjvp
  def f_jvp(primals, tangents):
    # Golub & Pereyra (1973): the derivative of the pseudo-inverse.
    a, rtol = primals
    a_dot = tangents[0]
    p = f(a, rtol)
    if hermitian:
      # svd(hermitian=True) symmetrizes its input, so the JVP must too.
      a = (a + _H(a)) / 2
      a_dot = (a_dot + _H(a_dot)) / 2
    m, n = get_aval(a).shape[-2:]
    if m >= n:
      s = _matmul(_matmul(p, _H(p)), _H(a_dot))
      t = _matmul(_matmul(_H(a_dot), _H(p)), p)
      p_dot = (-_matmul(_matmul(p, a_dot), p) + s - _matmul(_matmul(s, a), p) + t
               - _matmul(_matmul(p, a), t))
    else:
      s = _matmul(p, _matmul(_H(p), _H(a_dot)))
      t = _matmul(_H(a_dot), _matmul(_H(p), p))
      p_dot = (-_matmul(p, _matmul(a_dot, p)) + s - _matmul(s, _matmul(a, p)) + t
               - _matmul(p, _matmul(a, t)))
    return p, p_dot
  return f


_pinv_by_flag = {False: _make_pinv(False), True: _make_pinv(True)}


# --- lstsq ---------------------------------------------------------------------------------

def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """Least-squares solution of ``a @ x = b`` through the SVD of ``a[m, n]``.

  Returns ``(x, resid, rank, s)``: ``resid`` are the squared residual norms per column
  (always computed unless ``numpy_resid``, which returns an empty array where NumPy does),
  ``rank`` the effective rank and ``s`` the singular values of ``a``.
  """
  util.check_arraylike("jnp.linalg.lstsq", a, b)
  a, b = util.promote_dtypes_inexact(creation.asarray(a), creation.asarray(b))
  a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
  if a_shape[:1] != b_shape[:1]:
    raise ValueError("Leading dimensions of input arrays must match")
  b_orig_ndim = len(b_shape)
  if b_orig_ndim == 1:
    b = b[:, None]
  if len(a_shape) != 2:
    raise TypeError(f"{len(a_shape)}-dimensional array given. Array must be two-dimensional")
  if get_aval(b).ndim != 2:
    raise TypeError(f"{b_orig_ndim}-dimensional array given. Array must be one or "
                    "two-dimensional")
  m, n = a_shape
  dtype = get_aval(a).dtype
  if m * n == 0:
    s = creation.empty(0, dtype=dtype)
    rank = creation.asarray(0, dtype=dtypes.default_int_dtype())
    x = creation.zeros((n,) + get_aval(b).shape[1:], dtype=dtype)
  else:
    eps = np.asarray(dtypes.finfo(dtype).eps)
    if rcond is None:
      rcond = float(eps) * max(n, m)
    else:
      rcond = ufuncs.where(creation.asarray(rcond) < 0, eps, rcond)
    u, s, vt = svd(a, full_matrices=False)
    s_dtype = get_aval(s).dtype
    mask = (s > 0) & (s >= creation.asarray(rcond, dtype=s_dtype) * s[0])
    rank = reductions.sum(mask)
    safe_s = ufuncs.where(mask, s, 1).astype(dtype)
    s_inv = ufuncs.where(mask, 1 / safe_s, 0)[:, None]
    utb = _matmul(_H(u), b)
    x = _matmul(_H(vt), s_inv * utb)
  if numpy_resid and (int(rank) < n or m <= n):
    resid = creation.asarray([], dtype=dtypes.finfo(dtype).dtype)
  else:
    b_estimate = _matmul(a, x)
    diff = b - b_estimate
    # The squared 2-norm of each column, as JAX computes it (a norm, then squared).
    resid = ufuncs.sqrt(reductions.sum(ufuncs.real(diff * ufuncs.conj(diff)), axis=0)) ** 2
  if b_orig_ndim == 1:
    x = shapes.ravel(x)
  return x, resid, rank, s


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["matrix_rank", "eigvals", "eigh", "eigvalsh"], {},
    default_static=("hermitian", "UPLO", "symmetrize_input"),
    staged=("matrix_rank", "eigvals", "eigh", "eigvalsh"))
