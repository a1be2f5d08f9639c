"""``hlox.experimental.random``: the stateful generator over references (``stateful_rng``).

Each draw must equal the stateless draw from ``fold_in(key(seed), n)`` for the n-th key the
generator hands out, eagerly, under ``jit`` (the counter written back) and under ``vmap`` of a
split generator; a JAX-oracle test compares printed results and errors with JAX's."""
import numpy as np
import pytest

import hlox
from hlox import random
from hlox.experimental import random as exp_random
from tests.util import printed_here, printed_in_jax


def _nth_key(seed, n):
  return random.fold_in(random.key(seed), n)


def test_draws_follow_the_counter():
  rng = exp_random.stateful_rng(42)
  assert int(rng._counter[...]) == 0
  first, second = rng.uniform(), rng.uniform()
  np.testing.assert_array_equal(first, random.uniform(_nth_key(42, 0), ()))
  np.testing.assert_array_equal(second, random.uniform(_nth_key(42, 1), ()))
  normal = rng.normal(1.0, 2.0, size=(3,))
  np.testing.assert_allclose(normal, 1.0 + 2.0 * random.normal(_nth_key(42, 2), (3,)),
                             rtol=1e-6)
  ints = rng.integers(5, size=4)
  np.testing.assert_array_equal(ints, random.randint(_nth_key(42, 3), (4,), 0, 5))
  assert int(rng._counter[...]) == 4
  keys = rng.key(2)
  np.testing.assert_array_equal(random.key_data(keys),
                                random.key_data(random.split(_nth_key(42, 4), 2)))


def test_jit_writes_the_counter_back():
  rng = exp_random.stateful_rng(7)
  draw = hlox.jit(rng.uniform)
  a, b = draw(), draw()
  assert int(rng._counter[...]) == 2
  np.testing.assert_array_equal(a, random.uniform(_nth_key(7, 0), ()))
  np.testing.assert_array_equal(b, random.uniform(_nth_key(7, 1), ()))
  # A generator made inside a jitted function needs a seed, as JAX's.
  with pytest.raises(TypeError, match="requires an explicit seed"):
    hlox.jit(lambda: exp_random.stateful_rng().uniform())()
  np.testing.assert_array_equal(hlox.jit(lambda: exp_random.stateful_rng(3).uniform())(),
                                random.uniform(_nth_key(3, 0), ()))


def test_split_for_vmap_and_spawn():
  rng = exp_random.stateful_rng(123)
  children = rng.split(3)
  child_keys = random.split(_nth_key(123, 0), 3)
  out = hlox.vmap(lambda r, x: x + r.uniform())(children, hlox.numpy.zeros(3))
  want = [random.uniform(random.fold_in(k, 0), ()) for k in child_keys]
  np.testing.assert_allclose(out, np.array(want), rtol=1e-6)
  np.testing.assert_array_equal(children._counter[...], [1, 1, 1])
  with pytest.raises(ValueError, match="split stateful generator"):
    children.uniform()
  spawned = exp_random.stateful_rng(123).spawn(2)
  for child, k in zip(spawned, random.split(_nth_key(123, 0), 2)):
    np.testing.assert_array_equal(child.integers(0, 10, 2),
                                  random.randint(random.fold_in(k, 0), (2,), 0, 10))


def test_bad_state_is_rejected():
  with pytest.raises(ValueError, match="typed PRNG key"):
    exp_random.StatefulPRNG(hlox.numpy.array([0, 1], dtype="uint32"), hlox.new_ref(0))
  with pytest.raises(ValueError, match="scalar integer ref"):
    exp_random.StatefulPRNG(random.key(0), 0)


_PROGRAMS = {
    "draws": """
import importlib
r = importlib.import_module(m.__name__ + ".experimental.random")
rng = r.stateful_rng(42)
print(rng)
print(rng.uniform(), rng.uniform(), rng.random(2), rng.integers(3, 9, size=2))
f = m.jit(rng.normal)
print(f(), f(), rng._counter[...])
print(m.vmap(lambda g, x: x + g.uniform())(r.stateful_rng(5).split(2), jnp.ones(2)))
""",
}


@pytest.mark.jax_oracle
def test_printed_as_jax_prints():
  pytest.importorskip("jax")
  expected = printed_in_jax(_PROGRAMS)
  for name, src in _PROGRAMS.items():
    assert printed_here(src) == expected[name], name
