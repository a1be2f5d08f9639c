"""Values of dimension variables from actual argument sizes.

A function exported with argument shapes such as ``(b, 2*b + 1)`` is called with arrays of
concrete shapes; each symbolic dimension gives an equation ``expr == size``. ``solve`` finds
the variables one at a time: an equation whose terms are all known but one, that one being
a variable times a constant, gives that variable; the equations left with every variable
known become checks. The sizes may be Python ints (the types of a call, checked here) or
any values with integer arithmetic (the lowering solves with values of the program, from
``get_dimension_size``).
"""
from __future__ import annotations

from typing import Callable, Sequence

from hlox.core.shape_poly import (Comparator, UnexpectedDimVar, _DimExpr, _add_values,
                                  _mul_values)


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


def solve(eqs: list) -> tuple[dict, list]:
  """``(env, checks)``: the variables' values, and the ``(DimEquation, value of its expr)``
  pairs that no variable was solved from (their sizes must be equal). ValueError when some
  variable cannot be found."""
  env: dict = {}
  checks = []
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
        checks.append((eq, known_sum))
      elif unknown is False:
        left.append(eq)
      else:
        var, k = unknown
        rest = _add_values(eq.size, _mul_values(known_sum, -1))
        if k == 1:
          env[var] = rest
        else:  # (size - known terms) // k, with no remainder
          env[var], remainder = divmod(rest, k)
          if not (isinstance(remainder, int) and remainder == 0):
            checks.append((eq, ("remainder", remainder, var)))
    if len(left) == len(pending):
      names = set().union(*(eq.expr._get_vars() for eq in left)) - set(env)
      raise ValueError(
          f"Cannot solve for values of dimension variables {names}: only linear equations "
          "with one unknown variable can be solved. Unprocessed specifications: " +
          ", ".join(f"'{eq.expr}' for dimension size {eq.name}" for eq in left) +
          ". Every dimension variable must appear alone (times a constant, plus known "
          "terms) in some dimension of the arguments.")
    pending = left
  return env, checks


def check_concrete(shapes: Sequence[tuple], actual: Sequence[tuple], names: Sequence[str],
                   spec_text: str = "") -> dict:
  """The variables' values for arguments of concrete shapes ``actual``; ValueError (with
  JAX's words) when the shapes do not fit ``shapes`` or the scope's constraints."""
  eqs = equations(shapes, lambda i, k: actual[i][k], names)
  env, checks = solve(eqs)
  where = (" Using the following polymorphic shapes specifications: " +
           ",".join(f"{n}.shape = {tuple(s)}" for n, s in zip(names, shapes)
                    if any(isinstance(d, _DimExpr) for d in s)) + ".")
  found = " Obtained dimension variables: " + ", ".join(
      f"'{v}' = {env[v]}" for v in sorted(env)) + "."
  for eq, value in checks:
    if value is None:
      continue
    if isinstance(value, tuple):
      _, remainder, var = value
      raise ValueError(
          "Input shapes do not match the polymorphic shapes specification. Division had "
          f"remainder {remainder} when computing the value of '{var}'." + where + found)
    if value != eq.size:
      raise ValueError(
          "Input shapes do not match the polymorphic shapes specification. Found "
          f"inconsistency between dimension size {eq.name} (= {eq.size}) and the "
          f"specification '{eq.expr}' (= {value})." + where + found)
  for var in sorted(env):
    if env[var] < 1:
      raise ValueError(
          "Input shapes do not match the polymorphic shapes specification. Expected value "
          f">= 1 for dimension variable '{var}'." + where + found)
  if eqs:
    scope = eqs[0].expr.scope
    for c in scope._explicit_constraints:
      diff = c.diff._evaluate(env) if isinstance(c.diff, _DimExpr) else c.diff
      if (diff != 0) if c.cmp is Comparator.EQ else (diff < 0):
        raise ValueError(
            f"Input shapes do not match the symbolic shape constraint {c.debug_str}. "
            f"Expected '{c.diff}' to be "
            f"{'equal' if c.cmp is Comparator.EQ else 'greater or equal'} to 0, but found "
            f"{diff}." + where + found)
  return env


def evaluate_shape(shape: tuple, env: dict) -> tuple:
  """``shape`` with its symbolic dimensions evaluated in ``env``."""
  return tuple(d._evaluate(env) if isinstance(d, _DimExpr) else d for d in shape)
