"""Shape polymorphism for ``hlox.export`` (JAX's ``symbolic_shape``, ``symbolic_args_specs``,
``SymbolicScope``, ``is_symbolic_dim``): the public names over the algebra of symbolic
dimensions, which lives in ``hlox.core.shape_poly`` (avals carry symbolic sizes, so the core
must know them)."""
from __future__ import annotations

from hlox import tree_util
from hlox.api import ShapeDtypeStruct
from hlox.core.shape_poly import is_symbolic_dim
from hlox.core.shape_poly_scope import SymbolicScope
from hlox.core.shape_poly_parser import symbolic_shape


def _shape_and_dtype(a):
  if isinstance(a, ShapeDtypeStruct):
    return a.shape, a.dtype
  return tuple(a.shape), a.dtype


def symbolic_args_specs(args, shapes_specs, constraints=(), scope: SymbolicScope | None = None):
  """``ShapeDtypeStruct``s like ``args`` (a pytree of arrays or ``ShapeDtypeStruct``s) with
  shapes from ``shapes_specs``: None (keep the shapes), one spec string for every leaf, or a
  pytree prefix of ``args`` with a spec (or None) per subtree. A spec is as for
  ``symbolic_shape``; its ``_`` and ``...`` take the argument's own dimensions. All the
  shapes share one scope: ``scope``, or a new one with ``constraints``."""
  leaves, treedef = tree_util.tree_flatten(args)
  if isinstance(args, tuple) and isinstance(shapes_specs, list):
    shapes_specs = tuple(shapes_specs)  # JAX accepts a list of specs for a tuple of args
  try:
    specs = tree_util.broadcast_prefix(shapes_specs, args, is_leaf=lambda x: x is None)
  except ValueError as e:
    errors = tree_util.prefix_errors(shapes_specs, args, "export.symbolic_args_specs "
                                     "shapes_specs", is_leaf=lambda x: x is None)
    raise ValueError(errors[0] if errors else str(e)) from None
  if scope is None:
    scope = SymbolicScope(constraints)
  elif constraints:
    raise ValueError("Cannot use both `scope` and `constraints`")
  out = []
  for leaf, spec in zip(leaves, specs):
    shape, dtype = _shape_and_dtype(leaf)
    out.append(ShapeDtypeStruct(symbolic_shape(spec, like=shape, scope=scope), dtype))
  return treedef.unflatten(out)


__all__ = ["SymbolicScope", "symbolic_shape", "symbolic_args_specs", "is_symbolic_dim"]
