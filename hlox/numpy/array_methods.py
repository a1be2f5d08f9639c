"""Operators and NumPy-style methods of ``hlox.Array`` and of tracers.

Installed onto both classes at import time, so a traced value behaves like an Array.
"""
from __future__ import annotations

import numpy as np

from hlox.core.tracer import Tracer
from hlox.numpy import (creation, indexing, products, reductions, searching, selection, shapes,
                        sorting, ufuncs)
from hlox.runtime.array import Array

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
  ops = {}
  binary = {
      "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
      "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.mod,
      "pow": ufuncs.power, "matmul": products.matmul, "and": ufuncs.bitwise_and,
      "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor, "lshift": ufuncs.left_shift,
      "rshift": ufuncs.right_shift, "divmod": ufuncs.divmod,
  }
  for name, fn in binary.items():
    ops[f"__{name}__"] = _defer_to_others(fn)
    ops[f"__r{name}__"] = _defer_to_others(_swap(fn))
  comparisons = {"eq": ufuncs.equal, "ne": ufuncs.not_equal, "lt": ufuncs.less,
                 "le": ufuncs.less_equal, "gt": ufuncs.greater, "ge": ufuncs.greater_equal}
  for name, fn in comparisons.items():
    ops[f"__{name}__"] = _defer_to_others(fn)
  ops["__neg__"] = ufuncs.negative
  ops["__pos__"] = lambda x: x
  ops["__abs__"] = ufuncs.abs
  ops["__invert__"] = ufuncs.invert
  ops["__getitem__"] = indexing._getitem
  ops["__setitem__"] = _setitem
  return ops


def _setitem(x, idx, value):
  raise TypeError(f"{type(x).__name__} {x.aval.str_short()} does not support item assignment: "
                  "hlox arrays are immutable. Instead of ``x[idx] = y`` use "
                  "``x = x.at[idx].set(y)`` (or another ``.at[idx]`` update).")


def _methods():
  methods = {}
  for room, names in (
      (reductions, ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all",
                    "cumsum", "cumprod", "var", "std", "ptp")),
      (ufuncs, ("clip", "round", "conj", "conjugate")),
      (products, ("dot", "trace")),
      (shapes, ("ravel", "squeeze", "swapaxes", "repeat")),
      (sorting, ("sort", "argsort", "argpartition")),
      (searching, ("nonzero", "searchsorted")),
      (indexing, ("take",)),
      (creation, ("diagonal", "copy"))):
    for name in names:
      methods[name] = getattr(room, name)
  methods["compress"] = lambda x, condition, axis=None, **kw: selection.compress(condition, x,
                                                                                 axis, **kw)
  methods["choose"] = lambda x, choices, mode="raise": selection.choose(x, choices, mode=mode)
  methods["reshape"] = _reshape_method
  methods["transpose"] = _transpose_method
  methods["T"] = property(lambda x: shapes.transpose(x))
  methods["mT"] = property(lambda x: shapes.swapaxes(x, -1, -2))
  methods["real"] = property(ufuncs.real)
  methods["imag"] = property(ufuncs.imag)
  methods["astype"] = _astype_method
  methods["flatten"] = lambda x, order="C": shapes.ravel(x, order)
  methods["at"] = property(_at_property)
  return methods


def _reshape_method(x, *shape, order="C"):
  if len(shape) == 1 and not isinstance(shape[0], int) and hasattr(shape[0], "__iter__"):
    shape = tuple(shape[0])
  return shapes.reshape(x, shape, order=order)


def _transpose_method(x, *axes):
  if len(axes) == 1 and (axes[0] is None or hasattr(axes[0], "__iter__")):
    axes = axes[0]
  return shapes.transpose(x, axes or None)


def _astype_method(x, dtype, copy=False, device=None):
  return shapes.astype(x, dtype)


def _at_property(x):
  return indexing._IndexUpdateHelper(x)


def install():
  for cls in (Array, Tracer):
    for name, fn in {**_operators(), **_methods()}.items():
      setattr(cls, name, fn)
  # Arrays and tracers are unhashable even though they define __eq__.
  Array.__hash__ = Array.__dict__.get("__hash__") or _unhashable
  Tracer.__hash__ = _unhashable


def _unhashable(self):
  raise TypeError(f"unhashable type: {type(self).__name__}")
