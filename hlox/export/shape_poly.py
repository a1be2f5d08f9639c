"""Shape polymorphism (JAX's ``symbolic_shape``, ``symbolic_args_specs``, ``SymbolicScope``,
``is_symbolic_dim``): not built in hlox. hlox traces every dimension as a Python integer, so
an exported module has static shapes; these names exist so that programs importing them
load, and using them says so."""
from __future__ import annotations

_WHY = ("shape polymorphism (symbolic dimensions) is not supported by hlox.export: export "
        "once per concrete shape instead")


class SymbolicScope:
  """JAX's scope of symbolic dimension variables and constraints (not supported)."""

  def __init__(self, constraints=()):
    raise NotImplementedError(f"jax.export.SymbolicScope: {_WHY}")


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
  """JAX's parser of a symbolic shape such as ``"b, 4"`` (not supported)."""
  raise NotImplementedError(f"jax.export.symbolic_shape({shape_spec!r}): {_WHY}")


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
  """JAX's ``ShapeDtypeStruct``s with symbolic shapes for ``args`` (not supported)."""
  raise NotImplementedError(f"jax.export.symbolic_args_specs: {_WHY}")


def is_symbolic_dim(p) -> bool:
  """Whether ``p`` is a symbolic dimension: never, in hlox (every dimension is an int)."""
  return False


__all__ = ["SymbolicScope", "symbolic_shape", "symbolic_args_specs", "is_symbolic_dim"]
