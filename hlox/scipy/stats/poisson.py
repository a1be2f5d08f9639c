"""The Poisson distribution (``jax.scipy.stats.poisson``), mean ``mu``."""
from __future__ import annotations

import math

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy import special
from hlox.scipy.stats._util import const, finish, promote, strong

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
  """Log probability ``k log(mu) - lgamma(k + 1) - mu`` (``-inf`` off the integers >= loc)."""
  k, mu, loc = promote("poisson.logpmf", k, mu, loc)
  y = k - loc
  out = special.xlogy(y, mu) - lax.lgamma(y + const(y, 1)) - mu
  return finish(jnp.where((y < 0) | (jnp.round(k) != k), -np.inf, out), k, mu, loc)


def pmf(k, mu, loc=0):
  """Probability mass."""
  return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  """CDF ``Q(floor(k - loc) + 1, mu)`` (0 below ``loc``)."""
  k, mu, loc = promote("poisson.cdf", k, mu, loc)
  y = k - loc
  out = special.gammaincc(jnp.floor(y + const(y, 1)), mu)
  return finish(jnp.where(y < 0, const(y, 0), out), k, mu, loc)


def _entropy_sum(mu, terms, bound):
  ks = jnp.arange(terms, dtype=mu.dtype).reshape((terms,) + (1,) * mu.ndim)
  probs = pmf(ks, mu)
  probs = jnp.where(ks < bound, probs, 0)
  return jnp.sum(special.entr(probs), axis=0)


def entropy(mu, loc=0):
  """Entropy ``-sum_k p_k log p_k``: summed directly for ``mu < 100`` (enough terms to cover
  the mass), the asymptotic ``log(2 pi e mu) / 2 - 1 / (12 mu)`` beyond."""
  mu, loc = promote("poisson.entropy", mu, loc)
  shape = np.broadcast_shapes(mu.shape, loc.shape)
  mu = strong(mu)
  small = _entropy_sum(mu, 35, jnp.ceil(mu + 20))
  medium = _entropy_sum(mu, 250, jnp.ceil(mu + 10 * jnp.sqrt(mu) + 20))
  safe = jnp.where(mu > 0, mu, 1)
  large = (const(mu, 0.5) * jnp.log(const(mu, 2 * math.pi * math.e) * safe)
           - const(mu, 1) / (const(mu, 12) * safe))
  out = jnp.where(mu < 10, small, jnp.where(mu < 100, medium, large))
  out = jnp.where(mu == 0, const(mu, 0), out)
  return jnp.broadcast_to(out, shape)
