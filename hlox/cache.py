"""A small thread-safe LRU cache used by every cache in hlox (jit, eager, lowering)."""
from __future__ import annotations

import collections
import threading
import weakref

from hlox.config import config
from hlox.core.tracer import Tracer, trace_ctx

_all_caches: "weakref.WeakSet[LRUCache]" = weakref.WeakSet()


class LRUCache:
  """Maps keys to values, evicting the least recently used entry beyond ``maxsize``.

  ``maxsize=None`` follows ``config.cache_size``. Lookups take no lock (dict operations are
  atomic under the GIL); inserts and evictions do.
  """

  def __init__(self, maxsize: int | None = None):
    self._data = collections.OrderedDict()
    self._lock = threading.Lock()
    self._maxsize = maxsize
    _all_caches.add(self)

  @property
  def maxsize(self) -> int:
    return self._maxsize if self._maxsize is not None else config.cache_size

  def get(self, key, default=None):
    try:
      value = self._data[key]
    except KeyError:
      return default
    try:
      self._data.move_to_end(key)
    except KeyError:  # evicted by another thread in between
      pass
    return value

  def put(self, key, value) -> None:
    with self._lock:
      self._data[key] = value
      self._data.move_to_end(key)
      limit = self.maxsize
      while len(self._data) > limit:
        self._data.popitem(last=False)

  def clear(self) -> None:
    with self._lock:
      self._data.clear()

  def __len__(self):
    return len(self._data)

  def __contains__(self, key):
    return key in self._data


def clear_caches() -> None:
  """Empty every hlox cache (compiled executables, traced jaxprs, eager kernels)."""
  for cache in list(_all_caches):
    cache.clear()


_derived_cache = LRUCache()


def memoize_derived(key: tuple, make):
  """``make()`` once per ``key`` and named axes in scope: for the jaxprs that transformation
  rules derive from a call primitive's jaxpr (its JVP, partial evaluation, transpose,
  batched form). Returning the same jaxpr objects on every call lets the compile caches,
  keyed on them, hit when e.g. an eager ``grad`` of a jitted function runs again.

  ``make`` returns a tuple; results holding tracers of an enclosing transformation in one
  of its list entries (constants) are valid only there and are not remembered.
  """
  key = (*key, tuple(trace_ctx.axis_env))
  hit = _derived_cache.get(key)
  if hit is None:
    hit = make()
    if not any(isinstance(c, Tracer) for part in hit if isinstance(part, list) for c in part):
      _derived_cache.put(key, hit)
  return hit
