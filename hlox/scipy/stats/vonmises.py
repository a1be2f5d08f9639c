"""The von Mises distribution (``jax.scipy.stats.vonmises``), concentration ``kappa``."""
from __future__ import annotations

import math

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.scipy.stats._util import const, finish, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
  """Log density ``kappa (cos x - 1) - log(2 pi i0e(kappa))`` (NaN for ``kappa <= 0``);
  the scaled Bessel function keeps large ``kappa`` finite."""
  x, kappa = promote("vonmises.logpdf", x, kappa)
  out = (kappa * (jnp.cos(x) - const(x, 1))
         - jnp.log(const(kappa, 2 * math.pi) * lax.bessel_i0e(kappa)))
  return finish(jnp.where(kappa > 0, out, np.nan), x, kappa)


def pdf(x, kappa):
  """Density."""
  return jnp.exp(logpdf(x, kappa))
