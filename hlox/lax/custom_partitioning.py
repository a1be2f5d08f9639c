"""``custom_partitioning_p``: a function whose partitioning over a mesh the user writes
(``hlox.experimental.custom_partitioning``, JAX's ``jax.experimental.custom_partitioning``).

Its parameters: ``call`` (the function's closed jaxpr, what runs where nothing is
partitioned: eagerly, in a one-device program, inside a fully manual ``shard_map``), the
flat arguments' and results' trees, the user's ``partition`` callback (and, kept for
GSPMD-style code, ``propagate_user_sharding`` / ``infer_sharding_from_operands``),
``decode_shardings``, the Shardy ``sharding_rule`` (an ``#sdy.op_sharding_rule`` text, or
None) and the static arguments.

In a program partitioned over a mesh it lowers to a ``stablehlo.custom_call
@HloxCustomSPMDPartitioning`` whose ``backend_config`` names this lowering's callbacks. (JAX
names its call ``CustomSPMDPartitioning``; XLA keeps the first partitioner registered for a
target name, and a JAX imported into the same process registers its own under that name, so
hlox's call has a name of its own.) Shardy
propagates layouts through it by its sharding rule; XLA's SPMD partitioner then calls
``partition`` (``runtime/custom_partitioner.py``) with the operands' and result's layouts,
traces the returned ``lower_fn`` on one device's pieces (the mesh's axes bound, so it may
use collectives) and splices that program in place of the call.
"""
from __future__ import annotations

import io
import itertools
import os
import weakref

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.interpreters import xla
from hlox.interpreters.mlir import custom_call
from hlox.lax import sharding_rule
from hlox.lax.shard_map import _body_context
from hlox.runtime import custom_partitioner
from hlox.runtime import sharding as sharding_lib

from jaxlib.mlir import ir

# hlox's own target name: see the module docstring.
CALL_TARGET = "HloxCustomSPMDPartitioning"

custom_partitioning_p = Primitive("custom_partitioning")
custom_partitioning_p.multiple_results = True

# ``(shape, dtype, sharding) -> struct`` given to the user's callbacks: the public
# ``ShapeDtypeStruct``, handed over by ``hlox.experimental.custom_partitioning``.
make_shape_struct = None


def _abstract_eval(*avals, call, **_):
  return list(call.out_avals)

custom_partitioning_p.def_abstract_eval(_abstract_eval)
# Over Explicit mesh axes the results' types are split as the function's are.
sharding_types.sharding_rules[custom_partitioning_p] = sharding_types.call_rule("call")


def _impl(*args, call, **_):
  return eval_jaxpr(call.jaxpr, call.consts, *args)

custom_partitioning_p.def_impl(_impl)


class _CallbackInfo:
  """What the partitioner's callbacks need of one lowered call."""

  __slots__ = ("params", "mesh", "__weakref__")

  def __init__(self, params, mesh):
    self.params = params
    self.mesh = mesh

  def sharding(self, hlo, ndim: int):
    """A layout XLA gives as a NamedSharding over the mesh (a spec per dimension), or as
    a GSPMDSharding without ``decode_shardings``."""
    if hlo is None:
      return None
    if not self.params["decode_shardings"]:
      return sharding_lib.GSPMDSharding(self.mesh._flat_devices_tuple, hlo)
    s = sharding_lib.from_hlo(hlo, self.mesh, ndim)
    if isinstance(s, sharding_lib.NamedSharding) and len(s.spec) < ndim:
      s = sharding_lib.NamedSharding(self.mesh, sharding_lib.PartitionSpec(
          *s.spec, *([None] * (ndim - len(s.spec)))))
    return s

  def struct(self, shape, hlo):
    dims = tuple(shape.dimensions())
    return make_shape_struct(dims, shape.numpy_dtype(), self.sharding(hlo, len(dims)))


# Lowered calls by their ``backend_config`` key; the lowered module keeps each alive
# (``ModuleContext.keepalive``) until it is compiled. The keys carry a per-process token so
# that a persistent compilation cache never mistakes another process's call for this one.
_infos = weakref.WeakValueDictionary()
_token = os.urandom(6).hex()
_counter = itertools.count()


def _elements(shape, sharding):
  if shape.is_tuple():
    return list(shape.tuple_shapes()), list(sharding.tuple_elements())
  return [shape], [sharding]


def _to_hlo(tree, shardings, shapes) -> list:
  flat = tree.flatten_up_to(shardings)
  out = []
  for s, shape in zip(flat, shapes):
    if not isinstance(s, sharding_lib.Sharding):
      raise ValueError("Custom Partitioning rules must return Sharding.")
    out.append(s.hlo(len(shape.dimensions())))
  return out


def _pack(shape, shardings):
  return (custom_partitioner.tuple_sharding(shape, shardings) if shape.is_tuple()
          else shardings[0])


def _prop_user_sharding(user_sharding, shape, key):
  info = _infos[key.decode() if isinstance(key, bytes) else key]
  rule = info.params["propagate_user_sharding"]
  if rule is None:
    return user_sharding
  shapes, shardings = _elements(shape, user_sharding)
  out_tree = info.params["out_tree"]
  user = out_tree.unflatten([info.struct(s, h) for s, h in zip(shapes, shardings)])
  result = rule(*info.params["static_args"], info.mesh, user)
  return _pack(shape, _to_hlo(out_tree, result, shapes))


def _infer_sharding(arg_shapes, arg_shardings, result_shape, key):
  info = _infos[key.decode() if isinstance(key, bytes) else key]
  p = info.params
  rule = p["infer_sharding_from_operands"]
  if rule is None:  # (Shardy propagates by the sharding rule; this is GSPMD's question)
    return arg_shardings[0] if arg_shardings else None
  result_shapes = (list(result_shape.tuple_shapes()) if result_shape.is_tuple()
                   else [result_shape])
  args = p["in_tree"].unflatten([info.struct(s, h) for s, h in zip(arg_shapes, arg_shardings)])
  results = p["out_tree"].unflatten(
      [ShapedArray(tuple(s.dimensions()), s.numpy_dtype()) for s in result_shapes])
  result = rule(*p["static_args"], info.mesh, args, results)
  return _pack(result_shape, _to_hlo(p["out_tree"], result, result_shapes))


def _partition(arg_shapes, arg_shardings, result_shape, result_sharding, key):
  info = _infos[key.decode() if isinstance(key, bytes) else key]
  p = info.params
  result_shapes, result_hlos = _elements(result_shape, result_sharding)
  args = p["in_tree"].unflatten([info.struct(s, h) for s, h in zip(arg_shapes, arg_shardings)])
  results = p["out_tree"].unflatten([info.struct(s, h)
                                     for s, h in zip(result_shapes, result_hlos)])
  mesh, lower_fn, result_shardings, new_arg_shardings = p["partition"](
      *p["static_args"], info.mesh, args, results)
  out_hlos = _to_hlo(p["out_tree"], result_shardings, result_shapes)
  in_hlos = _to_hlo(p["in_tree"], new_arg_shardings, arg_shapes)
  local_in = [ShapedArray(tuple(h.tile(s).dimensions()), s.numpy_dtype())
              for h, s in zip(in_hlos, arg_shapes)]
  local_out = [(tuple(h.tile(s).dimensions()), np.dtype(s.numpy_dtype()))
               for h, s in zip(out_hlos, result_shapes)]
  module = _piece_module(lower_fn, p["in_tree"], local_in, mesh or info.mesh, local_out,
                         p.get("platform"))
  return module, in_hlos, _pack(result_shape, out_hlos)


def _piece_module(lower_fn, in_tree, local_in, mesh, local_out, platform) -> bytes:
  """The bytecode of the program ``lower_fn`` is on one device's pieces: the mesh's axes
  bound (its collectives run over the mesh's devices, as in a ``shard_map`` body)."""
  def flat_fn(*xs):
    out = lower_fn(*in_tree.unflatten(list(xs)))
    return tree_util.tree_leaves(out)
  with _body_context(mesh, tuple(mesh.axis_names), False):
    closed = trace_to_jaxpr(flat_fn, local_in, "custom_partitioning lower_fn")
  got = [(tuple(a.shape), np.dtype(a.dtype)) for a in closed.out_avals]
  if got != local_out:
    raise ValueError(f"Mismatch in result shapes. {got} vs {local_out}")

  def body(mctx, jaxpr, ir_consts, ir_args):
    # As a fully manual shard_map body: collectives' groups are positions in the mesh.
    mctx.mesh, mctx.manual, mctx.auto_axes = mesh, True, ()
    mctx.axis_env, mctx.num_replicas = tuple(mesh.shape.items()), mesh.size
    return xla.lower_jaxpr(mctx, jaxpr, ir_consts, ir_args)

  lowered = xla.lower_jaxpr_to_module(closed, "tmp_xla_computation", platform=platform,
                                      body=body)
  buf = io.BytesIO()
  with lowered.context:
    lowered.module.operation.write_bytecode(buf)
  return buf.getvalue()


def _lowering(ctx, *args, call, **params):
  mctx = ctx.module_context
  mesh = mctx.mesh
  if mesh is None or mesh.size == 1 or mctx.manual:
    # nothing to partition (one device, or inside a manual body): the function itself
    consts = [xla.ir_constant(np.asarray(c)) for c in call.consts]
    return xla.lower_jaxpr(mctx, call.jaxpr, consts, list(args))
  custom_partitioner.register(CALL_TARGET, _prop_user_sharding, _partition, _infer_sharding)
  info = _CallbackInfo(dict(params, platform=mctx.platform), mesh)
  key = f"hlox_custom_partitioning_{_token}_{next(_counter)}"
  _infos[key] = info
  mctx.keepalive.append(info)
  extra = {}
  rule = _rule(params["sharding_rule"], params["static_args"], mesh, call)
  if rule is not None:
    extra["sdy.sharding_rule"] = ir.Attribute.parse(sharding_rule.rule_text(
        rule, [a.shape for a in call.in_avals], [a.shape for a in call.out_avals]))
  op = custom_call(CALL_TARGET, result_types=[xla.aval_to_ir_type(a) for a in call.out_avals],
                   operands=list(args), backend_config=key, extra_attributes=extra)
  return list(op.results)

xla.register_lowering(custom_partitioning_p, _lowering)


def _rule(rule, static_args, mesh, call):
  """The call's ``SdyShardingRule`` (a callable rule is asked, as JAX does, with the static
  arguments, the mesh and the operands' and results' MLIR types)."""
  if rule is None or isinstance(rule, sharding_rule.SdyShardingRule):
    return rule
  made = rule(*static_args, mesh, [xla.aval_to_ir_type(a) for a in call.in_avals],
              [xla.aval_to_ir_type(a) for a in call.out_avals])
  extra = {}
  if isinstance(made, (list, tuple)) and len(made) == 2:
    made, extra = made
  if isinstance(made, str):
    return sharding_rule.str_to_sdy_sharding_rule(made, **extra)
  if not isinstance(made, sharding_rule.SdyShardingRule):
    raise ValueError("sharding_rule callable must produce either an SdyShardingRule object "
                     "or an Einsum-like notation string.")
  return made
