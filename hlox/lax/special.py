"""Special functions that StableHLO has no single op for (JAX's ``lax`` names).

- ``igamma(a, x)`` and ``igammac(a, x)``: the regularized incomplete gamma functions
  ``P(a, x)`` and ``Q(a, x) = 1 - P(a, x)``;
- ``igamma_grad_a(a, x)``: ``dP(a, x) / da``;
- ``random_gamma_grad(a, x)``: ``dx / da`` for a Gamma(a, 1) sample ``x`` held at a fixed
  quantile (implicit reparameterization: ``-(dP/da) / (dP/dx)``), used by
  ``hlox.random.gamma``'s gradient;
- ``betainc(a, b, x)``: the regularized incomplete beta function ``I_x(a, b)``;
- ``zeta(x, q)`` (Hurwitz), ``bessel_i0e(x)``, ``bessel_i1e(x)``.

The incomplete gamma family is lowered (``lower_fun``) to a ``while_loop`` over the whole
array: a power series for ``P`` where ``x < max(a, 1)`` and a continued fraction for ``Q``
elsewhere (the split Cephes uses, where each converges fast), each optionally carrying its
derivative in ``a`` beside its value. Lanes stop changing once they converge; the loop runs
until every lane has. ``float16``/``bfloat16`` are computed in ``float32``.
"""
from __future__ import annotations

import math

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, xla
from hlox.lax.control_flow import while_loop
from hlox.lax.elementwise import (
    _operands, abs, add, bitwise_and, bitwise_not, bitwise_or, convert_element_type,
    digamma, div, eq, exp, ge, gt, le, lgamma, log, log1p, lt, mul, ne, neg, rem, select,
    sign, sqrt, sub)
from hlox.lax.reductions import reduce_or
from hlox.lax.shapes import broadcast_in_dim, full_like
from hlox.lax.base import defbroadcasting
from hlox.lax.utils import binop, defvectorized, naryop, nary_lowering, real_float, unop

from jaxlib.mlir.dialects import chlo

__all__ = [
    "igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc", "zeta",
    "bessel_i0e", "bessel_i1e",
    "igamma_p", "igammac_p", "igamma_grad_a_p", "random_gamma_grad_p",
    "regularized_incomplete_beta_p", "zeta_p", "bessel_i0e_p", "bessel_i1e_p",
]


# --- helpers for the lowered compositions ------------------------------------------------

def _c(x, value):
  """``value`` as a strong constant of ``x``'s dtype."""
  return np.array(value, get_aval(x).dtype)


def _isnan(x):
  return ne(x, x)


def _any_of(*preds):
  out = preds[0]
  for p in preds[1:]:
    out = bitwise_or(out, p)
  return out


def _any_lane(pred):
  """Scalar: is ``pred`` true anywhere."""
  return reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _upcast_and_broadcast(impl):
  """``impl`` on operands broadcast to the common shape, as strong (non-weak) values, in
  float32 for 16-bit floats (too few digits for the series and their stopping tests)."""
  def wrapped(*args):
    shapes = [get_aval(a).shape for a in args]
    shape = max(shapes, key=len)
    if shape:
      shape = tuple(max(s[i] for s in shapes if s) for i in range(len(shape)))
    dtype = get_aval(args[0]).dtype
    work = np.dtype(np.float32) if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
    xs = []
    for x in args:
      x = convert_element_type(x, work)  # also drops a weak type
      if get_aval(x).shape != shape:
        ndim = get_aval(x).ndim
        x = broadcast_in_dim(x, shape, tuple(range(ndim)) if ndim else ())
      xs.append(x)
    out = impl(*xs)
    return out if work == dtype else convert_element_type(out, dtype)
  return wrapped


def _eps(x):
  return float(np.finfo(get_aval(x).dtype).eps)


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
# Stirling series of lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2): B_2k / (2k (2k-1)).
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360)
_STIRLING_FROM = 20.0  # for a >= this the series above is exact to double rounding


def _log_prefactor(a, x):
  """``log(x**a exp(-x) / Gamma(a))``.

  Computed directly it loses ``eps * a log x`` to cancellation (a relative error of 4e-4
  in float32 at a = 1000). For large ``a`` it is rewritten around ``x = a`` as
  ``a (log1p(u) - u) + log(a) / 2 - log(2 pi) / 2 - stirling(a)`` with ``u = (x - a) / a``,
  whose terms are all small near the mode."""
  direct = sub(sub(mul(a, log(x)), x), lgamma(a))
  big = ge(a, _c(a, _STIRLING_FROM))
  a_big = select(big, a, full_like(a, _STIRLING_FROM))  # keep the unused lanes finite
  u = div(sub(x, a_big), a_big)
  inv = div(_c(a, 1), a_big)
  inv2 = mul(inv, inv)
  series = full_like(a, 0)
  for coef in reversed(_STIRLING):
    series = add(mul(series, inv2), _c(a, coef))
  series = mul(series, inv)
  around_mode = add(mul(a_big, sub(log1p(u), u)),
                    sub(mul(_c(a, 0.5), log(a_big)), add(_c(a, _LOG_SQRT_2PI), series)))
  return select(big, around_mode, direct)


# Which quantity the series / continued fraction finish into.
_VALUE, _GRAD_A, _SAMPLE_GRAD = "value", "grad_a", "sample_grad"
_MAX_SERIES_TERMS = 100_000  # only reached for a beyond ~1e8; a guard, not a tolerance
_MAX_FRACTION_TERMS = 5_000


def _p_series(a, x, log_ax, active, mode):
  """``P(a, x) = x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a+1)...(a+n))`` (value mode),
  or the derivative in ``a`` of it (grad modes), for the ``active`` lanes."""
  eps = _eps(a)
  want_grad = mode != _VALUE

  def cond(state):
    return state[0]

  def body(state):
    active, n, r, term, total, dterm, dtotal = state
    r1 = add(r, _c(r, 1))
    ratio = div(x, r1)
    # d/da of term_n = term_{n-1} * x / (a + n): the product rule with d(a+n)/da = 1.
    dterm1 = sub(mul(dterm, ratio), div(mul(term, ratio), r1))
    term1 = mul(term, ratio)
    total1 = add(total, term1)
    dtotal1 = add(dtotal, dterm1)
    going = gt(term1, mul(_c(total1, eps), total1))
    if want_grad:
      going = bitwise_or(going, gt(abs(dterm1), mul(_c(total1, eps), abs(dtotal1))))
    n1 = add(n, np.int32(1))
    going = bitwise_and(bitwise_and(active, going), lt(n1, np.int32(_MAX_SERIES_TERMS)))
    keep = lambda new, old: select(active, new, old)
    return (going, n1, keep(r1, r), keep(term1, term), keep(total1, total),
            keep(dterm1, dterm), keep(dtotal1, dtotal))

  one, zero = full_like(a, 1), full_like(a, 0)
  init = (active, np.int32(0), a, one, one, zero, zero)
  _, _, _, _, total, _, dtotal = while_loop(lambda s: _any_lane(cond(s)), body, init)
  if mode == _VALUE:
    return div(mul(total, exp(log_ax)), a)
  # d log(x**a e**-x / Gamma(a + 1)) / da
  dlog = sub(log(x), digamma(add(a, _c(a, 1))))
  inner = add(mul(total, dlog), dtotal)
  if mode == _GRAD_A:
    return div(mul(exp(log_ax), inner), a)
  # dx/da = -(dP/da) / (dP/dx) with dP/dx = x**(a-1) e**-x / Gamma(a): the prefactor cancels.
  return neg(div(mul(inner, x), a))


def _q_fraction(a, x, log_ax, active, mode):
  """``Q(a, x) = x**a e**-x / Gamma(a) * K`` with ``K`` the continued fraction for the upper
  incomplete gamma function (Legendre's, in Cephes' even-contracted form), evaluated by the
  three-term recurrences of its convergents ``p_k / q_k`` (rescaled when they grow) for the
  ``active`` lanes; in the grad modes the recurrences are differentiated in ``a`` alongside."""
  eps = _eps(a)
  big = 1.0 / eps
  want_grad = mode != _VALUE

  def body(state):
    (active, k, ans, dans, p1, q1, p2, q2, dp1, dq1, dp2, dq2) = state
    k1 = add(k, _c(k, 1))
    # Step k multiplies in the partial numerator -k (k + 1 - a) over x + 2k + 2 - a.
    y = sub(add(k1, _c(k1, 1)), a)
    z = add(sub(x, a), add(mul(_c(k, 2), k1), _c(k, 2)))
    ky = mul(k1, y)
    p = sub(mul(p1, z), mul(p2, ky))
    q = sub(mul(q1, z), mul(q2, ky))
    # d/da with dz/da = -1 and d(ky)/da = -k.
    dp = add(sub(sub(mul(dp1, z), p1), mul(dp2, ky)), mul(p2, k1))
    dq = add(sub(sub(mul(dq1, z), q1), mul(dq2, ky)), mul(q2, k1))
    ok = ne(q, _c(q, 0))
    safe_q = select(ok, q, full_like(q, 1))
    r = div(p, safe_q)
    ans1 = select(ok, r, ans)
    going = gt(abs(sub(ans1, ans)), mul(_c(ans, eps), abs(ans1)))
    going = bitwise_or(going, bitwise_not(ok))
    dans1 = dans
    if want_grad:
      dans1 = select(ok, div(sub(dp, mul(r, dq)), safe_q), dans)
      going = bitwise_or(going, gt(abs(sub(dans1, dans)), mul(_c(ans, eps), abs(dans1))))
    # Keep the convergents (and their derivatives) in range: only their ratios matter.
    scale = select(gt(abs(p), _c(p, big)), full_like(p, eps), full_like(p, 1))
    n1 = (p, q, p1, q1, dp, dq, dp1, dq1)
    p, q, p1_, q1_, dp, dq, dp1_, dq1_ = [mul(v, scale) for v in n1]
    going = bitwise_and(bitwise_and(active, going), lt(k1, _c(k1, _MAX_FRACTION_TERMS)))
    keep = lambda new, old: select(active, new, old)
    return (going, keep(k1, k), keep(ans1, ans), keep(dans1, dans),
            keep(p, p1), keep(q, q1), keep(p1_, p2), keep(q1_, q2),
            keep(dp, dp1), keep(dq, dq1), keep(dp1_, dp2), keep(dq1_, dq2))

  # Convergents 0 and 1: p/q = 1/x and (x + 1)/(x (x + 2 - a)).
  zero, one = full_like(a, 0), full_like(a, 1)
  z0 = add(sub(x, a), _c(x, 2))
  p1, q1 = add(x, _c(x, 1)), mul(z0, x)
  p2, q2 = one, x
  dq1 = neg(x)
  ans = div(p1, q1)
  dans = div(mul(ans, x), q1)
  init = (active, zero, ans, dans, p1, q1, p2, q2, zero, dq1, zero, zero)
  out = while_loop(lambda s: _any_lane(s[0]), body, init)
  ans, dans = out[2], out[3]
  if mode == _VALUE:
    return mul(ans, exp(log_ax))
  dlog = sub(log(x), digamma(a))  # d log(x**a e**-x / Gamma(a)) / da
  inner = add(mul(ans, dlog), dans)
  if mode == _GRAD_A:
    return mul(exp(log_ax), inner)  # this is dQ/da
  return mul(inner, x)  # dx/da = (dQ/da) / (dP/dx)


def _underflows(log_ax):
  # Below this the prefactor is 0 in this dtype and so is the series' or fraction's result.
  return lt(log_ax, _c(log_ax, math.log(float(np.finfo(get_aval(log_ax).dtype).tiny))))


def _series_value(a, x, ax, active):
  """``P(a, x)`` by its power series, stepped and stopped as XLA's math library (and so JAX)
  does it (term / sum <= eps in every active lane), so it rounds as JAX's."""
  eps = _c(a, _eps(a))

  def body(state):
    active, r, term, total = state
    r1 = add(r, _c(r, 1))
    term1 = mul(term, div(x, r1))
    total1 = add(total, term1)
    going = bitwise_and(active, gt(div(term1, total1), eps))
    return (going, select(active, r1, r), select(active, term1, term),
            select(active, total1, total))

  init = (active, a, full_like(a, 1), full_like(a, 1))
  total = while_loop(lambda s: _any_lane(s[0]), body, init)[3]
  return div(mul(total, ax), a)


def _fraction_value(a, x, ax, active):
  """``Q(a, x)`` by Cephes' continued fraction (convergents p_k / q_k, rescaled when they
  grow), stepped and stopped as XLA's math library (and so JAX) does it: at most 2000 terms,
  until every active lane's relative change is at most eps."""
  eps = _eps(a)
  one = _c(a, 1)

  def body(state):
    active, ans, y, z, k, p1, q1, p2, q2 = state
    k = add(k, one)
    y1 = add(y, one)
    z1 = add(z, _c(z, 2))
    yc = mul(y1, k)
    p = sub(mul(p1, z1), mul(p2, yc))
    q = sub(mul(q1, z1), mul(q2, yc))
    ok = ne(q, _c(q, 0))
    r = div(p, q)
    t = select(ok, abs(div(sub(ans, r), r)), full_like(r, 1))
    ans1 = select(ok, r, ans)
    rescale = gt(abs(p), _c(p, 1 / eps))
    shrink = lambda v: select(rescale, mul(v, _c(v, eps)), v)
    p2n, p1n, q2n, q1n = shrink(p1), shrink(p), shrink(q1), shrink(q)
    going = bitwise_and(active, gt(t, _c(t, eps)))
    keep = lambda new, old: select(active, new, old)
    return (going, keep(ans1, ans), keep(y1, y), keep(z1, z), k, keep(p1n, p1),
            keep(q1n, q1), keep(p2n, p2), keep(q2n, q2))

  y = sub(one, a)
  z = add(add(x, y), _c(x, 1))
  p1 = add(x, _c(x, 1))
  q1 = mul(z, x)
  # The term counter is one scalar for all lanes.
  init = (active, div(p1, q1), y, z, _c(x, 0), p1, q1, full_like(x, 1), x)
  cond = lambda s: bitwise_and(lt(s[4], _c(s[4], 2000)), _any_lane(s[0]))
  return mul(while_loop(cond, body, init)[1], ax)


def _regularized_gamma(a, x, upper: bool):
  """P(a, x) (``upper=False``) or Q(a, x) = 1 - P: the series for P where x < 1 or x < a
  (x <= a for P), the continued fraction for Q elsewhere, each giving the other by
  complement; the split, steps and underflow cut are JAX's, so results round as JAX's."""
  inf = _c(x, np.inf)
  x_zero, x_inf, a_zero, a_inf = eq(x, _c(x, 0)), eq(x, inf), eq(a, _c(a, 0)), eq(a, inf)
  domain = _any_of(lt(x, _c(x, 0)), lt(a, _c(a, 0)), bitwise_and(a_zero, x_zero),
                   bitwise_and(a_inf, x_inf), _isnan(a), _isnan(x))
  log_ax = _log_prefactor(a, x)
  # As JAX: skip lanes whose prefactor is below 1 / (largest float).
  underflow = lt(log_ax, neg(log(_c(log_ax, np.finfo(get_aval(log_ax).dtype).max))))
  ax = exp(log_ax)
  enabled = bitwise_not(_any_of(domain, x_zero, x_inf, a_zero, a_inf, underflow))
  if upper:
    use_q = bitwise_not(bitwise_or(lt(x, _c(x, 1)), lt(x, a)))
  else:
    use_q = bitwise_and(ge(x, _c(x, 1)), gt(x, a))
  q = _fraction_value(a, x, ax, bitwise_and(enabled, use_q))
  p = _series_value(a, x, ax, bitwise_and(enabled, bitwise_not(use_q)))
  if upper:
    out = select(use_q, q, sub(_c(p, 1), p))
  else:
    out = select(use_q, sub(_c(q, 1), q), p)
  at_zero, at_one = (1, 0) if upper else (0, 1)  # the values where x -> 0 / x -> inf
  out = select(bitwise_or(x_zero, a_inf), full_like(out, at_zero), out)
  out = select(bitwise_or(x_inf, a_zero), full_like(out, at_one), out)
  return select(domain, full_like(out, np.nan), out)


def _igamma_impl(a, x):
  return _regularized_gamma(a, x, upper=False)


def _igammac_impl(a, x):
  return _regularized_gamma(a, x, upper=True)


def _grad_impl(a, x, mode):
  x_zero, x_inf = eq(x, _c(x, 0)), eq(x, _c(x, np.inf))
  domain = _any_of(lt(x, _c(x, 0)), le(a, _c(a, 0)), eq(a, _c(a, np.inf)), _isnan(a),
                   _isnan(x))
  log_ax = _log_prefactor(a, x)
  disabled = _any_of(domain, x_zero, x_inf)
  if mode == _GRAD_A:
    # dP/da is as tiny as the prefactor; the sample derivative does not contain it.
    disabled = bitwise_or(disabled, _underflows(log_ax))
  enabled = bitwise_not(disabled)
  use_q = bitwise_and(ge(x, _c(x, 1)), gt(x, a))
  q = _q_fraction(a, x, log_ax, bitwise_and(enabled, use_q), mode)
  p = _p_series(a, x, log_ax, bitwise_and(enabled, bitwise_not(use_q)), mode)
  out = select(use_q, neg(q) if mode == _GRAD_A else q, p)
  if mode == _GRAD_A:
    out = select(_underflows(log_ax), full_like(out, 0), out)
    out = select(x_inf, full_like(out, 0), out)
  out = select(x_zero, full_like(out, 0), out)
  return select(domain, full_like(out, np.nan), out)


def _igamma_grad_a_impl(a, x):
  return _grad_impl(a, x, _GRAD_A)


def _random_gamma_grad_impl(a, x):
  return _grad_impl(a, x, _SAMPLE_GRAD)


def _density_x(a, x):
  """``dP(a, x)/dx = x**(a-1) e**-x / Gamma(a)``."""
  return exp(sub(sub(mul(sub(a, _c(a, 1)), log(x)), x), lgamma(a)))


def _lower(impl):
  return xla.lower_fun(_upcast_and_broadcast(impl), multiple_results=False)


igamma_p = binop(real_float, "igamma")
xla.register_lowering(igamma_p, _lower(_igamma_impl))
ad.defjvp(igamma_p,
          lambda g, a, x: mul(g, igamma_grad_a(a, x)),
          lambda g, a, x: mul(g, _density_x(a, x)))
defbroadcasting(igamma_p)


def igamma(a, x):
  """Elementwise regularized lower incomplete gamma function ``P(a, x)``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable in both ``a`` (through ``igamma_grad_a``) and ``x``.

  Args:
    a: the shape parameter (positive).
    x: the upper limit (non-negative).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.igamma(jnp.float32(1), jnp.array([0., 1.]))
    Array([0.       , 0.6321205], dtype=float32)
  """
  return igamma_p.bind(*_operands("igamma", a, x))


igammac_p = binop(real_float, "igammac")
xla.register_lowering(igammac_p, _lower(_igammac_impl))
ad.defjvp(igammac_p,
          lambda g, a, x: neg(mul(g, igamma_grad_a(a, x))),
          lambda g, a, x: neg(mul(g, _density_x(a, x))))
defbroadcasting(igammac_p)


def igammac(a, x):
  """Elementwise regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable and batched under ``vmap``.

  Args:
    a: the shape parameter (positive).
    x: the lower limit (non-negative).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.igammac(jnp.float32(1), jnp.array([0., 1.]))
    Array([1.        , 0.36787945], dtype=float32)
  """
  return igammac_p.bind(*_operands("igammac", a, x))


# Neither derivative below has a JVP of its own (as in JAX): second derivatives of igamma in
# ``a``, and of gamma samples, raise the interpreter's missing-rule error.
igamma_grad_a_p = binop(real_float, "igamma_grad_a")
xla.register_lowering(igamma_grad_a_p, _lower(_igamma_grad_a_impl))
defbroadcasting(igamma_grad_a_p)


def igamma_grad_a(a, x):
  """Elementwise derivative ``dP(a, x) / da`` of the regularized lower incomplete gamma.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).

  Args:
    a: the shape parameter (positive).
    x: the upper limit (non-negative).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.igamma_grad_a(jnp.float32(1), jnp.array([1.]))
    Array([-0.43172967], dtype=float32)
  """
  return igamma_grad_a_p.bind(*_operands("igamma_grad_a", a, x))


random_gamma_grad_p = binop(real_float, "random_gamma_grad")
xla.register_lowering(random_gamma_grad_p, _lower(_random_gamma_grad_impl))
defbroadcasting(random_gamma_grad_p)


def random_gamma_grad(a, x):
  """Elementwise derivative of a Gamma(a, 1) sample ``x`` with respect to ``a``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``). It is taken at a
  fixed quantile (implicit reparameterization): ``-(dP(a, x)/da) / (dP(a, x)/dx)``. Used by
  the gradient of ``random.gamma``.

  Args:
    a: the shape parameter (positive).
    x: the sample (positive).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.random_gamma_grad(jnp.float32(1), jnp.array([1.]))
    Array([1.1735635], dtype=float32)
  """
  return random_gamma_grad_p.bind(*_operands("random_gamma_grad", a, x))


# --- regularized incomplete beta ---------------------------------------------------------

def _betainc_fraction(a, b, x):
  """The continued fraction ``1/(1 + d1/(1 + d2/(1 + ...)))`` of
  ``I_x(a, b) a B(a, b) / (x**a (1-x)**b)`` (DLMF 8.17.22), with
  ``d_2m+1 = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))`` and ``d_2m = m (b-m) x / ((a+2m-1)(a+2m))``,
  by the Lentz-Thompson-Barnett method as XLA's math library (and so JAX) runs it: the same
  terms, tiny-value guard and stopping rule (all lanes within eps/2, or 200 / 600 terms), so
  its rounding is JAX's. Fast for ``x < (a+1)/(a+b+2)``."""
  dtype = get_aval(a).dtype
  small = _c(a, np.finfo(dtype).eps / 2)
  limit = 200 if dtype == np.float32 else 600
  one, two = _c(a, 1), _c(a, 2)
  shape = get_aval(a).shape

  def numerator(n):
    # Term n >= 1: 1 for n = 1, then d_{n-1}; m = (n - 1) // 2 as an integer first.
    n = broadcast_in_dim(n, shape, ())
    m_int = div(sub(n, _c(n, 1)), _c(n, 2))
    m = convert_element_type(m_int, dtype)
    first = div(mul(neg(add(a, b)), x), add(a, one))
    a2m = add(a, mul(two, m))
    even = select(eq(m_int, _c(m_int, 0)), first,
                  div(mul(mul(neg(add(a, m)), add(add(a, b), m)), x), mul(a2m, add(a2m, one))))
    odd = div(mul(mul(m, sub(b, m)), x), mul(sub(a2m, one), a2m))
    term = select(eq(rem(n, _c(n, 2)), _c(n, 0)), even, odd)
    return select(eq(n, _c(n, 1)), full_like(x, 1), term)

  def guard(v):
    return select(lt(abs(v), full_like(v, small)), full_like(v, small), v)

  def body(state):
    n, _, c, d, h = state
    num = numerator(n)
    c = guard(add(one, div(num, c)))
    d = div(one, guard(add(one, mul(num, d))))
    delta = mul(c, d)
    going = _any_lane(ge(abs(sub(delta, one)), small))
    return add(n, _c(n, 1)), going, c, d, mul(h, delta)

  def cond(state):
    return bitwise_and(lt(state[0], _c(state[0], limit)), state[1])

  # The zeroth partial denominator is 0, which the guard lifts to ``small``.
  h0 = full_like(a, small)
  init = (np.array(1, np.int32), np.array(True), h0, full_like(a, 0), h0)
  return while_loop(cond, body, init)[4]


def _betainc_impl(a, b, x):
  inf = _c(a, np.inf)
  # As JAX: an infinite parameter acts like the other one being zero.
  a_zero = bitwise_or(eq(a, _c(a, 0)), eq(b, inf))
  b_zero = bitwise_or(eq(b, _c(b, 0)), eq(a, inf))
  x_zero, x_one = eq(x, _c(x, 0)), eq(x, _c(x, 1))
  nan = _any_of(lt(a, _c(a, 0)), lt(b, _c(b, 0)), lt(x, _c(x, 0)), gt(x, _c(x, 1)),
                bitwise_and(a_zero, b_zero), _isnan(a), _isnan(b), _isnan(x))
  is_zero = bitwise_or(bitwise_and(b_zero, bitwise_not(x_one)), bitwise_and(a_zero, x_zero))
  is_one = bitwise_or(bitwise_and(a_zero, bitwise_not(x_zero)), bitwise_and(b_zero, x_one))
  # I_x(a, b) = 1 - I_{1-x}(b, a): evaluate the side where the fraction converges fast.
  direct = lt(x, div(add(a, _c(a, 1)), add(add(a, b), _c(a, 2))))
  aa, bb = select(direct, a, b), select(direct, b, a)
  xx = select(direct, x, sub(_c(x, 1), x))
  frac = _betainc_fraction(aa, bb, xx)
  # x**a (1-x)**b / (a B(a, b)); for a below twice the smallest normal, a B(a, b) ~
  # Gamma(b) / Gamma(a + b) (a Gamma(a) -> 1), which avoids dividing by a.
  dtype = get_aval(a).dtype
  log_b_ratio = sub(lgamma(bb), lgamma(add(aa, bb)))
  log_beta = add(lgamma(aa), log_b_ratio)
  log_1mx = log1p(neg(xx))
  front = select(lt(aa, _c(aa, np.finfo(dtype).tiny * 2)),
                 exp(sub(mul(log_1mx, bb), log_b_ratio)),
                 div(exp(sub(add(mul(log(xx), aa), mul(log_1mx, bb)), log_beta)), aa))
  out = mul(frac, front)
  out = select(direct, out, sub(_c(out, 1), out))
  out = select(is_zero, full_like(out, 0), out)
  out = select(is_one, full_like(out, 1), out)
  return select(nan, full_like(out, np.nan), out)


def _betainc_grad_ab(g, a, b, x):
  raise ValueError("betainc: the gradient with respect to a and b is not implemented "
                   "(only with respect to x)")


def _betainc_grad_x(g, a, b, x):
  one = _c(x, 1)
  log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
  density = exp(sub(add(mul(sub(a, one), log(x)), mul(sub(b, one), log1p(neg(x)))),
                    log_beta))
  return mul(g, density)


regularized_incomplete_beta_p = naryop(None, [real_float] * 3, "regularized_incomplete_beta")
xla.register_lowering(regularized_incomplete_beta_p, _lower(_betainc_impl))
ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_ab, _betainc_grad_ab, _betainc_grad_x)
defbroadcasting(regularized_incomplete_beta_p)


def betainc(a, b, x):
  """Elementwise regularized incomplete beta function ``I_x(a, b)``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable in ``x`` (the gradient in ``a`` and ``b`` raises ``ValueError``); batched
  under ``vmap``.

  Args:
    a: first shape parameter (positive).
    b: second shape parameter (positive).
    x: the upper limit, in ``[0, 1]``.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.betainc(jnp.float32(2), jnp.float32(3), jnp.array([0., 0.5, 1.]))
    Array([0.       , 0.6874998, 1.       ], dtype=float32)
  """
  return regularized_incomplete_beta_p.bind(*_operands("betainc", a, b, x))


# --- Hurwitz zeta and exponentially scaled Bessel functions ------------------------------

zeta_p = binop(real_float, "zeta")
xla.register_lowering(zeta_p, nary_lowering(chlo.zeta))


def _zeta_grad_x(g, x, q):
  raise ValueError("zeta: the gradient with respect to x (the exponent) is not implemented "
                   "(only with respect to q)")


# d zeta(x, q) / dq = -x zeta(x + 1, q)
ad.defjvp(zeta_p, _zeta_grad_x,
          lambda g, x, q: mul(g, neg(mul(x, zeta(add(x, _c(x, 1)), q)))))
defbroadcasting(zeta_p)


def zeta(x, q):
  """Elementwise Hurwitz zeta function ``sum_n (n + q) ** -x``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable in ``q`` (the gradient in ``x`` raises ``ValueError``); batched under ``vmap``.

  Args:
    x: the exponent (greater than 1 for convergence).
    q: the shift (positive).

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.zeta(jnp.array([2.]), jnp.array([1.]))
    Array([1.644934], dtype=float32)
  """
  return zeta_p.bind(*_operands("zeta", x, q))


# Cephes' Chebyshev coefficients for exp(-|x|) I0(x): on [0, 8] in t = x/2 - 2, and on
# (8, inf) for sqrt(x) exp(-x) I0(x) in t = 32/x - 2. float32 uses the shorter tails of the
# series (as Cephes' single-precision i0ef, and JAX).
_I0E_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17,
          -2.43127984654795469359E-16, 1.71539128555513303061E-15,
          -1.16853328779934516808E-14, 7.67618549860493561688E-14,
          -4.85644678311192946090E-13, 2.95505266312963983461E-12,
          -1.72682629144155570723E-11, 9.67580903537323691224E-11,
          -5.18979560163526290666E-10, 2.65982372468238665035E-9,
          -1.30002500998624804212E-8, 6.04699502254191894932E-8,
          -2.67079385394061173391E-7, 1.11738753912010371815E-6,
          -4.41673835845875056359E-6, 1.64484480707288970893E-5,
          -5.75419501008210370398E-5, 1.88502885095841655729E-4,
          -5.76375574538582365885E-4, 1.63947561694133579842E-3,
          -4.32430999505057594430E-3, 1.05464603945949983183E-2,
          -2.37374148058994688156E-2, 4.93052842396707084878E-2,
          -9.49010970480476444210E-2, 1.71620901522208775349E-1,
          -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18,
          4.46562142029675999901E-17, 3.46122286769746109310E-17,
          -2.82762398051658348494E-16, -3.42548561967721913462E-16,
          1.77256013305652638360E-15, 3.81168066935262242075E-15,
          -9.55484669882830764870E-15, -4.15056934728722208663E-14,
          1.54008621752140982691E-14, 3.85277838274214270114E-13,
          7.18012445138366623367E-13, -1.79417853150680611778E-12,
          -1.32158118404477131188E-11, -3.14991652796324136454E-11,
          1.18891471078464383424E-11, 4.94060238822496958910E-10,
          3.39623202570838634515E-9, 2.26666899049817806459E-8,
          2.04891858946906374183E-7, 2.89137052083475648297E-6,
          6.88975834691682398426E-5, 3.36911647825569408990E-3,
          8.04490411014108831608E-1)
_I0E_F32_TERMS = (18, 7)  # how many trailing coefficients of each series float32 uses


def _chebyshev(t, coefs):
  """Clenshaw's recurrence for ``sum c_k T_k(t)`` halved at the end (Cephes' ``chbevl``),
  starting from zeros as Cephes does, which fixes the rounding."""
  b0 = b1 = b2 = full_like(t, 0)
  for c in coefs:
    b2, b1 = b1, b0
    b0 = add(sub(mul(t, b1), b2), full_like(t, c))
  return mul(_c(t, 0.5), sub(b0, b2))


def _bessel_i0e_impl(x):
  """``exp(-|x|) I0(x)`` from Cephes' Chebyshev expansions (JAX's method and rounding)."""
  coefs_a, coefs_b = _I0E_A, _I0E_B
  if get_aval(x).dtype == np.float32:
    coefs_a, coefs_b = _I0E_A[-_I0E_F32_TERMS[0]:], _I0E_B[-_I0E_F32_TERMS[1]:]
  ax = abs(x)
  near = _chebyshev(sub(mul(full_like(ax, 0.5), ax), full_like(ax, 2)), coefs_a)
  far = div(_chebyshev(sub(div(full_like(ax, 32), ax), full_like(ax, 2)), coefs_b), sqrt(ax))
  return select(le(ax, _c(ax, 8)), near, far)


bessel_i0e_p = unop(real_float, "bessel_i0e")
xla.register_lowering(bessel_i0e_p, _lower(_bessel_i0e_impl))
# d/dx (e**-|x| I0(x)) = e**-|x| I1(x) - sign(x) e**-|x| I0(x)
ad.defjvp2(bessel_i0e_p, lambda g, y, x: mul(g, sub(bessel_i1e(x), mul(sign(x), y))))
defvectorized(bessel_i0e_p)


def bessel_i0e(x):
  """Elementwise exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable and batched under ``vmap``.

  Args:
    x: input array.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.bessel_i0e(jnp.array([0., 1.]))
    Array([1.0000001 , 0.46575963], dtype=float32)
  """
  return bessel_i0e_p.bind(x)


bessel_i1e_p = unop(real_float, "bessel_i1e")
xla.register_lowering(bessel_i1e_p, nary_lowering(chlo.bessel_i1e))


def _bessel_i1e_jvp(g, y, x):
  # I1'(x) = I0(x) - I1(x)/x; at x = 0 the limit of the scaled derivative is 1/2.
  tiny = float(np.finfo(get_aval(x).dtype).eps)
  far = gt(abs(x), _c(x, tiny))
  safe = select(far, x, full_like(x, 1))
  d = sub(bessel_i0e(safe), mul(y, add(sign(safe), div(_c(safe, 1), safe))))
  return mul(g, select(far, d, full_like(x, 0.5)))


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)
defvectorized(bessel_i1e_p)


def bessel_i1e(x):
  """Elementwise exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

  Defined for floating dtypes; all operands must share dtype and shape, or be scalars
  (mismatches and other dtypes raise ``TypeError``).
  Differentiable and batched under ``vmap``.

  Args:
    x: input array.

  Returns:
    An array of the operands' shape and dtype.

  Examples:
    >>> lax.bessel_i1e(jnp.array([0., 1.]))
    Array([0.        , 0.20791042], dtype=float32)
  """
  return bessel_i1e_p.bind(x)
