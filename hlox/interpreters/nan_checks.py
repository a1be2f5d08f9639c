"""``debug_nans`` / ``debug_infs``: NaN and inf checks on computed values, and the
de-optimized re-runs that name the operation that produced one.

With either option on, the eager dispatch (``xla.apply_primitive``) checks every primitive's
outputs, and every jitted call checks its outputs. What happens on an invalid value:

- out of a ``jit``-wrapped Python function called by the user: as in JAX, the function
  itself runs again without ``jit`` (``api._call_deoptimized``); the error then comes from
  the eager operation that made the value, on the user's line (or is Python's own, e.g.
  ``ZeroDivisionError`` for Python floats);
- out of a jitted call made from a jaxpr (a ``jit`` equation evaluated eagerly, as under
  ``grad``): its jaxpr is evaluated equation by equation with eager primitives
  (``eval_deoptimized``), the outputs of each checked, nested calls and control flow opened
  the same way (``deoptimized_rules``), so that the error names the first primitive that
  produced the value and the line that called it;
- out of an eager primitive that holds jaxprs (a loop, a branch): that primitive is opened
  the same way (``CheckedEager``).

Nothing here runs while both options are off: the callers build checking entries for their
caches only while ``enabled`` is set, and drop their caches when it changes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from hlox.config import config
from hlox.core import dtypes
from hlox.core import source_info as source_info_lib
from hlox.core.jaxpr import Literal, literal_value

__all__ = ["enabled", "find_invalid", "invalid_value_error", "eval_deoptimized",
           "deoptimized_rules", "CheckedCall", "CheckedEager"]

enabled = bool(config.debug_nans or config.debug_infs)

# primitive -> rule(*args, **params) -> list of outputs: how the de-optimized re-run opens a
# primitive that holds jaxprs (a nested jit call, scan, while, cond), running them with
# ``eval_deoptimized`` so that an invalid value inside is traced to its own equation.
# Registered beside each primitive in ``lax/``.
deoptimized_rules: dict = {}


def _on_config_change(name, value):
  global enabled
  if name in ("debug_nans", "debug_infs"):
    enabled = bool(config._values["debug_nans"] or config._values["debug_infs"])

config.add_watcher(_on_config_change)


# Above zero while the de-optimized re-run evaluates an operation whose inputs already hold
# an invalid value: the eager checks let its outputs through.
_unchecked = [0]


def find_invalid(values: Sequence) -> str | None:
  """``"nan"`` or ``"inf"`` if one of ``values`` (arrays) holds one that the options check
  for (floating and complex dtypes only), else None."""
  nans, infs = config._values["debug_nans"], config._values["debug_infs"]
  for x in values:
    dtype = getattr(x, "dtype", None)
    if dtype is None:
      x = np.asarray(x)
      dtype = x.dtype
    if not dtypes.is_inexact(dtype):
      continue
    host = np.asarray(x)
    if nans and np.isnan(host).any():
      return "nan"
    if infs and np.isinf(host).any():
      return "inf"
  return None


def check_sharded(outs: Sequence) -> None:
  """JAX's error when a computation over several devices (``pmap``, a sharded ``jit``)
  gives an invalid value; there is no de-optimized re-run to name the operation."""
  kind = find_invalid(outs)
  if kind is not None:
    raise FloatingPointError(f"Invalid value ({kind}) encountered in sharded computation.")


def invalid_value_error(name: str, kind: str, where=None) -> FloatingPointError:
  """JAX's error for an invalid value out of primitive ``name``, with the user's line
  (``where``: an equation's ``source_info``) when known.

  The error carries ``_hlox_where`` (the line, or None): the de-optimized re-run adds the
  line of the equation it was evaluating to one raised without it (by the eager check)."""
  msg = f"invalid value ({kind}) encountered in {name}"
  if where is not None:
    msg += f" at {where}"
  err = FloatingPointError(msg)
  err._hlox_where = where
  err._hlox_name, err._hlox_kind = name, kind
  return err


def _eqn_label(eqn) -> str:
  name = eqn.params.get("name")
  return f"{eqn.primitive.name}({name})" if isinstance(name, str) else eqn.primitive.name


def eval_deoptimized(jaxpr, consts: Sequence, args: Sequence, host_args=()) -> list:
  """Evaluate ``jaxpr`` equation by equation on eager primitives, checking every output;
  raises ``FloatingPointError`` at the first equation that produced an invalid value,
  naming its primitive and ``source_info``. Equations with a rule in ``deoptimized_rules``
  are opened (their inner equations evaluated the same way) and the error then says which
  equation it was inside.

  ``host_args`` are the positions of arguments given as host values (Python or NumPy
  scalars and arrays). An invalid value among them came in with the inputs: the function
  without ``jit`` would have done its arithmetic on it in Python or NumPy, unchecked. So
  the operations that depend on such a value run unchecked and are never blamed."""
  _deoptimizing[0] += 1
  try:
    return _eval_deoptimized(jaxpr, consts, args, host_args)
  finally:
    _deoptimizing[0] -= 1


# Above zero while ``eval_deoptimized`` runs: eager checks leave the line to it.
_deoptimizing = [0]


def _eval_deoptimized(jaxpr, consts, args, host_args):
  env = {}
  tainted = {v for i, v in enumerate(jaxpr.invars)
             if i in host_args and find_invalid([args[i]]) is not None}

  def read(v):
    return literal_value(v) if type(v) is Literal else env[v]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    invals = [read(v) for v in eqn.invars]
    rule = deoptimized_rules.get(eqn.primitive)
    where = str(eqn.source_info) if eqn.source_info is not None else None
    passed_on = bool(tainted) and any(type(v) is not Literal and v in tainted
                                      for v in eqn.invars)
    if passed_on:
      tainted.update(eqn.outvars)
    try:
      if rule is not None and not passed_on:
        outs = rule(*invals, **eqn.params)
      elif passed_on:
        _unchecked[0] += 1
        try:
          outs = eqn.primitive.bind(*invals, **eqn.params)
        finally:
          _unchecked[0] -= 1
      else:
        outs = eqn.primitive.bind(*invals, **eqn.params)
    except FloatingPointError as e:
      if not hasattr(e, "_hlox_where"):  # someone else's error (a callback's): as it is
        raise
      if e._hlox_where is None:  # from the eager check: this equation's line
        raise invalid_value_error(e._hlox_name, e._hlox_kind, where) from None
      if rule is not None and where is not None:  # from inside: say where that was
        err = FloatingPointError(f"{e}, inside {_eqn_label(eqn)} at {where}")
        err._hlox_where, err._hlox_name, err._hlox_kind = where, e._hlox_name, e._hlox_kind
        raise err from None
      raise
    outs = list(outs) if eqn.primitive.multiple_results else [outs]
    kind = None if passed_on else find_invalid(outs)
    if kind is not None:
      raise invalid_value_error(eqn.primitive.name, kind, where)
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def _no_invalid_in_deoptimized(name: str, kind: str) -> FloatingPointError:
  return FloatingPointError(
      f"invalid value ({kind}) encountered in the output of jit({name}). Because "
      "config.debug_nans and/or config.debug_infs is set, the de-optimized function (the "
      "function as if the `jit` decorator were removed, run one operation at a time) was "
      "run to find the operation that produced it. However, the de-optimized function did "
      "not produce invalid values during its execution. XLA's optimizations of the "
      "compiled function may have produced the value, or it came in with the inputs or is "
      "a literal output (`hlox.jit(lambda x: hlox.numpy.nan)(x)`).\n\nRemoving the `jit` "
      "may avoid the invalid value, at the cost of its optimizations.")


class CheckedCall:
  """A compiled jitted call that checks its outputs (stands in for a ``CompiledCall`` while
  the checks are on; same attributes). On an invalid value it re-runs the jaxpr
  de-optimized and raises what that finds, marked ``_hlox_jit_output`` (the kind, "nan" or
  "inf"): a ``jit``-wrapped Python function called by the user then runs the function
  itself de-optimized, as JAX does (``api._call_deoptimized``), and raises what that
  finds instead.""" 

  replicated = False

  def __init__(self, call, closed, name: str):
    self.call = call
    self.closed = closed
    self.name = name
    self.executable = call.executable
    self.kept = call.kept
    self.out_avals = call.out_avals
    self.device = call.device
    self.device_key = call.device_key
    self.fast = self.__call__

  def __call__(self, args: Sequence) -> list:
    outs = self.call(args)
    kind = find_invalid(outs)
    if kind is None:
      return outs
    try:
      host = {i for i, x in enumerate(args) if not hasattr(x, "aval")}
      eval_deoptimized(self.closed.jaxpr, self.closed.consts, list(args), host)
    except FloatingPointError as e:
      if not hasattr(e, "_hlox_where"):
        raise
      err = FloatingPointError(str(e))  # afresh: without the re-run's frames
      err._hlox_where, err._hlox_name, err._hlox_kind = e._hlox_where, e._hlox_name, e._hlox_kind
      err._hlox_jit_output = kind
      raise err from None
    err = _no_invalid_in_deoptimized(self.name, kind)
    err._hlox_jit_output = kind
    raise err


class CheckedEager:
  """An eager primitive's cache entry that checks the primitive's outputs: ``run(args)``
  gives the list of output Arrays. The error names the primitive, as JAX's eager check does;
  one that holds jaxprs (a loop, a branch, a custom rule) is opened first, de-optimized, so
  the error names the operation inside that made the value, and its line."""

  __slots__ = ("run", "name", "primitive", "params")

  def __init__(self, run, name: str, primitive=None, params=None):
    self.run = run
    self.name = name
    self.primitive = primitive
    self.params = params

  def __call__(self, args: Sequence) -> list:
    outs = self.run(args)
    if _unchecked[0]:
      return outs
    kind = find_invalid(outs)
    if kind is not None:
      rule = deoptimized_rules.get(self.primitive)
      if rule is not None and not _deoptimizing[0]:
        self._open(rule, args)
      raise invalid_value_error(self.name, kind)
    return outs

  def _open(self, rule, args):
    """Re-run this primitive's jaxprs equation by equation; raises what that finds, said to
    be inside this primitive at the user's line."""
    where = source_info_lib.current()
    _deoptimizing[0] += 1
    try:
      rule(*args, **self.params)
    except FloatingPointError as e:
      if getattr(e, "_hlox_where", None) is None:
        raise
      err = FloatingPointError(f"{e}, inside {self.name} at {where}" if where else str(e))
      err._hlox_where, err._hlox_name, err._hlox_kind = e._hlox_where, e._hlox_name, e._hlox_kind
      raise err from None
    finally:
      _deoptimizing[0] -= 1
