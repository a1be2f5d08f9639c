"""``jax._src.state``: the array-reference types that flax's nnx tests values against; the
references themselves live in ``hlox.core.refs`` and ``hlox.lax.state``."""
