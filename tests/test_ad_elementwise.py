"""Autodiff rules of the elementwise primitives (``hlox/lax/elementwise.py``) and of the NumPy
functions built on them: JVPs against finite differences, transposes against the JVPs
(``<ct, J t> == <J^T ct, t>``), second order, broadcasting of scalar and size-1 operands,
complex conventions, values at non-differentiable points (JAX's choices), and ``jit``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.interpreters import ad

from check_grads import check_grads
from util import assert_close

RNG = np.random.default_rng(0)


def check(f, args, order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6, eps=1e-4):
  """``check_grads`` in float64."""
  with enable_x64():
    args = tuple(np.asarray(a) for a in args)
    check_grads(f, args, order=order, modes=modes, atol=atol, rtol=rtol, eps=eps)


def _rand_like(rng, a):
  a = np.asarray(a)
  if a.dtype.kind == "c":
    return (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)).astype(a.dtype)
  return rng.standard_normal(a.shape).astype(a.dtype)


def check_complex_vjp(f, args, atol=1e-8, rtol=1e-8):
  """JAX's convention for complex values: the vjp is the transpose for the pairing
  ``Re(sum(ct * t))`` (no conjugate), so ``Re<ct, J t> == Re<J^T ct, t>`` in that pairing."""
  with enable_x64():
    rng = np.random.default_rng(2)
    out, f_vjp = hlox.vjp(f, *args)
    t = tuple(_rand_like(rng, a) for a in args)
    _, out_t = hlox.jvp(f, args, t)
    ct = _rand_like(rng, out)
    cts = f_vjp(ct)
    pair = lambda a, b: np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b)))
    lhs = pair(ct, out_t)
    rhs = sum(pair(c, x) for c, x in zip(cts, t))
    np.testing.assert_allclose(lhs, rhs, atol=atol, rtol=rtol)


def _sample(domain, shape):
  if domain == "any":
    return RNG.standard_normal(shape)
  if domain == "pos":
    return RNG.uniform(0.5, 2.0, shape)
  if domain == "unit":
    return RNG.uniform(-0.7, 0.7, shape)
  if domain == "gt1":
    return RNG.uniform(1.5, 3.0, shape)
  if domain == "nonzero":
    return RNG.choice([-1.0, 1.0], shape) * RNG.uniform(0.5, 2.0, shape)
  raise ValueError(domain)


# --- unary primitives ----------------------------------------------------------------------

UNARY = [
    ("neg", lax.neg, "any"),
    ("abs", lax.abs, "nonzero"),
    ("square", lax.square, "any"),
    ("reciprocal", lax.reciprocal, "nonzero"),
    ("integer_pow_0", lambda x: lax.integer_pow(x, 0), "any"),
    ("integer_pow_1", lambda x: lax.integer_pow(x, 1), "any"),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), "any"),
    ("integer_pow_-2", lambda x: lax.integer_pow(x, -2), "nonzero"),
    ("exp", lax.exp, "any"),
    ("exp2", lax.exp2, "any"),
    ("log", lax.log, "pos"),
    ("log1p", lax.log1p, "pos"),
    ("expm1", lax.expm1, "any"),
    ("sqrt", lax.sqrt, "pos"),
    ("rsqrt", lax.rsqrt, "pos"),
    ("cbrt", lax.cbrt, "nonzero"),
    ("tanh", lax.tanh, "any"),
    ("logistic", lax.logistic, "any"),
    ("sin", lax.sin, "any"),
    ("cos", lax.cos, "any"),
    ("tan", lax.tan, "unit"),
    ("asin", lax.asin, "unit"),
    ("acos", lax.acos, "unit"),
    ("atan", lax.atan, "any"),
    ("sinh", lax.sinh, "any"),
    ("cosh", lax.cosh, "any"),
    ("asinh", lax.asinh, "any"),
    ("acosh", lax.acosh, "gt1"),
    ("atanh", lax.atanh, "unit"),
    ("erf", lax.erf, "any"),
    ("erfc", lax.erfc, "any"),
    ("erf_inv", lax.erf_inv, "unit"),
    ("lgamma", lax.lgamma, "pos"),
    ("digamma", lax.digamma, "pos"),
    ("polygamma_1", lambda x: lax.polygamma(1.0, x), "pos"),
    ("copy", lax.copy, "any"),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 11, 52), "any"),
    ("convert_f64_f64_weak", lambda x: lax.convert_element_type(x, np.float64, True), "any"),
]


@pytest.mark.parametrize("name,f,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_grads(name, f, domain):
  check(f, (_sample(domain, (2, 3)),), atol=1e-5, rtol=1e-5)


@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
       name=st.sampled_from(["sin", "exp", "tanh", "sqrt", "abs", "lgamma"]))
def test_unary_grads_shapes(shape, name):
  _, f, domain = next(u for u in UNARY if u[0] == name)
  check(f, (_sample(domain, shape),), order=1, atol=1e-5, rtol=1e-5)


def test_unary_jvp_values():
  # Closed forms for a few derivatives (float64).
  with enable_x64():
    x = np.array([0.2, 0.5, 0.9])
    cases = [(lax.tanh, 1 - np.tanh(x) ** 2), (lax.logistic, np.exp(-x) / (1 + np.exp(-x)) ** 2),
             (lax.atanh, 1 / (1 - x ** 2)), (lax.erf_inv, None),
             (lax.cbrt, x ** (-2 / 3) / 3), (lax.exp2, np.log(2) * 2 ** x)]
    for f, expected in cases:
      _, t = hlox.jvp(f, (x,), (np.ones(3),))
      if expected is None:  # erf_inv: the reciprocal of erf's derivative at erf_inv(x)
        y = np.asarray(f(x))
        expected = np.sqrt(np.pi) / 2 * np.exp(y ** 2)
      assert_close(t, expected, rtol=1e-12, atol=1e-12)
    # digamma' is polygamma(1, .): at 1 it is pi**2 / 6.
    _, t = hlox.jvp(lax.digamma, (np.float64(1.0),), (np.float64(1.0),))
    assert_close(t, np.pi ** 2 / 6, rtol=1e-10)


def test_polygamma_order_is_not_differentiable():
  with enable_x64(), pytest.raises(ValueError, match="polygamma.*order m"):
    hlox.grad(lambda m: lax.polygamma(m, 2.0))(1.0)


# --- binary primitives, with broadcasting --------------------------------------------------

BROADCAST_SHAPES = [((2, 3), (2, 3)), ((2, 3), ()), ((), (3,)), ((2, 1), (1, 3))]
BROADCAST_IDS = ["same", "rhs_scalar", "lhs_scalar", "size1"]

BINARY = [
    ("add", lax.add, "any", "any"),
    ("sub", lax.sub, "any", "any"),
    ("mul", lax.mul, "any", "any"),
    ("div", lax.div, "any", "nonzero"),
    ("rem", lax.rem, "any", "nonzero"),
    ("pow", lax.pow, "pos", "any"),
    ("max", lax.max, "any", "any"),
    ("min", lax.min, "any", "any"),
    ("atan2", lax.atan2, "any", "nonzero"),
]


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=BROADCAST_IDS)
@pytest.mark.parametrize("name,f,dx,dy", BINARY, ids=[b[0] for b in BINARY])
def test_binary_grads(name, f, dx, dy, shapes):
  x, y = _sample(dx, shapes[0]), _sample(dy, shapes[1])
  if name == "rem":
    # Keep x / y away from integers, where rem jumps.
    y = np.sign(y) * (np.abs(y) + 0.5)
    x = np.clip(x, -0.9, 0.9) * np.abs(y).max() / 2 + 0.25 * np.sign(x)
  # Second order for two of the shape pairs (the transposes of the broadcasting are the
  # shape primitives' rules, tested with those).
  order = 2 if shapes in BROADCAST_SHAPES[:2] else 1
  check(f, (x, y), order=order, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=BROADCAST_IDS)
def test_pow_with_integer_exponent_grads(shapes):
  x = _sample("nonzero", shapes[0])
  n = RNG.integers(-2, 4, shapes[1]).astype(np.int32)
  check(lambda x: lax.pow(x, n), (x,))


def test_binary_cotangents_sum_over_broadcast_dims():
  with enable_x64():
    x, y = RNG.standard_normal((2, 1)), RNG.standard_normal((1, 3))
    ct = RNG.standard_normal((2, 3))
    for f, gx, gy in [(lax.add, ct, ct), (lax.sub, ct, -ct), (lax.mul, ct * y, ct * x),
                      (lax.div, ct / y, -ct * x / y ** 2)]:
      cx, cy = hlox.vjp(f, x, y)[1](ct)
      assert_close(cx, gx.sum(1, keepdims=True))
      assert_close(cy, gy.sum(0, keepdims=True))
    cy, cs = hlox.vjp(lax.mul, y, 2.5)[1](ct[:1])
    assert_close(cy, 2.5 * ct[:1])
    assert cs.shape == () and float(cs) == pytest.approx(float(np.sum(ct[:1] * y)))


def test_broadcast_gradient_jaxpr_holds_reduce_sum():
  x = np.ones((2, 3), np.float32)
  text = str(hlox.make_jaxpr(hlox.grad(lambda x, s: jnp.sum(x * s), argnums=1))(x, 2.0))
  assert "reduce_sum" in text and "mul" in text
  f = lambda a, b: jnp.sum(lax.add(a, b))
  jaxpr = hlox.make_jaxpr(hlox.grad(f))(np.ones((2, 1), np.float32), x)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert names[-2:] == ["reduce_sum", "reshape"]  # unbroadcast: sum the copies, keep (2, 1)


@given(st.tuples(st.integers(1, 3), st.integers(1, 3)),
       st.lists(st.booleans(), min_size=2, max_size=2),
       st.booleans(), st.sampled_from(["add", "sub", "mul", "div"]))
def test_binary_broadcast_grads_hypothesis(shape, squeeze, scalar_lhs, name):
  full = tuple(1 if s else d for d, s in zip(shape, squeeze))
  lhs_shape, rhs_shape = ((), shape) if scalar_lhs else (full, shape)
  f = getattr(lax, name)
  x, y = _sample("any", lhs_shape), _sample("nonzero", rhs_shape)
  check(f, (x, y), order=1)


def test_div_transpose_needs_a_constant_denominator():
  with pytest.raises(ValueError, match="div.*denominator"):
    ad.primitive_transposes[lax.div_p](np.float32(1), np.float32(1),
                                       ad.UndefinedPrimal(ShapedArray((), np.float32)))


# --- non-differentiable points: JAX's choices ---------------------------------------------

def test_max_min_split_ties_equally():
  for f in (jnp.maximum, jnp.minimum, lax.max, lax.min):
    assert float(hlox.grad(lambda x: f(x, x))(1.5)) == 1.0
    gx, gy = hlox.grad(f, argnums=(0, 1))(2.0, 2.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)
  gx, gy = hlox.grad(lambda x, y: jnp.sum(jnp.maximum(x, y)), argnums=(0, 1))(
      np.array([1.0, 2.0, 3.0], np.float32), np.float32(2.0))
  assert_close(gx, np.array([0.0, 0.5, 1.0], np.float32))
  assert float(gy) == 1.5


def test_abs_sign_and_rounding_at_zero():
  # JAX: abs' derivative is select(x >= 0, 1, -1), so 1 at 0 (and at -0.0).
  assert float(hlox.grad(jnp.abs)(0.0)) == 1.0
  assert float(hlox.grad(jnp.abs)(-0.0)) == 1.0
  assert float(hlox.grad(jnp.abs)(-2.0)) == -1.0
  for f in (jnp.sign, jnp.floor, jnp.ceil, jnp.round, lax.sign):
    assert float(hlox.grad(lambda x: f(x) * 3.0 + x)(0.5)) == 1.0


def test_clamp_and_clip_at_the_bounds():
  # lax.clamp: the operand's tangent passes strictly inside (min, max); a bound's tangent
  # passes where the operand is strictly beyond it.
  g = hlox.grad(lambda x: lax.clamp(0.0, x, 1.0))
  assert [float(g(v)) for v in (-1.0, 0.0, 0.5, 1.0, 2.0)] == [0.0, 0.0, 1.0, 0.0, 0.0]
  g_lo = hlox.grad(lambda lo, x: lax.clamp(lo, x, 1.0))
  assert [float(g_lo(0.0, v)) for v in (-1.0, 0.0, 0.5)] == [1.0, 0.0, 0.0]
  g_hi = hlox.grad(lambda hi, x: lax.clamp(0.0, x, hi))
  assert [float(g_hi(1.0, v)) for v in (2.0, 1.0, 0.5)] == [1.0, 0.0, 0.0]
  # jnp.clip is maximum then minimum (as in JAX): ties split the gradient.
  g = hlox.grad(lambda x: jnp.clip(x, 0.0, 1.0))
  assert [float(g(v)) for v in (-1.0, 0.0, 0.5, 1.0, 2.0)] == [0.0, 0.5, 1.0, 0.5, 0.0]


def test_clamp_grads_with_scalar_and_array_bounds():
  x = np.array([-2.0, -0.5, 0.1, 0.7, 3.0])
  check(lambda x: lax.clamp(-1.0, x, 1.0), (x,))
  lo, hi = np.array([-3.0, 0.0, -1.0, 0.0, 0.0]), np.array([-2.5, 1.0, 1.0, 0.5, 1.0])
  check(lambda lo, x, hi: lax.clamp(lo, x, hi), (lo, x, hi))
  check(lambda lo, hi: lax.clamp(lo, x, hi), (np.float64(0.0), np.float64(0.5)))
  with enable_x64():
    glo, gx, ghi = hlox.grad(lambda lo, x, hi: jnp.sum(lax.clamp(lo, x, hi)),
                             argnums=(0, 1, 2))(lo, x, hi)
  assert_close(glo, [0.0, 1.0, 0.0, 0.0, 0.0])
  assert_close(gx, [0.0, 0.0, 1.0, 0.0, 0.0])
  assert_close(ghi, [1.0, 0.0, 0.0, 1.0, 1.0])


def test_pow_at_zero():
  with enable_x64():
    n = np.array([0, 1, 2, 3], np.int32)
    g = hlox.grad(lambda x: jnp.sum(lax.pow(x, n)))(0.0)
    assert float(g) == 1.0  # only the x**1 term has a slope at 0; x**0 gives 0, not nan
    assert float(hlox.grad(lambda x: lax.pow(x, np.int32(0)))(0.0)) == 0.0
    # d/dy 0**y is taken as 0 (log of 0 is replaced), not nan.
    assert float(hlox.grad(lambda y: lax.pow(0.0, y))(2.0)) == 0.0
    assert float(hlox.grad(lambda x: lax.pow(x, 2.0))(0.0)) == 0.0
    assert float(hlox.grad(lambda x: jnp.power(x, 3))(0.0)) == 0.0
    assert np.isinf(float(hlox.grad(jnp.sqrt)(0.0)))


def test_rem_grads_against_numpy():
  with enable_x64():
    x, y = np.array([5.5, -5.5, 2.0]), np.array([2.0, 2.0, -0.75])
    gx, gy = hlox.grad(lambda x, y: jnp.sum(lax.rem(x, y)), argnums=(0, 1))(x, y)
    assert_close(gx, np.ones(3))
    assert_close(gy, -np.trunc(x / y))


def test_where_routes_gradients_and_the_double_where_trick():
  g = hlox.grad(lambda x: jnp.where(x > 0, x * 2.0, -x))
  assert (float(g(1.0)), float(g(-1.0))) == (2.0, -1.0)
  # The unselected branch's inf/nan slope does not leak when its input is made safe.
  safe_sqrt = lambda x: jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
  assert float(hlox.grad(safe_sqrt)(0.0)) == 0.0
  gx, gy = hlox.grad(lambda x, y: jnp.sum(jnp.where(np.array([True, False]), x, y)),
                     argnums=(0, 1))(np.float32(1.0), np.ones(2, np.float32))
  assert float(gx) == 1.0
  assert_close(gy, np.array([0.0, 1.0], np.float32))


# --- select_n ------------------------------------------------------------------------------

def test_select_n_grads_and_cotangents():
  pred = np.array([True, False, True])
  which = np.array([2, 0, 1], np.int32)
  a, b, c = (RNG.standard_normal(3) for _ in range(3))
  check(lambda a, b: lax.select_n(pred, a, b), (a, b))
  check(lambda a, b, c: lax.select_n(which, a, b, c), (a, b, c))
  check(lambda a, b: lax.select_n(np.bool_(True), a, b), (a, b))
  check(lambda a, b: lax.select_n(np.int32(0), a, b), (a, b))
  with enable_x64():
    ct = np.array([1.0, 2.0, 3.0])
    ca, cb, cc = hlox.vjp(lambda a, b, c: lax.select_n(which, a, b, c), a, b, c)[1](ct)
    assert_close(ca, [0.0, 2.0, 0.0])
    assert_close(cb, [0.0, 0.0, 3.0])
    assert_close(cc, [1.0, 0.0, 0.0])
    ca, cb = hlox.vjp(lambda a, b: lax.select(pred, a, b), a, b)[1](ct)
    assert_close(ca, [1.0, 0.0, 3.0])
    assert_close(cb, [0.0, 2.0, 0.0])
    # Only the differentiated case is transposed.
    cb, = hlox.vjp(lambda b: lax.select_n(pred, a, b), b)[1](ct)
    assert_close(cb, [1.0, 0.0, 3.0])


# --- zero derivatives -----------------------------------------------------------------------

F32 = np.float32(1.5)
I32 = np.int32(6)
ZERO_JVP = [
    (lax.sign_p, [F32], {}), (lax.floor_p, [F32], {}), (lax.ceil_p, [F32], {}),
    (lax.round_p, [F32], {"rounding_method": lax.RoundingMethod.AWAY_FROM_ZERO}),
    (lax.is_finite_p, [F32], {}), (lax.nextafter_p, [F32, F32], {}),
    (lax.eq_p, [F32, F32], {}), (lax.ne_p, [F32, F32], {}), (lax.lt_p, [F32, F32], {}),
    (lax.le_p, [F32, F32], {}), (lax.gt_p, [F32, F32], {}), (lax.ge_p, [F32, F32], {}),
    (lax.not_p, [I32], {}), (lax.and_p, [I32, I32], {}), (lax.or_p, [I32, I32], {}),
    (lax.xor_p, [I32, I32], {}), (lax.shift_left_p, [I32, I32], {}),
    (lax.shift_right_logical_p, [I32, I32], {}), (lax.shift_right_arithmetic_p, [I32, I32], {}),
    (lax.population_count_p, [I32], {}), (lax.clz_p, [I32], {}),
    (lax.bitcast_convert_type_p, [F32], {"new_dtype": np.dtype(np.int32)}),
]


@pytest.mark.parametrize("prim,args,params", ZERO_JVP, ids=[z[0].name for z in ZERO_JVP])
def test_zero_jvp_rules(prim, args, params):
  tangents = [np.ones((), np.float32) if np.asarray(a).dtype.kind == "f"
              else np.zeros((), dtypes.float0) for a in args]
  out, t = ad.primitive_jvps[prim](list(args), tangents, **params)
  assert type(t) is ad.Zero
  assert t.aval == ShapedArray((), np.asarray(out).dtype).to_tangent_aval()
  assert_close(out, prim.bind(*args, **params))


def test_comparisons_and_nextafter_stop_gradients():
  f = lambda x: jnp.where(x > 0.0, 1.0, 0.0) * x + lax.nextafter(x, 2.0 * x)
  assert float(hlox.grad(f)(1.0)) == 1.0
  # Through integers: the round trip has no derivative.
  g = lambda x: lax.convert_element_type(lax.population_count(
      lax.convert_element_type(x, np.int32)), np.float32) * x
  assert float(hlox.grad(g)(7.0)) == 3.0


# --- conversions ------------------------------------------------------------------------------

def test_convert_element_type_grads():
  with enable_x64():
    x = np.array([0.5, -1.25], np.float32)
    f = lambda x: jnp.sum(lax.convert_element_type(x, np.float64) ** 2)
    g = hlox.grad(f)(x)
    assert np.asarray(g).dtype == np.float32
    assert_close(g, 2 * x)
    # float -> int has a zero derivative.
    assert_close(hlox.grad(lambda x: jnp.sum(lax.convert_element_type(x, np.int32) * 1.0))(x),
                 np.zeros(2, np.float32))
    # int -> float: the integer input gets a float0 cotangent.
    gi = hlox.grad(lambda n: lax.convert_element_type(n, np.float64) * 2.0, allow_int=True)(
        np.int32(3))
    assert np.asarray(gi).dtype == dtypes.float0
    check(lambda x: lax.convert_element_type(x, np.float32), (np.array([0.25, 2.0]),),
          atol=1e-3, rtol=1e-3, eps=1e-2)
    # The transpose converts back.
    ct = hlox.vjp(lambda x: lax.convert_element_type(x, np.float32), np.arange(2.0))[1](
        np.ones(2, np.float32))[0]
    assert np.asarray(ct).dtype == np.float64


def test_convert_element_type_to_and_from_complex():
  with enable_x64():
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    # complex -> real keeps the real part; its transpose embeds the cotangent as real part.
    ct, = hlox.vjp(lambda z: lax.convert_element_type(z, np.float64), z)[1](np.array([3.0, 4.0]))
    assert_close(ct, np.array([3.0 + 0j, 4.0 + 0j]))
    x = np.array([0.5, -2.0])
    f = lambda x: lax.convert_element_type(x, np.complex128) * (1 + 2j)
    _, t = hlox.jvp(f, (x,), (np.ones(2),))
    assert_close(t, np.full(2, 1 + 2j))
    check_complex_vjp(f, (x,))
    assert_close(hlox.grad(lambda x: jnp.sum(jnp.abs(lax.convert_element_type(
        x, np.complex128))))(x), np.sign(x))


def test_reduce_precision_rounds_the_tangent():
  x = np.float32(1.0)
  t = np.float32(1.0 + 2.0 ** -20)
  _, out_t = hlox.jvp(lambda x: lax.reduce_precision(x, 8, 7), (x,), (t,))
  assert float(out_t) == 1.0  # rounded to bfloat16's 7 mantissa bits like the value
  ct, = hlox.vjp(lambda x: lax.reduce_precision(x, 8, 7), x)[1](t)
  assert float(ct) == 1.0


def test_stop_gradient_is_the_ad_util_primitive():
  from hlox.lax import ad_util, elementwise
  assert lax.stop_gradient is ad_util.stop_gradient
  assert not hasattr(elementwise, "stop_gradient")
  f = lambda x: jnp.sin(x) * lax.stop_gradient(jnp.cos(x))
  assert float(hlox.grad(f)(0.3)) == pytest.approx(np.cos(0.3) ** 2, rel=1e-6)


def test_stop_gradient_treats_traced_integers_like_floats():
  # Under differentiation every leaf comes out the same way (the primal), ints included.
  def f(x):
    y, i = lax.stop_gradient((x, x.astype(np.int32)))
    assert type(y) is type(i)
    return y * x
  assert float(hlox.grad(f)(2.0)) == 2.0


# --- complex numbers ------------------------------------------------------------------------

COMPLEX_UNARY = [
    ("neg", lax.neg), ("square", lax.square), ("integer_pow_3", lambda z: lax.integer_pow(z, 3)),
    ("reciprocal", lax.reciprocal), ("exp", lax.exp), ("log", lax.log), ("log1p", lax.log1p),
    ("expm1", lax.expm1), ("sqrt", lax.sqrt), ("rsqrt", lax.rsqrt), ("tanh", lax.tanh),
    ("logistic", lax.logistic), ("sin", lax.sin), ("cos", lax.cos), ("tan", lax.tan),
    ("asin", lax.asin), ("acos", lax.acos), ("atan", lax.atan), ("sinh", lax.sinh),
    ("cosh", lax.cosh), ("asinh", lax.asinh), ("acosh", lax.acosh), ("atanh", lax.atanh),
    ("exp2", lax.exp2), ("conj", lax.conj), ("real", lax.real), ("imag", lax.imag),
    ("abs", lax.abs), ("copy", lax.copy),
]


@pytest.mark.parametrize("name,f", COMPLEX_UNARY, ids=[c[0] for c in COMPLEX_UNARY])
def test_complex_unary_grads(name, f):
  z = RNG.uniform(0.3, 0.8, 3) + 1j * RNG.uniform(0.3, 0.8, 3)
  with enable_x64():
    check_grads(f, (z,), order=1, modes=("fwd",), atol=1e-6, rtol=1e-6)
  check_complex_vjp(f, (z,))


@pytest.mark.parametrize("name,f", [("add", lax.add), ("sub", lax.sub), ("mul", lax.mul),
                                    ("div", lax.div), ("pow", lax.pow)])
def test_complex_binary_grads(name, f):
  z = RNG.uniform(0.3, 0.8, (2, 3)) + 1j * RNG.uniform(0.3, 0.8, (2, 3))
  w = np.complex128(0.6 - 0.4j)
  with enable_x64():
    check_grads(f, (z, w), order=1, modes=("fwd",), atol=1e-6, rtol=1e-6)
  check_complex_vjp(f, (z, w))


def test_complex_parts_follow_jax_conventions():
  with enable_x64():
    z = np.complex128(3.0 + 4.0j)
    assert complex(hlox.grad(lambda z: lax.real(z))(z)) == 1.0
    assert complex(hlox.grad(lambda z: lax.imag(z))(z)) == -1j
    assert complex(hlox.grad(jnp.abs)(z)) == pytest.approx(0.6 - 0.8j)
    assert complex(hlox.grad(lambda z: jnp.abs(z) ** 2)(z)) == pytest.approx(6.0 - 8.0j)
    assert complex(hlox.grad(lambda z: lax.real(lax.conj(z) * (1 + 2j)))(z)) == \
        pytest.approx(1 - 2j)
    assert complex(hlox.grad(jnp.abs)(np.complex128(0))) == 0  # conj(0) / 1
    gx, gy = hlox.grad(lambda x, y: lax.real(lax.complex(x, y) * (2 + 3j)), argnums=(0, 1))(
        1.0, 2.0)
    assert (float(gx), float(gy)) == (2.0, -3.0)
    # For a real function of z = x + iy, grad is df/dx - i df/dy: cos(z) for Re(sin(z)).
    assert complex(hlox.grad(lambda z: lax.real(jnp.sin(z)))(z)) == pytest.approx(np.cos(z))
    assert complex(hlox.grad(jnp.sin, holomorphic=True)(z)) == pytest.approx(np.cos(z))
  x, y = RNG.standard_normal((2, 3)), RNG.standard_normal(())
  check_complex_vjp(lax.complex, (x, y))
  with enable_x64():
    check_grads(lambda x, y: lax.complex(x, y), (x, np.float64(y)), order=1, modes=("fwd",))
    check_grads(lambda x: lax.real(lax.conj(x) * (1 + 2j)), (x,), order=1)


def test_complex_max_split_and_select():
  with enable_x64():
    z = np.array([1 + 1j, 2 + 0j])
    w = np.array([1 + 1j, 1 + 5j])
    _, t = hlox.jvp(lax.max, (z, w), (np.ones(2, np.complex128), np.zeros(2, np.complex128)))
    assert_close(t, np.array([0.5, 1.0], np.complex128))


# --- NumPy functions on these primitives ---------------------------------------------------

UFUNCS = [
    ("divide", jnp.divide, ("any", "nonzero")),
    ("true_divide", jnp.true_divide, ("any", "nonzero")),
    ("power", jnp.power, ("pos", "any")),
    ("float_power", jnp.float_power, ("pos", "any")),
    ("power_static", lambda x: jnp.power(x, 3), ("any",)),
    ("maximum", jnp.maximum, ("any", "any")),
    ("minimum", jnp.minimum, ("any", "any")),
    ("where", lambda x, y: jnp.where(x > 0, x * y, y), ("any", "any")),
    ("clip", lambda x: jnp.clip(x, -0.5, 0.5), ("any",)),
    ("hypot", jnp.hypot, ("any", "any")),
    ("logaddexp", jnp.logaddexp, ("any", "any")),
    ("logaddexp2", jnp.logaddexp2, ("any", "any")),
    ("arctan2", jnp.arctan2, ("any", "nonzero")),
    ("log2", jnp.log2, ("pos",)),
    ("log10", jnp.log10, ("pos",)),
    ("sinc", jnp.sinc, ("any",)),
    ("square", jnp.square, ("any",)),
    ("reciprocal", jnp.reciprocal, ("nonzero",)),
    ("cbrt", jnp.cbrt, ("nonzero",)),
    ("absolute", jnp.absolute, ("nonzero",)),
    ("copysign", jnp.copysign, ("nonzero", "nonzero")),
    ("fmod", jnp.fmod, ("unit", "gt1")),
    ("deg2rad", jnp.deg2rad, ("any",)),
]


@pytest.mark.parametrize("name,f,domains", UFUNCS, ids=[u[0] for u in UFUNCS])
def test_numpy_ufunc_grads(name, f, domains):
  shapes = [(2, 3), (3,)][:len(domains)]  # NumPy rank promotion for the second operand
  args = [_sample(d, s) for d, s in zip(domains, shapes)]
  check(f, args, atol=1e-5, rtol=1e-5)


def test_numpy_ufunc_values_at_special_points():
  assert float(hlox.grad(jnp.hypot)(3.0, 4.0)) == pytest.approx(0.6)
  gx, gy = hlox.grad(jnp.hypot, argnums=(0, 1))(1.0, 1.0)
  assert float(gx) == pytest.approx(2 ** -0.5) and float(gy) == pytest.approx(2 ** -0.5)
  assert float(hlox.grad(jnp.sinc)(0.0)) == 0.0
  gx, gy = hlox.grad(jnp.logaddexp, argnums=(0, 1))(1.0, 3.0)
  assert float(gx) == pytest.approx(1 / (1 + np.e ** 2), rel=1e-6)
  assert float(gy) == pytest.approx(1 / (1 + np.e ** -2), rel=1e-6)


def test_logaddexp_splits_ties():
  # JAX gives logaddexp a custom JVP for this: the formula's abs(x1 - x2) alone would give
  # (0, 1), abs having slope +1 at 0.
  for f in (jnp.logaddexp, jnp.logaddexp2):
    gx, gy = hlox.grad(f, argnums=(0, 1))(2.0, 2.0)
    assert (float(gx), float(gy)) == (0.5, 0.5)


# --- jit --------------------------------------------------------------------------------------

JIT_FUNS = [
    lambda x, y: jnp.sum(jnp.sin(x) * y + jnp.exp(x / y)),
    lambda x, y: jnp.sum(jnp.maximum(x, y) ** 2 - jnp.minimum(x, 0.0)),
    lambda x, y: jnp.sum(jnp.where(x > y, jnp.tanh(x), jnp.log1p(y * y))),
    lambda x, y: jnp.sum(jnp.clip(x, -0.5, y) * lax.rsqrt(y * y + 1.0)),
    lambda x, y: jnp.sum(lax.atan2(x, y) + lax.pow(jnp.abs(x) + 1.0, y) + lax.rem(x, y)),
    lambda x, y: jnp.sum(lax.erf(x) * lax.lgamma(y * y + 1.0) + lax.logistic(x - y)),
]


@pytest.mark.parametrize("i", range(len(JIT_FUNS)))
def test_jit_of_grad_matches_eager(i):
  f = JIT_FUNS[i]
  x = RNG.standard_normal((2, 3)).astype(np.float32)
  y = np.float32(0.75)
  eager = hlox.grad(f, argnums=(0, 1))(x, y)
  jitted = hlox.jit(hlox.grad(f, argnums=(0, 1)))(x, y)
  via_jit = hlox.grad(hlox.jit(f), argnums=(0, 1))(x, y)
  for a, b, c in zip(eager, jitted, via_jit):
    assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert_close(c, a, rtol=1e-5, atol=1e-6)


def test_every_elementwise_primitive_has_a_jvp_rule():
  from hlox.lax import elementwise
  prims = [getattr(elementwise, n) for n in elementwise.__all__ if n.endswith("_p")]
  assert [p.name for p in prims if p not in ad.primitive_jvps] == []
  linear = {"add", "sub", "mul", "div", "neg", "real", "imag", "complex", "conj", "copy",
            "convert_element_type", "reduce_precision", "select_n"}
  assert {p.name for p in prims if p in ad.primitive_transposes} == linear
