"""More sharding-in-types rules (JAX's Explicit mesh axes), found by JAX's own pjit tests:
scatters (``.at[].set/add/...``, batched dynamic updates) on split operands and their
gradients, and the split each further primitive's rule works out. Each program runs under
``jit`` (and its gradient outside it) on a 2x2 mesh with Explicit axes x, y; the types and
layouts are compared with JAX 0.10.2's (in a subprocess) when it is installed, and with
JAX's answers recorded below otherwise."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp

from util import run_in_jax

# name -> (arguments: (value, spec) by name, body of a function of them, grad argnums or
# None). Each argument is device_put with its spec.
SCATTER_ARGS = {
    "operand": ("jnp.arange(160.0).reshape(2, 10, 8)", "P('x', None, 'y')"),
    "operand_x": ("jnp.arange(160.0).reshape(2, 10, 8)", "P('x', None, None)"),
    "indices": ("jnp.array([2, 3], dtype=jnp.int32)", "P('x')"),
    "updates": ("jnp.arange(16.0).reshape(2, 8) + 1", "P('x', 'y')"),
    "updates_x": ("jnp.arange(16.0).reshape(2, 8) + 1", "P('x', None)"),
    "v": ("jnp.arange(16.0)", "P('x')"),
    "u": ("jnp.arange(8.0) + 1", "P('x')"),
    "xc": ("jnp.ones((8, 4))", "P(None, 'x')"),
    "img": ("jnp.arange(128.0).reshape(4, 8, 4)", "P('x', 'y', None)"),
    "img_f": ("jnp.arange(128.0).reshape(4, 8, 4)", "P('x', None, 'y')"),
    "row": ("jnp.arange(32.0).reshape(1, 32)", "P(None, 'y')"),
    "shifts": ("jnp.arange(8, dtype=jnp.int32).reshape(4, 2)", "P('x', None)"),
    "xs": ("jnp.arange(16.0).reshape(2, 8)", "P()"),
    "rows_y": ("jnp.ones((4, 8))", "P(None, 'y')"),
    "img_y": ("jnp.ones((4, 8, 4))", "P(('x', 'y'), None, None)"),
    "ys": ("jnp.arange(6.0).reshape(2, 3)", "P()"),
    "zs": ("jnp.arange(16.0).reshape(2, 8)", "P(None, 'x')"),
}
PROGRAMS = [
    ("vmap_set", "operand indices updates", "vmap(lambda x, i, y: x.at[i].set(y))"),
    ("vmap_add", "operand indices updates", "vmap(lambda x, i, y: x.at[i].add(y))"),
    ("vmap_mul", "operand indices updates", "vmap(lambda x, i, y: x.at[i].mul(y))"),
    ("vmap_min", "operand_x indices updates_x", "vmap(lambda x, i, y: x.at[i].min(y))"),
    ("vmap_max", "operand_x indices updates_x", "vmap(lambda x, i, y: x.at[i].max(y))"),
    ("vmap_dus", "operand indices updates",
     "vmap(lambda x, i, y: lax.dynamic_update_slice_in_dim(x, y[None], i, axis=0))"),
    ("dus", "v u", "lambda a, b: lax.dynamic_update_slice(a, b, (3,))"),
    ("dus_mismatch", "v u", "lambda a, b: lax.dynamic_update_slice(a, reshard(b, P()), (3,))"),
    ("scatter_scalar_updates", "xc", "lambda a: a.at[jnp.array([1, 2])].add(1.0)"),
    ("reduce_window_max", "img", "lambda a: lax.reduce_window(a, -np.inf, lax.max, (1, 2, 1), "
     "(1, 2, 1), 'SAME')"),
    ("reduce_window_sum", "img", "lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 1, 2), "
     "(1, 1, 2), 'VALID')"),
    ("conv", "img", "lambda a: lax.conv_general_dilated(a, jnp.ones((3, 4, 5)), (1,), 'SAME', "
     "dimension_numbers=('NWC', 'WIO', 'NWC'))"),
    ("conv_split_features", "img_f", "lambda a: lax.conv_general_dilated(a, jnp.ones((3, 4, 5)), "
     "(1,), 'SAME', dimension_numbers=('NWC', 'WIO', 'NWC'))"),
    ("top_k", "img", "lambda a: lax.top_k(a, 2)[0]"),
    ("top_k_split_axis", "img_f", "lambda a: lax.top_k(a, 2)[0]"),
    ("reshape_size_one", "row", "lambda a: a.reshape(1, 4, 8)"),
    ("map_one_batch", "img", "lambda a: lax.map(lambda r: r * 2, a, batch_size=10)"),
    ("roll_batched_shift", "img shifts", "vmap(lambda a, s: jnp.roll(a, s[0], axis=1))"),
    ("roll_split_axis", "img_f", "vmap(lambda a: jnp.roll(a, 1, axis=1))"),
    ("get_out_sharding_longer_spec", "xs", "lambda a: a.at[1, 2].get(out_sharding=P(None))"),
    ("percentile_out_sharding", "v", "lambda a: jnp.percentile(a, 50, axis=0, out_sharding=P())"),
    ("vmap_mapped_split_differs", "img rows_y", "vmap(lambda a, b: a.sum() + b.sum())"),
    ("vmap_unmapped_split_over_mapped_axis", "rows_y img_y",
     "vmap(lambda a, b: a.sum() + b.sum(), in_axes=(None, 0))"),
    ("dus_vmap_update_slice", "xs ys zs", "vmap(lambda a, b, c: (lax.dynamic_update_slice("
     "a, b, (1,)) + c))"),
]

PROGRAM_RUNNER = r'''
def run_programs(m, jnp, args, programs):
  P = m.sharding.PartitionSpec
  mesh = m.make_mesh((2, 2), ("x", "y"))
  scope = dict(jnp=jnp, np=np, P=P, lax=m.lax, vmap=m.vmap, reshard=m.sharding.reshard)
  results = {}
  with m.sharding.set_mesh(mesh):
    made = {k: m.device_put(eval(value, scope), eval(spec, scope))
            for k, (value, spec) in args.items()}
    for name, arg_names, body in programs:
      f = eval(body, scope)
      xs = [made[n] for n in arg_names.split()]
      seen = []
      def traced(*a, f=f):
        out = f(*a)
        seen.append(str(m.typeof(out)))
        return out
      try:
        out = m.jit(traced)(*xs)
        floats = [i for i, x in enumerate(xs) if x.dtype == jnp.float32]
        grads = m.grad(lambda *a: m.jit(f)(*a).sum(), argnums=tuple(floats))(*xs)
        results[name] = [seen[0], str(out.sharding.spec),
                         [str(g.sharding.spec) for g in grads],
                         np.asarray(out).round(3).tolist(),
                         [np.asarray(g).round(3).tolist() for g in grads]]
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
print(json.dumps(run_programs(jax, jnp, *programs)))
'''

# JAX 0.10.2's types inside jit and the results' layouts, so that a run without JAX
# checks them too.
EXPECTED = {
    "vmap_set": ("float32[2@x,10,8@y]", "P('x', None, 'y')", ["P('x', None, 'y')", "P('x', 'y')"]),
    "vmap_add": ("float32[2@x,10,8@y]", "P('x', None, 'y')", ["P('x', None, 'y')", "P('x', 'y')"]),
    "vmap_mul": ("float32[2@x,10,8@y]", "P('x', None, 'y')", ["P('x', None, 'y')", "P('x', 'y')"]),
    "vmap_min": ("float32[2@x,10,8]", "P('x',)", ["P('x',)", "P('x',)"]),
    "vmap_max": ("float32[2@x,10,8]", "P('x',)", ["P('x',)", "P('x',)"]),
    "vmap_dus": ("float32[2@x,10,8@y]", "P('x', None, 'y')", ["P('x', None, 'y')", "P('x', 'y')"]),
    "dus": ("float32[16@x]", "P('x',)", ["P('x',)", "P('x',)"]),
    "scatter_scalar_updates": ("float32[8,4@x]", "P(None, 'x')", ["P(None, 'x')"]),
    "reduce_window_max": ("float32[4@x,4@y,4]", "P('x', 'y')", ["P('x', 'y')"]),
    "reduce_window_sum": ("float32[4@x,8@y,2]", "P('x', 'y')", ["P('x', 'y')"]),
    "conv": ("float32[4@x,8@y,5]", "P('x', 'y')", ["P('x', 'y')"]),
    "top_k": ("float32[4@x,8@y,2]", "P('x', 'y')", ["P('x', 'y')"]),
    "reshape_size_one": ("float32[1,4@y,8]", "P(None, 'y')", ["P(None, 'y')"]),
    "map_one_batch": ("float32[4@x,8@y,4]", "P('x', 'y')", ["P('x', 'y')"]),
    "roll_batched_shift": ("float32[4@x,8@y,4]", "P('x', 'y')", ["P('x', 'y')"]),
    "get_out_sharding_longer_spec": ("float32[]", "P()", ["P()"]),
    "percentile_out_sharding": ("float32[]", "P()", ["P('x',)"]),
    # an unsplit type is a replicated layout; the cotangent of the update is unsplit
    "dus_vmap_update_slice": ("float32[2,8@x]", "P(None, 'x')", ["P()", "P()", "P(None, 'x')"]),
}


def _drop_trailing_none(spec: str) -> str:
  while ", None)" in spec:
    spec = spec.replace(", None)", ")")
  # (an unsplit layout prints as P() or with a None per dimension: the two are equal)
  return spec.replace("P('x')", "P('x',)").replace("P(None)", "P()")


@pytest.fixture(scope="module")
def hlox_results():
  scope = {"np": np}
  exec(PROGRAM_RUNNER, scope)
  return scope["run_programs"](hlox, jnp, SCATTER_ARGS, PROGRAMS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scatter_types_and_layouts(hlox_results, name):
  got = hlox_results[name]
  assert len(got) == 5, got
  inside, layout, grad_layouts = EXPECTED[name]
  assert got[0] == inside
  assert _drop_trailing_none(got[1]) == _drop_trailing_none(layout)
  assert [_drop_trailing_none(g) for g in got[2]] == [_drop_trailing_none(g)
                                                       for g in grad_layouts]


def test_scatter_values_are_right(hlox_results):
  operand = np.arange(160.0, dtype=np.float32).reshape(2, 10, 8)
  updates = np.arange(16.0, dtype=np.float32).reshape(2, 8) + 1
  want = operand.copy()
  want[0, 2] = updates[0]
  want[1, 3] = updates[1]
  np.testing.assert_array_equal(np.asarray(hlox_results["vmap_set"][3]), want)
  np.testing.assert_array_equal(np.asarray(hlox_results["vmap_dus"][3]), want)
  want_add = operand.copy()
  want_add[0, 2] += updates[0]
  want_add[1, 3] += updates[1]
  np.testing.assert_array_equal(np.asarray(hlox_results["vmap_add"][3]), want_add)
  # d/d operand of sum(x.at[i].set(y)): zero where overwritten; d/d updates: ones
  g_op = np.ones_like(operand)
  g_op[0, 2] = g_op[1, 3] = 0
  np.testing.assert_array_equal(np.asarray(hlox_results["vmap_set"][4][0]), g_op)
  np.testing.assert_array_equal(np.asarray(hlox_results["vmap_set"][4][1]), np.ones((2, 8)))
  v = np.arange(16.0)
  v[3:11] = np.arange(8.0) + 1
  np.testing.assert_array_equal(np.asarray(hlox_results["dus"][3]), v)


@pytest.mark.parametrize("name", ["conv_split_features", "top_k_split_axis",
                                  "roll_split_axis"])
def test_a_split_the_rule_cannot_resolve_is_an_error(hlox_results, name):
  assert hlox_results[name][0] == "ShardingTypeError", hlox_results[name]


def test_window_reductions_and_convolutions_compute_the_right_values(hlox_results):
  img = np.arange(128.0, dtype=np.float32).reshape(4, 8, 4)
  np.testing.assert_array_equal(np.asarray(hlox_results["reduce_window_max"][3]),
                                img.reshape(4, 4, 2, 4).max(2))
  np.testing.assert_array_equal(np.asarray(hlox_results["reduce_window_sum"][3]),
                                img.reshape(4, 8, 2, 2).sum(3))
  padded = np.pad(img, ((0, 0), (1, 1), (0, 0)))
  want = sum(padded[:, i:i + 8] for i in range(3)).sum(-1, keepdims=True).repeat(5, -1)
  np.testing.assert_allclose(np.asarray(hlox_results["conv"][3]), want, rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(hlox_results["top_k"][3]), img[..., ::-1][..., :2])
  np.testing.assert_array_equal(np.asarray(hlox_results["map_one_batch"][3]), img * 2)
  shifts = np.arange(8).reshape(4, 2)[:, 0]
  np.testing.assert_array_equal(np.asarray(hlox_results["roll_batched_shift"][3]),
                                np.stack([np.roll(r, s, 1) for r, s in zip(img, shifts)]))


def test_split_results_are_constrained_in_the_lowered_program_as_jax_does():
  mesh = hlox.make_mesh((2, 2), ("x", "y"))
  P = hlox.sharding.PartitionSpec
  with hlox.sharding.set_mesh(mesh):
    x = hlox.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), P("x", "y"))
    text = hlox.jit(lambda a: jnp.sin(a * 2).sum(0)).lower(x).as_text()
    # the broadcast scalar (an operand of the product), the product, the sine, the sum (and
    # the argument's own annotation)
    assert text.count("sdy.sharding_constraint") == 4
    assert text.count('<@mesh, [{"x"}, {"y"}]>') == 4 and '<@mesh, [{"y"}]>' in text
    out = hlox.jit(lambda a: jnp.sin(a * 2).sum(0))(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(16.0).reshape(8, 2) * 2).sum(0),
                               rtol=1e-5)
    unsplit = hlox.device_put(np.ones((8, 2), np.float32), P())
    assert "sdy.sharding_constraint" not in hlox.jit(lambda a: a * 2).lower(unsplit).as_text()


def test_vmap_inputs_split_inconsistently_are_jax_errors(hlox_results):
  kind, message = hlox_results["vmap_mapped_split_differs"]
  assert kind == "ValueError" and message == (
      "Mapped away dimension of inputs passed to vmap should be sharded the same. Got "
      "inconsistent axis specs: 'x' vs None")
  kind, message = hlox_results["vmap_unmapped_split_over_mapped_axis"]
  assert kind == "ValueError" and message.startswith(
      "Unmapped values passed to vmap cannot be sharded along the mesh axis you are vmapping "
      "over. Got type: float32[4,8@y]")


def test_percentile_with_out_sharding_sorts_a_split_dimension(hlox_results):
  assert hlox_results["percentile_out_sharding"][3] == 7.5


def test_an_update_split_unlike_its_operand_is_an_error(hlox_results):
  kind, message = hlox_results["dus_mismatch"]
  assert kind == "ShardingTypeError"
  assert message.startswith("dynamic_update_slice operand sharding must be equal to update "
                            "sharding")


@pytest.mark.jax_oracle
def test_agrees_with_jax(hlox_results):
  pytest.importorskip("jax", reason="JAX is not installed (the oracle)")
  want = run_in_jax(JAX_SCRIPT, [SCATTER_ARGS, PROGRAMS])
  for name, *_ in PROGRAMS:
    got = hlox_results[name]
    if len(want[name]) == 2:  # an error
      assert got[0] == want[name][0], (name, got)
      continue
    assert got[0] == want[name][0], (name, got, want[name])
    assert _drop_trailing_none(got[1]) == _drop_trailing_none(want[name][1]), name
    assert [_drop_trailing_none(g) for g in got[2]] == [_drop_trailing_none(g)
                                                         for g in want[name][2]], name
    np.testing.assert_allclose(np.asarray(got[3]), np.asarray(want[name][3]), rtol=1e-6)
    for a, b in zip(got[4], want[name][4]):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


# --- JAX's errors and reports around shardings ----------------------------------------------

def test_jax_texts_for_placement_errors():
  P = hlox.sharding.PartitionSpec
  with pytest.raises(ValueError, match="Please set a mesh via `jax.set_mesh` if a "
                                       "PartitionSpec is passed to device_put"):
    hlox.device_put(np.arange(8), P("x"))
  with hlox.sharding.set_mesh(hlox.make_mesh((2,), ("x",))):
    with pytest.raises(ValueError, match=r"Length of sharding.spec \(4\) must be equal to "
                                         r"aval's ndim \(3\)"):
      hlox.sharding.reshard(np.zeros((8, 4, 2)), P(None, None, None, "x"))
    # unsplit entries past the rank are dropped, as JAX does
    out = hlox.sharding.reshard(np.arange(8.0), P("x", None))
    assert out.sharding.spec == P("x")
    np.testing.assert_array_equal(np.asarray(out), np.arange(8.0))
  a = hlox.device_put(np.arange(8), hlox.devices()[0])
  b = hlox.device_put(np.arange(8), hlox.devices()[1])
  with pytest.raises(ValueError, match=r"Received incompatible devices for jitted computation"
                                       r"\. Got argument.*of concatenate with shape int32\[8\]"):
    jnp.concatenate([a, b])
  with pytest.raises(ValueError, match="Received incompatible devices"):
    jnp.array(a, device=hlox.devices()[1])
  np.testing.assert_array_equal(np.asarray(jnp.array(a, device=hlox.devices()[0])),
                                np.arange(8))


def test_eager_results_laid_out_as_an_operand_report_its_sharding():
  P, NS = hlox.sharding.PartitionSpec, hlox.sharding.NamedSharding
  mesh = hlox.make_mesh((1, 8, 1), ("x", "y", "z"),
                        axis_types=(hlox.sharding.AxisType.Auto,) * 3)
  x = hlox.device_put(jnp.arange(32).reshape(1, -1, 1), NS(mesh, P("x", "y", "z")))
  y = x + 1
  assert y.sharding == x.sharding
  np.testing.assert_array_equal(np.asarray(y), np.arange(32).reshape(1, -1, 1) + 1)


def test_traced_in_avals_are_positional_and_keyword():
  traced = hlox.jit(lambda x, y=1: x * y).trace(jnp.arange(8, dtype=jnp.int32), y=2)
  args, kwargs = traced.in_avals
  assert len(args) == 1 and args[0].shape == (8,) and set(kwargs) == {"y"}


@pytest.mark.parametrize("arr_spec, type_spec", [(("x", "y"), ("x", None)),
                                                 ((("x", "y"),), ("x", None)),
                                                 (("y",), (None, None))])
def test_size_one_mesh_axes_left_out_of_types_when_asked(arr_spec, type_spec):
  from hlox.config import remove_size_one_mesh_axis_from_type
  P = hlox.sharding.PartitionSpec
  mesh = hlox.make_mesh((2, 1), ("x", "y"))
  host = np.arange(16).reshape(8, 2)
  with hlox.sharding.set_mesh(mesh), remove_size_one_mesh_axis_from_type(True):
    arr = hlox.device_put(host, P(*arr_spec))
    seen = []

    def f(x):
      seen.append((x.aval.sharding.spec, (x * 2).aval.sharding.spec))
      # an assert under all-Explicit axes, comparing types without the size-1 axis
      return hlox.lax.with_sharding_constraint(x * 2, P(*arr_spec))
    out = hlox.jit(f)(arr)
  assert seen == [(P(*type_spec), P(*type_spec))]
  assert out.sharding == hlox.sharding.NamedSharding(mesh, P(*type_spec))
  np.testing.assert_array_equal(np.asarray(out), host * 2)
  # off by default: the size-1 axis stays in the type
  with hlox.sharding.set_mesh(mesh):
    assert str(hlox.typeof(hlox.device_put(host, P("x", "y")))) == "int32[8@x,2@y]"


def test_lowering_takes_types_and_the_abstract_mesh_in_effect():
  from hlox.core.avals import ShapedArray
  aval = ShapedArray((8,), np.int32)
  text = hlox.jit(lambda x, y: x * y).lower(aval, aval).as_text()
  assert "mhlo.sharding" not in text and "sdy.sharding" not in text
  explicit = hlox.sharding.AbstractMesh((2,), ("x",), (hlox.sharding.AxisType.Explicit,))
  P, NS = hlox.sharding.PartitionSpec, hlox.sharding.NamedSharding
  f = hlox.jit(lambda x: x * 2)
  for inp in (hlox.ShapeDtypeStruct((8, 2), np.float32),
              hlox.ShapeDtypeStruct((8, 2), np.float32, sharding=NS(explicit, P("x")))):
    with hlox.sharding.use_abstract_mesh(explicit):
      lowered = f.trace(inp).lower(lowering_platforms=("tpu",))
    assert "mhlo.num_partitions = 2" in lowered.as_text()
  # and a program lowered so still computes: over the devices realizing the mesh
  with hlox.sharding.set_mesh(hlox.make_mesh((2,), ("x",))):
    out = f(hlox.device_put(np.ones((8, 2), np.float32), P("x")))
  np.testing.assert_array_equal(np.asarray(out), np.full((8, 2), 2.0))


def test_out_shardings_not_a_prefix_of_the_results_lists_every_mismatch():
  x = jnp.ones([])
  mesh = hlox.sharding.Mesh(np.array(hlox.devices()[:2]), ("x",))
  with mesh, pytest.raises(ValueError, match=r"Mismatch details \(2 found\)"):
    hlox.jit(lambda v: v, out_shardings={"a": [None, None], "b": (None, None)})(
        {"a": x, "b": x})
  whole = hlox.sharding.NamedSharding(mesh, hlox.sharding.PartitionSpec())
  out = hlox.jit(lambda v: v, out_shardings={"a": whole, "b": whole})({"a": x, "b": x * 2})
  assert float(out["b"]) == 2.0 and out["a"].sharding == whole
