"""Behaviour JAX users rely on beyond numbers: when custom-derivative bodies run, error classes
and messages, the public array type, ``ShapeDtypeStruct`` helpers, ``hlox.typing``."""
import sys

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from tests.check_grads import check_grads_x64
from tests.util import run_in_jax

# Which Python functions run, step by step: the custom function's body, its rules. Written
# against the ``jax`` name so that the same text runs on hlox and on JAX.
CALL_LOG_PROGRAM = '''
log = []

@jax.custom_jvp
def f(x):
  log.append("f")
  return jnp.sin(x)

@f.defjvp
def f_jvp(primals, tangents):
  log.append("f_jvp")
  (x,), (t,) = primals, tangents
  return f(x), jnp.cos(x) * t

@jax.custom_jvp
def branchy(x):  # Python control flow on the value: fine wherever JAX runs the body eagerly
  if x > 0:
    return x * 2.0
  return -x

branchy.defjvp(lambda p, t: (branchy(p[0]), 2.0 * t[0]))

@jax.custom_vjp
def g(x):
  log.append("g")
  return jnp.exp(x)

def g_fwd(x):
  log.append("g_fwd")
  return jnp.exp(x), x

def g_bwd(x, ct):
  log.append("g_bwd")
  return (jnp.exp(x) * ct,)

g.defvjp(g_fwd, g_bwd)
steps = [
  ("eager", lambda: f(1.0)), ("eager_again", lambda: f(2.0)),
  ("grad", lambda: jax.grad(f)(1.0)), ("jit", lambda: jax.jit(f)(1.0)),
  ("vmap", lambda: jax.vmap(f)(jnp.ones(3))), ("jvp", lambda: jax.jvp(f, (1.0,), (1.0,))[1]),
  ("grad_grad", lambda: jax.grad(jax.grad(f))(1.0)),
  ("branchy_grad", lambda: jax.grad(branchy)(1.5)),
  ("g_eager", lambda: g(1.0)), ("g_grad", lambda: jax.grad(g)(1.0)),
  ("g_jit_grad", lambda: jax.jit(jax.grad(g))(1.0)),
  ("g_vmap_grad", lambda: jax.vmap(jax.grad(g))(jnp.ones(2))),
]
result = {}
for name, step in steps:
  del log[:]
  out = step()
  result[name] = [list(log), float(np.sum(np.asarray(out)))]
'''

_JAX_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
namespace = {"jax": jax, "jnp": jnp, "np": np}
exec(json.loads(sys.stdin.read()), namespace)
print(json.dumps(namespace["result"]))
"""


def _run_on_hlox(program):
  namespace = {"jax": hlox, "jnp": jnp, "np": np}
  exec(program, namespace)
  return namespace["result"]


def test_custom_derivative_bodies_run_where_jax_runs_them():
  got = _run_on_hlox(CALL_LOG_PROGRAM)
  # What JAX does, written out (also checked against JAX itself below when it is installed).
  assert got["eager"][0] == ["f"] and got["eager_again"][0] == ["f"]
  assert got["grad"][0] == ["f_jvp", "f"]
  assert got["branchy_grad"][1] == 2.0
  assert got["g_eager"][0] == ["g"] and got["g_grad"][0] == ["g_fwd", "g_bwd"]
  np.testing.assert_allclose(got["grad"][1], np.cos(1.0), rtol=1e-6)


def test_custom_derivative_call_log_matches_jax():
  pytest.importorskip("jax")
  expected = run_in_jax(_JAX_RUNNER, CALL_LOG_PROGRAM)
  got = _run_on_hlox(CALL_LOG_PROGRAM)
  assert set(got) == set(expected)
  for step in expected:
    assert got[step][0] == expected[step][0], step
    np.testing.assert_allclose(got[step][1], expected[step][1], rtol=1e-6, err_msg=step)


def test_bool_of_many_elements_is_a_value_error():
  with pytest.raises(ValueError, match="truth value of an array with more than one element"):
    bool(jnp.ones(3))
  with pytest.raises(ValueError):
    if jnp.zeros((2, 2)) > 0:
      pass
  assert bool(jnp.ones(())) is True and bool(jnp.zeros((1,))) is False


@pytest.mark.parametrize("transform", [hlox.jit, hlox.grad, hlox.vmap])
def test_tracers_are_instances_of_the_public_array_type(transform):
  seen = []

  def f(x):
    seen.append((isinstance(x, hlox.Array), isinstance(x, jnp.ndarray)))
    return jnp.sum(x * 2.0)

  transform(f)(jnp.ones(()) if transform is hlox.grad else jnp.ones(3))
  assert seen == [(True, True)]
  assert isinstance(jnp.ones(2), hlox.Array) and not isinstance(np.ones(2), hlox.Array)
  assert issubclass(type(jnp.ones(2)), hlox.Array)


def test_shape_dtype_struct_like_and_update():
  x = jnp.ones((2, 3), jnp.float32)
  s = hlox.ShapeDtypeStruct.like(x)
  assert (s.shape, s.dtype, s.weak_type) == ((2, 3), np.float32, False)
  assert hlox.ShapeDtypeStruct.like(np.zeros(4, np.int8)) == hlox.ShapeDtypeStruct((4,), np.int8)
  weak = hlox.ShapeDtypeStruct.like(1.0)
  assert weak.shape == () and weak.weak_type
  assert hlox.ShapeDtypeStruct.like(s) == s
  assert s.update(dtype=np.float16) == hlox.ShapeDtypeStruct((2, 3), np.float16)
  assert s.update(shape=(5,)).shape == (5,) and s.shape == (2, 3)
  with pytest.raises(TypeError, match="unexpected fields"):
    s.update(colour="red")
  shapes = []
  hlox.jit(lambda v: shapes.append(hlox.ShapeDtypeStruct.like(v)) or v)(x)
  assert shapes == [hlox.ShapeDtypeStruct((2, 3), np.float32)]


def test_typing_names():
  import typing
  from hlox.typing import ArrayLike, DTypeLike
  arraylike = typing.get_args(ArrayLike)
  assert hlox.Array in arraylike and np.ndarray in arraylike and float in arraylike
  assert np.dtype in typing.get_args(DTypeLike)
  assert hlox.typing is sys.modules["hlox.typing"]


@pytest.mark.parametrize("fn", [jnp.logaddexp, jnp.logaddexp2], ids=["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("args", [(0.3, 0.5), (0.3, 0.3), (-1.0, 2.0)])
def test_logaddexp_second_order(fn, args):
  check_grads_x64(fn, tuple(np.float64(a) for a in args), order=2, modes=("fwd", "rev"))


def test_logaddexp_gradient_at_infinities_matches_jax():
  inf = np.inf
  cases = [(-inf, -inf), (inf, inf), (-inf, 1.0), (inf, 1.0), (1.0, 1.0)]
  got = [[float(v) for v in hlox.grad(f, argnums=(0, 1))(a, b)]
         for f in (jnp.logaddexp, jnp.logaddexp2) for a, b in cases]
  # JAX counts +inf as 0 in the weights (its ``_replace_inf``): e.g. d/dx2 at (inf, 1) is e.
  nan = np.nan
  expected = [[nan, nan], [1, 1], [0, 1], [1, np.e], [0.5, 0.5],     # logaddexp
              [nan, nan], [1, 1], [0, 1], [1, 2.0], [0.5, 0.5]]      # logaddexp2
  np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_shape_mismatch_messages_spell_shapes_as_jax():
  with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                      r"\(3,\), \(4,\)\."):
    jnp.ones(3) + jnp.ones(4)
  with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                      r"\(3,\), \(4,\)\."):
    lax.add(jnp.ones(3), jnp.ones(4))
  with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: "
                                       r"shapes=\[\(3,\), \(4,\), \(\)\]"):
    jnp.where(jnp.ones(3) > 0, jnp.ones(4), 0)
  with pytest.raises(TypeError, match=r"cannot reshape array of shape \(3,\) \(size 3\) "
                                      r"into shape \(4,\) \(size 4\)"):
    jnp.reshape(jnp.ones(3), (4,))
  with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, "
                                      r"got \(3,\) and \(4,\)"):
    jnp.ones((2, 3)) @ jnp.ones((4, 2))
  with pytest.raises(TypeError, match=r"concatenating along dimension 0 for shapes "
                                      r"\(2, 3\), \(2, 4\)"):
    lax.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))], 0)


def test_shape_messages_match_jax():
  pytest.importorskip("jax")
  program = '''
result = []
for thunk in [lambda: jnp.ones(3) + jnp.ones(4), lambda: jnp.reshape(jnp.ones(3), (4,)),
              lambda: jnp.where(jnp.ones(3) > 0, jnp.ones(4), 0),
              lambda: jnp.ones((2, 3)) @ jnp.ones((4, 2))]:
  try:
    thunk()
    result.append(None)
  except Exception as e:
    result.append([type(e).__name__, str(e).splitlines()[0]])
'''
  expected = run_in_jax(_JAX_RUNNER, program)
  got = _run_on_hlox(program)
  for (g_cls, g_msg), (e_cls, e_msg) in zip(got, expected):
    assert g_cls == e_cls
    # hlox may name the operation first; JAX's words and shapes follow.
    assert e_msg.split(": ", 1)[-1].rstrip(".") in g_msg, (g_msg, e_msg)
