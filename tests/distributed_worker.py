"""One process of a multi-process hlox run, started by tests/test_distributed.py.

    python tests/distributed_worker.py <port> <process_id> <num_processes>
    python tests/distributed_worker.py <port> <process_id> <num_processes> survive <mode>

Joins the run coordinated at 127.0.0.1:<port>, then prints one line ``RESULT <json>`` with
what this process sees: process index and count, global and local devices, a psum over
the devices of every process, and a plain jitted computation on a local device.

With ``survive`` (2-s heartbeats) it prints ``READY`` after one psum and then waits for
the test to kill another process: ``<mode>`` ``local`` computes on a local device in a
loop, ``collective`` runs psums in a loop, ``sleep`` sleeps in 0.05-s steps. It prints
``CAUGHT <json>`` with the exception it got and when (``time.monotonic()``, which all
processes share on Linux), then what a local computation and a psum do afterwards.
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hlox  # noqa: E402
import hlox.distributed  # noqa: E402
import hlox.numpy as jnp  # noqa: E402
from hlox.runtime import client as rt  # noqa: E402

def cross_process_psum():
  """A pmap over the devices of every process: each local device contributes its global
  device index; returns this process's psums, each device's own input read back, and the
  global positions (axis_index) of this process's devices."""
  from hlox import lax
  global_devices = hlox.devices()
  local = hlox.local_devices()
  x = np.array([global_devices.index(d) for d in local], np.float32)
  f = hlox.pmap(lambda v: (lax.psum(v, "i"), v, lax.axis_index("i")), axis_name="i")
  sums, inputs, positions = f(x)
  return ([float(v) for v in np.asarray(sums)], [float(v) for v in np.asarray(inputs)],
          [int(v) for v in np.asarray(positions)])


def survive(mode):
  """Waits for another process to die; reports the exception that says so."""
  hlox.distributed.initialize(f"127.0.0.1:{PORT}", NUM, PID, initialization_timeout=30,
                              heartbeat_timeout_seconds=2, shutdown_timeout_seconds=5)
  step = jnp.sum
  x = jnp.arange(4.0)
  cross_process_psum()
  print("READY", flush=True)
  report = {}
  if mode == "shutdown":  # wait in shutdown's barrier for a process that dies
    start = time.monotonic()
    try:
      hlox.distributed.shutdown()
      report["shutdown"] = None
    except Exception as e:  # noqa: BLE001
      report["shutdown"] = type(e).__name__ + ": " + str(e)[:300]
    report["shutdown_s"] = time.monotonic() - start
    print("CAUGHT " + json.dumps(report), flush=True)
    return
  try:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
      if mode == "local":
        float(step(x))
      elif mode == "collective":
        cross_process_psum()
      time.sleep(0.05 if mode == "sleep" else 0.005)
    report["caught"] = None
  except Exception as e:  # noqa: BLE001 -- reported to the test
    report.update(caught=type(e).__name__, at=time.monotonic(), message=str(e),
                  is_runtime_error=isinstance(e, RuntimeError),
                  is_distributed_error=isinstance(e, hlox.distributed.DistributedRuntimeError))
  report["local_after"] = float(step(x * 2.0))
  try:
    cross_process_psum()
    report["collective_after"] = None
  except Exception as e:  # noqa: BLE001
    report["collective_after"] = type(e).__name__
  print("CAUGHT " + json.dumps(report), flush=True)
  hlox.distributed.shutdown()  # returns at once: the run is gone
  print("SHUTDOWN", hlox.distributed.is_initialized(), flush=True)


def sharded():
  """A program over a mesh of every process's devices: each process feeds the rows its
  devices hold; reports the local shards, a replicated reduction and a gradient step."""
  hlox.distributed.initialize(f"127.0.0.1:{PORT}", NUM, PID, initialization_timeout=30,
                              heartbeat_timeout_seconds=10, shutdown_timeout_seconds=30)
  from hlox.sharding import NamedSharding, PartitionSpec as P
  mesh = hlox.make_mesh((hlox.device_count(),), ("data",))
  rows = hlox.local_device_count() * 2
  local = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + 100 * PID
  x = hlox.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local)
  w = np.ones((3,), np.float32)
  loss = lambda w, x: jnp.mean((x @ w) ** 2)
  grad = hlox.jit(hlox.grad(loss))(w, x)
  doubled = hlox.jit(lambda v: v * 2)(x)
  try:
    np.asarray(doubled)
    gathered = "no error"
  except RuntimeError as e:
    gathered = str(e)[:60]
  report = {
      "global_shape": list(x.shape),
      "fully_addressable": x.is_fully_addressable,
      "shards": [[s.device.id, s.index[0].start, np.asarray(s.data).tolist()]
                 for s in doubled.addressable_shards],
      "col_sums": np.asarray(hlox.jit(lambda v: v.sum(0))(x)).tolist(),
      "grad": np.asarray(grad).tolist(),
      "gather_error": gathered,
      "jax_imported": "jax" in sys.modules,
  }
  print("RESULT " + json.dumps(report), flush=True)
  hlox.distributed.shutdown()


def main():
  port, process_id, num_processes = (int(a) for a in sys.argv[1:4])
  hlox.distributed.initialize(f"127.0.0.1:{port}", num_processes, process_id,
                              initialization_timeout=30, heartbeat_timeout_seconds=10,
                              shutdown_timeout_seconds=30)
  report = {
      "is_initialized": hlox.distributed.is_initialized(),
      "process_index": hlox.process_index(),
      "process_count": hlox.process_count(),
      "device_count": hlox.device_count(),
      "local_device_count": hlox.local_device_count(),
      "devices": [[d.id, d.process_index] for d in hlox.devices()],
      "local_devices": [d.id for d in hlox.local_devices()],
      "devices_by_process": [[d.id for d in hlox.local_devices(p)]
                             for p in range(hlox.process_count())],
      "default_device": rt.default_device().id,
      # Single-device work still runs on this process's own devices.
      "jit": float(hlox.jit(lambda x: jnp.sum(x * 2.0))(jnp.arange(4.0))),
  }
  report["psum"], report["inputs"], report["positions"] = cross_process_psum()
  report["jax_imported"] = "jax" in sys.modules
  print("RESULT " + json.dumps(report), flush=True)
  hlox.distributed.shutdown()
  print("SHUTDOWN", hlox.distributed.is_initialized(), flush=True)


if __name__ == "__main__":
  PORT, PID, NUM = (int(a) for a in sys.argv[1:4])
  if sys.argv[4:5] == ["survive"]:
    survive(sys.argv[5])
  elif sys.argv[4:5] == ["sharded"]:
    sharded()
  else:
    main()
