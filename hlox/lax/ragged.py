"""Ragged contractions: ``ragged_dot`` and ``ragged_dot_general``.

One lhs dimension is split into consecutive groups of ``group_sizes``; depending on what kind
of dimension it is (``RaggedDotDimensionNumbers``), each group is contracted with its own rhs
slice (ragged non-contracting: mixture-of-experts), contracted on its own (ragged
contracting: one result per group), or left alone (ragged batch: the result is
``dot_general``'s, as in JAX). Positions past the last group contribute nothing.

On this backend it is a masked dense computation, as JAX's CPU path: a one-hot group mask
spreads lhs over a new group dimension, and a single ``dot_general`` does the rest, so
gradients and batching come from those primitives (``group_sizes`` is not differentiated).
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import elementwise as _ew
from hlox.lax import shapes as _shapes
from hlox.lax.base import convert_element_type
from hlox.lax.cumulative import cumsum
from hlox.lax.dot import canonicalize_precision, dot_general
from hlox.lax.sharding_constraint import apply_out_sharding

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


class RaggedDotDimensionNumbers:
  """``dot_dimension_numbers`` as for ``dot_general``, the lhs ragged dimension (exactly
  one) and the rhs group dimension (one, in the ragged non-contracting mode; none
  otherwise)."""

  __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    (lc, rc), (lb, rb) = dot_dimension_numbers
    object.__setattr__(self, "dot_dimension_numbers",
                       ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))

  def __setattr__(self, name, value):
    raise AttributeError("RaggedDotDimensionNumbers is immutable")

  def _key(self):
    return (self.dot_dimension_numbers, self.lhs_ragged_dimensions, self.rhs_group_dimensions)

  def __eq__(self, other):
    return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"RaggedDotDimensionNumbers(dot_dimension_numbers={self.dot_dimension_numbers}, "
            f"lhs_ragged_dimensions={self.lhs_ragged_dimensions}, "
            f"rhs_group_dimensions={self.rhs_group_dimensions})")


_BASIC = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def _group_mask(group_sizes, prefix_dims, ragged_dim, lhs_shape):
  """Bool ``(g, *lhs_shape)``: position ``i`` of the ragged dimension belongs to group
  ``j`` (per element of the ``prefix_dims`` that ``group_sizes`` has in front)."""
  gs = get_aval(group_sizes)
  g = gs.shape[-1]
  size = lhs_shape[ragged_dim]
  ends = cumsum(group_sizes, axis=gs.ndim - 1)
  starts = _ew.sub(ends, group_sizes)
  shape = gs.shape + (size,)
  pos = _shapes.broadcasted_iota(gs.dtype, shape, gs.ndim)
  lo = _shapes.broadcast_in_dim(starts, shape, tuple(range(gs.ndim)))
  hi = _shapes.broadcast_in_dim(ends, shape, tuple(range(gs.ndim)))
  mask = _ew.bitwise_and(_ew.ge(pos, lo), _ew.lt(pos, hi))   # (*prefix, g, size)
  # Place it in (g, *lhs_shape): dimensions of the mask map to 1 + prefix dims, 0, 1 + r.
  targets = [1 + d for d in prefix_dims] + [0, 1 + ragged_dim]
  order = sorted(range(len(targets)), key=lambda i: targets[i])
  mask = _shapes.transpose(mask, tuple(order))
  return _shapes.broadcast_in_dim(mask, (g,) + tuple(lhs_shape),
                                  tuple(targets[i] for i in order)), g


def _mode(lhs_ndim, dn):
  (lc, _), (lb, _) = dn.dot_dimension_numbers
  r = dn.lhs_ragged_dimensions[0]
  if not 0 <= r < lhs_ndim:
    raise TypeError(f"ragged_dot_general requires lhs ragged dimension numbers to be "
                    f"nonnegative and less than the number of axes of the lhs ({lhs_ndim}), "
                    f"got {r}")
  if r in lc:
    return "contracting", r
  if r in lb:
    return "batch", r
  return "noncontracting", r


def _prefix_dims(mode, ndim, r, batch, contract):
  free = [d for d in range(ndim) if d not in batch and d not in contract]
  if mode == "noncontracting":
    return list(batch) + free[:free.index(r)]
  if mode == "contracting":
    return list(batch) + list(contract)[:list(contract).index(r)]
  return list(batch)[:list(batch).index(r)]


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers,
                       precision=None, preferred_element_type=None, group_offset=None,
                       out_sharding=None):
  """A ``dot_general`` in which one lhs dimension is split into groups of ``group_sizes``.

  ``ragged_dot_dimension_numbers`` (a ``RaggedDotDimensionNumbers``) gives the ordinary
  dimension numbers, the lhs ragged dimension and the rhs group dimension. A ragged
  non-contracting dimension multiplies each group by its own rhs slice (as ``ragged_dot``); a
  ragged contracting dimension contracts each group separately, giving a leading group
  dimension; a ragged batch dimension gives ``dot_general``'s result. Positions past the
  last group contribute nothing.

  Args:
    lhs: left operand.
    rhs: right operand.
    group_sizes: integer array of group sizes.
    ragged_dot_dimension_numbers: a ``RaggedDotDimensionNumbers``.
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.
    group_offset: not supported (``NotImplementedError`` unless None).
    out_sharding: optional sharding of the result.

  Returns:
    The contraction.

  Examples:
    >>> dn = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
    >>> lax.ragged_dot_general(jnp.ones((2, 3)), jnp.ones((3, 2)), jnp.array([1, 2]), dn)
    Array([[[1., 1.],
            [1., 1.]],
    <BLANKLINE>
           [[2., 2.],
            [2., 2.]]], dtype=float32)
  """
  out = _ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision,
                            preferred_element_type, group_offset)
  return apply_out_sharding(out, out_sharding, "ragged_dot_general")


def _ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision,
                        preferred_element_type, group_offset):
  if group_offset is not None:
    raise NotImplementedError("ragged_dot_general: group_offset is not supported (nor in "
                              "JAX)")
  dn = ragged_dot_dimension_numbers
  if not isinstance(dn, RaggedDotDimensionNumbers):
    raise TypeError(f"ragged_dot_general: ragged_dot_dimension_numbers must be a "
                    f"RaggedDotDimensionNumbers, got {dn!r}")
  if len(dn.lhs_ragged_dimensions) != 1:
    raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
  lhs_aval, rhs_aval, gs_aval = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
  if not dtypes.is_int(gs_aval.dtype):
    raise TypeError(f"ragged_dot_general: group_sizes must have an integer dtype, got "
                    f"{gs_aval.str_short()}")
  if gs_aval.ndim == 0:
    raise TypeError(f"ragged_dot_general: expected rank of group_sizes to be >=1, got "
                    f"{gs_aval.str_short()}")
  (lc, rc), (lb, rb) = dn.dot_dimension_numbers
  mode, r = _mode(lhs_aval.ndim, dn)
  prefix = _prefix_dims(mode, lhs_aval.ndim, r, lb, lc)
  if gs_aval.ndim == 1 and prefix:
    # [g] stands for the same group sizes at every prefix position.
    group_sizes = _shapes.broadcast_in_dim(
        group_sizes, tuple(lhs_aval.shape[d] for d in prefix) + gs_aval.shape, (len(prefix),))
    gs_aval = get_aval(group_sizes)
  expected = tuple(lhs_aval.shape[d] for d in prefix)
  if gs_aval.shape[:-1] != expected:
    raise TypeError(f"ragged_dot_general: expected group_sizes to have shape "
                    f"{expected + gs_aval.shape[-1:]}, got {gs_aval.shape} (or (g,): the same "
                    f"group sizes everywhere) for lhs {lhs_aval.str_short()}")
  groups = dn.rhs_group_dimensions
  if mode == "noncontracting":
    if len(groups) != 1:
      raise TypeError(f"ragged_dot_general requires exactly one rhs group dimension when "
                      f"lhs ragged dimension is noncontracting, got {tuple(groups)}")
    if groups[0] in tuple(rc) + tuple(rb):
      raise TypeError(f"ragged_dot_general requires rhs group dimension numbers to be "
                      f"distinct from contracting and batch dimensions, got group dimension "
                      f"{groups[0]}, rhs contracting {tuple(rc)} and batch {tuple(rb)}")
    if rhs_aval.shape[groups[0]] != gs_aval.shape[-1]:
      raise TypeError(f"ragged_dot_general: expected rhs group dimension size to be "
                      f"{gs_aval.shape[-1]}, got {rhs_aval.shape[groups[0]]} (the number of "
                      f"groups; dimension {groups[0]} of rhs {rhs_aval.str_short()})")
  elif groups:
    raise TypeError(f"ragged_dot_general requires zero group dimensions in the rhs when lhs "
                    f"ragged dimension is contracting or batch; here it is a {mode} "
                    f"dimension and rhs_group_dimensions is {groups}")
  precision = canonicalize_precision(precision)
  if mode == "batch":
    # Each batch element is its own product already: the groups only say how the batch is
    # laid out, so the result is dot_general's (as in JAX).
    return dot_general(lhs, rhs, dn.dot_dimension_numbers, precision=precision,
                       preferred_element_type=preferred_element_type)
  group_sizes = convert_element_type(group_sizes, dtypes.int32)
  mask, g = _group_mask(group_sizes, prefix, r, lhs_aval.shape)
  zero = np.zeros((), lhs_aval.dtype)
  spread = _shapes.broadcast_in_dim(lhs, (g,) + lhs_aval.shape,
                                    tuple(range(1, lhs_aval.ndim + 1)))
  spread = _ew.select(mask, spread, _shapes.full_like(spread, zero))
  shift = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
  if mode == "noncontracting":
    dims = (((0,) + shift(lc), (groups[0],) + tuple(rc)), (shift(lb), tuple(rb)))
    return dot_general(spread, rhs, dims, precision=precision,
                       preferred_element_type=preferred_element_type)
  out = dot_general(spread, rhs, ((shift(lc), tuple(rc)), (shift(lb), tuple(rb))),
                    precision=precision, preferred_element_type=preferred_element_type)
  # ``out`` is (*batch, g, *lhs free, *rhs free): the group dimension goes first.
  nb = len(lb)
  perm = (nb,) + tuple(range(nb)) + tuple(range(nb + 1, get_aval(out).ndim))
  return _shapes.transpose(out, perm)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """Grouped matrix product ``(m, k) x (g, k, n) -> (m, n)`` (mixture-of-experts style).

  Rows of ``lhs`` are split into consecutive groups of sizes ``group_sizes``; group ``i`` is
  multiplied by ``rhs[i]``. Rows past the last group give zeros. Computed as a masked dense
  ``dot_general``, so it differentiates in ``lhs`` and ``rhs`` (not ``group_sizes``) and
  batches under ``vmap``.

  Args:
    lhs: array of shape ``(m, k)``.
    rhs: array of shape ``(g, k, n)``.
    group_sizes: integer array of shape ``(g,)``.
    precision: None, a ``Precision`` value, or a pair of them.
    preferred_element_type: optional accumulation and result dtype.
    group_offset: not supported (``NotImplementedError`` unless None).
    out_sharding: optional sharding of the result.

  Returns:
    An array of shape ``(m, n)``.

  Examples:
    >>> rhs = jnp.stack([jnp.ones((2, 2)), 2 * jnp.ones((2, 2))])
    >>> lax.ragged_dot(jnp.ones((3, 2)), rhs, jnp.array([1, 2]))
    Array([[2., 2.],
           [4., 4.],
           [4., 4.]], dtype=float32)
  """
  return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset, out_sharding=out_sharding)
