"""``ad_checkpoint.saved_residuals`` / ``print_saved_residuals``: what reverse-mode autodiff
keeps from the forward pass, named by argument, checkpoint name or producing equation; and
the forward pass of a checkpoint running inline, so saved inputs are the inputs themselves."""
import contextlib
import io

import pytest

import hlox
import hlox.numpy as jnp
from tests.util import run_in_jax

# Runs with ``jax`` bound to hlox here and to JAX in the oracle process; ``result`` maps each
# case to the printed lines, with the source file's path cut off (it differs between them).
PROGRAM = '''
import contextlib, io
ac = jax.ad_checkpoint
P = jax.checkpoint_policies

def g(W, x):
  return jnp.sin(jnp.dot(W, x))

def f(W1, W2, x):
  return g(W2, g(W1, x))

def h(x):
  return jnp.cos(ac.checkpoint_name(jnp.sin(x), "a"))

W1, W2, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones(4)
cases = {
  "plain": (f, (W1, W2, x)),
  "checkpoint": (jax.checkpoint(f), (W1, W2, x)),
  "dots": (jax.checkpoint(f, policy=P.dots_with_no_batch_dims_saveable), (W1, W2, x)),
  "everything": (jax.checkpoint(f, policy=P.everything_saveable), (W1, W2, x)),
  "names": (jax.checkpoint(h, policy=P.save_only_these_names("a")), (x,)),
  "pytree": (lambda p: jnp.tanh(p["a"] @ p["b"]).sum(), ({"a": W1, "b": x},)),
  "jit": (lambda x: jnp.sin(jax.jit(jnp.cos)(jnp.sin(x))), (x,)),
  "scan": (lambda x: jax.lax.scan(lambda c, _: (jnp.sin(c), None), x, None,
                                   length=3)[0], (x,)),
}
result = {}
for name, (fun, args) in cases.items():
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    ac.print_saved_residuals(fun, *args)
  result[name] = [line.split(" from /")[0].split(" from <")[0]
                  for line in buf.getvalue().splitlines()]
'''

_JAX_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp, jax.ad_checkpoint
namespace = {"jax": jax, "jnp": jnp}
exec(json.loads(sys.stdin.read()), namespace)
print(json.dumps(namespace["result"]))
"""


def _on_hlox():
  namespace = {"jax": hlox, "jnp": jnp}
  exec(PROGRAM, namespace)
  return namespace["result"]


def test_residuals_are_named_by_their_source():
  got = _on_hlox()
  args = ["f32[5,4] from the argument W1", "f32[6,5] from the argument W2",
          "f32[4] from the argument x"]
  # Without a checkpoint the sines and cosines of both layers are kept (the last sine is
  # the output, not needed by the backward pass); with one, only the inputs.
  assert got["plain"] == args + ["f32[5] output of sin", "f32[5] output of cos",
                                 "f32[6] output of cos"]
  assert got["checkpoint"] == args
  assert got["dots"] == args + ["f32[5] output of dot_general",
                                "f32[6] output of dot_general"]
  assert got["names"] == ["f32[4] from the argument x", "f32[4] named 'a'"]
  assert got["pytree"][:2] == ["f32[5,4] from the argument p['a']",
                               "f32[4] from the argument p['b']"]
  assert "f32[4] output of jitted function 'cos'" in got["jit"]
  assert got["scan"] == ["f32[3,4] output of scan"]


def test_saved_residuals_gives_avals_and_points_at_the_users_line():
  def f(x):
    return jnp.sin(jnp.sin(x))
  found = hlox.ad_checkpoint.saved_residuals(f, jnp.ones(3))
  assert [a.shape for a, _ in found] == [(3,), (3,)]
  assert all(w.startswith("output of cos from ") and __file__ in w for _, w in found)
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    hlox.ad_checkpoint.print_saved_residuals(f, jnp.ones(3))
  assert buf.getvalue().splitlines()[0].startswith("f32[3] output of cos from ")


def test_checkpoint_forward_pass_runs_inline():
  f = hlox.checkpoint(lambda W, x: jnp.sin(jnp.dot(W, x)))
  jaxpr = hlox.make_jaxpr(lambda W, x: hlox.vjp(f, W, x))(jnp.ones((5, 4)), jnp.ones(4))
  # As JAX: the known part is not a remat of its own, and the saved values are the inputs.
  assert "remat" not in str(jaxpr)
  assert set(jaxpr.jaxpr.outvars[1:]) == set(jaxpr.jaxpr.invars)
  g = hlox.grad(lambda W, x: f(W, x).sum(), (0, 1))(jnp.ones((5, 4)), jnp.ones(4))
  expected = hlox.grad(lambda W, x: jnp.sin(jnp.dot(W, x)).sum(), (0, 1))(
      jnp.ones((5, 4)), jnp.ones(4))
  for a, b in zip(g, expected):
    assert jnp.allclose(a, b)


def test_saved_residuals_match_jax():
  pytest.importorskip("jax")
  assert _on_hlox() == run_in_jax(_JAX_RUNNER, PROGRAM)
