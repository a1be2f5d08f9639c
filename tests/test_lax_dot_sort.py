"""lax.dot_general / dot / batch_matmul, lax.sort / sort_key_val / top_k against NumPy."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
from hlox import lax
from hlox.core import dtypes

from tests.util import assert_close, check_eager_and_jit, rand


def _dot_general_ref(lhs, rhs, dimension_numbers, out_dtype=None):
  """NumPy oracle: einsum with labels built from the dimension numbers."""
  (lc, rc), (lb, rb) = dimension_numbers
  letters = iter("abcdefghijklmnopqrstuvwxyz")
  lhs_labels = [next(letters) for _ in range(lhs.ndim)]
  rhs_labels = [next(letters) for _ in range(rhs.ndim)]
  for l, r in zip(lc, rc):
    rhs_labels[r] = lhs_labels[l]
  for l, r in zip(lb, rb):
    rhs_labels[r] = lhs_labels[l]
  batch = [lhs_labels[d] for d in lb]
  lhs_free = [c for i, c in enumerate(lhs_labels) if i not in (*lc, *lb)]
  rhs_free = [c for i, c in enumerate(rhs_labels) if i not in (*rc, *rb)]
  spec = f"{''.join(lhs_labels)},{''.join(rhs_labels)}->{''.join(batch + lhs_free + rhs_free)}"
  wide = np.complex128 if np.iscomplexobj(lhs) or np.iscomplexobj(rhs) else (
      np.int64 if lhs.dtype.kind in "iub" and rhs.dtype.kind in "iub" else np.float64)
  out = np.einsum(spec, lhs.astype(wide), rhs.astype(wide))
  return out if out_dtype is None else out.astype(out_dtype)


DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),                 # matmul
    ((4,), (4,), (((0,), (0,)), ((), ()))),                     # vector dot
    ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),                 # contract leading dims
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),       # batched matmul
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),       # batch dims not leading
    ((2, 3, 4, 5), (4, 5, 6), (((2, 3), (0, 1)), ((), ()))),    # two contracting dims
    ((2, 3, 4), (3, 2, 4), (((1, 2), (0, 2)), ((0,), (1,)))),   # batch + two contracting
    ((2, 3), (4,), (((), ()), ((), ()))),                       # outer product
    ((2, 0, 3), (3, 4), (((2,), (0,)), ((), ()))),              # empty free dim
    ((2, 0), (0, 3), (((1,), (0,)), ((), ()))),                 # empty contraction -> zeros
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dnums", DOT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dot_general(lhs_shape, rhs_shape, dnums, dtype):
  rng = np.random.default_rng(0)
  lhs, rhs = rand(rng, lhs_shape, dtype), rand(rng, rhs_shape, dtype)
  fun = lambda x, y: lax.dot_general(x, y, dnums)
  check_eager_and_jit(fun, (lhs, rhs), _dot_general_ref(lhs, rhs, dnums, dtype), dtype,
                      rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.complex64, np.float16, dtypes.bfloat16, np.bool_,
                                   np.uint8])
def test_dot_general_dtypes(dtype):
  rng = np.random.default_rng(1)
  dnums = (((2,), (1,)), ((0,), (0,)))
  lhs, rhs = rand(rng, (2, 3, 4), dtype, 0, 3), rand(rng, (2, 4, 3), dtype, 0, 3)
  expected = _dot_general_ref(lhs, rhs, dnums)
  if dtype == np.bool_:
    expected = expected != 0  # a boolean dot is an "or" of "and"s
  fun = lambda x, y: _host_readable(lax.dot_general(x, y, dnums))
  check_eager_and_jit(fun, (lhs, rhs), expected.astype(dtype).astype(_readable(dtype)),
                      _readable(dtype), rtol=5e-2, atol=5e-2)
  assert lax.dot_general(lhs, rhs, dnums).dtype == np.dtype(dtype)


def _readable(dtype):
  return np.float32 if np.dtype(dtype) == dtypes.bfloat16 else dtype


def _host_readable(x):
  # bfloat16 results are compared as float32 (exactly representable).
  if x.dtype == dtypes.bfloat16:
    return lax.convert_element_type(x, np.float32)
  return x


@given(b=st.integers(0, 2), m=st.integers(1, 3), k=st.integers(0, 3), n=st.integers(1, 3),
       swap=st.booleans())
def test_dot_general_hypothesis(b, m, k, n, swap):
  rng = np.random.default_rng(b * 100 + m * 10 + k)
  # lhs (b, m, k) or (k, b, m); rhs (b, k, n)
  if swap:
    lhs, dn_l = rand(rng, (k, b, m), np.float32), ((0,), (1,))
  else:
    lhs, dn_l = rand(rng, (b, m, k), np.float32), ((2,), (0,))
  rhs = rand(rng, (b, k, n), np.float32)
  dnums = ((dn_l[0], (1,)), (dn_l[1], (0,)))
  out = lax.dot_general(lhs, rhs, dnums)
  assert_close(out, _dot_general_ref(lhs, rhs, dnums), np.float32, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_dtype,preferred", [
    (np.int8, np.int32), (np.uint8, np.uint32), (np.int32, np.float32),
    (dtypes.bfloat16, np.float32), (np.float16, np.float32), (np.float32, np.complex64)])
def test_dot_general_preferred_element_type(in_dtype, preferred):
  rng = np.random.default_rng(2)
  # int8 products of 100s overflow int8 but not the int32 accumulator.
  lo, hi = (50, 120) if np.dtype(in_dtype).kind in "iu" else (-2, 2)
  lhs, rhs = rand(rng, (3, 6), in_dtype, lo, hi), rand(rng, (6, 2), in_dtype, lo, hi)
  dnums = (((1,), (0,)), ((), ()))
  fun = lambda x, y: lax.dot_general(x, y, dnums, preferred_element_type=preferred)
  expected = _dot_general_ref(lhs.astype(np.float64), rhs.astype(np.float64), dnums)
  check_eager_and_jit(fun, (lhs, rhs), expected.astype(preferred), preferred,
                      rtol=1e-2, atol=1e-2)


def test_dot_general_mixed_dtypes():
  rng = np.random.default_rng(3)
  lhs, rhs = rand(rng, (3, 4), np.int32), rand(rng, (4, 2), np.float32)
  dnums = (((1,), (0,)), ((), ()))
  out = check_eager_and_jit(lambda x, y: lax.dot_general(x, y, dnums), (lhs, rhs),
                            lhs.astype(np.float64) @ rhs, np.float32)
  assert out.dtype == np.float32
  # Mixed int widths compute in the wider one.
  a, b = rand(rng, (5,), np.int8), rand(rng, (5,), np.int32)
  out = lax.dot_general(a, b, (((0,), (0,)), ((), ())))
  assert out.dtype == np.int32 and int(out) == int(a.astype(np.int64) @ b)


@pytest.mark.parametrize("precision,expected", [
    (None, "DEFAULT, DEFAULT"), (lax.Precision.HIGHEST, "HIGHEST, HIGHEST"),
    ("high", "HIGH, HIGH"), ("float32", "HIGHEST, HIGHEST"),
    ((lax.Precision.DEFAULT, lax.Precision.HIGHEST), "DEFAULT, HIGHEST"),
    (("highest", "default"), "HIGHEST, DEFAULT")])
def test_dot_general_precision(precision, expected):
  rng = np.random.default_rng(4)
  lhs, rhs = rand(rng, (2, 3), np.float32), rand(rng, (3, 2), np.float32)
  fun = lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())), precision=precision)
  check_eager_and_jit(fun, (lhs, rhs), lhs.astype(np.float64) @ rhs, np.float32)
  text = hlox.jit(fun).lower(lhs, rhs).as_text()
  assert f"precision = [{expected}]" in text


def test_dot_general_bad_precision():
  x = np.ones((2, 2), np.float32)
  with pytest.raises(ValueError, match="precision"):
    lax.dot_general(x, x, (((1,), (0,)), ((), ())), precision="fastest-ever")
  with pytest.raises(ValueError, match="precision"):
    lax.dot_general(x, x, (((1,), (0,)), ((), ())), precision=3)
  with pytest.raises(TypeError, match="positional"):  # lax.dot's options are keywords
    lax.dot(x, x, lax.Precision.DEFAULT)


def test_dot_general_jaxpr_printing():
  x, y = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
  text = str(hlox.make_jaxpr(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))(x, y))
  assert "dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in text
  # Lists are accepted and normalized to (hashable) tuples.
  text = str(hlox.make_jaxpr(lambda a, b: lax.dot_general(
      a, b, [[[1], [0]], [[], []]], precision="highest",
      preferred_element_type=np.float32))(x, y))
  # Too wide for one line: JAX's printer puts one parameter per line.
  assert ("dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n"
          "      precision=(Precision.HIGHEST, Precision.HIGHEST)\n"
          "      preferred_element_type=float32\n    ] a b") in text


def test_dot_general_weak_type():
  out = hlox.jit(lambda: lax.dot_general(2.0, 3.0, (((), ()), ((), ()))))()
  assert float(out) == 6.0 and out.dtype == np.float32
  assert hlox.make_jaxpr(lambda x: lax.dot_general(x, x, (((), ()), ((), ()))))(
      2.0).out_avals[0].weak_type


@pytest.mark.parametrize("lhs_shape,rhs_shape,dnums,match", [
    ((3, 4), (5, 6), (((1,), (0,)), ((), ())), r"contracting dimensions.*\(4,\) and \(5,\)"),
    ((3, 4), (4, 6), (((2,), (0,)), ((), ())), r"lhs dimension numbers"),
    ((3, 4), (4, 6), (((1,), (-1,)), ((), ())), r"rhs dimension numbers"),
    ((2, 3, 4), (3, 4, 5), (((2,), (1,)), ((0,), (0,))), r"batch dimensions.*same shape"),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), ())), r"equal numbers of lhs and rhs batch"),
    ((3, 4), (4, 6), (((1, 0), (0,)), ((), ())), r"equal numbers of lhs and rhs contracting"),
    ((3, 4), (4, 3), (((1, 1), (0, 0)), ((), ())), r"distinct"),
    ((2, 4), (2, 4), (((1,), (1,)), ((1,), (0,))), r"disjoint"),
])
def test_dot_general_shape_errors(lhs_shape, rhs_shape, dnums, match):
  lhs, rhs = np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32)
  with pytest.raises(TypeError, match=match):
    lax.dot_general(lhs, rhs, dnums)
  with pytest.raises(TypeError, match="dot_general"):
    hlox.jit(lambda x, y: lax.dot_general(x, y, dnums))(lhs, rhs)


def test_dot_general_dtype_errors():
  x = np.ones((2, 2), np.int32)
  dn = (((1,), (0,)), ((), ()))
  with pytest.raises(TypeError, match="narrower"):
    lax.dot_general(x, x, dn, preferred_element_type=np.int8)
  with pytest.raises(TypeError, match="narrower"):  # a complex result counts 32 bits
    lax.dot_general(x.astype(np.complex64), x.astype(np.complex64), dn,
                    preferred_element_type=np.int16)
  with pytest.raises(TypeError, match="dimension_numbers"):
    lax.dot_general(x, x, ((1,), (0,)))


@pytest.mark.parametrize("lhs_shape,rhs_shape", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                                 ((2, 3), (3, 4))])
def test_dot(lhs_shape, rhs_shape):
  rng = np.random.default_rng(5)
  lhs, rhs = rand(rng, lhs_shape, np.float32), rand(rng, rhs_shape, np.float32)
  check_eager_and_jit(lambda x, y: lax.dot(x, y, precision=lax.Precision.HIGHEST), (lhs, rhs),
                      np.dot(lhs.astype(np.float64), rhs), np.float32)


def test_dot_preferred_and_errors():
  rng = np.random.default_rng(6)
  lhs, rhs = rand(rng, (2, 3), np.int8), rand(rng, (3,), np.int8)
  out = lax.dot(lhs, rhs, preferred_element_type=np.int32)
  assert_close(out, lhs.astype(np.int32) @ rhs.astype(np.int32), np.int32)
  with pytest.raises(ValueError, match="lax.dot"):
    lax.dot(np.ones((2, 3, 4)), np.ones((4, 2)))
  with pytest.raises(ValueError, match="lax.dot"):
    lax.dot(np.ones((2, 3)), np.ones((4,)))


def test_batch_matmul():
  rng = np.random.default_rng(7)
  lhs, rhs = rand(rng, (2, 3, 4, 5), np.float32), rand(rng, (2, 3, 5, 2), np.float32)
  check_eager_and_jit(lax.batch_matmul, (lhs, rhs), np.matmul(lhs.astype(np.float64), rhs),
                      np.float32)
  with pytest.raises(ValueError, match="batch_matmul"):
    lax.batch_matmul(np.ones((3,)), np.ones((3, 3)))
  with pytest.raises(ValueError, match="batch_matmul"):
    lax.batch_matmul(np.ones((2, 3, 3)), np.ones((3, 3)))


# --- sort --------------------------------------------------------------------------------

_special = np.array([3., np.nan, -0.0, 1., 0.0, -np.nan, -np.inf, np.inf, 1., -2.5])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, dtypes.bfloat16])
def test_sort_floats_nan_last(dtype):
  x = _special.astype(dtype)
  expected = np.sort(x.astype(np.float64)).astype(_readable(dtype))
  out = check_eager_and_jit(lambda a: _host_readable(lax.sort(a)), (x,), expected,
                            _readable(dtype))
  assert np.isnan(np.asarray(out)[-2:]).all()


def test_sort_zeros_are_equal():
  # -0.0 and 0.0 compare equal: a stable sort keeps their order; NaNs of either sign last.
  keys = np.array([0.0, -0.0, np.nan, 0.0, -np.nan, -0.0, -1.0], np.float32)
  k, v = lax.sort_key_val(keys, np.arange(7, dtype=np.int32))
  np.testing.assert_array_equal(np.asarray(v), np.argsort(keys, kind="stable"))
  np.testing.assert_array_equal(np.asarray(v), [6, 0, 1, 3, 5, 2, 4])
  assert np.isnan(np.asarray(k)[-2:]).all()


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.uint32, np.bool_])
def test_sort_ints_and_bools(dtype):
  rng = np.random.default_rng(8)
  x = rand(rng, (3, 7), dtype, -50, 50)
  if dtype == np.uint32:
    x[0, 0] = np.iinfo(np.uint32).max  # unsigned order, not signed
  check_eager_and_jit(lax.sort, (x,), np.sort(x, axis=-1), dtype)
  check_eager_and_jit(lambda a: lax.sort(a, dimension=0), (x,), np.sort(x, axis=0), dtype)


def test_sort_complex_lexicographic():
  x = np.array([1 + 2j, 1 - 1j, 0 + 5j, -1 + 0j, 1 + 2j, 0 - 5j, np.nan + 0j], np.complex64)
  check_eager_and_jit(lax.sort, (x,), np.sort(x), np.complex64)


@pytest.mark.parametrize("shape,dimension", [((8,), 0), ((4, 6), 1), ((4, 6), 0),
                                             ((2, 3, 5), -2)])
def test_sort_key_val_stable(shape, dimension):
  rng = np.random.default_rng(9)
  keys = rng.integers(0, 3, size=shape).astype(np.float32)  # many ties
  vals = rand(rng, shape, np.float32)
  order = np.argsort(keys, axis=dimension, kind="stable")
  fun = lambda k, v: lax.sort_key_val(k, v, dimension=dimension)
  for out in (fun(keys, vals), hlox.jit(fun)(keys, vals)):
    assert_close(out[0], np.take_along_axis(keys, order, dimension), np.float32)
    assert_close(out[1], np.take_along_axis(vals, order, dimension), np.float32)


def test_sort_multiple_operands_num_keys():
  a = np.array([1, 0, 1, 0, 2, 1], np.int32)
  b = np.array([5., 3., 2., 9., 0., 2.], np.float32)
  c = np.arange(6, dtype=np.int32)
  order2 = np.lexsort((b, a))      # primary a, secondary b, stable
  order1 = np.argsort(a, kind="stable")
  fun2 = lambda *xs: lax.sort(xs, num_keys=2)
  fun1 = lambda *xs: lax.sort(list(xs), num_keys=1)
  for fun, order in ((fun2, order2), (fun1, order1)):
    for out in (fun(a, b, c), hlox.jit(fun)(a, b, c)):
      assert isinstance(out, tuple) and len(out) == 3
      for got, ref in zip(out, (a, b, c)):
        np.testing.assert_array_equal(np.asarray(got), ref[order])


def test_sort_unstable_still_sorts():
  rng = np.random.default_rng(10)
  x = rand(rng, (5, 9), np.float32)
  check_eager_and_jit(lambda a: lax.sort(a, is_stable=False), (x,), np.sort(x), np.float32)


def test_sort_jaxpr_and_weak_type():
  text = str(hlox.make_jaxpr(lambda x: lax.sort(x))(np.ones(3, np.float32)))
  assert "sort[dimension=0 is_stable=True num_keys=1]" in text
  jaxpr = hlox.make_jaxpr(lambda x: lax.sort(x * 1.0))(np.float32(1.0) * np.ones(3, np.float32))
  assert jaxpr.out_avals[0].dtype == np.float32


def test_sort_errors():
  with pytest.raises(TypeError, match="equal shapes"):
    lax.sort((np.ones(3), np.ones(4)))
  with pytest.raises(ValueError, match="num_keys"):
    lax.sort((np.ones(3), np.ones(3)), num_keys=3)
  with pytest.raises(ValueError, match="num_keys"):
    lax.sort(np.ones(3), num_keys=2)
  with pytest.raises(ValueError, match="out of bounds"):
    lax.sort(np.ones((2, 3)), dimension=2)
  with pytest.raises(ValueError, match="out of bounds"):
    lax.sort(np.float32(1.0))
  with pytest.raises(TypeError, match="at least one"):
    lax.sort(())


# --- top_k -------------------------------------------------------------------------------

def _top_k_ref(x, k, axis=-1):
  order = np.argsort(-x.astype(np.float64), axis=axis, kind="stable")
  idx = np.take(order, np.arange(k), axis=axis)
  return np.take_along_axis(x, idx, axis), idx.astype(np.int32)


@pytest.mark.parametrize("shape,k,dtype", [((7,), 3, np.float32), ((4, 6), 6, np.float32),
                                           ((3, 5), 0, np.float32), ((2, 3, 9), 4, np.int32),
                                           ((5,), 5, np.uint8)])
def test_top_k(shape, k, dtype):
  rng = np.random.default_rng(11)
  x = rand(rng, shape, dtype, -20, 20)
  ref_vals, ref_idx = _top_k_ref(x, k)
  for vals, idx in (lax.top_k(x, k), hlox.jit(lambda a: lax.top_k(a, k))(x)):
    assert_close(vals, ref_vals, dtype)
    assert_close(idx, ref_idx, np.int32)


def test_top_k_ties_nan_axis():
  x = np.array([[1., 3., 3., np.nan, 2.], [5., 5., -1., 5., 0.]], np.float32)
  vals, idx = lax.top_k(x, 3)
  np.testing.assert_array_equal(np.asarray(idx), [[3, 1, 2], [0, 1, 3]])
  assert np.isnan(np.asarray(vals)[0, 0])
  vals, idx = hlox.jit(lambda a: lax.top_k(a, 1, axis=0))(x)
  np.testing.assert_array_equal(np.asarray(idx), [[1, 1, 0, 0, 0]])
  assert_close(vals, [[5., 5., 3., np.nan, 2.]], np.float32)


def test_top_k_errors():
  x = np.ones((3, 4), np.float32)
  with pytest.raises(ValueError, match="k=5"):
    lax.top_k(x, 5)
  with pytest.raises(ValueError, match="non-negative"):
    lax.top_k(x, -1)
  with pytest.raises(TypeError, match="rank at least 1"):
    lax.top_k(np.float32(1.0), 1)
  with pytest.raises(TypeError, match="complex"):
    lax.top_k(x.astype(np.complex64), 1)
  with pytest.raises(ValueError, match="out of bounds"):
    lax.top_k(x, 1, axis=2)
