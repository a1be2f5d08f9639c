"""Automatic differentiation: the JVP trace, linearize, transposition, vjp.

Forward mode: a ``JVPTrace`` carries a tangent beside every primal and applies each
primitive's JVP rule from ``primitive_jvps``. Tangents known to be zero are the symbolic
``Zero`` and are never materialized unless a rule needs them.

Reverse mode is linearize + transpose, with no hand-written reverse rules: ``linearize`` runs
the JVP under partial evaluation (primals known, tangents unknown), which computes the primal
outputs now and records the tangent computation as a linear jaxpr whose constants are the
residuals. ``backward_pass`` transposes that jaxpr with ``primitive_transposes``.
"""
from __future__ import annotations

import contextlib

from typing import Callable, Sequence

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes, sharding_types
from hlox.core import vma as vma_lib
from hlox.core import source_info as source_info_lib
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, literal_value, trace_to_jaxpr
from hlox.core.tracer import (Trace, Tracer, current_trace, get_aval, set_current_trace)
from hlox.interpreters.partial_eval import PartialEvalTrace
from hlox.interpreters.rule_table import RuleTable
from hlox.interpreters import state_discharge
from hlox.runtime.array import device_put

primitive_jvps: dict = RuleTable()  # (rules from outside hlox get tuples, as JAX's)
primitive_transposes: dict = {}
# Primitives whose transpose runs user code (custom_vjp's bwd), so it runs whenever the
# equation is live in the linear jaxpr, even when every cotangent reaching it is zero, as
# in JAX (a bwd may return nonzero cotangents for zero ones: flax's fp8 layers pass their
# updated statistics back that way). Other equations with zero cotangents are skipped.
transpose_even_if_zero: set = set()


# --- symbolic zeros and undefined primals ------------------------------------------------

class Zero:
  """A tangent or cotangent known to be zero, of abstract value ``aval``."""

  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  @staticmethod
  def from_primal_value(x) -> "Zero":
    return Zero(get_aval(x).to_tangent_aval())

  def __repr__(self):
    return f"Zero({self.aval})"


class UndefinedPrimal:
  """Stands for the linear input of a primitive during transposition."""

  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


class CustomVJPException(Exception):
  """A ``custom_vjp`` function was differentiated with respect to a value it closes over
  (its VJP rule gives cotangents for its explicit arguments only)."""

  def __init__(self, name: str = "custom_vjp function"):
    super().__init__(
        f"{name} closes over a value being differentiated, and its custom VJP rule only says "
        "how to differentiate its explicit arguments: pass the value as an argument of the "
        "custom_vjp function and handle it in the fwd and bwd rules")


# Both are pytrees with no children (their aval is the static part), as in JAX: a function
# that returns one under ``vmap`` or ``jit`` gets it back as it is, not as a value to batch
# or stage (equinox's ``vprim`` vmaps JVP rules whose outputs hold symbolic zeros).
tree_util.register_pytree_node(Zero, lambda z: ((), z.aval), lambda aval, _: Zero(aval))
tree_util.register_pytree_node(UndefinedPrimal, lambda u: ((), u.aval),
                               lambda aval, _: UndefinedPrimal(aval))


def is_undefined_primal(x) -> bool:
  return type(x) is UndefinedPrimal


# These two are provided by ``hlox.lax`` at import (the interpreters know no primitive).
_zeros_like_aval: Callable | None = None
_add_tangents: Callable | None = None


def register_tangent_ops(zeros_like_aval: Callable, add: Callable) -> None:
  """Give AD its two array operations: making zeros of an aval and adding two tangents."""
  global _zeros_like_aval, _add_tangents
  _zeros_like_aval = zeros_like_aval
  _add_tangents = add


def _typed_aval(v):
  """``v``'s aval, recording its split over Explicit mesh axes when it has one (so that a
  transpose rule's zeros and cotangents can be split as the primal is)."""
  split = getattr(v, "sharding", None)
  if split is None or not sharding_types.active[0]:
    return v.aval
  return v.aval.update(sharding=sharding_types.named_of_split(split))


def zeros_like_aval(aval):
  z = _zeros_like_aval(aval)
  if sharding_types.active[0] and getattr(aval, "_sharding", None) is not None:
    split = sharding_types.split_of_named(aval._sharding, len(aval.shape))
    if split is not None and sharding_types.split_of(z) != split:
      z = sharding_types.constrain(z, split)
  # In a check_vma shard_map body the zeros vary along what the aval says (``core/vma``).
  return vma_lib.raise_to(z, aval._vma) if vma_lib.active[0] and getattr(aval, "_vma", ()) else z


def instantiate_zeros(t):
  """A real array for a tangent that may be a symbolic Zero."""
  return zeros_like_aval(t.aval) if type(t) is Zero else t


# Primitives whose JVP rule runs even when no input is perturbed: ``new_ref`` makes a
# tangent reference that later writes may fill with differentiated values.
always_differentiated: set = set()


def staged_tangent(t, primal_aval):
  """``t`` as a real array that, under a trace that stages (``linearize``'s partial
  evaluation, a jit), is a value of that trace: a tangent reference made from it must be
  staged with the linear program, not filled eagerly."""
  t = zeros_like_aval(primal_aval.to_tangent_aval()) if type(t) is Zero else t
  to_tracer = getattr(current_trace(), "to_tracer", None)
  return t if to_tracer is None else to_tracer(t)


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return _add_tangents(x, y)


# --- forward mode ------------------------------------------------------------------------

class JVPTracer(Tracer):
  __slots__ = ("primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self):
    return get_aval(self.primal)

  @property
  def type_sharding(self):
    """The primal's split over Explicit mesh axes (a tangent is split as its primal)."""
    return sharding_types.split_of(self.primal)

  def to_concrete_value(self):
    p = self.primal
    if isinstance(p, Tracer):
      return p.to_concrete_value()
    return p

  def _contents(self) -> list:
    return [("primal", self.primal), ("tangent", self.tangent)]

  def _short_repr(self) -> str:
    primal = _short(self.primal)
    tangent = self.tangent
    if isinstance(tangent, Tracer) and tangent._trace.name == "partial_eval":
      # under grad/vjp/linearize the tangent is being staged out: only its type is known
      return f"GradTracer(primal={primal}, typeof(tangent)={tangent.aval.str_short()})"
    return f"JVPTracer(primal={primal}, tangent={_short(tangent)})"


def _short(x) -> str:
  return x._short_repr() if isinstance(x, Tracer) else str(x)


class JVPTrace(Trace):
  name = "jvp"

  def __init__(self, parent):
    super().__init__()
    self.parent = parent

  def to_primal_tangent(self, x):
    if type(x) is JVPTracer and x._trace is self:
      return x.primal, x.tangent
    if isinstance(x, Tracer):
      self.check_tracer(x)
    return x, Zero(get_aval(x).to_tangent_aval())

  def process_primitive(self, primitive, args, params):
    primals, tangents = zip(*[self.to_primal_tangent(x) for x in args]) if args else ((), ())
    if all(type(t) is Zero for t in tangents) and primitive not in always_differentiated:
      with set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    rule = primitive_jvps.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented "
                                "(interpreter: JVP)")
    with set_current_trace(self.parent):
      primal_out, tangent_out = rule(list(primals), list(tangents), **params)
    if primitive.multiple_results:
      return [self.maybe_tracer(p, t) for p, t in zip(primal_out, tangent_out)]
    return self.maybe_tracer(primal_out, tangent_out)

  def maybe_tracer(self, primal, tangent):
    if type(tangent) is Zero or _is_float0_value(tangent):
      return primal
    return JVPTracer(self, primal, tangent)


def _is_float0_value(t) -> bool:
  """A materialized float0 tangent (an integer's or boolean's: a call rule that instantiates
  its output tangents makes them) is a symbolic zero, as in JAX: only then does a primitive
  without a JVP rule applied to an integer (equinox's ``unvmap_max``) stay undifferentiated."""
  dtype = getattr(t, "dtype", None)
  return dtype is not None and dtype == dtypes.float0


def inlined_call_results(trace: JVPTrace, outs):
  """``outs`` of a function that JAX jits with ``inline=True`` (the ``numpy`` functions),
  run inline under the forward-mode ``trace``. JAX differentiates such a call as one call
  bound on the parent trace, so each primal and tangent that comes out is that call's
  result: an array, never the Python scalar or NumPy value that a rule passed straight
  through (``x + 1``'s tangent is the tangent of ``x``)."""
  if type(outs) is JVPTracer:
    return _as_call_result(trace, outs)
  return tree_util.tree_map(lambda x: _as_call_result(trace, x), outs)


def _as_call_result(trace, x):
  if type(x) is not JVPTracer or x._trace is not trace:
    return x
  p, t = x.primal, x.tangent
  if _is_host_value(p) or _is_host_value(t):
    return JVPTracer(trace, device_put(p) if _is_host_value(p) else p,
                     device_put(t) if _is_host_value(t) else t)
  return x


def _is_host_value(v) -> bool:
  if type(v) in (int, float, complex, bool):
    return True
  return isinstance(v, (np.ndarray, np.generic)) and v.dtype != dtypes.float0


def jvp(fun: Callable, primals: Sequence, tangents: Sequence,
        transform_stack: bool = False) -> tuple[list, list]:
  """Evaluate ``fun(*primals)`` and its directional derivative along ``tangents`` (flat
  lists; tangents may be ``Zero``). Returns (primal outputs, tangent outputs, maybe Zero).
  ``transform_stack``: the equations record ``jvp`` in their name stacks (the user's
  ``jvp``/``grad``; rules differentiating a body do not, as JAX's)."""
  trace = JVPTrace(current_trace())
  in_tracers = [p if type(t) is Zero or _is_float0_value(t) else JVPTracer(trace, p, t)
                for p, t in zip(primals, tangents)]
  names = (source_info_lib.transform_name_stack("jvp") if transform_stack
           else _NO_NAMES)
  try:
    with set_current_trace(trace), names:
      outs = fun(*in_tracers)
    pairs = [trace.to_primal_tangent(o) for o in outs]
  finally:
    trace.invalidate()
  return [p for p, _ in pairs], [t for _, t in pairs]


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate: bool | Sequence[bool]
              ) -> tuple[ClosedJaxpr, list[bool]]:
  """A jaxpr computing (primals_out, nonzero tangents_out) from (primals, nonzero tangents).

  Returns it with the flags of which output tangents are nonzero (all if instantiated).
  """
  n_out = len(closed.out_avals)
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * n_out
  tangent_avals = [a.to_tangent_aval() for a, nz in zip(closed.in_avals, nonzeros) if nz]
  out_nz_box = []

  def fun(*args):
    primals, tangents_nz = args[:len(nonzeros)], list(args[len(nonzeros):])
    it = iter(tangents_nz)
    tangents = [next(it) if nz else Zero(a.to_tangent_aval())
                for a, nz in zip(closed.in_avals, nonzeros)]
    from hlox.core.jaxpr import eval_jaxpr
    outs_p, outs_t = jvp(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                         primals, tangents)
    outs_t = [instantiate_zeros(t) if inst else t for t, inst in zip(outs_t, instantiate)]
    out_nz_box.append([type(t) is not Zero for t in outs_t])
    return list(outs_p) + [t for t in outs_t if type(t) is not Zero]

  splits = None
  if sharding_types.active[0]:  # the traced arguments (and their tangents) keep their splits
    in_splits = [getattr(v, "sharding", None) for v in closed.jaxpr.invars]
    if any(s is not None for s in in_splits):
      splits = in_splits + [s for s, nz in zip(in_splits, nonzeros) if nz]
  new = trace_to_jaxpr(fun, list(closed.in_avals) + tangent_avals, "jvp", "jvp",
                       in_shardings=splits)
  return new, out_nz_box[0]


_NO_NAMES = contextlib.nullcontext()


# --- linearize and transpose -------------------------------------------------------------

class Linearized:
  """The linear part of a function at a point: a jaxpr from input tangents to output
  tangents, whose consts are the residuals computed by the forward pass."""

  __slots__ = ("jaxpr", "in_avals", "out_zeros", "out_avals")

  def __init__(self, jaxpr: ClosedJaxpr, in_avals, out_zeros, out_avals):
    self.jaxpr = jaxpr
    self.in_avals = in_avals      # tangent avals of the differentiated inputs
    self.out_zeros = out_zeros    # which output tangents are symbolically zero
    self.out_avals = out_avals    # tangent avals of all outputs

  def __call__(self, *tangents):
    """Evaluate the JVP's tangent part (forward mode) at ``tangents``."""
    from hlox.core.jaxpr import eval_jaxpr
    outs = iter(eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *tangents))
    return [Zero(a) if z else next(outs) for a, z in zip(self.out_avals, self.out_zeros)]

  def transpose(self, cts_out: Sequence, transform_stack: bool = False) -> list:
    """Cotangents of the inputs given cotangents of the outputs (Zero allowed);
    ``transform_stack``: the equations record ``transpose`` in their name stacks."""
    cts = [ct for ct, z in zip(cts_out, self.out_zeros) if not z]
    args = [UndefinedPrimal(a) for a in self.in_avals]
    return backward_pass(self.jaxpr.jaxpr, self.jaxpr.consts, args, cts, transform_stack)


def linearize(fun: Callable, primals: Sequence, nonzeros: Sequence[bool] | None = None,
              transform_stack: bool = False) -> tuple[list, Linearized]:
  """Primal outputs of ``fun(*primals)`` and its linearization in the inputs marked nonzero
  (``transform_stack``: as ``jvp``'s)."""
  if nonzeros is None:
    nonzeros = [True] * len(primals)
  parent = current_trace()
  base_names = source_info_lib.name_stack()
  pe = PartialEvalTrace(parent, "linearize")
  in_avals = [get_aval(p).to_tangent_aval() for p, nz in zip(primals, nonzeros) if nz]
  if sharding_types.active[0]:  # a tangent is split as its primal
    splits = [sharding_types.split_of(p) for p, nz in zip(primals, nonzeros) if nz]
    tangent_args = iter([pe.new_arg(a, s) for a, s in zip(in_avals, splits)])
  else:
    tangent_args = iter([pe.new_arg(a) for a in in_avals])
  tangents = [next(tangent_args) if nz else Zero.from_primal_value(p)
              for p, nz in zip(primals, nonzeros)]
  try:
    with set_current_trace(pe):
      out_primals, out_tangents = jvp(fun, primals, tangents, transform_stack)
      for p in out_primals:
        if pe.is_unknown(p):
          # JAX's class and text: an operation without reverse-mode support (a
          # custom_vmap function, a JVP rule mixing primals and tangents) got here.
          raise ValueError("Linearization failed to produce known values for all output "
                           "primals. This is typically caused by attempting to differentiate "
                           "a function uses an operation that does not support reverse-mode "
                           "autodiff.")
      out_zeros = [type(t) is Zero for t in out_tangents]
      out_tracers = [pe.to_tracer(t) for t in out_tangents if type(t) is not Zero]
    jaxpr, consts = pe.to_jaxpr(out_tracers)
  finally:
    pe.invalidate()
  if base_names:
    _relative_names(jaxpr, base_names)
  out_avals = [get_aval(p).to_tangent_aval() for p in out_primals]
  return out_primals, Linearized(ClosedJaxpr(jaxpr, consts), in_avals, out_zeros, out_avals)


def _relative_names(jaxpr: Jaxpr, base) -> None:
  """Strip ``base`` (the names open where ``linearize`` was called) from the name stacks of
  the linear jaxpr's equations: transposing re-emits them under the names open then, as a
  traced jaxpr's equations are named relative to it."""
  n = len(base)
  for eqn in jaxpr.eqns:
    info = eqn.source_info
    if info is not None and info.name_stack[:n] == base:
      eqn.source_info = info.with_name_stack(info.name_stack[n:])


def backward_pass(jaxpr: Jaxpr, consts: Sequence, args: Sequence, cts_out: Sequence,
                  transform_stack: bool = False) -> list:
  """Transpose ``jaxpr`` in its ``UndefinedPrimal`` arguments.

  Equations that do not depend on an undefined primal are evaluated forward first (on the
  current trace); the others are transposed in reverse order. Returns one cotangent per
  undefined-primal argument (``Zero`` when nothing flows to it).
  """
  if state_discharge.jaxpr_has_refs(jaxpr) and not state_discharge.refs_only_among_consts(jaxpr):
    # Tangent references (of a function using references inside) become plain values.
    pure = state_discharge.discharge_jaxpr(ClosedJaxpr(jaxpr, consts))
    jaxpr, consts = pure.jaxpr, pure.consts
  primal_env = {}
  linear = set()

  def read_primal(v):
    if type(v) is Literal:
      return literal_value(v)
    if v in linear:
      return UndefinedPrimal(_typed_aval(v))
    return primal_env[v]

  for v, c in zip(jaxpr.constvars, consts):
    primal_env[v] = c
  for v, a in zip(jaxpr.invars, args):
    if type(a) is UndefinedPrimal:
      linear.add(v)
    else:
      primal_env[v] = a
  linear_eqns = []
  # What the rules emit takes the source line of the equation they stand for.
  context = source_info_lib._context
  prev_eqn = context.eqn
  try:
    for eqn in jaxpr.eqns:
      if any(type(v) is not Literal and v in linear for v in eqn.invars):
        linear.update(eqn.outvars)
        linear_eqns.append(eqn)
      else:
        context.eqn = eqn.source_info
        outs = eqn.primitive.bind(*[read_primal(v) for v in eqn.invars], **eqn.params)
        primal_env.update(zip(eqn.outvars,
                              outs if eqn.primitive.multiple_results else [outs]))
    # The transposed equations (not the forward ones) record ``transpose``, as JAX's.
    with (source_info_lib.transform_name_stack("transpose") if transform_stack
          else _NO_NAMES):
      ct_env = _transpose_eqns(linear_eqns, jaxpr, cts_out, linear, read_primal, context)
  finally:
    context.eqn = prev_eqn
  return [ct_env.pop(v, Zero(v.aval)) if type(a) is UndefinedPrimal else None
          for v, a in zip(jaxpr.invars, args)]


def _transpose_eqns(linear_eqns, jaxpr, cts_out, linear, read_primal, context) -> dict:
  """Run the transpose rules of ``linear_eqns`` backwards from the output cotangents;
  returns the cotangents left in the environment (those of the linear inputs)."""

  ct_env = {}

  def write_ct(v, ct):
    if type(v) is Literal or v not in linear or ct is None or type(ct) is Zero:
      return
    ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)
  # Which variables a later live equation (or the result) reads: tracked only when some
  # equation must run without cotangents, and then only live ones (as after JAX's DCE).
  # With no cotangent at all nothing runs (JAX returns at once then).
  live = ({v for v in jaxpr.outvars if type(v) is not Literal}
          if ct_env and any(e.primitive in transpose_even_if_zero for e in linear_eqns)
          else None)
  for eqn in reversed(linear_eqns):
    cts = [ct_env.pop(v, None) for v in eqn.outvars]
    if live is not None and any(v in live for v in eqn.outvars):
      live.update(v for v in eqn.invars if type(v) is not Literal)
      if eqn.primitive in transpose_even_if_zero:
        cts = [Zero(v.aval) if ct is None else ct for ct, v in zip(cts, eqn.outvars)]
    if all(ct is None for ct in cts):
      continue
    cts = [Zero(v.aval) if ct is None else ct for ct, v in zip(cts, eqn.outvars)]
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                f"'{eqn.primitive.name}' not implemented")
    invals = [read_primal(v) for v in eqn.invars]
    context.eqn = eqn.source_info
    if sharding_types.active[0]:
      ct_in = _transpose_with_types(rule, eqn, cts, invals)
    else:
      ct_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals, **eqn.params)
    for v, ct in zip(eqn.invars, ct_in):
      write_ct(v, ct)
  return ct_env


def _transpose_with_types(rule, eqn, cts, invals):
  """A transpose rule under sharding in types: each operand's cotangent is split as the
  operand is (as JAX's rules pass the operand's sharding as ``out_sharding``), so a rule
  never has to guess (a matrix product's cotangent contracts the split dimension)."""
  with sharding_types.result_sharding_given():
    ct_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals, **eqn.params)
  split = [getattr(v, "sharding", None) for v in eqn.invars]
  if not any(s is not None for s in split):
    return ct_in
  # The cotangent of a reduced operand is unreduced (a partial sum per device), and of an
  # unreduced one reduced, as in JAX.
  split = [None if s is None else s.transposed() for s in split]
  return [ct if s is None or ct is None or type(ct) is Zero else sharding_types.constrain(ct, s)
          for ct, s in zip(ct_in, split)]


def vjp(fun: Callable, primals: Sequence, nonzeros: Sequence[bool] | None = None):
  """Primal outputs and a function mapping output cotangents to input cotangents."""
  out_primals, lin = linearize(fun, primals, nonzeros)
  return out_primals, lin.transpose


# --- registrars --------------------------------------------------------------------------

def defjvp(primitive, *jvp_rules):
  """Per-argument JVP rules: ``rule(tangent_i, *primals, **params)`` gives the contribution
  of argument ``i``'s tangent to the output tangent; ``None`` marks a non-differentiable
  argument."""
  primitive_jvps[primitive] = lambda primals, tangents, **params: _standard_jvp(
      jvp_rules, primitive, primals, tangents, **params)


def _standard_jvp(jvp_rules, primitive, primals, tangents, **params):
  primal_out = primitive.bind(*primals, **params)
  tangent_out = Zero.from_primal_value(primal_out) if not primitive.multiple_results else None
  for rule, t in zip(jvp_rules, tangents):
    if rule is None or type(t) is Zero:
      continue
    contribution = rule(t, *primals, **params)
    tangent_out = add_tangents(tangent_out, contribution)
  return primal_out, tangent_out


def defjvp2(primitive, *jvp_rules):
  """Like ``defjvp`` but each rule also receives the primal output first:
  ``rule(tangent_i, primal_out, *primals, **params)``."""
  def jvp_rule(primals, tangents, **params):
    primal_out = primitive.bind(*primals, **params)
    tangent_out = Zero.from_primal_value(primal_out)
    for rule, t in zip(jvp_rules, tangents):
      if rule is None or type(t) is Zero:
        continue
      tangent_out = add_tangents(tangent_out, rule(t, primal_out, *primals, **params))
    return primal_out, tangent_out
  primitive_jvps[primitive] = jvp_rule


def defjvp_zero(primitive):
  """The output does not depend differentiably on any input (e.g. comparisons, floor)."""
  def jvp_rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if primitive.multiple_results:
      return out, [Zero.from_primal_value(o) for o in out]
    return out, Zero.from_primal_value(out)
  primitive_jvps[primitive] = jvp_rule


def deflinear(primitive, transpose_rule):
  """A primitive linear in all its arguments: its JVP applies it to the tangents, and
  ``transpose_rule(ct, *args, **params)`` returns one cotangent per argument."""
  def jvp_rule(primals, tangents, **params):
    primal_out = primitive.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      return primal_out, Zero.from_primal_value(primal_out)
    tangent_out = primitive.bind(*[instantiate_zeros(t) for t in tangents], **params)
    return primal_out, tangent_out
  primitive_jvps[primitive] = jvp_rule

  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, *args, **params)
  primitive_transposes[primitive] = transpose


def defbilinear(primitive, lhs_transpose, rhs_transpose):
  """A primitive linear in each of its two arguments separately (mul, dot_general):
  ``lhs_transpose(ct, x, y, **params)`` gives the cotangent of ``x`` when ``x`` is the
  undefined one, ``rhs_transpose`` that of ``y``."""
  def jvp_rule(primals, tangents, **params):
    x, y = primals
    tx, ty = tangents
    out = primitive.bind(x, y, **params)
    t = Zero.from_primal_value(out)
    if type(tx) is not Zero:
      t = add_tangents(t, primitive.bind(tx, y, **params))
    if type(ty) is not Zero:
      t = add_tangents(t, primitive.bind(x, ty, **params))
    return out, t
  primitive_jvps[primitive] = jvp_rule

  def transpose(ct, x, y, **params):
    if type(ct) is Zero:
      return [Zero(x.aval) if is_undefined_primal(x) else None,
              Zero(y.aval) if is_undefined_primal(y) else None]
    if is_undefined_primal(x) and is_undefined_primal(y):
      raise ValueError(f"{primitive.name} is bilinear, not linear, in both arguments together")
    if is_undefined_primal(x):
      return [lhs_transpose(ct, x, y, **params), None]
    return [None, rhs_transpose(ct, x, y, **params)]
  primitive_transposes[primitive] = transpose


def is_float0(aval) -> bool:
  return aval.dtype == dtypes.float0
