"""``hlox.experimental.layout``: device-local memory layouts (JAX's
``jax.experimental.layout``): ``Layout``, ``Format``, ``with_layout_constraint``."""
from __future__ import annotations

from hlox.lax.sharding_constraint import with_layout_constraint
from hlox.runtime.layout import Format, Layout

__all__ = ["Format", "Layout", "with_layout_constraint"]
