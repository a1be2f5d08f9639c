"""``hlox.debug.breakpoint``: stop a running program and inspect its Python frames, as JAX's
``jax.debug.breakpoint`` does, eagerly and inside ``jit``, ``vmap`` and ``pmap``.

When ``breakpoint()`` is called, the Python stack above it is captured: each frame's file,
line, source and local variables (hlox's own frames left out). Traced values among the
locals cannot be shown while tracing, so they become the operands of a debug callback; when
the program runs and reaches that point, the callback puts their concrete values back into
the frames and starts a debugger on them (``backend``: the registered one with the highest
priority, by default the command-line ``cli`` debugger of ``cli_debugger.py``). Only local
variables are captured (not globals), as in JAX.
"""
from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any, Callable

from hlox import lax
from hlox import tree_util
from hlox.core.source_info import is_user_file
from hlox.core.tracer import Tracer
from hlox.debug.callbacks import callback as debug_callback, pure_callback
from hlox.runtime.array import Array, device_put

__all__ = ["DebuggerFrame", "breakpoint", "get_debugger", "register_debugger"]


class _CantFlatten:
  """Stands for a local variable that is not a pytree (shown as ``<cant_flatten>``)."""

  def __repr__(self):
    return "<cant_flatten>"


cant_flatten = _CantFlatten()


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
  """One Python frame as the debugger shows it: ``source`` is the lines of the enclosing
  function (or module) and ``offset`` the index of the current line in them (None when the
  source cannot be read)."""
  filename: str
  locals: dict
  globals: dict
  code_context: Any
  source: list
  lineno: int
  offset: int | None

  @classmethod
  def from_frameinfo(cls, info) -> "DebuggerFrame":
    try:
      lines, start = inspect.getsourcelines(info.frame)
      source = "".join(lines).split("\n")
      # ``start`` is 1-based, or 0 when the source is the whole module
      offset = info.lineno - max(start, 1)
      if offset >= len(source):  # e.g. code made by ``eval``
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, dict(info.frame.f_locals), {}, info.code_context, source,
               info.lineno, offset)


def _flatten_frames(frames):
  """``(traced values, rebuild)``: the Tracers among the frames' locals, and a function that
  rebuilds the frames with other values in their place. A local that is not a pytree is
  replaced by ``cant_flatten``."""
  traced, layouts = [], []
  for frame in frames:
    entries = []
    for name, value in frame.locals.items():
      try:
        leaves, tree = tree_util.tree_flatten(value)
      except Exception:  # noqa: BLE001 (any failure: the value is shown as not flattenable)
        entries.append((name, None, cant_flatten))
        continue
      if not any(isinstance(leaf, Tracer) for leaf in leaves):
        entries.append((name, None, value))
        continue
      positions = []
      for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tracer):
          positions.append((i, len(traced)))
          traced.append(leaf)
      entries.append((name, (tree, leaves, positions), value))
    layouts.append(entries)

  def rebuild(values):
    out = []
    for frame, entries in zip(frames, layouts):
      local_vars = {}
      for name, flat, value in entries:
        if flat is not None:
          tree, leaves, positions = flat
          leaves = list(leaves)
          for i, k in positions:
            leaves[i] = values[k]
          value = tree_util.tree_unflatten(tree, leaves)
        local_vars[name] = value
      out.append(dataclasses.replace(frame, locals=local_vars))
    return out

  return traced, rebuild


# --- debuggers ------------------------------------------------------------------------------

_debuggers: dict = {}  # name -> (priority, run(frames, thread_id, **kwargs))
_lock = threading.Lock()  # one debugger session at a time (callbacks may come from threads)


def register_debugger(name: str, debugger: Callable, priority: int) -> None:
  """Make ``debugger(frames, thread_id, **kwargs)`` available as ``backend=name``; without a
  ``backend``, the one of highest ``priority`` is used."""
  if name in _debuggers:
    raise ValueError(f'Debugger with name "{name}" already registered.')
  _debuggers[name] = (priority, debugger)


def get_debugger(backend: str | None = None) -> Callable:
  if backend is not None and backend in _debuggers:
    return _debuggers[backend][1]
  if not _debuggers:
    raise ValueError("No debuggers registered!")
  return max(_debuggers.values(), key=lambda entry: entry[0])[1]


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
  """Enter a debugger at this point of the program when it runs.

  ``backend`` picks a registered debugger (default: the highest priority, the command-line
  one). ``filter_frames`` leaves hlox's own frames out; ``num_frames`` limits how many frames
  above this call can be inspected. ``ordered=True`` keeps breakpoints and ordered prints in
  program order. ``token`` (a pytree of arrays; exclusive with ``ordered``) makes the
  breakpoint run once the token is computed: it is returned unchanged and must be used by
  the rest of the program, or the breakpoint is dropped with it. Other keywords go to the
  debugger (e.g. ``stdin``/``stdout`` of the command-line one). Returns ``token``.
  """
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  infos = inspect.stack()[1:]
  if filter_frames:
    infos = [info for info in infos if is_user_file(info.filename)]
  frames = [DebuggerFrame.from_frameinfo(info) for info in infos]
  del infos  # frames of the stack must not outlive this call
  if num_frames is not None:
    frames = frames[:num_frames]
  traced, rebuild = _flatten_frames(frames)

  def enter(*values):
    values = [v if isinstance(v, Array) else device_put(v) for v in values]
    thread_id = None
    if threading.current_thread() is not threading.main_thread():
      thread_id = threading.get_ident()
    debugger = get_debugger(backend)
    with _lock:
      debugger(rebuild(values), thread_id, **kwargs)

  if token is None:
    debug_callback(enter, *traced, ordered=ordered)
    return None

  def enter_then_pass(token_value, *values):
    enter(*values)
    return token_value

  token, traced = lax.stop_gradient((token, traced))
  return pure_callback(enter_then_pass, token, token, *traced)
