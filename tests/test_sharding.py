"""Sharded arrays over a mesh of the 8 CPU devices (``conftest`` asks for 8): layouts,
``device_put``, shards, ``jit`` partitioned by XLA (results against NumPy and against the
unsharded program), ``with_sharding_constraint`` under jit, grad and vmap, ``in_shardings`` /
``out_shardings``, and the errors for bad specs."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture(scope="module")
def mesh():
  return hlox.make_mesh((4, 2), ("x", "y"))


@pytest.fixture(scope="module")
def auto_mesh():
  # As JAX: over Explicit axes shard_map's in_specs must match the arguments' types, so
  # tests passing host arrays with split in_specs use Auto axes.
  auto = hlox.sharding.AxisType.Auto
  return hlox.make_mesh((4, 2), ("x", "y"), axis_types=(auto, auto))


X = np.arange(32, dtype=np.float32).reshape(8, 4)


@pytest.mark.parametrize("spec", [P("x", "y"), P("x"), P(None, "x"), P(("x", "y")),
                                  P("y", "x"), P()])
def test_device_put_shards_and_gathers(mesh, spec):
  s = NamedSharding(mesh, spec)
  a = hlox.device_put(X, s)
  assert a.sharding == s
  np.testing.assert_array_equal(np.asarray(a), X)
  shards = a.addressable_shards
  assert len(shards) == 8
  assert {sh.device for sh in shards} == set(mesh.devices.flat)
  index_map = s.devices_indices_map(X.shape)
  for sh in shards:
    assert sh.index == index_map[sh.device]
    np.testing.assert_array_equal(np.asarray(sh.data), X[sh.index])
    assert sh.data.shape == s.shard_shape(X.shape)


def test_sharding_queries(mesh):
  s = NamedSharding(mesh, P("x"))
  assert s.shard_shape((8, 4)) == (2, 4)
  assert s.num_devices == 8 and s.is_fully_addressable and not s.is_fully_replicated
  assert NamedSharding(mesh, P()).is_fully_replicated
  assert P("x") == P("x", None) and hash(P("x")) == hash(P("x", None))
  assert mesh.shape == {"x": 4, "y": 2} and mesh.size == 8
  assert mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
  m2 = Mesh(np.array(hlox.devices()).reshape(2, 4), ("a", "b"))
  assert m2.axis_names == ("a", "b") and m2 != mesh


def test_jit_partitions_and_keeps_layout(mesh):
  a = hlox.device_put(X, NamedSharding(mesh, P("x", "y")))
  f = hlox.jit(lambda v: jnp.sin(v) * 2)
  r = f(a)
  np.testing.assert_allclose(np.asarray(r), np.sin(X) * 2, rtol=1e-6)
  assert r.sharding == NamedSharding(mesh, P("x", "y"))  # elementwise: layout kept
  w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
  g = hlox.jit(lambda v, w: (v @ w).sum(0))
  np.testing.assert_allclose(np.asarray(g(a, w)), np.asarray(g(X, w)), rtol=1e-5)
  assert g(a, w).sharding.is_fully_replicated
  # eager ops on sharded arrays stay on the mesh
  e = a + 1
  assert e.sharding == a.sharding
  np.testing.assert_array_equal(np.asarray(e), X + 1)


def test_data_parallel_training_step_matches_unsharded(mesh):
  rng = np.random.RandomState(0)
  w = rng.randn(4, 3).astype(np.float32)
  xb = rng.randn(8, 4).astype(np.float32)

  def loss(w, xb):
    return jnp.mean(jnp.tanh(xb @ w) ** 2)
  step = hlox.jit(lambda w, xb: w - 0.1 * hlox.grad(loss)(w, xb))
  sharded = step(w, hlox.device_put(xb, NamedSharding(mesh, P(("x", "y")))))
  np.testing.assert_allclose(np.asarray(sharded), np.asarray(step(w, xb)), rtol=1e-5)


def test_sharding_constraint_in_jit_grad_and_vmap(mesh):
  # Auto axes: over Explicit ones with_sharding_constraint only asserts (as in JAX; see
  # tests/test_explicit_axes.py)
  mesh = hlox.make_mesh((4, 2), ("x", "y"), axis_types=(hlox.sharding.AxisType.Auto,) * 2)
  s = NamedSharding(mesh, P("y", "x"))
  r = hlox.jit(lambda v: lax.with_sharding_constraint(jnp.cos(v), s) + 1)(X)
  np.testing.assert_allclose(np.asarray(r), np.cos(X) + 1, rtol=1e-6)
  assert r.sharding == s
  grad = hlox.jit(hlox.grad(
      lambda v: (lax.with_sharding_constraint(v, NamedSharding(mesh, P("x"))) ** 2).sum()))
  g = grad(X)
  np.testing.assert_allclose(np.asarray(g), 2 * X)
  assert g.sharding == NamedSharding(mesh, P("x"))
  row = hlox.vmap(lambda v: lax.with_sharding_constraint(v * 3, NamedSharding(mesh, P("y"))))
  out = hlox.jit(row)(X)
  np.testing.assert_allclose(np.asarray(out), X * 3)
  assert out.sharding == NamedSharding(mesh, P(None, "y"))
  eager = lax.with_sharding_constraint(X, NamedSharding(mesh, P("x")))
  assert eager.sharding == NamedSharding(mesh, P("x"))
  with hlox.sharding.set_mesh(mesh):
    r = hlox.jit(lambda v: lax.with_sharding_constraint(v + 1, P("x", "y")))(X)
  assert r.sharding == NamedSharding(mesh, P("x", "y"))


def test_jit_in_and_out_shardings(mesh):
  f = hlox.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P("x")),
               out_shardings=NamedSharding(mesh, P(None, "y")))
  r = f(X)
  np.testing.assert_allclose(np.asarray(r), X * 2)
  assert r.sharding == NamedSharding(mesh, P(None, "y"))
  lowered = hlox.jit(lambda v: v.sum(0)).lower(hlox.device_put(X, NamedSharding(mesh, P("x"))))
  text = lowered.as_text()
  assert "sdy.mesh @mesh" in text and "mhlo.num_partitions = 8" in text
  assert '#sdy.sharding<@mesh, [{"x"}, {}]>' in text
  np.testing.assert_allclose(np.asarray(lowered.compile()(
      hlox.device_put(X, NamedSharding(mesh, P("x"))))), X.sum(0))


def test_bad_specs_raise_value_errors(mesh):
  with pytest.raises(ValueError, match="is not found in mesh"):
    NamedSharding(mesh, P("z"))
  with pytest.raises(ValueError, match="duplicate entries"):
    NamedSharding(mesh, P("x", "x"))
  with pytest.raises(ValueError, match="divisible by 4"):
    hlox.device_put(np.zeros((6, 4), np.float32), NamedSharding(mesh, P("x")))
  with pytest.raises(ValueError, match="rank of at least 3"):
    hlox.device_put(X, NamedSharding(mesh, P("x", None, "y")))
  with pytest.raises(ValueError, match="ndim of its first argument"):
    Mesh(hlox.devices(), ("x", "y"))
  with pytest.raises(ValueError, match="without a mesh"):
    lax.with_sharding_constraint(X, P("x"))
  committed = hlox.device_put(X, hlox.devices()[3])
  with pytest.raises(ValueError, match="incompatible devices"):
    hlox.jit(lambda a, b: a + b)(committed, hlox.device_put(X, NamedSharding(mesh, P("x"))))


def test_make_array_from_callback_and_visualize(mesh, capsys):
  s = NamedSharding(mesh, P("x", "y"))
  seen = []

  def block(index):
    seen.append(index)
    return X[index]
  a = hlox.make_array_from_callback(X.shape, s, block)
  np.testing.assert_array_equal(np.asarray(a), X)
  assert a.sharding == s and len(seen) == 8
  hlox.debug.visualize_array_sharding(hlox.device_put(X, NamedSharding(mesh, P("x"))))
  table = capsys.readouterr().out
  assert table.count("CPU") == 4 and "CPU 2,3" in table


def test_shard_map_collectives(auto_mesh):
  mesh = auto_mesh
  psum = hlox.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x", "y"),
                        out_specs=P(None, "y"))
  np.testing.assert_allclose(np.asarray(psum(X)), X.reshape(4, 2, 4).sum(0))
  np.testing.assert_allclose(np.asarray(hlox.jit(psum)(X)), X.reshape(4, 2, 4).sum(0))
  index = hlox.shard_map(lambda b: b * lax.axis_index("x"), mesh=mesh, in_specs=P("x"),
                         out_specs=P("x"))
  np.testing.assert_allclose(np.asarray(index(X)), X * np.repeat(np.arange(4), 2)[:, None])
  # As JAX 0.10.2: all_gather's result still varies along 'x' by its type, so claiming it
  # replicated (out_specs=P()) needs check_vma=False.
  gather = hlox.shard_map(lambda b: lax.all_gather(b, "x", tiled=True), mesh=mesh,
                          in_specs=P("x"), out_specs=P(), check_vma=False)
  np.testing.assert_allclose(np.asarray(gather(X)), X)
  shift = hlox.shard_map(lambda b: lax.ppermute(b, "x", [(i, (i + 1) % 4) for i in range(4)]),
                         mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  np.testing.assert_allclose(np.asarray(shift(X)), np.roll(X, 2, axis=0))
  scatter = hlox.shard_map(lambda b: lax.psum_scatter(b, "x", tiled=True), mesh=mesh,
                           in_specs=P(), out_specs=P("x"))
  np.testing.assert_allclose(np.asarray(scatter(X)), 4 * X)


def test_shard_map_grad_jvp_and_vmap(auto_mesh):
  mesh = auto_mesh
  rng = np.random.RandomState(1)
  w = rng.randn(4, 3).astype(np.float32)
  xb = (X / 30).astype(np.float32)

  def sharded_loss(w, xb):
    body = lambda w, b: lax.psum(jnp.sum(jnp.tanh(b @ w)), ("x", "y"))
    return hlox.shard_map(body, mesh=mesh, in_specs=(P(), P(("x", "y"))), out_specs=P())(w, xb)
  plain_loss = lambda w, xb: jnp.sum(jnp.tanh(xb @ w))
  want = np.asarray(hlox.grad(plain_loss)(w, xb))
  np.testing.assert_allclose(np.asarray(hlox.grad(sharded_loss)(w, xb)), want, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(hlox.jit(hlox.grad(sharded_loss))(w, xb)), want,
                             rtol=1e-5)
  # a replicated input used by every device, a sharded output: cotangents summed
  scale = hlox.shard_map(lambda w, b: b * w, mesh=mesh, in_specs=(P(), P("x")),
                         out_specs=P("x"))
  g = hlox.grad(lambda s: scale(s, X).sum())(np.float32(2.0))
  np.testing.assert_allclose(np.asarray(g), X.sum(), rtol=1e-6)
  _, tangent = hlox.jvp(lambda v: scale(np.float32(3.0), v), (X,), (np.ones_like(X),))
  np.testing.assert_allclose(np.asarray(tangent), 3 * np.ones_like(X))
  double = hlox.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
  batch = np.stack([X, X + 1])
  np.testing.assert_allclose(np.asarray(hlox.vmap(double)(batch)), batch * 2)


def test_shard_map_bad_specs(mesh):
  with pytest.raises(ValueError, match="not divisible by 4"):
    hlox.shard_map(lambda b: b, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(
        np.zeros((6, 4), np.float32))
  with pytest.raises(ValueError, match="not in the mesh"):
    hlox.shard_map(lambda b: b, mesh=mesh, in_specs=P("z"), out_specs=P())(X)


# Programs whose result layouts XLA's partitioner chooses: the same in hlox as in JAX. Each
# body sees ``m`` (hlox or jax), ``jnp``, ``NS``, ``P`` and ``mesh`` (4x2, axes x and y,
# automatic) and returns one array; the oracle compares its spec and values.
_LAYOUT_PROGRAMS = {
    "elementwise": "return m.jit(lambda v: jnp.sin(v) * 2)(m.device_put(X, NS(mesh, P('x', 'y'))))",
    "reduce_rows": "return m.jit(lambda v: v.sum(0))(m.device_put(X, NS(mesh, P('x', 'y'))))",
    "matmul": ("return m.jit(lambda v, w: v @ w)(m.device_put(X, NS(mesh, P('x'))), "
               "m.device_put(np.ones((4, 6), np.float32), NS(mesh, P(None, 'y'))))"),
    "transpose": "return m.jit(lambda v: v.T)(m.device_put(X, NS(mesh, P('x', 'y'))))",
    "constraint": ("return m.jit(lambda v: m.lax.with_sharding_constraint(v * 2, "
                   "NS(mesh, P('y'))))(X)"),
}

_LAYOUT_RUNNER = """
import json, os, sys
import numpy as np
import jax as m, jax.numpy as jnp
NS, P = m.sharding.NamedSharding, m.sharding.PartitionSpec
mesh = m.make_mesh((4, 2), ('x', 'y'), axis_types=(m.sharding.AxisType.Auto,) * 2)
X = np.arange(32, dtype=np.float32).reshape(8, 4)
out = {}
for name, body in json.loads(sys.stdin.read()).items():
  ns = {}
  exec("def prog(m, jnp, NS, P, mesh, X, np):\\n  " + body, ns)
  r = ns["prog"](m, jnp, NS, P, mesh, X, np)
  out[name] = [repr(tuple(r.sharding.spec)), np.asarray(r).tolist()]
print(json.dumps(out))
"""


@pytest.mark.jax_oracle
def test_result_layouts_match_jax():
  pytest.importorskip("jax")
  from tests.util import run_in_jax
  want = run_in_jax(_LAYOUT_RUNNER, _LAYOUT_PROGRAMS,
                    {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})
  auto = hlox.sharding.AxisType.Auto
  mesh = hlox.make_mesh((4, 2), ("x", "y"), axis_types=(auto, auto))
  for name, body in _LAYOUT_PROGRAMS.items():
    ns = {}
    exec("def prog(m, jnp, NS, P, mesh, X, np):\n  " + body, ns)
    r = ns["prog"](hlox, jnp, NamedSharding, P, mesh, X, np)
    spec, value = want[name]
    np.testing.assert_allclose(np.asarray(r), np.asarray(value), rtol=1e-6, err_msg=name)
    assert repr(tuple(r.sharding.spec)) == spec, (name, r.sharding.spec, spec)


def test_shard_map_checks_claimed_replication(auto_mesh):
  mesh = auto_mesh
  body = lambda b: b * 2   # differs along 'x': cannot be claimed replicated over it
  # JAX's wording over two mesh axes: "varying across mesh axes {} and not {x}"
  with pytest.raises(ValueError, match=r"(?s)out_specs which require replication.*not {x}"):
    hlox.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P())(X)
  unchecked = hlox.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)
  np.testing.assert_allclose(np.asarray(unchecked(X)), X[:2] * 2)  # device 0's block
  summed = hlox.shard_map(lambda b: lax.psum(b, "x") + lax.axis_index("y"), mesh=mesh,
                          in_specs=P("x"), out_specs=P(None, None))
  with pytest.raises(ValueError, match="'y'"):
    summed(X)


def test_donated_sharded_buffer_and_back_to_one_device(mesh):
  x = hlox.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x")))
  r = hlox.jit(lambda a: a * 2, donate_argnums=0)(x)
  assert x.is_deleted()
  with pytest.raises(hlox.errors.DeletedArrayError, match="deleted"):
    x + 1
  np.testing.assert_array_equal(np.asarray(r), 2 * np.ones((8, 4)))
  one = hlox.device_put(r, hlox.devices()[2])
  assert one.sharding == hlox.sharding.SingleDeviceSharding(hlox.devices()[2])
  np.testing.assert_array_equal(np.asarray(one), np.asarray(r))


def test_mesh_of_one_device():
  one = Mesh(np.array(hlox.devices()[:1]), ("x",))
  x = hlox.device_put(np.ones(8, np.float32), hlox.NamedSharding(one, hlox.P("x")))
  jac = hlox.jacrev(lambda v: jnp.frexp(v)[0])(x)
  np.testing.assert_allclose(np.asarray(jac), 0.5 * np.eye(8))
  # laid out as its operand is, JAX reports the operand's sharding (P('x') over one device)
  assert (x * 2).sharding == hlox.NamedSharding(one, hlox.P("x"))


def test_device_put_may_alias(mesh):
  arr = hlox.device_put(np.arange(8), hlox.devices()[0])
  assert hlox.device_put(arr, may_alias=True) is arr
  copy = hlox.device_put(arr, arr.sharding, may_alias=False)
  assert copy is not arr and copy.unsafe_buffer_pointer() != arr.unsafe_buffer_pointer()
  np.testing.assert_array_equal(np.asarray(copy), np.arange(8))
  sharded = hlox.device_put(X, NamedSharding(mesh, P("x")))
  again = hlox.device_put(sharded, may_alias=False)
  assert again is not sharded and again.sharding == sharded.sharding
  with pytest.raises(ValueError, match="may_alias and donate cannot be True"):
    hlox.device_put(arr, may_alias=True, donate=True)


def test_device_put_inside_jit(mesh):
  f = hlox.jit(lambda v: hlox.device_put(v * 2, NamedSharding(mesh, P("y"))) + 1)
  r = f(X)
  np.testing.assert_allclose(np.asarray(r), X * 2 + 1)
  assert r.sharding == NamedSharding(mesh, P("y"))
  g = hlox.jit(lambda v: hlox.device_put(v, hlox.devices()[0]) * 3)
  np.testing.assert_allclose(np.asarray(g(X)), X * 3)


def test_make_array_from_single_device_arrays(mesh):
  s = NamedSharding(mesh, P("x", "y"))
  pieces = [hlox.device_put(X[idx], d) for d, idx in s.addressable_devices_indices_map(
      X.shape).items()]
  a = hlox.make_array_from_single_device_arrays(X.shape, s, pieces)
  np.testing.assert_array_equal(np.asarray(a), X)
  assert a.sharding == s
  with pytest.raises(ValueError, match="Expected shard shape"):
    hlox.make_array_from_single_device_arrays((8, 8), s, pieces)
  with pytest.raises(ValueError, match="one array on each"):
    hlox.make_array_from_single_device_arrays(X.shape, s, pieces[:3])


def test_abstract_mesh_and_axes_decorators(mesh):
  assert hlox.sharding.get_abstract_mesh().empty
  with hlox.sharding.set_mesh(mesh):
    abstract = hlox.sharding.get_abstract_mesh()
    assert abstract.shape == {"x": 4, "y": 2} and abstract.size == 8
    f = hlox.sharding.auto_axes(lambda v: v + 1, out_sharding=P("y"))
    r = hlox.jit(f)(X)
  np.testing.assert_allclose(np.asarray(r), X + 1)
  assert r.sharding == NamedSharding(mesh, P("y"))


def test_pbroadcast_and_pcast(auto_mesh):
  mesh = auto_mesh
  body = lambda b: lax.pbroadcast(lax.pcast(b, "x", to="varying"), "x", 2)
  r = hlox.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(X)
  np.testing.assert_allclose(np.asarray(r), np.tile(X[4:6], (4, 1)))
  with pytest.raises(ValueError, match="unexpected `to` value"):
    lax.pcast(X, "x", to="bad")


def test_mesh_utils_visualize_sharding_and_addressable_data(capsys):
  from hlox.experimental import mesh_utils
  grid = mesh_utils.create_device_mesh((4, 2))
  mesh = Mesh(grid, ("a", "b"))
  assert mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
  hlox.debug.visualize_sharding((8, 4), NamedSharding(mesh, P("a", "b")))
  assert capsys.readouterr().out.count("CPU") == 8
  a = hlox.device_put(X, NamedSharding(mesh, P("a")))
  np.testing.assert_array_equal(np.asarray(a.addressable_data(2)), X[2:4])


def test_current_mesh_specs_and_inferred_in_specs():
  mesh = hlox.make_mesh((4, 2), ("i", "j"))
  other = hlox.make_mesh((8,), ("k",))

  @hlox.shard_map(out_specs=P())   # the mesh current at the call, specs from the arguments
  def total(block):
    return lax.psum(block.sum(), hlox.sharding.get_abstract_mesh().axis_names)
  with hlox.sharding.set_mesh(mesh):
    a = hlox.device_put(X, P("i", "j"))
    assert a.sharding == NamedSharding(mesh, P("i", "j"))
    np.testing.assert_allclose(np.asarray(total(a)), X.sum())
    tree = hlox.device_put({"w": X, "b": X[0]}, {"w": P("i"), "b": P()})
    assert tree["w"].sharding.spec == P("i") and tree["b"].sharding.is_fully_replicated
  with hlox.sharding.set_mesh(other):
    np.testing.assert_allclose(np.asarray(total(hlox.device_put(X, P("k")))), X.sum())
  with pytest.raises(ValueError, match="Please set a mesh via `jax.set_mesh` if a "
                     "PartitionSpec is passed"):
    hlox.device_put(X, P("i"))
  add = hlox.sharding.auto_axes(lambda u, v: u + v)
  with hlox.sharding.set_mesh(mesh):
    r = add(X, X, out_sharding=P("i", None))
  assert r.sharding == NamedSharding(mesh, P("i", None))


# --- out_sharding= on operations ----------------------------------------------------------

_CREATORS = [
    ("zeros", lambda **k: jnp.zeros((8, 4), **k), np.zeros((8, 4), np.float32)),
    ("ones", lambda **k: jnp.ones((8, 4), **k), np.ones((8, 4), np.float32)),
    ("full", lambda **k: jnp.full((8, 4), 3.0, **k), np.full((8, 4), 3.0, np.float32)),
    ("zeros_like", lambda **k: jnp.zeros_like(X, **k), np.zeros_like(X)),
    ("full_like", lambda **k: jnp.full_like(X, 2.0, **k), np.full_like(X, 2.0)),
    ("arange", lambda **k: jnp.arange(32, **k).reshape(8, 4), np.arange(32).reshape(8, 4)),
    ("asarray", lambda **k: jnp.asarray(X, **k), X),
    ("array", lambda **k: jnp.array(X.tolist(), **k), X),
]


@pytest.mark.parametrize("name,make,expected", _CREATORS, ids=[c[0] for c in _CREATORS])
def test_creation_out_sharding(mesh, name, make, expected):
  spec = P(None) if name == "arange" else P("x", "y")  # arange's result is 1-d until reshaped
  s = NamedSharding(mesh, spec)
  eager = make(out_sharding=s)
  np.testing.assert_array_equal(np.asarray(eager), expected)
  if name != "arange":
    assert eager.sharding == s
  traced = hlox.jit(lambda: make(out_sharding=s) + 0)()
  np.testing.assert_array_equal(np.asarray(traced), expected)
  if name != "arange":
    assert traced.sharding == s


def test_contractions_and_reshapes_take_out_sharding(mesh):
  s = NamedSharding(mesh, P("x", "y"))
  w = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
  cases = {
      "dot": (lambda a: jnp.dot(a, w, out_sharding=s), X @ w),
      "matmul": (lambda a: jnp.matmul(a, w, out_sharding=s), X @ w),
      "tensordot": (lambda a: jnp.tensordot(a, w, 1, out_sharding=s), X @ w),
      "einsum": (lambda a: jnp.einsum("ij,jk->ik", a, w, out_sharding=s), X @ w),
      "lax.dot_general": (lambda a: lax.dot_general(a, w, (((1,), (0,)), ((), ())),
                                                    out_sharding=s), X @ w),
      "reshape": (lambda a: jnp.reshape(a.T, (8, 4), out_sharding=s), X.T.reshape(8, 4)),
      "method reshape": (lambda a: a.T.reshape(8, 4, out_sharding=s), X.T.reshape(8, 4)),
      "broadcast_to": (lambda a: jnp.broadcast_to(a[0], (8, 4), out_sharding=s),
                       np.broadcast_to(X[0], (8, 4))),
      "repeat": (lambda a: jnp.repeat(a[::2], 2, axis=0, out_sharding=s),
                 np.repeat(X[::2], 2, axis=0)),
      "at.set": (lambda a: a.at[0].set(1.0, out_sharding=s), np.vstack([np.ones((1, 4)), X[1:]])),
      "lax.broadcast_in_dim": (lambda a: lax.broadcast_in_dim(a[0], (8, 4), (1,),
                                                              out_sharding=s),
                               np.broadcast_to(X[0], (8, 4))),
  }
  for name, (f, expected) in cases.items():
    jaxpr = str(hlox.make_jaxpr(f)(X))
    assert "sharding_constraint" in jaxpr, name
    out = hlox.jit(f)(X)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5, err_msg=name)
    assert out.sharding == s, name
    eager = f(jnp.asarray(X))
    assert eager.sharding == s, name
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-5, atol=1e-5, err_msg=name)


def test_reductions_take_out_sharding(mesh):
  s = NamedSharding(mesh, P("x"))
  for name, f, expected in [
      ("reduce_sum", lambda a: lax.reduce_sum(a, (1,), out_sharding=s), X.sum(1)),
      ("reduce_max", lambda a: lax.reduce_max(a, (1,), out_sharding=s), X.max(1)),
      ("reduce", lambda a: lax.reduce(a, 0.0, lax.add, (1,), out_sharding=s), X.sum(1)),
      ("ravel", lambda a: jnp.ravel(a[:, :1], out_sharding=s), X[:, 0]),
      ("percentile", lambda a: jnp.percentile(a, 50.0, axis=1, out_sharding=s),
       np.percentile(X, 50.0, axis=1)),
  ]:
    out = hlox.jit(f)(X)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, err_msg=name)
    assert out.sharding == s, name


def test_out_sharding_under_grad_and_vmap(mesh):
  s = NamedSharding(mesh, P("x"))
  loss = lambda a: jnp.sum(jnp.dot(a, a.T, out_sharding=s) ** 2)
  want = hlox.grad(lambda a: jnp.sum(jnp.dot(a, a.T) ** 2))(X)
  np.testing.assert_allclose(np.asarray(hlox.jit(hlox.grad(loss))(X)), np.asarray(want),
                             rtol=1e-5)
  # Under vmap the batch dimension is left unsplit; the spec covers the per-example result.
  with hlox.sharding.set_mesh(mesh):
    per_row = hlox.vmap(lambda v: jnp.reshape(v, (2, 2), out_sharding=P("y")))(X)
  np.testing.assert_array_equal(np.asarray(per_row), X.reshape(8, 2, 2))


def test_out_sharding_partition_spec_needs_a_mesh(mesh):
  with hlox.sharding.set_mesh(mesh):
    out = hlox.jit(lambda a: jnp.ones_like(a, out_sharding=P("x")) * a)(X)
    assert out.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(out), X)
  with pytest.raises(ValueError, match="zeros was given a PartitionSpec"):
    jnp.zeros(8, out_sharding=P("x"))
  with pytest.raises(ValueError, match="only one of `device` or `out_sharding`"):
    jnp.zeros(8, device=hlox.devices()[0], out_sharding=NamedSharding(mesh, P("x")))
  with pytest.raises(ValueError, match="rank of at least 2"):
    hlox.jit(lambda a: jnp.dot(a, a, out_sharding=NamedSharding(mesh, P("x", "y"))))(X[0])
  with pytest.raises(TypeError, match="dot: expected a Sharding or a PartitionSpec"):
    jnp.dot(X, X.T, out_sharding="x")


# --- shard_map manual over part of the mesh (axis_names) ---------------------------------

def _partial_manual(mesh24):
  def body(a, w):
    return lax.psum(a @ w, "x") * (lax.axis_index("x") + 1), jnp.sum(a, keepdims=True)
  return hlox.shard_map(body, mesh=mesh24, in_specs=(P("x"), P()),
                        out_specs=(P("x"), P("x")), axis_names={"x"}, check_vma=False)


def _partial_manual_reference(x, w):
  s = x[:4] @ w + x[4:] @ w  # the psum over the two 'x' blocks
  return np.concatenate([s, 2 * s]), np.array([[x[:4].sum()], [x[4:].sum()]])


@pytest.fixture(scope="module")
def mesh24():
  return hlox.make_mesh((2, 4), ("x", "y"))


XW = (np.arange(96, dtype=np.float32).reshape(8, 12) / 10,
      np.arange(48, dtype=np.float32).reshape(12, 4) / 100)


@pytest.mark.parametrize("jitted", [False, True])
def test_shard_map_over_part_of_the_mesh(mesh24, jitted):
  f = _partial_manual(mesh24)
  f = hlox.jit(f) if jitted else f
  want = _partial_manual_reference(*XW)
  for x in (XW[0], hlox.device_put(XW[0], NamedSharding(mesh24, P("x", "y")))):
    out = f(x, XW[1])
    for o, r in zip(out, want):
      np.testing.assert_allclose(np.asarray(o), r, rtol=1e-5)
  text = hlox.jit(f).lower(*XW).as_text()
  assert 'manual_axes={"x"}' in text  # 'y' stays with XLA's partitioner


def test_shard_map_over_part_of_the_mesh_grad_and_vmap(mesh24):
  f = _partial_manual(mesh24)
  loss = lambda x, w: jnp.sum(f(x, w)[0] ** 2) + jnp.sum(f(x, w)[1])
  ref = lambda x, w: jnp.sum(jnp.concatenate([x[:4] @ w + x[4:] @ w,
                                              2 * (x[:4] @ w + x[4:] @ w)]) ** 2) + jnp.sum(x)
  for g, r in zip(hlox.grad(loss, (0, 1))(*XW), hlox.grad(ref, (0, 1))(*XW)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-4)
  xs = np.stack([XW[0], XW[0] + 1])
  out = hlox.jit(hlox.vmap(lambda x: f(x, XW[1])[0]))(xs)
  for i in range(2):
    np.testing.assert_allclose(np.asarray(out[i]), _partial_manual_reference(xs[i], XW[1])[0],
                               rtol=1e-5)


def test_shard_map_axis_names_errors(mesh24):
  with pytest.raises(NameError, match="unbound axis name: y"):  # 'y' is not manual
    hlox.shard_map(lambda a: lax.psum(a, "y"), mesh=mesh24, in_specs=P("x"),
                   out_specs=P("x"), axis_names={"x"})(XW[0])
  with pytest.raises(ValueError, match="names the axis 'y', which is not one of the manual"):
    hlox.shard_map(lambda a: a, mesh=mesh24, in_specs=P("y"), out_specs=P("y"),
                   axis_names={"x"})(XW[0])
  with pytest.raises(ValueError, match=r"axis_names \['z'\] are not axes of the mesh"):
    hlox.shard_map(lambda a: a, mesh=mesh24, in_specs=P("x"), out_specs=P("x"),
                   axis_names={"z"})(XW[0])


def test_bad_layouts_name_the_array_path(mesh24):
  from hlox.runtime.sharding import IndivisibleError
  by_y = NamedSharding(mesh24, P("y"))
  params = {"w": np.ones((6, 8), np.float32)}
  f = lambda params, scale: params["w"] * scale  # noqa: E731
  with pytest.raises(IndivisibleError, match=r"jit argument params\['w'\] .*dimension 0 is "
                     r"split 4 ways .* size 6"):
    hlox.jit(f, in_shardings=({"w": by_y}, None))(params, 2.0)
  with pytest.raises(ValueError, match=r"jit argument params\['w'\] .*rank of at least 3"):
    hlox.jit(f, in_shardings=({"w": NamedSharding(mesh24, P("x", "y", None))}, None))(
        params, 2.0)
  with pytest.raises(IndivisibleError, match=r"jit output \['o'\] .*dimension 0 is split 4"):
    hlox.jit(lambda a: {"o": a[:6]}, out_shardings={"o": by_y})(np.ones((8, 8), np.float32))
  with pytest.raises(ValueError, match=r"argument args\[0\]\['w'\] of shape \(6, 8\)"):
    hlox.shard_map(lambda a: a, mesh=mesh24, in_specs=({"w": P("y")},),
                   out_specs=P("y"))(params)
  assert issubclass(IndivisibleError, ValueError)


def test_jit_in_shardings_do_not_move_committed_arrays(mesh24):
  on_x = hlox.device_put(XW[0], NamedSharding(mesh24, P("x")))
  with pytest.raises(ValueError, match=r"(?s)does not match the sharding on the respective arg.*"
                     r"for arg p of type float32\[8,12\]"):
    hlox.jit(lambda p: p, in_shardings=NamedSharding(mesh24, P("y")))(on_x)
  one = hlox.device_put(XW[0], hlox.devices()[3])
  with pytest.raises(ValueError, match="SingleDeviceSharding"):
    hlox.jit(lambda p: p, in_shardings=NamedSharding(mesh24, P("x")))(one)
  # the same layout, host values and uncommitted arrays are laid out as asked
  for arg in (on_x, XW[0], jnp.asarray(XW[0])):
    out = hlox.jit(lambda p: p * 2, in_shardings=NamedSharding(mesh24, P("x")))(arg)
    np.testing.assert_array_equal(np.asarray(out), 2 * XW[0])


def test_jit_of_arguments_on_two_meshes_of_the_same_devices():
  # Two views of the same devices (JAX accepts them): one program, each argument laid out
  # as its own sharding says, named with the program mesh's axes.
  auto = (hlox.sharding.AxisType.Auto,)
  for shape, names1, names2, spec1, spec2 in [
      ((1, 1), ("a", "b"), ("x", "y"), P("a", "b"), P("x", "y")),
      ((2,), ("p",), ("q",), P("p"), P(None, "q"))]:
    m1 = hlox.make_mesh(shape, names1, axis_types=auto * len(shape))
    m2 = hlox.make_mesh(shape, names2, axis_types=auto * len(shape))
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    xs = hlox.device_put(x, NamedSharding(m1, spec1))
    ys = hlox.device_put(x, NamedSharding(m2, spec2))
    np.testing.assert_array_equal(hlox.jit(lambda a, b: a * b)(xs, ys), x * x)


def test_abstract_mesh_knows_its_abstract_device():
  mesh = hlox.make_mesh((1,), ("x",))
  device = mesh.abstract_mesh.abstract_device
  assert (device.platform, device.device_kind) == (hlox.devices()[0].platform,
                                                   hlox.devices()[0].device_kind)
  again = hlox.sharding.AbstractMesh(mesh.axis_sizes, mesh.axis_names,
                                     axis_types=mesh.axis_types, abstract_device=device)
  assert again.abstract_device == device and again == mesh.abstract_mesh
  assert hlox.sharding.AbstractMesh((2,), ("x",)).abstract_device is None
