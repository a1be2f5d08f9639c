"""int4/uint4 in lax: the operations JAX refuses on narrow integers raise its TypeError; the
basic arithmetic on them works (checked against int8)."""
import numpy as np
import pytest

import hlox.numpy as jnp
from hlox import lax


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
def test_abs_refuses_narrow_ints(dtype):
  with pytest.raises(TypeError, match=f"abs does not accept dtype {dtype}"):
    lax.abs(lax.iota(dtype, 3))


def test_abs_int4_message_as_jax():
  with pytest.raises(TypeError, match=r"abs does not accept dtype int4\. Support for "
                                      "narrow-width integers is platform-dependent"):
    lax.abs(lax.iota("int4", 3))


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
@pytest.mark.parametrize("name", ["neg", "bitwise_not", "sign"])
def test_unary_ops_on_narrow_ints(name, dtype):
  x = jnp.array([0, 1, 3], dtype=dtype)
  out = getattr(lax, name)(x)
  expected = getattr(lax, name)(x.astype("int8")).astype(dtype)
  assert out.dtype == np.dtype(dtype)
  np.testing.assert_array_equal(np.asarray(out).astype(np.int8),
                                np.asarray(expected).astype(np.int8))


def test_abs_of_wider_ints_still_works():
  np.testing.assert_array_equal(lax.abs(jnp.array([-2, 3], "int8")), [2, 3])
