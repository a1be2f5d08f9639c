"""Collectives over named mapped axes (JAX's ``lax`` parallel operators).

``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``all_to_all``, ``ppermute`` (and
``pshuffle``, ``pswapaxes``), ``psum_scatter``, ``axis_index`` and ``axis_size``.

A collective names one or more mapped axes. Under ``pmap`` it is lowered to a StableHLO
collective over the replicas that differ only in their positions along those axes (the module
context's ``axis_env`` says how replica ids split into named axes). Under
``vmap(..., axis_name=n)`` each primitive's batching rule computes the part over ``n`` across
the batch dimension and re-binds the collective over the remaining names on the parent trace,
so lowering only ever sees pmap axes. A collective over several names enumerates their
positions row-major, in the order the names are given.

Primitives that change shapes carry the size of their axes (``axis_size``) as a parameter, so
their abstract evaluation does not depend on which axes are in scope (jaxprs are typechecked
outside of the transformation that bound them).
"""
from __future__ import annotations

import math

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core import vma as vma_lib
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import Tracer, get_aval, trace_ctx
from hlox.interpreters import ad, batching, xla
from hlox.interpreters import pmap as pmap_interp
from hlox.interpreters import replicated
from hlox.lax import elementwise as _ew
from hlox.lax import indexing as _indexing
from hlox.lax import reductions as _reductions
from hlox.lax import shapes as _shapes
from hlox.lax import utils as _utils

__all__ = ["psum", "pmax", "pmin", "pmean", "all_gather", "all_to_all", "ppermute", "pshuffle",
           "pswapaxes", "psum_scatter", "axis_index", "axis_size", "psum_p", "pmax_p",
           "pmin_p", "all_gather_p", "all_to_all_p", "ppermute_p", "reduce_scatter_p",
           "axis_index_p"]


# --- axis names, sizes and groups --------------------------------------------------------

def _as_axes(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _bound_sizes() -> dict:
  """Named axes in scope (vmap and pmap), innermost binding of each name winning."""
  return {name: size for name, size in trace_ctx.axis_env}


def _check_axes(name: str, axes: tuple) -> list:
  """Sizes of ``axes``; NameError listing the bound names for one that is not bound."""
  if not axes:
    raise ValueError(f"{name}: axis_name must name at least one mapped axis, got ()")
  if len(set(axes)) != len(axes):
    raise ValueError(f"{name}: axis names must be distinct, got {axes}")
  bound = _bound_sizes()
  for a in axes:
    if a not in bound:
      names = ", ".join(repr(n) for n in bound) or "none"
      # JAX's sentence first (its tests match it), then which names are bound here.
      raise NameError(f"Found an unbound axis name: {a}. To fix this, please call {name} "
                      "under `jax.shard_map` (`hlox.shard_map`), or under a vmap or pmap "
                      f"naming it. Details: unbound axis name: {a} ({name}; axis names "
                      f"bound by enclosing vmap(axis_name=...), pmap or shard_map: "
                      f"{names})")
  return [bound[a] for a in axes]


def _canonical_groups(name: str, axis_index_groups, size: int, uneven: bool = False):
  """``axis_index_groups`` as a tuple of equal-sized tuples covering ``range(size)`` once
  (``uneven``: of any sizes, as the reductions take them)."""
  if axis_index_groups is None:
    return None
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  if not groups or not all(groups) or (
      not uneven and any(len(g) != len(groups[0]) for g in groups)):
    what = "non-empty groups" if uneven else "non-empty groups of one size"
    raise ValueError(f"{name}: axis_index_groups must be {what}, got {axis_index_groups}")
  flat = sorted(i for g in groups for i in g)
  if flat != list(range(size)):
    raise ValueError(f"{name}: axis_index_groups must cover every index of the axis (size "
                     f"{size}) exactly once, got {axis_index_groups}")
  return groups


def _group_size(axes: tuple, sizes, groups) -> int:
  return len(groups[0]) if groups is not None else math.prod(sizes)


def _fmt_axes(axes) -> str:
  return repr(axes[0]) if len(axes) == 1 else repr(tuple(axes))


def _size_of(axes, groups, n) -> str:
  """Describes the number of positions a collective spans, for error messages."""
  if groups is not None:
    return f"the group size of axis_index_groups ({n})"
  return f"the size of the axis {_fmt_axes(axes)} ({n})"


def _split_axes(axis_data, axes):
  """(is the vmap axis among ``axes``, the other names in order)."""
  return axis_data.name in axes, tuple(a for a in axes if a != axis_data.name)


def _sizes_of(names) -> int:
  bound = _bound_sizes()
  return math.prod(bound[n] for n in names)


def _no_groups_in_vmap(name, groups):
  if groups is not None:
    raise NotImplementedError(f"{name}: axis_index_groups over an axis bound by vmap is not "
                              "supported (only over pmap axes)")


def _unbound_impl(name):
  def impl(*args, **params):
    axes = params.get("axes", params.get("axis_name"))
    _check_axes(name, _as_axes(axes))
    raise NameError(f"{name}: axis {axes} is not bound by an enclosing vmap or pmap")
  return impl


def _sized_replica_groups(name, mctx, axes, groups, axis_size) -> list:
  """``_replica_groups`` for a primitive whose shapes were computed for groups of
  ``axis_size`` positions; a mismatch (a jaxpr traced for another axis size) is an error here
  rather than in XLA."""
  rows = _replica_groups(mctx, axes, groups)
  if len(rows[0]) != axis_size:
    raise ValueError(f"{name}: traced for {axis_size} positions of axis {_fmt_axes(axes)}, but "
                     f"lowered with {len(rows[0])} replicas per group (was the jaxpr traced "
                     "under a mapped axis of another size?)")
  return rows


def _replica_groups(mctx, axes: tuple, groups=None) -> list:
  """Replica ids of each group of a collective over the pmap axes ``axes`` (ordered as the
  combined, row-major index over ``axes`` in the given order enumerates them), refined by
  ``axis_index_groups``."""
  env = list(mctx.axis_env or ())
  names = [n for n, _ in env]
  sizes = [s for _, s in env]
  positions = []
  for a in axes:
    if a not in names:
      bound = ", ".join(repr(n) for n in names) or "none"
      raise NameError(f"unbound axis name: {a} (axis names bound by enclosing pmaps: "
                      f"{bound})")
    positions.append(len(names) - 1 - names[::-1].index(a))  # innermost binding
  covered = math.prod(sizes)
  # A trailing factor that no name in scope covers: replicas of inner pmaps.
  shape = sizes + [mctx.num_replicas // covered]
  ids = np.arange(mctx.num_replicas).reshape(shape)
  ids = np.moveaxis(ids, positions, list(range(len(positions))))
  size = math.prod(sizes[p] for p in positions)
  rows = ids.reshape(size, -1).T.tolist()
  if groups is not None:
    rows = [[row[i] for i in g] for row in rows for g in groups]
  return rows


# --- small array helpers for the batching rules ------------------------------------------

def _const_like(x, value):
  return np.asarray(value, get_aval(x).dtype)[()]


def _moveaxis(x, src: int, dst: int):
  return batching.moveaxis(x, src, dst)


def _transpose(x, perm):
  perm = tuple(perm)
  return x if perm == tuple(range(len(perm))) else _shapes.transpose(x, perm)


def _reshape(x, shape):
  shape = tuple(int(s) for s in shape)
  return x if get_aval(x).shape == shape else _shapes.reshape(x, shape)


def _take_static(x, indices, axis: int):
  """``x`` indexed along ``axis`` by the static ``indices``; an index equal to the axis size
  (out of bounds) reads zeros."""
  aval = get_aval(x)
  idx = np.asarray(indices, np.int32).reshape(-1, 1)
  offset_dims = tuple(i for i in range(aval.ndim) if i != axis)
  dnums = _indexing.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                           start_index_map=(axis,))
  slice_sizes = tuple(1 if i == axis else s for i, s in enumerate(aval.shape))
  fill = any(int(i) >= aval.shape[axis] for i in indices)
  return _indexing.gather(x, idx, dnums, slice_sizes, mode="fill" if fill else None,
                          fill_value=0 if fill else None)


# --- psum / pmax / pmin ------------------------------------------------------------------

def _reduction_abstract_eval(x, *, axes, axis_index_groups):
  return ShapedArray(x.shape, x.dtype)


def _reduction_collective(name, reduce_fn, unbatched_fn):
  prim = Primitive(name)
  prim.def_impl(_unbound_impl(name))
  prim.def_abstract_eval(_reduction_abstract_eval)

  def batch_rule(axis_data, vals, dims, *, axes, axis_index_groups):
    (x,), (d,) = vals, dims
    mine, rest = _split_axes(axis_data, axes)
    if not mine:
      return prim.bind(x, axes=axes, axis_index_groups=axis_index_groups), d
    if axis_index_groups is not None:
      if rest:
        raise NotImplementedError(f"{name}: axis_index_groups with several axis names, one "
                                  "of them bound by vmap, is not supported")
      if len({len(g) for g in axis_index_groups}) > 1:
        raise NotImplementedError(f"{name}: axis_index_groups of different sizes over an axis "
                                  "bound by vmap is not supported (only over pmap axes)")
      return _grouped_reduction(reduce_fn, x, d, axis_data.size, axis_index_groups), 0
    x = unbatched_fn(x, axis_data.size) if d is None else reduce_fn(x, d)
    if rest:
      x = prim.bind(x, axes=rest, axis_index_groups=None)
    return x, None
  batching.fancy_primitive_batchers[prim] = batch_rule
  return prim


def _grouped_reduction(reduce_fn, x, d, size, groups):
  """A reduction within each group of positions along the batch dimension."""
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape
  order = [i for g in groups for i in g]
  inverse = np.argsort(order)
  ng, gs = len(groups), len(groups[0])
  y = _reshape(_take_static(x, order, 0), (ng, gs) + shape[1:])
  r = reduce_fn(y, 1)
  y = _shapes.broadcast_in_dim(r, (ng, gs) + shape[1:], (0,) + tuple(range(2, len(shape) + 1)))
  return _take_static(_reshape(y, shape), inverse, 0)


def _sum(x, axis):
  return _reductions.reduce_sum(x, (axis,))


def _times(x, n):
  return _ew.mul(x, _const_like(x, n))


def _max(x, axis):
  return _reductions.reduce_max(x, (axis,))


def _min(x, axis):
  return _reductions.reduce_min(x, (axis,))


psum_p = _reduction_collective("psum", _sum, _times)
pmax_p = _reduction_collective("pmax", _max, lambda x, n: x)
pmin_p = _reduction_collective("pmin", _min, lambda x, n: x)


# psum is linear. As in JAX, a psum is read as "sum, then broadcast to every position", so its
# transpose sums the cotangents of all positions again: the gradient of a per-position result
# is that of the sum of the results over the mapped axis.
def _psum_transpose(ct, x, *, axes, axis_index_groups):
  return [psum_p.bind(ct, axes=axes, axis_index_groups=axis_index_groups)]

ad.deflinear(psum_p, _psum_transpose)


def _extremum_jvp(prim):
  # The tangent of the positions attaining the extremum, averaged over ties.
  def rule(primals, tangents, *, axes, axis_index_groups):
    x, = primals
    t, = tangents
    out = prim.bind(x, axes=axes, axis_index_groups=axis_index_groups)
    if type(t) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    mask = _ew.convert_element_type(_ew.eq(x, out), get_aval(t).dtype)
    count = psum_p.bind(mask, axes=axes, axis_index_groups=axis_index_groups)
    total = psum_p.bind(_ew.mul(t, mask), axes=axes, axis_index_groups=axis_index_groups)
    return out, _ew.div(total, count)
  ad.primitive_jvps[prim] = rule


_extremum_jvp(pmax_p)
_extremum_jvp(pmin_p)


def _reduce_tree(name, prim, x, axis_name, axis_index_groups, constant_fn):
  axes = _as_axes(axis_name)
  sizes = _check_axes(name, axes)
  groups = _canonical_groups(name, axis_index_groups, math.prod(sizes), uneven=True)
  n = _group_size(axes, sizes, groups)
  uneven = groups is not None and len({len(g) for g in groups}) > 1

  def one(leaf):
    if prim is psum_p and get_aval(leaf).dtype == dtypes.bool_:
      leaf = _ew.convert_element_type(leaf, dtypes.int32)  # JAX counts bools as int32
    if not isinstance(leaf, Tracer):
      if uneven and prim is psum_p:
        raise NotImplementedError(f"{name}: a value that is the same at every position (not "
                                  "mapped) with axis_index_groups of different sizes")
      # Not mapped: every position holds the same value (and the result is concrete).
      return constant_fn(leaf, n)
    if vma_lib.active[0] and groups is None and prim in vma_lib.invariant_binders and \
        set(axes) <= set(vma_lib.manual_axes()):  # in a check_vma shard_map body
      return vma_lib.invariant_binders[prim](leaf, axes)
    return prim.bind(leaf, axes=axes, axis_index_groups=groups)
  return tree_util.tree_map(one, x)


def _scaled_constant(leaf, n):
  if isinstance(leaf, (bool, int, float, complex)):
    return leaf * n
  if isinstance(leaf, (np.ndarray, np.generic)):
    return (leaf * np.asarray(n, leaf.dtype)).astype(leaf.dtype)
  return _times(leaf, n)


def psum(x, axis_name, *, axis_index_groups=None):
  """All-reduce sum of ``x`` over the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  ``x`` may be a pytree; booleans are summed as int32. ``axis_name`` may be a tuple of names,
  summing over all of them. Under ``grad`` the cotangent of a ``psum`` is itself summed.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    axis_index_groups: keyword-only; optional list of groups of positions along the axis
      (together covering each position once): the reduction runs within each group.

  Returns:
    A pytree like ``x``: the sum over every position, the same at each.

  Examples:
    >>> x = jnp.array([1., 2., 3., 4.])
    >>> hlox.vmap(lambda v: v / lax.psum(v, 'i'), axis_name='i')(x)
    Array([0.1, 0.2, 0.3, 0.4], dtype=float32)
    >>> hlox.vmap(lambda v: lax.psum(v, 'i', axis_index_groups=[[0, 1], [2, 3]]),
    ...           axis_name='i')(x)
    Array([3., 3., 7., 7.], dtype=float32)
  """
  return _reduce_tree("psum", psum_p, x, axis_name, axis_index_groups, _scaled_constant)


def pmax(x, axis_name, *, axis_index_groups=None):
  """All-reduce maximum of ``x`` over the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  ``x`` may be a pytree; the dtype is kept.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    axis_index_groups: keyword-only; optional list of groups of positions along the axis
      (together covering each position once): the reduction runs within each group.

  Returns:
    A pytree like ``x``: the maximum over every position, the same at each.

  Examples:
    >>> hlox.vmap(lambda v: lax.pmax(v, 'i'), axis_name='i')(jnp.array([1., 2., 3., 4.]))
    Array([4., 4., 4., 4.], dtype=float32)
  """
  return _reduce_tree("pmax", pmax_p, x, axis_name, axis_index_groups, lambda leaf, n: leaf)


def pmin(x, axis_name, *, axis_index_groups=None):
  """All-reduce minimum of ``x`` over the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  ``x`` may be a pytree; the dtype is kept.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    axis_index_groups: keyword-only; optional list of groups of positions along the axis
      (together covering each position once): the reduction runs within each group.

  Returns:
    A pytree like ``x``: the minimum over every position, the same at each.

  Examples:
    >>> hlox.vmap(lambda v: lax.pmin(v, 'i'), axis_name='i')(jnp.array([1., 2., 3., 4.]))
    Array([1., 1., 1., 1.], dtype=float32)
  """
  return _reduce_tree("pmin", pmin_p, x, axis_name, axis_index_groups, lambda leaf, n: leaf)


def pmean(x, axis_name, *, axis_index_groups=None):
  """All-reduce mean of ``x`` over the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  The ``psum`` divided by the number of positions; integer inputs give the default float
  dtype.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    axis_index_groups: keyword-only; optional list of groups of positions along the axis
      (together covering each position once): the reduction runs within each group.

  Returns:
    A pytree like ``x``: the mean over every position (over each group with groups).

  Examples:
    >>> hlox.vmap(lambda v: lax.pmean(v, 'i'), axis_name='i')(jnp.arange(4))
    Array([1.5, 1.5, 1.5, 1.5], dtype=float32)
  """
  axes = _as_axes(axis_name)
  sizes = _check_axes("pmean", axes)
  groups = _canonical_groups("pmean", axis_index_groups, math.prod(sizes))
  n = _group_size(axes, sizes, groups)
  total = psum(x, axis_name, axis_index_groups=axis_index_groups)

  def divide(t):
    dtype = get_aval(t).dtype
    if not dtypes.is_inexact(dtype):
      t = _ew.convert_element_type(t, dtypes.default_float_dtype())
    return _ew.div(t, _const_like(t, n))
  return tree_util.tree_map(divide, total)


def axis_size(axis_name) -> int:
  """The number of positions along the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  For a tuple of names it is the product of their sizes.

  Args:
    axis_name: a mapped axis name, or a tuple of names.

  Returns:
    The size, a Python int.

  Examples:
    >>> hlox.vmap(lambda v: v * lax.axis_size('i'), axis_name='i')(jnp.arange(3))
    Array([0, 3, 6], dtype=int32)
  """
  return math.prod(_check_axes("axis_size", _as_axes(axis_name)))


# --- all_gather --------------------------------------------------------------------------

all_gather_p = Primitive("all_gather")
all_gather_p.def_impl(_unbound_impl("all_gather"))


def _all_gather_abstract_eval(x, *, all_gather_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  shape = list(x.shape)
  d = all_gather_dimension
  if tiled:
    if not 0 <= d < len(shape):
      raise ValueError(f"all_gather: tiled gather dimension {d} is out of bounds for an "
                       f"operand of shape {x.shape}")
    shape[d] *= axis_size
  else:
    if not 0 <= d <= len(shape):
      raise ValueError(f"all_gather: gather dimension {d} is out of bounds for an operand of "
                       f"shape {x.shape}")
    shape.insert(d, axis_size)
  return ShapedArray(tuple(shape), x.dtype)

all_gather_p.def_abstract_eval(_all_gather_abstract_eval)


def _all_gather_lowering(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups,
                         axis_size, tiled):
  from jaxlib.mlir.dialects import stablehlo as hlo
  aval_in, = ctx.avals_in
  aval_out, = ctx.avals_out
  if not tiled:  # gather into a new size-1 dimension
    shape = list(aval_in.shape)
    shape.insert(all_gather_dimension, 1)
    x = hlo.reshape(xla.aval_to_ir_type(aval_in.update(shape=tuple(shape))), x)
  groups = _sized_replica_groups("all_gather", ctx.module_context, axis_name,
                                 axis_index_groups, axis_size)
  op = hlo.AllGatherOp([xla.aval_to_ir_type(aval_out)], [x], all_gather_dimension,
                       xla.replica_groups_attr(groups))
  xla.spmd_collective(ctx.module_context, op)
  return op.results[0]

xla.register_lowering(all_gather_p, _all_gather_lowering)


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  return [reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension,
                                axis_name=axis_name, axis_index_groups=axis_index_groups,
                                axis_size=axis_size, tiled=tiled)]


def _rebind_batch_first(prim, x, d, dim_param: str, dim: int, **params):
  """Batching rule for a collective over other axes than this vmap's: bind it again with
  the batch dimension moved first (its dimension parameter shifted by one)."""
  if d is None:
    return prim.bind(x, **{dim_param: dim}, **params), None
  return prim.bind(_moveaxis(x, d, 0), **{dim_param: dim + 1}, **params), 0


def _all_gather_batch(axis_data, vals, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled):
  (x,), (d,) = vals, dims
  params = dict(axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  mine, rest = _split_axes(axis_data, axis_name)
  if not mine:
    return _rebind_batch_first(all_gather_p, x, d, "all_gather_dimension",
                               all_gather_dimension, axis_name=axis_name, **params)
  size = axis_data.size
  if axis_index_groups is not None and not rest:
    return _grouped_all_gather(x, d, size, axis_index_groups, all_gather_dimension, tiled), 0
  _no_groups_in_vmap("all_gather", axis_index_groups)
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape[1:]
  pos = axis_name.index(axis_data.name)
  major, minor = _sizes_of(axis_name[:pos]), _sizes_of(axis_name[pos + 1:])
  g = major * size * minor
  y = x  # (S, ...): already every position's value when the vmap axis is the only one
  if rest:
    # (S, M*m, ...): the other names gathered, row-major; then (M, S, m, ...) -> (G, ...),
    # positions in the order of ``axis_name``.
    y = all_gather_p.bind(x, all_gather_dimension=1, axis_name=rest, axis_index_groups=None,
                          axis_size=major * minor, tiled=False)
    if major > 1:
      y = _reshape(y, (size, major, minor) + shape)
      y = _transpose(y, (1, 0) + tuple(range(2, len(shape) + 3)))
    y = _reshape(y, (g,) + shape)
  y = _moveaxis(y, 0, all_gather_dimension)
  if tiled:
    a = all_gather_dimension
    y = _reshape(y, shape[:a] + (g * shape[a],) + shape[a + 1:])
  return y, None

def _grouped_all_gather(x, d, size, groups, dim, tiled):
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape[1:]
  ng, gs = len(groups), len(groups[0])
  y = _reshape(_take_static(x, [i for g in groups for i in g], 0), (ng, gs) + shape)
  group_of = np.zeros(size, np.int32)
  for k, g in enumerate(groups):
    group_of[list(g)] = k
  y = _moveaxis(_take_static(y, group_of, 0), 1, dim + 1)  # (S, ..., gs at dim, ...)
  if tiled:
    y = _reshape(y, (size,) + shape[:dim] + (gs * shape[dim],) + shape[dim + 1:])
  return y


ad.deflinear(all_gather_p, _all_gather_transpose)
batching.fancy_primitive_batchers[all_gather_p] = _all_gather_batch


# ``{to: bind(leaf, **all_gather params)}``: gathers whose result is ``to='reduced'`` (or
# another type than varying) in a shard_map body, set by ``lax.varying``.
gather_to: dict = {}
_GATHER_TO = ("varying", "reduced", "invarying")


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False,
               to: str = "varying"):
  """Gathers ``x`` from every position of the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  Without ``tiled`` the gathered values are stacked along a new dimension at ``axis``; with
  it they are concatenated along the existing dimension ``axis``. Inside ``shard_map`` the
  result varies along ``axis_name`` (``to='varying'``) or is reduced along it
  (``to='reduced'``: the same everywhere, its cotangent made of partial sums); other ``to``
  values raise ``ValueError``. Its transpose is ``psum_scatter``.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    axis_index_groups: keyword-only; optional groups of positions gathered separately.
    axis: keyword-only; where the gathered dimension goes (or which one is concatenated).
    tiled: keyword-only; concatenate instead of stacking.
    to: keyword-only; ``'varying'`` or ``'reduced'`` (for ``shard_map``).

  Returns:
    The gathered values, the same at every position.

  Examples:
    >>> hlox.vmap(lambda v: lax.all_gather(v, 'i'), axis_name='i')(jnp.arange(3))
    Array([[0, 1, 2],
           [0, 1, 2],
           [0, 1, 2]], dtype=int32)
  """
  if to not in _GATHER_TO:
    raise ValueError("Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                     f"values are: {set(_GATHER_TO)}")
  if to != "varying" and axis_index_groups is not None:
    raise NotImplementedError
  axes = _as_axes(axis_name)
  sizes = _check_axes("all_gather", axes)
  groups = _canonical_groups("all_gather", axis_index_groups, math.prod(sizes))
  n = _group_size(axes, sizes, groups)

  def gather(leaf):
    aval = get_aval(leaf)
    rank = aval.ndim if tiled else aval.ndim + 1
    if not -rank <= axis < rank:
      raise ValueError(f"all_gather: axis {axis} is out of bounds for "
                       f"{'tiled ' if tiled else ''}gathering an operand of shape "
                       f"{aval.shape}")
    params = dict(all_gather_dimension=int(axis) % rank, axis_name=axes,
                  axis_index_groups=groups, axis_size=n, tiled=bool(tiled))
    if to != "varying":
      if to not in gather_to:
        raise NotImplementedError(f"all_gather(to={to!r}) is not supported in hlox")
      return gather_to[to](leaf, **params)
    return all_gather_p.bind(leaf, **params)
  return tree_util.tree_map(gather, x)


# --- psum_scatter (reduce_scatter) --------------------------------------------------------

reduce_scatter_p = Primitive("reduce_scatter")
reduce_scatter_p.def_impl(_unbound_impl("psum_scatter"))


def _reduce_scatter_abstract_eval(x, *, scatter_dimension, axis_name, axis_index_groups,
                                  axis_size, tiled):
  d = scatter_dimension
  if not 0 <= d < x.ndim:
    raise ValueError(f"psum_scatter: scatter_dimension {d} is out of bounds for an operand of "
                     f"shape {x.shape}")
  shape = list(x.shape)
  if tiled:
    if shape[d] % axis_size:
      raise ValueError(f"psum_scatter: with tiled=True, the size of scatter_dimension {d} of "
                       f"the operand (shape {x.shape}) must be divisible by "
                       f"{_size_of(axis_name, axis_index_groups, axis_size)}")
    shape[d] //= axis_size
  else:
    if shape[d] != axis_size:
      raise ValueError(f"psum_scatter: the size of scatter_dimension {d} of the operand "
                       f"(shape {x.shape}) must equal "
                       f"{_size_of(axis_name, axis_index_groups, axis_size)}; use tiled=True "
                       "to scatter blocks")
    del shape[d]
  return ShapedArray(tuple(shape), x.dtype)

reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract_eval)


def _reduce_scatter_lowering(ctx, x, *, scatter_dimension, axis_name, axis_index_groups,
                             axis_size, tiled):
  from jaxlib.mlir import ir
  from jaxlib.mlir.dialects import stablehlo as hlo
  aval_in, = ctx.avals_in
  aval_out, = ctx.avals_out
  shape = list(aval_in.shape)
  shape[scatter_dimension] //= axis_size
  groups = _sized_replica_groups("psum_scatter", ctx.module_context, axis_name,
                                 axis_index_groups, axis_size)
  op = hlo.ReduceScatterOp(xla.aval_to_ir_type(aval_in.update(shape=tuple(shape))), x,
                           scatter_dimension, xla.replica_groups_attr(groups))
  xla.spmd_collective(ctx.module_context, op)
  scalar = xla.aval_to_ir_type(ShapedArray((), aval_in.dtype))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.add(*block.arguments)])
  out = op.result
  if not tiled:
    out = hlo.reshape(xla.aval_to_ir_type(aval_out), out)
  return out

xla.register_lowering(reduce_scatter_p, _reduce_scatter_lowering)


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  return [all_gather_p.bind(ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
                            axis_index_groups=axis_index_groups, axis_size=axis_size,
                            tiled=tiled)]


def _reduce_scatter_batch(axis_data, vals, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
  (x,), (d,) = vals, dims
  params = dict(axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  mine, rest = _split_axes(axis_data, axis_name)
  if not mine:
    return _rebind_batch_first(reduce_scatter_p, x, d, "scatter_dimension",
                               scatter_dimension, axis_name=axis_name, **params)
  size = axis_data.size
  if axis_index_groups is not None and not rest:
    return _grouped_reduce_scatter(x, d, size, axis_index_groups, scatter_dimension,
                                   tiled), 0
  _no_groups_in_vmap("psum_scatter", axis_index_groups)
  # The sum over the vmap axis first (an unmapped operand is the same at every position).
  z = _times(x, size) if d is None else _sum(x, d)
  shape = get_aval(z).shape
  s = scatter_dimension
  pos = axis_name.index(axis_data.name)
  major, minor = _sizes_of(axis_name[:pos]), _sizes_of(axis_name[pos + 1:])
  chunk = shape[s] // axis_size
  # The scattered dimension holds blocks ordered (major, vmap, minor); the vmap part of each
  # block index becomes the batch dimension and the rest is scattered over the other names.
  if major > 1:
    z = _reshape(z, shape[:s] + (major, size, minor * chunk) + shape[s + 1:])
    perm = list(range(len(shape) + 2))
    perm[s], perm[s + 1] = perm[s + 1], perm[s]
    z = _transpose(z, perm)
  if rest or tiled:
    z = _reshape(z, shape[:s] + (size, major * minor * chunk) + shape[s + 1:])
  if rest:
    z = reduce_scatter_p.bind(z, scatter_dimension=s + 1, axis_name=rest,
                              axis_index_groups=None, axis_size=major * minor, tiled=True)
  if not tiled:
    z = _reshape(z, shape[:s] + (size,) + shape[s + 1:])
  return z, s

def _grouped_reduce_scatter(x, d, size, groups, dim, tiled):
  # Sum within each group; the member of rank r in its group keeps block r of its group's sum.
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape[1:]
  ng, gs = len(groups), len(groups[0])
  order = [i for g in groups for i in g]
  sums = _sum(_reshape(_take_static(x, order, 0), (ng, gs) + shape), 1)
  chunk = shape[dim] // gs
  sums = _reshape(sums, (ng,) + shape[:dim] + (gs, chunk) + shape[dim + 1:])
  sums = _moveaxis(sums, dim + 1, 1)  # (ng, gs, ..., chunk, ...): in the order of ``order``
  out_shape = shape[:dim] + ((chunk,) if tiled else ()) + shape[dim + 1:]
  y = _reshape(sums, (size,) + out_shape)
  return _take_static(y, np.argsort(order), 0)


ad.deflinear(reduce_scatter_p, _reduce_scatter_transpose)
batching.fancy_primitive_batchers[reduce_scatter_p] = _reduce_scatter_batch


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """A ``psum`` whose result is split over the positions of ``axis_name`` (reduce-scatter).

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  Position ``i`` keeps block ``i`` of the sum along ``scatter_dimension``: without ``tiled``
  that dimension must have the axis' size and is removed; with ``tiled`` it must be
  divisible by the axis' size and shrinks by that factor. Its transpose is ``all_gather``.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    scatter_dimension: keyword-only; the dimension split among positions.
    axis_index_groups: keyword-only; optional groups of positions reduced separately.
    tiled: keyword-only; keep the scattered dimension (shrunk) instead of removing it.

  Returns:
    This position's block of the sum.

  Examples:
    >>> hlox.vmap(lambda v: lax.psum_scatter(v, 'i'), axis_name='i')(
    ...     jnp.arange(4).reshape(2, 2))
    Array([2, 4], dtype=int32)
  """
  axes = _as_axes(axis_name)
  sizes = _check_axes("psum_scatter", axes)
  groups = _canonical_groups("psum_scatter", axis_index_groups, math.prod(sizes))
  n = _group_size(axes, sizes, groups)

  def scatter(leaf):
    aval = get_aval(leaf)
    if not -aval.ndim <= scatter_dimension < aval.ndim:
      raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of bounds "
                       f"for an operand of shape {aval.shape}")
    if aval.dtype == dtypes.bool_:
      leaf = _ew.convert_element_type(leaf, dtypes.int32)
    return reduce_scatter_p.bind(leaf, scatter_dimension=int(scatter_dimension) % aval.ndim,
                                 axis_name=axes, axis_index_groups=groups, axis_size=n,
                                 tiled=bool(tiled))
  return tree_util.tree_map(scatter, x)


# --- all_to_all ----------------------------------------------------------------------------
#
# The primitive always splits ``split_axis`` into ``axis_size`` blocks and sends block ``k`` to
# position ``k``, which concatenates the blocks it receives along ``concat_axis`` in the order
# of their senders (the tiled form); the untiled public form adds and removes size-1
# dimensions around it, as in JAX.

all_to_all_p = Primitive("all_to_all")
all_to_all_p.def_impl(_unbound_impl("all_to_all"))


def _all_to_all_abstract_eval(x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                              axis_size, tiled):
  for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
    if not 0 <= a < x.ndim:
      raise ValueError(f"all_to_all: {what} {a} is out of bounds for an operand of shape "
                       f"{x.shape}")
  shape = list(x.shape)
  if shape[split_axis] % axis_size:
    raise ValueError(f"all_to_all: the size of split_axis {split_axis} of the operand (shape "
                     f"{x.shape}) must be divisible by "
                     f"{_size_of(axis_name, axis_index_groups, axis_size)}")
  shape[split_axis] //= axis_size
  shape[concat_axis] *= axis_size
  return ShapedArray(tuple(shape), x.dtype)

all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)


def _all_to_all_lowering(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                         axis_size, tiled):
  from jaxlib.mlir.dialects import stablehlo as hlo
  groups = _sized_replica_groups("all_to_all", ctx.module_context, axis_name,
                                 axis_index_groups, axis_size)
  if len(groups[0]) == 1:
    return x
  aval_out, = ctx.avals_out
  op = hlo.AllToAllOp([x], split_axis, concat_axis, len(groups[0]),
                      xla.replica_groups_attr(groups),
                      results=[xla.aval_to_ir_type(aval_out)])
  xla.spmd_collective(ctx.module_context, op, global_ids=False)
  return op.results[0]

xla.register_lowering(all_to_all_p, _all_to_all_lowering)


def _all_to_all_transpose(ct, x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                          axis_size, tiled):
  # Block k of position i's split axis went to block i of position k's concat axis: sending
  # the concat blocks back along the split axis undoes it.
  return [all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis,
                            axis_name=axis_name, axis_index_groups=axis_index_groups,
                            axis_size=axis_size, tiled=tiled)]


def _all_to_all_batch(axis_data, vals, dims, *, split_axis, concat_axis, axis_name,
                      axis_index_groups, axis_size, tiled):
  (x,), (d,) = vals, dims
  params = dict(axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  mine, rest = _split_axes(axis_data, axis_name)
  if not mine:
    if d is None:
      return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                               axis_name=axis_name, **params), None
    x = _moveaxis(x, d, 0)
    return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                             axis_name=axis_name, **params), 0
  _no_groups_in_vmap("all_to_all", axis_index_groups)
  size = axis_data.size
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape[1:]
  n = len(shape)
  s, t = split_axis, concat_axis
  pos = axis_name.index(axis_data.name)
  major_names, minor_names = axis_name[:pos], axis_name[pos + 1:]
  major, minor = _sizes_of(major_names), _sizes_of(minor_names)
  r = shape[s] // axis_size
  # Layout (sender major, sender vmap, sender minor, *pre, dest major, dest vmap, dest minor, r,
  # *post): the batch dimension is the sender's vmap position, the split axis is cut into the
  # destination's positions. The exchanges over the other names swap sender and destination
  # parts; the vmap part is swapped by relabelling.
  pre, post = shape[:s], shape[s + 1:]
  y = _reshape(x, (1, size, 1) + pre + (major, size, minor, r) + post)
  ad_, vd, bd = 3 + s, 4 + s, 5 + s
  if major_names:
    y = all_to_all_p.bind(y, split_axis=ad_, concat_axis=0, axis_name=major_names,
                          axis_index_groups=None, axis_size=major, tiled=True)
  if minor_names:
    y = all_to_all_p.bind(y, split_axis=bd, concat_axis=2, axis_name=minor_names,
                          axis_index_groups=None, axis_size=minor, tiled=True)
  # Now dims: 0 sender major, 1 sender vmap, 2 sender minor, pre, ad_ (1), vd (dest vmap =
  # the new batch dimension), bd (1), r, post. Output dimension i of the element is: the
  # senders followed by r if i == s == t; r if i == s; the senders followed by the input's
  # dimension i if i == t; the input's dimension i otherwise.
  def src_dim(i):  # where the input's dimension i (i != s) lives in ``y``
    return 3 + i if i < s else 6 + i
  order, out_shape = [vd], [size]
  for i in range(n):
    group = [0, 1, 2] if i == t else []
    group.append(6 + s if i == s else src_dim(i))
    order.extend(group)
    size_i = r if i == s else shape[i]
    out_shape.append(size_i * (axis_size if i == t else 1))
  y = _transpose(y, order + [ad_, bd])
  return _reshape(y, out_shape), 0

ad.deflinear(all_to_all_p, _all_to_all_transpose)
batching.fancy_primitive_batchers[all_to_all_p] = _all_to_all_batch


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Exchanges blocks between the positions of the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  Dimension ``split_axis`` of ``x`` is cut into one block per position; position ``k``
  receives block ``k`` of every position's ``x`` and places them, in sender order, along
  ``concat_axis``. Without ``tiled`` the split dimension must have the axis' size and is
  removed, and the received blocks form a new dimension at ``concat_axis``; with ``tiled``
  the split dimension shrinks and the concatenated one grows by the axis' size.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    split_axis: the dimension cut into blocks.
    concat_axis: where the received blocks go.
    axis_index_groups: keyword-only; optional groups of positions exchanging separately.
    tiled: keyword-only; keep dimensions (resized) instead of removing and inserting them.

  Returns:
    The rearranged blocks.

  Examples:
    >>> hlox.vmap(lambda v: lax.all_to_all(v, 'i', 0, 0), axis_name='i')(
    ...     jnp.arange(4).reshape(2, 2))
    Array([[0, 2],
           [1, 3]], dtype=int32)
  """
  axes = _as_axes(axis_name)
  sizes = _check_axes("all_to_all", axes)
  groups = _canonical_groups("all_to_all", axis_index_groups, math.prod(sizes))
  n = _group_size(axes, sizes, groups)

  def exchange(leaf):
    aval = get_aval(leaf)
    ndim = aval.ndim
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
      if not -ndim <= a < ndim:
        raise ValueError(f"all_to_all: {what} {a} is out of bounds for an operand of shape "
                         f"{aval.shape}")
    s, c = int(split_axis) % ndim, int(concat_axis) % ndim
    if tiled:
      if aval.shape[s] % n:
        raise ValueError(f"all_to_all: the size of split_axis {s} of the operand (shape "
                         f"{aval.shape}) must be divisible by {_size_of(axes, groups, n)}")
      return all_to_all_p.bind(leaf, split_axis=s, concat_axis=c, axis_name=axes,
                               axis_index_groups=groups, axis_size=n, tiled=True)
    if aval.shape[s] != n:
      raise ValueError(f"all_to_all: the size of split_axis {s} of the operand (shape "
                       f"{aval.shape}) must equal {_size_of(axes, groups, n)}")
    # Insert the size-1 dimension that collects the blocks at the output position
    # ``concat_axis`` (counted after the split dimension is removed).
    if s < c:
      c += 1
      leaf = _shapes.expand_dims(leaf, (c,))
    elif c < s:
      leaf = _shapes.expand_dims(leaf, (c,))
      s += 1
    out = all_to_all_p.bind(leaf, split_axis=s, concat_axis=c, axis_name=axes,
                            axis_index_groups=groups, axis_size=n, tiled=False)
    return out if s == c else _shapes.squeeze(out, (s,))
  return tree_util.tree_map(exchange, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swaps the mapped axis ``axis_name`` with the positional dimension ``axis`` of ``x``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  The dimension ``axis`` must have the mapped axis' size; this is ``all_to_all`` splitting
  and concatenating along ``axis``.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name.
    axis: the positional dimension exchanged.
    axis_index_groups: keyword-only; optional groups of positions exchanging separately.

  Returns:
    ``x`` with the two axes exchanged.

  Examples:
    >>> hlox.vmap(lambda v: lax.pswapaxes(v, 'i', 0), axis_name='i')(
    ...     jnp.arange(4).reshape(2, 2))
    Array([[0, 2],
           [1, 3]], dtype=int32)
  """
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- ppermute ------------------------------------------------------------------------------

ppermute_p = Primitive("ppermute")
ppermute_p.def_impl(_unbound_impl("ppermute"))
ppermute_p.def_abstract_eval(lambda x, *, axis_name, perm: x)


def _ppermute_lowering(ctx, x, *, axis_name, perm):
  from jaxlib.mlir.dialects import stablehlo as hlo
  groups = _replica_groups(ctx.module_context, axis_name)
  pairs = np.asarray([(g[src], g[dst]) for g in groups for src, dst in perm],
                     np.int64).reshape(-1, 2)
  aval_out, = ctx.avals_out
  op = hlo.CollectivePermuteOp(x, pairs, results=[xla.aval_to_ir_type(aval_out)])
  xla.spmd_collective(ctx.module_context, op, global_ids=False)
  return op.results[0]

xla.register_lowering(ppermute_p, _ppermute_lowering)


def _ppermute_transpose(ct, x, *, axis_name, perm):
  return [ppermute_p.bind(ct, axis_name=axis_name,
                          perm=tuple((dst, src) for src, dst in perm))]


def _ppermute_batch(axis_data, vals, dims, *, axis_name, perm):
  (x,), (d,) = vals, dims
  mine, rest = _split_axes(axis_data, axis_name)
  if not mine:
    return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
  size = axis_data.size
  if not rest:
    if d is None and len(perm) == size:
      return x, None  # every position receives the (same) value
    x = batching.matchaxis(x, d, 0, size)
    sources = np.full(size, size, np.int32)  # out of bounds: zeros
    for src, dst in perm:
      sources[dst] = src
    return _take_static(x, sources, 0), 0
  # Over the vmap axis and pmap axes together: gather the operand over the other names, then
  # every (pmap position, vmap position) picks its source from the gathered values.
  x = batching.matchaxis(x, d, 0, size)
  shape = get_aval(x).shape[1:]
  pos = axis_name.index(axis_data.name)
  major, minor = _sizes_of(axis_name[:pos]), _sizes_of(axis_name[pos + 1:])
  others = major * minor
  g = all_gather_p.bind(x, all_gather_dimension=1, axis_name=rest, axis_index_groups=None,
                        axis_size=others, tiled=False)          # (S, M*m, ...)
  g = _reshape(g, (size * others,) + shape)                     # flat: vmap major, rest minor
  table = np.full((others, size), size * others, np.int32)      # out of bounds: zeros
  for src, dst in perm:
    a, v, b = np.unravel_index(dst, (major, size, minor))
    sa, sv, sb = np.unravel_index(src, (major, size, minor))
    table[a * minor + b, v] = sv * others + sa * minor + sb
  here = axis_index(rest)
  row = _indexing.dynamic_index_in_dim(_ew.convert_element_type(table, dtypes.int32),
                                       here, 0, keepdims=False)  # (S,) sources of this row
  aval = get_aval(g)
  dnums = _indexing.GatherDimensionNumbers(offset_dims=tuple(range(1, aval.ndim)),
                                           collapsed_slice_dims=(0,), start_index_map=(0,))
  out = _indexing.gather(g, _shapes.reshape(row, (size, 1)), dnums, (1,) + aval.shape[1:],
                         mode="fill", fill_value=0)
  return out, 0

ad.deflinear(ppermute_p, _ppermute_transpose)
batching.fancy_primitive_batchers[ppermute_p] = _ppermute_batch


def ppermute(x, axis_name, perm):
  """Sends ``x`` between positions of the mapped axis ``axis_name`` along given pairs.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  For each ``(src, dst)`` in ``perm``, position ``dst`` receives ``src``'s ``x``; no position
  may appear twice as a source or as a destination (else ``ValueError``). Positions that
  receive nothing get zeros. Its transpose is the inverse permutation.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name, or a tuple of names.
    perm: a sequence of ``(source, destination)`` position pairs.

  Returns:
    The received values (zeros where nothing was sent).

  Examples:
    >>> hlox.vmap(lambda v: lax.ppermute(v, 'i', perm=[(0, 1), (1, 2)]), axis_name='i')(
    ...     jnp.array([1, 2, 3]))
    Array([0, 1, 2], dtype=int32)
  """
  axes = _as_axes(axis_name)
  n = math.prod(_check_axes("ppermute", axes))
  if not isinstance(perm, (list, tuple)):
    raise TypeError("`perm` passed to `jax.lax.ppermute` must be a "
                    "list or a tuple of (source, destination) pairs. Got perm of type "
                    f"{type(perm)}")
  pairs = []
  for pair in perm:
    try:
      src, dst = (int(i) for i in pair)
    except (TypeError, ValueError):
      raise ValueError(f"ppermute: perm must hold (source, destination) pairs of ints, got "
                       f"{perm}") from None
    if not (0 <= src < n and 0 <= dst < n):
      raise ValueError(f"ppermute: pair {(src, dst)} of perm {perm} is out of range for an "
                       f"axis {axis_name} of size {n}")
    pairs.append((src, dst))
  srcs, dsts = [p[0] for p in pairs], [p[1] for p in pairs]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute: sources and destinations of perm must be unique, got {perm}")
  pairs = tuple(pairs)
  return tree_util.tree_map(lambda leaf: ppermute_p.bind(leaf, axis_name=axes, perm=pairs), x)


def pshuffle(x, axis_name, perm):
  """Permutes values along the mapped axis ``axis_name``, naming each position's source.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  Position ``i`` receives the value of position ``perm[i]``; ``perm`` must be a permutation
  of the axis' positions (else ``ValueError``). A ``ppermute`` with the pairs
  ``(perm[i], i)``.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name.
    perm: for each position, the position it receives from.

  Returns:
    The permuted values.

  Examples:
    >>> hlox.vmap(lambda v: lax.pshuffle(v, 'i', perm=[2, 0, 1]), axis_name='i')(
    ...     jnp.array([1, 2, 3]))
    Array([3, 1, 2], dtype=int32)
  """
  perm = [int(i) for i in perm]
  if sorted(perm) != list(range(len(perm))):
    raise ValueError(f"pshuffle: `perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


# --- axis_index ----------------------------------------------------------------------------

axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(_unbound_impl("axis_index"))
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray((), dtypes.int32))
ad.defjvp_zero(axis_index_p)


def _axis_index_batch(axis_data, vals, dims, *, axis_name):
  if axis_name != axis_data.name:
    return axis_index_p.bind(axis_name=axis_name), None
  return _shapes.iota(dtypes.int32, axis_data.size), 0

batching.fancy_primitive_batchers[axis_index_p] = _axis_index_batch
xla.register_lowering(axis_index_p, lambda ctx, *, axis_name: xla.axis_index_hlo(
    ctx.module_context, axis_name))


def axis_index(axis_name):
  """This position's index along the mapped axis ``axis_name``.

  A collective runs inside a function mapped with a named axis: ``vmap(..., axis_name=...)``,
  ``pmap`` or ``shard_map``. Outside of one, the name is unbound and ``NameError`` is raised.
  For a tuple of names it is the row-major position over all of them (the first name
  varying slowest).

  Args:
    axis_name: a mapped axis name, or a tuple of names.

  Returns:
    A scalar int32 array.

  Examples:
    >>> hlox.vmap(lambda v: lax.axis_index('i'), axis_name='i')(jnp.zeros(4))
    Array([0, 1, 2, 3], dtype=int32)
  """
  axes = _as_axes(axis_name)
  sizes = _check_axes("axis_index", axes)
  index, stride = None, 1
  for name, size in reversed(list(zip(axes, sizes))):
    i = axis_index_p.bind(axis_name=name)
    if stride != 1:
      i = _ew.mul(i, np.int32(stride))
    index = i if index is None else _ew.add(index, i)
    stride *= size
  return index


# --- lowering of psum / pmax / pmin ----------------------------------------------------------

def _all_reduce_lowering(body):
  def rule(ctx, x, *, axes, axis_index_groups):
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as hlo
    aval, = ctx.avals_in
    groups = _replica_groups(ctx.module_context, axes, axis_index_groups)
    op = hlo.AllReduceOp([xla.aval_to_ir_type(aval)], [x], xla.replica_groups_attr(groups))
    xla.spmd_collective(ctx.module_context, op)
    scalar = xla.aval_to_ir_type(ShapedArray((), aval.dtype))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      hlo.return_([body(*block.arguments)])
    return op.results[0]
  return rule


def _hlo(name):
  def op(*args):
    from jaxlib.mlir.dialects import stablehlo as hlo
    return getattr(hlo, name)(*args)
  return op


xla.register_lowering(psum_p, _all_reduce_lowering(_hlo("add")))
xla.register_lowering(pmax_p, _all_reduce_lowering(_hlo("maximum")))
xla.register_lowering(pmin_p, _all_reduce_lowering(_hlo("minimum")))


# The replica machinery drops and restores a piece's size-1 mapped axis and scales and sums
# cotangents with these (the interpreter itself knows no primitive).
pmap_interp.register_array_ops(squeeze=_shapes.squeeze, expand_dims=_shapes.expand_dims,
                               div=_ew.div, reduce_sum=_reductions.reduce_sum)
# Elementwise primitives run on the pieces of values split over replicas (jit of pmap).
replicated.register_elementwise(*_utils.elementwise_primitives, _ew.integer_pow_p,
                                _ew.select_n_p, _ew.clamp_p, _ew.convert_element_type_p)
