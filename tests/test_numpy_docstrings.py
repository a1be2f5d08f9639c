"""Docstrings of hlox's public functions: complete, and their examples run.

Every public ``hlox.numpy`` function documents its arguments, its result and shows an example
(as JAX's suite checks for ``jax.numpy``); aliases say what they alias. The examples in the
docstrings of ``hlox``, ``hlox.numpy``, ``hlox.lax``, ``hlox.random`` and ``hlox.nn`` are
doctests, run here against hlox, so they stay true.
"""

import doctest
import importlib
import inspect

import numpy as np
import pytest

import hlox
import hlox.lax as lax
import hlox.nn as nn
import hlox.numpy as jnp
import hlox.random as random

# JAX names these aliases; their docstrings point at the function they alias.
ALIASES = {
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "amax", "amin",
    "around", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_right_shift",
    "conj", "degrees", "divide", "get_printoptions", "mod", "pow", "printoptions", "radians",
    "round_", "set_printoptions",
}
# Functions whose docs need no example (as in JAX), and functions hlox does not implement.
NO_EXAMPLES = {"frompyfunc", "isdtype", "promote_types"}
SKIPPED = {"fromfile", "fromiter", "vsplit", "hsplit", "dsplit", "array_split"}


def _public_functions():
  for name in sorted(dir(jnp)):
    if name.startswith("_") or name in SKIPPED:
      continue
    obj = getattr(jnp, name)
    if isinstance(obj, type) or not callable(obj):
      continue
    if hasattr(np, name) and obj is getattr(np, name):
      continue  # NumPy's own object, re-exported
    yield name, obj


def test_every_public_function_is_documented():
  missing = []
  for name, obj in _public_functions():
    doc = obj.__doc__ or ""
    if name in ALIASES:
      if "Alias of" not in doc:
        missing.append(f"{name}: no 'Alias of'")
      continue
    sections = ["Args:", "Returns:"] + ([] if name in NO_EXAMPLES else ["Examples:"])
    lacking = [s for s in sections if s not in doc]
    if lacking:
      missing.append(f"{name}: {', '.join(lacking)}")
  assert not missing, "\n".join(missing)


# The namespaces whose public functions' examples are run.
NAMESPACES = {"hlox": hlox, "hlox.numpy": jnp, "hlox.lax": lax, "hlox.random": random,
              "hlox.nn": nn}


def _example_objects():
  """(qualified name, object) of each documented public function once (aliases and
  re-exports share docstrings)."""
  seen = set()
  for prefix, namespace in NAMESPACES.items():
    for name in sorted(dir(namespace)):
      if name.startswith("_"):
        continue
      obj = getattr(namespace, name)
      if inspect.ismodule(obj) or isinstance(obj, type) or not callable(obj):
        continue
      if id(obj) in seen or ">>>" not in (getattr(obj, "__doc__", None) or ""):
        continue
      if not _defining_module(obj).startswith("hlox"):
        continue  # NumPy's own functions, re-exported
      seen.add(id(obj))
      yield f"{prefix}.{name}", obj


def _defining_module(obj):
  return getattr(inspect.unwrap(obj), "__module__", None) or "hlox"


def _modules():
  return sorted({_defining_module(obj) for _, obj in _example_objects()})


# (CI runs about half of the modules, the same ones each time; ``-m slow`` runs the others.)
@pytest.mark.ci_sample(2)
@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(module):
  globs = {"jnp": jnp, "np": np, "hlox": hlox, "lax": lax, "random": random, "nn": nn}
  flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
  runner = doctest.DocTestRunner(optionflags=flags)
  finder = doctest.DocTestFinder()
  ran = 0
  for name, obj in _example_objects():
    if _defining_module(obj) != module:
      continue
    for test in finder.find(obj, name, globs=dict(globs)):
      runner.run(test)
      ran += len(test.examples)
  result = runner.summarize(verbose=False)
  assert ran > 0
  assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module}"
