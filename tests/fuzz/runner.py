"""Draw applications from the family table, run them eagerly and under ``jit``, classify.

Outcomes: ``ok``; ``wrong`` (a valid application whose value, shape or dtype differs from the
reference, or whose eager and jit results differ); ``rejected`` (a valid application that
raised); ``accepted`` (an invalid application that returned); ``nonstandard`` (an exception
other than TypeError/ValueError/IndexError, e.g. an AttributeError or XLA's runtime error);
``crash`` is left to the process (the runner never catches BaseException).
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

import hlox
from tests.fuzz.families import BF16, FAMILIES

STANDARD = (TypeError, ValueError, IndexError)


def _tolerance(dtype):
  dtype = np.dtype(dtype)
  if dtype in (np.float16, BF16):
    return 2e-2
  if dtype.kind in "fc":
    return 2e-5
  return 0


def check_value(app, out):
  """None when ``out`` matches the application's reference, else what differs."""
  out = np.asarray(out)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    want = np.asarray(app.reference(*[np.asarray(a) for a in app.args]))
  if app.dtype is not None and out.dtype != np.dtype(app.dtype):
    return f"dtype {out.dtype} != {np.dtype(app.dtype)}"
  if out.shape != want.shape:
    return f"shape {out.shape} != {want.shape}"
  tol = _tolerance(out.dtype)
  a = out.astype(np.complex128 if out.dtype.kind == "c" else np.float64) if out.dtype == BF16 \
      or out.dtype.kind in "fc" else out
  if tol:
    ok = np.allclose(a, want, rtol=tol, atol=tol, equal_nan=True)
  else:
    ok = np.array_equal(a, want.astype(a.dtype) if a.dtype != bool else want.astype(bool))
  return None if ok else f"values differ: {out.ravel()[:6]} vs {want.ravel()[:6]}"


class Report:
  """Counts per outcome, with the first few examples of every failing kind."""

  def __init__(self):
    self.counts = collections.Counter()
    self.examples = collections.defaultdict(list)

  def add(self, kind, app, detail=""):
    self.counts[kind] += 1
    if kind != "ok" and len(self.examples[kind]) < 12:
      self.examples[kind].append(f"{app.describe()}: {detail}")

  @property
  def failures(self):
    return {k: v for k, v in self.counts.items() if k != "ok"}

  def __str__(self):
    lines = [f"{sum(self.counts.values())} applications: " +
             ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))]
    for kind, examples in self.examples.items():
      lines += [f"  {kind}:"] + [f"    {e}" for e in examples]
    return "\n".join(lines)


_jitted = {}


def _jit(app):
  # One jitted function per family code object, so equal signatures hit the jit cache.
  key = (app.family, app.note) if app.fn.__name__ == "<lambda>" else app.fn
  fn = _jitted.get(key)
  if fn is None or getattr(fn, "_fuzz_fn", None) is not app.fn:
    fn = hlox.jit(app.fn)
    fn._fuzz_fn = app.fn
    _jitted[key] = fn
  return fn


def run_one(app, report, use_jit):
  modes = [("eager", app.fn)] + ([("jit", _jit(app))] if use_jit else [])
  results = []
  for mode, fn in modes:
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*app.args)
        out = np.asarray(out)
    except STANDARD as e:
      if app.valid:
        report.add("rejected", app, f"{mode}: {type(e).__name__}: {str(e)[:120]}")
        return
      continue
    except Exception as e:  # noqa: BLE001 - classifying is the point
      report.add("nonstandard", app, f"{mode}: {type(e).__name__}: {str(e)[:120]}")
      return
    if not app.valid:
      report.add("accepted", app, f"{mode} returned {out.dtype}{list(out.shape)}")
      return
    problem = check_value(app, out)
    if problem:
      report.add("wrong", app, f"{mode}: {problem}")
      return
    results.append(out)
  if app.valid and len(results) == 2 and not (
      results[0].dtype == results[1].dtype and results[0].shape == results[1].shape):
    report.add("wrong", app, "eager and jit disagree")
    return
  report.add("ok", app)


def draw(seed, n, families=None, variety=None):
  """``n`` applications (about half invalid), reproducible from ``seed``.

  With ``variety``, each family draws from ``variety`` fixed slots (each slot its own seeded
  application, valid or not), so a short run repeats signatures and spends its time running
  rather than compiling; without it every application is fresh."""
  rng = np.random.default_rng(seed)
  names = sorted(families or FAMILIES)
  apps = []
  for _ in range(n):
    index = int(rng.integers(len(names)))
    if variety:
      slot = int(rng.integers(variety))
      app_rng = np.random.default_rng([seed, index, slot])
    else:
      app_rng = rng
    apps.append(FAMILIES[names[index]](app_rng, bool(app_rng.random() < 0.5)))
  return apps


def run(seed=0, n=2000, jit_every=3, families=None, variety=None):
  """Run a seeded campaign; every ``jit_every``-th application also runs under ``jit``."""
  report = Report()
  for i, app in enumerate(draw(seed, n, families, variety)):
    run_one(app, report, use_jit=i % jit_every == 0)
  return report
