"""The fast Fourier transform primitive ``fft_p`` (JAX's ``lax.fft`` and ``lax.FftType``).

One primitive covers the four transforms of ``stablehlo.fft`` over the last
``len(fft_lengths)`` (1 to 3) dimensions of its operand:

- ``FFT`` / ``IFFT``: complex to complex, same shape (``IFFT`` divides by the number of
  points, as NumPy's ``ifftn`` does);
- ``RFFT``: real to complex, the last transformed dimension shrinks to ``n // 2 + 1``
  (the other half of the spectrum is the conjugate mirror of the first);
- ``IRFFT``: complex to real, the inverse of ``RFFT``; the output lengths are the
  ``fft_lengths`` (they cannot be inferred from the half spectrum, whose last dimension
  must be ``fft_lengths[-1] // 2 + 1``).

Every transform is linear, so its JVP applies it to the tangent. Transposes: the DFT matrix
is symmetric, so ``FFT`` and ``IFFT`` are their own transposes; ``RFFT`` and ``IRFFT``
transpose into each other, weighted by how many times each stored coefficient stands for
itself in the full spectrum (once for the DC and, for even lengths, the Nyquist term, twice
for every other), with conjugations for JAX's complex convention (cotangents pair with
tangents as ``Re(sum(ct * t))``, no conjugate).
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax.elementwise import conj, convert_element_type, mul
from hlox.lax.shapes import broadcast_in_dim
from hlox.lax.utils import standard_primitive

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["fft", "fft_p", "FftType"]


class FftType(enum.IntEnum):
  """Which transform ``lax.fft`` computes."""

  FFT = 0
  "Forward complex-to-complex FFT."

  IFFT = 1
  "Inverse complex-to-complex FFT."

  RFFT = 2
  "Forward real-to-complex FFT."

  IRFFT = 3
  "Inverse real-to-complex FFT."


_FFT_TYPE_NAMES = {name: typ for typ in FftType for name in (typ.name, typ.name.lower())}

# XLA's FFT handles at most this many trailing dimensions; jnp.fft composes longer ones.
MAX_FFT_DIMS = 3


def _fft_type_of(fft_type) -> FftType:
  if isinstance(fft_type, FftType):
    return fft_type
  if isinstance(fft_type, str):
    typ = _FFT_TYPE_NAMES.get(fft_type)
    if typ is None:
      raise ValueError(f"Unknown FFT type '{fft_type}'")
    return typ
  raise TypeError(f"Unknown FFT type value '{fft_type}'")


def to_inexact_dtype(dtype) -> np.dtype:
  """The float dtype JAX's FFTs compute an integer or bool ``dtype`` in (by its width)."""
  return dtypes.to_inexact_dtype(dtype)


def to_complex_dtype(dtype) -> np.dtype:
  """complex128 for (widened) float64, complex64 for everything narrower."""
  inexact = to_inexact_dtype(dtype)
  wide = inexact in (np.dtype(np.float64), np.dtype(np.complex128))
  return dtypes.canonicalize_dtype(np.complex128 if wide else np.complex64)


def _real_dtype(dtype) -> np.dtype:
  return np.finfo(dtype).dtype


def _complex_dtype(dtype) -> np.dtype:
  return np.dtype(np.complex128 if np.dtype(dtype) == np.float64 else np.complex64)


# --- abstract evaluation -----------------------------------------------------------------

def _fft_shape_rule(x, *, fft_type, fft_lengths):
  _fft_dtype_rule(x, fft_type=fft_type, fft_lengths=fft_lengths)  # dtype errors first, as JAX
  k = len(fft_lengths)
  if k == 0 or k > MAX_FFT_DIMS:
    raise ValueError(f"fft: fft_lengths must name 1 to {MAX_FFT_DIMS} dimensions, got "
                     f"fft_lengths {fft_lengths} (use hlox.numpy.fft.fftn for more)")
  if k > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                     f"dimensions as fft_lengths {fft_lengths}.")
  if any(n < 0 for n in fft_lengths):
    raise ValueError(f"fft: fft_lengths must be non-negative, got {fft_lengths}")
  minor = x.shape[-k:]
  if fft_type == FftType.IRFFT:
    if minor[:-1] != fft_lengths[:-1]:
      raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to all "
                       f"except the last fft_length, got fft_lengths={fft_lengths}")
    if minor[-1] != fft_lengths[-1] // 2 + 1:
      raise ValueError(f"IRFFT input shape {x.shape}: the last dimension must be "
                       f"fft_lengths[-1] // 2 + 1 = {fft_lengths[-1] // 2 + 1}, got "
                       f"fft_lengths={fft_lengths}")
    return x.shape[:-k] + tuple(fft_lengths)
  if minor != tuple(fft_lengths):
    name = "RFFT" if fft_type == FftType.RFFT else "FFT"
    raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                     f"fft_lengths {fft_lengths}")
  if fft_type == FftType.RFFT:
    return x.shape[:-k] + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
  return x.shape


def _fft_dtype_rule(x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    return _complex_dtype(x.dtype)
  if not dtypes.is_complex(x.dtype):
    name = "IRFFT" if fft_type == FftType.IRFFT else "FFT"
    raise ValueError(f"{name} input must be complex64 or complex128, got {x.dtype}")
  return _real_dtype(x.dtype) if fft_type == FftType.IRFFT else x.dtype


fft_p = standard_primitive(_fft_shape_rule, _fft_dtype_rule, "fft",
                           weak_type_rule=lambda x, **params: False)


# --- lowering ----------------------------------------------------------------------------

# cuFFT assumes Hermitian symmetry in every dimension of a multi-dimensional complex-to-real
# transform, where NumPy (and XLA:CPU) use only the last dimension's half spectrum. On these
# platforms a multi-dimensional IRFFT is an IFFT over the leading lengths, then a 1-d IRFFT.
IRFFT_SPLIT_PLATFORMS = {"cuda", "rocm", "gpu"}


def _fft_hlo(x, fft_type: FftType, fft_lengths):
  return hlo.fft(x, hlo.FftTypeAttr.get(fft_type.name), xla.dense_i64(fft_lengths))


def _split_irfft_hlo(x, rank: int, fft_lengths):
  first = rank - len(fft_lengths)  # where the transformed block starts
  # Bring the half-spectrum axis to the front of the block, IFFT the others (now last).
  to_front = list(range(rank))
  to_front.insert(first, to_front.pop(-1))
  x = hlo.transpose(x, xla.dense_i64(to_front))
  x = _fft_hlo(x, FftType.IFFT, fft_lengths[:-1])
  back = list(range(rank))
  back.append(back.pop(first))
  x = hlo.transpose(x, xla.dense_i64(back))
  return _fft_hlo(x, FftType.IRFFT, fft_lengths[-1:])


def _fft_lowering(ctx, x, *, fft_type, fft_lengths):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if 0 in aval_in.shape or 0 in aval_out.shape:
    # An empty operand or result: the transform of nothing is all zeros (an RFFT of length
    # 0 has one zero coefficient). A constant keeps zero-size plans away from FFT libraries
    # (XLA:CPU happens to accept them).
    return xla.full_like_aval(0, aval_out)
  if (fft_type == FftType.IRFFT and len(fft_lengths) > 1
      and ctx.module_context.platform in IRFFT_SPLIT_PLATFORMS):
    return _split_irfft_hlo(x, aval_in.ndim, fft_lengths)
  return _fft_hlo(x, fft_type, fft_lengths)


xla.register_lowering(fft_p, _fft_lowering)


# --- transposition and batching ----------------------------------------------------------

def _hermitian_weights(n: int, dtype) -> np.ndarray:
  """How many coefficients of the full length-``n`` spectrum each stored RFFT coefficient
  stands for: 1 for DC (and Nyquist, ``n`` even), 2 for the others."""
  weights = np.full(n // 2 + 1, 2.0)
  weights[0] = 1.0
  if n % 2 == 0:
    weights[-1] = 1.0
  return weights.astype(dtype)


def _along_last(values: np.ndarray, shape):
  """``values`` (1-D) broadcast along the last dimension of ``shape``."""
  return broadcast_in_dim(values, tuple(shape), (len(shape) - 1,))


def _rfft_transpose(ct, fft_lengths):
  # RFFT keeps the first n//2+1 rows of the DFT matrix. IRFFT of a half spectrum reads it as
  # a Hermitian full spectrum, so dividing by the weights undoes the doubling and
  # conjugation turns the inverse DFT's kernel into the forward one's.
  aval = get_aval(ct)
  inv_weights = _along_last(1.0 / _hermitian_weights(fft_lengths[-1], aval.dtype),
                            aval.shape)
  x = fft_p.bind(mul(conj(ct), inv_weights), fft_type=FftType.IRFFT,
                 fft_lengths=fft_lengths)
  return mul(x, np.array(math.prod(fft_lengths), get_aval(x).dtype))


def _irfft_transpose(ct, fft_lengths):
  # IRFFT reads each stored coefficient (weight times) into the full spectrum, then applies
  # the inverse DFT (kernel conj, scaled by 1/N): the transpose is the forward half
  # spectrum, weighted and scaled, conjugated for JAX's convention.
  x = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  aval = get_aval(x)
  weights = _hermitian_weights(fft_lengths[-1], aval.dtype) / math.prod(fft_lengths)
  return conj(mul(x, _along_last(weights.astype(aval.dtype), aval.shape)))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  # The DFT matrix (and its inverse) is symmetric.
  return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


ad.deflinear(fft_p, _fft_transpose)


def _fft_batch_rule(vals, dims, *, fft_type, fft_lengths):
  x, = vals
  bdim, = dims
  # The transform works on trailing dimensions; a batch dimension among the leading ones
  # can stay where it is.
  if bdim >= get_aval(x).ndim - len(fft_lengths):
    x, bdim = batching.moveaxis(x, bdim, 0), 0
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), bdim


batching.primitive_batchers[fft_p] = _fft_batch_rule


# --- the lax function --------------------------------------------------------------------

def fft(x, fft_type, fft_lengths):
  """Fast Fourier transform over the last ``len(fft_lengths)`` dimensions of ``x`` (1 to 3).

  ``fft_type`` is a ``FftType`` or its name: ``'fft'`` and ``'ifft'`` are complex-to-complex,
  ``'rfft'`` real-to-complex (the last dimension shrinks to ``n // 2 + 1``), ``'irfft'``
  complex-to-real (``fft_lengths`` gives the real output lengths). The operand is converted
  first: to a complex dtype for ``fft``/``ifft``/``irfft`` (int32 to complex64, int64 to
  complex128), to a float dtype for ``rfft`` (complex operands raise). Empty ``fft_lengths``
  returns the converted operand. Linear: differentiable and batched under ``vmap``.

  Args:
    x: input array.
    fft_type: a ``FftType`` or its name.
    fft_lengths: the transform lengths of the trailing dimensions.

  Returns:
    The transformed array.

  Examples:
    >>> lax.fft(jnp.array([1., 2., 3., 4.]), 'rfft', (4,))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    >>> lax.fft(jnp.array([10. + 0j, -2 + 2j, -2]), 'irfft', (4,))
    Array([1., 2., 3., 4.], dtype=float32)
  """
  typ = _fft_type_of(fft_type)
  try:
    fft_lengths = tuple(operator.index(n) for n in fft_lengths)
  except TypeError:
    raise TypeError(f"fft: fft_lengths must be a sequence of integers, got "
                    f"{fft_lengths!r}") from None
  dtype = get_aval(x).dtype
  if typ == FftType.RFFT:
    if dtypes.is_complex(dtype):
      raise ValueError("only real valued inputs supported for rfft")
    x = convert_element_type(x, to_inexact_dtype(dtype))
  else:
    x = convert_element_type(x, to_complex_dtype(dtype))
  if not fft_lengths:
    return x
  return fft_p.bind(x, fft_type=typ, fft_lengths=fft_lengths)
