"""Shape refinement: a program that calls a shape-polymorphic exported module (dynamic
sizes, ``tensor<?x3xf32>``) with arrays of known shapes has its dynamic sizes resolved
before it is compiled. jaxlib's ``_jax.mlir.refine_polymorphic_shapes`` does it (the pass
JAX runs; importing it does not import ``jax``, see docs/RUNTIME_NOTES.md); it also checks
the ``shape_assertion`` custom calls statically and removes them."""
from __future__ import annotations

import io

from jaxlib import _jax
from jaxlib.mlir import ir


def refine_polymorphic_shapes(module, context):
  """``module`` (an ``ir.Module``) with every dynamic size resolved from the static shapes
  of its ``main``'s arguments, as a new module in ``context``; ValueError when some size is
  not determined by them or a shape assertion fails."""
  buf = io.BytesIO()
  module.operation.write_bytecode(buf)
  try:
    refined = _jax.mlir.refine_polymorphic_shapes(buf.getvalue(), enable_shape_assertions=True,
                                                  validate_static_shapes=True)
  except Exception as e:
    raise ValueError(f"Error refining the shapes of a program that calls a "
                     f"shape-polymorphic exported function: {e}") from e
  with context:
    return ir.Module.parse(refined)
