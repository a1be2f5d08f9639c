"""``hlox.smap`` (JAX's ``jax.smap``): shard_map manual over one mesh axis, with vmap-style
``in_axes``/``out_axes``; nested smaps each take one axis. Values are checked against NumPy
and, where JAX is installed, results and layouts against JAX's."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.sharding import AxisType, NamedSharding, PartitionSpec as P

from util import printed_here, printed_in_jax


def _auto_mesh(shape, names):
  return hlox.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


@pytest.mark.parametrize("jit", [False, True])
def test_nested_smaps_each_take_one_axis(jit):
  mesh = _auto_mesh((2, 2, 2), ("x", "y", "z"))
  x = np.arange(32.).reshape(4, 8)
  seen = []

  def g(b):
    am = hlox.sharding.get_abstract_mesh()
    seen.append(("g", am.manual_axes, am.auto_axes))
    return b * b

  def h(a):
    am = hlox.sharding.get_abstract_mesh()
    seen.append(("h", am.manual_axes, am.auto_axes))
    return hlox.smap(g, in_axes=0, out_axes=0, axis_name="y")(a)

  f = lambda a: hlox.smap(h, in_axes=0, out_axes=0, axis_name="x")(a)
  with hlox.set_mesh(mesh):
    out = (hlox.jit(f) if jit else f)(
        hlox.device_put(x, NamedSharding(mesh, P("x", "y"))))
  np.testing.assert_array_equal(np.asarray(out), x * x)
  assert seen == [("h", ("x",), ("y", "z")), ("g", ("x", "y"), ("z",))]


@pytest.mark.parametrize("jit", [False, True])
def test_nested_psum_reduces_the_inner_axis(jit):
  mesh = _auto_mesh((2, 2), ("x", "y"))

  @hlox.smap(axis_name="x", in_axes=0, out_axes=0)
  def f(a):
    @hlox.smap(axis_name="y", in_axes=0, out_axes=None)
    def g(b):
      return hlox.lax.psum(b, "y")
    return g(jnp.sin(a))

  with hlox.set_mesh(mesh):
    out = (hlox.jit(f) if jit else f)(jnp.arange(4.))
  s = np.sin(np.arange(4.))
  np.testing.assert_allclose(np.asarray(out), [s[0] + s[1], s[2] + s[3]], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_in_axes_none_and_tuples(jit):
  mesh = _auto_mesh((2,), ("d",))

  @hlox.smap(in_axes=(None, 0), out_axes=(None, 0), axis_name="d")
  def f(a, b):
    return a * 2, b * 3

  with hlox.set_mesh(mesh):
    out1, out2 = (hlox.jit(f) if jit else f)(np.arange(8), np.arange(8))
  np.testing.assert_array_equal(np.asarray(out1), np.arange(8) * 2)
  np.testing.assert_array_equal(np.asarray(out2), np.arange(8) * 3)
  assert out1.sharding == NamedSharding(mesh, P())
  assert out2.sharding == NamedSharding(mesh, P("d"))


def test_negative_and_inner_axes():
  mesh = _auto_mesh((2,), ("d",))
  x = np.arange(24.).reshape(2, 4, 3)
  with hlox.set_mesh(mesh):
    out = hlox.jit(hlox.smap(lambda b: b.sum(axis=1, keepdims=True), in_axes=-2,
                             out_axes=1, axis_name="d"))(x)
  # Each device sums its half of dimension 1; the halves' sums sit side by side.
  want = np.concatenate([x[:, :2].sum(1, keepdims=True), x[:, 2:].sum(1, keepdims=True)],
                        axis=1)
  np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("jit", [False, True])
def test_in_axes_inferred_from_explicit_types(jit):
  mesh = hlox.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
  with hlox.set_mesh(mesh):
    arr = hlox.device_put(np.arange(4), P("x"))
    g = hlox.smap(lambda a: a * 2 + hlox.lax.axis_index("x"), out_axes=0, axis_name="x")
    out = (hlox.jit(g) if jit else g)(arr)
  np.testing.assert_array_equal(np.asarray(out), np.arange(4) * 2 + [0, 0, 1, 1])
  assert out.sharding == NamedSharding(mesh, P("x"))


def test_errors():
  mesh = _auto_mesh((2,), ("x",))
  with hlox.set_mesh(mesh):
    with pytest.raises(TypeError, match="in_axes was not specified when axis_name"):
      hlox.smap(lambda x: x * 2, out_axes=0, axis_name="x")(np.arange(4))
  with pytest.raises(TypeError, match="smap axis_name should be a `str` or a `Hashable`"):
    hlox.smap(lambda x: x, in_axes=0, out_axes=0, axis_name=("x", "y"))
  with pytest.raises(TypeError, match="smap in_axes must be an int, None"):
    hlox.smap(lambda x: x, in_axes=[0], out_axes=0, axis_name="x")
  with pytest.raises(TypeError, match="smap in_axes must be an int, None"):
    hlox.smap(lambda x: x, in_axes=(0, "a"), out_axes=0, axis_name="x")
  with pytest.raises(TypeError, match="smap out_axes must be an int, None"):
    hlox.smap(lambda x: x, in_axes=0, out_axes=(0, 1.5), axis_name="x")
  with pytest.raises(ValueError, match="The context mesh cannot be empty"):
    hlox.smap(lambda x: x, in_axes=0, out_axes=0, axis_name="x")(np.arange(4))


# --- the same programs in JAX -------------------------------------------------------------

PROGRAMS = {
    "nested_auto_explicit": """
mesh = m.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Explicit, AxisType.Auto))
m.set_mesh(mesh)
g = lambda b: jnp.sin(b)
arr = m.device_put(np.arange(16.).reshape(8, 2), P('y'))
for inner in (dict(in_axes=1), dict()):
  h = m.smap(lambda a: m.smap(g, out_axes=1, axis_name='x', **inner)(a * 2),
             in_axes=0, out_axes=0, axis_name='y')
  for call in (h, m.jit(h)):
    out = call(arr)
    print(out.shape, np.round(np.asarray(out), 4).tolist())
""",
    "replicated": """
mesh = m.make_mesh((2,), ('d',), axis_types=(AxisType.Auto,)); m.set_mesh(mesh)
g = m.smap(lambda a, b: a + b, in_axes=(None, 0), out_axes=0, axis_name='d')
out = g(np.arange(4), np.arange(8))
print(out.tolist(), tuple(out.sharding.spec))
""",
    "errors": """
mesh = m.make_mesh((2,), ('x',), axis_types=(AxisType.Auto,)); m.set_mesh(mesh)
for kw in (dict(out_axes=0, axis_name='x'), dict(in_axes=[0], out_axes=0, axis_name='x'),
           dict(in_axes=0, out_axes=0, axis_name=('x',))):
  try: m.smap(lambda x: x, **kw)(np.arange(4))
  except TypeError as e: print(type(e).__name__, str(e).split(' but ')[0].split(' when ')[0])
""",
}

@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_output_as_jax(name):
  want = printed_in_jax(PROGRAMS)
  assert printed_here(PROGRAMS[name]) == want[name]
