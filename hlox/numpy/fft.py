"""``hlox.numpy.fft``: NumPy's discrete Fourier transforms (JAX's ``jax.numpy.fft``).

Every transform funnels into ``_fft_core``: move the transformed axes to the end, crop or
zero-pad them to the requested lengths ``s``, apply ``lax.fft`` (which handles up to three
trailing dimensions; more are done three or two at a time, as JAX does), scale for ``norm``
and move the axes back. Dtypes follow JAX: integers become complex64 (int64 under x64:
complex128), ``rfft`` of float16 is an error, ``irfft`` returns the real dtype.

``norm`` is NumPy's: ``"backward"`` (or None; the inverse divides by the number of points),
``"ortho"`` (both directions divide by its square root) or ``"forward"`` (the forward
transform divides).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax import elementwise as lax_ew
from hlox.lax import shapes as lax_shapes
from hlox.lax.fft import MAX_FFT_DIMS, FftType, fft as lax_fft, to_inexact_dtype
from hlox.numpy import creation, shapes, ufuncs, util

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(norm):
  if not isinstance(norm, (str, type(None))) or norm not in _NORMS:
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or '
                     '"forward".')


def _norm_factor(func_name: str, norm, s) -> float | None:
  """The scale ``norm`` puts on the result, or None when there is nothing to scale."""
  if norm in (None, "backward"):
    return None
  n = math.prod(s)
  inverse = func_name.startswith("i")
  if norm == "ortho":
    return math.sqrt(n) if inverse else 1 / math.sqrt(n)
  return n if inverse else 1 / n


def _canonical_axes(full_name: str, axes, ndim: int) -> tuple:
  try:
    axes = tuple(operator.index(ax) for ax in axes)
  except TypeError:
    raise TypeError(f"{full_name}: axes must be a sequence of integers, got {axes!r}") \
        from None
  if len(axes) != len(set(axes)):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {list(axes)}.")
  for ax in axes:
    if not -ndim <= ax < ndim:
      raise ValueError(f"{full_name}: axis {ax} is out of bounds for array of dimension "
                       f"{ndim}")
  canonical = tuple(ax % ndim for ax in axes)
  if len(set(canonical)) != len(canonical):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {list(axes)}.")
  return canonical


def _crop_or_pad(arr, in_s):
  """``arr`` cut down or zero-padded at the end of each dimension to the sizes ``in_s``."""
  shape = get_aval(arr).shape
  if any(want < have for want, have in zip(in_s, shape)):
    arr = lax_shapes.slice(arr, (0,) * len(shape), tuple(min(w, h) for w, h in
                                                         zip(in_s, shape)))
    shape = get_aval(arr).shape
  if any(want > have for want, have in zip(in_s, shape)):
    zero = np.zeros((), get_aval(arr).dtype)
    arr = lax_shapes.pad(arr, zero, tuple((0, w - h, 0) for w, h in zip(in_s, shape)))
  return arr


def _fft_core(func_name: str, fft_type: FftType, a, s, axes, norm):
  full_name = f"jax.numpy.fft.{func_name}"
  util.check_arraylike(full_name, a)
  _check_norm(norm)
  arr = creation.asarray(a)
  ndim = arr.ndim

  if s is not None:
    try:
      s = tuple(operator.index(n) for n in s)
    except TypeError:
      raise TypeError(f"{full_name}: s must be a sequence of integers, got {s!r}") from None
    if any(n <= 0 for n in s):
      raise ValueError(f"{full_name}: Shape should be positive, got s={s}.")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError(f"{full_name}: Shape and axes have different lengths, got s={s} and "
                     f"axes={tuple(axes)}.")

  orig_axes = axes
  if axes is None:
    if s is None:
      axes = tuple(range(ndim))
    else:
      if len(s) > ndim:
        raise ValueError(f"{full_name}: s={s} has more entries than the input has "
                         f"dimensions ({arr.shape})")
      axes = tuple(range(ndim - len(s), ndim))
  else:
    axes = _canonical_axes(full_name, axes, ndim)
    # The transform works on trailing dimensions: bring the axes there, in their order.
    trailing = tuple(range(ndim - len(axes), ndim))
    arr = shapes.moveaxis(arr, axes, trailing)
    axes = trailing

  if s is not None:
    in_s = list(arr.shape)
    for ax, n in zip(axes, s):
      in_s[ax] = n
    if fft_type == FftType.IRFFT:
      in_s[-1] = in_s[-1] // 2 + 1  # the half spectrum that a length-n output needs
    arr = _crop_or_pad(arr, in_s)
  elif fft_type == FftType.IRFFT:
    s = tuple(arr.shape[ax] for ax in axes[:-1])
    if axes:
      s += (max(0, 2 * (arr.shape[axes[-1]] - 1)),)
  else:
    s = tuple(arr.shape[ax] for ax in axes)

  out = _fft_nd(arr, fft_type, s)
  factor = _norm_factor(func_name, norm, s)
  if factor is not None:
    out = lax_ew.mul(out, np.array(factor, get_aval(out).dtype))
  if orig_axes is not None:
    out = shapes.moveaxis(out, axes, orig_axes)
  return out


def _fft_nd(arr, fft_type: FftType, s):
  """``lax.fft`` over the last ``len(s)`` dimensions, in blocks of at most three."""
  if len(s) <= MAX_FFT_DIMS:
    return lax_fft(arr, fft_type, tuple(s))
  # Transform the last n dimensions with the requested type, and the leading ones with
  # complex FFTs (after the real-to-complex step, or before the complex-to-real one).
  n = 2 if len(s) == 4 else 3
  ndim = arr.ndim
  src = tuple(range(ndim - len(s), ndim - n))
  dst = tuple(range(ndim - len(s) + n, ndim))
  if fft_type in (FftType.FFT, FftType.RFFT):
    arr = lax_fft(arr, fft_type, tuple(s[-n:]))
    arr = shapes.moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.FFT, s[:-n])
    return shapes.moveaxis(arr, dst, src)
  arr = shapes.moveaxis(arr, src, dst)
  arr = _fft_nd(arr, FftType.IFFT, s[:-n])
  arr = shapes.moveaxis(arr, dst, src)
  return lax_fft(arr, fft_type, tuple(s[-n:]))


def _axis_check_1d(func_name: str, axis):
  if isinstance(axis, (list, tuple)):
    full_name = f"jax.numpy.fft.{func_name}"
    raise ValueError(f"{full_name} does not support multiple axes. Please use {full_name}n. "
                     f"Got axis = {axis!r}.")


def _fft_core_1d(func_name: str, fft_type: FftType, a, n, axis, norm):
  _axis_check_1d(func_name, axis)
  if n is not None:
    try:
      n = operator.index(n)
    except TypeError:
      raise TypeError(f"jax.numpy.fft.{func_name}: n must be an integer, got {n!r}") from None
  # axis=None transforms every axis, as in JAX.
  axes = None if axis is None else [axis]
  s = None if n is None else [n]
  return _fft_core(func_name, fft_type, a, s, axes, norm)


def _fft_core_2d(func_name: str, fft_type: FftType, a, s, axes, norm):
  if axes is None or len(axes) != 2:
    raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return _fft_core(func_name, fft_type, a, s, axes, norm)


# --- complex transforms ------------------------------------------------------------------

def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional discrete Fourier transform along ``axis`` (``numpy.fft.fft``).

  ``n`` crops or zero-pads the input along ``axis`` first; ``norm`` is ``"backward"``
  (default, no scaling), ``"ortho"`` (``1/sqrt(n)``) or ``"forward"`` (``1/n``).
  """
  return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional inverse discrete Fourier transform along ``axis``
  (``numpy.fft.ifft``)."""
  return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def fft2(a, s=None, axes=(-2, -1), norm: str | None = None):
  """Two-dimensional discrete Fourier transform over ``axes`` (``numpy.fft.fft2``)."""
  return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm: str | None = None):
  """Two-dimensional inverse discrete Fourier transform (``numpy.fft.ifft2``)."""
  return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def fftn(a, s=None, axes=None, norm: str | None = None):
  """N-dimensional discrete Fourier transform (``numpy.fft.fftn``).

  ``s`` gives the lengths of the transformed axes (crop or zero-pad), ``axes`` which axes
  (default: the last ``len(s)``, or all).
  """
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm: str | None = None):
  """N-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``)."""
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


# --- real transforms ---------------------------------------------------------------------

def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional FFT of a real input: the ``n // 2 + 1`` non-negative frequency terms
  (``numpy.fft.rfft``)."""
  return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """Inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)`` for ``m``
  input terms) from its non-negative frequency terms (``numpy.fft.irfft``)."""
  return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def rfft2(a, s=None, axes=(-2, -1), norm: str | None = None):
  """Two-dimensional FFT of a real input (``numpy.fft.rfft2``)."""
  return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm: str | None = None):
  """Inverse of ``rfft2`` (``numpy.fft.irfft2``)."""
  return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm: str | None = None):
  """N-dimensional FFT of a real input; the last axis keeps ``s[-1] // 2 + 1`` terms
  (``numpy.fft.rfftn``)."""
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm: str | None = None):
  """Inverse of ``rfftn`` (``numpy.fft.irfftn``): ``s`` gives the output lengths."""
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# --- Hermitian transforms ----------------------------------------------------------------

def _hermitian_axis_length(func_name: str, arr, axis) -> int:
  _axis_check_1d(func_name, axis)
  try:
    ax = operator.index(axis)
  except TypeError:
    raise TypeError(f"jax.numpy.fft.{func_name}: axis must be an integer, got {axis!r}") from None
  if not -arr.ndim <= ax < arr.ndim:
    raise ValueError(f"jax.numpy.fft.{func_name}: axis {ax} is out of bounds for array of "
                     f"dimension {arr.ndim}")
  return arr.shape[ax]


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """FFT of a signal with Hermitian symmetry, given by its first half: a real spectrum of
  length ``n`` (default ``2 * (m - 1)``) (``numpy.fft.hfft``)."""
  util.check_arraylike("jax.numpy.fft.hfft", a)
  conj_a = ufuncs.conj(a)
  m = _hermitian_axis_length("hfft", conj_a, axis)
  nn = 2 * (m - 1) if n is None else n
  # irfft divides by the length; the Hermitian forward transform does not.
  out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
  return lax_ew.mul(out, np.array(nn, get_aval(out).dtype))


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """Inverse of ``hfft``: the first ``n // 2 + 1`` terms of the Hermitian spectrum of a
  real signal (``numpy.fft.ihfft``)."""
  util.check_arraylike("jax.numpy.fft.ihfft", a)
  arr = creation.asarray(a)
  m = _hermitian_axis_length("ihfft", arr, axis)
  nn = m if n is None else n
  out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
  return lax_ew.mul(ufuncs.conj(out), np.array(1 / nn, get_aval(out).dtype))


# --- frequencies and shifts --------------------------------------------------------------

def _check_freq_args(func_name: str, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of jax.numpy.fft.{func_name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of jax.numpy.fft.{func_name} only takes a single value. "
                     f"Got d = {list(d)}.")
  try:
    return operator.index(n)
  except TypeError:
    raise TypeError(f"jax.numpy.fft.{func_name}: n must be an integer, got {n!r}") from None


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an ``n``-point FFT with sample spacing ``d``: ``[0, 1, ...,
  n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)`` (``numpy.fft.fftfreq``)."""
  n = _check_freq_args("fftfreq", n, d)
  out_dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
  # Computed in the (real) float dtype, then cast, as JAX does for integer or complex dtype.
  dtype = np.finfo(to_inexact_dtype(out_dtype)).dtype
  i = np.arange(n, dtype=dtype)
  k = (i + n // 2) % n - n // 2
  result = ufuncs.true_divide(creation.asarray(k, dtype=dtype),
                              creation.asarray(d * n, dtype=dtype))
  return creation.asarray(result, dtype=out_dtype, device=device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``
  (``numpy.fft.rfftfreq``)."""
  n = _check_freq_args("rfftfreq", n, d)
  dtype = dtypes.canonicalize_dtype(dtype or dtypes.default_float_dtype())
  k = creation.arange(0, n // 2 + 1, dtype=dtype)
  result = ufuncs.true_divide(k, creation.asarray(d * n, dtype=dtype))
  return result if device is None else creation.asarray(result, device=device)


def _shift(func_name: str, x, axes, sign: int):
  util.check_arraylike(f"jax.numpy.fft.{func_name}", x)
  x = creation.asarray(x)
  if axes is None:
    axes = tuple(range(x.ndim))
    shift = [sign * (dim // 2) for dim in x.shape]
  elif isinstance(axes, (int, np.integer)):
    shift = sign * (x.shape[axes] // 2)
  else:
    axes = tuple(axes)
    shift = [sign * (x.shape[ax] // 2) for ax in axes]
  return shapes.roll(x, shift, axes)


def fftshift(x, axes=None):
  """Move the zero-frequency term to the centre of ``axes`` (default all)
  (``numpy.fft.fftshift``)."""
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """The inverse of ``fftshift`` (``numpy.fft.ifftshift``)."""
  return _shift("ifftshift", x, axes, -1)
