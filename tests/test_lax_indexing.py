"""lax indexing primitives: dynamic_slice/update_slice, gather and the scatters, checked against
NumPy references of XLA's semantics (eager and under jit)."""
import itertools

import numpy as np
import pytest

import hlox
from hlox import lax
from hlox.lax import GatherDimensionNumbers as GDN, GatherScatterMode, \
    ScatterDimensionNumbers as SDN
from tests.util import assert_close, check_eager_and_jit, rand


# --- NumPy references of XLA gather/scatter ------------------------------------------------

def _window_starts(operand_shape, index_vector, batch_pos, start_index_map, batching,
                   window):
  """Full start vector for one index vector; ``batching`` pairs (operand dim, indices dim)."""
  start = [0] * len(operand_shape)
  for k, d in enumerate(start_index_map):
    start[d] = int(index_vector[k])
  for od, idim in batching:
    start[od] = batch_pos[idim]
  in_bounds = all(0 <= start[d] <= operand_shape[d] - window[d] for d in range(len(start)))
  clamped = [min(max(s, 0), operand_shape[d] - window[d]) for d, s in enumerate(start)]
  return clamped, in_bounds


def gather_reference(operand, indices, dn, slice_sizes, mode="clip", fill_value=None):
  batch_shape = indices.shape[:-1]
  out_rank = len(batch_shape) + len(dn.offset_dims)
  kept = [d for d in range(operand.ndim)
          if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
  out_shape = [0] * out_rank
  batch_iter = iter(batch_shape)
  kept_iter = iter(kept)
  for i in range(out_rank):
    out_shape[i] = slice_sizes[next(kept_iter)] if i in dn.offset_dims else next(batch_iter)
  out = np.zeros(out_shape, operand.dtype)
  batch_out_dims = [i for i in range(out_rank) if i not in dn.offset_dims]
  batching = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  for b in itertools.product(*[range(n) for n in batch_shape]):
    start, ok = _window_starts(operand.shape, indices[b], b, dn.start_index_map, batching,
                               slice_sizes)
    window = operand[tuple(slice(s, s + n) for s, n in zip(start, slice_sizes))]
    window = window.reshape([slice_sizes[d] for d in kept])
    if mode == "fill" and not ok:
      window = np.full(window.shape, fill_value, operand.dtype)
    target = [slice(None)] * out_rank
    for d, v in zip(batch_out_dims, b):
      target[d] = v
    out[tuple(target)] = window
  return out


def scatter_reference(operand, indices, updates, dn, combine, mode="drop"):
  out = operand.copy()
  batch_shape = indices.shape[:-1]
  window_dims = [d for d in range(operand.ndim)
                 if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
  window = [1] * operand.ndim
  for d, ud in zip(window_dims, dn.update_window_dims):
    window[d] = updates.shape[ud]
  scatter_update_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  batching = list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
  for b in itertools.product(*[range(n) for n in batch_shape]):
    start, ok = _window_starts(operand.shape, indices[b], b, dn.scatter_dims_to_operand_dims,
                               batching, window)
    if mode == "drop" and not ok:
      continue
    upd_sel = [slice(None)] * updates.ndim
    for d, v in zip(scatter_update_dims, b):
      upd_sel[d] = v
    upd = updates[tuple(upd_sel)]
    for w in itertools.product(*[range(window[d]) for d in window_dims]):
      pos = list(start)
      for d, off in zip(window_dims, w):
        pos[d] += off
      out[tuple(pos)] = combine(out[tuple(pos)], upd[w])
  return out


# --- dynamic_slice / dynamic_update_slice --------------------------------------------------

def _np_dynamic_slice(x, starts, sizes):
  starts = [s + d if s < 0 else s for s, d in zip(starts, x.shape)]
  starts = [min(max(s, 0), d - n) for s, d, n in zip(starts, x.shape, sizes)]
  return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


@pytest.mark.parametrize("shape,starts,sizes", [
    ((7,), (2,), (3,)),
    ((7,), (6,), (3,)),        # clamped to 4
    ((7,), (-2,), (2,)),       # negative wraps
    ((7,), (-20,), (2,)),      # wraps, then clamps to 0
    ((4, 5), (1, 3), (2, 3)),  # second start clamped
    ((3, 4, 2), (2, 0, 1), (1, 4, 1)),
    ((4, 5), (0, 0), (0, 5)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dynamic_slice(shape, starts, sizes, dtype):
  x = rand(np.random.default_rng(0), shape, dtype)
  expected = _np_dynamic_slice(x, starts, sizes)
  out = lax.dynamic_slice(x, starts, sizes)
  assert_close(out, expected, dtype)
  jitted = hlox.jit(lambda x, *s: lax.dynamic_slice(x, s, sizes))(x, *starts)
  assert_close(jitted, expected, dtype)


def test_dynamic_slice_traced_array_of_starts():
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  f = hlox.jit(lambda x, s: lax.dynamic_slice(x, s, (2, 2)))
  for s in [(0, 0), (3, 4), (-1, 1), (1, -3)]:
    assert_close(f(x, np.array(s, np.int32)), _np_dynamic_slice(x, s, (2, 2)), np.float32)


def test_dynamic_slice_mixed_index_dtypes():
  x = np.arange(900, dtype=np.float32).reshape(3, 300)
  # An int8 start and a Python int that does not fit int8 are unified to a wider dtype.
  out = lax.dynamic_slice(x, (np.int8(1), 250), (1, 5))
  assert_close(out, x[1:2, 250:255], np.float32)
  f = hlox.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (1, 5)))
  assert_close(f(x, np.uint8(2), -5), x[2:3, 295:300], np.float32)
  # Two explicit dtypes that differ are an error, as in JAX.
  with pytest.raises(TypeError, match="got: uint8, int16"):
    f(x, np.uint8(2), np.int16(-5))


def test_dynamic_slice_allow_negative_false():
  x = np.arange(5, dtype=np.int32)
  with pytest.raises(ValueError, match="out of bounds"):
    lax.dynamic_slice(x, (-1,), (2,), allow_negative_indices=False)
  # A traced negative start is not wrapped: XLA clamps it to 0.
  f = hlox.jit(lambda x, i: lax.dynamic_slice(x, (i,), (2,), allow_negative_indices=False))
  assert_close(f(x, -1), x[0:2])


def test_dynamic_slice_errors():
  x = np.zeros((3, 4), np.float32)
  with pytest.raises(TypeError, match=r"dynamic_slice: slice_sizes \(4, 4\) must not exceed"):
    lax.dynamic_slice(x, (0, 0), (4, 4))
  with pytest.raises(ValueError, match="dynamic_slice.*number of start indices"):
    lax.dynamic_slice(x, (0,), (1, 1))
  with pytest.raises(TypeError, match="index arguments to dynamic_slice must be integers"):
    lax.dynamic_slice(x, (0.5, 0), (1, 1))
  # Explicit index dtypes must agree (as in JAX); Python ints take the others' dtype.
  with pytest.raises(TypeError, match="index arguments to dynamic_update_slice must be "
                                      "integers of the same type, got: int32, int16"):
    lax.dynamic_update_slice(x, x[:2, :2], (np.int32(1), np.int16(2)))
  assert_close(lax.dynamic_slice(x + 1, (np.int16(1), 2), (2, 2)), np.ones((2, 2)), np.float32)
  with pytest.raises(TypeError, match="must be scalars"):
    lax.dynamic_slice(x, (np.zeros(2, np.int32), 0), (1, 1))


@pytest.mark.parametrize("shape,ushape,starts", [
    ((6,), (3,), (2,)),
    ((6,), (3,), (5,)),         # clamped to 3
    ((6,), (2,), (-1,)),        # wraps to 5, clamped to 4
    ((4, 5), (2, 2), (3, 1)),
])
def test_dynamic_update_slice(shape, ushape, starts):
  rng = np.random.default_rng(1)
  x = rand(rng, shape, np.float32)
  u = rand(rng, ushape, np.float32)
  s = [st + d if st < 0 else st for st, d in zip(starts, shape)]
  s = [min(max(st, 0), d - n) for st, d, n in zip(s, shape, ushape)]
  expected = x.copy()
  expected[tuple(slice(a, a + n) for a, n in zip(s, ushape))] = u
  check_eager_and_jit(lambda x, u, *st: lax.dynamic_update_slice(x, u, st),
                      (x, u, *starts), expected, np.float32)


def test_dynamic_update_slice_errors():
  x = np.zeros((3, 4), np.float32)
  with pytest.raises(TypeError, match="dynamic_update_slice: update dtype"):
    lax.dynamic_update_slice(x, np.zeros((1, 1), np.int32), (0, 0))
  with pytest.raises(TypeError, match="must fit inside"):
    lax.dynamic_update_slice(x, np.zeros((4, 1), np.float32), (0, 0))
  with pytest.raises(TypeError, match="must have the rank"):
    lax.dynamic_update_slice(x, np.zeros((1,), np.float32), (0, 0))


def test_in_dim_variants():
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  assert_close(lax.dynamic_slice_in_dim(x, 2, 3, axis=1), x[:, 2:5])
  assert_close(lax.dynamic_slice_in_dim(x, 5, 3, axis=1), x[:, 3:6])  # clamped
  assert_close(lax.dynamic_slice_in_dim(x, -1, 1, axis=0), x[3:4])
  assert_close(lax.dynamic_index_in_dim(x, 1, axis=0), x[1:2])
  assert_close(lax.dynamic_index_in_dim(x, -2, axis=1, keepdims=False), x[:, -2])
  u = np.full((4, 2), -1, np.float32)
  e = x.copy()
  e[:, 1:3] = u
  assert_close(lax.dynamic_update_slice_in_dim(x, u, 1, axis=1), e)
  e = x.copy()
  e[2] = 7
  assert_close(lax.dynamic_update_index_in_dim(x, np.full((6,), 7, np.float32), 2, 0), e)
  assert_close(lax.dynamic_update_index_in_dim(x, np.full((1, 6), 7, np.float32), -2, 0), e)
  f = hlox.jit(lambda x, i: lax.dynamic_index_in_dim(x, i, axis=1, keepdims=False))
  assert_close(f(x, 4), x[:, 4])


# --- gather --------------------------------------------------------------------------------

GATHER_CASES = [
    # rows of a matrix: x[idx]
    ("rows", (5, 3), np.array([[0], [4], [2], [2]]),
     GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 3)),
    # points of a matrix: x[i, j]
    ("points", (4, 5), np.array([[0, 1], [3, 4], [2, 0]]),
     GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)), (1, 1)),
    # 2x2 windows kept whole, indices with two batch dims, start_index_map reversed
    ("windows", (4, 6), np.array([[[1, 2], [4, 0]], [[0, 0], [5, 3]]]),
     GDN(offset_dims=(2, 3), collapsed_slice_dims=(), start_index_map=(1, 0)), (2, 2)),
    # batching dims: take_along_axis(x, idx, axis=1)
    ("batched", (3, 5), np.array([[[4], [0]], [[1], [1]], [[2], [3]]]),
     GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
         operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 1)),
]


@pytest.mark.parametrize("name,shape,indices,dn,sizes", GATHER_CASES,
                         ids=[c[0] for c in GATHER_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_gather(name, shape, indices, dn, sizes, dtype):
  x = rand(np.random.default_rng(2), shape, dtype, -9, 9)
  expected = gather_reference(x, indices, dn, sizes)
  check_eager_and_jit(lambda x, i: lax.gather(x, i, dn, sizes), (x, indices.astype(np.int32)),
                      expected, dtype)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_])
def test_gather_out_of_bounds_modes(mode, dtype):
  x = rand(np.random.default_rng(3), (5, 3), dtype, 0, 9)
  dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
  idx = np.array([[0], [3], [4], [-1], [9]], np.int32)  # windows of 2 rows: 4, -1, 9 are OOB
  fills = {np.float32: np.nan, np.int32: np.iinfo(np.int32).min,
           np.uint8: 255, np.bool_: True}
  ref_mode = "fill" if mode == "fill" else "clip"  # XLA clamps when in-bounds is promised
  expected = gather_reference(x, idx, dn, (2, 3), ref_mode, fills[dtype])
  out = lax.gather(x, idx, dn, (2, 3), mode=mode)
  assert_close(out, expected, dtype)
  if mode == "fill":
    assert_close(lax.gather(x, idx, dn, (2, 3), mode=mode, fill_value=7),
                 gather_reference(x, idx, dn, (2, 3), "fill", 7), dtype)


def test_gather_fill_under_jit_with_traced_indices():
  x = np.arange(10, dtype=np.float32)
  dn = GDN(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  f = hlox.jit(lambda x, i: lax.gather(x, i[:, None], dn, (1,), mode="fill", fill_value=-1.))
  assert_close(f(x, np.array([0, 9, 10, -1], np.int32)), np.array([0, 9, -1, -1], np.float32))


def test_gather_empty_result():
  x = np.ones((3, 4), np.float32)
  dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  out = lax.gather(x, np.zeros((0, 1), np.int32), dn, (1, 4))
  assert out.shape == (0, 4)


def test_gather_dimension_numbers_and_mode():
  dn = GDN(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0])
  x = np.arange(6, dtype=np.float32).reshape(3, 2)
  out = lax.gather(x, np.array([[2]]), dn, (1, 2))  # lists in dnums are canonicalized
  assert_close(out, x[2:3], np.float32)
  hash(GDN((1,), (0,), (0,)))
  hash(SDN((1,), (0,), (0,)))
  assert GatherScatterMode.from_any(None) is GatherScatterMode.FILL_OR_DROP
  assert GatherScatterMode.from_any("fill") is GatherScatterMode.FILL_OR_DROP
  assert GatherScatterMode.from_any("drop") is GatherScatterMode.FILL_OR_DROP
  assert GatherScatterMode.from_any("clip") is GatherScatterMode.CLIP
  assert GatherScatterMode.from_any("promise_in_bounds") is GatherScatterMode.PROMISE_IN_BOUNDS
  with pytest.raises(ValueError, match="Unknown gather/scatter mode 'wrap'"):
    GatherScatterMode.from_any("wrap")


def test_gather_in_jaxpr():
  dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  text = str(hlox.make_jaxpr(lambda x, i: lax.gather(x, i, dn, (1, 2)))(
      np.zeros((3, 2), np.float32), np.zeros((4, 1), np.int32)))
  assert "gather[" in text and "f32[4,2]" in text


@pytest.mark.parametrize("kwargs,match", [
    (dict(dn=GDN((1,), (0,), (0, 1)), sizes=(1, 2)), "start_index_map"),
    (dict(dn=GDN((1,), (0,), (0,)), sizes=(2, 2)), "collapse slice dims with bound 1, but"),
    (dict(dn=GDN((1,), (0,), (0,)), sizes=(1, 3)), "Slice size at index 1 in gather op"),
    (dict(dn=GDN((1, 2), (0,), (0,)), sizes=(1, 2)), "explicitly collapsed/batching"),
    (dict(dn=GDN((2,), (0,), (0,)), sizes=(1, 2)), "Offset dimension 0 in gather op"),
    (dict(dn=GDN((1,), (0,), (0,)), sizes=(1,)), "one slice size for every input dimension"),
])
def test_gather_shape_errors(kwargs, match):
  x = np.zeros((3, 2), np.float32)
  with pytest.raises(TypeError, match=match) as info:
    lax.gather(x, np.zeros((4, 1), np.int32), kwargs["dn"], kwargs["sizes"])
  assert "gather" in str(info.value).lower()


def test_gather_index_dtype_error():
  dn = GDN((1,), (0,), (0,))
  with pytest.raises(TypeError, match="gather: indices must be integers"):
    lax.gather(np.zeros((3, 2), np.float32), np.zeros((4, 1), np.float32), dn, (1, 2))


# --- scatter -------------------------------------------------------------------------------

_COMBINE = {
    lax.scatter: lambda old, new: new,
    lax.scatter_add: lambda old, new: old + new,
    lax.scatter_mul: lambda old, new: old * new,
    lax.scatter_min: np.minimum,
    lax.scatter_max: np.maximum,
}

SCATTER_CASES = [
    # rows x[idx] op= u (repeated row 1)
    ("rows", (5, 3), np.array([[1], [3], [1]]), (3, 3),
     SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
    # points x[i, j] op= u
    ("points", (4, 4), np.array([[0, 1], [3, 3], [0, 1]]), (3,),
     SDN(update_window_dims=(), inserted_window_dims=(0, 1),
         scatter_dims_to_operand_dims=(0, 1))),
    # 2x2 windows, start_index_map reversed
    ("windows", (4, 5), np.array([[1, 2], [3, 0]]), (2, 2, 2),
     SDN(update_window_dims=(1, 2), inserted_window_dims=(),
         scatter_dims_to_operand_dims=(1, 0))),
    # batching dims (put_along_axis-like)
    ("batched", (3, 4), np.array([[[3], [0]], [[1], [1]], [[2], [2]]]), (3, 2),
     SDN(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
         operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))),
]


@pytest.mark.parametrize("name,shape,indices,ushape,dn", SCATTER_CASES,
                         ids=[c[0] for c in SCATTER_CASES])
@pytest.mark.parametrize("op", [lax.scatter_add, lax.scatter_mul, lax.scatter_min,
                                lax.scatter_max], ids=lambda f: f.__name__)
def test_scatter_combiners(name, shape, indices, ushape, dn, op):
  rng = np.random.default_rng(4)
  x = rand(rng, shape, np.float32)
  u = rand(rng, ushape, np.float32)
  expected = scatter_reference(x, indices, u, dn, _COMBINE[op])
  check_eager_and_jit(lambda x, i, u: op(x, i, u, dn), (x, indices.astype(np.int32), u),
                      expected, np.float32, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,shape,indices,ushape,dn", SCATTER_CASES[:3:2],
                         ids=[c[0] for c in SCATTER_CASES[:3:2]])
def test_scatter_set(name, shape, indices, ushape, dn):
  # Unique indices only: with repeats, which update wins is unspecified.
  rng = np.random.default_rng(5)
  x = rand(rng, shape, np.int32, -9, 9)
  indices = indices[:2]
  u = rand(rng, (2,) + ushape[1:], np.int32, -9, 9)
  expected = scatter_reference(x, indices, u, dn, _COMBINE[lax.scatter])
  check_eager_and_jit(lambda x, i, u: lax.scatter(x, i, u, dn), (x, indices, u), expected,
                      np.int32)


@pytest.mark.parametrize("mode", [None, "drop", "clip", "promise_in_bounds"])
def test_scatter_out_of_bounds(mode):
  x = np.zeros((6,), np.float32)
  dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
  idx = np.array([[0], [3], [5], [-1]], np.int32)  # windows of 2: 5 and -1 are out of bounds
  u = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
  ref_mode = "clip" if mode == "clip" else "drop"
  expected = scatter_reference(x, idx, u, dn, lambda a, b: a + b, ref_mode)
  check_eager_and_jit(lambda x, i, u: lax.scatter_add(x, i, u, dn, mode=mode), (x, idx, u),
                      expected, np.float32)


def test_scatter_bool_and_int_dtypes():
  dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  idx = np.array([[1], [1], [3]], np.int32)
  x = np.array([False, False, True, False])
  u = np.array([True, False, True])
  assert_close(lax.scatter_add(x, idx, u, dn), np.array([False, True, True, True]))
  assert_close(lax.scatter_mul(x, idx, u, dn), np.array([False, False, True, False]))
  xi = np.array([5, 5, 5, 5], np.uint8)
  ui = np.array([250, 3, 1], np.uint8)
  assert_close(lax.scatter_add(xi, idx, ui, dn),
               np.array([5, 2, 5, 6], np.uint8))  # wraps around like NumPy's uint8


def test_scatter_apply():
  x = np.arange(6, dtype=np.float32)
  dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  idx = np.array([[1], [4], [1]], np.int32)
  expected = x.copy()
  for i in (1, 4, 1):
    expected[i] = expected[i] * 3 + 1
  out = lax.scatter_apply(x, idx, lambda v: v * 3 + 1, dn, update_shape=(3,))
  assert_close(out, expected, np.float32)
  f = hlox.jit(lambda x, i: lax.scatter_apply(x, i, lambda v: v * 3 + 1, dn, update_shape=(3,)))
  assert_close(f(x, idx), expected, np.float32)


@pytest.mark.parametrize("args,match", [
    (dict(u=np.zeros((2, 3), np.int32)), "scatter_add: updates must have the operand's dtype"),
    (dict(u=np.zeros((3, 3), np.float32)), "Bounds of the scatter dimensions of updates"),
    (dict(u=np.zeros((2, 4), np.float32)), "For dimension 1, updates bound is 4"),
    (dict(u=np.zeros((2,), np.float32)), "Updates tensor must be of rank 2; got 1"),
    (dict(i=np.zeros((2, 1), np.float32)), "scatter_add: indices must be integers"),
    (dict(dn=SDN((1,), (), (0,))), "window of size 1; doesn't match operand of rank 2"),
])
def test_scatter_errors(args, match):
  x = np.zeros((5, 3), np.float32)
  dn = args.get("dn", SDN(update_window_dims=(1,), inserted_window_dims=(0,),
                          scatter_dims_to_operand_dims=(0,)))
  i = args.get("i", np.zeros((2, 1), np.int32))
  u = args.get("u", np.zeros((2, 3), np.float32))
  with pytest.raises(TypeError, match=match):
    lax.scatter_add(x, i, u, dn)


def test_scatter_min_rejects_complex():
  dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  with pytest.raises(TypeError, match="scatter_min does not accept dtype complex64"):
    lax.scatter_min(np.zeros(3, np.complex64), np.zeros((1, 1), np.int32),
                    np.zeros(1, np.complex64), dn)
