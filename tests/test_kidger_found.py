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
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  assert printed_here(_PROGRAMS[name]) == printed_in_jax(_PROGRAMS)[name]
