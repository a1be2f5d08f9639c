"""The beta distribution (``jax.scipy.stats.beta``) on ``[loc, loc + scale]``."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
  """Log density of Beta(a, b): ``-inf`` outside the support, NaN for non-positive
  parameters or scale."""
  x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
  one = const(x, 1)
  y = (x - loc) / scale
  out = (special.xlogy(a - one, y) + special.xlog1py(b - one, -y) - special.betaln(a, b)
         - jnp.log(scale))
  out = jnp.where((x < loc) | (x > loc + scale), -np.inf, out)
  out = jnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, out)
  return finish(out, x, a, b, loc, scale)


def pdf(x, a, b, loc=0, scale=1):
  """Density of Beta(a, b)."""
  return jnp.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
  return lax.clamp(const(x, 0), (x - loc) / scale, const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
  """CDF of Beta(a, b): ``betainc(a, b, y)``."""
  x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
  return finish(special.betainc(a, b, _unit(x, loc, scale)), x, a, b, loc, scale)


def logcdf(x, a, b, loc=0, scale=1):
  """Log CDF of Beta(a, b)."""
  return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  """Survival function of Beta(a, b): ``betainc(b, a, 1 - y)``."""
  x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
  out = special.betainc(b, a, const(x, 1) - _unit(x, loc, scale))
  return finish(out, x, a, b, loc, scale)


def logsf(x, a, b, loc=0, scale=1):
  """Log survival function of Beta(a, b)."""
  return jnp.log(sf(x, a, b, loc, scale))
