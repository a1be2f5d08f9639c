"""The primitives every other primitive's rules are written with: broadcast_in_dim, reshape,
transpose, reduce_sum and convert_element_type, with ``full``/``full_like`` and the batching
registrars built on them (``moveaxis``, ``broadcast_batched``, ``defbroadcasting``).

They sit at the bottom of ``lax`` because they need each other (``broadcast_in_dim`` and
``reduce_sum`` transpose to one another) and everything else needs them: unbroadcasting a
cotangent, making zeros, moving a batch dimension. Each keeps all of its rules here; the
rooms named for their job (``shapes``, ``elementwise``, ``reductions``) re-export them.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from hlox.config import config
from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.shape_poly import _DimExpr, canonical_dim, dimension_as_value, is_symbolic_dim
from hlox.core import jaxpr as jaxpr_lib
from hlox.core.avals import ShapedArray
from hlox.core.tracer import eval_trace, get_aval, trace_ctx
from hlox.errors import HloxTypeError
from hlox.interpreters import ad, batching, cost, xla
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.reducer_util import (_axes_param, _is_number, _kept_dims, _reducer, _zero,
                                   defreducer)
from hlox.lax.utils import defvectorized, standard_primitive
from hlox.runtime.array import (Array, committed_device, device_put, put_requested,
                                type_sharding)
from hlox.runtime import sharding as sharding_lib
from hlox.core.extended_functions import refused as _refused

from jaxlib.mlir.dialects import stablehlo as hlo

# Python scalars: weakly typed values that ``bind`` turns into literals.
_PY_SCALARS = (bool, int, float, complex)


# --- static parameters -------------------------------------------------------------------

def _keep_dtype(operand, *args, **params):
  return operand.dtype


def _keep_weak(operand, *args, **params):
  return operand.weak_type


def _is_array(x) -> bool:
  """True for Arrays and tracers: values that ``bind`` would not have to convert."""
  return hasattr(x, "aval")


def _static_ints(name: str, what: str, values) -> tuple:
  """``values`` as a tuple of Python ints; a TypeError naming ``name`` otherwise."""
  try:
    return tuple(operator.index(v) for v in values)
  except HloxTypeError:
    raise  # a traced value: its own message says what to do
  except TypeError as e:
    raise TypeError(f"{name}: {what} must be a sequence of static integers, got "
                    f"{values!r} ({e})") from None


def _static_dims(name: str, what: str, values) -> tuple:
  """``values`` as a tuple of sizes: Python ints, or symbolic sizes (shape polymorphism);
  a TypeError naming ``name`` otherwise."""
  try:
    return tuple(operator.index(v) for v in values)
  except TypeError:
    if not any(is_symbolic_dim(v) for v in values):
      return _static_ints(name, what, values)  # its error
    return tuple(v if is_symbolic_dim(v) else _static_ints(name, what, (v,))[0]
                 for v in values)


def _shape_tuple(name: str, shape) -> tuple:
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  try:
    try:
      shape = tuple(operator.index(d) for d in shape)
    except TypeError:  # symbolic sizes (shape polymorphism) stay as they are
      shape = tuple(map(canonical_dim, shape))
  except HloxTypeError:
    raise  # a traced value: its own message says what to do
  except TypeError as e:
    raise TypeError(f"{name}: Shapes must be 1D sequences of concrete values of integer type, "
                    f"got {shape!r} ({e})") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: shape {shape} has negative dimensions")
  return shape


def _check_shapelike(name: str, what: str, values) -> None:
  if any(type(v) is not int and not is_symbolic_dim(v) for v in values):
    raise TypeError(f"{name}: {what} must be a tuple of ints, got {values!r}")


# --- broadcast_in_dim --------------------------------------------------------------------

def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions, sharding=None):
  _check_shapelike("broadcast_in_dim", "shape", shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"broadcast_in_dim: shape {shape} has negative dimensions")
  if len(broadcast_dimensions) != operand.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                    f"operand ndim; got broadcast_dimensions {broadcast_dimensions} for operand "
                    f"{operand.str_short()} (one entry per operand dimension)")
  if len(shape) < operand.ndim:
    raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher rank "
                    f"to the operand shape; got operand {operand.str_short()} and target "
                    f"broadcast shape {shape}")
  # Any unique result dimensions will do (StableHLO's rule): out of order, the broadcast
  # also transposes. JAX raises TypeError for both checks.
  if any(not 0 <= d < len(shape) for d in broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be a subset of output "
                    f"dimensions, got {broadcast_dimensions} for operand {operand.str_short()} "
                    f"and shape {shape}")
  for i, d in enumerate(broadcast_dimensions):
    if operand.shape[i] not in (1, shape[d]):
      raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                      f"to their corresponding dimensions in the target broadcast shape; got "
                      f"operand {operand.str_short()}, target broadcast shape {shape}, "
                      f"broadcast_dimensions {broadcast_dimensions}")
  if len(set(broadcast_dimensions)) != len(broadcast_dimensions):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must not contain duplicates, got "
                    f"broadcast_dimensions {broadcast_dimensions} (operand "
                    f"{operand.str_short()}, shape {shape})")
  return tuple(shape)


broadcast_in_dim_p = standard_primitive(_broadcast_in_dim_shape_rule, _keep_dtype,
                                        "broadcast_in_dim", weak_type_rule=_keep_weak)

def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions, sharding=None):
  return xla.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)

xla.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


def _broadcast_in_dim_printed_params(params):
  # The shape is implied by the output's type; trivial broadcast dimensions say nothing.
  shown = {}
  if params["broadcast_dimensions"]:
    shown["broadcast_dimensions"] = params["broadcast_dimensions"]
  return shown

broadcast_in_dim_p.params_for_printing = _broadcast_in_dim_printed_params

def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding=None):
  # Every output element that copies an input element sends its cotangent back to it: sum
  # over the new dimensions and over the size-1 dimensions that were stretched.
  in_shape = operand.aval.shape
  stretched = [d for i, d in enumerate(broadcast_dimensions)
               if in_shape[i] == 1 and shape[d] != 1]
  summed = sorted(set(range(len(shape))) - set(broadcast_dimensions) | set(stretched))
  if summed:
    ct = reduce_sum(ct, tuple(summed))
  # What is left is in result order; put it back in operand order when the broadcast
  # dimensions were out of order (the broadcast transposed).
  kept = [d for d in broadcast_dimensions if d not in stretched]
  order = sorted(kept)
  perm = tuple(order.index(d) for d in kept)
  if perm != tuple(range(len(perm))):
    ct = transpose(ct, perm)
  return [reshape(ct, in_shape)]

ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)

def _broadcast_in_dim_batch_rule(vals, dims, *, shape, broadcast_dimensions, sharding=None):
  # The batch dimension goes into the result right after the result dimension of the
  # operand dimension before it, so that broadcast_dimensions stay increasing.
  operand, = vals
  bdim, = dims
  size = get_aval(operand).shape[bdim]
  if list(broadcast_dimensions) != sorted(broadcast_dimensions):
    # Out of order already: the batch dimension leads the result.
    new_dims = tuple(d + 1 for d in broadcast_dimensions)
    new_dims = new_dims[:bdim] + (0,) + new_dims[bdim:]
    return broadcast_in_dim_p.bind(operand, shape=(size,) + tuple(shape),
                                   broadcast_dimensions=new_dims, sharding=None), 0
  out_bdim = broadcast_dimensions[bdim - 1] + 1 if bdim > 0 else 0
  new_dims = tuple(d + (d >= out_bdim) for d in broadcast_dimensions)
  new_dims = new_dims[:bdim] + (out_bdim,) + new_dims[bdim:]
  new_shape = tuple(shape[:out_bdim]) + (size,) + tuple(shape[out_bdim:])
  return broadcast_in_dim_p.bind(operand, shape=new_shape, broadcast_dimensions=new_dims,
                                 sharding=None), out_bdim

batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch_rule


def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
  """Broadcasts ``operand`` to ``shape``, placing its dimensions at ``broadcast_dimensions``.

  Operand dimension ``i`` becomes result dimension ``broadcast_dimensions[i]``; its size must
  be 1 or ``shape[broadcast_dimensions[i]]``, else ``TypeError``. The other result
  dimensions are new. Linear: its transpose sums over broadcast dimensions.

  Args:
    operand: input array.
    shape: the result shape (static).
    broadcast_dimensions: for each operand dimension, its position in the result.
    out_sharding: optional sharding of the result.

  Returns:
    An array of ``shape`` and ``operand``'s dtype.

  Examples:
    >>> lax.broadcast_in_dim(jnp.array([1, 2]), (3, 2), (1,))
    Array([[1, 2],
           [1, 2],
           [1, 2]], dtype=int32)
  """
  shape = _shape_tuple("broadcast_in_dim", shape)
  broadcast_dimensions = _static_ints("broadcast_in_dim", "broadcast_dimensions",
                                      broadcast_dimensions)
  try:
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "broadcast_in_dim",
                    operand, shape, broadcast_dimensions, out_sharding)
  if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))) and \
      _is_array(operand):
    return apply_out_sharding(operand, out_sharding, "broadcast_in_dim")
  out = broadcast_in_dim_p.bind(operand, shape=shape,
                                broadcast_dimensions=broadcast_dimensions, sharding=None)
  return apply_out_sharding(out, out_sharding, "broadcast_in_dim")


def _broadcast_in_dim_forwarding(avals, *, shape, broadcast_dimensions, sharding):
  aval, = avals
  if (sharding is None and aval.shape == shape
      and broadcast_dimensions == tuple(range(len(shape)))):
    return 0
  return None

jaxpr_lib.forwarding_rules[broadcast_in_dim_p] = _broadcast_in_dim_forwarding


def broadcast(operand, sizes, out_sharding=None):
  """Adds leading dimensions of the given sizes to ``operand``.

  Args:
    operand: input array.
    sizes: sizes of the new leading dimensions (static).
    out_sharding: optional sharding of the result.

  Returns:
    An array of shape ``tuple(sizes) + operand.shape``.

  Examples:
    >>> lax.broadcast(jnp.array([1, 2]), (2,))
    Array([[1, 2],
           [1, 2]], dtype=int32)
  """
  try:
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "broadcast", operand, sizes, out_sharding)
  sizes = _shape_tuple("broadcast", sizes)
  dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
  return broadcast_in_dim(operand, sizes + aval.shape, dims, out_sharding=out_sharding)


# --- reshape -----------------------------------------------------------------------------

def _reshape_shape_rule(operand, *, new_sizes, dimensions, sharding=None):
  _check_shapelike("reshape", "new_sizes", new_sizes)
  if any(d < 0 for d in new_sizes):
    raise TypeError(f"reshape: new_sizes must be non-negative, got {new_sizes}")
  if math.prod(new_sizes) != operand.size:
    raise TypeError(f"reshape: cannot reshape {operand.str_short()} (size {operand.size}) "
                    f"to shape {new_sizes} (size {math.prod(new_sizes)})")
  if dimensions is not None:
    # ``lax.reshape`` transposes first, so the primitive never carries a permutation.
    raise TypeError("reshape_p: dimensions must be None (apply lax.transpose first)")
  return tuple(new_sizes)


reshape_p = standard_primitive(_reshape_shape_rule, _keep_dtype, "reshape",
                               weak_type_rule=_keep_weak)

def _reshape_lowering(ctx, x, *, new_sizes, dimensions, sharding=None):
  return xla.reshape(x, ctx.avals_out[0])

xla.register_lowering(reshape_p, _reshape_lowering)
ad.deflinear(reshape_p, lambda ct, operand, **params: [reshape(ct, operand.aval.shape)])

def _reshape_batch_rule(vals, dims, *, new_sizes, dimensions, sharding=None):
  # A row-major reshape mixes every dimension but the leading one: batch there.
  operand, = vals
  operand = batching.moveaxis(operand, dims[0], 0)
  size = get_aval(operand).shape[0]
  return reshape_p.bind(operand, new_sizes=(size,) + tuple(new_sizes), dimensions=None,
                        sharding=None), 0

batching.primitive_batchers[reshape_p] = _reshape_batch_rule


def reshape(operand, new_sizes, dimensions=None, out_sharding=None):
  """Reshapes ``operand`` to ``new_sizes`` in row-major order.

  The element count must not change (else ``TypeError``). With ``dimensions``, a permutation
  of the operand's dimensions, the operand is transposed by it before reshaping.

  Args:
    operand: input array.
    new_sizes: the result shape (static).
    dimensions: optional permutation applied first.
    out_sharding: optional sharding of the result.

  Returns:
    An array of shape ``new_sizes`` and ``operand``'s dtype.

  Examples:
    >>> lax.reshape(jnp.arange(6), (2, 3))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    >>> lax.reshape(jnp.arange(6).reshape(2, 3), (6,), dimensions=(1, 0))
    Array([0, 3, 1, 4, 2, 5], dtype=int32)
  """
  new_sizes = _shape_tuple("reshape", new_sizes)
  try:
    if dimensions is not None:
      dimensions = _static_ints("reshape", "dimensions", dimensions)
      if dimensions != tuple(range(get_aval(operand).ndim)):
        operand = transpose(operand, dimensions)
    aval = get_aval(operand)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "reshape", operand, new_sizes, dimensions, out_sharding)
  if aval.shape != new_sizes or not _is_array(operand):
    with sharding_types.result_sharding_given(out_sharding is not None):
      operand = reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None, sharding=None)
  return apply_out_sharding(operand, out_sharding, "reshape")


# --- transpose ---------------------------------------------------------------------------

def _transpose_shape_rule(operand, *, permutation):
  if tuple(sorted(permutation)) != tuple(range(operand.ndim)):
    raise TypeError(f"transpose: permutation {permutation} is not a permutation of the "
                    f"dimensions of operand {operand.str_short()}")
  return tuple(operand.shape[i] for i in permutation)


transpose_p = standard_primitive(_transpose_shape_rule, _keep_dtype, "transpose",
                                 weak_type_rule=_keep_weak)

def _transpose_lowering(ctx, x, *, permutation):
  return hlo.transpose(x, xla.dense_i64(permutation))

xla.register_lowering(transpose_p, _transpose_lowering)

def _transpose_transpose(ct, operand, *, permutation):
  inverse = tuple(int(i) for i in np.argsort(permutation))
  return [transpose(ct, inverse)]

ad.deflinear(transpose_p, _transpose_transpose)

def _transpose_batch_rule(vals, dims, *, permutation):
  # One transpose both permutes and brings the batch dimension to the front.
  operand, = vals
  bdim, = dims
  perm = (bdim,) + tuple(p + (p >= bdim) for p in permutation)
  return transpose(operand, perm), 0

batching.primitive_batchers[transpose_p] = _transpose_batch_rule


def transpose(operand, permutation):
  """Permutes the dimensions of ``operand``.

  Result dimension ``i`` is operand dimension ``permutation[i]``; anything but a permutation
  of ``range(operand.ndim)`` raises ``TypeError``.

  Args:
    operand: input array.
    permutation: a permutation of the operand's dimensions (static).

  Returns:
    The transposed array.

  Examples:
    >>> lax.transpose(jnp.arange(6).reshape(2, 3), (1, 0))
    Array([[0, 3],
           [1, 4],
           [2, 5]], dtype=int32)
  """
  permutation = _static_ints("transpose", "permutation", permutation)
  try:
    if permutation == tuple(range(get_aval(operand).ndim)) and _is_array(operand):
      return operand
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.lax", "transpose", operand, permutation)
  return transpose_p.bind(operand, permutation=permutation)


# --- reduce_sum --------------------------------------------------------------------------

def _broadcast_back(x, operand_aval, axes):
  """``x`` (an operand reduced over ``axes``) broadcast back to the operand's shape."""
  return broadcast_in_dim(x, operand_aval.shape, _kept_dims(operand_aval.ndim, axes))


reduce_sum_p = _reducer("reduce_sum", _is_number, "integer, floating or complex types",
                        _keep_weak, hlo.add, _zero)

def _reduce_sum_transpose(ct, operand, *, axes, out_sharding=None):
  return [_broadcast_back(ct, operand.aval, axes)]

ad.deflinear(reduce_sum_p, _reduce_sum_transpose)
defreducer(reduce_sum_p)


def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum of the elements of ``operand`` over ``axes``.

  The result keeps the operand's dtype and weak type (no accumulation-type promotion, unlike
  ``jnp.sum``). Axes must be non-negative and in range (else ``ValueError``). Linear: its
  gradient broadcasts the cotangent back.

  Args:
    operand: input array.
    axes: a sequence of distinct, non-negative dimensions to reduce (static).
    out_sharding: keyword-only; optional sharding of the result.

  Returns:
    An array of ``operand``'s shape without ``axes``.

  Examples:
    >>> lax.reduce_sum(jnp.array([[1., 2.], [3., 4.]]), (1,))
    Array([3., 7.], dtype=float32)
  """
  axes = _axes_param(axes)
  if not config._values["allow_f16_reductions"]:
    aval = get_aval(operand)
    if aval.dtype in _F16_TYPES and any(aval.shape[d] != 1 for d in axes):
      raise ValueError(f"reduce_sum on operand {aval.str_short()} is not allowed when "
                       "jax_allow_f16_reductions=False.")
  # With ``out_sharding`` the result's type is the one asked for (the constraint below):
  # no type of its own, which would constrain the sum in between (partial sums over one
  # set of axes cannot become partial sums over another).
  with sharding_types.result_sharding_given(out_sharding is not None):
    out = reduce_sum_p.bind(operand, axes=axes, out_sharding=None)
  return apply_out_sharding(out, out_sharding, "reduce_sum")


_F16_TYPES = (np.dtype(np.float16), dtypes.bfloat16)


# --- convert_element_type ----------------------------------------------------------------

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
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype == aval_out.dtype:  # a weak type made strong: JAX's programs keep the op
    return hlo.convert(xla.aval_to_ir_type(aval_out), x)
  return xla.convert_hlo(x, aval_in, aval_out)

xla.register_lowering(convert_element_type_p, _convert_lowering)

def _convert_jvp(t, ans, operand, *, new_dtype, weak_type):
  # float -> float (or complex) converts the tangent; to an integer or bool the tangent is a
  # float0 zero. (From an integer the input tangent is already a symbolic zero.)
  if not dtypes.is_inexact(new_dtype):
    return ad.Zero.from_primal_value(ans)
  return convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)

def _convert_transpose(ct, operand, *, new_dtype, weak_type):
  aval = operand.aval
  if type(ct) is ad.Zero or not dtypes.is_inexact(aval.dtype):
    return [ad.Zero(aval.to_tangent_aval())]
  if get_aval(ct).dtype == aval.dtype and get_aval(ct).weak_type == aval.weak_type:
    return [ct]
  # complex -> real transposes to real -> complex (the cotangent of the dropped imaginary
  # part is zero), and the other way round keeps the real part.
  return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]

def _convert_fold(values, avals, *, new_dtype, weak_type):
  # As JAX: a literal's conversion is done on the host (no equation), where NumPy holds the
  # result type.
  new_dtype = np.dtype(new_dtype)
  if avals[0].shape or new_dtype.kind not in "biufc" or dtypes.is_extended(new_dtype):
    return None
  out = np.asarray(values[0])
  if out.dtype.kind == "c" and new_dtype.kind != "c":
    out = out.real
  if dtypes.is_inexact(out.dtype) and dtypes.is_int(new_dtype):  # as XLA's, not NumPy's
    out = _saturating_float_to_int(out, new_dtype)
  return out.astype(new_dtype), ShapedArray((), new_dtype, weak_type=weak_type)

jaxpr_lib.const_fold_rules[convert_element_type_p] = _convert_fold
ad.defjvp2(convert_element_type_p, _convert_jvp)
ad.primitive_transposes[convert_element_type_p] = _convert_transpose
defvectorized(convert_element_type_p)


# --- user-defined extended dtypes ---------------------------------------------------------
# A dtype subclassing ``dtypes.ExtendedDType`` with ``_rules`` (JAX's protocol: flax's fp8
# ``fp8_meta32`` wraps float32 so that autodiff accumulates with ``max``) is stored as its
# physical element type (``_rules.physical_element_aval``, trailing dimensions included).
# ``convert_element_type`` moves values in and out of it where the rules allow, through
# these two primitives (JAX's names); in a program both are no-ops on the physical data.
# (Typed PRNG keys are not such dtypes in hlox: they are traced as their uint32 words.)

def _physical(dtype):
  return dtype._rules.physical_element_aval(dtype)


def _to_edtype_abstract(x, *, edtype):
  n = len(_physical(edtype).shape)
  return ShapedArray(x.shape[:len(x.shape) - n], edtype)


def _from_edtype_abstract(x, *, dtype):
  return ShapedArray((*x.shape, *_physical(x.dtype).shape), dtype)


to_edtype_p = standard_primitive(lambda x, *, edtype: _to_edtype_abstract(x, edtype=edtype).shape,
                                 lambda x, *, edtype: edtype, "to_edtype")
from_edtype_p = standard_primitive(
    lambda x, *, dtype: _from_edtype_abstract(x, dtype=dtype).shape,
    lambda x, *, dtype: dtype, "from_edtype")
def _to_edtype_eager(x, *, edtype):
  raise NotImplementedError(
      f"hlox holds no arrays of the extended dtype {edtype} outside a compiled function "
      "(JAX's EArray): convert to it inside a jit-compiled function")

to_edtype_p.def_impl(_to_edtype_eager)
for _p in (to_edtype_p, from_edtype_p):
  xla.register_lowering(_p, lambda ctx, x, **params: x)  # the same physical data
  defvectorized(_p)
ad.deflinear(to_edtype_p, lambda ct, x, *, edtype: [
    from_edtype_p.bind(ct, dtype=x.aval.dtype)])
ad.deflinear(from_edtype_p, lambda ct, x, *, dtype: [
    to_edtype_p.bind(ct, edtype=x.aval.dtype)])


def _convert_extended(operand, new_dtype):
  """``convert_element_type`` where a dtype is a user's extended one (with ``_rules``)."""
  old = get_aval(operand).dtype
  if old == new_dtype:
    return operand
  new_rules, old_rules = dtypes.user_rules(new_dtype), dtypes.user_rules(old)
  if new_rules is not None and not dtypes.is_extended(old) and \
      new_rules.convert_to(old, new_dtype):
    return to_edtype_p.bind(operand, edtype=new_dtype)
  if old_rules is not None and not dtypes.is_extended(new_dtype) and \
      old_rules.convert_from(old, np.dtype(new_dtype)):
    return from_edtype_p.bind(operand, dtype=np.dtype(new_dtype))
  raise ValueError(f"Cannot convert_element_type from {old} to {new_dtype}")


def _saturating_float_to_int(value, dtype):
  """Float to integer on the host as XLA converts on the device (so a constant gives what the
  same value computed gives): truncation toward zero, saturating at the integer range
  (negative -> 0 for unsigned, +-inf -> the extremes), NaN -> 0. NumPy's cast is undefined
  out of range."""
  info = dtypes.iinfo(dtype)
  v = np.asarray(value, dtype=np.float64)
  high, low, nan = v >= float(info.max), v <= float(info.min), np.isnan(v)
  out = np.trunc(np.where(high | low | nan, 0.0, v)).astype(dtype)
  return np.where(high, np.asarray(info.max, dtype), np.where(low, np.asarray(info.min, dtype),
                                                              out)).astype(dtype)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Casts ``operand`` to ``new_dtype``.

  The dtype is canonicalized (64-bit types only with x64 enabled). Float to integer
  conversion rounds toward zero; conversion to bool tests ``!= 0``; complex to real keeps the
  real part. The result is strongly typed unless ``weak_type`` is set. Differentiable between
  inexact dtypes (the tangent is cast likewise); integer results have zero derivative.

  Args:
    operand: array or scalar to convert.
    new_dtype: the target dtype.
    weak_type: if True, mark the result weakly typed (an hlox extension).

  Returns:
    An array of ``operand``'s shape and dtype ``new_dtype``.

  Examples:
    >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32)
    Array([ 1, -1], dtype=int32)
    >>> lax.convert_element_type(jnp.array([0., 2.]), bool)
    Array([False,  True], dtype=bool)
  """
  if new_dtype is None:  # NumPy would read None as float64
    raise ValueError(f"convert_element_type: dtype must be specified (operand "
                     f"{get_aval(operand).str_short()})")
  if dtypes.user_rules(new_dtype) is not None:
    return _convert_extended(operand, new_dtype)
  try:
    new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type", user_only=True)
  except TypeError:
    if dtypes.is_extended(new_dtype):
      raise ValueError(f"Cannot convert_element_type from {_dtype_name(operand)} to "
                       f"{new_dtype}") from None
    raise
  if type(operand) is int and dtypes.is_int(new_dtype) and not -2 ** 31 <= operand < 2 ** 31:
    # A Python int outside int32 converts (wrapping, as NumPy's cast does) straight to the
    # integer target, as in JAX: convert_element_type(2 ** 32, 'int32') is 0.
    operand = np.asarray(operand)
  if not hasattr(operand, "aval"):
    if type(operand) is _DimExpr:  # a symbolic size: its value in the program
      return convert_element_type(dimension_as_value(operand), new_dtype, weak_type)
    if dtypes.extended_dtype_of(operand) is not None:  # typed keys convert to nothing
      raise ValueError(f"Cannot convert_element_type from {operand.dtype} to {new_dtype}")
    # Python scalars and NumPy values convert on the host: no primitive, and under a trace
    # they become literals or constants.
    if type(operand) is int and dtypes.is_inexact(new_dtype):
      # Straight to the float (as JAX's): a Python int too large for any integer dtype
      # (2 ** 100) converts too, and for the others the result is the same.
      operand = np.asarray(operand, dtype=new_dtype)
    elif type(operand) in _PY_SCALARS:
      # Through the scalar's own 64-bit type when the target is a 64-bit type kept with x64
      # off ('allow'): convert_element_type(0.1, float64) is 0.1, as in JAX.
      wide = dtypes.canonicalize_dtype(new_dtype) != new_dtype
      operand = np.asarray(operand) if wide else np.asarray(
          operand, dtype=dtypes.python_scalar_dtype(operand))
    value = np.asarray(operand)
    if dtypes.is_complex(value.dtype) and not dtypes.is_complex(new_dtype):
      value = value.real
    if dtypes.is_inexact(value.dtype) and dtypes.is_int(new_dtype):
      value = _saturating_float_to_int(value, new_dtype)
    else:
      # Traced, a NumPy array already of ``new_dtype`` stays the same object, so that the
      # trace makes one constant for it however many times it is used (as JAX's does).
      value = value.astype(new_dtype, copy=trace_ctx.trace is eval_trace)
    if weak_type:
      # NumPy values cannot be weakly typed. A scalar becomes the Python scalar of that dtype
      # (a weak literal under a trace); anything else a weak Array.
      py_type = dtypes.scalar_type_of(new_dtype)
      if (value.shape == () and py_type is not bool
          and dtypes.python_scalar_dtype(py_type(0)) == new_dtype):
        return py_type(value.item())
      return put_requested(value, weak_type=True)
    # Eagerly the result is an Array, as JAX's; under a trace the host value (a literal or
    # constant where it is used), unless it is 64-bit with x64 off (kept under 'allow'),
    # which a host value would not stay: an Array of its type is then the constant.
    if trace_ctx.trace is eval_trace or dtypes.canonicalize_dtype(new_dtype) != new_dtype:
      return put_requested(value)
    return value
  aval = get_aval(operand)
  if aval.dtype == new_dtype and aval.weak_type == weak_type:
    return operand
  if dtypes.user_rules(aval.dtype) is not None:
    return _convert_extended(operand, new_dtype)
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _dtype_name(x) -> str:
  extended = dtypes.extended_dtype_of(x)
  return str(extended) if extended is not None else dtypes.dtype_of(x).name


# --- filled arrays -----------------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of ``shape`` filled with the scalar ``fill_value``.

  Without ``dtype`` the dtype (and weak type) is that of ``fill_value``; a Python scalar thus
  gives a weakly typed result. A non-scalar ``fill_value`` raises ``TypeError``.

  Args:
    shape: the result shape (static).
    fill_value: a scalar (may be traced).
    dtype: optional result dtype.
    sharding: keyword-only; optional sharding of the result.

  Returns:
    The filled array.

  Examples:
    >>> lax.full((2,), 3, jnp.float32)
    Array([3., 3.], dtype=float32)
    >>> lax.full((2, 2), 3.)
    Array([[3., 3.],
           [3., 3.]], dtype=float32, weak_type=True)
  """
  shape = _shape_tuple("full", shape)
  if dtypes.user_rules(dtype) is not None:  # a user's extended dtype fills its own way
    return dtype._rules.full(shape, fill_value, dtype)
  aval = get_aval(fill_value)
  if aval.ndim != 0:
    raise TypeError(f"full: fill_value must be a scalar, got shape {aval.shape}")
  if dtype is None:
    weak, dtype = aval.weak_type, aval.dtype
  else:
    weak, dtype = False, dtypes.check_user_dtype(dtype, "full", user_only=True)
  return broadcast(_scalar_of(fill_value, dtype, weak), shape, out_sharding=sharding)


def full_exact(shape, fill_value, dtype):
  """``full``, with ``dtype`` kept as given even where ``full`` would narrow it (a 64-bit
  dtype while x64 is off): for values whose type was fixed while ``enable_x64()`` was on
  (a loop's outputs, say) and that are made again later."""
  if dtypes.user_rules(dtype) is not None:
    return full(shape, fill_value, dtype)
  dtype = np.dtype(dtype)
  canonical = dtypes.canonicalize_dtype(dtype)
  value = _scalar_of(fill_value, canonical, False)
  if canonical != dtype:
    value = convert_element_type_p.bind(broadcast_in_dim(value, (), ()), new_dtype=dtype,
                                        weak_type=False)
  return broadcast(value, _shape_tuple("full", shape))


def _scalar_of(value, dtype, weak):
  """``value`` (a scalar) as a ``dtype`` scalar, weakly typed when ``weak``.

  Python scalars that already have the right (weak) type stay Python scalars, so they
  become literals under a trace; other host values become NumPy scalars.
  """
  if not _is_array(value):
    if weak:
      as_python = _as_python_scalar(value, dtype)
      if as_python is not None:
        return as_python
    value = convert_element_type(value, dtype)
    if not weak:
      return value
    value = broadcast_in_dim(value, (), ())  # now an Array: can carry the weak type
  return convert_element_type(value, dtype, weak_type=weak)


def _as_python_scalar(value, dtype):
  """``value`` as the Python scalar whose (weak) dtype is ``dtype``, if there is one."""
  kind = dtypes.scalar_type_of(dtype)
  if kind is bool:
    return None
  try:
    py = kind(np.asarray(value).item())
  except (TypeError, ValueError, OverflowError):
    return None
  if kind is int and not dtypes.iinfo(dtype).min <= py <= dtypes.iinfo(dtype).max:
    return None
  return py if dtypes.python_scalar_dtype(py) == dtype else None


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """An array filled with ``fill_value``, with the shape and dtype of ``x``.

  The dtype and weak type come from ``x`` unless ``dtype`` is given; ``shape`` overrides the
  shape.

  Args:
    x: array (or scalar) whose shape and dtype are used.
    fill_value: a scalar.
    dtype: optional result dtype.
    shape: optional result shape.
    sharding: optional sharding of the result.

  Returns:
    The filled array.

  Examples:
    >>> lax.full_like(jnp.array([1, 2]), 7)
    Array([7, 7], dtype=int32)
    >>> lax.full_like(jnp.array([1, 2]), 7, jnp.float32, (2, 2))
    Array([[7., 7.],
           [7., 7.]], dtype=float32)
  """
  aval = get_aval(x)
  fill_shape = aval.shape if shape is None else _shape_tuple("full_like", shape)
  weak = dtype is None and aval.weak_type
  dtype = aval.dtype if dtype is None else dtypes.check_user_dtype(dtype, "full_like",
                                                                   user_only=True)
  if get_aval(fill_value).ndim != 0:
    raise TypeError(f"full_like: fill_value must be a scalar, got shape "
                    f"{get_aval(fill_value).shape}")
  if sharding is None and shape is None:
    # As JAX: a value split over Explicit mesh axes gives its split to the new one.
    sharding = _named_type_sharding(x)
  out = broadcast(_scalar_of(fill_value, dtype, weak), fill_shape, out_sharding=sharding)
  if sharding is None:
    # As JAX: like an array committed to a device, the result is made there; like one laid
    # out over a mesh, it is laid out the same way (a new shape only if x is replicated).
    device = committed_device(x)
    if device is not None and type(out) is type(x):
      out = device_put(out, device)
    elif (type(x) is Array and type(out) is Array and x._multi is not None and x.committed
          and (shape is None or x.sharding.is_fully_replicated)):
      out = device_put(out, x.sharding)
  return out


def _named_type_sharding(x):
  """``x``'s split over Explicit mesh axes as a NamedSharding (None when it has none)."""
  split = type_sharding(x)
  return None if split is None else sharding_lib.named_of_type(split)


# --- batching registrars -----------------------------------------------------------------

def moveaxis(x, src: int, dst: int):
  """``x`` with dimension ``src`` moved to position ``dst`` (a transpose)."""
  ndim = get_aval(x).ndim
  src, dst = src % ndim, dst % ndim
  if src == dst:
    return x
  perm = [d for d in range(ndim) if d != src]
  perm.insert(dst, src)
  return transpose(x, tuple(perm))


def broadcast_batched(x, size: int, dim: int):
  """Insert a mapped axis of ``size`` at ``dim`` into an unmapped value."""
  aval = get_aval(x)
  shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
  dims = tuple(d for d in range(len(shape)) if d != dim)
  return broadcast_in_dim(x, shape, dims)


def defbroadcasting(prim) -> None:
  """Batching for an n-ary elementwise primitive (operands of equal rank, or scalars).

  Batch dimensions go to the front; unbatched operands get a leading size-1 dimension (which
  the primitive broadcasts) and batched per-example scalars get trailing size-1 dimensions.
  """

  def rule(vals, dims, **params):
    ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims)]
    rank = max(ranks)
    batched_dims = {d for d in dims if d is not None}
    if len(batched_dims) == 1 and all(r == rank if d is not None else r == 0
                                      for d, r in zip(dims, ranks)):
      # Batched operands agree on the batch dimension, unbatched ones are scalars.
      return prim.bind(*vals, **params), next(iter(batched_dims))
    if any(r not in (0, rank) for r in ranks):
      shapes = ", ".join(str(get_aval(v).shape) + ("" if d is None else f" (batch dim {d})")
                         for v, d in zip(vals, dims))
      raise TypeError(f"{prim.name}: operands must have equal ranks or be scalars; got "
                      f"{shapes} under vmap")
    args = []
    for v, d, r in zip(vals, dims, ranks):
      shape = get_aval(v).shape
      if d is None:
        args.append(v if r == 0 else reshape(v, (1,) + shape))
      else:
        v = batching.moveaxis(v, d, 0)
        if r < rank:
          v = reshape(v, (get_aval(v).shape[0],) + (1,) * (rank - r) + get_aval(v).shape[1:])
        args.append(v)
    return prim.bind(*args, **params), 0
  batching.primitive_batchers[prim] = rule


batching.register_batching_ops(moveaxis, broadcast_batched)


# Pure data movement: bytes but no arithmetic in the cost estimates (hlox.viz).
for _p in (broadcast_in_dim_p, reshape_p, transpose_p):
  cost.register_cost(_p, cost.data_movement_cost)
del _p


sharding_types.sharding_rules.update({
    broadcast_in_dim_p: sharding_types.broadcast_in_dim_rule,
    reshape_p: sharding_types.reshape_rule,
    transpose_p: sharding_types.transpose_rule,
    reduce_sum_p: sharding_types.reduction_rule,
})
