"""``jax.extend``: access to the machinery for code that extends hlox itself: defining
primitives with their rules (``core``, ``core.primitives``), lowering them to StableHLO
(``mlir``, ``hlox.interpreters.mlir``) and reaching the PJRT client (``backend``).

As in JAX, this surface follows the implementation and carries no stability promise.
"""
from hlox.extend import backend, core, linear_util, mlir, random, source_info_util

__all__ = ["backend", "core", "linear_util", "mlir", "random", "source_info_util"]
