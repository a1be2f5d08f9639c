"""Tracebacks that show the user's code: hlox's own frames are removed from exceptions that
leave a transformation (``jit``, ``grad``, ``vmap``, control flow ...), as JAX does.

An error while tracing a jitted function passes through dozens of hlox frames (tracing, the
primitive's rules); what the user needs is the line of *their* code that made the failing
operation. ``api_boundary(fun)`` marks a public entry point: when an exception comes out of
the outermost such boundary, its traceback keeps only the user's frames
(``shown_in_tracebacks``: not hlox's, not excluded) and a note says frames were removed.
``config.traceback_filtering`` (``HLOX_TRACEBACK_FILTERING``, JAX's values): ``'auto'``
(the default: ``'tracebackhide'`` under IPython, else ``'quiet_remove_frames'``), ``'off'``
(full tracebacks),
``'tracebackhide'`` (frames kept but marked ``__tracebackhide__`` for IPython and pytest),
``'remove_frames'`` (the unfiltered traceback attached as the ``__cause__``).
"""
from __future__ import annotations

import functools
import sys
import types

from hlox.config import config
from hlox.core import leak_checker
from hlox.core.source_info import is_hlox_file

__all__ = ["api_boundary", "filter_traceback", "hide_wrapper_frames", "UnfilteredStackTrace",
           "register_exclusion", "shown_in_tracebacks"]

# Path prefixes of files whose frames tracebacks leave out besides hlox's own (JAX's
# ``traceback_util._exclude_paths``). A plain list because libraries edit it in place:
# flax adds and removes its files to hide or show them. As in JAX, frames of the standard
# library stay (unlike the source lines of operations, ``source_info.is_user_file``).
_exclude_paths: list[str] = []


def register_exclusion(path: str) -> None:
  """Leave frames of files under ``path`` out of filtered tracebacks."""
  if path not in _exclude_paths:
    _exclude_paths.append(path)


def shown_in_tracebacks(filename: str) -> bool:
  """Whether a filtered traceback keeps frames of ``filename``."""
  return not is_hlox_file(filename) and not any(filename.startswith(p)
                                                 for p in _exclude_paths)

# The note of ``quiet_remove_frames``, worded as JAX's (users and tests look for it). It names
# JAX's variable: hlox reads JAX_TRACEBACK_FILTERING when HLOX_TRACEBACK_FILTERING is unset.
_NOTE = ("--------------------\nFor simplicity, JAX has removed its internal frames from the "
         "traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include "
         "these.")


class UnfilteredStackTrace(Exception):
  """Carries the whole traceback of an error (``traceback_filtering='remove_frames'``)."""


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
  """``tb`` with only the user's frames (a new chain; ``tb`` is unchanged)."""
  frames = []
  while tb is not None:
    if shown_in_tracebacks(tb.tb_frame.f_code.co_filename):
      frames.append(tb)
    tb = tb.tb_next
  out = None
  for t in reversed(frames):
    out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
  return out


def _mode() -> str:
  mode = config._values.get("traceback_filtering") or "auto"
  if mode == "auto":
    return "tracebackhide" if "IPython" in sys.modules and _in_ipython() else \
        "quiet_remove_frames"
  return mode


def _in_ipython() -> bool:
  try:
    get_ipython  # noqa: F821  (defined as a builtin by IPython)
  except NameError:
    return False
  return True


def _under_boundary(frame) -> bool:
  """Whether an outer ``api_boundary`` is on the stack above ``frame``."""
  frame = frame.f_back
  while frame is not None:
    if frame.f_code is _BOUNDARY_CODE:
      return True
    frame = frame.f_back
  return False


def api_boundary(fun):
  """Wrap ``fun`` (a public entry point) so that exceptions leaving it show the user's
  frames only (see the module docstring)."""

  @functools.wraps(fun)
  def hlox_api_boundary(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841  (read by IPython and pytest)
    try:
      out = fun(*args, **kwargs)
      if leak_checker.pending:  # traces finished with the leak checker on
        leak_checker.check_pending()
      return out
    except Exception as e:
      if leak_checker.pending:
        leak_checker.discard_pending()
      mode = _mode()
      if mode == "off" or _under_boundary(sys._getframe()):
        raise
      tb = e.__traceback__
      if mode == "tracebackhide":
        _hide_internal_frames(tb)
        raise
      if mode not in ("quiet_remove_frames", "remove_frames"):
        raise ValueError(f"HLOX_TRACEBACK_FILTERING={mode} is not a valid value.") from e
      # Without user frames below the boundary the traceback restarts empty here: the
      # user's frames above are added as the exception leaves them (as JAX does).
      e.with_traceback(filter_traceback(tb))
      if mode == "quiet_remove_frames":
        if _NOTE not in getattr(e, "__notes__", ()):
          e.add_note(_NOTE)
      else:
        unfiltered = UnfilteredStackTrace(
            f"{type(e).__name__}: {e}\n\n(the traceback above is the whole one, with "
            "hlox's frames; the error follows with them left out)").with_traceback(tb)
        unfiltered.__cause__, unfiltered.__context__ = e.__cause__, e.__context__
        e.__cause__, e.__context__ = unfiltered, None
      del tb
      raise
  return hlox_api_boundary


def hide_wrapper_frames(e: BaseException) -> None:
  """Drop the leading hlox frames of an exception a boundary below has filtered: a wrapper
  above the boundary (``jit``'s cache-hit path) calls this from its ``except`` clause, so
  the traceback starts at the user's frame again. Under ``tracebackhide`` the wrapper's own
  frames are marked hidden instead (the boundary marked the ones below it)."""
  if _mode() == "tracebackhide":
    _hide_internal_frames(e.__traceback__)
    return
  if _NOTE not in getattr(e, "__notes__", ()) and \
      not isinstance(e.__cause__, UnfilteredStackTrace):
    return
  tb = e.__traceback__
  while tb is not None and not shown_in_tracebacks(tb.tb_frame.f_code.co_filename):
    tb = tb.tb_next
  e.with_traceback(tb)  # None: the user's frames above are added as it leaves them


def _hide_internal_frames(tb) -> None:
  while tb is not None:
    if not shown_in_tracebacks(tb.tb_frame.f_code.co_filename):
      tb.tb_frame.f_locals["__tracebackhide__"] = True
    tb = tb.tb_next


_BOUNDARY_CODE = api_boundary(lambda: None).__code__  # the same for every boundary
