"""``qdwh``: the polar decomposition ``x = u h`` by the QR-based dynamically weighted Halley
iteration (Nakatsukasa, Bai & Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), as JAX's
``jax.lax.linalg.qdwh``.

It is a function on other primitives, not a primitive: the weights of each step depend only
on the dtype's epsilon, so they are computed here in Python and the early steps (whose
weights are large) use a QR factorization, the later ones a cheaper Cholesky one; a
``while_loop`` continues with plain Halley steps until the iterate stops moving. Every
transformation goes through the primitives it binds.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import control_flow, elementwise as ew, indexing, reductions, shapes
from hlox.lax.linalg.common import H, T, eye_like, matmul
from hlox.lax.linalg.factorizations import cholesky, qr, triangular_solve

__all__ = ["qdwh"]

# Steps with a weight c above this use QR: Cholesky of I + c U^H U loses accuracy then.
_CHOLESKY_CUTOFF = 100


def _scale(x, s):
  return ew.mul(shapes.full_like(x, s), x)


def _mask(x, dims, alternative=None):
  """``x`` where every index is below the (possibly traced) size ``dims[i]`` in dimension
  ``i`` (``None``: no limit), ``alternative`` (zeros by default) elsewhere."""
  shape = get_aval(x).shape
  mask = None
  for i, d in enumerate(dims):
    if d is None:
      continue
    iota = shapes.broadcasted_iota(dtypes.int32, shape, i)
    inside = ew.lt(iota, shapes.broadcast_in_dim(_i32(d), shape, ()))
    mask = inside if mask is None else ew.bitwise_and(mask, inside)
  if mask is None:
    return x
  alternative = shapes.full_like(x, 0) if alternative is None else alternative
  return ew.select(mask, x, alternative)


def _i32(d):
  if isinstance(d, (int, np.integer)):
    return shapes.full((), int(d), dtypes.int32)
  return ew.convert_element_type(d, dtypes.int32)


def _frobenius(x):
  a = ew.abs(x)
  return ew.sqrt(reductions.reduce_sum(ew.mul(a, a), (0, 1)))


def _qr_step(u, m, n, params):
  """``e u + (a - e)/sqrt(c) Q1 Q2^H`` with ``[sqrt(c) u; I] = [Q1; Q2] R``."""
  a_minus_e_by_sqrt_c, sqrt_c, e = params
  big_m, big_n = get_aval(u).shape
  eye = eye_like(u, (big_n, big_n))
  su = _scale(u, sqrt_c)
  if m is None:
    y = shapes.concatenate([su, eye], 0)
  else:  # the identity goes right under the true rows
    y = shapes.pad(su, shapes.full((), 0, get_aval(u).dtype), [(0, big_n, 0), (0, 0, 0)])
    y = indexing.dynamic_update_slice(y, eye, (_i32(m), _i32(0)))
  q, _ = qr(y, full_matrices=False)
  q1 = _mask(shapes.slice(q, (0, 0), (big_m, big_n)), (m, n))
  start = big_m if m is None else m
  q2 = indexing.dynamic_slice(q, (_i32(start), _i32(0)), (big_n, big_n))
  q2 = H(_mask(q2, (n, n)))
  return ew.add(_scale(u, e), _scale(matmul(q1, q2), a_minus_e_by_sqrt_c))


def _cholesky_step(u, m, n, params):
  """``e u + (a - e) u (I + c u^H u)^-1``, the inverse applied through a Cholesky factor."""
  del m
  a_minus_e, c, e = params
  big_n = get_aval(u).shape[1]
  eye = eye_like(u, (big_n, big_n))
  x = ew.add(_scale(matmul(H(u), u), c), eye)
  # The padding's corner gets the identity, which keeps the matrix positive definite.
  x = _mask(x, (n, n), eye)
  y = cholesky(x, symmetrize_input=False)
  # conj(conj(y)^-1 u^T) = y^-1 u^H, then (y^H)^-1 of that: (I + c u^H u)^-1 u^H.
  z = triangular_solve(y, T(u), left_side=True, lower=True, conjugate_a=True)
  z = ew.conj(z) if dtypes.is_complex(get_aval(z).dtype) else z
  z = H(triangular_solve(y, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True))
  return ew.add(_scale(u, e), _scale(z, a_minus_e))


def _weights(eps: float, max_iterations: int):
  """The (QR, Cholesky) step parameters: the dynamic weights ``(a, b, c)`` as the lower
  bound ``l`` on the smallest singular value rises to 1 (float64 arithmetic in Python)."""
  qr_params, chol_params = [], []
  l, tol_l = eps, 10.0 * eps / 2.0
  k = 0
  while l + tol_l < 1 and k < max_iterations:
    k += 1
    l2 = l * l
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = (1.0 + dd) ** (1 / 2)
    a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    l = l * (a + b * l2) / (1 + c * l2)
    e = b / c
    if c > _CHOLESKY_CUTOFF:
      qr_params.append(((a - e) / c ** 0.5, c ** 0.5, e))
    else:
      chol_params.append((a - e, c, e))
  return qr_params, chol_params


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
  """Polar decomposition ``x = u @ h`` of a full-rank matrix by the QDWH iteration.

  ``x`` is ``[M, N]`` with ``M >= N``; ``u`` has orthonormal columns and ``h`` is Hermitian
  positive semi-definite. ``eps`` (default: the dtype's epsilon) sets the stopping rule
  ``|u_k - u_{k-1}| < (5 eps)^(1/3)``; ``max_iterations`` (default 10) bounds the steps.
  ``dynamic_shape=(m, n)`` treats ``x`` as an ``m x n`` matrix padded to ``M x N``.
  ``is_hermitian`` is accepted for JAX compatibility and unused, as in JAX.

  Args:
    x: array of shape ``[M, N]``.
    is_hermitian: keyword-only; unused.
    max_iterations: keyword-only; iteration limit.
    eps: keyword-only; tolerance parameter.
    dynamic_shape: keyword-only; optional actual ``(m, n)`` of a padded ``x``.

  Returns:
    A tuple ``(u, h, num_iters, is_converged)``.

  Examples:
    >>> u, h, num_iters, converged = lax.linalg.qdwh(jnp.array([[2., 0.], [0., 3.]]))
    >>> h
    Array([[2., 0.],
           [0., 3.]], dtype=float32)
    >>> converged
    Array(True, dtype=bool)
  """
  del is_hermitian
  aval = get_aval(x)
  if len(aval.shape) != 2:
    raise ValueError(f"qdwh: expected a matrix of shape [M, N], got {aval.str_short()}")
  if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
    raise TypeError(f"qdwh: expected a floating-point or complex matrix, got "
                    f"{aval.str_short()}")
  big_m, big_n = aval.shape
  if big_m < big_n:
    raise ValueError(f"qdwh: the input matrix of shape M x N must have M >= N, got "
                     f"{aval.shape}")
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  if dynamic_shape is not None:
    m, n = dynamic_shape
    x = _mask(x, (m, n))
  else:
    m = n = None
  if eps is None:
    eps = float(np.finfo(np.dtype(aval.dtype)).eps)
  tol_norm = (10.0 * eps / 2.0) ** (1 / 3)

  # Scale by 1/sqrt(|x|_1 |x|_inf) >= 1/|x|_2, so every singular value is at most 1.
  ax = ew.abs(x)
  one_norm = reductions.reduce_max(reductions.reduce_sum(ax, (0,)), (0,))
  inf_norm = reductions.reduce_max(reductions.reduce_sum(ax, (1,)), (0,))
  zero = shapes.full_like(one_norm, 0)
  alpha_inv = ew.mul(ew.rsqrt(one_norm), ew.rsqrt(inf_norm))
  alpha_inv = ew.select(ew.eq(one_norm, zero), shapes.full_like(one_norm, 1), alpha_inv)
  u = ew.mul(x, shapes.broadcast_in_dim(ew.convert_element_type(alpha_inv, aval.dtype),
                                        aval.shape, ()))

  qr_params, chol_params = _weights(eps, max_iterations)
  for params in qr_params:
    u = _qr_step(u, m, n, params)
  not_converged = shapes.full((), True, dtypes.bool_)
  tol = shapes.full_like(one_norm, tol_norm)
  for params in chol_params:
    u_prev, u = u, _cholesky_step(u, m, n, params)
    not_converged = ew.gt(_frobenius(ew.sub(u, u_prev)), tol)

  # Once the weights reach Halley's (a, b, c) = (3, 1, 3), repeat that step until u settles.
  halley = (3 - 1 / 3, 3, 1 / 3)

  def cond_fun(state):
    k, _, not_converged = state
    return ew.bitwise_and(not_converged, ew.lt(k, shapes.full_like(k, max_iterations)))

  def body_fun(state):
    k, u, _ = state
    u_next = _cholesky_step(u, m, n, halley)
    return (ew.add(k, shapes.full_like(k, 1)), u_next,
            ew.gt(_frobenius(ew.sub(u_next, u)), tol))

  k0 = shapes.full((), len(qr_params) + len(chol_params), dtypes.int32)
  num_iters, u, not_converged = control_flow.while_loop(cond_fun, body_fun,
                                                        (k0, u, not_converged))

  # One Newton-Schulz step polishes the orthogonality.
  u = ew.sub(_scale(u, 1.5), _scale(matmul(u, matmul(H(u), u)), 0.5))
  h = matmul(H(u), x)
  h = _scale(ew.add(h, H(h)), 0.5)
  return u, h, num_iters, ew.bitwise_not(not_converged)
