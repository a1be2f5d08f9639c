"""The hlox.random distributions added after the first set: pareto, weibull_min, maxwell,
double_sided_maxwell, rayleigh, wald, geometric, triangular, f, generalized_normal, ball,
binomial, multinomial. Statistics with fixed seeds, bit-exactness with JAX 0.10.2 (hashes of
the same draws, recorded once: ``python tests/test_random_more.py`` with JAX installed
prints them), bad input, shapes, jit/vmap."""
import hashlib

import numpy as np
import pytest
import scipy.stats

import hlox
import hlox.numpy as jnp
from hlox import random as r

N = 20000

# Multinomial rows: (10; 0.2, 0.3, 0.5), and a last row (5; 0, 1, 0) whose zero-probability
# categories never get counts.
_MULTI_P = np.tile(np.array([0.2, 0.3, 0.5], np.float32), (N, 1))
_MULTI_P[-1] = [0.0, 1.0, 0.0]
_MULTI_N = np.full(N, 10.0, np.float32)
_MULTI_N[-1] = 5.0
# Binomial parameters as (N,) arrays, so that every draw shares one compiled sampler; the
# first entries of "binomial_special" are the special values.
_BINOM_SPECIAL_N = np.full(N, 4.0, np.float32)
_BINOM_SPECIAL_P = np.full(N, 0.5, np.float32)
_BINOM_SPECIAL_N[:6] = [-1.0, np.inf, 10.0, 10.0, 10.0, 3.5]
_BINOM_SPECIAL_P[:6] = [0.5, 0.5, np.nan, 0.0, 1.0, 1.0]
_BINOMIAL_CASES = [(20, 0.3), (7, 0.9), (1000, 0.4), (300, 0.85)]

# The draws under test, as expressions that JAX evaluates the same way (names: r, jnp, N,
# and the arrays above).
SAMPLES = {
    "pareto": "r.pareto(r.PRNGKey(1), 3.0, (N,))",
    "weibull_min": "r.weibull_min(r.PRNGKey(1), 2.0, 1.5, (N,))",
    "maxwell": "r.maxwell(r.PRNGKey(1), (N,))",
    "double_sided_maxwell": "r.double_sided_maxwell(r.PRNGKey(1), 1.0, 2.0, (N,))",
    "rayleigh": "r.rayleigh(r.PRNGKey(1), 2.0, (N,))",
    "wald": "r.wald(r.PRNGKey(1), 1.5, (N,))",
    "triangular": "r.triangular(r.PRNGKey(1), -1.0, 0.2, 2.0, (N,))",
    "f": "r.f(r.PRNGKey(1), 3.0, 5.0, (N,))",
    "generalized_normal": "r.generalized_normal(r.PRNGKey(1), 1.5, (N,))",
    "generalized_normal_small_p": "r.generalized_normal(r.PRNGKey(1), 0.5, (N,))",
    "ball_l1": "r.ball(r.PRNGKey(1), 2, 1.0, (N,))",
    "ball_l2": "r.ball(r.PRNGKey(2), 3, 2, (N,))",
    "geometric": "r.geometric(r.PRNGKey(4), 0.3, (N,))",
    "multinomial": "r.multinomial(r.PRNGKey(5), _MULTI_N, _MULTI_P)",
    "binomial_special": "r.binomial(r.PRNGKey(3), jnp.asarray(_BINOM_SPECIAL_N), "
                        "jnp.asarray(_BINOM_SPECIAL_P))",
    **{f"binomial_{n}_{p}": f"r.binomial(r.PRNGKey(3), jnp.full(N, {n}.0), jnp.full(N, {p}))"
       for n, p in _BINOMIAL_CASES},
}

# sha256 of the little-endian bytes of JAX 0.10.2's draws (first 16 hex digits).
JAX_HASHES = {
    'pareto': 'float32[20000]:11d26502d4bb6c57',
    'weibull_min': 'float32[20000]:66f88018ca4096f8',
    'maxwell': 'float32[20000]:aec48d8cf569d1cd',
    'double_sided_maxwell': 'float32[20000]:913e6362262334c4',
    'rayleigh': 'float32[20000]:66bcd21087a69257',
    'wald': 'float32[20000]:56c6b134146c21da',
    'triangular': 'float32[20000]:e79b411a34179985',
    'f': 'float32[20000]:c15bbbc5caf822bc',
    'generalized_normal': 'float32[20000]:ed1e32edcad1e3fa',
    'generalized_normal_small_p': 'float32[20000]:01edbe17cbb9c414',
    'ball_l1': 'float32[20000, 2]:8103f6683a64028c',
    'ball_l2': 'float32[20000, 3]:f1f2586b1683d4cb',
    'geometric': 'int32[20000]:1d25999aff40b28d',
    'multinomial': 'float32[20000, 3]:9fa9f1c36bd92706',
    'binomial_special': 'float32[20000]:02e9ac7639842fea',
    'binomial_20_0.3': 'float32[20000]:2e99d0764ba7968d',
    'binomial_7_0.9': 'float32[20000]:0d5fd1b4f665d503',
    'binomial_1000_0.4': 'float32[20000]:cf1f598d4a732e55',
    'binomial_300_0.85': 'float32[20000]:b72e3dd5ccb152de',
}

_drawn = {}


def _env(lib_random, lib_numpy):
  return {"r": lib_random, "jnp": lib_numpy, "N": N, "_MULTI_N": _MULTI_N,
          "_MULTI_P": _MULTI_P, "_BINOM_SPECIAL_N": _BINOM_SPECIAL_N,
          "_BINOM_SPECIAL_P": _BINOM_SPECIAL_P}


def _sample(name):
  """The hlox draw for ``name`` (each drawn once per test session)."""
  if name not in _drawn:
    _drawn[name] = np.asarray(eval(SAMPLES[name], _env(r, jnp)))
  return _drawn[name]


def _hash(x):
  x = np.ascontiguousarray(x)
  return f"{x.dtype.name}{list(x.shape)}:" + hashlib.sha256(x.tobytes()).hexdigest()[:16]


@pytest.mark.ci_sample(4)
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_bit_exact_with_jax(name):
  assert _hash(_sample(name)) == JAX_HASHES[name]


CONTINUOUS = {
    "pareto": scipy.stats.pareto(3.0).cdf,
    "weibull_min": scipy.stats.weibull_min(1.5, scale=2.0).cdf,
    "maxwell": scipy.stats.maxwell.cdf,
    "rayleigh": scipy.stats.rayleigh(scale=2.0).cdf,
    "wald": scipy.stats.invgauss(1.5).cdf,
    "triangular": scipy.stats.triang(0.4, loc=-1.0, scale=3.0).cdf,
    "f": scipy.stats.f(3.0, 5.0).cdf,
    "generalized_normal": scipy.stats.gennorm(1.5).cdf,
    "generalized_normal_small_p": scipy.stats.gennorm(0.5).cdf,
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_distributions_ks(name):
  x = _sample(name).astype(np.float64)
  assert x.shape == (N,) and np.isfinite(x).all()
  # A correct sampler fails this with probability 1e-3; the seed is fixed, so it is stable.
  assert scipy.stats.kstest(x, CONTINUOUS[name]).pvalue > 1e-3


def test_double_sided_maxwell_and_ball():
  # |x - loc| / scale is one-sided Maxwell, with either sign equally likely.
  x = _sample("double_sided_maxwell").astype(np.float64)
  assert scipy.stats.kstest(np.abs(x - 1.0) / 2.0, scipy.stats.maxwell.cdf).pvalue > 1e-3
  assert abs(np.mean(x > 1.0) - 0.5) < 4 * 0.5 / np.sqrt(N)
  # The p-norm of a uniform point in the unit p-ball has CDF r**d; directions average to 0.
  for name, p, d in (("ball_l1", 1, 2), ("ball_l2", 2, 3)):
    b = _sample(name).astype(np.float64)
    assert b.shape == (N, d)
    radius = np.sum(np.abs(b) ** p, -1) ** (1 / p)
    assert (radius <= 1 + 1e-6).all()
    assert scipy.stats.kstest(radius, lambda t: np.clip(t, 0, 1) ** d).pvalue > 1e-3
    np.testing.assert_allclose(b.mean(0), 0, atol=4 * np.sqrt(0.2 / N))


def _binned_chi2_pvalue(x, dist, nbins=12):
  """Chi-square test of integer samples against a discrete SciPy distribution, on bins of
  roughly equal probability (so every expected count is large)."""
  edges = np.unique(dist.ppf(np.linspace(0, 1, nbins + 1)[1:-1]))
  cdf = np.concatenate([[0.0], dist.cdf(edges), [1.0]])
  probs = np.diff(cdf)
  counts = np.bincount(np.searchsorted(edges, x, side="left"), minlength=len(probs))
  possible = probs > 0
  assert (counts[~possible] == 0).all()
  return scipy.stats.chisquare(counts[possible], len(x) * probs[possible]).pvalue


@pytest.mark.parametrize("n,p", _BINOMIAL_CASES)
def test_binomial_matches_scipy(n, p):
  # (20, 0.3) and (7, 0.9) take the inversion branch, the others transformed rejection;
  # p > 0.5 samples the complement.
  x = _sample(f"binomial_{n}_{p}")
  assert x.dtype == np.float32 and (x == np.round(x)).all() and x.min() >= 0 and x.max() <= n
  assert _binned_chi2_pvalue(x, scipy.stats.binom(n, p)) > 1e-3


def test_binomial_special_values():
  x = _sample("binomial_special")
  assert np.isnan(x[0]) and x[1] == np.inf and np.isnan(x[2])
  np.testing.assert_array_equal(x[3:6], [0, 10, 3])
  assert _binned_chi2_pvalue(x[6:], scipy.stats.binom(4, 0.5), 5) > 1e-3


def test_geometric_matches_scipy():
  x = _sample("geometric")
  assert x.dtype == np.int32 and x.min() >= 1
  assert _binned_chi2_pvalue(x, scipy.stats.geom(0.3)) > 1e-3


def test_multinomial():
  x = _sample("multinomial")
  assert x.shape == (N, 3) and x.dtype == np.float32
  np.testing.assert_array_equal(x.sum(-1), _MULTI_N)
  np.testing.assert_array_equal(x[-1], [0, 5, 0])
  for j in range(3):
    assert _binned_chi2_pvalue(x[:-1, j], scipy.stats.binom(10, _MULTI_P[0, j]), 6) > 1e-3


def test_means_of_parameterized_distributions():
  k = r.PRNGKey(8)
  scale = jnp.array([0.5, 2.0])
  x = np.asarray(r.rayleigh(k, scale, (N, 2)))
  np.testing.assert_allclose(x.mean(0), np.asarray(scale) * np.sqrt(np.pi / 2), rtol=0.03)
  x = np.asarray(r.wald(k, jnp.array([0.5, 3.0]), (N, 2)))
  np.testing.assert_allclose(x.mean(0), [0.5, 3.0], rtol=0.05)
  x = np.asarray(r.pareto(k, jnp.array([3.0, 5.0]), (N, 2)))
  np.testing.assert_allclose(x.mean(0), [1.5, 1.25], rtol=0.03)


def test_shapes_follow_jax():
  k = r.PRNGKey(9)

  def shape_of(f, *args):
    out = hlox.eval_shape(f, *args)  # traces only: no compilation
    return out.shape, out.dtype

  assert shape_of(lambda: r.weibull_min(k, jnp.ones(3), 2.0)) == ((3,), np.float32)
  assert shape_of(lambda: r.weibull_min(k, 1.0, 2.0, (4, 1)))[0] == (4, 1)
  # double_sided_maxwell appends the parameters' shape to `shape` (JAX's behavior).
  assert shape_of(lambda: r.double_sided_maxwell(k, jnp.zeros(2), 1.0))[0] == (2, 2)
  assert shape_of(lambda: r.double_sided_maxwell(k, jnp.zeros(2), 1.0, (3,)))[0] == (3, 2)
  assert shape_of(lambda: r.ball(k, 4, shape=(2, 3)))[0] == (2, 3, 4)
  assert shape_of(lambda: r.triangular(k, jnp.zeros((2, 1)), 0.5, jnp.ones(3)))[0] == (2, 3)
  assert shape_of(lambda: r.maxwell(k, (2, 3), jnp.float16)) == ((2, 3), np.float16)
  assert shape_of(lambda: r.binomial(k, 5, 0.5, (2,), jnp.float16)) == ((2,), np.float16)
  assert shape_of(lambda: r.geometric(k, jnp.ones((2, 1)) / 2, dtype=jnp.uint8)) == (
      (2, 1), np.uint8)
  assert shape_of(lambda: r.multinomial(k, 3.0, jnp.ones((4, 2)) / 2))[0] == (4, 2)


@pytest.mark.slow  # ~10 s (compiles); a CI test covers the same function
def test_jit_and_vmap_invariance():
  keys = r.split(r.PRNGKey(10), 4)
  f = lambda k: r.binomial(k, jnp.array([3.0, 40.0]), 0.3)
  vm = np.asarray(hlox.vmap(f)(keys))
  loop = np.stack([np.asarray(f(keys[i])) for i in range(4)])
  np.testing.assert_array_equal(vm, loop)
  g = lambda k: r.triangular(k, 0.0, 0.5, 1.0, (3,))
  np.testing.assert_array_equal(np.asarray(hlox.jit(g)(keys[0])), np.asarray(g(keys[0])))
  np.testing.assert_array_equal(np.asarray(hlox.vmap(g)(keys))[2], np.asarray(g(keys[2])))
  # Typed keys work like raw ones.
  np.testing.assert_array_equal(np.asarray(r.pareto(r.key(3), 2.0, (3,))),
                                np.asarray(r.pareto(r.key_data(r.key(3)), 2.0, (3,))))


def test_bad_input():
  k = r.PRNGKey(0)
  with pytest.raises(ValueError, match="dtype argument to `pareto` must be a float"):
    r.pareto(k, 2.0, dtype=jnp.int32)
  with pytest.raises(ValueError, match="dtype argument to `geometric` must be an int"):
    r.geometric(k, 0.5, dtype=jnp.float32)
  with pytest.raises(ValueError, match="rayleigh parameter shapes must be broadcast"):
    r.rayleigh(k, jnp.ones(3), (2,))
  with pytest.raises(ValueError, match="triangular: the parameters' shapes"):
    r.triangular(k, jnp.zeros(2), 0.5, jnp.ones(3))
  with pytest.raises(TypeError, match="expected a PRNG key"):
    r.wald(jnp.ones(2), 1.0)
  with pytest.raises(TypeError, match="expected a PRNG key"):
    r.binomial(np.float32(0), 10, 0.5)
  with pytest.raises(ValueError, match="ball: the dimension d must be non-negative"):
    r.ball(k, -1)
  with pytest.raises(TypeError, match="ball: the dimension d must be an int"):
    r.ball(k, 2.5)
  with pytest.raises(ValueError, match="multinomial: p must have at least one dimension"):
    r.multinomial(k, 10.0, 0.5)
  with pytest.raises(ValueError, match="multinomial parameter shapes"):
    r.multinomial(k, 10.0, jnp.ones(3) / 3, shape=(2, 4))
  with pytest.raises(TypeError, match="binomial: parameters must be real"):
    r.binomial(k, 10, jnp.array(0.5 + 1j))
  with pytest.raises(ValueError, match="shape must be non-negative"):
    r.maxwell(k, (-1,))


def _record():
  """Print JAX_HASHES from JAX 0.10.2 (run this file directly with JAX installed)."""
  import jax
  import jax.numpy as jax_numpy
  assert jax.__version__ == "0.10.2", jax.__version__
  env = _env(jax.random, jax_numpy)
  print("JAX_HASHES = {")
  for name, expr in SAMPLES.items():
    print(f"    {name!r}: {_hash(np.asarray(eval(expr, env)))!r},")
  print("}")


if __name__ == "__main__":
  _record()
