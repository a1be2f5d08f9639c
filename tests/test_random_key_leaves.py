"""Typed PRNG key arrays are pytree leaves for users (as in JAX), while hlox's
transformations still accept and return them inside pytrees."""

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import tree_util
from tests.util import printed_here, printed_in_jax


def _key_data(k):
  return np.asarray(hlox.random.key_data(k))


def test_tree_leaves_and_structure_treat_keys_as_leaves():
  k = hlox.random.key(0)
  ks = hlox.random.split(k, 3)
  tree = {"k": k, "ks": ks, "x": (1.0, None)}
  leaves = tree_util.tree_leaves(tree)
  assert len(leaves) == 3
  assert leaves[0] is k and leaves[1] is ks and leaves[2] == 1.0
  assert str(tree_util.tree_structure(tree)) == "PyTreeDef({'k': *, 'ks': *, 'x': (*, None)})"
  assert tree_util.tree_structure(tree) == tree_util.tree_structure(
      {"k": 0, "ks": 0, "x": (0, None)})
  assert tree_util.all_leaves([k, ks])
  assert not tree_util.is_tree_node(type(k))


def test_tree_map_sees_whole_keys():
  k = hlox.random.key(0)
  assert hlox.tree.map(lambda x: x.shape, {"k": k}) == {"k": ()}
  assert hlox.tree.map(lambda x: x.shape, {"ks": hlox.random.split(k, 4)}) == {"ks": (4,)}
  split = hlox.tree.map(lambda x: hlox.random.split(x)[0], {"a": k, "b": [k]})
  np.testing.assert_array_equal(_key_data(split["a"]), _key_data(hlox.random.split(k)[0]))
  np.testing.assert_array_equal(_key_data(split["b"][0]), _key_data(split["a"]))
  # With several trees, the key of the first is matched with the whole subtree of the rest.
  assert hlox.tree.map(lambda a, b: (a.shape, b), {"k": k}, {"k": 7}) == {"k": ((), 7)}


def test_flatten_with_path_and_unflatten_round_trip():
  k = hlox.random.key(1)
  pairs, treedef = tree_util.tree_flatten_with_path({"b": [k, 2.0], "a": k})
  assert [tree_util.keystr(p) for p, _ in pairs] == ["['a']", "['b'][0]", "['b'][1]"]
  assert pairs[0][1] is k and pairs[1][1] is k
  rebuilt = tree_util.tree_unflatten(treedef, [leaf for _, leaf in pairs])
  assert rebuilt["a"] is k and rebuilt["b"][0] is k
  assert hlox.tree.map_with_path(lambda p, x: tree_util.keystr(p), {"k": k}) == {"k": "['k']"}


def test_jit_accepts_and_returns_keys_in_pytrees():
  k = hlox.random.key(0)

  @hlox.jit
  def step(state):
    key, sub = hlox.random.split(state["key"])
    return {"key": key, "x": state["x"] + hlox.random.normal(sub)}

  out = step({"key": k, "x": jnp.float32(0)})
  key, sub = hlox.random.split(k)
  np.testing.assert_array_equal(_key_data(out["key"]), _key_data(key))
  np.testing.assert_allclose(out["x"], hlox.random.normal(sub), rtol=1e-6)
  out2 = step(out)  # the cache-hit path
  assert out2["key"].dtype == k.dtype and out2["x"].shape == ()


def test_vmap_grad_and_scan_with_keys_in_pytrees():
  k = hlox.random.key(0)
  ks = hlox.random.split(k, 3)
  got = hlox.vmap(lambda d: hlox.random.normal(d["k"]) * d["s"])({"k": ks, "s": jnp.ones(3)})
  want = np.array([hlox.random.normal(ks[i]) for i in range(3)])
  np.testing.assert_allclose(got, want, rtol=1e-6)

  g = hlox.grad(lambda x, d: x * hlox.random.normal(d["k"]))(2.0, {"k": k})
  np.testing.assert_allclose(g, hlox.random.normal(k), rtol=1e-6)

  def body(carry, _):
    key, total = carry["key"], carry["total"]
    key, sub = hlox.random.split(key)
    return {"key": key, "total": total + hlox.random.uniform(sub)}, key

  carry, keys = hlox.lax.scan(body, {"key": k, "total": jnp.float32(0)}, None, length=3)
  assert carry["key"].dtype == k.dtype and keys.shape == (3,)
  ref_key, ref_total = k, 0.0
  for _ in range(3):
    ref_key, sub = hlox.random.split(ref_key)
    ref_total += float(hlox.random.uniform(sub))
  np.testing.assert_array_equal(_key_data(carry["key"]), _key_data(ref_key))
  np.testing.assert_allclose(carry["total"], ref_total, rtol=1e-6)


def test_tree_functions_inside_jit_see_keys_as_leaves():
  @hlox.jit
  def f(d):
    shapes = hlox.tree.map(lambda x: x.shape, d)
    assert shapes == {"k": (2,), "x": (2,)}
    return hlox.tree.map(lambda x: x, d)

  k = hlox.random.split(hlox.random.key(3), 2)
  out = f({"k": k, "x": jnp.zeros(2)})
  np.testing.assert_array_equal(_key_data(out["k"]), _key_data(k))


_PROGRAMS = {
    "leaves": "k = m.random.key(0)\n"
              "print([(x.shape, str(x.dtype)) for x in m.tree_util.tree_leaves({'k': k, "
              "'ks': m.random.split(k, 2), 'x': 1})])",
    "map_shape": "print(m.tree.map(lambda x: x.shape, {'k': m.random.key(0)}))",
    "structure": "k = m.random.key(0)\n"
                 "print(m.tree_util.tree_structure({'k': k, 'x': (k, None)}))",
    "paths": "k = m.random.key(0)\n"
             "print([(m.tree_util.keystr(p), x.shape) for p, x in "
             "m.tree_util.tree_flatten_with_path({'b': [k], 'a': k})[0]])",
    "jit_out": "k = m.random.key(0)\n"
               "out = m.jit(lambda d: {'k': m.random.split(d['k'])[1], 'n': 1})({'k': k})\n"
               "print(m.tree.map(lambda x: (x.shape, str(x.dtype)), out))",
}


@pytest.mark.jax_oracle
def test_printed_as_jax_prints():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name
