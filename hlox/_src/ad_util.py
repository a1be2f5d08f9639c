"""``jax._src.ad_util``: lineax imports ``stop_gradient_p`` to register a transpose rule for
it (``ad.primitive_transposes[stop_gradient_p] = ...``), so that ``stop_gradient`` inside a
linear function it transposes passes its cotangent through."""
from hlox.lax.ad_util import stop_gradient_p

__all__ = ["stop_gradient_p"]
