"""``hlox.debug``: seeing inside traced programs (JAX's ``jax.debug``): ``print``, ``log`` and
``callback``, which run on the host with the values as the program computes them, eagerly and
under ``jit``, ``vmap``, ``grad`` and control flow; ``breakpoint``, an interactive debugger
over the Python frames at that point (``debugger.py``, ``cli_debugger.py``).

Belongs here: debugging aids written on the public transformations and on the callback
primitives of ``hlox.lax.callback`` (``callbacks.py`` also holds ``pure_callback`` and
``io_callback``, re-exported by ``hlox`` and ``hlox.experimental``). May import ``lax``,
``numpy``, the transformations, ``core`` and the runtime's ``Array``; never jaxlib directly.
"""
from hlox.debug.callbacks import callback, log, print  # noqa: F401,A004
from hlox.debug.debugger import breakpoint  # noqa: F401,A004
from hlox.debug import cli_debugger  # noqa: F401  (registers the "cli" debugger)
from hlox.debug.visualize import visualize_array_sharding, visualize_sharding  # noqa: F401
from hlox.debug.inspection import inspect_array_sharding  # noqa: F401

__all__ = ["breakpoint", "callback", "inspect_array_sharding", "log", "print",
           "visualize_array_sharding",
           "visualize_sharding"]
