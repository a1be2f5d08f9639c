"""What numpyro (probabilistic programming on JAX) relies on, found by running numpyro's own
test suite with ``jax`` aliased to hlox. Each program is written against ``m`` (``jax`` in the
oracle, ``hlox`` here) and must print what it prints with JAX; numpyro itself is not needed."""
import importlib

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
import importlib
prims = importlib.import_module(m.__name__ + ".extend.core.primitives")
src_core = importlib.import_module(m.__name__ + "._src.core")
"""

_PROGRAMS = {
    # numpyro's provenance tracking keys its jaxpr-interpreting rules on the plain call
    # primitives (JAX's own ``bind`` of them is internal; hlox's is tested below).
    "call_primitives": """
print(prims.call_p, prims.closed_call_p, prims.call_p.multiple_results,
      prims.closed_call_p.multiple_results, prims.call_p is not prims.jit_p)
""",
    # numpyro's ``cached_by`` caches only when no transformation is in effect.
    "trace_state_clean": """
seen = []
print(src_core.trace_state_clean())
m.jit(lambda x: seen.append(src_core.trace_state_clean()) or x)(1.0)
m.vmap(lambda x: seen.append(src_core.trace_state_clean()) or x)(jnp.ones(2))
m.grad(lambda x: seen.append(src_core.trace_state_clean()) or x)(1.0)
print(seen, src_core.trace_state_clean())
""",
    # numpyro's fori_collect uses lax.cond's old five-argument form.
    "cond_old_form": """
f = lambda p, a, b: m.lax.cond(p, a, lambda x: x * 2, b, lambda x: x - 1)
print(f(True, 3.0, 10.0), f(False, 3.0, 10.0), m.jit(f)(False, 3.0, 10.0))
print(m.vmap(f)(jnp.array([True, False]), jnp.ones(2), jnp.zeros(2)))
try:
  m.lax.cond(True, 1.0, 2.0)
except TypeError as e:
  print("TypeError")
""",
    # numpyro's tests tune check_grads tolerances to JAX's random directions.
    "check_grads_directions": """
tu = importlib.import_module(m.__name__ + ".test_util")
seen = []
f = lambda x, y: jnp.sin(x) * y
def f_jvp(primals, tangents):
  seen.append(tangents)
  return m.jvp(f, primals, tangents)
tu.check_jvp(f, f_jvp, (np.array([0.1, 0.2, 0.3], np.float32), np.float32(2.0)))
def f_vjp(*primals):
  out, pullback = m.vjp(lambda x: jnp.sin(x), *primals)
  return out, lambda ct: seen.append(ct) or pullback(ct)
tu.check_vjp(lambda x: jnp.sin(x), f_vjp, (np.array([0.5, 1.5], np.float32),))
print([np.round(np.asarray(t), 5).tolist() for t in seen[0]], np.round(np.asarray(seen[1]), 5))
""",
    # numpyro's support checks reshape NumPy masks with jnp.reshape under jit and need
    # concrete values back.
    "reshape_keeps_numpy": """
x = np.arange(6.0, dtype=np.float32)
print(type(jnp.reshape(x, (2, 3))).__name__, jnp.reshape(x, (3, -1)).shape)
m.jit(lambda: print(type(jnp.reshape(x, (-1,))).__name__, jnp.reshape(x, (2, 3), order="F")) or 0)()
print(type(jnp.reshape(np.float32(2), (1,))).__name__, type(jnp.reshape([1, 2], (2, 1))).__name__)
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  assert printed_here(_PROGRAMS[name], _PRELUDE) == expected[name]


def test_closed_call_runs_and_differentiates():
  prims = importlib.import_module("hlox.extend.core.primitives")
  cj = hlox.make_jaxpr(lambda x: jnp.sin(x) * 3.0)(1.0)
  (out,) = prims.closed_call_p.bind(jnp.float32(0.5), call_jaxpr=cj)
  np.testing.assert_allclose(out, np.sin(0.5) * 3.0, rtol=1e-6)
  g = hlox.grad(lambda x: prims.closed_call_p.bind(x, call_jaxpr=cj)[0])(0.5)
  np.testing.assert_allclose(g, np.cos(0.5) * 3.0, rtol=1e-6)


def test_cond_old_form_picks_each_branch_operand():
  f = lambda p: lax.cond(p, 3.0, lambda x: x * 2, 10.0, lambda x: x - 1)
  assert float(f(True)) == 6.0 and float(f(False)) == 9.0
  assert float(hlox.jit(f)(False)) == 9.0


def test_call_primitive_traces_its_function():
  prims = importlib.import_module("hlox.extend.core.primitives")
  f = lambda x: prims.call_p.bind(lambda y: [jnp.cos(y) * 2], x)[0]
  xs = np.arange(3.0, dtype=np.float32)
  np.testing.assert_allclose(hlox.vmap(f)(xs), np.cos(xs) * 2, rtol=1e-6)
  np.testing.assert_allclose(hlox.grad(f)(1.0), -2 * np.sin(1.0), rtol=1e-6)


def test_check_jvp_directions_are_seeded_legacy_normals():
  seen = []

  def f_jvp(primals, tangents):
    seen.append(tangents)
    return hlox.jvp(jnp.sin, primals, tangents)
  hlox.test_util.check_jvp(jnp.sin, f_jvp, (np.zeros(4, np.float32),))
  np.testing.assert_allclose(seen[0][0], np.random.RandomState(0).randn(4).astype(np.float32))


def test_check_grads_logdiffexp_third_order():
  # numpyro's log(exp(a) - exp(b)) (Maechler's split on a - b), checked to order 3 at
  # float32 with the tolerance numpyro's tests use under JAX.
  def logdiffexp(a, b):
    d = b - a
    log1mexp = jnp.where(d > -0.6931472, jnp.log(-jnp.expm1(d)), jnp.log1p(-jnp.exp(d)))
    return a + log1mexp
  for a, b in [(-20.0, -35.0), (-0.32523, -0.34), (20.53, 19.035), (8.032, 7.032)]:
    hlox.test_util.check_grads(logdiffexp, (a, b), order=3, rtol=0.01)
