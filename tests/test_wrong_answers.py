"""Regression tests for issue 17's wrong answers and accepted invalid input, each at its
cause: the x64 inexact-promotion rule, lax's equal-dtype rule, reduce_window's SAME padding
with dilation, median/cumsum shape rules, float->int conversion, error classes."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.errors import DeletedArrayError

INTS = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32"]
INEXACT_FNS = ["exp", "sin", "sqrt", "deg2rad", "exp2", "log10", "arcsinh", "mean", "std",
               "median"]


@pytest.mark.parametrize("x64", [False, True])
def test_small_integers_become_float32_also_in_x64(x64):
  with enable_x64(x64):
    for name in ["exp", "deg2rad", "arcsinh", "mean", "std", "median"]:
      for dt in ["bool", "int8", "uint16", "int32", "uint32"]:
        x = np.array([1, 0, 1], dt)
        out = getattr(jnp, name)(x)
        assert out.dtype == np.float32, (name, dt, out.dtype)
        np.testing.assert_allclose(np.asarray(out), getattr(np, name)(x.astype(np.float64)),
                                   rtol=1e-6)
      # Binary: the promoted integer type decides (int16 + uint8 -> int16 -> float32).
      out = jnp.copysign(np.ones(2, "int16"), np.ones(2, "uint8"))
      assert out.dtype == np.float32
      assert jnp.fmod(np.ones(2, bool), np.ones(2, bool)).dtype == np.int32
      assert jnp.searchsorted(np.arange(4, dtype="int8"), np.int8(2)).dtype == np.int32
      assert jnp.quantile(np.arange(4, dtype="int8"), 0.5).dtype == np.float32
      assert jnp.rint(np.ones(2, "int8")).dtype == (np.float64 if x64 else np.float32)
    if x64:
      assert jnp.exp(np.ones(2, "int64")).dtype == np.float64
      assert jnp.exp(1).dtype == np.float64  # a weak int is int64 in x64


def test_lax_binary_ops_require_equal_dtypes():
  u16 = np.ones(3, np.uint16)
  for f, a, b in [(lax.lt, 5, u16), (lax.add, 1.0, np.ones(3, np.int32)),
                  (lax.add, np.ones(3, np.int32), 1.5), (lax.add, np.ones(3, np.float32), 1),
                  (lax.pad, np.ones(3, np.float32), 0)]:
    with pytest.raises(TypeError):
      f(a, b) if f is not lax.pad else lax.pad(a, b, [(1, 1, 0)])
  np.testing.assert_allclose(lax.add(np.ones(3, np.float32), 1.0), [2, 2, 2])
  with enable_x64():
    with pytest.raises(TypeError):  # a Python float is float64 in x64
      lax.add(np.ones(3, np.float32), 1.0)
    # ... and hlox's own rules still work on float32 in x64 (they build typed constants).
    g = hlox.grad(lambda x: jnp.sum(jnp.tanh(x) + jnp.sqrt(x) + jnp.arctan(x)))(
        np.ones(3, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 1 - np.tanh(1.0) ** 2 + 0.5 + 0.5, rtol=1e-5)
  # hlox.numpy keeps promoting.
  assert (jnp.ones(3, jnp.int8) + 1.5).dtype == np.float32


def test_reduce_init_values_must_match_unless_identity():
  x = np.arange(4, dtype=np.float32)
  np.testing.assert_allclose(lax.reduce_window(x, 0, lax.add, (2,), (1,), "VALID"), [1, 3, 5])
  with pytest.raises(TypeError, match="reduce_window"):
    lax.reduce_window(x, 1, lax.add, (2,), (1,), "VALID")  # not the identity: int32 init
  with pytest.raises(TypeError, match="reduce"):
    lax.reduce(x, np.int32(1), lax.add, (0,))


def test_reduce_window_same_padding_with_dilation():
  x = np.arange(10.0, dtype=np.float32).reshape(5, 2)
  out = lax.reduce_window(x, -np.inf, lax.max, (2, 1), (1, 1), "SAME", base_dilation=(2, 1),
                          window_dilation=(2, 1))
  # SAME pads the undilated length 5 for the dilated window 3: (1, 1); the dilated base has
  # 9 rows, padded 11, so 11 - 3 + 1 = 9 windows.
  explicit = lax.reduce_window(x, -np.inf, lax.max, (2, 1), (1, 1), ((1, 1), (0, 0)),
                               base_dilation=(2, 1), window_dilation=(2, 1))
  assert out.shape == (9, 2)
  np.testing.assert_array_equal(out, explicit)


def test_median_quantile_and_cumsum_shape_rules():
  assert jnp.median(np.float32(3), keepdims=True).shape == (1,)
  assert jnp.quantile(np.float32(3), 0.5, keepdims=True).shape == (1,)
  assert jnp.median(np.ones((2, 3)), keepdims=True).shape == (1, 1)
  with pytest.raises(ValueError, match="complex"):
    jnp.median(np.ones(3, np.complex64))
  with pytest.raises(TypeError, match="median"):
    jnp.median(np.ones((0, 3), np.float32), axis=0)
  for f in (jnp.cumsum, jnp.cumprod):
    with pytest.raises(ValueError, match="out of bounds"):
      f(np.float32(1), axis=0)
    assert f(np.float32(2)).shape == (1,)


def test_float_to_int_conversion_saturates_as_xla():
  x = np.array([-1.5, -1.0, 0.5, 3e9, 5e9, 1e20, np.inf, -np.inf, np.nan, 200.7], np.float32)
  for dt in ("uint32", "uint8", "int32", "int8", "int16"):
    info = np.iinfo(dt)
    wide = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=info.max, neginf=info.min)
    want = np.trunc(np.clip(wide, info.min, info.max)).astype(dt)
    host = lax.convert_element_type(x, dt)            # a NumPy constant, on the host
    device = lax.convert_element_type(hlox.device_put(x), dt)
    jitted = hlox.jit(lambda v: lax.convert_element_type(v, dt))(x)
    for got in (host, device, jitted):
      np.testing.assert_array_equal(np.asarray(got), want, err_msg=dt)


def test_invalid_static_arguments_and_error_classes():
  with pytest.raises(TypeError, match="top_k"):
    lax.top_k(np.arange(5.0, dtype=np.float32), 2.0)
  with pytest.raises(TypeError, match="negative"):
    jnp.ones(-1)
  assert issubclass(DeletedArrayError, RuntimeError)
  assert issubclass(DeletedArrayError, ValueError)
  x = jnp.ones(3)
  x.delete()
  for use in (lambda: x + 1, lambda: np.asarray(x)):
    with pytest.raises(RuntimeError, match="deleted"):
      use()


@pytest.mark.jax_oracle
def test_against_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  from jax import lax as jlax
  old = jax.config.jax_enable_x64
  try:
    for x64 in (False, True):
      jax.config.update("jax_enable_x64", x64)
      with enable_x64(x64):
        for name in INEXACT_FNS + ["square", "rint", "cbrt", "log1p"]:
          for dt in INTS + (["int64", "uint64"] if x64 else []):
            # The dtype rule, without an XLA compile per case on either side (other tests
            # check that eager results carry the dtype that eval_shape gives).
            x = np.array([1, 0, 1], dt)
            assert hlox.eval_shape(getattr(jnp, name), x).dtype == \
                jax.eval_shape(getattr(jjnp, name), x).dtype, (x64, name, dt)
        a, v = np.arange(4, dtype="uint16"), np.ones(2, "uint16")
        assert jnp.searchsorted(a, v).dtype == jjnp.searchsorted(a, v).dtype
        for f, a, b in [("lt", 5, np.ones(3, np.uint16)), ("add", np.ones(3, np.float32), 1.0),
                        ("add", np.ones(3, np.int32), 1), ("mul", np.ones(3, np.int8), 2)]:
          want = got = None
          try:
            want = getattr(jlax, f)(a, b).dtype
          except TypeError:
            want = TypeError
          try:
            got = getattr(lax, f)(a, b).dtype
          except TypeError:
            got = TypeError
          assert got == want, (x64, f, a, b)
    jax.config.update("jax_enable_x64", False)
    x = np.arange(7.0, dtype=np.float32)
    kw = dict(base_dilation=(3,), window_dilation=(2,))
    want = jlax.reduce_window(x, 0.0, jlax.add, (3,), (2,), "SAME", **kw)
    got = lax.reduce_window(x, 0.0, lax.add, (3,), (2,), "SAME", **kw)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    y = np.array([-1.5, 3e9, 5e9, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(lax.convert_element_type(y, np.uint32),
                                  np.asarray(jlax.convert_element_type(y, np.uint32)))
  finally:
    jax.config.update("jax_enable_x64", old)
