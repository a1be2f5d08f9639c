"""The BFGS quasi-Newton minimizer (JAX's ``minimize_bfgs``): a dense inverse-Hessian
estimate, updated after every strong-Wolfe line search, in one ``lax.while_loop``."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox.autodiff import value_and_grad
from hlox.core.tracer import get_aval
from hlox.numpy import linalg as jnp_linalg
from hlox.scipy.optimize._line_search import line_search
import hlox.numpy as jnp

__all__ = ["BFGSResults", "minimize_bfgs"]


class BFGSResults(NamedTuple):
  """The state (and result) of :func:`minimize_bfgs`.

  ``converged``: the gradient's norm fell below ``gtol``; ``failed``: a line search failed;
  ``k``: iterations; ``nfev``/``ngev``/``nhev``: function, gradient and Hessian evaluations;
  ``x_k``, ``f_k``, ``g_k``: the point, value and gradient; ``H_k``: the inverse-Hessian
  estimate; ``status``: 0 converged, 1 ``maxiter`` reached, ``2 + line search status`` when
  a search failed, -1 otherwise; ``line_search_status``: the last search's status.
  """
  converged: object
  failed: object
  k: object
  nfev: object
  ngev: object
  nhev: object
  x_k: object
  f_k: object
  g_k: object
  H_k: object
  old_old_fval: object
  status: object
  line_search_status: object


def _mm(a, b):
  return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  """Minimize ``fun`` from the 1-d ``x0`` by BFGS; stops when ``norm(grad, ord=norm) <
  gtol`` (or after ``maxiter`` steps, default ``200 * x0.size``)."""
  if maxiter is None:
    maxiter = int(np.size(x0)) * 200
  d = get_aval(x0).shape[0]
  dtype = get_aval(x0).dtype
  f_0, g_0 = value_and_grad(fun)(x0)
  state = BFGSResults(
      converged=jnp_linalg.norm(g_0, ord=norm) < gtol, failed=jnp.asarray(False), k=0,
      nfev=1, ngev=1, nhev=0, x_k=x0, f_k=f_0, g_k=g_0,
      H_k=jnp.eye(d, dtype=dtype),
      # As SciPy: a guess at the previous value that makes the first trial step ~1 / |g|.
      old_old_fval=f_0 + jnp_linalg.norm(g_0) / 2, status=0, line_search_status=0)

  def cond_fun(s):
    return ~s.converged & ~s.failed & (s.k < maxiter)

  def body_fun(s):
    p_k = -_mm(s.H_k, s.g_k)
    ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                     gfk=s.g_k, maxiter=line_search_maxiter)
    s = s._replace(nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, failed=ls.failed,
                   line_search_status=ls.status)
    s_k = ls.a_k * p_k
    y_k = ls.g_k - s.g_k
    rho_k = jnp.reciprocal(_mm(y_k, s_k))
    # H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T; skipped when y^T s = 0.
    w = jnp.eye(d, dtype=get_aval(rho_k).dtype) - rho_k * (s_k[:, None] * y_k[None, :])
    h_next = _mm(_mm(w, s.H_k), w.T) + rho_k * s_k[:, None] * s_k[None, :]
    h_next = jnp.where(jnp.isfinite(rho_k), h_next, s.H_k)
    return s._replace(converged=jnp_linalg.norm(ls.g_k, ord=norm) < gtol, k=s.k + 1,
                      x_k=s.x_k + s_k, f_k=ls.f_k, g_k=ls.g_k, H_k=h_next,
                      old_old_fval=s.f_k)

  s = lax.while_loop(cond_fun, body_fun, state)
  status = jnp.where(s.converged, 0, jnp.where(s.k == maxiter, 1,
                                               jnp.where(s.failed, 2 + s.line_search_status,
                                                         -1)))
  return s._replace(status=status)
