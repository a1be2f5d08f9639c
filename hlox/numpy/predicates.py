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
  """Whether two arrays have the same shape and the same elements.

  Inputs that cannot be converted to arrays, or whose shapes differ, are simply unequal (no
  error). Values are compared after the usual dtype promotion, so ``[1, 2]`` equals ``[1., 2.]``.
  The answer is a 0-d bool Array, so it can be traced.

  Args:
    a1: first array-like.
    a2: second array-like.
    equal_nan: whether NaNs in the same positions count as equal. Default False.

  Returns:
    A 0-d bool array.

  Examples:
    >>> jnp.array_equal(jnp.array([1, 2]), jnp.array([1., 2.]))
    Array(True, dtype=bool)
    >>> jnp.array_equal(jnp.array([1, 2]), jnp.array([[1, 2]]))
    Array(False, dtype=bool)
    >>> jnp.array_equal(jnp.array([jnp.nan]), jnp.array([jnp.nan]), equal_nan=True)
    Array(True, dtype=bool)

  See also:
    :func:`hlox.numpy.array_equiv`, :func:`hlox.numpy.allclose`.
  """
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
  """Whether two arrays are equal everywhere after broadcasting them together.

  Unlike :func:`hlox.numpy.array_equal` the shapes need only be broadcast-compatible. Inputs that
  cannot be converted or broadcast are unequal (no error).

  Args:
    a1: first array-like.
    a2: second array-like.

  Returns:
    A 0-d bool array.

  Examples:
    >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]]))
    Array(True, dtype=bool)
    >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([1, 2, 3]))
    Array(False, dtype=bool)

  See also:
    :func:`hlox.numpy.array_equal`.
  """
  try:
    a1, a2 = creation.asarray(a1), creation.asarray(a2)
    util.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
  except Exception:
    return creation.asarray(False)
  return reductions.all(a1 == a2)


def isscalar(element):
  """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array.

  Unlike NumPy's ``isscalar``, 0-d arrays (hlox Arrays, tracers and NumPy arrays) count as
  scalars, since hlox has no separate scalar type. Lists and higher-dimensional arrays do not.

  Args:
    element: any Python object.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.isscalar(3.0), jnp.isscalar(jnp.array(3.0))
    (True, True)
    >>> jnp.isscalar(jnp.array([3.0])), jnp.isscalar([3.0])
    (False, False)
  """
  if hasattr(element, "__jax_array__"):
    element = element.__jax_array__()
  if isinstance(element, (bool, int, float, complex, np.generic)):
    return True
  aval = getattr(element, "aval", None)
  if aval is not None:
    return aval.ndim == 0
  return isinstance(element, np.ndarray) and element.ndim == 0


def iterable(y):
  """Whether ``iter(y)`` succeeds.

  Note that 0-d arrays are not iterable.

  Args:
    y: any Python object.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.iterable([1, 2]), jnp.iterable(jnp.array([1, 2]))
    (True, True)
    >>> jnp.iterable(jnp.array(1)), jnp.iterable(5)
    (False, False)
  """
  try:
    iter(y)
  except TypeError:
    return False
  return True


def iscomplexobj(x):
  """Whether ``x`` has a complex dtype (whatever its values).

  Only the dtype is checked: a complex array with zero imaginary parts is still complex. Lists and
  tuples are complex if any element is; None is not.

  Args:
    x: an array, scalar, dtype-carrying object or nested sequence.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.iscomplexobj(jnp.array([1+0j])), jnp.iscomplexobj(jnp.array([1.]))
    (True, False)
    >>> jnp.iscomplexobj([1, 2j])
    True

  See also:
    :func:`hlox.numpy.iscomplex` for an elementwise test of the values.
  """
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
  """Whether ``x`` does not have a complex dtype (whatever its values).

  It is ``not iscomplexobj(x)``: only the dtype is checked.

  Args:
    x: an array, scalar, dtype-carrying object or nested sequence.

  Returns:
    A Python bool.

  Examples:
    >>> jnp.isrealobj(jnp.array([1.])), jnp.isrealobj(jnp.array([1+0j]))
    (True, False)

  See also:
    :func:`hlox.numpy.isreal` for an elementwise test of the values.
  """
  return not iscomplexobj(x)


def iscomplex(x):
  """Test elementwise whether the imaginary part is non-zero.

  Real inputs give False everywhere.

  Args:
    x: input array or scalar.

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.iscomplex(jnp.array([1+1j, 2+0j]))
    Array([ True, False], dtype=bool)
    >>> jnp.iscomplex(jnp.array([1., 2.]))
    Array([False, False], dtype=bool)

  See also:
    :func:`hlox.numpy.isreal`, :func:`hlox.numpy.iscomplexobj`.
  """
  util.check_arraylike("iscomplex", x)
  i = ufuncs.imag(x)
  return i != (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


def isreal(x):
  """Test elementwise whether the imaginary part is zero.

  Real inputs give True everywhere.

  Args:
    x: input array or scalar.

  Returns:
    A bool array of ``x``'s shape.

  Examples:
    >>> jnp.isreal(jnp.array([1+1j, 2+0j]))
    Array([False,  True], dtype=bool)
    >>> jnp.isreal(jnp.array([1., 2.]))
    Array([ True,  True], dtype=bool)

  See also:
    :func:`hlox.numpy.iscomplex`, :func:`hlox.numpy.isrealobj`.
  """
  util.check_arraylike("isreal", x)
  i = ufuncs.imag(x)
  return i == (0 if get_aval(i).ndim == 0 else np.zeros((), get_aval(i).dtype))


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(globals(), ["iscomplex", "isreal"], {},
                    staged=("iscomplex", "isreal"))
