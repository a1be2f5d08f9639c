"""Unreduced and reduced manual axes inside ``shard_map`` (JAX's ``mat.unreduced`` /
``mat.reduced``): their types in the body, the casts between the states, and what autodiff
makes of them (a reduced input's cotangent stays a partial sum). Each program runs in hlox
and, when JAX is installed, in a JAX 0.10.2 subprocess; results are compared piece by piece
(``addressable_shards``), and against NumPy."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.errors import ShardingTypeError

from util import run_in_jax

PROGRAM_RUNNER = r'''
def run_programs(jx, jnp, np):
  P = jx.sharding.PartitionSpec
  lax = jx.lax
  results = {}

  def record(name, fn, *args):
    seen = []
    try:
      out = fn(seen, *args)
      spec = out.sharding.spec
      parts = list(spec.partitions)
      while parts and parts[-1] is None:  # P(None, reduced=...) is P(reduced=...)
        parts.pop()
      results[name] = ["ok", seen, f"{parts} U={sorted(spec.unreduced)} R={sorted(spec.reduced)}",
                       [np.asarray(s.data).tolist() for s in out.addressable_shards]]
    except Exception as e:
      results[name] = [type(e).__name__, str(e).split("\n")[0]]

  mesh = jx.make_mesh((2,), ("x",))
  with jx.sharding.set_mesh(mesh):
    red = jx.device_put(np.arange(8.), P(reduced={"x"}))

    def square_grad(seen, x):
      @jx.jit
      @jx.shard_map(out_specs=P(reduced={"x"}))
      def f(x):
        seen.append(str(jx.typeof(x)))
        return x * x
      return jx.jit(jx.grad(lambda x: f(x).sum()))(x)
    record("square_grad", square_grad, red)

    def square_fwd(seen, x):
      @jx.jit
      @jx.shard_map(out_specs=P(reduced={"x"}))
      def f(x):
        y = x * x
        seen.append(str(jx.typeof(y)))
        return y
      return f(x)
    record("square_fwd", square_fwd, red)

    def reshape_grad(seen, x):
      @jx.jit
      @jx.shard_map(out_specs=P(reduced={"x"}))
      def f(x):
        out = jnp.reshape(x, (4, 2))
        seen.append(str(jx.typeof(out)))
        return out
      return jx.jit(jx.grad(lambda x: f(x).sum()))(x)
    record("reshape_grad", reshape_grad, red)

    a = jx.device_put(np.arange(8.).reshape(4, 2), P("x", None))
    w = jx.device_put(np.arange(12.).reshape(2, 6), P(None, None, reduced={"x"}))

    def dot_fn(seen):
      @jx.jit
      @jx.shard_map(in_specs=(P("x", None), P(None, None, reduced={"x"})),
                    out_specs=P("x", None))
      def f(x, y):
        z = jnp.dot(x, y)
        seen.append(str(jx.typeof(z)))
        return z
      return f

    def dot_fwd(seen, a, w):
      return dot_fn(seen)(a, w)
    record("dot_fwd", dot_fwd, a, w)

    def dot_grad_w(seen, a, w):
      f = dot_fn(seen)
      return jx.jit(jx.grad(lambda a, w: (f(a, w) ** 2).sum(), argnums=1))(a, w)
    record("dot_grad_w", dot_grad_w, a, w)

    def dot_grad_a(seen, a, w):
      f = dot_fn(seen)
      return jx.jit(jx.grad(lambda a, w: (f(a, w) ** 2).sum(), argnums=0))(a, w)
    record("dot_grad_a", dot_grad_a, a, w)

    u = jx.jit(lambda v: jx.sharding.reshard(v, P(unreduced={"x"})))(
        jx.device_put(np.arange(8.), P()))

    def psum_unreduced(seen, u):
      @jx.jit
      @jx.shard_map(in_specs=P(unreduced={"x"}), out_specs=P())
      def f(x):
        seen.append(str(jx.typeof(x)))
        y = lax.psum(x, "x")
        seen.append(str(jx.typeof(y)))
        return y
      return f(u)
    record("psum_unreduced", psum_unreduced, u)

    def unchecked_grad(seen, u):
      @jx.jit
      @jx.shard_map(in_specs=P(unreduced={"x"}), out_specs=P("x"), check_vma=False)
      def f(x):
        return lax.psum_scatter(x, "x", tiled=True)
      return jx.jit(jx.grad(lambda x: (f(x) * np.arange(8.)).sum()))(u)
    record("unchecked_grad", unchecked_grad, u)

    def preduced_grad(seen, r):
      @jx.jit
      @jx.shard_map(in_specs=P(), out_specs=P(reduced={"x"}))
      def f(x):
        y = lax.pcast(x, "x", to="reduced")
        seen.append(str(jx.typeof(y)))
        return y * 3.0
      return jx.jit(jx.grad(lambda x: f(x).sum()))(r)
    record("preduced_grad", preduced_grad, jx.device_put(np.arange(8.), P()))

    def out_not_reduced(seen, x):
      @jx.jit
      @jx.shard_map(in_specs=P(reduced={"x"}), out_specs=P())
      def f(x):
        return x
      return f(x)
    record("out_not_reduced", out_not_reduced, red)

  mesh2 = jx.make_mesh((2, 2), ("x", "y"))
  with jx.sharding.set_mesh(mesh2):
    x1 = jx.device_put(np.arange(8.).reshape(4, 2), P("x", "y"))
    x2 = jx.device_put(np.arange(8.).reshape(2, 4), P("y", None))

    def to_unreduced(seen, x1, x2):
      @jx.jit
      @jx.shard_map(out_specs=P("x", unreduced={"y"}))
      def f(x, y):
        z = lax.pcast(jnp.dot(x, y), "y", to="unreduced")
        seen.append(str(jx.typeof(z)))
        return z
      return f(x1, x2)
    record("to_unreduced", to_unreduced, x1, x2)

    def mixed_pcast(seen, x1, x2):
      @jx.jit
      @jx.shard_map(out_specs=P("x", unreduced={"y"}))
      def f(x, y):
        z = lax.pcast(jnp.dot(x, y), "y", to="unreduced")
        return lax.pcast(z, ("x", "y"), to="reduced")
      return f(x1, x2)
    record("mixed_pcast", mixed_pcast, x1, x2)

    arr = jx.device_put(np.arange(32.).reshape(8, 4), P("x", "y"))

    def gather_reduced(seen, arr):
      @jx.shard_map(out_specs=P(reduced={"y"}))
      def f(x):
        g = lax.all_gather(x, "y", axis=1, tiled=True, to="reduced")
        seen.append(str(jx.typeof(g)))
        return lax.psum(jnp.sum(g * g), "x")
      return jx.jit(jx.grad(f))(arr)
    record("gather_reduced_grad", gather_reduced, arr)
  return results
'''

JAX_SCRIPT = r'''
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
import jax, jax.numpy as jnp
''' + PROGRAM_RUNNER + r'''
sys.stdin.read()
print(json.dumps(run_programs(jax, jnp, np)))
'''

X8 = np.arange(8.)
A = np.arange(8.).reshape(4, 2)
W = np.arange(12.).reshape(2, 6)
# What JAX 0.10.2 gives (types, result spec; the pieces are checked against NumPy below).
EXPECTED = {
    "square_grad": (['float32[8]{R:x}'], "[] U=['x'] R=[]"),
    "square_fwd": (['float32[8]{R:x}'], "[] U=[] R=['x']"),
    "reshape_grad": (['float32[4,2]{R:x}'], "[] U=['x'] R=[]"),
    "dot_fwd": (['float32[2,6]{V:x}'], "['x'] U=[] R=[]"),
    "dot_grad_w": (['float32[2,6]{V:x}'], "[] U=['x'] R=[]"),
    "dot_grad_a": (['float32[2,6]{V:x}'], "['x'] U=[] R=[]"),
    "psum_unreduced": (['float32[8]{U:x}', 'float32[8]'], "[] U=[] R=[]"),
    "unchecked_grad": ([], "[] U=[] R=['x']"),
    "to_unreduced": (['float32[2,4]{V:x, U:y}'], "['x'] U=['y'] R=[]"),
    "gather_reduced_grad": (['float32[4,4]{V:x, R:y}'], "['x', 'y'] U=[] R=[]"),
}
ERRORS = {
    # (JAX: the scalar 3.0 is replicated where the other operand is reduced)
    "preduced_grad": (ShardingTypeError, ""),
    "mixed_pcast": (ValueError, "jax.lax.pcast can only accept axis_name which"),
    "out_not_reduced": (ValueError, "was given out_specs which require replication"),
}


@pytest.fixture(scope="module")
def hlox_results():
  scope = {}
  exec(PROGRAM_RUNNER, scope)
  return scope["run_programs"](hlox, jnp, np)


def _total(pieces):
  return sum(np.asarray(p) for p in pieces)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_types_and_layouts(hlox_results, name):
  got = hlox_results[name]
  assert got[0] == "ok", got
  types, spec = EXPECTED[name]
  assert got[1][:len(types)] == types
  assert got[2] == spec


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(hlox_results, name):
  cls, text = ERRORS[name]
  assert hlox_results[name][0] == cls.__name__
  assert text in hlox_results[name][1]


def test_values(hlox_results):
  r = {k: v[3] for k, v in hlox_results.items() if v[0] == "ok"}
  # a reduced input's gradient: partial sums, one device holding all of it (as JAX)
  np.testing.assert_allclose(r["square_grad"][0], 2 * X8)
  np.testing.assert_allclose(r["square_grad"][1], 0 * X8)
  np.testing.assert_allclose(r["square_fwd"][0], X8 * X8)
  np.testing.assert_allclose(r["reshape_grad"][0], np.ones(8))
  np.testing.assert_allclose(r["reshape_grad"][1], 0 * X8)
  np.testing.assert_allclose(np.concatenate(r["dot_fwd"]), A @ W)
  # each device's piece of the weight gradient is its own rows' contribution
  for i in range(2):
    rows = A[2 * i:2 * i + 2]
    np.testing.assert_allclose(r["dot_grad_w"][i], rows.T @ (2 * rows @ W))
  np.testing.assert_allclose(_total(r["dot_grad_w"]), A.T @ (2 * A @ W))
  np.testing.assert_allclose(np.concatenate(r["dot_grad_a"]), 2 * (A @ W) @ W.T)
  # an unreduced argument of pieces [x, 0]: psum adds them
  np.testing.assert_allclose(r["psum_unreduced"][0], X8)
  # unchecked: the cotangent is summed over x (JAX's "defensive" psum), typed reduced
  np.testing.assert_allclose(r["unchecked_grad"][0], 2 * X8)
  np.testing.assert_allclose(r["unchecked_grad"][1], 2 * X8)
  x1, x2 = np.arange(8.).reshape(4, 2), np.arange(8.).reshape(2, 4)
  # pieces over y: each device's product of its blocks; over x: the rows
  for dev, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
    block = x1[2 * i:2 * i + 2, j:j + 1] @ x2[j:j + 1]
    np.testing.assert_allclose(r["to_unreduced"][dev], block)
  arr = np.arange(32.).reshape(8, 4)
  grads = r["gather_reduced_grad"]
  for dev, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
    np.testing.assert_allclose(grads[dev], 2 * arr[4 * i:4 * i + 4, 2 * j:2 * j + 2])


def test_agrees_with_jax(hlox_results):
  pytest.importorskip("jax", reason="JAX is not installed (the oracle)")
  jax_results = run_in_jax(JAX_SCRIPT, [])
  for name, want in jax_results.items():
    got = hlox_results[name]
    if want[0] != "ok":
      assert got[0] == want[0], (name, got, want)
      continue
    assert got[0] == "ok", (name, got)
    assert got[1] == want[1], name
    assert got[2] == want[2], name
    for g, w in zip(got[3], want[3]):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), err_msg=name)
