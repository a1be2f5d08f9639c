"""The generalized normal distribution (``jax.scipy.stats.gennorm``), shape ``beta``."""
from __future__ import annotations

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
  """Log density ``log(beta / 2) - lgamma(1 / beta) - |x|^beta``."""
  x, beta = promote("gennorm.logpdf", x, beta)
  out = (jnp.log(const(beta, 0.5) * beta) - lax.lgamma(const(beta, 1) / beta)
         - jnp.abs(x) ** beta)
  return finish(out, x, beta)


def pdf(x, beta):
  """Density."""
  return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
  """CDF ``(1 + sign(x) P(1 / beta, |x|^beta)) / 2``."""
  x, beta = promote("gennorm.cdf", x, beta)
  p = lax.igamma(const(beta, 1) / beta, jnp.abs(x) ** beta)
  return finish(const(x, 0.5) * (const(x, 1) + jnp.sign(x) * p), x, beta)
