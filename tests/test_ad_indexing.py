"""Autodiff rules of the indexing primitives (``hlox/lax/indexing.py``): dynamic_slice,
dynamic_update_slice, gather and the scatters, checked against finite differences and the
``<ct, J t> == <J^T ct, t>`` identity (float64, second order), explicit cotangents against
NumPy, under ``jit``, and through the NumPy-level indexing built on them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.interpreters import ad

from check_grads import check_grads_x64
from util import assert_close

RNG = np.random.default_rng(0)

ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0,))
ROWS_S = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
POINTS = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                    start_index_map=(0, 1))
POINTS_S = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                       scatter_dims_to_operand_dims=(0, 1))


check = check_grads_x64


def vjp_both(f, args, ct):
  """Cotangents of ``args`` eagerly and under jit (asserted equal)."""
  eager = hlox.vjp(f, *args)[1](ct)
  jitted = hlox.jit(lambda args, ct: hlox.vjp(f, *args)[1](ct))(tuple(args), ct)
  for a, b in zip(eager, jitted):
    assert_close(b, a)
  return [np.asarray(a) for a in eager]


def jvp_both(f, args, tangents):
  eager = hlox.jvp(f, tuple(args), tuple(tangents))[1]
  jitted = hlox.jit(lambda a, t: hlox.jvp(f, a, t)[1])(tuple(args), tuple(tangents))
  assert_close(jitted, eager)
  return np.asarray(eager)


# --- dynamic_slice / dynamic_update_slice --------------------------------------------------

@pytest.mark.parametrize("start", [(1, 2), (4, 3), (-1, 0)])  # in bounds, clamped, negative
def test_dynamic_slice_grads(start):
  x = RNG.standard_normal((5, 4))
  f = lambda x: lax.dynamic_slice(x, start, (2, 3))
  check(f, (x,))
  with enable_x64():
    ct = RNG.standard_normal((2, 3))
    r = min(max(start[0] % 5, 0), 3)
    c = min(max(start[1] % 4, 0), 1)
    expected = np.zeros((5, 4))
    expected[r:r + 2, c:c + 3] = ct
    assert_close(vjp_both(f, (x,), ct)[0], expected)
    assert_close(jvp_both(f, (x,), (x,)), x[r:r + 2, c:c + 3])


def test_dynamic_slice_traced_index_under_jit():
  x = np.arange(6.0, dtype=np.float32)

  @hlox.jit
  def g(x, i):
    return hlox.vjp(lambda x: lax.dynamic_slice_in_dim(x, i, 2), x)[1](
        np.array([1.0, 2.0], np.float32))[0]

  assert_close(g(x, np.int32(3)), np.array([0, 0, 0, 1, 2, 0], np.float32))
  assert_close(g(x, np.int32(5)), np.array([0, 0, 0, 0, 1, 2], np.float32))  # clamped
  # The integer index gets no tangent (float0) and does not disturb the operand's.
  with enable_x64():
    _, t = hlox.jvp(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2),
                    (x.astype(np.float64), np.int32(1)),
                    (np.ones(6), np.zeros((), dtypes.float0)))
    assert_close(t, np.ones(2))


@pytest.mark.parametrize("start", [(1, 2), (4, 3)])
def test_dynamic_update_slice_grads(start):
  x = RNG.standard_normal((5, 4))
  u = RNG.standard_normal((2, 2))
  f = lambda x, u: lax.dynamic_update_slice(x, u, start)
  check(f, (x, u))
  check(lambda u: lax.dynamic_update_slice(x, u, start), (u,))
  check(lambda x: lax.dynamic_update_slice(x, u, start), (x,))
  with enable_x64():
    ct = RNG.standard_normal((5, 4))
    r, c = min(start[0], 3), min(start[1], 2)
    ct_x, ct_u = vjp_both(f, (x, u), ct)
    expected = ct.copy()
    expected[r:r + 2, c:c + 2] = 0
    assert_close(ct_x, expected)
    assert_close(ct_u, ct[r:r + 2, c:c + 2])


# --- gather --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["promise_in_bounds", "clip", "fill"])
def test_gather_rows_repeated(mode):
  x = RNG.standard_normal((5, 3))
  idx = np.array([[0], [3], [0], [4], [0]], np.int32)
  f = lambda x: lax.gather(x, idx, ROWS, (1, 3), mode=mode)
  check(f, (x,))
  with enable_x64():
    ct = RNG.standard_normal((5, 3))
    expected = np.zeros((5, 3))
    np.add.at(expected, idx[:, 0], ct)  # repeated reads accumulate
    assert_close(vjp_both(f, (x,), ct)[0], expected)


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_out_of_bounds(mode):
  x = RNG.standard_normal((5, 3))
  idx = np.array([[1], [7], [-2]], np.int32)
  f = lambda x: lax.gather(x, idx, ROWS, (1, 3), mode=mode, fill_value=2.5)
  check(f, (x,))
  with enable_x64():
    ct = np.ones((3, 3))
    got = vjp_both(f, (x,), ct)[0]
    # clip: the reads were clamped to rows 4 and 0; fill: they read the constant fill.
    rows = [1, 4, 0] if mode == "clip" else [1]
    expected = np.zeros((5, 3))
    np.add.at(expected, rows, 1.0)
    assert_close(got, expected)
    t = jvp_both(f, (x,), (np.ones((5, 3)),))
    assert_close(t, np.array([[1.0] * 3, [float(mode == "clip")] * 3,
                              [float(mode == "clip")] * 3]))


def test_gather_windows_and_points():
  x = RNG.standard_normal((4, 5))
  # 2x2 windows at 2-d starts (offset dims in the output), overlapping.
  dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                  start_index_map=(0, 1))
  idx = np.array([[0, 0], [1, 1], [2, 3]], np.int32)
  f = lambda x: lax.gather(x, idx, dn, (2, 2))
  check(f, (x,))
  with enable_x64():
    ct = RNG.standard_normal((3, 2, 2))
    expected = np.zeros((4, 5))
    for k, (r, c) in enumerate(idx):
      expected[r:r + 2, c:c + 2] += ct[k]
    assert_close(vjp_both(f, (x,), ct)[0], expected)
  pts = np.array([[[0, 1], [3, 4]], [[0, 1], [2, 2]]], np.int32)
  check(lambda x: lax.gather(x, pts, POINTS, (1, 1)), (x,))


def test_gather_batching_dims():
  x = RNG.standard_normal((3, 4, 2))
  dn = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(1,),
                                  start_index_map=(1,), operand_batching_dims=(0,),
                                  start_indices_batching_dims=(0,))
  idx = np.array([[[0], [3]], [[1], [1]], [[2], [0]]], np.int32)
  f = lambda x: lax.gather(x, idx, dn, (1, 1, 2))
  check(f, (x,))
  with enable_x64():
    ct = RNG.standard_normal((3, 2, 2))
    expected = np.zeros_like(x)
    for b in range(3):
      for k in range(2):
        expected[b, idx[b, k, 0]] += ct[b, k]
    assert_close(vjp_both(f, (x,), ct)[0], expected)


def test_gather_gradient_is_a_scatter_add():
  x = np.ones((5, 3), np.float32)
  idx = np.array([[0], [2]], np.int32)
  f = lambda x: lax.gather(x, idx, ROWS, (1, 3))
  jaxpr = hlox.make_jaxpr(lambda x: hlox.vjp(f, x)[1](np.ones((2, 3), np.float32))[0])(x)
  assert jaxpr.jaxpr.eqns[-1].primitive is lax.scatter_add_p


# --- scatter_add ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [None, "clip", "promise_in_bounds"])
def test_scatter_add_grads(mode):
  x = RNG.standard_normal((5, 3))
  u = RNG.standard_normal((4, 3))
  idx = np.array([[1], [3], [1], [0]], np.int32)
  f = lambda x, u: lax.scatter_add(x, idx, u, ROWS_S, mode=mode)
  check(f, (x, u))
  with enable_x64():
    ct = RNG.standard_normal((5, 3))
    ct_x, ct_u = vjp_both(f, (x, u), ct)
    assert_close(ct_x, ct)
    assert_close(ct_u, ct[idx[:, 0]])


def test_scatter_add_dropped_updates_get_no_cotangent():
  x = RNG.standard_normal((4, 2))
  u = RNG.standard_normal((3, 2))
  idx = np.array([[1], [9], [-1]], np.int32)  # the last two are out of bounds: dropped
  f = lambda x, u: lax.scatter_add(x, idx, u, ROWS_S, mode="drop")
  check(f, (x, u))
  with enable_x64():
    ct = RNG.standard_normal((4, 2))
    _, ct_u = vjp_both(f, (x, u), ct)
    assert_close(ct_u, np.stack([ct[1], np.zeros(2), np.zeros(2)]))


def test_scatter_add_points():
  x = RNG.standard_normal((3, 4))
  u = RNG.standard_normal((2, 3))
  idx = np.array([[[0, 0], [2, 3], [0, 0]], [[1, 1], [2, 3], [1, 2]]], np.int32)
  check(lambda x, u: lax.scatter_add(x, idx, u, POINTS_S), (x, u))


# --- scatter_mul ---------------------------------------------------------------------------

def test_scatter_mul_grads_unique():
  x = RNG.standard_normal((5, 3))
  u = RNG.standard_normal((3, 3))
  idx = np.array([[4], [0], [2]], np.int32)
  f = lambda x, u: lax.scatter_mul(x, idx, u, ROWS_S, unique_indices=True)
  check(f, (x, u))


def test_scatter_mul_grads_repeated_indices():
  # With indices that may repeat, the derivative in the updates is JAX's NotImplementedError
  # (forward and reverse); the operand's derivative (each element scaled by the product of
  # its updates) is still given.
  x = RNG.standard_normal((4, 2))
  u = RNG.standard_normal((5, 2))
  idx = np.array([[1], [1], [3], [2], [2]], np.int32)
  f = lambda x, u: lax.scatter_mul(x, idx, u, ROWS_S)
  msg = "scatter_mul gradients are only implemented if `unique_indices=True`"
  with pytest.raises(NotImplementedError, match=re.escape(msg)):
    hlox.jvp(f, (x, u), (x, u))
  with pytest.raises(NotImplementedError, match=re.escape(msg)):
    hlox.grad(lambda u: f(x, u).sum())(u)
  with pytest.raises(NotImplementedError, match=re.escape(msg)):
    hlox.jvp(lambda x, z: jnp.asarray(x).at[np.ones(3, np.int32)].mul(z), (x[:, 0], u[:3, 0]),
             (x[:, 0], u[:3, 0]))
  check(lambda x: f(x, u), (x,))
  with enable_x64():
    ct_x = hlox.grad(lambda x: f(x, u).sum())(x)
    scale = np.ones_like(x)
    np.multiply.at(scale, idx[:, 0], u)
    assert_close(ct_x, scale)


# --- scatter_min / scatter_max -------------------------------------------------------------

@pytest.mark.parametrize("op", ["min", "max"])
def test_scatter_extremal_grads(op):
  scatter = lax.scatter_min if op == "min" else lax.scatter_max
  x = RNG.standard_normal((5, 3))
  u = RNG.standard_normal((4, 3))
  idx = np.array([[1], [3], [1], [4]], np.int32)
  check(lambda x, u: scatter(x, idx, u, ROWS_S), (x, u))


@pytest.mark.parametrize("op", ["min", "max"])
def test_scatter_extremal_ties_share_the_gradient(op):
  scatter = lax.scatter_min if op == "min" else lax.scatter_max
  # Element 0: operand and two updates tie (a third each); element 1: the operand wins;
  # element 2: one update wins; element 3: untouched.
  x = np.array([2.0, 5.0, 0.0, 7.0]) * (1 if op == "max" else -1)
  u = np.array([2.0, 2.0, 1.0, 3.0, 0.5]) * (1 if op == "max" else -1)
  idx = np.array([[0], [0], [1], [2], [2]], np.int32)
  dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  f = lambda x, u: scatter(x, idx, u, dn)
  with enable_x64():
    ct = np.array([3.0, 1.0, 1.0, 1.0])
    ct_x, ct_u = vjp_both(f, (x, u), ct)
    assert_close(ct_x, np.array([1.0, 1.0, 0.0, 1.0]))
    assert_close(ct_u, np.array([1.0, 1.0, 0.0, 1.0, 0.0]))
    t = jvp_both(f, (x, u), (np.array([3.0, 1.0, 1.0, 1.0]), np.array([6.0, 9.0, 1, 2, 4])))
    assert_close(t, np.array([6.0, 1.0, 2.0, 1.0]))


# --- scatter -------------------------------------------------------------------------------

def test_scatter_grads_unique():
  x = RNG.standard_normal((5, 3))
  u = RNG.standard_normal((3, 3))
  idx = np.array([[4], [0], [2]], np.int32)
  f = lambda x, u: lax.scatter(x, idx, u, ROWS_S, unique_indices=True)
  check(f, (x, u))
  with enable_x64():
    ct = RNG.standard_normal((5, 3))
    ct_x, ct_u = vjp_both(f, (x, u), ct)
    expected = ct.copy()
    expected[[4, 0, 2]] = 0
    assert_close(ct_x, expected)
    assert_close(ct_u, ct[[4, 0, 2]])


def test_scatter_grads_repeated_indices():
  x = RNG.standard_normal((5, 3))
  u = RNG.standard_normal((4, 3))
  idx = np.array([[1], [3], [1], [9]], np.int32)  # a duplicate and a dropped update
  f = lambda x, u: lax.scatter(x, idx, u, ROWS_S)
  check(f, (x, u))
  with enable_x64():
    out = np.asarray(f(x, u))
    ct = RNG.standard_normal((5, 3))
    ct_x, ct_u = vjp_both(f, (x, u), ct)
    expected_x = ct.copy()
    expected_x[[1, 3]] = 0
    assert_close(ct_x, expected_x)
    # Exactly one of the two updates of row 1 reached the output; it gets that row's
    # cotangent, the other one and the dropped update get nothing.
    winner = 0 if np.array_equal(out[1], u[0]) else 2
    assert np.array_equal(out[1], u[winner])
    expected_u = np.zeros_like(u)
    expected_u[winner] = ct[1]
    expected_u[1] = ct[3]
    assert_close(ct_u, expected_u)
    # The primal agrees with a plain scatter.
    assert_close(out, np.asarray(lax.scatter(x, idx, u, ROWS_S)))


def test_scatter_transpose_with_repeated_indices():
  # A scatter whose operand and updates are linear inputs, transposed directly.
  x = np.zeros((4,), np.float32)
  u = np.zeros((3,), np.float32)
  idx = np.array([[2], [0], [2]], np.int32)
  dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  ct = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  params = dict(dimension_numbers=dn, indices_are_sorted=False, unique_indices=False,
                mode=lax.GatherScatterMode.FILL_OR_DROP)
  ct_x, _, ct_u = ad.primitive_transposes[lax.scatter_p](
      jnp.asarray(ct), ad.UndefinedPrimal(ShapedArray((4,), x.dtype)),
      idx, ad.UndefinedPrimal(ShapedArray((3,), u.dtype)), **params)
  assert_close(ct_x, np.array([0.0, 2.0, 0.0, 4.0], np.float32))
  ct_u = np.asarray(ct_u)
  assert ct_u[1] == 1.0 and sorted([ct_u[0], ct_u[2]]) == [0.0, 3.0]
  # The surviving update is the one the primal scatter keeps.
  out = np.asarray(lax.scatter(x, idx, np.array([10.0, 20.0, 30.0], np.float32), dn))
  assert out[2] == (10.0 if ct_u[0] == 3.0 else 30.0)


def test_scatter_apply_is_not_differentiable():
  x = np.ones(3, np.float32)
  dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  f = lambda x: lax.scatter_apply(x, np.array([[1]], np.int32), lambda v: v * 2, dn,
                                  update_shape=(1,))
  with pytest.raises(NotImplementedError, match="scatter_apply"):
    hlox.jvp(f, (x,), (x,))


# --- NumPy-level indexing ------------------------------------------------------------------

IDX = np.array([0, 2, 2, 4])


@pytest.mark.parametrize("name", ["basic", "int_array", "int_arrays_2d", "bool_mask",
                                  "dynamic_int", "set", "set_repeated", "add_repeated",
                                  "multiply", "min", "take", "take_along_axis", "get_fill"])
def test_numpy_indexing(name):
  mask = np.array([True, False, True, True, False])
  fs = {
      "basic": lambda x: x[1:4:2, -1],
      "int_array": lambda x: x[IDX],
      "int_arrays_2d": lambda x: x[np.array([0, 2, 2]), np.array([1, 1, 3])],
      "bool_mask": lambda x: x[mask],
      "dynamic_int": lambda x: hlox.jit(lambda x, i: x[i])(x, np.int32(3)),
      "set": lambda x: jnp.asarray(x).at[1].set(x[2] * 2.0),
      "set_repeated": lambda x: jnp.asarray(x).at[np.array([1, 1, 3])].set(x[:3]),
      "add_repeated": lambda x: jnp.asarray(x).at[np.array([1, 1, 3])].add(x[:3]),
      "multiply": lambda x: jnp.asarray(x).at[np.array([1, 3, 0])].multiply(x[:3],
                                                                 unique_indices=True),
      "min": lambda x: jnp.asarray(x).at[np.array([1, 4])].min(x[:2] * 0.5),
      "take": lambda x: jnp.take(x, IDX, axis=1, mode="clip"),
      "take_along_axis": lambda x: jnp.take_along_axis(
          x, np.array([[0, 3], [1, 1], [2, 0], [3, 3], [0, 0]]), axis=1),
      "get_fill": lambda x: jnp.asarray(x).at[np.array([0, 7])].get(mode="fill",
                                                                      fill_value=0.0),
  }
  check(fs[name], (RNG.standard_normal((5, 4)),))


def test_numpy_grad_of_indexing_under_jit():
  def loss(x):
    y = x.at[np.array([0, 0, 2])].add(x[np.array([1, 3, 3])])
    return jnp.sum(y[1:] * y[:-1])

  x = np.arange(1.0, 5.0, dtype=np.float32)
  g = hlox.jit(hlox.grad(loss))(x)
  assert_close(g, hlox.grad(loss)(x))
  with enable_x64():
    xd = x.astype(np.float64)
    y = xd.copy()
    np.add.at(y, [0, 0, 2], xd[[1, 3, 3]])
    eps, num = 1e-6, np.zeros(4)
    for k in range(4):
      e = np.zeros(4)
      e[k] = eps
      f = lambda v: np.sum((lambda yy: yy[1:] * yy[:-1])(_np_add_at(v)))
      num[k] = (f(xd + e) - f(xd - e)) / (2 * eps)
    assert_close(g, num, rtol=1e-4, atol=1e-4)


def _np_add_at(x):
  y = x.copy()
  np.add.at(y, [0, 0, 2], x[[1, 3, 3]])
  return y
