"""NumPy indexing (``x[idx]``, ``x.at[idx]``, take, take_along_axis, put_along_axis) checked
against NumPy, eagerly and under jit, with JAX's out-of-bounds rules."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.numpy.indexing import NonConcreteBooleanIndexError
from tests.util import assert_close, check_eager_and_jit, rand

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
M = X[0, :, 0] > 3  # concrete masks
M2 = X[:, :, 0] % 8 > 2

INDEX_CASES = [
    ("int", 1),
    ("neg_int", -1),
    ("np_int", np.int64(1)),
    ("np_0d", np.array(-2)),
    ("ints", (1, 2)),
    ("ints_neg", (-1, -3, -4)),
    ("slice", slice(1, None)),
    ("slice_step", (slice(None), slice(None, None, 2))),
    ("slice_neg_step", (Ellipsis, slice(None, None, -1))),
    ("slice_neg_step2", (slice(None), slice(2, 0, -2), slice(-1, None, -3))),
    ("slice_empty", (slice(None), slice(2, 1))),
    ("slice_clamped", slice(-10, 10)),
    ("none", None),
    ("none_middle", (0, None, slice(None), None)),
    ("ellipsis", Ellipsis),
    ("ellipsis_int", (Ellipsis, 1)),
    ("ellipsis_middle", (1, Ellipsis, None, 2)),
    ("empty_tuple", ()),
    ("int_array", np.array([1, 0, 1])),
    ("int_array_neg", (slice(None), np.array([-1, 0, -3]))),
    ("int_array_2d", (0, slice(None), np.array([[0, 3], [3, 1]]))),
    ("list_in_tuple", ([0, 1, 1],)),
    ("two_arrays", (np.array([0, 1]), np.array([2, 0]))),
    ("arrays_broadcast", (np.array([[0], [1]]), slice(None), np.array([0, 3, 2]))),
    ("adjacent_after_slice", (slice(None), np.array([0, 2]), np.array([1, 3]))),
    ("separated", (np.array([0, 1]), slice(None), np.array([1, 3]))),
    ("int_and_array_separated", (1, slice(None), np.array([0, 1]))),
    ("int_and_array_adjacent", (slice(None), 1, np.array([0, 1]))),
    ("array_then_none", (np.array([0, 1]), None, np.array([0, 2]))),
    ("array_ellipsis_array", (np.array([1]), Ellipsis, np.array([0]))),
    ("array_with_step", (np.array([1, 0]), slice(None, None, -1))),
    ("array_with_none_first", (None, slice(None), np.array([2, 0]))),
    ("empty_array", np.array([], np.int32)),
    ("uint8_array", (slice(None), np.array([2, 1], np.uint8))),
    ("mask", (slice(None), M)),
    ("mask_2d", M2),
    ("mask_and_array", (np.array([0, 1, 1]), M2[0])),
    ("mask_all_false", (slice(None), np.zeros(3, bool))),
    ("scalar_true", True),
    ("scalar_false", (False,)),
    ("scalar_bool_mid", (slice(None), True, np.array([0, 1]))),
    ("none_true", (None, True, 0)),
]


@pytest.mark.parametrize("name,idx", INDEX_CASES, ids=[c[0] for c in INDEX_CASES])
def test_getitem_matches_numpy(name, idx):
  x = jnp.asarray(X)
  expected = X[idx]
  out = x[idx]
  assert out.shape == expected.shape
  assert_close(out, expected, np.float32)
  assert_close(hlox.jit(lambda x: x[idx])(x), expected, np.float32)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16, np.uint8])
def test_getitem_dtypes(dtype):
  v = rand(np.random.default_rng(0), (4, 5), dtype)
  x = jnp.asarray(v)
  for idx in [(1, slice(None, None, 2)), (np.array([3, 0]), slice(1, 3)), (v[:, 0] == v[0, 0],)]:
    assert_close(x[idx], v[idx], dtype)


def test_getitem_keeps_weak_type():
  x = jnp.asarray(np.arange(3.0, dtype=np.float32))
  y = lax.convert_element_type(x, np.float32, weak_type=True)
  assert y.weak_type
  assert y[0].weak_type and y[np.array([0, 1])].weak_type
  assert not x[0].weak_type


def test_traced_scalar_index_under_jit():
  x = jnp.asarray(X)
  f = hlox.jit(lambda x, i: x[i])
  g = hlox.jit(lambda x, i: x[1, i, ::-1])
  h = hlox.jit(lambda x, i, j: x[i, None, :, j])
  for i in [0, 1, -1, -2]:
    assert_close(f(x, i), X[i], np.float32)
  for i in [0, 2, -1, -3]:
    assert_close(g(x, i), X[1, i, ::-1], np.float32)
    assert_close(h(x, i % 2, i), X[i % 2, None, :, i], np.float32)
  # Out of range: clamped into bounds (dynamic_slice), as in JAX.
  assert_close(f(x, 5), X[1], np.float32)
  assert_close(g(x, -7), X[1, 0, ::-1], np.float32)
  # A traced scalar used eagerly through an Array index
  assert_close(x[jnp.asarray(np.int32(-1))], X[-1], np.float32)
  jaxpr = str(hlox.make_jaxpr(lambda x, i: x[i])(x, 0))
  assert "dynamic_slice" in jaxpr and "gather" not in jaxpr


def test_traced_array_index_under_jit():
  x = jnp.asarray(X)
  f = hlox.jit(lambda x, i: x[:, i])
  idx = np.array([[0, -1], [2, 1]], np.int32)
  assert_close(f(x, idx), X[:, idx], np.float32)
  g = hlox.jit(lambda x, i, j: x[i, :, j])
  assert_close(g(x, np.array([1, 0], np.int32), np.array([3], np.int32)),
               X[np.array([1, 0]), :, np.array([3])], np.float32)


def test_static_indices_use_slices():
  jaxpr = str(hlox.make_jaxpr(lambda x: x[1, ::-2, None])(jnp.asarray(X)))
  assert "gather" not in jaxpr and "slice" in jaxpr and "rev" in jaxpr


def test_out_of_bounds_getitem():
  x = jnp.asarray(np.arange(5, dtype=np.float32))
  # Static ints out of range clamp, as in JAX 0.10 (not NumPy's IndexError).
  assert float(x[5]) == 4 and float(x[-6]) == 0
  assert_close(jnp.asarray(X)[0, 3], np.asarray(X)[0, -1])
  with pytest.raises(IndexError, match="size 0"):
    jnp.asarray(np.zeros((0, 2), np.float32))[0]
  # Array indices: JAX's default (promise_in_bounds) clamps.
  idx = np.array([0, 7, -1, -9])
  assert_close(x[idx], np.array([0, 4, 4, 0], np.float32))
  assert_close(hlox.jit(lambda x, i: x[i])(x, idx), np.array([0, 4, 4, 0], np.float32))
  # at[].get chooses the behaviour.
  assert_close(x.at[idx].get(mode="fill", fill_value=-1), np.array([0, -1, 4, -1], np.float32))
  assert_close(x.at[idx].get(mode="fill"), np.array([0, np.nan, 4, np.nan], np.float32))
  assert_close(x.at[idx].get(mode="clip"), np.array([0, 4, 4, 0], np.float32))
  assert_close(x.at[7].get(mode="fill", fill_value=3.5), np.float32(3.5))
  assert_close(x.at[7].get(mode="clip"), np.float32(4))
  assert_close(x.at[-1].get(wrap_negative_indices=False, mode="fill", fill_value=9),
               np.float32(9))
  xi = jnp.asarray(np.arange(5, dtype=np.int32))
  assert_close(xi.at[idx].get(mode="fill"),
               np.array([0, np.iinfo(np.int32).min, 4, np.iinfo(np.int32).min], np.int32))


@pytest.mark.parametrize("idx,error,match", [
    ((0, 0, 0, 0), IndexError, "Too many indices: array is 3-dimensional, but 4 were indexed"),
    ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
    (1.0, TypeError, "Indexer must have integer or boolean type"),
    ((0, np.float32(1)), TypeError, "integer or boolean type"),
    (np.array([0.5]), TypeError, "got indexer with type float"),
    ([0, 1], TypeError, "non-tuple sequence"),
    ("a", TypeError, "string indexing"),
    (object(), IndexError, "only integers, slices"),
    ((np.array([0, 1]), np.array([0, 1, 2])), IndexError, "could not be broadcast"),
    (np.ones((2, 2), bool), IndexError, "boolean index did not match"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
])
def test_getitem_errors(idx, error, match):
  with pytest.raises(error, match=match):
    jnp.asarray(X)[idx]


def test_traced_bool_mask_raises():
  x = jnp.asarray(np.arange(5, dtype=np.float32))
  # JAX's text, naming the mask's type; the class is an IndexError (JAX's) and a TypeError.
  with pytest.raises(NonConcreteBooleanIndexError,
                     match=r"Array boolean indices must be concrete; got bool\[5\]") as info:
    hlox.jit(lambda x: x[x > 2])(x)
  assert isinstance(info.value, TypeError) and isinstance(info.value, IndexError)
  with pytest.raises(TypeError, match="boolean indices must be concrete"):
    hlox.jit(lambda x: x.at[x > 2].set(0))(x)
  # A concrete mask (closed over) works under jit.
  mask = np.arange(5) % 2 == 0
  assert_close(hlox.jit(lambda x: x[mask])(x), np.arange(5, dtype=np.float32)[mask])


def test_traced_slice_bound_raises():
  x = jnp.asarray(np.arange(5, dtype=np.float32))
  with pytest.raises(IndexError, match="dynamic_slice"):
    hlox.jit(lambda x, i: x[i:i + 2])(x, 1)


def test_iteration_and_len():
  x = jnp.asarray(X)
  rows = list(x)
  assert len(rows) == 2
  assert_close(rows[1], X[1], np.float32)


# --- .at[] updates --------------------------------------------------------------------------

UPDATE_INDICES = [
    ("int", 1),
    ("slice", (slice(None), slice(1, None, 2))),
    ("neg_step", (0, slice(None, None, -1))),
    ("array_repeated", np.array([0, 2, 2, -1])),
    ("two_arrays_repeated", (np.array([0, 1, 0]), slice(None), np.array([3, 3, 3]))),
    ("mask", (slice(None), M)),
    ("newaxis", (None, 1, Ellipsis, 2)),
]


def _numpy_at(op, base, idx, values):
  out = base.copy()
  getattr(np, op).at(out, idx, values)
  return out


@pytest.mark.parametrize("name,idx", UPDATE_INDICES, ids=[c[0] for c in UPDATE_INDICES])
@pytest.mark.parametrize("op", ["add", "multiply", "min", "max"])
def test_at_accumulating_ops(name, idx, op):
  rng = np.random.default_rng(1)
  base = X if name not in ("array_repeated",) else X[0]
  shape = np.empty(base.shape)[idx].shape
  values = rand(rng, shape, np.float32)
  np_op = {"add": "add", "multiply": "multiply", "min": "minimum", "max": "maximum"}[op]
  np_idx = tuple(i for i in (idx if isinstance(idx, tuple) else (idx,)) if i is not None)
  if len(np_idx) == 1:
    np_idx = np_idx[0]
  np_values = values.reshape(np.empty(base.shape)[np_idx].shape)
  expected = _numpy_at(np_op, base, np_idx, np_values)
  fn = lambda x, v: getattr(x.at[idx], op)(v)
  check_eager_and_jit(fn, (jnp.asarray(base), values), expected, np.float32, rtol=1e-5,
                      atol=1e-5)


@pytest.mark.parametrize("name,idx", [c for c in UPDATE_INDICES if "repeated" not in c[0]],
                         ids=[c[0] for c in UPDATE_INDICES if "repeated" not in c[0]])
def test_at_set(name, idx):
  values = np.float32(-7)
  np_idx = tuple(i for i in (idx if isinstance(idx, tuple) else (idx,)) if i is not None)
  expected = X.copy()
  expected[np_idx] = values
  check_eager_and_jit(lambda x: x.at[idx].set(values), (jnp.asarray(X),), expected,
                      np.float32)
  shape = X[idx].shape
  arr = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  expected = X.copy()
  expected[np_idx] = arr.reshape(X[np_idx].shape)
  check_eager_and_jit(lambda x, v: x.at[idx].set(v), (jnp.asarray(X), arr), expected,
                      np.float32)


def test_at_set_broadcasting_and_dtypes():
  x = jnp.asarray(np.zeros((3, 4), np.int32))
  e = np.zeros((3, 4), np.int32)
  e[:, 1:3] = [5, 6]
  assert_close(x.at[:, 1:3].set([5, 6]), e, np.int32)
  assert_close(x.at[:, 1:3].set(np.array([[5, 6]])), e, np.int32)  # rank-2 into (3, 2)
  out = x.at[0].set(2.7)  # float values into an int array: the result stays int32
  assert out.dtype == np.int32 and int(out[0, 0]) == 2
  assert_close(x.at[1].add(1.5), np.array([[0] * 4, [1] * 4, [0] * 4], np.int32), np.int32)
  with pytest.raises(ValueError, match="cannot broadcast updates of shape"):
    x.at[0].set(np.ones(3, np.int32))
  xb = jnp.asarray(np.zeros(4, bool))
  assert_close(xb.at[np.array([1, 3])].set(True), np.array([False, True, False, True]))
  weak = lax.convert_element_type(jnp.asarray(np.zeros(3, np.float32)), np.float32,
                                  weak_type=True)
  assert weak.at[0].set(1.0).weak_type


def test_at_out_of_bounds_and_modes():
  x = jnp.asarray(np.zeros(5, np.float32))
  idx = np.array([0, 5, -1, -6, 9])
  # Default: out-of-bounds updates are dropped (negative in-range ones wrap).
  assert_close(x.at[idx].add(1.), np.array([1, 0, 0, 0, 1], np.float32))
  assert_close(x.at[7].set(3.), np.zeros(5, np.float32))
  assert_close(x.at[idx].add(1., mode="drop"), np.array([1, 0, 0, 0, 1], np.float32))
  assert_close(x.at[idx].add(1., mode="clip"), np.array([2, 0, 0, 0, 3], np.float32))
  assert_close(x.at[-1].set(1., wrap_negative_indices=False), np.zeros(5, np.float32))
  f = hlox.jit(lambda x, i: x.at[i].add(1.))
  assert_close(f(x, idx), np.array([1, 0, 0, 0, 1], np.float32))
  assert_close(hlox.jit(lambda x, i: x.at[i].set(2.))(x, 9), np.zeros(5, np.float32))
  assert_close(hlox.jit(lambda x, i: x.at[i].set(2.))(x, -2), np.array([0, 0, 0, 2, 0]))


def test_at_repeated_indices_accumulate():
  x = jnp.asarray(np.ones(4, np.float32))
  idx = np.array([1, 1, 1, 3])
  assert_close(x.at[idx].add(np.float32(2)), np.array([1, 7, 1, 3], np.float32))
  assert_close(x.at[idx].multiply(2.), np.array([1, 8, 1, 2], np.float32))
  assert_close(x.at[idx].mul(2.), np.array([1, 8, 1, 2], np.float32))
  assert_close(x.at[idx].subtract(1.), np.array([1, -2, 1, 0], np.float32))
  assert_close(x.at[idx].divide(2.), np.array([1, 1 / 8, 1, 0.5], np.float32))
  assert_close((x * 3).at[idx].power(2.), np.array([3, 3 ** 8, 3, 9], np.float32),
               rtol=1e-5)
  set_out = np.asarray(x.at[idx].set(np.array([5., 6., 7., 8.], np.float32)))
  assert set_out[1] in (5, 6, 7) and set_out[3] == 8 and set_out[0] == 1


def test_at_apply():
  x = np.arange(5, dtype=np.float32)
  idx = np.array([0, 2, 2, -1])
  expected = x.copy()
  np.negative.at(expected, idx)
  check_eager_and_jit(lambda x: x.at[idx].apply(jnp.negative), (jnp.asarray(x),), expected,
                      np.float32)
  expected = x.copy()
  for i in idx:
    expected[i] = expected[i] * 2 + 1
  assert_close(jnp.asarray(x).at[idx].apply(lambda v: v * 2 + 1), expected, np.float32)


def test_at_get_and_repr():
  x = jnp.asarray(X)
  assert_close(x.at[1, ::2].get(), X[1, ::2], np.float32)
  assert "_IndexUpdateRef" in repr(x.at[0])
  assert isinstance(x.at, jnp.indexing._IndexUpdateHelper)


# --- take, take_along_axis, put_along_axis ------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis):
  a = rand(np.random.default_rng(2), (3, 4), np.float32)
  idx = np.array([[0, 2], [-1, 1]])
  expected = np.take(a, idx, axis=axis)
  check_eager_and_jit(lambda a, i: jnp.take(a, i, axis=axis), (a, idx.astype(np.int32)),
                      expected, np.float32)
  assert_close(jnp.asarray(a).take(idx, axis=axis), expected, np.float32)


def test_take_modes():
  a = np.arange(5, dtype=np.float32)
  idx = np.array([0, 6, -1, -7, 4])
  assert_close(jnp.take(a, idx), np.array([0, np.nan, 4, np.nan, 4], np.float32))
  assert_close(jnp.take(a, idx, mode="fill", fill_value=-2), np.array([0, -2, 4, -2, 4]))
  assert_close(jnp.take(a, idx, mode="clip"), np.take(a, idx, mode="clip"))
  assert_close(jnp.take(a, idx, mode="wrap"), np.take(a, idx, mode="wrap"))
  assert_close(hlox.jit(lambda a, i: jnp.take(a, i, mode="wrap"))(a, idx.astype(np.int32)),
               np.take(a, idx, mode="wrap"))
  with pytest.raises(NotImplementedError, match="raise"):
    jnp.take(a, idx, mode="raise")
  with pytest.raises(ValueError, match="invalid mode"):
    jnp.take(a, idx, mode="bogus")
  with pytest.raises(TypeError, match="take indices must be of integer type, got float32"):
    jnp.take(a, np.array([0.5]))
  assert jnp.take(a, np.array([], np.int32)).shape == (0,)


@pytest.mark.parametrize("ashape,ishape,axis", [
    ((3, 4), (3, 2), 1),
    ((3, 4), (5, 4), 0),
    ((3, 4), (1, 2), 1),     # indices broadcast along axis 0
    ((1, 4), (3, 2), 1),     # arr broadcast along axis 0
    ((2, 3, 4), (2, 3, 4), -1),
    ((6,), (4,), None),
])
def test_take_along_axis(ashape, ishape, axis):
  rng = np.random.default_rng(3)
  a = rand(rng, ashape, np.float32)
  size = a.size if axis is None else ashape[axis]
  idx = rng.integers(-size, size, ishape).astype(np.int32)
  expected = np.take_along_axis(a, idx, axis=axis)
  check_eager_and_jit(lambda a, i: jnp.take_along_axis(a, i, axis=axis), (a, idx), expected,
                      np.float32)


def test_take_along_axis_argsort_and_errors():
  a = rand(np.random.default_rng(4), (3, 5), np.float32)
  order = np.argsort(a, axis=1)
  assert_close(jnp.take_along_axis(a, order, axis=1), np.sort(a, axis=1), np.float32)
  assert_close(jnp.take_along_axis(a, np.array([[7]]), axis=1),
               np.full((3, 1), np.nan, np.float32))
  assert_close(jnp.take_along_axis(a, np.array([[7]]), axis=1, mode="clip"), a[:, 4:5])
  with pytest.raises(ValueError, match="same number of dimensions"):
    jnp.take_along_axis(a, np.array([0]), axis=1)
  with pytest.raises(TypeError, match="indices must be of integer type"):
    jnp.take_along_axis(a, np.zeros((3, 1)), axis=1)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_put_along_axis(axis):
  rng = np.random.default_rng(5)
  a = rand(rng, (3, 4), np.float32)
  if axis is None:
    idx = np.array([1, 10, 5])
  else:
    idx = np.argsort(a, axis=axis)[:1] if axis == 0 else np.argsort(a, axis=axis)[:, :1]
  expected = a.copy()
  np.put_along_axis(expected, idx, 99., axis=axis)
  out = jnp.put_along_axis(a, idx, 99., axis=axis, inplace=False)
  assert_close(out, expected, np.float32)
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.put_along_axis(a, idx, 99., axis=axis)


def test_index_exp_reexports():
  assert jnp.index_exp[1:2, None] == np.index_exp[1:2, None]
  assert jnp.s_[::2] == np.s_[::2]


# --- randomized index expressions -----------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402


@st.composite
def basic_indices(draw):
  """A shape and a NumPy basic index for it: ints, slices with any step, None, Ellipsis."""
  shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
  bound = st.one_of(st.none(), st.integers(-7, 7))
  entries = []
  for size in shape:
    kinds = ["slice"] + (["int"] if size else [])
    if draw(st.sampled_from(kinds)) == "int":
      entries.append(draw(st.integers(-size, size - 1)))
    else:
      step = draw(st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3])))
      entries.append(slice(draw(bound), draw(bound), step))
  if draw(st.booleans()):  # an Ellipsis stands for entries[a:b]
    a = draw(st.integers(0, len(entries)))
    b = draw(st.integers(a, len(entries)))
    entries = entries[:a] + [Ellipsis] + entries[b:]
  else:  # the trailing dimensions are implicitly full slices
    entries = entries[:draw(st.integers(0, len(entries)))]
  for _ in range(draw(st.integers(0, 2))):
    entries.insert(draw(st.integers(0, len(entries))), None)
  return shape, tuple(entries)


@given(basic_indices())
def test_basic_indexing_random(case):
  shape, idx = case
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  expected = x[idx]
  assert_close(jnp.asarray(x)[idx], expected, np.float32)
  assert_close(hlox.jit(lambda a: a[idx])(x), expected, np.float32)


@st.composite
def advanced_indices(draw):
  """(3, 4, 5)-array indices mixing integer arrays (broadcast together), ints and slices."""
  shape = (3, 4, 5)
  rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
  arr_shape = draw(st.sampled_from([(2,), (2, 3), (1,)]))
  entries = []
  for size in shape:
    kind = draw(st.sampled_from(["array", "array", "int", "slice"]))
    if kind == "array":
      ishape = arr_shape[-draw(st.integers(1, len(arr_shape))):]
      entries.append(rng.integers(-size, size, ishape))
    elif kind == "int":
      entries.append(int(rng.integers(-size, size)))
    else:
      entries.append(slice(draw(st.sampled_from([None, 1, -2])), None,
                           draw(st.sampled_from([None, 2, -1]))))
  if draw(st.booleans()):
    entries.insert(draw(st.integers(0, 3)), None)
  return shape, tuple(entries)


@given(advanced_indices())
def test_advanced_indexing_random(case):
  shape, idx = case
  x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  expected = x[idx]
  assert_close(jnp.asarray(x)[idx], expected, np.float32)
  assert_close(hlox.jit(lambda a: a[idx])(x), expected, np.float32)
  values = np.arange(expected.size, dtype=np.float32).reshape(expected.shape) + 1
  np_idx = tuple(i for i in idx if i is not None)
  np_values = values.reshape(x[np_idx].shape)
  added = x.copy()
  np.add.at(added, np_idx, np_values)
  assert_close(jnp.asarray(x).at[idx].add(values), added, np.float32)
