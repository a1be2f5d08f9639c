"""``hlox.example_libraries.stax``: JAX's small layer library (``jax.example_libraries.stax``).

A layer is a pair ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape) -> (output_shape, params)`` draws the parameters from a PRNG key
  for inputs of ``input_shape`` (a tuple, or a list of tuples for multi-input layers);
- ``apply_fun(params, inputs, **kwargs) -> outputs`` runs the layer; the keyword ``rng`` carries
  a key to layers that need randomness (``Dropout``).

Constructors are CamelCase (``Dense``, ``Conv``); layers without settings are the pair itself
(``Relu``, ``Flatten``), others are made by calling (``Dense(10)``). ``serial``/``parallel``
and the fan-in/fan-out layers build networks out of layers. Parameter draws split keys exactly
as JAX's library does, so the same key gives the same parameters.
"""
import functools
import math

from hlox import lax
from hlox import numpy as jnp
from hlox import random
from hlox.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                     softplus, standardize)
from hlox.nn.initializers import glorot_normal, normal, ones, zeros

# Older names JAX's stax still answers to.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def _kernel_and_bias_shapes(dimension_numbers, out_chan, filter_shape, input_shape):
  """The kernel shape (laid out by the rhs spec) and the bias shape (broadcastable against
  the output, laid out by the out spec) of a convolution layer."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  in_chan = input_shape[lhs_spec.index("C")]
  spatial = iter(filter_shape)
  kernel = []
  for letter in rhs_spec:
    if letter == "O":
      kernel.append(out_chan)
    elif letter == "I":
      kernel.append(in_chan)
    else:
      kernel.append(next(spatial))
  bias = [out_chan if letter == "C" else 1 for letter in out_spec]
  return kernel, bias


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully connected layer: ``inputs @ W + b`` with ``W`` of shape ``(in_dim, out_dim)``."""
  def init_fun(rng, input_shape):
    w_key, b_key = random.split(rng)
    W = W_init(w_key, (input_shape[-1], out_dim))
    b = b_init(b_key, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
  """A convolution layer with the layouts ``dimension_numbers = (lhs_spec, rhs_spec,
  out_spec)``, e.g. ``('NHWC', 'HWIO', 'NHWC')``; ``padding`` is ``'VALID'``, ``'SAME'`` or
  explicit ``(low, high)`` pairs."""
  rhs_spec = dimension_numbers[1]
  unit = (1,) * len(filter_shape)
  strides = strides or unit
  if W_init is None:
    W_init = glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape, bias_shape = _kernel_and_bias_shapes(dimension_numbers, out_chan,
                                                       filter_shape, input_shape)
    output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                dimension_numbers)
    w_key, b_key = random.split(rng)
    return output_shape, (W_init(w_key, kernel_shape), b_init(b_key, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    out = lax.conv_general_dilated(inputs, W, strides, padding, unit, unit,
                                   dimension_numbers=dimension_numbers)
    return out + b
  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
  """A transposed-convolution layer (``lax.conv_transpose``) with the layouts
  ``dimension_numbers``."""
  rhs_spec = dimension_numbers[1]
  strides = strides or (1,) * len(filter_shape)
  if W_init is None:
    W_init = glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def init_fun(rng, input_shape):
    kernel_shape, bias_shape = _kernel_and_bias_shapes(dimension_numbers, out_chan,
                                                       filter_shape, input_shape)
    output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                  dimension_numbers)
    w_key, b_key = random.split(rng)
    return output_shape, (W_init(w_key, kernel_shape), b_init(b_key, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    out = lax.conv_transpose(inputs, W, strides, padding,
                             dimension_numbers=dimension_numbers)
    return out + b
  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Normalizes inputs over ``axis`` (batch statistics, no running averages), then scales by
  ``gamma`` and shifts by ``beta`` (each dropped, as ``()``, when ``scale``/``center`` is
  False)."""
  axis = (axis,) if jnp.isscalar(axis) else axis

  def init_fun(rng, input_shape):
    kept = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    beta_key, gamma_key = random.split(rng)
    beta = beta_init(beta_key, kept) if center else ()
    gamma = gamma_init(gamma_key, kept) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    # Parameters cover the kept axes only: index with None on the normalized ones.
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if scale:
      z = gamma[expand] * z
    if center:
      z = z + beta[expand]
    return z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _with_unit_dims(dims, positions):
  """``dims`` with a 1 inserted at each of ``positions`` (ascending, in the result)."""
  dims = tuple(dims)
  for i in sorted(positions):
    dims = dims[:i] + (1,) + dims[i:]
  return dims


def _batch_and_channel_axes(spec, ndim):
  return (0, ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))


def _make_pooling(reducer, init_val, normalize=False):
  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """A pooling layer over the spatial axes: ``window_shape`` and ``strides`` name spatial
    dimensions only; ``spec`` (e.g. ``'NCHW'``) places the batch and channel axes, which
    default to first and last."""
    spatial_window = tuple(window_shape)
    spatial_strides = tuple(strides or (1,) * len(spatial_window))
    non_spatial = _batch_and_channel_axes(spec, len(spatial_window) + 2)
    full_window = _with_unit_dims(spatial_window, non_spatial)
    full_strides = _with_unit_dims(spatial_strides, non_spatial)

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
      unit = (1,) * len(full_window)
      return lax.reduce_window_shape_tuple(input_shape, full_window, full_strides, pads,
                                           unit, unit), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
      if not normalize:
        return out
      # Divide by how many real (unpadded) elements each window covered.
      axes = _batch_and_channel_axes(spec, inputs.ndim)
      spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in axes)
      counts = lax.reduce_window(jnp.ones(spatial_shape, dtype=inputs.dtype), 0., lax.add,
                                 spatial_window, spatial_strides, padding)
      for i in sorted(axes):
        counts = jnp.expand_dims(counts, i)
      return out / counts
    return init_fun, apply_fun
  return PoolingLayer


MaxPool = _make_pooling(lax.max, -jnp.inf)
SumPool = _make_pooling(lax.add, 0.)
AvgPool = _make_pooling(lax.add, 0., normalize=True)


def _flatten_layer():
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten_layer()
"""Flattens every axis but the leading (batch) one."""

Identity = elementwise(lambda x: x)
"""Returns its inputs."""


def FanOut(num):
  """Copies its input into a list of ``num`` inputs (for ``parallel``)."""
  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum_layer():
  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum_layer()
"""Adds a list of inputs together."""


def FanInConcat(axis=-1):
  """Concatenates a list of inputs along ``axis``."""
  def init_fun(rng, input_shape):
    first = tuple(input_shape[0])
    ax = axis % len(first)
    size = sum(shape[ax] for shape in input_shape)
    return first[:ax] + (size,) + first[ax + 1:], ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """Dropout. As in JAX's stax, ``rate`` is the probability of KEEPING an element (kept
  elements are divided by it); ``apply_fun`` needs ``rng=key`` in ``'train'`` mode and is
  the identity in any other mode."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng")
    if rng is None:
      raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                       "argument. That is, instead of `apply_fun(params, inputs)`, call it "
                       "like `apply_fun(params, inputs, rng)` where `rng` is a PRNG key "
                       "(e.g. from `jax.random.key`).")
    if mode != "train":
      return inputs
    keep = random.bernoulli(rng, rate, inputs.shape)
    return jnp.where(keep, inputs / rate, 0)
  return init_fun, apply_fun


# --- combinators ----------------------------------------------------------------------------

def serial(*layers):
  """Chains ``layers``: each one's output is the next one's input. Returns a layer whose
  params are the list of the layers' params. An ``rng`` given to ``apply_fun`` is split
  into one key per layer."""
  count = len(layers)
  init_funs = [layer[0] for layer in layers]
  apply_funs = [layer[1] for layer in layers]

  def init_fun(rng, input_shape):
    params = []
    shape = input_shape
    for init in init_funs:
      rng, layer_key = random.split(rng)
      shape, layer_params = init(layer_key, shape)
      params.append(layer_params)
    return shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    keys = [None] * count if rng is None else random.split(rng, count)
    for apply, layer_params, key in zip(apply_funs, params, keys):
      inputs = apply(layer_params, inputs, rng=key, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """Runs ``layers`` side by side: the i-th layer takes the i-th of a sequence of inputs
  (shapes) and gives the i-th output. Usually between ``FanOut`` and ``FanInSum`` or
  ``FanInConcat``."""
  count = len(layers)
  init_funs = [layer[0] for layer in layers]
  apply_funs = [layer[1] for layer in layers]

  def init_fun(rng, input_shape):
    keys = random.split(rng, count)
    results = [init(key, shape) for init, key, shape in zip(init_funs, keys, input_shape)]
    return tuple(r[0] for r in results), tuple(r[1] for r in results)

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop("rng", None)
    keys = [None] * count if rng is None else random.split(rng, count)
    return [apply(p, x, rng=key, **kwargs)
            for apply, p, x, key in zip(apply_funs, params, inputs, keys)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built only once the input shape is known: ``make_layer(input_shape)`` returns
  the ``(init_fun, apply_fun)`` pair to use (called again, with ``inputs.shape``, when
  applying)."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
