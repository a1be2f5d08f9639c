"""``hlox.fastmath``: one NumPy-style math API over switchable backends, a drop-in for
``trax.fastmath``.

    import hlox.fastmath as fastmath
    from hlox.fastmath import numpy as np

    x = np.array([1.0, 2.0])          # hlox.numpy on the default 'hlox' backend
    with fastmath.use_backend('numpy'):
      y = fastmath.logsumexp(np.exp(np.asarray([1.0, 2.0])))   # plain NumPy here

Backends: ``'hlox'`` (hlox on XLA; ``'jax'``/``Backend.JAX`` name the same one) and
``'numpy'`` (plain NumPy, no XLA imported, same results and the same random numbers).
"""
from hlox.fastmath.nested import (ShapeDtype, nested_map, nested_map_multiarg, nested_stack,
                                  nested_zip, signature, tree_flatten, tree_leaves,
                                  tree_unflatten)
from hlox.fastmath import ops
from hlox.fastmath.ops import *  # noqa: F401,F403
from hlox.fastmath.ops import ENV_VAR
