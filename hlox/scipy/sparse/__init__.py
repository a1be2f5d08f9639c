"""``hlox.scipy.sparse``: sparse-matrix algorithms (JAX's ``jax.scipy.sparse``): ``linalg``.

Belongs here: SciPy's ``scipy.sparse`` functions that JAX offers, written on ``hlox.numpy``
and ``hlox.lax`` with linear operators given as functions; may import what ``hlox.scipy``
may, never jaxlib.
"""
from hlox.scipy.sparse import linalg  # noqa: F401
