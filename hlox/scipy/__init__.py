"""``hlox.scipy``: SciPy functions written on ``hlox.numpy`` and ``hlox.lax``.

Belongs here: JAX's ``jax.scipy`` namespaces, as libraries on top of the NumPy API. May import
``hlox.numpy``, ``hlox.lax``, ``hlox.random`` and the transformations (``api``, ``autodiff``,
``custom_derivatives``); never jaxlib, nor the runtime beyond the ``Array`` type.
"""
from hlox.scipy import special  # noqa: F401
from hlox.scipy import signal  # noqa: F401
from hlox.scipy import fft  # noqa: F401
from hlox.scipy import linalg  # noqa: F401
from hlox.scipy import integrate, stats  # noqa: F401
from hlox.scipy import cluster, interpolate, ndimage, sparse, spatial  # noqa: F401
from hlox.scipy import optimize  # noqa: F401
