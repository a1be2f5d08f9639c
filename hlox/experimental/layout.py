"""``hlox.experimental.layout``: device-local memory layouts (JAX's
``jax.experimental.layout``): ``Layout``, ``Format``, ``with_layout_constraint``."""
from __future__ import annotations

from hlox.core.tracer import get_aval
from hlox.runtime.layout import Format, Layout

__all__ = ["Format", "Layout", "with_layout_constraint"]


def with_layout_constraint(x, layout: Layout):
  """``x`` with its device-local layout fixed to ``layout`` inside a program (XLA's
  ``LayoutConstraint``). hlox supports only the default (row-major) layout here, which every
  value inside a CPU program has already; other layouts raise NotImplementedError."""
  if not isinstance(layout, Layout):
    raise TypeError("with_layout_constraint expects a `Layout` (not `Layout.AUTO` or a "
                    f"`Format`); got {layout!r} of type {type(layout)}")
  layout.check_compatible_aval(get_aval(x).shape)
  if not layout.is_default():
    raise NotImplementedError(
        f"with_layout_constraint: hlox cannot constrain a value to the layout {layout} "
        "inside a program (only the default row-major layout); use `jit` with a `Format` in "
        "out_shardings to get a result in that layout")
  return x
