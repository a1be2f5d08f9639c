"""Student's t distribution (``jax.scipy.stats.t``)."""
from __future__ import annotations

import math

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
  """Log density of Student's t with ``df`` degrees of freedom."""
  x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
  z = (x - loc) / scale
  half_df = df / const(df, 2)
  half_df1 = half_df + const(df, 0.5)
  log_norm = (lax.lgamma(half_df1) - lax.lgamma(half_df)
              - const(df, 0.5) * jnp.log(df * const(df, math.pi)) - jnp.log(scale))
  out = log_norm - half_df1 * jnp.log1p(z * z / df)
  return finish(out, x, df, loc, scale)


def pdf(x, df, loc=0, scale=1):
  """Density of Student's t."""
  return jnp.exp(logpdf(x, df, loc, scale))
