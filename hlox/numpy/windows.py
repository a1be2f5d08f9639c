"""Window functions of ``M`` points in the default float dtype: ``hanning``, ``hamming``,
``blackman``, ``bartlett`` and ``kaiser``.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox.core import dtypes
from hlox.numpy import arithmetic, creation, ufuncs

__all__ = ["hanning", "hamming", "blackman", "bartlett", "kaiser"]


def _window(M, fn):
  M = operator.index(M)
  dtype = dtypes.default_float_dtype()
  if M <= 0:
    return creation.zeros(0, dtype)
  if M == 1:
    return creation.ones(1, dtype)
  n = creation.arange(M, dtype=dtype)
  return fn(n, M)


def hanning(M):
  """The Hann window of ``M`` points.

  Args:
    M: the number of points (a static int; 0 gives an empty array, 1 gives ``[1.]``).

  Returns:
    A 1-d array of ``M`` values of the default floating dtype, largest in the middle.

  Examples:
    >>> jnp.hanning(4)  # doctest: +ELLIPSIS
    Array([0. ..., 0.75..., 0.7..., 0. ...], dtype=float32)
  """
  return _window(M, lambda n, M: 0.5 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1)))


def hamming(M):
  """The Hamming window of ``M`` points.

  Args:
    M: the number of points (a static int; 0 gives an empty array, 1 gives ``[1.]``).

  Returns:
    A 1-d array of ``M`` values of the default floating dtype, largest in the middle.

  Examples:
    >>> jnp.hamming(4)  # doctest: +ELLIPSIS
    Array([0.08..., 0.77..., 0.77..., 0.08...], dtype=float32)
  """
  return _window(M, lambda n, M: 0.54 - 0.46 * ufuncs.cos(2 * np.pi * n / (M - 1)))


def blackman(M):
  """The Blackman window of ``M`` points.

  Args:
    M: the number of points (a static int; 0 gives an empty array, 1 gives ``[1.]``).

  Returns:
    A 1-d array of ``M`` values of the default floating dtype, largest in the middle.

  Examples:
    >>> w = jnp.blackman(5)
    >>> jnp.allclose(w, jnp.array([0., 0.34, 1., 0.34, 0.]), atol=1e-6)
    Array(True, dtype=bool)
  """
  return _window(M, lambda n, M: 0.42 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1)) +
                 0.08 * ufuncs.cos(4 * np.pi * n / (M - 1)))


def bartlett(M):
  """The Bartlett (triangular) window of ``M`` points.

  Args:
    M: the number of points (a static int; 0 gives an empty array, 1 gives ``[1.]``).

  Returns:
    A 1-d array of ``M`` values of the default floating dtype, largest in the middle.

  Examples:
    >>> jnp.bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
  """
  return _window(M, lambda n, M: 1 - ufuncs.abs(2 * n - M + 1) / (M - 1))


def kaiser(M, beta):
  """The Kaiser window of ``M`` points.

  Args:
    M: the number of points (a static int; 0 gives an empty array, 1 gives ``[1.]``).
    beta: the shape parameter (0 gives a rectangular window; larger is narrower).

  Returns:
    A 1-d array of ``M`` values of the default floating dtype, largest in the middle.

  Examples:
    >>> jnp.kaiser(4, 2.0)  # doctest: +ELLIPSIS
    Array([0.4386..., 0.9243..., 0.9243..., 0.4386...], dtype=float32)
  """
  M = operator.index(M)
  dtype = dtypes.default_float_dtype()
  if M <= 0:
    return creation.zeros(0, dtype)
  if M == 1:
    return creation.ones(1, dtype)
  n = creation.arange(M, dtype=dtype)
  alpha = (M - 1) / 2.0
  return (arithmetic.i0(beta * ufuncs.sqrt(1 - ((n - alpha) / alpha) ** 2))
          / arithmetic.i0(creation.asarray(beta, dtype)))
