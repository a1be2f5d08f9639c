"""Array methods whose names tracers could shadow (``var``) work on every kind of tracer."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


@pytest.mark.parametrize("transform", ["jit", "make_jaxpr", "grad", "vmap", "jvp"])
def test_var_and_std_methods_under_transformations(transform):
  x = jnp.arange(4.0)
  f = lambda x: x.var() + x.std(ddof=1)
  expected = np.var(np.arange(4.0)) + np.std(np.arange(4.0), ddof=1)
  if transform == "jit":
    np.testing.assert_allclose(hlox.jit(f)(x), expected, rtol=1e-6)
  elif transform == "make_jaxpr":
    assert "jit[name=_var" in str(hlox.make_jaxpr(f)(x))
  elif transform == "grad":
    g = hlox.grad(lambda x: x.var())(x)
    np.testing.assert_allclose(g, 2 * (np.arange(4.0) - 1.5) / 4, rtol=1e-6)
  elif transform == "vmap":
    out = hlox.vmap(lambda r: r.var())(jnp.arange(8.0).reshape(2, 4))
    np.testing.assert_allclose(out, [1.25, 1.25], rtol=1e-6)
  else:
    _, t = hlox.jvp(lambda x: x.var(), (x,), (jnp.ones(4),))
    np.testing.assert_allclose(t, 0.0, atol=1e-6)
