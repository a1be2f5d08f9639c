"""``hlox.sharding`` (JAX's ``jax.sharding``): meshes of devices, partition specs and the
shardings that lay arrays out over them. See ``hlox/runtime/sharding.py``."""
import functools

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core.tracer import Tracer
from hlox.lax.sharding_constraint import constrain as _constrain, trim_spec, with_sharding_constraint  # noqa: F401,E501
from hlox.lax.sharding_constraint import has_partial_axes
from hlox.lax.device_put import put_traced
from hlox.api import put_with_format
from hlox.runtime import placement
from hlox.runtime.layout import Format
from hlox.runtime.array import Array
from hlox.core.tracer import eval_trace, trace_ctx
from hlox.runtime.sharding import (AbstractDevice, AbstractMesh, AxisType, GSPMDSharding, Mesh,  # noqa: F401
                                   NamedSharding, PartitionSpec, Sharding,
                                   SingleDeviceSharding, current_mesh, get_abstract_mesh,
                                   make_mesh, use_abstract_mesh)
from hlox.runtime import sharding as sharding_lib


class set_mesh(sharding_lib.set_mesh):
  """Make ``mesh`` (a ``Mesh``, or None for none) the current mesh: for the rest of the
  program, or, used as a context manager, inside the ``with`` block. Only outside traced
  functions (inside, ``use_abstract_mesh`` sets the mesh they are traced for)."""

  __slots__ = ()

  def __init__(self, mesh):
    if trace_ctx.trace is not eval_trace:
      raise ValueError("`set_mesh` can only be used outside of `hlox.jit`.")
    super().__init__(mesh)


use_mesh = set_mesh


def get_mesh():
  """The concrete mesh set by ``set_mesh`` (as JAX, the empty ``Mesh()`` when none is);
  only outside traced functions (inside, see ``get_abstract_mesh``)."""
  if trace_ctx.trace is not eval_trace:
    raise ValueError("`get_mesh` can only be used outside of `hlox.jit`. Maybe you want "
                     "`hlox.sharding.get_abstract_mesh()`?")
  mesh = sharding_lib.concrete_mesh()
  return mesh if mesh is not None else _empty_mesh()


@functools.lru_cache(maxsize=1)
def _empty_mesh():
  return Mesh(np.empty((), dtype=object), ())


__all__ = ["AbstractDevice", "AxisType", "GSPMDSharding", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "get_mesh", "make_mesh", "reshard", "set_mesh", "use_mesh"]


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Transfer every leaf of a pytree to a device or sharding.

  NumPy arrays and Python scalars become Arrays (Python scalars weakly typed); Arrays already
  on the target are returned as they are unless ``may_alias=False``. ``device`` is one device
  or sharding for all leaves, or a tree prefix of ``x`` giving one per subtree (a prefix that
  does not fit raises ValueError). Inside a traced function a sharding becomes a sharding
  constraint, and a device (or None) leaves the value as it is, as in JAX.

  Args:
    x: a pytree of arrays and scalars.
    device: None (the default device; Arrays stay where they are), a ``Device``, a
      ``Sharding`` (or ``Format``), or a tree prefix of ``x`` of those.
    src: accepted for JAX's signature; ignored.
    donate: if True, an input Array copied elsewhere is deleted (keyword-only).
    may_alias: if False, an Array is copied even where it already is; ``True`` together with
      ``donate`` raises ValueError (keyword-only).

  Returns:
    A pytree of the structure of ``x`` with Array leaves on the target.

  Examples:
    >>> x = hlox.device_put(np.arange(3.))
    >>> x
    Array([0., 1., 2.], dtype=float32)
    >>> hlox.device_put(x, hlox.devices()[0]).devices() == {hlox.devices()[0]}
    True
  """
  leaves = tree_util.tree_leaves(x)
  if isinstance(device, Format) and not any(isinstance(leaf, Tracer) for leaf in leaves):
    return tree_util.tree_map(lambda leaf: put_with_format(leaf, device), x)
  if not any(isinstance(leaf, Tracer) for leaf in leaves):
    if _moves_partial_sums(leaves, device):
      return _constrain(x, device)  # a program over the mesh (``sharding_constraint``)
    return placement.device_put(x, device, src=src, donate=donate, may_alias=may_alias)
  if device is None or hasattr(device, "platform") or isinstance(device,
                                                                 SingleDeviceSharding):
    leaves, tree = tree_util.tree_flatten(x)
    return tree.unflatten(put_traced(leaves, device, src, donate, may_alias))
  return _constrain(x, device)


def reshard(x, out_shardings):
  """Lay an array (or pytree) out as the given sharding.

  Outside ``jit`` this moves the data; inside it becomes a sharding constraint (the array's
  type then carries the new sharding). A ``PartitionSpec`` needs a current mesh
  (``set_mesh``), else ValueError; a spec longer than the array's rank raises ValueError.

  Args:
    x: array or pytree of arrays.
    out_shardings: a ``NamedSharding`` or ``PartitionSpec`` (or a pytree prefix of them).

  Returns:
    ``x`` laid out as ``out_shardings``.

  Examples:
    >>> from hlox.sharding import PartitionSpec as P
    >>> mesh = hlox.make_mesh((1,), ("x",))
    >>> y = hlox.reshard(jnp.arange(4.), hlox.NamedSharding(mesh, P("x")))
    >>> y.sharding.spec
    P('x',)
  """
  if isinstance(out_shardings, NamedSharding) and out_shardings.mesh.empty:
    raise ValueError("Reshard should only be used with out_shardings which are non-None and "
                     f"have a non-empty mesh. Got sharding {out_shardings}.")
  if isinstance(out_shardings, (PartitionSpec, NamedSharding)) and hasattr(x, "shape"):
    out_shardings = trim_spec(out_shardings, len(x.shape))
    spec = out_shardings.spec if isinstance(out_shardings, NamedSharding) else out_shardings
    if len(spec) > len(x.shape):
      raise ValueError(
          f"Length of sharding.spec ({len(spec)}) must be equal to aval's ndim "
          f"({len(x.shape)}). Got sharding.spec {spec}, aval.ndim {len(x.shape)} and "
          f"sharding {out_shardings}")
  if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(x)):
    return _constrain(x, out_shardings)
  if isinstance(out_shardings, PartitionSpec):
    mesh = current_mesh()
    if mesh is None:
      raise ValueError(f"reshard: the PartitionSpec {out_shardings!r} needs a mesh: use a "
                       "NamedSharding or `hlox.sharding.set_mesh(mesh)`")
    out_shardings = NamedSharding(mesh, out_shardings)
  if _moves_partial_sums(tree_util.tree_leaves(x), out_shardings):
    return _constrain(x, out_shardings)
  return placement.device_put(x, out_shardings)


def _moves_partial_sums(leaves, target) -> bool:
  """Whether a transfer goes to or from unreduced axes (partial sums)."""
  targets = tree_util.tree_leaves(target, is_leaf=_is_sharding_leaf)
  if any(isinstance(t, PartitionSpec) and t.unreduced for t in targets):
    return True
  return (any(has_partial_axes(t) for t in targets)
          or any(isinstance(leaf, Array) and leaf._multi is not None
                 and has_partial_axes(leaf.sharding) for leaf in leaves))


# --- switching axis types: auto_axes / explicit_axes ----------------------------------------

def _is_sharding_leaf(s) -> bool:
  return isinstance(s, (Sharding, PartitionSpec)) or s is None


def _switched_mesh(axes, axis_type, name, shardings=None):
  """``(concrete mesh, abstract mesh now, abstract mesh with ``axes`` of ``axis_type``,
  axes)`` for ``auto_axes``/``explicit_axes``: the context mesh's, or that of the
  NamedShardings given when no mesh is set; None when there is neither."""
  current = get_abstract_mesh()
  concrete = sharding_lib.concrete_mesh()
  given = None
  for s in tree_util.tree_leaves(shardings, is_leaf=_is_sharding_leaf):
    if isinstance(s, NamedSharding):
      if given is not None and given != s.mesh.abstract_mesh:
        raise ValueError(f"Shardings passed to {name} should have the same mesh. Got one "
                         f"mesh {given} and another {s.mesh}")
      given = s.mesh.abstract_mesh
      if current.empty:
        concrete = s.mesh
  if given is None and current.empty:
    return None
  if given is not None and not current.empty and given != current:
    raise ValueError(f"Context mesh {current} must match the mesh passed to shardings "
                     f"{given}. Recommended approach is to use `hlox.set_mesh` context "
                     "manager.")
  mesh = current if not current.empty else given
  axes = mesh.axis_names if axes is None else axes if isinstance(axes, tuple) else (axes,)
  for a in axes:
    if mesh._name_to_type[a] == AxisType.Manual:
      raise NotImplementedError(
          "Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed. "
          "Please file a bug at https://github.com/jax-ml/jax/issues with your use case")
  return concrete, mesh, mesh.update_axis_types({a: axis_type for a in axes}), axes


class _in_mesh:
  """Inside: ``concrete`` as the concrete mesh and ``abstract`` as the abstract one."""

  def __init__(self, concrete, abstract):
    self.concrete, self.abstract = concrete, abstract

  def __enter__(self):
    self.prev = sharding_lib._swap(self.concrete, self.abstract)

  def __exit__(self, *exc):
    sharding_lib._restore(self.prev)
    return False


def _retyped(x):
  """``x`` (a pytree) seen on the mesh in effect, whose axis types differ from those its
  leaves were split over: each leaf keeps its layout, and its type keeps only the axes that
  are Explicit now (JAX's reshard into ``auto_axes``/out of ``explicit_axes``)."""
  mesh = current_mesh()
  return tree_util.tree_map(lambda leaf: _retype_leaf(leaf, mesh), x)


def _retype_leaf(leaf, mesh):
  if mesh is None:
    return leaf
  if isinstance(leaf, Tracer):
    split = getattr(leaf, "type_sharding", None)
    if split is None or split.mesh == mesh:
      return leaf
    explicit = sharding_types.explicit_axes(mesh)
    spec = [tuple(a for a in e if a in explicit) if e else () for e in split.entries]
    spec = [(e[0] if len(e) == 1 else e) if e else PartitionSpec.UNCONSTRAINED
            for e in spec]
    return _constrain(leaf, NamedSharding(mesh, PartitionSpec(*spec)))
  s = getattr(leaf, "sharding", None) if isinstance(leaf, Array) else None
  if (isinstance(s, NamedSharding) and s.mesh != mesh
      and s.mesh.shape_tuple == mesh.shape_tuple):
    return placement.device_put(leaf, NamedSharding(mesh, s.spec))
  return leaf


def _given_or_keyword(given, kwargs, name: str):
  """The sharding given to the decorator, else the call's keyword ``name`` (taken out of
  ``kwargs``); JAX's TypeError when neither is."""
  if given is not None:
    return given
  if name not in kwargs:
    raise TypeError(f"Missing required keyword argument: '{name}'")
  return kwargs.pop(name)


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """``f`` run with the mesh axes ``axes`` (default: all) of type Auto: inside, values are
  not split over them in their types and XLA lays them out; the results are then laid out
  as ``out_sharding`` (given here or as a keyword of each call). Usable as a decorator,
  with or without arguments."""
  if f is None:
    return lambda g: _auto_axes(g, axes, out_sharding)
  return _auto_axes(f, axes, out_sharding)


def _auto_axes(fun, axes, out_sharding):
  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    out_s = _given_or_keyword(out_sharding, kwargs, "out_sharding")
    switched = _switched_mesh(axes, AxisType.Auto, "auto_axes", out_s)
    if switched is None:
      return fun(*args, **kwargs)
    concrete, before, after, names = switched
    if set(before.auto_axes) == set(names):  # nothing to switch
      return fun(*args, **kwargs)
    with _in_mesh(concrete, after):
      out = fun(*_retyped(args), **kwargs)
    return reshard(out, out_s)
  return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """``f`` run with the mesh axes ``axes`` (default: all) of type Explicit: its arguments
  are first laid out as ``in_sharding`` (given here or as a keyword of each call), which
  their types then show inside; its results come out with types over the axes outside.
  Usable as a decorator, with or without arguments."""
  if f is None:
    return lambda g: _explicit_axes(g, axes, in_sharding)
  return _explicit_axes(f, axes, in_sharding)


def _explicit_axes(fun, axes, in_sharding):
  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    in_s = _given_or_keyword(in_sharding, kwargs, "in_sharding")
    switched = _switched_mesh(axes, AxisType.Explicit, "explicit_axes")
    if switched is None:
      raise ValueError("Context mesh cannot be empty. Please use `hlox.set_mesh` API to "
                       "enter into a mesh context when using `explicit_axes` API.")
    concrete, _, after, _ = switched
    with _in_mesh(concrete, after):
      out = fun(*reshard(args, in_s), **kwargs)
    return _retyped(out)
  return wrapped


__all__ += ["AbstractMesh", "get_abstract_mesh", "auto_axes", "explicit_axes",
            "use_abstract_mesh"]


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
  """The sharding that puts a whole array on ``device`` (in ``memory_kind``, default the
  device's own memory)."""
  return SingleDeviceSharding(device, memory_kind=memory_kind)


# How a value inside a ``shard_map`` body varies along the manual axes (the type's
# ``varying``/``unreduced``/``reduced`` axis sets), as ``jax.sharding`` exports it.
from hlox.core.avals import ManualAxisType  # noqa: E402

__all__ += ["ManualAxisType", "make_single_device_sharding"]
