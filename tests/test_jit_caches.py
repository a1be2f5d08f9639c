"""jit's caches are keyed as JAX keys them: on the wrapped function (weakly) and its static
configuration, not on the wrapper; executables on the lowered program."""
import functools
import gc
import weakref

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import monitoring


def _x(n=4):
  return jnp.asarray(np.arange(n, dtype=np.float32))


def test_new_wrapper_of_the_same_function_is_a_cache_hit():
  traces = []

  def f(x):
    traces.append(1)
    return jnp.sin(x) * 2.0

  x = _x()
  with monitoring.count_events() as counts:
    outs = [hlox.jit(f)(x) for _ in range(4)]
  assert len(traces) == 1 and counts["compile"] == 1
  for out in outs:
    np.testing.assert_allclose(out, np.sin(np.arange(4)) * 2.0, rtol=1e-6)


def test_partials_share_by_function_args_and_keywords():
  traces = []

  def g(k, x, *, scale):
    traces.append(k)
    return x * k * scale

  x = _x()
  for _ in range(3):
    np.testing.assert_allclose(hlox.jit(functools.partial(g, 2.0, scale=3.0))(x),
                               np.arange(4) * 6.0)
  assert traces == [2.0]
  np.testing.assert_allclose(hlox.jit(functools.partial(g, 5.0, scale=1.0))(x),
                             np.arange(4) * 5.0)
  assert traces == [2.0, 5.0]
  # Unhashable partial arguments (a dict): caches of its own, still correct.
  def lookup(table, x):
    return x * table["a"]
  for _ in range(2):
    np.testing.assert_allclose(hlox.jit(functools.partial(lookup, {"a": 4.0}))(x),
                               np.arange(4) * 4.0)


def test_static_configuration_is_part_of_the_key():
  traces = []

  def f(x, n):
    traces.append(n)
    return x * n

  x = _x()
  a = hlox.jit(f, static_argnums=1)(x, 3)
  b = hlox.jit(f, static_argnums=(1,))(x, 3)   # the same configuration, spelled otherwise
  c = hlox.jit(f)(x, 3.0)                       # n traced: another configuration
  assert traces[:1] == [3] and len(traces) == 2
  for out in (a, b, c):
    np.testing.assert_allclose(out, np.arange(4) * 3.0)


def test_same_program_from_a_retrace_reuses_the_executable():
  x = _x()
  hlox.clear_caches()  # another test may have compiled the same small program already
  with monitoring.count_events() as counts:
    for _ in range(3):
      hlox.jit(lambda y: y * 3.0 + 1.0)(x)   # a new lambda each time: retraced, compiled once
  assert counts["jit_trace"] == 3 and counts["compile"] == 1


def test_lower_compile_then_call_compiles_once():
  def f(x):
    return jnp.cos(x) + 1.0

  x = _x(5)
  jitted = hlox.jit(f)
  with monitoring.count_events() as counts:
    compiled = jitted.lower(x).compile()
    via_call = jitted(x)
  assert counts["compile"] == 1
  np.testing.assert_allclose(compiled(x), via_call)


def test_wrapped_function_is_freed():
  def make():
    return lambda y: y * 3.0

  f = make()
  ref = weakref.ref(f)
  hlox.jit(f)(_x())
  del f
  gc.collect()
  assert ref() is None


def test_a_changed_global_is_seen_only_on_a_cache_miss():
  # JAX's documented behaviour: the trace is cached, so a global read at trace time is frozen.
  state = {"scale": 2.0}

  def f(x):
    return x * state["scale"]

  x = _x()
  np.testing.assert_allclose(hlox.jit(f)(x), np.arange(4) * 2.0)
  state["scale"] = 10.0
  np.testing.assert_allclose(hlox.jit(f)(x), np.arange(4) * 2.0)
  np.testing.assert_allclose(hlox.jit(f)(_x(3)), np.arange(3) * 10.0)


def test_toggling_x64_keeps_each_settings_executables():
  # Entries made under one setting are never used under the other, and none is lost: the
  # usual `with enable_x64():` around a check recompiles nothing the second time.
  from hlox.config import enable_x64
  traces = []

  def f(x):
    traces.append(1)
    return x * 2 + 1

  g = hlox.jit(f)
  data = np.arange(3.0)
  with monitoring.count_events() as counts:
    for _ in range(3):
      assert g(data).dtype == np.float32 and jnp.sin(data).dtype == np.float32
      with enable_x64():
        assert g(data).dtype == np.float64 and jnp.sin(data).dtype == np.float64
        np.testing.assert_array_equal(g(data), data * 2 + 1)
  assert len(traces) == 2
  # g and sin, once per setting (sin may run as a jitted function or an eager kernel)
  assert counts["compile"] + counts["eager_compile"] <= 4


# --- the shortest cache-hit path: positional leaves keyed on their signatures alone -------

def _count_slow_calls(monkeypatch):
  calls = []
  slow = hlox.api.JitWrapped._call_slow

  def counted(self, args, kwargs):
    calls.append(args)
    return slow(self, args, kwargs)
  monkeypatch.setattr(hlox.api.JitWrapped, "_call_slow", counted)
  return calls


def test_positional_leaves_hit_without_the_slow_path(monkeypatch):
  calls = _count_slow_calls(monkeypatch)
  f = hlox.jit(lambda a, b, c: (a * b + c, a - c))
  x, y = _x(), _x() + 1
  ref = f(x, y, 2.0)  # the miss
  assert len(calls) == 1
  for value in (2.0, 3.5, -0.0):  # Python scalars of new values: the same program
    out = f(x, y, value)
    np.testing.assert_allclose(out[0], np.asarray(x) * np.asarray(y) + value)
  out = f(x, y, np.float32(3.0))  # a NumPy scalar is another signature: one more miss
  np.testing.assert_allclose(out[1], np.asarray(x) - 3.0)
  for _ in range(3):
    f(x, y, np.float32(1.0))
    f(x, y, np.ones(4, np.float32))
  assert len(calls) == 3 and f._cache_size() == 3
  np.testing.assert_allclose(ref[0], np.asarray(x) * np.asarray(y) + 2.0)


def test_shortest_path_keeps_structure_and_errors():
  f = hlox.jit(lambda a: hlox.tree_util.tree_map(lambda v: v * 2, a))
  f(np.ones(2, np.float32))  # cached for a NumPy array...
  out = f([np.float32(1.0), np.float32(2.0)])  # ...a list of the same length is a pytree
  assert isinstance(out, list) and [float(v) for v in out] == [2.0, 4.0]
  x = _x()
  f(x)
  x.delete()
  with np.testing.assert_raises_regex(RuntimeError, "deleted"):
    f(x)
  with np.testing.assert_raises_regex(TypeError, "as an abstract array"):
    f("text")


def test_shortest_path_with_static_arguments(monkeypatch):
  calls = _count_slow_calls(monkeypatch)
  f = hlox.jit(lambda x, n, y: x * n + y, static_argnums=(1,))
  x = _x()
  assert float(f(x, 2, 1.0)[1]) == 3.0
  assert float(f(x, 2, 5.0)[1]) == 7.0  # a new scalar value: a hit
  assert len(calls) == 1
  out = f(x, 2.0, 1.0)  # 2.0 is another static value than 2 (type and value, as JAX)
  assert out.dtype == np.float32 and len(calls) == 2
  assert float(f(x, True, 1.0)[1]) == 2.0 and len(calls) == 3
  f(x, 3, 1.0)
  f(x, 3, 1.0)
  assert len(calls) == 4 and f._cache_size() == 4
  with np.testing.assert_raises_regex(ValueError, "Non-hashable static arguments"):
    f(x, [2], 1.0)
  # The wrapper's own default for a static argument not passed: no static in the key.
  g = hlox.jit(lambda x, axis=0: x.sum(axis), static_argnums=(1,))
  m = jnp.ones((2, 3))
  assert g(m).shape == (3,) and g(m, 1).shape == (2,) and g(m).shape == (3,)


def test_pytree_and_leaf_calls_alternate_on_the_cache_hit_paths(monkeypatch):
  calls = _count_slow_calls(monkeypatch)
  f = hlox.jit(lambda a, b: hlox.tree_util.tree_map(lambda v: v + b, a))
  x = _x()
  for _ in range(3):
    tree = f({"w": x, "v": [x, x]}, 1.0)  # pytrees: the general cache-hit path
    leaf = f(x, 2.0)                      # leaves: the shortest one again
    none = f((x, None), 3.0)
    np.testing.assert_allclose(tree["v"][1], np.asarray(x) + 1.0)
    np.testing.assert_allclose(leaf, np.asarray(x) + 2.0)
    assert none[1] is None
    np.testing.assert_allclose(none[0], np.asarray(x) + 3.0)
  assert len(calls) == 3


def test_programs_over_a_mesh_take_the_shortest_path(monkeypatch):
  # A program partitioned over a mesh is called whole from the positional-leaves path (no
  # flattening, no second lookup); deleted arguments still raise as the slow path would.
  calls = _count_slow_calls(monkeypatch)
  P = hlox.sharding.PartitionSpec
  mesh = hlox.sharding.Mesh(np.array(hlox.devices()[:4]), ("i",))
  f = hlox.jit(hlox.shard_map(lambda v: hlox.lax.psum(v, "i"), mesh=mesh, in_specs=P("i"),
                              out_specs=P("i")))
  x = hlox.device_put(np.ones((4, 8), np.float32), hlox.sharding.NamedSharding(mesh, P("i")))
  y = f(f(x))  # (the result's layout may be another signature than the argument's)
  warm = len(calls)
  flattened = []
  real = hlox.api.flatten_fast
  monkeypatch.setattr(hlox.api, "flatten_fast", lambda t: flattened.append(t) or real(t))
  for _ in range(3):
    y = f(y)
  np.testing.assert_allclose(np.asarray(y), np.full((4, 8), 4.0 ** 5))
  assert len(calls) == warm and not flattened
  y.delete()
  with pytest.raises(hlox.errors.DeletedArrayError, match="deleted"):
    f(y)
