"""A traced value's ``sharding`` is refused with the property's own explanation (pointing at
``typeof``), under every kind of trace, not the generic missing-attribute error."""
import pytest

import hlox
import hlox.numpy as jnp


def _message(f, *args):
  seen = []

  def probe(x):
    try:
      x.sharding
    except AttributeError as e:
      seen.append(str(e))
    return f(x)

  return probe, seen


@pytest.mark.parametrize("transform", ["jit", "grad", "vmap", "jvp"])
def test_sharding_of_a_tracer_names_typeof(transform):
  probe, seen = _message(jnp.sin)
  x = jnp.arange(3.0)
  if transform == "jit":
    hlox.jit(probe)(x)
  elif transform == "grad":
    hlox.grad(lambda x: probe(x).sum())(x)
  elif transform == "vmap":
    hlox.vmap(probe)(x)
  else:
    hlox.jvp(probe, (x,), (x,))
  assert seen and "typeof" in seen[0] and "not available on traced values" in seen[0]


def test_missing_attributes_still_raise_attribute_error():
  @hlox.jit
  def f(x):
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
      x.no_such_thing
    return x

  f(jnp.ones(2))
