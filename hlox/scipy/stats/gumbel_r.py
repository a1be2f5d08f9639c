"""The right-skewed Gumbel distribution (``jax.scipy.stats.gumbel_r``)."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, log1mexp, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _valid(out, scale):
  return jnp.where(scale > 0, out, np.nan)


def logpdf(x, loc=0, scale=1):
  """Log density ``-(z + exp(-z)) - log(scale)`` (NaN for ``scale <= 0``)."""
  x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(-(z + jnp.exp(-z)) - jnp.log(scale), scale), x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """Log CDF ``-exp(-z)``."""
  x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(-jnp.exp(-z), scale), x, loc, scale)


def cdf(x, loc=0, scale=1):
  """CDF ``exp(-exp(-z))``."""
  return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """Survival function ``-expm1(-exp(-z))`` (accurate in the upper tail)."""
  x, loc, scale = promote("gumbel_r.sf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(-jnp.expm1(-jnp.exp(-z)), scale), x, loc, scale)


def logsf(x, loc=0, scale=1):
  """Log survival function ``log(1 - exp(-exp(-z)))``."""
  x, loc, scale = promote("gumbel_r.logsf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(log1mexp(jnp.exp(-z)), scale), x, loc, scale)


def ppf(p, loc=0, scale=1):
  """Quantile function ``loc - scale log(-log(p))`` (NaN outside (0, 1))."""
  p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
  out = loc - scale * jnp.log(-jnp.log(p))
  return finish(jnp.where((p > 0) & (p < 1), out, np.nan), p, loc, scale)
