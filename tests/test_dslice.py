"""``hlox.ds`` / ``Slice``: slices given by a start (possibly traced) and a static size, as
indices of arrays (reads and ``.at[]`` updates) and of references."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.lax.dslice import Slice


@pytest.mark.parametrize("args, kwargs, expected", [
    ((None,), {}, slice(None)),
    ((None,), {"stride": 2}, slice(None, None, 2)),
    ((None, 5), {}, Slice(0, 5, 1)),
    ((None, 5, 2), {}, Slice(0, 5, 2)),
    ((5,), {}, Slice(0, 5, 1)),
    ((0, 5), {}, Slice(0, 5, 1)),
    ((0, 5, 2), {}, Slice(0, 5, 2)),
    ((5,), {"stride": 3}, Slice(0, 5, 3)),
    ((0, 5), {"stride": 4}, Slice(0, 5, 4)),
])
def test_construction(args, kwargs, expected):
  assert hlox.ds(*args, **kwargs) == expected


def test_negative_stride_refused():
  with pytest.raises(ValueError, match="stride"):
    Slice(0, 3, -1)


def test_reads_with_traced_start_match_numpy():
  x = np.arange(40.0, dtype=np.float32).reshape(5, 8)
  xj = jnp.asarray(x)
  for i in range(3):  # (a start past 2 is clamped, as dynamic_slice does)
    np.testing.assert_array_equal(hlox.jit(lambda i: xj[hlox.ds(i, 3)])(i), x[i:i + 3])
    np.testing.assert_array_equal(hlox.jit(lambda i: xj[1:4, hlox.ds(i, 3, 2)])(i),
                                  x[1:4, i:i + 5:2])
    np.testing.assert_array_equal(hlox.jit(lambda i: xj[np.array([0, 4]), hlox.ds(i, 2)])(i),
                                  x[[0, 4], i:i + 2])
  # a static start is an ordinary slice
  np.testing.assert_array_equal(xj[:, hlox.ds(2, 4)], x[:, 2:6])


def test_updates_with_traced_start_match_numpy():
  x = np.zeros((4, 6), np.float32)
  v = np.arange(8.0, dtype=np.float32).reshape(4, 2)
  for i in range(3):
    expected = x.copy()
    expected[:, i:i + 4:2] += v
    got = hlox.jit(lambda i: jnp.asarray(x).at[:, hlox.ds(i, 2, 2)].add(v))(i)
    np.testing.assert_array_equal(got, expected)
    expected = x.copy()
    expected[i:i + 2] = 7.0
    np.testing.assert_array_equal(
        hlox.jit(lambda i: jnp.asarray(x).at[hlox.ds(i, 2)].set(7.0))(i), expected)


def test_grad_and_vmap_through_a_dynamic_slice():
  x = jnp.arange(6.0)
  g = hlox.grad(lambda x, i: x[hlox.ds(i, 2)].sum())(x, 3)
  np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 0])
  out = hlox.vmap(lambda i: x[hlox.ds(i, 3)])(jnp.arange(3))
  np.testing.assert_array_equal(out, [[0, 1, 2], [1, 2, 3], [2, 3, 4]])


def test_slice_is_a_pytree_with_traced_parts_as_leaves():
  leaves, tree = hlox.tree_util.tree_flatten(Slice(jnp.int32(2), 3, 1))
  assert len(leaves) == 1
  assert hlox.tree_util.tree_unflatten(tree, leaves).size == 3
  assert hlox.tree_util.tree_leaves(Slice(2, 3, 1)) == []


def test_traced_size_refused():
  with pytest.raises(IndexError, match="static"):
    hlox.jit(lambda n: jnp.arange(5)[hlox.ds(0, n)])(2)


def test_static_slice_indexes_a_reference():
  r = hlox.new_ref(jnp.arange(6.0))
  np.testing.assert_array_equal(r[hlox.ds(1, 2, 2)], [1.0, 3.0])
