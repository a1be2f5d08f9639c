"""Values of dimension variables from actual argument sizes.

A function exported with argument shapes such as ``(b, 2*b + 1)`` is called with arrays of
other shapes; each symbolic dimension gives an equation ``expr == size``. ``solve`` finds
the variables one at a time, in passes over the equations: an equation whose terms are all
known but one, that one being a variable times a constant, gives that variable; an
equation with every variable known becomes a check. The sizes may be Python ints (a call
with concrete shapes), symbolic dimensions of the caller (an exported function called while
another is exported), or values of a program (the lowering solves with
``get_dimension_size``'s results). ``check_call`` checks a call as JAX does, with JAX's
messages.
"""
from __future__ import annotations

from typing import Callable, Sequence

from hlox.core.shape_poly import (Comparator, InconclusiveDimensionOperation, UnexpectedDimVar,
                                  _DimExpr, _add_values, _mul_values)

_SHAPE_ERRORS = ". Please see https://docs.jax.dev/en/latest/export/shape_poly.html" \
                "#shape-assertion-errors for more details."
_UNSOLVABLE = (". Please see https://docs.jax.dev/en/latest/export/shape_poly.html"
               "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.")


class DimEquation:
  """``expr == size`` where ``size`` is the actual size of dimension ``name`` (e.g.
  ``args[0].shape[1]``)."""

  __slots__ = ("expr", "size", "name")

  def __init__(self, expr: _DimExpr, size, name: str):
    self.expr, self.size, self.name = expr, size, name


def equations(shapes: Sequence[tuple], size: Callable, names: Sequence[str]) -> list:
  """The equations of the symbolic dimensions of ``shapes`` (one shape per argument, with
  its name): ``size(i, d)`` is the actual size of argument ``i``'s dimension ``d``."""
  return [DimEquation(d, size(i, k), f"{names[i]}.shape[{k}]")
          for i, shape in enumerate(shapes) for k, d in enumerate(shape)
          if isinstance(d, _DimExpr)]


def specs_text(shapes: Sequence[tuple], names: Sequence[str]) -> str:
  """How the error messages list the symbolic argument shapes."""
  return (" Using the following polymorphic shapes specifications: " +
          ",".join(f"{n}.shape = {tuple(s)}" for n, s in zip(names, shapes)
                   if any(isinstance(d, _DimExpr) for d in s)) + ".")


def solve(eqs: list, specs: str = "") -> tuple[dict, list]:
  """``(env, events)``: the variables' values, and in the order they were found what must
  hold for them to be right: ``("var", name, value, eq, remainder)`` (a variable found
  from ``eq``; ``remainder`` of the division by its coefficient, None for 1) and
  ``("check", eq, value)`` (``eq.size`` must equal ``value``, its expression's value).
  ValueError (``specs``: from ``specs_text``) when some variable cannot be found."""
  env: dict = {}
  events = []
  pending = list(eqs)
  while pending:
    left = []
    for eq in pending:
      unknown, known_sum = None, 0
      for t, k in eq.expr._sorted_terms:
        try:
          known_sum = _add_values(known_sum, _mul_values(t.evaluate(env, eq.expr.scope), k))
        except UnexpectedDimVar:
          if unknown is not None or t.to_var() is None:
            unknown = False  # two unknown terms, or a non-linear one: not yet
            break
          unknown = (t.to_var(), k)
      if unknown is None:
        events.append(("check", eq, known_sum))
      elif unknown is False:
        left.append(eq)
      else:
        var, k = unknown
        rest = _add_values(eq.size, _mul_values(known_sum, -1))
        remainder = None
        if k == 1:
          env[var] = rest
        else:
          env[var], remainder = divmod(rest, k)
        events.append(("var", var, env[var], eq, remainder))
    if len(left) == len(pending):
      names = set().union(*(eq.expr._get_vars() for eq in left)) - set(env)
      raise ValueError(
          f"Cannot solve for values of dimension variables {names}. We can only solve "
          "linear uni-variate constraints." + specs + " Unprocessed specifications: " +
          ", ".join(f"'{eq.expr}' for dimension size {eq.name}" for eq in left) +
          _UNSOLVABLE)
    pending = left
  return env, events


def _holds(test: Callable) -> bool:
  try:
    return bool(test())
  except InconclusiveDimensionOperation:
    return False  # (sizes of the caller that may not fit: not known to hold)


def check_call(shapes: Sequence[tuple], actual: Sequence[tuple], names: Sequence[str]) -> dict:
  """The variables' values for arguments of shapes ``actual`` (ints, or the caller's
  symbolic dimensions); ValueError with JAX's message at the first requirement, in JAX's
  order, that does not hold (or, with symbolic sizes, is not known to hold)."""
  specs = specs_text(shapes, names)
  eqs = equations(shapes, lambda i, k: actual[i][k], names)
  env, events = solve(eqs, specs)
  found = " Obtained dimension variables: "

  def fail(what: str):
    raise ValueError("Input shapes do not match the polymorphic shapes specification. " +
                     what + specs + found + _SHAPE_ERRORS)

  for event in events:
    if event[0] == "check":
      _, eq, value = event
      if not _holds(lambda: eq.size == value):
        fail(f"Found inconsistency between dimension size {eq.name} (= {eq.size}) and the "
             f"specification '{eq.expr}' (= {value}).")
      continue
    _, var, value, eq, remainder = event
    if remainder is not None and not _holds(lambda: remainder == 0):
      fail(f"Division had remainder {remainder} when computing the value of '{var}'.")
    found += (f"'{var}' = {value} from specification '{eq.expr}' for dimension {eq.name} "
              f"(= {eq.size}), ")
    if not _holds(lambda: value >= 1):
      fail(f"Expected value >= 1 for dimension variable '{var}'.")
  if eqs:
    for c in eqs[0].expr.scope._explicit_constraints:
      diff = c.diff._evaluate(env) if isinstance(c.diff, _DimExpr) else c.diff
      ok = (_holds(lambda: diff == 0) if c.cmp is Comparator.EQ
            else _holds(lambda: diff >= 0))
      if not ok:
        relation = "equal" if c.cmp is Comparator.EQ else "greater or equal"
        raise ValueError(
            f"Input shapes do not match the symbolic shape constraint {c.debug_str}. "
            f"Expected '{c.diff}' to be {relation} to 0, but found {diff}. " + specs + found +
            _SHAPE_ERRORS)
  return env


def evaluate_shape(shape: tuple, env: dict) -> tuple:
  """``shape`` with its symbolic dimensions evaluated in ``env``."""
  return tuple(d._evaluate(env) if isinstance(d, _DimExpr) else d for d in shape)
