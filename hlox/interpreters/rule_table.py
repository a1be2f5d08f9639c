"""Rule tables that take rules written for JAX as JAX calls them.

hlox's interpreters hand a rule its operands (primals, tangents, batched values, batch
dimensions) as lists, which hlox's own rules may edit in place. JAX hands tuples, and rules
written for JAX (a library's primitives, registered through ``jax.interpreters.ad`` or
``batching``) may rely on that: ``primals + (x,)``, or passing ``dims`` on as ``vmap``'s
axes, which must match the results' container type. A ``RuleTable`` wraps each rule
registered from outside hlox so that it receives tuples; hlox's own rules are stored as
they are. Lookups are plain ``dict`` lookups (the interpreters' hot path)."""
from __future__ import annotations

import functools

__all__ = ["RuleTable", "written_in_hlox"]


def written_in_hlox(rule) -> bool:
  """Whether ``rule`` (a function, possibly behind ``functools.partial``) is hlox's own."""
  fn = rule
  while isinstance(fn, functools.partial):
    fn = fn.func
  module = getattr(fn, "__module__", None) or ""
  return module == "hlox" or module.startswith("hlox.")


class RuleTable(dict):
  """A ``dict`` of rules whose two leading sequence arguments reach rules written outside
  hlox as tuples (``leading``: how many positional arguments precede them)."""

  def __init__(self, leading: int = 0):
    super().__init__()
    self._leading = leading

  def __setitem__(self, primitive, rule):
    if not written_in_hlox(rule):
      rule = _with_tuples(rule, self._leading)
    super().__setitem__(primitive, rule)


def _with_tuples(rule, leading: int):
  if leading == 0:
    def adapted(first, second, **params):
      return rule(tuple(first), tuple(second), **params)
  else:
    def adapted(*args, **params):
      head, (first, second) = args[:leading], args[leading:]
      return rule(*head, tuple(first), tuple(second), **params)
  adapted.__wrapped__ = rule
  return adapted
