"""hlox's own exception classes, each saying what went wrong and what to do."""
from __future__ import annotations


# JAX's errors page explains each tracer error at length; messages point there, as JAX's do.
ERRORS_PAGE = "https://docs.jax.dev/en/latest/errors.html"


def _see(cls) -> str:
  return f"\nSee {ERRORS_PAGE}#jax.errors.{cls.__name__}"


class _PointsToErrorsPage:
  """Ends an error's message with the errors page's entry for its class (as JAX's errors
  do), whatever the message is (JAX's constructors take one argument of any type)."""

  def __init__(self, message=""):
    text = str(message)
    see = _see(type(self))
    # An unpickled error is constructed again from its final message: no second line.
    super().__init__(text if text.endswith(see) else text + see)


class JAXTypeError(_PointsToErrorsPage, TypeError):
  """hlox's (and JAX's) own ``TypeError``: the base of the errors raised when a traced value
  is used where a concrete one is needed, of ``UnexpectedTracerError`` and of
  ``KeyReuseError``, so one ``except`` clause catches them all."""


class JAXIndexError(_PointsToErrorsPage, IndexError):
  """hlox's (and JAX's) own ``IndexError``: the base of ``NonConcreteBooleanIndexError``."""


# hlox's older name of the tracer errors' base class.
HloxTypeError = JAXTypeError


def _describe(tracer) -> str:
  try:
    aval = tracer.aval
  except (AttributeError, NotImplementedError):
    return "traced value"
  if aval is None:  # a tracer type that gives none (JAX's words for it)
    return "traced array with aval None"
  return f"traced array with shape {aval.str_short(short_dtypes=False)}"


def _origin(tracer) -> str:
  """Where the traced value came from (``Tracer._origin_msg``): the traced function and the
  arguments it depends on, on a line of its own; empty when unknown."""
  origin = getattr(tracer, "_origin_msg", None)
  return origin() if origin is not None else ""


class ConcretizationTypeError(HloxTypeError):
  """A traced (abstract) value was used where Python needs a concrete value.

  This happens on ``bool(x)``, ``int(x)``, ``float(x)``, ``if x:``, or using ``x`` as an index
  while ``x`` is being traced by ``jit``/``vmap``/... . Mark the argument static
  (``static_argnums``/``static_argnames``) or use structured control flow
  (``lax.cond``, ``lax.while_loop``, ``hlox.numpy.where``).
  """

  def __init__(self, tracer, context: str = ""):
    super().__init__(
        "Abstract tracer value encountered where concrete value is expected: "
        f"{_describe(tracer)}\n{context}{_origin(tracer)}\n")


class TracerArrayConversionError(HloxTypeError):
  """``np.asarray`` (or ``__array__``) was called on a traced value: NumPy functions cannot
  run on traced values; use the ``hlox.numpy`` function instead."""

  def __init__(self, tracer):
    super().__init__("The numpy.ndarray conversion method __array__() was called on "
                     f"{_describe(tracer)}{_origin(tracer)}")


class TracerIntegerConversionError(HloxTypeError):
  """``__index__`` was called on a traced value (for example using it as a list index): mark
  the argument static, or index an array with ``hlox.numpy``/``lax.dynamic_slice``."""

  def __init__(self, tracer):
    super().__init__(f"The __index__() method was called on {_describe(tracer)}"
                     f"{_origin(tracer)}")


class NonConcreteBooleanIndexError(HloxTypeError, JAXIndexError):
  """A boolean mask used as an index was traced: the result's shape would depend on it. Use
  ``jnp.where(mask, x, other)`` to select elementwise, or integer indices.
  (A ``JAXIndexError``, as JAX's, and a TypeError, as hlox's other tracer errors.)"""

  def __init__(self, aval):
    shown = aval.str_short() if hasattr(aval, "str_short") else aval
    super().__init__(f"Array boolean indices must be concrete; got {shown}\n")


class TracerBoolConversionError(ConcretizationTypeError):
  """``bool()`` of a traced value (for example in ``if x > 0:``): use ``lax.cond``,
  ``jnp.where`` or a static argument."""

  def __init__(self, tracer):
    HloxTypeError.__init__(self, f"Attempted boolean conversion of {_describe(tracer)}."
                           f"{_origin(tracer)}")


class UnexpectedTracerError(JAXTypeError):
  """A tracer was used after the transformation that created it had finished.

  This usually means a traced value leaked out of a transformed function, e.g. stored in a
  global, a closure or an object attribute. Return the value from the function instead.
  (A ``JAXTypeError``, so a ``TypeError``, as JAX's.)
  """


class KeyReuseError(JAXTypeError):
  """A PRNG key was used again after a random function consumed it: raised when
  ``debug_key_reuse`` is on (eagerly, and when a jitted function is traced) and by
  ``hlox.experimental.key_reuse``'s static checks. Split keys (``random.split``) so each
  draw has its own, or ``random.clone`` a key that is meant to be used twice."""


class UnsupportedDtypeError(TypeError, NotImplementedError):
  """An operation whose backend has no kernel for its operands' dtype (LAPACK on CPU has
  float32, float64, complex64 and complex128 routines only: ``cholesky`` of float16).
  Both a TypeError (newer JAX's class, "cholesky does not accept dtype float16") and a
  NotImplementedError (JAX 0.10.2's, "Unsupported dtype float16"), so code written for
  either catches it. Convert to float32 first."""


class JaxprTypeError(TypeError):
  """A jaxpr is ill-typed (``check_jaxpr``): a variable defined twice or used before it is
  defined, or an equation whose outputs do not have the types its primitive's rule gives.
  A bug in a transformation or a rule, not in user code."""


class InconclusiveDimensionOperation(Exception):
  """A comparison or conversion of symbolic dimensions (``hlox.export.symbolic_shape``) whose
  answer depends on the values the dimension variables take: ``b >= 2`` when nothing says
  ``b`` is at least 2, or ``int(b)``. Add a constraint to the symbolic scope, or write the
  computation so that it does not need the answer."""


class InvalidInputError(ValueError):
  """Bad input to a primitive or API (shape/dtype/axis mismatch)."""


class DeletedArrayError(RuntimeError, ValueError):
  """An Array whose buffer was deleted or donated was used.

  A RuntimeError (JAX's class when a deleted array is used in an eager op) and a ValueError
  (JAX's class when a donated array is passed to a jitted function again), so ``except``
  clauses written for either case in JAX catch it."""


class DistributedRuntimeError(RuntimeError):
  """A multi-process run lost a process: the coordinator (process 0) or a peer died, or
  stopped sending heartbeats, or a collective found its connection to another process
  closed.

  JAX ends the process in this case; hlox raises this instead (a ``RuntimeError``, JAX's
  class for runtime failures) in the main thread as soon as it is noticed, and again from
  every later call that would need the other processes. ``hlox.distributed`` exports it.
  """


# The class of the runtime's failures that XLA reports (compile options it rejects, a program
# that fails while running, a host callback's exception): jaxlib's ``JaxRuntimeError``, a
# RuntimeError, as ``jax.errors.JaxRuntimeError`` is. This module may not import jaxlib, so
# ``hlox.runtime`` puts jaxlib's class here when it is imported (``import hlox`` does).
JaxRuntimeError: type = RuntimeError


class ShardingTypeError(Exception):
  """An operation whose operands' shardings (over a mesh's Explicit axes) give no valid
  sharding for its result, as JAX's ``ShardingTypeError``: e.g. two operands split along one
  dimension by different axes, one mesh axis splitting two dimensions of a result, or a
  matrix product whose contracting dimensions are split on both sides (pass
  ``out_sharding=``, or ``reshard`` an operand first)."""
