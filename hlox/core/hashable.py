"""Hashable stand-ins for the mutable values some primitive parameters carry.

Primitive parameters key caches, so they must hash; a NumPy array or a dict given as a
parameter (an FFI attribute, a composite's attribute) is wrapped in one of these: an
immutable copy that hashes and compares by value. The names and printed forms are JAX's
(``HashableArray(...)``, ``FrozenDict({...})``), which show in printed jaxprs.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["FrozenDict", "HashableArray"]


class HashableArray:
  """A read-only copy of a NumPy array, hashed and compared by shape, dtype and contents."""

  __slots__ = ("val",)

  def __init__(self, val):
    self.val = np.array(val, copy=True)
    self.val.setflags(write=False)

  def __hash__(self):
    return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

  def __eq__(self, other):
    return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype and np.array_equal(self.val, other.val))

  def __repr__(self):
    return f"HashableArray({self.val!r})"

  def __str__(self):
    return f"HashableArray({self.val})"


class FrozenDict(Mapping):
  """A read-only copy of a dict (its values must be hashable), hashed by its items."""

  __slots__ = ("_d",)

  def __init__(self, d: Mapping):
    self._d = dict(d.items())

  def __getitem__(self, key):
    return self._d[key]

  def __iter__(self):
    return iter(self._d)

  def __len__(self):
    return len(self._d)

  def __hash__(self):
    return hash(frozenset(self._d.items()))

  def __eq__(self, other):
    return isinstance(other, FrozenDict) and self._d == other._d

  def __repr__(self):
    return f"FrozenDict({self._d!r})"

  def __str__(self):
    return f"FrozenDict({self._d})"
