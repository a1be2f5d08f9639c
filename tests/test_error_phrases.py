"""Error messages carry the phrases JAX raises (JAX's own tests and users search for them).

Each case fails in a shape/type check before anything is compiled, so the file is fast.
"""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax, tree_util

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
I32 = np.int32


def _gather(operand_shape, indices_shape, dn, sizes):
  lax.gather(np.ones(operand_shape, I32), np.ones(indices_shape, I32), dn, sizes)


@pytest.mark.parametrize("args,match", [
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 1), GDN((4, 5, 6, 8, 7), (), (0, 1, 2, 3, 4)),
      (10, 9, 8, 7, 6)), "offset_dims in gather op must be sorted"),
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 1), GDN((4, 5, 6, 7, 7), (), (0, 1, 2, 3, 4)),
      (10, 9, 8, 7, 6)), "offset_dims in gather op must not repeat"),
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 5), GDN((4, 5, 6, 7, 8), (0, 1, 2, 3, 19),
                                             (0, 1, 2, 3, 4)), (10, 9, 8, 7, 6)),
     r"Invalid collapsed_slice_dims set in gather op; valid range is \[0, 5\); got: 19"),
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 5), GDN((4, 5, 6, 7, 8), (), (0, 1, 2, 3)),
      (10, 9, 8, 7, 6)), "Gather op has 4 elements in start_index_map and the bound of "
                         "dimension index_vector_dim=4 of indices is 5"),
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 5), GDN((4, 5, 6, 7), (1,), (0, 1, 2, 3, 4)),
      (10, 9, 8, 7, 6)), "only collapse slice dims with bound 1, but bound is 9 for index 1 "
                         "at position 0"),
    (((10, 9, 8, 7, 6), (5, 4, 3, 2, 5), GDN((4, 5, 6), (0, 1), (0, 1, 2, 3, 4), (),
                                             (0, 4)), (10, 9, 8, 7, 6)),
     "Gather op cannot have the index vector dimension as a batching dimension"),
])
def test_gather_phrases(args, match):
  with pytest.raises(TypeError, match=match) as info:
    _gather(*args)
  assert "i32[10,9,8,7,6]" in str(info.value)   # hlox adds the operand's type


@pytest.mark.parametrize("operand,indices,updates,dn,match", [
    ((50, 49, 48, 47, 46), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4, 1),
     SDN((4, 5, 6), (1, 2), (0, 1, 2, 3, 4)), "Updates tensor must be of rank 7; got 8"),
    ((50, 49, 48, 47, 46), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     SDN((4, 5, 6), (2, 1), (0, 1, 2, 3, 4)), "inserted_window_dims in scatter op must be sorted"),
    ((50, 49, 48, 47, 46), (10, 9, 8, 7, 5), (10, 9, 8, 7, 3, 2, 4),
     SDN((4, 5, 6), (1,), (0, 1, 2, 3, 4)),
     "Scatter op has window of size 4; doesn't match operand of rank 5"),
    ((64, 48), (10, 9, 8, 7, 1), (10, 9, 8, 7, 65), SDN((4,), (1,), (0,)),
     "Bounds of the window dimensions of updates must not exceed the bounds of the "
     "corresponding dimensions of operand. For dimension 4, updates bound is 65"),
])
def test_scatter_phrases(operand, indices, updates, dn, match):
  # Abstract arguments: the operands are large and only their shapes are checked.
  args = [hlox.ShapeDtypeStruct(shape, I32) for shape in (operand, indices, updates)]
  with pytest.raises(TypeError, match=match):
    hlox.eval_shape(lambda o, i, u: lax.scatter_add(o, i, u, dn), *args)


def test_scatter_variant_named():
  dn = SDN((1,), (0,), (0,))
  with pytest.raises(TypeError, match=r"Bounds of the scatter dimensions.*scatter_mul: "):
    lax.scatter_mul(np.ones((5, 3), I32), np.zeros((2, 1), I32), np.ones((3, 3), I32), dn)


def test_lax_phrases():
  x = np.ones((1, 2, 3), np.float32)
  with pytest.raises(ValueError, match="dimensions are not unique"):
    lax.squeeze(x, (0, 0))
  with pytest.raises(ValueError, match="axis -4 is out of bounds"):
    lax.squeeze(x, (-4,))
  with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
    lax.squeeze(x, (1,))
  with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
    lax.squeeze(x, (None,))
  with pytest.raises(ValueError, match="Sizes passed to split must be nonnegative"):
    lax.split(np.arange(5), [-1, 6])
  with pytest.raises(ValueError, match="Sum of sizes 6 must be equal"):
    lax.split(np.arange(5), [6])
  with pytest.raises(ValueError, match="Invalid axis -1 for operand"):
    lax.argmin(np.ones((2, 3)), -1, np.int32)
  with pytest.raises(ValueError, match="require non-empty reduced dimension"):
    lax.argmax(np.ones((0, 2)), 0, np.int32)
  with pytest.raises(ValueError, match="duplicate value in 'axes' of reduction"):
    lax.reduce_sum(np.ones(3), (0, 0))
  with pytest.raises(TypeError, match="add requires arguments to have the same dtypes"):
    lax.add(np.int32(1), np.float32(1))
  with pytest.raises(TypeError, match="broadcast_dimensions must have length equal to "
                                      "operand ndim"):
    lax.broadcast_in_dim(np.ones(2), (2, 2), (0, 1))
  with pytest.raises(ValueError, match="reduce found non-scalar initial value"):
    lax.reduce(np.ones(5), np.ones(5), lax.add, (0,))


def test_tracer_phrases():
  with pytest.raises(TypeError, match=r"[Tt]ry using `x.astype\(int\)`"):
    hlox.jit(lambda x: int(x))(1.0)
  with pytest.raises(hlox.errors.TracerBoolConversionError, match="Attempted boolean"):
    hlox.jit(lambda x: 1 if x > 0 else 0)(1.0)
  with pytest.raises(TypeError, match=r"The __index__\(\) method was called on traced array"):
    hlox.jit(lambda i: [1, 2, 3][i])(1)
  with pytest.raises(TypeError, match="The numpy.ndarray conversion method __array__"):
    hlox.jit(lambda x: np.sin(x))(np.ones(3, np.float32))


def test_api_phrases():
  with pytest.raises(TypeError, match="Expected a callable value"):
    hlox.jit(3)
  with pytest.raises(ValueError, match="static_argnames and donate_argnames cannot intersect"):
    hlox.jit(lambda x: x, static_argnames="x", donate_argnames="x")
  with pytest.raises(TypeError, match="two-element tuple"):
    hlox.grad(lambda x: x, has_aux=True)(1.0)
  with pytest.raises(TypeError, match="primal and tangent arguments to jax.jvp must be tuples "
                                      "or lists; found float and tuple"):
    hlox.jvp(lambda x: x, 1.0, (1.0,))
  _, pullback = hlox.vjp(lambda x: (x, x), 1.0)
  with pytest.raises(TypeError, match="applied to <lambda> was called with 2 arguments"):
    pullback(1.0, 1.0)
  with pytest.raises(ValueError, match="unexpected tree structure"):
    pullback(1.0)
  with pytest.raises(TypeError, match=r"'foo' of type <class 'str'> is not a valid JAX type"):
    hlox.grad(lambda x: x)("foo")
  with pytest.raises(ValueError, match=r"vmap wrapped function must be passed at least one "
                                       r"argument.*got empty \*args=\(\{\},\)"):
    hlox.vmap(lambda x: x)({})


def test_control_flow_phrases():
  with pytest.raises(TypeError, match="lax.fori_loop.*callable"):
    lax.fori_loop(0, 1, 42, 0)
  with pytest.raises(TypeError, match="cond predicate is None"):
    lax.cond(None, lambda: 1, lambda: 2)
  with pytest.raises(TypeError, match="Pred type must be either boolean or number, got <func"):
    lax.cond(lambda: True, lambda: 1, lambda: 2)
  with pytest.raises(TypeError, match=r"Index type must be an integer, got foo\."):
    lax.switch("foo", [lambda: 1, lambda: 2])
  with pytest.raises(TypeError, match=r"scan body output must be a pair, got float32\[\]\."):
    lax.scan(lambda c, x: np.float32(0.), 0., np.arange(3.))


def test_numpy_and_tree_phrases():
  with pytest.raises(NotImplementedError, match="Unimplemented padding mode 'foo' for np.pad"):
    jnp.pad(np.ones(3), 1, "foo")
  with pytest.raises(TypeError, match="take_along_axis indices must be of integer type, got "
                                      "float32"):
    jnp.take_along_axis(np.ones(3), np.zeros(1, np.float32), axis=0)
  with pytest.raises(ValueError, match="None is not a valid value for jnp.array"):
    jnp.array([1, None])
  with pytest.raises(ValueError, match="pytree structure error"):
    tree_util.tree_map(lambda x, y: x, {"a": 1}, {"b": 1})
  with pytest.raises(TypeError, match="Mismatch"):
    tree_util.tree_transpose(tree_util.tree_structure([0, 0]), tree_util.tree_structure((0,)),
                             [(1,), (2, 3)])


def test_random_phrases():
  with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
    hlox.random.PRNGKey(np.pi)
  with pytest.raises(TypeError, match="^key accepts a scalar seed"):
    hlox.random.key(hlox.random.key(0))
  with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
    hlox.random.key(0, impl="unlikely name")


def test_associative_scan_rejects_non_callable():
  with pytest.raises(TypeError, match="lax.associative_scan.*callable"):
    lax.associative_scan(42, 0)
