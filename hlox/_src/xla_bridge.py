"""``jax._src.xla_bridge``: chex's ``set_n_cpu_devices`` checks ``_backends`` (the
platform -> client dict of the backends already started) to refuse changing the CPU device
count after the CPU client exists."""
from hlox.runtime.client import _clients as _backends

__all__ = ["_backends"]
