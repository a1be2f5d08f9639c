"""hlox.tools.jax_to_ir (JAX's jax.tools.jax_to_ir): named arguments become HLO parameters in
the order given, constants are folded in, XLA shape strings parse to avals."""
import numpy as np
import pytest

import hlox.numpy as jnp
from hlox.tools import jax_to_ir


def test_parameters_follow_the_given_order():
  def axpy(a, x, y):
    return a * x + y[:, jnp.newaxis]
  proto, text = jax_to_ir.jax_to_hlo(axpy, [
      ("y", jax_to_ir.parse_shape_str("f32[128]")),
      ("a", jax_to_ir.parse_shape_str("f32[]")),
      ("x", jax_to_ir.parse_shape_str("f32[128,2]"))])
  assert "f32[128]{0} parameter(0)" in text
  assert "f32[] parameter(1)" in text
  assert "f32[128,2]{1,0} parameter(2)" in text
  assert "multiply" in text and "add" in text
  assert isinstance(proto, bytes) and proto


def test_constants_are_folded():
  _, text = jax_to_ir.jax_to_hlo(
      lambda a, b, x, y: a / b * x + y,
      [("x", jax_to_ir.parse_shape_str("f32[4]")), ("y", jax_to_ir.parse_shape_str("f32[4]"))],
      constants={"a": 123456, "b": 4})
  assert "constant(30864)" in text and "123456" not in text
  with pytest.raises(ValueError, match="both `input_shapes` and `constants`: x"):
    jax_to_ir.jax_to_hlo(lambda x: x, [("x", jax_to_ir.parse_shape_str("f32[]"))],
                         constants={"x": 1})


def test_parse_shape_str():
  for s, shape, dtype in [("f32[]", (), np.float32), ("pred[1]", (1,), np.bool_),
                          ("s4[2,3]", (2, 3), jnp.int4), ("bf16[7]", (7,), jnp.bfloat16),
                          ("c128[1, 2]", (1, 2), np.complex128), ("u64[1]", (1,), np.uint64),
                          ("s1[1]", (1,), jnp.int1), ("u1[2]", (2,), jnp.uint1)]:
    aval = jax_to_ir.parse_shape_str(s)
    assert aval.shape == shape and aval.dtype == np.dtype(dtype)
  with pytest.raises(ValueError, match="Invalid shape foo"):
    jax_to_ir.parse_shape_str("foo[]")
