"""Docstrings of ``hlox.numpy``'s public functions: complete, and their examples run.

Every public function documents its arguments, its result and shows an example (as JAX's
suite checks for ``jax.numpy``); aliases say what they alias. The examples are doctests, run
here against hlox, so they stay true.
"""

import doctest
import importlib
import inspect

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

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


def _example_objects():
  """Each documented object once (aliases and re-exports share docstrings)."""
  seen = set()
  for name, obj in _public_functions():
    if id(obj) in seen or ">>>" not in (obj.__doc__ or ""):
      continue
    seen.add(id(obj))
    yield name, obj


def _modules():
  names = set()
  for _, obj in _example_objects():
    names.add(getattr(inspect.unwrap(obj), "__module__", None) or "hlox.numpy")
  return sorted(names)


@pytest.mark.parametrize("module", _modules())
def test_docstring_examples_run(module):
  globs = {"jnp": jnp, "np": np, "hlox": hlox}
  flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
  runner = doctest.DocTestRunner(optionflags=flags)
  finder = doctest.DocTestFinder()
  ran = 0
  for name, obj in _example_objects():
    if (getattr(inspect.unwrap(obj), "__module__", None) or "hlox.numpy") != module:
      continue
    for test in finder.find(obj, f"hlox.numpy.{name}", globs=dict(globs)):
      runner.run(test)
      ran += len(test.examples)
  result = runner.summarize(verbose=False)
  assert ran > 0
  assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module}"
