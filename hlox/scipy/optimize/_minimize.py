"""``minimize``: SciPy's interface to the minimizers (JAX's ``jax.scipy.optimize.minimize``)."""
from __future__ import annotations

from typing import NamedTuple

from hlox.core.tracer import get_aval
from hlox.numpy import util
from hlox.scipy.optimize._bfgs import minimize_bfgs
from hlox.scipy.optimize._lbfgs import minimize_lbfgs
import hlox.numpy as jnp

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
  """The result of :func:`minimize`.

  ``x``: the solution; ``success``: converged without a failed line search; ``status``: the
  method's code (BFGS: 0 converged, 1 ``maxiter`` reached, 2 + the line search's status when
  one failed); ``fun``, ``jac``: value and gradient at ``x``; ``hess_inv``: the BFGS
  inverse-Hessian estimate (``None`` for L-BFGS); ``nfev``, ``njev``: function and gradient
  evaluations; ``nit``: iterations.
  """
  x: object
  success: object
  status: object
  fun: object
  jac: object
  hess_inv: object
  nfev: object
  njev: object
  nit: object


_LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
  """Minimize the scalar function ``fun(x, *args)`` from the 1-d ``x0``.

  ``method`` is ``"BFGS"`` or ``"l-bfgs-experimental-do-not-rely-on-this"``; ``options``
  are the method's keywords (BFGS: ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``).
  ``tol`` is accepted and unused, as in JAX (pass ``gtol`` in ``options``). Runs under
  ``jit`` and ``vmap``; returns :class:`OptimizeResults`.
  """
  del tol
  options = {} if options is None else options
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to hlox.scipy.optimize.minimize must be a tuple, got "
                    f"{args}")
  util.check_arraylike("minimize", x0)
  x0, = util.promote_dtypes_inexact(jnp.asarray(x0))
  if get_aval(x0).ndim != 1:
    raise ValueError(f"minimize: x0 must be a 1-dimensional array, got shape "
                     f"{get_aval(x0).shape}")

  def fun_with_args(x):
    return fun(x, *args)

  kind = method.lower()
  if kind == "bfgs":
    r = minimize_bfgs(fun_with_args, x0, **options)
    hess_inv = r.H_k
  elif kind == _LBFGS:
    r = minimize_lbfgs(fun_with_args, x0, **options)
    hess_inv = None
  else:
    raise ValueError(f"Method {method} not recognized")
  return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                         fun=r.f_k, jac=r.g_k, hess_inv=hess_inv, nfev=r.nfev, njev=r.ngev,
                         nit=r.k)
