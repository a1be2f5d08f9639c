"""Resampling with separable kernels: ``resize`` and ``scale_and_translate``, as JAX's.

Pixels are half-centred (pixel ``i`` covers ``[i, i + 1)`` and sits at ``i + 0.5``). For each
resized axis a weight matrix ``(in, out)`` holds the kernel evaluated at the distance from
each input pixel to the point each output pixel samples; columns are normalized to sum to 1
(columns of near-zero sum are zeroed), and outputs sampling outside the input get 0. With
``antialias`` a downscale stretches the kernel by the inverse scale, so it averages the
pixels it skips.
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import jit
from hlox.core import dtypes
from hlox.core.tracer import Tracer
from hlox.errors import ConcretizationTypeError
from hlox.numpy.util import promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
  """How ``resize`` resamples: NEAREST, LINEAR (triangle kernel), LANCZOS3 and LANCZOS5
  (Lanczos kernels of radius 3 and 5), CUBIC (Keys cubic), CUBIC_PYTORCH (OpenCV/PyTorch's
  cubic with edge padding when not antialiased) and AREA (box averaging)."""
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str) -> "ResizeMethod":
    """The method named ``s`` ('nearest', 'linear'/'bilinear'/'trilinear'/'triangle',
    'lanczos3', 'lanczos5', 'cubic'/'bicubic'/'tricubic', 'cubic-pytorch'/
    'bicubic-pytorch', 'area'); ValueError for any other name."""
    method = _NAMES.get(s)
    if method is None:
      raise ValueError(f'Unknown resize method "{s}"')
    return method


_NAMES = {
    "nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "area": ResizeMethod.AREA,
}


# --- kernels, as functions of the (non-negative) distance x --------------------------------

def _lanczos(radius, x):
  y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
  # Near 0 the ratio is 0/0: its limit is 1.
  out = jnp.where(x > 1e-3, y / jnp.where(x != 0, np.pi ** 2 * x ** 2, 1), 1)
  return jnp.where(x > radius, 0., out)


def _keys_cubic(x):
  # Keys' cubic convolution kernel with a = -0.5.
  out = ((1.5 * x - 2.5) * x) * x + 1.
  out = jnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
  return jnp.where(x >= 2., 0., out)


def _opencv_cubic(x):
  # The same family with a = -0.75, which OpenCV and PyTorch use.
  a = -0.75
  out = ((a + 2.) * x - (a + 3.)) * x * x + 1.
  out = jnp.where(x >= 1., ((a * x - 5. * a) * x + 8. * a) * x - 4. * a, out)
  return jnp.where(x >= 2., 0., out)


def _triangle(x):
  return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()  # marks the box kernel, which integrates overlaps instead of sampling

_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, lambda x: _lanczos(3., x)),
    ResizeMethod.LANCZOS5: (5, lambda x: _lanczos(5., x)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalize_columns(weights):
  total = jnp.sum(weights, axis=0, keepdims=True)
  return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                   weights / jnp.where(total != 0, total, 1), 0)


def _weight_matrix(in_size, out_size, scale, translation, kernel, antialias, edge_padding,
                   radius):
  """The ``(in_size, out_size)`` resampling matrix of one axis."""
  dtype = dtypes.result_type(scale, translation)
  inv_scale = 1. / scale
  kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
  # Where output pixel j samples the input, in input pixel coordinates.
  sample = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale - 0.5
  if edge_padding:
    if antialias:
      if isinstance(scale, Tracer):
        raise ConcretizationTypeError(
            "scale_and_translate: antialiasing with edge padding needs a static scale")
      pad = math.ceil(radius * max(1. / float(scale), 1.))
    else:
      pad = radius
  else:
    pad = 0
  positions = jnp.arange(-pad, in_size + pad, dtype=dtype)
  if kernel is _AREA:
    # Overlap of output pixel j's footprint [L_j, L_j + 1/scale) with input pixel i's.
    left_out = jnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
    right_out = left_out + inv_scale
    left_in = jnp.arange(in_size, dtype=dtype)
    weights = jnp.maximum(0., jnp.minimum(right_out[None, :], left_in[:, None] + 1.)
                          - jnp.maximum(left_out[None, :], left_in[:, None]))
  else:
    weights = kernel(jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
  if edge_padding:
    # Rows outside the image fold onto the edge pixels (the edges are repeated).
    clamped = jnp.clip(positions.astype(np.int32), 0, in_size - 1)
    cols = lax.broadcast_in_dim(jnp.arange(out_size), (positions.shape[0], out_size), (1,))
    folded = jnp.zeros((in_size, out_size), dtype).at[clamped[:, None], cols].add(weights)
    return _normalize_columns(folded)
  weights = _normalize_columns(weights)
  inside = jnp.logical_and(sample >= -0.5, sample <= in_size - 0.5)
  return jnp.where(inside[None, :], weights, 0)


def _scale_and_translate(x, shape, spatial_dims, scale, translation, kernel, antialias,
                         precision, edge_padding, radius):
  if not spatial_dims:
    return x
  ndim = len(shape)
  operands, out_indices = [], list(range(ndim))
  for i, d in enumerate(spatial_dims):
    d = d + ndim if d < 0 else d
    w = _weight_matrix(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                       edge_padding, radius).astype(x.dtype)
    operands += [w, [d, ndim + i]]
    out_indices[d] = ndim + i
  return jnp.einsum(x, list(range(ndim)), *operands, out_indices, precision=precision)


def _check_shape(name, image, shape):
  try:
    shape = tuple(operator.index(s) for s in shape)
  except TypeError:
    # Fractional sizes are an error (as in JAX), not silently truncated.
    raise TypeError(f"{name}: shape must be a sequence of integers, got {shape!r}") from None
  if len(shape) != np.ndim(image):
    raise ValueError(f"{name}: shape must have length equal to the number of dimensions of "
                     f"x; {shape} vs {tuple(np.shape(image))}")
  if any(s < 0 for s in shape):
    raise ValueError(f"{name}: the output shape must be non-negative, got {shape}")
  return shape


def _method(method):
  if isinstance(method, str):
    return ResizeMethod.from_string(method)
  if not isinstance(method, ResizeMethod):
    raise TypeError(f"expected a ResizeMethod or its name, got {method!r}")
  return method


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias: bool = True, precision=lax.Precision.HIGHEST):
  """Resample ``image`` into ``shape``, mapping input location ``x`` of each axis in
  ``spatial_dims`` to ``x * scale + translation`` (the inverse map gives each output pixel
  its sample point). Outputs that sample outside the input are 0. ``method`` is any
  ``ResizeMethod`` but NEAREST, or its name; ``scale`` and ``translation`` may be traced."""
  image = jnp.asarray(image)
  shape = _check_shape("scale_and_translate", image, shape)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  spatial_dims = tuple(spatial_dims)
  if len(spatial_dims) != np.shape(scale)[0] or len(spatial_dims) != np.shape(translation)[0]:
    raise ValueError(f"scale_and_translate: scale {np.shape(scale)} and translation "
                     f"{np.shape(translation)} need one entry per spatial dimension "
                     f"{spatial_dims}")
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  image, = promote_dtypes_inexact(image)
  scale, translation = promote_dtypes_inexact(scale, translation)
  return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel,
                              antialias, precision,
                              method == ResizeMethod.CUBIC_PYTORCH and not antialias, radius)


def _resize_nearest(x, shape):
  for d, (m, n) in enumerate(zip(x.shape, shape)):
    if m == n:
      continue
    # Output pixel j takes the input pixel under its centre, computed in float32 as JAX.
    offsets = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n)
    index = [slice(None)] * x.ndim
    index[d] = np.floor(offsets.astype(np.float32)).astype(np.int32)
    x = x[tuple(index)]
  return x


def _resize(image, shape, method, antialias, precision):
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  image, = promote_dtypes_inexact(image)
  spatial_dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
  return _scale_and_translate(image, shape, spatial_dims, scale, [0.] * len(spatial_dims),
                              kernel, antialias, precision,
                              method == ResizeMethod.CUBIC_PYTORCH and not antialias, radius)


_resize_jit = jit(_resize, static_argnums=(1, 2, 3, 4))


def resize(image, shape, method, antialias: bool = True, precision=lax.Precision.HIGHEST):
  """``image`` resampled to ``shape`` (one entry per dimension; axes whose size does not
  change are left alone) with ``method``: a ``ResizeMethod`` or its name ('nearest',
  'linear', 'lanczos3', 'lanczos5', 'cubic', 'cubic-pytorch', 'area'). ``antialias``
  widens the kernel when downsampling (ignored by 'nearest'); integer images are resampled
  in floating point, except by 'nearest'."""
  image = jnp.asarray(image)
  shape = _check_shape("resize", image, shape)
  return _resize_jit(image, shape, _method(method), bool(antialias), precision)
