"""``entry_layout_p``: the memory layout a jitted program takes an argument in or gives a
result in (``jit`` with ``Format`` in/out shardings, ``hlox.experimental.layout``).

Numerically the identity. Bound on one of the traced program's arguments (``role="in"``)
or results (``role="out"``), its lowering records ``mode`` (an ``mhlo.layout_mode`` value:
"default", "auto" or a minor-to-major list such as "{0,1}") for that argument or result of
the entry function, which ``xla.lower_jaxpr_to_module`` writes onto it; XLA then compiles
the program for those layouts. Anywhere else (eagerly, inside a nested call, under vmap)
there is no entry parameter to lay out and it does nothing.
"""
from __future__ import annotations

from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla

from jaxlib.mlir import ir

__all__ = ["entry_layout_p"]

entry_layout_p = Primitive("entry_layout")
entry_layout_p.def_abstract_eval(lambda x, *, mode, role: x)
entry_layout_p.def_impl(lambda x, *, mode, role: x)


def _lowering(ctx, x, *, mode, role):
  layouts = ctx.module_context.entry_layouts
  if role == "in":
    # Only an argument of the entry function itself has a layout to choose.
    if isinstance(x, ir.BlockArgument) and x.owner.owner.name.value == "main":
      layouts["in"][x.arg_number] = mode
  else:
    layouts["out"].append((x, mode))
  return x

xla.register_lowering(entry_layout_p, _lowering)
ad.deflinear(entry_layout_p, lambda ct, x, **params: [ct])
# Under vmap the value gains a dimension the layout does not name: left to XLA.
batching.primitive_batchers[entry_layout_p] = lambda vals, dims, **params: (vals[0], dims[0])
