"""Structural functions of ``hlox.numpy`` and ``hlox.lax`` on arrays of extended dtypes
(typed PRNG key arrays).

A key array is not an array of numbers to these libraries: their functions refuse it with a
TypeError. JAX lets the functions that only move elements around (broadcast, concatenate,
stack, transpose, take, where, ...) work on keys, keeping them keys. ``hlox.numpy`` and
``hlox.lax`` declare which of their functions do (``accepting_extended``); the module that
defines the extended dtype (``hlox.random.key_functions``) registers how each acts on its
arrays (``register``). The check costs nothing until the function has failed.
"""
from __future__ import annotations

import functools

from hlox.core import dtypes

__all__ = ["accepting_extended", "register", "registered"]

_impls: dict = {}  # (namespace, function name) -> implementation for extended arguments


def register(namespace: str, name: str, impl) -> None:
  """``impl(*args, **kwargs)`` runs ``namespace.name`` when an argument is a key array."""
  _impls[(namespace, name)] = impl


def registered(namespace: str) -> set:
  return {name for ns, name in _impls if ns == namespace}


def _has_extended(args, kwargs) -> bool:
  for x in (*args, *kwargs.values()):
    if dtypes.extended_dtype_of(x) is not None:
      return True
    if isinstance(x, (list, tuple)) and any(dtypes.extended_dtype_of(y) is not None
                                            for y in x):
      return True
  return False


def accepting_extended(namespace: str, fun):
  """``fun`` that hands calls with extended-dtype arguments it refused (a TypeError) to the
  registered implementation."""
  name = fun.__name__

  @functools.wraps(fun)
  def call(*args, **kwargs):
    try:
      return fun(*args, **kwargs)
    except TypeError:
      impl = _impls.get((namespace, name))
      if impl is None or not _has_extended(args, kwargs):
        raise
    return impl(*args, **kwargs)
  return call
