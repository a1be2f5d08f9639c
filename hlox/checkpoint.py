"""``checkpoint`` (``remat``): trade compute for memory in reverse-mode autodiff.

A checkpointed function binds ``checkpoint_p`` carrying its jaxpr and a policy. When it is
linearized, only the values the policy calls saveable (and the inputs) are kept as residuals;
everything else is recomputed in the backward pass (``partial_eval_jaxpr_custom``).
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from hlox import tree_util
from hlox.core.jaxpr import ClosedJaxpr, convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval, set_current_trace
from hlox.interpreters import ad, batching, nan_checks, xla
from hlox.interpreters import partial_eval as pe

__all__ = ["checkpoint", "remat", "checkpoint_policies"]


class checkpoint_policies:
  """Which intermediate values a checkpointed function saves for the backward pass."""

  @staticmethod
  def everything_saveable(prim, params) -> bool:
    return True

  @staticmethod
  def nothing_saveable(prim, params) -> bool:
    return False

  @staticmethod
  def dots_saveable(prim, params) -> bool:
    return prim.name == "dot_general"

  checkpoint_dots = dots_saveable

  @staticmethod
  def dots_with_no_batch_dims_saveable(prim, params) -> bool:
    if prim.name != "dot_general":
      return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch

  checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

  @staticmethod
  def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either ``policy_1`` or ``policy_2`` saves."""
    def policy(prim, params):
      return bool(policy_1(prim, params)) or bool(policy_2(prim, params))
    return policy


class _CheckpointPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    policy = params["policy"]
    return {"differentiated": params.get("differentiated", False), "jaxpr": params["jaxpr"],
            "policy": getattr(policy, "__name__", policy), "prevent_cse": params["prevent_cse"]}


# Named as JAX's (``remat2``), so printed jaxprs read the same.
checkpoint_p = _CheckpointPrimitive("remat2")
checkpoint_p.def_impl(lambda *args, jaxpr, **params: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts,
                                                                 *args))
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **params: list(jaxpr.out_avals))
# debug_nans's re-run opens the body, so that an invalid value is traced to its equation.
nan_checks.deoptimized_rules[checkpoint_p] = (
    lambda *args, jaxpr, **params: nan_checks.eval_deoptimized(jaxpr.jaxpr, jaxpr.consts, args))
xla.register_lowering(checkpoint_p, lambda ctx, *args, jaxpr, **params: xla.lower_call(
    ctx, jaxpr, args, name="checkpoint"))


def _checkpoint_jvp(primals, tangents, *, jaxpr, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
  jvp_closed, consts = convert_constvars(jvp_closed)
  params = dict(params, differentiated=True)
  outs = checkpoint_p.bind(*consts, *primals, *[t for t in tangents if type(t) is not ad.Zero],
                           jaxpr=jvp_closed, **params)
  n = len(jaxpr.out_avals)
  it = iter(outs[n:])
  return outs[:n], [next(it) if nz else ad.Zero(a.to_tangent_aval())
                    for a, nz in zip(jaxpr.out_avals, out_nz)]

ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp


def _checkpoint_partial_eval(trace, *args, jaxpr, policy, **params):
  unknowns = [trace.is_unknown(x) for x in args]
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr_custom(
      jaxpr, unknowns, policy or checkpoint_policies.nothing_saveable)
  known, known_consts = convert_constvars(known)
  with set_current_trace(trace.parent):
    known_outs = checkpoint_p.bind(*known_consts, *[x for x, u in zip(args, unknowns) if not u],
                                   jaxpr=known, policy=policy, **params)
  n_known = len(known_outs) - num_res
  residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
  unknown_outs = trace.record(checkpoint_p,
                              [*residuals, *[x for x, u in zip(args, unknowns) if u]],
                              dict(jaxpr=unknown, policy=policy, **params))
  k, u = iter(known_outs), iter(unknown_outs)
  return [next(u) if unk else next(k) for unk in out_unknowns]

pe.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval


def _checkpoint_transpose(cts, *args, jaxpr, **params):
  undefined = [ad.is_undefined_primal(x) for x in args]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, list(args), cts)
  return [ct if u else None for ct, u in zip(cts_in, undefined)]

ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose


def _checkpoint_batch(axis_data, vals, dims, *, jaxpr, **params):
  batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  batched, consts = convert_constvars(batched)
  return checkpoint_p.bind(*consts, *vals, jaxpr=batched, **params), out_dims

batching.axis_primitive_batchers[checkpoint_p] = _checkpoint_batch


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True, policy=None,
               static_argnums: int | Sequence[int] = ()):
  """Make ``fun`` recompute its intermediates in the backward pass instead of storing them.

  ``policy(prim, params) -> bool`` says which values may be saved (see
  ``checkpoint_policies``); the default saves nothing but the inputs.
  """
  if fun is None:
    return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                             static_argnums=static_argnums)
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnums = tuple(static_argnums)
  # policy=None (JAX's default, printed as such) saves nothing but the inputs.

  @functools.wraps(fun)
  def checkpointed(*args, **kwargs):
    statics = {i: args[i] for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in statics]
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    out_tree_box = []

    def flat(*xs):
      d, kw = tree_util.tree_unflatten(in_tree, xs)
      it = iter(d)
      full = [statics[i] if i in statics else next(it) for i in range(len(args))]
      out_leaves, out_tree = tree_util.tree_flatten(fun(*full, **kw))
      out_tree_box.append(out_tree)
      return out_leaves

    closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                            getattr(fun, "__name__", "checkpoint"), "checkpoint")
    closed, consts = convert_constvars(closed)
    outs = checkpoint_p.bind(*consts, *leaves, jaxpr=closed, prevent_cse=prevent_cse,
                             policy=policy, differentiated=False)
    return tree_util.tree_unflatten(out_tree_box[0], outs)

  return checkpointed


remat = checkpoint
