"""Eager ``hlox.numpy`` calls as one cached executable (``api.eager_fused``), jit's cache-hit
path for static/keyword/scalar arguments, and the shared device buffers of scalar arguments.

Counts events (traces, compiles, eager primitive dispatches), never time.
"""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import monitoring
from hlox.config import enable_x64
from hlox.runtime.array import scalar_argument


def _x(shape=(3, 4), dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  return jnp.asarray(rng.normal(size=shape).astype(dtype))


def _bits(a):
  a = np.asarray(a)
  return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fc" else a


# (name, function of the sample arrays x, y, m) for composite hlox.numpy functions.
COMPOSITES = [
    ("where", lambda x, y, m: jnp.where(x > 0.1, x, 0.5)),
    ("clip", lambda x, y, m: jnp.clip(x, -0.3, 0.4)),
    ("floor_divide", lambda x, y, m: jnp.floor_divide(x, 0.7)),
    ("remainder", lambda x, y, m: jnp.remainder(x, y)),
    ("divmod", lambda x, y, m: jnp.divmod(x, y)),
    ("logaddexp", lambda x, y, m: jnp.logaddexp(x, y)),
    ("hypot", lambda x, y, m: jnp.hypot(x, y)),
    ("sinc", lambda x, y, m: jnp.sinc(x)),
    ("isclose", lambda x, y, m: jnp.isclose(x, y, rtol=0.5)),
    ("nan_to_num", lambda x, y, m: jnp.nan_to_num(x / (x - x[0, 0]))),
    ("round", lambda x, y, m: jnp.round(x * 10, 1)),
    ("mean", lambda x, y, m: jnp.mean(x, axis=0)),
    ("var", lambda x, y, m: jnp.var(x, axis=1, ddof=1)),
    ("std", lambda x, y, m: jnp.std(x)),
    ("sum_where", lambda x, y, m: jnp.sum(x, axis=1, where=x > 0)),
    ("median", lambda x, y, m: jnp.median(x, axis=0)),
    ("argmax", lambda x, y, m: jnp.argmax(x, axis=1)),
    ("nanmax", lambda x, y, m: jnp.nanmax(x, axis=0)),
    ("cumsum", lambda x, y, m: jnp.cumsum(x, axis=1)),
    ("dot", lambda x, y, m: jnp.dot(x, m)),
    ("tensordot", lambda x, y, m: jnp.tensordot(x, y, axes=([1], [1]))),
    ("cross", lambda x, y, m: jnp.cross(x[:, :3], y[:, :3])),
    ("trace", lambda x, y, m: jnp.trace(m)),
]


@pytest.mark.parametrize("name,fn", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_eager_and_jit_agree_bit_for_bit(name, fn):
  x, y, m = _x(), _x(seed=1), _x((4, 4), seed=2)
  eager = fn(x, y, m)
  jitted = hlox.jit(fn)(x, y, m)
  for e, j in zip(hlox.tree_util.tree_leaves(eager), hlox.tree_util.tree_leaves(jitted)):
    assert e.dtype == j.dtype and e.shape == j.shape
    np.testing.assert_array_equal(_bits(e), _bits(j))


def test_a_composite_runs_as_one_executable():
  x = _x((5, 6))
  jnp.where(x > 0.25, x, -1.0)  # compile once
  with monitoring.count_events() as counts:
    out = jnp.where(x > 0.25, x, -1.0)
  assert counts["eager_compile"] == 0 and counts["compile"] == 0
  assert counts["jit_trace"] == 0
  np.testing.assert_array_equal(out, np.where(np.asarray(x) > 0.25, np.asarray(x), -1.0))


def test_python_scalars_of_new_values_do_not_retrace():
  x = _x()
  x * 1.5
  jnp.sum(x, axis=0)
  with monitoring.count_events() as counts:
    for v in (2.5, -0.0, 3.0, 1e30, float("nan")):
      out = x * v
      np.testing.assert_array_equal(_bits(out), _bits(np.asarray(x) * np.float32(v)))
    for axis in (0, 0, 0):
      jnp.sum(x, axis=axis)
  assert counts["jit_trace"] == 0 and counts["compile"] == 0
  assert counts["eager_compile"] == 0


def test_negative_zero_and_zero_keep_their_sign():
  x = jnp.ones(3)
  assert np.signbit(np.asarray(x * -0.0)).all()
  assert not np.signbit(np.asarray(x * 0.0)).any()
  assert np.signbit(np.asarray(jnp.multiply(x, np.float32(-0.0)))).all()
  assert not np.signbit(np.asarray(jnp.multiply(x, np.float32(0.0)))).any()


def test_eager_slices_at_new_starts_reuse_one_program():
  # x[i] in a Python loop: the slice runs as a dynamic_slice, so each new i costs no compile.
  data = np.arange(60, dtype=np.float32).reshape(10, 6)
  x = jnp.asarray(data)
  x[0], x[0, 1:3], x[1:4], x[::2]
  with monitoring.count_events() as counts:
    rows = [x[i] for i in range(1, 10)] + [x[-1]]
    pieces = [x[i, 1:3] for i in range(1, 10)] + [x[i:i + 3] for i in range(1, 8)]
  assert counts["eager_compile"] == 0 and counts["compile"] == 0, counts
  for i, row in enumerate(rows[:-1], 1):
    np.testing.assert_array_equal(row, data[i])
  np.testing.assert_array_equal(rows[-1], data[-1])
  for i, piece in enumerate(pieces[:9], 1):
    np.testing.assert_array_equal(piece, data[i, 1:3])
  for i, piece in enumerate(pieces[9:], 1):
    np.testing.assert_array_equal(piece, data[i:i + 3])
  for i in (0, 2, 5):  # strided slices keep their static program
    np.testing.assert_array_equal(x[i::2], data[i::2])
  # Traced, a slice stays a static slice.
  assert "slice[" in str(hlox.make_jaxpr(lambda a: a[3])(x))


def test_a_deleted_shared_scalar_buffer_is_replaced():
  x = jnp.arange(4.0)
  scalar_argument(2.0)._buf.delete()
  np.testing.assert_array_equal(x * 2.0, np.arange(4.0) * 2)


def test_x64_scalars_have_their_own_buffers():
  x = jnp.arange(3)
  assert (x + 1).dtype == np.int32
  with enable_x64():
    y = jnp.arange(3)
    assert (y + 1).dtype == np.int64
    np.testing.assert_array_equal(y + 2**40, np.arange(3) + 2**40)
  assert (x + 1).dtype == np.int32


def _unfused(fn):
  return fn.__wrapped__


@pytest.mark.parametrize("call", [
    lambda f: f(jnp.ones(3), "a"),                    # not an array
    lambda f: f(jnp.ones(3), jnp.ones(4)),            # shapes do not broadcast
    lambda f: f(jnp.ones(3), [1.0, 2.0, 3.0]),        # a list
])
def test_bad_operands_raise_as_the_plain_function(call):
  add = jnp.add
  add(jnp.ones(3), jnp.ones(3))  # the cache holds a good signature
  with pytest.raises(Exception) as fused_error:
    call(add)
  with pytest.raises(Exception) as plain_error:
    call(_unfused(add))
  assert type(fused_error.value) is type(plain_error.value)


def test_bad_static_arguments_raise_as_the_plain_function():
  x = _x()
  jnp.sum(x, axis=0)
  for kwargs in ({"axis": 7}, {"axis": 0.5}, {"dtype": "not a dtype"}):
    with pytest.raises(Exception) as fused_error:
      jnp.sum(x, **kwargs)
    with pytest.raises(Exception) as plain_error:
      _unfused(jnp.sum)(x, **kwargs)
    assert type(fused_error.value) is type(plain_error.value), kwargs
  # an unhashable static value runs the plain function
  np.testing.assert_allclose(jnp.sum(x, axis=[0, 1]), np.asarray(x).sum(), rtol=1e-6)


@pytest.mark.parametrize("name,call", [
    ("dot", lambda f: f(jnp.ones((2, 3)), jnp.ones((4, 2)))),
    ("matmul", lambda f: f(jnp.ones((2, 3)), jnp.ones(2))),
    ("where", lambda f: f(jnp.ones(3) > 0, jnp.ones(3), jnp.ones(2))),
    ("tensordot", lambda f: f(jnp.ones((2, 3)), jnp.ones((3, 2)), axes=([0], [0]))),
    ("stack", lambda f: f([jnp.ones(2), jnp.ones(3)])),
    ("mean", lambda f: f(jnp.ones((2, 3)), axis=2)),
    ("clip", lambda f: f(jnp.ones(3) + 1j, 0, 1)),
    ("floor_divide", lambda f: f(jnp.ones(3), "x")),
])
def test_every_fused_room_raises_as_the_plain_function(name, call):
  fused = getattr(jnp, name)
  good = {"dot": lambda: fused(jnp.ones((2, 3)), jnp.ones((3, 2))),
          "matmul": lambda: fused(jnp.ones((2, 3)), jnp.ones(3)),
          "where": lambda: fused(jnp.ones(3) > 0, jnp.ones(3), jnp.ones(3)),
          "tensordot": lambda: fused(jnp.ones((2, 3)), jnp.ones((3, 2)), axes=([1], [0])),
          "stack": lambda: fused([jnp.ones(2), jnp.ones(2)]),
          "mean": lambda: fused(jnp.ones((2, 3)), axis=1),
          "clip": lambda: fused(jnp.ones(3), 0, 1),
          "floor_divide": lambda: fused(jnp.ones(3), 2.0)}[name]
  good()  # a cached signature next to the bad one
  with pytest.raises(Exception) as fused_error:
    call(fused)
  with pytest.raises(Exception) as plain_error:
    call(_unfused(fused))
  assert type(fused_error.value) is type(plain_error.value)
  assert isinstance(fused_error.value, (TypeError, ValueError))


def test_value_dependent_forms_run_the_plain_function():
  c = jnp.asarray([0, 3, 0, 5])
  for _ in range(2):
    (idx,) = jnp.where(c)
    np.testing.assert_array_equal(idx, [1, 3])
  (idx,) = jnp.where(c, size=3)
  np.testing.assert_array_equal(idx, [1, 3, 0])


def test_traced_calls_are_inlined_or_staged_as_in_jax():
  # JAX inlines ``sum`` (jitted with inline=True) and stages ``where``'s ``_where`` as a
  # nested jit (tests/test_nested_jit_jaxprs.py compares the texts with JAX's).
  jaxpr = hlox.make_jaxpr(lambda a: jnp.where(a > 1, a, 0.0) + jnp.sum(a, axis=0))(_x())
  names = [(e.primitive.name, e.params.get("name")) for e in jaxpr.eqns]
  assert names[:3] == [("gt", None), ("jit", "_where"), ("reduce_sum", None)]
  assert [n for n in names if n[0] == "jit"] == [("jit", "_where")]


def test_grad_and_vmap_through_fused_functions():
  x = _x()
  g = hlox.grad(lambda a: jnp.sum(jnp.where(a > 0, a * 2.0, a)))(x)
  np.testing.assert_array_equal(g, np.where(np.asarray(x) > 0, 2.0, 1.0))
  v = hlox.vmap(lambda r: jnp.dot(r, r))(x)
  np.testing.assert_allclose(v, (np.asarray(x) ** 2).sum(1), rtol=1e-6)


# --- jit's cache-hit path with static and keyword arguments --------------------------------

def test_static_argument_calls_hit_the_cache():
  traces = []

  def f(a, n, scale=1.0):
    traces.append(n)
    return a * n * scale

  g = hlox.jit(f, static_argnums=1)
  x = _x()
  g(x, 2)
  with monitoring.count_events() as counts:
    for _ in range(3):
      g(x, 2)
      g(x, 2, scale=0.5)
      g(x, n=2)
  assert counts["compile"] <= 2 and len(traces) <= 3
  np.testing.assert_array_equal(g(x, 3, scale=0.5), np.asarray(x) * 1.5)
  np.testing.assert_array_equal(g(x, n=4), np.asarray(x) * 4)
  traces.clear()
  g(x, 2.0)  # equal to 2 but of another type: traced again, as JAX does
  assert traces == [2.0]


def test_unhashable_static_argument_is_a_value_error():
  g = hlox.jit(lambda a, shape: a.reshape(shape), static_argnums=1)
  with pytest.raises(ValueError, match="Non-hashable static arguments"):
    g(jnp.arange(6), [2, 3])


def test_disable_jit_applies_to_cached_functions():
  calls = []

  def f(a):
    calls.append(1)
    return a + 1

  g = hlox.jit(f)
  x = _x()
  g(x)
  g(x)
  assert len(calls) == 1
  with hlox.disable_jit():
    g(x)
  assert len(calls) == 2
