"""Multi-process hlox: hlox.distributed.initialize on jaxlib's coordination service.

The two-process test starts tests/distributed_worker.py twice on 127.0.0.1 with 2 CPU devices
each and always ends both processes. Failure cases run in subprocesses, because a process
can initialize only once and only before its first computation.
"""
import ast
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
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


def test_two_processes_of_four_devices_run_one_sharded_program():
  # Each process feeds the 8 rows of x its 4 devices hold; the program is partitioned over
  # all 8 devices and each process sees its own shards of the results.
  port = _free_port()
  results = _run_all([[sys.executable, WORKER, str(port), str(i), "2", "sharded"]
                      for i in range(2)], _env(HLOX_NUM_CPU_DEVICES="4"))
  reports = []
  for i, (rc, out, err) in enumerate(results):
    assert rc == 0, f"worker {i} exited with {rc}\nstdout:\n{out}\nstderr:\n{err[-4000:]}"
    reports.append(_result(out))
  x = np.concatenate([np.arange(24, dtype=np.float32).reshape(8, 3) + 100 * i
                      for i in range(2)])
  w = np.ones(3, np.float32)
  want_grad = 2 * (x @ w) @ x / len(x)
  for i, r in enumerate(reports):
    assert r["global_shape"] == [16, 3] and r["fully_addressable"] is False
    assert [s[1] for s in r["shards"]] == [8 * i + 2 * k for k in range(4)]
    for device, start, block in r["shards"]:
      np.testing.assert_array_equal(block, 2 * x[start:start + 2])
    np.testing.assert_allclose(r["col_sums"], x.sum(0), rtol=1e-6)
    np.testing.assert_allclose(r["grad"], want_grad, rtol=1e-5)
    assert "non-addressable" in r["gather_error"] or "not possible" in r["gather_error"]
    assert r["jax_imported"] is False


def test_timeouts_and_a_lost_service_in_one_process():
  # One subprocess (one start-up) for three cases: (1) nobody listens at the coordinator's
  # address; (2) process 0 starts the service but process 1 never comes (jaxlib alone
  # raises 5 s after its init_timeout there); (3) a joined run loses its coordination
  # service: the fast stand-in for test_killed_process_raises_in_survivor. jaxlib's agent
  # would abort the process with SIGABRT; the main thread gets DistributedRuntimeError.
  closed, port = _free_port(), _free_port()
  rc, out, err = _run_script(f"""
      import threading, time
      import hlox, hlox.distributed, hlox.numpy as jnp

      def timed(**kwargs):
        start = time.monotonic()
        try:
          hlox.distributed.initialize(num_processes=2, initialization_timeout=1, **kwargs)
        except Exception as e:
          return [time.monotonic() - start, type(e).__name__, isinstance(e, TimeoutError),
                  isinstance(e, RuntimeError), str(e)]

      print("UNREACHABLE", repr(timed(coordinator_address="127.0.0.1:{closed}",
                                      process_id=1)))
      print("MISSING", repr(timed(coordinator_address="127.0.0.1:{port}", process_id=0)))
      print("INITIALIZED", hlox.distributed.is_initialized())

      hlox.distributed.initialize("127.0.0.1:{port}", 1, 0, initialization_timeout=10,
                                  heartbeat_timeout_seconds=1, shutdown_timeout_seconds=1)
      x = jnp.arange(4.0)
      float(jnp.sum(x))
      service = hlox.distributed.global_state.service
      stopped = time.monotonic()
      # (on a thread: it waits for this process's client, which stops answering)
      stopper = threading.Thread(target=service.shutdown)
      stopper.start()
      lost = None
      try:
        while time.monotonic() - stopped < 20:
          float(jnp.sum(x))
          time.sleep(0.005)
      except RuntimeError as e:
        lost = [time.monotonic() - stopped, type(e).__name__,
                isinstance(e, hlox.distributed.DistributedRuntimeError), str(e)]
      print("LOST", repr(lost))
      stopper.join()  # a jaxlib call still running at exit can crash the exit
      print("AFTER", float(jnp.sum(x * 2.0)))
      try:
        hlox.distributed.initialize("127.0.0.1:{port}", 1, 0)
      except RuntimeError as e:
        print("AGAIN", type(e).__name__)
      hlox.distributed.shutdown()  # returns at once after the loss
      print("SHUTDOWN", hlox.distributed.is_initialized())
  """, limit=60)
  assert rc == 0, err[-4000:]  # no SIGABRT, and the exit did not hang
  fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
  elapsed, name, is_timeout, is_runtime, message = ast.literal_eval(fields["UNREACHABLE"])
  assert (name, is_timeout, is_runtime) == ("DistributedTimeoutError", True, True)
  assert f"127.0.0.1:{closed}" in message and "initialization_timeout=1" in message
  assert 0.9 <= elapsed < 2  # initialization_timeout + at most 1 s
  elapsed, name, is_timeout, is_runtime, message = ast.literal_eval(fields["MISSING"])
  assert (name, is_timeout) == ("DistributedTimeoutError", True)
  assert f"127.0.0.1:{port}" in message and "2-process" in message
  assert 0.9 <= elapsed < 2
  assert fields["INITIALIZED"] == "False"
  elapsed, name, is_distributed, message = ast.literal_eval(fields["LOST"])
  assert (name, is_distributed) == ("DistributedRuntimeError", True)
  assert "process of the 1-process run is gone" in message
  assert elapsed < 1 + 2  # the service's 1-s shutdown wait, then at once
  assert fields["AFTER"] == "12.0"  # the process's own devices still compute
  assert fields["AGAIN"] == "DistributedRuntimeError"
  assert fields["SHUTDOWN"] == "False"


def _kill_one(victim, mode, delay=0.0):
  """Starts two survive-mode workers (the victim's sleeps), kills ``victim`` ``delay`` s
  after both are ready; returns the kill time, the survivor's return code, its CAUGHT
  report and its output."""
  port = _free_port()
  modes = [mode, mode]
  modes[victim] = "sleep"
  procs = [subprocess.Popen([sys.executable, WORKER, str(port), str(i), "2", "survive",
                             modes[i]],
                            cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True) for i in range(2)]
  survivor = procs[1 - victim]
  try:
    for p in procs:
      line = p.stdout.readline()
      while line and not line.startswith("READY"):
        line = p.stdout.readline()
      assert line, p.stderr.read()[-4000:]
    time.sleep(delay)
    killed_at = time.monotonic()
    procs[victim].kill()
    try:
      out, err = survivor.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
      survivor.kill()
      out, err = survivor.communicate()
      pytest.fail(f"the survivor hung after its peer was killed\nstdout:\n{out}\n"
                  f"stderr:\n{err[-4000:]}")
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
      p.wait()
  lines = [ln for ln in out.splitlines() if ln.startswith("CAUGHT ")]
  assert len(lines) == 1, f"rc={survivor.returncode}\nstdout:\n{out}\nstderr:\n{err[-4000:]}"
  return killed_at, survivor.returncode, json.loads(lines[0][len("CAUGHT "):]), out


def _check_survivor(killed_at, rc, report, out, within):
  assert rc == 0, (rc, out)  # no SIGABRT (-6), and the exit did not hang
  assert report["caught"] == "DistributedRuntimeError", report
  assert report["is_runtime_error"] and report["is_distributed_error"], report
  assert 0 < report["at"] - killed_at < within, report  # time.monotonic() is system-wide
  assert report["local_after"] == 12.0  # the process's own devices still compute
  assert report["collective_after"] == "DistributedRuntimeError"
  assert "SHUTDOWN False" in out  # shutdown after the loss returns at once


@pytest.mark.slow  # ~10 s: two processes start; the fast variant is in the test above
def test_killed_coordinator_raises_in_survivor():
  # Process 0 dies while process 1 computes: jaxlib's agent (and JAX 0.10.2) abort process
  # 1 with SIGABRT; hlox raises DistributedRuntimeError in its main thread, well within the
  # 2-s heartbeat timeout (the agent's error poll ends when the coordinator's socket closes).
  killed_at, rc, report, out = _kill_one(victim=0, mode="local")
  _check_survivor(killed_at, rc, report, out, within=2)
  assert "lost the coordinator (process 0" in report["message"]


@pytest.mark.slow  # ~10 s each
@pytest.mark.parametrize("victim, mode", [(0, "collective"), (0, "sleep"), (1, "local"),
                                          (1, "collective"), (1, "sleep")])
def test_killed_process_raises_in_survivor(victim, mode):
  # A dead coordinator is noticed at once by jaxlib's agent, a dead process 1 at once by
  # process 0's end of its liveness connection (the service would need the 2-s heartbeat
  # timeout); a psum waiting on the dead process is ended too.
  killed_at, rc, report, out = _kill_one(victim, mode)
  _check_survivor(killed_at, rc, report, out, within=1)
  if victim == 1:
    assert "process 1 of the 2-process run died" in report["message"]


@pytest.mark.slow  # ~10 s each
@pytest.mark.parametrize("victim", [0, 1])
def test_process_dying_while_the_other_waits_in_shutdown(victim):
  # The survivor waits in shutdown's barrier when the other process dies: jaxlib reports
  # it either to shutdown itself or on its agent thread (which the guard parks holding a
  # lock shutdown needs); either way shutdown raises DistributedRuntimeError, no hang.
  killed_at, rc, report, out = _kill_one(victim, "shutdown", delay=1.0)
  assert rc == 0, (rc, out)
  assert report["shutdown"].startswith("DistributedRuntimeError: hlox.distributed"), report
  assert report["shutdown_s"] < 1.0 + 2 + 2, report  # the delay, a heartbeat timeout, slack


def test_single_process_run_from_environment_variables_initialize_once_then_shutdown():
  # The environment variables supply initialize's arguments (one start-up for both checks).
  port = _free_port()
  code = textwrap.dedent(f"""
      import hlox, hlox.distributed, hlox.numpy as jnp
      hlox.distributed.initialize(initialization_timeout=10)
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
  env = _env(HLOX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", HLOX_NUM_PROCESSES="1",
             HLOX_PROCESS_ID="0")
  ((rc, out, err),) = _run_all([[sys.executable, "-c", code]], env)
  assert rc == 0, err[-4000:]
  fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
  assert fields["INIT"] == "True"
  assert "only be called once" in fields["AGAIN"]
  assert f"127.0.0.1:{port}" in fields["AGAIN"]  # the address came from the environment
  assert fields["COUNTS"] == "0 1 2 2"
  assert fields["VALUE"] == "6.0"
  assert fields["AFTER"] == "False"


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


def test_terminate_guard_parks_only_a_bad_cast_it_is_told_is_ours():
  # The mechanism that keeps a survivor alive, without jaxlib: a std::bad_cast thrown (with
  # the C++ ABI, from ctypes) on a thread with no handler reaches std::terminate, as on
  # jaxlib's agent thread. The guard parks that thread and reports; a terminate without an
  # exception still aborts the process (as does one while is_ours() is False).
  code = textwrap.dedent("""
      import ctypes, importlib.util, threading
      spec = importlib.util.spec_from_file_location("guard", "hlox/runtime/terminate_guard.py")
      guard = importlib.util.module_from_spec(spec)
      spec.loader.exec_module(guard)  # alone: no hlox, no jaxlib
      reports = []
      print("INSTALLED", guard.install(lambda: True,
                                       lambda: reports.append(threading.current_thread().name)))
      lib = guard._cxx_runtime()
      lib.__cxa_allocate_exception.restype = ctypes.c_void_p
      lib.__cxa_allocate_exception.argtypes = [ctypes.c_size_t]
      lib.__cxa_throw.argtypes = [ctypes.c_void_p] * 3
      word = ctypes.sizeof(ctypes.c_void_p)

      def throw_bad_cast():
        exc = lib.__cxa_allocate_exception(word)
        vtable = ctypes.addressof(ctypes.c_char.in_dll(lib, "_ZTVSt8bad_cast")) + 2 * word
        ctypes.c_void_p.from_address(exc).value = vtable
        lib.__cxa_throw(exc, ctypes.addressof(ctypes.c_char.in_dll(lib, "_ZTISt8bad_cast")),
                        None)

      thread = threading.Thread(target=throw_bad_cast, name="thrower", daemon=True)
      thread.start()
      for _ in range(500):  # the parked thread never ends: wait for its report
        if reports:
          break
        threading.Event().wait(0.01)
      print("PARKED", thread.is_alive(), reports, flush=True)
      lib._ZSt9terminatev()  # std::terminate() with no exception: not ours
      print("NOT REACHED", flush=True)
  """)
  if sys.platform != "linux":
    pytest.skip("the C++ ABI calls here are libstdc++'s")
  p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                     timeout=LIMIT_S)
  assert "INSTALLED True" in p.stdout, p.stderr
  assert "PARKED True ['thrower']" in p.stdout, (p.stdout, p.stderr)
  assert "NOT REACHED" not in p.stdout
  assert p.returncode == -6, (p.returncode, p.stderr)  # SIGABRT, from the C++ runtime's handler
  assert "without an active exception" in p.stderr


class _FakeKeyValueStore:
  """The two key-value calls liveness.Watch makes on jaxlib's client."""

  def __init__(self):
    self.values = {}
    self.cond = threading.Condition()

  def key_value_set(self, key, value):
    with self.cond:
      self.values[key] = value
      self.cond.notify_all()

  def blocking_key_value_get(self, key, timeout_ms):
    with self.cond:
      assert self.cond.wait_for(lambda: key in self.values, timeout_ms / 1000)
      return self.values[key]


def test_liveness_connections_report_a_close_without_bye():
  # Three processes' Watches in one process (no jaxlib): process 2's connection closes
  # without a bye (as when it is killed): processes 0 and 1 hear of it; process 1 leaving
  # with a bye first is no death.
  from hlox.runtime import liveness
  store = _FakeKeyValueStore()
  lost = []
  done = threading.Event()

  def reporter(me):
    def on_lost(k, how):
      lost.append((me, k))
      if len(lost) == 2:
        done.set()
    return on_lost

  watches = [liveness.Watch(i, 3, "127.0.0.1", reporter(i), bind_host="127.0.0.1")
             for i in range(3)]
  for w in watches:
    w.start(store)
  deadline = time.monotonic() + 10
  while len(watches[0].peers) < 2 or any(0 not in w.peers for w in watches[1:]):
    assert time.monotonic() < deadline, "the liveness connections were not made"
    time.sleep(0.01)
  watches[2].peers[0].shutdown(socket.SHUT_RDWR)  # process 2 dies
  assert done.wait(5), lost
  assert sorted(lost) == [(0, 2), (1, 2)]
  watches[1].leave()  # process 1 shuts down: a bye, then its socket closes
  watches[1].peers[0].shutdown(socket.SHUT_RDWR)
  time.sleep(0.2)
  assert sorted(lost) == [(0, 2), (1, 2)]
  watches[0].leave()
