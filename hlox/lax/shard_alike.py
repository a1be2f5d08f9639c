"""``shard_alike_p``: two values of one shape that XLA's partitioner must lay out the same
way, whatever layout it picks (``sdy.sharding_group``). Numerically the identity on both.

Outside a partitioned program (no mesh) there is nothing to tie and the lowering passes the
values through. Its JVP and transpose tie the tangents (cotangents) the same way when both
are nonzero; under ``vmap`` both operands get the batch dimension at the same place.
"""
from __future__ import annotations

from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax.call import jit_p

from jaxlib.mlir.dialects import sdy

__all__ = ["shard_alike_p"]


class _ShardAlike(Primitive):
  multiple_results = True


shard_alike_p = _ShardAlike("shard_alike")
shard_alike_p.def_abstract_eval(lambda x, y: [x, y])


def _impl(x, y):
  # Eagerly: a one-equation program, so the partitioner picks the common layout (the
  # sharded operand's, when one of them is sharded).
  ax, ay = get_aval(x), get_aval(y)
  a, b, c, d = Var(ax), Var(ay), Var(ax), Var(ay)
  jaxpr = ClosedJaxpr(Jaxpr([], [a, b], [c, d], [JaxprEqn([a, b], [c, d], shard_alike_p, {})]),
                      [])
  return jit_p.bind(x, y, jaxpr=jaxpr, name="shard_alike", donated_invars=(False, False),
                    keep_unused=False, inline=False)

shard_alike_p.def_impl(_impl)


def _lowering(ctx, x, y):
  mctx = ctx.module_context
  if mctx.mesh is None:
    return [x, y]  # a one-device program: nothing to partition
  group = mctx.sharding_groups
  mctx.sharding_groups += 1
  sdy.sharding_group(x, group)
  sdy.sharding_group(y, group)
  return [x, y]

xla.register_lowering(shard_alike_p, _lowering)


def _both_nonzero(a, b):
  return type(a) is not ad.Zero and type(b) is not ad.Zero


def _jvp(primals, tangents):
  outs = shard_alike_p.bind(*primals)
  tx, ty = tangents
  return outs, (shard_alike_p.bind(tx, ty) if _both_nonzero(tx, ty) else [tx, ty])

ad.primitive_jvps[shard_alike_p] = _jvp


def _transpose(cts, x, y):
  ct_x, ct_y = cts
  if _both_nonzero(ct_x, ct_y):
    ct_x, ct_y = shard_alike_p.bind(ct_x, ct_y)
  return [ct_x if ad.is_undefined_primal(x) else None,
          ct_y if ad.is_undefined_primal(y) else None]

ad.primitive_transposes[shard_alike_p] = _transpose


def _batch(vals, dims):
  (x, y), (xd, yd) = vals, dims
  if xd is batching.not_mapped and yd is batching.not_mapped:
    return shard_alike_p.bind(x, y), [xd, yd]
  if xd is batching.not_mapped:
    x = batching.matchaxis(x, None, yd, y.shape[yd])
    xd = yd
  elif yd is batching.not_mapped or yd != xd:
    y = batching.matchaxis(y, None if yd is batching.not_mapped else yd, xd, x.shape[xd])
  return shard_alike_p.bind(x, y), [xd, xd]

batching.primitive_batchers[shard_alike_p] = _batch
