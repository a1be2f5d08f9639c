"""hlox.profiler (traces TensorBoard and Perfetto open, annotations, the memory profile) and
what compiled programs say about themselves (cost and memory analysis, HLO text)."""
import gzip
import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import profiler

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _runs(log_dir):
  return sorted((pathlib.Path(log_dir) / "plugins" / "profile").iterdir())


def _event_names(xplane_path) -> set:
  data = profiler.ProfileData.from_file(str(xplane_path))
  return {event.name for plane in data.planes for line in plane.lines for event in line.events}


def _matmul(m, k, n):
  a = np.arange(m * k, dtype=np.float32).reshape(m, k) / 7
  b = np.arange(k * n, dtype=np.float32).reshape(k, n) / 5
  return hlox.jit(lambda x, y: x @ y), a, b


# --- traces --------------------------------------------------------------------------------

def test_trace_writes_an_xplane_with_the_annotations(tmp_path):
  f, a, b = _matmul(8, 16, 4)
  f(a, b).block_until_ready()
  with profiler.trace(tmp_path):
    with profiler.TraceAnnotation("hlox_outer_annotation", size=8):
      out = f(a, b).block_until_ready()
    with profiler.StepTraceAnnotation("hlox_train", step_num=7):
      f(a, b).block_until_ready()
  np.testing.assert_allclose(np.asarray(out), a @ b, rtol=1e-6)
  (run,) = _runs(tmp_path)
  (xplane,) = run.glob("*.xplane.pb")
  assert xplane.name == f"{socket.gethostname()}.xplane.pb"
  assert xplane.stat().st_size > 0
  # The xplane holds event names as plain strings; the Chrome trace beside it their args.
  assert b"hlox_outer_annotation" in xplane.read_bytes()
  names = _event_names(xplane)
  assert {"hlox_outer_annotation", "hlox_train"} <= names
  assert any("Execute" in n for n in names), sorted(names)[:20]  # XLA's runtime events
  (chrome,) = run.glob("*.trace.json.gz")
  events = json.loads(gzip.decompress(chrome.read_bytes()))["traceEvents"]
  (ann,) = [e for e in events if e.get("name") == "hlox_outer_annotation"]
  assert ann["args"] == {"size": "8"}
  (step,) = [e for e in events if e.get("name") == "hlox_train"]
  assert step["args"]["step_num"] == "7"


def test_only_one_trace_at_a_time(tmp_path):
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  profiler.start_trace(tmp_path)
  try:
    with pytest.raises(RuntimeError, match="Profile has already been started. Only one "
                                           "profile may be run at a time."):
      profiler.start_trace(tmp_path / "other")
  finally:
    profiler.stop_trace()
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  with pytest.raises(ZeroDivisionError):  # the context manager stops on an error too
    with profiler.trace(tmp_path):
      1 / 0
  profiler.start_trace(tmp_path)  # so this one may start
  profiler.stop_trace()
  # Three traces within about a second: TSL would have named all three runs alike.
  assert len(_runs(tmp_path)) == 3


def test_user_options_and_run_name(tmp_path):
  options = profiler.ProfileOptions()
  options.python_tracer_level = 0
  options.session_id = "my_run"

  def python_function_only_traced_by_python_tracer():
    return 1
  with profiler.trace(tmp_path, profiler_options=options):
    python_function_only_traced_by_python_tracer()
  assert options.session_id == "my_run"
  (run,) = _runs(tmp_path)
  assert run.name == "my_run"
  names = _event_names(next(run.glob("*.xplane.pb")))
  assert not any("python_function_only" in n for n in names)
  default = profiler.ProfileOptions()
  with profiler.trace(tmp_path / "b", profiler_options=default):
    python_function_only_traced_by_python_tracer()
  assert default.session_id == ""  # the run name chosen for it is not left behind
  (run,) = _runs(tmp_path / "b")
  assert any("python_function_only" in n for n in _event_names(next(run.glob("*.xplane.pb"))))


def test_perfetto_trace_and_link(tmp_path, monkeypatch, capsys):
  with profiler.trace(tmp_path / "a", create_perfetto_trace=True):
    with profiler.TraceAnnotation("hlox_perfetto_event"):
      pass
  (run,) = _runs(tmp_path / "a")
  trace = json.loads(gzip.decompress((run / "perfetto_trace.json.gz").read_bytes()))
  assert "metadata" not in trace
  assert any(e.get("name") == "hlox_perfetto_event" for e in trace["traceEvents"])

  with socket.socket() as s:  # a free port, not the real 9001
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  monkeypatch.setattr(profiler, "_PERFETTO_PORT", port)
  profiler.start_trace(tmp_path / "b", create_perfetto_link=True)
  stopper = threading.Thread(target=profiler.stop_trace, daemon=True)  # never blocks exit
  stopper.start()
  url = f"http://127.0.0.1:{port}/perfetto_trace.json.gz"
  deadline = time.monotonic() + 20
  while True:  # the UI's fetch, which lets stop_trace return
    try:
      with urllib.request.urlopen(url, timeout=5) as response:
        served = response.read()
        assert response.headers["Access-Control-Allow-Origin"] == "*"
      break
    except OSError:
      if time.monotonic() > deadline:
        raise
      time.sleep(0.05)
  stopper.join(20)
  assert not stopper.is_alive()
  (run,) = _runs(tmp_path / "b")
  assert served == (run / "perfetto_trace.json.gz").read_bytes()
  assert f"https://ui.perfetto.dev/#!/?url={url}" in capsys.readouterr().out


def test_annotate_function_keeps_result_and_name(tmp_path):
  def scaled_sum(x, scale=1.0):
    """Doc."""
    return jnp.sum(x) * scale

  wrapped = profiler.annotate_function(scaled_sum)
  named = profiler.annotate_function(scaled_sum, name="hlox_named_event", kind="sum")
  assert wrapped.__name__ == "scaled_sum" and wrapped.__doc__ == "Doc."
  assert wrapped.__wrapped__ is scaled_sum
  x = np.arange(5.0, dtype=np.float32)
  with profiler.trace(tmp_path):
    assert float(wrapped(x, scale=2.0)) == 20.0
    assert float(named(x)) == 10.0
  (run,) = _runs(tmp_path)
  names = _event_names(next(run.glob("*.xplane.pb")))
  assert {scaled_sum.__qualname__, "hlox_named_event"} <= names
  # No trace running: annotations cost nothing and change nothing.
  assert float(wrapped(x)) == 10.0
  with profiler.TraceAnnotation("unused") as ann:
    assert isinstance(ann, profiler.TraceAnnotation)


def test_server_and_memory_profile(tmp_path):
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  profiler.start_server(port)
  try:
    with pytest.raises(ValueError, match="Only one profiler server"):
      profiler.start_server(port)
  finally:
    profiler.stop_server()
  with pytest.raises(ValueError, match="No active profiler server"):
    profiler.stop_server()

  live = hlox.device_put(np.ones((1000,), np.float32))
  data = profiler.device_memory_profile()
  raw = gzip.decompress(data)  # a gzipped pprof protocol buffer
  assert len(raw) > 0
  path = tmp_path / "memory.prof"
  profiler.save_device_memory_profile(path)
  assert gzip.decompress(path.read_bytes())[:1] == raw[:1]
  with pytest.raises(RuntimeError, match="Unknown backend"):
    profiler.device_memory_profile("tpu")
  del live


def test_import_hlox_leaves_the_profiler_unloaded():
  # A fresh process: the trace is its first use of a device, and jaxlib's profiler logs
  # INFO lines unless the client (which quiets them) is made before the session.
  code = (
      "import sys, tempfile\n"
      "import hlox\n"
      "assert 'jaxlib._profiler' not in sys.modules, 'loaded at import'\n"
      "assert 'hlox.profiler' not in sys.modules\n"
      "with tempfile.TemporaryDirectory() as d:\n"
      "  with hlox.profiler.trace(d):\n"
      "    hlox.jit(lambda x: x + 1)(1.0)\n"
      "assert 'jaxlib._profiler' in sys.modules\n"
      "assert not [m for m in sys.modules if m == 'jax' or m.startswith('jax.')]\n"
      "print('ok')\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "ok"
  assert "profiler_session.cc" not in out.stderr, out.stderr


# --- compiled-program introspection --------------------------------------------------------

def test_cost_analysis_of_a_matmul():
  m, k, n = 8, 16, 4
  f, a, b = _matmul(m, k, n)
  lowered = f.lower(a, b)
  compiled = lowered.compile()
  for analysis in (compiled.cost_analysis(), lowered.cost_analysis()):
    assert isinstance(analysis, dict)
    assert all(isinstance(v, float) for v in analysis.values())
    assert analysis["flops"] == 2 * m * n * k
    assert analysis["bytes accessed"] == 4 * (m * k + k * n + m * n)
  np.testing.assert_allclose(np.asarray(compiled(a, b)), a @ b, rtol=1e-6)


def test_memory_analysis():
  f, a, b = _matmul(8, 16, 4)
  stats = f.lower(a, b).compile().memory_analysis()
  assert stats.argument_size_in_bytes == a.nbytes + b.nbytes
  assert stats.output_size_in_bytes == 8 * 4 * 4
  assert stats.alias_size_in_bytes == 0
  assert stats.temp_size_in_bytes >= 0 and stats.generated_code_size_in_bytes >= 0
  assert stats.peak_memory_in_bytes >= stats.output_size_in_bytes
  x = np.ones((256,), np.float32)
  donating = hlox.jit(lambda x: x * 2, donate_argnums=0).lower(x).compile().memory_analysis()
  assert donating.alias_size_in_bytes == x.nbytes  # the output reuses the argument


def test_text_views():
  f, a, b = _matmul(8, 16, 4)
  lowered = f.lower(a, b)
  hlo = lowered.as_text("hlo")
  assert hlo.startswith("HloModule") and " dot(" in hlo and "f32[8,16]" in hlo
  assert "fusion" not in hlo  # before XLA's passes
  assert lowered.as_text() == lowered.as_text("stablehlo") == lowered.as_text(None)
  assert "stablehlo.dot_general" in lowered.as_text()
  assert "loc(" in lowered.as_text(debug_info=True) and "loc(" not in lowered.as_text()
  assert lowered.compiler_ir("hlo").as_hlo_text().startswith("HloModule")
  assert "stablehlo.dot_general" in str(lowered.compiler_ir())
  with pytest.raises(ValueError, match="unknown dialect: 'mhlo'"):
    lowered.as_text("mhlo")
  compiled = lowered.compile()
  optimised = compiled.as_text()
  assert optimised.startswith("HloModule") and "is_scheduled=true" in optimised
  assert compiled.runtime_executable().hlo_modules()


def test_modules_are_named_after_the_function_as_in_jax():
  def my_step(x):
    return x * 2.0
  assert hlox.jit(my_step).lower(1.0).as_text().startswith("module @jit_my_step")
  assert hlox.jit(my_step).lower(1.0).as_text("hlo").startswith("HloModule jit_my_step")
  assert hlox.jit(lambda x: x).lower(1.0).as_text().startswith("module @jit__lambda attributes")


def test_introspection_of_a_program_with_pmap():
  n = hlox.local_device_count()
  f = hlox.jit(lambda x: hlox.pmap(lambda y: y * 2.0)(x).sum())
  x = np.ones((n, 3), np.float32)
  lowered = f.lower(x)
  assert lowered.as_text("hlo").startswith("HloModule")
  compiled = lowered.compile()
  assert float(compiled(x)) == 6.0 * n
  assert compiled.as_text().startswith("HloModule")
  assert compiled.cost_analysis()["flops"] > 0
  assert compiled.memory_analysis().output_size_in_bytes == 4


# --- against JAX ---------------------------------------------------------------------------

@pytest.mark.jax_oracle
def test_analyses_match_jax():
  jax = pytest.importorskip("jax")
  m, k, n = 8, 16, 4
  f, a, b = _matmul(m, k, n)
  ours = f.lower(a, b)
  theirs = jax.jit(lambda x, y: x @ y).lower(a, b)
  assert ours.cost_analysis() == theirs.cost_analysis()
  assert ours.compile().cost_analysis() == theirs.compile().cost_analysis()
  mine, jaxs = ours.compile().memory_analysis(), theirs.compile().memory_analysis()
  for field in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                "temp_size_in_bytes", "generated_code_size_in_bytes"):
    assert getattr(mine, field) == getattr(jaxs, field), field
  # Same unoptimised program, up to the names of the module and of its values.
  ops = [line.split("=", 1)[1].split("(")[0] for line in ours.as_text("hlo").splitlines()
         if " = " in line]
  jax_ops = [line.split("=", 1)[1].split("(")[0]
             for line in theirs.as_text("hlo").splitlines() if " = " in line]
  assert ops == jax_ops


@pytest.mark.jax_oracle
def test_profiler_has_jax_profiler_names():
  pytest.importorskip("jax")
  import jax.profiler
  names = {n for n in dir(jax.profiler) if not n.startswith("_")}
  assert names <= set(dir(profiler)), names - set(dir(profiler))
