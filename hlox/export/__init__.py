"""``hlox.export`` (JAX's ``jax.export``): export a jitted function as a portable StableHLO
module with its calling convention, serialize it, and call it again, in this process or
another, on this platform or (exported for it) another.

Belongs here: the ``Exported`` type and ``export`` (``_export.py``), the byte format
(``serialization.py``), the shape-polymorphism API (``shape_poly.py``, over the algebra of
symbolic dimensions in ``hlox/core/shape_poly*.py``). The
primitive that calls an ``Exported`` is ``lax/call_exported.py``;
the module surgery is ``interpreters/exported_module.py``.
"""
from hlox.export._export import (  # noqa: F401
    DisabledSafetyCheck, Exported, default_export_platform, export,
    maximum_supported_calling_convention_version, minimum_supported_calling_convention_version)
from hlox.export.serialization import (  # noqa: F401
    deserialize, register_namedtuple_serialization, register_pytree_node_serialization)
from hlox.export.shape_poly import (  # noqa: F401
    SymbolicScope, is_symbolic_dim, symbolic_args_specs, symbolic_shape)

__all__ = ["DisabledSafetyCheck", "Exported", "export", "deserialize",
           "register_pytree_node_serialization", "register_namedtuple_serialization",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "default_export_platform",
           "SymbolicScope", "is_symbolic_dim", "symbolic_shape", "symbolic_args_specs"]
