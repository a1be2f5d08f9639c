"""``hlox.distributed``: join several processes into one run (``initialize`` before the first
computation, then ``hlox.devices()`` lists every process's devices). The machinery, which
drives jaxlib's coordination service, is in ``hlox/runtime/distributed.py``."""
from hlox.runtime.distributed import (  # noqa: F401
    DistributedRuntimeError, DistributedTimeoutError, global_state, initialize, is_initialized,
    shutdown)
