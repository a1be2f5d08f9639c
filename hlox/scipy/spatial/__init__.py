"""``hlox.scipy.spatial``: spatial algorithms (JAX's ``jax.scipy.spatial``): ``transform``.

Belongs here: SciPy's ``scipy.spatial`` pieces that JAX offers (rotations and their
interpolation), written on ``hlox.numpy``; may import what ``hlox.scipy`` may, never jaxlib.
"""
from hlox.scipy.spatial import transform  # noqa: F401
