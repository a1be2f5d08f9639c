"""Partial evaluation: split a computation into a known part (run now) and an unknown part
(recorded as a jaxpr).

A ``PartialEvalTrace`` treats its own tracers as *unknown* and every other value as *known*.
An operation whose inputs are all known is bound on the parent trace (it runs now, or is
recorded by an enclosing trace); an operation with an unknown input is recorded as an equation
of the unknown jaxpr, with its known inputs becoming constants (the *residuals*).

Linearize is partial evaluation of a JVP with known primals and unknown tangents; control
flow and remat use ``partial_eval_jaxpr`` to split closed jaxprs the same way.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core import source_info as source_info_lib
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprTrace, JaxprTracer, Literal, Var,
                             convert_constvars, eval_jaxpr, is_effectful, literal_value)
from hlox.core.tracer import Tracer, current_trace, get_aval, set_current_trace
from hlox.interpreters import state_discharge

# Primitives with their own partial-eval rule (call primitives and the like):
# ``rule(trace, *args, **params) -> outputs``; args mix unknown tracers and known values.
partial_eval_rules: dict = {}


class PartialEvalTrace(JaxprTrace):
  """Records operations on unknown values; binds operations on known values on ``parent``."""

  name = "partial_eval"
  literal_device_arrays = False  # known device arrays it records on are residuals

  def __init__(self, parent, debug_info: str = ""):
    super().__init__(debug_info)
    self.parent = parent

  def is_unknown(self, x) -> bool:
    return type(x) is JaxprTracer and x._trace is self

  def process_primitive(self, primitive, args, params):
    if not any(type(x) is JaxprTracer and x._trace is self for x in args):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    rule = partial_eval_rules.get(primitive)
    if rule is not None:
      return rule(self, *args, **params)
    return self.record(primitive, args, params)

  def record(self, primitive, args, params):
    """Record ``primitive`` as an equation of the unknown jaxpr (known args become consts)."""
    return JaxprTrace.process_primitive(self, primitive, args, params)


def partial_eval_jaxpr(closed: ClosedJaxpr, in_unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False):
  """Split ``closed`` into a known and an unknown jaxpr.

  Returns ``(known, unknown, out_unknowns, num_res)``:
    - ``known`` takes the known inputs and returns the known outputs, then ``num_res``
      residuals;
    - ``unknown`` takes the residuals, then the unknown inputs, and returns the unknown outputs.
  ``instantiate`` forces outputs to be unknown (known values are passed through as residuals).
  Neither result has consts (the original consts are computed into the known side).
  """
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(closed.out_avals)
  known_trace = JaxprTrace("known")
  # the inputs keep their splits over Explicit mesh axes (``core/sharding_types.py``)
  splits = [getattr(v, "sharding", None) for v in closed.jaxpr.invars]
  known_in = [known_trace.new_arg(a, s)
              for a, s, u in zip(closed.in_avals, splits, in_unknowns) if not u]
  with set_current_trace(known_trace):
    pe = PartialEvalTrace(known_trace, "unknown")
    unknown_in = [pe.new_arg(a, s) for a, s, u in zip(closed.in_avals, splits, in_unknowns)
                  if u]
    known_it, unknown_it = iter(known_in), iter(unknown_in)
    args = [next(unknown_it) if u else next(known_it) for u in in_unknowns]
    try:
      # Both sides are new jaxprs: their equations are named relative to them.
      with set_current_trace(pe), source_info_lib.reset_name_stack():
        staged = state_discharge.refs_made_unknown(closed.jaxpr, in_unknowns)
        if staged:
          outs = _eval_staging_refs(closed.jaxpr, closed.consts, args, pe, staged)
        else:
          outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
        outs = [pe.to_tracer(o) if inst and not pe.is_unknown(o) else o
                for o, inst in zip(outs, instantiate)]
    finally:
      pe.invalidate()
  out_unknowns = [pe.is_unknown(o) for o in outs]
  unknown_jaxpr, residuals = pe.to_jaxpr([o for o in outs if pe.is_unknown(o)])
  # Residuals become leading inputs of the unknown jaxpr and trailing outputs of the known one.
  unknown_closed, _ = convert_constvars(ClosedJaxpr(unknown_jaxpr, residuals))
  known_outs = [o for o in outs if not pe.is_unknown(o)] + list(residuals)
  try:
    with set_current_trace(known_trace):
      known_tracers = [known_trace.to_tracer(o) for o in known_outs]
    known_jaxpr, known_consts = known_trace.to_jaxpr(known_tracers)
  finally:
    known_trace.invalidate()
  known_closed = ClosedJaxpr(known_jaxpr, known_consts)
  return known_closed, unknown_closed, out_unknowns, len(residuals)


def _eval_staging_refs(jaxpr: Jaxpr, consts, args, pe: PartialEvalTrace, staged) -> list:
  """``eval_jaxpr`` on ``pe``, with the creations of the references in ``staged`` recorded
  as unknown even where their initial value is known (see ``refs_made_unknown``)."""
  env = dict(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  read = lambda v: literal_value(v) if type(v) is Literal else env[v]
  context = source_info_lib._context
  prev_eqn = context.eqn
  try:
    for eqn in jaxpr.eqns:
      invals = [read(v) for v in eqn.invars]
      context.eqn = eqn.source_info
      if eqn.outvars and eqn.outvars[0] in staged:
        outs = pe.record(eqn.primitive, invals, eqn.params)
      else:
        outs = eqn.primitive.bind(*invals, **eqn.params)
      env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
  finally:
    context.eqn = prev_eqn
  return [read(v) for v in jaxpr.outvars]


# Primitives that split under a checkpoint policy themselves (cond applies it inside its
# branches): ``rule(eqn, in_unknowns, saveable, is_saved)`` returns None (not splittable
# that way) or ``(known, out_unknowns, res_avals, make_unknown)``: ``known`` a ClosedJaxpr
# from the equation's invars whose flag is False (literals included, in order) to its known
# outputs then the residuals, and ``make_unknown(res_vars)`` the unknown side's equation.
# A fifth element, flags over the outputs, marks known outputs that the unknown equation can
# recompute (the policy does not save them): the enclosing split takes those from it rather
# than saving them, and calls ``make_unknown(res_vars, used)`` (``used``: per flagged output,
# whether it is taken) for the final equation.
partial_eval_jaxpr_custom_rules: dict = {}
# Primitives whose rule (one giving the fifth element) also splits equations whose inputs are
# all known (a jit, checkpoint, scan or cond inside a checkpoint: the policy applies inside).
splits_known_calls: set = set()


def partial_eval_jaxpr_custom(closed: ClosedJaxpr, in_unknowns: Sequence[bool], saveable,
                              is_saved=bool, instantiate: bool | Sequence[bool] = False,
                              also_unknown: Sequence[bool] | None = None):
  """Split like ``partial_eval_jaxpr``, but save as residuals only values that ``saveable``
  allows (plus the known inputs); the unknown jaxpr recomputes the rest (rematerialization).

  ``saveable(primitive, *in_avals, **params)`` decides per equation (a bool, or a marker
  whose ``is_saved`` says). ``instantiate`` forces outputs to be unknown. Returns
  ``(known, unknown, out_unknowns, num_res)`` with the same conventions, except that the
  known outputs flagged in ``also_unknown`` are computed on both sides: the unknown jaxpr
  returns them after its unknown outputs (a loop's known carry that its unknown loop
  carries again, recomputing it rather than saving it per iteration).

  An equation with a rule in ``partial_eval_jaxpr_custom_rules`` (cond, scan, jit, a nested
  checkpoint) applies the policy inside itself, even when all its inputs are known
  (``splits_known_calls``). One with only a partial-eval rule (while, as in
  JAX: it cannot save per-iteration values) that mixes known and unknown inputs is split by
  that rule for its known outputs and runs whole on the unknown side. The unknown side's
  unread scan, cond and jit outputs are dropped (``output_pruning_rules``).
  """
  jaxpr = closed.jaxpr
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(jaxpr.outvars)
  unknown_vars = {v for v, u in zip(jaxpr.invars, in_unknowns) if u}
  # References that unknown values touch are made on the unknown side (their initial value
  # a residual); every equation on them follows, as each takes an unknown reference.
  unknown_vars |= state_discharge.refs_made_unknown(jaxpr, in_unknowns)
  producer, mixed, replaced, restaged, remake = {}, {}, {}, {}, {}
  lazy_calls = set()
  forced_residuals = []
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      producer[v] = eqn
    ins_uk = [type(v) is not Literal and v in unknown_vars for v in eqn.invars]
    # A known call whose rule can recompute its outputs is split by the policy too (it
    # joins the unknown side only if the unknown side needs an output it does not save).
    lazy = not any(ins_uk) and eqn.primitive in splits_known_calls and not is_effectful(eqn)
    if not any(ins_uk) and not lazy:
      continue
    custom = partial_eval_jaxpr_custom_rules.get(eqn.primitive)
    split = custom(eqn, ins_uk, saveable, is_saved) if custom else None
    if split is not None:
      known_one, out_uk, res_avals, make_unknown, *more = split
      res_vars = [Var(a) for a in res_avals]
      known_ins = [v for v, u in zip(eqn.invars, ins_uk) if not u]
      mixed[eqn] = (known_ins, known_one, len(res_vars), out_uk, res_vars)
      replaced[eqn] = make_unknown(res_vars)
      if more:  # known outputs the unknown equation can recompute instead of saving
        restaged.update((v, eqn) for v, r in zip(eqn.outvars, more[0]) if r)
        remake[eqn] = (make_unknown, res_vars)
      if lazy:
        lazy_calls.add(eqn)
      forced_residuals.extend(res_vars)
      unknown_vars.update(v for v, u in zip(eqn.outvars, out_uk) if u)
    elif eqn.primitive in partial_eval_rules:
      ins = _unique_vars(eqn.invars)
      one = ClosedJaxpr(Jaxpr([], ins, eqn.outvars, [eqn]), [])
      known_one, _, out_uk, num_res = partial_eval_jaxpr(one, [v in unknown_vars for v in ins])
      mixed[eqn] = ([v for v in ins if v not in unknown_vars], known_one, num_res, out_uk, [])
      unknown_vars.update(v for v, u in zip(eqn.outvars, out_uk) if u)
    else:
      unknown_vars.update(eqn.outvars)
  out_unknowns = [inst or (type(v) is not Literal and v in unknown_vars)
                  for v, inst in zip(jaxpr.outvars, instantiate)]
  unknown_eqns = [e for e in jaxpr.eqns if any(v in unknown_vars for v in e.outvars)]

  # Known values the unknown side needs: saved if saveable (or an input/const), recomputed
  # otherwise (which may need further known values).
  known_inputs = {v for v, u in zip(jaxpr.invars, in_unknowns) if not u} | set(jaxpr.constvars)
  known_inputs.update(forced_residuals)  # chosen by a rule that applied the policy inside
  unknown_set = set(unknown_eqns)

  def find_needs():
    """The residuals and the known equations recomputed on the unknown side."""
    residuals, recomputed, seen = [], [], set()

    def need(v):
      if type(v) is Literal or v in unknown_vars or v in seen:
        return
      seen.add(v)
      if v in restaged:
        restaged_used.add(v)
        eqn = restaged[v]
        if eqn in lazy_calls and eqn not in activated:  # a known call, now recomputed
          activated.add(eqn)
          for u in replaced[eqn].invars:
            need(u)
          recomputed.append(eqn)
        return
      eqn = producer.get(v)
      if eqn in unknown_set and eqn not in replaced:
        return  # a known output of a mixed equation, which the unknown side runs whole
      # (an effectful equation's results are saved: it runs once, on the known side)
      if v in known_inputs or eqn is None or eqn in replaced or is_effectful(eqn) or is_saved(
          saveable(eqn.primitive, *[u.aval for u in eqn.invars], **eqn.params)):
        residuals.append(v)
        return
      for u in eqn.invars:
        need(u)
      if eqn not in recomputed:
        recomputed.append(eqn)

    for eqn in unknown_eqns:
      for v in replaced[eqn].invars if eqn in replaced else eqn.invars:
        need(v)
    for v, inst in zip(jaxpr.outvars, instantiate):
      if inst:
        need(v)
    for v, a in zip(jaxpr.outvars, also):
      if a:
        need(v)
    return residuals, recomputed

  also = [bool(a) and not u for a, u in zip(also_unknown or [], out_unknowns)]
  restaged_used, activated = set(), set()
  residuals, recomputed = find_needs()
  if remake:
    # Calls that can recompute known outputs now return only those taken (and read only
    # what that needs): once they are final, what is needed is found again (a subset).
    for eqn, (make_unknown, res_vars) in remake.items():
      replaced[eqn] = make_unknown(res_vars, [v in restaged_used for v in eqn.outvars
                                              if restaged.get(v) is eqn])
    restaged = {v: e for v, e in restaged.items() if v in restaged_used}
    restaged_used, activated = set(), set()
    residuals, recomputed = find_needs()
  for eqn in lazy_calls - activated:  # runs on the known side only, as it is
    del mixed[eqn]
  order = {id(e): i for i, e in enumerate(jaxpr.eqns)}
  unknown_side = [replaced.get(e, e) for e in
                  sorted(recomputed + unknown_eqns, key=lambda e: order[id(e)])]
  known_outvars = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
  known_invars = [v for v, u in zip(jaxpr.invars, in_unknowns) if not u]
  from hlox.core.jaxpr import dce_jaxpr
  if not mixed:
    known = Jaxpr(jaxpr.constvars, known_invars, known_outvars + residuals,
                  [e for e in jaxpr.eqns if e not in unknown_set])
    known, _ = dce_jaxpr(known)
    known = ClosedJaxpr(known, closed.consts)
  else:
    known = _trace_known_side(closed, known_invars, known_outvars + residuals, unknown_set,
                              mixed)
  unknown_outvars = ([v for v, u in zip(jaxpr.outvars, out_unknowns) if u]
                     + [v for v, a in zip(jaxpr.outvars, also) if a])
  unknown = Jaxpr([], residuals + [v for v, u in zip(jaxpr.invars, in_unknowns) if u],
                  unknown_outvars, _prune_outputs(unknown_side, unknown_outvars))
  return known, ClosedJaxpr(unknown, []), out_unknowns, len(residuals)


# Primitives that can drop outputs nobody reads (a scan's unused stacked outputs, whose
# per-iteration work then goes too): ``rule(eqn, used) -> eqn`` with ``used`` per output.
output_pruning_rules: dict = {}


def _prune_outputs(eqns, outvars):
  """``eqns`` (in order) with unread outputs of equations that have a pruning rule dropped:
  the recomputation a checkpoint's unknown side does for them would be wasted."""
  live = {v for v in outvars if type(v) is not Literal}
  out = []
  for eqn in reversed(eqns):
    rule = output_pruning_rules.get(eqn.primitive)
    used = [v in live for v in eqn.outvars]
    if rule is not None and not all(used):
      eqn = rule(eqn, used)
    live.update(v for v in eqn.invars if type(v) is not Literal)
    out.append(eqn)
  return out[::-1]


def dce_pruned(jaxpr: Jaxpr, used_outputs: Sequence[bool]):
  """``dce_jaxpr`` that also drops the unread outputs of equations with a pruning rule
  (and the work inside them for those). Returns the jaxpr and which invars it reads."""
  from hlox.core.jaxpr import dce_jaxpr
  kept, _ = dce_jaxpr(jaxpr, used_outputs)
  kept = Jaxpr(kept.constvars, kept.invars, kept.outvars,
               _prune_outputs(kept.eqns, kept.outvars), kept.debug_info)
  return dce_jaxpr(kept)


def recomputable_outputs(closed: ClosedJaxpr, out_uk, saveable, is_saved) -> list:
  """Per output of ``closed``: whether it is a known output computed by an equation the
  policy does not save (an unknown side can compute it again instead of saving it)."""
  producer = {v: e for e in closed.jaxpr.eqns for v in e.outvars}
  flags = []
  for v, u in zip(closed.jaxpr.outvars, out_uk):
    e = None if u or type(v) is Literal else producer.get(v)
    flags.append(e is not None and not is_effectful(e) and not is_saved(
        saveable(e.primitive, *[x.aval for x in e.invars], **e.params)))
  return flags


def call_partial_eval_custom(eqn, ins_uk, saveable, is_saved, jaxpr, bind_known,
                             unknown_params, memo=None, with_sources=False):
  """A ``partial_eval_jaxpr_custom_rules`` entry for a call primitive over the closed
  ``jaxpr`` (jit, a nested checkpoint): its body is split by the same policy, the known call
  returns its known outputs then the residuals, the unknown call takes the residuals then
  the unknown operands. Residuals that are known operands are not returned: the unknown
  call reads those operands, which the enclosing split saves or recomputes by the policy.

  ``bind_known(known_body, args)`` binds the known call (``args``: the body's consts, then
  the known operands); ``unknown_params(unknown_body, n_args)`` gives the unknown
  equation's params (with ``with_sources``, ``unknown_params(unknown_body, sources,
  out_positions)``: per operand ``("known", i)`` the equation's i-th operand or
  ``("res", j)`` the j-th residual, and per result its position among the equation's); ``memo(key, make)`` remembers the split (e.g. ``memoize_derived``).
  """
  from hlox.core.jaxpr import JaxprEqn, trace_to_jaxpr

  def make():
    # Known outputs that the policy does not save are recomputed by the unknown call too
    # (when the enclosing split needs them), as JAX's remat does.
    out_uk = partial_eval_jaxpr_custom(jaxpr, ins_uk, saveable, is_saved)[2]
    restage = recomputable_outputs(jaxpr, out_uk, saveable, is_saved)
    known_body, unknown_body, out_uk, num_res = partial_eval_jaxpr_custom(
        jaxpr, ins_uk, saveable, is_saved, also_unknown=restage)
    known_body, kconsts = convert_constvars(known_body)
    known_jaxpr = known_body.jaxpr
    position = {v: i for i, v in enumerate(known_jaxpr.invars[len(kconsts):])}
    n_known = len(known_jaxpr.outvars) - num_res
    fwd = tuple(None if type(v) is Literal else position.get(v)
                for v in known_jaxpr.outvars[n_known:])
    if any(i is not None for i in fwd):
      outvars = known_jaxpr.outvars[:n_known] + [
          v for v, i in zip(known_jaxpr.outvars[n_known:], fwd) if i is None]
      known_body = ClosedJaxpr(Jaxpr(known_jaxpr.constvars, known_jaxpr.invars, outvars,
                                     known_jaxpr.eqns), known_body.consts)
    return known_body, unknown_body, out_uk, fwd, kconsts, tuple(restage)
  memo = memo or (lambda key, make: make())
  key = ("pe_custom", jaxpr, tuple(ins_uk), saveable, is_saved)
  known_body, unknown_body, out_uk, fwd, kconsts, restage = memo(key, make)
  known_ins = [v for v, u in zip(eqn.invars, ins_uk) if not u]
  known = trace_to_jaxpr(lambda *xs: bind_known(known_body, [*kconsts, *xs]),
                         [v.aval for v in known_ins], f"{eqn.primitive} known",
                         str(eqn.primitive))
  # (the residuals' types outside the call: a pmap's are stacked along its axis)
  res_avals = list(known.out_avals[sum(not u for u in out_uk):])

  def make_unknown(res_vars, used=()):
    it = iter(res_vars)
    ins = [*[next(it) if i is None else known_ins[i] for i in fwd],
           *[v for v, u in zip(eqn.invars, ins_uk) if u]]
    used = tuple(used) + (False,) * (sum(restage) - len(used))
    body, reads = memo(key + (used,), lambda: _restaged_body(unknown_body, sum(out_uk), used,
                                                             len(fwd)))
    ins = [x for x, r in zip(ins, reads) if r]
    out_pos = [i for i, u in enumerate(out_uk) if u] + [
        i for i, k in zip([i for i, r in enumerate(restage) if r], used) if k]
    outs = [eqn.outvars[i] for i in out_pos]
    if not with_sources:
      return JaxprEqn(ins, outs, eqn.primitive, unknown_params(body, len(ins)),
                      eqn.source_info)
    known_pos = [i for i, u in enumerate(ins_uk) if not u]
    res_it = iter(range(len(res_vars)))
    sources = [*[("res", next(res_it)) if i is None else ("known", known_pos[i]) for i in fwd],
               *[("known", i) for i, u in enumerate(ins_uk) if u]]
    sources = [x for x, r in zip(sources, reads) if r]
    return JaxprEqn(ins, outs, eqn.primitive, unknown_params(body, sources, out_pos),
                    eqn.source_info)
  return known, out_uk, res_avals, make_unknown, restage


def _restaged_body(unknown: ClosedJaxpr, n_unknown: int, used, n_res: int):
  """``unknown`` returning its unknown outputs and only the recomputed known ones in use,
  without the residual inputs it then does not read; and per input whether it stays."""
  kept, reads = dce_pruned(unknown.jaxpr, [True] * n_unknown + list(used))
  reads = [r or i >= n_res for i, r in enumerate(reads)]
  kept = Jaxpr(kept.constvars, [v for v, r in zip(kept.invars, reads) if r], kept.outvars,
               kept.eqns, kept.debug_info)
  return ClosedJaxpr(kept, unknown.consts), reads


def _unique_vars(vs):
  out, seen = [], set()
  for v in vs:
    if type(v) is not Literal and v not in seen:
      seen.add(v)
      out.append(v)
  return out


def _trace_known_side(closed, known_invars, outvars, unknown_set, mixed):
  """The known jaxpr, traced: known equations are bound again and each mixed equation's
  known outputs come from its own rule's known part."""
  from hlox.core.jaxpr import dce_jaxpr, trace_to_jaxpr
  jaxpr = closed.jaxpr

  def known_fun(*xs):
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(known_invars, xs))
    read = lambda v: literal_value(v) if type(v) is Literal else env[v]
    for eqn in jaxpr.eqns:
      if eqn in mixed:
        ins, known_one, num_res, out_uk, res_vars = mixed[eqn]
        outs = eval_jaxpr(known_one.jaxpr, known_one.consts, *[read(v) for v in ins])
        env.update(zip([v for v, u in zip(eqn.outvars, out_uk) if not u],
                       outs[:len(outs) - num_res]))
        env.update(zip(res_vars, outs[len(outs) - num_res:]))
      elif eqn not in unknown_set:
        # Bound again with its own source line (not the line of whatever is tracing now).
        with source_info_lib.current_eqn(eqn.source_info):
          outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return [read(v) for v in outvars]

  splits = [getattr(v, "sharding", None) for v in known_invars]
  traced = trace_to_jaxpr(known_fun, [v.aval for v in known_invars], "known", "known",
                          in_shardings=splits if any(s is not None for s in splits) else None)
  dced, _ = dce_jaxpr(traced.jaxpr)
  return ClosedJaxpr(dced, traced.consts)


class PartialVal(tuple):
  """A value as partial evaluation sees it: ``(aval, None)`` when only its type is known
  (unknown), ``(None, value)`` when the value itself is known."""

  @classmethod
  def known(cls, value) -> "PartialVal":
    return cls((None, value))

  @classmethod
  def unknown(cls, aval) -> "PartialVal":
    return cls((aval, None))

  def is_known(self) -> bool:
    return self[0] is None

  def get_known(self):
    """The value when known, else None."""
    return self[1] if self[0] is None else None

  def get_aval(self):
    """The type: the unknown's aval, or the known value's."""
    if self[0] is not None:
      return self[0]
    aval = _key_aval(self[1])
    return get_aval(self[1]) if aval is None else aval


def trace_to_jaxpr_nounits(fun, pvals: Sequence[PartialVal],
                           instantiate: bool | Sequence[bool] = False):
  """Partially evaluate ``fun`` (a ``linear_util.WrappedFun`` taking and returning flat
  lists) on ``pvals``: operations on known values run now (on the trace in effect), the
  rest is recorded. Returns ``(jaxpr, out_pvals, consts)``: the jaxpr of the unknown outputs,
  taking ``consts`` (the known values it reads) as constvars and the unknown inputs as
  invars; ``out_pvals`` says which outputs are known, with their values. ``instantiate``
  forces outputs to be unknown."""
  pe = PartialEvalTrace(current_trace(), "trace_to_jaxpr_nounits")
  try:
    args = [pv[1] if pv.is_known() else _new_arg(pe, pv[0]) for pv in pvals]
    with set_current_trace(pe):
      outs = list(fun.call_wrapped(*args))
      if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(outs)
      # An output is the words of a typed key array, or itself (its one "word").
      out_words = [_words(o) for o in outs]
      out_unknown = [inst or any(pe.is_unknown(w) for w in words)
                     for words, inst in zip(out_words, instantiate)]
      out_words = [[pe.to_tracer(w) for w in words] if unknown else words
                   for words, unknown in zip(out_words, out_unknown)]
    out_pvals = [PartialVal.unknown(_aval_of_output(o, words)) if unknown
                 else PartialVal.known(o)
                 for o, words, unknown in zip(outs, out_words, out_unknown)]
    jaxpr, consts = pe.to_jaxpr([w for words, unknown in zip(out_words, out_unknown)
                                 if unknown for w in words])
  finally:
    pe.invalidate()
  return jaxpr, out_pvals, consts


# Typed PRNG keys. A key aval (``key<fry>[3]``, an extended dtype) types no tracer in hlox:
# keys are traced as key arrays over tracers of their uint32 words (``_tree_transform``).
# So an unknown key input becomes keys over a new argument of the words' type, and the
# recorded jaxpr reads and returns words; the partial values still say ``key<fry>[3]``.

def _new_arg(pe: PartialEvalTrace, aval):
  if not dtypes.is_extended(aval.dtype):
    return pe.new_arg(aval)
  words = ShapedArray(tuple(aval.shape) + tuple(aval.dtype.impl.key_shape), np.uint32)
  return aval.dtype._from_words(pe.new_arg(words))


def _key_aval(x):
  """``key<fry>[*shape]`` for a typed key array (concrete or over tracers), else None."""
  if dtypes.extended_dtype_of(x) is not None and not isinstance(x, Tracer):
    return ShapedArray(tuple(x.shape), x.dtype)
  return None


def _words(x) -> list:
  return tree_util.tree_leaves(x) if _key_aval(x) is not None else [x]


def _aval_of_output(x, words):
  aval = _key_aval(x)
  return words[0].aval if aval is None else aval
