"""Collectives over a named vmap axis: psum, pmean, pmax, pmin, all_gather, axis_index."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

X = np.arange(12, dtype=np.float32).reshape(4, 3)


def test_psum_pmean_pmax_pmin():
  f = lambda x: (lax.psum(x, "i"), lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"))
  s, m, mx, mn = hlox.vmap(f, axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(s), np.broadcast_to(X.sum(0), X.shape))
  np.testing.assert_allclose(np.asarray(m), np.broadcast_to(X.mean(0), X.shape))
  np.testing.assert_allclose(np.asarray(mx), np.broadcast_to(X.max(0), X.shape))
  np.testing.assert_allclose(np.asarray(mn), np.broadcast_to(X.min(0), X.shape))


def test_normalize_by_psum_and_unbatched_operand():
  out = hlox.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(out), X / X.sum(0), rtol=1e-6)
  const = hlox.vmap(lambda x: lax.psum(2.0, "i") + 0 * x, axis_name="i")(X)
  np.testing.assert_allclose(np.asarray(const), np.full(X.shape, 8.0))


def test_axis_index_and_all_gather():
  idx = hlox.vmap(lambda x: lax.axis_index("i"), axis_name="i")(X)
  np.testing.assert_array_equal(np.asarray(idx), np.arange(4))
  gathered = hlox.vmap(lambda x: lax.all_gather(x, "i"), axis_name="i")(X)
  assert gathered.shape == (4, 4, 3)
  np.testing.assert_array_equal(np.asarray(gathered)[2], X)
  tiled = hlox.vmap(lambda x: lax.all_gather(x, "i", tiled=True), axis_name="i")(X)
  np.testing.assert_array_equal(np.asarray(tiled)[0], X.reshape(-1))


def test_nested_named_axes_and_jit_inside():
  y = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
  f = lambda x: lax.psum(x, "inner") - lax.psum(x, "outer")
  out = hlox.vmap(hlox.vmap(hlox.jit(f), axis_name="inner"), axis_name="outer")(y)
  ref = y.sum(1, keepdims=True) - y.sum(0, keepdims=True)
  np.testing.assert_allclose(np.asarray(out), np.broadcast_to(ref, y.shape))
  both = hlox.vmap(hlox.vmap(lambda x: lax.psum(x, ("inner", "outer")), axis_name="inner"),
                   axis_name="outer")(y)
  np.testing.assert_allclose(np.asarray(both), np.broadcast_to(y.sum((0, 1)), y.shape))


def test_grad_through_psum():
  g = hlox.grad(lambda x: jnp.sum(hlox.vmap(lambda v: v * lax.pmean(v, "i"),
                                            axis_name="i")(x)))(X[:, 0])
  x = X[:, 0]
  expected = x.mean() + x.sum() / 4  # d/dx_k sum_j x_j * mean(x)
  np.testing.assert_allclose(np.asarray(g), np.full(4, expected), rtol=1e-5)


def test_unbound_axis_name_raises():
  with pytest.raises(NameError, match="unbound axis name: j"):
    hlox.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(X)
