"""``jax.interpreters.mlir``: JAX's public lowering API over hlox's lowering (``xla.py``),
for primitives defined outside hlox.

JAX's conventions hold here: a lowering rule ``rule(ctx, *args, **params)`` returns a
sequence of ``ir.Value`` (one per result; a lone value is accepted too), and ``lower_fun``
makes such a rule from a function written with other primitives. ``ctx`` has ``avals_in``,
``avals_out`` and ``module_context``. ``hlo`` is the StableHLO dialect's builders.
"""
from __future__ import annotations

from typing import Callable, Sequence

from jaxlib.mlir import dialects, ir, passmanager
from jaxlib.mlir.dialects import stablehlo as hlo

from hlox.interpreters import xla
from hlox.interpreters.xla import (LoweringRuleContext, ModuleContext, aval_to_ir_type,
                                   dtype_to_ir_type, ir_constant)

__all__ = ["LoweringRuleContext", "ModuleContext", "aval_to_ir_type", "dialects",
           "dtype_to_ir_type", "hlo", "ir", "ir_constant", "lower_fun", "passmanager",
           "register_lowering"]


def register_lowering(primitive, rule: Callable, platform: str | None = None) -> Callable:
  """Lower ``primitive`` with ``rule`` (on ``platform`` only, if given: 'cpu', 'cuda'...)."""
  def adapted(ctx, *args, **params):
    outs = rule(ctx, *args, **params)
    if primitive.multiple_results:
      return list(outs)
    if isinstance(outs, Sequence) and not isinstance(outs, ir.Value):
      if len(outs) != 1:
        raise ValueError(f"the lowering rule of {primitive.name} returned {len(outs)} "
                         "values for a primitive of one result")
      return outs[0]
    return outs
  xla.register_lowering(primitive, adapted, platform)
  return rule


def lower_fun(fun: Callable, multiple_results: bool = True) -> Callable:
  """A lowering rule that traces ``fun(*args, **params)`` (written with other primitives)
  on the rule's input types and inlines it; its results come back as a list."""
  rule = xla.lower_fun(fun, multiple_results)

  def lowered(ctx, *args, **params):
    outs = rule(ctx, *args, **params)
    return list(outs) if multiple_results else [outs]
  return lowered

