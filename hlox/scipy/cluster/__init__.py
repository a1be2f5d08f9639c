"""``hlox.scipy.cluster``: clustering helpers (JAX's ``jax.scipy.cluster``): the ``vq`` module.

Belongs here: SciPy's ``scipy.cluster`` functions written on ``hlox.numpy``; may import what
``hlox.scipy`` may (numpy, lax, the transformations), never jaxlib.
"""
from hlox.scipy.cluster import vq  # noqa: F401
