"""Key-reuse checking: which typed PRNG keys a jaxpr consumes, creates and passes through.

hlox erases typed keys to their ``uint32`` data when it traces, so a jaxpr does not say
which of its variables are keys. Three things tell this analysis:

* ``note_key(tracer)``: ``random``'s key arrays report the variable under the data of every
  key built during a trace (arguments, results of key operations, indexing); it is kept in a
  weak registry of variables (``is_key_var``).
* marker primitives (``random`` registers them): identity operations named for what a random
  function does to its key (``random_bits`` consumes it, ``random_fold_in`` reads it ...),
  bound on the key's data before the function's own operations, which then read the marker's
  result, not the key. Their operands are keys by definition.
* the rule table ``key_reuse_signatures``: per primitive, a ``KeyReuseSignature`` (or a
  ``DynamicKeyReuseSignature`` computed from the equation: calls and loops read their
  jaxprs). Primitives without an entry consume every key operand.

A signature lists ``Sink(i, mask)`` (operand ``i`` is consumed where ``mask`` holds),
``Source(j)`` (result ``j`` is a fresh key) and ``Forward(i, j)`` (result ``j`` is operand
``i``, its consumption included). ``jaxpr_type_signature`` computes a jaxpr's signature and
raises ``KeyReuseError`` where a consumed key is consumed again. Eagerly (the
``debug_key_reuse`` option), ``consumed``/``set_consumed`` keep the consumption of concrete key
data, and ``check_call``/``update_call`` apply a jitted program's signature around its call.

This interpreter knows no primitive: ``hlox.random.key_reuse`` fills the table.
"""
from __future__ import annotations

import weakref
from collections import defaultdict
from functools import reduce
from typing import Callable, NamedTuple

import numpy as np

from hlox.core import dtypes
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from hlox.errors import KeyReuseError

__all__ = ["Source", "Sink", "Forward", "KeyReuseSignature", "DynamicKeyReuseSignature",
           "dynamic_key_reuse_signature", "key_reuse_signatures", "keyed_primitives",
           "note_key", "is_key_var", "jaxpr_type_signature", "consumed", "set_consumed",
           "check_call", "update_call"]


# --- signatures ------------------------------------------------------------------------------

def _normal_mask(mask):
  """A mask as signatures keep it: True/False when uniform (an empty one is False: nothing
  to consume), else a read-only boolean array."""
  if isinstance(mask, (bool, np.bool_)):
    return bool(mask)
  mask = np.asarray(mask)
  if mask.dtype != np.bool_:
    raise TypeError(f"a key-reuse mask must be boolean, got {mask.dtype}")
  if mask.size == 0 or not mask.any():
    return False
  if mask.all():
    return True
  mask = mask.copy()  # the caller's array stays writeable and is not aliased
  mask.flags.writeable = False
  return mask


class _Endpoint:
  """An operand (``Sink``) or result (``Source``) index with the mask of keys it covers.
  Immutable and hashable; equal when class, index and mask agree."""
  __slots__ = ("idx", "mask")

  def __init__(self, idx: int, mask=True):
    if not isinstance(idx, (int, np.integer)):
      raise TypeError(f"{type(self).__name__}: index must be an int, got {idx!r}")
    object.__setattr__(self, "idx", int(idx))
    object.__setattr__(self, "mask", _normal_mask(mask))

  def __setattr__(self, name, value):
    raise ValueError(f"{type(self).__name__} is immutable")

  def _mask_key(self):
    m = self.mask
    return m if isinstance(m, bool) else (m.shape, tuple(m.ravel().tolist()))

  def __eq__(self, other):
    return (type(self) is type(other) and self.idx == other.idx
            and self._mask_key() == other._mask_key())

  def __hash__(self):
    return hash((type(self).__name__, self.idx, self._mask_key()))

  def _order(self):
    return (type(self).__name__, self.idx)

  def __lt__(self, other):
    if isinstance(other, Forward):
      return True  # sinks and sources print before forwards
    if isinstance(other, _Endpoint):
      return self._order() < other._order()
    return NotImplemented

  def __repr__(self):
    if self.mask is True:
      return f"{type(self).__name__}({self.idx})"
    return f"{type(self).__name__}({self.idx}, {self.mask})"


class Sink(_Endpoint):
  """Operand ``idx`` is consumed (where ``mask`` holds, for an array of keys)."""
  __slots__ = ()


class Source(_Endpoint):
  """Result ``idx`` is a fresh, unconsumed key."""
  __slots__ = ()


class Forward(NamedTuple):
  """Result ``out_idx`` is operand ``in_idx`` (they share their consumption)."""
  in_idx: int
  out_idx: int

  def __repr__(self):
    return f"Forward({self.in_idx}, {self.out_idx})"

  def __lt__(self, other):
    if isinstance(other, _Endpoint):
      return False
    return tuple.__lt__(self, other)


class KeyReuseSignature:
  """What an operation does to keys: a set of ``Sink``, ``Source`` and ``Forward``."""
  __slots__ = ("_args",)

  def __init__(self, *args):
    self._args = frozenset(args)

  def __repr__(self):
    return f"KeyReuseSignature{tuple(sorted(self._args))}"

  def __eq__(self, other):
    return isinstance(other, KeyReuseSignature) and self._args == other._args

  def __hash__(self):
    return hash(self._args)

  @property
  def sinks(self):
    return [a for a in self._args if isinstance(a, Sink)]

  @property
  def sources(self):
    return [a for a in self._args if isinstance(a, Source)]

  @property
  def forwards(self):
    return [a for a in self._args if isinstance(a, Forward)]


class DynamicKeyReuseSignature(NamedTuple):
  """A signature computed per equation: ``signature(eqn, keys_in)``, where ``keys_in`` says
  which operands the caller knows to be keys (for the jaxprs of calls and loops)."""
  signature: Callable


def dynamic_key_reuse_signature(f: Callable) -> DynamicKeyReuseSignature:
  """Decorator: ``f(eqn, keys_in) -> KeyReuseSignature`` as a table entry."""
  return DynamicKeyReuseSignature(f)


# Primitive -> KeyReuseSignature | DynamicKeyReuseSignature (``hlox.random.key_reuse`` fills it).
key_reuse_signatures: dict = {}
# Primitives whose sinks are keys by definition (the markers): their operands need not be
# known keys to be consumed. Other table entries (``dynamic_update_slice``'s ``Sink(1)``)
# consume an operand only when it is a key.
keyed_primitives: set = set()
# The marker ``assert_consumed_value`` (``check(eqn, consumed)`` raises AssertionError).
consumption_asserts: dict = {}


# --- which variables are keys ----------------------------------------------------------------

_KEY_VARS: "weakref.WeakSet" = weakref.WeakSet()


def note_key(data) -> None:
  """Record that traced ``data`` holds keys: the variable of the jaxpr tracer under it
  (through batching and JVP tracers) joins the registry."""
  for _ in range(8):
    var = getattr(data, "_var", None)
    if var is not None and not isinstance(var, Literal):
      _KEY_VARS.add(var)
      return
    inner = getattr(data, "val", None)  # a BatchTracer's stack
    if inner is None:
      inner = getattr(data, "primal", None)  # a JVPTracer's primal
    if inner is None:
      return
    data = inner


def is_key_var(var) -> bool:
  """Whether ``var`` holds keys: key data recorded during a trace, or a typed key (a jaxpr
  traced from key-typed avals, ``make_jaxpr(f)(ShapeDtypeStruct((), key_dtype))``)."""
  return not isinstance(var, Literal) and (var in _KEY_VARS or _is_typed_key(var))


def _is_typed_key(var) -> bool:
  dtype = getattr(getattr(var, "aval", None), "dtype", None)
  return isinstance(dtype, dtypes.ExtendedDType) and dtypes.issubdtype(dtype, dtypes.prng_key)


def _key_shape(var):
  """The shape of the keys a key-data variable holds (its trailing axis is the key data:
  every registered implementation has one-dimensional key data)."""
  return tuple(var.aval.shape[:-1])


# --- the analysis ----------------------------------------------------------------------------

# id(jaxpr) -> (jaxpr, {keys_in: signature}); the jaxpr is held so its id stays its own.
_SIGNATURES: dict = {}


def jaxpr_type_signature(jaxpr, keys_in=None) -> KeyReuseSignature:
  """The key-reuse signature of ``jaxpr`` (a ``Jaxpr`` or ``ClosedJaxpr``) over its inputs
  (invars, then constvars) and outputs; ``KeyReuseError`` where it consumes a consumed key.
  ``keys_in``: which invars the caller knows hold keys (defaults: those recorded)."""
  if isinstance(jaxpr, ClosedJaxpr):
    jaxpr = jaxpr.jaxpr
  if not isinstance(jaxpr, Jaxpr):
    raise TypeError(f"jaxpr_type_signature: expected a jaxpr, got {type(jaxpr).__name__}")
  hint = tuple(bool(k) for k in keys_in) if keys_in is not None else ()
  entry = _SIGNATURES.get(id(jaxpr))
  if entry is None or entry[0] is not jaxpr:
    if len(_SIGNATURES) > 512:
      _SIGNATURES.clear()
    entry = _SIGNATURES[id(jaxpr)] = (jaxpr, {})
  per_jaxpr = entry[1]
  sig = per_jaxpr.get(hint)
  if sig is None:
    sig = per_jaxpr[hint] = _analyse(jaxpr, hint)
  return sig


def _analyse(jaxpr: Jaxpr, hint) -> KeyReuseSignature:
  consumed: dict = {}   # var -> bool | mask: which of its keys are consumed
  forwards: dict = {}   # var -> the var it is (a forwarded result)
  keys = {v for v, k in zip(jaxpr.invars, hint) if k}  # vars known here to hold keys

  def resolve(v):
    for _ in range(len(forwards) + 1):
      if isinstance(v, Literal) or v not in forwards:
        return v
      v = forwards[v]
    raise ValueError("forwarding cycle in a jaxpr")

  def is_key(v):
    if isinstance(v, Literal):
      return False
    return v in keys or is_key_var(v) or resolve(v) in keys

  def sink(v, mask, known):
    if isinstance(v, Literal) or not (known or is_key(v)):
      return False
    r = resolve(v)
    keys.add(r)
    before = consumed.get(r, False)
    if np.any(np.logical_and(before, mask)):
      return True
    consumed[r] = np.logical_or(before, mask)
    return False

  for eqn in jaxpr.eqns:
    prim = eqn.primitive
    sig = _eqn_signature(eqn, is_key)
    check = consumption_asserts.get(prim)
    if check is not None:
      check(eqn, consumed.get(resolve(eqn.invars[0]), False))
    known = prim in keyed_primitives or isinstance(key_reuse_signatures.get(prim),
                                                   DynamicKeyReuseSignature)
    for f in sig.forwards:
      forwards[eqn.outvars[f.out_idx]] = eqn.invars[f.in_idx]
    touched = False
    for s in sig.sinks:
      if not 0 <= s.idx < len(eqn.invars):
        raise KeyReuseError(f"In {prim}, sink {s.idx} out of range [0, {len(eqn.invars)}]")
      if sink(eqn.invars[s.idx], s.mask, known):
        raise KeyReuseError(f"In {prim}, argument {s.idx} is already consumed.")
      touched = True
    if not touched:
      touched = any(is_key(v) for v in eqn.invars)
    # A key result that no rule forwards or sources: consumed when the operation read keys
    # (an unknown operation on keys), fresh when it made keys from plain data (the data of
    # ``split``'s or ``fold_in``'s results is computed from the marker's plain result).
    for v in eqn.outvars:
      if v not in forwards:
        consumed[v] = touched
    for s in sig.sources:
      if not 0 <= s.idx < len(eqn.outvars):
        raise KeyReuseError(f"In {prim}, source {s.idx} out of range "
                            f"[0, {len(eqn.outvars)}]")
      out = eqn.outvars[s.idx]
      keys.add(out)
      consumed[resolve(out)] = False

  inputs = [*jaxpr.invars, *jaxpr.constvars]
  index = {v: i for i, v in enumerate(inputs)}
  parts = [Sink(i, consumed[v]) for i, v in enumerate(inputs)
           if v in consumed and np.any(consumed[v])]
  for j, v in enumerate(jaxpr.outvars):
    if not is_key(v):
      continue
    r = resolve(v)
    if r in index:
      parts.append(Forward(index[r], j))
    elif not np.any(consumed.get(r, False)):
      parts.append(Source(j))
  return KeyReuseSignature(*parts)


def _eqn_signature(eqn, is_key) -> KeyReuseSignature:
  rule = key_reuse_signatures.get(eqn.primitive)
  if isinstance(rule, KeyReuseSignature):
    return rule
  if isinstance(rule, DynamicKeyReuseSignature):
    return rule.signature(eqn, [is_key(v) for v in eqn.invars])
  # No rule: a call-like primitive with one jaxpr taking the operands is that jaxpr;
  # anything else consumes the keys it reads.
  inner = _sole_call_jaxpr(eqn)
  if inner is not None:
    return jaxpr_type_signature(inner, [is_key(v) for v in eqn.invars])
  return KeyReuseSignature(*(Sink(i) for i, v in enumerate(eqn.invars) if is_key(v)))


def _sole_call_jaxpr(eqn):
  found = [p for p in eqn.params.values() if isinstance(p, (ClosedJaxpr, Jaxpr))]
  if len(found) != 1:
    return None
  j = found[0].jaxpr if isinstance(found[0], ClosedJaxpr) else found[0]
  if len(j.invars) != len(eqn.invars) or len(j.outvars) != len(eqn.outvars):
    return None
  return found[0]


# --- composing signatures (rules of calls and loops use these) -------------------------------

def merge_branches(signatures, offset: int = 0) -> KeyReuseSignature:
  """One signature for alternatives (``cond``'s branches): a key is consumed if any branch
  consumes it, fresh if every branch makes it fresh, forwarded if every branch forwards it.
  Operand indices move by ``offset`` (the branch index operand)."""
  sinks, sources = defaultdict(list), defaultdict(list)
  for sig in signatures:
    for s in sig.sinks:
      sinks[s.idx].append(s.mask)
    for s in sig.sources:
      sources[s.idx].append(s.mask)
  n = len(signatures)
  parts = [Sink(i + offset, reduce(np.logical_or, m)) for i, m in sinks.items()]
  parts += [Source(i, reduce(np.logical_and, m)) for i, m in sources.items() if len(m) == n]
  common = set.intersection(*(set(s.forwards) for s in signatures)) if signatures else set()
  parts += [Forward(f.in_idx + offset, f.out_idx) for f in common]
  return KeyReuseSignature(*parts)


# --- eager consumption of concrete keys -------------------------------------------------------

_CONSUMED: dict = {}  # id(data Array) -> (weak reference, mask)


def consumed(data):
  """Which keys of the concrete key data ``data`` have been consumed (False when none)."""
  entry = _CONSUMED.get(id(data))
  if entry is None or entry[0]() is not data:
    return False
  return entry[1]


def set_consumed(data, mask) -> None:
  """Record the consumption of concrete key data (``mask``: bool or per key)."""
  mask = _normal_mask(mask) if not isinstance(mask, bool) else mask
  key = id(data)
  if mask is False:
    _CONSUMED.pop(key, None)
    return
  try:
    ref = weakref.ref(data, lambda _, key=key: _CONSUMED.pop(key, None))
  except TypeError:  # not weakly referenceable (a NumPy array): nothing to track
    return
  _CONSUMED[key] = (ref, mask)


def check_call(sig: KeyReuseSignature, inputs, funcname: str, index=None) -> None:
  """Raise ``KeyReuseError`` when a ``Sink`` of ``sig`` meets consumed key data among the
  concrete ``inputs``. ``index(i)``: the position to report for input ``i``."""
  for s in sig.sinks:
    if np.any(np.logical_and(consumed(inputs[s.idx]), s.mask)):
      where = s.idx if index is None else index(s.idx)
      raise KeyReuseError(f"Previously-consumed key passed to {funcname} at index {where}")


def update_call(sig: KeyReuseSignature, inputs, outputs, key_outputs=()) -> None:
  """After a call: its sinks' inputs are consumed, forwarded outputs share their input's
  consumption, sourced outputs are fresh, other key outputs (``key_outputs``) consumed."""
  for s in sig.sinks:
    set_consumed(inputs[s.idx], np.logical_or(consumed(inputs[s.idx]), s.mask))
  for j in key_outputs:
    set_consumed(outputs[j], True)
  for s in sig.sources:
    set_consumed(outputs[s.idx], False)
  for f in sig.forwards:
    set_consumed(outputs[f.out_idx], consumed(inputs[f.in_idx]))


def jit_call_checks(closed, consts, leaves, untracked=()):
  """Before an eager call of a jitted program (``closed`` takes ``consts`` then ``leaves``)
  while ``debug_key_reuse`` is on: ``KeyReuseError`` when the program reuses a key or is
  passed consumed key data (indices counted as JAX counts them: arguments, then captured
  values). ``untracked``: positions of ``leaves`` that are no typed keys' data (raw keys
  viewed as typed ones). Returns ``after(outputs)``, which records what the call consumed
  and made."""
  sig = jaxpr_type_signature(closed)
  flat = [*consts, *(None if i in untracked else x for i, x in enumerate(leaves))]
  n = len(consts)
  check_call(sig, flat, "jit-compiled function",
             lambda i: i - n if i >= n else len(leaves) + i)
  jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
  key_outs = [j for j, v in enumerate(jaxpr.outvars) if is_key_var(v)]
  return lambda outs: update_call(sig, flat, outs, key_outs)
