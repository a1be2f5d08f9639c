"""``hlox.scipy.fft``: discrete cosine transforms (JAX's ``jax.scipy.fft``: DCT type 2 only).

The DCT-II of ``x`` (length ``N``) comes from one complex FFT (Makhoul's method): reorder
``x`` as its even-indexed samples followed by its odd-indexed ones reversed, take the FFT
``V``, and ``X_k = 2 Re(exp(-i pi k / 2N) V_k)``. The inverse (a scaled DCT-III) runs the
same steps backwards: weight the coefficients by ``exp(i pi k / 2N)``, inverse FFT, keep the
real part and undo the reordering. N-d transforms apply the 1-d ones axis by axis.

``norm`` is ``None``/``"backward"`` (SciPy's default scaling) or ``"ortho"``.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.numpy import util

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name: str, x, type, norm):  # noqa: A002 (SciPy's argument name)
  util.check_arraylike(name, x)
  if type != 2:
    raise NotImplementedError("Only DCT type 2 is implemented.")
  if norm is not None and norm not in ("backward", "ortho"):
    raise ValueError(f"scipy.fft.{name}: norm={norm!r} is not implemented")
  return jnp.asarray(x)


def _axis(name: str, axis, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _resize(x, sizes: dict):
  """Zero-pad (or crop) the axes in ``sizes`` at their ends."""
  if not sizes:
    return x
  config = [(0, sizes[a] - x.shape[a] if a in sizes else 0, 0) for a in range(x.ndim)]
  return lax.pad(x, np.zeros((), x.dtype), config)


def _along(values: np.ndarray, ndim: int, axis: int) -> np.ndarray:
  shape = [1] * ndim
  shape[axis] = values.size
  return values.reshape(shape)


def _even_then_odd_reversed(n: int) -> np.ndarray:
  """Makhoul's reordering: ``v = x[perm]``."""
  return np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]]).astype(np.int32)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None):
  """Discrete cosine transform of type 2 along ``axis`` (``scipy.fft.dct``); ``n`` pads
  or crops the input first."""
  x = _check("dct", x, type, norm)
  if jnp.iscomplexobj(x):
    return lax.complex(dct(x.real, type, n, axis, norm), dct(x.imag, type, n, axis, norm))
  axis = _axis("dct", axis, x.ndim)
  if n is not None:
    x = _resize(x, {axis: operator.index(n)})
  size = x.shape[axis]
  v = jnp.take(x, _even_then_odd_reversed(size), axis=axis)
  spectrum = jnp.fft.fft(v, axis=axis)
  k = np.arange(size)
  twiddle = np.exp(-0.5j * np.pi * k / size).astype(spectrum.dtype)
  out = 2 * (spectrum * _along(twiddle, x.ndim, axis)).real
  if norm == "ortho":
    scale = np.full(size, 1 / np.sqrt(2 * size))
    scale[:1] = 1 / np.sqrt(4 * size)
    out = out * _along(scale.astype(out.dtype), x.ndim, axis)
  return out


def idct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None):
  """Inverse of the type-2 DCT along ``axis`` (``scipy.fft.idct``)."""
  x = _check("idct", x, type, norm)
  if jnp.iscomplexobj(x):
    return lax.complex(idct(x.real, type, n, axis, norm), idct(x.imag, type, n, axis, norm))
  axis = _axis("idct", axis, x.ndim)
  if n is not None:
    x = _resize(x, {axis: operator.index(n)})
  x, = util.promote_dtypes_inexact(x)
  size = x.shape[axis]
  k = np.arange(size)
  # ifft divides by N; these weights give SciPy's scalings of the DCT-III.
  if norm == "ortho":
    weights = np.full(size, np.sqrt(2 * size))
    weights[:1] = np.sqrt(size)
  else:
    weights = np.ones(size)
    weights[:1] = 0.5
  complex_dtype = np.complex128 if x.dtype == np.float64 else np.complex64
  factor = (weights * np.exp(0.5j * np.pi * k / size)).astype(complex_dtype)
  v = jnp.fft.ifft(x * _along(factor, x.ndim, axis), axis=axis).real
  return jnp.take(v, np.argsort(_even_then_odd_reversed(size)).astype(np.int32), axis=axis)


def _nd_args(name: str, x, s, axes):
  if s is not None:
    try:
      s = [operator.index(n) for n in s]
    except TypeError:
      s = [operator.index(s)]
    if len(s) > x.ndim:
      raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = tuple(_axis(name, a, x.ndim) for a in (
        (axes,) if isinstance(axes, (int, np.integer)) else axes))
    if len(set(axes)) != len(axes):
      raise ValueError(f"{name}: repeated axis in axes={axes}")
  sizes = dict(zip(axes, s)) if s is not None else {}
  return axes, sizes


def dctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):  # noqa: A002
  """Multidimensional type-2 DCT over ``axes`` (``scipy.fft.dctn``); ``s`` pads or crops."""
  x = _check("dctn", x, type, norm)
  if jnp.iscomplexobj(x):
    return lax.complex(dctn(x.real, type, s, axes, norm), dctn(x.imag, type, s, axes, norm))
  axes, sizes = _nd_args("dctn", x, s, axes)
  x = _resize(x, sizes)
  for axis in axes:
    x = dct(x, axis=axis, norm=norm)
  return x


def idctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):  # noqa: A002
  """Inverse of ``dctn`` (``scipy.fft.idctn``)."""
  x = _check("idctn", x, type, norm)
  if jnp.iscomplexobj(x):
    return lax.complex(idctn(x.real, type, s, axes, norm),
                       idctn(x.imag, type, s, axes, norm))
  axes, sizes = _nd_args("idctn", x, s, axes)
  x = _resize(x, sizes)
  for axis in axes:
    x = idct(x, axis=axis, norm=norm)
  return x
