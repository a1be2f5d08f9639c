"""Collectives over named mapped axes: psum, pmax, pmin, pmean, all_gather, axis_index.

Under ``vmap(..., axis_name=n)`` a collective over ``n`` reduces (or gathers) across the
batch dimension; each primitive's batching rule does that. (Lowering for ``pmap``'s
replicas is added with the SPMD interpreter.)
"""
from __future__ import annotations

import numpy as np

from hlox import tree_util
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import axis_size as _axis_size
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching

__all__ = ["psum", "pmax", "pmin", "pmean", "all_gather", "axis_index", "psum_p", "pmax_p",
           "pmin_p", "all_gather_p", "axis_index_p"]


def _as_axes(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _unbound(name):
  def impl(*args, axes, **params):
    _axis_size(axes[0])  # raises NameError naming the axis
    raise NameError(f"{name}: axis {axes} is not bound by an enclosing vmap or pmap")
  return impl


def _split_axes(axis_data, axes):
  mine = axis_data.name in axes
  rest = tuple(a for a in axes if a != axis_data.name)
  return mine, rest


# --- psum / pmax / pmin ------------------------------------------------------------------

def _reduction_collective(name, reduce_fn, unbatched_fn):
  prim = Primitive(name)
  prim.def_impl(_unbound(name))
  prim.def_abstract_eval(lambda x, *, axes: x)

  def batch_rule(axis_data, vals, dims, *, axes):
    (x,), (d,) = vals, dims
    mine, rest = _split_axes(axis_data, axes)
    if mine:
      x = unbatched_fn(x, axis_data.size) if d is None else reduce_fn(x, d)
      d = None
    if rest:
      x = prim.bind(x, axes=rest)
    return x, d
  batching.axis_primitive_batchers[prim] = batch_rule
  return prim


def _sum(x, axis):
  from hlox.lax import reduce_sum
  return reduce_sum(x, (axis,))


def _times(x, n):
  from hlox.lax import mul
  return mul(x, np.asarray(n, get_aval(x).dtype)[()])


def _max(x, axis):
  from hlox.lax import reduce_max
  return reduce_max(x, (axis,))


def _min(x, axis):
  from hlox.lax import reduce_min
  return reduce_min(x, (axis,))


psum_p = _reduction_collective("psum", _sum, _times)
pmax_p = _reduction_collective("pmax", _max, lambda x, n: x)
pmin_p = _reduction_collective("pmin", _min, lambda x, n: x)
# psum is linear: its transpose broadcasts the cotangent back (a psum of it in JAX's
# convention for replicated values).
ad.deflinear(psum_p, lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes)])


def _collective_over_tree(prim, x, axis_name):
  axes = _as_axes(axis_name)
  return tree_util.tree_map(lambda leaf: prim.bind(leaf, axes=axes), x)


def psum(x, axis_name, *, axis_index_groups=None):
  """Sum of ``x`` over the mapped axis ``axis_name`` (a name or tuple of names)."""
  if axis_index_groups is not None:
    raise NotImplementedError("psum: axis_index_groups is not supported yet")
  return _collective_over_tree(psum_p, x, axis_name)


def pmax(x, axis_name, *, axis_index_groups=None):
  """Maximum of ``x`` over the mapped axis ``axis_name``."""
  return _collective_over_tree(pmax_p, x, axis_name)


def pmin(x, axis_name, *, axis_index_groups=None):
  """Minimum of ``x`` over the mapped axis ``axis_name``."""
  return _collective_over_tree(pmin_p, x, axis_name)


def pmean(x, axis_name, *, axis_index_groups=None):
  """Mean of ``x`` over the mapped axis ``axis_name``."""
  from hlox.lax import div
  n = 1
  for name in _as_axes(axis_name):
    n *= _axis_size(name)
  total = psum(x, axis_name)
  return tree_util.tree_map(lambda t: div(t, np.asarray(n, get_aval(t).dtype)[()]), total)


def _extremum_jvp(prim):
  def rule(primals, tangents, *, axes):
    from hlox.lax import convert_element_type, div, eq, mul
    x, = primals
    t, = tangents
    out = prim.bind(x, axes=axes)
    if type(t) is ad.Zero:
      return out, ad.Zero.from_primal_value(out)
    mask = convert_element_type(eq(x, out), get_aval(x).dtype)
    count = psum_p.bind(mask, axes=axes)
    return out, div(psum_p.bind(mul(t, mask), axes=axes), count)
  ad.primitive_jvps[prim] = rule


_extremum_jvp(pmax_p)
_extremum_jvp(pmin_p)


# --- all_gather --------------------------------------------------------------------------

all_gather_p = Primitive("all_gather")
all_gather_p.def_impl(_unbound("all_gather"))


def _all_gather_abstract_eval(x, *, axes, axis, tiled):
  size = 1
  for name in axes:
    size *= _axis_size(name)
  if tiled:
    shape = list(x.shape)
    shape[axis] *= size
    return x.update(shape=tuple(shape))
  return x.update(shape=x.shape[:axis] + (size,) + x.shape[axis:])

all_gather_p.def_abstract_eval(_all_gather_abstract_eval)


def _all_gather_batch(axis_data, vals, dims, *, axes, axis, tiled):
  from hlox.lax import reshape
  (x,), (d,) = vals, dims
  mine, rest = _split_axes(axis_data, axes)
  if rest:
    raise NotImplementedError("all_gather over several axis names inside vmap")
  x = batching.matchaxis(x, d, axis, axis_data.size)
  if tiled:
    shape = get_aval(x).shape
    x = reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])
  return x, None

batching.axis_primitive_batchers[all_gather_p] = _all_gather_batch


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
  """Stack (or, with ``tiled``, concatenate) ``x`` from every position of ``axis_name``."""
  axes = _as_axes(axis_name)

  def gather(leaf):
    ndim = get_aval(leaf).ndim
    a = axis % (ndim + (0 if tiled else 1)) if ndim or not tiled else 0
    return all_gather_p.bind(leaf, axes=axes, axis=a, tiled=tiled)
  return tree_util.tree_map(gather, x)


# --- axis_index --------------------------------------------------------------------------

axis_index_p = Primitive("axis_index")
axis_index_p.def_impl(_unbound("axis_index"))
axis_index_p.def_abstract_eval(lambda *, axes: ShapedArray((), dtypes.int32))
ad.defjvp_zero(axis_index_p)


def _axis_index_batch(axis_data, vals, dims, *, axes):
  from hlox.lax import iota
  return iota(dtypes.int32, axis_data.size), 0

batching.axis_primitive_batchers[axis_index_p] = _axis_index_batch


def axis_index(axis_name):
  """The position along the mapped axis ``axis_name`` (an int32 scalar per position)."""
  return axis_index_p.bind(axes=_as_axes(axis_name))
