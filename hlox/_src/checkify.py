"""``jax._src.checkify``: flax's ``nnx.checkify`` wraps JAX's checkify transformation and
names its error types and sets from the private module."""
from typing import TypeVar

from hlox.experimental.checkify import (Error, JaxException, all_checks, checkify,
                                        user_checks)

__all__ = ["Error", "JaxException", "Out", "all_checks", "checkify", "user_checks"]

Out = TypeVar("Out")  # the checkified function's output (flax's type annotations)
