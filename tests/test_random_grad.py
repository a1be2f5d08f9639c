"""Gradients of gamma-family samples with respect to their shape parameters (implicit
reparameterization, as JAX): against the exact quantile derivative, Monte Carlo
expectations, and under jit/vmap."""
import numpy as np
import pytest
import scipy.special as sp

import hlox
import hlox.numpy as jnp
from hlox import random as r
from hlox.config import enable_x64


N = 3000
_K = r.PRNGKey(11)


@hlox.jit
def _gamma_family_grads(a_gamma, a_loggamma, a_beta, df):
  """Per-sample gradients (one parameter per sample, so the gradient of the sum separates
  them) for several samplers, in one compiled program."""
  k1, k2, k3, k4 = r.split(_K, 4)
  def grad_of(sampler, key, x):
    return hlox.grad(lambda v: sampler(key, v).sum())(x)
  return (grad_of(r.gamma, k1, a_gamma), grad_of(r.loggamma, k2, a_loggamma),
          grad_of(lambda k, v: r.beta(k, v, 0.7), k3, a_beta),
          grad_of(r.chisquare, k4, df))


def _mc_close(g, expected):
  """``mean(g)`` within 4.5 standard errors of ``expected`` (fixed seed: deterministic)."""
  g = np.asarray(g, np.float64)
  assert np.isfinite(g).all()
  se = g.std() / np.sqrt(len(g))
  assert abs(g.mean() - expected) < 4.5 * se + 1e-6, (g.mean(), expected, se)


def test_mean_gradients_match_the_derivatives_of_the_means():
  alphas = (0.3, 1.0, 4.0)
  g_gamma, g_log, g_beta, g_chi2 = _gamma_family_grads(
      jnp.repeat(jnp.array(alphas), N), jnp.full((N,), 0.2), jnp.full((N,), 1.5),
      jnp.full((N,), 3.0))
  g_gamma = np.asarray(g_gamma).reshape(3, N)
  for i in range(3):
    _mc_close(g_gamma[i], 1.0)  # E[X] = a for X ~ Gamma(a)
  _mc_close(g_log, sp.polygamma(1, 0.2))  # E[log X] = digamma(a)
  _mc_close(g_beta, 0.7 / (1.5 + 0.7) ** 2)  # E[Beta(a, b)] = a / (a + b)
  _mc_close(g_chi2, 1.0)  # E[chi2(df)] = df


@hlox.jit
def _dirichlet_grads(alpha):
  k = r.PRNGKey(5)
  first = hlox.grad(lambda al: r.dirichlet(k, al)[:, 0].sum())(alpha)
  total = hlox.grad(lambda al: r.dirichlet(k, al).sum())(alpha)
  return first, total


def test_dirichlet_gradients():
  alpha = np.array([0.5, 1.0, 3.0], np.float32)
  first, total = _dirichlet_grads(jnp.broadcast_to(alpha, (N, 3)))
  # The components sum to 1 for every alpha, so their total has no gradient.
  np.testing.assert_allclose(np.asarray(total), 0, atol=1e-5)
  # E[s_0] = alpha_0 / sum(alpha): d/dalpha_j = (delta_0j sum(alpha) - alpha_0) / sum**2.
  first = np.asarray(first)
  assert np.abs(first).max() > 1e-3
  s = alpha.sum()
  for j in range(3):
    _mc_close(first[:, j], ((j == 0) * s - alpha[0]) / s ** 2)


def test_gamma_gradient_is_the_implicit_derivative_float64():
  # dx/da = -(dP/da) / (dP/dx) at the sample: SciPy differences in a over the density.
  k = r.PRNGKey(3)
  a = np.array([0.05, 0.5, 2.0, 30.0, 0.05, 0.5, 2.0, 30.0])
  with enable_x64():
    f = hlox.jit(lambda al: (hlox.value_and_grad(lambda v: r.gamma(k, v).sum())(al),
                             r.gamma(k, al),
                             hlox.value_and_grad(lambda v: r.loggamma(k, v).sum())(al),
                             r.loggamma(k, al)))
    (_, g), x, (_, log_g), log_x = f(a)
  x, g, log_x, log_g = (np.asarray(v) for v in (x, g, log_x, log_g))
  assert x.dtype == np.float64 and (x > 0).all()
  h = 1e-6 * a
  dp_da = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
  density = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
  np.testing.assert_allclose(g, -dp_da / density, rtol=1e-6)
  # loggamma's gradient is that of log(x): dx/da / x at its own (log-space) sample.
  xl = np.exp(log_x)
  dp_da = (sp.gammainc(a + h, xl) - sp.gammainc(a - h, xl)) / (2 * h)
  density = np.exp((a - 1) * log_x - xl - sp.gammaln(a))
  np.testing.assert_allclose(log_g, -dp_da / density / xl, rtol=1e-6)


@pytest.mark.slow  # ~10 s (compiles); a CI test covers the same function
def test_vjp_is_the_transpose_of_the_jvp_float64():
  # Finite differences of the sampler itself are the pathwise derivative of the rejection
  # transform, a different (also unbiased) estimator; so compare reverse with forward mode
  # directly (<ct, J t> == <J^T ct, t>) rather than with check_grads' finite differences.
  k = r.PRNGKey(4)
  with enable_x64():
    f = lambda a, b: r.beta(k, a, b)
    args = (np.array([0.7, 2.0]), np.array([1.5, 0.3]))
    rng = np.random.default_rng(0)
    tangents = tuple(rng.standard_normal(2) for _ in args)
    _, out_t = hlox.jvp(f, args, tangents)
    ct = rng.standard_normal(2)
    cts = hlox.vjp(f, *args)[1](ct)
    np.testing.assert_allclose(np.vdot(ct, np.asarray(out_t)),
                               sum(np.vdot(np.asarray(c), t) for c, t in zip(cts, tangents)),
                               rtol=1e-10)


def test_samples_unchanged_and_jit_vmap_agree():
  k = r.PRNGKey(42)
  a = jnp.array([0.3, 1.0, 5.0])
  value_and_grad = hlox.jit(lambda kk, al: hlox.value_and_grad(lambda v: r.gamma(kk, v))(al))
  value, g = value_and_grad(k, a[1])
  assert float(value) == float(r.gamma(k, 1.0)) and np.isfinite(float(g))
  # vmap over the parameter with one key: each element is a scalar draw from that key.
  per = hlox.vmap(value_and_grad, in_axes=(None, 0))(k, a)[1]
  loop = [float(value_and_grad(k, a[i])[1]) for i in range(3)]
  np.testing.assert_allclose(np.asarray(per), loop, rtol=1e-6)
  # vmap over keys with a shared parameter.
  keys = r.split(k, 3)
  per_key = hlox.vmap(value_and_grad, in_axes=(0, None))(keys, 2.0)[1]
  loop = [float(value_and_grad(keys[i], 2.0)[1]) for i in range(3)]
  np.testing.assert_allclose(np.asarray(per_key), loop, rtol=1e-6)


def test_other_gamma_based_samplers_are_differentiable():
  k = r.PRNGKey(8)
  samplers = (lambda d: r.t(k, d, (3,)), lambda p: r.generalized_normal(k, p, (3,)),
              lambda d: r.f(k, d, 4.0, (3,)))
  grads = hlox.jit(lambda v: [hlox.grad(lambda u: f(u).sum())(v) for f in samplers])(2.5)
  for g in grads:
    assert np.isfinite(float(g)) and float(g) != 0


def test_second_derivative_is_reported_missing():
  with pytest.raises(NotImplementedError, match="random_gamma_grad"):
    hlox.grad(hlox.grad(lambda a: r.gamma(r.PRNGKey(0), a)))(2.0)
