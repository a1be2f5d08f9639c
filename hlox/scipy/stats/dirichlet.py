"""The Dirichlet distribution (``jax.scipy.stats.dirichlet``); the first axis of ``x`` holds
the components."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.numpy.util import promote_dtypes_inexact
from hlox.scipy import special

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
  """Log density ``sum((alpha - 1) log x) - (sum lgamma(alpha) - lgamma(sum alpha))`` on the
  simplex (``-inf`` off it). ``x`` may omit its last component (then ``1 - sum``)."""
  x, alpha = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(alpha))
  if alpha.ndim != 1:
    raise ValueError(f"dirichlet.logpdf: `alpha` must be one-dimensional; got "
                     f"alpha.shape={alpha.shape}")
  if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("dirichlet.logpdf: `x` must have either the same number of entries as "
                     f"`alpha` or one entry fewer; got x.shape={x.shape}, "
                     f"alpha.shape={alpha.shape}")
  one = np.array(1, x.dtype)
  if x.shape[0] != alpha.shape[0]:
    x = jnp.concatenate([x, one - jnp.sum(x, axis=0, keepdims=True)], axis=0)
  log_norm = jnp.sum(lax.lgamma(alpha)) - lax.lgamma(jnp.sum(alpha))
  a = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))
  out = jnp.sum(special.xlogy(a - one, x), axis=0) - log_norm
  on_simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - one) < 1e-6)
  return jnp.where(on_simplex, out, -np.inf)


def pdf(x, alpha):
  """Density."""
  return jnp.exp(logpdf(x, alpha))
