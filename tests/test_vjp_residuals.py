"""The pullback ``vjp`` returns: its residuals split into the caller's own argument
values (``args_res``, which may be dropped and restored) and computed ones
(``opaque_residuals``), and its linear ``jaxpr``."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax


def _f2(x, w):
  return 2.0 * ((1.0 * x) @ w)


def test_args_res_keeps_argument_and_can_be_restored():
  x, w = jnp.ones((3, 4)), jnp.arange(16.0).reshape(4, 4)
  y, f_vjp = hlox.vjp(_f2, x, w)
  # x @ w's transpose in x needs w (the very array passed), not x.
  assert len(f_vjp.args_res) == 2 and f_vjp.args_res[1] is w
  f_vjp.args_res[1] = None  # dropped, e.g. to save memory, then restored
  f_vjp.args_res[1] = w
  ct = jnp.ones_like(y)
  x_ct, w_ct = f_vjp(ct)
  np.testing.assert_allclose(x_ct, 2.0 * np.ones((3, 4)) @ np.asarray(w).T)
  np.testing.assert_allclose(w_ct, 2.0 * np.ones((3, 4)).T @ np.ones((3, 4)))
  with pytest.raises(ValueError, match="unexpected JAX type"):
    f_vjp(jnp.ones((2, 4)))


def test_unrestored_argument_residual_is_an_error():
  x, w = jnp.ones((3, 4)), jnp.ones((4, 4))
  y, f_vjp = hlox.vjp(_f2, x, w)
  f_vjp.args_res = [f_vjp.args_res[0], None]
  with pytest.raises(ValueError, match="args_res"):
    f_vjp(jnp.ones_like(y))


def test_opaque_residuals_hold_computed_values():
  _, f_vjp = hlox.vjp(jnp.sin, 3.0)
  res, = f_vjp.opaque_residuals
  np.testing.assert_allclose(res, np.cos(np.float32(3.0)), rtol=1e-6)
  _, f_vjp = hlox.vjp(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x), 3.0)
  assert f_vjp.opaque_residuals
  np.testing.assert_allclose(f_vjp(1.0)[0], np.cos(np.float32(3.0)), rtol=1e-6)


def test_numpy_argument_residual_is_converted_and_opaque():
  def cumprod(x):
    return lax.scan(lambda s, x: (x * s, s), jnp.ones((2, 3), jnp.float32), x)
  x = np.random.RandomState(0).randn(4, 2, 3).astype(np.float32)
  x_arr = jnp.asarray(x)
  _, f_vjp = hlox.vjp(cumprod, x_arr)
  ext_res, = f_vjp.args_res  # a jax.Array argument is saved as it is
  assert ext_res is x_arr
  _, f_vjp = hlox.vjp(cumprod, x)
  assert isinstance(f_vjp.opaque_residuals[0], hlox.Array)


def test_pullback_through_jit_with_dropped_residuals():
  x, w = jnp.ones((3, 4)), jnp.ones((4, 4))

  @hlox.jit
  def fwd(x, w):
    y, f_vjp = hlox.vjp(_f2, x, w)
    f_vjp.args_res = [None, None]
    return y, f_vjp

  @hlox.jit
  def bwd(f_vjp, x, w, ct):
    f_vjp.args_res = [x, w]  # every argument given back, needed or not
    return f_vjp(ct)

  y, f_vjp = fwd(x, w)
  assert hlox.tree_util.tree_leaves(f_vjp.args_res) == []
  x_ct, w_ct = bwd(f_vjp, x, w, jnp.ones_like(y))
  np.testing.assert_allclose(x_ct, np.full((3, 4), 8.0))
  np.testing.assert_allclose(w_ct, np.full((4, 4), 6.0))


def test_pullback_jaxpr_is_the_linear_program():
  _, f_vjp = hlox.vjp(lambda x: jnp.sin(jnp.sin(x)), jnp.arange(2.0))
  text = str(f_vjp.jaxpr)
  assert " mul " in text and " sin " not in text
  assert f_vjp.out_nzs == (True,)


def test_with_refs_dont_want_skips_that_cotangent():
  x = y = jnp.arange(3.0)
  z, f_vjp = hlox.vjp(lambda x, y: x * y, x, y)
  f_vjp = f_vjp.with_refs(hlox.ad.DontWant(), hlox.ad.GradValue())
  ones = jnp.ones_like(z)
  g = hlox.jit(lambda: f_vjp(ones))
  x_ct, y_ct = g()
  assert x_ct == hlox.ad.DidntWant()
  np.testing.assert_allclose(y_ct, np.arange(3.0))
  # only y's cotangent is computed: one multiplication
  assert [e.primitive.name for e in g.trace().jaxpr.eqns] == ["mul"]
