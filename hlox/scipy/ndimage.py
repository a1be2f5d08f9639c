"""``hlox.scipy.ndimage``: ``map_coordinates`` (JAX's ``jax.scipy.ndimage``), orders 0 and 1.

Each output value is a weighted sum of input values at integer neighbours of its coordinate
(one neighbour for order 0, two per axis for order 1). Out-of-range neighbours are folded back
per ``mode`` ('constant' (cval), 'nearest', 'wrap', 'mirror', 'reflect') with the modes
documented by SciPy, which for 'constant' and 'wrap' are SciPy's 'grid-constant' and
'grid-wrap' (as JAX).
"""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import jit
from hlox.core import dtypes

__all__ = ["map_coordinates"]


def _mirror(index, size):
  # A triangle wave of half-period size - 1 (the edge pixels are not repeated).
  s = size - 1
  return jnp.abs((index + s) % (2 * s) - s) if s else jnp.zeros_like(index)


def _reflect(index, size):
  # Mirror about the pixel edges (the edge pixels are repeated): mirror on a doubled grid.
  return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(x):
  return x if dtypes.issubdtype(x.dtype, np.integer) else lax.round(x)


def _nearest(coordinate):
  return [(_round_half_away(coordinate).astype(np.int32), coordinate.dtype.type(1))]


def _linear(coordinate):
  lower = jnp.floor(coordinate)
  upper_weight = coordinate - lower
  index = lower.astype(np.int32)
  return [(index, 1 - upper_weight), (index + 1, upper_weight)]


@functools.partial(jit, static_argnums=(2, 3))
def _map_coordinates(input, coordinates, order, mode, cval):
  cval = jnp.asarray(cval, input.dtype)
  fixer = _INDEX_FIXERS[mode]
  nodes = _nearest if order == 0 else _linear
  per_axis = []
  for coordinate, size in zip(coordinates, input.shape):
    per_axis.append([(fixer(index, size),
                      (0 <= index) & (index < size) if mode == "constant" else None, weight)
                     for index, weight in nodes(coordinate)])
  outputs = []
  for corner in itertools.product(*per_axis):
    indices, valids, weights = zip(*corner)
    values = input[tuple(indices)]
    valids = [v for v in valids if v is not None]
    if valids:
      values = jnp.where(functools.reduce(operator.and_, valids), values, cval)
    outputs.append(functools.reduce(operator.mul, weights) * values)
  result = functools.reduce(operator.add, outputs)
  if dtypes.issubdtype(input.dtype, np.integer):
    result = _round_half_away(result)
  return result.astype(input.dtype)


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
  """The values of ``input`` interpolated at ``coordinates`` (a sequence of ``input.ndim``
  arrays of one shape, the result's shape), with nearest (``order=0``) or linear
  (``order=1``) interpolation; points outside are filled per ``mode``."""
  input = jnp.asarray(input)
  coordinates = [jnp.asarray(c) for c in coordinates]
  if len(coordinates) != input.ndim:
    raise ValueError("map_coordinates: coordinates must be a sequence of length input.ndim, "
                     f"but {len(coordinates)} != {input.ndim}")
  if mode not in _INDEX_FIXERS:
    raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode "
                              f"{mode!r}; supported modes are {sorted(_INDEX_FIXERS)}")
  if order not in (0, 1):
    raise NotImplementedError(f"map_coordinates currently requires order<=1, got {order}")
  return _map_coordinates(input, coordinates, order, mode, cval)
