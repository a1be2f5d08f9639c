"""``hlox.experimental.shard_map`` (JAX's ``jax.experimental.shard_map``): ``shard_map``,
also at ``hlox.shard_map``."""
from hlox.lax.shard_map import shard_map  # noqa: F401

__all__ = ["shard_map"]
