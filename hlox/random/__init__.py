"""``hlox.random``: the threefry2x32 PRNG and distributions, bit-identical to JAX 0.10.2."""
from hlox.random.prng import (  # noqa: F401
    PRNGKey, PRNGKeyArray, bits, clone, fold_in, key, key_data, split, threefry2x32_p,
    wrap_key_data)
from hlox.random.distributions import *  # noqa: F401,F403
