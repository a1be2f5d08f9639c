"""The wrapped Cauchy distribution (``jax.scipy.stats.wrapcauchy``) on ``[0, 2 pi]``."""
from __future__ import annotations

import math

import numpy as np

from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
  """Log density ``log((1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)))`` for ``0 < c < 1``
  (NaN otherwise), ``-inf`` outside ``[0, 2 pi]``."""
  x, c = promote("wrapcauchy.logpdf", x, c)
  one = const(c, 1)
  out = (jnp.log(one - c * c) - const(c, math.log(2 * math.pi))
         - jnp.log(one + c * c - const(c, 2) * c * jnp.cos(x)))
  out = jnp.where((x >= 0) & (x <= const(x, 2 * math.pi)), out, -np.inf)
  return finish(jnp.where((c > 0) & (c < 1), out, np.nan), x, c)


def pdf(x, c):
  """Density."""
  return jnp.exp(logpdf(x, c))
