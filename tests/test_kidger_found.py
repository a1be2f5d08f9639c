"""JAX behaviours that lineax, optimistix and diffrax rely on, found by running their own
test suites with ``jax`` pointing at hlox. Each test reproduces the underlying JAX behaviour
directly (the libraries themselves are not needed); the programs print the same with JAX
and with hlox."""
import pytest

from tests.util import printed_here, printed_in_jax

_PROGRAMS = {
    # lineax imports ``jax._src.ad_util.stop_gradient_p`` to give it a transpose rule.
    "ad_util_stop_gradient_p": """
import importlib
ad_util = importlib.import_module(m.__name__ + "._src.ad_util")
print(ad_util.stop_gradient_p.name, ad_util.stop_gradient_p.multiple_results)
print(m.make_jaxpr(m.lax.stop_gradient)(1.0).eqns[0].primitive is ad_util.stop_gradient_p)
""",
    # lineax splits its flat solution at ``np.cumsum`` of the leaves' sizes: for one leaf
    # that is an empty float64 array, which JAX accepts (its elements are checked one by one).
    "split_at_empty_float_indices": """
import numpy as np
x = jnp.arange(6.0)
print(jnp.split(x, np.cumsum([])), jnp.array_split(x, np.array([], np.float32)))
print(jnp.reshape(jnp.ones(()), np.array([])).shape, jnp.transpose(jnp.ones(()), np.array([])))
for bad in (np.array([2.0]), [2.0]):
  try:
    jnp.split(x, bad)
  except TypeError:
    print("TypeError")
""",
    # equinox's ``vprim`` (behind every lineax/optimistix primitive) vmaps its JVP and
    # transpose rules, whose inputs and outputs hold symbolic zeros: those are pytrees with
    # no leaves (their aval is static), so vmap and jit hand them back as they are.
    "symbolic_zeros_are_empty_pytrees": """
import importlib
ad = importlib.import_module(m.__name__ + ".interpreters.ad")
z = ad.Zero(m.ShapeDtypeStruct((2,), jnp.float32))
u = ad.UndefinedPrimal(m.ShapeDtypeStruct((), jnp.float32))
print(m.tree_util.tree_leaves((z, u, 1.0)), m.tree_util.tree_structure(z).num_leaves)
print(m.tree_util.tree_map(lambda x: x, z).aval.shape)
def f(x, t):
  return x * 2, t, ad.Zero(m.core.ShapedArray((), jnp.float32))
out = m.vmap(f, in_axes=(0, None))(jnp.arange(3.0), z)
print(out[0], type(out[1]).__name__, out[1].aval.shape, type(out[2]).__name__,
      out[2].aval.shape)
out = m.jit(f)(jnp.arange(3.0), z)
print(out[0], type(out[1]).__name__, out[1].aval.shape)
print(m.make_jaxpr(lambda x: m.vmap(f, in_axes=(0, None))(x, z)[0])(jnp.arange(3.0)))
""",
    # diffrax's tests expect ``jax._src.interpreters.ad.CustomVJPException`` (not a
    # NotImplementedError) when its backsolve adjoint closes over the differentiated model.
    "custom_vjp_closing_over_a_differentiated_value": """
import importlib
ad = importlib.import_module(m.__name__ + "._src.interpreters.ad")
def run(c):
  @m.custom_vjp
  def f(x):
    return x * c
  f.defvjp(lambda x: (x, None), lambda r, g: (g,))
  return f(1.0)
try:
  m.grad(m.jit(run))(2.0)
except ad.CustomVJPException as e:
  print(type(e).__name__, isinstance(e, NotImplementedError), "custom_vjp" in str(e))
""",
    # A materialized float0 tangent (of an integer) is a symbolic zero, so a primitive with
    # no JVP rule (equinox's ``unvmap_max``, on diffrax's integer step counters) applied to
    # it is not differentiated: at jvp's entry, out of a custom_jvp rule, out of a loop.
    "float0_tangents_are_symbolic_zeros": """
import importlib
import numpy as np
ext = importlib.import_module(m.__name__ + ".extend.core")
mlir = importlib.import_module(m.__name__ + ".interpreters.mlir")
p = ext.Primitive("int_plus_one")
p.def_impl(lambda x: x + 1)
p.def_abstract_eval(lambda x: m.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(p, mlir.lower_fun(lambda x: x + 1, multiple_results=False))
float0 = m.dtypes.float0
def f(x, n):
  return x * p.bind(n)
print(m.jvp(f, (2.0, jnp.int32(3)), (1.0, np.zeros((), float0))))
@m.custom_jvp
def g(x):
  return x, jnp.asarray(x * 0).astype(jnp.int32) + 5
@g.defjvp
def g_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return g(x), (t, np.zeros((), float0))
def h(x):
  y, n = g(x)
  return y * p.bind(n)
print(m.jvp(h, (2.0,), (1.0,)), m.grad(h)(2.0), m.jit(m.grad(h))(2.0))
def loop(x):
  def body(i, carry):
    y, n = carry
    return y * 1.5, n + 1
  y, n = m.lax.fori_loop(0, 3, body, (x, jnp.int32(0)))
  return y * p.bind(n)
print(m.grad(loop)(2.0), m.jit(m.grad(loop))(2.0), m.jvp(m.jit(loop), (2.0,), (1.0,)))
""",
    # A custom_jvp call inside a jitted function, differentiated: JAX traces the rule, so it
    # sees arrays (of the operands' types) for constant operands, not the Python numbers
    # a jaxpr's literals hold (diffrax's events: equinox tells arrays by their type).
    "custom_jvp_rule_sees_arrays_for_constants": """
import numpy as np
@m.custom_jvp
def f(x, n, b, k):
  return x
@f.defjvp
def f_jvp(p, t):
  print([(isinstance(v, m.Array), str(v.dtype), m.typeof(v).weak_type) for v in p[1:]])
  return p[0], t[0]
g = lambda x: f(x, jnp.array(0), jnp.array(True), np.int32(3))
print(m.grad(m.jit(g))(1.0), m.jvp(m.jit(g), (1.0,), (2.0,)))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  assert printed_here(_PROGRAMS[name]) == printed_in_jax(_PROGRAMS)[name]
