"""Primitives that attach XLA metadata (``mhlo.frontend_attributes``) to the lowered program.

- ``xla_metadata_value_p``: the identity on one value; its lowering tags the op that
  produced its operand (``set_xla_metadata(y * z, breakpoint=True)`` tags the multiply).
  Linear (its transpose passes the cotangent through untagged, as in JAX) and elementwise
  for ``vmap``.
- ``xla_metadata_call_p``: a call of a jaxpr lowered as a private function whose ``call`` op
  carries the metadata (``xla_metadata_call``). Its derived calls carry it too: the JVP keeps
  ``xla_metadata`` (primal and tangent work are one call), while the tangent half of a
  linearization and the transposed call take ``ad_metadata`` (``'same'``: the same pairs).

Metadata set by ``set_xla_metadata`` blocks needs no primitive: equations record it in their
``SourceInfo`` (``core/source_info.py``) and ``interpreters/xla.py`` tags their ops.
"""
from __future__ import annotations

from hlox.core.jaxpr import ClosedJaxpr, convert_constvars
from hlox.core.primitive import Primitive
from hlox.core.tracer import set_current_trace
from hlox.cache import memoize_derived
from hlox.interpreters import ad, batching, xla
from hlox.interpreters import partial_eval as pe
from hlox.lax import call
from hlox.lax.call import jit_p

__all__ = ["xla_metadata_value_p", "xla_metadata_call_p"]


# --- tagging one value ---------------------------------------------------------------------

xla_metadata_value_p = Primitive("xla_metadata_value")
xla_metadata_value_p.def_abstract_eval(lambda aval, *, xla_metadata_kvs: aval)
# Numerically the identity: outside a trace there is no op to tag.
xla_metadata_value_p.def_impl(lambda x, *, xla_metadata_kvs: x)
ad.deflinear(xla_metadata_value_p, lambda ct, x, **params: [ct])
batching.primitive_batchers[xla_metadata_value_p] = \
    lambda vals, dims, **params: (xla_metadata_value_p.bind(vals[0], **params), dims[0])


def _xla_metadata_value_lowering(ctx, x, *, xla_metadata_kvs):
  xla.attach_frontend_attributes(x, xla_metadata_kvs)
  return x

xla.register_lowering(xla_metadata_value_p, _xla_metadata_value_lowering)


# --- a tagged call -------------------------------------------------------------------------

class _CallPrimitive(Primitive):
  multiple_results = True


xla_metadata_call_p = _CallPrimitive("xla_metadata_call")
xla_metadata_call_p.def_abstract_eval(lambda *avals, jaxpr, **params: list(jaxpr.out_avals))


def _derived_metadata(xla_metadata, ad_metadata):
  """The metadata of the calls autodiff derives beyond the JVP."""
  return xla_metadata if ad_metadata == "same" else ad_metadata


def _impl(*args, jaxpr: ClosedJaxpr, xla_metadata, ad_metadata):
  # Eagerly the call is an ordinary compiled call: the tags only matter inside a program.
  return jit_p.bind(*args, jaxpr=jaxpr, name="xla_metadata_call",
                    donated_invars=(False,) * len(args), keep_unused=False, inline=False)

xla_metadata_call_p.def_impl(_impl)


def _lowering(ctx, *args, jaxpr, xla_metadata, ad_metadata):
  outs = xla.lower_call(ctx, jaxpr, args, name="xla_metadata_call",
                        scope=ctx.module_context.scope)
  if xla_metadata and outs:
    xla.attach_frontend_attributes(outs[0], xla_metadata)
  return outs

xla.register_lowering(xla_metadata_call_p, _lowering)


def _jvp(primals, tangents, *, jaxpr, xla_metadata, ad_metadata):
  nonzeros = [type(t) is not ad.Zero for t in tangents]

  def make():
    jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
    return (*convert_constvars(jvp_closed), out_nonzeros)
  jvp_closed, consts, out_nonzeros = memoize_derived(
      ("xla_metadata_jvp", jaxpr, tuple(nonzeros)), make)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  outs = xla_metadata_call_p.bind(*consts, *primals, *nz_tangents, jaxpr=jvp_closed,
                                  xla_metadata=xla_metadata, ad_metadata=ad_metadata)
  n_out = len(jaxpr.out_avals)
  nz_outs = iter(outs[n_out:])
  tangents_out = [next(nz_outs) if nz else ad.Zero(a.to_tangent_aval())
                  for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return outs[:n_out], tangents_out

ad.primitive_jvps[xla_metadata_call_p] = _jvp


def _partial_eval(trace, *args, jaxpr, xla_metadata, ad_metadata):
  unknowns = [trace.is_unknown(x) for x in args]

  def make():
    known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns)
    known, known_consts = convert_constvars(known)
    return known, unknown, out_unknowns, num_res, known_consts
  known, unknown, out_unknowns, num_res, known_consts = memoize_derived(
      ("xla_metadata_pe", jaxpr, tuple(unknowns)), make)
  known_args = [*known_consts, *[x for x, u in zip(args, unknowns) if not u]]
  with set_current_trace(trace.parent):
    known_outs = xla_metadata_call_p.bind(*known_args, jaxpr=known, xla_metadata=xla_metadata,
                                          ad_metadata=ad_metadata)
  n_known = len(known_outs) - num_res
  residuals, known_outs = known_outs[n_known:], known_outs[:n_known]
  unknown_args = [*residuals, *[x for x, u in zip(args, unknowns) if u]]
  # The unknown side is the tangent (linearized) computation: it takes ``ad_metadata``.
  unknown_outs = trace.record(xla_metadata_call_p, unknown_args, dict(
      jaxpr=unknown, xla_metadata=_derived_metadata(xla_metadata, ad_metadata),
      ad_metadata="same"))
  known_it, unknown_it = iter(known_outs), iter(unknown_outs)
  return [next(unknown_it) if u else next(known_it) for u in out_unknowns]

pe.partial_eval_rules[xla_metadata_call_p] = _partial_eval


def _transpose(cts, *args, jaxpr, xla_metadata, ad_metadata):
  metadata = _derived_metadata(xla_metadata, ad_metadata)
  return call.transpose_call(cts, args, jaxpr, lambda operands, t_closed:
                             xla_metadata_call_p.bind(*operands, jaxpr=t_closed,
                                                      xla_metadata=metadata,
                                                      ad_metadata="same"))

ad.primitive_transposes[xla_metadata_call_p] = _transpose


def _batch(axis_data, vals, dims, *, jaxpr, xla_metadata, ad_metadata):
  def make():
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
    return out_dims, *convert_constvars(batched)
  out_dims, batched, consts = memoize_derived(
      ("xla_metadata_batch", jaxpr, axis_data.size, axis_data.name, tuple(dims)), make)
  outs = xla_metadata_call_p.bind(*consts, *vals, jaxpr=batched, xla_metadata=xla_metadata,
                                  ad_metadata=ad_metadata)
  return outs, out_dims

batching.fancy_primitive_batchers[xla_metadata_call_p] = _batch
