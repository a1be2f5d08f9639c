"""Static cost estimates of equations: FLOPs and bytes moved, from per-primitive rules.

A rule is ``rule(avals_in, avals_out, **params) -> Cost`` and is registered beside its
primitive (``register_cost(dot_general_p, ...)`` in ``lax/dot.py``). Primitives without a rule
get a default: an equation holding nested jaxprs (a call, a custom rule) costs what they cost,
summed; any other is taken to be elementwise, one flop per output element and every operand
and result read or written once. The figures are estimates for display and comparison, in
the units of XLA's ``cost_analysis()`` (flops, bytes accessed), not a model of any device.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn


class Cost(NamedTuple):
  """Estimated floating-point operations and bytes read plus written."""
  flops: float = 0.0
  bytes: float = 0.0

  def __add__(self, other):
    return Cost(self.flops + other.flops, self.bytes + other.bytes)

  def scale(self, k) -> "Cost":
    return Cost(self.flops * k, self.bytes * k)


cost_rules: dict = {}


def register_cost(prim, rule: Callable) -> None:
  """Use ``rule(avals_in, avals_out, **params) -> Cost`` for equations of ``prim``."""
  cost_rules[prim] = rule


def size(aval) -> int:
  return math.prod(getattr(aval, "shape", ()))


def nbytes(aval) -> int:
  dtype = getattr(aval, "dtype", None)
  itemsize = getattr(dtype, "itemsize", 0) or 0
  return size(aval) * itemsize


def io_bytes(avals_in, avals_out) -> int:
  """Every operand read once and every result written once."""
  return sum(nbytes(a) for a in avals_in) + sum(nbytes(a) for a in avals_out)


def elementwise_cost(avals_in, avals_out, **_) -> Cost:
  return Cost(sum(size(a) for a in avals_out), io_bytes(avals_in, avals_out))


def data_movement_cost(avals_in, avals_out, **_) -> Cost:
  """Reshapes, broadcasts, slices: no arithmetic, only the bytes."""
  return Cost(0, io_bytes(avals_in, avals_out))


def reduction_cost(avals_in, avals_out, **_) -> Cost:
  """One combine per input element."""
  return Cost(sum(size(a) for a in avals_in), io_bytes(avals_in, avals_out))


def nested_jaxprs(params) -> list[tuple[str, Jaxpr]]:
  """``(label, jaxpr)`` for each jaxpr held in an equation's params (a cond's branches are
  ``branches[0]``, ``branches[1]``, ...), in the params' order."""
  found = []
  for key, value in params.items():
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
      found.append((key, _open(value)))
    elif isinstance(value, (tuple, list)):
      for i, item in enumerate(value):
        if isinstance(item, (Jaxpr, ClosedJaxpr)):
          found.append((f"{key}[{i}]", _open(item)))
  return found


def _open(j) -> Jaxpr:
  return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def eqn_cost(eqn: JaxprEqn) -> Cost:
  """The estimated cost of one equation, nested jaxprs included."""
  avals_in = [v.aval for v in eqn.invars]
  avals_out = [v.aval for v in eqn.outvars]
  rule = cost_rules.get(eqn.primitive)
  if rule is not None:
    return rule(avals_in, avals_out, **eqn.params)
  inner = nested_jaxprs(eqn.params)
  if inner:
    total = Cost()
    for _, j in inner:
      total = total + jaxpr_cost(j)
    return total
  return elementwise_cost(avals_in, avals_out)


def jaxpr_cost(jaxpr) -> Cost:
  """The summed estimate over a jaxpr's equations (nested ones included)."""
  total = Cost()
  for eqn in _open(jaxpr).eqns:
    total = total + eqn_cost(eqn)
  return total

