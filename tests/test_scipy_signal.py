"""hlox.scipy.signal against SciPy (values, dtypes), gradients, vmap, jit, bad input, and the
same programs run in JAX (the oracle)."""
import importlib.util
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.scipy import signal as hsignal

from tests.check_grads import check_grads
from tests.util import assert_close, rand, run_in_jax

ssignal = pytest.importorskip("scipy.signal")

JAX_SIGNAL_NAMES = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
                    "fftconvolve", "istft", "stft", "welch"]


def test_public_names():
  assert set(JAX_SIGNAL_NAMES) <= set(dir(hsignal))
  assert hlox.scipy.signal is hsignal


def _jit(fn, *arrays, **kwargs):
  """``fn(*arrays, **kwargs)`` compiled as one program (eager runs op by op, each compiled,
  which is slow for these compositions; eager is checked against jit separately)."""
  return hlox.jit(lambda *a: fn(*a, **kwargs))(*arrays)


# --- convolutions ------------------------------------------------------------------------

@st.composite
def _conv_case(draw):
  name = draw(st.sampled_from(["convolve", "correlate", "fftconvolve", "convolve_fft",
                               "correlate_fft", "convolve2d", "correlate2d"]))
  ndim = 2 if name.endswith("2d") else draw(st.integers(1, 3))
  s1 = draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))
  # One input at least as large as the other in every dimension (required but by
  # fftconvolve outside 'valid', and by SciPy's 2-d functions in 'valid').
  s2 = [draw(st.integers(1, n)) for n in s1]
  if draw(st.booleans()):
    s1, s2 = s2, s1
  mode = draw(st.sampled_from(["full", "same", "valid"]))
  kind = draw(st.sampled_from(["f32", "f64", "c64", "i32"]))
  return name, tuple(s1), tuple(s2), mode, kind, draw(st.integers(0, 99))


_KINDS = {"f32": (np.float32, False), "f64": (np.float64, True), "c64": (np.complex64, False),
          "i32": (np.int32, False)}


def _hlox_conv(name):
  if name.endswith("_fft"):
    base = getattr(hsignal, name[:-4])
    return lambda a, b, mode: base(a, b, mode, method="fft")
  return lambda a, b, mode: getattr(hsignal, name)(a, b, mode)


def _scipy_conv(name):
  base = name[:-4] if name.endswith("_fft") else name
  return lambda a, b, mode: getattr(ssignal, base)(a, b, mode)


@given(_conv_case())
def test_convolutions_match_scipy(case):
  name, s1, s2, mode, kind, seed = case
  dtype, wide = _KINDS[kind]
  rng = np.random.default_rng(seed)
  a, b = rand(rng, s1, dtype), rand(rng, s2, dtype)
  wide_dtype = np.complex128 if kind == "c64" else np.float64
  expected = _scipy_conv(name)(a.astype(wide_dtype), b.astype(wide_dtype), mode)
  with enable_x64(wide):
    out = hlox.jit(lambda a, b: _hlox_conv(name)(a, b, mode))(a, b)
    out_dtype = {"f32": np.float32, "f64": np.float64, "c64": np.complex64,
                 "i32": np.float32}[kind]
    scale = max(1.0, np.abs(expected).max() if expected.size else 1.0)
    assert_close(out, expected, out_dtype, rtol=1e-10 if wide else 2e-5,
                 atol=(1e-10 if wide else 2e-5) * scale * 4)


def test_fftconvolve_axes():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((3, 7, 4)), rng.standard_normal((3, 2, 4))
  for axes in [1, (1,), (-2,)]:
    for mode in ["full", "same", "valid"]:
      assert_close(_jit(hsignal.fftconvolve, a, b, mode=mode, axes=axes),
                   ssignal.fftconvolve(a, b, mode, axes=axes), np.float32, rtol=1e-5,
                   atol=1e-5)
  c = rng.standard_normal((1, 2, 4))
  assert_close(_jit(hsignal.fftconvolve, a, c[:1, :, :1] * np.ones((3, 1, 1)), axes=(1, 2)),
               ssignal.fftconvolve(a, c[:1, :, :1] * np.ones((3, 1, 1)), axes=(1, 2)),
               np.float32, rtol=1e-5, atol=1e-5)


def test_convolve_grads():
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal(6), rng.standard_normal(3)
  with enable_x64():
    check_grads(hlox.jit(lambda a, b: hsignal.convolve(a, b, "full")), (a, b), order=2,
                atol=1e-6, rtol=1e-6)
    for mode in ["same", "valid"]:
      check_grads(hlox.jit(lambda a, b: hsignal.convolve(a, b, mode)), (a, b), order=1,
                  atol=1e-6, rtol=1e-6)
      check_grads(hlox.jit(lambda a, b: hsignal.fftconvolve(a, b, mode)), (a, b), order=1,
                  atol=1e-6, rtol=1e-6)
    check_grads(lambda a, b: hsignal.correlate2d(a, b, "same"),
                (rng.standard_normal((4, 3)), rng.standard_normal((2, 2))), order=1,
                atol=1e-6, rtol=1e-6)


def test_convolve_vmap_matches_loop():
  rng = np.random.default_rng(3)
  a, b = rng.standard_normal((4, 9)).astype(np.float32), rng.standard_normal((4, 3)).astype(
      np.float32)
  for f in [lambda a, b: hsignal.convolve(a, b, "same"),
            lambda a, b: hsignal.fftconvolve(a, b, "valid"),
            lambda a, b: hsignal.correlate(a, b)]:
    out = hlox.vmap(f)(a, b)
    jf = hlox.jit(f)
    expected = np.stack([np.asarray(jf(a[i], b[i])) for i in range(4)])
    assert_close(out, expected, np.float32, rtol=1e-5, atol=1e-5)
  out = hlox.vmap(lambda a: hsignal.convolve(a, b[0]), in_axes=1)(a.T)
  assert_close(out, np.stack([np.convolve(r, b[0]) for r in a]), np.float32, rtol=1e-5,
               atol=1e-5)


@pytest.mark.parametrize("call,error,match", [
    (lambda: hsignal.convolve(np.ones(3), np.ones((2, 2))), ValueError,
     "same number of dimensions"),
    (lambda: hsignal.convolve(np.ones(3), np.ones(2), "bad"), ValueError,
     "mode must be one of"),
    (lambda: hsignal.convolve(np.ones(3), np.ones(2), method="slow"), ValueError,
     "expected 'auto', 'fft', or 'direct'"),
    (lambda: hsignal.convolve(np.ones((3, 2)), np.ones((2, 3))), ValueError,
     "smaller than the other in every dimension"),
    (lambda: hsignal.convolve(np.ones(0), np.ones(2)), ValueError, "zero-size arrays"),
    (lambda: hsignal.convolve2d(np.ones(3), np.ones(2)), ValueError,
     "only supports 2-dimensional inputs"),
    (lambda: hsignal.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap"),
     NotImplementedError, "boundary='fill'"),
    (lambda: hsignal.correlate2d(np.ones((3, 3)), np.ones((2, 2)), fillvalue=1),
     NotImplementedError, "fillvalue=0"),
    (lambda: hsignal.fftconvolve(np.ones(3), np.ones((2, 2))), ValueError,
     "same dimensionality"),
    (lambda: hsignal.fftconvolve(np.ones((3, 2)), np.ones((2, 3)), "valid"), ValueError,
     "at least as large"),
    (lambda: hsignal.fftconvolve(np.ones((3, 2)), np.ones((2, 3)), axes=0), ValueError,
     "mapped axes must have same shape"),
    (lambda: hsignal.convolve([1.0, 2.0], np.ones(2)), TypeError, "requires ndarray"),
    (lambda: hsignal.detrend(np.ones(5), type="cubic"), ValueError, "Trend type"),
    (lambda: hsignal.detrend(np.ones(5), bp=[7]), ValueError, "Breakpoints"),
    (lambda: hsignal.welch(np.ones(16), nperseg=0), ValueError, "positive integer"),
    (lambda: hsignal.welch(np.ones(16), nperseg=8, noverlap=8), ValueError,
     "noverlap must be less than nperseg"),
    (lambda: hsignal.welch(np.ones(16), nperseg=8, nfft=4), ValueError,
     "nfft must be greater"),
    (lambda: hsignal.welch(np.ones(16), scaling="loud"), ValueError, "Unknown scaling"),
    (lambda: hsignal.welch(np.ones((2, 16)), nperseg=8, average="max"), ValueError,
     "average must be"),
    (lambda: hsignal.welch(np.ones(16), window=np.ones((2, 2))), ValueError, "1-D"),
    (lambda: hsignal.welch(np.ones(16), window=np.ones(20)), ValueError, "longer than"),
    (lambda: hsignal.welch(np.ones(16), window=np.ones(8), nperseg=4), ValueError,
     "different from length of window"),
    (lambda: hsignal.stft(np.ones(16), boundary="mirror"), ValueError,
     "Unknown boundary option"),
    (lambda: hsignal.csd(np.ones((2, 8)), np.ones(8)), ValueError, "same rank"),
    (lambda: hsignal.istft(np.ones(8)), ValueError, "at least 2d"),
    (lambda: hsignal.istft(np.ones((5, 4)), time_axis=0, freq_axis=0), ValueError,
     "differing time and frequency axes"),
    (lambda: hsignal.istft(np.ones((5, 4)), nperseg=8, nfft=6), ValueError,
     r"FFT length \(6\) must be longer than nperseg \(8\)"),
])
def test_bad_input(call, error, match):
  with pytest.raises(error, match=match):
    hlox.jit(call)()  # the checks run while tracing, before anything compiles


# --- detrend -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(), dict(type="constant"), dict(axis=0),
                                    dict(bp=[3, 9], axis=0), dict(bp=5, axis=0), dict(bp=[1, 2])])
def test_detrend_matches_scipy(kwargs):
  x = np.random.default_rng(4).standard_normal((12, 5)) + np.arange(12)[:, None] * 0.3
  assert_close(_jit(hsignal.detrend, x, **kwargs), ssignal.detrend(x, **kwargs), np.float32,
               rtol=1e-5, atol=1e-5)
  with enable_x64():
    assert_close(_jit(hsignal.detrend, x, **kwargs), ssignal.detrend(x, **kwargs),
                 np.float64)


def test_detrend_integers_and_grads():
  x = np.arange(10, dtype=np.int32) ** 2
  out = _jit(hsignal.detrend, x)
  assert out.dtype == np.float32
  assert_close(out, ssignal.detrend(x.astype(np.float64)), np.float32, rtol=1e-5, atol=1e-4)
  with enable_x64():
    check_grads(hlox.jit(lambda x: hsignal.detrend(x, bp=[4])),
                (np.random.default_rng(5).standard_normal(9),), order=2)


# --- spectral analysis -------------------------------------------------------------------

def _quiet(f, *args, **kwargs):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return f(*args, **kwargs)


STFT_CASES = [
    dict(nperseg=16),
    dict(nperseg=15, noverlap=5, nfft=20),
    dict(nperseg=8, boundary=None, padded=False),
    dict(nperseg=8, boundary="even"),
    dict(nperseg=8, boundary="odd"),
    dict(nperseg=8, boundary="constant", detrend="linear"),
    dict(nperseg=10, return_onesided=False, fs=3.0),
    dict(nperseg=8, window="hamming", axis=0),
    dict(nperseg=8, window=("tukey", 0.3)),
]


@pytest.mark.parametrize("kwargs", STFT_CASES)
def test_stft_matches_scipy(kwargs):
  x = np.random.default_rng(6).standard_normal((2, 50))
  if kwargs.get("axis") == 0:
    x = x.T
  f, t, z = _jit(hsignal.stft, x, **kwargs)
  f_ref, t_ref, z_ref = ssignal.stft(x, **kwargs)
  assert z.dtype == np.complex64
  assert_close(f, f_ref, np.float32, rtol=1e-5, atol=1e-6)
  assert_close(t, t_ref, np.float32, rtol=1e-5, atol=1e-6)
  assert_close(z, z_ref, np.complex64, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(nperseg=16), dict(nperseg=15, noverlap=10),
                                    dict(nperseg=8, nfft=12),
                                    dict(nperseg=10, return_onesided=False)])
def test_istft_inverts_stft_and_matches_scipy(kwargs):
  x = np.random.default_rng(7).standard_normal((2, 64))
  stft_kwargs = {k: v for k, v in kwargs.items() if k != "return_onesided"}
  onesided = kwargs.get("return_onesided", True)
  _, _, z = ssignal.stft(x, return_onesided=onesided, **stft_kwargs)
  t, y = _jit(hsignal.istft, z, input_onesided=onesided, **stft_kwargs)
  t_ref, y_ref = ssignal.istft(z, input_onesided=onesided, **stft_kwargs)
  if not onesided:
    y_ref = y_ref.astype(np.complex128)
  assert_close(y, y_ref, np.float32 if onesided else np.complex64, rtol=1e-4, atol=1e-5)
  assert_close(t, t_ref, np.float32, rtol=1e-5)
  assert_close(np.real(y)[..., :64], x, None, rtol=1e-4, atol=1e-4, check_dtype=False)


def test_istft_axes():
  x = np.random.default_rng(8).standard_normal((3, 40))
  _, _, z = ssignal.stft(x, nperseg=8)           # (3, freqs, times)
  zt = np.transpose(z, (2, 0, 1))                # (times, 3, freqs)
  _, y = _jit(hsignal.istft, zt, nperseg=8, time_axis=0, freq_axis=2)
  _, y_ref = ssignal.istft(zt, nperseg=8, time_axis=0, freq_axis=2)
  assert_close(y, y_ref, np.float32, rtol=1e-4, atol=1e-5)


WELCH_CASES = [
    dict(nperseg=16),
    dict(nperseg=16, noverlap=4, nfft=32, scaling="spectrum"),
    dict(nperseg=15, detrend="linear"),
    dict(nperseg=16, detrend=False, average="median"),
    dict(nperseg=16, return_onesided=False, fs=10.0),
    dict(nperseg=12, window="blackman", axis=0),
    dict(nperseg=64),  # one segment: nothing to average
    dict(window=np.hanning(20)),
]


@pytest.mark.parametrize("kwargs", WELCH_CASES)
def test_welch_and_csd_match_scipy(kwargs):
  rng = np.random.default_rng(9)
  x, y = rng.standard_normal((3, 64)), rng.standard_normal((3, 64))
  if kwargs.get("axis") == 0:
    x, y = x.T, y.T
  f, p = _jit(hsignal.welch, x, **kwargs)
  f_ref, p_ref = ssignal.welch(x, **kwargs)
  assert p.dtype == np.float32
  assert_close(f, f_ref, np.float32, rtol=1e-5, atol=1e-6)
  assert_close(p, p_ref, np.float32, rtol=1e-4, atol=1e-6)
  f, p = _jit(hsignal.csd, x, y, **kwargs)
  f_ref, p_ref = ssignal.csd(x, y, **kwargs)
  assert p.dtype == np.complex64
  assert_close(p, p_ref, np.complex64, rtol=1e-4, atol=1e-6)


def test_csd_broadcasts_and_pads_the_shorter_signal():
  rng = np.random.default_rng(10)
  x, y = rng.standard_normal((2, 48)), rng.standard_normal((1, 40))
  f, p = _jit(hsignal.csd, x, y, nperseg=16)
  # SciPy pads the shorter signal only when the others dimensions agree.
  _, p_ref = ssignal.csd(x, np.broadcast_to(np.pad(y, ((0, 0), (0, 8))), x.shape), nperseg=16)
  assert_close(p, p_ref, np.complex64, rtol=1e-4, atol=1e-6)


def test_complex_input_is_two_sided():
  rng = np.random.default_rng(11)
  x = rng.standard_normal(64) + 1j * rng.standard_normal(64)
  with pytest.warns(UserWarning, match="complex"):
    f, p = _jit(hsignal.welch, x, nperseg=16)
  f_ref, p_ref = _quiet(ssignal.welch, x, nperseg=16)
  assert_close(p, p_ref, np.float32, rtol=1e-4, atol=1e-6)
  _, _, z = _jit(hsignal.stft, x, nperseg=16, return_onesided=False)
  _, _, z_ref = ssignal.stft(x, nperseg=16, return_onesided=False)
  assert_close(z, z_ref, np.complex64, rtol=1e-4, atol=1e-5)


def test_spectral_dtypes_x64_and_empty():
  x = np.random.default_rng(12).standard_normal(32)
  with enable_x64():
    f, p = _jit(hsignal.welch, x, nperseg=8)
    assert f.dtype == np.float64 and p.dtype == np.float64
    assert_close(p, ssignal.welch(x, nperseg=8)[1], np.float64, rtol=1e-10, atol=1e-12)
    _, _, z = _jit(hsignal.stft, x, nperseg=8)
    assert z.dtype == np.complex128
  f, t, z = hsignal.stft(np.zeros((2, 0), np.float32))
  assert z.shape == (2, 0) and z.dtype == np.complex64
  _, p = _jit(hsignal.welch, np.arange(16), nperseg=8)  # integers: float32
  assert p.dtype == np.float32


def test_spectral_jit_vmap_and_grad():
  rng = np.random.default_rng(13)
  x = rng.standard_normal((4, 32)).astype(np.float32)
  welch = lambda x: hsignal.welch(x, nperseg=8)[1]
  assert_close(hlox.jit(welch)(x), welch(x), np.float32, rtol=1e-5, atol=1e-6)
  assert_close(hlox.vmap(welch)(x), np.stack([np.asarray(hlox.jit(welch)(r)) for r in x]),
               np.float32,
               rtol=1e-5, atol=1e-6)
  with enable_x64():
    check_grads(hlox.jit(lambda x: hsignal.welch(x, nperseg=8)[1]), (rng.standard_normal(24),),
                order=1, atol=1e-6, rtol=1e-6)
    check_grads(hlox.jit(lambda x: jnp.abs(hsignal.stft(x, nperseg=8)[2])),
                (rng.standard_normal(24),), order=1, atol=1e-6, rtol=1e-6)


# --- JAX as the oracle -------------------------------------------------------------------

# Programs of (signal, np) returning one array; some use JAX's own defaults where they
# differ from SciPy's (the whole signal as one segment when nperseg is not given).
ORACLE_PROGRAMS = {
    "convolve_same": "return signal.convolve(np.arange(7.0), np.array([1.0, -2.0, 0.5]), "
                     "'same')",
    "convolve_int": "return signal.convolve(np.arange(5), np.arange(3))",
    "correlate_complex": "return signal.correlate(np.arange(6.0) + 1j, np.array([1j, 2.0]))",
    "convolve2d_valid": "return signal.convolve2d(np.arange(20.0).reshape(4, 5), "
                        "np.ones((2, 3)), 'valid')",
    "correlate2d_swap": "return signal.correlate2d(np.ones((2, 2)), "
                        "np.arange(12.0).reshape(3, 4), 'full')",
    "correlate2d_swap_valid": "return signal.correlate2d(np.ones((2, 2)), "
                              "np.arange(12.0).reshape(3, 4), 'valid')",
    "fftconvolve_axes": "return signal.fftconvolve(np.arange(24.0).reshape(2, 12), "
                        "np.ones((2, 3)), 'valid', axes=1)",
    "detrend_bp": "return signal.detrend(np.arange(12.0) ** 2, bp=[4, 8])",
    "welch_default": "return signal.welch(np.sin(np.arange(40.0)))[1]",
    "welch_freqs": "return signal.welch(np.sin(np.arange(40.0)), fs=4.0, nperseg=16)[0]",
    "welch_median": "return signal.welch(np.sin(np.arange(64.0) ** 1.3), nperseg=16, "
                    "average='median')[1]",
    "csd": "return signal.csd(np.sin(np.arange(48.0)), np.cos(np.arange(48.0) * 0.7), "
           "nperseg=12)[1]",
    "stft": "return signal.stft(np.sin(np.arange(50.0) * 0.3), nperseg=16)[2]",
    "stft_times": "return signal.stft(np.sin(np.arange(50.0)), nperseg=16, noverlap=4)[1]",
    # JAX hands a detrend function the segments with the signal axis moved last, which
    # differs from SciPy (that moves it back): hlox does what JAX does.
    "welch_detrend_fn": "return signal.welch(np.sin(np.arange(64.0) ** 1.2).reshape(2, 32), "
                        "nperseg=8, detrend=lambda d: d - d.mean(-1, keepdims=True))[1]",
    "istft": "z = signal.stft(np.sin(np.arange(50.0) * 0.3), nperseg=16)[2]; "
             "return signal.istft(z, nperseg=16)[1]",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax
    import jax.scipy.signal as signal
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(signal, np):\\n  " + body, ns)
      r = jax.jit(lambda: ns["prog"](signal, np))()  # one compile per program
      v = np.asarray(r).astype(np.complex128)
      out[name] = {"real": v.real.tolist(), "imag": v.imag.tolist(),
                   "shape": list(np.shape(r)), "dtype": str(r.dtype)}
    print(json.dumps(out))
""")


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
def test_matches_jax():
  expected_all = run_in_jax(JAX_RUNNER, ORACLE_PROGRAMS)
  mismatches = []
  for name, body in sorted(ORACLE_PROGRAMS.items()):
    ns = {}
    exec("def prog(signal, np):\n  " + body, ns)
    result = hlox.jit(lambda: ns["prog"](hsignal, np))()
    expected = expected_all[name]
    value = np.asarray(expected["real"]) + 1j * np.asarray(expected["imag"])
    if list(np.shape(result)) != expected["shape"] or str(result.dtype) != expected["dtype"]:
      mismatches.append(f"{name}: {result.dtype}{list(np.shape(result))} vs JAX's "
                        f"{expected['dtype']}{expected['shape']}")
    elif not np.allclose(np.asarray(result).astype(np.complex128), value, rtol=2e-5,
                         atol=2e-5):
      mismatches.append(f"{name}: values differ\n{np.asarray(result)}\nvs\n{value}")
  assert not mismatches, "\n".join(mismatches)
