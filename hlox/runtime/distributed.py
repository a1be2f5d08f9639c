"""Multi-process hlox: connect several Python processes into one set of devices.

Every process calls ``initialize`` before its first computation. Process 0 starts jaxlib's
coordination service at ``coordinator_address``; every process connects a distributed
runtime client to it. The PJRT CPU client that hlox then creates is told about that client
(node id, node count) and gets gloo TCP collectives, so ``hlox.devices()`` lists the
devices of every process (each with its ``process_index``) and one SPMD program can run
collectives across processes. ``hlox.local_devices()`` are the ones this process feeds.

When a process of the run dies, every survivor gets a ``DistributedRuntimeError`` (JAX
ends the process instead): raised at once in its main thread, and by every later call that
needs the other processes (multi-device programs, ``hlox.devices()`` before the first
computation). jaxlib would abort the process here; ``terminate_guard`` stops that. How
soon a death is noticed: at once when a process is killed or crashes (jaxlib's agent sees
the coordinator's socket close; ``liveness`` sees any other process's connection to process
0 close; a running collective sees its gloo connection close); a stopped or frozen process
after ``heartbeat_timeout_seconds`` without heartbeats (default 10 s, JAX's is 100 s).

jaxlib is imported only when ``initialize`` runs, so importing this module costs nothing.
"""
from __future__ import annotations

import atexit
import ctypes
import math
import os
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np

from hlox.errors import DistributedRuntimeError
from hlox.runtime import client as _runtime_client
from hlox.runtime import liveness, terminate_guard

__all__ = ["initialize", "shutdown", "is_initialized", "DistributedTimeoutError",
           "DistributedRuntimeError"]

# Heartbeats are sent by jaxlib's own threads, so a long computation or Python code holding
# the GIL does not delay them: only a stopped or frozen process (or host, or network) misses
# them. JAX waits 100 s before calling such a process dead; hlox 10 s, so that survivors of
# a frozen peer (or of a killed one whose liveness connection could not be made) learn of
# it within seconds rather than minutes.
DEFAULT_HEARTBEAT_TIMEOUT = 10


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
    self.heartbeat_timeout = None
    self.failure = None            # the DistributedRuntimeError message, once a process died
    self.failure_delivered = False  # raised in the main thread already (or about to be)
    self.main_thread_id = None
    self.liveness = None  # liveness.Watch: learns of a killed process at once

  def shutdown(self):
    if self.failure is not None:
      # The other processes are gone and a jaxlib thread is parked holding the client's
      # locks: a shutdown would wait forever. The objects stay alive (see _record_failure).
      self.client = self.service = None
      return
    # The client first: its shutdown is a barrier that every process (process 0's
    # service included) must still be there to answer.
    error = None
    watch, self.liveness = self.liveness, None
    if watch is not None:
      watch.leave()
    if self.client is not None:
      _runtime_client.forget_distributed_runtime()
      error = _shutdown_client(self.client)  # may raise the loss of a process
      self.client = None
    service, self.service = self.service, None
    if service is not None:
      service.shutdown()
    if error is not None:
      # jaxlib 0.10.2 only says 'std::bad_cast' here (see terminate_guard).
      detail = "" if "bad_cast" in str(error) else f" ({error})"
      raise DistributedRuntimeError(
          f"hlox.distributed.shutdown: process {self.process_id} could not leave the "
          f"{self.num_processes}-process run coordinated at {self.coordinator_address} "
          f"together with the others: a process died, or did not reach shutdown within "
          f"shutdown_timeout_seconds{detail}") from None


def _shutdown_client(client):
  """``client.shutdown()``; returns its error, or None.

  It runs on a thread: should a process die meanwhile, jaxlib may report that on its agent
  thread, which terminate_guard parks holding a lock that this shutdown then waits for
  forever. The loss raises here instead (asynchronously, or by the check below)."""
  done = threading.Event()
  errors = []

  def run():
    try:
      client.shutdown()
    except Exception as e:  # noqa: BLE001 -- a process died while the others waited
      errors.append(e)
    done.set()

  thread = threading.Thread(target=run, name="hlox-distributed-shutdown", daemon=True)
  thread.start()
  while not done.wait(0.05):
    if global_state.failure is not None:
      _raise_failure()
  return errors[0] if errors else None


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


# --- losing a process ---------------------------------------------------------------------

_failure_lock = threading.Lock()
# Clients whose connect gave up in initialize but may still finish in the background; they
# are never destroyed (their threads could be parked by terminate_guard).
_abandoned = []


class _LostProcessError(DistributedRuntimeError):
  # Raised asynchronously in the main thread, which instantiates the class with no
  # arguments: the message is the recorded failure.
  def __init__(self, *args):
    super().__init__(*(args or (global_state.failure,)))


# Tracebacks and type(e).__name__ show the public class.
_LostProcessError.__name__ = _LostProcessError.__qualname__ = "DistributedRuntimeError"


def _on_coordination_error(*status):
  # jaxlib 0.10.2 cannot convert its status into a Python object, so this body does not run
  # (see terminate_guard); should a later jaxlib call it, it does what the guard does.
  if global_state.client is not None:
    _coordination_failed()


def _coordination_failed():
  """terminate_guard's report: the coordination service said that a process is lost."""
  if global_state.client is None:
    return  # a connect that initialize had given up on: nobody to tell
  address = global_state.coordinator_address
  if global_state.process_id != 0 and not _reachable(address):
    what = f"lost the coordinator (process 0, at {address}): it died or closed the service"
  else:
    what = (f"the coordination service at {address} reports that a process of the "
            f"{global_state.num_processes}-process run is gone (it died, or sent no heartbeat "
            f"for heartbeat_timeout_seconds={global_state.heartbeat_timeout} s)")
  _record_failure(what)


def _process_died(k, how):
  """liveness's report: process ``k`` died (its connection to process 0 closed)."""
  if global_state.client is not None:
    _record_failure(f"process {k} of the {global_state.num_processes}-process run died "
                    f"({how})")


def _reachable(address):
  import socket
  host, port = _split_address(address, "coordinator_address")
  try:
    with socket.create_connection((host, port), timeout=0.5):
      return True
  except OSError:
    return False


def _record_failure(what):
  """Records the first loss of a process (from any thread) and raises it in the main thread.

  jaxlib's objects are never destroyed after this: their destructors would wait for the
  lost processes, or for locks that the parked agent thread holds.
  """
  with _failure_lock:
    if global_state.failure is not None:
      return
    global_state.failure = (
        f"hlox.distributed (process {global_state.process_id}): {what}. The multi-process run "
        "cannot go on: collectives and new multi-device programs fail from now on; this "
        "process's own devices still compute. Restart every process to start again.")
    for obj in (global_state.client, global_state.service, _runtime_client._client):
      if obj is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    _runtime_client._distributed_failure = _raise_failure
    if not global_state.failure_delivered and global_state.main_thread_id is not None:
      global_state.failure_delivered = True
      _deliver_to_main_thread()


_previous_unraisablehook = sys.unraisablehook  # replaced by the one in effect at a loss


def _deliver_to_main_thread():
  # Raised at the main thread's next bytecode, as KeyboardInterrupt is (not while it waits
  # inside a C call, e.g. time.sleep: then when that returns).
  global _previous_unraisablehook
  if sys.unraisablehook is not _redeliver_if_ignored:
    _previous_unraisablehook = sys.unraisablehook
    sys.unraisablehook = _redeliver_if_ignored
  ctypes.pythonapi.PyThreadState_SetAsyncExc(
      ctypes.c_ulong(global_state.main_thread_id), ctypes.py_object(_LostProcessError))


def _redeliver_if_ignored(unraisable):
  """sys.unraisablehook: the asynchronous raise can land in code whose exceptions Python
  ignores (a ``__del__``, a weakref callback run by the garbage collector); raise it again
  so that it reaches the program."""
  if (unraisable.exc_type is _LostProcessError
      and threading.get_ident() == global_state.main_thread_id):
    _deliver_to_main_thread()
    return
  _previous_unraisablehook(unraisable)


def _raise_failure():
  """Raises the recorded failure (in place of a pending asynchronous one, if any)."""
  with _failure_lock:
    if (threading.get_ident() == global_state.main_thread_id
        and global_state.failure_delivered):
      # The asynchronous raise may not have happened yet: cancel it, raise it here instead.
      ctypes.pythonapi.PyThreadState_SetAsyncExc(
          ctypes.c_ulong(global_state.main_thread_id), ctypes.py_object())
  raise DistributedRuntimeError(global_state.failure)


def execution_failed(error):
  """Called with the exception of a failed multi-device program: re-raises it as a
  ``DistributedRuntimeError`` when the run has lost a process (gloo reports a closed
  connection to a peer before the coordination service notices a missing heartbeat)."""
  if global_state.client is None:
    return
  text = str(error)
  if global_state.failure is None and "Gloo" in text and (
      "onnection" in text or "closed" in text or "reset" in text):
    _record_failure(f"a collective lost its connection to another process ({text})")
  if global_state.failure is not None:
    _raise_failure_from(error)


def _raise_failure_from(error):
  try:
    _raise_failure()
  except DistributedRuntimeError as e:
    raise e from error


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               *,
               initialization_timeout: float = 300,
               heartbeat_timeout_seconds: int = DEFAULT_HEARTBEAT_TIMEOUT,
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
    heartbeat_timeout_seconds: after this long without a heartbeat a process counts as dead
      (and every other process gets a ``DistributedRuntimeError``). hlox's default is 10 s,
      JAX's 100 s: heartbeats come from jaxlib's own threads, so only a stopped or frozen
      process misses them; raise it where whole hosts can stall for longer.
    shutdown_timeout_seconds: how long ``shutdown`` waits for the other processes.
    coordinator_bind_address: where process 0's service listens (default: every interface,
      on the port of ``coordinator_address``).

  Raises:
    RuntimeError: when called twice, or after hlox already used a device.
    ValueError, TypeError: bad arguments.
    DistributedTimeoutError: the coordinator or a peer could not be reached in time
      (raised within a fraction of a second of ``initialization_timeout``).
    DistributedRuntimeError: this process already lost a run it had joined.
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
    if global_state.failure is not None:
      raise DistributedRuntimeError(
          f"{global_state.failure} (hlox.distributed.initialize cannot join another run)")
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
    terminate_guard.install(lambda: _clients_made[0] > 0, _coordination_failed)

    service = None
    if process_id == 0:
      try:
        # The service ends the registration for every process (jaxlib's clients would wait
        # init_timeout + 5 s), within a second after the timeout (it checks once a second).
        service = _jax.get_distributed_runtime_service(
            coordinator_bind_address, num_processes, heartbeat_timeout=heartbeat,
            shutdown_timeout=shutdown_timeout,
            cluster_register_timeout=math.ceil(initialization_timeout))
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
      _clients_made[0] += 1
      global_state.process_id = process_id
      global_state.num_processes = num_processes
      global_state.coordinator_address = coordinator_address
      global_state.heartbeat_timeout = heartbeat
      global_state.main_thread_id = threading.main_thread().ident
      error = _connect(client, deadline)
      if error is not None:
        # jaxlib 0.10.2 only says 'std::bad_cast' here (see terminate_guard).
        detail = "" if error is _GAVE_UP or "bad_cast" in str(error) else f" ({error})"
        raise DistributedTimeoutError(
            f"hlox.distributed.initialize: process {process_id} could not join the "
            f"{num_processes}-process run coordinated at {coordinator_address} within "
            f"initialization_timeout={initialization_timeout} s{detail}. Did all "
            f"{num_processes} processes start, with distinct process_ids? jaxlib's log "
            "above may say more.") from None
      global_state.client = client  # from now on a lost process is this run's failure
      try:
        # Re-checks, under the client's lock, that no computation made a client meanwhile.
        _runtime_client.use_distributed_runtime(client, process_id, num_processes)
      except BaseException:
        global_state.client = None
        client.shutdown()
        raise
    except BaseException as e:
      if service is not None:
        if isinstance(e, DistributedTimeoutError):
          # Its shutdown waits for the registrations it still holds (up to a second more):
          # not the caller's business.
          _in_background(service.shutdown, "hlox-distributed-service-shutdown")
        else:
          service.shutdown()
      raise

    global_state.service = service
    if num_processes > 1:
      bind_host = _split_address(coordinator_bind_address, "coordinator_bind_address")[0]
      watch = liveness.Watch(process_id, num_processes, host, _process_died, bind_host)
      try:
        watch.start(client)
        global_state.liveness = watch
      except Exception:  # noqa: BLE001 -- then only the heartbeats notice a dead process
        pass
    global_state.local_device_ids = local_device_ids


_clients_made = [0]
_GAVE_UP = object()
_background = []  # threads still working for an initialize that returned


def _in_background(target, name):
  thread = threading.Thread(target=target, name=name, daemon=True)
  thread.start()
  _background.append(thread)


def _join_background():
  # A jaxlib call still running on a daemon thread when the process exits can crash the
  # exit (SIGSEGV in jaxlib's static destructors); each ends within seconds.
  for thread in list(_background):
    thread.join(timeout=10)
  _background[:] = [t for t in _background if t.is_alive()]


def _connect(client, deadline):
  """``client.connect()``, given up on at ``deadline``: returns None once connected, else
  the error (``_GAVE_UP`` on time-out).

  jaxlib's connect waits up to 5 s past its ``init_timeout``; waiting on a thread keeps
  ``initialization_timeout`` to within a fraction of a second. A connect given up on goes
  on in the background until jaxlib ends it; should it succeed, it disconnects at once.
  """
  done = threading.Event()
  outcome = []
  given_up = []

  def run():
    try:
      client.connect()
      outcome.append(None)
    except Exception as e:  # noqa: BLE001 -- handed to the caller
      outcome.append(e)
    with _failure_lock:
      late = bool(given_up) and outcome[0] is None
      done.set()
    if late:
      try:
        client.shutdown()
      except Exception:  # noqa: BLE001 -- nobody is waiting for this one
        pass

  _in_background(run, "hlox-distributed-connect")
  # A little slack, so that jaxlib's own error (which says more) wins when it is on time.
  done.wait(max(0.0, deadline - time.monotonic()) + 0.25)
  with _failure_lock:
    if not done.is_set():
      given_up.append(True)
      # Never destroyed: its destructor would wait for the connect still going on.
      ctypes.pythonapi.Py_IncRef(ctypes.py_object(client))
      _abandoned.append(client)
      return _GAVE_UP
  return outcome[0]


def is_initialized() -> bool:
  """Whether ``initialize`` connected this process (and ``shutdown`` has not run since)."""
  return global_state.client is not None


def shutdown() -> None:
  """Disconnects from the other processes; does nothing when not initialized.

  Waits (up to ``shutdown_timeout_seconds``) until every process has called it, so that
  process 0's coordination service outlives everyone's use of it. Also runs at exit.

  Raises:
    DistributedRuntimeError: a process died (or did not come) while this one waited. After
      the run already lost a process it returns at once, raising nothing.
  """
  with _lock:
    global_state.shutdown()
    _join_background()


atexit.register(shutdown)
