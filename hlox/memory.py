"""``jax.memory``: the memory spaces an array's type can name (``Space.Device``, the
default; ``Space.Host``; ``Space.Any``), as ``ShapedArray(..., memory_space=...)`` takes
them."""
from hlox.core.avals import MemorySpace as Space

__all__ = ["Space"]
