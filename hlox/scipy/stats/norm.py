"""The normal distribution (``jax.scipy.stats.norm``)."""
from __future__ import annotations

import math

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote, strong

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """Log of the normal density with mean ``loc`` and standard deviation ``scale``."""
  x, loc, scale = promote("norm.logpdf", x, loc, scale)
  z = (x - loc) / scale
  out = const(z, -0.5) * z * z - jnp.log(scale) - const(z, 0.5 * math.log(2 * math.pi))
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """The normal density."""
  return jnp.exp(logpdf(x, loc, scale))


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
