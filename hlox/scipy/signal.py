"""``hlox.scipy.signal``: convolutions and spectral analysis (JAX's ``jax.scipy.signal``).

- ``convolve``/``correlate`` (N-d) and ``convolve2d``/``correlate2d`` run as one
  ``lax.conv_general_dilated`` (``method="fft"`` uses ``fftconvolve``); only
  ``boundary="fill"`` with ``fillvalue=0`` is supported, as in JAX.
- ``fftconvolve`` multiplies spectra (``rfftn`` for real inputs); ``axes=`` maps the other
  axes with ``vmap``.
- ``detrend`` removes a constant or a piecewise-linear least-squares fit.
- ``stft``, ``istft``, ``csd`` and ``welch`` share one windowed-FFT helper. Defaults follow
  JAX, which differs from SciPy in one place: with a named window and no ``nperseg``, the
  segment is the whole signal (SciPy uses 256). Windows other than ``"hann"`` come from
  SciPy's ``get_window`` (an optional dependency, as in JAX).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import vmap
from hlox.lax.fft import to_complex_dtype
from hlox.numpy import util

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend",
           "stft", "istft", "csd", "welch"]

_MODES = ("full", "same", "valid")


def _asarrays(name, *args):
  util.check_arraylike(name, *args)
  return [jnp.asarray(a) for a in args]


def _canonical_axis(axis, ndim: int, name: str) -> int:
  return util.canonicalize_axis(axis, ndim, name)


# --- convolution -------------------------------------------------------------------------

def fftconvolve(in1, in2, mode: str = "full", axes=None):
  """Convolve two N-d arrays by multiplying their Fourier transforms
  (``scipy.signal.fftconvolve``).

  ``axes`` names the convolved axes; the others are matched elementwise (their sizes must
  agree).
  """
  in1, in2 = _asarrays("fftconvolve", in1, in2)
  in1, in2 = util.promote_dtypes_inexact(in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError(f"fftconvolve: in1 and in2 should have the same dimensionality, got "
                     f"shapes {in1.shape} and {in2.shape}")
  if mode not in _MODES:
    raise ValueError("mode must be one of ['same', 'full', 'valid']")
  conv = lambda a, b: _fftconvolve_unbatched(a, b, mode)
  if axes is None:
    return conv(in1, in2)
  axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
  axes = tuple(_canonical_axis(ax, in1.ndim, "fftconvolve") for ax in axes)
  mapped = sorted(set(range(in1.ndim)) - set(axes))
  if any(in1.shape[i] != in2.shape[i] for i in mapped):
    raise ValueError(f"fftconvolve: mapped axes must have same shape; got in1.shape="
                     f"{in1.shape} in2.shape={in2.shape} axes={axes}")
  # Map innermost first so that each vmap's axis number refers to the unmapped array.
  for ax in mapped:
    conv = vmap(conv, in_axes=ax, out_axes=ax)
  return conv(in1, in2)


def _fftconvolve_unbatched(in1, in2, mode: str):
  full_shape = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
  if mode == "valid":
    bigger = all(a >= b for a, b in zip(in1.shape, in2.shape))
    smaller = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (bigger or smaller):
      raise ValueError("For 'valid' mode, One input must be at least as large as the other "
                       "in every dimension.")
    if smaller:
      in1, in2 = in2, in1
  if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
    conv = in1 * in2  # an outer product: no transform needed
  else:
    complex_input = jnp.iscomplexobj(in1)
    forward = jnp.fft.fftn if complex_input else jnp.fft.rfftn
    inverse = jnp.fft.ifftn if complex_input else jnp.fft.irfftn
    conv = inverse(forward(in1, full_shape) * forward(in2, full_shape), full_shape)
  if mode == "full":
    out_shape = full_shape
  elif mode == "same":
    out_shape = in1.shape
  else:
    out_shape = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape))
  start = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
  return lax.slice(conv, start, tuple(s + o for s, o in zip(start, out_shape)))


def _convolve_nd(in1, in2, mode: str, precision, name: str):
  if mode not in _MODES:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  in1, in2 = _asarrays(name, in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                     f"shapes {in1.shape} and {in2.shape}")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                     f"{in1.shape} and {in2.shape}.")
  in1, in2 = util.promote_dtypes_inexact(in1, in2)
  bigger = all(a >= b for a, b in zip(in1.shape, in2.shape))
  smaller = all(a <= b for a, b in zip(in1.shape, in2.shape))
  if not (bigger or smaller):
    raise ValueError(f"{name}: one input must be smaller than the other in every dimension, "
                     f"got shapes {in1.shape} and {in2.shape}.")
  shape_o = in2.shape
  if smaller:
    in1, in2 = in2, in1
  shape = in2.shape
  # XLA convolutions are correlations: flip the kernel.
  kernel = jnp.flip(in2)
  if mode == "valid":
    padding = [(0, 0)] * len(shape)
  elif mode == "same":
    padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2)
               for s, so in zip(shape, shape_o)]
  else:
    padding = [(s - 1, s - 1) for s in shape]
  out = lax.conv_general_dilated(in1[None, None], kernel[None, None], (1,) * len(shape),
                                 padding, precision=precision)
  return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
  """N-dimensional convolution (``scipy.signal.convolve``); ``mode`` is ``"full"``,
  ``"same"`` or ``"valid"``, ``method`` ``"auto"``/``"direct"`` (one XLA convolution) or
  ``"fft"``."""
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method in ("direct", "auto"):
    return _convolve_nd(in1, in2, mode, precision, "convolve")
  raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
  """N-dimensional cross-correlation (``scipy.signal.correlate``): the convolution with
  the flipped conjugate of ``in2``."""
  in2, = _asarrays("correlate", in2)
  return convolve(in1, jnp.flip(jnp.conj(in2)), mode, method=method, precision=precision)


def _check_2d(name, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs, got shapes "
                     f"{np.shape(in1)} and {np.shape(in2)}.")


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
               precision=None):
  """Two-dimensional convolution (``scipy.signal.convolve2d``, zero fill only)."""
  util.check_arraylike("convolve2d", in1, in2)
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd(in1, in2, mode, precision, "convolve2d")


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0,
                precision=None):
  """Two-dimensional cross-correlation (``scipy.signal.correlate2d``, zero fill only).

  As in SciPy, when ``in2`` is the larger input the result is the correlation with the
  roles swapped (flipped), which is what ``mode="same"``/``"valid"`` are defined by.
  """
  in1, in2 = _asarrays("correlate2d", in1, in2)
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  conv = lambda a, b: _convolve_nd(a, b, mode, precision, "correlate2d")
  in2_larger = all(a <= b for a, b in zip(in1.shape, in2.shape))
  same_shape = in1.shape == in2.shape
  if mode == "same" or (mode == "valid" and not (in2_larger and not same_shape)) or (
      mode == "full" and not in2_larger):
    return jnp.flip(conv(jnp.flip(in1), jnp.conj(in2)))
  if mode == "valid":
    return conv(jnp.flip(in2), jnp.conj(in1))
  return jnp.conj(conv(jnp.flip(in2), jnp.conj(in1)))


# --- detrending --------------------------------------------------------------------------

def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):  # noqa: A002
  """Remove the mean (``type="constant"``) or a least-squares line (``"linear"``, one per
  stretch between the breakpoints ``bp``) along ``axis`` (``scipy.signal.detrend``)."""
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ("constant", "linear"):
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  data, = _asarrays("detrend", data)
  data, = util.promote_dtypes_inexact(data)
  if type == "constant":
    return data - data.mean(axis, keepdims=True)
  axis = _canonical_axis(axis, data.ndim, "detrend")
  n = data.shape[axis]
  bps = np.sort(np.unique(np.r_[0, bp, n]))
  if bps[0] < 0 or bps[-1] > n:
    raise ValueError("Breakpoints must be non-negative and less than length of data along "
                     "given axis.")
  moved = jnp.moveaxis(data, axis, 0)
  pieces = []
  for lo, hi in zip(bps[:-1], bps[1:]):
    pieces.append(_remove_line(moved[int(lo):int(hi)], int(hi - lo)))
  return jnp.moveaxis(jnp.concatenate(pieces, axis=0), 0, axis)


def _remove_line(y, npts: int):
  """``y`` (fit along axis 0) minus its least-squares line: the fit of ``a + b t`` is the
  mean plus the slope times the centred abscissa, the slope being cov(t, y) / var(t)."""
  mean = y.mean(0, keepdims=True)
  if npts < 2:  # one point: the line goes through it
    return y - mean
  dtype = y.dtype
  t = np.arange(npts, dtype=np.float64)
  t = (t - t.mean()).reshape((npts,) + (1,) * (y.ndim - 1))
  t = jnp.asarray(t.astype(np.finfo(dtype).dtype))
  slope = jnp.sum(t * (y - mean), axis=0, keepdims=True) / jnp.sum(t * t)
  return y - mean - slope * t


# --- windowed FFTs -----------------------------------------------------------------------

def _hann(n: int, dtype):
  if n == 1:
    return jnp.ones(1, dtype)
  return (jnp.sin(jnp.linspace(0, np.pi, n, endpoint=False)) ** 2).astype(dtype)


def _named_window(window, n: int, dtype):
  if isinstance(window, str) and window == "hann":
    return _hann(n, dtype)
  try:
    # SciPy is optional (as in JAX): imported only when a window other than hann is named.
    from scipy.signal import get_window
  except ImportError as err:
    raise ImportError(f"scipy must be available to use window={window!r}") from err
  return jnp.asarray(get_window(window, n), dtype=dtype)


def _window_and_length(window, nperseg, input_length: int, dtype):
  """The window array and the segment length (JAX's rules, see the module docstring)."""
  if isinstance(window, (str, tuple)):
    n = input_length if nperseg is None else int(nperseg)
    if n > input_length:
      warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                    f"nperseg={input_length}")
      n = input_length
    return _named_window(window, n, dtype), n
  win = jnp.asarray(window, dtype=dtype)
  n = win.size if nperseg is None else int(nperseg)
  if win.ndim != 1:
    raise ValueError("window must be 1-D")
  if input_length < win.size:
    raise ValueError("window is longer than input signal")
  if n != win.size:
    raise ValueError("value specified for nperseg is different from length of window")
  return win, n


def _odd_ext(x, n: int, axis: int = -1):
  """Extend ``x`` by ``n`` points at each end, point-symmetric about the end values."""
  if n < 1:
    return x
  if n > x.shape[axis] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                     f"x.shape[axis]-1, which is {x.shape[axis] - 1}.")
  left = lax.slice_in_dim(x, 0, 1, axis=axis)
  right = lax.slice_in_dim(x, x.shape[axis] - 1, x.shape[axis], axis=axis)
  left_ext = jnp.flip(lax.slice_in_dim(x, 1, n + 1, axis=axis), axis=axis)
  right_ext = jnp.flip(lax.slice_in_dim(x, x.shape[axis] - n - 1, x.shape[axis] - 1,
                                        axis=axis), axis=axis)
  return jnp.concatenate([2 * left - left_ext, x, 2 * right - right_ext], axis=axis)


def _pad_ends(mode, **kwargs):
  def pad(x, n, axis=-1):
    width = [(0, 0)] * x.ndim
    width[axis] = (n, n)
    return jnp.pad(x, width, mode, **kwargs)
  return pad


_BOUNDARIES = {"even": _pad_ends("reflect"), "odd": _odd_ext, "constant": _pad_ends("edge"),
               "zeros": _pad_ends("constant", constant_values=0.0), None: None}


def _segments_fft(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int, sides: str):
  """Windowed FFTs of the overlapping segments of ``x`` (along its last axis): shape
  ``(..., segments, frequencies)``."""
  if not jnp.issubdtype(x.dtype, np.inexact):
    x = x.astype(win.dtype)
  length = x.shape[-1]
  if nperseg == 1 and noverlap == 0:
    segs = x[..., None]
  else:
    starts = np.arange(0, length - nperseg + 1, nperseg - noverlap)
    segs = x[..., starts[:, None] + np.arange(nperseg)[None, :]]  # one gather
  segs = detrend_func(segs)
  if jnp.iscomplexobj(win) and not jnp.iscomplexobj(segs):
    segs = segs.astype(to_complex_dtype(segs.dtype))
  segs = win * segs
  if sides == "twosided":
    return jnp.fft.fft(segs, n=nfft)
  return jnp.fft.rfft(segs.real, n=nfft)


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
  if mode not in ("psd", "stft"):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARIES:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARIES)}")
  if y is None:
    x, = _asarrays("spectral_helper", x)
    x, = util.promote_dtypes_inexact(x)
    axis = _canonical_axis(axis, x.ndim, "spectral_helper")
    outer_shape = x.shape[:axis] + x.shape[axis + 1:]
  else:
    if mode != "psd":
      raise ValueError("two-argument mode is available only when mode=='psd'")
    x, y = _asarrays("spectral_helper", x, y)
    x, y = util.promote_dtypes_inexact(x, y)
    if x.ndim != y.ndim:
      raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    axis = _canonical_axis(axis, x.ndim, "spectral_helper")
    try:
      outer_shape = jnp.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:],
                                         y.shape[:axis] + y.shape[axis + 1:])
    except ValueError as err:
      raise ValueError("x and y cannot be broadcast together.") from err

  result_dtype = to_complex_dtype(x.dtype)
  freq_dtype = np.finfo(result_dtype).dtype
  if nperseg is not None:
    nperseg = int(nperseg)
    if nperseg < 1:
      raise ValueError("nperseg must be a positive integer")
  win, nperseg = _window_and_length(window, nperseg, x.shape[axis], x.dtype)
  noverlap = nperseg // 2 if noverlap is None else int(noverlap)
  nfft = nperseg if nfft is None else int(nfft)

  if y is None and x.size == 0:
    return (jnp.zeros(x.shape, freq_dtype), jnp.zeros(x.shape, freq_dtype),
            jnp.zeros(x.shape, result_dtype))
  if y is not None and (x.size == 0 or y.size == 0):
    shape = tuple(outer_shape[:axis]) + (min(x.shape[axis], y.shape[axis]),) + tuple(
        outer_shape[axis:])
    return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
            jnp.zeros(shape, result_dtype))

  x = jnp.moveaxis(x, axis, -1)
  if y is not None and y.ndim > 1:
    y = jnp.moveaxis(y, axis, -1)
  if y is not None and x.shape[-1] != y.shape[-1]:
    # The shorter signal is zero-padded to the longer one's length.
    if x.shape[-1] < y.shape[-1]:
      x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (y.shape[-1] - x.shape[-1],),
                                        x.dtype)], -1)
    else:
      y = jnp.concatenate([y, jnp.zeros(y.shape[:-1] + (x.shape[-1] - y.shape[-1],),
                                        x.dtype)], -1)

  if nfft < nperseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg - noverlap
  if boundary is not None:
    extend = _BOUNDARIES[boundary]
    x = extend(x, nperseg // 2, axis=-1)
    if y is not None:
      y = extend(y, nperseg // 2, axis=-1)
  if padded:
    # Zero-pad so that the segments cover the signal exactly.
    nadd = (-(x.shape[-1] - nperseg) % step) % nperseg
    x = jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (nadd,), x.dtype)], -1)
    if y is not None:
      y = jnp.concatenate([y, jnp.zeros(y.shape[:-1] + (nadd,), x.dtype)], -1)

  if isinstance(detrend_type, str):
    detrend_func = lambda d: detrend(d, type=detrend_type, axis=-1)
  elif callable(detrend_type):
    if axis != -1:
      # As JAX: the user's function sees the segments with ``axis`` moved last.
      def detrend_func(d):
        return jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)
    else:
      detrend_func = detrend_type
  elif not detrend_type:
    detrend_func = lambda d: d
  else:
    raise ValueError(f"Unsupported detrend type: {detrend_type}")

  if scaling == "density":
    scale = 1.0 / (fs * (win * win).sum())
  elif scaling == "spectrum":
    scale = 1.0 / win.sum() ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    scale = jnp.sqrt(scale)
  scale = jnp.asarray(scale)
  scale = scale.astype(to_complex_dtype(scale.dtype))

  sides = "onesided" if return_onesided else "twosided"
  if return_onesided and (jnp.iscomplexobj(x) or (y is not None and jnp.iscomplexobj(y))):
    sides = "twosided"
    warnings.warn("Input data is complex, switching to return_onesided=False")
  if sides == "twosided":
    freqs = jnp.fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype)
  else:
    freqs = jnp.fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype)

  result = _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, sides)
  if y is not None:
    result = jnp.conj(result) * _segments_fft(y, win, detrend_func, nperseg, noverlap, nfft,
                                              sides)
  elif mode == "psd":
    result = jnp.conj(result) * result
  result = result * scale
  if sides == "onesided" and mode == "psd":
    # Every frequency but DC (and Nyquist, nfft even) stands for its negative too.
    end = result.shape[-1] if nfft % 2 else result.shape[-1] - 1
    result = result.at[..., 1:end].multiply(2)

  time = jnp.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap,
                    dtype=freq_dtype) / fs
  if boundary is not None:
    time = time - (nperseg / 2) / fs
  result = result.astype(result_dtype)
  if y is None and mode != "stft":
    result = result.real
  return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None,
         detrend=False, return_onesided: bool = True, boundary="zeros",
         padded: bool = True, axis: int = -1):
  """Short-time Fourier transform (``scipy.signal.stft``): frequencies, segment times and
  the spectra ``Zxx`` (frequencies before segments, at ``axis``)."""
  return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                          return_onesided, scaling="spectrum", axis=axis, mode="stft",
                          boundary=boundary, padded=padded)


def _median_bias(n: int) -> float:
  """How much the median of ``n`` periodograms underestimates their mean (Allen et al.,
  FINDCHIRP, appendix B)."""
  ii = np.arange(2.0, n, 2)
  return 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
  """Cross power spectral density by Welch's method (``scipy.signal.csd``); ``y=None``
  gives the power spectral density of ``x``."""
  freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                   return_onesided, scaling, axis, mode="psd")
  if y is not None:
    pxy = pxy + 0j  # complex even when x is y
  if pxy.ndim >= 2 and pxy.size > 0:
    if pxy.shape[-1] > 1:
      if average == "median":
        bias = np.asarray(_median_bias(pxy.shape[-1])).astype(pxy.dtype)
        if jnp.iscomplexobj(pxy):
          pxy = (jnp.median(jnp.real(pxy), axis=-1)
                 + 1j * jnp.median(jnp.imag(pxy), axis=-1))
        else:
          pxy = jnp.median(pxy, axis=-1)
        pxy = pxy / bias
      elif average == "mean":
        pxy = pxy.mean(axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      pxy = jnp.reshape(pxy, pxy.shape[:-1])
  return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
  """Power spectral density by Welch's method (``scipy.signal.welch``)."""
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, pxx.real


def _overlap_and_add(x, step: int):
  """Sum frames ``x[..., frames, frame_length]`` placed ``step`` apart."""
  *batch, nframes, seg_len = x.shape
  out_len = step * (nframes - 1) + seg_len
  flat = x.reshape((math.prod(batch), nframes, seg_len))
  # Cut each frame into pieces of ``step`` samples: piece j of frame i lands at block i + j.
  npieces = -(-seg_len // step)
  flat = jnp.pad(flat, ((0, 0), (0, 0), (0, npieces * step - seg_len)))
  pieces = flat.reshape((flat.shape[0], nframes, npieces, step))
  total = jnp.zeros((flat.shape[0], nframes + npieces - 1, step), x.dtype)
  for j in range(npieces):
    total = total.at[:, j:j + nframes].add(pieces[:, :, j])
  out = total.reshape((flat.shape[0], -1))[:, :out_len]
  return out.reshape(tuple(batch) + (out_len,))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
  """Inverse short-time Fourier transform (``scipy.signal.istft``): times and the signal,
  by windowed overlap-add."""
  Zxx, = _asarrays("istft", Zxx)
  if Zxx.ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  freq_axis = _canonical_axis(freq_axis, Zxx.ndim, "istft")
  time_axis = _canonical_axis(time_axis, Zxx.ndim, "istft")
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  Zxx = Zxx.astype(to_complex_dtype(Zxx.dtype))
  n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nperseg = int(nperseg or n_default)
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:
    nfft = n_default
    if input_onesided and nperseg == n_default + 1:
      nfft += 1  # odd nperseg, no FFT padding
  else:
    nfft = int(nfft)
  if nfft < nperseg:
    raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
  noverlap = int(noverlap or nperseg // 2)
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  step = nperseg - noverlap

  if time_axis != Zxx.ndim - 1 or freq_axis != Zxx.ndim - 2:
    outer = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
    Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
  inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
  xsubs = inverse(Zxx, axis=-2, n=nfft)[..., :nperseg, :]
  if isinstance(window, (str, tuple)):
    win = _named_window(window, nperseg, xsubs.dtype)
  else:
    win = jnp.asarray(window)
    if win.ndim != 1:
      raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
      raise ValueError(f"window must have length of {nperseg}")
  xsubs = xsubs * win.sum()  # undo stft's 'spectrum' scaling
  win = lax.expand_dims(win, tuple(range(xsubs.ndim - 2)) + (xsubs.ndim - 1,))
  x = _overlap_and_add(jnp.swapaxes(xsubs * win, -2, -1), step)
  win_sq = jnp.repeat(win * win, xsubs.shape[-1], axis=-1)
  norm = _overlap_and_add(jnp.swapaxes(win_sq, -2, -1), step)
  if boundary:
    half = nperseg // 2
    x = x[..., half:x.shape[-1] - half]
    norm = norm[..., half:norm.shape[-1] - half]
  x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if x.ndim > 1 and time_axis != Zxx.ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    x = jnp.moveaxis(x, -1, time_axis)
  time = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return time, x
