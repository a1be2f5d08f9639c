"""``make_user_context``: a value that jit's caches depend on (JAX's ``jax.make_user_context``)."""
import pytest

import hlox

from tests.util import printed_here, printed_in_jax


def _counting_jit():
  traces = []

  @hlox.jit
  def f(x):
    traces.append(1)
    return x * 2
  return f, traces


def test_each_new_value_traces_again_and_old_values_hit():
  ctx = hlox.make_user_context()
  f, traces = _counting_jit()
  assert float(f(1.0)) == 2.0
  with ctx(2):
    assert ctx.value == 2
    f(1.0)
  with ctx(3):
    f(1.0)
    with ctx(4):
      f(1.0)
    assert ctx.value == 3
  assert len(traces) == 4
  with ctx(2):
    f(1.0)
  f(1.0)
  assert len(traces) == 4 and ctx.value is None


def test_global_value_and_decorator():
  ctx = hlox.make_user_context(default_value="a")
  assert ctx.get_global() == "a"
  ctx.set_global("b")
  try:
    assert ctx.get_global() == "b" and ctx.value == "b"
  finally:
    ctx.set_global("a")

  @ctx("c")
  def read():
    return ctx.value
  assert read() == "c" and ctx.value == "a"


@pytest.mark.jax_oracle
def test_trace_counts_match_jax():
  pytest.importorskip("jax")
  src = ("n = []\nctx = m.make_user_context()\n"
         "f = m.jit(lambda x: (n.append(1), x)[1])\n"
         "f(1.)\nwith ctx(2): f(1.)\nwith ctx(3): f(1.)\nwith ctx(2): f(1.)\nf(1.)\n"
         "ctx.set_global(7); f(1.); print(len(n), ctx.value, ctx.get_global())\n"
         "ctx.set_global(None)\n")
  assert printed_here(src) == printed_in_jax({"uc": src})["uc"]
