"""Structured control flow: cond/switch, while_loop, fori_loop, scan, map — forward, jit,
printing, caching, JVP, reverse mode, vmap, errors, and a small RNN trained with scan."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import enable_x64

from tests.check_grads import check_grads, check_grads_x64
from tests.util import assert_close, check_eager_and_jit

rng = np.random.default_rng(0)
f32 = np.float32


# --- cond / switch -----------------------------------------------------------------------

def test_cond_eager_and_jit():
  x = rng.standard_normal(3).astype(f32)
  for pred in (True, False, np.bool_(True), 0, 3):
    fn = lambda x, pred=pred: lax.cond(pred, lambda v: jnp.sin(v) * 2, lambda v: v + 1, x)
    ref = np.sin(x) * 2 if pred else x + 1
    check_eager_and_jit(fn, (x,), ref, f32)
  jitted = hlox.jit(lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: v - 1, x))
  assert_close(jitted(True, x), x * 2)
  assert_close(jitted(False, x), x - 1)


def test_cond_pytrees_and_closures():
  a = np.arange(3, dtype=f32)
  c = np.float32(5)

  def fn(p, ops):
    return lax.cond(p, lambda d: {"s": d["x"] + c, "t": (d["y"] * a,)},
                    lambda d: {"s": d["x"] - a, "t": (d["y"] - c,)}, ops)
  ops = {"x": np.ones(3, f32), "y": np.full(3, 2, f32)}
  for p in (True, False):
    out = hlox.jit(fn)(p, ops)
    assert set(out) == {"s", "t"}
    assert_close(out["s"], np.ones(3, f32) + c if p else 1 - a)
    assert_close(out["t"][0], 2 * a if p else np.full(3, 2 - c, f32))
  # several operands
  assert_close(lax.cond(True, lambda x, y: x * y, lambda x, y: x + y, f32(2), f32(3)), f32(6))


def test_switch_clamps_index():
  branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
  x = np.arange(4, dtype=f32)
  for i, mult in ((-5, 1), (0, 1), (1, 2), (2, 3), (7, 3)):
    check_eager_and_jit(lambda x, i=i: lax.switch(i, branches, x), (x,), x * mult, f32)
  jitted = hlox.jit(lambda i, x: lax.switch(i, branches, x))
  for i, mult in ((-1, 1), (1, 2), (9, 3)):
    assert_close(jitted(np.int32(i), x), x * mult)
  assert_close(lax.switch(0, [lambda x: x + 1], x), x + 1)


# --- loops -------------------------------------------------------------------------------

def test_while_loop():
  def fn(x):
    return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))
  x = np.array([1.0, 2.0], f32)
  i, out = fn(x)
  assert int(i) == 10
  assert_close(out, x * 1.5 ** 10)
  i, out = hlox.jit(fn)(x)
  assert int(i) == 10
  assert_close(out, x * 1.5 ** 10)
  # zero iterations
  assert_close(lax.while_loop(lambda c: c > 100, lambda c: c + 1, f32(3)), f32(3))


def test_fori_loop():
  out = lax.fori_loop(2, 5, lambda i, x: x + i, 1)
  assert int(out) == 10
  assert int(hlox.jit(lambda lo, hi: lax.fori_loop(lo, hi, lambda i, x: x + i, 1))(2, 5)) == 10
  assert int(lax.fori_loop(np.int32(2), 5, lambda i, x: x + i, 1)) == 10
  assert int(lax.fori_loop(5, 2, lambda i, x: x + i, 1)) == 1
  # pytree carry, Python-int bounds under jit
  fn = hlox.jit(lambda x: lax.fori_loop(0, 4, lambda i, c: (c[0] * 2, c[1] + i), (x, 0)))
  a, b = fn(f32(1.5))
  assert_close(a, f32(24))
  assert int(b) == 6


def test_scan_forward_and_reverse():
  def body(c, x):
    c = c * 0.9 + x["a"] * x["b"]
    return c, (c, x["a"] - c)
  xs = {"a": rng.standard_normal((6, 3)).astype(f32),
        "b": rng.standard_normal((6, 3)).astype(f32)}
  init = np.zeros(3, f32)

  def reference(reverse):
    c, ys1, ys2 = init, [], []
    order = range(5, -1, -1) if reverse else range(6)
    out1, out2 = [None] * 6, [None] * 6
    for t in order:
      c = c * f32(0.9) + xs["a"][t] * xs["b"][t]
      out1[t], out2[t] = c, xs["a"][t] - c
    return c, np.stack(out1), np.stack(out2)

  for reverse in (False, True):
    fn = lambda init, xs, reverse=reverse: lax.scan(body, init, xs, reverse=reverse)
    c_ref, y1, y2 = reference(reverse)
    for f in (fn, hlox.jit(fn)):
      c, (ys1, ys2) = f(init, xs)
      assert_close(c, c_ref, f32)
      assert_close(ys1, y1, f32)
      assert_close(ys2, y2, f32)


def test_scan_no_xs_and_unroll():
  c, ys = lax.scan(lambda c, _: (c + 1, c * 2), 0, None, length=4)
  assert int(c) == 4
  np.testing.assert_array_equal(np.asarray(ys), [0, 2, 4, 6])
  xs = np.arange(7, dtype=f32)
  body = lambda c, x: (c * 0.5 + x, c)
  for reverse in (False, True):
    c_ref, y_ref = lax.scan(body, f32(1), xs, reverse=reverse)
    for unroll in (2, 3, 10, True):
      c, ys = hlox.jit(lambda xs: lax.scan(body, f32(1), xs, unroll=unroll,
                                           reverse=reverse))(xs)
      assert_close(c, c_ref, f32)
      assert_close(ys, y_ref, f32)
  c, ys = lax.scan(lambda c, x: (c, x), (), np.zeros((0, 2), f32))
  assert np.asarray(ys).shape == (0, 2)


def test_map():
  xs = rng.standard_normal((7, 3)).astype(f32)
  ref = np.sin(xs).sum(1)
  check_eager_and_jit(lambda xs: lax.map(lambda x: jnp.sin(x).sum(), xs), (xs,), ref, f32)
  check_eager_and_jit(lambda xs: lax.map(lambda x: jnp.sin(x).sum(), xs, batch_size=3),
                      (xs,), ref, f32)
  out = lax.map(lambda d: d["u"] * 2, {"u": xs})
  assert_close(out, xs * 2)


# --- printing and tracing once -----------------------------------------------------------

def test_printed_jaxprs():
  text = str(hlox.make_jaxpr(lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: v + 1,
                                                   x))(True, f32(1)))
  assert "cond[" in text and "branches=(" in text
  assert "mul" in text and "add" in text
  text = str(hlox.make_jaxpr(lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2,
                                                      x))(f32(1)))
  assert "while[" in text and "body_jaxpr={" in text and "cond_jaxpr={" in text
  text = str(hlox.make_jaxpr(lambda xs: lax.scan(lambda c, x: (c + x, c), f32(0), xs))(
      np.ones(3, f32)))
  assert "scan[" in text and "jaxpr={" in text and "length=3" in text
  assert "reverse=False" in text


def test_body_traced_once_per_signature():
  count = [0]

  def body(c, x):
    count[0] += 1
    return c + x, c

  xs = np.ones(4, f32)
  for _ in range(3):
    lax.scan(body, f32(0), xs)
  assert count[0] == 1
  lax.scan(body, f32(0), np.ones((4, 2), f32)[:, 0])  # same signature again
  assert count[0] == 1
  lax.scan(body, np.zeros(2, f32), np.ones((4, 2), f32))
  assert count[0] == 2
  calls = [0]

  def branch(x):
    calls[0] += 1
    return x * 2
  for p in (True, False, True):
    lax.cond(p, branch, lambda x: x, f32(1))
  assert calls[0] == 1
  wcalls = [0]

  def wbody(c):
    wcalls[0] += 1
    return c + 1
  fori_body = lambda i, c: wbody(c)
  for _ in range(3):
    lax.while_loop(lambda c: c < 5, wbody, np.int32(0))
    lax.fori_loop(0, 3, fori_body, np.int32(0))
  assert wcalls[0] == 2


# --- autodiff ----------------------------------------------------------------------------

def _rnn_like(c, xs):
  def body(c, x):
    c = jnp.tanh(c * x + jnp.sin(c))
    return c, c * x
  c, ys = lax.scan(body, c, xs)
  return jnp.sum(c) + jnp.sum(ys)


def test_scan_grads():
  with enable_x64():
    c = np.array([0.3, -0.2])
    xs = rng.standard_normal((4, 2))
    check_grads(_rnn_like, (c, xs), order=2, modes=("fwd", "rev"))
    rev = lambda c, xs: lax.scan(lambda c, x: (c * x, c + x), c, xs, reverse=True)
    check_grads(rev, (c, xs), order=1, modes=("fwd", "rev"))
  g = hlox.jit(hlox.grad(_rnn_like, argnums=(0, 1)))(c.astype(f32), xs.astype(f32))
  g2 = hlox.grad(_rnn_like, argnums=(0, 1))(c.astype(f32), xs.astype(f32))
  assert_close(g[0], g2[0], f32, rtol=1e-5, atol=1e-5)
  assert_close(g[1], g2[1], f32, rtol=1e-5, atol=1e-5)


def test_scan_grad_closure_and_consts():
  w = rng.standard_normal((3, 3)).astype(f32) * 0.5
  xs = rng.standard_normal((5, 3)).astype(f32)

  def loss(w, xs):
    c, _ = lax.scan(lambda c, x: (jnp.tanh(c @ w + x), None), jnp.zeros(3, w.dtype), xs)
    return jnp.sum(c ** 2)

  with enable_x64():
    check_grads(loss, (w.astype(np.float64), xs.astype(np.float64)), order=1,
                modes=("fwd", "rev"))
  # Residual consts are not stacked per step: the known scan stacks per-step values only.
  text = str(hlox.make_jaxpr(hlox.grad(loss))(w, xs))
  assert text.count("scan[") >= 2


def test_cond_and_switch_grads():
  with enable_x64():
    x = np.array([0.4, -1.3])
    for p in (True, False):
      f = lambda x, p=p: lax.cond(p, lambda v: jnp.sin(v) * v, lambda v: jnp.exp(v) * 2, x)
      check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    for i in (0, 1, 2):
      f = lambda x, y, i=i: lax.switch(i, [lambda a, b: a * b, lambda a, b: jnp.sin(a) + b,
                                           lambda a, b: a * 3.0], x, y)
      check_grads(f, (x, np.array([2.0, 0.5])), order=2, modes=("fwd", "rev"))
    g = lambda x: lax.cond(x > 0, lambda v: jnp.sin(v) * 2, lambda v: v * v, x)
    assert_close(hlox.grad(g)(1.0), 2 * np.cos(1.0))
    assert_close(hlox.jit(hlox.grad(g))(-1.5), -3.0)
  text = str(hlox.make_jaxpr(hlox.grad(lambda x: lax.cond(True, jnp.sin, jnp.cos, x)))(f32(1)))
  assert text.count("cond[") == 2


def test_fori_and_while_grads():
  with enable_x64():
    f = lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x, x)
    check_grads(f, (np.array([0.7, 1.1]),), order=2, modes=("fwd", "rev"))
    w = lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.sin(c[1]) * x),
                                 (0, x))[1]
    check_grads(w, (np.array([0.7, 1.1]),), order=2, modes=("fwd",))
  assert_close(hlox.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.0))(2.0), 12.0)
  # concrete (untraced) array bounds are static too
  assert_close(hlox.grad(lambda x: lax.fori_loop(jnp.asarray(0), jnp.asarray(3),
                                                 lambda i, c: c * x, 1.0))(2.0), 12.0)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    hlox.grad(lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * x, 1.0))(2.0)
  with pytest.raises(ValueError, match="lax.scan"):
    hlox.grad(lambda x: hlox.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0))(
        x, 3))(2.0)


# --- vmap --------------------------------------------------------------------------------

def _loop(fn, *args):
  n = np.asarray(args[0]).shape[0]
  return np.stack([np.asarray(fn(*[a[i] for a in args])) for i in range(n)])


def test_vmap_cond():
  xs = rng.standard_normal((5, 3)).astype(f32)
  preds = np.array([True, False, True, True, False])
  f = lambda p, x: lax.cond(p, lambda v: jnp.sin(v) * 2, lambda v: v - 1, x)
  for g in (hlox.vmap(f), hlox.jit(hlox.vmap(f))):
    assert_close(g(preds, xs), _loop(f, preds, xs), f32)
  # unbatched predicate stays a cond
  h = hlox.vmap(lambda x: f(True, x))
  assert_close(h(xs), np.sin(xs) * 2, f32)
  assert "cond[" in str(hlox.make_jaxpr(h)(xs))
  assert "select_n" in str(hlox.make_jaxpr(hlox.vmap(f))(preds, xs))
  # in_axes=1 and an unbatched operand
  k = hlox.vmap(lambda p, x, y: lax.cond(p, lambda a, b: a * b, lambda a, b: a - b, x, y),
                in_axes=(0, 1, None))
  y = np.arange(3, dtype=f32)
  assert_close(k(preds, xs.T, y), _loop(lambda p, x: f32(1) * (x * y if p else x - y),
                                        preds, xs), f32)


def test_vmap_switch():
  idx = np.array([-1, 0, 1, 2, 5], np.int32)
  xs = rng.standard_normal((5, 2)).astype(f32)
  branches = [lambda x: x + 1, lambda x: x * 3, jnp.sin]
  f = lambda i, x: lax.switch(i, branches, x)
  assert_close(hlox.vmap(f)(idx, xs), _loop(f, idx, xs), f32)
  assert_close(hlox.vmap(lambda x: f(1, x))(xs), xs * 3, f32)


def test_vmap_while_batched_predicate():
  limits = np.array([1.0, 5.0, 30.0, 0.5], f32)
  f = lambda lim, x: lax.while_loop(lambda c: c[1] < lim, lambda c: (c[0] + 1, c[1] * 2),
                                    (0, x))
  x = f32(1)
  for g in (hlox.vmap(f, in_axes=(0, None)), hlox.jit(hlox.vmap(f, in_axes=(0, None)))):
    n, v = g(limits, x)
    np.testing.assert_array_equal(np.asarray(n), [0, 3, 5, 0])
    assert_close(v, np.array([1, 8, 32, 1], f32))
  # batched carry, unbatched predicate
  h = hlox.vmap(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, x))
  assert_close(h(np.arange(3, dtype=f32)), np.arange(3) * 8 + 4, f32)
  w = hlox.vmap(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x),
                                         (0, f32(1)))[1])
  assert_close(w(np.array([2.0, 3.0], f32)), np.array([8.0, 27.0], f32))


def test_vmap_scan():
  xs = rng.standard_normal((4, 6, 3)).astype(f32)   # batch 4, length 6
  c0 = rng.standard_normal((4, 3)).astype(f32)
  w = rng.standard_normal((3, 3)).astype(f32) * 0.3

  def f(c, xs):
    return lax.scan(lambda c, x: (jnp.tanh(c @ w + x), c.sum()), c, xs)

  c_ref = np.stack([np.asarray(f(c0[i], xs[i])[0]) for i in range(4)])
  y_ref = np.stack([np.asarray(f(c0[i], xs[i])[1]) for i in range(4)])
  for g in (hlox.vmap(f), hlox.jit(hlox.vmap(f))):
    c, ys = g(c0, xs)
    assert_close(c, c_ref, f32, rtol=1e-5, atol=1e-5)
    assert_close(ys, y_ref, f32, rtol=1e-5, atol=1e-5)
  # only xs batched (carry becomes batched through the fixpoint), xs mapped along axis 1
  c, ys = hlox.vmap(f, in_axes=(None, 1))(c0[0], np.swapaxes(xs, 0, 1))
  c_ref = np.stack([np.asarray(f(c0[0], xs[i])[0]) for i in range(4)])
  assert_close(c, c_ref, f32, rtol=1e-5, atol=1e-5)
  # batched consts only
  g = hlox.vmap(lambda w: lax.scan(lambda c, x: (c * w + x, c), f32(0), np.ones(3, f32)))
  c, ys = g(np.array([1.0, 2.0], f32))
  assert_close(c, np.array([3.0, 7.0], f32))


def test_vmap_of_grad_and_grad_of_vmap():
  xs = rng.standard_normal((3, 4, 2)).astype(f32)
  c0 = rng.standard_normal((3, 2)).astype(f32)
  per_example = hlox.vmap(hlox.grad(_rnn_like))(c0, xs)
  ref = np.stack([np.asarray(hlox.grad(_rnn_like)(c0[i], xs[i])) for i in range(3)])
  assert_close(per_example, ref, f32, rtol=1e-5, atol=1e-5)
  total = hlox.grad(lambda c: jnp.sum(hlox.vmap(_rnn_like)(c, xs)))(c0)
  assert_close(total, ref, f32, rtol=1e-5, atol=1e-5)
  g = lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)
  preds = np.array([True, False, True])
  out = hlox.vmap(hlox.grad(g, argnums=1))(preds, xs[:, 0, 0])
  assert_close(out, np.where(preds, np.cos(xs[:, 0, 0]), -np.sin(xs[:, 0, 0])), f32)


def test_nested_control_flow():
  def f(x):
    def outer(c, row):
      inner = lax.fori_loop(0, 2, lambda i, v: v * row + 1, c)
      return lax.cond(jnp.sum(inner) > 0, lambda v: v * 0.5, lambda v: -v, inner), None
    return jnp.sum(lax.scan(outer, x, x * np.ones((3, 1), f32))[0])
  x = np.array([0.2, -0.4], f32)
  assert_close(hlox.jit(f)(x), f(x))
  with enable_x64():
    check_grads(f, (x.astype(np.float64),), order=1, modes=("fwd", "rev"))


# --- errors ------------------------------------------------------------------------------

def test_errors():
  with pytest.raises(TypeError, match=r"(?s)cond branches must have equal output types.*The "
                                      r"output of true_fun has type float32\[3\] but the "
                                      r"corresponding output of false_fun has type int32\[3\]"):
    lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), np.ones(3, f32))
  with pytest.raises(TypeError, match="shapes do not match"):
    lax.cond(True, lambda x: x, lambda x: x[:2], np.ones(3, f32))
  with pytest.raises(TypeError, match="(?s)cond branch outputs must have the same pytree "
                                      "structure.*true_fun output is a <class 'tuple'> but "
                                      "false_fun output is a pytree leaf"):
    lax.cond(True, lambda x: (x, x), lambda x: x, f32(1))
  with pytest.raises(TypeError, match=r"output of branch 0 at path \['a'\] has type float32\[\] "
                                      r"but the corresponding output of branch1 has type int32"):
    lax.switch(0, [lambda x: {"a": x}, lambda x: {"a": x.astype(np.int32)}], f32(1))
  with pytest.raises(TypeError, match="callable"):
    lax.cond(True, 1, lambda x: x, f32(1))
  with pytest.raises(TypeError, match="callable"):
    lax.switch(0, [lambda x: x, None], f32(1))
  with pytest.raises(ValueError, match="Empty branch sequence"):
    lax.switch(0, [], f32(1))
  with pytest.raises(TypeError, match=r"The input carry component c\[1\] has type float32\[\] "
                                      r"but the corresponding output carry component has type "
                                      r"float32\[2\], so the shapes do not match"):
    lax.scan(lambda c, x: ((c[0], jnp.stack([c[1], c[1]])), x), (f32(0), f32(0)),
             np.ones(3, f32))
  with pytest.raises(TypeError, match=r"(?s)while_loop body function carry input and carry "
                                      r"output must have equal types.*int32\[\].*float32\[\].*"
                                      r"dtypes do not match"):
    lax.while_loop(lambda c: c < 3, lambda c: c * 1.5, np.int32(0))
  with pytest.raises(TypeError, match="boolean scalar"):
    lax.while_loop(lambda c: c, lambda c: c + 1, f32(0))
  with pytest.raises(ValueError, match=r"different leading axis sizes.*=3.*=4"):
    lax.scan(lambda c, x: (c, x), f32(0), (np.ones(3, f32), np.ones(4, f32)))
  with pytest.raises(ValueError, match="no values to scan over"):
    lax.scan(lambda c, x: (c, x), f32(0), None)
  with pytest.raises(TypeError, match="pair"):
    lax.scan(lambda c, x: c, f32(0), np.ones(3, f32))
  # Structure differences are listed one per path, in JAX's words.
  with pytest.raises(TypeError, match=r"(?s)scan body function carry input and carry output "
                                      r"must have the same pytree structure.*  \* the input "
                                      r"carry component x\[0\] is a <class 'dict'> with 1 child "
                                      r"but .* 2 children, so the numbers of children do not "
                                      r"match, with the symmetric difference of key sets: "
                                      r"\{'b'\};"):
    lax.scan(lambda x, _: (({"a": x[0]["a"], "b": x[0]["a"]},) * 2, None),
             ({"a": np.int32(0)},) * 2, None, length=1)
  with pytest.raises(TypeError, match=r"with pytree metadata \('t',\).*with pytree metadata "
                                      r"\('T',\)"):
    lax.fori_loop(0, 1, lambda i, x: {"T": x["t"]}, {"t": f32(1)})
  with pytest.raises(ValueError) as info:
    lax.scan(lambda c, x: (c, x), f32(0), np.ones(3, f32), length=5)
  assert str(info.value) == ("scan got `length` argument of 5 which disagrees with leading axis "
                             "sizes [3].")
  with pytest.raises(hlox.errors.ConcretizationTypeError,
                     match="The `length` argument to `scan` expects a concrete `int` value"):
    hlox.jit(lambda n: lax.scan(lambda c, z: (c, z), f32(0), None, n))(3)
  with pytest.raises(hlox.errors.ConcretizationTypeError,
                     match="The `unroll` argument to `scan` expects a concrete `int` or `bool`"):
    hlox.jit(lambda u: lax.scan(lambda c, z: (c, z), f32(0), None, 3, unroll=u))(True)


def test_scan_forwards_xs_returned_as_ys():
  # A y that is the x itself is the stacked xs: not an output of the scanned body (as JAX).
  g = lambda x: lax.scan(lambda c, x: (c + 1, (x, x * c)), 0.0, x)  # noqa: E731
  x = np.arange(3, dtype=f32)
  jaxpr = hlox.make_jaxpr(g)(x)
  assert len(jaxpr.eqns[0].params["jaxpr"].jaxpr.outvars) == 2
  for c, (same, prod) in (g(x), hlox.jit(g)(x)):
    assert float(c) == 3.0
    np.testing.assert_array_equal(np.asarray(same), x)
    np.testing.assert_array_equal(np.asarray(prod), x * np.arange(3))
  grad = hlox.grad(lambda x: sum(y.sum() for y in g(x)[1]))(x)
  np.testing.assert_array_equal(np.asarray(grad), 1 + np.arange(3))


def test_fori_loop_float_bounds():
  # As in JAX: concrete float bounds (also behind a JVP tracer) give a scan over their int
  # values, so reverse mode works; traced ones a while_loop, forward mode only.
  f = lambda x: lax.fori_loop(x, x + 2.0, lambda i, c: c * 2.0, x)  # noqa: E731
  assert float(hlox.grad(f)(1.0)) == 4.0
  g = lambda x: lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]  # noqa: E731
  assert float(hlox.jvp(g, (1.0,), (1.0,))[1]) == 4.0
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    hlox.grad(g)(1.0)


# --- an RNN trained with scan ------------------------------------------------------------

def test_rnn_training_loss_decreases():
  r = np.random.default_rng(1)
  T, B, D, H = 8, 4, 3, 6
  xs = r.standard_normal((T, B, D)).astype(f32)
  target = r.standard_normal((B, 1)).astype(f32)
  params = {"wx": (r.standard_normal((D, H)) * 0.3).astype(f32),
            "wh": (r.standard_normal((H, H)) * 0.3).astype(f32),
            "wo": (r.standard_normal((H, 1)) * 0.3).astype(f32)}

  def loss(p, xs, target):
    def step(h, x):
      h = jnp.tanh(x @ p["wx"] + h @ p["wh"])
      return h, jnp.sum(h)
    h, _ = lax.scan(step, jnp.zeros((B, H), f32), xs)
    return jnp.mean((h @ p["wo"] - target) ** 2)

  step = hlox.jit(hlox.value_and_grad(loss))
  losses = []
  for _ in range(5):
    value, g = step(params, xs, target)
    losses.append(float(value))
    params = {k: params[k] - 0.2 * np.asarray(g[k]) for k in params}
  assert losses[-1] < losses[0] * 0.9, losses


def test_eager_grad_of_cond_reuses_compiled_programs():
  from hlox import monitoring

  def branch(x):
    return jnp.sin(x)
  g = hlox.grad(lambda x: lax.cond(x > 0, branch, jnp.cos, x))
  g(1.0)
  with monitoring.count_events() as counts:
    out = g(1.0)
  assert counts.get("compile", 0) == 0, counts
  np.testing.assert_allclose(float(out), np.cos(1.0), rtol=1e-6)


def test_pass_through_values_leave_the_loops_and_branches_as_in_jax():
  # A carry the body returns unchanged, a branch output that is an operand: JAX takes them
  # out of the primitive (vmap then leaves an unbatched one unbatched, out_axes=None works).
  def climb(w, x, limit):
    _, x, w = lax.while_loop(lambda v: v[0] < limit, lambda v: (v[0] + 1, v[1] @ v[2], v[2]),
                             (0, x, w))
    return w, x
  w = jnp.ones((2, 2))
  w2, x2 = hlox.vmap(climb, in_axes=(None, 0, 0), out_axes=(None, 0))(
      w, jnp.ones((4, 2)), jnp.arange(4))
  np.testing.assert_array_equal(w2, w)
  np.testing.assert_array_equal(x2, [[1, 1], [2, 2], [4, 4], [8, 8]])
  jaxpr = hlox.make_jaxpr(climb)(w, jnp.ones(2), 3)
  assert "body_nconsts=1" in str(jaxpr)
  # jvp through the moved carry (now a const of the body)
  loss = lambda w: (climb(w, jnp.arange(2.0), 3)[1] * w[0]).sum()
  check_grads_x64(loss, (np.full((2, 2), 0.5),), order=1, modes=("fwd",))

  def pick(x, y):
    return lax.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)
  y = jnp.array(3.0)
  x2, y2 = hlox.vmap(pick, in_axes=(0, None), out_axes=(0, None))(jnp.arange(3), y)
  assert y2 is y
  np.testing.assert_array_equal(x2, [0, 2, 4])

  def nested(x, y):
    def h(_, y):
      return lax.scan(lambda y, _: (y, None), y, None, length=1)[0]
    return lax.cond(x < 0, h, h, x, y)
  assert float(hlox.vmap(nested, (0, None), None)(jnp.arange(3.0), 3.0)) == 3.0
  f = lambda w, c, xs: lax.scan(lambda c, x: ((c[0] + x @ w, c[1]), x * 2), c, xs)
  (total, kept), ys = f(jnp.ones((2, 2)), (jnp.ones(2), 5.0), jnp.ones((3, 2)))
  assert kept == 5.0
  np.testing.assert_array_equal(total, [7, 7])


def test_gradient_of_vmapped_cond_ignores_the_branch_not_taken():
  # sqrt's derivative at 0 is inf; examples that take the other branch must not see it (as
  # JAX: the untaken branch's operands are constants for those examples).
  eps = 1e-3
  safe = lambda x: lax.cond(x < eps, lambda _: eps, lambda _: jnp.sqrt(x), ())
  x = np.array([0.0, 1.0, 4.0], np.float32)
  grads = hlox.grad(lambda x: hlox.vmap(safe)(x).sum())(x)
  np.testing.assert_allclose(grads, [0.0, 0.5, 0.25])
  np.testing.assert_allclose(np.diag(hlox.jacfwd(hlox.vmap(safe))(x)), [0.0, 0.5, 0.25])
  np.testing.assert_allclose(hlox.vmap(safe)(x), [eps, 1.0, 2.0], rtol=1e-6)
