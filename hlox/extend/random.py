"""``jax.extend.random``: PRNG implementations defined outside hlox
(``define_prng_impl``), keys seeded with a given implementation, and the built-in
implementations and threefry primitive."""
from __future__ import annotations

from typing import Callable

import numpy as np

from hlox import lax
from hlox.config import config
from hlox.random.prng import (PRNGImpl, PRNGSpec, key, rbg_prng_impl, resolve_impl,
                              threefry2x32_p, threefry_2x32, threefry_prng_impl,
                              unsafe_rbg_prng_impl)

__all__ = ["define_prng_impl", "random_seed", "seed_with_impl", "threefry2x32_p",
           "threefry_2x32", "threefry_prng_impl", "rbg_prng_impl", "unsafe_rbg_prng_impl"]


def define_prng_impl(*, key_shape, seed: Callable, split: Callable, random_bits: Callable,
                     fold_in: Callable, name: str = "<unnamed>", tag: str = "?") -> PRNGSpec:
  """A PRNG implementation from its rules, for ``random.key(..., impl=)`` and friends.

  JAX's conventions: ``seed(s)`` maps an integer scalar seed (int32, or int64 with x64) to
  ``uint32`` key data of shape ``key_shape``; ``split(data, shape)`` gives keys' data of
  ``shape + key_shape``; ``fold_in(data, d)`` folds a ``uint32`` scalar in;
  ``random_bits(data, bit_width, shape)`` draws unsigned bits. Keys print as ``key<tag>``.
  """
  def seed_from_words(words):
    # hlox hands a seed over as its two uint32 words [high, low]; the rule wants the integer.
    low = lax.bitcast_convert_type(lax.squeeze(lax.slice(words, (1,), (2,)), (0,)), np.int32)
    if not config.enable_x64:
      return seed(low)
    wide = lax.bitwise_or(
        lax.shift_left(lax.convert_element_type(words[0], np.uint64), np.uint64(32)),
        lax.convert_element_type(words[1], np.uint64))
    return seed(lax.bitcast_convert_type(wide, np.int64))

  impl = PRNGImpl(name, tag, tuple(key_shape), seed_from_words, split, fold_in, random_bits)
  return PRNGSpec(impl)


def seed_with_impl(impl, seed):
  """A typed key of implementation ``impl`` (a name, ``PRNGSpec`` or impl) for ``seed``."""
  return key(seed, impl=resolve_impl(impl))


def random_seed(seeds, impl):
  """Typed keys of implementation ``impl`` for the integer ``seeds`` (a scalar)."""
  return key(seeds, impl=resolve_impl(impl))
