"""``jax._src.tree_util``: flax's nnx tests ``type(x) in _registry`` to tell registered
pytree node types (the built-in containers and every registered class) from leaves."""
from hlox.tree_util import _registry

__all__ = ["_registry"]
