"""The exponential distribution (``jax.scipy.stats.expon``)."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """Log density (``-inf`` below ``loc``)."""
  x, loc, scale = promote("expon.logpdf", x, loc, scale)
  out = -(x - loc) / scale - jnp.log(scale)
  return finish(jnp.where(x < loc, -np.inf, out), x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """CDF ``1 - exp(-(x - loc) / scale)``, computed with ``expm1``."""
  x, loc, scale = promote("expon.cdf", x, loc, scale)
  out = jnp.where(x < loc, 0, -jnp.expm1((loc - x) / scale))
  return finish(out, x, loc, scale)


def logsf(x, loc=0, scale=1):
  """Log survival function ``-(x - loc) / scale`` (0 below ``loc``)."""
  x, loc, scale = promote("expon.logsf", x, loc, scale)
  out = jnp.where(x < loc, 0, (loc - x) / scale)
  return finish(out, x, loc, scale)


def sf(x, loc=0, scale=1):
  """Survival function."""
  return jnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """Log CDF ``log(-expm1(-(x - loc) / scale))`` (``-inf`` below ``loc``): no cancellation
  just above ``loc``, where ``log1p(-sf)`` would lose the digits."""
  x, loc, scale = promote("expon.logcdf", x, loc, scale)
  out = jnp.where(x < loc, -np.inf, jnp.log(-jnp.expm1((loc - x) / scale)))
  return finish(out, x, loc, scale)


def ppf(q, loc=0, scale=1):
  """Quantile function ``loc - scale log1p(-q)`` (NaN outside [0, 1])."""
  q, loc, scale = promote("expon.ppf", q, loc, scale)
  out = jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc - scale * jnp.log1p(-q))
  return finish(out, q, loc, scale)
