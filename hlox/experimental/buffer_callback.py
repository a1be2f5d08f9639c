"""``jax.experimental.buffer_callback``: a Python function that runs inside a program on the
device buffers themselves, writing its results in place (``lax/buffer_callback.py``).

``buffer_callback(f, result_shape_dtypes)(*args)`` calls ``f(ctx, out, *args)`` where
``ctx`` is XLA's ``ExecutionContext``, ``out`` the results' tree of writeable ``Buffer``s
and ``args`` the operands' (read-only) ``Buffer``s; ``f`` fills ``out`` and returns nothing.
CPU and GPU only.
"""
from __future__ import annotations

from typing import Callable

from hlox import _tree_transform as tree_util
from hlox import ffi
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.lax.buffer_callback import InPlaceCallback, buffer_callback_p
from hlox.runtime.callbacks import Buffer, ExecutionContext, ExecutionStage

__all__ = ["Buffer", "ExecutionContext", "ExecutionStage", "buffer_callback"]


def buffer_callback(callback: Callable[..., None], result_shape_dtypes, *,
                    has_side_effect: bool = False, vmap_method: str | None = None,
                    input_output_aliases: dict[int, int] | None = None,
                    command_buffer_compatible: bool = False):
  """A function of arrays (pytrees of them) whose results ``callback(ctx, out, *args,
  **kwargs)`` writes into the buffers of ``out`` (shaped as ``result_shape_dtypes``).

  ``has_side_effect``: keep the call when its results are unused. ``vmap_method``: as for
  ``pure_callback``. ``input_output_aliases``: ``{flat input index: flat output index}``
  pairs that share a buffer (same shape and dtype). ``command_buffer_compatible``: on a GPU,
  the call may be recorded into a command buffer (run once, then replayed).
  """
  flat_results, out_tree = tree_util.tree_flatten(result_shape_dtypes)
  result_avals = tuple(ShapedArray(tuple(r.shape), r.dtype) for r in flat_results)

  def call(*args, **kwargs):
    flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
    in_avals = [get_aval(x) for x in flat_args]
    aliases = ffi._checked_aliases(input_output_aliases, in_avals, result_avals,
                                   n_inputs=len(args))
    outs = buffer_callback_p.bind(
        *flat_args, callback=InPlaceCallback(callback, in_tree, out_tree),
        result_avals=result_avals, has_side_effect=bool(has_side_effect),
        vmap_method=vmap_method, input_output_aliases=aliases,
        command_buffer_compatible=bool(command_buffer_compatible))
    return tree_util.tree_unflatten(out_tree, outs)

  return call
