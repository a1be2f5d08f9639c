"""The chi-squared distribution (``jax.scipy.stats.chi2``): gamma with shape ``df / 2`` and
scale ``2``."""
from __future__ import annotations


import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
  """Log density of chi-squared with ``df`` degrees of freedom (``-inf`` below ``loc``)."""
  x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
  # JAX's grouping (its rounding): (normalizer - log scale) + kernel.
  two = const(x, 2)
  y = lax.div(lax.sub(x, loc), scale)
  k = lax.div(df, two)
  kernel = lax.sub(lax.mul(lax.sub(k, const(x, 1)), lax.log(y)), lax.div(y, two))
  normalizer = lax.neg(lax.add(lax.lgamma(k), lax.div(lax.mul(lax.log(two), df), two)))
  out = lax.add(lax.sub(normalizer, lax.log(scale)), kernel)
  return finish(jnp.where(x < loc, -np.inf, out), x, df, loc, scale)


def pdf(x, df, loc=0, scale=1):
  """Density of chi-squared."""
  return jnp.exp(logpdf(x, df, loc, scale))


def _half_y(x, loc, scale):
  return lax.clamp(const(x, 0), (x - loc) / (scale * const(scale, 2)), const(x, np.inf))


def cdf(x, df, loc=0, scale=1):
  """CDF of chi-squared."""
  x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
  return finish(special.gammainc(df / const(df, 2), _half_y(x, loc, scale)), x, df, loc, scale)


def logcdf(x, df, loc=0, scale=1):
  """Log CDF of chi-squared."""
  return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  """Survival function of chi-squared."""
  x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
  return finish(special.gammaincc(df / const(df, 2), _half_y(x, loc, scale)), x, df, loc,
                scale)


def logsf(x, df, loc=0, scale=1):
  """Log survival function of chi-squared."""
  return jnp.log(sf(x, df, loc, scale))
