"""Mutable array references: their type (``AbstractRef``) and the eager box (``Ref``).

A ``Ref`` is second-class: the only things a program does with one are indexed reads and
writes (the ``get``/``swap``/``addupdate`` primitives of ``lax/state.py``), and creating or
freezing it. Eagerly a ``Ref`` is a Python box around a device array whose contents the
primitives replace; traced, a reference is a tracer whose aval is an ``AbstractRef``, and
``interpreters/state_discharge.py`` turns a jaxpr that mutates references into a pure one
that takes their values in and hands their final values out.

The core knows no primitive, so the indexing operators of ``Ref`` (and of tracers holding a
reference) are installed by ``lax/state.py`` through ``set_ref_ops``.
"""
from __future__ import annotations

from hlox.core.avals import ShapedArray


class AbstractRef:
  """The type of a mutable reference to an array of type ``inner_aval``."""

  __slots__ = ("inner_aval", "__weakref__")
  array_abstraction_level = 1

  def __init__(self, inner_aval: ShapedArray):
    if isinstance(inner_aval, AbstractRef):
      raise TypeError("references to references are not supported: new_ref got a Ref")
    self.inner_aval = inner_aval

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  weak_type = property(lambda self: self.inner_aval.weak_type)
  ndim = property(lambda self: len(self.inner_aval.shape))
  size = property(lambda self: self.inner_aval.size)
  _sharding = None
  _vma = ()
  _ur = ()

  def __eq__(self, other):
    return type(other) is AbstractRef and other.inner_aval == self.inner_aval

  def __hash__(self):
    return hash((AbstractRef, self.inner_aval))

  def str_short(self, short_dtypes: bool = True, mesh_axis_types: bool = False) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def strip_weak_type(self) -> "AbstractRef":
    return self

  def strip_sharding(self) -> "AbstractRef":
    return self

  def to_tangent_aval(self) -> "AbstractRef":
    return AbstractRef(self.inner_aval.to_tangent_aval())

  def __repr__(self):
    return f"AbstractRef({self.inner_aval!r})"

  def __str__(self):
    return f"Ref{{{self.inner_aval.str_short(short_dtypes=False)}}}"


def is_ref_aval(aval) -> bool:
  return type(aval) is AbstractRef


class RefMeta(type):
  """Makes ``isinstance(x, Ref)`` hold for traced references too (tracers whose type is an
  ``AbstractRef``), as user code checks ``isinstance(x, jax.Ref)`` under ``jit``."""

  def __instancecheck__(cls, x):
    if type.__instancecheck__(cls, x):
      return True
    return type(getattr(x, "aval", None)) is AbstractRef


class Ref(metaclass=RefMeta):
  """A mutable array: read with ``ref[idx]``, write with ``ref[idx] = value``.

  Made by ``new_ref``. Eagerly it holds a device array (``_contents``) that writes replace;
  ``freeze`` hands that array out and invalidates the reference.
  """

  __slots__ = ("_contents", "_aval", "_frozen", "__weakref__")

  def __init__(self, value, aval: ShapedArray):
    self._contents = value
    self._aval = AbstractRef(aval)
    self._frozen = False

  @property
  def aval(self) -> AbstractRef:
    return self._aval

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  ndim = property(lambda self: self._aval.ndim)
  size = property(lambda self: self._aval.size)
  weak_type = property(lambda self: self._aval.weak_type)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def _value(self):
    """The current contents; an error once the reference has been frozen or freed."""
    if self._frozen:
      raise ValueError("Ref was used after it was invalidated by freeze or free_ref.")
    return self._contents

  def __getitem__(self, idx):
    return _ops["get"](self, idx)

  def __setitem__(self, idx, value):
    _ops["set"](self, idx, value)

  def get(self, idx=()):
    return _ops["get"](self, idx)

  def set(self, value, idx=()):
    _ops["set"](self, idx, value)

  def swap(self, value, idx=()):
    return _ops["swap"](self, idx, value)

  def addupdate(self, value, idx=()):
    _ops["addupdate"](self, idx, value)

  def freeze(self):
    return _ops["freeze"](self)

  @property
  def at(self):
    """``ref.at[idx]``: a view of part of the reference, read and written like one."""
    return _ops["at"](self)

  def unsafe_buffer_pointer(self):
    return self._value().unsafe_buffer_pointer()

  def block_until_ready(self):
    self._value().block_until_ready()
    return self

  def __repr__(self):
    if self._frozen:
      return f"Ref(<invalidated>, {self._aval})"
    text = repr(self._contents)
    return "Ref(" + text[text.index("(") + 1:] if text.startswith("Array(") else f"Ref({text})"

  def __str__(self):
    return repr(self)

  def __hash__(self):
    return id(self)

  def __eq__(self, other):
    return self is other

  def __iter__(self):
    raise TypeError("a Ref cannot be iterated over; read its value with ref[...] first")

  def __bool__(self):
    raise TypeError("the truth value of a Ref is ambiguous; read its value with ref[...]")


# get(ref, idx), set(ref, idx, value), swap(ref, idx, value), addupdate(ref, idx, value),
# freeze(ref): set by ``lax/state.py``.
_ops: dict = {}


def set_ref_ops(**ops) -> None:
  _ops.update(ops)
