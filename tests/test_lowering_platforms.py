"""``jit(f).trace(...).lower(lowering_platforms=...)``: lowering for a platform this process
does not run (to read the program or export it), with each primitive's rule for that
platform; and the platform-specific lowerings that need no device (host callbacks)."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from util import custom_calls


def test_traced_stage_shows_the_program_and_lowers_it():
  f = hlox.jit(lambda x, y: jnp.sin(x) * y)
  traced = f.trace(jnp.ones(3), 2.0)
  assert "sin" in str(traced.jaxpr) and traced.fun_name == "<lambda>"
  assert traced.out_info.shape == (3,) and traced.out_info.dtype == np.float32
  lowered = traced.lower()
  assert lowered.as_text() == f.lower(jnp.ones(3), 2.0).as_text()
  np.testing.assert_allclose(lowered.compile()(jnp.ones(3), 2.0), 2 * np.sin(np.ones(3)))
  # This process's own platform, named, is the ordinary lowering.
  assert traced.lower(lowering_platforms=("cpu",)).as_text() == lowered.as_text()


def test_lowering_for_another_platform_reads_but_does_not_compile():
  traced = hlox.jit(lambda a: jnp.linalg.cholesky(a) + 1).trace(jnp.eye(3))
  for platform in ("cuda", "rocm", "tpu", "gpu"):
    lowered = traced.lower(lowering_platforms=(platform,))
    assert "func.func public @main" in lowered.as_text()
    with pytest.raises(RuntimeError, match=f"lowered for '(cuda|rocm|tpu)'.*platforms present"):
      lowered.compile()


def test_bad_lowering_platforms():
  traced = hlox.jit(jnp.sin).trace(jnp.ones(2))
  with pytest.raises(ValueError, match="unknown lowering platform.*'metal'"):
    traced.lower(lowering_platforms=("metal",))
  with pytest.raises(NotImplementedError, match="one platform at a time"):
    traced.lower(lowering_platforms=("cpu", "cuda"))


def test_a_primitive_without_a_rule_for_the_platform_names_both():
  traced = hlox.jit(lambda a: hlox.scipy.linalg.schur(a)).trace(jnp.eye(3))
  with pytest.raises(NotImplementedError, match="schur.*'tpu'"):
    traced.lower(lowering_platforms=("tpu",))


@pytest.mark.parametrize("platform,target", [("cpu", "xla_ffi_python_cpu_callback"),
                                             ("cuda", "xla_ffi_python_gpu_callback"),
                                             ("rocm", "xla_ffi_python_gpu_callback")])
def test_host_callbacks_per_platform(platform, target):
  def f(x):
    y = hlox.pure_callback(np.sin, hlox.ShapeDtypeStruct(x.shape, x.dtype), x)
    hlox.debug.print("x={}", x)
    return y
  text = hlox.jit(f).trace(jnp.ones(3)).lower(lowering_platforms=(platform,)).as_text()
  calls = custom_calls(text)
  assert [c["target"] for c in calls] == [target, target]
  assert calls[0]["operands"] == ["tensor<3xf32>"] and calls[0]["results"] == ["tensor<3xf32>"]
  assert calls[1]["side_effect"]


def test_every_primitive_with_a_cpu_rule_lowers_on_gpus():
  # The rule: what lowers on the CPU lowers on a GPU (by its own rule or the default).
  # On a TPU, as in JAX, a few LAPACK-only primitives have none. (In a fresh process: other
  # tests register CPU-only primitives of their own.)
  import subprocess
  import sys
  code = (
      "import hlox, hlox.numpy, hlox.scipy.linalg, hlox.scipy.special, hlox.random\n"
      "from hlox.interpreters import xla\n"
      "cpu = xla.platform_lowering_rules['cpu']\n"
      "print(len(cpu))\n"
      "for platform in ('cuda', 'rocm', 'tpu'):\n"
      "  print(sorted(p.name for p in cpu if xla.get_lowering_rule(p, platform) is None))\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  count, cuda, rocm, tpu = out.stdout.strip().splitlines()
  assert int(count) > 10
  assert cuda == rocm == "[]"
  assert tpu == str(["eig", "geqp3", "hessenberg", "schur", "tridiagonal"])
