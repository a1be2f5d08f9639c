"""Global switches: 64-bit mode, device count, caches, checks (NaN/inf), compile logs, disk cache,
NumPy promotion rules, matmul precision, transfer guards, tracing/execution bans.

Values come from ``HLOX_*`` environment variables at import time, or, where one is unset, from
JAX's ``JAX_*`` spelling of it (so a script written for JAX that sets ``JAX_ENABLE_X64=1``
gets the same numbers); they can be changed with ``hlox.config.update(name, value)`` (JAX's
``jax_`` spellings accepted). Options that take a
fixed set of values are validated with JAX's messages. Each option JAX exposes at top level
is here too, as a context manager and decorator with ``.value`` (``hlox.numpy_rank_promotion
('raise')``). Options that shape the runtime (``num_cpu_devices``) only take effect before
the first device use.
"""
from __future__ import annotations

import contextlib
import enum
import operator
import os
import sys
import threading

__all__ = ["config", "update", "enable_x64", "debug_nans", "debug_infs", "log_compiles",
           "enable_checks", "explain_cache_misses", "numpy_rank_promotion",
           "numpy_dtype_promotion", "default_matmul_precision", "default_device",
           "transfer_guard", "transfer_guard_host_to_device", "transfer_guard_device_to_device",
           "transfer_guard_device_to_host", "no_tracing", "no_execution", "debug_key_reuse",
           "softmax_custom_jvp", "legacy_prng_key", "enable_custom_prng",
           "allow_f16_reductions", "random_seed_offset", "NumpyDtypePromotion",
           "LegacyPrngKeyState", "ExplicitX64Mode", "explicit_x64_dtypes",
           "make_user_context"]


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


def _flag_bool(arg: str, text: str) -> bool:
  """The value of a command-line flag of an on/off option, in absl's spellings."""
  value = text.strip().lower()
  if value in ("1", "true", "t", "yes", "y", "on"):
    return True
  if value in ("0", "false", "f", "no", "n", "off"):
    return False
  raise ValueError(f"Non-boolean argument to boolean flag: {arg}")


# --- validation of the options that take a fixed set of values (JAX's messages) -----------

class NumpyDtypePromotion(enum.StrEnum):
  """``numpy_dtype_promotion``'s values (compare equal to the strings)."""
  STANDARD = "standard"
  STRICT = "strict"


class ExplicitX64Mode(enum.StrEnum):
  """``explicit_x64_dtypes``'s values: what asking for a 64-bit dtype (``dtype='float64'``)
  does while x64 is off. WARN (the default) truncates it to 32 bits with a UserWarning,
  ERROR raises ValueError, ALLOW truncates it silently (JAX's ALLOW keeps the 64-bit dtype;
  hlox holds no 64-bit values while x64 is off)."""
  WARN = "warn"
  ERROR = "error"
  ALLOW = "allow"


class LegacyPrngKeyState(enum.StrEnum):
  """``legacy_prng_key``'s values: what passing a raw key to ``hlox.random`` does."""
  ALLOW = "allow"
  WARN = "warn"
  ERROR = "error"


def _enum(values, optional=False):
  def check(value):
    if value is None and optional:
      return None
    if type(value) is not str or value not in values:
      raise ValueError(f"new enum value must be {'None or ' if optional else ''}in "
                       f"{list(values)}, got {value} of type {type(value)}.")
    return value
  return check


def _enum_class(cls):
  def check(value):
    if isinstance(value, str):
      return cls(value)  # ValueError: "'x' is not a valid NumpyDtypePromotion"
    raise TypeError(f"new enum value must be an instance of {cls}, got {value} of type "
                    f"{type(value)}.")
  return check


def _check_default_device(value):
  if value is None or value in ("cpu", "gpu", "tpu") or (
      hasattr(value, "platform") and hasattr(value, "id")):
    return value
  raise ValueError("hlox.default_device must be passed either a Device object (e.g. "
                   "`hlox.devices('cpu')[0]`) or a platform name string like 'cpu' or 'gpu', "
                   f"got: {value!r}")


_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_GUARDS = ("transfer_guard_host_to_device", "transfer_guard_device_to_device",
                    "transfer_guard_device_to_host")
MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    # lax.DotAlgorithmPreset names
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")

def _str_option(name, value, optional=False):
  if (value is None and optional) or isinstance(value, str):
    return value
  raise TypeError(f"jax_{name} must be a string{' or None' if optional else ''}, got "
                  f"{value!r}")


def _string_value(value):
  if not isinstance(value, str):
    raise TypeError(f"new string config value must be of type str, got {value} of type "
                    f"{type(value)}.")
  return value


def _int_option(name):
  def check(value):
    if isinstance(value, bool):
      raise TypeError(f"jax_{name} must be an int, got {value!r}")
    try:
      return operator.index(value)
    except TypeError:
      raise TypeError(f"jax_{name} must be an int, got {value!r}") from None
  return check


_validators = {
    "numpy_rank_promotion": _enum(("allow", "warn", "raise")),
    "numpy_dtype_promotion": _enum_class(NumpyDtypePromotion),
    "legacy_prng_key": _enum_class(LegacyPrngKeyState),
    "explicit_x64_dtypes": _enum_class(ExplicitX64Mode),
    "default_matmul_precision": _enum(MATMUL_PRECISIONS, optional=True),
    "default_device": _check_default_device,
    "transfer_guard": _enum(_TRANSFER_GUARD_LEVELS, optional=True),
    "array_garbage_collection_guard": _enum(("allow", "log", "fatal"), optional=True),
    "random_seed_offset": _int_option("random_seed_offset"),
    "cpu_collectives_implementation": _enum(("gloo", "mpi", "megascale"), optional=True),
    "logging_level": _enum(("NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
                           optional=True),
    "debug_log_modules": lambda v: _string_value(v),
    "platforms": lambda v: _str_option("platforms", v, optional=True),
    "platform_name": lambda v: _str_option("platform_name", v),
    **{name: _enum(_TRANSFER_GUARD_LEVELS, optional=True) for name in _TRANSFER_GUARDS},
}
# Options whose stored value is an enum member even at start-up.
_DERIVED = ("numpy_dtype_promotion", "legacy_prng_key", "explicit_x64_dtypes")

def _set_spelling(env: str) -> str:
  """``HLOX_X`` if it is set, else JAX's ``JAX_X`` if that is, else ``HLOX_X``."""
  if os.environ.get(env) in (None, ""):
    jax_env = "JAX_" + env[len("HLOX_"):]
    if os.environ.get(jax_env) not in (None, ""):
      return jax_env
  return env


class _Values(dict):
  """The options' global values (what ``update`` sets). Pickled by reference: a pickled
  jitted function that reads them (cloudpickle) reads the live options of the process it is
  loaded in."""

  def __reduce__(self):
    return (_current_values, ())


class _ScopedValues(_Values):
  """The type the global values take while some thread has a ``with`` scope open: a read
  gives the reading thread's scoped value where it has one (JAX's options are thread-local
  under their context managers). The hot paths and several modules hold the dict itself, so
  it stays the same object and only its type changes: while no scope is open anywhere, a
  read is a plain dict lookup and pays nothing for this."""

  def __getitem__(self, name):
    overrides = _thread_scopes.overrides
    if overrides is not None and name in overrides:
      return overrides[name]
    if name == "_jit_slow_path":
      return jit_slow_path_here[0]()
    return dict.__getitem__(self, name)

  def get(self, name, default=None):
    try:
      return self[name]
    except KeyError:
      return default


class _ThreadScopes(threading.local):
  """One thread's ``with`` scopes: ``overrides`` maps each option a scope of this thread
  sets to its value (None while the thread has none open); ``saved`` keeps, per option, the
  values the scopes replaced (the thread's own, or _NO_VALUE: none of its own), innermost
  last."""
  overrides: dict | None = None
  saved: dict | None = None


_thread_scopes = _ThreadScopes()
_scopes_lock = threading.Lock()
# How many threads have a scope open; while any has, the global values are _ScopedValues.
threads_with_scopes = [0]
# Bumped on every change of an option's value (global or in any thread's scope) and every
# switch of the caches' tables: per-thread summaries of the options (``hlox.cache``) are
# recomputed when it moved.
generation = [0]
# Set by ``hlox.cache``: whether this thread's calls must take jit's slow path (jit disabled
# or keys checked for reuse here, or the caches' tables hold entries made under other option
# values than this thread's).
jit_slow_path_here = [lambda: bool(config._get_global("_jit_slow_path"))]


def _bump_generation() -> None:
  with _scopes_lock:
    generation[0] += 1


def _current_values():
  return config._values


class Config:
  """Holds hlox's options; read them as attributes, change them with ``update``."""

  _options = {
      # name: (environment variable, parser, default)
      "enable_x64": ("HLOX_ENABLE_X64", _env_bool, False),
      # A 64-bit dtype asked for explicitly while x64 is off: 'warn' (and truncate), 'error'
      # or 'allow' (truncate silently); core/dtypes.check_user_dtype.
      "explicit_x64_dtypes": ("HLOX_EXPLICIT_X64_DTYPES", _env_str, "warn"),
      # -1: as many as XLA makes (one, or XLA_FLAGS=--xla_force_host_platform_device_count=N)
      "num_cpu_devices": ("HLOX_NUM_CPU_DEVICES", _env_int, -1),
      "enable_checks": ("HLOX_ENABLE_CHECKS", _env_bool, False),
      "cache_size": ("HLOX_CACHE_SIZE", _env_int, 4096),
      "explain_cache_misses": ("HLOX_EXPLAIN_CACHE_MISSES", _env_bool, False),
      # The calling convention ``export`` writes (hlox.export checks it is one it supports;
      # the default is the newest, export.maximum_supported_calling_convention_version).
      "export_calling_convention_version": ("HLOX_EXPORT_CALLING_CONVENTION_VERSION",
                                            _env_int, 10),
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
      # An integer added to every seed that ``random.key`` / ``PRNGKey`` is given (JAX's
      # option: the same program draws other numbers).
      "random_seed_offset": ("HLOX_RANDOM_SEED_OFFSET", _env_int, 0),
      # NumPy-style implicit rank promotion in ``hlox.numpy`` binary ops: 'allow', 'warn'
      # or 'raise' (numpy/util.promote_shapes); 'strict' dtype promotion allows no implicit
      # promotion between different strong dtypes (core/dtypes.py).
      "numpy_rank_promotion": ("HLOX_NUMPY_RANK_PROMOTION", _env_str, "allow"),
      "numpy_dtype_promotion": ("HLOX_NUMPY_DTYPE_PROMOTION", _env_str, "standard"),
      # Mesh axes of size 1 left out of types' splits (JAX's option of this name, off by
      # default; core/sharding_types.py).
      "remove_size_one_mesh_axis_from_type":
          ("HLOX_REMOVE_SIZE_ONE_MESH_AXIS_FROM_TYPE", _env_bool, False),
      # The precision ``dot_general`` and convolutions record when given none (lax/dot.py).
      "default_matmul_precision": ("HLOX_DEFAULT_MATMUL_PRECISION", _env_str, None),
      # Transfer guards (runtime/client.py): None means 'allow'. ``transfer_guard`` is
      # set-only, as in JAX: updating it sets the three directions.
      "transfer_guard_host_to_device": ("HLOX_TRANSFER_GUARD_HOST_TO_DEVICE", _env_str, None),
      "transfer_guard_device_to_device":
          ("HLOX_TRANSFER_GUARD_DEVICE_TO_DEVICE", _env_str, None),
      "transfer_guard_device_to_host": ("HLOX_TRANSFER_GUARD_DEVICE_TO_HOST", _env_str, None),
      "transfer_guard": ("HLOX_TRANSFER_GUARD", _env_str, None),
      # What happens to an Array freed by the cycle collector (runtime/gc_guard.py): None or
      # 'allow' nothing, 'log' an error on stderr, 'fatal' an abort (JAX's values).
      "array_garbage_collection_guard":
          ("HLOX_ARRAY_GARBAGE_COLLECTION_GUARD", _env_str, None),
      # A Device or a platform name; stored and validated (see default_device below).
      "default_device": ("HLOX_DEFAULT_DEVICE", _env_str, None),
      # Tracing (jit, make_jaxpr, ...) or executing a compiled program raises RuntimeError.
      "no_tracing": ("HLOX_NO_TRACING", _env_bool, False),
      "no_execution": ("HLOX_NO_EXECUTION", _env_bool, False),
      # Options JAX keeps that hlox stores for code that sets or reads them: the key reuse
      # checker, nn.softmax's custom JVP rule, raw keys' warnings, custom PRNGs and f16
      # reductions are not switched by them.
      "debug_key_reuse": ("HLOX_DEBUG_KEY_REUSE", _env_bool, False),
      "softmax_custom_jvp": ("HLOX_SOFTMAX_CUSTOM_JVP", _env_bool, False),
      "legacy_prng_key": ("HLOX_LEGACY_PRNG_KEY", _env_str, "allow"),
      "enable_custom_prng": ("HLOX_ENABLE_CUSTOM_PRNG", _env_bool, False),
      "allow_f16_reductions": ("HLOX_ALLOW_F16_REDUCTIONS", _env_bool, True),
      # Implementation switches of JAX's (its upgrade flags, partitioner and CPU dispatch
      # choices), stored for scripts that set them: hlox has one implementation of each
      # (Shardy partitioning, gloo collectives across processes, asynchronous dispatch).
      "use_shardy_partitioner": ("HLOX_USE_SHARDY_PARTITIONER", _env_bool, True),
      "cpu_collectives_implementation":
          ("HLOX_CPU_COLLECTIVES_IMPLEMENTATION", _env_str, "gloo"),
      "cpu_enable_async_dispatch": ("HLOX_CPU_ENABLE_ASYNC_DISPATCH", _env_bool, True),
      # Custom VJP bwd rules' cotangents are not checked against their inputs' shapes
      # (JAX's escape hatch for old code; custom_derivatives.py).
      "disable_bwd_checks": ("HLOX_DISABLE_BWD_CHECKS", _env_bool, False),
      "remat3": ("HLOX_REMAT3", _env_bool, False),
      # A differentiated checkpoint's backward pass passes its cotangents through the CSE
      # barrier unless this is set (then only the saved values are pinned; JAX's upgrade
      # flag, read by checkpoint.py).
      "remat_barrier_no_cotangents": ("HLOX_REMAT_BARRIER_NO_COTANGENTS", _env_bool, False),
      # What a checkpoint saves for the backward pass is logged at WARNING, not DEBUG.
      "log_checkpoint_residuals": ("HLOX_LOG_CHECKPOINT_RESIDUALS", _env_bool, False),
      # JAX's custom_vjp upgrade flag: a custom_vjp function is traced up front, and one
      # that closes over a traced value is an UnexpectedTracerError (custom_derivatives.py).
      "custom_vjp3": ("HLOX_CUSTOM_VJP3", _env_bool, False),
      "scan3": ("HLOX_SCAN3", _env_bool, False),
      "use_direct_linearize": ("HLOX_USE_DIRECT_LINEARIZE", _env_bool, True),
      "pprint_use_color": ("HLOX_PPRINT_USE_COLOR", _env_bool, True),
      # The platforms hlox may use, comma-separated in order of preference (JAX's
      # ``jax_platforms``; ``platform_name`` is its older one-name spelling). Read when the
      # first device is used: naming none that hlox has is a RuntimeError then.
      "platforms": ("HLOX_PLATFORMS", _env_str, None),
      "platform_name": ("HLOX_PLATFORM_NAME", _env_str, ""),
      # The level of the "hlox" logger (and a stderr handler for it unless it is NOTSET),
      # as JAX's ``jax_logging_level`` sets its loggers' (hlox/monitoring.py).
      "logging_level": ("HLOX_LOGGING_LEVEL", _env_str, "NOTSET"),
      # Comma-separated loggers that log everything (DEBUG) to stderr; JAX's module names
      # ("jax", "jax._src.dispatch", ...) name hlox's loggers that log the same lines
      # (hlox/monitoring.py).
      "debug_log_modules": ("HLOX_DEBUG_LOG_MODULES", _env_str, ""),
      # A lowering whose captured constants (closed-over arrays) hold at least this many
      # bytes warns (-1: never); a nonzero number of report frames lists where the largest
      # are used (interpreters/captured_constants.py; JAX's names and defaults).
      # JAX's transitional ``jax_use_simplified_jaxpr_constants``: concrete arrays of any
      # shape a traced function closes over are literals of the jaxpr, not constvars (the
      # trace that linearizes keeps device arrays as constvars: they are residuals).
      "use_simplified_jaxpr_constants": ("HLOX_USE_SIMPLIFIED_JAXPR_CONSTANTS", _env_bool,
                                         False),
      "captured_constants_warn_bytes": ("HLOX_CAPTURED_CONSTANTS_WARN_BYTES", _env_int,
                                        2 * 10 ** 9),
      "captured_constants_report_frames": ("HLOX_CAPTURED_CONSTANTS_REPORT_FRAMES", _env_int,
                                           0),
      # shard_map bodies (core/vma.py): operands of an operation that vary along fewer
      # manual axes than the others are ``pvary``-ed to match (off: JAX's error instead);
      # mesh axes of size 1 are left out of the varying axes (JAX's names and defaults).
      "auto_pcast": ("HLOX_AUTO_PCAST", _env_bool, True),
      "remove_size_one_mesh_axis_from_type":
          ("HLOX_REMOVE_SIZE_ONE_MESH_AXIS_FROM_TYPE", _env_bool, False),
  }

  def __init__(self):
    self._values = _Values()
    for name, (env, parse, default) in self._options.items():
      env = _set_spelling(env)
      value = parse(env, default)
      check = _validators.get(name)
      if check is not None and (value != default or name in _DERIVED):
        try:
          value = check(value)
        except (ValueError, TypeError):
          raise ValueError(f"Invalid value \"{value}\" for hlox option {env} (JAX flag "
                           f"jax_{name})") from None
      self._values[name] = value
    if self._values["transfer_guard"] is not None:
      for name in _TRANSFER_GUARDS:
        if os.environ.get(_set_spelling(self._options[name][0])) in (None, ""):
          self._values[name] = self._values["transfer_guard"]
    self._derive()
    self._watchers = []

  def _derive(self) -> None:
    # One flag for ``jit``'s cache-hit path to test: calls go the slow way while jit is
    # disabled or keys are checked for reuse (one dict read per call, whatever sets it).
    values = self._values
    dict.__setitem__(values, "_jit_slow_path", bool(dict.__getitem__(values, "disable_jit")
                                                    or dict.__getitem__(values,
                                                                        "debug_key_reuse")))

  def __getattr__(self, name):
    if name.startswith("_"):
      raise AttributeError(name)
    try:
      return self.__dict__["_values"][name]
    except KeyError:
      if name.startswith("jax_") and name[4:] in self.__dict__["_values"]:
        return self.__dict__["_values"][name[4:]]  # JAX's spelling (config.jax_enable_x64)
      raise AttributeError(f"hlox.config has no option {name!r}") from None

  def update(self, name: str, value) -> None:
    """Set option ``name`` (for example ``update('enable_x64', True)``) for every thread:
    its global value, which a ``with`` scope open in a thread overrides there (as JAX)."""
    given = name
    if name.startswith("jax_"):  # accept JAX's spelling of option names
      name = name[4:]
    if name not in self._values:
      raise AttributeError(f"Unrecognized config option: {given}")
    check = _validators.get(name)
    if check is not None:
      value = check(value)
    if name == "transfer_guard":  # set-only: it sets every direction
      for direction in _TRANSFER_GUARDS:
        self.update(direction, value)
    overrides = _thread_scopes.overrides
    if overrides is not None and name in overrides:
      # Under this thread's scope: the global value changes, the scope's stays in effect
      # here (other threads see the new value).
      dict.__setitem__(self._values, name, value)
      self._derive()
      _bump_generation()
      return
    self._set(name, value)

  def _set(self, name: str, value) -> None:
    values = self._values
    old = dict.__getitem__(values, name)
    dict.__setitem__(values, name, value)
    self._derive()
    try:
      self._notify(name, value)
    except Exception:
      dict.__setitem__(values, name, old)
      self._derive()
      self._notify_quietly(name, self._values[name])
      raise

  def _notify(self, name: str, value) -> None:
    """Tell the watchers that ``name`` is now ``value`` (in the calling thread)."""
    try:
      for watcher in self._watchers:
        watcher(name, value)
    finally:
      _bump_generation()

  def _notify_quietly(self, name: str, value) -> None:
    try:
      self._notify(name, value)
    except Exception:
      pass

  def _enter_scope(self, name: str, value) -> None:
    """Open a scope that sets ``name`` to ``value`` in the calling thread only."""
    scopes = _thread_scopes
    if scopes.overrides is None:
      with _scopes_lock:
        scopes.overrides, scopes.saved = {}, {}
        threads_with_scopes[0] += 1
        self._values.__class__ = _ScopedValues
    scopes.saved.setdefault(name, []).append(scopes.overrides.get(name, _NO_VALUE))
    scopes.overrides[name] = value
    try:
      self._notify(name, value)
    except BaseException:
      self._exit_scope(name, restore=False)
      self._notify_quietly(name, self._values[name])
      raise

  def _exit_scope(self, name: str, restore: bool = True) -> None:
    scopes = _thread_scopes
    saved = scopes.saved[name]
    previous = saved.pop()
    if not saved:
      del scopes.saved[name]
    if previous is _NO_VALUE:
      del scopes.overrides[name]
    else:
      scopes.overrides[name] = previous
    if not scopes.overrides:
      with _scopes_lock:
        scopes.overrides = scopes.saved = None
        threads_with_scopes[0] -= 1
        if not threads_with_scopes[0]:
          self._values.__class__ = _Values
    if restore:
      self._notify(name, self._values[name])

  def _get_global(self, name: str):
    """Option ``name``'s global value, whatever scopes the calling thread has open."""
    return dict.__getitem__(self._values, name)

  def _read(self, name: str):
    """The current value of option ``name`` (JAX's ``jax_`` spelling accepted), as JAX's
    ``config._read`` gives it."""
    key = name[4:] if name.startswith("jax_") else name
    if key not in self._values:
      raise AttributeError(f"Unrecognized config option: {name}")
    return self._values[key]

  def read(self, name: str):
    """The current value of option ``name`` (``read("jax_enable_x64")``; JAX's public
    ``config.read``)."""
    return self._read(name)

  def parse_flags_with_absl(self) -> None:
    """Set options from the command line's ``--jax_NAME=VALUE`` flags (``--jax_NAME`` and
    ``--nojax_NAME`` for on/off options), as JAX's does for the test programs that call it
    at start-up. Flags after a bare ``--``, and flags naming no option, are left alone."""
    args = list(sys.argv[1:])
    if "--" in args:
      args = args[:args.index("--")]
    for i, arg in enumerate(args):
      if not arg.startswith(("--jax_", "--nojax_")):
        continue
      flag, has_value, text = arg[2:].partition("=")
      negated = flag.startswith("no")
      name = flag[6:] if negated else flag[4:]
      if name not in self._options:
        continue
      parse = self._options[name][1]
      if parse is _env_bool:
        value = (not negated) if not has_value else _flag_bool(arg, text)
      elif negated:
        continue
      else:
        if not has_value:  # absl's ``--flag value`` form
          if i + 1 >= len(args):
            continue
          text = args[i + 1]
        value = {_env_int: int, _env_float: float}.get(parse, str)(text)
      self.update(name, value)

  def add_watcher(self, fn) -> None:
    """Call ``fn(name, value)`` after every ``update`` (used to drop stale caches)."""
    self._watchers.append(fn)

  @property
  def x64_enabled(self) -> bool:
    return self.enable_x64


config = Config()
update = config.update


_NO_VALUE = object()


class _OptionScope(contextlib.ContextDecorator):
  """Sets options inside a ``with`` block (or a decorated function's call); restores them in
  reverse order on the way out."""

  def __init__(self, name: str, new_val, *more: tuple):
    self._settings = []
    for key, value in ((name, new_val), *more):
      check = _validators.get(key)
      self._settings.append((key, check(value) if check is not None else value))
    self._saved = []  # a stack: the same object may decorate a function that recurses

  def __enter__(self):
    entered = []
    self._saved.append(entered)
    try:
      for key, value in self._settings:
        config._enter_scope(key, value)
        entered.append(key)
    except BaseException:
      self.__exit__()
      raise
    return self

  def __exit__(self, *exc):
    for key in reversed(self._saved.pop()):
      config._exit_scope(key)


class _BoolOption:
  """A boolean option as JAX exposes it at top level (``jax.debug_nans``):
  ``with hlox.debug_nans(True): ...`` or ``@hlox.debug_nans(False)`` sets it for a block or a
  function; ``hlox.debug_nans.value`` reads it."""

  def __init__(self, name: str):
    self._name = name
    self.__name__ = name
    self.__doc__ = f"Context manager and decorator for the ``{name}`` option (JAX's " \
                   f"``jax_{name}``); ``.value`` reads it."

  @property
  def value(self):
    return config._values[self._name]

  def __call__(self, new_val: bool = True) -> _OptionScope:
    return _OptionScope(self._name, bool(new_val))

  def get_global(self):
    """The option's global setting (what ``config.update`` set), whatever ``with`` scopes
    are open."""
    return config._get_global(self._name)

  def __repr__(self):
    return f"hlox.{self._name}(value={self.value!r})"


# ``with enable_x64():`` / ``enable_x64(False)`` (as a context manager or decorator);
# ``hlox.enable_x64.value`` is the current mode.
enable_x64 = _BoolOption("enable_x64")
enable_checks = _BoolOption("enable_checks")
explain_cache_misses = _BoolOption("explain_cache_misses")
debug_nans = _BoolOption("debug_nans")
debug_infs = _BoolOption("debug_infs")
log_compiles = _BoolOption("log_compiles")
check_tracer_leaks = _BoolOption("check_tracer_leaks")


eager_constant_folding = _BoolOption("eager_constant_folding")


def ensure_compile_time_eval():
  """Context manager: evaluate operations on concrete values right away, even while tracing.

  Inside the block, operations whose operands are all concrete (not traced) run eagerly even
  while ``jit`` traces, so their results are concrete values, usable in Python control flow,
  that enter the program as constants. Operations on traced values are traced as usual.

  Returns:
    A context manager (also usable as a decorator).

  Examples:
    >>> @hlox.jit
    ... def f(x):
    ...   with hlox.ensure_compile_time_eval():
    ...     y = jnp.sin(0.)
    ...     scale = 2. if y == 0 else 3.  # a concrete bool, though under jit
    ...   return x * scale
    >>> f(1.)
    Array(2., dtype=float32, weak_type=True)
  """
  return eager_constant_folding(True)


def checking_leaks():
  """Context manager: turn the tracer leak checker on inside the block.

  JAX's name for ``check_tracer_leaks(True)``: a tracer that outlives its transformation
  raises UnexpectedTracerError when the trace ends, naming who kept it.

  Returns:
    A context manager (also usable as a decorator).

  Examples:
    >>> leaked = []
    >>> with hlox.checking_leaks():
    ...   try:
    ...     hlox.jit(lambda x: leaked.append(x) or x)(1.)
    ...   except hlox.errors.UnexpectedTracerError:
    ...     print("leak found")
    leak found
  """
  return check_tracer_leaks(True)


class _Option(_BoolOption):
  """An option of any value as JAX exposes it at top level (``jax.default_prng_impl``):
  ``with hlox.default_prng_impl('rbg'): ...``; ``.value`` reads it. Bad values raise when
  the scope is made, with the allowed values."""

  def __call__(self, new_val=_NO_VALUE) -> _OptionScope:
    if new_val is _NO_VALUE:
      raise TypeError(f"Context manager for {self._name} config option requires an argument "
                      "representing the new value for the config option.")
    return _OptionScope(self._name, new_val)


default_prng_impl = _Option("default_prng_impl")
threefry_partitionable = _BoolOption("threefry_partitionable")
random_seed_offset = _Option("random_seed_offset")
numpy_rank_promotion = _Option("numpy_rank_promotion")
numpy_dtype_promotion = _Option("numpy_dtype_promotion")
explicit_x64_dtypes = _Option("explicit_x64_dtypes")
default_matmul_precision = _Option("default_matmul_precision")
default_device = _Option("default_device")
transfer_guard_host_to_device = _Option("transfer_guard_host_to_device")
transfer_guard_device_to_device = _Option("transfer_guard_device_to_device")
transfer_guard_device_to_host = _Option("transfer_guard_device_to_host")
legacy_prng_key = _Option("legacy_prng_key")
debug_key_reuse = _BoolOption("debug_key_reuse")
softmax_custom_jvp = _BoolOption("softmax_custom_jvp")
enable_custom_prng = _BoolOption("enable_custom_prng")
allow_f16_reductions = _BoolOption("allow_f16_reductions")
no_tracing = _BoolOption("no_tracing")
no_execution = _BoolOption("no_execution")
auto_pcast = _BoolOption("auto_pcast")
remove_size_one_mesh_axis_from_type = _BoolOption("remove_size_one_mesh_axis_from_type")

# The docstrings of the options JAX exposes at top level (help() and the docs show them).
enable_x64.__doc__ = """Option: enable 64-bit dtypes (float64, int64, complex128).

  Off by default (``HLOX_ENABLE_X64``/``JAX_ENABLE_X64``), so 64-bit requests give 32-bit arrays.
  Programs traced under one setting are not reused under the other.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.enable_x64(True):
    ...   print(jnp.arange(2.).dtype)
    float64
    >>> hlox.enable_x64.value
    False
  """
debug_nans.__doc__ = """Option: raise FloatingPointError when a computation produces a NaN.

  Every output of an eager op or jitted call is checked; when a jitted program produced the NaN it
  is re-run op by op to name the primitive at fault. Slows execution.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.debug_nans(True):
    ...   try:
    ...     jnp.log(jnp.array(-1.))
    ...   except FloatingPointError as e:
    ...     print("caught")
    Invalid nan value encountered ... Calling the de-optimized version.
    caught
  """
debug_infs.__doc__ = """Option: raise FloatingPointError when a computation produces an inf.

  Works as :data:`hlox.debug_nans`, for infinities.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.debug_infs(True):
    ...   try:
    ...     jnp.log(jnp.array(0.))
    ...   except FloatingPointError as e:
    ...     print("caught")
    Invalid inf value encountered ... Calling the de-optimized version.
    caught
  """
log_compiles.__doc__ = """Option: log each trace, lowering and compilation of jitted functions.

  Each is logged as a warning, with its duration; useful to find recompilations.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.log_compiles(True):
    ...   hlox.jit(lambda x: x + 1)(1.)
    Array(2., dtype=float32, weak_type=True)
  """
enable_checks.__doc__ = """Option: type-check every jaxpr after each transformation.

  ``check_jaxpr`` runs on the jaxprs that transformations and lowering produce, catching internal
  inconsistencies early (``HLOX_ENABLE_CHECKS=1``). Slows tracing.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.enable_checks(True):
    ...   hlox.jit(lambda x: x * 2)(3.)
    Array(6., dtype=float32, weak_type=True)
  """
explain_cache_misses.__doc__ = """Option: log why a jitted call missed the cache and traced again.

  The warning names the argument whose shape, dtype, static value or option changed.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.explain_cache_misses(True):
    ...   hlox.jit(lambda x: x * 2)(3.)
    Array(6., dtype=float32, weak_type=True)
  """
check_tracer_leaks.__doc__ = """Option: check that no tracer outlives its transformation.

  When a trace ends, the garbage collector's referrers are searched for its tracers; a leak raises
  UnexpectedTracerError naming who kept it. Slows tracing.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> leaked = []
    >>> with hlox.check_tracer_leaks(True):
    ...   try:
    ...     hlox.jit(lambda x: leaked.append(x) or x)(1.)
    ...   except hlox.errors.UnexpectedTracerError:
    ...     print("leak found")
    leak found
  """
default_prng_impl.__doc__ = """Option: the PRNG implementation that keys are made with by default.

  One of ``"threefry2x32"`` (the default), ``"rbg"``, ``"unsafe_rbg"`` and the other registered
  implementations; an unknown name raises ValueError.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the implementation's name; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.default_prng_impl("rbg"):
    ...   print(random.key(0).dtype)
    key<rbg>
  """
threefry_partitionable.__doc__ = """Option: the partitionable threefry scheme for keys.

  Used by ``split`` and random bits: True by default, as in JAX 0.10.2; False gives the bits of the
  older scheme. The random numbers for a key change with it.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.threefry_partitionable(False):
    ...   print(random.key_data(random.split(random.key(0))[0]))
    [4146024105  967050713]
  """
numpy_rank_promotion.__doc__ = """Option: what implicit rank promotion in broadcasting does.

  ``"allow"`` (the default) broadcasts silently, ``"warn"`` warns, ``"raise"`` raises ValueError
  when operands of different ranks are combined.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: ``"allow"``, ``"warn"`` or ``"raise"``; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.numpy_rank_promotion("raise"):
    ...   try:
    ...     jnp.ones(2) + jnp.ones((2, 2))
    ...   except ValueError:
    ...     print("refused")
    refused
  """
numpy_dtype_promotion.__doc__ = """Option: the dtype promotion rules of binary operations.

  ``"standard"`` (the default) follows JAX's promotion lattice; ``"strict"`` allows no implicit
  promotion between different dtypes (TypePromotionError).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: ``"standard"`` or ``"strict"``; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.numpy_dtype_promotion("strict"):
    ...   try:
    ...     jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.float32)
    ...   except hlox.dtypes.TypePromotionError:
    ...     print("refused")
    refused
  """
default_matmul_precision.__doc__ = """Option: the default precision of matmuls and convolutions.

  Applies where ``precision=None`` is given: ``"default"``/``"bfloat16"``, ``"high"``/
  ``"tensorfloat32"``, ``"highest"``/``"float32"``, or None (the backend's default).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: a precision name or None; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.default_matmul_precision("highest"):
    ...   print(hlox.default_matmul_precision.value)
    highest
  """
default_device.__doc__ = """Option: the device that values and computations go to by default.

  None (the default) means this process's first device; a platform name or a device may be given.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: a Device, a platform name, or None; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.default_device(hlox.devices()[0]):
    ...   print(jnp.ones(1).devices() == {hlox.devices()[0]})
    True
  """
transfer_guard_host_to_device.__doc__ = """Option: guard level of host-to-device transfers.

  One of ``"allow"``, ``"log"`` (warn on each implicit transfer), ``"disallow"`` (implicit transfers
  raise; explicit ``device_put``/``device_get`` are allowed), ``"log_explicit"`` or
  ``"disallow_explicit"`` (explicit ones too).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the guard level; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.transfer_guard_host_to_device("disallow"):
    ...   hlox.device_put(np.ones(2))
    Array([1., 1.], dtype=float32)
  """
transfer_guard_device_to_device.__doc__ = """Option: guard level of device-to-device transfers.

  One of ``"allow"``, ``"log"`` (warn on each implicit transfer), ``"disallow"`` (implicit transfers
  raise; explicit ``device_put``/``device_get`` are allowed), ``"log_explicit"`` or
  ``"disallow_explicit"`` (explicit ones too).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the guard level; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.transfer_guard_device_to_device("disallow"):
    ...   hlox.device_put(jnp.ones(2), hlox.devices()[0])
    Array([1., 1.], dtype=float32)
  """
transfer_guard_device_to_host.__doc__ = """Option: guard level of device-to-host transfers.

  One of ``"allow"``, ``"log"`` (warn on each implicit transfer), ``"disallow"`` (implicit transfers
  raise; explicit ``device_put``/``device_get`` are allowed), ``"log_explicit"`` or
  ``"disallow_explicit"`` (explicit ones too).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the guard level; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.transfer_guard_device_to_host("disallow"):
    ...   hlox.device_get(jnp.ones(2))
    array([1., 1.], dtype=float32)
  """
legacy_prng_key.__doc__ = """Option: what passing a raw (uint32) PRNG key does.

  When a raw key is passed to a ``hlox.random`` function: ``"allow"`` (the default), ``"warn"`` (a
  UserWarning) or ``"error"`` (ValueError): helps migrate code to typed keys (``random.key``).

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: ``"allow"``, ``"warn"`` or ``"error"``; required (TypeError without it).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.legacy_prng_key("error"):
    ...   try:
    ...     random.uniform(random.PRNGKey(0))
    ...   except ValueError:
    ...     print("refused")
    refused
  """
debug_key_reuse.__doc__ = """Option: check that no typed PRNG key is consumed twice.

  A sampler or ``split`` consumes its key; using a consumed key again raises KeyReuseError. Raw keys
  are not tracked.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.debug_key_reuse(True):
    ...   k = random.key(0)
    ...   x = random.uniform(k)
    ...   try:
    ...     y = random.uniform(k)
    ...   except Exception as e:
    ...     print(type(e).__name__)
    KeyReuseError
  """
softmax_custom_jvp.__doc__ = """Option: JAX's switch for ``nn.softmax``'s custom JVP rule.

  Stored for code that sets or reads it; hlox's ``softmax`` is the same either way.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.softmax_custom_jvp(True):
    ...   print(hlox.softmax_custom_jvp.value)
    True
  """
enable_custom_prng.__doc__ = """Option: JAX's switch for custom PRNG implementations.

  In hlox, custom implementations are always available; turning it on makes raw (uint32) keys
  passed to ``hlox.random`` functions warn (FutureWarning) that they are taken as threefry2x32
  keys.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.enable_custom_prng(True):
    ...   print(hlox.enable_custom_prng.value)
    True
  """
allow_f16_reductions.__doc__ = """Option: whether sums of float16/bfloat16 arrays are allowed.

  True by default; when False, ``lax.reduce_sum`` over a float16 or bfloat16 axis longer than 1
  raises ValueError.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.allow_f16_reductions(False):
    ...   try:
    ...     lax.reduce_sum(jnp.ones(4, jnp.float16), (0,))
    ...   except ValueError:
    ...     print("refused")
    refused
  """
no_tracing.__doc__ = """Option: forbid tracing of jitted functions.

  A jitted function that would trace raises RuntimeError; calls that hit the cache still run, so
  this checks that a hot loop never retraces.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> f = hlox.jit(lambda x: x * 3)
    >>> f(1.)
    Array(3., dtype=float32, weak_type=True)
    >>> with hlox.no_tracing(True):
    ...   f(2.)
    Array(6., dtype=float32, weak_type=True)
  """
no_execution.__doc__ = """Option: forbid running compiled programs.

  Running a compiled program raises RuntimeError; tracing, lowering and compiling still work, so
  ``.lower(...).compile()`` can be checked without running anything.

  Calling it gives a context manager that also works as a decorator; ``.value`` reads the
  current setting, and ``hlox.config.update`` sets it globally.

  Args:
    new_val: the value inside the block (default True).

  Returns:
    A context manager (also usable as a decorator) that sets the option inside its block.

  Examples:
    >>> with hlox.no_execution(True):
    ...   try:
    ...     hlox.jit(lambda x: x * 5)(1.)
    ...   except RuntimeError:
    ...     print("refused")
    refused
  """


# User contexts (``make_user_context``): option name -> default value. Their values key the
# caches as the traced options do (``hlox/__init__`` switches the caches when one changes).
USER_CONTEXTS: dict = {}


class UserConfig:
  """A value that ``jit``'s caches depend on, made by :func:`make_user_context`: calling it
  with a value gives a context manager (and decorator) that sets it inside a block;
  ``.value`` reads it; ``get_global``/``set_global`` read and set it outside any block. A
  function traced under one value is traced again under another."""

  def __init__(self, default_value=None):
    self._name = f"user_context_{len(USER_CONTEXTS)}"
    USER_CONTEXTS[self._name] = default_value
    config._values[self._name] = default_value

  @property
  def value(self):
    return config._values[self._name]

  def get_global(self):
    return config._get_global(self._name)

  def set_global(self, new_value) -> None:
    config.update(self._name, new_value)

  def __call__(self, new_value) -> _OptionScope:
    return _OptionScope(self._name, new_value)

  def __repr__(self):
    return f"UserConfig(value={self.value!r})"


def make_user_context(default_value=None) -> UserConfig:
  """Make a new context value that ``jit``'s caches depend on.

  ``ctx = make_user_context(default)`` gives a ``UserConfig``: ``with ctx(value): ...`` sets
  it inside a block (or a decorated function), ``ctx.value`` reads it, and
  ``ctx.get_global``/``ctx.set_global`` read and set it outside any block. A jitted function
  is traced (and compiled) again whenever the value differs from those it was traced under,
  so code traced under it may read ``ctx.value`` as a constant. Values must be hashable.

  Args:
    default_value: the value outside any block.

  Returns:
    A ``UserConfig``.

  Examples:
    >>> ctx = hlox.make_user_context(1)
    >>> f = hlox.jit(lambda x: x * ctx.value)
    >>> f(2.)
    Array(2., dtype=float32, weak_type=True)
    >>> with ctx(3):
    ...   f(2.)
    Array(6., dtype=float32, weak_type=True)
  """
  return UserConfig(default_value)


def transfer_guard(new_val: str) -> _OptionScope:
  """Context manager: set the guard level of every transfer direction inside the block.

  Applies to host-to-device, device-to-device and device-to-host transfers together (see
  ``transfer_guard_host_to_device`` and its siblings for one direction). Bad levels raise
  ValueError.

  Args:
    new_val: ``"allow"``, ``"log"`` (a warning per implicit transfer), ``"disallow"``
      (implicit transfers raise; explicit ``device_put``/``device_get`` are allowed),
      ``"log_explicit"`` or ``"disallow_explicit"`` (explicit ones too).

  Returns:
    A context manager (also usable as a decorator).

  Examples:
    >>> with hlox.transfer_guard("disallow"):
    ...   x = hlox.device_put(np.ones(2))  # explicit: allowed
    ...   try:
    ...     x + np.ones(2)  # an implicit host-to-device transfer
    ...   except Exception:
    ...     print("refused")
    refused
  """
  first, *rest = _TRANSFER_GUARDS
  # Every direction is scoped, and ``transfer_guard`` itself (what reading it says).
  return _OptionScope(first, new_val, *((name, new_val) for name in rest),
                      ("transfer_guard", new_val))


# The options that change what programs trace to: every cache is switched with them
# (``hlox.cache.switch_caches``, watched in ``hlox/__init__``), and jit's cache-miss
# explanations name them.
TRACED_OPTIONS = ("enable_x64", "explicit_x64_dtypes", "default_prng_impl",
                  "threefry_partitionable", "random_seed_offset", "check_static_indices",
                  "numpy_rank_promotion", "numpy_dtype_promotion", "default_matmul_precision",
                  "no_execution", "auto_pcast", "remove_size_one_mesh_axis_from_type",
                  "remat_barrier_no_cotangents", "custom_vjp3",
                  "use_simplified_jaxpr_constants")
