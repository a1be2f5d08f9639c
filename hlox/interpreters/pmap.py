"""The replica machinery of ``pmap``: one program run as a replica on each of several devices.

``hlox.api.pmap`` traces a function once on one slice of its mapped arguments (the mapped
axis removed), with the axis name bound so collectives (``hlox.lax.psum`` ...) can refer to
it, and binds ``xla_pmap_p`` with that per-device jaxpr. Evaluated, the primitive compiles the jaxpr as a
replicated program (``mhlo.num_replicas`` = number of devices), splits the mapped inputs over
the devices and returns arrays that stay split over them (``hlox.runtime.spmd``); passing such
an array to another pmap over the same devices moves no data.

Inside another pmap the primitive lowers in place: each replica takes its slice of the mapped
inputs by its position along the new axis and the outputs are gathered back over it (nested
pmaps need ``outer * inner`` replicas), and so it does in a jitted function (or a loop, a
branch) that contains pmaps, which compiles into one replicated program (``replicated.py``).
``xla_pmap_p`` has JVP, partial-evaluation, transpose and batching rules like ``jit_p``'s, so
grad/vmap/jit compose with pmap in any order.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from hlox import monitoring
from hlox.cache import LRUCache, memoize_derived
from hlox.core import dtypes
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, convert_constvars, eval_jaxpr, subjaxprs,
                             trace_to_jaxpr)
from hlox.core.primitive import Primitive
from hlox.core.tracer import check_no_tracers, extend_axis_env, get_aval, set_current_trace
from hlox import _tree_transform as tree_util
from hlox.interpreters import ad, batching, checkify, nan_checks, xla
from hlox.interpreters import partial_eval as pe
from hlox.runtime import client, spmd
from hlox.runtime.array import Array, wrap_multi

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["xla_pmap_p", "jaxpr_replicas", "compiled_for", "register_array_ops", "lower_pmap",
           "PmapLowering", "CompiledPmap"]


class _PmapPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    return {"axis_name": params["axis_name"], "axis_size": params["axis_size"],
            "devices": params["devices"], "donated_invars": params["donated_invars"],
            "global_axis_size": params["global_axis_size"], "in_axes": params["in_axes"],
            "jaxpr": params["jaxpr"], "name": params["name"], "out_axes": params["out_axes"]}


xla_pmap_p = _PmapPrimitive("xla_pmap")


def _insert_axis(aval, axis, size):
  if axis is None:  # an unmapped (out_axes=None) output: one copy, device 0's
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def remove_axis(aval, axis):
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def _pmap_abstract_eval(*avals, jaxpr, axis_size, in_axes, out_axes, name, **_):
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"pmap {name}: expected {len(jaxpr.in_avals)} arguments, got {len(avals)}")
  return [_insert_axis(a, ax, axis_size) for a, ax in zip(jaxpr.out_avals, out_axes)]

xla_pmap_p.def_abstract_eval(_pmap_abstract_eval)


def jaxpr_replicas(jaxpr: Jaxpr) -> int:
  """How many replicas a program needs to run ``jaxpr`` (its nested pmaps' sizes)."""
  count = 1
  for eqn in jaxpr.eqns:
    if eqn.primitive is xla_pmap_p:
      inner = eqn.params["global_axis_size"] * jaxpr_replicas(eqn.params["jaxpr"].jaxpr)
    else:
      inner = max((jaxpr_replicas(j) for j in subjaxprs(eqn.params)), default=1)
    count = max(count, inner)
  return count


# --- evaluation: compile a replicated program and run it ---------------------------------

def _block_note(mapped, n_devices) -> str:
  """For a mapped axis whose size is a multiple of the devices there are: what each
  device's block would be and JAX's words for it (a pmap body takes one element of the
  axis, and squeezing a bigger block fails); empty otherwise. ``mapped``: ``(shape, axis)``
  of the first mapped argument, or None."""
  if mapped is None or n_devices == 0:
    return ""
  shape, ax = mapped
  if shape[ax] <= n_devices or shape[ax] % n_devices:
    return ""
  block = (*shape[:ax], shape[ax] // n_devices, *shape[ax + 1:])
  return (f" Spread over them, each device's block has shape {block} where the body takes "
          "one element: cannot select an axis to squeeze out which has size not equal to "
          f"one, got shape={block} and dimensions=({ax},).")


def first_mapped(avals, in_axes):
  """``(shape, axis)`` of the first argument a pmap maps over (None when there is none)."""
  for aval, ax in zip(avals, in_axes):
    if ax is not None:
      return tuple(aval.shape), ax
  return None


def pmap_devices(devices, n_replicas, mapped=None):
  """The devices a program of ``n_replicas`` replicas runs on (``devices`` checked, or the
  first ones). ``mapped`` (see ``first_mapped``) adds to the error for too few devices."""
  available = sorted(client.devices(), key=lambda d: (getattr(d, "process_index", 0), d.id))
  if devices is not None:
    devs = list(devices)
    if len(devs) != n_replicas:
      raise ValueError(f"pmap: the mapped axis needs {n_replicas} devices but devices= lists "
                       f"{len(devs)}.{_block_note(mapped, len(devs))}")
    # Each replica needs a device of its own, one that exists (XLA's error comes too late:
    # the result is already handed out, unreadable).
    unknown = [d for d in devs if d not in available]
    repeated = sorted({str(d) for d in devs if devs.count(d) > 1})
    if unknown or repeated:
      what = (f"unknown devices {unknown}" if unknown else
              f"devices listed more than once: {', '.join(repeated)}")
      raise ValueError(f"pmap: devices= must list distinct existing devices, one per replica; "
                       f"got {devs} ({what}); the devices that exist are {available}")
    return tuple(devs)
  if n_replicas > len(available):
    raise ValueError(
        f"pmap: the mapped axis needs {n_replicas} devices but only {len(available)} are "
        f"available.{_block_note(mapped, len(available))} On the CPU, set the environment "
        f"variable HLOX_NUM_CPU_DEVICES={n_replicas} (or larger) before hlox first uses a "
        "device to get more.")
  return tuple(available[:n_replicas])


class PmapLowering:
  """A pmap's replicated program for one signature, lowered but not compiled (what
  ``pmap(f).lower(...)`` holds): the module (``lowered``) and the layouts of its arguments and
  results on the devices."""

  def __init__(self, jaxpr, in_avals, *, axis_name, axis_size, global_axis_size, in_axes,
               out_axes, devices, donated_invars, name):
    inner = jaxpr_replicas(jaxpr.jaxpr)
    n_replicas = global_axis_size * inner
    self.devices = devs = pmap_devices(
        devices, n_replicas, first_mapped(in_avals, in_axes) if inner == 1 else None)
    self.in_avals = list(in_avals)
    self.in_axes = in_axes
    # Global avals (this process holds axis_size of the global_axis_size pieces).
    self.in_global = [a if ax is None else
                      a.update(shape=a.shape[:ax] + (global_axis_size,) + a.shape[ax + 1:])
                      for a, ax in zip(in_avals, in_axes)]
    self.in_shardings = [spmd.pmap_sharding(devs, ax, a.ndim, inner)
                         for a, ax in zip(in_avals, in_axes)]
    self.out_avals = [_insert_axis(a, ax, axis_size) for a, ax in zip(jaxpr.out_avals, out_axes)]
    self.out_global = [_insert_axis(a, ax, global_axis_size)
                       for a, ax in zip(jaxpr.out_avals, out_axes)]
    self.out_shardings = [spmd.pmap_sharding(devs, ax, a.ndim, inner, axis_name)
                          for a, ax in zip(self.out_global, out_axes)]
    body = _replica_body(jaxpr, in_avals, in_axes, out_axes, axis_name, global_axis_size)
    self.lowered = xla.lower_jaxpr_to_module(
        body, name, donated_invars, keep_unused=True, num_replicas=n_replicas,
        axis_env=((axis_name, global_axis_size),))
    self._compiled = {}  # compiler options -> CompiledPmap

  def compile(self, compiler_options: dict | None = None) -> "CompiledPmap":
    """The program compiled (once per set of ``compiler_options``, XLA's options by name)."""
    key = tuple(sorted((k, repr(v)) for k, v in (compiler_options or {}).items()))
    compiled = self._compiled.get(key)
    if compiled is None:
      compiled = self._compiled[key] = CompiledPmap(self, compiler_options)
    return compiled


class CompiledPmap:
  """A replicated executable plus the layouts of its arguments and results; called with the
  flat arguments (constants first), it returns the flat results."""

  def __init__(self, lowering: PmapLowering, compiler_options: dict | None = None):
    self.lowering = lowering
    self.lowered = lowering.lowered
    self.in_avals = lowering.in_avals
    self.in_global = lowering.in_global
    self.in_shardings = lowering.in_shardings
    self.out_avals = lowering.out_avals
    monitoring.test_event("compile")
    with self.lowered.context:
      self.executable = spmd.compile_replicated(
          self.lowered.as_text(), lowering.devices, lowering.out_global,
          lowering.out_shardings, self.lowered.host_callbacks, self.lowered.module,
          compiler_options=compiler_options)
    self.run = self.executable.run
    # float0 results (booleans on the devices) are given as NumPy zeros, as JAX gives them.
    self.float0_outs = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]

  def shard_args(self, args) -> list:
    bufs = []
    for x, aval, glob, sharding in zip(args, self.in_avals, self.in_global,
                                       self.in_shardings):
      if type(x) is Array:
        multi = x._multi
        if multi is not None and getattr(multi._sharding, "base", None) is sharding:
          x._check_multi_alive(multi)  # jaxlib aborts on a donated multi-device buffer
          bufs.append(multi)
          continue
        x.check_alive()
        value = x._value()
      else:
        value = np.asarray(x, dtype=aval.dtype)
      bufs.append(spmd.put_sharded(value, glob, sharding))
    return bufs

  def __call__(self, args) -> list:
    outs = self.run(self.shard_args(args))
    outs = [wrap_multi(b, a) for b, a in zip(outs, self.out_avals)]
    for i in self.float0_outs:
      outs[i] = np.zeros(self.out_avals[i].shape, dtypes.float0)
    if nan_checks.enabled:
      nan_checks.check_sharded(outs)
    return outs


# Array operations the replica rules need, provided by ``hlox.lax`` when it is imported (as
# batching's ``register_batching_ops``): the interpreter knows no primitive itself.
_ops = {}


def register_array_ops(*, squeeze: Callable, expand_dims: Callable, div: Callable,
                       reduce_sum: Callable) -> None:
  """``squeeze(x, dims)``, ``expand_dims(x, dims)``, ``div(x, y)``, ``reduce_sum(x, axes)``."""
  _ops.update(squeeze=squeeze, expand_dims=expand_dims, div=div, reduce_sum=reduce_sum)


def _replica_body(jaxpr, in_avals, in_axes, out_axes, axis_name, size) -> ClosedJaxpr:
  """What one replica runs: its pieces keep the mapped axis with size 1 (that is how they
  are laid out on the devices); drop it, run ``jaxpr``, put it back on the outputs."""
  squeeze, expand_dims = _ops["squeeze"], _ops["expand_dims"]
  piece_avals = [a if ax is None else a.update(shape=a.shape[:ax] + (1,) + a.shape[ax + 1:])
                 for a, ax in zip(in_avals, in_axes)]

  def body(*pieces):
    args = [p if ax is None else squeeze(p, (ax,)) for p, ax in zip(pieces, in_axes)]
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    return [o if ax is None else expand_dims(o, (ax,)) for o, ax in zip(outs, out_axes)]
  with extend_axis_env(axis_name, size):
    return trace_to_jaxpr(body, piece_avals, "pmap")


_compile_cache = LRUCache()


def signature(x):
  if type(x) is Array:
    multi = x._multi
    return x.aval if multi is None else (x.aval, multi._sharding)
  return get_aval(x)


def compiled_for(args, params) -> CompiledPmap:
  # Keyed on avals only: arguments laid out differently are moved into place by shard_args.
  in_avals = tuple(x.aval if type(x) is Array else get_aval(x) for x in args)
  key = (params["jaxpr"], in_avals, *[(k, v) for k, v in params.items() if k != "jaxpr"])
  entry = _compile_cache.get(key)
  if entry is None:
    entry = PmapLowering(in_avals=in_avals, **params).compile()
    _compile_cache.put(key, entry)
  return entry


def _pmap_impl(*args, **params):
  check_no_tracers(args)
  return compiled_for(args, params)(args)

xla_pmap_p.def_impl(_pmap_impl)


# --- lowering a pmap inside a program (nested in another pmap, a loop, or at the top) ------

def _pmap_lowering(ctx, *args, **params):
  mctx = ctx.module_context
  # Programs with pmaps inside are compiled with the replicas they need; a program of one
  # replica (pmaps of size 1 only, as in ``jit(pmap(f))`` of one slice) is a plain one.
  needed = params["global_axis_size"] * jaxpr_replicas(params["jaxpr"].jaxpr)
  if mctx.num_replicas < needed:
    raise RuntimeError(f"internal error: xla_pmap needing {needed} replicas lowered in a "
                       f"program of {mctx.num_replicas}")
  return lower_pmap(mctx, args, ctx.avals_in, ctx.avals_out, **params)


def lower_pmap(mctx, args, avals_in, avals_out, *, jaxpr, axis_name, global_axis_size,
                in_axes, out_axes, given=None, keep_pieces=False, **_):
  """Each replica takes its slice of the mapped inputs by its position along the new axis
  (``given[k]``: input k is that slice already), runs the body, and gathers the mapped
  outputs back over the axis (``keep_pieces``: returns its own piece of each instead)."""
  outer_env = mctx.axis_env
  mctx.axis_env = tuple(outer_env or ()) + ((axis_name, global_axis_size),)
  try:
    index = xla.axis_index_hlo(mctx, axis_name)
    zero = xla.ir_constant(np.int32(0))
    pieces = []
    for k, (x, aval, ax) in enumerate(zip(args, avals_in, in_axes)):
      if ax is None:
        pieces.append(x)
        continue
      if given is None or not given[k]:
        starts = [index if d == ax else zero for d in range(aval.ndim)]
        sizes = [1 if d == ax else n for d, n in enumerate(aval.shape)]
        x = hlo.dynamic_slice(x, starts, xla._dense_i64(sizes))
      pieces.append(hlo.reshape(xla.aval_to_ir_type(remove_axis(aval, ax)), x))
    consts = [xla.ir_constant(np.asarray(c)) for c in jaxpr.consts]
    outs = xla.lower_jaxpr(mctx, jaxpr.jaxpr, consts, pieces)
    # Gather each output over the axis: write it into its slot of a zero array, then sum.
    groups = xla.axis_groups(mctx, (axis_name,))
    results = []
    for out, aval, full, ax in zip(outs, jaxpr.out_avals, avals_out, out_axes):
      if ax is None:
        results.append(out)
        continue
      one = aval.update(shape=aval.shape[:ax] + (1,) + aval.shape[ax:])
      out = hlo.reshape(xla.aval_to_ir_type(one), out)
      if keep_pieces:
        results.append(out)
        continue
      zeros = xla.full_like_aval(0, full)
      starts = [index if d == ax else zero for d in range(full.ndim)]
      placed = hlo.dynamic_update_slice(zeros, out, starts)
      results.append(_all_reduce_sum(placed, full, groups))
  finally:
    mctx.axis_env = outer_env
  return results


def _all_reduce_sum(x, aval, groups):
  # Booleans are summed as int32 (each slot is written by one replica, so the sum is 0 or 1)
  # and converted back (nonzero is True).
  compute = aval.update(dtype=np.dtype(np.int32)) if aval.dtype == dtypes.bool_ else aval
  if compute is not aval:
    x = hlo.convert(xla.aval_to_ir_type(compute), x)
  op = hlo.AllReduceOp([xla.aval_to_ir_type(compute)], [x], xla.replica_groups_attr(groups))
  scalar = xla.aval_to_ir_type(compute.update(shape=()))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.add(*block.arguments)])
  out = op.results[0]
  return out if compute is aval else hlo.convert(xla.aval_to_ir_type(aval), out)

xla.register_lowering(xla_pmap_p, _pmap_lowering)


# --- autodiff ----------------------------------------------------------------------------

def _derived(params, n_args, **changes):
  """Params of a pmap derived from another (new argument list: nothing donated)."""
  new = {k: v for k, v in params.items() if k != "jaxpr"}
  new["donated_invars"] = (False,) * n_args
  new.update(changes)
  return new


def _axis_env(params):
  return extend_axis_env(params["axis_name"], params["global_axis_size"])


def _axis_key(params):
  return params["axis_name"], params["global_axis_size"]


def _pmap_jvp(primals, tangents, *, jaxpr, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]

  def make():
    with _axis_env(params):
      jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
    return (*convert_constvars(jvp_closed), out_nonzeros)
  jvp_closed, consts, out_nonzeros = memoize_derived(
      ("pmap_jvp", jaxpr, tuple(nonzeros), *_axis_key(params)), make)
  in_axes, out_axes = params["in_axes"], params["out_axes"]
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  args = [*consts, *primals, *nz_tangents]
  new_in = ((None,) * len(consts) + tuple(in_axes) +
            tuple(ax for ax, nz in zip(in_axes, nonzeros) if nz))
  new_out = tuple(out_axes) + tuple(ax for ax, nz in zip(out_axes, out_nonzeros) if nz)
  outs = xla_pmap_p.bind(*args, jaxpr=jvp_closed,
                         **_derived(params, len(args), in_axes=new_in, out_axes=new_out))
  n_out = len(jaxpr.out_avals)
  nz_outs = iter(outs[n_out:])
  tangents_out = [next(nz_outs) if nz else ad.Zero(get_aval(o).to_tangent_aval())
                  for o, nz in zip(outs[:n_out], out_nonzeros)]
  return outs[:n_out], tangents_out

ad.primitive_jvps[xla_pmap_p] = _pmap_jvp


def _pmap_partial_eval(trace, *args, jaxpr, **params):
  unknowns = [trace.is_unknown(x) for x in args]

  def make():
    with _axis_env(params):
      known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns)
    return (*convert_constvars(known), unknown, out_unknowns, num_res)
  known, known_consts, unknown, out_unknowns, num_res = memoize_derived(
      ("pmap_pe", jaxpr, tuple(unknowns), *_axis_key(params)), make)
  in_axes, out_axes = params["in_axes"], params["out_axes"]
  known_args = [*known_consts, *[x for x, u in zip(args, unknowns) if not u]]
  known_in = (None,) * len(known_consts) + tuple(
      ax for ax, u in zip(in_axes, unknowns) if not u)
  known_out = tuple(ax for ax, u in zip(out_axes, out_unknowns) if not u) + (0,) * num_res
  with set_current_trace(trace.parent):
    known_outs = xla_pmap_p.bind(*known_args, jaxpr=known, **_derived(
        params, len(known_args), in_axes=known_in, out_axes=known_out))
  n_known = len(known_outs) - num_res
  residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
  unknown_args = [*residuals, *[x for x, u in zip(args, unknowns) if u]]
  unknown_in = (0,) * num_res + tuple(ax for ax, u in zip(in_axes, unknowns) if u)
  unknown_out = tuple(ax for ax, u in zip(out_axes, out_unknowns) if u)
  unknown_outs = trace.record(xla_pmap_p, unknown_args, dict(
      jaxpr=unknown, **_derived(params, len(unknown_args), in_axes=unknown_in,
                                out_axes=unknown_out)))
  known_it, unknown_it = iter(known_outs), iter(unknown_outs)
  return [next(unknown_it) if u else next(known_it) for u in out_unknowns]

pe.partial_eval_rules[xla_pmap_p] = _pmap_partial_eval


def _pmap_partial_eval_custom(eqn, ins_uk, saveable, is_saved):
  # Under a checkpoint policy the pmapped body is split by the policy, as a jit's is (JAX's
  # pmap is a jit of a shard_map): residuals leave the known pmap stacked along the mapped
  # axis and enter the unknown one mapped.
  params = eqn.params
  jaxpr, in_axes, out_axes = params["jaxpr"], params["in_axes"], params["out_axes"]

  def known_out_uk():
    return (pe.partial_eval_jaxpr_custom(jaxpr, list(ins_uk), saveable, is_saved)[2],)

  with _axis_env(params):
    out_uk, = memoize_derived(("pmap_pe_custom_out", jaxpr, tuple(ins_uk), saveable, is_saved,
                               *_axis_key(params)), known_out_uk)
  known_out_axes = tuple(ax for ax, u in zip(out_axes, out_uk) if not u)

  def bind_known(known, args):
    n_consts = len(args) - sum(not u for u in ins_uk)
    k_in = (None,) * n_consts + tuple(ax for ax, u in zip(in_axes, ins_uk) if not u)
    k_out = known_out_axes + (0,) * (len(known.out_avals) - len(known_out_axes))
    return xla_pmap_p.bind(*args, jaxpr=known, **_derived(params, len(args), in_axes=k_in,
                                                            out_axes=k_out))

  def unknown_params(body, sources, out_pos):
    u_in = tuple(0 if kind == "res" else in_axes[i] for kind, i in sources)
    return dict(jaxpr=body, **_derived(params, len(sources), in_axes=u_in,
                                       out_axes=tuple(out_axes[i] for i in out_pos)))
  with _axis_env(params):
    return pe.call_partial_eval_custom(eqn, ins_uk, saveable, is_saved, jaxpr, bind_known,
                                       unknown_params, memoize_derived, with_sources=True)

pe.partial_eval_jaxpr_custom_rules[xla_pmap_p] = _pmap_partial_eval_custom
pe.splits_known_calls.add(xla_pmap_p)


def _pmap_transpose(cts, *args, jaxpr, **params):
  in_axes, out_axes = params["in_axes"], params["out_axes"]
  undefined = [ad.is_undefined_primal(x) for x in args]
  defined = [(x, ax) for x, ax, u in zip(args, in_axes, undefined) if not u]
  # An unmapped output is one device's copy of a value taken as equal on all devices, so each
  # device gets an equal share of its cotangent (as JAX's pmap does for out_axes=None).
  size = params["global_axis_size"]
  div = _ops["div"]
  nz = [(ct if ax is not None else div(ct, np.asarray(size, get_aval(ct).dtype)[()]), ax)
        for ct, ax in zip(cts, out_axes) if type(ct) is not ad.Zero]
  ct_nonzero = [type(ct) is not ad.Zero for ct in cts]
  n_def = len(defined)

  def transposed(*flat):
    it_def, it_ct = iter(flat[:n_def]), iter(flat[n_def:])
    full_args = [x if u else next(it_def) for x, u in zip(args, undefined)]
    full_cts = [next(it_ct) if nonzero else ad.Zero(a.to_tangent_aval())
                for a, nonzero in zip(jaxpr.out_avals, ct_nonzero)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full_args, full_cts)
    return [ad.instantiate_zeros(ct) for ct, u in zip(cts_in, undefined) if u]

  def per_device(x, ax):
    aval = get_aval(x)
    return aval if ax is None else remove_axis(aval, ax)
  in_avals = [per_device(x, ax) for x, ax in defined] + [per_device(ct, ax) for ct, ax in nz]

  def make():
    with _axis_env(params):
      return convert_constvars(trace_to_jaxpr(transposed, in_avals, "transpose", "transpose"))
  t_closed, consts = memoize_derived(
      ("pmap_transpose", jaxpr, tuple(undefined), tuple(ct_nonzero), tuple(in_avals),
       *_axis_key(params)), make)
  call_args = [*consts, *[x for x, _ in defined], *[ct for ct, _ in nz]]
  t_in = (None,) * len(consts) + tuple(ax for _, ax in defined) + tuple(ax for _, ax in nz)
  # An unmapped input was seen by every device: its cotangent is the sum of theirs.
  t_out = tuple(0 if ax is None else ax for ax, u in zip(in_axes, undefined) if u)
  outs = iter(xla_pmap_p.bind(*call_args, jaxpr=t_closed, **_derived(
      params, len(call_args), in_axes=t_in, out_axes=t_out)))
  result = []
  for ax, u in zip(in_axes, undefined):
    if not u:
      result.append(None)
    else:
      ct = next(outs)
      result.append(_ops["reduce_sum"](ct, (0,)) if ax is None else ct)
  return result

ad.primitive_transposes[xla_pmap_p] = _pmap_transpose


# --- batching (vmap of pmap) ---------------------------------------------------------------

def _pmap_batch(axis_data, vals, dims, *, jaxpr, **params):
  in_axes, out_axes = params["in_axes"], params["out_axes"]
  new_vals, new_in, inner_dims = [], [], []
  for x, d, ax in zip(vals, dims, in_axes):
    if d is None or ax is None:
      new_vals.append(x)
      new_in.append(ax)
      inner_dims.append(d)
    else:  # batch dimension first, so each device's slice has it first too
      new_vals.append(batching.moveaxis(x, d, 0))
      new_in.append(ax + 1)
      inner_dims.append(0)

  def make():
    with _axis_env(params):
      batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, inner_dims)
    return (*convert_constvars(batched), out_dims)
  batched, consts, out_dims = memoize_derived(
      ("pmap_batch", jaxpr, axis_data.size, axis_data.name, tuple(inner_dims),
       *_axis_key(params)), make)
  new_out = tuple(ax if d is None or ax is None else ax + 1
                  for ax, d in zip(out_axes, out_dims))
  args = [*consts, *new_vals]
  outs = xla_pmap_p.bind(*args, jaxpr=batched, **_derived(
      params, len(args), in_axes=(None,) * len(consts) + tuple(new_in), out_axes=new_out))
  return outs, [None if d is None else 0 for d in out_dims]

batching.fancy_primitive_batchers[xla_pmap_p] = _pmap_batch


# --- checkify (checkify of pmap) -----------------------------------------------------------

def _pmap_checkify(error, enabled_errors, *args, jaxpr, **params):
  # Every device starts from the same error and returns its own: the error comes out with
  # a leading device axis (a batched error, reported per mapped index).
  err_vals, err_tree, err_avals = checkify.error_avals(error)
  with _axis_env(params):
    checked, out_tree, _ = checkify.checkify_traced(jaxpr, enabled_errors, err_tree, err_avals,
                                                    list(jaxpr.in_avals))
  checked, consts = convert_constvars(checked)
  n_err = out_tree.num_leaves
  call_args = [*consts, *err_vals, *args]
  new_in = (None,) * (len(consts) + len(err_vals)) + tuple(params["in_axes"])
  new_out = (0,) * n_err + tuple(params["out_axes"])
  outs = xla_pmap_p.bind(*call_args, jaxpr=checked, **_derived(
      params, len(call_args), in_axes=new_in, out_axes=new_out))
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[xla_pmap_p] = _pmap_checkify

