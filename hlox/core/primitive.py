"""Primitives: the named operations that every interpreter knows how to handle."""
from __future__ import annotations

from hlox.core.tracer import eval_trace, trace_ctx


class Primitive:
  """An operation with rules. ``bind(*arrays, **params)`` applies it on the current trace.

  Positional arguments are arrays (maybe tracers); keyword parameters are static and hashable.
  A primitive's rules (abstract evaluation, implementation, JVP, transpose, batching,
  lowering) are registered in tables owned by the interpreters, next to its definition.
  """

  multiple_results = False

  def __init__(self, name: str):
    self.name = name
    self.impl = self._missing_impl
    self.abstract_eval = self._missing_abstract_eval

  def bind(self, *args, **params):
    trace = trace_ctx.trace
    if trace is eval_trace:  # eager: straight to the implementation
      return self.impl(*args, **params)
    return trace.process_primitive(self, args, params)

  def def_impl(self, impl):
    self.impl = impl
    return impl

  def def_abstract_eval(self, rule):
    """``rule(*avals, **params)`` returns the output aval (a list when multiple_results)."""
    self.abstract_eval = rule
    return rule

  def def_effectful_abstract_eval(self, rule):
    """JAX's form for primitives with effects: ``rule(*avals, **params)`` returns
    ``(output aval(s), effects)``. hlox keeps no effect sets in its jaxprs, so the effects
    are dropped; a primitive that must not be removed as dead code is listed in
    ``core.jaxpr.effectful_primitives``."""
    def abstract_eval(*avals, **params):
      return rule(*avals, **params)[0]
    self.abstract_eval = abstract_eval
    return rule

  def _missing_impl(self, *args, **params):
    raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented (the "
                              "primitive has no eager implementation: def_impl)")

  def _missing_abstract_eval(self, *avals, **params):
    raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented (the "
                              "primitive has no shape rule: def_abstract_eval)")

  def __repr__(self):
    return self.name

  def params_for_printing(self, params):
    """The params a printed jaxpr shows, in order: sorted by name, as JAX prints them.
    Primitives may override this (call primitives show name then jaxpr, and hide
    defaults)."""
    return dict(sorted(params.items()))

  def get_bind_params(self, params):
    """Params as they should be passed back to ``bind`` (call primitives may adjust them)."""
    return params
