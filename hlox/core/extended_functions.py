"""Structural functions of ``hlox.numpy`` and ``hlox.lax`` on arrays of extended dtypes
(typed PRNG key arrays).

A key array is not an array of numbers to these libraries: their functions refuse it with a
TypeError. JAX lets the functions that only move elements around (broadcast, concatenate,
stack, transpose, take, where, ...) work on keys, keeping them keys. ``hlox.numpy`` and
``hlox.lax`` declare which of their functions do (``ACCEPTING_KEYS``); the module that
defines the extended dtype (``hlox.random.key_functions``) registers how each acts on its
arrays (``register``).

Each declared function catches the TypeError of the check that refuses its operands and
hands the call to ``refused``. Ordinary calls therefore run no code of this module: a
``try`` costs nothing in Python 3.11 until something raises, where a wrapper around the
function would add a call to every use of it (many are on the eager hot path).
"""
from __future__ import annotations

from hlox.core import dtypes

__all__ = ["refused", "register", "registered"]

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


def refused(namespace: str, name: str, *args, **kwargs):
  """The result of ``namespace.name(*args, **kwargs)``, a call whose operand check raised a
  TypeError, computed by the implementation registered for it when an argument is of an
  extended dtype. Called only from the ``except TypeError:`` clause of that check: with no
  implementation or no such argument, the TypeError being handled is raised again, as the
  function's own error."""
  impl = _impls.get((namespace, name))
  if impl is None or not _has_extended(args, kwargs):
    raise  # the error being handled (in the caller's ``except`` clause)
  return impl(*args, **kwargs)
