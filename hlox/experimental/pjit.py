"""``hlox.experimental.pjit`` (JAX's ``jax.experimental.pjit``): ``pjit``, the old name of
``jit`` with ``in_shardings``/``out_shardings``, kept for programs written against it.

As in JAX it is deprecated: reading ``pjit`` from this module warns (DeprecationWarning)
and gives a function that forwards to ``hlox.jit``.
"""
from __future__ import annotations

import warnings

from hlox.api import jit

_UNSPECIFIED = object()  # an argument the caller left out (None is a value of its own)


def _pjit(fun, in_shardings=_UNSPECIFIED, out_shardings=_UNSPECIFIED, static_argnums=None,
          static_argnames=None, donate_argnums=None, donate_argnames=None,
          keep_unused: bool = False, device=None, backend=None, inline: bool = False,
          compiler_options=None):
  """``jit(fun, ...)`` under its old name, with the same arguments (positional ones after
  ``fun`` allowed, as ``pjit`` took them)."""
  options = dict(static_argnums=static_argnums, static_argnames=static_argnames,
                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                 keep_unused=keep_unused, inline=inline)
  if in_shardings is not _UNSPECIFIED:
    options["in_shardings"] = in_shardings
  if out_shardings is not _UNSPECIFIED:
    options["out_shardings"] = out_shardings
  for name, value in (("device", device), ("backend", backend),
                      ("compiler_options", compiler_options)):
    if value is not None:
      options[name] = value
  return jit(fun, **options)


_pjit.__name__ = _pjit.__qualname__ = "pjit"


def __getattr__(name):
  if name == "pjit":
    warnings.warn("jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` "
                  "instead.", DeprecationWarning, stacklevel=2)
    return _pjit
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted({*globals(), "pjit"})
