"""The Laplace distribution (``jax.scipy.stats.laplace``)."""
from __future__ import annotations

import math

from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
  """Log density ``-|x - loc| / scale - log(2 scale)``."""
  x, loc, scale = promote("laplace.logpdf", x, loc, scale)
  out = -jnp.abs(x - loc) / scale - jnp.log(scale) - const(x, math.log(2))
  return finish(out, x, loc, scale)


def pdf(x, loc=0, scale=1):
  """Density."""
  return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """CDF: ``exp(z) / 2`` below ``loc``, ``1 - exp(-z) / 2`` above."""
  x, loc, scale = promote("laplace.cdf", x, loc, scale)
  z = (x - loc) / scale
  half = const(z, 0.5)
  out = jnp.where(z <= 0, half * jnp.exp(z), const(z, 1) - half * jnp.exp(-z))
  return finish(out, x, loc, scale)
