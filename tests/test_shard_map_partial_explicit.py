"""shard_map manual over some axes of a mesh whose other axes are Explicit: inside, values'
types keep their splits over those axes (over the mesh with the manual axes Manual), and
results are laid out as the out_spec's manual axes followed by the body's splits, the same
eagerly and under jit; vmap over a split dimension leaves its axis out of the manual ones.
Compared with JAX where installed."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.sharding import AxisType, NamedSharding, PartitionSpec as P

from util import printed_here, printed_in_jax


@pytest.mark.parametrize("jit", [False, True])
def test_types_inside_and_layout_outside(jit):
  mesh = hlox.make_mesh((2, 2), ("x", "y"))
  seen = []

  @hlox.shard_map(out_specs=P("x"), axis_names={"x"})
  def f(x):
    t = hlox.typeof(x)
    seen.append((x.shape, t.sharding.spec, t.sharding.mesh.axis_types))
    return x * 2

  with hlox.set_mesh(mesh):
    arr = hlox.device_put(np.arange(16).reshape(8, 2), P(("x", "y"), None))
    out = (hlox.jit(f) if jit else f)(arr)
  assert seen == [((4, 2), P("y", None), (AxisType.Manual, AxisType.Explicit))]
  np.testing.assert_array_equal(np.asarray(out), np.arange(16).reshape(8, 2) * 2)
  assert out.sharding == NamedSharding(mesh, P(("x", "y"), None))


def test_body_splits_follow_the_rules():
  mesh = hlox.make_mesh((2, 1, 2, 2), ("i", "j", "k", "l"))
  specs = []

  @hlox.jit
  def f(x):
    def g(b):
      specs.append(hlox.typeof(b).sharding.spec)
      out = b.T
      specs.append(hlox.typeof(out).sharding.spec)
      return out
    y = hlox.shard_map(g, out_specs=P("i", "j", None, None), axis_names={"i", "j"})(x)
    specs.append(hlox.typeof(y).sharding.spec)
    return y

  v = np.arange(64.).reshape(4, 2, 2, 4)
  with hlox.set_mesh(mesh):
    out = f(hlox.device_put(v, P("i", "j", "k", "l")))
  assert specs == [P(None, None, "k", "l"), P("l", "k", None, None),
                   P(("i", "l"), ("j", "k"), None, None)]
  assert out.sharding == NamedSharding(mesh, P(("i", "l"), ("j", "k"), None, None))
  # Device (i, j) transposes its block v[2i:2i+2]; the blocks stack along dim 0.
  want = np.concatenate([v[:2].T, v[2:].T], axis=0)
  np.testing.assert_array_equal(np.asarray(out), want)


def test_grad_through_partial_manual():
  mesh = hlox.make_mesh((2, 2), ("i", "j"))
  f = hlox.shard_map(lambda x: x * x, out_specs=P("i", None), axis_names={"i"})
  v = np.arange(32.).reshape(4, 8)
  with hlox.set_mesh(mesh):
    arr = hlox.device_put(v, P("i", "j"))
    out = hlox.jit(f)(arr)
    assert out.sharding == NamedSharding(mesh, P("i", "j"))
    for h in (hlox.grad(lambda x: hlox.jit(f)(x).sum()),
              hlox.jit(hlox.grad(lambda x: f(x).sum()))):
      np.testing.assert_allclose(np.asarray(h(arr)), 2 * v)


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_over_a_split_dimension(jit):
  mesh = hlox.make_mesh((2, 2), ("x", "y"))

  @hlox.shard_map(in_specs=P("y"), out_specs=P(None))
  def f(x):
    return hlox.lax.psum(x, axis_name="y")

  with hlox.set_mesh(mesh):
    arr = hlox.device_put(jnp.arange(16).reshape(2, 8), P("x", "y"))
    out = (hlox.jit(hlox.vmap(f)) if jit else hlox.vmap(f))(arr)
  a = np.arange(16).reshape(2, 8)
  np.testing.assert_array_equal(np.asarray(out), a[:, :4] + a[:, 4:])
  assert out.sharding == NamedSharding(mesh, P("x", None))


# --- the same programs in JAX -------------------------------------------------------------

PROGRAMS = {  # (specs padded to the rank: hlox may leave trailing Nones out)
    "mix": """
mesh = m.make_mesh((2, 2), ('x', 'y')); m.set_mesh(mesh)
arr = m.device_put(np.arange(16).reshape(8, 2), P(('x', 'y'), None))
for out_spec, names in ((P('x'), {'x'}), (P(None, 'y'), {'y'})):
  f = m.shard_map(lambda x: (print(tuple(m.typeof(x).sharding.spec)), x * 2)[1],
                  out_specs=out_spec, axis_names=names)
  for call in (f, m.jit(f)):
    out = call(arr)
    print(spec(out), out.shape, np.asarray(out).sum())
""",
    "transpose": """
mesh = m.make_mesh((2, 2), ('x', 'y')); m.set_mesh(mesh)
arr = m.device_put(np.arange(16).reshape(4, 4), P('x', 'y'))
f = m.shard_map(lambda x: x.T, out_specs=P('x'), axis_names={'x'})
for call in (f, m.jit(f)):
  out = call(arr)
  print(spec(out), np.asarray(out).tolist())
""",
    "vmap_psum": """
mesh = m.make_mesh((2, 2), ('x', 'y')); m.set_mesh(mesh)
arr = m.device_put(jnp.arange(16).reshape(2, 8), P('x', 'y'))
f = m.shard_map(lambda x: m.lax.psum(x, 'y'), in_specs=P('y'), out_specs=P(None))
for call in (m.vmap(f), m.jit(m.vmap(f))):
  out = call(arr)
  print(spec(out), np.asarray(out).tolist())
""",
}

# (a spec padded with Nones to the array's rank: JAX prints P('x',) where hlox has P('x', None))
SPEC = "spec = lambda a: tuple(a.sharding.spec) + (None,) * (a.ndim - len(a.sharding.spec))"


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_output_as_jax(name):
  want = printed_in_jax(PROGRAMS, SPEC)
  assert printed_here(PROGRAMS[name], SPEC) == want[name]
