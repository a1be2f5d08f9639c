"""The Schur-form part of ``hlox.scipy.linalg``: ``rsf2csf`` (real to complex Schur form),
``funm`` (a matrix function by Parlett's recurrence on the Schur form), ``solve_sylvester``
and ``qr_multiply``, with JAX's semantics (``jax.scipy.linalg``).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import linalg as lax_linalg
from hlox.numpy import linalg as jnp_linalg, util
from hlox.scipy._linalg_spectral import schur
import hlox.numpy as jnp

__all__ = ["rsf2csf", "funm", "solve_sylvester", "qr_multiply"]


def _dot(a, b):
  return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def _H(x):
  return jnp.conj(jnp.swapaxes(x, -1, -2))


# --- rsf2csf -------------------------------------------------------------------------------

def _rsf2csf_2d(t, z):
  dtype = np.result_type(get_aval(t).dtype, get_aval(z).dtype, np.complex64)
  t, z = t.astype(dtype), z.astype(dtype)
  n = get_aval(t).shape[0]
  if n == 1:
    return t, z
  eps = float(np.finfo(get_aval(t).dtype).eps)
  cols = jnp.arange(n)

  def rotate(m, t, z):
    # A Givens rotation that zeroes t[m, m-1] against the shifted 2x2 block's eigenvalue.
    mu = jnp_linalg.eigvals(lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))) - t[m, m]
    r = jnp_linalg.norm(jnp.stack([mu[0], t[m, m - 1]])).astype(get_aval(t).dtype)
    c, s = mu[0] / r, t[m, m - 1] / r
    g = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
    rows = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
    right = cols >= m - 1
    rows = jnp.where(right, _dot(g, jnp.where(right, rows, 0)), rows)
    t = lax.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
    pair = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
    above = (cols < m + 1)[:, None]
    pair = jnp.where(above, _dot(jnp.where(above, pair, 0), _H(g)), pair)
    t = lax.dynamic_update_slice_in_dim(t, pair, m - 1, axis=1)
    zpair = lax.dynamic_slice_in_dim(z, m - 1, 2, axis=1)
    z = lax.dynamic_update_slice_in_dim(z, _dot(zpair, _H(g)), m - 1, axis=1)
    return t, z

  def step(i, tz):
    t, z = tz
    m = n - i
    sub = jnp.abs(t[m, m - 1])
    t, z = lax.cond(sub > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m])), rotate,
                    lambda m, t, z: (t, z), m, t, z)
    return t.at[m, m - 1].set(0.0), z

  return lax.fori_loop(1, n, step, (t, z))


def rsf2csf(T, Z, check_finite=True):
  """Convert a real Schur form ``(T, Z)`` (``A = Z T Z^T``, ``T`` quasi-triangular) to the
  complex one: upper-triangular ``T`` and unitary ``Z`` with ``A = Z T Z^H``."""
  del check_finite
  t, z = jnp.asarray(T), jnp.asarray(Z)
  ts, zs = get_aval(t).shape, get_aval(z).shape
  if len(ts) < 2 or ts[-1] != ts[-2]:
    raise ValueError("Input 'T' must be square.")
  if len(zs) < 2 or zs[-1] != zs[-2]:
    raise ValueError("Input 'Z' must be square.")
  if ts[-1] != zs[-1]:
    raise ValueError(f"Input array shapes must match: Z: {zs} vs. T: {ts}")
  return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)


# --- funm ----------------------------------------------------------------------------------

def _parlett(f, t):
  """Fill the strict upper triangle of ``f`` (diagonal set) so that ``f`` commutes with the
  triangular ``t`` (Golub & Van Loan, algorithm 11.1.1); also the smallest divisor."""
  n = get_aval(t).shape[0]
  idx = jnp.arange(n)

  def inner(i, carry):
    p, f, minden = carry
    j = i + p
    s = t[i - 1, j - 1] * (f[j - 1, j - 1] - f[i - 1, i - 1])
    between = (idx >= i) & (idx < j - 1)
    s = s + (_dot(jnp.where(between, t[i - 1], 0), jnp.where(between, f[:, j - 1], 0))
             - _dot(jnp.where(between, f[i - 1], 0), jnp.where(between, t[:, j - 1], 0)))
    den = t[j - 1, j - 1] - t[i - 1, i - 1]
    s = jnp.where(den != 0, s / den, s)
    return p, f.at[i - 1, j - 1].set(s), jnp.minimum(minden, jnp.abs(den))

  def outer(p, carry):
    f, minden = carry
    _, f, minden = lax.fori_loop(1, n - p + 1, inner, (p, f, minden))
    return f, minden

  return lax.fori_loop(1, n, outer, (f, jnp.abs(t[0, 0])))


def funm(A, func, disp=True):
  """``func`` of the square matrix ``A`` (``func`` maps a vector of eigenvalues
  elementwise), through the complex Schur form; the result is complex, as in JAX. With
  ``disp=False`` also returns an estimate of the relative error."""
  a = jnp.asarray(A)
  shape = get_aval(a).shape
  if len(shape) != 2 or shape[0] != shape[1]:
    raise ValueError(f"funm: expected a square matrix, got shape {shape}")
  t, z = schur(a)
  t, z = rsf2csf(t, z)
  f = jnp.diag(func(jnp.diag(t))).astype(get_aval(t).dtype)
  f, minden = _parlett(f, t)
  f = _dot(_dot(z, f), _H(z))
  if disp:
    return f
  tol = float(np.finfo(np.dtype(get_aval(f).dtype)).eps)
  minden = jnp.where(minden == 0.0, tol, minden)
  err = jnp.where(jnp.any(jnp.isinf(f)), np.inf,
                  jnp.minimum(1, jnp.maximum(tol, (tol / minden)
                                             * jnp_linalg.norm(jnp.triu(t, 1), 1))))
  return f, err


# --- solve_sylvester -----------------------------------------------------------------------

def _solve_triangular_sylvester(r, s, f):
  """``Y`` with ``R Y + Y S = F`` for upper-triangular ``R`` and lower-triangular ``S``:
  entries from the bottom-right corner back, each from those already known."""
  m, n = get_aval(f).shape
  rows, cols = jnp.arange(m), jnp.arange(n)

  def step(y, idx):
    i, j = idx // n, idx % n
    row_term = jnp.sum(jnp.where(rows > i, r[i, :] * y[:, j], 0.0))
    col_term = jnp.sum(jnp.where(cols > j, y[i, :] * s[:, j], 0.0))
    val = (f[i, j] - (row_term + col_term)) / (r[i, i] + s[j, j])
    return y.at[i, j].set(val), None

  y, _ = lax.scan(step, jnp.zeros((m, n), get_aval(f).dtype), jnp.arange(m * n - 1, -1, -1))
  return y


def _solve_sylvester_2d(a, b, c, *, method, tol):
  m, n = get_aval(c).shape
  if method == "schur":
    r, u = schur(a, output="complex")
    s, v = schur(_H(b), output="complex")
    f = _dot(_dot(_H(u), c.astype(get_aval(r).dtype)), v)
    x = _dot(_dot(u, _solve_triangular_sylvester(r, _H(s), f)), _H(v))
  elif method == "eigen":
    ra, ua = jnp_linalg.eig(a)
    rb, ub = jnp_linalg.eig(b)
    f = jnp_linalg.solve(ua, _dot(c.astype(get_aval(ra).dtype), ub))
    y = f / (ra[:, None] + rb[None, :])
    x = _dot(_dot(ua[:m, :m], y[:m, :n]), jnp_linalg.inv(ub)[:n, :n])
  else:
    raise ValueError(f'Unrecognized method {method}. The two valid methods are either '
                     '"schur" or "eigen".')
  if not dtypes.is_complex(get_aval(c).dtype):
    x = x.real
  # No unique solution when an eigenvalue of A and one of -B (nearly) coincide.
  singular = jnp.any(jnp.abs(jnp_linalg.eigvals(a)[:, None]
                             + jnp_linalg.eigvals(b)[None, :]) < tol)
  return jnp.where(singular, jnp.full_like(x, np.nan), x)


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
  """``X`` with ``A X + X B = C`` (``method`` ``'schur'``, Bartels-Stewart, or
  ``'eigen'``); NaNs where ``A`` and ``-B`` share an eigenvalue (within ``tol``). Leading
  dimensions are a batch. CPU only (it needs the Schur or eigendecomposition)."""
  a, b, c = util.promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
  m, n = get_aval(c).shape[-2:]
  if get_aval(a).shape[-2:] != (m, m) or get_aval(b).shape[-2:] != (n, n):
    raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {get_aval(a).shape}\n"
                     f"B: {get_aval(b).shape}\nC: {get_aval(c).shape}")
  return jnp.vectorize(partial(_solve_sylvester_2d, method=method, tol=tol),
                       signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, c)


# --- qr_multiply ---------------------------------------------------------------------------

def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
  """``(Q @ c, R)`` (``mode='left'``) or ``(c @ Q, R)`` (``'right'``) for the economic QR
  of ``a``, applying the Householder reflectors without forming ``Q``; ``conjugate`` uses
  ``conj(Q)``; with ``pivoting`` the column permutation comes last."""
  del overwrite_a, overwrite_c
  a, c = util.promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(c))
  if mode not in ("right", "left"):
    raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
  vector = get_aval(c).ndim == 1
  if vector:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = get_aval(a).shape[-2:]
  k = min(m, n)
  cs = get_aval(c).shape
  if mode == "left" and cs[-2] != k:
    raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                     f"{get_aval(a).shape} so Q has {k} columns, but c has {cs[-2]} rows "
                     f"(expected {k}).")
  if mode == "right" and cs[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{get_aval(a).shape} so Q has {m} rows, but c has {cs[-1]} columns "
                     f"(expected {m}).")
  batch = util.broadcast_shapes(get_aval(a).shape[:-2], cs[:-2])
  a = jnp.broadcast_to(a, batch + (m, n))
  c = jnp.broadcast_to(c, batch + cs[-2:])
  p = None
  if pivoting:
    r, p, taus = lax_linalg.geqp3(a, jnp.zeros(batch + (n,), np.int32))
    p = p - 1  # LAPACK's 1-based pivots
  else:
    r, taus = lax_linalg.geqrf(a)
  if m > n and mode == "left":  # Q's missing columns meet zero rows of c
    c = jnp.concatenate([c, jnp.zeros(batch + (m - k,) + cs[-1:], get_aval(c).dtype)], -2)
  if conjugate:
    # conj(Q) c = (c^T Q^H)^T (and c conj(Q) = (Q^H c^T)^T): with c transposed, Q changes
    # side and becomes Q^H, which ormqr applies directly.
    c = jnp.swapaxes(c, -1, -2)
  left = (mode == "left") != conjugate
  cq = lax_linalg.ormqr(r, taus, c, left=left, transpose=conjugate)
  if conjugate:
    cq = jnp.swapaxes(cq, -1, -2)
  if mode == "right":
    cq = cq[..., :k]
  if vector:
    cq = cq.ravel()
  r = jnp.triu(r[..., :k, :])
  return (cq, r, p) if pivoting else (cq, r)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["rsf2csf", "solve_sylvester"], {},
                    default_static=("check_finite", "method"),
                    staged=("rsf2csf", "solve_sylvester"))
