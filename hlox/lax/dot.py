"""dot_general: contractions with batch dimensions, precision and preferred_element_type.

``dot_general(lhs, rhs, ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)))``
contracts the paired contracting dimensions and keeps the paired batch dimensions; the result
has the batch dimensions first, then the free dimensions of ``lhs``, then those of ``rhs``.
Everything higher level (``lax.dot``, ``hlox.numpy.matmul``, ``einsum``, ...) is written on it.
"""
from __future__ import annotations

import enum
import operator
from typing import NamedTuple, Union

import numpy as np

from hlox.config import config
from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, cost, xla
from hlox.lax.base import convert_element_type, transpose
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.utils import shape_str, standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["Precision", "dot_general", "dot", "batch_matmul", "dot_general_p", "DotAlgorithm",
           "DotAlgorithmPreset", "PrecisionLike", "DotDimensionNumbers"]


class Precision(enum.Enum):
  """How precisely a backend should compute a contraction (no effect on CPU).

  ``DEFAULT`` is the fastest (e.g. bfloat16 passes on TPU), ``HIGH`` is more accurate and
  ``HIGHEST`` is full float32. Strings such as ``'highest'`` or ``'float32'`` name them too.
  """

  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    if isinstance(value, str):
      return _precision_names.get(value.lower())
    return None

  def __repr__(self):
    return f"Precision.{self.name}"

  def __str__(self):
    return self.name


_precision_names = {
    "default": Precision.DEFAULT, "fastest": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
}


class DotAlgorithm(NamedTuple):
  """A contraction algorithm: the types the operands are rounded to, the accumulation type,
  how many components each operand is split into and how many primitive products are
  summed. Pass it as ``precision=`` to ``dot_general``; hlox emulates it by rounding the
  operands to their precision types and accumulating in ``accumulation_type``."""

  lhs_precision_type: object
  rhs_precision_type: object
  accumulation_type: object
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """Named contraction algorithms (``INPUT_INPUT_ACCUMULATION[_Xn]``), passed as
  ``precision=``. On CPU, as in JAX, ``DEFAULT``, ``F16_F16_F16``, ``BF16_BF16_F32`` (and
  its X3/X6 forms), ``F32_F32_F32`` and ``F64_F64_F64`` are supported; the others raise."""

  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self):
    return f"DotAlgorithmPreset.{self.name}"

  def __str__(self):
    return self.name


# The presets the CPU backend supports (as JAX checks them: XLA:CPU would ignore the others).
_CPU_PRESETS = frozenset({
    DotAlgorithmPreset.DEFAULT, DotAlgorithmPreset.F16_F16_F16,
    DotAlgorithmPreset.BF16_BF16_F32, DotAlgorithmPreset.BF16_BF16_F32_X3,
    DotAlgorithmPreset.BF16_BF16_F32_X6, DotAlgorithmPreset.F32_F32_F32,
    DotAlgorithmPreset.F64_F64_F64,
})

_F8_PRESETS = ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
               "ANY_F8_ANY_F8_ANY_FAST_ACCUM")


def _preset_input_types(preset):
  """The operand types ``preset`` computes with (the first is used for any other type)."""
  name = preset.name
  if name == "DEFAULT" or name in _F8_PRESETS:
    return None
  if name.startswith("F16_"):
    return (np.dtype(np.float16),)
  if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
    return (np.dtype(dtypes.bfloat16), np.dtype(np.float32))  # f32 storage is kept
  if name == "F64_F64_F64":
    return (np.dtype(np.float64),)
  return (np.dtype(np.float32),)


def _preset_output_types(preset, lhs_dtype, rhs_dtype):
  """The accumulation types ``preset`` allows for these operand types (the first is the
  default)."""
  name = preset.name
  if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
    return None
  if name in ("F16_F16_F32", "BF16_BF16_F32"):
    narrow = np.dtype(np.float16 if name.startswith("F16") else dtypes.bfloat16)
    both = lhs_dtype == rhs_dtype == narrow
    return (np.dtype(np.float32), narrow) if both else (np.dtype(np.float32),)
  if name in _F8_PRESETS:
    return (np.dtype(np.float32),)
  acc = {"F16_F16_F16": np.float16, "BF16_BF16_BF16": dtypes.bfloat16,
         "F64_F64_F64": np.float64}.get(name, np.float32)
  return (np.dtype(acc),)


def _preset_compute_types(preset, lhs_dtype, rhs_dtype, out_dtype):
  """``(lhs, rhs, accumulation)`` dtypes of a dot with ``preset``: each given type where the
  preset supports it, else the preset's first choice (as JAX lowers presets)."""
  def pick(dtype, allowed):
    return dtype if allowed is None or dtype in allowed else allowed[0]
  lhs_t = pick(lhs_dtype, _preset_input_types(preset))
  rhs_t = pick(rhs_dtype, _preset_input_types(preset))
  return lhs_t, rhs_t, pick(out_dtype, _preset_output_types(preset, lhs_t, rhs_t))


def _preset_attr(preset, lhs_t, rhs_t, acc_t):
  """The ``algorithm = <...>`` attribute of a dot with ``preset`` (None for DEFAULT)."""
  if preset is DotAlgorithmPreset.DEFAULT:
    return None
  ir_lhs, ir_rhs = xla.dtype_to_ir_type(lhs_t), xla.dtype_to_ir_type(rhs_t)
  if preset.name.startswith("TF32_"):
    ir_lhs = ir_rhs = ir.FloatTF32Type.get()
  elif preset.name.startswith("BF16_"):
    ir_lhs = ir_rhs = ir.BF16Type.get()
  ops = int(preset.name.rsplit("_X", 1)[1]) if "_X" in preset.name else 1
  acc = ir.F32Type.get() if preset.name in _F8_PRESETS[:2] else xla.dtype_to_ir_type(acc_t)
  return hlo.DotAlgorithm.get(ir_lhs, ir_rhs, acc, 1, 1, ops,
                              preset.name.endswith("FAST_ACCUM"))


PrecisionLike = Union[None, str, Precision, tuple, DotAlgorithm, DotAlgorithmPreset]


class DotDimensionNumbers(NamedTuple):
  """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` of ``dot_general``
  (any pair of pairs of index sequences is accepted where this type is)."""

  contracting_dims: tuple
  batch_dims: tuple


def canonicalize_precision(precision):
  """``None``, a pair ``(lhs_precision, rhs_precision)`` of :class:`Precision` values, or a
  :class:`DotAlgorithm` / :class:`DotAlgorithmPreset` (kept as given).

  Accepts ``None``, a :class:`Precision`, a string naming one, a pair of either, or an
  algorithm. ``None`` takes the ``default_matmul_precision`` option (JAX's: a precision
  name or a :class:`DotAlgorithmPreset` name), read while tracing, so jaxprs record it.
  """
  if precision is None:
    default = config._values["default_matmul_precision"]
    if default is None:
      return None
    if default in DotAlgorithmPreset.__members__:
      return DotAlgorithmPreset[default]
    p = _precision_from_str(default)
    return (p, p)
  if isinstance(precision, DotAlgorithmPreset):
    return precision
  if isinstance(precision, DotAlgorithm):
    return precision._replace(
        lhs_precision_type=dtypes.canonicalize_dtype(np.dtype(precision.lhs_precision_type)),
        rhs_precision_type=dtypes.canonicalize_dtype(np.dtype(precision.rhs_precision_type)),
        accumulation_type=dtypes.canonicalize_dtype(np.dtype(precision.accumulation_type)))
  if isinstance(precision, Precision):
    return (precision, precision)
  if isinstance(precision, str):
    if precision in DotAlgorithmPreset.__members__:  # 'F32_F32_F32', as JAX reads it
      return DotAlgorithmPreset[precision]
    p = _precision_from_str(precision)
    return (p, p)
  if isinstance(precision, (tuple, list)) and len(precision) == 2:
    pair = []
    for p in precision:
      if isinstance(p, Precision):
        pair.append(p)
      elif isinstance(p, str):
        pair.append(_precision_from_str(p))
      else:
        break
    else:
      return tuple(pair)
  raise ValueError("dot_general: precision must be None, a lax.Precision, one of the strings "
                   f"{sorted(_precision_names)}, or a pair of these; got {precision!r}")


def _precision_from_str(s: str) -> Precision:
  p = _precision_names.get(s.lower())
  if p is None and s.upper() in Precision.__members__:
    p = Precision[s.upper()]
  if p is None:
    raise ValueError(f"dot_general: unknown precision {s!r}; expected one of "
                     f"{sorted(_precision_names)}")
  return p


# --- dot_general -------------------------------------------------------------------------

def _dot_general_shape_rule(lhs, rhs, *, dimension_numbers, precision,
                            preferred_element_type, out_sharding=None):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  shapes = f"lhs {lhs.str_short()} and rhs {rhs.str_short()}"

  def check_side(side, aval, contract, batch):
    if any(not 0 <= d < aval.ndim for d in (*contract, *batch)):
      raise TypeError(f"dot_general requires {side} dimension numbers to be non-negative and "
                      f"less than the rank of {side} ({aval.ndim}), got {side}_contracting "
                      f"{contract} and {side}_batch {batch} for {shapes}")
    if len(set(contract)) != len(contract) or len(set(batch)) != len(batch):
      raise TypeError(f"dot_general requires distinct {side} dimension numbers, got "
                      f"{side}_contracting {contract} and {side}_batch {batch}")
    if set(contract) & set(batch):
      raise TypeError(f"dot_general requires {side} batch dimensions {batch} to be disjoint "
                      f"from the contracting dimensions {contract}")

  check_side("lhs", lhs, lhs_contract, lhs_batch)
  check_side("rhs", rhs, rhs_contract, rhs_batch)
  if len(lhs_batch) != len(rhs_batch):
    raise TypeError(f"dot_general requires equal numbers of lhs and rhs batch dimensions, "
                    f"got lhs_batch {lhs_batch} and rhs_batch {rhs_batch} for {shapes}")
  if len(lhs_contract) != len(rhs_contract):
    raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting "
                    f"dimensions, got lhs_contracting {lhs_contract} and rhs_contracting "
                    f"{rhs_contract} for {shapes}")
  lhs_batch_shape = tuple(lhs.shape[d] for d in lhs_batch)
  rhs_batch_shape = tuple(rhs.shape[d] for d in rhs_batch)
  if lhs_batch_shape != rhs_batch_shape:
    raise TypeError(f"dot_general requires lhs batch dimensions and rhs batch dimensions to "
                    f"have the same shape, got {lhs_batch_shape} and {rhs_batch_shape} "
                    f"(for {shapes}).")
  lhs_contract_shape = tuple(lhs.shape[d] for d in lhs_contract)
  rhs_contract_shape = tuple(rhs.shape[d] for d in rhs_contract)
  if lhs_contract_shape != rhs_contract_shape:
    raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                    f"got {lhs_contract_shape} and {rhs_contract_shape} (for {shapes}).")
  lhs_free = [d for i, d in enumerate(lhs.shape) if i not in (*lhs_contract, *lhs_batch)]
  rhs_free = [d for i, d in enumerate(rhs.shape) if i not in (*rhs_contract, *rhs_batch)]
  return lhs_batch_shape + tuple(lhs_free) + tuple(rhs_free)


def _bit_width(dtype) -> int:
  if dtype == dtypes.bool_:
    return 1
  if dtypes.is_complex(dtype):
    return np.dtype(dtype).itemsize * 4  # as finfo counts it: the bits of one part
  if dtype in dtypes.narrow_int_dtypes:
    return dtypes.iinfo(dtype).bits
  return np.dtype(dtype).itemsize * 8


def _type_rank(dtype):
  """A sort key saying which of two operand dtypes a mixed contraction computes in.

  This follows XLA's "higher precision type" for dot: complex over real, then more exponent
  range, more mantissa, more bits, and signed over unsigned. Distinct dtypes with equal keys
  (e.g. float16 and bfloat16 have different keys; int8 and uint8 do not tie) are rejected.
  """
  real = np.finfo(dtype).dtype if dtypes.is_complex(dtype) else np.dtype(dtype)
  is_float = dtypes.is_float(real)
  return (dtypes.is_complex(dtype),
          dtypes.finfo(real).maxexp if is_float else -1,
          dtypes.finfo(real).nmant if is_float else -1,
          _bit_width(real),
          not dtypes.is_unsigned_int(real))


def _dot_general_dtype_rule(lhs, rhs, *, dimension_numbers, precision,
                            preferred_element_type, out_sharding=None):
  lhs_key, rhs_key = _type_rank(lhs.dtype), _type_rank(rhs.dtype)
  if lhs.dtype != rhs.dtype and lhs_key == rhs_key:
    raise TypeError(f"dot_general argument type error: {lhs.dtype.name}, {rhs.dtype.name} "
                    f"({shape_str((lhs, rhs))}); convert one operand first")
  result = lhs.dtype if lhs_key >= rhs_key else rhs.dtype
  if preferred_element_type is None or preferred_element_type == result:
    return result
  # As XLA's (and JAX's) rule: any preferred type for a real floating result (it converts);
  # otherwise it must not be narrower (a complex type counts its real part's bits).
  preferred = np.dtype(preferred_element_type)
  if (not dtypes.is_float(result) and not isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))
      and _bit_width(preferred) < _bit_width(result)):
    raise TypeError(f"dot_general: preferred_element_type must not be narrower than the "
                    f"original type, got preferred_element_type {preferred.name} for result "
                    f"type {result.name} ({shape_str((lhs, rhs))})")
  return preferred


def _dot_general_weak_rule(lhs, rhs, *, preferred_element_type, **params):
  return preferred_element_type is None and lhs.weak_type and rhs.weak_type


dot_general_p = standard_primitive(_dot_general_shape_rule, _dot_general_dtype_rule,
                                   "dot_general", weak_type_rule=_dot_general_weak_rule)


def _dot_general_params_for_printing(params):
  # As JAX prints it: dimension numbers as lists (shorter), unset options left out.
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  printed = {"dimension_numbers": ((list(lc), list(rc)), (list(lb), list(rb)))}
  for k in ("precision", "preferred_element_type"):
    if params.get(k) is not None:
      printed[k] = params[k]
  return printed

dot_general_p.params_for_printing = _dot_general_params_for_printing


def _dot_general_cost(avals_in, avals_out, *, dimension_numbers, **_):
  # A multiply and an add per output element per contracted position, as XLA counts it.
  lhs, _rhs = avals_in
  (lhs_contract, _), _ = dimension_numbers
  contracted = 1
  for d in lhs_contract:
    contracted *= lhs.shape[d]
  return cost.Cost(2 * cost.size(avals_out[0]) * contracted, cost.io_bytes(avals_in, avals_out))

cost.register_cost(dot_general_p, _dot_general_cost)


def _needs_operand_conversion(in_dtype, out_dtype) -> bool:
  """Whether the operands must be converted to the output dtype before the dot.

  StableHLO's dot_general may widen within a kind (bf16 x bf16 -> f32, i8 x i8 -> i32), which
  the CPU backend compiles as an accumulation type; across kinds (int -> float, real ->
  complex, bool -> int) it is not supported, so the inputs are converted first.
  """
  def kind(d):
    if d == dtypes.bool_:
      return "b"
    if dtypes.is_complex(d):
      return "c"
    if dtypes.is_float(d):
      return "f"
    return "u" if dtypes.is_unsigned_int(d) else "i"
  return kind(in_dtype) != kind(out_dtype)


def _dot_general_lowering(ctx, lhs, rhs, *, dimension_numbers, precision,
                          preferred_element_type, out_sharding=None):
  lhs_aval, rhs_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  if isinstance(precision, DotAlgorithm):
    return _emulated_dot(ctx, lhs, rhs, dimension_numbers, precision)
  acc_aval, algorithm = aval_out, {}
  if isinstance(precision, DotAlgorithmPreset):
    platform = ctx.module_context.platform
    if precision not in _CPU_PRESETS:
      raise ValueError(f"The precision '{precision.name}' is not supported by dot_general "
                       f"on {platform.upper() if platform == 'cpu' else platform}")
    # As JAX: the operands are cast to the preset's types, the product accumulates in its
    # accumulation type and is converted to the result dtype.
    lhs_t, rhs_t, acc_t = _preset_compute_types(precision, lhs_aval.dtype, rhs_aval.dtype,
                                                aval_out.dtype)
    lhs = xla.convert_hlo(lhs, lhs_aval, lhs_aval.update(dtype=lhs_t))
    rhs = xla.convert_hlo(rhs, rhs_aval, rhs_aval.update(dtype=rhs_t))
    acc_aval = aval_out.update(dtype=acc_t)
    attr = _preset_attr(precision, lhs_t, rhs_t, acc_t)
    if attr is not None:
      algorithm = {"algorithm": attr}
  elif lhs_aval.dtype != rhs_aval.dtype:
    lhs = xla.convert_hlo(lhs, lhs_aval, lhs_aval.update(dtype=aval_out.dtype))
    rhs = xla.convert_hlo(rhs, rhs_aval, rhs_aval.update(dtype=aval_out.dtype))
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
      lhs_contracting_dimensions=list(lhs_contract),
      rhs_contracting_dimensions=list(rhs_contract))
  pair = precision if isinstance(precision, tuple) else (Precision.DEFAULT, Precision.DEFAULT)
  precision_config = ir.ArrayAttr.get([hlo.PrecisionAttr.get(p.name) for p in pair])
  out = hlo.dot_general(xla.aval_to_ir_type(acc_aval), lhs, rhs, dnums,
                        precision_config=precision_config, **algorithm)
  return xla.convert_hlo(out, acc_aval, aval_out)


def _emulated_dot(ctx, lhs, rhs, dimension_numbers, algorithm):
  """Round the operands to the algorithm's types, contract accumulating in its
  accumulation type, and convert to the result dtype."""
  lhs_aval, rhs_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  lhs_t, rhs_t = np.dtype(algorithm.lhs_precision_type), np.dtype(algorithm.rhs_precision_type)
  acc = np.dtype(algorithm.accumulation_type)
  if lhs_t != rhs_t:
    raise ValueError(f"dot_general: algorithm {algorithm} needs equal lhs and rhs precision "
                     "types on this backend")
  lhs = xla.convert_hlo(lhs, lhs_aval, lhs_aval.update(dtype=lhs_t))
  rhs = xla.convert_hlo(rhs, rhs_aval, rhs_aval.update(dtype=rhs_t))
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
      lhs_contracting_dimensions=list(lhs_contract),
      rhs_contracting_dimensions=list(rhs_contract))
  acc_aval = aval_out.update(dtype=acc)
  out = hlo.dot_general(xla.aval_to_ir_type(acc_aval), lhs, rhs, dnums)
  return xla.convert_hlo(out, acc_aval, aval_out)

xla.register_lowering(dot_general_p, _dot_general_lowering)


def _free_dims(ndim, contract, batch):
  return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding=None, swap_ans=False):
  """The cotangent of ``x`` in ``dot_general(x, y)`` (``x`` undefined): ``ct`` contracted
  with ``y`` over ``y``'s free dimensions, batched as before, then transposed into ``x``'s
  layout. With ``swap_ans`` the roles of the operands in ``ct``'s layout are swapped (used
  for the rhs)."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_aval = x.aval
  y_ndim = get_aval(y).ndim
  x_free = _free_dims(x_aval.ndim, x_contract, x_batch)
  y_free = _free_dims(y_ndim, y_contract, y_batch)
  nb = len(x_batch)
  # ct's dimensions: batch, then lhs free, then rhs free (x and y swapped with swap_ans).
  if swap_ans:
    ct_y = list(range(nb, nb + len(y_free)))
  else:
    ct_y = list(range(nb + len(x_free), nb + len(x_free) + len(y_free)))
  dims = ((tuple(ct_y), tuple(y_free)), (tuple(range(nb)), tuple(y_batch)))
  out = dot_general(ct, y, dims, precision=precision,
                    preferred_element_type=preferred_element_type)
  # ``out`` has x's batch dims, then x's free dims, then x's contracting dims in the order of
  # the matching y dimensions; permute that back into x's order.
  x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  layout = list(x_batch) + x_free + x_contract_by_y
  out = transpose(out, tuple(int(i) for i in np.argsort(layout)))
  if get_aval(out).dtype != x_aval.dtype:
    out = convert_element_type(out, x_aval.dtype, weak_type=x_aval.weak_type)
  return out


def _dot_general_transpose_rhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding=None):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  if isinstance(precision, DotAlgorithm):
    swapped_precision = precision._replace(lhs_precision_type=precision.rhs_precision_type,
                                           rhs_precision_type=precision.lhs_precision_type)
  elif isinstance(precision, tuple):
    swapped_precision = (precision[1], precision[0])
  else:
    swapped_precision = precision
  return _dot_general_transpose_lhs(ct, y, x, dimension_numbers=swapped,
                                    precision=swapped_precision,
                                    preferred_element_type=preferred_element_type,
                                    swap_ans=True)

ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)


def _bump(dims, bdim):
  """Dimension numbers of an operand renumbered for a batch dimension inserted at ``bdim``."""
  return tuple(d + (d >= bdim) for d in dims)


def batched_dimension_numbers(ndims, bdims, dimension_numbers):
  """Dimension numbers of the one ``dot_general`` computing a batched contraction, and the
  batch dimension of its result. ``ndims`` are the ranks of the batched operands.

  Both operands batched: the batch becomes a new leading dot_general batch dimension. One
  operand batched: its batch dimension becomes one more free dimension of that operand, so
  it shows up among that operand's free dimensions of the result (in its original order).
  """
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  lbd, rbd = bdims
  if lbd is not None and rbd is not None:
    new = ((_bump(lhs_contract, lbd), _bump(rhs_contract, rbd)),
           ((lbd,) + _bump(lhs_batch, lbd), (rbd,) + _bump(rhs_batch, rbd)))
    return new, 0
  if lbd is not None:
    lhs_contract, lhs_batch = _bump(lhs_contract, lbd), _bump(lhs_batch, lbd)
    lhs_free = _free_dims(ndims[0], lhs_contract, lhs_batch)
    out_bdim = len(lhs_batch) + lhs_free.index(lbd)
  else:
    rhs_contract, rhs_batch = _bump(rhs_contract, rbd), _bump(rhs_batch, rbd)
    rhs_free = _free_dims(ndims[1], rhs_contract, rhs_batch)
    lhs_free = ndims[0] - len(lhs_contract) - len(lhs_batch)
    out_bdim = len(lhs_batch) + lhs_free + rhs_free.index(rbd)
  return ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)), out_bdim


def _dot_general_batch_rule(vals, dims, *, dimension_numbers, **params):
  # Never a loop: the mapped axis is folded into the one contraction.
  lhs, rhs = vals
  ndims = (get_aval(lhs).ndim, get_aval(rhs).ndim)
  new_dimension_numbers, out_bdim = batched_dimension_numbers(ndims, dims, dimension_numbers)
  return dot_general_p.bind(lhs, rhs, dimension_numbers=new_dimension_numbers,
                            **params), out_bdim

batching.primitive_batchers[dot_general_p] = _dot_general_batch_rule


def _index_tuple(name, dims) -> tuple:
  if isinstance(dims, (int, np.integer)):
    return (int(dims),)
  try:
    return tuple(operator.index(d) for d in dims)
  except TypeError:
    raise TypeError(f"{name}: dimension numbers must be integers or sequences of integers, "
                    f"got {dims!r}") from None


def _canonicalize_dimension_numbers(dimension_numbers):
  try:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  except (TypeError, ValueError):
    raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, "
                    "rhs_contracting), (lhs_batch, rhs_batch)), got "
                    f"{dimension_numbers!r}") from None
  return ((_index_tuple("dot_general", lhs_contract), _index_tuple("dot_general", rhs_contract)),
          (_index_tuple("dot_general", lhs_batch), _index_tuple("dot_general", rhs_batch)))


def _canonicalize_preferred(preferred_element_type, name="dot_general"):
  if preferred_element_type is None:
    return None
  return dtypes.check_user_dtype(preferred_element_type, name, user_only=True)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                *, out_sharding=None):
  """General tensor contraction with batch dimensions.

  ``dimension_numbers`` is ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``,
  four sequences of dimension indices. Contracting dimensions are summed over in pairs and
  batch dimensions are matched in pairs (the sizes of each pair must agree, else
  ``TypeError``). The result has the batch dimensions first, then ``lhs``'s free dimensions,
  then ``rhs``'s. Operands of different dtypes are promoted to a common one;
  ``preferred_element_type`` sets the result dtype instead. Linear in each operand, so
  ``grad``, ``jvp`` and ``vmap`` all apply (``vmap`` adds a batch dimension).

  Args:
    lhs: left operand.
    rhs: right operand.
    dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``.
    precision: None, a ``Precision`` value (or its name), or a pair of them (one per operand).
    preferred_element_type: optional dtype for accumulation and result (it may widen).
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    The contraction, of shape ``batch + lhs_free + rhs_free``.

  Examples:
    >>> x = jnp.arange(6.).reshape(2, 3)
    >>> lax.dot_general(x, x, (((1,), (1,)), ((), ())))  # x @ x.T
    Array([[ 5., 14.],
           [14., 50.]], dtype=float32)
    >>> b = jnp.ones((4, 2, 3))
    >>> lax.dot_general(b, b, (((2,), (2,)), ((0,), (0,)))).shape
    (4, 2, 2)
  """
  dimension_numbers = _canonicalize_dimension_numbers(dimension_numbers)
  # With ``out_sharding`` the result's split is the one asked for (the constraint below), so
  # operands split along their contracting dimensions are no error.
  with sharding_types.result_sharding_given(out_sharding is not None):
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                             precision=canonicalize_precision(precision),
                             preferred_element_type=_canonicalize_preferred(
                                 preferred_element_type),
                             out_sharding=None)
  return apply_out_sharding(out, out_sharding, "dot_general")


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Vector and matrix products of 1-d or 2-d operands.

  Without ``dimension_numbers``, contracts ``lhs``'s last dimension with ``rhs``'s first
  (vector-vector, matrix-vector, vector-matrix or matrix-matrix). Operands of other ranks, or
  with unequal inner sizes, raise ``ValueError``; with ``dimension_numbers`` the call is
  ``dot_general``.

  Args:
    lhs: 1-d or 2-d left operand.
    rhs: 1-d or 2-d right operand.
    dimension_numbers: keyword-only; optional ``dot_general`` dimension numbers.
    precision: keyword-only; None, a ``Precision`` value, or a pair of them.
    preferred_element_type: keyword-only; optional accumulation and result dtype.
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    The product array.

  Examples:
    >>> lax.dot(jnp.array([1., 2.]), jnp.array([3., 4.]))
    Array(11., dtype=float32)
    >>> lax.dot(jnp.eye(2), jnp.array([[1, 2], [3, 4]], dtype='float32'))
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
  """
  if dimension_numbers is None:
    lhs_shape, rhs_shape = get_aval(lhs).shape, get_aval(rhs).shape
    if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
            and lhs_shape[-1] == rhs_shape[0]):
      raise ValueError(f"lax.dot requires 1-d or 2-d operands with matching inner dimensions "
                      f"(lhs.shape[-1] == rhs.shape[0]), got lhs shape {lhs_shape} and rhs "
                      f"shape {rhs_shape}; pass dimension_numbers for other contractions")
    dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
  return dot_general(lhs, rhs, dimension_numbers, precision=precision,
                     preferred_element_type=_canonicalize_preferred(preferred_element_type,
                                                                    "dot"),
                     out_sharding=out_sharding)


def batch_matmul(lhs, rhs, precision=None):
  """Batched matrix product of ``(..., m, k)`` and ``(..., k, n)`` operands.

  Both operands must have the same rank, at least 2, and equal leading (batch) shapes; other
  ranks raise ``ValueError``. Computed as one ``dot_general``.

  Args:
    lhs: array of shape ``(..., m, k)``.
    rhs: array of shape ``(..., k, n)``.
    precision: None, a ``Precision`` value, or a pair of them.

  Returns:
    An array of shape ``(..., m, n)``.

  Examples:
    >>> a = jnp.ones((2, 1, 3))
    >>> lax.batch_matmul(a, jnp.ones((2, 3, 2)))
    Array([[[3., 3.]],
    <BLANKLINE>
           [[3., 3.]]], dtype=float32)
  """
  lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
  if min(lhs_aval.ndim, rhs_aval.ndim) < 2:
    raise ValueError(f"batch_matmul requires operands of rank at least 2, got "
                     f"{shape_str((lhs_aval, rhs_aval))}")
  if lhs_aval.ndim != rhs_aval.ndim:
    raise ValueError(f"batch_matmul requires operands of equal rank, got "
                     f"{shape_str((lhs_aval, rhs_aval))}")
  batch = tuple(range(lhs_aval.ndim - 2))
  return dot_general(lhs, rhs, (((lhs_aval.ndim - 1,), (rhs_aval.ndim - 2,)), (batch, batch)),
                     precision=precision)


sharding_types.sharding_rules[dot_general_p] = sharding_types.dot_general_rule
