"""The user-facing host callbacks: ``pure_callback``, ``io_callback``, ``debug.callback`` and
``debug.print``/``debug.log``, written on the primitives of ``hlox.lax.callback``.

Each flattens its arguments (arrays become operands, other leaves such as strings stay on the
host side of the call), binds its primitive and rebuilds the declared result pytree. As in
JAX, the callback receives Arrays on the host's CPU device, eagerly and compiled alike (the
``debug.print`` formatter NumPy values), and a failure is logged before it propagates.
"""
from __future__ import annotations

import logging
import string

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import source_info
from hlox.core.dtypes import canonicalize_dtype
from hlox.core.tracer import Tracer
from hlox.lax.callback import (VMAP_METHODS, FlatCallback, debug_callback_p, debug_logger,
                               debug_print_p, io_callback_p, pure_callback_p, result_avals_of)
from hlox.runtime import spmd
from hlox.runtime.array import Array

__all__ = ["pure_callback", "io_callback", "callback", "print", "log", "effects_barrier"]

_ARRAY_LEAVES = (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex)


def _flatten_callback_args(name, fn, args, kwargs, returns, user_call: bool = True):
  """The operands of a callback call and the ``FlatCallback`` that rebuilds its arguments
  (for a ``user_call``, one that hands ``fn`` Arrays and logs its failure under ``name``)."""
  if not callable(fn):
    raise TypeError(f"{name}: the callback must be callable, got {type(fn).__name__}")
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  operands, statics = [], []
  for i, leaf in enumerate(leaves):
    if isinstance(leaf, (Tracer, Array)):
      operands.append(leaf)
    elif isinstance(leaf, _ARRAY_LEAVES):
      arr = np.asarray(leaf)
      operands.append(arr.astype(canonicalize_dtype(arr.dtype), copy=False))
    else:
      statics.append((i, leaf))
  return operands, FlatCallback(fn, in_tree, statics, returns, name if user_call else None)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Call a pure Python function on host values from inside traced code.

  ``callback(*args, **kwargs)`` runs on the host with the arguments as Arrays on the host's CPU
  device, eagerly or from inside ``jit``, ``vmap``, ``scan`` and other transformations; it must
  return values matching ``result_shape_dtypes`` (64-bit types only with x64 on). The function
  must be pure: the compiler may drop the call when its results are unused, or repeat it.
  Under ``vmap`` it is batched by ``vmap_method``: ``"sequential"`` (one call per example),
  ``"expand_dims"`` (one call, unbatched arguments given a leading axis of size 1),
  ``"broadcast_all"`` (unbatched arguments broadcast to the batch) or
  ``"legacy_vectorized"`` (JAX's old ``vectorized=True``: unbatched arguments passed as they
  are); with ``vmap_method=None`` vmapping raises NotImplementedError. It is not
  differentiable: wrap it in ``custom_jvp`` / ``custom_vjp``.

  Args:
    callback: the Python function to call; it receives and returns array-likes.
    result_shape_dtypes: a pytree of ``ShapeDtypeStruct``-like objects (with ``shape`` and
      ``dtype``) describing the results.
    *args: arguments passed to ``callback`` (pytrees of arrays).
    sharding: optional one-device sharding picking the device that runs the call in a
      program partitioned over a mesh (default: the mesh's first).
    vmap_method: how the call is batched under ``vmap`` (see above); an unknown name raises
      ValueError.
    **kwargs: keyword arguments passed to ``callback``.

  Returns:
    The callback's results as Arrays (tracers when traced), with the structure of
    ``result_shape_dtypes``.

  Examples:
    >>> def host_sin(x):
    ...   return np.sin(x)
    >>> f = lambda x: hlox.pure_callback(host_sin, hlox.ShapeDtypeStruct(x.shape, x.dtype), x,
    ...                                  vmap_method="broadcast_all")
    >>> hlox.jit(f)(jnp.array([0., 1.]))
    Array([0.      , 0.841471], dtype=float32)
    >>> hlox.vmap(f)(jnp.array([0., 1.]))
    Array([0.      , 0.841471], dtype=float32)
  """
  if vmap_method is not None and vmap_method not in VMAP_METHODS:
    raise ValueError(f"pure_callback: vmap_method must be None or one of {VMAP_METHODS}, "
                     f"got {vmap_method!r}")
  avals, out_tree = result_avals_of("pure_callback", result_shape_dtypes)
  operands, flat = _flatten_callback_args("pure_callback", callback, args, kwargs, True)
  outs = pure_callback_p.bind(*operands, callback=flat, result_avals=avals,
                              sharding=sharding, vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered: bool = False,
                **kwargs):
  """Call ``callback(*args, **kwargs)`` on host values (Arrays) for its side effects and its
  results (of the declared ``result_shape_dtypes``); never dropped by the compiler.
  ``ordered=True`` calls keep their program order (and cannot be vmapped). ``sharding`` (a
  one-device sharding) picks the device that runs the call in a program partitioned over a
  mesh (default: the mesh's first)."""
  avals, out_tree = result_avals_of("io_callback", result_shape_dtypes)
  operands, flat = _flatten_callback_args("io_callback", callback, args, kwargs, True)
  outs = io_callback_p.bind(*operands, callback=flat, result_avals=avals,
                            sharding=sharding, ordered=bool(ordered))
  return tree_util.tree_unflatten(out_tree, outs)


def callback(callback=None, *args, ordered: bool = False, partitioned: bool = False,
             **kwargs):
  """Call ``callback(*args, **kwargs)`` on host values (Arrays) for its side effect; returns
  None. Under ``vmap`` it runs once per example, under ``jvp``/``grad`` on the primal values.
  ``partitioned`` is accepted for JAX compatibility (one device only).

  Two-call form: ``callback(ordered=True)(fn, *args, **kwargs)`` takes the options first and
  returns the function that makes the call; its keywords then all go to ``fn``."""
  del partitioned
  def call(fn, *c_args, **c_kwargs):
    if not callable(fn):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(fn)}")
    operands, flat = _flatten_callback_args("debug.callback", fn, c_args, c_kwargs, False)
    debug_callback_p.bind(*operands, callback=flat, ordered=bool(ordered))
  if callback is not None:
    return call(callback, *args, **kwargs)
  if args or kwargs:
    raise TypeError("debug_callback received unexpected arguments in the two-call form: "
                    f"{args=} {kwargs=} (pass them in the second call)")
  return call


class _FormatChecker(string.Formatter):
  """``str.format``'s field resolution without formatting any value (the values are not
  known while tracing); arguments nobody refers to are an error, as in JAX."""

  def format_field(self, value, format_spec):
    return ""

  def check_unused_args(self, used_args, args, kwargs):
    unused = [a for i, a in enumerate(args) if i not in used_args]
    unused_kw = [k for k in kwargs if k not in used_args]
    if unused:
      raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
    if unused_kw:
      raise ValueError(f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. An "
                       "f-string passed as the format string formats too early: pass a plain "
                       "string.")


_format_checker = _FormatChecker()

# ``debug.log``'s messages go here (under the "hlox" logger, so ``logging_level`` applies).
logger = debug_logger


def print(fmt: str | None = None, *args, ordered: bool = False,  # noqa: A001
          partitioned: bool = False, skip_format_check: bool = False, **kwargs):
  """Print ``fmt.format(*args, **kwargs)`` with the values as they are when the program runs
  (on the host, with NumPy's print options at the time of this call), eagerly or inside
  ``jit``, ``vmap`` (once per example), ``grad`` (the primal values) and control flow.
  A format string without placeholders prints the values after it, separated by spaces.
  ``ordered=True`` keeps the program order among ordered callbacks.

  Two-call form: ``print(ordered=True)(fmt, *args, **kwargs)`` takes the options first; the
  second call's keywords are all formatting arguments."""
  return _print_or_log("print", fmt, args, kwargs, ordered, partitioned, skip_format_check,
                       None)


def log(fmt: str | None = None, *args, ordered: bool = False, partitioned: bool = False,
        skip_format_check: bool = False, **kwargs):
  """``debug.print``, but the message goes to the ``hlox.debug`` logger at INFO, as a record
  whose file and line are those of this call in the user's code (JAX's ``debug.log``).
  Handlers see the values as the program computes them, eagerly or under transformations."""
  info = source_info.current()
  file, line = (info.file, info.line) if info is not None and info.file else \
      ("(unknown file)", 0)
  record = logger.makeRecord(logger.name, logging.INFO, file, line, "", (), None)
  return _print_or_log("log", fmt, args, kwargs, ordered, partitioned, skip_format_check,
                       record)


def _print_or_log(name, fmt, args, kwargs, ordered, partitioned, skip_format_check, record):
  if fmt is None:
    if args or kwargs:
      raise TypeError(f"debug_{name} received unexpected arguments in the two-call form: "
                      f"{args=} {kwargs=} (pass them in the second call)")
    return lambda fmt, *a, **kw: _emit(name, fmt, a, kw, ordered, partitioned,
                                       skip_format_check, record)
  _emit(name, fmt, args, kwargs, ordered, partitioned, skip_format_check, record)
  return None


def _emit(name, fmt, args, kwargs, ordered, partitioned, skip_format_check, record):
  if not isinstance(fmt, str):
    raise TypeError(f"debug.{name}: the format string must be a str, got "
                    f"{type(fmt).__name__}")
  has_placeholders = any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))
  if has_placeholders and not skip_format_check:
    try:
      _format_checker.format(fmt, *args, **kwargs)
    except (IndexError, KeyError, ValueError, AttributeError, TypeError) as e:
      raise type(e)(f"debug.{name}: format string {fmt!r} does not match its arguments "
                    f"({len(args)} positional, keywords {sorted(kwargs)}): {e}") from None
  elif kwargs:
    raise ValueError(f"debug.{name}: format string {fmt!r} has no placeholders for keyword "
                     f"arguments {sorted(kwargs)}")
  operands, flat = _flatten_callback_args(f"debug.{name}", print, args, kwargs, False,
                                          user_call=False)
  debug_print_p.bind(*operands, fmt=fmt, has_placeholders=has_placeholders,
                     in_tree=flat.in_tree, logging_record=record,
                     np_printoptions=tuple(np.get_printoptions().items()),
                     ordered=bool(ordered), partitioned=bool(partitioned),
                     static_args=flat.statics)


def effects_barrier() -> None:
  """Wait until every callback of the programs launched so far has run.

  Programs on one device run their callbacks before returning; a pmapped program may still be
  running callbacks on its replicas' threads, and this waits for them. Useful before reading
  state that ``io_callback`` or ``debug.callback`` functions write.

  Returns:
    None.

  Examples:
    >>> hlox.effects_barrier()
  """
  spmd.wait_in_flight()
