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
  """Identity activation: return ``x`` unchanged, as an array.

  Array-like inputs (lists, NumPy arrays, scalars) are converted; other inputs raise TypeError.

  Args:
    x: input array or scalar.

  Returns:
    ``x`` as an array, with its dtype and weak type.

  Examples:
    >>> hlox.nn.identity(jnp.array([1, 2]))
    Array([1, 2], dtype=int32)
  """
  check_arraylike("identity", x)
  return jnp.asarray(x)


@custom_jvp
@jit
def relu(x):
  """Rectified linear unit: ``max(x, 0)`` elementwise.

  Its derivative at 0 is taken to be 0 (a ``custom_jvp``), as in JAX, so ``grad`` at the kink
  gives 0.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> hlox.nn.relu(jnp.array([-2., 0., 2.]))
    Array([0., 0., 2.], dtype=float32)
    >>> hlox.grad(hlox.nn.relu)(0.)
    Array(0., dtype=float32, weak_type=True)
  """
  return jnp.maximum(x, 0)

relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
  """ReLU capped at 6: ``min(max(x, 0), 6)`` elementwise.

  The derivative at both kinks (0 and 6) is taken to be 0 (a ``custom_jvp``), as in JAX.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.relu6(jnp.array([-1., 3., 7.]))
    Array([0., 3., 6.], dtype=float32)
  """
  return jnp.minimum(jnp.maximum(x, 0), 6.)

relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x, b=4):
  """Squareplus, a smooth ReLU: ``(x + sqrt(x**2 + b)) / 2``.

  Larger ``b`` smooths the bend at 0 more; ``b = 0`` gives ``relu``.

  Args:
    x: input array or scalar.
    b: non-negative smoothness parameter (default 4), scalar or array.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.squareplus(jnp.array([-2., 0., 2.]))
    Array([0.41421354, 1.        , 2.4142137 ], dtype=float32)
  """
  x, b = _arraylike("squareplus", x), _arraylike("squareplus", b)
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@jit
def softplus(x):
  """Softplus: ``log(1 + exp(x))`` elementwise.

  Computed as ``logaddexp(x, 0)``, so it neither overflows for large ``x`` nor loses precision
  for very negative ``x``.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.softplus(jnp.array([-2., 0., 2.]))
    Array([0.126928 , 0.6931472, 2.126928 ], dtype=float32)
  """
  return jnp.logaddexp(x, 0)


@jit
def sparse_plus(x):
  """Sparse plus: 0 below -1, ``x`` above 1, ``(x + 1)**2 / 4`` in between.

  A piecewise-quadratic, continuously differentiable relative of softplus that is exactly
  zero for ``x <= -1``.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.sparse_plus(jnp.array([-2., 0., 2.]))
    Array([0.  , 0.25, 2.  ], dtype=float32)
  """
  x = _arraylike("sparse_plus", x)
  return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def soft_sign(x):
  """Soft-sign activation: ``x / (|x| + 1)`` elementwise.

  Maps the real line smoothly onto (-1, 1).

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.soft_sign(jnp.array([-2., 0., 2.]))
    Array([-0.6666667,  0.       ,  0.6666667], dtype=float32)
  """
  x = _arraylike("soft_sign", x)
  return x / (jnp.abs(x) + 1)


# JAX does not jit ``sigmoid`` and ``gelu``: eagerly one executable, inlined when traced.
@eager_fused
def sigmoid(x):
  """Logistic sigmoid: ``1 / (1 + exp(-x))`` elementwise.

  Computed by ``lax.logistic``; ``x`` must be floating or complex (integer inputs raise
  TypeError, as in JAX).

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> hlox.nn.sigmoid(jnp.array([-2., 0., 2.]))
    Array([0.11920292, 0.5       , 0.880797  ], dtype=float32)
  """
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """Sparse sigmoid: ``clip((x + 1) / 2, 0, 1)`` elementwise.

  The derivative of :func:`sparse_plus`; exactly 0 below -1 and 1 above 1.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.sparse_sigmoid(jnp.array([-2., 0., 0.5]))
    Array([0.  , 0.5 , 0.75], dtype=float32)
  """
  return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@jit
def silu(x):
  """SiLU (also called swish): ``x * sigmoid(x)`` elementwise.

  ``x`` must be floating (integer inputs raise TypeError, as :func:`sigmoid`).
  ``hlox.nn.swish`` is this function.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> hlox.nn.silu(jnp.array([-2., 0., 2.]))
    Array([-0.23840584,  0.        ,  1.761594  ], dtype=float32)
  """
  x = _arraylike("silu", x)
  return x * sigmoid(x)


swish = silu


@jit
def mish(x):
  """Mish activation: ``x * tanh(softplus(x))`` elementwise.

  A smooth, non-monotonic activation close to SiLU.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.mish(jnp.array([-2., 0., 2.]))
    Array([-0.25250146,  0.        ,  1.943959  ], dtype=float32)
  """
  x = _arraylike("mish", x)
  return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x):
  """Log-sigmoid: ``log(sigmoid(x))`` elementwise.

  Computed as ``-softplus(-x)``, which stays finite for very negative ``x``.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.log_sigmoid(jnp.array([-2., 0., 2.]))
    Array([-2.126928 , -0.6931472, -0.126928 ], dtype=float32)
  """
  x = _arraylike("log_sigmoid", x)
  return -softplus(-x)


@jit
def elu(x, alpha=1.0):
  """Exponential linear unit: ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``.

  The negative branch is evaluated on ``min(x, 0)`` only, so large positive inputs give no
  inf in it (and no NaN gradient).

  Args:
    x: input array or scalar.
    alpha: scale of the negative branch (default 1.0).

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.elu(jnp.array([-2., 0., 2.]))
    Array([-0.86466473,  0.        ,  2.        ], dtype=float32)
  """
  x = _arraylike("elu", x)
  # The inner where keeps expm1 away from large positive x (no inf in the unused branch,
  # so no NaN gradient).
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """Leaky ReLU: ``x`` if ``x >= 0`` else ``negative_slope * x``.

  The float slope promotes integer inputs to float.

  Args:
    x: input array or scalar.
    negative_slope: slope for negative inputs (default 0.01).

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.leaky_relu(jnp.array([-2., 0., 2.]))
    Array([-0.02,  0.  ,  2.  ], dtype=float32)
  """
  x = _arraylike("leaky_relu", x)
  return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  """Hard tanh: ``x`` clipped to [-1, 1].

  Written with ``where`` (as JAX) so the gradient is 1 inside (-1, 1) and 0 outside;
  integer inputs stay integer.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape and dtype.

  Examples:
    >>> hlox.nn.hard_tanh(jnp.array([-2., 0.5, 2.]))
    Array([-1. ,  0.5,  1. ], dtype=float32)
  """
  x = _arraylike("hard_tanh", x)
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
  """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

  Unlike :func:`elu`, its derivative is continuous at 0 for every ``alpha``.

  Args:
    x: input array or scalar.
    alpha: scale of the negative branch (default 1.0).

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.celu(jnp.array([-2., 0., 2.]))
    Array([-0.86466473,  0.        ,  2.        ], dtype=float32)
  """
  return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


# The self-normalizing constants of Klambauer et al. (2017).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jit
def selu(x):
  """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalizing constants.

  ``alpha ~= 1.6733`` and ``scale ~= 1.0507`` (Klambauer et al., 2017) keep activations near
  zero mean and unit variance.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.selu(jnp.array([-2., 0., 2.]))
    Array([-1.5201665,  0.       ,  2.101402 ], dtype=float32)
  """
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


@functools.partial(eager_fused, static_argnames=("approximate",))
def gelu(x, approximate: bool = True):
  """Gaussian error linear unit: ``x * Phi(x)`` with ``Phi`` the standard normal CDF.

  By default ``Phi`` is the tanh approximation; ``approximate=False`` computes it exactly with
  ``erfc``. Integer inputs are promoted to the default float dtype.

  Args:
    x: input array or scalar.
    approximate: if True (default) use the tanh approximation (static).

  Returns:
    A floating array of ``x``'s shape.

  Examples:
    >>> hlox.nn.gelu(jnp.array([-2., 0., 2.]))
    Array([-0.04540235,  0.        ,  1.9545977 ], dtype=float32)
    >>> hlox.nn.gelu(jnp.array([-2., 0., 2.]), approximate=False)
    Array([-0.04550027,  0.        ,  1.9544997 ], dtype=float32)
  """
  x = promote_args_inexact("gelu", x)[0]
  if approximate:
    c = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
    return x * cdf
  half = np.sqrt(0.5).astype(x.dtype)
  return jnp.array(0.5 * x * lax.erfc(-x * half), dtype=x.dtype)


@functools.partial(jit, static_argnames=("axis",))
def glu(x, axis: int = -1):
  """Gated linear unit: ``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``x``.

  ``x`` is split in two along ``axis``, whose size must be even (ValueError otherwise).

  Args:
    x: input array or scalar.
    axis: the axis to split (static; default -1).

  Returns:
    An array of ``x``'s shape with ``axis`` halved.

  Examples:
    >>> hlox.nn.glu(jnp.array([1., 2., 0., 100.]))
    Array([0.5, 2. ], dtype=float32)
  """
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
  """Log of the mean of exponentials: ``log(mean(exp(x)))`` along ``axis``.

  Computed stably as ``logsumexp(x) - log(n)``, with ``n`` the number of elements each
  reduction sees (those where ``where`` is True).

  Args:
    x: input array.
    axis: int or tuple of ints to reduce over (static); None: all axes.
    where: optional boolean mask broadcastable to ``x``: only True elements take part.
    keepdims: if True, keep the reduced axes with size 1 (static).

  Returns:
    An array of ``x``'s shape without the reduced axes.

  Examples:
    >>> hlox.nn.logmeanexp(jnp.array([0., 1., 2.]))
    Array(1.3089936, dtype=float32)
  """
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  count = _reduce_count(x, axis, where, keepdims, lse.dtype)
  return lse - jnp.log(count)


@functools.partial(jit, static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """Log-softmax: ``x - logsumexp(x, axis)``.

  The maximum is subtracted first (outside the gradient), so large logits do not overflow.
  Entries masked out by ``where`` are ``-inf``.

  Args:
    x: input array of logits.
    axis: int or tuple of ints to normalize over (static; default -1).
    where: optional boolean mask broadcastable to ``x``: only True elements take part.

  Returns:
    An array of ``x``'s shape and (floating) dtype whose ``exp`` sums to 1 over ``axis``.

  Examples:
    >>> hlox.nn.log_softmax(jnp.array([1., 2., 3.]))
    Array([-2.407606  , -1.4076059 , -0.40760595], dtype=float32)
    >>> hlox.nn.log_softmax(jnp.array([1., 2., 3.]), where=jnp.array([True, True, False]))
    Array([-1.3132616 , -0.31326163,        -inf], dtype=float32)
  """
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
  """Softmax: ``exp(x) / sum(exp(x), axis)``.

  The maximum is subtracted first (outside the gradient), so large logits do not overflow.
  Entries masked out by ``where`` are 0. Integer inputs are promoted to float.

  Args:
    x: input array of logits.
    axis: int or tuple of ints to normalize over (default -1).
    where: optional boolean mask broadcastable to ``x``: only True elements take part.

  Returns:
    An array of ``x``'s shape, summing to 1 over ``axis``.

  Examples:
    >>> hlox.nn.softmax(jnp.array([1., 2., 3.]))
    Array([0.09003057, 0.24472848, 0.66524094], dtype=float32)
    >>> hlox.nn.softmax(jnp.array([1., 2., 3.]), where=jnp.array([True, True, False]))
    Array([0.26894143, 0.7310586 , 0.        ], dtype=float32)
  """
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
  """Standardize ``x`` along ``axis``: ``(x - mean) / sqrt(variance + epsilon)``.

  The mean and variance are computed from ``x`` unless given. ``algorithm="fast"`` (the
  default, as JAX) takes the variance as ``mean(x**2) - mean(x)**2`` clipped at 0;
  ``"stable"`` as ``mean((x - mean)**2)``; any other value raises ValueError.

  Args:
    x: input array.
    axis: int or tuple of ints to normalize over (static; default -1).
    mean: optional precomputed mean, broadcastable to ``x``.
    variance: optional precomputed variance, broadcastable to ``x``.
    epsilon: small constant added to the variance (default 1e-5).
    where: optional boolean mask: only True elements enter the statistics.
    algorithm: ``"fast"`` or ``"stable"`` (keyword-only, static).

  Returns:
    An array of ``x``'s shape.

  Examples:
    >>> hlox.nn.standardize(jnp.array([1., 2., 3.]))
    Array([-1.224736,  0.      ,  1.224736], dtype=float32)
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
  """One-hot encode integers ``x`` over ``num_classes`` classes, on a new axis.

  Element ``[..., c, ...]`` of the result is 1 where ``x == c``; values outside
  ``[0, num_classes)`` encode as all zeros. ``num_classes`` must be a concrete integer (under
  ``jit`` make it static), else ConcretizationTypeError/TypeError. Non-integer ``x`` is still
  encoded but warns (DeprecationWarning), as in JAX.

  Args:
    x: integer array of class indices.
    num_classes: the number of classes (a concrete int).
    dtype: dtype of the result (keyword-only; default float32, float64 with x64).
    axis: where the class axis goes in the result (keyword-only; default -1).

  Returns:
    An array of ``x``'s shape with a new axis of size ``num_classes`` at ``axis``.

  Examples:
    >>> hlox.nn.one_hot(jnp.array([0, 2, 5]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    >>> hlox.nn.one_hot(jnp.array([1, 0]), 3, dtype=jnp.int32, axis=0)
    Array([[0, 1],
           [1, 0],
           [0, 0]], dtype=int32)
  """
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
  """Hard sigmoid: ``relu6(x + 3) / 6`` elementwise.

  A piecewise-linear sigmoid: 0 below -3, 1 above 3.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.hard_sigmoid(jnp.array([-4., 0., 4.]))
    Array([0. , 0.5, 1. ], dtype=float32)
  """
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  """Hard SiLU (hard swish): ``x * hard_sigmoid(x)`` elementwise.

  A piecewise version of :func:`silu`. ``hlox.nn.hard_swish`` is this function.

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.hard_silu(jnp.array([-4., 1., 4.]))
    Array([-0.       ,  0.6666667,  4.       ], dtype=float32)
  """
  x = _arraylike("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
  """``log(1 - exp(-x))`` elementwise, accurate for small and large ``x``.

  Defined for ``x > 0``; switches between ``log(-expm1(-x))`` and ``log1p(-exp(-x))`` at
  ``log(2)``. Its derivative is ``1 / expm1(x)`` (a ``custom_jvp``).

  Args:
    x: input array or scalar.

  Returns:
    An array of ``x``'s shape holding the activation, in ``x``'s dtype (integer inputs promote
    to float where the formula needs it).

  Examples:
    >>> hlox.nn.log1mexp(jnp.array([0.01, 1., 30.]))
    Array([-4.6101661e+00, -4.5867515e-01, -9.3576229e-14], dtype=float32)
  """
  x = _arraylike("log1mexp", x)
  c = jnp.log(2.0)
  return jnp.where(x < c, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))

log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))
