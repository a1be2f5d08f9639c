"""The negative binomial distribution (``jax.scipy.stats.nbinom``): failures before the
``n``-th success."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """Log probability ``log C(y + n - 1, y) + n log p + y log(1 - p)`` (``-inf`` below loc)."""
  k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
  y = k - loc
  one = const(y, 1)
  log_comb = lax.lgamma(y + n) - lax.lgamma(n) - lax.lgamma(y + one)
  out = log_comb + special.xlogy(n, p) + special.xlogy(y, one - p)
  return finish(jnp.where(k < loc, -np.inf, out), k, n, p, loc)


def pmf(k, n, p, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, n, p, loc))
