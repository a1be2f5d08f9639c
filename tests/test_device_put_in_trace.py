"""``device_put`` inside traced functions is a ``device_put`` equation, as in JAX: it shows in
jaxprs (with its JVP and transpose), and a program that puts a value on a single-device
sharding runs on that device (creation functions' ``device=`` included), while a device
that disagrees with a committed argument (or another such ``device_put``) is an error."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.lax.device_put import device_put_p
from tests.util import printed_here, printed_in_jax

PRELUDE = """
d = m.devices()
s = m.sharding.SingleDeviceSharding(d[3])
"""

# Each program prints what JAX's users look at: devices of results, values, jaxprs.
PROGRAMS = {
    "placement": """
print(m.jit(lambda x: m.device_put(x, d[3]))(1.).devices())
print(m.jit(lambda x: m.device_put(x, s))(1.).devices())
print(m.jit(lambda x: (m.device_put(x, s), x + 1))(1.)[1].devices())
print(m.jit(lambda x: m.device_put(x, d[3]) + 1)(1.).devices())
print(m.vmap(lambda x: m.device_put(x, d[3]))(jnp.ones(3)).devices())
print(m.jit(lambda x: m.lax.scan(lambda c, y: (c + m.device_put(y, s), None), 0., x)[0])(
    jnp.arange(3.)).devices())
""",
    "creation_device": """
for f in (lambda: jnp.arange(5, dtype=np.float32, device=d[3]),
          lambda: jnp.eye(5, 6, dtype=np.float32, device=d[3]),
          lambda: jnp.linspace(5, 6, 7, dtype=np.float32, device=d[3]),
          lambda: jnp.linspace(5, 6, 7, retstep=True, device=d[3])[0],
          lambda: jnp.array([1, 2, 3], dtype=np.float32, device=d[3]),
          lambda: jnp.zeros_like(np.ones(3), device=d[3])):
  out = f()
  print(out.devices(), np.asarray(out).tolist())
print(m.make_jaxpr(lambda: jnp.arange(1, 5, device=d[3]))())
""",
    "jaxprs": """
print(m.make_jaxpr(lambda x: m.device_put(x, d[3]))(1.))
print(m.make_jaxpr(lambda x: m.device_put(x))(1.))
print(m.make_jaxpr(lambda x: m.device_put((x, x * 2), s, may_alias=False))(1.))
print(m.make_jaxpr(m.grad(lambda x: m.device_put(x, d[3]) * 2.))(1.))
print(m.jvp(lambda x: m.device_put(x, s) * 2, (1.,), (1.,)))
print(m.jit(m.vmap(lambda x: m.device_put(x, s) * 2))(jnp.arange(3.)))
""",
    "cotangent_source": """
# Eagerly the source of a traced device_put is the Array under the tracer: the cotangent
# goes back to it (committed), whether the primal was committed or not.
for x in (m.device_put(2., d[2]), jnp.float32(2.)):
  y, g = m.value_and_grad(lambda x: m.device_put(x, d[3]))(x)
  print(y.devices(), y.committed, g.devices(), g.committed, float(g))
  _, f = m.vjp(lambda x: m.device_put(x * 3., s), x)
  g, = f(jnp.float32(1.))
  print(g.devices(), g.committed, float(g))
""",
    "incompatible_devices": """
x = m.device_put(np.float32(1), d[0])
for f, args in ((lambda x: m.device_put(x, s) + 1, (x,)),
                (lambda x: m.device_put(x, s) + m.device_put(x, m.sharding.SingleDeviceSharding(d[1])),
                 (1.,))):
  try:
    m.jit(f)(*args)
  except ValueError as e:
    print(str(e).split(" at ")[0].replace("argument x of <lambda> with shape float32[] and with",
                                          "argument with"))
""",
}


@pytest.fixture(scope="module")
def jax_printed():
  pytest.importorskip("jax")
  return printed_in_jax(PROGRAMS, PRELUDE)


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_prints_as_jax(name, jax_printed):
  assert printed_here(PROGRAMS[name], PRELUDE) == jax_printed[name]


def _sds(i):
  return hlox.sharding.SingleDeviceSharding(hlox.devices()[i])


def test_program_runs_where_device_put_places_it():
  out = hlox.jit(lambda x: hlox.device_put(x * 2, _sds(2)) + 1)(np.arange(3.0))
  assert out.devices() == {hlox.devices()[2]} and out.committed
  np.testing.assert_array_equal(np.asarray(out), np.arange(3.0) * 2 + 1)
  # a plain device places nothing (as in JAX); the value is unchanged
  out = hlox.jit(lambda x: hlox.device_put(x, hlox.devices()[2]) + 1)(np.arange(3.0))
  assert out.devices() == {hlox.devices()[0]}


def test_equation_rules():
  jaxpr = hlox.make_jaxpr(lambda x: hlox.device_put(x, _sds(1)))(1.0)
  assert [e.primitive for e in jaxpr.eqns] == [device_put_p]
  # linear: its derivative is 1, its transpose puts the cotangent back
  g = hlox.grad(lambda x: hlox.device_put(x, _sds(1)) ** 2)(3.0)
  assert float(g) == 6.0
  ys = hlox.vmap(lambda x: hlox.device_put(x, _sds(1)) * 3)(jnp.arange(4.0))
  np.testing.assert_array_equal(np.asarray(ys), np.arange(4.0) * 3)
  assert ys.devices() == {hlox.devices()[1]}


def test_incompatible_devices_raise():
  x = hlox.device_put(np.float32(1), hlox.devices()[0])
  with pytest.raises(ValueError, match=r"incompatible devices for jitted computation.*"
                                       r"device ids \[0\].*device_put inside jit with device "
                                       r"ids \[3\]"):
    hlox.jit(lambda x: hlox.device_put(x, _sds(3)) + 1)(x)
  with pytest.raises(ValueError, match="may_alias and donate cannot be True"):
    hlox.jit(lambda x: hlox.device_put(x, _sds(1), donate=True, may_alias=True))(1.0)
