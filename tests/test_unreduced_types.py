"""Unreduced and reduced mesh axes in types (``P(..., unreduced={'x'})``: each device holds
a partial sum; ``reduced={'x'}``: replicated, with an unreduced cotangent), against JAX
0.10.2 (programs run in a JAX subprocess when JAX is installed) and against NumPy."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.errors import ShardingTypeError
from hlox.sharding import PartitionSpec as P, reshard

from util import run_in_jax

# Arguments on a 2x2 mesh of Explicit axes x, y; ``U()`` makes an unreduced [2,3] value (a
# product contracting a dimension split over x, kept as partial sums).
ARGS = {
    "a": ("np.arange(8.).reshape(2, 4)", "P(None, 'x')"),
    "b": ("np.arange(12.).reshape(4, 3)", "P('x', None)"),
    "r": ("np.arange(6.).reshape(2, 3)", "P(None, None, reduced={'x'})"),
    "y": ("np.arange(6.).reshape(2, 3)", "P()"),
    "xs": ("np.arange(6.).reshape(2, 3)", "P('x', None)"),
    "ys": ("np.arange(6.).reshape(2, 3)", "P('y', None)"),
}
PROGRAMS = [
    ("unreduced_dot", "a b", "U(a, b)"),
    ("u_plus_u", "a b", "U(a, b) + U(a, b)"),
    ("u_plus_plain", "a b y", "U(a, b) + y"),
    ("u_times_r", "a b r", "U(a, b) * r"),
    ("r_times_u", "a b r", "r * U(a, b)"),
    ("u_times_plain", "a b y", "U(a, b) * y"),
    ("u_times_scalar", "a b", "U(a, b) * 2.0"),
    ("u_minus_u", "a b", "U(a, b) - U(a, b)"),
    ("sin_u", "a b", "jnp.sin(U(a, b))"),
    ("u_div_r", "a b r", "U(a, b) / r"),
    ("sum_u", "a b", "U(a, b).sum(0)"),
    ("transpose_u", "a b", "U(a, b).T"),
    ("astype_u", "a b", "U(a, b).astype(jnp.bfloat16)"),
    ("broadcast_u", "a b", "jnp.broadcast_to(U(a, b), (4, 2, 3))"),
    ("index_u", "a b", "U(a, b)[0]"),
    ("dot_of_u", "a b", "jnp.dot(U(a, b), jnp.ones((3, 2)))"),
    ("reshard_u", "a b", "reshard(U(a, b), P('x'))"),
    ("reshard_to_unreduced", "y", "reshard(y, P(None, None, unreduced={'x'}))"),
    ("reshard_to_reduced", "y", "reshard(y, P(None, None, reduced={'x'}))"),
    ("r_arg", "r", "r"),
    ("r_plus_scalar", "r", "r + 1"),
    ("r_times_r", "r", "r * r"),
    ("r_astype", "r", "r.astype(jnp.bfloat16)"),
    ("r_transpose", "r", "r.T"),
    ("r_sum", "r", "r.sum(0)"),
    ("r_sin", "r", "jnp.sin(r)"),
    ("r_plus_plain", "r y", "r + y"),
    ("r_plus_split_x", "r xs", "r + xs"),
    ("r_plus_split_y", "r ys", "r + ys"),
    ("dot_r", "r y", "jnp.dot(r, y.T)"),
    ("reshard_r", "r", "reshard(r, P())"),
]

PROGRAM_RUNNER = r'''
def run_programs(hlox_or_jax, jnp, np, args, programs):
  P = hlox_or_jax.sharding.PartitionSpec
  reshard = hlox_or_jax.sharding.reshard
  mesh = hlox_or_jax.make_mesh((2, 2), ("x", "y"))
  results = {}
  with hlox_or_jax.sharding.set_mesh(mesh):
    def U(a, b):
      return jnp.dot(a, b, out_sharding=P(None, None, unreduced={"x"}))
    scope = dict(jnp=jnp, np=np, P=P, reshard=reshard, U=U)
    made = {k: hlox_or_jax.device_put(eval(value, scope), eval(spec, scope))
            for k, (value, spec) in args.items()}
    for name, arg_names, body in programs:
      names = arg_names.split()
      fn = eval(f"lambda {', '.join(names)}: {body}", scope)
      seen = []
      def traced(*a, fn=fn):
        out = fn(*a)
        seen.append(str(hlox_or_jax.typeof(out)))
        return out
      try:
        hlox_or_jax.make_jaxpr(traced)(*[made[n] for n in names])
        results[name] = ["ok", seen[0]]
      except Exception as e:
        results[name] = [type(e).__name__, str(e).split("\n")[0]]
  return results
'''

JAX_SCRIPT = r'''
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
import jax, jax.numpy as jnp
''' + PROGRAM_RUNNER + r'''
programs = json.loads(sys.stdin.read())
print(json.dumps(run_programs(jax, jnp, np, *programs)))
'''

# JAX 0.10.2's answers, so that a run without JAX checks them too.
EXPECTED = {
    "unreduced_dot": "float32[2,3]{U:x}",
    "u_plus_u": "float32[2,3]{U:x}",
    "u_times_r": "float32[2,3]{U:x}",
    "r_times_u": "float32[2,3]{U:x}",
    "sum_u": "float32[3]{U:x}",
    "transpose_u": "float32[3,2]{U:x}",
    "astype_u": "bfloat16[2,3]{U:x}",
    "broadcast_u": "float32[4,2,3]{U:x}",
    "index_u": "float32[3]{U:x}",
    "reshard_u": "float32[2@x,3]",
    "reshard_to_unreduced": "float32[2,3]{U:x}",
    "reshard_to_reduced": "float32[2,3]{R:x}",
    "r_arg": "float32[2,3]{R:x}",
    "r_plus_scalar": "float32[2,3]{R:x}",
    "r_times_r": "float32[2,3]{R:x}",
    "r_astype": "bfloat16[2,3]{R:x}",
    "r_transpose": "float32[3,2]{R:x}",
    "r_sum": "float32[3]{R:x}",
    "r_sin": "float32[2,3]{R:x}",
    "dot_r": "float32[2,2]",
    "reshard_r": "float32[2,3]",
}
ERRORS = {
    "u_plus_plain": (ShardingTypeError, "lhs is unreduced while rhs is not"),
    "u_times_plain": (ShardingTypeError, "RHS should be reduced along the same axes LHS is"),
    "u_times_scalar": (ShardingTypeError, "RHS should be reduced along the same axes LHS is"),
    "u_minus_u": (NotImplementedError, "unreduced rule for sub is not implemented"),
    "sin_u": (NotImplementedError, "unreduced rule for sin is not implemented"),
    "u_div_r": (NotImplementedError, "unreduced rule for div is not implemented"),
    "dot_of_u": (ShardingTypeError, "lhs or rhs passed to dot_general cannot be unreduced"),
    "r_plus_plain": (ShardingTypeError, "Inputs cannot be replicated on the same axes"),
    "r_plus_split_x": (ShardingTypeError, "Inputs cannot be sharded/varying on the same axes"),
    "r_plus_split_y": (ShardingTypeError, "Inputs cannot be replicated on the same axes"),
}


@pytest.fixture(scope="module")
def hlox_results():
  scope = {}
  exec(PROGRAM_RUNNER, scope)
  return scope["run_programs"](hlox, jnp, np, ARGS, PROGRAMS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_types(hlox_results, name):
  assert hlox_results[name] == ["ok", EXPECTED[name]]


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(hlox_results, name):
  kind, text = ERRORS[name]
  assert hlox_results[name][0] == kind.__name__, hlox_results[name]
  assert text in hlox_results[name][1]


@pytest.mark.jax_oracle
def test_types_and_errors_agree_with_jax(hlox_results):
  pytest.importorskip("jax", reason="JAX is not installed (the oracle)")
  want = run_in_jax(JAX_SCRIPT, [ARGS, PROGRAMS])
  for name, *_ in PROGRAMS:
    assert hlox_results[name][0] == want[name][0], (name, hlox_results[name], want[name])
    if want[name][0] == "ok":
      assert hlox_results[name][1] == want[name][1], name


def _mesh():
  return hlox.make_mesh((2,), ("x",))


def test_unreduced_values_are_partial_sums_and_reshard_adds_them():
  lhs, rhs = np.arange(8.).reshape(2, 4), np.arange(12.).reshape(4, 3)
  with hlox.sharding.set_mesh(_mesh()):
    a = hlox.device_put(lhs, P(None, "x"))
    b = hlox.device_put(rhs, P("x", None))
    u = hlox.jit(lambda a, b: jnp.dot(a, b, out_sharding=P(None, None, unreduced={"x"})))(a, b)
    assert u.sharding.spec == P(None, None, unreduced={"x"})
    pieces = [np.asarray(s.data) for s in u.addressable_shards]
    np.testing.assert_allclose(pieces[0], lhs[:, :2] @ rhs[:2])
    np.testing.assert_allclose(pieces[1], lhs[:, 2:] @ rhs[2:])
    with pytest.raises(NotImplementedError, match="unreduced"):
      np.asarray(u)  # as JAX: no device holds the value

    def twice_then_reduce(a, b):
      c = jnp.dot(a, b, out_sharding=P(None, None, unreduced={"x"}))
      return reshard(c + c, P())
    out = hlox.jit(twice_then_reduce)(a, b)
    np.testing.assert_allclose(np.asarray(out), 2 * lhs @ rhs)
    np.testing.assert_allclose(np.asarray(hlox.jit(lambda u: reshard(u, P()))(u)), lhs @ rhs)


def test_the_gradient_of_a_reduced_parameter_is_unreduced():
  w_np, x_np = np.arange(12.).reshape(4, 3), np.arange(8.).reshape(2, 4)
  with hlox.sharding.set_mesh(_mesh()):
    w = hlox.device_put(w_np, P(None, None, reduced={"x"}))
    x = hlox.device_put(x_np, P("x", None))
    loss = lambda w, x: jnp.sum(jnp.dot(x, w))  # noqa: E731
    g = hlox.jit(hlox.grad(loss))(w, x)
    assert g.sharding.spec == P(None, None, unreduced={"x"})
    total = sum(np.asarray(s.data) for s in g.addressable_shards)
    np.testing.assert_allclose(total, x_np.sum(0)[:, None] * np.ones((1, 3)))
    # reduced on the way back in: the update sums the pieces
    step = hlox.jit(lambda w, x: reshard(hlox.grad(loss)(w, x), P()))(w, x)
    np.testing.assert_allclose(np.asarray(step), x_np.sum(0)[:, None] * np.ones((1, 3)))


def test_reduced_values_compute_as_replicated_ones():
  host = np.arange(6.).reshape(2, 3)
  with hlox.sharding.set_mesh(_mesh()):
    r = hlox.device_put(host, P(None, None, reduced={"x"}))
    out = hlox.jit(lambda r: jnp.sin(r) * 2)(r)
    assert out.sharding.spec == P(None, None, reduced={"x"})
    np.testing.assert_allclose(np.asarray(out), np.sin(host) * 2, rtol=1e-6)


def test_operations_on_unreduced_arguments_keep_the_partial_sums():
  # An ``add`` of unreduced values stays local: XLA must not all-reduce its operands (each
  # device would then hold the whole sum, and the pieces would add up to twice the value).
  lhs, rhs = np.arange(8.).reshape(2, 4), np.arange(12.).reshape(4, 3)
  with hlox.sharding.set_mesh(_mesh()):
    a = hlox.device_put(lhs, P(None, "x"))
    b = hlox.device_put(rhs, P("x", None))
    u = hlox.jit(lambda a, b: jnp.dot(a, b, out_sharding=P(None, None, unreduced={"x"})))(a, b)
    for doubled in (hlox.jit(lambda v: v + v)(u), u + u):
      assert doubled.sharding.spec == P(None, None, unreduced={"x"})
      pieces = [np.asarray(s.data) for s in doubled.addressable_shards]
      np.testing.assert_allclose(pieces[0], 2 * lhs[:, :2] @ rhs[:2])
      np.testing.assert_allclose(sum(pieces), 2 * lhs @ rhs)


def test_eager_transfers_to_and_from_unreduced_axes():
  value = np.array([[1, 2], [3, 4]])
  with hlox.sharding.set_mesh(_mesh()):
    for out in (jnp.array(jnp.asarray(value), out_sharding=P(unreduced={"x"})),
                hlox.device_put(jnp.asarray(value), P(unreduced={"x"}))):
      assert out.sharding.spec.unreduced == {"x"}
      pieces = [np.asarray(s.data) for s in out.addressable_shards]
      np.testing.assert_array_equal(pieces[0], value)  # one device holds it, others zeros
      np.testing.assert_array_equal(pieces[1], np.zeros_like(value))
      np.testing.assert_array_equal(np.asarray(reshard(out, P())), value)
      split = reshard(out, P("x"))
      assert split.sharding.spec == P("x")
      np.testing.assert_array_equal(np.asarray(split), value)
