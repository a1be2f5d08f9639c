"""An inexact line search that finds a step satisfying the strong Wolfe conditions
(Nocedal & Wright, *Numerical Optimization*, 1999, algorithms 3.5 and 3.6), with JAX's
semantics (``jax._src.scipy.optimize.line_search``).

Both loops are ``lax.while_loop``s over a state of scalars, so the search runs under ``jit``
and ``vmap``; when one search of a batch has stopped, the others' iterations leave its state
unchanged (every update is a ``where``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox import lax
from hlox.autodiff import value_and_grad
from hlox.core.tracer import get_aval
from hlox.numpy import util
import hlox.numpy as jnp

__all__ = ["line_search", "LineSearchResults"]


def _dot(a, b):
  return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _cubicmin(a, fa, fpa, b, fb, c, fc):
  """The minimizer of the cubic through ``(a, fa)``, ``(b, fb)``, ``(c, fc)`` with slope
  ``fpa`` at ``a`` (NaN when it has none)."""
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  rb, rc = fb - fa - fpa * db, fc - fa - fpa * dc
  a3 = (dc ** 2 * rb - db ** 2 * rc) / denom
  b2 = (-dc ** 3 * rb + db ** 3 * rc) / denom
  return a + (-b2 + jnp.sqrt(b2 * b2 - 3. * a3 * fpa)) / (3. * a3)


def _quadmin(a, fa, fpa, b, fb):
  """The minimizer of the parabola through ``(a, fa)`` (slope ``fpa``) and ``(b, fb)``."""
  db = b - a
  curvature = (fb - fa - fpa * db) / (db ** 2)
  return a - fpa / (2. * curvature)


def _where_fields(pred, state, **new):
  """``state`` with each named field replaced by ``new[name]`` where ``pred`` holds."""
  return state._replace(**{k: jnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


class _ZoomState(NamedTuple):
  done: object
  failed: object
  j: object
  a_lo: object
  phi_lo: object
  dphi_lo: object
  a_hi: object
  phi_hi: object
  dphi_hi: object
  a_rec: object
  phi_rec: object
  a_star: object
  phi_star: object
  dphi_star: object
  g_star: object
  nfev: object
  ngev: object


def _zoom(phi_dphi_g, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0,
          skip):
  """Shrink the bracket ``[a_lo, a_hi]`` (by cubic, then quadratic interpolation, then
  bisection) until a point satisfies both Wolfe conditions; does nothing when ``skip``."""
  dtype = get_aval(a_lo).dtype
  false = jnp.asarray(False)
  zero_i = 0  # counters are default (weakly typed) ints, as in JAX
  state = _ZoomState(
      done=false, failed=false, j=zero_i, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo,
      a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.,
      phi_rec=(phi_lo + phi_hi) / 2., a_star=jnp.asarray(1., dtype=dtype), phi_star=phi_lo,
      dphi_star=dphi_lo, g_star=g_0, nfev=zero_i, ngev=zero_i)
  # Bracket widths below this count as a failed search.
  threshold = 1e-5 if np.finfo(dtype).bits < 64 else 1e-10

  def body(s):
    width = s.a_hi - s.a_lo
    lo, hi = jnp.minimum(s.a_hi, s.a_lo), jnp.maximum(s.a_hi, s.a_lo)
    s = s._replace(failed=s.failed | (width <= threshold))
    a_cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
    use_cubic = (s.j > 0) & (a_cubic > lo + 0.2 * width) & (a_cubic < hi - 0.2 * width)
    a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
    use_quad = ~use_cubic & (a_quad > lo + 0.1 * width) & (a_quad < hi - 0.1 * width)
    a_j = jnp.where(use_cubic, a_cubic, s.a_rec)
    a_j = jnp.where(use_quad, a_quad, a_j)
    a_j = jnp.where(~use_cubic & ~use_quad, (s.a_lo + s.a_hi) / 2., a_j)
    phi_j, dphi_j, g_j = phi_dphi_g(a_j)
    phi_j = phi_j.astype(get_aval(s.phi_lo).dtype)
    dphi_j = dphi_j.astype(get_aval(s.dphi_lo).dtype)
    g_j = g_j.astype(get_aval(s.g_star).dtype)
    s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)

    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
    star_to_j = wolfe_two(dphi_j) & ~hi_to_j
    hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.) & ~hi_to_j & ~star_to_j
    lo_to_j = ~hi_to_j & ~star_to_j
    s = _where_fields(hi_to_j, s, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi,
                      phi_rec=s.phi_hi)
    s = _where_fields(star_to_j, s._replace(done=star_to_j | s.done), a_star=a_j,
                      phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
    s = _where_fields(hi_to_lo, s, a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo,
                      a_rec=s.a_hi, phi_rec=s.phi_hi)
    s = _where_fields(lo_to_j & ~hi_to_lo, s, a_rec=s.a_lo, phi_rec=s.phi_lo)
    s = _where_fields(lo_to_j, s, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
    j = s.j + 1
    return s._replace(j=j, failed=s.failed | (j >= 30))

  return lax.while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, state)


class _SearchState(NamedTuple):
  done: object
  failed: object
  i: object
  a_i1: object
  phi_i1: object
  dphi_i1: object
  nfev: object
  ngev: object
  a_star: object
  phi_star: object
  dphi_star: object
  g_star: object


class LineSearchResults(NamedTuple):
  """What :func:`line_search` found.

  ``failed``: no step met the strong Wolfe conditions; ``nit``: iterations; ``nfev``,
  ``ngev``: function and gradient evaluations; ``k``: the final iteration counter; ``a_k``:
  the step; ``f_k``, ``g_k``: value and gradient there; ``status``: 0 (passed), 1 (zoom
  failed) or 3 (``maxiter`` reached).
  """
  failed: object
  nit: object
  nfev: object
  ngev: object
  k: object
  a_k: object
  f_k: object
  g_k: object
  status: object


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
  """A step ``a`` along the descent direction ``pk`` from ``xk`` with
  ``f(xk + a pk) <= f(xk) + c1 a f'(xk) pk`` and ``|f'(xk + a pk) pk| <= c2 |f'(xk) pk|``.

  ``old_fval`` and ``gfk`` (the value and gradient at ``xk``) save an evaluation;
  ``old_old_fval`` (the previous iterate's value) picks the first trial step, as SciPy
  does. Returns :class:`LineSearchResults`.
  """
  xk, pk = util.promote_dtypes_inexact(jnp.asarray(xk), jnp.asarray(pk))
  dtype = get_aval(pk).dtype
  real = np.finfo(dtype).dtype

  def phi_dphi_g(t):
    t = jnp.asarray(t, dtype=dtype)
    phi, g = value_and_grad(f)(xk + t * pk)
    return phi, jnp.real(_dot(g, pk)), g

  evaluated = old_fval is None or gfk is None
  if evaluated:
    phi_0, dphi_0, gfk = phi_dphi_g(0)
  else:
    phi_0, dphi_0 = jnp.asarray(old_fval), jnp.real(_dot(gfk, pk))
  if old_old_fval is not None:
    candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
    start = jnp.where(candidate > 1, 1.0, candidate)
  else:
    start = 1.0

  def wolfe_one(a_i, phi_i):  # sufficient decrease fails
    return phi_i > phi_0 + c1 * a_i * dphi_0

  def wolfe_two(dphi_i):  # the curvature condition holds
    return jnp.abs(dphi_i) <= -c2 * dphi_0

  count = 1 if evaluated else 0
  false = jnp.asarray(False)
  zero = jnp.asarray(0., dtype=real)
  state = _SearchState(done=false, failed=false, i=1, a_i1=zero,
                       phi_i1=phi_0, dphi_i1=dphi_0, nfev=count, ngev=count, a_star=zero,
                       phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

  def body(s):
    a_i = jnp.where(s.i == 1, start, s.a_i1 * 2.).astype(real)
    phi_i, dphi_i, g_i = phi_dphi_g(a_i)
    s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
    # Too long a step (or no longer decreasing): the minimum is bracketed behind it.
    to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
    to_i = wolfe_two(dphi_i) & ~to_zoom1
    # Going up again: bracketed, with the bracket reversed.
    to_zoom2 = (dphi_i >= 0.) & ~to_zoom1 & ~to_i
    zoom1 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1, a_i, phi_i,
                  dphi_i, gfk, ~to_zoom1)
    zoom2 = _zoom(phi_dphi_g, wolfe_one, wolfe_two, a_i, phi_i, dphi_i, s.a_i1, s.phi_i1,
                  s.dphi_i1, gfk, ~to_zoom2)
    s = s._replace(nfev=s.nfev + zoom1.nfev + zoom2.nfev,
                   ngev=s.ngev + zoom1.ngev + zoom2.ngev)
    s = _where_fields(to_zoom1, s._replace(done=to_zoom1 | s.done,
                                           failed=(to_zoom1 & zoom1.failed) | s.failed),
                      a_star=zoom1.a_star, phi_star=zoom1.phi_star,
                      dphi_star=zoom1.dphi_star, g_star=zoom1.g_star)
    s = _where_fields(to_i, s._replace(done=to_i | s.done), a_star=a_i, phi_star=phi_i,
                      dphi_star=dphi_i, g_star=g_i)
    s = _where_fields(to_zoom2, s._replace(done=to_zoom2 | s.done,
                                           failed=(to_zoom2 & zoom2.failed) | s.failed),
                      a_star=zoom2.a_star, phi_star=zoom2.phi_star,
                      dphi_star=zoom2.dphi_star, g_star=zoom2.g_star)
    return s._replace(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

  s = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
  status = jnp.where(s.failed, 1, jnp.where(s.i > maxiter, 3, 0))
  a_k = s.a_star
  if np.finfo(real).bits != 64:
    # In single precision a vanishing step is kept away from zero, as in JAX.
    a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
  return LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nfev, ngev=s.ngev,
                           k=s.i, a_k=a_k, f_k=s.phi_star, g_k=s.g_star, status=status)
