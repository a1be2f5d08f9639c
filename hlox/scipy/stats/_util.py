"""Shared helpers of ``hlox.scipy.stats``: argument promotion and JAX's result typing."""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core.tracer import get_aval
from hlox.numpy.util import promote_args_inexact

__all__ = ["promote", "finish", "strong", "const", "log1mexp"]


def promote(name, *args):
  """Promote ``args`` together to an inexact dtype (broadcast to one rank), as JAX; Python
  scalars become (weakly typed) arrays, so every formula below runs on the device."""
  return [jnp.asarray(a) for a in promote_args_inexact(name, *args)]


def _weak(x):
  return get_aval(x).weak_type


def finish(out, *inputs):
  """``out`` weakly typed exactly when every promoted input is (JAX's result for these
  formulas: all-Python-scalar arguments give a weak result)."""
  weak = all(_weak(x) for x in inputs)
  aval = get_aval(out)
  if aval.weak_type == weak:
    return out
  return lax.convert_element_type(out, aval.dtype, weak_type=weak)


def strong(out):
  aval = get_aval(out)
  return lax.convert_element_type(out, aval.dtype, weak_type=False) if aval.weak_type else out


def const(x, value):
  """``value`` as a strong constant of ``x``'s dtype."""
  return np.array(value, get_aval(x).dtype)


def log1mexp(x):
  """``log(1 - exp(-x))`` for ``x > 0``, accurate at both ends (Maechler's split at log 2)."""
  small = x < const(x, np.log(2))
  return jnp.where(small, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))
