"""Trax's tree utilities and signatures: plain Python over dicts, lists and tuples.

These keep Trax's semantics, which differ from ``hlox.tree_util``'s: a flat list without a
treedef, ``None`` leaves skipped by default, namedtuples rebuilt by type, ``tree_unflatten``
returning the unused rest of the flat list. They import nothing but NumPy, so both backends
(and code that never touches XLA) can use them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["nested_map", "nested_map_multiarg", "nested_zip", "nested_stack", "tree_flatten",
           "tree_leaves", "tree_unflatten", "ShapeDtype", "signature"]


def _is_namedtuple_instance(x):
  return isinstance(x, tuple) and hasattr(x, "_fields")


def _is_at_level(obj, level):
  """Whether every path from ``obj`` reaches a leaf after exactly ``level`` steps."""
  is_leaf = not isinstance(obj, (list, tuple, dict))
  if level == 0 or is_leaf:
    return (level == 0) == is_leaf
  elems = obj.values() if isinstance(obj, dict) else obj
  return bool(elems) and all(_is_at_level(x, level - 1) for x in elems)


def _is_made_of_nones(obj):
  # An empty container holds no None, so it is not "made of Nones".
  elems = tree_flatten(obj)
  return bool(elems) and all(x is None for x in elems)


def nested_map(f, obj, level=0, ignore_nones=True):
  """``f`` applied inside the dicts/lists/tuples of ``obj``, stopping ``level`` steps above
  the leaves; subtrees made only of ``None`` stay ``None`` when ``ignore_nones``."""
  if _is_at_level(obj, level):
    if ignore_nones and _is_made_of_nones(obj):
      return None
    return f(obj)
  if _is_namedtuple_instance(obj):
    return type(obj)(*nested_map(f, list(obj), level=level, ignore_nones=ignore_nones))
  if isinstance(obj, list):
    return [nested_map(f, y, level=level, ignore_nones=ignore_nones) for y in obj]
  if isinstance(obj, tuple):
    return tuple(nested_map(f, y, level=level, ignore_nones=ignore_nones) for y in obj)
  if isinstance(obj, dict):
    return {k: nested_map(f, v, level=level, ignore_nones=ignore_nones)
            for k, v in obj.items()}
  raise ValueError(f"nested_map: no pattern matches {obj!r} at level {level}")


def nested_map_multiarg(f, *objs, ignore_nones=True):
  """``f(*leaves)`` over several structures shaped like ``objs[0]``."""
  first = objs[0]
  if isinstance(first, list):
    return [nested_map_multiarg(f, *[o[i] for o in objs], ignore_nones=ignore_nones)
            for i in range(len(first))]
  if isinstance(first, tuple):
    out = [nested_map_multiarg(f, *[o[i] for o in objs], ignore_nones=ignore_nones)
           for i in range(len(first))]
    return type(first)(*out) if _is_namedtuple_instance(first) else tuple(out)
  if isinstance(first, dict):
    return {k: nested_map_multiarg(f, *[o[k] for o in objs], ignore_nones=ignore_nones)
            for k in first}
  if ignore_nones and _is_made_of_nones(objs):
    return None
  return f(*objs)


def nested_zip(objs):
  """One structure whose leaves are tuples of the matching leaves of each of ``objs``."""
  if not isinstance(objs, (list, tuple)):
    raise TypeError(f"nested_zip: expected a list or tuple of structures, got "
                    f"{type(objs).__name__}")
  if not objs:
    raise ValueError("nested_zip: cannot zip an empty sequence")
  if _is_at_level(objs, 1):
    return tuple(objs)
  first = objs[0]
  if _is_namedtuple_instance(first):
    return type(first)(*nested_zip([list(o) for o in objs]))
  if isinstance(first, list):
    return [nested_zip([o[i] for o in objs]) for i in range(len(first))]
  if isinstance(first, tuple):
    return nested_zip([list(o) for o in objs])
  if isinstance(first, dict):
    return {k: nested_zip([o[k] for o in objs]) for k in first}
  raise ValueError(f"nested_zip: no pattern matches {first!r}")


def nested_stack(objs, axis=0, np_module=np):
  """The arrays of several equally shaped structures stacked along ``axis``, leaf by leaf."""
  return nested_map(lambda x: np_module.stack(x, axis=axis), nested_zip(objs), level=1)


def tree_flatten(tree):
  """The leaves of ``tree`` (dict values, list and tuple items) as a flat list."""
  if isinstance(tree, (list, tuple)):
    out = []
    for t in tree:
      out.extend(tree_flatten(t))
    return out
  if isinstance(tree, dict):
    out = []
    for v in tree.values():
      out.extend(tree_flatten(v))
    return out
  return [tree]


def tree_leaves(tree, ignore_nones=True):
  """``tree_flatten(tree)``, without the ``None`` leaves when ``ignore_nones``."""
  return [x for x in tree_flatten(tree) if not ignore_nones or x is not None]


def tree_unflatten(flat, tree, copy_from_tree=None):
  """``(new_tree, rest_of_flat)``: ``tree``'s structure filled from ``flat``, and the leaves
  of ``flat`` left over. Subtrees equal to an element of ``copy_from_tree`` are kept from
  ``tree`` without consuming leaves (Trax uses ``[()]`` for weightless layers)."""
  if copy_from_tree is not None:
    for el in copy_from_tree:
      try:
        if tree == el:
          return tree, flat
      except (TypeError, ValueError):
        # Comparing an array with another object may refuse to give one bool.
        continue
  if isinstance(tree, (list, tuple)):
    new_tree, rest = [], flat
    for t in tree:
      new_t, rest = tree_unflatten(rest, t, copy_from_tree=copy_from_tree)
      new_tree.append(new_t)
    if isinstance(tree, tuple):
      new_tree = type(tree)(*new_tree) if _is_namedtuple_instance(tree) else tuple(new_tree)
    return new_tree, rest
  if isinstance(tree, dict):
    new_tree, rest = {}, flat
    for k in tree:
      new_tree[k], rest = tree_unflatten(rest, tree[k], copy_from_tree=copy_from_tree)
    return new_tree, rest
  if not len(flat):
    raise ValueError("tree_unflatten: the flat list has fewer leaves than the tree")
  return flat[0], flat[1:]


class ShapeDtype:
  """An array abstracted to its shape and dtype (Trax's input/output signatures)."""
  __slots__ = ("shape", "dtype")

  def __init__(self, shape, dtype=np.float32):
    if isinstance(shape, list):
      shape = tuple(shape)
    if not isinstance(shape, tuple):
      raise TypeError(f"ShapeDtype: shape must be a tuple or list, got {shape!r}")
    self.shape = shape
    try:
      self.dtype = np.dtype(dtype)
    except TypeError:  # e.g. typed PRNG keys' "key<fry>": kept as given
      self.dtype = dtype

  @property
  def ndim(self):
    return len(self.shape)

  @property
  def size(self):
    return int(np.prod(self.shape, dtype=np.int64))

  def __eq__(self, other):
    return (isinstance(other, ShapeDtype) and self.shape == other.shape
            and self.dtype == other.dtype)

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash((self.shape, self.dtype))

  def __repr__(self):
    return f"ShapeDtype{{shape:{self.shape}, dtype:{self.dtype}}}"

  def __len__(self):
    # Trax counts a single signature as one input.
    return 1

  def as_tuple(self):
    return self.shape, self.dtype

  def replace(self, **kwargs):
    """A copy with ``shape`` and/or ``dtype`` replaced."""
    return ShapeDtype(kwargs.pop("shape", self.shape), kwargs.pop("dtype", self.dtype))


def signature(obj):
  """``ShapeDtype``s in the nested structure of ``obj`` (anything with shape and dtype)."""
  if isinstance(obj, (list, tuple)):
    out = [signature(x) for x in obj]
    if _is_namedtuple_instance(obj):
      return type(obj)(*out)
    return tuple(out) if isinstance(obj, tuple) else out
  if isinstance(obj, dict):
    return {k: signature(v) for k, v in obj.items()}
  if isinstance(obj, (int, float, bool, complex)) and not hasattr(obj, "dtype"):
    return ShapeDtype((), np.asarray(obj).dtype)
  return ShapeDtype(tuple(int(d) for d in obj.shape), obj.dtype)
