"""Integers narrower than a byte (int2, uint2, int4, uint4: ml_dtypes' types, as JAX has
them): arrays, arithmetic that wraps around, iota, promotion (with weak ints only), host
transfers and host callbacks taking and returning them."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

from util import check_against_jax_modules

SUBBYTE = ["int2", "uint2", "int4", "uint4"]


@pytest.mark.parametrize("dtype", SUBBYTE)
def test_arrays_arithmetic_and_iota(dtype):
  n = 2 ** ml_dtypes.iinfo(dtype).bits
  ref = np.arange(n, dtype=dtype)  # every value of the type, wrapping as NumPy does
  x = jnp.arange(n, dtype=dtype)
  assert x.dtype == np.dtype(dtype) and np.array_equal(np.asarray(x), ref)
  assert np.array_equal(np.asarray(lax.iota(dtype, n)), ref)
  y = hlox.jit(lambda a: a * 3 + 1)(x)
  assert y.dtype == np.dtype(dtype)
  assert np.array_equal(np.asarray(y), ref * np.asarray(3, dtype) + np.asarray(1, dtype))
  assert np.array_equal(np.asarray(hlox.device_put(ref)), ref)
  assert np.array_equal(np.asarray(x.astype(np.int32)), ref.astype(np.int32))
  short = {"int2": "i2", "uint2": "u2", "int4": "i4", "uint4": "u4"}[dtype]
  assert f"a:{short}[{n}]" in str(hlox.make_jaxpr(lambda a: a + 1)(x))


@pytest.mark.parametrize("dtype", SUBBYTE)
def test_host_callbacks_take_and_return_them(dtype):
  x = np.arange(8, dtype=dtype)
  echo = hlox.jit(lambda v: hlox.pure_callback(lambda a: a, hlox.ShapeDtypeStruct((8,), dtype),
                                               v))
  assert np.array_equal(np.asarray(echo(x)), x)
  make = hlox.jit(lambda: hlox.pure_callback(lambda: np.arange(8, dtype=dtype),
                                             hlox.ShapeDtypeStruct((8,), dtype)))
  assert np.array_equal(np.asarray(make()), x)
  # results in a column-major layout are read as the values they hold
  z = jnp.arange(24, dtype=dtype).reshape(2, 3, 4)
  fortran = hlox.jit(lambda v: hlox.pure_callback(np.asfortranarray,
                                                  hlox.ShapeDtypeStruct.like(v), v))
  assert np.array_equal(np.asarray(fortran(z)), np.asarray(z))


def test_matches_jax():
  programs = {
      dt: ("numpy", f"x = m.arange(4, dtype='{dt}'); "
                    f"return (x * 3 + 1, -x, x // 2, x + 1, "
                    f"m.array([1, -1, 5], 'int32').astype('{dt}'), x.astype('float32'), "
                    f"m.sum(x.astype('int32')))")
      for dt in ("int2", "uint2")}
  check_against_jax_modules(programs)


@pytest.mark.parametrize("dtype", ["int2", "uint2"])
def test_promotion_and_refusals(dtype):
  assert jnp.result_type(dtype, 1) == jnp.result_type(dtype, "bool") == np.dtype(dtype)
  for other in ("int8", "int4", "uint8", "float32"):
    with pytest.raises(ValueError, match="2-bit and 4-bit integers do not support implicit"):
      jnp.result_type(dtype, other)
  # 2-bit integers have no floating type to become (as in JAX): sin refuses them.
  with pytest.raises(TypeError, match=f"sin does not accept dtype {dtype}"):
    jnp.sin(jnp.arange(2, dtype=dtype))
  assert jnp.issubdtype(dtype, jnp.integer)
  info = jnp.iinfo(dtype)
  assert (info.min, info.max) == ((-2, 1) if dtype == "int2" else (0, 3))
