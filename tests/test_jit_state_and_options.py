"""``jit``'s ``__getstate__`` (the function's name), its TypeError for callables that cannot
be weakly referenced, its OverflowError naming an out-of-range integer argument, and option
scopes over global settings (``get_global``, and ``config.update`` inside a scope changing
what the scope's exit restores), as in JAX."""
import functools

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


def _my_function():
  return 1


def test_getstate_function_name():
  assert hlox.jit(_my_function).__getstate__()["function_name"] == "_my_function"
  nested = functools.partial(functools.partial(_my_function))
  assert hlox.jit(nested).__getstate__()["function_name"] == "_my_function"
  named = functools.partial(_my_function)
  named.__name__ = "named"
  assert hlox.jit(named).__getstate__()["function_name"] == "named"
  assert hlox.jit(lambda: 1).__getstate__()["function_name"] == "<lambda>"
  # the lowered module is named after the function a partial wraps
  assert "@jit__my_function" in hlox.jit(functools.partial(_my_function)).lower().as_text()


def test_jit_of_callable_without_weakref_support():
  class WithSlots:
    __slots__ = []

    def __call__(self, x):
      return x + 1

  f = hlox.jit(WithSlots())  # making it is fine; tracing needs a weak reference
  with pytest.raises(TypeError, match="cannot create weak reference"):
    f(3)


def test_update_inside_scope_sets_the_global_value():
  traces = []

  @hlox.jit
  def f(x):
    traces.append(1)
    return jnp.dot(x, x)

  x = jnp.ones((2, 2))
  opt = hlox.default_matmul_precision
  before = opt.get_global()
  try:
    f(x)
    with opt("tensorfloat32"):
      assert opt.value == "tensorfloat32" and opt.get_global() == before
      f(x)
      hlox.config.update("jax_default_matmul_precision", "float32")
      assert opt.value == "tensorfloat32" and opt.get_global() == "float32"
    # the scope's exit restores the global value set inside it: a new trace
    assert opt.value == "float32" and opt.get_global() == "float32"
    n = len(traces)
    np.testing.assert_allclose(f(x), np.full((2, 2), 2.0))
    assert len(traces) == n + 1 == 3
  finally:
    hlox.config.update("jax_default_matmul_precision", before)
  assert opt.value == before


def test_nested_scopes_restore_in_order():
  opt = hlox.numpy_rank_promotion
  start = opt.value
  with opt("warn"):
    with opt("raise"):
      assert opt.value == "raise" and opt.get_global() == start
    assert opt.value == "warn"
  assert opt.value == start


def test_integer_argument_overflow_names_the_argument():
  f = hlox.jit(lambda x: x + 0)
  limit = np.iinfo(np.int32).max
  assert int(f(limit)) == limit
  for bad in (limit + 1, -limit - 2):
    with pytest.raises(OverflowError, match="An overflow.*whose argument path is x\\."):
      f(bad)
  g = hlox.jit(lambda a, b: a + b[0])
  with pytest.raises(OverflowError, match="whose argument path is b\\[0\\]\\."):
    g(1, [2 ** 40])


def test_parse_flags_with_absl_reads_jax_flags_from_argv(monkeypatch):
  # Test programs written for JAX (flax's) call it at import: --jax_* flags before a bare
  # "--" set options; other arguments are left alone.
  cfg = hlox.config
  saved = {n: getattr(cfg, n) for n in ("numpy_rank_promotion", "enable_checks",
                                        "default_matmul_precision", "log_compiles")}
  monkeypatch.setattr("sys.argv", [
      "prog", "tests/x_test.py", "-q", "--jax_numpy_rank_promotion=warn",
      "--jax_enable_checks", "--jax_default_matmul_precision", "highest",
      "--jax_no_such_option=1", "--", "--nojax_enable_checks", "--jax_log_compiles"])
  try:
    cfg.parse_flags_with_absl()
    assert cfg.numpy_rank_promotion == "warn" and cfg.enable_checks
    assert cfg.default_matmul_precision == "highest" and cfg.log_compiles == saved["log_compiles"]
    monkeypatch.setattr("sys.argv", ["prog", "--nojax_enable_checks"])
    cfg.parse_flags_with_absl()
    assert not cfg.enable_checks
    monkeypatch.setattr("sys.argv", ["prog", "--jax_enable_checks=maybe"])
    with pytest.raises(ValueError, match="Non-boolean argument"):
      cfg.parse_flags_with_absl()
    monkeypatch.setattr("sys.argv", ["prog", "--jax_numpy_rank_promotion=sometimes"])
    with pytest.raises(ValueError):
      cfg.parse_flags_with_absl()
  finally:
    for name, value in saved.items():
      cfg.update(name, value)
