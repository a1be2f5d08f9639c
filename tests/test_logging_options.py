"""``debug_log_modules`` and ``logging_level`` (JAX's ``jax_debug_log_modules`` and
``jax_logging_level``): which loggers log the trace/compile lines, the stderr handlers, and
the C++ side's level."""
import io
import logging
import os
import subprocess
import sys

import pytest

import hlox
from hlox import monitoring
from hlox.config import config


@pytest.fixture
def captured():
  """What reaches the "hlox" logger during the test, one line per record."""
  out = io.StringIO()
  handler = logging.StreamHandler(out)
  logging.getLogger("hlox").addHandler(handler)
  before = config.debug_log_modules
  yield out
  config.update("debug_log_modules", before)
  logging.getLogger("hlox").removeHandler(handler)


_programs = iter(range(1000, 10 ** 6))


def _jit_fresh():
  k = next(_programs)  # a new program each time: traced, lowered and compiled
  hlox.jit(lambda x: x + k)(1)


def test_nothing_logged_by_default(captured):
  _jit_fresh()
  assert captured.getvalue() == ""


@pytest.mark.parametrize("modules, timing, programs", [
    ("jax", True, True), ("hlox", True, True), ("hlox.compile", True, True),
    ("jax._src.dispatch", True, False), ("hlox.compile.timing", True, False),
    ("jax._src.interpreters.pxla", False, True), ("jax._src.dispatch , jax._src.compiler",
                                                  True, False),
])
def test_debug_log_modules(captured, modules, timing, programs):
  config.update("jax_debug_log_modules", modules)
  assert hlox.config.jax_debug_log_modules == modules
  _jit_fresh()
  text = captured.getvalue()
  assert ("Finished tracing <lambda> for jit in" in text) == timing
  assert ("Finished XLA compilation of jit(<lambda>) in" in text) == timing
  assert ("Compiling jit(<lambda>) with global shapes and types" in text) == programs
  config.update("debug_log_modules", "")
  assert logging.getLogger("hlox").level == logging.NOTSET
  assert logging.getLogger("hlox.compile.timing").level == logging.NOTSET
  captured.truncate(0)
  _jit_fresh()
  assert captured.getvalue() == ""


@pytest.mark.parametrize("modules, timing, programs", [
    ("jax", True, True), ("jax._src.dispatch", True, False),
    ("jax._src.interpreters.pxla", False, True), ("hlox", False, False),
])
def test_jax_named_modules_reach_jaxs_loggers(captured, modules, timing, programs):
  # A program written for JAX listens on JAX's loggers: the lines it asked for by JAX's
  # names reach their handlers (once each, and the root logger's once).
  jax_out, root_out = io.StringIO(), io.StringIO()
  jax_handler, root_handler = logging.StreamHandler(jax_out), logging.StreamHandler(root_out)
  logging.getLogger("jax").addHandler(jax_handler)
  logging.getLogger().addHandler(root_handler)
  try:
    config.update("jax_debug_log_modules", modules)
    _jit_fresh()
    config.update("jax_debug_log_modules", "")
    _jit_fresh()
  finally:
    logging.getLogger("jax").removeHandler(jax_handler)
    logging.getLogger().removeHandler(root_handler)
  text = jax_out.getvalue()
  assert text.count("Finished tracing <lambda> for jit in") == int(timing)
  assert text.count("Compiling jit(<lambda>) with global shapes") == int(programs)
  assert root_out.getvalue().count("Finished tracing <lambda> for jit in") == int(
      modules != "jax._src.interpreters.pxla")
  assert all(not any(isinstance(h, monitoring._ToJaxLogger) for h in lg.handlers)
             for lg in (logging.getLogger("hlox"), logging.getLogger("hlox.compile.timing")))


def test_option_types():
  with pytest.raises(TypeError, match="new string config value must be of type str, got 3"):
    config.update("jax_debug_log_modules", 3)
  with pytest.raises(ValueError, match="new enum value must be None or in"):
    config.update("jax_logging_level", "LOUD")
  with pytest.raises(AttributeError, match="no option 'jax_no_such_option'"):
    config.jax_no_such_option


def test_logging_level_none_removes_the_handler():
  before = config.logging_level
  try:
    config.update("logging_level", "INFO")
    assert monitoring._level_handler in logging.getLogger("hlox").handlers
    assert logging.getLogger("hlox").level == logging.INFO
    config.update("logging_level", None)
    assert monitoring._level_handler is None and config.jax_logging_level is None
    assert logging.getLogger("hlox").level == logging.INFO  # None leaves the level
  finally:
    config.update("logging_level", before)
  assert logging.getLogger("hlox").level == logging.NOTSET


def _run(code, **env):
  base = {k: v for k, v in os.environ.items()
          if not k.startswith(("HLOX_", "JAX_", "TF_CPP"))}
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**base, **env})
  assert out.returncode == 0, out.stderr
  return out.stderr


def test_stderr_lines_in_a_fresh_process():
  code = ("import sys, hlox\n"
          "hlox.config.update('jax_debug_log_modules', 'jax._src.dispatch,jax._src.compiler')\n"
          "hlox.jit(lambda x: x)(1)\n"
          "hlox.config.update('jax_logging_level', None)\n"
          "sys.stderr.write('-----')\n"
          "hlox.jit(lambda x: x)(1)\n")
  err = _run(code, HLOX_LOGGING_LEVEL="DEBUG")
  before, after = err.split("-----")
  # once, though both the level's and the module's handlers would show it
  assert before.count("Finished tracing <lambda> for jit in") == 1
  assert "DEBUG:" in before and ":hlox.compile.timing:" in before
  assert "pjrt_client.cc" in before  # the C++ side at the same level (INFO lines)
  # debug_log_modules' handler stays silent while the level's handler showed the lines;
  # without the level's handler it shows them
  assert after.count("Finished tracing <lambda> for jit in") == 1
