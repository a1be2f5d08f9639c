"""Lowering jaxprs to StableHLO, compiling them, and eager dispatch of single primitives.

``lower_jaxpr`` is an interpreter: it walks a jaxpr's equations, keeps an ``ir.Value`` per
variable, and calls each primitive's rule from ``lowering_rules`` with a
``LoweringRuleContext``. Call primitives lower their jaxpr to a private function (see
``lower_call``). Only this module (and ``pmap.py``) builds MLIR.
"""
from __future__ import annotations

import contextlib
import operator
import re
import threading
import warnings
import zlib
from functools import partial
from typing import Callable, Sequence

import numpy as np

from hlox import monitoring
from hlox.cache import LRUCache
from hlox.core import dtypes, sharding_types
from hlox.core import source_info as source_info_lib
from hlox.core.avals import ShapedArray, abstract_token
from hlox.core.tracer import check_no_tracers, invalid_argument_error
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, check_jaxpr
from hlox.config import config
from hlox.interpreters import dim_lowering, nan_checks, state_discharge
from hlox.interpreters.dim_lowering import _envs
from hlox.runtime import client
from hlox.runtime import layout as layout_lib
from hlox.runtime import shape_refinement
from hlox.runtime.array import (SCALAR_TYPES, Array, check_not_deleted, device_put,
                                moved_buffers, needs_moves, scalar_argument, single_buffers)

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, func as func_dialect, sdy, stablehlo as hlo

lowering_rules: dict = {}
# platform -> {primitive: rule}: rules for one platform only (e.g. LAPACK custom calls on
# "cpu", cuSOLVER ones on "cuda"); they win over the platform-less rule in ``lowering_rules``.
platform_lowering_rules: dict = {}


def register_lowering(primitive, rule: Callable, platform: str | None = None) -> Callable:
  """``rule(ctx, *ir_args, **params)`` returns an ``ir.Value`` (a list for multi-result).

  With ``platform`` (``"cpu"``, ``"cuda"``, ...) the rule serves modules lowered for that
  platform only; without it, it is the default for every platform.
  """
  if platform is None:
    lowering_rules[primitive] = rule
  else:
    platform_lowering_rules.setdefault(platform, {})[primitive] = rule
  return rule


def get_lowering_rule(primitive, platform: str):
  """The rule lowering ``primitive`` for ``platform`` (its own, else the default), or None."""
  rules = platform_lowering_rules.get(platform)
  rule = rules.get(primitive) if rules else None
  return rule if rule is not None else lowering_rules.get(primitive)


# --- contexts ----------------------------------------------------------------------------

_registry = None
_thread_local = threading.local()


def make_ir_context() -> ir.Context:
  """A fresh MLIR context with the StableHLO and CHLO dialects (reused a few times per thread
  so that interned types do not grow without bound)."""
  global _registry
  cached = getattr(_thread_local, "ctx", None)
  if cached is not None and cached[1] < 20:
    _thread_local.ctx = (cached[0], cached[1] + 1)
    return cached[0]
  if _registry is None:
    _registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(_registry)
  ctx = ir.Context()
  ctx.append_dialect_registry(_registry)
  ctx.load_all_available_dialects()
  hlo.register_dialect(ctx)
  chlo.register_dialect(ctx)
  sdy.register_dialect(ctx)
  if not isinstance(threading.current_thread(), threading._DummyThread):
    # Not on a thread Python did not start (XLA's, running a host callback that compiles):
    # its thread state is made for the call and cleared after it, and clearing a
    # thread-local that holds an MLIR object then crashes the interpreter.
    _thread_local.ctx = (ctx, 0)
  return ctx


class ModuleContext:
  """State shared while lowering one module: the module, its symbol table, lowered callees."""

  def __init__(self, context: ir.Context, module: ir.Module, platform: str = "cpu",
               axis_env=None, num_replicas: int = 1):
    self.context = context
    self.module = module
    self.symbol_table = ir.SymbolTable(module.operation)
    self.platform = platform
    self.lowered_calls = {}  # (id(jaxpr), name) -> func op name
    self._names = set()
    self.axis_env = axis_env  # used by pmap/collectives
    self.num_replicas = num_replicas
    # The mesh a partitioned program (``interpreters/partitioned.py``) runs over: sharding
    # constraints refer to it as ``@mesh``. None in other programs.
    self.mesh = None
    # Inside a ``shard_map`` body: the named axes are the mesh's, the "replicas" of the
    # collectives are the program's partitions (``spmd_collective``).
    self.manual = False
    # ... and the mesh axes that body is not manual over (a shard_map with axis_names).
    self.auto_axes = ()
    self._channels = 0
    self.sharding_groups = 0  # ``sdy.sharding_group`` ids given out (``shard_alike``)
    # Layouts asked for the entry function's arguments (position -> mode) and results
    # ((value, mode) pairs) by ``entry_layout_p`` (``lax/entry_layout.py``).
    self.entry_layouts = {"in": {}, "out": []}
    # Python callables the program calls: (callback, result avals, takes a token).
    self.host_callbacks = []
    # Python objects the compiler calls back into (``inspect_sharding``'s callbacks): kept
    # alive by the ``Lowered`` module until it has been compiled.
    self.keepalive = []
    self.ordered_tokens = {}  # block -> the token its last ordered callback returned
    # Op locations: ``scope`` (a name stack) prefixes the names (``jit(f)/while/body``:
    # where the ops' equation is); each location is made once per module.
    self.scope = source_info_lib.EMPTY
    self._locations = {}
    self.rule_scopes = {}  # (scope, equation's name stack, label) -> scope of its rule
    # Set by a call of a shape-polymorphic exported module: the finished module has dynamic
    # sizes to resolve (``runtime/shape_refinement.py``).
    self.refine_shapes = False
    # (name, new name) of the meshes of spliced exported modules renamed because the
    # program had a symbol of that name: see ``_give_back_mesh_names``.
    self.renamed_meshes = []

  def location(self, label: str, info) -> ir.Location:
    """``loc("<scope>/<label>"("<function>"("<file>":line:col)))`` for an equation's ops,
    as JAX names them: XLA keeps the name as the op's ``op_name`` and the position as its
    ``source_file``/``source_line``, so dumps and profiles point at the user's line."""
    if info is None:
      key = (self.scope, label)
    else:  # equations made by one line in a Python loop share their location
      key = (self.scope, label, info.code, info.lasti, info.name_stack)
    loc = self._locations.get(key)
    if loc is None:
      loc = self._locations[key] = self._make_location(label, info)
    return loc

  def _make_location(self, label, info) -> ir.Location:
    stack = self.scope if info is None or not info.name_stack else self.scope + info.name_stack
    name = _op_name(stack, label)
    if info is None or info.code is None:
      return ir.Location.name(name)
    position = ir.Location.name(
        info.function, childLoc=ir.Location.file(info.file, info.line, info.column or 0))
    return ir.Location.name(name, childLoc=position)

  def scoped(self, *names: str) -> "_Scoped":
    """Context manager: ops emitted inside are named under ``names`` too (a rule's regions:
    ``while/body``, ``cond/branch_0_fun``), as JAX's lowering rules name them."""
    return _Scoped(self, names)

  def ordered_token(self) -> ir.Value:
    """The token after the current block's last ordered effect (a fresh one if none).

    Ordered callbacks take and return a token, which XLA never reorders; control flow
    carries it into and out of its regions (``set_ordered_token``) and calls inline bodies
    with ordered effects (``lower_call``), so one chain runs through the whole program."""
    token = self.ordered_tokens.get(ir.InsertionPoint.current.block)
    return token if token is not None else hlo.AfterAllOp([]).result

  def set_ordered_token(self, token: ir.Value, block=None) -> None:
    self.ordered_tokens[block if block is not None else ir.InsertionPoint.current.block] = token

  def add_host_callback(self, callback, result_avals, with_token: bool = False,
                        transfer=None) -> int:
    """Register a Python host callback of this program; returns the index its custom call
    names it by (``runtime/callbacks.py``). A callback reached through host send/recv (on a
    TPU) gives its ``callbacks.HostTransfer`` instead of a position."""
    self.host_callbacks.append((callback, tuple(result_avals), bool(with_token), transfer))
    return len(self.host_callbacks) - 1

  def maximal_sharding(self, num_results: int, device_index: int = 0) -> ir.Attribute:
    """The ``sdy.sharding`` of an op that runs on one device of a partitioned program, the
    ``device_index``-th of its mesh (a host callback: XLA runs a side-effecting op once,
    never on every device): ``num_results`` (at least one) values on a one-device mesh,
    declared at the module's top the first time."""
    name = f"maximal_mesh_{device_index}"
    if name not in self._names:
      self._names.add(name)
      with ir.InsertionPoint.at_block_begin(self.module.body):
        sdy.MeshOp(name, ir.Attribute.parse(f"#sdy.mesh<[], device_ids=[{device_index}]>"))
    each = f"<@{name}, []>"
    return ir.Attribute.parse(
        f"#sdy.sharding_per_value<[{', '.join([each] * max(1, num_results))}]>")

  def new_channel(self) -> int:
    """A channel id no other collective or host transfer of this program uses."""
    self._channels += 1
    return self._channels

  def unique_name(self, base: str) -> str:
    name, i = base, 0
    while name in self._names:
      i += 1
      name = f"{base}_{i}"
    self._names.add(name)
    return name


class _Scoped:
  __slots__ = ("mctx", "names", "prev")

  def __init__(self, mctx, names):
    self.mctx = mctx
    self.names = names

  def __enter__(self):
    self.prev = self.mctx.scope
    self.mctx.scope = self.prev + self.names

  def __exit__(self, *exc):
    self.mctx.scope = self.prev


def _op_name(stack, label: str) -> str:
  """An op's location name: its equation's name stack then its label. A call's label is a
  scope of the stack (``vmap(jit(f))``, as JAX names the call); a primitive's is appended
  to the text (``vmap()/sin``)."""
  if label.startswith("jit("):
    return str(stack.extend(label))
  return f"{stack}/{label}" if stack else label


def _rule_scope(stack, label: str):
  """The name stack a rule emits its ops under: a call's callee names continue the
  structure (``jvp(jit(f))``); any other rule's regions (``cond``, ``while``) follow the
  equation's text (``vmap()/cond``): JAX lowers those as separate functions inlined at the
  equation's location, which prefixes the text."""
  if label.startswith("jit("):
    return stack.extend(label)
  if any(type(e) is source_info_lib.Transform for e in stack):
    return source_info_lib.NameStack((str(stack),))
  return stack


class LoweringRuleContext:
  """What a lowering rule sees: the module context and the avals of its inputs/outputs."""

  __slots__ = ("module_context", "primitive", "avals_in", "avals_out")

  def __init__(self, module_context, primitive, avals_in, avals_out):
    self.module_context = module_context
    self.primitive = primitive
    self.avals_in = avals_in
    self.avals_out = avals_out

  def replace(self, **kw) -> "LoweringRuleContext":
    fields = {k: getattr(self, k) for k in self.__slots__}
    fields.update(kw)
    return LoweringRuleContext(**fields)


# --- replicas and named axes (pmap) ------------------------------------------------------
#
# A pmapped program runs as ``num_replicas`` replicas. Its named axes (``axis_env``, outermost
# first) split the replica id in row-major order; a trailing factor that no name covers stands
# for replicas of inner pmaps that are not in scope at this point of the program.

def _axis_strides(mctx: ModuleContext, name):
  env = tuple(mctx.axis_env or ())
  names = [n for n, _ in env]
  if name not in names:
    bound = ", ".join(repr(n) for n in names) or "none"
    raise NameError(f"unbound axis name: {name!r} (axis names bound by enclosing pmaps: "
                    f"{bound})")
  sizes = [s for _, s in env]
  covered = int(np.prod(sizes)) if sizes else 1
  trailing = mctx.num_replicas // covered
  pos = len(names) - 1 - names[::-1].index(name)  # innermost axis with that name
  stride = int(np.prod(sizes[pos + 1:])) * trailing if pos + 1 < len(sizes) else trailing
  return sizes[pos], stride, pos


def axis_groups(mctx: ModuleContext, axes) -> list:
  """Replica groups of a collective over the pmap axes ``axes``: each group lists the
  replicas that differ only in their position along those axes."""
  env = tuple(mctx.axis_env or ())
  sizes = [s for _, s in env]
  covered = int(np.prod(sizes)) if sizes else 1
  shape = sizes + [mctx.num_replicas // covered]
  positions = set()
  for name in axes:
    positions.add(_axis_strides(mctx, name)[2])
  ids = np.arange(mctx.num_replicas).reshape(shape)
  moved = [i for i in range(len(shape)) if i not in positions] + sorted(positions)
  # Groups in axis-major order within each group, as the named axes enumerate them.
  group_size = int(np.prod([shape[i] for i in sorted(positions)])) if positions else 1
  return np.transpose(ids, moved).reshape(-1, group_size).tolist()


def replica_groups_attr(groups) -> ir.Attribute:
  width = max(map(len, groups), default=0)
  # Groups of several sizes (a psum with uneven axis_index_groups) are padded with -1, as
  # StableHLO's rectangular replica_groups allow.
  arr = np.asarray([list(g) + [-1] * (width - len(g)) for g in groups], dtype=np.int64)
  return ir.DenseIntElementsAttr.get(arr, type=ir.IntegerType.get_signless(64))


def spmd_collective(mctx: ModuleContext, op, global_ids: bool = True) -> None:
  """Inside a ``shard_map`` body, make a collective act across partitions: a channel of its
  own and (``global_ids``) groups read as global device ids, i.e. positions in the mesh."""
  if not mctx.manual:
    return
  op.attributes["channel_handle"] = ir.Attribute.parse(
      f"#stablehlo.channel_handle<handle = {mctx.new_channel()}, type = 1>")
  if global_ids:
    op.attributes["use_global_device_ids"] = ir.UnitAttr.get()


def axis_index_hlo(mctx: ModuleContext, name) -> ir.Value:
  """The position of this replica along pmap axis ``name`` (an int32 scalar)."""
  size, stride, _ = _axis_strides(mctx, name)
  if mctx.manual and mctx.auto_axes:
    return _axis_index_all_manual(mctx, name)
  i32 = ShapedArray((), dtypes.int32)
  rid = hlo.convert(aval_to_ir_type(i32),
                    hlo.partition_id() if mctx.manual else hlo.replica_id())
  if stride != 1:
    rid = hlo.divide(rid, ir_constant(np.int32(stride)))
  if size * stride != mctx.num_replicas:
    rid = hlo.remainder(rid, ir_constant(np.int32(size)))
  return rid


def _axis_index_all_manual(mctx: ModuleContext, name) -> ir.Value:
  """``axis_index`` in a body that is manual over part of the mesh. XLA's partitioner
  refuses ``partition_id`` there (which copy would it be?), so, as JAX does, the index is
  computed in a nested region manual over the remaining axes, and is the same along them."""
  from jaxlib.mlir.dialects import sdy
  i32 = aval_to_ir_type(ShapedArray((), dtypes.int32))
  names = ", ".join(f'"{a}"' for a in mctx.auto_axes)
  op = sdy.ManualComputationOp(
      [i32], [], ir.Attribute.parse("#sdy.sharding_per_value<[]>"),
      ir.Attribute.parse("#sdy.sharding_per_value<[<@mesh, []>]>"),
      ir.Attribute.parse(f"#sdy<manual_axes{{{names}}}>"))
  block = op.body.blocks.append()
  saved, mctx.auto_axes = mctx.auto_axes, ()
  try:
    with ir.InsertionPoint(block):
      sdy.ReturnOp([axis_index_hlo(mctx, name)])
  finally:
    mctx.auto_axes = saved
  return op.results[0]


# --- types and constants -----------------------------------------------------------------

def _ir_type_table():
  return {
      dtypes.bool_: lambda: ir.IntegerType.get_signless(1),
      dtypes.float0: lambda: ir.IntegerType.get_signless(1),
      dtypes.int2: lambda: ir.IntegerType.get_signless(2),
      dtypes.int4: lambda: ir.IntegerType.get_signless(4),
      dtypes.int8: lambda: ir.IntegerType.get_signless(8),
      dtypes.int16: lambda: ir.IntegerType.get_signless(16),
      dtypes.int32: lambda: ir.IntegerType.get_signless(32),
      dtypes.int64: lambda: ir.IntegerType.get_signless(64),
      dtypes.uint2: lambda: ir.IntegerType.get_unsigned(2),
      dtypes.uint4: lambda: ir.IntegerType.get_unsigned(4),
      dtypes.uint8: lambda: ir.IntegerType.get_unsigned(8),
      dtypes.uint16: lambda: ir.IntegerType.get_unsigned(16),
      dtypes.uint32: lambda: ir.IntegerType.get_unsigned(32),
      dtypes.uint64: lambda: ir.IntegerType.get_unsigned(64),
      dtypes.float16: ir.F16Type.get,
      dtypes.bfloat16: ir.BF16Type.get,
      dtypes.float32: ir.F32Type.get,
      dtypes.float64: ir.F64Type.get,
      dtypes.complex64: lambda: ir.ComplexType.get(ir.F32Type.get()),
      dtypes.complex128: lambda: ir.ComplexType.get(ir.F64Type.get()),
      dtypes.float8_e4m3fn: ir.Float8E4M3FNType.get,
      dtypes.float8_e5m2: ir.Float8E5M2Type.get,
      dtypes.float8_e4m3fnuz: ir.Float8E4M3FNUZType.get,
      dtypes.float8_e5m2fnuz: ir.Float8E5M2FNUZType.get,
      dtypes.float8_e4m3b11fnuz: ir.Float8E4M3B11FNUZType.get,
      dtypes.float8_e3m4: ir.Float8E3M4Type.get,
      dtypes.float8_e4m3: ir.Float8E4M3Type.get,
      dtypes.float8_e8m0fnu: ir.Float8E8M0FNUType.get,
      dtypes.float4_e2m1fn: ir.Float4E2M1FNType.get,
      dtypes.float6_e2m3fn: ir.Float6E2M3FNType.get,
      dtypes.float6_e3m2fn: ir.Float6E3M2FNType.get,
  }


_IR_TYPES = None


def dtype_to_ir_type(dtype) -> ir.Type:
  global _IR_TYPES
  if _IR_TYPES is None:
    _IR_TYPES = _ir_type_table()
  try:
    return _IR_TYPES[np.dtype(dtype)]()
  except KeyError:
    raise TypeError(f"hlox cannot lower arrays of dtype {dtype}") from None


def aval_to_ir_type(aval) -> ir.Type:
  if aval is abstract_token:
    return hlo.TokenType.get()
  if dtypes.user_rules(aval.dtype) is not None:  # a user's extended dtype: its physical type
    phys = aval.dtype._rules.physical_element_aval(aval.dtype)
    return ir.RankedTensorType.get((*aval.shape, *phys.shape), dtype_to_ir_type(phys.dtype))
  try:
    return ir.RankedTensorType.get(aval.shape, dtype_to_ir_type(aval.dtype))
  except TypeError:  # symbolic dimensions (shape polymorphism) are dynamic sizes
    dynamic = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get(
        [d if dim_lowering.is_static((d,)) else dynamic for d in aval.shape],
        dtype_to_ir_type(aval.dtype))


def _is_splat(value: np.ndarray) -> bool:
  """All elements have the same bits (NaN fills included, which ``==`` would miss)."""
  rows = np.ascontiguousarray(value).reshape(value.size).view(np.uint8).reshape(value.size, -1)
  return bool((rows == rows[0]).all())


def ir_constant(value, dtype=None) -> ir.Value:
  """A ``stablehlo.constant`` holding ``value`` (NumPy array or scalar)."""
  value = np.asarray(value, dtype=dtype)
  if value.dtype == dtypes.float0:
    value = np.zeros(value.shape, dtype=np.bool_)
    element_type = dtype_to_ir_type(dtypes.float0)
  else:
    element_type = dtype_to_ir_type(value.dtype)
  shape = value.shape
  if value.size > 1 and _is_splat(value):
    # A splat constant stays small in the module, then a broadcast.
    scalar = ir_constant(value.flat[0])
    return hlo.broadcast_in_dim(ir.RankedTensorType.get(shape, element_type), scalar,
                                _dense_i64(()))
  if value.dtype == np.bool_:
    raw = np.packbits(value, bitorder="little")
    attr = ir.DenseElementsAttr.get(raw, type=element_type, shape=shape)
  elif value.dtype in (dtypes.bfloat16, dtypes.float16) or value.dtype in dtypes.float8_dtypes:
    bits = value.view(np.uint16 if value.dtype.itemsize == 2 else np.uint8)
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(bits), type=element_type,
                                    shape=shape)
  elif value.dtype in dtypes.narrow_int_dtypes:
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(value.astype(np.int8)),
                                    type=element_type, shape=shape)
  else:
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(value), type=element_type,
                                    shape=shape)
  return hlo.constant(attr)


def full_like_aval(value, aval) -> ir.Value:
  """A constant filled with ``value``, of ``aval``'s shape and dtype."""
  if _envs and not dim_lowering.is_static(aval.shape):
    return broadcast_in_dim(ir_constant(np.array(value, dtype=aval.dtype)), aval, ())
  return ir_constant(np.full(aval.shape, value, dtype=aval.dtype))


def _dense_i64(values) -> ir.Attribute:
  return ir.DenseI64ArrayAttr.get([int(v) for v in values])


dense_i64 = _dense_i64


def i64_attr(v) -> ir.Attribute:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))


def i32_attr(v) -> ir.Attribute:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


def broadcast_in_dim(x: ir.Value, aval_out, broadcast_dimensions) -> ir.Value:
  if _envs and not dim_lowering.is_static(aval_out.shape):
    return hlo.dynamic_broadcast_in_dim(aval_to_ir_type(aval_out), x,
                                        dim_lowering.shape_tensor(aval_out.shape),
                                        _dense_i64(broadcast_dimensions))
  return hlo.broadcast_in_dim(aval_to_ir_type(aval_out), x, _dense_i64(broadcast_dimensions))


def reshape(x: ir.Value, aval_out) -> ir.Value:
  """``x`` reshaped to ``aval_out``'s shape (dynamically when it has symbolic sizes)."""
  if _envs and not dim_lowering.is_static(aval_out.shape):
    return hlo.dynamic_reshape(aval_to_ir_type(aval_out), x,
                               dim_lowering.shape_tensor(aval_out.shape))
  return hlo.reshape(aval_to_ir_type(aval_out), x)


def iota(aval_out, dimension: int) -> ir.Value:
  if _envs and not dim_lowering.is_static(aval_out.shape):
    return hlo.dynamic_iota(aval_to_ir_type(aval_out),
                            dim_lowering.shape_tensor(aval_out.shape), i64_attr(dimension))
  return hlo.iota(aval_to_ir_type(aval_out), i64_attr(dimension))


def slice_op(x: ir.Value, aval_out, start_indices, limit_indices, strides) -> ir.Value:
  """``hlo.slice``; a ``real_dynamic_slice`` when a bound or stride is symbolic."""
  if _envs and not (dim_lowering.is_static(start_indices) and
                    dim_lowering.is_static(limit_indices) and dim_lowering.is_static(strides)):
    st = dim_lowering.shape_tensor
    return hlo.real_dynamic_slice(aval_to_ir_type(aval_out), x, st(start_indices),
                                  st(limit_indices), st(strides))
  return hlo.slice(x, _dense_i64(start_indices), _dense_i64(limit_indices), _dense_i64(strides))


def dynamic_slice(x: ir.Value, aval_in, aval_out, start_indices) -> ir.Value:
  """``hlo.dynamic_slice`` of ``aval_out``'s size at ``start_indices`` (scalars of the
  program). With symbolic sizes it is a ``real_dynamic_slice``, which does not clamp the
  starts into range as ``dynamic_slice`` does: they are clamped here."""
  sizes = aval_out.shape
  if _envs and not dim_lowering.is_static(sizes):
    st = dim_lowering.shape_tensor
    sizes_t = st(sizes)
    starts = hlo.clamp(st([0] * len(sizes)), st(start_indices),
                       hlo.subtract(st(aval_in.shape), sizes_t))
    return hlo.real_dynamic_slice(aval_to_ir_type(aval_out), x, starts,
                                  hlo.add(starts, sizes_t), st([1] * len(sizes)))
  return hlo.dynamic_slice(x, list(start_indices), _dense_i64(sizes))


def pad(x: ir.Value, padding_value: ir.Value, aval_out, low, high, interior) -> ir.Value:
  """``hlo.pad``; a ``dynamic_pad`` when some padding is symbolic."""
  if _envs and not (dim_lowering.is_static(low) and dim_lowering.is_static(high) and
                    dim_lowering.is_static(interior)):
    st = dim_lowering.shape_tensor
    return hlo.dynamic_pad(aval_to_ir_type(aval_out), x, padding_value, st(low), st(high),
                           st(interior))
  return hlo.pad(x, padding_value, _dense_i64(low), _dense_i64(high), _dense_i64(interior))


def multi_broadcast(args, avals_in, shape) -> list:
  """Broadcast elementwise operands (scalars or same-rank with 1s) to ``shape``."""
  out = []
  for x, aval in zip(args, avals_in):
    if aval.shape == tuple(shape):
      out.append(x)
    else:
      dims = range(len(shape) - aval.ndim, len(shape)) if aval.ndim else ()
      out.append(broadcast_in_dim(x, ShapedArray(shape, aval.dtype), dims))
  return out


def convert_hlo(x: ir.Value, aval_in, aval_out) -> ir.Value:
  """Convert ``x`` to ``aval_out``'s dtype (bool results compare with zero, as NumPy does)."""
  if aval_in.dtype == aval_out.dtype:
    return x
  if aval_out.dtype == dtypes.bool_ and aval_in.dtype != dtypes.bool_:
    zero = full_like_aval(0, aval_in)
    direction = "NE"
    return compare_hlo(x, zero, direction, aval_in.dtype)
  if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(aval_out.dtype):
    x = hlo.real(x)
    aval_in = aval_in.update(dtype=np.finfo(aval_in.dtype).dtype)
  return hlo.convert(aval_to_ir_type(aval_out), x)


def compare_hlo(x, y, direction: str, dtype) -> ir.Value:
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    compare_type = "FLOAT"
  elif dtype == dtypes.bool_ or dtypes.is_unsigned_int(dtype):
    compare_type = "UNSIGNED"
  else:
    compare_type = "SIGNED"
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(compare_type))


# --- the lowering interpreter ------------------------------------------------------------

def lower_jaxpr(mctx: ModuleContext, jaxpr: Jaxpr, consts: Sequence[ir.Value],
                args: Sequence[ir.Value]) -> list:
  """Emit ``jaxpr``'s equations at the current insertion point; returns its outputs."""
  if state_discharge.jaxpr_has_refs(jaxpr):
    # References made and used inside: the pure program, their values threaded through.
    whole = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns,
                  jaxpr.debug_info)
    pure = state_discharge.discharge_jaxpr(ClosedJaxpr(whole, []))
    pure_consts = [ir_constant(np.asarray(c)) for c in pure.consts]
    return lower_jaxpr(mctx, pure.jaxpr, pure_consts, [*consts, *args])
  env = {}

  def read(v):
    if type(v) is Literal:
      return ir_constant(np.asarray(v.val, dtype=v.aval.dtype))
    return env[v]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  typed = mctx.mesh is not None and not mctx.manual and sharding_types.active[0]
  dead = _dead_calls(jaxpr)
  for eqn in jaxpr.eqns:
    if dead and eqn in dead:
      continue
    if typed:
      outs = _lower_typed_eqn(mctx, eqn, read)
    else:
      outs = lower_eqn(mctx, eqn, [read(v) for v in eqn.invars],
                       [_aval(v) for v in eqn.invars], [v.aval for v in eqn.outvars])
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


# Call primitives (jit) whose equation is left out of the lowered program when none of its
# outputs is used and its program has no effect outside (``effects_stay_inside``).
droppable_calls: set = set()


def _dead_calls(jaxpr: Jaxpr) -> set:
  """The droppable call equations of ``jaxpr`` whose outputs nothing uses."""
  calls = [e for e in jaxpr.eqns if e.primitive in droppable_calls]
  if not calls:
    return set()
  used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
  used.update(v for v in jaxpr.outvars if type(v) is not Literal)
  return {e for e in calls if not any(v in used for v in e.outvars)
          and state_discharge.effects_stay_inside(e.params["jaxpr"].jaxpr)}


def _lower_typed_eqn(mctx: ModuleContext, eqn: JaxprEqn, read) -> list:
  """An equation of a program whose types are split over Explicit mesh axes, lowered as
  JAX does: each split result is constrained to its type, and an elementwise operation's
  operands that are not split as its result (scalars broadcast first) are constrained to
  the result's split, so the partitioner lays everything out as the types say."""
  args, avals_in = [read(v) for v in eqn.invars], [_aval(v) for v in eqn.invars]
  avals_out = [v.aval for v in eqn.outvars]
  split = getattr(eqn.outvars[0], "sharding", None) if eqn.outvars else None
  if split is not None and getattr(sharding_types.sharding_rules.get(eqn.primitive), "elementwise", False):
    shape = avals_out[0].shape
    for i, (v, a) in enumerate(zip(eqn.invars, avals_in)):
      if getattr(v, "sharding", None) == split:
        continue
      if a.shape != shape:
        if a.shape != ():
          continue
        a = ShapedArray(shape, a.dtype, a.weak_type)
        args[i] = hlo.broadcast_in_dim(aval_to_ir_type(a), args[i], dense_i64(()))
        avals_in[i] = a
      # (an operand's partial-sum axes are its own: only the result's split is asked)
      args[i] = _constrain(mctx, split, args[i], unreduced=False)
  outs = lower_eqn(mctx, eqn, args, avals_in, avals_out)
  if eqn.primitive in sharding_types.constraints:  # (its lowering is the constraint)
    return outs
  return [_constrain_to_type(mctx, v, x) for v, x in zip(eqn.outvars, outs)]


def _constrain_to_type(mctx: ModuleContext, v, x):
  """A result whose type is split over Explicit mesh axes, constrained so (as JAX lowers
  every such result): the partitioner then lays it out as its type says. Axes of other
  types stay open to the partitioner."""
  split = getattr(v, "sharding", None)
  if split is None or not hasattr(x, "type"):
    return x
  return _constrain(mctx, split, x)


def _constrain(mctx: ModuleContext, split, x, unreduced: bool = True):
  """``x`` constrained to ``split``; with its unreduced axes (partial sums: XLA would
  otherwise all-reduce the operands of an operation on them) unless ``unreduced`` is
  False. Over a mesh with Auto axes every dimension stays open to them."""
  from hlox.runtime import sharding as sharding_lib
  mesh = mctx.mesh
  names = set(mesh.axis_names)
  if any(a not in names for e in split.entries for a in (e or ())):
    return x
  spec = sharding_lib.PartitionSpec(
      *[None if not e else e[0] if len(e) == 1 else e for e in split.entries],
      unreduced=split.unreduced & names if unreduced else frozenset())
  is_open = any(getattr(t, "name", None) != "Explicit" for t in mesh.axis_types)
  text = sharding_lib.NamedSharding(mesh, spec).sdy_text(len(split.entries),
                                                          open_dims=is_open)
  return sdy.ShardingConstraintOp(x, ir.Attribute.parse(text)).result


def lower_eqn(mctx: ModuleContext, eqn: JaxprEqn, args, avals_in, avals_out) -> list:
  """Emit one equation on ``args`` (of types ``avals_in``); its results as a list."""
  rule = get_lowering_rule(eqn.primitive, mctx.platform)
  if rule is None:
    raise NotImplementedError(
        f"MLIR translation rule for primitive '{eqn.primitive.name}' not found for platform "
        f"{mctx.platform!r} (interpreter: StableHLO lowering)")
  ctx = LoweringRuleContext(mctx, eqn.primitive, avals_in, avals_out)
  info = eqn.source_info
  label = _label(eqn)
  outer = mctx.scope
  metadata = info.xla_metadata if info is not None else ()
  # Equations a rule traces (``lower_fun``) carry this equation's XLA metadata, so every op
  # the rule emits is tagged with it, as JAX tags them.
  block = (source_info_lib.xla_metadata(metadata, replace=True)
           if metadata or source_info_lib._context.xla_metadata else _NO_BLOCK)
  try:
    with mctx.location(label, info), block:
      # Ops of nested jaxprs (bodies, branches, callees) are named inside this equation
      # (worked out once per module for each stack and label: rendering text is slow).
      names = info.name_stack if info is not None else None
      key = (outer, names, label)
      scope = mctx.rule_scopes.get(key)
      if scope is None:
        scope = mctx.rule_scopes[key] = _rule_scope(outer + names if names else outer, label)
      mctx.scope = scope
      out = rule(ctx, *args, **eqn.params)
  except Exception as e:
    if eqn.source_info and not getattr(e, "_hlox_noted", False):
      e.add_note(f"while lowering {eqn.primitive.name} from {eqn.source_info}")
      e._hlox_noted = True
    raise
  finally:
    mctx.scope = outer
  outs = out if eqn.primitive.multiple_results else [out]
  if len(outs) != len(eqn.outvars):
    raise RuntimeError(f"lowering of {eqn.primitive.name} gave {len(outs)} results, "
                       f"expected {len(eqn.outvars)}")
  if metadata:
    for value in outs:
      attach_frontend_attributes(value, metadata)
  return outs


_NO_BLOCK = contextlib.nullcontext()


def attach_frontend_attributes(value, pairs) -> None:
  """Tag the op that produced ``value`` with ``pairs`` (key/value pairs; booleans written
  ``true``/``false``) as ``mhlo.frontend_attributes``, which XLA keeps on the HLO
  instruction. Attributes the op already has win: the innermost request (a tagged value
  inside a tagged block) is the one that stands. A function argument has no op: untagged."""
  if not isinstance(value, ir.Value):
    return
  op = value.owner
  if isinstance(op, ir.Block):
    return
  op = op.operation if isinstance(op, ir.OpView) else op
  # A sharding annotation stands for the op that computed the value it annotates.
  while op.name == "sdy.sharding_constraint":
    op = op.operands[0].owner
    if isinstance(op, ir.Block):
      return
    op = op.operation if isinstance(op, ir.OpView) else op
  attrs = {k: ir.StringAttr.get(str(v).lower() if isinstance(v, bool) else str(v))
           for k, v in pairs}
  if "mhlo.frontend_attributes" in op.attributes:
    for named in ir.DictAttr(op.attributes["mhlo.frontend_attributes"]):
      attrs[named.name] = named.attr
  op.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(attrs)


def _aval(v):
  return v.aval


def _label(eqn) -> str:
  """An equation's name in op locations: the primitive's, ``jit(f)`` for a call of ``f``."""
  name = eqn.primitive.name
  if name == "jit":
    callee = eqn.params.get("name")
    if callee:
      return f"jit({callee})"
  return name


# Primitives whose equations can be ordered effects: primitive -> ``params -> bool``
# (``lax/callback.py`` registers its ordered callbacks).
ordered_effects: dict = {}


def has_ordered_effect(jaxpr: Jaxpr) -> bool:
  """Whether ``jaxpr`` or a jaxpr nested in its equations' parameters has an ordered
  effect."""
  for eqn in jaxpr.eqns:
    is_ordered = ordered_effects.get(eqn.primitive)
    if is_ordered is not None and is_ordered(eqn.params):
      return True
    for value in eqn.params.values():
      for sub in (value if isinstance(value, (tuple, list)) else (value,)):
        inner = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        if isinstance(inner, Jaxpr) and has_ordered_effect(inner):
          return True
  return False


def lower_call(ctx: LoweringRuleContext, closed: ClosedJaxpr, args, name: str = "jit",
               scope=None) -> list:
  """Lower ``closed`` as a private function (once per jaxpr per module) and call it.

  A body with ordered effects is inlined instead, so that its callbacks join the caller's
  token chain (``lax/callback.py``) and keep their order against the caller's. The
  function's ops are named under ``scope`` (a name stack; by default none, as JAX names a
  jitted function's ops relative to it); an inlined body's under the caller's."""
  mctx = ctx.module_context
  # With symbolic shapes the dimension variables are values of the entry function: a body
  # that uses them is inlined rather than made a function that would need them passed.
  if (ordered_effects and has_ordered_effect(closed.jaxpr)) or _envs:
    consts = [ir_constant(np.asarray(c)) for c in closed.consts]
    return lower_jaxpr(mctx, closed.jaxpr, consts, list(args))
  key = (id(closed.jaxpr), name)
  entry = mctx.lowered_calls.get(key)
  if entry is None:
    fn = private_function(mctx, name, closed,
                          scope=source_info_lib.EMPTY if scope is None else scope)
    out_types = [aval_to_ir_type(a) for a in closed.out_avals]
    fn_name = fn.name.value
    entry = mctx.lowered_calls[key] = (fn_name, out_types, closed)  # keep jaxpr alive
  fn_name, out_types, _ = entry
  call = func_dialect.CallOp(out_types, ir.FlatSymbolRefAttr.get(fn_name), list(args))
  return list(call.results)


def private_function(mctx: ModuleContext, name: str, closed, scope=None):
  """A private ``func.func`` of the module, named ``name`` (made unique), computing the
  closed jaxpr ``closed``; returns the ``FuncOp``. Its ops are named under ``scope`` (a name
  stack) when given, else under the caller's."""
  in_types = [aval_to_ir_type(a) for a in closed.in_avals]
  out_types = [aval_to_ir_type(a) for a in closed.out_avals]
  with ir.InsertionPoint(mctx.module.body):
    fn = func_dialect.FuncOp(mctx.unique_name(name), ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    block = fn.add_entry_block()
    outer = mctx.scope
    if scope is not None:
      mctx.scope = scope
    try:
      with ir.InsertionPoint(block):
        consts = [ir_constant(np.asarray(c)) for c in closed.consts]
        func_dialect.ReturnOp(lower_jaxpr(mctx, closed.jaxpr, consts, list(block.arguments)))
    finally:
      mctx.scope = outer
  return fn


def lower_fun(fun: Callable, multiple_results: bool = True) -> Callable:
  """A lowering rule made by tracing ``fun`` (written with other primitives) and inlining it.

  ``fun(*args, **params)`` is traced on the rule's input avals.
  """
  from hlox.core.jaxpr import trace_to_jaxpr

  def rule(ctx, *args, **params):
    closed = trace_to_jaxpr(lambda *xs: _as_list(fun(*xs, **params), multiple_results),
                            ctx.avals_in, debug_info="lower_fun")
    consts = [ir_constant(np.asarray(c)) for c in closed.consts]
    outs = lower_jaxpr(ctx.module_context, closed.jaxpr, consts, args)
    return outs if multiple_results else outs[0]
  return rule


def _as_list(x, multiple_results):
  return list(x) if multiple_results else [x]


# --- whole modules -----------------------------------------------------------------------

class Lowered:
  """A StableHLO module for a jaxpr, ready to compile."""

  def __init__(self, module: ir.Module, context: ir.Context, in_avals, out_avals,
               kept_var_idx, donated_invars=()):
    self.module = module
    self.context = context
    self.in_avals = list(in_avals)
    self.out_avals = list(out_avals)
    self.kept_var_idx = list(kept_var_idx)
    self.donated_invars = tuple(donated_invars)
    self.replicas = None  # set for programs with pmaps (``pmap.lower_replicated``)
    self.partitioned = None  # (jaxpr, signatures) of programs over a mesh (``partitioned``)
    # (callback, result avals, takes a token, HostTransfer or None) per host callback
    self.host_callbacks = ()
    self.keepalive = ()  # objects the compiler calls back into (``ModuleContext.keepalive``)
    # Whether the program has symbolic shapes or called a polymorphic exported module.
    self.shape_polymorphic = False
    # {result position: mhlo.layout_mode} of results given in a layout XLA may make other
    # than the default (``entry_layout_p``): whoever runs the program hands out
    # default-layout copies of them (``lax/entry_layout.py``).
    self.result_layouts = {}
    # {argument position among the kept ones: mhlo.layout_mode} of arguments taken in a
    # layout other than the default: their buffers are checked before a run.
    self.arg_layouts = {}
    self.name = "main"  # what compile logs call it: "jit(f)", or an eager primitive's name
    self._text = None

  def as_text(self, debug_info: bool = False) -> str:
    """The module's text; ``debug_info=True`` includes the ops' source locations."""
    if debug_info:
      with self.context:
        return self.module.operation.get_asm(enable_debug_info=True)
    if self._text is None:
      with self.context:
        self._text = self.module.operation.get_asm(enable_debug_info=False)
    return self._text


def lower_jaxpr_to_module(closed: ClosedJaxpr, name: str = "main",
                          donated_invars: Sequence[bool] = (), keep_unused: bool = True,
                          num_replicas: int = 1, axis_env=None, *, body: Callable = None,
                          arg_avals=None, result_avals=None, mesh=None, arg_shardings=None,
                          result_shardings=None, platform: str | None = None,
                          result_layouts_known=None, annotated_args=None) -> Lowered:
  """Lower a closed jaxpr to a module whose public ``main`` takes its invars.

  With ``keep_unused=False`` the arguments the jaxpr does not use are dropped from ``main``
  (``Lowered.kept_var_idx`` lists the ones kept). Donated arguments alias an output of the
  same type where there is one; the others are marked as donors.

  A replicated program whose replicas hold pieces of some values (``pmap.py``) passes
  ``body`` (in place of ``lower_jaxpr``) and the types of ``main``'s arguments (one per
  invar) and results where they differ from the jaxpr's.

  A program partitioned over a ``mesh`` (``partitioned.py``) declares it as ``@mesh`` and
  gives ``main``'s arguments (one sharding per invar) and, where not None, its results
  Shardy sharding attributes. There a donated argument aliases only a result whose layout
  is known and is the argument's own (``result_layouts_known``: per result, None where XLA
  picks the layout, else ``(sharding, fixed)``, ``fixed`` for a constraint's). One XLA lays
  out, or whose type gives another layout, is marked a donor (XLA reuses it if it can); a
  constraint to another layout leaves the argument unused (as JAX). ``annotated_args`` (per
  invar, for a module only shown or exported, as JAX's): the arguments whose layout was
  given; the others carry no attribute (XLA would pick theirs).

  ``platform`` picks the per-platform lowering rules ("cpu", "cuda"); by default the default
  device's.
  """
  monitoring.test_event("lower")
  if config.enable_checks:
    check_jaxpr(closed.jaxpr)
  jaxpr = closed.jaxpr
  in_avals = jaxpr.in_avals
  if keep_unused:
    kept = list(range(len(jaxpr.invars)))
  else:
    used = _used_vars(jaxpr)
    # An argument with symbolic dimensions is kept even when unused: the dimension
    # variables are read from the sizes of the arguments.
    kept = [i for i, v in enumerate(jaxpr.invars)
            if v in used or not dim_lowering.is_static(getattr(v.aval, "shape", ()))]
  # Tokens hold no data: a token argument is made in the program (``create_token``), not
  # passed, and a token result is returned as an empty array the caller turns into a new
  # ``Token`` (``lax.call.host_outputs``), so no token buffer ever crosses the boundary.
  kept = [i for i in kept if in_avals[i] is not abstract_token]
  donated = list(donated_invars) or [False] * len(in_avals)
  ctx = make_ir_context()
  with ctx, ir.Location.unknown():
    module = ir.Module.create()
    # JAX's symbol ("jit(f)" -> @jit_f): XLA names the HLO module, dumps and profiles by it.
    module.operation.attributes["sym_name"] = ir.StringAttr.get(module_symbol(name))
    # Every module says how many replicas and partitions it is compiled for (as JAX's do).
    module.operation.attributes["mhlo.num_replicas"] = i32_attr(num_replicas)
    module.operation.attributes["mhlo.num_partitions"] = i32_attr(1)
    if platform is None:
      platform = client.lowering_platform(client.default_device())
    mctx = ModuleContext(ctx, module, platform, axis_env=axis_env, num_replicas=num_replicas)
    if mesh is not None:
      _declare_mesh(module, mesh)
      mctx.mesh = mesh
    mctx.unique_name("main")
    if name.endswith(")"):  # "jit(f)", "pmap(f)": the root of the ops' location names
      mctx.scope = source_info_lib.NameStack((name,))
    main_in = list(arg_avals) if arg_avals is not None else in_avals
    main_out = list(result_avals) if result_avals is not None else jaxpr.out_avals
    token_outs = [i for i, a in enumerate(main_out) if a is abstract_token]
    if token_outs:
      main_out = [_TOKEN_CARRIER if a is abstract_token else a for a in main_out]
    in_types = [aval_to_ir_type(main_in[i]) for i in kept]
    out_types = [aval_to_ir_type(a) for a in main_out]
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      known = None
      if mesh is not None and arg_shardings is not None:
        known = list(result_layouts_known or [None] * len(main_out))
        if result_shardings is not None:  # (the types' layouts; a constraint's stays fixed)
          known = [k if s is None or (k is not None and k[1]) else (s, False)
                   for s, k in zip(result_shardings, known)]
      arg_attrs = _donation_attrs([main_in[i] for i in kept], [donated[i] for i in kept],
                                  main_out, None if known is None else
                                  ([arg_shardings[i] for i in kept], known, mesh.size))
      if arg_shardings is not None:
        for attrs, i in zip(arg_attrs, kept):
          if annotated_args is not None and not annotated_args[i]:
            continue
          attrs["sdy.sharding"] = ir.Attribute.parse(
              arg_shardings[i].sdy_text(main_in[i].ndim))
      if any(arg_attrs):
        fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in arg_attrs])
      result_attrs = [{} for _ in main_out]
      paths = _result_paths(jaxpr, len(main_out))
      if paths:  # the results' places in the traced function's result, as JAX names them
        for attrs, path in zip(result_attrs, paths):
          attrs["jax.result_info"] = ir.StringAttr.get(path)
      if result_shardings is not None and any(s is not None for s in result_shardings):
        for attrs, s, a in zip(result_attrs, result_shardings, main_out):
          if s is not None:
            attrs["sdy.sharding"] = ir.Attribute.parse(s.sdy_text(a.ndim))
      if any(result_attrs):
        fn.result_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in result_attrs])
      block = fn.add_entry_block(_arg_locations(jaxpr, kept))
      with ir.InsertionPoint(block):
        args = [None] * len(in_avals)
        for pos, i in enumerate(kept):
          args[i] = block.arguments[pos]
        for i, aval in enumerate(in_avals):
          if aval is abstract_token:
            args[i] = hlo.create_token()
        wrap = dim_lowering.wrapping_entry()
        env = dim_lowering.solve_in_program(in_avals, args, assertions=wrap)
        if env is not None:
          module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(True)
        if env is not None and wrap:
          outs = _call_wrapped_main(mctx, closed, body or lower_jaxpr, kept, args, env,
                                    out_types, token_outs)
        else:
          outs = _lower_body(mctx, closed, body or lower_jaxpr, args, env, token_outs)
        func_dialect.ReturnOp(outs)
      result_layouts = {}
      if mctx.entry_layouts["in"] or mctx.entry_layouts["out"]:
        result_layouts = _set_entry_layouts(fn, mctx.entry_layouts, arg_attrs, result_attrs,
                                            outs)
      if mctx.renamed_meshes:
        _give_back_mesh_names(module, mctx.renamed_meshes)
  if mctx.refine_shapes and env is None:
    module = shape_refinement.refine_polymorphic_shapes(module, ctx)
  out_avals = [_TOKEN_CARRIER if a is abstract_token else a for a in jaxpr.out_avals]
  lowered = Lowered(module, ctx, in_avals, out_avals, kept, donated)
  lowered.name = name
  lowered.shape_polymorphic = env is not None or mctx.refine_shapes
  lowered.result_layouts = result_layouts
  lowered.arg_layouts = {pos: mode for pos, mode in mctx.entry_layouts["in"].items()
                         if mode != "default"}
  if mctx.host_callbacks:
    lowered.host_callbacks = tuple(mctx.host_callbacks)
  if mctx.keepalive:
    lowered.keepalive = tuple(mctx.keepalive)
  return lowered


def _arg_locations(jaxpr: Jaxpr, kept) -> list | None:
  """Locations of ``main``'s arguments named after the traced function's (``loc("x")``, as
  JAX's; XLA names the HLO parameters after them), or None when the jaxpr has no names."""
  names = jaxpr.arg_names
  if names is None or len(names) != len(jaxpr.invars):
    return None
  return [ir.Location.name(names[i]) if names[i] else ir.Location.unknown() for i in kept]


def _result_paths(jaxpr: Jaxpr, n: int):
  """The jaxpr's result paths (computed once, if given as a function), or None unless there
  is one per result of ``main``."""
  paths = jaxpr.result_paths
  if callable(paths):
    paths = jaxpr.result_paths = paths()
  return paths if paths is not None and len(paths) == n else None


def _set_entry_layouts(fn, layouts, arg_attrs, result_attrs, outs) -> dict:
  """``mhlo.layout_mode`` on the arguments and results of ``main`` that ``entry_layout_p``
  asked a layout for (XLA compiles the entry computation for them); returns the results'
  modes other than "default"."""
  for pos, mode in layouts["in"].items():
    arg_attrs[pos]["mhlo.layout_mode"] = ir.StringAttr.get(mode)
  modes = {}
  for value, mode in layouts["out"]:
    for j, (attrs, out) in enumerate(zip(result_attrs, outs)):
      if out == value:
        attrs["mhlo.layout_mode"] = ir.StringAttr.get(mode)
        if mode != "default":
          modes[j] = mode
  fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in arg_attrs])
  fn.result_attrs = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in result_attrs])
  return modes


def expected_arg_layouts(loaded, modes: dict) -> dict:
  """{position: Layout} the executable ``loaded`` takes the arguments ``modes`` names in
  (what XLA compiled, AUTO resolved)."""
  if not modes:
    return {}
  compiled = loaded.get_parameter_layouts()
  return {pos: layout_lib.from_pjrt_layout(compiled[pos]) for pos in modes}


def check_arg_layouts(bufs, expected: dict) -> None:
  """ValueError unless each buffer in ``expected`` (position -> Layout) is in that layout.
  (XLA reads a buffer in the layout it was compiled for, whatever the buffer's own: see
  docs/RUNTIME_NOTES.md.)"""
  for pos, want in expected.items():
    buf = bufs[pos]
    own = layout_lib.buffer_layout(buf, len(want.major_to_minor))
    if own != want:
      raise ValueError("Computation was compiled for input layouts that disagree with the "
                       f"layouts of arguments passed to it: argument {pos} was compiled for "
                       f"{want} and got a buffer in {own}.")


# Set by ``lax/entry_layout.py``: flat results of a program, with those whose positions a
# ``Lowered.result_layouts`` names given default-layout copies (see there).
relaid_results = None


def _declare_mesh(module, mesh) -> None:
  """``sdy.mesh @mesh = <["x"=4, "y"=2]>`` and the partition count, at the module's top."""
  module.operation.attributes["mhlo.num_replicas"] = i32_attr(1)
  module.operation.attributes["mhlo.num_partitions"] = i32_attr(mesh.size)
  axes = ", ".join(f'"{n}"={k}' for n, k in mesh.shape.items())
  with ir.InsertionPoint(module.body):
    sdy.MeshOp("mesh", ir.Attribute.parse(f"#sdy.mesh<[{axes}]>"))


def _lower_body(mctx, closed, body, args, env, token_outs) -> list:
  """The values a program's entry returns: ``closed`` lowered on ``args`` with the
  dimension variables ``env``."""
  consts = [ir_constant(np.asarray(c)) for c in closed.consts]
  with dim_lowering.lowering_env(env):
    outs = list(body(mctx, closed.jaxpr, consts, args))
  for i in token_outs:
    outs[i] = ir_constant(np.zeros(_TOKEN_CARRIER.shape, _TOKEN_CARRIER.dtype))
  return outs


def _call_wrapped_main(mctx, closed, body, kept, args, env, out_types, token_outs) -> list:
  """JAX's exported calling convention: the program in ``_wrapped_jax_export_main``, which
  takes the dimension variables (by name, marked ``jax.global_constant``) and then the
  kept arguments; its call from ``main``."""
  names = sorted(env)
  i64 = ir.RankedTensorType.get((), ir.IntegerType.get_signless(64))
  kept_values = [args[i] for i in kept]
  in_types = [i64] * len(names) + [v.type for v in kept_values]
  fn_name = mctx.unique_name("_wrapped_jax_export_main")
  with ir.InsertionPoint(mctx.module.body):
    fn = func_dialect.FuncOp(fn_name, ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get(n)}) for n in names] +
        [ir.DictAttr.get({}) for _ in kept_values])
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
      inner = [None] * len(args)
      for pos, i in enumerate(kept):
        inner[i] = block.arguments[len(names) + pos]
      for i, a in enumerate(closed.jaxpr.in_avals):
        if a is abstract_token:
          inner[i] = hlo.create_token()
      inner_env = {n: dim_lowering.DimValue(block.arguments[k]) for k, n in enumerate(names)}
      func_dialect.ReturnOp(_lower_body(mctx, closed, body, inner, inner_env, token_outs))
  dims = [dim_lowering.DimValue.lift(env[n]).value for n in names]
  call = func_dialect.CallOp(out_types, ir.FlatSymbolRefAttr.get(fn_name), dims + kept_values)
  return list(call.results)


def _give_back_mesh_names(module, renamed) -> None:
  """As JAX names them, a spliced exported module keeps its mesh's name (``@mesh``) and the
  program's own mesh is named after it (``@mesh_0``): the program's declaration is renamed,
  then the spliced one gets its name back."""
  symbols = {ir.StringAttr(op.operation.attributes["sym_name"]).value: op
             for op in module.body.operations if "sym_name" in op.operation.attributes}
  for old, new in renamed:
    own = symbols.get(old)
    if own is None or new not in symbols or own.operation.name != "sdy.mesh":
      continue
    k = 0
    while f"{old}_{k}" in symbols:
      k += 1
    fresh = f"{old}_{k}"
    for a, b in ((old, fresh), (new, old)):
      ir.SymbolTable.replace_all_symbol_uses(a, b, module.operation)
      ir.SymbolTable.set_symbol_name(symbols[a].operation, b)
    return  # (the first one: later ones keep the names they got)


# What a token result of a program is on the device: an empty array.
_TOKEN_CARRIER = ShapedArray((0,), dtypes.bool_)


def module_symbol(name: str) -> str:
  """A module's symbol from its name: ``jit(f)`` -> ``jit_f``, ``jit(<lambda>)`` ->
  ``jit__lambda`` (characters other than letters, digits, ``_``, ``.``, ``-`` become ``_``;
  trailing ``_`` go)."""
  if name.endswith(")"):
    name = name[:-1]
  return re.sub(r"[^\w.-]", "_", name).rstrip("_") or "main"


def _used_vars(jaxpr: Jaxpr) -> set:
  used = set()
  for eqn in jaxpr.eqns:
    used.update(v for v in eqn.invars if type(v) is not Literal)
  used.update(v for v in jaxpr.outvars if type(v) is not Literal)
  return used


def _donation_attrs(in_avals, donated, out_avals, layouts=None) -> list:
  """``main``'s argument attributes for donation. ``layouts`` (a partitioned program's):
  ``(argument shardings, results' known layouts, number of devices)`` (as
  ``lower_jaxpr_to_module``'s ``result_layouts_known``): the pieces of an argument and a
  result alias only when both are laid out alike."""
  attrs = [{} for _ in in_avals]
  free_outputs = list(enumerate(out_avals))
  unusable = []
  for i, (aval, d) in enumerate(zip(in_avals, donated)):
    if not d:
      continue
    match = next((k for k, (j, a) in enumerate(free_outputs)
                  if a.shape == aval.shape and a.dtype == aval.dtype), None)
    if match is not None and layouts is not None:
      from hlox.runtime import sharding as sharding_lib
      arg_s, out_s, n = layouts
      j, _ = free_outputs.pop(match)
      known = out_s[j]
      if known is not None and sharding_lib.same_layout(
          arg_s[i].hlo(aval.ndim), known[0].hlo(aval.ndim), n):
        attrs[i]["tf.aliasing_output"] = i32_attr(j)
      elif known is None or not known[1]:  # XLA picks (or may reuse) the result's pieces
        attrs[i]["jax.buffer_donor"] = ir.BoolAttr.get(True)
      else:  # constrained to pieces of other shapes: nothing to reuse (warned below)
        unusable.append(aval)
    elif match is not None:
      j, _ = free_outputs.pop(match)
      attrs[i]["tf.aliasing_output"] = i32_attr(j)
    else:
      attrs[i]["jax.buffer_donor"] = ir.BoolAttr.get(True)
      unusable.append(aval)
  if unusable:
    # As JAX: a donated input that no output of its shape and dtype can reuse saves nothing.
    warnings.warn("Some donated buffers were not usable: "
                  f"{', '.join(str(a) for a in unusable)}.\nA donated argument is reused "
                  "for an output of the same shape and dtype; none was left for these.",
                  stacklevel=2)
  return attrs


# Executables by (module text, device, output types): any retrace that lowers to the same
# program (a new ``jit`` wrapper of a lambda, a cleared trace cache, ``Lowered.compile()``
# after a call) reuses the executable instead of compiling again, as JAX's compile cache does.
_executable_cache = LRUCache()


def compile_lowered(lowered: Lowered, device=None,
                    compiler_options: dict | None = None) -> client.Executable:
  device = device if device is not None else client.default_device()
  text = lowered.as_text()
  # Keyed on a digest of the text, not the text: a big program's module is megabytes, and
  # the cache would hold it for as long as the executable. Two independent hashes and the
  # length (about 96 bits) make a collision negligible; hashlib is avoided because it loads
  # OpenSSL (3 MB of resident memory) into every process.
  key = (hash(text), zlib.crc32(text.encode()), len(text), device,
         tuple(lowered.out_avals))
  if lowered.host_callbacks:  # the text names callbacks by position only
    key += (lowered.host_callbacks,)
  if compiler_options:  # other options, another executable
    key += (tuple(sorted((k, repr(v)) for k, v in compiler_options.items())),)
  executable = _executable_cache.get(key)
  if executable is None:
    monitoring.test_event("compile")
    with monitoring.log_elapsed_time("Finished XLA compilation of %s in %.9f sec",
                                     lowered.name, monitoring.BACKEND_COMPILE_EVENT):
      if lowered.host_callbacks:
        with lowered.context:
          executable = client.compile_mlir(text, device, lowered.out_avals,
                                           lowered.host_callbacks, lowered.module,
                                           compiler_options=compiler_options)
      else:
        # XLA gets the locations (op names and source lines in its metadata); the caches
        # are keyed without them, so the same program traced from other lines is not
        # compiled again (JAX's cache keys strip locations too).
        executable = client.compile_mlir(lowered.as_text(debug_info=True), device,
                                         lowered.out_avals, key_text=text,
                                         compiler_options=compiler_options)
    _executable_cache.put(key, executable)
  return executable


def forget_executables(executables) -> None:
  """Drop ``executables`` from the executable cache (their holders keep them as long as
  they need them): the programs of a jitted function whose caches were cleared."""
  ids = {id(e) for e in executables}
  if ids:
    _executable_cache.discard_where(lambda e: id(e) in ids)


# --- eager dispatch ----------------------------------------------------------------------

_eager_cache = LRUCache()
_eager_data = _eager_cache._data  # read directly on the hot path (see LRUCache.get)
_eager_move_to_end = _eager_data.move_to_end


def _on_config_change(name, value):
  # Entries are built checking or not (``_compile_eager``): none may outlive the setting.
  if name in ("debug_nans", "debug_infs"):
    _eager_cache.clear()

config.add_watcher(_on_config_change)


class _EagerEntry:
  __slots__ = ("execute", "handlers", "out_avals", "out_aval", "device_key", "multiple_results",
               "moves")

  def __init__(self, executable, out_avals, device_key, multiple_results, moves=False):
    self.execute = executable.loaded.execute_sharded
    self.moves = moves  # uncommitted arguments to copy to ``device_key`` first
    self.handlers = executable.handlers
    self.out_avals = out_avals
    self.out_aval = out_avals[0] if out_avals else None
    self.device_key = device_key
    self.multiple_results = multiple_results


_get_sig = operator.attrgetter("_sig")
_get_buf = operator.attrgetter("_buf")


# Set by interpreters/pmap.py: ``(closed, name) -> callable or None``; compiles a jaxpr that
# contains pmaps (e.g. a scan whose body calls a pmapped function) as one replicated program
# (``pmap.ReplicatedCall``).
replicated_compiler = None
# Set by partitioned.py: ``(closed, sigs, name)`` -> a call over a mesh for sharded
# arguments, or None.
partitioned_compiler = None


def apply_primitive(primitive, *args, **params):
  """Run one primitive on concrete arrays through a cached single-primitive executable."""
  try:
    key = (primitive, *map(_get_sig, args), *params.items())
    entry = _eager_data.get(key)
  except AttributeError:  # some arguments are not Arrays yet
    check_no_tracers(args)
    device = _committed_device(args)
    args = [x if type(x) is Array else _to_array(x, primitive, device, i)
            for i, x in enumerate(args)]
    return apply_primitive(primitive, *args, **params)
  except TypeError as e:
    raise TypeError(f"{primitive.name}: parameters must be hashable, got {params}") from e
  if entry is None:
    # (A thread whose ``with`` scopes set other options than the tables were filled under
    # keeps its entries in a table of its own: ``LRUCache.get``.)
    entry = _eager_cache.get(key)
    if entry is None:
      entry = _compile_eager(primitive, args, params, [x._sig for x in args])
      _eager_cache.put(key, entry)
  else:
    _eager_move_to_end(key)  # keep the cache least-recently-used
  if type(entry) is not _EagerEntry:  # a replicated program (a pmap inside a loop/branch)
    outs = entry(args)
    return outs if primitive.multiple_results else outs[0]
  try:
    bufs = moved_buffers(args, entry.device_key) if entry.moves else list(map(_get_buf, args))
  except AttributeError:  # an array spread over devices: gathered (``Array._single``)
    bufs = single_buffers(args)
  try:
    outs = entry.execute(bufs).consume_with_handlers(entry.handlers)
  except Exception:  # a deleted (or donated) argument: JAX's error, not jaxlib's
    check_not_deleted(args)
    raise
  if entry.multiple_results:
    return [Array(b, a, entry.device_key) for b, a in zip(outs, entry.out_avals)]
  return Array(outs[0], entry.out_aval, entry.device_key)


def _committed_device(args):
  """The device of the first argument committed to a non-default device, if any."""
  for x in args:
    if type(x) is Array and type(x._sig) is tuple and hasattr(x._sig[1], "platform"):
      return x._sig[1]
  return None


def _to_array(x, primitive, device=None, position=0) -> Array:
  if isinstance(x, Array):
    return x
  if type(x) in SCALAR_TYPES:
    return scalar_argument(x, device)
  try:
    return device_put(x, device)
  except TypeError as e:
    raise invalid_argument_error(primitive.name, position, x) from e


def _compile_eager(primitive, args, params, sigs) -> _EagerEntry:
  monitoring.test_event("eager_compile", primitive=primitive.name)
  in_avals = [s if type(s) is ShapedArray else s[0] for s in sigs]
  devices = {s[1] for s in sigs if type(s) is tuple}
  if partitioned_compiler is not None and any(not hasattr(d, "platform") for d in devices):
    invars = [Var(a) for a in in_avals]
    out = primitive.abstract_eval(*in_avals, **params)
    outvars = [Var(a) for a in (list(out) if primitive.multiple_results else [out])]
    jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(invars, outvars, primitive, params)])
    return partitioned_compiler(ClosedJaxpr(jaxpr, []), sigs, primitive.name)
  if len(devices) > 1:
    placed = [(i, s) for i, s in enumerate(sigs) if type(s) is tuple]
    first = placed[0]
    second = next(p for p in placed if p[1][1] != first[1][1])
    described = [f"argument args[{i}] of {primitive.name} with shape "
                 f"{sharding_types.type_str(sig[0], None)} and with device ids [{sig[1].id}] "
                 f"on platform {sig[1].platform.upper()}" for i, sig in (first, second)]
    raise ValueError("Received incompatible devices for jitted computation. Got "
                     f"{described[0]} and {described[1]}")
  device = devices.pop() if devices else None
  out = primitive.abstract_eval(*in_avals, **params)
  out_avals = list(out) if primitive.multiple_results else [out]
  invars = [Var(a) for a in in_avals]
  outvars = [Var(a) for a in out_avals]
  jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(invars, outvars, primitive, params)])
  if replicated_compiler is not None:
    replicated = replicated_compiler(ClosedJaxpr(jaxpr, []), primitive.name)
    if replicated is not None:
      return replicated
  monitoring.log_compile("Compiling %s with global shapes and types %s. Argument mapping: %s.",
                         primitive.name, tuple(in_avals), (device or client.default_device(),))
  lowered = lower_jaxpr_to_module(ClosedJaxpr(jaxpr, []), primitive.name,
                                  platform=client.lowering_platform(device or
                                                                    client.default_device()))
  executable = compile_lowered(lowered, device)
  entry = _EagerEntry(executable, out_avals, device, primitive.multiple_results,
                      needs_moves(sigs, device))
  if nan_checks.enabled:  # a callable entry: ``apply_primitive`` calls it instead
    return nan_checks.CheckedEager(partial(_run_eager, entry), primitive.name, primitive,
                                   params)
  return entry


def _run_eager(entry: _EagerEntry, args) -> list:
  try:
    bufs = moved_buffers(args, entry.device_key) if entry.moves else list(map(_get_buf, args))
  except AttributeError:  # an array spread over devices: gathered (``Array._single``)
    bufs = single_buffers(args)
  try:
    outs = entry.execute(bufs).consume_with_handlers(entry.handlers)
  except Exception:  # a deleted (or donated) argument, as in ``apply_primitive``
    check_not_deleted(args)
    raise
  return [Array(b, a, entry.device_key) for b, a in zip(outs, entry.out_avals)]


# --- host reads of dtypes the buffer protocol cannot describe ----------------------------

_bitcast_readers = LRUCache()


def _carrier(dtype):
  """(integer dtype of the same width NumPy can read, whether it is a widening of a type
  narrower than a byte)."""
  if dtype == dtypes.float4_e2m1fn:  # 4 bits: no same-width carrier; widened exactly
    return np.dtype(np.float32), True
  narrow = dtype in dtypes.narrow_int_dtypes
  return (np.dtype(np.int8) if narrow else np.dtype(f"uint{8 * dtype.itemsize}")), narrow


def _bitcast_module(aval, num_replicas: int = 1) -> str:
  carrier, four_bit = _carrier(aval.dtype)
  out_aval = ShapedArray(aval.shape, carrier)
  ctx = make_ir_context()
  with ctx, ir.Location.unknown():
    module = ir.Module.create()
    # Every module says how many replicas and partitions it is compiled for (as JAX's do).
    module.operation.attributes["mhlo.num_replicas"] = i32_attr(num_replicas)
    module.operation.attributes["mhlo.num_partitions"] = i32_attr(1)
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get([aval_to_ir_type(aval)],
                                                           [aval_to_ir_type(out_aval)]))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      block = fn.add_entry_block()
      with ir.InsertionPoint(block):
        op = hlo.convert if four_bit else hlo.bitcast_convert
        func_dialect.ReturnOp([op(aval_to_ir_type(out_aval), block.arguments[0])])
    return module.operation.get_asm(enable_debug_info=False)


def _decoder(dtype):
  _, four_bit = _carrier(dtype)
  return (lambda raw: raw.astype(dtype)) if four_bit else (lambda raw: raw.view(dtype))


def _read_via_bitcast(buf, aval) -> np.ndarray:
  """Copy a bfloat16/float8/int4 buffer to NumPy: bitcast (or widen, for 4-bit ints) to an
  unsigned/int type of the same width on the device, then view the bytes as ``aval.dtype``."""
  if aval.dtype == dtypes.float0:  # no data: a bool buffer stands for it on the device
    return np.zeros(aval.shape, dtypes.float0)
  device = client.buffer_device(buf)
  key = (aval, device)
  executable = _bitcast_readers.get(key)
  if executable is None:
    out_aval = ShapedArray(aval.shape, _carrier(aval.dtype)[0])
    executable = client.compile_mlir(_bitcast_module(aval), device, [out_aval])
    _bitcast_readers.put(key, executable)
  return _decoder(aval.dtype)(client.buffer_to_numpy(executable.run([buf])[0]))


def _multi_device_carrier(buf, dtype):
  """The same for a buffer spread over devices (``spmd.gather_to_host`` reads the result)."""
  from hlox.runtime import spmd
  sharding = buf._sharding
  glob = buf.aval
  key = (glob, sharding)
  executable = _bitcast_readers.get(key)
  if executable is None:
    shape = list(glob.shape)
    if not hasattr(sharding, "axis"):  # partitioned: each device holds one even block
      from hlox.runtime import sharding as sharding_lib
      block = sharding_lib.indices_of(sharding._hlo, glob.shape, len(sharding._devs))[0]
      shape = [len(range(*s.indices(d))) for s, d in zip(block, glob.shape)]
    elif sharding.axis is not None:
      shape[sharding.axis] = 1
    piece = ShapedArray(tuple(shape), dtype)
    out_glob = ShapedArray(glob.shape, _carrier(dtype)[0])
    devices = sharding._device_assignment
    executable = spmd.compile_replicated(_bitcast_module(piece, len(devices)), devices,
                                         [out_glob], [sharding])
    _bitcast_readers.put(key, executable)
  return executable.run([buf])[0], _decoder(dtype)


import hlox.runtime.array as _array_module  # noqa: E402
_array_module.host_value_reader = _read_via_bitcast
from hlox.runtime import spmd as _spmd_module  # noqa: E402
_spmd_module.exotic_converter = _multi_device_carrier
