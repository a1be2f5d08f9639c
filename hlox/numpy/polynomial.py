"""Polynomials as coefficient arrays (highest degree first): ``polyval``, ``polyadd``,
``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``, ``vander``, ``poly`` (from
roots), ``roots``, ``polyfit``; and the 1-d ``convolve`` and ``correlate`` that multiply them.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox import lax
from hlox.core.tracer import get_aval
from hlox.numpy import creation, linalg, products, reductions, shapes, ufuncs, util

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "vander",
           "convolve", "correlate", "poly", "polydiv", "polyfit", "roots"]


def polyval(p, x, *, unroll=16):
  """Evaluate a polynomial at ``x``.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).
  Evaluation uses Horner's scheme in a loop.

  Args:
    p: 1-d array-like of coefficients.
    x: array-like of points.
    unroll: keyword-only; how many loop steps to unroll (affects speed only).

  Returns:
    An array of ``x``'s shape, of the promoted dtype of ``p`` and ``x``.

  Examples:
    >>> jnp.polyval(jnp.array([1, 0, -2]), jnp.array([0, 1, 2]))
    Array([-2, -1,  2], dtype=int32)
    >>> jnp.polyval(jnp.array([2., 1.]), 0.5)
    Array(2., dtype=float32)
  """
  util.check_arraylike("polyval", p, x)
  p, x = util.promote_dtypes(creation.asarray(p), creation.asarray(x) if not isinstance(
      x, (int, float, complex)) else x)
  shape = get_aval(p).shape[1:] if get_aval(p).ndim else ()
  y = creation.zeros(util.broadcast_shapes(shape, get_aval(x).shape), dtype=get_aval(x).dtype)
  if get_aval(p).ndim == 0:
    raise ValueError("polyval: p must be at least 1-dimensional")
  for k in builtins.range(get_aval(p).shape[0]):
    y = y * x + p[k]
  return y


def polyadd(a1, a2):
  """Sum of two polynomials.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    a1: 1-d array-like of coefficients.
    a2: 1-d array-like of coefficients (the shorter one is aligned at the constant term).

  Returns:
    A 1-d array of length ``max(len(a1), len(a2))``, of the promoted dtype.

  Examples:
    >>> jnp.polyadd(jnp.array([1, 2, 3]), jnp.array([10, 20]))
    Array([ 1, 12, 23], dtype=int32)
  """
  util.check_arraylike("polyadd", a1, a2)
  a1, a2 = util.promote_dtypes(shapes.atleast_1d(a1), shapes.atleast_1d(a2))
  n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
  if n1 < n2:
    a1 = shapes.pad(a1, (n2 - n1, 0))
  elif n2 < n1:
    a2 = shapes.pad(a2, (n1 - n2, 0))
  return a1 + a2


def polysub(a1, a2):
  """Difference of two polynomials, ``a1 - a2``.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    a1: 1-d array-like of coefficients.
    a2: 1-d array-like of coefficients to subtract.

  Returns:
    A 1-d array of length ``max(len(a1), len(a2))``, of the promoted dtype.

  Examples:
    >>> jnp.polysub(jnp.array([1, 2, 3]), jnp.array([1, 1]))
    Array([1, 1, 2], dtype=int32)
  """
  util.check_arraylike("polysub", a1, a2)
  return polyadd(a1, -creation.asarray(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
  """Product of two polynomials.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    a1: 1-d array-like of coefficients.
    a2: 1-d array-like of coefficients.
    trim_leading_zeros: keyword-only; drop the inputs' leading zeros first (needs concrete
      values).

  Returns:
    A 1-d array of length ``len(a1) + len(a2) - 1``, of the promoted inexact dtype.

  Examples:
    >>> jnp.polymul(jnp.array([1, 1]), jnp.array([1, -1]))
    Array([ 1.,  0., -1.], dtype=float32)
  """
  util.check_arraylike("polymul", a1, a2)
  # The product is always inexact, as in JAX (integer inputs give floats).
  a1, a2 = util.promote_dtypes_inexact(shapes.atleast_1d(a1), shapes.atleast_1d(a2))
  if trim_leading_zeros and (get_aval(a1).shape[0] > 1 or get_aval(a2).shape[0] > 1):
    # Needs concrete values: the trimmed length depends on the data, as in NumPy.
    a1, a2 = shapes.trim_zeros(a1, trim="f"), shapes.trim_zeros(a2, trim="f")
  if get_aval(a1).shape[0] == 0:
    a1 = creation.zeros(1, a1.dtype)
  if get_aval(a2).shape[0] == 0:
    a2 = creation.zeros(1, a2.dtype)
  return convolve(a1, a2, mode="full")


def polyder(p, m=1):
  """The ``m``-th derivative of a polynomial.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    p: 1-d array-like of coefficients.
    m: the order of the derivative (a non-negative int).

  Returns:
    A 1-d array of ``len(p) - m`` coefficients, of an inexact dtype.

  Examples:
    >>> jnp.polyder(jnp.array([1, 1, 1, 1]))
    Array([3., 2., 1.], dtype=float32)
    >>> jnp.polyder(jnp.array([1, 1, 1, 1]), m=2)
    Array([6., 2.], dtype=float32)
  """
  util.check_arraylike("polyder", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  p, = util.promote_dtypes_inexact(creation.asarray(p))
  if m == 0:
    return p
  n = get_aval(p).shape[0]
  # Coefficient of x^j after m derivatives is j!/(j-m)! for the original power j.
  powers = np.arange(n - 1, m - 1, -1)
  fact = np.array([math.prod(builtins.range(j - m + 1, j + 1)) for j in powers])
  dtype = dtypes.result_type(p, 1)
  return p[:builtins.max(n - m, 0)] * creation.asarray(fact).astype(dtype)


def polyint(p, m=1, k=None):
  """The ``m``-th antiderivative of a polynomial.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    p: 1-d array-like of coefficients.
    m: the number of integrations (a non-negative int).
    k: the integration constants: a scalar, or ``m`` values (the first for the first
      integration); default 0.

  Returns:
    A 1-d array of ``len(p) + m`` coefficients, of an inexact dtype.

  Examples:
    >>> jnp.polyint(jnp.array([3., 2., 1.]))
    Array([1., 1., 1., 0.], dtype=float32)
    >>> jnp.polyint(jnp.array([2.]), k=5.)
    Array([2., 5.], dtype=float32)
  """
  util.check_arraylike("polyint", p)
  m = operator.index(m)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  p = creation.asarray(p)
  k = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k))
  if len(k) == 1:
    k = np.repeat(k, m)
  if len(k) != m:
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  dtype = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(get_aval(p).dtype))
  p = p.astype(dtype)
  for i in builtins.range(m):
    n = get_aval(p).shape[0]
    p = shapes.concatenate([p / creation.arange(n, 0, -1, dtype=dtype),
                            creation.asarray([k[i]], dtype)])
  return p


def vander(x, N=None, increasing=False):
  """The Vandermonde matrix of ``x``: its columns are powers of ``x``.

  Args:
    x: 1-d array-like.
    N: the number of columns (default ``len(x)``).
    increasing: if True the powers increase from left to right (``x**0`` first); otherwise
      they decrease.

  Returns:
    An array of shape ``(len(x), N)`` and ``x``'s (promoted) dtype.

  Examples:
    >>> jnp.vander(jnp.array([1, 2, 3]))
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int32)
    >>> jnp.vander(jnp.array([1, 2, 3]), N=2, increasing=True)
    Array([[1, 1],
           [1, 2],
           [1, 3]], dtype=int32)
  """
  util.check_arraylike("vander", x)
  x = creation.asarray(x)
  if get_aval(x).ndim != 1:
    raise ValueError("x must be a one-dimensional array")
  n = get_aval(x).shape[0] if N is None else operator.index(N)
  if n < 0:
    raise ValueError("N must be nonnegative")
  powers = creation.arange(n, dtype=util.index_dtype())
  if not increasing:
    powers = powers[::-1]
  return ufuncs.power(x[:, None], powers.astype(get_aval(x).dtype) if dtypes.is_inexact(
      get_aval(x).dtype) else powers)


def _conv1d(name, a, v, mode, flip, preferred_element_type=None, precision=None):
  util.check_arraylike(name, a, v)
  if preferred_element_type is None:  # NumPy's rule: convolutions are inexact
    a, v = util.promote_dtypes_inexact(creation.asarray(a), creation.asarray(v))
  else:
    # The inputs keep their (common) type; products and sums are computed in the given one.
    dtype = dtypes.canonicalize_dtype(np.dtype(preferred_element_type))
    a, v = (creation.asarray(x).astype(dtype) for x in
            util.promote_dtypes(creation.asarray(a), creation.asarray(v)))
  if get_aval(a).ndim != 1 or get_aval(v).ndim != 1:
    raise ValueError(f"{name}() only support 1-dimensional inputs.")
  na, nv = get_aval(a).shape[0], get_aval(v).shape[0]
  if na == 0 or nv == 0:
    raise ValueError(f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}.")
  if dtypes.is_complex(get_aval(v).dtype) and not flip:
    v = ufuncs.conj(v)
  if flip:
    v = v[::-1]
  # full[k] = sum_j a[j] * v'[j - k + nv - 1], with v' (flipped for convolve) sliding over a.
  n_full = na + nv - 1
  dtype = get_aval(a).dtype
  if dtypes.is_inexact(dtype) and dtype not in (dtypes.bfloat16, np.float16):
    # One convolution (a cross-correlation of a padded by nv-1 on each side with v'), as
    # JAX computes it: transformations with rules for convolutions (sparsify) see one.
    full = lax.conv_general_dilated(a[None, None, :], v[None, None, :], (1,),
                                    [(nv - 1, nv - 1)], precision=precision)[0, 0]
    return _mode_slice(full, mode, na, nv)
  a_pad = shapes.pad(a, (nv - 1, nv - 1))
  rows = creation.arange(n_full)[:, None] + creation.arange(nv)[None, :]
  if dtype in (dtypes.bfloat16, np.float16):
    # Half-precision products and sums are formed in float32 and rounded once at the end,
    # as a convolution's accumulator does (rounding each step loses several digits).
    full = reductions.sum(a_pad[rows].astype(np.float32) * v[None, :].astype(np.float32),
                          axis=1).astype(dtype)
  elif dtype != np.bool_:
    full = reductions.sum(a_pad[rows] * v[None, :], axis=1, dtype=dtype)
  else:
    full = reductions.any(a_pad[rows] & v[None, :], axis=1)
  return _mode_slice(full, mode, na, nv)


def _mode_slice(full, mode, na, nv):
  """The part of the full 1-d convolution ``full`` that ``mode`` keeps."""
  n_full = na + nv - 1
  if mode == "full":
    return full
  if mode == "same":
    n = builtins.max(na, nv)
    start = (n_full - n) // 2
    return full[start:start + n]
  if mode == "valid":
    n = builtins.max(na, nv) - builtins.min(na, nv) + 1
    start = builtins.min(na, nv) - 1
    return full[start:start + n]
  raise ValueError(f"mode must be one of ['full', 'same', 'valid'], got {mode!r}")


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """Discrete linear convolution of two 1-d arrays.

  Without ``preferred_element_type`` the computation is in the inputs' promoted inexact type
  (integer inputs give a floating result); with it, in that type.

  Args:
    a: 1-d array-like.
    v: 1-d array-like.
    mode: 'full' (every overlap, length ``len(a) + len(v) - 1``), 'same' (length
      ``max(len(a), len(v))``, centred) or 'valid' (full overlaps only).
    precision: keyword-only; None or a ``lax.Precision`` for the accelerator's matrix unit.
    preferred_element_type: keyword-only optional dtype to compute and return in.

  Returns:
    A 1-d array of the length ``mode`` gives.

  Examples:
    >>> jnp.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    >>> jnp.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]), mode='same')
    Array([1. , 2.5, 4. ], dtype=float32)
  """
  if get_aval(creation.asarray(v)).shape and get_aval(creation.asarray(a)).shape and \
      get_aval(creation.asarray(v)).shape[0] > get_aval(creation.asarray(a)).shape[0]:
    a, v = v, a
  return _conv1d("convolve", a, v, mode, True, preferred_element_type, precision)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Discrete cross-correlation of two 1-d arrays.

  ``result[k] = sum_n a[n + k] * conj(v[n])``; dtypes as for ``convolve``.

  Args:
    a: 1-d array-like.
    v: 1-d array-like.
    mode: 'valid' (the default: full overlaps only), 'same' or 'full'.
    precision: keyword-only; None or a ``lax.Precision`` for the accelerator's matrix unit.
    preferred_element_type: keyword-only optional dtype to compute and return in.

  Returns:
    A 1-d array of the length ``mode`` gives.

  Examples:
    >>> jnp.correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1.]))
    Array([2., 3.], dtype=float32)
    >>> jnp.correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1.]), mode='full')
    Array([1., 2., 3., 0.], dtype=float32)
  """
  na, nv = get_aval(creation.asarray(a)).shape, get_aval(creation.asarray(v)).shape
  pet = preferred_element_type
  if na and nv and nv[0] > na[0]:
    if not dtypes.is_complex(dtypes.result_type(a, v)):
      return _conv1d("correlate", v, a, mode, False, pet, precision)[::-1]
    return ufuncs.conj(_conv1d("correlate", v, a, mode, False, pet, precision)[::-1])
  return _conv1d("correlate", a, v, mode, False, pet, precision)


def _inexact_1d(name, *args):
  util.check_arraylike(name, *args)
  return util.promote_dtypes_inexact(*(creation.asarray(a) for a in args))


def poly(seq_of_zeros):
  """The coefficients of the monic polynomial with the given roots.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    seq_of_zeros: a 1-d array-like of roots, or a square 2-d array whose eigenvalues are
      taken as the roots.

  Returns:
    A 1-d array of ``len(roots) + 1`` coefficients (real when the complex roots come in
    conjugate pairs).

  Examples:
    >>> jnp.poly(jnp.array([1., 2.]))
    Array([ 1., -3.,  2.], dtype=float32)
  """
  zeros, = _inexact_1d("poly", seq_of_zeros)
  zeros = shapes.atleast_1d(zeros)
  shape = get_aval(zeros).shape
  if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
    zeros = linalg.eigvals(zeros)
  if get_aval(zeros).ndim != 1:
    raise ValueError(f"poly: input must be 1d or non-empty square 2d array, got shape "
                     f"{shape}")
  dtype = get_aval(zeros).dtype
  if get_aval(zeros).shape[0] == 0:
    return creation.ones((), dtype=dtype)
  a = creation.ones((1,), dtype=dtype)
  for k in builtins.range(get_aval(zeros).shape[0]):
    a = convolve(a, shapes.stack([creation.ones((), dtype), -zeros[k]]), mode="full")
  return a


def polydiv(u, v, *, trim_leading_zeros=False):
  """Quotient and remainder of dividing polynomial ``u`` by ``v``.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).

  Args:
    u: 1-d array-like, the dividend's coefficients.
    v: 1-d array-like, the divisor's coefficients (leading one non-zero).
    trim_leading_zeros: keyword-only; drop the remainder's leading near-zero coefficients as
      NumPy does (needs concrete values). Otherwise the remainder keeps ``u``'s length.

  Returns:
    A tuple ``(quotient, remainder)`` of 1-d arrays of an inexact dtype.

  Examples:
    >>> q, r = jnp.polydiv(jnp.array([1., 0., -1.]), jnp.array([1., 1.]))
    >>> q
    Array([ 1., -1.], dtype=float32)
    >>> r
    Array([0., 0., 0.], dtype=float32)
  """
  u, v = _inexact_1d("polydiv", u, v)
  if get_aval(u).ndim != 1 or get_aval(v).ndim != 1:
    raise ValueError(f"polydiv: u and v must be 1-d, got shapes {get_aval(u).shape} and "
                     f"{get_aval(v).shape}")
  m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
  scale = 1. / v[0]
  q = creation.zeros(builtins.max(m - n + 1, 1), dtype=get_aval(u).dtype)
  for k in builtins.range(0, m - n + 1):
    d = scale * u[k]
    q = q.at[k].set(d)
    u = u.at[k:k + n + 1].add(-d * v)
  if trim_leading_zeros:
    value = util.concrete_value("polydiv (with trim_leading_zeros=True)", u)
    tol = np.sqrt(dtypes.finfo(value.dtype).eps)
    nonzero = np.flatnonzero(np.abs(value) >= tol)
    u = u[int(nonzero[0]):] if nonzero.size else u[:0]
  return q, u


def _complex_dtype(dtype):
  return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def _companion_roots(p):
  """Roots of ``p`` (leading coefficient nonzero) as the companion matrix's eigenvalues."""
  n = get_aval(p).shape[0]
  if n < 2:
    return creation.zeros((0,), dtype=_complex_dtype(get_aval(p).dtype))
  a = creation.diag(creation.ones((n - 2,), get_aval(p).dtype), -1)
  a = a.at[0, :].set(-p[1:] / p[0])
  return linalg.eigvals(a)


def roots(p, *, strip_zeros=True):
  """The roots of a polynomial, found as the eigenvalues of its companion matrix.

  Polynomials are 1-d coefficient arrays, highest degree first (NumPy's ``poly1d`` order).
  Leading zeros of ``p`` are stripped, which needs concrete values; under ``jit`` pass
  ``strip_zeros=False``: then ``len(p) - 1`` values come back, the roots lost to leading zeros
  being NaN (placed last).

  Args:
    p: 1-d array-like of coefficients.
    strip_zeros: keyword-only; whether to strip leading zeros (see above).

  Returns:
    A 1-d complex array of the roots.

  Examples:
    >>> jnp.sort_complex(jnp.roots(jnp.array([1., -3., 2.])))
    Array([1.+0.j, 2.+0.j], dtype=complex64)
  """
  p, = _inexact_1d("roots", p)
  p = shapes.atleast_1d(p)
  if get_aval(p).ndim != 1:
    raise ValueError(f"roots: input must be a rank-1 array, got shape {get_aval(p).shape}")
  n = get_aval(p).shape[0]
  if n < 2:
    return creation.zeros((0,), dtype=_complex_dtype(get_aval(p).dtype))
  is_zero = p == 0
  leading = ufuncs.where(reductions.all(is_zero), n, reductions.argmin(is_zero))
  if strip_zeros:
    k = int(util.concrete_value("roots (pass strip_zeros=False under jit)", leading))
    return _companion_roots(p[k:])
  # All-zero p would make the companion matrix NaN: use 1s (the roots become NaN anyway).
  p = ufuncs.where(leading == n, creation.ones_like(p), p)
  r = _companion_roots(shapes.roll(p, -leading))
  # Zero roots (from the rolled-in zeros) go last, then become the NaNs.
  r = lax.sort_key_val(r == 0, r)[1]
  keep = creation.arange(n - 1) < (n - 1) - leading
  return ufuncs.where(keep, r, complex(np.nan, np.nan))


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares fit of a polynomial of degree ``deg`` to the points ``(x, y)``.

  Args:
    x: 1-d array-like of sample points.
    y: array-like of values at ``x``: 1-d, or 2-d for one fit per column.
    deg: the degree of the polynomial (a non-negative int).
    rcond: the relative cutoff for small singular values (default: ``len(x)`` times the
      dtype's epsilon).
    full: if True, also return the residuals, rank, singular values and ``rcond``.
    w: optional 1-d weights, one per sample point (applied to the unsquared residuals).
    cov: if True, also return the coefficients' covariance (scaled by the residual
      variance unless ``cov='unscaled'``).

  Returns:
    The coefficients (highest degree first): ``(deg + 1,)`` or ``(deg + 1, K)`` for ``K``
    columns of ``y``. With ``full``, a tuple ``(coefficients, residuals, rank,
    singular_values, rcond)``; with ``cov``, a tuple ``(coefficients, covariance)``.

  Examples:
    >>> x = jnp.array([0., 1., 2., 3.])
    >>> jnp.polyfit(x, 2 * x + 1, 1).round(4)
    Array([2., 1.], dtype=float32)
  """
  util.check_arraylike("polyfit", x, y, *(() if w is None else (w,)))
  x, y = creation.asarray(x), creation.asarray(y)
  try:
    deg = operator.index(deg)
  except TypeError:
    raise TypeError(f"polyfit: deg must be an int, got {deg!r}") from None
  if deg < 0:
    raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
  order = deg + 1
  x_shape, y_shape = get_aval(x).shape, get_aval(y).shape
  if len(x_shape) != 1:
    raise TypeError(f"polyfit: expected 1D vector for x, got shape {x_shape}")
  if x_shape[0] == 0:
    raise TypeError("polyfit: expected non-empty vector for x")
  if len(y_shape) not in (1, 2):
    raise TypeError(f"polyfit: expected 1D or 2D array for y, got shape {y_shape}")
  if x_shape[0] != y_shape[0]:
    raise TypeError(f"polyfit: expected x and y to have same length, got shapes "
                    f"{x_shape} and {y_shape}")
  x, = util.promote_dtypes_inexact(x)
  if rcond is None:
    rcond = x_shape[0] * float(dtypes.finfo(get_aval(x).dtype).eps)
  rcond = float(rcond)
  lhs = vander(x, order)
  rhs = y
  if w is not None:
    w, = util.promote_dtypes_inexact(creation.asarray(w))
    if get_aval(w).ndim != 1:
      raise TypeError(f"polyfit: expected a 1-d array for weights, got shape "
                      f"{get_aval(w).shape}")
    if get_aval(w).shape[0] != y_shape[0]:
      raise TypeError("polyfit: expected w and y to have the same length")
    lhs = lhs * w[:, None]
    rhs = rhs * (w[:, None] if len(y_shape) == 2 else w)
  # Scaling the columns to unit norm improves the conditioning.
  scale = ufuncs.sqrt(reductions.sum(lhs * lhs, axis=0))
  lhs = lhs / scale[None, :]
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  c = (c.T / scale[None, :]).T if get_aval(c).ndim > 1 else c / scale
  if full:
    return c, resids, rank, s, creation.asarray(rcond)
  if cov:
    vbase = linalg.inv(products.dot(lhs.T, lhs)) / products.outer(scale, scale)
    if cov == "unscaled":
      fac = creation.asarray(1.0)
    else:
      if x_shape[0] <= order:
        raise ValueError("polyfit: the number of data points must exceed order to scale "
                         "the covariance matrix")
      fac = resids / (x_shape[0] - order)
    if len(y_shape) == 1:
      return c, vbase * shapes.atleast_1d(fac)[None]
    return c, vbase[:, :, None] * shapes.atleast_1d(fac)[None, None, :]
  return c


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["polyfit", "poly", "polyval", "polyadd", "polyint", "polyder", "polysub",
                "vander", "convolve", "correlate"], {},
    default_static=("deg", "rcond", "full", "cov", "unroll", "m", "N", "increasing", "mode",
                    "precision", "preferred_element_type"),
    staged=("polyfit", "poly", "polyval", "polyadd", "polyint", "polyder", "polysub",
            "vander", "convolve", "correlate"))
