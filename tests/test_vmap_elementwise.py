"""Batching rules of the elementwise primitives (``hlox/lax/elementwise.py``): ``vmap`` of each
primitive against a Python loop stacked with ``jnp.stack``, eagerly and under ``jit``, over
batched/unbatched operand combinations (batch axis 0 or not, unbatched scalars, batched
per-example scalars next to arrays, size-0 batches); the special rules of ``select_n``,
``clamp`` and ``bitcast_convert_type``; NumPy functions built on them; ``vmap(grad(f))``."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core.primitive import Primitive
from hlox.interpreters import batching
from hlox.lax import elementwise

from util import assert_close

B = 3
f32, i32, c64 = np.float32, np.int32, np.complex64

_domains = {
    "any": (-3.0, 3.0), "pos": (0.5, 3.0), "unit": (-0.9, 0.9), "ge1": (1.1, 3.0),
    "neg": (-2.0, -0.5), "small": (0, 8), "order": (0, 3),
}


def _rand(rng, shape, dtype, domain="any"):
  dtype = np.dtype(dtype)
  low, high = _domains[domain]
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    low = 0 if dtype.kind == "u" else int(low)
    return rng.integers(low, int(high) + 1, size=shape).astype(dtype)
  if domain == "order":  # polygamma's order: a non-negative integer value of a float dtype
    return rng.integers(0, 3, size=shape).astype(dtype)
  if dtype.kind == "c":
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
  return rng.uniform(low, high, shape).astype(dtype)


def _batched_shape(example_shape, axis, size):
  if axis is None:
    return example_shape
  return example_shape[:axis] + (size,) + example_shape[axis:]


def _example(a, axis, i):
  return a if axis is None else np.take(a, i, axis=axis)


def _bits(x):
  x = np.asarray(x)
  return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype != np.bool_ else x


def check_vmap(f, args, in_axes, tol_scale=10.0, exact=False):
  """``vmap(f, in_axes)`` eagerly and under ``jit`` equals ``f`` on each example, stacked
  (``exact``: bit for bit)."""
  in_axes = tuple(in_axes)
  size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
  if size:
    expected = jnp.stack([f(*[_example(a, d, i) for a, d in zip(args, in_axes)])
                          for i in range(size)])
  else:
    # No example to run: the result is empty with the per-example result's dtype.
    examples = [a if d is None else np.zeros(np.delete(np.shape(a), d), np.asarray(a).dtype)
                for a, d in zip(args, in_axes)]
    out = hlox.eval_shape(f, *examples)
    expected = np.zeros((0,) + tuple(out.shape), out.dtype)
  expected = np.asarray(expected)
  vf = hlox.vmap(f, in_axes=in_axes)
  dtype = expected.dtype
  tol = {} if dtype.kind in "biu" else dict(
      rtol=1e-5 * tol_scale if dtype in (np.float32, np.complex64) else 1e-12 * tol_scale,
      atol=1e-5 * tol_scale if dtype in (np.float32, np.complex64) else 1e-12 * tol_scale)
  for got in (vf(*args), hlox.jit(vf)(*args)):
    if exact:
      assert np.asarray(got).dtype == dtype
      np.testing.assert_array_equal(_bits(got), _bits(expected))
    else:
      assert_close(got, expected, dtype, **tol)


# --- the table ----------------------------------------------------------------------------

# (id, function of the operands, dtype, domain) for unary primitives.
UNARY = [
    ("neg", lax.neg, f32, "any"), ("neg_int", lax.neg, i32, "any"),
    ("sign", lax.sign, f32, "any"), ("abs", lax.abs, f32, "any"),
    ("abs_complex", lax.abs, c64, "any"), ("square", lax.square, f32, "any"),
    ("floor", lax.floor, f32, "any"), ("ceil", lax.ceil, f32, "any"),
    ("round", lax.round, f32, "any"),
    ("round_even", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), f32, "any"),
    ("is_finite", lambda x: lax.is_finite(lax.div(x, lax.floor(x))), f32, "any"),
    ("exp", lax.exp, f32, "any"), ("exp2", lax.exp2, f32, "any"), ("log", lax.log, f32, "pos"),
    ("log1p", lax.log1p, f32, "pos"), ("expm1", lax.expm1, f32, "any"),
    ("sqrt", lax.sqrt, f32, "pos"), ("rsqrt", lax.rsqrt, f32, "pos"),
    ("cbrt", lax.cbrt, f32, "any"), ("tanh", lax.tanh, f32, "any"),
    ("logistic", lax.logistic, f32, "any"), ("sin", lax.sin, f32, "any"),
    ("cos", lax.cos, f32, "any"), ("tan", lax.tan, f32, "unit"),
    ("asin", lax.asin, f32, "unit"), ("acos", lax.acos, f32, "unit"),
    ("atan", lax.atan, f32, "any"), ("sinh", lax.sinh, f32, "any"),
    ("cosh", lax.cosh, f32, "any"), ("asinh", lax.asinh, f32, "any"),
    ("acosh", lax.acosh, f32, "ge1"), ("atanh", lax.atanh, f32, "unit"),
    ("erf", lax.erf, f32, "any"), ("erfc", lax.erfc, f32, "any"),
    ("erf_inv", lax.erf_inv, f32, "unit"), ("lgamma", lax.lgamma, f32, "pos"),
    ("digamma", lax.digamma, f32, "pos"), ("real", lax.real, c64, "any"),
    ("imag", lax.imag, c64, "any"), ("conj", lax.conj, c64, "any"),
    ("conj_real", lax.conj, f32, "any"), ("not_bool", lax.bitwise_not, np.bool_, "any"),
    ("not_int", lax.bitwise_not, i32, "any"),
    ("population_count", lax.population_count, i32, "any"),
    ("clz", lax.clz, i32, "any"),
    ("integer_pow_3", lambda x: lax.integer_pow(x, 3), f32, "any"),
    ("integer_pow_-2", lambda x: lax.integer_pow(x, -2), f32, "pos"),
    ("integer_pow_int", lambda x: lax.integer_pow(x, 2), i32, "any"),
    ("convert_f32_i32", lambda x: lax.convert_element_type(x, i32), f32, "any"),
    ("convert_i32_f32_weak", lambda x: lax.convert_element_type(x, f32, weak_type=True), i32,
     "any"),
    ("convert_f32_bool", lambda x: lax.convert_element_type(x, np.bool_), f32, "any"),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), f32, "any"),
    ("copy", lax.copy, f32, "any"),
    ("bitcast_same_width", lambda x: lax.bitcast_convert_type(x, i32), f32, "any"),
    ("bitcast_narrowing", lambda x: lax.bitcast_convert_type(x, np.uint16), f32, "any"),
]

# (id, function, dtype of each operand, domain of each operand) for n-ary primitives.
BINARY = [
    ("add", lax.add, (f32, f32), ("any", "any")),
    ("add_complex", lax.add, (c64, c64), ("any", "any")),
    ("sub", lax.sub, (f32, f32), ("any", "any")),
    ("mul", lax.mul, (i32, i32), ("any", "any")),
    ("div", lax.div, (f32, f32), ("any", "pos")),
    ("div_int", lax.div, (i32, i32), ("any", "ge1")),
    ("rem", lax.rem, (f32, f32), ("any", "pos")),
    ("pow", lax.pow, (f32, f32), ("pos", "any")),
    ("pow_int_exponent", lax.pow, (f32, i32), ("pos", "any")),
    ("max", lax.max, (f32, f32), ("any", "any")),
    ("min", lax.min, (i32, i32), ("any", "any")),
    ("nextafter", lax.nextafter, (f32, f32), ("any", "any")),
    ("atan2", lax.atan2, (f32, f32), ("any", "any")),
    ("polygamma", lax.polygamma, (f32, f32), ("order", "pos")),
    ("complex", lax.complex, (f32, f32), ("any", "any")),
    ("eq", lax.eq, (i32, i32), ("any", "any")),
    ("ne", lax.ne, (f32, f32), ("any", "any")),
    ("lt", lax.lt, (f32, f32), ("any", "any")),
    ("le", lax.le, (i32, i32), ("any", "any")),
    ("gt", lax.gt, (f32, f32), ("any", "any")),
    ("ge", lax.ge, (f32, f32), ("any", "any")),
    ("and", lax.bitwise_and, (np.bool_, np.bool_), ("any", "any")),
    ("or", lax.bitwise_or, (i32, i32), ("any", "any")),
    ("xor", lax.bitwise_xor, (np.bool_, np.bool_), ("any", "any")),
    ("shift_left", lax.shift_left, (i32, i32), ("any", "small")),
    ("shift_right_logical", lax.shift_right_logical, (i32, i32), ("any", "small")),
    ("shift_right_arithmetic", lax.shift_right_arithmetic, (i32, i32), ("any", "small")),
]

# Operand layouts: (per-example shape, batch axis or None) for each operand.
BINARY_LAYOUTS = {
    "moved": (((4,), 1), ((4,), 0)),                  # batched along different axes
    "scalar_unbatched": (((4,), 0), ((), None)),      # an unbatched scalar operand
    "example_scalar": (((), 0), ((2, 4), None)),      # per-example scalar, unbatched array
    "unbatched_array": (((4,), None), ((4,), 1)),
}
# Every layout for a few primitives (the rule is shared by all n-ary primitives).
EXTRA_LAYOUTS = {
    "same_axis": (((2, 4), 1), ((2, 4), 1)),
    "example_scalar_batched": (((), 0), ((4,), 1)),   # per-example scalar next to a batched array
    "size_one": (((4,), 0), ((1,), 0)),               # per-example size-1 broadcasting
    "size_one_unbatched": (((1, 4), 1), ((2, 1), None)),
    "both_scalars": (((), 0), ((), None)),
}
FULL = {"add", "pow_int_exponent", "polygamma", "complex", "lt", "shift_left"}


def _make_args(rng, layouts, dtypes, domains, size=B):
  return [_rand(rng, _batched_shape(shape, axis, size), dtype, domain)
          for (shape, axis), dtype, domain in zip(layouts, dtypes, domains)]


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("in_axis", [0, 1])
@pytest.mark.parametrize("name,fun,dtype,domain", UNARY, ids=[r[0] for r in UNARY])
def test_unary(name, fun, dtype, domain, in_axis):
  rng = np.random.default_rng(0)
  x = _rand(rng, (B, 4) if in_axis == 0 else (4, B), dtype, domain)
  if name == "is_finite":
    x = x.copy()
    x[0, 0], x[1, 1] = 0, 0.5  # x / floor(x): inf and nan
  check_vmap(fun, [x], [in_axis])


@pytest.mark.parametrize("fun", [lax.sin, lambda x: lax.integer_pow(x, 3)],
                         ids=["sin", "integer_pow"])
def test_unary_size_zero_and_scalar_examples(fun):
  rng = np.random.default_rng(1)
  check_vmap(fun, [np.zeros((0, 4), f32)], [0])
  check_vmap(fun, [np.zeros((4, 0), f32)], [1])
  check_vmap(fun, [_rand(rng, (B,), f32)], [0])  # per-example scalars


def _binary_cases():
  for name, fun, dtypes_, domains in BINARY:
    layouts = dict(BINARY_LAYOUTS, **(EXTRA_LAYOUTS if name in FULL else {}))
    for layout_name, layout in layouts.items():
      yield pytest.param(fun, dtypes_, domains, layout, id=f"{name}-{layout_name}")


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("fun,dtypes_,domains,layout", list(_binary_cases()))
def test_binary(fun, dtypes_, domains, layout):
  rng = np.random.default_rng(2)
  args = _make_args(rng, layout, dtypes_, domains)
  check_vmap(fun, args, [axis for _, axis in layout])
  # The same layout with the operands swapped (the unbatched operand first), where the
  # primitive allows it (mixed dtypes do not swap).
  if dtypes_[0] == dtypes_[1] and domains[0] == domains[1]:
    check_vmap(fun, args[::-1], [axis for _, axis in layout][::-1])


def test_binary_size_zero():
  rng = np.random.default_rng(3)
  x = np.zeros((0, 4), f32)
  check_vmap(lax.add, [x, _rand(rng, (4,), f32)], [0, None])
  check_vmap(lax.mul, [np.zeros((4, 0), f32), x], [1, 0])
  check_vmap(lax.lt, [np.zeros((0,), f32), _rand(rng, (2, 4), f32)], [0, None])


def test_python_scalar_operands():
  rng = np.random.default_rng(4)
  x = _rand(rng, (4, B), f32)
  n = _rand(rng, (B, 4), i32)
  check_vmap(lambda x: lax.add(x, 2.0), [x], [1])
  check_vmap(lambda x: lax.mul(3.0, x), [x], [1])
  check_vmap(lambda n: lax.shift_left(n, 2), [n], [0])
  check_vmap(lambda x: lax.pow(x, 2), [abs(x)], [1])
  check_vmap(lambda x: lax.select(lax.lt(x, 0.0), x, lax.neg(x)), [x], [1])
  check_vmap(lambda x: lax.clamp(-1.0, x, 1.0), [x], [1])


# --- select_n -----------------------------------------------------------------------------

# (which dtype, layouts of which and the cases)
SELECT_LAYOUTS = {
    "all_batched": (np.bool_, [((4,), 0), ((4,), 0), ((4,), 0)]),
    "all_axis_1": (np.bool_, [((2, 4), 1), ((2, 4), 1), ((2, 4), 1)]),
    "scalar_which_unbatched": (np.bool_, [((), None), ((4,), 0), ((4,), 1)]),
    "scalar_which_unbatched_same_axis": (np.bool_, [((), None), ((2, 4), 1), ((2, 4), 1)]),
    "scalar_which_unbatched_mixed": (np.bool_, [((), None), ((4,), None), ((4,), 1)]),
    "example_scalar_which": (np.bool_, [((), 0), ((2, 4), 0), ((2, 4), 0)]),
    "example_scalar_which_moved": (np.bool_, [((), 0), ((4,), None), ((4,), 1)]),
    "example_scalar_which_scalar_cases": (np.bool_, [((), 0), ((), None), ((), None)]),
    "example_scalar_which_mixed_scalars": (np.bool_, [((), 0), ((), 0), ((), None)]),
    "batched_which_unbatched_cases": (np.bool_, [((2, 4), 1), ((2, 4), None), ((2, 4), None)]),
    "unbatched_which": (np.bool_, [((4,), None), ((4,), 1), ((4,), None)]),
    "int_which": (np.int32, [((4,), 0), ((4,), None), ((4,), 1), ((4,), 0)]),
    "int_which_unbatched": (np.int32, [((4,), None), ((4,), 0), ((4,), None), ((4,), 1)]),
    "int_scalar_which": (np.int32, [((), 0), ((4,), 1), ((4,), None), ((4,), 0)]),
}


@pytest.mark.parametrize("which_dtype,layout", list(SELECT_LAYOUTS.values()),
                         ids=list(SELECT_LAYOUTS))
def test_select_n(which_dtype, layout):
  rng = np.random.default_rng(5)
  n_cases = len(layout) - 1
  (which_shape, which_axis), *case_layouts = layout
  which = _rand(rng, _batched_shape(which_shape, which_axis, B), np.int32, "small") % n_cases
  which = which.astype(which_dtype)
  cases = _make_args(rng, case_layouts, [f32] * n_cases, ["any"] * n_cases)
  check_vmap(lax.select_n, [which] + cases, [which_axis] + [a for _, a in case_layouts])


def test_select_n_size_zero():
  which = np.zeros((0,), np.bool_)
  check_vmap(lax.select_n, [which, np.zeros((4,), f32), np.zeros((0, 4), f32)], [0, None, 0])
  check_vmap(lax.select_n, [np.zeros((4, 0), np.bool_), np.ones((4,), f32),
                            np.zeros((4,), f32)], [1, None, None])


# --- clamp --------------------------------------------------------------------------------

# Layouts of (min, operand, max).
CLAMP_LAYOUTS = {
    "scalar_bounds": [((), None), ((4,), 0), ((), None)],
    "scalar_bounds_axis_1": [((), None), ((2, 4), 1), ((), None)],
    "example_scalar_bound": [((), 0), ((4,), 1), ((), None)],
    "array_bounds_mixed": [((4,), None), ((4,), 0), ((4,), 1)],
    "unbatched_scalar_operand": [((), 0), ((), None), ((), 0)],
    "unbatched_array_operand": [((), None), ((4,), None), ((4,), 1)],
    "all_batched": [((4,), 0), ((4,), 0), ((4,), 0)],
    "example_scalars": [((), 0), ((), 0), ((), None)],
    "example_scalar_bounds_same_axis": [((), 0), ((4,), 0), ((), 0)],
}


@pytest.mark.parametrize("layout", list(CLAMP_LAYOUTS.values()), ids=list(CLAMP_LAYOUTS))
def test_clamp(layout):
  rng = np.random.default_rng(6)
  args = _make_args(rng, layout, [f32] * 3, ["neg", "any", "pos"])
  check_vmap(lax.clamp, args, [a for _, a in layout])


def test_clamp_int_and_size_zero():
  rng = np.random.default_rng(7)
  check_vmap(lax.clamp, [np.int32(-1), _rand(rng, (4, B), i32), _rand(rng, (B,), i32) + 1],
             [None, 1, 0])
  check_vmap(lax.clamp, [np.float32(0), np.zeros((0, 4), f32), np.ones((4,), f32)],
             [None, 0, None])


# --- bitcast_convert_type -----------------------------------------------------------------

@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_bitcast_widening(in_axis):
  # uint8[3, 4] -> float32[3]: the cast consumes the example's last dimension, which the
  # batch dimension must not be mistaken for.
  rng = np.random.default_rng(8)
  x = rng.integers(0, 256, size=_batched_shape((3, 4), in_axis, B)).astype(np.uint8)
  check_vmap(lambda x: lax.bitcast_convert_type(x, f32), [x], [in_axis], exact=True)


@pytest.mark.parametrize("in_axis", [0, 1])
def test_bitcast_widening_batch_size_matches_ratio(in_axis):
  # With B == 2 == 32 / 16 a cast that swallowed the batch dimension would still type-check
  # (and give the bits of the wrong pairs).
  x = np.array([[0x3FC0, 0x4010], [0xC000, 0x3F80]], np.uint16)
  check_vmap(lambda x: lax.bitcast_convert_type(x, f32), [x], [in_axis], exact=True)


def test_bitcast_widening_per_example_scalar_error():
  x = np.arange(2, dtype=np.uint16)
  with pytest.raises(ValueError, match="bitcast_convert_type.*last dimension"):
    hlox.vmap(lambda x: lax.bitcast_convert_type(x, f32))(x)


@pytest.mark.parametrize("in_axis", [0, 1])
def test_bitcast_narrowing_then_widening(in_axis):
  rng = np.random.default_rng(9)
  x = _rand(rng, _batched_shape((4,), in_axis, B) + (2,), f32)
  f = lambda x: lax.bitcast_convert_type(lax.bitcast_convert_type(x, np.uint8), f32)
  check_vmap(f, [x], [in_axis], exact=True)
  np.testing.assert_array_equal(np.asarray(hlox.vmap(f, in_axes=in_axis)(x)),
                                np.moveaxis(x, in_axis, 0))


# --- every primitive has a rule ------------------------------------------------------------

def test_every_primitive_has_a_batching_rule():
  prims = [v for k, v in vars(elementwise).items()
           if k.endswith("_p") and isinstance(v, Primitive)]
  assert len(prims) >= 70
  missing = [p.name for p in prims if p not in batching.primitive_batchers
             and p not in batching.fancy_primitive_batchers]
  assert not missing, f"no batching rule for {missing}"


# --- NumPy functions ----------------------------------------------------------------------

def test_numpy_where():
  rng = np.random.default_rng(10)
  c = rng.random((B, 4)) < 0.5
  x, y = _rand(rng, (4, B), f32), _rand(rng, (4,), f32)
  check_vmap(jnp.where, [c, x, y], [0, 1, None])
  check_vmap(jnp.where, [c[:, 0], x, y], [0, 1, None])     # per-example scalar condition
  check_vmap(lambda c, x: jnp.where(c, x, 0), [c, x], [0, 1])
  check_vmap(lambda x: jnp.where(x > 0, x, 2 * x), [x], [1])
  n = _rand(rng, (B, 4), i32)
  check_vmap(lambda c, n, x: jnp.where(c, n, x), [c, n, y], [0, 0, None])  # promotes


def test_numpy_clip():
  rng = np.random.default_rng(11)
  x = _rand(rng, (B, 4), f32)
  lo, hi = _rand(rng, (B,), f32, "neg"), _rand(rng, (4,), f32, "pos")
  check_vmap(lambda x, lo, hi: jnp.clip(x, lo, hi), [x, lo, hi], [0, 0, None])
  check_vmap(lambda x: jnp.clip(x, -1, 1), [x.T], [1])
  check_vmap(lambda x, hi: jnp.clip(x, max=hi), [x, hi], [0, None])


def test_numpy_maximum():
  rng = np.random.default_rng(12)
  x, y = _rand(rng, (4, B), f32), _rand(rng, (B,), i32)
  check_vmap(jnp.maximum, [x, y], [1, 0])
  check_vmap(jnp.maximum, [x, np.float32(0.5)], [1, None])
  check_vmap(lambda x: jnp.maximum(x, 0), [x], [1])


def test_numpy_logaddexp():
  rng = np.random.default_rng(13)
  x, y = _rand(rng, (B, 4), f32), _rand(rng, (4,), f32)
  check_vmap(jnp.logaddexp, [x, y], [0, None])
  check_vmap(jnp.logaddexp, [x, x.T], [0, 1])
  np.testing.assert_allclose(np.asarray(hlox.vmap(jnp.logaddexp, (0, None))(x, y)),
                             np.logaddexp(x, y), rtol=1e-5)


def test_numpy_operators():
  rng = np.random.default_rng(14)
  x, y = _rand(rng, (B, 4), f32), _rand(rng, (4,), f32, "pos")
  n = _rand(rng, (4, B), i32, "ge1")
  check_vmap(lambda x, y: x / y, [x, y], [0, None])
  check_vmap(lambda n, x: n / x, [n, x], [1, 0])
  check_vmap(lambda n: n / 2, [n], [1])                    # int / int -> float
  check_vmap(lambda x: x ** 2, [x], [0])
  check_vmap(lambda x, y: y ** x, [x, y], [0, None])
  check_vmap(lambda n: n ** 3, [n], [1])
  np.testing.assert_allclose(np.asarray(hlox.vmap(lambda x, y: x / y, (0, None))(x, y)),
                             x / y, rtol=1e-6)


# --- vmap of grad -------------------------------------------------------------------------

def _f(x, y):
  return lax.sin(x) * y + jnp.maximum(x, y) ** 2 + jnp.where(x > 0, jnp.log1p(x * x), -x)


def _g(x):
  return jnp.clip(x, -1.0, 1.0) * lax.exp(x) / (1 + x * x)


@pytest.mark.parametrize("fun,argnums,in_axes", [
    (_f, 0, (0, None)), (_f, 1, (0, 0)), (_f, (0, 1), (None, 0)),
    (lambda x, y: _g(x) * lax.tanh(y), 0, (0, 0)),
])
def test_vmap_of_grad(fun, argnums, in_axes):
  rng = np.random.default_rng(15)
  x = _rand(rng, (5,), f32)
  x[0], x[1] = 0.0, 2.0  # a tie with y in max, a point where clip's bound is active
  y = np.float32(0.0) if in_axes[1] is None else _rand(rng, (5,), f32)
  if in_axes[0] is None:
    x = np.float32(0.7)
  grad_f = hlox.grad(fun, argnums=argnums)
  size = 5
  expected = [grad_f(*[_example(a, d, i) for a, d in zip((x, y), in_axes)])
              for i in range(size)]
  if isinstance(argnums, tuple):
    expected = tuple(np.asarray(jnp.stack([e[k] for e in expected])) for k in range(2))
  else:
    expected = (np.asarray(jnp.stack(expected)),)
  for vf in (hlox.vmap(grad_f, in_axes=in_axes), hlox.jit(hlox.vmap(grad_f, in_axes=in_axes))):
    got = vf(x, y)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
      assert_close(g, e, np.float32, rtol=1e-5, atol=1e-5)
