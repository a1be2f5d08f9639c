"""The binomial distribution (``jax.scipy.stats.binom``), ``n`` trials of probability ``p``."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """Log probability ``log C(n, y) + y log p + (n - y) log(1 - p)`` on ``loc <= k <= loc + n``."""
  k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
  y = k - loc
  one = const(y, 1)
  log_comb = lax.lgamma(n + one) - (lax.lgamma(y + one) + lax.lgamma(n - y + one))
  linear = special.xlogy(y, p) + special.xlog1py(n - y, -p)
  out = log_comb + linear
  # Certain outcomes (y == n == 0, or p in {0, 1} at its end) have probability exactly 1.
  out = jnp.where(((y == 0) & (n == 0)) | (linear == 0), 0.0, out)
  return finish(jnp.where((k >= loc) & (k < loc + n + one), out, -np.inf), k, n, p, loc)


def pmf(k, n, p, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, n, p, loc))
