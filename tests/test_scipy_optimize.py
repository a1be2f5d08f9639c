"""hlox.scipy.optimize.minimize (BFGS and the experimental L-BFGS) and line_search: JAX's
results (every field, to tight tolerance) on Rosenbrock, quadratic and logistic-regression
problems, SciPy's minimizers, jit vs eager, vmap vs a loop, and bad input."""
import functools
import importlib.util
import textwrap

import numpy as np
import pytest
import scipy.optimize as sopt

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.scipy.optimize import OptimizeResults, line_search, minimize
from tests.util import run_in_jax

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"

# The problems, written once for both libraries (``np`` is the array namespace).
PROBLEMS = textwrap.dedent("""
    def rosenbrock(x, np):
      return np.sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    def quadratic(x, np):
      a = np.asarray(QUAD_A, dtype=x.dtype)
      return 0.5 * x @ (a @ x) - np.sum(x * np.arange(1., 5., dtype=x.dtype))

    def logistic(w, np):
      X = np.asarray(LOGREG_X, dtype=w.dtype)
      y = np.asarray(LOGREG_Y, dtype=w.dtype)
      z = X @ w
      return np.mean(np.logaddexp(0., z) - y * z) + 0.01 * np.sum(w * w)
""")


def _problem_data():
  rng = np.random.default_rng(0)
  m = rng.standard_normal((4, 4))
  X = rng.standard_normal((30, 3))
  y = (X @ np.array([1.5, -2.0, 0.5]) + 0.3 * rng.standard_normal(30) > 0).astype(float)
  return {"QUAD_A": (m @ m.T / 4 + np.eye(4)).tolist(), "LOGREG_X": X.tolist(),
          "LOGREG_Y": y.tolist()}


DATA = _problem_data()
X0 = {"rosenbrock": [-1.2, 1.0, 0.5, 0.3], "quadratic": [0.0, 1.0, -1.0, 2.0],
      "logistic": [0.1, 0.2, -0.3]}
CASES = [(p, m) for p in X0 for m in ("BFGS", LBFGS)]
FIELDS = ("x", "success", "status", "fun", "jac", "hess_inv", "nfev", "njev", "nit")


def _namespace():
  ns = dict(DATA)
  exec(PROBLEMS, ns)
  return ns


JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.scipy.optimize import minimize
    programs = json.loads(sys.stdin.read())
    ns = dict(programs["data"])
    exec(programs["problems"], ns)
    out = {}
    for key, (problem, method, x0, dtype) in programs["cases"].items():
      fun = lambda x, ns=ns, problem=problem: ns[problem](x, jnp)
      r = jax.jit(lambda x: minimize(fun, x, method=method))(np.asarray(x0, dtype))
      out[key] = {f: (None if getattr(r, f) is None else np.asarray(getattr(r, f)).tolist())
                  for f in r._fields}
    from jax._src.scipy.optimize.line_search import line_search
    f = lambda x: ns["quadratic"](x, jnp)
    x = np.ones(4)
    ls = jax.jit(lambda x: line_search(f, x, -jax.grad(f)(x)))(x)
    out["line_search"] = {k: np.asarray(v).tolist() for k, v in ls._asdict().items()}
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def jax_results(request):
  if importlib.util.find_spec("jax") is None:
    return None  # the tests that need JAX skip; the others still compare with SciPy
  selected = {(item.callspec.params["problem"], item.callspec.params["method"])
              for item in request.session.items if item.module is request.module
              and "method" in getattr(getattr(item, "callspec", None), "params", {})}
  cases = {f"{p}/{m}/float64": (p, m, X0[p], "float64") for p, m in CASES
           if (p, m) in selected}
  cases["rosenbrock/BFGS/float32"] = ("rosenbrock", "BFGS", X0["rosenbrock"], "float32")
  return run_in_jax(JAX_RUNNER, {"data": DATA, "problems": PROBLEMS, "cases": cases},
                    extra_env={"JAX_ENABLE_X64": "1"})


@functools.lru_cache(maxsize=None)
def _jitted(problem, method):
  fun = _namespace()[problem]
  return hlox.jit(lambda x: minimize(lambda x: fun(x, jnp), x, method=method))


def _run(problem, method, x0):
  # One jitted minimizer per problem and method, shared by the tests.
  return _jitted(problem, method)(x0)


@pytest.mark.ci_sample(2)
@pytest.mark.jax_oracle
@pytest.mark.parametrize("problem,method", CASES)
def test_float64_against_scipy_and_jax(problem, method, jax_results):
  ns = _namespace()
  # SciPy's BFGS, converged further, finds the same minimum.
  ref = sopt.minimize(lambda x: float(ns[problem](x, np)), X0[problem], method="BFGS",
                      options={"gtol": 1e-10})
  with enable_x64():
    r = _run(problem, method, np.asarray(X0[problem]))
    assert isinstance(r, OptimizeResults) and r.x.dtype == np.float64
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(np.asarray(r.x), ref.x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(float(r.fun), ref.fun, rtol=1e-8, atol=1e-10)
    if jax_results is None:
      return
    expected = jax_results[f"{problem}/{method}/float64"]
    for field in FIELDS:
      got, want = getattr(r, field), expected[field]
      if want is None:
        assert got is None, field
      elif field in ("success", "status", "nfev", "njev", "nit"):
        assert np.asarray(got).tolist() == want, (field, got, want)
        assert np.asarray(got).dtype == (np.bool_ if field == "success" else np.int64)
      else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-11,
                                   err_msg=field)


@pytest.mark.jax_oracle
@pytest.mark.parametrize("problem", ["rosenbrock"])
def test_matches_jax_float32(problem, jax_results):
  if jax_results is None:
    pytest.skip("jax (the test oracle) is not installed")
  expected = jax_results[f"{problem}/BFGS/float32"]
  r = _run(problem, "BFGS", np.asarray(X0[problem], np.float32))
  assert r.x.dtype == np.float32 and r.fun.dtype == np.float32
  assert bool(r.success) == expected["success"]
  np.testing.assert_allclose(np.asarray(r.x), expected["x"], rtol=2e-3, atol=2e-3)
  np.testing.assert_allclose(float(r.fun), expected["fun"], rtol=1e-5, atol=1e-5)


@pytest.mark.jax_oracle
def test_line_search_matches_jax(jax_results):
  if jax_results is None:
    pytest.skip("jax (the test oracle) is not installed")
  expected = jax_results["line_search"]
  f = lambda x: _namespace()["quadratic"](x, jnp)  # noqa: E731
  with enable_x64():
    x = np.ones(4)
    ls = hlox.jit(lambda x: line_search(f, x, -hlox.grad(f)(x)))(x)
    for k, want in expected.items():
      np.testing.assert_allclose(np.asarray(getattr(ls, k)), np.asarray(want), rtol=1e-12,
                                 atol=1e-12, err_msg=k)


def test_line_search_strong_wolfe():
  f = lambda x: _namespace()["rosenbrock"](x, jnp)  # noqa: E731
  with enable_x64():
    x = np.array([-1.2, 1.0, 0.5])
    g = np.asarray(hlox.grad(f)(x))
    p = -g / np.linalg.norm(g)
    ls = line_search(f, x, p, c1=1e-4, c2=0.9)
    assert not bool(ls.failed) and int(ls.status) == 0
    a = float(ls.a_k)
    f0, fa = float(f(x)), float(f(x + a * p))
    ga = np.asarray(hlox.grad(f)(x + a * p))
    assert fa <= f0 + 1e-4 * a * (g @ p)
    assert abs(ga @ p) <= 0.9 * abs(g @ p)
    np.testing.assert_allclose(float(ls.f_k), fa, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ls.g_k), ga, rtol=1e-10)
    # SciPy's strong-Wolfe search accepts the same step.
    ref = sopt.line_search(lambda x: float(f(x)), lambda x: np.asarray(hlox.grad(f)(x)), x, p)
    assert ref[0] is not None


@pytest.mark.slow  # ~10 s (compiles); a CI test covers the same function
def test_eager_matches_jit_and_vmap_matches_loop():
  fun = _namespace()["quadratic"]
  with enable_x64():
    x0s = np.random.default_rng(1).standard_normal((3, 4))
    f = lambda x: minimize(lambda x: fun(x, jnp), x, method="BFGS")  # noqa: E731
    # Eagerly (slow: every operation outside the loops dispatches alone) on a small problem.
    g = lambda x: minimize(lambda x: jnp.sum((x - 1.) ** 4 + x ** 2), x,  # noqa: E731
                           method="BFGS")
    eager, jitted = g(np.array([2., -1.])), hlox.jit(g)(np.array([2., -1.]))
    for field in ("x", "fun", "jac", "hess_inv", "nit", "nfev"):
      np.testing.assert_allclose(np.asarray(getattr(eager, field)),
                                 np.asarray(getattr(jitted, field)), rtol=1e-12, atol=1e-14)
    batched = hlox.jit(hlox.vmap(f))(x0s)
    f_jit = _jitted("quadratic", "BFGS")  # the same minimizer, unbatched
    for i in range(3):
      single = f_jit(x0s[i])
      for field in ("x", "fun", "nit", "nfev", "success"):
        np.testing.assert_allclose(np.asarray(getattr(batched, field))[i],
                                   np.asarray(getattr(single, field)), rtol=1e-12, atol=1e-14)
    # args are passed through; options reach the method.
    shifted = lambda x, s: jnp.sum((x - s) ** 2)  # noqa: E731
    r = hlox.jit(lambda x0, s: minimize(shifted, x0, args=(s,), method="BFGS", options={
        "maxiter": 50, "gtol": 1e-9}))(np.zeros(2), np.array([1.0, -2.0]))
    np.testing.assert_allclose(np.asarray(r.x), [1.0, -2.0], atol=1e-9)
    r = hlox.jit(lambda x0: minimize(_namespace()["rosenbrock"], x0, args=(jnp,),
                                     method="BFGS", options={"maxiter": 2}))(
        np.array([-1.2, 1.0]))
    assert int(r.nit) == 2 and int(r.status) == 1 and not bool(r.success)


def test_bad_input():
  f = lambda x: jnp.sum(x ** 2)  # noqa: E731
  with pytest.raises(TypeError, match="must be a tuple"):
    minimize(f, np.zeros(2), args=[1], method="BFGS")
  with pytest.raises(ValueError, match="not recognized"):
    minimize(f, np.zeros(2), method="Nelder-Mead")
  with pytest.raises(ValueError, match="1-dimensional"):
    minimize(f, np.zeros((2, 2)), method="BFGS")
