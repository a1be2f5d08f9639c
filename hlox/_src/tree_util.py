"""``jax._src.tree_util``: flax's nnx tests ``type(x) in _registry`` to tell registered
pytree node types (the built-in containers and every registered class) from leaves; flax's
struct tests call ``prefix_errors`` to check the key paths its dataclasses report."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hlox import tree_util as _tree_util
from hlox.tree_util import _registry

__all__ = ["_registry", "prefix_errors"]


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None
                  ) -> list[Callable[[str], ValueError]]:
  """Where ``prefix_tree`` is not a tree prefix of ``full_tree``, in JAX's private form:
  one function per mismatch that takes the prefix's name (``'in_axes'``) and returns the
  ``ValueError`` naming the key path under it. hlox's ``tree_util.prefix_errors`` finds the
  mismatches; this only defers the naming."""
  count = len(_tree_util.prefix_errors(prefix_tree, full_tree, is_leaf=is_leaf))

  def error(i: int) -> Callable[[str], ValueError]:
    return lambda name: ValueError(
        _tree_util.prefix_errors(prefix_tree, full_tree, name, is_leaf=is_leaf)[i])

  return [error(i) for i in range(count)]
