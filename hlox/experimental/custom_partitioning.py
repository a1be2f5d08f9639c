"""``custom_partitioning`` (JAX's ``jax.experimental.custom_partitioning``): a function
whose partitioning over a mesh its author writes.

    @custom_partitioning
    def f(x): ...

    def partition(mesh, arg_shapes, result_shape):
      def lower_fn(x): ...               # one device's piece, may use collectives
      return mesh, lower_fn, result_sharding, arg_shardings

    f.def_partition(partition, sharding_rule="i j -> i j")

Outside a program partitioned over several devices (eagerly, on one device, inside a
manual ``shard_map`` body) ``f`` runs as written. Inside one, Shardy lays the call's
operands and results out by ``sharding_rule``, and XLA's partitioner calls ``partition``
with those layouts (``ShapeDtypeStruct``s whose ``sharding`` is a ``NamedSharding`` over
the program's mesh) and puts ``lower_fn``'s program in place of the call
(``hlox/lax/custom_partitioning.py``). As in JAX with Shardy, ``propagate_user_sharding``
and ``infer_sharding_from_operands`` alone (no ``sharding_rule``) are an error.
"""
from __future__ import annotations

import functools
import inspect

from hlox import _tree_transform as tree_util
from hlox.api import ShapeDtypeStruct
from hlox.core.jaxpr import trace_to_jaxpr
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import UnexpectedTracerError
from hlox.lax import custom_partitioning as _impl
from hlox.lax.custom_partitioning import custom_partitioning_p
from hlox.lax.sharding_rule import (BATCHING, ArrayMapping, CompoundFactor, SdyShardingRule,
                                    str_to_sdy_sharding_rule)

__all__ = ["custom_partitioning", "custom_partitioning_p", "BATCHING", "ArrayMapping",
           "CompoundFactor", "SdyShardingRule"]


def _shape_struct(shape, dtype, sharding):
  return ShapeDtypeStruct(shape, dtype, sharding=sharding)

_impl.make_shape_struct = _shape_struct


class custom_partitioning:
  """Wrap ``fun`` so that its partitioning is given by ``def_partition`` (arguments at
  ``static_argnums`` are static: passed first to every callback)."""

  def __init__(self, fun, static_argnums=()):
    self.fun = fun
    self.static_argnums = tuple(static_argnums)
    self.partition = None
    self.propagate_user_sharding = None
    self.infer_sharding_from_operands = None
    self.decode_shardings = True
    self.sharding_rule = None
    functools.update_wrapper(self, fun)

  def def_partition(self, partition, infer_sharding_from_operands=None,
                    propagate_user_sharding=None, decode_shardings=True, sharding_rule=None,
                    *, reduction_factors=(), need_replication_factors=(),
                    permutation_factors=(), **factor_sizes):
    """Set the partitioning: ``partition(*static, mesh, arg_shapes, result_shape) ->
    (mesh, lower_fn, result_shardings, arg_shardings)``; ``sharding_rule`` (an einsum-like
    string, an ``SdyShardingRule`` or a callable making one) for Shardy's propagation;
    ``decode_shardings=False`` gives the callbacks ``GSPMDSharding``s."""
    self.partition = partition
    self.propagate_user_sharding = propagate_user_sharding
    self.infer_sharding_from_operands = infer_sharding_from_operands
    self.decode_shardings = decode_shardings
    if isinstance(sharding_rule, str):
      self.sharding_rule = str_to_sdy_sharding_rule(
          sharding_rule, reduction_factors=reduction_factors,
          need_replication_factors=need_replication_factors,
          permutation_factors=permutation_factors, **factor_sizes)
    else:
      extra = dict(factor_sizes)
      for name, value in (("reduction_factors", reduction_factors),
                          ("need_replication_factors", need_replication_factors),
                          ("permutation_factors", permutation_factors)):
        if value:
          extra[name] = value
      if extra:
        raise ValueError(f"Unknown keyword arguments: {extra}")
      self.sharding_rule = sharding_rule
    return partition

  def __call__(self, *args, **kwargs):
    args = self._positional(args, kwargs)
    static = set(i % len(args) for i in self.static_argnums) if args else set()
    static_args = tuple(args[i] for i in sorted(static))
    if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(static_args)):
      raise UnexpectedTracerError(
          "Found a JAX Tracer object passed as an argument to a custom_partitioning "
          "function in a position indicated as static by static_argnums.")
    dyn_positions = [i for i in range(len(args)) if i not in static]
    dyn_args = tuple(args[i] for i in dyn_positions)
    flat, in_tree = tree_util.tree_flatten(dyn_args)
    out_trees = []

    def flat_fun(*xs):
      full = list(args)
      for i, x in zip(dyn_positions, in_tree.unflatten(list(xs))):
        full[i] = x
      leaves, out_tree = tree_util.tree_flatten(self.fun(*full))
      out_trees.append(out_tree)
      return leaves
    closed = trace_to_jaxpr(flat_fun, [get_aval(x) for x in flat],
                            f"custom_partitioning {getattr(self.fun, '__name__', '')}")
    if any(isinstance(c, Tracer) for c in closed.consts):
      raise NotImplementedError("custom_partitioning: a function closing over values traced "
                                "by an enclosing transformation is not supported in hlox; "
                                "pass them as arguments")
    if self.sharding_rule is None and (self.propagate_user_sharding is not None or
                                       self.infer_sharding_from_operands is not None):
      raise NotImplementedError(
          "Shardy is used, but sharding propagation callbacks instead of sharding_rule are "
          "provided. Need to provide sharding_rule to migrate to Shardy.")
    out = custom_partitioning_p.bind(
        *flat, call=closed, in_tree=in_tree, out_tree=out_trees[0], partition=self.partition,
        propagate_user_sharding=self.propagate_user_sharding,
        infer_sharding_from_operands=self.infer_sharding_from_operands,
        decode_shardings=self.decode_shardings, sharding_rule=self.sharding_rule,
        static_args=static_args)
    return out_trees[0].unflatten(list(out))

  def _positional(self, args, kwargs) -> tuple:
    """Keyword arguments bound to their positions (defaults filled in), as JAX's."""
    if not kwargs:
      try:
        sig = inspect.signature(self.fun)
      except (TypeError, ValueError):
        return tuple(args)
    else:
      sig = inspect.signature(self.fun)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
      raise TypeError("keyword arguments could not be resolved to positions")
    return tuple(bound.args)
