"""The truncated normal distribution (``jax.scipy.stats.truncnorm``) on ``[a, b]`` in
standardized units.

The formulas and their order of operations are JAX's, and ``logpdf``, ``logcdf``, ``cdf``,
``logsf`` and ``sf`` run as one compiled computation each (JAX jits them), so that results
round exactly as JAX's do, eagerly and under ``jit``."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.numpy.util import fuse_functions
from hlox.scipy import special
from hlox.scipy.stats import norm
from hlox.scipy.stats._util import promote, strong

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_sub_exp(x, y):
  """``log(exp(x) - exp(y))`` as a signed ``logsumexp`` (NaN where ``y > x``)."""
  return special.logsumexp(jnp.stack([x, y]), axis=0,
                           b=jnp.stack([jnp.ones_like(x), -jnp.ones_like(y)]))


def _log_mass(lo, hi):
  """``log(Phi(hi) - Phi(lo))`` without cancellation: in a tail, as a difference of log-CDFs
  on the side where both are small; straddling 0, as ``log1p(-Phi(lo) - Phi(-hi))``."""
  lo, hi = jnp.broadcast_arrays(jnp.asarray(lo), jnp.asarray(hi))
  left = hi <= 0
  right = lo > 0
  t_lo = jnp.where(right, -hi, lo)
  t_hi = jnp.where(right, -lo, hi)
  tail = _log_sub_exp(special.log_ndtr(t_hi), special.log_ndtr(t_lo))
  central = jnp.log1p(-special.ndtr(lo) - special.ndtr(-hi))
  return jnp.where(~(left | right), central, tail)


def logpdf(x, a, b, loc=0, scale=1):
  """Log density: the normal's minus the log mass of ``[a, b]``; ``-inf`` outside, NaN for
  ``a >= b``."""
  x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
  out = lax.sub(norm.logpdf(x, loc, scale), _log_mass(a, b))
  z = lax.div(lax.sub(x, loc), scale)
  out = jnp.where((z < a) | (z > b), -np.inf, out)
  return strong(jnp.where(a >= b, np.nan, out))


def pdf(x, a, b, loc=0, scale=1):
  """Density."""
  return lax.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """Log CDF ``log mass[a, z] - log mass[a, b]``, through the survival side near 1."""
  x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = jnp.broadcast_arrays(x, a, b)
  z = lax.div(lax.sub(x, loc), scale)
  total = _log_mass(a, b)
  log_cdf = _log_mass(a, z) - total
  log_sf = _log_mass(z, b) - total
  out = jnp.select([z >= b, z <= a, log_cdf > -0.1, z > a],
                   [0, -np.inf, jnp.log1p(-jnp.exp(log_sf)), log_cdf])
  return strong(jnp.where(a >= b, np.nan, out))


def cdf(x, a, b, loc=0, scale=1):
  """CDF."""
  return lax.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """Log survival function, by reflection: ``logcdf(-x; -b, -a)``."""
  x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
  """Survival function."""
  return lax.exp(logsf(x, a, b, loc, scale))


fuse_functions(globals(), ["logpdf", "logcdf", "cdf", "logsf", "sf"], {},
               staged=["logpdf", "logcdf", "cdf", "logsf", "sf"])
