"""Residuals of reverse-mode scan and cond: what the forward pass saves for the backward pass.

A scan saves, per iteration, only what changes between iterations: values computed from
closed-over constants (``tanh(W)``) are computed once outside the loop and passed unstacked,
and known ``xs`` slices are read from ``xs`` itself rather than copied. A cond passes a
known operand that several branches save once, and branches share residual slots by type.
Numerics are checked against finite differences, JAX (in its own process), jit and vmap.
"""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax

from tests.check_grads import check_grads, check_grads_x64
from tests.util import assert_close, run_in_jax

rng = np.random.default_rng(0)
f32 = np.float32
T, N = 7, 5

W = (rng.standard_normal((N, N)) / 3).astype(f32)
H0 = rng.standard_normal(N).astype(f32)
XS = rng.standard_normal((T, N)).astype(f32)


def rnn(w, h0, xs, reverse=False, unroll=1):
  def step(h, x):
    h = jnp.tanh(jnp.tanh(w) @ h + (w * 2) @ x)
    return h, jnp.sum(h * x)
  h, ys = lax.scan(step, h0, xs, reverse=reverse, unroll=unroll)
  return jnp.sum(h) + jnp.sum(ys)


def nested(w, h0, xs):
  def outer(h, x):
    def inner(g, _):
      return jnp.sin(jnp.tanh(w) @ g) + x, None
    g, _ = lax.scan(inner, h, None, length=3)
    return g, None
  h, _ = lax.scan(outer, h0, xs)
  return jnp.sum(h)


def _scans(closed):
  return [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]


def _stacked_shapes(eqn):
  return [tuple(v.aval.shape) for v in eqn.outvars[eqn.params["num_carry"]:]]


def test_scan_grad_saves_no_stacked_copy_of_w():
  for argnums in (0, 1, 2, (0, 1, 2)):
    closed = hlox.make_jaxpr(hlox.grad(rnn, argnums=argnums))(W, H0, XS)
    fwd, bwd = _scans(closed)
    shapes = _stacked_shapes(fwd)
    assert (T, N, N) not in shapes, (argnums, shapes)
    # Only the carry before and after each step and tanh's derivative change per step, and
    # ``sum(h * x)`` is the one ys; ``xs`` itself is not copied.
    assert len(shapes) <= 4, (argnums, shapes)
    xs_var = closed.jaxpr.invars[2]
    if argnums in (0, (0, 1, 2)):  # d/dW of (2W) @ x needs x: the backward scan reads xs
      assert xs_var in bwd.invars


def test_scan_invariant_residuals_are_consts_of_the_backward_scan():
  closed = hlox.make_jaxpr(hlox.grad(rnn))(W, H0, XS)
  fwd, bwd = _scans(closed)
  consts = bwd.invars[:bwd.params["num_consts"]]
  # tanh(W) and 1 - tanh(W)**2, computed once, unstacked.
  assert sum(tuple(v.aval.shape) == (N, N) for v in consts) >= 2
  tanh_outside = [e for e in closed.jaxpr.eqns if e.primitive.name == "tanh"]
  assert tanh_outside and tanh_outside[0].invars[0] is closed.jaxpr.invars[0]


def test_linearize_saves_no_stacked_copy_of_w():
  closed = hlox.make_jaxpr(lambda w, h, xs: hlox.linearize(rnn, w, h, xs)[0])(W, H0, XS)
  for eqn in _scans(closed):
    assert (T, N, N) not in _stacked_shapes(eqn)
  out, f_jvp = hlox.linearize(rnn, W, H0, XS)
  dw = rng.standard_normal(W.shape).astype(f32)
  _, expected = hlox.jvp(rnn, (W, H0, XS), (dw, np.zeros_like(H0), np.zeros_like(XS)))
  assert_close(out, rnn(W, H0, XS), rtol=1e-5, atol=1e-5)
  assert_close(f_jvp(dw, np.zeros_like(H0), np.zeros_like(XS)), expected, rtol=1e-5,
               atol=1e-5)


def test_nested_scan_hoists_through_both_loops():
  closed = hlox.make_jaxpr(hlox.grad(nested))(W, H0, XS)
  for eqn in _scans(closed):
    assert all(s[-2:] != (N, N) for s in _stacked_shapes(eqn)), _stacked_shapes(eqn)


@pytest.mark.slow  # ~10 s; run with -m slow
def test_scan_grads_numerics():
  w, h0, xs = (a.astype(np.float64) for a in (W, H0, XS[:4]))
  from hlox.config import enable_x64
  with enable_x64():
    # jit: the finite differences then call one executable rather than eager ops.
    check_grads(hlox.jit(rnn), (w, h0, xs), order=2, atol=1e-4, rtol=1e-4)
    for kw in ({"reverse": True}, {"unroll": 3}):
      check_grads(hlox.jit(lambda w, h, xs, kw=kw: rnn(w, h, xs, **kw)), (w, h0, xs),
                  order=1, atol=1e-4, rtol=1e-4)
    check_grads(hlox.jit(nested), (w, h0, xs[:3]), order=1, atol=1e-4, rtol=1e-4)


def test_scan_grads_jit_vmap():
  g = hlox.grad(rnn, argnums=(0, 1))
  eager = g(W, H0, XS)
  jitted = hlox.jit(g)(W, H0, XS)
  for a, b in zip(eager, jitted):
    assert_close(a, b, rtol=1e-5, atol=1e-5)
  batch = np.stack([XS, XS * 0.5, -XS])
  vm = hlox.vmap(g, in_axes=(None, None, 0))(W, H0, batch)
  for i in range(3):
    loop = g(W, H0, batch[i])
    for a, b in zip(vm, loop):
      assert_close(a[i], b, rtol=1e-5, atol=1e-5)


def cond_fn(p, x, w):
  return jnp.sum(lax.cond(p, lambda x: jnp.sin(x) * w, lambda x: jnp.cos(x) * w, x))


def switch_fn(i, x, w):
  branches = [lambda x: jnp.sin(x) * w,
              lambda x: jnp.exp(x[:3]).sum() * jnp.cos(x) * w,
              lambda x: x * 2.0]
  return jnp.sum(lax.switch(i, branches, x))


def test_cond_residuals_passed_once():
  x = rng.standard_normal(N).astype(f32)
  w = rng.standard_normal(N).astype(f32)
  closed = hlox.make_jaxpr(hlox.grad(cond_fn, argnums=1))(True, x, w)
  fwd, bwd = [e for e in closed.jaxpr.eqns if e.primitive.name == "cond"]
  res = bwd.invars[1:-1]  # index first, the cotangent last
  assert len(set(res)) == len(res)
  # w, passed straight through, and one slot that carries sin(x) or cos(x).
  assert len(res) == 2 and closed.jaxpr.invars[2] in res
  assert len(fwd.outvars) == 2


def test_switch_residual_slots_shared_by_type():
  x = rng.standard_normal(N).astype(f32)
  w = rng.standard_normal(N).astype(f32)
  closed = hlox.make_jaxpr(hlox.grad(switch_fn, argnums=(1, 2)))(1, x, w)
  fwd, bwd = [e for e in closed.jaxpr.eqns if e.primitive.name == "cond"]
  res = bwd.invars[1:-1]
  assert len(set(res)) == len(res)
  # Branch 1 saves five values (cos x, sin x, exp x[:3], its sum, a product), branch 0 two
  # (sin x, cos x) that ride in branch 1's f32[5] slots; w is passed once, unsaved.
  assert len(fwd.outvars) - 1 <= 5, fwd.outvars
  assert closed.jaxpr.invars[2] in bwd.invars


def test_cond_grads_numerics():
  x = rng.standard_normal(N)
  w = rng.standard_normal(N)
  from hlox.config import enable_x64
  with enable_x64():
    for p in (True, False):
      check_grads(hlox.jit(lambda x, w, p=p: cond_fn(np.bool_(p), x, w)), (x, w),
                  order=2 if p else 1)
    for i in range(3):
      check_grads(hlox.jit(lambda x, w, i=i: switch_fn(np.int32(i), x, w)), (x, w),
                  order=2 if i == 1 else 1)


def test_cond_grads_jit_vmap():
  x = rng.standard_normal(N).astype(f32)
  w = rng.standard_normal(N).astype(f32)
  g = hlox.grad(switch_fn, argnums=(1, 2))
  idx = np.array([0, 1, 2, 1], np.int32)
  xs = np.stack([x, -x, x * 0.5, x + 1])
  vm = hlox.vmap(g, in_axes=(0, 0, None))(idx, xs, w)
  for k in range(4):
    loop = g(int(idx[k]), xs[k], w)
    jitted = hlox.jit(g)(idx[k], xs[k], w)
    for a, b, c in zip(vm, loop, jitted):
      assert_close(a[k], b, rtol=1e-5, atol=1e-5)
      assert_close(c, b, rtol=1e-5, atol=1e-5)


_JAX_SCRIPT = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
d = json.loads(sys.stdin.read())
w, h0, xs, x, v = (np.asarray(d[k], np.float32) for k in ("w", "h0", "xs", "x", "v"))
def rnn(w, h0, xs, reverse=False):
  def step(h, x):
    h = jnp.tanh(jnp.tanh(w) @ h + (w * 2) @ x)
    return h, jnp.sum(h * x)
  h, ys = lax.scan(step, h0, xs, reverse=reverse)
  return jnp.sum(h) + jnp.sum(ys)
def switch_fn(i, x, w):
  branches = [lambda x: jnp.sin(x) * w,
              lambda x: jnp.exp(x[:3]).sum() * jnp.cos(x) * w,
              lambda x: x * 2.0]
  return jnp.sum(lax.switch(i, branches, x))
out = {"rnn": [np.asarray(g).tolist() for g in jax.grad(rnn, (0, 1, 2))(w, h0, xs)],
       "rnn_rev": [np.asarray(g).tolist() for g in jax.grad(rnn, (0, 1, 2))(w, h0, xs, True)],
       "switch": [[np.asarray(g).tolist() for g in jax.grad(switch_fn, (1, 2))(i, x, v)]
                  for i in range(3)]}
print(json.dumps(out))
"""


def test_grads_match_jax():
  import pytest
  pytest.importorskip("jax")
  x = rng.standard_normal(N).astype(f32)
  v = rng.standard_normal(N).astype(f32)
  want = run_in_jax(_JAX_SCRIPT, {"w": W.tolist(), "h0": H0.tolist(), "xs": XS.tolist(),
                                  "x": x.tolist(), "v": v.tolist()})
  for key, kw in (("rnn", {}), ("rnn_rev", {"reverse": True})):
    got = hlox.grad(lambda *a, kw=kw: rnn(*a, **kw), argnums=(0, 1, 2))(W, H0, XS)
    for a, b in zip(got, want[key]):
      assert_close(a, np.asarray(b, f32), rtol=2e-5, atol=2e-5)
  for i in range(3):
    got = hlox.grad(switch_fn, argnums=(1, 2))(i, x, v)
    for a, b in zip(got, want["switch"][i]):
      assert_close(a, np.asarray(b, f32), rtol=2e-5, atol=2e-5)


def test_jit_residuals_that_are_its_inputs_are_not_outputs():
  """Linearizing a jitted function: a residual that is one of the jit's own (known) inputs
  is passed to the tangent side directly, not returned by the known call (as in JAX)."""
  x = jnp.arange(12.).reshape(3, 4)
  y = jnp.arange(12.).reshape(4, 3)
  g = hlox.jit(jnp.dot)

  def f(y):
    z, g_lin = hlox.linearize(lambda y: g(x, y), y)
    return z, g_lin(y)

  known_call, tangent_call = hlox.make_jaxpr(f)(y).eqns
  assert [v.aval.shape for v in known_call.outvars] == [(3, 3)]  # the primal only
  assert tangent_call.invars[0] is known_call.invars[0]  # x itself, forwarded
  z, z_dot = f(y)
  assert_close(z, np.asarray(x) @ np.asarray(y))
  assert_close(z_dot, np.asarray(x) @ np.asarray(y))
  xs = np.asarray(x, np.float64) / 10
  check_grads_x64(lambda y: jnp.sum(g(xs, jnp.sin(y)) ** 2), (np.asarray(y, np.float64) / 10,))
