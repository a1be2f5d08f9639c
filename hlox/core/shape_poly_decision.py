"""Bounds of symbolic dimension expressions: the decision procedure behind ``>=``, ``max``
and ``min`` of ``shape_poly``.

The state is a set of facts ``c >= 0`` or ``c == 0`` about expressions: the scope's explicit
constraints, plus the implicit ones that the terms of the expression being bounded carry
(a variable is ``>= 1``; ``0 <= mod(x, k) < k`` for ``k > 0``; a ``floordiv`` lies between
the quotients of its operands' bounds; ``max(x, y) >= x``...). Facts about a single term
``n + k*t`` are kept as an interval for ``t``; the others are indexed by their leading
(largest) term.

To bound ``e = t*t_k + rest`` (terms sorted largest first), each fact ``c`` that contains
``t`` is scaled and added to ``e`` so that ``t`` cancels: what is left has only smaller
terms, whose bounds are computed the same way, recursively, and they bound ``e``. This is
elimination of terms one at a time (Fourier-Motzkin in spirit); it is sound but not
complete, and cheap enough to run on every shape comparison.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from hlox.core.shape_poly import (BoundsPrecision, Comparator, InconclusiveDimensionOperation,
                                  _DimExpr, _DimFactor, _DimTerm, _install, _merge_sorted)
from hlox.core.shape_poly_scope import SymbolicScope

_INF = np.inf


def _sign(x) -> int:
  return 1 if x >= 0 else -1


def bounds_decision(e, prec: BoundsPrecision) -> tuple:
  """``(lower, upper)`` bounds of ``e`` (``-inf``/``inf`` when unbounded)."""
  if not isinstance(e, _DimExpr):
    return (int(e), int(e))
  return _DecisionByElimination.build(e.scope).bounds(e, prec, add_implicit_constraints=True)


_install(bounds_decision=bounds_decision)


def _floor_div_limit(a, b):
  """``floor(a / b)`` where ``a`` or ``b`` may be infinite (then: the limit of the
  quotient; b is never 0)."""
  if not np.isinf(b):
    if not np.isinf(a):
      return math.floor(a / b)
    return _INF if (a >= 0) == (b >= 0) else -_INF
  if not np.isinf(a):
    return 0 if (a >= 0) == (b >= 0) else -1
  return _INF if (a >= 0) == (b >= 0) else -_INF


class _DecisionByElimination:
  """The facts known in one scope, and bounds computed from them. Make one with ``build``:
  the facts from the explicit constraints are computed once per scope and copied."""

  def __init__(self, scope: SymbolicScope):
    self.scope = scope
    self._processed_for_internal_constraints: set = set()
    self._term_bounds: dict = {}        # term -> (lb, ub)
    self._expr_constraints: dict = {}   # leading term -> {(cmp, its coefficient, expr)}

  def initialize(self) -> "_DecisionByElimination":
    # In the user's order: which facts get derived depends on it.
    for constr in self.scope._explicit_constraints:
      if isinstance(constr.diff, _DimExpr):
        self.add_implicit_constraints_expr(constr.diff)
      self.combine_and_add_constraint(constr.cmp, constr.diff, 0, constr.debug_str)
      self.scope._bounds_cache.clear()
    return self

  @staticmethod
  def build(scope: SymbolicScope) -> "_DecisionByElimination":
    if not scope._initialized or not scope._explicit_constraints:
      return _DecisionByElimination(scope).initialize()
    if scope._decision_initial_state is None:
      scope._decision_initial_state = _DecisionByElimination(scope).initialize()
    first = scope._decision_initial_state
    copy = _DecisionByElimination(scope)
    copy._processed_for_internal_constraints = set(first._processed_for_internal_constraints)
    copy._term_bounds = dict(first._term_bounds)
    copy._expr_constraints = {t: set(cs) for t, cs in first._expr_constraints.items()}
    return copy

  # ---- adding facts

  def combine_and_add_constraint(self, cmp: Comparator, e1, e2, debug_str: str | None = None):
    """Adds ``e1 >= e2`` (or ``e1 == e2``), and the facts it makes by eliminating a term
    with each fact already known."""
    if isinstance(e1, float):
      if np.isinf(e1) and e1 >= 0 and cmp is Comparator.GEQ:
        return
      e1 = int(e1)
    if isinstance(e2, float):
      if np.isinf(e2) and e2 <= 0 and cmp is Comparator.GEQ:
        return
      e2 = int(e2)
    e = e1 - e2
    if (const := _DimExpr._to_constant(e)) is not None:
      if const < 0:
        raise ValueError(f"Unsatisfiable constraint: {debug_str or f'{e1} >= {e2}'}")
      return
    self.add_to_state(cmp, e, debug_str)
    for new_cmp, new_e in self.combine_constraint_with_existing(cmp, e, debug_str):
      self.add_to_state(new_cmp, new_e, None)

  def add_to_state(self, cmp: Comparator, e: _DimExpr, debug_str: str | None):
    """Records ``e >= 0`` (or ``== 0``) without deriving anything from it."""
    single = e._to_single_term()
    if single is None:
      lead_t, lead_k = e._leading_term
      self._expr_constraints.setdefault(lead_t, set()).add((cmp, lead_k, e))
      return
    n, k, t = single  # n + k*t (cmp) 0
    lb, ub = self._term_bounds.get(t, (-_INF, _INF))
    if cmp is Comparator.EQ:
      if n % k:
        raise ValueError(f"Unsatisfiable constraint: {debug_str}")
      lb = max(lb, -(n // k))
      ub = min(ub, -(n // k))
    elif k > 0:
      lb = max(lb, math.ceil(-n / k))
    else:
      ub = min(ub, math.floor(-n / k))
    if lb > ub:
      raise ValueError(f"Unsatisfiable constraint: {debug_str}")
    self._term_bounds[t] = (lb, ub)

  def combine_term_with_existing(self, t: _DimTerm, t_k: int, *, scope: SymbolicScope,
                                 only_smaller_than_t: bool = True) -> list:
    """The facts that can eliminate ``t`` from something containing ``t * t_k``: tuples
    ``(cmp, c, c_s, t_s)`` with ``c (cmp) 0`` known, ``c_s > 0``, and ``t*t_k*t_s + c*c_s``
    free of ``t``. With ``only_smaller_than_t``, only facts whose leading term is ``t``
    (so the combination has only terms smaller than ``t``)."""
    found = []
    t_lb, t_ub = self._term_bounds.get(t, (-_INF, _INF))
    t_e = _DimExpr(((t, 1),), scope)
    if t_lb == t_ub:
      found.append((Comparator.EQ, t_e - int(t_lb), abs(t_k), -_sign(t_k)))
    else:
      if t_lb > -_INF:  # t - lb >= 0
        found.append((Comparator.GEQ, t_e - int(t_lb), abs(t_k), -_sign(t_k)))
      if t_ub < _INF:   # ub - t >= 0
        found.append((Comparator.GEQ, _DimExpr(((t, -1),), scope) + int(t_ub), abs(t_k),
                      _sign(t_k)))
    groups = ([self._expr_constraints.get(t, set())] if only_smaller_than_t
              else self._expr_constraints.values())
    for group in groups:
      for c_cmp, _, c in group:
        c_t_k = dict(c._sorted_terms).get(t)
        if c_t_k is not None:
          found.append((c_cmp, c, abs(t_k), -c_t_k * _sign(t_k)))
    return found

  def combine_constraint_with_existing(self, cmp: Comparator, e: _DimExpr,
                                       debug_str: str | None) -> set:
    """The facts made by eliminating each term of ``e (cmp) 0`` with the known facts."""
    derived = set()
    for t, t_k in e._sorted_terms:
      if t.is_constant:
        continue
      for c_cmp, c, c_s, t_s in self.combine_term_with_existing(
          t, t_k, only_smaller_than_t=False, scope=e.scope):
        # Scaling an inequality by a negative number flips it: only equalities may be.
        if t_s < 0 and cmp is not Comparator.EQ:
          continue
        new_cmp = (Comparator.EQ if cmp is Comparator.EQ and c_cmp is Comparator.EQ
                   else Comparator.GEQ)
        new_e = _DimExpr._linear_combination(e, t_s, c, c_s, e.scope)
        if (const := _DimExpr._to_constant(new_e)) is not None:
          if const < 0 or (new_cmp is Comparator.EQ and const != 0):
            raise ValueError(f"Unsatisfiable constraints: {debug_str or f'{e} >= 0'}")
        else:
          derived.add((new_cmp, new_e))
    return derived

  # ---- bounds

  def bounds(self, e, prec: BoundsPrecision, add_implicit_constraints: bool = False) -> tuple:
    """``(lb, ub)`` of ``e``; ``add_implicit_constraints`` first adds the facts that the
    terms of ``e`` carry."""
    if (const := _DimExpr._to_constant(e)) is not None:
      return (const, const)
    # A cached answer may be too coarse for a more demanding precision; then recompute.
    cached = self.scope._bounds_cache.get(e)
    if cached is not None:
      lb, ub, cached_prec = cached
      if prec._bounds_are_sufficient(lb, ub) or cached_prec.value >= prec.value:
        return (lb, ub)
    if add_implicit_constraints:
      self.add_implicit_constraints_expr(e)
    lb, ub = self._bounds_for_sorted_terms(e.scope, e._sorted_terms, 0, prec)
    lb = int(lb) if lb > -_INF else lb
    ub = int(ub) if ub < _INF else ub
    self.scope._bounds_cache[e] = (lb, ub, prec)
    return (lb, ub)

  def _bounds_for_sorted_terms(self, scope: SymbolicScope, e, i: int,
                               prec: BoundsPrecision) -> tuple:
    """Bounds of the sum of the terms ``e[i:]``."""
    if i >= len(e):
      return (0, 0)
    t, t_k = e[i]
    if t.is_constant:
      return (t_k, t_k)
    lb, ub = -_INF, _INF
    for c_cmp, c, c_s, t_s in self.combine_term_with_existing(
        t, t_k, only_smaller_than_t=True, scope=scope):
      # rest = e[i:]*t_s + c*c_s has only terms smaller than t; as c >= 0 and c_s > 0,
      # e[i:]*t_s <= rest (and == rest when c == 0).
      rest = _merge_sorted(e, i, t_s, c._sorted_terms, 0, c_s)
      rest_lb, rest_ub = self._bounds_for_sorted_terms(scope, rest, 0, BoundsPrecision.BEST)
      if rest_ub < _INF:
        if t_s > 0:
          ub = min(ub, math.floor(rest_ub / t_s))
        else:
          lb = max(lb, math.ceil(rest_ub / t_s))
      if rest_lb > -_INF and c_cmp is Comparator.EQ:
        if t_s > 0:
          lb = max(lb, math.ceil(rest_lb / t_s))
        else:
          ub = min(ub, math.floor(rest_lb / t_s))
      if prec._bounds_are_sufficient(lb, ub):
        return (lb, ub)

    f = t.to_factor()
    if f is not None and f.operation in (_DimFactor.MAX, _DimFactor.MIN):
      # k*max(x, y) + rest is the max of k*x + rest and k*y + rest when k > 0 (the min when
      # k < 0), and the other way around for min.
      x, y = f.operands
      x_lb, x_ub = self._bounds_for_sorted_terms(
          scope, _merge_sorted(e, i + 1, 1, x._sorted_terms, 0, t_k), 0, BoundsPrecision.BEST)
      y_lb, y_ub = self._bounds_for_sorted_terms(
          scope, _merge_sorted(e, i + 1, 1, y._sorted_terms, 0, t_k), 0, BoundsPrecision.BEST)
      pick = max if (t_k > 0) == (f.operation == _DimFactor.MAX) else min
      lb = max(lb, pick(x_lb, y_lb))
      ub = min(ub, pick(x_ub, y_ub))
    return (lb, ub)

  # ---- implicit facts of terms

  def add_implicit_constraints_expr(self, e: _DimExpr):
    for t, _ in e._sorted_terms:
      if not t.is_constant:
        self.add_implicit_constraints_term(t)

  def add_implicit_constraints_term(self, t: _DimTerm):
    if t in self._processed_for_internal_constraints:
      return
    self._processed_for_internal_constraints.add(t)
    t_e = _DimExpr._from_term(t, 1, self.scope)
    f = t.to_factor()
    if f is None:
      # A product: its bounds are among the products of its factors' bounds.
      factor_bounds = []
      for f1, f1_exp in t._factors:
        f1_t = _DimTerm.from_factor(f1, 1)
        self.add_implicit_constraints_term(f1_t)
        lo, hi = self.bounds(_DimExpr._from_term(f1_t, 1, self.scope), BoundsPrecision.BEST)
        factor_bounds.append((lo ** f1_exp, hi ** f1_exp))
      products = [math.prod(p) for p in itertools.product(*factor_bounds)]
      self.combine_and_add_constraint(Comparator.GEQ, t_e, min(products))
      self.combine_and_add_constraint(Comparator.GEQ, max(products), t_e)
      return
    if f.to_var() is not None:
      self.combine_and_add_constraint(Comparator.GEQ, t_e, 1)  # a size is >= 1
      return
    for operand in f.operands:
      self.add_implicit_constraints_expr(operand)
    x, y = f.operands
    if f.operation == _DimFactor.MOD:
      y_lb, y_ub = self.bounds(y, BoundsPrecision.FOR_GEQ0_OR_LT0)
      if y_lb > 0:    # 0 <= mod(x, y) <= y - 1
        self.combine_and_add_constraint(Comparator.GEQ, t_e, 0)
        self.combine_and_add_constraint(Comparator.GEQ, y - 1, t_e)
        self.combine_and_add_constraint(Comparator.GEQ, y_ub - 1, t_e)
      elif y_ub < 0:  # y + 1 <= mod(x, y) <= 0
        self.combine_and_add_constraint(Comparator.GEQ, t_e, y + 1)
        self.combine_and_add_constraint(Comparator.GEQ, t_e, y_lb + 1)
        self.combine_and_add_constraint(Comparator.GEQ, 0, t_e)
      return
    if f.operation == _DimFactor.FLOORDIV:
      x_lb, x_ub = self.bounds(x, BoundsPrecision.BEST)
      y_lb, y_ub = self.bounds(y, BoundsPrecision.BEST)
      if y_lb <= 0 <= y_ub:
        raise InconclusiveDimensionOperation(f"Possible division by 0 in division by {y}")
      quotients = [_floor_div_limit(a, b) for a in (x_lb, x_ub) for b in (y_lb, y_ub)]
      self.combine_and_add_constraint(Comparator.GEQ, t_e, min(quotients))
      self.combine_and_add_constraint(Comparator.GEQ, max(quotients), t_e)
      if y_lb >= 0:
        if x_lb >= 0:
          self.combine_and_add_constraint(Comparator.GEQ, t_e, 0)
        # x == y * floordiv(x, y) + mod(x, y), with mod's own facts.
        mod_e = _DimExpr._from_operation(_DimFactor.MOD, x, y, scope=self.scope)
        if isinstance(mod_e, _DimExpr):
          self.add_implicit_constraints_expr(mod_e)
        self.combine_and_add_constraint(Comparator.EQ, x, y * t_e + mod_e)
      return
    x_lb, x_ub = self.bounds(x, BoundsPrecision.BEST)
    y_lb, y_ub = self.bounds(y, BoundsPrecision.BEST)
    if f.operation == _DimFactor.MAX:
      self.combine_and_add_constraint(Comparator.GEQ, t_e, max(x_lb, y_lb))
      self.combine_and_add_constraint(Comparator.GEQ, max(x_ub, y_ub), t_e)
      self.combine_and_add_constraint(Comparator.GEQ, t_e, x)
      self.combine_and_add_constraint(Comparator.GEQ, t_e, y)
    else:  # MIN
      self.combine_and_add_constraint(Comparator.GEQ, t_e, min(x_lb, y_lb))
      self.combine_and_add_constraint(Comparator.GEQ, min(x_ub, y_ub), t_e)
      self.combine_and_add_constraint(Comparator.GEQ, x, t_e)
      self.combine_and_add_constraint(Comparator.GEQ, y, t_e)
