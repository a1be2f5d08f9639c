"""Elementwise primitives: arithmetic, transcendental, comparison, bitwise, select, convert.

Each primitive is defined with its rules right below it. Binary operations broadcast scalars
and size-1 dimensions (equal ranks); operands must share a dtype (``hlox.numpy`` promotes).
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.interpreters import xla
from hlox.lax.utils import (any_kinds, binop, float_kinds, nary_lowering, number_kinds,
                            standard_primitive, unop)
from hlox.lax import utils

from jaxlib.mlir.dialects import chlo, stablehlo as hlo

__all__ = ["add", "sub", "mul", "neg", "sin", "cos", "exp", "log", "tanh", "eq", "ne", "lt",
           "le", "gt", "ge", "convert_element_type", "add_p", "sub_p", "mul_p", "neg_p",
           "sin_p", "cos_p", "exp_p", "log_p", "tanh_p", "eq_p", "ne_p", "lt_p", "le_p",
           "gt_p", "ge_p", "convert_element_type_p"]


def _operands(name, *args):
  """Python scalars take the dtype of the array operands (they are weakly typed)."""
  from hlox.core.tracer import get_aval
  strong = [get_aval(a) for a in args if type(a) not in (int, float, complex, bool)]
  if not strong or len(strong) == len(args):
    return args
  dtype = strong[0].dtype
  return tuple(_scalar_as(a, dtype) if type(a) in (int, float, complex, bool) else a
               for a in args)


def _scalar_as(x, dtype):
  return np.asarray(x, dtype=dtype)[()]


# --- arithmetic --------------------------------------------------------------------------

add_p = binop(number_kinds, "add")
xla.register_lowering(add_p, nary_lowering(hlo.add))

def add(x, y):
  """Elementwise ``x + y``."""
  return add_p.bind(*_operands("add", x, y))


sub_p = binop(number_kinds, "sub")
xla.register_lowering(sub_p, nary_lowering(hlo.subtract))

def sub(x, y):
  """Elementwise ``x - y``."""
  return sub_p.bind(*_operands("sub", x, y))


mul_p = binop(number_kinds, "mul")
xla.register_lowering(mul_p, nary_lowering(hlo.multiply))

def mul(x, y):
  """Elementwise ``x * y``."""
  return mul_p.bind(*_operands("mul", x, y))


neg_p = unop(number_kinds, "neg")
xla.register_lowering(neg_p, nary_lowering(hlo.negate))

def neg(x):
  """Elementwise ``-x``."""
  return neg_p.bind(x)


# --- transcendental ----------------------------------------------------------------------

sin_p = unop(float_kinds, "sin")
xla.register_lowering(sin_p, nary_lowering(hlo.sine))

def sin(x):
  """Elementwise sine."""
  return sin_p.bind(x)


cos_p = unop(float_kinds, "cos")
xla.register_lowering(cos_p, nary_lowering(hlo.cosine))

def cos(x):
  """Elementwise cosine."""
  return cos_p.bind(x)


exp_p = unop(float_kinds, "exp")
xla.register_lowering(exp_p, nary_lowering(hlo.exponential))

def exp(x):
  """Elementwise ``e ** x``."""
  return exp_p.bind(x)


log_p = unop(float_kinds, "log")
xla.register_lowering(log_p, nary_lowering(hlo.log))

def log(x):
  """Elementwise natural logarithm."""
  return log_p.bind(x)


tanh_p = unop(float_kinds, "tanh")
xla.register_lowering(tanh_p, nary_lowering(hlo.tanh))

def tanh(x):
  """Elementwise hyperbolic tangent."""
  return tanh_p.bind(x)


# --- comparisons -------------------------------------------------------------------------

def _compare_lowering(direction):
  def rule(ctx, x, y):
    x, y = xla.multi_broadcast((x, y), ctx.avals_in, ctx.avals_out[0].shape)
    return xla.compare_hlo(x, y, direction, ctx.avals_in[0].dtype)
  return rule


def _to_bool(dtype):
  return dtypes.bool_


def _comparison(name, direction, kinds=any_kinds):
  prim = binop(kinds, name, result_dtype=_to_bool)
  xla.register_lowering(prim, _compare_lowering(direction))
  return prim


eq_p = _comparison("eq", "EQ")
ne_p = _comparison("ne", "NE")
lt_p = _comparison("lt", "LT", ("bool", "int", "float"))
le_p = _comparison("le", "LE", ("bool", "int", "float"))
gt_p = _comparison("gt", "GT", ("bool", "int", "float"))
ge_p = _comparison("ge", "GE", ("bool", "int", "float"))

def eq(x, y):
  """Elementwise ``x == y``."""
  return eq_p.bind(*_operands("eq", x, y))

def ne(x, y):
  """Elementwise ``x != y``."""
  return ne_p.bind(*_operands("ne", x, y))

def lt(x, y):
  """Elementwise ``x < y``."""
  return lt_p.bind(*_operands("lt", x, y))

def le(x, y):
  """Elementwise ``x <= y``."""
  return le_p.bind(*_operands("le", x, y))

def gt(x, y):
  """Elementwise ``x > y``."""
  return gt_p.bind(*_operands("gt", x, y))

def ge(x, y):
  """Elementwise ``x >= y``."""
  return ge_p.bind(*_operands("ge", x, y))


# --- conversion --------------------------------------------------------------------------

def _convert_shape_rule(operand, *, new_dtype, weak_type):
  return operand.shape

def _convert_dtype_rule(operand, *, new_dtype, weak_type):
  return new_dtype

def _convert_weak_rule(operand, *, new_dtype, weak_type):
  return weak_type


convert_element_type_p = standard_primitive(_convert_shape_rule, _convert_dtype_rule,
                                            "convert_element_type",
                                            weak_type_rule=_convert_weak_rule)

def _convert_lowering(ctx, x, *, new_dtype, weak_type):
  return xla.convert_hlo(x, ctx.avals_in[0], ctx.avals_out[0])

xla.register_lowering(convert_element_type_p, _convert_lowering)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Cast ``operand`` to ``new_dtype`` (canonicalized: 64-bit only with x64 on).

  Float to int conversion rounds toward zero; conversion to bool tests ``!= 0``.
  """
  from hlox.core.tracer import get_aval
  new_dtype = dtypes.canonicalize_dtype(new_dtype)
  if not hasattr(operand, "aval"):
    # Python scalars and NumPy values convert on the host: no primitive, and under a trace
    # they become literals or constants.
    if type(operand) in (int, float, complex, bool):
      operand = np.asarray(operand, dtype=dtypes.python_scalar_dtype(operand))
    value = np.asarray(operand)
    if dtypes.is_complex(value.dtype) and not dtypes.is_complex(new_dtype):
      value = value.real
    return value.astype(new_dtype)
  aval = get_aval(operand)
  if aval.dtype == new_dtype and aval.weak_type == weak_type and hasattr(operand, "aval"):
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))
