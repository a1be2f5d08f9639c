"""Roofline rules of hlox's primitives: elementwise operations count one flop per element,
matrix products and convolutions two per multiply-add, reductions and cumulative
operations their additions, gathers and scatters their copies (and bound checks, and the
update function per element), collectives the bytes over the busiest interconnect link
under a ring or torus model. Data movement and bookkeeping primitives count nothing (XLA
fuses or elides them); every primitive of ``lax`` without a rule below is registered so.
"""
from __future__ import annotations

import collections
import itertools
import sys

import numpy as np

from hlox.core.jaxpr import ClosedJaxpr
from hlox.extend.core import Primitive
from hlox.lax import callback, convolution, cumulative, elementwise as ew, indexing, parallel
from hlox.lax import reductions, special, varying
from hlox.lax.dot import dot_general_p
from hlox.experimental.roofline.roofline import (
    RooflineResult, RooflineShape, _interpret, register_roofline, register_standard_roofline)

_FMA_FLOPS = 2  # a fused multiply-add is two flops


def _shapes(avals):
  return [RooflineShape.from_aval(a) for a in avals]


def _register_all(rule, prims):
  for prim in prims:
    register_roofline(prim)(rule)


# Everything of lax (and the random and debug primitives) is free unless a rule says
# otherwise below.
for _name, _module in list(sys.modules.items()):
  if _name.startswith(("hlox.lax", "hlox.random", "hlox.debug", "hlox.checkpoint")):
    for _value in list(vars(_module).values()):
      if isinstance(_value, Primitive):
        register_standard_roofline(_value)


# --- elementwise ---------------------------------------------------------------------------

def _unary_roofline(ctx, *args, **params):
  x, = _shapes(ctx.avals_in)
  out, = _shapes(ctx.avals_out[:1])
  return RooflineResult(unfused_flops=x.size, unfused_hbm_bytes=x.bytes + out.bytes)


_register_all(_unary_roofline, [
    ew.abs_p, ew.acos_p, ew.asin_p, ew.atan_p, ew.cbrt_p, ew.ceil_p, ew.conj_p, ew.cos_p,
    ew.cosh_p, ew.exp_p, ew.expm1_p, ew.floor_p, ew.imag_p, ew.integer_pow_p,
    ew.is_finite_p, ew.log_p, ew.log1p_p, ew.logistic_p, ew.neg_p, ew.not_p, ew.real_p,
    ew.round_p, ew.rsqrt_p, ew.sign_p, ew.sin_p, ew.sinh_p, ew.sqrt_p, ew.square_p, ew.tan_p,
    special.bessel_i0e_p, special.bessel_i1e_p, ew.digamma_p, ew.erf_inv_p, ew.erf_p,
    ew.erfc_p, ew.lgamma_p])


def _binary_roofline(ctx, *args, **params):
  lhs, rhs = _shapes(ctx.avals_in)
  out, = _shapes(ctx.avals_out)
  # One operation per element of the broadcast shape (size-1 dimensions stretch).
  shape = [max(a, b) for a, b in itertools.zip_longest(
      reversed(lhs.shape), reversed(rhs.shape), fillvalue=1)]
  return RooflineResult(unfused_flops=int(np.prod(shape, dtype=np.int64)),
                        unfused_hbm_bytes=lhs.bytes + rhs.bytes + out.bytes)


_register_all(_binary_roofline, [
    ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.rem_p, ew.and_p, ew.or_p, ew.xor_p, ew.gt_p,
    ew.lt_p, ew.ge_p, ew.le_p, ew.eq_p, ew.ne_p, ew.min_p, ew.max_p])


@register_roofline(ew.select_n_p)
def _select_n_roofline(ctx, *args, **params):
  which = RooflineShape.from_aval(ctx.avals_in[0])
  out, = _shapes(ctx.avals_out)
  return RooflineResult(unfused_flops=out.size, unfused_hbm_bytes=which.bytes + out.bytes)


# --- reductions and scans ------------------------------------------------------------------

def _cumulative_roofline(flops_per_step):
  def rule(ctx, *args, axis, **params):
    x, = _shapes(ctx.avals_in)
    out, = _shapes(ctx.avals_out)
    return RooflineResult(unfused_flops=flops_per_step * x.shape[axis],
                          unfused_hbm_bytes=x.bytes + out.bytes)
  return rule


_register_all(_cumulative_roofline(1), [cumulative.cummax_p, cumulative.cummin_p,
                                        cumulative.cumprod_p, cumulative.cumsum_p])
# An exp and an add per step (the final log is amortized).
register_roofline(cumulative.cumlogsumexp_p)(_cumulative_roofline(2))


@register_roofline(reductions.reduce_sum_p)
def _reduce_sum_roofline(ctx, *args, axes, **params):
  x, = _shapes(ctx.avals_in)
  reduced = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
  kept = int(np.prod([d for i, d in enumerate(x.shape) if i not in set(axes)],
                     dtype=np.int64))
  # n - 1 additions per result; the result doubles as the accumulator.
  return RooflineResult(unfused_flops=(reduced - 1) * kept,
                        unfused_hbm_bytes=x.dtype.itemsize * (x.size + kept))


# --- products --------------------------------------------------------------------------------

@register_roofline(dot_general_p)
def _dot_general_roofline(ctx, *args, dimension_numbers, **params):
  lhs, rhs = _shapes(ctx.avals_in)
  out, = _shapes(ctx.avals_out)
  (lhs_contract, _), (lhs_batch, _) = dimension_numbers
  shared = np.prod([lhs.shape[i] for i in (*lhs_contract, *lhs_batch)], dtype=np.int64)
  flops = int(_FMA_FLOPS * lhs.size * rhs.size / shared)
  hbm = 0
  if not ctx.pin_lhs_in_vmem:
    hbm += lhs.bytes + out.bytes
  if not ctx.pin_rhs_in_vmem:
    hbm += rhs.bytes
  return RooflineResult(flops=flops, unfused_flops=flops, hbm_bytes=hbm,
                        unfused_hbm_bytes=hbm)


def _valid_positions(stride, base_dilation, window_dilation, kernel, size_in, size_out,
                     padding) -> int:
  """How many (output position, kernel tap) pairs of one spatial dimension read a real
  input element (not padding, not a hole of the input's dilation)."""
  low, high = padding
  if (size_in == size_out == kernel == base_dilation and window_dilation == 1
      and stride == max(1, size_in - 1) and low == high == 0):
    return size_in
  if (size_in == 1 and kernel == size_out and window_dilation == base_dilation == stride == 1
      and low == high == size_out - 1):
    return size_out
  count = 0
  for tap in range(kernel):
    if stride == 1 and base_dilation == 1:
      # The outputs reading this tap from inside the input form one interval.
      base = low - tap * window_dilation
      count += max(min(size_in + base, size_out) - max(0, base), 0)
      continue
    for o in range(size_out):
      dilated = o * stride - low + tap * window_dilation
      if dilated % base_dilation == 0 and 0 <= dilated // base_dilation < size_in:
        count += 1
  return count


@register_roofline(convolution.conv_general_dilated_p)
def _conv_roofline(ctx, *args, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, batch_group_count, **params):
  lhs, rhs = _shapes(ctx.avals_in)
  out, = _shapes(ctx.avals_out)
  dn = convolution.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
  positions = 1
  for d in range(len(dn.lhs_spec) - 2):
    positions *= _valid_positions(
        window_strides[d], lhs_dilation[d], rhs_dilation[d], rhs.shape[dn.rhs_spec[2 + d]],
        lhs.shape[dn.lhs_spec[2 + d]], out.shape[dn.out_spec[2 + d]], padding[d])
  batch = lhs.shape[dn.lhs_spec[0]] / batch_group_count
  per_position = rhs.shape[dn.rhs_spec[1]] * out.shape[dn.out_spec[1]] * batch
  return RooflineResult(unfused_flops=int(_FMA_FLOPS * per_position * positions),
                        unfused_hbm_bytes=lhs.bytes + rhs.bytes + out.bytes)


# --- gathers and scatters --------------------------------------------------------------------

@register_roofline(indexing.gather_p)
def _gather_roofline(ctx, *args, mode, **params):
  _, indices = _shapes(ctx.avals_in)
  out, = _shapes(ctx.avals_out)
  flops = 0
  if mode == indexing.GatherScatterMode.FILL_OR_DROP:
    # Per index: two bound checks, their "and", and a reduction per window; then one
    # select per output element.
    flops = 4 * indices.size + out.size
  # A copy of the output's size (read and write) and a read of the indices.
  return RooflineResult(unfused_flops=flops, unfused_hbm_bytes=2 * out.bytes + indices.bytes)


def _scatter_roofline(flops_per_update):
  def rule(ctx, *args, **params):
    _, indices, updates = _shapes(ctx.avals_in[:3])
    per_update = flops_per_update(params)
    # The operand's, the result's and the updates' elements at the updated places.
    return RooflineResult(unfused_flops=per_update * updates.size,
                          unfused_hbm_bytes=3 * updates.bytes + indices.bytes)
  return rule


def _update_function_flops(params) -> int:
  update = params.get("update_jaxpr")
  if update is None:
    return 0
  jaxpr = update.jaxpr if isinstance(update, ClosedJaxpr) else update
  return _interpret("update", jaxpr, None, False, False).unfused_flops


_register_all(_scatter_roofline(lambda params: 1), [
    indexing.scatter_add_p, indexing.scatter_sub_p, indexing.scatter_mul_p,
    indexing.scatter_min_p, indexing.scatter_max_p])
# ``scatter`` replaces (no update function); ``scatter_apply`` runs its function per update.
_register_all(_scatter_roofline(_update_function_flops),
              [indexing.scatter_p, indexing.scatter_apply_p])


# --- host callbacks --------------------------------------------------------------------------

def _callback_roofline(ctx, *args, **params):
  # To the host and back; the Python function's own work is not seen.
  return RooflineResult(unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in)
                        + RooflineShape.total_bytes(ctx.avals_out))


_register_all(_callback_roofline, [callback.pure_callback_p, callback.io_callback_p])


@register_roofline(callback.debug_callback_p)
def _debug_callback_roofline(ctx, *args, **params):
  return RooflineResult(unfused_hbm_bytes=RooflineShape.total_bytes(ctx.avals_in))


# --- collectives -----------------------------------------------------------------------------

def _axes(names) -> tuple:
  return tuple(names) if isinstance(names, (tuple, list)) else (names,)


def _free_if_trivial(ctx, axes):
  """The zero result when the axes span one device (nothing crosses a link)."""
  if np.prod([ctx.mesh.shape[a] for a in axes]) > 1:
    return None
  return RooflineResult(ici_bytes={a: 0 for a in axes}, ici_latency={a: 0 for a in axes})


def _ring(ctx, in_bytes, axes, reduce: bool) -> RooflineResult:
  """A ring collective over ``axes``, one phase per axis (largest first, the slowest
  colour): each phase sends ``size - 1`` pieces of the current shard, which then grows by
  the axis size; the data is split evenly between the phases' links."""
  trivial = _free_if_trivial(ctx, axes)
  if trivial is not None:
    return trivial
  sizes = ctx.mesh.shape
  shard = in_bytes / np.prod([sizes[a] for a in axes]) if reduce else in_bytes
  order = sorted(axes, key=lambda a: sizes[a], reverse=True)
  shard //= len(order)
  sent = 0
  for axis in order:
    sent += shard * (sizes[axis] - 1)
    shard *= sizes[axis]
  latency = sizes[order[0]] * len(order)
  return RooflineResult(ici_bytes={a: int(sent) for a in order},
                        ici_latency={a: int(latency) for a in order})


@register_roofline(parallel.all_gather_p)
def _all_gather_roofline(ctx, *args, axis_name, **params):
  return _ring(ctx, RooflineShape.total_bytes(ctx.avals_in), _axes(axis_name), reduce=False)


@register_roofline(parallel.reduce_scatter_p)
def _reduce_scatter_roofline(ctx, *args, axis_name, **params):
  return _ring(ctx, RooflineShape.total_bytes(ctx.avals_in), _axes(axis_name), reduce=True)


def _scalar_collective_roofline(ctx, *args, axes, **params):
  # Modelled as a ring all-gather of one element per operand.
  one_each = sum(np.dtype(a.dtype).itemsize for a in ctx.avals_in)
  return _ring(ctx, one_each, _axes(axes), reduce=False)


_register_all(_scalar_collective_roofline, [parallel.pmin_p, parallel.pmax_p])


def _psum_roofline(ctx, *args, axes, **params):
  # A reduce-scatter and an all-gather.
  ring = _ring(ctx, RooflineShape.total_bytes(ctx.avals_in), _axes(axes), reduce=True)
  return RooflineResult(ici_bytes={k: 2 * v for k, v in ring.ici_bytes.items()},
                        ici_latency={k: 2 * v for k, v in ring.ici_latency.items()})


_register_all(_psum_roofline, [parallel.psum_p, varying.psum_invariant_p])


@register_roofline(parallel.all_to_all_p)
def _all_to_all_roofline(ctx, *args, axis_name, **params):
  axes = _axes(axis_name)
  trivial = _free_if_trivial(ctx, axes)
  if trivial is not None:
    return trivial
  sizes = ctx.mesh.shape
  total = RooflineShape.total_bytes(ctx.avals_in) * np.prod([sizes[a] for a in axes])
  smallest = min(sizes[a] for a in axes)
  # Links across the bisection of the torus the axes form (wraparound doubles them).
  bisection = smallest ** (len(axes) - 1) * (2 if smallest > 2 else 1)
  ici_bytes = total / 2 / bisection  # half the data crosses it
  latency = sum(sizes[a] / 2 for a in axes)  # the farthest hop count
  return RooflineResult(ici_bytes={a: int(ici_bytes) for a in axes},
                        ici_latency={a: int(latency) for a in axes})


@register_roofline(parallel.ppermute_p)
def _ppermute_roofline(ctx, *args, axis_name, perm, **params):
  axes = _axes(axis_name)
  trivial = _free_if_trivial(ctx, axes)
  if trivial is not None:
    return trivial
  dims = [ctx.mesh.shape.get(a, 1) for a in axes]
  shard = RooflineShape.total_bytes(ctx.avals_in)
  # Each transfer walks the shortest way round each axis's ring in turn; the busiest link
  # carries the most shards.
  load = collections.Counter()
  latency = 0
  for src, dst in perm:
    if src == dst:
      continue
    here = [int(i) for i in np.unravel_index(src, dims)]
    there = [int(i) for i in np.unravel_index(dst, dims)]
    hops = 0
    for d, size in enumerate(dims):
      forward, backward = (there[d] - here[d]) % size, (here[d] - there[d]) % size
      step = 1 if forward <= backward else -1
      while here[d] != there[d]:
        before = tuple(here)
        here[d] = (here[d] + step) % size
        load[tuple(sorted((before, tuple(here))))] += 1
      hops += min(forward, backward)
    latency = max(latency, hops)
  ici_bytes = shard * max(load.values(), default=0)
  return RooflineResult(ici_bytes={a: int(ici_bytes) for a in axes},
                        ici_latency={a: int(latency) for a in axes})


