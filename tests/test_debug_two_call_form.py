"""debug.print / debug.callback / debug.log in JAX 0.10's two-call form (options first,
then the function's arguments), its errors, and JAX's unused-argument text."""
import logging

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


def test_print_two_call_form(capsys):
  @hlox.jit
  def f(x):
    hlox.debug.print(ordered=True)("x: {x} {}", x + 1, x=x)
    return x
  f(np.int32(41))
  hlox.effects_barrier()
  assert capsys.readouterr().out == "x: 41 42\n"


def test_callback_two_call_form_keywords_go_to_the_callback():
  seen = []
  def cb(v, *, ordered):
    seen.append((int(v), ordered))
  hlox.jit(lambda x: hlox.debug.callback(ordered=True)(cb, x * 2, ordered="kw"))(
      jnp.int32(50))
  hlox.effects_barrier()
  assert seen == [(100, "kw")]


def test_option_names_are_format_arguments_in_the_second_call(capsys):
  with pytest.raises(ValueError, match=r"Unused keyword arguments to `jax.debug.print`: "
                     r"\['partitioned'\]"):
    hlox.debug.print(ordered=True)("hello {a}", a=42, partitioned=True)
  hlox.debug.print()("{ordered}", ordered=7)
  assert capsys.readouterr().out == "7\n"


def test_two_call_form_rejects_early_arguments():
  with pytest.raises(TypeError, match="debug_callback received unexpected arguments in the "
                     "two-call form"):
    hlox.debug.callback(ordered=True, a=42)
  with pytest.raises(TypeError, match="debug_callback received unexpected arguments"):
    hlox.debug.callback(None, 42, ordered=True)
  with pytest.raises(TypeError, match="debug_print received unexpected arguments"):
    hlox.debug.print(ordered=True, a=42)
  with pytest.raises(TypeError, match="debug_print received unexpected arguments"):
    hlox.debug.print(None, 42)
  with pytest.raises(TypeError, match="must be callable"):
    hlox.debug.callback()(3, 4)


def test_log_two_call_form(caplog):
  with caplog.at_level(logging.INFO, logger="hlox.debug"):
    hlox.debug.log()("v={}", jnp.float32(1.5))
  assert [r.getMessage() for r in caplog.records] == ["v=1.5"]
