"""``jax._src.traceback_util``: marking library files so tracebacks and source locations
skip them (flax, equinox and jaxtyping call ``register_exclusion(__file__)`` on import), and
asking whether a frame is one that filtered tracebacks keep (equinox's ``error_if`` records
such frames to show where a runtime error was raised)."""
import types

from hlox.core import source_info
from hlox.core.traceback_util import api_boundary

__all__ = ["api_boundary", "include_filename", "include_frame", "register_exclusion"]


def register_exclusion(path: str) -> None:
  """Frames from files under ``path`` no longer count as the user's code."""
  source_info.register_exclusion(path)


def include_filename(filename: str) -> bool:
  """Whether frames of ``filename`` are kept in filtered tracebacks (the user's code)."""
  return source_info.is_user_file(filename)


def include_frame(frame: types.FrameType) -> bool:
  """Whether ``frame`` is kept in filtered tracebacks (the user's code)."""
  return source_info.is_user_file(frame.f_code.co_filename)


def __getattr__(name):
  # flax reads the registered paths back (``_exclude_paths``) to avoid registering twice.
  if name == "_exclude_paths":
    return list(source_info._excluded)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
