"""lax elementwise primitives against NumPy / SciPy references, eagerly and under jit.

One table (``OPS``) drives the bulk of the checks: each record names the lax function, a
NumPy reference (computed in float64/complex128/int64 on the same inputs), the dtypes it is
checked on and the input domain. Operations with parameters or structure (select_n, clamp,
bitcast_convert_type, ...) and the error cases have their own tests below.
"""
import math
import zlib

import numpy as np
import pytest
import scipy.special
from hypothesis import given, strategies as st

import hlox
from hlox import lax
from hlox.core import dtypes

from tests.util import assert_close, check_eager_and_jit, rand

f16, bf16, f32 = np.dtype(np.float16), dtypes.bfloat16, np.dtype(np.float32)
c64, i32, i8, u8, u32 = (np.dtype(t) for t in (np.complex64, np.int32, np.int8, np.uint8,
                                                np.uint32))
bool_ = np.dtype(np.bool_)

SHAPE = (3, 4)


def _wide(x):
  """The exact wide version of an input, for the reference computation."""
  x = np.asarray(x)
  if x.dtype == bool_:
    return x
  if x.dtype.kind == "c":
    return x.astype(np.complex128)
  if x.dtype.kind in "iu":
    return x.astype(np.int64)
  return x.astype(np.float64)


def _inputs(rng, dtype, arity, domain, nonzero=False, shape=SHAPE):
  low, high = domain
  args = []
  for _ in range(arity):
    x = rand(rng, shape, dtype, low, high)
    if nonzero and np.dtype(dtype) != bool_:
      x = np.where(x == 0, np.ones((), dtype), x).astype(dtype)
      if np.dtype(dtype).kind == "f" or dtype == bf16:
        x = np.where(np.abs(x.astype(np.float32)) < 0.25, np.asarray(0.5, dtype), x)
    args.append(x)
  return args


def _c_div(x, y):
  """Integer division rounding toward zero (C and XLA), in int64."""
  q = np.abs(x) // np.abs(y)
  return np.where((x < 0) != (y < 0), -q, q)


def _round_afz(x):
  return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _popcount(x, bits):
  u = x.astype(np.int64) & ((1 << bits) - 1)
  return np.array([bin(int(v)).count("1") for v in u.ravel()]).reshape(x.shape)


def _clz(x, bits):
  u = x.astype(np.int64) & ((1 << bits) - 1)
  return np.array([bits - int(v).bit_length() for v in u.ravel()]).reshape(x.shape)


# name, lax function, reference on wide inputs, arity, dtypes, domain, options.
ANY_F = (f32, f16, bf16)
OPS = [
    # arithmetic
    ("add", lax.add, np.add, 2, (f32, f16, bf16, i32, u8, c64), (-5, 5), {}),
    ("sub", lax.sub, np.subtract, 2, (f32, i32, c64), (-5, 5), {}),
    ("mul", lax.mul, np.multiply, 2, (f32, bf16, i32, c64), (-5, 5), {}),
    ("div", lax.div, np.divide, 2, (f32, f16, c64), (-5, 5), {"nonzero": True}),
    ("div_int", lax.div, _c_div, 2, (i32, i8, u8), (-9, 9), {"nonzero": True}),
    ("rem", lax.rem, np.fmod, 2, (f32, i32, u8), (-9, 9), {"nonzero": True}),
    ("pow", lax.pow, np.power, 2, (f32, c64), (0.2, 3), {"rtol": 3e-5}),
    ("max", lax.max, np.maximum, 2, (f32, bf16, i32, u8, bool_), (-5, 5), {}),
    ("min", lax.min, np.minimum, 2, (f32, i32, bool_), (-5, 5), {}),
    ("neg", lax.neg, np.negative, 1, (f32, i32, c64), (-5, 5), {}),
    ("sign", lax.sign, np.sign, 1, (f32, i32, u8), (-5, 5), {}),
    ("abs", lax.abs, np.abs, 1, (f32, f16, i32, i8, c64), (-5, 5), {}),
    ("square", lax.square, np.square, 1, (f32, i32, c64), (-5, 5), {}),
    ("reciprocal", lax.reciprocal, np.reciprocal, 1, (f32, c64), (-5, 5), {"nonzero": True}),
    ("nextafter", lax.nextafter, np.nextafter, 2, (f32, f16), (-3, 3), {"exact": True}),
    # rounding
    ("floor", lax.floor, np.floor, 1, ANY_F, (-5, 5), {}),
    ("ceil", lax.ceil, np.ceil, 1, ANY_F, (-5, 5), {}),
    ("is_finite", lax.is_finite, np.isfinite, 1, (f32, f16), (-5, 5), {"specials": True}),
    # exponential, logarithm, roots
    ("exp", lax.exp, np.exp, 1, (f32, f16, bf16, c64), (-4, 4), {}),
    ("exp2", lax.exp2, np.exp2, 1, (f32, f16, c64), (-6, 6), {}),
    ("log", lax.log, np.log, 1, (f32, bf16, c64), (0.1, 5), {}),
    ("log1p", lax.log1p, np.log1p, 1, (f32, c64), (-0.9, 4), {}),
    ("expm1", lax.expm1, np.expm1, 1, (f32, c64), (-3, 3), {}),
    ("sqrt", lax.sqrt, np.sqrt, 1, (f32, f16, c64), (0, 9), {}),
    ("rsqrt", lax.rsqrt, lambda x: 1 / np.sqrt(x), 1, (f32, c64), (0.1, 9), {}),
    ("cbrt", lax.cbrt, np.cbrt, 1, (f32, f16), (-9, 9), {}),
    ("tanh", lax.tanh, np.tanh, 1, (f32, bf16, c64), (-3, 3), {}),
    ("logistic", lax.logistic, lambda x: 1 / (1 + np.exp(-x)), 1, (f32, f16, c64), (-6, 6), {}),
    # trigonometric and hyperbolic
    ("sin", lax.sin, np.sin, 1, (f32, f16, c64), (-4, 4), {}),
    ("cos", lax.cos, np.cos, 1, (f32, bf16, c64), (-4, 4), {}),
    ("tan", lax.tan, np.tan, 1, (f32, c64), (-1.2, 1.2), {"rtol": 3e-5}),
    ("asin", lax.asin, np.arcsin, 1, (f32, c64), (-0.95, 0.95), {}),
    ("acos", lax.acos, np.arccos, 1, (f32, c64), (-0.95, 0.95), {}),
    ("atan", lax.atan, np.arctan, 1, (f32, f16, c64), (-5, 5), {}),
    ("atan2", lax.atan2, np.arctan2, 2, (f32, f16), (-5, 5), {}),
    ("sinh", lax.sinh, np.sinh, 1, (f32, c64), (-3, 3), {}),
    ("cosh", lax.cosh, np.cosh, 1, (f32, c64), (-3, 3), {}),
    ("asinh", lax.asinh, np.arcsinh, 1, (f32, c64), (-5, 5), {}),
    ("acosh", lax.acosh, np.arccosh, 1, (f32, c64), (1.1, 6), {}),
    ("atanh", lax.atanh, np.arctanh, 1, (f32, c64), (-0.9, 0.9), {}),
    # special functions
    ("erf", lax.erf, scipy.special.erf, 1, (f32, f16, bf16), (-3, 3), {}),
    ("erfc", lax.erfc, scipy.special.erfc, 1, (f32, f16), (-2, 3), {"rtol": 5e-5}),
    ("erf_inv", lax.erf_inv, scipy.special.erfinv, 1, (f32, f16), (-0.95, 0.95),
     {"rtol": 3e-5}),
    ("lgamma", lax.lgamma, scipy.special.gammaln, 1, (f32, f16), (0.1, 6), {"atol": 3e-5}),
    ("digamma", lax.digamma, scipy.special.digamma, 1, (f32,), (0.2, 6),
     {"atol": 3e-5, "rtol": 3e-5}),
    # complex numbers
    ("real", lax.real, np.real, 1, (c64,), (-5, 5), {}),
    ("imag", lax.imag, np.imag, 1, (c64,), (-5, 5), {}),
    ("conj", lax.conj, np.conj, 1, (c64, f32), (-5, 5), {}),
    ("complex", lax.complex, lambda x, y: x + 1j * y, 2, (f32,), (-5, 5), {}),
    # comparisons
    ("eq", lax.eq, np.equal, 2, (f32, i32, bool_, c64), (-2, 2), {}),
    ("ne", lax.ne, np.not_equal, 2, (f32, i32, bool_, c64), (-2, 2), {}),
    ("lt", lax.lt, np.less, 2, (f32, i32, u8, bool_), (-2, 2), {}),
    ("le", lax.le, np.less_equal, 2, (f32, i32), (-2, 2), {}),
    ("gt", lax.gt, np.greater, 2, (f32, i32), (-2, 2), {}),
    ("ge", lax.ge, np.greater_equal, 2, (f32, u8, bool_), (-2, 2), {}),
    # bitwise
    ("bitwise_not", lax.bitwise_not, np.invert, 1, (i32, u8, bool_), (-50, 50), {}),
    ("bitwise_and", lax.bitwise_and, np.bitwise_and, 2, (i32, u8, bool_), (-50, 50), {}),
    ("bitwise_or", lax.bitwise_or, np.bitwise_or, 2, (i32, u8, bool_), (-50, 50), {}),
    ("bitwise_xor", lax.bitwise_xor, np.bitwise_xor, 2, (i32, u8, bool_), (-50, 50), {}),
]

def _op_cases():
  for name, fn, ref, arity, dts, domain, opts in OPS:
    for dtype in dts:
      yield pytest.param(name, fn, ref, arity, dtype, domain, opts,
                         id=f"{name}-{np.dtype(dtype).name}")


def _expected_dtype(name, dtype, result):
  if name in ("abs", "real", "imag") and np.dtype(dtype).kind == "c":
    return {c64: f32}[np.dtype(dtype)]
  if name == "conj" or name == "complex":
    return c64
  if np.asarray(result).dtype == bool_:
    return bool_
  return dtype


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name,fn,ref,arity,dtype,domain,opts", list(_op_cases()))
def test_op_against_numpy(name, fn, ref, arity, dtype, domain, opts):
  rng = np.random.default_rng(zlib.crc32(f"{name}-{np.dtype(dtype).name}".encode()))
  args = _inputs(rng, dtype, arity, domain, nonzero=opts.get("nonzero", False))
  if name == "pow" and np.dtype(dtype).kind == "f":
    args[1] = rand(rng, SHAPE, dtype, -2, 2)
  if opts.get("specials"):
    args[0].flat[:3] = [np.inf, -np.inf, np.nan]
  if opts.get("exact"):
    expected = ref(*args)  # computed in the input dtype, compared bit for bit
  else:
    expected = ref(*[_wide(a) for a in args])
  out_dtype = _expected_dtype(name, dtype, expected)
  if out_dtype.kind in "iu":
    expected = np.asarray(expected).astype(out_dtype)  # wrap around like the fixed width
  tol = {k: v for k, v in opts.items() if k in ("rtol", "atol")}
  if np.dtype(dtype) in (f16, bf16):
    tol = {}  # the dtype's own tolerance
  if opts.get("exact"):
    tol = {"rtol": 0, "atol": 0}
  check_eager_and_jit(fn, args, expected, out_dtype, **tol)


@pytest.mark.parametrize("dtype,bits", [(i32, 32), (u8, 8), (i8, 8)])
def test_population_count_and_clz(dtype, bits):
  x = np.array([0, 1, 2, 3, 7, 8, 100, -1 if dtype != u8 else 255, 5, 64], dtype)
  check_eager_and_jit(lax.population_count, [x], _popcount(x, bits), dtype)
  check_eager_and_jit(lax.clz, [x], _clz(x, bits), dtype)


@pytest.mark.parametrize("dtype", [i32, u8, i8])
def test_shifts(dtype):
  bits = np.iinfo(dtype).bits
  x = rand(np.random.default_rng(0), (10,), dtype, -100, 100)
  y = np.arange(10).astype(dtype) % bits
  wide = x.astype(np.int64)
  mask = (1 << bits) - 1
  left = ((wide << y.astype(np.int64)) & mask)
  logical = ((wide & mask) >> y.astype(np.int64))
  arithmetic = wide >> y.astype(np.int64)
  check_eager_and_jit(lax.shift_left, [x, y], left.astype(np.uint64).astype(dtype), dtype)
  check_eager_and_jit(lax.shift_right_logical, [x, y], logical.astype(dtype), dtype)
  check_eager_and_jit(lax.shift_right_arithmetic, [x, y],
                      (arithmetic if dtype != u8 else logical).astype(dtype), dtype)


def test_shift_by_bit_width_or_more():
  x = np.array([5, -5, 5, -5], np.int32)
  y = np.array([32, 32, 40, 40], np.int32)
  assert_close(lax.shift_left(x, y), np.zeros(4, np.int32), i32)
  assert_close(lax.shift_right_logical(x, y), np.zeros(4, np.int32), i32)
  assert_close(lax.shift_right_arithmetic(x, y), np.array([0, -1, 0, -1], np.int32), i32)


def test_div_rem_integer_semantics_follow_c():
  x = np.array([7, -7, 7, -7, 0, 6], np.int32)
  y = np.array([2, 2, -2, -2, 3, -3], np.int32)
  check_eager_and_jit(lax.div, [x, y], np.array([3, -3, -3, 3, 0, -2]), i32)
  check_eager_and_jit(lax.rem, [x, y], np.array([1, -1, 1, -1, 0, 0]), i32)
  # The remainder has the dividend's sign for floats too (C's fmod).
  xf, yf = x.astype(np.float32) + 0.5, y.astype(np.float32)
  check_eager_and_jit(lax.rem, [xf, yf], np.fmod(xf, yf), f32)


def test_sign_and_abs_special_values():
  x = np.array([-np.inf, -2.0, -0.0, 0.0, 3.0, np.inf, np.nan], np.float32)
  check_eager_and_jit(lax.sign, [x], np.sign(x), f32)
  check_eager_and_jit(lax.abs, [x], np.abs(x), f32)
  z = np.array([3 + 4j, 0j, -1j], np.complex64)
  check_eager_and_jit(lax.sign, [z], np.array([0.6 + 0.8j, 0, -1j]), c64)
  check_eager_and_jit(lax.abs, [z], np.array([5.0, 0.0, 1.0]), f32)
  # The magnitude of the most negative integer wraps around, as in C and XLA.
  assert_close(lax.abs(np.array([-128, -3], np.int8)), np.array([-128, 3], np.int8), i8)


@pytest.mark.parametrize("method,ref", [(lax.RoundingMethod.AWAY_FROM_ZERO, _round_afz),
                                        (lax.RoundingMethod.TO_NEAREST_EVEN, np.round),
                                        (0, _round_afz), (1, np.round)])
@pytest.mark.parametrize("dtype", [f32, bf16])
def test_round(method, ref, dtype):
  x = (np.arange(-10, 11) / 2).astype(dtype)  # exact halves: the tie-breaking matters
  x[3] += np.asarray(0.125, dtype)
  fn = lambda v: lax.round(v, method)
  check_eager_and_jit(fn, [x], ref(x.astype(np.float64)), dtype, rtol=0, atol=0)


def test_round_default_is_away_from_zero_and_bad_method():
  x = np.array([0.5, 1.5, 2.5, -0.5], np.float32)
  assert_close(lax.round(x), np.array([1, 2, 3, -1]), f32)
  assert int(lax.RoundingMethod.TO_NEAREST_EVEN) == 1
  with pytest.raises(ValueError, match="rounding_method"):
    lax.round(x, 7)


@pytest.mark.parametrize("dtype", [f32, i32, c64])
@pytest.mark.parametrize("y", [0, 1, 2, 3, 5, 8, -1, -2, -3])
def test_integer_pow(dtype, y):
  if y < 0 and np.dtype(dtype).kind == "i":
    with pytest.raises(TypeError, match="negative powers"):
      lax.integer_pow(np.ones(3, dtype), y)
    return
  rng = np.random.default_rng(y + 10)
  x = rand(rng, (5,), dtype, 0.5, 2.0) if np.dtype(dtype).kind != "i" else \
      rand(rng, (5,), dtype, -4, 5)
  expected = _wide(x) ** y
  check_eager_and_jit(lambda v: lax.integer_pow(v, y), [x], expected, dtype, rtol=1e-5)


def test_integer_pow_exponent_must_be_static_int():
  with pytest.raises(TypeError, match="static Python integer"):
    lax.integer_pow(np.float32(2), 2.5)


def test_pow_with_integer_exponent_array():
  x = np.array([1.5, -2.0, 0.5, 3.0], np.float32)
  y = np.array([2, 3, -2, 0], np.int32)
  check_eager_and_jit(lax.pow, [x, y], x.astype(np.float64) ** y, f32)
  z = np.array([1 + 1j, -2j, 0.5, 3], np.complex64)
  check_eager_and_jit(lax.pow, [z, y], z.astype(np.complex128) ** y, c64)


def test_nextafter_special_values():
  x = np.array([0.0, 1.0, np.inf, -1.0], np.float32)
  y = np.array([1.0, 1.0, 0.0, -np.inf], np.float32)
  check_eager_and_jit(lax.nextafter, [x, y], np.nextafter(x, y), f32, rtol=0, atol=0)


def test_is_finite_bfloat16():
  x = np.array([1.0, np.inf, -np.inf, np.nan], bf16)
  check_eager_and_jit(lax.is_finite, [x], np.array([True, False, False, False]), bool_)


def test_complex_parts_round_trip():
  re = np.array([1.0, -2.0, 0.5], np.float32)
  im = np.array([0.0, 3.0, -1.5], np.float32)
  z = lax.complex(re, im)
  assert z.dtype == c64
  assert_close(lax.real(z), re, f32)
  assert_close(lax.imag(z), im, f32)
  assert_close(lax.conj(z), re - 1j * im, c64)
  # conj of a real operand is complex with zero imaginary part (as in JAX).
  assert_close(lax.conj(re), re.astype(np.complex64), c64)


# --- broadcasting and weak types ---------------------------------------------------------

@st.composite
def _broadcastable_pair(draw):
  shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  other = tuple(d if draw(st.booleans()) else 1 for d in shape)
  if draw(st.booleans()):
    other = ()
  return (shape, other) if draw(st.booleans()) else (other, shape)


@given(_broadcastable_pair(), st.sampled_from(["add", "max", "atan2", "lt"]))
def test_binary_broadcasting(shapes, name):
  fn, ref = {"add": (lax.add, np.add), "max": (lax.max, np.maximum),
             "atan2": (lax.atan2, np.arctan2), "lt": (lax.lt, np.less)}[name]
  rng = np.random.default_rng(0)
  x, y = (rand(rng, s, np.float32) for s in shapes)
  expected = ref(x.astype(np.float64), y.astype(np.float64))
  check_eager_and_jit(fn, [x, y], expected, bool_ if name == "lt" else f32)


@given(st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple),
       st.sampled_from(["exp", "tanh", "floor", "sqrt"]))
def test_unary_shapes(shape, name):
  fn, ref = {"exp": (lax.exp, np.exp), "tanh": (lax.tanh, np.tanh),
             "floor": (lax.floor, np.floor), "sqrt": (lax.sqrt, np.sqrt)}[name]
  x = rand(np.random.default_rng(1), shape, np.float32, 0, 3)
  check_eager_and_jit(fn, [x], ref(x.astype(np.float64)), f32)


def test_python_scalars_are_arrays_of_their_default_dtype():
  # lax does not promote (as JAX): a Python scalar is int32/float32 and must match exactly.
  x32 = np.array([1.5, -1], np.float32)
  out = lax.add(x32, 1.0)
  assert out.dtype == f32 and not out.weak_type
  assert_close(out, [2.5, 0], f32)
  assert_close(lax.max(x32, 0.0), [1.5, 0], f32)
  assert lax.add(np.array([1, 2], np.int32), 1).dtype == np.int32
  for op, a, b in [(lax.add, np.array([1.0, 2.0], np.float16), 1),
                   (lax.add, np.array([1.0, 2.0], np.float16), 1.0),
                   (lax.mul, np.array([2, 3], np.uint8), 2),
                   (lax.lt, 5, np.array([1, 2], np.uint16)),
                   (lax.add, 1.0, np.array([1, 2], np.int32)),
                   (lax.add, np.array([1, 2], np.int32), 1.5),
                   (lax.max, x32, 0)]:
    with pytest.raises(TypeError, match="same dtype"):
      op(a, b)
    with pytest.raises(TypeError, match="same dtype"):
      hlox.jit(op)(a, b)
  with pytest.raises(OverflowError):
    lax.add(np.array([1, 2], np.int32), 2**40)


def test_weak_types():
  weak = lax.exp(1.0)  # a Python scalar is weakly typed
  assert weak.dtype == f32 and weak.weak_type
  assert lax.mul(weak, 2.0).weak_type
  assert lax.mul(weak, np.float32(2.0)).weak_type is False
  assert lax.add(np.float32(1), 2.0).weak_type is False
  # A weak float16 still needs a float16 partner in lax (a Python float is float32).
  weak16 = lax.convert_element_type(np.float16(1), np.float16, weak_type=True)
  assert weak16.weak_type
  with pytest.raises(TypeError, match="same dtype"):
    lax.add(weak16, 1.0)
  traced = hlox.jit(lambda v: lax.add(v, 2.0))(weak)
  assert traced.weak_type and float(traced) == pytest.approx(math.e + 2, rel=1e-6)
  assert lax.lt(weak, 2.0).weak_type  # all-weak comparisons give weak bools (as JAX)


# --- selection ---------------------------------------------------------------------------

def test_select():
  pred = np.array([True, False, True])
  a, b = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
  check_eager_and_jit(lax.select, [pred, a, b], np.where(pred, a, b), f32)
  check_eager_and_jit(lax.select, [np.bool_(False), a, b], b, f32)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("which_dtype", [i32, u8])
def test_select_n_integer(n, which_dtype):
  rng = np.random.default_rng(n)
  cases = [rand(rng, (4, 3), np.float32) for _ in range(n)]
  which = rng.integers(0, n, size=(4, 3)).astype(which_dtype)
  expected = np.choose(which, cases)
  check_eager_and_jit(lambda w, *c: lax.select_n(w, *c), [which, *cases], expected, f32)
  scalar = which_dtype.type(n - 1)
  check_eager_and_jit(lambda w, *c: lax.select_n(w, *c), [scalar, *cases], cases[-1], f32)


def test_select_n_bool_and_int_cases():
  which = np.array([True, False, False])
  x, y = np.array([1, 2, 3], np.int32), np.array([7, 8, 9], np.int32)
  check_eager_and_jit(lambda w, a, b: lax.select_n(w, a, b), [which, x, y],
                      np.array([7, 2, 3]), i32)
  out = lax.select_n(np.bool_(True), np.array([1.0], np.float32))
  assert_close(out, [1.0], f32)


def test_select_n_errors():
  a = np.zeros(3, np.float32)
  with pytest.raises(ValueError, match="at least one case"):
    lax.select_n(np.int32(0))
  with pytest.raises(TypeError, match="at most 2 cases"):
    lax.select_n(np.bool_(True), a, a, a)
  with pytest.raises(TypeError, match="same shape"):
    lax.select_n(np.int32(0), a, np.zeros(4, np.float32))
  with pytest.raises(TypeError, match="same dtype"):
    lax.select_n(np.int32(0), a, np.zeros(3, np.int32))
  with pytest.raises(TypeError, match="`which` must be a scalar"):
    lax.select_n(np.zeros(2, np.int32), a, a)
  with pytest.raises(TypeError, match="boolean or integer"):
    lax.select_n(np.float32(0), a, a)


def test_clamp():
  x = np.array([-3.0, -0.5, 0.2, 4.0], np.float32)
  check_eager_and_jit(lambda v: lax.clamp(-1.0, v, 1.0), [x], np.clip(x, -1, 1), f32)
  lo = np.array([0.0, -1.0, 0.5, 0.0], np.float32)
  check_eager_and_jit(lambda a, v: lax.clamp(a, v, np.float32(2)), [lo, x],
                      np.clip(x, lo, 2), f32)
  xi = np.array([-5, 0, 3, 9], np.int32)
  check_eager_and_jit(lambda v: lax.clamp(0, v, 4), [xi], np.clip(xi, 0, 4), i32)


def test_clamp_errors():
  x = np.zeros(4, np.float32)
  with pytest.raises(TypeError, match="clamp: min must be a scalar"):
    lax.clamp(np.zeros(3, np.float32), x, 1.0)
  with pytest.raises(TypeError, match="clamp requires .* same dtype"):
    lax.clamp(np.int32(0), x, np.float32(1))


# --- conversions -------------------------------------------------------------------------

def test_convert_element_type():
  x = np.array([-2.7, -0.5, 0.0, 1.9, 3.5], np.float32)
  check_eager_and_jit(lambda v: lax.convert_element_type(v, np.int32), [x],
                      np.trunc(x).astype(np.int32), i32)
  check_eager_and_jit(lambda v: lax.convert_element_type(v, np.bool_), [x], x != 0, bool_)
  check_eager_and_jit(lambda v: lax.convert_element_type(v, bf16), [x], x.astype(bf16),
                      bf16)
  z = np.array([1 + 2j, -3j], np.complex64)
  check_eager_and_jit(lambda v: lax.convert_element_type(v, np.float32), [z], z.real, f32)


def test_convert_element_type_big_python_int_wraps():
  # A Python int outside int32 converts straight to the target (wrapping), as in JAX.
  assert int(lax.convert_element_type(2 ** 32 + 5, "int32")) == 5
  assert int(lax.convert_element_type(-2 ** 31 - 1, np.int32)) == 2 ** 31 - 1


@pytest.mark.parametrize("make", [int, float, np.int32, np.float32, np.array])
def test_convert_element_type_of_host_values_is_an_array_eagerly(make):
  # As JAX: Python and NumPy operands convert to an Array (under jit, a value of the program).
  for dtype in (np.int32, np.float32):
    for value in (0, 1):
      for op in (lambda x: lax.convert_element_type(x, dtype),
                 hlox.jit(lambda x: lax.convert_element_type(x, dtype))):
        out = op(make(value))
        assert isinstance(out, hlox.Array) and out.dtype == dtype and not out.weak_type
        assert out.shape == () and out == value


def test_mul_out_dtype():
  x, y = np.array([100, -7], np.int8), np.array([3, 50], np.int8)
  check_eager_and_jit(lambda a, b: lax.mul(a, b, out_dtype=np.int32), [x, y],
                      x.astype(np.int32) * y, i32)
  z = np.array([0.5, 2.25], np.float32)
  check_eager_and_jit(lambda a, b: lax.mul(a, b, out_dtype=np.float32), [x, z],
                      x * z, f32)
  g = hlox.grad(lambda a: lax.mul(a, z, out_dtype=np.float32).sum())(z.astype(bf16))
  assert g.dtype == bf16 and np.allclose(np.asarray(g, np.float32), z)


@pytest.mark.parametrize("src,dst", [(f32, i32), (i32, f32), (f32, u32), (f16, np.int16),
                                     (bf16, np.uint16)])
def test_bitcast_same_width(src, dst):
  x = rand(np.random.default_rng(2), (2, 3), src, -3, 3)
  expected = x.view(dst)
  check_eager_and_jit(lambda v: lax.bitcast_convert_type(v, dst), [x], expected, dst)


def test_bitcast_changes_width():
  x = np.array([1.0, -2.5, 3.25], np.float32)
  narrow = x.view(np.uint8).reshape(3, 4)
  check_eager_and_jit(lambda v: lax.bitcast_convert_type(v, np.uint8), [x], narrow, u8)
  check_eager_and_jit(lambda v: lax.bitcast_convert_type(v, np.float32), [narrow], x, f32)
  halves = x.view(np.int16).reshape(3, 2)
  check_eager_and_jit(lambda v: lax.bitcast_convert_type(v, np.int16), [x], halves,
                      np.int16)
  scalar = lax.bitcast_convert_type(np.float32(1.0), np.uint8)
  assert scalar.shape == (4,)
  assert_close(scalar, np.float32(1.0).reshape(1).view(np.uint8), u8)


def test_bitcast_errors():
  with pytest.raises(ValueError, match="last dimension of size 4"):
    lax.bitcast_convert_type(np.zeros((2, 3), np.uint8), np.float32)
  with pytest.raises(TypeError, match="bool or complex"):
    lax.bitcast_convert_type(np.zeros(2, np.bool_), np.uint8)
  with pytest.raises(TypeError, match="bool or complex"):
    lax.bitcast_convert_type(np.zeros(2, np.complex64), np.float32)


@pytest.mark.parametrize("exponent_bits,mantissa_bits,target", [(5, 10, np.float16),
                                                                 (8, 7, bf16)])
def test_reduce_precision(exponent_bits, mantissa_bits, target):
  x = rand(np.random.default_rng(3), (20,), np.float32, -100, 100)
  expected = x.astype(target).astype(np.float32)
  fn = lambda v: lax.reduce_precision(v, exponent_bits, mantissa_bits)
  check_eager_and_jit(fn, [x], expected, f32, rtol=0, atol=0)


def test_reduce_precision_errors():
  with pytest.raises(ValueError, match="exponent_bits must be positive"):
    lax.reduce_precision(np.float32(1), 0, 3)
  with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
    lax.reduce_precision(np.int32(1), 5, 10)


def test_copy_and_stop_gradient():
  x = np.array([1.0, 2.0], np.float32)
  check_eager_and_jit(lax.copy, [x], x, f32)
  assert lax.copy(lax.exp(1.0)).weak_type
  tree = {"a": x, "b": (np.int32(3), [2.0])}
  out = lax.stop_gradient(tree)
  assert set(out) == {"a", "b"} and out["b"][1] == [2.0]
  assert_close(out["a"], x, f32)
  assert_close(hlox.jit(lambda v: lax.stop_gradient(v) * 2)(x), 2 * x, f32)


# --- errors ------------------------------------------------------------------------------

def test_dtype_errors():
  f = np.ones(3, np.float32)
  i = np.ones(3, np.int32)
  with pytest.raises(TypeError, match="and does not accept dtype float32"):
    lax.bitwise_and(f, f)
  with pytest.raises(TypeError, match="not does not accept dtype float32"):
    lax.bitwise_not(f)
  with pytest.raises(TypeError, match="shift_left does not accept dtype float32"):
    lax.shift_left(f, f)
  with pytest.raises(TypeError, match="sin does not accept dtype int32"):
    lax.sin(i)
  with pytest.raises(TypeError, match="floor does not accept dtype complex64"):
    lax.floor(np.ones(3, np.complex64))
  with pytest.raises(TypeError, match="add requires arguments to have the same dtype"):
    lax.add(f, i)
  with pytest.raises(TypeError, match="sub does not accept dtype bool"):
    lax.sub(np.ones(2, bool), np.ones(2, bool))
  with pytest.raises(TypeError, match="pow: the base must have a float"):
    lax.pow(i, i)
  with pytest.raises(TypeError, match="pow: the exponent"):
    lax.pow(f, np.ones(3, np.float16))
  with pytest.raises(TypeError, match="abs does not accept dtype uint8"):
    lax.abs(np.ones(3, np.uint8))
  with pytest.raises(TypeError, match="complex does not accept dtype float16"):
    lax.complex(np.ones(2, np.float16), np.ones(2, np.float16))
  with pytest.raises(TypeError, match="lt does not accept dtype complex64"):
    lax.lt(np.ones(2, np.complex64), np.ones(2, np.complex64))
  with pytest.raises(TypeError, match="accuracy"):
    lax.exp(f, accuracy=1e-3)


def test_shape_errors_name_the_op():
  with pytest.raises(TypeError, match="add got incompatible shapes"):
    lax.add(np.ones(3, np.float32), np.ones(4, np.float32))
  with pytest.raises(TypeError, match="atan2: arrays must have the same number of dim"):
    lax.atan2(np.ones((2, 3), np.float32), np.ones(3, np.float32))
  with pytest.raises(TypeError, match="max got incompatible shapes"):
    hlox.jit(lax.max)(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32))
