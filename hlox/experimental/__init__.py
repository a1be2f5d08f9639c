"""``hlox.experimental``: APIs that JAX keeps under ``jax.experimental`` (``io_callback``,
``checkify``, ``jet``, ``ode``, ``sparse``, ``pjit``), re-exported from the rooms that
implement them.

Belongs here: thin re-exports and small wrappers of APIs whose home is elsewhere in hlox
(``hlox.debug``, ``hlox.lax``), and JAX's small experimental libraries written on the public
layers (``ode``: ``odeint``; ``roofline``: cost estimates of a jaxpr, imported on first
use); may import the rooms of its layer and below, never jaxlib.
"""
from hlox.debug.callbacks import io_callback  # noqa: F401
from hlox.experimental import (checkify, compilation_cache, custom_partitioning,  # noqa: F401
                               jet, layout, mesh_utils,
                               multihost_utils, ode, pjit, shard_alike, shard_map, sparse,
                               xla_metadata)

__all__ = ["checkify", "compilation_cache", "custom_partitioning", "io_callback", "jet",
           "layout", "mesh_utils", "multihost_utils", "ode", "pjit", "shard_alike", "shard_map", "sparse",
           "xla_metadata"]
