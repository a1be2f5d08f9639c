"""Sharding in types (JAX's Explicit mesh axes): ``typeof`` and printed jaxprs show how a
traced value is split (``f32[8@X,4]``), each primitive's rule works the split out or raises
``ShardingTypeError``, jit results are laid out as their types say, and ``shard_map`` infers
its ``in_specs`` from the types under ``jit``. Checked against JAX 0.10.2 (in a subprocess)
when it is installed, and against JAX's printed types recorded as specs otherwise."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.errors import ShardingTypeError
from hlox.sharding import PartitionSpec as P, reshard

from util import run_in_jax

# Each program: (name, argument names, body). The arguments are made by ``ARGS`` on a 4x2
# mesh with Explicit axes X, Y; ``body`` is an expression of them run under ``jit``.
ARGS = {
    "x": ("jnp.arange(32.0).reshape(8, 4)", "P('X', 'Y')"),
    "v": ("jnp.arange(8.0)", "P('X')"),
    "w": ("jnp.ones((4, 16))", "P('Y', None)"),
    "wy": ("jnp.ones((4, 16))", "P(None, 'Y')"),
    "z": ("jnp.ones((8, 6, 4))", "P('X', None, 'Y')"),
    "rows": ("jnp.ones((4, 4))", "P('X', None)"),
    "cols": ("jnp.ones((4, 4))", "P(None, 'X')"),
    "xc": ("jnp.ones((8, 4))", "P(None, 'X')"),
    "y4": ("jnp.ones(4)", "P('Y')"),
    "s": ("jnp.arange(24.0).reshape(3, 8)", "P(None, 'X')"),
    "c": ("jnp.ones(8)", "P('X')"),
    "sq": ("jnp.ones((8, 8))", "P('X', 'Y')"),
}
PROGRAMS = [
    ("arg", "x", "x"),
    ("sin_T", "x", "jnp.sin(x).T"),
    ("sum0", "x", "x.sum(0)"),
    ("argmax1", "x", "jnp.argmax(x, 1)"),
    ("bcast_row", "x", "x * 2 + jnp.arange(4.0)"),
    ("bcast_col", "x v", "x + v[:, None]"),
    ("outer", "v y4", "v[:, None] * y4[None, :]"),
    ("dot_ambiguous", "x w", "jnp.dot(x, w)"),
    ("dot_out", "x w", "jnp.dot(x, w, out_sharding=P('X', None))"),
    ("matmul_free", "x wy", "x @ wy"),
    ("einsum_out", "x w", "jnp.einsum('ij,jk->ik', x, w, out_sharding=P('X', 'Y'))"),
    ("vector_dot", "v", "v @ v"),
    ("dot_inconsistent", "sq", "jnp.dot(sq, sq)"),
    ("illegal_add", "rows cols", "rows + cols"),
    ("incompatible", "x xc", "x + xc"),
    ("reshard", "x", "reshard(x, P(None, 'X'))"),
    ("reshape_split", "x", "x.reshape(8, 2, 2)"),
    ("reshape_bad", "x", "x.reshape(4, 8)"),
    ("reshape_out", "x", "jnp.reshape(x, (4, 8), out_sharding=P('X', None))"),
    ("merge_unsplit_minor", "z", "z.reshape(48, 4)"),
    ("merge_unsplit_major", "z", "z.reshape(8, 24)"),
    ("split_indivisible", "z", "z.reshape(2, 4, 6, 4)"),
    ("split_divisible", "x", "x.reshape(4, 2, 4)"),
    ("flatten", "x", "x.reshape(-1)"),
    ("size_one_dims", "x", "x.reshape(8, 1, 4, 1)"),
    ("expand_squeeze", "x", "x[:, None, :].squeeze(1)"),
    ("cumsum_split_axis", "x", "jnp.cumsum(x, 0)"),
    ("cumsum", "x", "jnp.cumsum(x, 1)"),
    ("slice_even", "x", "x[:, 1:3]"),
    ("slice_odd", "x", "x[1:4]"),
    ("pad", "x", "jnp.pad(x, ((0, 0), (0, 4)))"),
    ("concat", "x", "jnp.concatenate([x, x], 1)"),
    ("rev", "x", "x[::-1]"),
    ("astype_where", "x", "jnp.where(x > 1, x, 0.0).astype(jnp.int32)"),
    ("softmax_mean", "x", "hlox_or_jax.nn.softmax(x, axis=-1).mean(0)"),
    ("nested_jit", "x", "hlox_or_jax.jit(lambda b: jnp.sin(b).T)(x)"),
    ("zeros_like", "x", "jnp.zeros_like(x)"),
    ("grad", "x", "hlox_or_jax.grad(lambda b: jnp.sin(b).sum())(x)"),
    # control flow: bodies see their operands' splits; carries and branches must agree
    ("scan", "c s", "lax.scan(lambda a, b: (a + b, a * 2), c, s)"),
    ("scan_carry_changes", "c s", "lax.scan(lambda a, b: (reshard(a + b, P()), a), c, s)"),
    ("fori", "x", "lax.fori_loop(0, 3, lambda i, v: jnp.sin(v) + i, x)"),
    ("while", "x", "lax.while_loop(lambda v: v.sum() < 100, lambda v: v * 2, x)"),
    ("cond", "x", "lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)"),
    ("cond_branches_differ", "x",
     "lax.cond(x.sum() > 0, lambda v: v, lambda v: reshard(v, P()), x)"),
    ("switch", "x", "lax.switch(1, [jnp.sin, jnp.cos], x)"),
    # calls of functions with custom rules, checkpoints
    ("custom_jvp", "x", "hlox_or_jax.nn.relu(x) + hlox_or_jax.nn.gelu(x)"),
    ("custom_vjp", "x", "sin_with_vjp(x)"),
    ("grad_custom_vjp", "x", "hlox_or_jax.grad(lambda v: sin_with_vjp(v).sum())(x)"),
    ("checkpoint", "x", "hlox_or_jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x)"),
    # indexing
    ("take_split_rows", "x", "x[jnp.array([1, 2])]"),
    ("take_split_cols", "x", "x[:, jnp.array([1, 2])]"),
    ("take_out", "x", "x.at[jnp.array([1, 2])].get(out_sharding=P(None, 'Y'))"),
    ("take_unsplit_dim", "xc", "xc[jnp.array([1, 2])]"),
    ("scatter_split", "x", "x.at[2].set(0.0)"),
    ("scatter_out", "x", "x.at[jnp.array([1, 2])].add(1.0, out_sharding=P('X', 'Y'))"),
    ("scatter_unsplit_dim", "xc", "xc.at[jnp.array([1, 2])].add(1.0)"),
    ("dynamic_slice", "x", "lax.dynamic_slice_in_dim(x, 2, 4, axis=1)"),
    ("sort_split_dim", "x", "jnp.sort(x, axis=1)"),
    ("sort", "xc", "jnp.sort(xc, axis=0)"),
    ("vmap", "x", "hlox_or_jax.vmap(lambda r: r * 2)(x)"),
]

RUNNER = r'''
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
MODULE = sys.argv[1] if len(sys.argv) > 1 else "jax"
'''

PROGRAM_RUNNER = r'''
def run_programs(hlox_or_jax, jnp, args, programs):
  P = hlox_or_jax.sharding.PartitionSpec
  reshard = hlox_or_jax.sharding.reshard
  mesh = hlox_or_jax.make_mesh((4, 2), ("X", "Y"))
  results = {}
  with hlox_or_jax.sharding.set_mesh(mesh):
    @hlox_or_jax.custom_vjp
    def sin_with_vjp(v):
      return jnp.sin(v)
    sin_with_vjp.defvjp(lambda v: (jnp.sin(v), v), lambda r, g: (g * jnp.cos(r),))
    scope = dict(jnp=jnp, P=P, reshard=reshard, hlox_or_jax=hlox_or_jax,
                 lax=hlox_or_jax.lax, sin_with_vjp=sin_with_vjp)
    made = {k: hlox_or_jax.device_put(eval(value, scope), eval(spec, scope))
            for k, (value, spec) in args.items()}
    for name, arg_names, body in programs:
      names = arg_names.split()
      fn = eval(f"lambda {', '.join(names)}: {body}", scope)
      seen = []
      def traced(*a, fn=fn):
        out = fn(*a)
        seen.append(" ".join(str(hlox_or_jax.typeof(o))
                             for o in hlox_or_jax.tree_util.tree_leaves(out)))
        return out
      try:
        out = hlox_or_jax.jit(traced)(*[made[n] for n in names])
        leaves = hlox_or_jax.tree_util.tree_leaves(out)
        results[name] = [" ".join(seen[0].split()),
                         " ".join(str(hlox_or_jax.typeof(o)) for o in leaves),
                         " ".join(str(o.sharding.spec) for o in leaves)]
      except Exception as e:
        results[name] = [type(e).__name__, str(e).split("\n")[0]]
  return results
'''

JAX_SCRIPT = RUNNER + PROGRAM_RUNNER + r'''
import jax, jax.numpy as jnp
programs = json.loads(sys.stdin.read())
print(json.dumps(run_programs(jax, jnp, *programs)))
'''


@pytest.fixture(scope="module")
def hlox_results():
  scope = {}
  exec(PROGRAM_RUNNER, scope)
  return scope["run_programs"](hlox, jnp, ARGS, PROGRAMS)


@pytest.mark.jax_oracle
def test_types_and_errors_agree_with_jax(hlox_results):
  pytest.importorskip("jax", reason="JAX is not installed (the oracle)")
  want = run_in_jax(JAX_SCRIPT, [ARGS, PROGRAMS])
  for name, *_ in PROGRAMS:
    if name == "cumsum_split_axis" or want[name][0] in ("ShardingTypeError", "TypeError"):
      assert hlox_results[name][0] == want[name][0], (name, hlox_results[name])
    else:
      # the type inside jit, the result's type, and the result's layout (P('X',) prints
      # as P('X', None) in hlox: compared with trailing Nones dropped)
      got = hlox_results[name]
      assert got[:2] == want[name][:2], (name, got, want[name])
      assert _drop_trailing_none(got[2]) == _drop_trailing_none(want[name][2]), name


def _drop_trailing_none(specs: str) -> str:
  while ", None)" in specs:
    specs = specs.replace(", None)", ")")
  return specs


# Specs (JAX 0.10.2's answers), so that a run without JAX checks them too.
EXPECTED_TYPES = {
    "sin_T": "float32[4@Y,8@X]",
    "sum0": "float32[4@Y]",
    "argmax1": "int32[8@X]",
    "bcast_col": "float32[8@X,4@Y]",
    "outer": "float32[8@X,4@Y]",
    "dot_out": "float32[8@X,16]",
    "matmul_free": "float32[8@X,16@Y]",
    "reshard": "float32[8,4@X]",
    "reshape_split": "float32[8@X,2@Y,2]",
    "merge_unsplit_minor": "float32[48@X,4@Y]",
    "split_divisible": "float32[4@X,2,4@Y]",
    "flatten": "float32[32@(X,Y)]",
    "size_one_dims": "float32[8@X,1,4@Y,1]",
    "slice_even": "float32[8@X,2@Y]",
    "concat": "float32[8@X,8@Y]",
    "zeros_like": "float32[8@X,4@Y]",
    "grad": "float32[8@X,4@Y]",
    "scan": "float32[8@X] float32[3,8@X]",
    "fori": "float32[8@X,4@Y]",
    "cond": "float32[8@X,4@Y]",
    "custom_vjp": "float32[8@X,4@Y]",
    "checkpoint": "float32[8@X,4@Y]",
    "take_out": "float32[2,4@Y]",
    "take_unsplit_dim": "float32[2,4@X]",
    "dynamic_slice": "float32[8@X,4@Y]",
}


@pytest.mark.parametrize("name", ["scan_carry_changes", "cond_branches_differ"])
def test_loops_and_branches_must_keep_their_types(hlox_results, name):
  kind, message = hlox_results[name]
  assert kind == "TypeError" and "must have equal" in message
EXPECTED_ERRORS = ["dot_ambiguous", "vector_dot", "illegal_add", "incompatible", "reshape_bad",
                   "merge_unsplit_major", "split_indivisible", "cumsum_split_axis", "slice_odd",
                   "take_split_rows", "take_split_cols", "scatter_split", "sort_split_dim",
                   "dot_inconsistent"]


@pytest.mark.parametrize("name", sorted(EXPECTED_TYPES))
def test_types(hlox_results, name):
  inside, outside, _ = hlox_results[name]
  assert inside == outside == EXPECTED_TYPES[name]


@pytest.mark.parametrize("name", EXPECTED_ERRORS)
def test_sharding_type_errors(hlox_results, name):
  assert hlox_results[name][0] == "ShardingTypeError", hlox_results[name]


def test_error_texts_name_the_operation_and_the_types(hlox_results):
  assert hlox_results["illegal_add"][1] == (
      "add operation with inputs: f32[4@X,4], f32[4,4@X] produces an illegally sharded "
      "result: f32[4@X,4@X]")
  assert hlox_results["incompatible"][1] == (
      "add got incompatible shardings for broadcasting: ('X', 'Y'), (None, 'X').")
  assert "Please specify the output sharding via the `out_sharding` parameter" in \
      hlox_results["dot_ambiguous"][1]


def test_jaxprs_print_the_split(hlox_results):
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  x = hlox.device_put(jnp.ones((8, 4)), hlox.sharding.NamedSharding(mesh, P("X", "Y")))
  text = str(hlox.make_jaxpr(lambda a: jnp.sin(a).T)(x))
  assert "a:f32[8@X,4@Y]" in text and "c:f32[4@Y,8@X] = transpose" in text
  assert str(hlox.typeof(x)) == "float32[8@X,4@Y]"
  assert hlox.typeof(x).sharding.spec == P("X", "Y")


def test_results_are_laid_out_as_their_types_and_the_values_are_right():
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  with hlox.sharding.set_mesh(mesh):
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = hlox.device_put(host, P("X", "Y"))
    flat = hlox.jit(lambda a: a.reshape(-1))(x)
    assert flat.sharding.spec == P(("X", "Y"))
    np.testing.assert_array_equal(np.asarray(flat), host.reshape(-1))
    y = hlox.jit(lambda a: jnp.dot(a, a.T, out_sharding=P("X", None)))(x)
    np.testing.assert_allclose(np.asarray(y), host @ host.T, rtol=1e-6)


def test_axes_of_type_auto_are_not_in_types():
  mesh = hlox.make_mesh((4, 2), ("X", "Y"), axis_types=(hlox.sharding.AxisType.Auto,) * 2)
  x = hlox.device_put(jnp.ones((8, 4)), hlox.sharding.NamedSharding(mesh, P("X", "Y")))
  assert str(hlox.typeof(x)) == "float32[8,4]"
  out = hlox.jit(lambda a, b: a + b)(x, hlox.device_put(
      jnp.ones((8, 4)), hlox.sharding.NamedSharding(mesh, P(None, "X"))))
  np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 2.0))  # XLA decides


def test_shard_map_infers_in_specs_from_types_under_jit():
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  with hlox.sharding.set_mesh(mesh):
    host = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = hlox.device_put(host, P("X", "Y"))
    shapes = []

    def body(b):
      shapes.append(b.shape)
      return b * 2

    out = hlox.jit(lambda a: hlox.shard_map(body, out_specs=P("X", "Y"))(a))(x)
  assert shapes == [(2, 2)]
  assert str(hlox.typeof(out)) == "float32[8@X,4@Y]"
  np.testing.assert_array_equal(np.asarray(out), host * 2)


def test_an_error_names_the_class_jax_raises():
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  with hlox.sharding.set_mesh(mesh):
    a = hlox.device_put(jnp.ones((4, 4)), P("X", None))
    b = hlox.device_put(jnp.ones((4, 4)), P(None, "X"))
    with pytest.raises(ShardingTypeError, match="illegally sharded"):
      hlox.jit(lambda p, q: p + q)(a, b)
    assert not issubclass(ShardingTypeError, (TypeError, ValueError))  # as JAX's


@pytest.mark.parametrize("dtype", ["bfloat16", "int4", "float8_e4m3fn"])
@pytest.mark.parametrize("spec", [P("X"), P("X", "Y"), P(None, "Y"), P()])
def test_split_arrays_of_dtypes_numpy_cannot_describe_read_back(dtype, spec):
  # Their blocks go through an on-device bitcast (NumPy's buffer protocol has no bfloat16):
  # a partitioned layout has no single split axis, its blocks are read as laid out.
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  host = (np.arange(32) % 7).reshape(8, 4).astype(dtype)
  x = hlox.device_put(host, hlox.sharding.NamedSharding(mesh, spec))
  np.testing.assert_array_equal(np.asarray(x), host)
  for shard in x.addressable_shards:
    np.testing.assert_array_equal(np.asarray(shard.data), host[shard.index])


def test_traced_values_types_record_their_split_as_jax_avals_do():
  # ``x.aval.sharding.spec`` inside jit (and of a gradient's tracers), as JAX's types give it;
  # an unsplit value's type is replicated over the mesh in effect.
  mesh = hlox.make_mesh((4, 2), ("X", "Y"))
  seen = {}
  with hlox.sharding.set_mesh(mesh):
    x = hlox.device_put(jnp.ones((8, 4)), P("X", "Y"))

    @hlox.jit
    def f(x):
      seen["x"] = x.aval.sharding.spec
      y = jnp.sin(x).sum(0)
      seen["y"] = y.aval.sharding.spec
      z = jnp.ones((3,))
      seen["z"] = (z.aval.sharding.spec, z.aval.sharding.mesh)
      seen["grad"] = hlox.grad(lambda v: (v * 2).sum())(x).aval.sharding.spec
      return y

    out = f(x)
  assert seen["x"] == P("X", "Y") and seen["y"] == P("Y")
  assert seen["z"] == (P(None), mesh.abstract_mesh)
  assert seen["grad"] == P("X", "Y")
  assert out.sharding.spec == P("Y")
  assert jnp.ones(3).aval.sharding.spec == P(None)  # no mesh: the empty one
  assert jnp.ones(3).aval.sharding.mesh.empty


def test_the_cotangent_of_a_reshard_goes_back_to_the_operands_type():
  # (as JAX: under vmap the batch dimension keeps its split, and a gradient through a
  # reshard is laid out as the primal was)
  mesh = hlox.make_mesh((2, 2), ("x", "y"))
  host = np.arange(6 * 24, dtype=np.float32).reshape(6, 24)
  with hlox.sharding.set_mesh(mesh):
    arr = hlox.device_put(host, P("x", None))

    def g(v):
      v = reshard(v, P("y"))
      out = hlox.shard_map(jnp.cos, in_specs=P("y"), out_specs=P("y"))(v)
      return out.sum()
    out = hlox.jit(hlox.vmap(hlox.grad(g)))(arr)
    assert out.sharding.spec == P("x", None)
    np.testing.assert_allclose(np.asarray(out), -np.sin(host), rtol=1e-5, atol=1e-5)
    x = hlox.device_put(np.arange(8.0), P("x"))
    grad = hlox.jit(hlox.grad(lambda v: (reshard(v, P("y")) ** 2).sum()))(x)
    assert grad.sharding.spec == P("x")
    np.testing.assert_allclose(np.asarray(grad), 2 * np.arange(8.0))
