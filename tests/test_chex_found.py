"""JAX behaviours the chex library relies on, found by running chex's own tests with ``jax``
pointing at hlox. Each test reproduces the underlying JAX behaviour directly (chex itself is
not needed); the programs print the same with JAX and with hlox."""
import importlib
import inspect

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import test_util

from tests.util import printed_here, printed_in_jax


def test_private_modules_are_attributes_of_the_private_package():
  # chex's set_n_cpu_devices reads ``jax._src.xla_bridge._backends`` after ``import jax``.
  src = hlox._src
  assert src is importlib.import_module("hlox._src")
  assert isinstance(src.xla_bridge._backends, dict)
  assert not hasattr(src, "no_such_module")


def test_jitted_function_has_its_functions_signature():
  # chex's fake pmap reads ``inspect.signature(jit(f), follow_wrapped=False)`` to turn
  # keyword arguments into positional ones.
  def f(x, y=2, *, z: int = 3) -> float:
    return x

  jitted = hlox.jit(f)
  sig = inspect.signature(jitted, follow_wrapped=False)
  assert sig == inspect.signature(f) and str(sig) == "(x, y=2, *, z: int = 3) -> float"
  assert sig.bind(1, y=4).args == (1, 4)
  with hlox.disable_jit():
    assert str(inspect.signature(hlox.jit(f), follow_wrapped=False)) == str(sig)
  assert str(sig.replace(return_annotation=inspect.Signature.empty)) == "(x, y=2, *, z: int = 3)"


def test_check_grads_draws_jaxs_directions():
  # Finite differences in float32 are only approximately right, and how well depends on the
  # direction: chex's numerical-gradient tests pass with JAX's directions.
  seen = []

  def f_jvp(primals, tangents):
    seen.append(tangents)
    return hlox.jvp(jnp.sin, primals, tangents)

  test_util.check_jvp(jnp.sin, f_jvp, (np.zeros(3, np.float32),))
  expected = np.random.RandomState(0).randn(3).astype(np.float32)
  np.testing.assert_array_equal(seen[0][0], expected)


_PROGRAMS = {
    # chex's chexify formats its failed checks' arguments: arrays print as Arrays.
    "checkify_payload_arrays": """
import importlib
checkify = importlib.import_module(m.__name__ + ".experimental.checkify")
def f(x):
  checkify.check(jnp.all(x > 0), "bad {t} {y}", t={'b': x[1]}, y=x)
  return x
for g in (f, m.jit(f)):
  err, _ = checkify.checkify(g)(jnp.array([1., -1.]))
  print(err.get())
err, _ = m.vmap(checkify.checkify(f))(jnp.array([[1., -1.], [-2., 3.]]))
print(err.get())
""",
    # chex's assert_numerical_grads on a stiff float32 function: passes along JAX's directions.
    "check_grads_stiff": """
def f(lr, x):
  g = lambda y: 2 * (y - 1.0)
  for _ in range(10):
    x1 = x - lr * g(x) + 100 * lr ** 2
    x2 = x - lr * g(x) - 100 * lr ** 2
    x = m.lax.select((x > 3.).any(), x1, x2 + lr)
  return jnp.sum((x - 1.0) ** 2)
import importlib
test_util = importlib.import_module(m.__name__ + ".test_util")
key = m.random.PRNGKey(24)
for _ in range(3):
  key, k1, k2 = m.random.split(key, 3)
  args = (m.random.uniform(k1, (1,)), m.random.uniform(k2, (1,)))
  try:
    test_util.check_grads(f, args, order=1, atol=0.01)
    print("ok")
  except AssertionError as e:
    print("fails", str(e).splitlines()[1:3])
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  assert printed_here(_PROGRAMS[name]) == printed_in_jax(_PROGRAMS)[name]
