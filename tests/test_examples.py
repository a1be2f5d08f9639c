"""The examples work: both training scripts learn, and the per-example-gradients notebook runs
top to bottom in a fresh kernel and shows what it promises."""
import importlib.util
import json
import os
import pathlib
import re
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NOTEBOOK = EXAMPLES / "per_example_gradients.ipynb"


def _load_example(name):
  """Import ``examples/<name>.py`` by path (the folder is not a package)."""
  spec = importlib.util.spec_from_file_location(f"_hlox_example_{name}", EXAMPLES / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_mnist_classifier_beats_chance(capsys):
  epochs = 4
  acc = _load_example("mnist_classifier").main(
      ["--train-size", "512", "--test-size", "256", "--hidden", "32", "--epochs", str(epochs),
       "--batch-size", "64"])
  out = capsys.readouterr().out
  # Ten classes: chance is 0.1; a model that learned something is well above it.
  assert 0.4 < acc <= 1.0, out
  assert len(re.findall(r"^epoch \d+: .*test accuracy", out, re.M)) == epochs + 1, out


def test_rnn_scan_loss_goes_down():
  losses = _load_example("rnn_scan").main(
      ["--steps", "80", "--hidden", "16", "--seq-len", "20", "--batch", "16",
       "--print-every", "1000"])
  assert len(losses) == 80 and np.all(np.isfinite(losses))
  assert np.mean(losses[-10:]) < losses[0] / 10, losses


def _kernel_manager(tmp_path):
  """A kernel manager whose ``python3`` kernel is this very interpreter, whatever kernelspecs
  the machine has installed."""
  from jupyter_client.kernelspec import KernelSpecManager
  from jupyter_client.manager import KernelManager
  spec_dir = tmp_path / "kernels" / "python3"
  spec_dir.mkdir(parents=True)
  spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
          "display_name": "Python 3 (test)", "language": "python"}
  (spec_dir / "kernel.json").write_text(json.dumps(spec))
  specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")], ensure_native_kernel=False)
  return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def _texts(cell):
  """Everything a code cell printed or returned, as one string."""
  parts = []
  for out in cell.get("outputs", []):
    if out.get("output_type") == "stream":
      parts.append(out["text"])
    elif "data" in out:
      parts.append(out["data"].get("text/plain", ""))
  return "".join(parts)


def test_per_example_gradients_notebook_runs(tmp_path):
  for name in ("nbformat", "nbclient", "ipykernel", "matplotlib"):
    pytest.importorskip(name, reason=f"running the notebook needs {name}")
  import nbformat
  from nbclient import NotebookClient

  nb = nbformat.read(NOTEBOOK, as_version=4)
  nbformat.validate(nb)
  code = [c for c in nb.cells if c.cell_type == "code"]
  assert code and all(not c.outputs and c.execution_count is None for c in code), (
      "commit the notebook with its outputs stripped")
  # A first cell, added here only, tells which interpreter and which hlox the kernel runs.
  nb.cells.insert(0, nbformat.v4.new_code_cell(
      "import sys, hlox\nprint('PROBE', sys.executable, '|', hlox.__file__)"))

  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
  env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
  km = _kernel_manager(tmp_path)
  client = NotebookClient(nb, km=km, timeout=240, allow_errors=False,
                          resources={"metadata": {"path": str(tmp_path)}})
  try:
    client.execute(env=env)            # raises CellExecutionError naming the failing cell
  finally:
    if km.has_kernel:
      km.shutdown_kernel(now=True)

  cells = [c for c in nb.cells if c.cell_type == "code"]
  errors = [o for c in cells for o in c.outputs if o.output_type == "error"]
  assert not errors, errors
  exe, hlox_file = _texts(cells[0]).split("PROBE", 1)[1].strip().split(" | ")
  assert os.path.realpath(exe) == os.path.realpath(sys.executable)
  assert pathlib.Path(hlox_file).resolve().is_relative_to(ROOT)

  text = "\n".join(_texts(c) for c in cells)
  # The notebook's own check of vmap(grad) against a loop of grad, as it printed it.
  diff = float(re.search(r"max_abs_diff = (\S+)", text).group(1))
  assert 0.0 <= diff < 1e-5, diff
  speed = re.search(r"vmap: ([\d.]+) ms\s+loop: ([\d.]+) ms", text)
  assert speed and float(speed.group(1)) > 0 and float(speed.group(2)) > 0, text[-2000:]
  assert "{ lambda ;" in text and "dot_general" in text          # the jaxpr text

  mimes = [set(o.get("data", {})) for c in cells for o in c.outputs]
  pngs = sum("image/png" in m for m in mimes)
  assert pngs >= 3, mimes          # the histogram, the DP-SGD loss curve, the timing bars
  assert any("image/svg+xml" in m or "text/html" in m for m in mimes), mimes   # viz.graph
