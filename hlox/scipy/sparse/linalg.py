"""Iterative solvers of ``A x = b``: ``cg``, ``bicgstab``, ``gmres`` (``jax.scipy.sparse.linalg``).

``A`` (and the preconditioner ``M``) is a linear function on pytrees, or a square matrix;
``b`` and ``x0`` are pytrees of arrays. The iterations are ``lax.while_loop``s following
JAX's algorithms step for step (so the iterates agree), stopping when the residual norm
is below ``max(tol * |b|, atol)`` or after ``maxiter`` steps (default ``10 * size(b)``).

Derivatives: the solution is differentiated implicitly (not through the loop) with
``lax.custom_linear_solve``, in ``b`` and in whatever ``A`` closes over: derivatives solve
again with the same solver, on ``A``'s transpose (``A`` itself for real ``cg``, which assumes
``A`` is symmetric positive definite). ``M`` and ``x0`` are treated as constants; the
solution has ``b``'s types, weak types included.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import Tracer
from hlox.runtime.array import Array
from hlox.scipy import linalg as jsp_linalg
from hlox._tree_transform import tree_leaves, tree_map, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]

_HIGHEST = lax.Precision.HIGHEST


def _dot(a, b):
  return jnp.dot(a, b, precision=_HIGHEST)


def _vdot(a, b):
  return jnp.vdot(a, b, precision=_HIGHEST)


def _vdot_real_part(x, y):
  # Re(<x, y>) without forming complex products (the imaginary cross terms cancel).
  result = _vdot(x.real, y.real)
  if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
    result = result + _vdot(x.imag, y.imag)
  return result


def _vdot_real_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot, x, y)))


def _norm(x):
  xs = tree_leaves(x)
  return jnp.sqrt(sum(map(_vdot_real_part, xs, xs)))


def _mul(scalar, tree):
  return tree_map(lambda t: scalar * t, tree)


def _add(x, y):
  return tree_map(operator.add, x, y)


def _sub(x, y):
  return tree_map(operator.sub, x, y)


def _identity(x):
  return x


def _as_operator(name, f):
  """``f`` as a function: a callable as it is, a square matrix as ``x -> f @ x``."""
  if callable(f):
    return f
  if isinstance(f, (np.ndarray, Array, Tracer)):
    if np.ndim(f) != 2 or np.shape(f)[0] != np.shape(f)[1]:
      raise ValueError(f"{name}: linear operator must be a square matrix, but has shape: "
                       f"{np.shape(f)}")
    return functools.partial(_dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and (len(f.shape) != 2 or f.shape[0] != f.shape[1]):
      raise ValueError(f"{name}: linear operator must be a square matrix, but has shape: "
                       f"{f.shape}")
    return functools.partial(operator.matmul, f)
  raise TypeError(f"{name}: linear operator must be either a function or ndarray: {f}")


def _result_dtype(tree):
  return dtypes.result_type(*tree_leaves(tree))


# --- conjugate gradients and BiCGSTAB ----------------------------------------------------

def _cg_solve(A, M, b, x0, maxiter, tol, atol):
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = _result_dtype(p0)
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

  def cond(state):
    _, r, gamma, _, k = state
    rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
    return (rs > atol2) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    Ap = A(p)
    alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
    x = _add(x, _mul(alpha, p))
    r = _sub(r, _mul(alpha, Ap))
    z = M(r)
    gamma_new = _vdot_real_tree(r, z).astype(dtype)
    p = _add(z, _mul(gamma_new / gamma, p))
    return x, r, gamma_new, p, k + 1

  return lax.while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A, M, b, x0, maxiter, tol, atol):
  atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
  r0 = _sub(b, A(x0))
  one = jnp.ones((), _result_dtype(b))

  def cond(state):
    r, k = state[1], state[-1]
    # k < 0 marks a breakdown (rho, alpha or omega became 0).
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, q, k = state
    rho_new = _vdot_tree(rhat, r)
    beta = rho_new / rho * alpha / omega
    p = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_new / _vdot_tree(rhat, q)
    s = _sub(r, _mul(alpha, q))
    done = _vdot_real_tree(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega = _vdot_tree(t, s) / _vdot_tree(t, t)
    x = tree_map(functools.partial(jnp.where, done), _add(x, _mul(alpha, phat)),
                 _add(x, _add(_mul(alpha, phat), _mul(omega, shat))))
    r = tree_map(functools.partial(jnp.where, done), s, _sub(s, _mul(omega, t)))
    k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
    k = jnp.where(rho_new == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_new, p, q, k

  return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


# --- GMRES ---------------------------------------------------------------------------------

def _safe_normalize(x, thresh=None):
  norm = _norm(x)
  dtype = _result_dtype(x)
  if thresh is None:
    thresh = jnp.finfo(norm.dtype).eps
  thresh = jnp.asarray(thresh).astype(dtype).real
  use = norm > thresh
  normalized = tree_map(lambda y: jnp.where(use, y / norm.astype(dtype), 0.0), x)
  return normalized, jnp.where(use, norm, 0.0)


def _project_on_columns(Q, v):
  return functools.reduce(operator.add, tree_leaves(tree_map(
      lambda X, y: jnp.einsum("...n,...->n", X.conj(), y, precision=_HIGHEST), Q, v)))


def _gram_schmidt(Q, x, xnorm, max_iterations=2):
  """Orthogonalize ``x`` against the columns of ``Q`` by classical Gram-Schmidt, repeated
  while the norm drops by more than sqrt(2) (so cancellation is corrected)."""
  Q0 = tree_leaves(Q)[0]
  r = jnp.zeros(Q0.shape[-1], dtype=Q0.dtype)

  def body(carry):
    k, q, r, _ = carry
    h = _project_on_columns(Q, q)
    q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
    r = _add(r, h)
    qnorm_scaled = _safe_normalize(q)[1] / jnp.sqrt(2.0)
    return k + 1, q, r, qnorm_scaled

  def cond(carry):
    k, _, r, qnorm_scaled = carry
    return jnp.logical_and(k < max_iterations - 1, _safe_normalize(r)[1] < qnorm_scaled)

  carry = body((0, x, r, xnorm / jnp.sqrt(2.0)))
  _, q, r, _ = lax.while_loop(cond, body, carry)
  return q, r


def _arnoldi_step(k, A, M, V, H):
  """Extend the Krylov basis ``V`` by column ``k + 1`` and fill row ``k`` of ``H``."""
  dtype = _result_dtype(V)
  eps = jnp.finfo(dtype).eps
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, v_norm0 = _safe_normalize(v)
  v, h = _gram_schmidt(V, v, v_norm0)
  unit_v, v_norm1 = _safe_normalize(v, thresh=eps * v_norm0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
  h = h.at[k + 1].set(v_norm1.astype(dtype))
  return V, H.at[k, :].set(h), v_norm1 == 0.


def _rotate(H, i, cs, sn):
  x, y = H[i], H[i + 1]
  return H.at[i].set(cs.conj() * x - sn.conj() * y).at[i + 1].set(sn * x + cs * y)


def _givens(a, b):
  b_zero = abs(b) == 0
  a_lt_b = abs(a) < abs(b)
  t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
  r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
  cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
  sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
  return cs, sn


def _krylov_basis(unit_residual, restart):
  return tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                  unit_residual)


def _finish_cycle(A, M, b, x0, V, y):
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit_residual, residual_norm


def _gmres_incremental(A, M, b, x0, unit_residual, residual_norm, ptol, restart):
  # Arnoldi with the least-squares problem kept triangular by Givens rotations, so each
  # step knows its residual and the cycle can stop early.
  V = _krylov_basis(unit_residual, restart)
  dtype = _result_dtype(b)
  R = jnp.eye(restart, restart + 1, dtype=dtype)
  givens = jnp.zeros((restart, 2), dtype=dtype)
  beta = jnp.zeros((restart + 1,), dtype=dtype).at[0].set(residual_norm.astype(dtype))

  def cond(carry):
    k, err = carry[0], carry[1]
    return jnp.logical_and(k < restart, err > ptol)

  def body(carry):
    k, _, V, R, beta, givens = carry
    V, H, _ = _arnoldi_step(k, A, M, V, R)
    row = lax.fori_loop(0, k, lambda i, row: _rotate(row, i, *givens[i, :]), H[k, :])
    factors = _givens(row[k], row[k + 1])
    givens = givens.at[k, :].set(jnp.stack(factors))
    R = R.at[k, :].set(_rotate(row, k, *factors))
    beta = _rotate(beta, k, *factors)
    return k + 1, abs(beta[k + 1]), V, R, beta, givens

  _, _, V, R, beta, _ = lax.while_loop(cond, body, (0, residual_norm, V, R, beta, givens))
  y = jsp_linalg.solve_triangular(R[:, :-1].T, beta[:-1])
  return _finish_cycle(A, M, b, x0, V, y)


def _gmres_batched(A, M, b, x0, unit_residual, residual_norm, ptol, restart):
  # The whole Arnoldi cycle first, then one least-squares solve (normal equations).
  del ptol
  V = _krylov_basis(unit_residual, restart)
  dtype = _result_dtype(b)
  H = jnp.eye(restart, restart + 1, dtype=dtype)

  def cond(carry):
    _, _, breakdown, k = carry
    return jnp.logical_and(k < restart, jnp.logical_not(breakdown))

  def body(carry):
    V, H, _, k = carry
    V, H, breakdown = _arnoldi_step(k, A, M, V, H)
    return V, H, breakdown, k + 1

  V, H, _, _ = lax.while_loop(cond, body, (V, H, False, 0))
  beta = jnp.zeros((restart + 1,), dtype=dtype).at[0].set(residual_norm.astype(dtype))
  Ht = H.T
  y = jsp_linalg.solve(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
  return _finish_cycle(A, M, b, x0, V, y)


def _gmres_solve(A, M, b, x0, maxiter, atol, ptol, restart, cycle):
  unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

  def cond(state):
    _, k, _, residual_norm = state
    return jnp.logical_and(k < maxiter, residual_norm > atol)

  def body(state):
    x, k, unit_residual, residual_norm = state
    x, unit_residual, residual_norm = cycle(A, M, b, x, unit_residual, residual_norm, ptol,
                                            restart)
    return x, k + 1, unit_residual, residual_norm

  return lax.while_loop(cond, body, (x0, 0, unit_residual, residual_norm))[0]


# --- the public functions -----------------------------------------------------------------

def _check_args(name, b, x0):
  if tree_structure(x0) != tree_structure(b):
    raise ValueError(f"{name}: x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  shapes = lambda t: [np.shape(x) for x in tree_leaves(t)]
  if shapes(x0) != shapes(b):
    raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                     f"{shapes(x0)} vs {shapes(b)}")


def _prepare(name, A, b, x0, M):
  b = tree_map(jnp.asarray, b)
  x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
  A = _as_operator(name, A)
  M = _identity if M is None else _as_operator(name, M)
  return A, b, x0, M


def _isolve(name, solver, A, b, x0, tol, atol, maxiter, M, symmetric):
  A, b, x0, M = _prepare(name, A, b, x0, M)
  _check_args(name, b, x0)
  if maxiter is None:
    maxiter = 10 * sum(np.size(x) for x in tree_leaves(b))
  real = all(not jnp.iscomplexobj(x) for x in tree_leaves(b))
  # The solve is differentiated implicitly (custom_linear_solve), never through its loop:
  # the same solver, handed the transposed operator, solves the transposed system.
  solve = lambda matvec, rhs: solver(matvec, M, rhs, x0, maxiter, tol, atol)
  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve,
                              symmetric=symmetric and real)
  return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve ``A x = b`` by conjugate gradients (``A`` symmetric/Hermitian positive definite;
  ``M`` a preconditioner approximating ``A^-1``). Returns ``(x, None)``."""
  return _isolve("cg", _cg_solve, A, b, x0, tol, atol, maxiter, M, symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve ``A x = b`` by the stabilized biconjugate gradient method (any square ``A``).
  Returns ``(x, None)``."""
  return _isolve("bicgstab", _bicgstab_solve, A, b, x0, tol, atol, maxiter, M,
                 symmetric=False)


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Solve ``A x = b`` by restarted GMRES: Krylov cycles of ``restart`` steps, at most
  ``maxiter`` cycles. ``solve_method`` 'batched' solves each cycle's least-squares problem at
  its end; 'incremental' keeps it solved with Givens rotations and can stop a cycle early.
  Returns ``(x, info)`` with ``info`` 0, or -1 when the solution has NaNs."""
  if solve_method not in ("batched", "incremental"):
    raise ValueError(f"gmres: invalid solve_method {solve_method}, must be either "
                     "'incremental' or 'batched'")
  A, b, x0, M = _prepare("gmres", A, b, x0, M)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("gmres: x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  size = sum(np.size(x) for x in tree_leaves(b))
  maxiter = 10 * size if maxiter is None else maxiter
  restart = min(restart, size)
  cycle = _gmres_batched if solve_method == "batched" else _gmres_incremental

  def solve(matvec, rhs):
    rhs_norm = _norm(rhs)
    tol_abs = jnp.maximum(tol * rhs_norm, atol)
    ptol = _norm(M(rhs)) * jnp.minimum(1.0, tol_abs / rhs_norm)
    return _gmres_solve(matvec, M, rhs, x0, maxiter, tol_abs, ptol, restart, cycle)

  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
  return x, info
