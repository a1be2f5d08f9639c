"""Records reference vectors from JAX 0.10.2 into jax_0_10_2.json (run once; JAX needed only
here). Each case is ``name -> {"dtype": ..., "shape": ..., "value": nested list}``; the
matching hlox calls are in tests/test_random.py (CASES)."""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

assert jax.__version__ == "0.10.2", jax.__version__
r = jax.random


def cases():
  k = r.PRNGKey(42)
  tk = r.key(7)
  yield "PRNGKey_0", r.PRNGKey(0)
  yield "PRNGKey_42", k
  yield "PRNGKey_neg1", r.PRNGKey(-1)
  yield "PRNGKey_big", r.PRNGKey(2 ** 32 + 5)
  yield "key_data_7", r.key_data(tk)
  yield "split_2", r.split(k)
  yield "split_3", r.split(k, 3)
  yield "split_2x3", r.split(k, (2, 3))
  yield "typed_split_4", r.key_data(r.split(tk, 4))
  yield "fold_in_7", r.fold_in(k, 7)
  yield "fold_in_big", r.fold_in(k, 2 ** 31 + 3)
  yield "bits_5", r.bits(k, (5,))
  yield "bits_2x3", r.bits(k, (2, 3))
  yield "bits_u8", r.bits(k, (6,), jnp.uint8)
  yield "bits_u16", r.bits(k, (6,), jnp.uint16)
  yield "uniform_7", r.uniform(k, (7,))
  yield "uniform_scalar", r.uniform(k)
  yield "uniform_range", r.uniform(k, (2, 3), minval=-2.0, maxval=5.0)
  yield "uniform_f16", r.uniform(k, (5,), jnp.float16)
  yield "uniform_bf16", r.uniform(k, (5,), jnp.bfloat16)
  yield "normal_7", r.normal(k, (7,))
  yield "normal_typed", r.normal(tk, (2, 2))
  yield "normal_f16", r.normal(k, (4,), jnp.float16)
  yield "normal_c64", r.normal(k, (3,), jnp.complex64)
  yield "randint_8", r.randint(k, (8,), 0, 10)
  yield "randint_neg", r.randint(k, (6,), -100, 100)
  yield "randint_u8", r.randint(k, (6,), 0, 256, jnp.uint8)
  yield "randint_i8", r.randint(k, (6,), -5, 5, jnp.int8)
  yield "bernoulli_8", r.bernoulli(k, 0.3, (8,))
  yield "bernoulli_p", r.bernoulli(k, jnp.array([0.1, 0.5, 0.9, 0.99]))
  yield "permutation_10", r.permutation(k, 10)
  yield "permutation_arr", r.permutation(k, jnp.arange(12.0).reshape(4, 3))
  yield "permutation_indep", r.permutation(k, jnp.arange(12).reshape(3, 4), axis=1,
                                           independent=True)
  yield "gumbel_6", r.gumbel(k, (6,))
  yield "categorical_1d", r.categorical(k, jnp.array([0.1, 1.0, 2.0, -1.0]), shape=(8,))
  yield "categorical_2d", r.categorical(k, jnp.log(jnp.array([[0.2, 0.3, 0.5],
                                                             [0.6, 0.2, 0.2]])))
  yield "categorical_axis0", r.categorical(k, jnp.arange(6.0).reshape(3, 2), axis=0)
  yield "categorical_norep", r.categorical(k, jnp.zeros(6), shape=(4,), replace=False)
  yield "choice_rep", r.choice(k, 10, (6,))
  yield "choice_arr", r.choice(k, jnp.arange(5.0) * 2, (3,))
  yield "choice_norep", r.choice(k, 10, (4,), replace=False)
  yield "choice_p", r.choice(k, 5, (6,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2]))
  yield "choice_p_norep", r.choice(k, 5, (3,), replace=False,
                                   p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2]))
  yield "exponential_5", r.exponential(k, (5,))
  yield "laplace_5", r.laplace(k, (5,))
  yield "logistic_5", r.logistic(k, (5,))
  yield "cauchy_5", r.cauchy(k, (5,))
  yield "rademacher_6", r.rademacher(k, (6,))
  yield "truncated_normal_5", r.truncated_normal(k, -1.0, 2.0, (5,))
  yield "gamma_5", r.gamma(k, 2.0, (5,))
  yield "gamma_alphas", r.gamma(k, jnp.array([0.3, 1.0, 5.0]))
  yield "gamma_small_2x3", r.gamma(k, 0.1, (2, 3))
  yield "gamma_bcast", r.gamma(k, jnp.array([0.7, 3.0]), (3, 2))
  yield "loggamma_3", r.loggamma(k, jnp.array([0.05, 0.5, 3.0]))
  yield "beta_4", r.beta(k, 0.5, 2.0, (4,))
  yield "dirichlet_2x3", r.dirichlet(k, jnp.array([0.5, 1.0, 2.0]), (2,))
  yield "chisquare_4", r.chisquare(k, 3.0, (4,))
  yield "t_4", r.t(k, 4.0, (4,))
  yield "poisson_small", r.poisson(k, 3.0, (6,))
  yield "poisson_mixed", r.poisson(k, jnp.array([0.0, 0.5, 20.0, 100.0]))


def x64_cases():
  """Recorded with 64-bit types on (names start with ``x64_``; replayed under enable_x64)."""
  with jax.enable_x64(True):
    k = r.PRNGKey(2 ** 40 + 7)
    yield "x64_PRNGKey_big", k
    yield "x64_bits_u64", r.bits(k, (3,))
    yield "x64_uniform_f64", r.uniform(k, (3,), jnp.float64)
    yield "x64_normal_f64", r.normal(k, (3,), jnp.float64)
    yield "x64_randint_i64", r.randint(k, (4,), 0, 10 ** 12, jnp.int64)


def main():
  out = {}
  for name, value in [*cases(), *x64_cases()]:
    a = np.asarray(value)
    if a.dtype.kind == "c":
      out[name] = {"dtype": str(a.dtype), "shape": list(a.shape),
                   "value": [a.real.tolist(), a.imag.tolist()]}
    elif a.dtype == jnp.bfloat16:
      out[name] = {"dtype": "bfloat16", "shape": list(a.shape),
                   "value": a.astype(np.float32).tolist()}
    else:
      out[name] = {"dtype": str(a.dtype), "shape": list(a.shape), "value": a.tolist()}
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_0_10_2.json")
  with open(path, "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
  print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
  main()
