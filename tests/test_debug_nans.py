"""debug_nans / debug_infs (NaN and inf checks, the de-optimized re-run) and log_compiles."""
import inspect
import logging
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.interpreters import nan_checks, xla
from hlox.lax.call import CompiledCall

HERE = __file__


def _line_of(fun, text):
  """``file:line`` of the first line of ``fun`` holding ``text`` (what the errors cite)."""
  lines, start = inspect.getsourcelines(fun)
  for i, line in enumerate(lines):
    if text in line:
      return f"{HERE}:{start + i}"
  raise AssertionError(f"{text!r} not in {fun.__name__}")


def _nan_f32():
  return hlox.device_put(np.float32(np.nan))


# --- NaN checks ---------------------------------------------------------------------------

def test_eager_primitive_nan_names_it():
  x = jnp.array(-1.0)
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log"):
      jnp.log(x)  # a fused (jitted) NumPy function
    with pytest.raises(FloatingPointError, match=r"^invalid value \(nan\) encountered in log$"):
      lax.log(x)  # a bare eager primitive: no equation, no line
    np.testing.assert_allclose(jnp.log(jnp.array(2.0)), np.log(np.float32(2.0)))


def _traceback_lines(exc):
  """``file:line`` of each frame of ``exc``'s traceback, outermost first."""
  out, tb = [], exc.__traceback__
  while tb is not None:
    out.append(f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
    tb = tb.tb_next
  return out


def test_jit_output_nan_reruns_the_function(capsys):
  """As JAX: a NaN out of a jitted call runs the Python function itself (said on stdout), so
  the error comes from the operation, raised on the user's line."""
  def f(x):
    y = x + 1.0
    z = 0.0 / x
    return y * z

  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError) as info:
      hlox.jit(f)(jnp.array(0.0))
  assert str(info.value) == "invalid value (nan) encountered in div"
  assert _traceback_lines(info.value)[-1] == _line_of(f, "z = 0.0 / x")
  assert "Calling the de-optimized version." in capsys.readouterr().out
  # Python values keep Python's semantics in the re-run (JAX's behaviour)
  with hlox.debug_nans(True):
    with pytest.raises(ZeroDivisionError):
      hlox.jit(lambda x: 0.0 / x)(0.0)


def test_nested_jit_error_passes_through_both_calls():
  @hlox.jit
  def inner(y):
    return jnp.sqrt(y - 2.0)

  @hlox.jit
  def outer(x):
    return inner(x * 1.0) + 1.0

  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError) as info:
      outer(jnp.array(1.0))
  assert str(info.value) == "invalid value (nan) encountered in sqrt"
  lines = _traceback_lines(info.value)
  assert lines.index(_line_of(outer, "inner(x")) < lines.index(_line_of(inner, "jnp.sqrt"))


def test_scan_body_nan_names_the_body_primitive():
  def body(c, x):
    c = c + jnp.log(x)
    return c, c * 2.0

  @hlox.jit
  def f(xs):
    return lax.scan(body, 0.0, xs)

  xs = jnp.array([1.0, 2.0, -3.0, 4.0])
  carry, ys = f(xs)  # checks off: NaNs flow through
  assert np.isnan(carry) and np.isnan(np.asarray(ys)[2:]).all()
  with hlox.debug_nans(True):
    np.testing.assert_allclose(f(jnp.array([1.0, 2.0]))[0], np.log(2.0), rtol=1e-6)
    with pytest.raises(FloatingPointError) as info:
      f(xs)
  msg = str(info.value)
  assert msg.startswith("invalid value (nan) encountered in log at ")
  assert _line_of(body, "jnp.log(x)") in msg
  assert f"inside scan at {_line_of(f, 'lax.scan')}:" in msg


def test_while_and_cond_bodies():
  def body(c):
    i, x = c
    return i + 1, x - 1.0 / (2.0 - i)  # inf at i == 2, then inf - inf = nan

  @hlox.jit
  def loop(x):
    return lax.while_loop(lambda c: c[0] < 4, body, (0.0, x))

  @hlox.jit
  def branch(x):
    return lax.cond(x > 0, lambda y: y * 2.0, lambda y: jnp.arcsin(y), x)

  with hlox.debug_infs(True):
    with pytest.raises(FloatingPointError,
                       match=r"invalid value \(inf\) encountered in div at .*inside while"):
      loop(jnp.array(1.0))
  with hlox.debug_nans(True):
    assert float(branch(jnp.array(3.0))) == 6.0
    with pytest.raises(FloatingPointError,
                       match=r"invalid value \(nan\) encountered in asin at .*inside cond"):
      branch(jnp.array(-3.0))


def test_custom_jvp_and_checkpoint_bodies_rerun_in_python():
  @hlox.custom_jvp
  def safe_log(x):
    return jnp.log(x)
  safe_log.defjvp(lambda p, t: (safe_log(p[0]), t[0] / p[0]))

  @hlox.jit
  def f(x):
    return hlox.checkpoint(lambda y: jnp.sqrt(y))(x) + 1.0

  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError) as info:
      hlox.jit(lambda x: safe_log(x) * 2.0)(jnp.array(-1.0))
    assert str(info.value) == "invalid value (nan) encountered in log"
    assert _traceback_lines(info.value)[-1] == _line_of(safe_log, "jnp.log(x)")
    with pytest.raises(FloatingPointError) as info:
      f(jnp.array(-1.0))
    assert str(info.value) == "invalid value (nan) encountered in sqrt"
    assert _traceback_lines(info.value)[-1] == _line_of(f, "jnp.sqrt(y)")


def test_nan_input_raises_at_first_primitive():
  f = hlox.jit(lambda x: x + 1.0)
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in add"):
      f(_nan_f32())


def test_deoptimized_run_without_invalid_values():
  f = hlox.jit(lambda x: x)  # passes its NaN input on: no operation produces it
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError,
                       match="the de-optimized function did not produce invalid values"):
      f(_nan_f32())


def test_infs_and_nans_are_separate_options():
  f = hlox.jit(lambda x: 1.0 / x)
  g = hlox.jit(lambda x: x / x)
  zero = jnp.array(0.0)
  with hlox.debug_infs(True):
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
      f(zero)
    assert np.isnan(g(zero))  # NaN is not checked
  with hlox.debug_nans(True):
    assert np.isinf(f(zero))
    with pytest.raises(FloatingPointError, match=r"\(nan\) encountered in div"):
      g(zero)


def test_complex_checked_integers_not():
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"\(nan\) encountered in"):
      hlox.jit(lambda z: z * np.complex64(np.nan))(jnp.array(1 + 1j, jnp.complex64))
    assert int(hlox.jit(lambda i: i // 1)(jnp.array(3))) == 3


def test_off_by_default_and_results_unchanged():
  assert not hlox.debug_nans.value and not hlox.debug_infs.value
  out = hlox.jit(lambda x: 0.0 / x)(jnp.array(0.0))
  assert np.isnan(out)
  assert np.isnan(jnp.log(jnp.array(-1.0)))


def test_cache_hit_path_checks_while_on():
  # As JAX's testJitComputationNaNContextManager: calls before the checks go through the
  # fast path; switched on, the same cached function is checked.
  f = hlox.jit(lambda x: 0.0 / x)
  zero = jnp.array(0.0)
  f(zero)
  f(zero)
  with hlox.debug_nans(True):
    assert float(f(jnp.array(1.0))) == 0.0
    for _ in range(2):  # the second call hits the (checking) cache entry
      with pytest.raises(FloatingPointError, match="encountered in div"):
        f(zero)
  assert np.isnan(f(zero))


def test_donated_argument_kept_for_the_rerun():
  f = hlox.jit(lambda x: 0.0 / x, donate_argnums=0)
  x = jnp.array(0.0)
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match="encountered in div"):
      f(x)
  assert not x.is_deleted()


def test_ahead_of_time_compiled_call():
  compiled = hlox.jit(lambda x: jnp.log(x)).lower(jnp.ones(())).compile()
  with hlox.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"\(nan\) encountered in log at "):
      compiled(jnp.array(-1.0))
  assert np.isnan(compiled(jnp.array(-1.0)))


def test_grad_of_jitted_function():
  f = hlox.jit(lambda x: jnp.sqrt(x))
  with hlox.debug_infs(True):
    with pytest.raises(FloatingPointError, match=r"\(inf\) encountered in"):
      hlox.grad(f)(0.0)


# --- the options --------------------------------------------------------------------------

def test_scopes_restore_and_decorate():
  assert hlox.debug_nans.value is False
  with hlox.debug_nans(True):
    assert hlox.config.debug_nans is True
    with hlox.debug_nans(False):
      assert hlox.debug_nans.value is False
    assert hlox.debug_nans.value is True
  assert hlox.debug_nans.value is False
  with pytest.raises(FloatingPointError):
    with hlox.debug_nans():  # True by default, as JAX's
      jnp.log(jnp.array(-1.0))
  assert hlox.debug_nans.value is False

  @hlox.debug_infs(True)
  def inv(x):
    return 1.0 / x
  with pytest.raises(FloatingPointError, match=r"\(inf\)"):
    inv(jnp.array(0.0))
  assert hlox.debug_infs.value is False

  hlox.config.update("jax_debug_nans", True)
  try:
    assert hlox.debug_nans.value and nan_checks.enabled
  finally:
    hlox.config.update("jax_debug_nans", False)
  assert not nan_checks.enabled


def test_environment_variables(monkeypatch):
  monkeypatch.setenv("HLOX_DEBUG_NANS", "1")
  monkeypatch.setenv("HLOX_DEBUG_INFS", "true")
  monkeypatch.setenv("HLOX_LOG_COMPILES", "1")
  fresh = type(hlox.config)()
  assert fresh.debug_nans and fresh.debug_infs and fresh.log_compiles


def test_off_adds_nothing_to_programs_or_cache_hit_path():
  f = hlox.jit(lambda x: jnp.sin(x) * 3.0 + 1.0)
  x = jnp.ones(3)
  text_off = f.lower(x).as_text()
  f(x)
  entry_off = next(iter(f._fast_cache.values()))
  compiled = entry_off[-1]
  assert type(compiled) is CompiledCall and entry_off[0] is not None  # raw execute_sharded
  with hlox.debug_nans(True):
    assert f.lower(x).as_text() == text_off  # checks run on the host, not in the program
    with hlox.monitoring.count_events() as counts:
      np.testing.assert_allclose(f(x), np.sin(1.0) * 3 + 1, rtol=1e-6)
    assert counts["compile"] == 0  # the same executable, only checked
    entry_on = next(iter(f._fast_cache.values()))
    assert type(entry_on[-1]) is nan_checks.CheckedCall and entry_on[-1].call is compiled
    lax.cos(x)
    assert all(type(e) is nan_checks.CheckedEager for e in xla._eager_cache._data.values())
  assert len(f._fast_cache) == 0  # switched off: checking entries dropped
  with hlox.monitoring.count_events() as counts:
    f(x)
  assert counts["compile"] == 0 and counts["jit_trace"] == 0
  entry = next(iter(f._fast_cache.values()))
  assert entry[-1] is compiled and entry[0] is not None
  lax.cos(x)
  assert not any(type(e) is nan_checks.CheckedEager for e in xla._eager_cache._data.values())


# --- log_compiles -------------------------------------------------------------------------

def _compile_records(caplog):
  return [r for r in caplog.records if r.name.startswith("hlox.compile")]


def test_log_compiles_records_trace_and_compile(caplog):
  def log_me(x):
    return x * 12345.0  # a program no other test compiles

  with caplog.at_level(logging.WARNING, logger="hlox.compile"):
    with hlox.log_compiles(True):
      hlox.jit(log_me)(jnp.ones(3))
      lax.exp(jnp.full((7,), 0.5, jnp.float32))
  msgs = [r.getMessage() for r in _compile_records(caplog)]
  assert all(r.levelno == logging.WARNING for r in _compile_records(caplog))
  assert any(re.fullmatch(r"Finished tracing log_me for jit in \d+\.\d+ sec", m) for m in msgs)
  assert ("Compiling jit(log_me) with global shapes and types (ShapedArray(float32[3]),). "
          "Argument mapping: (CpuDevice(id=0),).") in msgs
  assert any(re.fullmatch(r"Finished XLA compilation of jit\(log_me\) in \d+\.\d+ sec", m)
             for m in msgs)
  assert any(m.startswith("Compiling exp with global shapes and types "
                          "(ShapedArray(float32[7]),)") for m in msgs)


def test_log_compiles_off_logs_at_debug_only(caplog):
  def quiet(x):
    return x * 54321.0

  with caplog.at_level(logging.WARNING, logger="hlox.compile"):
    hlox.jit(quiet)(jnp.ones(2))
  assert not _compile_records(caplog)
  with caplog.at_level(logging.DEBUG, logger="hlox.compile"):
    hlox.jit(quiet)(jnp.ones(5))
  records = _compile_records(caplog)
  assert records and all(r.levelno == logging.DEBUG for r in records)


def test_explain_cache_misses_still_logs(caplog):
  def explained(x):
    return x - 3.0

  hlox.config.update("explain_cache_misses", True)
  try:
    with caplog.at_level(logging.WARNING, logger="hlox"):
      hlox.jit(explained)(jnp.ones(4))
  finally:
    hlox.config.update("explain_cache_misses", False)
  assert any("jit explained: tracing for f32[4]" in r.getMessage() for r in caplog.records)


# --- against JAX --------------------------------------------------------------------------

_ORACLE_PROGRAM = """
import re
def first_error(fn, *args):
  try:
    fn(*args)
  except FloatingPointError as e:
    if "de-optimized function did not produce" in str(e):
      return "de-optimized"
    m = re.match(r"invalid value \\((nan|inf)\\) encountered in (\\w+)", str(e))
    return list(m.groups()) if m else str(e)
  return None

def inner(y):
  return 0.0 / y

def outer(x):
  return jax.jit(inner)(x * 2.0) + 1.0

zero = jnp.zeros((), jnp.float32)
nan = jax.device_put(np.float32(np.nan))
result = {}
with jax.debug_nans(True):
  result["eager_log"] = first_error(jnp.log, jnp.full((), -1.0, jnp.float32))
  result["jit_div"] = first_error(jax.jit(lambda x: x / x), zero)
  result["nested"] = first_error(jax.jit(outer), zero)
  result["nan_input"] = first_error(jax.jit(lambda x: x + 1.0), nan)
  result["pass_through"] = first_error(jax.jit(lambda x: x), nan)
  result["masked"] = first_error(jax.jit(lambda x: jnp.where(x > 0, 0.0 / x, 1.0)), zero)
  result["inf_unchecked"] = first_error(jax.jit(lambda x: 1.0 / x), zero)
with jax.debug_infs(True):
  result["inf"] = first_error(jax.jit(lambda x: 1.0 / x), zero)
"""


@pytest.mark.jax_oracle
def test_errors_match_jax():
  pytest.importorskip("jax")
  from tests.util import run_in_jax
  runner = ("import json, sys\nimport numpy as np\nimport jax, jax.numpy as jnp\n"
            "ns = {'jax': jax, 'jnp': jnp, 'np': np}\nexec(json.loads(sys.stdin.read()), ns)\n"
            "print(json.dumps(ns['result']))\n")
  expected = run_in_jax(runner, _ORACLE_PROGRAM)
  namespace = {"jax": hlox, "jnp": jnp, "np": np}
  exec(_ORACLE_PROGRAM, namespace)
  assert namespace["result"] == expected
  assert expected["jit_div"] == ["nan", "div"]  # the oracle ran what it should
