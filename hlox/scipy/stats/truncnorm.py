"""The truncated normal distribution (``jax.scipy.stats.truncnorm``) on ``[a, b]`` in
standardized units."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats import norm
from hlox.scipy.stats._util import promote, strong

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_sub_exp(x, y):
  """``log(exp(x) - exp(y))`` for ``x >= y``."""
  return x + jnp.log1p(-jnp.exp(y - x))


def _log_mass(lo, hi):
  """``log(Phi(hi) - Phi(lo))`` without cancellation: in a tail, as a difference of log-CDFs
  on the side where both are small; straddling 0, as ``log1p(-Phi(lo) - Phi(-hi))``."""
  lo, hi = jnp.broadcast_arrays(lo, hi)
  left = hi <= 0
  right = lo > 0
  t_lo = jnp.where(right, -hi, lo)
  t_hi = jnp.where(right, -lo, hi)
  tail = _log_sub_exp(special.log_ndtr(t_hi), special.log_ndtr(t_lo))
  central = jnp.log1p(-special.ndtr(lo) - special.ndtr(-hi))
  return jnp.where(left | right, tail, central)


def logpdf(x, a, b, loc=0, scale=1):
  """Log density: the normal's minus the log mass of ``[a, b]``; ``-inf`` outside, NaN for
  ``a >= b``."""
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  out = norm.logpdf(x, loc, scale) - _log_mass(a, b)
  z = (x - loc) / scale
  out = jnp.where((z < a) | (z > b), -np.inf, out)
  return strong(jnp.where(a >= b, np.nan, out))


def pdf(x, a, b, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """Log CDF ``log mass[a, z] - log mass[a, b]``, through the survival side near 1."""
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = jnp.broadcast_arrays(x, a, b)
  z = (x - loc) / scale
  total = _log_mass(a, b)
  log_cdf = _log_mass(a, z) - total
  log_sf = _log_mass(z, b) - total
  out = jnp.where(log_cdf > -0.1, jnp.log1p(-jnp.exp(log_sf)), log_cdf)
  out = jnp.where(z <= a, -np.inf, out)
  out = jnp.where(z >= b, 0.0, out)
  return strong(jnp.where(a >= b, np.nan, out))


def cdf(x, a, b, loc=0, scale=1):
  """CDF."""
  return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """Log survival function, by reflection: ``logcdf(-x; -b, -a)``."""
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
  """Survival function."""
  return jnp.exp(logsf(x, a, b, loc, scale))
