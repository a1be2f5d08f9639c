"""Python host callbacks inside compiled programs: compiling them and running them.

jaxlib's CPU client runs a Python function from inside an XLA program through the typed-FFI
custom call ``xla_ffi_python_cpu_callback``: the callables are handed to
``compile_and_load(..., host_callbacks=[...])`` (which takes the ``ir.Module`` itself, not its
text) and the custom call names one by its position in that list (its ``index`` attribute).
The callable gets one read-only NumPy array per operand and returns a tuple with one array per
result, of exactly the declared shapes and dtypes.

An exception raised by a callback reaches the caller as jaxlib's ``JaxRuntimeError``, whose
text holds the formatted traceback (as in JAX: libraries catch that class and read the
original exception's name in the text, equinox's ``filter_jit`` for one). ``host_callable``
keeps the exception itself, and the executable raises the runtime error with that exception
as its cause, so the user's own traceback is shown with it.
"""
from __future__ import annotations

import traceback
import types
from typing import NamedTuple

import numpy as np

from jaxlib import _jax

from hlox import errors, monitoring
from hlox.core.dtypes import canonicalize_dtype, float0

CPU_CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
# The same handler on a GPU (``cuda_plugin_extension.ffi_handlers()`` registers it): it copies
# the operands to the host, runs the callable of ``index`` and copies the results back.
CALLBACK_TARGETS = {"cpu": CPU_CALLBACK_TARGET, "cuda": "xla_ffi_python_gpu_callback",
                    "rocm": "xla_ffi_python_gpu_callback"}

# What a buffer callback gets (``jax.experimental.buffer_callback``): XLA's execution context
# (its stage; on a GPU its stream) and one Buffer per operand and result (NumPy's array and
# DLPack protocols on a CPU; results writeable).
Buffer = _jax.ffi.Buffer
ExecutionContext = _jax.ffi.ExecutionContext
ExecutionStage = _jax.ffi.ExecutionStage
BUFFER_CALLBACK_TARGETS = {"cpu": "xla_buffer_python_cpu_callback",
                           "cuda": "xla_buffer_python_gpu_callback",
                           "rocm": "xla_buffer_python_gpu_callback"}

# The exception the last failing callback raised. Not thread-local: the replicas of a
# pmapped program call their callbacks from XLA's threads.
_pending = types.SimpleNamespace(error=None)


def host_callable(callback, result_avals, with_token: bool = False):
  """The function XLA calls for ``callback``: it runs ``callback(*numpy_arrays)``, checks the
  results against ``result_avals`` (``check_results``) and remembers an exception for the
  executable to re-raise. An ordered call (``with_token``) gets the token (None) first and
  hands it back first."""
  def run(*args):
    try:
      return check_results(callback(*args), result_avals, callback)
    except BaseException as e:
      _pending.error = e
      raise

  if with_token:
    return lambda token, *args: (token, *run(*args))
  return run


def in_place_callable(callback):
  """The function XLA calls for a buffer callback (one whose ``writes_in_place`` is true):
  ``callback(execution_context, *operand_and_result_buffers)``, which fills the results'
  buffers and returns nothing; its exception is remembered as ``host_callable``'s."""
  def run(ctx, *buffers):
    try:
      callback(ctx, *buffers)
    except BaseException as e:
      _pending.error = e
      raise
    return ()
  return run


def callback_error(error: BaseException) -> Exception:
  """The error a callback's ``error`` becomes where it runs outside a program (an eager
  ``pure_callback``): the runtime error a compiled program gives, with the same text."""
  text = "".join(traceback.format_exception(error))
  failure = errors.JaxRuntimeError(f"INTERNAL: CpuCallback error calling callback: {text}")
  failure.__cause__ = error
  return failure


def check_results(outs, result_avals, callback) -> tuple:
  """``outs`` (a sequence of array-likes) as NumPy arrays of exactly ``result_avals``' shapes
  and dtypes; a mismatch raises RuntimeError naming the expected and the actual types."""
  outs = tuple(outs)
  if len(outs) != len(result_avals):
    raise RuntimeError(f"callback {_name(callback)} returned {len(outs)} values, expected "
                       f"{len(result_avals)} ({_describe(result_avals)})")
  checked = []
  for i, (out, aval) in enumerate(zip(outs, result_avals)):
    arr = np.asarray(out)
    # As JAX: a 64-bit value stands for its 32-bit type when x64 is off.
    arr = arr.astype(canonicalize_dtype(arr.dtype), copy=False)
    if arr.shape != tuple(aval.shape) or arr.dtype != aval.dtype:
      raise RuntimeError(
          f"callback {_name(callback)} returned a wrong value for result #{i}: expected "
          f"ShapeDtypeStruct(shape={tuple(aval.shape)}, dtype={np.dtype(aval.dtype).name}), "
          f"got ShapeDtypeStruct(shape={arr.shape}, dtype={arr.dtype.name})")
    # XLA reads a row-major buffer (``ascontiguousarray`` would make a 0-d array 1-d).
    checked.append(arr if arr.flags.c_contiguous else np.array(arr, order="C"))
  return tuple(checked)


def _name(callback):
  inner = getattr(callback, "callback", callback)
  return getattr(inner, "__qualname__", None) or repr(inner)


def _describe(avals):
  return ", ".join(f"{np.dtype(a.dtype).name}{list(a.shape)}" for a in avals) or "nothing"


class LoadedWithCallbacks:
  """A loaded executable whose host callbacks may raise: ``execute_sharded`` raises jaxlib's
  error with the callback's own exception as its cause. Everything else is the loaded
  executable's."""

  __slots__ = ("_loaded", "host_callbacks")

  def __init__(self, loaded, host_callbacks):
    self._loaded = loaded
    self.host_callbacks = host_callbacks  # kept alive as long as the program

  def execute_sharded(self, bufs):
    _pending.error = None
    try:
      return self._loaded.execute_sharded(bufs)
    except Exception as runtime_error:
      error, _pending.error = _pending.error, None
      if error is None:
        raise
      if f"{type(error).__name__}: " not in str(runtime_error):
        # A runtime whose report leaves the exception out (host transfers): say it.
        raise callback_error(error) from error
      raise runtime_error from error

  def __getattr__(self, name):
    return getattr(self._loaded, name)


class HostTransfer(NamedTuple):
  """How a callback reached through host send/recv ops (a TPU's way) meets its program: the
  channels of its operands (sent to the host) and of its results (received from it). As
  in JAX, a callback with no operands is sent one dummy ``f32[1]``, one with no results
  returns a dummy ``f32[]`` (so the program waits for it), and empty results are not
  received (the TPU cannot): the program makes them itself."""
  operand_avals: tuple
  send_channels: tuple
  recv_channels: tuple
  received: tuple  # per result: whether it travels (False for an empty array)


_DUMMY_SEND = np.dtype(np.float32), (1,)
_DUMMY_RECV = np.dtype(np.float32), ()


def _host_transfer_callable(client, callback, result_avals, transfer: HostTransfer):
  from jaxlib import xla_client as xc
  run = host_callable(callback, result_avals)

  def wrapped(*args):
    outs = run(*(args if transfer.operand_avals else ()))
    kept = tuple(o for o, keep in zip(outs, transfer.received) if keep)
    return kept if any(transfer.received) else (np.zeros(*_DUMMY_RECV[::-1]),)

  def shape(dtype, dims):
    return xc.Shape.array_shape(np.dtype(np.bool_) if dtype == float0 else dtype, dims)

  sent = [(a.dtype, a.shape) for a in transfer.operand_avals] or [_DUMMY_SEND]
  received = ([(a.dtype, a.shape) for a, keep in zip(result_avals, transfer.received) if keep]
              or [_DUMMY_RECV])
  return client.make_python_callback_from_host_send_and_recv(
      wrapped, [shape(*s) for s in sent], [shape(*r) for r in received],
      list(transfer.send_channels), list(transfer.recv_channels), _unserializable)


def _unserializable(callback):
  # jaxlib asks for a serializer (for executables saved to disk); these never are.
  raise TypeError("a program with Python host callbacks cannot be serialized")


def compile_with_callbacks(client, module, device_list, options, callbacks):
  """Compile ``module`` (an ``ir.Module``) with ``callbacks`` (``(callback, result avals,
  takes a token, HostTransfer or None)`` each, in the order the custom calls number them) as
  its host callbacks. Never cached on disk: the program refers to Python objects of this
  process."""
  monitoring.test_event("backend_compile")
  host = [in_place_callable(callback) if getattr(callback, "writes_in_place", False)
          else host_callable(callback, avals, token) if transfer is None
          else _host_transfer_callable(client, callback, avals, transfer)
          for callback, avals, token, transfer in callbacks]
  loaded = client.compile_and_load(module, executable_devices=device_list,
                                   compile_options=options, host_callbacks=host)
  return LoadedWithCallbacks(loaded, host)
