"""The gamma distribution (``jax.scipy.stats.gamma``), shape ``a``."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
  """Log density of the gamma distribution (``-inf`` below ``loc``)."""
  x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
  inside = x >= loc
  y = jnp.where(inside, (x - loc) / scale, const(x, 1))
  out = special.xlogy(a - const(a, 1), y) - y - lax.lgamma(a) - jnp.log(scale)
  return finish(jnp.where(inside, out, -np.inf), x, a, loc, scale)


def pdf(x, a, loc=0, scale=1):
  """Density of the gamma distribution."""
  return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  """CDF of the gamma distribution: ``gammainc(a, (x - loc) / scale)``."""
  x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
  y = lax.clamp(const(x, 0), (x - loc) / scale, const(x, np.inf))
  return finish(special.gammainc(a, y), x, a, loc, scale)


def logcdf(x, a, loc=0, scale=1):
  """Log of the gamma CDF."""
  return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  """Survival function of the gamma distribution: ``gammaincc(a, (x - loc) / scale)``."""
  x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
  y = (x - loc) / scale
  out = jnp.where(y < const(y, 0), const(y, 1), special.gammaincc(a, jnp.maximum(y, 0)))
  return finish(out, x, a, loc, scale)


def logsf(x, a, loc=0, scale=1):
  """Log of the gamma survival function."""
  return jnp.log(sf(x, a, loc, scale))
