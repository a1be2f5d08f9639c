"""PJRT plugins (CUDA, TPU): finding them, checking their versions, making their clients.

A plugin is a shared library with PJRT's C API. jaxlib loads one with
``load_pjrt_plugin_dynamically`` and makes a client with ``make_c_api_client``; hlox does
that itself, without the Python packages' ``initialize()`` hooks, because those import JAX
(``jax_plugins.xla_cuda12`` starts with ``import jax._src.xla_bridge``). The packages are
located with ``importlib.util.find_spec`` (which runs none of their code) and their versions
read from their installed metadata.

Where plugins come from:
- ``HLOX_PJRT_PLUGINS="cuda:/path/to/plugin.so,tpu:/path/libtpu.so"``: explicit libraries
  (no version check: the user chose them);
- the ``jax-cuda12-pjrt`` / ``jax-cuda13-pjrt`` wheels (``pip install 'hlox[cuda12]'``), with
  the GPU kernels of ``jax-cuda12-plugin`` (cuSOLVER, cuBLAS-Lt, threefry, ...);
- the ``libtpu`` wheel (written to the same pattern, untested: no TPU here).

Nothing here runs unless a plugin is installed or named: a CPU-only process loads no GPU code.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import os
import warnings


@dataclasses.dataclass(frozen=True)
class PluginSpec:
  """One PJRT plugin to load: ``name`` is PJRT's plugin name ("cuda", "tpu"), ``library`` the
  shared object, ``version`` the distribution's version (None when given by path)."""
  name: str
  library: str
  version: str | None = None
  distribution: str | None = None
  # The Python package holding the plugin's custom-call kernels (CUDA: jax_cuda12_plugin).
  kernels: str | None = None


# The platform a plugin's devices report (``Device.platform``), as JAX names them.
PLATFORM_OF_PLUGIN = {"cuda": "gpu", "rocm": "gpu", "tpu": "tpu"}

# Installed plugin wheels: (plugin name, package holding the library, library file,
# distribution, kernel package).
_KNOWN_WHEELS = (
    ("cuda", "jax_plugins.xla_cuda13", "xla_cuda_plugin.so", "jax-cuda13-pjrt",
     "jax_cuda13_plugin"),
    ("cuda", "jax_plugins.xla_cuda12", "xla_cuda_plugin.so", "jax-cuda12-pjrt",
     "jax_cuda12_plugin"),
    ("tpu", "libtpu", "libtpu.so", "libtpu", None),
)


def discover() -> list[PluginSpec]:
  """The plugins this process could load, at most one per plugin name (explicit paths
  first, then the installed wheels in the order above)."""
  found: dict[str, PluginSpec] = {}
  for entry in filter(None, os.environ.get("HLOX_PJRT_PLUGINS", "").split(",")):
    name, sep, path = entry.strip().partition(":")
    if not sep or not name or not path:
      raise ValueError(f"HLOX_PJRT_PLUGINS: expected 'name:/path/to/library.so' entries "
                       f"separated by commas, got {entry!r}")
    found.setdefault(name.lower(), PluginSpec(name.lower(), path))
  for name, package, library, distribution, kernels in _KNOWN_WHEELS:
    if name in found:
      continue
    directory = _package_directory(package)
    if directory is None or not os.path.exists(os.path.join(directory, library)):
      continue
    found[name] = PluginSpec(name, os.path.join(directory, library),
                             _distribution_version(distribution), distribution, kernels)
  return list(found.values())


def _package_directory(package: str) -> str | None:
  """Where ``package`` is installed, without importing it (its parent, a namespace package
  such as ``jax_plugins``, has no code of its own to run)."""
  try:
    spec = importlib.util.find_spec(package)
  except (ImportError, ValueError):
    return None
  if spec is None or not spec.submodule_search_locations:
    return None
  return list(spec.submodule_search_locations)[0]


def _distribution_version(distribution: str) -> str | None:
  import importlib.metadata  # only once a plugin is found: it costs ~10 ms to load
  try:
    return importlib.metadata.version(distribution)
  except importlib.metadata.PackageNotFoundError:
    return None


def _release(version: str) -> tuple:
  """``"0.10.2"`` -> ``(0, 10, 2)``; suffixes such as ``.dev`` or ``rc1`` are ignored."""
  parts = []
  for piece in version.split(".")[:3]:
    digits = "".join(c for c in piece if c.isdigit())
    parts.append(int(digits) if digits else 0)
  return tuple(parts)


def version_mismatch(spec: PluginSpec, jaxlib_version: str) -> str | None:
  """Why ``spec`` must not be used with this jaxlib (None when it may be): a plugin wheel is
  built for one jaxlib release, and a mismatched pair fails in C++ in ways that are hard to
  read. ``libtpu`` has versions of its own and is not compared."""
  if spec.version is None or spec.name == "tpu":
    return None
  if _release(spec.version) != _release(jaxlib_version):
    return (f"the {spec.distribution} plugin is version {spec.version} but jaxlib is version "
            f"{jaxlib_version}; the {spec.name!r} platform is not used. Install the matching "
            f"plugin (pip install 'hlox[cuda12]') or remove it.")
  return None


def _truthy(value: str) -> bool:
  return value.strip().lower() not in ("false", "0", "no", "off", "")


GPU_ALLOCATORS = ("default", "platform", "bfc", "cuda_async")


def gpu_client_options(environ=None) -> dict:
  """The CUDA client's options from hlox's environment variables (JAX's
  ``XLA_PYTHON_CLIENT_*`` under hlox's names):

  - ``HLOX_GPU_PREALLOCATE`` (true/false): reserve most of the GPU's memory at start
    (XLA's default: true);
  - ``HLOX_GPU_MEMORY_FRACTION`` (0 < f <= 1): how much of it;
  - ``HLOX_GPU_ALLOCATOR``: ``default``, ``platform`` (allocate and free on demand, slow but
    exact), ``bfc`` or ``cuda_async``.
  """
  environ = os.environ if environ is None else environ
  options: dict = {"platform_name": "cuda"}
  allocator = environ.get("HLOX_GPU_ALLOCATOR", "default").strip().lower()
  if allocator not in GPU_ALLOCATORS:
    raise ValueError(f"HLOX_GPU_ALLOCATOR must be one of {', '.join(GPU_ALLOCATORS)}; got "
                     f"{allocator!r}")
  options["allocator"] = allocator
  fraction = environ.get("HLOX_GPU_MEMORY_FRACTION", "").strip()
  if fraction:
    try:
      value = float(fraction)
    except ValueError:
      value = -1.0
    if not 0.0 < value <= 1.0:
      raise ValueError(f"HLOX_GPU_MEMORY_FRACTION must be a number in (0, 1]; got "
                       f"{fraction!r}")
    options["memory_fraction"] = value
  preallocate = environ.get("HLOX_GPU_PREALLOCATE", "").strip()
  if preallocate:
    options["preallocate"] = _truthy(preallocate)
  return options


# CUDA's libraries as the ``nvidia-*-cu12`` wheels install them: (package, libraries).
_NVIDIA_LIBRARIES = (
    ("nvidia.cuda_runtime", ("libcudart.so.12",)),
    ("nvidia.cuda_nvrtc", ("libnvrtc.so.12",)),
    ("nvidia.cublas", ("libcublas.so.12", "libcublasLt.so.12")),
    ("nvidia.nccl", ("libnccl.so.2",)),
    ("nvidia.cuda_cupti", ("libcupti.so.12",)),
    ("nvidia.cusparse", ("libcusparse.so.12",)),
    ("nvidia.cusolver", ("libcusolver.so.11",)),
    ("nvidia.cufft", ("libcufft.so.11",)),
    ("nvidia.nvshmem", ("libnvshmem_host.so.3",)),
    ("nvidia.cudnn", ("libcudnn.so.9",)),
)


def preload_cuda_libraries() -> list:
  """Load the CUDA libraries of the ``nvidia-*`` wheels (``hlox[cuda12]`` installs them), so
  that the plugin, which finds them by name, gets these copies rather than none; libraries
  not installed are left to the system's search path. Returns the paths loaded."""
  import ctypes
  loaded = []
  for package, libraries in _NVIDIA_LIBRARIES:
    directory = _package_directory(package)
    if directory is None:
      continue
    for library in libraries:
      path = os.path.join(directory, "lib", library)
      if os.path.exists(path):
        try:
          ctypes.CDLL(path)
          loaded.append(path)
        except OSError:  # a broken copy: the plugin reports what it lacks
          pass
  return loaded


def make_client(spec: PluginSpec):
  """Load ``spec``'s library and make its client (raises what jaxlib raises when the library
  or the hardware is not usable)."""
  from jaxlib import xla_client
  if spec.name == "cuda":
    preload_cuda_libraries()
  if spec.name == "tpu":
    prepare_tpu_environment()
  if xla_client.pjrt_plugin_loaded(spec.name):
    c_api = None  # loaded once per process (another client, or JAX in the same process)
  else:
    c_api = xla_client.load_pjrt_plugin_dynamically(spec.name, spec.library)
  # PJRT_Plugin_Initialize must run before a client is made: libtpu aborts the process
  # ("InitGoogle() has not finished yet") when its client is created without it.
  if not xla_client.pjrt_plugin_initialized(spec.name):
    xla_client.initialize_pjrt_plugin(spec.name)
  options = gpu_client_options() if spec.name == "cuda" else {}
  client = xla_client.make_c_api_client(spec.name, options)
  if spec.kernels and c_api is not None:
    _register_kernels(spec, c_api)
  return client


def prepare_tpu_environment(environ=None) -> None:
  """The environment libtpu reads when its client starts, set as JAX sets it on a Cloud TPU
  VM (values the user set are kept): quiet gRPC logs, and the launch barrier that keeps
  the chips of a multi-host slice in step."""
  environ = os.environ if environ is None else environ
  environ.setdefault("GRPC_VERBOSITY", "ERROR")
  flags = environ.get("LIBTPU_INIT_ARGS", "")
  if "--xla_tpu_use_enhanced_launch_barrier" not in flags:
    environ["LIBTPU_INIT_ARGS"] = (flags + " --xla_tpu_use_enhanced_launch_barrier=true").strip()


def _register_kernels(spec: PluginSpec, c_api) -> None:
  """Route custom-call registrations for the plugin's platform through the plugin (the
  targets live in its process-wide registry, not jaxlib's), and register the kernels of its
  kernel package: the FFI handlers of ``cuda_plugin_extension`` and the cuSOLVER, cuBLAS,
  sparse and threefry kernels of its other modules. A missing kernel package is a warning:
  programs that need no custom call still run."""
  from jaxlib import xla_client
  try:
    extension = importlib.import_module(f"{spec.kernels}.cuda_plugin_extension")
  except ImportError as err:
    warnings.warn(f"hlox: the GPU kernels package {spec.kernels} is not usable ({err}); "
                  "linear algebra and other custom calls will not lower on the GPU.",
                  RuntimeWarning, stacklevel=3)
    return
  xla_platform = "CUDA"
  xla_client.register_custom_type_handler(
      xla_platform, functools.partial(extension.register_custom_type, c_api))
  xla_client.register_custom_call_handler(
      xla_platform, functools.partial(extension.register_custom_call_target, c_api))
  for name, value in extension.ffi_types().items():
    xla_client.register_custom_type(name, value, platform=xla_platform)
  for name, value in extension.ffi_handlers().items():
    xla_client.register_custom_call_target(name, value, platform=xla_platform, api_version=1)
  for module in ("_solver", "_linalg", "_prng", "_sparse", "_hybrid", "_rnn"):
    try:
      kernels = importlib.import_module(f"{spec.kernels}.{module}")
    except ImportError:
      continue
    registrations = getattr(kernels, "registrations", None)
    if registrations is None:
      continue
    for name, value in registrations().items():
      # Typed-FFI handlers end in ``_ffi`` (JAX's convention) and the rest use the old ABI,
      # except in the linalg and hybrid modules, whose handlers are all typed FFI
      # (``cu_lu_pivots_to_permutation``, ``cuhybrid_eig_real``), as jaxlib registers them.
      api_version = 1 if name.endswith("_ffi") or module in ("_linalg", "_hybrid") else 0
      if isinstance(value, (list, tuple)):  # (api_version, capsule) in some modules
        api_version, value = value
      xla_client.register_custom_call_target(name, value, platform=xla_platform,
                                             api_version=api_version)
    if module == "_hybrid":
      # The hybrid kernels (eig, pivoted QR: LAPACK on the host, MAGMA when present) are
      # handed jaxlib's LAPACK routines here (``jaxlib.cpu._lapack``; no JAX import).
      kernels.initialize()


@functools.lru_cache(maxsize=None)
def cusolver_version() -> int | None:
  """The cuSOLVER version of the installed CUDA kernels package (``11701`` for 11.7.1), or
  None without one. JAX picks some kernels by it (``geev`` exists from 11.7.1 on), looking
  for the packages in this order."""
  for package in ("jax_cuda13_plugin", "jax_cuda12_plugin", "jaxlib.cuda"):
    try:
      versions = importlib.import_module(f"{package}._versions")
      return versions.cusolver_get_version()
    except Exception:  # not installed, or its CUDA libraries not loadable here
      continue
  return None
