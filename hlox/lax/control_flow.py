"""Structured control flow: ``cond``/``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``.

Each construct is one primitive whose parameters are closed jaxprs (without consts: values a
traced function closes over are hoisted into leading operands). Python callables are traced
once per (function, argument tree, argument types) and the trace is cached, so a loop body is
traced once per signature, eagerly as under ``jit``.

- ``cond_p(index, *operands, branches=(...))`` lowers to ``stablehlo.case``;
- ``while_p(*cond_consts, *body_consts, *carry, ...)`` lowers to ``stablehlo.while``;
- ``scan_p(*consts, *carry, *xs, jaxpr=..., length=..., reverse=...)`` lowers to a while loop
  with an iteration counter that slices ``xs`` and writes the stacked ``ys``.

Reverse mode works for ``cond``/``switch`` and ``scan`` (and ``fori_loop`` with static bounds,
which is a scan); ``while_loop`` supports forward mode only, as in JAX.
"""
from __future__ import annotations

import builtins
import inspect
import types
import weakref
from functools import partial
from typing import Callable, Sequence

import numpy as np

from hlox import monitoring

from hlox import _tree_transform as tree_util
from hlox.cache import LRUCache, PerFunctionCache
from hlox.config import config
from hlox.core import dtypes, sharding_types
from hlox.core import vma as vma_lib
from hlox.core.avals import ShapedArray
from hlox.core.shape_poly import _DimExpr, dimension_as_value
from hlox.core.refs import is_ref_aval
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, convert_constvars, dce_jaxpr,
                             eval_jaxpr, io_effect_names, is_effectful, trace_to_jaxpr)
from hlox.core.primitive import Primitive
from hlox.core.source_info import current_xla_metadata
from hlox.core.traceback_util import api_boundary
from hlox.core.tracer import Tracer, eval_trace, get_aval, set_current_trace, trace_ctx
from hlox.errors import ConcretizationTypeError
from hlox.interpreters import ad, batching, checkify, cost, nan_checks, state_discharge, xla
from hlox.interpreters import partial_eval as pe
from hlox.lax import base as _base
from hlox.lax import cumulative as _cum
from hlox.lax import elementwise as _ew
from hlox.lax import indexing as _ix
from hlox.lax.ad_util import stop_gradient
from hlox.lax.call import jit_p as _jit_p
from hlox.lax import state
from hlox.lax import reductions as _red
from hlox.lax import shapes as _shapes
from hlox.runtime.array import Array, device_put, type_sharding
from hlox.runtime import sharding as sharding_lib

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan",
           "cond_p", "while_p", "scan_p"]

_map = builtins.map  # ``map`` below is lax.map


# --- tracing Python callables ------------------------------------------------------------

# Held by each function, weakly: an entry's constants (the arrays ``fun`` closes over) live
# no longer than ``fun`` does.
_trace_cache = PerFunctionCache()


def _trace_fun(fun: Callable, in_tree, in_avals, what: str, splits=None):
  """Trace ``fun(*tree_unflatten(in_tree, flat))`` to a const-free ClosedJaxpr.

  Returns ``(closed, consts, out_tree)``: ``closed`` takes ``consts`` as its leading
  arguments. Cached per (function, tree, avals) unless the trace closed over tracers of an
  enclosing transformation (those are only valid in that transformation).
  """
  # The named axes in scope shape collectives in the body (their sizes, their names).
  key = (in_tree, tuple(in_avals), tuple(trace_ctx.axis_env), current_xla_metadata())
  # Operands split over Explicit mesh axes give the body's parameters types that say so.
  if splits is not None and any(s is not None for s in splits):
    key += (tuple(splits),)
  else:
    splits = None
  try:
    hit = _trace_cache.get(fun, key)
  except TypeError:  # an unhashable callable
    key, hit = None, None
  if hit is not None:
    return hit
  out_tree_box = []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_box.append(out_tree)
    return leaves

  name = getattr(fun, "__name__", what)
  monitoring.test_event("control_flow_trace", fun=name)
  closed = trace_to_jaxpr(flat, list(in_avals), f"{what} {name}", what, in_shardings=splits)
  closed, consts = convert_constvars(closed)
  result = (closed, consts, out_tree_box[0])
  if key is not None and not any(isinstance(c, Tracer) for c in consts):
    _trace_cache.put(fun, key, result)
  return result


_wrapper_cache = PerFunctionCache()


def _cached_wrapper(kind, fun, make):
  """The same wrapper object for the same ``fun`` (so trace caching sees one function).
  A plain function's wrapper calls it through a weak reference and is kept by the function
  itself: the cache keeps neither alive (nor the arrays ``fun`` closes over)."""
  try:
    w = _wrapper_cache.get(fun, (kind,))
  except TypeError:
    return make(fun)
  if w is None:
    w = make(_weakly_calling(fun) if type(fun) is types.FunctionType else fun)
    _wrapper_cache.put(fun, (kind,), w)
  return w


def _weakly_calling(fun):
  """``fun`` called through a weak reference, under its name."""
  ref = weakref.ref(fun)

  def call(*args, **kwargs):
    return ref()(*args, **kwargs)
  call.__name__, call.__qualname__ = fun.__name__, fun.__qualname__
  call.__module__, call.__doc__ = fun.__module__, fun.__doc__
  return call


_memo_cache = LRUCache()


def _memo(fn, *key):
  """``fn(*key)`` memoized: derived jaxprs (JVP, batched, split) are built once per input
  jaxpr and options, so eager calls of transformed loops hit the executable cache."""
  k = (fn, *key, current_xla_metadata())  # derived equations record the metadata in effect
  hit = _memo_cache.get(k)
  if hit is None:
    hit = fn(*key)
    _memo_cache.put(k, hit)
  return hit


# --- jaxpr surgery -----------------------------------------------------------------------

def _closed(invars, outvars, eqns) -> ClosedJaxpr:
  return ClosedJaxpr(Jaxpr([], invars, outvars, eqns), [])


def _with_invars(closed: ClosedJaxpr, invars) -> ClosedJaxpr:
  """``closed`` (no consts) with its invars replaced (a permutation, maybe plus unused)."""
  return _closed(invars, closed.jaxpr.outvars, closed.jaxpr.eqns)


def _fresh(avals):
  return [Var(a) for a in avals]


def _join_consts(closeds: Sequence[ClosedJaxpr], nconsts: Sequence[int]):
  """Jaxprs whose first ``nconsts[i]`` invars are consts become jaxprs that all take every
  jaxpr's consts (concatenated) first: branches of one ``cond`` share an operand list."""
  new = []
  for i, c in enumerate(closeds):
    invars = []
    for j, d in enumerate(closeds):
      consts_j = d.jaxpr.invars[:nconsts[j]]
      invars += consts_j if i == j else _fresh([v.aval for v in consts_j])
    new.append(_with_invars(c, invars + c.jaxpr.invars[nconsts[i]:]))
  return new


def _hoist(closeds: Sequence[ClosedJaxpr]):
  """Convert the consts of several closed jaxprs into shared leading invars."""
  converted = [convert_constvars(c) for c in closeds]
  consts = [x for _, cs in converted for x in cs]
  return _join_consts([c for c, _ in converted], [len(cs) for _, cs in converted]), consts


def _split(xs, *sizes):
  out, i = [], 0
  for n in sizes:
    out.append(list(xs[i:i + n]))
    i += n
  out.append(list(xs[i:]))
  return out


def _orf(a, b):
  return [x or y for x, y in zip(a, b)]


def _avals_str(avals) -> str:
  return ", ".join(a.str_short() for a in avals)


def _paths(tree) -> list[str]:
  """Printable key paths of the leaves of a treedef."""
  dummy = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
  return [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(dummy)[0]]


def _type_diff(a, b) -> str:
  mismatches = []
  if a.dtype != b.dtype:
    mismatches.append("the dtypes do not match")
  if a.shape != b.shape:
    mismatches.append("the shapes do not match")
  if not mismatches and getattr(a, "sharding", None) != getattr(b, "sharding", None):
    return "the shardings do not match"
  if not mismatches and _vma(a) != _vma(b):
    return "the manual axis types do not match"
  if not mismatches:
    return "the weak types do not match"
  return mismatches[0] if len(mismatches) == 1 else \
      ", ".join(mismatches[:-1]) + ", and " + mismatches[-1]


def _capitalize(s: str) -> str:
  return s[:1].upper() + s[1:]


def _listed(diffs, compact=False) -> str:
  """One difference as a sentence, several as a bulleted list (as JAX words them)."""
  if len(diffs) == 1:
    return f"{_capitalize(diffs[0])}.\n"
  if compact:
    return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
  return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _fun_sourceinfo(fun) -> str:
  while isinstance(fun, partial):
    fun = fun.func
  code = getattr(fun, "__code__", None)
  if code is None:
    return str(fun)
  return f"{getattr(fun, '__name__', '<unknown>')} at {code.co_filename}:{code.co_firstlineno}"


def _leaf_paths(tree) -> list:
  dummy = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
  return [p for p, _ in tree_util.tree_flatten_with_path(dummy)[0]]


def _check_branch_outputs(api, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
  """JAX's errors for branches whose outputs differ in structure or type."""
  component = lambda p: f" at path {tree_util.keystr(p)}" if p else ""  # noqa: E731
  where = f"{name1} is {_fun_sourceinfo(f1)}\n{name2} is {_fun_sourceinfo(f2)}\n\n"
  if tree1 != tree2:
    diffs = [f"{name1} output{component(p)} is a {t1} but {name2} output{component(p)} is a "
             f"{t2}, so {why}" for p, t1, t2, why in
             tree_util.treedef_equality_errors(tree1, tree2)]
    if not diffs:  # the same structure with other node metadata
      diffs = [f"{name1} output is {tree1} but {name2} output is {tree2}"]
    listed = f"{diffs[0]}.\n" if len(diffs) == 1 else _listed(diffs, compact=True)
    raise TypeError(f"{api} branch outputs must have the same pytree structure, but they "
                    f"differ:\n\n{where}{listed}\nRevise {name1} and/or {name2} so that "
                    "they have the same pytree structure.")
  diffs = [f"the output of {name1}{component(p)} has type {a.str_short(short_dtypes=False)} "
           f"but the corresponding output of {name2} has type "
           f"{b.str_short(short_dtypes=False)}, so {_type_diff(a, b)}"
           for p, a, b in zip(_leaf_paths(tree1), avals1, avals2)
           if not _typematch(a, b, vma=False)]  # (branches' vmas are joined)
  if diffs:
    raise TypeError(f"{api} branches must have equal output types but they differ.\n\n"
                    f"{where}{_listed(diffs, compact=True)}\nRevise {name1} and/or {name2} so that "
                    "all output types match.")


def _typematch(a, b, vma: bool = True) -> bool:
  return (a.shape == b.shape and a.dtype == b.dtype
          and getattr(a, "sharding", None) == getattr(b, "sharding", None)
          and (not vma or _vma(a) == _vma(b)))


def _vma(aval) -> frozenset:
  return frozenset(getattr(aval, "_vma", ()))


# --- sharding in types (``core/sharding_types.py``) ----------------------------------------

def _splits(leaves):
  """The operands' splits over Explicit mesh axes (None when no operand is split)."""
  if not sharding_types.active[0]:
    return None
  splits = [type_sharding(x) for x in leaves]
  return splits if any(s is not None for s in splits) else None


def _typed(aval, split):
  """``aval`` with its split in its type (what error messages print and compare)."""
  return aval if split is None else aval.update(sharding=sharding_lib.named_of_type(split))


def _typed_outs(closed, start: int = 0, stop=None):
  outvars = closed.jaxpr.outvars[start:stop]
  return [_typed(v.aval, getattr(v, "sharding", None)) for v in outvars]


def _out_splits(closed, start: int = 0, stop=None):
  return [getattr(v, "sharding", None) for v in closed.jaxpr.outvars[start:stop]]


# --- cond / switch -----------------------------------------------------------------------

class _CondPrimitive(Primitive):
  multiple_results = True


cond_p = _CondPrimitive("cond")


def _cond_abstract_eval(index, *ops, branches):
  if index.shape != () or index.dtype != dtypes.int32:
    raise TypeError(f"cond: index must be an int32 scalar, got {index.str_short()}")
  for br in branches:
    if len(br.in_avals) != len(ops):
      raise TypeError(f"cond: branches take {len(br.in_avals)} operands, got {len(ops)}")
  # As JAX: the first branch's output types, weak types included (the branches agree up to
  # weak types).
  return list(branches[0].out_avals)

cond_p.def_abstract_eval(_cond_abstract_eval)
cond_p.def_impl(partial(xla.apply_primitive, cond_p))


def _cond_deoptimized(index, *ops, branches):
  # The debug_nans re-run: the chosen branch equation by equation. The index is clamped,
  # as ``stablehlo.case`` clamps it.
  i = builtins.min(builtins.max(int(np.asarray(index)), 0), len(branches) - 1)
  return nan_checks.eval_deoptimized(branches[i].jaxpr, branches[i].consts, ops)

nan_checks.deoptimized_rules[cond_p] = _cond_deoptimized


def _constant_index(index):
  """The value of a branch index that is a constant in the program (a ``platform_dependent``
  choice), else None."""
  owner = index.owner
  op = getattr(owner, "operation", owner)  # an OpView, an Operation or a Block
  if not isinstance(op, ir.Operation) or op.name != "stablehlo.constant":
    return None
  attr = ir.DenseIntElementsAttr(op.attributes["value"])
  return int(attr[0]) if len(attr) else None


def _cond_lowering(ctx, index, *ops, branches):
  mctx = ctx.module_context
  chosen = _constant_index(index)
  if chosen is not None:
    # Only the branch a constant index picks is lowered (as JAX does for
    # platform_dependent): the others may use what this platform cannot lower.
    i = builtins.min(builtins.max(chosen, 0), len(branches) - 1)
    br = branches[i]
    consts = [xla.ir_constant(np.asarray(c)) for c in br.consts]
    with mctx.scoped("cond", f"branch_{i}_fun"):
      return xla.lower_jaxpr(mctx, br.jaxpr, consts, list(ops))
  out_types = [xla.aval_to_ir_type(a) for a in ctx.avals_out]
  # Ordered callbacks in a branch continue the caller's token chain and hand it back.
  ordered = xla.ordered_effects and any(xla.has_ordered_effect(br.jaxpr) for br in branches)
  token = mctx.ordered_token() if ordered else None
  case = hlo.CaseOp(out_types + ([hlo.TokenType.get()] if ordered else []), index,
                    len(branches))
  for i, br in enumerate(branches):
    block = case.regions[i].blocks.append()
    with ir.InsertionPoint(block):
      if ordered:
        mctx.set_ordered_token(token)
      consts = [xla.ir_constant(np.asarray(c)) for c in br.consts]
      with mctx.scoped("cond", f"branch_{i}_fun"):  # JAX's region names
        outs = xla.lower_jaxpr(mctx, br.jaxpr, consts, list(ops))
      hlo.return_(outs + ([mctx.ordered_token()] if ordered else []))
  results = list(case.results)
  if ordered:
    mctx.set_ordered_token(results.pop())
  return results

xla.register_lowering(cond_p, _cond_lowering)


def _cond_jvp(primals, tangents, *, branches):
  index, *ops = primals
  nz = [type(t) is not ad.Zero for t in tangents[1:]]
  out_nz = [False] * len(branches[0].out_avals)
  for br in branches:
    out_nz = _orf(out_nz, _memo(_jvp_jaxpr, br, tuple(nz), False)[1])
  jvps = [_memo(_jvp_jaxpr, br, tuple(nz), tuple(out_nz))[0] for br in branches]
  jvps, consts = _memo(_hoist_tuple, tuple(jvps))
  nz_tangents = [t for t in tangents[1:] if type(t) is not ad.Zero]
  outs = cond_p.bind(index, *consts, *ops, *nz_tangents, branches=jvps)
  n = len(out_nz)
  it = iter(outs[n:])
  return outs[:n], [next(it) if z else ad.Zero(a.to_tangent_aval())
                    for a, z in zip(branches[0].out_avals, out_nz)]


def _jvp_jaxpr(closed, nz, instantiate):
  return ad.jvp_jaxpr(closed, list(nz), instantiate if isinstance(instantiate, bool)
                      else list(instantiate))


def _hoist_tuple(closeds):
  new, consts = _hoist(closeds)
  return tuple(new), consts

ad.primitive_jvps[cond_p] = _cond_jvp


def _cond_partial_eval(trace, index, *ops, branches):
  if trace.is_unknown(index):
    return trace.record(cond_p, [index, *ops], dict(branches=branches))
  uk = tuple(trace.is_unknown(x) for x in ops)
  known_brs, unknown_brs, out_uk, fwd, slot_avals = _memo(_cond_split, branches, uk)
  known_ops = [x for x, u in zip(ops, uk) if not u]
  with set_current_trace(trace.parent):
    known_outs = cond_p.bind(index, *known_brs[1], *known_ops, branches=known_brs[0])
  n_known = len(known_outs) - len(slot_avals)
  residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
  unknown_outs = trace.record(
      cond_p, [index, *[known_ops[i] for i in fwd], *residuals,
               *[x for x, u in zip(ops, uk) if u]], dict(branches=unknown_brs))
  k, u = iter(known_outs), iter(unknown_outs)
  return [next(u) if unk else next(k) for unk in out_uk]


def _cond_split(branches, uk, split=None):
  """Split every branch with the same unknown inputs, and give the branches one residual
  list. A residual that is a known operand passed through is not returned by the known cond:
  the unknown cond takes that operand itself, once however many branches need it. The other
  residuals share slots by type (the branches are exclusive, so branch 0's ``sin(x)`` and
  branch 1's ``cos(x)`` can travel in one ``f32[n]`` slot); a branch fills the slots it does
  not use with zeros.

  Returns ``((known branches, their consts), unknown branches, out_uk, fwd, slot_avals)``:
  ``fwd`` lists the known operands (indices among them) the unknown branches take first.
  """
  split = split or pe.partial_eval_jaxpr
  out_uk = [False] * len(branches[0].out_avals)
  for br in branches:
    out_uk = _orf(out_uk, split(br, list(uk))[2])
  splits = [split(br, list(uk), instantiate=out_uk) for br in branches]
  fwd, slot_avals = [], []
  # Per branch: residual position -> ("fwd", position in fwd) or ("slot", slot number).
  places = []
  for known, _, _, num_res in splits:
    invars = known.jaxpr.invars
    res_outs = known.jaxpr.outvars[len(known.jaxpr.outvars) - num_res:]
    taken, place = set(), []
    for v in res_outs:
      if type(v) is not Literal and v in invars and ("fwd", invars.index(v)) not in taken:
        i = invars.index(v)
        taken.add(("fwd", i))
        if i not in fwd:
          fwd.append(i)
        place.append(("fwd", fwd.index(i)))
        continue
      slot = next((j for j, a in enumerate(slot_avals)
                   if ("slot", j) not in taken and a == v.aval), None)
      if slot is None:
        slot = len(slot_avals)
        slot_avals.append(v.aval)
      taken.add(("slot", slot))
      place.append(("slot", slot))
    places.append(place)
  known_in = [a for a, u in zip(branches[0].in_avals, uk) if not u]
  known_new = []
  for (known, _, _, num_res), place in zip(splits, places):
    def fun(*xs, known=known, num_res=num_res, place=place):
      outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
      n_out = len(outs) - num_res
      slots = [None] * len(slot_avals)
      for (kind, j), r in zip(place, outs[n_out:]):
        if kind == "slot":
          slots[j] = r
      return outs[:n_out] + [ad.zeros_like_aval(a) if r is None else r
                             for r, a in zip(slots, slot_avals)]
    known_new.append(trace_to_jaxpr(fun, known_in, "cond known", "cond"))
  known_new, known_consts = _hoist(known_new)
  fwd_avals = [known_in[i] for i in fwd]
  unknown_new = []
  for (_, unknown, _, num_res), place in zip(splits, places):
    fwd_vars, slot_vars = _fresh(fwd_avals), _fresh(slot_avals)
    for (kind, j), v in zip(place, unknown.jaxpr.invars[:num_res]):
      (fwd_vars if kind == "fwd" else slot_vars)[j] = v
    unknown_new.append(_with_invars(unknown, fwd_vars + slot_vars
                                    + unknown.jaxpr.invars[num_res:]))
  return (tuple(known_new), known_consts), tuple(unknown_new), out_uk, tuple(fwd), slot_avals

pe.partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_split_custom(branches, uk, saveable, is_saved):
  # Known outputs that some branch computes without saving them are computed again by the
  # unknown cond (returned after its unknown outputs) when the enclosing split needs them,
  # as JAX's unknown cond computes every output.
  out_uk = [False] * len(branches[0].out_avals)
  for br in branches:
    out_uk = _orf(out_uk, pe.partial_eval_jaxpr_custom(br, list(uk), saveable, is_saved)[2])
  restage = [False] * len(out_uk)
  for br in branches:
    restage = _orf(restage, pe.recomputable_outputs(br, out_uk, saveable, is_saved))
  split = lambda br, uk, instantiate=False: pe.partial_eval_jaxpr_custom(
      br, uk, saveable, is_saved, instantiate, also_unknown=restage)
  return (*_cond_split(branches, uk, split), tuple(restage))


def _cond_restaged(unknown_brs, n_unknown: int, used, n_res: int):
  """The unknown branches returning the unknown outputs and the recomputed known ones in
  ``used``, without residual inputs no branch then reads; and per input whether it stays."""
  dced = [pe.dce_pruned(br.jaxpr, [True] * n_unknown + list(used)) for br in unknown_brs]
  reads = [any(r) or i >= n_res for i, r in enumerate(zip(*[r for _, r in dced]))]
  return tuple(_closed([v for v, r in zip(j.invars, reads) if r], j.outvars, j.eqns)
               for j, _ in dced), reads


def _cond_partial_eval_custom(eqn, ins_uk, saveable, is_saved):
  # Under a checkpoint policy: the branches are split by the policy (what it does not save
  # is recomputed inside the unknown branch), their residuals sharing slots as above. A
  # cond whose operands are all known is split too (``pe.splits_known_calls``): its unknown
  # side then only recomputes known outputs, if the enclosing split needs them.
  if ins_uk[0]:
    return None
  branches, uk = eqn.params["branches"], tuple(ins_uk[1:])
  (known_brs, known_consts), unknown_brs, out_uk, fwd, slot_avals, restage = _memo(
      _cond_split_custom, branches, uk, saveable, is_saved)
  ops = eqn.invars[1:]
  known_ops = [v for v, u in zip(ops, uk) if not u]
  known = trace_to_jaxpr(
      lambda index, *xs: cond_p.bind(index, *known_consts, *xs, branches=known_brs),
      [eqn.invars[0].aval] + [v.aval for v in known_ops], "cond known", "cond")
  n_res = len(fwd) + len(slot_avals)

  def make_unknown(res_vars, used=()):
    used = tuple(used) + (False,) * (sum(restage) - len(used))
    brs, reads = _memo(_cond_restaged, unknown_brs, sum(out_uk), used, n_res)
    ins = [*[known_ops[i] for i in fwd], *res_vars, *[v for v, u in zip(ops, uk) if u]]
    again = [v for v, r in zip(eqn.outvars, restage) if r]
    return JaxprEqn([eqn.invars[0], *[x for x, r in zip(ins, reads) if r]],
                    [v for v, u in zip(eqn.outvars, out_uk) if u]
                    + [v for v, k in zip(again, used) if k], cond_p,
                    dict(branches=brs), eqn.source_info)
  return known, out_uk, slot_avals, make_unknown, restage

pe.partial_eval_jaxpr_custom_rules[cond_p] = _cond_partial_eval_custom
pe.splits_known_calls.add(cond_p)


def _cond_prune_outputs(eqn, used):
  # Unread outputs go from every branch, with their work and the operands no branch then
  # reads (a recomputing cond computes only what is asked of it).
  if not any(used) or is_effectful(eqn):
    return eqn
  brs, reads = _memo(_cond_restaged, eqn.params["branches"], 0, tuple(used),
                     len(eqn.invars) - 1)
  return JaxprEqn([eqn.invars[0], *[v for v, r in zip(eqn.invars[1:], reads) if r]],
                  [v for v, u in zip(eqn.outvars, used) if u], cond_p, dict(branches=brs),
                  eqn.source_info)

pe.output_pruning_rules[cond_p] = _cond_prune_outputs


def _cond_transpose(cts, index, *ops, branches):
  if ad.is_undefined_primal(index):
    raise ValueError("cond: cannot transpose with respect to the branch index")
  undefined = [ad.is_undefined_primal(x) for x in ops]
  defined = [x for x, u in zip(ops, undefined) if not u]
  ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)
  nz_cts = [ct for ct in cts if type(ct) is not ad.Zero]
  in_avals = tuple([get_aval(x) for x in defined] + [get_aval(ct) for ct in nz_cts])
  op_avals = tuple(x.aval if u else None for x, u in zip(ops, undefined))
  t_branches, consts = _memo(_cond_transpose_jaxprs, branches, op_avals, ct_nz, in_avals)
  outs = iter(cond_p.bind(index, *consts, *defined, *nz_cts, branches=t_branches))
  return [None] + [next(outs) if u else None for u in undefined]


def _cond_transpose_jaxprs(branches, op_avals, ct_nz, in_avals):
  undefined = [a is not None for a in op_avals]
  n_def = len(undefined) - sum(undefined)

  def make(br):
    def transposed(*flat):
      it_def, it_ct = iter(flat[:n_def]), iter(flat[n_def:])
      args = [ad.UndefinedPrimal(a) if u else next(it_def) for a, u in zip(op_avals, undefined)]
      full_cts = [next(it_ct) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(br.out_avals, ct_nz)]
      cts_in = ad.backward_pass(br.jaxpr, br.consts, args, full_cts)
      return [ad.instantiate_zeros(ct) for ct, u in zip(cts_in, undefined) if u]
    return trace_to_jaxpr(transposed, list(in_avals), "cond transpose", "transpose")
  return _hoist_tuple(tuple(make(br) for br in branches))

ad.primitive_transposes[cond_p] = _cond_transpose


def _cond_batch(axis_data, vals, dims, *, branches):
  index, *ops = vals
  idim, *odims = dims
  size = axis_data.size
  if idim is not None:
    # A batched predicate: every branch runs on the whole batch and ``select_n`` picks.
    # An IO effect would then happen for examples that did not take its branch.
    io = [n for br in branches for n in io_effect_names(br)]
    if io:
      raise NotImplementedError(f"IO effect not supported in vmap-of-cond. The branches "
                                f"call {', '.join(sorted(set(io)))} and the predicate is "
                                "batched: call it outside the cond, or make the predicate "
                                "the same for every example")
    index = batching.moveaxis(index, idim, 0)
    ops = [batching.bdim_at_front(x, d, size) for x, d in zip(ops, odims)]
    results = []
    for i, br in enumerate(branches):
      bj, _ = _memo(_batch_jaxpr, br, size, axis_data.name, (0,) * len(ops), True)
      # As JAX: the examples that do not take this branch see its operands as constants, so
      # that no derivative flows through the branch they did not take (a NaN or inf there,
      # sqrt at 0 say, would otherwise poison the gradient).
      taken = _ew.eq(index, np.int32(i))
      guarded = [_select_batched(taken, x, stop_gradient(x)) for x in ops]
      results.append(eval_jaxpr(bj.jaxpr, bj.consts, *guarded))
    outs = []
    for k in range(len(branches[0].out_avals)):
      cases = [r[k] for r in results]
      shape = get_aval(cases[0]).shape
      which = _shapes.broadcast_in_dim(index, shape, (0,))
      if len(cases) == 2:
        which = _ew.ne(which, np.int32(0))
      outs.append(_ew.select_n(which, *cases))
    return outs, [0] * len(outs)
  out_bat = [False] * len(branches[0].out_avals)
  for br in branches:
    _, od = _memo(_batch_jaxpr, br, size, axis_data.name, tuple(odims), False)
    out_bat = _orf(out_bat, [d is not None for d in od])
  bjs = tuple(_memo(_batch_jaxpr, br, size, axis_data.name, tuple(odims), tuple(out_bat))[0]
              for br in branches)
  bjs, consts = _memo(_hoist_tuple, bjs)
  outs = cond_p.bind(index, *consts, *ops, branches=bjs)
  return outs, [0 if b else None for b in out_bat]


def _select_batched(pred, on_true, on_false):
  """``select`` by a per-example ``pred`` (batch dimension first) of batched operands."""
  if not dtypes.is_inexact(get_aval(on_true).dtype):
    return on_true  # (integers carry no derivative)
  shape = get_aval(on_true).shape
  return _ew.select_n(_shapes.broadcast_in_dim(pred, shape, (0,)), on_false, on_true)


def _batch_jaxpr(closed, size, name, dims, instantiate):
  return batching.batch_jaxpr(closed, batching.AxisData(size, name), list(dims),
                              instantiate if isinstance(instantiate, bool)
                              else list(instantiate))

batching.fancy_primitive_batchers[cond_p] = _cond_batch


def _trace_branches(api, funs, names, operands):
  leaves, in_tree = tree_util.tree_flatten(tuple(operands))
  avals = [get_aval(x) for x in leaves]
  splits = _splits(leaves)
  traced = [_trace_fun(f, in_tree, avals, api, splits) for f in funs]
  out_tree0 = traced[0][2]
  out_avals0 = _typed_outs(traced[0][0])
  for (closed, _, out_tree), name, fun in zip(traced[1:], names[1:], funs[1:]):
    _check_branch_outputs(api, names[0], name, funs[0], fun, out_tree0, out_avals0,
                          out_tree, _typed_outs(closed))
  joined = vma_lib.branch_outputs_joined([c.out_avals for c, _, _ in traced])
  if joined is not None:  # in a check_vma shard_map body: outputs pvary-ed to agree (JAX)
    traced = [_trace_fun(_outputs_varying(f, joined), in_tree, avals, api, splits)
              for f in funs]
  # A value several branches close over is passed once (as JAX does): each branch's consts
  # are mapped to slots of one shared, deduplicated list.
  consts, slot_of, slots = [], {}, []
  for _, cs, _ in traced:
    branch_slots = []
    for x in cs:
      if id(x) not in slot_of:
        slot_of[id(x)] = len(consts)
        consts.append(x)
      branch_slots.append(slot_of[id(x)])
    slots.append(tuple(branch_slots))
  # Memoized so that the same branch functions give the same jaxpr objects on every call
  # (the derived-jaxpr and executable caches are keyed on them).
  branches = _memo(_join_shared_consts, tuple(c for c, _, _ in traced), tuple(slots),
                   tuple(get_aval(x) for x in consts))
  return branches, consts, leaves, out_tree0


def _outputs_varying(fun, vmas):
  def varying(*args):
    leaves, tree = tree_util.tree_flatten(fun(*args))
    if len(leaves) != len(vmas):  # other structures: the branch check reports them
      return tree_util.tree_unflatten(tree, leaves)
    return tree_util.tree_unflatten(tree, [vma_lib.raise_to(x, v)
                                           for x, v in zip(leaves, vmas)])
  varying.__name__ = getattr(fun, "__name__", "branch")
  return varying


def _join_shared_consts(closeds, slots, const_avals):
  """Jaxprs whose leading invars are consts (at ``slots`` of a shared list of values of
  ``const_avals``) become jaxprs that all take the whole shared list first."""
  new = []
  for c, branch_slots in zip(closeds, slots):
    invars = _fresh(const_avals)
    for v, k in zip(c.jaxpr.invars, branch_slots):
      invars[k] = v
    new.append(_with_invars(c, invars + c.jaxpr.invars[len(branch_slots):]))
  return tuple(new)


_NO_OPERAND = object()


def _operands_with_keyword(api, operands, operand):
  # JAX's older spelling ``cond(pred, t, f, operand=x)``: one operand, passed by keyword.
  if operand is _NO_OPERAND:
    return operands
  if operands:
    raise TypeError(f"{api}: if 'operand' keyword is passed then no positional operands can "
                    f"be passed, got {operand=} and positional operands {operands}")
  return (operand,)


@api_boundary
def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
  """Runs ``true_fun(*operands)`` if ``pred`` is true, else ``false_fun(*operands)``.

  Both branches are traced (whatever ``pred`` is) into one ``cond`` primitive, so they must
  take the same operands and return the same pytree of arrays with identical shapes and
  dtypes (weak types may differ); otherwise ``TypeError``. ``pred`` must be a scalar bool or
  number (nonzero means true); a non-scalar ``pred`` raises ``TypeError``. Eagerly and under
  ``jit`` only the chosen branch runs. Under ``vmap`` with a batched ``pred`` both branches
  run and the results are selected elementwise. Both forward and reverse mode differentiate
  through the branch taken.

  Args:
    pred: scalar boolean or numeric predicate (may be traced).
    true_fun: function called with ``*operands`` when ``pred`` is true.
    false_fun: function called with ``*operands`` when ``pred`` is false.
    *operands: pytrees of arrays passed to the branch.
    operand: keyword-only older form: a single operand, given instead of ``*operands``.

  Returns:
    The output pytree of the branch taken.

  Examples:
    >>> lax.cond(True, lambda x: x + 1, lambda x: x - 1, jnp.float32(5))
    Array(6., dtype=float32)
    >>> hlox.vmap(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))(
    ...     jnp.array([True, False]), jnp.array([1, 1]))
    Array([2, 0], dtype=int32)

  See also:
    ``switch`` for more than two branches, ``select`` for an elementwise choice.
  """
  if (not callable(true_fun) and callable(false_fun) and len(operands) == 2
      and callable(operands[1]) and operand is _NO_OPERAND):
    # The old form ``cond(pred, true_operand, true_fun, false_operand, false_fun)``, which
    # JAX still accepts (numpyro uses it): each branch gets its own operand.
    x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
    return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
  operands = _operands_with_keyword("cond", operands, operand)
  if not (callable(true_fun) and callable(false_fun)):
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable, got "
                    f"{type(true_fun).__name__} and {type(false_fun).__name__}")
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, (str, tuple, list)):
    raise TypeError(f"cond: Pred must be a scalar, got {pred} of type {type(pred)}")
  try:
    aval = get_aval(pred)
  except TypeError:
    raise TypeError(f"cond: Pred type must be either boolean or number, got {pred}.") from None
  if aval.shape != ():
    raise TypeError(f"cond: pred must be a scalar, got {aval.str_short()}")
  if aval.dtype != dtypes.bool_:
    if not (dtypes.is_int(aval.dtype) or dtypes.is_float(aval.dtype)):
      raise TypeError(f"cond: pred must be a boolean or number scalar, got "
                      f"{aval.str_short()}")
    pred = _ew.ne(pred, np.zeros((), aval.dtype)[()])
  index = _ew.convert_element_type(pred, np.int32)
  branches, consts, leaves, out_tree = _trace_branches(
      "cond", [true_fun, false_fun], ["true_fun", "false_fun"], operands)
  # Index 0 is the false branch (as in JAX); every branch takes all consts, so reordering
  # the jaxprs keeps their signatures.
  outs = _bind_cond(index, branches[::-1], consts, leaves)
  return tree_util.tree_unflatten(out_tree, outs)


def _bind_cond(index, branches, consts, leaves) -> list:
  """``cond_p`` of ``branches``, except for the outputs that every branch passes through
  from the same operand: as JAX, those are that operand itself (no copy, and under vmap an
  unbatched operand stays unbatched)."""
  inputs = [*consts, *leaves]
  ref_pos = _ref_positions(inputs)
  if ref_pos:  # branches that read or write references: discharged, the values written back
    return _bind_cond_with_refs(index, branches, len(consts), inputs, ref_pos)
  forwarded = _forwarded_outputs(branches)
  if not any(f is not None for f in forwarded):
    return cond_p.bind(index, *inputs, branches=branches)
  pruned = _memo(_prune_forwarded, branches, tuple(forwarded))
  outs = iter(cond_p.bind(index, *inputs, branches=pruned))
  return [next(outs) if f is None else _forwarded_value(inputs[f]) for f in forwarded]


def _bind_cond_with_refs(index, branches, nconsts, inputs, ref_pos) -> list:
  """A cond whose inputs (consts or operands) hold references: each branch is made pure,
  taking the references' values (one per distinct reference, however often it is passed)
  and returning their final values after its outputs; the cond reads them before and
  writes them back after."""
  refs, groups = [], []
  for i in ref_pos:
    k = next((k for k, r in enumerate(refs) if r is inputs[i]), None)
    if k is None:
      k = len(refs)
      refs.append(inputs[i])
    groups.append(k)
  pure = _memo(_discharge_branches, branches, tuple(ref_pos), tuple(groups))
  others = [x for i, x in enumerate(inputs) if i not in ref_pos]
  outs = _bind_cond(index, pure, [], others + [state.get(r, ...) for r in refs])
  n = len(outs) - len(refs)
  for r, v in zip(refs, outs[n:]):
    state.set(r, ..., v)
  return outs[:n]


def _discharge_branches(branches, ref_pos, groups):
  """Per branch ``(non-reference inputs, distinct reference values) -> (outputs, final
  reference values)``: the references are made afresh inside (so aliases stay aliases),
  then discharged."""
  def pure(branch):
    avals = branch.in_avals
    others = [i for i in range(len(avals)) if i not in ref_pos]
    ref_avals = {}
    for i, k in zip(ref_pos, groups):
      ref_avals.setdefault(k, avals[i].inner_aval)

    def fun(*args):
      refs = [state.new_ref(v) for v in args[len(others):]]
      full = [None] * len(avals)
      for i, v in zip(others, args):
        full[i] = v
      for i, k in zip(ref_pos, groups):
        full[i] = refs[k]
      outs = eval_jaxpr(branch.jaxpr, branch.consts, *full)
      return list(outs) + [state.freeze(r) for r in refs]

    in_avals = [avals[i] for i in others] + [ref_avals[k] for k in range(len(ref_avals))]
    traced = trace_to_jaxpr(fun, in_avals, "cond branch", "cond")
    return state_discharge.discharge_jaxpr(traced)
  return tuple(pure(b) for b in branches)


def _forwarded_outputs(branches) -> list:
  """Per output: the index of the input every branch returns there unchanged, or None."""
  def sources(closed):
    position = {id(v): i for i, v in enumerate(closed.jaxpr.invars)}
    return [position.get(id(o)) for o in closed.jaxpr.outvars]
  per_branch = [sources(b) for b in branches]
  return [s[0] if len(set(s)) == 1 else None for s in zip(*per_branch)]


def _prune_forwarded(branches, forwarded):
  return tuple(_closed(b.jaxpr.invars, [o for o, f in zip(b.jaxpr.outvars, forwarded)
                                        if f is None], b.jaxpr.eqns) for b in branches)


def _forwarded_value(x):
  # JAX's ``lax.asarray``: Arrays and tracers as they are, host values made arrays.
  return x if isinstance(x, (Array, Tracer)) else device_put(x)


@api_boundary
def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
  """Runs ``branches[index](*operands)``, choosing the branch by an integer index.

  ``index`` is clamped to ``[0, len(branches) - 1]`` (an out-of-range index picks the first
  or last branch rather than raising). It must be an integer scalar; a float or non-scalar
  index raises ``TypeError``. All branches are traced and must return the same pytree of
  identically shaped and typed arrays. Under ``vmap`` with a batched index every branch runs
  and the results are selected per element. Differentiable in both modes.

  Args:
    index: integer scalar (may be traced) choosing the branch.
    branches: non-empty sequence of functions, each called with ``*operands``.
    *operands: pytrees of arrays passed to the branch.
    operand: keyword-only older form: a single operand, given instead of ``*operands``.

  Returns:
    The output pytree of the chosen branch.

  Examples:
    >>> branches = [lambda x: x, lambda x: x + 1, lambda x: -x]
    >>> lax.switch(2, branches, jnp.float32(3))
    Array(-3., dtype=float32)
    >>> lax.switch(7, branches, jnp.float32(3))  # clamped to the last branch
    Array(-3., dtype=float32)

  See also:
    ``cond`` for a boolean predicate.
  """
  operands = _operands_with_keyword("switch", operands, operand)
  branches = list(branches)
  if not branches:
    raise ValueError("switch: Empty branch sequence")
  for i, b in enumerate(branches):
    if not callable(b):
      raise TypeError(f"lax.switch: branches must be callable, but branch {i} is "
                      f"{type(b).__name__}")
  if isinstance(index, (tuple, list)):
    raise TypeError(f"switch: Branch index must be scalar, got {index} of shape "
                    f"{np.shape(index)}.")
  try:
    aval = get_aval(index)
  except TypeError:
    raise TypeError(f"switch: Index type must be an integer, got {index}.") from None
  if aval.shape != () or not (dtypes.is_int(aval.dtype) or aval.dtype == dtypes.bool_):
    raise TypeError(f"switch: index must be an integer scalar, got {aval.str_short()}")
  if len(branches) == 1:
    return branches[0](*operands)
  static = _static_int(index)
  if static is not None and trace_ctx.trace is eval_trace:
    # clamp on the host: no device op for a concrete index
    index = np.int32(builtins.min(builtins.max(static, 0), len(branches) - 1))
  else:  # traced, the clamp is an equation whatever the index is, as JAX's
    if static is not None and not hasattr(index, "aval"):  # a host number: a literal
      index = np.int32(static)
    else:
      index = _ew.convert_element_type(index, np.int32)
    index = _ew.clamp(np.int32(0), index, np.int32(len(branches) - 1))
  return _switch(index, branches, operands)


def _switch(index, branches, operands):
  """``switch`` of an int32 ``index`` already in range."""
  names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]  # JAX's names
  jaxprs, consts, leaves, out_tree = _trace_branches("switch", branches, names, operands)
  outs = _bind_cond(index, jaxprs, consts, leaves)
  return tree_util.tree_unflatten(out_tree, outs)


# --- while_loop --------------------------------------------------------------------------

class _WhilePrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    return {"body_jaxpr": params["body_jaxpr"], "body_nconsts": params["body_nconsts"],
            "cond_jaxpr": params["cond_jaxpr"], "cond_nconsts": params["cond_nconsts"]}


while_p = _WhilePrimitive("while")


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # The body's output types (as JAX): a weakly typed initial carry that the body makes
  # strong comes out strong.
  return list(body_jaxpr.out_avals)

while_p.def_abstract_eval(_while_abstract_eval)
while_p.def_impl(partial(xla.apply_primitive, while_p))


def _while_deoptimized(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # The debug_nans re-run: the loop in Python, its predicate and body equation by equation.
  cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)
  run = nan_checks.eval_deoptimized
  while bool(np.asarray(run(cond_jaxpr.jaxpr, cond_jaxpr.consts, [*cconsts, *carry])[0])):
    carry = run(body_jaxpr.jaxpr, body_jaxpr.consts, [*bconsts, *carry])
  return carry

nan_checks.deoptimized_rules[while_p] = _while_deoptimized


def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # Consts travel as loop-carried values so that the regions need nothing from outside.
  mctx = ctx.module_context
  types = [xla.aval_to_ir_type(a) for a in ctx.avals_in]
  # Ordered callbacks in the loop continue the caller's token chain: the token is carried
  # last, after the loop's own values.
  ordered = xla.ordered_effects and (xla.has_ordered_effect(cond_jaxpr.jaxpr)
                                     or xla.has_ordered_effect(body_jaxpr.jaxpr))
  extra = [hlo.TokenType.get()] if ordered else []
  loop = hlo.WhileOp(types + extra, list(args) + ([mctx.ordered_token()] if ordered else []))
  cond_block = loop.regions[0].blocks.append(*types, *extra)
  with ir.InsertionPoint(cond_block):
    cc, _, carry = _split(list(cond_block.arguments)[:len(types)], cond_nconsts, body_nconsts)
    if ordered:
      mctx.set_ordered_token(cond_block.arguments[len(types)])
    consts = [xla.ir_constant(np.asarray(c)) for c in cond_jaxpr.consts]
    with mctx.scoped("while", "cond"):  # JAX's region names
      pred, = xla.lower_jaxpr(mctx, cond_jaxpr.jaxpr, consts, cc + carry)
    hlo.return_([pred])
  body_block = loop.regions[1].blocks.append(*types, *extra)
  with ir.InsertionPoint(body_block):
    cc, bc, carry = _split(list(body_block.arguments)[:len(types)], cond_nconsts, body_nconsts)
    if ordered:
      mctx.set_ordered_token(body_block.arguments[len(types)])
    consts = [xla.ir_constant(np.asarray(c)) for c in body_jaxpr.consts]
    with mctx.scoped("while", "body"):
      new = xla.lower_jaxpr(mctx, body_jaxpr.jaxpr, consts, bc + carry)
    hlo.return_(cc + bc + new + ([mctx.ordered_token()] if ordered else []))
  results = list(loop.results)
  if ordered:
    mctx.set_ordered_token(results.pop())
  return results[cond_nconsts + body_nconsts:]

xla.register_lowering(while_p, _while_lowering)


def _carry_fixpoint(step, init: list[bool]) -> list[bool]:
  """Grow the flags ``init`` with ``step(flags)`` (the output flags) until stable."""
  flags = list(init)
  for _ in range(len(flags) + 1):
    new = _orf(flags, step(flags))
    if new == flags:
      return flags
    flags = new
  return flags


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
  _, bc_t, init_t = _split(tangents, cond_nconsts, body_nconsts)
  bc_nz = [type(t) is not ad.Zero for t in bc_t]
  carry_nz = _carry_fixpoint(
      lambda nz: _memo(_jvp_jaxpr, body_jaxpr, tuple(bc_nz + nz), tuple(nz))[1],
      [type(t) is not ad.Zero for t in init_t])
  new_body, jconsts, new_cond = _memo(_while_jvp_jaxprs, cond_jaxpr, body_jaxpr, body_nconsts,
                                      tuple(bc_nz), tuple(carry_nz))
  bc_t = [t for t in bc_t if type(t) is not ad.Zero]
  carry_t = [ad.instantiate_zeros(t) for t, nz in zip(init_t, carry_nz) if nz]
  outs = while_p.bind(*cc, *jconsts, *bc, *bc_t, *init, *carry_t, cond_jaxpr=new_cond,
                      body_jaxpr=new_body, cond_nconsts=cond_nconsts,
                      body_nconsts=len(jconsts) + len(bc) + len(bc_t))
  n = len(init)
  it = iter(outs[n:])
  return outs[:n], [next(it) if nz else ad.Zero(get_aval(p).to_tangent_aval())
                    for p, nz in zip(outs[:n], carry_nz)]


def _while_jvp_jaxprs(cond_jaxpr, body_jaxpr, body_nconsts, bc_nz, carry_nz):
  jvp, _ = ad.jvp_jaxpr(body_jaxpr, list(bc_nz + carry_nz), list(carry_nz))
  jvp, jconsts = convert_constvars(jvp)
  n_bct = sum(bc_nz)
  jc, bc, carry, bct, ct = _split(jvp.jaxpr.invars, len(jconsts), body_nconsts,
                                  len(carry_nz), n_bct)
  new_body = _with_invars(jvp, jc + bc + bct + carry + ct)
  ct_avals = [v.aval for v in ct]
  new_cond = _with_invars(cond_jaxpr, cond_jaxpr.jaxpr.invars + _fresh(ct_avals))
  return new_body, jconsts, new_cond

ad.primitive_jvps[while_p] = _while_jvp


_WHILE_REVERSE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values (the number of iterations is not known when tracing). Try "
    "using lax.scan, or lax.fori_loop with static (Python int) start/stop values.")


def _known_part(closed: ClosedJaxpr, unknowns):
  """The part of ``closed`` that computes its known outputs from its known inputs (consts
  made leading invars), and which outputs are unknown."""
  known, _, out_uk, num_res = pe.partial_eval_jaxpr(closed, list(unknowns))
  j = known.jaxpr
  j, _ = dce_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:len(j.outvars) - num_res], j.eqns,
                         j.debug_info))
  known, consts = convert_constvars(ClosedJaxpr(j, known.consts))
  return known, consts, out_uk


def _while_partial_eval(trace, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # As JAX: when the predicate depends on known values only, a loop over the known carries
  # computes the known outputs now; the unknown outputs come from the whole loop, recorded
  # (so its known part runs again: the loop rematerializes itself, no per-iteration
  # residuals). That serves forward mode (linearize) and checkpoint; transposing the
  # recorded loop is what reverse mode cannot do.
  params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                body_nconsts=body_nconsts)
  uk = [trace.is_unknown(x) for x in args]
  cc_uk, bc_uk, init_uk = _split(uk, cond_nconsts, body_nconsts)
  carry_uk = _carry_fixpoint(
      lambda flags: _memo(_known_part, body_jaxpr, tuple(bc_uk + flags))[2], init_uk)
  cond_known, cond_consts, pred_uk = _memo(_known_part, cond_jaxpr, tuple(cc_uk + carry_uk))
  if pred_uk[0] or all(carry_uk):
    return trace.record(while_p, args, params)
  body_known, body_consts, _ = _memo(_known_part, body_jaxpr, tuple(bc_uk + carry_uk))
  cc, bc, init = _split(args, cond_nconsts, body_nconsts)
  known_cc = [x for x, u in zip(cc, cc_uk) if not u]
  known_bc = [x for x, u in zip(bc, bc_uk) if not u]
  known_init = [x for x, u in zip(init, carry_uk) if not u]
  with set_current_trace(trace.parent):
    known_outs = while_p.bind(*cond_consts, *known_cc, *body_consts, *known_bc, *known_init,
                              cond_jaxpr=cond_known, body_jaxpr=body_known,
                              cond_nconsts=len(cond_consts) + len(known_cc),
                              body_nconsts=len(body_consts) + len(known_bc))
  all_outs = trace.record(while_p, args, params)
  k = iter(known_outs)
  return [o if u else next(k) for o, u in zip(all_outs, carry_uk)]


def _while_transpose(cts, *args, **params):
  raise ValueError(_WHILE_REVERSE_MSG)

ad.primitive_transposes[while_p] = _while_transpose
pe.partial_eval_rules[while_p] = _while_partial_eval


def _while_batch(axis_data, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                 body_nconsts):
  size, name = axis_data.size, axis_data.name
  cc, bc, init = _split(vals, cond_nconsts, body_nconsts)
  ccd, bcd, initd = _split(dims, cond_nconsts, body_nconsts)

  def carry_dims(bat):
    return [0 if b else None for b in bat]

  carry_bat = _carry_fixpoint(
      lambda bat: [d is not None for d in _memo(_batch_jaxpr, body_jaxpr, size, name,
                                                tuple(bcd + carry_dims(bat)), False)[1]],
      [d is not None for d in initd])
  _, pred_dims = _memo(_batch_jaxpr, cond_jaxpr, size, name, tuple(ccd + carry_dims(carry_bat)),
                       False)
  pred_bat = pred_dims[0] is not None
  if pred_bat:
    # Finished members keep running the body (their carry is then left as it was): an IO
    # effect in it would happen for them too.
    io = io_effect_names(body_jaxpr) + io_effect_names(cond_jaxpr)
    if io:
      raise NotImplementedError(
          "Unordered IO effects not supported in while_loop with batched predicate: the "
          f"loop calls {', '.join(sorted(set(io)))} and its predicate differs between "
          "examples")
    carry_bat = [True] * len(init)
  cdims = carry_dims(carry_bat)
  init = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(init, initd, carry_bat)]
  body_b, _ = _memo(_batch_jaxpr, body_jaxpr, size, name, tuple(bcd + cdims), tuple(carry_bat))
  cond_b, _ = _memo(_batch_jaxpr, cond_jaxpr, size, name, tuple(ccd + cdims), False)
  if not pred_bat:
    body_b, bj = convert_constvars(body_b)
    cond_b, cj = convert_constvars(cond_b)
    outs = while_p.bind(*cj, *cc, *bj, *bc, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                        cond_nconsts=len(cj) + len(cc), body_nconsts=len(bj) + len(bc))
    return outs, cdims
  # Members finish at different iterations: loop while any is running, and let a finished
  # member's carry stay as it is.
  n_cc, n_bc = len(cc), len(bc)

  def new_cond(*flat):
    cc_, carry = _split(flat, n_cc)
    pred, = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc_, *carry)
    return [_red.reduce_or(pred, (0,))]

  def new_body(*flat):
    cc_, bc_, carry = _split(flat, n_cc, n_bc)
    # The body's own equations first, as JAX's (its first equation is the user's).
    new = eval_jaxpr(body_b.jaxpr, body_b.consts, *bc_, *carry)
    pred, = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cc_, *carry)
    outs = []
    for old, nw in zip(carry, new):
      which = _shapes.broadcast_in_dim(pred, get_aval(old).shape, (0,))
      outs.append(_ew.select_n(which, old, nw))
    return outs

  cc_avals = [get_aval(x) for x in cc]
  bc_avals = [get_aval(x) for x in bc]
  carry_avals = [get_aval(x) for x in init]
  cond_j, cj = convert_constvars(trace_to_jaxpr(new_cond, cc_avals + carry_avals,
                                                "while cond", "vmap"))
  _batched_predicates.put(cond_j, True)
  body_j, bj = convert_constvars(trace_to_jaxpr(new_body, cc_avals + bc_avals + carry_avals,
                                                "while body", "vmap"))
  outs = while_p.bind(*cj, *cc, *bj, *cc, *bc, *init, cond_jaxpr=cond_j, body_jaxpr=body_j,
                      cond_nconsts=len(cj) + n_cc, body_nconsts=len(bj) + n_cc + n_bc)
  return outs, cdims


batching.fancy_primitive_batchers[while_p] = _while_batch

# The predicates of loops whose members finish at different iterations (a batched
# predicate): checkify refuses them, as JAX does, since their bodies also run for finished
# members, whose checks must not count.
_batched_predicates = LRUCache()


def _check_carry(api, body_fun, tree, in_avals, out_tree, out_avals):
  """JAX's errors for a loop body whose carry output differs from its input in structure or
  type (``api``: "scan body", "while_loop body"); the input carry is named after the body's
  first parameter."""
  try:
    carry_name = next(iter(inspect.signature(body_fun).parameters), None)
  except (TypeError, ValueError):
    carry_name = None
  def component(p):
    if carry_name:
      return (f"the input carry component {carry_name}{tree_util.keystr(p)}" if p
              else f"the input carry {carry_name}")
    return f"the input carry at path {tree_util.keystr(p)}" if p else "the input carry"
  if out_tree != tree:
    diffs = [f"{component(p)} is a {t1} but the corresponding component of the carry output "
             f"is a {t2}, so {why}"
             for p, t1, t2, why in tree_util.treedef_equality_errors(tree, out_tree)]
    if not diffs:
      diffs = [f"the input tree structure is {tree} but the output tree structure is "
               f"{out_tree}"]
    raise TypeError(f"{api} function carry input and carry output must have the same pytree "
                    f"structure, but they differ:\n\n{_listed(diffs)}\nRevise the function "
                    "so that the carry output has the same pytree structure as the carry "
                    "input.")
  diffs = [f"{component(p)} has type {a.str_short(short_dtypes=False)} but the corresponding "
           f"output carry component has type {b.str_short(short_dtypes=False)}, so "
           f"{_type_diff(a, b)}"
           for p, a, b in zip(_leaf_paths(tree), in_avals, out_avals)
           # (vmas only where they are worked out: in a check_vma shard_map body)
           if not _typematch(a, b, vma=vma_lib.active[0])]
  if diffs:
    raise TypeError(f"{api} function carry input and carry output must have equal types, but "
                    f"they differ:\n\n{_listed(diffs)}\nRevise the function so that all "
                    "output types match the corresponding input types (the carry has one "
                    "type across iterations: convert the initial value, e.g. with .astype, "
                    "before the loop).")


def _promote_weak(leaves, in_avals, out_avals):
  """Weakly typed initial carries (Python scalars) take the dtype the body produces, as in
  JAX. Returns the new leaves and whether any changed."""
  changed = False
  leaves = list(leaves)
  for i, (a, b) in enumerate(zip(in_avals, out_avals)):
    if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
      dtype, _ = dtypes.result_type_with_weak([(a.dtype, True), (b.dtype, b.weak_type)])
      if dtype != a.dtype:
        # JAX converts with ``lax.convert_element_type``: the promoted carry is strongly typed.
        leaves[i] = _ew.convert_element_type(leaves[i], dtype, weak_type=False)
        changed = True
  return leaves, changed


@api_boundary
def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """Repeats ``val = body_fun(val)`` while ``cond_fun(val)`` is true, as one primitive.

  Equivalent to ``val = init_val; while cond_fun(val): val = body_fun(val); return val``, but
  both functions are traced once: ``cond_fun`` must return a scalar bool, and ``body_fun``
  must return a pytree of the same structure, shapes and dtypes as ``init_val``. The trip
  count may depend on traced values. Forward-mode differentiation (``jvp``) works; reverse
  mode (``grad``, ``vjp``) raises ``ValueError`` because the number of iterations is unknown
  when tracing: use ``scan`` or ``fori_loop`` with static bounds instead. Under ``vmap`` with
  a batched predicate the loop runs until every element is done, freezing finished ones.

  Args:
    cond_fun: function of the loop value returning a scalar boolean.
    body_fun: function from the loop value to the next loop value.
    init_val: initial loop value (a pytree of arrays).

  Returns:
    The final loop value, of ``init_val``'s structure.

  Examples:
    >>> lax.while_loop(lambda v: v < 10, lambda v: v * 2, jnp.int32(1))
    Array(16, dtype=int32)
    >>> lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.), (0, 1.))
    (Array(3, dtype=int32, weak_type=True), Array(8., dtype=float32, weak_type=True))

  See also:
    ``fori_loop``, ``scan``.
  """
  if not callable(cond_fun) or not callable(body_fun):
    raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable, got "
                    f"{type(cond_fun).__name__} and {type(body_fun).__name__}")
  leaves, in_tree = tree_util.tree_flatten((init_val,))
  carry_tree = tree_util.tree_structure(init_val)
  splits = _splits(leaves)
  for _ in range(2):
    avals = [get_aval(x) for x in leaves]
    body, bconsts, out_tree = _trace_fun(body_fun, in_tree, avals, "while_loop", splits)
    if out_tree != carry_tree:
      break
    leaves, changed = _promote_weak(leaves, avals, body.out_avals[:])
    leaves, varied = vma_lib.promote_carries(leaves, avals, body.out_avals)
    if not (changed or varied):
      break
  avals = [get_aval(x) for x in leaves]
  _check_carry("while_loop body", body_fun, carry_tree,
               [_typed(a, s) for a, s in zip(avals, splits or [None] * len(avals))],
               out_tree, _typed_outs(body) if splits else body.out_avals)
  cond_j, cconsts, cond_tree = _trace_fun(cond_fun, in_tree, avals, "while_loop", splits)
  pred = cond_j.out_avals
  if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != dtypes.bool_:
    if not tree_util.treedef_is_leaf(cond_tree):
      raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got pytree "
                      f"{cond_tree}.")
    types = ", ".join(f"ShapedArray({a.str_short(short_dtypes=False)})" for a in pred)
    raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got output "
                    f"type(s) [{types}].")
  refs = []
  if _ref_positions(bconsts) or _ref_positions(cconsts):
    cond_j, cconsts, body, bconsts, refs = _while_refs_as_carries(cond_j, cconsts, body,
                                                                  bconsts)
    leaves = [state.get(r, ...) for r in refs] + list(leaves)
  # As JAX: a carry that the body returns unchanged and the cond does not read is a body
  # const instead (vmap with a batched predicate then leaves it unbatched).
  moved = _read_only_carries(body, len(bconsts), cond_j, len(cconsts))
  if any(moved):
    cond_j, body = _memo(_carries_to_body_consts, cond_j, len(cconsts), body, len(bconsts),
                         tuple(moved))
    kept = [x for x, m in zip(leaves, moved) if not m]
    bconsts = [x for x, m in zip(leaves, moved) if m] + list(bconsts)
  else:
    kept = leaves
  outs = while_p.bind(*cconsts, *bconsts, *kept, cond_jaxpr=cond_j, body_jaxpr=body,
                      cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
  if any(moved):
    outs = iter(outs)
    outs = [x if m else next(outs) for x, m in zip(leaves, moved)]
  if refs:
    for r, v in zip(refs, outs):
      state.set(r, ..., v)
    outs = outs[len(refs):]
  return tree_util.tree_unflatten(carry_tree, outs)


def _while_refs_as_carries(cond_j, cconsts, body, bconsts):
  """A while loop whose cond or body closed over references: their values become leading
  carries of both (the cond only reads them)."""
  refs = []
  for c in [bconsts[i] for i in _ref_positions(bconsts)] + \
      [cconsts[i] for i in _ref_positions(cconsts)]:
    if not any(c is r for r in refs):
      refs.append(c)

  def lift(closed, consts, keep_ref_outs):
    # Make every reference an explicit leading argument, then discharge.
    idx = [next((i for i, c in enumerate(consts) if c is r), None) for r in refs]
    others = [i for i, c in enumerate(consts) if not any(c is r for r in refs)]
    pure = state_discharge.discharge_jaxpr(closed)
    n = len(consts)
    avals = pure.in_avals
    new_avals = ([avals[i] for i in others] + [r.aval.inner_aval for r in refs]
                 + avals[n:len(closed.in_avals)])

    def fun(*args):
      full = [None] * n
      for i, v in zip(others, args[:len(others)]):
        full[i] = v
      rvals = args[len(others):len(others) + len(refs)]
      for i, v in zip(idx, rvals):
        if i is not None:
          full[i] = v
      rest = args[len(others) + len(refs):]
      outs = eval_jaxpr(pure.jaxpr, pure.consts, *full, *rest)
      positions = sorted(i for i in idx if i is not None)
      outs, finals = outs[:len(outs) - len(positions)], outs[len(outs) - len(positions):]
      if not keep_ref_outs:
        return outs
      final_at = dict(zip(positions, finals))
      return [final_at[i] if i is not None else v for i, v in zip(idx, rvals)] + outs

    new, extra = convert_constvars(trace_to_jaxpr(fun, new_avals, "while_loop body",
                                                  "while_loop"))
    return new, list(extra) + [consts[i] for i in others]

  body, bconsts = lift(body, bconsts, True)
  cond_j, cconsts = lift(cond_j, cconsts, False)
  return cond_j, cconsts, body, bconsts, refs


def _read_only_carries(body, body_nconsts, cond_j, cond_nconsts) -> list:
  """Per carry: whether the body returns it unchanged and the cond does not read it."""
  body_in = body.jaxpr.invars[body_nconsts:]
  cond_in = cond_j.jaxpr.invars[cond_nconsts:]
  read = {id(v) for eqn in cond_j.jaxpr.eqns for v in eqn.invars}
  read |= {id(v) for v in cond_j.jaxpr.outvars}
  return [out is v and id(c) not in read
          for v, out, c in zip(body_in, body.jaxpr.outvars, cond_in)]


def _carries_to_body_consts(cond_j, cond_nconsts, body, body_nconsts, moved):
  """The loop's jaxprs with the ``moved`` carries taken out of the carry: the body takes them
  as its first consts, the cond (which does not read them) not at all."""
  def split(invars, n):
    carries = invars[n:]
    return ([v for v, m in zip(carries, moved) if m],
            [v for v, m in zip(carries, moved) if not m])

  j = cond_j.jaxpr
  _, kept = split(j.invars, cond_nconsts)
  cond_j = ClosedJaxpr(Jaxpr(j.constvars, j.invars[:cond_nconsts] + kept, j.outvars, j.eqns,
                             j.debug_info), cond_j.consts)
  j = body.jaxpr
  consts, kept = split(j.invars, body_nconsts)
  outs = [o for o, m in zip(j.outvars, moved) if not m]
  body = ClosedJaxpr(Jaxpr(j.constvars, consts + j.invars[:body_nconsts] + kept, outs, j.eqns,
                           j.debug_info), body.consts)
  return cond_j, body


# --- scan --------------------------------------------------------------------------------

class _ScanPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    return {"jaxpr": params["jaxpr"], "length": params["length"],
            "num_carry": params["num_carry"], "num_consts": params["num_consts"],
            "reverse": params["reverse"], "unroll": params["unroll"]}


scan_p = _ScanPrimitive("scan")


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
  carry = jaxpr.out_avals[:num_carry]
  ys = [ShapedArray((length,) + a.shape, a.dtype, a.weak_type)
        for a in jaxpr.out_avals[num_carry:]]
  return list(carry) + ys

scan_p.def_abstract_eval(_scan_abstract_eval)
scan_p.def_impl(partial(xla.apply_primitive, scan_p))


def _scan_deoptimized(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
  # The debug_nans re-run: the loop in Python, the body equation by equation. ``xs`` are
  # sliced and ``ys`` stacked on the host, so that no primitive of the loop's own machinery
  # is blamed for values that merely pass through it.
  consts, carry, xs = _split(args, num_consts, num_carry)
  xs = [np.asarray(x) for x in xs]
  y_avals = jaxpr.out_avals[num_carry:]
  ys = [[] for _ in y_avals]
  for t in range(length):
    idx = length - 1 - t if reverse else t
    outs = nan_checks.eval_deoptimized(jaxpr.jaxpr, jaxpr.consts,
                                       [*consts, *carry, *(device_put(x[idx]) for x in xs)])
    carry = outs[:num_carry]
    for col, y in zip(ys, outs[num_carry:]):
      col.append(np.asarray(y))
  if reverse:
    ys = [col[::-1] for col in ys]
  stacked = [device_put(np.stack(col) if col else np.zeros((0,) + a.shape, a.dtype))
             for col, a in zip(ys, y_avals)]
  return list(carry) + stacked

nan_checks.deoptimized_rules[scan_p] = _scan_deoptimized


def _scan_as_while(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
  """scan written as a while loop over an iteration counter: slice ``xs[t]``, run the body,
  write ``ys[t]`` (``t`` counts down when ``reverse``). With ``unroll=u`` each loop iteration
  runs ``u`` steps; the ``length % u`` steps left over run after the loop (``unroll=0``:
  every step, no loop).

  As JAX does, an unrolled body (``u > 1``) is lowered once, as a private function that
  each step calls, so the module does not hold ``u`` copies of it; and a loop that would
  run once is not emitted: its steps index ``xs`` and stack ``ys`` at static positions."""
  consts, init, xs = _split(args, num_consts, num_carry)
  if length == 0:  # nothing to slice: the loop would not run
    return list(init) + [_shapes.full((length,) + a.shape, np.zeros((), a.dtype)[()], a.dtype)
                         for a in jaxpr.out_avals[num_carry:]]
  # A symbolic length (shape polymorphism) runs one step per iteration: its count and the
  # positions are values of the program.
  # (``unroll=0`` unrolls the whole loop, as JAX's.)
  u = (builtins.max(1, builtins.min(int(unroll) or length, length)) if type(length) is int
       else 1)
  n_outer, rem = divmod(length, u)
  if u > 1:
    # Memoized, so every step binds the same jaxpr: one private function per scan body.
    body, body_consts = _memo(convert_constvars, jaxpr)
    body_args = [*body_consts, *consts]

    def run_body(carry, x):
      return _jit_p.bind(*body_args, *carry, *x, jaxpr=body, name="scan_body",
                         donated_invars=(False,) * (len(body_args) + len(carry) + len(x)),
                         keep_unused=False, inline=False)
  else:
    def run_body(carry, x):
      return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *x)

  if n_outer == 1:  # every step at a static position: no loop
    carry, ys = list(init), []
    for t in range(length):
      idx = length - 1 - t if reverse else t
      outs = run_body(carry, [_shapes.index_in_dim(v, idx, 0, keepdims=False) for v in xs])
      carry = list(outs[:num_carry])
      ys.append([_shapes.expand_dims(y, (0,)) for y in outs[num_carry:]])
    if reverse:
      ys.reverse()
    stacked = [_shapes.concatenate(list(col), 0) for col in zip(*ys)]
    return carry + stacked

  # The outputs' dtypes as traced (64-bit ones too when the body ran inside enable_x64()).
  ys_init = [_base.full_exact((length,) + a.shape, 0, a.dtype)
             for a in jaxpr.out_avals[num_carry:]]

  def step(t, carry, ys):
    idx = _ew.sub(_base.convert_element_type(length - 1, np.int32), t) if reverse else t
    x = [_ix.dynamic_index_in_dim(v, idx, 0, keepdims=False) for v in xs]
    outs = run_body(carry, x)
    new_carry, y = outs[:num_carry], outs[num_carry:]
    ys = [_ix.dynamic_update_index_in_dim(a, b, idx, 0) for a, b in zip(ys, y)]
    return list(new_carry), ys

  def cond_fun(state):
    return _ew.lt(state[0], _base.convert_element_type(n_outer * u, np.int32))

  def body_fun(state):
    t, carry, ys = state
    for k in range(u):
      carry, ys = step(_ew.add(t, np.int32(k)) if k else t, carry, ys)
    return _ew.add(t, np.int32(u)), carry, ys

  _, carry, ys = while_loop(cond_fun, body_fun, (np.int32(0), list(init), ys_init))
  for t in range(n_outer * u, length) if type(length) is int else ():
    carry, ys = step(np.int32(t), carry, ys)
  return list(carry) + list(ys)

xla.register_lowering(scan_p, xla.lower_fun(_scan_as_while, multiple_results=True))


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
  consts, init, xs = _split(primals, num_consts, num_carry)
  ct, init_t, xs_t = _split(tangents, num_consts, num_carry)
  c_nz = [type(t) is not ad.Zero for t in ct]
  x_nz = [type(t) is not ad.Zero for t in xs_t]
  n_ys = len(jaxpr.out_avals) - num_carry
  carry_nz = _carry_fixpoint(
      lambda nz: _memo(_jvp_jaxpr, jaxpr, tuple(c_nz + nz + x_nz),
                       tuple(nz + [False] * n_ys))[1][:num_carry],
      [type(t) is not ad.Zero for t in init_t])
  new, jconsts, ys_nz = _memo(_scan_jvp_jaxpr, jaxpr, num_consts, num_carry, tuple(c_nz),
                              tuple(carry_nz), tuple(x_nz))
  ct = [t for t in ct if type(t) is not ad.Zero]
  carry_t = [ad.instantiate_zeros(t) for t, nz in zip(init_t, carry_nz) if nz]
  xs_t = [t for t in xs_t if type(t) is not ad.Zero]
  n_ct = sum(carry_nz)
  outs = scan_p.bind(*jconsts, *consts, *ct, *init, *carry_t, *xs, *xs_t, jaxpr=new,
                     num_consts=len(jconsts) + len(consts) + len(ct),
                     num_carry=num_carry + n_ct, length=length, reverse=reverse,
                     unroll=unroll)
  carry, carry_t, ys, ys_t = _split(outs, num_carry, n_ct, n_ys)
  it_c, it_y = iter(carry_t), iter(ys_t)
  out_avals = _scan_abstract_eval(jaxpr=jaxpr, num_consts=num_consts, num_carry=num_carry,
                                  length=length, reverse=reverse, unroll=unroll)
  tangents_out = ([next(it_c) if nz else ad.Zero(a.to_tangent_aval())
                   for a, nz in zip(out_avals[:num_carry], carry_nz)]
                  + [next(it_y) if nz else ad.Zero(a.to_tangent_aval())
                     for a, nz in zip(out_avals[num_carry:], ys_nz)])
  return carry + ys, tangents_out


def _scan_jvp_jaxpr(jaxpr, num_consts, num_carry, c_nz, carry_nz, x_nz):
  n_ys = len(jaxpr.out_avals) - num_carry
  jvp, out_nz = ad.jvp_jaxpr(jaxpr, list(c_nz + carry_nz + x_nz),
                             list(carry_nz) + [False] * n_ys)
  jvp, jconsts = convert_constvars(jvp)
  ys_nz = out_nz[num_carry:]
  n_xs = len(x_nz)
  jc, c, carry, xs, c_t, carry_t, xs_t = _split(
      jvp.jaxpr.invars, len(jconsts), num_consts, num_carry, n_xs, sum(c_nz), sum(carry_nz))
  o_carry, o_ys, o_carry_t, o_ys_t = _split(jvp.jaxpr.outvars, num_carry, n_ys, sum(carry_nz))
  new = _closed(jc + c + c_t + carry + carry_t + xs + xs_t,
                o_carry + o_carry_t + o_ys + o_ys_t, jvp.jaxpr.eqns)
  return new, jconsts, ys_nz

ad.primitive_jvps[scan_p] = _scan_jvp


def _scan_partial_eval(trace, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
  uk = [trace.is_unknown(x) for x in args]
  c_uk, carry_uk, x_uk = _split(uk, num_consts, num_carry)
  carry_uk = _carry_fixpoint(
      lambda cu: _memo(_pe_jaxpr, jaxpr, tuple(c_uk + cu + x_uk), False)[2][:num_carry],
      carry_uk)
  split = _memo(_scan_split, jaxpr, num_consts, num_carry, tuple(c_uk), tuple(carry_uk),
                tuple(x_uk))
  known, kconsts, n_known_consts, res_kinds, hoist, out_uk, unknown = split
  consts, init, xs = _split(args, num_consts, num_carry)
  known_consts = [*kconsts, *[x for x, u in zip(consts, c_uk) if not u]]
  known_xs = [x for x, u in zip(xs, x_uk) if not u]
  known_args = [*known_consts, *[x for x, u in zip(init, carry_uk) if not u], *known_xs]
  n_known_carry = num_carry - sum(carry_uk)
  with set_current_trace(trace.parent):
    if known.jaxpr.outvars or known.jaxpr.eqns:
      known_outs = scan_p.bind(*known_args, jaxpr=known, num_consts=n_known_consts,
                               num_carry=n_known_carry, length=length, reverse=reverse,
                               unroll=unroll)
    else:  # nothing known to compute (a linear loop's known part, in a transpose)
      known_outs = []
    # Residuals computed from the consts alone, once, outside the loop.
    hoisted = eval_jaxpr(hoist.jaxpr, [], *known_consts) if hoist is not None else []
  n_stacked = sum(1 for kind, _ in res_kinds if kind == "stacked")
  n_known_out = len(known_outs) - n_stacked
  stacked, known_outs = iter(known_outs[n_known_out:]), known_outs[:n_known_out]
  sources = {"literal": None, "const": known_consts, "hoist": hoisted, "xs": known_xs}
  inv_res, st_res = [], []
  for kind, v in res_kinds:
    if kind == "stacked":
      st_res.append(next(stacked))
    elif kind == "xs":
      st_res.append(known_xs[v])
    else:
      inv_res.append(v if kind == "literal" else sources[kind][v])
  uk_consts = [x for x, u in zip(consts, c_uk) if u]
  uk_carry = [x for x, u in zip(init, carry_uk) if u]
  uk_xs = [x for x, u in zip(xs, x_uk) if u]
  unknown_outs = trace.record(scan_p, [*inv_res, *uk_consts, *uk_carry, *st_res, *uk_xs],
                              dict(jaxpr=unknown, num_consts=len(inv_res) + len(uk_consts),
                                   num_carry=len(uk_carry), length=length, reverse=reverse,
                                   unroll=unroll))
  k, u = iter(known_outs), iter(unknown_outs)
  return [next(u) if unk else next(k) for unk in out_uk]


def _pe_jaxpr(closed, uk, instantiate):
  return pe.partial_eval_jaxpr(closed, list(uk), instantiate if isinstance(instantiate, bool)
                               else list(instantiate))


def _loop_variant(jaxpr: Jaxpr, n_consts: int) -> set:
  """The vars of a scan body that change between iterations: everything downstream of the
  carry and xs inputs, and of effectful equations (which must run once per iteration)."""
  variant = set(jaxpr.invars[n_consts:])
  for eqn in jaxpr.eqns:
    if is_effectful(eqn) or any(type(v) is not Literal and v in variant for v in eqn.invars):
      variant.update(eqn.outvars)
  return variant


def _scan_split(jaxpr, num_consts, num_carry, c_uk, carry_uk, x_uk):
  """Split the body: the known scan returns its residuals as extra ys (stacked, one slice per
  iteration), except those that do not change between iterations, which the unknown scan
  takes once, unstacked, as consts: known consts forwarded unchanged, literals, and values
  computed from the consts alone (``tanh(W)`` of a closed-over ``W``), which a separate
  ``hoist`` jaxpr computes outside the loop. Residuals that are known xs slices forwarded
  unchanged are not copied: the unknown scan reads the known xs themselves.

  Each residual's source is described in ``res_kinds`` as ``(kind, index)`` with kind one of
  ``literal`` (index: the value), ``const``, ``hoist``, ``xs`` (indices into the known consts,
  the hoist outputs, the known xs) or ``stacked``.
  """
  n_ys = len(jaxpr.out_avals) - num_carry
  known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(
      jaxpr, list(c_uk + carry_uk + x_uk), list(carry_uk) + [False] * n_ys)
  known, kconsts = convert_constvars(known)
  n_known_consts = len(kconsts) + num_consts - sum(c_uk)
  const_vars = known.jaxpr.invars[:n_known_consts]
  xs_vars = known.jaxpr.invars[n_known_consts + num_carry - sum(carry_uk):]
  outvars = known.jaxpr.outvars
  n_known_out = len(outvars) - num_res
  variant = _loop_variant(known.jaxpr, n_known_consts)
  res_kinds, stacked_vars, hoist_vars = [], [], []
  for v in outvars[n_known_out:]:
    if type(v) is Literal:
      res_kinds.append(("literal", v.val))
    elif v in const_vars:
      res_kinds.append(("const", const_vars.index(v)))
    elif v in xs_vars:
      res_kinds.append(("xs", xs_vars.index(v)))
    elif v not in variant:
      res_kinds.append(("hoist", len(hoist_vars)))
      hoist_vars.append(v)
    else:
      res_kinds.append(("stacked", None))
      stacked_vars.append(v)
  hoist = None
  if hoist_vars:
    hoist_jaxpr, _ = dce_jaxpr(Jaxpr([], const_vars, hoist_vars, known.jaxpr.eqns))
    hoist = ClosedJaxpr(hoist_jaxpr, [])
  new_known = _closed(known.jaxpr.invars, outvars[:n_known_out] + stacked_vars,
                      known.jaxpr.eqns)
  new_known = ClosedJaxpr(dce_jaxpr(new_known.jaxpr)[0], [])
  res_vars = unknown.jaxpr.invars[:num_res]
  inv_vars = [v for v, (kind, _) in zip(res_vars, res_kinds) if kind not in ("stacked", "xs")]
  st_vars = [v for v, (kind, _) in zip(res_vars, res_kinds) if kind in ("stacked", "xs")]
  n_uk_consts = sum(c_uk)
  n_uk_carry = sum(carry_uk)
  uc, ucarry, ux = _split(unknown.jaxpr.invars[num_res:], n_uk_consts, n_uk_carry)
  new_unknown = _with_invars(unknown, inv_vars + uc + ucarry + st_vars + ux)
  return new_known, kconsts, n_known_consts, tuple(res_kinds), hoist, out_uk, new_unknown

pe.partial_eval_rules[scan_p] = _scan_partial_eval


def _pe_jaxpr_custom(closed, uk, saveable, is_saved):
  return pe.partial_eval_jaxpr_custom(closed, list(uk), saveable, is_saved)


def _scan_split_custom(jaxpr, num_consts, num_carry, c_uk, carry_uk, x_uk, saveable,
                       is_saved, restage=None):
  """Split the body under a checkpoint policy (``partial_eval_jaxpr_custom``), as JAX does:
  values the policy saves leave the known scan as residuals (stacked per iteration, or once
  when they do not change between iterations: ``hoist`` computes those from the consts), the
  unknown scan recomputes the rest. A known carry the unknown body needs is not saved per
  iteration: the unknown scan carries it too (``recarried``), recomputing it step by step
  from its initial value.

  Returns ``(known, kconsts, n_known_consts, res_kinds, hoist, recarried, out_uk,
  unknown)``. ``res_kinds`` says per residual of the split body where the unknown scan gets
  it: ``("const", i)``/``("xs", i)`` the equation's i-th known const/xs operand,
  ``("carry", i)`` its carry i (recarried), ``("literal", value)``, ``("hoist", i)`` and
  ``("stacked", None)`` outputs of the known side. The unknown body takes the unstacked
  residuals (in ``res_kinds`` order), its unknown consts, the carries (unknown or
  recarried, in carry order), its unknown xs, then the per-iteration residuals.

  ``restage`` flags known outputs the unknown scan computes again (after its own outputs):
  known carries it carries too, and known ys it returns after its unknown ys.
  """
  n_ys = len(jaxpr.out_avals) - num_carry
  body = jaxpr.jaxpr
  consts_in, carry_in, xs_in = _split(body.invars, num_consts, num_carry)
  restage = list(restage or [False] * (num_carry + n_ys))
  recarried, again_ys = restage[:num_carry], restage[num_carry:]
  for _ in range(num_carry + 1):
    known, unknown, out_uk, num_res = pe.partial_eval_jaxpr_custom(
        jaxpr, list(c_uk + carry_uk + x_uk), saveable, is_saved,
        list(carry_uk) + [False] * n_ys, recarried + again_ys)
    res_set = set(unknown.jaxpr.invars[:num_res])
    needed = [not u and v in res_set for v, u in zip(carry_in, carry_uk)]
    if _orf(recarried, needed) == recarried:
      break
    recarried = _orf(recarried, needed)
  known, kconsts = convert_constvars(known)
  n_known_consts = len(kconsts) + num_consts - sum(c_uk)
  const_pos = {v: i for i, v in enumerate(v for v, u in zip(consts_in, c_uk) if not u)}
  xs_pos = {v: i for i, v in enumerate(v for v, u in zip(xs_in, x_uk) if not u)}
  carry_pos = {v: i for i, v in enumerate(carry_in)}
  n_known_out = len(known.jaxpr.outvars) - num_res
  variant = _loop_variant(known.jaxpr, n_known_consts)
  res_kinds, stacked_vars, hoist_vars = [], [], []
  for v, kv in zip(unknown.jaxpr.invars[:num_res], known.jaxpr.outvars[n_known_out:]):
    if v in carry_pos and recarried[carry_pos[v]]:
      res_kinds.append(("carry", carry_pos[v]))
    elif v in const_pos:
      res_kinds.append(("const", const_pos[v]))
    elif v in xs_pos:
      res_kinds.append(("xs", xs_pos[v]))
    elif type(kv) is Literal:
      res_kinds.append(("literal", kv.val))
    elif kv not in variant:
      res_kinds.append(("hoist", len(hoist_vars)))
      hoist_vars.append(kv)
    else:
      res_kinds.append(("stacked", None))
      stacked_vars.append(kv)
  hoist = None
  if hoist_vars:
    hoist_jaxpr, _ = dce_jaxpr(Jaxpr([], known.jaxpr.invars[:n_known_consts], hoist_vars,
                                     known.jaxpr.eqns))
    hoist = ClosedJaxpr(hoist_jaxpr, [])
  new_known = Jaxpr([], known.jaxpr.invars, known.jaxpr.outvars[:n_known_out] + stacked_vars,
                    known.jaxpr.eqns)
  new_known = ClosedJaxpr(dce_jaxpr(new_known)[0], [])
  # The unknown body's inputs and outputs, in the unknown scan's order.
  res_vars = unknown.jaxpr.invars[:num_res]
  unstacked = [v for v, (k, _) in zip(res_vars, res_kinds) if k not in ("stacked", "xs", "carry")]
  per_iter = [v for v, (k, _) in zip(res_vars, res_kinds) if k in ("stacked", "xs")]
  by_carry = {i: v for v, (k, i) in zip(res_vars, res_kinds) if k == "carry"}
  uc, ucarry, ux = _split(unknown.jaxpr.invars[num_res:], sum(c_uk), sum(carry_uk))
  ucarry_it = iter(ucarry)
  carries = [next(ucarry_it) if u else by_carry.get(i, None) if r else None
             for i, (u, r) in enumerate(zip(carry_uk, recarried))]
  # a recarried carry the body does not read (only its next value is needed) still needs a
  # binder in the unknown body
  carries = [Var(jaxpr.in_avals[num_consts + i]) if v is None and r else v
             for i, (v, r) in enumerate(zip(carries, recarried))]
  outs = unknown.jaxpr.outvars
  n_uk_out = sum(out_uk)
  uk_outs, also_outs = iter(outs[:n_uk_out]), iter(outs[n_uk_out:])
  carry_outs = [next(uk_outs) if u else next(also_outs) if r else None
                for u, r in zip(carry_uk, recarried)]
  # (after the recarried carries, the also-computed outputs are the restaged ys)
  new_unknown = Jaxpr([], unstacked + uc + [v for v in carries if v is not None] + ux + per_iter,
                      [v for v in carry_outs if v is not None] + list(uk_outs)
                      + list(also_outs), unknown.jaxpr.eqns)
  return (new_known, kconsts, n_known_consts, tuple(res_kinds), hoist, tuple(recarried),
          out_uk, ClosedJaxpr(new_unknown, []))


def _scan_partial_eval_custom(eqn, ins_uk, saveable, is_saved):
  # Under a checkpoint policy the body is split by the policy (``_scan_split_custom``).
  p = eqn.params
  jaxpr, num_consts, num_carry = p["jaxpr"], p["num_consts"], p["num_carry"]
  c_uk, carry_uk, x_uk = _split(ins_uk, num_consts, num_carry)
  carry_uk = _carry_fixpoint(
      lambda cu: _memo(_pe_jaxpr_custom, jaxpr, tuple(c_uk + cu + x_uk), saveable,
                       is_saved)[2][:num_carry], carry_uk)
  out_uk0 = _memo(_pe_jaxpr_custom, jaxpr, tuple(c_uk + carry_uk + x_uk), saveable,
                  is_saved)[2]
  out_uk0 = list(carry_uk) + list(out_uk0[num_carry:])
  # Known outputs the policy does not save are computed again by the unknown scan when the
  # enclosing split needs them (a known carry is then carried by it too), as JAX's unknown
  # scan computes every output; a scan of known operands only is split for that alone.
  restage = tuple(not u for u in out_uk0)
  known_body, kconsts, n_known_consts, res_kinds, hoist, recarried, out_uk, unknown_body = (
      _memo(_scan_split_custom, jaxpr, num_consts, num_carry, tuple(c_uk), tuple(carry_uk),
            tuple(x_uk), saveable, is_saved, restage))
  again_ys = restage[num_carry:]
  consts, init, xs = _split(eqn.invars, num_consts, num_carry)
  known_c = [v for v, u in zip(consts, c_uk) if not u]
  known_xs = [v for v, u in zip(xs, x_uk) if not u]
  # Residuals from the known side: the unstacked ones first, then the stacked ones.
  from_known = [i for i, (k, _) in enumerate(res_kinds) if k in ("literal", "hoist")]
  n_known_out = len(out_uk) - sum(out_uk)
  rest = dict(length=p["length"], reverse=p["reverse"], unroll=p["unroll"])

  def known_fun(*ins):
    it = iter(ins)
    args = [None if u else next(it) for u in ins_uk]
    a_c, a_init, a_xs = _split(args, num_consts, num_carry)
    k_consts = [*kconsts, *[x for x, u in zip(a_c, c_uk) if not u]]
    k_init = [x for x, u in zip(a_init, carry_uk) if not u]
    k_xs = [x for x, u in zip(a_xs, x_uk) if not u]
    outs = scan_p.bind(*k_consts, *k_init, *k_xs, jaxpr=known_body,
                       num_consts=n_known_consts, num_carry=len(k_init), **rest)
    hoisted = eval_jaxpr(hoist.jaxpr, [], *k_consts) if hoist is not None else []
    unstacked = [j if k == "literal" else hoisted[j]
                 for k, j in (res_kinds[i] for i in from_known)]
    return [*outs[:n_known_out], *unstacked, *outs[n_known_out:]]

  known = trace_to_jaxpr(known_fun, [v.aval for v, u in zip(eqn.invars, ins_uk) if not u],
                         "scan known", "scan")
  res_avals = known.out_avals[n_known_out:]
  n_unstacked = len(from_known)

  def make_unknown(res_vars, used=()):
    used = list(used) + [False] * (sum(restage) - len(used))
    taken = dict(zip([i for i, r in enumerate(restage) if r], used))
    unstacked, stacked = iter(res_vars[:n_unstacked]), iter(res_vars[n_unstacked:])
    inv_res, st_res = [], []
    for kind, j in res_kinds:
      if kind == "const":
        inv_res.append(known_c[j])
      elif kind in ("literal", "hoist"):
        inv_res.append(next(unstacked))
      elif kind == "xs":
        st_res.append(known_xs[j])
      elif kind == "stacked":
        st_res.append(next(stacked))
    carries = [v for v, u, r in zip(init, carry_uk, recarried) if u or r]
    # a recarried carry's final value is the known side's: the unknown one goes unused,
    # unless the enclosing split takes it (a restaged output)
    carry_outs = [v if u or taken.get(i) else Var(v.aval) for i, (v, u, r) in
                  enumerate(zip(eqn.outvars[:num_carry], carry_uk, recarried)) if u or r]
    ys = eqn.outvars[num_carry:]
    ys_out = [v for v, u in zip(ys, out_uk[num_carry:]) if u] + [
        v if taken.get(num_carry + j) else Var(v.aval)
        for j, (v, r) in enumerate(zip(ys, again_ys)) if r]
    full = JaxprEqn([*inv_res, *[v for v, u in zip(consts, c_uk) if u], *carries,
                     *[v for v, u in zip(xs, x_uk) if u], *st_res], carry_outs + ys_out, scan_p,
                    dict(jaxpr=unknown_body, num_consts=len(inv_res) + sum(c_uk),
                         num_carry=len(carries), **rest), eqn.source_info)
    # what is not taken goes (with the residuals only it reads)
    taken_vars = set(eqn.outvars)
    return _scan_prune_outputs(full, [v in taken_vars for v in full.outvars])
  return known, out_uk, res_avals, make_unknown, restage

pe.partial_eval_jaxpr_custom_rules[scan_p] = _scan_partial_eval_custom
pe.splits_known_calls.add(scan_p)


def _scan_dce(jaxpr, num_consts, num_carry, used):
  """The body computing only the ``used`` outputs: a carry goes when its result is unread
  and the loop never reads it for what stays (a fixpoint), consts and xs go when unread.
  Returns the body, which carries stay, and which of the scan's operands stay."""
  body = jaxpr.jaxpr
  keep_carry = list(used[:num_carry])
  while True:
    dced, reads = pe.dce_pruned(body, keep_carry + list(used[num_carry:]))
    more = _orf(keep_carry, reads[num_consts:num_consts + num_carry])
    if more == keep_carry:
      break
    keep_carry = more
  stays = [r or (num_consts <= i < num_consts + num_carry and keep_carry[i - num_consts])
           for i, r in enumerate(reads)]
  outvars = ([v for v, k in zip(body.outvars[:num_carry], keep_carry) if k]
             + [v for v, u in zip(body.outvars[num_carry:], used[num_carry:]) if u])
  new = Jaxpr(dced.constvars, [v for v, k in zip(body.invars, stays) if k], outvars,
              dced.eqns, dced.debug_info)
  return ClosedJaxpr(new, jaxpr.consts), tuple(keep_carry), tuple(stays)


def _scan_prune_outputs(eqn, used):
  # Outputs nobody reads go, with the body's work for them: stacked ones, and carries the
  # loop does not otherwise need; operands the body then does not read go too.
  p = eqn.params
  n, nc = p["num_carry"], p["num_consts"]
  if all(used) or is_effectful(eqn):
    return eqn
  body, keep_carry, stays = _memo(_scan_dce, p["jaxpr"], nc, n, tuple(used))
  outvars = ([v for v, k in zip(eqn.outvars[:n], keep_carry) if k]
             + [v for v, u in zip(eqn.outvars[n:], used[n:]) if u])
  return JaxprEqn([v for v, k in zip(eqn.invars, stays) if k], outvars, scan_p,
                  dict(p, jaxpr=body, num_consts=sum(stays[:nc]), num_carry=sum(keep_carry)),
                  eqn.source_info)

pe.output_pruning_rules[scan_p] = _scan_prune_outputs


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
  consts, init, xs = _split(args, num_consts, num_carry)
  c_lin = tuple(ad.is_undefined_primal(x) for x in consts)
  x_lin = tuple(ad.is_undefined_primal(x) for x in xs)
  res_consts = [x for x, l in zip(consts, c_lin) if not l]
  res_xs = [x for x, l in zip(xs, x_lin) if not l]
  ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
  ct_carry = [ad.instantiate_zeros(ct) for ct in ct_carry]
  ys_nz = tuple(type(ct) is not ad.Zero for ct in ct_ys)
  ct_ys = [ct for ct in ct_ys if type(ct) is not ad.Zero]
  lin_const_avals = [x.aval for x, l in zip(consts, c_lin) if l]
  acc_init = [ad.zeros_like_aval(a) for a in lin_const_avals]
  res_c_avals = tuple(get_aval(x) for x in res_consts)
  res_x_avals = tuple(get_aval(x).update(shape=get_aval(x).shape[1:]) for x in res_xs)
  t_jaxpr, tconsts = _memo(_scan_transpose_jaxpr, jaxpr, num_consts, num_carry, c_lin, x_lin,
                           ys_nz, res_c_avals, res_x_avals)
  outs = scan_p.bind(*tconsts, *res_consts, *acc_init, *ct_carry, *res_xs, *ct_ys,
                     jaxpr=t_jaxpr, num_consts=len(tconsts) + len(res_consts),
                     num_carry=len(acc_init) + num_carry, length=length,
                     reverse=not reverse, unroll=unroll)
  ct_consts, ct_init, ct_xs = _split(outs, len(acc_init), num_carry)
  it_c, it_x = iter(ct_consts), iter(ct_xs)
  return ([next(it_c) if l else None for l in c_lin]
          + [ct if ad.is_undefined_primal(x) else None for x, ct in zip(init, ct_init)]
          + [next(it_x) if l else None for l in x_lin])


def _scan_transpose_jaxpr(jaxpr, num_consts, num_carry, c_lin, x_lin, ys_nz, res_c_avals,
                          res_x_avals):
  c_avals, carry_avals, x_avals = _split(jaxpr.in_avals, num_consts, num_carry)
  y_avals = jaxpr.out_avals[num_carry:]
  lin_c_avals = [a for a, l in zip(c_avals, c_lin) if l]
  n_rc, n_acc, n_rx = len(res_c_avals), len(lin_c_avals), len(res_x_avals)

  def body(*flat):
    rc, acc, cc, rx, cy = _split(flat, n_rc, n_acc, num_carry, n_rx)
    it_rc, it_rx, it_cy = iter(rc), iter(rx), iter(cy)
    args = ([ad.UndefinedPrimal(a) if l else next(it_rc) for a, l in zip(c_avals, c_lin)]
            + [ad.UndefinedPrimal(a) for a in carry_avals]
            + [ad.UndefinedPrimal(a) if l else next(it_rx) for a, l in zip(x_avals, x_lin)])
    cts_out = list(cc) + [next(it_cy) if nz else ad.Zero(a.to_tangent_aval())
                          for a, nz in zip(y_avals, ys_nz)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, args, cts_out)
    ct_c, ct_carry, ct_x = _split(cts_in, num_consts, num_carry)
    ct_c = [ct for ct, l in zip(ct_c, c_lin) if l]
    ct_x = [ct for ct, l in zip(ct_x, x_lin) if l]
    new_acc = [ad.add_tangents(a, ct) if type(ct) is not ad.Zero else a
               for a, ct in zip(acc, ct_c)]
    return (new_acc + [ad.instantiate_zeros(ct) for ct in ct_carry]
            + [ad.instantiate_zeros(ct) for ct in ct_x])

  in_avals = (list(res_c_avals) + lin_c_avals + list(carry_avals) + list(res_x_avals)
              + [a for a, nz in zip(y_avals, ys_nz) if nz])
  closed = trace_to_jaxpr(body, in_avals, "scan transpose", "transpose")
  return convert_constvars(closed)

ad.primitive_transposes[scan_p] = _scan_transpose


def _scan_batch(axis_data, vals, dims, *, jaxpr, num_consts, num_carry, length, reverse,
                unroll):
  size, name = axis_data.size, axis_data.name
  consts, init, xs = _split(vals, num_consts, num_carry)
  cd, initd, xd = _split(dims, num_consts, num_carry)
  # The scanned axis stays in front: a batched xs has its batch dimension at 1, which is
  # dimension 0 of each slice the body sees.
  xs = [x if d is None else batching.moveaxis(x, d, 1) for x, d in zip(xs, xd)]
  xbd = [None if d is None else 0 for d in xd]
  n_ys = len(jaxpr.out_avals) - num_carry

  def carry_dims(bat):
    return [0 if b else None for b in bat]

  carry_bat = _carry_fixpoint(
      lambda bat: [d is not None for d in _memo(
          _batch_jaxpr, jaxpr, size, name, tuple(cd + carry_dims(bat) + xbd),
          tuple(bat + [False] * n_ys))[1][:num_carry]],
      [d is not None for d in initd])
  body, out_dims = _memo(_batch_jaxpr, jaxpr, size, name,
                         tuple(cd + carry_dims(carry_bat) + xbd),
                         tuple(carry_bat + [False] * n_ys))
  body, jconsts = convert_constvars(body)
  init = [batching.bdim_at_front(x, d, size) if b else x
          for x, d, b in zip(init, initd, carry_bat)]
  outs = scan_p.bind(*jconsts, *consts, *init, *xs, jaxpr=body,
                     num_consts=len(jconsts) + num_consts, num_carry=num_carry,
                     length=length, reverse=reverse, unroll=unroll)
  ys_dims = [None if d is None else 1 for d in out_dims[num_carry:]]
  return outs, carry_dims(carry_bat) + ys_dims

batching.fancy_primitive_batchers[scan_p] = _scan_batch


@api_boundary
def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
  """Loops ``carry, y = f(carry, x)`` over the leading axis of ``xs``, stacking the ``y``s.

  Semantically ``for x in xs: carry, y = f(carry, x); ys.append(y)``, returning
  ``(carry, stack(ys))``. ``f`` is traced once; its output carry must match ``init`` in
  structure, shapes and dtypes (else ``TypeError``). ``xs`` is a pytree of arrays sharing a
  leading size, or None with ``length`` given (then ``f`` receives None); a ``length`` that
  disagrees with the leading sizes raises ``ValueError``. ``scan`` is differentiable in
  forward and reverse mode and batches under ``vmap``.

  Args:
    f: function of ``(carry, x)`` returning ``(carry, y)``.
    init: initial carry (a pytree of arrays).
    xs: pytree of arrays scanned along their leading axis, or None.
    length: number of iterations; required when ``xs`` is None.
    reverse: if True, iterate from the last element to the first (outputs stay in the
      original order).
    unroll: iterations per compiled loop step (an int, or True to unroll fully).
    _split_transpose: internal option, accepted for compatibility; leave False.

  Returns:
    A pair ``(final_carry, ys)``, where ``ys`` stacks the per-step outputs along a new
    leading axis.

  Examples:
    >>> lax.scan(lambda c, x: (c + x, c * x), 0., jnp.arange(4.))
    (Array(6., dtype=float32), Array([0., 0., 2., 9.], dtype=float32))
    >>> lax.scan(lambda c, _: (c + 1, c), 0, None, length=3)
    (Array(3, dtype=int32, weak_type=True), Array([0, 1, 2], dtype=int32, weak_type=True))
  """
  if not callable(f):
    raise TypeError(f"lax.scan: f argument should be callable, got {type(f).__name__}")
  xs_leaves, _ = tree_util.tree_flatten(xs)
  lengths = []
  for x in xs_leaves:
    aval = get_aval(x)
    if aval.ndim == 0:
      raise ValueError(f"scan got value with no leading axis to scan over: "
                       f"{aval.str_short()}")
    lengths.append(aval.shape[0])
  if length is not None:
    length = _concrete_arg(length, "The `length` argument to `scan` expects a concrete `int` "
                                   "value")
    try:
      length = int(length)
    except TypeError as e:
      raise TypeError(f"scan: length must be a Python int, got {length!r}") from e
    if any(n != length for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {lengths}.")
  elif not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided")
  elif len(set(lengths)) > 1:
    paths = _paths(tree_util.tree_structure(xs))
    sizes = ", ".join(f"xs{p}.shape[0]={n}" for p, n in zip(paths, lengths))
    raise ValueError(f"scan got values with different leading axis sizes: {sizes}")
  else:
    length = lengths[0]
  if length == 0 and config.disable_jit:
    # As JAX, whose scan runs as a Python loop there: no step, so no output type to go by.
    raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                     "output type is unknown.")
  unroll = _concrete_arg(unroll, "The `unroll` argument to `scan` expects a concrete `int` or "
                                 "`bool` value")
  if isinstance(unroll, (bool, np.bool_)):
    unroll = max(length, 1) if unroll else 1
  if not isinstance(unroll, (int, np.integer)) or unroll < 0:
    raise ValueError(f"scan: `unroll` must be a `bool` or a non-negative `int`, got {unroll!r}")
  leaves, in_tree = tree_util.tree_flatten((init, xs))
  init_leaves, carry_tree = tree_util.tree_flatten(init)
  n_carry = len(init_leaves)
  xs_leaves = leaves[n_carry:]
  x_avals = [get_aval(x) for x in xs_leaves]
  x_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
  splits = _splits(leaves)
  if splits is not None:  # the body sees one slice of each xs: its leading dimension goes
    splits = splits[:n_carry] + [None if s is None else sharding_types.TypeSharding(
        s.mesh, s.entries[1:]) for s in splits[n_carry:]]
  for _ in range(2):
    avals = [get_aval(x) for x in init_leaves] + x_avals
    body, consts, out_tree = _trace_fun(f, in_tree, avals, "scan", splits)
    children = tree_util.treedef_children(out_tree)
    if (len(children) != 2 or out_tree != tree_util.treedef_tuple(children)):
      got = (body.out_avals[0].str_short(short_dtypes=False)
             if tree_util.treedef_is_leaf(out_tree) else f"a value with structure {out_tree}")
      raise TypeError(f"scan body output must be a pair, got {got}. (The body function f must "
                      f"return a pair (carry, y).)")
    if children[0] != carry_tree:
      break
    init_leaves, changed = _promote_weak(init_leaves, avals[:n_carry],
                                         body.out_avals[:n_carry])
    init_leaves, varied = vma_lib.promote_carries(init_leaves, avals[:n_carry],
                                                  body.out_avals[:n_carry])
    if not (changed or varied):
      break
  carry_avals = [get_aval(x) for x in init_leaves]
  if splits is not None:
    _check_carry("scan body", f, carry_tree, [_typed(a, s) for a, s in
                                              zip(carry_avals, splits[:n_carry])],
                 children[0], _typed_outs(body, 0, n_carry))
  else:
    _check_carry("scan body", f, carry_tree, carry_avals, children[0],
                 body.out_avals[:n_carry])
  # References the body writes are carried: their values in, their final values out.
  body, consts, refs = _discharge_loop_refs(body, consts, "scan")
  if refs:
    init_leaves = [state.get(r, ...) for r in refs] + list(init_leaves)
    n_carry += len(refs)
  # As JAX: a carry the body returns unchanged is read-only, a const of the loop (under vmap
  # an unbatched one stays unbatched), and the final carry is the initial value.
  moved = _forwarded_carries(body, len(consts), n_carry)
  carried = init_leaves
  if any(moved):
    body = _memo(_carries_to_consts, body, len(consts), n_carry, moved)
    consts = [x for x, m in zip(init_leaves, moved) if m] + list(consts)
    carried = [x for x, m in zip(init_leaves, moved) if not m]
  n_carried = len(carried)
  # A y that is the body's x is the stacked xs itself: it is forwarded, not scanned (as JAX).
  body, fwd = _memo(_forward_xs_to_ys, body, len(consts), n_carried)
  outs = scan_p.bind(*consts, *carried, *xs_leaves, jaxpr=body, num_consts=len(consts),
                     num_carry=n_carried, length=length, reverse=bool(reverse),
                     unroll=int(unroll))
  if any(k is not None for k in fwd):
    rest = iter(outs[n_carried:])
    outs = outs[:n_carried] + [next(rest) if k is None else _forwarded_value(xs_leaves[k])
                               for k in fwd]
  if any(moved):
    final = iter(outs[:n_carried])
    outs = [x if m else next(final) for x, m in zip(init_leaves, moved)] + outs[n_carried:]
  if refs:
    for r, v in zip(refs, outs):
      state.set(r, ..., v)
    outs, n_carry = outs[len(refs):], n_carry - len(refs)
  carry = tree_util.tree_unflatten(carry_tree, outs[:n_carry])
  ys = tree_util.tree_unflatten(children[1], outs[n_carry:])
  return carry, ys


def _ref_positions(consts) -> list:
  """Positions of the array references among a loop body's consts."""
  return [i for i, c in enumerate(consts) if is_ref_aval(getattr(c, "aval", None))]


def _refs_as_carries(body, nconsts, ref_idx, what):
  """A loop body that writes references it closed over, made pure: ``(consts, carry, ...)
  -> (carry', ...)`` becomes ``(extra consts, other consts, ref values, carry, ...) ->
  (final ref values, carry', ...)``; returns it and its extra consts."""
  pure = state_discharge.discharge_jaxpr(body)
  avals = pure.in_avals
  others = [i for i in range(nconsts) if i not in ref_idx]
  new_avals = [avals[i] for i in others] + [avals[i] for i in ref_idx] + avals[nconsts:]
  k = len(ref_idx)

  def fun(*args):
    full = [None] * nconsts
    for i, v in zip(others + ref_idx, args[:nconsts]):
      full[i] = v
    outs = eval_jaxpr(pure.jaxpr, pure.consts, *full, *args[nconsts:])
    return outs[len(outs) - k:] + outs[:len(outs) - k]

  return convert_constvars(trace_to_jaxpr(fun, new_avals, f"{what} body", what))


def _discharge_loop_refs(body, consts, what):
  """``(body, consts, refs)``: the references ``body`` closed over become leading carries
  (``refs`` in order; none: everything unchanged)."""
  ref_idx = _ref_positions(consts)
  if not ref_idx:
    return body, consts, []
  refs = [consts[i] for i in ref_idx]
  body, extra = _refs_as_carries(body, len(consts), ref_idx, what)
  consts = list(extra) + [c for i, c in enumerate(consts) if i not in ref_idx]
  return body, consts, refs


def _forwarded_carries(body, num_consts, n_carry) -> tuple:
  """Per carry: whether the body returns it unchanged (the same variable, same position)."""
  jaxpr = body.jaxpr
  carries = jaxpr.invars[num_consts:num_consts + n_carry]
  return tuple(out is v for v, out in zip(carries, jaxpr.outvars[:n_carry]))


def _carries_to_consts(body, num_consts, n_carry, moved):
  """``body`` with the ``moved`` carries taken as its first consts instead (and no longer
  returned)."""
  jaxpr = body.jaxpr
  consts = jaxpr.invars[:num_consts]
  carries = jaxpr.invars[num_consts:num_consts + n_carry]
  invars = ([v for v, m in zip(carries, moved) if m] + consts +
            [v for v, m in zip(carries, moved) if not m] + jaxpr.invars[num_consts + n_carry:])
  outvars = ([o for o, m in zip(jaxpr.outvars[:n_carry], moved) if not m] +
             jaxpr.outvars[n_carry:])
  return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, outvars, jaxpr.eqns, jaxpr.debug_info),
                     body.consts)


def _forward_xs_to_ys(body, num_consts, n_carry):
  """``body`` without the y outputs that are its x inputs, and for each y the index of the
  x it is (None: still computed)."""
  jaxpr = body.jaxpr
  xs_vars = jaxpr.invars[num_consts + n_carry:]
  fwd = []
  for v in jaxpr.outvars[n_carry:]:
    fwd.append(next((i for i, x in enumerate(xs_vars) if x is v), None)
               if isinstance(v, Var) else None)
  if all(k is None for k in fwd):
    return body, tuple(fwd)
  kept = [v for v, k in zip(jaxpr.outvars[n_carry:], fwd) if k is None]
  pruned = ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars[:n_carry] + kept,
                             jaxpr.eqns), body.consts)
  return pruned, tuple(fwd)


# --- fori_loop and map -------------------------------------------------------------------

def _fori_scan_body(body_fun):
  def scanned(loop_carry, _):  # (JAX's name, in carry type errors)
    i, x = loop_carry
    return (_ew.add(i, _ew._const(i, 1)), body_fun(i, x)), None
  return scanned


def _fori_while_body(body_fun):
  def body(loop_carry):
    i, upper, x = loop_carry
    return _ew.add(i, _ew._const(i, 1)), upper, body_fun(i, x)
  return body


def _fori_cond(carry):
  return _ew.lt(carry[0], carry[1])


def _concrete_arg(x, what: str):
  """A static argument's value: a tracer that knows its concrete value gives it (as a Python
  scalar), one that does not is a ConcretizationTypeError saying ``what``."""
  if not isinstance(x, Tracer):
    return x
  value = x.to_concrete_value()
  if value is None:
    raise ConcretizationTypeError(x, what)
  return np.asarray(value).item()


def _concrete_bound(x):
  """A ``fori_loop`` bound as a Python int when its value is known now (a concrete value,
  also behind a JVP tracer; floats are truncated as JAX's ``int(lower)`` does), else None."""
  if isinstance(x, Tracer):
    x = x.to_concrete_value()
    if x is None or isinstance(x, Tracer):
      return None
  try:
    return int(np.asarray(x))
  except (TypeError, ValueError):
    return None


def _static_int(x):
  """``x`` as a Python int when it is concrete (not traced), else None."""
  if isinstance(x, Tracer) or isinstance(x, bool):
    return None
  try:
    return int(np.asarray(x))
  except (TypeError, ValueError):
    return None


@api_boundary
def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
  """Runs ``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``.

  When ``lower`` and ``upper`` are concrete (Python ints or concrete arrays) the loop is a
  ``scan`` of ``upper - lower`` steps, so it is reverse-mode differentiable and ``unroll``
  applies; when either bound is traced it is a ``while_loop``, which supports only forward
  mode. ``body_fun`` must return a value of the same structure, shapes and dtypes as
  ``init_val``; ``i`` has the bounds' (promoted) integer dtype.

  Args:
    lower: loop start (integer scalar).
    upper: loop end, exclusive (integer scalar).
    body_fun: function of ``(i, val)`` returning the next ``val``.
    init_val: initial loop value (a pytree of arrays).
    unroll: keyword-only; with static bounds, how many iterations run per compiled loop step
      (an int, or True for full unrolling).

  Returns:
    The final loop value.

  Examples:
    >>> lax.fori_loop(0, 5, lambda i, v: v + i, 0)
    Array(10, dtype=int32, weak_type=True)
    >>> hlox.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: v * x, 1.))(2.)
    Array(12., dtype=float32, weak_type=True)
  """
  if not callable(body_fun):
    raise TypeError(f"lax.fori_loop: body_fun argument should be callable, got "
                    f"{type(body_fun).__name__}")
  if type(lower) is _DimExpr or type(upper) is _DimExpr:
    # Symbolic bounds (shape polymorphism) are values of the program: a while loop.
    lower, upper = (dimension_as_value(v) if type(v) is _DimExpr else v for v in (lower, upper))
  for what, v in (("lower", lower), ("upper", upper)):
    aval = get_aval(v)
    if aval.shape != () or not (dtypes.is_int(aval.dtype) or dtypes.is_float(aval.dtype)):
      raise TypeError(f"fori_loop: {what} must be a scalar (an integer, or a float as JAX "
                      f"allows), got {aval.str_short()}")
  # As JAX: the bounds must have one dtype, except that a weakly typed (Python) integer
  # bound takes the other bound's integer dtype.
  lower_aval, upper_aval = get_aval(lower), get_aval(upper)
  dtype = lower_aval.dtype
  if lower_aval.dtype != upper_aval.dtype:
    dtype = None
    if dtypes.is_signed_int(lower_aval.dtype) and dtypes.is_signed_int(upper_aval.dtype):
      if lower_aval.weak_type and not upper_aval.weak_type:
        dtype = upper_aval.dtype
      elif upper_aval.weak_type and not lower_aval.weak_type:
        dtype = lower_aval.dtype
    if dtype is None:
      raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                      f"{np.dtype(lower_aval.dtype).name} and {np.dtype(upper_aval.dtype).name}")
  lo, hi = _concrete_bound(lower), _concrete_bound(upper)
  if lo is not None and hi is not None:
    # Static bounds: a scan whose counter starts as a Python int (weakly typed, as JAX).
    if hi <= lo and config.disable_jit:
      return init_val  # as JAX: no step to run (scan refuses zero steps there)
    body = _cached_wrapper("fori_scan", body_fun, _fori_scan_body)
    (_, out), _ = scan(body, (lo, init_val), None, length=builtins.max(hi - lo, 0),
                       unroll=1 if unroll is None else unroll)
    return out
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("fori_loop: Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known (Python ints)")
  if lower_aval.dtype != dtype:
    lower = _ew.convert_element_type(lower, dtype)
  if upper_aval.dtype != dtype:
    upper = _ew.convert_element_type(upper, dtype)
  body = _cached_wrapper("fori_while", body_fun, _fori_while_body)
  return while_loop(_fori_cond, body, (lower, upper, init_val))[2]


def _map_body(f):
  def body(carry, x):
    return carry, f(x)
  return body


@api_boundary
def map(f: Callable, xs, *, batch_size: int | None = None):
  """Applies ``f`` to each slice of ``xs`` along its leading axis and stacks the results.

  Like ``stack([f(x) for x in xs])``, implemented as a ``scan`` so ``f`` is traced once and
  memory stays that of one call. With ``batch_size``, ``vmap(f)`` runs over chunks of that
  many elements (a remainder is handled separately), trading memory for parallelism.

  Args:
    f: function of one slice (a pytree like ``xs`` without its leading axis).
    xs: pytree of arrays sharing a leading dimension.
    batch_size: keyword-only; optional chunk size for vectorized evaluation.

  Returns:
    The pytree of ``f``'s outputs, stacked along a new leading axis.

  Examples:
    >>> lax.map(lambda x: x ** 2, jnp.arange(4))
    Array([0, 1, 4, 9], dtype=int32)
    >>> lax.map(lambda x: x.sum(), jnp.ones((3, 2)), batch_size=2)
    Array([2., 2., 2.], dtype=float32)
  """
  if not callable(f):
    raise TypeError(f"lax.map: f argument should be callable, got {type(f).__name__}")
  if batch_size is None:
    _, ys = scan(_cached_wrapper("map", f, _map_body), (), xs)
    return ys
  leaves, tree = tree_util.tree_flatten(xs)
  if not leaves:
    raise ValueError("map: xs has no arrays to map over")
  n = get_aval(leaves[0]).shape[0]
  batch_size = int(batch_size)
  if batch_size < 0:
    raise ValueError(f"map: batch_size must be non-negative, got {batch_size}")
  vf = _cached_wrapper("vmap", f, batching.map_leading_axis)
  if batch_size == 0:  # as in JAX, one batch of everything: a vmap
    return vf(xs)
  n_full, rem = divmod(n, batch_size)
  if n_full == 0:  # fewer elements than a batch: one vmap over them all (no empty scan)
    return vf(xs)
  main = [_shapes.reshape(_shapes.slice_in_dim(x, 0, n_full * batch_size),
                          (n_full, batch_size) + get_aval(x).shape[1:]) for x in leaves]
  _, ys = scan(_cached_wrapper("map", vf, _map_body), (), tree_util.tree_unflatten(tree, main))
  ys = tree_util.tree_map(
      lambda y: _shapes.reshape(y, (n_full * batch_size,) + get_aval(y).shape[2:]), ys)
  if rem:
    rest = tree_util.tree_unflatten(tree, [_shapes.slice_in_dim(x, n_full * batch_size, n)
                                           for x in leaves])
    ys_rest = vf(rest)
    ys = tree_util.tree_map(lambda a, b: _shapes.concatenate([a, b], 0), ys, ys_rest)
  return ys


# --- associative_scan ----------------------------------------------------------------------

def _interleave(a, b, axis):
  """``a[0], b[0], a[1], b[1], ...`` along ``axis`` (``a`` as long as ``b`` or one longer),
  by padding each with holes and adding (or or-ing booleans)."""
  n_a, n_b = a.shape[axis], b.shape[axis]
  a_cfg = [(0, 0, 0)] * a.ndim
  b_cfg = [(0, 0, 0)] * b.ndim
  a_cfg[axis] = (0, 1 if n_a == n_b else 0, 1)
  b_cfg[axis] = (1, 0 if n_a == n_b else 1, 1)
  zero_a = np.zeros((), a.dtype)[()]
  zero_b = np.zeros((), b.dtype)[()]
  op = _ew.bitwise_or if a.dtype == np.bool_ else _ew.add
  return op(_shapes.pad(a, zero_a, a_cfg), _shapes.pad(b, zero_b, b_cfg))


def _as_array(x):
  return device_put(x)


@api_boundary
def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """All prefix combinations of ``elems`` along ``axis`` under an associative function.

  Output element ``i`` is ``fn(... fn(fn(x0, x1), x2) ..., xi)`` (with ``reverse``, the
  combination of elements ``i`` through the end). ``fn`` takes two pytrees like ``elems`` of
  equal shape and combines them elementwise; it must be associative, which lets the scan run
  in logarithmic depth (pairs of neighbours are combined, the result scanned recursively,
  then the remaining positions filled in). All leaves must share the size of ``axis``.

  Args:
    fn: associative function of two pytrees of arrays, applied to slices of ``elems``.
    elems: pytree of arrays scanned along ``axis``.
    reverse: if True, combine from the end toward the start.
    axis: the axis to scan along.

  Returns:
    A pytree like ``elems`` holding the prefix (or suffix) combinations.

  Examples:
    >>> lax.associative_scan(lax.add, jnp.arange(5))
    Array([ 0,  1,  3,  6, 10], dtype=int32)
    >>> lax.associative_scan(lax.max, jnp.array([1, 3, 2, 5, 4]), reverse=True)
    Array([5, 5, 5, 5, 4], dtype=int32)
  """
  if not callable(fn):
    raise TypeError(f"lax.associative_scan: fn argument should be callable, got "
                    f"{type(fn).__name__}")
  leaves, tree = tree_util.tree_flatten(elems)
  if not leaves:
    raise ValueError("associative_scan: elems must contain at least one array")
  leaves = [x if isinstance(x, Tracer) or hasattr(x, "aval") else _as_array(x)
            for x in leaves]
  ndim = len(get_aval(leaves[0]).shape)
  if not -ndim <= axis < ndim:
    raise ValueError(f"associative_scan: axis {axis} is out of bounds for arrays of rank "
                     f"{ndim}")
  axis = axis % ndim
  sizes = {get_aval(x).shape[axis] for x in leaves}
  if len(sizes) != 1:
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[get_aval(x).shape for x in leaves]})")
  if reverse:
    leaves = [_shapes.rev(x, (axis,)) for x in leaves]

  def combine(a, b):
    out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != tree:
      raise TypeError(f"associative_scan: fn must return the structure of elems {tree}, got "
                      f"{out_tree}")
    return out_leaves

  def sl(x, start, limit, stride=1):
    return _shapes.slice_in_dim(x, start, limit, stride, axis)

  def rec(xs):
    n = xs[0].shape[axis]
    if n < 2:
      return xs
    reduced = combine([sl(x, 0, n - 1, 2) for x in xs], [sl(x, 1, n, 2) for x in xs])
    odd = rec(reduced)
    if n % 2 == 0:
      even = combine([sl(o, 0, o.shape[axis] - 1) for o in odd], [sl(x, 2, n, 2) for x in xs])
    else:
      even = combine(odd, [sl(x, 2, n, 2) for x in xs])
    even = [_shapes.concatenate([sl(x, 0, 1), e], axis) for x, e in zip(xs, even)]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]

  outs = rec(leaves)
  if reverse:
    outs = [_shapes.rev(x, (axis,)) for x in outs]
  return tree_util.tree_unflatten(tree, outs)


# --- cost estimates (hlox.viz) -----------------------------------------------------------

def _scan_cost(avals_in, avals_out, *, jaxpr, length, **_):
  return cost.jaxpr_cost(jaxpr).scale(length)


def _while_cost(avals_in, avals_out, *, cond_jaxpr, body_jaxpr, **_):
  # The trip count is not known statically: one iteration is shown.
  return cost.jaxpr_cost(cond_jaxpr) + cost.jaxpr_cost(body_jaxpr)


def _cond_cost(avals_in, avals_out, *, branches, **_):
  # Only one branch runs: the dearest one bounds it.
  return max((cost.jaxpr_cost(b) for b in branches), key=lambda c: (c.flops, c.bytes))


cost.register_cost(scan_p, _scan_cost)
cost.register_cost(while_p, _while_cost)
cost.register_cost(cond_p, _cond_cost)


# Sharding in types: a loop's or a conditional's results are split as its body's (or first
# branch's) results are; a scan's stacked ys are not split along their new dimension.
def _scan_sharding_rule(in_avals, in_shardings, out_avals, *, jaxpr, num_carry, **params):
  outs = _out_splits(jaxpr)
  return outs[:num_carry] + [None if s is None else sharding_types.TypeSharding(
      s.mesh, (None,) + s.entries) for s in outs[num_carry:]]


sharding_types.sharding_rules.update({
    cond_p: lambda in_avals, in_shardings, out_avals, *, branches, **params:
        _out_splits(branches[0]),
    while_p: lambda in_avals, in_shardings, out_avals, *, body_jaxpr, **params:
        _out_splits(body_jaxpr),
    scan_p: _scan_sharding_rule,
})
sharding_types.sources.update({cond_p, while_p, scan_p})


# --- checkify: the error threaded through branches and loop bodies ------------------------

def _checkified_twice(error, trace):
  """``trace(error)`` (which returns ``(closed, out_tree, effects)`` per body) once to learn
  the kinds of error the bodies may set, then again on ``error`` widened with placeholders
  for them, so that the error has one type in and out of every body."""
  effects = frozenset().union(*(eff for _, _, eff in trace(error)))
  error = error._add_placeholder_effects(effects)
  return error, trace(error)


def _cond_checkify(error, enabled_errors, index, *ops, branches):
  op_avals = [get_aval(x) for x in ops]

  def trace(err):
    _, tree, avals = checkify.error_avals(err)
    return [checkify.checkify_traced(br, enabled_errors, tree, avals, op_avals)
            for br in branches]
  error, results = _checkified_twice(error, trace)
  err_vals = tree_util.tree_leaves(error)
  new_branches, consts = _hoist([closed for closed, _, _ in results])
  outs = cond_p.bind(index, *consts, *err_vals, *ops, branches=tuple(new_branches))
  trees = [tree for _, tree, _ in results]
  n_err = trees[0].num_leaves
  errs = [tree_util.tree_unflatten(t, outs[:n_err]) for t in trees]
  return checkify.merge_metadata(*errs), outs[n_err:]

checkify.error_checks[cond_p] = _cond_checkify


def _while_checkify(error, enabled_errors, *args, cond_jaxpr, body_jaxpr, cond_nconsts,
                    body_nconsts):
  if _batched_predicates.get(cond_jaxpr) is not None:
    raise ValueError("Checkify does not support batched while-loops (checkify-of-vmap-of-"
                     "while). \nHint: if possible, move the vmap to the outer level to get "
                     "vmap-of-checkify-of-while.")
  cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
  n_cc, n_bc = len(cc), len(bc)
  # The first predicate's checks run before the loop; each later one at the end of the
  # body that precedes it (the predicate itself cannot return an error).
  error, _ = checkify.checkify_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, enabled_errors,
                                     error, [*cc, *carry])

  def body_then_cond(*flat):
    cc_, bc_, carry_ = _split(flat, n_cc, n_bc)
    out = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *bc_, *carry_)
    eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cc_, *out)
    return out
  cc_avals, bc_avals = [get_aval(x) for x in cc], [get_aval(x) for x in bc]
  carry_avals = list(body_jaxpr.in_avals[n_bc:])
  step = trace_to_jaxpr(body_then_cond, cc_avals + bc_avals + carry_avals, "while body",
                        "checkify")

  def trace(err):
    _, tree, avals = checkify.error_avals(err)
    return [checkify.checkify_traced(step, enabled_errors, tree, avals,
                                     cc_avals + bc_avals + carry_avals, err_at=n_cc + n_bc)]
  error, [(body, out_tree, _)] = _checkified_twice(error, trace)
  err_vals, err_tree, err_avals = checkify.error_avals(error)
  n_err = len(err_vals)
  checked_cond, _, _ = checkify.checkify_traced(cond_jaxpr, enabled_errors, err_tree,
                                                err_avals, cc_avals + carry_avals, err_at=n_cc)
  pred_only = ClosedJaxpr(Jaxpr(checked_cond.jaxpr.constvars, checked_cond.jaxpr.invars,
                                checked_cond.jaxpr.outvars[n_err:], checked_cond.jaxpr.eqns),
                          checked_cond.consts)
  cond_j, cj = convert_constvars(pred_only)
  body_j, bj = convert_constvars(body)
  outs = while_p.bind(*cj, *cc, *bj, *cc, *bc, *err_vals, *carry, cond_jaxpr=cond_j,
                      body_jaxpr=body_j, cond_nconsts=len(cj) + n_cc,
                      body_nconsts=len(bj) + n_cc + n_bc)
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[while_p] = _while_checkify


def _scan_checkify(error, enabled_errors, *args, jaxpr, num_consts, num_carry, length,
                   reverse, unroll):
  consts, carry, xs = _split(args, num_consts, num_carry)
  in_avals = list(jaxpr.in_avals)

  def trace(err):
    _, tree, avals = checkify.error_avals(err)
    return [checkify.checkify_traced(jaxpr, enabled_errors, tree, avals, in_avals,
                                     err_at=num_consts)]
  error, [(body, out_tree, _)] = _checkified_twice(error, trace)
  err_vals = tree_util.tree_leaves(error)
  n_err = len(err_vals)
  body, body_consts = convert_constvars(body)
  outs = scan_p.bind(*body_consts, *consts, *err_vals, *carry, *xs, jaxpr=body,
                     num_consts=len(body_consts) + num_consts, num_carry=n_err + num_carry,
                     length=length, reverse=reverse, unroll=unroll)
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[scan_p] = _scan_checkify


# --- cumulative reductions along an axis of symbolic length --------------------------------

def _cumulative_loop(prim, identity):
  """``prim`` (a cumulative reduction) along an axis whose length is symbolic, as a loop
  over the axis: the running value combines with each slice by ``prim`` itself over the
  two of them, so every reduction keeps its own combining operation."""
  def fun(x, *, axis, reverse):
    aval = get_aval(x)
    n = _base.convert_element_type(aval.shape[axis], np.int32)
    piece = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
    acc = _base.full(piece, np.asarray(identity(aval.dtype), aval.dtype)[()], aval.dtype)

    def body(i, carry):
      acc, out = carry
      idx = _ew.sub(_ew.sub(n, np.int32(1)), i) if reverse else i
      pair = _shapes.concatenate([acc, _ix.dynamic_slice_in_dim(x, idx, 1, axis)], axis)
      acc = _shapes.slice_in_dim(prim.bind(pair, axis=axis, reverse=False), 1, 2, axis=axis)
      return acc, _ix.dynamic_update_slice_in_dim(out, acc, idx, axis)
    return fori_loop(np.int32(0), n, body, (acc, x))[1]
  return xla.lower_fun(fun, multiple_results=False)


for _name, _prim in (("cumsum", _cum.cumsum_p), ("cumprod", _cum.cumprod_p),
                     ("cummax", _cum.cummax_p), ("cummin", _cum.cummin_p),
                     ("cumlogsumexp", _cum.cumlogsumexp_p)):
  _cum.symbolic_axis_lowerings[_name] = _cumulative_loop(_prim, _cum.identities[_name])
del _name, _prim
