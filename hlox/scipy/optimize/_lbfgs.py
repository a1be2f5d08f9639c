"""The limited-memory BFGS minimizer (JAX's experimental ``_minimize_lbfgs``): the last
``maxcor`` steps and gradient changes stand in for the inverse Hessian, applied by the
two-loop recursion."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox.autodiff import value_and_grad
from hlox.core.tracer import get_aval
from hlox.numpy import linalg as jnp_linalg
from hlox.scipy.optimize._line_search import line_search
import hlox.numpy as jnp

__all__ = ["LBFGSResults", "minimize_lbfgs"]


class LBFGSResults(NamedTuple):
  """The state (and result) of :func:`minimize_lbfgs`: as ``BFGSResults`` but with the
  histories of steps (``s_history``), gradient changes (``y_history``) and their
  ``1 / y.s`` (``rho_history``), the initial Hessian scale ``gamma``; ``status`` 0
  converged, 1 ``maxiter``, 2 ``maxfun``, 3 ``maxgrad``, 4 no progress (``ftol``), 5 a
  failed line search; ``ls_status`` the last search's status."""
  converged: object
  failed: object
  k: object
  nfev: object
  ngev: object
  x_k: object
  f_k: object
  g_k: object
  s_history: object
  y_history: object
  rho_history: object
  gamma: object
  status: object
  ls_status: object


def _dot(a, b):
  return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                   gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
  """Minimize ``fun`` from the 1-d ``x0`` by L-BFGS with ``maxcor`` correction pairs."""
  d = get_aval(x0).shape[0]
  dtype = get_aval(x0).dtype
  if maxiter is None and maxfun is None and maxgrad is None:
    maxiter = d * 200
  maxiter = np.inf if maxiter is None else maxiter
  maxfun = np.inf if maxfun is None else maxfun
  maxgrad = np.inf if maxgrad is None else maxgrad
  f_0, g_0 = value_and_grad(fun)(x0)
  state = LBFGSResults(
      converged=jnp.asarray(False), failed=jnp.asarray(False), k=0, nfev=1,
      ngev=1, x_k=x0, f_k=f_0, g_k=g_0, s_history=jnp.zeros((maxcor, d), dtype=dtype),
      y_history=jnp.zeros((maxcor, d), dtype=dtype),
      rho_history=jnp.zeros((maxcor,), dtype=dtype), gamma=jnp.asarray(1., dtype=dtype),
      status=0, ls_status=0)

  def body_fun(s):
    p_k = _two_loop_recursion(s)
    ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
    s_k = jnp.asarray(ls.a_k).astype(get_aval(p_k).dtype) * p_k
    y_k = ls.g_k - s.g_k
    rho_inv = jnp.real(_dot(y_k, s_k))
    rho_k = jnp.reciprocal(rho_inv).astype(get_aval(y_k).dtype)
    gamma = rho_inv / jnp.real(_dot(jnp.conj(y_k), y_k))
    # The last condition that holds names the status.
    status = jnp.where(s.f_k - ls.f_k < ftol, 4, 0)
    status = jnp.where(s.ngev >= maxgrad, 3, status)
    status = jnp.where(s.nfev >= maxfun, 2, status)
    status = jnp.where(s.k >= maxiter, 1, status)
    status = jnp.where(ls.failed, 5, status)
    converged = jnp_linalg.norm(ls.g_k, ord=norm) < gtol
    return s._replace(
        converged=converged, failed=(status > 0) & ~converged, k=s.k + 1,
        nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=(s.x_k + s_k).astype(dtype),
        f_k=ls.f_k.astype(get_aval(s.f_k).dtype), g_k=ls.g_k.astype(get_aval(s.g_k).dtype),
        s_history=_push(s.s_history, s_k), y_history=_push(s.y_history, y_k),
        rho_history=_push(s.rho_history, rho_k), gamma=gamma.astype(get_aval(s.g_k).dtype),
        status=jnp.where(converged, 0, status),
        ls_status=ls.status)

  return lax.while_loop(lambda s: ~s.converged & ~s.failed, body_fun, state)


def _push(history, new):
  """Drop the oldest entry (the first) and append ``new`` last."""
  return jnp.concatenate([history[1:], new[None].astype(get_aval(history).dtype)], axis=0)


def _two_loop_recursion(s):
  """``-H g`` for the L-BFGS inverse Hessian of the stored (most recent last) pairs."""
  dtype = get_aval(s.rho_history).dtype
  size = get_aval(s.rho_history).shape[0]
  used = jnp.where(s.k < size, s.k, size)

  def newest_first(j, carry):
    q, alphas = carry
    i = size - 1 - j
    a_i = s.rho_history[i] * _dot(jnp.conj(s.s_history[i]), q).real.astype(dtype)
    return q - a_i * jnp.conj(s.y_history[i]), alphas.at[i].set(a_i)

  q, alphas = lax.fori_loop(0, used, newest_first,
                            (-jnp.conj(s.g_k), jnp.zeros_like(s.rho_history)))
  q = s.gamma * q

  def oldest_first(j, q):
    i = size - used + j
    b_i = s.rho_history[i] * _dot(s.y_history[i], q).real.astype(dtype)
    return q + (alphas[i] - b_i) * s.s_history[i]

  return lax.fori_loop(0, used, oldest_first, q)
