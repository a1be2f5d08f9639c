"""Emitting calls to LAPACK's FFI kernels (CPU) and handling their info codes.

jaxlib's LAPACK handlers are XLA typed-FFI targets: a ``stablehlo.custom_call`` with
``api_version = 4`` whose ``backend_config`` is a dictionary of attributes (single characters
such as ``uplo = 'L'`` as ``ui8``, enums as ``ui8``, flags as ``i1``...). Each handler loops
over the leading (batch) dimensions itself, and expects every matrix in Fortran (column-major)
order: the custom call's operand and result layouts say so, and XLA inserts the transposes,
which is why the rules here never transpose by hand.

jaxlib registers its LAPACK targets as batch partitionable: a call carrying XLA's
``num_batch_dims`` frontend attribute (and the same as a Shardy rule) on operands split along
their batch dimensions runs shard by shard, with no gathering (``_batch_partitioning_attrs``).

Routines report failure in an ``info`` output (``< 0``: a bad argument, ``> 0``: e.g. a
non-positive-definite or singular matrix). As JAX does, failures never raise: the results for
the failing matrices of a batch are replaced by NaNs with :func:`replace_not_ok_with_nan`.

The rules that use these helpers register for ``platform="cpu"``; a GPU backend registers its
own rule per platform (``xla.register_lowering(prim, rule, platform="cuda")``) without
touching the primitive's other rules.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.errors import UnsupportedDtypeError
from hlox.interpreters import dim_lowering, xla
from hlox.runtime import ffi

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy
from jaxlib.mlir.dialects import stablehlo as hlo


LAPACK_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64,
                                         np.complex128)))
# The operations the routines implement, as errors name them.
_OPERATIONS = {"potrf": "cholesky", "trsm": "triangular_solve", "getrf": "lu",
               "gtsv": "tridiagonal_solve", "orgqr": "householder_product",
               "ungqr": "householder_product"}


def check_lapack_dtype(name: str, dtype) -> None:
  """``UnsupportedDtypeError`` naming operation ``name`` unless LAPACK has ``dtype``."""
  dtype = np.dtype(dtype)
  if dtype not in LAPACK_DTYPES:
    raise UnsupportedDtypeError(
        f"{name} does not accept dtype {dtype.name}. Unsupported dtype {dtype.name}: LAPACK "
        "on CPU has routines for float32, float64, complex64 and complex128 (convert to one "
        "of them first)")


def lapack_target(fn_base: str, dtype) -> str:
  """The registered FFI target of LAPACK routine ``fn_base`` for ``dtype``
  (``lapack_target("potrf", float32) == "lapack_spotrf_ffi"``)."""
  check_lapack_dtype(_OPERATIONS.get(fn_base, fn_base), dtype)
  return ffi.lapack_target(fn_base, dtype)


def is_complex(dtype) -> bool:
  return dtypes.is_complex(np.dtype(dtype))


# --- layouts -------------------------------------------------------------------------------

def column_major_layout(ndim: int) -> tuple:
  """Minor-to-major layout of a batch of Fortran-order matrices: the row index varies
  fastest, then the column index, then the batch dimensions from last to first."""
  if ndim < 2:
    return row_major_layout(ndim)
  return (ndim - 2, ndim - 1) + tuple(range(ndim - 3, -1, -1))


def row_major_layout(ndim: int) -> tuple:
  """Minor-to-major layout of a C-order array (the last dimension varies fastest)."""
  return tuple(range(ndim - 1, -1, -1))


def _layouts_attr(layouts) -> ir.Attribute:
  return ir.ArrayAttr.get([
      ir.DenseIntElementsAttr.get(np.asarray(l, dtype=np.int64).reshape(-1),
                                  type=ir.IndexType.get())
      for l in layouts])


# --- attributes ----------------------------------------------------------------------------

def char_attr(c: str) -> ir.Attribute:
  """A one-character LAPACK option (``'L'``, ``'N'``, ...) as the handlers read it: ``ui8``."""
  return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(c))


def enum_attr(value) -> ir.Attribute:
  """An enum option of a handler (``jaxlib.lapack`` enums or their integer value), ``ui8``."""
  return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), int(getattr(value, "value", value)))


def uplo_attr(lower: bool) -> ir.Attribute:
  return char_attr("L" if lower else "U")


def side_attr(left_side: bool) -> ir.Attribute:
  return char_attr("L" if left_side else "R")


def transpose_attr(transpose: bool, conjugate: bool) -> ir.Attribute:
  return char_attr(("C" if conjugate else "T") if transpose else "N")


def diag_attr(unit_diagonal: bool) -> ir.Attribute:
  return char_attr("U" if unit_diagonal else "N")


def ir_attribute(value) -> ir.Attribute:
  """An MLIR attribute for a Python option value (bools as ``i1``, ints as ``i64``, floats
  as ``f64``, strings as strings; attributes pass through)."""
  if isinstance(value, ir.Attribute):
    return value
  if isinstance(value, (bool, np.bool_)):
    return ir.BoolAttr.get(bool(value))
  if isinstance(value, (int, np.integer)):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
  if isinstance(value, (float, np.floating)):
    return ir.FloatAttr.get(ir.F64Type.get(), float(value))
  if isinstance(value, str):
    return ir.StringAttr.get(value)
  raise TypeError(f"cannot make an FFI attribute of {value!r} ({type(value).__name__})")


# --- batch partitioning ------------------------------------------------------------------

def _batch_sharding_rule(num_batch_dims: int, avals_in, avals_out) -> ir.Attribute:
  """A Shardy rule for a call that maps over its leading ``num_batch_dims`` dimensions:
  those are shared factors of every operand and result (a batch-sharded call runs shard by
  shard); every other dimension is a factor of its own, which Shardy keeps whole."""
  factor_sizes = []
  batch_sizes = [a.shape[:num_batch_dims] for a in (*avals_in, *avals_out)
                 if len(a.shape) >= num_batch_dims]
  factor_sizes.extend(batch_sizes[0] if batch_sizes else ())

  def mapping(aval):
    dims = []
    for i, size in enumerate(aval.shape):
      if len(aval.shape) >= num_batch_dims and i < num_batch_dims:
        dims.append(sdy.DimMappingAttr.get(factor_indices=[i]))
      else:
        dims.append(sdy.DimMappingAttr.get(factor_indices=[len(factor_sizes)]))
        factor_sizes.append(size)
    return sdy.TensorMappingAttr.get(dim_mappings=dims)

  operands = [mapping(a) for a in avals_in]
  results = [mapping(a) for a in avals_out]
  return sdy.OpShardingRuleAttr.get(factor_sizes=factor_sizes, operand_mappings=operands,
                                    result_mappings=results, is_custom=True)


def _batch_partitioning_attrs(target: str, avals_in, avals_out,
                              num_non_batch_dims: int) -> dict:
  """The attributes that let the SPMD partitioner split a call of a batch-partitionable
  target (jaxlib registers LAPACK's) along its batch dimensions: XLA's
  ``num_batch_dims`` frontend attribute, and the same as a Shardy rule."""
  if not ffi.is_batch_partitionable(target):
    return {}
  num_batch_dims = max(len(a.shape) for a in avals_in) - num_non_batch_dims
  if num_batch_dims < 0:
    return {}
  return {
      "mhlo.frontend_attributes": ir.DictAttr.get(
          {"num_batch_dims": ir.StringAttr.get(str(num_batch_dims))}),
      "sdy.sharding_rule": _batch_sharding_rule(num_batch_dims, avals_in, avals_out),
  }


# --- the custom call -----------------------------------------------------------------------

def ffi_call(target: str, operands: Sequence[ir.Value], avals_in: Sequence,
             avals_out: Sequence, *, column_major: bool = True,
             operand_output_aliases: dict | None = None,
             operand_layouts: Sequence | None = None, result_layouts: Sequence | None = None,
             num_non_batch_dims: int = 2, **attributes) -> list:
  """Emit ``stablehlo.custom_call @target(operands)`` for a typed-FFI handler.

  Layouts: given ones win; otherwise, with ``column_major``, the operands and results of the
  highest rank (the matrices) are in Fortran order and everything else (pivots, info codes,
  vectors of a lower rank) is row-major. ``operand_output_aliases`` maps an operand index to
  the result that may reuse its buffer (LAPACK works in place). ``attributes`` become the
  handler's attribute dictionary. A target registered as batch partitionable is marked so
  over the dimensions before the last ``num_non_batch_dims`` of its highest-rank operand.
  Returns the results as a list.
  """
  avals_in, avals_out = list(avals_in), list(avals_out)
  top = max((len(a.shape) for a in avals_in), default=0)

  def default_layout(aval):
    nd = len(aval.shape)
    return column_major_layout(nd) if column_major and nd == top else row_major_layout(nd)

  if operand_layouts is None:
    operand_layouts = [default_layout(a) for a in avals_in]
  if result_layouts is None:
    result_layouts = [default_layout(a) for a in avals_out]
  result_types = [xla.aval_to_ir_type(a) for a in avals_out]
  attrs = {
      "call_target_name": ir.StringAttr.get(target),
      "has_side_effect": ir.BoolAttr.get(False),
      # 4 = API_VERSION_TYPED_FFI: the backend config is an attribute dictionary (checked
      # with jaxlib 0.10.2: version 1 with ``mhlo.backend_config``, as JAX emits, also works).
      "api_version": xla.i32_attr(4),
      "backend_config": ir.DictAttr.get({k: ir_attribute(v) for k, v in attributes.items()}),
      "operand_layouts": _layouts_attr(operand_layouts),
      "result_layouts": _layouts_attr(result_layouts),
  }
  if operand_output_aliases:
    attrs["output_operand_aliases"] = ir.ArrayAttr.get([
        hlo.OutputOperandAlias.get(
            output_tuple_indices=[out] if len(result_types) > 1 else [],
            operand_index=inp, operand_tuple_indices=[])
        for inp, out in operand_output_aliases.items()])
  operands = list(operands)
  if all(dim_lowering.is_static(a.shape) for a in (*avals_in, *avals_out)):
    attrs.update(_batch_partitioning_attrs(target, avals_in, avals_out, num_non_batch_dims))
  elif not all(dim_lowering.is_static(a.shape) for a in avals_out):
    # Symbolic result sizes (shape polymorphism): the result shapes are extra operands,
    # which shape refinement reads to make the results static (JAX's convention).
    attrs["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
        np.arange(len(operands), len(operands) + len(avals_out), dtype=np.int64))
    attrs["operand_layouts"] = _layouts_attr([*operand_layouts, *[(0,)] * len(avals_out)])
    operands += [dim_lowering.shape_tensor(a.shape) for a in avals_out]
  op = hlo.CustomCallOp.build_generic(results=result_types, operands=operands,
                                      attributes=attrs)
  return list(op.results)


# --- info codes ----------------------------------------------------------------------------

def info_aval(batch_dims) -> ShapedArray:
  """The aval of an ``info`` output: one int32 per matrix of the batch."""
  return ShapedArray(tuple(batch_dims), dtypes.int32)


def info_ok(info: ir.Value, batch_dims, direction: str = "EQ") -> ir.Value:
  """A bool per matrix: ``info <direction> 0`` (``"EQ"`` for most routines; getrf reports a
  zero pivot with ``info > 0`` but still returns a valid factorization, so it uses ``"GE"``)."""
  aval = info_aval(batch_dims)
  return xla.compare_hlo(info, xla.full_like_aval(0, aval), direction, dtypes.int32)


def nan_like(aval) -> ir.Value:
  value = np.nan + 1j * np.nan if is_complex(aval.dtype) else np.nan
  return xla.full_like_aval(value, aval)


def replace_not_ok_with_nan(x: ir.Value, ok: ir.Value, aval, batch_dims) -> ir.Value:
  """``x`` where the matrix's ``ok`` flag holds, NaN elsewhere (``ok`` has shape
  ``batch_dims``; ``x`` has those leading dimensions and any others after them)."""
  nb = len(batch_dims)
  mask_aval = ShapedArray(tuple(aval.shape), dtypes.bool_)
  mask = xla.broadcast_in_dim(ok, mask_aval, range(nb))
  return hlo.select(mask, x, nan_like(aval))
