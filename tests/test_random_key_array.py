"""Typed key arrays behave as JAX's: they are ``hlox.Array``s that report their data's
placement, index and reshape over the key axes, compare elementwise, refuse arithmetic,
NumPy conversion and hashing with JAX's messages; seeds (offset, device seeds under a
transfer guard); and the samplers' argument errors JAX users rely on."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax, random


def test_keys_are_arrays_with_their_datas_placement():
  keys = random.split(random.key(0), 4)
  raw = random.PRNGKey(0)
  assert isinstance(keys, hlox.Array) and isinstance(raw, hlox.Array)
  assert isinstance(keys, jnp.ndarray)
  base = keys._base_array
  assert keys.device == base.device and keys.devices() == base.devices()
  assert keys.sharding == base.sharding
  assert keys.is_fully_addressable and keys.is_fully_replicated
  assert keys.nbytes == base.nbytes == keys.itemsize * keys.size == 32
  assert keys.on_device_size_in_bytes() == base.on_device_size_in_bytes()
  assert len(keys.addressable_shards) == len(keys.global_shards) == 1
  np.testing.assert_array_equal(random.key_data(keys.addressable_data(0)), base)
  assert keys.copy_to_host_async() is None and keys.block_until_ready() is keys
  assert not keys.is_deleted()
  keys.delete()
  assert keys.is_deleted() and base.is_deleted()


def test_refusals_with_jax_messages():
  key = random.key(123)
  with pytest.raises(TypeError, match="unhashable type"):
    hash(key)
  with pytest.raises(TypeError, match="PRNGKey dtype cannot be converted to a NumPy array"):
    np.asarray(key)
  with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int32\."):
    key + 1
  with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int32\."):
    jnp.add(key, 1)
  with pytest.raises(TypeError, match="add does not accept dtype key<fry> at position 0"):
    key + key
  with pytest.raises(TypeError, match="multiply does not accept dtypes key<fry>, float32"):
    key * 2.0
  with pytest.raises(TypeError, match="neg does not accept dtype key<fry>"):
    -key
  with pytest.raises(TypeError, match="lt does not accept dtype key<fry>"):
    key < key
  with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to int32"):
    lax.convert_element_type(key, int)
  with pytest.raises(ValueError, match="Cannot convert_element_type from int32 to key<fry>"):
    lax.convert_element_type(np.int32(0), key.dtype)
  with pytest.raises(TypeError, match="cannot be converted to boolean"):
    bool(key)
  with pytest.raises(TypeError, match="iteration over a 0-d key array"):
    iter(key)


def test_indexing_and_shape_operations_on_key_axes():
  keys = random.split(random.key(1), 6).reshape(2, 3)
  data = np.asarray(random.key_data(keys))
  assert keys[None].shape == (1, 2, 3) and keys[None, :, None].shape == (1, 2, 1, 3)
  assert keys[..., 1:, None].shape == (2, 2, 1) and keys[None, 0, ..., 1, None].shape == (1, 1)
  np.testing.assert_array_equal(random.key_data(keys[1, 2]), data[1, 2])
  with pytest.raises(IndexError, match="Too many indices: array is 2-dimensional, but 3"):
    keys[0, 1, None, 2]
  with pytest.raises(IndexError, match="array is 0-dimensional, but 1 were indexed"):
    random.key(0)[0]
  np.testing.assert_array_equal(random.key_data(keys.T), data.transpose(1, 0, 2))
  assert keys.swapaxes(0, 1).shape == (3, 2) and keys.ravel().shape == (6,)
  assert keys.reshape(3, -1).shape == (3, 2) and keys[:1].squeeze().shape == (3,)
  assert hlox.vmap(lambda k: k.T)(random.split(random.key(2), 24).reshape(2, 3, 4)).shape == \
      (2, 4, 3)
  flat = keys.ravel()
  np.testing.assert_array_equal(random.key_data(flat.at[np.array([0, 2])].get()),
                                data.reshape(6, 2)[[0, 2]])


def test_comparisons_and_at_set():
  key, other = random.key(123), random.key(456)
  assert bool(key == key) and not bool(key == other)
  assert bool(key != other) and not bool(key != key)
  keys = random.split(key, 5).at[2:4].set(key)
  np.testing.assert_array_equal(key == keys, [False, False, True, True, False])
  np.testing.assert_array_equal(key != keys, [True, True, False, False, True])


def test_numpy_conversions_and_result_type():
  key = random.key(123)
  assert jnp.result_type(key) == key.dtype
  with pytest.raises(ValueError, match="not a valid dtype for JAX type promotion"):
    jnp.result_type(key, 1)
  for out in (jnp.array(key), jnp.asarray(key), jnp.array(key, dtype=key.dtype),
              hlox.jit(jnp.asarray)(key)):
    assert isinstance(out, random.prng.PRNGKeyArray) and out.dtype == key.dtype
    np.testing.assert_array_equal(random.key_data(out), random.key_data(key))


def test_select_of_keys_and_vmap_of_cond():
  a, b = random.split(random.key(0), 3), random.split(random.key(1), 3)
  pred = jnp.array([True, False, True])
  want = np.where(np.asarray(pred)[:, None], random.key_data(a), random.key_data(b))
  np.testing.assert_array_equal(random.key_data(lax.select(pred, a, b)), want)
  out = hlox.vmap(lambda p: lax.cond(p, lambda: random.key(5), lambda: random.key(6)))(pred)
  np.testing.assert_array_equal(random.key_data(out)[:, 1], [5, 6, 5])


def test_seed_offset_and_device_seeds():
  k1 = random.key(17)
  with hlox.random_seed_offset(3):
    k2 = random.key(17)
    raw = random.PRNGKey(17)
  assert not bool(k1 == k2)
  np.testing.assert_array_equal(random.key_data(k2), random.key_data(random.key(20)))
  np.testing.assert_array_equal(raw, random.PRNGKey(20))
  seed = hlox.device_put(42)
  with hlox.transfer_guard("disallow"):  # hashing a device seed transfers nothing
    k = random.key(seed)
    raw = random.PRNGKey(seed)
  np.testing.assert_array_equal(random.key_data(k), random.key_data(random.key(42)))
  np.testing.assert_array_equal(raw, [0, 42])


def test_invalid_raw_keys_say_so_as_jax():
  with pytest.raises(TypeError, match="JAX encountered invalid PRNG key data: expected "
                     r"key_data.shape to end with \(2,\); got shape=\(1,\)"):
    random.uniform(jnp.zeros(1, dtype="float32"))
  with hlox.legacy_prng_key("error"):
    with pytest.raises(ValueError, match="Legacy uint32 key array"):
      random.uniform(jnp.zeros(2, dtype="uint32"))
    with pytest.raises(TypeError, match="expected key_data.dtype = uint32; got dtype=float32"):
      random.uniform(jnp.zeros(2, dtype="float32"))


def test_sampler_argument_errors():
  key = random.key(0)
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 1"):
    random.permutation(key, 10, axis=3)
  with pytest.raises(TypeError, match="x must be an integer"):
    random.permutation(key, 10.)
  with pytest.raises(hlox.errors.ConcretizationTypeError):
    hlox.jit(random.permutation)(key, 10)
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    hlox.jit(lambda n: random.normal(key, (n, 2)))(3)
  with pytest.raises(ValueError, match="method must be one of"):
    random.multivariate_normal(key, jnp.zeros(2), jnp.eye(2), method="qr")


def test_unitary_matrices_and_singular_covariances():
  q = random.orthogonal(random.key(0), 3, (2,), jnp.complex64)
  assert q.dtype == jnp.complex64 and q.shape == (2, 3, 3)
  np.testing.assert_allclose(jnp.conj(q).mT @ q, np.broadcast_to(np.eye(3), (2, 3, 3)),
                             atol=1e-5)
  assert np.abs(np.asarray(q).imag).max() > 0.1  # truly complex
  x = np.asarray(random.multivariate_normal(random.key(0), jnp.zeros(2), jnp.ones((2, 2)),
                                            (10,), method="eigh"))
  assert not np.isnan(x).any() and np.abs(x).max() > 0.1
  np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-3)


@pytest.mark.slow
def test_singular_covariance_by_svd():
  x = np.asarray(random.multivariate_normal(random.key(0), jnp.zeros(2), jnp.ones((2, 2)),
                                            (10,), method="svd"))
  assert not np.isnan(x).any() and np.abs(x).max() > 0.1
  np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-3)
