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
