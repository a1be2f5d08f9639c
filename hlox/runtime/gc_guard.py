"""``array_garbage_collection_guard`` (JAX's option): report Arrays freed by Python's cycle
collector rather than by reference counting.

An Array caught in a reference cycle keeps its device memory until the collector runs; JAX
can log (``'log'``) or abort on (``'fatal'``) such an Array, and by default (``'allow'``,
or unset) says nothing. While the option is ``'log'`` or ``'fatal'``, ``ArrayImpl`` has a
finalizer and a ``gc.callbacks`` hook marks when a collection is running: an Array finalized
during one was part of, or reachable only from, a cycle. With the option off neither exists,
so freeing an Array costs nothing extra.
"""
from __future__ import annotations

import gc
import os
import sys

from hlox.config import config

__all__ = ["MESSAGE"]

MESSAGE = ("`jax.Array` was deleted by the Python garbage collector instead of reference "
           "counting. Break the reference cycle that holds this `jax.Array` (an object that "
           "refers to itself through attributes, closures or containers) so that its device "
           "memory is freed as soon as it is no longer used.")

_collecting = [False]


def _on_collection(phase, info):
  _collecting[0] = phase == "start"


def _finalize(self):
  if _collecting[0]:
    mode = config._values.get("array_garbage_collection_guard")
    shape = getattr(getattr(self, "aval", None), "str_short", lambda: "?")()
    sys.stderr.write(f"E hlox: {MESSAGE} Array: {shape}\n")
    if mode == "fatal":
      sys.stderr.flush()
      os.abort()


def _apply(mode) -> None:
  from hlox.runtime.array import ArrayImpl
  on = mode in ("log", "fatal")
  if on and "__del__" not in ArrayImpl.__dict__:
    ArrayImpl.__del__ = _finalize
    gc.callbacks.append(_on_collection)
  elif not on and "__del__" in ArrayImpl.__dict__:
    del ArrayImpl.__del__
    gc.callbacks.remove(_on_collection)
    _collecting[0] = False


def _on_config_change(name, value):
  if name == "array_garbage_collection_guard":
    _apply(value)


config.add_watcher(_on_config_change)
_apply(config._values.get("array_garbage_collection_guard"))  # set by the environment
