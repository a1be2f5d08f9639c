"""The rest of ``jax.scipy.special`` (gamma family, normal distribution functions, Bessel,
exponential and trigonometric integrals, Faddeeva-based functions, hypergeometric functions,
entropies, spherical harmonics), written on ``hlox.numpy`` and ``hlox.lax``.

``hlox.scipy.special`` re-exports every name here. The dtype rules are JAX's: arguments are
promoted together to an inexact dtype, and whether a result of Python-scalar arguments is
weakly typed follows JAX 0.10.2 function by function (``_strong`` marks the strong ones).

The algorithms are textbook ones chosen so that every lane runs the same fixed work (series
of fixed length, continued fractions evaluated from a fixed depth backwards, quadrature on
fixed nodes) unless a ``while_loop`` is needed for a series whose length depends on the input
(hypergeometric functions). Where the naive autodiff of an algorithm is poor or undefined,
the derivative is given by ``custom_jvp`` with the closed form (as JAX does).
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.custom_derivatives import custom_jvp
from hlox import numpy as jnp
from hlox.numpy.util import fuse_functions, promote_args_inexact

__all__ = [
    "bernoulli", "bessel_jn", "beta", "boxcox", "boxcox1p", "comb", "dawsn", "entr", "erfcx",
    "exp1", "expi", "expn", "factorial", "fresnel", "gamma", "gammasgn", "hyp1f1", "hyp2f1",
    "i0", "i1", "kl_div", "log_ndtr", "log_softmax", "loggamma", "multigammaln", "ndtr",
    "ndtri", "owens_t", "poch", "rel_entr", "sici", "softmax", "spence", "sph_harm_y", "wofz",
]

_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)


# --- small helpers ------------------------------------------------------------------------

def _c(x, value):
  """``value`` as a strong constant of ``x``'s dtype."""
  return np.array(value, get_aval(x).dtype)


def _dtype(x):
  return get_aval(x).dtype


def _is_complex(x):
  return dtypes.issubdtype(_dtype(x), np.complexfloating)


def _strong(x):
  """``x`` without a weak type (JAX's result for these functions is never weak)."""
  aval = get_aval(x)
  return lax.convert_element_type(x, aval.dtype, weak_type=False) if aval.weak_type else x


def _no_complex(name, x):
  if _is_complex(x):
    raise ValueError(f"{name} does not support complex-valued inputs.")


def _real_float_only(name, x):
  """``ndtr``-style functions take only float32/float64 arrays (no promotion), as JAX."""
  x = jnp.asarray(x)
  dt = _dtype(x)
  if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
    raise TypeError(f"{name}: x.dtype={dt} is not supported; pass float32 or float64")
  return x


def _work_dtype(x):
  """16-bit floats are computed in float32."""
  dt = _dtype(x)
  return np.dtype(np.float32) if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _in_work(fn):
  """Run ``fn`` on float32 for 16-bit inputs, casting the results back."""
  def wrapped(*xs):
    dt = _dtype(xs[0])
    work = _work_dtype(xs[0])
    if work == dt:
      return fn(*xs)
    out = fn(*[lax.convert_element_type(x, work) for x in xs])
    if isinstance(out, tuple):
      return tuple(lax.convert_element_type(o, dt) for o in out)
    return lax.convert_element_type(out, dt)
  return wrapped


def _concrete_int(value, what):
  try:
    return operator.index(value)
  except TypeError:
    pass
  try:
    arr = np.asarray(value)
  except Exception as e:  # a tracer
    raise TypeError(f"{what} must be a concrete Python integer (it is used as a static "
                    f"size); got {value!r}") from e
  if arr.shape != () or arr.dtype.kind not in "iu":
    raise TypeError(f"{what} must be an integer; got {value!r}")
  return int(arr)


# --- gamma family -------------------------------------------------------------------------

def gammasgn(x):
  """The sign of the gamma function: NaN at the poles (non-positive integers) and NaN
  inputs, ``-1`` where ``Gamma(x) < 0`` (and at ``-0.0``), ``+1`` elsewhere."""
  x, = promote_args_inexact("gammasgn", x)
  _no_complex("gammasgn", x)
  floor_x = lax.floor(x)
  negative = x < _c(x, 0)
  pole = (negative & (x == floor_x)) | jnp.isnan(x)
  neg_sign = (negative & (jnp.fmod(floor_x, _c(x, 2)) != _c(x, 0))) | (
      (x == _c(x, 0)) & jnp.signbit(x))
  out = jnp.where(neg_sign, _c(x, -1), _c(x, 1))
  return _strong(jnp.where(pole, _c(x, np.nan), out))


# Stirling series of log Gamma(w) - ((w - 1/2) log w - w + log(2 pi)/2): B_2k/(2k(2k-1) w^(2k-1))
_STIRLING = [float(Fraction(b) / (2 * k * (2 * k - 1)))
             for k, b in zip(range(1, 10), [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42),
                                             Fraction(-1, 30), Fraction(5, 66),
                                             Fraction(-691, 2730), Fraction(7, 6),
                                             Fraction(-3617, 510), Fraction(43867, 798)])]
_STIRLING_SHIFT = 12.0  # with Re(w) >= 12 nine Stirling terms are below double rounding


def _complex_loggamma(z):
  """``log Gamma(z)`` on the principal branch (cut along the negative real axis, as SciPy's
  ``loggamma``): ``log Gamma(z + n) - sum_k log(z + k)`` with ``n`` steps taking ``Re(z + n)``
  past 12, where the Stirling series is exact to double rounding. The sum of principal logs
  is the analytic continuation from the positive axis through each half plane."""
  re = jnp.real(z)
  pole = (jnp.imag(z) == 0) & (re <= 0) & (re == lax.floor(re))
  bad = pole | jnp.isnan(re) | jnp.isnan(jnp.imag(z))
  z = jnp.where(bad, jnp.ones_like(z), z)
  re = jnp.real(z)
  n = lax.max(lax.ceil(_c(re, _STIRLING_SHIFT) - re), _c(re, 0))
  zero = jnp.zeros_like(z)

  def cond(state):
    k, _ = state
    return jnp.any(k < n)

  def body(state):
    k, acc = state
    on = k < n
    term = jnp.log(jnp.where(on, z + lax.convert_element_type(k, _dtype(z)), jnp.ones_like(z)))
    return k + _c(k, 1), acc + jnp.where(on, term, zero)

  _, logs = lax.while_loop(cond, body, (jnp.zeros_like(re), zero))
  w = z + lax.convert_element_type(n, _dtype(z))
  inv = _c(w, 1) / w
  inv2 = inv * inv
  series = jnp.zeros_like(w)
  for coef in reversed(_STIRLING):
    series = series * inv2 + _c(w, coef)
  lg = (w - _c(w, 0.5)) * jnp.log(w) - w + _c(w, 0.5 * math.log(2 * math.pi)) + series * inv
  out = lg - logs
  return jnp.where(bad, _c(z, complex(np.nan, np.nan)), out)


def loggamma(x):
  """``log(Gamma(x))``: real for ``x > 0`` (NaN for ``x <= 0``), the principal branch for
  complex ``x`` (SciPy's ``loggamma``)."""
  x, = promote_args_inexact("loggamma", x)
  if _is_complex(x):
    return _strong(_complex_loggamma(x))
  return jnp.where(x > 0, lax.lgamma(x), np.nan)


def gamma(x):
  """The gamma function, real or complex (NaN at the poles ``0, -1, -2, ...`` for complex,
  and for real at the negative integers; ``+-inf`` at ``+-0``)."""
  x, = promote_args_inexact("gamma", x)
  if _is_complex(x):
    return _strong(jnp.exp(_complex_loggamma(x)))
  return _strong(gammasgn(x) * lax.exp(lax.lgamma(x)))


def beta(a, b):
  """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``, with its sign."""
  a, b = promote_args_inexact("beta", a, b)
  _no_complex("beta", a)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  log_abs = lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)
  return _strong(sign * lax.exp(log_abs))


def factorial(n, exact=False):
  """``n!`` as ``Gamma(n + 1)`` in floating point (0 for negative ``n``). ``exact=True`` is
  not supported (as in JAX)."""
  if exact:
    raise NotImplementedError("factorial with exact=True")
  n, = promote_args_inexact("factorial", n)
  return jnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
  """The binomial coefficient ``N choose k`` in floating point, through ``gammaln``: 0 where
  ``N < 0``, ``k < 0`` or ``k > N``; with ``repetition``, ``comb(N + k - 1, k)``."""
  N, k = promote_args_inexact("comb", N, k)
  if repetition:
    return jnp.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
  ok = (k <= N) & (N >= 0) & (k >= 0)
  n_ = jnp.where(ok, N, 0.0)
  k_ = jnp.where(ok, k, 0.0)
  value = lax.exp(lax.lgamma(n_ + 1) - lax.lgamma(k_ + 1) - lax.lgamma(n_ - k_ + 1))
  return jnp.where(ok, value, 0.0)


@custom_jvp
def poch(z, m):
  """The Pochhammer symbol ``Gamma(z + m) / Gamma(z)`` (1 where ``m == 0``)."""
  z, m = promote_args_inexact("poch", z, m)
  _no_complex("poch", z)
  return _strong(jnp.where(m == 0, _c(z, 1), gamma(z + m) / gamma(z)))


def _poch_jvp(primals, tangents):
  z, m = primals
  z_dot, m_dot = tangents
  out = poch(z, m)
  z, m = promote_args_inexact("poch", z, m)
  dz = (lax.digamma(z + m) - lax.digamma(z)) * out
  dm = lax.digamma(z + m) * out
  return out, (dz * z_dot + dm * m_dot).astype(out.dtype)


poch.defjvp(_poch_jvp)


def multigammaln(a, d):
  """The log of the multivariate gamma function of dimension ``d`` (a concrete integer):
  ``d (d - 1) / 4 log(pi) + sum_{j < d} gammaln(a - j / 2)``."""
  d = _concrete_int(d, "d argument of multigammaln")
  a, d_ = promote_args_inexact("multigammaln", a, d)
  const = d_ * (d_ - 1) * _c(a, 0.25 * math.log(math.pi))
  halves = jnp.arange(d, dtype=_dtype(a)) / _c(a, 2)
  terms = lax.lgamma(jnp.expand_dims(a, -1) - halves)
  return _strong(jnp.sum(terms, axis=-1) + const)


# --- entropies and transforms -------------------------------------------------------------

@custom_jvp
def _xlogx(x):
  return jnp.where(x != 0, x * jnp.log(jnp.where(x != 0, x, 1)), jnp.zeros_like(x))


_xlogx.defjvp(lambda p, t: (_xlogx(p[0]), t[0] * (jnp.log(p[0]) + 1)))


def entr(x):
  """The elementwise entropy ``-x log x`` (0 at 0, ``-inf`` for ``x < 0``)."""
  x, = promote_args_inexact("entr", x)
  _no_complex("entr", x)
  return lax.select(x < _c(x, 0), lax.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
  """``p log(p / q)`` for ``p, q > 0``; 0 where ``p == 0`` and ``q >= 0``; ``inf`` elsewhere."""
  p, q = promote_args_inexact("rel_entr", p, q)
  _no_complex("rel_entr", p)
  both = (p > 0) & (q > 0)
  p1 = jnp.where(both, p, 1)
  q1 = jnp.where(both, q, 1)
  value = p1 * (jnp.log(p1) - jnp.log(q1))
  return jnp.where(both, value, jnp.where((p == 0) & (q >= 0), 0.0, np.inf))


def kl_div(p, q):
  """``p log(p / q) - p + q`` (``rel_entr(p, q) - p + q``)."""
  p, q = promote_args_inexact("kl_div", p, q)
  _no_complex("kl_div", p)
  return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
  """The Box-Cox transform ``((x ** lmbda) - 1) / lmbda``, ``log(x)`` where ``lmbda == 0``."""
  x, lmbda = promote_args_inexact("boxcox", x, lmbda)
  zero = lmbda == 0
  safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
  log_x = jnp.log(x)
  return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


def boxcox1p(x, lmbda):
  """``boxcox(1 + x, lmbda)``, accurate for small ``x``."""
  x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
  zero = lmbda == 0
  safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
  log1p_x = jnp.log1p(x)
  return jnp.where(zero, log1p_x, jnp.expm1(safe * log1p_x) / safe)


def softmax(x, /, *, axis=None):
  """``exp(x) / sum(exp(x), axis)`` (over all axes by default, as SciPy)."""
  x, = promote_args_inexact("softmax", x)
  # The shift only steadies the exponentials; the gradient is that of the exact formula.
  shift = lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
  unnormalized = jnp.exp(x - shift)
  return _strong(unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True))


def log_softmax(x, /, *, axis=None):
  """``x - logsumexp(x, axis)`` (over all axes by default, as SciPy)."""
  x, = promote_args_inexact("log_softmax", x)
  shifted = x - lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
  return _strong(shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis,
                                                     keepdims=True)))


# --- the normal distribution --------------------------------------------------------------

def _ndtr(x):
  # Three pieces as JAX (its exact rounding): 1 + erf near 0, erfc in the lower tail (full
  # relative accuracy there), 2 - erfc in the upper tail.
  h = _c(x, 0.5 * math.sqrt(2))
  w = lax.mul(x, h)
  z = lax.abs(w)
  y = jnp.where(lax.lt(z, h), lax.add(_c(x, 1), lax.erf(w)),
                jnp.where(lax.gt(w, _c(x, 0)), lax.sub(_c(x, 2), lax.erfc(z)), lax.erfc(z)))
  return lax.mul(_c(x, 0.5), y)


def ndtr(x):
  """The standard normal CDF ``Phi(x)`` (float32/float64 input only, as JAX)."""
  return _strong(_ndtr(_real_float_only("ndtr", x)))


_LOG_NDTR_LOWER = {np.dtype(np.float64): -20.0, np.dtype(np.float32): -10.0}
_LOG_NDTR_UPPER = {np.dtype(np.float64): 8.0, np.dtype(np.float32): 5.0}


def _log_ndtr_series(x, series_order):
  """``1 - 1/x^2 + 3/x^4 - ...`` (``series_order`` terms), the even- and odd-numbered terms
  summed apart and combined last (the rounding JAX gets)."""
  if series_order <= 0:
    return _c(x, 1)
  x2 = lax.square(x)
  even = odd = None
  power = x2
  for n in range(1, series_order + 1):
    term = lax.div(_c(x, float(np.prod(np.arange(2 * n - 1, 1, -2)))), power)
    if n % 2:
      odd = term if odd is None else lax.add(odd, term)
    else:
      even = term if even is None else lax.add(even, term)
    power = lax.mul(power, x2)
  head = _c(x, 1) if even is None else lax.add(_c(x, 1), even)
  return lax.sub(head, odd)


def _log_ndtr_value(x, series_order):
  lower = _c(x, _LOG_NDTR_LOWER[_dtype(x)])
  upper = _c(x, _LOG_NDTR_UPPER[_dtype(x)])
  big = lax.gt(x, upper)
  # Above ``upper`` log(Phi(x)) = log1p(-Phi(-x)) ~ -Phi(-x); down to ``lower`` log(Phi(x));
  # below it the asymptotic series of log(Phi(x)) (one ndtr call serves both upper pieces).
  phi = _ndtr(jnp.where(big, lax.neg(x), lax.max(x, lower)))
  xl = lax.min(x, lower)
  x2 = lax.square(xl)
  log_scale = lax.sub(lax.sub(lax.mul(_c(xl, -0.5), x2), lax.log(lax.neg(xl))),
                      _c(xl, 0.5 * math.log(2 * math.pi)))
  low_val = lax.add(log_scale, lax.log(_log_ndtr_series(xl, series_order)))
  return jnp.where(big, lax.neg(phi), jnp.where(lax.gt(x, lower), lax.log(phi), low_val))


def _log_ndtr_checked(x, series_order):
  if not isinstance(series_order, int) or isinstance(series_order, bool):
    raise TypeError("log_ndtr: series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("log_ndtr: series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("log_ndtr: series_order must be <= 30.")
  return _real_float_only("log_ndtr", x)


def _log_ndtr_fwd(series_order, x):
  return _strong(_log_ndtr_value(x, series_order))


_log_ndtr = custom_jvp(_log_ndtr_fwd, nondiff_argnums=(0,))


def _log_ndtr_jvp(series_order, primals, tangents):
  x, = primals
  t, = tangents
  out = _log_ndtr(series_order, x)
  # d log Phi / dx = phi(x) / Phi(x) = exp(log phi - log Phi)
  log_pdf = _c(x, -0.5) * x * x - _c(x, 0.5 * math.log(2 * math.pi))
  return out, t * lax.exp(log_pdf - out)


_log_ndtr.defjvp(_log_ndtr_jvp)


def log_ndtr(x, series_order=3):
  """``log(Phi(x))``, accurate far into both tails; below -20 (float64) / -10 (float32) an
  asymptotic series of ``series_order`` terms, as JAX."""
  x = _log_ndtr_checked(x, series_order)
  return _log_ndtr(series_order, x)


# Cephes' rational approximations of the normal quantile (coefficients highest degree
# first): P0/Q0 for the central piece, P1/Q1 and P2/Q2 for the tail, split at z = 8.
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2,
             -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _horner(coefs, x):
  # jnp.polyval (one fused executable eagerly, as JAX's jitted polyval): its rounding.
  return jnp.polyval(np.array(coefs, _dtype(x)), x)


def _ndtri_value(p):
  big_p = _c(p, -np.expm1(-2.0))
  q = jnp.where(lax.gt(p, big_p), lax.sub(_c(p, 1), p), p)
  # 0 would give NaNs in unused branches (and so in gradients); its answer is set below.
  q = jnp.where(lax.eq(q, _c(p, 0)), _c(p, 0.5), q)
  # Central piece: x / sqrt(2 pi) = w + w^3 P0(w^2) / Q0(w^2), w = q - 1/2.
  w = lax.sub(q, _c(p, 0.5))
  ww = lax.square(w)
  central = lax.add(w, lax.mul(lax.mul(w, ww),
                               lax.div(_horner(_NDTRI_P0, ww), _horner(_NDTRI_Q0, ww))))
  central = lax.mul(central, _c(p, -math.sqrt(2 * math.pi)))
  # Tails: x = z - log(z) / z - P(1/z) / (Q(1/z) z), z = sqrt(-2 log q).
  z = lax.sqrt(lax.mul(_c(p, -2), lax.log(q)))
  head = lax.sub(z, lax.div(lax.log(z), z))
  r = lax.div(_c(p, 1), z)
  far = lax.sub(head, lax.div(lax.div(_horner(_NDTRI_P2, r), _horner(_NDTRI_Q2, r)), z))
  near = lax.sub(head, lax.div(lax.div(_horner(_NDTRI_P1, r), _horner(_NDTRI_Q1, r)), z))
  x = jnp.where(lax.gt(q, _c(p, np.exp(-2.0))), central,
                jnp.where(lax.ge(z, _c(p, 8)), far, near))
  x = jnp.where(lax.gt(p, _c(p, 1 - np.exp(-2.0))), x, lax.neg(x))
  return jnp.where(lax.eq(p, _c(p, 0)), _c(p, -np.inf),
                   jnp.where(lax.eq(p, _c(p, 1)), _c(p, np.inf), x))


def ndtri(p):
  """The inverse of ``ndtr`` (the standard normal quantile function); NaN outside [0, 1]."""
  # Differentiated through its formula, as JAX (so gradients round as JAX's do).
  return _strong(_ndtri_value(_real_float_only("ndtri", p)))


# --- Bessel functions ---------------------------------------------------------------------

def i0(x):
  """The modified Bessel function of order 0, ``exp(|x|) i0e(x)``."""
  x, = promote_args_inexact("i0", x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1(x):
  """The modified Bessel function of order 1, ``exp(|x|) i1e(x)``."""
  x, = promote_args_inexact("i1", x)
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


def bessel_jn(z, *, v, n_iter=50):
  """Bessel functions of the first kind ``J_0(z) ... J_v(z)`` (stacked along a new leading
  axis), by Miller's backward recurrence from order ``n_iter`` normalized with
  ``J_0 + 2 sum_k J_2k = 1`` (as JAX; accurate for ``|z|`` well below ``n_iter``)."""
  v = _concrete_int(v, "Argument v of bessel_jn")
  n_iter = _concrete_int(n_iter, "Argument n_iter of bessel_jn")
  z, = promote_args_inexact("bessel_jn", z)
  if _is_complex(z):
    raise ValueError("bessel_jn: complex input not supported.")
  z = _strong(z)
  prev, cur = jnp.zeros_like(z), jnp.full_like(z, 1e-16)
  norm = jnp.zeros_like(z)
  values = [None] * (n_iter + 1)
  for k in range(n_iter, -1, -1):
    # J_k = 2 (k + 1) / z J_{k+1} - J_{k+2}, from an arbitrary tiny start at the top.
    nxt = _c(z, 2.0 * (k + 1)) * cur / z - prev
    if k % 2 == 0:
      norm = norm + _c(z, 2) * nxt
    values[k] = nxt
    prev, cur = cur, nxt
  scale = norm - values[0]
  return jnp.stack([values[k] / scale for k in range(v + 1)])


def _normalized_legendre(l_max, x):
  """Fully normalized associated Legendre functions (with the Condon-Shortley phase) as a
  nested list ``p[m][l]`` for ``0 <= m <= l <= l_max``: ``sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!)
  P_l^m(x)``, by the standard stable recurrences in ``l`` from the diagonal."""
  s = lax.sqrt(lax.max(_c(x, 1) - x * x, _c(x, 0)))
  p = [[None] * (l_max + 1) for _ in range(l_max + 1)]
  diag = jnp.full_like(x, 0.5 / _SQRT_PI)
  for m in range(l_max + 1):
    if m > 0:
      diag = diag * s * _c(x, -math.sqrt((2 * m + 1) / (2 * m)))
    p[m][m] = diag
    if m + 1 <= l_max:
      p[m][m + 1] = x * _c(x, math.sqrt(2 * m + 3)) * diag
    for l in range(m + 2, l_max + 1):
      a = math.sqrt((4 * l * l - 1) / (l * l - m * m))
      b = math.sqrt(((l - 1) ** 2 - m * m) / (4 * (l - 1) ** 2 - 1))
      p[m][l] = _c(x, a) * (x * p[m][l - 1] - _c(x, b) * p[m][l - 2])
  return p


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """Spherical harmonics ``Y_n^m(theta, phi)`` (``theta`` the polar angle, ``phi`` the
  azimuth), SciPy's ``sph_harm_y`` convention (Condon-Shortley phase). ``n_max`` (the
  largest degree, a static integer) must be given under transformations; by default it is
  ``max(n)``."""
  if diff_n is not None:
    raise NotImplementedError("sph_harm_y: the 'diff_n' argument is not supported.")
  if n_max is None:
    try:
      n_max = int(np.max(np.asarray(n)))
    except Exception as e:
      raise TypeError("sph_harm_y: n_max must be given statically when n is traced (under "
                      "jit, vmap or grad)") from e
  n_max = _concrete_int(n_max, "The n_max argument of sph_harm_y")
  n = jnp.asarray(n)
  m = jnp.asarray(m)
  theta, phi = promote_args_inexact("sph_harm_y", theta, phi)
  theta, phi = _strong(theta), _strong(phi)
  if theta.ndim == 0:
    theta = jnp.reshape(theta, (1,))
  shape = np.broadcast_shapes(n.shape, m.shape, theta.shape, phi.shape)
  n, m, theta, phi = (jnp.broadcast_to(a, shape) for a in (n, m, theta, phi))
  abs_m = jnp.abs(m)
  p = _normalized_legendre(n_max, jnp.cos(theta))
  zero = jnp.zeros_like(theta)
  legendre = zero
  for mm in range(n_max + 1):
    for ll in range(mm, n_max + 1):
      legendre = jnp.where((abs_m == mm) & (n == ll), p[mm][ll], legendre)
  angle = lax.convert_element_type(abs_m, _dtype(phi)) * phi
  y = lax.complex(legendre * jnp.cos(angle), legendre * jnp.sin(angle))
  # Y_n^{-m} = (-1)^m conj(Y_n^m)
  parity = jnp.where(abs_m % 2 == 1, _c(theta, -1), _c(theta, 1))
  return jnp.where(m < 0, lax.complex(parity, zero) * jnp.conj(y), y)


# --- the Faddeeva function and relatives --------------------------------------------------

def _weideman_coefficients(n_terms=32):
  """Weideman's (1994) rational expansion of the Faddeeva function: with
  ``Z = (L + iz) / (L - iz)``, ``w(z) ~ 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz))`` for
  ``Im z >= 0``, where the coefficients of ``p`` are the Fourier coefficients of
  ``(L^2 + t^2) exp(-t^2)`` under ``t = L tan(theta / 2)``, computed here by an FFT."""
  m = 2 * n_terms
  k = np.arange(-m + 1, m)
  L = math.sqrt(n_terms / math.sqrt(2))
  t = L * np.tan(k * np.pi / (2 * m))
  f = np.concatenate([[0.0], np.exp(-t * t) * (L * L + t * t)])
  a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
  return L, a[1:n_terms + 1][::-1].copy()


_W_L, _W_COEFS = _weideman_coefficients()


def _w_upper(z):
  """The Faddeeva function for ``Im z >= 0``."""
  iz = lax.complex(-jnp.imag(z), jnp.real(z))
  denom = _c(z, _W_L) - iz
  big_z = (_c(z, _W_L) + iz) / denom
  poly = jnp.polyval(np.asarray(_W_COEFS, _dtype(z)), big_z)
  return _c(z, 2) * poly / (denom * denom) + _c(z, 1 / _SQRT_PI) / denom


@custom_jvp
def _wofz(z):
  upper = jnp.imag(z) >= 0
  w = _w_upper(jnp.where(upper, z, -z))
  # w(z) = 2 exp(-z^2) - w(-z) in the lower half plane
  lower_val = _c(z, 2) * jnp.exp(-(z * z)) - w
  return jnp.where(upper, w, lower_val)


_wofz.defjvps(lambda g, ans, z: g * (_c(z, -2) * z * ans + _c(z, 2j / _SQRT_PI)))


def wofz(z):
  """The Faddeeva function ``w(z) = exp(-z^2) erfc(-i z)`` (complex result), by Weideman's
  32-term rational approximation (about 1e-14 relative accuracy)."""
  z, = promote_args_inexact("wofz", z)
  if not _is_complex(z):
    cdt = np.dtype(np.complex128) if _dtype(z) == np.float64 else np.dtype(np.complex64)
    z = lax.convert_element_type(z, cdt)
  return _strong(_wofz(z))


def _erfcx_real(x):
  ax = lax.abs(x)
  # For real x >= 0, w(ix) = erfcx(x) and Weideman's expansion is real there.
  denom = _c(x, _W_L) + ax
  big_z = (_c(x, _W_L) - ax) / denom
  poly = jnp.polyval(np.asarray(_W_COEFS, _dtype(x)), big_z)
  pos = _c(x, 2) * poly / (denom * denom) + _c(x, 1 / _SQRT_PI) / denom
  neg = _c(x, 2) * lax.exp(x * x) - pos
  out = jnp.where(x < 0, neg, pos)
  return jnp.where(jnp.isposinf(x), _c(x, 0), jnp.where(jnp.isneginf(x), _c(x, np.inf), out))


@custom_jvp
def _erfcx(x):
  return _in_work(_erfcx_real)(x)


_erfcx.defjvps(lambda g, ans, x: g * (_c(x, 2) * x * ans - _c(x, 2 / _SQRT_PI)))


def erfcx(x):
  """The scaled complementary error function ``exp(x^2) erfc(x)`` (real or complex)."""
  x, = promote_args_inexact("erfcx", x)
  if _is_complex(x):
    return _strong(_wofz(lax.complex(-jnp.imag(x), jnp.real(x))))
  return _strong(_erfcx(x))


_DAWSN_SERIES_BELOW = 1.0
_DAWSN_TERMS = 26


def _dawsn_real(x):
  # |x| < 1: the alternating series sum (-2 x^2)^k x / (2k+1)!!; beyond, Im w(x) sqrt(pi)/2.
  small = lax.abs(x) < _c(x, _DAWSN_SERIES_BELOW)
  xs = jnp.where(small, x, jnp.zeros_like(x))
  y = _c(x, -2) * xs * xs
  term, total = xs, xs
  for k in range(1, _DAWSN_TERMS):
    term = term * y / _c(x, 2 * k + 1)
    total = total + term
  xl = jnp.where(small, jnp.ones_like(x), x)
  cdt = np.dtype(np.complex128) if _dtype(x) == np.float64 else np.dtype(np.complex64)
  w = _wofz(lax.convert_element_type(xl, cdt))
  out = jnp.where(small, total, _c(x, _SQRT_PI / 2) * jnp.imag(w))
  return jnp.where(jnp.isinf(x), _c(x, 0), out)


@custom_jvp
def _dawsn(x):
  return _in_work(_dawsn_real)(x)


_dawsn.defjvps(lambda g, ans, x: g * (_c(x, 1) - _c(x, 2) * x * ans))


def dawsn(x):
  """Dawson's integral ``exp(-x^2) int_0^x exp(t^2) dt``."""
  x, = promote_args_inexact("dawsn", x)
  _no_complex("dawsn", x)
  return _strong(_dawsn(x))


_FRESNEL_SERIES_BELOW = 1.0
_FRESNEL_TERMS = 16


def _fresnel_real(x):
  ax = lax.abs(x)
  small = ax < _c(x, _FRESNEL_SERIES_BELOW)
  xs = jnp.where(small, ax, jnp.zeros_like(ax))
  # Power series: C = sum (-1)^n (pi/2)^(2n) x^(4n+1) / ((2n)! (4n+1)),
  #               S = sum (-1)^n (pi/2)^(2n+1) x^(4n+3) / ((2n+1)! (4n+3)).
  h = _c(x, math.pi / 2) * xs * xs
  c_term = xs  # (pi/2 x^2)^(2n) x / (2n)!
  s_term = h * xs  # (pi/2 x^2)^(2n+1) x / (2n+1)!
  c_sum, s_sum = c_term, s_term / _c(x, 3)
  for n in range(1, _FRESNEL_TERMS):
    c_term = -c_term * h * h / _c(x, (2 * n - 1) * (2 * n))
    s_term = -s_term * h * h / _c(x, (2 * n) * (2 * n + 1))
    c_sum = c_sum + c_term / _c(x, 4 * n + 1)
    s_sum = s_sum + s_term / _c(x, 4 * n + 3)
  # Beyond: C + i S = (1 + i)/2 (1 - exp(i pi x^2 / 2) w((1 + i) sqrt(pi) x / 2)).
  xl = jnp.where(small | jnp.isinf(ax), jnp.ones_like(ax), ax)
  cdt = np.dtype(np.complex128) if _dtype(x) == np.float64 else np.dtype(np.complex64)
  u = lax.convert_element_type(xl * _c(x, _SQRT_PI / 2), cdt)
  w = _w_upper(lax.complex(jnp.real(u), jnp.real(u)))
  ph = _c(x, math.pi / 2) * xl * xl
  e = lax.complex(jnp.cos(ph), jnp.sin(ph))
  v = _c(u, 1) - e * w
  val = _c(u, 0.5 + 0.5j) * v
  c_large, s_large = jnp.real(val), jnp.imag(val)
  c_large = jnp.where(jnp.isinf(ax), _c(x, 0.5), c_large)
  s_large = jnp.where(jnp.isinf(ax), _c(x, 0.5), s_large)
  sign = jnp.sign(x)
  s = sign * jnp.where(small, s_sum, s_large)
  c = sign * jnp.where(small, c_sum, c_large)
  return s, c


@custom_jvp
def _fresnel(x):
  return _in_work(_fresnel_real)(x)


def _fresnel_jvp(primals, tangents):
  x, = primals
  t, = tangents
  s, c = _fresnel(x)
  ph = _c(x, math.pi / 2) * x * x
  return (s, c), (t * jnp.sin(ph), t * jnp.cos(ph))


_fresnel.defjvp(_fresnel_jvp)


def fresnel(x):
  """The Fresnel integrals ``(S(x), C(x))``: ``int_0^x sin(pi t^2 / 2) dt`` and the cosine
  counterpart."""
  x, = promote_args_inexact("fresnel", x)
  _no_complex("fresnel", x)
  s, c = _fresnel(_strong(x))
  return s, c


# --- exponential and trigonometric integrals ----------------------------------------------

_E1_SERIES_BELOW = 1.0
_SERIES_TERMS = 30  # x <= 1: 1 / 30! is far below double rounding
_CF_DEPTH = {np.dtype(np.float64): 100, np.dtype(np.float32): 40}


def _expn_cf(n, x):
  """``E_n(x) exp(x)`` for ``x >= 1`` from its continued fraction
  ``1 / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))``, evaluated backwards
  from a fixed depth."""
  depth = _CF_DEPTH.get(_dtype(x), 100)
  f = x + n + _c(x, 2 * depth)
  for k in range(depth, 0, -1):
    f = x + n + _c(x, 2 * (k - 1)) - _c(x, k) * (n + _c(x, k - 1)) / f
  return _c(x, 1) / f


def _expn_series(n, x):
  """``E_n(x)`` for ``0 < x <= 1`` (and integer ``n >= 1``):
  ``(-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)``."""
  total = jnp.zeros_like(x)
  term = jnp.ones_like(x)  # (-x)^k / k!
  for k in range(_SERIES_TERMS):
    if k > 0:
      term = term * (-x) / _c(x, k)
    denom = _c(x, k + 1) - n
    hit = denom == 0
    total = total - jnp.where(hit, jnp.zeros_like(x), term / jnp.where(hit, _c(x, 1), denom))
  nm1 = n - _c(x, 1)
  # (-x)^(n-1) / (n-1)! with the sign of (-1)^(n-1)
  mag = lax.exp(nm1 * jnp.log(x) - lax.lgamma(n))
  sign = jnp.where(jnp.fmod(nm1, _c(x, 2)) == 0, _c(x, 1), _c(x, -1))
  special = sign * mag * (lax.digamma(n) - jnp.log(x))
  return total + special


def _expn_value(n, x):
  small = x <= _c(x, _E1_SERIES_BELOW)
  xs = jnp.where(small & (x > 0), x, _c(x, 0.5))
  xl = jnp.where(small, _c(x, 2), x)
  n_ser = jnp.where(n >= 1, n, _c(x, 1))
  series = _expn_series(n_ser, xs)
  cf = _expn_cf(n, xl) * lax.exp(-xl)
  out = jnp.where(small, series, cf)
  out = jnp.where(n == 0, lax.exp(-x) / x, out)
  out = jnp.where(x == 0, jnp.where(n < 2, _c(x, np.inf), _c(x, 1) / lax.max(n - 1, _c(x, 1))), out)
  out = jnp.where(jnp.isposinf(x), _c(x, 0), out)
  bad = (n < 0) | (x < 0) | jnp.isnan(x) | jnp.isnan(n) | (n != lax.floor(n))
  return jnp.where(bad, _c(x, np.nan), out)


def _expn_fwd(n, x):
  return _in_work(_expn_value)(n, x)


_expn = custom_jvp(_expn_fwd, nondiff_argnums=(0,))


def _expn_jvp(n, primals, tangents):
  x, = primals
  t, = tangents
  return _expn(n, x), -t * _expn(n - _c(n, 1), x)


_expn.defjvp(_expn_jvp)


def expn(n, x):
  """The generalized exponential integral ``E_n(x) = int_1^inf exp(-x t) / t^n dt`` for
  integer-valued ``n >= 0`` (NaN for negative ``n`` or ``x``)."""
  n, x = promote_args_inexact("expn", n, x)
  _no_complex("expn", x)
  n, x = _strong(n), _strong(x)
  shape = np.broadcast_shapes(n.shape, x.shape)
  return _expn(jnp.broadcast_to(n, shape), jnp.broadcast_to(x, shape))


def exp1(x):
  """The exponential integral ``E_1(x) = int_x^inf exp(-t) / t dt``."""
  x, = promote_args_inexact("exp1", x)
  _no_complex("exp1", x)
  x = _strong(x)
  return _expn(jnp.ones_like(x), x)


_EI_SERIES_BELOW = 40.0


def _ei_pos(x):
  """``Ei(x)`` for ``x > 0``: the series ``gamma + log x + sum x^k / (k k!)`` (all terms
  positive) for ``x <= 40``, the asymptotic ``e^x / x sum k! / x^k`` beyond."""
  small = x <= _c(x, _EI_SERIES_BELOW)
  xs = jnp.where(small, x, _c(x, 1))

  def body(k, state):
    term, total = state
    kf = lax.convert_element_type(k, _dtype(x))
    term = term * xs / kf
    return term, total + term / kf

  n_terms = 170 if _dtype(x) == np.float64 else 110
  _, series = lax.fori_loop(1, n_terms, body, (jnp.ones_like(xs), jnp.zeros_like(xs)))
  series = series + _c(x, _EULER) + jnp.log(xs)
  xl = jnp.where(small, _c(x, 2 * _EI_SERIES_BELOW), x)
  term, total = jnp.ones_like(xl), jnp.ones_like(xl)
  for k in range(1, 40):
    term = term * _c(x, k) / xl
    total = total + term
  asym = lax.exp(xl) / xl * total
  return jnp.where(small, series, asym)


def _expi_value(x):
  pos = _ei_pos(jnp.where(x > 0, x, _c(x, 1)))
  neg = -_expn_value(jnp.ones_like(x), jnp.where(x < 0, -x, _c(x, 1)))
  out = jnp.where(x > 0, pos, neg)
  out = jnp.where(jnp.isposinf(x), _c(x, np.inf), out)
  out = jnp.where(jnp.isnan(x), _c(x, np.nan), out)
  return jnp.where(x == 0, _c(x, -np.inf), out)


@custom_jvp
def _expi(x):
  return _in_work(_expi_value)(x)


_expi.defjvps(lambda g, ans, x: g * lax.exp(x) / x)


def expi(x):
  """The exponential integral ``Ei(x) = -PV int_{-x}^inf exp(-t) / t dt``."""
  x, = promote_args_inexact("expi", x)
  _no_complex("expi", x)
  return _expi(_strong(x))


_SICI_SERIES_BELOW = 4.0


def _sici_real(x):
  ax = lax.abs(x)
  small = ax <= _c(x, _SICI_SERIES_BELOW)
  xs = jnp.where(small, ax, jnp.zeros_like(ax))
  # Si = sum (-1)^k x^(2k+1) / ((2k+1) (2k+1)!), Ci = gamma + log x + sum_{k>=1}
  # (-1)^k x^(2k) / (2k (2k)!); at |x| <= 4 the largest term is ~10, so 1-2 digits go.
  x2 = xs * xs
  odd = xs  # (-1)^k x^(2k+1) / (2k+1)!
  even = jnp.ones_like(xs)  # (-1)^k x^(2k) / (2k)!
  si_sum, ci_sum = xs, jnp.zeros_like(xs)
  for k in range(1, 30):
    even = -even * x2 / _c(x, (2 * k - 1) * (2 * k))
    odd = -odd * x2 / _c(x, (2 * k) * (2 * k + 1))
    ci_sum = ci_sum + even / _c(x, 2 * k)
    si_sum = si_sum + odd / _c(x, 2 * k + 1)
  safe_log = jnp.log(jnp.where(xs > 0, xs, _c(x, 1)))
  ci_small = jnp.where(xs > 0, _c(x, _EULER) + safe_log + ci_sum, _c(x, -np.inf))
  # |x| > 4: E1(i x) = -Ci(x) + i (Si(x) - pi/2), from the continued fraction of E1 in
  # complex arithmetic (backwards from a fixed depth).
  xl = jnp.where(small | jnp.isinf(ax), _c(x, 2 * _SICI_SERIES_BELOW), ax)
  cdt = np.dtype(np.complex128) if _dtype(x) == np.float64 else np.dtype(np.complex64)
  z = lax.complex(jnp.zeros_like(xl), xl)
  depth = 80 if _dtype(x) == np.float64 else 40
  f = z + _c(z, 2 * depth + 1)
  for k in range(depth, 0, -1):
    f = z + _c(z, 2 * k - 1) - _c(z, k * k) / f
  e1 = lax.complex(jnp.cos(xl), -jnp.sin(xl)) / f
  si_large = jnp.imag(e1) + _c(x, math.pi / 2)
  ci_large = -jnp.real(e1)
  si_large = jnp.where(jnp.isinf(ax), _c(x, math.pi / 2), si_large)
  ci_large = jnp.where(jnp.isinf(ax), _c(x, 0), ci_large)
  del cdt
  si = jnp.sign(x) * jnp.where(small, si_sum, si_large)
  ci = jnp.where(small, ci_small, ci_large)
  ci = jnp.where(jnp.isneginf(x), _c(x, np.nan), ci)
  return si, ci


@custom_jvp
def _sici(x):
  return _in_work(_sici_real)(x)


def _sici_jvp(primals, tangents):
  x, = primals
  t, = tangents
  si, ci = _sici(x)
  safe = jnp.where(x == 0, _c(x, 1), x)
  sinc = jnp.where(x == 0, _c(x, 1), jnp.sin(safe) / safe)
  return (si, ci), (t * sinc, t * jnp.cos(x) / x)


_sici.defjvp(_sici_jvp)


def sici(x):
  """The sine and cosine integrals ``(Si(x), Ci(x))``."""
  x, = promote_args_inexact("sici", x)
  if _is_complex(x):
    raise ValueError("Argument `x` to sici must be real-valued. (sici does not support "
                     f"complex inputs, got {x.dtype})")
  return _sici(_strong(x))


# --- Spence's function --------------------------------------------------------------------

def _li2_series(y):
  """``Li2(y) = sum y^k / k^2`` for ``|y| <= 1/2``."""
  total = jnp.zeros_like(y)
  power = jnp.ones_like(y)
  for k in range(1, 56):
    power = power * y
    total = total + power / _c(y, k * k)
  return total


def _li2_upto_one(y):
  """``Li2(y)`` for ``0 <= y <= 1``: the series below 1/2, the reflection
  ``Li2(y) = pi^2/6 - log(y) log(1 - y) - Li2(1 - y)`` above."""
  low = y <= _c(y, 0.5)
  ys = jnp.where(low, y, _c(y, 0))
  yr = jnp.where(low, _c(y, 0.5), y)
  one_minus = _c(y, 1) - yr
  refl = (_c(y, math.pi ** 2 / 6) - jnp.log(yr) * jnp.log(jnp.where(one_minus > 0, one_minus, _c(y, 1)))
          - _li2_series(one_minus))
  return jnp.where(low, _li2_series(ys), refl)


def _li2(y):
  """``Li2(y)`` for real ``y <= 1``; negative ``y`` through Landen's identity
  ``Li2(y) = -Li2(y / (y - 1)) - log(1 - y)^2 / 2`` (which maps them into [0, 1))."""
  neg = y < 0
  yn = jnp.where(neg, y, _c(y, 0))
  landen = yn / (yn - _c(y, 1))
  lg = jnp.log1p(-yn)
  neg_val = -_li2_upto_one(landen) - _c(y, 0.5) * lg * lg
  return jnp.where(neg, neg_val, _li2_upto_one(jnp.where(neg, _c(y, 0), y)))


def _spence_value(x):
  # spence(x) = Li2(1 - x); for x > 2 (1 - x < -1), the inversion
  # Li2(y) = -pi^2/6 - log(-y)^2 / 2 - Li2(1 / y) keeps the argument in [-1, 0).
  big = x > _c(x, 2)
  y = _c(x, 1) - jnp.where(big, _c(x, 0), x)
  direct = _li2(y)
  yb = _c(x, 1) - jnp.where(big, x, _c(x, 3))
  lg = jnp.log(-yb)
  inverted = _c(x, -math.pi ** 2 / 6) - _c(x, 0.5) * lg * lg - _li2(_c(x, 1) / yb)
  out = jnp.where(big, inverted, direct)
  return jnp.where((x < 0) | jnp.isnan(x) | jnp.isposinf(x), _c(x, np.nan), out)


@custom_jvp
def _spence(x):
  return _spence_value(x)


def _spence_jvp(primals, tangents):
  x, = primals
  t, = tangents
  # d/dx Li2(1 - x) = log(x) / (1 - x), -1 at x = 1
  one = x == 1
  safe = jnp.where(one, _c(x, 2), x)
  d = jnp.where(one, _c(x, -1), jnp.log(safe) / (_c(x, 1) - safe))
  return _spence(x), t * d


_spence.defjvp(_spence_jvp)


def spence(x):
  """Spence's function ``int_1^x log(t) / (1 - t) dt = Li2(1 - x)`` for ``x >= 0`` (NaN
  below; float32/float64 input only, as JAX)."""
  return _spence(_strong(_real_float_only("spence", x)))


# --- Bernoulli numbers --------------------------------------------------------------------

def _bernoulli_fractions(n):
  """``B_0 ... B_n`` exactly (``B_1 = -1/2``), by the Akiyama-Tanigawa algorithm."""
  out = []
  a = [Fraction(0)] * (n + 1)
  for m in range(n + 1):
    a[m] = Fraction(1, m + 1)
    for j in range(m, 0, -1):
      a[j - 1] = j * (a[j - 1] - a[j])
    out.append(a[0])
  if n >= 1:
    out[1] = -out[1]
  return out


def bernoulli(n):
  """The Bernoulli numbers ``B_0 ... B_n`` (``B_1 = -1/2``, as SciPy), ``n`` a concrete
  non-negative integer."""
  n = _concrete_int(n, "Argument n of bernoulli")
  if n < 0:
    raise ValueError("bernoulli: n must be a non-negative integer.")
  values = np.array([float(b) for b in _bernoulli_fractions(n)])
  return jnp.asarray(values, dtype=dtypes.canonicalize_dtype(np.float64))


# --- Owen's T -----------------------------------------------------------------------------

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)
_OWENS_T_SPAN = 12.0  # exp(-12^2 / 2) is far below every dtype's resolution


def _owens_t_small_a(h, a):
  """``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx`` for ``0 <= a <= 1``
  and ``h >= 0`` by 48-point Gauss-Legendre quadrature on ``[0, min(a, 12 / h)]`` (the
  integrand is negligible beyond)."""
  upper = lax.min(a, _c(h, _OWENS_T_SPAN) / lax.max(h, _c(h, 1e-300 if _dtype(h) == np.float64
                                                                 else 1e-30)))
  nodes = np.asarray((_GL_NODES + 1) / 2, _dtype(h))
  weights = np.asarray(_GL_WEIGHTS / 2, _dtype(h))
  xs = jnp.expand_dims(upper, -1) * nodes
  one_x2 = _c(h, 1) + xs * xs
  hh = jnp.expand_dims(h * h, -1)
  integrand = lax.exp(_c(h, -0.5) * hh * one_x2) / one_x2
  return upper * jnp.sum(integrand * weights, axis=-1) / _c(h, 2 * math.pi)


def _owens_t_value(h, a):
  ah = lax.abs(h)
  aa = lax.abs(a)
  small = aa <= _c(a, 1)
  a1 = jnp.where(small, aa, _c(a, 1) / jnp.where(aa == 0, _c(a, 1), aa))
  h1 = jnp.where(small, ah, aa * ah)
  t = _owens_t_small_a(h1, a1)
  # For a > 1: T(h, a) = (Phi(h) Phi_c(ah) + Phi(ah) Phi_c(h)) / 2 - T(ah, 1 / a) (h >= 0),
  # with Phi_c the upper tail, computed directly so nothing cancels.
  def cdf(v):
    return _ndtr(v)
  big = (cdf(ah) * cdf(-aa * ah) + cdf(aa * ah) * cdf(-ah)) * _c(h, 0.5) - t
  out = jnp.where(small, t, big)
  out = jnp.where(jnp.isposinf(aa), _c(h, 0.5) * cdf(-ah), out)
  out = jnp.sign(a) * out
  return jnp.where(jnp.isnan(a) | jnp.isnan(h), _c(h, np.nan), out)


@custom_jvp
def _owens_t(h, a):
  return _in_work(_owens_t_value)(h, a)


def _owens_t_jvp(primals, tangents):
  h, a = primals
  dh, da = tangents
  out = _owens_t(h, a)
  # dT/dh = -phi(h) erf(a h / sqrt 2) / 2, dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))
  d_h = (-lax.exp(_c(h, -0.5) * h * h) * lax.erf(a * h * _c(h, math.sqrt(0.5)))
         / _c(h, 2 * math.sqrt(2 * math.pi)))
  one_a2 = _c(a, 1) + a * a
  d_a = lax.exp(_c(h, -0.5) * h * h * one_a2) / (_c(h, 2 * math.pi) * one_a2)
  return out, (d_h * dh + d_a * da).astype(out.dtype)


_owens_t.defjvp(_owens_t_jvp)


def owens_t(h, a):
  """Owen's T function ``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``."""
  h, a = promote_args_inexact("owens_t", h, a)
  h, a = _strong(h), _strong(a)
  shape = np.broadcast_shapes(h.shape, a.shape)
  return _owens_t(jnp.broadcast_to(h, shape), jnp.broadcast_to(a, shape))


# --- hypergeometric functions -------------------------------------------------------------

_HYP_MAX_TERMS = 500


def _series_until_converged(ratio, first, weight=None):
  """``sum_k t_k`` (or ``sum_k t_k w_k`` with ``weight(k)``) where ``t_0 = first`` and
  ``t_{k+1} = t_k ratio(k)``, lanes stopping as their terms fall below eps of the sum."""
  eps = _c(first, float(np.finfo(_dtype(first)).eps))
  k0 = jnp.zeros_like(first)
  total0 = first if weight is None else first * weight(k0)

  def cond(state):
    k, _, _, going = state
    return jnp.any(going)

  def body(state):
    k, term, total, going = state
    term1 = term * ratio(k)
    k1 = k + _c(k, 1)
    add = term1 if weight is None else term1 * weight(k1)
    total1 = total + add
    going1 = going & (lax.abs(add) > eps * lax.abs(total1)) & (k1 < _c(k1, _HYP_MAX_TERMS))
    going1 = going1 & ~jnp.isnan(total1)
    keep = lambda new, old: jnp.where(going, new, old)
    return keep(k1, k), keep(term1, term), keep(total1, total), going1

  going = ~jnp.isnan(first) | True
  going = going & (first == first)
  if weight is not None:
    # A weighted series whose first weight is 0 must still run.
    pass
  _, _, total, _ = lax.while_loop(cond, body, (k0, first, total0, going))
  return total


def _hyp1f1_series(a, b, x):
  return _series_until_converged(lambda k: (a + k) / ((b + k) * (k + _c(k, 1))) * x,
                                 jnp.ones_like(x))


def _hyp1f1_asymptotic(a, b, x):
  # M(a, b, x) ~ Gamma(b) / Gamma(a) e^x x^(a-b) sum (b-a)_k (1-a)_k / (k! x^k), x -> +inf
  total = jnp.ones_like(x)
  term = jnp.ones_like(x)
  for k in range(30):
    term = term * (b - a + _c(x, k)) * (_c(x, 1 - k) - a) / (_c(x, k + 1) * x)
    total = total + term
  return gamma(b) / gamma(a) * lax.exp(x) * x ** (a - b) * total


def _hyp1f1_value(a, b, x):
  # Kummer's transformation M(a, b, x) = e^x M(b - a, b, -x) makes the series' terms
  # positive for x < 0 (when b > a), avoiding the cancellation of an alternating sum.
  neg = x < 0
  aa = jnp.where(neg, b - a, a)
  xx = lax.abs(x)
  big = xx >= _c(x, 100)
  series = _hyp1f1_series(aa, b, jnp.where(big, jnp.zeros_like(xx), xx))
  asym = _hyp1f1_asymptotic(aa, b, jnp.where(big, xx, _c(x, 100)))
  val = jnp.where(big, asym, series)
  val = jnp.where(neg, lax.exp(x) * val, val)
  val = jnp.where(a == 0, _c(x, 1), val)
  val = jnp.where((a == b) & (a != 0), lax.exp(x), val)
  return jnp.where((b == 0) & (a != 0), _c(x, np.inf), val)


def _bcast(*xs):
  shape = np.broadcast_shapes(*(get_aval(x).shape for x in xs))
  return [jnp.broadcast_to(x, shape) for x in xs]


@custom_jvp
def _hyp1f1(a, b, x):
  return _in_work(_hyp1f1_value)(a, b, x)


def _hyp1f1_param_series(a, b, x, which):
  """The derivative of the power series of M(a, b, x) in ``a`` or ``b``, term by term."""
  ratio = lambda k: (a + k) / ((b + k) * (k + _c(k, 1))) * x
  if which == "a":
    weight = lambda k: lax.digamma(a + k) - lax.digamma(a)
  else:
    weight = lambda k: lax.digamma(b) - lax.digamma(b + k)
  return _series_until_converged(ratio, jnp.ones_like(x), weight)


def _hyp1f1_jvp(primals, tangents):
  a, b, x = primals
  da, db, dx = tangents
  out = _hyp1f1(a, b, x)
  d_x = a / b * _hyp1f1(a + _c(a, 1), b + _c(b, 1), x)
  d_a = _hyp1f1_param_series(a, b, x, "a")
  d_b = _hyp1f1_param_series(a, b, x, "b")
  return out, d_a * da + d_b * db + d_x * dx


_hyp1f1.defjvp(_hyp1f1_jvp)


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function ``1F1(a; b; x) = M(a, b, x)``."""
  a, b, x = promote_args_inexact("hyp1f1", a, b, x)
  _no_complex("hyp1f1", x)
  return _hyp1f1(*_bcast(_strong(a), _strong(b), _strong(x)))


def _f21_series(a, b, c, y):
  return _series_until_converged(
      lambda k: (a + k) * (b + k) / ((c + k) * (k + _c(k, 1))) * y, jnp.ones_like(y))


def _f21_unit(a, b, c, y):
  """``2F1(a, b; c; y)`` for ``0 <= y < 1``: the series up to 1/2; beyond, when ``c - a - b``
  is not an integer, the connection formula to ``1 - y``; otherwise the (slower) series."""
  d = c - a - b
  d_int = d == lax.round(d)
  # A non-positive integer a or b ends the series (a polynomial): sum it directly, where the
  # connection formula would divide by gamma at a pole.
  terminating = ((a <= 0) & (a == lax.round(a))) | ((b <= 0) & (b == lax.round(b)))
  near = (y > _c(y, 0.5)) & ~d_int & ~terminating
  ys = jnp.where(near, jnp.zeros_like(y), y)
  direct = _f21_series(a, b, c, ys)
  s = jnp.where(near, _c(y, 1) - y, _c(y, 0.5))
  dd = jnp.where(d_int, _c(y, 0.5), d)
  g = gamma
  t1 = g(c) * g(dd) / (g(c - a) * g(c - b)) * _f21_series(a, b, _c(y, 1) - dd, s)
  t2 = (s ** dd * g(c) * g(-dd) / (g(a) * g(b))) * _f21_series(c - a, c - b, dd + _c(y, 1), s)
  return jnp.where(near, t1 + t2, direct)


def _hyp2f1_value(a, b, c, x):
  neg = x < 0
  # Pfaff: 2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)) maps x < 0 into (0, 1).
  xn = jnp.where(neg, x, jnp.zeros_like(x))
  y = jnp.where(neg, xn / (xn - _c(x, 1)), jnp.where((x >= 0) & (x < 1), x, jnp.zeros_like(x)))
  bb = jnp.where(neg, c - b, b)
  val = _f21_unit(a, bb, c, y)
  val = jnp.where(neg, (_c(x, 1) - xn) ** (-a) * val, val)
  d = c - a - b
  at_one = jnp.where(d > 0, gamma(c) * gamma(d) / (gamma(c - a) * gamma(c - b)), _c(x, np.inf))
  val = jnp.where(x == 1, at_one, val)
  val = jnp.where(x > 1, _c(x, np.inf), val)
  c_pole = (c <= 0) & (c == lax.floor(c))
  val = jnp.where(c_pole, _c(x, np.inf), val)
  return jnp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), _c(x, 1), val)


@custom_jvp
def _hyp2f1(a, b, c, x):
  return _in_work(_hyp2f1_value)(a, b, c, x)


def _hyp2f1_jvp(primals, tangents):
  a, b, c, x = primals
  da, db, dc, dx = tangents
  out = _hyp2f1(a, b, c, x)
  one = _c(a, 1)
  d_x = a * b / c * _hyp2f1(a + one, b + one, c + one, x)
  ratio = lambda k: (a + k) * (b + k) / ((c + k) * (k + _c(k, 1))) * x
  first = jnp.ones_like(x)
  d_a = _series_until_converged(ratio, first, lambda k: lax.digamma(a + k) - lax.digamma(a))
  d_b = _series_until_converged(ratio, first, lambda k: lax.digamma(b + k) - lax.digamma(b))
  d_c = _series_until_converged(ratio, first, lambda k: lax.digamma(c) - lax.digamma(c + k))
  return out, d_a * da + d_b * db + d_c * dc + d_x * dx


_hyp2f1.defjvp(_hyp2f1_jvp)


def hyp2f1(a, b, c, x):
  """Gauss' hypergeometric function ``2F1(a, b; c; x)`` for real ``x <= 1`` (``inf`` beyond,
  as JAX)."""
  a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
  _no_complex("hyp2f1", x)
  return _hyp2f1(*_bcast(_strong(a), _strong(b), _strong(c), _strong(x)))


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
# (``expi``, ``sici``, ``expn``, ``hyp1f1`` and ``hyp2f1`` are custom_jvp functions outside
# their jit in JAX: their jaxprs show the custom_jvp_call, as here.)
fuse_functions(globals(), ["gammasgn", "bessel_jn"], {}, default_static=("v", "n_iter"),
               staged=("gammasgn", "bessel_jn"))
