"""The core: avals, dtypes, primitives, traces and the jaxpr IR.

Belongs here: what every transformation shares and that knows no particular primitive and no
device (``ShapedArray``, the dtype lattice, ``Primitive``/``bind``, the trace context, jaxpr
building, printing, checking and evaluation). May import only ``hlox.config`` and
``hlox.errors``; everything else in hlox sits above it.
"""
from hlox.core.avals import ManualAxisType, ShapedArray, short_dtype_name
from hlox.core.primitive import Primitive
from hlox.core.tracer import (EvalTrace, Trace, Tracer, current_trace, eval_trace,
                              get_aval, is_tracer, set_current_trace, trace_ctx)
from hlox.core.shape_poly_decision import bounds_decision as _bounds_decision  # noqa: F401
from hlox.core.shape_poly import (is_constant_dim, is_constant_shape, max_dim,  # noqa: F401
                                  min_dim)
from hlox.core.shape_poly_parser import symbolic_shape as _symbolic_shape  # noqa: F401
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTrace, JaxprTracer,
                             JaxprTypeError, Literal, Var, check_jaxpr, convert_constvars,
                             dce_jaxpr, eval_jaxpr, jaxpr_as_fun, pp_jaxpr, trace_to_jaxpr)


# JAX's ``jax.core`` names for what hlox has under its own.
import abc as _abc
import contextlib as _contextlib
from typing import Any as _Any, Union as _Union

from hlox.config import ensure_compile_time_eval  # noqa: E402,F401
from hlox.core.avals import AbstractToken as _AbstractToken  # noqa: E402


class AbstractValue(_abc.ABC):
  """The type of a value as tracing sees it (its aval): ``ShapedArray`` for arrays,
  ``AbstractToken`` for tokens. An abstract base: both register with it."""


AbstractValue.register(ShapedArray)
AbstractValue.register(_AbstractToken)
Atom = _Union[Var, Literal]  # an equation's operand
Value = _Any
ParamDict = dict[str, _Any]


@_contextlib.contextmanager
def eval_context():
  """Inside the block, operations run eagerly (on the eval trace), whatever transformation
  is tracing around it: for computing concrete values while tracing."""
  with set_current_trace(eval_trace):
    yield
