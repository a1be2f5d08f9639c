"""PRNG implementations (threefry2x32, rbg, unsafe_rbg), the default_prng_impl and
threefry_partitionable options: structure without JAX, bits against JAX where installed."""
import numpy as np
import pytest

import hlox
from hlox import random

IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")
KEY_SHAPES = {"threefry2x32": (2,), "rbg": (4,), "unsafe_rbg": (4,)}
TAGS = {"threefry2x32": "key<fry>", "rbg": "key<rbg>", "unsafe_rbg": "key<urbg>"}


@pytest.fixture
def restore_config():
  saved = (hlox.config.default_prng_impl, hlox.config.threefry_partitionable)
  yield
  for name, value in zip(("default_prng_impl", "threefry_partitionable"), saved):
    if getattr(hlox.config, name) != value:
      hlox.config.update(name, value)


@pytest.mark.parametrize("impl", IMPLS)
def test_keys_carry_their_impl(impl):
  k = random.key(3, impl=impl)
  assert k.shape == () and str(k.dtype) == TAGS[impl] and k.dtype == random.key_dtype(impl)
  assert random.key_impl(k) == impl
  data = random.key_data(k)
  assert data.shape == KEY_SHAPES[impl] and data.dtype == np.uint32
  raw = random.PRNGKey(3, impl=impl)
  np.testing.assert_array_equal(raw, data)
  keys = random.split(k, (2, 3))
  assert keys.shape == (2, 3) and random.key_impl(keys) == impl
  assert random.key_data(keys).shape == (2, 3) + KEY_SHAPES[impl]
  assert random.key_impl(keys[1, 2]) == impl and keys[1].shape == (3,)
  # The impl survives jit and vmap (it is static pytree data).
  f = hlox.jit(lambda k: random.split(k)[1])
  assert random.key_impl(f(k)) == impl
  np.testing.assert_array_equal(random.key_data(f(k)), random.key_data(random.split(k)[1]))
  assert random.key_impl(hlox.vmap(lambda k: random.fold_in(k, 1))(keys[0])) == impl
  w = random.wrap_key_data(random.key_data(keys), impl=impl)
  assert w.dtype == keys.dtype
  np.testing.assert_array_equal(random.key_data(random.split(w[0, 0])),
                                random.key_data(random.split(keys[0, 0])))
  u = random.uniform(k, (1000,))
  assert u.shape == (1000,) and 0 <= float(u.min()) and float(u.max()) < 1
  assert 0.4 < float(u.mean()) < 0.6


def test_impls_differ_and_rbg_halves():
  a, b = (random.key_data(random.split(random.key(5, impl=i))) for i in ("rbg", "unsafe_rbg"))
  assert not np.array_equal(a, b)
  # rbg splits each 64-bit half of its key as a threefry key.
  fry = random.key_data(random.split(random.key(5)))
  np.testing.assert_array_equal(a[:, :2], fry)
  np.testing.assert_array_equal(a[:, 2:], fry)


def test_bad_impls_and_mismatched_keys():
  with pytest.raises(ValueError, match='unrecognized PRNG implementation "nope"'):
    random.key(0, impl="nope")
  with pytest.raises(TypeError, match="unrecognized type"):
    random.PRNGKey(0, impl=3)
  with pytest.raises(TypeError, match=r"wrap_key_data.*rbg.*\(4,\)"):
    random.wrap_key_data(np.zeros(2, np.uint32), impl="rbg")
  # A raw key is read with the default implementation: a uint32[4] is no threefry key.
  with pytest.raises(TypeError, match=r"uniform: expected a PRNG key.*\(2,\)"):
    random.uniform(random.PRNGKey(0, impl="rbg"))


def test_dtype_spec_and_seed_errors():
  assert random.key(1, dtype="rbg").dtype == random.key_dtype("rbg")
  assert random.key(1, dtype=random.key_dtype("unsafe_rbg")).dtype == "key<urbg>"
  w = random.wrap_key_data(np.arange(4, dtype=np.uint32), dtype=random.key_dtype("rbg"))
  assert random.key_impl(w) == "rbg"
  with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype`"):
    random.key(1, impl="rbg", dtype="rbg")
  with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
    random.key(np.pi)
  with pytest.raises(TypeError, match="key accepts a scalar seed"):
    random.key(np.arange(3), impl="rbg")
  with pytest.raises(OverflowError):
    random.PRNGKey(2 ** 63, impl="rbg")
  keys = random.split(random.key(0, impl="rbg"), 3)
  assert keys.itemsize == keys.dtype.itemsize == 16 and keys.nbytes == 48
  assert keys.copy() is keys


def test_default_impl_option(restore_config):
  with pytest.raises(ValueError, match="unknown PRNG implementation"):
    hlox.config.update("jax_default_prng_impl", "nope")
  assert hlox.config.default_prng_impl == "threefry2x32"
  with hlox.default_prng_impl("unsafe_rbg"):
    k = random.key(1)
    raw = random.PRNGKey(1)
    assert random.key_impl(k) == "unsafe_rbg" and raw.shape == (4,)
    # Raw keys follow the default implementation, under jit too.
    np.testing.assert_array_equal(random.split(raw), random.key_data(random.split(k)))
    np.testing.assert_array_equal(hlox.jit(random.normal)(raw), random.normal(k))
  assert random.PRNGKey(1).shape == (2,)


def test_threefry_partitionable_option(restore_config):
  k = random.PRNGKey(7)
  on = np.asarray(random.split(k, 3)), np.asarray(random.bits(k, (5,), np.uint8))
  hlox.config.update("threefry_partitionable", False)
  off = np.asarray(random.split(k, 3)), np.asarray(random.bits(k, (5,), np.uint8))
  assert not np.array_equal(on[0], off[0]) and not np.array_equal(on[1], off[1])
  # The original scheme: split hashes the counts 0..2n-1 as one block.
  from hlox.random.prng import threefry_2x32
  want = threefry_2x32((k[0], k[1]), np.arange(6, dtype=np.uint32)).reshape(3, 2)
  np.testing.assert_array_equal(off[0], want)
  # 8-bit draws are the pieces of 32-bit words, low bits first.
  words = np.asarray(threefry_2x32((k[0], k[1]), np.arange(2, dtype=np.uint32)))
  np.testing.assert_array_equal(off[1], words.view(np.uint8)[:5])


def test_rng_bit_generator_vmap_draws_from_first_key():
  keys = random.key_data(random.split(random.key(0, impl="rbg"), 3))
  bits = hlox.vmap(lambda k: random.bits(random.wrap_key_data(k, impl="rbg"), (4,)))(keys)
  np.testing.assert_array_equal(
      bits, random.bits(random.wrap_key_data(keys[0], impl="rbg"), (3, 4)))


# --- bit-exact against JAX -----------------------------------------------------------------

def _draws(r, impl, gamma):
  k = r.key(11, impl=impl)
  out = [r.key_data(r.split(k, 3)), r.key_data(r.fold_in(k, 9)), r.bits(k, (4,)),
         r.bits(k, (3,), np.uint8), r.normal(k, (4,)), r.uniform(k, (3,), minval=2, maxval=3),
         r.randint(k, (4,), 0, 100), r.bernoulli(k, 0.3, (5,)),
         r.key_data(r.split(r.split(k)[1], (2, 2)))]
  if gamma:  # one key per element: a vmap for threefry, a loop over the keys otherwise
    out.append(r.gamma(k, 0.8, (3,)))
  return [np.asarray(o) for o in out]


@pytest.mark.ci_sample(2)
@pytest.mark.jax_oracle
@pytest.mark.parametrize("impl,partitionable,gamma", [
    ("threefry2x32", True, False), ("threefry2x32", False, False), ("rbg", True, True),
    ("rbg", False, False), ("unsafe_rbg", True, False)])
def test_bit_exact_with_jax(impl, partitionable, gamma, restore_config):
  jax = pytest.importorskip("jax")
  jax_saved = jax.config.jax_threefry_partitionable
  try:
    jax.config.update("jax_threefry_partitionable", partitionable)
    if hlox.config.threefry_partitionable != partitionable:
      hlox.config.update("threefry_partitionable", partitionable)
    want = _draws(jax.random, impl, gamma)
    got = _draws(random, impl, gamma)
  finally:
    jax.config.update("jax_threefry_partitionable", jax_saved)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_array_equal(g, w)


@pytest.mark.jax_oracle
def test_bit_exact_with_jax_x64_and_vmap(restore_config):
  jax = pytest.importorskip("jax")
  from hlox.config import enable_x64
  jax.config.update("jax_enable_x64", True)
  try:
    with enable_x64():
      for impl in ("rbg", "unsafe_rbg"):
        for r in (jax.random, random):
          ks = r.split(r.key(2, impl=impl), 3)
          vm = jax.vmap if r is jax.random else hlox.vmap
          r_out = [np.asarray(r.bits(ks[0], (2,), np.uint64)),
                   np.asarray(vm(lambda k: r.randint(k, (), 0, 100))(ks)),
                   np.asarray(r.key_data(vm(r.split)(ks)))]
          if r is jax.random:
            want = r_out
          else:
            for g, w in zip(r_out, want):
              np.testing.assert_array_equal(g, w)
  finally:
    jax.config.update("jax_enable_x64", False)
