"""Dtype canonicalization and JAX's promotion lattice with weak types."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core import dtypes


@pytest.mark.parametrize("a, b, expected", [
    (np.int8, np.uint8, np.int16),
    (np.int32, np.float16, np.float16),
    (np.uint8, np.int32, np.int32),
    (np.float16, dtypes.bfloat16, np.float32),
    (np.bool_, np.int8, np.int8),
    (np.float32, np.complex64, np.complex64),
    (np.int16, np.uint16, np.int32),
])
def test_promote_types_matches_jax_lattice(a, b, expected):
  assert dtypes.promote_types(a, b) == np.dtype(expected)
  assert dtypes.promote_types(b, a) == np.dtype(expected)


@pytest.mark.parametrize("pairs, expected", [
    ([(np.float32, False), (np.float32, True)], (np.float32, False)),
    ([(np.int32, False), (np.float32, True)], (np.float32, True)),
    ([(np.float16, False), (np.float32, True)], (np.float16, False)),
    ([(np.int8, False), (np.int32, True)], (np.int8, False)),
    ([(np.int32, True), (np.float32, True)], (np.float32, True)),
    ([(dtypes.bfloat16, False), (np.float32, False)], (np.float32, False)),
    ([(np.bool_, False), (np.int32, True)], (np.int32, True)),
])
def test_weak_type_promotion(pairs, expected):
  dtype, weak = dtypes.result_type_with_weak(pairs)
  assert (dtype, weak) == (np.dtype(expected[0]), expected[1])


def test_float8_has_no_implicit_promotion():
  with pytest.raises(dtypes.TypePromotionError, match="8-bit"):
    dtypes.promote_types(dtypes.float8_e4m3fn, np.float32)


@pytest.mark.parametrize("dtype,bits", [(dtypes.float8_e3m4, 8), (dtypes.float8_e4m3, 8),
                                        (dtypes.float8_e8m0fnu, 8), (dtypes.float4_e2m1fn, 4)])
def test_narrow_floats_promote_only_with_themselves_and_weak_scalars(dtype, bits):
  x = jnp.array([1.0, 2.0], dtype=dtype)
  assert x.dtype == dtype and (x * 2.0).dtype == dtype
  np.testing.assert_array_equal(np.asarray(x).astype(np.float32), [1.0, 2.0])
  with pytest.raises(dtypes.TypePromotionError, match=f"{bits}-bit floats do not support"):
    x + jnp.ones(2, np.float32)


def test_promote_types_reads_python_types_as_weak():
  assert dtypes.promote_types(complex, np.complex64) == np.complex64
  assert dtypes.promote_types(int, np.int8) == np.int8
  assert dtypes.promote_types(float, np.float16) == np.float16
  assert dtypes.promote_types(np.int8, np.uint8) == np.int16  # dtypes stay strong
  with hlox.numpy_dtype_promotion("strict"):
    assert dtypes.promote_types(complex, np.complex64) == np.complex64


def test_canonicalize_without_x64():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  assert dtypes.canonicalize_dtype(np.int64) == np.int32
  x = hlox.device_put(np.arange(3, dtype=np.float64))
  assert x.dtype == np.float32


def test_x64_switch_changes_defaults():
  from hlox.config import enable_x64
  with enable_x64():
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    x = hlox.device_put(np.arange(3, dtype=np.float64))
    assert x.dtype == np.float64
    y = x * 2.0
    assert y.dtype == np.float64
    np.testing.assert_allclose(np.asarray(y), [0., 2., 4.])
    assert hlox.device_put(1).dtype == np.int64
  assert hlox.device_put(1).dtype == np.int32


def test_operator_dtypes_follow_weak_types():
  f32 = hlox.device_put(np.ones(3, np.float32))
  i32 = hlox.device_put(np.ones(3, np.int32))
  assert (f32 * 2.0).dtype == np.float32
  assert (f32 * 2).dtype == np.float32
  assert (i32 * 2).dtype == np.int32
  assert (i32 + 1.5).dtype == np.float32
  bf = hlox.device_put(np.ones(3, dtypes.bfloat16))
  assert (bf + f32).dtype == np.float32
  assert (bf * 2.0).dtype == dtypes.bfloat16
  weak = hlox.device_put(2.0)
  assert weak.weak_type and weak.dtype == np.float32


def test_issubdtype_with_abstract_types_and_ml_dtypes():
  import ml_dtypes
  from hlox import dtypes as hdtypes
  for dt, category in [(ml_dtypes.bfloat16, np.floating), (ml_dtypes.float8_e4m3fn, np.floating),
                       (ml_dtypes.int4, np.signedinteger), (ml_dtypes.uint4, np.unsignedinteger)]:
    for d in (dt, np.dtype(dt), str(np.dtype(dt))):
      assert hdtypes.issubdtype(d, d) and hdtypes.issubdtype(d, str(np.dtype(dt)))
      assert hdtypes.issubdtype(d, category) and hdtypes.issubdtype(d, np.number)
      assert hdtypes.issubdtype(d, np.generic)
      assert not hdtypes.issubdtype(d, object) and not hdtypes.issubdtype(d, np.float64)
      assert not hdtypes.issubdtype(np.generic, d)
  assert hdtypes.issubdtype(np.floating, np.inexact)
  assert not hdtypes.issubdtype(np.inexact, np.floating)
  assert hdtypes.issubdtype(np.int32, np.integer) and not hdtypes.issubdtype(np.int32, np.floating)


def test_result_type_none_is_the_default_float():
  from hlox import dtypes as hdtypes
  assert hdtypes.result_type(None, return_weak_type_flag=True) == (np.dtype("float32"), False)
  assert hdtypes.result_type(None, np.float16) == np.dtype("float32")
  assert hdtypes.result_type(None, np.int32) == np.dtype("float32")


@pytest.mark.parametrize("a, b, x32, x64", [
    (np.int64, np.float64, np.float64, np.float64),  # not canonicalized to float32
    (int, float, np.float64, np.float64),  # two Python types: that type's NumPy dtype
    (int, int, np.int64, np.int64),
    (complex, int, np.complex128, np.complex128),
    (np.int64, np.int32, np.int64, np.int64),
    (np.uint64, np.int64, np.float64, np.float64),
    (int, np.int64, np.int64, np.int64),
    (np.int32, np.uint32, np.int32, np.int64),  # the lattice is the x64 mode's
    (np.int8, np.uint32, np.int32, np.int64),
    (int, np.int8, np.int8, np.int8),
])
def test_jnp_promote_types_is_not_canonicalized(a, b, x32, x64):
  # Values from JAX 0.10.2's jnp.promote_types (dtypes_test's testSafeToCast relies on it).
  assert jnp.promote_types(a, b) == np.dtype(x32)
  assert jnp.promote_types(b, a) == np.dtype(x32)
  with hlox.enable_x64():
    assert jnp.promote_types(a, b) == np.dtype(x64)
