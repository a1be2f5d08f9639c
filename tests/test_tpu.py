"""hlox on a TPU (skipped without one): the client starts (libtpu's plugin is initialised
before its client is made), values come back to the host from the TPU (every dtype), the
transformations, threefry's bits and the linear-algebra primitives agree with the CPU, and
host callbacks run through send/recv. Run on a TPU machine with ``pytest tests/test_tpu.py``
(one process: a TPU takes one program at a time)."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax, random


def _tpu_devices():
  try:
    return hlox.devices("tpu")
  except RuntimeError:
    return []


TPUS = _tpu_devices()
pytestmark = [pytest.mark.tpu, pytest.mark.skipif(
    not TPUS, reason="no TPU: run on a machine with a TPU and the libtpu wheel installed")]
HIGHEST = lax.Precision.HIGHEST


@pytest.fixture
def tpu():
  return TPUS[0]


@pytest.fixture
def cpu():
  return hlox.devices("cpu")[0]


def test_tpu_is_the_default_platform(tpu):
  assert hlox.default_backend() == "tpu"
  assert jnp.ones(3).devices() == {tpu}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "uint32", "bool", "float16",
                                   "int4", "float8_e4m3fn", "complex64"])
def test_values_come_back_from_the_tpu(tpu, cpu, dtype):
  host = (np.arange(24) % 7).reshape(4, 6).astype(dtype)
  x = hlox.device_put(host, tpu)
  np.testing.assert_array_equal(np.asarray(x), host)
  np.testing.assert_array_equal(np.asarray(hlox.device_put(x, cpu)), host)
  assert hlox.device_put(x, cpu).devices() == {cpu}


FUNCTIONS = {
    "elementwise": lambda x: jnp.sum(jnp.tanh(x) * jnp.exp(-x ** 2) + jnp.sin(3 * x)),
    "reductions": lambda x: jnp.sum(jnp.cumsum(x, axis=0) ** 2) / jnp.max(jnp.abs(x) + 1),
    "matmul": lambda x: jnp.sum(jnp.tanh(jnp.matmul(x, x.T, precision=HIGHEST))),
    "scan": lambda x: lax.scan(lambda c, r: (jnp.sin(c) + r, c.sum()), x[0], x)[0].sum(),
    "softmax": lambda x: jnp.sum(hlox.nn.log_softmax(x, axis=-1) * x),
    "sort": lambda x: jnp.sum(jnp.sort(x, axis=0) * jnp.arange(8.0)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_transformations_agree_with_the_cpu(name, tpu, cpu):
  f = FUNCTIONS[name]
  rng = np.random.default_rng(0)
  x = rng.standard_normal((8, 8)).astype(np.float32)
  batch = rng.standard_normal((3, 8, 8)).astype(np.float32)
  for transform, arg in ((hlox.jit(f), x), (hlox.jit(hlox.grad(f)), x),
                         (hlox.vmap(hlox.grad(f)), batch)):
    want = np.asarray(transform(hlox.device_put(arg, cpu)))
    got = transform(hlox.device_put(arg, tpu))
    assert got.devices() == {tpu}
    # The TPU's transcendental functions are not the CPU's (errors of ~1e-4 add up through
    # a gradient); JAX's own results on the TPU differ from the CPU's as much.
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)


def test_threefry_bits_match_the_cpu(tpu, cpu):
  out = {}
  for device in (tpu, cpu):
    key = hlox.device_put(random.PRNGKey(42), device)
    out[device.platform] = (np.asarray(random.bits(key, (4096,))),
                            np.asarray(random.randint(random.fold_in(key, 1), (100,), 0, 10)),
                            np.asarray(random.key_data(random.split(key, 3))))
  for a, b in zip(out["tpu"], out["cpu"]):
    np.testing.assert_array_equal(a, b)


def test_donation_on_the_tpu(tpu):
  x = hlox.device_put(jnp.arange(1024.0), tpu)
  y = hlox.jit(lambda v: v * 2, donate_argnums=0)(x)
  assert x.is_deleted() and not y.is_deleted()
  np.testing.assert_array_equal(np.asarray(y), np.arange(1024.0) * 2)


@pytest.mark.parametrize("name", ["cholesky", "solve", "triangular_solve", "lu", "qr", "eigh",
                                  "svd", "inv", "det", "tridiagonal_solve"])
def test_linear_algebra_on_the_tpu(name, tpu, cpu):
  rng = np.random.default_rng(1)
  a = rng.standard_normal((64, 64)).astype(np.float32)
  spd = a @ a.T + 64 * np.eye(64, dtype=np.float32)
  b = rng.standard_normal((64, 3)).astype(np.float32)
  calls = {
      "cholesky": (jnp.linalg.cholesky, (spd,)),
      "solve": (jnp.linalg.solve, (spd, b)),
      "triangular_solve": (lambda m, v: lax.linalg.triangular_solve(
          jnp.tril(m), v, left_side=True, lower=True), (spd, b)),
      "lu": (lambda m: jnp.abs(lax.linalg.lu(m)[0]), (a,)),
      "qr": (lambda m: jnp.abs(jnp.linalg.qr(m)[1]), (a,)),
      "eigh": (lambda m: jnp.linalg.eigh(m)[0], (spd,)),
      "svd": (lambda m: jnp.linalg.svd(m, compute_uv=False), (a,)),
      "inv": (jnp.linalg.inv, (spd,)),
      "det": (lambda m: jnp.linalg.slogdet(m)[1], (spd,)),
      "tridiagonal_solve": (lambda m, v: lax.linalg.tridiagonal_solve(
          m[0].at[0].set(0.0), m[1] + 8, m[2].at[-1].set(0.0), v), (a[:3], b)),
  }
  fn, args = calls[name]
  with hlox.default_matmul_precision("highest"):
    want = np.asarray(hlox.jit(fn)(*(hlox.device_put(v, cpu) for v in args)))
    got = hlox.jit(fn)(*(hlox.device_put(v, tpu) for v in args))
  assert got.devices() == {tpu}
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)


def test_host_callbacks_on_the_tpu(tpu, capfd):
  x = hlox.device_put(jnp.arange(6.0).reshape(2, 3), tpu)
  f = hlox.jit(lambda v: hlox.pure_callback(
      lambda a: (np.sin(a), np.zeros((0,), np.float32)),
      (hlox.ShapeDtypeStruct((2, 3), jnp.float32), hlox.ShapeDtypeStruct((0,), jnp.float32)),
      v)[0] * 2)
  np.testing.assert_allclose(np.asarray(f(x)), 2 * np.sin(np.arange(6.0).reshape(2, 3)),
                             rtol=1e-6)
  # no operands, and no results (ordered: the calls happen in program order)
  seen = []
  def g(v):
    hlox.experimental.io_callback(lambda: seen.append("first"), None, ordered=True)
    hlox.experimental.io_callback(lambda a: seen.append(float(a)), None, v.sum(), ordered=True)
    hlox.debug.print("total {t}", t=v.sum())
    return v + 1
  np.testing.assert_array_equal(np.asarray(hlox.jit(g)(x)), np.arange(6.0).reshape(2, 3) + 1)
  hlox.effects_barrier()
  assert seen == ["first", 15.0]
  assert "total 15.0" in capfd.readouterr().out


def test_a_failing_callback_raises_its_own_error_on_the_tpu(tpu):
  def bad(a):
    raise KeyError("from the host")
  f = hlox.jit(lambda v: hlox.pure_callback(bad, hlox.ShapeDtypeStruct((), jnp.float32), v))
  with pytest.raises(Exception, match="from the host"):
    np.asarray(f(hlox.device_put(jnp.float32(1.0), tpu)))
