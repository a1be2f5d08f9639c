"""What tracing keeps and what it lets go, checked against JAX by what programs print:
constants a traced function closes over are one constant per array object (however often
``jnp.array``/``jnp.sum`` convert it), arrays closed over by ``cond`` branches and custom
derivatives die with their functions, ``clear_cache`` frees a jitted function's
executables, a host array is freed with the last Array made from it, ``Compiled.args_info``
leaves the constants out, and ``make_jaxpr``'s function is named for what it makes."""
import gc
import weakref

import numpy as np
import pytest

import hlox
from hlox.cache import PerFunctionCache
from tests.util import printed_here, printed_in_jax

_PROGRAMS = {
    # jnp.array of a NumPy array is the array's own constant when traced
    "dedup_consts": """
c = np.ones(3).astype(np.float32)
j = m.make_jaxpr(lambda: (jnp.array(c), jnp.sum(c), c, jnp.array(c), jnp.sum(c), c))()
print(j)
print(len(j.consts))
""",
    "array_of_numpy_in_jit": """
c = np.arange(4, dtype=np.int32)
print(m.make_jaxpr(lambda x: jnp.array(c) + jnp.asarray(c) + x)(np.int32(1)))
print(m.jit(lambda x: jnp.array(c) * x)(np.int32(2)))
""",
    "stage_is_no_equation": """
c = np.ones(3, np.float32)
print(m.make_jaxpr(lambda: (m.lax.stage(c), m.lax.stage(c)))())
print(m.make_jaxpr(lambda x: (m.lax.stage(c) + x, m.lax.stage(2.)))(1.))
print(m.lax.stage(c), m.jit(lambda: m.lax.stage(c))())
""",
    "non_scalar_const": """
print(m.make_jaxpr(lambda x: (x, np.zeros(3, dtype=jnp.float32)))(jnp.float32(0.)))
""",
    "make_jaxpr_name": """
def foo(x, y, z):
  return x + y + z
j = m.make_jaxpr(foo)
print(j.__name__, j.__qualname__)
""",
    "cond_branch_leak": """
import gc
def leak():
  data = m.device_put(np.zeros(1024, np.float32) + 1)
  def g():
    return m.lax.cond(True, m.jit(lambda: data[0]), lambda: data[1])
  jg = m.jit(g)
  print(jg())
  jg.clear_cache()
  del g, jg, data
  gc.collect()
gc.collect()
base = len(m.live_arrays())
for _ in range(3):
  leak()
  print(len(m.live_arrays()) - base)
""",
    "scan_body_leak": """
import gc
def leak():
  data = m.device_put(np.arange(8, dtype=np.float32))
  out = m.lax.scan(lambda c, x: (c + data[0], x * data[1]), 0., jnp.ones(3))
  print(out[0], out[1])
  del data, out
  gc.collect()
gc.collect()
base = len(m.live_arrays())
for _ in range(2):
  leak()
  print(len(m.live_arrays()) - base)
""",
    "fori_loop_and_map_leak": """
import gc
def leak():
  data = m.device_put(np.arange(8, dtype=np.float32))
  print(m.lax.fori_loop(0, 3, lambda i, c: c + data[i], 0.))
  print(m.lax.fori_loop(0, m.numpy.int32(3), lambda i, c: c * data[2], 1.))
  print(m.lax.map(lambda x: x * data[1], jnp.ones(2)))
  print(m.lax.map(lambda x: x * data[4], jnp.ones(4), batch_size=2))
  del data
  gc.collect()
gc.collect()
base = len(m.live_arrays())
for _ in range(2):
  leak()
  print(len(m.live_arrays()) - base)
""",
    "compiled_args_info": """
const = jnp.arange(16.) + 42.
f = m.jit(lambda x, y: const[0:8] + x, donate_argnums=1)
c = f.lower(jnp.arange(8.), jnp.ones(3)).compile()
for info in m.tree_util.tree_leaves(c.args_info):
  print(info.shape, info.dtype, info.donated)
print(c.in_avals)
c = m.pmap(lambda x: x * 2).lower(jnp.ones((1, 3))).compile()
print([(i.shape, i.donated) for i in m.tree_util.tree_leaves(c.args_info)])
""",
    "custom_jvp_leak": """
import gc
def leak():
  data = m.device_put(np.arange(8, dtype=np.float32))
  @m.custom_jvp
  def f(x):
    return x * data[3]
  f.defjvp(lambda p, t: (f(p[0]), t[0] * data[3]))
  jf = m.jit(f)
  print(jf(2.), m.grad(f)(2.))
  jf.clear_cache()
  del f, jf, data
  gc.collect()
gc.collect()
base = len(m.live_arrays())
for _ in range(2):
  leak()
  print(len(m.live_arrays()) - base)
""",
    "clear_cache_frees_executables": """
import gc
@m.jit
def f(x, y):
  return x + y
client = m.devices()[0].client
gc.collect()
before = len(client.live_executables())
print(f(1, 2))
gc.collect()
print(len(client.live_executables()) - before)
f.clear_cache()
gc.collect()
print(len(client.live_executables()) - before)
print(f(3, 4))
""",
}


@pytest.fixture(scope="module")
def jax_printed():
  pytest.importorskip("jax")
  return printed_in_jax(_PROGRAMS)


@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_prints_as_jax(name, jax_printed):
  assert printed_here(_PROGRAMS[name]) == jax_printed[name]


def test_host_array_freed_with_its_array():
  # In a fresh process: any later call into jaxlib would release the array anyway; only
  # the collection itself must do it here.
  import subprocess
  import sys
  script = """
import gc, weakref
import numpy as np
import hlox
x_np = np.arange(10, dtype='int32')
x = hlox.device_put(x_np)
ref = weakref.ref(x_np)
del x_np, x
gc.collect()
print(ref() is None)
"""
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
  assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_make_jaxpr_module_is_hlox():
  def foo(x):
    return x
  assert hlox.make_jaxpr(foo).__module__ == "hlox"


def test_per_function_cache_lets_functions_go():
  cache = PerFunctionCache()
  data = np.ones(3)

  def fun():
    return data

  cache.put(fun, ("k",), [data])
  assert cache.get(fun, ("k",)) == [data]
  assert cache.get(fun, ("other",)) is None
  ref = weakref.ref(fun)
  del fun
  gc.collect()
  assert ref() is None  # the entry held no reference to its function
  assert len(cache._tables) == 0


def test_per_function_cache_shares_other_callables():
  import functools
  cache = PerFunctionCache()
  p = functools.partial(max, 1)
  cache.put(p, (1,), "v")
  assert cache.get(p, (1,)) == "v"
  assert cache.get(functools.partial(min, 1), (1,)) is None
  with pytest.raises(TypeError):
    cache.get(p, ([],))


def test_clear_cache_keeps_other_functions_programs():
  # Another function compiled to the same program keeps its executable after the first
  # function's caches are cleared, and both still compute.
  f = hlox.jit(lambda x: x * 3 + 1)
  g = hlox.jit(lambda x: x * 3 + 1)
  x = np.arange(4, dtype=np.float32)
  np.testing.assert_array_equal(f(x), x * 3 + 1)
  np.testing.assert_array_equal(g(x), x * 3 + 1)
  f.clear_cache()
  np.testing.assert_array_equal(g(x), x * 3 + 1)
  np.testing.assert_array_equal(f(x), x * 3 + 1)


def test_clear_cache_of_checked_and_partitioned_calls():
  # Entries of other kinds (NaN-checked calls, programs over a mesh) are cleared too, and
  # the function computes again afterwards.
  f = hlox.jit(lambda x: x * 2)
  with hlox.debug_nans(True):
    assert float(f(1.)) == 2.
    f.clear_cache()
    assert float(f(2.)) == 4.
  mesh = hlox.sharding.Mesh(np.array(hlox.devices()[:1]), ("x",))
  out = hlox.sharding.NamedSharding(mesh, hlox.sharding.PartitionSpec())
  g = hlox.jit(lambda x: x + 1, out_shardings=out)
  np.testing.assert_array_equal(g(np.ones(2)), [2., 2.])
  g.clear_cache()
  np.testing.assert_array_equal(g(np.ones(2)), [2., 2.])
