"""hlox.experimental.jet: Taylor coefficients against closed forms, against nested forward
derivatives (``jacfwd`` of the function along the curve, the slow way) and against JAX."""
import math
from functools import partial, reduce

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental import jet as jet_mod
from hlox.experimental.jet import fact, jet, jet2, zero_series, zero_term

from tests.util import check_against_jax_modules

ORDER = 3


def nested_jvp_taylor(fun, primals, series):
  """The derivatives of order 1..K of ``fun`` along the curve ``x + sum_k t^k/k! x_k`` at
  t = 0, by K nested ``jacfwd``s (what jet computes in one pass)."""
  order = len(series[0])
  primals = [jnp.asarray(p) for p in primals]

  def along(t):
    args = [x + sum(t ** (k + 1) * terms[k] / math.factorial(k + 1) for k in range(order))
            for x, terms in zip(primals, series)]
    return fun(*args)

  def nth(n):
    return reduce(lambda f, _: hlox.jacfwd(f), range(n), along)(0.)
  return fun(*primals), [nth(k + 1) for k in range(order)]


def check_jet(fun, primals, series, rtol=2e-4, atol=2e-4):
  # Both run as one compiled program each: eagerly, every primitive of the nested
  # derivatives would be compiled on its own.
  y, terms = hlox.jit(partial(jet, fun))(primals, series)
  want_y, want_terms = hlox.jit(partial(nested_jvp_taylor, fun))(primals, series)
  np.testing.assert_allclose(y, want_y, rtol=rtol, atol=atol)
  assert len(terms) == len(want_terms)
  for got, want in zip(terms, want_terms):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _inputs(seed, n_args, shape=(2, 3), lims=(-2.0, 2.0), order=ORDER):
  rng = np.random.RandomState(seed)
  lo, hi = lims
  primals = [(rng.rand(*shape) * (hi - lo) + lo).astype(np.float32) for _ in range(n_args)]
  series = [[rng.randn(*shape).astype(np.float32) for _ in range(order)]
            for _ in range(n_args)]
  return primals, series


# --- closed forms ------------------------------------------------------------------------

def test_sin_of_cubic_is_faa_di_bruno():
  h0, h1, h2 = 0.5 ** 3, 3 * 0.5 ** 2, 6 * 0.5
  f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
  np.testing.assert_allclose(f0, np.sin(h0), rtol=1e-6)
  np.testing.assert_allclose(f1, np.cos(h0) * h1, rtol=1e-6)
  np.testing.assert_allclose(f2, -np.sin(h0) * h1 ** 2 + np.cos(h0) * h2, rtol=1e-6)


def test_exp_along_a_line():
  # d^k/dt^k exp(x + t v) = exp(x) v^k.
  x, v = np.float32(0.3), np.float32(1.5)
  y, terms = jet(jnp.exp, (x,), ([v, 0.0, 0.0, 0.0],))
  np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
  np.testing.assert_allclose(terms, [np.exp(x) * v ** k for k in range(1, 5)], rtol=1e-5)


def test_log_and_reciprocal_along_a_line():
  x, v = 2.0, 1.0
  _, terms = jet(jnp.log, (x,), ([v, 0.0, 0.0],))
  # d^k log(x + t) = (-1)^(k+1) (k-1)! / x^k
  np.testing.assert_allclose(terms, [0.5, -0.25, 0.25], rtol=1e-6)
  _, terms = jet(lambda x: 1.0 / x, (x,), ([v, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [-0.25, 0.25, -6 / 16], rtol=1e-6)


def test_factorial_scaling():
  # Unscaled (jet2): the plain coefficients of the polynomial; exp(t) has 1/k!.
  y, terms = jet2(jnp.exp, (0.0,), ([1.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [1.0, 1 / 2, 1 / 6], rtol=1e-6)
  y2, terms2 = jet(jnp.exp, (0.0,), ([1.0, 0.0, 0.0],), factorial_scaled=False)
  np.testing.assert_allclose(terms2, terms, rtol=1e-6)
  np.testing.assert_allclose(fact(np.arange(5.0)), [1, 1, 2, 6, 24], rtol=1e-5)


def test_integer_powers_at_zero():
  # (0 + t)^10 has a nonzero 10th derivative only: all lower terms vanish exactly.
  _, terms = jet(lambda x: x ** 10, (0.0,), ([1.0, 0.0, 0.0],))
  np.testing.assert_array_equal(terms, [0.0, 0.0, 0.0])
  _, terms = jet(lambda x: x ** 3, (0.0,), ([1.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [0.0, 0.0, 6.0], rtol=1e-5)  # fact(3) = exp(lgamma(4))
  y, terms = jet(lambda x: x ** 0, (2.0,), ([1.0, 1.0],))
  np.testing.assert_array_equal(y, 1.0)
  np.testing.assert_array_equal(terms, [0.0, 0.0])


# --- against nested forward derivatives ---------------------------------------------------

UNARY = {
    "exp": (jnp.exp, (-2, 2)),
    "log": (jnp.log, (0.8, 4)),
    "log1p": (jnp.log1p, (0, 4)),
    "sin": (jnp.sin, (-2, 2)),
    "cos": (jnp.cos, (-2, 2)),
    "tan": (jnp.tan, (-1, 1)),
    "sinh": (jnp.sinh, (-2, 2)),
    "tanh": (jnp.tanh, (-3, 3)),
    "logistic": (lax.logistic, (-5, 5)),
    "sqrt": (jnp.sqrt, (0.5, 5)),
    "rsqrt": (lax.rsqrt, (0.5, 5)),
    "cbrt": (jnp.cbrt, (0.5, 5)),
    "asinh": (jnp.arcsinh, (-3, 3)),
    "acosh": (jnp.arccosh, (1.5, 4)),
    "atanh": (jnp.arctanh, (-0.8, 0.8)),
    "atan": (jnp.arctan, (-2, 2)),
    "asin": (jnp.arcsin, (-0.8, 0.8)),
    "erf": (lax.erf, (-2, 2)),
    "erf_inv": (lax.erf_inv, (-0.9, 0.9)),
    "abs": (jnp.abs, (-2, 2)),
    "integer_pow": (lambda x: x ** 5 - x ** -2, (0.5, 2)),
    "stop_gradient": (lambda x: lax.stop_gradient(x) * x, (-2, 2)),
    "reduce_max": (lambda x: x.max(axis=1), (-2, 2)),
    "reduce_min": (jnp.min, (-2, 2)),
    "sum_mean": (lambda x: jnp.sum(x ** 2, axis=0) + jnp.mean(x), (-2, 2)),
    "cumsum": (jnp.cumsum, (-2, 2)),
    "cumprod": (jnp.cumprod, (-2, 2)),
    "cummax": (partial(lax.cummax, axis=0), (-2, 2)),
    "cumlogsumexp": (partial(lax.cumlogsumexp, axis=1), (-2, 2)),
    "slicing": (lambda x: x[1:, ::2] * x[0, 1], (-2, 2)),
    "gather": (lambda x: x[np.array([1, 0, 1])] * 2, (-2, 2)),
    "scatter_add": (lambda x: jnp.zeros((4,)).at[np.array([0, 2, 2])].add(x[0] ** 2),
                    (-2, 2)),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 1), (1, 2)) ** 2, (-2, 2)),
    "dynamic_update_slice": (
        lambda x: lax.dynamic_update_slice(x, x[:1, :2] ** 2, (1, 0)), (-2, 2)),
    "shapes": (lambda x: jnp.concatenate([x.T.reshape(6), jnp.pad(x[0], 1),
                                          jnp.flip(x, 1)[1]]), (-2, 2)),
    "stack_unstack": (lambda x: jnp.stack(lax.unstack(x, axis=1)[::-1], axis=0), (-2, 2)),
    "fft": (lambda x: jnp.abs(jnp.fft.fft(x)) ** 2, (-2, 2)),
    "complex_parts": (lambda x: lax.real(lax.complex(x, 2 * x) * lax.complex(x, x ** 2)),
                      (-2, 2)),
    "jit": (hlox.jit(lambda x: jnp.sin(x) * x), (-2, 2)),
    "nested_jit": (hlox.jit(lambda x: hlox.jit(jnp.exp)(x) / (1 + x ** 2)), (-2, 2)),
    "checkpoint": (hlox.checkpoint(lambda x: jnp.sin(jnp.cos(x))), (-2, 2)),
    "relu_custom_jvp": (lambda x: hlox.nn.relu(x) * x + hlox.nn.softplus(x), (-2, 2)),
    "logsumexp": (lambda x: hlox.nn.logsumexp(x, axis=1), (-2, 2)),
    "grad_inside": (lambda x: hlox.grad(lambda y: jnp.sum(jnp.sin(y) * y ** 3))(x), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_nested_jvp(name):
  fun, lims = UNARY[name]
  primals, series = _inputs(0, 1, lims=lims)
  check_jet(fun, primals, series)


BINARY = {
    "add_sub": (lambda x, y: x + y - 2 * x, (-2, 2)),
    "mul": (lambda x, y: x * y, (-2, 2)),
    "div": (lambda x, y: x / y, (0.8, 4)),
    "rem": (lax.rem, (0.8, 4)),
    "pow": (lambda x, y: x ** y, (0.5, 2)),
    "atan2": (jnp.arctan2, (-4, 4)),
    "max": (lax.max, (-2, 2)),
    "min_scalar": (lambda x, y: jnp.minimum(x, 0.5) + jnp.maximum(0.0, y), (-2, 2)),
    "where": (lambda x, y: jnp.where(x > y, jnp.exp(x), y ** 3), (-2, 2)),
    "clamp": (lambda x, y: lax.clamp(-0.5, x * y, 0.5), (-1, 1)),
    "dot": (lambda x, y: jnp.dot(x, y.T), (-2, 2)),
    "einsum": (lambda x, y: jnp.einsum("ij,kj->ik", jnp.tanh(x), y), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_against_nested_jvp(name):
  fun, lims = BINARY[name]
  primals, series = _inputs(1, 2, lims=lims)
  check_jet(fun, primals, series)


def _scan(x):
  def body(c, xi):
    c = jnp.sin(c) * xi + c
    return c, c * xi
  c, ys = lax.scan(body, jnp.ones(()), x)
  return jnp.concatenate([c[None], ys])


CONTROL_FLOW = {  # beyond JAX, whose jet has no rules for loops and branches
    "scan": _scan,
    "scan_reverse_consts": lambda x: lax.scan(lambda c, xi: (c * jnp.cos(xi) + x[0], c),
                                              x, x, reverse=True)[1],
    "fori_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) * x + i, x),
    "while_loop": lambda x: lax.while_loop(
        lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.sin(c[1]) * x), (0, x))[1],
    "cond": lambda x: lax.cond(jnp.sum(x) > 0, lambda y: jnp.sin(y) * x, lambda y: y ** 3, x),
    "switch": lambda x: lax.switch(jnp.argmax(x), [jnp.sin, jnp.exp, lambda y: y * 0 + 1.0],
                                   x),
}


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_control_flow_against_nested_jvp(name):
  primals, series = _inputs(7, 1, shape=(3,))
  check_jet(CONTROL_FLOW[name], primals, series)


def test_convolution_against_nested_jvp():
  rng = np.random.RandomState(2)
  x = rng.randn(1, 5, 5, 1).astype(np.float32)
  w = rng.randn(2, 2, 1, 3).astype(np.float32)

  def f(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))
  series = ([rng.randn(*x.shape).astype(np.float32) for _ in range(ORDER)],
            [rng.randn(*w.shape).astype(np.float32) for _ in range(ORDER)])
  check_jet(f, (x, w), series)


def test_higher_order_and_pytree_output():
  primals, series = _inputs(3, 1, lims=(-1, 1), order=4)

  def f(x):
    return {"a": jnp.tanh(x) * jnp.exp(x), "b": (jnp.sum(jnp.sin(x)),)}
  y, terms = jet(f, primals, series)
  want_y, want_terms = nested_jvp_taylor(f, primals, series)
  np.testing.assert_allclose(y["a"], want_y["a"], rtol=1e-5)
  assert set(terms) == {"a", "b"} and len(terms["a"]) == 4 and len(terms["b"][0]) == 4
  for k in range(4):
    np.testing.assert_allclose(terms["a"][k], want_terms[k]["a"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(terms["b"][0][k], want_terms[k]["b"][0], rtol=2e-3, atol=2e-3)


def test_closure_over_jet_value_in_jit():
  # The jet tracer reaches the jitted function as a captured value.
  def f(x):
    return hlox.jit(lambda y: x * y + jnp.sin(x))(2.0)
  primals, series = _inputs(4, 1)
  check_jet(f, primals, series)


def test_large_arguments_of_tanh_and_logistic_stay_finite():
  x = np.array([-500.0, -60.0, 0.0, 60.0, 500.0], np.float32)
  series = [np.ones_like(x) for _ in range(5)]
  for f in (jnp.tanh, lax.logistic):
    y, terms = jet(f, (x,), (series,))
    assert np.all(np.isfinite(np.asarray(terms)))
    np.testing.assert_allclose(np.asarray(terms)[:, [0, -1]], 0.0, atol=1e-6)
    np.testing.assert_allclose(y, f(x), rtol=1e-6)


# --- zeros, transformations, errors -------------------------------------------------------

def test_outputs_without_series_are_zeros():
  x = jnp.ones(2)
  y, terms = jet(lambda x: jnp.full_like(x, 2.0), (x,), ([jnp.ones(2)] * 3,))
  assert terms is not zero_series
  np.testing.assert_array_equal(y, [2.0, 2.0])
  np.testing.assert_array_equal(terms, np.zeros((3, 2)))
  y2, terms2 = jet(lambda x: 2.0 + 0 * x, (x,), ([jnp.ones(2)] * 3,))
  np.testing.assert_array_equal(y2, y)
  np.testing.assert_array_equal(terms2, terms)
  # Integer results are locally constant: zero terms of their dtype.
  y3, terms3 = jet(lambda x: (x > 0.5).astype(jnp.int32), (x,), ([jnp.ones(2)] * 2,))
  np.testing.assert_array_equal(y3, [1, 1])
  np.testing.assert_array_equal(terms3, np.zeros((2, 2)))


def test_zero_term_inputs():
  # A zero coefficient may be given symbolically.
  _, terms = jet(jnp.exp, (0.0,), ([1.0, zero_term, zero_term],))
  np.testing.assert_allclose(terms, [1.0, 1.0, 1.0], rtol=1e-6)


def test_grad_of_function_inside_jet():
  # https://github.com/jax-ml/jax/issues/5217's program: add_any under jet.
  f = lambda x, eps: x * eps + eps + x
  g = lambda eps: hlox.grad(f)(jnp.array(1.0), eps)
  y, terms = jet(g, (1.0,), ([1.0],))
  np.testing.assert_allclose(y, 2.0)
  np.testing.assert_allclose(terms, [1.0])


def test_jet_under_jit_vmap_and_grad():
  def taylor3(x):
    _, terms = jet(jnp.sin, (x,), ([1.0, 0.0, 0.0],))
    return jnp.stack(terms)
  x = np.float32(0.7)
  want = [np.cos(x), -np.sin(x), -np.cos(x)]
  np.testing.assert_allclose(hlox.jit(taylor3)(x), want, rtol=1e-6)
  xs = np.linspace(-1, 1, 4).astype(np.float32)
  np.testing.assert_allclose(hlox.vmap(taylor3)(xs),
                             np.stack([np.cos(xs), -np.sin(xs), -np.cos(xs)], 1), rtol=1e-6)
  # d/dx of the second derivative of sin is the third.
  np.testing.assert_allclose(hlox.grad(lambda x: taylor3(x)[1])(x), -np.cos(x), rtol=1e-6)


def test_vmap_inside_jet():
  xs, series = _inputs(5, 1, shape=(4, 3))
  check_jet(hlox.vmap(lambda r: jnp.sum(jnp.exp(r) * r)), xs, series)


def test_bad_inputs():
  with pytest.raises(ValueError, match="inconsistent lengths"):
    jet(lambda x, y: x * y, (1.0, 2.0), ([1.0], [1.0, 2.0]))
  with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
    jet(lambda x: x, ((1.0, 2.0),), ([1.0],))
  with pytest.raises(ValueError, match="term 1 for argument 0 is not an array"):
    jet(lambda x: x, (1.0,), ([1.0, [2.0]],))


def test_primitive_without_rule_names_it():
  with pytest.raises(NotImplementedError, match="'lgamma'.*jet"):
    jet(lax.lgamma, (2.0,), ([1.0],))


def test_public_names():
  for name in ("jet", "jet2", "fact", "zero_series", "zero_term", "jet_rules", "JetTrace",
               "JetTracer", "ZeroSeries", "ZeroTerm", "defzero", "deflinear", "def_deriv",
               "def_comp", "deriv_prop", "linear_prop", "zero_prop", "call_param_updaters"):
    assert hasattr(jet_mod, name), name
  assert isinstance(zero_series, jet_mod.ZeroSeries)
  assert isinstance(zero_term, jet_mod.ZeroTerm)


def test_registering_a_rule():
  # A user's primitive gets a rule through the public table.
  from hlox.extend.core import Primitive
  twice_p = Primitive("twice_for_jet_test")
  twice_p.def_impl(lambda x: 2 * x)
  twice_p.def_abstract_eval(lambda a: a)
  jet_mod.deflinear(twice_p)
  y, terms = jet(lambda x: twice_p.bind(x), (1.5,), ([1.0, 2.0],))
  np.testing.assert_allclose(y, 3.0)
  np.testing.assert_allclose(terms, [2.0, 4.0])


# --- JAX as the oracle --------------------------------------------------------------------

_PRELUDE = ("jnp = __import__(m.__name__.split('.')[0] + '.numpy', fromlist=['x']); "
            "lax = __import__(m.__name__.split('.')[0] + '.lax', fromlist=['x']); ")
_ORACLE = {
    "sin_cube": "return m.jet(jnp.sin, (0.125,), ((0.75, 3.0),))",
    "tanh_order5": ("x = np.linspace(-3, 3, 5).astype(np.float32)\n  return m.jet(jnp.tanh, "
                    "(x,), ([x * 0 + 1, x, x * x, x * 0 - 1, x],))"),
    "pow_unscaled": ("x = np.array([0.5, 1.5], np.float32)\n  return m.jet(lambda a, b: a ** b, "
                     "(x, x + 1), ([x, x], [x * 0 + 1, x]), factorial_scaled=False)"),
    "erf_inv": ("x = np.array([-0.5, 0.1, 0.7], np.float32)\n  "
                "return m.jet(lax.erf_inv, (x,), ([x + 1, x, x * 2],))"),
    "reduce_max_ties": ("x = np.array([[1., 3., 3.], [2., 0., 1.]], np.float32)\n  "
                        "return m.jet(lambda a: a.max(axis=1), (x,), ([x, x * x],))"),
    "cumprod_jit": ("x = np.array([0.5, 1.5, -2.0, 1.0], np.float32)\n  return m.jet("
                    "jax_jit(jnp.cumprod), (x,), ([x, x + 1, x * 0 + 1],))"),
}


@pytest.mark.jax_oracle
def test_values_match_jax():
  pytest.importorskip("jax")
  programs = {}
  for name, body in _ORACLE.items():
    body = body.replace("jax_jit(", "__import__(m.__name__.split('.')[0]).jit(")
    programs[name] = ("experimental.jet", _PRELUDE + body)
  check_against_jax_modules(programs, rtol=1e-5, atol=1e-5)
