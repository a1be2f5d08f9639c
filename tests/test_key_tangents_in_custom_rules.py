"""A typed key's tangent or cotangent, as custom_jvp / custom_vjp rules see it: float0 of
the keys' shape (a ``SymbolicZero`` of that type with ``symbolic_zeros=True``), as in JAX;
and a ``symbolic_zeros`` forward rule sees a key as a ``CustomVJPPrimal`` of the key."""
import numpy as np
import pytest

import hlox
from hlox import random
from hlox.core import dtypes
from hlox.custom_derivatives import CustomVJPPrimal, SymbolicZero


@pytest.mark.parametrize("jit", [False, True])
def test_custom_jvp_sees_float0_key_tangent(jit):
  seen = []

  normals = hlox.vmap(lambda k: random.normal(k, ()))

  def f_raw(x, keys):
    return x * normals(keys)

  f = hlox.custom_jvp(f_raw)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, key = primals
    x_dot, key_dot = tangents
    seen.append((key_dot.dtype, key_dot.shape))
    rand = normals(key)
    return x * rand, x_dot * rand

  keys = random.split(random.key(0), 3)
  grad = lambda g: hlox.grad(lambda x, k: g(x, k).sum())
  run = (lambda g: hlox.jit(grad(g))) if jit else grad
  np.testing.assert_allclose(run(f)(0.5, keys), run(f_raw)(0.5, keys), rtol=1e-6)
  assert seen == [(dtypes.float0, (3,))]


@pytest.mark.parametrize("symbolic_zeros", [False, True])
def test_custom_vjp_sees_float0_key_cotangent(symbolic_zeros):
  seen = []

  @hlox.custom_vjp
  def f(_, state):
    return state

  def f_fwd(_, state):
    if symbolic_zeros:
      assert isinstance(state[1], CustomVJPPrimal) and not state[1].perturbed
      state = hlox.tree.map(lambda p: p.value, state)
    return state, None

  def f_bwd(_, state_bar):
    seen.append((type(state_bar[1]), state_bar[1].dtype, state_bar[1].shape))
    return state_bar[0], state_bar

  f.defvjp(f_fwd, f_bwd, symbolic_zeros=symbolic_zeros)
  state = (8.0, random.key(123))
  assert float(hlox.grad(lambda t: f(t, state)[0])(3.0)) == 1.0
  kind = SymbolicZero if symbolic_zeros else np.ndarray
  assert seen == [(kind, dtypes.float0, ())]
