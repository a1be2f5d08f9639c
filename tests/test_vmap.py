"""vmap: axes specifications, errors, nesting, and composition with jit and grad."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64

RNG = np.random.default_rng(0)


def loop(f, *args, in_axes=0):
  """Reference: apply f per example along in_axes and stack the results."""
  axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
  size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
  outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
          for i in range(size)]
  return np.stack([np.asarray(o) for o in outs])


def test_in_axes_variants_match_loop():
  x = RNG.standard_normal((3, 4)).astype(np.float32)
  y = RNG.standard_normal((4, 3)).astype(np.float32)
  f = lambda a, b: jnp.sin(a) * b + 1.0
  np.testing.assert_allclose(np.asarray(hlox.vmap(f, in_axes=(0, 1))(x, y)),
                             loop(f, x, y, in_axes=(0, 1)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f, in_axes=(1, None))(x, y[0])),
                             loop(f, x, y[0], in_axes=(1, None)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f, in_axes=(-1, 0))(x, y)),
                             loop(f, x, y, in_axes=(1, 0)), rtol=1e-6)


def test_out_axes_and_pytrees():
  x = RNG.standard_normal((3, 4)).astype(np.float32)
  f = lambda d: {"s": d["a"] * 2.0, "t": (jnp.sum(d["a"]), d["b"])}
  out = hlox.vmap(f, in_axes=({"a": 0, "b": None},), out_axes={"s": 1, "t": (0, None)})(
      {"a": x, "b": np.float32(7.0)})
  np.testing.assert_allclose(np.asarray(out["s"]), (x * 2.0).T, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(out["t"][0]), x.sum(1), rtol=1e-5)
  assert float(out["t"][1]) == 7.0


def test_keyword_arguments_are_mapped():
  x = RNG.standard_normal((3, 2)).astype(np.float32)
  out = hlox.vmap(lambda a, *, b: a + b)(x, b=x)
  np.testing.assert_allclose(np.asarray(out), 2 * x, rtol=1e-6)


def test_unmapped_output_is_broadcast_and_axis_size():
  out = hlox.vmap(lambda x: 3.0, axis_size=4, in_axes=None)(1.0)
  np.testing.assert_allclose(np.asarray(out), np.full(4, 3.0))


def test_nested_vmap_three_levels_different_axes():
  x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
  f = lambda v: jnp.sum(jnp.sin(v))
  # Outer maps axis 2 (size 4), middle axis 1 (size 3), inner axis 0 (size 2).
  g = hlox.vmap(hlox.vmap(hlox.vmap(f, in_axes=0), in_axes=1), in_axes=2)
  out = g(x[..., None])
  assert out.shape == (4, 3, 2)
  np.testing.assert_allclose(np.asarray(out), np.sin(x).transpose(2, 1, 0), rtol=1e-5)


def test_vmap_of_jit_keeps_jit_and_jit_of_vmap():
  f = hlox.jit(lambda a, b: jnp.dot(a, b))
  xs = RNG.standard_normal((5, 3)).astype(np.float32)
  m = RNG.standard_normal((3, 3)).astype(np.float32)
  jaxpr = hlox.make_jaxpr(hlox.vmap(f, in_axes=(0, None)))(xs, m)
  assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]
  np.testing.assert_allclose(np.asarray(hlox.vmap(f, in_axes=(0, None))(xs, m)), xs @ m,
                             rtol=1e-5)
  g = hlox.jit(hlox.vmap(lambda a: jnp.dot(m, a)))
  np.testing.assert_allclose(np.asarray(g(xs)), xs @ m.T, rtol=1e-5)


def test_vmap_matvec_is_one_dot_general():
  m = np.ones((4, 3), np.float32)
  jaxpr = hlox.make_jaxpr(hlox.vmap(lambda v: m @ v))(np.ones((7, 3), np.float32))
  names = [e.primitive.name for e in jaxpr.eqns]
  assert names.count("dot_general") == 1 and "while" not in names


def _loss(w, x, y):
  return jnp.sum((jnp.tanh(x @ w) - y) ** 2)


def test_per_example_gradients_vmap_of_grad():
  w = RNG.standard_normal((3, 2)).astype(np.float32)
  xs = RNG.standard_normal((6, 3)).astype(np.float32)
  ys = RNG.standard_normal((6, 2)).astype(np.float32)
  per_example = hlox.jit(hlox.vmap(hlox.grad(_loss), in_axes=(None, 0, 0)))(w, xs, ys)
  ref = np.stack([np.asarray(hlox.grad(_loss)(w, xs[i], ys[i])) for i in range(6)])
  np.testing.assert_allclose(np.asarray(per_example), ref, rtol=1e-5, atol=1e-6)


def test_grad_of_vmap():
  w = RNG.standard_normal((3, 2)).astype(np.float32)
  xs = RNG.standard_normal((6, 3)).astype(np.float32)
  ys = RNG.standard_normal((6, 2)).astype(np.float32)
  batched = lambda w: jnp.sum(hlox.vmap(_loss, in_axes=(None, 0, 0))(w, xs, ys))
  np.testing.assert_allclose(np.asarray(hlox.grad(batched)(w)),
                             np.asarray(hlox.grad(lambda w: _loss(w, xs, ys))(w)), rtol=1e-5)


def test_jacfwd_of_jacrev_against_finite_differences():
  with enable_x64():
    f = lambda x: jnp.sum(jnp.sin(x) * x[::-1] ** 2)
    x = np.array([0.3, -0.7, 1.1])
    h = np.asarray(hlox.jacfwd(hlox.jacrev(f))(x))
    eps = 1e-5
    grad = hlox.grad(f)
    fd = np.stack([(np.asarray(grad(x + eps * e)) - np.asarray(grad(x - eps * e))) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-10)


# --- errors ---------------------------------------------------------------------------------

def test_inconsistent_sizes_list_each_argument():
  with pytest.raises(ValueError, match=r"(?s)inconsistent sizes.*size 2.*size 3"):
    hlox.vmap(lambda a, b: a)(np.ones((2, 1)), np.ones((3, 1)))


def test_in_axes_out_of_range_and_bad_tree():
  with pytest.raises(ValueError, match="rank"):
    hlox.vmap(lambda a: a, in_axes=2)(np.ones((2, 3)))
  with pytest.raises(ValueError, match="in_axes"):
    hlox.vmap(lambda a, b: a, in_axes=(0, 0, 0))(np.ones(2), np.ones(2))
  with pytest.raises(ValueError, match="tree prefix"):
    hlox.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": np.ones(2)})


def test_out_axes_none_for_mapped_output():
  with pytest.raises(ValueError, match="at vmap out_axes, got axis spec None but output was batched on axis 0"):
    hlox.vmap(lambda a: a, out_axes=None)(np.ones(3))


def test_nothing_mapped_needs_axis_size():
  with pytest.raises(ValueError, match="axis_size"):
    hlox.vmap(lambda a: a, in_axes=None)(np.ones(3))
