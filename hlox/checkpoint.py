"""``checkpoint`` (``remat``): trade compute for memory in reverse-mode autodiff.

A checkpointed function binds ``checkpoint_p`` carrying its jaxpr and a policy. When it is
linearized, only the values the policy calls saveable (and the inputs) are kept as residuals;
everything else is recomputed in the backward pass (``partial_eval_jaxpr_custom``).
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import re
import types
from typing import Callable, Sequence

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core import source_info as source_info_lib
from hlox.core import dtypes
from hlox.core.wrapping import wraps
from hlox.core.jaxpr import (Jaxpr, JaxprEqn, Literal, Var, convert_constvars, eval_jaxpr,
                             io_effect_names, trace_to_jaxpr)
from hlox.core.primitive import Primitive
from hlox.cache import LRUCache, memoize_derived
from hlox.config import config
from hlox.core.tracer import Tracer, get_aval, set_current_trace, trace_ctx
from hlox.interpreters import ad, batching, checkify, jet, nan_checks, state_discharge, xla
from hlox.interpreters import partial_eval as pe
from hlox.lax.call import jit_p
from hlox.lax.compiler_hints import optimization_barrier_p
from hlox.lax.elementwise import reduce_precision_p

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name"]


# What a policy may answer for a value: save it, recompute it, or offload it (move it to
# another memory space, saved there). A plain bool means save (True) or recompute (False).
class _Answer:
  __slots__ = ("name",)

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return self.name


Saveable = _Answer("Saveable")
Recompute = _Answer("Recompute")


class Offloadable:
  """A policy's answer: save the value, in memory space ``dst`` (moved from ``src``)."""

  __slots__ = ("src", "dst")

  def __init__(self, src, dst):
    self.src, self.dst = src, dst

  def __repr__(self):
    return f"Offloadable(src={self.src!r}, dst={self.dst!r})"


def is_saved(answer) -> bool:
  """Whether a policy's answer keeps the value as a residual (an offloaded value is kept:
  on a backend without a host memory space it simply stays where it is)."""
  if answer is Recompute:
    return False
  return answer is Saveable or isinstance(answer, Offloadable) or bool(answer)


# ``name_p`` tags a value with a name for the name-based policies; it is the identity.
name_p = Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda aval, *, name: aval)
xla.register_lowering(name_p, lambda ctx, x, *, name: x)
ad.primitive_jvps[name_p] = lambda primals, tangents, *, name: (
    name_p.bind(primals[0], name=name), tangents[0])
ad.primitive_transposes[name_p] = lambda ct, x, *, name: [ct]
batching.primitive_batchers[name_p] = lambda vals, dims, *, name: (
    name_p.bind(vals[0], name=name), dims[0])
jet.deflinear(name_p)


def checkpoint_name(x, name):
  """Tag every array of the pytree ``x`` with ``name``, for ``save_only_these_names`` and the
  other name-based policies; otherwise the identity."""
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


def everything_saveable(*_, **__) -> bool:
  """Save every intermediate (as if ``checkpoint`` were not used)."""
  return True


def nothing_saveable(*_, **__) -> bool:
  """Save nothing but the inputs: recompute every intermediate."""
  return False


def _no_batch_dims(params) -> bool:
  (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
  return not lhs_batch and not rhs_batch


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
  """Save the results of dots (and convolutions), or with ``only_if_no_batch_dims`` only
  those of dots without batch dimensions; recompute the rest. (A dataclass, as JAX's: its
  repr is what printed jaxprs show as the policy.)"""
  only_if_no_batch_dims: bool

  def __call__(self, prim, *_, **params) -> bool:
    if self.only_if_no_batch_dims:
      return prim.name == "dot_general" and _no_batch_dims(params)
    return prim.name in ("dot_general", "conv_general_dilated")


dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)


class _OffloadDotWithNoBatchDims:
  def __init__(self, offload_src, offload_dst):
    self.offload_src, self.offload_dst = offload_src, offload_dst

  def __call__(self, prim, *_, **params):
    if prim.name == "dot_general" and _no_batch_dims(params):
      return Offloadable(self.offload_src, self.offload_dst)
    return Recompute


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
  """Save (offloaded from ``offload_src`` to ``offload_dst``) the dots without batch
  dimensions; recompute the rest."""
  return _OffloadDotWithNoBatchDims(offload_src, offload_dst)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
  """Save only the values tagged with one of ``saveable_names``."""
  saveable_names: frozenset

  def __call__(self, prim, *_, **params) -> bool:
    return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
  """Save the values tagged with any name but ``names``; recompute untagged ones."""
  names: frozenset

  def __call__(self, prim, *_, **params) -> bool:
    return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names_which_can_be_saved):
  """Save only the values tagged (``checkpoint_name``) with one of these names."""
  return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save):
  """Save the values tagged with any name but these (untagged values are recomputed)."""
  return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_anything_except_these_names(*names_not_to_save):
  """Deprecated in JAX, kept for its users: saves everything."""
  del names_not_to_save
  return everything_saveable


class _SaveAndOffloadOnlyTheseNames:
  def __init__(self, saved, offloaded, src, dst):
    self.saved, self.offloaded, self.src, self.dst = saved, offloaded, src, dst

  def __call__(self, prim, *_, **params):
    if prim is name_p and params["name"] in self.saved:
      return Saveable
    if prim is name_p and params["name"] in self.offloaded:
      return Offloadable(self.src, self.dst)
    return Recompute


def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                      offload_src, offload_dst):
  """Save the values with the first names, offload those with the second (from
  ``offload_src`` to ``offload_dst``), recompute the rest."""
  saved, offloaded = frozenset(names_which_can_be_saved), frozenset(names_which_can_be_offloaded)
  common = saved & offloaded
  if common:
    raise ValueError("The names should be exclusive and should not intersect in "
                     "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
                     f"names_which_can_be_saved={sorted(saved)}, "
                     f"names_which_can_be_offloaded={sorted(offloaded)} and the intersection "
                     f"{sorted(common)}")
  return _SaveAndOffloadOnlyTheseNames(saved, offloaded, offload_src, offload_dst)


def save_from_both_policies(policy_1, policy_2):
  """A policy saving what either ``policy_1`` or ``policy_2`` saves."""
  def policy(prim, *args, **params):
    out1, out2 = policy_1(prim, *args, **params), policy_2(prim, *args, **params)
    if not (isinstance(out1, bool) and isinstance(out2, bool)):
      raise ValueError("The return value of the policies should be a boolean. Got: "
                       f"{out1} and {out2}. Please write a custom policy function directly, "
                       "rather than using this helper function.")
    return out1 or out2
  return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)
checkpoint_policies.__doc__ = (
    "Which intermediate values a checkpointed function saves for the backward pass: each "
    "policy is called as ``policy(prim, *in_avals, **params)``.")


class _CheckpointPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    policy = params["policy"]
    return {"differentiated": params.get("differentiated", False), "jaxpr": params["jaxpr"],
            "policy": _policy_text(policy), "prevent_cse": params["prevent_cse"]}


def _policy_text(policy):
  """A policy as JAX prints it: a function's repr with its address masked, else its repr."""
  if isinstance(policy, types.FunctionType):
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                  repr(policy))
  return policy


# Named as JAX's (``remat2``), so printed jaxprs read the same.
checkpoint_p = _CheckpointPrimitive("remat2")
checkpoint_p.def_impl(lambda *args, jaxpr, **params: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts,
                                                                 *args))
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **params: list(jaxpr.out_avals))
# debug_nans's re-run opens the body, so that an invalid value is traced to its equation.
nan_checks.deoptimized_rules[checkpoint_p] = (
    lambda *args, jaxpr, **params: nan_checks.eval_deoptimized(jaxpr.jaxpr, jaxpr.consts, args))


def _cse_flags(prevent_cse, n: int) -> tuple:
  """``prevent_cse`` (one bool, or one per input) as one bool per input."""
  return tuple(prevent_cse) if isinstance(prevent_cse, tuple) else (bool(prevent_cse),) * n


def _checkpoint_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, **params):
  # As JAX: a differentiated checkpoint's inputs pass an optimization barrier, so that XLA
  # cannot merge its recomputation with the forward pass's copy (common-subexpression
  # elimination would undo the rematerialization).
  args = list(args)
  idx = [i for i, f in enumerate(_cse_flags(prevent_cse, len(args))) if f]
  if differentiated and idx:
    avals = [ctx.avals_in[i] for i in idx]
    sub = xla.LoweringRuleContext(ctx.module_context, optimization_barrier_p, avals, avals)
    barred = xla.lowering_rules[optimization_barrier_p](sub, *[args[i] for i in idx])
    for i, v in zip(idx, barred):
      args[i] = v
  mctx = ctx.module_context
  if not differentiated:  # as JAX: the body inline, its ops named under ``checkpoint``
    with mctx.scoped("checkpoint"):
      consts = [xla.ir_constant(np.asarray(c)) for c in jaxpr.consts]
      return xla.lower_jaxpr(mctx, jaxpr.jaxpr, consts, args)
  return xla.lower_call(ctx, jaxpr, args, name="checkpoint", scope=mctx.scope.extend("checkpoint"))

xla.register_lowering(checkpoint_p, _checkpoint_lowering)


def _checkpoint_jvp(primals, tangents, *, jaxpr, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
  jvp_closed, consts = convert_constvars(jvp_closed)
  params = dict(params, differentiated=True)
  if isinstance(params["prevent_cse"], tuple):
    flags = params["prevent_cse"]
    params["prevent_cse"] = (*flags, *[f for f, nz in zip(flags, nonzeros) if nz])
  outs = checkpoint_p.bind(*consts, *primals, *[t for t in tangents if type(t) is not ad.Zero],
                           jaxpr=jvp_closed, **params)
  n = len(jaxpr.out_avals)
  it = iter(outs[n:])
  return outs[:n], [next(it) if nz else ad.Zero(a.to_tangent_aval())
                    for a, nz in zip(jaxpr.out_avals, out_nz)]

ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp


def _checkpoint_discharge(refs, *args, jaxpr, prevent_cse, **params):
  # A checkpoint on references (a remat inside a program that mutates them): its pure form
  # takes their values and hands their final values back after its outputs.
  def bind(pure, consts, positions):
    flags = _cse_flags(prevent_cse, len(args))
    return checkpoint_p.bind(*consts, *args, jaxpr=pure,
                             prevent_cse=(True,) * len(consts) + flags, **params)
  return state_discharge.discharge_call(jaxpr, len(args), bind)

state_discharge.register(checkpoint_p, _checkpoint_discharge)


def _check_no_io_effects(jaxpr) -> None:
  # Differentiating a checkpoint runs its body again in the backward pass: an effect on the
  # outside world would happen twice.
  io = io_effect_names(jaxpr)
  if io:
    raise NotImplementedError("Effects not supported in partial-eval of `checkpoint`/`remat`: "
                              f"the body calls {', '.join(sorted(set(io)))} (an IO effect); "
                              "call it outside the checkpointed function")


def _checkpoint_partial_eval(trace, *args, jaxpr, policy, **params):
  unknowns = [trace.is_unknown(x) for x in args]
  if any(unknowns):
    _check_no_io_effects(jaxpr)
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr_custom(
      jaxpr, unknowns, policy or nothing_saveable, is_saved)
  unknown_params = params
  if isinstance(params["prevent_cse"], tuple):
    # A saved input keeps its own flag (as JAX passes it in as itself); computed residuals
    # are always pinned.
    flags = params["prevent_cse"]
    known_flags = dict(zip(known.jaxpr.invars, [f for f, u in zip(flags, unknowns) if not u]))
    res = known.jaxpr.outvars[len(known.jaxpr.outvars) - num_res:]
    unknown_params = dict(params, prevent_cse=tuple(
        known_flags.get(v, True) if type(v) is not Literal else True for v in res) + tuple(
        f for f, u in zip(flags, unknowns) if u))
  known_jaxpr = _round_residuals(known.jaxpr, num_res)
  if _logger.isEnabledFor(_log_level()):
    _log_residuals(known_jaxpr, num_res)
  # The known part is the forward pass: it runs inline (as JAX hoists it out of the
  # checkpoint), so residuals that are inputs are the inputs themselves, not copies.
  with set_current_trace(trace.parent):
    known_outs = eval_jaxpr(known_jaxpr, known.consts,
                            *[x for x, u in zip(args, unknowns) if not u])
  n_known = len(known_outs) - num_res
  residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
  unknown_outs = trace.record(checkpoint_p,
                              [*residuals, *[x for x, u in zip(args, unknowns) if u]],
                              dict(jaxpr=unknown, policy=policy, **unknown_params))
  k, u = iter(known_outs), iter(unknown_outs)
  return [next(u) if unk else next(k) for unk in out_unknowns]

pe.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval


def _round_residuals(jaxpr: Jaxpr, num_res: int) -> Jaxpr:
  """``jaxpr`` with each floating residual that its equations also read rounded to its
  dtype (``reduce_precision``) where it is made: XLA may keep a value in more precision
  than its type inside a fusion, and the forward pass must read what the backward pass
  is given (as JAX does). Saved inputs are left alone: both passes read the input."""
  res = [v for v in jaxpr.outvars[len(jaxpr.outvars) - num_res:] if type(v) is not Literal]
  read = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
  eqns = list(jaxpr.eqns)
  producer = {v: i for i, e in enumerate(eqns) for v in e.outvars}
  after = {}
  for v in dict.fromkeys(res):
    dtype = getattr(v.aval, "dtype", None)
    if (v not in read or v not in producer or dtype is None
        or not dtypes.issubdtype(dtype, np.inexact)):
      continue
    info = dtypes.finfo(v.aval.dtype)
    params = dict(exponent_bits=int(info.nexp), mantissa_bits=int(info.nmant))
    i = producer[v]
    eqn = eqns[i]
    if eqn.primitive is reduce_precision_p and eqn.params == params:
      continue
    raw = Var(v.aval)
    eqns[i] = eqn.replace(outvars=[raw if o is v else o for o in eqn.outvars])
    after.setdefault(i, []).append(
        JaxprEqn([raw], [v], reduce_precision_p, params, eqn.source_info))
  if not after:
    return jaxpr
  out = []
  for i, eqn in enumerate(eqns):
    out.append(eqn)
    out.extend(after.get(i, ()))
  return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, out, jaxpr.debug_info)


_logger = logging.getLogger("hlox.checkpoint")


def _log_level() -> int:
  return logging.WARNING if config.log_checkpoint_residuals else logging.DEBUG


def _log_residuals(known: Jaxpr, num_res: int) -> None:
  """Log what a checkpoint saves for the backward pass: its inputs, and the intermediates
  its policy saves (with where they are computed)."""
  res = known.outvars[len(known.outvars) - num_res:]
  inputs = set(known.invars)
  saved_inputs = [v for v in res if type(v) is not Literal and v in inputs]
  computed = [v for v in res if type(v) is Literal or v not in inputs]
  found = describe_residuals(known, computed, ("",) * len(known.invars))
  lines = ["remat-decorated function "]
  if saved_inputs:
    lines.append("saving inputs with shapes:\n")
    lines += [f"  {v.aval.str_short(short_dtypes=False)}\n" for v in saved_inputs]
  if saved_inputs and found:
    lines.append("and ")
  if found:
    lines.append("saving these intermediates:\n")
    lines += [f"  {aval.str_short(short_dtypes=False)} from {where}\n"
              for aval, where in found]
  _logger.log(_log_level(), "".join(lines))


def describe_residuals(jaxpr: Jaxpr, residuals, arg_names) -> list:
  """Where each of ``residuals`` (values of ``jaxpr``) comes from, as ``(aval, text)``
  pairs: a literal, a constant, an argument (by name, else by position), or the equation
  computing it (its primitive, the name ``checkpoint_name`` gave it, or the jitted
  function's name, with the user's line)."""
  # A reduce_precision is not the producer worth naming: look through it to its operand.
  through = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
             if e.primitive is reduce_precision_p}
  wanted = {through.get(v, v) for v in residuals if type(v) is not Literal}
  found = [(v.aval, "from a literal") for v in residuals if type(v) is Literal]
  found += [(v.aval, "from a constant") for v in jaxpr.constvars if v in wanted]
  found += [(v.aval, f"from the argument {name}" if name else
             f"from the argument at flattened index {i}")
            for i, (v, name) in enumerate(zip(jaxpr.invars, arg_names)) if v in wanted]
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      if v not in wanted:
        continue
      where = eqn.source_info or "unknown"
      if eqn.primitive is name_p:
        found.append((v.aval, f"named '{eqn.params['name']}' from {where}"))
      elif eqn.primitive is jit_p:
        found.append((v.aval, f"output of jitted function '{eqn.params['name']}' from "
                              f"{where}"))
      else:
        found.append((v.aval, f"output of {eqn.primitive.name} from {where}"))
  return found


def _checkpoint_partial_eval_custom(eqn, ins_uk, saveable, is_saved):
  # A checkpoint nested in another one is split by the enclosing policy (as JAX does): its
  # known part is a checkpoint of what that policy computes ahead, its unknown part a
  # differentiated checkpoint that recomputes the rest.
  params = eqn.params
  if any(ins_uk):
    _check_no_io_effects(params["jaxpr"])
  flags = params["prevent_cse"]

  def known_params(args):
    if not isinstance(flags, tuple):
      return params
    n_consts = len(args) - sum(not u for u in ins_uk)  # the split body's own consts
    return dict(params, prevent_cse=(True,) * n_consts
                + tuple(f for f, u in zip(flags, ins_uk) if not u))

  def unknown_params(unknown, n_args):
    p = dict(params, jaxpr=unknown, differentiated=True)
    if isinstance(flags, tuple):
      n_res = n_args - sum(ins_uk)
      p["prevent_cse"] = (True,) * n_res + tuple(f for f, u in zip(flags, ins_uk) if u)
    return p
  return pe.call_partial_eval_custom(
      eqn, ins_uk, saveable, is_saved, params["jaxpr"],
      lambda known, args: checkpoint_p.bind(*args, **dict(known_params(args), jaxpr=known)),
      unknown_params, memoize_derived)

pe.partial_eval_jaxpr_custom_rules[checkpoint_p] = _checkpoint_partial_eval_custom
pe.splits_known_calls.add(checkpoint_p)


def _checkpoint_transpose(cts, *args, jaxpr, prevent_cse, **params):
  undefined = [ad.is_undefined_primal(x) for x in args]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  defined = [x for x, u in zip(args, undefined) if not u]
  lin_avals = [x.aval for x in args if ad.is_undefined_primal(x)]
  # The body mixes the recomputation (on residuals) with the linear part; equations that
  # mix both (a JVP'd loop, say) must be split before the linear part can be transposed.
  known, linear, _, num_res = pe.partial_eval_jaxpr(jaxpr, undefined)

  def bwd(*xs):
    # Named as JAX's, so that profiles and dumps show the backward recomputation.
    with source_info_lib.extend_name_stack("rematted_computation"):
      res = eval_jaxpr(known.jaxpr, known.consts, *xs[:len(defined)])
    res = res[len(res) - num_res:]
    lin_args = [*res, *[ad.UndefinedPrimal(a) for a in lin_avals]]
    outs = ad.backward_pass(linear.jaxpr, linear.consts, lin_args, list(xs[len(defined):]))
    return [ad.zeros_like_aval(a) if o is None or type(o) is ad.Zero else o
            for o, a in zip(outs[num_res:], lin_avals)]

  # The backward pass is a checkpoint itself, so that its recomputation keeps its barrier
  # (XLA must not merge it with the forward pass's copy of the same values).
  closed = trace_to_jaxpr(bwd, [get_aval(x) for x in defined] + [get_aval(c) for c in cts],
                          "checkpoint transpose", "checkpoint")
  closed, consts = convert_constvars(closed)
  # The cotangents pass the barrier too (as JAX's checkpoint), unless the upgrade flag says
  # that only the saved values are pinned.
  pin_cts = not config.remat_barrier_no_cotangents
  if not pin_cts and prevent_cse is True:
    prevent_cse = (True,) * len(args)
  if isinstance(prevent_cse, tuple):
    prevent_cse = ((True,) * len(consts) + tuple(f for f, u in zip(prevent_cse, undefined)
                                                  if not u) + (pin_cts,) * len(cts))
  outs = iter(checkpoint_p.bind(*consts, *defined, *cts, jaxpr=closed,
                                prevent_cse=prevent_cse, **dict(params, differentiated=True)))
  return [next(outs) if u else None for u in undefined]

ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose


def _checkpoint_batch(axis_data, vals, dims, *, jaxpr, **params):
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  batched, consts = convert_constvars(batched)
  if isinstance(params["prevent_cse"], tuple):
    params = dict(params, prevent_cse=(True,) * len(consts) + params["prevent_cse"])
  return checkpoint_p.bind(*consts, *vals, jaxpr=batched, **params), out_dims

batching.fancy_primitive_batchers[checkpoint_p] = _checkpoint_batch

# Under jet the body is expanded in place: what to recompute matters only to a later
# differentiation of the result, and jet's coefficients are no residuals.
jet.jet_rules[checkpoint_p] = lambda primals, series, *, jaxpr, **params: jet.call_rule(
    jaxpr, primals, series)


def checkpoint(fun: Callable | None = None, *, prevent_cse=True, policy=None,
               static_argnums: int | Sequence[int] = (), static_argnames=()):
  """Make ``fun`` recompute its intermediates in the backward pass instead of storing them.

  Under reverse-mode differentiation (``grad``, ``vjp``) the values that ``fun`` computes are
  normally kept from the forward pass as residuals; a checkpointed ``fun`` keeps only what
  ``policy`` allows (by default just its inputs) and recomputes the rest when the gradient is
  taken, trading compute for memory. Values are unchanged: the result and its derivatives are
  those of ``fun``. Traced, ``fun`` becomes one ``remat2`` equation holding its jaxpr; jitted
  or eager calls with the same argument signature reuse the trace. ``hlox.remat`` is this
  function.

  Args:
    fun: the function to checkpoint (None: return a decorator taking it).
    prevent_cse: a bool, or a pytree prefix of the positional arguments' bools: if True,
      keep XLA from merging the recomputation with the forward pass (an optimization barrier
      on those inputs).
    policy: optional callable ``policy(prim, *in_avals, **params) -> bool`` saying which
      values may be saved (see ``hlox.checkpoint_policies``); None saves nothing but the
      inputs.
    static_argnums: int or ints: positional arguments that are Python values, not traced (they
      may be unhashable: the function is then traced again on each call).
    static_argnames: str or strs: keyword arguments treated likewise.

  Returns:
    A function with ``fun``'s signature and results (a decorator when ``fun`` is None).

  Examples:
    >>> f = hlox.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    >>> hlox.grad(f)(0.)
    Array(1., dtype=float32, weak_type=True)
    >>> policy = hlox.checkpoint_policies.dots_saveable
    >>> g = hlox.checkpoint(lambda x: jnp.sin(x) @ x, policy=policy)
    >>> hlox.grad(lambda x: g(x).sum())(jnp.eye(2))
    Array([[1.3817732, 1.841471 ],
           [1.841471 , 1.3817732]], dtype=float32)
  """
  if fun is None:
    return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                             static_argnums=static_argnums, static_argnames=static_argnames)
  if isinstance(static_argnames, str):
    static_argnames = (static_argnames,)
  static_argnames = frozenset(static_argnames)
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(static_argnums)
  # policy=None (JAX's default, printed as such) saves nothing but the inputs.

  # Traced jaxprs, per argument signature: calling a checkpointed function again (eagerly,
  # say) does not run the Python function again, as JAX. Traces that closed over tracers of
  # an enclosing transformation are valid only there and are not kept.
  traces = LRUCache(maxsize=64)

  @wraps(fun)
  def checkpointed(*args, **kwargs):
    statics = {i: args[i] for i in static_argnums}
    # keyword arguments named static are closed over, as static positional ones
    statics.update((k, kwargs[k]) for k in sorted(static_argnames & kwargs.keys()))
    kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    dyn = [a for i, a in enumerate(args) if i not in statics]
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    avals = [get_aval(x) for x in leaves]
    try:
      key = (in_tree, tuple((i, v, type(v)) for i, v in statics.items()), tuple(avals),
             config.enable_x64, tuple(trace_ctx.axis_env), source_info_lib.current_xla_metadata())
      hit = traces.get(key)
    except TypeError:  # unhashable static arguments: trace every time
      key = hit = None
    if hit is not None:
      closed, consts, out_tree = hit
    else:
      closed, consts, out_tree = _trace(fun, args, statics, in_tree, avals)
      if key is not None and not any(isinstance(c, Tracer) for c in consts):
        traces.put(key, (closed, consts, out_tree))
    cse = prevent_cse
    if not isinstance(cse, bool):
      flags = _prefix_flags(tuple(cse) if len(cse) == len(dyn) else
                            tuple(c for i, c in enumerate(cse) if i not in statics), tuple(dyn))
      n_kw = len(leaves) - len(flags)
      # As JAX: closed-over values pass no barrier (only the arguments the prefix names).
      cse = (False,) * len(consts) + tuple(bool(f) for f in flags) + (True,) * n_kw
    outs = checkpoint_p.bind(*consts, *leaves, jaxpr=closed, prevent_cse=cse,
                             policy=policy, differentiated=False)
    return tree_util.tree_unflatten(out_tree, outs)

  return checkpointed


def _prefix_flags(prefix, args) -> list:
  """``prevent_cse``'s flags, one per leaf of ``args``: ``prefix`` is a pytree prefix of
  ``args`` with bool leaves, or a tree of tuples and bools whose tuples stand for any
  container with as many children (``((False, True),)`` for one dict argument with two
  entries)."""
  try:
    flags = tree_util.broadcast_prefix(prefix, args)
  except ValueError:
    pass
  else:
    if all(isinstance(f, (bool, np.bool_)) for f in flags):
      return flags
  out = []
  _tuple_tree_flags(prefix, tree_util.tree_structure(args), "prevent_cse", out)
  return out


def _tuple_tree_flags(prefix, treedef, where: str, out: list) -> None:
  if isinstance(prefix, (bool, np.bool_)):
    out.extend([bool(prefix)] * treedef.num_leaves)
    return
  if not isinstance(prefix, tuple):
    raise ValueError("the prevent_cse argument to jax.checkpoint must be a pytree prefix of "
                     "the arguments with bool leaves, or a tree of tuples and bools, but "
                     f"{where} is {prefix!r} of type {type(prefix).__name__}")
  children = treedef.children()
  if treedef.num_nodes == 1 and treedef.num_leaves == 1:
    raise ValueError("the prevent_cse argument to jax.checkpoint must be a tree prefix of "
                     f"the arguments (up to container types), but {where} is a tuple where "
                     "the arguments have a leaf")
  if len(children) != len(prefix):
    raise ValueError("the prevent_cse argument to jax.checkpoint must be a tree prefix of "
                     f"the arguments (up to container types), but {where} is a tuple of "
                     f"length {len(prefix)} where the arguments have a node with "
                     f"{len(children)} children")
  for i, (p, child) in enumerate(zip(prefix, children)):
    _tuple_tree_flags(p, child, f"{where}[{i}]", out)


def _trace(fun, args, statics, in_tree, avals):
  out_tree_box = []

  def flat(*xs):
    d, kw = tree_util.tree_unflatten(in_tree, xs)
    it = iter(d)
    full = [statics[i] if i in statics else next(it) for i in range(len(args))]
    static_kw = {k: v for k, v in statics.items() if isinstance(k, str)}
    out_leaves, out_tree = tree_util.tree_flatten(fun(*full, **kw, **static_kw))
    out_tree_box.append(out_tree)
    return out_leaves

  closed = trace_to_jaxpr(flat, avals, getattr(fun, "__name__", "checkpoint"), "checkpoint")
  closed, consts = convert_constvars(closed)
  return closed, consts, out_tree_box[0]


remat = checkpoint


def _checkpoint_checkify(error, enabled_errors, *args, jaxpr, prevent_cse, **params):
  # The error goes through the checkpointed body, which stays one checkpoint.
  err_vals, err_tree, err_avals = checkify.error_avals(error)
  checked, out_tree, _ = checkify.checkify_traced(jaxpr, enabled_errors, err_tree, err_avals,
                                                  [get_aval(x) for x in args])
  checked, consts = convert_constvars(checked)
  if not isinstance(prevent_cse, bool):
    prevent_cse = (True,) * (len(consts) + len(err_vals)) + tuple(prevent_cse)
  outs = checkpoint_p.bind(*consts, *err_vals, *args, jaxpr=checked, prevent_cse=prevent_cse,
                           **params)
  n_err = out_tree.num_leaves
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[checkpoint_p] = _checkpoint_checkify


# Sharding in types: a checkpointed call is split as its function's results.
sharding_types.sharding_rules[checkpoint_p] = sharding_types.call_rule("jaxpr")
