"""Views of array references: ``ref.at[idx]`` (JAX's transformed references).

A ``RefView`` names part of a reference without reading it: ``ref.at[1:3][...] = v`` writes
two elements of ``ref``, ``ref.at[i].get()`` reads row ``i``. It holds the base reference and
a list of index stages, each an ``(indexer, dynamic operands)`` pair in the form of
``lax/state.py``. Stages of plain integers, slices and scalar indices fold into one, so most
views read and write through a single ``get``/``swap``/``addupdate`` of the base reference;
a view after integer-array indexing keeps stages apart and writes by reading the first
stage's region, updating it as a value and writing it back.

A view is a pytree node (its leaves: the base reference and the dynamic index operands), so
it crosses ``jit``, ``scan``, ``while_loop``, ``cond`` and ``remat`` as the reference it views
and is rebuilt inside; ``vmap`` refuses it, as JAX does.
"""
from __future__ import annotations

from hlox import tree_util
from hlox.core.refs import AbstractRef, set_ref_ops
from hlox.core.tracer import get_aval
from hlox.lax import state
from hlox.lax.state import Dyn, _Slice


def _is_scalar_dyn(d) -> bool:
  return not get_aval(d).shape


def _fold(outer, outer_dyn, inner, inner_dyn):
  """One indexer for ``inner`` applied to what ``outer`` selects, or None when ``outer``
  holds integer arrays (their result dimensions do not map back one to one)."""
  if any(type(e) is Dyn and not _is_scalar_dyn(outer_dyn[e.k]) for e in outer):
    return None
  dyn = list(outer_dyn)
  out = []
  it = iter(inner)
  for e in outer:
    if type(e) is not _Slice:
      out.append(e)
      continue
    j = next(it)
    if type(j) is _Slice:
      out.append(_Slice(e.start + j.start * e.step, j.size, e.step * j.step))
    elif type(j) is Dyn:
      d = inner_dyn[j.k]
      if not _is_scalar_dyn(d):
        return None
      if e.start != 0 or e.step != 1:
        d = d * e.step + e.start  # an offset into the base reference
      out.append(Dyn(len(dyn)))
      dyn.append(d)
    else:
      out.append(e.start + j * e.step)
  return tuple(out), dyn


class RefView:
  """A part of an array reference, made by ``ref.at[idx]``: read and written like a ``Ref``."""

  __slots__ = ("ref", "stages")
  _is_ref_view = True

  def __init__(self, ref, stages):
    self.ref = ref
    self.stages = tuple(stages)

  # --- type --------------------------------------------------------------------------------

  @property
  def aval(self) -> AbstractRef:
    aval = state._ref_aval(self.ref, "a Ref view")
    for indexer, dyn in self.stages:
      aval = AbstractRef(state.indexed_aval(aval, indexer, [get_aval(d) for d in dyn]))
    return aval

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __repr__(self):
    return f"RefView({self.aval}, of {state._ref_aval(self.ref, 'a Ref view')})"

  # --- views -------------------------------------------------------------------------------

  @property
  def at(self) -> "_ViewMaker":
    return _ViewMaker(self)

  def _with(self, idx) -> "RefView":
    indexer, dyn = state.normalize_index(self.shape, idx)
    if not self.stages:
      return RefView(self.ref, [(indexer, dyn)])
    *head, (last, last_dyn) = self.stages
    folded = _fold(last, last_dyn, indexer, dyn)
    if folded is not None:
      return RefView(self.ref, [*head, folded])
    return RefView(self.ref, [*self.stages, (indexer, dyn)])

  # --- reads and writes ----------------------------------------------------------------------

  def _split(self, idx):
    """``(base indexer, base dyn, index of the first stage's region)``: the base reference
    operation and what is left to apply to its region as a value (None: nothing)."""
    view = self._with(idx)
    (indexer, dyn), *rest = view.stages
    return indexer, dyn, rest

  def get(self, idx=()):
    indexer, dyn, rest = self._split(idx)
    value = state.get_p.bind(self.ref, *dyn, indexer=indexer)
    for ix, d in rest:
      value = value[state.numpy_index(ix, d)]
    return value

  def __getitem__(self, idx):
    return self.get(idx)

  def swap(self, value, idx=()):
    indexer, dyn, rest = self._split(idx)
    value = _conform(self._with(idx).aval, value)
    if not rest:
      return state.swap_p.bind(self.ref, value, *dyn, indexer=indexer)
    region = state.get_p.bind(self.ref, *dyn, indexer=indexer)
    old, new = _swap_in(region, rest, value)
    state.swap_p.bind(self.ref, new, *dyn, indexer=indexer)
    return old

  def set(self, value, idx=()):
    self.swap(value, idx)

  def __setitem__(self, idx, value):
    self.swap(value, idx)

  def addupdate(self, value, idx=()):
    indexer, dyn, rest = self._split(idx)
    value = _conform(self._with(idx).aval, value, "addupdate")
    if rest:  # the update spread over the first stage's region: zero elsewhere
      region_aval = state.indexed_aval(state._ref_aval(self.ref, "addupdate"), indexer,
                                       [get_aval(d) for d in dyn])
      from hlox.lax.base import full
      zeros = full(region_aval.shape, 0, region_aval.dtype)
      _, value = _swap_in(zeros, rest, value, add=True)
    state.addupdate_p.bind(self.ref, value, *dyn, indexer=indexer)

  def __iter__(self):
    raise TypeError("a Ref view cannot be iterated over; read its value with view[...] first")

  def __bool__(self):
    raise TypeError("the truth value of a Ref view is ambiguous; read it with view[...]")


def _conform(view_aval, value, name="swap"):
  full_ix = (_Slice(0, d, 1) for d in view_aval.shape)
  return state._value_for(view_aval, tuple(full_ix), [], value, name)


def _swap_in(region, stages, value, add=False):
  """``(old part, updated region)`` for writing ``value`` at ``stages`` of ``region``."""
  (ix, d), *rest = stages
  where = state.numpy_index(ix, d)
  part = region[where]
  if rest:
    old, value = _swap_in(part, rest, value, add)
  else:
    old = part
  return old, (region.at[where].add(value) if add and not rest else region.at[where].set(value))


class _ViewMaker:
  """``x.at``: ``x.at[idx]`` is the view of ``x`` at ``idx``."""

  __slots__ = ("base",)

  def __init__(self, base):
    self.base = base

  def __getitem__(self, idx) -> RefView:
    base = self.base if isinstance(self.base, RefView) else RefView(self.base, [])
    return base._with(idx)


def ref_at(ref) -> _ViewMaker:
  """``ref.at`` for a reference (eager box or traced)."""
  return _ViewMaker(ref)


def is_ref_view(x) -> bool:
  return type(x) is RefView


# --- a view is a pytree node: leaves are the base reference and the dynamic operands --------

def _flatten(view):
  leaves = [view.ref]
  shape = []
  for indexer, dyn in view.stages:
    leaves.extend(dyn)
    shape.append((indexer, len(dyn)))
  return leaves, tuple(shape)


def _unflatten(shape, leaves):
  ref, *rest = leaves
  stages, k = [], 0
  for indexer, n in shape:
    stages.append((indexer, list(rest[k:k + n])))
    k += n
  return RefView(ref, stages)


tree_util.register_pytree_node(RefView, _flatten, _unflatten)
set_ref_ops(at=ref_at)
