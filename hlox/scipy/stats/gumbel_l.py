"""The left-skewed Gumbel distribution (``jax.scipy.stats.gumbel_l``)."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _valid(out, scale):
  return jnp.where(scale > 0, out, np.nan)


def logpdf(x, loc=0, scale=1):
  """Log density ``z - exp(z) - log(scale)`` (NaN for ``scale <= 0``)."""
  x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(z - jnp.exp(z) - jnp.log(scale), scale), x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """Log CDF ``log(1 - exp(-exp(z)))``."""
  x, loc, scale = promote("gumbel_l.logcdf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(jnp.log(-jnp.expm1(-jnp.exp(z))), scale), x, loc, scale)


def cdf(x, loc=0, scale=1):
  """CDF ``1 - exp(-exp(z))``."""
  return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """Log survival function ``-exp(z)``."""
  x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
  z = (x - loc) / scale
  return finish(_valid(-jnp.exp(z), scale), x, loc, scale)


def sf(x, loc=0, scale=1):
  """Survival function ``exp(-exp(z))``."""
  return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """Quantile function ``loc + scale log(-log1p(-p))`` (NaN outside (0, 1))."""
  p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
  out = loc + scale * jnp.log(-jnp.log1p(-p))
  return finish(jnp.where((p > 0) & (p < 1), out, np.nan), p, loc, scale)
