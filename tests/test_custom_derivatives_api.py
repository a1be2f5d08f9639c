"""``hlox.custom_derivatives``' public API as JAX's behaves: ``nondiff_argnames``, keyword
resolution, symbolic zeros (``SymbolicZero``, ``CustomVJPPrimal``, ``zero_from_primal``),
rule-output checks with JAX's messages, closures over vmap tracers, deep copies."""
from __future__ import annotations

import copy
from functools import partial

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox import custom_derivatives as cd
from hlox.core.dtypes import float0
from tests.util import printed_here, printed_in_jax


def test_nondiff_argnames_join_nondiff_argnums():
  @partial(hlox.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("g",))
  def app(f, g, x):
    return f(x) + g(x)

  def fwd(f, g, x):
    return app(f, g, x), jnp.cos(x)

  def bwd(f, g, cos_x, ct):
    return (cos_x * ct,)

  app.defvjp(fwd, bwd)
  assert app.nondiff_argnums == (0, 1)
  double = lambda x: 2 * x
  value, grad = hlox.value_and_grad(lambda x: app(double, double, x))(1.0)
  np.testing.assert_allclose([value, grad], [4.0, np.cos(1.0)], rtol=1e-6)

  @partial(hlox.custom_jvp, nondiff_argnames=("f",))
  def apply(f, x):
    return f(x)

  apply.defjvp(lambda f, primals, tangents: (apply(f, *primals), 3 * tangents[0]))
  out, t = hlox.jvp(lambda x: apply(double, x), (1.0,), (1.0,))
  assert (float(out), float(t)) == (2.0, 3.0)


def test_keyword_arguments_resolve_or_raise_jax_errors():
  @hlox.custom_jvp
  def f(x, y=2.0, *, z=None):
    return x * y

  f.defjvp(lambda primals, tangents: (f(*primals), primals[1] * tangents[0]))
  assert float(f(3.0)) == 6.0  # the default is passed on, as a positional argument
  assert float(hlox.grad(f)(3.0, y=4.0)) == 4.0
  with pytest.raises(TypeError, match=r"custom_jvp-decorated function f could not be "
                     r"resolved.*\nmissing a required argument: 'x'"):
    f()
  with pytest.raises(TypeError, match=r"\nThe following keyword arguments could not be "
                     r"resolved to positions: z"):
    f(1.0, z=3.0)


def test_symbolic_zero_tangents_reach_the_jvp_rule_under_jit_and_vmap():
  seen = []

  @hlox.custom_jvp
  def f(a, x):
    return a * x

  @partial(f.defjvp, symbolic_zeros=True)
  def f_jvp(primals, tangents):
    a, x = primals
    ta, tx = tangents
    seen.append((type(ta).__name__, ta.shape))
    # The zero is returned as it came: the output tangent stays symbolic.
    return f(a, x), (a * tx if type(ta) is cd.SymbolicZero else ta)

  a = jnp.array([2.0, 3.0])
  for wrap in (lambda g: g, hlox.jit):
    seen.clear()
    out, t = wrap(lambda x, tx: hlox.jvp(lambda x: f(a, x), (x,), (tx,)))(
        jnp.ones(2), jnp.array([1.0, 10.0]))
    np.testing.assert_allclose(t, [2.0, 30.0])
    assert seen == [("SymbolicZero", (2,))]
  # jvp of vmap: the rule runs batched, and still sees a per-example symbolic zero.
  seen.clear()
  _, t = hlox.jvp(hlox.vmap(lambda x: f(a, x)), (jnp.ones((3, 2)),), (jnp.ones((3, 2)),))
  np.testing.assert_allclose(t, np.tile([2.0, 3.0], (3, 1)))
  assert seen == [("SymbolicZero", (2,))]


def test_zero_from_primal_and_symbolic_zero_outputs():
  @hlox.custom_jvp
  def f(x, n):
    return x, n

  f.defjvp(lambda p, t: (p, (2.0 * t[0], cd.zero_from_primal(p[1]))))
  (x, n), (tx, tn) = hlox.jvp(f, (2.0, 3), (1.0, np.zeros((), float0)))
  assert float(tx) == 2.0 and tn.dtype == float0
  assert repr(cd.zero_from_primal(1.0, symbolic_zeros=True)) == "SymbolicZero"

  @hlox.custom_jvp
  def g(x):
    return x + 1

  # A rule may return a symbolic zero even without ``symbolic_zeros=True``.
  g.defjvp(lambda p, t: (g(*p), cd.zero_from_primal(p[0], symbolic_zeros=True)))
  _, t = hlox.jvp(hlox.vmap(hlox.jit(g)), (jnp.arange(3.0),), (jnp.ones(3),))
  np.testing.assert_array_equal(t, np.zeros(3))


def test_symbolic_zeros_custom_vjp_sees_perturbed_flags_and_zero_cotangents():
  log = []

  @hlox.custom_vjp
  def f(x, y):
    return x * y, y

  def fwd(x, y):
    assert isinstance(x, cd.CustomVJPPrimal)
    log.append(("fwd", x.perturbed, y.perturbed))
    x, y = cd.custom_vjp_primal_tree_values((x, y))
    return f(x, y), (x, y)

  def bwd(res, cts):
    x, y = res
    ct_xy, ct_y = cts
    log.append(("bwd", type(ct_y).__name__))
    return ct_xy * y, None

  f.defvjp(fwd, bwd, symbolic_zeros=True)
  grad = hlox.grad(lambda x: f(x, 3.0)[0])(2.0)
  assert float(grad) == 3.0
  assert log == [("fwd", True, False), ("bwd", "SymbolicZero")]
  log.clear()
  grads = hlox.jit(hlox.vmap(hlox.grad(lambda x: f(x, 3.0)[0])))(jnp.ones(2))
  np.testing.assert_allclose(grads, [3.0, 3.0])
  log.clear()
  grads = hlox.grad(lambda x: hlox.vmap(lambda x: f(x, 3.0)[0])(x).sum())(jnp.ones(2))
  np.testing.assert_allclose(grads, [3.0, 3.0])
  assert log == [("fwd", True, False), ("bwd", "SymbolicZero")]


def test_symbolic_zero_cotangent_of_the_wrong_shape_is_a_value_error():
  @hlox.custom_vjp
  def f(x, y, z):
    return x, y, z

  f.defvjp(lambda x, y, z: (f(x.value, y.value, z.value), None),
           lambda _, g: (g[1], g[0], g[2]), symbolic_zeros=True)
  with pytest.raises(ValueError, match=r"at output\[0\] the SymbolicZero had shape/dtype "
                     r"float32\[2\].*Consider just returning a None"):
    hlox.grad(lambda x, y, z: f(x, y, z)[2].sum())(jnp.ones(1), jnp.ones(2), jnp.ones(3))


def test_rule_output_errors_have_jax_messages():
  @hlox.custom_jvp
  def f(x):
    return x

  @f.defjvp
  def pair_jvp(primals, tangents):
    return (primals[0], primals[0]), (tangents[0], tangents[0])

  scan_f = lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]
  with pytest.raises(TypeError, match=r"Custom JVP rule pair_jvp for function f must produce "
                     r"a pair .*structure:\n    \(float32\[\], float32\[\]\)\nwhile the "
                     r"custom_jvp-decorated function f had output container/pytree "
                     r"structure:\n    float32\[\]\."):
    hlox.jvp(scan_f, (jnp.float32(1.0),), (jnp.float32(1.0),))

  @f.defjvp
  def single_jvp(primals, tangents):
    return tangents[0]

  with pytest.raises(TypeError, match=r"Custom JVP rule single_jvp for function f must "
                     r"produce a pair \(list or tuple of length two\) representing"):
    hlox.jvp(f, (2.0,), (1.0,))

  @hlox.custom_vjp
  def g(x, y):
    return x

  g.defvjp(lambda x, y: (x, None), lambda _, ct: (ct, jnp.zeros(3)))
  with pytest.raises(ValueError, match=r"at output\[1\] the bwd rule attached to g "
                     r"\(<lambda>\) produced an output of type float32\[3\] corresponding to "
                     r"an input of type float32\[4\], so the shapes do not match"):
    hlox.grad(lambda x, y: g(x, y * y).sum(), 1)(jnp.ones(3), jnp.ones(4))
  with _option("disable_bwd_checks", True):
    hlox.grad(lambda x, y: g(x, y).sum(), 1)(jnp.ones(3), jnp.ones(4))  # not checked
  g.defvjp(lambda x, y: (x, None), lambda _, ct: 2.0 * ct)
  with pytest.raises(TypeError, match=r"Custom VJP bwd rule <lambda> for function g must "
                     r"produce .* must produce a tuple"):
    hlox.grad(g)(1.0, 2.0)


class _option:
  """An option set inside a block (hlox.config.update, restored after)."""

  def __init__(self, name, value):
    self.name, self.value = name, value

  def __enter__(self):
    self.old = getattr(hlox.config, self.name)
    hlox.config.update(self.name, self.value)

  def __exit__(self, *exc):
    hlox.config.update(self.name, self.old)


def test_jvp_rule_may_close_over_the_vmap_tracer_it_is_batched_by():
  def h(z):
    def f(x):
      @hlox.custom_jvp
      def g(y):
        return x * y

      g.defjvp(lambda p, t: (x * p[0], x * t[0]))
      return g(z)
    return hlox.vmap(f)(jnp.arange(3.0))

  primals, tangents = hlox.jvp(h, (jnp.float32(1.0),), (jnp.float32(2.0),))
  np.testing.assert_allclose(primals, [0.0, 1.0, 2.0])
  np.testing.assert_allclose(tangents, [0.0, 2.0, 4.0])


def test_deepcopy_of_a_custom_jvp_around_jit():
  relu = copy.deepcopy(hlox.nn.relu)
  assert float(hlox.grad(relu)(1.0)) == 1.0 and float(relu(-2.0)) == 0.0


def test_closure_convert_checks_the_argument_structure():
  _, vjp = hlox.vjp(lambda x, z: z * x, 2.0, 3.0)
  pure, aux = hlox.closure_convert(vjp, 2.0)
  assert [float(v) for v in pure(1.0, *aux)] == [3.0, 2.0]
  with pytest.raises(TypeError, match="The inputs to the closure produced by closure_convert"):
    pure(2.0, aux)


def test_collectives_inside_custom_rules_stay_unbatched_under_a_named_vmap():
  @hlox.custom_jvp
  def total(x):
    return lax.psum(x, "i")

  total.defjvp(lambda p, t: (lax.psum(p[0], "i"), lax.psum(t[0], "i")))

  @hlox.custom_vjp
  def total2(x):
    return lax.psum(x, "i")

  total2.defvjp(lambda x: (total2(x), None), lambda _, g: (g,))
  for fn in (total, total2):
    out = hlox.vmap(lambda _, x: fn(x), axis_name="i", in_axes=(0, None),
                    out_axes=None)(jnp.arange(4.0), 2.0)
    assert float(out) == 8.0
  _, t = hlox.jvp(hlox.vmap(total, axis_name="i"), (jnp.ones(3),), (jnp.arange(3.0),))
  np.testing.assert_allclose(t, [3.0, 3.0, 3.0])
  grads = hlox.grad(lambda x: hlox.vmap(total2, axis_name="i")(x).sum())(jnp.ones(3))
  np.testing.assert_allclose(grads, [3.0, 3.0, 3.0])


def test_rule_batching_an_output_the_function_does_not():
  @hlox.custom_jvp
  def second(x, y):
    return y

  second.defjvp(lambda p, t: (p[1], t[0] + t[1]))
  f = hlox.vmap(second, in_axes=(0, None))
  # Run while the vmapped call is bound: the tangent is batched, the primal broadcast.
  out, t = hlox.jvp(f, (jnp.ones(3), 2.0), (jnp.arange(3.0), 1.0))
  np.testing.assert_allclose(out, [2.0, 2.0, 2.0])
  np.testing.assert_allclose(t, [1.0, 2.0, 3.0])


def test_nondiff_tracers_and_forward_mode_of_custom_vjp_are_errors():
  @partial(hlox.custom_vjp, nondiff_argnums=(0,))
  def f(xs, y):
    return xs[0] * y

  f.defvjp(lambda xs, y: (f(xs, y), jnp.cos(y)), lambda xs, c, g: (c * g,))
  assert float(f((2.0,), 3.0)) == 6.0
  with pytest.raises(hlox.errors.UnexpectedTracerError, match="nondiff_argnums"):
    hlox.jit(lambda x, y: f((x,), y))(2.0, 3.0)
  with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a "
                     "custom_vjp function"):
    hlox.jvp(hlox.jit(lambda y: f((2.0,), y)), (3.0,), (1.0,))


def test_ensure_compile_time_eval_runs_the_function_on_concrete_values():
  @hlox.custom_jvp
  def f(x):
    assert x == 0.0  # a concrete value: compared in Python
    return x + 1.0

  f.defjvp(lambda p, t: (f(*p), t[0]))

  @hlox.jit
  def g():
    with hlox.ensure_compile_time_eval():
      return f(0.0)

  assert float(g()) == 1.0


def _bwd_runs_on_zero_cotangents(jit):
  # As JAX, a live custom_vjp's bwd runs even when every cotangent reaching it is zero: its
  # result need not be (flax's fp8 layers return updated statistics as "gradients" that
  # way). A function whose outputs no live equation reads is not transposed.
  calls = []

  @hlox.custom_vjp
  def f(x, h):
    return x * 2, h + 1

  def f_fwd(x, h):
    return (x * 2, h + 1), (h + 1,)

  def f_bwd(res, cts):
    calls.append([np.asarray(ct).tolist() for ct in cts] if not jit else len(cts))
    return None, res[0] * 10

  f.defvjp(f_fwd, f_bwd)

  @hlox.custom_vjp
  def g(x, q, s):
    return x * 3

  g.defvjp(lambda x, q, s: (x * 3, None), lambda res, ct: (ct * 3, None, None))

  def used(x, h):
    q, s = f(x, h)
    return g(x, q, s).sum()

  def unused(x, h):
    y, _ = f(x, h)
    return lax.stop_gradient(y).sum() + x.sum()

  grad = lambda fn: hlox.jit(hlox.grad(fn, (0, 1))) if jit else hlox.grad(fn, (0, 1))
  dx, dh = grad(used)(jnp.ones(2), jnp.array([1.0, 2.0]))
  np.testing.assert_allclose(dx, [3.0, 3.0])
  np.testing.assert_allclose(dh, [20.0, 30.0])
  assert calls == ([2] if jit else [[[0.0, 0.0], [0.0, 0.0]]])
  dx, dh = grad(unused)(jnp.ones(2), jnp.ones(2))
  np.testing.assert_allclose(dx, [1.0, 1.0])
  np.testing.assert_allclose(dh, [0.0, 0.0])
  assert len(calls) == 1


def test_bwd_runs_when_every_cotangent_is_zero():
  _bwd_runs_on_zero_cotangents(jit=False)
  _bwd_runs_on_zero_cotangents(jit=True)


# --- JAX's custom_vjp3 flag: closures over traced values are errors ------------------------

@pytest.fixture
def custom_vjp3():
  hlox.config.update("jax_custom_vjp3", True)
  try:
    yield
  finally:
    hlox.config.update("jax_custom_vjp3", False)


def _closing_over(x):
  @hlox.custom_vjp
  def f(y):
    return x * y
  f.defvjp(lambda y: (f(y), jnp.cos(y)), lambda cos_y, g: (cos_y * g,))
  return f


_CLOSURES = {
    "vmap": lambda: hlox.vmap(lambda x: _closing_over(x)(3.))(jnp.arange(3.)),
    "grad": lambda: hlox.grad(lambda x: _closing_over(x)(3.))(2.),
    "jit": lambda: hlox.jit(lambda x: _closing_over(x)(3.))(2.),
    "grad_in_vmap": lambda: hlox.vmap(hlox.grad(lambda x: _closing_over(x)(x)))(
        jnp.arange(3.)),
    "vmap_in_grad": lambda: hlox.grad(
        lambda z: hlox.vmap(lambda x: _closing_over(x)(z))(jnp.arange(3.)).sum())(2.),
}


@pytest.mark.parametrize("case", sorted(_CLOSURES))
def test_custom_vjp3_refuses_closed_over_tracers(case, custom_vjp3):
  with pytest.raises(hlox.errors.UnexpectedTracerError,
                     match="custom_vjp functions can't close over Tracers") as e:
    _CLOSURES[case]()
  assert "Rewrite <function _closing_over.<locals>.f" in str(e.value)


def test_custom_vjp3_leaves_other_calls_alone(custom_vjp3):
  # Concrete closures, and traced values passed as arguments, are fine.
  np.testing.assert_allclose(_closing_over(2.)(3.), 6.)
  np.testing.assert_allclose(hlox.grad(lambda y: _closing_over(2.)(y))(3.), np.cos(3.),
                             rtol=1e-6)

  @hlox.custom_vjp
  def mul(x, y):
    return x * y
  mul.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (r[1] * g, r[0] * g))
  got = hlox.vmap(hlox.grad(lambda x: mul(x, 3.)))(jnp.arange(3.))
  np.testing.assert_allclose(got, [3., 3., 3.])


def test_without_custom_vjp3_closures_over_tracers_are_differentiated():
  got = hlox.vmap(lambda x: _closing_over(x)(3.))(jnp.arange(3.))
  np.testing.assert_allclose(got, 3. * np.arange(3.))


def test_custom_vjp3_names_the_fwd_output_whose_type_differs(custom_vjp3):
  @hlox.custom_vjp
  def f(x):
    return {"a": x, "b": x}
  f.defvjp(lambda x: ({"a": x, "b": jnp.zeros((3,))}, None), lambda _, g: (g["a"],))
  scanned = lambda x: lax.scan(lambda c, _: (f(c)["a"], None), x, None, length=1)[0]
  with pytest.raises(TypeError, match=r"^at \['b'\], got fwd output type float32\[3\] "
                     r"which doesn't match primal output type float32\[\](?:\n|$)"):
    hlox.grad(scanned)(jnp.float32(1.))


_VJP3_ORACLE = """
import re
def outer(x):
  @m.custom_vjp
  def f(y):
    return x * y
  f.defvjp(lambda y: (f(y), jnp.cos(y)), lambda c, g: (c * g,))
  return f
for name, run in [("eager", lambda: outer(2.)(3.)),
                  ("vmap", lambda: m.vmap(lambda x: outer(x)(3.))(jnp.arange(3.))),
                  ("grad", lambda: m.grad(lambda x: outer(x)(3.))(2.)),
                  ("jit", lambda: m.jit(lambda x: outer(x)(3.))(2.))]:
  try:
    print(name, run())
  except Exception as e:
    text = re.sub(r"0x[0-9a-f]+", "ADDR", str(e))
    print(name, type(e).__name__, re.sub(r"closed over an? \\w+ of", "closed over a T of", text))
"""


@pytest.mark.jax_oracle
def test_custom_vjp3_closures_match_jax(custom_vjp3):
  pytest.importorskip("jax")
  prelude = "m.config.update('jax_custom_vjp3', True)\n"
  assert printed_here(_VJP3_ORACLE, prelude) == printed_in_jax(
      {"vjp3": _VJP3_ORACLE}, prelude)["vjp3"]


def test_unhashable_nondiff_arguments_are_not_cached():
  # A list as a nondiff argument: traced every call (no trace-cache entry), in the primal,
  # under grad, jit and vmap (custom_api_test's test_nondiff_argnums_unhashable).
  @partial(hlox.custom_vjp, nondiff_argnums=(0,))
  def f(lst, x):
    return lst[0] * jnp.sin(x)

  def f_fwd(lst, x):
    return f(lst, x), jnp.cos(x)

  def f_bwd(lst, cos_x, g):
    return (lst[0] * cos_x * g,)

  f.defvjp(f_fwd, f_bwd)
  lst = [2.0]
  np.testing.assert_allclose(f(lst, 3.0), 2 * np.sin(3.0), rtol=1e-6)
  np.testing.assert_allclose(hlox.grad(f, argnums=1)(lst, 3.0), 2 * np.cos(3.0), rtol=1e-6)
  lst[0] = 5.0  # not a stale cached trace
  np.testing.assert_allclose(hlox.jit(lambda x: hlox.grad(f, argnums=1)(lst, x))(3.0),
                             5 * np.cos(3.0), rtol=1e-6)
  np.testing.assert_allclose(hlox.vmap(hlox.grad(lambda x: f(lst, x)))(jnp.arange(3.0)),
                             5 * np.cos(np.arange(3.0)), rtol=1e-6)
