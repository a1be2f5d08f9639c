"""Events: hlox's own (trace, lower, compile, cache misses), which tests count, and JAX's
monitoring API (``jax.monitoring``: listeners of events, durations, time spans and scalars)."""
from __future__ import annotations

import collections
import logging
import threading
import time

from hlox.config import config

event_counts: collections.Counter = collections.Counter()
_test_listeners: list = []  # count_events blocks
_lock = threading.Lock()
logger = logging.getLogger("hlox")
# Traces and compiles (``config.log_compiles``): the lines timing each step (JAX logs them
# from its dispatch module) and the "Compiling ..." lines (from JAX's pxla module).
compile_logger = logging.getLogger("hlox.compile")
timing_logger = logging.getLogger("hlox.compile.timing")
programs_logger = logging.getLogger("hlox.compile.programs")

# JAX's logger names that ``debug_log_modules`` accepts for hlox's loggers of the same lines.
JAX_LOGGER_NAMES = {
    "jax": "hlox",
    "jax._src.dispatch": "hlox.compile.timing",
    "jax._src.interpreters.pxla": "hlox.compile.programs",
    "jax._src.ad_checkpoint": "hlox.checkpoint",
}

# Lines on stderr look like JAX's: ``DEBUG:2025-01-01 12:00:00,000:hlox.compile.timing:42: ...``
formatter = logging.Formatter("{levelname}:{asctime}:{name}:{lineno}: {message}", style="{")
_level_handler = None


def _set_logging_level(value) -> None:
  """``logging_level``: the "hlox" logger's level, with a stderr handler of its own for
  any level but NOTSET (which leaves the logger to the application's configuration); None
  takes the handler away and leaves the level as it is (JAX's meanings)."""
  global _level_handler
  if value is None or value == "NOTSET":
    if _level_handler is not None:
      logger.removeHandler(_level_handler)
      _level_handler = None
    if value == "NOTSET":
      logger.setLevel(logging.NOTSET)
    return
  if _level_handler is None:
    _level_handler = logging.StreamHandler()
    _level_handler.setFormatter(formatter)
    logger.addHandler(_level_handler)
  logger.setLevel(value)


class _NotShownYet(logging.Filter):
  """Passes a record unless the ``logging_level`` handler already shows it (no line twice)."""

  def filter(self, record):
    return _level_handler is None or logger.getEffectiveLevel() > record.levelno


_debug_handler = logging.StreamHandler()
_debug_handler.setLevel(logging.DEBUG)
_debug_handler.setFormatter(formatter)
_debug_handler.addFilter(_NotShownYet())
_debug_loggers: list = []  # (logger, level before, handlers added), to undo


class _ToJaxLogger(logging.Handler):
  """Hands hlox's records to the handlers of the JAX logger they were asked for by (``jax``,
  ``jax._src.dispatch``) and of its ``jax`` parents, where a program written for JAX listens
  for them. The root logger is left out: the record reaches it through hlox's loggers."""

  def __init__(self, name: str):
    super().__init__(logging.DEBUG)
    self.target = logging.getLogger(name)

  def emit(self, record):
    named = self.target
    while named is not None and named is not logging.root:
      for handler in named.handlers:
        if record.levelno >= handler.level:
          handler.handle(record)
      if not named.propagate:
        break
      named = named.parent


def _set_debug_log_modules(value: str) -> None:
  """``debug_log_modules``: the named loggers (comma-separated) log at DEBUG to stderr; a
  JAX logger name stands for hlox's logger of the same lines, whose records also go to the
  handlers of that JAX logger."""
  for named, before, added in _debug_loggers:
    for handler in added:
      named.removeHandler(handler)
    named.setLevel(before)
  _debug_loggers.clear()
  for name in filter(None, (n.strip() for n in value.split(","))):
    named = logging.getLogger(JAX_LOGGER_NAMES.get(name, name))
    added = [_debug_handler]
    if name in JAX_LOGGER_NAMES:
      added.append(_ToJaxLogger(name))
    _debug_loggers.append((named, named.level, added))
    for handler in added:
      named.addHandler(handler)
    named.setLevel(logging.DEBUG)


def _on_update(name, value) -> None:
  if name == "logging_level":
    _set_logging_level(value)
  elif name == "debug_log_modules":
    _set_debug_log_modules(value)


config.add_watcher(_on_update)
_set_logging_level(config.logging_level)  # HLOX_/JAX_LOGGING_LEVEL
_set_debug_log_modules(config.debug_log_modules)  # HLOX_/JAX_DEBUG_LOG_MODULES


# --- hlox's own events, for tests ------------------------------------------------------
#
# Traces, lowerings and compiles say so by name ('jit_trace', 'lower', 'compile', ...), as
# JAX's ``test_event``s do: counted in ``event_counts`` and seen by ``count_events``. They do
# not reach the listeners of JAX's monitoring API below, which see JAX's own event names.

def test_event(event: str, **info) -> None:
  """Count one of hlox's internal events (and tell ``count_events`` blocks)."""
  with _lock:
    event_counts[event] += 1
  for listener in _test_listeners:
    listener(event, info)


def count(name: str) -> int:
  """How many times the event ``name`` happened in this process (internal events and
  ``record_event`` ones)."""
  return event_counts[name]


class count_events:
  """Context manager: ``with count_events() as c: ...; c['compile']``."""

  def __enter__(self):
    self.counts = collections.Counter()
    self._fn = lambda name, info: self.counts.update([name])
    _test_listeners.append(self._fn)
    return self.counts

  def __exit__(self, *exc):
    _test_listeners.remove(self._fn)


# --- JAX's monitoring API (``jax.monitoring``) ---------------------------------------------
#
# Four kinds of records, each with its own listeners: events (``callback(event, **kw)``),
# durations (``callback(event, seconds, **kw)``), time spans (``callback(event, start, end,
# **kw)``) and scalars (``callback(event, value, **kw)``). hlox records JAX's names where it
# does what JAX does: '/jax/core/compile/{jaxpr_trace,jaxpr_to_mlir_module,backend_compile}
# _duration' around tracing, lowering and compiling a jitted function, and the persistent
# cache's '/jax/compilation_cache/...' events.

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_event_listeners: list = []
_duration_listeners: list = []
_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs) -> None:
  """Record that ``event`` happened: every event listener is called with
  ``(event, **kwargs)`` (pass the same keywords, in the same order, for one event)."""
  test_event(event, **kwargs)
  for callback in tuple(_event_listeners):
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
  """Record that ``event`` took ``duration`` seconds (to the duration listeners)."""
  for callback in tuple(_duration_listeners):
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
  """Record that ``event`` ran from ``start_time`` to ``end_time`` (seconds since the
  epoch, as ``time.time()``), to the time-span listeners."""
  for callback in tuple(_time_span_listeners):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
  """Record a number for ``event`` (to the scalar listeners)."""
  for callback in tuple(_scalar_listeners):
    callback(event, value, **kwargs)


def register_event_listener(callback) -> None:
  """Call ``callback(event, **kwargs)`` on every ``record_event``."""
  _event_listeners.append(callback)


def register_event_duration_secs_listener(callback) -> None:
  """Call ``callback(event, duration_secs, **kwargs)`` on every
  ``record_event_duration_secs``."""
  _duration_listeners.append(callback)


def register_event_time_span_listener(callback) -> None:
  """Call ``callback(event, start_time, end_time, **kwargs)`` on every
  ``record_event_time_span``."""
  _time_span_listeners.append(callback)


def register_scalar_listener(callback) -> None:
  """Call ``callback(event, value, **kwargs)`` on every ``record_scalar``."""
  _scalar_listeners.append(callback)


def _unregister(listeners: list, callback, kind: str) -> None:
  # An AssertionError for a callback that was never registered, as JAX's.
  assert callback in listeners, f"{callback!r} is not a registered {kind} listener"
  listeners.remove(callback)


def unregister_event_listener(callback) -> None:
  """Remove an event listener (``AssertionError`` if it is not registered)."""
  _unregister(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback) -> None:
  """Remove an event duration listener (``AssertionError`` if it is not registered)."""
  _unregister(_duration_listeners, callback, "event duration")


def unregister_event_time_span_listener(callback) -> None:
  """Remove a time-span listener (``AssertionError`` if it is not registered)."""
  _unregister(_time_span_listeners, callback, "time span")


def unregister_scalar_listener(callback) -> None:
  """Remove a scalar listener (``AssertionError`` if it is not registered)."""
  _unregister(_scalar_listeners, callback, "scalar")


def get_event_listeners() -> list:
  """A copy of the event listeners."""
  return list(_event_listeners)


def get_event_duration_listeners() -> list:
  """A copy of the event duration listeners."""
  return list(_duration_listeners)


def get_event_time_span_listeners() -> list:
  """A copy of the time-span listeners."""
  return list(_time_span_listeners)


def get_scalar_listeners() -> list:
  """A copy of the scalar listeners."""
  return list(_scalar_listeners)


def clear_event_listeners() -> None:
  """Remove every listener of the four kinds."""
  for listeners in (_event_listeners, _duration_listeners, _time_span_listeners,
                    _scalar_listeners):
    listeners.clear()


def log_compile(fmt: str, *args, to: logging.Logger = programs_logger) -> None:
  """Log one line about a trace or compile (to ``programs_logger``, or ``to``): at WARNING
  with ``config.log_compiles`` (so it shows without any logging setup, as in JAX), at DEBUG
  otherwise."""
  level = logging.WARNING if config._values["log_compiles"] else logging.DEBUG
  if to.isEnabledFor(level):
    to.log(level, fmt, *args, stacklevel=2)


class log_elapsed_time:
  """Context manager: on exit, ``log_compile(fmt, name, seconds)`` (``fmt`` takes a name and
  a float, e.g. ``"Finished XLA compilation of %s in %.9f sec"``). With ``event`` (one of
  the ``/jax/core/compile/...`` names), also JAX's records of it: the start time as a scalar
  on entry, the duration and the time span on exit, each with ``fun_name=name``."""

  __slots__ = ("fmt", "name", "event", "start", "wall_start")

  def __init__(self, fmt: str, name: str, event: str | None = None):
    self.fmt = fmt
    self.name = name
    self.event = event

  def __enter__(self):
    self.start = time.perf_counter()
    if self.event is not None:
      self.wall_start = time.time()
      record_scalar(self.event, self.wall_start, fun_name=self.name)
    return self

  def __exit__(self, exc_type, *exc):
    if exc_type is None:  # a failed trace or compile says so itself
      elapsed = time.perf_counter() - self.start
      log_compile(self.fmt, self.name, elapsed, to=timing_logger)
      if self.event is not None:
        record_event_duration_secs(self.event, elapsed, fun_name=self.name)
        record_event_time_span(self.event, self.wall_start, self.wall_start + elapsed,
                               fun_name=self.name)
