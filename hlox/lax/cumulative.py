"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp.

Each lowers to one ``stablehlo.reduce_window``: a cumulative reduction along an axis of
length n is a window of length n over that axis padded with n-1 identities in front (or
behind, for ``reverse``); XLA rewrites such windows into efficient scans. Their JVPs solve a
first-order linear recurrence with a parallel scan made of shape and elementwise
primitives. ``reduce_prod``'s JVP uses ``cumprod``, so this room sits below ``reductions``.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox.core import dtypes
from hlox.core import sharding_types
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import elementwise as _ew
from hlox.lax import shapes as _shapes
from hlox.lax.reducer_util import (_dtype_rule, _is_number, _max_identity, _min_identity,
                                   _one, _zero, max_hlo, min_hlo, reduce_window_op)
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
           "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"]


def _cumred_shape_rule(name, operand, *, axis, reverse):
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"{name}: axis {axis} is out of range for operand {operand.str_short()} "
                     f"(lax axes must be in [0, {operand.ndim}))")
  return operand.shape


def _logaddexp_hlo(x, y):
  """``log(exp(x) + exp(y))`` without overflow: max + log1p(exp(-|x - y|)). When x - y is
  NaN because both are the same infinity, x + y is the answer (and NaN inputs stay NaN).
  Complex values take the complex logarithm's principal branch (see below)."""
  if isinstance(ir.RankedTensorType(x.type).element_type, ir.ComplexType):
    return _complex_logaddexp_hlo(x, y)
  amax = hlo.maximum(x, y)
  delta = hlo.subtract(x, y)
  delta_nan = hlo.compare(delta, delta, hlo.ComparisonDirectionAttr.get("NE"),
                          compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
  stable = hlo.add(amax, hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta)))))
  return hlo.select(delta_nan, hlo.add(x, y), stable)


def _complex_logaddexp_hlo(x, y):
  # With m the (lexicographic) larger of x and y, log(e^x + e^y) = m + log1p(e^(x + y - 2m))
  # (the exponent is the smaller one minus m, written symmetrically so the -inf identity
  # gives exactly the other operand); the imaginary part is then wrapped into [-pi, pi),
  # as JAX does, so a running sum stays on the principal branch.
  complex_type = ir.RankedTensorType(x.type).element_type
  wide = ir.ComplexType(complex_type).element_type == ir.F64Type.get()
  real_dtype, complex_dtype = ((np.dtype(np.float64), np.dtype(np.complex128)) if wide else
                               (np.dtype(np.float32), np.dtype(np.complex64)))
  amax = max_hlo(x, y)
  delta = hlo.subtract(hlo.add(x, y), hlo.multiply(amax, xla.ir_constant(2, complex_dtype)))
  out = hlo.add(amax, hlo.log_plus_one(hlo.exponential(delta)))
  half, period = (xla.ir_constant(v, real_dtype) for v in (np.pi, 2 * np.pi))
  rem = hlo.remainder(hlo.add(hlo.imag(out), half), period)
  negative = xla.compare_hlo(rem, xla.ir_constant(0, real_dtype), "LT", real_dtype)
  rem = hlo.select(negative, hlo.add(rem, period), rem)
  return hlo.complex(hlo.real(out), hlo.subtract(rem, half))


# Lowerings for an axis of symbolic length (shape polymorphism), whose window size is not
# known when the program is built: a loop over the axis. ``control_flow`` (above this room,
# since it needs loops) fills this table: primitive -> lowering rule.
symbolic_axis_lowerings: dict = {}


def _cumred_lowering(name, body, identity):
  def rule(ctx, x, *, axis, reverse):
    aval = ctx.avals_in[0]
    n = aval.shape[axis]
    if type(n) is not int:
      return symbolic_axis_lowerings[name](ctx, x, axis=axis, reverse=reverse)
    if n == 0:
      return x
    ndim = aval.ndim
    window = [1] * ndim
    window[axis] = n
    padding = [(0, 0)] * ndim
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    init = xla.ir_constant(np.asarray(identity(aval.dtype), dtype=aval.dtype))
    op, block = reduce_window_op(ctx, [x], [init], ctx.avals_out, window_dimensions=window,
                                  window_strides=[1] * ndim, padding=padding,
                                  base_dilation=[1] * ndim, window_dilation=[1] * ndim)
    with ir.InsertionPoint(block):
      hlo.return_([body(*block.arguments)])
    return op.result
  return rule


def _neg_inf(dtype):
  return _max_identity(dtype)


identities: dict = {}  # name -> the identity of its combining operation, by dtype


def _cumulative(name, body, identity, accepted, what):
  prim = standard_primitive(functools.partial(_cumred_shape_rule, name),
                            _dtype_rule(name, accepted, what), name)
  xla.register_lowering(prim, _cumred_lowering(name, body, identity))
  identities[name] = identity
  return prim


cumsum_p = _cumulative("cumsum", hlo.add, _zero, _is_number,
                       "integer, floating or complex types")
cumprod_p = _cumulative("cumprod", hlo.multiply, _one, _is_number,
                        "integer, floating or complex types")
cummax_p = _cumulative("cummax", max_hlo, _max_identity, _is_number,
                       "integer, floating or complex types")
cummin_p = _cumulative("cummin", min_hlo, _min_identity, _is_number,
                       "integer, floating or complex types")
cumlogsumexp_p = _cumulative("cumlogsumexp", _logaddexp_hlo, _neg_inf, dtypes.is_inexact,
                             "floating or complex types")


ad.deflinear(cumsum_p, lambda ct, operand, *, axis, reverse:
             [cumsum_p.bind(ct, axis=axis, reverse=not reverse)])


# The other cumulative reductions have tangents s that follow a first-order linear
# recurrence along the axis, s[i] = a[i] * s[i-1] + b[i], with coefficients a (and weights
# inside b) computed from primal values only. It is solved by a parallel (Blelloch) scan
# built from slices, pads and elementwise ops, so it is linear in b and transposes and
# differentiates through those primitives' rules.

def _combine_affine(first, second):
  """Compose s -> a1 s + b1 with s -> a2 s + b2 (first applied first)."""
  (a1, b1), (a2, b2) = first, second
  return _ew.mul(a1, a2), _ew.add(_ew.mul(a2, b1), b2)


def _interleave(even, odd, axis):
  """Elements of ``even`` at positions 0, 2, 4, ... and of ``odd`` at 1, 3, ...; ``even``
  has as many elements as ``odd`` or one more."""
  ne, no = get_aval(even).shape[axis], get_aval(odd).shape[axis]
  ndim = get_aval(even).ndim

  def spread(x, lo, hi):
    config = [(0, 0, 0)] * ndim
    config[axis] = (lo, hi, 1)
    return _shapes.pad(x, np.zeros((), get_aval(x).dtype), config)
  if no == 0:
    return even
  return _ew.add(spread(even, 0, 1 if ne == no else 0),
                 spread(odd, 1, 0 if ne == no else 1))


def _affine_scan(a, b, axis):
  """Inclusive scan of the affine maps (a[i], b[i]) along ``axis``."""
  n = get_aval(a).shape[axis]
  if n < 2:
    return a, b
  sl = functools.partial(_shapes.slice_in_dim, axis=axis)
  m = n // 2
  pairs = _combine_affine((sl(a, 0, 2 * m - 1, 2), sl(b, 0, 2 * m - 1, 2)),
                          (sl(a, 1, 2 * m, 2), sl(b, 1, 2 * m, 2)))
  odd_a, odd_b = _affine_scan(*pairs, axis)            # prefixes ending at 1, 3, 5, ...
  k = (n + 1) // 2 - 1                                 # even positions 2, 4, ... left
  rest_a, rest_b = _combine_affine((sl(odd_a, 0, k), sl(odd_b, 0, k)),
                                   (sl(a, 2, n, 2), sl(b, 2, n, 2)))
  even_a = _shapes.concatenate([sl(a, 0, 1), rest_a], axis)
  even_b = _shapes.concatenate([sl(b, 0, 1), rest_b], axis)
  return _interleave(even_a, odd_a, axis), _interleave(even_b, odd_b, axis)


def _linear_recurrence(a, b, axis, reverse):
  """s with s[i] = a[i] * s[i-1] + b[i] (s[-1] = 0) along ``axis``; from the end (s[i]
  depends on s[i+1]) when ``reverse``."""
  if reverse:
    a, b = _shapes.rev(a, (axis,)), _shapes.rev(b, (axis,))
  _, s = _affine_scan(a, b, axis)
  return _shapes.rev(s, (axis,)) if reverse else s


def _previous(out, identity, axis, reverse):
  """The running value before each position (``identity`` before the first)."""
  n = get_aval(out).shape[axis]
  ndim = get_aval(out).ndim
  config = [(0, 0, 0)] * ndim
  if reverse:
    kept = _shapes.slice_in_dim(out, 1, n, axis=axis)
    config[axis] = (0, 1, 0)
  else:
    kept = _shapes.slice_in_dim(out, 0, n - 1, axis=axis)
    config[axis] = (1, 0, 0)
  return _shapes.pad(kept, np.asarray(identity, get_aval(out).dtype), config)


def _cumulative_jvp(prim, coefficients):
  """JVP rule for ``prim`` whose tangent is s[i] = a[i] s[i-1] + w[i] t[i] with
  ``(a, w) = coefficients(x, out, prev, axis, reverse)``."""
  def rule(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axis=axis, reverse=reverse)
    aval = get_aval(x)
    if type(t) is ad.Zero or not dtypes.is_inexact(aval.dtype) or aval.shape[axis] == 0:
      return out, ad.Zero.from_primal_value(out)
    a, w = coefficients(x, out, axis, reverse)
    return out, _linear_recurrence(a, _ew.mul(w, t), axis, reverse)
  ad.primitive_jvps[prim] = rule


def _cumprod_coefficients(x, out, axis, reverse):
  # out[i] = out[i-1] * x[i]  =>  s[i] = x[i] s[i-1] + out[i-1] t[i]: exact with zeros.
  return x, _previous(out, np.ones((), get_aval(x).dtype), axis, reverse)


def _cumlogsumexp_coefficients(x, out, axis, reverse):
  # out[i] = logaddexp(out[i-1], x[i])  =>  s[i] = e^(out[i-1]-out[i]) s[i-1] + e^(x[i]-out[i])
  # t[i]; both factors are at most 1. Equal infinities give a difference of 0, not NaN, and
  # where the output is still -inf (all inputs so far -inf) the tangent is 0.
  dtype = get_aval(x).dtype
  prev = _previous(out, _max_identity(dtype), axis, reverse)
  zero = _shapes.full_like(out, 0)
  live = _ew.ne(out, np.asarray(-np.inf, dtype))

  def weight(v):
    return _ew.select_n(live, zero, _ew.exp(_ew.select_n(_ew.eq(v, out), _ew.sub(v, out),
                                                         zero)))
  return weight(prev), weight(x)


def _cumextremum_jvp(prim, identity):
  # The tangent at the running extremum, shared equally among equal extrema (as reduce_max
  # does): S = sum of t over positions so far that equal the current extremum, N = their
  # count, both reset when a new extremum appears; the tangent is S / N. (A NaN output
  # matches nothing and gets a NaN tangent.)
  def rule(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    out = prim.bind(x, axis=axis, reverse=reverse)
    aval = get_aval(x)
    if type(t) is ad.Zero or not dtypes.is_inexact(aval.dtype) or aval.shape[axis] == 0:
      return out, ad.Zero.from_primal_value(out)
    dtype = get_aval(t).dtype
    prev = _previous(out, identity(aval.dtype), axis, reverse)
    same = _ew.convert_element_type(_ew.eq(prev, out), dtype)
    hits = _ew.convert_element_type(_ew.eq(x, out), dtype)
    counts = _linear_recurrence(same, hits, axis, reverse)
    sums = _linear_recurrence(same, _ew.mul(hits, t), axis, reverse)
    return out, _ew.div(sums, counts)
  ad.primitive_jvps[prim] = rule


_cumulative_jvp(cumprod_p, _cumprod_coefficients)
_cumulative_jvp(cumlogsumexp_p, _cumlogsumexp_coefficients)
_cumextremum_jvp(cummax_p, _max_identity)
_cumextremum_jvp(cummin_p, _min_identity)


def _cumulative_batch_rule(prim):
  # The scan runs along the same axis, renumbered past the batch dimension.
  def rule(vals, dims, *, axis, reverse):
    (x,), (bdim,) = vals, dims
    return prim.bind(x, axis=axis + (axis >= bdim), reverse=reverse), bdim
  batching.primitive_batchers[prim] = rule


for _prim in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  _cumulative_batch_rule(_prim)
del _prim


def _bind_cumulative(prim, operand, axis, reverse):
  return prim.bind(operand, axis=int(axis), reverse=bool(reverse))


def cumsum(operand, axis: int = 0, reverse: bool = False):
  """Cumulative sum of ``operand`` along ``axis``.

  Element ``i`` combines elements ``0..i`` (with ``reverse``, ``i`` to the end). The
  dtype is kept (no accumulation-type promotion, unlike ``jnp``'s versions); a bool operand
  raises ``TypeError`` and an out-of-range ``axis`` ``ValueError``. Differentiable and batched
  under ``vmap``.

  Args:
    operand: input array.
    axis: the dimension to accumulate along (non-negative).
    reverse: if True, accumulate from the end.

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.cumsum(jnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
    >>> lax.cumsum(jnp.array([1, 2, 3]), reverse=True)
    Array([6, 5, 3], dtype=int32)
  """
  return _bind_cumulative(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
  """Cumulative product of ``operand`` along ``axis``.

  Element ``i`` combines elements ``0..i`` (with ``reverse``, ``i`` to the end). The
  dtype is kept (no accumulation-type promotion, unlike ``jnp``'s versions); a bool operand
  raises ``TypeError`` and an out-of-range ``axis`` ``ValueError``. Differentiable and batched
  under ``vmap``.

  Args:
    operand: input array.
    axis: the dimension to accumulate along (non-negative).
    reverse: if True, accumulate from the end.

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.cumprod(jnp.array([1., 2., 3.]))
    Array([1., 2., 6.], dtype=float32)
  """
  return _bind_cumulative(cumprod_p, operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
  """Cumulative maximum of ``operand`` along ``axis``.

  Element ``i`` combines elements ``0..i`` (with ``reverse``, ``i`` to the end). NaN
  propagates. The dtype is kept (no accumulation-type promotion, unlike ``jnp``'s
  versions); a bool operand raises ``TypeError`` and an out-of-range ``axis``
  ``ValueError``. Differentiable and batched under ``vmap``.

  Args:
    operand: input array.
    axis: the dimension to accumulate along (non-negative).
    reverse: if True, accumulate from the end.

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.cummax(jnp.array([1, 3, 2, 5]))
    Array([1, 3, 3, 5], dtype=int32)
  """
  return _bind_cumulative(cummax_p, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
  """Cumulative minimum of ``operand`` along ``axis``.

  Element ``i`` combines elements ``0..i`` (with ``reverse``, ``i`` to the end). NaN
  propagates. The dtype is kept (no accumulation-type promotion, unlike ``jnp``'s
  versions); a bool operand raises ``TypeError`` and an out-of-range ``axis``
  ``ValueError``. Differentiable and batched under ``vmap``.

  Args:
    operand: input array.
    axis: the dimension to accumulate along (non-negative).
    reverse: if True, accumulate from the end.

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.cummin(jnp.array([3, 1, 2, 0]))
    Array([3, 1, 1, 0], dtype=int32)
  """
  return _bind_cumulative(cummin_p, operand, axis, reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
  """Cumulative ``log(sum(exp(x)))`` of ``operand`` along ``axis``.

  Element ``i`` combines elements ``0..i`` (with ``reverse``, ``i`` to the end), computed
  stably (without overflow). Floating and complex dtypes only: others raise ``TypeError``; an
  out-of-range ``axis`` raises ``ValueError``. The dtype is kept. Differentiable and batched
  under ``vmap``.

  Args:
    operand: input array.
    axis: the dimension to accumulate along (non-negative).
    reverse: if True, accumulate from the end.

  Returns:
    An array of ``operand``'s shape and dtype.

  Examples:
    >>> lax.cumlogsumexp(jnp.array([0., 0., 0.]))
    Array([0.       , 0.6931472, 1.0986123], dtype=float32)
  """
  return _bind_cumulative(cumlogsumexp_p, operand, axis, reverse)


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p, cumlogsumexp_p):
  sharding_types.sharding_rules[_p] = sharding_types.cumulative_rule
