"""The geometric distribution (``jax.scipy.stats.geom``) on ``k >= 1``."""
from __future__ import annotations

import numpy as np

from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
  """Log probability ``(y - 1) log(1 - p) + log(p)`` (``-inf`` for ``y <= 0``)."""
  k, p, loc = promote("geom.logpmf", k, p, loc)
  y = k - loc
  out = special.xlog1py(y - const(y, 1), -p) + jnp.log(p)
  return finish(jnp.where(y <= 0, -np.inf, out), k, p, loc)


def pmf(k, p, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, p, loc))
