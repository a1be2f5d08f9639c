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
  """The Hann window of ``M`` points."""
  return _window(M, lambda n, M: 0.5 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1)))


def hamming(M):
  """The Hamming window of ``M`` points."""
  return _window(M, lambda n, M: 0.54 - 0.46 * ufuncs.cos(2 * np.pi * n / (M - 1)))


def blackman(M):
  """The Blackman window of ``M`` points."""
  return _window(M, lambda n, M: 0.42 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1)) +
                 0.08 * ufuncs.cos(4 * np.pi * n / (M - 1)))


def bartlett(M):
  """The Bartlett (triangular) window of ``M`` points."""
  return _window(M, lambda n, M: 1 - ufuncs.abs(2 * n - M + 1) / (M - 1))


def kaiser(M, beta):
  """The Kaiser window of ``M`` points with shape parameter ``beta``."""
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
