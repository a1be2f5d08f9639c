"""Abstract values: what a tracer knows about the array it stands for."""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes

_short_names = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "int4": "i4", "uint4": "u4",
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype_name(dtype) -> str:
  name = np.dtype(dtype).name
  if dtype == dtypes.float0:
    return "float0"
  return _short_names.get(name, name.replace("float8_", "f8_"))


class ShapedArray:
  """An array known only by its shape, dtype and weak-typedness."""

  __slots__ = ("shape", "dtype", "weak_type", "_hash")
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type: bool = False):
    self.shape = tuple(shape)
    self.dtype = np.dtype(dtype)
    self.weak_type = bool(weak_type)
    self._hash = hash((self.shape, self.dtype, self.weak_type))

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def size(self) -> int:
    return int(np.prod(self.shape, dtype=np.int64))

  def __eq__(self, other):
    return (type(other) is ShapedArray and self._hash == other._hash
            and self.shape == other.shape and self.dtype == other.dtype
            and self.weak_type == other.weak_type)

  def __hash__(self):
    return self._hash

  def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def str_short(self, short_dtypes: bool = True, mesh_axis_types: bool = False) -> str:
    name = short_dtype_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{name}[{','.join(str(d) for d in self.shape)}]"

  def to_tangent_aval(self) -> "ShapedArray":
    """The aval of a tangent: float0 for integer and boolean values (as in JAX)."""
    if dtypes.is_inexact(self.dtype):
      return self.update(weak_type=self.weak_type)
    return ShapedArray(self.shape, dtypes.float0, False)

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

  __str__ = str_short


def raise_to_shaped(aval):
  return aval
