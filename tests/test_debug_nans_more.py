"""debug_nans: an invalid value that comes in with a jitted function's host inputs (Python
or NumPy values) is not blamed on the operations that pass it on; pmap and sharded jit
check their outputs; lax.cond and lax.switch accept JAX's older ``operand=`` keyword."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from tests.util import assert_close


def test_cond_and_switch_operand_keyword():
  f = lambda x: lax.cond(x > 0, lambda v: v * 2, lambda v: v - 1, operand=x)
  assert_close(f(jnp.float32(3.)), 6., np.float32)
  assert_close(hlox.jit(f)(jnp.float32(-3.)), -4., np.float32)
  g = lambda i: lax.switch(i, [lambda _: 1., lambda _: 2.], operand=None)
  assert_close(hlox.jit(g)(1), 2., np.float32)
  with pytest.raises(TypeError, match="no positional operands can be passed"):
    lax.cond(True, lambda v: v, lambda v: v, 1., operand=2.)


def test_nan_from_host_inputs_is_reported_as_such():
  # Without jit, arithmetic on a Python or NumPy NaN happens in Python/NumPy (unchecked), so
  # the de-optimized run blames no operation that depends on it; a NaN in a device array is
  # blamed on the first operation, as in JAX.
  f = hlox.jit(lambda x: x * 3.)
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match="the de-optimized function did not .*input"):
      f(np.nan)
    with pytest.raises(FloatingPointError, match="the de-optimized function did not"):
      f(np.array([np.nan], np.float32))
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in mul"):
      f(hlox.device_put(np.float32(np.nan)))
    # An operation that makes a NaN out of valid values, beside one that passes a NaN on, is
    # still found.
    g = hlox.jit(lambda x, y: (x * 2., jnp.log(y)))
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
      g(np.nan, -1.)
    assert_close(f(2.), 6., np.float32)


def test_pmap_and_sharded_jit_check_outputs():
  with hlox.debug_nans(True):
    f = hlox.pmap(lambda x: 0. / x)
    assert_close(f(jnp.array([1.])), [0.], np.float32)
    with pytest.raises(FloatingPointError,
                       match=r"Invalid value \(nan\) encountered in sharded computation"):
      f(jnp.array([0.]))
    mesh = hlox.sharding.Mesh(np.array(hlox.devices()[:2]), ("x",))
    p = hlox.sharding.PartitionSpec("x")
    g = hlox.jit(lambda x: 0. / x, in_shardings=p, out_shardings=p)
    with hlox.set_mesh(mesh):
      with pytest.raises(FloatingPointError, match="sharded computation"):
        g(jnp.array([0., 1.]))
  assert np.isnan(np.asarray(f(jnp.array([0.])))).all()  # checks off again
