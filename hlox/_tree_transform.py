"""The pytree functions hlox's own transformations use: ``hlox.tree_util`` seen through keys.

In ``hlox.tree_util`` a typed PRNG key array is a leaf, as in JAX. hlox's transformations
(``jit``, ``vmap``, ``grad``, control flow, callbacks, ...) instead need to see the uint32
data inside each key: their tracers, batching rules and lowerings know plain arrays only.
So they flatten with a second registry, ``hlox.tree_util._transform_registry``, in which
``PRNGKeyArray`` is a node whose child is its data (``register_transform_node``). User
registrations go into both registries, so nothing else differs.

Internal modules import this module in place of ``hlox.tree_util`` (``from hlox import
_tree_transform as tree_util``) and keep calling ``tree_util.tree_flatten`` & co.
Treedefs made here belong to the transform registry: they unflatten like any other, but
compare unequal to user-made treedefs of trees that hold keys.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from hlox import tree_util as _public
# Re-exported as they are: these do not depend on a registry (registrations go into both).
from hlox.tree_util import (
    DictKey, FlattenedIndexKey, GetAttrKey, Partial, PyTreeDef, SequenceKey, keystr,
    register_dataclass, register_pytree_node, register_pytree_node_class,
    register_pytree_with_keys, register_pytree_with_keys_class, register_static,
    treedef_children, treedef_is_leaf, treedef_is_strict_leaf, tree_unflatten)

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "Partial", "PyTreeDef", "SequenceKey",
    "keystr", "register_dataclass", "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static",
    "treedef_children", "treedef_is_leaf", "treedef_is_strict_leaf", "tree_unflatten",
    "default_registry", "flatten_fast", "register_transform_node",
    "tree_flatten", "tree_leaves", "tree_structure", "all_leaves", "treedef_tuple",
    "tree_map", "tree_reduce", "tree_reduce_associative", "tree_all", "flatten_one_level",
    "flatten_one_level_with_keys", "is_tree_node", "tree_transpose", "broadcast_prefix",
    "tree_broadcast", "prefix_errors", "equality_errors", "treedef_equality_errors",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
]

default_registry = _public._transform_registry

# The registry-dependent functions of hlox.tree_util, copied with their global
# `default_registry` pointing at the transform registry. Copying the code objects, rather
# than writing each function twice, keeps the two sets identical in behaviour; the copies
# share one globals dict, so that those which call each other (tree_map -> _flatten_up_to
# -> tree_structure) call the copies.
_REGISTRY_DEPENDENT = (
    "tree_flatten", "tree_leaves", "tree_structure", "all_leaves", "treedef_tuple",
    "tree_map", "tree_reduce", "tree_reduce_associative", "tree_all", "flatten_one_level",
    "flatten_one_level_with_keys", "is_tree_node", "tree_transpose", "broadcast_prefix",
    "tree_broadcast", "_first_mismatch", "prefix_errors", "equality_errors",
    "treedef_equality_errors", "_flatten_up_to", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path",
)


def _copy_with_registry(registry) -> dict[str, Callable[..., Any]]:
  scope = dict(vars(_public))
  scope["default_registry"] = registry
  for name in _REGISTRY_DEPENDENT:
    f = scope[name]
    copy = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__)
    copy.__kwdefaults__ = f.__kwdefaults__
    copy.__doc__ = f.__doc__
    copy.__qualname__ = f.__qualname__
    copy.__module__ = __name__
    scope[name] = copy
  return {name: scope[name] for name in _REGISTRY_DEPENDENT}


_copies = _copy_with_registry(default_registry)
tree_flatten = _copies["tree_flatten"]
tree_leaves = _copies["tree_leaves"]
tree_structure = _copies["tree_structure"]
all_leaves = _copies["all_leaves"]
treedef_tuple = _copies["treedef_tuple"]
tree_map = _copies["tree_map"]
tree_reduce = _copies["tree_reduce"]
tree_reduce_associative = _copies["tree_reduce_associative"]
tree_all = _copies["tree_all"]
flatten_one_level = _copies["flatten_one_level"]
flatten_one_level_with_keys = _copies["flatten_one_level_with_keys"]
is_tree_node = _copies["is_tree_node"]
tree_transpose = _copies["tree_transpose"]
broadcast_prefix = _copies["broadcast_prefix"]
tree_broadcast = _copies["tree_broadcast"]
prefix_errors = _copies["prefix_errors"]
equality_errors = _copies["equality_errors"]
treedef_equality_errors = _copies["treedef_equality_errors"]
tree_flatten_with_path = _copies["tree_flatten_with_path"]
tree_leaves_with_path = _copies["tree_leaves_with_path"]
tree_map_with_path = _copies["tree_map_with_path"]
del _copies

# jit's cache-hit path: the C++ flatten itself, no Python frame and no is_leaf callback.
flatten_fast = default_registry.flatten


def register_transform_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any]) -> None:
  """Makes ``nodetype`` a node for hlox's transformations only; users still see its
  instances as leaves (how ``PRNGKeyArray`` is registered)."""
  default_registry.register_node(nodetype, flatten_func, unflatten_func)

