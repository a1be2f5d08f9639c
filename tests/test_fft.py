"""lax.fft and hlox.numpy.fft against NumPy: values and dtypes, every transform's derivatives
(check_grads, forward and reverse, order 2, float64), vmap against a loop, jit against eager,
bad input, and the same programs run in JAX (the oracle)."""
import importlib.util
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64

from tests.check_grads import check_grads
from tests.util import assert_close, rand, run_in_jax

RNG = np.random.default_rng(0)
FftType = lax.FftType

JAX_FFT_NAMES = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2",
                 "ifftn", "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft",
                 "rfft2", "rfftfreq", "rfftn"]


def test_public_names():
  assert set(JAX_FFT_NAMES) <= set(dir(jnp.fft))
  assert lax.fft is not None and [t.name for t in FftType] == ["FFT", "IFFT", "RFFT", "IRFFT"]
  assert [int(t) for t in FftType] == [0, 1, 2, 3]


# --- lax.fft -----------------------------------------------------------------------------

def _np_fft(x, fft_type, lengths):
  axes = tuple(range(-len(lengths), 0))
  if fft_type == FftType.FFT:
    return np.fft.fftn(x, axes=axes)
  if fft_type == FftType.IFFT:
    return np.fft.ifftn(x, axes=axes)
  if fft_type == FftType.RFFT:
    return np.fft.rfftn(x, axes=axes)
  return np.fft.irfftn(x, s=lengths, axes=axes)


def _lax_input(rng, fft_type, batch, lengths, dtype):
  """A random operand of ``lax.fft``: real for RFFT, a half spectrum for IRFFT."""
  if fft_type == FftType.IRFFT:
    real = rng.standard_normal(batch + tuple(lengths))
    return np.fft.rfftn(real, axes=tuple(range(-len(lengths), 0))).astype(dtype)
  return rand(rng, batch + tuple(lengths), dtype)


_REAL_OF = {np.complex64: np.float32, np.complex128: np.float64}
_COMPLEX_OF = {np.float32: np.complex64, np.float64: np.complex128}


@pytest.mark.parametrize("fft_type", list(FftType), ids=lambda t: t.name)
@pytest.mark.parametrize("lengths", [(8,), (5,), (1,), (4, 6), (3, 5), (2, 3, 4), (3, 3, 5)])
@pytest.mark.parametrize("wide", [False, True], ids=["32", "64"])
def test_lax_fft_matches_numpy(fft_type, lengths, wide):
  real = fft_type == FftType.RFFT
  dtype = (np.float64 if wide else np.float32) if real else (
      np.complex128 if wide else np.complex64)
  out_dtype = _COMPLEX_OF[dtype] if real else (
      _REAL_OF[dtype] if fft_type == FftType.IRFFT else dtype)
  with enable_x64(wide):
    x = _lax_input(np.random.default_rng(len(lengths)), fft_type, (2,), lengths, dtype)
    out = lax.fft(x, fft_type, lengths)
    scale = 10 if not wide else 1
    wide_x = x.astype(np.float64 if real else np.complex128)
    assert_close(out, _np_fft(wide_x, fft_type, lengths), out_dtype,
                 rtol=1e-5 * scale if not wide else 1e-12,
                 atol=1e-5 * scale * np.prod(lengths) if not wide else 1e-11)


def test_lax_fft_accepts_names_and_converts_dtypes():
  x = np.arange(8, dtype=np.int32)
  assert lax.fft(x, "fft", (8,)).dtype == np.complex64
  assert lax.fft(x, "FFT", (8,)).dtype == np.complex64
  assert lax.fft(x, "rfft", (8,)).dtype == np.complex64
  assert lax.fft(x.astype(np.int8), FftType.IFFT, (8,)).dtype == np.complex64
  assert lax.fft(x.astype(np.bool_), FftType.FFT, (8,)).dtype == np.complex64
  assert lax.fft(x.astype(np.float16), FftType.FFT, (8,)).dtype == np.complex64
  assert lax.fft(x.astype(np.float32), "irfft", (14,)).dtype == np.float32
  assert_close(lax.fft(x, "fft", (8,)), np.fft.fft(x), np.complex64)
  # Empty fft_lengths: only the conversion.
  assert_close(lax.fft(x, "fft", ()), x.astype(np.complex64), np.complex64)
  with enable_x64():
    # JAX widens integers by width, not to the default float.
    assert lax.fft(x, "fft", (8,)).dtype == np.complex64
    assert lax.fft(x.astype(np.int64), "fft", (8,)).dtype == np.complex128
    assert lax.fft(x.astype(np.int64), "rfft", (8,)).dtype == np.complex128
    assert lax.fft(x.astype(np.float64), "irfft", (14,)).dtype == np.float64
  # Without x64, float64 NumPy input is float32.
  assert lax.fft(x.astype(np.float64), "rfft", (8,)).dtype == np.complex64


def test_lax_fft_empty():
  assert_close(lax.fft(np.ones((3, 0), np.complex64), "fft", (0,)),
               np.zeros((3, 0), np.complex64), np.complex64)
  assert_close(lax.fft(np.ones((2, 1), np.complex64), "irfft", (0,)),
               np.zeros((2, 0), np.float32), np.float32)
  assert_close(lax.fft(np.ones((2, 1), np.complex64), "irfft", (1,)),
               np.ones((2, 1), np.float32), np.float32)


@pytest.mark.parametrize("call,error,match", [
    (lambda: lax.fft(np.ones(4, np.complex64), "rfft", (4,)), ValueError,
     "only real valued inputs supported for rfft"),
    (lambda: lax.fft(np.ones(4, np.float16), "rfft", (4,)), ValueError,
     "RFFT input must be float32 or float64, got float16"),
    (lambda: lax.fft(np.ones(4, np.float32), "sideways", (4,)), ValueError,
     "Unknown FFT type 'sideways'"),
    (lambda: lax.fft(np.ones(4, np.float32), 3, (4,)), TypeError, "Unknown FFT type value"),
    (lambda: lax.fft(np.ones(4, np.float32), "fft", (5,)), ValueError,
     r"FFT input shape \(4,\) minor dimensions must be equal to fft_lengths \(5,\)"),
    (lambda: lax.fft(np.ones(4, np.float32), "fft", (4, 4)), ValueError,
     "must have at least as many input dimensions as fft_lengths"),
    (lambda: lax.fft(np.ones((2,) * 4, np.float32), "fft", (2,) * 4), ValueError,
     "1 to 3 dimensions"),
    (lambda: lax.fft(np.ones(4, np.complex64), "irfft", (5,)), ValueError,
     r"fft_lengths\[-1\] // 2 \+ 1 = 3"),
    (lambda: lax.fft(np.ones((3, 4), np.complex64), "irfft", (2, 6)), ValueError,
     "all except the last fft_length"),
    (lambda: lax.fft(np.ones(4, np.float32), "fft", 4), TypeError, "fft_lengths"),
])
def test_lax_fft_bad_input(call, error, match):
  with pytest.raises(error, match=match):
    call()


@pytest.mark.parametrize("lengths", [(4, 6), (3, 5), (2, 3, 4)])
def test_split_irfft_lowering(monkeypatch, lengths):
  """The GPU lowering of a multi-dimensional IRFFT (an IFFT then a 1-d IRFFT), checked here
  by turning it on for the CPU."""
  fft_module = sys.modules["hlox.lax.fft"]  # hlox.lax.fft is the function
  monkeypatch.setattr(fft_module, "IRFFT_SPLIT_PLATFORMS", {"cpu"})
  hlox.clear_caches()
  try:
    x = _lax_input(np.random.default_rng(11), FftType.IRFFT, (2,), lengths, np.complex64)
    x = x + 0.1j  # not the half spectrum of a real signal: only the last axis is Hermitian
    out = hlox.jit(lambda x: lax.fft(x, FftType.IRFFT, lengths))(x)
    text = hlox.jit(lambda x: lax.fft(x, FftType.IRFFT, lengths)).lower(x).as_text()
  finally:
    monkeypatch.undo()
    hlox.clear_caches()
  assert "IFFT" in text and "transpose" in text
  assert_close(out, _np_fft(x.astype(np.complex128), FftType.IRFFT, lengths), np.float32,
               rtol=1e-4, atol=1e-4)


def test_lax_fft_jaxpr():
  text = str(hlox.make_jaxpr(lambda x: lax.fft(x, FftType.RFFT, (8,)))(np.ones((3, 8),
                                                                             np.float32)))
  assert "c64[3,5] = fft[fft_lengths=(8,) fft_type=2] a" in text


# --- derivatives -------------------------------------------------------------------------

def _real_view(fft_type, lengths):
  """``lax.fft`` as a real function of real arrays (complex ones as real and imaginary
  parts), so that check_grads' real inner products apply on both sides."""
  def f(*parts):
    x = parts[0] if len(parts) == 1 else lax.complex(*parts)
    out = lax.fft(x, fft_type, lengths)
    if fft_type == FftType.IRFFT:
      return jnp.sin(out)  # something nonlinear on top, so order 2 is not trivially zero
    return jnp.sin(lax.real(out)), jnp.cos(lax.imag(out))
  return f


@pytest.mark.parametrize("fft_type", list(FftType), ids=lambda t: t.name)
@pytest.mark.parametrize("lengths", [(5,), (4,), (2, 3)])
def test_fft_grads(fft_type, lengths):
  rng = np.random.default_rng(1)
  if fft_type == FftType.RFFT:
    args = (rng.standard_normal((2,) + lengths) * 0.3,)
  else:
    shape = (2,) + lengths
    if fft_type == FftType.IRFFT:
      shape = shape[:-1] + (lengths[-1] // 2 + 1,)
    args = (rng.standard_normal(shape) * 0.3, rng.standard_normal(shape) * 0.3)
  with enable_x64():
    check_grads(_real_view(fft_type, lengths), args, order=2, modes=("fwd", "rev"),
                atol=1e-6, rtol=1e-6)


def _jax_pairing(a, b):
  return np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128)))


@pytest.mark.parametrize("fft_type", list(FftType), ids=lambda t: t.name)
@pytest.mark.parametrize("lengths", [(6,), (7,), (3, 4)])
def test_fft_vjp_is_transpose_in_jax_convention(fft_type, lengths):
  """Cotangents pair with tangents as ``Re(sum(ct * t))`` (JAX's complex convention), so the
  VJP of each transform must satisfy ``<ct, J t> == <J^T ct, t>`` in that pairing."""
  rng = np.random.default_rng(2)
  with enable_x64():
    x = _lax_input(rng, fft_type, (2,), lengths,
                   np.float64 if fft_type == FftType.RFFT else np.complex128)
    t = _lax_input(rng, fft_type, (2,), lengths, x.dtype)
    if fft_type == FftType.IRFFT:  # any complex tangent, not only half spectra of reals
      t = t + 1j * rng.standard_normal(t.shape)
    f = lambda x: lax.fft(x, fft_type, lengths)
    out, f_vjp = hlox.vjp(f, x)
    _, out_t = hlox.jvp(f, (x,), (t,))
    ct = rand(rng, out.shape, out.dtype)
    ct_in, = f_vjp(ct)
    assert ct_in.dtype == x.dtype
    np.testing.assert_allclose(_jax_pairing(ct, out_t), _jax_pairing(ct_in, t), rtol=1e-10)


def test_grad_of_rfft_power_matches_formula():
  # d/dx sum |rfft(x)|^2 weighted, against the closed form 2 * N * x weighted by Parseval.
  with enable_x64():
    x = np.random.default_rng(3).standard_normal(8)
    g = hlox.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.fft(x)) ** 2))(x)
    assert_close(g, 2 * 8 * x, np.float64)


# --- vmap and jit ------------------------------------------------------------------------

@pytest.mark.parametrize("fft_type", list(FftType), ids=lambda t: t.name)
@pytest.mark.parametrize("lengths,in_axis", [((6,), 0), ((6,), 1), ((3, 4), 0), ((3, 4), 1),
                                             ((3, 4), 2), ((2, 3, 4), 3)])
def test_fft_vmap_matches_loop(fft_type, lengths, in_axis):
  rng = np.random.default_rng(4)
  dtype = np.float32 if fft_type == FftType.RFFT else np.complex64
  x = _lax_input(rng, fft_type, (2,), lengths, dtype)  # per-example shape (2, *lengths)
  batched = np.stack([x * (i + 1) for i in range(3)], axis=in_axis)
  f = lambda v: lax.fft(v, fft_type, lengths)
  out = hlox.vmap(f, in_axes=in_axis)(batched)
  expected = np.stack([np.asarray(f(np.take(batched, i, axis=in_axis))) for i in range(3)])
  assert_close(out, expected, expected.dtype, rtol=1e-5, atol=1e-4)


def test_fft_vmap_nested_and_grad():
  x = rand(np.random.default_rng(5), (2, 3, 8), np.float32)
  f = lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2)
  out = hlox.vmap(hlox.vmap(hlox.grad(f)))(x)
  g = hlox.jit(hlox.grad(f))
  expected = np.stack([np.stack([np.asarray(g(x[i, j])) for j in range(3)])
                       for i in range(2)])
  assert_close(out, expected, np.float32, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,args", [
    ("fft", dict(n=6, axis=0, norm="ortho")), ("ifft", dict(norm="forward")),
    ("rfft", dict(n=9)), ("irfft", dict(n=7, axis=0)), ("hfft", dict(norm="ortho")),
    ("ihfft", dict(axis=0)), ("fftn", dict(s=(3, 5))), ("rfftn", dict(axes=(1, 0))),
    ("irfftn", dict(s=(4, 6))), ("fft2", dict(norm="ortho")), ("irfft2", dict()),
])
def test_numpy_fft_jit_matches_eager(name, args):
  x = rand(np.random.default_rng(6), (4, 5), np.complex64 if name in
           ("ifft", "irfft", "hfft", "irfftn", "irfft2", "fft", "fftn", "fft2")
           else np.float32)
  f = lambda x: getattr(jnp.fft, name)(x, **args)
  eager = f(x)
  jitted = hlox.jit(f)(x)
  assert eager.dtype == jitted.dtype
  np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-5, atol=1e-5)
  assert_close(eager, getattr(np.fft, name)(x.astype(np.complex128 if x.dtype.kind == "c"
                                                     else np.float64),
                                       **_numpy_kwargs(name, args)),
               eager.dtype, rtol=1e-4, atol=1e-4)


# --- hlox.numpy.fft against NumPy --------------------------------------------------------

_ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
_N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
_TAKES_COMPLEX = {"fft", "ifft", "irfft", "hfft", "fftn", "ifftn", "irfftn", "fft2", "ifft2",
                  "irfft2"}
_NORM = st.sampled_from([None, "backward", "ortho", "forward"])


def _numpy_kwargs(name, kwargs):
  """NumPy 2 wants ``axes`` whenever ``s`` is given; JAX's default is the last len(s)."""
  if name.endswith("n") and kwargs.get("s") is not None and kwargs.get("axes") is None:
    return dict(kwargs, axes=tuple(range(-len(kwargs["s"]), 0)))
  return kwargs


def _check_against_numpy(name, x, kwargs, wide):
  out_ref = getattr(np.fft, name)(x.astype(np.complex128 if x.dtype.kind == "c"
                                           else np.float64), **_numpy_kwargs(name, kwargs))
  with enable_x64(wide):
    out = hlox.jit(lambda x: getattr(jnp.fft, name)(x, **kwargs))(x)
    expected_dtype = (np.float64 if wide else np.float32) if out_ref.dtype.kind == "f" else (
        np.complex128 if wide else np.complex64)
    size = max(1, out_ref.size)
    assert_close(out, out_ref, expected_dtype, rtol=1e-11 if wide else 2e-5,
                 atol=(1e-11 if wide else 2e-5) * max(1.0, np.abs(out_ref).max()) * np.log2(
                     size + 1))


@st.composite
def _one_d_case(draw):
  name = draw(st.sampled_from(_ONE_D))
  ndim = draw(st.integers(1, 3))
  shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
  axis = draw(st.integers(-ndim, ndim - 1))
  n = draw(st.one_of(st.none(), st.integers(1, 9)))
  if name in ("irfft", "hfft") and n is None and shape[axis] == 1:  # NumPy: n=0 is an error
    n = draw(st.integers(1, 9))
  kind = draw(st.sampled_from(["f32", "f64", "c64", "c128", "i32"]))
  if name in ("rfft", "ihfft") and kind.startswith("c"):
    kind = "f" + ("32" if kind == "c64" else "64")
  return name, shape, dict(n=n, axis=axis, norm=draw(_NORM)), kind, draw(st.integers(0, 99))


_KINDS = {"f32": (np.float32, False), "f64": (np.float64, True), "c64": (np.complex64, False),
          "c128": (np.complex128, True), "i32": (np.int32, False)}


@given(_one_d_case())
def test_one_d_transforms_match_numpy(case):
  name, shape, kwargs, kind, seed = case
  dtype, wide = _KINDS[kind]
  x = rand(np.random.default_rng(seed), shape, dtype)
  _check_against_numpy(name, x, kwargs, wide)


@st.composite
def _n_d_case(draw):
  name = draw(st.sampled_from(_N_D))
  two_d = name.endswith("2")
  ndim = draw(st.integers(2 if two_d else 1, 4))
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
  if two_d:
    axes = tuple(draw(st.permutations(range(-ndim, 0)))[:2]) if draw(st.booleans()) else None
  else:
    k = draw(st.integers(1, ndim))
    axes = tuple(draw(st.permutations(range(ndim)))[:k])
    if draw(st.booleans()):
      axes = tuple(a - ndim for a in axes)  # negative axes
  k = 2 if (two_d and axes is None) else len(axes)
  s = tuple(draw(st.lists(st.integers(1, 7), min_size=k, max_size=k))) if draw(
      st.booleans()) else None
  kwargs = dict(norm=draw(_NORM))
  if axes is not None:
    kwargs["axes"] = axes
  if s is not None:
    kwargs["s"] = s
  if name.startswith("irfft") and s is None:
    last = axes[-1] if axes is not None else -1
    if shape[last] == 1:  # NumPy refuses an empty output
      kwargs["s"] = tuple(shape[a] for a in (axes if axes is not None else (-2, -1)))[:-1] \
          + (4,)
  kind = draw(st.sampled_from(["f32", "f64", "c64", "c128"]))
  if name.startswith("rfft"):
    kind = "f" + ("32" if kind in ("f32", "c64") else "64")
  return name, shape, kwargs, kind, draw(st.integers(0, 99))


@given(_n_d_case())
def test_n_d_transforms_match_numpy(case):
  name, shape, kwargs, kind, seed = case
  dtype, wide = _KINDS[kind]
  x = rand(np.random.default_rng(seed), shape, dtype)
  _check_against_numpy(name, x, kwargs, wide)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("shape,axes", [((2, 3, 2, 4), None), ((3, 2, 2, 3, 2), None),
                                        ((2, 2, 3, 2, 2, 2), None),
                                        ((2, 3, 2, 4, 2), (4, 0, 2, 1))])
def test_more_than_three_axes(name, shape, axes):
  x = rand(np.random.default_rng(7), shape, np.complex64 if name in ("ifftn", "irfftn", "fftn")
           else np.float32)
  kwargs = {} if axes is None else {"axes": axes}
  if name == "irfftn":
    kwargs["s"] = tuple(shape[a] for a in (axes or range(len(shape))))[:-1] + (5,)
  _check_against_numpy(name, x, kwargs, False)


def test_round_trips():
  x = rand(np.random.default_rng(8), (3, 4, 6), np.float32)
  assert_close(jnp.fft.irfftn(jnp.fft.rfftn(x), s=x.shape), x, np.float32, atol=1e-5)
  assert_close(jnp.fft.ifft(jnp.fft.fft(x, norm="ortho"), norm="ortho").real, x, np.float32,
               atol=1e-5)
  assert_close(jnp.fft.hfft(jnp.fft.ihfft(x), n=6), x, np.float32, atol=1e-5)
  assert_close(jnp.fft.ifft2(jnp.fft.fft2(x, axes=(0, 2)), axes=(0, 2)).real, x, np.float32,
               atol=1e-5)


def test_scalar_and_empty_inputs():
  assert_close(jnp.fft.fftn(3.0), np.complex64(3.0), np.complex64)
  assert_close(jnp.fft.fft(np.ones((0,), np.float32)), np.zeros((0,), np.complex64),
               np.complex64)
  assert_close(jnp.fft.fft(np.ones((3, 0), np.float32)), np.zeros((3, 0), np.complex64),
               np.complex64)
  assert_close(jnp.fft.irfft(np.ones(1, np.complex64)), np.zeros((0,), np.float32), np.float32)
  # axis=None transforms every axis, as in JAX.
  x = rand(np.random.default_rng(9), (3, 4), np.float32)
  assert_close(jnp.fft.fft(x, axis=None), np.fft.fftn(x), np.complex64, rtol=1e-5, atol=1e-5)


def test_integer_and_bool_inputs_promote():
  x = np.arange(6, dtype=np.int32)
  assert jnp.fft.fft(x).dtype == np.complex64
  assert jnp.fft.rfft(x.astype(np.int16)).dtype == np.complex64
  assert jnp.fft.irfft(x).dtype == np.float32
  assert jnp.fft.hfft(x).dtype == np.float32
  assert jnp.fft.ihfft(x).dtype == np.complex64
  assert_close(jnp.fft.rfft(x > 2), np.fft.rfft((x > 2).astype(np.float64)), np.complex64,
               rtol=1e-5, atol=1e-5)
  with enable_x64():
    assert jnp.fft.fft(x.astype(np.int64)).dtype == np.complex128
    assert jnp.fft.fft(x).dtype == np.complex64
    assert jnp.fft.fft(x.astype(np.float16)).dtype == np.complex64


def test_norm_gradients():
  rng = np.random.default_rng(10)
  with enable_x64():
    for norm in ["backward", "ortho", "forward"]:
      f = lambda x: jnp.fft.irfft(jnp.sin(jnp.fft.rfft(x, n=7, norm=norm)), norm=norm)
      check_grads(f, (rng.standard_normal((2, 6)),), order=2, atol=1e-6, rtol=1e-6)
      g = lambda x: jnp.fft.ihfft(jnp.fft.hfft(jnp.sin(x), norm=norm), norm=norm).real
      check_grads(g, (rng.standard_normal(5),), order=1, atol=1e-6, rtol=1e-6)


# --- frequencies and shifts --------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_fftfreq(n, d):
  assert_close(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d), np.float32)
  assert_close(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d), np.float32)


def test_fftfreq_dtypes_and_traced_spacing():
  with enable_x64():
    assert jnp.fft.fftfreq(5).dtype == np.float64
    assert jnp.fft.fftfreq(5, dtype=np.float32).dtype == np.float32
    assert jnp.fft.rfftfreq(5, dtype=np.float32).dtype == np.float32
  assert jnp.fft.fftfreq(5, dtype=np.complex64).dtype == np.complex64
  # JAX: integer dtypes are computed in float then cast (fftfreq), or divided (rfftfreq).
  assert_close(jnp.fft.fftfreq(4, 0.25, dtype=np.int32), np.array([0, 1, -2, -1]), np.int32)
  assert jnp.fft.rfftfreq(4, dtype=np.int32).dtype == np.float32
  out = hlox.jit(lambda d: jnp.fft.fftfreq(6, d))(0.5)
  assert_close(out, np.fft.fftfreq(6, 0.5), np.float32)
  g = hlox.grad(lambda d: jnp.fft.rfftfreq(6, d).sum())(0.5)
  assert float(g) == pytest.approx(-np.fft.rfftfreq(6, 0.5).sum() / 0.5, rel=1e-6)


@pytest.mark.parametrize("axes", [None, 0, 1, (0,), (1, 0), (-1,)])
def test_shifts(axes):
  x = np.arange(35, dtype=np.int32).reshape(5, 7)
  assert_close(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes), x.dtype)
  assert_close(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes), x.dtype)
  assert_close(jnp.fft.ifftshift(jnp.fft.fftshift(x, axes), axes), x, x.dtype)


# --- bad input ---------------------------------------------------------------------------

X = np.ones((4, 4), np.float32)


@pytest.mark.parametrize("call,error,match", [
    (lambda: jnp.fft.fft(X, norm="bad"), ValueError, "Invalid norm value bad"),
    (lambda: jnp.fft.rfftn(X, norm="Ortho"), ValueError, "Invalid norm value"),
    (lambda: jnp.fft.fft(X, axis=2), ValueError,
     "jax.numpy.fft.fft: axis 2 is out of bounds for array of dimension 2"),
    (lambda: jnp.fft.fft(X, axis=(0,)), ValueError,
     "jax.numpy.fft.fft does not support multiple axes. Please use jax.numpy.fft.fftn"),
    (lambda: jnp.fft.fft(X, n=0), ValueError, "Shape should be positive"),
    (lambda: jnp.fft.fftn(X, s=(2, -1)), ValueError, "Shape should be positive"),
    (lambda: jnp.fft.fftn(X, axes=(0, 0)), ValueError,
     r"jax.numpy.fft.fftn does not support repeated axes. Got axes \[0, 0\]"),
    (lambda: jnp.fft.fftn(X, axes=(0, -2)), ValueError, "repeated axes"),
    (lambda: jnp.fft.fft2(X, axes=(0,)), ValueError,
     r"jax.numpy.fft.fft2 only supports 2 axes. Got axes = \(0,\)"),
    (lambda: jnp.fft.irfft2(X, axes=(0, 1, 1)), ValueError, "only supports 2 axes"),
    (lambda: jnp.fft.fftn(X, s=(2,), axes=(0, 1)), ValueError,
     "Shape and axes have different lengths"),
    (lambda: jnp.fft.fftn(X, s=(2, 2, 2)), ValueError, "more entries than"),
    (lambda: jnp.fft.fft([1.0, 2.0]), TypeError, "jax.numpy.fft.fft requires ndarray"),
    (lambda: jnp.fft.fftn(X, axes=(0.5,)), TypeError, "axes must be a sequence of integers"),
    (lambda: jnp.fft.fft(X, n=2.5), TypeError, "jax.numpy.fft.fft: n must be an integer"),
    (lambda: jnp.fft.fftn(X, s=(2.5, 1)), TypeError, "s must be a sequence of integers"),
    (lambda: jnp.fft.rfft(X.astype(np.complex64)), ValueError, "only real valued inputs"),
    (lambda: jnp.fft.rfft(X.astype(np.float16)), ValueError, "RFFT input must be float32"),
    (lambda: jnp.fft.hfft(X, axis=3), ValueError, "out of bounds"),
    (lambda: jnp.fft.ihfft(X, axis=[0, 1]), ValueError, "does not support multiple axes"),
    (lambda: jnp.fft.fftfreq([4]), ValueError, "only takes an int"),
    (lambda: jnp.fft.rfftfreq(4, d=[1.0, 2.0]), ValueError, "only takes a single value"),
    (lambda: jnp.fft.fftshift([1, 2]), TypeError, "requires ndarray"),
])
def test_numpy_fft_bad_input(call, error, match):
  with pytest.raises(error, match=match):
    call()


# --- JAX as the oracle -------------------------------------------------------------------

# Each program is the body of a function of (lib, np) returning an array; ``lib`` has
# numpy (as jnp), lax, jit, grad, vmap. Values come back as real and imaginary parts.
ORACLE_PROGRAMS = {
    "fft_int": "return lib.numpy.fft.fft(np.arange(6))",
    "rfft_bool": "return lib.numpy.fft.rfft(np.arange(6) > 2, n=9)",
    "ifft_ortho": "return lib.numpy.fft.ifft(np.arange(8.0) ** 1.5, norm='ortho')",
    "irfft_odd": "return lib.numpy.fft.irfft(np.arange(5.0) - 1j * np.arange(5.0), n=9, "
                 "norm='forward')",
    "hfft": "return lib.numpy.fft.hfft(np.arange(5.0) + 2j, norm='ortho')",
    "ihfft": "return lib.numpy.fft.ihfft(np.arange(7.0), n=6, norm='forward')",
    "fftn_axes": "return lib.numpy.fft.fftn(np.arange(24.0).reshape(2, 3, 4) % 5, s=(3, 2), "
                 "axes=(2, 0))",
    "rfftn_4d": "return lib.numpy.fft.rfftn(np.sin(np.arange(48.0)).reshape(2, 2, 3, 4))",
    "irfftn_5d": "x = np.cos(np.arange(96.0)).reshape(2, 2, 2, 3, 4) + 0.5j; "
                 "return lib.numpy.fft.irfftn(x, s=(2, 2, 2, 3, 5))",
    "ifftn_4d": "return lib.numpy.fft.ifftn(np.sin(np.arange(36.0)).reshape(3, 2, 3, 2) + 1j)",
    "rfft2": "return lib.numpy.fft.rfft2(np.arange(20.0).reshape(4, 5) ** 0.5, axes=(1, 0))",
    "irfft2": "return lib.numpy.fft.irfft2(np.arange(12.0).reshape(4, 3) + 1j, s=(4, 4))",
    "fftfreq": "return lib.numpy.fft.fftfreq(9, 0.1)",
    "rfftfreq_int": "return lib.numpy.fft.rfftfreq(9, 2, dtype=np.int32)",
    "fftshift": "return lib.numpy.fft.fftshift(np.arange(12).reshape(3, 4), axes=1)",
    "ifftshift": "return lib.numpy.fft.ifftshift(np.arange(12.0).reshape(3, 4))",
    "grad_rfft": "jnp = lib.numpy; f = lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x, n=7)) ** 3); "
                 "return lib.grad(f)(jnp.linspace(-1.0, 1.0, 6))",
    "grad_irfft": "jnp = lib.numpy; f = lambda z: jnp.sum(jnp.sin(jnp.fft.irfft(z, n=6))); "
                  "return lib.grad(f)(jnp.linspace(-1.0, 1.0, 4) + 0.5j)",
    "grad_irfft_odd": "jnp = lib.numpy; f = lambda z: jnp.sum(jnp.sin(jnp.fft.irfftn(z, "
                      "s=(3, 5)))); return lib.grad(f)(jnp.ones((3, 3)) * (0.3 - 0.2j))",
    "grad_fft_complex": "jnp = lib.numpy; f = lambda z: jnp.sum(jnp.fft.fft(z) * "
                        "jnp.arange(4.0)).real; return lib.grad(f)(jnp.ones(4) * (1 + 2j))",
    "grad_ifft2": "jnp = lib.numpy; f = lambda z: jnp.abs(jnp.fft.ifft2(z, norm='ortho')"
                  "[1, 2]); return lib.grad(f)(jnp.arange(12.0).reshape(3, 4) + 1j)",
    "vmap_fft": "jnp = lib.numpy; return lib.vmap(lambda x: jnp.fft.fft(x, n=5), in_axes=1)("
                "jnp.arange(12.0).reshape(3, 4))",
    "lax_fft": "return lib.lax.fft(np.arange(8.0).reshape(2, 4), 'rfft', (2, 4))",
    "lax_irfft": "return lib.lax.fft(np.ones((2, 3), np.complex64), lib.lax.FftType.IRFFT, "
                 "(2, 5))",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.numpy, jax.lax
    class Lib:
      pass
    lib = Lib()
    for name in ("jit", "grad", "vmap"):
      setattr(lib, name, getattr(jax, name))
    lib.numpy, lib.lax = jax.numpy, jax.lax
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(lib, np):\\n  " + body, ns)
      r = jax.jit(lambda: ns["prog"](lib, np))()  # one compile per program
      v = np.asarray(r).astype(np.complex128)
      out[name] = {"real": v.real.tolist(), "imag": v.imag.tolist(),
                   "shape": list(np.shape(r)), "dtype": str(r.dtype)}
    print(json.dumps(out))
""")


class _HloxLib:
  jit, grad, vmap = hlox.jit, hlox.grad, hlox.vmap
  numpy, lax = jnp, lax


def _run_in_jax(programs):
  return run_in_jax(JAX_RUNNER, programs)


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
def test_matches_jax():
  # One test for all programs: JAX starts once (in its own process), on one worker.
  expected_all = _run_in_jax(ORACLE_PROGRAMS)
  mismatches = []
  for name, body in sorted(ORACLE_PROGRAMS.items()):
    ns = {}
    exec("def prog(lib, np):\n  " + body, ns)
    result = hlox.jit(lambda: ns["prog"](_HloxLib, np))()
    expected = expected_all[name]
    value = np.asarray(expected["real"]) + 1j * np.asarray(expected["imag"])
    if list(np.shape(result)) != expected["shape"] or str(result.dtype) != expected["dtype"]:
      mismatches.append(f"{name}: {result.dtype}{list(np.shape(result))} vs JAX's "
                        f"{expected['dtype']}{expected['shape']}")
    elif not np.allclose(np.asarray(result).astype(np.complex128), value, rtol=2e-5,
                         atol=2e-5):
      mismatches.append(f"{name}: values differ\n{np.asarray(result)}\nvs\n{value}")
  assert not mismatches, "\n".join(mismatches)
