"""``hlox.scipy.integrate``: numerical integration of sampled data."""
from __future__ import annotations

from hlox import numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """The trapezoidal rule along ``axis``, with sample points ``x`` or a uniform spacing
  ``dx`` (``jnp.trapezoid``, as JAX's ``scipy.integrate.trapezoid``)."""
  return jnp.trapezoid(y, x, dx, axis)
