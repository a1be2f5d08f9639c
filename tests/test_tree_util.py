"""Tests for hlox.tree_util: JAX's pytree semantics on hlox's own registry."""

import collections
import dataclasses
import functools
import importlib.util
import operator
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from hlox import tree_util as tu


# ---------------------------------------------------------------------------------------
# Types used across the tests. Registration is global and permanent, so each is
# registered exactly once, here.

Point = collections.namedtuple("Point", ["x", "y"])


class Box:
  """A custom node registered with plain functions; `label` is static."""

  def __init__(self, value, label):
    self.value = value
    self.label = label

  def __eq__(self, other):
    return type(other) is Box and (self.value, self.label) == (other.value, other.label)

  def __repr__(self):
    return f"Box({self.value!r}, {self.label!r})"


tu.register_pytree_node(Box, lambda b: ((b.value,), b.label),
                        lambda label, children: Box(children[0], label))


@tu.register_pytree_node_class
class Pair:
  def __init__(self, a, b):
    self.a, self.b = a, b

  def tree_flatten(self):
    return (self.a, self.b), "pair"

  @classmethod
  def tree_unflatten(cls, aux, children):
    assert aux == "pair"
    return cls(*children)

  def __eq__(self, other):
    return type(other) is Pair and (self.a, self.b) == (other.a, other.b)


@tu.register_pytree_with_keys_class
class Named:
  def __init__(self, w, b):
    self.w, self.b = w, b

  def tree_flatten_with_keys(self):
    return ((tu.GetAttrKey("w"), self.w), (tu.GetAttrKey("b"), self.b)), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)


@tu.register_dataclass
@dataclasses.dataclass
class Layer:
  w: object
  b: object
  activation: str = dataclasses.field(default="relu", metadata=dict(static=True))


@functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["n"])
@dataclasses.dataclass(frozen=True)
class Frozen:
  x: object
  n: int


class NotADataclass:
  def __init__(self, x, n):
    self.x, self.n = x, n


tu.register_dataclass(NotADataclass, data_fields=["x"], meta_fields=["n"])


@tu.register_static
@dataclasses.dataclass(frozen=True)
class Config:
  depth: int


# ---------------------------------------------------------------------------------------
# Flatten / unflatten


def test_flatten_builtin_containers():
  leaves, treedef = tu.tree_flatten(((1, 2), {"a": 3}, [4, None, (5,)]))
  assert leaves == [1, 2, 3, 4, 5]
  assert str(treedef) == "PyTreeDef(((*, *), {'a': *}, [*, None, (*,)]))"
  assert treedef.num_leaves == 5
  assert tu.tree_unflatten(treedef, leaves) == ((1, 2), {"a": 3}, [4, None, (5,)])


def test_leaf_and_empty_trees():
  assert tu.tree_flatten(7) == ([7], tu.tree_structure(0))
  assert str(tu.tree_structure(7)) == "PyTreeDef(*)"
  for empty in [(), [], {}, None]:
    leaves, treedef = tu.tree_flatten(empty)
    assert leaves == []
    assert tu.tree_unflatten(treedef, []) == empty


def test_none_is_a_node_not_a_leaf():
  assert tu.tree_leaves([None, 1, (None,)]) == [1]
  treedef = tu.tree_structure(None)
  assert str(treedef) == "PyTreeDef(None)"
  assert treedef.num_leaves == 0 and treedef.num_nodes == 1
  assert tu.treedef_is_leaf(treedef)            # JAX: a single node
  assert not tu.treedef_is_strict_leaf(treedef)  # but not an actual leaf
  assert tu.tree_map(lambda x: x + 1, (None, 1)) == (None, 2)
  # is_leaf can turn None into a leaf.
  assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]


def test_dict_children_are_in_sorted_key_order():
  d = {"b": 2, "a": 1, "c": {"y": 4, "x": 3}}
  leaves, treedef = tu.tree_flatten(d)
  assert leaves == [1, 2, 3, 4]
  assert str(treedef) == "PyTreeDef({'a': *, 'b': *, 'c': {'x': *, 'y': *}})"
  # As in JAX, unflattening builds the dict in sorted key order: the original insertion
  # order is not part of the structure ...
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert rebuilt == d
  assert list(rebuilt) == ["a", "b", "c"]
  assert list(rebuilt["c"]) == ["x", "y"]
  # ... so dicts that differ only in insertion order have equal treedefs.
  other = tu.tree_structure({"c": {"x": 0, "y": 0}, "a": 0, "b": 0})
  assert other == treedef and hash(other) == hash(treedef)


def test_dict_keys_must_be_sortable():
  with pytest.raises((TypeError, ValueError)):
    tu.tree_flatten({1: "a", "b": 2})


def test_ordered_dict_keeps_its_order():
  od = collections.OrderedDict([("b", 1), ("a", 2)])
  leaves, treedef = tu.tree_flatten(od)
  assert leaves == [1, 2]
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is collections.OrderedDict
  assert list(rebuilt.items()) == [("b", 1), ("a", 2)]
  # Key order is part of an OrderedDict's structure, and it differs from a dict's.
  assert treedef != tu.tree_structure(collections.OrderedDict([("a", 1), ("b", 2)]))
  assert treedef != tu.tree_structure({"a": 1, "b": 2})


def test_defaultdict():
  dd = collections.defaultdict(list, {"b": 1, "a": {"d": 2, "c": 3}})
  leaves, treedef = tu.tree_flatten(dd)
  assert leaves == [3, 2, 1]
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is collections.defaultdict
  assert rebuilt.default_factory is list
  assert rebuilt == dd and list(rebuilt) == ["a", "b"]
  assert treedef != tu.tree_structure(collections.defaultdict(int, dd))


def test_namedtuple():
  p = Point(1, (2, 3))
  leaves, treedef = tu.tree_flatten(p)
  assert leaves == [1, 2, 3]
  rebuilt = tu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is Point and rebuilt == p
  assert treedef != tu.tree_structure((1, (2, 3)))
  assert "Point" in str(treedef)


def test_unflatten_accepts_any_iterable():
  treedef = tu.tree_structure([1, (2, 3)])
  assert tu.tree_unflatten(treedef, iter("abc")) == ["a", ("b", "c")]


@pytest.mark.parametrize("n", [2, 4])
def test_unflatten_with_wrong_number_of_leaves(n):
  treedef = tu.tree_structure([1, (2, 3)])
  with pytest.raises(ValueError, match="leaves"):
    tu.tree_unflatten(treedef, range(n))


def test_is_leaf_stops_descent():
  tree = {"a": (1, 2), "b": [3, (4, 5)]}
  is_pair = lambda x: isinstance(x, tuple) and len(x) == 2
  leaves, treedef = tu.tree_flatten(tree, is_leaf=is_pair)
  assert leaves == [(1, 2), 3, (4, 5)]
  assert treedef.num_leaves == 3
  assert tu.tree_unflatten(treedef, leaves) == tree
  assert tu.tree_structure(tree, is_leaf=is_pair) == treedef
  # is_leaf sees the root too.
  assert tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, dict)) == [tree]


def test_flatten_fast_matches_tree_flatten():
  tree = ((1, 2.0), {"a": None, "b": [3]})
  assert tu.flatten_fast(tree) == tu.tree_flatten(tree)


def test_all_leaves():
  assert tu.all_leaves([1, 2, "x"])
  assert not tu.all_leaves([1, (2,)])
  assert not tu.all_leaves([None])
  assert tu.all_leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple))


# ---------------------------------------------------------------------------------------
# Round trips over generated trees

leaf_values = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3))


def _containers(children):
  keys = st.text(alphabet="abcdef", min_size=1, max_size=3)
  return st.one_of(
      st.lists(children, max_size=4),
      st.lists(children, max_size=4).map(tuple),
      st.dictionaries(keys, children, max_size=4),
      st.tuples(children, children).map(lambda xy: Point(*xy)),
      st.dictionaries(keys, children, max_size=3).map(collections.OrderedDict),
      st.tuples(children, st.sampled_from(["p", "q"])).map(lambda vl: Box(*vl)),
      st.tuples(children, children).map(lambda ab: Layer(*ab)),
      st.just(None),
  )


pytrees = st.recursive(leaf_values, _containers, max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(pytrees)
def test_round_trip(tree):
  leaves, treedef = tu.tree_flatten(tree)
  assert len(leaves) == treedef.num_leaves
  assert tu.tree_unflatten(treedef, leaves) == tree
  assert tu.tree_structure(tu.tree_unflatten(treedef, leaves)) == treedef
  # Unflattening with other leaves and flattening again gives them back unchanged.
  tokens = [object() for _ in leaves]
  again, treedef2 = tu.tree_flatten(tu.tree_unflatten(treedef, tokens))
  assert treedef2 == treedef and all(a is b for a, b in zip(again, tokens))
  assert tu.tree_map(lambda x: x, tree) == tree
  assert tu.tree_leaves(tree) == leaves
  assert [leaf for _, leaf in tu.tree_leaves_with_path(tree)] == leaves


@settings(max_examples=100, deadline=None)
@given(pytrees)
def test_children_rebuild_the_treedef(tree):
  treedef = tu.tree_structure(tree)
  if tu.treedef_is_strict_leaf(treedef):
    return
  children = tu.treedef_children(treedef)
  assert sum(c.num_leaves for c in children) == treedef.num_leaves
  assert sum(c.num_nodes for c in children) + 1 == treedef.num_nodes


@settings(max_examples=100, deadline=None)
@given(pytrees, pytrees)
def test_treedef_equality_and_hash_agree(a, b):
  ta, tb = tu.tree_structure(a), tu.tree_structure(b)
  # Same structure with other leaves: equal treedefs, equal hashes.
  relabelled = tu.tree_structure(tu.tree_unflatten(ta, range(ta.num_leaves)))
  assert relabelled == ta and hash(relabelled) == hash(ta)
  if ta == tb:
    assert hash(ta) == hash(tb)
    assert tu.tree_structure(tu.tree_map(lambda x, y: y, a, b)) == ta


# ---------------------------------------------------------------------------------------
# Treedefs


def test_treedef_api():
  treedef = tu.tree_structure((1, {"a": 2}))
  assert repr(treedef) == "PyTreeDef((*, {'a': *}))"
  assert treedef.num_leaves == 2
  assert treedef.num_nodes == 4  # tuple, leaf, dict, leaf
  assert treedef.unflatten(["x", "y"]) == ("x", {"a": "y"})
  assert treedef.children() == [tu.tree_structure(0), tu.tree_structure({"a": 0})]
  assert tu.treedef_children(treedef) == treedef.children()
  assert tu.treedef_tuple(treedef.children()) == treedef
  assert tu.treedef_is_leaf(tu.tree_structure(0))
  assert not tu.treedef_is_leaf(treedef)


def test_treedefs_hash_and_compare():
  a = tu.tree_structure((1, {"a": 2}))
  b = tu.tree_structure(("x", {"a": 0.5}))
  assert a == b and hash(a) == hash(b)
  assert len({a, b, tu.tree_structure([1, {"a": 2}])}) == 2
  assert a != tu.tree_structure((1, {"b": 2}))
  assert a != tu.tree_structure((1, {"a": None}))
  assert tu.tree_structure(Box(1, "p")) != tu.tree_structure(Box(1, "q"))
  assert tu.tree_structure(Box(1, "p")) == tu.tree_structure(Box(2, "p"))


def test_treedef_pickles():
  treedef = tu.tree_structure({"a": [1, None], "b": Point(1, 2)})
  assert pickle.loads(pickle.dumps(treedef)) == treedef


def test_private_registry_is_independent_of_jaxlib_default():
  from jaxlib._jax import pytree
  jaxlib_default = pytree.default_registry()
  assert tu.default_registry is not jaxlib_default
  # Our registrations do not leak into the registry JAX itself uses.
  assert jaxlib_default.flatten(Box(1, "p"))[0] == [Box(1, "p")]
  assert tu.tree_leaves(Box(1, "p")) == [1]


# ---------------------------------------------------------------------------------------
# Custom nodes


def test_register_pytree_node():
  tree = [Box((1, 2), "p"), 3]
  leaves, treedef = tu.tree_flatten(tree)
  assert leaves == [1, 2, 3]
  assert str(treedef) == "PyTreeDef([CustomNode(Box[p], [(*, *)]), *])"
  assert tu.tree_unflatten(treedef, leaves) == tree
  assert tu.tree_map(lambda x: x * 10, tree) == [Box((10, 20), "p"), 30]


def test_register_twice_raises():
  with pytest.raises(ValueError, match="Duplicate"):
    tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)


def test_register_pytree_node_class():
  leaves, treedef = tu.tree_flatten(Pair(1, [2]))
  assert leaves == [1, 2]
  assert tu.tree_unflatten(treedef, leaves) == Pair(1, [2])


def test_register_with_keys_class_paths():
  paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path({"l": Named(1, 2)})]
  assert paths == ["['l'].w", "['l'].b"]


def test_register_static():
  leaves, treedef = tu.tree_flatten((Config(3), 1))
  assert leaves == [1]
  assert tu.tree_unflatten(treedef, [5]) == (Config(3), 5)
  assert treedef != tu.tree_structure((Config(4), 1))


def test_register_dataclass_as_decorator():
  layer = Layer(w=1, b=(2, 3), activation="tanh")
  leaves, treedef = tu.tree_flatten(layer)
  assert leaves == [1, 2, 3]
  assert str(treedef) == "PyTreeDef(CustomNode(Layer[('tanh',)], [*, (*, *)]))"
  assert tu.tree_unflatten(treedef, leaves) == layer
  # Meta fields are static: they are part of the structure.
  assert treedef != tu.tree_structure(Layer(w=1, b=(2, 3)))
  assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(layer)] == [
      ".w", ".b[0]", ".b[1]"]


def test_register_dataclass_with_explicit_fields():
  leaves, treedef = tu.tree_flatten(Frozen(x=[1, 2], n=3))
  assert leaves == [1, 2]
  assert tu.tree_unflatten(treedef, [5, 6]) == Frozen(x=[5, 6], n=3)
  leaves, treedef = tu.tree_flatten(NotADataclass(x=(1,), n=2))
  rebuilt = tu.tree_unflatten(treedef, [7])
  assert type(rebuilt) is NotADataclass and rebuilt.x == (7,) and rebuilt.n == 2


def test_register_dataclass_errors():
  @dataclasses.dataclass
  class D:
    a: int
    b: int

  with pytest.raises(TypeError, match="both"):
    tu.register_dataclass(D, data_fields=["a"])
  with pytest.raises(TypeError, match="are required when nodetype is not a dataclass"):
    tu.register_dataclass(NotADataclass)
  with pytest.raises(ValueError, match=r"Missing fields: \{'b'\}"):
    tu.register_dataclass(D, data_fields=["a"], meta_fields=[])
  with pytest.raises(ValueError, match=r"Unexpected fields: \{'c'\}"):
    tu.register_dataclass(D, data_fields=["a", "b"], meta_fields=["c"])
  with pytest.raises(ValueError, match=r"must not overlap. Overlapping fields: \{'a'\}"):
    tu.register_dataclass(D, data_fields=["a", "b"], meta_fields=["a"])


def test_register_dataclass_drop_fields():
  @dataclasses.dataclass
  class WithCache:
    x: object
    cache: object = None

  tu.register_dataclass(WithCache, drop_fields=["cache"])
  leaves, treedef = tu.tree_flatten(WithCache(x=1, cache="dropped"))
  assert leaves == [1]
  assert tu.tree_unflatten(treedef, [2]) == WithCache(x=2)


# ---------------------------------------------------------------------------------------
# Partial


def _add(*args, **kwargs):
  return sum(args) + sum(kwargs.values())


def test_partial_is_a_pytree():
  p = tu.Partial(_add, 1, 2, c=3)
  assert isinstance(p, functools.partial)
  assert p(4) == 10
  leaves, treedef = tu.tree_flatten(p)
  assert leaves == [1, 2, 3]
  rebuilt = tu.tree_unflatten(treedef, [10, 20, 30])
  assert type(rebuilt) is tu.Partial and rebuilt.func is _add
  assert rebuilt.args == (10, 20) and rebuilt.keywords == {"c": 30}
  assert rebuilt() == 60
  assert tu.tree_map(lambda x: x * 2, p)(0) == 12


def test_partial_works_as_jit_argument():
  # jit caches on (treedef, leaf avals): the function is static, so treedefs are equal
  # and hashable exactly when the functions are the same.
  t1 = tu.flatten_fast(tu.Partial(_add, 1.0))[1]
  t2 = tu.flatten_fast(tu.Partial(_add, 2.0))[1]
  assert t1 == t2 and hash(t1) == hash(t2)
  assert t1 != tu.flatten_fast(tu.Partial(operator.add, 1.0))[1]
  assert tu.tree_leaves(tu.Partial(_add)) == []


def test_partial_of_partial_keeps_levels_apart():
  inner = tu.Partial(_add, 1)
  outer = tu.Partial(inner, 2, k=3)
  assert outer(4) == 10
  # Only the outer arguments are children; the inner Partial is the (static) function.
  assert tu.tree_leaves(outer) == [2, 3]
  rebuilt = tu.tree_map(lambda x: x * 100, outer)
  assert rebuilt(0) == 1 + 200 + 300
  assert rebuilt.func == inner
  assert rebuilt.func.args == (1,)
  # Also for a plain functools.partial inside.
  outer2 = tu.Partial(functools.partial(_add, 5), 6)
  assert tu.tree_leaves(outer2) == [6] and outer2(1) == 12


# ---------------------------------------------------------------------------------------
# tree_map & co


def test_tree_map_several_trees():
  x = ((1, 2), {"a": 3})
  y = ((10, 20), {"a": 30})
  assert tu.tree_map(lambda a, b: a + b, x, y) == ((11, 22), {"a": 33})
  assert tu.tree_map(lambda a, b, c: a + b + c, x, y, y) == ((21, 42), {"a": 63})


def test_tree_map_first_tree_may_be_a_prefix():
  x = ((1, 2), (3, 4, 5))
  y = (([3], None), ({"foo": "bar"}, 7, [5, 6]))
  out = tu.tree_map(lambda *xs: xs, x, y)
  assert out == (((1, [3]), (2, None)), ((3, {"foo": "bar"}), (4, 7), (5, [5, 6])))


def test_tree_map_is_leaf():
  tree = {"a": [1, 2], "b": [3]}
  out = tu.tree_map(len, tree, is_leaf=lambda x: isinstance(x, list))
  assert out == {"a": 2, "b": 1}
  out = tu.tree_map(lambda xs, y: sum(xs) + y, tree, {"a": 10, "b": 20},
                    is_leaf=lambda x: isinstance(x, list))
  assert out == {"a": 13, "b": 23}


@pytest.mark.parametrize("tree,other,where", [
    (((1, 2), {"a": 3}), ((1, 2), {"b": 3}),
     "At key path [1], tree has a dict with keys ['a'] but rest[0] has a dict with "
     "keys ['b']."),
    ([1, 2], [1, 2, 3],
     "At the root, tree has a list of length 2 but rest[0] has a list of length 3."),
    ([1, 2], (1, 2), "At the root, tree has a list of length 2 but rest[0] has a tuple"),
    ({"x": [1, [2]]}, {"x": [1, 5]},
     "At key path ['x'][1], tree has a list of length 1 but rest[0] has a leaf of "
     "type int."),
    ((None,), (1,), "None is a pytree node"),
    (Box(1, "p"), Box(1, "q"), "metadata p"),
])
def test_tree_map_structure_mismatch_names_both_structures(tree, other, where):
  with pytest.raises(ValueError) as info:
    tu.tree_map(lambda *xs: None, tree, other)
  message = str(info.value)
  assert message.startswith("tree_map: pytree structure error: rest[0] must have the pytree "
                            "structure of tree")
  assert str(tu.tree_structure(tree)) in message
  assert str(tu.tree_structure(other)) in message
  assert where in message


def test_tree_map_mismatch_in_a_later_tree():
  with pytest.raises(ValueError, match=r"rest\[1\]") as info:
    tu.tree_map(lambda *xs: None, (1, 2), (1, 2), [1, 2])
  assert "PyTreeDef([*, *])" in str(info.value)


def test_tree_map_with_path():
  tree = {"a": [1, 2], "b": Point(3, 4)}
  out = tu.tree_map_with_path(lambda p, x: f"{tu.keystr(p)}={x}", tree)
  assert out == {"a": ["['a'][0]=1", "['a'][1]=2"], "b": Point("['b'].x=3", "['b'].y=4")}
  out = tu.tree_map_with_path(lambda p, x, y: x + y, tree, tree)
  assert out == {"a": [2, 4], "b": Point(6, 8)}
  with pytest.raises(ValueError, match="tree_map_with_path"):
    tu.tree_map_with_path(lambda p, x, y: x, tree, {"a": [1, 2]})


def test_flatten_with_path_and_keystr():
  tree = {"a": [1, (2, None)], "b": Box(3, "p")}
  pairs, treedef = tu.tree_flatten_with_path(tree)
  assert treedef == tu.tree_structure(tree)
  assert [leaf for _, leaf in pairs] == [1, 2, 3]
  assert [tu.keystr(p) for p, _ in pairs] == [
      "['a'][0]", "['a'][1][0]", "['b'][<flat index 0>]"]
  assert tu.keystr(pairs[1][0], simple=True, separator="/") == "a/1/0"
  # is_leaf, with and without the path.
  pairs, _ = tu.tree_flatten_with_path(tree, is_leaf=lambda x: isinstance(x, tuple))
  assert [leaf for _, leaf in pairs] == [1, (2, None), 3]
  pairs, _ = tu.tree_flatten_with_path(tree, is_leaf=lambda p, x: len(p) == 1,
                                       is_leaf_takes_path=True)
  assert [leaf for _, leaf in pairs] == [[1, (2, None)], Box(3, "p")]


def test_tree_reduce():
  tree = [1, (2, {"a": 3}), None]
  assert tu.tree_reduce(operator.add, tree) == 6
  assert tu.tree_reduce(operator.add, tree, 100) == 106
  assert tu.tree_reduce(lambda acc, x: acc + [x], tree, []) == [1, 2, 3]
  # None is a valid initializer (not confused with "no initializer").
  assert tu.tree_reduce(lambda acc, x: x if acc is None else acc, tree, None) == 1
  assert tu.tree_reduce(operator.add, (), 0) == 0
  with pytest.raises(TypeError):
    tu.tree_reduce(operator.add, ())
  assert tu.tree_reduce(lambda a, b: a + len(b), {"a": [1, 2], "b": [3]}, 0,
                        is_leaf=lambda x: isinstance(x, list)) == 3


def test_tree_all():
  assert tu.tree_all([1, (True, {"a": "x"})])
  assert not tu.tree_all([1, (0, {"a": "x"})])
  assert tu.tree_all([None, ()])
  assert not tu.tree_all({"a": []}, is_leaf=lambda x: isinstance(x, list))


def test_tree_transpose():
  outer = tu.tree_structure([0, 0, 0])
  inner = tu.tree_structure((0, {"b": 0}))
  tree = [(1, {"b": 2}), (3, {"b": 4}), (5, {"b": 6})]
  expected = ([1, 3, 5], {"b": [2, 4, 6]})
  assert tu.tree_transpose(outer, inner, tree) == expected
  assert tu.tree_transpose(outer, None, tree) == expected
  # Transposing back.
  assert tu.tree_transpose(inner, outer, expected) == tree
  with pytest.raises(TypeError, match="tree_transpose"):
    tu.tree_transpose(outer, inner, [(1, 2), (3, 4), (5, 6)])
  with pytest.raises(TypeError, match="tree_transpose"):
    tu.tree_transpose(outer, inner, [(1, {"b": 2})])
  # An empty outer structure.
  assert tu.tree_transpose(tu.tree_structure(()), inner, ()) == ((), {"b": ()})


class _SelfFlattening:
  """A node whose metadata is the treedef of its contents (it changes when they do)."""

  def __init__(self, contents):
    self.contents = contents

  def __eq__(self, other):
    return type(other) is _SelfFlattening and self.contents == other.contents


tu.register_pytree_node(
    _SelfFlattening, lambda n: tu.tree_flatten(n.contents),
    lambda treedef, leaves: _SelfFlattening(tu.tree_unflatten(treedef, leaves)))


def test_tree_transpose_of_nodes_with_content_metadata():
  # Node metadata is not compared (as in JAX), so such nodes transpose.
  outer = tu.tree_structure(_SelfFlattening({"a": 1, "b": 2}))
  got = tu.tree_transpose(outer, tu.tree_structure([1, 2]),
                          _SelfFlattening({"a": [3, 4], "b": [5, 6]}))
  assert got == [_SelfFlattening({"a": 3, "b": 5}), _SelfFlattening({"a": 4, "b": 6})]


def test_broadcast_prefix():
  full = ((1, 2), [3, 4], 5)
  assert tu.broadcast_prefix((0, 1, 2), full) == [0, 0, 1, 1, 2]
  assert tu.broadcast_prefix(7, full) == [7] * 5
  # vmap-style: None as an option rather than an empty node.
  assert tu.broadcast_prefix((0, None, 1), full, is_leaf=lambda x: x is None) == [
      0, 0, None, None, 1]
  assert tu.tree_broadcast((0, None, 1), full, is_leaf=lambda x: x is None) == (
      (0, 0), [None, None], 1)
  with pytest.raises(ValueError, match="broadcast_prefix: pytree structure error") as info:
    tu.broadcast_prefix((0, 1), full)
  assert "prefix_tree: PyTreeDef((*, *))" in str(info.value)


# ---------------------------------------------------------------------------------------
# No jax


def test_does_not_import_jax():
  repo_root = Path(__file__).resolve().parent.parent
  script = textwrap.dedent("""
      import sys
      class BlockJax:
        def find_spec(self, name, path=None, target=None):
          if name == "jax" or name.startswith("jax."):
            raise ImportError(f"hlox must not import {name}")
          return None
      sys.meta_path.insert(0, BlockJax())

      import collections, dataclasses, pickle
      from hlox import tree_util as tu

      @tu.register_dataclass
      @dataclasses.dataclass
      class D:
        x: object
        s: str = dataclasses.field(default="a", metadata=dict(static=True))

      tree = {"a": [1, None, (2,)], "d": D(3), "p": tu.Partial(print, 4),
              "o": collections.OrderedDict(z=5), "dd": collections.defaultdict(int, y=6)}
      leaves, treedef = tu.tree_flatten(tree)
      assert leaves == [1, 2, 3, 6, 5, 4], leaves
      assert tu.tree_unflatten(treedef, leaves)["d"] == D(3)
      repr(treedef); hash(treedef); treedef.children()
      pickle.loads(pickle.dumps(treedef))
      tu.tree_map(lambda x, y: x, tree, tree)
      [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)]
      tu.tree_transpose(tu.tree_structure([0, 0]), None, [(1, 2), (3, 4)])
      try:
        tu.tree_map(lambda x, y: x, tree, [1])
      except ValueError as e:
        str(e)
      try:
        treedef.unflatten([1])
      except ValueError:
        pass
      assert not [m for m in sys.modules if m == "jax" or m.startswith("jax.")]
      try:  # the blocker itself works
        import jax
      except ImportError as e:
        assert "hlox must not import jax" in str(e)
      else:
        raise AssertionError("the import blocker let jax through")
      print("ok")
  """)
  result = subprocess.run([sys.executable, "-c", script], cwd=repo_root,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------------------------------
# JAX as an oracle (test-only; in a subprocess so that this process never imports jax)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")
def test_agrees_with_jax():
  repo_root = Path(__file__).resolve().parent.parent
  script = textwrap.dedent("""
      import collections, dataclasses, functools, operator
      import jax.tree_util as jtu
      from hlox import tree_util as tu

      Point = collections.namedtuple("Point", "x y")

      @dataclasses.dataclass
      class D:
        x: object
        s: str = dataclasses.field(default="a", metadata=dict(static=True))
      jtu.register_dataclass(D)
      tu.register_dataclass(D)

      def f(*args, **kwargs):
        return args, kwargs

      trees = [
          1, None, (), [], {}, ((1, 2), {"a": 3}), [None, (None,), {"z": None}],
          {"b": 2, "a": 1, "c": {"y": 4, "x": 3}}, Point(1, (2, 3)),
          collections.OrderedDict([("b", 1), ("a", (2, 3))]),
          collections.defaultdict(int, {"b": 1, "a": 2}), D(x=(1, 2), s="q"),
          [D(1), Point(None, {"k": [1]})],
      ]
      for tree in trees:
        leaves, treedef = tu.tree_flatten(tree)
        j_leaves, j_treedef = jtu.tree_flatten(tree)
        assert leaves == j_leaves, (tree, leaves, j_leaves)
        assert str(treedef) == str(j_treedef), (treedef, j_treedef)
        assert treedef.num_nodes == j_treedef.num_nodes
        rebuilt, j_rebuilt = tu.tree_unflatten(treedef, leaves), j_treedef.unflatten(leaves)
        assert rebuilt == j_rebuilt and type(rebuilt) is type(j_rebuilt)
        if isinstance(rebuilt, dict):
          assert list(rebuilt) == list(j_rebuilt)
        paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)]
        j_paths = [jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree)]
        assert paths == j_paths, (paths, j_paths)
        assert tu.treedef_is_leaf(treedef) == jtu.treedef_is_leaf(j_treedef)

      for make in (tu.Partial, jtu.Partial):
        inner = make(f, 1)
        outer = make(inner, 2, k=3)
        assert outer(4) == ((1, 2, 4), {"k": 3})
      assert tu.tree_leaves(tu.Partial(tu.Partial(f, 1), 2, k=3)) == jtu.tree_leaves(
          jtu.Partial(jtu.Partial(f, 1), 2, k=3))

      x, y = ((1, 2), (3, 4, 5)), (([3], None), ({"foo": "bar"}, 7, [5, 6]))
      assert tu.tree_map(lambda *a: a, x, y) == jtu.tree_map(lambda *a: a, x, y)
      outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0))
      j_outer, j_inner = jtu.tree_structure([0, 0]), jtu.tree_structure((0, 0))
      pairs = [(1, 2), (3, 4)]
      assert tu.tree_transpose(outer, inner, pairs) == jtu.tree_transpose(
          j_outer, j_inner, pairs)
      assert tu.tree_reduce(operator.add, y[1][2]) == jtu.tree_reduce(operator.add, y[1][2])
      print("ok")
  """)
  result = subprocess.run([sys.executable, "-c", script], cwd=repo_root,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  assert result.stdout.strip() == "ok"


def test_tree_namespace_short_names():
  import hlox
  assert hlox.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)}) == {"a": 2, "b": (4, 6)}
  assert hlox.tree.leaves([1, (2, None)]) == [1, 2]
  leaves, treedef = hlox.tree.flatten((1, {"k": 2}))
  assert hlox.tree.unflatten(treedef, [5, 6]) == (5, {"k": 6})
