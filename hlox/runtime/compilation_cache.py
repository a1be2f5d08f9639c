"""The persistent (on-disk) compilation cache: XLA executables shared between processes.

Off until ``config.compilation_cache_dir`` (``HLOX_COMPILATION_CACHE_DIR``) names a
directory. Then every compile first looks for an entry keyed on what decides the machine
code: the StableHLO text, the serialized compile options (replicas, partitions, device
assignment), the jaxlib version, the platform and its version, the device kinds and
``XLA_FLAGS``. It sits behind the in-memory executable caches of the interpreters, so it is
only asked when this process has not compiled the program yet.

An entry is one file, named by the sha256 (after the module's name, if it has one): a fixed header (magic, format version,
payload length, the payload's sha256, the compile time) and the payload, the executable as
``LoadedExecutable.serialize()`` writes it. Files are written to a temporary name and moved
into place with ``os.replace``, so a reader never sees half an entry. A reader that finds a
bad header, length or checksum, or an executable jaxlib refuses to load, warns, deletes the
file and compiles: a corrupt entry is never run. A directory that cannot be written is one
warning, after which the process carries on without writing there.

Entries that took less than ``persistent_cache_min_compile_time_secs`` to compile, or are
smaller than ``persistent_cache_min_entry_size_bytes``, are not written. With
``compilation_cache_max_size`` >= 0 the least recently used entries (file modification time,
refreshed on every hit) are deleted until the directory fits.

Events (``hlox.monitoring``): ``backend_compile`` for every XLA compile made through here,
``persistent_cache_hit`` / ``persistent_cache_miss`` while the cache is on.
"""
from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
import threading
import time
import warnings

import jaxlib

from hlox import monitoring
from hlox.config import config

__all__ = ["compile_and_load", "cache_key", "is_enabled", "reset", "reset_warnings"]

_MAGIC = b"HLOXXLA\x00"
_FORMAT_VERSION = 1
# magic, format version, payload length, compile seconds, sha256 of the payload
_HEADER = struct.Struct("<8sIQd32s")
_TMP_PREFIX = ".tmp-"

# Directories reported unwritable (warned once, then no longer written to), and
# ("read", directory) for those reported unreadable.
_warned: set = set()
_lock = threading.Lock()

# Host callbacks are baked into the program as pointers into this process: such an
# executable must not be shared (JAX does not cache them either).
_CALLBACK_TARGET = re.compile(r"custom_call\s*@\w*callback|call_target_name\s*=\s*\"\w*callback")
_MODULE_NAME = re.compile(r"module\s+@\"?([\w.-]+)")


def is_enabled() -> bool:
  """Whether compiles consult the on-disk cache now."""
  return bool(config._values["compilation_cache_dir"]) and \
      bool(config._values["enable_compilation_cache"])


def reset_warnings() -> None:
  """Forget which directories were reported unwritable (they are tried again)."""
  with _lock:
    _warned.clear()


# Whether this process ("task") has said, once, if it uses the cache (JAX's adoption
# events, reported at the first compile).
_task_reported = [False]


def _report_task_once() -> None:
  with _lock:
    if _task_reported[0]:
      return
    _task_reported[0] = True
  monitoring.record_event("/jax/compilation_cache/tasks_using_cache" if is_enabled() else
                          "/jax/compilation_cache/task_disabled_cache")


def reset() -> None:
  """Back to the state of a fresh process (JAX's ``reset_cache``): the next compile reports
  again whether the cache is used, and unwritable or unreadable directories are tried
  again. The directory setting itself is kept."""
  with _lock:
    _task_reported[0] = False
  reset_warnings()


def cache_key(client, mlir_text: str, devices, options) -> str:
  """The entry's file name: the module's name and the sha256 of everything that matters."""
  h = hashlib.sha256()

  def add(data):
    data = data if isinstance(data, bytes) else str(data).encode()
    # Length-prefixed, so no two different field sequences hash the same bytes.
    h.update(struct.pack("<Q", len(data)))
    h.update(data)

  add(f"hlox-persistent-cache-{_FORMAT_VERSION}")
  add(mlir_text)
  add(options.SerializeAsString())
  add(jaxlib.__version__)
  add(client.platform)
  add(client.platform_version)
  add(",".join(d.device_kind for d in devices))
  add(os.environ.get("XLA_FLAGS", ""))
  match = _MODULE_NAME.match(mlir_text.lstrip()[:200])
  return f"{match.group(1)[:64]}-{h.hexdigest()}" if match else h.hexdigest()


def compile_and_load(client, mlir_text: str, device_list, options,
                     key_text: str | None = None):
  """``client.compile_and_load``, going through the on-disk cache when it is on; the entry
  is keyed on ``key_text`` when given (the module without source locations)."""
  _report_task_once()
  if not is_enabled() or _CALLBACK_TARGET.search(mlir_text):
    return _compile(client, mlir_text, device_list, options)[0]
  monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
  directory = os.path.expanduser(os.fspath(config._values["compilation_cache_dir"]))
  key = cache_key(client, key_text if key_text is not None else mlir_text,
                  list(device_list), options)
  path = os.path.join(directory, key)
  start = time.monotonic()
  loaded, saved_seconds = _read(client, path, device_list, options)
  if loaded is not None:
    retrieval = time.monotonic() - start
    monitoring.test_event("persistent_cache_hit", key=key)
    monitoring.record_event("/jax/compilation_cache/cache_hits")
    monitoring.record_event_duration_secs("/jax/compilation_cache/compile_time_saved_sec",
                                          saved_seconds - retrieval)
    monitoring.record_event_duration_secs("/jax/compilation_cache/cache_retrieval_time_sec",
                                          retrieval)
    return loaded
  monitoring.test_event("persistent_cache_miss", key=key)
  loaded, seconds = _compile(client, mlir_text, device_list, options)
  min_seconds = float(config._values["persistent_cache_min_compile_time_secs"])
  if seconds >= min_seconds:
    _write(directory, path, loaded, seconds)
  else:
    _explain(f"not writing {key}: it compiled in {seconds:.3f} s, under "
             f"persistent_cache_min_compile_time_secs = {min_seconds}")
  return loaded


def _explain(message):
  if config._values["explain_cache_misses"]:
    monitoring.logger.warning("hlox persistent compilation cache: %s", message)


def backend_compile_and_load(client, mlir_text, device_list, options):
  """The one call into XLA's compiler for a jitted program: ``client.compile_and_load``.

  Looked up on this module at each compile (JAX's name), so a library may wrap it: chex's
  ``restrict_backends`` replaces it to refuse compiling for some platforms
  (``client.platform``)."""
  return client.compile_and_load(mlir_text, device_list, options)


def _compile(client, mlir_text, device_list, options):
  monitoring.test_event("backend_compile")
  start = time.perf_counter()
  loaded = backend_compile_and_load(client, mlir_text, device_list, options)
  return loaded, time.perf_counter() - start


# --- reading -----------------------------------------------------------------------------

def _read(client, path, device_list, options):
  try:
    with open(path, "rb") as f:
      data = f.read()
  except (FileNotFoundError, NotADirectoryError):
    return None, 0.0
  except OSError as e:
    _warn_once(("read", os.path.dirname(path)), f"hlox persistent compilation cache: cannot "
               f"read {path} ({e}); compiling")
    return None, 0.0
  checked = _check_entry(data)
  if checked is None:
    _drop(path, "is corrupt (bad header, length or checksum)")
    return None, 0.0
  payload, seconds = checked
  try:
    loaded = client.deserialize_executable(payload, device_list, options)
  except Exception as e:  # jaxlib raises its own error types for what it cannot load
    _drop(path, f"could not be loaded ({type(e).__name__}: {str(e)[:200]})")
    return None, 0.0
  try:
    os.utime(path)  # recently used: last in line for eviction
  except OSError:
    pass
  return loaded, seconds


def _check_entry(data: bytes):
  """The payload of a well-formed entry and the seconds it took to compile, else None."""
  if len(data) < _HEADER.size:
    return None
  magic, version, length, seconds, digest = _HEADER.unpack_from(data)
  payload = data[_HEADER.size:]
  if magic != _MAGIC or version != _FORMAT_VERSION or length != len(payload):
    return None
  if hashlib.sha256(payload).digest() != digest:
    return None
  return payload, seconds


def _warn_once(what, message):
  with _lock:
    first = what not in _warned
    _warned.add(what)
  if first:
    warnings.warn(message, stacklevel=4)


def _drop(path, why):
  warnings.warn(f"hlox persistent compilation cache: entry {path} {why}; deleted it and "
                "compiling again", stacklevel=4)
  try:
    os.remove(path)
  except OSError:
    pass


# --- writing -----------------------------------------------------------------------------

def _write(directory, path, loaded, seconds):
  if directory in _warned:
    return
  payload = loaded.serialize()
  entry = _HEADER.pack(_MAGIC, _FORMAT_VERSION, len(payload), seconds,
                       hashlib.sha256(payload).digest()) + payload
  min_size = int(config._values["persistent_cache_min_entry_size_bytes"])
  if len(entry) < min_size:
    _explain(f"not writing {path}: {len(entry)} bytes, under "
             f"persistent_cache_min_entry_size_bytes = {min_size}")
    return
  max_size = int(config._values["compilation_cache_max_size"])
  if 0 <= max_size < len(entry):
    # It could never fit: writing it would only evict everything else.
    _explain(f"not writing {path}: {len(entry)} bytes, over compilation_cache_max_size = "
             f"{max_size}")
    return
  tmp = None
  try:
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=_TMP_PREFIX)
    with os.fdopen(fd, "wb") as f:
      f.write(entry)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the entry from other users
    os.replace(tmp, path)
    tmp = None
  except OSError as e:
    _warn_once(directory, f"hlox persistent compilation cache: cannot write to {directory} "
               f"({e}); continuing without writing cache entries there")
    return
  finally:
    if tmp is not None:
      try:
        os.remove(tmp)
      except OSError:
        pass
  # JAX's name for a compile whose executable was written to the cache
  monitoring.record_event("/jax/compilation_cache/cache_misses")
  if max_size >= 0:
    _evict(directory, max_size)


def _evict(directory, max_size):
  """Delete least recently used entries until the directory holds at most ``max_size``."""
  entries = []
  try:
    with os.scandir(directory) as it:
      for e in it:
        if e.name.startswith(_TMP_PREFIX) or not e.is_file(follow_symlinks=False):
          continue
        try:
          st = e.stat(follow_symlinks=False)
        except OSError:
          continue  # deleted meanwhile by another process
        entries.append((st.st_mtime_ns, st.st_size, e.path))
  except OSError:
    return
  total = sum(size for _, size, _ in entries)
  for _, size, entry_path in sorted(entries):
    if total <= max_size:
      break
    try:
      os.remove(entry_path)
    except OSError:
      pass
    total -= size
