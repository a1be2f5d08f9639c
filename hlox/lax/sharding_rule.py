"""Shardy sharding rules of custom-partitioned calls (JAX's ``SdyShardingRule``): which
dimensions of the operands and results are the same "factor", so that Shardy propagates a
layout along one to the others.

A rule is written as an einsum-like string (``"i j, j k -> i k"``; ``"i j -> "`` for a
scalar result) or built from ``ArrayMapping``s. It becomes the
``#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=4, k=2}, custom>`` attribute of
the call once the operands' shapes give the factors' sizes; a dimension made of several
factors is a ``CompoundFactor`` (``"(i k) j"``; the sizes of factors no whole dimension gives
are passed by name). ``BATCHING`` (``...``) dimensions are not supported yet: they raise
NotImplementedError.
"""
from __future__ import annotations

import re

BATCHING: str = "\u2026"  # what JAX's rules write for ``...`` (leading batch dimensions)


class CompoundFactor(tuple):
  """Several factors making up one dimension (``CompoundFactor("i", "j")``)."""

  def __new__(cls, *factors):
    return super().__new__(cls, factors)


class ArrayMapping(tuple):
  """The factors of each dimension of one operand or result."""

  def __new__(cls, *dim_mappings):
    return super().__new__(cls, dim_mappings)


class SdyShardingRule:
  """A Shardy sharding rule: the operands' and results' ``ArrayMapping``s, the sizes of
  factors that no whole dimension gives, and the factors that are reductions, need
  replication, or are permutations (JAX's ``SdyShardingRule``)."""

  def __init__(self, operand_mappings, result_mappings, *, reduction_factors=(),
               need_replication_factors=(), permutation_factors=(), **factor_sizes):
    whole = set()
    for mapping in tuple(operand_mappings) + tuple(result_mappings):
      for dim in mapping:
        if isinstance(dim, str):
          whole.add(dim)
    for factor in factor_sizes:
      if factor in whole:
        raise ValueError(f"Factor {factor} represents a whole dimension; do not specify "
                         "its size")
    seen = set()
    for kind, factors in (("reduction_factors", reduction_factors),
                          ("need_replication_factors", need_replication_factors),
                          ("permutation_factors", permutation_factors)):
      if not isinstance(factors, tuple):
        raise ValueError(f"{kind} must be a tuple of factors")
      for f in factors:
        if f in seen:
          raise ValueError(f"Factor {f} can only be in one of the reduction, need "
                           "replication, or permutation factor sets.")
        seen.add(f)
    self.operand_mappings = tuple(operand_mappings)
    self.result_mappings = tuple(result_mappings)
    self.factor_sizes = dict(factor_sizes)
    self.reduction_factors = reduction_factors
    self.need_replication_factors = need_replication_factors
    self.permutation_factors = permutation_factors

  def __str__(self):
    return (f"SdyShardingRule({self.operand_mappings}, {self.result_mappings}, "
            f"{self.factor_sizes})")


def str_to_sdy_sharding_rule(rule: str, **kwargs) -> SdyShardingRule:
  """``"i j, j k -> i k"`` as an ``SdyShardingRule`` (``kwargs`` as its constructor's)."""
  if not isinstance(rule, str):
    raise TypeError(f"rule must be a str, but got {type(rule)}")
  if rule.count("->") != 1:
    raise ValueError(f"Sharding rule must contain exactly one '->': {rule!r}")
  lhs, rhs = rule.split("->")

  def mappings(side):
    parts = side.split(",")
    if len(parts) == 1 and not parts[0].strip():
      return (ArrayMapping(),)
    out = []
    for part in parts:
      dims = []
      for compound, token in re.findall(r"\(([^()]*)\)|([^\s()]+)", part):
        if token in ("...", BATCHING) or BATCHING in compound or "..." in compound:
          raise NotImplementedError(
              f"custom_partitioning sharding rule {rule!r}: batching ('...') dimensions "
              "are not supported in hlox yet")
        dims.append(token if token else CompoundFactor(*compound.split()))
      out.append(ArrayMapping(*dims))
    return tuple(out)
  return SdyShardingRule(mappings(lhs), mappings(rhs), **kwargs)


def _sdy_names():
  for c in "ijklmnopqrstuvwxyz":
    yield c
  k = 1
  while True:
    yield f"z_{k}"
    k += 1


def rule_text(rule: SdyShardingRule, operand_shapes, result_shapes) -> str:
  """``rule`` as Shardy's attribute for operands and results of these shapes."""
  if len(rule.operand_mappings) != len(operand_shapes):
    raise ValueError(f"Sharding rule has {len(rule.operand_mappings)} operands, but the "
                     f"operation has {len(operand_shapes)} operands")
  if len(rule.result_mappings) != len(result_shapes):
    raise ValueError(f"Sharding rule has {len(rule.result_mappings)} results, but the "
                     f"operation has {len(result_shapes)} results")
  names, sizes, fresh = {}, dict(rule.factor_sizes), _sdy_names()
  sides = []
  everything = ((rule.operand_mappings, operand_shapes, "operand"),
                (rule.result_mappings, result_shapes, "result"))
  for mappings, shapes, what in everything:  # the sizes of whole dimensions' factors first
    for i, (mapping, shape) in enumerate(zip(mappings, shapes)):
      if len(mapping) != len(shape):
        raise ValueError(f"Sharding rule {what} {i} has rank {len(mapping)}, but the "
                         f"operation {what} {i} has rank {len(shape)}")
      for factor, size in zip(mapping, shape):
        if isinstance(factor, str) and sizes.setdefault(factor, int(size)) != int(size):
          raise ValueError(f"Factor {factor} corresponds to two sizes: {sizes[factor]} "
                           f"and {size}")
  for mappings, shapes, what in everything:
    side = []
    for mapping, shape in zip(mappings, shapes):
      dims = []
      for factor, size in zip(mapping, shape):
        parts = (factor,) if isinstance(factor, str) else tuple(factor)
        product = 1
        for f in parts:
          if f not in names:
            names[f] = next(fresh)
          product *= sizes[f]
        if product != int(size):
          raise ValueError(f"Sharding rule factors {parts} of sizes "
                           f"{[sizes[f] for f in parts]} do not make up a dimension of "
                           f"size {size}")
        dims.append("".join(names[f] for f in parts))
      side.append("[" + ", ".join(dims) + "]")
    sides.append(", ".join(side))
  factor_sizes = ", ".join(f"{names[f]}={sizes[f]}" for f in names)
  special = ""
  for kind, factors in (("reduction", rule.reduction_factors),
                        ("need_replication", rule.need_replication_factors),
                        ("permutation", rule.permutation_factors)):
    if factors:
      special += f" {kind}={{{', '.join(names[f] for f in factors)}}}"
  return (f"#sdy.op_sharding_rule<({sides[0]})->({sides[1]}) {{{factor_sizes}}}{special}, "
          "custom>")
