"""The PJRT client, devices, shardings, host<->device transfer and executables.

This is the only module (with the MLIR use in ``interpreters/xla.py``) that calls jaxlib.
Results come back through per-output result handlers (``consume_with_handlers``), because
``disassemble_into_single_device_arrays`` makes jaxlib import JAX (see RUNTIME_NOTES).
"""
from __future__ import annotations

import gc
import re
import threading

import numpy as np

from hlox.config import config
from hlox.core import dtypes
from hlox.core.avals import abstract_token
from hlox.runtime import callbacks, compilation_cache, transfer_guard

_client = None  # the default platform's client (the hot paths read it directly)
_clients: dict = {}  # platform ("cpu", "gpu", "tpu") -> client, the default first
_lowering_platforms: dict = {}  # platform -> the name lowering rules use ("cpu", "cuda")
_client_lock = threading.Lock()
_default_device = None
# (distributed runtime client, node id, node count) once hlox.distributed.initialize ran.
_distributed = None
# Set by hlox.distributed once the run lost a process: raises DistributedRuntimeError.
_distributed_failure = None


def _xc():
  from jaxlib import xla_client
  return xla_client


def approx_top_k_output_size(input_size: int, rank: int, k: int, recall_target: float,
                             aggregate_to_topk: bool, input_size_override: int) -> int:
  """The size of ``approx_top_k``'s reduced dimension (XLA's rule, as jaxlib computes it):
  ``k``, or with ``aggregate_to_topk=False`` the partial reduction's output size."""
  from jaxlib import _jax
  return _jax.approx_top_k_reduction_output_size(input_size, rank, k, recall_target,
                                                 aggregate_to_topk, input_size_override)[0]


# hlox's log-level names (as JAX's ``jax_logging_level``) and the C++ (absl) minimum levels.
_CPP_LOG_LEVELS = {"DEBUG": 0, "INFO": 0, "WARNING": 1, "WARN": 1, "ERROR": 2, "CRITICAL": 3,
                   "FATAL": 3}


def _set_cpp_log_level() -> None:
  """Quiet jaxlib's C++ INFO lines (one per device when a client starts) unless asked for:
  ``HLOX_LOG_LEVEL`` (e.g. INFO) or the ``logging_level`` option sets the level; a
  ``TF_CPP_MIN_LOG_LEVEL`` the user set is read by the C++ side itself and left alone."""
  import os
  level = os.environ.get("HLOX_LOG_LEVEL")
  if level is None and config.logging_level not in (None, "NOTSET"):
    level = config.logging_level
  if level is None and "TF_CPP_MIN_LOG_LEVEL" in os.environ:
    return
  level = (level or "WARNING").upper()
  if level not in _CPP_LOG_LEVELS:
    raise ValueError(f"HLOX_LOG_LEVEL={level!r}: expected one of {sorted(_CPP_LOG_LEVELS)}")
  from jaxlib import utils
  utils.absl_set_min_log_level(_CPP_LOG_LEVELS[level])


def _logging_level_to_cpp(name, value) -> None:
  """``logging_level`` sets the C++ side's minimum level too (as JAX's does); None and
  NOTSET leave it."""
  if name == "logging_level" and value not in (None, "NOTSET"):
    from jaxlib import utils
    utils.absl_set_min_log_level(_CPP_LOG_LEVELS[value])


config.add_watcher(_logging_level_to_cpp)
_logging_level_to_cpp("logging_level", config.logging_level)  # HLOX_/JAX_LOGGING_LEVEL


def get_client(backend: str | None = None):
  """The PJRT client of ``backend`` ("cpu", "gpu", "tpu"; default: the default platform).

  Clients are made at first device use: the CPU's, and one per installed PJRT plugin
  (``runtime/plugins.py``) that ``platforms`` allows; the default platform is the first of
  ``platforms`` that came up, else a GPU or TPU when there is one, as in JAX. After
  ``hlox.distributed.initialize`` the CPU client is a multi-process client: its devices are
  those of every process, and collectives between processes go over gloo TCP.
  """
  if _client is None:
    with _client_lock:
      if _client is None:
        _make_clients()
  if backend is None:
    return _client
  return client_of(backend)


def _make_clients() -> None:
  global _client, _default_device
  requested = _requested_platforms()
  _set_cpp_log_level()
  clients, lowering = {}, {}
  for spec in _plugins().discover():
    platform = _plugins().PLATFORM_OF_PLUGIN.get(spec.name, spec.name)
    explicit = bool(requested) and (spec.name in requested or platform in requested)
    if requested and not explicit:
      continue
    client = _plugin_client(spec, explicit)
    if client is not None:
      clients[platform] = client
      lowering[platform] = spec.name
  if not requested or any(p in _CPU_NAMES for p in requested):
    clients["cpu"] = _make_cpu_client()
    lowering["cpu"] = "cpu"
  if not clients:  # what was asked for is not here; the CPU always is
    _check_platforms(available=("cpu",))
  order = [_canonical(p) for p in requested] + ["gpu", "tpu", "cpu"]
  default = min(clients, key=lambda p: order.index(p) if p in order else len(order))
  _clients.clear()
  _clients.update(sorted(clients.items(), key=lambda kv: kv[0] != default))
  _lowering_platforms.update(lowering)
  _default_device = clients[default].local_devices()[0]
  _client = clients[default]
  _release_jaxlib_garbage_on_collection()


_gc_hooked = False


def _release_jaxlib_garbage_on_collection() -> None:
  """jaxlib releases the Python objects its buffers held (a NumPy array being copied to a
  device) only when it is next entered; a hook on every garbage collection lets it do so
  then, so that a host array is freed with the last Array made from it (as JAX does)."""
  global _gc_hooked
  if _gc_hooked:
    return
  from jaxlib import _jax
  collect = _jax.collect_garbage  # bound now: nothing is imported during a collection

  def release_jaxlib_garbage(phase, info):
    collect()

  gc.callbacks.append(release_jaxlib_garbage)
  _gc_hooked = True


def _plugins():
  from hlox.runtime import plugins
  return plugins


def _plugin_client(spec, explicit: bool):
  """The client of plugin ``spec``, or None (with one warning) when it cannot be used; a
  platform named in ``platforms`` that fails is an error, as in JAX."""
  import warnings
  import jaxlib
  mismatch = _plugins().version_mismatch(spec, jaxlib.__version__)
  if mismatch is not None:
    warnings.warn(f"hlox: {mismatch}", RuntimeWarning, stacklevel=4)
    return None
  try:
    return _plugins().make_client(spec)
  except Exception as err:  # jaxlib's errors: a missing library, driver or device
    if explicit:
      raise RuntimeError(f"Unable to initialize backend {spec.name!r}: {err} (set "
                         "HLOX_PLATFORMS=cpu to use the CPU instead)") from err
    reason = str(err).rstrip(". ")
    warnings.warn(f"hlox: unable to initialize backend {spec.name!r} ({spec.library}): "
                  f"{reason}. Falling back to cpu (set HLOX_PLATFORMS=cpu to skip this backend).",
                  RuntimeWarning, stacklevel=4)
    return None


def _make_cpu_client():
  n = int(config.num_cpu_devices)
  if n == 0 or n < -1:
    raise ValueError(f"num_cpu_devices must be >= 1 (or -1 for XLA's default), got {n}")
  # None lets XLA decide: one device, or what XLA_FLAGS' device count asks for.
  n = None if n == -1 else n
  if _distributed is None:
    return _xc().make_cpu_client(num_devices=n)
  if _distributed_failure is not None:  # its key-value store would block for good
    _distributed_failure()
  return _make_distributed_client(n, *_distributed)


# Names ``platforms`` and ``backend=`` may give for each platform.
_CPU_NAMES = ("cpu", "host")
_PLATFORM_ALIASES = {"host": "cpu", "cuda": "gpu", "rocm": "gpu"}


def _canonical(name: str) -> str:
  return _PLATFORM_ALIASES.get(name, name)


def _requested_platforms() -> list:
  wanted = config.platforms or config.platform_name
  if not wanted:
    return []
  return [p.strip().lower() for p in wanted.split(",") if p.strip()]


def _check_platforms(available=("cpu",)) -> None:
  """As JAX, a ``platforms`` list (or the older ``platform_name``) naming nothing that is
  available fails at first device use, naming what is."""
  names = _requested_platforms()
  if not names:
    return
  if not any(_canonical(n) in available for n in names):
    listed = ", ".join(repr(p) for p in available)
    raise RuntimeError(f"Unable to initialize backend {names[0]!r}: no such platform is "
                       f"installed or usable (platforms requested: {','.join(names)!r}; "
                       f"available: {listed}). Set HLOX_PLATFORMS=cpu (or JAX_PLATFORMS=cpu)"
                       " to use the CPU.")


def client_of(backend):
  """The client of platform ``backend`` ("cpu", "gpu", "cuda", "tpu"); a RuntimeError names
  the platforms present when there is none (JAX's text)."""
  get_client()
  client = _clients.get(_canonical(backend.lower())) if isinstance(backend, str) else None
  if client is None:
    raise RuntimeError(f"Unknown backend: {backend!r} requested, but no platforms that are "
                       f"instances of {backend} are present. Platforms present are: "
                       f"{','.join(_clients)}")
  return client


def clients() -> dict:
  """The clients made, by platform, the default first."""
  get_client()
  return dict(_clients)


def lowering_platform(device) -> str:
  """The platform name lowering rules are registered under for ``device`` ("cpu", "cuda")."""
  platform = _canonical(device.platform)
  return _lowering_platforms.get(platform, platform)


def _make_distributed_client(num_devices, dist_client, node_id, num_nodes):
  from jaxlib import _jax
  collectives = _jax.make_gloo_tcp_collectives(distributed_client=dist_client)
  return _xc().make_cpu_client(distributed_client=dist_client, node_id=node_id,
                               num_nodes=num_nodes, collectives=collectives,
                               num_devices=num_devices)


def client_created() -> bool:
  """Whether this process already made its PJRT client (any device use does)."""
  return _client is not None


def use_distributed_runtime(dist_client, node_id: int, num_nodes: int) -> None:
  """Makes the (not yet created) PJRT client span the processes of ``dist_client``."""
  global _distributed
  with _client_lock:
    if _client is not None:
      raise RuntimeError("hlox.distributed.initialize must be called before any computation")
    _distributed = (dist_client, node_id, num_nodes)


def forget_distributed_runtime() -> None:
  """Undoes ``use_distributed_runtime`` if no client was made with it yet."""
  global _distributed
  with _client_lock:
    if _client is None:
      _distributed = None


def _check_device_count_change(name, value):
  cpu = _clients.get("cpu")
  if name == "num_cpu_devices" and cpu is not None and int(value) != len(cpu.local_devices()):
    # JAX's words (its option's name included), so that code matching JAX's message works.
    raise RuntimeError(
        "jax_num_cpu_devices config should be updated before backends are initialized, i.e. "
        "before hlox first uses a device: set num_cpu_devices (or jax_num_cpu_devices) right "
        "after importing hlox, or HLOX_NUM_CPU_DEVICES before starting Python")


config.add_watcher(_check_device_count_change)


def _check_backend(backend):
  """Raise JAX's "Unknown backend" RuntimeError unless ``backend`` is None or present."""
  if backend is not None:
    client_of(backend)


def devices(backend: str | None = None) -> list:
  """All devices of a platform, in every process of a multi-process run.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    A list of jaxlib ``Device`` objects, ordered by id.

  Examples:
    >>> len(hlox.devices()) == hlox.device_count()
    True
  """
  return list(get_client(backend).devices())


def local_devices(process_index: int | None = None, backend: str | None = None) -> list:
  """The devices attached to one process (by default this one).

  Args:
    process_index: optional index of the process whose devices to list (default: this
      process); an index outside ``range(process_count())`` raises ValueError.
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    A list of jaxlib ``Device`` objects.

  Examples:
    >>> hlox.local_devices()[0] in hlox.devices()
    True
  """
  client = get_client(backend)
  if process_index is None:
    return list(client.local_devices())
  count = process_count(backend)
  if not 0 <= process_index < count:
    raise ValueError(f"local_devices: unknown process_index {process_index}; there are "
                     f"{count} processes")
  return [d for d in client.devices() if d.process_index == process_index]


def device_count(backend: str | None = None) -> int:
  """How many devices a platform has, in all processes together.

  On the CPU the count is 1 unless ``HLOX_NUM_CPU_DEVICES`` asks for more before the first
  device use.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    An int.

  Examples:
    >>> hlox.device_count() >= 1
    True
  """
  return get_client(backend).device_count()


def local_device_count(backend: str | None = None) -> int:
  """How many devices this process drives.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    An int (equal to ``device_count()`` in a single-process run).

  Examples:
    >>> hlox.local_device_count() == len(hlox.local_devices())
    True
  """
  return get_client(backend).local_device_count()


def default_backend() -> str:
  """The name of the default platform: ``"gpu"`` when a GPU came up, else ``"tpu"`` or
  ``"cpu"``.

  Returns:
    A str.

  Examples:
    >>> hlox.default_backend() in ("cpu", "gpu", "tpu")
    True
  """
  return _canonical(get_client().platform)


def process_index(backend: str | None = None) -> int:
  """This process's index in a multi-process run (0 when there is one process).

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    An int in ``range(process_count())``.

  Examples:
    >>> hlox.process_index()
    0
  """
  return get_client(backend).process_index()


def process_count(backend: str | None = None) -> int:
  """How many processes take part in the run.

  1 unless ``hlox.distributed.initialize`` set up more.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    An int.

  Examples:
    >>> hlox.process_count()
    1
  """
  return max((d.process_index for d in get_client(backend).devices()), default=0) + 1


def _renamed(old: str, new: str) -> None:
  import warnings
  warnings.warn(f"hlox.{old} has been renamed to hlox.{new}. This alias will eventually be "
                "removed; please update your code.", UserWarning, stacklevel=3)


def host_count(backend: str | None = None) -> int:
  """Deprecated alias of :func:`hlox.process_count`; warns (UserWarning) when called.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    The number of processes.

  Examples:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...   warnings.simplefilter("ignore")
    ...   hlox.host_count()
    1
  """
  _renamed("host_count", "process_count")
  return process_count(backend)


def host_id(backend: str | None = None) -> int:
  """Deprecated alias of :func:`hlox.process_index`; warns (UserWarning) when called.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    This process's index.

  Examples:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...   warnings.simplefilter("ignore")
    ...   hlox.host_id()
    0
  """
  _renamed("host_id", "process_index")
  return process_index(backend)


def process_indices(backend: str | None = None) -> list:
  """The indices of the processes taking part: ``list(range(process_count()))``.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    A list of ints.

  Examples:
    >>> hlox.process_indices()
    [0]
  """
  return list(range(process_count(backend)))


def host_ids(backend: str | None = None) -> list:
  """Deprecated alias of :func:`hlox.process_indices`; warns (UserWarning) when called.

  Args:
    backend: optional platform name (``"cpu"``, ``"tpu"``, ``"gpu"``) or client; default: the
      default platform. An unknown name raises RuntimeError.

  Returns:
    A list of the process indices.

  Examples:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...   warnings.simplefilter("ignore")
    ...   hlox.host_ids()
    [0]
  """
  _renamed("host_ids", "process_indices")
  return process_indices(backend)


def default_device():
  """Where values go when no device is named: this process's first device."""
  if _default_device is None:
    get_client()
  return _default_device


# --- shardings ---------------------------------------------------------------------------

_sharding_cache = {}


def single_device_sharding(device):
  """A jaxlib SingleDeviceSharding subclass with what its C++ side asks of a sharding."""
  sharding = _sharding_cache.get(device)
  if sharding is None:
    sharding = _sharding_cache[device] = _make_sharding_class()(device)
  return sharding


_SingleDevice = None


def _make_sharding_class():
  global _SingleDevice
  if _SingleDevice is None:
    xc = _xc()

    class SingleDevice(xc.SingleDeviceSharding):
      # jaxlib's C++ side reads these when transferring and wrapping results.
      memory_kind = None

      def __init__(self, device):
        super().__init__(device)
        self._hlox_device = device
        self._devices = (device,)
        self._dev_list = xc.DeviceList((device,))

      def _to_xla_hlo_sharding(self, ndim):
        return xc.HloSharding.replicate()

      @property
      def _device_assignment(self):
        return self._devices

      @property
      def _internal_device_list(self):
        return self._dev_list

      @property
      def device_set(self):
        return set(self._devices)

      def __repr__(self):
        return f"SingleDeviceSharding(device={self._hlox_device!r})"

    _SingleDevice = SingleDevice
  return _SingleDevice


# --- transfer ----------------------------------------------------------------------------

def put_buffer(value: np.ndarray, aval, device, *, keep_64bit: bool = False):
  """Copy a host NumPy array (already of ``aval.dtype``) to ``device``; returns a buffer.
  ``keep_64bit`` keeps a 64-bit value 64-bit with x64 off (jaxlib narrows it otherwise)."""
  xc = _xc()
  sharding = single_device_sharding(device)
  if config._values["transfer_guard_host_to_device"] is not None:
    transfer_guard.check("host-to-device", aval, sharding)
  return _put(xc, value, aval, sharding, device, keep_64bit)


def _put(xc, value, aval, sharding, device, keep_64bit=False):
  if aval.dtype == dtypes.float0:  # no XLA type: a float0 array travels as boolean zeros
    value, aval = float0_carrier(value, aval)
  return xc.batched_device_put(aval, sharding, [value], [device], True, False,
                               xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
                               keep_64bit or bool(config._values["enable_x64"]))


def share_host_buffer(value: np.ndarray, aval, device):
  """A CPU buffer over ``value``'s own memory where XLA can use it in place (aligned,
  row-major), else over a copy; the buffer keeps ``value`` alive."""
  xc = _xc()
  return xc.batched_device_put(aval, single_device_sharding(device), [value], [device], True,
                               False, xc.HostBufferSemantics.ZERO_COPY, True)


def float0_carrier(value, aval):
  """The boolean zeros (value and aval) a float0 array is on a device as, as in JAX (float0
  lowers to ``i1``): nothing of it is ever read back."""
  return np.zeros(np.shape(value), np.bool_), aval.update(dtype=dtypes.bool_, weak_type=False)


def on_host(buf):
  """``buf`` itself when it is on a CPU device, else a copy of it on the CPU (a GPU's or
  TPU's buffer is read this way: NumPy's buffer protocol and DLPack see CPU memory only, and
  jaxlib's own readers, ``_single_device_array_to_np_array_did_copy`` among them, import JAX)."""
  if buffer_device(buf).platform == "cpu":
    return buf
  from jaxlib import _jax
  cpu = _host_device()
  return _jax.batched_copy_array_to_devices_with_sharding(
      [buf], [_jax.DeviceList((cpu,))], [single_device_sharding(cpu)],
      [_jax.ArrayCopySemantics.ALWAYS_COPY])[0]


def spread_on_host(buf):
  """A copy on CPU devices of a buffer spread over GPU or TPU devices, laid out alike (one
  CPU device per device, the same HLO sharding), so that its shards can be read (DLPack and
  the buffer protocol see CPU memory only)."""
  from jaxlib import _jax
  devices = tuple(buf._sharding._internal_device_list)
  cpus = _host_devices(len(devices))
  sharding = _xc().GSPMDSharding(_jax.DeviceList(tuple(cpus)), buf._sharding._hlo_sharding)
  return _jax.batched_copy_array_to_devices_with_sharding(
      [buf], [_jax.DeviceList(tuple(cpus))], [sharding],
      [_jax.ArrayCopySemantics.ALWAYS_COPY])[0]


_private_cpu_clients: dict = {}  # number of devices -> a CPU client of hlox's own


def _host_device():
  return _host_devices(1)[0]


def _host_devices(n: int) -> list:
  """``n`` CPU devices to copy buffers to: the CPU platform's when it has as many, else
  those of a private CPU client made for this."""
  get_client()
  cpu = _clients.get("cpu")
  if cpu is not None and len(cpu.local_devices()) >= n:
    return cpu.local_devices()[:n]
  client = _private_cpu_clients.get(n)
  if client is None:
    client = _private_cpu_clients[n] = _xc().make_cpu_client(num_devices=n)
  return client.local_devices()[:n]


def buffer_to_numpy(buf) -> np.ndarray:
  """The value of a one-device buffer of a NumPy dtype, from any platform: a read-only view
  of a CPU buffer, a copy of another's."""
  value = np.asarray(on_host(buf))
  if value.dtype == object:
    # The buffer protocol refuses a buffer in a non-default layout (``jit`` with a Format);
    # DLPack describes it with strides.
    from jaxlib import _jax
    value = np.array(np.from_dlpack(_Capsule(_jax.buffer_to_dlpack_managed_tensor(
        on_host(buf)))), copy=True)
  return value


class _Capsule:
  """Hands NumPy a DLPack capsule of a CPU buffer."""
  __slots__ = ("capsule",)

  def __init__(self, capsule):
    self.capsule = capsule

  def __dlpack__(self, **kwargs):
    return self.capsule

  def __dlpack_device__(self):
    return (1, 0)  # kDLCPU


def copy_buffer_to_device(buf, aval, device):
  """Move a device buffer to another device."""
  sharding = single_device_sharding(device)
  if config._values["transfer_guard_device_to_device"] is not None:
    transfer_guard.check("device-to-device", aval, sharding)
  return _put(_xc(), buffer_to_numpy(buf), aval, sharding, device)


def buffer_device(buf):
  return buf._sharding._device_assignment[0]


# --- executables -------------------------------------------------------------------------

class Executable:
  """A compiled program on one device, with a result handler per output."""

  __slots__ = ("loaded", "handlers", "device", "out_avals", "run")

  def __init__(self, loaded, out_avals, device):
    xc = _xc()
    self.loaded = loaded
    self.device = device
    self.out_avals = list(out_avals)
    sharding = single_device_sharding(device)
    if any(a is abstract_token for a in self.out_avals):
      raise NotImplementedError("jit: a compiled program cannot return a token (lax.create_token"
                                " / lax.after_all) in hlox yet; use tokens inside the function")
    self.handlers = [xc.array_result_handler(a, sharding, True, True) for a in out_avals]
    execute = loaded.execute_sharded
    handlers = self.handlers

    def run(bufs):
      return execute(bufs).consume_with_handlers(handlers)
    self.run = run


def option_value(v):
  """A compiler option's value as XLA's option parser takes it."""
  # Enums (JAX's CompilerEffortLevel) go by name; XLA parses strings for every option type.
  name = getattr(v, "name", None)
  return name if isinstance(name, str) and not isinstance(v, (bool, int, float, str)) else v


def compile_mlir(mlir_text: str, device, out_avals, host_callbacks=(),
                 module=None, key_text: str | None = None,
                 compiler_options: dict | None = None) -> Executable:
  """Compile a one-device program. A program with Python host callbacks passes them, as
  ``(callback, result avals, takes a token)`` in the order its custom calls number them, and
  the ``ir.Module`` itself (``runtime/callbacks.py``). ``key_text`` (default ``mlir_text``)
  keys the on-disk cache: the text without source locations. ``compiler_options`` are XLA's
  options by name (``{"xla_embed_ir_in_executable": True}``), as JAX's; XLA rejects unknown
  names and ill-typed values when it compiles."""
  xc = _xc()
  client = device.client
  options = xc.CompileOptions()
  if compiler_options:
    options.env_option_overrides = [(k, option_value(v)) for k, v in compiler_options.items()]
  build = options.executable_build_options
  build.num_replicas = 1
  build.num_partitions = 1
  build.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
  if host_callbacks:
    loaded = callbacks.compile_with_callbacks(client, module, xc.DeviceList((device,)), options,
                                              host_callbacks)
    return Executable(guard_execution(loaded, mlir_text), out_avals, device)
  loaded = compilation_cache.compile_and_load(client, mlir_text, xc.DeviceList((device,)),
                                              options, key_text)
  return Executable(guard_execution(loaded, mlir_text), out_avals, device)


class _NoExecution:
  """A loaded executable compiled under the ``no_execution`` option: running it raises.
  (The caches are switched with that option, so such an executable never serves a call
  made without it.)"""

  def __init__(self, loaded, name):
    self._loaded = loaded
    self._name = name

  def execute_sharded(self, bufs, *args, **kwargs):
    raise RuntimeError(f"hlox tried to execute function {self._name}, but the no_execution "
                       "config option is set")

  def __getattr__(self, name):
    return getattr(self._loaded, name)


def guard_execution(loaded, mlir_text: str):
  """``loaded`` itself, or under the ``no_execution`` option a stand-in that raises when
  run (JAX's option: compiling is allowed, executing is not)."""
  if not config._values["no_execution"]:
    return loaded
  match = re.search(r"module @([\w.$-]+)", mlir_text or "")
  return _NoExecution(loaded, match.group(1) if match else "<unknown>")
