"""Vectorization (``vmap``): the batch trace and its per-primitive rules.

A ``BatchTracer`` stands for a stack of values: its ``val`` has one extra dimension, at
``batch_dim``, of size ``axis_size`` (``batch_dim is None``: not mapped, the same value for
every element of the stack). Rules in ``primitive_batchers`` compute the batched result and
its batch dimension; they move batch dimensions only when they need to.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Sequence

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core import source_info as source_info_lib
from hlox.core.avals import ShapedArray
from hlox.core.refs import AbstractRef
from hlox.core.jaxpr import ClosedJaxpr, eval_jaxpr, subjaxprs, trace_to_jaxpr
from hlox.core.tracer import (Trace, Tracer, current_trace, extend_axis_env, get_aval,
                              set_current_trace)
from hlox.interpreters.rule_table import RuleTable

not_mapped = None

# rule(vals, dims, **params) -> (out, out_dim) (lists for multiple results)
primitive_batchers: dict = RuleTable()  # (rules from outside hlox get tuples, as JAX's)
# rule(axis_data, vals, dims, **params): for rules that need the axis size or name
fancy_primitive_batchers: dict = RuleTable(leading=1)


class _AxisRulesOfOldSignature:
  """``axis_primitive_batchers`` as JAX's public module has it: it takes rules of JAX's
  older signature ``rule(axis_size, axis_name, trace_type, vals, dims, **params)``
  (equinox registers its primitives' rules here) and keeps them, adapted, in
  ``fancy_primitive_batchers``."""

  def __setitem__(self, primitive, rule):
    def adapted(axis_data, vals, dims, **params):
      # (tuples, as JAX passes them: equinox hands ``dims`` on as ``vmap``'s ``out_axes``
      # for a tuple of results, which a list would not match)
      return rule(axis_data.size, axis_data.name, None, tuple(vals), tuple(dims), **params)
    fancy_primitive_batchers[primitive] = adapted

  def __delitem__(self, primitive):
    del fancy_primitive_batchers[primitive]


axis_primitive_batchers = _AxisRulesOfOldSignature()
# Primitives whose rule runs even on unbatched operands: a reference made inside a vmapped
# function is batched from the start, since later writes may store batched values in it.
always_batched: set = set()


class AxisData:
  """The mapped axis of one vmap: its size and (optional) name."""

  __slots__ = ("size", "name")

  def __init__(self, size: int, name=None):
    self.size = size
    self.name = name

  def __repr__(self):
    return f"AxisData(size={self.size}, name={self.name!r})"


class BatchTracer(Tracer):
  __slots__ = ("val", "batch_dim", "source_info")

  def __init__(self, trace, val, batch_dim, source_info=None):
    self._trace = trace
    self.val = val
    self.batch_dim = batch_dim
    # Where the user's vmap made this tracer (its arguments only: recording every
    # primitive's output would cost a frame walk per batched operation), for error messages.
    self.source_info = source_info

  @property
  def aval(self):
    aval = get_aval(self.val)
    if self.batch_dim is None:
      return aval
    if type(aval) is AbstractRef:  # a batched reference: one example's reference type
      inner = aval.inner_aval
      return AbstractRef(inner.update(shape=inner.shape[:self.batch_dim] +
                                      inner.shape[self.batch_dim + 1:]))
    shape = aval.shape[:self.batch_dim] + aval.shape[self.batch_dim + 1:]
    if sharding_types.active[0]:  # one example's type records its split, as JAX's does
      split = self.type_sharding
      if split is not None:
        return ShapedArray(shape, aval.dtype, aval.weak_type,
                           sharding=sharding_types.named_of_split(split))
    return ShapedArray(shape, aval.dtype, aval.weak_type)

  def _short_repr(self) -> str:
    return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"

  def _contents(self) -> list:
    return [("val", self.val), ("batch_dim", self.batch_dim)]

  def _origin_msg(self) -> str:
    if not self.source_info:
      return ""
    return (f"\nThis BatchTracer with object id {id(self)} was created on line:"
            f"\n  {self.source_info}")

  @property
  def type_sharding(self):
    """How one example is split over Explicit mesh axes (``core/sharding_types.py``): the
    batched value's split without its batch dimension (as JAX's per-example type)."""
    split = sharding_types.split_of(self.val)
    if split is None or self.batch_dim is None:
      return split
    entries = list(split.entries)
    del entries[self.batch_dim]
    split = sharding_types.TypeSharding(split.mesh, entries)
    return split if split.is_split() else None

  def batch_axes(self) -> tuple:
    """The Explicit mesh axes splitting the batch dimension (those a vmap maps over)."""
    split = sharding_types.split_of(self.val)
    if split is None or self.batch_dim is None:
      return ()
    return split.entries[self.batch_dim] or ()


class BatchTrace(Trace):
  name = "vmap"

  def __init__(self, parent, axis_data: AxisData, shares_axis: bool = False):
    super().__init__()
    self.parent = parent
    self.axis_data = axis_data
    # A trace that runs a user's rule for another vmap of the same axis (a custom JVP or VJP
    # rule batched by that vmap) takes that vmap's tracers, which the rule may close over,
    # as its own (JAX reuses the trace's tag there).
    self.shares_axis = shares_axis

  def to_batch_info(self, x):
    if type(x) is BatchTracer:
      if x._trace is self:
        return x.val, x.batch_dim
      if (self.shares_axis and x._trace.axis_data is self.axis_data
          and not x._trace.invalid):
        return x.val, x.batch_dim
    if isinstance(x, Tracer):
      self.check_tracer(x)
    return x, not_mapped

  def process_primitive(self, primitive, args, params):
    vals, dims = zip(*[self.to_batch_info(x) for x in args]) if args else ((), ())
    if all(d is None for d in dims) and not self._binds_my_axis(primitive, params) and \
        primitive not in always_batched:
      with set_current_trace(self.parent):
        return primitive.bind(*vals, **params)
    with set_current_trace(self.parent):
      rule = primitive_batchers.get(primitive)
      if rule is not None:
        out, out_dims = rule(list(vals), list(dims), **params)
      else:
        axis_rule = fancy_primitive_batchers.get(primitive)
        if axis_rule is None:
          raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented "
                                    "(interpreter: vmap)")
        out, out_dims = axis_rule(self.axis_data, list(vals), list(dims), **params)
    if primitive.multiple_results:
      return [self.maybe_tracer(v, d) for v, d in zip(out, out_dims)]
    return self.maybe_tracer(out, out_dims)

  def _binds_my_axis(self, primitive, params) -> bool:
    """A collective over this trace's named axis needs its rule even with unbatched inputs,
    and so does an equation whose jaxprs (a jitted call, a loop body...) hold one."""
    name = self.axis_data.name
    return name is not None and _binds_axis(primitive, params, name)

  def maybe_tracer(self, val, dim):
    if dim is None:
      return val
    return BatchTracer(self, val, dim)


def _names_axis(params, name) -> bool:
  axes = params.get("axes", params.get("axis_name"))
  return name in (axes if isinstance(axes, tuple) else (axes,))


def _binds_axis(primitive, params, name) -> bool:
  """Whether an equation is a collective over the axis ``name`` or holds one in its jaxprs."""
  if primitive in fancy_primitive_batchers and _names_axis(params, name):
    return True
  return any(_binds_axis(eqn.primitive, eqn.params, name)
             for jaxpr in subjaxprs(params) for eqn in jaxpr.eqns)


def batch(fun: Callable, vals: Sequence, in_dims: Sequence, axis_data: AxisData,
          shares_axis: bool = False, transform_stack: bool = False):
  """Run ``fun`` on the stacks ``vals`` (mapped along ``in_dims``); returns the flat outputs
  and their batch dimensions (None for outputs that do not depend on the mapped axis).
  With ``shares_axis``, tracers of other vmaps of ``axis_data`` that ``fun`` closes over
  count as mapped values of this one (see ``BatchTrace``). ``transform_stack``: the
  equations record ``vmap`` in their name stacks (the user's ``vmap``, not a rule's)."""
  trace = BatchTrace(current_trace(), axis_data, shares_axis)
  src = source_info_lib.current() if transform_stack else None
  in_tracers = [v if d is None else BatchTracer(trace, v, d, src)
                for v, d in zip(vals, in_dims)]
  try:
    with (set_current_trace(trace), extend_axis_env(axis_data.name, axis_data.size),
          source_info_lib.transform_name_stack("vmap") if transform_stack else _NO_NAMES):
      outs = fun(*in_tracers)
    infos = [trace.to_batch_info(o) for o in outs]
  finally:
    trace.invalidate()
  return [v for v, _ in infos], [d for _, d in infos]


_NO_NAMES = contextlib.nullcontext()


# --- vmappable types (JAX's ``register_vmappable``) ---------------------------------------
#
# A registered type is a leaf of ``vmap``'s argument and output trees whose stacking is its
# own: ``to_elt(cont, get_idx, x, spec)`` turns a stack into the element the function sees
# (calling ``cont(value, spec)`` for the arrays inside it), ``from_elt(cont, size, elt,
# spec)`` turns the function's element back into a stack (``cont(size, value, spec)`` for the
# arrays inside it). Specs of ``spec_type`` are leaves of ``in_axes``/``out_axes``.

vmappables: dict = {}  # data type -> (spec type, axis size type)
spec_types: set = set()
to_elt_handlers: dict = {}
from_elt_handlers: dict = {}
make_iota_handlers: dict = {}


def register_vmappable(data_type: type, spec_type: type, axis_size_type: type,
                       to_elt: Callable, from_elt: Callable,
                       make_iota: Callable | None) -> None:
  """Make ``data_type`` a vmappable type (see above); ``make_iota`` (optional) builds the
  index stack for axis sizes of ``axis_size_type``."""
  vmappables[data_type] = (spec_type, axis_size_type)
  spec_types.add(spec_type)
  to_elt_handlers[data_type] = to_elt
  from_elt_handlers[data_type] = from_elt
  if make_iota is not None:
    make_iota_handlers[axis_size_type] = make_iota


def unregister_vmappable(data_type: type) -> None:
  """Undo ``register_vmappable`` (its spec type stays a spec while another type uses it)."""
  spec_type, _ = vmappables.pop(data_type, (None, None))
  to_elt_handlers.pop(data_type, None)
  from_elt_handlers.pop(data_type, None)
  if spec_type is not None and all(s is not spec_type for s, _ in vmappables.values()):
    spec_types.discard(spec_type)


def is_vmappable(x) -> bool:
  return type(x) in vmappables


def _canonical_axis(spec, x, what: str):
  ndim = len(get_aval(x).shape)
  if not -ndim <= spec < ndim:
    raise ValueError(f"vmap {what}: axis {spec} is out of bounds for an array of rank {ndim}")
  return spec % ndim


def to_elt(trace: "BatchTrace", x, spec):
  """The element ``vmap``'s function sees for the stack ``x`` mapped as ``spec``."""
  handler = to_elt_handlers.get(type(x))
  if handler is not None:
    return handler(lambda v, s: to_elt(trace, v, s), None, x, spec)
  if spec is None:
    return x
  if not isinstance(spec, int):
    raise TypeError(f"vmap in_axes: a spec of type {type(spec).__name__} for a value of type "
                    f"{type(x).__name__}, which is not registered as vmappable")
  return BatchTracer(trace, x, _canonical_axis(spec, x, "in_axes"))


def unmapped_output_message(axis_name, where: str, dim) -> str:
  """JAX's words for an output mapped along ``dim`` whose out_axes entry (at key path
  ``where``) is None."""
  if axis_name is not None:
    return f"vmap has mapped output (axis_name={axis_name}) but out_axes is None"
  return f"at vmap out_axes{where}, got axis spec None but output was batched on axis {dim}"


def from_elt(trace: "BatchTrace", size: int, x, spec, where: str = ""):
  """The stack of the function's outputs ``x``, mapped as ``spec``; ``where`` is the
  output's key path in the outputs, for error messages."""
  handler = from_elt_handlers.get(type(x))
  if handler is not None:
    return handler(lambda n, elt, s: from_elt(trace, n, elt, s), size, x, spec)
  val, dim = trace.to_batch_info(x)
  if spec is None:
    if dim is not None:
      raise ValueError(unmapped_output_message(trace.axis_data.name, where, dim))
    return val
  ndim = len(get_aval(val).shape) + (dim is None)
  if not -ndim <= spec < ndim:
    raise ValueError(f"vmap out_axes: axis {spec} is out of bounds for an output of rank {ndim}")
  with set_current_trace(trace.parent):
    return matchaxis(val, dim, spec % ndim, size)


def batch_vmappable(fun: Callable, vals: Sequence, specs: Sequence, axis_data: AxisData,
                    out_specs: Callable, out_where: Callable | None = None) -> list:
  """``batch`` for arguments among which are vmappable values: ``specs`` are their in_axes
  entries; ``out_specs()`` (called once ``fun`` has run) gives the outputs' out_axes entries.
  Returns the outputs as stacks."""
  trace = BatchTrace(current_trace(), axis_data)
  try:
    elts = [to_elt(trace, v, s) for v, s in zip(vals, specs)]
    with set_current_trace(trace), extend_axis_env(axis_data.name, axis_data.size):
      outs = fun(*elts)
      wheres = out_where() if out_where is not None else [""] * len(outs)
      results = [from_elt(trace, axis_data.size, o, s, w)
                 for o, s, w in zip(outs, out_specs(), wheres)]
  finally:
    trace.invalidate()
  return results


def map_leading_axis(fun: Callable) -> Callable:
  """``fun`` (pytrees in, a pytree out) applied to each slice along axis 0 of its arguments'
  leaves, its outputs stacked along axis 0: ``vmap(fun)`` with default axes, for library code
  below the public API (e.g. ``lax.map`` with ``batch_size``)."""
  def mapped(*args):
    leaves, in_tree = tree_util.tree_flatten(args)
    if not leaves:
      raise ValueError("map_leading_axis: the arguments hold no arrays to map over")
    size = get_aval(leaves[0]).shape[0]
    out_trees = []

    def flat_fun(*flat):
      out_leaves, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, flat)))
      out_trees.append(out_tree)
      return out_leaves

    outs, out_dims = batch(flat_fun, leaves, [0] * len(leaves), AxisData(size, None))
    return tree_util.tree_unflatten(out_trees[0], [matchaxis(o, d, 0, size)
                                                   for o, d in zip(outs, out_dims)])
  return mapped


# Array operations the generic code needs, provided by ``hlox.lax`` at import.
_moveaxis: Callable | None = None
_broadcast_batched: Callable | None = None


def register_batching_ops(moveaxis: Callable, broadcast: Callable) -> None:
  """``moveaxis(x, src, dst)`` and ``broadcast(x, size, dim)`` (insert a mapped axis)."""
  global _moveaxis, _broadcast_batched
  _moveaxis = moveaxis
  _broadcast_batched = broadcast


def moveaxis(x, src: int, dst: int):
  return x if src == dst else _moveaxis(x, src, dst)


def matchaxis(x, src, dst, size: int):
  """``x`` with its batch dimension at ``dst`` (broadcasting an unmapped ``x``)."""
  if src is None:
    return _broadcast_batched(x, size, dst)
  return moveaxis(x, src, dst)


def bdim_at_front(x, bdim, size: int):
  return matchaxis(x, bdim, 0, size)


def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData, in_dims: Sequence,
                instantiate: bool | Sequence[bool] = False, in_splits=None):
  """A jaxpr computing the batched outputs of ``closed`` from batched inputs.

  Batched inputs of the new jaxpr carry their batch dimension at ``in_dims``; batched outputs
  have it at 0. Returns the closed jaxpr and the output batch dimensions (0 or None).
  """
  n_out = len(closed.out_avals)
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * n_out
  in_avals = []
  for aval, d in zip(closed.in_avals, in_dims):
    if d is None:
      in_avals.append(aval)
    else:
      shape = aval.shape[:d] + (axis_data.size,) + aval.shape[d:]
      in_avals.append(ShapedArray(shape, aval.dtype, aval.weak_type))
  out_dims_box = []

  def fun(*args):
    outs, dims = batch(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), args,
                       in_dims, axis_data)
    result, final_dims = [], []
    for o, d, inst in zip(outs, dims, instantiate):
      if d is None and not inst:
        result.append(o)
        final_dims.append(None)
      else:
        result.append(matchaxis(o, d, 0, axis_data.size))
        final_dims.append(0)
    out_dims_box.append(final_dims)
    return result

  # ``in_splits``: how the batched inputs are split over Explicit mesh axes, if known
  new = trace_to_jaxpr(fun, in_avals, "vmap", "vmap", in_shardings=in_splits)
  return new, out_dims_box[0]
