"""``hlox.scipy.interpolate``: ``RegularGridInterpolator`` (JAX's ``jax.scipy.interpolate``).

Linear or nearest interpolation on a rectilinear grid (one sorted coordinate array per
axis). Points outside the grid get ``fill_value`` (NaN by default; ``None`` extrapolates
linearly from the edge cells). ``bounds_error=True`` cannot be checked under ``jit`` and is
refused, as in JAX. The interpolator is a pytree (grid, values and fill value are leaves).
"""
from __future__ import annotations

import itertools

import numpy as np

from hlox import numpy as jnp
from hlox.numpy.util import check_arraylike, promote_dtypes_inexact
from hlox._tree_transform import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _points_array(points, ndim):
  """``points`` (an array ``(..., ndim)`` or a tuple of coordinate arrays) as ``(..., ndim)``."""
  if isinstance(points, tuple) and len(points) == 1:
    points = points[0]
  if isinstance(points, tuple):
    parts = jnp.broadcast_arrays(*points)
    return jnp.stack([jnp.asarray(p, dtype=float) for p in parts], axis=-1)
  check_arraylike("RegularGridInterpolator", points)
  points = jnp.asarray(points)
  if points.ndim == 1:
    points = points.reshape(-1, ndim)
  return points


class RegularGridInterpolator:
  """Interpolate ``values`` given on the grid ``points`` (a tuple of 1-D ascending arrays,
  one per leading axis of ``values``; trailing axes of ``values`` are carried along).

  Call it with points ``xi`` of shape ``(..., ndim)`` (or a tuple of coordinate arrays) to
  get values of shape ``xi.shape[:-1] + values.shape[ndim:]``."""

  def __init__(self, points, values, method="linear", bounds_error=False,
               fill_value=np.nan):
    if method not in _METHODS:
      raise ValueError(f"RegularGridInterpolator: method {method!r} is not defined")
    if bounds_error:
      raise NotImplementedError("RegularGridInterpolator: `bounds_error` takes no effect "
                                "under JIT")
    check_arraylike("RegularGridInterpolator", values)
    values = jnp.asarray(values)
    if len(points) > values.ndim:
      raise ValueError(f"RegularGridInterpolator: there are {len(points)} point arrays, but "
                       f"values has {values.ndim} dimensions")
    values, = promote_dtypes_inexact(values)
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = jnp.asarray(fill_value)
      if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("RegularGridInterpolator: fill_value must be either 'None' or of a "
                         f"type compatible with values ({fill_value.dtype} vs "
                         f"{values.dtype})")
    check_arraylike("RegularGridInterpolator", *points)
    self.method = method
    self.bounds_error = bounds_error
    self.fill_value = fill_value
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    method = self.method if method is None else method
    if method not in _METHODS:
      raise ValueError(f"RegularGridInterpolator: method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _points_array(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"RegularGridInterpolator: the requested sample points xi have "
                       f"dimension {xi.shape[-1]}, but this RegularGridInterpolator has "
                       f"dimension {ndim}")
    xi_shape = xi.shape
    xi = xi.reshape(-1, xi_shape[-1])
    indices, distances, outside = self._find_indices(xi.T)
    if method == "linear":
      result = self._linear(indices, distances)
    else:
      result = self._nearest(indices, distances)
    if self.fill_value is not None:
      result = jnp.where(outside.reshape(result.shape[:1] + (1,) * (result.ndim - 1)),
                         self.fill_value, result)
    return result.reshape(xi_shape[:-1] + self.values.shape[ndim:])

  def _linear(self, indices, distances):
    trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
    result = jnp.asarray(0.)
    # Sum over the 2**ndim corners of each point's cell.
    for corner in itertools.product(*[(i, i + 1) for i in indices]):
      weight = jnp.asarray(1.)
      for ci, i, d in zip(corner, indices, distances):
        weight = weight * jnp.where(ci == i, 1 - d, d)
      result = result + self.values[corner] * weight[trailing]
    return result

  def _nearest(self, indices, distances):
    return self.values[tuple(jnp.where(d <= .5, i, i + 1) for i, d in zip(indices, distances))]

  def _find_indices(self, xi):
    indices, distances = [], []
    outside = jnp.zeros((xi.shape[1],), dtype=bool)
    for x, g in zip(xi, self.grid):
      # The cell [g[i], g[i+1]] holding x, clamped to the edge cells outside the grid.
      i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
      indices.append(i)
      distances.append((x - g[i]) / (g[i + 1] - g[i]))
      outside = outside | (x < g[0]) | (x > g[-1])
    return indices, distances, outside


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]))
