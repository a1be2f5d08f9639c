"""hlox.scipy.fft (type-2 DCTs) against SciPy, gradients, vmap, jit, bad input and JAX."""
import importlib.util
import textwrap

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hlox
from hlox.config import enable_x64
from hlox.scipy import fft as hfft

from tests.check_grads import check_grads
from tests.util import assert_close, rand, run_in_jax

sfft = pytest.importorskip("scipy.fft")


def test_public_names():
  assert {"dct", "dctn", "idct", "idctn"} <= set(dir(hfft))


@st.composite
def _case(draw):
  name = draw(st.sampled_from(["dct", "idct", "dctn", "idctn"]))
  ndim = draw(st.integers(1, 3))
  shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
  norm = draw(st.sampled_from([None, "backward", "ortho"]))
  if name in ("dct", "idct"):
    kwargs = dict(axis=draw(st.integers(-ndim, ndim - 1)), norm=norm,
                  n=draw(st.one_of(st.none(), st.integers(1, 9))))
  else:
    k = draw(st.integers(1, ndim))
    axes = tuple(draw(st.permutations(range(ndim)))[:k])
    kwargs = dict(axes=axes, norm=norm)
    if draw(st.booleans()):
      kwargs["s"] = tuple(draw(st.lists(st.integers(1, 8), min_size=k, max_size=k)))
  kind = draw(st.sampled_from(["f32", "f64", "c64", "i32"]))
  return name, shape, kwargs, kind, draw(st.integers(0, 99))


_KINDS = {"f32": (np.float32, False, np.float32), "f64": (np.float64, True, np.float64),
          "c64": (np.complex64, False, np.complex64), "i32": (np.int32, False, np.float32)}


@given(_case())
def test_matches_scipy(case):
  name, shape, kwargs, kind, seed = case
  dtype, wide, out_dtype = _KINDS[kind]
  x = rand(np.random.default_rng(seed), shape, dtype)
  expected = getattr(sfft, name)(x.astype(np.complex128 if kind == "c64" else np.float64),
                                 **kwargs)
  with enable_x64(wide):
    out = hlox.jit(lambda x: getattr(hfft, name)(x, **kwargs))(x)
    scale = max(1.0, np.abs(expected).max())
    assert_close(out, expected, out_dtype, rtol=1e-10 if wide else 2e-5,
                 atol=(1e-10 if wide else 2e-5) * scale * 4)


def test_eager_matches_jit_and_round_trips():
  x = rand(np.random.default_rng(1), (4, 5), np.float32)
  for norm in [None, "ortho"]:
    eager = hfft.dctn(x, norm=norm)
    assert_close(eager, hlox.jit(lambda x: hfft.dctn(x, norm=norm))(x), np.float32,
                 rtol=1e-5, atol=1e-5)
    assert_close(hfft.idctn(eager, norm=norm), x, np.float32, rtol=1e-4, atol=1e-5)
    assert_close(hfft.idct(hfft.dct(x, axis=0, norm=norm), axis=0, norm=norm), x, np.float32,
                 rtol=1e-4, atol=1e-5)


def test_grads_and_vmap():
  rng = np.random.default_rng(2)
  with enable_x64():
    check_grads(hlox.jit(lambda x: hfft.dct(x, norm="ortho") ** 2),
                (rng.standard_normal((3, 5)),), order=2, atol=1e-6, rtol=1e-6)
    for f in [lambda x: hfft.idct(x) ** 2, lambda x: hfft.dctn(x, s=(3, 4))]:
      check_grads(hlox.jit(f), (rng.standard_normal((3, 5)),), order=1, atol=1e-6, rtol=1e-6)
  x = rand(rng, (4, 6), np.float32)
  f = lambda v: hfft.dct(v, n=8)
  assert_close(hlox.vmap(f, in_axes=1)(x), np.stack([sfft.dct(x[:, j], n=8) for j in range(6)]),
               np.float32, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("call,error,match", [
    (lambda: hfft.dct(np.ones(4), type=3), NotImplementedError, "Only DCT type 2"),
    (lambda: hfft.idctn(np.ones(4), type=1), NotImplementedError, "Only DCT type 2"),
    (lambda: hfft.dct(np.ones(4), norm="forward"), ValueError, "is not implemented"),
    (lambda: hfft.dct(np.ones(4), axis=1), ValueError, "out of bounds"),
    (lambda: hfft.dctn(np.ones(4), s=(2, 2)), ValueError, "at most x.ndim"),
    (lambda: hfft.dctn(np.ones((2, 2)), axes=(0, 0)), ValueError, "repeated axis"),
    (lambda: hfft.dct([1.0, 2.0]), TypeError, "requires ndarray"),
])
def test_bad_input(call, error, match):
  with pytest.raises(error, match=match):
    call()


ORACLE_PROGRAMS = {
    "dct": "return fft.dct(np.arange(7.0) ** 1.5, n=9, norm='ortho')",
    "dct_int": "return fft.dct(np.arange(6), axis=0)",
    "idct": "return fft.idct(np.sin(np.arange(12.0)).reshape(3, 4), axis=0)",
    "dctn": "return fft.dctn(np.sin(np.arange(60.0)).reshape(3, 4, 5), s=(2, 6), "
            "axes=(2, 0))",
    "idctn_complex": "return fft.idctn(np.arange(12.0).reshape(3, 4) + 1j, norm='ortho')",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax
    import jax.scipy.fft as fft
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(fft, np):\\n  " + body, ns)
      r = jax.jit(lambda: ns["prog"](fft, np))()
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
  for name, body in sorted(ORACLE_PROGRAMS.items()):
    ns = {}
    exec("def prog(fft, np):\n  " + body, ns)
    result = hlox.jit(lambda: ns["prog"](hfft, np))()
    expected = expected_all[name]
    assert [list(np.shape(result)), str(result.dtype)] == [expected["shape"],
                                                           expected["dtype"]], name
    value = np.asarray(expected["real"]) + 1j * np.asarray(expected["imag"])
    np.testing.assert_allclose(np.asarray(result).astype(np.complex128), value, rtol=2e-5,
                               atol=2e-5, err_msg=name)
