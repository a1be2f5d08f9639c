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
  """Evaluate the polynomial with coefficients ``p`` (highest degree first) at ``x``."""
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
  """Sum of two polynomials (coefficients highest degree first)."""
  util.check_arraylike("polyadd", a1, a2)
  a1, a2 = util.promote_dtypes(shapes.atleast_1d(a1), shapes.atleast_1d(a2))
  n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
  if n1 < n2:
    a1 = shapes.pad(a1, (n2 - n1, 0))
  elif n2 < n1:
    a2 = shapes.pad(a2, (n1 - n2, 0))
  return a1 + a2


def polysub(a1, a2):
  """Difference of two polynomials."""
  util.check_arraylike("polysub", a1, a2)
  return polyadd(a1, -creation.asarray(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
  """Product of two polynomials."""
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
  """The ``m``-th derivative of the polynomial ``p``."""
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
  """The ``m``-th antiderivative of ``p`` (integration constants ``k``, default 0)."""
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
  """The Vandermonde matrix of the 1-d ``x``: columns are powers of ``x``."""
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
  """Discrete 1-d convolution of ``a`` and ``v`` (computed in ``preferred_element_type``,
  with the inputs' common type kept, if given; else in their inexact type)."""
  if get_aval(creation.asarray(v)).shape and get_aval(creation.asarray(a)).shape and \
      get_aval(creation.asarray(v)).shape[0] > get_aval(creation.asarray(a)).shape[0]:
    a, v = v, a
  return _conv1d("convolve", a, v, mode, True, preferred_element_type, precision)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Discrete 1-d cross-correlation of ``a`` and ``v`` (``preferred_element_type`` as for
  ``convolve``)."""
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
  """The coefficients of the monic polynomial with the given roots (or with the
  eigenvalues of a square matrix as roots)."""
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
  """Quotient and remainder of dividing polynomial ``u`` by ``v``. The remainder keeps
  ``u``'s length unless ``trim_leading_zeros`` (which needs concrete values) drops its
  leading near-zeros, as NumPy's result does."""
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
  """The (complex) roots of the polynomial ``p``.

  Leading zeros of ``p`` are stripped, which needs concrete values; under jit pass
  ``strip_zeros=False``: then ``len(p) - 1`` values come back, the roots that leading
  zeros lose being NaN (placed last, after the zero roots).
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
  """Least-squares fit of a degree-``deg`` polynomial to the points ``(x, y)`` (``y`` may
  be 2-d: one fit per column), with optional weights ``w``.

  Returns the coefficients (highest degree first); with ``full`` also the residuals,
  rank, singular values and ``rcond``; with ``cov`` the coefficients' covariance (scaled
  by the residual variance unless ``cov='unscaled'``).
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
