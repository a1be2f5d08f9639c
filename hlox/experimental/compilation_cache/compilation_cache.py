"""The persistent compilation cache's switches, as JAX's
``jax.experimental.compilation_cache.compilation_cache``.

``set_cache_dir(path)`` turns the cache on for the compiles that follow (the option
``compilation_cache_dir``, also ``HLOX_COMPILATION_CACHE_DIR``); executables compiled then
are written there and found again by later processes. ``reset_cache()`` returns to a fresh
process's state. ``initialize_cache`` and ``is_initialized`` are JAX's older names, kept
with what they do in JAX now.

The cache is trusted: anyone who can write to its directory can make this process run
their code. Do not point it at a directory others may write to.
"""
from __future__ import annotations

from hlox.config import config
from hlox.runtime import compilation_cache as _cache

__all__ = ["set_cache_dir", "reset_cache", "initialize_cache", "is_initialized"]


def set_cache_dir(path) -> None:
  """Use ``path`` (a directory, made when first written to) as the persistent compilation
  cache for later compiles."""
  config.update("compilation_cache_dir", path)


def initialize_cache(path) -> None:
  """Deprecated in JAX, where it now does what ``set_cache_dir`` does: so here too."""
  set_cache_dir(path)


def is_initialized() -> bool:
  """Deprecated in JAX: whether the cache is enabled (``enable_compilation_cache``), which
  is what JAX's answers now, whether or not a directory is set."""
  return bool(config.enable_compilation_cache)


def reset_cache() -> None:
  """Back to the state of a fresh process: the cache's once-per-process reports are made
  again, and directories found unwritable are tried again. The directory set by
  ``set_cache_dir`` stays set, as in JAX."""
  _cache.reset()
