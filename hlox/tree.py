"""``hlox.tree``: short names for the pytree functions (JAX's ``jax.tree`` namespace)."""
import dataclasses

from hlox.tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: F401,A001
                            tree_broadcast as broadcast,
                            tree_reduce_associative as reduce_associative,
                            tree_flatten_with_path as flatten_with_path,
                            tree_leaves as leaves, tree_leaves_with_path as leaves_with_path,
                            tree_map as map, tree_map_with_path as map_with_path,
                            tree_reduce as reduce, tree_structure as structure,
                            tree_transpose as transpose, tree_unflatten as unflatten)


def static(**kwargs):
  """A ``dataclasses.field`` marked static (``metadata['static'] = True``): a field that
  ``hlox.tree_util.register_dataclass`` keeps in the tree structure, not among the leaves.
  Takes ``dataclasses.field``'s arguments."""
  metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)
