"""The JAX-private names that libraries built on JAX (flax, chex, equinox, jaxtyping)
import from ``jax._src``, checked against JAX itself: each program below is written against
``m`` (``jax`` in the oracle, ``hlox`` here) and must print the same in both."""
import importlib
import sys

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core import source_info
from tests.util import printed_here, printed_in_jax

_PRELUDE = """
import dataclasses, importlib
src = lambda name: importlib.import_module(m.__name__ + "._src." + name)
"""

_PROGRAMS = {
    # flax's nnx: ``type(x) in _registry`` tells registered node types from leaves.
    "tree_registry": """
tu = src("tree_util")
class C:
  def __init__(self, a, b):
    self.a, self.b = a, b
m.tree_util.register_pytree_node(C, lambda c: ((c.a,), c.b), lambda aux, ch: C(ch[0], aux))
@dataclasses.dataclass
class D:
  x: int
  y: str
m.tree_util.register_dataclass(D, data_fields=["x"], meta_fields=["y"])
print(C in tu._registry, D in tu._registry, int in tu._registry)
print([t in tu._registry for t in (tuple, list, dict, type(None))])
print(tu._registry[dict].to_iter({"b": 1, "a": 2}), tu._registry[dict].from_iter(("a", "b"), (2, 1)))
print(tu._registry[list].to_iter([1, 2]), tu._registry[tuple].from_iter(None, [3, 4]))
children, aux = tu._registry[C].to_iter(C(3, "k"))
print(children, aux, tu._registry[C].from_iter(aux, children).a)
children, aux = tu._registry[D].to_iter(D(5, "s"))
print(children, aux, tu._registry[D].from_iter(aux, children))
""",
    # equinox: embedding lookups catch the promotion error by its private name.
    "dtypes": """
d = src("dtypes")
print(d.TypePromotionError is m.dtypes.TypePromotionError, d.DType is np.dtype)
print([d.supports_inf(t) for t in (np.float32, np.int32, jnp.bfloat16, jnp.float8_e4m3fn,
                                   jnp.float8_e5m2, np.complex64, np.bool_)])
print(isinstance(m.random.key(0).dtype, d.ExtendedDType), d.issubdtype(m.random.key(0).dtype, d.extended))
class fp8_meta(d.extended):
  pass
@dataclasses.dataclass(frozen=True)
class Wrapper(d.ExtendedDType):
  float_dtype: d.DType
  type: type = fp8_meta
print(d.issubdtype(Wrapper(np.float32).type, d.extended), Wrapper(np.float32).float_dtype)
""",
    # flax's nnx: references are told apart by their abstract type.
    "abstract_ref": """
AbstractRef = src("state.types").AbstractRef
r = m.new_ref(jnp.zeros(3))
print(isinstance(m.typeof(r), AbstractRef), isinstance(m.typeof(jnp.zeros(3)), AbstractRef))
print(m.typeof(r), m.jit(lambda r: print(m.typeof(r)) or r[...] + 1)(r))
""",
    # flax's nnx.checkify wraps checkify through the private module.
    "checkify": """
importlib.import_module(m.__name__ + ".experimental.checkify")
ck = src("checkify")
def f(x):
  m.experimental.checkify.check(x > 0, "x must be positive, got {}", x)
  return x * 2
err, out = m.jit(ck.checkify(f, errors=ck.user_checks))(jnp.float32(-1.0))
print(out, err.get())
err, out = ck.checkify(f)(jnp.float32(2.0))
print(out, err.get(), issubclass(ck.JaxException, Exception))
""",
    # chex's set_n_cpu_devices: the started backends by platform.
    "backends": """
jnp.ones(2).block_until_ready()
b = src("xla_bridge")._backends
print(sorted(k for k in b if k == "cpu"), b["cpu"].platform)
""",
    # equinox's filter_jit waits for ordered callbacks with wait_for_tokens.
    "wait_for_tokens": """
got = []
def step(x):
  m.experimental.io_callback(lambda v: got.append(float(v)), None, x, ordered=True)
  return x + 1
m.jit(step)(jnp.float32(1.0))
src("dispatch").wait_for_tokens()
print(got)
""",
    # chex's restrict_backends wraps the compile step to refuse a platform.
    "compile_hook": """
comp = src("compiler")
inner = comp.backend_compile_and_load
seen = []
def refusing(backend, *args, **kwargs):
  seen.append(backend.platform)
  raise RuntimeError("compiling for " + backend.platform + " refused")
comp.backend_compile_and_load = refusing
try:
  m.jit(lambda x: x * 3 + 1)(jnp.arange(3.0))
except RuntimeError as e:
  print(e)
finally:
  comp.backend_compile_and_load = inner
print(seen, m.jit(lambda x: x * 3 + 1)(jnp.arange(3.0)))
""",
    # equinox's vmap-able primitives move avals in and out of the batch.
    "mapped_aval": """
ex = importlib.import_module(m.__name__ + ".extend.core")
a = m.core.ShapedArray((2, 3, 4), np.float32)
print(ex.mapped_aval(3, 1, a).shape, ex.mapped_aval(2, 0, a).shape, ex.mapped_aval(2, None, a).shape)
print(ex.unmapped_aval(5, 2, a).shape, ex.unmapped_aval(5, 0, a).dtype, ex.unmapped_aval(5, None, a).shape)
""",
    # flax's lifted scan: a body flattened through linear_util/api_util, partially
    # evaluated with every input unknown to find the outputs that do not depend on them.
    "flatten_and_partial_eval": """
lu = importlib.import_module(m.__name__ + ".extend.linear_util")
au = importlib.import_module(m.__name__ + ".api_util")
pe = importlib.import_module(m.__name__ + ".interpreters.partial_eval")
def body(c, x):
  return {"known": jnp.arange(3.0) * 2, "dep": c * x + 1}, x.sum()
in_tree = m.tree_util.tree_structure((1.0, jnp.zeros(2)))
dbg = au.debug_info("test scan", body, (in_tree,), {})
f_flat, out_tree = au.flatten_fun_nokwargs(lu.wrap_init(body, debug_info=dbg), in_tree)
avals = [m.core.ShapedArray((), np.float32), m.core.ShapedArray((2,), np.float32)]
for _ in range(2):
  try:
    jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(
        f_flat, [pe.PartialVal.unknown(a) for a in avals])
  except lu.StoreException as e:
    print("second call:", type(e).__name__)  # a flattened function runs once
    f_flat, out_tree = au.flatten_fun_nokwargs(lu.wrap_init(body, debug_info=dbg), in_tree)
    continue
  print(out_tree())
  print([pv.is_known() for pv in out_pvals], [str(pv.get_aval()) for pv in out_pvals])
  print([pv.get_known() for pv in out_pvals if pv.is_known()])
  print(len(jaxpr.invars), len(jaxpr.outvars))
f_flat, out_tree = au.flatten_fun_nokwargs(lu.wrap_init(body, debug_info=dbg), in_tree)
known_x = pe.PartialVal.known(jnp.ones(2))
jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(f_flat, [pe.PartialVal.unknown(avals[0]), known_x])
print([pv.is_known() for pv in out_pvals], out_pvals[-1].get_known())
""",
    # flax's lifted scan over a body that splits typed keys: unknown key inputs, and key
    # outputs known (split from a known key) or not.
    "partial_eval_keys": """
lu = importlib.import_module(m.__name__ + ".extend.linear_util")
au = importlib.import_module(m.__name__ + ".api_util")
pe = importlib.import_module(m.__name__ + ".interpreters.partial_eval")
k = m.random.key(0)
def body(key, x, known_key):
  return [m.random.fold_in(key[1], 1), x * 2, m.random.split(known_key), m.random.key_data(key), key]
dbg = au.debug_info("keys", body, (1, 2, 3), {})
pvals = [pe.PartialVal.unknown(m.core.ShapedArray((3,), k.dtype)),
         pe.PartialVal.known(jnp.float32(3.0)), pe.PartialVal.known(k)]
jaxpr, out_pvals, consts = pe.trace_to_jaxpr_nounits(lu.wrap_init(body, debug_info=dbg), pvals)
print([pv.is_known() for pv in out_pvals], [str(pv.get_aval()) for pv in out_pvals])
print(out_pvals[1].get_known(), m.random.key_data(out_pvals[2].get_known()))
print(len(jaxpr.invars), len(jaxpr.outvars))
""",
    # flax's struct tests: the key path of a prefix mismatch, named by the caller.
    "prefix_errors": """
tu = src("tree_util")
@m.tree_util.register_dataclass
@dataclasses.dataclass
class Pt:
  x: float
  y: object
(e,) = tu.prefix_errors(Pt(1.0, [2.0]), Pt(1.0, 2.0))
err = e("in_axes")
print(type(err).__name__, "in_axes.y" in str(err), tu.prefix_errors(Pt(0, 1), Pt(1.0, [2.0])))
print(len(tu.prefix_errors({"a": 1, "b": (1, 2)}, {"a": [3], "b": [1, 2]})))
""",
    # flax records the transformation in effect when a scope is made.
    "trace_state": """
ex = importlib.import_module(m.__name__ + ".extend.core")
s0 = ex.get_opaque_trace_state(convention="flax")
print(s0 == ex.get_opaque_trace_state(convention="flax"), s0 == 3)
inside = []
def f(x):
  inside.append(ex.get_opaque_trace_state(convention="flax"))
  inside.append(ex.get_opaque_trace_state(convention="flax"))
  return x
m.jit(f)(1.0)
print(inside[0] == inside[1], inside[0] == s0)
""",
    # flax's scan drops the batch axis from a sharding's spec.
    "named_sharding_update": """
mesh = m.make_mesh((2,), ("x",))
s = m.sharding.NamedSharding(mesh, P("x", None))
print(s.update(spec=P(None, "x")).spec, s.update(spec=(None,)).spec, s.update().spec == s.spec)
print(dict(s.update(spec=P()).mesh.shape), s.update(memory_kind="device").memory_kind)
""",
    # libraries choose code paths by the JAX version whose API they talk to.
    "version": """
print(m.__version__, m.__version_info__, m.version.__version_info__ > (0, 4, 33))
""",
}


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_printed_as_jax_prints(name):
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS, _PRELUDE)
  assert printed_here(_PROGRAMS[name], _PRELUDE) == expected[name]


def test_register_exclusion_hides_library_frames(tmp_path):
  # flax, equinox and jaxtyping register their files so that the source location of an
  # operation, and filtered tracebacks, point at the user's line instead.
  library = tmp_path / "eco_lib_for_exclusion.py"
  library.write_text("def double(x):\n  return x * 2\n")
  spec = importlib.util.spec_from_file_location("eco_lib_for_exclusion", library)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)

  def lines_of_mul():
    jaxpr = hlox.make_jaxpr(module.double)(jnp.ones(2))
    return [str(e.source_info) for e in jaxpr.jaxpr.eqns]

  tb_util = importlib.import_module("hlox._src.traceback_util")
  assert source_info.is_user_file(str(library))
  assert tb_util.include_filename(str(library))
  assert "eco_lib_for_exclusion" in lines_of_mul()[0]
  before = source_info._excluded
  try:
    tb_util.register_exclusion(str(library))
    assert not source_info.is_user_file(str(library))
    # equinox's error_if records the frames that filtered tracebacks keep: the user's, not
    # a registered library's nor hlox's.
    assert not tb_util.include_filename(str(library))
    assert not tb_util.include_filename(hlox.api.__file__)
    assert tb_util.include_frame(sys._getframe())
    assert str(library) in importlib.import_module("hlox._src.traceback_util")._exclude_paths
    assert "test_src_compat" in lines_of_mul()[0]
  finally:
    source_info._excluded = before
    importlib.import_module("hlox._src.traceback_util")._exclude_paths.remove(str(library))


def test_traceback_exclusions_are_edited_in_place(tmp_path):
  # flax hides and shows its own frames in tracebacks by adding its files to, and removing
  # them from, ``_exclude_paths``; standard-library frames stay, as in JAX.
  tb_util = importlib.import_module("hlox._src.traceback_util")
  library = tmp_path / "eco_lib_raising.py"
  library.write_text("import contextlib\n"
                     "@contextlib.contextmanager\n"
                     "def scope():\n"
                     "  yield\n"
                     "@scope()\n"  # called through contextlib's decorator frame
                     "def inner(x):\n"
                     "  raise ValueError('from the library')\n"
                     "def fail(x):\n"
                     "  return inner(x)\n")
  spec = importlib.util.spec_from_file_location("eco_lib_raising", library)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)

  def files_in_traceback(mode):
    with _filtering(mode):
      try:
        hlox.jit(module.fail)(jnp.ones(2))
      except ValueError as e:
        err = e
    files = []
    tb = err.__traceback__
    while tb is not None:
      files.append(tb.tb_frame.f_code.co_filename)
      tb = tb.tb_next
    return err, files

  _, shown = files_in_traceback("quiet_remove_frames")
  assert str(library) in shown and any(f.endswith("contextlib.py") for f in shown)
  assert not any(f.startswith(source_info._hlox_dir) for f in shown)
  tb_util._exclude_paths.append(str(library))
  try:
    err, hidden = files_in_traceback("remove_frames")
    assert str(library) not in hidden and __file__ in hidden
    assert isinstance(err.__cause__, tb_util.UnfilteredStackTrace)
  finally:
    tb_util._exclude_paths.remove(str(library))
  _, shown_again = files_in_traceback("quiet_remove_frames")
  assert shown_again == shown


class _filtering:
  def __init__(self, mode):
    self.mode = mode

  def __enter__(self):
    self.before = hlox.config.traceback_filtering
    hlox.config.update("traceback_filtering", self.mode)

  def __exit__(self, *exc):
    hlox.config.update("traceback_filtering", self.before)


def test_compile_hook_sees_each_compile():
  comp = importlib.import_module("hlox._src.compiler")
  inner, platforms = comp.backend_compile_and_load, []

  def counting(backend, *args, **kwargs):
    platforms.append(backend.platform)
    return inner(backend, *args, **kwargs)

  comp.backend_compile_and_load = counting
  try:
    out = hlox.jit(lambda x: x * 7 - 2)(jnp.arange(4.0))
  finally:
    comp.backend_compile_and_load = inner
  np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 7 - 2)
  assert platforms and set(platforms) == {"cpu"}  # the jitted program (and eager ops)
