"""hlox.numpy elementwise functions against NumPy, eagerly and under jit, with JAX's dtypes.

``UNARY`` and ``BINARY`` drive the value checks: NumPy computes the reference in float64 (or
int64/complex128) on the same inputs, and the result dtype follows JAX's promotion, which
the ``out`` rule of each record states. Promotion, weak types, operators, the functions with
options (where, clip, round, isclose, nan_to_num, power) and the errors have their own
tests.
"""
import zlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox.errors import ConcretizationTypeError

from tests.util import assert_close, check_eager_and_jit, rand

f16, f32, c64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
i32, i8, u8 = np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8)
bool_, bf16 = np.dtype(np.bool_), np.dtype(ml_dtypes.bfloat16)

SHAPE = (2, 5)


def _result_dtype(rule, dtype):
  """The dtype JAX gives: ``same``, ``inexact`` (ints/bools -> float32), ``bool``, ``real``
  (complex -> its component), ``numeric`` (bool -> int32)."""
  dtype = np.dtype(dtype)
  if rule == "bool":
    return bool_
  if rule == "inexact":
    return dtype if dtype.kind in "fc" or dtype == bf16 else f32
  if rule == "real":
    return f32 if dtype == c64 else dtype
  if rule == "phase":
    return f16 if dtype == f16 else f32
  if rule == "numeric":
    return i32 if dtype == bool_ else dtype
  return dtype


def _wide(x):
  x = np.asarray(x)
  if x.dtype == bool_:
    return x
  return x.astype({"c": np.complex128, "i": np.int64, "u": np.int64}.get(x.dtype.kind,
                                                                          np.float64))


def _inputs(name, dtype, arity, domain, nonzero_last=False):
  rng = np.random.default_rng(zlib.crc32(f"{name}-{np.dtype(dtype).name}".encode()))
  args = [rand(rng, SHAPE, dtype, *domain) for _ in range(arity)]
  if nonzero_last and np.dtype(dtype) != bool_:
    last = args[-1]
    args[-1] = np.where(last == 0, np.ones((), dtype), last).astype(dtype)
  return args


def _check(fn, args, expected, out_dtype, rtol=None, atol=None):
  expected = np.asarray(expected)
  if np.dtype(out_dtype).kind in "iub":
    expected = expected.astype(out_dtype)
  tol = {}
  if np.dtype(out_dtype) not in (f16, bf16):
    tol = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}
  check_eager_and_jit(fn, args, expected, out_dtype, **tol)


# name, NumPy reference, dtypes, domain, result rule, options
UNARY = [
    ("negative", np.negative, (f32, i32, c64), (-5, 5), "same", {}),
    ("positive", lambda x: +x if x.dtype != bool_ else x, (f32, i32, bool_), (-5, 5), "same",
     {}),
    ("abs", np.abs, (f32, i32, u8, bool_, c64), (-5, 5), "real", {}),
    ("absolute", np.absolute, (f16, i8), (-5, 5), "real", {}),
    ("fabs", np.fabs, (f32, i32), (-5, 5), "inexact", {}),
    ("sign", np.sign, (f32, i32, u8), (-5, 5), "same", {}),
    ("floor", np.floor, (f32, bf16, i32, bool_), (-5, 5), "same", {}),
    ("ceil", np.ceil, (f32, i32), (-5, 5), "same", {}),
    ("trunc", np.trunc, (f32, f16, i32), (-5, 5), "same", {}),
    ("rint", np.rint, (f32, i32, c64), (-5, 5), "inexact", {}),
    ("sqrt", np.sqrt, (f32, i32, c64), (0, 9), "inexact", {}),
    ("cbrt", np.cbrt, (f32, i32), (-9, 9), "inexact", {}),
    ("square", np.square, (f32, i32, bool_, c64), (-5, 5), "numeric", {}),
    ("reciprocal", lambda x: 1.0 / x, (f32, i32, c64), (1, 5), "inexact", {}),
    ("exp", np.exp, (f32, i32, f16, c64), (-4, 4), "inexact", {}),
    ("exp2", np.exp2, (f32, i32), (-6, 6), "inexact", {}),
    ("expm1", np.expm1, (f32, i32), (-3, 3), "inexact", {}),
    ("log", np.log, (f32, i32, c64), (1, 9), "inexact", {}),
    ("log2", np.log2, (f32, i32, c64), (1, 9), "inexact", {}),
    ("log10", np.log10, (f32, i32, c64), (1, 9), "inexact", {}),
    ("log1p", np.log1p, (f32, i32), (0, 9), "inexact", {}),
    ("sin", np.sin, (f32, i32, bool_, c64), (-4, 4), "inexact", {}),
    ("cos", np.cos, (f32, bf16, c64), (-4, 4), "inexact", {}),
    ("tan", np.tan, (f32, c64), (-1.2, 1.2), "inexact", {"rtol": 3e-5}),
    ("arcsin", np.arcsin, (f32, c64), (-0.95, 0.95), "inexact", {}),
    ("arccos", np.arccos, (f32, c64), (-0.95, 0.95), "inexact", {}),
    ("arctan", np.arctan, (f32, i32, c64), (-5, 5), "inexact", {}),
    ("sinh", np.sinh, (f32, c64), (-3, 3), "inexact", {}),
    ("cosh", np.cosh, (f32, c64), (-3, 3), "inexact", {}),
    ("tanh", np.tanh, (f32, i32, c64), (-3, 3), "inexact", {}),
    ("arcsinh", np.arcsinh, (f32, c64), (-5, 5), "inexact", {}),
    ("arccosh", np.arccosh, (f32, i32, c64), (1, 6), "inexact", {}),
    ("arctanh", np.arctanh, (f32, c64), (-0.9, 0.9), "inexact", {}),
    ("asin", np.arcsin, (f32,), (-0.95, 0.95), "inexact", {}),
    ("acos", np.arccos, (f32,), (-0.95, 0.95), "inexact", {}),
    ("atan", np.arctan, (f32,), (-5, 5), "inexact", {}),
    ("asinh", np.arcsinh, (f32,), (-5, 5), "inexact", {}),
    ("acosh", np.arccosh, (f32,), (1, 6), "inexact", {}),
    ("atanh", np.arctanh, (f32,), (-0.9, 0.9), "inexact", {}),
    ("deg2rad", np.deg2rad, (f32, i32), (-360, 360), "inexact", {}),
    ("rad2deg", np.rad2deg, (f32, i32), (-7, 7), "inexact", {}),
    ("radians", np.radians, (f32,), (-360, 360), "inexact", {}),
    ("degrees", np.degrees, (f32,), (-7, 7), "inexact", {}),
    ("sinc", np.sinc, (f32, i32, c64), (-3, 3), "inexact", {"atol": 3e-5}),
    ("isfinite", np.isfinite, (f32, i32, c64), (-3, 3), "bool", {}),
    ("isinf", np.isinf, (f32, i32, c64), (-3, 3), "bool", {}),
    ("isnan", np.isnan, (f32, i32, c64), (-3, 3), "bool", {}),
    ("isposinf", np.isposinf, (f32, i32), (-3, 3), "bool", {}),
    ("isneginf", np.isneginf, (f32,), (-3, 3), "bool", {}),
    ("signbit", np.signbit, (f32, f16, bf16, i32, bool_), (-3, 3), "bool", {}),
    ("logical_not", np.logical_not, (f32, i32, bool_), (-2, 2), "bool", {}),
    ("bitwise_not", np.invert, (i32, u8, bool_), (-50, 50), "same", {}),
    ("invert", np.invert, (i8,), (-50, 50), "same", {}),
    ("bitwise_invert", np.invert, (i32,), (-50, 50), "same", {}),
    ("real", np.real, (f32, i32, c64), (-3, 3), "real", {}),
    ("imag", np.imag, (f32, i32, c64), (-3, 3), "real", {}),
    ("conj", np.conj, (f32, c64), (-3, 3), "same", {}),
    ("conjugate", np.conjugate, (i32, c64), (-3, 3), "same", {}),
    ("angle", np.angle, (f32, i32, c64), (-3, 3), "phase", {}),
    ("nan_to_num", np.nan_to_num, (f32, i32), (-3, 3), "same", {}),
]

_WITH_SPECIALS = {"isfinite", "isinf", "isnan", "isposinf", "isneginf", "signbit",
                  "nan_to_num", "floor", "trunc", "sign", "abs", "square"}


def _unary_cases():
  for name, ref, dts, domain, rule, opts in UNARY:
    for dtype in dts:
      yield pytest.param(name, ref, dtype, domain, rule, opts,
                         id=f"{name}-{np.dtype(dtype).name}")


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("name,ref,dtype,domain,rule,opts", list(_unary_cases()))
def test_unary(name, ref, dtype, domain, rule, opts):
  x, = _inputs(name, dtype, 1, domain)
  if name in _WITH_SPECIALS and np.dtype(dtype).kind == "f":
    x.flat[:4] = [np.inf, -np.inf, np.nan, -0.0]
  if name in _WITH_SPECIALS and np.dtype(dtype) == c64:
    x.flat[:2] = [complex(np.inf, 1), complex(1, np.nan)]
  # NumPy computes transcendental functions of bools in float16: give it float64.
  expected = ref(_wide(x).astype(np.float64) if x.dtype == bool_ and rule == "inexact"
                 else _wide(x))
  if name == "nan_to_num" and np.dtype(dtype).kind == "f":
    expected = np.nan_to_num(x)  # the infinities become the dtype's extremes
  _check(getattr(jnp, name), [x], expected, _result_dtype(rule, dtype), **opts)


BINARY = [
    ("add", np.add, (f32, bf16, i32, u8, bool_, c64), (-5, 5), "same", {}),
    ("subtract", np.subtract, (f32, i32, c64), (-5, 5), "same", {}),
    ("multiply", np.multiply, (f32, i32, bool_, c64), (-5, 5), "same", {}),
    ("divide", np.divide, (f32, i32, c64), (-5, 5), "inexact", {"nonzero": True}),
    ("true_divide", np.true_divide, (f16, i8), (-5, 5), "inexact", {"nonzero": True}),
    ("floor_divide", np.floor_divide, (f32, i32, u8, i8), (-9, 9), "numeric",
     {"nonzero": True}),
    ("mod", np.mod, (f32, i32), (-9, 9), "numeric", {"nonzero": True}),
    ("remainder", np.remainder, (f32, i32, u8), (-9, 9), "numeric", {"nonzero": True}),
    ("fmod", np.fmod, (f32, i32), (-9, 9), "numeric", {"nonzero": True}),
    ("power", np.power, (f32, c64), (0.2, 3), "same", {"rtol": 3e-5}),
    ("float_power", np.float_power, (f32, i32), (1, 4), "inexact", {"rtol": 3e-5}),
    ("maximum", np.maximum, (f32, i32, bool_, c64), (-5, 5), "same", {}),
    ("minimum", np.minimum, (f32, u8, c64), (-5, 5), "same", {}),
    ("fmax", np.fmax, (f32, i32), (-5, 5), "same", {}),
    ("fmin", np.fmin, (f32,), (-5, 5), "same", {}),
    ("arctan2", np.arctan2, (f32, i32), (-5, 5), "inexact", {}),
    ("atan2", np.arctan2, (f32,), (-5, 5), "inexact", {}),
    ("hypot", np.hypot, (f32, i32), (-5, 5), "inexact", {}),
    ("copysign", np.copysign, (f32, i32), (-5, 5), "inexact", {}),
    ("logaddexp", np.logaddexp, (f32, i32), (-5, 5), "inexact", {}),
    ("logaddexp2", np.logaddexp2, (f32,), (-5, 5), "inexact", {}),
    ("heaviside", np.heaviside, (f32, i32), (-2, 2), "inexact", {}),
    ("logical_and", np.logical_and, (f32, i32, bool_), (-2, 2), "bool", {}),
    ("logical_or", np.logical_or, (f32, bool_), (-2, 2), "bool", {}),
    ("logical_xor", np.logical_xor, (i32, bool_), (-2, 2), "bool", {}),
    ("bitwise_and", np.bitwise_and, (i32, u8, bool_), (-50, 50), "same", {}),
    ("bitwise_or", np.bitwise_or, (i32, bool_), (-50, 50), "same", {}),
    ("bitwise_xor", np.bitwise_xor, (i32, u8), (-50, 50), "same", {}),
    ("equal", np.equal, (f32, i32, bool_, c64), (-2, 2), "bool", {}),
    ("not_equal", np.not_equal, (f32, c64), (-2, 2), "bool", {}),
    ("less", np.less, (f32, i32, u8, c64), (-2, 2), "bool", {}),
    ("less_equal", np.less_equal, (f32, bool_, c64), (-2, 2), "bool", {}),
    ("greater", np.greater, (f32, i32, c64), (-2, 2), "bool", {}),
    ("greater_equal", np.greater_equal, (f32, i8, c64), (-2, 2), "bool", {}),
]


def _binary_cases():
  for name, ref, dts, domain, rule, opts in BINARY:
    for dtype in dts:
      yield pytest.param(name, ref, dtype, domain, rule, opts,
                         id=f"{name}-{np.dtype(dtype).name}")


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("name,ref,dtype,domain,rule,opts", list(_binary_cases()))
def test_binary(name, ref, dtype, domain, rule, opts):
  x, y = _inputs(name, dtype, 2, domain, nonzero_last=opts.get("nonzero", False))
  if np.dtype(dtype) == c64 and name in ("less", "less_equal", "greater", "greater_equal",
                                         "maximum", "minimum"):
    y.real[0] = x.real[0]  # equal real parts: the imaginary parts decide
  if np.dtype(dtype) == c64:
    # NumPy orders complex numbers lexicographically, as JAX does.
    expected = ref(x.astype(np.complex128), y.astype(np.complex128))
  else:
    expected = ref(_wide(x), _wide(y))
  tol = {k: v for k, v in opts.items() if k in ("rtol", "atol")}
  _check(getattr(jnp, name), [x, y], expected, _result_dtype(rule, dtype), **tol)


@pytest.mark.parametrize("dtype", [i32, u8, bool_])
def test_shifts(dtype):
  x = np.array([1, 5, 100, 7, 0, 1], dtype) if dtype != bool_ else \
      np.array([True, False, True, True, False, True])
  y = np.array([0, 1, 2, 3, 4, 5], dtype if dtype != bool_ else np.int32)
  wide = _wide(x).astype(np.int64)
  out_dtype = i32 if dtype == bool_ else dtype
  _check(jnp.left_shift, [x, y], (wide << y.astype(np.int64)).astype(out_dtype), out_dtype)
  _check(jnp.bitwise_left_shift, [x, y], (wide << y.astype(np.int64)).astype(out_dtype),
         out_dtype)
  _check(jnp.right_shift, [x, y], wide >> y.astype(np.int64), out_dtype)


def test_right_shift_is_arithmetic_for_signed_logical_for_unsigned():
  xs = np.array([-128, -1, 64], np.int8)
  _check(jnp.right_shift, [xs, np.int8(1)], np.array([-64, -1, 32]), i8)
  xu = np.array([128, 255, 64], np.uint8)
  _check(jnp.bitwise_right_shift, [xu, np.uint8(1)], np.array([64, 127, 32]), u8)


def test_bitwise_count():
  x = np.array([-1, 7, -8, 0], np.int32)
  _check(jnp.bitwise_count, [x], np.array([1, 3, 1, 0]), u8)


# --- promotion and weak types ------------------------------------------------------------

def test_weak_type_promotion():
  f = hlox.device_put(np.array([1.0, 2.0], np.float32))
  i = hlox.device_put(np.array([1, 2], np.int32))
  assert (f * 2.0).dtype == f32 and not (f * 2.0).weak_type
  assert (f / 2).dtype == f32
  assert (i + 1.5).dtype == f32
  assert (i + 1).dtype == i32
  assert (i / i).dtype == f32
  assert (i / 2).dtype == f32
  assert (jnp.arange(3) // 2).dtype == i32
  assert_close(jnp.arange(3) // 2, np.array([0, 0, 1]), i32)
  bf = hlox.device_put(np.ones(2, bf16))
  assert jnp.add(bf, f).dtype == f32
  assert jnp.add(bf, 1.0).dtype == bf16
  assert jnp.multiply(np.ones(2, np.float16), 3).dtype == f16
  assert jnp.add(np.int8([1]), np.uint8([1])).dtype == np.int16
  assert jnp.add(np.uint32([1]), np.int32([1])).dtype == np.int32  # as in JAX, x64 off
  s = jnp.sin(1.0)
  assert s.dtype == f32 and s.weak_type
  assert jnp.add(s, np.ones(2, np.float16)).dtype == f16  # a weak value adapts
  assert jnp.multiply(s, 2.0).weak_type
  assert (jnp.sin(i) * np.float16(1)).dtype == f32


def test_bool_arithmetic():
  a = np.array([True, False, True])
  b = np.array([True, True, False])
  _check(jnp.add, [a, b], a | b, bool_)
  _check(jnp.multiply, [a, b], a & b, bool_)
  _check(jnp.maximum, [a, b], a | b, bool_)
  with pytest.raises(TypeError, match="sub does not accept dtype bool"):
    jnp.subtract(a, b)
  with pytest.raises(TypeError, match="neg does not accept dtype bool"):
    jnp.negative(a)
  _check(jnp.floor_divide, [a, b | True], np.array([1, 0, 1]), i32)
  _check(jnp.true_divide, [a, b], np.array([1.0, 0.0, np.inf]), f32)


@given(st.sampled_from([(3,), (2, 3), (1, 3), ()]), st.sampled_from([(3,), (4, 1, 3), ()]),
       st.sampled_from(["add", "hypot", "fmax", "floor_divide", "less"]))
def test_broadcasting(shape_x, shape_y, name):
  ref = {"add": np.add, "hypot": np.hypot, "fmax": np.fmax,
         "floor_divide": np.floor_divide, "less": np.less}[name]
  rng = np.random.default_rng(0)
  x = rand(rng, shape_x, np.float32, 1, 5)
  y = rand(rng, shape_y, np.float32, 1, 5)
  _check(getattr(jnp, name), [x, y], ref(_wide(x), _wide(y)), bool_ if name == "less" else f32)


# --- operators on Arrays and tracers -----------------------------------------------------

def test_array_operators():
  xn = np.array([1.5, -2.0, 3.25, -0.5], np.float32)
  yn = np.array([2.0, 3.0, -1.5, 0.25], np.float32)
  x, y = hlox.device_put(xn), hlox.device_put(yn)
  xw, yw = _wide(xn), _wide(yn)
  assert_close(x / y, xw / yw, f32)
  assert_close(x // y, np.floor_divide(xw, yw), f32)
  assert_close(x % y, np.mod(xw, yw), f32)
  assert_close(x ** 2, xw ** 2, f32)
  assert_close(y ** y, np.abs(yw) ** yw * np.where(yw < 0, np.nan, 1), f32)
  assert_close(-x, -xw, f32)
  assert_close(+x, xw, f32)
  assert_close(abs(x), np.abs(xw), f32)
  assert_close(2 - x, 2 - xw, f32)
  assert_close(1 / x, 1 / xw, f32)
  assert_close(2 ** y, 2 ** yw, f32)
  assert_close(x < y, xn < yn, bool_)
  assert_close(x >= 0, xn >= 0, bool_)
  assert_close(x == x, np.ones(4, bool), bool_)
  assert_close(x != y, np.ones(4, bool), bool_)
  q, r = divmod(x, y)
  assert_close(q, np.floor_divide(xw, yw), f32)
  assert_close(r, np.mod(xw, yw), f32)


def test_integer_operators():
  i = hlox.device_put(np.array([7, -7, 12, 5], np.int32))
  j = hlox.device_put(np.array([2, 2, -5, 3], np.int32))
  iw, jw = np.array([7, -7, 12, 5]), np.array([2, 2, -5, 3])
  assert_close(~i, ~iw, i32)
  assert_close(i & j, iw & jw, i32)
  assert_close(i | j, iw | jw, i32)
  assert_close(i ^ j, iw ^ jw, i32)
  assert_close(i << 1, iw << 1, i32)
  assert_close(i >> 1, iw >> 1, i32)
  assert_close(3 & i, 3 & iw, i32)
  assert_close(2 << (j & 3), 2 << (jw & 3), i32)
  assert_close(i // j, np.floor_divide(iw, jw), i32)
  assert_close(i % j, np.mod(iw, jw), i32)
  assert_close(-7 // j, np.floor_divide(-7, jw), i32)
  assert_close(i ** 2, iw ** 2, i32)
  assert_close(i / j, iw / jw, f32)


def test_operators_under_jit():
  def f(x, y):
    return (x / y + x // y - x % y) * 2 - abs(-x) ** 2 + (1 / y)
  xn = np.array([1.5, -2.0, 3.25], np.float32)
  yn = np.array([2.0, 3.0, -1.5], np.float32)
  xw, yw = _wide(xn), _wide(yn)
  expected = (xw / yw + np.floor_divide(xw, yw) - np.mod(xw, yw)) * 2 - xw ** 2 + 1 / yw
  check_eager_and_jit(f, [xn, yn], expected, f32)


# --- power -------------------------------------------------------------------------------

def test_power_integer_exponents():
  i = np.array([-3, 0, 2, 5], np.int32)
  _check(lambda v: jnp.power(v, 3), [i], _wide(i) ** 3, i32)
  f = np.array([-1.5, 0.5, 2.0], np.float32)
  _check(lambda v: jnp.power(v, -2), [f], _wide(f) ** -2, f32)
  _check(lambda v: jnp.power(v, np.int32(3)), [f], _wide(f) ** 3, f32)
  with pytest.raises(TypeError, match="negative powers"):
    jnp.power(i, -1)
  # Integer exponent arrays: integer bases stay integers, even when traced.
  e = np.array([2, 0, 3, 1], np.int32)
  _check(jnp.power, [i, e], _wide(i) ** e, i32)
  _check(lambda v: jnp.power(2, v), [e], 2 ** _wide(e), i32)
  u = np.array([0, 3, 2], np.uint8)
  _check(jnp.power, [u, np.uint8(2)], np.array([0, 9, 4]), u8)
  b = np.array([True, False])
  _check(jnp.power, [b, b], np.array([1, 1]), i32)
  # A float base with an integer array exponent keeps the base's dtype.
  f16x = np.array([1.5, -2.0], np.float16)
  _check(jnp.power, [f16x, np.array([2, 3], np.int32)], np.array([2.25, -8.0]), f16)
  _check(jnp.power, [i[1:], 0.5], np.sqrt(_wide(i[1:])), f32)


def test_power_complex_and_float_power():
  z = np.array([1 + 1j, -2 + 0.5j], np.complex64)
  _check(jnp.power, [z, np.complex64(0.5 + 1j)], z.astype(np.complex128) ** (0.5 + 1j), c64,
         rtol=3e-5)
  i = np.array([1, 2, 3], np.int32)
  _check(jnp.float_power, [i, -2], _wide(i) ** -2.0, f32)


# --- division family ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [i32, i8, f32])
def test_floor_divide_and_mod_signs(dtype):
  x = np.array([7, -7, 7, -7, 0, 6, -6, 1], dtype)
  y = np.array([2, 2, -2, -2, 3, -3, 4, -5], dtype)
  if dtype == f32:
    x = x + np.float32(0.5)
  xw, yw = _wide(x), _wide(y)
  _check(jnp.floor_divide, [x, y], np.floor_divide(xw, yw), dtype)
  _check(jnp.remainder, [x, y], np.remainder(xw, yw), dtype)
  _check(jnp.fmod, [x, y], np.fmod(xw, yw), dtype)
  q, r = jnp.divmod(x, y)
  assert_close(q, np.floor_divide(xw, yw).astype(dtype), dtype)
  assert_close(r, np.remainder(xw, yw).astype(dtype), dtype)


def test_float_division_by_zero_and_infinities():
  x = np.array([1.0, -1.0, 0.0, 1.0, -1.0], np.float32)
  y = np.array([0.0, 0.0, 0.0, np.inf, np.inf], np.float32)
  with np.errstate(divide="ignore", invalid="ignore"):
    true_div, floor_div = np.true_divide(x, y), np.floor_divide(x[:3], y[:3])
  _check(jnp.true_divide, [x, y], true_div, f32)
  _check(jnp.floor_divide, [x[:3], y[:3]], floor_div, f32)
  _check(jnp.mod, [x[3:], y[3:]], np.mod(x[3:], y[3:]), f32)


def test_integer_remainder_by_zero_is_zero():
  x = np.array([7, -7], np.int32)
  _check(jnp.remainder, [x, np.zeros(2, np.int32)], np.zeros(2), i32)
  _check(jnp.fmod, [x, np.zeros(2, np.int32)], np.zeros(2), i32)


def test_modf():
  x = np.array([-2.5, 0.25, 3.0, -0.75], np.float32)
  frac, whole = jnp.modf(x)
  ref_frac, ref_whole = np.modf(x)
  assert_close(frac, ref_frac, f32)
  assert_close(whole, ref_whole, f32)


# --- rounding ----------------------------------------------------------------------------

@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [f32, f16])
def test_round_decimals(decimals, dtype):
  x = np.array([0.5, 1.5, 2.5, -0.5, 1.2345, -12.75, 155.0, 3.14159], dtype)
  expected = np.round(x.astype(np.float64), decimals)
  _check(lambda v: jnp.round(v, decimals), [x], expected, dtype, atol=1e-5)
  _check(lambda v: jnp.around(v, decimals), [x], expected, dtype, atol=1e-5)


def test_round_integers_and_complex():
  i = np.array([-3, 4, 15], np.int32)
  _check(jnp.round, [i], i, i32)
  with pytest.raises(NotImplementedError, match="decimals < 0"):
    jnp.round(i, -1)
  z = np.array([1.25 + 2.5j, -0.5 - 1.75j], np.complex64)
  _check(lambda v: jnp.round(v, 1), [z], np.round(z.astype(np.complex128), 1), c64)
  big = np.array([1.5, 2.25], np.float32)
  _check(lambda v: jnp.round(v, 60), [big], big, f32)  # nothing to round at 1e-60


def test_round_method_and_rint_ties_to_even():
  x = hlox.device_put(np.array([0.5, 1.5, 2.5, -2.5], np.float32))
  assert_close(x.round(), np.array([0.0, 2.0, 2.0, -2.0]), f32)
  assert_close(jnp.rint(x), np.array([0.0, 2.0, 2.0, -2.0]), f32)


# --- selection ---------------------------------------------------------------------------

def test_where_three_arguments():
  c = np.array([[True], [False]])
  x = np.array([1, 2, 3], np.int32)
  _check(jnp.where, [c, x, np.float32(-1)], np.where(c, x, -1.0), f32)
  _check(lambda cc, xx: jnp.where(cc, xx, 1.5), [c, x], np.where(c, x, 1.5), f32)
  _check(jnp.where, [x > 1, x, np.int32(0)], np.where(x > 1, x, 0), i32)
  # A non-bool condition means "non-zero".
  _check(jnp.where, [np.array([0, 2, -1]), x, x * 10], np.array([10, 2, 3]), i32)
  out = jnp.where(True, 1, 2.0)
  assert out.dtype == f32 and out.weak_type and float(out) == 1.0
  with pytest.raises(ValueError, match="both x and y"):
    jnp.where(c, x)


def test_where_one_argument():
  c = np.array([[0, 3, 0], [1, 0, 2]])
  rows, cols = jnp.where(c)
  ref_rows, ref_cols = np.nonzero(c)
  assert_close(rows, ref_rows, i32)
  assert_close(cols, ref_cols, i32)
  padded, = jnp.where(np.array([0, 5, 6, 0]), size=4, fill_value=-1)
  assert_close(padded, np.array([1, 2, -1, -1]), i32)
  cut, = jnp.where(np.array([1, 1, 1]), size=2)
  assert_close(cut, np.array([0, 1]), i32)
  with pytest.raises(ConcretizationTypeError, match="nonzero"):
    hlox.jit(lambda v: jnp.where(v))(c)
  with pytest.raises(ValueError, match="at least 1 dimension"):
    jnp.where(np.int32(1))


def test_clip():
  x = np.array([-3.0, -0.5, 0.5, 4.0], np.float32)
  _check(lambda v: jnp.clip(v, -1, 1), [x], np.clip(x, -1, 1), f32)
  _check(lambda v: jnp.clip(v, min=0.0), [x], np.maximum(x, 0), f32)
  _check(lambda v: jnp.clip(v, max=0.0), [x], np.minimum(x, 0), f32)
  _check(lambda v: jnp.clip(v, None, 1.0), [x], np.minimum(x, 1), f32)
  _check(lambda v: jnp.clip(v, a_min=-1, a_max=2), [x], np.clip(x, -1, 2), f32)
  _check(lambda v: jnp.clip(a=v, a_min=-1, a_max=2), [x], np.clip(x, -1, 2), f32)
  lo = np.array([0.0, 0.0, 1.0, 1.0], np.float32)
  _check(jnp.clip, [x, lo, np.float32(2)], np.clip(x, lo, 2), f32)
  i = np.array([-5, 0, 3, 9], np.int32)
  _check(lambda v: jnp.clip(v, 0, 4), [i], np.clip(i, 0, 4), i32)
  _check(lambda v: jnp.clip(v, 0.5, 2.5), [i], np.clip(i, 0.5, 2.5), f32)
  assert_close(hlox.device_put(x).clip(0, 1), np.clip(x, 0, 1), f32)
  with pytest.raises(ValueError, match="complex"):
    jnp.clip(np.ones(2, np.complex64), 0, 1)
  with pytest.raises(ValueError, match="no input"):
    jnp.clip(min=0)


def test_isclose_allclose():
  a = np.array([1.0, 1.0, np.inf, np.nan, 0.0, -np.inf], np.float32)
  b = np.array([1.0 + 1e-6, 1.1, np.inf, np.nan, 1e-9, np.inf], np.float32)
  _check(jnp.isclose, [a, b], np.isclose(a, b), bool_)
  _check(lambda x, y: jnp.isclose(x, y, equal_nan=True), [a, b],
         np.isclose(a, b, equal_nan=True), bool_)
  _check(lambda x, y: jnp.isclose(x, y, rtol=0.2), [a, b], np.isclose(a, b, rtol=0.2), bool_)
  i = np.array([1, 2, 3], np.int32)
  _check(lambda x: jnp.isclose(x, x + 1, atol=1), [i], np.ones(3, bool), bool_)
  z = np.array([1 + 1j, 2j], np.complex64)
  _check(jnp.isclose, [z, z + 1e-7], np.ones(2, bool), bool_)
  out = jnp.allclose(a[:2], a[:2])
  assert out.shape == () and out.dtype == bool_ and bool(out)
  assert not bool(jnp.allclose(a, b))
  assert bool(jnp.allclose(a, a, equal_nan=True))
  assert not bool(jnp.allclose(a, a))
  assert bool(hlox.jit(jnp.allclose)(np.ones((2, 3), np.float32), 1.0))
  assert bool(jnp.allclose(1.0, 1.0 + 1e-9))


def test_nan_to_num():
  x = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
  _check(jnp.nan_to_num, [x], np.nan_to_num(x), f32)
  _check(lambda v: jnp.nan_to_num(v, nan=-1.0, posinf=9.0, neginf=-9.0), [x],
         np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), f32)
  h = x.astype(np.float16)
  _check(jnp.nan_to_num, [h], np.nan_to_num(h), f16)
  z = np.array([complex(np.nan, np.inf), complex(-np.inf, 1)], np.complex64)
  _check(jnp.nan_to_num, [z], np.nan_to_num(z), c64)


def test_heaviside_and_hypot_special_values():
  x = np.array([-1.0, 0.0, 2.0, np.nan], np.float32)
  _check(jnp.heaviside, [x, np.float32(0.5)], np.heaviside(x, 0.5), f32)
  a = np.array([np.inf, np.nan, 3e30, 0.0, 3e-30], np.float32)
  b = np.array([np.nan, np.inf, 4e30, 0.0, 4e-30], np.float32)
  _check(jnp.hypot, [a, b], np.hypot(_wide(a), _wide(b)), f32)


def test_logaddexp_special_values():
  x = np.array([np.inf, -np.inf, np.inf, np.nan, 100.0, -100.0], np.float32)
  y = np.array([np.inf, -np.inf, -np.inf, 1.0, 100.0, 0.0], np.float32)
  with np.errstate(invalid="ignore"):
    expected_e = np.logaddexp(_wide(x), _wide(y))
    expected_2 = np.logaddexp2(_wide(x), _wide(y))
  _check(jnp.logaddexp, [x, y], expected_e, f32)
  _check(jnp.logaddexp2, [x, y], expected_2, f32)


def test_logaddexp_complex():
  z = np.array([1 + 2j, -1 + 3j, 0.5 - 3j], np.complex64)
  w = np.array([0.5 - 1j, 2 + 3j, 0.25 + 2j], np.complex64)
  zw, ww = z.astype(np.complex128), w.astype(np.complex128)
  expected = np.log(np.exp(zw) + np.exp(ww))
  expected = expected.real + 1j * np.angle(np.exp(zw) + np.exp(ww))
  _check(jnp.logaddexp, [z, w], expected, c64)


def test_signbit_and_copysign():
  x = np.array([-0.0, 0.0, -1.5, 2.0, -np.inf, np.nan], np.float32)
  _check(jnp.signbit, [x], np.signbit(x), bool_)
  y = np.array([1.0, -0.0, 3.0, -2.0, 1.0, -1.0], np.float32)
  _check(jnp.copysign, [x, y], np.copysign(x, y), f32)
  _check(jnp.copysign, [np.int32(3), y], np.copysign(3.0, y), f32)


def test_nextafter():
  x = np.array([0.0, 1.0, 1.0, -np.inf], np.float32)
  y = np.array([1.0, 2.0, 0.0, 0.0], np.float32)
  _check(jnp.nextafter, [x, y], np.nextafter(x, y), f32, rtol=0, atol=0)


def test_angle_and_complex_parts():
  z = np.array([1 + 1j, -1 + 0j, -2j], np.complex64)
  _check(lambda v: jnp.angle(v, deg=True), [z], np.angle(z, deg=True), f32)
  _check(jnp.real, [z], z.real, f32)
  _check(jnp.imag, [z], z.imag, f32)
  zarr = hlox.device_put(z)
  assert_close(zarr.real, z.real, f32)
  assert_close(zarr.imag, z.imag, f32)
  assert_close(zarr.conj(), np.conj(z), c64)
  assert jnp.imag(2.0).weak_type and float(jnp.imag(2.0)) == 0.0
  # arccosh of complex inputs follows NumPy's principal branch.
  w = np.array([0.5 + 0j, -2 + 0j, 1 - 1j], np.complex64)
  _check(jnp.arccosh, [w], np.arccosh(w.astype(np.complex128)), c64)


# --- errors ------------------------------------------------------------------------------

def test_errors():
  f = np.ones(3, np.float32)
  with pytest.raises(TypeError, match="bitwise_and is only defined for integer and boolean"):
    jnp.bitwise_and(f, f)
  with pytest.raises(TypeError, match="left_shift is only defined for integer"):
    jnp.left_shift(f, 1)
  with pytest.raises(TypeError, match="bitwise_not is only defined"):
    ~hlox.device_put(f)
  with pytest.raises(TypeError, match="add got incompatible shapes"):
    jnp.add(np.ones(3, np.float32), np.ones(4, np.float32))
  with pytest.raises(ValueError,
                     match=r"^Incompatible shapes for broadcasting: shapes=\[\(2, 3\), \(4,\)\](\n|$)"):
    jnp.multiply(np.ones((2, 3), np.float32), np.ones(4, np.float32))
  with pytest.raises(TypeError, match="incompatible shapes"):
    hlox.device_put(f) + hlox.device_put(np.ones(2, np.float32))
  with pytest.raises(ValueError, match="jnp.hypot is not well defined for complex-valued inputs"):
    jnp.hypot(np.ones(2, np.complex64), 1.0)
  with pytest.raises(TypeError, match="fabs does not support complex"):
    jnp.fabs(np.ones(2, np.complex64))
  with pytest.raises(TypeError, match="floor_divide does not support complex"):
    jnp.floor_divide(np.ones(2, np.complex64), 1.0)
  with pytest.raises(ValueError, match="isposinf is not defined for complex"):
    jnp.isposinf(np.ones(2, np.complex64))
  with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
    jnp.sin("a")
  with pytest.raises(TypeError, match="sin does not accept dtype bool"):
    hlox.lax.sin(np.ones(2, bool))
