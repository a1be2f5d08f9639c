"""NumPy's signatures where JAX's test compares them (``like=`` on fromfile/fromiter,
``out=`` on isneginf/isposinf), and ``arange``'s jaxprs as JAX traces them."""
import inspect

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

from tests.util import printed_here, printed_in_jax


@pytest.mark.parametrize("name", ["fromfile", "fromiter", "isneginf", "isposinf",
                                  "issubdtype"])
def test_parameters_as_numpy(name):
  np_params = list(inspect.signature(getattr(np, name)).parameters) \
      if not isinstance(getattr(np, name), np.ufunc) else ["x", "out"]
  assert list(inspect.signature(getattr(jnp, name)).parameters) == np_params


def test_unsupported_values_raise_as_jax():
  x = jnp.array([-np.inf, 1.0, np.inf])
  np.testing.assert_array_equal(jnp.isneginf(x, out=None), [True, False, False])
  np.testing.assert_array_equal(jnp.isposinf(x), [False, False, True])
  with pytest.raises(NotImplementedError, match="The 'out' argument to isneginf/isposinf"):
    jnp.isposinf(x, out=np.empty(3, bool))
  with pytest.raises(NotImplementedError, match="'like' argument"):
    jnp.fromiter(iter([1.0]), float, like=np.ones(1))
  np.testing.assert_array_equal(jnp.fromiter(iter([1.0, 2.0]), np.float32, like=None),
                                [1.0, 2.0])


def _prims(f):
  return [e.primitive.name for e in hlox.make_jaxpr(f)().jaxpr.eqns]


def test_arange_equations():
  assert _prims(lambda: jnp.arange(5)) == ["iota"]
  assert _prims(lambda: jnp.arange(1, 5)) == ["iota", "add"]
  assert _prims(lambda: jnp.arange(0, 5, 1)) == ["iota", "mul", "add"]
  np.testing.assert_array_equal(jnp.arange(1, 5), np.arange(1, 5))
  np.testing.assert_array_equal(jnp.arange(2, 11, 3), np.arange(2, 11, 3))
  np.testing.assert_allclose(jnp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25))
  np.testing.assert_array_equal(jnp.arange(10, 0, -3, dtype="uint8"), [10, 7, 4, 1])


@pytest.mark.jax_oracle
def test_arange_jaxprs_and_values_match_jax():
  pytest.importorskip("jax")
  src = ("for a, k in [((1, 5), {}), ((1, 5, 2), {}), ((0., 1., .25), {}), ((-3, 3), {}), "
         "((5, 1, -1), {}), ((3000, 3010), {'dtype': 'float16'}), "
         "((0, 3, .5), {'dtype': 'bfloat16'})]:\n"
         "  print(str(m.make_jaxpr(lambda: jnp.arange(*a, **k))()).replace('] \\n', ']\\n'))\n"
         "  print(jnp.arange(*a, **k))\n")
  assert printed_here(src) == printed_in_jax({"arange": src})["arange"]
