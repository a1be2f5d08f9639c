"""Symbolic dimensions in a lowered program (shape polymorphism).

A program whose arguments have symbolic dimensions is lowered with dynamic sizes
(``tensor<?x3xf32>``). Its ``main`` reads the actual sizes of its arguments
(``stablehlo.get_dimension_size``) and solves the dimension variables from them
(``core/shape_poly_solve.py``), as 64-bit integer scalars of the program. While the program is
lowered, those values are the current environment: a lowering rule that must state a
symbolic shape (a broadcast, a reshape, an iota, a constant) asks for it as a tensor of
sizes (``shape_tensor``) and uses the dynamic form of its op. Calling such a program with
arrays of known shapes refines the dynamic sizes away again (``runtime/``'s
``refine_polymorphic_shapes``) before it is compiled.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from hlox.core.shape_poly import _DimExpr
from hlox.core.shape_poly_solve import _SHAPE_ERRORS, equations, solve, specs_text

# The environments (variable name -> DimValue) of the programs being lowered, innermost
# last: lowering is synchronous, so the top one belongs to the program being built.
_envs: list = []


def current_env() -> dict | None:
  return _envs[-1] if _envs else None


def is_static(shape) -> bool:
  return not any(type(d) is _DimExpr for d in shape)


def _i64():
  return ir.RankedTensorType.get((), ir.IntegerType.get_signless(64))


def _const(v: int) -> ir.Value:
  return hlo.constant(ir.DenseElementsAttr.get_splat(
      _i64(), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))))


class DimValue:
  """An ``i64`` scalar of the program, with the integer arithmetic (floor division
  included) that evaluating a symbolic dimension needs."""

  __slots__ = ("value",)

  def __init__(self, value: ir.Value):
    self.value = value

  @staticmethod
  def lift(x) -> "DimValue":
    return x if isinstance(x, DimValue) else DimValue(_const(x))

  def _binary(self, other, op, swap=False):
    a, b = self.value, DimValue.lift(other).value
    return DimValue(op(b, a) if swap else op(a, b))

  def __add__(self, other): return self._binary(other, hlo.add)
  def __radd__(self, other): return self._binary(other, hlo.add, True)
  def __sub__(self, other): return self._binary(other, hlo.subtract)
  def __rsub__(self, other): return self._binary(other, hlo.subtract, True)
  def __mul__(self, other): return self._binary(other, hlo.multiply)
  def __rmul__(self, other): return self._binary(other, hlo.multiply, True)
  def __neg__(self): return DimValue(hlo.negate(self.value))

  def __divmod__(self, other):
    return _floor_divmod(self.value, DimValue.lift(other).value)

  def __rdivmod__(self, other):
    return _floor_divmod(DimValue.lift(other).value, self.value)

  def __floordiv__(self, other): return divmod(self, other)[0]
  def __mod__(self, other): return divmod(self, other)[1]

  @staticmethod
  def dim_max(x, y) -> "DimValue":
    return DimValue(hlo.maximum(DimValue.lift(x).value, DimValue.lift(y).value))

  @staticmethod
  def dim_min(x, y) -> "DimValue":
    return DimValue(hlo.minimum(DimValue.lift(x).value, DimValue.lift(y).value))


def _compare(a, b, direction: str) -> ir.Value:
  return hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))


def _floor_divmod(a: ir.Value, b: ir.Value) -> tuple:
  # stablehlo divides towards zero; Python floors: step the quotient down (and the
  # remainder up by b) when the remainder is nonzero with the sign opposite to b's.
  q, r = hlo.divide(a, b), hlo.remainder(a, b)
  zero = _const(0)
  adjust = hlo.and_(_compare(r, zero, "NE"),
                    _compare(_compare(r, zero, "LT"), _compare(b, zero, "LT"), "NE"))
  q = hlo.select(adjust, hlo.subtract(q, _const(1)), q)
  r = hlo.select(adjust, hlo.add(r, b), r)
  return DimValue(q), DimValue(r)


def dim_value(d, env: dict | None = None) -> ir.Value:
  """Dimension ``d`` (an int, a symbolic dimension, or an integer scalar of the program) as
  an ``i64`` scalar of the program."""
  if isinstance(d, ir.Value):
    return d if d.type == _i64() else hlo.convert(_i64(), d)
  if type(d) is not _DimExpr:
    return _const(d)
  env = current_env() if env is None else env
  if env is None:
    raise ValueError(f"the symbolic dimension '{d}' is used in a program whose arguments "
                     "have no symbolic dimensions")
  return DimValue.lift(d._evaluate(env)).value


def shape_tensor(shape, env: dict | None = None) -> ir.Value:
  """``shape`` (sizes, or integer scalars of the program) as a ``tensor<rank x i64>`` of the
  program (for the dynamic ops)."""
  one = ir.RankedTensorType.get((1,), ir.IntegerType.get_signless(64))
  parts = [hlo.reshape(one, dim_value(d, env)) for d in shape]
  if not parts:
    return hlo.constant(ir.DenseElementsAttr.get(np.zeros((0,), np.int64)))
  return parts[0] if len(parts) == 1 else hlo.concatenate(parts, 0)


def solve_in_program(avals, args, assertions: bool = False) -> dict | None:
  """The dimension variables of a program whose arguments (``args``, of types ``avals``;
  None for an argument the program dropped) have symbolic dimensions, read from the
  arguments' actual sizes; None when every argument's shape is static. With
  ``assertions`` the program also checks what must hold of the sizes (``shape_assertion``
  custom calls, as JAX's exported modules do; shape refinement checks them)."""
  if all(is_static(a.shape) for a in avals if hasattr(a, "shape")):
    return None
  shapes = [a.shape if x is not None and hasattr(a, "shape") else ()
            for a, x in zip(avals, args)]

  def size(i, k):
    s = hlo.get_dimension_size(args[i], k)
    return DimValue(hlo.convert(_i64(), s))
  names = [f"args[{i}]" for i in range(len(shapes))]
  eqs = equations(shapes, size, names)
  env, events = solve(eqs, specs_text(shapes, names))
  if assertions:
    _assert_shapes(events, specs_text(shapes, names))
  # The scope's constraints are checked when the module is called, so their variables must
  # be the arguments' (or be defined through them by an equality): evaluating them at a
  # sample point raises UnexpectedDimVar, naming the variable, otherwise.
  sample = {v: 2 for v in env}
  for c in eqs[0].expr.scope._explicit_constraints if eqs else ():
    if isinstance(c.diff, _DimExpr):
      try:
        c.diff._evaluate(sample)
      except ArithmeticError:  # (a division by a sample value that happens to be 0)
        pass
  return env


def _assert_shapes(events, specs: str) -> None:
  """A ``shape_assertion`` per requirement of ``solve``'s ``events`` (JAX's order and
  messages; ``{0}``, ``{1}`` stand for the operands after the predicate)."""
  head = "Input shapes do not match the polymorphic shapes specification. "
  tail = specs + _SHAPE_ERRORS
  for event in events:
    if event[0] == "check":
      _, eq, value = event
      size, want = DimValue.lift(eq.size).value, DimValue.lift(value).value
      _shape_assertion(_compare(size, want, "EQ"), [size, want],
                       head + f"Found inconsistency between dimension size {eq.name} (= {{0}}) "
                       f"and the specification '{eq.expr}' (= {{1}})." + tail)
      continue
    _, var, value, eq, remainder = event
    if remainder is not None:
      r = DimValue.lift(remainder).value
      _shape_assertion(_compare(r, _const(0), "EQ"), [r],
                       head + f"Division had remainder {{0}} when computing the value of "
                       f"'{var}'." + tail)
    v = DimValue.lift(value).value
    _shape_assertion(_compare(v, _const(1), "GE"), [],
                     head + f"Expected value >= 1 for dimension variable '{var}'." + tail)


def _shape_assertion(pred: ir.Value, values, message: str) -> None:
  hlo.CustomCallOp.build_generic(results=[], operands=[pred, *values], attributes={
      "call_target_name": ir.StringAttr.get("shape_assertion"),
      "has_side_effect": ir.BoolAttr.get(True),
      "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
      "backend_config": ir.StringAttr.get(""),
      "error_message": ir.StringAttr.get(message)})


class wrapped_entry:
  """``with wrapped_entry():`` programs lowered inside take JAX's exported calling
  convention for symbolic shapes: ``main`` solves the dimension variables from its
  arguments' sizes, asserts what must hold of them, and calls ``_wrapped_jax_export_main``,
  which takes them as leading ``jax.global_constant`` arguments."""

  def __enter__(self):
    _wrapping.append(True)

  def __exit__(self, *exc):
    _wrapping.pop()


_wrapping: list = []


def wrapping_entry() -> bool:
  return bool(_wrapping)


class lowering_env:
  """``with lowering_env(env):`` makes ``env`` the current environment (None: none)."""

  def __init__(self, env):
    self.env = env

  def __enter__(self):
    if self.env is not None:
      _envs.append(self.env)

  def __exit__(self, *exc):
    if self.env is not None:
      _envs.pop()
