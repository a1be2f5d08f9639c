"""``hlox.numpy`` / ``hlox.lax`` functions that move elements around, on typed key arrays:
keys come back, with JAX's key data (JAX run as an oracle in its own process), eagerly,
under jit and vmap; anything else is refused as before."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.core.extended_functions import registered
from tests.util import run_in_jax

# name -> expression over ``m`` (jax / hlox), ``jnp``, ``lax``, ``k`` (a key), ``k1`` (4
# keys) and ``ks`` (2x3 keys); each gives keys.
CASES = {
    "broadcast_to": "jnp.broadcast_to(k1, (2, 4))",
    "concatenate": "jnp.concatenate([ks, ks], axis=-1)",
    "concatenate_none": "jnp.concatenate([ks, ks], axis=None)",
    "stack": "jnp.stack([k1, k1], axis=-1)",
    "hstack": "jnp.hstack([ks, ks])",
    "vstack": "jnp.vstack([k1, k1])",
    "expand_dims": "jnp.expand_dims(ks, (0, -1))",
    "tile": "jnp.tile(ks, (2, 1, 2))",
    "where": "jnp.where(jnp.array([True, False, True]), ks, ks[::-1])",
    "take": "jnp.take(ks, jnp.array([2, 0]), axis=-1)",
    "take_flat": "jnp.take(ks, jnp.array([5, 1]))",
    "take_method": "ks.take(jnp.array([1]), axis=0)",
    "transpose": "jnp.transpose(ks)",
    "flip": "jnp.flip(ks, -1)",
    "roll": "jnp.roll(ks, 1)",
    "roll_axis": "jnp.roll(ks, 1, axis=1)",
    "repeat": "jnp.repeat(ks, 2, axis=-1)",
    "repeat_flat": "jnp.repeat(ks, 2)",
    "swapaxes": "jnp.swapaxes(ks, 0, -1)",
    "moveaxis": "jnp.moveaxis(ks, 0, -1)",
    "ravel": "jnp.ravel(ks)",
    "atleast_2d": "jnp.atleast_2d(k1)",
    "atleast_3d": "jnp.atleast_3d(ks)",
    "split": "jnp.split(ks, 3, axis=1)[1]",
    "append": "jnp.append(ks, k1[:2])",
    "zeros_like": "jnp.zeros_like(ks)",
    "full_like": "jnp.full_like(ks, k)",
    "lax_broadcast": "lax.broadcast(k1, (2,))",
    "lax_broadcast_in_dim": "lax.broadcast_in_dim(k1, (3, 4), (1,))",
    "lax_transpose": "lax.transpose(ks, (1, 0))",
    "lax_slice": "lax.slice(ks, (0, 1), (2, 3))",
    "lax_rev": "lax.rev(ks, (1,))",
    "lax_index_in_dim": "lax.index_in_dim(ks, 1, 1, False)",
    "lax_dynamic_index_in_dim": "lax.dynamic_index_in_dim(ks, 2, axis=-1)",
    "lax_slice_in_dim": "lax.slice_in_dim(ks, 0, 2, axis=1)",
    "lax_dynamic_slice_in_dim": "lax.dynamic_slice_in_dim(ks, 1, 2, 1)",
    "zeros": "jnp.zeros(ks.shape, dtype=ks.dtype)",
    "ones_like": "jnp.ones_like(ks)",
    "full": "jnp.full(ks.shape, 100, dtype=ks.dtype)",
    "full_of_a_key": "jnp.full((2,), k, dtype=k.dtype)",
    "full_like_number": "jnp.full_like(ks, 100)",
    "reshape": "jnp.reshape(k1, (2, 2))",
    "broadcast_arrays": "jnp.broadcast_arrays(k, k1)[0]",
    "lax_dynamic_update_slice_in_dim": "lax.dynamic_update_slice_in_dim(ks, ks[:1], 1, axis=0)",
    "squeeze": "jnp.squeeze(ks[:, None])",
    "lax_squeeze": "lax.squeeze(ks[None], (0,))",
    "lax_concatenate": "lax.concatenate([ks, ks[:, :1]], 1)",
    "lax_dynamic_slice": "lax.dynamic_slice(ks, (1, 1), (1, 2))",
    "lax_dynamic_update_slice": "lax.dynamic_update_slice(ks, ks[:1, 1:], (1, 0))",
    "jit_lax_dynamic_slice": "m.jit(lambda a, i: lax.dynamic_slice(a, (0, i), (2, 1)))(ks, 2)",
    "jit_stack": "m.jit(lambda a: jnp.stack([a, a], axis=1))(ks)",
    "jit_concatenate": "m.jit(lambda a: jnp.concatenate([a, a]))(k1)",
    "vmap_where": "m.vmap(lambda c, a, b: jnp.where(c, a, b))(jnp.array([True, False]), ks, "
                  "ks[::-1])",
}

_RUNNER = """
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
m = jax
k = jax.random.key(0)
k1 = jax.random.split(k, 4)
ks = jax.random.split(k, 6).reshape(2, 3)
out = {}
for name, expr in json.loads(sys.stdin.read()).items():
  r = eval(expr)
  out[name] = [str(r.dtype), list(r.shape), np.asarray(jax.random.key_data(r)).tolist()]
print(json.dumps(out))
"""


def _here(expr):
  m = hlox  # noqa: F841  (the expressions name it)
  k = hlox.random.key(0)
  k1 = hlox.random.split(k, 4)  # noqa: F841
  ks = hlox.random.split(k, 6).reshape(2, 3)  # noqa: F841
  r = eval(expr)
  return [str(r.dtype), list(r.shape), np.asarray(hlox.random.key_data(r)).tolist()]


@pytest.mark.jax_oracle
def test_structural_functions_on_keys_match_jax():
  pytest.importorskip("jax")
  expected = run_in_jax(_RUNNER, CASES)
  for name, expr in CASES.items():
    assert _here(expr) == expected[name], name


def test_keys_stay_keys_and_data_moves_whole():
  k1 = hlox.random.split(hlox.random.key(1), 4)
  data = np.asarray(hlox.random.key_data(k1))
  out = jnp.stack([k1, k1[::-1]], axis=-1)
  assert out.dtype == k1.dtype and out.shape == (4, 2)
  np.testing.assert_array_equal(np.asarray(hlox.random.key_data(out)),
                                np.stack([data, data[::-1]], axis=1))
  # what comes back draws as keys do
  np.testing.assert_array_equal(np.asarray(hlox.random.uniform(jnp.ravel(out)[0])),
                                np.asarray(hlox.random.uniform(k1[0])))


def test_every_declared_function_has_a_key_implementation():
  assert registered("hlox.numpy") == set(jnp.ACCEPTING_KEYS)
  assert registered("hlox.lax") == set(lax.ACCEPTING_KEYS)


def test_bad_input_is_refused_as_before():
  k = hlox.random.key(0)
  with pytest.raises(TypeError, match="does not accept dtype"):
    jnp.sin(k)
  with pytest.raises(TypeError, match="same implementation|combined"):
    jnp.concatenate([hlox.random.split(k, 2), jnp.zeros(2)])
  with pytest.raises(TypeError):
    jnp.where(k, 1.0, 2.0)
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.stack([k, k], axis=3)
  np.testing.assert_array_equal(jnp.stack([jnp.ones(2), jnp.zeros(2)]), [[1, 1], [0, 0]])


def test_allclose_and_isclose_compare_keys_exactly():
  # Keys have no tolerance: close means equal, as in JAX (flax's scope tests compare keys
  # drawn twice with allclose).
  k, k2 = hlox.random.key(0), hlox.random.key(1)
  ks = hlox.random.split(k, 3)
  assert bool(jnp.allclose(k, k)) and not bool(jnp.allclose(k, k2))
  assert bool(jnp.allclose(ks, ks)) and not bool(jnp.allclose(ks, k))
  assert not bool(hlox.jit(jnp.allclose)(k, k2))
  np.testing.assert_array_equal(jnp.isclose(ks, ks[0]), [True, False, False])
  np.testing.assert_array_equal(hlox.vmap(jnp.allclose)(ks, ks[::-1]), [False, True, False])
  with pytest.raises(TypeError, match="requires ndarray or scalar"):
    jnp.allclose([1.0], {"a": 1})
