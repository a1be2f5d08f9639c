"""Discharge: a jaxpr that mutates array references, made pure.

``discharge_jaxpr`` turns a jaxpr whose inputs may be references (``AbstractRef``) into one
that takes the references' *values* in their place and returns, after its own outputs, the
final value of each reference input. References the jaxpr creates itself (``new_ref``) become
plain values threaded from equation to equation. Lowering (``jit``), the control-flow
primitives (a loop body that writes a closed-over reference threads its value as a carry) and
reverse-mode autodiff (a linear jaxpr with tangent references is discharged, then transposed)
all use it.

The rule table ``discharge_rules`` is filled beside the primitives (``lax/state.py``); this
interpreter knows none of them.
"""
from __future__ import annotations

from typing import Callable

from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, Literal, convert_constvars, is_effectful,
                             trace_to_jaxpr)
from hlox.core.refs import is_ref_aval
from hlox.core import source_info as source_info_lib

# primitive -> rule(ref values (None where the operand is no reference), *operands, **params)
#   -> (new values of the operands that are references (None: unchanged), outputs)
discharge_rules: dict = {}
_creators: set = set()  # primitives whose output is a new reference (its value: the output)
_invalidators: set = set()  # primitives after which their reference operand is dead (freeze)


def register(primitive, rule: Callable, creates: bool = False,
             invalidates: bool = False) -> None:
  discharge_rules[primitive] = rule
  if creates:
    _creators.add(primitive)
  if invalidates:
    _invalidators.add(primitive)


def jaxpr_has_refs(jaxpr: Jaxpr) -> bool:
  """Whether ``jaxpr`` takes references or operates on them (its nested jaxprs are pure:
  the primitives holding them discharge their bodies when bound)."""
  if any(is_ref_aval(v.aval) for v in jaxpr.invars) or any(
      is_ref_aval(v.aval) for v in jaxpr.constvars):
    return True
  return any(e.primitive in _creators or any(is_ref_aval(v.aval) for v in e.invars)
             for e in jaxpr.eqns)


def refs_only_among_consts(jaxpr: Jaxpr) -> bool:
  """Whether the only references ``jaxpr`` touches are its consts: the caller's own
  references (a custom_vjp residual its backward rule writes into), which a transposition
  keeps as references so that those writes land in them, as JAX's."""
  const_refs = {v for v in jaxpr.constvars if is_ref_aval(v.aval)}
  if not const_refs or any(is_ref_aval(v.aval) for v in jaxpr.invars):
    return False
  return not any(e.primitive in _creators or any(
      type(v) is not Literal and is_ref_aval(v.aval) and v not in const_refs for v in e.invars)
      for e in jaxpr.eqns)


def _nested_jaxprs(params):
  for p in params.values():
    for q in (p if isinstance(p, (tuple, list)) else (p,)):
      if isinstance(q, ClosedJaxpr):
        yield q.jaxpr
      elif isinstance(q, Jaxpr):
        yield q


def effects_stay_inside(jaxpr: Jaxpr) -> bool:
  """Whether running ``jaxpr`` has no effect but its outputs: its only effectful equations
  (its nested programs' included) are operations on references it creates itself, which
  nothing outside can see. A call of such a program whose outputs are unused may be
  dropped (as JAX's DCE drops internal reference effects)."""
  if any(is_ref_aval(v.aval) for v in jaxpr.invars) or any(
      is_ref_aval(v.aval) for v in jaxpr.constvars):
    return False
  for eqn in jaxpr.eqns:
    if is_effectful(eqn) and eqn.primitive not in discharge_rules:
      return False
    if not all(effects_stay_inside(j) for j in _nested_jaxprs(eqn.params)):
      return False
  return True


def refs_made_unknown(jaxpr: Jaxpr, in_unknowns) -> set:
  """The references ``jaxpr`` creates that partial evaluation must stage as unknown: those
  an equation with an unknown operand touches (a write of an unknown value, a read at an
  unknown index). Such a reference cannot live on the known side, since the unknown side
  would need it as a residual; staging its creation (its initial value a residual) keeps
  every use of it on one side. A fixpoint: an unknown reference makes its reads unknown."""
  if not jaxpr_has_refs(jaxpr):
    return set()
  created = {e.outvars[0] for e in jaxpr.eqns if e.primitive in _creators}
  forced: set = set()
  while True:
    unknown = {v for v, u in zip(jaxpr.invars, in_unknowns) if u} | forced
    grew = False
    for eqn in jaxpr.eqns:
      ins = [v for v in eqn.invars if type(v) is not Literal]
      if any(v in unknown for v in ins):
        unknown.update(eqn.outvars)
        for v in ins:
          if v in created and v not in forced:
            forced.add(v)
            unknown.add(v)
            grew = True
    if not grew:
      return forced


def discharge_jaxpr(closed: ClosedJaxpr) -> ClosedJaxpr:
  """The pure form of ``closed``: each reference input takes the reference's value, and the
  final values of the reference inputs follow the outputs, in input order. Reference
  consts are not allowed here (make them inputs first, ``convert_constvars``)."""
  jaxpr = closed.jaxpr
  if any(is_ref_aval(v.aval) for v in jaxpr.constvars):
    raise ValueError("discharge_jaxpr: references among the consts; make them inputs first")
  in_avals = [v.aval.inner_aval if is_ref_aval(v.aval) else v.aval for v in jaxpr.invars]
  ref_positions = [i for i, v in enumerate(jaxpr.invars) if is_ref_aval(v.aval)]

  def run(*args):
    return eval_discharged(jaxpr, closed.consts, args, ref_positions)

  return trace_to_jaxpr(run, in_avals, debug_info=jaxpr.debug_info or "")


def discharge_call(closed: ClosedJaxpr, n_args: int, bind: Callable) -> tuple[list, list]:
  """The discharge rule of a call primitive (``jit``, ``checkpoint``, ``shard_map``...)
  whose body ``closed`` takes references: the call is bound again on the body's pure form
  (``discharge_jaxpr``, its consts made leading inputs), which takes the references' values
  and hands back their final values after its outputs.

  ``bind(pure, consts, ref_positions)`` binds the primitive on ``*consts, *args`` (the rule's
  ``n_args`` operands, references given as their values) with body ``pure`` and returns its
  outputs; the primitive adjusts its other parameters there (one more entry per const, per
  reference output). Returns what a discharge rule returns: each operand's new value (None
  for the operands that are no references) and the call's own outputs."""
  positions = [i for i, v in enumerate(closed.jaxpr.invars) if is_ref_aval(v.aval)]
  pure, consts = convert_constvars(discharge_jaxpr(closed))
  outs = bind(pure, consts, positions)
  n_out = len(outs) - len(positions)
  new_vals = [None] * n_args
  for k, i in enumerate(positions):
    new_vals[i] = outs[n_out + k]
  return new_vals, outs[:n_out]


def eval_discharged(jaxpr: Jaxpr, consts, args, ref_positions) -> list:
  """Evaluate ``jaxpr`` on the current trace with each reference replaced by its value:
  returns the outputs, then the final values of the inputs at ``ref_positions``."""
  env = {}
  refs = {}  # reference variable -> its current value
  freed = set()  # references frozen or freed: any later use is an error

  def read(v):
    if type(v) is Literal:
      return v.val
    if v in refs:
      raise TypeError("a reference was used as an array operand (read it with ref[...] "
                      "first)")
    return env[v]

  env.update(zip(jaxpr.constvars, consts))
  ref_set = set(ref_positions)
  for i, (v, a) in enumerate(zip(jaxpr.invars, args)):
    if i in ref_set:
      refs[v] = a
    else:
      env[v] = a
  context = source_info_lib._context
  prev = context.eqn
  try:
    for eqn in jaxpr.eqns:
      context.eqn = eqn.source_info
      rule = discharge_rules.get(eqn.primitive)
      if rule is None:
        if any(type(v) is not Literal and v in refs for v in eqn.invars):
          raise NotImplementedError(f"discharging references through '{eqn.primitive.name}' "
                                    "is not supported")
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
        continue
      ins = [None if type(v) is Literal else v for v in eqn.invars]
      if any(v is not None and v in freed for v in ins):
        raise ValueError("Ref was used after it was invalidated by freeze or free_ref.")
      ref_vals = [refs.get(v) if v is not None else None for v in ins]
      operands = [ref_vals[k] if (v is not None and v in refs) else read(eqn.invars[k])
                  for k, v in enumerate(ins)]
      new_vals, outs = rule(ref_vals, *operands, **eqn.params)
      for v, new in zip(ins, new_vals):
        if new is not None:
          refs[v] = new
      if eqn.primitive in _invalidators:
        freed.update(v for v in ins if v is not None and v in refs)
      if eqn.primitive in _creators:
        refs[eqn.outvars[0]] = outs[0]
      else:
        env.update(zip(eqn.outvars, outs))
  finally:
    context.eqn = prev
  outs = [read(v) for v in jaxpr.outvars]
  return outs + [refs[jaxpr.invars[i]] for i in ref_positions]
