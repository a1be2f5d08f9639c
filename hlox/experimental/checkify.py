"""``hlox.experimental.checkify`` (JAX's ``jax.experimental.checkify``): run-time checks
that survive ``jit``, ``vmap``, ``grad`` and control flow by being returned as values.

``check(pred, msg, ...)`` raises eagerly; staged (under ``jit``, in a loop body) it cannot
raise, so it must be *functionalized*: ``checkify(f)`` returns a function giving
``(error, out)``, where ``error.get()`` is the message of the first failed check (or None)
and ``error.throw()`` raises it. ``checkify(f, errors=...)`` also adds automatic checks:
NaNs (``nan_checks``), division by zero (``div_checks``), out-of-bounds indexing
(``index_checks``).

The machinery is ``hlox/interpreters/checkify.py`` (the error value and the interpreter) and
the rules beside the primitives (``lax/checks.py`` for ``check_p`` and the automatic checks).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core.basearray import Array
from hlox.core.jaxpr import trace_to_jaxpr
from hlox.core.traceback_util import api_boundary
from hlox.interpreters import checkify as _checkify
from hlox.interpreters.checkify import (BatchedError, DivisionByZeroError, Error, ErrorEffect,
                                        FailedCheckError, JaxException, JaxRuntimeError,
                                        NaNError, OOBError, assert_func, init_error)
from hlox.lax import elementwise as _ew
from hlox.lax.checks import check_error_value

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks",
           "check", "check_error", "checkify", "debug_check", "div_checks", "float_checks",
           "index_checks", "init_error", "nan_checks", "user_checks", "FailedCheckError",
           "NaNError", "OOBError", "DivisionByZeroError", "BatchedError", "ErrorEffect",
           "JaxException"]

ErrorCategory = type  # an exception class standing for a kind of check (JAX's alias)

user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


def checkify(f: Callable, errors=user_checks) -> Callable:
  """Functionalize the checks of ``f``: the result takes ``f``'s arguments and returns
  ``(error, out)``, ``error`` an ``Error`` for the first check that failed.

  ``errors`` is the set of kinds of check to run: ``user_checks`` (``check`` calls, the
  default), ``nan_checks``, ``div_checks``, ``index_checks``, or unions of them
  (``float_checks``, ``automatic_checks``, ``all_checks``).
  """
  enabled = frozenset(errors)

  @api_boundary
  def checked_fun(*args, **kwargs):
    # The arguments are closed over, not traced as inputs, so that Python values (static
    # arguments, strings) reach ``f`` as they are.
    out_tree = []

    def flat():
      leaves, tree = tree_util.tree_flatten(f(*args, **kwargs))
      out_tree.append(tree)
      return leaves

    closed = trace_to_jaxpr(flat, [], "checkify", "checkify")
    error, outs = _checkify.checkify_jaxpr(closed.jaxpr, closed.consts, enabled, init_error,
                                           [])
    return error, tree_util.tree_unflatten(out_tree[0], outs)

  return checked_fun


def _is_scalar_pred(pred) -> bool:
  return isinstance(pred, bool) or (isinstance(pred, Array) and pred.shape == ()
                                    and np.dtype(pred.dtype) == np.dtype(bool))


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
  if not _is_scalar_pred(pred):
    name = "debug_check" if debug else "check"
    raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
  for arg in tree_util.tree_leaves((fmt_args, fmt_kwargs)):
    if not isinstance(arg, (Array, np.ndarray)):
      raise TypeError("Formatting arguments to checkify.check need to be PyTrees of arrays, "
                      f"but got {arg!r} of type {type(arg)}.")
  failed = np.bool_(not pred) if isinstance(pred, bool) else _ew.bitwise_not(pred)
  new_error = FailedCheckError(_checkify.current_traceback(), msg, *fmt_args, **fmt_kwargs)
  check_error_value(assert_func(init_error, failed, new_error), debug=debug)


def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
  """Fail with ``msg`` (formatted with ``fmt_args``/``fmt_kwargs``, which may be arrays
  computed at run time) when the scalar boolean ``pred`` is false.

  Eagerly this raises ``JaxRuntimeError``; under ``jit`` or in loop bodies it must be
  functionalized by ``checkify``. With ``debug=True`` it is ``debug_check``.
  """
  _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
  """A ``check`` that only acts when functionalized by ``checkify``; otherwise (eagerly,
  under ``jit``) it does nothing."""
  _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error: Error) -> None:
  """Raise ``JaxRuntimeError`` if ``error`` holds a failed check; functionalized by
  ``checkify`` like ``check`` (the inverse of ``checkify``: an error value back into an
  exception)."""
  if not isinstance(error, Error):
    raise TypeError(f"check_error takes an Error as argument, got type {type(error)} "
                    "instead.")
  check_error_value(error)
