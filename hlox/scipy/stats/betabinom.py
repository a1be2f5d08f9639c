"""The beta-binomial distribution (``jax.scipy.stats.betabinom``)."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
  """Log probability ``log C(n, y) + betaln(y + a, n - y + b) - betaln(a, b)`` with
  ``y = floor(k) - loc``; ``-inf`` off the support, NaN for ``n < 0``, ``a <= 0``, ``b <= 0``."""
  k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
  y = jnp.floor(k) - loc
  one = const(y, 1)
  log_comb = -(jnp.log1p(n) + special.betaln(n - y + one, y + one))
  out = log_comb + (special.betaln(y + a, n - y + b) - special.betaln(a, b))
  out = jnp.where((y == 0) & (n == 0), 0.0, out)
  out = jnp.where((y < -loc) | (y > n) | (y + a <= 0), -np.inf, out)
  return finish(jnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, out), k, n, a, b, loc)


def pmf(k, n, a, b, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, n, a, b, loc))
