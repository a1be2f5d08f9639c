"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules.

A decorated function binds a call primitive carrying the traced function and the user's
rule. Evaluated, jitted or printed, it is the function itself; under the JVP interpreter the
rule is used instead:
  - ``custom_jvp_call``: the user's JVP runs on primals and tangents;
  - ``custom_vjp_call``: ``fwd`` runs on the primals, and the output tangent is a
    ``custom_lin`` equation holding the residuals; transposing it calls ``bwd``.

As in JAX, the body is traced only where a jaxpr is needed (under ``jit``, ``vmap``, or with
unknown values of a partial evaluation): called eagerly the Python function simply runs, and
differentiated eagerly only the user's rule runs (``_dispatch``), so side effects and Python
control flow on concrete values behave as they do in JAX.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Sequence

import numpy as np

from hlox import lax, tree_util
from hlox.cache import LRUCache
from hlox.core import sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.source_info import current_xla_metadata
from hlox.core.tracer import Tracer, eval_trace, get_aval, set_current_trace, trace_ctx
from hlox.interpreters import ad, batching, checkify, jet, nan_checks, xla
from hlox.interpreters.partial_eval import PartialEvalTrace
from hlox.runtime.array import device_put

__all__ = ["closure_convert", "custom_gradient", "custom_jvp", "custom_vjp"]


_PY_SCALARS = (int, float, complex, bool)


def _resolve_args(fun, args, kwargs):
  """Keyword arguments as positional ones (custom rules see positional arguments)."""
  if not kwargs:
    return args
  sig = inspect.signature(fun)
  bound = sig.bind(*args, **kwargs)
  bound.apply_defaults()
  return bound.args


def _split_nondiff(args, nondiff_argnums):
  nondiff = {i: args[i] for i in nondiff_argnums}
  diff = [a for i, a in enumerate(args) if i not in nondiff]
  return nondiff, diff


def _merge(nondiff, diff, n):
  it = iter(diff)
  return [nondiff[i] if i in nondiff else next(it) for i in range(n)]


_trace_cache = LRUCache()


def _trace_call(fun, nondiff, n_args, in_tree, in_avals, name):
  """Trace ``fun`` on the differentiable leaves: (jaxpr without consts, consts, out_tree).

  Cached per function, argument types and (hashable) nondiff values, unless the function
  closed over traced values."""
  try:
    key = (fun, in_tree, tuple(in_avals), tuple(sorted(nondiff.items())),
           tuple(trace_ctx.axis_env), current_xla_metadata())
    hash(key)
  except TypeError:
    key = None
  if key is not None:
    hit = _trace_cache.get(key)
    if hit is not None:
      return hit
  result = _trace_call_uncached(fun, nondiff, n_args, in_tree, in_avals, name)
  if key is not None and not any(isinstance(c, Tracer) for c in result[1]):
    _trace_cache.put(key, result)
  return result


def _trace_call_uncached(fun, nondiff, n_args, in_tree, in_avals, name):
  out_tree_box = []

  def flat(*leaves):
    diff = tree_util.tree_unflatten(in_tree, leaves)
    out = fun(*_merge(nondiff, diff, n_args))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_box.append(out_tree)
    return out_leaves

  closed = trace_to_jaxpr(flat, in_avals, name, "custom")
  jaxpr, consts = convert_constvars(closed)
  return jaxpr, consts, out_tree_box[0]


def _user_rule_name(rule, attr):
  """The name of the user's function ``attr`` (jvp, fwd, bwd) behind a rule parameter."""
  while rule is not None and not hasattr(rule, "f"):
    rule = getattr(rule, "rule", None)
  fn = getattr(getattr(rule, "f", None), attr, None)
  return getattr(fn, "__name__", type(fn).__name__)


def _user_symbolic_zeros(rule):
  while rule is not None and not hasattr(rule, "f"):
    rule = getattr(rule, "rule", None)
  return bool(getattr(getattr(rule, "f", None), "symbolic_zeros", False))


class _CallPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    # As JAX prints them: name first, then the other parameters sorted (the user's rules by
    # function name).
    shown = {"name": params["name"], "call_jaxpr": params["call_jaxpr"]}
    if "jvp" in params:
      shown["jvp"] = _user_rule_name(params["jvp"], "jvp")
      shown["symbolic_zeros"] = _user_symbolic_zeros(params["jvp"])
    if "vjp" in params:
      shown = {"name": params["name"], "bwd": _user_rule_name(params["vjp"], "bwd"),
               "call_jaxpr": params["call_jaxpr"], "fwd": _user_rule_name(params["vjp"], "fwd"),
               "symbolic_zeros": _user_symbolic_zeros(params["vjp"])}
    return shown


def _call_impl(*args, call_jaxpr, **params):
  return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _call_abstract_eval(*avals, call_jaxpr, **params):
  return list(call_jaxpr.out_avals)


def _call_lowering(ctx, *args, call_jaxpr, name, **params):
  return xla.lower_call(ctx, call_jaxpr, args, name=name)


def _call_deoptimized(*args, call_jaxpr, **params):
  # debug_nans's re-run: the primal body equation by equation.
  return nan_checks.eval_deoptimized(call_jaxpr.jaxpr, call_jaxpr.consts, args)


def _call_jet(primals, series, *, call_jaxpr, **params):
  # As JAX's jet: the custom rule is set aside and the function's own body is expanded.
  return jet.call_rule(call_jaxpr, primals, series)


def _register_call(prim):
  prim.def_impl(_call_impl)
  jet.jet_rules[prim] = _call_jet
  nan_checks.deoptimized_rules[prim] = _call_deoptimized
  prim.def_abstract_eval(_call_abstract_eval)
  xla.register_lowering(prim, _call_lowering)


def _instantiate(tangents, primals):
  return [ad.instantiate_zeros(t) for t in tangents]


# --- custom_jvp --------------------------------------------------------------------------

def _bind_custom(f, prim, rule_param, rule_cls, args, name):
  """Trace ``f.fun`` on the differentiable arguments and bind ``prim`` with the user's rule
  (param ``rule_param``) wrapped in ``rule_cls``."""
  nondiff, diff = _split_nondiff(args, f.nondiff_argnums)
  leaves, in_tree = tree_util.tree_flatten(diff)
  in_avals = [get_aval(x) for x in leaves]
  jaxpr, consts, out_tree = _trace_call(f.fun, nondiff, len(args), in_tree, in_avals, name)
  rule = rule_cls(f, nondiff, len(args), in_tree, out_tree, len(consts), name)
  outs = prim.bind(*consts, *leaves, call_jaxpr=jaxpr, num_consts=len(consts), name=name,
                   **{rule_param: rule})
  return tree_util.tree_unflatten(out_tree, outs)


def _dispatch(f, args, kwargs, name, prim, rule_param, rule_cls, differentiate):
  """Run a custom-derivative call on the current trace, as JAX's traces process one.

  Eagerly, the function runs; a partial evaluation with only known inputs hands the call to
  its parent; a JVP trace with nonzero tangents calls ``differentiate`` (the user's rule) on
  its parent, and with only zero tangents hands the call to its parent. Any other trace gets
  the traced body bound as ``prim``."""
  args = _resolve_args(f.fun, args, kwargs)
  nondiff, diff = _split_nondiff(args, f.nondiff_argnums)
  leaves, in_tree = tree_util.tree_flatten(diff)
  trace = trace_ctx.trace
  if trace is eval_trace and not any(isinstance(x, Tracer) for x in leaves):
    return f.fun(*args)
  if type(trace) is PartialEvalTrace and not any(trace.is_unknown(x) for x in leaves):
    with set_current_trace(trace.parent):
      return _dispatch(f, args, {}, name, prim, rule_param, rule_cls, differentiate)
  if type(trace) is ad.JVPTrace:
    primals, tangents = zip(*[trace.to_primal_tangent(x) for x in leaves]) if leaves else ((), ())
    with set_current_trace(trace.parent):
      if all(type(t) is ad.Zero for t in tangents):
        primal_args = _merge(nondiff, tree_util.tree_unflatten(in_tree, primals), len(args))
        return _dispatch(f, primal_args, {}, name, prim, rule_param, rule_cls, differentiate)
      rule = rule_cls(f, nondiff, len(args), in_tree, None, 0, name)
      p_out, t_out = differentiate(list(primals), list(tangents), rule=rule, name=name)
    outs = [trace.maybe_tracer(p, t) for p, t in zip(p_out, t_out)]
    return tree_util.tree_unflatten(rule.out_tree, outs)
  return _bind_custom(f, prim, rule_param, rule_cls, args, name)


custom_jvp_call_p = _CallPrimitive("custom_jvp_call")
_register_call(custom_jvp_call_p)


class custom_jvp:
  """Give ``fun`` a custom JVP rule: ``f.defjvp(lambda primals, tangents: (out, t_out))``."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp = None
    self.symbolic_zeros = False

  def __getattr__(self, name):
    # Another custom decorator's methods (``custom_vjp(custom_vmap(f)).def_vmap``) reach the
    # function it wraps, as in JAX.
    if name == "fun":
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
    """``jvp(primals, tangents) -> (primal_out, tangent_out)`` (nondiff args come first)."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *tangent_fns):
    """One function per argument: ``tangent_fn(t_i, primal_out, *primals)``; None for args
    without a tangent contribution."""
    if self.nondiff_argnums:
      raise TypeError("defjvps does not support nondiff_argnums; use defjvp")

    def jvp(primals, tangents):
      out = self(*primals)
      zero_out = tree_util.tree_map(lambda o: np.zeros(np.shape(o), get_aval(o).dtype), out)
      t_out = zero_out
      for fn, t in zip(tangent_fns, tangents):
        if fn is None:
          continue
        contribution = fn(t, out, *primals)
        t_out = tree_util.tree_map(lambda a, b: a + b, t_out, contribution)
      return out, t_out
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", "custom_jvp")
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
    return _dispatch(self, args, kwargs, name, custom_jvp_call_p, "jvp", _JVPRule,
                     _custom_jvp_rule_jvp)


class _Rule:
  """A user's rule on flat values, with what is needed to rebuild the user's pytrees.

  Hashable by identity, so it can be a primitive parameter.
  """

  def __init__(self, f, nondiff, n_args, in_tree, out_tree, num_consts, name):
    self.f, self.nondiff, self.n_args = f, nondiff, n_args
    self.in_tree, self.out_tree, self.num_consts, self.name = in_tree, out_tree, num_consts, name

  def _nondiff_values(self):
    return [self.nondiff[i] for i in sorted(self.nondiff)]


class _JVPRule(_Rule):
  """The user's JVP."""

  def __call__(self, primals, tangents):
    primals, tangents = primals[self.num_consts:], tangents[self.num_consts:]
    if not self.f.symbolic_zeros:
      tangents = [ad.instantiate_zeros(t) for t in tangents]
    p_args = tree_util.tree_unflatten(self.in_tree, primals)
    t_args = tree_util.tree_unflatten(self.in_tree, tangents)
    out = self.f.jvp(*self._nondiff_values(), tuple(p_args), tuple(t_args))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom JVP rule of {self.name} must return a pair (primal_out, "
                      f"tangent_out), got {type(out).__name__}")
    p_out, t_out = out
    p_leaves, p_tree = tree_util.tree_flatten(p_out)
    t_leaves, t_tree = tree_util.tree_flatten(t_out)
    if self.out_tree is None:  # the body was not traced: the rule's output gives the tree
      self.out_tree = p_tree
    if p_tree != self.out_tree or t_tree != self.out_tree:
      raise TypeError(f"Custom JVP rule of {self.name} must produce primal and tangent outputs "
                      f"with the structure of the function's output {self.out_tree}; got "
                      f"primal {p_tree} and tangent {t_tree}")
    for p, t in zip(p_leaves, t_leaves):
      pa = get_aval(p).update(weak_type=False)
      ta = (t.aval if type(t) is ad.Zero else get_aval(t)).update(weak_type=False)
      expected = pa.to_tangent_aval()
      if expected.shape != ta.shape or expected.dtype != ta.dtype:
        # JAX's error (a TypeError), for the rule of {self.name}.
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {expected.str_short()} "
                        f"(tangent type of {pa.str_short()}) but got {ta.str_short()}.")
    return p_leaves, t_leaves


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
  if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
    raise NotImplementedError(
        f"custom_jvp function {name} closes over a value being differentiated; pass it as an "
        "explicit argument instead")
  return jvp(primals, tangents)


def _custom_jvp_rule_jvp(primals, tangents, *, rule, name):
  return rule(primals, tangents)

ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, **params):
  # A custom_jvp function applied to a linear value outside of its own JVP (a tangent solve
  # inside lax.custom_root, say) is linear there: transpose its call jaxpr (JAX inlines the
  # call under partial evaluation, which comes to the same).
  return ad.backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, list(args), list(cts))

ad.primitive_transposes[custom_jvp_call_p] = _custom_jvp_call_transpose


# --- custom_vjp --------------------------------------------------------------------------

custom_vjp_call_p = _CallPrimitive("custom_vjp_call")
_register_call(custom_vjp_call_p)


class custom_vjp:
  """Give ``fun`` a custom VJP: ``f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (out, res)`` and
  ``bwd(res, g) -> tuple of cotangents, one per (differentiable) argument``."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = self.bwd = None

  def __getattr__(self, name):
    # Another custom decorator's methods (``custom_vjp(custom_vmap(f)).def_vmap``) reach the
    # function it wraps, as in JAX.
    if name == "fun":
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
             optimize_remat: bool = False):
    """Set the forward (``fwd(*args) -> (out, residuals)``) and backward
    (``bwd(residuals, ct_out) -> ct_args``) rules. ``optimize_remat`` (JAX's experimental
    flag) only changes what ``remat`` recomputes in JAX (the primal output from ``fun``,
    the residuals from ``fwd`` in the backward pass); hlox runs ``fwd`` as usual, which
    gives the same values and gradients."""
    if symbolic_zeros and optimize_remat:
      raise NotImplementedError(
          "remat optimization for custom_vjp does not support symbolic zeros")
    self.fwd, self.bwd = fwd, bwd
    self.optimize_remat = bool(optimize_remat)

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", "custom_vjp")
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
    return _dispatch(self, args, kwargs, name, custom_vjp_call_p, "vjp", _VJPRule,
                     _custom_vjp_rule_jvp)


class _VJPRule(_Rule):
  """The user's fwd and bwd."""

  def fwd(self, primals):
    """Run the user's fwd: flat outputs, flat residuals and the residuals' tree."""
    diff = tree_util.tree_unflatten(self.in_tree, primals[self.num_consts:])
    out = self.f.fwd(*_merge(self.nondiff, diff, self.n_args))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom VJP fwd rule of {self.name} must return a pair (output, "
                      f"residuals), got {type(out).__name__}")
    primal_out, res = out
    p_leaves, p_tree = tree_util.tree_flatten(primal_out)
    if self.out_tree is None:  # the body was not traced: fwd's output gives the tree
      self.out_tree = p_tree
    if p_tree != self.out_tree:
      raise TypeError(f"Custom VJP fwd rule of {self.name} must return an output with the "
                      f"structure of the function's output {self.out_tree}, got {p_tree}")
    res_leaves, res_tree = tree_util.tree_flatten(res)
    return p_leaves, res_leaves, res_tree

  def bwd(self, res_tree, res_leaves, cts, in_avals):
    if trace_ctx.trace is eval_trace:
      # A scalar residual passed through the linear jaxpr comes back as a literal's Python
      # number; eagerly the rule sees the Array its fwd made, as in JAX.
      res_leaves = [device_put(r) if type(r) in _PY_SCALARS else r for r in res_leaves]
    res = tree_util.tree_unflatten(res_tree, res_leaves)
    ct = tree_util.tree_unflatten(self.out_tree, cts)
    result = self.f.bwd(*self._nondiff_values(), res, ct)
    if not isinstance(result, (tuple, list)):
      raise TypeError(f"Custom VJP bwd rule of {self.name} must return a tuple with one "
                      f"cotangent per differentiable argument, got {type(result).__name__}")
    is_none = lambda x: x is None  # None stands for a zero cotangent
    leaves, got_tree = tree_util.tree_flatten(list(result), is_leaf=is_none)
    if got_tree != self.in_tree:
      leaves = self._expand_none_prefixes(list(result), leaves)
    if leaves is None:
      raise TypeError(
          f"Custom VJP bwd rule of {self.name} must produce a tuple with the structure of the "
          f"differentiable primal inputs {self.in_tree}, but it produced {got_tree}")
    out = []
    for ct_leaf, aval in zip(leaves, in_avals):
      if ct_leaf is None:
        out.append(ad.Zero(aval.to_tangent_aval()))
        continue
      c_aval = get_aval(ct_leaf)
      if c_aval.shape != aval.shape:
        raise ValueError(f"Custom VJP bwd rule of {self.name} produced a cotangent of shape "
                         f"{c_aval.shape} for an input of shape {aval.shape}")
      out.append(ct_leaf)
    return out

  def _expand_none_prefixes(self, result, leaves):
    """As JAX allows, a None in the bwd output stands for zero cotangents of the whole
    argument subtree at its place (Trax's layers return None for a state dict). The leaves
    with each None spread over its subtree, or None when ``result`` is no such prefix."""
    skeleton = tree_util.tree_unflatten(self.in_tree, [0] * self.in_tree.num_leaves)
    try:
      spread = tree_util.broadcast_prefix(result, skeleton, is_leaf=lambda x: x is None)
    except ValueError:
      return None
    # A cotangent array may only stand for one leaf; only None spreads over a subtree.
    if sum(x is not None for x in spread) != sum(x is not None for x in leaves):
      return None
    return spread


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, vjp, num_consts, name):
  if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
    raise NotImplementedError(
        f"custom_vjp function {name} closes over a value being differentiated; pass it as an "
        "explicit argument instead")
  return _custom_vjp_rule_jvp(primals, tangents, rule=vjp, name=name)


def _custom_vjp_rule_jvp(primals, tangents, *, rule, name):
  """fwd on the primals; the output tangent is a ``custom_lin`` of the input tangents."""
  vjp, num_consts = rule, rule.num_consts
  p_out, res, res_tree = vjp.fwd(primals)
  in_avals = [get_aval(p) for p in primals[num_consts:]]
  out_avals = [get_aval(p).to_tangent_aval() for p in p_out]
  nz = [type(t) is not ad.Zero for t in tangents[num_consts:]]
  t_in = [t for t in tangents[num_consts:] if type(t) is not ad.Zero]
  t_out = custom_lin_p.bind(*res, *t_in, num_res=len(res), vjp=vjp, res_tree=res_tree,
                            in_avals=tuple(in_avals), nonzeros=tuple(nz),
                            out_avals=tuple(out_avals), name=name)
  return p_out, t_out

ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


class _LinPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    return {"name": params["name"], "num_res": params["num_res"]}


# The linear part of a custom_vjp function: only exists inside linearized jaxprs; its
# transpose is the user's bwd.
custom_lin_p = _LinPrimitive("custom_lin")
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **params: list(out_avals))


def _custom_lin_impl(*args, name, **params):
  # JAX's words; reverse mode (grad/vjp) or a custom_jvp is what works
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")

custom_lin_p.def_impl(_custom_lin_impl)


def _custom_lin_batch(axis_data, vals, dims, *, name, **params):
  # Only forward mode binds custom_lin outside a linearization (e.g. jacfwd = vmap of jvp).
  _custom_lin_impl(name=name)

batching.axis_primitive_batchers[custom_lin_p] = _custom_lin_batch


def _custom_lin_transpose(cts, *args, num_res, vjp, res_tree, in_avals, nonzeros, out_avals,
                          name):
  res = list(args[:num_res])
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts_in = vjp.bwd(res_tree, res, cts, in_avals)
  cts_nz = [ct for ct, nz in zip(cts_in, nonzeros) if nz]
  return [None] * num_res + cts_nz

ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose


# --- batching ----------------------------------------------------------------------------

def _batched_call(prim, axis_data, vals, dims, call_jaxpr):
  """The call jaxpr batched with every output at batch dimension 0."""
  batched, _ = batching.batch_jaxpr(call_jaxpr, axis_data, dims, instantiate=True)
  batched, consts = convert_constvars(batched)
  return batched, consts


class _BatchedJVPRule:
  """A custom JVP rule run under vmap: the user's rule sees per-example values."""

  def __init__(self, rule, axis_data, in_dims, num_new_consts):
    self.rule, self.axis_data, self.in_dims = rule, axis_data, list(in_dims)
    self.num_new_consts = num_new_consts

  def __call__(self, primals, tangents):
    primals, tangents = primals[self.num_new_consts:], tangents[self.num_new_consts:]
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    n = len(primals)

    def flat(*xs):
      p_out, t_out = self.rule(list(xs[:n]), list(xs[n:]))
      return list(p_out) + [ad.instantiate_zeros(t) for t in t_out]

    outs, dims = batching.batch(flat, list(primals) + tangents, self.in_dims * 2,
                                self.axis_data)
    outs = [batching.matchaxis(o, d, 0, self.axis_data.size) for o, d in zip(outs, dims)]
    k = len(outs) // 2
    return outs[:k], outs[k:]


def _custom_jvp_call_batch(axis_data, vals, dims, *, call_jaxpr, jvp, num_consts, name):
  batched, consts = _batched_call(custom_jvp_call_p, axis_data, vals, dims, call_jaxpr)
  rule = _BatchedJVPRule(jvp, axis_data, dims, len(consts))
  outs = custom_jvp_call_p.bind(*consts, *vals, call_jaxpr=batched, jvp=rule,
                                num_consts=num_consts + len(consts), name=name)
  return outs, [0] * len(outs)

batching.axis_primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


class _BatchedVJPRule:
  """A custom VJP (fwd, bwd) run under vmap."""

  def __init__(self, rule, axis_data, in_dims, num_new_consts):
    self.rule, self.axis_data, self.in_dims = rule, axis_data, list(in_dims)
    self.num_new_consts = num_new_consts
    self.name = rule.name

  @property
  def num_consts(self):
    # What the JVP of a batched call skips before the arguments: the batched jaxpr's new
    # constants, then the original call's.
    return self.num_new_consts + self.rule.num_consts

  def fwd(self, primals):
    primals = primals[self.num_new_consts:]
    tree_box = []

    def flat(*xs):
      p_out, res, res_tree = self.rule.fwd(list(xs))
      tree_box.append((len(p_out), res_tree))
      return list(p_out) + list(res)

    outs, dims = batching.batch(flat, list(primals), self.in_dims, self.axis_data)
    outs = [batching.matchaxis(o, d, 0, self.axis_data.size) for o, d in zip(outs, dims)]
    n_out, res_tree = tree_box[0]
    return outs[:n_out], outs[n_out:], res_tree

  def bwd(self, res_tree, res, cts, in_avals):
    size = self.axis_data.size
    num_consts = self.rule.num_consts
    dims = self.in_dims[num_consts:]
    unbatched_avals = [_unbatched_aval(a, d) for a, d in zip(in_avals, dims)]
    nr = len(res)

    def flat(*xs):
      cts_in = self.rule.bwd(res_tree, list(xs[:nr]), list(xs[nr:]), unbatched_avals)
      return [ad.instantiate_zeros(c) for c in cts_in]

    outs, out_dims = batching.batch(flat, list(res) + list(cts), [0] * (nr + len(cts)),
                                    self.axis_data)
    result = []
    for o, od, d in zip(outs, out_dims, dims):
      if d is None:  # an unmapped input gets the sum over the mapped axis
        result.append(o if od is None else _sum_axis(o, od))
      else:
        result.append(batching.matchaxis(o, od, d, size))
    return result


def _unbatched_aval(aval, d):
  if d is None:
    return aval
  return ShapedArray(aval.shape[:d] + aval.shape[d + 1:], aval.dtype, aval.weak_type)


def _sum_axis(x, axis):
  return lax.reduce_sum(x, (axis,))


def _custom_vjp_call_batch(axis_data, vals, dims, *, call_jaxpr, vjp, num_consts, name):
  batched, consts = _batched_call(custom_vjp_call_p, axis_data, vals, dims, call_jaxpr)
  rule = _BatchedVJPRule(vjp, axis_data, dims, len(consts))
  outs = custom_vjp_call_p.bind(*consts, *vals, call_jaxpr=batched, vjp=rule,
                                num_consts=num_consts + len(consts), name=name)
  return outs, [0] * len(outs)

batching.axis_primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


# --- checkify ----------------------------------------------------------------------------
# The primal body is checked (its error threaded through the call); the user's rules are
# not: under a JVP the rule runs and the input error passes through unchanged, as in JAX
# (checkify of jvp checks the rule's computation instead).

class _CheckifiedRule:
  """A user's rule behind a call that also takes the error's leaves (after ``skip`` new
  consts) and returns them first; ``used`` records that the rule ran."""

  def __init__(self, rule, skip, err_avals, used):
    self.rule, self.skip, self.err_avals, self.used = rule, skip, list(err_avals), used
    self.name = rule.name
    self.num_consts = skip + len(err_avals) + rule.num_consts

  def _errors(self, primals):
    self.used.append(True)
    return list(primals[self.skip:self.skip + len(self.err_avals)])

  def _zero_tangents(self):
    return [ad.Zero(a.to_tangent_aval()) for a in self.err_avals]

  def __call__(self, primals, tangents):  # custom_jvp
    errs, n = self._errors(primals), self.skip + len(self.err_avals)
    p_out, t_out = self.rule(primals[n:], tangents[n:])
    return [*errs, *p_out], [*self._zero_tangents(), *t_out]

  def fwd(self, primals):  # custom_vjp
    errs, n = self._errors(primals), self.skip + len(self.err_avals)
    p_out, res, res_tree = self.rule.fwd(primals[n:])
    return [*errs, *p_out], res, res_tree

  def bwd(self, res_tree, res, cts, in_avals):
    return self.rule.bwd(res_tree, res, cts[len(self.err_avals):], in_avals)


def _custom_call_checkify(prim, rule_param, error, enabled_errors, *args, call_jaxpr,
                          num_consts, name, **params):
  err_vals, err_tree, err_avals = checkify.error_avals(error)
  checked, out_tree, _ = checkify.checkify_traced(call_jaxpr, enabled_errors, err_tree,
                                                  err_avals, [get_aval(x) for x in args])
  checked, consts = convert_constvars(checked)
  used = []
  rule = _CheckifiedRule(params[rule_param], len(consts), err_avals, used)
  outs = prim.bind(*consts, *err_vals, *args, call_jaxpr=checked,
                   num_consts=len(consts) + len(err_vals) + num_consts, name=name,
                   **{rule_param: rule})
  if used:  # the user's rule ran: the error passed through it unchanged
    return tree_util.tree_unflatten(err_tree, outs[:len(err_vals)]), outs[len(err_vals):]
  n_err = out_tree.num_leaves
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[custom_jvp_call_p] = functools.partial(
    _custom_call_checkify, custom_jvp_call_p, "jvp")
checkify.error_checks[custom_vjp_call_p] = functools.partial(
    _custom_call_checkify, custom_vjp_call_p, "vjp")


# --- custom_gradient and closure_convert (JAX's conveniences on custom_vjp) -----------------

@tree_util.register_pytree_node_class
class _GradientRule:
  """A ``custom_gradient`` rule traced to a jaxpr: its closed-over values are the residuals
  (the pytree's leaves), the jaxpr and the trees are static."""

  def __init__(self, jaxpr, consts, ct_tree, out_tree):
    self.jaxpr, self.consts, self.ct_tree, self.out_tree = jaxpr, consts, ct_tree, out_tree

  def tree_flatten(self):
    return list(self.consts), (self.jaxpr, self.ct_tree, self.out_tree)

  @classmethod
  def tree_unflatten(cls, aux, consts):
    return cls(aux[0], list(consts), aux[1], aux[2])


def _cotangent_aval(x):
  return get_aval(x)  # cotangents have their primal's type (weak type included, as JAX)


def custom_gradient(fun: Callable) -> Callable:
  """Define a function and its reverse-mode rule in one (TensorFlow's ``custom_gradient``,
  JAX's ``jax.custom_gradient``): ``fun(*args)`` returns ``(value, vjp)``, where
  ``vjp(cotangent of value)`` returns a tuple with one cotangent per argument (a bare value
  when ``fun`` takes one argument). ``vjp`` may close over values computed in ``fun``; it
  is traced once on the forward pass, so it cannot branch on them in Python.

      @hlox.custom_gradient
      def f(x):
        return x ** 2, lambda g: (g * x,)   # grad(f)(3.) == 3.
  """
  name = getattr(fun, "__name__", "custom_gradient")

  def primal(*args, **kwargs):
    value, _ = fun(*args, **kwargs)
    return value
  functools.update_wrapper(primal, fun)
  wrapped = custom_vjp(primal)

  def fwd(*args, **kwargs):
    value, rule = fun(*args, **kwargs)
    if not callable(rule):
      raise TypeError(f"custom_gradient: {name} must return a pair (value, vjp function), "
                      f"got a second element of type {type(rule).__name__}")
    ct_leaves, ct_tree = tree_util.tree_flatten(value)
    out_tree_box = []

    def flat_rule(*cts):
      out = rule(tree_util.tree_unflatten(ct_tree, list(cts)))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append(out_tree)
      return out_leaves
    closed = trace_to_jaxpr(flat_rule, [_cotangent_aval(x) for x in ct_leaves],
                            debug_info=f"custom_gradient vjp of {name}")
    jaxpr, consts = convert_constvars(closed)
    return value, _GradientRule(jaxpr, consts, ct_tree, out_tree_box[0])

  def bwd(res, ct):
    ct_leaves, ct_tree = tree_util.tree_flatten(ct)
    if ct_tree != res.ct_tree:
      raise TypeError(f"custom_gradient: {name}'s cotangent has structure {ct_tree}, "
                      f"expected {res.ct_tree}")
    out = eval_jaxpr(res.jaxpr.jaxpr, [], *res.consts, *ct_leaves)
    cts = tree_util.tree_unflatten(res.out_tree, out)
    if tree_util.treedef_is_leaf(res.out_tree):
      cts = (cts,)
    return cts

  wrapped.defvjp(fwd, bwd)
  return wrapped


def closure_convert(fun: Callable, *example_args):
  """Hoist the traced values ``fun`` closes over into explicit arguments (JAX's
  ``jax.closure_convert``), for passing ``fun`` across a custom-derivative boundary:
  ``fun`` is traced on ``example_args``; returns ``(converted, hoisted)`` where
  ``converted(*args, *hoisted)`` computes ``fun(*args)`` (for arguments of the examples'
  structure and types) and ``hoisted`` are the closed-over values that may carry
  derivatives (tracers); concrete constants stay inside ``converted``."""
  flat_args, in_tree = tree_util.tree_flatten(example_args)
  name = getattr(fun, "__name__", "fun")
  out_tree_box = []

  def flat_fun(*leaves):
    out = fun(*tree_util.tree_unflatten(in_tree, list(leaves)))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_box.append(out_tree)
    return out_leaves
  closed = trace_to_jaxpr(flat_fun, [get_aval(x) for x in flat_args],
                          debug_info=f"closure_convert of {name}")
  jaxpr, consts = convert_constvars(closed)
  out_tree = out_tree_box[0]
  hoisted_at = [isinstance(c, Tracer) for c in consts]
  hoisted = [c for c, h in zip(consts, hoisted_at) if h]
  kept = [c for c, h in zip(consts, hoisted_at) if not h]

  def converted(*args_and_hoisted):
    n_args = len(args_and_hoisted) - len(hoisted)
    args, hoisted_vals = args_and_hoisted[:n_args], args_and_hoisted[n_args:]
    leaves, tree = tree_util.tree_flatten(tuple(args))
    if tree != in_tree:
      raise TypeError("closure_convert: the inputs to the converted function must have the "
                      "same pytree structure as the example arguments passed to "
                      f"closure_convert; expected {in_tree}, got {tree}")
    kept_it, hoisted_it = iter(kept), iter(hoisted_vals)
    all_consts = [next(hoisted_it) if h else next(kept_it) for h in hoisted_at]
    out = eval_jaxpr(jaxpr.jaxpr, [], *all_consts, *leaves)
    return tree_util.tree_unflatten(out_tree, out)
  converted.__name__ = f"closure_converted_{name}"
  return converted, hoisted


# Sharding in types: a call of a function with custom rules is split as the function's
# results (``core/sharding_types.py``).
for _p in (custom_jvp_call_p, custom_vjp_call_p):
  sharding_types.sharding_rules[_p] = sharding_types.call_rule("call_jaxpr")
