"""The roofline interpreter: walks a jaxpr once, adding up each equation's
``RooflineResult`` (from the rule registered for its primitive) and tracking the bytes of
the values alive at each step, whose maximum is the peak memory.

Calls (``jit``, ``custom_jvp_call``/``custom_vjp_call``, ``remat2``, ...) are opened: their
primal body is counted in place of the call. A primitive without a rule counts nothing and
is logged at WARNING. ``roofline(f, mesh, in_specs, out_specs)`` counts ``f`` as a
``shard_map`` body over ``mesh``, so collectives see per-device shapes and mesh axis sizes.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Sequence

import numpy as np

from hlox import api, autodiff
from hlox import numpy as jnp
from hlox import tree_util
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import ClosedJaxpr, Literal, dce_jaxpr
from hlox.lax.shard_map import shard_map, shard_map_p
from hlox.sharding import NamedSharding

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RooflineRuleContext:
  """What a rule is told about its equation beyond the operands' shapes."""
  name_stack: str
  primitive: Any
  avals_in: Sequence[Any]
  avals_out: Sequence[Any]
  jaxpr_eqn_ctx: Any
  mesh: Any
  pin_lhs_in_vmem: bool
  pin_rhs_in_vmem: bool


@dataclasses.dataclass(frozen=True, kw_only=True)
class RooflineShape:
  """A value's shape and dtype, with its element count and bytes."""
  shape: tuple
  dtype: Any

  @classmethod
  def from_aval(cls, aval) -> "RooflineShape":
    if not isinstance(aval, ShapedArray):
      raise TypeError(f"Expected ShapedArray, got {type(aval)}.")
    return cls(shape=tuple(aval.shape), dtype=np.dtype(aval.dtype))

  @property
  def size(self) -> int:
    return int(np.prod(self.shape, dtype=np.int64))

  @property
  def bytes(self) -> int:
    return int(self.size * self.dtype.itemsize)

  @classmethod
  def total_bytes(cls, avals) -> int:
    return sum(cls.from_aval(a).bytes for a in avals)


def _merge(d1: dict, d2: dict) -> dict:
  return {k: d1.get(k, 0) + d2.get(k, 0) for k in set(d1) | set(d2)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class RooflineResult:
  """Counts for a program: ``flops`` (matrix products), ``unfused_flops`` (every
  operation, as if none were fused), ``ici_bytes``/``ici_latency`` per mesh axis
  (collectives: bytes over the busiest link, hops), ``hbm_bytes``/``unfused_hbm_bytes``
  (memory traffic), ``peak_hbm_bytes`` (most bytes alive at once). Results add up with
  ``+`` (peaks take the maximum) and scale with ``*``."""
  flops: int = 0
  unfused_flops: int = 0
  ici_bytes: dict = dataclasses.field(default_factory=dict)
  ici_latency: dict = dataclasses.field(default_factory=dict)
  hbm_bytes: int = 0
  peak_hbm_bytes: int = 0
  unfused_hbm_bytes: int = 0

  @classmethod
  def zeros(cls) -> "RooflineResult":
    return cls()

  def __add__(self, other: "RooflineResult") -> "RooflineResult":
    return RooflineResult(
        flops=self.flops + other.flops,
        unfused_flops=self.unfused_flops + other.unfused_flops,
        ici_bytes=_merge(self.ici_bytes, other.ici_bytes),
        ici_latency=_merge(self.ici_latency, other.ici_latency),
        hbm_bytes=self.hbm_bytes + other.hbm_bytes,
        peak_hbm_bytes=max(self.peak_hbm_bytes, other.peak_hbm_bytes),
        unfused_hbm_bytes=self.unfused_hbm_bytes + other.unfused_hbm_bytes)

  def __mul__(self, constant) -> "RooflineResult":
    scale = lambda v: int(v * constant)  # noqa: E731
    return RooflineResult(
        flops=scale(self.flops), unfused_flops=scale(self.unfused_flops),
        ici_bytes={k: scale(v) for k, v in self.ici_bytes.items()},
        ici_latency={k: scale(v) for k, v in self.ici_latency.items()},
        hbm_bytes=scale(self.hbm_bytes), peak_hbm_bytes=scale(self.peak_hbm_bytes),
        unfused_hbm_bytes=scale(self.unfused_hbm_bytes))

  __rmul__ = __mul__


_rules: dict = {}  # primitive -> rule(ctx, *RooflineShape, **params) -> RooflineResult

# The parameters holding a call's primal body, opened in place of the call.
_BODY_PARAMS = ("jaxpr", "call_jaxpr")


def register_roofline(prim):
  """Decorator: ``rule(ctx, *operand_shapes, **params)`` gives ``prim``'s RooflineResult."""
  def register(rule):
    _rules[prim] = rule
    return rule
  return register


def register_standard_roofline(prim) -> None:
  """Count ``prim`` as free (data movement XLA folds away, bookkeeping primitives)."""
  _rules[prim] = lambda ctx, *args, **params: RooflineResult.zeros()


def _aval(v):
  return v.aval


def _body(params):
  for name in _BODY_PARAMS:
    body = params.get(name)
    if body is not None:
      return body.jaxpr if isinstance(body, ClosedJaxpr) else body
  return None


def _last_uses(jaxpr) -> dict:
  """Each variable -> the last equation reading it (None: read by the outputs or never)."""
  last = {}
  for eqn in jaxpr.eqns:
    for v in eqn.invars:
      if type(v) is not Literal:
        last[v] = eqn
  for v in jaxpr.outvars:
    if type(v) is not Literal:
      last[v] = None
  return last


def _interpret(name: str, jaxpr, mesh, pin_lhs: bool, pin_rhs: bool) -> RooflineResult:
  result = RooflineResult.zeros()
  alive = {v: RooflineShape.from_aval(v.aval) for v in (*jaxpr.constvars, *jaxpr.invars)}
  last = _last_uses(jaxpr)
  current = sum(s.bytes for s in alive.values())
  peak = current
  for eqn in jaxpr.eqns:
    body = _body(eqn.params)
    if body is not None:
      result += _interpret(f"{eqn.primitive.name}({name})", body, mesh, pin_lhs, pin_rhs)
    else:
      rule = _rules.get(eqn.primitive)
      if rule is None:
        logger.warning("No roofline rule for %s, skipping...", eqn.primitive)
      else:
        ctx = RooflineRuleContext(
            name_stack=name, primitive=eqn.primitive,
            avals_in=[_aval(v) for v in eqn.invars], avals_out=[_aval(v) for v in eqn.outvars],
            jaxpr_eqn_ctx=eqn.ctx, mesh=mesh, pin_lhs_in_vmem=pin_lhs, pin_rhs_in_vmem=pin_rhs)
        shapes = [RooflineShape.from_aval(_aval(v)) for v in eqn.invars]
        result += rule(ctx, *shapes, **eqn.params)
    # The results are alive from here; operands read for the last time are freed.
    for v in eqn.outvars:
      shape = RooflineShape.from_aval(v.aval)
      alive[v] = shape
      current += shape.bytes
    for v in {v for v in eqn.invars if type(v) is not Literal and last.get(v, 0) is eqn}:
      current -= alive.pop(v).bytes
    peak = max(peak, current)
  return result + RooflineResult(peak_hbm_bytes=peak)


def _with_vjp(f: Callable) -> Callable:
  # The backward pass of ``f``, with bfloat16 cotangents (what training would send back).
  def pulled_back(*args):
    primals, f_vjp = autodiff.vjp(f, *args)
    return f_vjp(tree_util.tree_map(lambda x: x.astype(jnp.bfloat16), primals))
  return pulled_back


def _qualname(f) -> str:
  return getattr(f, "__qualname__", getattr(f, "__name__", type(f).__name__))


def roofline(f: Callable, mesh=None, in_specs=None, out_specs=None, *,
             pin_lhs_in_vmem: bool = False, pin_rhs_in_vmem: bool = False,
             vjp: bool = False, print_jaxpr: bool = False) -> Callable:
  """``roofline(f, ...)(*args)`` is ``(output shapes, RooflineResult)`` of ``f`` (of its
  backward pass with ``vjp=True``) on ``args`` (arrays or ``ShapeDtypeStruct``s). With a
  ``mesh`` and both specs, ``f`` is counted as a ``shard_map`` body over the mesh (per-device
  shapes; collectives cost ICI traffic) and the output shapes carry the out specs'
  shardings. ``pin_lhs_in_vmem``/``pin_rhs_in_vmem``: matrix products' left/right operands
  stay in on-chip memory (no HBM traffic)."""
  def wrapped(*args):
    fun = f
    sharded = mesh is not None and in_specs is not None and out_specs is not None
    if sharded:
      fun = shard_map(fun, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    if vjp:
      fun = _with_vjp(fun)
    closed, out_shapes = api.make_jaxpr(fun, return_shape=True)(*args)
    if out_specs is not None and mesh is not None:
      flat, treedef = tree_util.tree_flatten(out_shapes)
      specs = tree_util.broadcast_prefix(out_specs, out_shapes)
      flat = [api.ShapeDtypeStruct(s.shape, s.dtype, sharding=NamedSharding(mesh, spec))
              for s, spec in zip(flat, specs)]
      out_shapes = tree_util.tree_unflatten(treedef, flat)
    jaxpr, _ = dce_jaxpr(closed.jaxpr)
    bodies = [e for e in jaxpr.eqns if e.primitive is shard_map_p]
    if bodies:  # count one device's program
      jaxpr = _body(bodies[-1].params)
    if print_jaxpr:
      print(jaxpr)
    return out_shapes, _interpret(f"roofline({_qualname(f)})", jaxpr, mesh,
                                  pin_lhs_in_vmem, pin_rhs_in_vmem)
  wrapped.__name__ = getattr(f, "__name__", "roofline")
  wrapped.__doc__ = getattr(f, "__doc__", None)
  return wrapped


def roofline_and_grad(f: Callable, mesh, in_specs, out_specs, *,
                      pin_lhs_in_vmem: bool = False, pin_rhs_in_vmem: bool = False,
                      print_jaxpr: bool = False) -> Callable:
  """``(output shapes, forward RooflineResult, backward RooflineResult)``: the backward
  pass is counted on bfloat16 arguments (int32 ones stay int32)."""
  opts = dict(pin_lhs_in_vmem=pin_lhs_in_vmem, pin_rhs_in_vmem=pin_rhs_in_vmem,
              print_jaxpr=print_jaxpr)

  def wrapped(*args):
    shapes, forward = roofline(f, mesh, in_specs, out_specs, **opts)(*args)
    low = tree_util.tree_map(
        lambda x: api.ShapeDtypeStruct(
            x.shape, jnp.int32 if x.dtype == jnp.int32 else jnp.bfloat16,
            sharding=getattr(x, "sharding", None)), args)
    _, backward = roofline(f, mesh, in_specs, out_specs, vjp=True, **opts)(*low)
    return shapes, forward, backward
  return wrapped
