"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote, strong

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """Log density ``-log(scale)`` on the support, ``-inf`` outside."""
  x, loc, scale = promote("uniform.logpdf", x, loc, scale)
  out = jnp.where((x < loc) | (x > loc + scale), -np.inf, -jnp.log(scale))
  # The result has the broadcast shape of all three arguments (JAX's where does that).
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """CDF, clipped to [0, 1] outside the support (NaN for NaN input)."""
  x, loc, scale = promote("uniform.cdf", x, loc, scale)
  inside = (x - loc) / scale
  out = jnp.where(x < loc, const(x, 0), jnp.where(x > loc + scale, const(x, 1), inside))
  return strong(jnp.where(jnp.isnan(x), np.nan, out))


def ppf(q, loc=0, scale=1):
  """Quantile function ``loc + scale q`` (NaN outside [0, 1])."""
  q, loc, scale = promote("uniform.ppf", q, loc, scale)
  out = jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, loc + scale * q)
  return finish(out, q, loc, scale)
