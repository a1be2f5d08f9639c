"""Host callbacks: ``pure_callback``, ``experimental.io_callback``, ``debug.callback`` and
``debug.print``, eagerly and under jit, vmap, grad/jvp and control flow, with their errors."""
from __future__ import annotations

import subprocess
import sys
import re
import textwrap
import traceback

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental import io_callback

from check_grads import check_grads
from util import assert_close


def _sds(x):
  return hlox.ShapeDtypeStruct(x.shape, x.dtype)


def _np_sin(x):
  # As in JAX, the callback gets Arrays on the host's CPU device, eagerly and compiled.
  assert isinstance(x, hlox.Array) and x.devices() == {hlox.devices("cpu")[0]}
  return np.sin(x)


def _lines(capsys):
  return capsys.readouterr().out.splitlines()


# --- pure_callback ------------------------------------------------------------------------

def test_pure_callback_eager_and_jit():
  x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
  f = lambda x: hlox.pure_callback(_np_sin, _sds(x), x) * 2 + 1
  assert_close(f(jnp.asarray(x)), np.sin(x) * 2 + 1, np.float32)
  assert_close(hlox.jit(f)(x), np.sin(x) * 2 + 1, np.float32)


def test_pure_callback_pytrees_kwargs_and_statics():
  def cb(a, b, *, scale, label):
    assert label == "tag"  # a non-array leaf stays on the host side of the call
    return {"sum": (a + b) * scale, "n": np.int32(a.size)}

  out_types = {"sum": hlox.ShapeDtypeStruct((3,), np.float32),
               "n": hlox.ShapeDtypeStruct((), np.int32)}

  def f(a, b):
    return hlox.pure_callback(cb, out_types, a, b, scale=np.float32(2), label="tag")

  a, b = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
  for g in (f, hlox.jit(f)):
    out = g(a, b)
    assert_close(out["sum"], (a + b) * 2, np.float32)
    assert int(out["n"]) == 3 and np.asarray(out["n"]).dtype == np.int32


def test_results_are_canonicalized_and_custom_vjp_works():
  # float64 / Python-scalar results stand for float32 with x64 off, as in JAX.
  f = lambda x: hlox.pure_callback(lambda a: np.float64(2.5) * np.asarray(a, np.float64),
                                   _sds(x), x)
  x = np.arange(3, dtype=np.float32)
  assert_close(f(x), 2.5 * x, np.float32)
  assert_close(hlox.jit(f)(x), 2.5 * x, np.float32)
  h = hlox.jit(lambda x: hlox.pure_callback(lambda a: float(a.sum()), _sds(x[0]), x))
  assert_close(h(x), 3.0, np.float32)

  @hlox.custom_vjp
  def g(x):
    return hlox.pure_callback(np.exp, _sds(x), x, vmap_method="sequential")

  g.defvjp(lambda x: (g(x), g(x)), lambda res, ct: (res * ct,))
  assert_close(hlox.jit(hlox.grad(lambda x: g(x).sum()))(x), np.exp(x), np.float32)
  assert_close(hlox.vmap(hlox.grad(lambda x: g(x).sum()))(x[:, None]), np.exp(x)[:, None],
               np.float32)


def test_same_program_text_different_callbacks():
  # Both programs lower to the same text (callbacks are named by position): the executable
  # cache must still tell them apart.
  x = np.linspace(0, 1, 4, dtype=np.float32)
  f = hlox.jit(lambda x: hlox.pure_callback(np.sin, _sds(x), x))
  g = hlox.jit(lambda x: hlox.pure_callback(np.cos, _sds(x), x))
  assert f.lower(x).as_text() == g.lower(x).as_text()
  assert_close(f(x), np.sin(x), np.float32)
  assert_close(g(x), np.cos(x), np.float32)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_vmap_methods(method):
  seen = []

  def cb(x, y):
    seen.append((x.shape, y.shape))
    return x * y

  def f(x, y):
    return hlox.pure_callback(cb, _sds(x), x, y, vmap_method=method)

  xs = np.arange(12, dtype=np.float32).reshape(4, 3)
  y = np.full(3, 2.0, np.float32)
  loop = np.stack([np.asarray(f(x, y)) for x in xs])
  assert_close(loop, xs * y, np.float32)
  seen.clear()
  out = hlox.vmap(f, in_axes=(0, None))(xs, y)
  assert_close(out, xs * y, np.float32)
  expected = {"sequential": [((3,), (3,))] * 4, "expand_dims": [((4, 3), (1, 3))],
              "broadcast_all": [((4, 3), (4, 3))]}[method]
  assert seen == expected
  seen.clear()
  assert_close(hlox.jit(hlox.vmap(f, in_axes=(0, None)))(xs, y), xs * y, np.float32)
  assert seen == expected


def test_pure_callback_vmap_needs_a_method():
  f = lambda x: hlox.pure_callback(np.sin, _sds(x[0]), x[0])
  with pytest.raises(NotImplementedError, match="vmap_method"):
    hlox.vmap(f)(np.ones((2, 1), np.float32))
  with pytest.raises(ValueError, match="vmap_method"):
    hlox.pure_callback(np.sin, _sds(np.ones(2)), np.ones(2), vmap_method="bogus")


def test_pure_callback_not_differentiable_but_custom_jvp_is():
  f = lambda x: hlox.pure_callback(np.sin, _sds(x), x)
  with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
    hlox.grad(lambda x: f(x).sum())(np.ones(3, np.float32))

  @hlox.custom_jvp
  def sin(x):
    return hlox.pure_callback(np.sin, _sds(x), x)

  @sin.defjvp
  def _(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin(x), hlox.pure_callback(np.cos, _sds(x), x) * t

  x = np.linspace(-1, 1, 5, dtype=np.float32)
  assert_close(hlox.grad(lambda x: sin(x).sum())(x), np.cos(x), np.float32)
  assert_close(hlox.jit(hlox.grad(lambda x: sin(x).sum()))(x), np.cos(x), np.float32)
  check_grads(sin, (x,), order=1, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def test_pure_callback_in_scan_and_cond():
  def body(c, x):
    y = hlox.pure_callback(np.sin, _sds(x), x)
    return c + y, y

  xs = np.linspace(0, 2, 5, dtype=np.float32)
  run = hlox.jit(lambda xs: lax.scan(body, np.float32(0), xs))
  total, ys = run(xs)
  assert_close(ys, np.sin(xs), np.float32)
  assert_close(total, np.sin(xs).sum(), np.float32, rtol=1e-5)
  pick = hlox.jit(lambda p, x: lax.cond(p, lambda x: hlox.pure_callback(np.sin, _sds(x), x),
                                        lambda x: x * 0, x))
  assert_close(pick(True, xs), np.sin(xs), np.float32)
  assert_close(pick(False, xs), 0 * xs, np.float32)


# --- errors -------------------------------------------------------------------------------

def test_wrong_result_shape_or_dtype():
  x = np.ones(3, np.float32)
  bad_shape = lambda x: hlox.pure_callback(lambda a: np.ones(4, np.float32), _sds(x), x)
  bad_dtype = lambda x: hlox.pure_callback(lambda a: a.astype(np.int32), _sds(x), x)
  for g in (bad_shape, hlox.jit(bad_shape)):
    with pytest.raises(RuntimeError, match=r"expected ShapeDtypeStruct\(shape=\(3,\), "
                       r"dtype=float32\), got ShapeDtypeStruct\(shape=\(4,\), dtype=float32"):
      g(x)
  for g in (bad_dtype, hlox.jit(bad_dtype)):
    with pytest.raises(RuntimeError, match=r"got ShapeDtypeStruct\(shape=\(3,\), dtype=int32"):
      g(x)


class _Boom(Exception):
  pass


def _explode(x):
  raise _Boom(f"boom at {x.tolist()}")


@pytest.mark.parametrize("kind", ["pure", "debug", "io"])
def test_exception_in_callback_surfaces(kind):
  def f(x):
    if kind == "pure":
      return hlox.pure_callback(_explode, _sds(x), x)
    if kind == "io":
      return io_callback(_explode, _sds(x), x)
    hlox.debug.callback(_explode, x)
    return x + 1

  # As in JAX: a callback failing inside a program (and a returning one run eagerly, which
  # JAX runs as a program) is the runtime's error, whose text holds the callback's
  # traceback; an eager debug callback raises its own exception.
  x = np.arange(2, dtype=np.float32)
  eager = _Boom if kind == "debug" else hlox.errors.JaxRuntimeError
  with pytest.raises(eager, match=r"boom at \[0.0, 1.0\]") as info:
    f(x)
  jitted = hlox.jit(f)
  with pytest.raises(hlox.errors.JaxRuntimeError,
                     match=r"(?s)CpuCallback error.*_explode.*_Boom: boom at \[0.0, 1.0\]") as info:
    jitted(x)
  # The user's exception is the error's cause, with its own traceback.
  assert isinstance(info.value.__cause__, _Boom)
  assert "_explode" in [f.name for f in traceback.extract_tb(info.value.__cause__.__traceback__)]
  with pytest.raises(hlox.errors.JaxRuntimeError):  # the cache-hit path too
    jitted(x)


def test_debug_print_format_errors():
  x = np.ones(2, np.float32)
  with pytest.raises(IndexError, match=r"format string 'a {} b {}'"):
    hlox.debug.print("a {} b {}", x)
  with pytest.raises(KeyError, match="format string"):
    hlox.jit(lambda x: hlox.debug.print("{y}", x=x))(x)
  with pytest.raises(ValueError, match=r"format string '\{\}'.*Unused positional"):
    hlox.debug.print("{}", x, x)


# --- debug.print / debug.callback ---------------------------------------------------------

def test_debug_print_eager_and_jit(capsys):
  x = np.arange(3, dtype=np.float32)

  def f(x):
    hlox.debug.print("x={} y={y:.2f}", x, y=x.sum())
    hlox.debug.print("plain", x[0])
    return x * 2

  assert_close(f(jnp.asarray(x)), x * 2, np.float32)
  assert _lines(capsys) == ["x=[0. 1. 2.] y=3.00", "plain 0.0"]
  assert_close(hlox.jit(f)(x), x * 2, np.float32)
  # Unordered prints: XLA may run independent ones in any order (as in JAX).
  assert sorted(_lines(capsys)) == ["plain 0.0", "x=[0. 1. 2.] y=3.00"]


def test_debug_print_kept_when_result_unused(capsys):
  @hlox.jit
  def f(x):
    hlox.debug.print("{}", x * 3)
    return x

  f(np.float32(2))
  assert _lines(capsys) == ["6.0"]
  assert "debug_print" in str(hlox.make_jaxpr(f)(np.float32(2)))


def test_debug_print_vmap_prints_each_example(capsys):
  f = lambda x, k: (hlox.debug.print("{} {}", x, k), x * k)[1]
  xs = np.arange(6, dtype=np.float32).reshape(3, 2)
  out = hlox.vmap(f, in_axes=(0, None))(xs, np.float32(10))
  assert_close(out, xs * 10, np.float32)
  assert _lines(capsys) == ["[0. 1.] 10.0", "[2. 3.] 10.0", "[4. 5.] 10.0"]
  hlox.jit(hlox.vmap(f, in_axes=(0, None)))(xs, np.float32(10))
  assert _lines(capsys) == ["[0. 1.] 10.0", "[2. 3.] 10.0", "[4. 5.] 10.0"]


def test_debug_print_under_grad_and_jvp_prints_primals(capsys):
  def f(x):
    hlox.debug.print("x {}", x)
    y = jnp.sin(x)
    hlox.debug.print("y {:.4f}", y)
    return y * x

  x = np.float32(0.5)
  expected = np.cos(x) * x + np.sin(x)
  assert_close(hlox.grad(f)(x), expected, np.float32)
  assert _lines(capsys) == ["x 0.5", f"y {np.sin(0.5):.4f}"]
  assert_close(hlox.jit(hlox.grad(f))(x), expected, np.float32)
  assert _lines(capsys) == ["x 0.5", f"y {np.sin(0.5):.4f}"]
  _, t = hlox.jvp(f, (x,), (np.float32(1),))
  assert_close(t, expected, np.float32)
  assert _lines(capsys) == ["x 0.5", f"y {np.sin(0.5):.4f}"]
  check_grads(f, (x,), order=2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)
  capsys.readouterr()


def test_debug_print_in_scan_while_and_cond(capsys):
  def body(c, x):
    hlox.debug.print("step {} {}", c, x)
    return c + 1, x * 2

  hlox.jit(lambda xs: lax.scan(body, np.int32(0), xs))(np.arange(3, dtype=np.float32))
  assert _lines(capsys) == ["step 0 0.0", "step 1 1.0", "step 2 2.0"]

  def wbody(i):
    hlox.debug.print("i={}", i)
    return i + 1

  assert int(hlox.jit(lambda n: lax.while_loop(lambda i: i < n, wbody, 0))(3)) == 3
  assert _lines(capsys) == ["i=0", "i=1", "i=2"]

  def branch(name):
    return lambda x: (hlox.debug.print(name + " {}", x), x)[1]

  pick = hlox.jit(lambda p, x: lax.cond(p, branch("yes"), branch("no"), x))
  pick(True, np.float32(1))
  pick(False, np.float32(2))
  assert _lines(capsys) == ["yes 1.0", "no 2.0"]


def test_callbacks_in_eager_control_flow(capsys):
  # Eager control flow compiles one program per primitive: its callbacks go with it.
  lax.cond(True, lambda x: (hlox.debug.print("cond {}", x), x)[1], lambda x: x, 1.0)
  lax.scan(lambda c, x: (hlox.debug.print("scan {}", x), (c, x))[1], 0.0, jnp.arange(2.0))
  lax.while_loop(lambda i: i < 2,
                 lambda i: (hlox.debug.print("while {}", i, ordered=True), i + 1)[1], 0)
  assert _lines(capsys) == ["cond 1.0", "scan 0.0", "scan 1.0", "while 0", "while 1"]
  with pytest.raises(hlox.errors.JaxRuntimeError, match="_Boom"):
    lax.cond(True, lambda x: hlox.pure_callback(_explode, _sds(x), x), lambda x: x,
             np.float32(1))


def test_debug_callback_with_kwargs_and_statics():
  seen = []
  f = lambda x: hlox.debug.callback(lambda a, tag, b=None: seen.append((tag, a.tolist(), b)),
                                    x, "t", b=x.sum())
  x = np.arange(2, dtype=np.float32)
  assert f(x) is None
  hlox.jit(f)(x)
  assert seen == [("t", [0.0, 1.0], np.float32(1))] * 2


def test_ordered_effects_run_in_program_order(capsys):
  log = []

  def record(tag):
    def cb(x):
      log.append((tag, float(x)))
      return np.asarray(x, np.float32)
    return cb

  @hlox.jit
  def f(x):
    outs = []
    for i in range(8):  # independent calls: only their effects order them
      outs.append(io_callback(record(i), hlox.ShapeDtypeStruct((), np.float32), x + i,
                              ordered=True))
      hlox.debug.print("p{}", i, ordered=True)
    return outs[3]

  assert float(f(np.float32(0))) == 3.0
  assert log == [(i, float(i)) for i in range(8)]
  assert _lines(capsys) == [f"p{i}" for i in range(8)]
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
    hlox.vmap(lambda x: io_callback(record(0), _sds(x[0]), x[0], ordered=True))(np.ones((2, 1)))


def test_ordered_prints_across_control_flow_and_calls(capsys):
  p = lambda s, *a: hlox.debug.print(s, *a, ordered=True)
  inner = hlox.jit(lambda x: (p("in1 {}", x), p("in2 {}", x), x + 1)[2])

  def body(c, x):
    p("body {}", x)
    return c, x

  def f(x):
    p("before {}", x)
    lax.scan(body, 0.0, jnp.arange(2.0))
    p("mid")
    lax.cond(x > 0, lambda: p("yes"), lambda: p("no"))
    lax.fori_loop(0, 2, lambda i, c: (p("fori {}", i), c)[1], 0)
    y = inner(x) * inner(x + 1)  # a jitted body is inlined to join the chain
    p("after {}", y)
    return y

  expected = ["before 1.0", "body 0.0", "body 1.0", "mid", "yes", "fori 0", "fori 1",
              "in1 1.0", "in2 1.0", "in1 2.0", "in2 2.0", "after 6.0"]
  f(1.0)
  assert _lines(capsys) == expected
  assert float(hlox.jit(f)(1.0)) == 6.0
  assert _lines(capsys) == expected


def test_io_callback_kept_and_vmapped():
  calls = []

  def cb(x):
    calls.append(x.tolist())
    return x + 1

  f = hlox.jit(lambda x: (io_callback(cb, _sds(x), x), x * 2)[1])  # result unused: kept
  assert_close(f(np.float32(1)), 2.0, np.float32)
  assert calls == [1.0]
  g = hlox.vmap(lambda x: io_callback(cb, _sds(x), x))
  assert_close(g(np.arange(3, dtype=np.float32)), np.arange(3) + 1.0, np.float32)
  assert calls == [1.0, 0.0, 1.0, 2.0]
  with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
    hlox.grad(lambda x: io_callback(cb, _sds(x), x))(np.float32(1))


def test_callbacks_in_pmap(capsys):
  n = min(hlox.device_count(), 4)
  xs = np.arange(n, dtype=np.float32)

  def f(x):
    hlox.debug.print("replica {}", x)
    return hlox.pure_callback(np.sin, _sds(x), x) + lax.psum(x, "i")

  expected = np.sin(xs) + xs.sum()
  assert_close(hlox.pmap(f, axis_name="i")(xs), expected, np.float32)
  hlox.effects_barrier()
  assert sorted(_lines(capsys)) == [f"replica {float(v)}" for v in xs]  # one per replica
  p = hlox.pmap(f, axis_name="i")
  assert_close(hlox.jit(lambda x: p(x) * 2)(xs), 2 * expected, np.float32)
  assert sorted(_lines(capsys)) == [f"replica {float(v)}" for v in xs]
  # Replicas run asynchronously: the error arrives with the result, holding the text of
  # whichever replica raised first (which one is up to the scheduler).
  with pytest.raises(RuntimeError, match=r"_Boom: boom at [0-9]\.0"):
    np.asarray(hlox.pmap(lambda x: hlox.pure_callback(_explode, _sds(x), x))(xs))


# --- what callbacks must not change -------------------------------------------------------

def test_callback_free_programs_are_unchanged():
  # Checked by hand against the commit before callbacks existed: these programs lowered to
  # byte-identical modules. Here: nothing of the callback machinery leaks into them.
  fs = [lambda x: jnp.sin(x) * 2,
        lambda x: lax.scan(lambda c, y: (c + y, c * y), 0.0, x),
        lambda x: lax.cond(x[0] > 0, jnp.sin, jnp.cos, x),
        lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: c * 2 + 1, x),
        lambda x: hlox.jit(jnp.tanh)(x) + hlox.jit(jnp.tanh)(x + 1)]
  x = np.ones(3, np.float32)
  before = [hlox.jit(f).lower(x).as_text() for f in fs]
  hlox.jit(lambda x: hlox.debug.print("{}", x, ordered=True))(x)
  for f, text in zip(fs, before):
    lowered = hlox.jit(f).lower(x)
    assert lowered.as_text() == text
    assert "custom_call" not in text and "token" not in text and "after_all" not in text
    assert lowered._lowered.host_callbacks == ()


def test_no_jax_import():
  code = textwrap.dedent("""
    import sys, numpy as np, hlox
    f = hlox.jit(lambda x: (hlox.debug.print("v {}", x),
                            hlox.pure_callback(np.sin, hlox.ShapeDtypeStruct((2,), np.float32),
                                               x))[1])
    f(np.ones(2, np.float32))
    hlox.experimental.io_callback(np.cos, hlox.ShapeDtypeStruct((2,), np.float32),
                                  np.ones(2, np.float32))
    assert "jax" not in sys.modules, [m for m in sys.modules if m.startswith("jax.")]
    print("ok")
  """)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.splitlines() == ["v [1. 1.]", "ok"]


def test_matches_jax_debug_print_text(capsys):
  jax = pytest.importorskip("jax")
  x = np.arange(3, dtype=np.float32)
  f = lambda lib: lib.jit(lambda x: (lib.debug.print("a {} b {z:.1f}", x, z=x[1]), x)[1])
  f(jax)(x)
  jax.effects_barrier()
  ref = _lines(capsys)
  f(hlox)(x)
  assert _lines(capsys) == ref


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_methods_match_jax(method):
  jax = pytest.importorskip("jax")

  def run(lib):
    seen = []

    def cb(x, y):
      seen.append((np.shape(x), np.shape(y)))
      return np.asarray(x) + np.asarray(y)

    f = lambda x, y: lib.pure_callback(cb, lib.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                                       vmap_method=method)
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = lib.jit(lib.vmap(f, in_axes=(0, None)))(xs, np.ones(2, np.float32))
    return np.asarray(out), seen

  ours, ours_seen = run(hlox)
  ref, ref_seen = run(jax)
  assert_close(ours, ref, np.float32)
  assert ours_seen == ref_seen


def test_callbacks_lower_to_host_send_and_recv_for_a_tpu():
  # As JAX on a TPU: each operand sent to the host, each non-empty result received, one token
  # chain; a callback with no operands sends a dummy f32[1], one with no results receives a
  # dummy f32[] (run on a TPU by tests/test_tpu.py).
  def f(v):
    y, empty = hlox.pure_callback(
        lambda a: (np.sin(a), np.zeros((0,), np.float32)),
        (hlox.ShapeDtypeStruct((2, 3), jnp.float32), hlox.ShapeDtypeStruct((0,), jnp.float32)),
        v)
    hlox.experimental.io_callback(lambda: None, None, ordered=True)
    return y * 2, empty
  lowered = hlox.jit(f).trace(jnp.ones((2, 3))).lower(lowering_platforms=("tpu",))
  text = lowered.as_text()
  sends = re.findall(r'"stablehlo\.send"\((%[\w#]+), .*handle = (\d+), type = 2>.*'
                     r'_xla_host_transfer_rendezvous = "(\d+)".*: \((tensor<[^>]*>)', text)
  recvs = re.findall(r'"stablehlo\.recv".*handle = (\d+), type = 3>.*'
                     r'_xla_host_transfer_rendezvous = "(\d+)".*-> \((tensor<[^>]*>)', text)
  assert [(s[1] == s[2], s[3]) for s in sends] == [(True, "tensor<2x3xf32>"),
                                                   (True, "tensor<1xf32>")]
  assert [(r[0] == r[1], r[2]) for r in recvs] == [(True, "tensor<2x3xf32>"),
                                                   (True, "tensor<f32>")]
  assert len({s[1] for s in sends} | {r[0] for r in recvs}) == 4  # one channel each
  assert "xla_ffi_python" not in text
  with pytest.raises(RuntimeError):
    lowered.compile()  # not for this machine's platform
