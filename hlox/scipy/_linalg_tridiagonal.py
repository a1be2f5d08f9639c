"""``eigh_tridiagonal`` for ``hlox.scipy.linalg``: eigenvalues of a symmetric (Hermitian)
tridiagonal matrix by bisection on Sturm sequence counts, all eigenvalues searched in
parallel, and eigenvectors by inverse iteration from random starts (clusters of close
eigenvalues re-orthogonalized by QR), with JAX's semantics (``jax.scipy.linalg``).
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import random
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import linalg as lax_linalg
from hlox.numpy import linalg as jnp_linalg
import hlox.numpy as jnp

__all__ = ["eigh_tridiagonal"]


def _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, x):
  """For each shift in ``x``: how many eigenvalues lie below it (the negative pivots of
  ``T - x I``'s LDL^T factorization), with tiny pivots pushed to ``-pivmin``."""
  n = get_aval(alpha).shape[0]
  q = alpha[0] - x
  count = jnp.where(q < 0, 1, 0).astype(np.int32)
  q = jnp.where(alpha[0] == x, alpha0_perturbation, q)

  def step(i, carry):
    q, count = carry
    q = alpha[i] - beta_sq[i - 1] / q - x
    count = jnp.where(q <= pivmin, count + 1, count)
    return jnp.where(q <= pivmin, jnp.minimum(q, -pivmin), q), count

  _, count = lax.fori_loop(1, n, step, (q, count))
  return count


def _eigenvectors(alpha, beta, eigvals, key):
  """Inverse iteration for all eigenvectors at once (rows of the result)."""
  n = get_aval(alpha).shape[0]
  k = get_aval(eigvals).shape[0]
  dl = jnp.pad(jnp.conj(beta), (1, 0))
  du = jnp.pad(beta, (0, 1))
  # Eigenvalues closer than sqrt(eps) |T| form clusters whose vectors are orthogonalized
  # together after each step (their individual vectors are not well determined).
  gap = eigvals[1:] - eigvals[:-1]
  eps = float(np.finfo(np.dtype(get_aval(eigvals).dtype)).eps)
  t_norm = jnp.maximum(jnp.abs(eigvals[0]), jnp.abs(eigvals[-1]))
  close = gap < np.sqrt(eps) * t_norm
  left_close = jnp.pad(close, (1, 0), constant_values=False)
  right_close = jnp.pad(close, (0, 1), constant_values=False)
  starts = jnp.nonzero(~left_close & right_close, size=k // 2 + 1)[0]
  ends = jnp.nonzero(left_close & ~right_close, size=k // 2 + 1)[0] + 1
  num_clusters = jnp.sum(~left_close & right_close)
  arange_k = jnp.arange(k)
  solve_dtype = np.result_type(get_aval(alpha).dtype, get_aval(beta).dtype)
  base_dtype = np.finfo(solve_dtype).dtype

  v = random.normal(key, (k, n), dtype=base_dtype).astype(solve_dtype)
  v = v / jnp_linalg.norm(v, axis=-1, keepdims=True).astype(solve_dtype)

  def orthogonalize_cluster(i, ev):
    start, end = starts[i], ends[i]
    in_block = (arange_k < end - start).astype(get_aval(ev).dtype)
    block = lax.dynamic_slice(jnp.pad(ev, ((0, k), (0, 0))), (start, 0), (k, n))
    q, _ = jnp_linalg.qr((block * in_block[:, None]).T)
    update = lax.dynamic_update_slice(jnp.zeros((2 * k, n), get_aval(ev).dtype),
                                      q.T * in_block[:, None], (start, 0))[:k]
    in_cluster = (arange_k >= start) & (arange_k < end)
    return jnp.where(in_cluster[:, None], update, ev)

  shifted = (alpha[None, :] - eigvals[:, None]).astype(solve_dtype)
  dl_k = jnp.broadcast_to(dl[None, :], (k, n)).astype(solve_dtype)
  du_k = jnp.broadcast_to(du[None, :], (k, n)).astype(solve_dtype)

  def step(state):
    i, v, norm_v, _ = state
    v_new = lax_linalg.tridiagonal_solve(dl_k, shifted, du_k, v[:, :, None].astype(solve_dtype),
                                         perturb_singular=True)[..., 0]
    norm_new = jnp_linalg.norm(v_new, axis=-1, keepdims=True)
    v_new = v_new / norm_new.astype(get_aval(v_new).dtype)
    v_new = lax.fori_loop(0, num_clusters, orthogonalize_cluster, v_new)
    return i + 1, v_new, norm_new[:, 0], norm_v

  def keep_going(state):
    # At most 5 steps (LAPACK's xSTEIN), while some norm still grows by 10% or more.
    i, _, norm_v, norm_old = state
    return (i < 5) & jnp.any(norm_v >= 1.1 * norm_old)

  real = get_aval(eigvals).dtype
  _, v, _, _ = lax.while_loop(keep_going, step, (jnp.asarray(0, np.int32), v,
                                                 jnp.ones(k, real), jnp.zeros(k, real)))
  return v


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """Eigenvalues (ascending) of the symmetric or Hermitian tridiagonal matrix with
  diagonal ``d`` and off-diagonal ``e``; also the eigenvectors (as columns) unless
  ``eigvals_only``. ``select='i'`` with ``select_range=(lo, hi)`` picks eigenvalues
  ``lo..hi`` (inclusive); ``select='v'`` is not implemented, as in JAX. ``tol`` is an
  absolute tolerance for the bisection; ``key`` seeds inverse iteration (default key 42).
  """
  alpha, beta = jnp.asarray(d), jnp.asarray(e)
  supported = (np.float32, np.float64, np.complex64, np.complex128)
  a_dt, b_dt = get_aval(alpha).dtype, get_aval(beta).dtype
  if a_dt != b_dt:
    raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                    f"{a_dt} and {b_dt}")
  if a_dt not in supported:
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    f"hlox.scipy.linalg.eigh_tridiagonal, got {a_dt} and {b_dt}")
  n = get_aval(alpha).shape[0]
  if n <= 1:
    return jnp.real(alpha) if eigvals_only else (jnp.real(alpha), jnp.eye(n, dtype=a_dt))
  if dtypes.is_complex(a_dt):
    alpha = jnp.real(alpha)
    beta_sq = jnp.real(beta * jnp.conj(beta))
    beta_abs = jnp.sqrt(beta_sq)
  else:
    beta_abs, beta_sq = jnp.abs(beta), jnp.square(beta)

  # Gershgorin bounds on the spectrum.
  radius = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
  lam_max = jnp.max(alpha + radius)
  lam_min = jnp.min(alpha - radius)
  t_norm = jnp.maximum(jnp.abs(lam_min), jnp.abs(lam_max))
  real = get_aval(alpha).dtype
  finfo = np.finfo(real)
  one = np.ones([], dtype=real)
  safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
  pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
  alpha0_perturbation = jnp.square(finfo.eps * beta_abs[0])
  abs_tol = finfo.eps * t_norm
  if tol is not None:
    abs_tol = jnp.maximum(tol, abs_tol)
  # Enough halvings to resolve every bit of the mantissa.
  max_it = finfo.nmant + 1

  if select == "a":
    targets = jnp.arange(n, dtype=np.int32)
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")

  # Start slightly outside the Gershgorin interval.
  fudge = 2.1
  slack = jnp.asarray(n, real) * fudge * finfo.eps * t_norm
  shape = get_aval(targets).shape
  lower = jnp.broadcast_to(lam_min - slack - 2 * fudge * pivmin, shape)
  upper = jnp.broadcast_to(lam_max + slack + fudge * pivmin, shape)
  pivmin = jnp.broadcast_to(pivmin, shape)
  alpha0_perturbation = jnp.broadcast_to(alpha0_perturbation, shape)

  def cond(state):
    i, lower, _, upper = state
    return (i < max_it) & (abs_tol < jnp.max(upper - lower))

  def body(state):
    i, lower, mid, upper = state
    counts = _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, mid)
    lower = jnp.where(counts <= targets, mid, lower)
    upper = jnp.where(counts > targets, mid, upper)
    return i + 1, lower, 0.5 * (lower + upper), upper

  _, _, mid, _ = lax.while_loop(cond, body, (jnp.asarray(0, np.int32), lower,
                                             0.5 * (upper + lower), upper))
  if eigvals_only:
    return mid
  if key is None:
    key = random.key(42)
  return mid, _eigenvectors(alpha, beta, mid, key).T
