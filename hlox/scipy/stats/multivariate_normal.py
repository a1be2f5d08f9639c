"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``)."""
from __future__ import annotations

import math

from hlox import numpy as jnp
from hlox.numpy.util import promote_dtypes_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
  """Log density of N(mean, cov) over the last axis of ``x``; ``cov`` may be a scalar
  (isotropic) or an ``(n, n)`` (batched) positive-definite matrix, factored by Cholesky."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(mean), jnp.asarray(cov))
  log_2pi = math.log(2 * math.pi)
  if not mean.shape:
    return -0.5 * jnp.square(x - mean) / cov - 0.5 * (log_2pi + jnp.log(cov))
  n = mean.shape[-1]
  y = x - mean
  if not cov.shape:
    return -0.5 * jnp.sum(y * y, axis=-1) / cov - n / 2 * (log_2pi + jnp.log(cov))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: "
                     f"x {x.shape}, mean {mean.shape}, cov {cov.shape}")
  chol = jnp.linalg.cholesky(cov)
  batch = jnp.broadcast_shapes(chol.shape[:-2], y.shape[:-1])
  chol_b = jnp.broadcast_to(chol, batch + (n, n))
  y_b = jnp.broadcast_to(y, batch + (n,))
  # L z = y; then y^T cov^-1 y = |z|^2
  z = jnp.linalg.solve(chol_b, y_b[..., None])[..., 0]
  log_det_half = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
  return -0.5 * jnp.sum(z * z, axis=-1) - n / 2 * log_2pi - log_det_half


def pdf(x, mean, cov):
  """Density."""
  return jnp.exp(logpdf(x, mean, cov))
