"""``hlox.experimental.sparse.linalg``: iterative eigensolvers for large Hermitian operators
(``jax.experimental.sparse.linalg``), and ``spsolve`` (in ``_spsolve``).

``lobpcg_standard`` finds the top-k eigenpairs of ``A`` (a matrix, or a function applying it to
an ``(n, k)`` block) by the Locally Optimal Block Preconditioned Conjugate Gradient method
(Knyazev 2001), in the variant JAX ships: the block ``[X, P, R]`` of current eigenvector
guesses, search directions and residuals is kept orthonormal at every step (SVQB, Stathopoulos
and Wu 2002, applied twice), a Rayleigh-Ritz solve on that block gives the next ``X``, and
convergence is judged per eigenpair by comparing the residual with the rounding error expected
from forming it. The steps follow JAX's, so iteration counts and results agree with it.
"""
from collections.abc import Callable
from functools import partial

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import jit
from hlox.core.basearray import Array
from hlox.experimental.sparse._spsolve import spsolve  # noqa: F401

__all__ = ["lobpcg_standard", "spsolve"]

_HIGHEST = lax.Precision.HIGHEST


def lobpcg_standard(A, X, m: int = 100, tol=None):
  """The ``k`` largest eigenvalues of a symmetric (Hermitian) ``(n, n)`` operator, by LOBPCG.

  Args:
    A: an ``(n, n)`` symmetric array, or a function mapping an ``(n, k)`` array to ``A @ x``.
    X: ``(n, k)`` starting guesses for the eigenvectors (need not be orthogonal, must be
      linearly independent); ``0 < 5 * k < n``.
    m: the most iterations to run.
    tol: an eigenpair ``(t, u)`` counts as converged when ``|A u - t u|`` is below
      ``tol * 10 * n * (t + |A u|)``; the iteration stops early once all ``k`` have.
      Defaults to the machine epsilon of ``X``'s dtype.

  Returns:
    ``(theta, U, i)``: the ``(k,)`` eigenvalues in descending order, the ``(n, k)``
    eigenvectors, and the number of iterations run.

  Raises:
    ValueError: if ``k`` is 0 or too large, or ``A``'s dtype or shape does not fit ``X``.
  """
  if isinstance(A, (Array, np.ndarray)):
    return _lobpcg_standard_matrix(A, X, m, tol, debug=False)
  return _lobpcg_standard_callable(A, X, m, tol, debug=False)


@partial(jit, static_argnames=["m", "debug"])
def _lobpcg_standard_matrix(A, X, m: int, tol, debug: bool = False):
  """LOBPCG on a dense matrix (one compilation per shape); ``debug=True`` runs all ``m`` steps
  and adds per-step diagnostics as a fourth output."""
  return _lobpcg_standard_callable(partial(_mm, A), X, m, tol, debug)


@partial(jit, static_argnames=["A", "m", "debug"])
def _lobpcg_standard_callable(A: Callable, X, m: int, tol, debug: bool = False):
  """LOBPCG on an operator given as a (hashable) function; see ``lobpcg_standard``."""
  n, k = X.shape
  _check_inputs(A, X)
  if tol is None:
    tol = float(jnp.finfo(X.dtype).eps)

  X = _orthonormalize(X)
  P = _extend_basis(X, k)
  AX = A(X)
  theta = jnp.sum(X * AX, axis=0, keepdims=True)
  R = AX - theta * X

  def step(state):
    i, X, P, R, _, theta = state
    # X, P and R stay orthonormal (P and R may hold zero columns where the basis was
    # truncated); R is made orthogonal to X and P before the three are joined.
    R = _project_out(jnp.concatenate((X, P), axis=1), R)
    XPR = jnp.concatenate((X, P, R), axis=1)
    theta, Q = _rayleigh_ritz_orth(A, XPR)

    B = Q[:, :k]
    B = B / jnp.linalg.norm(B, ord=2, axis=0, keepdims=True)
    X = _mm(XPR, B)
    X = X / jnp.linalg.norm(X, ord=2, axis=0, keepdims=True)

    # The new directions span what the old X contributed beyond the new X: orthogonalize
    # Q's lower block against its leading k columns in the small basis, then map through
    # the (orthonormal) XPR, which keeps them orthonormal.
    q, _ = jnp.linalg.qr(Q[:k, k:].T)
    P = _mm(XPR, _mm(Q[:, k:], q))
    norm_p = jnp.linalg.norm(P, ord=2, axis=0, keepdims=True)
    P = P / jnp.where(norm_p == 0, 1.0, norm_p)

    AX = A(X)
    R = AX - theta[jnp.newaxis, :k] * X
    resid_norms = jnp.linalg.norm(R, ord=2, axis=0)
    # Rounding error to expect in forming A x - t x, with headroom for a few more operations.
    reltol = (jnp.linalg.norm(AX, ord=2, axis=0) + theta[:k]) * n * 10
    converged = jnp.sum(resid_norms < tol * reltol)

    new_state = i + 1, X, P, R, converged, theta[jnp.newaxis, :k]
    if debug:
      return new_state, _diagnostics(XPR, X, P, R, theta, converged, resid_norms / reltol)
    return new_state

  def not_done(state):
    i, _, _, _, converged, _ = state
    return jnp.logical_and(i < m, converged < k)

  state = (0, X, P, R, 0, theta)
  if debug:
    state, diagnostics = lax.scan(lambda s, _: step(s), state, xs=None, length=m)
  else:
    state = lax.while_loop(not_done, step, state)
  i, X, _, _, _, theta = state
  if debug:
    return theta[0, :], X, i, diagnostics
  return theta[0, :], X, i


def _check_inputs(A, X):
  n, k = X.shape
  if k == 0:
    raise ValueError(f"must have search dim > 0, got {k}")
  if k * 5 >= n:
    raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
  probe = A(jnp.zeros((n, 1), dtype=X.dtype))
  if probe.dtype != X.dtype:
    raise ValueError(f"A, X must have same dtypes (were {probe.dtype}, {X.dtype})")
  if probe.shape != (n, 1):
    raise ValueError(f"A must be ({n}, {n}) matrix A, got output {probe.shape}")


def _mm(a, b):
  return lax.dot(a, b, precision=(_HIGHEST, _HIGHEST))


def _diagnostics(prev_XPR, X, P, R, theta, converged, adjusted_resid):
  """Per-step numbers for judging convergence (what JAX's debug mode reports)."""
  k = X.shape[1]
  off_diagonal = lambda g: jnp.abs(g - jnp.diag(jnp.diag(g))).sum() / k ** 2
  zero_columns = lambda a: jnp.sum(jnp.all(a == 0.0, axis=0))
  return {
      "basis rank": prev_XPR.shape[1] - zero_columns(prev_XPR),
      "X zeros": zero_columns(X),
      "P zeros": zero_columns(P),
      "lambda history": theta[:k],
      "residual history": jnp.linalg.norm(R, axis=0, ord=2),
      "converged": converged,
      "adjusted residual max": jnp.max(adjusted_resid),
      "adjusted residual p50": jnp.median(adjusted_resid),
      "adjusted residual min": jnp.min(adjusted_resid),
      "X orth": off_diagonal(_mm(X.T, X)),
      "P orth": off_diagonal(_mm(P.T, P)),
      "P.X": jnp.abs(X.T @ P).sum() / k ** 2,
  }


def _eigh_descending(a):
  w, v = jnp.linalg.eigh(a)
  return w[::-1], v[:, ::-1]


def _svqb(X):
  """An orthonormal basis of ``X``'s columns, from the eigendecomposition of ``X^T X``;
  directions that are numerically degenerate come back as zero columns."""
  # Normalizing the columns first makes the diagonal scaling of SVQB unnecessary.
  norms = jnp.linalg.norm(X, ord=2, axis=0, keepdims=True)
  X = X / jnp.where(norms == 0, 1.0, norms)
  gram = _mm(X.T, X)
  w, V = _eigh_descending(gram)
  # Eigenvalues below eps * (largest) mark directions X does not really span. The masks keep
  # zero columns (from the input or from truncation) from dividing by zero.
  tau = jnp.finfo(X.dtype).eps * w[0]
  inv_sqrt = jnp.where(tau > 0, jnp.maximum(w, tau), 1.0) ** (-0.5)
  basis = _mm(X, V * inv_sqrt[jnp.newaxis, :])
  keep = ((w > tau) * (jnp.diag(gram) > 0.0))[jnp.newaxis, :]
  basis = basis * keep.astype(basis.dtype)
  norms = jnp.linalg.norm(basis, ord=2, axis=0, keepdims=True)
  keep = keep * (norms > 0.0)
  return basis / jnp.where(keep, norms, 1.0)


def _orthonormalize(basis):
  # One pass of SVQB loses orthogonality on ill-conditioned input; two are enough.
  for _ in range(2):
    basis = _svqb(basis)
  return basis


def _project_out(basis, U):
  """``U``'s component orthogonal to the (orthonormal, possibly zero-column) ``basis``, with
  orthonormal nonzero columns; doubtful columns are zeroed rather than kept."""
  # Subtract-and-orthonormalize twice (Kahan's "twice is enough"), then subtract twice more:
  # renormalizing near-zero residuals can bring ``basis`` directions back, and the final
  # state must be orthogonal to it.
  for _ in range(2):
    U = U - _mm(basis, _mm(basis.T, U))
    U = _orthonormalize(U)
  for _ in range(2):
    U = U - _mm(basis, _mm(basis.T, U))
  norms = jnp.linalg.norm(U, ord=2, axis=0, keepdims=True)
  return U * (norms >= 0.99).astype(U.dtype)


def _rayleigh_ritz_orth(A, S):
  """Eigenpairs (descending) of ``A`` restricted to the orthonormal block ``S``."""
  return _eigh_descending(_mm(S.T, A(S)))


def _extend_basis(X, m):
  """``m`` orthonormal columns orthogonal to the orthonormal ``(n, k)`` block ``X``
  (``k + m <= n``), built deterministically with a block Householder reflector."""
  n, k = X.shape
  top, bottom = X[:k], X[k:]
  u, s, vt = jnp.linalg.svd(top)
  # With y = X + [u vt; 0] and w = y v diag(2 (1 + s))^(-1/2), H = I - 2 w w^T maps X to
  # [-u vt; 0]; H is orthogonal, so H [0; I_m; 0] is orthogonal to X.
  y = jnp.concatenate([top + _mm(u, vt), bottom], axis=0)
  w = _mm(y, vt.T * ((2 * (1 + s)) ** (-1 / 2))[jnp.newaxis, :])
  other = jnp.concatenate([jnp.eye(m, dtype=X.dtype),
                           jnp.zeros((n - k - m, m), dtype=X.dtype)], axis=0)
  h = -2 * jnp.linalg.multi_dot([w, w[k:, :].T, other], precision=_HIGHEST)
  return h.at[k:].add(other)
