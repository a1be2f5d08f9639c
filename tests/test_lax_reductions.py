"""lax reductions (reduce_*, argmax/argmin, reduce), cumulative reductions and reduce_window,
against NumPy, eagerly and under jit."""
import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
from hlox import lax
from hlox.runtime.array import device_put
from tests.util import assert_close, check_eager_and_jit, rand


@st.composite
def shape_and_axes(draw, min_side=0, max_rank=3):
  shape = tuple(draw(st.lists(st.integers(min_side, 4), min_size=0, max_size=max_rank)))
  axes = tuple(sorted(draw(st.sets(st.integers(0, max(len(shape) - 1, 0)),
                                   max_size=len(shape)))))
  return shape, axes


def _primitive_names(fun, *args):
  return [eqn.primitive.name for eqn in hlox.make_jaxpr(fun)(*args).eqns]


# --- reduce_sum / prod / max / min -------------------------------------------------------

_np_reducers = {
    "sum": (lax.reduce_sum, np.sum),
    "prod": (lax.reduce_prod, np.prod),
    "max": (lax.reduce_max, None),
    "min": (lax.reduce_min, None),
}


def _np_reduce(kind, x, axes):
  if kind in ("max", "min"):
    fn = np.max if kind == "max" else np.min
    if x.dtype == np.bool_:
      initial = kind == "min"
    elif x.dtype.kind in "iu":
      info = np.iinfo(x.dtype)
      initial = info.min if kind == "max" else info.max
    else:
      initial = -np.inf if kind == "max" else np.inf
    return fn(x, axis=axes, initial=initial).astype(x.dtype)
  return _np_reducers[kind][1](x, axis=axes).astype(x.dtype)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@given(sa=shape_and_axes(), seed=st.integers(0, 2**16))
def test_reduce_float32_shapes_axes(kind, sa, seed):
  shape, axes = sa
  rng = np.random.default_rng(seed)
  x = rng.uniform(0.5, 1.5, shape).astype(np.float32)
  fun = functools.partial(_np_reducers[kind][0], axes=axes)
  check_eager_and_jit(fun, (x,), _np_reduce(kind, x, axes), np.float32, atol=1e-4)


_dtypes = [np.int8, np.uint8, np.int32, np.uint32, np.float16, np.float32, np.complex64]


# Complex max/min are tested separately (lexicographic order).
@pytest.mark.parametrize("kind, dtype", [
    (k, d) for k in ("sum", "prod", "max", "min") for d in _dtypes
    if not (k in ("max", "min") and np.dtype(d).kind == "c")])
def test_reduce_dtypes(kind, dtype):
  rng = np.random.default_rng(0)
  x = rand(rng, (3, 5), dtype, low=-2, high=3)
  fun = functools.partial(_np_reducers[kind][0], axes=(1,))
  expected = _np_reduce(kind, x, (1,))
  check_eager_and_jit(fun, (x,), expected, dtype, rtol=1e-2 if dtype == np.float16 else None)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_reduce_max_min_bool_and_empty(kind):
  fn = _np_reducers[kind][0]
  b = np.array([[True, False], [True, True], [False, False]])
  check_eager_and_jit(lambda x: fn(x, (1,)), (b,), _np_reduce(kind, b, (1,)), np.bool_)
  # Empty reductions give the identity: -inf/+inf, the integer extreme, False/True.
  check_eager_and_jit(lambda x: fn(x, (0,)), (np.zeros((0, 2), np.float32),),
                      np.full((2,), -np.inf if kind == "max" else np.inf, np.float32),
                      np.float32)
  info = np.iinfo(np.int16)
  check_eager_and_jit(lambda x: fn(x, (1,)), (np.zeros((2, 0), np.int16),),
                      np.full((2,), info.min if kind == "max" else info.max, np.int16),
                      np.int16)
  check_eager_and_jit(lambda x: fn(x, (0,)), (np.zeros((0,), np.bool_),),
                      np.array(kind == "min"), np.bool_)


def test_reduce_max_min_nan_propagates():
  x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
  check_eager_and_jit(lambda x: lax.reduce_max(x, (1,)), (x,), np.array([np.nan, 6.0]),
                      np.float32)
  check_eager_and_jit(lambda x: lax.reduce_min(x, (0,)), (x,), np.array([1.0, np.nan, 3.0]),
                      np.float32)


def test_reduce_max_min_complex_lexicographic():
  x = np.array([1 + 2j, 1 + 3j, 0 + 5j, -1 + 9j], np.complex64)
  check_eager_and_jit(lambda x: lax.reduce_max(x, (0,)), (x,), np.max(x), np.complex64)
  check_eager_and_jit(lambda x: lax.reduce_min(x, (0,)), (x,), np.min(x), np.complex64)


def test_reduce_float16_sum_rounds_like_numpy():
  x = np.linspace(-1, 1, 12).astype(np.float16).reshape(3, 4)
  check_eager_and_jit(lambda x: lax.reduce_sum(x, (0, 1)), (x,),
                      np.sum(x.astype(np.float32)), np.float16, atol=1e-2, rtol=1e-2)


# --- reduce_and / or / xor ---------------------------------------------------------------

_logical = {"and": (lax.reduce_and, np.logical_and, np.bitwise_and),
            "or": (lax.reduce_or, np.logical_or, np.bitwise_or),
            "xor": (lax.reduce_xor, np.logical_xor, np.bitwise_xor)}


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
@given(sa=shape_and_axes(), seed=st.integers(0, 2**16))
def test_reduce_logical_bool(kind, sa, seed):
  shape, axes = sa
  x = np.random.default_rng(seed).random(shape) < 0.5
  fun, logical, _ = _logical[kind]
  expected = logical.reduce(x, axis=axes) if axes else x
  check_eager_and_jit(lambda x: fun(x, axes), (x,), expected, np.bool_)


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
def test_reduce_bitwise_ints(kind, dtype):
  x = np.random.default_rng(1).integers(0, 120, (4, 3)).astype(dtype)
  if np.dtype(dtype).kind == "i":
    x[0, 0] = -5
  fun, _, bitwise = _logical[kind]
  check_eager_and_jit(lambda x: fun(x, (0,)), (x,), bitwise.reduce(x, axis=0), dtype)
  # Empty: the identity (all bits set for and, zero otherwise).
  empty = np.zeros((0, 2), dtype)
  identity = np.array(-1).astype(dtype) if kind == "and" else np.array(0, dtype)
  check_eager_and_jit(lambda x: fun(x, (0,)), (empty,), np.full((2,), identity), dtype)


# --- weak types, errors ------------------------------------------------------------------

def test_weak_types():
  weak = device_put(np.ones((2, 3), np.float32), weak_type=True)
  assert lax.reduce_sum(weak, (1,)).weak_type
  assert lax.reduce_max(weak, (0, 1)).weak_type
  assert lax.reduce_prod(weak, (0,)).weak_type
  assert not lax.reduce_sum(np.ones((2, 3), np.float32), (1,)).weak_type
  weak_int = device_put(np.ones((3,), np.int32), weak_type=True)
  assert not lax.reduce_or(weak_int, (0,)).weak_type
  assert not lax.argmax(weak, 1, np.int32).weak_type


@pytest.mark.parametrize("fn", [lax.reduce_sum, lax.reduce_prod, lax.reduce_max,
                                lax.reduce_min, lax.reduce_and, lax.reduce_or,
                                lax.reduce_xor])
def test_reduce_bad_axes(fn):
  x = np.zeros((2, 3), np.int32)
  name = fn.__name__
  with pytest.raises(ValueError, match=rf"{name}.*\(2, 3\)|{name}.*i32\[2,3\]"):
    fn(x, (2,))
  with pytest.raises(ValueError, match=rf"{name}.*out of range"):
    fn(x, (-1,))
  with pytest.raises(ValueError, match=rf"{name}.*duplicate"):
    fn(x, (0, 0))
  with pytest.raises(ValueError, match=name):
    hlox.jit(lambda x: fn(x, (5,)))(x)


def test_reduce_bad_dtypes():
  with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
    lax.reduce_sum(np.ones(3, np.bool_), (0,))
  with pytest.raises(TypeError, match="reduce_prod does not accept dtype bool"):
    lax.reduce_prod(np.ones(3, np.bool_), (0,))
  with pytest.raises(TypeError, match="reduce_and does not accept dtype float32"):
    lax.reduce_and(np.ones(3, np.float32), (0,))
  with pytest.raises(TypeError, match="reduce_xor does not accept dtype complex64"):
    lax.reduce_xor(np.ones(3, np.complex64), (0,))


# --- argmax / argmin ---------------------------------------------------------------------

@st.composite
def shape_and_axis(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  axis = draw(st.integers(0, len(shape) - 1))
  return shape, axis


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(sa=shape_and_axis(), seed=st.integers(0, 2**16), nan_frac=st.sampled_from([0, 0.3]))
def test_argminmax_float_with_nans(name, sa, seed, nan_frac):
  shape, axis = sa
  rng = np.random.default_rng(seed)
  # Few distinct values, so ties are common: the first index must win.
  x = rng.integers(-2, 3, shape).astype(np.float32)
  x[rng.random(shape) < nan_frac] = np.nan
  fun = lambda x: getattr(lax, name)(x, axis, np.int32)
  # NumPy also treats NaN as the extremum and returns the first one.
  check_eager_and_jit(fun, (x,), getattr(np, name)(x, axis=axis), np.int32)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16])
def test_argminmax_dtypes(name, dtype):
  rng = np.random.default_rng(3)
  x = rand(rng, (4, 6), dtype, low=-3, high=3)
  for axis in (0, 1):
    fun = lambda x: getattr(lax, name)(x, axis, np.int32)
    check_eager_and_jit(fun, (x,), getattr(np, name)(x, axis=axis), np.int32)


def test_argminmax_special_cases():
  x = np.array([[-np.inf, -np.inf, 1.0], [np.nan, 2.0, np.nan], [np.inf, 0.0, np.inf]],
               np.float32)
  check_eager_and_jit(lambda x: lax.argmax(x, 1, np.int32), (x,), np.array([2, 0, 0]),
                      np.int32)
  check_eager_and_jit(lambda x: lax.argmin(x, 1, np.int32), (x,), np.array([0, 0, 1]),
                      np.int32)
  all_min = np.full((5,), -np.inf, np.float32)
  check_eager_and_jit(lambda x: lax.argmax(x, 0, np.int32), (all_min,), np.array(0),
                      np.int32)
  i = np.array([np.iinfo(np.int32).min] * 3, np.int32)
  check_eager_and_jit(lambda x: lax.argmax(x, 0, np.int32), (i,), np.array(0), np.int32)
  # A wide index dtype is honoured (canonicalized: int64 -> int32 without x64).
  assert lax.argmax(x, 0, np.int8).dtype == np.int8


def test_argminmax_errors():
  x = np.zeros((2, 3), np.float32)
  with pytest.raises(ValueError, match=r"argmax: Invalid axis 2 for operand f32\[2,3\]"):
    lax.argmax(x, 2, np.int32)
  with pytest.raises(ValueError, match=r"argmin: .*require non-empty reduced dim.*f32\[2,0\]"):
    lax.argmin(np.zeros((2, 0), np.float32), 1, np.int32)
  with pytest.raises(TypeError, match="argmax: index_dtype must be an integer"):
    lax.argmax(x, 0, np.float32)
  with pytest.raises(TypeError, match="argmin does not accept dtype complex64"):
    lax.argmin(np.zeros(3, np.complex64), 0, np.int32)


# --- generic reduce ----------------------------------------------------------------------

def test_reduce_monoid_uses_dedicated_primitive():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  assert _primitive_names(lambda x: lax.reduce(x, 0.0, lax.add, (1,)), x) == ["reduce_sum"]
  assert _primitive_names(lambda x: lax.reduce(x, 1.0, lax.mul, (1,)), x) == ["reduce_prod"]
  check_eager_and_jit(lambda x: lax.reduce(x, 0.0, lax.add, (0,)), (x,), x.sum(0),
                      np.float32)
  # Not the identity: the generic primitive (XLA's result is then unspecified, so only the
  # structure is checked).
  assert _primitive_names(lambda x: lax.reduce(x, 1.0, lax.add, (1,)), x) == ["reduce"]


def test_reduce_generic_computation():
  x = np.random.default_rng(0).uniform(-2, 2, (3, 4)).astype(np.float32)
  add = lambda a, b: lax.add(a, b)  # not lax.add itself: traced into the region
  fun = lambda x: lax.reduce(x, np.float32(0), add, (1,))
  assert _primitive_names(fun, x) == ["reduce"]
  check_eager_and_jit(fun, (x,), x.sum(1), np.float32, atol=1e-5)
  fun_all = lambda x: lax.reduce(x, np.float32(0), add, (0, 1))
  check_eager_and_jit(fun_all, (x,), x.sum(), np.float32, atol=1e-5)


def test_reduce_variadic():
  rng = np.random.default_rng(1)
  x = rng.uniform(0.5, 1.5, (2, 5)).astype(np.float32)
  i = rng.integers(0, 10, (2, 5)).astype(np.int32)

  def comp(a, b):
    return {"s": lax.add(a["s"], b["s"]), "p": lax.mul(a["p"], b["p"])}

  def fun(x, i):
    return lax.reduce({"s": x, "p": i}, {"s": np.float32(0), "p": np.int32(1)}, comp, (1,))

  for out in (fun(x, i), hlox.jit(fun)(x, i)):
    assert_close(out["s"], x.sum(1), np.float32)
    assert_close(out["p"], i.prod(1), np.int32)


def test_reduce_errors():
  x = np.zeros((2, 3), np.float32)
  add = lambda a, b: lax.add(a, b)
  with pytest.raises(ValueError, match="same tree structure as init_values"):
    lax.reduce((x, x), (np.float32(0),), add, (0,))
  with pytest.raises(ValueError, match="reduce found non-scalar initial value"):
    lax.reduce(x, np.zeros(2, np.float32), add, (0,))
  with pytest.raises(TypeError, match="reduce: operand dtypes must match"):
    lax.reduce(x, np.int32(0), add, (0,))
  with pytest.raises(ValueError, match=r"reduce: axes \(2,\) out of range"):
    lax.reduce(x, np.float32(0), add, (2,))
  with pytest.raises(TypeError, match="reduce: the computation must return scalars"):
    lax.reduce(x, np.float32(0), lambda a, b: lax.convert_element_type(a, np.int32), (0,))


# --- cumulative reductions ---------------------------------------------------------------

def _np_cumulative(np_accumulate, x, axis, reverse):
  if reverse:
    return np.flip(np_accumulate(np.flip(x, axis), axis=axis), axis)
  return np_accumulate(x, axis=axis)


_cumulative = {
    "cumsum": (lax.cumsum, np.add.accumulate),
    "cumprod": (lax.cumprod, np.multiply.accumulate),
    "cummax": (lax.cummax, np.maximum.accumulate),
    "cummin": (lax.cummin, np.minimum.accumulate),
    "cumlogsumexp": (lax.cumlogsumexp, np.logaddexp.accumulate),
}


@st.composite
def shape_axis_maybe_empty(draw):
  shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
  return shape, draw(st.integers(0, len(shape) - 1))


@pytest.mark.parametrize("name", list(_cumulative))
@given(sa=shape_axis_maybe_empty(), reverse=st.booleans(), seed=st.integers(0, 2**16))
def test_cumulative_float32(name, sa, reverse, seed):
  shape, axis = sa
  fn, np_acc = _cumulative[name]
  x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)
  expected = _np_cumulative(np_acc, x, axis, reverse)
  check_eager_and_jit(lambda x: fn(x, axis=axis, reverse=reverse), (x,), expected,
                      np.float32, atol=1e-5)


# Complex cummax/cummin are tested below (lexicographic order).
@pytest.mark.parametrize("name, dtype", [
    (n, d) for n in ("cumsum", "cumprod", "cummax", "cummin")
    for d in (np.int8, np.uint8, np.int32, np.complex64)
    if not (n in ("cummax", "cummin") and np.dtype(d).kind == "c")])
def test_cumulative_dtypes(name, dtype):
  fn, np_acc = _cumulative[name]
  x = rand(np.random.default_rng(2), (3, 4), dtype, low=-2, high=3)
  for axis, reverse in ((0, False), (1, True)):
    expected = _np_cumulative(np_acc, x, axis, reverse).astype(dtype)
    check_eager_and_jit(lambda x: fn(x, axis, reverse), (x,), expected, dtype)


def test_cummax_cummin_nan_and_complex():
  x = np.array([1.0, 3.0, np.nan, 2.0, 5.0], np.float32)
  check_eager_and_jit(lambda x: lax.cummax(x), (x,), np.maximum.accumulate(x), np.float32)
  check_eager_and_jit(lambda x: lax.cummin(x, reverse=True), (x,),
                      _np_cumulative(np.minimum.accumulate, x, 0, True), np.float32)
  c = np.array([1 + 1j, 1 + 3j, 2 - 1j, 0 + 9j], np.complex64)
  check_eager_and_jit(lambda x: lax.cummax(x), (c,), np.array([1 + 1j, 1 + 3j, 2 - 1j,
                                                               2 - 1j]), np.complex64)


def test_cumlogsumexp_is_stable():
  x = np.array([1000.0, 1000.0, -np.inf, 0.0, -1000.0], np.float32)
  check_eager_and_jit(lambda x: lax.cumlogsumexp(x), (x,), np.logaddexp.accumulate(
      x.astype(np.float64)), np.float32)
  neg_inf = np.full((3,), -np.inf, np.float32)
  check_eager_and_jit(lambda x: lax.cumlogsumexp(x), (neg_inf,), neg_inf, np.float32)
  y = np.array([np.inf, 1.0, np.nan, 2.0], np.float32)
  check_eager_and_jit(lambda x: lax.cumlogsumexp(x), (y,), np.array([np.inf, np.inf, np.nan,
                                                                     np.nan]), np.float32)


def test_cumulative_weak_type_and_errors():
  weak = device_put(np.ones((3,), np.float32), weak_type=True)
  assert lax.cumsum(weak).weak_type
  x = np.zeros((2, 3), np.float32)
  with pytest.raises(ValueError, match=r"cumsum: axis 2 is out of range.*f32\[2,3\]"):
    lax.cumsum(x, 2)
  with pytest.raises(ValueError, match="cummax: axis -1 is out of range"):
    lax.cummax(x, -1)
  with pytest.raises(TypeError, match="cumsum does not accept dtype bool"):
    lax.cumsum(np.ones(3, np.bool_))
  with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
    lax.cumlogsumexp(np.ones(3, np.int32))
  assert _primitive_names(lambda x: lax.cumprod(x, 1), x) == ["cumprod"]


# --- reduce_window -----------------------------------------------------------------------

def _np_reduce_window(x, init, ufunc, window, strides, padding, base_dilation,
                      window_dilation):
  dilated_shape = tuple(0 if d == 0 else (d - 1) * b + 1 for d, b in zip(x.shape,
                                                                         base_dilation))
  xd = np.full(dilated_shape, init, x.dtype)
  xd[tuple(slice(None, None, b) for b in base_dilation)] = x
  xp = np.pad(xd, padding, constant_values=init)
  out_shape = []
  for d, w, s, wd in zip(xp.shape, window, strides, window_dilation):
    span = (w - 1) * wd + 1
    out_shape.append(max(0, (d - span) // s + 1) if d >= span else 0)
  out = np.full(out_shape, init, x.dtype)
  for idx in np.ndindex(*out_shape):
    sl = tuple(slice(i * s, i * s + (w - 1) * wd + 1, wd)
               for i, s, w, wd in zip(idx, strides, window, window_dilation))
    out[idx] = ufunc.reduce(xp[sl].ravel(), initial=init)
  return out


_window_cases = [
    # window, strides, padding, base_dilation, window_dilation
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((3, 1), (1, 1), "SAME_LOWER", None, None),
    ((2, 2), (1, 2), ((1, 0), (0, 2)), (2, 1), (1, 2)),
    ((1, 4), (1, 1), "VALID", None, None),
]


def test_padtype_to_pads_returns_python_ints():
  pads = lax.padtype_to_pads(np.array([8, 8]), np.array([3, 3]), np.array([2, 2]), "SAME_LOWER")
  assert pads == [(1, 0), (1, 0)] and all(type(v) is int for p in pads for v in p)


@pytest.mark.parametrize("case", _window_cases)
def test_reduce_window_sum(case):
  window, strides, padding, bd, wd = case
  x = np.random.default_rng(0).uniform(-2, 2, (4, 5)).astype(np.float32)
  pads = lax.padtype_to_pads(
      [(d - 1) * b + 1 for d, b in zip(x.shape, bd or (1, 1))],
      [(w - 1) * d + 1 for w, d in zip(window, wd or (1, 1))], strides, padding)
  expected = _np_reduce_window(x, np.float32(0), np.add, window, strides, pads,
                               bd or (1, 1), wd or (1, 1))
  fun = lambda x: lax.reduce_window(x, 0.0, lax.add, window, strides, padding, bd, wd)
  assert _primitive_names(fun, x) == ["reduce_window_sum"]
  check_eager_and_jit(fun, (x,), expected, np.float32, atol=1e-5)


@pytest.mark.parametrize("case", _window_cases[:3])
def test_reduce_window_generic_and_max(case):
  window, strides, padding, _, _ = case
  x = np.random.default_rng(1).uniform(0.5, 1.5, (4, 5)).astype(np.float32)
  pads = lax.padtype_to_pads(x.shape, window, strides, padding)
  mul = lambda a, b: lax.mul(a, b)
  fun = lambda x: lax.reduce_window(x, np.float32(1), mul, window, strides, padding)
  assert _primitive_names(fun, x) == ["reduce_window"]
  expected = _np_reduce_window(x, np.float32(1), np.multiply, window, strides, pads,
                               (1, 1), (1, 1))
  check_eager_and_jit(fun, (x,), expected, np.float32)
  if hasattr(lax, "max"):
    fun_max = lambda x: lax.reduce_window(x, -np.inf, lax.max, window, strides, padding)
    assert _primitive_names(fun_max, x) == ["reduce_window_max"]
    expected = _np_reduce_window(x, np.float32(-np.inf), np.maximum, window, strides, pads,
                                 (1, 1), (1, 1))
    check_eager_and_jit(fun_max, (x,), expected, np.float32)


def test_reduce_window_variadic():
  x = np.arange(6, dtype=np.float32)
  i = np.arange(6, dtype=np.int32)
  comp = lambda a, b: (lax.add(a[0], b[0]), lax.add(a[1], b[1]))
  fun = lambda x, i: lax.reduce_window((x, i), (np.float32(0), np.int32(0)), comp, (3,), (1,))
  for s, t in (fun(x, i), hlox.jit(fun)(x, i)):
    assert_close(s, np.array([3.0, 6.0, 9.0, 12.0]), np.float32)
    assert_close(t, np.array([3, 6, 9, 12]), np.int32)


def test_reduce_window_errors():
  x = np.zeros((4, 5), np.float32)
  with pytest.raises(TypeError, match=r"reduce_window_sum: window_dimensions \(2,\) must "
                                      r"have one entry per dimension.*f32\[4,5\]"):
    lax.reduce_window(x, 0.0, lax.add, (2,), (1,), ((0, 0),))
  with pytest.raises(TypeError, match="reduce_window_sum: window_strides must have every "
                                      "element be strictly positive"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1))
  with pytest.raises(ValueError, match="unknown padding 'FULL'"):
    lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
  with pytest.raises(TypeError, match=r"reduce_window expected init_values to be scalars but "
                                      r"init_values have shapes \[\(1,\)\]"):
    lax.reduce_window(x, np.zeros(1, np.float32), lax.max, (2, 2), (1, 1))
  with pytest.raises(ValueError, match="reduce_window output must have the same tree structure"):
    lax.reduce_window(x, 0.0, lambda a, b: [a + b], (2, 2), (1, 1))
