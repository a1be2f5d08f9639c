"""Host callbacks: Python functions called from inside traced and compiled programs.

Three primitives, as JAX has them:

- ``pure_callback_p``: a function of its operands with declared results
  (``result_avals``); no side effects, so dead-code elimination may drop it. Not
  differentiable; under ``vmap`` it follows ``vmap_method`` (``sequential`` loops with
  ``scan``, ``expand_dims`` / ``broadcast_all`` call once on the whole batch).
- ``io_callback_p``: like it, but effectful (kept even when its results are unused).
- ``debug_callback_p``: effectful, no results (``hlox.debug.callback``); under ``jvp`` it
  sees the primals, under ``vmap`` it runs once per example.
- ``debug_print_p``: ``hlox.debug.print`` / ``log`` as JAX stages them: a debug callback
  whose parameters are the format string and its arguments' structure (so printed jaxprs
  read ``debug_print[fmt=...]``), with debug_callback's rules.

Eagerly each calls the Python function at once on NumPy values. Compiled, each is one
``stablehlo.custom_call @xla_ffi_python_cpu_callback`` naming a callable that the module
context registers (``xla.ModuleContext.add_host_callback``), handed to jaxlib when the program
compiles (``runtime/callbacks.py``). Effectful callbacks are custom calls with
``has_side_effect = true``, which XLA neither removes nor reorders against each other; that
is how ``ordered=True`` is kept (no token is threaded: the order holds within one program, and
programs run one after another).
"""
from __future__ import annotations

import logging
import sys

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core.avals import ShapedArray
from hlox.core.dtypes import canonicalize_dtype
from hlox.core.jaxpr import effectful_primitives, io_effect_primitives
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, xla
from hlox.lax.base import broadcast
from hlox.lax.control_flow import scan
from hlox.lax.shapes import index_in_dim
from hlox.runtime import callbacks as runtime_callbacks
from hlox.runtime.array import device_put
from hlox.runtime.client import local_devices

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["pure_callback_p", "io_callback_p", "debug_callback_p", "debug_print_p",
           "FlatCallback", "result_avals_of"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


class _MultiResult(Primitive):
  multiple_results = True


class FlatCallback:
  """A user function as the primitives call it: flat operands in, flat results out.

  It is a primitive parameter, so it compares equal for the same function and argument
  structure (a retrace then finds the same jaxpr and the same executable). ``statics``
  holds the leaves that are not arrays (strings, ...), as ``(position, value)`` pairs put
  back among the flat operands before the call. ``returns`` False: the function's value is
  dropped (debug callbacks).

  ``api`` names the user-facing function that made it ("pure_callback", "io_callback",
  "debug.callback"). Those hand the user's function Arrays on the host's CPU device, as
  JAX does (so it may compute with ``hlox.numpy``), and log its exception (``jax.<api>
  failed`` with the traceback) before it propagates: a failure inside a running program
  reaches the caller only as a runtime error, and an asynchronous one perhaps not at all.
  Without ``api`` (``debug.print``'s formatter) the operands stay NumPy arrays.
  """

  __slots__ = ("callback", "in_tree", "statics", "returns", "api")

  def __init__(self, callback, in_tree, statics=(), returns: bool = True,
               api: str | None = None):
    self.callback = callback
    self.in_tree = in_tree
    self.statics = tuple(statics)
    self.returns = returns
    self.api = api

  def __call__(self, *flat_args):
    if self.api is not None:
      flat_args = _on_host_device(flat_args)
    if self.statics:
      flat_args = list(flat_args)
      for pos, value in self.statics:
        flat_args.insert(pos, value)
    args, kwargs = tree_util.tree_unflatten(self.in_tree, flat_args)
    if self.api is None:
      out = self.callback(*args, **kwargs)
    else:
      try:
        out = self.callback(*args, **kwargs)
      except BaseException:
        callback_logger.exception("jax.%s failed", self.api)
        raise
    return tuple(tree_util.tree_leaves(out)) if self.returns else ()

  def _key(self):
    key = (self.callback, self.in_tree, self.statics, self.returns, self.api)
    try:
      hash(key)
    except TypeError:  # an unhashable callable or static: equal only to itself
      return (id(self),)
    return key

  def __eq__(self, other):
    return type(other) is FlatCallback and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return getattr(self.callback, "__qualname__", None) or repr(self.callback)


def result_avals_of(name: str, result_shape_dtypes) -> tuple:
  """The flat result avals and tree of a ``result_shape_dtypes`` pytree (leaves with
  ``.shape`` and ``.dtype``: ``ShapeDtypeStruct``, arrays)."""
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for leaf in leaves:
    if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
      raise TypeError(f"{name}: result_shape_dtypes must be a pytree of objects with .shape "
                      f"and .dtype (e.g. ShapeDtypeStruct), got {leaf!r}")
    dtype = leaf.dtype
    if isinstance(dtype, np.dtype) or isinstance(dtype, (str, type)):
      dtype = np.dtype(dtype)
      if canonicalize_dtype(dtype) != dtype:
        # The callback's values arrive as the declared type: one the program cannot hold
        # is the caller's mistake, not something to narrow behind their back (as JAX).
        raise ValueError(f"{name}: result_shape_dtypes cannot specify 64-bit types when "
                         f"`jax_enable_x64` is disabled (got {dtype.name}); declare the "
                         f"32-bit type or enable x64")
    avals.append(ShapedArray(tuple(leaf.shape), dtype))
  return tuple(avals), tree


# Where a failing user callback is reported (``FlatCallback``).
callback_logger = logging.getLogger("hlox.callback")


def _on_host_device(values) -> list:
  """NumPy operands as Arrays on the host's first CPU device (where JAX puts a callback's
  operands, whichever platform the program runs on)."""
  device = host_device()
  return [device_put(v, device) for v in values]


def host_device():
  """The CPU device callbacks' operands are put on."""
  return local_devices(backend="cpu")[0]


def _host_values(args):
  """Eager operands as the NumPy arrays a compiled program would pass (canonical dtypes)."""
  outs = []
  for x in args:
    arr = np.asarray(x)
    outs.append(arr.astype(canonicalize_dtype(arr.dtype), copy=False))
  return outs


# --- the lowering, shared -----------------------------------------------------------------

def host_callback_lowering(ctx, *args, callback, result_avals, has_side_effect: bool,
                           ordered: bool = False, sharding=None):
  """A ``stablehlo.custom_call`` of the platform's host-callback handler running
  ``callback(*numpy_operands)`` (also used by rules that run part of a program on the host,
  ``lax/linalg/gpu.host_lowering``)."""
  mctx = ctx.module_context
  name = ctx.primitive.name
  if mctx.platform in SEND_RECV_PLATFORMS:
    return _send_recv_lowering(ctx, args, callback, result_avals, ordered, sharding)
  target = runtime_callbacks.CALLBACK_TARGETS.get(mctx.platform)
  if target is None:
    raise NotImplementedError(f"{name}: host callbacks are lowered for CPU, GPU (cuda, rocm) "
                              f"and TPU, not {mctx.platform!r}")
  index = mctx.add_host_callback(callback, result_avals, with_token=ordered)
  result_types = [xla.aval_to_ir_type(a) for a in result_avals]
  operands, layouts_in, layouts_out = list(args), list(ctx.avals_in), list(result_avals)
  if ordered:
    # The region's ordered callbacks are chained through a token, which XLA never
    # reorders; independent side-effecting calls it may run in any order.
    token = mctx.ordered_token()
    operands, result_types = [token, *operands], [hlo.TokenType.get(), *result_types]
    layouts_in, layouts_out = [_TOKEN, *layouts_in], [_TOKEN, *layouts_out]
  attrs = {
      "call_target_name": ir.StringAttr.get(target),
      "has_side_effect": ir.BoolAttr.get(has_side_effect),
      "api_version": xla.i32_attr(4),  # typed FFI: the backend config is a dictionary
      "backend_config": ir.DictAttr.get(
          {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)}),
  }
  # Row-major buffers both ways, as the callback reads and writes them (XLA would otherwise
  # pick layouts of its own for some operands).
  attrs["operand_layouts"] = _row_major_layouts(layouts_in)
  attrs["result_layouts"] = _row_major_layouts(layouts_out)
  op = hlo.CustomCallOp.build_generic(results=result_types, operands=operands,
                                      attributes=attrs)
  _run_on_one_device(mctx, op, len(result_types), sharding)
  results = list(op.results)
  if ordered:
    mctx.set_ordered_token(results.pop(0))
  return results


def _run_on_one_device(mctx, op, num_results: int, sharding) -> None:
  """In a program XLA partitions over a mesh (not a ``shard_map`` body, whose callbacks
  run per device), the callback runs once, with the whole values, on the mesh's first
  device or the one ``sharding`` (a one-device sharding) names: a side-effecting op must be
  placed on one device there (as JAX's maximal sharding)."""
  if mctx.mesh is not None and not mctx.manual:
    op.attributes["sdy.sharding"] = mctx.maximal_sharding(
        num_results, _device_index(mctx.mesh, sharding))


def _device_index(mesh, sharding) -> int:
  if sharding is None:
    return 0
  devices = list(getattr(sharding, "device_set", ()))
  if len(devices) != 1:
    raise NotImplementedError(f"host callbacks only support a sharding on one device "
                              f"(SingleDeviceSharding), got {sharding}")
  order = list(mesh._flat_devices_tuple)
  if devices[0] not in order:
    raise ValueError(f"Sharding provided to the callback specifies a device {devices[0]} "
                     f"that is not in the device assignment ({order})")
  return order.index(devices[0])


_TOKEN = ShapedArray((), np.dtype(np.bool_))  # stands for the token: a rank-0 layout

# Platforms whose programs reach the host through send/recv ops rather than a custom call.
SEND_RECV_PLATFORMS = {"tpu"}
_SEND_TO_HOST, _RECV_FROM_HOST = 2, 3  # stablehlo's channel types


def _host_transfer_attributes(channel: int) -> ir.Attribute:
  # PJRT hands transfers of this handler to the callbacks ``make_python_callback_from_host_
  # send_and_recv`` made, matched by channel.
  return ir.DictAttr.get({
      "_xla_host_transfer_handler_name": ir.StringAttr.get("pjrt_rendezvous"),
      "_xla_host_transfer_rendezvous": ir.StringAttr.get(str(channel))})


def _send_recv_lowering(ctx, args, callback, result_avals, ordered, sharding):
  """A host callback as a TPU program calls it: each operand sent to the host, each
  non-empty result received from it, chained by one token (``runtime.callbacks.HostTransfer``
  says what JAX adds for callbacks without operands or results)."""
  mctx = ctx.module_context
  token = mctx.ordered_token() if ordered else hlo.create_token()
  sends = list(args) or [xla.ir_constant(np.zeros(1, np.float32))]
  send_channels = []
  for operand in sends:
    channel = mctx.new_channel()
    op = hlo.SendOp([operand], token, hlo.ChannelHandle.get(channel, _SEND_TO_HOST),
                    is_host_transfer=ir.BoolAttr.get(True))
    op.attributes["mhlo.frontend_attributes"] = _host_transfer_attributes(channel)
    _run_on_one_device(mctx, op, 1, sharding)
    token = op.result
    send_channels.append(channel)
  received = tuple(bool(np.prod(a.shape) != 0) for a in result_avals)
  receives = [a for a, keep in zip(result_avals, received) if keep]
  recv_channels, values = [], []
  for aval in receives or [ShapedArray((), np.dtype(np.float32))]:
    channel = mctx.new_channel()
    op = hlo.RecvOp([xla.aval_to_ir_type(aval), hlo.TokenType.get()], token,
                    hlo.ChannelHandle.get(channel, _RECV_FROM_HOST),
                    is_host_transfer=ir.BoolAttr.get(True))
    op.attributes["mhlo.frontend_attributes"] = _host_transfer_attributes(channel)
    _run_on_one_device(mctx, op, 2, sharding)
    value, token = op.results
    values.append(value)
    recv_channels.append(channel)
  transfer = runtime_callbacks.HostTransfer(tuple(ctx.avals_in), tuple(send_channels),
                                            tuple(recv_channels), received)
  mctx.add_host_callback(callback, result_avals, transfer=transfer)
  if ordered:
    mctx.set_ordered_token(token)
  it = iter(values)
  return [next(it) if keep else xla.ir_constant(np.zeros(a.shape, a.dtype))
          for a, keep in zip(result_avals, received)]



def _row_major_layouts(avals) -> ir.Attribute:
  return ir.ArrayAttr.get([
      ir.DenseIntElementsAttr.get(np.arange(len(a.shape) - 1, -1, -1, dtype=np.int64),
                                  type=ir.IndexType.get())
      for a in avals])


def _returning_impl(*args, callback, result_avals, **params):
  # Eagerly too, a failing callback is the runtime error it is in a compiled program (JAX
  # runs it in one); a debug callback's exception is its own (JAX calls it directly).
  try:
    outs = runtime_callbacks.check_results(callback(*_host_values(args)), result_avals,
                                           callback)
  except Exception as e:
    raise runtime_callbacks.callback_error(e) from e
  return [device_put(o) for o in outs]


def _sequential(prim, args, dims, result_avals, unroll, **params):
  """Batch a returning callback by calling it once per example, in a ``scan``."""
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  moved = [a if d is None else batching.moveaxis(a, d, 0) for a, d in zip(args, dims)]
  mapped = [d is not None for d in dims]

  def body(carry, xs):
    it = iter(xs)
    full = [next(it) if m else a for a, m in zip(moved, mapped)]
    return carry, prim.bind(*full, result_avals=result_avals, **params)

  _, outs = scan(body, (), [a for a, m in zip(moved, mapped) if m], length=size,
                 unroll=size if unroll else 1)
  return list(outs), [0] * len(outs)


def _batched_avals(size, result_avals):
  return tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)


# --- pure_callback ------------------------------------------------------------------------

pure_callback_p = _MultiResult("pure_callback")
pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
pure_callback_p.def_impl(_returning_impl)
xla.register_lowering(
    pure_callback_p,
    lambda ctx, *args, callback, result_avals, sharding, vmap_method: host_callback_lowering(
        ctx, *args, callback=callback, result_avals=result_avals, has_side_effect=False,
        sharding=sharding))


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")

ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp


def _pure_callback_transpose(cts, *args, **params):
  raise ValueError("Pure callbacks do not support transpose. Please use `hlox.custom_vjp` to "
                   "use callbacks while taking gradients.")

ad.primitive_transposes[pure_callback_p] = _pure_callback_transpose


def _pure_callback_batch_rule(args, dims, *, callback, result_avals, sharding, vmap_method):
  if vmap_method in ("sequential", "sequential_unrolled"):
    return _sequential(pure_callback_p, args, dims, result_avals,
                       vmap_method == "sequential_unrolled", callback=callback,
                       sharding=sharding, vmap_method=vmap_method)
  if vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    fill = size if vmap_method == "broadcast_all" else 1
    # (``legacy_vectorized``, JAX's old ``vectorized=True``: unbatched operands as they are)
    full = [batching.moveaxis(a, d, 0) if d is not None
            else a if vmap_method == "legacy_vectorized" else broadcast(a, (fill,))
            for a, d in zip(args, dims)]
    outs = pure_callback_p.bind(*full, callback=callback,
                                result_avals=_batched_avals(size, result_avals),
                                sharding=sharding, vmap_method=vmap_method)
    return list(outs), [0] * len(outs)
  raise NotImplementedError(
      "vmap is only supported for the pure_callback primitive when vmap_method is one of "
      f"{', '.join(repr(m) for m in VMAP_METHODS)}; got vmap_method={vmap_method!r}")

batching.primitive_batchers[pure_callback_p] = _pure_callback_batch_rule


# --- io_callback --------------------------------------------------------------------------

io_callback_p = _MultiResult("io_callback")
io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
io_callback_p.def_impl(_returning_impl)
effectful_primitives.add(io_callback_p)
io_effect_primitives.add(io_callback_p)
xla.ordered_effects[io_callback_p] = lambda params: params["ordered"]
xla.register_lowering(
    io_callback_p,
    lambda ctx, *args, callback, result_avals, sharding, ordered: host_callback_lowering(
        ctx, *args, callback=callback, result_avals=result_avals, has_side_effect=True,
        ordered=ordered, sharding=sharding))


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")

ad.primitive_jvps[io_callback_p] = _io_callback_jvp


def _io_callback_transpose(cts, *args, **params):
  raise ValueError("IO callbacks do not support transpose.")

ad.primitive_transposes[io_callback_p] = _io_callback_transpose


def _io_callback_batch_rule(args, dims, *, callback, result_avals, sharding, ordered):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  return _sequential(io_callback_p, args, dims, result_avals, False, callback=callback,
                     sharding=sharding, ordered=ordered)

batching.primitive_batchers[io_callback_p] = _io_callback_batch_rule


# --- debug_callback -----------------------------------------------------------------------

debug_callback_p = _MultiResult("debug_callback")
debug_callback_p.def_abstract_eval(lambda *avals, **params: [])
effectful_primitives.add(debug_callback_p)
xla.ordered_effects[debug_callback_p] = lambda params: params["ordered"]


@debug_callback_p.def_impl
def _debug_callback_impl(*args, callback, ordered):
  callback(*_host_values(args))
  return []

xla.register_lowering(
    debug_callback_p,
    lambda ctx, *args, callback, ordered: host_callback_lowering(
        ctx, *args, callback=callback, result_avals=(), has_side_effect=True,
        ordered=ordered))


def _debug_callback_jvp(primals, tangents, **params):
  # The callback sees the primal values; it contributes no tangent.
  return debug_callback_p.bind(*primals, **params), []

ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp
ad.primitive_transposes[debug_callback_p] = lambda cts, *args, **params: [None] * len(args)


def _debug_callback_batch_rule(args, dims, **params):
  # One call per example, in order, each on that example's slices (as JAX unrolls it).
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  for i in range(size):
    debug_callback_p.bind(*[a if d is None else index_in_dim(a, i, d, keepdims=False)
                            for a, d in zip(args, dims)], **params)
  return [], []

batching.primitive_batchers[debug_callback_p] = _debug_callback_batch_rule


# --- debug_print --------------------------------------------------------------------------

# ``debug.log``'s messages go here (under the "hlox" logger, so ``logging_level`` applies).
debug_logger = logging.getLogger("hlox.debug")


class Printer:
  """Formats and prints one ``debug.print`` call's values on the host. With a
  ``logging_record`` (a ``debug.log`` call: its record names the user's file and line) the
  message is logged at that record's level instead."""

  __slots__ = ("fmt", "np_printoptions", "has_placeholders", "logging_record")

  def __init__(self, fmt, np_printoptions, has_placeholders, logging_record=None):
    self.fmt = fmt
    self.np_printoptions = np_printoptions
    self.has_placeholders = has_placeholders
    self.logging_record = logging_record

  def __call__(self, *args, **kwargs):
    with np.printoptions(**dict(self.np_printoptions)):
      if self.has_placeholders:
        msg = self.fmt.format(*args, **kwargs)
      else:
        msg = " ".join((self.fmt, *(str(a) for a in args)))
    record = self.logging_record
    if record is None:
      sys.stdout.write(msg + "\n")
    elif debug_logger.isEnabledFor(record.levelno):
      debug_logger.handle(debug_logger.makeRecord(debug_logger.name, record.levelno,
                                                  record.pathname, record.lineno, msg, (),
                                                  None))

  # Compiled programs are cached with their callbacks: equal for equal prints.
  def _key(self):
    record = self.logging_record
    where = None if record is None else (record.pathname, record.lineno, record.levelno)
    key = (self.fmt, self.np_printoptions, self.has_placeholders, where)
    try:
      hash(key)
    except TypeError:  # e.g. a ``formatter`` dict among the print options
      return (id(self),)
    return key

  def __eq__(self, other):
    return type(other) is Printer and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"print({self.fmt!r})"


def _print_callback(fmt, has_placeholders, in_tree, logging_record, np_printoptions,
                    static_args, **_):
  return FlatCallback(Printer(fmt, np_printoptions, has_placeholders, logging_record),
                      in_tree, static_args, returns=False)


debug_print_p = _MultiResult("debug_print")
debug_print_p.def_abstract_eval(lambda *avals, **params: [])
effectful_primitives.add(debug_print_p)
xla.ordered_effects[debug_print_p] = lambda params: params["ordered"]


@debug_print_p.def_impl
def _debug_print_impl(*args, **params):
  _print_callback(**params)(*_host_values(args))
  return []

xla.register_lowering(
    debug_print_p,
    lambda ctx, *args, **params: host_callback_lowering(
        ctx, *args, callback=_print_callback(**params), result_avals=(),
        has_side_effect=True, ordered=params["ordered"]))


def _debug_print_jvp(primals, tangents, **params):
  return debug_print_p.bind(*primals, **params), []

ad.primitive_jvps[debug_print_p] = _debug_print_jvp
ad.primitive_transposes[debug_print_p] = lambda cts, *args, **params: [None] * len(args)


def _debug_print_batch_rule(args, dims, **params):
  size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
  for i in range(size):
    debug_print_p.bind(*[a if d is None else index_in_dim(a, i, d, keepdims=False)
                         for a, d in zip(args, dims)], **params)
  return [], []

batching.primitive_batchers[debug_print_p] = _debug_print_batch_rule
