"""The philox2x32, philox4x32 and threefry4x32 PRNG implementations: the hashes against
Random123's known-answer vectors, keys' structure without JAX, every key operation and draw
bit for bit against JAX where it is installed; random bits past 2**32 positions."""
import numpy as np
import pytest

import hlox
from hlox import random
from hlox.random.philox import philox2x32_p, philox4x32_p
from hlox.random.prng import position_2x32
from hlox.random.threefry4x32 import threefry4x32_p

IMPLS = {"philox2x32": ("key<phx2>", (1,)), "philox4x32": ("key<phx4>", (2,)),
         "threefry4x32": ("key<fry4>", (4,))}

# Random123's kat_vectors: (key words, counter words, expected output words).
KAT = {
    philox2x32_p: [([0], [0, 0], [0xFF1DAE59, 0x6CD10DF2]),
                   ([0xFFFFFFFF], [0xFFFFFFFF] * 2, [0x2C3F628B, 0xAB4FD7AD]),
                   ([0x13198A2E], [0x243F6A88, 0x85A308D3], [0xDD7CE038, 0xF62A4C12])],
    philox4x32_p: [([0, 0], [0] * 4, [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
                   ([0xFFFFFFFF] * 2, [0xFFFFFFFF] * 4,
                    [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
                   ([0xA4093822, 0x299F31D0], [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                    [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1])],
    threefry4x32_p: [([0] * 4, [0] * 4, [0x9C6CA96A, 0xE17EAE66, 0xFC10ECD4, 0x5256A7D8]),
                     ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 4,
                      [0x2A881696, 0x57012287, 0xF6C7446E, 0xA16A6732]),
                     ([0xA4093822, 0x299F31D0, 0x082EFA98, 0xEC4E6C89],
                      [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                      [0x59CD1DBB, 0xB8879579, 0x86B5D00C, 0xAC8B6D84])],
}


@pytest.mark.parametrize("prim", list(KAT), ids=lambda p: p.name)
def test_hashes_match_known_answers(prim):
  # All three vectors in one call: the operands are stacked, so the hash is elementwise.
  keys, counters, expected = zip(*KAT[prim])
  operands = [np.array(col, np.uint32) for col in zip(*keys)] + \
             [np.array(col, np.uint32) for col in zip(*counters)]
  out = prim.bind(*operands)
  np.testing.assert_array_equal(np.stack([np.asarray(o) for o in out], 1),
                                np.array(expected, np.uint32))
  # Scalar key words broadcast against counters (as split and random bits use them).
  out = prim.bind(*[o[0] for o in operands[:len(keys[0])]], *operands[len(keys[0]):])
  np.testing.assert_array_equal(np.asarray(out[0])[0], expected[0][0])


@pytest.mark.parametrize("impl", list(IMPLS))
def test_keys_structure(impl):
  name, key_shape = IMPLS[impl]
  k = random.key(7, impl=impl)
  assert str(k.dtype) == name and random.key_impl(k) == impl
  assert random.key_data(k).shape == key_shape and random.key_data(k).dtype == np.uint32
  keys = random.key_data(random.split(k, 4))
  assert keys.shape == (4, *key_shape)
  assert len({tuple(row) for row in np.asarray(keys)}) == 4
  folded = [tuple(np.asarray(random.key_data(random.fold_in(k, i)))) for i in range(3)]
  assert len(set(folded)) == 3
  b = random.bits(k, (50,))
  assert b.dtype == np.uint32 and len(set(np.asarray(b).tolist())) == 50


@pytest.mark.slow
@pytest.mark.parametrize("impl", list(IMPLS))
def test_draws_and_transformations(impl):
  k = random.key(7, impl=impl)
  u = np.asarray(random.uniform(k, (2000,)))
  assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.03
  for dtype in (np.uint8, np.uint16):
    b = random.bits(k, (50,), dtype)
    assert b.dtype == dtype and np.asarray(b).any()
  # jit and vmap see the same keys.
  np.testing.assert_array_equal(hlox.jit(lambda s: random.key_data(random.key(s, impl=impl)))(7),
                                random.key_data(k))
  vk = hlox.vmap(lambda k: random.split(k, 2))(random.split(k, 3))
  assert vk.shape == (3, 2) and random.key_impl(vk) == impl


def test_unknown_impl_names_new_ones():
  with pytest.raises(ValueError, match="philox4x32.*threefry4x32"):
    random.key(0, impl="philox8x32")


@pytest.mark.jax_oracle
@pytest.mark.parametrize("impl", list(IMPLS))
def test_key_operations_bit_exact_with_jax(impl):
  jax = pytest.importorskip("jax")
  for seed in (0, -1, 2 ** 31 - 1):
    kj, kh = jax.random.key(seed, impl=impl), random.key(seed, impl=impl)
    np.testing.assert_array_equal(random.key_data(kh), jax.random.key_data(kj))
  np.testing.assert_array_equal(random.key_data(random.split(kh, (3, 2))),
                                jax.random.key_data(jax.random.split(kj, (3, 2))))
  np.testing.assert_array_equal(random.key_data(random.fold_in(kh, 7)),
                                jax.random.key_data(jax.random.fold_in(kj, 7)))
  np.testing.assert_array_equal(random.bits(kh, (5, 3)), jax.random.bits(kj, (5, 3)))


@pytest.mark.jax_oracle
@pytest.mark.parametrize("impl", [
    "philox2x32", pytest.param("philox4x32", marks=pytest.mark.slow),
    pytest.param("threefry4x32", marks=pytest.mark.slow)])
def test_draws_bit_exact_with_jax(impl):
  jax = pytest.importorskip("jax")
  kj, kh = jax.random.key(-1, impl=impl), random.key(-1, impl=impl)
  for dtype in (np.uint8, np.uint16):
    np.testing.assert_array_equal(random.bits(kh, (5, 3), dtype),
                                  jax.random.bits(kj, (5, 3), dtype))
  np.testing.assert_array_equal(random.normal(kh, (7,)), jax.random.normal(kj, (7,)))
  with hlox.enable_x64(True), jax.enable_x64(True):
    kj, kh = jax.random.key(2 ** 40 + 3, impl=impl), random.key(2 ** 40 + 3, impl=impl)
    np.testing.assert_array_equal(random.key_data(kh), jax.random.key_data(kj))
    np.testing.assert_array_equal(random.bits(kh, (4,), np.uint64),
                                  jax.random.bits(kj, (4,), np.uint64))


def test_positions_past_2_32():
  # The 64-bit row-major positions, in (hi, lo) words, of elements of a shape too large to
  # draw: strides past 2**32 carry into the high word.
  shape = (5, 10 ** 6, 3 * 10 ** 6)
  rng = np.random.default_rng(0)
  idx = [rng.integers(0, d, 40).astype(np.uint32) for d in shape]
  hi, lo = (np.asarray(w).astype(object) for w in position_2x32(idx, shape))
  want = np.ravel_multi_index([i.astype(np.int64) for i in idx], shape).astype(object)
  assert (hi * 2 ** 32 + lo == want).all() and want.max() > 2 ** 32


def test_eval_shape_and_lowering_of_huge_draws():
  out = hlox.eval_shape(lambda s: random.normal(random.key(s), (10 ** 12,)), 0)
  assert out.shape == (10 ** 12,) and out.dtype == np.float32
  out = hlox.eval_shape(lambda s: random.bits(random.key(s, impl="philox2x32"),
                                              (10 ** 5, 10 ** 5)), 0)
  assert out.shape == (10 ** 5, 10 ** 5)
  # Lowering (not running) a draw of 6e9 values works.
  text = hlox.jit(lambda: random.uniform(random.key(3), (3 * 10 ** 5, 2 * 10 ** 4))).lower()
  assert "300000x20000xf32" in text.as_text()
