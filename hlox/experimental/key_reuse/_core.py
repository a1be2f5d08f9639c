"""The key-reuse checker's API, under JAX's names (``jax.experimental.key_reuse._core``).

A key is *consumed* by a random function that draws from it (``bits``, ``uniform`` ...) or
splits it; ``fold_in`` and ``key_data`` only read it; ``clone`` gives a fresh copy. Each
operation has a ``KeyReuseSignature``; ``jaxpr_type_signature`` composes them over a jaxpr.
"""
from __future__ import annotations

from typing import Any, Callable


from hlox import api
from hlox.core.tracer import eval_trace, trace_ctx
from hlox.config import config
from hlox.errors import KeyReuseError
from hlox.interpreters import key_reuse as _kr
from hlox.interpreters.key_reuse import (DynamicKeyReuseSignature, Forward,
                                         KeyReuseSignature, Sink, Source,
                                         dynamic_key_reuse_signature, key_reuse_signatures)
from hlox.random.key_reuse import Mask, assert_consumed_value_p, consume_p, random_clone_p
from hlox.random.prng import PRNGKeyArray

__all__ = ["Source", "Sink", "Forward", "KeyReuseSignature", "DynamicKeyReuseSignature",
           "dynamic_key_reuse_signature", "key_reuse_signatures", "KeyReuseError",
           "consume", "consume_p", "assert_consumed", "assert_unconsumed",
           "assert_consumed_value_p", "random_clone_p", "jaxpr_type_signature",
           "function_type_signature", "check_key_reuse", "check_key_reuse_jaxpr",
           "key_reuse_signature_from_eqn", "unknown_signature"]


def _data(key):
  return key._base if isinstance(key, PRNGKeyArray) else key


def _rewrap(key, data):
  return PRNGKeyArray(data, key._impl) if isinstance(key, PRNGKeyArray) else data


def consume(key):
  """Mark ``key`` consumed and return it (consumed): a later random use of it, or of the
  result, is a reuse."""
  data = _data(key)
  if trace_ctx.trace is not eval_trace:
    return _rewrap(key, consume_p.bind(data))
  if config._values["debug_key_reuse"]:
    sig = key_reuse_signatures[consume_p]
    _kr.check_call(sig, [data], "consume")
    _kr.update_call(sig, [data], [data])
  return _rewrap(key, data)


def assert_unconsumed(key) -> None:
  """Under ``check_key_reuse``: fail (AssertionError) unless ``key`` is unconsumed here."""
  assert_consumed(key, False)


def assert_consumed(key, value=True) -> None:
  """Under ``check_key_reuse``: fail (AssertionError) unless ``key`` is consumed here
  (``value``: a mask of the key array's shape for partly consumed keys)."""
  if trace_ctx.trace is not eval_trace:
    assert_consumed_value_p.bind(_data(key), value=Mask(value))


def jaxpr_type_signature(jaxpr) -> KeyReuseSignature:
  """The key-reuse signature of a (closed) jaxpr; KeyReuseError where it reuses a key."""
  return _kr.jaxpr_type_signature(jaxpr)


def key_reuse_signature_from_eqn(eqn) -> KeyReuseSignature:
  """The signature of one equation (its primitive's rule, or the default)."""
  return _kr._eqn_signature(eqn, _kr.is_key_var)


def unknown_signature(eqn) -> KeyReuseSignature:
  """The default for primitives without a rule: every key operand is consumed."""
  return KeyReuseSignature(*(Sink(i) for i, v in enumerate(eqn.invars) if _kr.is_key_var(v)))


def function_type_signature(fun: Callable[..., Any], *args: Any) -> KeyReuseSignature:
  """The key-reuse signature of ``fun`` traced with ``args`` (over their leaves)."""
  return _kr.jaxpr_type_signature(api.make_jaxpr(fun)(*args))


def check_key_reuse_jaxpr(jaxpr) -> None:
  """Raise KeyReuseError if ``jaxpr`` uses a key after consuming it."""
  _kr.jaxpr_type_signature(jaxpr)


def check_key_reuse(fun: Callable[..., Any], /, *args: Any) -> None:
  """Trace ``fun(*args)`` and raise KeyReuseError if it uses a key after consuming it
  (whatever the ``debug_key_reuse`` option says)."""
  function_type_signature(fun, *args)


