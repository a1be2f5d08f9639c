"""jit: caching (no retrace / no recompile), static args, pytrees, donation, AOT, caches."""
import functools
import threading
from collections import namedtuple

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax, monitoring


def _ones(*shape, dtype=np.float32):
  return hlox.device_put(np.ones(shape, dtype))


def test_second_call_neither_retraces_nor_recompiles():
  traces = []

  @hlox.jit
  def f(x, y):
    traces.append(1)
    return lax.add(lax.sin(x), y)

  x, y = _ones(4), _ones(4)
  with monitoring.count_events() as counts:
    f(x, y)
    f(x, y)
    f(hlox.device_put(np.zeros(4, np.float32)), y)
  assert len(traces) == 1
  assert counts["jit_trace"] == 1 and counts["compile"] == 1
  with monitoring.count_events() as counts:
    f(_ones(5), _ones(5))  # new shape: one more trace and compile
  assert len(traces) == 2 and counts["compile"] == 1


def test_jit_matches_eager_and_returns_arrays():
  f = lambda x: lax.mul(lax.exp(x), 3.0)
  x = hlox.device_put(np.linspace(-1, 1, 7).astype(np.float32))
  out = hlox.jit(f)(x)
  assert isinstance(out, hlox.Array)
  np.testing.assert_allclose(np.asarray(out), np.asarray(f(x)), rtol=1e-6)


def test_pytrees_and_keyword_arguments_in_and_out():
  Point = namedtuple("Point", "x y")

  @hlox.jit
  def f(p, scale, *, offset):
    return {"sum": lax.add(p.x, p.y) * scale + offset, "pair": (p.x, None)}

  p = Point(_ones(2), _ones(2))
  out = f(p, 2.0, offset=np.float32(1.0))
  np.testing.assert_allclose(np.asarray(out["sum"]), [5.0, 5.0])
  assert out["pair"][1] is None
  np.testing.assert_allclose(np.asarray(out["pair"][0]), [1.0, 1.0])


def test_static_argnums_and_argnames():
  traces = []

  @functools.partial(hlox.jit, static_argnums=(1,), static_argnames=("mode",))
  def f(x, n, mode="sin"):
    traces.append((n, mode))
    for _ in range(n):
      x = lax.sin(x) if mode == "sin" else lax.cos(x)
    return x

  x = _ones(3)
  np.testing.assert_allclose(np.asarray(f(x, 2)), np.sin(np.sin(1.0)) * np.ones(3), rtol=1e-6)
  f(x, 2)
  np.testing.assert_allclose(np.asarray(f(x, 1, mode="cos")), np.cos(1.0) * np.ones(3),
                             rtol=1e-6)
  assert traces == [(2, "sin"), (1, "cos")]


def test_unhashable_static_argument_names_it():
  f = hlox.jit(lambda x, opts: x, static_argnums=1)
  with pytest.raises(ValueError, match="static argument.*list"):  # JAX's type
    f(_ones(2), [1, 2])


def test_decorator_with_partial_and_method():
  class Model:
    def __init__(self, k):
      self.k = k

    @functools.partial(hlox.jit, static_argnums=0)
    def apply(self, x):
      return lax.mul(x, float(self.k))

  np.testing.assert_allclose(np.asarray(Model(3).apply(_ones(2))), [3.0, 3.0])


def test_donation_deletes_the_donated_array():
  f = hlox.jit(lambda x, y: lax.add(x, y), donate_argnums=0)
  x, y = _ones(8), _ones(8)
  out = f(x, y)
  np.testing.assert_allclose(np.asarray(out), 2 * np.ones(8))
  assert x.is_deleted() and not y.is_deleted()
  with pytest.raises(hlox.errors.DeletedArrayError, match="deleted"):
    np.asarray(x)
  with pytest.raises(hlox.errors.DeletedArrayError, match="donated"):
    f(x, y)
  assert "tf.aliasing_output" in f.lower(_ones(8), _ones(8)).as_text()


def test_lower_as_text_and_compile():
  f = hlox.jit(lambda x: lax.sin(x))
  lowered = f.lower(_ones(3))
  text = lowered.as_text()
  assert "stablehlo.sine" in text and "func.func public @main" in text
  compiled = lowered.compile()
  np.testing.assert_allclose(np.asarray(compiled(_ones(3))), np.sin(np.ones(3)), rtol=1e-6)
  with pytest.raises(TypeError, match=r"(?s)Argument types differ.*Argument 'x' "
                     r"compiled with float32\[3\] and called with float32\[4\]"):
    compiled(_ones(4))
  with pytest.raises(TypeError, match="Function compiled with input pytree does not match"):
    compiled((_ones(3),))
  shaped = f.lower(hlox.ShapeDtypeStruct((2, 2), np.float32))
  assert "tensor<2x2xf32>" in shaped.as_text()


def test_nested_jit_lowers_to_private_function():
  inner = hlox.jit(lambda x: lax.sin(x))
  outer = hlox.jit(lambda x: lax.add(inner(x), inner(x)))
  text = outer.lower(_ones(2)).as_text()
  assert "func.func private" in text and "call @" in text
  np.testing.assert_allclose(np.asarray(outer(_ones(2))), 2 * np.sin(np.ones(2)), rtol=1e-6)


def test_keep_unused():
  f = hlox.jit(lambda x, y: lax.sin(x))
  assert "%arg1" not in f.lower(_ones(2), _ones(3)).as_text()
  g = hlox.jit(lambda x, y: lax.sin(x), keep_unused=True)
  assert "%arg1" in g.lower(_ones(2), _ones(3)).as_text()
  np.testing.assert_allclose(np.asarray(f(_ones(2), _ones(3))), np.sin(np.ones(2)), rtol=1e-6)


def test_disable_jit_runs_python():
  seen = []

  @hlox.jit
  def f(x):
    seen.append(type(x))
    return lax.neg(x)

  with hlox.disable_jit():
    out = f(_ones(2))
  assert len(seen) == 1 and issubclass(seen[0], hlox.Array) and not issubclass(seen[0], hlox._Tracer)
  np.testing.assert_allclose(np.asarray(out), [-1.0, -1.0])


def test_eval_shape():
  out = hlox.eval_shape(lambda x, y: {"z": lax.add(x, y)}, _ones(2, 3),
                        hlox.ShapeDtypeStruct((2, 3), np.float32))
  assert out["z"].shape == (2, 3) and out["z"].dtype == np.float32


def test_python_scalars_and_numpy_inputs():
  f = hlox.jit(lambda x, y: lax.mul(x, y))
  out = f(np.arange(3, dtype=np.float32), 2.0)
  np.testing.assert_allclose(np.asarray(out), [0.0, 2.0, 4.0])
  assert out.dtype == np.float32
  assert f(2.0, 3.0).weak_type


def test_clear_caches_forces_recompile():
  f = hlox.jit(lambda x: lax.cos(x))
  f(_ones(2))
  hlox.clear_caches()
  with monitoring.count_events() as counts:
    f(_ones(2))
  assert counts["compile"] == 1


def test_cache_is_bounded():
  from hlox.cache import LRUCache
  cache = LRUCache(maxsize=3)
  for i in range(10):
    cache.put(i, i)
  assert len(cache) == 3 and cache.get(9) == 9 and cache.get(0) is None


def test_threads_share_jit_cache_safely():
  f = hlox.jit(lambda x: lax.add(x, 1.0))
  results, errors = [], []

  def work(i):
    try:
      for _ in range(20):
        results.append(float(f(np.float32(i))))
    except Exception as e:  # pragma: no cover - reported below
      errors.append(e)

  threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors
  assert sorted(set(results)) == [1.0, 2.0, 3.0, 4.0]


def test_jit_of_non_callable_and_bad_argument():
  with pytest.raises(TypeError, match="callable"):
    hlox.jit(3)
  # JAX's phrase, naming the argument's path.
  with pytest.raises(TypeError, match="as an abstract array.*at path x"):
    hlox.jit(lambda x: x)("hello")
  with pytest.raises(TypeError, match=r"at path y\[1\]\['k'\]"):
    hlox.jit(lambda x, y: x)(1.0, (2.0, {"k": "bad"}))
