"""The repr of empty Arrays shows their shape, as JAX's does, whatever their rank."""
import pytest

import hlox
import hlox.numpy as jnp

from tests.util import printed_here, printed_in_jax


@pytest.mark.parametrize("make, expected", [
    (lambda: jnp.zeros((0,)), "Array([], shape=(0,), dtype=float32)"),
    (lambda: jnp.zeros((2, 0)), "Array([], shape=(2, 0), dtype=float32)"),
    (lambda: jnp.zeros((0, 3), "int32"), "Array([], shape=(0, 3), dtype=int32)"),
    (lambda: jnp.zeros((0,), bool), "Array([], shape=(0,), dtype=bool)"),
    (lambda: jnp.array([]), "Array([], shape=(0,), dtype=float32)"),
    (lambda: jnp.full((0,), 1.0), "Array([], shape=(0,), dtype=float32, weak_type=True)"),
    (lambda: hlox.lax.broadcast(1, (2, 0)),
     "Array([], shape=(2, 0), dtype=int32, weak_type=True)"),
])
def test_empty_reprs(make, expected):
  x = make()
  assert repr(x) == expected
  assert str(x) == "[]"


def test_nonempty_reprs_unchanged():
  assert repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
  assert repr(jnp.float32(1)) == "Array(1., dtype=float32)"


@pytest.mark.jax_oracle
def test_empty_reprs_match_jax():
  pytest.importorskip("jax")
  src = ("for x in [jnp.zeros((0,)), jnp.zeros((0, 2, 0), jnp.bfloat16), "
         "jnp.zeros((0,), 'uint8'), jnp.zeros((3, 0, 0)), jnp.asarray(np.zeros(0, np.float16)), "
         "jnp.full((0,), 1.), jnp.zeros((0,), 'complex64')]:\n  print(repr(x))\n")
  assert printed_here(src) == printed_in_jax({"reprs": src})["reprs"]
