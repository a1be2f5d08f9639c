"""Outputs of ``jit`` that nothing constrains (no ``out_shardings``, or a None leaf in it)
over a mesh of Auto axes are laid out as XLA's partitioner chose (not gathered to every
device) and report that layout as a NamedSharding over the program's mesh, as JAX does;
donated arguments are reused only where the layouts agree. Checked against JAX by what
the programs print (spec, mesh axes, values)."""
import pytest

from tests.util import printed_here, printed_in_jax

# Every program runs over 8 CPU devices with a 4x2 mesh of Auto axes.
_PRELUDE = """
mesh = m.sharding.Mesh(np.array(m.devices()).reshape(4, 2), ("x", "y"))
sx = m.sharding.NamedSharding(mesh, P("x"))
sy = m.sharding.NamedSharding(mesh, P(None, "y"))
a = np.arange(64.0, dtype=np.float32).reshape(8, 8)
x = m.device_put(a, sx)
y = m.device_put(a, sy)

def show(out):
  for o in m.tree_util.tree_leaves(out):
    s = o.sharding
    print(type(s).__name__, s.spec, s.mesh.axis_names, s.is_fully_replicated)
    print(np.asarray(o).tolist())
"""

_PROGRAMS = {
    "elementwise": "show(m.jit(lambda v: v * 2)(x))",
    "elementwise_numpy_and_sharded": "show(m.jit(lambda u, v: u + v)(a, x))",
    "reduction_over_sharded_axis": "show(m.jit(lambda v: v.sum(0))(x))",
    "reduction_over_other_axis": "show(m.jit(lambda v: v.sum(1))(x))",
    "transpose": "show(m.jit(lambda v: v.T)(x))",
    "matmul": "show(m.jit(lambda u, v: u @ v)(x, y))",
    "several_outputs": "show(m.jit(lambda u, v: (u + v, u.sum(), v * 3))(x, y))",
    "none_leaf": """
show(m.jit(lambda v: (v * 2, v + 1), out_shardings=(None, m.sharding.NamedSharding(mesh, P())))(x))
""",
    "none_leaf_in_dict": """
f = m.jit(lambda v: {"a": v * 2, "b": v.sum(1)}, out_shardings={"a": None, "b": m.sharding.NamedSharding(mesh, P("y"))})
show(f(x))
""",
    "in_shardings_only": "show(m.jit(lambda v: v - 1, in_shardings=sx)(a))",
    "out_shardings_none": "show(m.jit(lambda v: v.sum(0), in_shardings=sx, out_shardings=None)(a))",
    "compiled": """
c = m.jit(lambda v: v * 2).lower(x).compile()
print(c.output_shardings.spec)
show(c(x))
""",
    "donated_same_layout": """
d = m.device_put(a, sx)
show(m.jit(lambda v: v + 1, donate_argnums=0)(d))
print(d.is_deleted())
""",
    "donated_other_layouts": """
import warnings
warnings.simplefilter("ignore")
d, e = m.device_put(a, sx), m.device_put(a, sy)
show(m.jit(lambda u, v: (u + v, v * 2), donate_argnums=(0, 1))(d, e))
""",
    "donated_out_shardings_other_layout": """
import warnings
warnings.simplefilter("ignore")
show(m.jit(lambda v: v + 1, donate_argnums=0, out_shardings=sy)(m.device_put(a, sx)))
""",
    "donated_none_leaf": """
d, e = m.device_put(a, sx), m.device_put(a, sy)
show(m.jit(lambda u, v: (u + 1, v + 1), donate_argnums=(0, 1), out_shardings=(None, sy))(d, e))
""",
    # Over Explicit axes the types decide the layouts: a donated argument is aliased when
    # its result's type keeps its layout, else offered to XLA.
    "donated_explicit": """
em = m.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
for f in [lambda v: v + 1, lambda v: v.T + 1, lambda v: (v.sum(0), v * 2)]:
  d = m.device_put(a, m.sharding.NamedSharding(em, P("x")))
  main = [l for l in m.jit(f, donate_argnums=0).lower(d).as_text().splitlines()
          if "func.func public @main" in l][0]
  out = m.jit(f, donate_argnums=0)(d)
  print("tf.aliasing_output" in main, "jax.buffer_donor" in main, d.is_deleted(),
        [np.asarray(o).tolist() for o in m.tree_util.tree_leaves(out)])
""",
    "lowered_donation_attrs": """
import warnings
warnings.simplefilter("ignore")
for f in [m.jit(lambda v: v + 1, donate_argnums=0, out_shardings=sy),
          m.jit(lambda v: v + 1, donate_argnums=0, out_shardings=sx),
          m.jit(lambda v: v + 1, donate_argnums=0)]:
  main = [l for l in f.lower(x).as_text().splitlines() if "func.func public @main" in l][0]
  print("tf.aliasing_output" in main, "jax.buffer_donor" in main)
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_unconstrained_outputs_as_jax(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)[name]
  assert "!!!" not in expected, expected
  assert printed_here(_PROGRAMS[name], _PRELUDE) == expected


def test_unconstrained_output_stays_split():
  # No JAX needed: XLA keeps the elementwise result split, so each device holds a piece.
  import numpy as np
  import hlox
  from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P
  mesh = Mesh(np.array(hlox.devices()).reshape(4, 2), ("x", "y"))
  a = np.arange(64.0, dtype=np.float32).reshape(8, 8)
  out = hlox.jit(lambda v: v * 2)(hlox.device_put(a, NamedSharding(mesh, P("x"))))
  assert out.sharding.spec == P("x") and not out.sharding.is_fully_replicated
  assert {s.data.shape for s in out.addressable_shards} == {(2, 8)}
  np.testing.assert_array_equal(np.asarray(out), a * 2)
