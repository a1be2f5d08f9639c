"""``hlox.Array``: the public array type, which every kind of hlox array is an instance of.

As ``jax.Array``, it is an abstract base class: device-resident arrays (the runtime's
``Array``) and tracers (the values a function sees under ``jit``, ``grad``, ``vmap``) are
registered as its virtual subclasses, so ``isinstance(x, hlox.Array)`` holds inside and outside
transformations. Inside hlox, code that needs a concrete array checks the runtime's class.
"""
from __future__ import annotations

import abc

__all__ = ["Array"]


class Array(abc.ABC):
  """The type of hlox arrays: concrete device arrays and tracers alike (see ``jax.Array``)."""

  __slots__ = ()
  __module__ = "hlox"
