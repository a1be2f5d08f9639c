"""The demo (`python -m hlox`) runs and shows what it promises."""
import subprocess
import sys


def test_demo_runs():
  out = subprocess.run([sys.executable, "-m", "hlox"], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  text = out.stdout
  assert "devices: [CpuDevice(id=0)" in text
  assert "{ lambda ; a:f32[4,3] b:f32[3] c:f32[2,4]. let" in text
  assert "stablehlo.tanh" in text and "func.func public @main" in text
  assert "matches eager: True" in text
  assert "time per call: jit" in text


def test_demo_shows_autodiff():
  out = subprocess.run([sys.executable, "-m", "hlox"], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  assert "grad at 1.0: 0.4199743" in out.stdout
  assert "third derivative at 1.0: 0.6216" in out.stdout
  assert "# The jaxpr of grad(tanh):" in out.stdout
