"""``buffer_callback_p``: a Python function run inside a program on the device buffers
themselves (``jax.experimental.buffer_callback``).

XLA's ``xla_buffer_python_cpu_callback`` handler (a GPU has ``xla_buffer_python_gpu_callback``)
calls the registered callable with its execution context and one ``Buffer`` per operand and
per result; the function reads the operands and writes the results in place, returning
nothing. The primitive's parameters: ``callback`` (an ``InPlaceCallback``: the user's function
with the operands' and results' tree structures), ``result_avals``, ``has_side_effect`` (kept
by dead-code elimination when true), ``input_output_aliases`` (``(operand, result)`` pairs
sharing a buffer), ``vmap_method``, ``command_buffer_compatible`` (GPU command buffers).

Eagerly it runs as a one-operation program. Not differentiable; under ``vmap`` it follows
``vmap_method`` as ``pure_callback`` does (``sequential`` loops with ``scan``; ``expand_dims``
/ ``broadcast_all`` call once with a leading batch dimension).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import effectful_when
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla
from hlox.lax.base import broadcast
from hlox.lax.ffi_call import ffi_lowering, map_sequentially
from hlox.runtime import callbacks as runtime_callbacks

__all__ = ["buffer_callback_p", "InPlaceCallback"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


class _MultiResult(Primitive):
  multiple_results = True


class InPlaceCallback:
  """The user's ``callback(ctx, out, *args, **kwargs)`` as XLA calls it: with the context
  and flat buffers, operands first. Equal for the same function and structures, so a
  retrace finds the same executable."""

  __slots__ = ("callback", "in_tree", "out_tree")
  writes_in_place = True  # how the runtime tells it from a value-returning callback

  def __init__(self, callback, in_tree, out_tree):
    self.callback, self.in_tree, self.out_tree = callback, in_tree, out_tree

  def __call__(self, ctx, *buffers):
    n = self.in_tree.num_leaves
    args, kwargs = tree_util.tree_unflatten(self.in_tree, list(buffers[:n]))
    out = tree_util.tree_unflatten(self.out_tree, list(buffers[n:]))
    if self.callback(ctx, out, *args, **kwargs) is not None:
      raise ValueError("buffer_callback callback must not return any values.")

  def _key(self):
    return (self.callback, self.in_tree, self.out_tree)

  def __eq__(self, other):
    return type(other) is InPlaceCallback and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return getattr(self.callback, "__qualname__", None) or repr(self.callback)


buffer_callback_p = _MultiResult("buffer_callback")
buffer_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
buffer_callback_p.def_impl(partial(xla.apply_primitive, buffer_callback_p))
effectful_when[buffer_callback_p] = lambda params: params["has_side_effect"]


def _buffer_callback_lowering(ctx, *args, callback, has_side_effect, input_output_aliases,
                              command_buffer_compatible, **_):
  platform = ctx.module_context.platform
  target = runtime_callbacks.BUFFER_CALLBACK_TARGETS.get(platform)
  if target is None:
    raise ValueError(f"`buffer_callback` not supported on {platform} backend.")
  if command_buffer_compatible and platform in ("cuda", "rocm"):
    target += "_cmd_buffer"
  index = ctx.module_context.add_host_callback(callback, ctx.avals_out)
  rule = ffi_lowering(target, has_side_effect=has_side_effect,
                      operand_output_aliases=dict(input_output_aliases))
  return rule(ctx, *args, index=np.uint64(index))

xla.register_lowering(buffer_callback_p, _buffer_callback_lowering)


def _no_jvp(primals, tangents, **params):
  raise ValueError("Buffer callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


def _no_transpose(cts, *args, **params):
  raise ValueError("Buffer callbacks do not support transpose. Please use `jax.custom_vjp` "
                   "to use callbacks while taking gradients.")

ad.primitive_jvps[buffer_callback_p] = _no_jvp
ad.primitive_transposes[buffer_callback_p] = _no_transpose


def _batch_rule(args, dims, *, vmap_method, result_avals, **params):
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
  if vmap_method in ("sequential", "sequential_unrolled"):
    return map_sequentially(buffer_callback_p, moved, dims, size, vmap_method=vmap_method,
                            result_avals=result_avals, **params)
  if vmap_method not in VMAP_METHODS:
    raise NotImplementedError(
        "vmap is only supported for the buffer_callback primitive when vmap_method is one "
        f"of {', '.join(repr(m) for m in VMAP_METHODS)}. Got vmap_method={vmap_method!r}.")
  fill = size if vmap_method == "broadcast_all" else 1
  operands = [broadcast(a, (fill,)) if d is None else a for a, d in zip(moved, dims)]
  batched = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
  outs = buffer_callback_p.bind(*operands, vmap_method=vmap_method, result_avals=batched,
                                **params)
  return list(outs), [0] * len(outs)

batching.primitive_batchers[buffer_callback_p] = _batch_rule
