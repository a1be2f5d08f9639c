"""``call_exported_p``: calling an exported function (``hlox.export.Exported.call``).

Its one parameter, ``exported``, is the ``Exported`` (read here only through its attributes:
``in_avals``, ``out_avals``, ``in_tree``, ``fun_name``, ``platforms``, ``nr_devices``,
``disabled_safety_checks``, ``module_kept_var_idx``, ``mlir_module_serialized``). Its
abstract evaluation checks the arguments against the exported types; its lowering splices
the exported module into the program being lowered and calls its ``main``, so a jitted
function calling an ``Exported`` is still one program; in a partitioned program the call's
arguments and results are constrained to the exported layouts (over the exported mesh). Eagerly it runs as a one-equation
program. Differentiation goes through ``Exported.call``'s ``custom_vjp`` (the exported VJP);
there is no batching rule, as in JAX.
"""
from __future__ import annotations

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.config import config
from hlox.core import shape_poly_solve
from hlox.core.primitive import Primitive
from hlox.core.shape_poly import is_symbolic_dim
from hlox.interpreters import xla
from hlox.interpreters.dim_lowering import is_static
from hlox.interpreters.exported_module import call_spliced, splice_module
from hlox.runtime import ffi as runtime_ffi

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy, stablehlo as hlo

__all__ = ["call_exported_p"]

call_exported_p = Primitive("call_exported")
call_exported_p.multiple_results = True


def argument_names(in_tree) -> list:
  """The flat arguments' names as JAX writes them in errors: ``args[0]``, ``kwargs['x']``."""
  example = in_tree.unflatten(list(range(in_tree.num_leaves)))
  names = [None] * in_tree.num_leaves
  for path, i in tree_util.tree_flatten_with_path(example)[0]:
    head = "args" if path[0].idx == 0 else "kwargs"
    names[i] = head + tree_util.keystr(path[1:])
  return names


def _call_exported_abstract_eval(*avals, exported):
  expected = exported.in_avals
  if len(avals) != len(expected):
    raise ValueError(f"Function '{exported.fun_name}' was exported with {len(expected)} "
                     f"array arguments and is called with {len(avals)}")
  names = None
  for i, (want, got) in enumerate(zip(expected, avals)):
    if want.shape == got.shape and want.dtype == got.dtype:
      continue
    names = names or argument_names(exported.in_tree)
    if len(want.shape) != len(got.shape):
      raise ValueError(f"Rank mismatch for {names[i]}: expected {want.shape} and called "
                       f"with {got.shape}")
    if want.dtype != got.dtype:
      raise ValueError(f"Dtype mismatch for {names[i]}: expected {want.dtype} and called "
                       f"with {got.dtype}")
    for d, (a, b) in enumerate(zip(want.shape, got.shape)):
      if a != b and not is_symbolic_dim(a):
        raise ValueError(f"Shape mismatch for {names[i]}.shape[{d}] (expected same "
                         f"constant): expected {want.shape} and called with {got.shape}")
  if not _polymorphic(exported):
    return list(exported.out_avals)
  # Shape polymorphism: the dimension variables' values from the actual shapes (ints, or
  # the caller's own symbolic sizes), and the results' shapes from them.
  env = shape_poly_solve.check_call([a.shape for a in expected], [a.shape for a in avals],
                                    names or argument_names(exported.in_tree))
  return [a.update(shape=shape_poly_solve.evaluate_shape(a.shape, env))
          for a in exported.out_avals]


def _polymorphic(exported) -> bool:
  return not all(is_static(a.shape) for a in (*exported.in_avals, *exported.out_avals))

call_exported_p.def_abstract_eval(_call_exported_abstract_eval)


def _call_exported_impl(*args, exported):
  return xla.apply_primitive(call_exported_p, *args, exported=exported)

call_exported_p.def_impl(_call_exported_impl)


def _platform_index(exported, platform: str) -> int:
  """Which of the exported lowerings serves ``platform`` (JAX's platform check: an
  ``Exported`` runs only where it was exported for, unless that check was disabled, and
  then its first lowering serves)."""
  if platform in exported.platforms:
    return exported.platforms.index(platform)
  if any(str(c) == "platform" for c in exported.disabled_safety_checks):
    return 0
  raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                   f"'{tuple(exported.platforms)}' but it is used on '{(platform,)}'.")


def _call_exported_lowering(ctx, *args, exported):
  mctx = ctx.module_context
  index = _platform_index(exported, mctx.platform)
  devices = mctx.mesh.size if mctx.mesh is not None else mctx.num_replicas
  if exported.nr_devices != 1 and devices != exported.nr_devices:
    raise ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} "
                     f"devices and is called in a context with {devices} devices, which is "
                     "not allowed.")
  if mctx.platform == "cpu":
    # A module exported by JAX or hlox may call LAPACK's kernels (custom calls of jaxlib's
    # ``lapack_*_ffi`` targets), which are registered with XLA only once something asks.
    runtime_ffi.ensure_lapack()
  name, fn_type, meshes = splice_module(
      mctx, exported.mlir_module_serialized,
      xla.module_symbol(f"call_exported_{exported.fun_name}"))
  if meshes and not config.use_shardy_partitioner:
    raise ValueError(
        "The function was exported with shardy enabled but you are calling it with Shardy "
        "disabled. Please enable Shardy using `--jax_use_shardy_partitioner=True`.")
  # As JAX: the arguments and results are constrained to the exported layouts.
  args = _constrained(mctx, args, exported.in_avals, exported._in_named_shardings, meshes)
  operands = [args[i] for i in exported.module_kept_var_idx]
  if len(exported.platforms) > 1:  # the module's first argument picks its lowering
    operands.insert(0, xla.ir_constant(np.int32(index)))
  if exported.uses_global_constants:  # (as JAX marks a module whose callee takes some)
    mctx.module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(True)
  if not _polymorphic(exported):
    outs = call_spliced(name, fn_type, operands)
  else:
    # The callee takes dynamic sizes: its operands are cast to its types and its results
    # back to the call's, and the whole program is refined before it is compiled.
    mctx.refine_shapes = True
    operands = [x if x.type == t else hlo.convert(t, x)
                for x, t in zip(operands, fn_type.inputs)]
    outs = call_spliced(name, fn_type, operands)
    out_types = [xla.aval_to_ir_type(a) for a in ctx.avals_out]
    outs = [x if x.type == t else hlo.convert(t, x) for x, t in zip(outs, out_types)]
  return _constrained(mctx, outs, exported.out_avals, exported._out_named_shardings, meshes)


def _constrained(mctx, values, avals, shardings, meshes) -> list:
  """``values`` constrained to the exported ``shardings`` (None: left as they are), over
  the spliced module's mesh of their axes; unchanged outside a partitioned program."""
  if mctx.mesh is None or mctx.manual or not any(s is not None for s in shardings):
    return list(values)
  out = []
  for x, aval, s in zip(values, avals, shardings):
    symbol = None if s is None else meshes.get(tuple(zip(s.mesh.axis_names,
                                                         s.mesh.axis_sizes)))
    if symbol is None:
      out.append(x)
      continue
    attr = ir.Attribute.parse(s.sdy_text(len(aval.shape), mesh_symbol=symbol))
    out.append(sdy.ShardingConstraintOp(x, attr).result)
  return out

xla.register_lowering(call_exported_p, _call_exported_lowering)
