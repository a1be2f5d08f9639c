"""Lowering the linear-algebra primitives to the GPU kernels of jaxlib's CUDA (and ROCm)
plugins, as JAX does: cuSOLVER / hipSOLVER typed-FFI handlers (``cusolver_getrf_ffi``...),
cuSPARSE's tridiagonal solver, the plugin's own kernels (``cu_lu_pivots_to_permutation``) and
the hybrid ones that run LAPACK on the host (``cuhybrid_eig_real``).

The calls are emitted with :func:`hlox.lax.linalg.lapack.ffi_call`, as the CPU's LAPACK calls
are; only the target names and some attributes differ. The kernels are registered when the
plugin's client is made (``runtime/plugins.py``). A rule is written once with a
``target_name_prefix`` argument and registered for each GPU platform by
:func:`register_gpu_lowering`.
"""
from __future__ import annotations

import functools

import numpy as np

from hlox.interpreters import xla
from hlox.lax.callback import host_callback_lowering
from hlox.runtime import client
from hlox.runtime.array import device_put
from hlox.runtime.plugins import cusolver_version  # noqa: F401 (the rules' kernel choice)

# The prefix of a platform's kernel names (JAX's): ``cusolver_...`` on CUDA, ``hipsolver_...``
# on ROCm.
GPU_PREFIXES = {"cuda": "cu", "rocm": "hip"}


def register_gpu_lowering(primitive, rule, platforms=("cuda", "rocm")) -> None:
  """Register ``rule(ctx, *args, target_name_prefix, **params)`` for each GPU platform."""
  for platform in platforms:
    xla.register_lowering(
        primitive, functools.partial(rule, target_name_prefix=GPU_PREFIXES[platform]),
        platform=platform)


def solver_target(prefix: str, routine: str) -> str:
  """A dense solver kernel's name: ``solver_target("cu", "getrf") == "cusolver_getrf_ffi"``
  (one handler serves every dtype; the operands' types pick the routine)."""
  return f"{prefix}solver_{routine}_ffi"


def magma_attr(use_magma) -> str:
  """The ``magma`` attribute of the hybrid kernels (``cuhybrid_geqp3``...): ``"on"`` or
  ``"off"`` when the caller chose, else JAX's ``jax_use_magma`` default, ``"auto"`` (MAGMA
  where its library is found and the matrix is large enough)."""
  if use_magma is None:
    return "auto"
  return "on" if use_magma else "off"


def on_host_cpu(primitive, params):
  """``f(*numpy_arrays) -> [numpy arrays]``: ``primitive`` with ``params`` run eagerly on this
  process's CPU (its LAPACK lowering there)."""
  def run(*arrays):
    cpu = client.devices("cpu")[0]
    outs = primitive.bind(*[device_put(a, cpu) for a in arrays], **params)
    return [np.asarray(o) for o in (outs if primitive.multiple_results else [outs])]
  return run


def host_lowering(primitive):
  """A GPU rule for a primitive that has no GPU kernel (``schur``, ``hessenberg``: JAX lowers
  them on the CPU only): the operands go to the host, where the CPU's LAPACK routine runs
  in a host callback, and the results come back, as the hybrid kernels do for ``eig``."""
  def rule(ctx, *args, target_name_prefix, **params):
    del target_name_prefix  # (the same host routine on every GPU platform)
    return host_callback_lowering(ctx, *args, callback=on_host_cpu(primitive, params),
                                  result_avals=list(ctx.avals_out), has_side_effect=False)
  return rule

