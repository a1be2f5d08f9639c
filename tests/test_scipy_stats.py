"""hlox.scipy.stats (hlox/scipy/stats/) and hlox.scipy.integrate: every jax.scipy.stats name;
each distribution function against SciPy over hypothesis-drawn inputs (float32 and float64,
inside and outside the support), JAX's weak types, gradients, vmap and jit, the sample
statistics (mode, rankdata, sem), gaussian_kde, and a JAX-oracle comparison."""
import importlib.util
import textwrap

import numpy as np
import pytest
import scipy.integrate
import scipy.stats as ss
from hypothesis import given, settings, strategies as st

import hlox
from hlox.config import enable_x64
from hlox.scipy import integrate as hint
from hlox.scipy import stats as hst

from tests.check_grads import check_grads
from tests.util import run_in_jax

# dir(jax.scipy.stats) in JAX 0.10.2 and each distribution module's public functions.
JAX_STATS = {
    "bernoulli": ["cdf", "logpmf", "pmf", "ppf"],
    "beta": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "betabinom": ["logpmf", "pmf"], "binom": ["logpmf", "pmf"],
    "cauchy": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "chi2": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "dirichlet": ["logpdf", "pdf"],
    "expon": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "gamma": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "gennorm": ["cdf", "logpdf", "pdf"], "geom": ["logpmf", "pmf"],
    "gumbel_l": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "gumbel_r": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "laplace": ["cdf", "logpdf", "pdf"],
    "logistic": ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"],
    "multinomial": ["logpmf", "pmf"], "multivariate_normal": ["logpdf", "pdf"],
    "nbinom": ["logpmf", "pmf"],
    "norm": ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "pareto": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"],
    "poisson": ["cdf", "entropy", "logpmf", "pmf"], "t": ["logpdf", "pdf"],
    "truncnorm": ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"],
    "uniform": ["cdf", "logpdf", "pdf", "ppf"], "vonmises": ["logpdf", "pdf"],
    "wrapcauchy": ["logpdf", "pdf"],
}
JAX_STATS_OTHER = ["gaussian_kde", "mode", "rankdata", "sem"]


def test_every_jax_name_is_there():
  for module, functions in JAX_STATS.items():
    assert module in dir(hst), module
    missing = [f for f in functions if f not in dir(getattr(hst, module))]
    assert not missing, (module, missing)
  assert all(n in dir(hst) for n in JAX_STATS_OTHER)
  assert "trapezoid" in dir(hint)


# --- the univariate distributions against SciPy ------------------------------------------

N = 10


def _floats(lo, hi):
  return st.lists(st.floats(lo, hi, allow_nan=False).map(lambda v: 0.0 if abs(v) < 1e-30
                                                         else v), min_size=N, max_size=N)


def _ints(lo, hi):
  return st.lists(st.integers(lo, hi).map(float), min_size=N, max_size=N)


_SHAPE = _floats(0.3, 5)
PARAMS = {  # the argument strategies by parameter name
    "x": _floats(-5, 8), "q": _floats(0, 1), "p": _floats(0.05, 0.95), "a": _SHAPE,
    "b": _SHAPE, "df": _floats(0.5, 10), "mu": _floats(0.1, 20), "k": _ints(-1, 12),
    "n": _ints(1, 15), "beta": _floats(0.5, 4), "kappa": _floats(0.1, 20),
    "c": _floats(0.05, 0.95), "loc": _floats(-2, 2), "scale": _floats(0.3, 3),
}
OVERRIDES = {  # per distribution: other ranges, and the SciPy counterpart's parameter order
    "beta": {"x": _floats(-0.2, 1.2)}, "pareto": {"x": _floats(0.5, 12), "b": _floats(0.5, 4)},
    "wrapcauchy": {"x": _floats(0, 6.28)}, "vonmises": {"x": _floats(-3.1, 3.1)},
    "truncnorm": {"a": _floats(-3, 0.5), "b": _floats(0.6, 4)},
    "gumbel_l": {"p": _floats(0.01, 0.99)}, "gumbel_r": {"p": _floats(0.01, 0.99)},
    # At q == 0 SciPy's discrete ppf gives the support's start minus one, and the Cauchy
    # quantile tan(-pi/2) is only a large finite number in floating point (as in JAX).
    "bernoulli": {"k": _ints(-1, 2), "q": _floats(1e-3, 1)},
    "cauchy": {"q": _floats(1e-3, 0.999)},
    # norm.isf is ppf(1 - q), as JAX: in float32, 1 - q keeps few digits of a small q.
    "norm": {"q": _floats(1e-3, 1)},
    "geom": {"k": _ints(0, 12)},
}
SIGNATURES = {  # positional parameters of each function (loc/scale drawn when accepted)
    "bernoulli": {"logpmf": "k p loc", "pmf": "k p loc", "cdf": "k p", "ppf": "q p"},
    "beta": "x a b loc scale", "betabinom": "k n a b loc", "binom": "k n p loc",
    "cauchy": "x loc scale", "chi2": "x df loc scale", "expon": "x loc scale",
    "gamma": "x a loc scale", "gennorm": "x beta", "geom": "k p loc",
    "gumbel_l": "x loc scale", "gumbel_r": "x loc scale", "laplace": "x loc scale",
    "logistic": "x loc scale", "nbinom": "k n p loc", "norm": "x loc scale",
    "pareto": "x b loc scale", "poisson": {"logpmf": "k mu loc", "pmf": "k mu loc",
                                           "cdf": "k mu loc", "entropy": "mu"},
    "t": "x df loc scale", "truncnorm": "x a b loc scale", "uniform": "x loc scale",
    "vonmises": "x kappa", "wrapcauchy": "x c",
}
# Quantile functions take q (or p for the Gumbel ones) in place of x.
_Q_NAME = {"gumbel_l": "p", "gumbel_r": "p"}

CASES = [(d, f) for d, fs in sorted(JAX_STATS.items()) if d in SIGNATURES for f in fs]


def _signature(dist, fn):
  sig = SIGNATURES[dist]
  names = (sig[fn] if isinstance(sig, dict) else sig).split()
  if fn in ("ppf", "isf") and dist != "bernoulli":
    names = [_Q_NAME.get(dist, "q") if n == "x" else n for n in names]
  return names


def _scipy_ref(dist, fn, args):
  if dist == "vonmises":
    return getattr(ss.vonmises, fn)(args[0], args[1])
  if dist == "poisson" and fn == "entropy":
    return ss.poisson.entropy(args[0])
  return getattr(getattr(ss, dist), fn)(*args)


# float32: ~1e-4 relative (incomplete gamma/beta, exp of logs); float64: 1e-9.
_RTOL = {np.float32: 2e-4, np.float64: 1e-9}
_ATOL = {np.float32: 2e-5, np.float64: 1e-12}
_JITTED = {}


_QUICK = {"norm", "expon", "laplace", "logistic", "cauchy", "uniform", "gumbel_r"}
_SWEEP = [pytest.param(d, f, t, marks=() if (d in _QUICK and t == np.float32)
                       else pytest.mark.slow, id=f"{d}.{f}-{t.__name__}")
          for d, f in CASES for t in (np.float32, np.float64)]


@pytest.mark.ci_sample(2)
@settings(max_examples=6)
@given(data=st.data())
@pytest.mark.parametrize("dist,fn,dtype", _SWEEP)
def test_matches_scipy(dist, fn, dtype, data):
  names = _signature(dist, fn)
  overrides = OVERRIDES.get(dist, {})
  raw = [data.draw(overrides.get(n, PARAMS[n]), label=n) for n in names]
  with enable_x64(dtype == np.float64):
    args = [np.asarray(a, dtype) for a in raw]
    key = (dist, fn, dtype)
    if key not in _JITTED:
      _JITTED[key] = hlox.jit(getattr(getattr(hst, dist), fn))
    out = _JITTED[key](*args)
    assert out.dtype == dtype
    ref = _scipy_ref(dist, fn, [a.astype(np.float64) for a in args])
    np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=_RTOL[dtype],
                               atol=_ATOL[dtype], equal_nan=True, err_msg=f"{dist}.{fn}")


# JAX 0.10.2: results of all-Python-scalar calls are weakly typed except these.
STRONG = {"norm.cdf", "norm.isf", "norm.logcdf", "norm.logsf", "norm.ppf", "norm.sf",
          "uniform.cdf", "poisson.entropy"} | {f"truncnorm.{f}" for f in JAX_STATS["truncnorm"]}
_SCALARS = {"x": 0.3, "k": 1.0, "q": 0.3, "p": 0.4, "a": 1.5, "b": 2.5, "df": 3.0, "mu": 2.0,
            "n": 5.0, "beta": 1.5, "kappa": 1.2, "c": 0.5, "loc": 0.0, "scale": 1.0}


@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("dist,fn", CASES, ids=[f"{d}.{f}" for d, f in CASES])
def test_weak_type_as_jax(dist, fn):
  scalars = dict(_SCALARS, **({"a": -1.0, "b": 2.0} if dist == "truncnorm" else {}))
  if dist == "pareto":
    scalars["x"] = 1.5
  args = [scalars[n] for n in _signature(dist, fn) if n not in ("loc", "scale")]
  out = getattr(getattr(hst, dist), fn)(*args)
  assert out.dtype == np.float32
  assert out.aval.weak_type == (f"{dist}.{fn}" not in STRONG)


@pytest.mark.slow
def test_edges_of_the_support():
  with enable_x64():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(hst.beta.logpdf(x, 2.0, 3.0)),
                               ss.beta.logpdf(x, 2.0, 3.0))
    assert np.isnan(float(hst.beta.logpdf(0.5, -1.0, 2.0)))
    np.testing.assert_allclose(np.asarray(hst.gamma.logpdf(x, 2.0)), ss.gamma.logpdf(x, 2.0))
    np.testing.assert_allclose(np.asarray(hst.expon.cdf(x)), ss.expon.cdf(x))
    np.testing.assert_allclose(np.asarray(hst.uniform.logpdf(x)), ss.uniform.logpdf(x))
    np.testing.assert_allclose(np.asarray(hst.poisson.logpmf(np.array([0, 1.5, -1]), 2.0)),
                               [-2.0, -np.inf, -np.inf])
    np.testing.assert_allclose(np.asarray(hst.binom.pmf(np.array([0.0, 3.0]), 3.0, 1.0)),
                               ss.binom.pmf([0, 3], 3, 1.0))
    for q in (np.array([0.0, 1.0, -0.1, 1.1]),):
      for dist in ("norm", "expon", "uniform", "pareto"):
        extra = (2.0,) if dist == "pareto" else ()
        np.testing.assert_allclose(np.asarray(getattr(hst, dist).ppf(q, *extra)),
                                   getattr(ss, dist).ppf(q, *extra), equal_nan=True)
    # Far tails keep their digits (log-space functions).
    np.testing.assert_allclose(float(hst.norm.logcdf(-30.0)), ss.norm.logcdf(-30.0),
                               rtol=1e-10)
    np.testing.assert_allclose(float(hst.norm.logsf(30.0)), ss.norm.logsf(30.0), rtol=1e-10)
    np.testing.assert_allclose(float(hst.truncnorm.logpdf(9.5, 9.0, 12.0)),
                               ss.truncnorm.logpdf(9.5, 9.0, 12.0), rtol=1e-9)
    np.testing.assert_allclose(float(hst.gumbel_r.logsf(40.0)), ss.gumbel_r.logsf(40.0),
                               rtol=1e-10)


@pytest.mark.slow
def test_multivariate_distributions():
  rng = np.random.default_rng(0)
  with enable_x64():
    x = rng.standard_normal((5, 3))
    mean = rng.standard_normal(3)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    np.testing.assert_allclose(np.asarray(hst.multivariate_normal.logpdf(x, mean, cov)),
                               ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hst.multivariate_normal.pdf(x, mean, 2.0)),
                               ss.multivariate_normal.pdf(x, mean, 2.0), rtol=1e-12)
    np.testing.assert_allclose(float(hst.multivariate_normal.logpdf(0.3, 0.1, 2.0)),
                               ss.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-12)
    covs = np.stack([cov, 2 * cov])
    np.testing.assert_allclose(np.asarray(hst.multivariate_normal.logpdf(x[:2], mean, covs)),
                               [ss.multivariate_normal.logpdf(x[i], mean, covs[i])
                                for i in range(2)], rtol=1e-12)
    alpha = np.array([1.5, 2.0, 3.0])
    pts = rng.dirichlet(alpha, 4).T
    np.testing.assert_allclose(np.asarray(hst.dirichlet.logpdf(pts, alpha)),
                               ss.dirichlet.logpdf(pts, alpha), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hst.dirichlet.pdf(pts[:2], alpha)),
                               ss.dirichlet.pdf(pts, alpha), rtol=1e-12)
    counts = np.array([[1, 2, 3], [0, 6, 0], [2, 2, 1]])
    p = np.array([0.2, 0.3, 0.5])
    out = np.asarray(hst.multinomial.logpmf(counts[:2], 6, p))
    np.testing.assert_allclose(out, ss.multinomial.logpmf(counts[:2], 6, p), rtol=1e-12)
  with pytest.raises(ValueError, match="integer"):
    hst.multinomial.logpmf(np.array([1.0, 2.0]), 3, np.array([0.5, 0.5]))
  with pytest.raises(ValueError, match="alpha"):
    hst.dirichlet.logpdf(np.ones((3,)) / 3, np.ones((3, 1)))
  with pytest.raises(ValueError, match="incompatible shapes"):
    hst.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))


@pytest.mark.slow
def test_gradients():
  with enable_x64():
    x = np.array([-1.3, 0.2, 2.1])
    check_grads(lambda v: hst.norm.logcdf(v, 0.3, 1.5), (x,), order=2)
    check_grads(lambda v, df: hst.t.logpdf(v, df), (x, np.array([2.5, 4.0, 9.0])), order=2)
    check_grads(lambda v: hst.gamma.cdf(v, 2.5), (np.array([0.5, 2.0, 4.0]),), order=2)
    check_grads(lambda v, a: hst.beta.logpdf(v, a, 2.0), (np.array([0.2, 0.7]),
                                                          np.array([1.5, 3.0])), order=2)
    check_grads(lambda v: hst.truncnorm.logcdf(v, -1.0, 2.0), (np.array([-0.5, 0.4, 1.5]),),
                order=1)
    mean = np.array([0.1, -0.2])
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    check_grads(lambda m, c: hst.multivariate_normal.logpdf(x[:2], m, c), (mean, cov), order=1)
    # The score of the normal: d/dmu log N(x; mu, s) = (x - mu) / s^2.
    g = hlox.grad(lambda m: hst.norm.logpdf(1.2, m, 2.0))(0.2)
    np.testing.assert_allclose(float(g), (1.2 - 0.2) / 4.0, rtol=1e-12)


def test_vmap_and_jit():
  x = np.linspace(-2, 3, 12).reshape(3, 4).astype(np.float32)
  loc = np.array([0.0, 0.5, -1.0], np.float32)
  for fn in (hst.norm.logpdf, hst.cauchy.cdf, hst.logistic.sf, hst.laplace.cdf):
    out = hlox.vmap(fn)(x, loc)
    loop = np.stack([np.asarray(fn(x[i], loc[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(hlox.jit(fn)(x, 0.5)), np.asarray(fn(x, 0.5)),
                               rtol=1e-6)


# --- sample statistics, KDE, integrate ----------------------------------------------------

_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


@settings(max_examples=4)  # every new shape compiles mode and five rankdata methods
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.sampled_from([0, 1, None]))
def test_mode_rankdata_sem(values, axis):
  # Jitted: one compile per function and shape (eagerly each of their many primitives
  # compiles); test_stats_functions_details runs them eagerly.
  a = np.asarray(values * 2, np.float32).reshape(2, -1)
  res = hlox.jit(lambda a: hst.mode(a, axis=axis))(a)
  ref = ss.mode(a, axis=axis)
  np.testing.assert_array_equal(np.asarray(res.mode), ref.mode)
  np.testing.assert_array_equal(np.asarray(res.count), ref.count)
  ranks = hlox.jit(lambda a: [hst.rankdata(a, method, axis=axis) for method in _RANK_METHODS])
  for method, got in zip(_RANK_METHODS, ranks(a)):
    np.testing.assert_array_equal(np.asarray(got), ss.rankdata(a, method, axis=axis))
  if axis is not None and a.shape[axis] > 1:
    np.testing.assert_allclose(np.asarray(hst.sem(a, axis=axis)), ss.sem(a, axis=axis),
                               rtol=1e-5)


def test_stats_functions_details():
  a = np.array([[1.0, 3.0, 3.0], [2.0, np.nan, 2.0]])
  keep = hst.mode(np.array([[1, 1, 2], [2, 2, 2]]), axis=1, keepdims=True)
  assert keep.mode.shape == (2, 1) and keep.count.shape == (2, 1)
  assert np.isnan(np.asarray(hst.rankdata(a))).all()
  np.testing.assert_allclose(np.asarray(hst.sem(a, axis=1, nan_policy="omit")),
                             ss.sem(a, axis=1, nan_policy="omit"), rtol=1e-6)
  with pytest.raises(ValueError, match="nan_policy"):
    hst.mode(a, nan_policy="bad")
  with pytest.raises(ValueError, match="unknown method"):
    hst.rankdata(a, "bad")
  with enable_x64():
    mu = np.array([0.0, 0.5, 3.0, 20.0, 150.0])
    np.testing.assert_allclose(np.asarray(hst.poisson.entropy(mu)), ss.poisson.entropy(mu),
                               rtol=1e-6)


@pytest.mark.slow
def test_gaussian_kde():
  rng = np.random.default_rng(1)
  with enable_x64():
    data = rng.standard_normal((2, 40))
    pts = rng.standard_normal((2, 5))
    weights = rng.uniform(0.5, 2.0, 40)
    for kwargs in ({}, {"bw_method": "silverman"}, {"bw_method": 0.4}, {"weights": weights}):
      mine, ref = hst.gaussian_kde(data, **kwargs), ss.gaussian_kde(data, **kwargs)
      np.testing.assert_allclose(np.asarray(mine.evaluate(pts)), ref.evaluate(pts),
                                 rtol=1e-10)
      np.testing.assert_allclose(np.asarray(mine.logpdf(pts)), ref.logpdf(pts), rtol=1e-10)
      np.testing.assert_allclose(float(mine.neff), ref.neff, rtol=1e-12)
    kde, ref = hst.gaussian_kde(data), ss.gaussian_kde(data)
    np.testing.assert_allclose(float(kde.integrate_gaussian(np.zeros(2), np.eye(2))),
                               ref.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-10)
    other, other_ref = hst.gaussian_kde(data[:, :7] + 1), ss.gaussian_kde(data[:, :7] + 1)
    np.testing.assert_allclose(float(kde.integrate_kde(other)), ref.integrate_kde(other_ref),
                               rtol=1e-10)
    one, one_ref = hst.gaussian_kde(data[0]), ss.gaussian_kde(data[0])
    np.testing.assert_allclose(float(one.integrate_box_1d(-0.5, 1.0)),
                               one_ref.integrate_box_1d(-0.5, 1.0), rtol=1e-10)
    # A pytree: passes through jit.
    np.testing.assert_allclose(np.asarray(hlox.jit(lambda k, p: k(p))(kde, pts)),
                               ref(pts), rtol=1e-10)
    samples = kde.resample(hlox.random.key(0), (2000,))
    assert samples.shape == (2, 2000)
    np.testing.assert_allclose(np.asarray(samples).mean(1), data.mean(1), atol=0.15)
  with pytest.raises(ValueError, match="multiple elements"):
    hst.gaussian_kde(np.array([1.0]))
  with pytest.raises(ValueError, match="dimension"):
    hst.gaussian_kde(rng.standard_normal((2, 5))).evaluate(np.zeros((3, 2)))
  with pytest.raises(NotImplementedError):
    hst.gaussian_kde(rng.standard_normal((2, 5))).integrate_box([0, 0], [1, 1])


def test_trapezoid():
  y = np.array([[1.0, 2.0, 4.0, 7.0], [0.5, 0.0, 1.0, 3.0]], np.float32)
  x = np.array([0.0, 0.5, 2.0, 2.5], np.float32)
  np.testing.assert_allclose(np.asarray(hint.trapezoid(y, x)), scipy.integrate.trapezoid(y, x),
                             rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hint.trapezoid(y, dx=0.3, axis=0)),
                             scipy.integrate.trapezoid(y, dx=0.3, axis=0), rtol=1e-6)
  assert hint.trapezoid(np.arange(4)).dtype == np.float32
  g = hlox.grad(lambda v: hint.trapezoid(v, x))(y[0])
  np.testing.assert_allclose(np.asarray(g), [0.25, 1.0, 1.0, 0.25], rtol=1e-6)


# --- JAX oracle ---------------------------------------------------------------------------

_X = "np.linspace(-2.5, 4.5, 9).astype(np.float32)"
_Q = "np.linspace(0.05, 0.95, 9).astype(np.float32)"
_K = "np.arange(9).astype(np.float32)"
ORACLE = {
    "norm": f"s = sc.stats.norm; return np.stack([s.logpdf({_X}, 0.5, 2.0), s.cdf({_X}), "
            f"s.logcdf({_X} * 4), s.logsf({_X} * 4), s.ppf({_Q}), s.isf({_Q}, 1.0, 3.0)])",
    "t": f"return sc.stats.t.logpdf({_X}, 3.5, 0.2, 1.3)",
    "gamma": f"s = sc.stats.gamma; return np.stack([s.logpdf({_X}, 2.5), s.cdf({_X}, 2.5), "
             f"s.sf({_X}, 2.5, 0.5, 2.0), s.logcdf({_X} + 3, 1.5)])",
    "beta": f"s = sc.stats.beta; q = {_Q}; return np.stack([s.logpdf(q, 2.5, 1.5), "
            "s.cdf(q, 2.5, 1.5), s.sf(q, 0.7, 3.0), s.logsf(q, 2.0, 2.0)])",
    "chi2": f"s = sc.stats.chi2; return np.stack([s.logpdf({_X} + 3, 4.0), s.cdf({_X} + 3, 4.0), "
            f"s.logsf({_X} + 3, 2.5)])",
    "expon_laplace_logistic_cauchy": f"s = sc.stats; x = {_X}; q = {_Q}; return np.stack(["
            "s.expon.logpdf(x, 0.5, 2.0), s.expon.cdf(x), s.expon.ppf(q), "
            "s.laplace.logpdf(x, 0.3), s.laplace.cdf(x, 0.3, 2.0), s.logistic.logpdf(x), "
            "s.logistic.isf(q), s.cauchy.logsf(x), s.cauchy.ppf(q, 1.0, 2.0)])",
    "pareto_uniform": f"s = sc.stats; x = {_X} + 3; q = {_Q}; return np.stack(["
            "s.pareto.logpdf(x, 2.0), s.pareto.cdf(x, 1.5, 0.5), s.pareto.ppf(q, 3.0), "
            "s.uniform.logpdf(x, 1.0, 4.0), s.uniform.cdf(x, 1.0, 4.0), s.uniform.ppf(q)])",
    "gumbel": f"s = sc.stats; x = {_X}; q = {_Q}; return np.stack(["
            "s.gumbel_l.logpdf(x), s.gumbel_l.logcdf(x), s.gumbel_l.ppf(q), s.gumbel_r.logsf(x),"
            " s.gumbel_r.sf(x, 0.5, 2.0), s.gumbel_r.ppf(q)])",
    "shapes": f"s = sc.stats; x = {_X}; return np.stack([s.gennorm.logpdf(x, 1.5), "
              "s.gennorm.cdf(x, 2.5), s.vonmises.logpdf(x, 2.0), s.wrapcauchy.logpdf(x + 2.5, 0.4),"
              " s.truncnorm.logpdf(x, -1.0, 2.0), s.truncnorm.logcdf(x, -1.0, 2.0), "
              "s.truncnorm.sf(x, -2.0, 3.0)])",
    "discrete": f"s = sc.stats; k = {_K}; return np.stack([s.poisson.logpmf(k, 3.0), "
                "s.poisson.cdf(k, 2.5), s.binom.logpmf(k, 7.0, 0.3), s.nbinom.logpmf(k, 4.0, 0.4),"
                " s.geom.logpmf(k, 0.3), s.betabinom.logpmf(k, 7.0, 2.0, 3.0), "
                "s.bernoulli.logpmf(k, 0.3), s.bernoulli.cdf(k - 0.5, 0.3), "
                "s.bernoulli.ppf(k / 8, 0.3)])",
    "poisson_entropy": "return sc.stats.poisson.entropy(np.array([0.5, 3.0, 40.0, 300.0], np.float32))",
    "multivariate": "s = sc.stats; x = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3); "
                    "c = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]], np.float32); "
                    "a = np.array([1.5, 2.0, 3.0], np.float32); "
                    "d = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], np.float32).T; "
                    "return np.concatenate([s.multivariate_normal.logpdf(x, np.zeros(3, np.float32), c), "
                    "s.dirichlet.logpdf(d, a), s.multinomial.logpmf(np.array([[1, 2, 3]]), 6, "
                    "a / a.sum())])",
    "sample_stats": "s = sc.stats; a = np.array([[3, 1, 2, 2, 3, 3], [1, 1, 0, 2, 2, 5]], np.float32); "
                    "m = s.mode(a, axis=1); return np.concatenate([m.mode, m.count * 1.0, "
                    "s.rankdata(a), s.rankdata(a, 'dense', axis=1).ravel(), s.sem(a, axis=1)])",
    "kde": "d = np.linspace(-2, 3, 12).astype(np.float32).reshape(2, 6) ** 2; "
           "k = sc.stats.gaussian_kde(d); p = np.array([[0.5, 1.0], [2.0, 0.1]], np.float32); "
           "return np.concatenate([k.evaluate(p), k.logpdf(p)])",
    "trapezoid": "return sc.integrate.trapezoid(np.arange(12.0).reshape(3, 4) ** 2, "
                 "np.array([0.0, 0.5, 2.0, 2.5]))",
    "grad_norm_logcdf": "import %s as t; return t.vmap(t.grad(sc.stats.norm.logcdf))(" + _X + " * 4)",
    "grad_gamma_logpdf": "import %s as t; return t.vmap(t.grad(sc.stats.gamma.logpdf, argnums=(0, 1)))("
                         + _X + " + 3, " + _Q + " + 1)[1]",
}

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.scipy, jax.scipy.stats, jax.scipy.integrate
    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(sc, np):\\n  " + body.replace("import %s as t", "import jax as t"), ns)
      r = ns["prog"](jax.scipy, np)
      out[name] = {"value": np.asarray(r, dtype=np.float64).tolist(), "shape": list(np.shape(r)),
                   "dtype": str(np.asarray(r).dtype)}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def jax_results():
  if importlib.util.find_spec("jax") is None:
    pytest.skip("jax (the test oracle) is not installed")
  return run_in_jax(JAX_RUNNER, ORACLE)


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
                             rtol=2e-5, atol=2e-6, equal_nan=True)


def test_scalar_x_broadcasts_against_array_parameters():
  # The result has the broadcast shape of every argument, not x's (scipy_stats_test's
  # testUniformLogPdf draws x of shape () with loc, scale of shape (2, 1, 4)).
  loc = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 1, 4)
  scale = np.full((2, 1, 4), 1.5, np.float32)
  for fn in ("logpdf", "pdf", "cdf"):
    got = getattr(hst.uniform, fn)(np.float32(0.25), loc, scale)
    assert got.shape == (2, 1, 4)
    np.testing.assert_allclose(np.asarray(got), getattr(ss.uniform, fn)(0.25, loc, scale),
                               rtol=1e-6)
