"""hlox.scipy.special (hlox/scipy/special.py, special_more.py): every jax.scipy.special name;
values against SciPy over hypothesis-drawn inputs (float32 and float64), jit against eager,
vmap against a loop, check_grads (float64) where JAX defines derivatives, JAX's result dtypes
and weak types, errors; and a JAX-oracle comparison (JAX in a subprocess)."""
import importlib.util
import textwrap

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, strategies as st

import hlox
from hlox.config import enable_x64
from hlox.scipy import special as hs

from tests.check_grads import check_grads
from tests.util import run_in_jax

# dir(jax.scipy.special) in JAX 0.10.2, public names.
JAX_SPECIAL_NAMES = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb",
    "dawsn", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit",
    "expn", "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn",
    "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax",
    "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "owens_t", "poch",
    "polygamma", "rel_entr", "sici", "softmax", "spence", "sph_harm_y", "wofz", "xlog1py",
    "xlogy", "zeta",
]


def test_every_jax_name_is_there():
  missing = [n for n in JAX_SPECIAL_NAMES if n not in dir(hs)]
  assert not missing
  assert set(hs.__all__) >= set(JAX_SPECIAL_NAMES)


# --- values against SciPy ----------------------------------------------------------------

N = 12  # one length for every draw, so each function compiles once per dtype


def _floats(lo, hi):
  # Values that round to float32 subnormals are flushed to zero by XLA on CPU (and SciPy
  # keeps them), so draw none.
  value = st.floats(lo, hi, allow_nan=False).map(lambda v: 0.0 if abs(v) < 1e-30 else v)
  return st.lists(value, min_size=N, max_size=N)


def _ints(lo, hi):
  return st.lists(st.integers(lo, hi), min_size=N, max_size=N)


# name: (hlox function, SciPy reference, argument strategies, float32 rtol, float64 rtol,
# atol). Ranges keep float32 references representable (no overflow/underflow).
RECORDS = {
    "gamma": (hs.gamma, sp.gamma, [_floats(-8, 20)], 2e-5, 1e-12, 0),
    "loggamma": (hs.loggamma, sp.loggamma, [_floats(0.01, 1e4)], 2e-5, 1e-12, 1e-6),
    "gammasgn": (hs.gammasgn, sp.gammasgn, [_floats(-10, 10)], 0, 0, 0),
    # (At the poles of Gamma(b), b = 0, -1, ..., JAX gives NaN where SciPy takes limits.)
    "beta": (hs.beta, sp.beta, [_floats(0.1, 15), _floats(0.1, 15)], 5e-5, 1e-11, 0),
    "factorial": (hs.factorial, sp.factorial, [_ints(-2, 30)], 2e-5, 1e-12, 0),
    "comb": (hs.comb, sp.comb, [_ints(-1, 40), _ints(-1, 40)], 5e-5, 1e-11, 0),
    "poch": (hs.poch, sp.poch, [_floats(0.1, 10), _floats(-2, 8)], 5e-5, 1e-11, 0),
    "entr": (hs.entr, sp.entr, [_floats(-1, 50)], 2e-6, 1e-14, 1e-7),
    "rel_entr": (hs.rel_entr, sp.rel_entr, [_floats(0, 5), _floats(0, 5)], 2e-5, 1e-12, 1e-6),
    "kl_div": (hs.kl_div, sp.kl_div, [_floats(0, 5), _floats(0.01, 5)], 2e-5, 1e-11, 1e-5),
    "boxcox": (hs.boxcox, sp.boxcox, [_floats(0.01, 20), _floats(-2, 2)], 2e-5, 1e-12, 1e-6),
    "boxcox1p": (hs.boxcox1p, sp.boxcox1p, [_floats(-0.9, 20), _floats(-2, 2)], 2e-5, 1e-12,
                 1e-6),
    "ndtr": (hs.ndtr, sp.ndtr, [_floats(-12, 12)], 2e-5, 1e-13, 0),
    "ndtri": (hs.ndtri, sp.ndtri, [_floats(0, 1)], 2e-5, 1e-12, 1e-6),
    "log_ndtr": (hs.log_ndtr, sp.log_ndtr, [_floats(-8, 30)], 2e-5, 1e-12, 0),
    "i0": (hs.i0, sp.i0, [_floats(-40, 40)], 2e-5, 1e-13, 0),
    "i1": (hs.i1, sp.i1, [_floats(-40, 40)], 2e-5, 1e-13, 0),
    "erfcx": (hs.erfcx, sp.erfcx, [_floats(-9, 1e4)], 2e-5, 2e-13, 0),
    "dawsn": (hs.dawsn, sp.dawsn, [_floats(-50, 50)], 2e-5, 1e-12, 0),
    "exp1": (hs.exp1, sp.exp1, [_floats(1e-3, 80)], 2e-5, 1e-13, 0),
    "expi": (hs.expi, sp.expi, [_floats(-80, 80)], 2e-5, 1e-12, 1e-30),
    "expn": (hs.expn, sp.expn, [_ints(0, 12), _floats(0, 60)], 5e-5, 1e-12, 1e-30),
    "spence": (hs.spence, sp.spence, [_floats(0, 100)], 2e-5, 1e-13, 1e-7),
    "owens_t": (hs.owens_t, sp.owens_t, [_floats(-6, 6), _floats(-20, 20)], 5e-5, 1e-12,
                1e-9),
    "sici": (hs.sici, sp.sici, [_floats(-200, 200)], 2e-5, 1e-12, 1e-7),
    "fresnel": (hs.fresnel, sp.fresnel, [_floats(-30, 30)], 2e-5, 1e-12, 1e-7),
    "hyp1f1": (hs.hyp1f1, sp.hyp1f1, [_floats(-3, 3), _floats(0.3, 5), _floats(-30, 30)],
               2e-4, 1e-10, 1e-6),
    "hyp2f1": (hs.hyp2f1, sp.hyp2f1, [_floats(-2, 2), _floats(-2, 2), _floats(2.1, 5),
                                      _floats(-2, 0.9)], 2e-4, 1e-10, 1e-6),
    "multigammaln": (lambda a: hs.multigammaln(a, 3), lambda a: sp.multigammaln(a, 3),
                     [_floats(1.1, 30)], 2e-5, 1e-12, 0),
    "softmax": (lambda x: hs.softmax(x), sp.softmax, [_floats(-20, 20)], 2e-5, 1e-13, 1e-12),
    "log_softmax": (lambda x: hs.log_softmax(x), sp.log_softmax, [_floats(-20, 20)], 2e-5,
                    1e-13, 1e-5),
}

_JITTED = {}


def _run(name, dtype, args):
  fn = RECORDS[name][0]
  key = (name, dtype)
  if key not in _JITTED:
    _JITTED[key] = hlox.jit(fn)
  return _JITTED[key](*args)


def _compare(name, dtype, raw):
  fn, ref, _, rtol32, rtol64, atol = RECORDS[name]
  ints = name in ("factorial", "comb")
  args = [np.asarray(a, np.float64 if ints else dtype) if not (name == "expn" and i == 0)
          else np.asarray(a, np.int32) for i, a in enumerate(raw)]
  if ints:
    args = [a.astype(dtype) for a in args]
  expected = ref(*[a.astype(np.float64) for a in args])
  out = _run(name, dtype, args)
  outs = out if isinstance(out, tuple) else (out,)
  refs = expected if isinstance(expected, tuple) else (expected,)
  rtol = rtol32 if dtype == np.float32 else rtol64
  for o, r in zip(outs, refs):
    assert o.dtype == dtype, (name, o.dtype)
    np.testing.assert_allclose(np.asarray(o, np.float64), r, rtol=rtol,
                               atol=max(atol * (1e3 if dtype == np.float32 else 1), 1e-30),
                               equal_nan=True, err_msg=name)


# Compiling the longer compositions (continued fractions, series) takes seconds each, so the
# full sweep is marked slow; the cheap ones run in float32 by default.
_QUICK = {"gamma", "gammasgn", "beta", "factorial", "comb", "entr", "rel_entr", "kl_div",
          "boxcox", "ndtr", "i0", "softmax", "multigammaln"}
_SWEEP = [pytest.param(n, d, marks=() if (n in _QUICK and d == np.float32)
                       else pytest.mark.slow) for n in sorted(RECORDS)
          for d in (np.float32, np.float64)]


@pytest.mark.parametrize("name,dtype", _SWEEP)
def test_matches_scipy(name, dtype):
  strategies = RECORDS[name][2]

  @given(st.tuples(*strategies))
  def check(raw):
    with enable_x64(dtype == np.float64):
      _compare(name, dtype, raw)

  check()


def test_sici_rejects_complex_input():
  with pytest.raises(ValueError, match="Argument `x` to sici must be real-valued"):
    hs.sici(np.arange(3, dtype=complex))


@pytest.mark.slow
def test_special_values():
  nan, inf = np.nan, np.inf
  e = np.array([0.0, inf, -inf, nan, 1e-30])
  with enable_x64():
    for name in ("gamma", "gammasgn", "erfcx", "dawsn", "expi", "exp1", "ndtr", "ndtri",
                 "log_ndtr", "entr", "i0", "i1"):
      np.testing.assert_allclose(np.asarray(hlox.jit(getattr(hs, name))(e)),
                                 getattr(sp, name)(e),
                                 rtol=1e-13, equal_nan=True, err_msg=name)
    for name in ("sici", "fresnel"):
      for o, r in zip(hlox.jit(getattr(hs, name))(e), getattr(sp, name)(e)):
        np.testing.assert_allclose(np.asarray(o), r, rtol=1e-13, equal_nan=True)
    # As JAX: loggamma is NaN at 0 and for negative reals; spence(inf) is NaN.
    assert np.isnan(np.asarray(hs.loggamma(np.array([0.0, -1.5])))).all()
    assert np.isnan(float(hs.spence(np.inf)))
    np.testing.assert_allclose(np.asarray(hs.ndtri(np.array([1e-300, 1 - 1e-16]))),
                               sp.ndtri(np.array([1e-300, 1 - 1e-16])), rtol=1e-13)
    # expn: x == 0 (inf for n < 2, 1/(n-1) otherwise), n == 0, invalid n or x.
    n = np.array([0, 1, 2, 5, 0, -1, 2])
    x = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 1.0, -1.0])
    np.testing.assert_allclose(np.asarray(hs.expn(n, x)), sp.expn(n, x), equal_nan=True)
    # hyp2f1 at x == 1 (Gauss' sum) and with a terminating series.
    np.testing.assert_allclose(float(hs.hyp2f1(0.5, 0.3, 2.5, 1.0)),
                               sp.hyp2f1(0.5, 0.3, 2.5, 1.0), rtol=1e-12)
    np.testing.assert_allclose(float(hs.hyp2f1(-3.0, 1.5, 2.5, 0.7)),
                               sp.hyp2f1(-3.0, 1.5, 2.5, 0.7), rtol=1e-12)
    np.testing.assert_allclose(float(hs.hyp1f1(1.5, 1.5, 2.0)), np.exp(2.0), rtol=1e-13)
    assert float(hs.hyp1f1(0.0, 1.5, 2.0)) == 1.0


@pytest.mark.slow
def test_complex_gamma_loggamma_wofz_erfcx():
  rng = np.random.default_rng(0)
  z = rng.uniform(-12, 12, 40) + 1j * rng.uniform(-12, 12, 40)
  z = np.concatenate([z, [-2.5 + 0j, 0.5 + 0j, 3 - 1e-10j, -3 + 1e-10j]])
  with enable_x64():
    for name, rtol in (("loggamma", 1e-12), ("gamma", 1e-11), ("wofz", 1e-12),
                       ("erfcx", 1e-12)):
      out = hlox.jit(getattr(hs, name))(z)
      assert out.dtype == np.complex128
      np.testing.assert_allclose(np.asarray(out), getattr(sp, name)(z), rtol=rtol,
                                 err_msg=name)
    # Poles give nan + nan j, as SciPy.
    assert np.isnan(np.asarray(hs.loggamma(np.array([0j, -2 + 0j])))).all()
  z32 = (z / 3).astype(np.complex64)  # exp(-z^2) of the lower half plane stays in range
  np.testing.assert_allclose(np.asarray(hs.wofz(z32)), sp.wofz(z32.astype(np.complex128)),
                             rtol=2e-5)
  assert hs.wofz(np.float32(0.5)).dtype == np.complex64


@pytest.mark.slow
def test_bessel_jn_sph_harm_bernoulli():
  z = np.array([0.5, 1.0, 3.0, 7.5, 12.0])
  with enable_x64():
    out = hs.bessel_jn(z, v=4)
    assert out.shape == (5, 5)
    np.testing.assert_allclose(np.asarray(out), np.stack([sp.jv(k, z) for k in range(5)]),
                               rtol=1e-10, atol=1e-14)
    n = np.array([0, 1, 1, 2, 3, 3, 4, 4])
    m = np.array([0, -1, 1, 2, -3, 1, 0, -4])
    theta = np.linspace(0.1, 3.0, 8)
    phi = np.linspace(-2.0, 5.0, 8)
    y = hs.sph_harm_y(n, m, theta, phi)
    assert y.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(y), sp.sph_harm_y(n, m, theta, phi), rtol=1e-12,
                               atol=1e-14)
    # n_max given statically: the same under jit.
    jitted = hlox.jit(lambda n, m, t, p: hs.sph_harm_y(n, m, t, p, n_max=4))
    np.testing.assert_allclose(np.asarray(jitted(n, m, theta, phi)), np.asarray(y),
                               rtol=1e-13)
    np.testing.assert_allclose(np.asarray(hs.bernoulli(12)), sp.bernoulli(12), rtol=1e-10)
  assert hs.bernoulli(3).dtype == np.float32
  np.testing.assert_allclose(np.asarray(hs.bernoulli(2)), [1.0, -0.5, 1 / 6], rtol=1e-7)


@pytest.mark.slow
def test_jit_matches_eager():
  x = np.linspace(0.15, 7.3, 7).astype(np.float32)
  for fn, args in [(hs.erfcx, (x - 3,)), (hs.owens_t, (x - 3, x / 2)), (hs.sici, (x * 3,)),
                   (hs.ndtri, (x / 8,))]:
    eager, jitted = fn(*args), hlox.jit(fn)(*args)
    for e, j in zip(eager if isinstance(eager, tuple) else (eager,),
                    jitted if isinstance(jitted, tuple) else (jitted,)):
      np.testing.assert_allclose(np.asarray(e), np.asarray(j), rtol=2e-6, atol=1e-7)


@pytest.mark.slow
def test_vmap_matches_loop():
  x = np.linspace(0.2, 4.0, 12).reshape(3, 4).astype(np.float32)
  y = x[::-1] - 2
  for fn, args in [(hs.owens_t, (x, y)), (lambda a, b: hs.hyp1f1(a, 1.5, b), (x, y)),
                   (lambda a: hs.expn(2, a), (x,)), (lambda a: hs.bessel_jn(a, v=2)[1], (x,)),
                   (lambda a: hs.softmax(a, axis=0), (x,))]:
    out = hlox.jit(hlox.vmap(fn))(*args)
    row = hlox.jit(fn)
    loop = np.stack([np.asarray(row(*[a[i] for a in args])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=2e-6, atol=1e-7)


# --- derivatives --------------------------------------------------------------------------

# (function, arguments, order): order 2 for the hand-written JVP rules (and a few compositions),
# order 1 elsewhere to keep the suite fast. As in JAX, exp1's second derivative needs E_{-1}
# (NaN), and hyp1f1/hyp2f1's parameter derivatives are while-loop series (no reverse mode
# of their derivatives).
GRAD_CASES = {
    "gamma": (hs.gamma, (np.array([0.7, 2.3, -1.5]),), 1),
    "loggamma": (hs.loggamma, (np.array([0.7, 2.3, 5.0]),), 1),
    "beta": (hs.beta, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "factorial": (hs.factorial, (np.array([0.7, 2.3]),), 1),
    "comb": (hs.comb, (np.array([5.5, 7.0]), np.array([2.1, 3.0])), 1),
    "poch": (hs.poch, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "multigammaln": (lambda a: hs.multigammaln(a, 3), (np.array([2.7, 4.3]),), 1),
    "entr": (hs.entr, (np.array([0.7, 2.3]),), 1),
    "rel_entr": (hs.rel_entr, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "kl_div": (hs.kl_div, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "boxcox": (hs.boxcox, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "boxcox1p": (hs.boxcox1p, (np.array([0.7, 2.3]), np.array([1.5, 0.4])), 1),
    "softmax": (lambda x: hs.softmax(x, axis=-1), (np.array([[0.7, 2.3, -1.0]]),), 1),
    "log_softmax": (hs.log_softmax, (np.array([[0.7, 2.3, -1.0]]),), 1),
    "ndtr": (hs.ndtr, (np.array([-3.0, 0.2, 2.0]),), 2),
    "ndtri": (hs.ndtri, (np.array([0.05, 0.3, 0.9]),), 2),
    "log_ndtr": (hs.log_ndtr, (np.array([-25.0, -3.0, 0.2, 9.0]),), 2),
    "i0": (hs.i0, (np.array([-3.0, 0.2, 2.0]),), 2),
    "i1": (hs.i1, (np.array([-3.0, 0.2, 2.0]),), 1),
    "erfcx": (hs.erfcx, (np.array([-3.0, 0.2, 2.0, 30.0]),), 2),
    "dawsn": (hs.dawsn, (np.array([-3.0, 0.2, 2.0]),), 2),
    "fresnel": (hs.fresnel, (np.array([-3.0, 0.2, 2.0]),), 2),
    "exp1": (hs.exp1, (np.array([0.3, 1.2, 5.0]),), 1),
    "expi": (hs.expi, (np.array([-3.0, 0.2, 2.0, 50.0]),), 2),
    "expn": (lambda x: hs.expn(3, x), (np.array([0.3, 1.2, 5.0]),), 2),
    "sici": (hs.sici, (np.array([-3.0, 0.2, 6.0]),), 2),
    "spence": (hs.spence, (np.array([0.3, 1.2, 5.0]),), 2),
    "owens_t": (hs.owens_t, (np.array([0.3, -1.2, 2.0]), np.array([0.5, 3.0, -0.7])), 2),
    "hyp1f1": (hs.hyp1f1, (np.array([0.3, 1.2]), np.array([1.5, 2.2]), np.array([0.5, -2.0])),
               1),
    "hyp2f1": (hs.hyp2f1, (np.array([0.3, 1.2]), np.array([1.5, 0.2]), np.array([2.5, 3.2]),
                           np.array([0.3, -0.4])), 1),
    "bessel_jn": (lambda z: hs.bessel_jn(z, v=2), (np.array([0.5, 2.0, 3.0]),), 1),
}


_HEAVY = {"expn", "exp1", "expi", "hyp1f1", "hyp2f1", "sici", "fresnel", "owens_t", "spence",
          "dawsn", "erfcx", "bessel_jn", "ndtri", "log_ndtr", "gamma", "poch"}


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _HEAVY
                                  else n for n in sorted(GRAD_CASES)])
def test_check_grads(name):
  fn, args, order = GRAD_CASES[name]
  with enable_x64():
    check_grads(fn, args, order=order, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_closed_form_derivatives():
  with enable_x64():
    x = np.array([0.3, 1.7, 4.0])
    np.testing.assert_allclose(np.asarray(hlox.vmap(hlox.grad(hs.expi))(x)), np.exp(x) / x,
                               rtol=1e-12)
    ds = hlox.vmap(hlox.grad(lambda v: hs.fresnel(v)[0]))(x)
    np.testing.assert_allclose(np.asarray(ds), np.sin(np.pi * x * x / 2), rtol=1e-12)
    dn = hlox.vmap(hlox.grad(hs.ndtri))(np.array([0.01, 0.5, 0.99]))
    q = sp.ndtri(np.array([0.01, 0.5, 0.99]))
    np.testing.assert_allclose(np.asarray(dn), np.sqrt(2 * np.pi) * np.exp(q * q / 2),
                               rtol=1e-12)
    dh = hlox.grad(hs.owens_t, argnums=(0, 1))(0.7, 1.3)
    ref_h = -np.exp(-0.7 ** 2 / 2) * sp.erf(1.3 * 0.7 / np.sqrt(2)) / (2 * np.sqrt(2 * np.pi))
    ref_a = np.exp(-0.7 ** 2 * (1 + 1.3 ** 2) / 2) / (2 * np.pi * (1 + 1.3 ** 2))
    np.testing.assert_allclose([float(dh[0]), float(dh[1])], [ref_h, ref_a], rtol=1e-12)
    # wofz is holomorphic: its JVP is w'(z) t with w' = -2 z w + 2i / sqrt(pi).
    z = np.array([0.3 + 0.5j, -1.2 + 0.1j, 2.0 - 1.5j])
    t = np.array([1.0 + 0.5j, -0.3j, 2.0])
    _, jt = hlox.jvp(hs.wofz, (z,), (t,))
    w = sp.wofz(z)
    np.testing.assert_allclose(np.asarray(jt), (-2 * z * w + 2j / np.sqrt(np.pi)) * t,
                               rtol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(np.asarray(jt), (sp.wofz(z + h * t) - sp.wofz(z - h * t)) / (2 * h),
                               rtol=1e-7)


# --- dtypes, weak types, errors -----------------------------------------------------------

# JAX 0.10.2 on Python-scalar arguments: (arguments, weakly typed result).
WEAK = {
    "gamma": ((2.5,), False), "loggamma": ((2.5,), True), "gammasgn": ((2.5,), False),
    "beta": ((1.5, 2.5), False), "betaln": ((1.5, 2.5), True), "factorial": ((3.0,), True),
    "comb": ((5.0, 2.0), True), "poch": ((2.0, 3.0), False), "ndtr": ((0.3,), False),
    "ndtri": ((0.3,), False), "log_ndtr": ((0.3,), False), "i0": ((0.3,), True),
    "i1": ((0.3,), True), "erfcx": ((0.3,), False), "dawsn": ((0.3,), False),
    "exp1": ((0.3,), False), "expi": ((0.3,), False), "expn": ((2, 0.3), False),
    "hyp1f1": ((0.5, 1.5, 0.3), False), "hyp2f1": ((0.5, 1.5, 2.5, 0.3), False),
    "kl_div": ((0.3, 0.5), True), "rel_entr": ((0.3, 0.5), True), "entr": ((0.3,), True),
    "boxcox": ((0.3, 0.5), True), "boxcox1p": ((0.3, 0.5), True),
    "multigammaln": ((3.0, 2), False), "spence": ((0.3,), False),
    "owens_t": ((0.3, 0.5), False), "zeta": ((2.0, 1.0), True), "polygamma": ((1, 0.3), True),
}


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("name", sorted(WEAK))
def test_result_dtype_and_weak_type_as_jax(name):
  args, weak = WEAK[name]
  out = getattr(hs, name)(*args)
  assert out.dtype == np.float32
  assert out.aval.weak_type == weak
  typed = getattr(hs, name)(*[np.float32(a) if isinstance(a, float) else a for a in args])
  assert typed.dtype == np.float32 and not typed.aval.weak_type
  with enable_x64():
    assert getattr(hs, name)(*[np.float64(a) if isinstance(a, float) else a
                               for a in args]).dtype == np.float64


def test_tuple_and_complex_result_dtypes():
  for name in ("sici", "fresnel"):
    s, c = getattr(hs, name)(0.3)
    assert s.dtype == c.dtype == np.float32 and not s.aval.weak_type
  assert hs.wofz(0.3).dtype == np.complex64
  assert hs.softmax(np.arange(3)).dtype == np.float32
  assert hs.bessel_jn(1.5, v=2).shape == (3,)


def test_bad_input():
  with pytest.raises(TypeError, match="ndtr.*int32"):
    hs.ndtr(np.arange(3))
  with pytest.raises(TypeError, match="spence"):
    hs.spence(1)
  with pytest.raises(ValueError, match="polygamma.*integer"):
    hs.polygamma(1.0, 0.5)
  for name in ("entr", "kl_div", "beta", "dawsn", "expi", "sici", "hyp1f1"):
    fn = getattr(hs, name)
    nargs = {"kl_div": 2, "beta": 2, "hyp1f1": 3}.get(name, 1)
    with pytest.raises(ValueError, match="complex"):
      fn(*[np.complex64(1 + 1j)] * nargs)
  with pytest.raises(ValueError, match="series_order"):
    hs.log_ndtr(1.0, series_order=-1)
  with pytest.raises(TypeError, match="series_order"):
    hs.log_ndtr(1.0, series_order=2.0)
  with pytest.raises(ValueError, match="non-negative"):
    hs.bernoulli(-1)
  with pytest.raises(TypeError, match="multigammaln"):
    hlox.jit(lambda a, d: hs.multigammaln(a, d))(3.0, 2)
  with pytest.raises(TypeError, match="n_max"):
    hlox.jit(lambda n: hs.sph_harm_y(n, 0, 0.3, 0.2))(np.array([1]))
  with pytest.raises(NotImplementedError, match="exact"):
    hs.factorial(3, exact=True)


# --- JAX oracle ---------------------------------------------------------------------------

# Each program is the body of a function of (sc, np) returning a float array; ``sc`` is the
# library's scipy package. Complex results are returned as stacked real and imaginary parts.
_X = "np.linspace(-5.5, 6.5, 13).astype(np.float32)"
_P = "np.linspace(0.02, 9.5, 13).astype(np.float32)"
_U = "np.linspace(0.001, 0.999, 13).astype(np.float32)"
ORACLE = {
    "gamma": f"return sc.special.gamma({_X})",
    "loggamma": f"return sc.special.loggamma({_P})",
    "gammasgn": f"return sc.special.gammasgn({_X})",
    "beta": f"return sc.special.beta({_P}, {_P}[::-1])",
    "factorial": f"return sc.special.factorial({_P})",
    "comb": f"return sc.special.comb({_P} + 3, {_P})",
    "poch": f"return sc.special.poch({_P}, {_X} / 2)",
    "ndtr": f"return sc.special.ndtr({_X} * 2)",
    "ndtri": f"return sc.special.ndtri({_U})",
    "log_ndtr": f"return sc.special.log_ndtr({_X} * 3)",
    "i0_i1": f"return sc.special.i0({_X}) + sc.special.i1({_X})",
    "erfcx": f"return sc.special.erfcx({_X})",
    "dawsn": f"return sc.special.dawsn({_X})",
    "exp1": f"return sc.special.exp1({_P})",
    "expi": f"return sc.special.expi({_X} * 3)",
    "expn": f"return sc.special.expn(np.arange(13) % 5, {_P})",
    "hyp1f1": f"return sc.special.hyp1f1({_P} / 4 - 1, {_P} / 3 + 0.5, {_X} / 2)",
    "hyp2f1": f"return sc.special.hyp2f1({_P} / 8, 0.7, 2.5, {_U} * 1.8 - 1)",
    "entropies": f"return sc.special.kl_div({_U}, {_P}) + sc.special.rel_entr({_P}, {_U}) "
                 f"+ sc.special.entr({_P})",
    "boxcox": f"return sc.special.boxcox({_P}, {_X} / 4) + sc.special.boxcox1p({_P}, {_X} / 4)",
    "multigammaln": f"return sc.special.multigammaln({_P} + 2, 3)",
    "spence": f"return sc.special.spence({_P})",
    "owens_t": f"return sc.special.owens_t({_X}, {_X}[::-1] / 2)",
    "sici": f"return np.stack(sc.special.sici({_X} * 3))",
    "fresnel": f"return np.stack(sc.special.fresnel({_X}))",
    "wofz": f"w = sc.special.wofz({_X} + 1j * {_X}[::-1]); return np.stack([w.real, w.imag])",
    "erfcx_complex": f"w = sc.special.erfcx({_X} + 0.5j * {_X}[::-1]); "
                     "return np.stack([w.real, w.imag])",
    "softmax": f"return sc.special.softmax({_X}.reshape(13, 1) * {_U}, axis=0)",
    "log_softmax": f"return sc.special.log_softmax({_X})",
    "bernoulli": "return sc.special.bernoulli(10)",
    "sph_harm_y": "y = sc.special.sph_harm_y(np.array([0, 1, 2, 3]), np.array([0, -1, 2, 1]), "
                  "np.array([0.3, 1.0, 2.0, 2.5]), np.array([0.1, -1.0, 2.0, 4.0])); "
                  "return np.stack([y.real, y.imag])",
    "bessel_jn": "return sc.special.bessel_jn(np.array([0.5, 2.0, 5.0]), v=3)",
    "grad_log_ndtr": "import %s as t; return t.vmap(t.grad(sc.special.log_ndtr))(" + _X + " * 3)",
    "grad_owens_t": "import %s as t; return t.vmap(t.grad(sc.special.owens_t, argnums=(0, 1)))("
                    + _X + ", " + _U + ")[0]",
    "grad_hyp1f1": "import %s as t; return t.vmap(t.grad(sc.special.hyp1f1, argnums=(0, 1, 2)))("
                   + _U + ", " + _P + " + 0.5, " + _X + " / 3)[1]",
    "grad_gamma": "import %s as t; return t.vmap(t.grad(sc.special.gamma))(" + _P + ")",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.scipy, jax.scipy.special
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(sc, np):\\n  " + body.replace("import %s as t", "import jax as t"), ns)
      r = ns["prog"](jax.scipy, np)
      out[name] = {"value": np.asarray(r, dtype=np.float64).tolist(), "shape": list(np.shape(r)),
                   "dtype": str(r.dtype)}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def jax_results():
  if importlib.util.find_spec("jax") is None:
    pytest.skip("jax (the test oracle) is not installed")
  return run_in_jax(JAX_RUNNER, ORACLE)


# float32 programs: JAX's and hlox's algorithms differ (both are accurate to a few float32
# ulps where they are compared here), so the tolerance is a few ulps, not bit equality.
_ORACLE_TOL = {"hyp1f1": 5e-4, "grad_hyp1f1": 5e-3, "log_ndtr": 1e-5, "exp1": 1e-5,
               "expn": 1e-5, "sici": 1e-5, "owens_t": 1e-5}


@pytest.mark.slow
@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_matches_jax(name, jax_results):
  ns = {}
  exec("def prog(sc, np):\n  " + ORACLE[name].replace("import %s as t", "import hlox as t"),
       ns)
  result = ns["prog"](hlox.scipy, np)
  expected = jax_results[name]
  assert list(np.shape(result)) == expected["shape"]
  assert str(np.asarray(result).dtype) == expected["dtype"], name
  np.testing.assert_allclose(np.asarray(result, dtype=np.float64),
                             np.asarray(expected["value"], dtype=np.float64),
                             rtol=_ORACLE_TOL.get(name, 5e-6), atol=1e-6, equal_nan=True)


@pytest.mark.slow  # ~10 s (compiles); a CI test covers the same function
def test_zeta_gradients_in_both_arguments():
  """zeta's derivatives (of the Euler-Maclaurin expansion, as JAX) against finite differences
  of SciPy's zeta, in x and in q."""
  import scipy.special as sps
  from hlox.config import enable_x64
  from hlox.scipy.special import zeta
  x = np.array([1.5, 2.0, 3.3, 7.0])
  q = np.array([0.5, 1.0, 2.0, 4.0])
  eps = 1e-6
  with enable_x64():
    gx, gq = hlox.vmap(hlox.grad(zeta, argnums=(0, 1)))(x, q)
  np.testing.assert_allclose(gx, (sps.zeta(x + eps, q) - sps.zeta(x - eps, q)) / (2 * eps),
                             rtol=1e-6)
  np.testing.assert_allclose(gq, (sps.zeta(x, q + eps) - sps.zeta(x, q - eps)) / (2 * eps),
                             rtol=1e-6)
