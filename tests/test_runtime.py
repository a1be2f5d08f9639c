"""Runtime: devices, Array behaviour, device_put across devices, no hidden import of JAX."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hlox
from hlox import lax


def test_devices_and_backend():
  assert hlox.default_backend() == "cpu"
  assert hlox.device_count() == 8  # tests/conftest.py sets HLOX_NUM_CPU_DEVICES=8
  assert hlox.local_device_count() == 8
  assert len(hlox.devices()) == 8


def test_array_attributes_and_conversions():
  x = hlox.device_put(np.arange(6, dtype=np.float32).reshape(2, 3))
  assert (x.shape, x.dtype, x.ndim, x.size, x.itemsize, x.nbytes) == ((2, 3), np.float32, 2,
                                                                        6, 4, 24)
  assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
  assert len(x) == 2
  s = hlox.device_put(np.float32(2.5))
  assert float(s) == 2.5 and int(s) == 2 and bool(s) and s.item() == 2.5
  assert hlox.device_put(np.int32(3)).__index__() == 3
  assert x.devices() == {hlox.devices()[0]}
  assert x.block_until_ready() is x
  with pytest.raises(TypeError, match="unhashable"):
    hash(x)
  with pytest.raises(TypeError, match="Only scalar arrays can be converted"):  # JAX's phrase
    float(x)


def test_array_repr_like_jax():
  assert repr(hlox.device_put(np.array([1.0, 2.0], np.float32))) == \
      "Array([1., 2.], dtype=float32)"
  assert repr(hlox.device_put(np.arange(3, dtype=np.int32))) == "Array([0, 1, 2], dtype=int32)"
  assert repr(hlox.device_put(1.5)) == "Array(1.5, dtype=float32, weak_type=True)"
  assert repr(hlox.device_put(np.array([True]))) == "Array([ True], dtype=bool)"


def test_delete_and_pickle():
  x = hlox.device_put(np.ones(3, np.float32))
  y = pickle.loads(pickle.dumps(x))
  np.testing.assert_array_equal(np.asarray(y), np.ones(3))
  x.delete()
  assert x.is_deleted()
  with pytest.raises(hlox.errors.DeletedArrayError):
    x.tolist()


@pytest.mark.parametrize("how", ["delete", "donate"])
def test_a_dead_array_is_refused_before_xla(how, capfd):
  # JAX's class and words; the check happens in hlox, so XLA logs nothing to stderr.
  x = hlox.device_put(np.ones(3, np.float32))
  if how == "delete":
    x.delete()
  else:
    np.testing.assert_array_equal(hlox.jit(lambda a: a * 2, donate_argnums=0)(x), [2, 2, 2])
  assert x.is_deleted()
  uses = [lambda: lax.sin(x), lambda: hlox.jit(lambda a: a + 1)(x), lambda: np.asarray(x),
          lambda: x.block_until_ready(), lambda: hlox.vmap(lax.cos)(x)]
  for use in uses:
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]"):
      use()
  x.delete()  # deleting twice is allowed, as in JAX
  assert "Buffer has been deleted" not in capfd.readouterr().err


def test_device_put_across_four_devices_and_compute_there():
  data = np.arange(4, dtype=np.float32)
  for device in hlox.devices():
    x = hlox.device_put(data, device)
    assert x.devices() == {device}
    y = lax.mul(x, 2.0)  # eager op runs on the array's device
    assert y.devices() == {device}
    z = hlox.jit(lambda a: lax.add(a, 1.0))(x)
    assert z.devices() == {device}
    np.testing.assert_allclose(np.asarray(z), data + 1)
  a = hlox.device_put(data, hlox.devices()[1])
  b = hlox.device_put(a, hlox.devices()[3])
  assert b.devices() == {hlox.devices()[3]}
  np.testing.assert_array_equal(np.asarray(b), data)
  with pytest.raises(ValueError, match="incompatible devices"):
    lax.add(a, b)


def test_device_get_and_block_until_ready_on_trees():
  tree = {"a": hlox.device_put(np.ones(2, np.float32)), "b": [3, hlox.device_put(1.0)]}
  host = hlox.device_get(tree)
  assert isinstance(host["a"], np.ndarray) and host["b"][0] == 3
  assert hlox.block_until_ready(tree) is tree


def test_device_put_of_a_traced_value_is_the_identity():
  def f(x):
    return hlox.device_put(x).at[np.diag_indices(3)].set(np.arange(3, dtype=np.float32))
  x = np.ones((3, 3), np.float32)
  want = 1 - np.eye(3)
  np.testing.assert_array_equal(np.asarray(hlox.jvp(f, (x,), (x,))[1]), want)
  np.testing.assert_array_equal(np.asarray(hlox.grad(lambda x: f(x).sum())(x)), want)
  np.testing.assert_array_equal(np.asarray(hlox.jit(f)(x)), want + np.diag(np.arange(3)))


def test_device_put_rejects_objects():
  with pytest.raises(TypeError, match="object"):
    hlox.device_put(np.array([object()]))


def _run_with_env(code, **env_vars):
  env = {k: v for k, v in os.environ.items() if not k.startswith(("HLOX_", "JAX_"))}
  env.pop("XLA_FLAGS", None)
  env.update(env_vars)
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
  return out.stdout.strip()


@pytest.mark.parametrize("env_vars, expected", [
    ({}, "1"),
    ({"HLOX_NUM_CPU_DEVICES": "3"}, "3"),
    ({"JAX_NUM_CPU_DEVICES": "5"}, "5"),  # JAX's spelling, read when HLOX_'s is unset
    ({"HLOX_NUM_CPU_DEVICES": "2", "JAX_NUM_CPU_DEVICES": "5"}, "2"),
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=6"}, "6"),  # as JAX's tutorials do
])
def test_num_cpu_devices_from_the_environment(env_vars, expected):
  assert _run_with_env("import hlox; print(hlox.device_count())", **env_vars) == expected


def test_jax_spelling_of_environment_options():
  code = ("import hlox, hlox.numpy as jnp; "
          "print(jnp.arange(2.).dtype, hlox.config.numpy_rank_promotion)")
  assert _run_with_env(code, JAX_ENABLE_X64="1",
                       JAX_NUMPY_RANK_PROMOTION="raise") == "float64 raise"
  assert _run_with_env(code, JAX_ENABLE_X64="1", HLOX_ENABLE_X64="0") == "float32 allow"


def test_platforms_option():
  # JAX's spellings: a list that allows the CPU runs; one naming only absent platforms
  # fails at the first device use, naming what is available
  code = "import hlox; print(hlox.devices()[0].platform)"
  assert _run_with_env(code, JAX_PLATFORMS="cuda,cpu") == "cpu"
  assert _run_with_env(code, HLOX_PLATFORMS="cpu", JAX_PLATFORMS="tpu") == "cpu"
  code = ("import hlox\ntry:\n  hlox.devices()\nexcept RuntimeError as e:\n  print(e)")
  out = _run_with_env(code, JAX_PLATFORMS="tpu")
  assert "Unable to initialize backend 'tpu'" in out and "available: 'cpu'" in out
  code = ("import hlox\nhlox.config.update('jax_platform_name', 'gpu')\ntry:\n"
          "  hlox.devices()\nexcept RuntimeError as e:\n  print(e)")
  assert "Unable to initialize backend 'gpu'" in _run_with_env(code)
  with pytest.raises(TypeError, match="jax_platforms must be a string or None"):
    hlox.config.update("jax_platforms", 3)


def test_logging_level_option():
  code = ("import logging, hlox\nhlox.config.update('jax_logging_level', 'DEBUG')\n"
          "hlox.jit(lambda x: x + 1)(1.0)\n"
          "print(logging.getLogger('hlox').level == logging.DEBUG)\n"
          "hlox.config.update('jax_logging_level', 'NOTSET')\n"
          "print(logging.getLogger('hlox').level, len(logging.getLogger('hlox').handlers))")
  env = {k: v for k, v in os.environ.items() if not k.startswith(("HLOX_", "JAX_"))}
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["True", "0", "0"]
  assert "Finished XLA compilation of jit(<lambda>)" in out.stderr  # the DEBUG line
  with pytest.raises(ValueError, match="new enum value must be None or in"):
    hlox.config.update("jax_logging_level", "LOUD")


def test_jax_implementation_switches_are_accepted():
  # Scripts set JAX's upgrade flags and implementation choices; hlox keeps the values.
  for name, value in [("jax_use_shardy_partitioner", True), ("jax_remat3", False),
                      ("jax_cpu_collectives_implementation", "gloo"),
                      ("jax_cpu_enable_async_dispatch", True)]:
    old = getattr(hlox.config, name[4:])
    hlox.config.update(name, value)
    assert getattr(hlox.config, name[4:]) == value
    hlox.config.update(name, old)
  with pytest.raises(ValueError, match="new enum value must be None or in"):
    hlox.config.update("jax_cpu_collectives_implementation", "tcp")


NO_JAX_SCRIPT = textwrap.dedent("""
    import sys
    attempts = []
    class BlockJax:
      def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith("jax."):
          attempts.append(name)
          raise ImportError("import of " + name + " blocked by the test")
        return None
    sys.meta_path.insert(0, BlockJax())
    import numpy as np
    import hlox, hlox.numpy as jnp
    from hlox import lax
    x = hlox.device_put(np.arange(8, dtype=np.float32))
    f = hlox.jit(lambda a, b: {"s": lax.sin(a) * b, "c": lax.cos(a)})
    for _ in range(3):
      out = f(x, 2.0)
    y = lax.exp(x) + x
    np.asarray(out["s"]); np.asarray(y); repr(y); out["c"].block_until_ready()
    g = hlox.jit(lambda a: a * 2, donate_argnums=0)
    z = g(hlox.device_put(np.ones(4, np.float32)))
    hlox.make_jaxpr(f)(x, 2.0); f.lower(x, 2.0).as_text()
    # pmap: results split over devices, read back, their shards, a bfloat16 one, nested.
    p = hlox.pmap(lambda a: lax.psum(a, "i") * a, axis_name="i")(np.ones((2, 3), np.float32))
    np.asarray(p); p.addressable_shards[1].data; np.asarray(p + 1)
    np.asarray(hlox.pmap(lambda a: a)(np.ones((2, 2), jnp.bfloat16)))
    np.asarray(hlox.pmap(hlox.pmap(lambda a: a * 2))(np.ones((2, 2), np.float32)))
    print("attempts:", attempts, "loaded:", [m for m in sys.modules if m.split(".")[0] == "jax"])
""")


def test_nothing_imports_jax():
  out = subprocess.run([sys.executable, "-c", NO_JAX_SCRIPT], capture_output=True, text=True)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "attempts: [] loaded: []" in out.stdout, out.stdout


def test_bfloat16_and_float16_round_trip():
  from hlox.core import dtypes
  for dtype in (dtypes.bfloat16, np.float16, dtypes.float8_e4m3fn):
    data = np.array([1.5, -2.0, 0.25], dtype=dtype)
    x = hlox.device_put(data)
    back = np.asarray(x)
    assert back.dtype == dtype
    np.testing.assert_array_equal(back.astype(np.float32), data.astype(np.float32))


def test_num_cpu_devices_after_the_client_exists_raises_jaxs_error():
  # Changing the device count once a device was used raises JAX's RuntimeError (its words,
  # which api_test's test_num_cpu_devices_called_after_initialization matches); setting the
  # current count again is allowed, as in JAX.
  code = ("import hlox\n"
          "n = hlox.device_count()\n"
          "hlox.config.update('jax_num_cpu_devices', n)\n"
          "try:\n"
          "  hlox.config.update('jax_num_cpu_devices', n + 1)\n"
          "except RuntimeError as e:\n"
          "  print(type(e).__name__, 'jax_num_cpu_devices config should be updated before "
          "backends are initialized' in str(e), hlox.device_count() == n)\n")
  assert _run_with_env(code) == "RuntimeError True True"
