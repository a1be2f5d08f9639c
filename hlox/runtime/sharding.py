"""Shardings: how an array's elements are laid out over devices (``hlox.sharding``).

A ``Mesh`` names the axes of an n-dimensional grid of devices; a ``PartitionSpec`` says, per
array dimension, which mesh axes split it; a ``NamedSharding`` pairs the two. XLA describes
the same layout as an ``HloSharding`` (a tile assignment: which device holds which block);
``NamedSharding.hlo(ndim)`` converts one way and ``from_hlo`` the other, so the shardings XLA
chooses for a program's results are reported the way the user wrote the inputs.

The public objects are plain Python. jaxlib's C++ side (transfers, result handlers) needs its
own sharding type: ``internal(sharding, ndim)`` makes one per layout (a ``GSPMDSharding``
subclass that carries ``_public``, so an Array reports the public object). Every device
index below is a *position* in the sharding's device list (the mesh's devices in row-major
order), as XLA's tile assignments and device assignments use them.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import math
import threading

import numpy as np

from hlox.runtime import client
from hlox.core import avals as avals_lib
from hlox.core import sharding_types


class AxisType(enum.Enum):
  """How a mesh axis is used: ``Auto`` (XLA's partitioner decides), ``Explicit`` (the
  sharding is part of the array's type in JAX; hlox lets XLA propagate it, as ``Auto``) or
  ``Manual`` (inside ``shard_map``)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


class _Unconstrained:
  """``PartitionSpec.UNCONSTRAINED``: let XLA choose this dimension's layout."""
  _instance = None

  def __new__(cls):
    if cls._instance is None:
      cls._instance = super().__new__(cls)
    return cls._instance

  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return (_Unconstrained, ())


class PartitionSpec(tuple):
  """Per array dimension: ``None`` (not split), a mesh axis name, or a tuple of names (split
  over their product, major to minor). Dimensions past the spec's end are not split."""

  UNCONSTRAINED = _Unconstrained()

  def __new__(cls, *entries, unreduced=frozenset(), reduced=frozenset()):
    entries = tuple(_entry(e) for e in entries)
    unreduced = _axis_set("unreduced", unreduced)
    reduced = _axis_set("reduced", reduced)
    # Specs are interned (as JAX's): equal entries give the same object, so comparing
    # layouts in caches is mostly an identity check.
    key = (entries, unreduced, reduced)
    self = _interned_specs.get(key)
    if self is not None:
      return self
    _check_partial_axes(entries, unreduced, reduced)
    self = super().__new__(cls, entries)
    # ``unreduced``: mesh axes over which the value is a sum of the devices' pieces (each
    # holds a partial sum); ``reduced``: axes over which it is already summed.
    self.unreduced = unreduced
    self.reduced = reduced
    if len(_interned_specs) >= _INTERNED_SPECS_MAX:
      _interned_specs.clear()
    _interned_specs[key] = self
    return self

  def __init_subclass__(cls, **kwargs):
    raise TypeError("Subclassing `jax.P` is prohibited: hlox's PartitionSpec (hlox.P) is "
                    "final, as JAX's is.")

  @property
  def partitions(self) -> tuple:
    """The per-dimension entries (read these, not ``spec[i]``, when ``unreduced`` or
    ``reduced`` is set)."""
    return tuple(tuple.__iter__(self))

  # As JAX, indexing or unpacking a spec with unreduced/reduced axes is an error: it would
  # silently drop them.
  def __getitem__(self, i):
    if self.unreduced or self.reduced:
      raise ValueError("Using pspec[...] is dangerous when PartitionSpec has non-empty "
                       "unreduced/reduced set. Please use spec.partitions[...]")
    return tuple.__getitem__(self, i)

  def __iter__(self):
    if self.unreduced or self.reduced:
      raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty "
                       "unreduced/reduced set. Please use *spec.partitions")
    return tuple.__iter__(self)

  def __repr__(self):  # as JAX: P('x',), P(None, 'y'), P(), P('x', unreduced={'y'})
    inner = repr(self.partitions)[1:-1]
    extra = []
    if self.unreduced:
      extra.append(f"unreduced={set(self.unreduced)!r}")
    if self.reduced:
      extra.append(f"reduced={set(self.reduced)!r}")
    if not extra:
      return f"P({inner})"
    sep = "" if not inner else " " if inner.endswith(",") else ", "
    return f"P({inner}{sep}{', '.join(extra)})"

  __str__ = __repr__

  def _normalized(self) -> tuple:
    entries = [tuple(e) if isinstance(e, tuple) else e for e in self.partitions]
    entries = [None if e == () else (e[0] if type(e) is tuple and len(e) == 1 else e)
               for e in entries]
    while entries and entries[-1] is None:
      entries.pop()
    return tuple(entries), self.unreduced, self.reduced

  def __eq__(self, other):
    if isinstance(other, PartitionSpec):
      return self._normalized() == other._normalized()
    if isinstance(other, tuple):
      return self._normalized() == PartitionSpec(*other)._normalized()
    return NotImplemented

  def __ne__(self, other):
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq

  def __hash__(self):
    return hash(self._normalized())

  def __reduce__(self):
    return (_make_spec, (self.partitions, self.unreduced, self.reduced))

  def update(self, partitions=None, unreduced=None, reduced=None):
    """This spec with its entries, ``unreduced`` or ``reduced`` axes replaced."""
    return PartitionSpec(*(self.partitions if partitions is None else partitions),
                         unreduced=self.unreduced if unreduced is None else unreduced,
                         reduced=self.reduced if reduced is None else reduced)

  def axes_of(self, dim: int) -> tuple:
    """The mesh axes splitting dimension ``dim`` (empty: not split)."""
    if dim >= len(self):
      return ()
    e = tuple.__getitem__(self, dim)
    if e is None or e is _Unconstrained():
      return ()
    return tuple(e) if isinstance(e, tuple) else (e,)


_interned_specs: dict = {}
_INTERNED_SPECS_MAX = 4096


def _entry(e):
  """One entry of a PartitionSpec as JAX stores it: a list is a tuple, a one-name tuple is
  the name and an empty one None; anything but axis names, None and UNCONSTRAINED raises."""
  if isinstance(e, list):
    e = tuple(e)
  if isinstance(e, tuple):
    for n in e:
      if isinstance(n, (tuple, list)):
        raise ValueError("A tuple inside PartitionSpec cannot contain a nested tuple. Got "
                         f"partition: {e} and the nested tuple: {n}")
      if not (n is None or n is _Unconstrained() or isinstance(n, str)):
        raise TypeError("PartitionSpec entries must be mesh axis names (str), tuples of "
                        f"them, None or PartitionSpec.UNCONSTRAINED; got {e!r}")
    return None if not e else e[0] if len(e) == 1 else e
  if e is None or e is _Unconstrained() or isinstance(e, str):
    return e
  raise TypeError("PartitionSpec entries must be mesh axis names (str), tuples of them, "
                  f"None or PartitionSpec.UNCONSTRAINED; got {e!r}")


def _axis_set(what, axes) -> frozenset:
  if isinstance(axes, frozenset):
    return axes
  if not isinstance(axes, set):
    raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` or `set`. "
                    f"Got type {axes}")
  return frozenset(axes)


def _check_partial_axes(entries, unreduced, reduced):
  """JAX's checks of ``unreduced`` / ``reduced``: mesh axis names, disjoint from each other
  and from the axes that split dimensions."""
  for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
    if None in axes:
      raise ValueError(f"{what} cannot contain None. All elements in {what} should refer to "
                       "the mesh axes.")
  if unreduced & reduced:
    raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                     f"Got unreduced: {unreduced} and reduced: {reduced}")
  for e in entries:
    for name in (e if isinstance(e, tuple) else (e,)):
      for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if name in axes:
          raise ValueError(f"partitions cannot overlap with {what} axes passed to "
                           f"PartitionSpec. Got partitions: {entries} and {what} axes: {axes}")


def _make_spec(partitions, unreduced, reduced):  # unpickling
  return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


# --- meshes ------------------------------------------------------------------------------

_mesh_state = threading.local()
_meshes: dict = {}  # every Mesh made, by devices, shape, axis names and types
_MESHES_MAX = 1024


def _checked_axis_types(axis_types: tuple, what: str) -> tuple:
  if not all(isinstance(t, AxisType) for t in axis_types):
    raise TypeError(f"axis_types passed to {what} must be of type `hlox.sharding.AxisType`. "
                    f"Got {axis_types} of type {tuple(type(t) for t in axis_types)}")
  return axis_types


class Mesh:
  """An n-dimensional array of devices with a name per axis (``Mesh(devices, ('x', 'y'))``).

  Usable as a context manager (``with mesh:``): code inside sees it as the current mesh
  (``PartitionSpec`` arguments to ``with_sharding_constraint`` are resolved against it)."""

  def __new__(cls, devices, axis_names, axis_types=None):
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    devices = np.asarray(devices, dtype=object)
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(axis_names)
    elif isinstance(axis_types, (AxisType, str)):  # one type: for one axis (JAX's check)
      axis_types = (axis_types,)
    axis_types = _checked_axis_types(tuple(axis_types), "Mesh")
    # An empty mesh (``Mesh(np.empty((), dtype=object), ())``) has no devices.
    flat = tuple(devices.flat) if devices.ndim else ()
    # As JAX, building the same mesh twice gives the same object.
    key = (flat, devices.shape, axis_names, axis_types)
    try:
      self = _meshes.get(key)
    except TypeError:  # unhashable "devices": reported below
      self, key = None, None
    if self is not None:
      return self
    if any(n is None for n in axis_names):
      raise ValueError(f"Mesh axis names cannot be None. Got: {axis_names}")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    if devices.ndim != len(axis_names):
      raise ValueError(
          "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
          f"its second argument (`axis_names`), but got devices.ndim == {devices.ndim} and "
          f"len(axis_names) == {len(axis_names)}.")
    if len(axis_types) != len(axis_names):
      raise ValueError("Number of axis names should match the number of axis_types. Got "
                       f"axis_names={axis_names} and axis_types={axis_types}")
    if len(set(flat)) != len(flat):
      raise ValueError(f"Mesh devices must be distinct, got {list(flat)}")
    if key is None:
      raise TypeError(f"Mesh: devices must be devices, got {list(devices.flat)}")
    self = super().__new__(cls)
    self.devices = devices
    self.axis_names = axis_names
    self.axis_types = axis_types
    self._flat_devices_tuple = flat
    self._key = (tuple(d.id for d in flat), devices.shape, axis_names, axis_types)
    self._hash = hash(self._key)  # hashed per call in jit's cache keys: once is enough
    if len(_meshes) >= _MESHES_MAX:
      _meshes.clear()
    _meshes[key] = self
    return self

  def update(self, devices=None, axis_names=None, axis_types=None) -> "Mesh":
    """This mesh with its devices, axis names or axis types replaced."""
    return Mesh(self.devices if devices is None else devices,
                self.axis_names if axis_names is None else axis_names,
                self.axis_types if axis_types is None else axis_types)

  def __call__(self, fun):
    """``@mesh``: run ``fun`` with this mesh current (as ``with mesh:``)."""
    @functools.wraps(fun)
    def inside(*args, **kwargs):
      with self:
        return fun(*args, **kwargs)
    return inside

  # --- description ---
  @property
  def shape(self) -> dict:
    return dict(zip(self.axis_names, self.devices.shape))

  @property
  def shape_tuple(self) -> tuple:
    return tuple(zip(self.axis_names, self.devices.shape))

  @property
  def axis_sizes(self) -> tuple:
    return self.devices.shape

  @property
  def size(self) -> int:
    return len(self._flat_devices_tuple)

  @property
  def empty(self) -> bool:
    return not self._flat_devices_tuple

  @property
  def device_ids(self) -> np.ndarray:
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self) -> list:
    me = client.process_index()
    return [d for d in self._flat_devices_tuple if getattr(d, "process_index", 0) == me]

  @property
  def is_multi_process(self) -> bool:
    return len(self.local_devices) != self.size

  def axis_size(self, name) -> int:
    return self.shape[name]

  @property
  def _name_to_type(self) -> dict:
    return dict(zip(self.axis_names, self.axis_types))

  @property
  def auto_axes(self) -> tuple:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Auto)

  @property
  def explicit_axes(self) -> tuple:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                 if t == AxisType.Explicit)

  @property
  def manual_axes(self) -> tuple:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                 if t == AxisType.Manual)

  def __eq__(self, other):
    return isinstance(other, Mesh) and self._key == other._key

  def __hash__(self):
    return self._hash

  def __repr__(self):
    if not self.axis_names:  # as JAX prints the empty mesh
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.devices.shape}, axis_names={self.axis_names!r}, "
            f"axis_types={self.axis_types})")

  def __str__(self):
    if not self.axis_names:
      return "Mesh()"
    shape = ", ".join(f"'{k}': {v}" for k, v in self.shape.items())
    return f"Mesh({shape}, axis_types={self.axis_types})"

  def __reduce__(self):
    return (Mesh, (self.devices, self.axis_names, self.axis_types))

  @property
  def abstract_mesh(self) -> "AbstractMesh":
    """This mesh without its devices (their kind kept for printing)."""
    d = self._flat_devices_tuple[0] if self._flat_devices_tuple else None
    device = None if d is None else (d.device_kind, getattr(d, "num_cores", None),
                                     d.platform)
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                        _device=device)

  # --- the current mesh ---
  def __enter__(self):
    _saved().append(_swap(self, None))
    return self

  def __exit__(self, *exc):
    _restore(_saved().pop())
    return False


class AbstractMesh:
  """A mesh's axis names, sizes and types without its devices (JAX's ``AbstractMesh``):
  what tracing needs to know of a mesh."""

  def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None,
               _device=None):
    self.axis_sizes = tuple(int(s) for s in axis_sizes)
    self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes for "
                       f"{len(self.axis_names)} axis names")
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(self.axis_names)
    elif isinstance(axis_types, (AxisType, str)):  # one type: for one axis (JAX's check)
      axis_types = (axis_types,)
    self.axis_types = _checked_axis_types(tuple(axis_types), "AbstractMesh")
    if len(self.axis_types) != len(self.axis_names):
      raise ValueError("Number of axis names should match the number of axis_types. Got "
                       f"axis_names={self.axis_names} and axis_types={self.axis_types}")
    if abstract_device is not None:
      _device = (abstract_device.device_kind, abstract_device.num_cores,
                 abstract_device.platform)
    self._device = _device  # (kind, cores, platform) of a concrete mesh's devices, for repr

  @property
  def shape(self) -> dict:
    return dict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self) -> tuple:
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def size(self) -> int:
    return math.prod(self.axis_sizes) if self.axis_names else 0

  @property
  def empty(self) -> bool:
    return not self.axis_names

  @property
  def _name_to_type(self) -> dict:
    return dict(zip(self.axis_names, self.axis_types))

  def _axes_of_type(self, kind) -> tuple:
    return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == kind)

  @property
  def auto_axes(self) -> tuple:
    return self._axes_of_type(AxisType.Auto)

  @property
  def explicit_axes(self) -> tuple:
    return self._axes_of_type(AxisType.Explicit)

  @property
  def manual_axes(self) -> tuple:
    return self._axes_of_type(AxisType.Manual)

  @property
  def abstract_mesh(self) -> "AbstractMesh":
    return self

  @property
  def abstract_device(self) -> "AbstractDevice | None":
    """The kind, cores and platform of the concrete mesh's devices (None if not known)."""
    if self._device is None:
      return None
    kind, cores, platform = self._device
    return AbstractDevice(device_kind=kind, num_cores=cores, platform=platform)

  def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
    """This mesh with its axis sizes, names or types replaced."""
    if "abstract_device" not in kwargs:
      kwargs["_device"] = self._device
    return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                        self.axis_names if axis_names is None else axis_names,
                        self.axis_types if axis_types is None else axis_types, **kwargs)

  def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
    """This mesh with the axes named in ``name_to_type`` of the given types."""
    for name in name_to_type:
      if name not in self.axis_names:
        raise KeyError(name)
    types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
    return AbstractMesh(self.axis_sizes, self.axis_names, types, _device=self._device)

  def __eq__(self, other):
    return isinstance(other, AbstractMesh) and (self.shape_tuple, self.axis_types) == (
        other.shape_tuple, other.axis_types)

  def __hash__(self):
    return hash((self.shape_tuple, self.axis_types))

  def __repr__(self):
    shape = ", ".join(f"'{n}': {v}" for n, v in self.shape_tuple) or "()"
    device = ""
    if self._device is not None:
      kind, cores, platform = self._device
      device = f", device_kind={kind}, num_cores={cores}, platform={platform}"
    return f"AbstractMesh({shape}, axis_types={self.axis_types}{device})"


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


@dataclasses.dataclass(frozen=True)
class AbstractDevice:
  """What an ``AbstractMesh`` knows of its devices: their kind, cores and platform."""
  device_kind: str
  num_cores: int | None
  platform: str


# The mesh context of this thread: the concrete mesh of ``set_mesh`` (None when none) and
# the abstract mesh of ``use_abstract_mesh`` / ``auto_axes`` (None: the concrete mesh's).
def _state():
  s = _mesh_state
  if not hasattr(s, "concrete"):
    s.concrete, s.abstract, s.saved = None, None, []
  return s


def _saved() -> list:
  return _state().saved


def _swap(concrete, abstract) -> tuple:
  s = _state()
  before = (s.concrete, s.abstract)
  s.concrete, s.abstract = concrete, abstract
  return before


def _restore(before) -> None:
  s = _state()
  s.concrete, s.abstract = before


def concrete_mesh():
  """The mesh of ``set_mesh`` / ``with mesh:`` on this thread (None if none)."""
  return _state().concrete


def context_abstract_mesh():
  """The abstract mesh set by ``use_abstract_mesh`` (None when none is: the concrete
  mesh's applies)."""
  return _state().abstract


_derived_meshes: dict = {}


def current_mesh():
  """The mesh in effect on this thread (None if none): the concrete mesh of ``set_mesh``,
  with the shape and axis types of the abstract mesh in effect when one is set (inside
  ``auto_axes``, ``explicit_axes``, ``use_abstract_mesh``). PartitionSpecs and types are
  resolved against it."""
  s = _state()
  if s.abstract is None:
    return s.concrete
  if s.abstract.empty:
    return None
  key = (s.concrete, s.abstract)
  mesh = _derived_meshes.get(key)
  if mesh is None:
    mesh = _derived_meshes[key] = _realize(s.concrete, s.abstract)
  return mesh


def _realize(concrete, abstract) -> Mesh:
  """A concrete mesh of ``abstract``'s shape and axis types: over ``concrete``'s devices in
  their order when it has as many (the same devices, seen through other axes), else over
  the first devices of the default backend."""
  if concrete is not None and concrete.size == abstract.size:
    devices = concrete.devices.reshape(abstract.axis_sizes)
  else:
    flat = client.devices()
    if len(flat) < abstract.size:
      raise ValueError(f"{abstract} needs {abstract.size} devices; there are {len(flat)}")
    devices = np.empty(abstract.size, dtype=object)
    devices[:] = flat[:abstract.size]
    devices = devices.reshape(abstract.axis_sizes)
  return Mesh(devices, abstract.axis_names, abstract.axis_types)


class set_mesh:
  """Make ``mesh`` (a ``Mesh``, or None for none) the current mesh: for the rest of the
  program, or, used as a context manager, inside the ``with`` block (after which the mesh
  before it is current again). Also sets the abstract mesh to ``mesh``'s."""

  __slots__ = ("prev",)

  def __init__(self, mesh):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `hlox.sharding.Mesh`. Got {type(mesh)}")
    if mesh is not None and AxisType.Manual in mesh.axis_types:
      raise ValueError(
          f"mesh {mesh} contains manual axes which is not allowed when using "
          "`hlox.set_mesh`. Please use `hlox.shard_map` to enter into `Manual` mode instead.")
    self.prev = _swap(mesh, None)

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    _restore(self.prev)
    return False


class use_abstract_mesh:
  """Trace with ``mesh`` (an ``AbstractMesh``) as the mesh in effect, inside a ``with``
  block: PartitionSpecs name its axes and types are split over its Explicit axes. Its
  devices are the current mesh's (it may view them through other axes, never change their
  number)."""

  __slots__ = ("mesh", "prev")

  def __init__(self, mesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError("Expected mesh of type `hlox.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self.mesh = mesh

  def __enter__(self):
    s = _state()
    before = s.abstract if s.abstract is not None else (
        s.concrete.abstract_mesh if s.concrete is not None else None)
    if (before is not None and not before.empty and not self.mesh.empty
        and before.size != self.mesh.size):
      raise ValueError(
          f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: {self.mesh} "
          f"with size={self.mesh.size} and prev mesh: {before} with size={before.size}")
    self.prev = _swap(s.concrete, self.mesh)

  def __exit__(self, *exc):
    _restore(self.prev)
    return False


def get_abstract_mesh() -> AbstractMesh:
  """The abstract mesh in effect: ``use_abstract_mesh``'s (as ``auto_axes`` and
  ``explicit_axes`` set it), else the current mesh's, else an empty one."""
  s = _state()
  if s.abstract is not None:
    return s.abstract
  return s.concrete.abstract_mesh if s.concrete is not None else EMPTY_ABSTRACT_MESH


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
  """Make a device mesh of the given shape over the first ``prod(axis_shapes)`` devices.

  The devices are taken in order. As in JAX, ``axis_types`` defaults to
  ``AxisType.Explicit`` for every axis (hlox lets XLA propagate explicit shardings like
  automatic ones). Too few devices, or sizes that are not ints, raise ValueError.

  Args:
    axis_shapes: sequence of ints: the mesh's size along each axis.
    axis_names: sequence of names (or one str), one per axis.
    axis_types: optional sequence of ``AxisType`` (Explicit, Auto or Manual) per axis.
    devices: optional sequence of devices to use (keyword-only; default: all devices).

  Returns:
    A ``Mesh``.

  Examples:
    >>> mesh = hlox.make_mesh((1,), ("x",))
    >>> mesh.shape, mesh.axis_names
    ({'x': 1}, ('x',))
  """
  try:
    sizes = tuple(int(s) for s in axis_shapes)
  except TypeError:
    raise ValueError("`axis_sizes` passed to `make_mesh` should be a sequence of ints. Got "
                     f"{axis_shapes}") from None
  if isinstance(axis_names, str):
    axis_names = (axis_names,)
  devices = list(devices) if devices is not None else client.devices()
  total = math.prod(sizes)
  if total > len(devices):
    raise ValueError(f"Number of devices {len(devices)} must be >= the product of mesh_shape "
                     f"{sizes}")
  grid = np.empty(len(devices[:total]), dtype=object)
  grid[:] = devices[:total]
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(sizes)
  return Mesh(grid.reshape(sizes), tuple(axis_names), axis_types)


# --- the tile assignment of a layout -------------------------------------------------------

def _tiles(hlo, n_positions: int):
  """``(tile dims of the array's dimensions, {position: tile index})`` of an HloSharding."""
  if hlo.is_replicated() or hlo.is_maximal():
    return None, None
  dims = list(hlo.tile_assignment_dimensions())
  grid = np.asarray(hlo.tile_assignment_devices()).reshape(dims)
  n_data = len(dims) - (1 if hlo.replicate_on_last_tile_dim() else 0)
  n_data -= len(hlo.subgroup_types()) if not hlo.replicate_on_last_tile_dim() else 0
  where = {}
  for tile in np.ndindex(*grid.shape):
    where[int(grid[tile])] = tile[:n_data]
  return dims[:n_data], where


def indices_of(hlo, shape, n_positions: int) -> list:
  """Per device position, the tuple of slices of ``shape`` its shard holds."""
  full = tuple(slice(None) for _ in shape)
  dims, where = _tiles(hlo, n_positions)
  if dims is None:
    return [full] * n_positions
  out = []
  for p in range(n_positions):
    tile = where[p]
    index = []
    for d, n in enumerate(shape):
      count = dims[d]
      if count == 1:
        index.append(slice(None))
        continue
      chunk = -(-n // count)
      index.append(slice(tile[d] * chunk, min((tile[d] + 1) * chunk, n)))
    out.append(tuple(index))
  return out


# --- shardings ---------------------------------------------------------------------------

class IndivisibleError(ValueError):
  """A sharding splits a dimension into parts that do not evenly divide it."""


class Sharding:
  """Base class of hlox's shardings: which devices hold which part of an array."""

  memory_kind = None

  @property
  def _device_assignment(self) -> tuple:
    raise NotImplementedError

  @property
  def device_set(self) -> set:
    return set(self._device_assignment)

  @property
  def num_devices(self) -> int:
    return len(self._device_assignment)

  @property
  def addressable_devices(self) -> set:
    me = client.process_index()
    return {d for d in self._device_assignment if getattr(d, "process_index", 0) == me}

  @property
  def is_fully_addressable(self) -> bool:
    return len(self.addressable_devices) == self.num_devices

  def hlo(self, ndim: int):
    """XLA's ``HloSharding`` of this layout for an array of rank ``ndim``."""
    raise NotImplementedError

  def is_fully_replicated_for(self, ndim: int) -> bool:
    return self.hlo(ndim).is_replicated()

  def _to_xla_hlo_sharding(self, ndim: int):  # JAX's name for ``hlo``
    return self.hlo(ndim)

  def check_compatible_aval(self, aval_shape) -> None:
    """Raise ``ValueError`` if this layout cannot hold a value of shape ``aval_shape``
    (one of too small a rank); shardings of one device hold any."""

  def devices_indices_map(self, global_shape) -> dict:
    """{device: tuple of slices of ``global_shape`` it holds}."""
    shape = tuple(global_shape)
    indices = indices_of(self.hlo(len(shape)), shape, self.num_devices)
    return dict(zip(self._device_assignment, indices))

  def addressable_devices_indices_map(self, global_shape) -> dict:
    local = self.addressable_devices
    return {d: i for d, i in self.devices_indices_map(global_shape).items() if d in local}

  def shard_shape(self, global_shape) -> tuple:
    """The shape of one shard (the first device's) of an array of ``global_shape``."""
    shape = tuple(global_shape)
    index = indices_of(self.hlo(len(shape)), shape, self.num_devices)[0]
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))

  def is_equivalent_to(self, other, ndim: int) -> bool:
    return (isinstance(other, Sharding)
            and self._device_assignment == other._device_assignment
            and self.hlo(ndim) == other.hlo(ndim))

  def with_memory_kind(self, kind):
    return self


class NamedSharding(Sharding):
  """A layout over ``mesh`` described by ``spec`` (a ``PartitionSpec``): dimension ``i`` of
  an array is split over the mesh axes ``spec[i]``; it is copied over the other axes."""

  def __init__(self, mesh, spec=None, *, memory_kind=None):
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding: mesh must be a Mesh, got {type(mesh).__name__}")
    if spec is None:
      spec = PartitionSpec()
    elif not isinstance(spec, PartitionSpec):
      if isinstance(spec, (tuple, list)):
        spec = PartitionSpec(*spec)
      else:
        raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}")
    seen = set()
    for dim in range(len(spec)):
      for name in spec.axes_of(dim):
        if name not in mesh.shape:
          raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                           f"{tuple(mesh.axis_names)}.")
        if name in seen:
          raise ValueError(f"A single NamedSharding spec specification can map every mesh "
                           f"axis to at most one positional dimension, but {spec} has "
                           f"duplicate entries for `{name}`")
        seen.add(name)
    _check_partial_axes_in(mesh, spec)
    self.mesh = mesh
    self.spec = spec
    self.memory_kind = memory_kind or "device"
    self._hlo_cache = {}
    self._hash = hash((mesh, spec))  # part of every sharded argument's jit cache key

  def update(self, **kwargs) -> "NamedSharding":
    """A copy with ``mesh``, ``spec`` (a ``PartitionSpec`` or a sequence of its entries)
    or ``memory_kind`` replaced."""
    spec = kwargs.pop("spec", self.spec)
    out = NamedSharding(kwargs.pop("mesh", self.mesh),
                        spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec),
                        memory_kind=kwargs.pop("memory_kind", self.memory_kind))
    if kwargs:
      raise TypeError(f"NamedSharding.update got unexpected arguments {sorted(kwargs)}")
    return out

  @property
  def _device_assignment(self) -> tuple:
    return self.mesh._flat_devices_tuple

  @property
  def is_fully_replicated(self) -> bool:
    if self.spec.unreduced and self.mesh.size > 1:  # each device holds a partial sum
      return False
    return all(not self.spec.axes_of(d) or
               math.prod(self.mesh.shape[n] for n in self.spec.axes_of(d)) == 1
               for d in range(len(self.spec)))

  def check_compatible_aval(self, aval_shape) -> None:
    if len(aval_shape) < len(self.spec):
      extra = " For scalars the PartitionSpec should be P()" if not len(aval_shape) else ""
      raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                       f"{len(self.spec)}, but was applied to a value of rank "
                       f"{len(aval_shape)}.{extra}")

  def check_rank(self, ndim: int, what: str = "an array"):
    if len(self.spec) > ndim:
      raise ValueError(f"One of the arguments ({what}) was given the sharding of {self}, "
                       f"which implies that it has a rank of at least {len(self.spec)}, but "
                       f"it is {ndim}")

  def check_shape(self, shape, what: str) -> None:
    """Raise if this layout cannot hold an array of ``shape``: a spec longer than its rank
    (``ValueError``), or a dimension its mesh axes do not evenly divide
    (``IndivisibleError``). ``what`` names the array (``jit argument params['w']``)."""
    shape = tuple(shape)
    if len(self.spec) > len(shape):
      raise ValueError(f"{what} was given the sharding {self}, which implies that it has a "
                       f"rank of at least {len(self.spec)}, but its shape is {shape}")
    for d, n in enumerate(shape):
      axes = self.spec.axes_of(d)
      parts = math.prod(self.mesh.shape[a] for a in axes)
      if n % parts:
        raise IndivisibleError(
            f"{what} was given the sharding {self}, which implies that its dimension {d} "
            f"is split {parts} ways (mesh axes {axes}), but that dimension has size {n}, "
            f"not divisible by {parts} (full shape {shape})")

  def hlo(self, ndim: int):
    hlo = self._hlo_cache.get(ndim)
    if hlo is None:
      hlo = self._hlo_cache[ndim] = self._make_hlo(ndim)
    return hlo

  def _make_hlo(self, ndim: int):
    xc = client._xc()
    mesh = self.mesh
    names = list(mesh.axis_names)
    positions = np.arange(mesh.size).reshape(mesh.devices.shape)
    order, tile_dims = [], []
    for d in range(ndim):
      axes = self.spec.axes_of(d)
      order += [names.index(a) for a in axes]
      tile_dims.append(math.prod(mesh.shape[a] for a in axes))
    if math.prod(tile_dims) == 1:
      return xc.HloSharding.replicate()
    rest = [i for i in range(len(names)) if i not in order]
    replicas = math.prod(mesh.devices.shape[i] for i in rest)
    ids = positions.transpose(order + rest).reshape(-1)
    dims = tile_dims + ([replicas] if replicas > 1 else [])
    last = " last_tile_dim_replicate" if replicas > 1 else ""
    return xc.HloSharding.from_string(
        f"{{devices=[{','.join(map(str, dims))}]{','.join(map(str, ids))}{last}}}")

  def sdy_text(self, ndim: int, mesh_symbol: str = "mesh", closed: bool = True,
               open_dims: bool = False) -> str:
    """The Shardy attribute of this layout (``#sdy.sharding<@mesh, [{"x"}, {}]>``).
    ``closed=False`` leaves the unsplit dimensions open (``{?}``: XLA chooses);
    ``open_dims`` leaves every dimension open to further axes (``{"x", ?}``)."""
    dims = []
    for d in range(ndim):
      entry = self.spec.partitions[d] if d < len(self.spec) else None
      if entry is _Unconstrained():
        dims.append("{?}")
        continue
      axes = ", ".join(f'"{a}"' for a in self.spec.axes_of(d))
      if open_dims:
        dims.append("{" + axes + ", ?}" if axes else "{?}")
      else:
        dims.append("{" + axes + "}" if closed or axes else "{?}")
    # Partial sums over ``unreduced`` axes (XLA all-reduces them where a constraint or a
    # result asks for a value without them); ``reduced`` is a type-level promise only.
    unreduced = ""
    if self.spec.unreduced:
      names = [a for a in self.mesh.axis_names if a in self.spec.unreduced]
      unreduced = ", unreduced={" + ", ".join(f'"{a}"' for a in names) + "}"
    return f"#sdy.sharding<@{mesh_symbol}, [{', '.join(dims)}]{unreduced}>"

  def __eq__(self, other):
    return (isinstance(other, NamedSharding) and self.mesh == other.mesh
            and self.spec == other.spec)

  def __hash__(self):
    return self._hash

  def __repr__(self):
    if isinstance(self.mesh, AbstractMesh):  # a type's sharding (``typeof``)
      return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"
    return (f"NamedSharding(mesh={self.mesh!s}, spec={self.spec!r}, "
            f"memory_kind={self.memory_kind})")

  def devices_indices_map(self, global_shape) -> dict:
    if self.spec.unreduced:  # as JAX: no device holds a slice of the value
      raise NotImplementedError("device_indices_map doesn't work with unreduced. Please file "
                                "a bug at https://github.com/jax-ml/jax/issues")
    return super().devices_indices_map(global_shape)

  def __reduce__(self):
    return (NamedSharding, (self.mesh, self.spec))


def _check_partial_axes_in(mesh, spec):
  """As JAX: ``unreduced`` / ``reduced`` axes must be ``Explicit`` axes of ``mesh``."""
  types = dict(zip(mesh.axis_names, mesh.axis_types))
  for what, axes in (("Unreduced", spec.unreduced), ("Reduced", spec.reduced)):
    for u in axes:
      if u not in types:
        raise ValueError(f"{what} axes {u} is not found in mesh.axis_names="
                         f"{mesh.axis_names!r}. Got pspec={spec!r}")
      if types[u] in (AxisType.Auto, AxisType.Manual):
        raise ValueError(f"{what} axes can only refer to mesh axes that is of type "
                         f"`Explicit`. Got {what.lower()} axes: {axes} and mesh: {mesh}")


class SingleDeviceSharding(Sharding):
  """All of an array on one device."""

  def __init__(self, device, *, memory_kind=None):
    if not hasattr(device, "platform"):
      raise TypeError(f"SingleDeviceSharding: expected a device, got {device!r}")
    self._device = device
    self.memory_kind = memory_kind or "device"

  @property
  def _device_assignment(self) -> tuple:
    return (self._device,)

  @property
  def is_fully_replicated(self) -> bool:
    return True

  def hlo(self, ndim: int):
    return client._xc().HloSharding.replicate()

  def __eq__(self, other):
    if isinstance(other, SingleDeviceSharding):
      return self._device == other._device
    return getattr(other, "_hlox_device", None) == self._device

  def __hash__(self):
    return hash(("single", self._device))

  @property
  def _hlox_device(self):  # what ``device_put`` reads off a sharding
    return self._device

  def __repr__(self):
    return (f"SingleDeviceSharding(device={self._device!r}, "
            f"memory_kind={self.memory_kind})")


class GSPMDSharding(Sharding):
  """A layout XLA chose that no ``NamedSharding`` over the program's mesh describes: the
  devices and XLA's tile assignment as they are."""

  def __init__(self, devices, hlo_sharding):
    self._devices = tuple(devices)
    self._hlo = hlo_sharding

  @property
  def _device_assignment(self) -> tuple:
    return self._devices

  @property
  def is_fully_replicated(self) -> bool:
    return self._hlo.is_replicated()

  def hlo(self, ndim: int):
    return self._hlo

  def __eq__(self, other):
    return (isinstance(other, GSPMDSharding) and self._devices == other._devices
            and self._hlo == other._hlo)

  def __hash__(self):
    return hash((self._devices, str(self._hlo)))

  def __repr__(self):
    return f"GSPMDSharding({self._hlo!r})"

  def check_compatible_aval(self, aval_shape) -> None:
    dims, _ = _tiles(self._hlo, len(self._devices))
    if dims is not None and len(aval_shape) < len(dims):
      raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                       f"{len(dims)}, but was applied to a value of rank {len(aval_shape)}")


def from_hlo(hlo, mesh: Mesh, ndim: int) -> Sharding:
  """The ``NamedSharding`` over ``mesh`` whose layout is ``hlo`` (as JAX reports the results
  of a partitioned program), or a ``GSPMDSharding`` when no spec over ``mesh`` gives it."""
  if hlo.is_replicated():
    return NamedSharding(mesh, PartitionSpec())
  dims, where = _tiles(hlo, mesh.size)
  if dims is None or len(dims) != ndim:
    return GSPMDSharding(mesh._flat_devices_tuple, hlo)
  shape = mesh.devices.shape
  origin = where[0]
  if any(origin):
    return GSPMDSharding(mesh._flat_devices_tuple, hlo)
  # Stepping one device along a mesh axis moves the tile along at most one array dimension,
  # by the axis's stride within that dimension's split.
  per_dim = [[] for _ in range(ndim)]
  for a, name in enumerate(mesh.axis_names):
    if shape[a] == 1:
      continue
    step = [0] * len(shape)
    step[a] = 1
    tile = where[int(np.ravel_multi_index(step, shape))]
    moved = [d for d in range(ndim) if tile[d] != 0]
    if len(moved) > 1:
      return GSPMDSharding(mesh._flat_devices_tuple, hlo)
    if moved:
      per_dim[moved[0]].append((tile[moved[0]], name))
  entries = []
  for axes in per_dim:
    axes = [name for _, name in sorted(axes, reverse=True)]  # largest stride: major
    entries.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
  while entries and entries[-1] is None:  # as JAX reports them: P('x',), not P('x', None)
    entries.pop()
  candidate = NamedSharding(mesh, PartitionSpec(*entries))
  if same_layout(candidate.hlo(ndim), hlo, mesh.size):
    return candidate
  return GSPMDSharding(mesh._flat_devices_tuple, hlo)


def same_layout(a, b, n: int) -> bool:
  """Whether the HLO shardings ``a`` and ``b`` lay an array out alike over ``n`` devices."""
  if a == b:
    return True
  da, wa = _tiles(a, n)
  db, wb = _tiles(b, n)
  return da == db and wa == wb


# --- jaxlib's side -----------------------------------------------------------------------

class JaxlibFacing:
  """What jaxlib's C++ side asks of a Python sharding subclass (it reads these when it
  transfers values and wraps results), from ``_hlo``, ``_devs`` and ``_dev_list``.
  (nanobind classes take one base: ``jaxlib_facing`` copies these onto a subclass.)"""
  memory_kind = None

  def _to_xla_hlo_sharding(self, ndim):
    return self._hlo

  @property
  def _device_assignment(self):
    return self._devs

  @property
  def _internal_device_list(self):
    return self._dev_list

  @property
  def device_set(self):
    return set(self._devs)


def jaxlib_facing(cls):
  """Class decorator: ``JaxlibFacing``'s members on ``cls``."""
  for name in ("memory_kind", "_to_xla_hlo_sharding", "_device_assignment",
               "_internal_device_list", "device_set"):
    setattr(cls, name, JaxlibFacing.__dict__[name])
  return cls


_internal_cache: dict = {}
_Internal = None


def _internal_class():
  global _Internal
  if _Internal is None:
    xc = client._xc()

    @jaxlib_facing
    class Internal(xc.GSPMDSharding):
      """A jaxlib sharding for one layout, pointing back at the public one."""

      def __init__(self, public, ndim):
        devices = public._device_assignment
        hlo = public.hlo(ndim)
        dev_list = xc.DeviceList(tuple(devices))
        super().__init__(dev_list, hlo)
        self._public = public
        self._hlo = hlo
        self._devs = tuple(devices)
        self._dev_list = dev_list
        self.ndim = ndim
        me = client.process_index()
        self.local_positions = [p for p, d in enumerate(devices)
                                if getattr(d, "process_index", 0) == me]
        self.local_devices = [devices[p] for p in self.local_positions]

      def __repr__(self):
        return repr(self._public)

    _Internal = Internal
  return _Internal


def internal(sharding: Sharding, ndim: int):
  """jaxlib's sharding object for ``sharding`` on arrays of rank ``ndim`` (cached)."""
  key = (sharding, ndim)
  obj = _internal_cache.get(key)
  if obj is None:
    obj = _internal_cache[key] = _internal_class()(sharding, ndim)
  return obj


def is_partitioned(buf) -> bool:
  """Whether a jaxlib buffer is laid out by one of these shardings."""
  return _Internal is not None and type(buf._sharding) is _Internal


_single_device: dict = {}


def public(jaxlib_sharding):
  """The public sharding of a jaxlib buffer's sharding (pmap's layouts are their own)."""
  p = getattr(jaxlib_sharding, "_public", None)
  if p is not None:
    return p
  device = getattr(jaxlib_sharding, "_hlox_device", None)
  if device is not None:
    p = _single_device.get(device)
    if p is None:
      p = _single_device[device] = SingleDeviceSharding(device)
    return p
  return jaxlib_sharding


def axis_map(src, dst) -> dict | None:
  """For meshes over the same devices in the same order: each axis of ``src`` as the run of
  consecutive axes of ``dst`` that it stands for (``'A': 8`` as ``('X', 'Y')`` of a 4x2
  mesh), or None when ``src``'s axes do not fall on ``dst``'s boundaries."""
  if src._flat_devices_tuple != dst._flat_devices_tuple:
    return None
  result, j = {}, 0
  for name, size in zip(src.axis_names, src.axis_sizes):
    run = []
    while size > 1 and j < len(dst.axis_sizes):
      if size % dst.axis_sizes[j]:
        return None
      size //= dst.axis_sizes[j]
      run.append(dst.axis_names[j])
      j += 1
    if size != 1:
      return None
    result[name] = tuple(run)
  return result


def onto_mesh(sharding, mesh):
  """``sharding`` (a NamedSharding) as the same layout over ``mesh`` (same devices, other
  axes), or None when ``mesh``'s axes cannot describe it."""
  if sharding.mesh.shape_tuple == mesh.shape_tuple:
    return sharding if sharding.mesh == mesh else NamedSharding(mesh, sharding.spec)
  names = axis_map(sharding.mesh, mesh)
  if names is None:
    return None
  dims = []
  for d in range(len(sharding.spec)):
    entry = sharding.spec.partitions[d]
    if entry is PartitionSpec.UNCONSTRAINED:
      dims.append(entry)
      continue
    axes = tuple(a for n in sharding.spec.axes_of(d) for a in names[n])
    dims.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  moved = lambda axes: frozenset(a for n in axes for a in names[n])  # noqa: E731
  return NamedSharding(mesh, PartitionSpec(*dims, unreduced=moved(sharding.spec.unreduced),
                                           reduced=moved(sharding.spec.reduced)))


def named_of_type(split, abstract: bool = False) -> "NamedSharding":
  """The NamedSharding a ``core.sharding_types.TypeSharding`` stands for (its spec lists
  only the Explicit axes that split each dimension); over the mesh's ``AbstractMesh`` when
  ``abstract`` (as a type shows it)."""
  mesh = split.mesh.abstract_mesh if abstract else split.mesh
  return NamedSharding(mesh, PartitionSpec(
      *[None if e is None else e[0] if len(e) == 1 else e for e in split.entries],
      unreduced=split.unreduced, reduced=split.reduced))


def _unsplit_sharding(ndim: int) -> "NamedSharding":
  return NamedSharding(get_abstract_mesh(), PartitionSpec(*[None] * ndim))


avals_lib.unsplit_sharding = _unsplit_sharding
@functools.lru_cache(maxsize=4096)
def _named_of_split(split) -> "NamedSharding":
  named = named_of_type(split, abstract=True)
  named._type_split = split  # what a Var made from the type reads back
  return named


sharding_types.named_of_split = _named_of_split


def concrete_mesh_of(mesh):
  """``mesh`` when it is a concrete Mesh; for an AbstractMesh, the mesh in effect when it
  is of that shape, else one over the first devices."""
  if not isinstance(mesh, AbstractMesh):
    return mesh
  concrete = concrete_mesh()
  if concrete is not None and concrete.abstract_mesh == mesh:
    return concrete
  return _realize(concrete, mesh)


sharding_types.concrete_mesh = concrete_mesh_of
