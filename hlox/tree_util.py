"""Pytrees: nested containers of arrays, flattened to a list of leaves plus a structure.

Every transformation in hlox takes and returns pytrees. A pytree is a tree of *nodes*
(tuples, lists, dicts, namedtuples, ``None``, OrderedDicts, defaultdicts, ``Partial`` and
any registered type) whose leaves are everything else. ``tree_flatten`` splits a pytree into
its leaves and a ``PyTreeDef`` describing the nodes; ``tree_unflatten`` puts it back.

The semantics are JAX's, so code and mental models carry over:

* dict children are ordered by sorted key, and unflattening builds a dict in sorted key
  order (the key order of the original dict is not part of the structure, so two dicts with
  the same keys have equal treedefs). OrderedDict keeps its own key order, which *is* part
  of its structure. defaultdict sorts like dict and keeps its ``default_factory`` as
  static data.
* ``None`` is a node with no children, not a leaf: ``tree_leaves([None, 1]) == [1]``.
* Treedefs are hashable and comparable, so ``jit`` can use them in its cache key.

The flattening itself is done by the C++ pytree implementation that ``jaxlib`` ships
(``jaxlib._jax.pytree``). We build our *own* ``PyTreeRegistry`` rather than using
``pytree.default_registry()``: that one is the registry JAX itself registers into, and
hlox must not see JAX's registrations (nor JAX ours) when both are imported in one process,
e.g. in ``bench/``. Flattening a small tree costs well under a microsecond this way, which
matters because ``jit`` flattens its arguments on every call (see ``flatten_fast``).

A typed PRNG key array is a leaf here, as in JAX. hlox's own transformations flatten with
a second registry, in which it is a node over its uint32 data (``hlox._tree_transform``).

Only functions of ``jaxlib._jax.pytree`` are used; nothing here imports ``jax``.
"""

from __future__ import annotations

import copyreg
import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from jaxlib._jax import pytree as _pytree

__all__ = [
    "PyTreeDef", "default_registry", "flatten_fast",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
    "tree_map", "tree_reduce", "tree_reduce_associative", "tree_all", "tree_transpose",
    "tree_broadcast", "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node",
    "KeyEntry", "KeyPath",
    "broadcast_prefix", "all_leaves",
    "treedef_is_leaf", "treedef_is_strict_leaf", "treedef_children", "treedef_tuple",
    "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "register_pytree_with_keys_class", "register_dataclass", "register_static",
    "Partial",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "keystr",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
]

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

PyTreeDef = _pytree.PyTreeDef

# Key-path entries, as produced by `tree_flatten_with_path`: `[0]`, `['a']`, `.x`.
SequenceKey = _pytree.SequenceKey
DictKey = _pytree.DictKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey
KeyEntry = TypeVar("KeyEntry", bound=Any)  # one of the key types above, or a custom one
KeyPath = tuple[KeyEntry, ...]


def _new_registry(name: str) -> _pytree.PyTreeRegistry:
  registry = _pytree.PyTreeRegistry(
      enable_none=True, enable_tuple=True, enable_namedtuple=True,
      enable_list=True, enable_dict=True)
  # A treedef pickles its registry by reference (module + name), so name ours; this makes
  # treedefs picklable, e.g. for a persistent compile cache.
  registry.__module__ = __name__
  registry.__name__ = name
  return registry


# Two registries. Users see `default_registry`, in which typed PRNG key arrays are leaves,
# as in JAX. hlox's transformations flatten with `_transform_registry`, in which a key
# array is also a node whose child is its uint32 data, so that tracing, batching and
# differentiation only ever meet plain arrays (see `hlox._tree_transform`). Every type that
# users register goes into both, so the two differ only by the key arrays.
default_registry = _new_registry("default_registry")
_transform_registry = _new_registry("_transform_registry")
_REGISTRIES = (default_registry, _transform_registry)


class _RegistryEntry(NamedTuple):
  """How a registered node type comes apart and back: ``to_iter(node) -> (children, aux)``,
  ``from_iter(aux, children) -> node``."""
  to_iter: Callable
  from_iter: Callable


# The node types in a Python dict as well as in the C++ registries: the C++ registry cannot
# be asked whether it holds a type, and libraries (flax's nnx) test ``type(x) in _registry``.
# Holds the built-in containers and every type registered through this module.
_registry: dict[type, _RegistryEntry] = {
    tuple: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: tuple(xs)),
    list: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: list(xs)),
    dict: _RegistryEntry(lambda d: (tuple(d[k] for k in sorted(d)), tuple(sorted(d))),
                        lambda keys, xs: dict(zip(keys, xs))),
    type(None): _RegistryEntry(lambda _: ((), None), lambda _, xs: None),
}

# The jit fast path: `flatten_fast(tree) -> (leaves, treedef)`, with no `is_leaf`. It is the
# C++ method itself rather than a Python wrapper around it, which saves a Python frame
# (a few tens of nanoseconds) on every jitted call.
flatten_fast = default_registry.flatten


def _reduce_bound_method(method):
  # jaxlib's (nanobind) bound methods do not pickle, Python's do as ``getattr(self, name)``:
  # the same here, so that a function that holds ``flatten_fast`` (jit's fast path, pickled
  # by value by cloudpickle) pickles; ``self`` (our registry) pickles by reference.
  return getattr, (method.__self__, method.__name__)


copyreg.pickle(type(flatten_fast), _reduce_bound_method)


# ---------------------------------------------------------------------------------------
# Flattening and unflattening


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
  """Flattens a pytree into its leaves and its structure.

  Args:
    tree: the pytree.
    is_leaf: optional predicate, called on every subtree from the root down; where it
      returns True that subtree is taken as one leaf and not looked into.

  Returns:
    ``(leaves, treedef)``: the leaves in depth-first order (dict children in sorted key
    order) and a ``PyTreeDef`` with which ``tree_unflatten`` rebuilds the tree.
  """
  return default_registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
  """Builds the pytree with structure ``treedef`` and the given leaves.

  Raises ``ValueError`` when the number of leaves is not ``treedef.num_leaves``.
  """
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
  """Returns the leaves of a pytree, in the order ``tree_flatten`` gives them."""
  return default_registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
  """Returns the ``PyTreeDef`` of a pytree."""
  return default_registry.flatten(tree, is_leaf)[1]


def all_leaves(iterable: Iterable[Any],
               is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True when every element of ``iterable`` is a leaf (not a pytree node)."""
  items = list(iterable)
  if is_leaf is None:
    return _pytree.all_leaves(default_registry, items)
  leaves = tree_leaves(items, is_leaf)
  return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True when ``treedef`` has a single node: a leaf, or an empty node such as ``None``.

  This is JAX's definition; ``treedef_is_strict_leaf`` excludes the empty nodes.
  """
  return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
  """True when ``treedef`` is exactly one leaf (``tree_structure(x)`` for a leaf ``x``)."""
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  """Returns the treedefs of the root node's immediate children."""
  return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """Returns the treedef of a tuple whose children have the given treedefs."""
  return _pytree.treedef_tuple(default_registry, list(treedefs))


# ---------------------------------------------------------------------------------------
# Mapping and reducing


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Applies ``f`` leafwise and returns a pytree with the structure of ``tree``.

  With several trees, ``f`` gets one argument per tree: ``f(x, *ys)`` where ``x`` is a leaf
  of ``tree`` and each ``y`` is the subtree at the same place in the corresponding tree of
  ``rest``. So every tree in ``rest`` must have ``tree``'s structure, or have it as a
  prefix (a leaf of ``tree`` may stand for a whole subtree of the others). ``is_leaf``
  applies to ``tree`` only.

  Raises:
    ValueError: a tree in ``rest`` does not have ``tree``'s structure as a prefix; the
      message shows both structures and the first key path where they disagree.
  """
  leaves, treedef = default_registry.flatten(tree, is_leaf)
  if not rest:
    return treedef.unflatten(map(f, leaves))
  columns = [leaves]
  for i, other in enumerate(rest):
    columns.append(_flatten_up_to("tree_map", tree, treedef, other, "tree",
                                  f"rest[{i}]", is_leaf))
  return treedef.unflatten(f(*xs) for xs in zip(*columns))


class _Missing:
  """Marks an argument that was not passed (``None`` may be a legitimate value)."""

  def __repr__(self):
    return "<missing>"


_missing: Any = _Missing()


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _missing,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Folds ``function`` over the leaves of ``tree``, like ``functools.reduce``.

  Without ``initializer`` the first leaf starts the fold, and a tree with no leaves raises
  ``TypeError``.
  """
  leaves = tree_leaves(tree, is_leaf)
  if initializer is _missing:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def _halving_reduce(leaves: list, operation: Callable, identity: Any) -> Any:
  if not leaves:
    if identity is _missing:
      raise TypeError("Must specify identity for parallel reduction of empty sequence.")
    return identity
  if len(leaves) == 1:
    return leaves[0]
  half = len(leaves) // 2
  return operation(_halving_reduce(leaves[:half], operation, identity),
                   _halving_reduce(leaves[half:], operation, identity))


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _missing,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Reduces the leaves with an associative ``operation`` as a balanced tree (logarithmic
  depth: the two halves of the leaves are reduced, then combined). ``identity`` is the
  result for a tree with no leaves (otherwise ``TypeError``)."""
  return _halving_reduce(tree_leaves(tree, is_leaf), operation, identity)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """The children and auxiliary data of a pytree node, one level down (``ValueError`` for a
  leaf)."""
  out = default_registry.flatten_one_level(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[Any, Any]], Hashable]:
  """Like ``flatten_one_level``, with each child paired with its key-path entry."""
  out = default_registry.flatten_one_level_with_keys(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def is_tree_node(typ: type) -> bool:
  """True when the type ``typ`` is a pytree node type (built in, a namedtuple, or
  registered)."""
  return default_registry.is_node(typ)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True when every leaf of ``tree`` is truthy (and for a tree with no leaves)."""
  return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
  """Turns an outer-of-inner pytree into an inner-of-outer one.

  ``pytree_to_transpose`` has the structure ``outer_treedef`` with each leaf replaced by a
  tree of structure ``inner_treedef``; e.g. a list of ``(a, b)`` pairs becomes a pair of
  lists. With ``inner_treedef=None`` the inner structure is taken from the first subtree.

  Raises:
    TypeError: ``pytree_to_transpose`` is not outer-of-inner.
  """
  leaves, treedef = default_registry.flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  expected = outer_treedef.compose(inner_treedef)
  # JAX compares leaf counts only. Structures are compared here too (trees that merely have
  # the right number of leaves would be scrambled), except node metadata: a node whose
  # metadata depends on its contents (a cache of its own flattening) changes with them.
  if treedef != expected and (
      treedef.num_leaves != expected.num_leaves
      or any(why != "the pytree node metadata does not match"
             for _, _, _, why in treedef_equality_errors(treedef, expected))):
    raise TypeError(
        "tree_transpose: Mismatch: the tree to transpose must have the outer structure "
        f"with each leaf replaced by the inner structure.\n  expected: {expected}\n"
        f"  got:      {treedef}")
  inner_size = inner_treedef.num_leaves
  outer_size = outer_treedef.num_leaves
  # Leaves are grouped by outer leaf: [outer 0's inner leaves, outer 1's, ...].
  by_outer = [leaves[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  by_inner = zip(*by_outer) if outer_size else [()] * inner_size
  return inner_treedef.unflatten(outer_treedef.unflatten(xs) for xs in by_inner)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
  """Repeats each leaf of ``prefix_tree`` for every leaf of the matching subtree.

  Returns a list with one entry per leaf of ``full_tree``. This is how per-argument
  options such as ``vmap``'s ``in_axes`` are spread over the arguments' leaves; pass
  ``is_leaf=lambda x: x is None`` there so that ``None`` counts as an option, not as an
  empty node.
  """
  prefix_leaves, prefix_treedef = default_registry.flatten(prefix_tree, is_leaf)
  subtrees = _flatten_up_to("broadcast_prefix", prefix_tree, prefix_treedef, full_tree,
                            "prefix_tree", "full_tree", is_leaf)
  result: list[Any] = []
  for x, subtree in zip(prefix_leaves, subtrees):
    result.extend([x] * default_registry.flatten(subtree)[1].num_leaves)
  return result


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Like ``broadcast_prefix``, but returns a pytree with ``full_tree``'s structure."""
  return tree_structure(full_tree).unflatten(
      broadcast_prefix(prefix_tree, full_tree, is_leaf))


# ---------------------------------------------------------------------------------------
# Structure-mismatch diagnosis
#
# The C++ `flatten_up_to` says what went wrong at the node where it stopped ("Expected
# dict, got [1]"), but not where that node is nor what the two trees look like. When it
# fails we walk both trees once more, in Python, to name the key path of the first
# disagreement. This only runs on the error path, so its speed does not matter.

_MAX_STRUCTURE_CHARS = 500


def _short(obj: Any) -> str:
  text = str(obj)
  if len(text) > _MAX_STRUCTURE_CHARS:
    text = text[:_MAX_STRUCTURE_CHARS] + " ...(truncated)"
  return text


def _describe_node(tree: Any, children: Sequence[Any] | None, aux: Any = None) -> str:
  """A phrase for one node, e.g. "a dict with keys ['a', 'b']"; ``children=None``: leaf."""
  if children is None:
    return f"a leaf of type {type(tree).__name__}"
  if tree is None:
    return "None"
  name = type(tree).__name__
  if isinstance(tree, dict):
    return f"a {name} with keys {list(tree)}"
  if isinstance(tree, (list, tuple)):
    return f"a {name} of length {len(tree)}"
  return f"a {name} with {len(children)} children and metadata {_short(aux)}"


def _first_mismatch(path: tuple[Any, ...], prefix: Any, full: Any,
                    is_leaf: Callable[[Any], bool] | None
                    ) -> tuple[tuple[Any, ...], str, str] | None:
  """Finds where ``prefix`` stops being a prefix of ``full``.

  Returns ``(key_path, description_in_prefix, description_in_full)``, or None if no
  mismatch is found.
  """
  if is_leaf is not None and is_leaf(prefix):
    return None
  prefix_node = default_registry.flatten_one_level_with_keys(prefix)
  if prefix_node is None:
    return None  # a leaf of the prefix stands for any subtree of the full tree
  prefix_children, prefix_aux = tuple(prefix_node[0]), prefix_node[1]
  full_node = default_registry.flatten_one_level_with_keys(full)
  if full_node is None:
    return (path, _describe_node(prefix, prefix_children, prefix_aux),
            _describe_node(full, None))
  full_children, full_aux = tuple(full_node[0]), full_node[1]
  if (type(prefix) is not type(full)
      or [k for k, _ in prefix_children] != [k for k, _ in full_children]
      or prefix_aux != full_aux):
    return (path, _describe_node(prefix, prefix_children, prefix_aux),
            _describe_node(full, full_children, full_aux))
  for (key, prefix_child), (_, full_child) in zip(prefix_children, full_children):
    found = _first_mismatch((*path, key), prefix_child, full_child, is_leaf)
    if found is not None:
      return found
  return None


def prefix_errors(prefix_tree: Any, full_tree: Any, name: str = "prefix",
                  is_leaf: Callable[[Any], bool] | None = None) -> list[str]:
  """Every place where ``prefix_tree`` is not a tree prefix of ``full_tree``, each as a
  message naming its key path (``name`` prefixes the path, e.g. ``in_axes[0]``) and what
  differs there: the node types, numbers of children, keys or metadata. Empty when it is a
  prefix. (JAX's ``prefix_errors``; used on the error paths of ``vmap``, ``device_put``.)"""
  errors: list[str] = []

  def walk(path, prefix, full):
    if is_leaf is not None and is_leaf(prefix):
      return
    prefix_node = default_registry.flatten_one_level_with_keys(prefix)
    if prefix_node is None:
      return  # a leaf of the prefix stands for any subtree
    prefix_children, prefix_aux = list(prefix_node[0]), prefix_node[1]
    full_node = default_registry.flatten_one_level_with_keys(full)
    where = f"at key path\n    {name}{keystr(path)}\nAt that key path, the prefix pytree {name}"
    if full_node is None or type(prefix) is not type(full):
      other = (f"subtree of different type\n    {type(full)}" if full_node is not None else
               "leaf (an array or other value), not a pytree node")
      errors.append(f"pytree structure error: different types {where} has a subtree of type\n"
                    f"    {type(prefix)}\nbut at the same key path the full pytree has a "
                    f"{other}.")
      return
    full_children, full_aux = list(full_node[0]), full_node[1]
    if isinstance(prefix, (list, tuple)) and len(prefix_children) != len(full_children):
      # Sequences: their lengths differ (clearer than their integer keys).
      ty = type(prefix).__name__
      errors.append(f"pytree structure error: different lengths of {ty} {where} has a "
                    f"subtree of type {ty} of length {len(prefix_children)}, but the full "
                    f"pytree has a subtree of the same type but of length "
                    f"{len(full_children)}.")
      return
    if len(prefix_children) != len(full_children):
      errors.append(f"pytree structure error: different numbers of pytree children {where} "
                    f"has a subtree of type\n    {type(prefix)}\nwith {len(prefix_children)} "
                    f"child keys\n    {' '.join(str(k) for k, _ in prefix_children)}\nbut at "
                    f"the same key path the full pytree has a subtree of the same type but "
                    f"with {len(full_children)} child keys\n    "
                    f"{' '.join(str(k) for k, _ in full_children)}")
      return
    prefix_keys, full_keys = [k for k, _ in prefix_children], [k for k, _ in full_children]
    if prefix_keys != full_keys:
      errors.append(f"pytree structure error: different pytree keys {where} has a subtree of "
                    f"type\n    {type(prefix)}\nwith keys\n    {prefix_keys}\nbut at the "
                    f"same key path the full pytree has a subtree of the same type but with "
                    f"keys\n    {full_keys}")
      return
    if prefix_aux != full_aux:
      errors.append(f"pytree structure error: different pytree metadata {where} has a subtree "
                    f"of type\n    {type(prefix)}\nwith metadata\n    {_short(prefix_aux)}\n"
                    f"but at the same key path the full pytree has a subtree of the same type "
                    f"but with metadata\n    {_short(full_aux)}")
      return
    for (key, prefix_child), (_, full_child) in zip(prefix_children, full_children):
      walk((*path, key), prefix_child, full_child)

  walk((), prefix_tree, full_tree)
  return errors


def equality_errors(tree1: Any, tree2: Any, is_leaf: Callable[[Any], bool] | None = None,
                    leaf_name: str | None = None):
  """The structural differences of two pytrees, as ``(key_path, thing1, thing2,
  explanation)`` tuples (JAX's ``equality_errors``): e.g. ``((DictKey('a'),), "<class
  'float'>", "<class 'tuple'>", 'their Python types differ')``. Each mismatching subtree is
  reported once, not its insides. ``leaf_name`` names leaves (default: their type)."""
  def describe(t, is_node):
    return str(type(t)) if is_node or leaf_name is None else leaf_name

  def walk(path, t1, t2):
    if is_leaf is not None and (is_leaf(t1) or is_leaf(t2)):
      n1 = n2 = None
    else:
      n1 = default_registry.flatten_one_level_with_keys(t1)
      n2 = default_registry.flatten_one_level_with_keys(t2)
    if n1 is None and n2 is None:
      return  # two leaves: not a structure difference
    if n1 is None or n2 is None or type(t1) is not type(t2):
      yield (path, describe(t1, n1 is not None), describe(t2, n2 is not None),
             "their Python types differ")
      return
    (c1, meta1), (c2, meta2) = n1, n2
    c1, c2 = list(c1), list(c2)
    if isinstance(t1, (list, tuple)) and len(c1) != len(c2):
      yield (path, f"{type(t1).__name__} of length {len(c1)}",
             f"{type(t2).__name__} of length {len(c2)}", "the lengths do not match")
      return
    if len(c1) != len(c2):
      try:
        diff = " ".join(repr(getattr(k, "key", k)) for k in
                        {k for k, _ in c1}.symmetric_difference({k for k, _ in c2}))
      except TypeError:
        diff = ""
      yield (path, f"{type(t1)} with {len(c1)} child{'ren' if len(c1) > 1 else ''}",
             f"{type(t2)} with {len(c2)} child{'ren' if len(c2) > 1 else ''}",
             "the numbers of children do not match"
             + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
      return
    if meta1 != meta2:
      yield (path, f"{type(t1)} with pytree metadata {meta1}",
             f"{type(t2)} with pytree metadata {meta2}",
             "the pytree node metadata does not match")
      return
    for (k, x1), (_, x2) in zip(c1, c2):
      yield from walk((*path, k), x1, x2)

  yield from walk((), tree1, tree2)


def treedef_equality_errors(tree1: PyTreeDef, tree2: PyTreeDef):
  """``equality_errors`` of two treedefs (their leaves are called "pytree leaf")."""
  marker = object()
  return equality_errors(tree_unflatten(tree1, [marker] * tree1.num_leaves),
                         tree_unflatten(tree2, [marker] * tree2.num_leaves),
                         leaf_name="pytree leaf")


def _flatten_up_to(api: str, tree: Any, treedef: PyTreeDef, other: Any,
                   tree_name: str, other_name: str,
                   is_leaf: Callable[[Any], bool] | None) -> list[Any]:
  """``treedef.flatten_up_to(other)``, raising a readable ValueError when it fails.

  ``tree`` is the tree that ``treedef`` came from (flattened with ``is_leaf``); the error
  message names ``api`` and calls the two trees ``tree_name`` and ``other_name``.
  """
  try:
    return treedef.flatten_up_to(other)
  except (ValueError, TypeError) as e:
    cause = e
  try:
    other_structure = _short(tree_structure(other))
  except Exception:  # e.g. dict keys that cannot be sorted
    other_structure = f"<not a valid pytree: {type(other).__name__}>"
  width = max(len(tree_name), len(other_name)) + 2
  lines = [
      f"{api}: pytree structure error: {other_name} must have the pytree structure of "
      f"{tree_name}, or extend it "
      f"(a leaf of {tree_name} may stand for a whole subtree of {other_name}), but it "
      "does not.",
      f"  {tree_name + ':':<{width}}{_short(treedef)}",
      f"  {other_name + ':':<{width}}{other_structure}",
  ]
  try:
    found = _first_mismatch((), tree, other, is_leaf)
  except Exception:  # e.g. metadata whose == raises; fall back to the C++ message
    found = None
  if found is not None:
    path, in_tree, in_other = found
    where = f"key path {keystr(path)}" if path else "the root"
    lines.append(f"At {where}, {tree_name} has {in_tree} but {other_name} has "
                 f"{in_other}.")
    if "None" in (in_tree, in_other):
      lines.append("(None is a pytree node with no children, not a leaf.)")
  else:
    lines.append(f"({cause})")
  raise ValueError("\n".join(lines)) from None


# ---------------------------------------------------------------------------------------
# Registering node types


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[Any, Any]], Hashable]]
                            | None = None,
) -> None:
  """Makes instances of ``nodetype`` pytree nodes instead of leaves.

  Args:
    nodetype: the class. Registering a class twice raises ``ValueError``.
    flatten_func: ``obj -> (children, aux_data)``. Children are flattened further;
      ``aux_data`` is static, kept in the treedef, and must be hashable and comparable
      since ``jit`` caches on treedefs.
    unflatten_func: ``(aux_data, children) -> obj``.
    flatten_with_keys_func: optional ``obj -> (((key, child), ...), aux_data)`` used by
      the ``*_with_path`` functions; without it children are keyed by position.
  """
  for registry in _REGISTRIES:
    registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)
  _registry[nodetype] = _RegistryEntry(flatten_func, unflatten_func)


def register_pytree_node_class(cls: Typ) -> Typ:
  """Class decorator: registers ``cls`` using its own flatten/unflatten methods.

  ``cls`` defines ``tree_flatten(self) -> (children, aux_data)`` and the classmethod
  ``tree_unflatten(cls, aux_data, children)``. Returns ``cls``.
  """
  register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
  return cls


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[Any, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
  """Like ``register_pytree_node``, with a flatten function that also names children.

  ``flatten_with_keys(obj)`` returns ``(((key, child), ...), aux_data)``; the keys show up
  in ``tree_flatten_with_path`` and in error messages. ``flatten_func``, if given, must
  return the same children without keys and is used by plain flattening.
  """
  if flatten_func is None:
    def flatten_func(obj):
      keyed_children, aux = flatten_with_keys(obj)
      return [child for _, child in keyed_children], aux
  register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
  """Class decorator: like ``register_pytree_node_class``, using ``tree_flatten_with_keys``.

  A ``tree_flatten`` method, if present, is used for plain flattening.
  """
  flatten_func = (operator.methodcaller("tree_flatten")
                  if hasattr(cls, "tree_flatten") else None)
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten_func)
  return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
  """Registers a dataclass-like type whose fields are children or static metadata.

  ``data_fields`` become children (arrays, or pytrees of them; traced by ``jit``);
  ``meta_fields`` are static and must be hashable. Instances are rebuilt with
  ``nodetype(**fields)``. For a ``dataclasses.dataclass`` both lists may be omitted, so
  that this works as a bare decorator: fields declared with
  ``dataclasses.field(metadata=dict(static=True))`` are meta fields, the others are data
  fields, and ``drop_fields`` names fields to leave out of both. Returns ``nodetype``.

  Raises:
    TypeError: only one of ``data_fields``/``meta_fields`` is given, or neither for a
      class that is not a dataclass.
    ValueError: the fields overlap, or (for a dataclass) they are not exactly the
      fields that ``__init__`` takes.
  """
  if data_fields is None or meta_fields is None:
    if data_fields is not None or meta_fields is not None:
      raise TypeError(
          "register_dataclass: data_fields and meta_fields must both be specified when "
          f"either is specified. Got data_fields={data_fields!r} meta_fields={meta_fields!r}.")
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError(
          "register_dataclass: data_fields and meta_fields are required when nodetype is "
          f"not a dataclass. Got nodetype={nodetype!r}")
    fields = [f for f in dataclasses.fields(nodetype) if f.name not in drop_fields]
    data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    meta_fields = [f.name for f in fields if f.metadata.get("static", False)]

  # Copy to tuples so that later mutation of the caller's lists changes nothing.
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
  if overlap := set(data_fields) & set(meta_fields):
    raise ValueError(
        "register_dataclass: data_fields and meta_fields must not overlap. Overlapping "
        f"fields: {overlap}")
  if dataclasses.is_dataclass(nodetype):
    # Unflattening calls the constructor with every listed field as a keyword, so the
    # listed fields must be exactly those that __init__ accepts.
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
    init_fields -= set(drop_fields)
    listed = set(data_fields) | set(meta_fields)
    if listed != init_fields:
      problems = []
      if missing := init_fields - listed:
        problems.append(f"Missing fields: {missing} (list them, or name them in "
                        "drop_fields)")
      if unexpected := listed - init_fields:
        problems.append(f"Unexpected fields: {unexpected} (__init__ does not take them)")
      raise ValueError(
          "register_dataclass: data_fields and meta_fields must include all dataclass "
          f"fields with ``init=True`` and only them (dataclass {nodetype.__name__}). "
          + ". ".join(problems) + ".")

  for registry in _REGISTRIES:
    registry.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
  _registry[nodetype] = _RegistryEntry(
      lambda node: (tuple(getattr(node, f) for f in data_fields),
                    tuple(getattr(node, f) for f in meta_fields)),
      lambda aux, children: nodetype(**dict(zip(meta_fields, aux)),
                                     **dict(zip(data_fields, children))))
  return nodetype


def register_static(cls: Typ) -> Typ:
  """Registers ``cls`` as a node with no children: its instances are static data.

  ``jit`` then treats them as part of the cache key, so they must be hashable.
  Returns ``cls``.
  """
  register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
  return cls


# OrderedDict keeps its own key order (it is part of the structure); defaultdict sorts its
# keys like dict and keeps `default_factory` as static data. Both are written in Python
# because the C++ registry only knows the builtin kinds.
register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple((DictKey(k), v) for k, v in d.items()), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda d: (tuple(d.values()), tuple(d)),
)


def _defaultdict_flatten(d):
  keys = tuple(sorted(d))
  return tuple(d[k] for k in keys), (d.default_factory, keys)


def _defaultdict_flatten_with_keys(d):
  keys = tuple(sorted(d))
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _defaultdict_flatten_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _defaultdict_flatten,
)


# ---------------------------------------------------------------------------------------
# Partial


class _PartialFunc:
  """Holds a ``functools.partial`` that is the function of a ``Partial``.

  ``functools.partial(p, *args)`` with ``p`` a partial merges the two levels into one
  (CPython does this for any object called like a partial). For a ``Partial`` that would
  turn the inner partial's bound arguments into children of the outer one, so we hide the
  inner partial behind this plain callable. Calls, hashing and equality go to the inner
  partial, and so do attribute reads (``p.func.args`` still works).
  """

  __slots__ = ("partial",)

  def __init__(self, partial: functools.partial):
    self.partial = partial

  def __call__(self, *args, **kwargs):
    return self.partial(*args, **kwargs)

  def __getattr__(self, name):
    if name == "partial":  # not set yet (e.g. while unpickling): avoid recursing
      raise AttributeError(name)
    return getattr(self.partial, name)

  def __hash__(self):
    return hash(self.partial)

  def __eq__(self, other):
    if isinstance(other, _PartialFunc):
      other = other.partial
    return self.partial == other

  def __repr__(self):
    return repr(self.partial)


class Partial(functools.partial):
  """A ``functools.partial`` that is a pytree, so it can be passed through ``jit`` & co.

  The bound positional and keyword arguments are the children (traced like any other
  argument); the function is static data, part of the treedef and thus of ``jit``'s cache
  key. ``Partial(f)`` with no arguments makes any function a valid pytree argument. A
  ``Partial`` of a ``Partial`` keeps the two levels apart: only the outer one's arguments
  are its children, and the inner one is (static) function.
  """

  def __new__(cls, func, *args, **kwargs):
    if isinstance(func, functools.partial):
      func = _PartialFunc(func)
    return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)


# ---------------------------------------------------------------------------------------
# Key paths


def keystr(keys: Sequence[Any], *, simple: bool = False, separator: str = "") -> str:
  """Formats a key path such as ``(DictKey('a'), SequenceKey(0))`` as ``"['a'][0]"``.

  With ``simple=True`` each entry is written bare (``a``, ``0``), which reads better
  with a ``separator`` such as ``"/"`` but can be ambiguous.
  """
  return separator.join(_simple_key(k) if simple else str(k) for k in keys)


def _simple_key(key: Any) -> str:
  if isinstance(key, SequenceKey):
    return str(key.idx)
  if isinstance(key, DictKey):
    return str(key.key)
  if isinstance(key, GetAttrKey):
    return str(key.name)
  if isinstance(key, FlattenedIndexKey):
    return str(key.key)
  return str(key)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
  """Like ``tree_flatten``, but each leaf comes as ``(key_path, leaf)``.

  With ``is_leaf_takes_path=True``, ``is_leaf`` is called as ``is_leaf(path, x)``.
  """
  if is_leaf is not None and not is_leaf_takes_path:
    is_leaf_plain = is_leaf
    is_leaf = lambda _, x: is_leaf_plain(x)
  return default_registry.flatten_with_path(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False
                          ) -> list[tuple[tuple[Any, ...], Any]]:
  """The ``(key_path, leaf)`` pairs of ``tree_flatten_with_path``."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """Like ``tree_map``, but calls ``f(key_path, x, *ys)``."""
  keyed_leaves, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  columns = [[path for path, _ in keyed_leaves], [leaf for _, leaf in keyed_leaves]]
  # The mismatch diagnosis calls is_leaf(x); it can only do so for the one-argument kind.
  plain_is_leaf = None if is_leaf_takes_path else is_leaf
  for i, other in enumerate(rest):
    columns.append(_flatten_up_to("tree_map_with_path", tree, treedef, other,
                                  "tree", f"rest[{i}]", plain_is_leaf))
  return treedef.unflatten(f(*xs) for xs in zip(*columns))
