"""``hlox.debug.breakpoint`` with the command-line debugger, driven by a scripted stdin:
what it prints (compared with JAX's where the text does not name files), frames, values
under jit/vmap, and its errors."""
import io
import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from tests.util import printed_here, printed_in_jax

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def session(commands):
  return io.StringIO("".join(c + "\n" for c in commands)), io.StringIO()


# Each program drives the debugger with ``commands`` and prints what it showed.
_PRELUDE = """
import io
def session(commands):
  return io.StringIO("".join(c + "\\n" for c in commands)), io.StringIO()
"""

_PROGRAMS = {
    "eager_value": """
stdin, stdout = session(["p x", "p y", "c"])
def f(x):
  y = jnp.sin(x)
  m.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
  return y
f(jnp.array(2., jnp.float32)); m.effects_barrier(); print(stdout.getvalue())
""",
    "jit_values": """
stdin, stdout = session(["p x, y", "pp {'a': y}", "y * 2", "p nope", "c"])
@m.jit
def f(x):
  y = x + 1.
  m.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
  return y
f(jnp.array(2., jnp.float32)); m.effects_barrier(); print(stdout.getvalue())
""",
    "frames_up_down": """
stdin, stdout = session(["u", "p x", "p y", "d", "p x", "d", "c"])
def f(x):
  y = jnp.sin(x)
  m.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli", num_frames=2)
  return y
@m.jit
def g(x):
  y = f(x * 3.)
  return jnp.exp(y)
g(jnp.array(2., jnp.float32)); m.effects_barrier()
print(re.sub(r"> .*", "> FILE", stdout.getvalue()))
""",
    "ordered_and_vmap": """
stdin, stdout = session(["p y", "c", "p y", "c", "p y", "c"])
def f(x):
  y = x + 1.
  m.debug.breakpoint(stdin=stdin, stdout=stdout, ordered=True, backend="cli")
  return 2. * y
m.jit(m.vmap(lambda x: jnp.exp(f(x))))(jnp.arange(2., dtype=jnp.float32))
m.jit(lambda x: f(x) * 2.)(jnp.float32(5.))
m.effects_barrier(); print(stdout.getvalue())
""",
    "locals_only_and_unflattenable": """
stdin, stdout = session(["p x", "p weird", "p np", "c"])
@m.jit
def f():
  weird = {(lambda v: v): 2., (lambda v: 2 * v): 3}
  x = 2.
  m.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
  del weird
  return x
f(); m.effects_barrier(); print(stdout.getvalue())
""",
    "token": """
stdin, stdout = session(["p x", "c"])
@m.jit
def f(x):
  x = m.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli", token=x)
  return x * 2
print(f(jnp.arange(3.))); m.effects_barrier(); print(stdout.getvalue())
""",
    "errors": """
try:
  m.debug.breakpoint(ordered=True, token=jnp.ones(2))
except ValueError as e:
  print(type(e).__name__, e)
""",
}


@pytest.mark.jax_oracle
def test_debugger_sessions_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, "import re\n" + _PRELUDE)
  for name, src in _PROGRAMS.items():
    got = printed_here(src, "import re\n" + _PRELUDE)
    assert got == expected[name], (name, got, expected[name])


def test_list_and_backtrace_show_the_source():
  stdin, stdout = session(["l", "u", "bt", "c"])

  def inner(x):
    y = jnp.sin(x)
    hlox.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")
    return y

  @hlox.jit
  def outer(x):
    return inner(x) + 1.

  outer(1.0)
  hlox.effects_barrier()
  text = stdout.getvalue()
  assert text.startswith("Entering jdb:\n(jdb) > ")
  this_file = re.escape(__file__)
  assert re.search(this_file + r"\(\d+\)\n.*def inner\(x\):\n.*y = jnp\.sin\(x\)\n"
                   r"->\s+hlox\.debug\.breakpoint", text), text
  assert re.search(r"->\s+return inner\(x\) \+ 1\.", text), text
  assert "Traceback:" in text and "hlox/" not in text  # hlox's own frames are left out
  assert text.index("return inner(x) + 1.") < text.rindex("hlox.debug.breakpoint(")


def test_end_of_input_and_quit_exit():
  for commands in ([], ["q"]):
    stdin, stdout = session(commands)
    with pytest.raises(SystemExit):
      hlox.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli")


def test_topmost_and_bottommost_frames():
  stdin, stdout = session(["d", "u", "u", "c"])

  def g():
    hlox.debug.breakpoint(stdin=stdin, stdout=stdout, backend="cli", num_frames=2)

  hlox.jit(lambda: g())()
  hlox.effects_barrier()
  assert "At bottommost frame." in stdout.getvalue()
  assert "At topmost frame." in stdout.getvalue()


def test_registered_debugger_gets_concrete_frames():
  from hlox.debug import debugger
  seen = []
  debugger.register_debugger("hlox_test_recorder", lambda frames, thread_id, **kw:
                             seen.append((frames[0].locals["y"], kw)), priority=-10)
  with pytest.raises(ValueError, match="already registered"):
    debugger.register_debugger("hlox_test_recorder", lambda *a, **k: None, priority=0)

  @hlox.jit
  def f(x):
    y = x * 2.
    hlox.debug.breakpoint(backend="hlox_test_recorder", color="blue")
    return y

  f(np.float32(3.))
  hlox.effects_barrier()
  (value, kwargs), = seen
  assert isinstance(value, hlox.Array)
  np.testing.assert_array_equal(np.asarray(value), np.float32(6.))
  assert kwargs == {"color": "blue"}
