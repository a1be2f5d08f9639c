"""JAX behaviours the equinox library relies on, found by running equinox's own tests with
``jax`` pointing at hlox. Each test reproduces the underlying JAX behaviour directly
(equinox itself is not needed); the programs print the same with JAX and with hlox."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.extend.core import find_top_trace
from hlox.interpreters import ad

from tests.util import printed_here, printed_in_jax


def test_trace_main_tells_a_jvps_own_tracers():
  # equinox's filter_jvp keeps the outputs that are JVP tracers of *its* jvp:
  # ``isinstance(x, JVPTracer) and x._trace.main is find_top_trace(args).main``.
  seen = {}

  def inner(y):
    seen["inner"] = find_top_trace([y]).main
    out = y * 2.0
    seen["own"] = isinstance(out, ad.JVPTracer) and out._trace.main is seen["inner"]
    return out

  def outer(x):
    seen["outer"] = find_top_trace([x]).main
    _, t = hlox.jvp(inner, (x * 3.0,), (1.0,))
    seen["outer_is_not_own"] = not (isinstance(t, ad.JVPTracer)
                                    and t._trace.main is seen["inner"])
    return t

  _, t = hlox.jvp(outer, (1.0,), (1.0,))
  assert float(t) == 0.0
  assert seen["own"] and seen["outer_is_not_own"]
  assert seen["inner"] is not seen["outer"]


def test_custom_vjp_bwd_gets_python_scalar_residuals_back():
  # equinox's filter_custom_vjp passes its ``perturbed`` flags (Python bools) as residuals
  # and its bwd checks ``perturbed is True``; array residuals still come back as arrays.
  got = []

  @hlox.custom_vjp
  def f(x, y):
    return x * y

  def fwd(x, y):
    return f(x, y), (True, 3, jnp.asarray(y), jnp.asarray(y) * 2.0)

  def bwd(res, ct):
    got.append(res)
    return ct * res[2], ct * res[3]

  f.defvjp(fwd, bwd)
  assert float(hlox.grad(f)(3.0, 4.0)) == 4.0
  flag, count, y, y2 = got[0]
  assert flag is True and type(count) is int and count == 3
  assert isinstance(y, hlox.Array) and isinstance(y2, hlox.Array) and float(y2) == 8.0


def test_jvp_tangents_of_numpy_functions_are_arrays():
  # JAX jits jnp functions, so under eager jvp their outputs come out of one call: arrays,
  # even where the tangent is just the input's (``x + 1``). equinox's filter_jvp checks.
  primal, tangent = hlox.jvp(lambda x: x + 1, (1.0,), (2.0,))
  assert isinstance(tangent, hlox.Array) and float(tangent) == 2.0
  assert tangent.dtype == np.float32 and tangent.weak_type
  _, t = hlox.jvp(lambda x: jnp.reshape(x, (1,)) + np.float32(0),
                  (np.float32(1.0),), (np.float32(3.0),))
  assert isinstance(t, hlox.Array) and t.shape == (1,)
  # lax primitives are not calls: a tangent passes through as it was (as in JAX).
  _, t = hlox.jvp(lambda x: lax.add(x, 1.0), (1.0,), (2.0,))
  assert type(t) is float


class _Odd:
  """A callable whose ``__name__`` is no string (as an equinox Module can have: JAX's
  transformations take it, but for ``jit``, which hlox takes too)."""
  __name__ = 42
  __doc__ = None

  def __call__(self, x):
    return jnp.sin(x) * 2.0


def test_transformations_accept_callables_with_odd_names():
  f = _Odd()
  x = jnp.arange(3.0)
  expected = np.sin(np.arange(3.0)) * 2.0
  np.testing.assert_allclose(hlox.vmap(f)(x), expected, rtol=1e-6)
  np.testing.assert_allclose(hlox.jit(f)(x), expected, rtol=1e-6)
  np.testing.assert_allclose(hlox.grad(lambda x: f(x).sum())(x), 2 * np.cos(np.arange(3.0)),
                             rtol=1e-6)
  np.testing.assert_allclose(hlox.jacfwd(f)(x), np.diag(2 * np.cos(np.arange(3.0))),
                             rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(hlox.checkpoint(f)(x), expected, rtol=1e-6)


def test_axis_primitive_batchers_takes_rules_of_jaxs_older_signature():
  # equinox registers ``rule(axis_size, axis_name, trace_type, vals, dims, **params)``.
  from hlox.extend.core import Primitive
  from hlox.interpreters import batching, xla
  prim = Primitive("eqx_found_double")
  prim.def_impl(lambda x, *, k: x * k)
  prim.def_abstract_eval(lambda x, *, k: x)
  xla.register_lowering(prim, xla.lower_fun(lambda x, *, k: x * k, multiple_results=False))
  seen = []

  def rule(axis_size, axis_name, trace_type, vals, dims, *, k):
    seen.append((axis_size, axis_name, trace_type))
    return prim.bind(*vals, k=k), dims[0]

  batching.axis_primitive_batchers[prim] = rule
  try:
    out = hlox.vmap(lambda x: prim.bind(x, k=3.0), axis_name="b")(jnp.arange(4.0))
  finally:
    del batching.axis_primitive_batchers[prim]
  np.testing.assert_allclose(out, 3.0 * np.arange(4.0))
  assert seen == [(4, "b", None)]
  assert prim not in batching.fancy_primitive_batchers


def test_jax_lib_version():
  # equinox's tests gate a workaround on ``jax.lib.__version__``.
  import jaxlib
  assert hlox.lib.__version__ == jaxlib.__version__


_PROGRAMS = {
    "custom_vjp_residual_types": """
@m.custom_vjp
def f(x, y):
  return x * y
def fwd(x, y):
  return f(x, y), (True, False, 7, y, jnp.float32(3), jnp.ones(2))
def bwd(res, ct):
  print([r is True for r in res[:2]], res[2] == 7, [isinstance(r, m.Array) for r in res[4:]])
  return ct * res[3], ct * res[4]
f.defvjp(fwd, bwd)
print(m.grad(f)(3.0, 4.0), m.grad(f, argnums=1)(3.0, 4.0))
print(m.jit(m.grad(f))(3.0, 4.0))
@m.custom_vjp
def g(x):
  return x
def g_fwd(x):
  print(type(x.perturbed).__name__, x.perturbed)
  return x.value, (x.perturbed, x.value)
def g_bwd(res, ct):
  print(res[0] is True)
  return (ct * 2,)
g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
print(m.grad(g)(1.0))
""",
    "jvp_tangent_types": """
import numpy as np
fs = [lambda x: x + 1, lambda x: 1 - x, lambda x: jnp.add(x, 0.0), lambda x: x * 2,
      lambda x: jnp.reshape(x, (1,)), lambda x: x.astype(jnp.float32),
      lambda x: m.lax.add(x, 1.0), lambda x: x, lambda x: m.jit(lambda y: y)(x)]
for f in fs:
  for t in (2.0, np.float32(2.0)):
    p, tt = m.jvp(f, (1.0 if type(t) is float else np.float32(1.0),), (t,))
    print(type(p).__name__ == 'ArrayImpl', isinstance(tt, m.Array), float(np.sum(tt)))
""",
    # equinox's filter_jit catches the runtime error a failing callback gives and reads the
    # original exception's name in its text (``_EquinoxRuntimeError: ...``).
    "callback_errors": """
import importlib, logging
logging.disable(logging.CRITICAL)  # (JAX also logs the failure)
io_callback = importlib.import_module(m.__name__ + ".experimental").io_callback
def cb(x):
  raise ValueError("boom")
s = m.ShapeDtypeStruct((), jnp.float32)
for name, f in [("pure", lambda x: m.pure_callback(cb, s, x)),
                ("pure_jit", m.jit(lambda x: m.pure_callback(cb, s, x) + 1)),
                ("io", lambda x: io_callback(cb, s, x)),
                ("debug", lambda x: m.debug.callback(cb, x)),
                ("debug_jit", m.jit(lambda x: (m.debug.callback(cb, x), x)[1]))]:
  try:
    f(jnp.float32(1.0))
    m.effects_barrier()
    print(name, "no error")
  except Exception as e:
    print(name, type(e).__name__, isinstance(e, RuntimeError), "ValueError: boom" in str(e))
logging.disable(logging.NOTSET)
""",
    # equinox's checkpointed while loop: a custom_vjp fwd reads its operands' shapes, also
    # when an operand is a constant of a jitted function being differentiated.
    "custom_vjp_fwd_operands_under_jit": """
@m.custom_vjp
def f(i, x):
  return x * 2
def fwd(i, x):
  print("fwd", hasattr(i, "shape") and i.shape, hasattr(x, "shape") and x.shape)
  return f(i, x), None
f.defvjp(fwd, lambda r, g: (None, g * 2))
run = m.jit(lambda x: f(jnp.array(0), x) + f(jnp.zeros(2), x).sum())
print(m.linearize(run, 1.0)[0], m.grad(run)(1.0))
""",
    "odd_name_callable": """
class Odd:
  __name__ = 42
  def __call__(self, x):
    return x * 2
f = Odd()
print(m.vmap(f)(jnp.arange(3.0)), m.grad(f)(1.0), m.jacrev(f)(1.0))
print(m.value_and_grad(f)(1.0), m.hessian(f)(1.0), m.checkpoint(f)(2.0))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  assert printed_here(_PROGRAMS[name]) == printed_in_jax(_PROGRAMS)[name]
