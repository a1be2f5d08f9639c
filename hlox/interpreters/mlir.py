"""``jax.interpreters.mlir``: JAX's public lowering API over hlox's lowering (``xla.py``),
for primitives defined outside hlox.

JAX's conventions hold here: a lowering rule ``rule(ctx, *args, **params)`` returns a
sequence of ``ir.Value`` (one per result; a lone value is accepted too), and ``lower_fun``
makes such a rule from a function written with other primitives. ``ctx`` has ``avals_in``,
``avals_out`` and ``module_context``. ``hlo`` is the StableHLO dialect's builders.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from jaxlib.mlir import dialects, ir, passmanager
from jaxlib.mlir.dialects import stablehlo as hlo

from hlox.core import dtypes
from hlox.core.hashable import FrozenDict, HashableArray
from hlox.interpreters import xla
from hlox.interpreters.xla import (LoweringRuleContext, ModuleContext, aval_to_ir_type,
                                   dtype_to_ir_type, ir_constant)

__all__ = ["LoweringRuleContext", "ModuleContext", "aval_to_ir_type", "custom_call",
           "dialects", "dtype_to_ir_type", "hlo", "ir", "ir_attribute", "ir_constant",
           "lower_fun", "passmanager", "register_attribute_handler", "register_lowering"]


def register_lowering(primitive, rule: Callable, platform: str | None = None) -> None:
  """Lower ``primitive`` with ``rule`` (on ``platform`` only, if given: 'cpu', 'cuda'...).

  Returns None, as JAX's: a notebook cell ending in this call shows nothing."""
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


def lower_fun(fun: Callable, multiple_results: bool = True) -> Callable:
  """A lowering rule that traces ``fun(*args, **params)`` (written with other primitives)
  on the rule's input types and inlines it; its results come back as a list."""
  rule = xla.lower_fun(fun, multiple_results)

  def lowered(ctx, *args, **params):
    outs = rule(ctx, *args, **params)
    return list(outs) if multiple_results else [outs]
  return lowered


# --- attributes (JAX's ``mlir.ir_attribute``) ----------------------------------------------

_attribute_handlers: dict = {}


def register_attribute_handler(type_: type, handler: Callable) -> None:
  """Make ``ir_attribute`` convert values of ``type_`` (and its subclasses) with
  ``handler(value) -> ir.Attribute``."""
  _attribute_handlers[type_] = handler


def ir_attribute(value) -> ir.Attribute:
  """An MLIR attribute for a Python value, as JAX spells them: Python ints, floats and bools
  as ``i64``/``f64``/``i1``, NumPy scalars with their own type (``1 : i16``), NumPy arrays as
  dense tensors (``dense<[0, 1]> : tensor<2xi64>``), strings, dicts (``DictAttr``), lists and
  tuples (``ArrayAttr``), dtypes as types. Raises TypeError for anything else."""
  for cls in type(value).__mro__:
    handler = _attribute_handlers.get(cls)
    if handler is not None:
      return handler(value)
  as_array = getattr(value, "__jax_array__", None)
  if as_array is not None:
    return ir_attribute(as_array())
  raise TypeError(f"No attribute handler defined for type: {type(value)}")


def _scalar_attribute(value) -> ir.Attribute:
  ir_type = dtype_to_ir_type(value.dtype)
  if isinstance(ir_type, ir.IntegerType):
    return ir.IntegerAttr.get(ir_type, int(value))
  if isinstance(ir_type, ir.FloatType):
    return ir.FloatAttr.get(ir_type, float(value))
  raise TypeError(f"Unsupported scalar attribute type: {type(value)}")


def _array_attribute(value) -> ir.Attribute:
  value = np.asarray(value)
  if value.size and 0 in value.strides:
    raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
  if value.dtype == dtypes.float0:  # no data: JAX spells it as booleans
    value = np.zeros(value.shape, np.bool_)
  return ir.DenseElementsAttr.get(np.ascontiguousarray(value),
                                  type=dtype_to_ir_type(value.dtype), shape=value.shape)


def _numpy_scalar_attribute(value) -> ir.Attribute:
  # A NumPy scalar keeps its type; anything without a scalar attribute (complex) is an error.
  return _scalar_attribute(np.asarray(value))


def _type_attribute(value) -> ir.Attribute:
  return ir.TypeAttr.get(dtype_to_ir_type(np.dtype(value)))


register_attribute_handler(ir.Attribute, lambda a: a)
register_attribute_handler(ir.Type, lambda t: t)
register_attribute_handler(bool, lambda b: ir.BoolAttr.get(b))
register_attribute_handler(int, lambda i: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i))
register_attribute_handler(float, lambda f: ir.FloatAttr.get(ir.F64Type.get(), f))
register_attribute_handler(np.ndarray, _array_attribute)
register_attribute_handler(HashableArray, lambda h: _array_attribute(h.val))
register_attribute_handler(np.generic, _numpy_scalar_attribute)
register_attribute_handler(np.dtype, _type_attribute)
register_attribute_handler(str, ir.StringAttr.get)
register_attribute_handler(bytes, ir.StringAttr.get)
register_attribute_handler(dict, lambda d: ir.DictAttr.get({k: ir_attribute(v)
                                                             for k, v in d.items()}))
register_attribute_handler(FrozenDict, lambda d: ir.DictAttr.get({k: ir_attribute(v)
                                                                   for k, v in d.items()}))
register_attribute_handler(list, lambda s: ir.ArrayAttr.get([ir_attribute(v) for v in s]))
register_attribute_handler(tuple, lambda s: ir.ArrayAttr.get([ir_attribute(v) for v in s]))


# --- custom calls (JAX's ``mlir.custom_call``) ----------------------------------------------

def _layouts_attribute(layouts) -> ir.Attribute:
  return ir.ArrayAttr.get([
      ir.DenseIntElementsAttr.get(np.atleast_1d(np.asarray(layout, dtype=np.int64)),
                                  type=ir.IndexType.get())
      for layout in layouts])


def custom_call(call_target_name: str, *, result_types: Sequence[ir.Type],
                operands: Sequence[ir.Value], backend_config="",
                has_side_effect: bool = False, result_shapes=None,
                called_computations: Sequence[str] = (), api_version: int = 2,
                operand_output_aliases: dict | None = None,
                operand_layouts: Sequence | None = None,
                result_layouts: Sequence | None = None,
                extra_attributes: dict | None = None):
  """Build a ``stablehlo.custom_call`` of ``call_target_name`` and return the op.

  ``backend_config`` is a string (opaque bytes for the target) or a dict of attributes;
  a dict is written as the ``mhlo.backend_config`` dictionary with ``api_version = 1``,
  which is how XLA's typed FFI handlers receive their attributes. Layouts are
  minor-to-major dimension orders, one per operand / result; ``operand_output_aliases``
  maps an operand index to the result that reuses its buffer.
  """
  if result_shapes is not None:
    raise NotImplementedError("custom_call: results of dynamic shape are not supported")
  attributes = {
      "call_target_name": ir.StringAttr.get(call_target_name),
      "has_side_effect": ir.BoolAttr.get(has_side_effect),
  }
  if backend_config is None or isinstance(backend_config, (str, bytes)):
    attributes["backend_config"] = ir.StringAttr.get(backend_config or "")
  elif isinstance(backend_config, dict):
    # StableHLO's ``backend_config`` must be a string: the dictionary goes into the
    # unregistered ``mhlo.backend_config``, which XLA reads with API version 1.
    attributes["backend_config"] = ir.StringAttr.get("")
    api_version = 1
  else:
    raise ValueError(f"custom_call backend_config unexpected type: {backend_config!r}")
  attributes["api_version"] = xla.i32_attr(api_version)
  attributes["called_computations"] = ir.ArrayAttr.get(
      [ir.FlatSymbolRefAttr.get(name) for name in called_computations])
  if operand_output_aliases is not None:
    attributes["output_operand_aliases"] = ir.ArrayAttr.get([
        hlo.OutputOperandAlias.get(
            # with one result, the alias refers to it without a tuple index
            output_tuple_indices=[out] if len(result_types) > 1 else [],
            operand_index=inp, operand_tuple_indices=[])
        for inp, out in operand_output_aliases.items()])
  if operand_layouts is not None:
    attributes["operand_layouts"] = _layouts_attribute(operand_layouts)
  if result_layouts is not None:
    attributes["result_layouts"] = _layouts_attribute(result_layouts)
  if extra_attributes:
    attributes.update(extra_attributes)
  op = hlo.CustomCallOp.build_generic(results=list(result_types), operands=list(operands),
                                      attributes=attributes)
  if isinstance(backend_config, dict):
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(backend_config)
  return op
