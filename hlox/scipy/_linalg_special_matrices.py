"""SciPy's special matrices for ``hlox.scipy.linalg``: ``circulant``, ``companion``,
``convolution_matrix``, ``dft``, ``fiedler``, ``fiedler_companion``, ``hadamard``, ``hankel``,
``helmert``, ``hilbert``, ``invhilbert``, ``pascal``, ``invpascal`` and ``leslie``, with JAX's
semantics (``jax.scipy.linalg``): the vector-argument ones broadcast over leading
dimensions; the size-argument ones return the default float (or complex) dtype.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, indexing, shapes, ufuncs, util
from hlox.scipy.special import comb
import hlox.numpy as jnp

__all__ = ["toeplitz", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal"]


def _gather_last(v, idx):
  """``v[..., idx]`` for a static integer index array ``idx``."""
  return jnp.take(v, np.asarray(idx), axis=-1)


def toeplitz(c, r=None):
  """The Toeplitz matrix with first column ``c`` and first row ``r`` (default
  ``conj(c)``; ``r[0]`` is ignored). Leading dimensions of ``c`` and ``r`` broadcast."""
  if r is None:
    util.check_arraylike("toeplitz", c)
    r = ufuncs.conj(creation.asarray(c))
  else:
    util.check_arraylike("toeplitz", c, r)
  c, r = util.promote_dtypes(creation.asarray(c), creation.asarray(r))
  c, r = shapes.atleast_1d(c), shapes.atleast_1d(r)
  n, m = get_aval(c).shape[-1], get_aval(r).shape[-1]
  batch = util.broadcast_shapes(get_aval(c).shape[:-1], get_aval(r).shape[:-1])
  c = shapes.broadcast_to(c, batch + (n,))
  r = shapes.broadcast_to(r, batch + (m,))
  diff = np.arange(n)[:, None] - np.arange(m)[None, :]
  from_c = indexing.take(c, np.clip(diff, 0, max(n - 1, 0)), axis=-1)
  from_r = indexing.take(r, np.clip(-diff, 0, max(m - 1, 0)), axis=-1)
  return ufuncs.where(diff >= 0, from_c, from_r)


def circulant(c):
  """The circulant matrix whose first column is ``c`` (leading dimensions are a batch)."""
  util.check_arraylike("circulant", c)
  c = jnp.atleast_1d(jnp.asarray(c))
  n = get_aval(c).shape[-1]
  return _gather_last(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1))


def hankel(c, r=None):
  """The Hankel matrix with first column ``c`` and last row ``r`` (zeros by default;
  ``r[0]`` is ignored); leading dimensions of ``c`` and ``r`` broadcast."""
  if r is None:
    util.check_arraylike("hankel", c)
    c = jnp.asarray(c)
    r = jnp.zeros_like(c)
  else:
    util.check_arraylike("hankel", c, r)
    c, r = jnp.asarray(c), jnp.asarray(r)
  if get_aval(c).ndim == 0:
    raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
  if get_aval(r).ndim == 0:
    raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
  c, r = util.promote_dtypes(c, r)
  m, n = get_aval(c).shape[-1], get_aval(r).shape[-1]
  batch = util.broadcast_shapes(get_aval(c).shape[:-1], get_aval(r).shape[:-1])
  c = jnp.broadcast_to(c, batch + (m,))
  r = jnp.broadcast_to(r, batch + (n,))
  if m == 0 or n == 0:
    return jnp.zeros(batch + (m, n), get_aval(c).dtype)
  v = jnp.concatenate([c, r[..., 1:]], axis=-1)
  return _gather_last(v, np.arange(m)[:, None] + np.arange(n)[None, :])


def leslie(f, s):
  """The Leslie matrix of fecundities ``f`` (``[..., n]``, ``n >= 2``) and survival rates
  ``s`` (``[..., n - 1]``)."""
  util.check_arraylike("leslie", f, s)
  f, s = jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s))
  fs, ss = get_aval(f).shape, get_aval(s).shape
  if fs[-1] < 2:
    raise ValueError("The length of f along the last axis must be at least 2; "
                     f"got shape {fs}.")
  if ss[-1] != fs[-1] - 1:
    raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                     "must be one less than the length of f; got f shape "
                     f"{fs} and s shape {ss}.")
  f, s = util.promote_dtypes(f, s)
  n = fs[-1]
  batch = util.broadcast_shapes(fs[:-1], ss[:-1])
  f = jnp.broadcast_to(f, batch + (n,))
  s = jnp.broadcast_to(s, batch + (n - 1,))
  rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
  sub = _gather_last(s, np.clip(cols, 0, n - 2) * np.ones_like(rows))
  out = jnp.where(rows == cols + 1, sub, jnp.zeros_like(sub))
  return jnp.where(rows == 0, f[..., None, :], out)


def companion(a):
  """The companion matrix of the polynomial with coefficients ``a`` (highest degree
  first, ``a[0] != 0``): first row ``-a[1:] / a[0]``, ones on the subdiagonal."""
  a, = util.promote_args_inexact("companion", a)
  a = jnp.atleast_1d(a)
  shape = get_aval(a).shape
  if shape[-1] < 2:
    raise ValueError("The length of `a` along the last axis must be at least 2; "
                     f"got shape {shape}.")
  first_row = -a[..., 1:] / a[..., :1]
  m = shape[-1] - 1
  eye = jnp.eye(m, m, k=-1, dtype=get_aval(first_row).dtype)
  return jnp.where((np.arange(m) == 0)[:, None], first_row[..., None, :], eye)


def fiedler(a):
  """The symmetric Fiedler matrix ``|a[i] - a[j]|``."""
  util.check_arraylike("fiedler", a)
  a = jnp.atleast_1d(jnp.asarray(a))
  return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
  """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients ``a``
  (highest degree first): it has the polynomial's roots as its eigenvalues."""
  a, = util.promote_args_inexact("fiedler_companion", a)
  a = jnp.atleast_1d(a)
  shape = get_aval(a).shape
  if shape[-1] == 0:
    raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                     f"length, but got an array of shape {shape}.")
  n = shape[-1] - 1
  if n == 0:
    return jnp.zeros(shape[:-1] + (0, 0), get_aval(a).dtype)
  a = a / a[..., :1]
  if n == 1:
    return -a[..., 1:, None]
  i, j = np.arange(n)[:, None], np.arange(n)[None, :]
  even, odd = i % 2 == 0, i % 2 == 1
  # Each cell of the pentadiagonal pattern reads a coefficient (or is 1, or 0).
  index = np.zeros((n, n), np.int64)
  value = np.zeros((n, n), np.int8)  # 0: zero, 1: one, 2: -a[index]
  for cond, v, idx in [((j == i + 2) & even, 1, 0), ((j == i - 2) & odd & (i >= 3), 1, 0),
                       ((j == i - 1) & even & (i >= 2), 2, np.minimum(i + 1, n)),
                       ((j == i + 1) & even, 2, np.minimum(i + 2, n)),
                       ((i == 1) & (j == 0), 1, 0), ((i == 0) & (j == 0), 2, 1)]:
    value = np.where(cond, v, value)
    index = np.where(cond & (v == 2), idx, index)
  coef = -_gather_last(a, index)
  return jnp.where(value == 2, coef, jnp.where(value == 1, jnp.ones_like(coef),
                                               jnp.zeros_like(coef)))


def convolution_matrix(a, n, mode="full"):
  """The Toeplitz matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length
  ``n``; ``mode`` is ``'full'``, ``'valid'`` or ``'same'``."""
  n = operator.index(n)
  if n <= 0:
    raise ValueError(f"n must be a positive integer; got {n}.")
  util.check_arraylike("convolution_matrix", a)
  a = jnp.asarray(a)
  shape = get_aval(a).shape
  if not shape:
    raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
  m = shape[-1]
  if m < 1:
    raise ValueError(f"len(a) must be at least 1; got shape {shape}.")
  if mode not in ("full", "valid", "same"):
    raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
  pads = [(0, 0)] * (len(shape) - 1) + [(0, n - 1)]
  az = jnp.pad(a, pads)
  raz = jnp.pad(jnp.flip(a, axis=-1), pads)
  length = m + n - 1
  if mode == "same":
    trim = min(n, m) - 1
    tb, te = trim // 2, trim - trim // 2
  elif mode == "valid":
    tb = te = min(n, m) - 1
  else:
    tb = te = 0
  return toeplitz(az[..., tb:length - te], raz[..., length - n - tb:length - tb])


def hilbert(n):
  """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)``."""
  n = operator.index(n)
  a = lax.broadcasted_iota(dtypes.default_float_dtype(), (n, 1), 0)
  return 1 / (a + a.T + 1)


def invhilbert(n):
  """The exact inverse of the ``n x n`` Hilbert matrix (in floating point)."""
  n = operator.index(n)
  a = jnp.arange(n, dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  s = i + j
  sign = 1.0 - 2.0 * (s % 2)
  return (sign * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
          * comb(s, i) ** 2)


def _binom(n, k):
  return jnp.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


_PASCAL_KINDS = ["symmetric", "lower", "upper"]


def pascal(n, kind=None):
  """The ``n x n`` Pascal matrix: ``kind`` ``'symmetric'`` (default), ``'lower'`` or
  ``'upper'``; float32, as in JAX."""
  kind = "symmetric" if kind is None else kind
  if kind not in _PASCAL_KINDS:
    raise ValueError(f"Expected kind to be on of: {_PASCAL_KINDS}; got {kind}")
  a = jnp.arange(operator.index(n), dtype=np.float32)
  lower = _binom(a[:, None], a[None, :])
  if kind == "lower":
    return lower
  if kind == "upper":
    return lower.T
  return jnp.dot(lower, lower.T, precision=lax.Precision.HIGHEST)


def invpascal(n, kind=None):
  """The inverse of ``pascal(n, kind)`` (default float dtype)."""
  kind = "symmetric" if kind is None else kind
  if kind not in _PASCAL_KINDS:
    raise ValueError(f"Expected kind to be one of: {_PASCAL_KINDS}; got {kind}")
  a = jnp.arange(operator.index(n), dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  lower_inv = (1.0 - 2.0 * ((i - j) % 2)) * _binom(i, j)
  if kind == "lower":
    return lower_inv
  if kind == "upper":
    return lower_inv.T
  return jnp.dot(lower_inv.T, lower_inv, precision=lax.Precision.HIGHEST)


def helmert(n, full=False):
  """The Helmert matrix: ``(n - 1) x n`` orthonormal rows orthogonal to the ones vector
  (``n x n`` with ``full``, the first row ``1 / sqrt(n)``)."""
  n = operator.index(n)
  if n < 1:
    raise ValueError(f"n must be a positive integer; got {n}.")
  i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
  k = jnp.asarray(i + 1, dtype=dtypes.default_float_dtype())
  denom = jnp.sqrt(k * (k + 1))
  h = jnp.where(j <= i, 1.0 / denom, jnp.where(j == i + 1, -k / denom, jnp.zeros_like(denom)))
  if full:
    first = jnp.full((1, n), 1.0 / math.sqrt(n), dtype=get_aval(h).dtype)
    h = jnp.concatenate([first, h], axis=0)
  return h


def hadamard(n, dtype=int):
  """The ``n x n`` Hadamard matrix (Sylvester's construction; ``n`` a power of 2)."""
  n = operator.index(n)
  if n < 1 or not math.log2(n).is_integer():
    raise ValueError(f"n must be a positive power of 2; got {n}.")
  h = np.ones((1, 1), np.int64)
  for _ in range(int(math.log2(n))):
    h = np.block([[h, h], [h, -h]])
  return jnp.asarray(h, dtype=dtype)


def dft(n, scale=None, *, dtype=None):
  """The ``n x n`` discrete Fourier transform matrix ``exp(-2 pi i j k / n)``, divided by
  ``sqrt(n)`` (``scale='sqrtn'``) or ``n`` (``'n'``)."""
  if scale is not None and scale not in ("sqrtn", "n"):
    raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
  if dtype is None:
    dtype = dtypes.default_complex_dtype()
  else:
    dtype = dtypes.canonicalize_dtype(dtype)
    if not dtypes.is_complex(dtype):
      raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
  n = operator.index(n)
  a = jnp.arange(n, dtype=dtype)
  omegas = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
  if scale == "sqrtn":
    omegas = omegas / math.sqrt(n)
  elif scale == "n":
    omegas = omegas / n
  return omegas


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["convolution_matrix", "hilbert", "invhilbert", "pascal", "invpascal",
                "helmert", "hadamard", "dft"], {},
    default_static=("n", "mode", "kind", "full", "dtype", "scale"),
    staged=("convolution_matrix", "hilbert", "invhilbert", "pascal", "invpascal", "helmert",
            "hadamard", "dft"))
