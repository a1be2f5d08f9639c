"""The Cauchy distribution (``jax.scipy.stats.cauchy``)."""
from __future__ import annotations

import math

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """Log density ``-log(pi scale (1 + z^2))``."""
  x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
  # JAX's grouping (its rounding): -(log(pi scale) + log1p(z^2)).
  z = lax.div(lax.sub(x, loc), scale)
  out = lax.neg(lax.add(lax.log(lax.mul(const(x, math.pi), scale)), lax.log1p(lax.mul(z, z))))
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """CDF ``1/2 + arctan(z) / pi``."""
  x, loc, scale = promote("cauchy.cdf", x, loc, scale)
  z = (x - loc) / scale
  return finish(const(z, 0.5) + jnp.arctan(z) / const(z, math.pi), x, loc, scale)


def logcdf(x, loc=0, scale=1):
  """Log CDF."""
  return jnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """Survival function ``cdf(-x)`` (by symmetry, no cancellation in the upper tail)."""
  x, loc, scale = promote("cauchy.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """Log survival function."""
  x, loc, scale = promote("cauchy.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def ppf(q, loc=0, scale=1):
  """Quantile function ``loc + scale tan(pi (q - 1/2))``."""
  q, loc, scale = promote("cauchy.ppf", q, loc, scale)
  out = jnp.tan(const(q, math.pi) * q - const(q, math.pi / 2)) * scale + loc
  return finish(out, q, loc, scale)


def isf(q, loc=0, scale=1):
  """Inverse survival function ``loc + scale tan(pi (1/2 - q))``."""
  q, loc, scale = promote("cauchy.isf", q, loc, scale)
  out = jnp.tan(const(q, math.pi / 2) - const(q, math.pi) * q) * scale + loc
  return finish(out, q, loc, scale)
