"""``jax._src.traceback_util``: marking library files so tracebacks and source locations
skip them (flax, equinox and jaxtyping call ``register_exclusion(__file__)`` on import);
flax hides and shows its frames by editing ``_exclude_paths`` in place, and its tests look
for ``UnfilteredStackTrace`` (``traceback_filtering='remove_frames'``)."""
from hlox.core import source_info
from hlox.core.traceback_util import UnfilteredStackTrace, _exclude_paths, api_boundary
from hlox.core import traceback_util as _traceback_util

__all__ = ["api_boundary", "register_exclusion", "UnfilteredStackTrace", "_exclude_paths"]


def register_exclusion(path: str) -> None:
  """Frames from files under ``path`` no longer count as the user's code: neither in
  filtered tracebacks nor as the source line of an operation."""
  _traceback_util.register_exclusion(path)
  source_info.register_exclusion(path)
