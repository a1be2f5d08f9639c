"""``hlox.experimental.ode``: ``odeint``, JAX's adaptive-step ODE solver
(``jax.experimental.ode``).

The solver is the Dormand–Prince 5(4) Runge–Kutta pair (Dormand and Prince, 1980) with
error-controlled steps, an initial step chosen as in Hairer, Nørsett and Wanner (Solving ODEs
I, II.4), and dense output at the requested times from a quartic fitted through each accepted
step (Shampine, 1986). It runs as one ``lax.scan`` over the output times with a
``lax.while_loop`` of steps inside, so it works under ``jit`` and ``vmap``.

Reverse-mode derivatives come from the adjoint method (Chen et al. 2018, "Neural ODEs",
appendix C) through ``custom_vjp``: the state, its cotangent and the cotangents of ``t`` and
of the extra arguments are integrated backwards in time by ``odeint`` itself. Forward mode is
therefore not available (a ``TypeError``, as in JAX). The arithmetic follows JAX's solver
step for step, so results agree with JAX's to float rounding.
"""
import operator as op
import weakref
from collections.abc import Callable
from functools import partial

from hlox import custom_derivatives
from hlox import lax
from hlox import numpy as jnp
from hlox.api import jit, vmap
from hlox.autodiff import vjp
from hlox.config import default_matmul_precision, enable_x64
from hlox.core.tracer import current_trace, eval_trace, get_aval
from hlox.flatten_util import ravel_pytree
from hlox.numpy.util import promote_dtypes_inexact
from hlox._tree_transform import tree_flatten, tree_leaves, tree_map

__all__ = ["odeint"]

# --- the Dormand–Prince 5(4) tableau -------------------------------------------------------

# Nodes c_2..c_7 (c_1 = 0); the 7th stage is at the end of the step (FSAL).
_NODES = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0)
# Row i gives the weights of stages 1..7 in stage i+2's input.
_STAGE_WEIGHTS = (
    (1 / 5, 0, 0, 0, 0, 0, 0),
    (3 / 40, 9 / 40, 0, 0, 0, 0, 0),
    (44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0),
    (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0),
)
# The 5th-order solution's weights (the last row again: the pair is FSAL).
_SOLUTION_WEIGHTS = (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0)
# 5th-order minus embedded 4th-order weights: the local error estimate.
_ERROR_WEIGHTS = (35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085,
                  125 / 192 - 451 / 720, -2187 / 6784 - -12231 / 42400,
                  11 / 84 - 649 / 6300, -1. / 60.)
# Weights of the stages in the solution at the step's midpoint (Shampine's dense output),
# halved because the step is ``dt`` and the point ``dt / 2``.
_MIDPOINT_WEIGHTS = tuple(w / 2 for w in (
    6025192743 / 30085553152, 0, 51252292925 / 65400821598, -2691868925 / 45128329728,
    187940372067 / 1594534317056, -1776094331 / 19743644256, 11237099 / 235043384))


# --- one step and its helpers (public in JAX's module too) --------------------------------

def ravel_first_arg(f: Callable, unravel, debug_info=None):
  """``f(y, *args)`` as a function of the flat vector of ``y`` returning a flat vector:
  ``g(y_flat, *args) = ravel(f(unravel(y_flat), *args))``."""
  def flat_f(y_flat, *args):
    return ravel_pytree(f(unravel(y_flat), *args))[0]
  return flat_f


def abs2(x):
  """``|x|**2``, real for complex ``x``."""
  if jnp.iscomplexobj(x):
    return x.real ** 2 + x.imag ** 2
  return x ** 2


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """Coefficients ``(a, b, c, d, e)`` of the quartic ``p(s) = a s^4 + ... + e`` on
  ``s in [0, 1]`` with ``p(0) = y0``, ``p(1) = y1``, ``p(1/2) = y_mid`` and end slopes
  ``dt * dy0``, ``dt * dy1``."""
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def interp_fit_dopri(y0, y1, k, dt):
  """The dense-output quartic of one Dormand–Prince step from ``y0`` to ``y1`` with stages
  ``k``, as an array of its 5 coefficients (highest power first, for ``polyval``)."""
  mid_weights = jnp.array(_MIDPOINT_WEIGHTS, dtype=y0.dtype)
  y_mid = y0 + dt.astype(y0.dtype) * jnp.dot(mid_weights, k)
  return jnp.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """A first step size for a method of ``order`` (Hairer, Nørsett and Wanner, II.4): one
  explicit Euler probe of size ``h0`` estimates the second derivative."""
  y0, f0 = promote_dtypes_inexact(y0, f0)
  dtype = y0.dtype
  scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
  d0 = jnp.linalg.norm(y0 / scale)
  d1 = jnp.linalg.norm(f0 / scale)
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
  d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
  h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15),
                 jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
  return jnp.minimum(100. * h0, h1)


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand–Prince step of size ``dt`` from ``(t0, y0)`` with ``f0 = func(y0, t0)``.
  Returns ``(y1, f1, y1_error, k)``: the 5th-order solution, ``func`` at it, the local error
  estimate and the 7 stages (rows of ``k``)."""
  nodes = jnp.array(_NODES, dtype=dt.dtype)
  stage_weights = jnp.array(_STAGE_WEIGHTS, dtype=f0.dtype)
  solution_weights = jnp.array(_SOLUTION_WEIGHTS, dtype=f0.dtype)
  error_weights = jnp.array(_ERROR_WEIGHTS, dtype=f0.dtype)
  dt_y = dt.astype(f0.dtype)

  def stage(i, k):
    t_i = t0 + dt * nodes[i - 1]
    y_i = y0 + dt_y * jnp.dot(stage_weights[i - 1, :], k)
    return k.at[i, :].set(func(y_i, t_i))

  k = jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = lax.fori_loop(1, 7, stage, k)
  y1 = dt_y * jnp.dot(solution_weights, k) + y0
  y1_error = dt_y * jnp.dot(error_weights, k)
  return y1, k[-1], y1_error, k


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """The root-mean-square of the error estimate over the mixed tolerance
  ``atol + rtol * max(|y0|, |y1|)``; a step is accepted when this is at most 1."""
  tolerance = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  ratio = error_estimate / tolerance.astype(error_estimate.dtype)
  return jnp.sqrt(jnp.mean(abs2(ratio)))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                      order=5.0):
  """The next step size from the last one and its error ratio: scaled by
  ``safety * ratio**(-1/order)``, at most ``ifactor`` times larger, and (after a rejected
  step) at most ``1/dfactor`` times smaller."""
  min_factor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = jnp.minimum(ifactor,
                       jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, min_factor))
  return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


# --- the solver ----------------------------------------------------------------------------

def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=jnp.inf, hmax=jnp.inf):
  """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0`` with adaptive Dormand–Prince
  steps, returning ``y`` at every time in ``t``.

  Args:
    func: the time derivative, ``func(y, t, *args)``, returning the structure of ``y0``.
    y0: the initial state: an array or a pytree of arrays.
    t: a 1-d float array of strictly increasing times (``t[0]`` is the initial time).
    *args: extra arguments of ``func``: arrays, scalars, or pytrees of them. Gradients flow
      to them (and to ``y0`` and ``t``) in reverse mode.
    rtol: relative local error tolerance.
    atol: absolute local error tolerance.
    mxstep: the most steps taken between two consecutive output times.
    hmax: the largest step size allowed.

  Returns:
    The solution at the times ``t``: the structure of ``y0`` with a new leading axis of
    length ``len(t)``.
  """
  for arg in tree_leaves(args):
    try:
      get_aval(arg)
    except TypeError:
      raise TypeError("The contents of odeint *args must be arrays or scalars, but got "
                      f"{arg}.") from None
  if not jnp.issubdtype(t.dtype, jnp.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, hoisted = _closure_converted(func, y0, t[0], args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *hoisted)


# func -> {(argument structure and types, x64): its closure-converted form}, for calls made
# outside any transformation (where nothing can be hoisted): the converted function is
# ``_odeint_wrapper``'s static argument, so reusing it lets repeated calls hit jit's cache
# instead of tracing again.
_converted = weakref.WeakKeyDictionary()


def _closure_converted(func, y0, t0, args):
  """``closure_convert(func, y0, t0, *args)``: values ``func`` closes over that carry
  derivatives become explicit arguments, so that the custom VJP differentiates with respect
  to them too."""
  if current_trace() is not eval_trace:
    return custom_derivatives.closure_convert(func, y0, t0, *args)
  leaves, tree = tree_flatten((y0, t0, args))
  key = (tree, tuple(get_aval(x) for x in leaves), enable_x64.value)
  try:
    per_func = _converted.setdefault(func, {})
  except TypeError:  # not weakly referenceable: no reuse
    return custom_derivatives.closure_convert(func, y0, t0, *args)
  if key not in per_func:
    converted, hoisted = custom_derivatives.closure_convert(func, y0, t0, *args)
    if hoisted:  # a tracer leaked into func's closure: let closure_convert deal with it
      return converted, hoisted
    per_func[key] = converted
  return per_func[key], []


@partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  # The solver works on one flat state vector; results are unflattened per time.
  with default_matmul_precision("highest"):
    y0_flat, unravel = ravel_pytree(y0)
    flat_func = ravel_first_arg(func, unravel)
    ys_flat = _odeint(flat_func, rtol, atol, mxstep, hmax, y0_flat, ts, *args)
    return vmap(unravel)(ys_flat)


def _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  """The forward solve on a flat state ``y0`` (shape ``(n,)``): ``ys`` of shape
  ``(len(ts), n)``."""
  with default_matmul_precision("highest"):
    def f(y, t):
      return func(y, t, *args)

    def to_next_output(carry, target_t):
      # Step until the integration time passes ``target_t`` (or the step budget is spent,
      # or the step size collapses to 0), then read y(target_t) off the last quartic.
      def keep_stepping(state):
        n_steps, _, _, t, dt, _, _ = state
        return (t < target_t) & (n_steps < mxstep) & (dt > 0)

      def try_step(state):
        n_steps, y, f_y, t, dt, last_t, coeffs = state
        next_y, next_f, error, k = runge_kutta_step(f, y, f_y, t, dt)
        ratio = mean_error_ratio(error, rtol, atol, y, next_y)
        next_coeffs = interp_fit_dopri(y, next_y, k, dt)
        new_dt = jnp.clip(optimal_step_size(dt, ratio), min=0., max=hmax)
        accepted = [n_steps + 1, next_y, next_f, t + dt, new_dt, t, next_coeffs]
        rejected = [n_steps + 1, y, f_y, t, new_dt, last_t, coeffs]
        accept = ratio <= 1.
        return [jnp.where(accept, a, r) for a, r in zip(accepted, rejected)]

      _, *carry = lax.while_loop(keep_stepping, try_step, [0] + carry)
      _, _, t, _, last_t, coeffs = carry
      s = (target_t - last_t) / (t - last_t)
      return carry, jnp.polyval(coeffs, s.astype(coeffs.dtype))

    f0 = f(y0, ts[0])
    dt = jnp.clip(initial_step_size(f, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    # Until a step is taken the "quartic" is the constant y0.
    coeffs = jnp.array([y0] * 5)
    _, ys = lax.scan(to_next_output, [y0, f0, ts[0], dt, ts[0], coeffs], ts[1:])
    return jnp.concatenate((y0[None], ys))


_odeint = custom_derivatives.custom_vjp(_integrate, nondiff_argnums=(0, 1, 2, 3, 4))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, residuals, g):
  """The adjoint method: between consecutive output times (last to first), integrate the
  state backwards together with its cotangent ``a`` (``da/dt = -a df/dy``), the cotangent of
  the start time and the cotangents of ``args`` (``d/dt = -a df/dargs``); each output time
  adds its own cotangent ``g[i]`` to ``a`` and ``<f(y_i), g[i]>`` to its time's cotangent."""
  ys, ts, args = residuals

  with default_matmul_precision("highest"):
    def augmented(state, minus_t, *args):
      # Integrated in negated time (so times increase), hence the signs.
      y, y_bar, *_ = state
      y_dot, pullback = vjp(func, y, -minus_t, *args)
      return (-y_dot, *pullback(y_bar))

    def to_previous_output(carry, i):
      y_bar, t0_bar, args_bar = carry
      # Time is real even when the state is complex.
      t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real
      t0_bar = t0_bar - t_bar
      _, y_bar, t0_bar, args_bar = odeint(
          augmented, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]),
          *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
      y_bar, t0_bar, args_bar = tree_map(op.itemgetter(1), (y_bar, t0_bar, args_bar))
      return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], 0., tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), ts_bar_reversed = lax.scan(
        to_previous_output, init, jnp.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.array([t0_bar]), ts_bar_reversed[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
