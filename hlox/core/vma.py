"""Varying manual axes (vma) in types, as JAX's ``check_vma`` shard_map has them.

Inside a traced ``shard_map`` body every value's aval records the manual mesh axes along
which it may differ between devices (``ShapedArray.vma``, printed ``f32[4]{V:i}``). Unlike
the Explicit-axis splits of ``sharding_types`` (kept beside the aval, on the ``Var``), the
vma lives in the aval itself, as in JAX: a body's avals are never seen outside it (the
shard_map equation's own results are global, vma-free types), so nothing else has to learn
to ignore it, and every nested trace (``jit``, control flow, autodiff inside the body)
inherits it from its arguments' avals for free.

How the types are worked out. While a ``check_vma`` body is traced (``tracking``: the
shard_map rules enter it around every trace of a body), ``JaxprTrace.process_primitive``
hands each equation to ``process`` here, which asks the primitive's rule (``rules``,
registered beside the collectives in ``lax``) for the vmas its operands must have and the
vmas of its results:

* the standard rule, for every primitive without one: operands are raised to the union of
  their vmas (``pvary``, a value-preserving primitive, is bound on those that vary along
  fewer axes, so printed jaxprs show it as JAX's do) and results have that union;
* a primitive holding a jaxpr (``jit``, ``scan``, ``cond``, custom derivatives...) keeps its
  operands and its abstract evaluation's result types, which come from the traced body;
* collectives say what they do to the axes they run over (``psum`` removes them...).

With ``config.auto_pcast`` off, operands of the standard rule must already agree (JAX's
error otherwise). With ``config.remove_size_one_mesh_axis_from_type`` on, manual axes of
size 1 are never in a vma (a value cannot differ along an axis with one device).

Outside a body ``active[0]`` is False and tracing pays one list lookup per equation.
"""
from __future__ import annotations

import contextlib

from hlox.config import config
from hlox.core import sharding_types
from hlox.core.tracer import get_aval

# ``rule(in_avals, **params) -> (wanted_in_vmas, out_vma)``: frozensets; ``out_vma`` one for
# all results, a list (one per result), or None to keep the abstract evaluation's types.
rules: dict = {}
active = [False]
# The primitive that marks a value varying along more axes (set by ``lax.varying``).
pvary_p = None
# ``{psum_p: bind(x, axes)}``: how a reduction over manual axes binds in a body (JAX's
# ``psum_invariant``, whose transpose is a ``pvary``), set by ``lax.varying``.
invariant_binders: dict = {}
_bodies: list = []  # the manual axes (in mesh order) of the bodies being traced, innermost last
# The manual axes left out of every vma (size 1, ``config.remove_size_one_mesh_axis_from_type``)
# of each body being traced, innermost last.
_dropped: list = []
_holds_jaxpr: dict = {}  # primitive -> whether its params hold jaxprs (call-like)
# Unreduced/reduced manual axes (``ShapedArray.unreduced``/``reduced``, JAX's ``mat``):
# ``ur_rules[prim](in_avals, **params) -> (unreduced, reduced)`` (a list of pairs for
# several results) for the primitives that change them (the casts and collectives of
# ``lax.varying``); the others follow their Explicit-axis rule
# (``sharding_types.manual_partial_axes``).
ur_rules: dict = {}
# The primitives whose rule runs even when no operand is unreduced or reduced (the casts).
ur_sources: set = set()
# The no-op cast from reduced to varying (JAX's ``reduced_vary_cast``), set by ``lax``.
reduced_vary_cast_p = None


@contextlib.contextmanager
def tracking(manual_axes, size_one=()):
  """Work out vmas for everything traced inside (a ``check_vma`` body over
  ``manual_axes``, in the mesh's order: those of the enclosing bodies too); ``size_one``:
  the axes of size 1, left out of every vma when ``config.remove_size_one_mesh_axis_from_type``
  is on."""
  _bodies.append(tuple(manual_axes))
  _dropped.append(frozenset(size_one) if config.remove_size_one_mesh_axis_from_type
                  else frozenset())
  active[0] = True
  try:
    yield
  finally:
    _bodies.pop()
    _dropped.pop()
    active[0] = bool(_bodies)


@contextlib.contextmanager
def suspended():
  """No vma tracking inside (e.g. a body of a shard_map with ``check_vma=False``)."""
  saved, saved_dropped = list(_bodies), list(_dropped)
  _bodies.clear()
  _dropped.clear()
  active[0] = False
  try:
    yield
  finally:
    _bodies[:] = saved
    _dropped[:] = saved_dropped
    active[0] = bool(_bodies)


def dropped() -> frozenset:
  """The manual axes no vma holds in the innermost body (size 1, when so configured)."""
  return _dropped[-1] if _dropped else frozenset()


def manual_axes() -> tuple:
  """The manual axes of the innermost body being traced (() outside any)."""
  return _bodies[-1] if _bodies else ()


def in_order(vma) -> tuple:
  """``vma`` in the mesh's order (how types print it)."""
  order = manual_axes()
  known = [a for a in order if a in vma]
  return tuple(known) + tuple(sorted((a for a in vma if a not in order), key=str))


def of(aval) -> frozenset:
  return frozenset(getattr(aval, "_vma", ()))


def typed(aval, vma):
  """``aval`` varying along ``vma`` (other types are returned as they are)."""
  if _dropped and _dropped[-1]:
    vma = frozenset(vma) - _dropped[-1]
  if not hasattr(aval, "_vma") or of(aval) == vma:
    return aval
  return aval.update(vma=in_order(vma))


def standard_rule(in_avals, /, **params):
  union = frozenset().union(*[of(a) for a in in_avals])
  return [union] * len(in_avals), union


def _holds_a_jaxpr(primitive, params) -> bool:
  known = _holds_jaxpr.get(primitive)
  if known is None:
    # Duck-typed (a Jaxpr has equations, a ClosedJaxpr its jaxpr): ``jaxpr`` imports us.
    is_jaxpr = lambda p: hasattr(p, "eqns") or hasattr(p, "jaxpr")  # noqa: E731
    known = any(is_jaxpr(p) or (isinstance(p, (tuple, list)) and p and is_jaxpr(p[0]))
                for p in params.values())
    _holds_jaxpr[primitive] = known
  return known


def process(trace, primitive, tracers, params, record):
  """Record ``primitive`` on ``tracers`` (``record(primitive, tracers, params)`` is the
  trace's ordinary path) with operands raised to the vmas its rule wants and results typed
  with the vmas it gives."""
  if primitive is pvary_p or _holds_a_jaxpr(primitive, params):
    rule = rules.get(primitive)
    if rule is None:
      return record(primitive, tracers, params)
  else:
    rule = rules.get(primitive, standard_rule)
  in_vmas = [of(t._aval) for t in tracers]
  if rule is standard_rule and not config.auto_pcast:
    check_agree(primitive, [t._aval for t in tracers])
  wanted, out_vma = rule([t._aval for t in tracers], **params)
  if _dropped[-1]:
    wanted = [w - _dropped[-1] for w in wanted]
  tracers = [t if w <= v else _pvary(trace, t, w - v, record)
             for t, v, w in zip(tracers, in_vmas, wanted)]
  partial = primitive in ur_sources or any(getattr(t._aval, "_ur", ()) for t in tracers)
  outs = record(primitive, tracers, params)
  if partial:
    out_ur = _out_partial_axes(primitive, [t._aval for t in tracers],
                               [t._aval for t in (outs if primitive.multiple_results
                                                  else [outs])], params)
  if out_vma is None and not partial:
    return outs
  many = primitive.multiple_results
  out_list = outs if many else [outs]
  if out_vma is None:
    out_vma = [of(t._aval) for t in out_list]
  elif isinstance(out_vma, frozenset):
    out_vma = [out_vma] * len(out_list)
  elif not many:
    out_vma = [out_vma]
  for i, (t, v) in enumerate(zip(out_list, out_vma)):
    aval = typed(t._aval, v)
    if partial or getattr(aval, "_ur", ()):
      u, r = out_ur[i] if partial else (frozenset(), frozenset())
      aval = aval.update(unreduced=u, reduced=r)
    t._aval = t._var.aval = aval
  return outs


def _out_partial_axes(primitive, in_avals, out_avals, params) -> list:
  """Per result, its unreduced and reduced manual axes."""
  rule = ur_rules.get(primitive)
  if rule is not None:
    out = rule(in_avals, **params)
    return list(out) if primitive.multiple_results else [out]
  return sharding_types.manual_partial_axes(primitive, in_avals, out_avals, params,
                                            manual_axes())


def check_agree(primitive, in_avals):
  """JAX's error (``config.auto_pcast`` off) for operands varying along different axes."""
  vmas = [of(a) for a in in_avals if hasattr(a, "_vma")]
  if any(v != vmas[0] for v in vmas[1:]):
    raise ValueError(
        f"Primitive {primitive.name} requires varying manual axes to match, but got "
        f"{vmas}. Please open an issue at https://github.com/jax-ml/jax/issues and as a "
        "temporary workaround pass the check_vma=False argument to `jax.shard_map`")


def _pvary(trace, tracer, axes, record):
  aval = tracer._aval
  if getattr(aval, "_ur", ()) and aval.reduced == axes:
    # As JAX: a value reduced along exactly those axes is cast to varying (its cotangent
    # stays a partial sum there rather than being summed).
    out = record(reduced_vary_cast_p, [tracer], {"axes": in_order(axes)})
    out._aval = out._var.aval = typed(aval, of(aval) | axes).update(
        unreduced=aval.unreduced, reduced=aval.reduced - axes)
    return out
  out = record(pvary_p, [tracer], {"axes": in_order(axes)})
  out._aval = out._var.aval = typed(out._aval, of(tracer._aval) | axes)
  return out


# --- control flow: carries and branches must agree (JAX pvary-s to make them) -----------

def raise_to(x, vma):
  """``x``, ``pvary``-ed along the axes of ``vma`` it does not vary along yet."""
  missing = frozenset(vma) - of(get_aval(x)) - dropped()
  return pvary_p.bind(x, axes=in_order(missing)) if missing else x


def promote_carries(leaves, in_avals, out_avals):
  """Initial loop carries ``pvary``-ed along the axes the body's carry outputs vary along
  (as JAX: a loop's carry has one type). Returns the new leaves and whether any changed."""
  if not active[0]:
    return leaves, False
  new = [raise_to(x, of(a) | of(b)) for x, a, b in zip(leaves, in_avals, out_avals)]
  return new, any(n is not x for n, x in zip(new, leaves))


def branch_outputs_joined(out_avals_per_branch):
  """Per output, the union of the branches' vmas, or None when they all agree."""
  if not active[0]:
    return None
  joined = [frozenset().union(*[of(a) for a in avals])
            for avals in zip(*out_avals_per_branch)]
  if all(of(a) == v for avals in out_avals_per_branch for a, v in zip(avals, joined)):
    return None
  return joined
