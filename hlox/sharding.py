"""``hlox.sharding`` (JAX's ``jax.sharding``): meshes of devices, partition specs and the
shardings that lay arrays out over them. See ``hlox/runtime/sharding.py``."""
from hlox import tree_util
from hlox.core.tracer import Tracer
from hlox.lax.sharding_constraint import with_sharding_constraint
from hlox.runtime import placement
from hlox.runtime.sharding import (AxisType, GSPMDSharding, Mesh, NamedSharding,  # noqa: F401
                                   PartitionSpec, Sharding, SingleDeviceSharding,
                                   current_mesh as get_mesh, make_mesh, set_mesh)

use_mesh = set_mesh

__all__ = ["AxisType", "GSPMDSharding", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "get_mesh", "make_mesh", "reshard", "set_mesh", "use_mesh"]


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """``hlox.device_put``: put every leaf of ``x`` on ``device`` (a device, a sharding, or a
  tree prefix of them; see ``hlox.runtime.placement.device_put``). Inside a traced function
  a sharding becomes a sharding constraint and a device (or None) leaves the value as it is,
  as in JAX."""
  leaves = tree_util.tree_leaves(x)
  if not any(isinstance(leaf, Tracer) for leaf in leaves):
    return placement.device_put(x, device, src=src, donate=donate, may_alias=may_alias)
  if device is None or hasattr(device, "platform") or isinstance(device,
                                                                 SingleDeviceSharding):
    return x
  return with_sharding_constraint(x, device)


def reshard(x, out_shardings):
  """Lay ``x`` out as ``out_shardings``: a transfer outside ``jit``, a sharding constraint
  inside it."""
  if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(x)):
    return with_sharding_constraint(x, out_shardings)
  if isinstance(out_shardings, PartitionSpec):
    mesh = get_mesh()
    if mesh is None:
      raise ValueError(f"reshard: the PartitionSpec {out_shardings!r} needs a mesh: use a "
                       "NamedSharding or `hlox.sharding.set_mesh(mesh)`")
    out_shardings = NamedSharding(mesh, out_shardings)
  return placement.device_put(x, out_shardings)
