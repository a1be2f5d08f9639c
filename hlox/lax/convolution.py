"""Convolution: ``conv_general_dilated_p``, one ``stablehlo.convolution``, with all of its
rules (shape and dtype, JVP and the two transposes, batching, lowering); the public
``conv_general_dilated``, ``conv``, ``conv_with_general_padding`` and ``conv_transpose``; the
output-shape helpers (``conv_shape_tuple``, ``conv_general_shape_tuple``,
``conv_transpose_shape_tuple``, ``conv_general_permutations``); and two convolutions built
on the primitive: ``conv_general_dilated_patches`` (image patches) and
``conv_general_dilated_local`` (unshared kernels, a locally connected layer).
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from hlox.core import dtypes, sharding_types
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, cost, xla
from hlox.lax import elementwise, shapes
from hlox.lax.base import convert_element_type, full
from hlox.lax.dot import (DotAlgorithm, DotAlgorithmPreset, Precision, _needs_operand_conversion,
                          canonicalize_precision, dot_general)
from hlox.lax.utils import shape_str, standard_primitive
from hlox.lax.sharding_constraint import apply_out_sharding
from hlox.lax.windowed import padtype_to_pads

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers",
           "conv_dimension_numbers", "conv_general_dilated", "conv_general_dilated_p", "conv",
           "conv_with_general_padding", "conv_transpose",
           "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_permutations", "conv_general_dilated_patches",
           "conv_general_dilated_local"]


class ConvDimensionNumbers(NamedTuple):
  """Dimension positions: ``lhs_spec = (batch, feature, *spatial)``,
  ``rhs_spec = (out_feature, in_feature, *spatial)``, ``out_spec = (batch, feature,
  *spatial)``."""
  lhs_spec: tuple
  rhs_spec: tuple
  out_spec: tuple


ConvGeneralDilatedDimensionNumbers = ConvDimensionNumbers  # JAX's other name for the type


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """Normalizes convolution dimension numbers to a ``ConvDimensionNumbers``.

  Accepts None (the NCHW/OIHW/NCHW defaults), a ``ConvDimensionNumbers`` (returned as is) or
  three layout strings such as ``('NHWC', 'HWIO', 'NHWC')``. Operands of unequal rank raise
  ``TypeError``.

  Args:
    lhs_shape: the input's shape.
    rhs_shape: the kernel's shape.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.

  Returns:
    A ``ConvDimensionNumbers`` with ``lhs_spec``, ``rhs_spec`` and ``out_spec`` tuples.

  Examples:
    >>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ('NHWC', 'HWIO', 'NHWC'))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
  """
  nd = len(lhs_shape)
  if len(rhs_shape) != nd:
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
                    f"and {len(rhs_shape)}.")
  if dimension_numbers is None:
    spec = tuple(range(nd))
    return ConvDimensionNumbers(spec, spec, spec)
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
  if len(dimension_numbers) != 3:
    raise TypeError("convolution: dimension_numbers must be None, a ConvDimensionNumbers or "
                    f"three layout strings; got {dimension_numbers}")
  lhs, rhs, out = dimension_numbers
  if not all(isinstance(s, str) for s in (lhs, rhs, out)):
    return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in (lhs, rhs, out)))
  for s in (lhs, rhs, out):
    if len(s) != nd:
      raise TypeError(f"convolution: layout {s!r} does not have {nd} dimensions")
  if set(lhs) - set("NC") != set(rhs) - set("OI") or set(out) - set("NC") != set(lhs) - set("NC"):
    raise TypeError(f"convolution: the spatial dimensions of {dimension_numbers} differ")
  # Spatial dimensions are matched by letter and ordered as they appear in the kernel layout.
  spatial = [c for c in rhs if c not in "OI"]
  return ConvDimensionNumbers(
      (lhs.index("N"), lhs.index("C")) + tuple(lhs.index(c) for c in spatial),
      (rhs.index("O"), rhs.index("I")) + tuple(rhs.index(c) for c in spatial),
      (out.index("N"), out.index("C")) + tuple(out.index(c) for c in spatial))


# --- the primitive -----------------------------------------------------------------------

def _dilate_shape(shape, dilation):
  """Sizes after inserting ``d - 1`` holes between neighbours (an empty axis stays empty)."""
  return tuple(0 if n == 0 else (n - 1) * d + 1 for n, d in zip(shape, dilation))


def _conv_general_dilated_shape_rule(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                     rhs_dilation, dimension_numbers, feature_group_count,
                                     batch_group_count, **_):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  G, B = feature_group_count, batch_group_count
  name = f"conv_general_dilated (lhs {lhs.str_short()}, rhs {rhs.str_short()})"
  if lhs.ndim != rhs.ndim:
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of "
                     f"dimensions, but got {lhs.shape} and {rhs.shape} ({name})")
  if not all(len(s) == lhs.ndim for s in dimension_numbers):
    raise ValueError(f"{name}: dimension_numbers {dimension_numbers} must each name all "
                     f"{lhs.ndim} dimensions")
  if G < 1:
    raise ValueError(f"{name}: feature_group_count must be a positive integer, got {G}")
  if B < 1:
    raise ValueError(f"{name}: batch_group_count must be a positive integer, got {B}")
  if G > 1 and B > 1:
    raise ValueError(f"{name}: at most one of batch_group_count and feature_group_count may "
                     f"be > 1, got batch_group_count={B} and feature_group_count={G}")
  C, I = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]]
  N, O = lhs.shape[lhs_spec[0]], rhs.shape[rhs_spec[0]]
  if C % G:
    raise ValueError(f"{name}: feature_group_count must divide lhs feature dimension size, "
                     f"but {G} does not divide {C}")
  if C // G != I:
    raise ValueError(f"{name}: lhs feature dimension size divided by feature_group_count "
                     f"must equal the rhs input feature dimension size, but {C} // {G} != {I}")
  if O % G:
    raise ValueError(f"{name}: rhs output feature dimension size must be a multiple of "
                     f"feature_group_count, but {O} is not a multiple of {G}")
  if N % B:
    raise ValueError(f"{name}: batch_group_count must divide lhs batch dimension size, but "
                     f"{B} does not divide {N}")
  if O % B:
    raise ValueError(f"{name}: rhs output feature dimension size must be a multiple of "
                     f"batch_group_count, but {O} is not a multiple of {B}")
  n_sp = lhs.ndim - 2
  for what, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                  ("rhs_dilation", rhs_dilation), ("padding", padding)):
    if len(v) != n_sp:
      raise ValueError(f"{name}: {what} {tuple(v)} must have one entry per spatial "
                       f"dimension ({n_sp})")
  lhs_c = (N, C) + _dilate_shape([lhs.shape[d] for d in lhs_spec[2:]], lhs_dilation)
  rhs_c = (O, I) + _dilate_shape([rhs.shape[d] for d in rhs_spec[2:]], rhs_dilation)
  out_c = conv_shape_tuple(lhs_c, rhs_c, window_strides, padding, B)
  return tuple(out_c[i] for i in np.argsort(out_spec))


def _conv_general_dilated_dtype_rule(lhs, rhs, *, preferred_element_type, **_):
  if lhs.dtype != rhs.dtype:
    raise TypeError(f"conv_general_dilated requires arguments to have the same dtypes, got "
                    f"{lhs.dtype.name}, {rhs.dtype.name} ({shape_str((lhs, rhs))})")
  dtype = lhs.dtype
  if preferred_element_type is None or preferred_element_type == dtype:
    return dtype
  preferred = np.dtype(preferred_element_type)
  int_to_float = dtypes.is_int(dtype) and dtypes.is_float(preferred)
  if not int_to_float:
    for kind in (dtypes.is_int, dtypes.is_float, dtypes.is_complex):
      if kind(dtype) and not kind(preferred):
        raise TypeError(f"conv_general_dilated: preferred_element_type {preferred.name} is "
                        f"incompatible with input type {dtype.name}; the compatible "
                        "combinations are (integral, integral), (integral, floating), "
                        "(floating, floating), (complex, complex)")
    if dtypes.is_int(dtype) and not dtypes.is_unsigned_int(dtype) and \
        dtypes.is_unsigned_int(preferred):
      raise TypeError(f"conv_general_dilated: preferred_element_type {preferred.name} must "
                      f"have the same signedness as the input type {dtype.name}")
  if preferred.itemsize < np.dtype(dtype).itemsize:
    raise TypeError(f"conv_general_dilated: preferred_element_type {preferred.name} must not "
                    f"be narrower than the input type {dtype.name}")
  return preferred


def _conv_general_dilated_weak_rule(lhs, rhs, *, preferred_element_type, **_):
  return preferred_element_type is None and lhs.weak_type and rhs.weak_type


conv_general_dilated_p = standard_primitive(
    _conv_general_dilated_shape_rule, _conv_general_dilated_dtype_rule, "conv_general_dilated",
    weak_type_rule=_conv_general_dilated_weak_rule)


def _conv_params_for_printing(params):
  # As JAX prints it: unset options left out.
  return {k: v for k, v in params.items()
          if not (k in ("precision", "preferred_element_type") and v is None)}

conv_general_dilated_p.params_for_printing = _conv_params_for_printing


def _conv_general_dilated_cost(avals_in, avals_out, *, dimension_numbers, **_):
  # Each output element is a dot over one kernel window of one group's input features:
  # the kernel's size divided by its number of output features (padding taps included).
  _lhs, rhs = avals_in
  _, rhs_spec, _ = dimension_numbers
  taps = cost.size(rhs) // max(rhs.shape[rhs_spec[0]], 1)
  return cost.Cost(2 * cost.size(avals_out[0]) * taps, cost.io_bytes(avals_in, avals_out))

cost.register_cost(conv_general_dilated_p, _conv_general_dilated_cost)


# --- lowering ----------------------------------------------------------------------------

def _precision_config(precision):
  pair = precision if isinstance(precision, tuple) else (Precision.DEFAULT, Precision.DEFAULT)
  return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p.name) for p in pair])


def _conv_general_dilated_lowering(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation,
                                   rhs_dilation, dimension_numbers, feature_group_count,
                                   batch_group_count, precision, preferred_element_type):
  lhs_aval, rhs_aval = ctx.avals_in
  aval_out, = ctx.avals_out
  if dtypes.is_complex(lhs_aval.dtype) and ctx.module_context.platform != "tpu":
    # XLA's CPU convolution of complex numbers is a slow loop and GPUs have none: three real
    # convolutions instead (as JAX does on those platforms).
    return _complex_conv_lowering(
        ctx, lhs, rhs, window_strides=window_strides, padding=padding,
        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
        dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
        batch_group_count=batch_group_count, precision=precision,
        preferred_element_type=preferred_element_type)
  if _needs_operand_conversion(lhs_aval.dtype, aval_out.dtype):
    # Across kinds (int -> float) XLA wants operands of the result type.
    lhs = xla.convert_hlo(lhs, lhs_aval, lhs_aval.update(dtype=aval_out.dtype))
    rhs = xla.convert_hlo(rhs, rhs_aval, rhs_aval.update(dtype=aval_out.dtype))
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dnums = hlo.ConvDimensionNumbers.get(
      input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
      input_spatial_dimensions=list(lhs_spec[2:]),
      kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
      kernel_spatial_dimensions=list(rhs_spec[2:]),
      output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
      output_spatial_dimensions=list(out_spec[2:]))
  n_sp = len(lhs_spec) - 2
  pads = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(n_sp, 2))
  return hlo.convolution(
      xla.aval_to_ir_type(aval_out), lhs, rhs, dimension_numbers=dnums,
      feature_group_count=xla.i64_attr(feature_group_count),
      batch_group_count=xla.i64_attr(batch_group_count),
      window_strides=xla.dense_i64(window_strides), padding=pads,
      lhs_dilation=xla.dense_i64(lhs_dilation), rhs_dilation=xla.dense_i64(rhs_dilation),
      window_reversal=ir.DenseBoolArrayAttr.get([False] * n_sp),
      precision_config=_precision_config(precision))


def _complex_conv(x, y, *, preferred_element_type, **params):
  """``conv(x, y)`` for complex ``x``, ``y`` from three real convolutions (Gauss's trick:
  one multiplication fewer than the schoolbook four, at some cost in accuracy when real and
  imaginary parts differ greatly in size)."""
  real_pref = (None if preferred_element_type is None
               else np.finfo(preferred_element_type).dtype)

  def conv(a, b):
    return conv_general_dilated_p.bind(a, b, preferred_element_type=real_pref, **params)

  xr, xi = elementwise.real(x), elementwise.imag(x)
  yr, yi = elementwise.real(y), elementwise.imag(y)
  k1 = conv(elementwise.add(xr, xi), yr)
  k2 = conv(xr, elementwise.sub(yi, yr))
  k3 = conv(xi, elementwise.add(yr, yi))
  return elementwise.complex(elementwise.sub(k1, k3), elementwise.add(k1, k2))

_complex_conv_lowering = xla.lower_fun(_complex_conv, multiple_results=False)

xla.register_lowering(conv_general_dilated_p, _conv_general_dilated_lowering)


# --- transposes --------------------------------------------------------------------------
# Without the spatial dimensions a convolution is a matrix product [n, c] x [c, o] -> [n, o],
# so its transposes are too: the lhs cotangent is [n, o] x [o, c] (a convolution of the
# cotangent with the flipped kernel, input and output features swapped, strides turned into
# input dilation), the rhs cotangent is [c, n] x [n, o] (lhs and cotangent convolved with
# batch and feature dimensions swapped). Groups: with g feature groups the lhs transpose is
# again feature-grouped (after moving the group from the kernel's O to its I), the rhs
# transpose batch-grouped; with batch groups the other way round.

def _swap_spec(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_into(src, dst, x):
  """Merge axis ``src`` of ``x`` into axis ``dst`` (numbered without ``src``), ``src`` being
  the major part."""
  shape = get_aval(x).shape
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new_shape = [shape[i] for i in range(len(shape)) if i != src]
  new_shape[dst] *= shape[src]
  return shapes.reshape(x, tuple(new_shape), tuple(perm))


def _reshape_axis_out_of(src, size1, x):
  """Split axis ``src`` of ``x`` into ``(size1, rest)``."""
  shape = list(get_aval(x).shape)
  shape[src:src + 1] = [size1, shape[src] // size1]
  return shapes.reshape(x, tuple(shape))


def _transpose_lhs_padding(in_sp, k_sp, strides, out_sp, padding, lhs_dilation, rhs_dilation):
  in_d = _dilate_shape(in_sp, lhs_dilation)
  k_d = _dilate_shape(k_sp, rhs_dilation)
  out_d = _dilate_shape(out_sp, strides)
  pads = []
  for i, k, o, (lo, _) in zip(in_d, k_d, out_d, padding):
    before = k - lo - 1
    pads.append((before, i + k - 1 - o - before))
  return tuple(pads)


def _transpose_rhs_padding(in_sp, k_sp, strides, out_sp, padding, lhs_dilation, rhs_dilation):
  in_d = _dilate_shape(in_sp, lhs_dilation)
  k_d = _dilate_shape(k_sp, rhs_dilation)
  out_d = _dilate_shape(out_sp, strides)
  return tuple((lo, (o - i) + (k - lo - 1))
               for i, k, o, (lo, _) in zip(in_d, k_d, out_d, padding))


def _conv_general_dilated_transpose_lhs(ct, lhs, rhs, *, window_strides, padding,
                                        lhs_dilation, rhs_dilation, dimension_numbers,
                                        feature_group_count, batch_group_count, precision,
                                        preferred_element_type):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_aval, rhs_aval, ct_aval = lhs.aval, get_aval(rhs), get_aval(ct)
  groups = max(feature_group_count, batch_group_count)
  if groups > 1:
    # The kernel's O holds (group, O/group); the transposed kernel needs the group in I.
    rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
  pads = _transpose_lhs_padding(
      [lhs_aval.shape[d] for d in lhs_spec[2:]], [rhs_aval.shape[d] for d in rhs_spec[2:]],
      window_strides, [ct_aval.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
      rhs_dilation)
  kernel = shapes.rev(rhs, tuple(rhs_spec[2:]))
  if get_aval(kernel).dtype != ct_aval.dtype:
    kernel = convert_element_type(kernel, ct_aval.dtype)
  out = conv_general_dilated_p.bind(
      ct, kernel, window_strides=tuple(lhs_dilation), padding=pads,
      lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
      dimension_numbers=ConvDimensionNumbers(out_spec, _swap_spec(rhs_spec), lhs_spec),
      feature_group_count=groups, batch_group_count=1, precision=precision,
      preferred_element_type=preferred_element_type)
  if get_aval(out).dtype != lhs_aval.dtype:
    out = convert_element_type(out, lhs_aval.dtype)
  if batch_group_count > 1:
    # The result's features hold (group, C); the lhs had the group in its batch.
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return out


def _conv_general_dilated_transpose_rhs(ct, lhs, rhs, *, window_strides, padding,
                                        lhs_dilation, rhs_dilation, dimension_numbers,
                                        feature_group_count, batch_group_count, precision,
                                        preferred_element_type):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_aval, rhs_aval, ct_aval = get_aval(lhs), rhs.aval, get_aval(ct)
  if ct_aval.size == 0:
    # Nothing flows back, and the transposed convolution would have an empty window.
    return ad.Zero(rhs_aval)
  pads = _transpose_rhs_padding(
      [lhs_aval.shape[d] for d in lhs_spec[2:]], [rhs_aval.shape[d] for d in rhs_spec[2:]],
      window_strides, [ct_aval.shape[d] for d in out_spec[2:]], padding, lhs_dilation,
      rhs_dilation)
  if lhs_aval.dtype != ct_aval.dtype:
    lhs = convert_element_type(lhs, ct_aval.dtype)
  out = conv_general_dilated_p.bind(
      lhs, ct, window_strides=tuple(rhs_dilation), padding=pads,
      lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
      dimension_numbers=ConvDimensionNumbers(_swap_spec(lhs_spec), _swap_spec(out_spec),
                                             _swap_spec(rhs_spec)),
      feature_group_count=batch_group_count, batch_group_count=feature_group_count,
      precision=precision, preferred_element_type=preferred_element_type)
  if get_aval(out).dtype != rhs_aval.dtype:
    out = convert_element_type(out, rhs_aval.dtype)
  return out

ad.defbilinear(conv_general_dilated_p, _conv_general_dilated_transpose_lhs,
               _conv_general_dilated_transpose_rhs)


# --- batching ----------------------------------------------------------------------------
# A convolution has one batch dimension, so a vmapped one is folded into the batch or feature
# dimensions: a batched lhs into N (each example is more images), a batched rhs into O (more
# filters), both into C and O with feature_group_count multiplied by the vmapped size (each
# example is its own group). With groups the vmapped axis goes inside the group axis, since
# XLA takes groups as the outermost part of the dimension.

def _fold_inside_groups(x, dim, groups):
  """``x`` with its vmapped axis in front merged into ``dim`` (numbered without it) as the
  middle of ``(groups, vmapped, dim / groups)``."""
  x = _reshape_axis_out_of(dim + 1, groups, x)    # (V, ..., groups, rest, ...)
  x = _reshape_axis_into(0, dim + 1, x)           # (..., groups, V * rest, ...)
  return _reshape_axis_into(dim, dim, x)


def _unfold_inside_groups(out, dim, groups, size):
  """Undo :func:`_fold_inside_groups` on a result: the vmapped axis comes out at ``dim``."""
  out = _reshape_axis_out_of(dim, groups, out)    # (..., groups, V * rest, ...)
  out = _reshape_axis_out_of(dim + 1, size, out)  # (..., groups, V, rest, ...)
  out = _reshape_axis_into(dim + 1, dim, out)     # (..., V * groups, rest, ...)
  out = _reshape_axis_out_of(dim, size, out)      # (..., V, groups, rest, ...)
  return _reshape_axis_into(dim + 1, dim + 1, out)


def _conv_general_dilated_batch_rule(vals, dims, **params):
  lhs, rhs = vals
  lbd, rbd = dims
  lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
  G, B = params["feature_group_count"], params["batch_group_count"]
  size = get_aval(lhs).shape[lbd] if lbd is not None else get_aval(rhs).shape[rbd]
  if lbd is not None:
    lhs = batching.moveaxis(lhs, lbd, 0)
  if rbd is not None:
    rhs = batching.moveaxis(rhs, rbd, 0)
  if size == 0:
    # Folding an empty axis would lose the others' sizes; the result is empty anyway.
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    unbatched = [a.update(shape=a.shape[1:]) if d is not None else a
                 for a, d in ((lhs_aval, lbd), (rhs_aval, rbd))]
    out = conv_general_dilated_p.abstract_eval(*unbatched, **params)
    return full((0,) + out.shape, 0, out.dtype), 0
  if lbd is not None and rbd is not None:
    if B > 1:
      lhs = _reshape_axis_into(0, lhs_spec[0], lhs)
      params = dict(params, batch_group_count=B * size)
    else:
      lhs = _reshape_axis_into(0, lhs_spec[1], lhs)
      params = dict(params, feature_group_count=G * size)
    rhs = _reshape_axis_into(0, rhs_spec[0], rhs)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  if lbd is not None:
    if B == 1:
      lhs = _reshape_axis_into(0, lhs_spec[0], lhs)
    else:
      lhs = _fold_inside_groups(lhs, lhs_spec[0], B)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
  groups = max(G, B)
  if groups == 1:
    rhs = _reshape_axis_into(0, rhs_spec[0], rhs)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  rhs = _fold_inside_groups(rhs, rhs_spec[0], groups)
  out = conv_general_dilated_p.bind(lhs, rhs, **params)
  return _unfold_inside_groups(out, out_spec[1], groups, size), out_spec[1]

batching.primitive_batchers[conv_general_dilated_p] = _conv_general_dilated_batch_rule


# --- the public functions ----------------------------------------------------------------

def _canonicalize_conv_precision(precision):
  given = precision
  precision = canonicalize_precision(precision)
  if given is None and isinstance(precision, DotAlgorithmPreset):
    return None  # a default_matmul_precision algorithm is for contractions only
  if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    raise ValueError(f"conv_general_dilated: precision must be None, a lax.Precision or a "
                     f"pair of them; dot algorithms are not supported, got {precision!r}")
  return precision


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General N-d convolution with strides, padding, dilations and feature/batch groups.

  Computes a cross-correlation (the kernel is not flipped), as XLA's convolution does.
  ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or one ``(low, high)`` pair per
  spatial dimension; string paddings apply to the dilated input and kernel.
  ``dimension_numbers`` is None (``lhs`` NCHW, ``rhs`` OIHW, output NCHW), a
  ``ConvDimensionNumbers``, or three layout strings such as ``('NHWC', 'HWIO', 'NHWC')``;
  strides, dilations and paddings follow the spatial order of the kernel layout. Wrong
  ranks, or strides/dilations/paddings of the wrong length, raise ``TypeError`` or
  ``ValueError``. Operands are promoted to a common dtype. Linear in each operand:
  differentiable in both modes, and batched under ``vmap``.

  Args:
    lhs: input array of rank ``N + 2``.
    rhs: kernel array of the same rank.
    window_strides: one stride per spatial dimension.
    padding: padding string, or a sequence of ``(low, high)`` pairs.
    lhs_dilation: optional input dilation per spatial dimension (transposed convolution).
    rhs_dilation: optional kernel dilation per spatial dimension (atrous convolution).
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.
    feature_group_count: number of feature groups (grouped and depthwise convolution).
    batch_group_count: number of batch groups (used by the kernel's gradient).
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.
    out_sharding: optional sharding of the result.

  Returns:
    The convolution, laid out as the output spec of ``dimension_numbers``.

  Examples:
    >>> x = jnp.arange(4.).reshape(1, 1, 4)   # N, C, W
    >>> k = jnp.ones((1, 1, 2))               # O, I, W
    >>> lax.conv_general_dilated(x, k, (1,), 'VALID')
    Array([[[1., 3., 5.]]], dtype=float32)
    >>> lax.conv_general_dilated(x.reshape(1, 4, 1), k.reshape(2, 1, 1), (1,), [(1, 0)],
    ...                          dimension_numbers=('NWC', 'WIO', 'NWC'))[..., 0]
    Array([[0., 1., 3., 5.]], dtype=float32)
  """
  lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
  nd = lhs_aval.ndim
  if nd < 2:
    raise TypeError(f"conv_general_dilated: lhs must have rank >= 2, got {lhs_aval.str_short()}")
  if isinstance(dimension_numbers, ConvDimensionNumbers) and rhs_aval.ndim != nd:
    # Explicit dimension numbers skip the layout normalization (and its TypeError): the
    # primitive's shape check raises, as in JAX.
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of "
                     f"dimensions, but got {lhs_aval.shape} and {rhs_aval.shape}.")
  dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
  n_sp = nd - 2
  window_strides = tuple(operator.index(s) for s in window_strides)
  lhs_dilation = (1,) * n_sp if lhs_dilation is None else tuple(
      operator.index(d) for d in lhs_dilation)
  rhs_dilation = (1,) * n_sp if rhs_dilation is None else tuple(
      operator.index(d) for d in rhs_dilation)
  for name, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                  ("rhs_dilation", rhs_dilation)):
    if len(v) != n_sp:
      raise ValueError(f"conv_general_dilated window and {name} must have the same number "
                       f"of dimensions, got {name} {v}; the window has {n_sp} (one per "
                       f"spatial dimension of lhs {lhs_aval.str_short()})")
    if any(d < 1 for d in v):
      raise ValueError(f"conv_general_dilated: {name} must be positive, got {v}")
  if isinstance(padding, str):
    # Strings pad the dilated input for the dilated kernel.
    in_sp = _dilate_shape([lhs_aval.shape[d] for d in dn.lhs_spec[2:]], lhs_dilation)
    k_sp = _dilate_shape([rhs_aval.shape[d] for d in dn.rhs_spec[2:]], rhs_dilation)
    pads = tuple(padtype_to_pads(in_sp, k_sp, window_strides, padding))
  else:
    try:
      pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
      raise ValueError("conv_general_dilated: padding argument must be a string or a "
                       f"sequence of (low, high) pairs, got {padding}") from None
    if len(pads) != n_sp:
      raise ValueError(f"conv_general_dilated: padding {padding} must have {n_sp} pairs")
  preferred = (None if preferred_element_type is None
               else dtypes.canonicalize_dtype(np.dtype(preferred_element_type)))
  out = conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=pads, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dn,
      feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=_canonicalize_conv_precision(precision), preferred_element_type=preferred)
  return apply_out_sharding(out, out_sharding, "conv_general_dilated")


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """Convolution in the default layouts (NCHW input, OIHW kernel) without dilation.

  A shorthand for ``conv_general_dilated(lhs, rhs, window_strides, padding)``.

  Args:
    lhs: input of shape ``(N, C, *spatial)``.
    rhs: kernel of shape ``(O, C, *window)``.
    window_strides: one stride per spatial dimension.
    padding: ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs.
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.

  Returns:
    The convolution, of shape ``(N, O, *out_spatial)``.

  Examples:
    >>> x = jnp.arange(4.).reshape(1, 1, 4)
    >>> lax.conv(x, jnp.ones((1, 1, 2)), (1,), 'SAME')
    Array([[[1., 3., 5., 3.]]], dtype=float32)
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """Convolution in the default layouts with explicit padding and dilations.

  A shorthand for ``conv_general_dilated`` with NCHW/OIHW layouts and no groups.

  Args:
    lhs: input of shape ``(N, C, *spatial)``.
    rhs: kernel of shape ``(O, C, *window)``.
    window_strides: one stride per spatial dimension.
    padding: padding string or ``(low, high)`` pairs.
    lhs_dilation: input dilation per spatial dimension (or None).
    rhs_dilation: kernel dilation per spatial dimension (or None).
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.

  Returns:
    The convolution, of shape ``(N, O, *out_spatial)``.

  Examples:
    >>> x = jnp.arange(4.).reshape(1, 1, 4)
    >>> lax.conv_with_general_padding(x, jnp.ones((1, 1, 2)), (1,), [(0, 0)], None, (2,))
    Array([[[2., 4.]]], dtype=float32)
  """
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=precision,
                              preferred_element_type=preferred_element_type)


_CONV_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                           4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_pads(k, s, padding):
  """Padding of the dilated input that makes the transposed convolution's output line up
  with the forward convolution's input (``padding`` names the forward padding)."""
  if padding == "SAME":
    total = k + s - 2
    lo = k - 1 if s > k - 1 else -(-total // 2)
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    lo = k - 1
  elif isinstance(padding, tuple):
    lo, hi = (k - p - 1 for p in padding)
    total = lo + hi
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """Transposed (fractionally strided) convolution.

  The input is dilated by ``strides`` and convolved with unit stride, which upsamples it.
  Default layouts are channels-last (NWC/WIO, NHWC/HWIO, NDHWC/DHWIO by rank); higher ranks
  need explicit ``dimension_numbers`` (else ``ValueError``). With ``transpose_kernel`` the
  kernel's spatial axes are flipped and its feature axes swapped, which makes this the
  gradient of a forward convolution (as TensorFlow's ``Conv2DTranspose``).

  Args:
    lhs: input array of rank ``N + 2``.
    rhs: kernel array of the same rank.
    strides: one upsampling factor per spatial dimension.
    padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` pairs for the dilated input.
    rhs_dilation: optional kernel dilation per spatial dimension.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.
    transpose_kernel: if True, flip and transpose the kernel as described above.
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.
    use_consistent_padding: if True, explicit pairs are read like the strings (as padding of
      the forward convolution).

  Returns:
    The upsampled convolution.

  Examples:
    >>> x = jnp.array([1., 2.]).reshape(1, 2, 1)       # N, W, C
    >>> lax.conv_transpose(x, jnp.ones((2, 1, 1)), (2,), 'VALID')[..., 0]
    Array([[1., 1., 2., 2.]], dtype=float32)
  """
  lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
  nd = lhs_aval.ndim
  if rhs_aval.ndim != nd or nd < 2:
    raise TypeError(f"conv_transpose: lhs and rhs must have the same rank >= 2, got "
                    f"{lhs_aval.str_short()} and {rhs_aval.str_short()}")
  if dimension_numbers is None:
    if nd not in _CONV_TRANSPOSE_LAYOUTS:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _CONV_TRANSPOSE_LAYOUTS[nd]
  dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
  k_sp = [rhs_aval.shape[d] for d in dn.rhs_spec[2:]]
  rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
  if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
    eff_k = [(k - 1) * d + 1 if k else 0 for k, d in zip(k_sp, rhs_dilation)]
    per_dim = [padding] * len(strides) if isinstance(padding, str) else padding
    pads = [_conv_transpose_pads(k, s, p) for k, s, p in zip(eff_k, strides, per_dim)]
  else:
    pads = padding
  if transpose_kernel:
    rhs = shapes.rev(rhs, tuple(dn.rhs_spec[2:]))
    perm = list(range(nd))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
    rhs = shapes.transpose(rhs, tuple(perm))
  return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, tuple(strides), rhs_dilation,
                              dn, precision=precision,
                              preferred_element_type=preferred_element_type)


# --- shapes, patches, unshared convolutions --------------------------------------------

def _window_out(size: int, window: int, stride: int) -> int:
  return 0 if size < window else (size - window) // stride + 1


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
  """Output shape of a convolution in the canonical layouts.

  Operands are taken as ``(N, C, *spatial)`` and ``(O, I, *window)``; no dilation.

  Args:
    lhs_shape: input shape.
    rhs_shape: kernel shape.
    strides: one stride per spatial dimension.
    pads: a padding string or ``(low, high)`` pairs.
    batch_group_count: number of batch groups (divides the batch size).

  Returns:
    The output shape ``(N, O, *out_spatial)`` as a tuple.

  Examples:
    >>> lax.conv_shape_tuple((2, 3, 8, 8), (4, 3, 3, 3), (2, 2), 'SAME')
    (2, 4, 4, 4)
  """
  lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
  n_sp = len(lhs_shape) - 2
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  pads = [tuple(int(v) for v in p) for p in pads]
  if len(pads) != n_sp:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected {n_sp}, got "
                    f"{len(pads)}.")
  padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
  if any(p < 0 for p in padded):
    raise ValueError(f"Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
  spatial = tuple(_window_out(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
  batch = lhs_shape[0]
  if batch_group_count > 1:
    if batch % batch_group_count:
      raise ValueError(f"conv_shape_tuple: lhs batch {batch} is not a multiple of "
                       f"batch_group_count {batch_group_count}")
    batch //= batch_group_count
  return (batch, rhs_shape[0]) + spatial


def conv_general_permutations(dimension_numbers):
  """Permutations taking each operand of a layout-string convolution to the canonical layout.

  For ``(lhs_spec, rhs_spec, out_spec)`` strings, the canonical layouts are
  ``(N, C, *spatial)``, ``(O, I, *spatial)`` and ``(N, C, *spatial)``, with spatial
  dimensions in the order they appear in ``rhs_spec``. Malformed specs raise ``TypeError``.

  Args:
    dimension_numbers: three layout strings.

  Returns:
    Three tuples of dimension indices.

  Examples:
    >>> lax.conv_general_permutations(('NHWC', 'HWIO', 'NHWC'))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  """
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  pairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, ((a, b), spec) in enumerate(zip(pairs, dimension_numbers)):
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {spec}.")
    if len(spec) != len(set(spec)):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                      f"characters, got {spec}.")
  spatial_sets = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
  if not spatial_sets[0] == spatial_sets[1] == spatial_sets[2]:
    raise TypeError("convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {dimension_numbers}.")
  spatial = [c for c in rhs_spec if c not in "OI"]

  def perm(spec, pair):
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spec.index(c) for c in spatial)

  return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def _canonical_shapes(lhs_shape, rhs_shape, dimension_numbers):
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  lhs = tuple(lhs_shape[d] for d in dn.lhs_spec)
  rhs = tuple(rhs_shape[d] for d in dn.rhs_spec)
  return dn, lhs, rhs


def _from_canonical(shape, out_spec):
  return tuple(int(shape[i]) for i in np.argsort(out_spec))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
  """Output shape of ``conv_general_dilated`` (without dilation) in a given layout.

  Args:
    lhs_shape: input shape.
    rhs_shape: kernel shape.
    window_strides: one stride per spatial dimension.
    padding: a padding string or ``(low, high)`` pairs.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.

  Returns:
    The output shape, laid out as the output spec.

  Examples:
    >>> lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 16), (1, 1), 'VALID',
    ...                              ('NHWC', 'HWIO', 'NHWC'))
    (1, 6, 6, 16)
  """
  dn, lhs, rhs = _canonical_shapes(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)
  return _from_canonical(conv_shape_tuple(lhs, rhs, window_strides, padding), dn.out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """Output shape of ``conv_transpose`` in a given layout.

  Args:
    lhs_shape: input shape.
    rhs_shape: kernel shape.
    window_strides: the upsampling strides.
    padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` pairs of the dilated input.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.

  Returns:
    The output shape, laid out as the output spec.

  Examples:
    >>> lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 8), (2, 2), 'SAME',
    ...                                ('NHWC', 'HWIO', 'NHWC'))
    (1, 8, 8, 8)
  """
  dn, lhs, rhs = _canonical_shapes(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)
  if isinstance(padding, str):
    padding = [_conv_transpose_pads(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
  totals = [int(lo) + int(hi) for lo, hi in padding]
  spatial = tuple((i - 1) * s - k + 2 + p
                  for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides, totals))
  return _from_canonical((lhs[0], rhs[0]) + spatial, dn.out_spec)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """Extracts the receptive-field patches that ``conv_general_dilated`` would see.

  The output's feature dimension holds each window flattened as ``(input feature,
  *filter_shape)`` (filter dimensions in ``rhs_spec`` order), so its size is
  ``C * prod(filter_shape)``. It is computed as a grouped convolution with a one-hot kernel,
  so it differentiates and batches like a convolution.

  Args:
    lhs: input array of rank ``N + 2``.
    filter_shape: the window's spatial shape.
    window_strides: one stride per spatial dimension.
    padding: padding string or ``(low, high)`` pairs.
    lhs_dilation: optional input dilation.
    rhs_dilation: optional window dilation.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.
    precision: None, a ``Precision`` value, or a pair of them (the first is used).
    preferred_element_type: optional result dtype.

  Returns:
    The patches, laid out as the convolution's output.

  Examples:
    >>> x = jnp.arange(4.).reshape(1, 1, 4)
    >>> lax.conv_general_dilated_patches(x, (2,), (1,), 'VALID')
    Array([[[0., 1., 2.],
            [1., 2., 3.]]], dtype=float32)
  """
  aval = get_aval(lhs)
  filter_shape = tuple(operator.index(k) for k in filter_shape)
  dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
  size = int(np.prod(filter_shape, dtype=np.int64))
  channels = aval.shape[dn.lhs_spec[1]]
  # Output feature c * size + k reads input feature c at window position k.
  eye = np.eye(size, dtype=aval.dtype)
  kernel = np.broadcast_to(eye, (channels, size, size)).reshape(
      (channels * size, 1) + filter_shape)
  kernel = np.moveaxis(kernel, (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
  pair = canonicalize_precision(precision)
  if isinstance(pair, tuple) and len(pair) == 2:  # a Precision pair: it is for lhs only
    precision = (pair[0], Precision.DEFAULT)
  return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                              rhs_dilation, dn, feature_group_count=channels,
                              precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """Unshared convolution (a locally connected layer): one kernel per output position.

  ``rhs``'s spatial dimensions index output positions and its ``I`` dimension is the
  flattened window (input feature, then ``filter_shape`` in ``rhs_spec`` order), as produced
  by ``conv_general_dilated_patches``.

  Args:
    lhs: input array of rank ``N + 2``.
    rhs: per-position kernels.
    window_strides: one stride per spatial dimension.
    padding: padding string or ``(low, high)`` pairs.
    filter_shape: the window's spatial shape.
    lhs_dilation: optional input dilation.
    rhs_dilation: optional window dilation.
    dimension_numbers: None, a ``ConvDimensionNumbers`` or three layout strings.
    precision: None, a ``Precision`` value, or a pair of them.

  Returns:
    The convolution, laid out as the output spec.

  Examples:
    >>> x = jnp.arange(4.).reshape(1, 1, 4)
    >>> lax.conv_general_dilated_local(x, jnp.ones((1, 2, 3)), (1,), 'VALID', (2,))
    Array([[[1., 3., 5.]]], dtype=float32)
  """
  pair = canonicalize_precision(precision)
  lhs_precision = pair[0] if isinstance(pair, tuple) and len(pair) == 2 else pair
  patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                         lhs_dilation, rhs_dilation, dimension_numbers,
                                         precision=lhs_precision)
  aval = get_aval(lhs)
  dn = conv_dimension_numbers(aval.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
  # Contract the patch features with rhs's I dimension, one batch per output position
  # (positions paired in ascending order of the output's spatial dimensions).
  order = sorted(range(len(dn.out_spec) - 2), key=lambda i: dn.out_spec[2 + i])
  lhs_batch = tuple(dn.out_spec[2 + i] for i in order)
  rhs_batch = tuple(dn.rhs_spec[2 + i] for i in order)
  out = dot_general(patches, rhs, (((dn.out_spec[1],), (dn.rhs_spec[1],)),
                                   (lhs_batch, rhs_batch)), precision=pair)
  # ``out`` is (*sorted spatial, N, O): move N and O to their places in out_spec.
  ndim = get_aval(out).ndim
  src = list(range(ndim - 2))
  perm = [None] * ndim
  perm[dn.out_spec[0]], perm[dn.out_spec[1]] = ndim - 2, ndim - 1
  rest = iter(src)
  perm = [next(rest) if p is None else p for p in perm]
  return shapes.transpose(out, tuple(perm))


sharding_types.sharding_rules[conv_general_dilated_p] = sharding_types.conv_rule
