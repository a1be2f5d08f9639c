"""Programs that contain pmaps (jit of pmap, a pmap in a loop or branch) as ONE replicated
executable, as JAX compiles them.

The program has as many replicas R as its pmaps need (``pmap.jaxpr_replicas``). A value at
its top is either whole on every replica (layout None: each computes it) or split, layout
``(axis, size)``: replica r holds piece r // (R // size), of size 1 along ``axis``, which is
how a pmap spanning all replicas takes its mapped inputs and gives its mapped outputs.
Elementwise equations on split values run on the pieces (as JAX's sharding propagation
partitions them), a top-level pmap takes and gives pieces without slicing or gathering,
and every other equation sees whole values (split ones are all-gathered first). Arguments
and results keep their layout on the devices: ``jit(pmap(f))(x)`` is split over them as
``pmap(f)(x)`` is (JAX's too), and passing it to the next call moves no data.
"""
from __future__ import annotations

import numpy as np

from hlox import monitoring
from hlox.cache import LRUCache
from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from hlox.errors import DeletedArrayError
from hlox.interpreters import xla
from hlox.interpreters.pmap import (first_mapped, jaxpr_replicas, lower_pmap, pmap_devices,
                                    subjaxprs, xla_pmap_p)
from hlox.runtime import client, spmd
from hlox.runtime.array import Array, deleted_message, wrap_multi

from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["register_elementwise", "ReplicatedCall", "lower_replicated",
           "compile_replicated_call", "compile_replicated_jaxpr"]

_elementwise: set = set()


def register_elementwise(*prims) -> None:
  """Primitives whose result elements depend only on the same elements of their operands
  (operands of the result's shape, or scalars); ``hlox.lax`` registers them at import."""
  _elementwise.update(prims)


def _spans(eqn, n: int) -> bool:
  """A pmap over all ``n`` replicas: its mapped values can stay split."""
  return eqn.primitive is xla_pmap_p and \
      eqn.params["global_axis_size"] * jaxpr_replicas(eqn.params["jaxpr"].jaxpr) == n


def _piece_aval(aval, layout):
  if layout is None:
    return aval
  ax, _ = layout
  return aval.update(shape=aval.shape[:ax] + (1,) + aval.shape[ax + 1:])


def _elementwise_layout(eqn, layouts):
  """The split layout an elementwise equation runs in, or None (on whole values)."""
  if eqn.primitive not in _elementwise or len(eqn.outvars) != 1:
    return None
  shape = eqn.outvars[0].aval.shape
  found = None
  for v, layout in zip(eqn.invars, layouts):
    if v.aval.ndim == 0:
      continue
    if v.aval.shape != shape or (layout is not None and found not in (None, layout)):
      return None
    found = layout if layout is not None else found
  return found


def _plan(jaxpr: Jaxpr, in_layouts, n: int):
  """How each equation runs ("pmap", a split layout, or None: whole), the outputs'
  layouts, given the arguments', and the outputs' axis names (the pmap's whose split they
  keep, as JAX names their mesh axis; None for the others)."""
  layouts = dict(zip(jaxpr.invars, in_layouts))
  names = {}

  def get(v):
    return None if type(v) is Literal else layouts.get(v)
  modes = []
  for eqn in jaxpr.eqns:
    if _spans(eqn, n):
      mode, size = "pmap", eqn.params["global_axis_size"]
      outs = [None if ax is None else (ax, size) for ax in eqn.params["out_axes"]]
      name = eqn.params.get("axis_name")
    else:
      mode = _elementwise_layout(eqn, [get(v) for v in eqn.invars])
      outs = [mode] * len(eqn.outvars)
      name = next((names[v] for v in eqn.invars
                   if type(v) is not Literal and v in names and get(v) == mode), None)
    modes.append(mode)
    layouts.update(zip(eqn.outvars, outs))
    if name is not None:
      names.update((v, name) for v, layout in zip(eqn.outvars, outs) if layout is not None)
  out_names = [None if type(v) is Literal else names.get(v) for v in jaxpr.outvars]
  return modes, [get(v) for v in jaxpr.outvars], out_names


def _preferred_layouts(jaxpr: Jaxpr, n: int) -> list:
  """The layout each argument is best passed in: split as the pmaps that consume it (through
  elementwise equations) take it, else whole."""
  wants: dict = {}

  def want(v, layout):
    if type(v) is not Literal:
      wants.setdefault(v, set()).add(layout)
  for eqn in reversed(jaxpr.eqns):
    if _spans(eqn, n):
      size = eqn.params["global_axis_size"]
      for v, ax in zip(eqn.invars, eqn.params["in_axes"]):
        want(v, None if ax is None else (ax, size))
    elif eqn.primitive in _elementwise and len(eqn.outvars) == 1:
      out = eqn.outvars[0]
      wished = wants.get(out)
      if wished is None:  # only returned (or unused): no wish to pass on
        continue
      for v in eqn.invars:
        if v.aval.ndim:
          want(v, next(iter(wished)) if len(wished) == 1 and v.aval.shape == out.aval.shape
               else None)
    else:
      for v in eqn.invars:
        want(v, None)
  return [next(iter(w)) if w is not None and len(w) == 1 else None
          for w in (wants.get(v) for v in jaxpr.invars)]


def _replica_position(n: int, size: int):
  """This replica's piece index in a split layout of ``size`` pieces (an int32 scalar)."""
  i32 = xla.aval_to_ir_type(ShapedArray((), dtypes.int32))
  rid = hlo.convert(i32, hlo.replica_id())
  return rid if n == size else hlo.divide(rid, xla.ir_constant(np.int32(n // size)))


def _gather(x, aval, layout, n: int):
  ax, size = layout
  stride = n // size
  groups = [[j + stride * k for k in range(size)] for j in range(stride)]
  op = hlo.AllGatherOp([xla.aval_to_ir_type(aval)], [x], ax, xla.replica_groups_attr(groups))
  return op.results[0]


def _slice(x, aval, layout, n: int):
  ax, size = layout
  index = _replica_position(n, size)
  zero = xla.ir_constant(np.int32(0))
  starts = [index if d == ax else zero for d in range(aval.ndim)]
  return hlo.dynamic_slice(x, starts, xla._dense_i64(_piece_aval(aval, layout).shape))


def _lower_split(mctx, jaxpr: Jaxpr, consts, args, in_layouts, modes, n: int) -> list:
  """``xla.lower_jaxpr`` for the top of a replicated program, following ``_plan``."""
  env = {}
  converted = {}  # (var, layout) -> value: each gather or slice is emitted once

  def read(v):
    if type(v) is Literal:
      return xla.ir_constant(np.asarray(v.val, dtype=v.aval.dtype)), None
    return env[v]

  def in_layout(v, layout):
    x, have = read(v)
    if have == layout:
      return x
    key = (v, layout)
    if key not in converted:
      whole = x if have is None else converted.get((v, None))
      if whole is None:
        whole = converted[(v, None)] = _gather(x, v.aval, have, n)
      converted[key] = whole if layout is None else _slice(whole, v.aval, layout, n)
    return converted[key]

  env.update((v, (c, None)) for v, c in zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, zip(args, in_layouts)))
  for eqn, mode in zip(jaxpr.eqns, modes):
    avals_in = [v.aval for v in eqn.invars]
    if mode == "pmap":
      params = eqn.params
      size = params["global_axis_size"]
      ins, given = [], []
      for v, ax in zip(eqn.invars, params["in_axes"]):
        x, have = read(v)
        given.append(ax is not None and have == (ax, size))
        ins.append(x if given[-1] else in_layout(v, None))
      outs = lower_pmap(mctx, ins, avals_in, [v.aval for v in eqn.outvars], given=given,
                        keep_pieces=True, **params)
      layouts = [None if ax is None else (ax, size) for ax in params["out_axes"]]
    elif mode is None:
      outs = xla.lower_eqn(mctx, eqn, [in_layout(v, None) for v in eqn.invars], avals_in,
                           [v.aval for v in eqn.outvars])
      layouts = [None] * len(outs)
    else:  # elementwise on this replica's pieces (scalars stay whole)
      ins = [read(v)[0] if a.ndim == 0 else in_layout(v, mode)
             for v, a in zip(eqn.invars, avals_in)]
      outs = xla.lower_eqn(mctx, eqn, ins,
                           [a if a.ndim == 0 else _piece_aval(a, mode) for a in avals_in],
                           [_piece_aval(v.aval, mode) for v in eqn.outvars])
      layouts = [mode] * len(outs)
    env.update(zip(eqn.outvars, zip(outs, layouts)))
  return [read(v)[0] for v in jaxpr.outvars]


class _Replicas:
  """What a replicated module was lowered from and for (``xla.Lowered.replicas``)."""

  __slots__ = ("closed", "name", "donated_invars", "keep_unused", "devices", "in_layouts",
               "out_layouts", "out_names")

  def __init__(self, closed, name, donated_invars, keep_unused, devices, in_layouts,
               out_layouts, out_names):
    self.closed, self.name = closed, name
    self.donated_invars, self.keep_unused = tuple(donated_invars), keep_unused
    self.devices = devices
    self.in_layouts, self.out_layouts = tuple(in_layouts), tuple(out_layouts)
    self.out_names = tuple(out_names)


def _replica_devices(jaxpr: Jaxpr, n_replicas: int):
  """The devices of a program with ``n_replicas`` replicas: those a pmap in it names with
  ``devices=`` (when it spans all replicas), else None (the first ``n_replicas``)."""
  for eqn in jaxpr.eqns:
    if eqn.primitive is xla_pmap_p and eqn.params["devices"] is not None and \
        len(eqn.params["devices"]) == n_replicas:
      return pmap_devices(eqn.params["devices"], n_replicas)
    for sub in subjaxprs(eqn.params):
      if jaxpr_replicas(sub) == n_replicas:
        devs = _replica_devices(sub, n_replicas)
        if devs is not None:
          return devs
  return None


def _first_mapped(jaxpr: Jaxpr, n_replicas: int):
  """What the error for too few devices says of the first pmap spanning all replicas alone
  (``pmap.first_mapped`` of its arguments), or None."""
  for eqn in jaxpr.eqns:
    if eqn.primitive is xla_pmap_p and eqn.params["global_axis_size"] == n_replicas:
      return first_mapped([v.aval for v in eqn.invars], eqn.params["in_axes"])
    for sub in subjaxprs(eqn.params):
      if jaxpr_replicas(sub) == n_replicas:
        found = _first_mapped(sub, n_replicas)
        if found is not None:
          return found
  return None


def lower_replicated(closed: ClosedJaxpr, name: str = "jit", donated_invars=(),
                     keep_unused: bool = True, in_layouts=None):
  """Lower ``closed`` as one replicated program if it contains pmaps; else None (also when
  its pmaps span several processes, where each process runs its own part op by op).

  ``in_layouts``: each argument's layout (default: the preferred ones). The returned
  ``xla.Lowered`` carries ``replicas`` (a ``_Replicas``), which ``compile_replicated_call``
  compiles it with.
  """
  jaxpr = closed.jaxpr
  n = jaxpr_replicas(jaxpr)
  if n == 1 or client.process_count() > 1:
    return None
  devices = _replica_devices(jaxpr, n) or pmap_devices(None, n, _first_mapped(jaxpr, n))
  if in_layouts is None:
    in_layouts = _preferred_layouts(jaxpr, n)
  modes, out_layouts, out_names = _plan(jaxpr, in_layouts, n)

  def body(mctx, jaxpr, consts, args):
    return _lower_split(mctx, jaxpr, consts, args, in_layouts, modes, n)
  lowered = xla.lower_jaxpr_to_module(
      closed, name, donated_invars, keep_unused, num_replicas=n, axis_env=(), body=body,
      arg_avals=[_piece_aval(a, l) for a, l in zip(jaxpr.in_avals, in_layouts)],
      result_avals=[_piece_aval(a, l) for a, l in zip(jaxpr.out_avals, out_layouts)])
  lowered.replicas = _Replicas(closed, name, donated_invars, keep_unused, devices, in_layouts,
                               out_layouts, out_names)
  return lowered


_NOT_PLACED = object()


class ReplicatedCall:
  """A jaxpr containing pmaps compiled as one replicated program, with the interface of
  ``hlox.lax.call.CompiledCall``: call it with flat arguments (Arrays, NumPy arrays,
  scalars); it returns flat Arrays on its devices.

  Arguments already on its devices are passed as they are, in their layout (a program is
  compiled per combination of argument layouts, most often one); others are put there in
  the preferred layout.
  """

  replicated = True
  device = None
  device_key = None

  def __init__(self, lowered: xla.Lowered):
    info = lowered.replicas
    self.info = info
    self.lowered = lowered
    self.devices = info.devices
    self.n = len(self.devices)
    self.in_avals = lowered.in_avals
    self.out_avals = lowered.out_avals
    n_in = len(self.in_avals)
    self.kept = None if len(lowered.kept_var_idx) == n_in else list(lowered.kept_var_idx)
    self.positions = list(range(n_in)) if self.kept is None else self.kept
    self.preferred = info.in_layouts
    self._layout_of_sharding = {}  # id(sharding) -> layout (shardings are interned)
    self._runs = {}  # argument layouts (kept ones) -> spmd.Replicated.run
    self.executable = self._compile(lowered)
    self.fast = self.__call__

  def _sharding(self, aval, layout, name=None):
    if layout is None:
      return spmd.pmap_sharding(self.devices, None, aval.ndim)
    ax, size = layout
    return spmd.pmap_sharding(self.devices, ax, aval.ndim, self.n // size, name)

  def _compile(self, lowered) -> spmd.Replicated:
    info = lowered.replicas
    # (the results' axis names only name their shardings, which the executable carries)
    key = (lowered.as_text(), tuple(d.id for d in self.devices), info.out_names)
    if lowered.host_callbacks:  # the text names callbacks by position only
      key += (lowered.host_callbacks,)
    executable = _executables.get(key)
    if executable is None:
      monitoring.test_event("compile")
      out_shardings = [self._sharding(a, l, name) for a, l, name
                       in zip(self.out_avals, info.out_layouts, info.out_names)]
      with lowered.context:
        executable = spmd.compile_replicated(lowered.as_text(), self.devices, self.out_avals,
                                             out_shardings, lowered.host_callbacks,
                                             lowered.module)
      _executables.put(key, executable)
    self._runs[tuple(info.in_layouts[i] for i in self.positions)] = executable.run
    return executable

  def _variant(self, layouts):
    """The program for arguments in these layouts (lowered and compiled on first use)."""
    full = list(self.preferred)
    for i, layout in zip(self.positions, layouts):
      full[i] = layout
    info = self.info
    self._compile(lower_replicated(info.closed, info.name, info.donated_invars,
                                   info.keep_unused, full))
    return self._runs[layouts]

  def _layout(self, sharding):
    """The layout of a buffer on these devices (``_NOT_PLACED`` if it is elsewhere)."""
    layout = self._layout_of_sharding.get(id(sharding), _NOT_PLACED)
    if layout is _NOT_PLACED and getattr(sharding, "_devs", None) == self.devices:
      layout = None if sharding.axis is None else (sharding.axis, sharding.num_pieces)
      self._layout_of_sharding[id(sharding)] = layout
    return layout

  def _put(self, x, i: int):
    aval, layout = self.in_avals[i], self.preferred[i]
    if type(x) is Array:
      x.check_alive()
      value = x._value()
    else:
      value = np.asarray(x, dtype=aval.dtype)
    return spmd.put_sharded(value, aval, self._sharding(aval, layout)), layout

  def place(self, x, i: int) -> Array:
    """Argument ``x`` of position ``i`` on this program's devices (as it is if it is there
    already), as an Array that later calls pass without copying."""
    if type(x) is Array and x._multi is not None and \
        self._layout(x._multi._sharding) is not _NOT_PLACED:
      return x
    return wrap_multi(self._put(x, i)[0], self.in_avals[i])

  def __call__(self, args) -> list:
    bufs, layouts = [], []
    for i in self.positions:
      x = args[i]
      multi = x._multi if type(x) is Array else None
      layout = _NOT_PLACED if multi is None else self._layout(multi._sharding)
      if layout is _NOT_PLACED:
        multi, layout = self._put(x, i)
      elif multi.is_deleted():  # jaxlib crashes on deleted multi-device buffers
        raise DeletedArrayError(deleted_message(x.aval))
      bufs.append(multi)
      layouts.append(layout)
    layouts = tuple(layouts)
    run = self._runs.get(layouts)
    if run is None:
      run = self._variant(layouts)
    return list(map(wrap_multi, run(bufs), self.out_avals))


# Replicated executables by (module text, devices): a retrace giving the same program, or
# ``Lowered.compile()`` after a call, compiles nothing (as ``xla.compile_lowered``).
_executables = LRUCache()
_calls = LRUCache()


def compile_replicated_call(lowered: xla.Lowered) -> ReplicatedCall:
  """The (cached) ReplicatedCall of a module made by ``lower_replicated``."""
  key = (lowered.as_text(), tuple(d.id for d in lowered.replicas.devices))
  call = _calls.get(key)
  if call is None:
    call = ReplicatedCall(lowered)
    _calls.put(key, call)
  return call


def compile_replicated_jaxpr(closed: ClosedJaxpr, name: str = "jit", donated_invars=(),
                             keep_unused: bool = True):
  """A ReplicatedCall for a jaxpr containing pmaps; None when it holds none (or when the
  pmaps span several processes)."""
  lowered = lower_replicated(closed, name, donated_invars, keep_unused)
  return None if lowered is None else compile_replicated_call(lowered)


xla.replicated_compiler = compile_replicated_jaxpr
