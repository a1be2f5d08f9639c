"""shard_map as JAX 0.10.2 has it over Explicit meshes: called outside jit the body runs
eagerly on every device's block (``print`` shows each block, collectives give their
values), values' types show the mesh axes they vary along (``float32[3]{V:i}``), and
in_specs must agree with the arguments' types. Compared with JAX itself where installed."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.sharding import PartitionSpec as P

from util import printed_here, printed_in_jax


def _mesh(shape, names, auto=False):
  types = (hlox.sharding.AxisType.Auto,) * len(names) if auto else None
  return hlox.make_mesh(shape, names, axis_types=types)


def test_eager_print_shows_each_devices_block(capsys):
  mesh = _mesh((2,), ("i",))

  @hlox.shard_map(mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  def f(x):
    print(x)
    return 2 * x
  x = hlox.device_put(jnp.arange(6.), hlox.NamedSharding(mesh, P("i")))
  r = f(x)
  assert capsys.readouterr().out == (
      "On cpu:0 at mesh coordinates (i,) = (0,):\n[0. 1. 2.]\n\n"
      "On cpu:1 at mesh coordinates (i,) = (1,):\n[3. 4. 5.]\n\n")
  np.testing.assert_array_equal(np.asarray(r), 2 * np.arange(6.))
  assert str(hlox.typeof(r)) == "float32[6@i]"


def test_eager_print_on_a_2d_mesh_after_psum(capsys):
  mesh = _mesh((2, 2), ("i", "j"), auto=True)

  @hlox.shard_map(mesh=mesh, in_specs=P("i", "j"), out_specs=P(None, "j"))
  def f(x):
    y = lax.psum(x, "i")
    print(y)
    return y
  r = f(np.arange(16).reshape(4, 4))
  out = capsys.readouterr().out
  assert "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n[[12 14]\n [20 22]]\n" in out
  assert out.count("On cpu:") == 4
  np.testing.assert_array_equal(np.asarray(r), np.arange(16).reshape(2, 2, 4).sum(0))


def test_eager_collectives_values():
  mesh = _mesh((4,), ("i",), auto=True)
  x = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
  run = lambda body, out=P("i"): hlox.shard_map(body, mesh=mesh, in_specs=P("i"),
                                                out_specs=out)(x)
  blocks = x.reshape(4, 4)
  np.testing.assert_array_equal(np.asarray(run(lambda b: lax.psum(b, "i"), P())),
                                blocks.sum(0))
  np.testing.assert_array_equal(
      np.asarray(run(lambda b: lax.all_gather(b, "i", tiled=True))), np.tile(x, 4))
  np.testing.assert_array_equal(
      np.asarray(run(lambda b: lax.psum_scatter(b, "i", tiled=True))), blocks.sum(0))
  shift = lambda b: lax.ppermute(b, "i", [(k, (k + 1) % 4) for k in range(4)])
  np.testing.assert_array_equal(np.asarray(run(shift)), np.roll(x, 4))
  np.testing.assert_array_equal(
      np.asarray(run(lambda b: lax.all_to_all(b, "i", 0, 0, tiled=True))),
      blocks.T.reshape(-1))
  np.testing.assert_array_equal(
      np.asarray(run(lambda b: b * lax.axis_index("i"))), x * np.repeat(np.arange(4), 4))
  # Python control flow on a value the same on every device
  mean = run(lambda b: lax.pmean(b.sum(), "i") if lax.psum(1, "i") == 4 else b[:1], P())
  np.testing.assert_allclose(np.asarray(mean), x.sum() / 4)


def test_eager_matches_jit_with_scan_and_grad():
  mesh = _mesh((2,), ("i",), auto=True)

  @hlox.shard_map(mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i"))
  def f(x, y):
    y = lax.pcast(y, "i", to="varying")
    (a, b), _ = lax.scan(lambda c, _: ((c[1], c[0] + 1), None), (x, y), None, length=3)
    return a * b
  x, y = np.arange(6.), np.arange(3.)
  np.testing.assert_allclose(np.asarray(f(x, y)), np.asarray(hlox.jit(f)(x, y)))
  loss = lambda x: f(x, y).sum()
  np.testing.assert_allclose(np.asarray(hlox.grad(loss)(x)),
                             np.asarray(hlox.jit(hlox.grad(loss))(x)))


def test_typeof_shows_varying_axes(capsys):
  mesh = _mesh((4, 2), ("i", "j"))

  @hlox.shard_map(mesh=mesh, in_specs=P("i", "j"), out_specs=P("i"))
  def f(x):
    print(hlox.typeof(x))
    y = lax.psum(x, "j")
    assert hlox.typeof(y).manual_axis_type.varying == {"i"}
    print(hlox.typeof(y))
    print(hlox.typeof(lax.psum(y, "i")))
    return y
  x = hlox.device_put(jnp.arange(32.).reshape(8, 4), hlox.NamedSharding(mesh, P("i", "j")))
  r = f(x)
  assert capsys.readouterr().out == "float32[2,2]{V:(i,j)}\nfloat32[2,2]{V:i}\nfloat32[2,2]\n"
  np.testing.assert_array_equal(np.asarray(r), np.arange(32.).reshape(8, 2, 2).sum(1))


def test_pcast_marks_varying(capsys):
  mesh = _mesh((2,), ("i",))

  @hlox.shard_map(mesh=mesh, in_specs=P(), out_specs=None)
  def f(x):
    print(hlox.typeof(x))
    print(hlox.typeof(lax.pcast(x, "i", to="varying")))
  f(jnp.arange(6.))
  assert capsys.readouterr().out == "float32[6]\nfloat32[6]{V:i}\n"


IN_SPECS_MESSAGE = (
    "in_specs passed to shard_map: P('i',) does not match the specs of the input: P(None,) "
    "for arg: float32[6]. `in_specs` is an optional argument so you can omit specifying it "
    "and shard_map will infer the in_specs from the arguments. If you want to reshard your "
    "inputs, you can use `jax.reshard` on the arguments and then pass those args to "
    "shard_map.")


def test_in_specs_must_match_explicit_types():
  mesh = _mesh((2,), ("i",))
  f = hlox.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
  for call in (f, hlox.jit(f)):
    with pytest.raises(ValueError) as e:
      call(jnp.arange(6.))
    assert str(e.value) == IN_SPECS_MESSAGE
  mesh2 = _mesh((2, 4), ("X", "Y"))
  x = hlox.device_put(jnp.ones((8, 4)), hlox.NamedSharding(mesh2, P("X", "Y")))
  g = hlox.shard_map(lambda x: x, mesh=mesh2, in_specs=P("X"), out_specs=P("X"))
  with pytest.raises(ValueError, match=r"P\('X', None\) does not match the specs of the "
                     r"input: P\('X', 'Y'\) for arg: float32\[8@X,4@Y\]"):
    g(x)
  # inferred in_specs, or matching ones, are fine (also under grad)
  h = hlox.shard_map(lambda x: lax.psum(x.sum(), ("X", "Y")), mesh=mesh2,
                     in_specs=P("X", "Y"), out_specs=P())
  assert float(h(x)) == 32.0
  np.testing.assert_array_equal(np.asarray(hlox.jit(hlox.grad(h))(x)), np.ones((8, 4)))


def test_eager_replication_error():
  mesh = _mesh((2,), ("i",))
  x = hlox.device_put(jnp.arange(6.), hlox.NamedSharding(mesh, P("i")))
  with pytest.raises(ValueError) as e:
    hlox.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P())(x)
  assert str(e.value).startswith(
      "shard_map applied to the function '_rem_singleton' was given out_specs which require "
      "replication which can't be statically inferred given the mesh:\n\nThe mesh given "
      "has shape (2,) with corresponding axis names ('i',).\n\nout_specs is P() which "
      "implies that the corresponding output value is replicated across mesh axis 'i', but "
      "could not infer replication over any axes\n\n")
  r = hlox.shard_map(lambda x: x, mesh=mesh, in_specs=P("i"), out_specs=P(),
                     check_vma=False)(x)
  np.testing.assert_array_equal(np.asarray(r), [0., 1., 2.])  # device 0's block


# --- the same programs in JAX -------------------------------------------------------------

PROGRAMS = {
    "print_blocks": """
mesh = m.make_mesh((2,), ('i',)); m.set_mesh(mesh)
@m.shard_map(in_specs=P('i'), out_specs=P('i'))
def f(x):
  print(x); print(m.typeof(x)); return 2 * x
print(f(m.device_put(jnp.arange(6.), P('i'))))
""",
    "print_2d": """
mesh = m.make_mesh((4, 2), ('i', 'j')); m.set_mesh(mesh)
@m.shard_map(in_specs=P('i', 'j'), out_specs=P('i'))
def f(x):
  print(m.typeof(x)); y = m.lax.psum(x, 'j'); print(y); print(m.typeof(y)); return y
print(f(m.device_put(jnp.arange(32.).reshape(8, 4), P('i', 'j'))))
""",
    "collectives": """
mesh = m.make_mesh((4,), ('i',)); m.set_mesh(mesh)
x = m.device_put(jnp.arange(16), P('i'))
@m.shard_map(in_specs=P('i'), out_specs=P('i'))
def f(b):
  g = m.lax.all_gather(b, 'i'); print(g)
  s = m.lax.ppermute(b, 'i', [(k, (k + 1) % 4) for k in range(4)]); print(s)
  print(m.lax.axis_index('i'))
  return m.lax.psum_scatter(g.reshape(-1), 'i', tiled=True) + s + m.lax.all_to_all(b, 'i', 0, 0, tiled=True)
print(f(x))
""",
    "in_specs_mismatch": """
mesh = m.make_mesh((2, 4), ('X', 'Y')); m.set_mesh(mesh)
x = m.device_put(jnp.ones((8, 4)), P('X', 'Y'))
f = m.shard_map(lambda x: x, in_specs=P('X'), out_specs=P('X'))
for call in (f, m.jit(f)):
  try: call(x)
  except ValueError as e: print(e)
""",
    "replication": """
mesh = m.make_mesh((4, 2), ('i', 'j')); m.set_mesh(mesh)
x = m.device_put(jnp.arange(8.), P('i'))
for out in (P(), P('j')):
  try: m.shard_map(lambda x: x, in_specs=P('i'), out_specs=out)(x)
  except ValueError as e: print(e)
""",
}

@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
def test_same_output_as_jax():
  want = printed_in_jax(PROGRAMS)
  for name, src in PROGRAMS.items():
    assert printed_here(src) == want[name], name
