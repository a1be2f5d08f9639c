"""Traces, tracers and the current-trace context (stackless, as in today's JAX core).

There is always exactly one *current trace* per thread. ``Primitive.bind`` hands the
operation to it. A transformation makes a new trace whose rules run with the context set to
the trace's parent (or to nothing in particular: each rule says which trace it binds on), so
transformations nest to any depth. Each trace is its own tag: a trace recognises its tracers
by identity (``tracer._trace is self``) and treats every other tracer as a constant, which makes
perturbation confusion impossible. When a trace's scope ends it is invalidated; its tracers
then raise ``UnexpectedTracerError`` if they are used again.
"""
from __future__ import annotations

import threading

import numpy as np

from hlox.config import config
from hlox.core import basearray
from hlox.core import dtypes
from hlox.core import leak_checker
from hlox.core.avals import ShapedArray
from hlox.core.shape_poly import register_tracer_type
from hlox.errors import (ConcretizationTypeError, TracerArrayConversionError,
                         TracerBoolConversionError, TracerIntegerConversionError,
                         UnexpectedTracerError)


class Trace:
  """Base class: a transformation's interpretation of primitives."""

  name = "trace"  # e.g. "jit", "jvp", "vmap": used in messages

  def __init__(self):
    self.invalid = False
    self.debug_info = ""  # the function being transformed, for messages

  def process_primitive(self, primitive, args, params):
    raise NotImplementedError(f"{type(self).__name__} cannot process {primitive.name}")

  def invalidate(self):
    self.invalid = True
    if config.check_tracer_leaks:
      leak_checker.note_finished(self)

  def check_tracer(self, x):
    """Raise if ``x`` belongs to a trace that has already finished."""
    if x._trace.invalid:
      raise escaped_tracer_error(x)

  def __repr__(self):
    return f"{type(self).__name__}({self.debug_info})"

  @property
  def kind(self) -> str:
    """The trace's kind as verbose tracer reprs name it (JAX's trace class name)."""
    return type(self).__name__

  @property
  def main(self):
    """The tag of the transformation this trace applies, for telling its tracers apart by
    identity (``tracer._trace.main is trace.main``): the trace itself, since each trace is
    its own tag. JAX keeps the name for libraries written against its older trace stack
    (equinox's ``filter_jvp`` picks out its own JVP tracers this way)."""
    return self


class _Text(str):
  """Text with a ``format()`` that returns it (what ``Tracer._pretty_print`` gives, in the
  shape of JAX's pretty-printer documents)."""

  def format(self, *args, **kwargs) -> str:  # noqa: A003  (JAX's Doc method)
    return str(self)


class EvalTrace(Trace):
  """The trace at the bottom: runs each primitive's implementation on concrete arrays."""

  name = "eval"

  def process_primitive(self, primitive, args, params):
    # Implementations reject tracers themselves (see ``check_no_tracers``), off the hot path.
    return primitive.impl(*args, **params)

  def __reduce__(self):
    # The one eval trace, by reference: code compares traces by identity (``is eval_trace``),
    # also in a pickled jitted function.
    return "eval_trace"


eval_trace = EvalTrace()


def check_no_tracers(args) -> None:
  """Raise UnexpectedTracerError if a tracer reached the eval trace (it escaped its trace)."""
  for x in args:
    if isinstance(x, Tracer):
      raise escaped_tracer_error(x)


class TraceContext(threading.local):
  def __init__(self):
    self.trace = eval_trace
    self.axis_env = []  # [(name, size)] of the named axes in scope (vmap/pmap), innermost last

  def __reduce__(self):
    # The one context of the process, by reference (a pickled jitted function holds it).
    return "trace_ctx"


trace_ctx = TraceContext()


class set_current_trace:
  """Context manager making ``trace`` the current trace inside its block."""

  __slots__ = ("trace", "prev")

  def __init__(self, trace):
    self.trace = trace

  def __enter__(self):
    self.prev = trace_ctx.trace
    trace_ctx.trace = self.trace
    return self.trace

  def __exit__(self, *exc):
    trace_ctx.trace = self.prev


class extend_axis_env:
  """Context manager putting a named mapped axis (``name``, ``size``) in scope."""

  __slots__ = ("name", "size")

  def __init__(self, name, size: int):
    self.name, self.size = name, size

  def __enter__(self):
    trace_ctx.axis_env.append((self.name, self.size))

  def __exit__(self, *exc):
    trace_ctx.axis_env.pop()


def axis_size(name) -> int:
  """The size of the innermost mapped axis called ``name``; NameError if none is in scope."""
  for n, size in reversed(trace_ctx.axis_env):
    if n == name:
      return size
  raise NameError(f"unbound axis name: {name}. The axis name must be bound by an enclosing "
                  "vmap (axis_name=...) or pmap.")


def current_trace() -> Trace:
  return trace_ctx.trace


def escaped_tracer_error(tracer) -> UnexpectedTracerError:
  trace = tracer._trace
  where = getattr(tracer, "_src", None)
  created = f" It was created on line {where}." if where else ""
  fun = f" of {trace.debug_info}" if trace.debug_info else ""
  return UnexpectedTracerError(
      f"Encountered an unexpected tracer {tracer.aval.str_short()} (type "
      f"{tracer.aval.str_short(short_dtypes=False)}): it was made by the "
      f"{trace.name} transformation{fun}, which has already finished.{created} A traced value "
      "has leaked out of the function being transformed: transformations disallow saving "
      "intermediate values to global state (a global, a closure or an attribute). Return it "
      "from the function instead, or pass it in as an argument.")


# --- tracers -----------------------------------------------------------------------------

class Tracer:
  """A value being traced: stands for an array, known to its trace through ``aval``.

  Arithmetic operators and array methods are installed by ``hlox.numpy`` (the core does not
  know any primitive).
  """

  __slots__ = ("_trace", "_aval")
  __array_priority__ = 1000

  def __init__(self, trace, aval=None):
    """JAX's constructor, for tracer types written against it (``super().__init__(trace,
    aval)``); hlox's own tracers set their fields themselves."""
    self._trace = trace
    self._aval = aval

  @property
  def aval(self):
    try:
      return self._aval
    except AttributeError:  # a tracer type that neither set nor overrides it
      raise NotImplementedError(f"{type(self).__name__} has no aval") from None

  def to_concrete_value(self):
    """The concrete value if the trace knows it (e.g. a JVP primal), else None."""
    return None

  # Shape-like attributes come straight from the aval.
  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  @property
  def ndim(self):
    return len(self.aval.shape)

  @property
  def size(self):
    return self.aval.size

  @property
  def weak_type(self):
    return self.aval.weak_type

  @property
  def mat(self):
    """How the value relates to the devices along a shard_map's manual axes (JAX's
    ``manual_axis_type``: varying, unreduced and reduced axes)."""
    return self.aval.mat

  @property
  def sharding(self):
    # JAX's answer: a traced value's layout is decided when the program is compiled.
    raise AttributeError(
        "The 'sharding' attribute is not available on traced values: the layout of a value "
        "inside a traced function is chosen when the program is compiled. Use "
        "`hlox.typeof(x)` for its type, or hlox.debug.visualize_array_sharding on results.")

  def __len__(self):
    if not self.aval.shape:
      raise TypeError("len() of unsized object (a 0-d traced array)")
    return self.aval.shape[0]

  def __iter__(self):
    if not self.aval.shape:
      raise TypeError("iteration over a 0-d traced array")
    return (self[i] for i in range(self.aval.shape[0]))

  def __array__(self, *args, **kwargs):
    raise TracerArrayConversionError(self)

  def _concrete(self, what):
    value = self.to_concrete_value()
    if value is None:
      if what == "bool":
        raise TracerBoolConversionError(self)
      # As JAX says: a cast of a traced array is usually meant as a dtype conversion.
      raise ConcretizationTypeError(
          self, f"The problem arose with the `{what}` function. If trying to convert the data "
          f"type of a value, try using `x.astype({what})` or `jnp.array(x, {what})` instead.")
    return value

  def __bool__(self):
    size = self.aval.size
    if size != 1:  # as for arrays, whatever the value: NumPy's ValueErrors
      if size == 0:
        raise ValueError("The truth value of an empty array is ambiguous. Use "
                         "`array.size > 0` to check that an array is not empty.")
      raise ValueError("The truth value of an array with more than one element is ambiguous. "
                       "Use a.any() or a.all()")
    return bool(self._concrete("bool"))

  def _check_scalar(self, what):
    if self.aval.shape:
      raise TypeError(f"Only scalar arrays can be converted to Python scalars. ({what}() of a "
                      f"traced {self.aval.str_short()})")

  def __int__(self):
    self._check_scalar("int")
    return int(self._concrete("int"))

  def __float__(self):
    self._check_scalar("float")
    return float(self._concrete("float"))

  def __complex__(self):
    self._check_scalar("complex")
    return complex(self._concrete("complex"))

  def __index__(self):
    aval = self.aval
    if aval.shape or not (dtypes.is_int(aval.dtype) or aval.dtype == dtypes.bool_):
      raise TypeError("Only integer scalar arrays can be converted to a scalar index. (got "
                      f"a traced {aval.str_short()})")
    value = self.to_concrete_value()
    if value is None:
      raise TracerIntegerConversionError(self)
    return int(value)

  def item(self, *args):
    """The value as a Python scalar: possible only where the trace knows it concretely."""
    value = self.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(self, "This occurred in the item() method of jax.Array")
    return np.asarray(value).item(*args)

  def __copy__(self):
    return self  # tracers are immutable values, as JAX's: a copy is the tracer itself

  def __deepcopy__(self, memo):
    return self

  def __hash__(self):
    raise TypeError(f"unhashable type: traced array {self.aval.str_short()}; traced values "
                    "cannot be static arguments or dictionary keys")

  def _short_repr(self) -> str:
    """The one-line description ``repr`` gives; each kind of tracer says what it holds
    (``JitTracer(~float32[])``, ``VmapTracer(...)``, ``JVPTracer(...)``), as JAX prints."""
    return f"{type(self).__name__}<{self.aval}>"

  def __repr__(self):
    return self._short_repr()

  def _contents(self) -> list:
    """``(name, value)`` pairs a verbose repr shows: what this tracer holds."""
    return []

  def _pretty_print(self, verbose: bool = False) -> "_Text":
    """The tracer's description as printable text (``.format()`` gives the string): the
    short repr, or verbosely ``Traced<type>with<trace kind>`` and what the tracer holds."""
    if not verbose:
      return _Text(self._short_repr())
    lines = [f"Traced<{self.aval}>with<{self._trace.kind}>"]
    for name, value in self._contents():
      text = value._pretty_print().format() if isinstance(value, Tracer) else repr(value)
      lines.append(f"  {name} = " + text.replace("\n", "\n    "))
    return _Text("\n".join(lines))

  def _origin_msg(self) -> str:
    """Where this value came from, for error messages (a line of its own); empty here,
    traces that know say more."""
    return ""

  def __reduce__(self):
    raise ConcretizationTypeError(self, "pickling a traced array")


basearray.Array.register(Tracer)
register_tracer_type(Tracer)


def is_tracer(x) -> bool:
  return isinstance(x, Tracer)


def get_aval(x):
  """The abstract value of a tracer, Array, NumPy array or Python scalar."""
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  return _aval_of_concrete(x)


def invalid_argument_error(primitive_name: str, position: int, x) -> TypeError:
  """JAX's TypeError for an operand ``x`` of a primitive that is no JAX value."""
  return TypeError(f"Error interpreting argument to {primitive_name} as a JAX value. The "
                   f"problematic value is of type {type(x)} and was passed to "
                   f"{primitive_name} at position {position}.")


def raise_for_invalid_operand(primitive_name: str, args) -> None:
  """Raise ``invalid_argument_error`` for the first of ``args`` that has no abstract value
  (called once converting the operands has failed, so off the common path)."""
  for i, x in enumerate(args):
    if isinstance(x, Tracer):
      continue
    try:
      get_aval(x)
    except TypeError as e:
      raise invalid_argument_error(primitive_name, i, x) from e


def _aval_of_concrete(x):
  t = type(x)
  if t in (int, float, complex, bool):
    return ShapedArray((), dtypes.python_scalar_dtype(x), t is not bool)
  if isinstance(x, (np.ndarray, np.generic)):
    if x.dtype.kind in "OUS" or (x.dtype.names is not None and x.dtype != dtypes.float0):
      raise TypeError(f"Value {x!r} of type {t} with dtype {x.dtype} is not a valid JAX "
                      "type: arrays hold numbers or booleans (not objects, strings or bytes)")
    if t is not np.ndarray and isinstance(x, np.ma.MaskedArray):
      raise ValueError("numpy masked arrays are not supported as direct inputs to JAX "
                       "functions. Use arr.filled() to convert the value to a standard numpy "
                       "array.")
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
  if isinstance(x, (bool, int, float, complex)):  # subclasses (IntEnum, numpy bool...)
    return ShapedArray((), dtypes.python_scalar_dtype(x), not isinstance(x, bool))
  raise TypeError(f"Value {x!r} of type {t} is not a valid JAX type: hlox arrays are built "
                  "from Arrays, NumPy arrays, and Python scalars")
