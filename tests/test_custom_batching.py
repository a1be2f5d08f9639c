"""``hlox.custom_batching``: custom_vmap and sequential_vmap, as JAX's behave."""
from __future__ import annotations

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.custom_batching import custom_vmap, sequential_vmap


def _sin_with_cos_rule(log=None):
  """sin(x), whose batching rule computes cos instead (so the rule is seen to run)."""
  @custom_vmap
  def f(x):
    return jnp.sin(x)

  @f.def_vmap
  def rule(axis_size, in_batched, xs):
    if log is not None:
      log.append((axis_size, in_batched, np.shape(xs)))
    return jnp.cos(xs), in_batched[0]

  return f


def test_eager_jit_and_vmap_use_the_function_or_the_rule():
  log = []
  f = _sin_with_cos_rule(log)
  xs = np.linspace(0.1, 1.0, 3).astype(np.float32)
  np.testing.assert_allclose(f(xs[0]), np.sin(xs[0]), rtol=1e-6)
  np.testing.assert_allclose(hlox.jit(f)(xs[0]), np.sin(xs[0]), rtol=1e-6)
  for g in (hlox.vmap(f), hlox.jit(hlox.vmap(f)), hlox.vmap(hlox.jit(f))):
    np.testing.assert_allclose(g(xs), np.cos(xs), rtol=1e-6)
  axis_size, in_batched, shape = log[0]
  assert type(axis_size) is int and axis_size == 3
  assert type(in_batched) is list and in_batched == [True]
  assert shape == (3,)
  # the batch axis reaches the rule at position 0, whatever in_axes said
  m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(hlox.vmap(f, in_axes=1)(m), np.cos(m.T), rtol=1e-6)
  assert log[-1] == (3, [True], (3, 2))


def test_printed_jaxpr_and_vmapped_program():
  f = _sin_with_cos_rule()
  text = str(hlox.make_jaxpr(f)(1.0))
  assert "custom_vmap_call[" in text and "in_tree=PyTreeDef(([], (*,)))" in text
  assert "out_tree=PyTreeDef(*)" in text and "sin" in text
  # under vmap, the rule's operations replace the call
  batched = str(hlox.make_jaxpr(hlox.vmap(f))(np.ones(3, np.float32)))
  assert "cos" in batched and "custom_vmap_call" not in batched and "sin" not in batched


def test_mixed_batching_and_pytrees():
  seen = []

  @custom_vmap
  def dot(u, v):
    return u @ v

  @dot.def_vmap
  def dot_rule(axis_size, in_batched, u, v):
    seen.append(list(in_batched))
    ub, vb = in_batched
    if ub and vb:
      return jnp.sum(u * v, axis=1), True
    return (u @ v if ub else v @ u), True

  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(
      np.float32)
  np.testing.assert_allclose(hlox.vmap(dot, in_axes=(0, None))(a, b), a @ b, rtol=1e-5)
  np.testing.assert_allclose(hlox.vmap(dot, in_axes=(None, 0))(b, a), a @ b, rtol=1e-5)
  np.testing.assert_allclose(hlox.vmap(dot)(a, a), np.sum(a * a, 1), rtol=1e-5)
  assert seen == [[True, False], [False, True], [True, True]]

  @custom_vmap
  def tree_f(d):
    return {"s": jnp.sin(d["x"]), "n": None, "y": d["y"][0] * 2}

  @tree_f.def_vmap
  def tree_rule(axis_size, in_batched, d):
    assert in_batched == [{"x": True, "y": [True]}]
    return ({"s": jnp.cos(d["x"]), "n": None, "y": d["y"][0] * 3},
            {"s": True, "n": None, "y": True})

  x = np.arange(3.0, dtype=np.float32)
  out = hlox.vmap(tree_f)({"x": x, "y": [x]})
  np.testing.assert_allclose(out["s"], np.cos(x), rtol=1e-6)
  np.testing.assert_allclose(out["y"], 3 * x)
  assert out["n"] is None


def test_unbatched_output_and_nested_vmap():
  @custom_vmap
  def total(x):
    return jnp.sum(x)

  @total.def_vmap
  def total_rule(axis_size, in_batched, xs):
    # says its result is the same for every example (it is not batched)
    return jnp.sum(xs) * 0 + 7.0, False

  np.testing.assert_allclose(hlox.vmap(total)(np.ones((4, 2), np.float32)), np.full(4, 7.0))
  f = _sin_with_cos_rule()
  m = np.linspace(0, 1, 6).astype(np.float32).reshape(2, 3)
  # the inner vmap runs the rule; the outer one batches the rule's operations
  np.testing.assert_allclose(hlox.vmap(hlox.vmap(f))(m), np.cos(m), rtol=1e-6)


def test_forward_mode_is_the_rules_jvp():
  f = _sin_with_cos_rule()
  x, t = np.float32(0.7), np.float32(2.0)
  y, ty = hlox.jvp(f, (x,), (t,))
  np.testing.assert_allclose([y, ty], [np.sin(x), np.cos(x) * t], rtol=1e-6)
  xs = np.linspace(0.1, 1.0, 3).astype(np.float32)
  ts = 2 * xs
  for ys, tys in (hlox.vmap(lambda a, b: hlox.jvp(f, (a,), (b,)))(xs, ts),
                  hlox.jvp(hlox.vmap(f), (xs,), (ts,))):
    np.testing.assert_allclose(ys, np.cos(xs), rtol=1e-6)
    np.testing.assert_allclose(tys, -np.sin(xs) * ts, rtol=1e-6)
  # tangents batched where primals are not (jacfwd): the JVP of the rule, which sees no
  # batched input, is vmapped over the tangents (JAX's answer: -diag(sin x))
  np.testing.assert_allclose(hlox.jacfwd(f)(xs), -np.diag(np.sin(xs)), rtol=1e-6)
  ys, tys = hlox.vmap(lambda a, b: hlox.jvp(f, (a,), (b,)), in_axes=(0, None))(xs, t)
  np.testing.assert_allclose(tys, -np.sin(xs) * t, rtol=1e-6)


def test_reverse_mode_raises_jax_error_and_custom_vjp_outside_works():
  f = _sin_with_cos_rule()
  msg = "Linearization failed to produce known values for all output primals"
  with pytest.raises(ValueError, match=msg):
    hlox.grad(f)(0.5)
  with pytest.raises(ValueError, match=msg):
    hlox.grad(hlox.jit(f))(0.5)

  @hlox.custom_vjp
  @custom_vmap
  def g(x, y):
    return jnp.sin(x) * y

  @g.def_vmap  # reaches the custom_vmap inside the custom_vjp
  def g_rule(axis_size, in_batched, xs, ys):
    return jnp.cos(xs) * ys, True

  g.defvjp(lambda x, y: (g(x, y), (x, y)),
           lambda res, ct: (jnp.cos(res[0]) * res[1] * ct, jnp.sin(res[0]) * ct))
  xs = np.linspace(0, 1, 5).astype(np.float32)
  np.testing.assert_allclose(hlox.vmap(g)(xs, xs), np.cos(xs) * xs, rtol=1e-6)
  np.testing.assert_allclose(hlox.grad(g)(0.3, 2.0), np.cos(0.3) * 2.0, rtol=1e-6)


def test_sequential_vmap_is_a_lax_map_loop():
  calls = []

  @sequential_vmap
  def f(x, y):
    calls.append(np.shape(x))
    return x + y

  xs = np.arange(3.0, dtype=np.float32)
  np.testing.assert_allclose(hlox.vmap(f, in_axes=(0, None))(xs, 4.0), xs + 4.0)
  assert calls and all(s == () for s in calls)  # traced once per example shape, not batched
  got = str(hlox.make_jaxpr(hlox.vmap(f, in_axes=(0, None)))(xs, 4.0))
  want = str(hlox.make_jaxpr(lambda a, b: lax.map(lambda x: f(x, b), a))(xs, 4.0))
  assert got == want and "scan[" in got
  ys = 10 + xs
  np.testing.assert_allclose(hlox.jit(hlox.vmap(f))(xs, ys), xs + ys)


def test_errors_match_jax():
  @custom_vmap
  def f(x, y, *, z=None):
    return x * y

  with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap "
                     "function f using def_vmap"):
    f(1.0, 2.0)

  @f.def_vmap
  def f_rule(axis_size, in_batched, xs, ys):
    return xs, True

  with pytest.raises(TypeError, match=r"custom_vmap-decorated function f could not be "
                     r"resolved(.|\n)*missing a required argument: 'y'"):
    f(0.5)
  with pytest.raises(TypeError, match="keyword arguments could not be resolved to "
                     "positions: z"):
    f(0.5, 0.1, z=1.0)
  np.testing.assert_allclose(f(x=2.0, y=3.0), 6.0)  # positional by name is fine

  @custom_vmap
  def g(x):
    return jnp.sin(x)

  @g.def_vmap
  def rule_abc(axis_size, in_batched, xs):
    return [jnp.sin(xs), jnp.cos(xs)], in_batched

  with pytest.raises(ValueError, match=r"output batching specification returned by custom "
                     r"vmap rule \(rule_abc\) do not match"):
    hlox.vmap(g)(np.ones(3, np.float32))

  @g.def_vmap
  def rule_abc2(axis_size, in_batched, xs):
    return [jnp.sin(xs)], in_batched

  with pytest.raises(ValueError, match=r"custom vmap rule \(rule_abc2\) does not match that "
                     "of original custom-vmapped function"):
    hlox.vmap(g)(np.ones(3, np.float32))


def test_lax_map_batch_size_zero_is_one_vmap():
  x = np.arange(16)
  np.testing.assert_array_equal(lax.map(lambda v: v ** 2, x, batch_size=0), x ** 2)
  with pytest.raises(ValueError, match="non-negative"):
    lax.map(lambda v: v, x, batch_size=-1)
