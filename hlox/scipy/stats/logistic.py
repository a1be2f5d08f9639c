"""The logistic distribution (``jax.scipy.stats.logistic``)."""
from __future__ import annotations

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """Log density ``-2 log(2 cosh(z / 2)) - log(scale)``, stable for large ``|z|``."""
  x, loc, scale = promote("logistic.logpdf", x, loc, scale)
  z = (x - loc) / scale
  half = z / const(z, 2)
  out = const(z, -2) * jnp.logaddexp(half, -half) - jnp.log(scale)
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """CDF ``expit(z)``."""
  x, loc, scale = promote("logistic.cdf", x, loc, scale)
  return finish(special.expit((x - loc) / scale), x, loc, scale)


def sf(x, loc=0, scale=1):
  """Survival function ``expit(-z)``."""
  x, loc, scale = promote("logistic.sf", x, loc, scale)
  return finish(special.expit((loc - x) / scale), x, loc, scale)


def ppf(x, loc=0, scale=1):
  """Quantile function ``loc + scale logit(q)``."""
  x, loc, scale = promote("logistic.ppf", x, loc, scale)
  return finish(special.logit(x) * scale + loc, x, loc, scale)


def isf(x, loc=0, scale=1):
  """Inverse survival function ``loc - scale logit(q)``."""
  x, loc, scale = promote("logistic.isf", x, loc, scale)
  return finish(loc - special.logit(x) * scale, x, loc, scale)
