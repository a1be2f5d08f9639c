"""``jax.ds`` / ``Slice``: a slice given by a start and a size, whose start may be traced.

``x[ds(i, n)]`` reads ``n`` elements from ``i`` (by ``stride``) where ``i`` may be a traced
value: the static size keeps shapes static. A static start is an ordinary slice. Indexing
of arrays (``hlox.numpy``'s ``x[...]`` and ``x.at[...]``) and of references takes them.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from hlox import tree_util


def _is_static(value) -> bool:
  """Whether ``value`` is a Python or NumPy integer: a start or size known while tracing
  (an Array, even a concrete one, is data: a pytree leaf, as in JAX)."""
  return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@tree_util.register_pytree_node_class
class Slice:
  """A slice of ``size`` elements from ``start`` by ``stride``; ``start`` and ``size`` may
  be traced values (a traced size only where the consumer allows it)."""

  __slots__ = ("start", "size", "stride")

  def __init__(self, start: Any, size: Any, stride: int = 1):
    if stride < 0:
      raise ValueError("`stride` must be >= 0.")
    self.start, self.size, self.stride = start, size, stride

  @property
  def is_dynamic_start(self) -> bool:
    return not _is_static(self.start)

  @property
  def is_dynamic_size(self) -> bool:
    return not _is_static(self.size)

  def __eq__(self, other):
    if type(other) is not Slice:
      return NotImplemented
    return (self.start, self.size, self.stride) == (other.start, other.size, other.stride)

  def __hash__(self):
    return hash((Slice, self.start, self.size, self.stride))

  def __repr__(self):
    return f"Slice(start={self.start!r}, size={self.size!r}, stride={self.stride!r})"

  def tree_flatten(self):
    # Static starts and sizes are part of the structure; traced ones are leaves.
    dyn_start, dyn_size = self.is_dynamic_start, self.is_dynamic_size
    children = (self.start if dyn_start else None, self.size if dyn_size else None)
    aux = (None if dyn_start else self.start, None if dyn_size else self.size, self.stride)
    return children, aux

  @classmethod
  def tree_unflatten(cls, aux, children):
    start, size = (c if c is not None else a for c, a in zip(children, aux[:2]))
    return cls(start, size, aux[2])

  @classmethod
  def from_slice(cls, s: slice, size: int) -> "Slice":
    """The ``Slice`` selecting what ``s`` selects from a dimension of ``size``."""
    start, stop, step = s.indices(size)
    if step < 1:
      raise ValueError(f"slice must have a step >= 1 (found: {step})")
    return cls(start, len(range(start, stop, step)), step)

  def as_static_slice(self) -> slice:
    """The Python slice of a ``Slice`` whose start and size are static."""
    start, size = operator.index(self.start), operator.index(self.size)
    return slice(start, start + (size - 1) * self.stride + 1 if size else start,
                 self.stride or None)


def ds(start, size=None, stride=None):
  """Make a slice from a start and a size (rather than a start and a stop).

  Read as the builtin ``slice`` reads its arguments: ``ds(None)`` is ``:``, ``ds(j)`` is
  ``:j``, ``ds(i, j)`` is ``i:i+j``, ``ds(i, j, stride)`` takes ``j`` elements from ``i`` by
  ``stride``. ``i`` may be a traced value where the consumer allows it (where ``x[i:i+j]``
  could not be written).

  Args:
    start: the start (or, alone, the size), an int or scalar integer array; None for ``:``.
    size: the number of elements.
    stride: optional step.

  Returns:
    A ``Slice`` (or a builtin ``slice`` for ``ds(None)``).

  Examples:
    >>> hlox.ds(1, 3)
    Slice(start=1, size=3, stride=1)
    >>> hlox.new_ref(jnp.arange(6))[hlox.ds(1, 3)]
    Array([1, 2, 3], dtype=int32)
  """
  if start is None and size is None:
    return slice(None, None, stride)
  if size is None:  # one bound: the size
    start, size = 0, start
  elif start is None:
    start = 0
  return Slice(start, size, 1 if stride is None else stride)


dslice = ds
