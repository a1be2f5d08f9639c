"""What random functions and array operations do to keys, for the key-reuse checker.

hlox traces a typed key as its ``uint32`` data, so a random function marks its use of a key
in the jaxpr with an identity primitive named as JAX names the operation (``random_bits``,
``random_split``, ...): the marker reads the key's data and the function computes on the
marker's result, so the checker (``hlox.interpreters.key_reuse``) sees one use of the key
where JAX has one ``random_*`` equation. Markers cost no code: they lower to their operand.
They are bound only under a trace, or eagerly while ``debug_key_reuse`` is on (``use``).

This module also fills the checker's table for lax's key-shaped operations (reshapes,
slices, concatenation) and for calls and loops (their jaxprs' signatures, with JAX's rules:
a loop body may not consume a key it does not make again).
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox.lax.device_put import device_put_p
from hlox.checkpoint import checkpoint_p
from hlox.config import config
from hlox.core.jaxpr import effectful_primitives
from hlox.core.primitive import Primitive
from hlox.core.tracer import eval_trace, trace_ctx
from hlox.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from hlox.errors import KeyReuseError
from hlox.interpreters import ad, batching, xla
from hlox.interpreters import key_reuse as kr
from hlox.interpreters.key_reuse import (Forward, KeyReuseSignature, Sink, Source,
                                         dynamic_key_reuse_signature, jaxpr_type_signature)
from hlox.lax import control_flow
from hlox.lax.call import jit_p

__all__ = ["markers", "use", "consume_p", "assert_consumed_value_p", "random_clone_p",
           "Mask"]


# --- the markers ---------------------------------------------------------------------------

def _marker(name: str, signature: KeyReuseSignature, effectful: bool = False) -> Primitive:
  prim = Primitive(name)
  prim.def_impl(lambda x, **_: x)  # no device work: the data itself
  prim.def_abstract_eval(lambda a, **_: a)
  xla.register_lowering(prim, lambda ctx, x, **_: x)

  def jvp(primals, tangents, **params):  # key data has no tangent worth marking
    return prim.bind(primals[0], **params), tangents[0]
  ad.primitive_jvps[prim] = jvp
  batching.primitive_batchers[prim] = lambda vals, dims, **params: (
      prim.bind(vals[0], **params), dims[0])
  kr.key_reuse_signatures[prim] = signature
  kr.keyed_primitives.add(prim)
  if effectful:  # what the user asked for stays in the jaxpr even when its result is unused
    effectful_primitives.add(prim)
  return prim


# The random functions' uses of a key (the function computes on the result).
random_bits_p = _marker("random_bits", KeyReuseSignature(Sink(0)))
random_split_p = _marker("random_split", KeyReuseSignature(Sink(0)))
random_fold_in_p = _marker("random_fold_in", KeyReuseSignature())   # as JAX: reads the key
random_unwrap_p = _marker("random_unwrap", KeyReuseSignature())     # key_data: reads it
# Results that are keys: a copy of a key, and keys wrapped from traced data, are fresh.
random_clone_p = _marker("random_clone", KeyReuseSignature(Source(0)))
random_wrap_p = _marker("random_wrap", KeyReuseSignature(Source(0)))
# ``consume`` and the assertions of the experimental API.
consume_p = _marker("consume", KeyReuseSignature(Sink(0), Forward(0, 0)), effectful=True)
assert_consumed_value_p = _marker("assert_consumed_value", KeyReuseSignature(Forward(0, 0)),
                                  effectful=True)

markers = {p.name: p for p in (random_bits_p, random_split_p, random_fold_in_p,
                               random_unwrap_p, random_clone_p, random_wrap_p,
                               consume_p)}


class Mask:
  """A hashable boolean mask (``assert_consumed_value``'s parameter)."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = np.asarray(val, dtype=bool)

  def __eq__(self, other):
    return (isinstance(other, Mask) and self.val.shape == other.val.shape
            and bool(np.all(self.val == other.val)))

  def __hash__(self):
    return hash((self.val.shape, tuple(self.val.ravel().tolist())))

  def __repr__(self):
    return repr(self.val.item() if self.val.ndim == 0 else self.val)


def _check_consumed_value(eqn, consumed):
  expected = eqn.params["value"].val
  if not np.all(consumed == expected):
    if np.all(expected):
      raise AssertionError(f"Expected key to be consumed in {eqn}")
    if not np.any(expected):
      raise AssertionError(f"Expected key to not be consumed in {eqn}")
    raise AssertionError(f"Expected {expected}, got {consumed} in {eqn}")

kr.consumption_asserts[assert_consumed_value_p] = _check_consumed_value


def use(name: str, data):
  """The data a random function should compute on for its use ``name`` of key data ``data``.

  Under a trace: the marker's result. Eagerly (``debug_key_reuse`` on; callers test that
  first): ``data`` itself, after checking and recording its consumption as JAX does for
  concrete keys (``KeyReuseError`` when a consuming use meets a consumed key)."""
  prim = markers[name]
  if trace_ctx.trace is not eval_trace:
    return prim.bind(data)
  if not config._values["debug_key_reuse"]:
    return data
  sig = kr.key_reuse_signatures[prim]
  kr.check_call(sig, [data], name)
  kr.update_call(sig, [data], [data])
  return data


def watching() -> bool:
  """Whether key uses are marked now: under a trace, or eagerly with ``debug_key_reuse``."""
  return trace_ctx.trace is not eval_trace or config._values["debug_key_reuse"]


# --- lax's operations on key data ------------------------------------------------------------

_forward = KeyReuseSignature(Forward(0, 0))
for _name in ("broadcast_in_dim_p", "reshape_p", "squeeze_p", "convert_element_type_p",
              "copy_p", "transpose_p", "rev_p", "expand_dims_p",
              "dynamic_slice_p", "gather_p", "sharding_constraint_p", "optimization_barrier_p",
              "stage_p"):
  _prim = getattr(lax, _name, None)
  if isinstance(_prim, Primitive):
    kr.key_reuse_signatures[_prim] = _forward
kr.key_reuse_signatures[lax.dynamic_update_slice_p] = KeyReuseSignature(Sink(1), Forward(0, 0))
kr.key_reuse_signatures[lax.scatter_p] = KeyReuseSignature(Sink(2), Forward(0, 0))
# Comparing keys does not use them.
kr.key_reuse_signatures[lax.eq_p] = KeyReuseSignature()
kr.key_reuse_signatures[lax.ne_p] = KeyReuseSignature()
del _name, _prim


@dynamic_key_reuse_signature
def _device_put_signature(eqn, keys_in):
  return KeyReuseSignature(*(Forward(i, i) for i in range(len(eqn.invars))))

kr.key_reuse_signatures[device_put_p] = _device_put_signature


@dynamic_key_reuse_signature
def _slice_signature(eqn, keys_in):
  # Taking a slice of keys consumes the keys it takes (in the key axes; the trailing axis is
  # the data), and gives fresh keys.
  aval = eqn.invars[0].aval
  if not keys_in[0] or not aval.shape:
    return _forward
  key_shape = aval.shape[:-1]
  strides = eqn.params.get("strides") or (1,) * len(aval.shape)
  region = tuple(slice(s, e, st) for s, e, st in zip(eqn.params["start_indices"],
                                                    eqn.params["limit_indices"], strides))
  mask = np.zeros(key_shape, dtype=bool)
  mask[region[:len(key_shape)]] = True
  return KeyReuseSignature(Sink(0, mask), Source(0))

kr.key_reuse_signatures[lax.slice_p] = _slice_signature


@dynamic_key_reuse_signature
def _concatenate_signature(eqn, keys_in):
  if len(eqn.invars) == 1:
    return _forward
  return KeyReuseSignature(*(Sink(i) for i in range(len(eqn.invars))), Source(0))

kr.key_reuse_signatures[lax.concatenate_p] = _concatenate_signature


# --- calls and loops ---------------------------------------------------------------------------

@dynamic_key_reuse_signature
def _call_signature(eqn, keys_in):
  return jaxpr_type_signature(eqn.params["jaxpr"], keys_in)

kr.key_reuse_signatures[jit_p] = _call_signature


@dynamic_key_reuse_signature
def _custom_call_signature(eqn, keys_in):
  # The primal function's jaxpr says what the call does to keys (its rules are not run).
  return jaxpr_type_signature(eqn.params["call_jaxpr"], keys_in)

kr.key_reuse_signatures[custom_jvp_call_p] = _custom_call_signature
kr.key_reuse_signatures[custom_vjp_call_p] = _custom_call_signature


@dynamic_key_reuse_signature
def _remat_signature(eqn, keys_in):
  # The differentiated pass recomputes what the primal pass computed: it uses no key the
  # primal pass did not use already, and makes none.
  if eqn.params.get("differentiated"):
    return KeyReuseSignature()
  return jaxpr_type_signature(eqn.params["jaxpr"], keys_in)

kr.key_reuse_signatures[checkpoint_p] = _remat_signature


@dynamic_key_reuse_signature
def _cond_signature(eqn, keys_in):
  sigs = [jaxpr_type_signature(br, keys_in[1:]) for br in eqn.params["branches"]]
  return kr.merge_branches(sigs, offset=1)

kr.key_reuse_signatures[control_flow.cond_p] = _cond_signature


@dynamic_key_reuse_signature
def _scan_signature(eqn, keys_in):
  jaxpr = eqn.params["jaxpr"]
  n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
  sig = jaxpr_type_signature(jaxpr, keys_in)
  if any(np.any(s.mask) for s in sig.sinks if s.idx < n_consts):
    raise KeyReuseError("scan body function leads to key reuse when repeatedly executed, "
                        "because key constants are repeatedly consumed:\n"
                        f"  signature={sig}\n  eqn={eqn}")
  carry_sinks = {s.idx - n_consts for s in sig.sinks
                 if 0 <= s.idx - n_consts < n_carry and np.any(s.mask)}
  carry_sources = {s.idx for s in sig.sources if s.idx < n_carry and np.any(s.mask)}
  if not carry_sinks <= carry_sources:
    raise KeyReuseError("scan body function leads to key reuse when repeatedly executed, "
                        "because consumed inputs don't match sourced outputs:\n"
                        f"  signature={sig}\n  eqn={eqn}")
  return sig

kr.key_reuse_signatures[control_flow.scan_p] = _scan_signature


@dynamic_key_reuse_signature
def _while_signature(eqn, keys_in):
  cond_n, body_n = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
  carry_keys = keys_in[cond_n + body_n:]
  cond_sig = jaxpr_type_signature(eqn.params["cond_jaxpr"],
                                  [*keys_in[:cond_n], *carry_keys])
  body_sig = jaxpr_type_signature(eqn.params["body_jaxpr"],
                                  [*keys_in[cond_n:cond_n + body_n], *carry_keys])
  if any(np.any(s.mask) for s in cond_sig.sinks if s.idx < cond_n):
    raise KeyReuseError("while_loop cond function leads to key reuse when repeatedly "
                        f"executed:\n  cond_signature={cond_sig}\n  eqn={eqn}")
  if any(np.any(s.mask) for s in body_sig.sinks if s.idx < body_n):
    raise KeyReuseError("while_loop body function leads to key reuse when repeatedly "
                        f"executed:\n  body_signature={body_sig}\n  eqn={eqn}")
  body_carry_sinks = {s.idx - body_n for s in body_sig.sinks if s.idx >= body_n}
  cond_carry_sinks = {s.idx - cond_n for s in cond_sig.sinks if s.idx >= cond_n}
  carry_sources = {s.idx for s in body_sig.sources}
  if not cond_carry_sinks <= carry_sources:
    raise KeyReuseError("while_loop cond function leads to key reuse when repeatedly "
                        f"executed:\n  cond_signature={cond_sig}\n  eqn={eqn}")
  if not body_carry_sinks <= carry_sources:
    raise KeyReuseError("while_loop body function leads to key reuse when repeatedly "
                        f"executed:\n  body_signature={body_sig}\n  eqn={eqn}")
  if body_carry_sinks & cond_carry_sinks:
    raise KeyReuseError("while_loop cond and body functions both use the same key:\n"
                        f"  cond_signature={cond_sig}\n  body_signature={body_sig}\n"
                        f"  eqn={eqn}")
  # The loop's operands are its consts then the carry; the body's indices are shifted.
  parts = [Sink(s.idx + cond_n, s.mask) for s in body_sig.sinks]
  parts += [Sink(s.idx + body_n, s.mask) for s in cond_sig.sinks if s.idx >= cond_n]
  parts += list(body_sig.sources)
  parts += [Forward(f.in_idx + cond_n, f.out_idx) for f in body_sig.forwards]
  return KeyReuseSignature(*parts)

kr.key_reuse_signatures[control_flow.while_p] = _while_signature
