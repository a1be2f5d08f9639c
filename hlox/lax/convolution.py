"""Convolution helpers around ``conv_general_dilated`` (which lives in ``dot.py``): the
output-shape functions (``conv_shape_tuple``, ``conv_general_shape_tuple``,
``conv_transpose_shape_tuple``), ``conv_general_permutations``, and two convolutions built on
it: ``conv_general_dilated_patches`` (image patches) and ``conv_general_dilated_local``
(unshared kernels, a locally connected layer).

Everything here is a composition of ``conv_general_dilated`` and ``dot_general``, so it gets
its JVP, transpose and batching from them.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox.core.tracer import get_aval
from hlox.lax import shapes
from hlox.lax.dot import (Precision, _conv_transpose_pads, canonicalize_precision,
                          conv_dimension_numbers, conv_general_dilated, dot_general)
from hlox.lax.windowed import padtype_to_pads

__all__ = ["conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "conv_general_permutations", "conv_general_dilated_patches",
           "conv_general_dilated_local"]


def _window_out(size: int, window: int, stride: int) -> int:
  return 0 if size < window else (size - window) // stride + 1


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
  """Output shape of a convolution with operands in the canonical (N, C, *spatial) and
  (O, I, *spatial) layouts; ``pads`` is a padding string or (low, high) pairs."""
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
  """For layout strings ``(lhs_spec, rhs_spec, out_spec)``, the permutations taking each
  operand to the canonical layout: (N, C, *spatial), (O, I, *spatial), (N, C, *spatial), with
  the spatial dimensions in the order they appear in ``rhs_spec``."""
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
  """Output shape of ``conv_general_dilated`` (no dilation) in the layout of
  ``dimension_numbers``."""
  dn, lhs, rhs = _canonical_shapes(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)
  return _from_canonical(conv_shape_tuple(lhs, rhs, window_strides, padding), dn.out_spec)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """Output shape of ``conv_transpose`` (``padding``: 'SAME', 'VALID' or (low, high)
  pairs of the dilated input) in the layout of ``dimension_numbers``."""
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
  """The receptive-field patches of ``conv_general_dilated``: the output's feature
  dimension holds each window flattened as (input feature, *filter_shape), filter
  dimensions in ``rhs_spec`` order; its size is ``C * prod(filter_shape)``.

  Computed as a grouped convolution with a one-hot kernel, so it differentiates and
  batches like a convolution.
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
  """An unshared convolution (locally connected layer): a separate kernel per output
  position. ``rhs``'s spatial dimensions index output positions and its ``I`` dimension
  is the flattened window (input feature, *filter_shape in ``rhs_spec`` order)."""
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
