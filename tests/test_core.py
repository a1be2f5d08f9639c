"""The jaxpr IR: tracing, printing (golden texts), checking, DCE, errors for leaks."""
import pickle

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, Var, ShapedArray,
                       check_jaxpr, dce_jaxpr, eval_jaxpr)
from tests.util import printed_here, printed_in_jax


def test_make_jaxpr_golden_simple():
  jaxpr = hlox.make_jaxpr(lambda x: lax.mul(lax.sin(x), 2.0))(np.ones(3, np.float32))
  # JAX 0.10.2 prints this one on one line: it fits in 80 columns.
  assert str(jaxpr) == ("{ lambda ; a:f32[3]. let b:f32[3] = sin a; "
                        "c:f32[3] = mul b 2.0:f32[] in (c,) }")


def test_make_jaxpr_golden_single_line_and_literal_outputs():
  jaxpr = hlox.make_jaxpr(lambda x: (x, x * 2, 3))(1)
  assert str(jaxpr) == "{ lambda ; a:i32[]. let b:i32[] = mul a 2:i32[] in (a, b, 3:i32[]) }"


def test_make_jaxpr_golden_consts_and_nested_jit():
  c = np.arange(3.0, dtype=np.float32)
  inner = hlox.jit(lambda y: lax.sin(y), )
  jaxpr = hlox.make_jaxpr(lambda x: inner(x + c))(np.ones(3, np.float32))
  assert str(jaxpr) == ("{ lambda a:f32[3]; b:f32[3]. let\n"
                        "    c:f32[3] = add b a\n"
                        "    d:f32[3] = jit[\n"
                        "      name=<lambda>\n"
                        # as JAX: the jit's jaxpr binders take the equation's names
                        "      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
                        "    ] c\n"
                        "  in (d,) }")
  np.testing.assert_allclose(np.asarray(jaxpr.consts[0]), c)


def test_make_jaxpr_return_shape_and_static_argnums():
  def f(x, n):
    for _ in range(n):
      x = lax.sin(x)
    return {"y": x}
  jaxpr, shape = hlox.make_jaxpr(f, static_argnums=1, return_shape=True)(
      np.ones((2, 3), np.float32), 3)
  assert [e.primitive.name for e in jaxpr.eqns] == ["sin"] * 3
  assert shape["y"].shape == (2, 3) and shape["y"].dtype == np.float32


def test_eval_jaxpr_matches_direct_call():
  f = lambda x, y: lax.add(lax.mul(x, y), lax.exp(x))
  x, y = np.float32(0.5), np.float32(3.0)
  closed = hlox.make_jaxpr(f)(x, y)
  out, = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
  np.testing.assert_allclose(np.asarray(out), 0.5 * 3.0 + np.exp(0.5), rtol=1e-6)


def test_check_jaxpr_rejects_ill_typed():
  a = Var(ShapedArray((3,), np.float32))
  b = Var(ShapedArray((4,), np.float32))  # wrong: sin keeps the shape
  bad = Jaxpr([], [a], [b], [JaxprEqn([a], [b], lax.sin_p, {})])
  with pytest.raises(JaxprTypeError, match="sin"):
    check_jaxpr(bad)
  c = Var(ShapedArray((3,), np.float32))
  unbound = Jaxpr([], [a], [c], [JaxprEqn([c], [Var(c.aval)], lax.sin_p, {})])
  with pytest.raises(JaxprTypeError, match="before definition"):
    check_jaxpr(unbound)


def test_dce_removes_dead_equations():
  def f(x):
    dead = lax.exp(x)  # noqa: F841
    return lax.sin(x), lax.cos(x)
  closed = hlox.make_jaxpr(f)(np.ones(2, np.float32))
  assert len(closed.eqns) == 3
  pruned, used_inputs = dce_jaxpr(closed.jaxpr, [True, False])
  assert [e.primitive.name for e in pruned.eqns] == ["sin"]
  assert used_inputs == [True]


def test_concretization_error_names_the_argument():
  # JAX's text: the traced function and the argument the value depends on, and the
  # errors page that explains static_argnums and lax.cond
  @hlox.jit
  def f(x):
    if x > 0:
      return x
    return -x
  with pytest.raises(hlox.ConcretizationTypeError,
                     match=r"(?s)Attempted boolean conversion of traced array with shape bool\[\]\."
                     r"\nThe error occurred while tracing the function f at .*test_core.py:\d+ for "
                     r"jit\. This concrete value was not available in Python because it depends "
                     r"on the value of the argument x\.\nSee https://docs.jax.dev/en/latest/"
                     r"errors.html#jax.errors.TracerBoolConversionError"):
    f(1.0)


def test_int_and_index_of_tracer_raise():
  with pytest.raises(hlox.ConcretizationTypeError, match=r"try using `x.astype\(int\)`"):
    hlox.jit(lambda x: int(x))(1)
  with pytest.raises(hlox.TracerIntegerConversionError):
    hlox.jit(lambda x: [1, 2, 3][x])(1)


def test_numpy_conversion_of_tracer_raises():
  with pytest.raises(hlox.TracerArrayConversionError,
                     match=r"__array__\(\) was called on traced array with shape float32\[3\]"):
    hlox.jit(lambda x: np.sin(np.asarray(x)))(np.ones(3, np.float32))


def test_leaked_tracer_is_reported_with_origin():
  leaked = []

  @hlox.jit
  def f(x):
    y = lax.sin(x)
    leaked.append(y)
    return y

  f(np.ones(2, np.float32))
  with pytest.raises(hlox.UnexpectedTracerError, match="test_core.py"):
    lax.cos(leaked[0])
  with pytest.raises(hlox.UnexpectedTracerError, match="already finished"):
    hlox.jit(lambda x: lax.add(x, leaked[0]))(np.ones(2, np.float32))


def test_closure_over_outer_tracer_becomes_argument_of_inner_jit():
  def outer(x):
    inner = hlox.jit(lambda y: lax.mul(x, y))
    return inner(lax.add(x, 1.0))
  out = hlox.jit(outer)(np.float32(2.0))
  assert float(out) == pytest.approx(6.0)
  jaxpr = hlox.make_jaxpr(outer)(np.float32(2.0))
  call = [e for e in jaxpr.eqns if e.primitive.name == "jit"][0]
  assert len(call.invars) == 2  # the closed-over x is passed in


def test_closed_jaxpr_eval_with_consts():
  c = np.array([1.0, 2.0], np.float32)
  closed = hlox.make_jaxpr(lambda x: lax.add(x, c))(np.zeros(2, np.float32))
  assert isinstance(closed, ClosedJaxpr) and len(closed.consts) == 1
  out, = eval_jaxpr(closed.jaxpr, closed.consts, np.ones(2, np.float32))
  np.testing.assert_allclose(np.asarray(out), [2.0, 3.0])


def test_printer_sorts_params_and_wraps_wide_ones_like_jax():
  x = np.ones((3, 4), np.float32)
  text = str(hlox.make_jaxpr(lambda a: lax.reshape(a, (12,)))(x))
  assert "reshape[dimensions=None new_sizes=(12,) sharding=None] a" in text
  text = str(hlox.make_jaxpr(lambda a: lax.broadcast_in_dim(1.0, (3,), ()) * a[0, :3])(x))
  assert "broadcast_in_dim 1.0:f32[]" in text  # shape is implied by the binder's type
  w = np.ones((4, 2), np.float32)
  text = str(hlox.make_jaxpr(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                                          preferred_element_type=np.float32))(x, w))
  assert "= dot_general[\n      dimension_numbers=" in text


def test_a_type_given_its_own_default_layout_is_the_same_type():
  # ``.sharding`` of a type that records no layout reads back as replicated over the mesh
  # in effect; code that builds types from it (flax's lifted scan does, for its body's
  # tracers) must get the same type, or every jit inside retraces.
  from hlox.extend import linear_util as lu
  from hlox.interpreters import partial_eval as pe
  plain = ShapedArray((4, 3), np.float32)
  again = ShapedArray((4, 3), np.float32, sharding=plain.sharding)
  assert again is plain and again == plain and hash(again) == hash(plain)
  assert ShapedArray((), np.float32, True, sharding=plain.update(shape=()).sharding).weak_type
  traces = []

  @hlox.jit
  def double(x):
    traces.append(1)
    return x * 2

  body = lambda x: [double(x) + 1]
  for aval in (plain, again):
    wrapped = lu.wrap_init(body, debug_info=hlox.api_util.debug_info("t", body, (1,), {}))
    _, out, _ = pe.trace_to_jaxpr_nounits(wrapped, [pe.PartialVal.unknown(aval)])
    assert out[0].get_aval() == plain
  np.testing.assert_allclose(double(jnp.ones((4, 3))), np.full((4, 3), 2.0))
  assert len(traces) == 1


def test_finished_traces_are_freed_without_the_garbage_collector():
  # A trace must not hold itself in a reference cycle (its constants' tracers point back
  # at it): the leak checker, with collection switched off, would report it alive (flax's
  # leak test patches gc.collect out this way).
  import gc
  import weakref
  from unittest import mock
  c = jnp.arange(3.0)
  body = lambda i, y: y + c * i  # closes over an array: a constant of the loop's body
  seen = []

  def f(x):
    seen.append(weakref.ref(x._trace))
    return lax.fori_loop(0, 3, body, x)

  was_enabled = gc.isenabled()
  gc.disable()
  try:
    with mock.patch.object(gc, "collect", return_value=0), hlox.checking_leaks():
      np.testing.assert_allclose(hlox.jit(f)(jnp.zeros(3)), [0.0, 3.0, 6.0])
      np.testing.assert_allclose(lax.fori_loop(0, 3, body, jnp.ones(3)), [1.0, 4.0, 7.0])
    assert seen and seen[0]() is None
  finally:
    if was_enabled:
      gc.enable()


def test_shaped_array_memory_space():
  host = ShapedArray((8,), np.float32, memory_space=hlox.memory.Space.Host)
  device = ShapedArray((8,), np.float32, memory_space=hlox.memory.Space.Device)
  assert host.str_short(True) == "f32<host>[8]" and str(host) == "float32<host>[8]"
  assert device.str_short(True) == "f32[8]" and device is ShapedArray((8,), np.float32)
  assert host != device and host.memory_space is hlox.memory.Space.Host
  assert device.memory_space is hlox.memory.Space.Device
  # Kept by the types derived from it, and by pickling.
  assert host.update(shape=(2,)).str_short(True) == "f32<host>[2]"
  assert host.update(memory_space=hlox.memory.Space.Device) is device
  assert str(ShapedArray((2,), np.int32, memory_space=hlox.memory.Space.Any).to_tangent_aval()
             ) == "float0<any>[2]"
  assert pickle.loads(pickle.dumps(host)) is host
  with pytest.raises(TypeError, match="memory_space must be a jax.memory.Space"):
    ShapedArray((8,), np.float32, memory_space="host")


@pytest.mark.jax_oracle
def test_shaped_array_memory_space_prints_as_jax():
  pytest.importorskip("jax")
  src = ("for s in m.memory.Space:\n"
         "  a = m.core.ShapedArray((8, 2), np.float32, weak_type=True, memory_space=s)\n"
         "  print(repr(s), a.str_short(True), a, repr(a), a.update(shape=(3,)))\n")
  assert printed_here(src) == printed_in_jax({"mem": src})["mem"]
