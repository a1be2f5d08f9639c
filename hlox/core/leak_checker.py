"""The opt-in tracer leak checker (``config.check_tracer_leaks``, ``hlox.checking_leaks()``).

A trace that has finished should be garbage: once its scope ends nothing but its own tracers
refers to it, and nothing should refer to those. A tracer kept somewhere (appended to a global
list, stored on an object, closed over by a function kept alive) keeps its trace alive too.
With the option on, every trace is noted when it is invalidated (``Trace.invalidate``), and
when the public entry point that ran it returns (``traceback_util.api_boundary``) the garbage
collector is run and each noted trace that is still alive is reported, with the tracers that
hold it and, for each, the chain of objects that keeps it alive, as JAX's checker does.

Off (the default), nothing is noted and entry points only test an empty list.
"""
from __future__ import annotations

import gc
import sys
import types
import weakref

from hlox.errors import UnexpectedTracerError

# Weak references to the traces invalidated since the last check (while the option is on).
pending: list = []


def note_finished(trace) -> None:
  """Remember ``trace`` (just invalidated) for the next check."""
  pending.append(weakref.ref(trace))


def discard_pending() -> None:
  """Forget the noted traces (an entry point raised: its frames, held by the traceback,
  still refer to its traces legitimately)."""
  pending.clear()


def check_pending() -> None:
  """Raise ``UnexpectedTracerError`` naming the first noted trace that is still alive."""
  refs = list(pending)
  pending.clear()
  # A finished trace is usually freed by reference counting, or else sits in a cycle made
  # during the call, in the young generations; a full collection only when one survives.
  if any(ref() is not None for ref in refs):
    gc.collect(1)
    if any(ref() is not None for ref in refs):
      gc.collect()
  for ref in refs:
    trace = ref()
    if trace is not None:
      message = _leak_message(trace)
      del trace
      raise UnexpectedTracerError(message)


def _leak_message(trace) -> str:
  here = sys._getframe()
  # The objects alive before the check: the referrer chains must not wander into the
  # lists and iterators the check itself makes.
  before = {id(o) for o in gc.get_objects()}
  tracers = [r for r in gc.get_referrers(trace)
             if getattr(r, "_trace", None) is trace and r is not here]
  # The trace named by its kind (JAX's class name for it), then the function it traced.
  what = getattr(trace, "debug_info", "")
  where = f" (tracing {what})" if isinstance(what, str) and what else ""
  lines = [f"Leaked trace {trace.kind}{where}. Leaked tracer(s):", ""]
  if not tracers:
    kinds = sorted({type(r).__name__ for r in gc.get_referrers(trace) if r is not here})
    lines.append(f"(no tracer of it is alive; it is referred to by objects of type "
                 f"{', '.join(kinds) or 'unknown'})")
  for t in tracers[:5]:
    src = getattr(t, "_src", None)
    lines.append(f"This {type(t).__name__} with object id {id(t)} was created on line:")
    lines.append(f"  {src if src else '(unknown: this tracer does not record its line)'}")
    lines.append(why_alive(t, before))
    lines.append("")
  lines.append("A traced value was kept after the transformation that made it had finished "
               "(in a global, a closure or an attribute). Return it from the function "
               "instead, or pass it in as an argument.")
  return "\n".join(lines)


def _name(x) -> str:
  return f"<{type(x).__name__} {id(x)}>"


def _edge(parent, child) -> str:
  """How ``parent`` refers to ``child``, in words."""
  if isinstance(parent, dict):
    for k, v in parent.items():
      if v is child:
        return f"{_name(parent)}[{k!r}]"
  elif isinstance(parent, (list, tuple)):
    for i, v in enumerate(parent):
      if v is child:
        return f"{_name(parent)}[{i}]"
  elif isinstance(parent, types.FunctionType) and parent.__closure__:
    for name, cell in zip(parent.__code__.co_freevars, parent.__closure__):
      if cell is child:
        return f"{_name(parent)} ({parent.__name__}) closed-over variable {name}"
  elif isinstance(parent, types.FrameType):
    for k, v in parent.f_locals.items():
      if v is child:
        return f"local variable {k!r} of the frame of {parent.f_code.co_name}"
  if getattr(parent, "__dict__", None) is child:
    return f"{_name(parent)}.__dict__"
  return _name(parent)


def why_alive(x, candidates: set | None = None, max_depth: int = 12) -> str:
  """The chain of referrers that keeps ``x`` alive, innermost first, until a frame's local
  variable, a module's global or a class (the roots a user recognises). Only objects whose
  ids are in ``candidates`` (default: those alive now) and frames are followed."""
  if candidates is None:
    candidates = {id(o) for o in gc.get_objects()}
  here = sys._getframe()
  lines, seen, child = [], {id(x)}, x
  for _ in range(max_depth):
    parents = [p for p in gc.get_referrers(child)
               if id(p) not in seen and p is not here
               and (id(p) in candidates or isinstance(p, types.FrameType))]
    # Skip the referrers that are bookkeeping rather than the user's structure: the cells
    # between a closure and its variables show up as the function that owns them.
    parent = None
    for p in parents:
      if type(p).__name__ == "cell":
        # A cell is held by its function's ``__closure__`` tuple.
        owners = [f for tup in gc.get_referrers(p) if type(tup) is tuple
                  for f in gc.get_referrers(tup)
                  if isinstance(f, types.FunctionType) and f.__closure__ is tup]
        if owners:
          seen.add(id(p))
          lines.append(f"{_name(child)} is referred to by {_edge(owners[0], p)}")
          parent = owners[0]
          break
      elif isinstance(p, dict) and any(getattr(o, "__dict__", None) is p
                                       for o in gc.get_referrers(p)):
        owner = next(o for o in gc.get_referrers(p) if getattr(o, "__dict__", None) is p)
        key = next((k for k, v in p.items() if v is child), "?")
        lines.append(f"{_name(child)} is referred to by {_name(owner)}.{key}")
        seen.add(id(p))
        parent = owner
        break
      else:
        lines.append(f"{_name(child)} is referred to by {_edge(p, child)}")
        parent = p
        break
    if parent is None or isinstance(parent, (types.FrameType, types.ModuleType, type)):
      break
    seen.add(id(parent))
    child = parent
  return "\n".join(lines) if lines else f"{_name(x)} is referred to by nothing we can name"
