"""Taylor-mode differentiation (``jet``): the jet trace and its per-primitive rules.

A ``JetTracer`` stands for a truncated Taylor polynomial: its ``primal`` is the value and
its ``terms`` the coefficients of order 1..K of a curve through it. Rules in ``jet_rules``
(``rule(primals, series, **params) -> (primal_out, terms_out)``) propagate whole
polynomials through one primitive at a time, with the coefficients *not* scaled by
factorials (the public ``jet`` converts). A value without terms is ``zero_series``; a single
coefficient known to be zero may be ``zero_term``; both are materialized (as zeros of the
primal's dtype) only when a primitive with some nonzero input series needs them.

The rules sit beside the primitives in ``lax`` (``lax/taylor.py`` for the arithmetic and
shape primitives, the call primitives' rules next to each); this module knows none of them.
"""
from __future__ import annotations

from typing import Callable, Sequence

from hlox import _tree_transform as tree_util
from hlox.core.jaxpr import ClosedJaxpr, eval_jaxpr, trace_to_jaxpr
from hlox.core.tracer import Trace, Tracer, current_trace, get_aval, set_current_trace
from hlox.interpreters import ad

__all__ = ["JetTrace", "JetTracer", "ZeroSeries", "ZeroTerm", "call_rule", "deflinear",
           "defzero", "jet_flat", "jet_jaxpr", "jet_rules", "linear_prop", "zero_prop",
           "zero_series", "zero_term"]

# rule(primals, series, **params) -> (primal_out, terms_out); for a primitive with several
# results, (primals_out, [terms of each result]).
jet_rules: dict = {}


class ZeroTerm:
  """The type of ``zero_term``: one Taylor coefficient known to be zero."""

  __slots__ = ()

  def __repr__(self):
    return "zero_term"


class ZeroSeries:
  """The type of ``zero_series``: a whole series of coefficients known to be zero."""

  __slots__ = ()

  def __repr__(self):
    return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()
# As leaves they would be mistaken for values; as empty nodes they pass through tree maps.
tree_util.register_pytree_node(ZeroTerm, lambda z: ((), None), lambda _, __: zero_term)
tree_util.register_pytree_node(ZeroSeries, lambda z: ((), None), lambda _, __: zero_series)


class JetTracer(Tracer):
  __slots__ = ("primal", "terms")

  def __init__(self, trace, primal, terms):
    self._trace = trace
    self.primal = primal
    self.terms = terms

  @property
  def aval(self):
    return get_aval(self.primal)

  def to_concrete_value(self):
    p = self.primal
    if isinstance(p, Tracer):
      return p.to_concrete_value()
    return p


class JetTrace(Trace):
  name = "jet"

  def __init__(self, parent, order: int):
    super().__init__()
    self.parent = parent
    self.order = order

  def to_primal_terms(self, x):
    if type(x) is JetTracer and x._trace is self:
      return x.primal, x.terms
    if isinstance(x, Tracer):
      self.check_tracer(x)
    return x, zero_series

  def process_primitive(self, primitive, args, params):
    primals, series = zip(*[self.to_primal_terms(x) for x in args]) if args else ((), ())
    if all(s is zero_series for s in series):
      with set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    rule = jet_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Jet rule for '{primitive.name}' not implemented "
                                "(interpreter: jet)")
    with set_current_trace(self.parent):
      # Rules see every series in full: zeros are cheap next to the rules' convolutions.
      series = [instantiate_series(p, s, self.order) for p, s in zip(primals, series)]
      primal_out, terms_out = rule(list(primals), series, **params)
    if primitive.multiple_results:
      if terms_out is zero_series:
        terms_out = [zero_series] * len(primal_out)
      return [self.maybe_tracer(p, t) for p, t in zip(primal_out, terms_out)]
    return self.maybe_tracer(primal_out, terms_out)

  def maybe_tracer(self, primal, terms):
    if terms is zero_series:
      return primal
    return JetTracer(self, primal, list(terms))


def instantiate_series(primal, terms, order: int) -> list:
  """``terms`` as ``order`` arrays: zero coefficients become zeros of the primal's type."""
  if terms is zero_series:
    terms = [zero_term] * order
  if any(t is zero_term for t in terms):
    aval = get_aval(primal)
    zeros = ad.zeros_like_aval(aval.update(weak_type=False))
    terms = [zeros if t is zero_term else t for t in terms]
  return list(terms)


def jet_flat(fun: Callable, primals: Sequence, series: Sequence, order: int
             ) -> tuple[list, list]:
  """Push the Taylor polynomials (``primals[i]``, ``series[i]``: ``order`` coefficients, not
  factorial-scaled, or ``zero_series``) through ``fun(*primals) -> list`` on the current
  trace. Returns the output primals and their series (``zero_series`` where an output does
  not depend on the inputs' series)."""
  trace = JetTrace(current_trace(), order)
  in_tracers = [p if s is zero_series else JetTracer(trace, p, list(s))
                for p, s in zip(primals, series)]
  try:
    with set_current_trace(trace):
      outs = fun(*in_tracers)
    pairs = [trace.to_primal_terms(o) for o in outs]
  finally:
    trace.invalidate()
  return [p for p, _ in pairs], [s for _, s in pairs]


def jet_jaxpr(closed: ClosedJaxpr, order: int, series_avals: Sequence) -> ClosedJaxpr:
  """A jaxpr from (primals, then each input's ``order`` coefficients) to (primals out, then
  each output's ``order`` coefficients), all instantiated: the jet of ``closed`` as one
  call, for call primitives that keep their body one unit. ``series_avals[i]`` is the
  aval of input i's coefficients."""
  n_in = len(closed.in_avals)

  def fun(*args):
    primals, flat_terms = args[:n_in], args[n_in:]
    series = [list(flat_terms[i * order:(i + 1) * order]) for i in range(n_in)]
    outs, out_series = jet_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                                primals, series, order)
    flat_out = [t for p, s in zip(outs, out_series)
                for t in instantiate_series(p, s, order)]
    return [*outs, *flat_out]

  term_avals = [a for a in series_avals for _ in range(order)]
  return trace_to_jaxpr(fun, [*closed.in_avals, *term_avals], "jet", "jet")


def call_rule(closed: ClosedJaxpr, primals, series):
  """The jet of a call whose body may be inlined (``closed`` run on the current trace)."""
  order = len(series[0]) if series else 0
  outs, out_series = jet_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                              primals, series, order)
  return outs, [instantiate_series(p, s, order) for p, s in zip(outs, out_series)]


# --- registrar helpers that need no array operation --------------------------------------

def zero_prop(prim, primals, series, **params):
  """The rule of a primitive whose result is locally constant (comparisons, rounding)."""
  return prim.bind(*primals, **params), zero_series


def defzero(prim) -> None:
  jet_rules[prim] = lambda primals, series, **params: zero_prop(prim, primals, series,
                                                                **params)


def linear_prop(prim, primals, series, **params):
  """The rule of a primitive linear in all its operands: it applies to each coefficient."""
  primal_out = prim.bind(*primals, **params)
  terms_out = [prim.bind(*terms, **params) for terms in zip(*series)]
  if prim.multiple_results:
    # One list per result, holding its coefficients.
    terms_out = [list(ts) for ts in zip(*terms_out)] if terms_out else [
        [] for _ in primal_out]
  return primal_out, terms_out


def deflinear(prim) -> None:
  jet_rules[prim] = lambda primals, series, **params: linear_prop(prim, primals, series,
                                                                  **params)
