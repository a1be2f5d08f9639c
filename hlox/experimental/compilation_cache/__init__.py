"""``hlox.experimental.compilation_cache`` (JAX's ``jax.experimental.compilation_cache``):
the public switches of the persistent compilation cache, whose machinery is
``hlox/runtime/compilation_cache.py``.

Belongs here: the ``compilation_cache`` module of that API and nothing else.
"""
from hlox.experimental.compilation_cache import compilation_cache  # noqa: F401

__all__ = ["compilation_cache"]
