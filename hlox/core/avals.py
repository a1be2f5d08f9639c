"""Abstract values: what a tracer knows about the array it stands for."""
from __future__ import annotations

import enum
import math

import numpy as np

from hlox.core import dtypes
from hlox.core.shape_poly import _DimExpr

_short_names = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "int2": "i2", "uint2": "u2", "int4": "i4", "uint4": "u4",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype_name(dtype) -> str:
  if dtypes.is_extended(dtype):  # a typed key's ``key<fry>``
    return str(dtype)
  name = np.dtype(dtype).name
  if dtype == dtypes.float0:
    return "float0"
  return _short_names.get(name, name.replace("float8_", "f8_"))


# ``unsplit_sharding(ndim)``: the NamedSharding of a type that records no layout (set by the
# runtime, which knows meshes).
unsplit_sharding = None


def _splits_nothing(sharding) -> bool:
  """Whether ``sharding`` is a NamedSharding whose spec splits no dimension and has no
  unreduced/reduced axes (read through ``partitions``: iterating such a spec is an error)."""
  spec = getattr(sharding, "spec", None)
  return (spec is not None and not spec.unreduced and not spec.reduced
          and not any(spec.partitions))


class MemorySpace(enum.Enum):
  """Which memory an array lives in, as its type says (JAX's ``jax.memory.Space``): the
  device's own (the default), the host's, or any."""
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"

  __hash__ = object.__hash__  # by identity (an Enum hashes its name)


class ShapedArray:
  """An array known only by its shape, dtype and weak-typedness.

  Instances are interned: equal avals are the same object, so comparing and hashing them
  (which the jit and eager caches do on every call) costs an identity check.
  """

  __slots__ = ("shape", "dtype", "weak_type", "_sharding", "_vma", "_ur", "_mem",
               "__weakref__")
  array_abstraction_level = 1
  _interned: dict = {}

  def __new__(cls, shape, dtype, weak_type: bool = False, sharding=None, vma=(), ur=(),
              memory_space=None):
    if sharding is not None and unsplit_sharding is not None and \
        _splits_nothing(sharding) and sharding == unsplit_sharding(len(shape)):
      # The layout a type without one has (what ``.sharding`` reads back from any type,
      # which code like flax's passes back in): the same type, so the caches see one.
      sharding = None
    if sharding is not None or vma or ur or memory_space is not None:
      if memory_space is MemorySpace.Device:  # the default: the same type as none given
        memory_space = None
      elif memory_space is not None and not isinstance(memory_space, MemorySpace):
        raise TypeError(f"memory_space must be a jax.memory.Space, got {memory_space!r}")
      return cls._with_sharding(shape, dtype, weak_type, sharding, tuple(vma), _ur_key(ur),
                                memory_space)
    key = (tuple(shape), dtype, weak_type)
    try:
      return cls._interned[key]
    except (KeyError, TypeError):
      pass
    shape = tuple(d if type(d) is _DimExpr else int(d) for d in shape)
    dtype = dtype if dtypes.is_extended(dtype) else np.dtype(dtype)
    weak_type = bool(weak_type)
    canonical = (shape, dtype, weak_type)
    self = cls._interned.get(canonical)
    if self is None:
      self = object.__new__(cls)
      object.__setattr__(self, "shape", shape)
      object.__setattr__(self, "dtype", dtype)
      object.__setattr__(self, "weak_type", weak_type)
      object.__setattr__(self, "_sharding", None)
      object.__setattr__(self, "_vma", ())
      object.__setattr__(self, "_ur", ())
      object.__setattr__(self, "_mem", None)
      self = cls._interned.setdefault(canonical, self)
    try:
      cls._interned[key] = self
    except TypeError:  # unhashable spelling of the dtype or shape: canonical key only
      pass
    return self

  @classmethod
  def _with_sharding(cls, shape, dtype, weak_type, sharding, vma=(), ur=(), mem=None):
    """A type that also says how the value is laid out (what ``typeof`` gives for a value
    split over Explicit mesh axes): ``sharding`` is a NamedSharding; or, inside a
    ``shard_map``, the manual mesh axes along which the value may differ between devices
    (``vma``, in the mesh's order), and ``ur``: ``(unreduced, reduced)`` manual axes
    (frozensets; ``()`` for none); ``mem``: a MemorySpace other than the device's (None)."""
    base = cls(shape, dtype, weak_type)
    if sharding is None and not vma and not ur and mem is None:
      return base
    key = (base, sharding, vma, ur, mem)
    self = cls._interned.get(key)
    if self is None:
      self = object.__new__(cls)
      for name in ("shape", "dtype", "weak_type"):
        object.__setattr__(self, name, getattr(base, name))
      object.__setattr__(self, "_sharding", sharding)
      object.__setattr__(self, "_vma", vma)
      object.__setattr__(self, "_ur", ur)
      object.__setattr__(self, "_mem", mem)
      self = cls._interned.setdefault(key, self)
    return self

  @property
  def sharding(self):
    """The layout this type records (a NamedSharding). A type that records none is, as in
    JAX, replicated over the mesh in effect (``P(None, ...)`` over it, or over the empty
    mesh); internal code that must tell the two apart reads ``_sharding``."""
    if self._sharding is None and unsplit_sharding is not None:
      return unsplit_sharding(len(self.shape))
    return self._sharding

  def strip_sharding(self) -> "ShapedArray":
    """This type without the layout it records (the vma is kept)."""
    if self._sharding is None:
      return self
    return ShapedArray(self.shape, self.dtype, self.weak_type, None, self._vma, self._ur,
                       self._mem)

  def __setattr__(self, name, value):
    raise AttributeError("ShapedArray is immutable; use .update(...)")

  def __reduce__(self):
    return (ShapedArray, (self.shape, self.dtype, self.weak_type, self._sharding, self._vma,
                          self._ur, self._mem))

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def size(self) -> int:
    n = math.prod(self.shape)
    return n if type(n) is int or type(n) is _DimExpr else int(n)

  @property
  def memory_space(self) -> MemorySpace:
    """The memory the array lives in (``MemorySpace.Device`` unless the type says other)."""
    return MemorySpace.Device if self._mem is None else self._mem

  @property
  def vma(self) -> frozenset:
    """The manual mesh axes along which the value may vary (inside a ``shard_map``)."""
    return frozenset(self._vma)

  @property
  def unreduced(self) -> frozenset:
    """The manual mesh axes over which each device holds a partial sum of the value."""
    return self._ur[0] if self._ur else frozenset()

  @property
  def reduced(self) -> frozenset:
    """The manual mesh axes over which the value is the same everywhere but its cotangent
    will be a partial sum."""
    return self._ur[1] if self._ur else frozenset()

  @property
  def manual_axis_type(self) -> "ManualAxisType":
    if not self._ur:
      return ManualAxisType(self.vma)
    return ManualAxisType(self.vma, self._ur[0], self._ur[1])

  mat = manual_axis_type  # JAX's shorter name for it

  def update(self, shape=None, dtype=None, weak_type=None, sharding=None,
             vma=None, unreduced=None, reduced=None, memory_space=None) -> "ShapedArray":
    ur = self._ur
    if unreduced is not None or reduced is not None:
      ur = (self.unreduced if unreduced is None else unreduced,
            self.reduced if reduced is None else reduced)
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type,
                       sharding if sharding is not None
                       else self._sharding if shape is None else None,
                       self._vma if vma is None else tuple(vma), ur,
                       self._mem if memory_space is None else memory_space)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def str_short(self, short_dtypes: bool = True, mesh_axis_types: bool = False) -> str:
    name = (short_dtype_name(self.dtype) if short_dtypes or self.dtype == dtypes.float0
            else self.dtype.name)  # float0's NumPy name is "void"
    if self._mem is not None:  # as JAX: ``f32<host>[8]``
      name += f"<{self._mem.name.lower()}>"
    if self._sharding is not None:
      from hlox.core import sharding_types
      split = sharding_types.split_of_named(self._sharding, len(self.shape))
      if split is not None:
        return (f"{name}[{sharding_types.dims_string(self.shape, split)}]" +
                sharding_types.partial_axes_str(split.mesh, self._vma, split.unreduced,
                                                split.reduced))
    return f"{name}[{','.join(str(d) for d in self.shape)}]{self._vma_str()}"

  def _vma_str(self) -> str:  # as JAX: ``{V:i}``, ``{V:(i,j)}``, ``{V:i, R:j}``
    if self._ur:
      from hlox.core import sharding_types
      return sharding_types.partial_axes_str(None, self._vma, *self._ur)
    if not self._vma:
      return ""
    names = ",".join(map(str, self._vma))
    return f"{{V:{names if len(self._vma) == 1 else f'({names})'}}}"

  def to_tangent_aval(self) -> "ShapedArray":
    """The aval of a tangent: float0 for integer and boolean values (as in JAX); a user's
    extended dtype says its own (``_rules.tangent_dtype``)."""
    if dtypes.user_rules(self.dtype) is not None:
      return ShapedArray(self.shape, self.dtype._rules.tangent_dtype(self.dtype),
                         memory_space=self._mem)
    if dtypes.is_inexact(self.dtype):
      return self.update(weak_type=self.weak_type)
    return ShapedArray(self.shape, dtypes.float0, False, memory_space=self._mem)

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

  def __str__(self):  # as JAX prints a type: full dtype name, ``~`` marking a weak type
    return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)


class ManualAxisType:
  """How a value inside a ``shard_map`` relates to the devices along the manual axes:
  ``varying`` holds the axes along which it may differ (JAX's ``manual_axis_type``);
  ``invarying(mesh)`` the manual axes of ``mesh`` along which it is the same."""

  __slots__ = ("varying", "unreduced", "reduced")

  def __init__(self, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    # Frozen (a type is a value; avals and equations share it): fields set once, here.
    object.__setattr__(self, "varying", frozenset(varying))
    object.__setattr__(self, "unreduced", frozenset(unreduced))
    object.__setattr__(self, "reduced", frozenset(reduced))
    if self.varying & self.unreduced:
      raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                       f"varying={self.varying} and unreduced={self.unreduced}")
    if self.varying & self.reduced:
      raise ValueError("varying and reduced cannot have common mesh axes. Got "
                       f"varying={self.varying} and reduced={self.reduced}")

  def __setattr__(self, name, value):
    raise AttributeError(f"ManualAxisType is immutable: cannot set {name!r} (make a new one "
                         "with .update())")

  def __reduce__(self):  # copy and pickle build a new one (no setattr on a frozen object)
    return ManualAxisType, (self.varying, self.unreduced, self.reduced)

  @property
  def vur(self) -> frozenset:
    """The axes along which the value is varying, unreduced or reduced."""
    return self.varying | self.unreduced | self.reduced

  @property
  def empty(self) -> bool:
    return not self.vur

  def invarying(self, mesh) -> frozenset:
    """The manual axes of ``mesh`` along which the value is the same on every device."""
    return frozenset(mesh.manual_axes) - self.vur

  def update(self, **kwargs) -> "ManualAxisType":
    return ManualAxisType(kwargs.get("varying", self.varying),
                          kwargs.get("unreduced", self.unreduced),
                          kwargs.get("reduced", self.reduced))

  def to_ct_mat(self) -> "ManualAxisType":
    """The type of a cotangent: unreduced and reduced swapped."""
    return self.update(unreduced=self.reduced, reduced=self.unreduced)

  def __eq__(self, other):
    return isinstance(other, ManualAxisType) and (
        self.varying, self.unreduced, self.reduced) == (
            other.varying, other.unreduced, other.reduced)

  def __hash__(self):
    return hash((self.varying, self.unreduced, self.reduced))

  def __repr__(self):  # as JAX's
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")


def _ur_key(ur) -> tuple:
  """``(unreduced, reduced)`` as frozensets, or ``()`` when both are empty."""
  if not ur or not (ur[0] or ur[1]):
    return ()
  return (frozenset(ur[0]), frozenset(ur[1]))


def raise_to_shaped(aval):
  return aval


class AbstractToken:
  """The type of a token (printed ``Tok``, JAX's ``core.abstract_token``): a value with no
  data that orders side effects (``lax.create_token``, ``lax.after_all``). One instance."""

  __slots__ = ()
  shape = ()
  ndim = 0
  weak_type = False

  def str_short(self, *args, **kwargs) -> str:
    return "Tok"

  def to_tangent_aval(self):
    return self

  def __repr__(self):
    return "AbstractToken()"


abstract_token = AbstractToken()


class TokenBuffer:
  """What a token holds on a device (JAX's ``Token._buf``): no data, so it has no host
  value; reading one raises, as jaxlib does for a token-shaped buffer."""

  __slots__ = ()
  aval = abstract_token
  shape = ()

  @property
  def _value(self):
    raise RuntimeError("Cannot convert a token-shape buffer to a numpy array.")

  def __array__(self, dtype=None, copy=None):
    return self._value

  def __repr__(self):
    return "TokenBuffer()"


class Token:
  """A token value outside any trace (JAX's ``core.Token``): what an eager
  ``lax.create_token()`` or ``lax.after_all(...)`` returns."""

  __slots__ = ()
  aval = abstract_token
  _buf = TokenBuffer()  # tokens carry no data: every one's buffer is the same nothing

  def block_until_ready(self):
    """Nothing to wait for: a token's effects are ordered by the programs that use it."""
    return self

  def __repr__(self):
    return "Token()"


token = Token()
