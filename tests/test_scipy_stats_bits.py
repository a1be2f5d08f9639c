"""``hlox.scipy.stats`` against JAX bit for bit (eagerly and under ``jit``, float32 and
float64), and against SciPy within a tolerance that shows the formulas stayed accurate.

The bits depend on each function's formula and order of operations (norm's ``ndtr`` /
``log_ndtr`` / ``ndtri``, the incomplete beta and gamma functions, ``betaln``, ``i0e``), so
the grids reach into every branch: both tails, the centre, the series / continued-fraction
split of the incomplete functions."""
from __future__ import annotations

import importlib.util
import numpy as np
import pytest

import hlox
import hlox.scipy.stats as hst
from hlox.config import enable_x64
from tests.util import run_in_jax

# name -> (function path, argument builders); arguments are built from the dtype name.
_GRIDS = {
  "x": "np.linspace(-9, 9, 73)",
  "pos": "np.concatenate([np.geomspace(1e-5, 40, 60), [0.5, 1.5, 2.5, 3.0]])",
  "q": "np.concatenate([np.geomspace(1e-30, 0.5, 30), 1 - np.geomspace(1e-7, 0.5, 30)])",
  "u": "np.linspace(0.001, 0.999, 41)",
  "k": "np.arange(0, 21)",
}
CASES = {
  "norm.cdf": ("x", 0.3, 1.7), "norm.logcdf": ("x", 0.3, 1.7), "norm.logsf": ("x",),
  "norm.ppf": ("q", 0.3, 1.7), "norm.isf": ("u",),
  "beta.cdf": ("u", 2.5, 0.7), "beta.logsf": ("u", 2.5, 0.7),
  "gamma.logsf": ("pos", 2.5), "chi2.sf": ("pos", 3.0), "chi2.logpdf": ("pos", 3.0),
  "cauchy.logpdf": ("x",), "vonmises.logpdf": ("x", 2.0),
  "truncnorm.logpdf": ("x", -1.5, 2.5), "truncnorm.cdf": ("x", 6.0, 12.0),
  "binom.logpmf": ("k", 20.0, 0.3), "betabinom.logpmf": ("k", 20.0, 2.5, 0.7),
}
# float64 absolute error of JAX's formulas: logs of values within 1e-8 of 1 (log of a rounded
# cdf near 1, log of 1 - P for small P) and JAX's betaln (cdflib's algdiv alone, without
# SciPy's branch for both arguments >= 8).
_ATOL64 = {"norm.logsf": 1e-15, "norm.logcdf": 1e-15, "beta.logsf": 1e-15,
           "gamma.logsf": 1e-15, "betabinom.logpmf": 1e-6}
# Every case runs eagerly in float32; these (one per method) also under jit and in float64.
SAMPLE = ["norm.logcdf", "norm.ppf", "beta.cdf", "gamma.logsf", "vonmises.logpdf",
          "truncnorm.cdf", "betabinom.logpmf"]
PLANS = {("float32", "eager"): sorted(CASES), ("float32", "jit"): SAMPLE,
         ("float64", "eager"): SAMPLE}
_SCIPY_EXTRA = {"norm.logsf": (0, 1), "norm.isf": (0, 1), "cauchy.logpdf": (0, 1)}

JAX_RUNNER = """
import json, sys
import numpy as np
import jax
import jax.scipy.stats as st
spec = json.loads(sys.stdin.read())
out = {}
for dt, mode, name in spec["plan"]:
  mod, fn = name.split(".")
  f = getattr(getattr(st, mod), fn)
  args = spec["cases"][name]
  vals = [np.asarray(eval(spec["grids"][a]) if isinstance(a, str) else a, dt) for a in args]
  r = np.asarray(jax.jit(f)(*vals) if mode == "jit" else f(*vals))
  assert r.dtype == np.dtype(dt), (name, r.dtype)
  out[dt + " " + mode + " " + name] = r.view(np.uint32 if dt == "float32" else np.uint64).tolist()
print(json.dumps(out))
"""


def _args(name, dt):
  return [np.asarray(eval(_GRIDS[a]) if isinstance(a, str) else a, dt)  # noqa: S307
          for a in CASES[name]]


def _here(name, dt, mode):
  mod, fn = name.split(".")
  f = getattr(getattr(hst, mod), fn)
  r = hlox.jit(f)(*_args(name, dt)) if mode == "jit" else f(*_args(name, dt))
  return np.asarray(r)


@pytest.fixture(scope="module")
def jax_bits():
  if importlib.util.find_spec("jax") is None:
    pytest.skip("jax (the test oracle) is not installed")
  # float32 without x64 (as most programs run), float64 with it.
  def plan(dt):
    return [[d, m, n] for (d, m), names in PLANS.items() if d == dt for n in names]
  out = run_in_jax(JAX_RUNNER, {"cases": CASES, "grids": _GRIDS, "plan": plan("float32")})
  out.update(run_in_jax(JAX_RUNNER, {"cases": CASES, "grids": _GRIDS, "plan": plan("float64")},
                        extra_env={"JAX_ENABLE_X64": "1"}))
  return out


def _ulps(a, b):
  """Largest distance in units in the last place (NaN matching NaN counts as equal)."""
  it = np.int32 if a.dtype == np.float32 else np.int64
  ia, ib = a.view(it).astype(object), b.view(it).astype(object)
  top = 2 ** (8 * a.dtype.itemsize - 1)
  key = lambda i: -(i + top) if i < 0 else i  # noqa: E731  (monotone in the float value)
  both_nan = np.isnan(a) & np.isnan(b)
  return max([0] + [abs(key(x) - key(y)) for x, y, n in zip(ia, ib, both_nan) if not n])


@pytest.mark.jax_oracle
@pytest.mark.parametrize("dt,mode", sorted(PLANS))
def test_bits_match_jax(jax_bits, dt, mode):
  bad = {}
  for name in PLANS[dt, mode]:
    if dt == "float64":
      with enable_x64():
        got = _here(name, dt, mode)
    else:
      got = _here(name, dt, mode)
    assert got.dtype == np.dtype(dt), (name, got.dtype)
    want = np.asarray(jax_bits[f"{dt} {mode} {name}"],
                      np.uint32 if dt == "float32" else np.uint64).view(dt)
    ulps = _ulps(got.ravel(), want.ravel())
    if ulps:
      bad[name] = ulps
  assert not bad, f"max ULP differences from JAX ({dt}, {mode}): {bad}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_close_to_scipy(name):
  """Accuracy against SciPy in float32 for every case, and in float64 for the sample."""
  sst = pytest.importorskip("scipy.stats")
  mod, fn = name.split(".")
  ours, theirs = getattr(getattr(hst, mod), fn), getattr(getattr(sst, mod), fn)
  extra = _SCIPY_EXTRA.get(name, ())
  # float32: against SciPy at the float32 inputs, to float32 accuracy.
  got32 = np.asarray(ours(*_args(name, "float32")), np.float64)
  want32 = theirs(*[np.asarray(a, np.float64) for a in _args(name, "float32")], *extra)
  assert np.array_equal(np.isfinite(got32), np.isfinite(want32)), name
  ok = np.isfinite(want32)
  np.testing.assert_allclose(got32[ok], want32[ok], rtol=2e-5, atol=1e-6)
  if name not in SAMPLE:
    return
  with enable_x64():
    got = np.asarray(ours(*_args(name, "float64")))
  want = theirs(*_args(name, "float64"), *extra)
  finite = np.isfinite(want)
  assert np.array_equal(np.isfinite(got), finite), name
  np.testing.assert_allclose(got[finite], want[finite], rtol=1e-9, atol=_ATOL64.get(name, 0))
