"""The demo (`python -m hlox`) runs and shows what it promises."""
import functools
import subprocess
import sys


@functools.lru_cache(maxsize=1)
def demo_output() -> str:
  out = subprocess.run([sys.executable, "-m", "hlox"], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


def test_demo_shows_jaxpr_stablehlo_and_timing():
  text = demo_output()
  assert "devices: [CpuDevice(id=0)" in text
  assert "{ lambda ; a:f32[4,3] b:f32[3] c:f32[2,4]. let" in text
  assert "stablehlo.tanh" in text and "func.func public @main" in text
  assert "matches eager: True" in text
  assert "time per call: jit" in text


def test_demo_shows_autodiff():
  text = demo_output()
  assert "grad at 1.0: 0.4199743" in text
  assert "third derivative at 1.0: 0.6216" in text
  assert "# The jaxpr of grad(tanh):" in text


def test_demo_shows_per_example_gradients():
  text = demo_output()
  assert "per-example gradient shape: (32, 4, 3)" in text
  assert "matches a Python loop: True" in text


def test_demo_shows_random_numbers():
  text = demo_output()
  assert "# Random numbers" in text
  # JAX 0.10.2's numbers for PRNGKey(0).
  assert ("uniform(key, (3,)): [0.9476670026779175, 0.9785798788070679, 0.33229148387908936]"
          in text)
  assert "split(key): [[1797259609, 2579123966], [928981903, 3453687069]]" in text


def test_demo_shows_pmap_with_psum():
  text = demo_output()
  assert "# pmap: one replica per device" in text
  line = next(l for l in text.splitlines() if l.startswith("pmap(lambda x: x / psum"))
  n = int(line.split("arange(")[1].split(".")[0])
  values = eval(line.split(" = ")[1])
  assert len(values) == n and abs(sum(values) - 1.0) < 1e-5
