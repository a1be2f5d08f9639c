"""The rest of ``hlox.lax``: split/stack/unstack/tile, shape helpers, mulhi and total-order
comparisons, conv helpers, custom_linear_solve/custom_root, rng, compiler hints,
approx_max_k/min_k, index_take, scatter_sub, dot algorithms, ragged_dot, scaled_dot.

Values against NumPy; jit against eager, vmap against a Python loop, gradients with
check_grads. The comparisons with JAX itself are in test_lax_rest_oracle.py.
"""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64
from hlox.core import dtypes
from hlox.core.jaxpr import dce_jaxpr

from tests.check_grads import check_grads_x64
from tests.util import assert_close, check_eager_and_jit

RNG = np.random.default_rng(0)


def _f32(*shape):
  return RNG.normal(size=shape).astype(np.float32)


def _prims(fun, *args):
  return [e.primitive.name for e in hlox.make_jaxpr(fun)(*args).eqns]


def _loop(fun, xs):
  return np.stack([np.asarray(fun(x)) for x in xs])


# --- split / stack / unstack / tile ------------------------------------------------------

def test_split_stack_unstack_tile_values():
  x = _f32(2, 3, 5)
  split = lambda x: lax.split(x, (1, 4, 0), axis=-1)  # noqa: E731
  for pieces in (split(x), hlox.jit(split)(x)):
    for p, e in zip(pieces, np.split(x, [1, 5], axis=2)):
      assert_close(p, e, np.float32)
    assert [p.shape for p in pieces] == [(2, 3, 1), (2, 3, 4), (2, 3, 0)]
  check_eager_and_jit(lambda x: lax.stack([x, 2 * x], axis=1), (x,),
                      np.stack([x, 2 * x], axis=1))
  check_eager_and_jit(lambda x: lax.stack([x], axis=-1), (x,), x[..., None])
  check_eager_and_jit(lambda x: lax.unstack(x, axis=1), (x,),
                      tuple(x[:, i] for i in range(3)))
  check_eager_and_jit(lambda x: lax.tile(x, (2, 1, 3)), (x,), np.tile(x, (2, 1, 3)))
  check_eager_and_jit(lambda x: lax.tile(x, (1, 0, 1)), (x,), np.tile(x, (1, 0, 1)))
  assert _prims(lambda x: lax.split(x, (1, 2), 1), x) == ["split"]
  assert _prims(lambda x: lax.stack(lax.unstack(x)), x) == ["unstack", "stack"]
  assert _prims(lambda x: lax.tile(x, (1, 2, 1)), x) == ["tile"]


def test_split_stack_unstack_tile_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="split: Sum of sizes 2 must be equal to dimension 1"):
    lax.split(x, (1, 1), axis=1)
  with pytest.raises(TypeError, match="stack: operands must have the same shape"):
    lax.stack([x, x.T])
  with pytest.raises(ValueError, match="unstack: axis 2"):
    lax.unstack(x, 2)
  with pytest.raises(TypeError, match="tile: reps"):
    lax.tile(x, (2,))


def test_split_stack_unstack_tile_vmap_and_grads():
  x = _f32(4, 3, 5)

  def f(x):
    a, b = lax.split(x, (2, 3), axis=1)
    parts = lax.unstack(b, axis=0)
    return lax.tile(lax.stack([a.sum(1), *parts], axis=1), (2, 1))

  expected = _loop(f, x)
  for axis in (0, 1, 2):
    assert_close(hlox.vmap(f, in_axes=axis)(np.moveaxis(x, 0, axis)), expected, np.float32)
  check_grads_x64(f, (x[0].astype(np.float64),), order=2)


# --- shape helpers -----------------------------------------------------------------------

def test_shape_helpers():
  assert lax.broadcast_shapes((2, 1, 3), (4, 1), ()) == (2, 4, 3)
  assert lax.broadcast_shapes() == ()
  with pytest.raises(ValueError, match="Incompatible shapes"):
    lax.broadcast_shapes((2,), (3,))
  y = np.ones((2, 3, 4), np.float32)
  assert_close(lax.broadcast_like(np.arange(4, dtype=np.float32), y),
               np.broadcast_to(np.arange(4, dtype=np.float32), (2, 3, 4)))
  with pytest.raises(ValueError, match="broadcast_like"):
    lax.broadcast_like(np.ones(3, np.float32), y)
  e = lax.empty((2, 3), np.float32)
  assert e.shape == (2, 3) and e.dtype == np.float32
  v = lax.shape_as_value((2, 7))
  assert v.dtype == np.int64 and list(v) == [2, 7]
  assert lax.dtype(1.0) == np.float32 and lax.dtype(1) == np.int32
  assert lax.dtype(np.arange(3, dtype=np.int64)) == np.int32 and lax.dtype(True) == np.bool_
  assert lax.dtype("float64") == np.float32 and lax.dtype(1j) == np.complex64
  assert lax.dtype(jnp.ones(2, dtypes.bfloat16)) == dtypes.bfloat16


# --- mulhi and total-order comparisons ---------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint16])
def test_mulhi(dtype):
  info = np.iinfo(dtype)
  x = RNG.integers(info.min, info.max, size=50, endpoint=True).astype(dtype)
  y = RNG.integers(info.min, info.max, size=50, endpoint=True).astype(dtype)
  bits = info.bits
  wide = np.int64 if info.min < 0 else np.uint64
  expected = ((x.astype(wide) * y.astype(wide)) >> bits).astype(dtype)
  check_eager_and_jit(lax.mulhi, (x, y), expected, dtype)
  assert_close(hlox.vmap(lax.mulhi, in_axes=(0, None))(x[:3], y[0]),
               np.stack([lax.mulhi(a, y[0]) for a in x[:3]]))


def test_total_order_comparisons():
  from hlox.lax.elementwise import eq_to_p, le_to_p, lt_to_p
  x = np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32)
  a, b = np.meshgrid(x, x, indexing="ij")
  # IEEE total order: the positions in x (NaN signs as written; -0.0 < +0.0).
  ia, ib = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
  check_eager_and_jit(lambda a, b: lt_to_p.bind(a, b), (a, b), ia < ib)
  check_eager_and_jit(lambda a, b: le_to_p.bind(a, b), (a, b), ia <= ib)
  check_eager_and_jit(lambda a, b: eq_to_p.bind(a, b), (a, b), ia == ib)
  i = np.array([3, -2, 5], np.int32)
  assert_close(lt_to_p.bind(i, np.int32(3)), i < 3)


# --- convolution helpers -----------------------------------------------------------------

def test_conv_shape_tuples_match_the_convolution():
  x, w = _f32(2, 9, 8, 3), _f32(3, 2, 3, 4)
  dn = ("NHWC", "HWIO", "NHWC")
  for strides, padding in (((2, 1), "VALID"), ((1, 3), "SAME"), ((2, 2), [(1, 2), (0, 1)])):
    out = hlox.eval_shape(lambda x, w: lax.conv_general_dilated(x, w, strides, padding,
                                                                dimension_numbers=dn), x, w)
    assert lax.conv_general_shape_tuple(x.shape, w.shape, strides, padding, dn) == out.shape
  lhs, rhs = (2, 3, 9, 8), (4, 3, 3, 2)
  out = hlox.eval_shape(lambda a, b: lax.conv_general_dilated(a, b, (2, 1), "SAME"),
                        np.ones(lhs, np.float32), np.ones(rhs, np.float32))
  assert lax.conv_shape_tuple(lhs, rhs, (2, 1), "SAME") == out.shape
  for strides, padding in (((2, 3), "SAME"), ((2, 1), "VALID"), ((1, 2), [(1, 2), (0, 1)])):
    out = hlox.eval_shape(lambda x, w: lax.conv_transpose(x, w, strides, padding,
                                                          dimension_numbers=dn), x, w)
    assert lax.conv_transpose_shape_tuple(x.shape, w.shape, strides, padding, dn) == out.shape
  assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == \
      ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  with pytest.raises(TypeError, match="exactly once"):
    lax.conv_general_permutations(("NHW", "HWIO", "NHWC"))
  got = lax.reduce_window_shape_tuple((5, 7), (2, 3), (1, 2), [(1, 0), (0, 2)], (2, 1), (1, 2))
  ref = hlox.eval_shape(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 3), (1, 2),
                                                    [(1, 0), (0, 2)], (2, 1), (1, 2)),
                        np.ones((5, 7), np.float32))
  assert got == ref.shape


def _np_patches(x, k, strides):
  """NCHW patches with VALID padding: feature c * kh * kw + i * kw + j."""
  n, c, h, w = x.shape
  oh, ow = (h - k[0]) // strides[0] + 1, (w - k[1]) // strides[1] + 1
  out = np.zeros((n, c * k[0] * k[1], oh, ow), x.dtype)
  for a in range(oh):
    for b in range(ow):
      win = x[:, :, a * strides[0]:a * strides[0] + k[0], b * strides[1]:b * strides[1] + k[1]]
      out[:, :, a, b] = win.reshape(n, -1)
  return out


def test_conv_general_dilated_patches():
  x = _f32(2, 3, 6, 5)
  check_eager_and_jit(lambda x: lax.conv_general_dilated_patches(x, (2, 3), (2, 1), "VALID"),
                      (x,), _np_patches(x, (2, 3), (2, 1)), np.float32, rtol=1e-6, atol=1e-6)
  f = lambda x: lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "SAME")  # noqa: E731
  assert_close(hlox.vmap(f)(x[:, None]), _loop(f, x[:, None]), np.float32)


def test_conv_general_dilated_local():
  x = _f32(2, 3, 5, 4)                      # NCHW
  w = _f32(2, 3 * 2 * 2, 4, 3)              # O, I = C * window, out H, out W
  f = lambda x, w: lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2))  # noqa: E731
  patches = _np_patches(x, (2, 2), (1, 1))  # (N, I, 4, 3)
  expected = np.einsum("nihw,oihw->nohw", patches, w)
  check_eager_and_jit(f, (x, w), expected, np.float32, rtol=1e-5, atol=1e-5)
  check_grads_x64(f, (x.astype(np.float64), w.astype(np.float64)), order=1)


# --- custom_linear_solve / custom_root ---------------------------------------------------

def _spd(n):
  a = RNG.normal(size=(n, n))
  return (a @ a.T + n * np.eye(n))


def _solve(a, b, symmetric=False, transpose=True):
  matvec = lambda x: jnp.dot(a, x)  # noqa: E731
  solve = lambda mv, x: jnp.linalg.solve(a, x)  # noqa: E731
  tsolve = (lambda vm, x: jnp.linalg.solve(a.T, x)) if transpose else None
  return lax.custom_linear_solve(matvec, b, solve, None if symmetric else tsolve,
                                 symmetric=symmetric)


def test_custom_linear_solve_values_and_transforms():
  a = (_spd(4) + RNG.normal(size=(4, 4))).astype(np.float32)
  b = _f32(4)
  expected = np.linalg.solve(a.astype(np.float64), b)
  check_eager_and_jit(_solve, (a, b), expected, np.float32, rtol=1e-4, atol=1e-5)
  assert _prims(_solve, a, b) == ["custom_linear_solve"]
  bs = _f32(3, 4)
  assert_close(hlox.vmap(_solve, in_axes=(None, 0))(a, bs),
               _loop(lambda b: _solve(a, b), bs), np.float32, rtol=1e-5, atol=1e-5)
  assert_close(hlox.vmap(_solve)(np.stack([a, a.T, 2 * a]), bs),
               np.stack([np.linalg.solve(m, v) for m, v in zip([a, a.T, 2 * a], bs)]),
               np.float32, rtol=1e-4, atol=1e-5)
  # The derivative is the solution's, not that of solve's steps.
  g = hlox.grad(lambda a, b: _solve(a, b).sum(), (0, 1))(a, b)
  g_ref = hlox.grad(lambda a, b: jnp.linalg.solve(a, b).sum(), (0, 1))(a, b)
  assert_close(g[0], g_ref[0], np.float32, rtol=1e-4, atol=1e-5)
  assert_close(g[1], g_ref[1], np.float32, rtol=1e-4, atol=1e-5)
  check_grads_x64(hlox.jit(_solve), (a.astype(np.float64), b.astype(np.float64)), order=1)
  s = _spd(4)
  check_grads_x64(hlox.jit(lambda b: _solve(s, b, symmetric=True)), (b.astype(np.float64),),
                  order=2)


def test_custom_linear_solve_iterative_and_pytrees():
  s = _spd(5).astype(np.float32)

  def cg_like(matvec, b):
    # A few steps of Richardson iteration: only the solution matters for derivatives.
    def body(_, x):
      return {k: x[k] + 0.1 * (b[k] - matvec(x)[k]) for k in x}
    return lax.fori_loop(0, 400, body, {k: jnp.zeros_like(v) for k, v in b.items()})

  scale = 1 / np.abs(np.linalg.eigvalsh(s)).max() * 9
  a = s * scale
  matvec = lambda x: {"u": jnp.dot(a, x["u"])}  # noqa: E731
  b = {"u": _f32(5)}
  x = lax.custom_linear_solve(matvec, b, cg_like, symmetric=True)
  assert_close(x["u"], np.linalg.solve(a, b["u"]), np.float32, rtol=1e-3, atol=1e-4)
  g = hlox.grad(lambda b: lax.custom_linear_solve(matvec, {"u": b}, cg_like,
                                                 symmetric=True)["u"].sum())(b["u"])
  assert_close(g, np.linalg.solve(a.T, np.ones(5)), np.float32, rtol=1e-3, atol=1e-4)
  x, aux = lax.custom_linear_solve(matvec, b, lambda mv, b: (cg_like(mv, b), 7),
                                   symmetric=True, has_aux=True)
  assert int(aux) == 7


def test_custom_linear_solve_errors():
  a, b = np.eye(2, dtype=np.float32), np.ones(2, np.float32)
  with pytest.raises(TypeError, match="transpose_solve"):
    hlox.grad(lambda b: _solve(a, b, transpose=False).sum())(b)
  # Forward mode needs no transpose_solve.
  _, t = hlox.jvp(lambda b: _solve(a, b, transpose=False), (b,), (b,))
  assert_close(t, b)
  with pytest.raises(ValueError, match=r"matvec\(\) output shapes must match b"):
    lax.custom_linear_solve(lambda x: x[:1], b, lambda mv, x: x)


def _sqrt_root(y):
  f = lambda x: x * x - y  # noqa: E731

  def newton(f, x0):
    return lax.fori_loop(0, 30, lambda _, x: x - f(x) / (2 * x), x0)

  return lax.custom_root(f, jnp.ones_like(y), newton, lambda g, r: r / g(1.0))


def test_custom_root():
  y = np.array([1.0, 2.0, 9.0], np.float32)
  check_eager_and_jit(_sqrt_root, (y,), np.sqrt(y), np.float32, rtol=1e-6, atol=1e-6)
  assert_close(hlox.vmap(_sqrt_root)(y), _loop(_sqrt_root, y), np.float32)
  assert_close(hlox.vmap(hlox.grad(lambda y: _sqrt_root(y)))(y), 0.5 / np.sqrt(y), np.float32,
               rtol=1e-5, atol=1e-6)
  assert_close(hlox.jit(hlox.grad(hlox.grad(lambda y: _sqrt_root(y))))(np.float32(2.0)),
               -0.25 * 2.0 ** -1.5, np.float32, rtol=1e-5, atol=1e-6)
  check_grads_x64(_sqrt_root, (y.astype(np.float64),), order=2)


def test_custom_root_vector_system():
  # x solves A x = b through a root finder whose iterations are not differentiated.
  a = _spd(3)
  b = RNG.normal(size=3)

  def solution(a, b):
    f = lambda x: jnp.dot(a, x) - b  # noqa: E731
    solve = lambda f, x0: jnp.linalg.solve(a, b)  # noqa: E731
    tangent_solve = lambda g, r: jnp.linalg.solve(a, r)  # noqa: E731
    return lax.custom_root(f, jnp.zeros_like(b), solve, tangent_solve)

  with enable_x64():
    assert_close(solution(a, b), np.linalg.solve(a, b), np.float64, rtol=1e-10, atol=1e-12)
  check_grads_x64(solution, (a, b), order=1)


# --- rng ---------------------------------------------------------------------------------

def test_rng_bit_generator_transforms():
  key = np.array([1, 2, 3, 4], np.uint32)
  for alg in (lax.RandomAlgorithm.RNG_THREE_FRY, lax.RandomAlgorithm.RNG_PHILOX):
    for dt in (np.uint8, np.uint32):
      k, bits = lax.rng_bit_generator(key, (3, 4), dt, alg)
      kj, bits_j = hlox.jit(lambda key: lax.rng_bit_generator(key, (3, 4), dt, alg))(key)
      assert bits.dtype == dt and bits.shape == (3, 4) and k.dtype == np.uint32
      np.testing.assert_array_equal(bits, bits_j)
      np.testing.assert_array_equal(k, kj)
      assert not np.array_equal(k, key)
  keys = np.arange(12, dtype=np.uint32).reshape(3, 4)
  gen = lambda k: lax.rng_bit_generator(k, (5,), np.uint32, lax.RandomAlgorithm.RNG_PHILOX)  # noqa: E731,E501
  new_keys, bits = hlox.vmap(gen)(keys)
  # JAX's batching: the whole batch is drawn from the first key; only that key advances.
  gen3 = lambda k: lax.rng_bit_generator(k, (3, 5), np.uint32, lax.RandomAlgorithm.RNG_PHILOX)  # noqa: E731,E501
  np.testing.assert_array_equal(bits, gen3(keys[0])[1])
  np.testing.assert_array_equal(new_keys[0], gen3(keys[0])[0])
  np.testing.assert_array_equal(new_keys[1:], keys[1:])
  with pytest.raises(TypeError, match="unsupported dtype"):
    lax.rng_bit_generator(key, (2,), np.int32)
  with pytest.raises(TypeError, match="key must be uint32"):
    lax.rng_bit_generator(np.ones(3, np.uint32), (2,))


def test_rng_uniform():
  u = lax.rng_uniform(np.float32(2.0), np.float32(3.0), (1000,))
  assert u.shape == (1000,) and u.dtype == np.float32
  assert 2.0 <= float(u.min()) and float(u.max()) < 3.0 and 2.4 < float(u.mean()) < 2.6
  i = hlox.jit(lambda: lax.rng_uniform(np.int32(0), np.int32(5), (200,)))()
  assert set(np.asarray(i).tolist()) <= set(range(5))
  with pytest.raises(ValueError, match="rng_uniform"):
    lax.rng_uniform(np.zeros(2, np.float32), np.ones(2, np.float32), (3,))


# --- compiler hints ----------------------------------------------------------------------

def test_optimization_barrier():
  x = _f32(3)
  f = lambda x: lax.optimization_barrier((jnp.sin(x), {"c": x * 2}))  # noqa: E731
  out = check_eager_and_jit(lambda x: f(x)[1]["c"], (x,), x * 2)
  assert out.shape == (3,)
  assert "stablehlo.optimization_barrier" in hlox.jit(f).lower(x).as_text()
  g = lambda x: f(x)[0] * f(x)[1]["c"]  # noqa: E731
  check_grads_x64(g, (x.astype(np.float64),), order=2)
  xs = _f32(4, 3)
  assert_close(hlox.vmap(g)(xs), _loop(g, xs), np.float32)


def test_dce_sink_and_stage():
  def f(x):
    lax.dce_sink(x * 3)
    return x
  jaxpr = hlox.make_jaxpr(f)(np.ones(2, np.float32)).jaxpr
  kept, _ = dce_jaxpr(jaxpr)
  assert [e.primitive.name for e in kept.eqns] == ["mul", "dce_sink"]
  assert_close(hlox.jit(f)(np.ones(2, np.float32)), np.ones(2))
  s = lax.stage(np.arange(3, dtype=np.float32))
  assert isinstance(s, hlox.Array)
  # (a staged constant is a constant of the jaxpr, no equation: JAX's printed jaxprs)
  assert _prims(lambda: lax.stage(np.ones(2, np.float32))) == []
  assert_close(hlox.grad(lambda x: lax.stage(x) * 3.0)(np.float32(1.0)), 3.0)


def test_dce_sink_prevent_mlir_dce_keeps_the_value_in_the_program():
  # As JAX: with prevent_mlir_dce, a side-effecting call of the runtime's ``dce_sink``
  # target (one per leaf) keeps XLA from removing the computation; without, XLA drops it.
  x = np.float32(1.0)

  def f(x, prevent):
    y = x + 1
    lax.dce_sink({"a": y, "b": y * 2}, prevent_mlir_dce=prevent)
    return x
  jaxpr = hlox.make_jaxpr(lambda x: f(x, True))(x).jaxpr
  assert [e.primitive.name for e in jaxpr.eqns] == ["add", "mul", "dce_sink", "dce_sink"]
  kept = hlox.jit(lambda x: f(x, True)).lower(x)
  assert kept.as_text().count("stablehlo.custom_call @dce_sink") == 2
  hlo = kept.compile().as_text()
  assert "custom_call" in hlo and "dce_sink" in hlo and "add" in hlo
  assert_close(hlox.jit(lambda x: f(x, True))(x), x)
  assert "add" not in hlox.jit(lambda x: f(x, False)).lower(x).compile().as_text()
  # Under vmap of a loop (the call sits in the loop's body) it still runs.
  xs = np.arange(3, dtype=np.float32)
  loop = lambda x: lax.fori_loop(0, 2, lambda i, c: (f(c, True), c + 1)[1], x)  # noqa: E731
  assert_close(hlox.jit(hlox.vmap(loop))(xs), xs + 2)


def test_composite():
  tangent = lax.composite(lambda x, *, scale: jnp.sin(x) / jnp.cos(x) * scale, "my.tangent")
  x = _f32(4)
  check_eager_and_jit(lambda x: tangent(x, scale=2.0), (x,), np.tan(x) * 2, np.float32,
                      rtol=1e-5, atol=1e-5)
  text = hlox.jit(lambda x: tangent(x, scale=2.0)).lower(x).as_text()
  assert 'stablehlo.composite "my.tangent"' in text and "scale = 2.0" in text
  # As in JAX, a composite has no derivative of its own (custom_jvp gives it one).
  with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
    hlox.grad(lambda x: tangent(x, scale=1.5).sum())(x)
  xs = _f32(3, 4)
  assert_close(hlox.vmap(lambda x: tangent(x, scale=1.0))(xs), np.tan(xs), np.float32,
               rtol=1e-5, atol=1e-5)
  c = np.float32(3.0)
  closure = lax.composite(lambda x: x * c + np.arange(4, dtype=np.float32), "my.affine")
  assert_close(hlox.jit(closure)(x), x * 3 + np.arange(4), np.float32)


def test_composite_lowering_names_attributes_and_errors():
  top = lax.composite(lambda x, *, k, dtype, table, skip: lax.top_k(x, k), "my.top_k", version=2)
  x = np.linspace(-1, 1, 5, dtype=np.float32)  # (the shared RNG's draws stay as they were)
  table = np.zeros((1, 2), np.float32)
  text = hlox.jit(lambda x: top(x, k=3, dtype=np.dtype(np.float32), table=table, skip=None)
                  ).lower(x).as_text()
  assert ('stablehlo.composite "my.top_k" %arg0 {composite_attributes = {dtype = f32, '
          'k = 3 : i64, table = dense<0.000000e+00> : tensor<1x2xf32>}, decomposition = @my.top_k, '
          'version = 2 : i32}') in text
  assert "func.func private @my.top_k(%arg0: tensor<5xf32>)" in text
  scaled = lax.composite(lambda x, *, scale: x / scale, "my.scaled")
  s = np.array([0.5, 0.25, 2.0, 1.0, 4.0], np.float32)
  assert_close(hlox.jit(lambda x: scaled(x, scale=s))(x), x / s, np.float32)
  with pytest.raises(hlox.errors.UnexpectedTracerError, match="use numpy arrays instead"):
    hlox.jit(lambda x: scaled(x, scale=jnp.ones(5)))(x)
  with pytest.raises(hlox.errors.UnexpectedTracerError, match="constant in the decomposition"):
    hlox.jit(lambda x, s: lax.composite(lambda y: y / s, "my.c")(x))(x, s)


def test_platform_dependent():
  x = _f32(3)
  on_cpu = lambda x: lax.platform_dependent(x, cpu=lambda x: x + 1, default=lambda x: x - 1)  # noqa: E731,E501
  elsewhere = lambda x: lax.platform_dependent(x, cuda=jnp.sin, tpu=jnp.sin,  # noqa: E731
                                               default=jnp.cos)
  check_eager_and_jit(on_cpu, (x,), x + 1)
  check_eager_and_jit(elsewhere, (x,), np.cos(x), np.float32)
  assert_close(hlox.vmap(elsewhere)(x), np.cos(x), np.float32)
  assert_close(hlox.grad(lambda x: elsewhere(x).sum())(x), -np.sin(x), np.float32)
  with pytest.raises(NotImplementedError, match="no branch for platform 'cpu'"):
    hlox.jit(lambda x: lax.platform_dependent(x, cuda=jnp.sin, tpu=jnp.cos))(x)
  with pytest.raises(ValueError, match="cuda"):
    lax.platform_dependent(x, gpu=jnp.sin)



def test_platform_dependent_lowers_only_the_chosen_branch():
  from hlox.core.primitive import Primitive
  unlowerable = Primitive("_no_lowering_anywhere")
  unlowerable.def_abstract_eval(lambda a: a)
  f = lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)  # noqa: E731
  x = np.linspace(-1, 1, 3, dtype=np.float32)
  text = hlox.jit(f).lower(x).as_text()
  assert "stablehlo.sine" in text and "stablehlo.cosine" not in text
  g = lambda x: (lax.platform_dependent(x, cpu=jnp.sin, tpu=unlowerable.bind)  # noqa: E731
                 + lax.platform_dependent(x, cuda=unlowerable.bind, default=jnp.sin))
  assert "_no_lowering_anywhere" not in hlox.jit(g).lower(x).as_text()
  assert_close(hlox.jit(g)(x), 2 * np.sin(x), np.float32)
  assert_close(hlox.vmap(g)(x), 2 * np.sin(x), np.float32)
  with pytest.raises(NotImplementedError, match="translation rule .* not found for platform"):
    lax.platform_dependent(3.0, tpu=lambda v: v + 2.0)


# --- approx_max_k / approx_min_k, index_take, scatter_sub ---------------------------------

def test_approx_max_min_k():
  x = _f32(4, 9)
  vals, idx = check_eager_and_jit(lambda x: lax.approx_max_k(x, 3, recall_target=0.9), (x,),
                                  (-np.sort(-x, 1)[:, :3], np.argsort(-x, 1)[:, :3]))
  assert idx.dtype == np.int32
  check_eager_and_jit(lambda x: lax.approx_min_k(x, 2, reduction_dimension=0), (x,),
                      (np.sort(x, 0)[:2], np.argsort(x, 0, kind="stable")[:2]))
  f = lambda x: lax.approx_max_k(x, 2)[0]  # noqa: E731
  assert_close(hlox.vmap(f, in_axes=1)(x), _loop(f, x.T), np.float32)
  check_grads_x64(f, (x.astype(np.float64),), order=2)
  with pytest.raises(ValueError, match="k must be"):
    lax.approx_max_k(x, 10)
  # without aggregation: XLA's partial-reduction size (here all 9), the best first
  wide = _f32(3, 1024)
  for fn in (lax.approx_min_k, lambda x, k, **kw: lax.approx_max_k(-x, k, **kw)):
    vals, idx = check_eager_and_jit(lambda x: fn(x, 10, aggregate_to_topk=False), (wide,),
                                    (np.sort(wide, 1)[:, :256] * (1 if fn is lax.approx_min_k
                                                                  else -1),
                                     np.argsort(wide, 1, kind="stable")[:, :256]))
  assert lax.approx_min_k(x, 2, aggregate_to_topk=False)[0].shape == (4, 9)


def test_index_take():
  src = _f32(4, 3, 5)
  i0, i2 = np.array([0, 3, -1, 2]), np.array([4, -5, 0, 1])
  check_eager_and_jit(lambda s: lax.index_take(s, (i0, i2), (0, 2)), (src,),
                      src[i0, :, i2], np.float32)
  check_eager_and_jit(lambda s: lax.index_take(s, (i0,), (0,)), (src,), src[i0], np.float32)
  check_grads_x64(lambda s: lax.index_take(s, (i0, i2), (0, 2)), (src.astype(np.float64),))


def test_scatter_sub_primitive():
  dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  idx = np.array([[1], [1], [4]])
  x, u = _f32(5), _f32(3)
  f = lambda x, u: lax.scatter_sub(x, idx, u, dn)  # noqa: E731
  expected = x.copy()
  np.subtract.at(expected, idx[:, 0], u)
  check_eager_and_jit(f, (x, u), expected, np.float32)
  assert _prims(f, x, u) == ["scatter-sub"]
  check_grads_x64(f, (x.astype(np.float64), u.astype(np.float64)), order=2)
  assert_close(hlox.vmap(f)(np.stack([x, x]), np.stack([u, 2 * u])),
               np.stack([f(x, u), f(x, 2 * u)]), np.float32)


# --- dot algorithms ----------------------------------------------------------------------

def test_dot_algorithm_presets():
  a, b = _f32(5, 6), _f32(6, 3)
  exact = a.astype(np.float64) @ b
  P = lax.DotAlgorithmPreset
  for preset in (P.DEFAULT, P.F32_F32_F32, P.BF16_BF16_F32, P.F64_F64_F64):
    out = lax.dot(a, b, precision=preset)
    assert out.dtype == np.float32
    assert_close(out, exact, np.float32, rtol=1e-5, atol=1e-5)
  half = (a.astype(np.float16).astype(np.float64) @ b.astype(np.float16))
  out = check_eager_and_jit(lambda a, b: lax.dot(a, b, precision=P.F16_F16_F16), (a, b),
                            exact, np.float32, rtol=1e-2, atol=1e-2)
  assert np.abs(np.asarray(out) - exact).max() > 1e-5  # it did round to float16
  assert_close(out, half, np.float32, rtol=1e-2, atol=5e-3)
  algo = lax.DotAlgorithm(dtypes.bfloat16, dtypes.bfloat16, np.float32)
  rounded = (a.astype(dtypes.bfloat16).astype(np.float64) @ b.astype(dtypes.bfloat16))
  assert_close(lax.dot(a, b, precision=algo), rounded, np.float32, rtol=1e-5, atol=1e-5)
  g = hlox.grad(lambda a: lax.dot(a, b, precision=P.F32_F32_F32).sum())(a)
  assert_close(g, np.broadcast_to(b.sum(1), a.shape), np.float32)
  with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
    lax.dot(a, b, precision=P.TF32_TF32_F32)
  # A preset's name works as a string; the lowered dot carries the algorithm, and operands
  # of other types are cast to the preset's and the product back (as JAX lowers presets).
  h = a.astype(np.float16), b.astype(np.float16)
  out = lax.dot(*h, precision="F32_F32_F32")
  assert out.dtype == np.float16
  assert_close(out, h[0].astype(np.float64) @ h[1], np.float16, rtol=1e-2, atol=1e-2)
  text = hlox.jit(lambda a, b: lax.dot(a, b, precision="F32_F32_F32")).lower(*h).as_text()
  assert ("algorithm = <lhs_precision_type = f32, rhs_precision_type = f32, "
          "accumulation_type = f32") in text and "tensor<5x3xf16>" in text
  with hlox.default_matmul_precision("BF16_BF16_F32_X3"):
    text = hlox.jit(lax.dot).lower(a, b).as_text()
  assert "accumulation_type = f32" in text and "num_primitive_operations = 3" in text
  dims = lax.DotDimensionNumbers(((1,), (0,)), ((), ()))
  assert_close(lax.dot_general(a, b, dims), exact, np.float32, rtol=1e-5, atol=1e-5)


def test_accuracy_is_accepted():
  x = np.float32(0.5)
  assert_close(lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST), np.exp(x))
  assert_close(lax.exp(x, accuracy=lax.Tolerance(atol=1e-5, ulps=2)), np.exp(x))
  assert lax.Tolerance(rtol=1e-3) == lax.Tolerance(rtol=1e-3)
  with pytest.raises(ValueError, match="non-negative"):
    lax.Tolerance(atol=-1.0)


# --- ragged_dot / scaled_dot -------------------------------------------------------------

def _np_ragged_dot(lhs, rhs, sizes):
  out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float64)
  start = 0
  for g, n in enumerate(sizes):
    out[start:start + n] = lhs[start:start + n].astype(np.float64) @ rhs[g]
    start += n
  return out


def test_ragged_dot():
  lhs, rhs = _f32(9, 4), _f32(3, 4, 2)
  sizes = np.array([3, 0, 4], np.int32)   # the last two rows are in no group
  expected = _np_ragged_dot(lhs, rhs, sizes)
  check_eager_and_jit(lambda l, r, s: lax.ragged_dot(l, r, s), (lhs, rhs, sizes), expected,
                      np.float32, rtol=1e-5, atol=1e-5)
  f = lambda l, r: lax.ragged_dot(l, r, sizes)  # noqa: E731
  check_grads_x64(f, (lhs.astype(np.float64), rhs.astype(np.float64)), order=2)
  many = np.array([[1, 2, 3], [9, 0, 0], [0, 0, 9]], np.int32)
  assert_close(hlox.vmap(lambda s: lax.ragged_dot(lhs, rhs, s))(many),
               np.stack([_np_ragged_dot(lhs, rhs, s) for s in many]), np.float32,
               rtol=1e-5, atol=1e-5)
  out = lax.ragged_dot(lhs, rhs, sizes, preferred_element_type=np.float32)
  assert out.dtype == np.float32
  with pytest.raises(TypeError, match="integer dtype"):
    lax.ragged_dot(lhs, rhs, sizes.astype(np.float32))
  with pytest.raises(TypeError, match=r"expected group_sizes to have shape \(3,\), got \(2, 3\)"):
    lax.ragged_dot(lhs, rhs, np.ones((2, 3), np.int32))
  with pytest.raises(TypeError, match="expected rank of group_sizes to be >=1"):
    lax.ragged_dot(lhs, rhs, np.int32(9))


def test_ragged_dot_general_contracting():
  lhs, rhs = _f32(2, 6), _f32(6, 3)
  sizes = np.array([1, 3, 2], np.int32)
  dn = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
  bounds = np.cumsum([0, *sizes])
  expected = np.stack([lhs[:, a:b] @ rhs[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
  check_eager_and_jit(lambda l, r: lax.ragged_dot_general(l, r, sizes, dn), (lhs, rhs),
                      expected, np.float32, rtol=1e-5, atol=1e-5)
  check_grads_x64(lambda l, r: lax.ragged_dot_general(l, r, sizes, dn),
                  (lhs.astype(np.float64), rhs.astype(np.float64)), order=1)


def test_scaled_dot():
  lhs, rhs = _f32(3, 8), _f32(8, 2)
  ls = RNG.uniform(1, 2, size=(3, 2)).astype(np.float32)
  rs = RNG.uniform(1, 2, size=(2, 2)).astype(np.float32)
  bf = lambda v: v.astype(dtypes.bfloat16).astype(np.float64)  # noqa: E731
  scaled_l = (bf(lhs) * bf(np.repeat(ls, 4, 1))).astype(dtypes.bfloat16).astype(np.float64)
  scaled_r = (bf(rhs) * bf(np.repeat(rs, 4, 0))).astype(dtypes.bfloat16).astype(np.float64)
  # The contraction itself runs in bfloat16 (JAX's exact numbers: test_lax_rest_oracle).
  out = check_eager_and_jit(
      lambda *a: lax.scaled_dot(a[0], a[1], lhs_scale=a[2], rhs_scale=a[3],
                                preferred_element_type=np.float32),
      (lhs, rhs, ls, rs), scaled_l @ scaled_r, np.float32, rtol=2e-2, atol=2e-2)
  assert out.shape == (3, 2)
  assert lax.scaled_dot(lhs, rhs).dtype == dtypes.bfloat16
  with pytest.raises(ValueError, match="multiple"):
    lax.scaled_dot(lhs, rhs, lhs_scale=np.ones((3, 3), np.float32))
