"""Multi-process hlox: hlox.distributed.initialize on jaxlib's coordination service.

The two-process test starts tests/distributed_worker.py twice on 127.0.0.1 with 2 CPU devices
each and always ends both processes. Failure cases run in subprocesses, because a process
can initialize only once and only before its first computation.
"""
import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import hlox
import hlox.distributed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "distributed_worker.py")
LIMIT_S = 60


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _env(**extra):
  env = dict(os.environ, HLOX_NUM_CPU_DEVICES="2", PYTHONUNBUFFERED="1")
  for name in ("HLOX_COORDINATOR_ADDRESS", "HLOX_NUM_PROCESSES", "HLOX_PROCESS_ID",
               "HLOX_LOCAL_DEVICE_IDS", "HLOX_COORDINATOR_BIND_ADDRESS"):
    env.pop(name, None)
  env.update(extra)
  return env


def _run_all(argvs, env, limit=LIMIT_S):
  """Runs the commands side by side; returns [(returncode, stdout, stderr)]; never leaks."""
  procs = []
  try:
    for argv in argvs:
      procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + limit
    results = []
    for p in procs:
      try:
        out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"{p.args} did not finish within {limit} s\nstdout:\n{out}\n"
                    f"stderr:\n{err[-4000:]}")
      results.append((p.returncode, out, err))
    return results
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()


def _run_script(code, limit=LIMIT_S):
  ((rc, out, err),) = _run_all([[sys.executable, "-c", textwrap.dedent(code)]], _env(),
                               limit)
  return rc, out, err


def _result(out):
  lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
  assert len(lines) == 1, out
  return json.loads(lines[0][len("RESULT "):])


def test_two_processes_share_devices_and_psum():
  port = _free_port()
  results = _run_all([[sys.executable, WORKER, str(port), str(i), "2"] for i in range(2)],
                     _env())
  reports = []
  for i, (rc, out, err) in enumerate(results):
    assert rc == 0, f"worker {i} exited with {rc}\nstdout:\n{out}\nstderr:\n{err[-4000:]}"
    assert "SHUTDOWN False" in out, out
    reports.append(_result(out))
  all_devices = reports[0]["devices"]
  assert [p for _, p in all_devices] == [0, 0, 1, 1]
  for i, r in enumerate(reports):
    assert r["is_initialized"] is True
    assert r["process_index"] == i
    assert r["process_count"] == 2
    assert r["device_count"] == 4
    assert r["local_device_count"] == 2
    assert r["devices"] == all_devices  # every process sees the same global list
    mine = [d for d, p in all_devices if p == i]
    assert r["local_devices"] == mine
    assert r["devices_by_process"] == [[d for d, p in all_devices if p == q] for q in (0, 1)]
    assert r["default_device"] == mine[0]
    assert r["psum"] == [6.0, 6.0]  # 0 + 1 + 2 + 3 on each local device
    assert r["inputs"] == [float(all_devices.index([d, i])) for d in mine]
    assert r["positions"] == [int(v) for v in r["inputs"]]  # axis_index over all devices
    assert r["jit"] == 12.0
    assert r["jax_imported"] is False


def test_unreachable_coordinator_times_out():
  port = _free_port()  # closed again: nobody listens there
  rc, out, err = _run_script(f"""
      import time
      import hlox.distributed
      start = time.monotonic()
      try:
        hlox.distributed.initialize("127.0.0.1:{port}", num_processes=2, process_id=1,
                                    initialization_timeout=3)
      except Exception as e:
        print("ELAPSED", time.monotonic() - start)
        print("TYPE", type(e).__name__, isinstance(e, TimeoutError),
              isinstance(e, RuntimeError))
        print("MESSAGE", e)
      print("INITIALIZED", hlox.distributed.is_initialized())
  """, limit=30)
  assert rc == 0, err[-4000:]
  fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
  assert fields["TYPE"] == "DistributedTimeoutError True True"
  assert f"127.0.0.1:{port}" in fields["MESSAGE"]
  assert "initialization_timeout=3" in fields["MESSAGE"]
  assert 2.5 <= float(fields["ELAPSED"]) < 10
  assert fields["INITIALIZED"] == "False"


@pytest.mark.slow  # ~10 s; run with -m slow
def test_missing_peer_raises_instead_of_aborting():
  # Process 0 starts the service but process 1 never comes: jaxlib's connect gives up
  # after the timeout (it aborts the process unless told otherwise).
  port = _free_port()
  rc, out, err = _run_script(f"""
      import time
      import hlox.distributed
      start = time.monotonic()
      try:
        hlox.distributed.initialize("127.0.0.1:{port}", num_processes=2, process_id=0,
                                    initialization_timeout=1)
      except TimeoutError as e:
        print("ELAPSED", time.monotonic() - start)
        print("MESSAGE", e)
      print("INITIALIZED", hlox.distributed.is_initialized())
  """, limit=30)
  assert rc == 0, err[-4000:]
  fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
  assert f"127.0.0.1:{port}" in fields["MESSAGE"]
  assert "2-process" in fields["MESSAGE"]
  assert float(fields["ELAPSED"]) < 20
  assert fields["INITIALIZED"] == "False"


def test_single_process_run_initialize_once_then_shutdown():
  port = _free_port()
  rc, out, err = _run_script(f"""
      import hlox, hlox.distributed, hlox.numpy as jnp
      hlox.distributed.initialize("127.0.0.1:{port}", 1, 0, initialization_timeout=10)
      print("INIT", hlox.distributed.is_initialized())
      try:
        hlox.distributed.initialize("127.0.0.1:{port}", 1, 0)
      except RuntimeError as e:
        print("AGAIN", e)
      print("COUNTS", hlox.process_index(), hlox.process_count(), hlox.device_count(),
            hlox.local_device_count())
      print("VALUE", float(jnp.sum(jnp.arange(4.0))))
      hlox.distributed.shutdown()
      hlox.distributed.shutdown()  # a no-op the second time
      print("AFTER", hlox.distributed.is_initialized())
  """)
  assert rc == 0, err[-4000:]
  fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
  assert fields["INIT"] == "True"
  assert "only be called once" in fields["AGAIN"]
  assert fields["COUNTS"] == "0 1 2 2"
  assert fields["VALUE"] == "6.0"
  assert fields["AFTER"] == "False"


def test_environment_variables_supply_the_arguments():
  port = _free_port()
  code = textwrap.dedent("""
      import hlox, hlox.distributed
      hlox.distributed.initialize(initialization_timeout=10)
      print("COUNTS", hlox.process_index(), hlox.process_count())
  """)
  env = _env(HLOX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", HLOX_NUM_PROCESSES="1",
             HLOX_PROCESS_ID="0")
  ((rc, out, err),) = _run_all([[sys.executable, "-c", code]], env)
  assert rc == 0, err[-4000:]
  assert "COUNTS 0 1" in out


def test_initialize_after_first_computation_is_an_error():
  hlox.devices()  # this test process has made its client
  with pytest.raises(RuntimeError, match="before any computation"):
    hlox.distributed.initialize("127.0.0.1:1", num_processes=2, process_id=0)
  assert not hlox.distributed.is_initialized()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(num_processes=2, process_id=0), ValueError, "coordinator_address"),
    (dict(coordinator_address="127.0.0.1:1", process_id=0), ValueError, "num_processes"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2), ValueError, "process_id"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=2), ValueError,
     "process_id=2, num_processes=2"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=-1), ValueError,
     "range"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=0, process_id=0), ValueError,
     "num_processes must be >= 1"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id="0"), TypeError,
     "process_id must be an int"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2.0, process_id=0), TypeError,
     "num_processes must be an int"),
    (dict(coordinator_address="localhost", num_processes=2, process_id=0), ValueError,
     "host:port"),
    (dict(coordinator_address="127.0.0.1:99999", num_processes=2, process_id=0), ValueError,
     "host:port"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=0,
          initialization_timeout=0), ValueError, "initialization_timeout"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=0,
          heartbeat_timeout_seconds=-5), ValueError, "heartbeat_timeout_seconds"),
    (dict(coordinator_address="127.0.0.1:1", num_processes=2, process_id=0,
          local_device_ids="0,1"), TypeError, "local_device_ids"),
])
def test_bad_arguments(monkeypatch, kwargs, error, match):
  for name in ("HLOX_COORDINATOR_ADDRESS", "HLOX_NUM_PROCESSES", "HLOX_PROCESS_ID",
               "HLOX_LOCAL_DEVICE_IDS"):
    monkeypatch.delenv(name, raising=False)
  with pytest.raises(error, match=match):
    hlox.distributed.initialize(**kwargs)
  assert not hlox.distributed.is_initialized()


def test_bad_environment_variable(monkeypatch):
  monkeypatch.setenv("HLOX_NUM_PROCESSES", "two")
  with pytest.raises(ValueError, match="HLOX_NUM_PROCESSES='two'"):
    hlox.distributed.initialize("127.0.0.1:1", process_id=0)


def test_single_process_queries():
  # Without initialize: one process, which owns every device.
  assert hlox.process_index() == 0
  assert hlox.process_count() == 1
  assert hlox.local_devices() == hlox.devices()
  assert hlox.local_devices(0) == hlox.devices()
  assert hlox.local_device_count() == hlox.device_count()
  with pytest.raises(ValueError, match="process_index 1"):
    hlox.local_devices(1)
  assert not hlox.distributed.is_initialized()
  hlox.distributed.shutdown()  # nothing to shut down: a no-op
