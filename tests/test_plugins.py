"""PJRT plugin discovery and platform choice, on a machine without a GPU: no plugin means the
CPU; a plugin that cannot start is one warning and the CPU; a plugin of another jaxlib release
is a warning and not used; a platform asked for by name that cannot start is an error. The
plugin packages' own code (which imports JAX) is never run."""
import os
import subprocess
import sys
import textwrap
import warnings

import jaxlib
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.interpreters import xla
from hlox.runtime import client, plugins


def _fake_cuda_wheel(root, version):
  """A site directory laid out as the jax-cuda12-pjrt wheel installs itself, whose library
  is not a shared object and whose package raises if anything imports it."""
  package = root / "jax_plugins" / "xla_cuda12"
  package.mkdir(parents=True)
  (package / "__init__.py").write_text("raise ImportError('the plugin package was imported')\n")
  (package / "xla_cuda_plugin.so").write_bytes(b"not a shared object")
  meta = root / f"jax_cuda12_pjrt-{version}.dist-info"
  meta.mkdir()
  (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jax-cuda12-pjrt\n"
                                 f"Version: {version}\n")
  return root


def _run(code, site=None, **env_vars):
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("HLOX_", "JAX_", "PYTHONPATH"))}
  env.pop("XLA_FLAGS", None)
  if site is not None:
    env["PYTHONPATH"] = str(site)
  env.update(env_vars)
  out = subprocess.run([sys.executable, "-W", "always", "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=120)
  return out


COMPUTE = """
import sys, hlox, hlox.numpy as jnp
print(hlox.default_backend(), float(jnp.sin(1.0)), 'jax' in sys.modules,
      'jax_plugins.xla_cuda12' in sys.modules)
"""


def test_no_plugin_runs_on_the_cpu():
  out = _run(COMPUTE)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["cpu", str(float(np.float32(np.sin(1.0)))), "False", "False"]
  assert "Falling back" not in out.stderr


def test_plugin_that_fails_to_start_warns_once_and_falls_back(tmp_path):
  site = _fake_cuda_wheel(tmp_path, jaxlib.__version__)
  out = _run(COMPUTE + "jnp.cos(2.0).block_until_ready()\n", site)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split()[0] == "cpu"
  assert out.stdout.split()[2:] == ["False", "False"]  # neither JAX nor the package ran
  assert out.stderr.count("unable to initialize backend 'cuda'") == 1
  assert "Falling back to cpu" in out.stderr and "xla_cuda_plugin.so" in out.stderr


def test_plugin_of_another_jaxlib_release_is_not_used(tmp_path):
  site = _fake_cuda_wheel(tmp_path, "0.9.0")
  out = _run(COMPUTE, site)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split()[0] == "cpu"
  assert "version 0.9.0" in out.stderr and f"jaxlib is version {jaxlib.__version__}" in \
      out.stderr
  assert "unable to initialize" not in out.stderr  # it was not even loaded


def test_platform_named_in_platforms_that_fails_is_an_error(tmp_path):
  site = _fake_cuda_wheel(tmp_path, jaxlib.__version__)
  out = _run(COMPUTE, site, HLOX_PLATFORMS="cuda,cpu")
  assert out.returncode != 0
  assert "RuntimeError: Unable to initialize backend 'cuda'" in out.stderr
  # Asking for the CPU only skips the plugin without a word.
  out = _run(COMPUTE, site, HLOX_PLATFORMS="cpu")
  assert out.returncode == 0 and out.stdout.split()[0] == "cpu", out.stderr
  assert "cuda" not in out.stderr


def test_discover_reads_explicit_paths_and_wheels(tmp_path, monkeypatch):
  monkeypatch.setenv("HLOX_PJRT_PLUGINS", "tpu:/opt/libtpu.so, cuda:/opt/cuda_plugin.so")
  specs = {s.name: s for s in plugins.discover()}
  assert specs["tpu"].library == "/opt/libtpu.so" and specs["tpu"].version is None
  assert specs["cuda"].library == "/opt/cuda_plugin.so"
  monkeypatch.setenv("HLOX_PJRT_PLUGINS", "/opt/no_name.so")
  with pytest.raises(ValueError, match="HLOX_PJRT_PLUGINS: expected 'name:/path"):
    plugins.discover()
  monkeypatch.delenv("HLOX_PJRT_PLUGINS")
  site = _fake_cuda_wheel(tmp_path, "0.10.2")
  monkeypatch.syspath_prepend(str(site))
  import importlib
  importlib.invalidate_caches()
  sys.modules.pop("jax_plugins", None)
  try:
    found = [s for s in plugins.discover() if s.name == "cuda"]
  finally:  # the namespace package found here must not outlive the test
    sys.modules.pop("jax_plugins", None)
  assert found and found[0].library == str(site / "jax_plugins" / "xla_cuda12" /
                                           "xla_cuda_plugin.so")
  assert found[0].version == "0.10.2" and found[0].kernels == "jax_cuda12_plugin"
  assert "jax_plugins.xla_cuda12" not in sys.modules


def test_version_check():
  spec = plugins.PluginSpec("cuda", "/x.so", "0.10.2", "jax-cuda12-pjrt")
  assert plugins.version_mismatch(spec, "0.10.2") is None
  why = plugins.version_mismatch(spec, "0.10.3")
  assert "0.10.2" in why and "0.10.3" in why and "'cuda' platform is not used" in why
  assert plugins.version_mismatch(plugins.PluginSpec("cuda", "/x.so"), "0.10.3") is None


def test_gpu_client_options_from_the_environment():
  assert plugins.gpu_client_options({}) == {"platform_name": "cuda", "allocator": "default"}
  options = plugins.gpu_client_options({"HLOX_GPU_PREALLOCATE": "false",
                                        "HLOX_GPU_MEMORY_FRACTION": ".5",
                                        "HLOX_GPU_ALLOCATOR": "platform"})
  assert options == {"platform_name": "cuda", "allocator": "platform",
                     "memory_fraction": 0.5, "preallocate": False}
  with pytest.raises(ValueError, match="HLOX_GPU_MEMORY_FRACTION"):
    plugins.gpu_client_options({"HLOX_GPU_MEMORY_FRACTION": "1.5"})
  with pytest.raises(ValueError, match="HLOX_GPU_ALLOCATOR must be one of"):
    plugins.gpu_client_options({"HLOX_GPU_ALLOCATOR": "magic"})


def test_absent_platforms_name_the_ones_present():
  for call in (lambda: hlox.devices("gpu"), lambda: hlox.local_devices(backend="tpu"),
               lambda: hlox.device_count("cuda"), lambda: hlox.jit(jnp.sin, backend="gpu")(1.)):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", DeprecationWarning)
      with pytest.raises(RuntimeError, match="Unknown backend: '(gpu|tpu|cuda)' requested.*"
                                             "Platforms present are: cpu"):
        call()
  assert hlox.default_backend() == "cpu"
  assert list(hlox.extend.backend.backends()) == ["cpu"]
  assert hlox.extend.backend.get_backend("cpu") is client.get_client()


def test_jit_device_and_backend_place_the_computation():
  devices = hlox.devices()
  if len(devices) < 2:
    pytest.skip("needs two CPU devices (HLOX_NUM_CPU_DEVICES)")
  x = hlox.device_put(jnp.arange(4.0), devices[0])
  with pytest.warns(DeprecationWarning, match="backend and device argument on jit"):
    f = hlox.jit(lambda v: v * 2, device=devices[1])
  out = f(x)  # committed elsewhere: copied over, as device_put would
  assert out.devices() == {devices[1]}
  np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2)
  with pytest.warns(DeprecationWarning):
    g = hlox.jit(lambda v: v + 1, backend="cpu")
  assert g(x).devices() == {devices[0]}
  with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="can't specify both"):
    hlox.jit(jnp.sin, device=devices[0], backend="cpu")
  with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="in_shardings should"):
    hlox.jit(jnp.sin, device=devices[0], in_shardings=hlox.sharding.SingleDeviceSharding(
        devices[0]))


def test_lowering_rules_per_platform():
  # A rule registered for one platform serves modules lowered for it; others keep the default.
  from hlox.core.jaxpr import ClosedJaxpr
  prim = hlox.extend.core.Primitive("plugin_test_double")
  prim.def_abstract_eval(lambda x: x)
  xla.register_lowering(prim, lambda ctx, x: xla.hlo.add(x, x))
  xla.register_lowering(prim, lambda ctx, x: xla.hlo.multiply(x, x), platform="cuda")
  closed = hlox.make_jaxpr(prim.bind)(1.0)
  assert isinstance(closed, ClosedJaxpr)
  cpu_text = xla.lower_jaxpr_to_module(closed).as_text()
  cuda_text = xla.lower_jaxpr_to_module(closed, platform="cuda").as_text()
  assert "stablehlo.add" in cpu_text and "stablehlo.multiply" not in cpu_text
  assert "stablehlo.multiply" in cuda_text and "stablehlo.add" not in cuda_text
  assert client.lowering_platform(hlox.devices()[0]) == "cpu"
  # A rule for some platforms only (tridiagonal: CPU and GPU, as JAX) is not offered to
  # another platform: a clear error, not XLA's.
  tri = hlox.make_jaxpr(hlox.lax.linalg.tridiagonal)(np.eye(2, dtype=np.float32))
  with pytest.raises(NotImplementedError,
                     match="primitive 'tridiagonal' not found for platform 'tpu'"):
    xla.lower_jaxpr_to_module(tri, platform="tpu")
