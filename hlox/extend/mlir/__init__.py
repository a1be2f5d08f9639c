"""``jax.extend.mlir``: the MLIR Python bindings hlox lowers with (jaxlib's), for lowering
rules of new primitives: ``ir``, ``passmanager`` and the dialects (``dialects.stablehlo``,
``dialects.func``, ...), each also importable by its path."""
import sys

from hlox.interpreters.mlir import dialects, ir, passmanager

__all__ = ["dialects", "ir", "passmanager"]

# ``import jax.extend.mlir.dialects.stablehlo``: jaxlib's modules under these paths.
sys.modules.setdefault(__name__ + ".dialects", dialects)
sys.modules.setdefault(__name__ + ".ir", ir)
sys.modules.setdefault(__name__ + ".passmanager", passmanager)
for _dialect in ("stablehlo", "chlo", "func", "sdy", "arith", "math", "scf", "builtin"):
  try:
    __import__(f"jaxlib.mlir.dialects.{_dialect}")
  except ImportError:  # a dialect this jaxlib does not ship
    continue
  sys.modules.setdefault(f"{__name__}.dialects.{_dialect}",
                         sys.modules[f"jaxlib.mlir.dialects.{_dialect}"])
