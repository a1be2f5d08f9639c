"""hlox.random: bit-exactness against JAX 0.10.2 (recorded vectors), statistics, jit/vmap,
gradients and errors."""
import json
import os

import numpy as np
import pytest
import scipy.stats

import hlox
import hlox.numpy as jnp
from hlox import random as r
from hlox.config import enable_x64
from hlox.core import dtypes

_VECTORS = os.path.join(os.path.dirname(__file__), "random_vectors", "jax_0_10_2.json")


def _k():
  return r.PRNGKey(42)


def _gamma_family(r, jnp):
  """The gamma-family cases, built from either library's random/numpy modules."""
  k = lambda: r.PRNGKey(42)
  return {
      "gamma_5": lambda: r.gamma(k(), 2.0, (5,)),
      "gamma_alphas": lambda: r.gamma(k(), jnp.array([0.3, 1.0, 5.0])),
      "gamma_small_2x3": lambda: r.gamma(k(), 0.1, (2, 3)),
      "gamma_bcast": lambda: r.gamma(k(), jnp.array([0.7, 3.0]), (3, 2)),
      "loggamma_3": lambda: r.loggamma(k(), jnp.array([0.05, 0.5, 3.0])),
      "beta_4": lambda: r.beta(k(), 0.5, 2.0, (4,)),
      "dirichlet_2x3": lambda: r.dirichlet(k(), jnp.array([0.5, 1.0, 2.0]), (2,)),
      "chisquare_4": lambda: r.chisquare(k(), 3.0, (4,)),
      "t_4": lambda: r.t(k(), 4.0, (4,)),
  }


# Same names and calls as tests/random_vectors/record.py.
CASES = {
    "PRNGKey_0": lambda: r.PRNGKey(0),
    "PRNGKey_42": lambda: r.PRNGKey(42),
    "PRNGKey_neg1": lambda: r.PRNGKey(-1),
    "PRNGKey_big": lambda: r.PRNGKey(2 ** 32 + 5),
    "key_data_7": lambda: r.key_data(r.key(7)),
    "split_2": lambda: r.split(_k()),
    "split_3": lambda: r.split(_k(), 3),
    "split_2x3": lambda: r.split(_k(), (2, 3)),
    "typed_split_4": lambda: r.key_data(r.split(r.key(7), 4)),
    "fold_in_7": lambda: r.fold_in(_k(), 7),
    "fold_in_big": lambda: r.fold_in(_k(), 2 ** 31 + 3),
    "bits_5": lambda: r.bits(_k(), (5,)),
    "bits_2x3": lambda: r.bits(_k(), (2, 3)),
    "bits_u8": lambda: r.bits(_k(), (6,), jnp.uint8),
    "bits_u16": lambda: r.bits(_k(), (6,), jnp.uint16),
    "uniform_7": lambda: r.uniform(_k(), (7,)),
    "uniform_scalar": lambda: r.uniform(_k()),
    "uniform_range": lambda: r.uniform(_k(), (2, 3), minval=-2.0, maxval=5.0),
    "uniform_f16": lambda: r.uniform(_k(), (5,), jnp.float16),
    "uniform_bf16": lambda: r.uniform(_k(), (5,), jnp.bfloat16),
    "normal_7": lambda: r.normal(_k(), (7,)),
    "normal_typed": lambda: r.normal(r.key(7), (2, 2)),
    "normal_f16": lambda: r.normal(_k(), (4,), jnp.float16),
    "normal_c64": lambda: r.normal(_k(), (3,), jnp.complex64),
    "randint_8": lambda: r.randint(_k(), (8,), 0, 10),
    "randint_neg": lambda: r.randint(_k(), (6,), -100, 100),
    "randint_u8": lambda: r.randint(_k(), (6,), 0, 256, jnp.uint8),
    "randint_i8": lambda: r.randint(_k(), (6,), -5, 5, jnp.int8),
    "bernoulli_8": lambda: r.bernoulli(_k(), 0.3, (8,)),
    "bernoulli_p": lambda: r.bernoulli(_k(), jnp.array([0.1, 0.5, 0.9, 0.99])),
    "permutation_10": lambda: r.permutation(_k(), 10),
    "permutation_arr": lambda: r.permutation(_k(), jnp.arange(12.0).reshape(4, 3)),
    "permutation_indep": lambda: r.permutation(_k(), jnp.arange(12).reshape(3, 4), axis=1,
                                               independent=True),
    "gumbel_6": lambda: r.gumbel(_k(), (6,)),
    "categorical_1d": lambda: r.categorical(_k(), jnp.array([0.1, 1.0, 2.0, -1.0]),
                                            shape=(8,)),
    "categorical_2d": lambda: r.categorical(_k(), jnp.log(jnp.array([[0.2, 0.3, 0.5],
                                                                     [0.6, 0.2, 0.2]]))),
    "categorical_axis0": lambda: r.categorical(_k(), jnp.arange(6.0).reshape(3, 2), axis=0),
    "categorical_norep": lambda: r.categorical(_k(), jnp.zeros(6), shape=(4,), replace=False),
    "choice_rep": lambda: r.choice(_k(), 10, (6,)),
    "choice_arr": lambda: r.choice(_k(), jnp.arange(5.0) * 2, (3,)),
    "choice_norep": lambda: r.choice(_k(), 10, (4,), replace=False),
    "choice_p": lambda: r.choice(_k(), 5, (6,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2])),
    "choice_p_norep": lambda: r.choice(_k(), 5, (3,), replace=False,
                                       p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2])),
    "exponential_5": lambda: r.exponential(_k(), (5,)),
    "laplace_5": lambda: r.laplace(_k(), (5,)),
    "logistic_5": lambda: r.logistic(_k(), (5,)),
    "cauchy_5": lambda: r.cauchy(_k(), (5,)),
    "rademacher_6": lambda: r.rademacher(_k(), (6,)),
    "truncated_normal_5": lambda: r.truncated_normal(_k(), -1.0, 2.0, (5,)),
    "poisson_small": lambda: r.poisson(_k(), 3.0, (6,)),
    "poisson_mixed": lambda: r.poisson(_k(), jnp.array([0.0, 0.5, 20.0, 100.0])),
    # Run under enable_x64 (see test_bit_exact_with_jax).
    "x64_PRNGKey_big": lambda: r.PRNGKey(2 ** 40 + 7),
    "x64_bits_u64": lambda: r.bits(r.PRNGKey(2 ** 40 + 7), (3,)),
    "x64_uniform_f64": lambda: r.uniform(r.PRNGKey(2 ** 40 + 7), (3,), jnp.float64),
    "x64_normal_f64": lambda: r.normal(r.PRNGKey(2 ** 40 + 7), (3,), jnp.float64),
    "x64_randint_i64": lambda: r.randint(r.PRNGKey(2 ** 40 + 7), (4,), 0, 10 ** 12, jnp.int64),
    **_gamma_family(r, jnp),
}


def _load():
  with open(_VECTORS) as f:
    return json.load(f)


def _expected(entry):
  if entry["dtype"].startswith("complex"):
    re, im = (np.array(v, np.float64) for v in entry["value"])
    return (re + 1j * im).astype(entry["dtype"]).reshape(entry["shape"])
  if entry["dtype"] == "bfloat16":
    return np.array(entry["value"], np.float32).astype(dtypes.bfloat16).reshape(entry["shape"])
  return np.array(entry["value"], entry["dtype"]).reshape(entry["shape"])


def test_vectors_cover_cases():
  assert set(_load()) == set(CASES)


# The gamma family ends in float arithmetic (log, exp, pow after Marsaglia-Tsang's rejection
# loop) that XLA:CPU compiles with FMA contraction chosen by the host CPU, so its last bit
# depends on the machine that recorded the vectors: against the file these get a few ulp,
# and test_gamma_family_bit_exact_with_live_jax checks them bit for bit against JAX on the
# machine running the tests. The accepted candidates themselves (the random bits) are exact.
_CPU_ROUNDED = tuple(_gamma_family(r, jnp))


def _run_case(name):
  if name.startswith("x64_"):
    with enable_x64():
      return np.atleast_1d(np.asarray(CASES[name]()))
  return np.atleast_1d(np.asarray(CASES[name]()))


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(CASES))
def test_bit_exact_with_jax(name):
  want = np.atleast_1d(_expected(_load()[name]))
  got = _run_case(name)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  assert got.shape == want.shape
  if name in _CPU_ROUNDED:
    np.testing.assert_array_max_ulp(got, want, maxulp=8)
    return
  np.testing.assert_array_equal(got.view(np.uint8) if got.dtype.kind in "fc" else got,
                                want.view(np.uint8) if want.dtype.kind in "fc" else want)


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", _CPU_ROUNDED)
def test_gamma_family_bit_exact_with_live_jax(name):
  jax = pytest.importorskip("jax", reason="JAX is the oracle for this test")
  want = np.atleast_1d(np.asarray(_gamma_family(jax.random, jax.numpy)[name]()))
  got = _run_case(name)
  np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


# --- the threefry2x32 primitive --------------------------------------------------------------

def test_threefry2x32_known_answers():
  # Random123's known-answer vectors for Threefry-2x32 with 20 rounds.
  u = lambda v: np.array(v, np.uint32)
  y = r.threefry2x32_p.bind(u(0), u(0), u(0), u(0))
  assert [int(v) for v in y] == [0x6B200159, 0x99BA4EFE]
  y = r.threefry2x32_p.bind(u(0xFFFFFFFF), u(0xFFFFFFFF), u(0xFFFFFFFF), u(0xFFFFFFFF))
  assert [int(v) for v in y] == [0x1CB996FC, 0xBB002BE7]
  y = r.threefry2x32_p.bind(u(0x13198A2E), u(0x03707344), u(0x243F6A88), u(0x85A308D3))
  assert [int(v) for v in y] == [0xC4923A9C, 0x483DF7A0]
  # JAX's threefry_2x32(keypair, count) on an odd-sized count (halves padded with a zero).
  from hlox.random.prng import threefry_2x32
  out = threefry_2x32((np.uint32(1), np.uint32(2)), np.arange(5, dtype=np.uint32))
  assert np.asarray(out).tolist() == [2052595727, 3504730591, 2527474599, 1880214352,
                                      1914734168]


def test_threefry2x32_cpu_lowering_is_a_rolled_loop_with_the_unrolled_bits():
  # On CPU threefry lowers as a loop of 5 steps (as JAX), which keeps programs that consume
  # one draw many ways quick to compile; its bits equal the straight-line 20 rounds.
  from hlox.random.prng import _threefry2x32_composition
  rng = np.random.default_rng(0)
  k1, k2 = (np.uint32(v) for v in rng.integers(0, 2**32, 2, dtype=np.uint64))
  x1, x2 = (rng.integers(0, 2**32, (3, 7), dtype=np.uint64).astype(np.uint32) for _ in range(2))
  bind = hlox.jit(lambda a, b: r.threefry2x32_p.bind(k1, k2, a, b))
  text = bind.lower(x1, x2).as_text()
  assert "stablehlo.while" in text
  straight = hlox.jit(lambda a, b: _threefry2x32_composition(k1, k2, a, b))
  assert "stablehlo.while" not in straight.lower(x1, x2).as_text()
  for got, want in zip(bind(x1, x2), straight(x1, x2)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_threefry2x32_broadcasting_jit_vmap():
  k1, k2 = np.uint32(3), np.uint32(9)
  x1 = np.arange(6, dtype=np.uint32).reshape(2, 3)
  x2 = np.arange(6, 12, dtype=np.uint32).reshape(2, 3)
  eager = [np.asarray(v) for v in r.threefry2x32_p.bind(k1, k2, x1, x2)]
  jitted = hlox.jit(lambda a, b: r.threefry2x32_p.bind(k1, k2, a, b))(x1, x2)
  batched = hlox.vmap(lambda a, b: r.threefry2x32_p.bind(k1, k2, a, b), in_axes=(1, 1))(x1, x2)
  for e, j, b in zip(eager, jitted, batched):
    np.testing.assert_array_equal(e, np.asarray(j))
    np.testing.assert_array_equal(e.T, np.asarray(b))
  for i in range(2):
    for j in range(3):
      y = r.threefry2x32_p.bind(k1, k2, x1[i, j], x2[i, j])
      assert int(y[0]) == eager[0][i, j] and int(y[1]) == eager[1][i, j]


def test_threefry2x32_lowering_is_pure_stablehlo():
  text = hlox.jit(lambda k: r.bits(k, (4,))).lower(r.PRNGKey(0)).as_text()
  assert "custom_call" not in text and "stablehlo.xor" in text
  assert "threefry2x32" in str(hlox.make_jaxpr(lambda k: r.bits(k, (4,)))(r.PRNGKey(0)))


def test_threefry2x32_rejects_non_uint32():
  with pytest.raises(TypeError, match="uint32"):
    r.threefry2x32_p.bind(np.float32(0), np.uint32(0), np.uint32(0), np.uint32(0))


# --- keys --------------------------------------------------------------------------------------

def test_typed_keys_roundtrip():
  k = r.key(7)
  assert k.shape == () and k.ndim == 0
  ks = r.split(k, (2, 3))
  assert ks.shape == (2, 3) and r.key_data(ks).shape == (2, 3, 2)
  w = r.wrap_key_data(r.key_data(ks))
  np.testing.assert_array_equal(np.asarray(r.key_data(w)), np.asarray(r.key_data(ks)))
  a, b = r.split(k)
  np.testing.assert_array_equal(np.asarray(r.key_data(a)), np.asarray(r.key_data(r.split(k)[0])))
  np.testing.assert_array_equal(np.asarray(r.key_data(r.clone(k))), np.asarray(r.key_data(k)))
  # Typed and raw keys with the same data draw the same numbers.
  np.testing.assert_array_equal(np.asarray(r.normal(k, (3,))),
                                np.asarray(r.normal(r.key_data(k), (3,))))


def test_keys_under_jit_and_vmap():
  k = r.PRNGKey(5)
  np.testing.assert_array_equal(np.asarray(hlox.jit(r.split)(k)), np.asarray(r.split(k)))
  np.testing.assert_array_equal(
      np.asarray(hlox.jit(lambda s: r.PRNGKey(s))(np.int32(-3))), np.asarray(r.PRNGKey(-3)))
  seeds = jnp.arange(4)
  np.testing.assert_array_equal(np.asarray(hlox.vmap(r.PRNGKey)(seeds)),
                                np.stack([np.asarray(r.PRNGKey(i)) for i in range(4)]))
  folded = hlox.vmap(r.fold_in, in_axes=(None, 0))(k, seeds)
  np.testing.assert_array_equal(np.asarray(folded),
                                np.stack([np.asarray(r.fold_in(k, i)) for i in range(4)]))
  tk = hlox.jit(lambda key: r.split(key, 3))(r.key(1))
  assert isinstance(tk, r.prng.PRNGKeyArray) and tk.shape == (3,)


# --- jit and vmap invariance -------------------------------------------------------------------

SAMPLERS = {
    "uniform": lambda k: r.uniform(k, (3, 2), minval=-1.0, maxval=2.0),
    "normal": lambda k: r.normal(k, (4,)),
    "randint": lambda k: r.randint(k, (5,), -3, 9),
    "bernoulli": lambda k: r.bernoulli(k, 0.4, (5,)),
    "permutation": lambda k: r.permutation(k, 6),
    "categorical": lambda k: r.categorical(k, jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])),
    "gumbel": lambda k: r.gumbel(k, (4,)),
    "choice": lambda k: r.choice(k, 7, (3,), replace=False),
    "choice_p": lambda k: r.choice(k, 3, (4,), p=jnp.array([0.2, 0.5, 0.3])),
    "exponential": lambda k: r.exponential(k, (3,)),
    "truncated_normal": lambda k: r.truncated_normal(k, -0.5, 0.5, (3,)),
    "bits": lambda k: r.bits(k, (3,)),
    # Rejection loops: under vmap each member's while_loop keeps its own result.
    "poisson": lambda k: r.poisson(k, jnp.array([0.5, 4.0, 30.0])),
}


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_jit_and_vmap_invariance(name):
  f = SAMPLERS[name]
  keys = r.split(r.PRNGKey(11), 3)
  loop = np.stack([np.asarray(f(keys[i])) for i in range(3)])
  np.testing.assert_array_equal(np.asarray(hlox.jit(f)(keys[0])), loop[0])
  np.testing.assert_array_equal(np.asarray(hlox.vmap(f)(keys)), loop)
  np.testing.assert_array_equal(np.asarray(hlox.jit(hlox.vmap(f))(keys)), loop)


def test_vmap_over_typed_keys():
  keys = r.split(r.key(3), 4)
  out = hlox.vmap(lambda k: r.uniform(k, (2,)))(keys)
  np.testing.assert_array_equal(np.asarray(out), np.stack([np.asarray(r.uniform(k, (2,)))
                                                           for k in keys]))


# --- gradients ---------------------------------------------------------------------------------

def test_gradients_wrt_parameters():
  k = r.PRNGKey(0)
  u = np.asarray(r.uniform(k, (5,)))
  g_min, g_max = hlox.grad(lambda lo, hi: r.uniform(k, (5,), minval=lo, maxval=hi).sum(),
                           argnums=(0, 1))(1.0, 3.0)
  np.testing.assert_allclose(float(g_min), (1 - u).sum(), rtol=1e-5)
  np.testing.assert_allclose(float(g_max), u.sum(), rtol=1e-5)
  z = np.asarray(r.normal(k, (5,)))
  g_loc, g_scale = hlox.grad(lambda m, s: (m + s * r.normal(k, (5,))).sum(),
                             argnums=(0, 1))(0.5, 2.0)
  np.testing.assert_allclose(float(g_loc), 5.0)
  np.testing.assert_allclose(float(g_scale), z.sum(), rtol=1e-5)
  g = hlox.jit(hlox.grad(lambda m: r.uniform(k, (), minval=m, maxval=m + 1.0)))(2.0)
  np.testing.assert_allclose(float(g), 1.0, rtol=1e-6)


# --- statistics (fixed seeds: deterministic) -----------------------------------------------------

N = 20000

CONTINUOUS = {
    "uniform": (lambda k: r.uniform(k, (N,), minval=-1.0, maxval=3.0),
                scipy.stats.uniform(-1, 4).cdf),
    "normal": (lambda k: r.normal(k, (N,)), scipy.stats.norm.cdf),
    "truncated_normal": (lambda k: r.truncated_normal(k, -1.0, 0.5, (N,)),
                         scipy.stats.truncnorm(-1.0, 0.5).cdf),
    "exponential": (lambda k: r.exponential(k, (N,)), scipy.stats.expon.cdf),
    "laplace": (lambda k: r.laplace(k, (N,)), scipy.stats.laplace.cdf),
    "logistic": (lambda k: r.logistic(k, (N,)), scipy.stats.logistic.cdf),
    "cauchy": (lambda k: r.cauchy(k, (N,)), scipy.stats.cauchy.cdf),
    "gumbel": (lambda k: r.gumbel(k, (N,)), scipy.stats.gumbel_r.cdf),
    "gumbel_high": (lambda k: r.gumbel(k, (N,), mode="high"), scipy.stats.gumbel_r.cdf),
    "lognormal": (lambda k: r.lognormal(k, 0.5, (N,)), scipy.stats.lognorm(0.5).cdf),
    "gamma_small": (lambda k: r.gamma(k, 0.3, (N,)), scipy.stats.gamma(0.3).cdf),
    "gamma": (lambda k: r.gamma(k, 4.0, (N,)), scipy.stats.gamma(4.0).cdf),
    "beta": (lambda k: r.beta(k, 2.0, 0.7, (N,)), scipy.stats.beta(2.0, 0.7).cdf),
    "t": (lambda k: r.t(k, 5.0, (N,)), scipy.stats.t(5.0).cdf),
    "chisquare": (lambda k: r.chisquare(k, 3.0, (N,)), scipy.stats.chi2(3.0).cdf),
}


@pytest.mark.ci_sample(3)
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_distributions_ks(name):
  sample, cdf = CONTINUOUS[name]
  x = np.asarray(sample(r.PRNGKey(1)), np.float64)
  assert x.shape == (N,) and np.isfinite(x).all()
  # A correct sampler fails this with probability 1e-3; the seed is fixed, so it is stable.
  assert scipy.stats.kstest(x, cdf).pvalue > 1e-3


def _chi2_pvalue(counts, probs):
  return scipy.stats.chisquare(counts, np.sum(counts) * np.asarray(probs)).pvalue


def test_discrete_distributions():
  k = r.PRNGKey(2)
  b = np.asarray(r.bernoulli(k, 0.3, (N,)))
  assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 4 * np.sqrt(0.21 / N)
  bh = np.asarray(r.bernoulli(k, 0.3, (N,), mode="high"))
  assert abs(bh.mean() - 0.3) < 4 * np.sqrt(0.21 / N)
  x = np.asarray(r.randint(k, (N,), -3, 7))
  assert x.dtype == np.int32 and x.min() == -3 and x.max() == 6
  assert _chi2_pvalue(np.bincount(x + 3, minlength=10), [0.1] * 10) > 1e-3
  u8 = np.asarray(r.randint(k, (N,), 0, 256, jnp.uint8))
  assert u8.dtype == np.uint8
  assert _chi2_pvalue(np.bincount(u8, minlength=256), [1 / 256] * 256) > 1e-3
  rad = np.asarray(r.rademacher(k, (N,)))
  assert set(np.unique(rad)) == {-1, 1} and abs(rad.mean()) < 4 / np.sqrt(N)
  logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
  c = np.asarray(r.categorical(k, logits, shape=(N,)))
  assert _chi2_pvalue(np.bincount(c, minlength=4), [0.1, 0.2, 0.3, 0.4]) > 1e-3
  p = np.array([0.5, 0.1, 0.4], np.float32)
  ch = np.asarray(r.choice(k, 3, (N,), p=p))
  assert _chi2_pvalue(np.bincount(ch, minlength=3), p) > 1e-3
  # Without replacement: each draw of 2 from 3 distinct; first item frequencies follow p.
  firsts = np.asarray(hlox.vmap(lambda kk: r.choice(kk, 3, (2,), replace=False, p=p))(
      r.split(k, 4000)))
  assert (firsts[:, 0] != firsts[:, 1]).all()
  assert _chi2_pvalue(np.bincount(firsts[:, 0], minlength=3), p) > 1e-3


def test_permutation_and_choice_without_replacement():
  k = r.PRNGKey(3)
  assert sorted(np.asarray(r.permutation(k, 50)).tolist()) == list(range(50))
  x = np.arange(20.0).reshape(4, 5)
  p = np.asarray(r.permutation(k, x, axis=1))
  assert sorted(p[0].tolist()) == x[0].tolist()
  np.testing.assert_array_equal(p, x[:, p[0].astype(int)])
  c = np.asarray(r.choice(k, 30, (10,), replace=False))
  assert len(set(c.tolist())) == 10
  c = np.asarray(r.choice(k, x, (2,), replace=False, axis=1))
  assert c.shape == (4, 2)
  perms = np.asarray(hlox.vmap(lambda kk: r.permutation(kk, 3))(r.split(k, 6000)))
  codes = perms[:, 0] * 9 + perms[:, 1] * 3 + perms[:, 2]
  counts = np.unique(codes, return_counts=True)[1]
  assert len(counts) == 6 and _chi2_pvalue(counts, [1 / 6] * 6) > 1e-3


def test_dirichlet_moments():
  alpha = np.array([1.0, 2.0, 3.0], np.float32)
  x = np.asarray(r.dirichlet(r.PRNGKey(4), alpha, (N,)), np.float64)
  np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
  np.testing.assert_allclose(x.mean(0), alpha / alpha.sum(), atol=0.01)
  var = alpha * (alpha.sum() - alpha) / (alpha.sum() ** 2 * (alpha.sum() + 1))
  np.testing.assert_allclose(x.var(0), var, rtol=0.05)


# --- bad input ---------------------------------------------------------------------------------

def test_errors():
  with pytest.raises(TypeError, match="PRNG key"):
    r.uniform(np.zeros(2, np.float32), (2,))
  with pytest.raises(TypeError, match="PRNG key"):
    r.normal(jnp.zeros(3, jnp.uint32), (2,))
  with pytest.raises(TypeError, match="PRNG key"):
    r.split("not a key")
  with pytest.raises(ValueError, match="single key"):
    r.normal(r.split(r.PRNGKey(0)), (2,))
  with pytest.raises(ValueError, match="non-negative"):
    r.uniform(r.PRNGKey(0), (-1,))
  with pytest.raises(ValueError, match="larger sample"):
    r.choice(r.PRNGKey(0), 3, (4,), replace=False)
  with pytest.raises(ValueError, match="greater than 0"):
    r.choice(r.PRNGKey(0), 0, (2,))
  with pytest.raises(ValueError, match="p must be None"):
    r.choice(r.PRNGKey(0), 3, (2,), p=jnp.ones(4) / 4)
  with pytest.raises(TypeError, match="scalar seed"):
    r.PRNGKey(np.arange(2))
  with pytest.raises(TypeError, match="integer"):
    r.PRNGKey(1.5)
  with pytest.raises(TypeError, match="scalar"):
    r.fold_in(r.PRNGKey(0), np.arange(3))
  with pytest.raises(ValueError, match="unsigned"):
    r.bits(r.PRNGKey(0), (2,), jnp.float32)
  with pytest.raises(ValueError, match="float dtype"):
    r.normal(r.PRNGKey(0), (2,), jnp.int32)
  with pytest.raises(TypeError, match="integer dtypes"):
    r.randint(r.PRNGKey(0), (2,), 0, 3, jnp.float32)
  with pytest.raises(ValueError, match="broadcast-compatible"):
    r.bernoulli(r.PRNGKey(0), jnp.full((3,), 0.5), (2,))
  with pytest.raises(ValueError, match="cannot exceed"):
    r.categorical(r.PRNGKey(0), jnp.zeros(3), shape=(4,), replace=False)
  with pytest.raises(TypeError, match="floating"):
    r.bernoulli(r.PRNGKey(0), 1, (2,))


def test_poisson():
  k = r.PRNGKey(5)
  for lam in (0.7, 4.0, 25.0):  # inversion branch and rejection branch
    x = np.asarray(r.poisson(k, lam, (N,)))
    assert x.dtype == np.int32 and x.min() >= 0
    lo, hi = int(max(0, lam - 3 * np.sqrt(lam))), int(lam + 3 * np.sqrt(lam)) + 1
    counts = np.bincount(x, minlength=hi + 1)
    obs = np.concatenate([[counts[:lo].sum()], counts[lo:hi], [counts[hi:].sum()]])
    pmf = scipy.stats.poisson(lam).pmf(np.arange(lo, hi))
    probs = np.concatenate([[scipy.stats.poisson(lam).cdf(lo - 1)], pmf,
                            [scipy.stats.poisson(lam).sf(hi - 1)]])
    keep = probs > 0
    assert _chi2_pvalue(obs[keep], probs[keep] / probs[keep].sum()) > 1e-3, lam
  x = np.asarray(r.poisson(k, jnp.array([0.0, 3.0, 40.0]), (4000, 3)))
  assert (x[:, 0] == 0).all()
  np.testing.assert_allclose(x[:, 1:].mean(0), [3.0, 40.0], rtol=0.03)


def test_multivariate_normal_moments():
  mean = np.array([1.0, -2.0, 0.5], np.float32)
  cov = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 0.5]], np.float32)
  x = np.asarray(r.multivariate_normal(r.PRNGKey(6), mean, cov, (N,)), np.float64)
  np.testing.assert_allclose(x.mean(0), mean, atol=0.05)
  np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
  with pytest.raises(ValueError, match="cov.shape"):
    r.multivariate_normal(r.PRNGKey(0), mean, np.eye(2))


def test_orthogonal():
  q = np.asarray(r.orthogonal(r.PRNGKey(7), 4, (3,)), np.float64)
  assert q.shape == (3, 4, 4)
  np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                             atol=1e-5)
  wide = np.asarray(r.orthogonal(r.PRNGKey(7), 2, m=5), np.float64)
  np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
  # Haar measure on O(3): an entry is a coordinate of a uniform point on the sphere S^2,
  # which is uniform on [-1, 1].
  qs = np.asarray(r.orthogonal(r.PRNGKey(8), 3, (5000,)), np.float64)
  assert scipy.stats.kstest(qs[:, 0, 0], scipy.stats.uniform(-1, 2).cdf).pvalue > 1e-3
  dets = np.linalg.det(qs)
  assert abs((dets > 0).mean() - 0.5) < 0.03


@pytest.mark.parametrize("name", ["gamma"])  # beta is the same loop (too slow to add)
def test_gamma_family_jit_and_vmap_close(name):
  # The float arithmetic after the rejection loops can round differently (an ulp) once XLA
  # fuses it into an outer jit or a batched loop; the accepted candidates are the same.
  f = {"gamma": lambda k: r.gamma(k, jnp.array([0.3, 2.0, 6.0])),
       "beta": lambda k: r.beta(k, 0.5, 2.0, (3,))}[name]
  keys = r.split(r.PRNGKey(11), 3)
  loop = np.stack([np.asarray(f(keys[i])) for i in range(3)])
  np.testing.assert_allclose(np.asarray(hlox.jit(f)(keys[0])), loop[0], rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f)(keys)), loop, rtol=1e-6)


def test_gamma_batched_parameters_under_vmap():
  keys = r.split(r.PRNGKey(9), 3)
  alphas = jnp.array([0.5, 2.0, 7.0])
  out = hlox.vmap(lambda kk, a: r.gamma(kk, a, (4,)))(keys, alphas)
  loop = np.stack([np.asarray(r.gamma(keys[i], alphas[i], (4,))) for i in range(3)])
  np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)


def test_gamma_parameter_gradient_is_the_implicit_one():
  # d sample / d a = -(dF/da) / (dF/dx) at the sample, F the gamma CDF.
  import scipy.special as sp
  import scipy.stats as st
  a = 2.0
  g = hlox.jit(hlox.grad(lambda a: r.gamma(r.PRNGKey(0), a, (2,)).sum()))(a)
  xs = np.asarray(r.gamma(r.PRNGKey(0), a, (2,)), np.float64)
  eps = 1e-5
  dcdf_da = (sp.gammainc(a + eps, xs) - sp.gammainc(a - eps, xs)) / (2 * eps)
  expected = np.sum(-dcdf_da / st.gamma.pdf(xs, a))
  np.testing.assert_allclose(float(g), expected, rtol=2e-3)
