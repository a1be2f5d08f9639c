"""Source information: equations know the user's line and name stack; printed jaxprs, the
lowered module's locations, XLA's op metadata and error tracebacks show them."""
import inspect
import re
import traceback

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox import monitoring


def _line_of(fun, marker: str) -> int:
  """The line number of the line of ``fun`` containing ``marker``."""
  lines, start = inspect.getsourcelines(fun)
  hits = [start + i for i, line in enumerate(lines) if marker in line]
  assert len(hits) == 1, hits
  return hits[0]


def f_two_lines(x):
  y = jnp.sin(x)  # LINE_SIN
  return jnp.cos(y) * 2.0  # LINE_COS


def test_equations_record_the_users_lines():
  jaxpr = hlox.make_jaxpr(f_two_lines)(np.float32(1.0))
  infos = [e.source_info for e in jaxpr.eqns]
  assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "cos", "mul"]
  assert [i.line for i in infos] == [_line_of(f_two_lines, "LINE_SIN"),
                                    _line_of(f_two_lines, "LINE_COS"),
                                    _line_of(f_two_lines, "LINE_COS")]
  assert all(i.file == __file__ and i.function == "f_two_lines" for i in infos)
  # the column is where the expression starts, as Python reports it
  assert infos[0].column == 6
  assert str(infos[0]) == f"{__file__}:{infos[0].line}:6 (f_two_lines)"


def test_pretty_print_source_info_aligned_comments():
  text = hlox.make_jaxpr(f_two_lines)(np.float32(1.0)).pretty_print(source_info=True)
  lines = [line for line in text.splitlines() if " = " in line]
  assert len(lines) == 3
  columns = {line.index(" # ") for line in lines}
  assert len(columns) == 1  # one column for all the comments
  sin_line = _line_of(f_two_lines, "LINE_SIN")
  assert lines[0].rstrip().endswith(f"# {__file__}:{sin_line}:6 (f_two_lines)")
  assert "sin a" in lines[0]
  # without the option the text is unchanged
  plain = str(hlox.make_jaxpr(f_two_lines)(np.float32(1.0)))
  assert " # " not in plain and "sin" in plain


def test_named_scope_and_named_call_in_name_stack():
  def inner(x):
    return jnp.exp(x)

  def f(x):
    with hlox.named_scope("outer"):
      with hlox.named_scope("deeper"):
        y = jnp.sin(x)
      z = hlox.named_call(inner, name="called")(y)
    return z + 1.0

  jaxpr = hlox.make_jaxpr(f)(np.float32(1.0))
  stacks = [(e.primitive.name, e.source_info.scope()) for e in jaxpr.eqns]
  assert stacks == [("sin", "outer/deeper"), ("exp", "outer/called"), ("add", "")]
  text = jaxpr.pretty_print(name_stack=True)
  assert re.search(r"sin a\s+# \[outer/deeper\]", text)
  assert re.search(r"add .*# \[\]", text)
  # named_call defaults to the function's name
  jaxpr2 = hlox.make_jaxpr(hlox.named_call(inner))(np.float32(1.0))
  assert jaxpr2.eqns[0].source_info.scope() == "inner"
  with pytest.raises(TypeError, match="named_scope name argument must be a string"):
    with hlox.named_scope(3):
      pass


def test_scopes_are_relative_to_each_jitted_function():
  @hlox.jit
  def g(x):
    with hlox.named_scope("in_g"):
      return jnp.cos(x)

  def f(x):
    with hlox.named_scope("in_f"):
      return g(x)

  jaxpr = hlox.make_jaxpr(f)(np.float32(1.0))
  (call,) = jaxpr.eqns
  assert call.source_info.scope() == "in_f"
  inner = call.params["jaxpr"].jaxpr
  assert inner.eqns[0].source_info.scope() == "in_g"


def loss(x):
  y = jnp.sin(x)  # LOSS_SIN
  return jnp.sum(y * y)  # LOSS_SUM


def test_gradient_equations_point_at_the_forward_lines():
  jaxpr = hlox.make_jaxpr(hlox.grad(loss))(np.ones(3, np.float32))
  lines = {e.source_info.line for e in jaxpr.eqns}
  here = {_line_of(loss, "LOSS_SIN"), _line_of(loss, "LOSS_SUM")}
  assert lines <= here, (lines, here)  # none at the line that called grad
  assert lines == here


def test_vmap_of_jit_keeps_inner_lines():
  jaxpr = hlox.make_jaxpr(hlox.vmap(hlox.jit(f_two_lines)))(np.ones((2, 3), np.float32))
  inner = jaxpr.eqns[0].params["jaxpr"].jaxpr
  assert [e.source_info.line for e in inner.eqns] == [
      _line_of(f_two_lines, "LINE_SIN"), _line_of(f_two_lines, "LINE_COS"),
      _line_of(f_two_lines, "LINE_COS")]


def scanned(xs):
  def body(c, x):
    with hlox.named_scope("step"):
      c = c + jnp.tanh(x)  # BODY_LINE
    return c, c
  return lax.scan(body, jnp.zeros(3), xs)


def test_lowered_module_locations_and_xla_metadata():
  x = np.ones(3, np.float32)
  lowered = hlox.jit(f_two_lines).lower(x)
  plain = lowered.as_text()
  assert "loc(" not in plain
  text = lowered.as_text(debug_info=True)
  sin_line = _line_of(f_two_lines, "LINE_SIN")
  assert f'loc("{__file__}":{sin_line}:6)' in text
  assert 'loc("jit(f_two_lines)/sin"' in text
  optimised = lowered.compile().as_text()
  assert 'op_name="jit(f_two_lines)/sin"' in optimised
  assert f"line={sin_line}" in optimised  # XLA's file locations hold the user's line
  assert __file__ in optimised

  scan_text = hlox.jit(scanned).lower(np.ones((4, 3), np.float32)).as_text(debug_info=True)
  # As JAX's: the scan is lowered as a while loop, its body's ops under ``while/body``.
  assert 'loc("jit(scanned)/while/body/step/tanh"' in scan_text
  body_line = _line_of(scanned, "BODY_LINE")
  assert f'"{__file__}":{body_line}:' in scan_text


def test_same_program_from_other_lines_compiles_once():
  x = np.arange(5, dtype=np.float32)
  before = monitoring.event_counts["compile"]
  a = hlox.jit(lambda v: jnp.sin(v) * 3.0 - 1.25)(x)  # one line ...
  b = hlox.jit(lambda v: jnp.sin(v) * 3.0 - 1.25)(x)  # ... and another: the same program
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  np.testing.assert_allclose(np.asarray(a), np.sin(x) * 3 - 1.25, rtol=1e-6)
  assert monitoring.event_counts["compile"] - before == 1


def bad_body(c, x):
  return lax.add(c, jnp.ones(4)), x  # BAD_LINE


def _bad(xs):
  return lax.scan(bad_body, jnp.zeros(3), xs)


def test_tracing_errors_show_the_users_frames_only():
  with pytest.raises(TypeError, match="incompatible shapes") as info:
    hlox.jit(_bad)(np.ones((5, 3), np.float32))
  frames = traceback.extract_tb(info.value.__traceback__)
  assert frames[-1].lineno == _line_of(bad_body, "BAD_LINE")
  assert frames[-1].filename == __file__
  hlox_dir = hlox.__file__.rsplit("/", 1)[0]
  assert not [f for f in frames if f.filename.startswith(hlox_dir)]
  assert any("JAX_TRACEBACK_FILTERING=off" in n for n in info.value.__notes__)

  hlox.config.update("traceback_filtering", "off")
  try:
    with pytest.raises(TypeError, match="incompatible shapes") as info:
      hlox.jit(_bad)(np.ones((5, 3), np.float32))
  finally:
    hlox.config.update("traceback_filtering", "auto")
  frames = traceback.extract_tb(info.value.__traceback__)
  assert [f for f in frames if f.filename.startswith(hlox_dir)]
  assert frames[-1].filename.startswith(hlox_dir)


def test_eager_grad_and_vmap_errors_are_filtered_too():
  def f(x):
    return jnp.dot(x, jnp.ones(4))  # DOT_LINE

  for transform in (hlox.grad, hlox.vmap):
    with pytest.raises((TypeError, ValueError)) as info:
      arg = np.ones(3, np.float32) if transform is hlox.grad else np.ones((2, 3), np.float32)
      transform(lambda x: jnp.sum(f(x)))(arg)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[-1].lineno == _line_of(f, "DOT_LINE")


def test_remove_frames_mode_keeps_the_whole_traceback_as_cause():
  hlox.config.update("traceback_filtering", "remove_frames")
  try:
    with pytest.raises(TypeError) as info:
      hlox.jit(_bad)(np.ones((5, 3), np.float32))
  finally:
    hlox.config.update("traceback_filtering", "auto")
  cause = info.value.__cause__
  assert type(cause).__name__ == "UnfilteredStackTrace"
  hlox_dir = hlox.__file__.rsplit("/", 1)[0]
  assert [f for f in traceback.extract_tb(cause.__traceback__)
          if f.filename.startswith(hlox_dir)]


def test_functions_are_named_by_their_qualified_name():
  # As JAX: a nested function is ``outer.<locals>.inner`` in source locations (saved
  # residuals, lowered locations), so two functions named ``f`` can be told apart.
  from hlox.ad_checkpoint import saved_residuals

  def chain(n):
    def f(x):
      for _ in range(n):
        x = jnp.sin(x)
      return x
    return f

  where = [w for _, w in saved_residuals(chain(2), 3.0)]
  assert any("(test_functions_are_named_by_their_qualified_name.<locals>.chain.<locals>.f)"
             in w for w in where), where
  text = hlox.jit(chain(1)).lower(1.0).as_text(debug_info=True)
  assert "chain.<locals>.f" in text
