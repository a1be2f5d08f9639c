"""Compile-time traps (issue 13): lowerings that must not grow into large unrolled graphs
where JAX emits loops or out-of-line functions. Each test counts ops in the lowered text (not
time) and checks that the values are bit for bit those of the plain lowering and of JAX."""
from __future__ import annotations

import re

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from tests.check_grads import check_grads

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 6)).astype(np.float32) / 3
XS = RNG.standard_normal((10, 4, 6)).astype(np.float32)
H0 = RNG.standard_normal((4, 6)).astype(np.float32)


def _rnn(unroll, reverse=False):
  def f(h, xs):
    def body(h, x):
      h = jnp.tanh(h @ W + x)
      return h, jnp.sin(h).sum(1)
    return lax.scan(body, h, xs, unroll=unroll, reverse=reverse)
  return f


def _count(text, op):
  return len(re.findall(rf"\b{re.escape(op)}\b", text))


@pytest.mark.parametrize("unroll", [3, 8, True, 0])
def test_unrolled_scan_body_is_lowered_once(unroll):
  text = hlox.jit(_rnn(unroll)).lower(H0, XS).as_text()
  # One copy of the body (one tanh, one sine), called once per unrolled step.
  assert _count(text, "stablehlo.tanh") == 1
  assert _count(text, "stablehlo.sine") == 1
  # (``unroll=0`` unrolls every step, as ``True`` does: JAX's meaning.)
  steps = 10 if unroll is True or unroll == 0 else unroll + 10 % unroll
  assert _count(text, "call @scan_body") == steps
  # A loop that would run once (unroll >= length / 2 here for 8, True, 0) is not emitted.
  assert _count(text, "stablehlo.while") == (1 if unroll == 3 else 0)


def test_rolled_scan_inlines_its_body():
  text = hlox.jit(_rnn(1)).lower(H0, XS).as_text()
  assert _count(text, "stablehlo.while") == 1
  assert _count(text, "func.call") == 0
  assert _count(text, "stablehlo.tanh") == 1


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [3, 6, 8, True, 0])
def test_unrolled_scan_bits_match_rolled(unroll, reverse):
  want = hlox.jit(_rnn(1, reverse))(H0, XS)
  for got in (hlox.jit(_rnn(unroll, reverse))(H0, XS), _rnn(unroll, reverse)(H0, XS)):
    for g, w in zip(hlox.tree_util.tree_leaves(got), hlox.tree_util.tree_leaves(want)):
      # Bit-equal on some CPUs; on others (AMD EPYC without AVX-512) XLA contracts the
      # unrolled and the rolled bodies into FMAs differently: a last-bit difference.
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("unroll", [4, True])
def test_unrolled_scan_matches_numpy(unroll):
  h, ys = hlox.jit(_rnn(unroll))(H0, XS)
  ref_h, ref_ys = H0.astype(np.float64), []
  for x in XS:
    ref_h = np.tanh(ref_h @ W + x)
    ref_ys.append(np.sin(ref_h).sum(1))
  np.testing.assert_allclose(np.asarray(h), ref_h, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(np.asarray(ys), np.stack(ref_ys), rtol=1e-5, atol=1e-5)


def test_unrolled_scan_vmap_matches_loop():
  hs = np.stack([H0, H0 * 0.5, -H0])
  got = hlox.vmap(_rnn(True), in_axes=(0, None))(hs, XS)
  for i, h in enumerate(hs):
    want = _rnn(1)(h, XS)
    for g, w in zip(hlox.tree_util.tree_leaves(got), hlox.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(np.asarray(g)[i], np.asarray(w), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("unroll", [3, True])
def test_unrolled_scan_grads(unroll):
  def loss(h, xs):
    h, ys = _rnn(unroll)(h, xs[:5])
    return jnp.sum(h ** 2) + jnp.sum(ys)
  check_grads(hlox.jit(loss), (H0, XS), order=1, atol=2e-2, rtol=2e-2, eps=1e-2)
  g = hlox.jit(hlox.grad(loss))(H0, XS)
  want = hlox.grad(lambda h, xs: jnp.sum(_rnn(1)(h, xs[:5])[0] ** 2)
                   + jnp.sum(_rnn(1)(h, xs[:5])[1]))(H0, XS)
  np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_unrolled_scan_bits_match_jax():
  jax = pytest.importorskip("jax")
  import jax.numpy as jjnp

  def jax_rnn(h, xs):
    def body(h, x):
      h = jjnp.tanh(h @ W + x)
      return h, jjnp.sin(h).sum(1)
    return jax.lax.scan(body, h, xs, unroll=True)
  want = jax.jit(jax_rnn)(H0, XS)
  got = hlox.jit(_rnn(True))(H0, XS)
  for g, w in zip(hlox.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_empty_and_carry_only_unrolled_scans():
  def f(c):
    return lax.scan(lambda c, _: (c * 2.0 + 1.0, None), c, None, length=5, unroll=True)[0]
  np.testing.assert_array_equal(np.asarray(hlox.jit(f)(np.float32(1.0))), np.float32(63.0))
  out = lax.scan(lambda c, x: (c, x), np.float32(0), np.zeros((0, 3), np.float32),
                 unroll=True)[1]
  assert out.shape == (0, 3)


# --- top_k: one chlo.top_k (XLA's partial-selection kernel), not a full sort ----------------

def _topk_input():
  x = np.random.default_rng(1).standard_normal((5, 40)).astype(np.float32)
  x[0, 3] = x[0, 7] = np.nan
  x[1, :10] = 1.0              # ties keep index order
  x[1, 11] = -np.nan
  x[2, 5], x[2, 6] = -0.0, 0.0
  x[3, 2], x[3, 9] = np.inf, -np.inf
  return x


@pytest.mark.parametrize("axis", [-1, 0])
def test_top_k_lowers_to_one_top_k_op(axis):
  text = hlox.jit(lambda v: lax.top_k(v, 4, axis=axis)).lower(_topk_input()).as_text()
  assert _count(text, "chlo.top_k") == 1
  assert _count(text, "stablehlo.sort") == 0
  # axis 0: the operand moved to the last axis, both results moved back
  assert _count(text, "stablehlo.transpose") == (0 if axis == -1 else 3)


def test_top_k_matches_numpy_jit_and_eager():
  x = np.random.default_rng(2).permutation(60).reshape(3, 20).astype(np.float32)
  order = np.argsort(-x, axis=-1, kind="stable")[:, :5]
  for v, i in (lax.top_k(x, 5), hlox.jit(lambda a: lax.top_k(a, 5))(x)):
    np.testing.assert_array_equal(np.asarray(i), order)
    np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(x, order, -1))
  v0, i0 = lax.top_k(x, 2, axis=0)
  o0 = np.argsort(-x, axis=0, kind="stable")[:2]
  np.testing.assert_array_equal(np.asarray(i0), o0)
  np.testing.assert_array_equal(np.asarray(v0), np.take_along_axis(x, o0, 0))


def test_top_k_vmap_and_grad():
  x = np.random.default_rng(3).standard_normal((4, 3, 12)).astype(np.float32)
  got_v, got_i = hlox.vmap(lambda a: lax.top_k(a, 3))(x)
  for b in range(4):
    v, i = lax.top_k(x[b], 3)
    np.testing.assert_array_equal(np.asarray(got_v)[b], np.asarray(v))
    np.testing.assert_array_equal(np.asarray(got_i)[b], np.asarray(i))
  check_grads(lambda a: lax.top_k(a, 3)[0], (x[0],), order=2, atol=1e-2, rtol=1e-2,
              eps=1e-3)


def test_top_k_bits_match_jax():
  jax = pytest.importorskip("jax")
  import ml_dtypes
  x = _topk_input()
  ints = np.random.default_rng(4).integers(-4, 4, (4, 30))
  for v, k in ((x, 5), (x, 40), (x.astype(np.float16), 7), (x.astype(ml_dtypes.bfloat16), 5),
               (ints.astype(np.int32), 6), (ints.astype(np.int8), 6), (ints > 0, 6)):
    for axis in (-1, 0):
      if k > v.shape[axis]:
        continue
      hv, hi = hlox.jit(lambda a: lax.top_k(a, k, axis=axis))(v)
      jv, ji = jax.jit(lambda a: jax.lax.top_k(a, k, axis=axis))(v)
      np.testing.assert_array_equal(np.asarray(hv).view(np.uint8), np.asarray(jv).view(np.uint8))
      np.testing.assert_array_equal(np.asarray(hi), np.asarray(ji))


# --- threefry on CPU: the rolled loop carries the key schedule at the keys' shape -----------

def test_threefry_loop_carries_scalar_keys():
  from hlox.random import prng
  x = np.arange(1000, dtype=np.uint32)
  text = hlox.jit(lambda a, b: prng.threefry2x32_p.bind(np.uint32(1), np.uint32(2), a, b)
                  ).lower(x, x).as_text()
  sig = next(line for line in text.splitlines() if "stablehlo.while" in line)
  carried = sig.rsplit(":", 1)[1]
  # Two words of bits at full size; the three key words as scalars (not 3 more arrays).
  assert carried.count("tensor<1000xui32>") == 2
  assert carried.count("tensor<ui32>") == 3


@pytest.mark.parametrize("shapes", [((), (), (3, 7)), ((3, 7), (), ()), ((3, 7), (3, 7), (3, 7)),
                                    ((3, 7), (3, 7), ())])
def test_threefry_rolled_bits_match_straight_line(shapes):
  from hlox.random import prng
  rng = np.random.default_rng(5)
  k1s, k2s, xs = shapes
  k1, k2 = (rng.integers(0, 2**32, s, dtype=np.uint64).astype(np.uint32) for s in (k1s, k2s))
  x1, x2 = (rng.integers(0, 2**32, xs, dtype=np.uint64).astype(np.uint32) for _ in range(2))
  got = hlox.jit(prng.threefry2x32_p.bind)(k1, k2, x1, x2)
  want = hlox.jit(prng._threefry2x32_composition)(k1, k2, x1, x2)
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
  batched = hlox.vmap(prng.threefry2x32_p.bind, in_axes=(None, None, 0, 0))(
      k1, k2, np.stack([x1, x2]), np.stack([x2, x1]))
  np.testing.assert_array_equal(np.asarray(batched[0])[0], np.asarray(want[0]))


def test_scalar_uniform_bounds_are_literals_not_parameters():
  # Concrete scalar bounds must not become executable parameters (XLA could not fold them).
  key = hlox.random.PRNGKey(0)
  for f in (lambda k: hlox.random.normal(k, (64,)), lambda k: hlox.random.uniform(k, (4, 5)),
            lambda k: hlox.random.bernoulli(k, 0.3, (8, 8))):
    text = hlox.jit(f).lower(key).as_text()
    main = next(line for line in text.splitlines() if "func.func public @main" in line)
    assert main.count("%arg") == 1, main
  # Array bounds still broadcast: same values as NumPy's affine map of the unit draws.
  lo, hi = np.array([0., 1., 2.], np.float32), np.array([1., 3., 6.], np.float32)
  unit = np.asarray(hlox.random.uniform(key, (2, 3)))
  got = np.asarray(hlox.jit(lambda k: hlox.random.uniform(k, (2, 3), minval=lo, maxval=hi))(key))
  np.testing.assert_allclose(got, np.maximum(lo, unit * (hi - lo) + lo), rtol=1e-6)
