"""The Pareto distribution (``jax.scipy.stats.pareto``), shape ``b``, support
``x >= loc + scale``."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
  """Log density ``log(b / scale) - (b + 1) log(z)`` (``-inf`` below the support)."""
  x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
  z = (x - loc) / scale
  out = jnp.log(b) - jnp.log(scale) - (b + const(b, 1)) * jnp.log(z)
  return finish(jnp.where(x < loc + scale, -np.inf, out), x, b, loc, scale)


def pdf(x, b, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """CDF ``1 - z^-b``."""
  x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
  z = (x - loc) / scale
  out = jnp.where(x < loc + scale, const(x, 0), const(x, 1) - z ** (-b))
  return finish(out, x, b, loc, scale)


def logcdf(x, b, loc=0, scale=1):
  """Log CDF ``log1p(-z^-b)``."""
  x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
  z = (x - loc) / scale
  out = jnp.where(x < loc + scale, -np.inf, jnp.log1p(-(z ** (-b))))
  return finish(out, x, b, loc, scale)


def logsf(x, b, loc=0, scale=1):
  """Log survival function ``-b log(z)`` (0 below the support)."""
  x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
  z = (x - loc) / scale
  out = jnp.where(x < loc + scale, const(x, 0), -b * jnp.log(z))
  return finish(out, x, b, loc, scale)


def sf(x, b, loc=0, scale=1):
  """Survival function."""
  return jnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  """Quantile function ``loc + scale (1 - q)^(-1/b)`` (NaN outside [0, 1])."""
  q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
  out = loc + scale * (const(q, 1) - q) ** (-const(b, 1) / b)
  out = jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, out)
  return finish(out, q, b, loc, scale)
