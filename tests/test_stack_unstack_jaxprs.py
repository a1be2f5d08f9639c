"""``jnp.stack`` of a sequence is one ``stack`` equation and ``jnp.unstack`` one ``unstack``
equation (as in JAX 0.10's jaxprs), ``jnp.stack``/``jnp.concatenate`` of one array are a
single reshape; vmap keeps the batch dimension in place; Explicit shardings pass through."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.errors import ShardingTypeError
from tests.util import printed_here, printed_in_jax


def _eqn_names(f, *args):
  return [e.primitive.name for e in hlox.make_jaxpr(f)(*args).jaxpr.eqns]


def test_stack_of_a_sequence_is_one_equation():
  a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
  assert _eqn_names(lambda a, b: jnp.stack([a, b], axis=1), a, b) == ["stack"]
  np.testing.assert_array_equal(jnp.stack([a, b], axis=1), np.stack([a, b], axis=1))
  np.testing.assert_array_equal(jnp.stack([a, b], axis=-1), np.stack([a, b], axis=-1))
  # promotion and dtype= as before
  assert jnp.stack([1, 2.0]).dtype == np.float32
  assert jnp.stack([np.int8(1), 2], dtype=jnp.float16).dtype == np.float16


def test_unstack_is_one_equation():
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  assert _eqn_names(lambda x: jnp.unstack(x, axis=1), x) == ["unstack"]
  for got, want in zip(jnp.unstack(x, axis=1), [x[:, i] for i in range(4)]):
    np.testing.assert_array_equal(got, want)
  with pytest.raises(ValueError, match="unstack"):
    jnp.unstack(np.ones(2), axis=3)


def test_vmapped_stack_and_unstack_keep_the_batch_dim():
  x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  y = x + 1
  # both operands batched at 1: no transposes, the result batched where the rule says
  f = hlox.vmap(lambda a, b: jnp.stack([a, b], 1), in_axes=(1, 1), out_axes=2)
  assert _eqn_names(f, x, y) == ["stack"]
  want = np.stack([np.stack([x[:, i], y[:, i]], 1) for i in range(3)], 2)
  np.testing.assert_array_equal(f(x, y), want)
  # one operand unbatched: broadcast, then stacked behind the batch dimension
  g = hlox.vmap(lambda a, b: jnp.stack([a, b]), in_axes=(0, None))
  np.testing.assert_array_equal(g(x, y[0]), np.stack([np.stack([r, y[0]]) for r in x]))
  u = hlox.vmap(lambda a: jnp.unstack(a, axis=1), in_axes=2, out_axes=0)
  got = u(x)
  assert len(got) == 3 and _eqn_names(u, x) == ["unstack", "transpose", "transpose",
                                                "transpose"]
  for i, piece in enumerate(got):
    np.testing.assert_array_equal(piece, x[:, i, :].T)


def test_grad_through_stack_and_unstack():
  f = lambda a: (jnp.stack([a, 2 * a, a ** 2]) * np.array([1.0, 2.0, 3.0])).sum()
  assert float(hlox.grad(f)(2.0)) == pytest.approx(1 + 4 + 12)
  g = lambda x: sum(p.sum() * (i + 1) for i, p in enumerate(jnp.unstack(x, axis=1)))
  np.testing.assert_array_equal(hlox.grad(g)(np.ones((2, 3), np.float32)),
                                np.tile(np.array([1.0, 2.0, 3.0], np.float32), (2, 1)))


def test_one_array_is_joined_by_a_reshape():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  np.testing.assert_array_equal(jnp.concatenate(x, axis=1), np.concatenate(x, axis=1))
  np.testing.assert_array_equal(jnp.concatenate(x, axis=None), np.concatenate(x, axis=None))
  np.testing.assert_array_equal(jnp.stack(x, axis=2), np.stack(x, axis=2))
  assert "concatenate" not in _eqn_names(lambda x: jnp.concatenate(x), x)
  for bad in (np.ones(3), np.ones(()), np.ones((0, 2))):
    with pytest.raises(ValueError, match="concatenate"):
      jnp.concatenate(bad)
  # typed keys keep their own implementation
  keys = hlox.random.split(hlox.random.key(0), 4).reshape(2, 2)
  assert jnp.concatenate(keys).shape == (4,)


def test_stack_keeps_explicit_shardings():
  from hlox.sharding import AxisType, PartitionSpec as P
  mesh = hlox.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
  with hlox.set_mesh(mesh):
    z = hlox.device_put(jnp.ones((4, 8)), P("a", "b"))
    assert jnp.stack([z, z], axis=1).sharding.spec == P("a", None, "b")
    w = hlox.device_put(jnp.ones((4, 8)), P(None, "b"))
    assert hlox.typeof(jnp.unstack(w)[0]).sharding.spec == P("b")
    with pytest.raises(ShardingTypeError, match="unstack"):
      jnp.unstack(z)
    with pytest.raises(ShardingTypeError, match="stack"):
      jnp.stack([z, w])


_PROGRAMS = {
    "stack": "print(m.make_jaxpr(lambda a, b: jnp.stack([a, b], axis=1))(np.ones((2, 3)), np.ones((2, 3))))\n",
    "vmap_stack": "print(m.make_jaxpr(m.vmap(lambda a, b: jnp.stack([a, b], 1), in_axes=(1, 1)))(np.ones((2, 3)), np.ones((2, 3))))\n",
    "vmap_stack_unbatched": "print(m.make_jaxpr(m.vmap(lambda a, b: jnp.stack([a, b]), in_axes=(0, None)))(np.ones((2, 3)), np.ones(3)))\n",
    "unstack": "print(m.make_jaxpr(lambda a: jnp.unstack(a, axis=1))(np.ones((2, 3))))\n",
    "vmap_unstack": "print(m.make_jaxpr(m.vmap(lambda a: jnp.unstack(a, axis=0), in_axes=1))(np.ones((2, 3))))\n",
    "grad_stack": "print(m.make_jaxpr(m.grad(lambda a: jnp.stack([a, 2 * a, a]).sum()))(1.0))\n",
    "stack_one_array": "print(m.make_jaxpr(lambda a: jnp.stack(a))(np.ones((2, 3))))\n",
}


@pytest.mark.jax_oracle
def test_printed_jaxprs_match_jax():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name
