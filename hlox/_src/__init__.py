"""``jax._src``: the few private JAX names that widely used libraries built on JAX (flax,
chex, equinox, jaxtyping) import, forwarded to hlox's own implementations.

JAX's private package carries no promises and hlox does not mirror it. Each module here
holds only the names some such library reaches for, each with a comment naming the
library, so that those libraries import and run unchanged with ``jax`` aliased to hlox.
Nothing here is a stand-in that silently does nothing: each name is hlox's real object.
"""
import sys

from hlox.runtime import compilation_cache as compiler

# chex's ``restrict_backends`` does ``from jax._src import compiler`` and wraps
# ``compiler.backend_compile_and_load``: that is hlox's compile step in the runtime's
# compilation module, so the module itself is ``jax._src.compiler``.
sys.modules[__name__ + ".compiler"] = compiler
