"""``hlox.profiler``: traces TensorBoard and Perfetto open, as JAX's ``jax.profiler``.

    with hlox.profiler.trace("/tmp/tb"):
      with hlox.profiler.TraceAnnotation("step"):
        f(x).block_until_ready()

writes ``/tmp/tb/plugins/profile/<run>/<host>.xplane.pb`` (and ``<host>.trace.json.gz``):
the host's Python calls, the annotations and XLA's runtime events, collected by jaxlib's
profiler (TSL's ``ProfilerSession``). ``import hlox`` loads this module on first use only,
so jaxlib's profiler stays off the start-up path.
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import json
import logging
import os
import pathlib
import socketserver
import threading
import time
from typing import Callable

from hlox.runtime import profiler as _rt
from hlox.runtime.client import _check_backend

__all__ = ["ProfileData", "ProfileEvent", "ProfileOptions", "ProfilePlane",
           "StepTraceAnnotation", "TraceAnnotation", "annotate_function",
           "device_memory_profile", "register_subprocess", "save_device_memory_profile",
           "start_server", "start_trace", "stop_server", "stop_trace", "trace"]

logger = logging.getLogger(__name__)

ProfileData = _rt.ProfileData
ProfileEvent = _rt.ProfileEvent
ProfilePlane = _rt.ProfilePlane


class ProfileOptions(_rt.ProfileOptions):
  """What the profiler collects: ``host_tracer_level`` (0-3, default 2),
  ``python_tracer_level`` (0 off, 1 every Python call, default 1), ``enable_hlo_proto``
  (the compiled programs' HLO, default True), ``duration_ms``, ``session_id`` (the run
  directory's name), ..."""


# --- traces --------------------------------------------------------------------------------

class _ProfileState:
  """The one trace this process may be taking."""

  def __init__(self):
    self.lock = threading.Lock()
    self.reset()

  def reset(self):
    self.session = None
    self.log_dir = None
    self.run_dir = None
    self.create_perfetto_link = False
    self.create_perfetto_trace = False


_state = _ProfileState()


def _run_name(log_dir: str) -> str:
  """The run directory's name: the time, as TSL names it, made unique. TSL's own name has
  one-second resolution, so two traces ending in the same second would share (and the second
  overwrite) a directory."""
  base = time.strftime("%Y_%m_%d_%H_%M_%S")
  root = pathlib.Path(log_dir) / "plugins" / "profile"
  name, n = base, 0
  while (root / name).exists():
    n += 1
    name = f"{base}_{n}"
  return name


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
  """Start collecting a profile (host Python calls, ``TraceAnnotation``s, XLA's runtime
  events), which ``stop_trace`` writes under ``log_dir`` for TensorBoard.

  Only one trace may run at a time: a second ``start_trace`` raises ``RuntimeError``.

  Args:
    log_dir: the directory (usually TensorBoard's log directory); the profile goes to
      ``log_dir/plugins/profile/<run>/<host>.xplane.pb``.
    create_perfetto_link: also write the Perfetto trace (below), then print a
      https://ui.perfetto.dev link to it and serve it on 127.0.0.1:9001; ``stop_trace``
      blocks until the Perfetto UI has fetched it.
    create_perfetto_trace: also write ``perfetto_trace.json.gz`` beside the profile, a file
      the Perfetto UI opens.
    profiler_options: a ``ProfileOptions`` (default: ``ProfileOptions()``).
  """
  with _state.lock:
    if _state.session is not None:
      raise RuntimeError("Profile has already been started. "
                         "Only one profile may be run at a time.")
    log_dir = os.fspath(log_dir)
    options = ProfileOptions() if profiler_options is None else profiler_options
    # The session reads its options when made: the user's object gets its own name back.
    own_name = options.session_id
    run = own_name or _run_name(log_dir)
    options.session_id = run
    try:
      _state.session = _rt.start_session(options, {"jaxlib_version": _rt.jaxlib_version()})
    finally:
      options.session_id = own_name
    _state.log_dir = log_dir
    _state.run_dir = pathlib.Path(log_dir) / "plugins" / "profile" / run
    _state.create_perfetto_link = create_perfetto_link
    _state.create_perfetto_trace = create_perfetto_trace or create_perfetto_link


def stop_trace() -> None:
  """Stop the trace ``start_trace`` began and write it to its ``log_dir``; ``RuntimeError``
  if no trace is running."""
  with _state.lock:
    if _state.session is None:
      raise RuntimeError("No profile started")
    try:
      _rt.stop_session(_state.session, _state.log_dir)
      if _state.create_perfetto_trace:
        path = _write_perfetto_trace(_state.run_dir)
        if _state.create_perfetto_link:
          _serve_perfetto_trace(path)
    finally:
      _state.reset()


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None):
  """``start_trace`` on entry, ``stop_trace`` on exit (also when the body raises)."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


# --- Perfetto ------------------------------------------------------------------------------

_PERFETTO_PORT = 9001  # where ui.perfetto.dev looks for a locally served trace


def _write_perfetto_trace(run_dir: pathlib.Path) -> pathlib.Path:
  """``perfetto_trace.json.gz``: the run's Chrome-format trace without its ``metadata``
  entry, which the Perfetto UI rejects."""
  found = sorted(run_dir.glob("*.trace.json.gz"))
  if len(found) != 1:
    raise ValueError(f"Invalid trace folder: {run_dir} (expected one *.trace.json.gz, found "
                     f"{[p.name for p in found]})")
  with gzip.open(found[0], "rb") as f:
    events = json.load(f)
  events.pop("metadata", None)
  out = run_dir / "perfetto_trace.json.gz"
  with gzip.open(out, "wb") as f:
    f.write(json.dumps(events).encode("utf-8"))
  return out


class _PerfettoHandler(http.server.SimpleHTTPRequestHandler):
  """Serves the trace file to ui.perfetto.dev (another origin, hence the CORS header)."""

  def end_headers(self):
    self.send_header("Access-Control-Allow-Origin", "*")
    super().end_headers()

  def do_GET(self):
    self.server.requested = self.path
    super().do_GET()

  def do_POST(self):
    self.send_error(404, "File not found")

  def log_message(self, format, *args):  # noqa: A002 (the base class's name)
    logger.debug("perfetto server: " + format, *args)


def _serve_perfetto_trace(path: pathlib.Path) -> None:
  """Print a Perfetto UI link to ``path`` and serve the file until the UI has fetched it."""
  handler = functools.partial(_PerfettoHandler, directory=str(path.parent))

  class Server(socketserver.TCPServer):
    allow_reuse_address = True

  with Server(("127.0.0.1", _PERFETTO_PORT), handler) as server:
    server.requested = None
    url = f"http://127.0.0.1:{_PERFETTO_PORT}/{path.name}"
    print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url={url}")
    while server.requested != "/" + path.name:
      server.handle_request()


# --- annotations ---------------------------------------------------------------------------

class TraceAnnotation(_rt.TraceMe):
  """A context manager that marks its body as one event named ``name`` on the profile's
  timeline (keyword arguments become the event's arguments). Costs almost nothing while no
  trace is being taken.

      with hlox.profiler.TraceAnnotation("update", step=3):
        ...
  """


class StepTraceAnnotation(TraceAnnotation):
  """A ``TraceAnnotation`` that marks one step of a loop (``step_num=`` gives its number),
  which TensorBoard's per-step analysis groups events by.

      for step in range(n):
        with hlox.profiler.StepTraceAnnotation("train", step_num=step):
          train_step()
  """

  def __init__(self, name: str, **kwargs):
    super().__init__(name, _r=1, **kwargs)  # TSL's mark of a step ("root") event


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
  """``func`` with every call wrapped in ``TraceAnnotation(name or func.__qualname__,
  **decorator_kwargs)``; use ``functools.partial(annotate_function, name=...)`` as a
  decorator with arguments."""
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


# --- the profiler server -------------------------------------------------------------------

_server = None


def start_server(port: int):
  """Start a profiler server on ``port``, from which TensorBoard's "capture profile" (or
  another process's profiler) takes traces on demand. One server at a time."""
  global _server
  if _server is not None:
    raise ValueError("Only one profiler server can be active at a time.")
  _server = _rt.start_server(port)
  return _server


def stop_server() -> None:
  """Stop the server ``start_server`` started."""
  global _server
  if _server is None:
    raise ValueError("No active profiler server.")
  _server = None  # the server stops when its last reference goes


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
  """Include the profiler server of process ``pid`` (on ``port``) in this process's
  profiles; returns a function that undoes it."""
  return _rt.register_subprocess(pid, port)


# --- device memory -------------------------------------------------------------------------

def device_memory_profile(backend: str | None = None) -> bytes:
  """A snapshot of the live device buffers and executables, with where each was allocated,
  as a gzipped pprof protocol buffer (``pprof`` reads it)."""
  _check_backend(backend)
  return gzip.compress(_rt.heap_profile())


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Write ``device_memory_profile(backend)`` to ``filename``."""
  profile = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(profile)
