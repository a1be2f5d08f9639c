"""The Bernoulli distribution (``jax.scipy.stats.bernoulli``), success probability ``p``."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
  """Log probability ``y log(p) + (1 - y) log(1 - p)`` (``-inf`` unless ``0 <= y <= 1``)."""
  k, p, loc = promote("bernoulli.logpmf", k, p, loc)
  y = k - loc
  out = special.xlogy(y, p) + special.xlog1py(const(y, 1) - y, -p)
  return finish(jnp.where((y < 0) | (y > 1), -np.inf, out), k, p, loc)


def pmf(k, p, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
  """CDF: 0 below 0, ``1 - p`` on [0, 1), 1 from 1 (NaN for invalid ``p`` or NaN input)."""
  k, p = promote("bernoulli.cdf", k, p)
  out = jnp.where(k < 0, const(k, 0), jnp.where(k < 1, const(k, 1) - p, const(k, 1)))
  bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
  return finish(jnp.where(bad, np.nan, out), k, p)


def ppf(q, p):
  """Quantile function: 0 for ``q <= 1 - p``, else 1 (NaN for invalid input)."""
  q, p = promote("bernoulli.ppf", q, p)
  out = jnp.where(q <= const(q, 1) - p, const(q, 0), const(q, 1))
  bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
  return finish(jnp.where(bad, np.nan, out), q, p)
