"""A small thread-safe LRU cache used by every cache in hlox (jit, eager, lowering)."""
from __future__ import annotations

import collections
import threading
import types
import weakref

from hlox.config import TRACED_OPTIONS, USER_CONTEXTS, config, generation as _generation, \
    jit_slow_path_here, threads_with_scopes as _threads_with_scopes
from hlox.core.source_info import current_xla_metadata
from hlox.core.tracer import Tracer, trace_ctx

_all_caches: "weakref.WeakSet[LRUCache]" = weakref.WeakSet()


class _Entries(collections.OrderedDict):
  """A cache's table. Pickled empty: its values (executables, jaxprs) belong to this process,
  and a pickled jitted function (cloudpickle) holds its table directly; one pickle keeps one
  table for all of its holders."""

  def __reduce__(self):
    return (_Entries, ())


class LRUCache:
  """Maps keys to values, evicting the least recently used entry beyond ``maxsize``.

  ``maxsize=None`` follows ``config.cache_size``. Lookups take no lock (dict operations are
  atomic under the GIL); inserts and evictions do.
  """

  def __init__(self, maxsize: int | None = None):
    self._data = _Entries()
    self._lock = threading.Lock()
    self._maxsize = maxsize
    self._stash = None  # {options state: entries made under it}, see ``switch_caches``
    _all_caches.add(self)

  @property
  def maxsize(self) -> int:
    return self._maxsize if self._maxsize is not None else config.cache_size

  def get(self, key, default=None):
    data = self._data if not _threads_with_scopes[0] else self._table_here()
    try:
      value = data[key]
    except KeyError:
      return default
    try:
      data.move_to_end(key)
    except KeyError:  # evicted by another thread in between
      pass
    return value

  def put(self, key, value) -> None:
    data = self._data if not _threads_with_scopes[0] else self._table_here()
    with self._lock:
      data[key] = value
      data.move_to_end(key)
      limit = self.maxsize
      while len(data) > limit:
        data.popitem(last=False)

  def _table_here(self):
    """The table the calling thread reads and fills: ``_data``, unless its own ``with``
    scopes give it other values of the options that key the caches than ``_data`` was
    filled under (another thread's scope switched the tables); then the table kept aside
    for its values, which ``_switch`` takes back when the tables come to them."""
    here = _here()
    if not here.differs:
      return self._data
    with self._lock:
      stash = self._stash
      if stash is None:
        stash = self._stash = {}
      table = stash.get(here.state)
      if table is None:
        table = stash[here.state] = collections.OrderedDict()
        while len(stash) > _MAX_STASHED_STATES:
          del stash[next(iter(stash))]
      return table

  def clear(self) -> None:
    with self._lock:
      self._data.clear()
      self._stash = None

  def _switch(self, old_state, new_state) -> None:
    # In place: the hot paths hold ``self._data`` (and its bound methods) directly.
    with self._lock:
      stash = self._stash
      saved = stash.pop(new_state, None) if stash else None
      if self._data:
        if stash is None:
          stash = self._stash = {}
        # ``dict.items`` reads the table without looking keys up again, so a snapshot
        # cannot fail on a key whose lookup would (OrderedDict.copy re-looks up every key
        # and raised KeyError in a full test run).
        stash[old_state] = collections.OrderedDict(list(dict.items(self._data)))
        while len(stash) > _MAX_STASHED_STATES:
          del stash[next(iter(stash))]
        self._data.clear()
      if saved:
        self._data.update(saved)

  def discard_where(self, predicate) -> list:
    """Remove the entries whose value satisfies ``predicate`` (stashed ones included);
    returns their values."""
    removed = []
    with self._lock:
      for table in [self._data, *(self._stash or {}).values()]:
        for key, value in list(dict.items(table)):
          if predicate(value):
            removed.append(value)
            del table[key]
    return removed

  def __len__(self):
    return len(self._data)

  def __getstate__(self):
    # No lock and no stashed entries; the table itself pickles empty (``_Entries``).
    return {"_data": self._data, "_maxsize": self._maxsize}

  def __setstate__(self, state):
    self.__dict__.update(state, _lock=threading.Lock(), _stash=None)
    _all_caches.add(self)

  def __contains__(self, key):
    return key in self._data


def clear_caches() -> None:
  """Empty every hlox cache: compiled executables, traced jaxprs and eager kernels.

  Later calls trace and compile again. Useful to free memory, or to measure compile times.

  Returns:
    None.

  Examples:
    >>> f = hlox.jit(lambda x: x + 1)
    >>> f(1)
    Array(2, dtype=int32, weak_type=True)
    >>> hlox.clear_caches()
    >>> f(1)
    Array(2, dtype=int32, weak_type=True)
  """
  for cache in list(_all_caches):
    cache.clear()


# How many other option states each cache keeps its entries for (x64 on and off, a PRNG
# setting or two): code that toggles ``enable_x64`` around each call keeps its executables.
_MAX_STASHED_STATES = 4


def switch_caches(old_state, new_state) -> None:
  """The options that change what programs trace to went from ``old_state`` to
  ``new_state`` (hashable summaries): every cache puts its entries aside under
  ``old_state`` and takes back those it had under ``new_state``, so no entry made under
  one setting is used under another, and switching back (``with enable_x64():`` around a
  computation) recompiles nothing. (JAX keys its caches on the same options.)"""
  for cache in list(_all_caches):
    cache._switch(old_state, new_state)


# The values the caches' tables were filled under, of the options that change what programs
# trace to (``config.TRACED_OPTIONS``, and user contexts from their first change on).
_traced_options = {name: getattr(config, name) for name in TRACED_OPTIONS}


def _on_config_change(name, value):
  # Weak types of Python scalars and canonical dtypes depend on x64, raw keys' meaning on the
  # default PRNG, threefry's bits on its scheme, traces on the static-index check: cached
  # signatures, traces and executables made under another setting must not be reused
  # (setting the same value again keeps them). Rank and dtype promotion checks and the default
  # matmul precision act while tracing, so they too key the caches (as in JAX's jit key);
  # executables compiled under no_execution raise when run, so they serve only under it.
  # User contexts (make_user_context) key them too, from their first change on. ``value`` is
  # the changing thread's: the tables follow the last thread that changed its options, and
  # other threads whose values differ from them use tables of their own (``_table_here``).
  if name not in _traced_options and name in USER_CONTEXTS:
    _traced_options[name] = USER_CONTEXTS[name]
  if name in _traced_options and _traced_options[name] != value:
    old_state = tuple(_traced_options.values())
    _traced_options[name] = value
    switch_caches(old_state, tuple(_traced_options.values()))

config.add_watcher(_on_config_change)


# --- threads whose ``with`` scopes give other option values than the tables hold ----------

class _Here(threading.local):
  """The calling thread's summary of its options, as of ``generation``: ``state`` (its
  values of the options that key the caches), ``differs`` (from those the tables hold) and
  ``jit_slow`` (whether jit's cache-hit path is closed to it)."""
  generation = -1
  state = None
  differs = False
  jit_slow = False


_here_local = _Here()


def _here() -> _Here:
  here = _here_local
  generation = _generation[0]
  if here.generation != generation:
    values = config._values
    state = tuple(values[name] for name in list(_traced_options))
    here.state = state
    here.differs = state != tuple(_traced_options.values())
    here.jit_slow = bool(here.differs or values["disable_jit"] or values["debug_key_reuse"])
    here.generation = generation
  return here


def _jit_slow_path_here() -> bool:
  return _here().jit_slow

jit_slow_path_here[0] = _jit_slow_path_here


class PerFunctionCache:
  """Entries keyed on a Python function and a key, kept only while the function lives.

  A trace cache keyed on the function itself would hold it, and with it every array it
  closes over, for as long as the cache keeps the entry (a ``lax.cond`` branch made in a
  loop would keep each loop's data alive). Plain functions get a table of their own, held
  weakly by the function (as JAX keys such caches weakly); other callables (partials,
  bound methods, callable objects) compare by value and share one table, keyed on the
  callable too."""

  def __init__(self):
    self._tables: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
    self._shared = LRUCache()

  def _table(self, fun, make: bool):
    if type(fun) is not types.FunctionType:
      return self._shared, (fun,)
    table = self._tables.get(fun)
    if table is None and make:
      table = self._tables[fun] = LRUCache()
    return table, ()

  def get(self, fun, key):
    """The entry for ``(fun, key)``, or None. TypeError if either is unhashable."""
    table, prefix = self._table(fun, False)
    return None if table is None else table.get((*prefix, *key))

  def put(self, fun, key, value) -> None:
    table, prefix = self._table(fun, True)
    table.put((*prefix, *key), value)


_derived_cache = LRUCache()


def memoize_derived(key: tuple, make):
  """``make()`` once per ``key``, named axes in scope and XLA metadata in effect: for the jaxprs that transformation
  rules derive from a call primitive's jaxpr (its JVP, partial evaluation, transpose,
  batched form). Returning the same jaxpr objects on every call lets the compile caches,
  keyed on them, hit when e.g. an eager ``grad`` of a jitted function runs again.

  ``make`` returns a tuple; results holding tracers of an enclosing transformation in one
  of its list entries (constants) are valid only there and are not remembered.
  """
  # The derived equations record the XLA metadata in effect (``set_xla_metadata``).
  key = (*key, tuple(trace_ctx.axis_env), current_xla_metadata())
  hit = _derived_cache.get(key)
  if hit is None:
    hit = make()
    if not any(isinstance(c, Tracer) for part in hit if isinstance(part, list) for c in part):
      _derived_cache.put(key, hit)
  return hit
