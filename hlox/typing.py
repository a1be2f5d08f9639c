"""Type annotations for hlox code (JAX's ``jax.typing``).

``ArrayLike`` is anything hlox functions accept as an array argument; ``DTypeLike`` anything
accepted as a dtype. Use them in annotations of inputs; annotate outputs with ``hlox.Array``.
"""
from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from hlox.core.basearray import Array

__all__ = ["ArrayLike", "DTypeLike"]


@runtime_checkable
class SupportsDType(Protocol):
  """Any object with a ``dtype`` attribute (e.g. an array, or ``ShapeDtypeStruct``)."""

  @property
  def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]
