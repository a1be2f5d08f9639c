"""A None inside jit's ``out_shardings`` (or with_sharding_constraint's) tree prefix stands
for its whole subtree, as JAX reads it (flax's ``nnx.jit`` passes such prefixes): checked
against JAX by what the programs print."""
import pytest

from tests.util import printed_here, printed_in_jax

_PROGRAMS = {
    "out_shardings_all_none": """
g = m.jit(lambda a: (a * 2, {"b": a + 1}), out_shardings=(None, None))
print(g(jnp.arange(4.0)))
""",
    "out_shardings_mixed": """
mesh = m.make_mesh((2,), ("x",))
s = m.sharding.NamedSharding(mesh, P("x"))
f = m.jit(lambda a: (a * 2, {"u": a + 1, "v": a.sum()}), out_shardings=(None, {"u": s, "v": None}))
o = f(jnp.arange(4.0))
print(o, o[1]["u"].sharding.spec)
""",
    "constraint_none_subtree": """
mesh = m.make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
s = m.sharding.NamedSharding(mesh, P("x"))
with m.sharding.set_mesh(mesh):
  f = m.jit(lambda a: m.lax.with_sharding_constraint((a, {"k": a * 3}), (s, None)))
  o = f(jnp.arange(4.0))
print(o, o[0].sharding.spec, o[1]["k"].sharding.spec)
""",
    "prefix_mismatch_still_raises": """
f = m.jit(lambda a: (a, a), out_shardings=(None, None, None))
f(jnp.arange(2.0))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  got = printed_here(_PROGRAMS[name])
  if name == "prefix_mismatch_still_raises":
    # both refuse the prefix with a ValueError (the messages are each library's own)
    assert expected[name].startswith("!!! ValueError") and got.startswith("!!! ValueError")
  else:
    assert got == expected[name]
