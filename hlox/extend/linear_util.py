"""``jax.extend.linear_util``: functions wrapped with a stack of transformations, the way
code that drives hlox's tracing machinery directly hands a function to it (flax's lifted
``scan`` wraps its body with ``wrap_init`` and flattens it with
``jax.api_util.flatten_fun_nokwargs`` before partially evaluating it).

A ``WrappedFun`` holds the user's function ``f`` and ``f_transformed``, the same function
with the transformations applied so far; ``call_wrapped`` calls the latter. A
transformation with auxiliary output writes that output into a ``Store`` that the caller
reads after the call (``flatten_fun``'s output tree structure).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["StoreException", "WrappedFun", "transformation2", "transformation_with_aux2",
           "wrap_init"]


class StoreException(Exception):
  """A ``Store`` was read before the wrapped function ran, or written twice."""


class Store:
  """One value written by a transformation while the wrapped function runs."""

  __slots__ = ("_val",)
  _EMPTY = object()

  def __init__(self):
    self._val = Store._EMPTY

  def store(self, val) -> None:
    if self._val is not Store._EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  @property
  def val(self):
    if self._val is Store._EMPTY:
      raise StoreException("Store empty: the wrapped function has not been called")
    return self._val


class WrappedFun:
  """``f`` with transformations applied (``f_transformed``), its keyword ``params`` and
  ``debug_info`` (what it was traced for, for error messages)."""

  __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "debug_info")

  def __init__(self, f, f_transformed, transforms, stores, params, debug_info):
    self.f = f
    self.f_transformed = f_transformed
    self.transforms = transforms
    self.stores = stores
    self.params = params
    self.debug_info = debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def call_wrapped(self, *args, **kwargs):
    """Call the transformed function. A function with stores (auxiliary outputs) is called
    once: a second call raises ``StoreException`` as its transformation writes again."""
    return self.f_transformed(*args, **kwargs)

  def __repr__(self):
    return f"Wrapped function {self.__name__} ({len(self.transforms)} transformations)"


def wrap_init(f: Callable, params=None, *, debug_info=None) -> WrappedFun:
  """Wrap ``f`` (called with ``params`` as keyword arguments) for transformations."""
  params = dict(params or {})
  f_transformed = functools.partial(f, **params) if params else f
  return WrappedFun(f, f_transformed, (), (), tuple(sorted(params.items())), debug_info)


def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args) -> WrappedFun:
  """``fun`` transformed by ``gen``: calling the result calls
  ``gen(inner, *gen_static_args, *args, **kwargs)`` where ``inner`` is ``fun``'s
  transformed function."""
  return WrappedFun(fun.f, functools.partial(gen, fun.f_transformed, *gen_static_args),
                    ((gen, gen_static_args), *fun.transforms), (None, *fun.stores),
                    fun.params, fun.debug_info)


def transformation_with_aux2(gen: Callable, fun: WrappedFun, *gen_static_args,
                             use_eq_store: bool = False) -> tuple[WrappedFun, Callable[[], Any]]:
  """As ``transformation2``, with a ``Store`` passed to ``gen`` after ``inner``; returns the
  new function and a thunk that reads the store once the function has run."""
  del use_eq_store  # stores compare by identity here; the flag only matters to JAX's caches
  store = Store()
  wrapped = WrappedFun(fun.f, functools.partial(gen, fun.f_transformed, store, *gen_static_args),
                       ((gen, gen_static_args), *fun.transforms), (store, *fun.stores),
                       fun.params, fun.debug_info)
  return wrapped, lambda: store.val
