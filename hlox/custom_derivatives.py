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

import dataclasses
import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from hlox import lax

from hlox import _tree_transform as tree_util
from hlox.config import config
from hlox.cache import PerFunctionCache
from hlox.core import dtypes, sharding_types
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.errors import UnexpectedTracerError
from hlox.core.source_info import current_xla_metadata
from hlox.core.traceback_util import api_boundary
from hlox.core.tracer import Tracer, eval_trace, get_aval, set_current_trace, trace_ctx
from hlox.core.refs import is_ref_aval
from hlox.interpreters import ad, batching, checkify, jet, nan_checks, state_discharge, xla
from hlox.lax import state
from hlox.interpreters.partial_eval import PartialEvalTrace
from hlox.runtime.array import device_put

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient",
           "custom_jvp", "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p",
           "custom_vjp_primal_tree_values", "zero_from_primal"]


_PY_SCALARS = (int, float, complex, bool)


# --- what rules with ``symbolic_zeros=True`` see --------------------------------------------

class SymbolicZero:
  """A tangent or cotangent known to be zero, as a custom rule defined with
  ``symbolic_zeros=True`` sees it (and may return it): it has the zero's type (``aval``,
  ``shape``, ``dtype``, ...) but no data, so a rule can tell which inputs are not being
  differentiated and skip work for them."""

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return "SymbolicZero"

  def __getattr__(self, name):
    # Type queries (shape, dtype, ndim, size, weak_type, str_short) answer for the zero.
    if name == "aval":
      raise AttributeError(name)
    try:
      return getattr(self.aval, name)
    except AttributeError:
      raise AttributeError(f"SymbolicZero has no attribute {name}") from None

  @staticmethod
  def from_primal_value(val) -> "SymbolicZero":
    """The zero tangent of ``val``."""
    return SymbolicZero(get_aval(val).to_tangent_aval())


def zero_from_primal(val, symbolic_zeros: bool = False):
  """Zero tangents for the pytree ``val``: arrays of each leaf's tangent type (float0 for
  integers), or ``SymbolicZero`` objects with ``symbolic_zeros=True``."""
  def zero(x):
    t_aval = get_aval(x).to_tangent_aval()
    return SymbolicZero(t_aval) if symbolic_zeros else ad.zeros_like_aval(t_aval)
  return tree_util.tree_map(zero, val)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
  """An argument of a ``custom_vjp`` forward rule defined with ``symbolic_zeros=True``:
  the primal ``value`` and whether it is ``perturbed`` (being differentiated)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree):
  """``tree`` with each ``CustomVJPPrimal`` leaf (as a ``symbolic_zeros`` forward rule
  receives its arguments) replaced by its value."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)


def _to_symbolic(t):
  return SymbolicZero(t.aval) if type(t) is ad.Zero else t


def _from_symbolic(t):
  return ad.Zero(t.aval) if type(t) is SymbolicZero else t


def _perturbed(t):
  return type(t) is not ad.Zero and get_aval(t).dtype != dtypes.float0


def _signature(f):
  """The signature arguments are bound against, kept on the decorated object ``f``: a
  ``functools.partial``'s is opaque (its keywords stay inside it), as in JAX."""
  sig = f._signature
  if sig is None:
    if isinstance(f.fun, functools.partial):
      sig = inspect.Signature([
          inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
          inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
    else:
      try:
        sig = inspect.signature(f.fun)
      except (TypeError, ValueError):  # a builtin without one: take anything
        sig = inspect.Signature([
            inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])
    f._signature = sig
  return sig


def _resolve_args(f, args, kwargs, kind):
  """Keyword arguments as positional ones (custom rules see positional arguments).

  As in JAX, a keyword that can only be passed by keyword is an error, and so is any
  binding failure, named after the decorated function."""
  try:
    bound = _signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    passed = [k for k in bound.kwargs if k in kwargs]
    if passed:
      raise TypeError("The following keyword arguments could not be resolved to positions: "
                      + ", ".join(passed))
  except TypeError as e:
    name = getattr(f.fun, "__name__", type(f.fun).__name__)
    raise TypeError(f"The input arguments to the {kind}-decorated function {name} could not "
                    "be resolved to positional-only arguments. Binding failed with the "
                    f"error:\n{e}") from e
  return bound.args


def _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames):
  """The sorted positions of the non-differentiable arguments, from numbers and names (a
  name counts for an argument that can be passed by position)."""
  nums = {int(i) for i in nondiff_argnums}
  if isinstance(nondiff_argnames, str):
    nondiff_argnames = (nondiff_argnames,)
  if nondiff_argnames:
    params = inspect.signature(fun).parameters
    nums.update(i for i, (k, p) in enumerate(params.items())
                if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD and k in nondiff_argnames)
  return tuple(sorted(nums))


def _split_nondiff(args, nondiff_argnums):
  nondiff = {i: args[i] for i in nondiff_argnums}
  diff = [a for i, a in enumerate(args) if i not in nondiff]
  return nondiff, diff


def _merge(nondiff, diff, n):
  it = iter(diff)
  return [nondiff[i] if i in nondiff else next(it) for i in range(n)]


# Held by each function, weakly (the arrays it closes over die with it).
_trace_cache = PerFunctionCache()


def _trace_call(fun, nondiff, n_args, in_tree, in_avals, name):
  """Trace ``fun`` on the differentiable leaves: (jaxpr without consts, consts, out_tree).

  Cached per function, argument types and (hashable) nondiff values, unless the function
  closed over traced values."""
  try:
    key = (in_tree, tuple(in_avals), tuple(sorted(nondiff.items())),
           tuple(trace_ctx.axis_env), current_xla_metadata())
    hash(key)  # an unhashable nondiff value (a list) is not cached; get() may not hash it
    hit = _trace_cache.get(fun, key)
  except TypeError:
    key = hit = None
  if hit is not None:
    return hit
  result = _trace_call_uncached(fun, nondiff, n_args, in_tree, in_avals, name)
  if key is not None and not any(isinstance(c, Tracer) for c in result[1]):
    _trace_cache.put(fun, key, result)
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
    # ``num_consts`` (the closed-over constants passed first) only where there are some.
    consts = {"num_consts": params["num_consts"]} if params.get("num_consts") else {}
    if "jvp" in params:
      shown["jvp"] = _user_rule_name(params["jvp"], "jvp")
      shown.update(consts)
      shown["symbolic_zeros"] = _user_symbolic_zeros(params["jvp"])
    if "vjp" in params:
      shown = {"name": params["name"], "bwd": _user_rule_name(params["vjp"], "bwd"),
               "call_jaxpr": params["call_jaxpr"], "fwd": _user_rule_name(params["vjp"], "fwd"),
               **consts, "symbolic_zeros": _user_symbolic_zeros(params["vjp"])}
    return shown


def _call_impl(*args, call_jaxpr, **params):
  return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _call_abstract_eval(*avals, call_jaxpr, **params):
  return list(call_jaxpr.out_avals)


def _call_lowering(ctx, *args, call_jaxpr, name, **params):
  # JAX inlines the body at the equation: its ops are named under the equation's names.
  return xla.lower_call(ctx, call_jaxpr, args, name=name, scope=ctx.module_context.scope)


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
  rule = rule_cls(f, nondiff, len(args), in_tree, out_tree, len(consts), name,
                  out_avals=jaxpr.out_avals)
  outs = prim.bind(*consts, *leaves, call_jaxpr=jaxpr, num_consts=len(consts), name=name,
                   **{rule_param: rule})
  return tree_util.tree_unflatten(out_tree, outs)


def _dispatch(f, args, name, prim, rule_param, rule_cls, differentiate):
  """Run a custom-derivative call on the current trace, as JAX's traces process one.

  Eagerly, the function runs; a partial evaluation with only known inputs hands the call to
  its parent; a JVP trace with nonzero tangents calls ``differentiate`` (the user's rule) on
  its parent, and with only zero tangents hands the call to its parent. Any other trace gets
  the traced body bound as ``prim``."""
  nondiff, diff = _split_nondiff(args, f.nondiff_argnums)
  leaves, in_tree = tree_util.tree_flatten(diff)
  trace = trace_ctx.trace
  if ((trace is eval_trace or config.eager_constant_folding)
      and not any(isinstance(x, Tracer) for x in leaves)):
    # Eagerly (or inside ``ensure_compile_time_eval`` on concrete arguments) the function
    # simply runs.
    return f.fun(*args)
  if type(trace) is PartialEvalTrace and not any(trace.is_unknown(x) for x in leaves):
    with set_current_trace(trace.parent):
      return _dispatch(f, args, name, prim, rule_param, rule_cls, differentiate)
  if type(trace) is ad.JVPTrace:
    primals, tangents = zip(*[trace.to_primal_tangent(x) for x in leaves]) if leaves else ((), ())
    with set_current_trace(trace.parent):
      if all(type(t) is ad.Zero for t in tangents):
        primal_args = _merge(nondiff, tree_util.tree_unflatten(in_tree, primals), len(args))
        return _dispatch(f, primal_args, name, prim, rule_param, rule_cls, differentiate)
      rule = rule_cls(f, nondiff, len(args), in_tree, None, 0, name)
      p_out, t_out = differentiate(list(primals), list(tangents), rule=rule, name=name)
    outs = [trace.maybe_tracer(p, t) for p, t in zip(p_out, t_out)]
    return tree_util.tree_unflatten(rule.out_tree, outs)
  return _bind_custom(f, prim, rule_param, rule_cls, args, name)


custom_jvp_call_p = _CallPrimitive("custom_jvp_call")
_register_call(custom_jvp_call_p)


class custom_jvp:
  """Give ``fun`` a custom JVP rule: ``f.defjvp(lambda primals, tangents: (out, t_out))``."""

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
               nondiff_argnames: Sequence[str] = ()):
    # The name and docstring only: other attributes of ``fun`` are reached through
    # ``__getattr__`` (so a copy of this object copies no caches of a jitted ``fun``).
    functools.update_wrapper(self, fun, updated=())
    self.fun = fun
    self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
    self._signature = None
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
    """Set the custom JVP rule; usable as a decorator.

    ``jvp(primals, tangents)`` gets tuples of the primal and tangent arguments (the
    ``nondiff_argnums`` arguments come first, as leading positional arguments of ``jvp``,
    without tangents) and returns ``(primal_out, tangent_out)`` of matching structures.

    Args:
      jvp: the rule.
      symbolic_zeros: if True, ``jvp`` receives ``SymbolicZero`` objects for tangents that are
        known to be zero, instead of zero arrays.

    Returns:
      ``jvp`` itself.

    Examples:
      >>> @hlox.custom_jvp
      ... def f(x, y):
      ...   return x * y
      >>> @f.defjvp
      ... def f_jvp(primals, tangents):
      ...   (x, y), (tx, ty) = primals, tangents
      ...   return x * y, tx * y + x * ty
      >>> hlox.grad(f)(2., 3.)
      Array(3., dtype=float32, weak_type=True)
    """
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *tangent_fns):
    """Set the custom JVP rule as one tangent function per argument.

    The output tangent is the sum over arguments of ``tangent_fn(t_i, primal_out, *primals)``;
    None stands for an argument that contributes no tangent. Not usable with
    ``nondiff_argnums`` (TypeError; use ``defjvp``).

    Args:
      *tangent_fns: one callable (or None) per positional argument.

    Returns:
      None.

    Examples:
      >>> @hlox.custom_jvp
      ... def f(x):
      ...   return jnp.sin(x)
      >>> f.defjvps(lambda t, ans, x: 2 * t)
      >>> hlox.grad(f)(0.)
      Array(2., dtype=float32, weak_type=True)
    """
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

  @api_boundary
  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", "custom_jvp")
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
    args = _resolve_args(self, args, kwargs, "custom_jvp")
    return _dispatch(self, args, name, custom_jvp_call_p, "jvp", _JVPRule,
                     _custom_jvp_rule_jvp)


class _Rule:
  """A user's rule on flat values, with what is needed to rebuild the user's pytrees.

  Hashable by identity, so it can be a primitive parameter.
  """

  def __init__(self, f, nondiff, n_args, in_tree, out_tree, num_consts, name, out_avals=None):
    self.f, self.nondiff, self.n_args = f, nondiff, n_args
    self.in_tree, self.out_tree, self.num_consts, self.name = in_tree, out_tree, num_consts, name
    # The traced function's output types, when it was traced (the rule's are checked
    # against them, as JAX does once the primal function has run).
    self.out_avals = None if out_avals is None else list(out_avals)

  def _check_primal_out(self, kind, rule_name, p_leaves, p_tree):
    """The rule's primal output against the function's: JAX's errors when the structures or
    the shapes/dtypes differ. ``kind`` is 'jvp' or 'fwd'."""
    if self.out_tree is None:  # the body was not traced: the rule's output gives the tree
      self.out_tree = p_tree
      return
    p_avals = [get_aval(p) for p in p_leaves]
    if self.out_avals is None:
      self.out_avals = p_avals
    shown = lambda tree, avals: str(tree_util.tree_unflatten(
        tree, [a.str_short(short_dtypes=False) for a in avals])).replace("'", "")
    if kind == "jvp":
      head = (f"Custom JVP rule {rule_name} for function {self.name} must produce a pair (list "
              "or tuple of length two) where the first element represents the primal output "
              "(equal in value to the output of the custom_jvp-decorated function "
              f"{self.name}, ")
      what, tail = "JVP rule", f"while the custom_jvp-decorated function {self.name} had output "
      tree_part, type_part = ("and in particular of the same container/pytree structure), ",
                              "and in particular with leaves of the same shape/dtype), ")
    else:
      head = (f"Custom VJP fwd rule {rule_name} for function {self.name} must produce a pair "
              "(list or tuple of length two) where the first element represents the primal "
              "output (equal to the output of the custom_vjp-decorated function "
              f"{self.name}) and the second element represents residuals (i.e. values stored "
              "from the forward pass for use on the backward pass), ")
      what, tail = "fwd rule", f"while the custom_vjp-decorated function {self.name} had output "
      tree_part = type_part = ""
    if p_tree != self.out_tree:
      raise TypeError(
          f"{head}{tree_part}but instead the {what} output's first element had "
          f"container/pytree structure:\n    {shown(p_tree, p_avals)}\n{tail}"
          f"container/pytree structure:\n    {shown(self.out_tree, self.out_avals)}.")
    mismatch = next((i for i, (a, b) in enumerate(zip(p_avals, self.out_avals))
                     if a.shape != b.shape or a.dtype != b.dtype), None)
    if mismatch is not None and kind == "fwd" and config.custom_vjp3:
      # JAX's custom_vjp3 names the first leaf whose type differs.
      path = tree_util.tree_flatten_with_path(
          tree_util.tree_unflatten(self.out_tree, [0] * len(p_avals)))[0][mismatch][0]
      raise TypeError(
          f"at {tree_util.keystr(path)}, got fwd output type "
          f"{p_avals[mismatch].str_short(short_dtypes=False)} which doesn't match primal "
          f"output type {self.out_avals[mismatch].str_short(short_dtypes=False)}")
    if mismatch is not None:
      raise TypeError(
          f"{head}{type_part}but instead the {what} output's first element had shapes/dtypes "
          f"of:\n    {shown(p_tree, p_avals)}\n{tail}"
          f"shapes/dtypes of:\n    {shown(self.out_tree, self.out_avals)}")

  def _nondiff_values(self):
    return [self.nondiff[i] for i in sorted(self.nondiff)]


class _JVPRule(_Rule):
  """The user's JVP."""

  def __call__(self, primals, tangents):
    primals, tangents = primals[self.num_consts:], tangents[self.num_consts:]
    if self.f.symbolic_zeros:
      tangents = [_to_symbolic(t) for t in tangents]
    else:
      tangents = [ad.instantiate_zeros(t) for t in tangents]
    p_args = tree_util.tree_unflatten(self.in_tree, primals)
    t_args = tree_util.tree_unflatten(self.in_tree, tangents)
    out = self.f.jvp(*self._nondiff_values(), tuple(p_args), tuple(t_args))
    jvp_name = getattr(self.f.jvp, "__name__", type(self.f.jvp).__name__)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom JVP rule {jvp_name} for function {self.name} must produce a "
                      "pair (list or tuple of length two) representing primal and tangent "
                      f"outputs, but got {out}.")
    p_out, t_out = out
    p_leaves, p_tree = tree_util.tree_flatten(p_out)
    t_leaves, t_tree = tree_util.tree_flatten(t_out)
    t_leaves = [_from_symbolic(t) for t in t_leaves]
    if p_tree != t_tree:
      raise TypeError(f"Custom JVP rule {jvp_name} for function {self.name} must produce "
                      "primal and tangent outputs with equal container (pytree) structures, "
                      f"but got {p_tree} and {t_tree} respectively.")
    self._check_primal_out("jvp", jvp_name, p_leaves, p_tree)
    for p, t in zip(p_leaves, t_leaves):
      pa = get_aval(p).update(weak_type=False)
      ta = (t.aval if type(t) is ad.Zero else get_aval(t)).update(weak_type=False)
      expected = pa.to_tangent_aval()
      if expected.shape != ta.shape or expected.dtype != ta.dtype:
        # JAX's error (a TypeError), for the rule of {self.name}.
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {expected.str_short(short_dtypes=False)} "
                        f"(tangent type of {pa.str_short(short_dtypes=False)}) but got {ta.str_short(short_dtypes=False)}.")
    return p_leaves, t_leaves


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
  if any(type(t) is not ad.Zero for t in tangents[:num_consts]):
    raise NotImplementedError(
        f"custom_jvp function {name} closes over a value being differentiated; pass it as an "
        "explicit argument instead")
  if trace_ctx.trace is not eval_trace:
    # Traced (the JVP of a jitted function), JAX traces the rule on the operands' types, so
    # it sees an array for each: a constant operand, read back from the jaxpr as a Python
    # or NumPy number, becomes an array of its type here (equinox's filter_custom_jvp rules tell
    # arrays from static values by their type: diffrax's event loop counters).
    avals = call_jaxpr.in_avals
    primals = [device_put(np.asarray(p, a.dtype), weak_type=a.weak_type)
               if type(p) in _PY_SCALARS or isinstance(p, (np.ndarray, np.generic)) else p
               for p, a in zip(primals, avals)]
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

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
               nondiff_argnames: Sequence[str] = ()):
    # The name and docstring only: other attributes of ``fun`` are reached through
    # ``__getattr__`` (so a copy of this object copies no caches of a jitted ``fun``).
    functools.update_wrapper(self, fun, updated=())
    self.fun = fun
    self.nondiff_argnums = _nondiff_argnums(fun, nondiff_argnums, nondiff_argnames)
    self._signature = None
    self.fwd = self.bwd = None
    self.symbolic_zeros = False
    self.optimize_remat = False

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
    """Set the forward and backward rules of the custom VJP.

    ``fwd(*args)`` returns ``(out, residuals)``; ``bwd(residuals, ct_out)`` returns a tuple of
    cotangents, one per differentiable argument (the ``nondiff_argnums`` arguments come first
    in ``bwd``'s arguments and get no cotangent). The cotangents' shapes are checked against
    the arguments' (ValueError). ``optimize_remat`` (JAX's experimental flag) changes only
    what ``remat`` recomputes in JAX; hlox runs ``fwd`` as usual, which gives the same values
    and gradients.

    Args:
      fwd: the forward rule.
      bwd: the backward rule.
      symbolic_zeros: if True, ``fwd`` receives each argument as a ``CustomVJPPrimal``
        (``.value`` and a ``.perturbed`` flag) and ``bwd`` may see symbolic zero cotangents.
      optimize_remat: see above; with ``symbolic_zeros`` it raises NotImplementedError.

    Returns:
      None.

    Examples:
      >>> @hlox.custom_vjp
      ... def clip_gradient(x):
      ...   return x
      >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (jnp.clip(g, -1., 1.),))
      >>> hlox.grad(lambda x: 5. * clip_gradient(x))(2.)
      Array(1., dtype=float32, weak_type=True)
    """
    if symbolic_zeros and optimize_remat:
      raise NotImplementedError(
          "remat optimization for custom_vjp does not support symbolic zeros")
    self.fwd, self.bwd = fwd, bwd
    self.symbolic_zeros = bool(symbolic_zeros)
    self.optimize_remat = bool(optimize_remat)

  @api_boundary
  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", "custom_vjp")
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
    args = _resolve_args(self, args, kwargs, "custom_vjp")
    for i in self.nondiff_argnums:
      if any(isinstance(x, Tracer) for x in tree_util.tree_leaves(args[i])):
        raise UnexpectedTracerError(
            f"custom_vjp function {name} got a traced value (a JAX Tracer) at argument {i}, "
            "which nondiff_argnums marks as non-differentiable. Tracers cannot be passed as "
            "non-differentiable arguments of custom_vjp functions: use nondiff_argnums only "
            "for arguments that cannot be or contain traced values (functions, static "
            "settings), and pass arrays as ordinary arguments, ignoring their cotangents.")
    if config.custom_vjp3 and trace_ctx.trace is not eval_trace:
      _refuse_closed_over_tracers(self, args, name)
    return _dispatch(self, args, name, custom_vjp_call_p, "vjp", _VJPRule,
                     _custom_vjp_rule_jvp)


def _refuse_closed_over_tracers(f, args, name):
  """JAX's ``custom_vjp3`` semantics: the function is traced up front, and a traced value
  it closes over (of any enclosing transformation) is an error rather than a residual the
  rules would have to handle; such values must be explicit arguments."""
  nondiff, diff = _split_nondiff(args, f.nondiff_argnums)
  leaves, in_tree = tree_util.tree_flatten(diff)
  in_avals = [get_aval(x) for x in leaves]
  _, consts, _ = _trace_call(f.fun, nondiff, len(args), in_tree, in_avals, name)
  leaked = next((c for c in consts if isinstance(c, Tracer)), None)
  if leaked is not None:
    raise UnexpectedTracerError(
        f"custom_vjp-decorated function {f.fun} closed over a {type(leaked).__name__} of "
        f"type {get_aval(leaked).str_short(short_dtypes=False)}, but custom_vjp functions can't close over "
        f"Tracers. Rewrite {f.fun} to take it as an explicit input.")


class _VJPRule(_Rule):
  """The user's fwd and bwd."""

  def fwd(self, primals, perturbed):
    """Run the user's fwd: flat outputs, flat residuals and the residuals' tree.
    ``perturbed`` says which primals have a (nonzero) tangent."""
    leaves = primals[self.num_consts:]
    if self.f.symbolic_zeros:
      leaves = [CustomVJPPrimal(p, bool(z))
                for p, z in zip(leaves, perturbed[self.num_consts:])]
    diff = tree_util.tree_unflatten(self.in_tree, leaves)
    out = self.f.fwd(*_merge(self.nondiff, diff, self.n_args))
    fwd_name = getattr(self.f.fwd, "__name__", type(self.f.fwd).__name__)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(
          f"Custom VJP fwd rule {fwd_name} for function {self.name} must produce a pair (list "
          "or tuple of length two) where the first element represents the primal output "
          f"(equal to those of the custom_vjp-decorated function {self.name}) and the second "
          "element represents residuals (i.e. values stored from the forward pass for use on "
          f"the backward pass), but instead of a pair the fwd rule {fwd_name} produced {out}.")
    primal_out, res = out
    p_leaves, p_tree = tree_util.tree_flatten(primal_out)
    self._check_primal_out("fwd", fwd_name, p_leaves, p_tree)
    res_leaves, res_tree = tree_util.tree_flatten(res)
    # Which residuals fwd gave as Python scalars: bwd gets those back as they were, and the
    # others as arrays even where the linear program carried them as literals.
    py_scalars = tuple(type(r) in _PY_SCALARS for r in res_leaves)
    return p_leaves, res_leaves, (res_tree, py_scalars)

  def bwd(self, res_tree, res_leaves, cts, in_avals):
    """Run the user's bwd on cotangents (``Zero`` where known to be zero): one cotangent per
    differentiable input leaf, ``Zero`` where the rule gave None or a symbolic zero.
    ``res_tree`` is what ``fwd`` returned: the residuals' tree and which were Python
    scalars."""
    res_tree, py_scalars = res_tree
    if trace_ctx.trace is eval_trace:
      # A scalar residual passed through the linear jaxpr comes back as a literal's Python
      # number; eagerly the rule sees the Array its fwd made, as in JAX, and a Python scalar
      # (a flag, equinox's ``perturbed``) where fwd returned one.
      res_leaves = [device_put(r) if type(r) in _PY_SCALARS and not was_py else r
                    for r, was_py in zip(res_leaves, py_scalars)]
    res = tree_util.tree_unflatten(res_tree, res_leaves)
    if self.f.symbolic_zeros:
      cts = [_to_symbolic(ct) for ct in cts]
    else:
      cts = [ad.instantiate_zeros(ct) for ct in cts]
    ct = tree_util.tree_unflatten(self.out_tree, cts)
    result = self.f.bwd(*self._nondiff_values(), res, ct)
    if isinstance(result, list) and len(result) == len(tree_util.treedef_children(self.in_tree)):
      result = tuple(result)
    is_none = lambda x: x is None  # None stands for a zero cotangent
    leaves = None
    if isinstance(result, tuple):
      leaves, got_tree = tree_util.tree_flatten(list(result), is_leaf=is_none)
      if got_tree != self.in_tree:
        leaves = self._expand_none_prefixes(list(result), leaves)
    bwd_name = getattr(self.f.bwd, "__name__", type(self.f.bwd).__name__)
    if leaves is None:
      raise TypeError(
          f"Custom VJP bwd rule {bwd_name} for function {self.name} must produce an output "
          "with the same container (pytree) "
          "structure as the args tuple of the primal function, and in particular must "
          "produce a tuple of length equal to the number of arguments to the primal "
          f"function, but got bwd output structure {tree_util.tree_structure(result)} for "
          f"primal input structure {self.in_tree}.")
    check = not config.disable_bwd_checks
    out = []
    for i, (ct_leaf, aval) in enumerate(zip(leaves, in_avals)):
      t_aval = aval.to_tangent_aval()
      if ct_leaf is None or t_aval.dtype == dtypes.float0:
        out.append(ad.Zero(t_aval))
        continue
      if type(ct_leaf) is SymbolicZero:
        if (ct_leaf.aval.shape, ct_leaf.aval.dtype) != (t_aval.shape, t_aval.dtype):
          raise ValueError(
              "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not "
              "match the corresponding input tangent shape/dtype: at output"
              f"{self._leaf_path(i)} the SymbolicZero had shape/dtype "
              f"{ct_leaf.aval.str_short(short_dtypes=False)} while the corresponding input had shape/dtype "
              f"{aval.str_short(short_dtypes=False)}. Consider just returning a None here instead of a "
              "SymbolicZero object.")
        out.append(ad.Zero(ct_leaf.aval))
        continue
      c_aval = get_aval(ct_leaf)
      if check and c_aval.shape != aval.shape:
        extra = ("the dtypes do not match, and the shapes do not match"
                 if c_aval.dtype != t_aval.dtype else "the shapes do not match")
        raise ValueError(
            "Custom VJP bwd rule must produce an output with the same type as the args tuple "
            f"of the primal function, but at output{self._leaf_path(i)} the bwd rule "
            f"attached to {self.name} ({bwd_name}) produced an output of type {c_aval.str_short(short_dtypes=False)} corresponding to an input of "
            f"type {aval.str_short(short_dtypes=False)}, so {extra}")
      out.append(ct_leaf)
    return out

  def _leaf_path(self, i):
    """The key path (as ``[0]['a']``) of differentiable input leaf ``i`` in the args tuple."""
    skeleton = tuple(tree_util.tree_unflatten(self.in_tree, [0] * self.in_tree.num_leaves))
    paths = [p for p, _ in tree_util.tree_flatten_with_path(skeleton)[0]]
    return tree_util.keystr(paths[i])

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
    raise ad.CustomVJPException(f"custom_vjp function {name}")
  return _custom_vjp_rule_jvp(primals, tangents, rule=vjp, name=name)


def _custom_vjp_rule_jvp(primals, tangents, *, rule, name):
  """fwd on the primals; the output tangent is a ``custom_lin`` of the input tangents."""
  vjp, num_consts = rule, rule.num_consts
  if trace_ctx.trace is not eval_trace:
    # Traced (the JVP of a jitted function), a constant operand is a jaxpr literal, read
    # back as a Python number; fwd sees it as an array, as the value of the program it was
    # (JAX's fwd gets tracers there: equinox's reads its operands' ``.shape``).
    primals = [device_put(p) if type(p) in _PY_SCALARS else p for p in primals]
  p_out, res, res_tree = vjp.fwd(primals, [_perturbed(t) for t in tangents])
  in_avals = [get_aval(p) for p in primals[num_consts:]]
  if any(is_ref_aval(a) for a in in_avals):
    # A differentiated reference argument: the linear map sees its tangent's contents (a
    # read of the tangent reference), and bwd's cotangent for it is one for those contents.
    in_avals = [a.inner_aval if is_ref_aval(a) else a for a in in_avals]
    tangents = [*tangents[:num_consts], *[
        state.get(t) if type(t) is not ad.Zero and is_ref_aval(get_aval(t)) else t
        for t in tangents[num_consts:]]]
  out_avals = [get_aval(p).to_tangent_aval() for p in p_out]
  nz = [type(t) is not ad.Zero for t in tangents[num_consts:]]
  t_in = [t for t in tangents[num_consts:] if type(t) is not ad.Zero]
  t_out = custom_lin_p.bind(*res, *t_in, num_res=len(res), vjp=vjp, res_tree=res_tree,
                            in_avals=tuple(in_avals), nonzeros=tuple(nz),
                            out_avals=tuple(out_avals), name=name)
  return p_out, t_out

ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


class _RefsFromValues:
  """The rule of a custom_vjp call on references once they are passed by value
  (discharged): the user's fwd gets fresh references holding the values, and the call's
  outputs gain the references' final values (cotangents for those are not the user's
  bwd's: it sees the function's own outputs' only)."""

  def __init__(self, rule, positions, n_out):
    self.rule, self.positions, self.n_out = rule, tuple(positions), n_out

  def fwd(self, primals, perturbed):
    refs = {i: state.new_ref(primals[i]) for i in self.positions}
    primals = [refs.get(i, p) for i, p in enumerate(primals)]
    p_out, res, res_tree = self.rule.fwd(primals, perturbed)
    return [*p_out, *[state.freeze(refs[i]) for i in self.positions]], res, res_tree

  def bwd(self, res_tree, res_leaves, cts, in_avals):
    return self.rule.bwd(res_tree, res_leaves, list(cts)[:self.n_out], in_avals)

  def __getattr__(self, name):
    return getattr(self.rule, name)


def _custom_vjp_call_discharge(refs, *args, call_jaxpr, vjp, **params):
  """With reference operands, the call takes their values and returns their final values
  after its outputs; its custom rule stays (run on fresh references holding the values)."""
  positions = [i for i, r in enumerate(refs) if r is not None]
  if not positions:
    return [None] * len(args), custom_vjp_call_p.bind(*args, call_jaxpr=call_jaxpr, vjp=vjp,
                                                      **params)
  pure = state_discharge.discharge_jaxpr(call_jaxpr)
  n_out = len(pure.jaxpr.outvars) - len(positions)
  outs = custom_vjp_call_p.bind(*args, call_jaxpr=pure,
                                vjp=_RefsFromValues(vjp, positions, n_out), **params)
  new_vals = [None] * len(args)
  for i, v in zip(positions, outs[n_out:]):
    new_vals[i] = v
  return new_vals, outs[:n_out]

state_discharge.register(custom_vjp_call_p, _custom_vjp_call_discharge)


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
# Lowered (a jitted jvp of a custom_vjp function), it is the same error, raised while lowering.
xla.register_lowering(custom_lin_p, lambda ctx, *args, name, **params: _custom_lin_impl(name=name))


def _custom_lin_batch(axis_data, vals, dims, *, name, **params):
  # Only forward mode binds custom_lin outside a linearization (e.g. jacfwd = vmap of jvp).
  _custom_lin_impl(name=name)

batching.fancy_primitive_batchers[custom_lin_p] = _custom_lin_batch


def _custom_lin_transpose(cts, *args, num_res, vjp, res_tree, in_avals, nonzeros, out_avals,
                          name):
  res = list(args[:num_res])
  cts_in = vjp.bwd(res_tree, res, list(cts), in_avals)
  cts_nz = [ct for ct, nz in zip(cts_in, nonzeros) if nz]
  return [None] * num_res + cts_nz

ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose
ad.transpose_even_if_zero.add(custom_lin_p)


# --- batching ----------------------------------------------------------------------------

def _batched_call(prim, axis_data, vals, dims, call_jaxpr):
  """The call jaxpr batched (batched outputs at dimension 0), its new constants and its
  output batch dimensions.

  Under a vmap without an axis name every output is batched, so that the rules may batch
  any of them. Under a named one, an output that the function leaves unbatched (a ``psum``
  over the axis, say) stays so, as in JAX; a rule then may not batch it (``_OutDims``)."""
  batched, out_dims = batching.batch_jaxpr(call_jaxpr, axis_data, dims,
                                           instantiate=axis_data.name is None)
  batched, consts = convert_constvars(batched)
  return batched, consts, list(out_dims)


class _OutDims:
  """The batch dimensions of a batched rule's outputs.

  The call's outputs are batched as the function's (``primal``). A rule run while the call
  is being bound (under a JVP of the vmap) reports its own (``ran``): an output that the
  function leaves unbatched but the rule batches (its tangent depends on the mapped axis,
  say) is batched then. A rule run later, from a jaxpr, must match the function's."""

  def __init__(self, primal):
    self.primal, self.ran, self.binding = list(primal), None, False

  def conform(self, groups, size, name, kind):
    """``groups``: per output, the (value, batch dimension) pairs that share its dimension
    (its primal and tangent). Returns them moved to the output's dimension, and those
    dimensions (0 or None)."""
    moved, final = [], []
    for p_dim, group in zip(self.primal, groups):
      batched = p_dim is not None or any(d is not None for _, d in group)
      if batched and p_dim is None and not self.binding:
        raise ValueError(
            f"the custom {kind} rule of {name} produced an output batched along the mapped "
            "axis where the function's output is not; under vmap the batching of an "
            "application is inferred from the function, so its rules' outputs may not "
            "depend on the mapped axis more than the function's do")
      final.append(0 if batched else None)
      moved.append([batching.matchaxis(v, d, 0, size) if batched else v for v, d in group])
    if self.binding:
      self.ran = final
    return moved, final

  def bind(self, prim, *args, **params):
    """Bind ``prim``; the output dimensions as the rule ran (if it did) or the function's."""
    self.binding, self.ran = True, None
    try:
      outs = prim.bind(*args, **params)
    finally:
      self.binding = False
    return outs, (self.ran if self.ran is not None else self.primal)


class _BatchedJVPRule:
  """A custom JVP rule run under vmap: the user's rule sees per-example values."""

  def __init__(self, rule, axis_data, in_dims, num_new_consts, out_dims):
    self.rule, self.axis_data, self.in_dims = rule, axis_data, list(in_dims)
    self.num_new_consts = num_new_consts
    self.out_dims = out_dims  # an _OutDims
    self.name = rule.name

  def __call__(self, primals, tangents):
    primals, tangents = primals[self.num_new_consts:], tangents[self.num_new_consts:]
    # Zero tangents stay symbolic (a rule with symbolic_zeros sees them as such): only the
    # others are batched arguments; a zero the rule returns stays one, batched.
    t_zero = [type(t) is ad.Zero for t in tangents]
    zero_avals = [_unbatched_aval(t.aval, d) if z else None
                  for t, z, d in zip(tangents, t_zero, self.in_dims)]
    nz_tangents = [t for t, z in zip(tangents, t_zero) if not z]
    nz_dims = [d for d, z in zip(self.in_dims, t_zero) if not z]
    n = len(primals)
    out_zero = []

    def flat(*xs):
      it = iter(xs[n:])
      ts = [ad.Zero(a) if z else next(it) for z, a in zip(t_zero, zero_avals)]
      p_out, t_out = self.rule(list(xs[:n]), ts)
      out_zero[:] = [type(t) is ad.Zero for t in t_out]
      return list(p_out) + [t for t in t_out if type(t) is not ad.Zero]

    outs, dims = batching.batch(flat, list(primals) + nz_tangents, self.in_dims + nz_dims,
                                self.axis_data, shares_axis=True)
    k = len(out_zero)
    nz_t = iter(zip(outs[k:], dims[k:]))
    groups = [[(p, pd)] if z else [(p, pd), next(nz_t)]
              for p, pd, z in zip(outs[:k], dims[:k], out_zero)]
    groups, _ = self.out_dims.conform(groups, self.axis_data.size, self.name, "JVP")
    p_out = [g[0] for g in groups]
    t_out = [ad.Zero(get_aval(g[0]).to_tangent_aval()) if z else g[1]
             for g, z in zip(groups, out_zero)]
    return p_out, t_out


def _custom_jvp_call_batch(axis_data, vals, dims, *, call_jaxpr, jvp, num_consts, name):
  batched, consts, out_dims = _batched_call(custom_jvp_call_p, axis_data, vals, dims,
                                            call_jaxpr)
  box = _OutDims(out_dims)
  rule = _BatchedJVPRule(jvp, axis_data, dims, len(consts), box)
  return box.bind(custom_jvp_call_p, *consts, *vals, call_jaxpr=batched, jvp=rule,
                  num_consts=num_consts + len(consts), name=name)

batching.fancy_primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


class _BatchedVJPRule:
  """A custom VJP (fwd, bwd) run under vmap."""

  def __init__(self, rule, axis_data, in_dims, num_new_consts, out_dims):
    self.rule, self.axis_data, self.in_dims = rule, axis_data, list(in_dims)
    self.num_new_consts = num_new_consts
    self.out_dims = out_dims  # an _OutDims
    self.name = rule.name

  @property
  def num_consts(self):
    # What the JVP of a batched call skips before the arguments: the batched jaxpr's new
    # constants, then the original call's.
    return self.num_new_consts + self.rule.num_consts

  def fwd(self, primals, perturbed):
    primals = primals[self.num_new_consts:]
    perturbed = perturbed[self.num_new_consts:]
    tree_box = []

    def flat(*xs):
      p_out, res, res_tree = self.rule.fwd(list(xs), perturbed)
      tree_box.append((len(p_out), res_tree))
      return list(p_out) + list(res)

    outs, dims = batching.batch(flat, list(primals), self.in_dims, self.axis_data,
                                shares_axis=True)
    size = self.axis_data.size
    n_out, res_tree = tree_box[0]
    groups, p_dims = self.out_dims.conform(
        [[(o, d)] for o, d in zip(outs[:n_out], dims[:n_out])], size, self.name, "VJP fwd")
    p_out = [g[0] for g in groups]
    res = [batching.matchaxis(o, d, 0, size) for o, d in zip(outs[n_out:], dims[n_out:])]
    # bwd needs the outputs' dimensions (their cotangents have them): they travel with the
    # residuals' tree.
    return p_out, res, (res_tree, tuple(p_dims))

  def bwd(self, res_tree, res, cts, in_avals):
    res_tree, ct_dims = res_tree
    size = self.axis_data.size
    num_consts = self.rule.num_consts
    dims = self.in_dims[num_consts:]
    unbatched_avals = [_unbatched_aval(a, d) for a, d in zip(in_avals, dims)]
    nr = len(res)
    # Zero cotangents stay symbolic: only the others are batched arguments (at their
    # outputs' dimensions).
    ct_zero = [type(ct) is ad.Zero for ct in cts]
    zero_avals = [_unbatched_aval(ct.aval, d) if z else None
                  for ct, z, d in zip(cts, ct_zero, ct_dims)]
    nz_cts = [ct for ct, z in zip(cts, ct_zero) if not z]
    nz_ct_dims = [d for d, z in zip(ct_dims, ct_zero) if not z]
    out_zero = []

    def flat(*xs):
      it = iter(xs[nr:])
      cts_ = [ad.Zero(a) if z else next(it) for z, a in zip(ct_zero, zero_avals)]
      cts_in = self.rule.bwd(res_tree, list(xs[:nr]), cts_, unbatched_avals)
      out_zero[:] = [type(c) is ad.Zero for c in cts_in]
      return [c for c in cts_in if type(c) is not ad.Zero]

    outs, out_dims = batching.batch(flat, list(res) + nz_cts, [0] * nr + nz_ct_dims,
                                    self.axis_data, shares_axis=True)
    it = iter(zip(outs, out_dims))
    result = []
    for z, a, d in zip(out_zero, in_avals, dims):
      if z:
        result.append(ad.Zero(a.to_tangent_aval()))
        continue
      o, od = next(it)
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
  batched, consts, out_dims = _batched_call(custom_vjp_call_p, axis_data, vals, dims,
                                            call_jaxpr)
  box = _OutDims(out_dims)
  rule = _BatchedVJPRule(vjp, axis_data, dims, len(consts), box)
  return box.bind(custom_vjp_call_p, *consts, *vals, call_jaxpr=batched, vjp=rule,
                  num_consts=num_consts + len(consts), name=name)

batching.fancy_primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


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

  def fwd(self, primals, perturbed):  # custom_vjp
    errs, n = self._errors(primals), self.skip + len(self.err_avals)
    p_out, res, res_tree = self.rule.fwd(primals[n:], perturbed[n:])
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
  """Define a function together with its reverse-mode (VJP) rule.

  ``fun(*args)`` returns ``(value, vjp)``, where ``vjp(cotangent of value)`` returns a tuple
  with one cotangent per argument (a bare value is accepted when ``fun`` takes one argument).
  ``vjp`` may close over values computed in ``fun``; it is traced once on the forward pass, so
  it cannot branch on them in Python. Built on ``custom_vjp``, so the rule is used by
  ``grad``/``vjp``; forward-mode differentiation of the result raises TypeError.

  Args:
    fun: function returning ``(value, vjp)``.

  Returns:
    A function returning just the value, whose gradient is given by ``vjp``.

  Examples:
    >>> @hlox.custom_gradient
    ... def f(x):
    ...   return x ** 2, lambda g: (g * x,)
    >>> hlox.grad(f)(3.)
    Array(3., dtype=float32, weak_type=True)
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
  """Hoist the traced values a function closes over into explicit arguments.

  For passing ``fun`` across a custom-derivative boundary (``custom_vjp`` rules must not
  close over tracers). ``fun`` is traced on ``example_args``; the closed-over values that may
  carry derivatives (tracers of an enclosing transformation) become extra trailing arguments,
  while concrete constants stay inside.

  Args:
    fun: the function to convert.
    *example_args: arguments of the structure, shapes and dtypes ``fun`` will be called with.

  Returns:
    ``(converted, hoisted)``: ``converted(*args, *hoisted)`` computes ``fun(*args)``, and
    ``hoisted`` is the list of closed-over values.

  Examples:
    >>> def outer(y):
    ...   converted, hoisted = hlox.closure_convert(lambda x: x * y, 1.)
    ...   return converted(2., *hoisted)
    >>> outer(3.)
    Array(6., dtype=float32, weak_type=True)
    >>> hlox.grad(outer)(3.)
    Array(2., dtype=float32, weak_type=True)
  """
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
      raise TypeError("The inputs to the closure produced by closure_convert must have the "
                      "same Pytree structure as the example arguments passed when "
                      f"closure_convert was called. Expected {in_tree}, but got {tree}")
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
