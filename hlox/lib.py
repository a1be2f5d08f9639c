"""``hlox.lib`` (JAX's ``jax.lib``): the version of the jaxlib underneath, which libraries
check to work around a particular jaxlib release (equinox's tests do)."""
from hlox.runtime.environment import jaxlib_version

__version__ = jaxlib_version()
