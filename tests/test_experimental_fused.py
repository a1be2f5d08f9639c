"""hlox.experimental.fused and jax.memory spaces: device_put to Space.Host/Device types the
array; fused(out_spaces=...) traces one fused_call typed in those spaces, lowered for CUDA to
JAX's custom_call (MUST_FUSE, inlineable, out_spaces; none for CPU, as in JAX), with vmap, jvp
and grad rules whose values are checked by inlining the body on CPU for the test."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental.fused import fused
from hlox.interpreters import xla
from hlox.lax.fused import fused_p

Space = hlox.memory.Space


@fused(out_spaces=(Space.Host, Space.Device))
def f(x, y):
  return x + y, x * y


def _plain(x, y):
  return x + y, x * y


@pytest.fixture
def inline_on_cpu(monkeypatch):
  """A CPU lowering of fused_call that inlines its body (hlox has none, as JAX)."""
  def rule(ctx, *args, jaxpr, out_spaces):
    consts = [xla.ir_constant(np.asarray(c)) for c in jaxpr.consts]
    return list(xla.lower_jaxpr(ctx.module_context, jaxpr.jaxpr, consts, list(args)))
  rules = {**xla.platform_lowering_rules.get("cpu", {}), fused_p: rule}
  monkeypatch.setitem(xla.platform_lowering_rules, "cpu", rules)


def test_device_put_to_a_memory_space_types_the_array():
  x = jnp.arange(3.0)
  xh = hlox.device_put(x, Space.Host)
  assert hlox.typeof(xh).memory_space is Space.Host and str(hlox.typeof(xh)) == "float32<host>[3]"
  np.testing.assert_array_equal(np.asarray(xh), [0, 1, 2])
  assert hlox.typeof(hlox.device_put(xh, Space.Device)).memory_space is Space.Device
  assert hlox.typeof(hlox.device_put(np.ones(2, np.float32), Space.Host)).memory_space \
      is Space.Host
  with pytest.raises(ValueError, match="Space.Any"):
    hlox.device_put(x, Space.Any)


def test_fused_call_types_and_cuda_lowering():
  xh, y = hlox.device_put(jnp.arange(3.0), Space.Host), jnp.arange(3.0)
  (eqn,) = hlox.make_jaxpr(f)(xh, y).eqns
  assert eqn.primitive is fused_p
  assert [str(v.aval) for v in eqn.outvars] == ["float32<host>[3]", "float32[3]"]
  assert all(a.memory_space is Space.Any for a in eqn.params["jaxpr"].in_avals)
  low = hlox.jit(f).trace(xh, y).lower(lowering_platforms=("cuda",))
  text = low._lowering.hlo().as_hlo_module().to_string()
  for word in ("custom_call", "inlineable", "MUST_FUSE", "out_spaces"):
    assert word in text
  with pytest.raises(NotImplementedError, match="fused_call.*cpu"):
    f(xh, y)


def test_fused_transformations_match_the_plain_function(inline_on_cpu):
  x = np.array([0.5, -1.0, 2.0], np.float32)
  y = np.array([1.5, 3.0, -0.25], np.float32)
  for got, want in [(f(x, y), _plain(x, y)),
                    (hlox.vmap(f)(x, y), _plain(x, y)),
                    (hlox.jvp(f, (x, y), (y, x)), hlox.jvp(_plain, (x, y), (y, x))),
                    (hlox.grad(lambda a, b: (f(a, b)[0] * f(a, b)[1]).sum(), (0, 1))(x, y),
                     hlox.grad(lambda a, b: (a + b) @ (a * b), (0, 1))(x, y)),
                    (hlox.jit(hlox.grad(lambda a, b: f(a, b)[1].sum()))(x, y), y)]:
    for g, w in zip(hlox.tree_util.tree_leaves(got), hlox.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_fused_closing_over_arrays(inline_on_cpu):
  w = jnp.array([2.0, 3.0])
  g = fused(out_spaces=(Space.Device,))(lambda x: x * w)
  np.testing.assert_allclose(np.asarray(g(jnp.ones(2))), [2.0, 3.0])
  np.testing.assert_allclose(np.asarray(hlox.grad(lambda v: fused(out_spaces=(Space.Device,))(
      lambda x: (x * v).sum())(jnp.ones(2)))(w)), [1.0, 1.0])
