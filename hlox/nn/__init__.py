"""``hlox.nn``: activation functions and friends for neural networks (JAX's ``jax.nn``).

Each function is written on ``hlox.numpy``/``hlox.lax`` and matches ``jax.nn`` numerically:
same formulas (including JAX's choice of gradient at kinks, via ``custom_jvp``), same
dtypes and weak types.

Belongs here: JAX's ``jax.nn`` (activations, initializers) on top of ``hlox.numpy``; may
import ``numpy``, ``lax``, ``random``, ``scipy`` and the transformations, never jaxlib.
"""
from __future__ import annotations

import functools

import operator
import warnings

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import eager_fused, jit
from hlox.core import dtypes
from hlox.core.tracer import Tracer
from hlox.custom_derivatives import custom_jvp
from hlox.errors import ConcretizationTypeError
from hlox.nn import initializers
from hlox.numpy import tanh
from hlox.numpy.util import check_arraylike, promote_args_inexact
from hlox.scipy.special import logsumexp
from hlox.nn.attention import dot_product_attention
from hlox.nn.scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul

__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "identity", "initializers", "leaky_relu", "log1mexp", "log_sigmoid",
           "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6",
           "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus",
           "sparse_sigmoid", "squareplus", "standardize", "swish", "tanh",
           "dot_product_attention", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]


def _arraylike(name, x):
  """``x`` as an array (after checking it is array-like), as JAX's ``ensure_arraylike``."""
  check_arraylike(name, x)
  return jnp.asarray(x)


@jit
def identity(x):
  """Returns ``x`` (as an array)."""
  check_arraylike("identity", x)
  return jnp.asarray(x)


@custom_jvp
@jit
def relu(x):
  """Rectified linear unit ``max(x, 0)``; its derivative at 0 is taken as 0 (as JAX)."""
  return jnp.maximum(x, 0)

relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
  """``min(max(x, 0), 6)``; derivative 0 at both kinks (as JAX)."""
  return jnp.minimum(jnp.maximum(x, 0), 6.)

relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x, b=4):
  """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
  x, b = _arraylike("squareplus", x), _arraylike("squareplus", b)
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@jit
def softplus(x):
  """``log(1 + exp(x))``, computed stably."""
  return jnp.logaddexp(x, 0)


@jit
def sparse_plus(x):
  """0 below -1, ``x`` above 1, ``(x + 1)**2 / 4`` in between."""
  x = _arraylike("sparse_plus", x)
  return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def soft_sign(x):
  """``x / (|x| + 1)``."""
  x = _arraylike("soft_sign", x)
  return x / (jnp.abs(x) + 1)


# JAX does not jit ``sigmoid`` and ``gelu``: eagerly one executable, inlined when traced.
@eager_fused
def sigmoid(x):
  """The logistic function ``1 / (1 + exp(-x))``."""
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """``clip((x + 1) / 2, 0, 1)``."""
  return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@jit
def silu(x):
  """SiLU (swish) ``x * sigmoid(x)``."""
  x = _arraylike("silu", x)
  return x * sigmoid(x)


swish = silu


@jit
def mish(x):
  """``x * tanh(softplus(x))``."""
  x = _arraylike("mish", x)
  return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x):
  """``log(sigmoid(x))``, computed as ``-softplus(-x)``."""
  x = _arraylike("log_sigmoid", x)
  return -softplus(-x)


@jit
def elu(x, alpha=1.0):
  """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
  x = _arraylike("elu", x)
  # The inner where keeps expm1 away from large positive x (no inf in the unused branch,
  # so no NaN gradient).
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """``x`` if ``x >= 0`` else ``negative_slope * x``."""
  x = _arraylike("leaky_relu", x)
  return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  """``clip(x, -1, 1)`` (written with where, as JAX, for its gradient at the kinks)."""
  x = _arraylike("hard_tanh", x)
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
  """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
  return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


# The self-normalizing constants of Klambauer et al. (2017).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jit
def selu(x):
  """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalizing constants."""
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


@functools.partial(eager_fused, static_argnames=("approximate",))
def gelu(x, approximate: bool = True):
  """Gaussian error linear unit; the tanh approximation unless ``approximate=False``."""
  x = promote_args_inexact("gelu", x)[0]
  if approximate:
    c = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
    return x * cdf
  half = np.sqrt(0.5).astype(x.dtype)
  return jnp.array(0.5 * x * lax.erfc(-x * half), dtype=x.dtype)


@functools.partial(jit, static_argnames=("axis",))
def glu(x, axis: int = -1):
  """Gated linear unit: ``a * sigmoid(b)`` for the two halves ``a, b`` of ``x`` on ``axis``."""
  x = _arraylike("glu", x)
  size = x.shape[axis]
  if size % 2:
    raise ValueError(f"glu: axis {axis} of x must have an even size, got {size}")
  a, b = jnp.split(x, 2, axis)
  return a * sigmoid(b)


def _reduce_count(x, axis, where, keepdims, dtype):
  """How many elements each reduction over ``axis`` (masked by ``where``) sees."""
  ones = jnp.ones(jnp.shape(x), dtype)
  return jnp.sum(ones, axis=axis, where=where, keepdims=keepdims)


@functools.partial(jit, static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
  """``log(mean(exp(x)))`` along ``axis``: ``logsumexp(x) - log(n)``."""
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  count = _reduce_count(x, axis, where, keepdims, lse.dtype)
  return lse - jnp.log(count)


@functools.partial(jit, static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """``x - logsumexp(x, axis)``, computed stably (masked entries are ``-inf``)."""
  x = _arraylike("log_softmax", x)
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  shifted = x_safe - lax.stop_gradient(x_max)
  shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_lse
  if where is not None:
    return jnp.where(where, result, -np.inf)
  return result


def softmax(x, axis=-1, where=None):
  """``exp(x) / sum(exp(x), axis)``, computed stably (masked entries are 0)."""
  check_arraylike("softmax", x)
  x = jnp.asarray(x)
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
  result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = jnp.where(where, result, 0)
  return result


@functools.partial(jit, static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``.

  ``algorithm="fast"`` (JAX's default) takes the variance as ``mean(x**2) - mean(x)**2``
  (clipped at 0); ``"stable"`` as ``mean((x - mean)**2)``.
  """
  check_arraylike("standardize", x)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
    elif algorithm == "fast":
      variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
      variance = jnp.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


@functools.partial(jit, static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
  ndim = len(jnp.shape(x))
  if not -(ndim + 1) <= axis <= ndim:
    raise ValueError(f"one_hot: axis {axis} is out of bounds for an output of rank "
                     f"{ndim + 1}")
  out_axis = axis % (ndim + 1)
  lhs = lax.expand_dims(x, (axis,))
  rhs_shape = [1] * ndim
  rhs_shape.insert(out_axis, num_classes)
  rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), out_axis)
  return (lhs == rhs).astype(dtype)


def one_hot(x, num_classes: int, *, dtype=None, axis: int = -1):
  """One-hot encoding of the integers ``x`` over ``num_classes`` classes, on a new axis
  ``axis``; out-of-range values encode as all zeros. ``dtype`` defaults to float."""
  if isinstance(num_classes, Tracer):
    concrete = num_classes.to_concrete_value()
    if concrete is None:
      raise ConcretizationTypeError(
          num_classes, "The error arose in jax.nn.one_hot argument `num_classes`; mark it "
          "static (static_argnums) under jit")
    num_classes = concrete
  try:
    num_classes = operator.index(num_classes)  # 3.5 is no class count (JAX: TypeError)
  except TypeError as e:
    raise TypeError("one_hot: num_classes must be a concrete (static) integer, got "
                    f"{num_classes!r}") from e
  x = jnp.asarray(x)  # lists too, as in JAX
  if not dtypes.is_int(x.dtype):
    # JAX's deprecation (2024-12): float input is still encoded (truncated) for now.
    warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                  DeprecationWarning, stacklevel=2)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  return _one_hot(x, num_classes, dtype=np.dtype(dtype), axis=axis)


@jit
def hard_sigmoid(x):
  """``relu6(x + 3) / 6``."""
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  """``x * hard_sigmoid(x)``."""
  x = _arraylike("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
  """``log(1 - exp(-x))`` for ``x > 0``, accurate for small and large ``x``."""
  x = _arraylike("log1mexp", x)
  c = jnp.log(2.0)
  return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))

log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))
