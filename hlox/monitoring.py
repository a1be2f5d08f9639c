"""Named events (trace, lower, compile, cache misses) that tests and users can count."""
from __future__ import annotations

import collections
import logging
import threading

event_counts: collections.Counter = collections.Counter()
_listeners: list = []
_lock = threading.Lock()
logger = logging.getLogger("hlox")


def record_event(event: str, **info) -> None:
  with _lock:
    event_counts[event] += 1
  for listener in _listeners:
    listener(event, info)


def register_event_listener(fn) -> None:
  """Call ``fn(name, info)`` on every event: 'jit_trace', 'lower', 'compile', ..."""
  _listeners.append(fn)


def unregister_event_listener(fn) -> None:
  _listeners.remove(fn)


def count(name: str) -> int:
  return event_counts[name]


class count_events:
  """Context manager: ``with count_events() as c: ...; c['compile']``."""

  def __enter__(self):
    self.counts = collections.Counter()
    self._fn = lambda name, info: self.counts.update([name])
    register_event_listener(self._fn)
    return self.counts

  def __exit__(self, *exc):
    unregister_event_listener(self._fn)
