"""Dimension sizes as shape rules compute with them: constant and symbolic alike.

A shape rule that compares or combines sizes goes through these helpers, which give the
plain integer answer for constant sizes and a symbolic one (``shape_poly.py``) otherwise:
``definitely_equal`` answers False where the algebra cannot decide, ``canonicalize_slice``
is ``slice.indices`` for symbolic sizes and bounds, ``dilate_dim``/``stride_dim`` are the
window arithmetic of convolutions and windowed reductions.
"""
from __future__ import annotations

import operator

from hlox.core.shape_poly import (DimSize, InconclusiveDimensionOperation, _DimExpr, max_dim,
                                  min_dim)

__all__ = ["definitely_equal", "definitely_equal_shape", "canonicalize_slice", "dilate_dim",
           "stride_dim", "is_empty_shape"]


def definitely_equal(x, y) -> bool:
  """Whether sizes ``x`` and ``y`` are equal for every value of the dimension variables
  (False where that is not known)."""
  if x is y:
    return True
  try:
    return bool(x == y)
  except InconclusiveDimensionOperation:
    return False


def definitely_equal_shape(s1, s2) -> bool:
  return len(s1) == len(s2) and all(map(definitely_equal, s1, s2))


def is_empty_shape(shape) -> bool:
  return any(definitely_equal(d, 0) for d in shape)


def _as_index(d):
  # NumPy and array integers become ints; symbolic sizes stay as they are.
  return d if type(d) is _DimExpr else operator.index(d)


def step_is_forward(step, context: str, zero_message: str) -> bool:
  """Whether a (maybe symbolic) ``step`` is positive: ValueError ``zero_message`` when it is
  0, and JAX's InconclusiveDimensionOperation naming ``context`` when the algebra cannot
  decide its sign."""
  try:
    if step == 0:
      raise ValueError(zero_message)
    return step > 0
  except InconclusiveDimensionOperation as e:
    raise InconclusiveDimensionOperation(
        f"In {context} the step ({step}) must be resolved statically if it is > 0 or < 0."
        f"\nDetails: {e}") from None


def canonicalize_slice(s: slice, axis_size: DimSize) -> tuple:
  """``(start, step, size)`` of the elements ``s`` selects from an axis of ``axis_size``
  (as ``s.indices``, with the count), for symbolic sizes or bounds too. The sign of the
  step, and of each bound given, must be decided by the algebra."""
  step = 1 if s.step is None else _as_index(s.step)
  forward = step_is_forward(step, "slice with non-constant elements",
                            "slice step cannot be zero")

  def clamp(i, which):
    try:
      nonnegative = i >= 0
    except InconclusiveDimensionOperation as e:
      raise InconclusiveDimensionOperation(
          f"In slice with non-constant elements the {which} ({i}) must be resolved "
          f"statically if it is >= 0.\nDetails: {e}") from None
    if nonnegative:
      return min_dim(axis_size if forward else axis_size - 1, i)
    return max_dim(0 if forward else -1, axis_size + i)

  start = ((0 if forward else axis_size - 1) if s.start is None
           else clamp(_as_index(s.start), "start"))
  stop = (axis_size if forward else -1) if s.stop is None else clamp(_as_index(s.stop), "stop")
  gap = step if forward else -step
  distance = stop - start if forward else start - stop
  return start, step, max_dim(0, distance + gap - 1) // gap


def dilate_dim(d: DimSize, dilation: DimSize) -> DimSize:
  """The size of ``d`` elements with ``dilation - 1`` holes between neighbours:
  ``max(0, 1 + dilation * (d - 1))`` (``dilation >= 1``)."""
  if definitely_equal(dilation, 1):
    return d
  return max_dim(1 + dilation * (d - 1), 0)


def stride_dim(d: DimSize, window_size: DimSize, window_stride: DimSize) -> DimSize:
  """The number of windows of ``window_size`` at ``window_stride`` that fit in ``d``:
  ``max(0, (d - window_size) // window_stride + 1)``."""
  return max_dim((d - window_size) // window_stride + 1, 0)
