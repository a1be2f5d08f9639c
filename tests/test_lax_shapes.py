"""lax shape primitives (iota, broadcast_in_dim, reshape, transpose, squeeze, rev, pad,
concatenate, slice) and the functions built on them, against NumPy, eagerly and under jit."""
import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
from hlox import lax
from hlox.core import dtypes
from tests.util import assert_close, check_eager_and_jit, rand


def _eqn_names(fun, *args):
  return [eqn.primitive.name for eqn in hlox.make_jaxpr(fun)(*args).eqns]


@st.composite
def shape_and_perm(draw, max_rank=4):
  shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=max_rank)))
  perm = tuple(draw(st.permutations(range(len(shape)))))
  return shape, perm


# --- iota --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float16, np.complex64,
                                   dtypes.bfloat16, dtypes.float8_e4m3fn])
def test_iota_dtypes(dtype):
  check_eager_and_jit(lambda: lax.iota(dtype, 6), (), np.arange(6).astype(dtype), dtype)


@pytest.mark.parametrize("shape,dimension", [((2, 3), 0), ((2, 3), 1), ((4, 1, 3), 2),
                                             ((0, 3), 1), ((5,), 0)])
def test_broadcasted_iota(shape, dimension):
  expected = np.broadcast_to(
      np.arange(shape[dimension]).reshape([-1 if i == dimension else 1
                                           for i in range(len(shape))]), shape)
  out = check_eager_and_jit(lambda: lax.broadcasted_iota(np.int32, shape, dimension), (),
                            expected, np.int32)
  assert not out.weak_type


def test_iota_jaxpr_params_and_canonical_dtype():
  jaxpr = hlox.make_jaxpr(lambda: lax.iota(np.int64, 3))()
  eqn, = jaxpr.eqns
  assert eqn.primitive is lax.iota_p
  assert eqn.params == dict(dtype=np.dtype(np.int32), shape=(3,), dimension=0, sharding=None)
  assert "iota[dimension=0 dtype=int32 shape=(3,) sharding=None]" in str(jaxpr)


def test_iota_errors():
  with pytest.raises(TypeError, match="iota does not accept dtype bool"):
    lax.iota(np.bool_, 3)
  with pytest.raises(ValueError, match="iota: dimension 2 is out of range"):
    lax.broadcasted_iota(np.int32, (2, 3), 2)
  with pytest.raises(ValueError, match="negative"):
    lax.iota(np.int32, -1)


# --- broadcast_in_dim / broadcast / expand_dims ------------------------------------------

def test_broadcast_in_dim_and_broadcast():
  x = np.arange(3, dtype=np.float32)
  check_eager_and_jit(lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), (x,),
                      np.broadcast_to(x, (2, 3)), np.float32)
  check_eager_and_jit(lambda x: lax.broadcast_in_dim(x, (3, 2), (0,)), (x,),
                      np.broadcast_to(x[:, None], (3, 2)), np.float32)
  y = np.arange(4, dtype=np.int32).reshape(4, 1)
  check_eager_and_jit(lambda y: lax.broadcast_in_dim(y, (4, 5), (0, 1)), (y,),
                      np.broadcast_to(y, (4, 5)), np.int32)
  check_eager_and_jit(lambda x: lax.broadcast(x, (2, 4)), (x,),
                      np.broadcast_to(x, (2, 4, 3)), np.float32)


def test_broadcast_in_dim_keeps_weak_type_and_scalars():
  out = lax.broadcast_in_dim(2.0, (2,), ())
  assert out.weak_type and out.dtype == np.float32
  assert_close(out, np.full(2, 2.0, np.float32))
  assert lax.broadcast(np.int32(3), (2,)).weak_type is False


def test_broadcast_shapes_errors():
  assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
  with pytest.raises(TypeError, match="Only non-negative indices are allowed"):
    lax.broadcast_shapes((-1,))
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    lax.broadcast_shapes("hello")


def test_broadcast_in_dim_errors():
  x = np.ones((3,), np.float32)
  with pytest.raises(TypeError, match="broadcast_dimensions must have length equal to"):
    lax.broadcast_in_dim(x, (3, 3), ())
  with pytest.raises(TypeError, match="operand dimension sizes must either be 1, or be equal"):
    lax.broadcast_in_dim(x, (2, 4), (1,))
  with pytest.raises(TypeError, match="duplicates"):
    lax.broadcast_in_dim(np.ones((3, 3)), (3, 3), (1, 1))
  with pytest.raises(TypeError, match="must be a subset of output dimensions"):
    lax.broadcast_in_dim(x, (3,), (1,))
  with pytest.raises(TypeError, match="must have equal or higher rank to the operand shape"):
    lax.broadcast_in_dim(np.ones((2, 2)), (2,), (0, 1))


@pytest.mark.parametrize("shape,dims", [((3,), (0,)), ((3,), (-1,)), ((2, 3), (0, 3)),
                                        ((2, 3), (1,)), ((), (0, 1))])
def test_expand_dims(shape, dims):
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  check_eager_and_jit(lambda x: lax.expand_dims(x, dims), (x,), np.expand_dims(x, dims),
                      np.float32)


def test_expand_dims_errors():
  with pytest.raises(ValueError, match="repeated"):
    lax.expand_dims(np.ones(3), (0, 0))
  with pytest.raises(ValueError, match="out of range"):
    lax.expand_dims(np.ones(3), (3,))


# --- reshape / transpose / squeeze / rev -------------------------------------------------

@pytest.mark.parametrize("shape,new", [((2, 3, 4), (6, 4)), ((2, 3), (3, 2)), ((0, 3), (3, 0)),
                                       ((1,), ()), ((), (1, 1))])
def test_reshape(shape, new):
  x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
  check_eager_and_jit(lambda x: lax.reshape(x, new), (x,), x.reshape(new), np.int32)


def test_reshape_with_dimensions():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  check_eager_and_jit(lambda x: lax.reshape(x, (4, 6), dimensions=(2, 0, 1)), (x,),
                      x.transpose(2, 0, 1).reshape(4, 6), np.float32)
  assert _eqn_names(lambda x: lax.reshape(x, (4, 6), (2, 0, 1)), x) == ["transpose", "reshape"]
  assert _eqn_names(lambda x: lax.reshape(x, (6, 4), (0, 1, 2)), x) == ["reshape"]


def test_reshape_errors_and_noop():
  with pytest.raises(TypeError, match=r"reshape: cannot reshape f32\[2,3\]"):
    lax.reshape(np.ones((2, 3), np.float32), (4,))
  with pytest.raises(ValueError, match="negative"):
    lax.reshape(np.ones(3), (-1,))
  assert _eqn_names(lambda x: lax.reshape(x, (3,)), np.ones(3, np.float32)) == []


@given(sp=shape_and_perm(), seed=st.integers(0, 2**16))
def test_transpose_hypothesis(sp, seed):
  shape, perm = sp
  x = rand(np.random.default_rng(seed), shape, np.float32)
  check_eager_and_jit(lambda x: lax.transpose(x, perm), (x,), np.transpose(x, perm),
                      np.float32)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.complex64])
def test_transpose_dtypes(dtype):
  x = rand(np.random.default_rng(1), (2, 3, 4), dtype)
  check_eager_and_jit(lambda x: lax.transpose(x, (1, 2, 0)), (x,), x.transpose(1, 2, 0), dtype)


def test_transpose_errors():
  with pytest.raises(TypeError, match="not a permutation"):
    lax.transpose(np.ones((2, 3)), (0, 0))
  with pytest.raises(TypeError, match="not a permutation"):
    lax.transpose(np.ones((2, 3)), (0,))


@pytest.mark.parametrize("shape,dims", [((1, 3, 1), (0,)), ((1, 3, 1), (0, 2)),
                                        ((1, 3, 1), (-1,)), ((1,), (0,)), ((2, 3), ())])
def test_squeeze(shape, dims):
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  check_eager_and_jit(lambda x: lax.squeeze(x, dims), (x,), np.squeeze(x, dims), np.float32)


def test_squeeze_errors():
  with pytest.raises(ValueError, match=r"squeeze: cannot select an axis to squeeze.*\(1,\)"):
    lax.squeeze(np.ones((1, 3)), (1,))
  with pytest.raises(ValueError, match="squeeze: axis 2 is out of bounds for array of dim"):
    lax.squeeze(np.ones((1, 3)), (2,))
  with pytest.raises(ValueError, match="not unique"):
    lax.squeeze_p.bind(np.ones((1, 1), np.float32), dimensions=(0, 0))


@pytest.mark.parametrize("dims", [(0,), (1,), (0, 2), (0, 1, 2), ()])
def test_rev(dims):
  x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
  check_eager_and_jit(lambda x: lax.rev(x, dims), (x,), np.flip(x, dims), np.int32)


def test_rev_errors():
  with pytest.raises(ValueError, match="rev: dimensions"):
    lax.rev(np.ones((2, 3)), (2,))
  with pytest.raises(ValueError, match="not unique"):
    lax.rev(np.ones((2, 3)), (1, 1))


# --- pad ---------------------------------------------------------------------------------

def _np_pad(x, value, config):
  """Reference lax.pad: interior dilation, then low/high (negative removes)."""
  for axis, (lo, hi, interior) in enumerate(config):
    n = x.shape[axis]
    if n and interior:
      shape = list(x.shape)
      shape[axis] = n + (n - 1) * interior
      out = np.full(shape, value, x.dtype)
      idx = [slice(None)] * x.ndim
      idx[axis] = slice(None, None, interior + 1)
      out[tuple(idx)] = x
      x = out
    if lo > 0 or hi > 0:
      widths = [(0, 0)] * x.ndim
      widths[axis] = (max(lo, 0), max(hi, 0))
      x = np.pad(x, widths, constant_values=value)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(-lo if lo < 0 else 0, x.shape[axis] + hi if hi < 0 else None)
    x = x[tuple(idx)]
  return x


@pytest.mark.parametrize("config", [
    [(1, 2, 0)], [(0, 0, 1)], [(2, 1, 2)], [(-1, -2, 0)], [(-2, 3, 1)], [(-3, -2, 2)],
])
def test_pad_1d(config):
  x = np.arange(1, 6, dtype=np.int32)
  check_eager_and_jit(lambda x: lax.pad(x, -7, config), (x,), _np_pad(x, -7, config),
                      np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.complex64, np.uint8])
def test_pad_2d_dtypes(dtype):
  x = rand(np.random.default_rng(0), (2, 3), dtype)
  value = np.zeros((), dtype)
  config = [(1, 0, 1), (0, -1, 0)]
  check_eager_and_jit(lambda x: lax.pad(x, value, config), (x,), _np_pad(x, value, config),
                      dtype)


def test_pad_empty_and_traced_value():
  x = np.zeros((0, 2), np.float32)
  check_eager_and_jit(lambda x: lax.pad(x, 1.0, [(1, 1, 3), (0, 0, 0)]), (x,),
                      np.ones((2, 2), np.float32), np.float32)
  f = hlox.jit(lambda x, v: lax.pad(x, v, [(1, 1, 0)]))
  assert_close(f(np.ones(2, np.float32), np.float32(5)), np.array([5, 1, 1, 5], np.float32))


def test_pad_errors():
  x = np.ones(3, np.float32)
  with pytest.raises(TypeError, match="pad: operand and padding_value must have the same"):
    lax.pad(x, np.int32(0), [(1, 1, 0)])
  with pytest.raises(ValueError, match="one \\(low, high, interior\\) triple"):
    lax.pad(x, 0.0, [(1, 1, 0), (0, 0, 0)])
  with pytest.raises(ValueError, match="interior padding in padding_config must be nonnegative"):
    lax.pad(x, 0.0, [(1, 1, -1)])
  with pytest.raises(ValueError, match="Dimension size after padding is not at least 0"):
    lax.pad(x, 0.0, [(-2, -2, 0)])
  with pytest.raises(ValueError, match="padding_value must be a scalar"):
    lax.pad(x, np.zeros(1, np.float32), [(1, 1, 0)])


# --- concatenate -------------------------------------------------------------------------

@pytest.mark.parametrize("dimension", [0, 1, 2])
def test_concatenate(dimension):
  rng = np.random.default_rng(dimension)
  shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
  args = []
  for i, s in enumerate(shapes):
    s = list(s)
    s[dimension] = i + 1
    args.append(rand(rng, tuple(s), np.float32))
  check_eager_and_jit(lambda *xs: lax.concatenate(xs, dimension), tuple(args),
                      np.concatenate(args, dimension), np.float32)


def test_concatenate_weak_types_and_single_operand():
  out = lax.concatenate([lax.full((2,), 1.0), lax.full((1,), 2.0)], 0)
  assert out.weak_type
  assert_close(out, np.array([1, 1, 2], np.float32))
  out = lax.concatenate([lax.full((2,), 1.0), np.zeros(1, np.float32)], 0)
  assert not out.weak_type
  x = lax.iota(np.int32, 3)
  assert lax.concatenate([x], 0) is x


def test_concatenate_errors():
  with pytest.raises(ValueError, match="non-empty"):
    lax.concatenate([], 0)
  with pytest.raises(TypeError, match="same dtype"):
    lax.concatenate([np.ones(2, np.float32), np.ones(2, np.int32)], 0)
  with pytest.raises(TypeError, match="same rank"):
    lax.concatenate([np.ones(2, np.float32), np.ones((2, 1), np.float32)], 0)
  with pytest.raises(TypeError, match=r"concatenating along dimension 0 for shapes \(2, 2\), \(2, 3\)"):
    lax.concatenate([np.ones((2, 2), np.float32), np.ones((2, 3), np.float32)], 0)
  with pytest.raises(TypeError, match="dimension 1 out of range"):
    lax.concatenate([np.ones(2, np.float32), np.ones(2, np.float32)], 1)


# --- slice -------------------------------------------------------------------------------

@st.composite
def slice_args(draw):
  shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
  starts, limits, strides = [], [], []
  for d in shape:
    s = draw(st.integers(0, d))
    starts.append(s)
    limits.append(draw(st.integers(s, d)))
    strides.append(draw(st.integers(1, 3)))
  return shape, tuple(starts), tuple(limits), tuple(strides)


@given(args=slice_args())
def test_slice_hypothesis(args):
  shape, starts, limits, strides = args
  x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
  expected = x[tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))]
  check_eager_and_jit(lambda x: lax.slice(x, starts, limits, strides), (x,), expected,
                      np.int32)


def test_slice_without_strides_and_helpers():
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  check_eager_and_jit(lambda x: lax.slice(x, (1, 2), (3, 6)), (x,), x[1:3, 2:6], np.float32)
  check_eager_and_jit(lambda x: lax.slice_in_dim(x, 1, None, 2, axis=1), (x,), x[:, 1::2],
                      np.float32)
  check_eager_and_jit(lambda x: lax.slice_in_dim(x, -3, -1, axis=0), (x,), x[-3:-1],
                      np.float32)
  check_eager_and_jit(lambda x: lax.index_in_dim(x, -1, 1), (x,), x[:, -1:], np.float32)
  check_eager_and_jit(lambda x: lax.index_in_dim(x, 2, 0, keepdims=False), (x,), x[2],
                      np.float32)
  parts = lax.split(x, (1, 0, 5), axis=1)
  for p, e in zip(parts, np.split(x, [1, 1], axis=1)):
    assert_close(p, e, np.float32)


def test_slice_errors():
  x = np.ones((3, 4), np.float32)
  with pytest.raises(TypeError, match="one entry per dimension"):
    lax.slice(x, (0,), (1,))
  with pytest.raises(TypeError, match="exceed operand shape"):
    lax.slice(x, (0, 0), (4, 4))
  with pytest.raises(TypeError, match="must be non-negative"):
    lax.slice(x, (-1, 0), (2, 4))
  with pytest.raises(TypeError, match="must not be less than"):
    lax.slice(x, (2, 0), (1, 4))
  with pytest.raises(TypeError, match="strides must be positive"):
    lax.slice(x, (0, 0), (3, 4), (0, 1))
  with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
    lax.index_in_dim(x, 3)
  with pytest.raises(ValueError, match="split: Sum of sizes 2 must be equal to dimension 0"):
    lax.split(x, (1, 1), axis=0)
  with pytest.raises(ValueError, match=r"split: Sizes passed to split must be nonnegative"):
    lax.split(x, (-1, 4), axis=0)


# --- collapse / full / full_like / zeros_like_array -------------------------------------

@pytest.mark.parametrize("start,stop,shape", [(0, 2, (6, 4)), (1, None, (2, 12)),
                                              (0, None, (24,)), (1, 1, (2, 1, 3, 4))])
def test_collapse(start, stop, shape):
  x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
  check_eager_and_jit(lambda x: lax.collapse(x, start, stop), (x,), x.reshape(shape),
                      np.int32)


def test_full_dtypes_and_weak_types():
  out = check_eager_and_jit(lambda: lax.full((2, 3), 1.5), (), np.full((2, 3), 1.5, np.float32),
                            np.float32)
  assert out.weak_type
  out = lax.full((2,), 3, np.float16)
  assert out.dtype == np.float16 and not out.weak_type
  assert_close(out, np.full(2, 3, np.float16))
  assert lax.full((), True).dtype == np.bool_
  out = lax.full((2,), np.float32(2))
  assert not out.weak_type
  with pytest.raises(TypeError, match="full: fill_value must be a scalar"):
    lax.full((2,), np.ones(2))


def test_full_traced_fill_value():
  f = hlox.jit(lambda v: lax.full((2, 2), v))
  assert_close(f(np.float32(4)), np.full((2, 2), 4, np.float32), np.float32)
  assert _eqn_names(lambda v: lax.full((2, 2), v), np.float32(1)) == ["broadcast_in_dim"]


def test_full_like_and_zeros_like_array():
  x = np.ones((2, 3), np.int32)
  check_eager_and_jit(lambda x: lax.full_like(x, 7.9), (x,), np.full((2, 3), 7, np.int32),
                      np.int32)
  check_eager_and_jit(lambda x: lax.full_like(x, 2, np.float32, (4,)), (x,),
                      np.full(4, 2, np.float32), np.float32)
  check_eager_and_jit(lambda x: lax.zeros_like_array(x), (x,), np.zeros((2, 3), np.int32),
                      np.int32)
  weak = lax.full((3,), 1.0)
  out = lax.full_like(weak, 0)
  assert out.weak_type and out.dtype == np.float32
  assert not lax.full_like(weak, 0, np.float32).weak_type
  # A scalar fill is its own broadcast: no equation, the weak literal is the output (JAX
  # prints ``{ lambda ; a:f32[]. let  in (2.0:f32[],) }``).
  jaxpr = hlox.make_jaxpr(lambda x: lax.full_like(x, 2))(1.0)
  assert jaxpr.eqns == [] and str(jaxpr) == "{ lambda ; a:f32[]. let  in (2.0:f32[],) }"
  assert jaxpr.out_avals[0].weak_type
  jaxpr = hlox.make_jaxpr(lambda x: lax.full_like(x, 2))(np.ones(3, np.float32))
  assert [e.primitive.name for e in jaxpr.eqns] == ["broadcast_in_dim"]


def test_shape_functions_reject_traced_shapes():
  with pytest.raises(TypeError, match="traced"):
    hlox.jit(lambda n: lax.full((n,), 0.0))(3)


def test_pad_weak_type_follows_both_inputs_as_in_jax():
  weak = hlox.numpy.full(3, 0.5)
  assert weak.weak_type
  assert hlox.lax.pad(weak, 0.0, [(1, 1, 1)]).weak_type
  assert not hlox.lax.pad(weak, np.float32(0), [(1, 1, 1)]).weak_type
  out = hlox.lax.pad(hlox.numpy.arange(3), 7, [(1, 0, 0)])
  np.testing.assert_array_equal(np.asarray(out), [7, 0, 1, 2])
