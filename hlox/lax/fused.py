"""``fused_call``: a function the compiler must fuse into one kernel, with the memory space
(``jax.memory.Space``) of each result (``hlox.experimental.fused``).

The body is traced on arguments of memory space ``Any``; the results are typed in the
spaces asked for. It lowers (for CUDA only, as in JAX) to a ``custom_call`` named ``fused``
that calls the body's function, with ``MUST_FUSE``, ``inlineable = false`` and
``out_spaces`` in its backend configuration. On other platforms there is no lowering.

Derivatives and batching transform the body and bind ``fused_call`` again: the JVP binds
one call for the primal results and one for the tangents (a body linear in the tangents,
so that linearization keeps the primal call on the known side), and the transpose of such
a call is a ``fused_call`` of the transposed body.
"""
from __future__ import annotations


from hlox.core.avals import MemorySpace
from hlox.core.jaxpr import ClosedJaxpr, dce_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.interpreters.mlir import custom_call
from hlox.lax.control_flow import _batch_jaxpr, _memo

from jaxlib.mlir import ir

__all__ = ["fused_p"]


class _FusedCall(Primitive):
  multiple_results = True


fused_p = _FusedCall("fused_call")


def _anywhere(aval):
  return aval.update(memory_space=MemorySpace.Any)


def _fused_abstract_eval(*avals, jaxpr, out_spaces):
  return [a.update(memory_space=s) for a, s in zip(jaxpr.out_avals, out_spaces)]

fused_p.def_abstract_eval(_fused_abstract_eval)
fused_p.def_impl(lambda *args, **params: xla.apply_primitive(fused_p, *args, **params))


def _fused_lowering(ctx, *args, jaxpr, out_spaces):
  name = xla.private_function(ctx.module_context, "fused", jaxpr).name.value
  out_types = [xla.aval_to_ir_type(a) for a in ctx.avals_out]
  config = dict(out_spaces=ir.ArrayAttr.get([ir.StringAttr.get(str(s)) for s in out_spaces]),
                inlineable=ir.BoolAttr.get(False), MUST_FUSE=ir.BoolAttr.get(True))
  op = custom_call("fused", result_types=out_types, operands=list(args),
                   called_computations=[name], backend_config=config)
  return list(op.results)

xla.register_lowering(fused_p, _fused_lowering, platform="cuda")


def _fused_batch(axis_data, vals, dims, *, jaxpr, out_spaces):
  batched, out_dims = _memo(_batch_jaxpr, jaxpr, axis_data.size, axis_data.name,
                            tuple(dims), False)
  return fused_p.bind(*vals, jaxpr=batched, out_spaces=out_spaces), out_dims

batching.fancy_primitive_batchers[fused_p] = _fused_batch


def _tangent_jaxpr(jaxpr, nonzeros):
  """The body's tangent map: (body taking the used primals and nonzero tangents, which of
  those inputs it takes, which outputs have nonzero tangents)."""
  jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, list(nonzeros), instantiate=False)
  n_out = len(jaxpr.out_avals)
  keep = [False] * n_out + [True] * sum(out_nz)
  body, used = dce_jaxpr(jvp_closed.jaxpr, keep, prune_invars=True)
  return ClosedJaxpr(body, jvp_closed.consts), tuple(used), tuple(out_nz)


def _fused_jvp(primals, tangents, *, jaxpr, out_spaces):
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  primals_out = fused_p.bind(*primals, jaxpr=jaxpr, out_spaces=out_spaces)
  body, used, out_nz = _memo(_tangent_jaxpr, jaxpr, nonzeros)
  inputs = [*primals, *(t for t in tangents if type(t) is not ad.Zero)]
  spaces = tuple(s for s, nz in zip(out_spaces, out_nz) if nz)
  nz_outs = iter(fused_p.bind(*(x for x, u in zip(inputs, used) if u), jaxpr=body,
                              out_spaces=spaces) if any(out_nz) else [])
  tangents_out = [next(nz_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nz)]
  return primals_out, tangents_out

ad.primitive_jvps[fused_p] = _fused_jvp


def _transposed_jaxpr(jaxpr, linear, in_avals):
  """A body taking the defined inputs and the output cotangents, returning the cotangents of
  the ``linear`` inputs (zeros made explicit)."""
  n_defined = len(linear) - sum(linear)

  def transposed(*xs):
    defined, cts = iter(xs[:n_defined]), xs[n_defined:]
    args = [ad.UndefinedPrimal(_anywhere(a)) if lin else next(defined)
            for a, lin in zip(jaxpr.in_avals, linear)]
    outs = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, args, list(cts))
    return [ad.instantiate_zeros(ct) for ct, lin in zip(outs, linear) if lin]
  return trace_to_jaxpr(transposed, list(in_avals), "fused_transpose", "fused")


def _fused_transpose(cts, *args, jaxpr, out_spaces):
  linear = tuple(ad.is_undefined_primal(x) for x in args)
  defined = [x for x in args if not ad.is_undefined_primal(x)]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  in_avals = tuple(_anywhere(get_aval(x)) for x in [*defined, *cts])
  body = _memo(_transposed_jaxpr, jaxpr, linear, in_avals)
  spaces = tuple(x.aval.memory_space for x in args if ad.is_undefined_primal(x))
  outs = iter(fused_p.bind(*defined, *cts, jaxpr=body, out_spaces=spaces))
  return [next(outs) if lin else None for lin in linear]

ad.primitive_transposes[fused_p] = _fused_transpose
