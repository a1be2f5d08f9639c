"""hlox.experimental.ode.odeint against closed forms, SciPy's solver, finite differences and
JAX's own odeint (as an oracle), under jit, vmap and grad; its errors."""
import importlib.util

import numpy as np
import pytest
import scipy.integrate

import hlox
import hlox.numpy as jnp
from hlox.experimental.ode import odeint

from tests.example_libraries_oracle import check_against_jax

x64 = hlox.enable_x64(True)


def _np(x):
  return np.asarray(x)


def test_exponential_decay_closed_form_and_pytree_state():
  with x64:
    ts = jnp.linspace(0., 2., 9)
    ys = odeint(lambda y, t, k: -k * y, jnp.array([1.0, 3.0]), ts, 0.7)
    want = np.array([1.0, 3.0]) * np.exp(-0.7 * np.asarray(ts))[:, None]
    np.testing.assert_allclose(_np(ys), want, rtol=1e-7)
    # A pytree state keeps its structure, with the times as a new leading axis.
    out = odeint(lambda s, t: {"a": -s["a"], "b": (2 * s["b"][0],)},
                 {"a": jnp.float64(1.0), "b": (jnp.ones((2, 1)),)}, ts)
    assert out["a"].shape == (9,) and out["b"][0].shape == (9, 2, 1)
    np.testing.assert_allclose(_np(out["a"]), np.exp(-np.asarray(ts)), rtol=1e-7)
    np.testing.assert_allclose(_np(out["b"][0])[:, 1, 0], np.exp(2 * np.asarray(ts)),
                               rtol=1e-7)


def test_pendulum_against_scipy_and_float32():
  def pend(y, t, m, g):
    return jnp.stack([y[1], -m * y[1] - g * jnp.sin(y[0])])

  y0, ts = np.array([np.pi - 0.1, 0.0]), np.linspace(0., 3., 13)
  ref = scipy.integrate.solve_ivp(lambda t, y: [y[1], -0.25 * y[1] - 9.8 * np.sin(y[0])],
                                  (0., 3.), y0, t_eval=ts, rtol=1e-12, atol=1e-12).y.T
  with x64:
    got = odeint(pend, jnp.asarray(y0), jnp.asarray(ts), 0.25, 9.8)
    assert got.dtype == np.float64
    np.testing.assert_allclose(_np(got), ref, rtol=1e-6, atol=1e-6)
  got32 = odeint(pend, jnp.asarray(y0, "float32"), jnp.asarray(ts, "float32"), 0.25, 9.8)
  assert got32.dtype == np.float32
  np.testing.assert_allclose(_np(got32), ref, rtol=1e-3, atol=1e-3)


def test_time_dependent_and_complex():
  with x64:
    ts = jnp.linspace(0., 1., 5)
    # y' = t y: y = exp(t^2 / 2)
    ys = odeint(lambda y, t: t * y, jnp.float64(1.0), ts)
    # (dense output between steps is a quartic: accurate to ~1e-7, not to the tolerance)
    np.testing.assert_allclose(_np(ys), np.exp(np.asarray(ts) ** 2 / 2), rtol=1e-6)
    # y' = i w y: a rotation
    ys = odeint(lambda y, t, w: 1j * w * y, jnp.complex128(1 + 0j), ts, 2.0)
    np.testing.assert_allclose(_np(ys), np.exp(2j * np.asarray(ts)), rtol=1e-7)


def test_gradients_against_finite_differences():
  def loss(y0, ts, k, c):
    def f(y, t, k, c):
      return jnp.stack([y[1], -k * y[0] - c * y[1] + jnp.sin(t)])
    return jnp.sum(odeint(f, y0, ts, k, c) ** 2)

  with x64:
    y0, ts = jnp.array([1.0, 0.2]), jnp.array([0.0, 0.4, 1.1, 1.5])
    args = (y0, ts, 1.3, 0.4)
    grads = hlox.grad(loss, argnums=(0, 1, 2, 3))(*args)
    eps = 1e-6
    for argnum in range(4):
      base = np.asarray(args[argnum], np.float64)
      flat = base.reshape(-1)
      for j in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[j] += eps
        minus[j] -= eps
        def at(v):
          a = list(args)
          a[argnum] = jnp.asarray(v.reshape(base.shape))
          return float(loss(*a))
        fd = (at(plus) - at(minus)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(grads[argnum]).reshape(-1)[j], fd, rtol=1e-5,
                                   atol=1e-6, err_msg=f"argument {argnum}, entry {j}")


def test_closure_gradient_jit_and_vmap():
  def experiment(x):
    return odeint(lambda y, t: -x * y, 1., jnp.linspace(0., 2., 5))[-1]

  with x64:
    # d/dx exp(-2x) = -2 exp(-2x), with x closed over (hoisted by closure_convert).
    np.testing.assert_allclose(float(hlox.grad(experiment)(0.3)), -2 * np.exp(-0.6),
                               rtol=1e-6)
    xs = jnp.array([0.1, 0.3, 0.5])
    vals, grads = hlox.vmap(hlox.jit(hlox.value_and_grad(experiment)))(xs)
    np.testing.assert_allclose(_np(vals), np.exp(-2 * np.asarray(xs)), rtol=1e-6)
    np.testing.assert_allclose(_np(grads), -2 * np.exp(-2 * np.asarray(xs)), rtol=1e-6)

    # grad of a vmapped odeint (a batched custom_vjp under differentiation).
    def total(x):
      y0s = jnp.stack([jnp.stack([x, 0.1]), jnp.stack([x, 0.2])])
      ys = hlox.vmap(lambda y0: odeint(lambda y, t: 0.1 * y, y0, jnp.array([0., 5.])))(y0s)
      return ys[:, -1].sum()
    np.testing.assert_allclose(float(hlox.grad(total)(2.0)), 2 * np.exp(0.5), rtol=1e-7)


def test_hmax_and_mxstep():
  def rhs(y, t):
    return jnp.where(t <= 2., 1., jnp.where((t >= 5.) & (t <= 7.), -1., 0.))

  ys = odeint(rhs, jnp.array(0.), jnp.array([0., 5., 10.]), hmax=1.)
  np.testing.assert_allclose(_np(ys), [0., 2., 0.], atol=1e-4)
  # With one step allowed per output time the solver stops short of t = 1: the value there
  # is extrapolated from the quartic of that one step (as JAX's: 2.70864...).
  with x64:
    short = odeint(lambda y, t: y, 1., jnp.array([0., 1.]), mxstep=1)
    full = odeint(lambda y, t: y, 1., jnp.array([0., 1.]))
  np.testing.assert_allclose(float(full[1]), np.e, rtol=1e-7)
  np.testing.assert_allclose(float(short[1]), 2.7086406599183146, rtol=1e-9)


def test_errors():
  ts = jnp.linspace(0., 1., 3)
  with pytest.raises(TypeError, match="The contents of odeint \\*args must be arrays or "
                                      "scalars, but got a string"):
    odeint(lambda y, t, s: y, 1., ts, "a string")
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(lambda y, t: y, 1., jnp.arange(3))
  with pytest.raises(TypeError, match="can't apply forward-mode"):
    hlox.jacfwd(lambda k: odeint(lambda y, t: k * y, 1., ts).sum())(3.)


ODE_PROGRAMS = {
    "pendulum_values_and_grads": """
  with jax.enable_x64(True):
    def pend(y, t, m, g):
      return jnp.stack([y[1], -m * y[1] - g * jnp.sin(y[0])])
    y0, ts = jnp.array([np.pi - 0.1, 0.0]), jnp.linspace(0., 1., 11)
    ys = odeint(pend, y0, ts, 0.25, 9.8)
    loss = lambda y0, ts, m: jnp.sum(odeint(pend, y0, ts, m, 9.8)[:, 0] ** 2)
    return ys, jax.grad(loss, (0, 1, 2))(y0, ts, 0.25)
""",
    "float32_pytree_and_tolerances": """
  f = lambda s, t, a: {"u": -a * s["u"] + jnp.cos(t), "v": s["u"] * s["v"]}
  s0 = {"u": jnp.array([1.0, -0.5], jnp.float32), "v": jnp.ones(2, jnp.float32)}
  ts = jnp.linspace(0., 2., 6)
  return (odeint(f, s0, ts, 0.5), odeint(f, s0, ts, 0.5, rtol=1e-4, atol=1e-5),
          jax.jit(lambda s0: odeint(f, s0, ts, 0.5, hmax=0.1))(s0))
""",
    "vmap_grad_closure": """
  with jax.enable_x64(True):
    def experiment(x):
      return odeint(lambda y, t: -x * y + jnp.sin(t), 1., jnp.linspace(0., 3., 7))[-1]
    return jax.vmap(jax.value_and_grad(experiment))(jnp.array([0.1, 0.4, 0.9]))
""",
}


needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="jax (the test oracle) is not installed")
# Same steps, same arithmetic: float64 agrees to rounding, float32 nearly so.


@needs_jax
@pytest.mark.jax_oracle
def test_matches_jax_odeint():
  check_against_jax({"pendulum": ODE_PROGRAMS["pendulum_values_and_grads"]}, rtol=1e-6,
                    atol=1e-6)


@needs_jax
@pytest.mark.jax_oracle
@pytest.mark.slow  # several compiles of the solver and its adjoint on each side
def test_matches_jax_odeint_more():
  check_against_jax({k: v for k, v in ODE_PROGRAMS.items()
                     if k != "pendulum_values_and_grads"}, rtol=1e-6, atol=1e-6)


def test_repeated_top_level_calls_reuse_the_converted_function():
  from hlox.experimental import ode
  f = lambda y, t: -2.0 * y
  ts = jnp.linspace(0., 1., 3)
  a, b = odeint(f, jnp.ones(2), ts), odeint(f, jnp.ones(2), ts)
  np.testing.assert_array_equal(_np(a), _np(b))
  assert len(ode._converted[f]) == 1  # one closure conversion, so one jit cache entry
  odeint(f, jnp.ones(3), ts)
  assert len(ode._converted[f]) == 2
  # Under a transformation nothing is cached: closed-over tracers must be hoisted each time.
  g = hlox.grad(lambda k: odeint(lambda y, t: -k * y, 1., ts)[-1])(2.0)
  np.testing.assert_allclose(float(g), -np.exp(-2.0), rtol=1e-5)
