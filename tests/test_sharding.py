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
