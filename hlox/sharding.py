"""``hlox.sharding`` (JAX's ``jax.sharding``): meshes of devices, partition specs and the
shardings that lay arrays out over them. See ``hlox/runtime/sharding.py``."""
from hlox import tree_util
from hlox.core.tracer import Tracer
from hlox.lax.sharding_constraint import with_sharding_constraint
from hlox.runtime import placement
from hlox.runtime.sharding import (AxisType, GSPMDSharding, Mesh, NamedSharding,  # noqa: F401
                                   PartitionSpec, Sharding, SingleDeviceSharding,
                                   current_mesh as get_mesh, make_mesh, set_mesh)

use_mesh = set_mesh

__all__ = ["AxisType", "GSPMDSharding", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "get_mesh", "make_mesh", "reshard", "set_mesh", "use_mesh"]


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """``hlox.device_put``: put every leaf of ``x`` on ``device`` (a device, a sharding, or a
  tree prefix of them; see ``hlox.runtime.placement.device_put``). Inside a traced function
  a sharding becomes a sharding constraint and a device (or None) leaves the value as it is,
  as in JAX."""
  leaves = tree_util.tree_leaves(x)
  if not any(isinstance(leaf, Tracer) for leaf in leaves):
    return placement.device_put(x, device, src=src, donate=donate, may_alias=may_alias)
  if device is None or hasattr(device, "platform") or isinstance(device,
                                                                 SingleDeviceSharding):
    return x
  return with_sharding_constraint(x, device)


def reshard(x, out_shardings):
  """Lay ``x`` out as ``out_shardings``: a transfer outside ``jit``, a sharding constraint
  inside it."""
  if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(x)):
    return with_sharding_constraint(x, out_shardings)
  if isinstance(out_shardings, PartitionSpec):
    mesh = get_mesh()
    if mesh is None:
      raise ValueError(f"reshard: the PartitionSpec {out_shardings!r} needs a mesh: use a "
                       "NamedSharding or `hlox.sharding.set_mesh(mesh)`")
    out_shardings = NamedSharding(mesh, out_shardings)
  return placement.device_put(x, out_shardings)


class AbstractMesh:
  """A mesh's shape and axis names without its devices (JAX's ``AbstractMesh``)."""

  def __init__(self, axis_sizes, axis_names, axis_types=None):
    self.axis_sizes = tuple(int(s) for s in axis_sizes)
    self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes for "
                       f"{len(self.axis_names)} axis names")
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(self.axis_names)
    self.axis_types = tuple(axis_types)

  @property
  def shape(self) -> dict:
    return dict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self) -> tuple:
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def size(self) -> int:
    n = 1
    for s in self.axis_sizes:
      n *= s
    return n

  @property
  def empty(self) -> bool:
    return not self.axis_names

  def __eq__(self, other):
    return isinstance(other, AbstractMesh) and (self.shape_tuple, self.axis_types) == (
        other.shape_tuple, other.axis_types)

  def __hash__(self):
    return hash((self.shape_tuple, self.axis_types))

  def __repr__(self):
    shape = ", ".join(f"'{n}': {v}" for n, v in self.shape_tuple) or "()"
    # JAX's abstract mesh of a concrete one names its devices' kind; hlox's does not keep
    # them, so they are read off the current mesh when it is the one described.
    mesh = get_mesh()
    device = ""
    if mesh is not None and self.shape_tuple and mesh.shape_tuple == self.shape_tuple:
      d = mesh.devices.flat[0]
      device = (f", device_kind={d.device_kind}, num_cores={getattr(d, 'num_cores', None)}, "
                f"platform={d.platform}")
    return f"AbstractMesh({shape}, axis_types={self.axis_types}{device})"


def get_abstract_mesh() -> AbstractMesh:
  """The current mesh's ``AbstractMesh`` (an empty one when none is set)."""
  mesh = get_mesh()
  if mesh is None:
    return AbstractMesh((), ())
  return AbstractMesh(mesh.axis_sizes, mesh.axis_names, mesh.axis_types)


def _axes_decorator(name):
  def decorator(fun=None, *, axes=None, out_sharding=None):
    """Run ``fun`` with the mesh axes ``axes`` of another type (hlox lets XLA propagate
    every axis's layout), its results laid out as ``out_sharding`` when given (here or as
    a keyword of the call), its arguments first as a call's ``in_sharding``."""
    if fun is None:
      return lambda f: decorator(f, axes=axes, out_sharding=out_sharding)

    def wrapped(*args, out_sharding=out_sharding, in_sharding=None, **kwargs):
      if in_sharding is not None:  # the arguments laid out first (explicit_axes)
        args = reshard(args, in_sharding if isinstance(in_sharding, tuple) and not
                       isinstance(in_sharding, PartitionSpec) else (in_sharding,) * len(args))
      out = fun(*args, **kwargs)
      return out if out_sharding is None else reshard(out, out_sharding)
    wrapped.__name__ = getattr(fun, "__name__", name)
    wrapped.__doc__ = getattr(fun, "__doc__", None)
    return wrapped
  decorator.__name__ = name
  return decorator


class use_abstract_mesh:
  """Trace with ``mesh`` (an ``AbstractMesh``) as the abstract mesh. hlox's layouts are
  decided by XLA at compile time, so this only checks its argument."""

  def __init__(self, mesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError("Expected mesh of type `hlox.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self.mesh = mesh

  def __enter__(self):
    return self.mesh

  def __exit__(self, *exc):
    return False


auto_axes = _axes_decorator("auto_axes")
explicit_axes = _axes_decorator("explicit_axes")

__all__ += ["AbstractMesh", "get_abstract_mesh", "auto_axes", "explicit_axes",
            "use_abstract_mesh"]
