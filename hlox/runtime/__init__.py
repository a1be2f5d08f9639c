"""Devices, the PJRT client, device-resident Arrays and transfers (the only jaxlib caller
besides the MLIR building in ``interpreters/xla.py``)."""
from hlox.runtime.client import (default_backend, device_count, devices, get_client,
                                 local_device_count, local_devices, process_count,
                                 process_index)
from hlox.runtime.array import Array, block_until_ready, device_get, device_put
from hlox.runtime.spmd import device_put_replicated, device_put_sharded
