"""``jax.extend.core``: the jaxpr IR and ``Primitive``, for defining new primitives.

A primitive's rules go in the interpreters' tables: ``hlox.interpreters.ad.primitive_jvps``
and ``primitive_transposes``, ``hlox.interpreters.batching.primitive_batchers``, and
``hlox.interpreters.mlir.register_lowering``.
"""
import weakref

from hlox.core.avals import AbstractToken, ShapedArray, Token
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, Literal, Var,
                             check_jaxpr, jaxpr_as_fun)
from hlox.core.primitive import Primitive
from hlox.core.tracer import current_trace, set_current_trace
from hlox.extend.core import primitives

array_types = (ShapedArray,)


def find_top_trace(args):
  """The trace that operations on ``args`` are processed by now: the innermost
  transformation in effect (hlox, like current JAX, keeps one current trace)."""
  del args
  return current_trace()


class OpaqueTraceState:
  """The transformation in effect when taken, compared by identity: libraries (flax) record
  it when an object is made and check later that they are still under the same one."""

  __slots__ = ("_trace",)

  def __init__(self, trace):
    self._trace = weakref.ref(trace)

  def __eq__(self, other):
    # Python hands out one weak reference per object, so states taken under the same
    # transformation stay equal after it ends; live references compare their traces.
    return isinstance(other, OpaqueTraceState) and self._trace == other._trace

  def __hash__(self):
    return id(self._trace)


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
  """The current transformation, as an opaque value comparable with ``==``."""
  del convention  # the library asking (JAX keeps the argument for its bookkeeping)
  return OpaqueTraceState(current_trace())


def mapped_aval(size: int, axis: int | None, aval):
  """The aval of one slice of ``aval`` along ``axis`` (of length ``size``), as a batched
  value is seen inside ``vmap``; ``axis=None`` leaves it whole (an unbatched value)."""
  if not isinstance(aval, ShapedArray):
    raise TypeError(f"no mapping handler for {aval} of type {type(aval)}")
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                     f"{aval.shape[axis]}, not {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval, explicit_mesh_axis=None):
  """``aval`` with a new axis of length ``size`` at ``axis`` (the batched value a ``vmap``
  builds from per-example ``aval``); ``axis=None`` leaves it as it is."""
  if explicit_mesh_axis is not None:
    raise NotImplementedError("unmapped_aval: a new axis sharded over an explicit mesh axis")
  if not isinstance(aval, ShapedArray):
    raise TypeError(f"no unmapping handler for {aval} of type {type(aval)}")
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])

__all__ = ["AbstractToken", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "JaxprTypeError", "Literal",
           "Primitive", "Token", "Var", "array_types", "check_jaxpr", "find_top_trace", "get_opaque_trace_state", "jaxpr_as_fun",
           "mapped_aval", "primitives", "unmapped_aval", "set_current_trace"]
