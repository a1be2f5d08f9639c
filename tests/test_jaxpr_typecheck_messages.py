"""``check_jaxpr`` names the ill-typed binder and prints its equation (as JAX does); a call
with the wrong operands is a JaxprTypeError; tracers print verbosely; a write to an
unbatched reference under ``vmap`` is rejected even when nothing written is batched."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import check_jaxpr
from hlox.errors import JaxprTypeError


def _sin_plus_cos():
  return hlox.make_jaxpr(lambda x: jnp.sin(x) + jnp.cos(x))(np.float32(1)).jaxpr


@pytest.mark.parametrize("aval, shown", [
    (ShapedArray((), np.dtype(np.int32)), "i32[]"),
    (ShapedArray((2, 3), np.dtype(np.float32)), "f32[2,3]"),
])
def test_binder_type_mismatch_message(aval, shown):
  jaxpr = _sin_plus_cos()
  jaxpr.eqns[0].outvars[0].aval = aval
  with pytest.raises(JaxprTypeError) as e:
    check_jaxpr(jaxpr)
  assert str(e.value).startswith(
      f"Value for variable 'b' inconsistently typed as f32[] for let-binder of type "
      f"{shown}\n\nin equation:\n\nb:{shown} = sin a\n\nwhile checking jaxpr:\n\n")


def test_call_with_wrong_operand_count():
  jaxpr = hlox.make_jaxpr(hlox.jit(lambda x, y: x + 1))(1., 2.).jaxpr
  check_jaxpr(jaxpr)
  (eqn,) = jaxpr.eqns
  jaxpr._eqns[0] = eqn.replace(invars=())  # ``_eqns`` is the list itself
  assert jaxpr.eqns[0].invars == []
  with pytest.raises(JaxprTypeError, match="0 operands cannot call jaxpr with 2 inputs"):
    check_jaxpr(jaxpr)


def test_call_with_wrong_operand_type():
  jaxpr = hlox.make_jaxpr(hlox.jit(lambda x: x + 1))(np.float32(1)).jaxpr
  (eqn,) = jaxpr.eqns
  eqn.invars[0].aval = ShapedArray((3,), np.dtype(np.float32))
  with pytest.raises(JaxprTypeError, match="passes operand of type f32.3. to jaxpr "
                                           "expecting type f32.."):
    check_jaxpr(jaxpr)


def test_verbose_tracer_reprs():
  seen = {}

  def f(x):
    seen["short"] = x._pretty_print().format()
    seen["long"] = x._pretty_print(verbose=True).format()
    return x.sum()

  hlox.jit(f)(jnp.arange(10.0, dtype="float32"))
  assert seen["long"] == "Traced<float32[10]>with<DynamicJaxprTrace>"
  assert seen["short"] == "JitTracer(float32[10])"
  hlox.vmap(f)(jnp.arange(5, dtype="int32"))
  assert seen["long"].splitlines() == [
      "Traced<int32[]>with<BatchTrace>", "  val = Array([0, 1, 2, 3, 4], dtype=int32)",
      "  batch_dim = 0"]
  hlox.grad(f)(jnp.float16(1.0))
  assert seen["long"].startswith("Traced<float16[]>with<JVPTrace>\n  primal = ")


def test_vmap_write_to_unbatched_ref_is_an_error():
  from hlox.experimental import random as exp_random
  rng = exp_random.stateful_rng(758943)
  with pytest.raises(Exception, match="performing an addupdate operation with vmapped "
                                      "value on an unbatched array reference"):
    hlox.vmap(lambda rng, x: x + rng.uniform(), in_axes=(None, 0))(rng, np.arange(4.))
  ref = hlox.new_ref(jnp.zeros(()))

  def write(x):
    ref[...] = 1.0
    return x

  with pytest.raises(Exception, match="performing a set/swap operation with vmapped"):
    hlox.vmap(write)(np.arange(3.))
  # the rng mapped along with the data draws independently per example
  out = hlox.vmap(lambda rng, x: x + rng.uniform(), in_axes=(0, 0))(rng.split(4),
                                                                    np.arange(4.))
  assert len(set(np.asarray(out - np.arange(4.)).round(6))) == 4
