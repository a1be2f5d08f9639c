"""``jax._src.state.types``: flax's nnx asks ``isinstance(jax.typeof(x), AbstractRef)`` to
tell array references (``jax.new_ref``) from plain arrays."""
from hlox.core.refs import AbstractRef

__all__ = ["AbstractRef"]
