"""``eval_shape`` and ``ShapeDtypeStruct`` with typed keys, as in JAX: a key-typed struct
stands for keys (``ShapeDtypeStruct.like(key)``), and key results come back as key-typed
structs."""
import hlox
import hlox.numpy as jnp
from hlox import random


def test_like_and_identity():
  key = random.key(1701)
  spec = hlox.ShapeDtypeStruct.like(key)
  assert spec.shape == () and spec.dtype == key.dtype and spec.sharding is None
  assert hlox.eval_shape(lambda k: k, spec) == spec
  assert hlox.eval_shape(lambda k: k, key) == spec


def test_key_structs_through_random_functions():
  spec = hlox.ShapeDtypeStruct((4,), random.key(0).dtype)
  split = hlox.eval_shape(lambda k: random.split(k[0], 3), spec)
  assert (split.shape, split.dtype) == ((3,), spec.dtype)
  data = hlox.eval_shape(random.key_data, spec)
  assert (data.shape, str(data.dtype)) == ((4, 2), "uint32")
  draws, scale = hlox.eval_shape(
      lambda k, s: (hlox.vmap(lambda k: random.normal(k, (2,)))(k) * s, s), spec,
      hlox.ShapeDtypeStruct((), jnp.float32))
  assert (draws.shape, str(draws.dtype)) == ((4, 2), "float32")
  assert scale.shape == ()
