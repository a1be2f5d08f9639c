"""The normal distribution (``jax.scipy.stats.norm``)."""
from __future__ import annotations

import math

from hlox import lax
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote, strong

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """Log of the normal density with mean ``loc`` and standard deviation ``scale``."""
  x, loc, scale = promote("norm.logpdf", x, loc, scale)
  # -(log(2 pi s^2) + (x - loc)^2 / s^2) / 2, in JAX's order of operations (its rounding too).
  var = lax.square(scale)
  spread = lax.log(lax.mul(const(x, 2 * math.pi), var))
  out = lax.div(lax.add(spread, lax.div(lax.square(lax.sub(x, loc)), var)), const(x, -2))
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """The normal density."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """The normal CDF."""
  x, loc, scale = promote("norm.cdf", x, loc, scale)
  return strong(special.ndtr((x - loc) / scale))


def logcdf(x, loc=0, scale=1):
  """Log of the normal CDF, accurate in the lower tail."""
  x, loc, scale = promote("norm.logcdf", x, loc, scale)
  return strong(special.log_ndtr((x - loc) / scale))


def sf(x, loc=0, scale=1):
  """The normal survival function ``1 - cdf``, accurate in the upper tail."""
  x, loc, scale = promote("norm.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """Log of the normal survival function."""
  x, loc, scale = promote("norm.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
  """The normal quantile function (inverse of ``cdf``)."""
  q, loc, scale = promote("norm.ppf", q, loc, scale)
  return strong(special.ndtri(q) * scale + loc)


def isf(q, loc=0, scale=1):
  """The inverse of the survival function: ``ppf(1 - q)``."""
  q, loc, scale = promote("norm.isf", q, loc, scale)
  return ppf(const(q, 1) - q, loc, scale)
