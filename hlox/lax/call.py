"""``jit_p``: the call primitive a jitted function binds under another transformation.

Its parameter ``jaxpr`` is a ClosedJaxpr without consts (captured values are passed as the
leading arguments). Bound on the eval trace it compiles (once per jaxpr and argument types)
and runs; lowered inside another module it becomes a call to a private function.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from hlox import monitoring

from hlox import _tree_transform as tree_util
from hlox.config import config
from hlox.cache import LRUCache, memoize_derived
from hlox.core import dtypes
from hlox.core import jaxpr as core_jaxpr
from hlox.core import sharding_types
from hlox.core.avals import Token, abstract_token
from hlox.core.jaxpr import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, convert_constvars,
                             trace_to_jaxpr)
from hlox.core.primitive import Primitive
from hlox.core.tracer import check_no_tracers, get_aval, set_current_trace
from hlox.errors import DistributedRuntimeError
from hlox.interpreters import ad, batching, checkify, jet, nan_checks, state_discharge, xla
from hlox.interpreters import partial_eval as pe
from hlox.interpreters.partitioned import compile_partitioned
from hlox.interpreters.pmap import jaxpr_replicas
from hlox.interpreters.replicated import compile_replicated_jaxpr
from hlox.lax.device_put import program_device
from hlox.runtime import client
from hlox.runtime.array import (SCALAR_TYPES, Array, check_not_deleted, device_put,
                                moved_buffers, needs_moves, scalar_argument, single_buffers)

__all__ = ["jit_p", "call_p", "closed_call_p", "CompiledCall", "compile_closed_jaxpr",
           "host_outputs"]


class JitPrimitive(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    shown = {"name": params["name"], "jaxpr": params["jaxpr"]}
    if any(params.get("donated_invars", ())):
      shown["donated_invars"] = params["donated_invars"]
    if params.get("keep_unused"):
      shown["keep_unused"] = True
    if params.get("inline"):
      shown["inline"] = True
    return shown


jit_p = JitPrimitive("jit")


def _jit_abstract_eval(*avals, jaxpr: ClosedJaxpr, **params):
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"jit {params.get('name')}: expected {len(jaxpr.in_avals)} arguments, got "
                    f"{len(avals)}")
  return list(jaxpr.out_avals)

jit_p.def_abstract_eval(_jit_abstract_eval)
core_jaxpr.typecheck_rules[jit_p] = (
    lambda in_avals, *, jaxpr, **_: core_jaxpr.check_call_operands("jit", in_avals, jaxpr))


class _CallAsJit(Primitive):
  """JAX's plain call primitives, ``closed_call`` (``bind(*args, call_jaxpr=closed)``) and
  ``call`` (``bind(fun, *args)``, ``fun`` returning a flat list): a call of a jaxpr with no
  options. hlox has one call primitive with every rule, ``jit``; binding one of these binds
  ``jit_p`` (marked ``inline``) on the jaxpr, so the call runs, differentiates, batches and
  lowers as a jitted call. Libraries that interpret jaxprs (numpyro's provenance tracking)
  key rules on these objects."""
  multiple_results = True

  def bind(self, *args, **params):
    if self.name == "call":
      fun, *args = args
      run = getattr(fun, "call_wrapped", fun)
      closed = trace_to_jaxpr(lambda *xs: list(run(*xs)), [get_aval(x) for x in args],
                              debug_info=self.name)
    else:
      closed = params.pop("call_jaxpr")
    if params:
      raise TypeError(f"{self.name}: unexpected parameters {sorted(params)}")
    closed, consts = convert_constvars(closed)
    operands = [*consts, *args]
    return jit_p.bind(*operands, jaxpr=closed, name=self.name,
                      donated_invars=(False,) * len(operands), keep_unused=False, inline=True)


closed_call_p = _CallAsJit("closed_call")
call_p = _CallAsJit("call")


class CompiledCall:
  """An executable plus what is needed to call it with Arrays and wrap its results.

  It keeps none of ``lowered`` but its argument and result layout: the StableHLO module (and
  the MLIR context it pins) is garbage once compiled, and the compile caches hold thousands
  of these.
  """

  __slots__ = ("run", "kept", "out_avals", "device", "device_key", "executable", "n_args",
               "fast", "moves", "relaid", "arg_layouts")

  def __init__(self, executable, lowered, device_key, moves=False):
    self.executable = executable
    self.run = executable.run
    n = len(lowered.in_avals)
    self.n_args = n
    self.kept = None if len(lowered.kept_var_idx) == n else list(lowered.kept_var_idx)
    self.out_avals = lowered.out_avals
    self.device = executable.device
    self.device_key = device_key
    self.moves = moves  # uncommitted arguments to copy to ``device`` first: the slow call
    # Results XLA may give in another layout than the default (``jit`` with Formats): they
    # are copied to the default layout too, on ``__call__`` (never the fast path).
    self.relaid = lowered.result_layouts
    # Arguments taken in another layout than the default: their buffers are checked.
    self.arg_layouts = xla.expected_arg_layouts(executable.loaded, lowered.arg_layouts)
    self.fast = (self.__call__ if moves or self.relaid or self.arg_layouts
                 else self._make_fast())

  def _make_fast(self):
    """The cache-hit path: flat Arrays in, flat Arrays out, nothing else (falls back to
    ``__call__`` for other argument types or a deleted buffer)."""
    execute = self.executable.loaded.execute_sharded
    handlers = self.executable.handlers
    out_avals = self.out_avals
    device_key = self.device_key
    slow = self.__call__
    kept = self.kept

    # map() with C-level callables avoids the frame a list comprehension costs per call.
    get_buf = operator.attrgetter("_buf")
    device_keys = [device_key] * len(out_avals)

    def fast(args):
      try:
        bufs = list(map(get_buf, args if kept is None else [args[i] for i in kept]))
        outs = execute(bufs).consume_with_handlers(handlers)
      except DistributedRuntimeError:  # a lost process, raised asynchronously: not ours to hide
        raise
      except Exception:  # a deleted buffer: the slow call says so
        return slow(args)
      return list(map(Array, outs, out_avals, device_keys))
    return fast

  def __call__(self, args: Sequence) -> list:
    """Run on flat arguments (Arrays, NumPy arrays or scalars); returns flat Arrays."""
    if self.kept is not None:
      args = [args[i] for i in self.kept]
    bufs = argument_buffers(args, self.device if self.device_key is not None else None)
    if self.arg_layouts:
      xla.check_arg_layouts(bufs, self.arg_layouts)
    try:
      outs = self.run(bufs)
    except Exception:  # a deleted (e.g. donated) input: say so in JAX's words
      check_not_deleted(args)
      raise
    device_key = self.device_key
    outs = [Array(b, a, device_key) for b, a in zip(outs, self.out_avals)]
    return xla.relaid_results(outs, self.relaid) if self.relaid else outs


def host_outputs(call, out_avals):
  """``call`` (flat arguments -> flat results of a program whose results have types
  ``out_avals``) with the results that hold no data made on the host, as JAX gives them:
  float0 ones as NumPy zeros (booleans on the device), tokens as new ``Token``s (empty
  arrays on the device, see ``xla.lower_jaxpr_to_module``). ``call`` itself when there are
  none, so other programs pay nothing."""
  positions = [i for i, a in enumerate(out_avals)
               if a is abstract_token or a.dtype == dtypes.float0]
  if not positions:
    return call

  def with_host_outputs(args):
    outs = list(call(args))
    for i in positions:
      aval = out_avals[i]
      outs[i] = Token() if aval is abstract_token else np.zeros(aval.shape, dtypes.float0)
    return outs
  return with_host_outputs


def argument_buffers(args, device) -> list:
  """The device buffers of flat arguments: Arrays' own (uncommitted ones copied to
  ``device``), scalars' from the shared scalar buffers, other host values transferred to
  ``device`` (None: the default device)."""
  arrays = [x if type(x) is Array else scalar_argument(x, device) if type(x) in SCALAR_TYPES
            else _host_argument(x, device) for x in args]
  if device is None:
    return single_buffers(arrays)
  return moved_buffers(arrays, device)


def _host_argument(x, device):
  # A tracer reaching a compiled call's cache-hit path outside its transformation has
  # escaped it (the slow path reports the same, before the signature is looked up).
  check_no_tracers((x,))
  return device_put(x, device)


_compile_cache = LRUCache()


def forget_compiled(parts) -> None:
  """Drop from the compile caches the compiled calls among ``parts`` (what a jitted
  function's call cache held) and their executables: clearing a function's caches frees
  its programs, as in JAX, unless something else still holds them."""
  parts = [*parts, *(p.call for p in parts if type(p) is nan_checks.CheckedCall)]
  ids = {id(p) for p in parts}
  held = list(parts) + _compile_cache.discard_where(lambda entry: id(entry) in ids)
  # (Programs over meshes or replicas hold theirs elsewhere: only single-device calls
  # name one executable.)
  xla.forget_executables([p.executable for p in held if type(p) is CompiledCall])


def _device_of(sigs):
  devices = {s[1] for s in sigs if type(s) is tuple}
  if len(devices) > 1:
    raise ValueError("Received incompatible devices for jitted computation. Got arguments "
                     f"(or closed-over values) committed to the devices {sorted(devices, key=str)}"
                     "; move them to one device with device_put")
  return devices.pop() if devices else None


def compile_closed_jaxpr(closed: ClosedJaxpr, sigs, name: str = "jit",
                         donated_invars: Sequence[bool] = (), keep_unused: bool = False
                         ) -> CompiledCall:
  """Lower and compile ``closed`` for arguments with signatures ``sigs`` (cached)."""
  key = (closed, tuple(sigs), tuple(donated_invars), keep_unused)
  entry = _compile_cache.get(key)
  if entry is None:
    if jaxpr_replicas(closed.jaxpr) > 1:
      # A jit around a pmap: one program on as many replicas as the pmaps need. Only
      # across processes (each running its own part of the pmaps) is it run op by op.
      entry = compile_replicated_jaxpr(closed, name, donated_invars, keep_unused)
      if entry is None:
        entry = _EvalCall(closed)
      _compile_cache.put(key, entry)
      return entry
    partitioned = compile_partitioned(closed, sigs, name, donated_invars, keep_unused)
    if partitioned is not None:  # sharded arguments, or sharding constraints inside
      _compile_cache.put(key, partitioned)
      return partitioned
    device = program_device(closed.jaxpr, _device_of(sigs))
    module_name = f"jit({name})"
    monitoring.log_compile(
        "Compiling %s with global shapes and types %s. Argument mapping: %s.", module_name,
        tuple(s if type(s) is not tuple else s[0] for s in sigs),
        tuple(s[1] if type(s) is tuple else client.default_device() for s in sigs))
    with monitoring.log_elapsed_time("Finished jaxpr to MLIR module conversion %s in %.9f sec",
                                     module_name, monitoring.LOWER_EVENT):
      lowered = xla.lower_jaxpr_to_module(
          closed, module_name, donated_invars, keep_unused,
          platform=client.lowering_platform(device or client.default_device()))
    executable = xla.compile_lowered(lowered, device)
    entry = CompiledCall(executable, lowered, device, needs_moves(sigs, device))
    _compile_cache.put(key, entry)
  if nan_checks.enabled and type(entry) is CompiledCall:
    return nan_checks.CheckedCall(entry, closed, name)
  return entry


class _EvalCall:
  """Stands in for a CompiledCall when a jaxpr runs op by op (pmaps over several processes)."""

  executable = None
  kept = None
  device_key = None
  device = None

  def __init__(self, closed: ClosedJaxpr):
    self.closed = closed
    self.out_avals = closed.out_avals
    self.fast = self.__call__

  def __call__(self, args: Sequence) -> list:
    from hlox.core.jaxpr import eval_jaxpr
    return eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)


_scalar_signatures: dict = {}


def signature(x):
  """Cache-key signature of a concrete argument: its aval (plus device when not default)."""
  if type(x) is Array:
    return x._sig
  key = (type(x), config._values["enable_x64"])
  sig = _scalar_signatures.get(key)  # a scalar's aval depends on its type alone
  if sig is None:
    sig = get_aval(x)
    if type(x) in SCALAR_TYPES:
      _scalar_signatures[key] = sig
  return sig


def _jit_impl(*args, jaxpr, name, donated_invars=(), keep_unused=False, inline=False):
  check_no_tracers(args)
  sigs = [signature(x) for x in args]
  compiled = compile_closed_jaxpr(jaxpr, sigs, name, donated_invars, keep_unused)
  return host_outputs(compiled, jaxpr.out_avals)(args)

jit_p.def_impl(_jit_impl)


def _jit_deoptimized(*args, jaxpr, **params):
  return nan_checks.eval_deoptimized(jaxpr.jaxpr, jaxpr.consts, args)

nan_checks.deoptimized_rules[jit_p] = _jit_deoptimized


def _jit_lowering(ctx, *args, jaxpr, name, donated_invars=(), keep_unused=False, inline=False):
  return xla.lower_call(ctx, jaxpr, args, name=name)

xla.register_lowering(jit_p, _jit_lowering)
xla.droppable_calls.add(jit_p)


# --- autodiff ----------------------------------------------------------------------------

def _jit_params(params, n_args):
  """The params of a derived jit call: same options, no donation (new argument list)."""
  return dict(name=params["name"], donated_invars=(False,) * n_args,
              keep_unused=params["keep_unused"], inline=params["inline"])


def _jit_jvp(primals, tangents, *, jaxpr, **params):
  nonzeros = [type(t) is not ad.Zero for t in tangents]

  def make():
    jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
    return (*convert_constvars(jvp_closed), out_nonzeros)
  jvp_closed, consts, out_nonzeros = memoize_derived(("jvp", jaxpr, tuple(nonzeros)), make)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  args = [*consts, *primals, *nz_tangents]
  outs = jit_p.bind(*args, jaxpr=jvp_closed, **_jit_params(params, len(args)))
  n_out = len(jaxpr.out_avals)
  nz_outs = iter(outs[n_out:])
  tangents_out = [next(nz_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return outs[:n_out], tangents_out

ad.primitive_jvps[jit_p] = _jit_jvp


def _jit_partial_eval(trace, *args, jaxpr, **params):
  unknowns = [trace.is_unknown(x) for x in args]

  def make():
    known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns)
    known, known_consts = convert_constvars(known)
    known, forwarded = _forward_input_residuals(known, num_res)
    return known, unknown, out_unknowns, forwarded, known_consts
  known, unknown, out_unknowns, forwarded, known_consts = memoize_derived(
      ("pe", jaxpr, tuple(unknowns)), make)
  known_args = [*known_consts, *[x for x, u in zip(args, unknowns) if not u]]
  with set_current_trace(trace.parent):
    known_outs = jit_p.bind(*known_args, jaxpr=known, **_jit_params(params, len(known_args)))
  n_known = len(known_outs) - sum(i is None for i in forwarded)
  computed, known_outs = iter(known_outs[n_known:]), known_outs[:n_known]
  residuals = [next(computed) if i is None else known_args[i] for i in forwarded]
  unknown_args = [*residuals, *[x for x, u in zip(args, unknowns) if u]]
  unknown_outs = trace.record(jit_p, unknown_args,
                              dict(jaxpr=unknown, **_jit_params(params, len(unknown_args))))
  known_it, unknown_it = iter(known_outs), iter(unknown_outs)
  return [next(unknown_it) if u else next(known_it) for u in out_unknowns]

pe.partial_eval_rules[jit_p] = _jit_partial_eval


def _jit_partial_eval_custom(eqn, ins_uk, saveable, is_saved):
  # Under a checkpoint policy a nested jit is split by that policy (as JAX's pjit rule): a
  # known jit computes what the policy saves, an unknown jit recomputes the rest.
  params = eqn.params
  return pe.call_partial_eval_custom(
      eqn, ins_uk, saveable, is_saved, params["jaxpr"],
      lambda known, args: jit_p.bind(*args, jaxpr=known, **_jit_params(params, len(args))),
      lambda unknown, n: dict(jaxpr=unknown, **_jit_params(params, n)), memoize_derived)

pe.partial_eval_jaxpr_custom_rules[jit_p] = _jit_partial_eval_custom
pe.splits_known_calls.add(jit_p)


def _jit_prune_outputs(eqn, used):
  # A recomputing jit whose results are partly unread drops those, and the work for them.
  if not any(used):
    return eqn
  jaxpr = eqn.params["jaxpr"]

  def make():
    return (ClosedJaxpr(pe.dce_pruned(jaxpr.jaxpr, used)[0], jaxpr.consts),)
  body, = memoize_derived(("prune", jaxpr, tuple(used)), make)
  return JaxprEqn(eqn.invars, [v for v, u in zip(eqn.outvars, used) if u], jit_p,
                  dict(eqn.params, jaxpr=body), eqn.source_info)

pe.output_pruning_rules[jit_p] = _jit_prune_outputs


def _forward_input_residuals(known: ClosedJaxpr, num_res: int):
  """``known`` without the residual outputs that are just its inputs, and per residual the
  index of the input it forwards (None: still an output). The caller passes those inputs to
  the unknown side itself: no copy of them comes out of the known program (as in JAX)."""
  jaxpr = known.jaxpr
  position = {v: i for i, v in enumerate(jaxpr.invars)}
  n_known = len(jaxpr.outvars) - num_res
  forwarded = [None if type(v) is Literal else position.get(v)
               for v in jaxpr.outvars[n_known:]]
  if all(i is None for i in forwarded):
    return known, forwarded
  outvars = jaxpr.outvars[:n_known] + [v for v, i in zip(jaxpr.outvars[n_known:], forwarded)
                                       if i is None]
  trimmed = Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info)
  return ClosedJaxpr(trimmed, known.consts), forwarded


def transpose_call(cts, args, jaxpr, bind):
  """The transpose rule of a call primitive over the closed ``jaxpr``: its transposed jaxpr
  (made once per undefined/zero pattern and types) is called by ``bind(operands, jaxpr)``,
  which binds the primitive again; one cotangent per argument, None for defined ones."""
  undefined = [ad.is_undefined_primal(x) for x in args]
  defined_args = [x for x, u in zip(args, undefined) if not u]
  ct_nonzero = [type(ct) is not ad.Zero for ct in cts]
  nz_cts = [ct for ct in cts if type(ct) is not ad.Zero]

  def transposed(*flat):
    defined, cts_nz = flat[:len(defined_args)], flat[len(defined_args):]
    it_def, it_ct = iter(defined), iter(cts_nz)
    full_args = [x if u else next(it_def) for x, u in zip(args, undefined)]
    full_cts = [next(it_ct) if nz else ad.Zero(a.to_tangent_aval())
                for a, nz in zip(jaxpr.out_avals, ct_nonzero)]
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full_args, full_cts)
    return [ad.instantiate_zeros(ct) for ct, u in zip(cts_in, undefined) if u]

  in_avals = [get_aval(x) for x in defined_args] + [get_aval(ct) for ct in nz_cts]

  def make():
    t_closed = trace_to_jaxpr(transposed, in_avals, "transpose", "transpose")
    return convert_constvars(t_closed)
  # The transposed jaxpr depends on the defined arguments only through their avals
  # (``transposed`` receives them as arguments), not on which primitive calls it.
  t_closed, consts = memoize_derived(
      ("transpose", jaxpr, tuple(undefined), tuple(ct_nonzero), tuple(in_avals)), make)
  outs = iter(bind([*consts, *defined_args, *nz_cts], t_closed))
  return [next(outs) if u else None for u in undefined]


def _jit_transpose(cts, *args, jaxpr, **params):
  return transpose_call(cts, args, jaxpr, lambda operands, t_closed: jit_p.bind(
      *operands, jaxpr=t_closed, **_jit_params(params, len(operands))))

ad.primitive_transposes[jit_p] = _jit_transpose


# --- batching ----------------------------------------------------------------------------

def _jit_batch(axis_data, vals, dims, *, jaxpr, **params):
  splits = None
  if sharding_types.active[0]:  # the batched jaxpr's inputs are split as the values are
    splits = tuple(sharding_types.split_of(v) for v in vals)
    if not any(s is not None for s in splits):
      splits = None

  def make():
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims, in_splits=splits)
    return out_dims, *convert_constvars(batched)
  out_dims, batched, consts = memoize_derived(
      ("batch", jaxpr, axis_data.size, axis_data.name, tuple(dims), splits), make)
  args = [*consts, *vals]
  outs = jit_p.bind(*args, jaxpr=batched, **_jit_params(params, len(args)))
  return outs, out_dims

batching.fancy_primitive_batchers[jit_p] = _jit_batch


# --- jet (Taylor mode) -------------------------------------------------------------------

def _jit_jet(primals, series, *, jaxpr, **params):
  # The body's jet stays one jitted call, taking and returning every coefficient.
  order = len(series[0])
  series_avals = tuple(get_aval(s[0]) if s else get_aval(p) for p, s in zip(primals, series))

  def make():
    return convert_constvars(jet.jet_jaxpr(jaxpr, order, series_avals))
  jet_closed, consts = memoize_derived(("jet", jaxpr, order, series_avals), make)
  args = [*consts, *primals, *[t for terms in series for t in terms]]
  outs = jit_p.bind(*args, jaxpr=jet_closed, **_jit_params(params, len(args)))
  n_out = len(jaxpr.out_avals)
  flat = outs[n_out:]
  return outs[:n_out], [flat[i * order:(i + 1) * order] for i in range(n_out)]

jet.jet_rules[jit_p] = _jit_jet


# --- checkify ----------------------------------------------------------------------------

def _jit_checkify(error, enabled_errors, *args, jaxpr, **params):
  # The error goes in and out of the call: the body stays one compiled unit.
  err_vals, err_tree, err_avals = checkify.error_avals(error)
  checked, out_tree, _ = checkify.checkify_traced(jaxpr, enabled_errors, err_tree, err_avals,
                                                  [get_aval(x) for x in args])
  checked, consts = convert_constvars(checked)
  call_args = [*consts, *err_vals, *args]
  outs = jit_p.bind(*call_args, jaxpr=checked, **_jit_params(params, len(call_args)))
  n_err = out_tree.num_leaves
  return tree_util.tree_unflatten(out_tree, outs[:n_err]), outs[n_err:]

checkify.error_checks[jit_p] = _jit_checkify


sharding_types.sharding_rules[jit_p] = sharding_types.call_rule("jaxpr")
sharding_types.sources.add(jit_p)


def _jit_discharge(refs, *args, jaxpr, name, donated_invars=(), keep_unused=False,
                   inline=False):
  # A jitted call on references (staged inside another program): its pure form takes their
  # values and hands back their final values after its outputs.
  def bind(pure, consts, positions):
    return jit_p.bind(*consts, *args, jaxpr=pure, name=name,
                      donated_invars=(False,) * (len(consts) + len(args)),
                      keep_unused=keep_unused, inline=inline)
  return state_discharge.discharge_call(jaxpr, len(args), bind)


state_discharge.register(jit_p, _jit_discharge)
