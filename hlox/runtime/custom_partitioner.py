"""XLA's custom-call partitioners: Python callbacks the SPMD partitioner calls for a custom
call of a given target (``lax/custom_partitioning.py``'s ``CustomSPMDPartitioning``).

jaxlib's ``register_custom_call_partitioner`` takes three callbacks, each given the
operation's ``backend_config`` string last: ``prop_user_sharding(sharding, shape, key)``,
``partition(arg_shapes, arg_shardings, result_shape, result_sharding, key) ->
(module bytecode, arg_shardings, result_sharding)`` (the module computes one device's piece)
and ``infer_sharding_from_operands(arg_shapes, arg_shardings, result_shape, key)``. Shapes
are jaxlib ``Shape``s and shardings ``HloSharding``s. Registering imports no ``jax``
(checked with ``jax`` blocked from import).
"""
from __future__ import annotations

import threading

from jaxlib import xla_client

_lock = threading.Lock()
_registered: set = set()


def register(name: str, prop_user_sharding, partition, infer_sharding_from_operands) -> None:
  """Register the partitioner of custom-call target ``name`` (once per process: XLA keeps
  the first registration of a name and ignores later ones)."""
  with _lock:
    if name in _registered:
      return
    xla_client.register_custom_call_partitioner(
        name, prop_user_sharding, partition, infer_sharding_from_operands,
        can_side_effecting_have_replicated_sharding=True)
    _registered.add(name)


def tuple_sharding(shape, shardings):
  """The ``HloSharding`` of a tuple-shaped result from its elements'."""
  return xla_client.HloSharding.tuple_sharding(shape, list(shardings))
