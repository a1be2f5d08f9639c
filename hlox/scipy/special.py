"""``hlox.scipy.special``: special functions with ``jax.scipy.special``'s names and dtype rules
(arguments promoted together to an inexact dtype), on the ``hlox.lax`` primitives."""
from __future__ import annotations

import math

import numpy as np

from hlox import autodiff, lax
from hlox import numpy as jnp
from hlox.custom_derivatives import custom_jvp
from hlox.core.tracer import get_aval
from hlox.numpy.util import canonicalize_axis_tuple, promote_args_inexact

__all__ = ["betainc", "betaln", "digamma", "erf", "erfc", "erfinv", "expit", "gammainc",
           "gammaincc", "gammaln", "i0e", "i1e", "logit", "logsumexp", "polygamma",
           "xlog1py", "xlogy", "zeta"]


def _one(x):
  return np.array(1, get_aval(x).dtype)


def gammaln(x):
  """``log(|Gamma(x)|)``."""
  return lax.lgamma(*promote_args_inexact("gammaln", x))


def digamma(x):
  """The digamma function, the derivative of ``gammaln``."""
  return lax.digamma(*promote_args_inexact("digamma", x))


def polygamma(n, x):
  """The ``n``-th derivative of ``digamma`` (``n`` of an integer dtype, as JAX)."""
  if not np.issubdtype(get_aval(n).dtype, np.integer):
    raise ValueError("polygamma: argument `n` must be of integer type; got dtype "
                     f"{get_aval(n).dtype}")
  return lax.polygamma(*promote_args_inexact("polygamma", n, x))


def erf(x):
  """The error function."""
  return lax.erf(*promote_args_inexact("erf", x))


def erfc(x):
  """The complementary error function ``1 - erf(x)``."""
  return lax.erfc(*promote_args_inexact("erfc", x))


def erfinv(x):
  """The inverse of ``erf``."""
  return lax.erf_inv(*promote_args_inexact("erfinv", x))


def gammainc(a, x):
  """The regularized lower incomplete gamma function ``P(a, x)``."""
  return lax.igamma(*promote_args_inexact("gammainc", a, x))


def gammaincc(a, x):
  """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
  return lax.igammac(*promote_args_inexact("gammaincc", a, x))


def betaln(a, b):
  """``log(|B(a, b)|)``: ``gammaln(a) + gammaln(b) - gammaln(a + b)``, with the last two
  terms taken together from a series when the larger argument is 8 or more (their
  difference would otherwise cancel away, as for ``betaln(1e30, 1) = -log(1e30)``)."""
  a, b = promote_args_inexact("betaln", a, b)
  a, b = jnp.minimum(a, b), jnp.maximum(a, b)
  direct = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
  return jnp.where(b < 8, direct, lax.lgamma(a) + _lgamma_difference(a, b))


# Coefficients of cdflib's ``algdiv`` (the series JAX and SciPy use): its correction term is
# ``sum_k C_k S_2k+1(x) / b**2k * (c / b)`` in the variables below.
_ALGDIV = (0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03,
           -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02)


def _lgamma_difference(a, b):
  """``lgamma(b) - lgamma(a + b)`` for ``b >= 8`` and ``a <= b`` without forming the two
  (huge, nearly equal) terms: ``w - a (log b - 1) - (a + b - 1/2) log1p(a / b)`` with ``w``
  the remainder of Stirling's series, as cdflib's ``algdiv`` (in JAX's order of operations,
  Python-scalar constants included, so the result rounds as JAX's)."""
  h = a / b
  c = h / (1 + h)
  x2 = c * c
  # s_k = 1 + x + ... + x**(k-1), nested so that each reuses the previous.
  s = [1.0 + (c + x2)]
  for _ in range(4):
    s.append(1.0 + (c + x2 * s[-1]))
  t = (1.0 / b) ** 2
  w = _ALGDIV[5] * s[4] * t
  for k in (4, 3, 2, 1):
    w = (w + _ALGDIV[k] * s[k - 1]) * t
  w = (w + _ALGDIV[0]) * (c / b)
  u = (b + (a - 0.5)) * lax.log1p(a / b)
  v = a * (lax.log(b) - 1.0)
  # Subtract the larger of u and v last.
  return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betainc(a, b, x):
  """The regularized incomplete beta function ``I_x(a, b)``."""
  return lax.betainc(*promote_args_inexact("betainc", a, b, x))


def i0e(x):
  """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0."""
  return lax.bessel_i0e(*promote_args_inexact("i0e", x))


def i1e(x):
  """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1."""
  return lax.bessel_i1e(*promote_args_inexact("i1e", x))


@custom_jvp
def zeta(x, q=None):
  """The Hurwitz zeta function ``sum_n (n + q) ** -x`` (``q`` is required, as in JAX).

  Differentiable in both arguments: derivatives are those of an Euler-Maclaurin expansion of
  the sum (as JAX computes them), since zeta has no closed-form derivative in ``x``."""
  if q is None:
    raise NotImplementedError("hlox.scipy.special.zeta: the Riemann zeta function (q=None) "
                              "is not implemented; pass q=1")
  return lax.zeta(*promote_args_inexact("zeta", x, q))


def _bernoulli_factorial_ratios(count: int) -> list:
  """``(2k)! / B_2k`` for k = 1..count (B_n the Bernoulli numbers, from their recurrence)."""
  from fractions import Fraction
  bernoulli = [Fraction(1)]
  for n in range(1, 2 * count + 1):
    bernoulli.append(-sum(math.comb(n + 1, j) * bernoulli[j] for j in range(n)) / (n + 1))
  return [float(math.factorial(2 * k) / bernoulli[2 * k]) for k in range(1, count + 1)]


_ZETA_TERMS = {np.dtype(np.float32): 8, np.dtype(np.float64): 16}
_ZETA_RATIOS = _bernoulli_factorial_ratios(max(_ZETA_TERMS.values()))


def _zeta_euler_maclaurin(x, q):
  """``zeta(x, q)`` as ``S + I + T`` of Johansson (2015, "Rigorous high-precision computation
  of the Hurwitz zeta function and its derivatives", eq. 5) with N = M terms: the first N
  terms of the sum, the integral of the tail, and M Bernoulli corrections."""
  x, q = promote_args_inexact("zeta", x, q)
  dtype = get_aval(q).dtype
  n = _ZETA_TERMS.get(np.dtype(dtype), 16)
  k = np.arange(n, dtype=dtype)
  head = jnp.sum((q[..., None] + k) ** -x[..., None], axis=-1)
  tail_start = q + n
  integral = tail_start ** (1 - x) / (x - 1)
  first = tail_start ** -x
  # (x)_{2j+1} / tail_start**(2j+1), for j < M: every other entry of a running product.
  m = np.arange(2 * n, dtype=dtype)
  rising = jnp.cumprod((x[..., None] + m) / tail_start[..., None], axis=-1)[..., ::2]
  rising = jnp.minimum(rising, np.finfo(dtype).max)
  corrections = jnp.sum(rising / np.asarray(_ZETA_RATIOS[:n], dtype), axis=-1)
  return head + integral + first * (0.5 + corrections)


@zeta.defjvp
def _zeta_jvp(primals, tangents):
  return autodiff.jvp(_zeta_euler_maclaurin, primals, tangents)


def expit(x):
  """The logistic sigmoid ``1 / (1 + exp(-x))``."""
  return lax.logistic(*promote_args_inexact("expit", x))


@custom_jvp
def logit(x):
  """``log(x / (1 - x))``, the inverse of ``expit``."""
  x, = promote_args_inexact("logit", x)
  return lax.log(lax.div(x, lax.sub(_one(x), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_one(x), x))))


@custom_jvp
def xlogy(x, y):
  """``x * log(y)``, and 0 where ``x == 0`` (unless ``y`` is NaN), with derivatives defined
  there too."""
  x, y = promote_args_inexact("xlogy", x, y)
  use = jnp.logical_or(x != 0, jnp.isnan(y))
  return jnp.where(use, lax.mul(x, lax.log(y)), jnp.zeros_like(x))


def _xlogy_jvp(primals, tangents):
  x, y = primals
  x_dot, y_dot = tangents
  out = xlogy(x, y)
  return out, (x_dot * jnp.log(y) + y_dot * x / y).astype(out.dtype)


xlogy.defjvp(_xlogy_jvp)


@custom_jvp
def xlog1py(x, y):
  """``x * log1p(y)``, and 0 where ``x == 0`` (unless ``y`` is NaN), with derivatives defined
  there too."""
  x, y = promote_args_inexact("xlog1py", x, y)
  use = jnp.logical_or(x != 0, jnp.isnan(y))
  return jnp.where(use, lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


def _xlog1py_jvp(primals, tangents):
  x, y = primals
  x_dot, y_dot = tangents
  out = xlog1py(x, y)
  return out, (x_dot * jnp.log1p(y) + y_dot * x / (1 + y)).astype(out.dtype)


xlog1py.defjvp(_xlog1py_jvp)


def _as_dtype(x, dtype):
  return x if x.dtype == dtype else lax.convert_element_type(x, dtype)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """``log(sum(b * exp(a), axis))`` computed stably (shifted by the maximum real part).

  With ``return_sign`` the result is ``(log|s|, sign(s))`` (for complex input the sign is
  ``s / |s|`` and the logarithm real); otherwise a negative real sum gives NaN and a complex
  one its complex logarithm. Entries outside ``where`` take no part, nor any gradient."""
  if where is not None:
    a = jnp.where(where, a, 0)  # masked entries must not reach exp (inf * 0 in gradients)
  if b is not None:
    a, b = promote_args_inexact("logsumexp", a, b)
    a = jnp.where(b != 0, a, -jnp.inf)
  else:
    a, = promote_args_inexact("logsumexp", a)
  a = jnp.asarray(a)
  is_complex = jnp.iscomplexobj(a)
  dims = canonicalize_axis_tuple(axis, a.ndim, "logsumexp")
  amax = jnp.max(jnp.real(a) if is_complex else a, axis=dims, keepdims=keepdims, where=where,
                 initial=-jnp.inf)
  # The shift only steadies the sum; it carries no gradient of its own. (The operations
  # are JAX's, in its order, so that jaxprs read the same.)
  finite = jnp.isfinite(amax)
  zero = lax.full_like(amax, 0) if amax.ndim else np.zeros((), amax.dtype)  # 0-d: a literal
  amax = lax.stop_gradient(lax.select(finite, amax, zero))
  shift = amax if keepdims else lax.expand_dims(amax, dims)
  exp_a = lax.exp(lax.sub(a, _as_dtype(shift, a.dtype)))
  if b is not None:
    exp_a = lax.mul(exp_a, b)
  total = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
  sign = lax.sign(total)
  if return_sign or not is_complex:
    total = jnp.abs(total)
  out = lax.add(lax.log(total), _as_dtype(amax, total.dtype))
  if return_sign:
    return out, sign
  if b is None or is_complex:
    return out
  return jnp.where(sign < 0, jnp.array(np.nan, out.dtype), out)


# The rest of jax.scipy.special's names live in their own module.
from hlox.scipy import special_more as _special_more  # noqa: E402
from hlox.scipy.special_more import *  # noqa: E402,F401,F403

__all__ += _special_more.__all__
