"""Concrete values a traced function uses, as JAX 0.10.2 stages them: a device array (0-d
included) is a constvar of the jaxpr, a Python or NumPy number (or 0-d NumPy array) a
literal; under ``use_simplified_jaxpr_constants`` arrays of any shape are literals."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import config
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
import numpy as np
a = jnp.array(2.0); i = jnp.array(3, jnp.int32); b = jnp.array(True); v = jnp.arange(3.0)
x = jnp.ones(3, jnp.float32)
def show(f, *args):
  print(" ".join(str(m.make_jaxpr(f)(*(args or (x,)))).split()))
"""

_PROGRAMS = {
    "closed_over": """
show(lambda y: y * a)
show(lambda y: y * i)
show(lambda y: jnp.where(b, y, y))
show(lambda y: y * a + a)
show(lambda y: y[i - 2])
""",
    "host_values_are_literals": """
show(lambda y: y * np.float32(3))
show(lambda y: y * np.array(3.0, np.float32))
show(lambda y: y * 3.0)
show(lambda y: y * np.arange(3.0, dtype=np.float32))
show(lambda y: y * jnp.array(3.0))
show(lambda y: y * jnp.array(3.0, dtype=jnp.float32))
show(lambda y: y * jnp.array(3, dtype=jnp.float32))
show(lambda y: y * jnp.array(np.float64(3)))
show(lambda y: y * jnp.asarray(2, jnp.float32))
show(lambda y: y * jnp.float32(2))
""",
    "control_flow": """
lax = m.lax
show(lambda y: lax.cond(y[0] > 0, lambda z: z * a, lambda z: z + v, y))
show(lambda y: lax.switch(i, [lambda z: z * a, lambda z: z - a * v, lambda z: z], y))
show(lambda y: lax.switch(1, [lambda z: z, lambda z: -z], y))
show(lambda y: lax.while_loop(lambda c: c[0] < a * 10, lambda c: c + a, y))
show(lambda y: lax.fori_loop(0, i, lambda k, c: c * a, y))
show(lambda y: lax.scan(lambda c, e: (c * a + e, c), y[0], v)[0])
show(m.vmap(lambda y: y * a + i))
""",
    "custom_derivatives": """
@m.custom_jvp
def f(y):
  return y * a
f.defjvp(lambda p, t: (f(p[0]), t[0] * a))
show(m.grad(lambda y: jnp.sum(f(y))))
show(m.grad(lambda y: y * 2.0), 1.0)
""",
}


@pytest.mark.jax_oracle
def test_constants_staged_as_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  for name, src in _PROGRAMS.items():
    assert printed_here(src, _PRELUDE) == expected[name], name


def test_device_scalar_is_a_constvar():
  c = jnp.array(3)
  closed = hlox.make_jaxpr(lambda y: y * c)(1)
  assert len(closed.consts) == 1 and closed.consts[0] is c
  assert closed.jaxpr.constvars[0].aval.str_short() == "i32[]"
  # NumPy and Python numbers stay literals
  assert hlox.make_jaxpr(lambda y: y * np.int32(3) + 2)(1).consts == []
  assert hlox.make_jaxpr(lambda y: y * np.array(3))(1).consts == []
  # one constvar per array object, however often it is used
  closed = hlox.make_jaxpr(lambda y: (y + c) * c)(1)
  assert len(closed.consts) == 1
  assert int(hlox.jit(lambda y: (y + c) * c)(1)) == 12


def test_branches_closing_over_scalars_agree_on_constants():
  # Each branch's closed-over device scalars are constants (JAX's closure conversion needs
  # the same pytree of constants whichever branch is traced).
  s, t = jnp.array(2.0), jnp.array(5.0)
  f = lambda p, y: lax.cond(p, lambda z: z * s, lambda z: z * s + t, y)
  closed = hlox.make_jaxpr(f)(True, 1.0)
  assert len(closed.consts) == 2
  assert float(hlox.jit(f)(True, 1.0)) == 2.0 and float(hlox.jit(f)(False, 1.0)) == 7.0
  assert float(hlox.grad(f, 1)(False, 1.0)) == 2.0


def test_switch_clamps_traced_index():
  text = str(hlox.make_jaxpr(lambda y: lax.switch(5, [lambda z: z, lambda z: -z], y))(1.0))
  assert "clamp 0:i32[] 5:i32[] 1:i32[]" in text
  assert float(hlox.jit(lambda y: lax.switch(5, [lambda z: z, lambda z: -z], y))(1.0)) == -1.0
  assert float(lax.switch(-3, [lambda z: z, lambda z: -z], 1.0)) == 1.0


@pytest.fixture
def simplified():
  before = config.use_simplified_jaxpr_constants
  config.update("jax_use_simplified_jaxpr_constants", True)
  yield
  config.update("use_simplified_jaxpr_constants", before)


def test_simplified_constants_are_literals(simplified):
  v = jnp.arange(3.0)
  closed = hlox.make_jaxpr(lambda x: (x, np.zeros(3, np.float32), x * v))(jnp.float32(0.))
  assert closed.consts == []
  assert str(closed) == ("{ lambda ; a:f32[]. let b:f32[3] = mul a [...]:f32[3] in "
                         "(a, [...]:f32[3], b) }")
  out = hlox.jit(lambda x: x * v + np.ones(3, np.float32))(jnp.float32(2.))
  np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
  # the linearizing trace keeps device arrays as constvars (they are residuals)
  np.testing.assert_array_equal(hlox.grad(lambda x: jnp.sum(x * v * v))(jnp.ones(3)),
                                [0.0, 1.0, 4.0])
