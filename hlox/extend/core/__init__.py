"""``jax.extend.core``: the jaxpr IR and ``Primitive``, for defining new primitives.

A primitive's rules go in the interpreters' tables: ``hlox.interpreters.ad.primitive_jvps``
and ``primitive_transposes``, ``hlox.interpreters.batching.primitive_batchers``, and
``hlox.interpreters.mlir.register_lowering``.
"""
from hlox.core.avals import AbstractToken, ShapedArray, Token
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, Literal, Var,
                             check_jaxpr, jaxpr_as_fun)
from hlox.core.primitive import Primitive
from hlox.core.tracer import set_current_trace
from hlox.extend.core import primitives

array_types = (ShapedArray,)

__all__ = ["AbstractToken", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "JaxprTypeError", "Literal",
           "Primitive", "Token", "Var", "array_types", "check_jaxpr", "jaxpr_as_fun",
           "primitives", "set_current_trace"]
