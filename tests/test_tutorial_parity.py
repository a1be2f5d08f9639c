"""What JAX's documentation pages show, compared with JAX itself: error texts that name the
public API (``jax.jit``, ``jax.custom_jvp``), the errors of Jacobians of pytrees whose
constructor rejects None, and results that must agree with JAX's to the last bit (complex
sine and cosine, exp2, cubes, jitted Jacobians)."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax

# Each program prints its results; values as exact float bits (``tolist`` of float64 copies).
PROGRAMS = {
    "jit_non_array_argument": """
try:
  m.jit(lambda x: x)("a string")
except TypeError as e:
  print(str(e).splitlines()[-1])
""",
    "pure_callback_has_no_jvp": """
def f(x):
  return m.pure_callback(np.sin, m.ShapeDtypeStruct((), np.float32), x)
m.grad(f)(np.float32(1.))
""",
    "debug_nans_reruns_deoptimized": """
m.config.update("jax_debug_nans", True)
try:
  m.jit(lambda x: jnp.log(-x))(np.float32(5.))
finally:
  m.config.update("jax_debug_nans", False)
""",
    "traceback_note": """
try:
  m.jit(lambda x: x.reshape(7))(np.ones(3))
except TypeError as e:
  print(e.__notes__)
""",
    "asarray_none": "jnp.asarray(None)",
    "jacobian_of_pytree_rejecting_none": """
class Box:
  def __init__(self, a):
    self.a = jnp.asarray(a)
m.tree_util.register_pytree_node(Box, lambda b: ((b.a,), None), lambda _, c: Box(*c))
try:
  m.jacfwd(lambda b: b)(Box(jnp.arange(3.)))
except ValueError as e:
  print("jacfwd:", e)
m.jacobian(lambda b: b)(Box(jnp.arange(3.)))
""",
    "complex_sin_cos": """
z = (np.linspace(-4, 4, 40) + 1j * np.linspace(3, -3, 40)).astype(np.complex64)
z[:4] = [0j, 2j, -20j, 1.5]
for f in (m.lax.sin, m.lax.cos, m.jit(m.lax.sin), m.jit(m.lax.cos)):
  r = np.asarray(f(z))
  print(r.real.astype(np.float64).tolist(), r.imag.astype(np.float64).tolist())
""",
    "exp2_and_cube": """
x = np.linspace(-7, 7, 57).astype(np.float32)
z = (x + 1j * x[::-1]).astype(np.complex64)
print(np.asarray(m.lax.exp2(x)).astype(np.float64).tolist())
print(np.asarray(m.jit(jnp.exp2)(z)).astype(np.complex128).tolist())
print(np.asarray(m.lax.integer_pow(z, 3)).astype(np.complex128).tolist())
""",
    "jitted_hessian": """
def sum_logistic(x):
  return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))
h = m.jit(m.jacfwd(m.jacrev(sum_logistic)))(jnp.arange(3.))
print(np.asarray(h).astype(np.float64).tolist())
""",
    "holomorphic_grad_of_cholesky": """
A = jnp.array([[5., 2.+3j, 5j], [2.-3j, 7., 1.+7j], [-5j, 1.-7j, 12.]])
def f(X):
  L = jnp.linalg.cholesky(X)
  return jnp.sum((L - jnp.sin(L))**2)
print(np.asarray(m.grad(f, holomorphic=True)(A)).astype(np.complex128).tolist())
""",
    "norm_logpdf_bits": """
x = np.linspace(-9, 9, 61).astype(np.float32)
for f in (m.scipy.stats.norm.logpdf, m.scipy.stats.norm.pdf):
  print(np.asarray(f(x, 0.3, 1.7)).astype(np.float64).tolist())
  print(np.asarray(m.jit(f)(x, 0., 10.)).astype(np.float64).tolist())
print(m.scipy.stats.norm.logpdf(1.5), m.scipy.stats.norm.logpdf(np.float32(2.)))
""",
    "jaxpr_of_array_of_scalars": """
print(m.make_jaxpr(lambda xs: jnp.sum(jnp.array(xs)))(list(range(4))))
print(m.make_jaxpr(lambda a, b: jnp.array([[a, b], [b, a]]))(1., 2.))
""",
    "reshape_to_traced_size": """
for g in (lambda x: x.reshape(jnp.array(x.shape).prod()),
          lambda x: jnp.reshape(x, jnp.array(x.shape).prod()),
          lambda x: x.reshape((jnp.array(x.shape).prod(),))):
  try:
    m.jit(g)(jnp.ones((2, 3)))
  except TypeError as e:
    print(e)
print(jnp.ones((2, 3)).reshape(np.int32(6)).shape, jnp.ones(6).reshape(jnp.array(3), 2).shape)
""",
    "residuals_of_nested_checkpoints": """
import importlib
print_saved_residuals = importlib.import_module(m.__name__ + ".ad_checkpoint").print_saved_residuals
def rc(funs):
  if len(funs) == 1:
    return funs[0]
  if len(funs) == 2:
    f1, f2 = funs
    return lambda x: f1(f2(x))
  f1, f2 = rc(funs[:len(funs) // 2]), rc(funs[len(funs) // 2:])
  return lambda x: f1(m.checkpoint(f2)(x))
for n in (4, 8, 16):
  print_saved_residuals(rc([jnp.sin] * n), 3.)
""",
    "committed_argument_in_another_layout": """
import importlib
L = importlib.import_module(m.__name__ + ".experimental.layout")
duck = m.ShapeDtypeStruct((8, 16), np.float32)
exe = m.jit(lambda x, y: (x[0], y[:, 0]), in_shardings=L.Format(L.Layout.AUTO),
            out_shardings=L.Format(L.Layout.AUTO)).trace(duck, duck).lower().compile()
dev = m.devices()[0]
col = m.device_put(np.ones((8, 16), np.float32), L.Format(L.Layout(major_to_minor=(1, 0)),
                                                         m.sharding.SingleDeviceSharding(dev)))
print(col.format.layout.major_to_minor, [f.layout.major_to_minor for f in exe.input_formats[0]])
print([r.shape for r in exe(jnp.ones((8, 16)), m.device_put(np.ones((8, 16), np.float32), dev))])
try:
  exe(jnp.ones((8, 16)), col)
except ValueError as e:
  print(str(e).replace("tiling=()", "tiling=None"))
""",
    "random_namespace": """
import importlib
r = importlib.import_module(m.__name__ + ".random")
print([x for x in sorted(dir(r)) if callable(getattr(r, x))])
""",
}


@pytest.fixture(scope="module")
def jax_printed():
  pytest.importorskip("jax")
  return printed_in_jax(PROGRAMS)


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_prints_as_jax(name, jax_printed):
  assert printed_here(PROGRAMS[name]) == jax_printed[name]


def test_messages_name_jax_api():
  with pytest.raises(TypeError, match=r"static_argnums or static_argnames parameters of "
                                      r"jax\.jit\."):
    hlox.jit(lambda x: x)("a string")
  with pytest.raises(ValueError, match="None is not a valid value for jnp.array"):
    jnp.array(None)


def test_jacrev_rebuilds_custom_nodes_from_none():
  seen = []

  class Box:
    def __init__(self, a):
      seen.append(a)
      self.a = a

  hlox.tree_util.register_pytree_node(Box, lambda b: ((b.a,), None), lambda _, c: Box(*c))
  x = Box(jnp.arange(2.))
  seen.clear()
  jac = hlox.jacrev(lambda b: b.a * 2)(x)
  assert seen[0] is None  # the checks' results, rebuilt into a Box (as JAX does)
  np.testing.assert_array_equal(jac.a, 2 * np.eye(2))


def test_complex_sin_cos_match_formula():
  z = np.array([0.5 + 2j, -1.5 - 0.25j, 3j, 1e-3 + 1e-3j], np.complex64)
  np.testing.assert_allclose(np.asarray(hlox.lax.sin(z)), np.sin(z.astype(np.complex128)),
                             rtol=2e-6)
  np.testing.assert_allclose(np.asarray(hlox.lax.cos(z)), np.cos(z.astype(np.complex128)),
                             rtol=2e-6)
  # A zero real part: an exact zero real (imaginary) part, even where cosh overflows.
  big = np.array([100j], np.complex64)
  assert np.asarray(hlox.lax.sin(big)).real[0] == 0
  assert np.asarray(hlox.lax.cos(np.array([0j], np.complex64))).imag[0] == 0
