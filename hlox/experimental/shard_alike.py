"""``hlox.experimental.shard_alike``: make two values be laid out alike over the mesh."""
from __future__ import annotations

from hlox import _tree_transform as tree_util
from hlox.core.tracer import get_aval
from hlox.lax.shard_alike import shard_alike_p

__all__ = ["shard_alike"]


def shard_alike(x, y):
  """``(x, y)`` unchanged, with each pair of leaves sharded the same way: XLA's partitioner
  chooses the layout (an input's, when one is sharded) and gives it to both. ``x`` and ``y``
  must be pytrees of one structure whose leaves pair up with equal shapes."""
  x_leaves, x_tree = tree_util.tree_flatten(x)
  y_leaves, y_tree = tree_util.tree_flatten(y)
  if x_tree != y_tree:
    raise ValueError(f"Trees should be equal. Got x_tree: {x_tree}, y_tree: {y_tree}")
  for a, b in zip(x_leaves, y_leaves):
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if a_shape != b_shape:
      raise ValueError(f"The leaves shapes of `x` and `y` should match. Got `x` leaf shape: "
                       f"{a_shape} and `y` leaf shape: {b_shape}.")
  pairs = [shard_alike_p.bind(a, b) for a, b in zip(x_leaves, y_leaves)]
  return (tree_util.tree_unflatten(x_tree, [p[0] for p in pairs]),
          tree_util.tree_unflatten(y_tree, [p[1] for p in pairs]))
