"""The Threefry-4x32 hash (Random123, 20 rounds) as a primitive, and the ``threefry4x32`` PRNG
implementation on it, bit-identical to JAX 0.10.2's (``key<fry4>``: four uint32 words per key).

The schemes, as JAX defines them:

- seed: the key (high, low, 0, 0) of the 64-bit seed hashes the zero counter;
- split: each new key's 64-bit position (hi, lo) fills the last two counter words;
- fold_in: the counter (0, 0, 0, d);
- random bits: each output position fills the first two counter words; 32 bits xor the four
  output words, 64 bits are (w0 ^ w2, w1 ^ w3) as (high, low), 8/16 bits truncate the xor.
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox.core.tracer import get_aval
from hlox.lax.utils import broadcasting_shape_rule
from hlox.random.prng import (PRNGImpl, _iota_2x32, check_bit_width, hash_primitive, join_bits,
                              register_prng, stack_words)

__all__ = ["threefry4x32_p", "threefry4x32_prng_impl"]

_u32 = np.dtype(np.uint32)
_ROUNDS = 20
# Threefish-256 rotation amounts for 32-bit words: a pair per round, repeating every 8 rounds.
_ROTATIONS = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x, r):
  return lax.bitwise_or(lax.shift_left(x, np.uint32(r)),
                        lax.shift_right_logical(x, np.uint32(32 - r)))


def _mix(a, b, r):
  """One MIX: a += b; b = rotl(b, r) ^ a."""
  a = lax.add(a, b)
  return a, lax.bitwise_xor(a, _rotl(b, r))


def _threefry4x32_composition(k0, k1, k2, k3, x0, x1, x2, x3):
  ks = [k0, k1, k2, k3]
  ks.append(lax.bitwise_xor(lax.bitwise_xor(lax.bitwise_xor(lax.bitwise_xor(k0, k1), k2), k3),
                            _PARITY))
  x = [lax.add(w, k) for w, k in zip((x0, x1, x2, x3), ks)]
  for rnd in range(_ROUNDS):
    r0, r1 = _ROTATIONS[rnd % 8]
    # Even rounds mix the pairs (0, 1), (2, 3); odd rounds the permuted pairs (0, 3), (2, 1).
    if rnd % 2 == 0:
      x[0], x[1] = _mix(x[0], x[1], r0)
      x[2], x[3] = _mix(x[2], x[3], r1)
    else:
      x[0], x[3] = _mix(x[0], x[3], r0)
      x[2], x[1] = _mix(x[2], x[1], r1)
    if rnd % 4 == 3:
      # Key injection after every four rounds; the schedule rotates through ks.
      s = rnd // 4 + 1
      x = [lax.add(w, ks[(s + j) % 5]) for j, w in enumerate(x)]
      x[3] = lax.add(x[3], np.uint32(s))
  return x


def _threefry4x32_rolled(k0, k1, k2, k3, x0, x1, x2, x3):
  """The same 20 rounds as a loop of 5 steps of 4 rounds, the rotation amounts picked by the
  step's parity and the key schedule carried (at the keys' own shape) and rotated."""
  shape = broadcasting_shape_rule("threefry4x32", *map(get_aval, (k0, k1, k2, k3, x0, x1,
                                                                   x2, x3)))

  # The schedule rotates through the loop's carry: its words must share one shape.
  key_shape = broadcasting_shape_rule("threefry4x32", *map(get_aval, (k0, k1, k2, k3)))

  def bcast(v, to=shape):
    vshape = get_aval(v).shape
    if vshape == to:
      return v
    return lax.broadcast_in_dim(v, to, tuple(range(len(to) - len(vshape), len(to))))
  k0, k1, k2, k3 = (bcast(k, key_shape) for k in (k0, k1, k2, k3))
  ks = (k0, k1, k2, k3, lax.bitwise_xor(lax.bitwise_xor(lax.bitwise_xor(
      lax.bitwise_xor(k0, k1), k2), k3), _PARITY))
  rotations = [np.array(r, np.uint32) for r in zip(*_ROTATIONS)]  # (even step, odd step)

  def rotl(x, r):
    return lax.bitwise_or(lax.shift_left(x, r), lax.shift_right_logical(x, lax.sub(
        np.uint32(32), r)))

  def mix(a, b, r):
    a = lax.add(a, b)
    return a, lax.bitwise_xor(a, rotl(b, r))

  def step(i, carry):
    x, kr = list(carry[:4]), carry[4:]
    i = lax.convert_element_type(i, _u32)
    odd = lax.rem(i, np.uint32(2))
    for j in range(4):
      r0, r1 = (lax.select(lax.eq(odd, np.uint32(1)), rot[4 + j], rot[j]) for rot in rotations)
      if j % 2 == 0:
        x[0], x[1] = mix(x[0], x[1], r0)
        x[2], x[3] = mix(x[2], x[3], r1)
      else:
        x[0], x[3] = mix(x[0], x[3], r0)
        x[2], x[1] = mix(x[2], x[1], r1)
    # Key injection: ``kr`` is the schedule rotated by the step number.
    x = [lax.add(w, bcast(kr[(1 + j) % 5])) for j, w in enumerate(x)]
    x[3] = lax.add(x[3], bcast(lax.add(i, np.uint32(1))))
    return (*x, *kr[1:], kr[0])

  x = [lax.add(bcast(w), bcast(k)) for w, k in zip((x0, x1, x2, x3), ks)]
  return list(lax.fori_loop(0, 5, step, (*x, *ks))[:4])


threefry4x32_p = hash_primitive("threefry4x32", 8, 4, _threefry4x32_composition,
                                cpu_composition=_threefry4x32_rolled)

_ZERO = np.uint32(0)


def _words(data):
  return [data[i] for i in range(4)]


def _threefry4x32_seed(half):
  out = threefry4x32_p.bind(half[0], half[1], _ZERO, _ZERO, _ZERO, _ZERO, _ZERO, _ZERO)
  return stack_words(out, 0)


def _threefry4x32_split(data, shape):
  hi, lo = _iota_2x32(shape)
  zeros = lax.full(shape, 0, _u32)
  return stack_words(threefry4x32_p.bind(*_words(data), zeros, zeros, hi, lo), len(shape))


def _threefry4x32_fold_in(data, d):
  return stack_words(threefry4x32_p.bind(*_words(data), _ZERO, _ZERO, _ZERO, d), 0)


def _threefry4x32_random_bits(data, bit_width, shape):
  check_bit_width(bit_width)
  hi, lo = _iota_2x32(shape)
  zeros = lax.full(shape, 0, _u32)
  out = threefry4x32_p.bind(*_words(data), hi, lo, zeros, zeros)
  wide = [lax.bitwise_xor(out[0], out[2]), lax.bitwise_xor(out[1], out[3])]
  return join_bits(bit_width, wide, out)


threefry4x32_prng_impl = PRNGImpl("threefry4x32", "fry4", (4,), _threefry4x32_seed,
                                  _threefry4x32_split, _threefry4x32_fold_in,
                                  _threefry4x32_random_bits)
register_prng(threefry4x32_prng_impl)
