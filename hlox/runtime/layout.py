"""Device-local memory layouts (JAX's ``jax.experimental.layout``): ``Layout``, ``Format``.

A ``Layout`` says in which order an array's dimensions lie in one device's memory
(``major_to_minor``: the slowest-varying dimension first; row-major is ``(0, 1, ..., n-1)``),
with XLA's optional tiling. ``Layout.AUTO`` lets the compiler choose. A ``Format`` pairs a
layout with a sharding; ``jit`` takes Formats as in/out shardings, ``device_put`` as a
destination, and ``Array.format`` / ``Compiled.input_formats`` report them.

Layouts reach XLA as ``mhlo.layout_mode`` attributes on the entry function's arguments and
results ("default", "auto" or the minor-to-major list, e.g. "{0,1}"); jaxlib reports the
compiled ones (``get_parameter_layouts``) and a buffer's own (``_pjrt_layout``).
"""
from __future__ import annotations

from hlox.runtime.sharding import Sharding

__all__ = ["AutoLayout", "Format", "Layout", "buffer_layout", "default_layout",
           "from_pjrt_layout", "is_platform_default", "layout_mode"]


class AutoLayout:
  """The type of ``Layout.AUTO``: the compiler picks the layout."""

  def __repr__(self):
    return "AUTO"

  def __reduce__(self):
    return "AUTO_LAYOUT"


AUTO_LAYOUT = AutoLayout()


class Layout:
  """A device-local layout: ``major_to_minor`` (dimension order, outermost first), XLA's
  ``tiling`` (a tuple of tile shapes, or None) and ``sub_byte_element_size_in_bits``."""

  AUTO = AUTO_LAYOUT

  __slots__ = ("major_to_minor", "tiling", "sub_byte_element_size_in_bits")

  def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
    self.major_to_minor = tuple(int(d) for d in major_to_minor)
    self.tiling = None if tiling is None else tuple(tuple(int(n) for n in t) for t in tiling)
    self.sub_byte_element_size_in_bits = int(sub_byte_element_size_in_bits)

  def _key(self):
    return self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits

  def __eq__(self, other):
    return isinstance(other, Layout) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")

  def update(self, **kwargs) -> "Layout":
    """A copy with the given fields replaced."""
    fields = dict(major_to_minor=self.major_to_minor, tiling=self.tiling,
                  sub_byte_element_size_in_bits=self.sub_byte_element_size_in_bits)
    unknown = set(kwargs) - set(fields)
    if unknown:
      raise TypeError(f"Layout.update() got unexpected keyword arguments {sorted(unknown)}")
    fields.update(kwargs)
    return Layout(**fields)

  def check_compatible_aval(self, shape) -> None:
    """ValueError unless the layout has one entry per dimension of ``shape``."""
    if len(self.major_to_minor) != len(shape):
      raise ValueError("Length of major_to_minor and the rank of the value should match. "
                       f"Got major_to_minor={self.major_to_minor} and shape={tuple(shape)}")

  def is_default(self) -> bool:
    """Row-major without tiling: what every platform's host transfers use."""
    return (self.tiling in (None, ()) and self.sub_byte_element_size_in_bits == 0
            and self.major_to_minor == tuple(range(len(self.major_to_minor))))


class Format:
  """A ``layout`` (a ``Layout``, ``Layout.AUTO`` or None: the default) with a ``sharding``
  (a ``Sharding`` or None: jit decides). A concrete layout needs a concrete sharding."""

  __slots__ = ("layout", "sharding")

  def __init__(self, layout=None, sharding=None):
    if isinstance(layout, Layout) and sharding is None:
      raise ValueError(
          f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
          "`jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` to the "
          f"sharding argument. Got sharding {sharding}")
    if not isinstance(layout, (Layout, AutoLayout, type(None))):
      raise TypeError("Invalid value received for the layout argument. Expected values are "
                      "`None`, `Layout.AUTO` or an instance of `Layout`. Got "
                      f"{layout} of type {type(layout)}")
    if not isinstance(sharding, (Sharding, type(None))):
      raise TypeError("Invalid value received for the sharding argument. Expected values are "
                      f"`None` or an instance of `jax.Sharding`. Got {sharding} of type "
                      f"{type(sharding)}")
    self.layout = layout
    self.sharding = sharding

  def __eq__(self, other):
    return (isinstance(other, Format) and self.layout == other.layout
            and self.sharding == other.sharding)

  def __hash__(self):
    return hash((self.layout, self.sharding))

  def __repr__(self):
    return f"Format(layout={self.layout}, sharding={self.sharding})"


# Platforms whose arrays are laid out row-major without tiling unless asked otherwise (TPU's
# default layouts are tiled, depending on the dtype and shape).
_ROW_MAJOR_PLATFORMS = frozenset({"cpu", "gpu", "cuda", "rocm"})


def is_platform_default(layout, sharding) -> bool:
  """Whether ``layout`` is what the devices of ``sharding`` give an array anyway (so asking
  for it changes nothing); False where that cannot be told without the array's type."""
  if not isinstance(layout, Layout) or not layout.is_default() or sharding is None:
    return False
  devices = getattr(sharding, "_device_assignment", None)
  return bool(devices) and all(getattr(d, "platform", None) in _ROW_MAJOR_PLATFORMS
                               for d in devices)


def default_layout(ndim: int) -> Layout:
  """Row-major: the layout of arrays made without asking for another."""
  return Layout(tuple(range(ndim)))


def from_pjrt_layout(pjrt_layout) -> Layout:
  """A ``Layout`` from jaxlib's ``PjRtLayout`` (which lists dimensions minor to major)."""
  xla = pjrt_layout._xla_layout()
  tiling = tuple(tuple(t) for t in xla.tiling()) or None
  return Layout(tuple(xla.minor_to_major())[::-1], tiling, xla.element_size_in_bits())


def buffer_layout(buf, ndim: int) -> Layout:
  """The layout of a jaxlib buffer (row-major where jaxlib reports none)."""
  try:
    return from_pjrt_layout(buf._pjrt_layout)
  except Exception:  # a buffer of a platform without layouts
    return default_layout(ndim)


def layout_mode(layout, ndim: int) -> str:
  """The ``mhlo.layout_mode`` attribute's value for ``layout`` (None: the default)."""
  if layout is None:
    return "default"
  if isinstance(layout, AutoLayout):
    return "auto"
  layout.check_compatible_aval(range(ndim))
  if layout.tiling not in (None, ()) or layout.sub_byte_element_size_in_bits:
    raise NotImplementedError(f"hlox: tiled layouts ({layout}) are not supported; only "
                              "dimension orders (major_to_minor) are")
  return "{" + ",".join(str(d) for d in layout.major_to_minor[::-1]) + "}"
