"""What a ``shard_map`` body sees of the mesh, and the types of values crossing it.

Inside a body the mesh in effect (``get_abstract_mesh()``, ``current_mesh()``) is the
shard_map's with its manual axes of type Manual, as in JAX: a nested ``shard_map``/``smap``
then goes manual over the remaining axes only, and ``PartitionSpec``s name the rest.

A body manual over only some axes of a mesh whose other axes are Explicit (partial manual)
keeps sharding in types over those: an argument split ``P(('x', 'y'), None)`` entering a
body manual over ``'x'`` is a block split ``P('y', None)`` over the Manual-typed mesh, and
a result the body returns split ``P('y', None)`` under ``out_specs=P('x')`` comes out split
``P(('x', 'y'), None)`` (the manual axes first, as the blocks are laid out).
"""
from __future__ import annotations

import contextlib

from hlox.core import sharding_types
from hlox.runtime import sharding as sharding_lib

AxisType = sharding_lib.AxisType


def already_manual(mesh) -> tuple:
  """The axes of ``mesh`` an enclosing shard_map is manual over."""
  return tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Manual)


def in_context(mesh):
  """``mesh`` as the body of an enclosing shard_map sees it: the same mesh with the axes
  manual there of type Manual (``mesh`` itself outside any body, or when its shape is not
  the context's)."""
  context = sharding_lib.get_abstract_mesh()
  manual = context.manual_axes
  if not manual or mesh.shape_tuple != context.shape_tuple:
    return mesh
  return _manual_view(mesh, manual)


def _manual_view(mesh, manual_axes):
  abstract = mesh.abstract_mesh.update_axis_types({a: AxisType.Manual for a in manual_axes})
  return sharding_lib.Mesh(mesh.devices, abstract.axis_names, abstract.axis_types)


@contextlib.contextmanager
def manual_mesh(mesh, manual_axes):
  """Inside: ``mesh`` with ``manual_axes`` of type Manual is the mesh in effect."""
  if not manual_axes:
    yield
    return
  inner = _manual_view(mesh, manual_axes)
  prev = sharding_lib._swap(mesh, inner.abstract_mesh)
  try:
    yield
  finally:
    sharding_lib._restore(prev)


def explicit_rest(mesh, manual_axes) -> frozenset:
  """The Explicit axes of ``mesh`` the body is not manual over: types keep their splits."""
  return sharding_types.explicit_axes(mesh) - set(manual_axes)


def body_in_split(split, mesh, manual_axes, ndim: int):
  """The split of an argument's block inside the body (a TypeSharding over the
  Manual-typed mesh, or None): ``split`` (the argument's) less the manual axes."""
  rest = explicit_rest(mesh, manual_axes)
  if split is None or not rest:
    return None
  entries = [tuple(a for a in (e or ()) if a in rest) or None
             for e in sharding_types.entries_of(split, ndim)]
  if not any(entries):
    return None
  return sharding_types.TypeSharding(_manual_view(mesh, manual_axes), entries)


def out_split(mesh, manual_axes, spec, body_split, ndim: int):
  """The split of a shard_map result over ``mesh``'s Explicit axes: per dimension the
  axes ``spec`` (the out_spec) splits it over, then those the body's value was split over
  (``body_split``, over the Manual-typed mesh)."""
  explicit = sharding_types.explicit_axes(mesh)
  body = sharding_types.entries_of(body_split, ndim) if body_split is not None else (
      (None,) * ndim)
  entries = []
  for d in range(ndim):
    axes = tuple(a for a in (spec.axes_of(d) if d < len(spec) else ()) if a in explicit)
    axes += tuple(a for a in (body[d] or ()) if a in explicit and a not in axes)
    entries.append(axes or None)
  split = sharding_types.TypeSharding(mesh, entries, spec.unreduced & explicit,
                                      spec.reduced & explicit)
  return split if split.is_split() else None


def vmapped_axes(leaves) -> tuple:
  """The Explicit mesh axes splitting the batch dimension of an argument under ``vmap``
  (a vmap over a split dimension maps over those axes, as JAX's explicit axis env)."""
  axes = []
  for x in leaves:
    while hasattr(x, "batch_axes"):
      axes += [a for a in x.batch_axes() if a not in axes]
      x = x.val
  return tuple(axes)


def keep_batch_split(outs, vals, in_dims) -> list:
  """``outs`` (batched along dimension 0) split along it as the batched arguments were over
  Explicit axes: a vmap over a split dimension keeps its results split alike."""
  split, axes = None, ()
  for v, d in zip(vals, in_dims):
    s = sharding_types.split_of(v) if d is not None else None
    if s is not None and s.entries[0]:
      split, axes = s, s.entries[0]
      break
  if split is None:
    return list(outs)
  result = []
  for o in outs:
    own = sharding_types.split_of(o)
    ndim = len(o.shape)
    rest = [tuple(a for a in (e or ()) if a not in axes) or None
            for e in sharding_types.entries_of(own, ndim)[1:]]
    result.append(sharding_types.constrain(
        o, sharding_types.TypeSharding(split.mesh, [axes, *rest])))
  return result


def check_manual_major(split, manual_axes):
  """As JAX: a dimension split over a manual axis after another (``P(('x', 'y'))`` with
  only ``'y'`` manual) has no per-device block the body could be given."""
  for e in split.entries:
    kept = [a in manual_axes for a in (e or ())]
    if True in kept and False in kept[:len(kept) - kept[::-1].index(True)]:
      spec = sharding_lib.named_of_type(split).spec
      raise ValueError(f"Invalid spec: {spec}")
