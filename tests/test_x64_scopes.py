"""Values typed inside ``enable_x64()`` used where x64 is off: a gradient's seed, 64-bit
literals of jaxprs, custom rules, scan outputs; and ``config._read``. Against NumPy dtypes
and values."""
import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.lax.base import full_exact
from tests.util import assert_close


def test_grad_of_a_64bit_output_made_inside_enable_x64():
  def g(x):
    with hlox.enable_x64():
      return jnp.sin(jnp.array(x, jnp.float64)) * 2.
  with hlox.enable_x64(False):
    assert g(0.5).dtype == np.float64
    d = hlox.grad(g)(0.5)
    assert d.dtype == np.float32
    assert_close(d, 2 * np.cos(0.5), np.float32)


def test_scan_outputs_typed_inside_enable_x64():
  def body(carry, x):
    with hlox.enable_x64():
      y = (carry + x).astype(jnp.int64)
      z = y.astype(jnp.int32)
    return carry, (z, y)
  for disabled in (True, False):
    with hlox.disable_jit(disabled):
      carry, (zs, ys) = lax.scan(body, jnp.int32(2), jnp.arange(4))
    assert (carry.dtype, zs.dtype, ys.dtype) == (np.int32, np.int32, np.int64)
    assert_close(ys, np.arange(4) + 2, np.int64)
  assert_close(hlox.jit(lambda xs: lax.scan(body, jnp.int32(1), xs)[1][1])(jnp.arange(3)),
               np.arange(3) + 1, np.int64)


def test_full_exact_keeps_the_dtype():
  with hlox.enable_x64(False):
    x = full_exact((2,), 3, np.int64)
    assert x.dtype == np.int64 and lax.full((2,), 3, np.int64).dtype == np.int32
    assert_close(x, [3, 3], np.int64)


def test_config_read():
  with hlox.enable_x64(True):
    assert hlox.config._read("jax_enable_x64") is True
  with hlox.enable_x64(False):
    assert hlox.config._read("enable_x64") is False


def test_custom_rules_under_enable_x64_differentiated_outside():
  @hlox.custom_vjp
  def f(x):
    return x ** 2.
  f.defvjp(lambda x: (f(x), jnp.sin(x)), lambda res, t: (res * t,))

  @hlox.custom_jvp
  def h(x):
    return x ** 2.
  h.defjvp(lambda xs, ts: (h(xs[0]), ts[0] * jnp.sin(xs[0])))

  for fn in (f, h):
    def g(x):
      with hlox.enable_x64():
        return fn(jnp.array(x, jnp.float64))
    with hlox.enable_x64(False):
      assert g(5.).dtype == np.float64
      d1, d2 = hlox.grad(g)(5.), hlox.grad(hlox.grad(g))(5.)
      assert d1.dtype == d2.dtype == np.float32
      assert_close(d1, np.sin(5.), np.float32)
      assert_close(d2, np.cos(5.), np.float32)
    with hlox.enable_x64(True):
      assert hlox.grad(hlox.grad(g))(5.).dtype == np.float64


def test_64bit_literal_read_back_without_x64():
  def g(x):
    with hlox.enable_x64():
      return jnp.sin(jnp.array(x, jnp.float64)) * 2.
  with hlox.enable_x64(False):
    assert_close(hlox.grad(g)(0.5), 2 * np.cos(0.5), np.float32)
    assert_close(hlox.jit(hlox.grad(g))(0.5), 2 * np.cos(0.5), np.float32)
