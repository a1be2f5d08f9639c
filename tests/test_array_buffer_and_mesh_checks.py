"""The concrete array class (named ArrayImpl as JAX's), its buffer protocol, and the checks
of mesh axis types and of frozen manual axis types."""
import pickle

import ml_dtypes
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.core.avals import ManualAxisType
from hlox.sharding import AbstractMesh, AxisType, Mesh


def test_concrete_class_is_named_array_impl():
  x = jnp.arange(3)
  assert type(x).__name__ == "ArrayImpl"
  assert issubclass(type(x), hlox.Array) and not issubclass(type(x), np.ndarray)
  y = pickle.loads(pickle.dumps(x))
  assert type(y) is type(x)
  np.testing.assert_array_equal(y, [0, 1, 2])


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.complex64, np.uint16])
@pytest.mark.parametrize("shape", [(), (10,), (2, 3)])
def test_buffer_protocol_view(dtype, shape):
  host = (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape)
  view = hlox.device_put(host).__buffer__(0)
  assert view.readonly and view.shape == shape
  assert view.tobytes() == memoryview(host).tobytes()


def test_buffer_protocol_errors_and_lifetime():
  with pytest.raises(BufferError, match="Buffers of type BF16 are not supported by the "
                                        "Python buffer protocol."):
    jnp.ones(3, ml_dtypes.bfloat16).__buffer__(0)
  host = np.arange(12, dtype=np.float32).reshape(3, 4)
  y = hlox.device_put(host)
  view = y.__buffer__(0)
  y.delete()  # the view keeps the memory alive
  assert view.tobytes() == host.tobytes()
  with pytest.raises(BufferError, match=r"Array has been deleted with shape=float32\[3,4\]"):
    y.__buffer__(0)
  z = hlox.device_put(host)
  _ = z.__buffer__(0)
  out = hlox.jit(lambda a: a + 1, donate_argnums=0)(z)
  np.testing.assert_array_equal(out, host + 1)


def test_manual_axis_type_is_frozen():
  t = ManualAxisType(varying={"x"})
  with pytest.raises(AttributeError, match="immutable"):
    t.varying = frozenset({"y"})
  assert t.varying == {"x"} and t.update(varying={"y"}).varying == {"y"}
  assert pickle.loads(pickle.dumps(t)) == t


def test_axis_types_must_match_axis_names():
  text = "Number of axis names should match the number of axis_types"
  with pytest.raises(ValueError, match=text):
    AbstractMesh((2, 1), ("x", "y"), axis_types=AxisType.Auto)
  with pytest.raises(ValueError, match=text):
    Mesh(np.array(hlox.devices()[:2]).reshape(2, 1), ("x", "y"), axis_types=AxisType.Auto)
  with pytest.raises(ValueError, match=text):
    hlox.make_mesh((2, 1), ("x", "y"), axis_types=AxisType.Explicit)
  for bad in ["explicit", ("explicit",)]:
    with pytest.raises(TypeError, match=r"axis_types passed to AbstractMesh must be of type "
                                        r"`hlox.sharding.AxisType`. Got \('explicit',\)"):
      AbstractMesh((2,), ("x",), axis_types=bad)
  assert AbstractMesh((2,), "x", axis_types=AxisType.Explicit).axis_types == (
      AxisType.Explicit,)
  assert Mesh(np.array(hlox.devices()[:2]), "x", axis_types=AxisType.Explicit).axis_types == (
      AxisType.Explicit,)
