"""``jax._src.traceback_util``: marking library files so tracebacks and source locations
skip them (flax, equinox and jaxtyping call ``register_exclusion(__file__)`` on import)."""
from hlox.core import source_info
from hlox.core.traceback_util import api_boundary

__all__ = ["api_boundary", "register_exclusion"]


def register_exclusion(path: str) -> None:
  """Frames from files under ``path`` no longer count as the user's code."""
  source_info.register_exclusion(path)


def __getattr__(name):
  # flax reads the registered paths back (``_exclude_paths``) to avoid registering twice.
  if name == "_exclude_paths":
    return list(source_info._excluded)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
