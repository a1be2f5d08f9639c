"""The runtime: devices, the PJRT client, device-resident ``Array``s, transfers, multi-device
buffers and multi-process setup.

Belongs here: everything that talks to jaxlib's PJRT/XLA client (``xla_client``, ``_jax``),
the only such place besides the MLIR building in the lowering. May import ``hlox.core``, the
utilities and ``config``/``errors``; never the interpreters, ``lax`` or anything above.
Libraries (``numpy``, ``random``, ``nn``, ``scipy``) see it only through ``runtime.array``.
"""
from jaxlib import _jax as _jaxlib_ext

from hlox import errors as _errors
from hlox.runtime.client import (default_backend, device_count, devices, get_client,
                                 local_device_count, local_devices, process_count,
                                 process_index)
from hlox.runtime.array import Array, block_until_ready, device_get
from hlox.runtime import gc_guard  # noqa: F401  (the array_garbage_collection_guard option)
from hlox.runtime.placement import device_put, device_put_replicated, device_put_sharded

_errors.JaxRuntimeError = _jaxlib_ext.JaxRuntimeError  # see hlox.errors.JaxRuntimeError
