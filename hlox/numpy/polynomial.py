"""Polynomials as coefficient arrays (highest degree first): ``polyval``, ``polyadd``,
``polysub``, ``polymul``, ``polyder``, ``polyint``, ``vander``; and the 1-d ``convolve`` and
``correlate`` that multiply them.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, shapes, ufuncs, util

__all__ = ["polyval", "polyadd", "polysub", "polymul", "polyder", "polyint", "vander",
           "convolve", "correlate"]


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
  a1, a2 = util.promote_dtypes(shapes.atleast_1d(a1), shapes.atleast_1d(a2))
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


def _conv1d(name, a, v, mode, flip):
  util.check_arraylike(name, a, v)
  a, v = util.promote_dtypes_inexact(creation.asarray(a), creation.asarray(v))
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
  a_pad = shapes.pad(a, (nv - 1, nv - 1))
  rows = creation.arange(n_full)[:, None] + creation.arange(nv)[None, :]
  if get_aval(a).dtype != np.bool_:
    full = reductions.sum(a_pad[rows] * v[None, :], axis=1)
  else:
    full = reductions.any(a_pad[rows] & v[None, :], axis=1)
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
  """Discrete 1-d convolution of ``a`` and ``v``."""
  if get_aval(creation.asarray(v)).shape and get_aval(creation.asarray(a)).shape and \
      get_aval(creation.asarray(v)).shape[0] > get_aval(creation.asarray(a)).shape[0]:
    a, v = v, a
  return _conv1d("convolve", a, v, mode, flip=True)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Discrete 1-d cross-correlation of ``a`` and ``v``."""
  na, nv = get_aval(creation.asarray(a)).shape, get_aval(creation.asarray(v)).shape
  if na and nv and nv[0] > na[0]:
    if not dtypes.is_complex(dtypes.result_type(a, v)):
      return _conv1d("correlate", v, a, mode, flip=False)[::-1]
    return ufuncs.conj(_conv1d("correlate", v, a, mode, flip=False)[::-1])
  return _conv1d("correlate", a, v, mode, flip=False)
