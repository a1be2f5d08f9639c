"""Switching mesh axis types (JAX's ``auto_axes`` / ``explicit_axes``), the abstract mesh in
effect (``get_abstract_mesh``, ``use_abstract_mesh``, ``set_mesh``), and the types values
get under them. Each scenario prints what a user would look at (types, meshes, values,
errors); the printed lines are compared with JAX 0.10.2's (run in a subprocess) when it is
installed, and with its answers recorded here otherwise."""
import contextlib
import io
import textwrap

import numpy as np
import pytest

import hlox

from util import run_in_jax

# Scenarios: name -> code run with ``jax`` (hlox here), ``jnp``, ``np``, ``P`` and ``sh``
# (``jax.sharding``) in scope, inside ``with jax.set_mesh(mesh)`` for a 2x4 mesh whose
# axes X, Y are Explicit; ``x`` is an 4x4 float array split P('X', 'Y').
SCENARIOS = {
    "auto_axes_in_jit": """
@sh.auto_axes
def add(a, b):
  print(sh.get_abstract_mesh())
  print(jax.typeof(a), jax.typeof(b))
  return a + b
rows = jax.reshard(np.arange(16).reshape(4, 4), P('X', None))
cols = jax.reshard(np.arange(16).reshape(4, 4), P(None, 'X'))
r = jax.jit(lambda a, b: add(a, b, out_sharding=P('X', None)))(rows, cols)
print(jax.typeof(r), r.sharding.spec, r.sum())
""",
    "auto_axes_eager": """
a = jnp.sin(jax.reshard(np.arange(8.), P('X')))
@sh.auto_axes
def f(v):
  print(sh.get_abstract_mesh())
  print(v.sharding.spec, jax.typeof(v).sharding.spec, jax.typeof(v))
  return v * 2
r = f(a, out_sharding=P('X'))
print(jax.typeof(r), r.sharding.spec, np.round(np.asarray(r), 4).tolist())
""",
    "auto_axes_some_axes": """
import functools
@functools.partial(sh.auto_axes, axes='X')
def g(y):
  print(sh.get_abstract_mesh())
  print(jax.typeof(y))
  return y * 2
@jax.jit
def f(a):
  z = g(jnp.sin(a), out_sharding=P('X', 'Y'))
  print(jax.typeof(z))
  return z + 1
print(jax.typeof(f(x)))
""",
    "auto_axes_decorator_args": """
@sh.auto_axes(axes=('X', 'Y'), out_sharding=P(None, 'Y'))
def g(y):
  print(jax.typeof(y))
  return y + 1
print(jax.typeof(jax.jit(g)(x)), jax.typeof(g(x)))
""",
    "auto_axes_needs_out_sharding": """
try:
  sh.auto_axes(lambda a: a)(x)
except Exception as e:
  print(type(e).__name__, e)
try:
  sh.auto_axes(lambda a: a, axes='Z', out_sharding=P())(x)
except Exception as e:
  print(type(e).__name__, e)
""",
    "explicit_axes_under_auto_mesh": """
auto = jax.make_mesh((2, 4), ('X', 'Y'), axis_types=(sh.AxisType.Auto,) * 2)
import functools
@functools.partial(sh.explicit_axes, axes=('X', 'Y'))
def g(y):
  print(sh.get_abstract_mesh())
  print(jax.typeof(y))
  z = y * 2
  print(jax.typeof(z))
  return z
@jax.jit
def f(a):
  print(sh.get_abstract_mesh())
  z = g(jnp.sin(a), in_sharding=P('X', 'Y'))
  print(jax.typeof(z))
  return z + 1
with jax.set_mesh(auto):
  a = jax.device_put(np.arange(16.).reshape(4, 4), P('X', 'Y'))
  print(jax.typeof(a))
  print(np.round(np.asarray(f(a)), 4).tolist())
""",
    "explicit_axes_errors": """
try:
  sh.explicit_axes(lambda a: a)(x)
except Exception as e:
  print(type(e).__name__, e)
with jax.set_mesh(None):
  try:
    sh.explicit_axes(lambda a: a, in_sharding=P())(np.ones(3))
  except Exception as e:
    print(type(e).__name__, e)
""",
    "abstract_mesh_in_jit": """
@jax.jit
def f(a):
  print(sh.get_abstract_mesh())
  m = sh.AbstractMesh((8,), ('A',), (sh.AxisType.Explicit,))
  with sh.use_abstract_mesh(m):
    print(sh.get_abstract_mesh())
    y = jax.reshard(a, P('A', None))
    print(jax.typeof(y))
    return y * 2
v = jax.device_put(jnp.arange(32.).reshape(8, 4), P('X', 'Y'))
z = f(v)
print(jax.typeof(z), float(np.asarray(z).sum()), z.sharding.spec)
print(sh.get_abstract_mesh())
""",
    "use_abstract_mesh_errors": """
try:
  with sh.use_abstract_mesh(sh.AbstractMesh((4,), ('A',))):
    pass
except Exception as e:
  print(type(e).__name__, e)
try:
  sh.use_abstract_mesh(sh.get_mesh())
except Exception as e:
  print(type(e).__name__, str(e).split('Got')[0])
""",
    "set_mesh_scopes": """
other = jax.make_mesh((8,), ('Q',))
with jax.set_mesh(other) as m:
  print(m, sh.get_abstract_mesh(), sh.get_mesh())
print(sh.get_abstract_mesh())
print(repr(jax.typeof(x).sharding))
print(repr(jax.typeof(jnp.ones(3)).sharding))
print(repr(jax.typeof(np.ones((2, 3))).sharding))
""",
}

SCENARIOS.update({
    "with_sharding_constraint_asserts": """
print(jax.typeof(jax.lax.with_sharding_constraint(x, P('X', 'Y'))))
for spec in (P('Y', 'X'), P('X'), P()):
  try:
    jax.jit(lambda a: jax.lax.with_sharding_constraint(a, spec))(x)
  except Exception as e:
    print(type(e).__name__, e)
""",
    "with_sharding_constraint_explicit_axes_without_mesh": """
with jax.set_mesh(None):
  try:
    jax.jit(lambda a: jax.lax.with_sharding_constraint(
        a, sh.NamedSharding(mesh, P('Y', 'X'))))(np.ones((8, 8)))
  except Exception as e:
    print(type(e).__name__, e)
  r = jax.jit(lambda a: jax.lax.with_sharding_constraint(
      a, sh.NamedSharding(mesh, P())))(x)
  print(jax.typeof(r))
""",
    "meshes_only_outside_jit": """
@jax.jit
def f(a):
  for call in (lambda: jax.set_mesh(mesh), sh.get_mesh):
    try:
      call()
    except Exception as e:
      print(type(e).__name__, e)
  return a
f(1.)
print(sh.get_mesh())
try:
  jax.set_mesh('X')
except Exception as e:
  print(type(e).__name__, e)
""",
    "shape_dtype_struct_specs": """
s = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=P('X'))
print(s, s.sharding)
print(jax.eval_shape(lambda a: a * 2, x))
print(jax.eval_shape(lambda a: a.sum(0), s))
print(jax.eval_shape(lambda a: a * 2, 1.0))
f = jax.jit(lambda a: a.T)
print(f.trace(s).jaxpr)
print(f.trace(s).out_info)
print(f.lower(s).out_info)
with jax.set_mesh(None):
  print(jax.eval_shape(lambda a: a * 2, np.ones(3)))
  try:
    jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=P('X')).sharding
  except Exception as e:
    print(type(e).__name__, e)
""",
    "creation_out_sharding": """
print(jax.typeof(jnp.zeros((8, 4), out_sharding=P('X'))),
      jax.typeof(jnp.ones((8, 4), out_sharding=P(None, 'Y'))),
      jax.typeof(jnp.full((8, 4), 2., out_sharding=P('X'))),
      jax.typeof(jnp.arange(8., out_sharding=P('X'))),
      jax.typeof(jnp.empty((8, 4), out_sharding=P('X', 'Y'))))
k = jax.random.key(0)
print(jax.typeof(jax.random.normal(k, (8, 4), out_sharding=P('X'))),
      jax.typeof(jax.random.uniform(k, (8, 4), out_sharding=P(None, 'Y'))))
print(jax.typeof(jax.jit(lambda: jnp.zeros((8, 4), out_sharding=P('X')) + 1)()))
""",
})


PRELUDE = """
mesh = jax.make_mesh((2, 4), ('X', 'Y'))
with jax.set_mesh(mesh):
  x = jax.device_put(np.arange(16.).reshape(4, 4), P('X', 'Y'))
"""

JAX_SCRIPT = """
import contextlib, io, json, sys, textwrap
import numpy as np
import jax, jax.numpy as jnp, jax.sharding as sh
from jax.sharding import PartitionSpec as P
scenarios, prelude = json.loads(sys.stdin.read())
out = {}
for name, code in scenarios.items():
  ns = dict(jax=jax, jnp=jnp, np=np, P=P, sh=sh)
  buf = io.StringIO()
  try:
    with contextlib.redirect_stdout(buf):
      exec(prelude, ns)
      with jax.set_mesh(ns["mesh"]):
        exec(code, ns)
  except Exception as e:
    buf.write(f"!!! {type(e).__name__}: {e}")
  out[name] = buf.getvalue()
print(json.dumps(out))
"""


def run_scenario(code: str) -> str:
  import hlox.numpy as jnp
  import hlox.sharding as sh
  ns = dict(jax=hlox, jnp=jnp, np=np, P=sh.PartitionSpec, sh=sh)
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    exec(PRELUDE, ns)
    with hlox.set_mesh(ns["mesh"]):
      exec(textwrap.dedent(code), ns)
  return buf.getvalue()


def normalize(text: str) -> str:
  """Names that differ by design: the package, and addresses."""
  return text.replace("jax.sharding", "hlox.sharding").replace("`jax.", "`hlox.")


# JAX 0.10.2's output of each scenario, so that a run without JAX checks it too.
EXPECTED = {
    "auto_axes_in_jit": (
        "AbstractMesh('X': 2, 'Y': 4, axis_types=(Auto, Auto), device_kind=cpu, "
        "num_cores=None, platform=cpu)\nint32[4,4] int32[4,4]\n"
        "int32[4@X,4] P('X', None) 240\n"),
    "auto_axes_some_axes": (
        "AbstractMesh('X': 2, 'Y': 4, axis_types=(Auto, Explicit), device_kind=cpu, "
        "num_cores=None, platform=cpu)\nfloat32[4,4@Y]\nfloat32[4@X,4@Y]\n"
        "float32[4@X,4@Y]\n"),
    "abstract_mesh_in_jit": (
        "AbstractMesh('X': 2, 'Y': 4, axis_types=(Explicit, Explicit), device_kind=cpu, "
        "num_cores=None, platform=cpu)\nAbstractMesh('A': 8, axis_types=(Explicit,))\n"
        "float32[8@A,4]\nfloat32[8@A,4] 992.0 P('A', None)\nAbstractMesh('X': 2, 'Y': 4, "
        "axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, platform=cpu)\n"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_answers(name):
  assert run_scenario(SCENARIOS[name]) == EXPECTED[name]


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_agrees_with_jax(name):
  pytest.importorskip("jax", reason="JAX is not installed (the oracle)")
  want = run_in_jax(JAX_SCRIPT, [{k: textwrap.dedent(v) for k, v in SCENARIOS.items()},
                                 PRELUDE],
                    extra_env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
  assert run_scenario(SCENARIOS[name]) == normalize(want[name])

