"""Global switches: 64-bit mode, device count, caches, checks (NaN/inf), compile logs, disk cache.

Values come from ``HLOX_*`` environment variables at import time and can be changed with
``hlox.config.update(name, value)``. Options that shape the runtime (``num_cpu_devices``)
only take effect before the first device use.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["config", "update", "enable_x64", "debug_nans", "debug_infs", "log_compiles"]


def _env_bool(name: str, default: bool) -> bool:
  value = os.environ.get(name)
  if value is None:
    return default
  return value.strip().lower() in ("1", "true", "yes", "on")


def _env_int(name: str, default: int) -> int:
  value = os.environ.get(name)
  return default if value in (None, "") else int(value)


def _env_float(name: str, default: float) -> float:
  value = os.environ.get(name)
  return default if value in (None, "") else float(value)


def _env_str(name: str, default):
  value = os.environ.get(name)
  return default if value in (None, "") else value


class Config:
  """Holds hlox's options; read them as attributes, change them with ``update``."""

  _options = {
      # name: (environment variable, parser, default)
      "enable_x64": ("HLOX_ENABLE_X64", _env_bool, False),
      "num_cpu_devices": ("HLOX_NUM_CPU_DEVICES", _env_int, 1),
      "enable_checks": ("HLOX_ENABLE_CHECKS", _env_bool, False),
      "cache_size": ("HLOX_CACHE_SIZE", _env_int, 4096),
      "explain_cache_misses": ("HLOX_EXPLAIN_CACHE_MISSES", _env_bool, False),
      "disable_jit": ("HLOX_DISABLE_JIT", _env_bool, False),
      # The tracer leak checker (core/leak_checker.py): after each public entry point, a
      # trace that has finished but is still alive (a tracer of it was kept) is an error.
      "check_tracer_leaks": ("HLOX_CHECK_TRACER_LEAKS", _env_bool, False),
      # Operations on values that are not traced run at trace time even inside jit (set by
      # ``hlox.ensure_compile_time_eval()``; JAX's option of the same name).
      "eager_constant_folding": ("HLOX_EAGER_CONSTANT_FOLDING", _env_bool, False),
      # Static integer indices out of bounds raise IndexError in ``x[i]`` (JAX's option; off
      # by default, as JAX, where they are clamped like traced ones).
      "check_static_indices": ("HLOX_CHECK_STATIC_INDICES", _env_bool, False),
      # 'auto' | 'off' | 'tracebackhide' | 'quiet_remove_frames' | 'remove_frames' (JAX's
      # values): how much of hlox's own frames errors show (core/traceback_util.py).
      "traceback_filtering": ("HLOX_TRACEBACK_FILTERING", _env_str, "auto"),
      # NaN (inf) checks on the outputs of every eager primitive and jitted call; a jitted
      # call that produced one is re-run equation by equation to name the culprit.
      "debug_nans": ("HLOX_DEBUG_NANS", _env_bool, False),
      "debug_infs": ("HLOX_DEBUG_INFS", _env_bool, False),
      # Traces and XLA compiles logged at WARNING (at DEBUG otherwise) to "hlox.compile".
      "log_compiles": ("HLOX_LOG_COMPILES", _env_bool, False),
      # The persistent compilation cache (runtime/compilation_cache.py); JAX's names and
      # defaults: off without a directory, entries that compiled in under a second are not
      # written, max size in bytes (-1: unbounded, least recently used evicted beyond it).
      "compilation_cache_dir": ("HLOX_COMPILATION_CACHE_DIR", _env_str, None),
      "enable_compilation_cache": ("HLOX_ENABLE_COMPILATION_CACHE", _env_bool, True),
      "persistent_cache_min_compile_time_secs":
          ("HLOX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", _env_float, 1.0),
      "persistent_cache_min_entry_size_bytes":
          ("HLOX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", _env_int, 0),
      "compilation_cache_max_size": ("HLOX_COMPILATION_CACHE_MAX_SIZE", _env_int, -1),
      # The PRNG implementation of keys made without ``impl=`` and of raw keys (JAX's names:
      # 'threefry2x32', 'rbg', 'unsafe_rbg'), and threefry's partitionable scheme for
      # split and random bits (JAX 0.10.2's default, True; False gives the original bits).
      "default_prng_impl": ("HLOX_DEFAULT_PRNG_IMPL", _env_str, "threefry2x32"),
      "threefry_partitionable": ("HLOX_THREEFRY_PARTITIONABLE", _env_bool, True),
  }

  def __init__(self):
    self._values = {}
    for name, (env, parse, default) in self._options.items():
      self._values[name] = parse(env, default)
    self._watchers = []

  def __getattr__(self, name):
    if name.startswith("_"):
      raise AttributeError(name)
    try:
      return self.__dict__["_values"][name]
    except KeyError:
      raise AttributeError(f"hlox.config has no option {name!r}") from None

  def update(self, name: str, value) -> None:
    """Set option ``name`` (for example ``update('enable_x64', True)``)."""
    if name.startswith("jax_"):  # accept JAX's spelling of option names
      name = name[4:]
    if name not in self._values:
      raise ValueError(f"hlox.config has no option {name!r}; options: {sorted(self._values)}")
    old = self._values[name]
    self._values[name] = value
    try:
      for watcher in self._watchers:
        watcher(name, value)
    except Exception:
      self._values[name] = old
      raise

  def add_watcher(self, fn) -> None:
    """Call ``fn(name, value)`` after every ``update`` (used to drop stale caches)."""
    self._watchers.append(fn)

  @property
  def x64_enabled(self) -> bool:
    return self.enable_x64


config = Config()
update = config.update


class enable_x64:
  """Context manager that turns 64-bit mode on (or off) inside its block."""

  def __init__(self, new_val: bool = True):
    self.new_val = new_val

  def __enter__(self):
    self._prev = config.enable_x64
    config.update("enable_x64", self.new_val)
    return self

  def __exit__(self, *exc):
    config.update("enable_x64", self._prev)


class _OptionScope(contextlib.ContextDecorator):
  """Sets an option inside a ``with`` block (or a decorated function's call)."""

  def __init__(self, name: str, new_val: bool):
    self._name = name
    self._new_val = new_val
    self._saved = []  # a stack: the same object may decorate a function that recurses

  def __enter__(self):
    self._saved.append(config._values[self._name])
    config.update(self._name, self._new_val)
    return self

  def __exit__(self, *exc):
    config.update(self._name, self._saved.pop())


class _BoolOption:
  """A boolean option as JAX exposes it at top level (``jax.debug_nans``):
  ``with hlox.debug_nans(True): ...`` or ``@hlox.debug_nans(False)`` sets it for a block or a
  function; ``hlox.debug_nans.value`` reads it."""

  def __init__(self, name: str):
    self._name = name

  @property
  def value(self) -> bool:
    return config._values[self._name]

  def __call__(self, new_val: bool = True) -> _OptionScope:
    return _OptionScope(self._name, bool(new_val))

  def __repr__(self):
    return f"hlox.{self._name}(value={self.value})"


debug_nans = _BoolOption("debug_nans")
debug_infs = _BoolOption("debug_infs")
log_compiles = _BoolOption("log_compiles")
check_tracer_leaks = _BoolOption("check_tracer_leaks")


eager_constant_folding = _BoolOption("eager_constant_folding")


def ensure_compile_time_eval():
  """``with hlox.ensure_compile_time_eval(): ...``: inside the block, operations whose
  operands are all concrete (not traced) are evaluated right away, even while ``jit`` traces,
  so their results are concrete values (usable in Python control flow) that enter the
  program as constants. Operations on traced values are traced as usual."""
  return eager_constant_folding(True)


def checking_leaks():
  """``with hlox.checking_leaks(): ...`` turns the tracer leak checker on inside the block
  (JAX's name for ``check_tracer_leaks(True)``)."""
  return check_tracer_leaks(True)


class _Option(_BoolOption):
  """An option of any value as JAX exposes it at top level (``jax.default_prng_impl``):
  ``with hlox.default_prng_impl('rbg'): ...``; ``.value`` reads it."""

  def __call__(self, new_val) -> _OptionScope:
    return _OptionScope(self._name, new_val)


default_prng_impl = _Option("default_prng_impl")
threefry_partitionable = _BoolOption("threefry_partitionable")
