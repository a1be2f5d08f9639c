"""hlox on a GPU (skipped without one): placement and transfers, transformations against the
CPU's results, threefry's bits, donation, pmap, DLPack and the linear-algebra primitives.
``bench/gpu.sh`` runs this file, and the platform-independent suites (which then run on the
GPU, the default platform when one is present), on a machine with an NVIDIA GPU."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax, random


def _gpu_devices():
  try:
    return hlox.devices("gpu")
  except RuntimeError:
    return []


GPUS = _gpu_devices()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not GPUS, reason="no GPU: install hlox[cuda12] on a machine with an NVIDIA GPU")]


@pytest.fixture
def gpu():
  return GPUS[0]


@pytest.fixture
def cpu():
  return hlox.devices("cpu")[0]


def test_gpu_is_the_default_platform(gpu):
  assert hlox.default_backend() == "gpu"
  assert hlox.devices()[0] == gpu and gpu.platform == "gpu"
  assert jnp.ones(3).devices() == {gpu}


def test_transfers_between_cpu_and_gpu(gpu, cpu):
  host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  on_gpu = hlox.device_put(host, gpu)
  on_cpu = hlox.device_put(on_gpu, cpu)
  back = hlox.device_put(on_cpu * 2, gpu)
  assert on_gpu.devices() == {gpu} and on_cpu.devices() == {cpu} and back.devices() == {gpu}
  np.testing.assert_array_equal(np.asarray(back), host * 2)
  with pytest.raises(ValueError, match="different devices"):
    on_gpu + on_cpu  # committed to two devices: as JAX, no silent move
  stats = gpu.memory_stats()
  assert stats is None or stats.get("bytes_in_use", 0) > 0


FUNCTIONS = {
    "elementwise": lambda x: jnp.sum(jnp.tanh(x) * jnp.exp(-x ** 2) + jnp.sin(3 * x)),
    "reductions": lambda x: jnp.sum(jnp.cumsum(x, axis=0) ** 2) / jnp.max(jnp.abs(x) + 1),
    "matmul": lambda x: jnp.sum(jnp.tanh(x @ x.T)),
    "scan": lambda x: lax.scan(lambda c, r: (jnp.sin(c) + r, c.sum()), x[0], x)[0].sum(),
    "softmax": lambda x: jnp.sum(hlox.nn.log_softmax(x, axis=-1) * x),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_transformations_agree_with_the_cpu(name, gpu, cpu):
  f = FUNCTIONS[name]
  rng = np.random.default_rng(0)
  x = rng.standard_normal((8, 8)).astype(np.float32)
  batch = rng.standard_normal((3, 8, 8)).astype(np.float32)
  for transform, arg in ((hlox.jit(f), x), (hlox.jit(hlox.grad(f)), x),
                         (hlox.jit(hlox.jacfwd(f)), x), (hlox.vmap(hlox.grad(f)), batch)):
    want = np.asarray(transform(hlox.device_put(arg, cpu)))
    got = transform(hlox.device_put(arg, gpu))
    assert got.devices() == {gpu}
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


def test_threefry_bits_match_the_cpu(gpu, cpu):
  for device in (gpu, cpu):
    key = hlox.device_put(random.PRNGKey(42), device)
    bits = random.bits(key, (4096,))
    normal = random.normal(random.fold_in(key, 3), (1000,))
    if device is gpu:
      gpu_bits, gpu_normal = np.asarray(bits), np.asarray(normal)
    else:
      np.testing.assert_array_equal(np.asarray(bits), gpu_bits)
      np.testing.assert_allclose(np.asarray(normal), gpu_normal, rtol=1e-6, atol=1e-6)


def test_donation_on_the_gpu(gpu):
  x = hlox.device_put(jnp.arange(1024.0), gpu)
  y = hlox.jit(lambda v: v * 2, donate_argnums=0)(x)
  assert x.is_deleted() and not y.is_deleted()
  np.testing.assert_array_equal(np.asarray(y), np.arange(1024.0) * 2)


def test_pmap_over_the_gpus():
  n = len(GPUS)
  out = hlox.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(jnp.arange(float(n)))
  np.testing.assert_array_equal(np.asarray(out), np.full(n, n * (n - 1) / 2))


def test_dlpack_round_trip_on_the_gpu(gpu):
  x = hlox.device_put(jnp.arange(256.0), gpu)
  assert x.__dlpack_device__() == (2, gpu.local_hardware_id)
  y = hlox.dlpack.from_dlpack(x)
  assert y.devices() == {gpu}
  assert y._buf.unsafe_buffer_pointer() == x._buf.unsafe_buffer_pointer()  # shared
  torch = pytest.importorskip("torch", reason="PyTorch is not installed")
  if not torch.cuda.is_available():
    pytest.skip("PyTorch has no CUDA")
  t = torch.from_dlpack(x)
  assert t.is_cuda and float(t[3]) == 3.0
  back = hlox.dlpack.from_dlpack(torch.arange(5, device="cuda", dtype=torch.float32) * 2)
  assert back.devices() == {gpu}
  np.testing.assert_array_equal(np.asarray(back), np.arange(5.0) * 2)


@pytest.mark.parametrize("name", ["cholesky", "solve", "triangular_solve", "lu", "qr", "eigh",
                                  "svd", "qr_pivoting", "eigvals", "tridiagonal", "schur",
                                  "hessenberg", "inv", "det", "tridiagonal_solve"])
def test_linear_algebra_on_the_gpu(name, gpu, cpu):
  rng = np.random.default_rng(1)
  a = rng.standard_normal((64, 64)).astype(np.float32)
  spd = a @ a.T + 64 * np.eye(64, dtype=np.float32)
  b = rng.standard_normal((64, 3)).astype(np.float32)
  calls = {  # (function, arguments)
      "cholesky": (jnp.linalg.cholesky, (spd,)),
      "solve": (jnp.linalg.solve, (spd, b)),
      "triangular_solve": (lambda m, v: lax.linalg.triangular_solve(
          jnp.tril(m), v, left_side=True, lower=True), (spd, b)),
      "lu": (lambda m: lax.linalg.lu(m)[0], (a,)),
      "qr": (lambda m: jnp.abs(jnp.linalg.qr(m)[1]), (a,)),
      "eigh": (lambda m: jnp.linalg.eigh(m)[0], (spd,)),
      "svd": (lambda m: jnp.linalg.svd(m, compute_uv=False), (a,)),
      "qr_pivoting": (lambda m: jnp.abs(hlox.scipy.linalg.qr(m, pivoting=True)[1]), (a,)),
      "eigvals": (lambda m: jnp.sort_complex(jnp.linalg.eigvals(m)), (a,)),
      "tridiagonal": (lambda m: lax.linalg.tridiagonal(m)[1], (spd,)),
      "schur": (lambda m: hlox.scipy.linalg.schur(m)[0], (spd,)),
      "hessenberg": (lambda m: jnp.abs(hlox.scipy.linalg.hessenberg(m)), (a,)),
      "inv": (jnp.linalg.inv, (spd,)),
      "det": (lambda m: jnp.linalg.slogdet(m)[1], (spd,)),
      "tridiagonal_solve": (lambda m, v: lax.linalg.tridiagonal_solve(
          m[0].at[0].set(0.0), m[1] + 8, m[2].at[-1].set(0.0), v), (a[:3], b)),
  }
  fn, args = calls[name]
  want = np.asarray(hlox.jit(fn)(*(hlox.device_put(v, cpu) for v in args)))
  got = hlox.jit(fn)(*(hlox.device_put(v, gpu) for v in args))
  assert got.devices() == {gpu}
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-3)
