"""Batching rules of the shape primitives (``hlox/lax/shapes.py``) and the indexing primitives
(``hlox/lax/indexing.py``): ``vmap`` over every mix of batched and unbatched operands (batch
axes 0 and non-zero, size-0 batches) equals a Python loop stacked, eagerly and under ``jit``;
plus NumPy-level indexing built on them and ``vmap(grad(...))``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax

from util import assert_close

RNG = np.random.default_rng(0)
CLIP = lax.GatherScatterMode.CLIP
FILL = lax.GatherScatterMode.FILL_OR_DROP


def _element(a, axis, i):
  return a if axis is None else np.take(a, i, axis=axis)


def _loop(f, args, in_axes):
  """``stack([f(*args_i) for i])``: the reference for ``vmap(f, in_axes)(*args)``."""
  size, = {a.shape[d] for a, d in zip(args, in_axes) if d is not None}
  if size == 0:
    elems = [a if d is None else np.zeros(tuple(np.delete(a.shape, d)), a.dtype)
             for a, d in zip(args, in_axes)]
    out = np.asarray(f(*elems))
    return np.zeros((0,) + out.shape, out.dtype)
  return np.stack([np.asarray(f(*[_element(a, d, i) for a, d in zip(args, in_axes)]))
                   for i in range(size)])


def check_vmap(f, args, in_axes, **tol):
  """``vmap(f)`` eagerly and under ``jit`` equals the stacked loop."""
  args = [np.asarray(a) for a in args]
  in_axes = tuple(in_axes)
  expected = _loop(f, args, in_axes)
  vf = hlox.vmap(f, in_axes=in_axes)
  assert_close(vf(*args), expected, expected.dtype, **tol)
  assert_close(hlox.jit(vf)(*args), expected, expected.dtype, **tol)
  return expected


def _batched(shape, axis, size, dtype=np.float32):
  """A random array of ``shape`` with a batch axis of ``size`` inserted at ``axis``."""
  if axis is not None:
    shape = tuple(shape[:axis]) + (size,) + tuple(shape[axis:])
  return _rand(shape, dtype)


def _rand(shape, dtype=np.float32):
  dtype = np.dtype(dtype)
  if dtype.kind in "iu":
    return RNG.integers(0, 10, size=shape).astype(dtype)
  if dtype == np.bool_:
    return RNG.random(shape) < 0.5
  return RNG.uniform(-3, 3, shape).astype(dtype)


# --- shape primitives --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_broadcast_in_dim(axis, dtype):
  x = _batched((3, 1), axis, 4, dtype)
  check_vmap(lambda a: lax.broadcast_in_dim(a, (2, 3, 5), (1, 2)), [x], [axis])
  check_vmap(lambda a: lax.broadcast_in_dim(a, (3, 2, 5), (0, 2)), [x], [axis])


def test_broadcast_in_dim_scalar_and_size0():
  check_vmap(lambda a: lax.broadcast_in_dim(a, (2, 3), ()), [_rand((4,))], [0])
  check_vmap(lambda a: lax.broadcast_in_dim(a, (2, 3), (1,)), [_rand((3, 0))], [1])
  check_vmap(lambda a: lax.broadcast(a, (2,)), [_rand((0, 3))], [0])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reshape(axis):
  x = _batched((3, 4), axis, 2)
  check_vmap(lambda a: lax.reshape(a, (2, 6)), [x], [axis])
  check_vmap(lambda a: lax.reshape(a, (12,), dimensions=(1, 0)), [x], [axis])
  check_vmap(lambda a: lax.reshape(a, (4, 1, 3)), [_batched((3, 4), axis, 0)], [axis])


@pytest.mark.parametrize("axis", [0, 1, 3])
@pytest.mark.parametrize("perm", [(2, 0, 1), (0, 2, 1), (0, 1, 2)])
def test_transpose(axis, perm):
  x = _batched((2, 3, 4), axis, 5)
  check_vmap(lambda a: lax.transpose(a, perm), [x], [axis])


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_squeeze(axis):
  x = _batched((1, 3, 1), axis, 2)
  check_vmap(lambda a: lax.squeeze(a, (0, 2)), [x], [axis])
  check_vmap(lambda a: lax.squeeze(a, (2,)), [x], [axis])
  check_vmap(lambda a: lax.expand_dims(a, (0, -1)), [x], [axis])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_rev(axis):
  x = _batched((3, 4), axis, 2, np.int32)
  check_vmap(lambda a: lax.rev(a, (0, 1)), [x], [axis])
  check_vmap(lambda a: lax.rev(a, (1,)), [x], [axis])


PAD_CONFIGS = [((1, 2, 0), (0, 0, 1)), ((-1, 1, 1), (2, -2, 0))]


@pytest.mark.parametrize("config", PAD_CONFIGS)
@pytest.mark.parametrize("axes", [(0, None), (2, None), (None, 0), (0, 0), (1, 0)])
def test_pad(config, axes):
  x = _batched((3, 4), axes[0], 2)
  v = _batched((), axes[1], 2)
  check_vmap(lambda a, p: lax.pad(a, p, config), [x, v], axes)


def test_pad_size0_and_int():
  config = ((1, 0, 1), (0, 1, 0))
  check_vmap(lambda a, p: lax.pad(a, p, config), [_rand((0, 2, 3)), _rand((0,))], (0, 0))
  x, v = _rand((2, 3, 4), np.int32), _rand((4,), np.int32)
  check_vmap(lambda a, p: lax.pad(a, p, config), [x, v], (2, 0))
  check_vmap(lambda a, p: lax.pad(a, p, config), [_rand((2, 3), np.bool_),
                                                  _rand((5,), np.bool_)], (None, 0))


@pytest.mark.parametrize("axes", [(0, 0, 0), (0, None, 1), (None, 2, None), (1, None, None)])
@pytest.mark.parametrize("dimension", [0, 1])
def test_concatenate(axes, dimension):
  shapes = [(2, 3), (2, 3), (2, 3)]
  args = [_batched(s, a, 4) for s, a in zip(shapes, axes)]
  check_vmap(lambda *xs: lax.concatenate(xs, dimension), args, axes)


def test_concatenate_with_iota_and_size0():
  # iota has no operands: never batched; concatenate broadcasts it.
  check_vmap(lambda a: lax.concatenate([a, lax.iota(np.float32, 3)], 0), [_rand((4, 2))],
             [0])
  check_vmap(lambda a, b: lax.concatenate([a, b], 1), [_rand((0, 2, 3)), _rand((2, 1))],
             (0, None))


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("strides", [None, (2, 3)])
def test_slice(axis, strides):
  x = _batched((5, 7), axis, 3)
  check_vmap(lambda a: lax.slice(a, (1, 0), (5, 6), strides), [x], [axis])
  check_vmap(lambda a: lax.slice_in_dim(a, 1, -1, axis=1), [x], [axis])


def test_slice_size0():
  check_vmap(lambda a: lax.slice(a, (1,), (3,)), [_rand((0, 4))], [0])


def test_size0_batch_moves():
  x = _rand((2, 0, 1, 3))
  check_vmap(lambda a: lax.transpose(a, (2, 1, 0)), [x], [1])
  check_vmap(lambda a: lax.squeeze(a, (1,)), [x], [1])
  check_vmap(lambda a: lax.rev(a, (0, 2)), [x], [1])
  check_vmap(lambda a, b: lax.pad(a, b, ((0, 1, 0),) * 3), [x, np.float32(2)], (1, None))


def test_nested_vmap_shapes():
  x = _rand((2, 4, 3, 5))
  f = lambda a: lax.transpose(lax.reshape(a, (5, 2, 2)), (2, 0, 1))  # noqa: E731
  g = hlox.vmap(hlox.vmap(f, in_axes=1), in_axes=0)
  expected = np.stack([np.stack([np.asarray(f(x[i, :, j])) for j in range(3)])
                       for i in range(2)])
  assert_close(g(x), expected)
  assert_close(hlox.jit(g)(x), expected)


# --- dynamic_slice / dynamic_update_slice ------------------------------------------------

def _starts(axes, size, values):
  """Start indices: a scalar where unbatched, a ``(size,)`` array where batched."""
  return [np.int32(v) if a is None else RNG.integers(-1, 6, size=size).astype(np.int32)
          for v, a in zip(values, axes)]


@pytest.mark.parametrize("axes", [(0, None, None), (1, None, None), (2, None, None),
                                  (None, 0, None), (None, 0, 0), (0, None, 0), (1, 0, 0)])
def test_dynamic_slice(axes):
  x = _batched((4, 6), axes[0], 3)
  i, j = _starts(axes[1:], 3, (1, 5))
  f = lambda a, i, j: lax.dynamic_slice(a, (i, j), (2, 3))  # noqa: E731
  check_vmap(f, [x, i, j], axes)


def test_dynamic_slice_keeps_dynamic_slice_for_batched_operand():
  f = hlox.vmap(lambda a, i: lax.dynamic_slice(a, (i, 1), (2, 2)), in_axes=(1, None))
  text = str(hlox.make_jaxpr(f)(_rand((4, 3, 5)), np.int32(1)))
  assert "dynamic_slice" in text and "gather" not in text
  g = hlox.vmap(lambda a, i: lax.dynamic_slice(a, (i, 1), (2, 2)), in_axes=(None, 0))
  text = str(hlox.make_jaxpr(g)(_rand((4, 5)), np.arange(3, dtype=np.int32)))
  assert "gather" in text


def test_dynamic_slice_primitive_and_size0():
  # Unsigned starts need no wrapping of negative values: the primitive alone.
  f = lambda a, i: lax.dynamic_slice_p.bind(a, i, np.uint32(0), slice_sizes=(2, 2))  # noqa
  check_vmap(f, [_rand((3, 4)), np.array([0, 1, 7, 2, 3], np.uint32)], (None, 0))
  check_vmap(f, [_rand((0, 3, 4)), np.zeros((0,), np.uint32)], (0, 0))
  check_vmap(lambda a, i: lax.dynamic_index_in_dim(a, i, 1, keepdims=False),
             [_rand((5, 3, 4)), np.array([0, 3, -1, 9, 2], np.int32)], (0, 0))
  check_vmap(lambda a: lax.dynamic_slice(a, (), ()), [_rand((3,))], (0,))


@pytest.mark.parametrize("axes", [(0, None, None), (None, 0, None), (1, 1, None),
                                  (None, None, 0), (0, None, 0), (None, 1, 0), (1, 0, 0)])
def test_dynamic_update_slice(axes):
  x = _batched((4, 5), axes[0], 3)
  u = _batched((2, 3), axes[1], 3)
  i = _starts(axes[2:], 3, (1,))[0]
  f = lambda a, b, i: lax.dynamic_update_slice(a, b, (i, np.int32(4)))  # noqa: E731
  check_vmap(f, [x, u, i], axes)


def test_dynamic_update_slice_forms():
  f = hlox.vmap(lambda a, b, i: lax.dynamic_update_slice(a, b, (i,)), in_axes=(0, None, None))
  text = str(hlox.make_jaxpr(f)(_rand((3, 5)), _rand((2,)), np.int32(1)))
  assert "dynamic_update_slice" in text and "scatter" not in text
  # Both starts batched, int64-free uint starts, and a size-0 batch.
  g = lambda a, b, i, j: lax.dynamic_update_slice_p.bind(a, b, i, j)  # noqa: E731
  check_vmap(g, [_rand((4, 5)), _rand((3, 2, 2)), np.array([0, 3, 1], np.uint32),
                 np.array([9, 0, 2], np.uint32)], (None, 0, 0, 0))
  check_vmap(g, [_rand((0, 4, 5)), _rand((2, 2)), np.zeros((0,), np.uint32),
                 np.uint32(1)], (0, None, 0, None))


# --- gather ------------------------------------------------------------------------------

ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
POINTS = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                    start_index_map=(0, 1))
WINDOWS = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                     start_index_map=(1, 0))

GATHERS = [  # dimension numbers, operand shape, indices shape (index vector last), sizes
    (ROWS, (5, 3), (4, 1), (1, 3)),
    (POINTS, (4, 5), (2, 3, 2), (1, 1)),
    (WINDOWS, (5, 6), (3, 2), (2, 3)),
]


@pytest.mark.parametrize("case", range(len(GATHERS)))
@pytest.mark.parametrize("axes", [(0, None), (1, None), (None, 0), (None, 1), (0, 0), (2, 1)])
@pytest.mark.parametrize("mode", [CLIP, FILL])
def test_gather(case, axes, mode):
  dn, op_shape, idx_shape, sizes = GATHERS[case]
  x = _batched(op_shape, axes[0], 3)
  idx = _batched(idx_shape, axes[1], 3, np.int32) - 2  # some out of bounds
  f = lambda a, i: lax.gather(a, i, dn, sizes, mode=mode, fill_value=-1.0)  # noqa: E731
  check_vmap(f, [x, idx], axes)


def test_gather_size0_and_nested():
  f = lambda a, i: lax.gather(a, i, ROWS, (1, 3), mode=CLIP)  # noqa: E731
  check_vmap(f, [_rand((0, 5, 3)), np.zeros((0, 4, 1), np.int32)], (0, 0))
  check_vmap(f, [_rand((5, 3)), np.zeros((0, 4, 1), np.int32)], (None, 0))
  # Nested: the inner vmap's gather already has batching dimensions.
  x = _rand((2, 3, 5, 3))
  idx = RNG.integers(0, 5, size=(3, 2, 4, 1)).astype(np.int32)
  g = hlox.vmap(hlox.vmap(f, in_axes=(0, 0)), in_axes=(0, 1))
  expected = np.stack([np.stack([np.asarray(f(x[i, j], idx[j, i])) for j in range(3)])
                       for i in range(2)])
  assert_close(g(x, idx), expected)
  assert_close(hlox.jit(g)(x, idx), expected)


@given(st.data())
def test_gather_hypothesis(data):
  n_rows = data.draw(st.integers(1, 4))
  width = data.draw(st.integers(0, 3))
  size = data.draw(st.integers(0, 3))
  axes = data.draw(st.sampled_from([(0, None), (None, 0), (0, 0), (1, 2), (2, None)]))
  x = _batched((n_rows, width), axes[0], size)
  idx = RNG.integers(-1, n_rows + 1, size=(2, 3, 1)).astype(np.int32)
  if axes[1] is not None:
    idx = RNG.integers(-1, n_rows + 1, size=(2, 3, 1)[:axes[1]] + (size,)
                       + (2, 3, 1)[axes[1]:]).astype(np.int32)
  f = lambda a, i: lax.gather(a, i, lax.GatherDimensionNumbers(  # noqa: E731
      offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, width),
      mode="fill", fill_value=7.0)
  check_vmap(f, [x, idx], axes)


# --- scatters ----------------------------------------------------------------------------

ROWS_S = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
POINTS_S = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                       scatter_dims_to_operand_dims=(0, 1))

SCATTERS = {
    "scatter": lax.scatter, "scatter_add": lax.scatter_add, "scatter_mul": lax.scatter_mul,
    "scatter_min": lax.scatter_min, "scatter_max": lax.scatter_max,
}
SCATTER_AXES = [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0), (1, None, 0),
                (None, 1, 2), (1, 0, None)]


def _unique_rows(batch_shape, n, axis, size):
  """Row indices without repeats in each batch element (so ``scatter`` is deterministic);
  one of them out of bounds (dropped by FILL_OR_DROP, clamped by CLIP)."""
  count = int(np.prod(batch_shape))
  def one():
    rows = RNG.permutation(n + 1)[:count]
    return rows.reshape(batch_shape + (1,)).astype(np.int32)
  if axis is None:
    return one()
  return np.stack([one() for _ in range(size)], axis=axis)


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("axes", SCATTER_AXES)
def test_scatter_rows(name, axes):
  x = _batched((4, 3), axes[0], 2)
  idx = _unique_rows((3,), 4, axes[1], 2)
  upd = _batched((3, 3), axes[2], 2)
  op = SCATTERS[name]
  for mode in ("clip", None):
    f = lambda a, i, u: op(a, i, u, ROWS_S, mode=mode)  # noqa: E731
    check_vmap(f, [x, idx, upd], axes)


@pytest.mark.parametrize("axes", [(None, 0, 0), (0, 1, None), (1, 0, 1)])
def test_scatter_add_points_repeated(axes):
  # Repeated indices accumulate (integers, so the order of additions does not matter).
  x = _batched((3, 4), axes[0], 2, np.int32)
  idx = _batched((5, 2), axes[1], 2, np.int32) % 3
  upd = _batched((5,), axes[2], 2, np.int32)
  f = lambda a, i, u: lax.scatter_add(a, i, u, POINTS_S)  # noqa: E731
  check_vmap(f, [x, idx, upd], axes)


def test_scatter_apply_and_size0():
  f = lambda a, i: lax.scatter_apply(a, i, lambda v: v * 2 + 1, ROWS_S,  # noqa: E731
                                     update_shape=(2, 3))
  x, idx = _rand((3, 4, 3)), RNG.integers(0, 4, size=(3, 2, 1)).astype(np.int32)
  check_vmap(f, [x, idx[0]], (0, None))
  check_vmap(f, [x, idx], (0, 0))
  check_vmap(f, [x[0], idx], (None, 0))
  g = lambda a, i, u: lax.scatter_add(a, i, u, ROWS_S)  # noqa: E731
  check_vmap(g, [_rand((0, 4, 3)), np.zeros((0, 2, 1), np.int32), _rand((2, 3))],
             (0, 0, None))


def test_scatter_nested():
  f = lambda a, i, u: lax.scatter(a, i, u, ROWS_S, mode="clip")  # noqa: E731
  x = _rand((2, 3, 4, 3))
  idx = np.stack([np.stack([RNG.permutation(4)[:2].reshape(2, 1) for _ in range(3)])
                  for _ in range(2)]).astype(np.int32)
  upd = _rand((2, 3))
  g = hlox.vmap(hlox.vmap(f, in_axes=(0, 0, None)), in_axes=(0, 0, None))
  expected = np.stack([np.stack([np.asarray(f(x[i, j], idx[i, j], upd)) for j in range(3)])
                       for i in range(2)])
  assert_close(g(x, idx, upd), expected)
  assert_close(hlox.jit(g)(x, idx, upd), expected)


# --- NumPy-level functions ---------------------------------------------------------------

def test_numpy_shapes():
  x = _rand((3, 4, 6))
  check_vmap(lambda a: jnp.reshape(a, (2, -1)), [x], [1])
  check_vmap(lambda a: jnp.transpose(a), [x], [2])
  check_vmap(lambda a: a.T.reshape(-1)[::2], [x], [0])
  check_vmap(lambda a, b: jnp.concatenate([a, b, a], axis=-1), [x, _rand((4, 2))], (0, None))
  check_vmap(lambda a: jnp.pad(a, ((1, 0), (2, 1))), [x], [0])
  check_vmap(lambda a, c: jnp.pad(a, 1, constant_values=c), [x, _rand((4,))], (1, 0))
  check_vmap(lambda a: jnp.pad(a, 2, mode="edge"), [x], [0])


def test_numpy_getitem_traced_index():
  x = _rand((4, 5, 3))
  i = np.array([0, -1, 3, 2], np.int32)
  check_vmap(lambda a, i: jnp.asarray(a)[i], [x, i], (0, 0))
  check_vmap(lambda a, i: jnp.asarray(a)[i], [x[0], i], (None, 0))
  check_vmap(lambda a, i: jnp.asarray(a)[1:, i], [x, i % 3 - 1], (0, 0))
  check_vmap(lambda a, i: jnp.asarray(a)[i, 2], [x[0], i], (None, 0))
  check_vmap(lambda a, i: jnp.asarray(a)[i], [x, np.int32(2)], (2, None))


def test_numpy_getitem_index_array():
  x = _rand((4, 5, 3))
  idx = RNG.integers(-5, 5, size=(4, 2, 2)).astype(np.int32)
  check_vmap(lambda a, j: jnp.asarray(a)[j], [x, idx], (0, 0))
  check_vmap(lambda a, j: jnp.asarray(a)[j], [x[0], idx], (None, 0))
  check_vmap(lambda a, j: jnp.asarray(a)[:, j], [x, idx[0]], (2, None))
  check_vmap(lambda a, j, k: jnp.asarray(a)[j, k], [x[0], idx[..., 0] % 5, idx[..., 1] % 3], (None, 0, 0))
  check_vmap(lambda a: jnp.take(a, np.array([3, 0, 3]), axis=1), [x], [0])


def test_numpy_at_set():
  x = _rand((4, 5, 3))
  i = np.array([0, 4, 2, -1], np.int32)
  v = _rand((4, 3))
  check_vmap(lambda a, i, v: jnp.asarray(a).at[i].set(v), [x, i, v], (0, 0, 0))
  check_vmap(lambda a, i, v: jnp.asarray(a).at[i].set(v), [x[0], i, v], (None, 0, 0))
  check_vmap(lambda a, i, v: jnp.asarray(a).at[i].set(v), [x[0], i, v[0]], (None, 0, None))
  check_vmap(lambda a, i, v: jnp.asarray(a).at[i].set(v), [x[0], np.int32(1), v], (None, None, 0))
  check_vmap(lambda a, i, v: jnp.asarray(a).at[i, 1].add(v), [x, i, _rand((4,))], (0, 0, 0))
  j = RNG.integers(0, 5, size=(4, 6)).astype(np.int32)
  check_vmap(lambda a, j: jnp.asarray(a).at[j].add(1.0), [x[0], j], (None, 0))
  check_vmap(lambda a, j: jnp.asarray(a).at[j].max(0.5), [x, j], (0, 0))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_numpy_take_along_axis(axis):
  x = _rand((3, 4, 5))
  n = x.shape[1:][axis]
  idx_shape = (2, 5) if axis == 0 else (4, 3)
  idx = RNG.integers(-n, n, size=(3,) + idx_shape).astype(np.int32)
  f = lambda a, j: jnp.take_along_axis(jnp.asarray(a), j, axis=axis)  # noqa: E731
  check_vmap(f, [x, idx], (0, 0))
  check_vmap(f, [x, idx[0]], (0, None))
  check_vmap(f, [x[0], idx], (None, 0))
  check_vmap(f, [x, idx[:, :1] if axis else idx[:, :, :1]], (0, 0))  # broadcast indices


# --- vmap of grad ------------------------------------------------------------------------

def test_vmap_grad_indexing():
  x = _rand((4, 6))
  i = np.array([0, 5, 2, -2], np.int32)

  def f(a, i):
    window = lax.dynamic_slice_in_dim(a, i, 3)
    return jnp.sum(window * window) + jnp.sum(a[i] * 3.0)

  g = hlox.grad(f)
  check_vmap(g, [x, i], (0, 0), rtol=1e-5, atol=1e-5)
  check_vmap(g, [x[0], i], (None, 0), rtol=1e-5, atol=1e-5)


def test_vmap_grad_shapes():
  x = _rand((3, 2, 5))

  def f(a):
    b = lax.pad(lax.transpose(a, (1, 0)), np.float32(1.0), ((1, 0, 1), (0, 1, 0)))
    c = lax.concatenate([lax.rev(b, (0,)), b], 1)
    return jnp.sum(lax.reshape(c, (c.shape[0] * c.shape[1],)) ** 2)

  check_vmap(hlox.grad(f), [x], (0,), rtol=1e-5, atol=1e-5)
  check_vmap(hlox.grad(f), [x], (2,), rtol=1e-5, atol=1e-5)
