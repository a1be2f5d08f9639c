"""Multi-process hlox: connect several Python processes into one set of devices.

Every process calls ``initialize`` before its first computation. Process 0 starts jaxlib's
coordination service at ``coordinator_address``; every process connects a distributed
runtime client to it. The PJRT CPU client that hlox then creates is told about that client
(node id, node count) and gets gloo TCP collectives, so ``hlox.devices()`` lists the
devices of every process (each with its ``process_index``) and one SPMD program can run
collectives across processes. ``hlox.local_devices()`` are the ones this process feeds.

jaxlib is imported only when ``initialize`` runs, so importing this module costs nothing.
"""
from __future__ import annotations

import atexit
import math
import os
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np

from hlox.runtime import client as _runtime_client

__all__ = ["initialize", "shutdown", "is_initialized", "DistributedTimeoutError"]


class DistributedTimeoutError(TimeoutError, RuntimeError):
  """A process could not reach the coordinator (or its peers) within the timeout.

  Both a ``TimeoutError`` and a ``RuntimeError``, so either ``except`` clause catches it.
  """


class State:
  """What ``initialize`` set up in this process (one instance: ``global_state``)."""

  def __init__(self):
    self.process_id = 0
    self.num_processes = 1
    self.coordinator_address = None
    self.local_device_ids = None
    self.service = None
    self.client = None
    self.connecting = False

  def shutdown(self):
    # The client first: its shutdown is a barrier that every process (process 0's
    # service included) must still be there to answer.
    client, self.client = self.client, None
    service, self.service = self.service, None
    if client is not None:
      _runtime_client.forget_distributed_runtime()
      client.shutdown()
    if service is not None:
      service.shutdown()


global_state = State()
_lock = threading.Lock()


# --- argument handling --------------------------------------------------------------------

def _env_int(name):
  value = os.environ.get(name)
  if value in (None, ""):
    return None
  try:
    return int(value)
  except ValueError:
    raise ValueError(f"hlox.distributed.initialize: environment variable {name}={value!r} "
                     "is not an integer") from None


def _check_int(name, value):
  # bool is an int subclass, but True as a process id is surely a mistake.
  if isinstance(value, np.integer):
    return int(value)
  if isinstance(value, bool) or not isinstance(value, int):
    raise TypeError(f"hlox.distributed.initialize: {name} must be an int, got "
                    f"{value!r} of type {type(value).__name__}")
  return value


def _check_timeout(name, value):
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise TypeError(f"hlox.distributed.initialize: {name} must be a number of seconds, got "
                    f"{value!r} of type {type(value).__name__}")
  # jaxlib takes whole seconds, and 0 means "wait forever" there, which we never want.
  if not value > 0 or math.isinf(value):
    raise ValueError(f"hlox.distributed.initialize: {name} must be a positive, finite number "
                     f"of seconds, got {value!r}")
  return max(1, math.ceil(value))


def _split_address(address, what):
  """'host:port' or '[v6-host]:port' -> (host, port); ValueError otherwise."""
  if not isinstance(address, str):
    raise TypeError(f"hlox.distributed.initialize: {what} must be a string 'host:port', got "
                    f"{address!r} of type {type(address).__name__}")
  host, sep, port = address.rpartition(":")
  if host.startswith("[") and host.endswith("]"):
    host = host[1:-1]
  if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f"hlox.distributed.initialize: {what} must look like 'host:port' "
                     f"(e.g. '10.0.0.1:1234'), got {address!r}")
  return host, int(port)


def _local_device_ids(value):
  if value is None:
    env = os.environ.get("HLOX_LOCAL_DEVICE_IDS")
    if not env:
      return None
    try:
      return [int(v) for v in env.split(",")]
    except ValueError:
      raise ValueError("hlox.distributed.initialize: HLOX_LOCAL_DEVICE_IDS must be "
                       f"comma-separated integers, got {env!r}") from None
  if isinstance(value, int) and not isinstance(value, bool):
    return [value]
  if isinstance(value, Sequence) and not isinstance(value, str):
    return [_check_int("local_device_ids entries", v) for v in value]
  raise TypeError("hlox.distributed.initialize: local_device_ids must be an int or a "
                  f"sequence of ints, got {value!r}")


# --- connecting ---------------------------------------------------------------------------

def _wait_for_listener(host, port, address, timeout, deadline):
  """Polls the coordinator's TCP port until it accepts a connection or ``deadline`` passes.

  jaxlib's own connect overshoots its ``init_timeout`` by several seconds and reports an
  unreachable coordinator no differently than a missing peer; this check makes that case
  fail on time, with the address in the message.
  """
  import socket  # only needed here; keeps `import hlox.distributed` cheap
  last_error = None
  while True:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
      break
    try:
      with socket.create_connection((host, port), timeout=min(remaining, 1.0)):
        return
    except OSError as e:
      last_error = e
    time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
  raise DistributedTimeoutError(
      f"hlox.distributed.initialize: could not reach the coordinator at {address} within "
      f"initialization_timeout={timeout} s ({last_error}). Is process 0 running and "
      "listening there, and do all processes use the same coordinator_address?")


def _on_coordination_error(*status):
  # jaxlib calls this instead of aborting when the coordination service reports an error.
  # During connect its failure surfaces as an exception of connect() (handled there). Later
  # (a peer died, the coordinator went away) collectives could only hang, so like JAX we
  # end the process. jaxlib 0.10.2 cannot turn its status into a Python object, so this body
  # does not even run there: the failed conversion unwinds out of connect() or, on a
  # background thread, terminates the process.
  if global_state.connecting:
    return
  sys.stderr.write(f"hlox.distributed: fatal error from the coordination service "
                   f"{status}; terminating this process\n")
  sys.stderr.flush()
  os._exit(1)


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               *,
               initialization_timeout: float = 300,
               heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None) -> None:
  """Joins this process to a multi-process hlox run; call it before any computation.

  Args:
    coordinator_address: ``'host:port'`` of process 0, where it starts the coordination
      service; the same in every process. Default: ``HLOX_COORDINATOR_ADDRESS``.
    num_processes: how many processes take part. Default: ``HLOX_NUM_PROCESSES``.
    process_id: this process's index in ``range(num_processes)``. Default:
      ``HLOX_PROCESS_ID``.
    local_device_ids: accepted for JAX compatibility; like JAX's CPU backend, hlox's CPU
      backend ignores it (each process has ``HLOX_NUM_CPU_DEVICES`` devices).
    initialization_timeout: seconds to wait for the coordinator and all processes.
    heartbeat_timeout_seconds: after this long without a heartbeat a process counts as dead.
    shutdown_timeout_seconds: how long ``shutdown`` waits for the other processes.
    coordinator_bind_address: where process 0's service listens (default: every interface,
      on the port of ``coordinator_address``).

  Raises:
    RuntimeError: when called twice, or after hlox already used a device.
    ValueError, TypeError: bad arguments.
    DistributedTimeoutError: the coordinator or a peer could not be reached in time.
  """
  if coordinator_address is None:
    coordinator_address = os.environ.get("HLOX_COORDINATOR_ADDRESS") or None
  if num_processes is None:
    num_processes = _env_int("HLOX_NUM_PROCESSES")
  if process_id is None:
    process_id = _env_int("HLOX_PROCESS_ID")
  if coordinator_address is None:
    raise ValueError("hlox.distributed.initialize: coordinator_address must be given "
                     "(or set HLOX_COORDINATOR_ADDRESS), e.g. '10.0.0.1:1234'")
  if num_processes is None:
    raise ValueError("hlox.distributed.initialize: num_processes must be given (or set "
                     "HLOX_NUM_PROCESSES)")
  if process_id is None:
    raise ValueError("hlox.distributed.initialize: process_id must be given (or set "
                     "HLOX_PROCESS_ID)")
  num_processes = _check_int("num_processes", num_processes)
  process_id = _check_int("process_id", process_id)
  if num_processes < 1:
    raise ValueError("hlox.distributed.initialize: num_processes must be >= 1, got "
                     f"{num_processes}")
  if not 0 <= process_id < num_processes:
    raise ValueError("hlox.distributed.initialize: process_id must be in "
                     f"range(num_processes), got process_id={process_id}, "
                     f"num_processes={num_processes}")
  host, port = _split_address(coordinator_address, "coordinator_address")
  if coordinator_bind_address is None:
    coordinator_bind_address = (os.environ.get("HLOX_COORDINATOR_BIND_ADDRESS")
                                or f"[::]:{port}")
  _split_address(coordinator_bind_address, "coordinator_bind_address")
  local_device_ids = _local_device_ids(local_device_ids)
  _check_timeout("initialization_timeout", initialization_timeout)
  heartbeat = _check_timeout("heartbeat_timeout_seconds", heartbeat_timeout_seconds)
  shutdown_timeout = _check_timeout("shutdown_timeout_seconds", shutdown_timeout_seconds)

  with _lock:
    if global_state.client is not None:
      raise RuntimeError("hlox.distributed.initialize should only be called once "
                         f"(already connected to {global_state.coordinator_address})")
    if _runtime_client.client_created():
      raise RuntimeError(
          "hlox.distributed.initialize must be called before any computation: this process "
          "already created its devices (by running a computation, or by calling "
          "hlox.devices(), hlox.device_put(), ...). Call it first thing in the program.")
    deadline = time.monotonic() + initialization_timeout
    from jaxlib import _jax

    service = None
    if process_id == 0:
      try:
        service = _jax.get_distributed_runtime_service(
            coordinator_bind_address, num_processes, heartbeat_timeout=heartbeat,
            shutdown_timeout=shutdown_timeout)
      except Exception as e:
        raise RuntimeError(f"hlox.distributed.initialize: process 0 could not start the "
                           f"coordination service on {coordinator_bind_address}: {e}") from e
    try:
      if process_id != 0:
        _wait_for_listener(host, port, coordinator_address, initialization_timeout, deadline)
      remaining = max(1, math.ceil(deadline - time.monotonic()))
      client = _jax.get_distributed_runtime_client(
          coordinator_address, process_id, init_timeout=remaining,
          shutdown_timeout=shutdown_timeout, heartbeat_timeout=heartbeat,
          missed_heartbeat_callback=_on_coordination_error, use_compression=True)
      global_state.connecting = True
      try:
        client.connect()
      except Exception as e:
        # jaxlib 0.10.2 only says 'std::bad_cast' here (see _on_coordination_error).
        detail = "" if "bad_cast" in str(e) else f" ({e})"
        raise DistributedTimeoutError(
            f"hlox.distributed.initialize: process {process_id} could not join the "
            f"{num_processes}-process run coordinated at {coordinator_address} within "
            f"initialization_timeout={initialization_timeout} s{detail}. Did all "
            f"{num_processes} processes start, with distinct process_ids? jaxlib's log "
            "above may say more.") from None
      finally:
        global_state.connecting = False
      try:
        # Re-checks, under the client's lock, that no computation made a client meanwhile.
        _runtime_client.use_distributed_runtime(client, process_id, num_processes)
      except BaseException:
        client.shutdown()
        raise
    except BaseException:
      if service is not None:
        service.shutdown()
      raise

    global_state.service = service
    global_state.client = client
    global_state.process_id = process_id
    global_state.num_processes = num_processes
    global_state.coordinator_address = coordinator_address
    global_state.local_device_ids = local_device_ids


def is_initialized() -> bool:
  """Whether ``initialize`` connected this process (and ``shutdown`` has not run since)."""
  return global_state.client is not None


def shutdown() -> None:
  """Disconnects from the other processes; does nothing when not initialized.

  Waits (up to ``shutdown_timeout_seconds``) until every process has called it, so that
  process 0's coordination service outlives everyone's use of it. Also runs at exit.
  """
  with _lock:
    global_state.shutdown()


atexit.register(shutdown)
