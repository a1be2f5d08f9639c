"""Host callbacks as JAX's own tests use them: what the callback is handed (Arrays on the
host's CPU device), what a failing one logs, the 64-bit result check, ``legacy_vectorized``,
the transformations that refuse an IO effect, callbacks in programs partitioned over a mesh
(one device runs them) and ``experimental.pjit``."""
from __future__ import annotations

import functools
import logging
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.experimental import io_callback

from util import assert_close


def _sds(x):
  return hlox.ShapeDtypeStruct(np.shape(x), x.dtype)


# --- what the callback gets ---------------------------------------------------------------

@pytest.mark.parametrize("kind", ["pure", "io", "io_ordered", "debug"])
def test_callback_gets_arrays_on_the_host_cpu_device(kind):
  seen = []

  def cb(x):
    seen.append((isinstance(x, hlox.Array), x.devices()))
    return jnp.sin(x) * 2  # it may compute with hlox itself

  def f(x):
    if kind == "debug":
      hlox.debug.callback(cb, x)
      return x
    call = hlox.pure_callback if kind == "pure" else functools.partial(
        io_callback, ordered=kind == "io_ordered")
    return call(cb, _sds(x), x)

  x = np.linspace(0, 1, 4, dtype=np.float32)
  for g in (f, hlox.jit(f)):
    out = g(x)
    if kind != "debug":
      assert_close(out, 2 * np.sin(x), np.float32)
  hlox.effects_barrier()
  cpu0 = hlox.devices("cpu")[0]
  assert seen == [(True, {cpu0})] * 2


def test_callback_computing_inside_a_partitioned_program():
  # The callback runs on one of XLA's threads here and compiles an eager operation there.
  mesh = hlox.sharding.Mesh(np.array(hlox.devices()[:2]), ["x"])
  f = hlox.jit(lambda x: hlox.pure_callback(lambda a: jnp.cos(a) + 1, _sds(x), x),
               in_shardings=hlox.NamedSharding(mesh, hlox.P("x")),
               out_shardings=hlox.NamedSharding(mesh, hlox.P()))
  x = np.arange(8, dtype=np.float32) / 7
  assert_close(f(x), np.cos(x) + 1, np.float32)
  assert_close(f(x + 1), np.cos(x + 1) + 1, np.float32)


def test_64_bit_results_are_refused_without_x64():
  for call in (hlox.pure_callback, io_callback):
    for dtype in (np.float64, np.int64, "complex128"):
      with pytest.raises(ValueError, match="result_shape_dtypes cannot specify 64-bit types"):
        hlox.jit(lambda: call(lambda: np.zeros((), dtype),
                              hlox.ShapeDtypeStruct((), dtype)))()
  # A Python literal for a 32-bit declared type is fine.
  out = hlox.jit(lambda: hlox.pure_callback(lambda: 42, hlox.ShapeDtypeStruct((), np.int32)))()
  assert int(out) == 42 and out.dtype == np.int32


@pytest.mark.parametrize("kind,api", [("pure", "jax.pure_callback"), ("io", "jax.io_callback"),
                                      ("debug", "jax.debug.callback")])
def test_failing_callback_is_logged(kind, api, caplog):
  def fail(x):
    raise KeyError("oops")

  def f(x):
    if kind == "debug":
      hlox.debug.callback(fail, x)
      return x
    call = hlox.pure_callback if kind == "pure" else io_callback
    return call(fail, _sds(x), x)

  for g in (f, hlox.jit(f)):
    caplog.clear()
    with caplog.at_level(logging.ERROR):
      with pytest.raises(Exception):
        hlox.block_until_ready(g(np.float32(1)))
    records = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in records] == [f"{api} failed"]
    assert records[0].exc_info[0] is KeyError and "Traceback" in caplog.text


def test_debug_print_formats_host_values_and_logs_nothing(capsys, caplog):
  with caplog.at_level(logging.ERROR):
    hlox.jit(lambda x: hlox.debug.print("{}", x))(np.arange(3, dtype=np.float32))
  assert capsys.readouterr().out == "[0. 1. 2.]\n"
  assert not caplog.records


# --- vmap ---------------------------------------------------------------------------------

def test_legacy_vectorized_passes_unbatched_operands_as_they_are():
  shapes = []

  def cb(x, y):
    shapes.append((x.shape, y.shape))
    return np.sin(np.asarray(x)) + np.asarray(y)

  @hlox.jit
  @functools.partial(hlox.vmap, in_axes=(1, None), out_axes=1)
  def h(x, y):
    return hlox.pure_callback(cb, _sds(x), x, y, vmap_method="legacy_vectorized")

  x = np.arange(8, dtype=np.float32).reshape(2, 4)
  assert_close(h(x, np.float32(4)), np.sin(x) + 4, np.float32)
  assert shapes == [((4, 2), ())]  # the batch axis first; y as it was


def test_vmap_of_cond_or_while_with_an_io_callback_and_a_batched_predicate():
  def f(pred):
    return lax.cond(pred, lambda: io_callback(lambda: None, None),
                    lambda: io_callback(lambda: None, None))

  with pytest.raises(NotImplementedError, match="IO effect not supported in vmap-of-cond"):
    hlox.vmap(f)(jnp.array([True, False]))

  calls = []

  def body(i):
    io_callback(lambda v: calls.append(int(v)), None, i)
    return i + 1

  g = lambda i: lax.while_loop(lambda i: i < 5, body, i)
  with pytest.raises(NotImplementedError,
                     match="not supported in while_loop with batched predicate"):
    hlox.vmap(g)(jnp.array([0, 4]))
  assert calls == []  # refused while tracing, before anything ran

  # With the predicate shared by the batch, each example's call happens as it should.
  h = lambda p, x: lax.cond(p, lambda x: io_callback(lambda a: a * 2, _sds(x), x),
                            lambda x: x, x)
  assert_close(hlox.vmap(h, in_axes=(None, 0))(True, jnp.arange(3.0)), [0.0, 2.0, 4.0],
               np.float32)
  assert_close(hlox.vmap(lambda i: lax.while_loop(lambda c: c[0] < 3, lambda c: (
      c[0] + 1, io_callback(lambda a: a + 1, _sds(c[1]), c[1])), (0, i))[1])(
          jnp.arange(2.0)), [3.0, 4.0], np.float32)


# --- differentiation ----------------------------------------------------------------------

def test_io_callback_refuses_transpose_and_ad_of_checkpoint():
  f = lambda x: io_callback(lambda a: a, _sds(x), x)
  with pytest.raises(ValueError, match="IO callbacks do not support transpose"):
    hlox.linear_transpose(f, jnp.float32(1))(jnp.float32(1))

  @hlox.checkpoint
  def g(x, y):
    io_callback(lambda a: a, _sds(y), y)
    return x * 2

  with pytest.raises(NotImplementedError, match="Effects not supported in partial-eval of "
                     "`checkpoint`/`remat`"):
    hlox.grad(g)(2.0, 3.0)
  # Without differentiation it runs, and a debug callback (no IO effect) may be rematted.
  assert float(g(2.0, 3.0)) == 4.0

  @hlox.checkpoint
  def k(x):
    hlox.debug.callback(lambda a: None, x)
    return jnp.sin(x)

  assert_close(hlox.grad(k)(0.5), np.cos(0.5), np.float32)


# --- programs partitioned over a mesh -----------------------------------------------------

def _mesh():
  return hlox.sharding.Mesh(np.array(hlox.devices()), ["x"])


def test_callbacks_in_a_partitioned_program_run_once_on_one_device():
  mesh = _mesh()
  seen = []

  def f(x):
    io_callback(lambda a: seen.append(("io", a.tolist())), None, x)
    y = io_callback(lambda a: a + 1, _sds(x), x, ordered=True)
    io_callback(lambda a: seen.append(("ordered", a.tolist())), None, y, ordered=True)
    return hlox.pure_callback(lambda a: a * 2, _sds(x), y)

  g = hlox.jit(f, in_shardings=hlox.NamedSharding(mesh, hlox.P("x")),
               out_shardings=hlox.NamedSharding(mesh, hlox.P()))
  x = jnp.arange(mesh.size, dtype=jnp.float32)
  assert_close(g(x), 2 * (np.arange(mesh.size) + 1), np.float32)
  hlox.effects_barrier()
  assert sorted(seen) == [("io", list(range(mesh.size))),
                          ("ordered", list(range(1, mesh.size + 1)))]
  text = g.lower(x).as_text()
  assert "sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]>" in text
  # every callback (an ordered one: its token too) placed on the mesh's device 0
  assert text.count("sdy.sharding = #sdy.sharding_per_value<[<@maximal_mesh_0, []>") == 4
  assert ("sdy.sharding_per_value<[<@maximal_mesh_0, []>, <@maximal_mesh_0, []>]>" in text)


def test_pjit_is_jit_under_its_old_name():
  from hlox.experimental import pjit as pjit_module
  with pytest.warns(DeprecationWarning, match="Please use `jax.jit` instead"):
    pjit = pjit_module.pjit
  assert "pjit" in dir(pjit_module)
  mesh = _mesh()
  f = pjit(lambda x, k: x * k, hlox.NamedSharding(mesh, hlox.P("x")),
           hlox.NamedSharding(mesh, hlox.P()), static_argnums=1)
  x = jnp.arange(mesh.size, dtype=jnp.float32)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    out = f(x, 3)
  assert_close(out, 3 * np.arange(mesh.size), np.float32)
  assert out.sharding == hlox.NamedSharding(mesh, hlox.P())
  assert_close(pjit(jnp.sin)(x), np.sin(np.arange(mesh.size)), np.float32)


def test_a_one_device_sharding_picks_the_device_that_runs_the_callback():
  mesh = _mesh()
  last = hlox.devices()[-1]
  single = hlox.sharding.SingleDeviceSharding(last)
  seen = []

  def f(x):
    io_callback(lambda a: seen.append(a.tolist()), None, x, sharding=single, ordered=True)
    return hlox.pure_callback(lambda a: a + 1, _sds(x), x, sharding=single)

  g = hlox.jit(f, in_shardings=hlox.NamedSharding(mesh, hlox.P("x")),
               out_shardings=hlox.NamedSharding(mesh, hlox.P()))
  x = jnp.arange(mesh.size, dtype=jnp.float32)
  assert_close(g(x), np.arange(mesh.size) + 1, np.float32)
  hlox.effects_barrier()
  assert seen == [list(range(mesh.size))]
  index = mesh.size - 1
  text = g.lower(x).as_text()
  assert f"sdy.mesh @maximal_mesh_{index} = <[], device_ids=[{index}]>" in text
  assert "maximal_mesh_0" not in text
  # As JAX prints it, and without a mesh it changes nothing.
  assert "sharding=None" in str(hlox.make_jaxpr(
      lambda x: hlox.pure_callback(np.sin, _sds(x), x))(np.float32(1)))
  assert_close(hlox.jit(f)(np.arange(2, dtype=np.float32)), [1, 2], np.float32)
  two = hlox.NamedSharding(mesh, hlox.P("x"))
  with pytest.raises(NotImplementedError, match="only support a sharding on one device"):
    g2 = hlox.jit(lambda x: hlox.pure_callback(lambda a: a, _sds(x), x, sharding=two),
                  in_shardings=two)
    g2(x)


def test_debug_callbacks_in_a_partitioned_program(capsys):
  mesh = _mesh()
  f = hlox.jit(lambda x: (hlox.debug.print("x={}", x),
                          hlox.debug.callback(lambda a: print("sum", int(a.sum())), x),
                          x * 2)[-1],
               in_shardings=hlox.NamedSharding(mesh, hlox.P("x")))
  x = jnp.arange(mesh.size, dtype=jnp.int32)
  assert_close(f(x), 2 * np.arange(mesh.size), np.int32)
  hlox.effects_barrier()
  out = capsys.readouterr().out.splitlines()
  assert sorted(out) == sorted([f"x={np.arange(mesh.size)}", f"sum {sum(range(mesh.size))}"])
