"""The README's example runs as written."""
import os
import subprocess
import sys

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def test_readme_example_runs():
  text = open(README).read()
  code = text.split("```python")[1].split("```")[0]
  out = subprocess.run([sys.executable, "-c", code + "\nprint('grads', grads[0].shape, "
                        "per_example.shape)"], capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "grads (4, 3) (2, 4, 3)" in out.stdout


def test_readme_pmap_example_runs():
  text = open(README).read()
  blocks = text.split("```python")
  setup = "import hlox\nimport hlox.numpy as jnp\n"
  code = next(b for b in blocks[1:] if "hlox.pmap" in b).split("```")[0]
  env = dict(os.environ, HLOX_NUM_CPU_DEVICES="4")
  out = subprocess.run([sys.executable, "-c", setup + code + "\nprint('w', new_w.shape, "
                        "float(new_w[0, 0]))"], capture_output=True, text=True, timeout=300,
                       env=env)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "[0.         0.16666667 0.33333334 0.5       ]" in out.stdout
  # gradient of mean((x @ 0 - 1)^2) per weight is -2; one step of 0.1 gives 0.2
  assert "w (4, 3) 0.2" in out.stdout, out.stdout


def test_readme_fastmath_example_runs():
  text = open(README).read()
  code = next(b for b in text.split("```python")[1:]
              if "import hlox.fastmath as fastmath" in b).split("```")[0]
  root = os.path.join(os.path.dirname(__file__), os.pardir)
  env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
  env.pop("HLOX_FASTMATH_BACKEND", None)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
  assert out.returncode == 0, out.stderr[-2000:]
  first, second = out.stdout.strip().splitlines()[:2]
  before, after = (float(v) for v in first.split()[1::2])
  assert after < before, first
  assert "fastmath.grad is not available on the NumPy backend" in second
  assert "use_backend('hlox')" in second


def test_readme_sharding_example_runs():
  text = open(README).read()
  blocks = text.split("```python")
  setup = "import hlox\nimport hlox.numpy as jnp\nfrom hlox import lax\n"
  code = next(b for b in blocks[1:] if "hlox.make_mesh" in b).split("```")[0]
  env = dict(os.environ, HLOX_NUM_CPU_DEVICES="8")
  out = subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True,
                       timeout=300, env=env)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "P(None, 'model')" in out.stdout and "CPU 0,4" in out.stdout, out.stdout
  assert "[32. 32. 32." in out.stdout, out.stdout


def test_readme_lowering_for_another_platform_runs():
  text = open(README).read()
  code = next(b for b in text.split("```python")[1:]
              if "lowering_platforms" in b).split("```")[0]
  setup = "import hlox\nimport hlox.numpy as jnp\n"
  out = subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert "stablehlo.custom_call @cusolver_getrf_ffi" in out.stdout
