"""Named events (trace, lower, compile, cache misses) that tests and users can count."""
from __future__ import annotations

import collections
import logging
import threading
import time

from hlox.config import config

event_counts: collections.Counter = collections.Counter()
_listeners: list = []
_lock = threading.Lock()
logger = logging.getLogger("hlox")
# Traces and compiles (``config.log_compiles``), as JAX logs them from its dispatch module.
compile_logger = logging.getLogger("hlox.compile")
_level_handler = None


def _set_logging_level(name, value) -> None:
  """``logging_level``: the "hlox" logger's level, with a stderr handler of its own for
  any level but NOTSET (which leaves the logger to the application's configuration)."""
  global _level_handler
  if name != "logging_level":
    return
  if value == "NOTSET":
    if _level_handler is not None:
      logger.removeHandler(_level_handler)
      _level_handler = None
    logger.setLevel(logging.NOTSET)
    return
  if _level_handler is None:
    _level_handler = logging.StreamHandler()
    logger.addHandler(_level_handler)
  logger.setLevel(value)


config.add_watcher(_set_logging_level)
_set_logging_level("logging_level", config.logging_level)  # HLOX_/JAX_LOGGING_LEVEL


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


def log_compile(fmt: str, *args) -> None:
  """Log one line about a trace or compile: at WARNING with ``config.log_compiles`` (so it
  shows without any logging setup, as in JAX), at DEBUG otherwise."""
  level = logging.WARNING if config._values["log_compiles"] else logging.DEBUG
  if compile_logger.isEnabledFor(level):
    compile_logger.log(level, fmt, *args)


class log_elapsed_time:
  """Context manager: on exit, ``log_compile(fmt, name, seconds)`` (``fmt`` takes a name and
  a float, e.g. ``"Finished XLA compilation of %s in %.9f sec"``)."""

  __slots__ = ("fmt", "name", "start")

  def __init__(self, fmt: str, name: str):
    self.fmt = fmt
    self.name = name

  def __enter__(self):
    self.start = time.perf_counter()
    return self

  def __exit__(self, exc_type, *exc):
    if exc_type is None:  # a failed trace or compile says so itself
      log_compile(self.fmt, self.name, time.perf_counter() - self.start)
