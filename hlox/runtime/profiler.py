"""jaxlib's profiler (TSL's ``ProfilerSession``, ``TraceMe``, the profiler server) and the
client's heap profile, for ``hlox.profiler``.

Imported only by ``hlox.profiler``, which ``import hlox`` loads on first use: loading
``jaxlib._profiler`` is kept off the start-up path. Nothing here imports JAX (checked in
RUNTIME_NOTES): the bindings are jaxlib's own.
"""
from __future__ import annotations

from jaxlib import _profile_data, _profiler

from hlox.runtime import client

ProfileOptions = _profiler.ProfileOptions
TraceMe = _profiler.TraceMe
ProfilerServer = _profiler.ProfilerServer
ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane


def jaxlib_version() -> str:
  from jaxlib import version
  return version.__version__


def start_session(options: ProfileOptions, metadata: dict):
  """A started ``ProfilerSession`` collecting with ``options``; ``metadata`` (str -> str) is
  recorded in the profile. The PJRT client is made first, so that its tracers (one per
  backend) exist when the session asks them to start."""
  backend = client.get_client()
  _profiler.clear_metadata()
  for key, value in metadata.items():
    _profiler.set_metadata(key, value)
  _profiler.set_metadata(f"{backend.platform}_version", backend.platform_version)
  return _profiler.ProfilerSession(options)


def stop_session(session, log_dir: str) -> None:
  """Stops ``session`` and writes ``<log_dir>/plugins/profile/<run>/<host>.xplane.pb`` (and
  ``<host>.trace.json.gz``), the layout TensorBoard's profile plugin reads."""
  try:
    session.stop_and_export(log_dir)
  finally:
    _profiler.clear_metadata()


def start_server(port: int) -> ProfilerServer:
  """A profiler server on ``port`` (TensorBoard's "capture profile" connects to it); it
  stops when the returned object is freed."""
  client.get_client()  # the client's tracers must exist before a capture starts
  return _profiler.start_server(port)


def register_subprocess(pid: int, port: int):
  """Profile the process ``pid``'s profiler server (on ``port``) with this one's."""
  return _profiler.register_subprocess(pid, port)


def heap_profile() -> bytes:
  """The client's live device allocations as an (uncompressed) pprof protocol buffer."""
  return client.get_client().heap_profile()
