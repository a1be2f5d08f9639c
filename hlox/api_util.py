"""``jax.api_util``: the argument handling that code driving hlox's tracing machinery
directly uses (flax's lifted ``scan`` flattens its body with ``flatten_fun_nokwargs`` and
names it with ``debug_info`` before partially evaluating it).

``flatten_fun``/``flatten_fun_nokwargs`` turn a ``linear_util.WrappedFun`` of pytrees into
one of flat lists of leaves, and hand back a thunk that gives the output's tree structure
once the function has run.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

from hlox.extend import linear_util as lu
from hlox.tree_util import tree_flatten, tree_unflatten

__all__ = ["DebugInfo", "debug_info", "flatten_fun", "flatten_fun_nokwargs"]


class DebugInfo(NamedTuple):
  """What a function is traced for (``"jit"``, ``"flax scan"``...), where it is defined,
  and the names of its arguments, for error messages."""
  traced_for: str
  func_src_info: str | None
  arg_names: tuple[str, ...] | None
  result_paths: tuple[str, ...] | None = None


def _src_info(fun: Callable) -> str | None:
  name = getattr(fun, "__name__", type(fun).__name__)
  try:
    file, line = inspect.getsourcefile(fun), inspect.getsourcelines(fun)[1]
  except (TypeError, OSError):
    return name
  return f"{name} at {file}:{line}"


def debug_info(traced_for: str, fun: Callable, args, kwargs, *, static_argnums=(),
               static_argnames=(), result_paths_thunk=None, sourceinfo=None,
               signature=None) -> DebugInfo:
  """A ``DebugInfo`` for tracing ``fun(*args, **kwargs)`` for ``traced_for``; argument
  names come from ``fun``'s signature where it has one (static arguments left out)."""
  del result_paths_thunk
  if signature is None:
    try:
      signature = inspect.signature(fun)
    except (TypeError, ValueError):
      signature = None
  arg_names = None
  if signature is not None:
    try:
      bound = signature.bind(*args, **kwargs)
      arg_names = tuple(name for i, name in enumerate(bound.arguments)
                        if i not in static_argnums and name not in static_argnames)
    except TypeError:
      arg_names = None
  return DebugInfo(traced_for, sourceinfo or _src_info(fun), arg_names)


def _flatten_fun(f, store, in_tree, *args_flat):
  py_args, py_kwargs = tree_unflatten(in_tree, args_flat)
  leaves, out_tree = tree_flatten(f(*py_args, **py_kwargs))
  store.store(out_tree)
  return leaves


def _flatten_fun_nokwargs(f, store, in_tree, *args_flat):
  leaves, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args_flat)))
  store.store(out_tree)
  return leaves


def flatten_fun(fun: lu.WrappedFun, in_tree) -> tuple[lu.WrappedFun, Callable[[], Any]]:
  """``fun`` taking the leaves of ``(args, kwargs)`` (structure ``in_tree``) and returning
  the leaves of its output; the thunk gives the output's structure after a call."""
  return lu.transformation_with_aux2(_flatten_fun, fun, in_tree)


def flatten_fun_nokwargs(fun: lu.WrappedFun, in_tree) -> tuple[lu.WrappedFun,
                                                               Callable[[], Any]]:
  """As ``flatten_fun`` for a function of positional arguments (``in_tree`` is the
  structure of the argument tuple)."""
  return lu.transformation_with_aux2(_flatten_fun_nokwargs, fun, in_tree)
