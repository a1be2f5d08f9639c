"""``smap`` (JAX's ``jax.smap``): a ``shard_map`` manual over one mesh axis, spelled like
``vmap``. ``in_axes``/``out_axes`` give, per argument and per result, the dimension split
over ``axis_name`` (None: the same whole value on every device along it), so that nested
``smap``s take one mesh axis each.

It is only a front end: the axes become PartitionSpecs (``P(None, ..., axis_name)``) and
the call is ``shard_map`` over the context mesh (``set_mesh``) with
``axis_names={axis_name}``. ``in_axes`` left out (``Infer``) reads the split from the
arguments' types, which only Explicit mesh axes have.
"""
from __future__ import annotations

from typing import Any, Callable

from hlox import _tree_transform as tree_util
from hlox.core.tracer import get_aval
from hlox.lax import shard_map as shard_map_lib
from hlox.runtime import sharding as sharding_lib

__all__ = ["smap", "Infer"]

P = sharding_lib.PartitionSpec


class InferFromArgs:
  """``in_axes`` left out: read from the arguments' types (printed as JAX names it)."""

  def __repr__(self):
    return "jax.sharding.Infer"

  def __reduce__(self):
    return (_infer, ())


Infer = InferFromArgs()


def _infer():
  return Infer


def _is_int(x) -> bool:
  return isinstance(x, int) and not isinstance(x, bool) or x is None


def _check(in_axes, out_axes, axis_name):
  """JAX's TypeErrors for malformed arguments (raised when ``smap`` is applied)."""
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(
        f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
    raise TypeError(
        "smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of entries "
        "corresponding to the positional arguments passed to the function, but got "
        f"{in_axes}.")
  if in_axes is not Infer and not all(map(_is_int, tree_util.tree_leaves(in_axes))):
    raise TypeError(
        "smap in_axes must be an int, None, jax.sharding.Infer, or (nested) container "
        f"with those types as leaves, but got {in_axes}.")
  if not all(map(_is_int, tree_util.tree_leaves(out_axes))):
    raise TypeError("smap out_axes must be an int, None, or (nested) container with "
                    f"those types as leaves, but got {out_axes}.")


def _axis_spec(axis_name, axis, ndim: int | None = None):
  """The PartitionSpec splitting dimension ``axis`` (negative: from the end, given the
  rank ``ndim``) over ``axis_name``; P() for None."""
  if axis is None:
    return P()
  if axis < 0 and ndim is not None:
    axis += ndim
  return P(*[None] * max(axis, 0), axis_name)


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name) -> Callable:
  """Map ``f`` over the blocks of its arguments along the mesh axis ``axis_name``.

  Args:
    f: the per-device function (usable as a decorator: ``@smap(out_axes=0, ...)``).
    in_axes: an int, None, or a tuple with one entry (int, None or container thereof)
      per positional argument: the dimension split over ``axis_name``; None gives every
      device the whole value. Left out: inferred from the arguments' types (only when
      ``axis_name`` is an Explicit mesh axis).
    out_axes: likewise for the results (an int, None, or a container thereof).
    axis_name: the mesh axis (of the context mesh) over which ``f`` is manual.

  Returns:
    The mapped function (a decorator when ``f`` is None).

  Examples:
    >>> from hlox.sharding import AxisType
    >>> with hlox.set_mesh(hlox.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))):
    ...   f = hlox.smap(lambda b: b * 2, in_axes=0, out_axes=0, axis_name="x")
    ...   f(jnp.arange(4.))
    Array([0., 2., 4., 6.], dtype=float32)
  """
  kwargs = dict(in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if f is None:
    return lambda g: _smap(g, **kwargs)
  return _smap(f, **kwargs)


def _smap(f: Callable, *, in_axes, out_axes, axis_name) -> Callable:
  _check(in_axes, out_axes, axis_name)
  if not callable(f):
    raise TypeError(f"smap requires a callable for its first argument, but got {f} of "
                    f"type {type(f)}.")
  out_specs = tree_util.tree_map(lambda a: _axis_spec(axis_name, a), out_axes,
                                 is_leaf=lambda x: x is None)

  def mapped(*args):
    mesh = sharding_lib.current_mesh()
    if mesh is None or mesh.empty:
      raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to "
                       "enter into a mesh context")
    if axis_name not in mesh.shape:
      raise ValueError(f"smap: axis_name={axis_name!r} is not an axis of the context mesh "
                       f"{mesh} (axes {mesh.axis_names})")
    if in_axes is Infer:
      kind = dict(zip(mesh.axis_names, mesh.axis_types))[axis_name]
      if getattr(kind, "name", None) != "Explicit":
        raise TypeError(f"in_axes was not specified when axis_name={ {axis_name} } was of "
                        f"type {kind}")
      in_specs = None  # shard_map reads each argument's split from its type
    else:
      in_specs = _in_specs(axis_name, in_axes, args)
    return shard_map_lib.shard_map(f, in_specs=in_specs, out_specs=out_specs,
                                   axis_names={axis_name})(*args)
  mapped.__name__ = getattr(f, "__name__", "smap")
  mapped.__wrapped__ = f
  return mapped


def _in_specs(axis_name, in_axes, args):
  """``in_axes`` as shard_map's in_specs: one spec per leaf of ``args`` (so negative axes
  count from each leaf's own rank)."""
  axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
  if len(axes) != len(args):
    raise ValueError(f"smap in_axes {in_axes} has {len(axes)} entries but the function "
                     f"was called with {len(args)} positional arguments")
  specs = []
  for axis, arg in zip(axes, args):
    try:
      flat = tree_util.broadcast_prefix(axis, arg, is_leaf=lambda x: x is None)
    except (ValueError, TypeError):
      raise ValueError(f"smap in_axes entry {axis} must be a tree prefix of its argument "
                       f"(of structure {tree_util.tree_structure(arg)})") from None
    leaves, tree = tree_util.tree_flatten(arg)
    specs.append(tree_util.tree_unflatten(
        tree, [_axis_spec(axis_name, a, get_aval(x).ndim) for a, x in zip(flat, leaves)]))
  return tuple(specs)
