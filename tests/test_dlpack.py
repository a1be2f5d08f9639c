"""DLPack exchange: NumPy (and PyTorch when installed) to hlox and back, sharing memory where
the buffer allows, copying where asked or needed, with JAX's errors."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp


def _aligned(n, dtype=np.float32, alignment=64):
  raw = np.zeros(n + alignment, dtype)
  start = (-raw.ctypes.data % alignment) // raw.itemsize
  return raw[start:start + n]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.complex64,
                                   np.float16])
def test_round_trip_values(dtype):
  host = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
  x = hlox.dlpack.from_dlpack(host)
  assert x.dtype == host.dtype and x.shape == host.shape
  np.testing.assert_array_equal(np.asarray(x), host)
  back = np.from_dlpack(x + x if dtype != np.bool_ else x)
  np.testing.assert_array_equal(back, host + host if dtype != np.bool_ else host)
  assert hlox.dlpack.is_supported_dtype(dtype)


def test_aligned_memory_is_shared_not_copied():
  host = _aligned(256)
  x = jnp.from_dlpack(host)
  assert x._buf.unsafe_buffer_pointer() == host.ctypes.data
  host[3] = 5.0  # the Array sees the producer's memory
  assert float(x[3]) == 5.0
  out = np.from_dlpack(x)  # and NumPy sees the Array's
  assert out.ctypes.data == host.ctypes.data


def test_copies_when_asked_or_needed():
  host = _aligned(256)
  copied = hlox.dlpack.from_dlpack(host, copy=True)
  host[0] = 7.0
  assert float(copied[0]) == 0.0
  unaligned = _aligned(257)[1:]
  x = hlox.dlpack.from_dlpack(unaligned)  # copied: XLA needs 64-byte aligned buffers
  np.testing.assert_array_equal(np.asarray(x), unaligned)
  with pytest.raises(ValueError, match="Specified .* which requires a copy.*copy=False"):
    hlox.dlpack.from_dlpack(unaligned, copy=False)


def test_bad_input_and_devices():
  with pytest.raises(TypeError, match="must have __dlpack__ and __dlpack_device__"):
    hlox.dlpack.from_dlpack([1.0, 2.0])
  x = jnp.arange(4.0)
  assert x.__dlpack_device__() == (1, 0)
  assert np.asarray(hlox.dlpack.from_dlpack(x)).tolist() == [0.0, 1.0, 2.0, 3.0]
  bf16 = jnp.arange(3.0, dtype=jnp.bfloat16)  # NumPy cannot export bfloat16; hlox can
  assert hlox.dlpack.from_dlpack(bf16).dtype == jnp.bfloat16
  wide = hlox.dlpack.from_dlpack(np.arange(3.0))  # float64 without x64: float32, as JAX
  assert wide.dtype == np.float32
  devices = hlox.devices()
  if len(devices) > 1:
    moved = hlox.dlpack.from_dlpack(np.ones(3, np.float32), device=devices[1])
    assert moved.devices() == {devices[1]}
    with pytest.raises(BufferError, match="not on the requested DLPack device"):
      x.__dlpack__(dl_device=(2, 0))
  donated = hlox.jit(lambda v: v + 1, donate_argnums=0)
  y = jnp.arange(3.0) + 0
  donated(y)
  with pytest.raises(RuntimeError, match="deleted"):
    y.__dlpack__()


def test_torch_round_trip():
  torch = pytest.importorskip("torch", reason="PyTorch is not installed")
  t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
  x = hlox.dlpack.from_dlpack(t)
  np.testing.assert_array_equal(np.asarray(x), t.numpy())
  back = torch.from_dlpack(x * 2)
  np.testing.assert_array_equal(back.numpy(), t.numpy() * 2)


def test_from_dlpack_without_jax_installed():
  # jaxlib fills in a DLPack buffer's shape and dtype only through JAX's Python code; hlox
  # reads them from the capsule, so the import works with JAX absent (blocked here).
  import subprocess
  import sys
  script = """
import sys
sys.modules['jax'] = None
import numpy as np
import hlox
host = np.arange(4).reshape(2, 2).T  # a non-default layout: copied
x = hlox.dlpack.from_dlpack(host)
y = hlox.dlpack.from_dlpack(np.arange(6, dtype=np.int8).reshape(2, 3))
z = hlox.dlpack.from_dlpack(np.zeros((0, 3), np.complex64))
s = hlox.dlpack.from_dlpack(np.array(2.5, np.float32))
b = hlox.dlpack.from_dlpack(hlox.numpy.arange(3.0, dtype='bfloat16'))  # jaxlib's route
print(x.shape, x.dtype, np.asarray(x).tolist(), (y + 1).dtype, np.asarray(y * 2).tolist(),
      z.shape, z.dtype, s.shape, float(hlox.jit(lambda v: v * 2)(s)), b.dtype, b.shape,
      float((b * 2)[2]))
"""
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
  assert out.stdout.strip() == ("(2, 2) int32 [[0, 2], [1, 3]] int8 [[0, 2, 4], [6, 8, 10]] "
                                "(0, 3) complex64 () 5.0 bfloat16 (3,) 4.0"), out.stderr[-2000:]


def test_from_dlpack_of_host_memory_does_not_import_jax():
  # jaxlib's DLPack import has its C++ side import JAX (where installed) for the buffer's
  # aval; host memory goes through NumPy and a zero-copy transfer instead.
  import subprocess
  import sys
  script = """
import sys
import numpy as np
import hlox
x = hlox.dlpack.from_dlpack(np.arange(6.0, dtype=np.float32).reshape(2, 3))
y = hlox.dlpack.from_dlpack(hlox.numpy.arange(4))
print(np.asarray(x + 1).sum(), np.asarray(y).tolist(), 'jax' in sys.modules)
"""
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
  assert out.stdout.strip() == "21.0 [0, 1, 2, 3] False", out.stderr[-2000:]


def test_cuda_array_interface_absent_off_gpu():
  x = jnp.arange(5)
  if x.devices().pop().platform == "gpu":
    pytest.skip("the interface exists on GPU buffers")
  assert not hasattr(x, "__cuda_array_interface__")
  with pytest.raises(AttributeError, match="only defined for .*GPU buffers"):
    x.__cuda_array_interface__
