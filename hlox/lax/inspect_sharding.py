"""``inspect_sharding_p``: hand a value's layout to a Python callback (``jax.debug.
inspect_array_sharding``). It has no results and the compiler keeps it (effectful).

Eagerly the callback gets the array's own sharding. In a program over one device it is
called while lowering, with that device's sharding; in a program partitioned over a mesh
the layout is XLA's choice, so the lowering emits an ``InspectSharding`` custom call and
XLA's partitioner calls back, at compile time, with the layout it picked (read back as a
``NamedSharding`` over the program's mesh). Under ``jvp`` it inspects the primal; under
``vmap`` the batched value.
"""
from __future__ import annotations

from hlox.core.jaxpr import effectful_primitives
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla
from hlox.runtime import client, spmd
from hlox.runtime import sharding as sharding_lib

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["inspect_sharding_p"]


class _NoResults(Primitive):
  multiple_results = True


inspect_sharding_p = _NoResults("inspect_sharding")
inspect_sharding_p.def_abstract_eval(lambda aval, *, callback: [])
effectful_primitives.add(inspect_sharding_p)


@inspect_sharding_p.def_impl
def _impl(value, *, callback):
  callback(value.sharding)
  return []


def _lowering(ctx, value, *, callback):
  mctx = ctx.module_context
  mesh = mctx.mesh
  if mesh is None or mesh.size == 1:
    # One device: the layout is known now (the whole value on that device).
    device = mesh._flat_devices_tuple[0] if mesh is not None else client.default_device()
    callback(sharding_lib.SingleDeviceSharding(device))
    return []
  ndim = len(ctx.avals_in[0].shape)

  def on_layout(hlo_sharding):
    if hlo_sharding.is_manual():  # inside a shard_map body: each device's whole piece
      return callback(sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec()))
    return callback(sharding_lib.from_hlo(hlo_sharding, mesh, ndim))

  mctx.keepalive.append(on_layout)  # XLA holds only an encoded pointer to it
  attrs = {
      "call_target_name": ir.StringAttr.get("InspectSharding"),
      "has_side_effect": ir.BoolAttr.get(True),
      "api_version": xla.i32_attr(1),
      "backend_config": ir.StringAttr.get(spmd.encode_inspect_sharding_callback(on_layout)),
  }
  hlo.CustomCallOp.build_generic(results=[value.type], operands=[value], attributes=attrs)
  return []

xla.register_lowering(inspect_sharding_p, _lowering)


def _jvp(primals, tangents, *, callback):
  return inspect_sharding_p.bind(*primals, callback=callback), []

ad.primitive_jvps[inspect_sharding_p] = _jvp
ad.primitive_transposes[inspect_sharding_p] = lambda cts, x, *, callback: [None]


def _batch(args, dims, *, callback):
  inspect_sharding_p.bind(*args, callback=callback)
  return [], []

batching.primitive_batchers[inspect_sharding_p] = _batch
