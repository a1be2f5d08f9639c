"""The PJRT client, devices, shardings, host<->device transfer and executables.

This is the only module (with the MLIR use in ``interpreters/xla.py``) that calls jaxlib.
Results come back through per-output result handlers (``consume_with_handlers``), because
``disassemble_into_single_device_arrays`` makes jaxlib import JAX (see RUNTIME_NOTES).
"""
from __future__ import annotations

import threading

import numpy as np

from hlox.config import config

_client = None
_client_lock = threading.Lock()


def _xc():
  from jaxlib import xla_client
  return xla_client


def get_client():
  """The process's PJRT CPU client, created on first use (``num_cpu_devices`` devices)."""
  global _client
  if _client is None:
    with _client_lock:
      if _client is None:
        n = int(config.num_cpu_devices)
        if n < 1:
          raise ValueError(f"num_cpu_devices must be >= 1, got {n}")
        _client = _xc().make_cpu_client(num_devices=n)
  return _client


def _check_device_count_change(name, value):
  if name == "num_cpu_devices" and _client is not None and \
      int(value) != len(_client.devices()):
    raise RuntimeError("num_cpu_devices must be set before hlox first uses a device "
                       "(or via HLOX_NUM_CPU_DEVICES before starting Python)")


config.add_watcher(_check_device_count_change)


def devices(backend: str | None = None) -> list:
  """All devices of the (only) backend, CPU."""
  if backend not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {backend!r}; hlox runs on 'cpu' in this build")
  return list(get_client().devices())


local_devices = devices


def device_count(backend: str | None = None) -> int:
  return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
  return len(devices(backend))


def default_backend() -> str:
  return get_client().platform


def process_index() -> int:
  return 0


def process_count() -> int:
  return 1


def default_device():
  return get_client().devices()[0]


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

def put_buffer(value: np.ndarray, aval, device):
  """Copy a host NumPy array (already of ``aval.dtype``) to ``device``; returns a buffer."""
  xc = _xc()
  sharding = single_device_sharding(device)
  return xc.batched_device_put(aval, sharding, [value], [device], True, False,
                               xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
                               bool(config._values["enable_x64"]))


def copy_buffer_to_device(buf, aval, device):
  """Move a device buffer to another device."""
  return put_buffer(np.asarray(buf), aval, device)


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
    self.handlers = [xc.array_result_handler(a, sharding, True, True) for a in out_avals]
    execute = loaded.execute_sharded
    handlers = self.handlers

    def run(bufs):
      return execute(bufs).consume_with_handlers(handlers)
    self.run = run

  def cost_analysis(self):
    return self.loaded.cost_analysis()

  def hlo_text(self) -> str:
    return "\n".join(m.to_string() for m in self.loaded.hlo_modules())


def compile_mlir(mlir_text: str, device, out_avals) -> Executable:
  xc = _xc()
  client = get_client()
  options = xc.CompileOptions()
  build = options.executable_build_options
  build.num_replicas = 1
  build.num_partitions = 1
  build.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
  loaded = client.compile_and_load(mlir_text, xc.DeviceList((device,)), options)
  return Executable(loaded, out_avals, device)
