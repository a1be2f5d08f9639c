"""Questions about arrays and values: ``array_equal``, ``array_equiv``, ``isscalar``,
``iterable``, ``iscomplexobj``, ``isrealobj``, ``iscomplex``, ``isreal``.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, ufuncs, util
from hlox.core.extended_functions import refused as _refused

__all__ = ["array_equal", "array_equiv", "isscalar", "iscomplexobj", "isrealobj", "iscomplex",
           "isreal", "iterable"]


def array_equal(a1, a2, equal_nan=False):
  """Whether the arrays have the same shape and entries (a bool Array)."""
  try:
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
  except Exception:
    return creation.asarray(False)
  try:
    if get_aval(a1).shape != get_aval(a2).shape:
      return creation.asarray(False)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "array_equal", a1, a2, equal_nan)
  eq = a1 == a2
  if equal_nan:
    eq = eq | (ufuncs.isnan(a1) & ufuncs.isnan(a2))
  return reductions.all(eq)


def array_equiv(a1, a2):
  """Whether the arrays broadcast together and are equal everywhere."""
  try:
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
    util.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
  except Exception:
    return creation.asarray(False)
  return reductions.all(a1 == a2)


def isscalar(element):
  """True for Python/NumPy scalars and 0-d arrays."""
  if hasattr(element, "__jax_array__"):
    element = element.__jax_array__()
  if isinstance(element, (bool, int, float, complex, np.generic)):
    return True
  aval = getattr(element, "aval", None)
  if aval is not None:
    return aval.ndim == 0
  return isinstance(element, np.ndarray) and element.ndim == 0


def iterable(y):
  """Whether ``iter(y)`` works."""
  try:
    iter(y)
  except TypeError:
    return False
  return True


def iscomplexobj(x):
  """Whether ``x`` has a complex dtype."""
  if x is None:
    return False
  if isinstance(x, (list, tuple)):  # a nested sequence: complex if any element is
    return any(iscomplexobj(v) for v in x)
  if not hasattr(x, "dtype"):
    x = util.from_jax_array(x)
  try:
    dtype = x.dtype
  except AttributeError:
    dtype = dtypes.result_type(x)
  return dtypes.is_complex(dtype)


def isrealobj(x):
  """Whether ``x`` does not have a complex dtype."""
  return not iscomplexobj(x)


def iscomplex(x):
  """Elementwise: a non-zero imaginary part."""
  util.check_arraylike("iscomplex", x)
  i = ufuncs.imag(x)
  return i != (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


def isreal(x):
  """Elementwise: a zero imaginary part."""
  util.check_arraylike("isreal", x)
  i = ufuncs.imag(x)
  return i == (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["iscomplex", "isreal"], {},
                    staged=("iscomplex", "isreal"))
