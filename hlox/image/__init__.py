"""``hlox.image``: image resampling (JAX's ``jax.image``): ``resize``, ``scale_and_translate``.

Belongs here: image operations written as libraries on ``hlox.numpy`` and ``hlox.lax`` (a
resize is one weight matrix per resized axis, contracted with ``einsum``). May import
``numpy``, ``lax`` and the transformations; never jaxlib, nor the runtime beyond ``Array``.
"""
from hlox.image.scale import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
