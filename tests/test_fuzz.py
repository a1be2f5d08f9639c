"""The project's fuzzer (tests/fuzz) on fixed seeds: valid applications must match NumPy
(and, in the oracle test, JAX's dtypes and values), invalid ones must raise TypeError,
ValueError or IndexError, in eager mode and under jit."""
import numpy as np
import pytest

import hlox
from hlox.config import enable_x64
from tests.fuzz import families, runner


def test_fuzz_fixed_seed_slice():
  report = runner.run(seed=0, n=600, variety=5)  # ~75 families x 5 signatures
  assert sum(report.counts.values()) == 600
  assert report.counts["ok"] > 0 and not report.failures, str(report)


def test_fuzz_x64_slice():
  with enable_x64():
    report = runner.run(seed=1, n=300, variety=3)
  assert not report.failures, str(report)


def test_runner_classifies_outcomes():
  # The runner itself must be able to fail: a wrong reference, an invalid application that
  # returns, and an exception of a non-standard class are each reported.
  x = np.ones(3, np.float32)
  report = runner.Report()
  runner.run_one(families.App("t", np.sin, (x,), lambda x: np.cos(x), np.float32), report, True)
  runner.run_one(families.App("t", np.sin, (x,), valid=False), report, True)
  def boom(x):
    raise KeyError("x")
  runner.run_one(families.App("t", boom, (x,), lambda x: x), report, False)
  runner.run_one(families.App("t", hlox.numpy.sin, (x,), np.sin, np.float16), report, False)
  assert report.counts == {"wrong": 2, "accepted": 1, "nonstandard": 1}, str(report)


@pytest.mark.jax_oracle
@pytest.mark.parametrize("x64", [False, True])
def test_fuzz_against_jax(x64):
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp
  from jax import lax as jlax
  old = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", x64)
  hlox.config.update("enable_x64", x64)
  try:
    mismatches, compared = [], 0
    for app in runner.draw(seed=2, n=300, variety=3):
      name = app.family.split(".", 1)[1]
      if not app.valid or app.fn.__name__ == "<lambda>":
        continue
      jfn = getattr(jlax if app.family.startswith("lax.") else jjnp, name)
      try:
        want = np.asarray(jfn(*app.args))
      except (TypeError, ValueError):
        continue
      got = np.asarray(app.fn(*app.args))
      compared += 1
      if got.dtype != want.dtype or got.shape != want.shape or not np.allclose(
          got.astype(np.complex128), want.astype(np.complex128), rtol=2e-2, atol=2e-2,
          equal_nan=True):
        mismatches.append(f"{app.describe()}: hlox {got.dtype}{got.shape} jax "
                          f"{want.dtype}{want.shape}")
    assert compared > 100
    assert not mismatches, "\n".join(mismatches[:20])
  finally:
    jax.config.update("jax_enable_x64", old)
    hlox.config.update("enable_x64", False)


@pytest.mark.slow
def test_fuzz_long_campaign():
  report = runner.run(seed=3, n=20000)
  assert not report.failures, str(report)
