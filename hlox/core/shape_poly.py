"""Symbolic dimension sizes (JAX's shape polymorphism): the algebra.

A symbolic size is a ``_DimExpr``: a sum of terms with integer coefficients, a term being a
product of factors raised to positive powers, a factor being a dimension variable (``b``) or
an operation that the algebra cannot resolve (``floordiv(e1, e2)``, ``mod(e1, e2)``,
``max(e1, e2)``, ``min(e1, e2)``). Expressions are kept in one normal form (terms sorted by
a syntactic order, largest first; a result that is a constant is a Python ``int``), so that
equal expressions print, hash and compare alike.

Every expression belongs to a ``SymbolicScope``, which holds the user's constraints on the
variables. ``>=`` and friends answer from lower and upper bounds that the decision procedure
(``shape_poly_decision.py``) derives; when the bounds do not decide, they raise
``InconclusiveDimensionOperation``; it installs itself here (``_install``), since it needs
these classes and they need it. Scopes are ``shape_poly_scope.py``, the parser of the spec
syntax ``shape_poly_parser.py``.
"""
from __future__ import annotations

import enum
import operator
from typing import Any, Callable, Union

from hlox.errors import ConcretizationTypeError, TracerIntegerConversionError
from hlox.errors import InconclusiveDimensionOperation as _InconclusiveBase

DimSize = Union["_DimExpr", int]
_Scope = Any  # a SymbolicScope (shape_poly_scope.py, which builds on this module)


class InconclusiveDimensionOperation(_InconclusiveBase):
  """An operation on symbolic dimensions whose result depends on the values they take."""

  _explanation = (
      "\nA comparison of symbolic dimensions is answered only when it holds (or fails) for "
      "every value of the dimension variables that the scope's constraints allow. Add a "
      "constraint to the symbolic scope (``constraints=`` of ``symbolic_shape``) or rewrite "
      "the computation so it does not depend on the comparison.")

  def __init__(self, message: str):
    super().__init__(message + self._explanation)


class UnexpectedDimVar(Exception):
  """A dimension variable with no value in the environment of an evaluation."""


class Comparator(enum.Enum):
  """The relation of a constraint: ``e == 0`` or ``e >= 0``."""
  EQ = 1
  GEQ = 2


class BoundsPrecision(enum.Enum):
  """How hard the bounds computation works: it may stop as soon as its bounds are enough
  for the question asked. A larger value asks for more."""
  FOR_GEQ0_OR_LEQ0 = 0  # max/min simplification: enough when lb >= 0 or ub <= 0
  FOR_GEQ0_OR_LT0 = 1   # deciding e >= 0: enough when lb >= 0 or ub < 0
  BEST = 2              # never stop early

  def _bounds_are_sufficient(self, lb, ub) -> bool:
    if self is BoundsPrecision.FOR_GEQ0_OR_LEQ0:
      return lb >= 0 or ub <= 0
    if self is BoundsPrecision.FOR_GEQ0_OR_LT0:
      return lb >= 0 or ub < 0
    return False


def _cmp(x, y) -> int:
  return (x > y) - (x < y)


def _cmp_seq(xs, ys, cmp_elem) -> int:
  """Lexicographic comparison of two sequences with ``cmp_elem`` for the elements."""
  for x, y in zip(xs, ys):
    if c := cmp_elem(x, y):
      return c
  return _cmp(len(xs), len(ys))


def _merge_sorted(pairs1, i1: int, k1: int, pairs2, i2: int, k2: int) -> list:
  """``pairs1[i1:] * k1 + pairs2[i2:] * k2`` for sequences of ``(item, coefficient)`` sorted
  largest item first (terms of an expression, or factors of a term with their exponents);
  the result is sorted the same way and has no zero coefficients."""
  out = []
  n1, n2 = len(pairs1), len(pairs2)
  while i1 < n1 and i2 < n2:
    x1, c1 = pairs1[i1]
    x2, c2 = pairs2[i2]
    order = x1._syntactic_cmp(x2)
    if order > 0:
      out.append((x1, c1 * k1))
      i1 += 1
    elif order < 0:
      out.append((x2, c2 * k2))
      i2 += 1
    else:
      i1 += 1
      i2 += 1
      if c := c1 * k1 + c2 * k2:
        out.append((x1, c))
  out.extend((x, c * k1) for x, c in pairs1[i1:] if c * k1)
  out.extend((x, c * k2) for x, c in pairs2[i2:] if c * k2)
  return out


# Hooks installed by the layers that know arrays (``dim_as_value``: a dimension as an
# integer array value): the algebra itself never computes on arrays.
_array_hooks: dict[str, Callable] = {}


def _as_array(e: "_DimExpr"):
  hook = _array_hooks.get("dim_as_value")
  if hook is None:
    raise NotImplementedError(
        f"the symbolic dimension '{e}' was used as an array value: that works only while a "
        "function is traced for jax.export with symbolic shapes")
  return hook(e)


class _DimFactor:
  """A dimension variable, or an operation on expressions that stays unevaluated."""

  FLOORDIV = "floordiv"
  MOD = "mod"
  MAX = "max"
  MIN = "min"

  __slots__ = ("var", "operation", "operands", "_hash", "_size")

  def __init__(self, *operands: "_DimExpr", var: str | None = None,
               operation: str | None = None):
    assert (var is None) != (operation is None)
    self.var = var
    self.operation = operation
    self.operands = operands
    self._hash = None
    # A variable has size 1, an operation more than any of its operands: sorting by size
    # first puts simpler factors first and makes most comparisons cheap.
    self._size = 1 if var is not None else 1 + sum(o._size for o in operands)

  @staticmethod
  def from_var(v: str) -> "_DimFactor":
    return _DimFactor(var=v)

  @staticmethod
  def from_operation(operation: str, *operands: DimSize, scope: _Scope):
    return _DimFactor(*(_ensure_poly(o, operation, scope) for o in operands),
                      operation=operation)

  def to_var(self) -> str | None:
    return self.var

  def get_vars(self) -> set[str]:
    if self.var is not None:
      return {self.var}
    return set().union(*(o._get_vars() for o in self.operands))

  def __str__(self):
    if self.var is not None:
      return self.var
    return f"{self.operation}({', '.join(map(str, self.operands))})"

  __repr__ = __str__

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self.var, self.operation, *self.operands))
    return self._hash

  def _syntactic_cmp(self, other: "_DimFactor") -> int:
    """Order for sorting (unrelated to the values): size, then name or operation, then the
    operands."""
    if c := _cmp(self._size, other._size):
      return c
    if self.var is not None:
      return _cmp(self.var, other.var)
    if c := _cmp(self.operation, other.operation):
      return c
    return _cmp_seq(self.operands, other.operands, lambda x, y: x._syntactic_cmp(y))

  def __eq__(self, other):
    return isinstance(other, _DimFactor) and self._syntactic_cmp(other) == 0

  def __lt__(self, other): return self._syntactic_cmp(other) < 0
  def __le__(self, other): return self._syntactic_cmp(other) <= 0
  def __gt__(self, other): return self._syntactic_cmp(other) > 0
  def __ge__(self, other): return self._syntactic_cmp(other) >= 0

  def evaluate(self, env: dict, scope: _Scope):
    if self.var is not None:
      if self.var in env:
        return env[self.var]
      # An equality constraint may define the variable through others.
      rewritten = _DimExpr._from_var(self.var, scope)
      if not isinstance(rewritten, _DimExpr):
        return rewritten
      if rewritten._to_var() != self.var:
        return rewritten._evaluate(env)
      raise UnexpectedDimVar(
          f"Encountered dimension variable '{self.var}' that is not appearing in the shapes "
          f"of the function arguments (those have {sorted(env)}). Every dimension variable "
          "must be solvable from the argument shapes.")
    x, y = (o._evaluate(env) for o in self.operands)
    if self.operation == _DimFactor.FLOORDIV:
      return divmod(x, y)[0]
    if self.operation == _DimFactor.MOD:
      return divmod(x, y)[1]
    is_max = self.operation == _DimFactor.MAX
    if is_dim(x) and is_dim(y):
      return max_dim(x, y) if is_max else min_dim(x, y)
    # Values of a program (``interpreters/dim_lowering.py``) say how to take their max/min.
    kind = type(y if is_dim(x) else x)
    return kind.dim_max(x, y) if is_max else kind.dim_min(x, y)


class _DimTerm:
  """A product of factors with positive exponents: ``((factor, exponent), ...)`` sorted
  largest factor first. No factors is the constant term 1."""

  __slots__ = ("_factors", "_hash", "_size")

  def __init__(self, sorted_factors):
    self._factors = tuple(sorted_factors)
    self._hash = None
    self._size = sum(1 + k * f._size for f, k in self._factors)

  @staticmethod
  def from_var(v: str) -> "_DimTerm":
    return _DimTerm(((_DimFactor.from_var(v), 1),))

  @staticmethod
  def from_factor(f: _DimFactor, f_exp: int) -> "_DimTerm":
    return _DimTerm(((f, f_exp),))

  @staticmethod
  def from_operation(operation: str, *operands: DimSize, scope: _Scope):
    return _DimTerm(((_DimFactor.from_operation(operation, *operands, scope=scope), 1),))

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(self._factors)
    return self._hash

  def __str__(self):
    # Printed smallest factor first: ``a*b^2``.
    return "*".join(str(f) if k == 1 else f"{f}^{k}" for f, k in sorted(self._factors))

  __repr__ = __str__

  @property
  def is_constant(self) -> bool:
    return not self._factors

  def to_factor(self) -> _DimFactor | None:
    """The single factor (with exponent 1) that this term is, else None."""
    if len(self._factors) == 1 and self._factors[0][1] == 1:
      return self._factors[0][0]
    return None

  def to_var(self) -> str | None:
    f = self.to_factor()
    return None if f is None else f.to_var()

  def get_vars(self) -> set[str]:
    return set().union(*(f.get_vars() for f, _ in self._factors))

  def _syntactic_cmp(self, other: "_DimTerm") -> int:
    if c := _cmp(self._size, other._size):
      return c
    # A higher power of the same factor makes a larger term.
    return _cmp_seq(self._factors, other._factors,
                    lambda x, y: x[0]._syntactic_cmp(y[0]) or _cmp(x[1], y[1]))

  def __eq__(self, other):
    return isinstance(other, _DimTerm) and self._syntactic_cmp(other) == 0

  def __ne__(self, other):
    return not self == other

  def __lt__(self, other): return self._syntactic_cmp(other) < 0
  def __le__(self, other): return self._syntactic_cmp(other) <= 0
  def __gt__(self, other): return self._syntactic_cmp(other) > 0
  def __ge__(self, other): return self._syntactic_cmp(other) >= 0

  def mul(self, other: "_DimTerm") -> "_DimTerm":
    return _DimTerm(_merge_sorted(self._factors, 0, 1, other._factors, 0, 1))

  def divide(self, divisor: "_DimTerm") -> "_DimTerm":
    """The quotient, when ``divisor``'s factors all appear here with no larger exponent;
    else InconclusiveDimensionOperation."""
    factors = _merge_sorted(self._factors, 0, 1, divisor._factors, 0, -1)
    if any(k <= 0 for _, k in factors):
      raise InconclusiveDimensionOperation(f"Cannot divide {self} by {divisor}.")
    return _DimTerm(factors)

  def evaluate(self, env: dict, scope: _Scope):
    result = 1
    for f, k in self._factors:
      value = f.evaluate(env, scope)
      for _ in range(k):
        result = _mul_values(result, value)
    return result


_DimTerm_one = _DimTerm(())


def _add_values(x, y):
  """``x + y`` for evaluation results (ints, expressions or traced values), skipping a
  literal 0 so that no needless operation is staged."""
  if isinstance(x, int) and x == 0:
    return y
  if isinstance(y, int) and y == 0:
    return x
  return x + y


def _mul_values(x, y):
  if isinstance(x, int) and x == 1:
    return y
  if isinstance(y, int) and y == 1:
    return x
  return x * y


def _convertible_to_int(p) -> bool:
  try:
    operator.index(p)
    return True
  except Exception:
    return False


# Traced values are never taken as integer sizes, even those whose value is known: they
# combine with a symbolic size as arrays. (``tracer.py`` registers its class: it sits above.)
_tracer_types: tuple = ()


def register_tracer_type(cls) -> None:
  global _tracer_types
  _tracer_types = (*_tracer_types, cls)


def _convertible_to_poly(p) -> bool:
  return isinstance(p, _DimExpr) or (not isinstance(p, _tracer_types) and
                                     _convertible_to_int(p))


def _ensure_poly(p: DimSize, operation_name: str, scope: _Scope) -> "_DimExpr":
  """``p`` as an expression of ``scope`` (an integer becomes a constant expression, not
  normalized back to an int)."""
  if isinstance(p, _DimExpr):
    scope._check_same_scope(p, when=f"for operation {operation_name}")
    return p
  if _convertible_to_int(p):
    return _DimExpr(((_DimTerm_one, operator.index(p)),), scope)
  raise TypeError(f"Symbolic dimension {operation_name} not supported for {p}.")


class _DimExpr:
  """A symbolic dimension size: ``((term, coefficient), ...)`` sorted largest term first,
  the constant (if any) last. Build them through the arithmetic operators or the
  ``_from_*`` constructors, which normalize; a result known to be constant is an ``int``."""

  __array_priority__ = 1000  # NumPy defers to our reflected operators
  __slots__ = ("_sorted_terms", "_scope", "_hash", "_size")

  def __init__(self, sorted_terms, scope: _Scope):
    self._sorted_terms = tuple(sorted_terms) or ((_DimTerm_one, 0),)
    self._scope = scope
    self._hash = None
    self._size = sum(1 + abs(k) * t._size for t, k in self._sorted_terms)

  @property
  def scope(self) -> _Scope:
    return self._scope

  # ---- construction and normalization

  @staticmethod
  def _coeff_to_sorted_terms(coeffs: dict) -> list:
    return sorted(((t, k) for t, k in coeffs.items() if k != 0), reverse=True)

  @staticmethod
  def _from_term(t: _DimTerm, t_k: int, scope: _Scope) -> DimSize:
    return _DimExpr._normalize_sorted_terms(((t, t_k),), scope)

  @staticmethod
  def _from_var(v: str, scope: _Scope) -> DimSize:
    return _DimExpr._from_term(_DimTerm.from_var(v), 1, scope)

  @staticmethod
  def _from_operation(operation: str, *operands: DimSize, scope: _Scope):
    return _DimExpr._from_term(_DimTerm.from_operation(operation, *operands, scope=scope), 1,
                               scope)

  @staticmethod
  def _rewrites_for_term(t: _DimTerm, t_k: int, scope: _Scope) -> list:
    """The ``(term, coefficient)`` updates that an equality constraint of ``scope``
    (``t * k == e``) makes to a ``t * t_k`` in an expression: empty if none applies."""
    rules = scope._normalization_rules
    if not rules:
      return []
    after, after_k = rules.get(t, (None, 0))
    if after is not None and t_k % after_k == 0:
      return [(t, -t_k), *((t2, k2 * (t_k // after_k)) for t2, k2 in after._sorted_terms)]
    if len(t._factors) > 1:
      # A product: a rule may apply to one of its factors (with its exponent).
      for f, f_exp in t._factors:
        one = _DimTerm(((f, f_exp),))
        after, after_k = rules.get(one, (None, 0))
        if after is not None and t_k % after_k == 0:
          rest = t.divide(one)
          return [(t, -t_k),
                  *((t2.mul(rest), k2 * (t_k // after_k)) for t2, k2 in after._sorted_terms)]
    return []

  @staticmethod
  def _normalize_sorted_terms(terms, scope: _Scope) -> DimSize:
    """The normal form of sorted, nonzero ``terms``: with the scope's equality rewrites
    applied (the first one that applies) and as an ``int`` when constant."""
    for t, t_k in terms:
      if updates := _DimExpr._rewrites_for_term(t, t_k, scope):
        coeffs = dict(terms)
        for t2, k2 in updates:
          if k2:
            coeffs[t2] = coeffs.get(t2, 0) + k2
        terms = _DimExpr._coeff_to_sorted_terms(coeffs)
        break
    if not terms:
      return 0
    if terms[0][0].is_constant:
      return terms[0][1]
    return _DimExpr(terms, scope)

  @staticmethod
  def _linear_combination(e1: DimSize, k1: int, e2: DimSize, k2: int,
                          scope: _Scope) -> DimSize:
    """``e1 * k1 + e2 * k2``, normalized."""
    if isinstance(e1, _DimExpr):
      if isinstance(e2, _DimExpr):
        e1.scope._check_same_scope(e2, when="for linear combination")
      terms1 = e1._sorted_terms
    elif not isinstance(e2, _DimExpr):
      return e1 * k1 + e2 * k2
    else:
      terms1 = ((_DimTerm_one, operator.index(e1)),)
    if isinstance(e2, _DimExpr):
      terms2 = e2._sorted_terms
    else:
      e2 = operator.index(e2)  # (an integer array compares as an array: use its int)
      terms2 = ((_DimTerm_one, e2),) if e2 != 0 else ()
    return _DimExpr._normalize_sorted_terms(_merge_sorted(terms1, 0, k1, terms2, 0, k2),
                                            scope)

  # ---- inspection

  @property
  def _leading_term(self) -> tuple:
    return self._sorted_terms[0]

  def _to_single_term(self):
    """``(k, c, term)`` when the expression is ``k + c * term``, else None."""
    k, c, term = 0, 0, None
    for t, t_k in self._sorted_terms:
      if t.is_constant:
        k = t_k
      elif term is None:
        term, c = t, t_k
      else:
        return None
    return (k, c, term)

  def _to_term(self) -> _DimTerm | None:
    if len(self._sorted_terms) == 1 and self._sorted_terms[0][1] == 1:
      return self._sorted_terms[0][0]
    return None

  def _to_factor(self) -> _DimFactor | None:
    t = self._to_term()
    return None if t is None else t.to_factor()

  def _to_var(self) -> str | None:
    f = self._to_factor()
    return None if f is None else f.to_var()

  @staticmethod
  def _to_constant(e: DimSize) -> int | None:
    if not isinstance(e, _DimExpr):
      return int(e)
    t, k = e._leading_term
    return k if t.is_constant else None

  @property
  def _is_constant(self) -> bool:
    return _DimExpr._to_constant(self) is not None

  def _get_vars(self) -> set[str]:
    return set().union(*(t.get_vars() for t, _ in self._sorted_terms))

  get_vars = _get_vars

  def _syntactic_cmp(self, other: "_DimExpr") -> int:
    if c := _cmp(self._size, other._size):
      return c
    return _cmp_seq(self._sorted_terms, other._sorted_terms,
                    lambda x, y: x[0]._syntactic_cmp(y[0]) or _cmp(x[1], y[1]))

  def _eq(self, other: "_DimExpr") -> bool:
    # Equal when the difference normalizes to the constant 0. Comparing bounds instead
    # would be more complete, but equality is used by hashing and must be cheap and total.
    diff = self - other
    return not isinstance(diff, _DimExpr) and diff == 0

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self._sorted_terms, self._scope))
    return self._hash

  def __str__(self):
    pieces = []
    for t, k in self._sorted_terms:
      sign = "+" if k > 0 else "-"
      if t.is_constant:
        pieces.append(f"{sign} {abs(k)}" if k else "0")
      elif abs(k) == 1:
        pieces.append(f"{sign} {t}")
      else:
        pieces.append(f"{sign} {abs(k)}*{t}")
    text = " ".join(pieces)
    return text[2:] if text.startswith("+ ") else text

  __repr__ = __str__

  # ---- arithmetic (exact: +, -, * always give an expression)

  def __add__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__add__(other)
    if isinstance(other, int) and other == 0:
      return self
    return _DimExpr._linear_combination(self, 1, other, 1, self._scope)

  def __radd__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__radd__(other)
    if isinstance(other, int) and other == 0:
      return self
    return _DimExpr._linear_combination(self, 1, other, 1, self._scope)

  def __sub__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__sub__(other)
    if isinstance(other, int) and other == 0:
      return self
    return _DimExpr._linear_combination(self, 1, other, -1, self._scope)

  def __rsub__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__rsub__(other)
    return _DimExpr._linear_combination(self, -1, other, 1, self._scope)

  def __neg__(self):
    return _DimExpr._linear_combination(self, -1, 0, 0, self._scope)

  def __mul__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__mul__(other)
    if isinstance(other, int):
      if other == 1:
        return self
      if other == 0:
        return 0
      return _DimExpr._linear_combination(self, other, 0, 0, self._scope)
    other = _ensure_poly(other, "mul", self._scope)
    coeffs: dict = {}
    for t1, k1 in self._sorted_terms:
      for t2, k2 in other._sorted_terms:
        t = t1.mul(t2)
        coeffs[t] = coeffs.get(t, 0) + k1 * k2
    return _DimExpr._normalize_sorted_terms(_DimExpr._coeff_to_sorted_terms(coeffs),
                                            self._scope)

  def __rmul__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__rmul__(other)
    if isinstance(other, int):
      return self.__mul__(other)
    return _ensure_poly(other, "mul", self._scope).__mul__(self)

  def __pow__(self, power, modulo=None):
    if modulo is not None:
      raise NotImplementedError("__pow__ modulo not implemented")
    if isinstance(power, _DimExpr):
      return power.__rpow__(self)
    if power != int(power):
      raise ValueError("Symbolic dimension cannot be raised to non-integer powers: "
                       f"'{self}' ** '{power}'")
    if power < 0:
      raise ValueError("Symbolic dimension cannot be raised to negative powers: "
                       f"'{self}' ** '{power}'")
    result = 1
    for _ in range(int(power)):
      result = result * self
    return result

  def __rpow__(self, other, modulo=None):
    if modulo is not None:
      raise NotImplementedError("__rpow__ modulo not implemented")
    return _as_array(self).__rpow__(other)

  def __truediv__(self, divisor):
    return _as_array(self).__truediv__(divisor)  # "/" gives a float, never a dimension

  def __rtruediv__(self, dividend):
    return _as_array(self).__rtruediv__(dividend)

  # ---- floor division (exact when the algebra can divide, else a floordiv/mod factor)

  def __floordiv__(self, divisor):
    if not _convertible_to_poly(divisor):
      return _as_array(self).__floordiv__(divisor)
    return self._divmod(divisor)[0]

  def __rfloordiv__(self, other):
    if not _convertible_to_poly(other):
      return _as_array(self).__rfloordiv__(other)
    return _ensure_poly(other, "floordiv", self._scope).__floordiv__(self)

  def __mod__(self, divisor):
    if not _convertible_to_poly(divisor):
      return _as_array(self).__mod__(divisor)
    return self._divmod(divisor)[1]

  def __rmod__(self, dividend):
    if not _convertible_to_poly(dividend):
      return _as_array(self).__rmod__(dividend)
    return _ensure_poly(dividend, "mod", self._scope).__mod__(self)

  def __divmod__(self, divisor):
    if not _convertible_to_poly(divisor):
      return _as_array(self).__divmod__(divisor)
    return self._divmod(divisor)

  def __rdivmod__(self, dividend):
    if not _convertible_to_poly(dividend):
      return _as_array(self).__rdivmod__(dividend)
    return _ensure_poly(dividend, "divmod", self._scope).__divmod__(self)

  def _divmod(self, divisor: DimSize) -> tuple:
    """Floor division with remainder. Polynomial long division by leading terms; when it
    does not come out exactly (a symbolic divisor must leave remainder 0, a constant one
    leaves an integer remainder as ``divmod`` does), the quotient and remainder are the
    factors ``floordiv(self, divisor)`` and ``mod(self, divisor)``."""
    try:
      quotient, rest = 0, self  # invariant: self == quotient * divisor + rest
      while isinstance(rest, _DimExpr) and not rest._is_constant:
        t, k = rest._leading_term
        if isinstance(divisor, _DimExpr):
          d_t, d_k = divisor._leading_term
          q_t = t.divide(d_t)
        else:
          q_t, d_k = t, int(divisor)
        q_k, r_k = divmod(k, d_k)
        if r_k:
          raise InconclusiveDimensionOperation("")
        q = _DimExpr._from_term(q_t, q_k, self._scope)
        quotient = quotient + q
        rest = rest - q * divisor
      rest = int(rest)
      if isinstance(divisor, _DimExpr):
        if rest:
          raise InconclusiveDimensionOperation("")
        return quotient, 0
      q, r = divmod(rest, int(divisor))
      return quotient + q, r
    except InconclusiveDimensionOperation:
      return (_DimExpr._from_operation(_DimFactor.FLOORDIV, self, divisor, scope=self._scope),
              _DimExpr._from_operation(_DimFactor.MOD, self, divisor, scope=self._scope))

  # ---- conversions and comparisons

  def __int__(self):
    if (c := _DimExpr._to_constant(self)) is not None:
      return c
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension '{self}' used in a context that requires a constant")

  def __eq__(self, other: Any) -> bool:
    # Syntactic after normalization; expressions that are equal only under the bounds
    # (e.g. ``max(a, 1)`` and ``a``) compare unequal. Never raises: hashing relies on it.
    if isinstance(other, _DimExpr):
      if self._scope is not other._scope:
        return False
    elif not _convertible_to_int(other):
      return False
    diff = self - other
    return not isinstance(diff, _DimExpr) and bool(diff == 0)

  def __ne__(self, other: Any) -> bool:
    return not self.__eq__(other)

  def __ge__(self, other):
    return _geq_decision(self, other, lambda: f"'{self}' >= '{other}'")

  def __le__(self, other):
    return _geq_decision(other, self, lambda: f"'{self}' <= '{other}'")

  def __gt__(self, other):
    return not _geq_decision(other, self, lambda: f"'{self}' > '{other}'")

  def __lt__(self, other):
    return not _geq_decision(self, other, lambda: f"'{self}' < '{other}'")

  # ---- max and min: resolved when the bounds decide, else a max/min factor

  def _max_min(self, other, operation: str, self_first: bool):
    lb, ub = _bounds_decision(self - other, BoundsPrecision.FOR_GEQ0_OR_LEQ0)
    bigger, smaller = (self, other) if lb >= 0 else (other, self) if ub <= 0 else (None, None)
    if bigger is not None:
      return bigger if operation == _DimFactor.MAX else smaller
    operands = (self, other) if self_first else (other, self)
    return _DimExpr._from_operation(operation, *operands, scope=self._scope)

  def max(self, other: DimSize) -> DimSize:
    return self._max_min(other, _DimFactor.MAX, True)

  def rmax(self, other: DimSize) -> DimSize:
    return self._max_min(other, _DimFactor.MAX, False)

  def min(self, other: DimSize) -> DimSize:
    return self._max_min(other, _DimFactor.MIN, True)

  def rmin(self, other: DimSize) -> DimSize:
    return self._max_min(other, _DimFactor.MIN, False)

  # ---- values

  def _evaluate(self, env: dict):
    """The value for the variables' values in ``env`` (ints, expressions of another scope,
    or traced values)."""
    result = 0
    for t, k in self._sorted_terms:
      result = _add_values(result, _mul_values(t.evaluate(env, self._scope), k))
    return result

  def dimension_as_value(self):
    """This size as an integer array value (only while tracing for export)."""
    return _as_array(self)

  def __jax_array__(self):
    return _as_array(self)


def is_symbolic_dim(p) -> bool:
  """Whether ``p`` is a symbolic dimension size (made by ``symbolic_shape``)."""
  return isinstance(p, _DimExpr)


def is_constant_dim(d) -> bool:
  """Whether ``d`` is a known integer size."""
  return not isinstance(d, _DimExpr) and _convertible_to_int(d)


def is_constant_shape(shape) -> bool:
  """Whether every dimension of ``shape`` is a known integer."""
  return all(map(is_constant_dim, shape))


def is_dim(d) -> bool:
  return isinstance(d, _DimExpr) or _convertible_to_int(d)


def canonical_dim(d) -> DimSize:
  """A dimension size as shapes hold it: a symbolic one as it is, else a Python int
  (TypeError for what is not an integer)."""
  return d if type(d) is _DimExpr else operator.index(d)


def dimension_as_value(d):
  """A dimension size as a value to compute with: an int as it is, a symbolic one as an
  integer array value of the program being traced."""
  return d.dimension_as_value() if type(d) is _DimExpr else operator.index(d)


def _concrete_dim(d, context: str):
  if isinstance(d, _DimExpr):
    return d
  try:
    return operator.index(d)  # TypeError for an array that is not an integer scalar
  except TracerIntegerConversionError:
    raise ConcretizationTypeError(d, f"The problem arose with the {context}.") from None


def max_dim(d1: DimSize, d2: DimSize) -> DimSize:
  """The larger of two dimension sizes, constant or symbolic."""
  if is_constant_dim(d1) and is_constant_dim(d2):
    return max(d1, d2)
  d1 = _concrete_dim(d1, "argument `d1` of `core.max_dim`")
  d2 = _concrete_dim(d2, "argument `d2` of `core.max_dim`")
  return d1.max(d2) if isinstance(d1, _DimExpr) else d2.rmax(d1)


def min_dim(d1: DimSize, d2: DimSize) -> DimSize:
  """The smaller of two dimension sizes, constant or symbolic."""
  if is_constant_dim(d1) and is_constant_dim(d2):
    return min(d1, d2)
  d1 = _concrete_dim(d1, "argument `d1` of `core.min_dim`")
  d2 = _concrete_dim(d2, "argument `d2` of `core.min_dim`")
  return d1.min(d2) if isinstance(d1, _DimExpr) else d2.rmin(d1)


# ---- the pieces that other modules install (see the module docstring)

def _missing(*_):
  raise NotImplementedError("hlox.core.shape_poly is used before its decision procedure "
                            "was installed")


_bounds_decision: Callable = _missing


def _install(*, bounds_decision: Callable):
  global _bounds_decision
  _bounds_decision = bounds_decision


def _geq_decision(e1: DimSize, e2: DimSize, describe: Callable[[], str]) -> bool:
  """``e1 >= e2``, decided from the bounds of ``e1 - e2``; ``describe()`` names the
  comparison in the error when the bounds do not decide."""
  if isinstance(e1, _DimExpr):
    scope = e1.scope
    if isinstance(e2, _DimExpr):
      scope._check_same_scope(e2, f"when comparing {describe()}")
  elif isinstance(e2, _DimExpr):
    scope = e2.scope
  else:
    return int(e1) >= int(e2)
  lb, ub = _bounds_decision(e1 - e2, BoundsPrecision.FOR_GEQ0_OR_LT0)
  if lb >= 0:
    return True
  if ub < 0:
    return False
  where = f"\nUsing symbolic scope {scope}" if scope._explicit_constraints else ""
  raise InconclusiveDimensionOperation(
      f"Symbolic dimension comparison {describe()} is inconclusive.{where}")

