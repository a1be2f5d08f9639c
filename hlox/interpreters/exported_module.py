"""The StableHLO side of ``hlox.export``: building an exported module and splicing one into
another program.

An exported module is a portable StableHLO artifact (versioned bytecode, as JAX stores
``Exported.mlir_module_serialized``) whose public ``main`` takes, in order, a platform index
(only when exported for several platforms) and the arguments the function uses; closed-over
constants are inside it. These helpers know no primitive: ``lax/call_exported.py`` calls
``splice_module`` from its lowering rule and ``hlox/export`` builds modules with
``build_export_module``.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from hlox.interpreters.xla import ModuleContext, ir_constant, make_ir_context

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_dialect, stablehlo as hlo

# Artifacts target the oldest StableHLO version a consumer built four weeks ago can read
# (JAX's choice), so a blob outlives small jaxlib upgrades on the side that loads it.
_TARGET_VERSION = None


def _target_version() -> str:
  global _TARGET_VERSION
  if _TARGET_VERSION is None:
    _TARGET_VERSION = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4)
  return _TARGET_VERSION


def to_portable(module: ir.Module) -> bytes:
  """``module`` as a portable StableHLO artifact (Shardy's ops kept as they are)."""
  return hlo.serialize_portable_artifact(module, _target_version(), True)


def from_portable(blob: bytes, context: ir.Context | None = None) -> ir.Module:
  """The module of a portable artifact, in ``context`` (a fresh one by default)."""
  context = context if context is not None else make_ir_context()
  try:
    return hlo.deserialize_portable_artifact(context, bytes(blob))
  except Exception as e:
    raise ValueError(f"cannot read the exported StableHLO module: {e}") from None


def module_text(blob: bytes) -> str:
  """The text of a portable artifact's module, with its ops' source locations."""
  module = from_portable(blob)
  with module.context:
    return module.operation.get_asm(enable_debug_info=True)


def custom_call_targets(module: ir.Module) -> list:
  """``(target, op text)`` of every ``stablehlo.custom_call`` in ``module``, nested ops
  included."""
  found = []

  def walk(op):
    if op.name == "stablehlo.custom_call":
      target = ir.StringAttr(op.attributes["call_target_name"]).value
      found.append((target, f"{op.opview} at {op.location}"))
    for region in op.regions:
      for block in region:
        for inner in block.operations:
          walk(inner.operation)

  with module.context:
    walk(module.operation)
  return found


def device_count(module: ir.Module) -> int:
  """How many devices ``module`` runs on: its replicas times its partitions."""
  with module.context:
    attrs = module.operation.attributes
    count = 1
    for name in ("mhlo.num_replicas", "mhlo.num_partitions"):
      if name in attrs:
        count *= ir.IntegerAttr(attrs[name]).value
  return count


def _symbol(op) -> str | None:
  if "sym_name" not in op.attributes:
    return None
  return ir.StringAttr(op.attributes["sym_name"]).value


def _move_symbols(sub: ir.Module, dest: ir.Module, new_name, existing: set) -> dict:
  """Move every top-level symbol of ``sub`` into ``dest`` (same context), renaming each
  function by ``new_name(old)``; another symbol (a mesh) named as one of ``dest``'s is
  dropped when it is the same, else renamed. Returns old -> new function names."""
  renamed = {}
  ops = list(sub.body.operations)
  for op in ops:
    name = _symbol(op.operation)
    if name is None or op.operation.name != "func.func":
      continue
    new = new_name(name)
    if new != name:
      ir.SymbolTable.replace_all_symbol_uses(name, new, sub.operation)
      ir.SymbolTable.set_symbol_name(op.operation, new)
    op.operation.attributes["sym_visibility"] = ir.StringAttr.get("private")
    renamed[name] = new
  dest_ops = {_symbol(op.operation): op for op in dest.body.operations}
  for op in ops:
    name = _symbol(op.operation)
    if op.operation.name != "func.func" and name in existing:
      same = dest_ops.get(name)
      if same is not None and str(same.operation) == str(op.operation):
        op.operation.erase()  # e.g. the same mesh: the callee's shardings refer to it
        renamed[name] = name
        continue
      # Another definition under that name (a mesh with other axes): renamed, uses too.
      new = _unused(name, existing)
      ir.SymbolTable.replace_all_symbol_uses(name, new, sub.operation)
      ir.SymbolTable.set_symbol_name(op.operation, new)
      renamed[name] = new
      name = new
    elif name is not None and op.operation.name != "func.func":
      renamed[name] = name
    if name is not None:
      existing.add(name)
    dest.body.append(op.operation.detach_from_parent())
  return renamed


def _strip_boundary_attrs(fn) -> None:
  """A callee's ``main`` loses what only a program's entry means (donation, result names);
  its arguments' and results' Shardy shardings stay."""
  for attr_name in ("arg_attrs", "res_attrs"):
    if attr_name not in fn.attributes:
      continue
    kept = []
    for d in ir.ArrayAttr(fn.attributes[attr_name]):
      d = ir.DictAttr(d)
      keep = {}
      for key in ("sdy.sharding",):
        if key in d:
          keep[key] = d[key]
      kept.append(ir.DictAttr.get(keep))
    fn.attributes[attr_name] = ir.ArrayAttr.get(kept)


def _mesh_axes(op) -> tuple:
  """``(("x", 2), ...)``: the axes an ``sdy.mesh`` op declares."""
  return tuple((n, int(k)) for n, k in re.findall(r'"([^"]+)"\s*=\s*(\d+)',
                                                   str(op.attributes["mesh"])))


def splice_module(mctx: ModuleContext, blob: bytes, prefix: str):
  """Add the functions of the exported module ``blob`` to the module being lowered, as
  private functions named after ``prefix``; returns the name and ``FunctionType`` of its
  ``main`` and its meshes (``{axes: symbol here}``, axes as ``(("x", 2), ...)``). Spliced
  once per module and blob."""
  key = ("exported", blob)
  hit = mctx.lowered_calls.get(key)
  if hit is not None:
    return hit
  sub = from_portable(blob, mctx.context)
  existing = {_symbol(op.operation) for op in mctx.module.body.operations} - {None}
  names = {}

  def new_name(old):
    names[old] = mctx.unique_name(prefix if old == "main" else f"{prefix}_{old}")
    return names[old]

  with mctx.context, ir.Location.unknown():
    declared = {_symbol(op.operation): _mesh_axes(op.operation)
                for op in sub.body.operations if op.operation.name == "sdy.mesh"}
    placed = _move_symbols(sub, mctx.module, new_name, existing)
    meshes = {}
    for old, axes in declared.items():
      meshes.setdefault(axes, placed[old])
      if placed[old] != old:  # (the program's own mesh may give its name back at the end)
        mctx.renamed_meshes.append((old, placed[old]))
    main = mctx.symbol_table[names["main"]] if names["main"] in mctx.symbol_table else None
    if main is None:  # the symbol table was made before the splice: look it up afresh
      main = ir.SymbolTable(mctx.module.operation)[names["main"]]
    _strip_boundary_attrs(main.operation)
    fn_type = ir.FunctionType(ir.TypeAttr(main.operation.attributes["function_type"]).value)
  hit = mctx.lowered_calls[key] = (names["main"], fn_type, meshes)
  return hit


def call_spliced(name: str, fn_type, args) -> list:
  """``func.call @name(args)``: the results of a spliced ``main``."""
  call = func_dialect.CallOp(list(fn_type.results), ir.FlatSymbolRefAttr.get(name), list(args))
  return list(call.results)


def build_export_module(name: str, platform_texts: Sequence[str], consts: Sequence,
                        const_avals: Sequence, kept_consts: Sequence[int]) -> ir.Module:
  """The exported module from the module lowered for each platform (texts, in the order
  of the export's platforms; each ``main`` takes the kept constants, then the kept
  arguments).

  With one platform and no constants the lowered module is kept as it is. Otherwise a new
  ``main`` takes a platform index first (several platforms: JAX's calling convention, an
  ``i32`` marked ``jax.global_constant = "_platform_index"``) and the kept arguments,
  makes the constants, and calls the platform's lowering (one ``stablehlo.case`` branch per
  platform; platforms whose lowerings agree share a function)."""
  ctx = make_ir_context()
  several = len(platform_texts) > 1
  with ctx, ir.Location.unknown():
    if not several and not kept_consts:
      module = ir.Module.parse(platform_texts[0])
      if "jax.uses_shape_polymorphism" not in module.operation.attributes:
        module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(False)
      return module
    module = ir.Module.create()
    first = ir.Module.parse(platform_texts[0])
    attrs = first.operation.attributes
    for i in range(len(attrs)):
      module.operation.attributes[attrs[i].name] = attrs[i].attr
    if not several and "jax.uses_shape_polymorphism" not in attrs:
      module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(False)
    elif several:  # (JAX marks a multi-platform module so; a polymorphic one says so already)
      module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(True)
    existing, callees, by_text = {"main"}, [], {}
    for i, text in enumerate(platform_texts):
      if text in by_text:  # the same program as another platform's
        callees.append(callees[by_text[text]])
        continue
      sub = first if i == 0 else ir.Module.parse(text)
      suffix = "" if len(set(platform_texts)) == 1 else f"_{i}"
      renamed = _move_symbols(sub, module, lambda old, suffix=suffix: _unused(
          f"_wrapped_{old}{suffix}", existing), existing)
      by_text[text] = len(callees)
      callees.append(renamed["main"])
    table = ir.SymbolTable(module.operation)
    callee_type = ir.FunctionType(
        ir.TypeAttr(table[callees[0]].operation.attributes["function_type"]).value)
    for callee in set(callees):
      _strip_boundary_attrs(table[callee].operation)
    user_types = list(callee_type.inputs)[len(kept_consts):]
    index_type = ir.RankedTensorType.get((), ir.IntegerType.get_signless(32))
    in_types = ([index_type] if several else []) + user_types
    out_types = list(callee_type.results)
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      if several:
        fn.arg_attrs = ir.ArrayAttr.get(
            [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get("_platform_index")})] +
            [ir.DictAttr.get({}) for _ in user_types])
      block = fn.add_entry_block()
      with ir.InsertionPoint(block):
        args = list(block.arguments)
        user_args = args[1:] if several else args
        const_values = [ir_constant(np.asarray(consts[i], dtype=const_avals[i].dtype))
                        for i in kept_consts]
        operands = const_values + user_args
        if len(set(callees)) == 1:
          outs = call_spliced(callees[0], callee_type, operands)
        else:
          case = hlo.CaseOp(out_types, args[0], len(callees))
          for region, callee in zip(case.regions, callees):
            with ir.InsertionPoint(region.blocks.append()):
              hlo.ReturnOp(call_spliced(callee, callee_type, operands))
          outs = list(case.results)
        func_dialect.ReturnOp(outs)
  return module


def _unused(name: str, existing: set) -> str:
  candidate, i = name, 0
  while candidate in existing:
    i += 1
    candidate = f"{name}_{i}"
  existing.add(candidate)
  return candidate


__all__ = ["to_portable", "from_portable", "module_text", "custom_call_targets", "device_count",
           "splice_module", "call_spliced", "build_export_module"]
