"""The core: avals, dtypes, primitives, traces and the jaxpr IR.

Belongs here: what every transformation shares and that knows no particular primitive and no
device (``ShapedArray``, the dtype lattice, ``Primitive``/``bind``, the trace context, jaxpr
building, printing, checking and evaluation). May import only ``hlox.config`` and
``hlox.errors``; everything else in hlox sits above it.
"""
from hlox.core.avals import ShapedArray, short_dtype_name
from hlox.core.primitive import Primitive
from hlox.core.tracer import (EvalTrace, Trace, Tracer, current_trace, eval_trace,
                              get_aval, is_tracer, set_current_trace, trace_ctx)
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTrace, JaxprTracer,
                             JaxprTypeError, Literal, Var, check_jaxpr, convert_constvars,
                             dce_jaxpr, eval_jaxpr, jaxpr_as_fun, pp_jaxpr, trace_to_jaxpr)
