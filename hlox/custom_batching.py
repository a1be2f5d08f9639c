"""``hlox.custom_batching``: functions with a user-written ``vmap`` rule (JAX's
``jax.custom_batching``).

``custom_vmap(f)`` binds ``custom_vmap_call``, a call primitive holding ``f`` traced to a
jaxpr and the user's rule. Evaluated, jitted, lowered or printed it is ``f``; under ``vmap``
the rule runs instead, on the batched arguments (batch axis first), and says which outputs
it batched. Forward-mode differentiation is the rule's own JVP, still behind one
``custom_vmap_call`` (so ``vmap`` of ``jvp`` runs the JVP of the rule); reverse mode is not
supported (the primal outputs of that JVP depend on the tangents), and ``grad`` raises JAX's
``ValueError``. ``sequential_vmap(f)`` is the rule that runs ``f`` in a ``lax.map`` loop.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from hlox import lax

from hlox import _tree_transform as tree_util
from hlox.core.jaxpr import convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.traceback_util import api_boundary
from hlox.core.tracer import Tracer, eval_trace, get_aval, trace_ctx
from hlox.interpreters import ad, batching, nan_checks, xla

__all__ = ["custom_vmap", "sequential_vmap"]


def _resolve_kwargs(fun, args, kwargs):
  """Keyword arguments as positional ones; a keyword-only argument the caller passed cannot
  be (the rule sees positional arguments only)."""
  if isinstance(fun, functools.partial):  # its signature is treated as opaque, as in JAX
    fun = lambda *a, **k: None
  bound = inspect.signature(fun).bind(*args, **kwargs)
  bound.apply_defaults()
  passed = [k for k in bound.kwargs if k in kwargs]
  if passed:
    raise TypeError("The following keyword arguments could not be resolved to positions: "
                    + ", ".join(passed))
  return bound.args


def _fun_name(fun) -> str:
  return getattr(fun, "__name__", type(fun).__name__)


class custom_vmap:
  """Give ``fun`` its own batching rule.

  ``@f.def_vmap`` registers ``rule(axis_size, in_batched, *args) -> (out, out_batched)``:
  ``in_batched`` is a list with one pytree of booleans per positional argument (which
  leaves carry the batch axis, always at position 0), ``out_batched`` a pytree of booleans
  shaped as ``out``. Outside ``vmap`` the function itself runs::

      @custom_vmap
      def f(x):
        return jnp.sin(x)

      @f.def_vmap
      def f_rule(axis_size, in_batched, xs):
        return jnp.cos(xs), in_batched[0]

      vmap(f)(xs)   # cos(xs)

  Compose with ``custom_vjp`` on the outside for reverse-mode differentiation.
  """

  def __init__(self, fun: Callable[..., Any]):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  def __getattr__(self, name):
    # Attributes of a wrapped custom function (``custom_vmap(custom_jvp(f)).defjvp``) reach it.
    if name == "fun":
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
    """Set the batching rule (see the class docstring); returns ``vmap_rule`` unchanged, so
    this works as a decorator."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  @api_boundary
  def __call__(self, *args, **kwargs):
    name = _fun_name(self.fun)
    try:
      args = _resolve_kwargs(self.fun, args, kwargs)
    except TypeError as e:
      raise TypeError(f"The input arguments to the custom_vmap-decorated function {name} "
                      f"could not be resolved to positional-only arguments. Binding failed "
                      f"with the error:\n{e}") from e
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                           "using def_vmap.")
    leaves, args_tree = tree_util.tree_flatten(args)
    if trace_ctx.trace is eval_trace and not any(isinstance(x, Tracer) for x in leaves):
      return self.fun(*args)  # nothing to batch: the function itself, eagerly
    out_trees = []

    def flat(*xs):
      out = self.fun(*tree_util.tree_unflatten(args_tree, xs))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_trees.append(out_tree)
      return out_leaves

    closed = trace_to_jaxpr(flat, [get_aval(x) for x in leaves], name, "custom_vmap")
    call, consts = convert_constvars(closed)
    # The rule's inputs are (closed-over constants, the arguments), as JAX's ``in_tree``.
    const_tree = tree_util.tree_structure(list(consts))
    in_tree = tree_util.treedef_tuple((const_tree, args_tree))
    outs = custom_vmap_p.bind(*consts, *leaves, call=call, rule=_ClosedRule(self.vmap_rule),
                              in_tree=in_tree, out_tree=out_trees[0])
    return tree_util.tree_unflatten(out_trees[0], outs)


# --- the rule protocol -------------------------------------------------------------------
#
# A ``rule`` parameter is called ``rule(axis_size, in_batched, *top)`` where ``top`` are the
# children of the ``in_tree`` tuple (leaves unflattened) and ``in_batched`` the same shape
# of booleans; it returns ``(out, out_batched)`` shaped as ``out_tree``.

class _ClosedRule:
  """The user's rule behind the (constants, arguments) convention: constants are never
  batched, the user's rule sees the arguments only."""

  def __init__(self, rule: Callable):
    functools.update_wrapper(self, rule)
    self.rule = rule

  def __call__(self, axis_size, in_batched, consts, args):
    consts_batched, args_batched = in_batched
    if any(tree_util.tree_leaves(consts_batched)):
      raise NotImplementedError(
          f"custom_vmap function with rule {_rule_name(self.rule)} closes over a value that "
          "is batched by vmap; pass it to the function as an explicit argument instead")
    return self.rule(axis_size, list(args_batched), *args)

  def __str__(self):
    return str(self.rule)


def _rule_name(rule) -> str:
  return getattr(rule, "__name__", "<unnamed rule>")


def _call_rule(rule, axis_size, in_batched, args):
  return rule(axis_size, list(in_batched), *args)


def _check_rule_trees(rule, expected_tree, out_tree, batched_tree):
  """JAX's checks (and texts) of a rule's result against its batching flags and against
  the function's own output structure."""
  if out_tree != batched_tree:
    raise ValueError(
        "structure of output value and output batching specification returned by custom "
        f"vmap rule ({_rule_name(rule)}) do not match.\nOutput values: {out_tree}\n"
        f"Batching spec: {batched_tree}")
  if out_tree != expected_tree:
    raise ValueError(
        f"structure of output returned by custom vmap rule ({_rule_name(rule)}) does not "
        f"match that of original custom-vmapped function.\nOriginal output: "
        f"{expected_tree}\nRule output: {out_tree}")


def _run_rule(rule, axis_size, in_tree, out_tree, vals, flags):
  """Call ``rule`` on flat values and flags; returns flat outputs and flat out flags."""
  args = tree_util.tree_unflatten(in_tree, vals)
  in_batched = tree_util.tree_unflatten(in_tree, flags)
  out, out_batched = _call_rule(rule, axis_size, in_batched, args)
  out_leaves, tree1 = tree_util.tree_flatten(out)
  flag_leaves, tree2 = tree_util.tree_flatten(out_batched)
  _check_rule_trees(rule, out_tree, tree1, tree2)
  return out_leaves, [bool(b) for b in flag_leaves]


# --- the primitive -----------------------------------------------------------------------

class _CustomVmapPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    # As JAX prints them (sorted by name; the rule as its function's repr).
    return {"call": params["call"], "in_tree": params["in_tree"],
            "out_tree": params["out_tree"], "rule": _Shown(params["rule"])}


class _Shown:
  """A printed parameter: its ``str``, even for a callable (which the printer shows by
  ``__name__``)."""

  def __init__(self, value):
    self.text = str(value)

  def __str__(self):
    return self.text


custom_vmap_p = _CustomVmapPrimitive("custom_vmap_call")


def _custom_vmap_impl(*args, call, **params):
  return eval_jaxpr(call.jaxpr, call.consts, *args)


def _custom_vmap_abstract_eval(*avals, call, **params):
  return list(call.out_avals)


def _custom_vmap_lowering(ctx, *args, call, **params):
  # Inlined, as JAX lowers it (the call is the function itself once batching is done).
  consts = [xla.ir_constant(np.asarray(c)) for c in call.consts]
  return xla.lower_jaxpr(ctx.module_context, call.jaxpr, consts, list(args))


def _custom_vmap_deoptimized(*args, call, **params):
  return nan_checks.eval_deoptimized(call.jaxpr, call.consts, args)


custom_vmap_p.def_impl(_custom_vmap_impl)
custom_vmap_p.def_abstract_eval(_custom_vmap_abstract_eval)
xla.register_lowering(custom_vmap_p, _custom_vmap_lowering)
nan_checks.deoptimized_rules[custom_vmap_p] = _custom_vmap_deoptimized


def _custom_vmap_batch(axis_data, vals, dims, *, call, rule, in_tree, out_tree):
  size = axis_data.size
  vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
  outs, out_batched = _run_rule(rule, size, in_tree, out_tree, vals,
                                [d is not None for d in dims])
  return outs, [0 if b else None for b in out_batched]

batching.fancy_primitive_batchers[custom_vmap_p] = _custom_vmap_batch


class _JVPOfRule:
  """The batching rule of a ``custom_vmap_call``'s JVP: the JVP of the original rule.

  A primal batched where its tangent is not (or the reverse) is batched by an ordinary
  ``vmap`` around the JVP of the rule, which then sees only the inputs batched on both
  sides as batched."""

  def __init__(self, rule, in_tree, out_tree):
    self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree
    self.__name__ = _rule_name(rule)

  def __call__(self, axis_size, in_batched, primals, tangents):
    ps_batched = tree_util.tree_leaves(in_batched[0])
    ts_batched = tree_util.tree_leaves(in_batched[1])
    both = [p and t for p, t in zip(ps_batched, ts_batched)]
    p_leaves = tree_util.tree_leaves(primals)
    t_leaves = tree_util.tree_leaves(tangents)
    n = len(p_leaves)
    out_both = []

    def jvp_of_rule(*xs):
      def primal_rule(*ps):
        outs, flags = _run_rule(self.rule, axis_size, self.in_tree, self.out_tree, ps, both)
        out_both.append(flags)
        return outs
      p_out, t_out = ad.jvp(primal_rule, list(xs[:n]), list(xs[n:]))
      return list(p_out) + [ad.instantiate_zeros(t) for t in t_out]

    extra = ([0 if p and not t else None for p, t in zip(ps_batched, ts_batched)]
             + [0 if t and not p else None for p, t in zip(ps_batched, ts_batched)])
    outs, dims = batching.batch(jvp_of_rule, p_leaves + t_leaves, extra,
                                batching.AxisData(axis_size))
    outs = [o if d is None else batching.moveaxis(o, d, 0) for o, d in zip(outs, dims)]
    flags = [b or d is not None for b, d in zip(out_both[0] * 2, dims)]
    pair = tree_util.treedef_tuple((self.out_tree, self.out_tree))
    return tree_util.tree_unflatten(pair, outs), tree_util.tree_unflatten(pair, flags)


def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree):
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  jvp_call, _ = ad.jvp_jaxpr(call, [True] * len(primals), True)
  outs = custom_vmap_p.bind(*primals, *tangents, call=jvp_call,
                            rule=_JVPOfRule(rule, in_tree, out_tree),
                            in_tree=tree_util.treedef_tuple((in_tree, in_tree)),
                            out_tree=tree_util.treedef_tuple((out_tree, out_tree)))
  k = len(outs) // 2
  return outs[:k], outs[k:]

ad.primitive_jvps[custom_vmap_p] = _custom_vmap_jvp


# --- sequential_vmap ---------------------------------------------------------------------

def sequential_vmap(f: Callable) -> custom_vmap:
  """``custom_vmap(f)`` whose batching rule runs ``f`` once per example, in a ``lax.map``
  loop over the batched arguments (unbatched ones are passed to every iteration): for
  functions that cannot be vectorized (a host callback, a solver written for one input)."""
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    del axis_size
    mapped = tree_util.tree_map(lambda b, x: x if b else None, list(in_batched), list(args))
    fixed = tree_util.tree_map(lambda b, x: None if b else x, list(in_batched), list(args))

    def one(mapped_args):
      merged = tree_util.tree_map(lambda b, m, c: m if b else c, list(in_batched),
                                  mapped_args, fixed)
      return f(*merged)

    out = lax.map(one, mapped)
    return out, tree_util.tree_map(lambda _: True, out)

  return f
