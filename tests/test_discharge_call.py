"""Calls on references (a jitted function, a checkpoint, a ``shard_map`` body taking a
reference of the caller) are discharged by one helper, ``state_discharge.discharge_call``:
each primitive's rule only says how to bind itself on the pure body."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core.jaxpr import eval_jaxpr
from hlox.interpreters import state_discharge


@pytest.fixture
def discharged(monkeypatch):
  """The bodies ``discharge_call`` was handed, by the primitive its ``bind`` bound."""
  seen = []
  real = state_discharge.discharge_call

  def counting(closed, n_args, bind):
    def bind_noting(pure, consts, positions):
      seen.append((len(positions), n_args))
      return bind(pure, consts, positions)
    return real(closed, n_args, bind_noting)

  monkeypatch.setattr(state_discharge, "discharge_call", counting)
  return seen


def _mutating(v, s):
  out = v[...] * s
  v[...] += 1.
  return out


def _run(call):
  @hlox.jit
  def f(s):
    ref = hlox.new_ref(jnp.arange(6.))
    out = call(ref.at[1:4], s)
    return ref[...], out
  return f(2.)


def _check(ref, out):
  expected = np.arange(6.)
  expected[1:4] += 1.
  np.testing.assert_array_equal(ref, expected)
  np.testing.assert_array_equal(out, np.arange(1., 4.) * 2.)


def test_jit_on_a_reference(discharged):
  _check(*_run(hlox.jit(_mutating)))
  assert (1, 2) in discharged


def test_checkpoint_on_a_reference(discharged):
  _check(*_run(hlox.checkpoint(_mutating)))
  assert (1, 2) in discharged


def test_shard_map_on_a_reference(discharged):
  mesh = hlox.make_mesh((1,), ("x",), axis_types=(hlox.sharding.AxisType.Explicit,))
  body = hlox.shard_map(_mutating, mesh=mesh, in_specs=(hlox.P(), hlox.P()),
                        out_specs=hlox.P())
  _check(*_run(body))
  assert (1, 2) in discharged


def test_discharge_call_of_a_pure_operand_keeps_it():
  # Operands that are no references get no new value; outputs come first.
  def body(r, x):
    r[...] = r[...] + x
    return x * 3.

  closed = hlox.make_jaxpr(body)(hlox.new_ref(jnp.zeros(2)), jnp.ones(2))
  calls = []

  def bind(pure, consts, positions):
    calls.append(positions)
    return eval_jaxpr(pure.jaxpr, pure.consts, *consts, jnp.full(2, 5.),
                      jnp.ones(2))

  new_vals, outs = state_discharge.discharge_call(closed, 2, bind)
  assert calls == [[0]]
  assert new_vals[1] is None
  np.testing.assert_array_equal(new_vals[0], [6., 6.])
  np.testing.assert_array_equal(outs[0], [3., 3.])
