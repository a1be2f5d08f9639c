"""``jax._src.core``: flax's fp8 layers build their extended dtype's physical aval with
``ShapedArray`` from JAX's private core."""
from hlox.core.avals import ShapedArray

__all__ = ["ShapedArray"]
