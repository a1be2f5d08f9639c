"""Foreign-function (FFI) custom-call targets known to the PJRT client.

XLA looks custom-call targets up by name when it compiles a module, in a process-wide
registry per platform. jaxlib ships LAPACK kernels for CPU as typed-FFI handlers
(``jaxlib.cpu._lapack.registrations()``: ``lapack_spotrf_ffi``, ``lapack_dgetrf_ffi``, ...);
they are registered here once, the first time a lowering asks for one, which is always before
the module that calls it is compiled. A GPU backend adds its own targets the same way
(``register_targets(..., platform="cuda")``).
"""
from __future__ import annotations

import os
import threading

import numpy as np

from jaxlib import xla_client
from jaxlib import lapack as _lapack_targets
from jaxlib.cpu import _lapack

_lock = threading.Lock()
_registered: dict = {}  # platform -> set of target names
_lapack_ready = False
_batch_partitionable: set = set()  # targets the SPMD partitioner may split along batch dims


def register_targets(targets, platform: str = "cpu", api_version: int = 1) -> None:
  """Register ``{name: capsule}`` with XLA for ``platform`` (names already there are kept).

  ``api_version=1`` is XLA's typed FFI (handlers with attributes and buffers); 0 is the
  legacy custom-call ABI.
  """
  with _lock:
    done = _registered.setdefault(platform, set())
    for name, capsule in targets.items():
      if name in done:
        continue
      xla_client.register_custom_call_target(name, capsule, platform=platform,
                                             api_version=api_version)
      done.add(name)


def ensure_lapack() -> None:
  """Make jaxlib's LAPACK FFI targets callable from CPU programs (idempotent, cheap after
  the first call)."""
  global _lapack_ready
  if _lapack_ready:
    return
  # ``initialize`` binds the kernels to a LAPACK implementation (SciPy's, through its
  # Cython LAPACK capsules); without it the handlers have no routine to call.
  _lapack.initialize()
  register_targets(_lapack.registrations(), platform="cpu", api_version=1)
  # The handlers loop over leading batch dimensions themselves, so a call whose operands are
  # sharded along those can run shard by shard, with no gathering.
  for name in _lapack_targets.batch_partitionable_targets():
    register_batch_partitionable(name)
  _lapack_ready = True


def register_target(name: str, fn, platform: str = "cpu", api_version: int = 1,
                    **kwargs) -> None:
  """Register one target as the user gave it (``fn`` a capsule, or a dict of capsules per
  FFI stage; ``kwargs`` such as ``traits`` go to jaxlib unchanged)."""
  with _lock:
    xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)
    _registered.setdefault(platform, set()).add(name)


def register_type(name: str, type_registration, platform: str = "cpu") -> None:
  """Register an FFI user type (``{"type_id": capsule, "type_info": capsule}``)."""
  xla_client.register_custom_type(name, type_registration, platform=platform)


def register_batch_partitionable(name: str) -> None:
  """Let the SPMD partitioner split calls of ``name`` along their leading (batch)
  dimensions, running the target on each shard."""
  with _lock:
    if name in _batch_partitionable:
      return
    xla_client.register_custom_call_as_batch_partitionable(name)
    _batch_partitionable.add(name)


def is_batch_partitionable(name: str) -> bool:
  """Whether ``name`` was registered with :func:`register_batch_partitionable`."""
  return name in _batch_partitionable


def include_dir() -> str:
  """The directory of the C++ headers jaxlib ships (``xla/ffi/api/ffi.h``, ...)."""
  import jaxlib
  base = jaxlib.__file__ and os.path.dirname(os.path.abspath(jaxlib.__file__))
  if base is None:  # a namespace package
    paths = list(getattr(jaxlib, "__path__", ()))
    if not paths:
      raise RuntimeError("Cannot determine jaxlib directory: neither __file__ nor __path__ "
                         "is available")
    base = paths[0]
  return os.path.join(base, "include")


def ensure_known_target(name: str) -> None:
  """Register ``name`` now if it is one of jaxlib's own CPU targets (the LAPACK kernels,
  registered on first use); names registered by users are left to them."""
  if not _lapack_ready and name.startswith("lapack_") and name in _lapack.registrations():
    ensure_lapack()


def lapack_target(fn_base: str, dtype) -> str:
  """The FFI target name of LAPACK routine ``fn_base`` (e.g. ``"potrf"``) for ``dtype``,
  registered and ready to use: ``lapack_spotrf_ffi`` for float32, ``lapack_zpotrf_ffi`` for
  complex128. Complex routines whose real twin has another name (``orgqr``/``ungqr``,
  ``syevd``/``heevd``, ...) are spelled by their caller."""
  prefix = _LAPACK_PREFIX.get(np.dtype(dtype))
  if prefix is None:
    raise NotImplementedError(f"LAPACK has no routines for dtype {np.dtype(dtype).name}")
  ensure_lapack()
  return f"lapack_{prefix}{fn_base}_ffi"


def registered_targets(platform: str = "cpu") -> frozenset:
  """Names registered by this module for ``platform`` (for tests and diagnostics)."""
  return frozenset(_registered.get(platform, ()))


_LAPACK_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
