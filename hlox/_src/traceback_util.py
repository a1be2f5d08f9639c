"""``jax._src.traceback_util``: marking library files so tracebacks and source locations
skip them (flax, equinox and jaxtyping call ``register_exclusion(__file__)`` on import);
flax hides and shows its frames by editing ``_exclude_paths`` in place, and its tests look
for ``UnfilteredStackTrace`` (``traceback_filtering='remove_frames'``); equinox's
``error_if`` asks whether a frame is one that filtered tracebacks keep, to show where a
runtime error was raised."""
import types

from hlox.core import source_info
from hlox.core.traceback_util import UnfilteredStackTrace, _exclude_paths, api_boundary
from hlox.core import traceback_util as _traceback_util

__all__ = ["api_boundary", "include_filename", "include_frame", "register_exclusion",
           "UnfilteredStackTrace", "_exclude_paths"]


def register_exclusion(path: str) -> None:
  """Frames from files under ``path`` no longer count as the user's code: neither in
  filtered tracebacks nor as the source line of an operation."""
  _traceback_util.register_exclusion(path)
  source_info.register_exclusion(path)


def include_filename(filename: str) -> bool:
  """Whether frames of ``filename`` are kept in filtered tracebacks."""
  return _traceback_util.shown_in_tracebacks(filename)


def include_frame(frame: types.FrameType) -> bool:
  """Whether ``frame`` is kept in filtered tracebacks."""
  return _traceback_util.shown_in_tracebacks(frame.f_code.co_filename)
