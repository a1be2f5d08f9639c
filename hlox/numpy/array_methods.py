"""Operators and NumPy-style methods of ``hlox.Array`` and of tracers.

Installed onto both classes at import time, so a traced value behaves like an Array.
"""
from __future__ import annotations

from hlox.core.tracer import Tracer
from hlox.runtime.array import Array


import numpy as np

_known_operand_types = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex, list,
                        tuple)


def _defer_to_others(binary):
  """Return NotImplemented for operand types we do not know, so Python tries the other side."""
  def method(self, other):
    if not isinstance(other, _known_operand_types):
      return NotImplemented
    return binary(self, other)
  return method


def _swap(binary):
  return lambda self, other: binary(other, self)


def _operators():
  import hlox.numpy as jnp
  ops = {}
  binary = {
      "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply,
  }
  for name in ("truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
               "rshift", "divmod"):
    fn = getattr(jnp, {"truediv": "true_divide", "floordiv": "floor_divide", "mod": "mod",
                       "pow": "power", "matmul": "matmul", "and": "bitwise_and",
                       "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
                       "rshift": "right_shift", "divmod": "divmod"}[name], None)
    if fn is not None:
      binary[name] = fn
  for name, fn in binary.items():
    ops[f"__{name}__"] = _defer_to_others(fn)
    ops[f"__r{name}__"] = _defer_to_others(_swap(fn))
  comparisons = {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
                 "gt": jnp.greater, "ge": jnp.greater_equal}
  for name, fn in comparisons.items():
    ops[f"__{name}__"] = _defer_to_others(fn)
  ops["__neg__"] = jnp.negative
  ops["__pos__"] = lambda x: x
  for name, attr in (("__abs__", "abs"), ("__invert__", "invert")):
    fn = getattr(jnp, attr, None)
    if fn is not None:
      ops[name] = fn
  getitem = getattr(jnp, "_getitem", None)
  if getitem is not None:
    ops["__getitem__"] = getitem
  return ops


def _methods():
  import hlox.numpy as jnp
  methods = {}
  for name in ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all",
               "cumsum", "cumprod", "var", "std", "clip", "round", "dot", "ravel",
               "squeeze", "swapaxes", "nonzero", "sort", "argsort", "conj", "conjugate",
               "trace", "take", "repeat", "diagonal", "ptp", "searchsorted", "compress",
               "copy", "argpartition"):
    fn = getattr(jnp, name, None)
    if fn is not None:
      methods[name] = fn
  if hasattr(jnp, "compress"):
    methods["compress"] = lambda x, condition, axis=None, **kw: jnp.compress(condition, x,
                                                                             axis, **kw)
  if hasattr(jnp, "choose"):
    methods["choose"] = lambda x, choices, mode="raise": jnp.choose(x, choices, mode=mode)
  if hasattr(jnp, "reshape"):
    methods["reshape"] = _reshape_method
  if hasattr(jnp, "transpose"):
    methods["transpose"] = _transpose_method
    methods["T"] = property(lambda x: jnp.transpose(x))
    methods["mT"] = property(lambda x: jnp.swapaxes(x, -1, -2))
  if hasattr(jnp, "real"):
    methods["real"] = property(jnp.real)
    methods["imag"] = property(jnp.imag)
  methods["astype"] = _astype_method
  methods["flatten"] = lambda x, order="C": jnp.ravel(x, order)
  methods["at"] = property(_at_property)
  return methods


def _reshape_method(x, *shape, order="C"):
  import hlox.numpy as jnp
  if len(shape) == 1 and not isinstance(shape[0], int) and hasattr(shape[0], "__iter__"):
    shape = tuple(shape[0])
  return jnp.reshape(x, shape, order=order)


def _transpose_method(x, *axes):
  import hlox.numpy as jnp
  if len(axes) == 1 and (axes[0] is None or hasattr(axes[0], "__iter__")):
    axes = axes[0]
  return jnp.transpose(x, axes or None)


def _astype_method(x, dtype, copy=False, device=None):
  import hlox.numpy as jnp
  return jnp.astype(x, dtype)


def _at_property(x):
  from hlox.numpy import indexing
  at = getattr(indexing, "_IndexUpdateHelper", None)
  if at is None:
    raise NotImplementedError(".at[] indexing is not available yet")
  return at(x)


def install():
  for cls in (Array, Tracer):
    for name, fn in {**_operators(), **_methods()}.items():
      setattr(cls, name, fn)
  # Arrays and tracers are unhashable even though they define __eq__.
  Array.__hash__ = Array.__dict__.get("__hash__") or _unhashable
  Tracer.__hash__ = _unhashable


def _unhashable(self):
  raise TypeError(f"unhashable type: {type(self).__name__}")
