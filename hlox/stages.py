"""``hlox.stages``: the types of ahead-of-time compilation's stages (JAX's ``jax.stages``).

``jit(f)`` is a ``Wrapped``; ``jit(f).trace(*args)`` a ``Traced``; ``.lower()`` a
``Lowered`` (``pmap(f).lower(...)`` too); ``.compile()`` a ``Compiled``; the leaves of
``Lowered.args_info`` are ``ArgInfo``. The classes are those of ``hlox.api``, so
``isinstance`` holds for what those calls return.
"""
from __future__ import annotations

from typing import Protocol, Union, runtime_checkable

from hlox.api import ArgInfo, Compiled, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

# What ``Lowered.compile(compiler_options=...)`` takes: XLA option names to values.
CompilerOptions = dict[str, Union[str, bool]]


@runtime_checkable
class Wrapped(Protocol):
  """A function that is traced, lowered and compiled when called (what ``jit`` returns),
  and that can be staged ahead of time: ``trace(*args)`` gives a ``Traced``,
  ``lower(*args)`` a ``Lowered``. (A protocol: ``isinstance`` checks for these methods.)"""

  def __call__(self, *args, **kwargs):
    """Run the function, compiling it for these arguments' types if needed."""
    raise NotImplementedError

  def trace(self, *args, **kwargs) -> Traced:
    """The function traced to a jaxpr for these arguments."""
    raise NotImplementedError

  def lower(self, *args, **kwargs) -> Lowered:
    """The function traced and lowered for these arguments (``trace(...).lower()``)."""
    raise NotImplementedError
