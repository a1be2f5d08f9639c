"""hlox.experimental.buffer_callback: a Python function writing a program's results in place
on the device buffers (eagerly, under jit and vmap, with aliases and side effects)."""
import numpy as np
import pytest

import hlox
from hlox.experimental import buffer_callback as bc


def _double(ctx, out, arg):
  assert ctx.stage == bc.ExecutionStage.EXECUTE
  assert not arg.writeable and out.writeable
  assert (arg.shape, arg.dtype) == ((3, 4), np.dtype(np.int16))
  np.asarray(out)[...] = np.asarray(arg) * 2


def test_results_written_in_place_eager_and_jit():
  data = np.arange(12, dtype=np.int16).reshape(3, 4)
  f = bc.buffer_callback(_double, hlox.ShapeDtypeStruct(data.shape, data.dtype))
  np.testing.assert_array_equal(f(data), 2 * data)
  np.testing.assert_array_equal(hlox.jit(f)(data), 2 * data)


def test_pytrees_and_dlpack():
  def cb(ctx, out, xs, *, y):
    a, b = out
    np.asarray(a)[...] = np.from_dlpack(xs[0]) + np.asarray(y)
    np.asarray(b)[...] = np.asarray(xs[1]).sum()

  f = bc.buffer_callback(cb, (hlox.ShapeDtypeStruct((2,), np.float32),
                              hlox.ShapeDtypeStruct((), np.float32)))
  x, y = np.array([1., 2.], np.float32), np.array([10., 20.], np.float32)
  a, b = f((x, y), y=y)
  np.testing.assert_array_equal(a, x + y)
  assert float(b) == 30.0


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all"])
def test_vmap_methods(method):
  def add(ctx, out, x, y):
    np.asarray(out)[...] = np.asarray(x) + np.asarray(y)
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  g = bc.buffer_callback(add, hlox.ShapeDtypeStruct((4,), np.float32), vmap_method=method)
  np.testing.assert_array_equal(hlox.vmap(g)(x, x), 2 * x)
  np.testing.assert_array_equal(hlox.vmap(g, in_axes=(0, None))(x, x[0]), x + x[0])


def test_aliases_side_effects_and_errors():
  data = np.ones((3, 4), np.float32)

  def same_buffer(ctx, out, arg):
    assert np.asarray(arg).ctypes.data == np.asarray(out).ctypes.data
  hlox.block_until_ready(bc.buffer_callback(
      same_buffer, hlox.ShapeDtypeStruct(data.shape, data.dtype),
      input_output_aliases={0: 0})(data))

  called = []
  f = bc.buffer_callback(lambda *a: called.append(1), hlox.ShapeDtypeStruct((), np.float32),
                         has_side_effect=True)
  hlox.jit(lambda: (f(), None)[1])()
  assert called == [1]

  with pytest.raises(ValueError, match="different abstract value"):
    bc.buffer_callback(same_buffer, hlox.ShapeDtypeStruct((2,), np.float32),
                       input_output_aliases={0: 0})(data)
  # raised in the host callback: the runtime's error, as JAX's (the cause is the ValueError)
  with pytest.raises(hlox.errors.JaxRuntimeError, match="must not return any values") as info:
    bc.buffer_callback(lambda ctx, out: 1, hlox.ShapeDtypeStruct((), np.float32))()
  assert isinstance(info.value.__cause__, ValueError)
  with pytest.raises(ValueError, match="do not support JVP"):
    hlox.grad(lambda x: bc.buffer_callback(_double, hlox.ShapeDtypeStruct((), np.float32))(x))(
        1.0)
