"""``shard_map`` called outside ``jit``: the body runs eagerly, op by op, on every device's
block at once, as JAX 0.10.2's eager shard_map does. ``print(x)`` in the body shows each
device's block; Python control flow on values that are the same on every device works.

A value of the body is a ``ShardMapTracer`` holding the blocks of all devices stacked along
leading dimensions, one per manual mesh axis (in the mesh's order), and the set of manual
axes along which the blocks may differ (its *vma*: varying manual axes). Each primitive runs
once on the stack under nested ``vmap``s named after the manual axes, so collectives
(``psum``, ``all_gather``, ``ppermute``, ``axis_index``...) see the other devices' blocks
along the axes they name exactly as they would on a mesh. Host callbacks
(``pure_callback``, ``io_callback``) instead run once per device, on its block, in the
mesh's order, as on a mesh.

With ``check_vma`` a value's type (``x.aval``, ``typeof``) says its vma, as in a traced
body, and whatever the body traces (``jit``, loops' bodies) is typed with vmas
(``core/vma.py``): a call's results vary as its traced body says.
"""
from __future__ import annotations

import math

import numpy as np

from hlox.config import config
from hlox.core import vma as vma_lib
from hlox.core.refs import is_ref_aval
from hlox.core.tracer import Trace, Tracer, extend_axis_env, get_aval, set_current_trace
from hlox.interpreters import batching
from hlox.lax.callback import io_callback_p, pure_callback_p
from hlox.lax.parallel import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p,
                               ppermute_p, psum_p, reduce_scatter_p)
from hlox.lax.varying import psum_invariant_p, pvary_p
from hlox.runtime import array as array_lib
from hlox.runtime import sharding as sharding_lib

# Collectives after which a value is the same along the axes they reduce over, and those
# after which it varies along their axes (as in traced bodies, ``lax/varying.py``).
_REDUCING = {psum_p: "axes", pmax_p: "axes", pmin_p: "axes", psum_invariant_p: "axes"}
_VARYING = (all_gather_p, reduce_scatter_p, ppermute_p, all_to_all_p)
# Called once per device on its block (as on a mesh), not on the stack under vmap.
_PER_BLOCK = (pure_callback_p, io_callback_p)


def _names(param) -> frozenset:
  return frozenset(param) if isinstance(param, (tuple, list)) else frozenset([param])


def out_vma(prim, params, in_vmas, in_avals=()) -> list | frozenset:
  """The manual axes along which a primitive's result may differ between devices (one set
  for all results, or a list with one per result)."""
  vma = frozenset().union(*in_vmas)
  if prim in _REDUCING:
    return vma - _names(params[_REDUCING[prim]])
  if prim is axis_index_p or prim in _VARYING:
    return vma | _names(params["axis_name"])
  if prim is pvary_p:
    return vma | frozenset(params["axes"])
  if vma_lib.active[0] and params.get("check_vma", True) and \
      vma_lib._holds_a_jaxpr(prim, params):
    # Traced with vmas in its types: the results vary as its body says.
    outs = prim.abstract_eval(*in_avals, **params)
    return [vma_lib.of(a) for a in (outs if prim.multiple_results else [outs])]
  if not config.auto_pcast and vma_lib.active[0]:
    vma_lib.check_agree(prim, in_avals)
  return vma


class ShardMapTrace(Trace):
  """The trace of an eager shard_map body over ``manual_axes`` of ``mesh``."""

  name = "shard_map"

  def __init__(self, parent, mesh, manual_axes, check_vma: bool):
    super().__init__()
    self.parent = parent
    self.mesh = mesh
    self.manual_axes = tuple(manual_axes)
    self.check_vma = check_vma
    self.sizes = tuple(mesh.shape[a] for a in self.manual_axes)
    # Axes of size 1, in no vma (config.remove_size_one_mesh_axis_from_type).
    self.dropped = frozenset(a for a in self.manual_axes if mesh.shape[a] == 1) \
        if config.remove_size_one_mesh_axis_from_type else frozenset()

  def lift(self, x):
    """The stack and vma of ``x``: a constant is the same block on every device."""
    if isinstance(x, ShardMapTracer) and x._trace is self:
      return x.val, x.vma
    if isinstance(x, Tracer):
      self.check_tracer(x)
    with set_current_trace(self.parent):
      for size in reversed(self.sizes):
        x = batching.matchaxis(x, None, 0, size)
    return x, frozenset()

  def process_primitive(self, primitive, args, params):
    vals, vmas = zip(*[self.lift(x) for x in args]) if args else ((), ())
    single = not primitive.multiple_results
    vma = out_vma(primitive, params, vmas,
                  [get_aval(x) if isinstance(x, ShardMapTracer) else
                   get_aval(x).update(vma=()) for x in args] if self.check_vma else ())
    if primitive in _PER_BLOCK:
      outs = self._per_block(primitive, list(vals), params)
    else:
      def per_device(*xs):
        out = primitive.bind(*xs, **params)
        return [out] if single else list(out)
      with set_current_trace(self.parent), vma_lib.suspended():
        outs = _per_device(per_device, list(vals),
                           list(zip(self.manual_axes, self.sizes)))
    if any(is_ref_aval(get_aval(o)) for o in outs):
      # Each eager operation is a program of its own, and a program's results are values:
      # a reference made here could not outlive it (as JAX says).
      raise ValueError("Eager shard_map cannot return a `jax.Ref`. Please wrap your "
                       "shard_map in `jax.jit`.")
    vmas = vma if isinstance(vma, list) else [vma] * len(outs)
    tracers = [ShardMapTracer(self, v, m) for v, m in zip(outs, vmas)]
    return tracers[0] if single else tracers

  def _per_block(self, primitive, vals, params):
    """``primitive`` bound once per device on its block, in the mesh's order; the results
    stacked as the body's values are."""
    hosts = [np.asarray(v) for v in vals]
    weak = [get_aval(v).weak_type for v in vals]
    per_device = []
    with set_current_trace(self.parent), vma_lib.suspended():
      for idx in np.ndindex(*self.sizes):
        block = [array_lib.device_put(np.array(h[idx]), weak_type=w)
                 for h, w in zip(hosts, weak)]
        per_device.append([np.asarray(o) for o in primitive.bind(*block, **params)])
    n = len(per_device[0]) if per_device else 0
    return [array_lib.device_put(np.stack([outs[k] for outs in per_device]).reshape(
        *self.sizes, *per_device[0][k].shape)) for k in range(n)]


def _per_device(fun, vals, axes):
  """``fun`` applied to every device's blocks: a ``vmap`` per manual axis, named after it."""
  if not axes:
    return fun(*vals)
  (name, size), rest = axes[0], axes[1:]
  outs, dims = batching.batch(lambda *xs: _per_device(fun, list(xs), rest), vals,
                              [0] * len(vals), batching.AxisData(size, name))
  return [batching.matchaxis(o, d, 0, size) for o, d in zip(outs, dims)]


class ShardMapTracer(Tracer):
  """A value of an eager shard_map body: ``val`` stacks every device's block."""

  __slots__ = ("val", "vma")

  def __init__(self, trace, val, vma):
    self._trace = trace
    self.val = val
    self.vma = frozenset(vma) - trace.dropped if trace.check_vma else \
        frozenset(trace.manual_axes)

  @property
  def aval(self):
    """A block's type (with check_vma: varying along ``vma``, as in a traced body)."""
    aval = get_aval(self.val)
    return aval.update(shape=aval.shape[len(self._trace.sizes):],
                       vma=self.vma_in_mesh_order() if self._trace.check_vma else ())

  def vma_in_mesh_order(self) -> tuple:
    return tuple(a for a in self._trace.manual_axes if a in self.vma)

  def to_concrete_value(self):
    # As JAX: only a value the same on every device has one value to give.
    if self.vma:
      return None
    return np.asarray(self.val)[(0,) * len(self._trace.sizes)]

  def blocks(self):
    """``(index, device, block)`` for each device of the mesh, in its order."""
    trace = self._trace
    stack = np.asarray(self.val)
    positions = [trace.mesh.axis_names.index(a) for a in trace.manual_axes]
    for idx, device in np.ndenumerate(trace.mesh.devices):
      yield idx, device, stack[tuple(idx[p] for p in positions)]

  def __str__(self):
    mesh = self._trace.mesh
    names = f"({', '.join(map(str, mesh.axis_names))},)"
    return "\n".join(f"On {device} at mesh coordinates {names} = {idx}:\n{block}\n"
                     for idx, device, block in self.blocks())

  __repr__ = __str__  # as JAX's, for debuggers (`p x`)


def run(fun, args, mesh, manual_axes, in_specs, check_vma: bool, parent):
  """``fun``'s flat outputs as ``(stack, vma)`` pairs, run on the blocks of ``args`` (global
  values split as ``in_specs`` say) on every device of ``mesh``."""
  trace = ShardMapTrace(parent, mesh, manual_axes, check_vma)
  tracers = [ShardMapTracer(trace, _split(x, mesh, trace.manual_axes, s), _used(s))
             for x, s in zip(args, in_specs)]
  # What the body traces (jit, loops' bodies) is typed with vmas, as in a traced body.
  types = vma_lib.tracking(trace.manual_axes, trace.dropped) if check_vma \
      else vma_lib.suspended()
  try:
    with set_current_trace(trace), _axes(mesh, trace.manual_axes), types:
      outs = fun(*tracers)
      return [trace.lift(o) for o in outs]
  finally:
    trace.invalidate()


class _axes:
  """The manual axes' names bound (for ``axis_size`` and collectives' checks)."""

  def __init__(self, mesh, manual_axes):
    self.envs = [extend_axis_env(a, mesh.shape[a]) for a in manual_axes]

  def __enter__(self):
    for e in self.envs:
      e.__enter__()

  def __exit__(self, *exc):
    for e in reversed(self.envs):
      e.__exit__(*exc)


def _used(spec) -> frozenset:
  return frozenset(a for d in range(len(spec)) for a in spec.axes_of(d))


def _split(x, mesh, manual_axes, spec):
  """The global value ``x`` as a stack of every device's block (split as ``spec`` says)."""
  aval = get_aval(x)
  value = np.asarray(x)
  shape, labels, block = [], [], []
  for d, n in enumerate(value.shape):
    axes = spec.axes_of(d)
    count = math.prod(mesh.shape[a] for a in axes)
    shape += [mesh.shape[a] for a in axes] + [n // count]
    labels += list(axes) + [("dim", d)]
    block.append(n // count)
  value = value.reshape(shape)
  for a in manual_axes:
    if a not in labels:  # every device along ``a`` gets the same block
      value, labels = value[None], [a] + labels
  perm = [labels.index(a) for a in manual_axes] + \
      [labels.index(("dim", d)) for d in range(len(block))]
  sizes = [mesh.shape[a] for a in manual_axes]
  value = np.array(np.broadcast_to(value.transpose(perm), (*sizes, *block)), order="C")
  return array_lib.device_put(value, weak_type=aval.weak_type)


def join(stack, mesh, manual_axes, spec):
  """The global value whose blocks, laid out as ``spec`` says, are the stack's (the block
  of the first device along the axes ``spec`` leaves out)."""
  aval = get_aval(stack)
  value = np.asarray(stack)
  used = _used(spec)
  value = np.asarray(value[tuple(slice(None) if a in used else 0 for a in manual_axes)])
  lead = [a for a in manual_axes if a in used]
  block = value.shape[len(lead):]
  perm, shape = [], []
  for d, n in enumerate(block):
    axes = spec.axes_of(d)
    perm += [lead.index(a) for a in axes] + [len(lead) + d]
    shape.append(n * math.prod(mesh.shape[a] for a in axes))
  value = value.transpose(perm).reshape(shape)
  out = array_lib.device_put(np.array(value, order="C"), weak_type=aval.weak_type)
  return array_lib.put_with_sharding(out, sharding_lib.NamedSharding(mesh, spec))
