"""What autodiff needs from lax: adding tangents (``add_any``) and making zero tangents."""
from __future__ import annotations

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import Tracer, get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax.base import broadcast_in_dim, full
from hlox.lax.utils import standard_primitive
from hlox.runtime.array import device_put

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["add_any_p", "zeros_like_aval", "stop_gradient", "stop_gradient_p"]


def _same_aval_shape_rule(x, y):
  if x.shape != y.shape or x.dtype != y.dtype:
    raise TypeError(f"add_any: tangents must have equal types, got {x.str_short()} and "
                    f"{y.str_short()}")
  return x.shape


# Sums tangents/cotangents of the same type (no broadcasting, no promotion). JAX calls the
# equivalent primitive ``add_any`` too, which is how it shows up in printed gradients.
add_any_p = standard_primitive(_same_aval_shape_rule, lambda x, y: x.dtype, "add_any")
# Sums of cotangents: split (and unreduced) as the operands are.
sharding_types.sharding_rules[add_any_p] = sharding_types.broadcasting_rule("add_any")
xla.register_lowering(add_any_p, lambda ctx, x, y: hlo.add(x, y))
ad.deflinear(add_any_p, lambda ct, x, y: [ct, ct])


def add_tangents(x, y):
  aval = getattr(x, "aval", None) or ShapedArray(np.shape(x), np.asarray(x).dtype)
  if aval.dtype == dtypes.float0:
    return x
  if dtypes.user_rules(aval.dtype) is not None:  # a user's extended dtype: its own sum
    return aval.dtype._rules.add(aval.dtype, x, y)
  return add_any_p.bind(x, y)


def zeros_like_aval(aval):
  """Zeros of ``aval`` (float0 zeros are host arrays: they carry no data); a user's
  extended dtype gives its own zero (``_rules.zero``)."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  if dtypes.user_rules(aval.dtype) is not None:
    return broadcast_in_dim(aval.dtype._rules.zero(aval.dtype), aval.shape, ())
  if aval.weak_type:
    # JAX keeps the weak type of zero tangents/cotangents (e.g. the gradient of an unused
    # weakly typed argument is weak).
    if aval.shape == ():
      return device_put(np.zeros((), aval.dtype), weak_type=True)  # a literal under tracing
    zero = np.zeros((), aval.dtype).item()  # a Python scalar: weakly typed
    if type(zero) is bool or dtypes.python_scalar_dtype(zero) != aval.dtype:
      zero = device_put(np.zeros((), aval.dtype), weak_type=True)
    return broadcast_in_dim(zero, aval.shape, ())
  if aval.shape == ():
    return np.zeros((), aval.dtype)[()]  # a literal under tracing
  return full(aval.shape, np.zeros((), aval.dtype)[()], aval.dtype)


ad.register_tangent_ops(zeros_like_aval, add_tangents)


def _add_any_batch(axis_data, vals, dims):
  x, y = (batching.matchaxis(v, d, 0, axis_data.size) for v, d in zip(vals, dims))
  return add_any_p.bind(x, y), 0

batching.fancy_primitive_batchers[add_any_p] = _add_any_batch


# --- stop_gradient -----------------------------------------------------------------------

def _identity_shape(x):
  return x.shape


# The identity on values whose tangent is always zero.
stop_gradient_p = standard_primitive(_identity_shape, lambda x: x.dtype, "stop_gradient",
                                     weak_type_rule=lambda x: x.weak_type)
xla.register_lowering(stop_gradient_p, lambda ctx, x: x)
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = lambda vals, dims: (
    stop_gradient_p.bind(vals[0]), dims[0])


def stop_gradient(x):
  """Returns ``x`` unchanged, but as a constant for differentiation.

  Every leaf of the pytree ``x`` gets a zero derivative under ``grad``, ``jvp`` and ``vjp``
  (integer leaves pass through). Values are not changed and ``vmap`` maps it like the
  identity.

  Args:
    x: array or pytree of arrays.

  Returns:
    ``x``, with its gradient stopped.

  Examples:
    >>> hlox.grad(lambda x: x * lax.stop_gradient(x))(3.)
    Array(3., dtype=float32, weak_type=True)
  """

  def stop(leaf):
    # Traced integers are bound too, so that every leaf comes out alike (a JVP tracer's
    # primal, not the tracer, whatever its dtype), as in JAX.
    if not dtypes.is_inexact(get_aval(leaf).dtype) and not isinstance(leaf, Tracer):
      return leaf
    return stop_gradient_p.bind(leaf)
  return tree_util.tree_map(stop, x)
