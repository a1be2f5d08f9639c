"""``hlox.experimental``: APIs that JAX keeps under ``jax.experimental`` (``io_callback``,
``mesh_utils``, ``multihost_utils``, ``shard_map``, ``ode``).

Belongs here: thin re-exports and small wrappers of APIs whose home is elsewhere in hlox
(``hlox.debug``, ``hlox.lax``), and JAX's small experimental libraries written on the public
layers (``ode``: ``odeint``); may import the rooms of its layer and below, never jaxlib.
"""
from hlox.debug.callbacks import io_callback  # noqa: F401
from hlox.experimental import mesh_utils, multihost_utils, ode, shard_map  # noqa: F401

__all__ = ["io_callback", "mesh_utils", "multihost_utils", "ode", "shard_map"]
