"""``hlox.random``: JAX 0.10.2's PRNGs and distributions, bit-identical to JAX.

Belongs here: keys, ``split``/``fold_in``, random bits and every sampler, written on
``hlox.lax`` and ``hlox.numpy`` (the ``threefry2x32`` primitive, with its rules, and the
rbg implementations live in ``prng.py``; ``philox.py`` and ``threefry4x32.py`` hold the
other hashes and the implementations on them). May import ``lax``, ``numpy``, the
transformations and the interpreters' rule tables; never jaxlib, nor the runtime beyond the
``Array`` type.
"""
from hlox.random.prng import (  # noqa: F401
    PRNGKey, PRNGKeyArray, bits, clone, fold_in, key, key_data, split, threefry2x32_p,
    wrap_key_data)
from hlox.random.prng import key_dtype, key_impl  # noqa: F401
from hlox.random import philox, threefry4x32  # noqa: F401  (register their PRNGs)
from hlox.random.distributions import *  # noqa: F401,F403
