"""``hlox.experimental.fused``: ``fused(out_spaces=...)``, JAX's decorator marking a function
that the compiler must fuse into one kernel, whose results live in the given memory spaces
(``jax.memory.Space``). The primitive and its rules are in ``hlox/lax/fused.py``; as in JAX
it lowers for CUDA only."""
from __future__ import annotations

import functools

from hlox import _tree_transform as tree_util
from hlox.core.avals import MemorySpace
from hlox.core.tracer import get_aval
from hlox.lax.control_flow import _trace_fun
from hlox.lax.fused import fused_p

__all__ = ["fused"]


def fused(*, out_spaces):
  """Decorator: ``fused(out_spaces=(Space.Host, Space.Device))(f)`` traces ``f`` (on
  arguments of memory space ``Any``) into one ``fused_call`` whose i-th flat result lives in
  ``out_spaces[i]``."""
  out_spaces = tuple(out_spaces)
  for s in out_spaces:
    if not isinstance(s, MemorySpace):
      raise TypeError(f"fused: out_spaces must hold jax.memory.Space values, got {s!r}")

  def wrap(f):
    @functools.wraps(f)
    def wrapped(*args):
      leaves, tree = tree_util.tree_flatten(args)
      avals = [get_aval(x).update(memory_space=MemorySpace.Any) for x in leaves]
      # (``closed`` takes the closed-over values as its leading arguments.)
      closed, consts, out_tree = _trace_fun(f, tree, avals, "fused")
      if len(closed.out_avals) != len(out_spaces):
        raise ValueError(f"fused: {getattr(f, '__name__', f)} returns "
                         f"{len(closed.out_avals)} arrays but out_spaces names "
                         f"{len(out_spaces)}")
      outs = fused_p.bind(*consts, *leaves, jaxpr=closed, out_spaces=out_spaces)
      return tree_util.tree_unflatten(out_tree, outs)
    return wrapped
  return wrap

