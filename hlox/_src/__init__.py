"""``jax._src``: the few private JAX names that widely used libraries built on JAX (flax,
chex, equinox, jaxtyping) import, forwarded to hlox's own implementations.

JAX's private package carries no promises and hlox does not mirror it. Each module here
holds only the names some such library reaches for, each with a comment naming the
library, so that those libraries import and run unchanged with ``jax`` aliased to hlox.
Nothing here is a stand-in that silently does nothing: each name is hlox's real object.
"""
import importlib
import sys

from hlox.runtime import compilation_cache as compiler

# chex's ``restrict_backends`` does ``from jax._src import compiler`` and wraps
# ``compiler.backend_compile_and_load``: that is hlox's compile step in the runtime's
# compilation module, so the module itself is ``jax._src.compiler``.
sys.modules[__name__ + ".compiler"] = compiler


def __getattr__(name):
  # A module here is an attribute once imported, as JAX's (all imported with ``jax``): chex
  # reads ``jax._src.xla_bridge._backends`` having imported only ``jax``.
  if not name.startswith("__"):
    try:
      return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
      if e.name != f"{__name__}.{name}":
        raise
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
