"""``x.at[i].set(y)`` with a ``y`` whose dtype does not promote to ``x``'s (JAX's
FutureWarning, and its error under strict promotion), and ``lcm``'s wrapping on overflow
(NumPy's: magnitudes first, then the product)."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core.dtypes import TypePromotionError


def _set(x_dtype, y):
  x = jnp.arange(5, dtype=x_dtype)
  out = x.at[0].set(y)
  assert out.dtype == x.dtype
  return out


@pytest.mark.parametrize("x_dtype,y", [(np.int32, np.int16(3)), (np.float32, np.int32(3)),
                                       (np.complex64, np.float32(3)), (np.int32, 3),
                                       (np.float32, 3.0)])
def test_safe_updates_do_not_warn(x_dtype, y):
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    np.testing.assert_array_equal(_set(x_dtype, jnp.asarray(y) if not isinstance(
        y, (int, float)) else y), np.array([3, 1, 2, 3, 4], x_dtype))


@pytest.mark.parametrize("x_dtype,y_dtype", [(np.int16, np.int32), (np.int32, np.float32),
                                             (np.float32, np.complex64)])
def test_unsafe_update_warns_then_casts(x_dtype, y_dtype):
  with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
    out = _set(x_dtype, jnp.asarray(2, y_dtype))
  np.testing.assert_array_equal(out, np.array([2, 1, 2, 3, 4], x_dtype))


def test_strict_promotion_refuses_other_strong_dtypes():
  with hlox.numpy_dtype_promotion("strict"):
    with pytest.raises(TypePromotionError, match="no available implicit dtype promotion"):
      _set(np.int32, jnp.asarray(1, np.int16))
    _set(np.float32, 1.0)  # a weakly typed value still promotes


def test_lcm_wraps_as_numpy():
  rng = np.random.RandomState(0)
  a = rng.randint(-128, 128, size=300).astype(np.int8)
  b = rng.randint(-128, 128, size=300).astype(np.int8)
  np.testing.assert_array_equal(jnp.lcm(a, b), np.lcm(a, b))
  assert int(jnp.lcm(np.int8(-16), np.int8(11))) == int(np.lcm(np.int8(-16), np.int8(11)))
  a, b = rng.randint(-1000, 1000, size=100), rng.randint(-1000, 1000, size=100)
  np.testing.assert_array_equal(jnp.lcm(a, b), np.lcm(a, b))
  assert int(jnp.lcm(0, 0)) == 0
