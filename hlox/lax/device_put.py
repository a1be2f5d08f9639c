"""``device_put_p``: ``device_put`` of traced values onto a device (or single-device
sharding), kept as an equation in the jaxpr as JAX keeps it.

Numerically it is the identity, and its lowering passes values through. What it changes is
*where* the program runs: a program containing ``device_put`` to a single-device sharding
runs on that device (its uncommitted arguments moved there, its results committed there),
as JAX's jit takes its device assignment from such equations (``program_device``). A plain
device (not a sharding) does not place the program, as in JAX.

Its JVP puts the tangents the same way; its transpose puts cotangents back where the
primals came from (``srcs``: given, or, as JAX infers them, the sharding of a traced value
whose Array the trace knows), always as copies, as JAX's does. Under ``vmap`` the batched
values are put as they are. Eagerly (and under ``vmap`` of concrete values) it is the
runtime's ``device_put``.
"""
from __future__ import annotations

from hlox.core.jaxpr import subjaxprs
from hlox.core.primitive import Primitive
from hlox.core.tracer import Tracer
from hlox.interpreters import ad, batching, xla
from hlox.runtime import sharding as sharding_lib
from hlox.runtime.array import Array, ArrayCopySemantics, copy_array
from hlox.runtime.array import device_put as put_array

__all__ = ["ArrayCopySemantics", "device_put_p", "copy_semantics_of", "program_device",
           "put_traced", "put_traced_as_created"]


class _DevicePut(Primitive):
  multiple_results = True


device_put_p = _DevicePut("device_put")


def copy_semantics_of(donate: bool, may_alias) -> ArrayCopySemantics:
  """JAX's reading of ``device_put``'s ``donate``/``may_alias`` (``may_alias=None`` means
  "unless donated")."""
  if may_alias is None:
    may_alias = not donate
  if may_alias and donate:
    raise ValueError("may_alias and donate cannot be True at the same time.")
  if donate:
    return ArrayCopySemantics.DONATE_INPUT
  return ArrayCopySemantics.REUSE_INPUT if may_alias else ArrayCopySemantics.ALWAYS_COPY


def _impl(*xs, devices, srcs, copy_semantics):
  del srcs
  outs = []
  for x, device, semantics in zip(xs, devices, copy_semantics):
    out = put_array(x, device)
    if out is x and semantics != ArrayCopySemantics.REUSE_INPUT:
      out = copy_array(x)
    outs.append(out)
  return outs

device_put_p.def_impl(_impl)
device_put_p.def_abstract_eval(lambda *avals, devices, srcs, copy_semantics: list(avals))
xla.register_lowering(device_put_p, lambda ctx, *xs, devices, srcs, copy_semantics: list(xs))


def _jvp(primals, tangents, *, devices, srcs, copy_semantics):
  outs = device_put_p.bind(*primals, devices=devices, srcs=srcs,
                           copy_semantics=copy_semantics)
  live = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
  out_tangents = list(tangents)
  if live:
    pick = lambda seq: tuple(seq[i] for i in live)  # noqa: E731
    put = device_put_p.bind(*pick(tangents), devices=pick(devices), srcs=pick(srcs),
                            copy_semantics=pick(copy_semantics))
    for i, t in zip(live, put):
      out_tangents[i] = t
  return outs, out_tangents

ad.primitive_jvps[device_put_p] = _jvp


def _transpose(cts, *args, devices, srcs, copy_semantics):
  results = [None] * len(cts)
  moved = []
  for i, (ct, arg) in enumerate(zip(cts, args)):
    if not ad.is_undefined_primal(arg):
      continue
    if type(ct) is ad.Zero:
      results[i] = ct
    else:
      if copy_semantics[i] == ArrayCopySemantics.DONATE_INPUT:
        raise ValueError("donate=True is not allowed during tranposition of device_put. "
                         "Please file an issue if you want this to be supported.")
      moved.append(i)
  if moved:
    back = device_put_p.bind(*(cts[i] for i in moved),
                             devices=tuple(srcs[i] for i in moved),
                             srcs=tuple(devices[i] for i in moved),
                             copy_semantics=(ArrayCopySemantics.ALWAYS_COPY,) * len(moved))
    for i, ct in zip(moved, back):
      results[i] = ct
  return results

ad.primitive_transposes[device_put_p] = _transpose


def _batch(vals, dims, **params):
  return device_put_p.bind(*vals, **params), list(dims)

batching.primitive_batchers[device_put_p] = _batch


def _placements(jaxpr):
  """``(device, equation)`` for each ``device_put`` to a single-device sharding in
  ``jaxpr`` and the jaxprs nested in it."""
  for eqn in jaxpr.eqns:
    if eqn.primitive is device_put_p:
      for target in eqn.params["devices"]:
        if isinstance(target, sharding_lib.SingleDeviceSharding):
          yield target._device, eqn
    else:
      for sub in subjaxprs(eqn.params):
        yield from _placements(sub)


def _where(eqn) -> str:
  info = eqn.source_info
  if info is None or info.file is None:
    return ""
  return f" at {info.file}:{info.line} ({info.function})"


def program_device(jaxpr, arg_device):
  """The device a one-device program over ``jaxpr`` runs on: ``arg_device`` (where its
  committed arguments are, or None) unless ``device_put`` inside places it; a ValueError,
  as JAX's, when the two (or two such ``device_put``s) disagree."""
  device, first = arg_device, None
  for placed, eqn in _placements(jaxpr):
    if device is None:
      device, first = placed, eqn
    elif placed != device:
      there = (f"argument with device ids [{device.id}] on platform "
               f"{device.platform.upper()}" if first is None else
               f"device_put inside jit with device ids [{device.id}] on platform "
               f"{device.platform.upper()}{_where(first)}")
      raise ValueError(
          f"Received incompatible devices for jitted computation. Got {there} and "
          f"device_put inside jit with device ids [{placed.id}] on platform "
          f"{placed.platform.upper()}{_where(eqn)}")
  return device


def put_traced(leaves, device, src=None, donate=False, may_alias=None) -> list:
  """``device_put`` of flat values of which some are traced, onto ``device`` (None, a device
  or a single-device sharding): one ``device_put`` equation for the traced ones, as JAX's;
  the others are placed now."""
  semantics = copy_semantics_of(donate, may_alias)
  traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
  out = [leaf if isinstance(leaf, Tracer) else put_array(leaf, device) for leaf in leaves]
  if traced:
    n = len(traced)
    srcs = tuple(_source_of(leaves[i]) if src is None else src for i in traced)
    put = device_put_p.bind(*(leaves[i] for i in traced), devices=(device,) * n,
                            srcs=srcs, copy_semantics=(semantics,) * n)
    for i, leaf in zip(traced, put):
      out[i] = leaf
  return out


def _source_of(tracer):
  """Where a traced value is, when its trace knows its value (a JVP primal, say): that
  Array's sharding, as JAX infers ``src``; the transpose puts cotangents back there.
  None otherwise (under ``jit``)."""
  value = tracer.to_concrete_value()
  return value.sharding if isinstance(value, Array) else None


def put_traced_as_created(x, device):
  """A creation function's traced result put on its ``device=`` (a device or single-device
  sharding): a device is first made a single-device sharding, as JAX's creation functions
  do, so that the program runs there."""
  if not isinstance(device, sharding_lib.SingleDeviceSharding):
    device = sharding_lib.SingleDeviceSharding(device)
  return put_traced([x], device)[0]
