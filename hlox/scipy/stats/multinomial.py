"""The multinomial distribution (``jax.scipy.stats.multinomial``); the last axis holds the
categories."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.numpy.util import promote_args_inexact, promote_args_numeric
from hlox.scipy import special

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
  """Log probability ``lgamma(n + 1) + sum(x log p - lgamma(x + 1))`` where the counts
  ``x`` (integers) sum to ``n``; ``-inf`` elsewhere."""
  p, = promote_args_inexact("multinomial.logpmf", p)
  x, n = (jnp.asarray(v) for v in promote_args_numeric("multinomial.logpmf", x, n))
  p = jnp.asarray(p)
  if not dtypes.issubdtype(x.dtype, np.integer):
    raise ValueError("multinomial.logpmf: x and n must be of integer type; got "
                     f"x.dtype={x.dtype}, n.dtype={n.dtype}")
  x = x.astype(p.dtype)
  n = n.astype(p.dtype)
  one = np.array(1, p.dtype)
  out = lax.lgamma(n + one) + jnp.sum(special.xlogy(x, p) - lax.lgamma(x + one), axis=-1)
  return jnp.where(jnp.sum(x) == n, out, -np.inf)


def pmf(x, n, p):
  """Probability mass."""
  return jnp.exp(logpmf(x, n, p))
