"""hlox: composable transformations of NumPy programs (JAX's model), built from scratch.

    import hlox, hlox.numpy as jnp
    f = hlox.jit(lambda x: jnp.sin(x) * 2.0)

This module only re-exports the public API; the layers below it are described in
``docs/ARCHITECTURE.md``.
"""
from hlox.config import (check_tracer_leaks, checking_leaks, config, debug_infs, debug_nans,
                         ensure_compile_time_eval, log_compiles)
from hlox.config import default_prng_impl, random_seed_offset, threefry_partitionable
from hlox.config import make_user_context
from hlox.config import (allow_f16_reductions, debug_key_reuse, default_device,
                         default_matmul_precision, enable_checks, enable_custom_prng,
                         enable_x64, explain_cache_misses, legacy_prng_key, no_execution,
                         no_tracing, numpy_dtype_promotion, numpy_rank_promotion,
                         softmax_custom_jvp, transfer_guard, transfer_guard_device_to_device,
                         transfer_guard_device_to_host, transfer_guard_host_to_device)
from hlox.cache import clear_caches, switch_caches
from hlox.errors import (ConcretizationTypeError, TracerArrayConversionError,
                         TracerBoolConversionError, TracerIntegerConversionError,
                         UnexpectedTracerError)
from hlox.core.basearray import Array
from hlox.runtime import (block_until_ready, default_backend, device_count, device_get,
                          device_put, devices, local_device_count, local_devices,
                          process_count, process_index)
from hlox.core.tracer import Tracer as _Tracer
from hlox import tree_util
from hlox import tree
from hlox import lax
from hlox import numpy
from hlox import random
from hlox import scipy
from hlox import nn
from hlox.api import (ShapeDtypeStruct, copy_to_host_async, disable_jit, eval_shape, jit,
                      make_jaxpr, named_call, named_scope, pmap, vmap)
from hlox.autodiff import (grad, hessian, jacfwd, jacobian, jacrev, jvp, linear_transpose,
                           linearize, value_and_grad, vjp)
from hlox import autodiff as _autodiff
import types as _types
# ``jax.ad``: the markers of ``f_vjp.with_refs`` (a namespace, as JAX's).
ad = _types.SimpleNamespace(DontWant=_autodiff.DontWant, DidntWant=_autodiff.DidntWant,
                            GradRef=_autodiff.GradRef, GradValue=_autodiff.GradValue)
from hlox import dtypes
from hlox.core.dtypes import float0
from hlox.tree_util import Partial
from hlox.custom_derivatives import custom_jvp, custom_vjp
from hlox import custom_batching
from hlox.checkpoint import checkpoint, checkpoint_policies, remat
from hlox import ad_checkpoint
from hlox import distributed
from hlox import typing
from hlox.runtime import device_put_replicated, device_put_sharded
from hlox.runtime.client import host_count, host_id, host_ids, process_indices
from hlox.runtime.environment import live_arrays, print_environment_info
from hlox.api import make_array_from_callback, make_array_from_single_device_arrays
from hlox.runtime.placement import make_array_from_process_local_data
from hlox.runtime.environment import device_class as _device_class
from hlox.api import typeof
from hlox.custom_derivatives import closure_convert, custom_gradient
from hlox import version
from hlox.version import __version__, __version_info__

Device = _device_class()  # jaxlib's device class, for isinstance checks (``jax.Device``)
from hlox import flatten_util, image, ops, test_util
from hlox import viz
from hlox import api_util, debug, dlpack, experimental, export, extend, ffi, lib
from hlox import sharding, stages
from hlox.sharding import NamedSharding, device_put, make_mesh, reshard, set_mesh
from hlox.sharding import PartitionSpec as P
from hlox.runtime.array import Shard
from hlox.lax.shard_map import shard_map
from hlox.lax.smap import smap
from hlox.lax.dslice import ds
from hlox.debug.callbacks import effects_barrier, pure_callback
from hlox import memory, ref
from hlox.ref import Ref, empty_ref, free_ref, freeze, new_ref


def __getattr__(name):
  # ``hlox.profiler`` is imported on first use: it loads jaxlib's profiler, which start-up
  # does not need. (Only called for names the module does not have.)
  if name == "profiler":
    import hlox.profiler
    return hlox.profiler
  if name == "_src":  # JAX's private names, which libraries reach as ``jax._src.x`` (chex)
    import hlox._src
    return hlox._src
  raise AttributeError(f"module 'hlox' has no attribute {name!r}")


def __dir__():
  return sorted({*globals(), "profiler"})


