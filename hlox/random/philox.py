"""The Philox-2x32 and Philox-4x32 counter-based hashes (Random123, 10 rounds) as primitives,
and the ``philox2x32`` / ``philox4x32`` PRNG implementations on them, bit-identical to JAX
0.10.2's (``key<phx2>``: one uint32 word per key, ``key<phx4>``: two).

The schemes, as JAX defines them:

- seed: the 64-bit seed's (high, low) words are hashed as counter words under a zero key,
  and the first output word(s) are the key;
- split: each new key's 64-bit position (hi, lo) is a counter, hashed with the key
  (philox4x32 puts it in the last two counter words);
- fold_in: the counter (0, d) (philox4x32: (0, 0, 0, d));
- random bits: each output position is a counter (philox4x32: in the first two words); 32 bits
  xor every output word, 64 bits join the first two words (high, low), 8/16 bits truncate
  the 32-bit xor.
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox.random.prng import (PRNGImpl, _iota_2x32, check_bit_width, hash_primitive, join_bits,
                              register_prng, stack_words)

__all__ = ["philox2x32_p", "philox4x32_p", "philox2x32_prng_impl", "philox4x32_prng_impl"]

_u32 = np.dtype(np.uint32)
_ROUNDS = 10
# Multipliers of the round function and the Weyl increments that bump the key each round.
_M2x32 = np.uint32(0xD256D193)
_M4x32 = (np.uint32(0xD2511F53), np.uint32(0xCD9E8D57))
_WEYL = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))


def _mulhilo(m, x):
  return lax.mul(x, m), lax.mulhi(x, m)


def _philox2x32_composition(k0, x0, x1):
  for rnd in range(_ROUNDS):
    if rnd:
      k0 = lax.add(k0, _WEYL[0])
    lo, hi = _mulhilo(_M2x32, x0)
    x0, x1 = lax.bitwise_xor(lax.bitwise_xor(hi, x1), k0), lo
  return [x0, x1]


def _philox4x32_composition(k0, k1, x0, x1, x2, x3):
  for rnd in range(_ROUNDS):
    if rnd:
      k0, k1 = lax.add(k0, _WEYL[0]), lax.add(k1, _WEYL[1])
    lo0, hi0 = _mulhilo(_M4x32[0], x0)
    lo1, hi1 = _mulhilo(_M4x32[1], x2)
    x0, x1, x2, x3 = (lax.bitwise_xor(lax.bitwise_xor(hi1, x1), k0), lo1,
                      lax.bitwise_xor(lax.bitwise_xor(hi0, x3), k1), lo0)
  return [x0, x1, x2, x3]


philox2x32_p = hash_primitive("philox2x32", 3, 2, _philox2x32_composition)
philox4x32_p = hash_primitive("philox4x32", 6, 4, _philox4x32_composition)

_ZERO = np.uint32(0)


def _word(w):
  return lax.reshape(w, (1,))


# --- philox2x32 ------------------------------------------------------------------------------

def _philox2x32_seed(half):
  return _word(philox2x32_p.bind(_ZERO, half[0], half[1])[0])


def _philox2x32_split(data, shape):
  hi, lo = _iota_2x32(shape)
  return lax.expand_dims(philox2x32_p.bind(data[0], hi, lo)[0], (len(shape),))


def _philox2x32_fold_in(data, d):
  return _word(philox2x32_p.bind(data[0], _ZERO, d)[0])


def _philox2x32_random_bits(data, bit_width, shape):
  check_bit_width(bit_width)
  hi, lo = _iota_2x32(shape)
  out = philox2x32_p.bind(data[0], hi, lo)
  return join_bits(bit_width, out, out)


# --- philox4x32 ------------------------------------------------------------------------------

def _philox4x32_seed(half):
  out = philox4x32_p.bind(_ZERO, _ZERO, half[0], half[1], _ZERO, _ZERO)
  return lax.concatenate([_word(out[0]), _word(out[1])], 0)


def _philox4x32_split(data, shape):
  hi, lo = _iota_2x32(shape)
  zeros = lax.full(shape, 0, _u32)
  out = philox4x32_p.bind(data[0], data[1], zeros, zeros, hi, lo)
  return stack_words(out[:2], len(shape))


def _philox4x32_fold_in(data, d):
  out = philox4x32_p.bind(data[0], data[1], _ZERO, _ZERO, _ZERO, d)
  return lax.concatenate([_word(out[0]), _word(out[1])], 0)


def _philox4x32_random_bits(data, bit_width, shape):
  check_bit_width(bit_width)
  hi, lo = _iota_2x32(shape)
  zeros = lax.full(shape, 0, _u32)
  out = philox4x32_p.bind(data[0], data[1], hi, lo, zeros, zeros)
  return join_bits(bit_width, out[:2], out)


philox2x32_prng_impl = PRNGImpl("philox2x32", "phx2", (1,), _philox2x32_seed,
                                _philox2x32_split, _philox2x32_fold_in,
                                _philox2x32_random_bits)
philox4x32_prng_impl = PRNGImpl("philox4x32", "phx4", (2,), _philox4x32_seed,
                                _philox4x32_split, _philox4x32_fold_in,
                                _philox4x32_random_bits)
register_prng(philox2x32_prng_impl)
register_prng(philox4x32_prng_impl)
