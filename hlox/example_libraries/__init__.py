"""``hlox.example_libraries``: JAX's ``jax.example_libraries``, the two small teaching
libraries that JAX's examples and many older programs use: ``stax`` (neural-network layers
as ``(init_fun, apply_fun)`` pairs) and ``optimizers`` (``(init, update, get_params)``
triples over pytrees).

Belongs here: those two modules, written on ``hlox.numpy``, ``hlox.lax``, ``hlox.random``,
``hlox.nn`` and ``hlox.tree_util``; they may import the libraries of their layer and below,
never jaxlib nor the runtime.
"""
from hlox.example_libraries import optimizers, stax  # noqa: F401

__all__ = ["optimizers", "stax"]
