"""Scopes of symbolic dimensions (``SymbolicScope``): the user's constraints, turned into
rewrite rules (equalities) and facts for the decision procedure (all of them), and the
caches of bounds that depend on them."""
from __future__ import annotations

import sys
from typing import Callable

from hlox.core.shape_poly import (Comparator, _DimExpr, _DimFactor, _DimTerm,
                                  _ensure_poly)


class _SymbolicConstraint:
  """``e1 == e2`` or ``e1 >= e2`` as the user wrote it (``debug_str``), with ``diff = e1 -
  e2`` computed before the constraint itself could rewrite it away."""

  __slots__ = ("cmp", "debug_str", "e1", "e2", "diff")

  def __init__(self, cmp: Comparator, debug_str: str, e1, e2, diff):
    self.cmp, self.debug_str, self.e1, self.e2, self.diff = cmp, debug_str, e1, e2, diff

  def __repr__(self):
    return f"Constraint({self.debug_str})"


def _user_location() -> str:
  """``file:line`` of the innermost caller outside hlox (for describing a scope)."""
  frame = sys._getframe(1)
  while frame is not None and frame.f_globals.get("__name__", "").startswith("hlox."):
    frame = frame.f_back
  if frame is None:
    return "unknown"
  return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class SymbolicScope:
  """The scope of a family of symbolic dimensions and the constraints on them.

  Expressions that meet (in one function's argument shapes, or in arithmetic) must come from
  the same scope object. ``constraints_str`` is a sequence of strings ``"e1 >= e2"``,
  ``"e1 <= e2"`` or ``"e1 == e2"``; an equality's left side must be a single term times a
  constant, and every expression is rewritten with it.
  """

  def __init__(self, constraints_str=()):
    if isinstance(constraints_str, str):
      raise ValueError("The symbolic constraints should be a sequence of strings. "
                       f"Got {constraints_str!r}")
    self._initialized = False
    self._location = _user_location()
    self._explicit_constraints: list[_SymbolicConstraint] = []
    # e -> (lb, ub, precision): the bounds depend only on the constraints.
    self._bounds_cache: dict = {}
    self._decision_initial_state = None
    # ``t * k == e`` as t -> (e, k): a ``t * (k * n)`` in any expression becomes ``e * n``.
    self._normalization_rules: dict = {}
    for c_str in constraints_str:
      self._parse_and_process_explicit_constraint(c_str)
      self._bounds_cache.clear()
    self._initialized = True

  def __str__(self):
    text = f"{id(self)} created at {self._location}"
    if self._explicit_constraints:
      text += " with constraints:\n" + "\n".join(
          f"  {c.debug_str}" for c in self._explicit_constraints)
    return text

  __repr__ = __str__

  def _parse_and_process_explicit_constraint(self, c_str: str):
    if not isinstance(c_str, str):
      raise ValueError(f"SymbolicScope constraint must be a string: got {c_str!r}")
    for token, cmp, swap in (("==", Comparator.EQ, False), (">=", Comparator.GEQ, False),
                             ("<=", Comparator.GEQ, True)):
      pos = c_str.find(token)
      if pos >= 0:
        break
    else:
      raise ValueError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
    e1 = _parse_dim(c_str[:pos], self)
    e2 = _parse_dim(c_str[pos + 2:], self)
    if swap:
      e1, e2 = e2, e1
    self._process_explicit_constraint(
        _SymbolicConstraint(cmp, c_str, e1, e2, e1 - e2))

  def _process_explicit_constraint(self, constr: _SymbolicConstraint):
    if (diff := _DimExpr._to_constant(constr.diff)) is not None:
      if diff < 0 or (constr.cmp is Comparator.EQ and diff != 0):
        raise ValueError(f"Unsatisfiable explicit constraint: {constr.debug_str}")
      return  # always true: dropped
    if constr.cmp is Comparator.EQ:
      e1 = constr.e1
      if not isinstance(e1, _DimExpr) or len(e1._sorted_terms) != 1:
        raise ValueError(f"Invalid equality constraint: {constr.e1} == {constr.e2}. The "
                         "left-hand-side must be of the form `term * coefficient`.")
      (before, before_k), = e1._sorted_terms
      if before in self._normalization_rules:
        raise NotImplementedError(
            f"Found multiple equality constraints with the same left-hand-side: {before}")
      self._normalization_rules[before] = (_ensure_poly(constr.e2, "constraint", self),
                                           before_k)
      # ``mod(x, k) == 0`` also says ``k * floordiv(x, k) == x``, which the rewrites need
      # to see that, e.g., ``4 * (b // 4) == b``.
      f = before.to_factor()
      if (before_k == 1 and isinstance(constr.e2, int) and constr.e2 == 0
          and f is not None and f.operation == _DimFactor.MOD
          and (k := _DimExpr._to_constant(f.operands[1])) is not None):
        k_floordiv = _DimExpr._from_term(
            _DimTerm.from_operation(_DimFactor.FLOORDIV, *f.operands, scope=self), k, self)
        x = f.operands[0]
        self._process_explicit_constraint(_SymbolicConstraint(
            Comparator.EQ, f"{k_floordiv} == {x}", k_floordiv, x, k_floordiv - x))
    self._explicit_constraints.append(constr)

  def _check_same_scope(self, other: _DimExpr, when: str = "", self_descr: str = " ",
                        other_descr: str = "unknown"):
    if self is not other.scope:
      raise ValueError(
          f"Invalid mixing of symbolic scopes {when}.\n"
          f"Expected {self_descr}scope {self}\n"
          f"and found for '{other}' ({other_descr}) scope {other.scope}\n"
          "Expressions that meet must be made with the same SymbolicScope (pass scope= to "
          "symbolic_shape).")

  def _clear_caches(self):
    self._bounds_cache.clear()



def _missing(text, scope):
  raise NotImplementedError("hlox.core.shape_poly_scope is used before its parser was "
                            "installed")


_parse_dim: Callable = _missing


def _install_parser(parse_dim: Callable):
  global _parse_dim
  _parse_dim = parse_dim
