"""``inspect_array_sharding``: see how values are laid out over devices, eagerly or from
inside ``jit`` (on the primitive of ``hlox.lax.inspect_sharding``)."""
from __future__ import annotations

from typing import Callable

from hlox import _tree_transform as tree_util
from hlox.lax.inspect_sharding import inspect_sharding_p

__all__ = ["inspect_array_sharding"]


def inspect_array_sharding(value, *, callback: Callable) -> None:
  """Call ``callback(sharding)`` with the sharding of each array in the pytree ``value``.

  Eagerly that is at once, with the array's sharding. Inside ``jit`` it is when the program
  is lowered (one device) or compiled (a program partitioned over a mesh, with the layout
  XLA picked for the value); a cached program calls nothing again.
  """
  if not callable(callback):
    raise TypeError(f"inspect_array_sharding: callback must be callable, got "
                    f"{type(callback).__name__}")
  for leaf in tree_util.tree_leaves(value):
    inspect_sharding_p.bind(leaf, callback=callback)
