"""``export`` and ``Exported``: a jitted function lowered to a portable StableHLO module with
what is needed to call it again (from this process or another), as JAX's ``jax.export``.

An ``Exported`` holds the module (a versioned StableHLO artifact), the argument and result
trees and types, the platforms it was lowered for and the shardings of its arguments and
results. ``call`` runs it (bound as ``call_exported_p``, so inside ``jit`` it is part of
the calling program); ``vjp()`` exports its VJP, which ``call`` uses for reverse-mode
differentiation; ``serialize`` (``serialization.py``) turns it into bytes.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any, Callable, Sequence

from hlox import autodiff, custom_derivatives

from hlox import _tree_transform as tree_util
from hlox.api import JitWrapped, ShapeDtypeStruct, jit
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import eval_jaxpr
from hlox.core.shape_poly import is_symbolic_dim
from hlox.interpreters import dim_lowering, exported_module
from hlox.lax.call_exported import call_exported_p
from hlox.runtime import client
from hlox.runtime import sharding as sharding_lib

# The calling conventions hlox writes and reads (JAX's numbering: 9 has tokens for ordered
# effects and marks the platform index argument; 10 says whether Shardy partitioned it).
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10

# Custom-call targets whose behaviour jaxlib keeps stable across releases (JAX's list): an
# exported module may call these; any other target needs ``DisabledSafetyCheck.custom_call``.
_LAPACK = [f"lapack_{t}{op}_ffi" for op in ("potrf", "geqrf", "getrf", "gesdd", "geev",
                                             "trsm", "gtsv", "sytrd", "gehrd", "gees")
           for t in "sdcz"]
_LAPACK += [f"lapack_{t}{op}_ffi" for t, op in (("s", "orgqr"), ("d", "orgqr"), ("c", "ungqr"),
                                                ("z", "ungqr"), ("s", "syevd"), ("d", "syevd"),
                                                ("c", "heevd"), ("z", "heevd"))]
_LAPACK = [t.replace("lapack_csytrd", "lapack_chetrd").replace("lapack_zsytrd", "lapack_zhetrd")
           for t in _LAPACK]
_STABLE_TARGETS = frozenset(_LAPACK + [
    "cu_lu_pivots_to_permutation", "cusolver_getrf_ffi", "hip_lu_pivots_to_permutation",
    "hipsolver_getrf_ffi", "cusolver_geqrf_ffi", "cusolver_orgqr_ffi", "hipsolver_geqrf_ffi",
    "hipsolver_orgqr_ffi", "cusolver_potrf_ffi", "hipsolver_potrf_ffi", "cusolver_syevd_ffi",
    "hipsolver_syevd_ffi", "cusolver_gesvd_ffi", "cusolver_gesvdj_ffi", "hipsolver_gesvd_ffi",
    "hipsolver_gesvdj_ffi", "hipsolver_gesdd_ffi", "cusolver_sytrd_ffi", "hipsolver_sytrd_ffi",
    "cusparse_gtsv2_ffi", "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
    "annotate_device_placement", "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK",
    "stablehlo.dynamic_approx_top_k", "tf.call_tf_function", "tpu_custom_call",
    "AllocateBuffer", "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "shape_assertion"])

# JAX's names for the platforms an export may target (``gpu`` means CUDA).
_PLATFORMS = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda", "rocm": "rocm", "tpu": "tpu"}


class DisabledSafetyCheck:
  """A safety check to skip: ``platform()`` lets a module run on a platform it was not
  exported for; ``custom_call(name)`` lets it call a custom-call target without stability
  guarantees (``"ALL"``: any target)."""

  __slots__ = ("_impl",)

  def __init__(self, _impl: str):
    self._impl = _impl

  @classmethod
  def platform(cls) -> "DisabledSafetyCheck":
    """Allow calling on a platform the module was not exported for."""
    return cls("platform")

  @classmethod
  def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
    """Allow exporting a module that calls the custom-call target ``target_name``."""
    return cls(f"custom_call:{target_name}")

  def is_custom_call(self) -> str | None:
    """The target this check allows, if it is a ``custom_call`` check."""
    m = re.match(r"custom_call:(.+)$", self._impl)
    return m.group(1) if m else None

  def __str__(self):
    return self._impl

  __repr__ = __str__

  def __eq__(self, other):
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self):
    return hash(self._impl)


@dataclasses.dataclass(frozen=True)
class Exported:
  """A function lowered to StableHLO, with what is needed to call it.

  Attributes (JAX's): ``fun_name``; ``in_tree`` (the tree of ``(args, kwargs)``) and
  ``in_avals`` (the flat argument types); ``out_tree`` and ``out_avals``;
  ``in_shardings_hlo``/``out_shardings_hlo`` (kept for older readers: all None);
  ``nr_devices``; ``platforms``; ``ordered_effects``/``unordered_effects``;
  ``disabled_safety_checks``; ``mlir_module_serialized`` (a portable StableHLO
  artifact); ``calling_convention_version``; ``module_kept_var_idx`` (the arguments the
  module takes; unused ones are dropped); ``uses_global_constants`` (the module takes a
  platform index). Fields starting with ``_`` are private.
  """
  fun_name: str
  in_tree: Any
  in_avals: tuple
  out_tree: Any
  out_avals: tuple
  _has_named_shardings: bool
  _in_named_shardings: tuple
  _out_named_shardings: tuple
  in_shardings_hlo: tuple
  out_shardings_hlo: tuple
  nr_devices: int
  platforms: tuple
  ordered_effects: tuple
  unordered_effects: tuple
  disabled_safety_checks: Sequence[DisabledSafetyCheck]
  mlir_module_serialized: bytes
  calling_convention_version: int
  module_kept_var_idx: tuple
  uses_global_constants: bool
  _get_vjp: Callable[["Exported"], "Exported"] | None

  def mlir_module(self) -> str:
    """The module's text (with source locations)."""
    return exported_module.module_text(self.mlir_module_serialized)

  def __str__(self):
    # Printed jaxprs show this for ``call_exported``'s parameter, not the whole module.
    return f"Exported(fun_name={self.fun_name}, ...)"

  def in_shardings_jax(self, mesh=None) -> tuple:
    """The arguments' shardings as ``NamedSharding``s over ``mesh`` (which must have the
    exported mesh's axis names and sizes; None keeps the exported abstract mesh); None
    for an argument exported without one."""
    return tuple(_on_mesh(s, mesh) for s in self._in_named_shardings)

  def out_shardings_jax(self, mesh=None) -> tuple:
    """The results' shardings over ``mesh``, as ``in_shardings_jax``."""
    return tuple(_on_mesh(s, mesh) for s in self._out_named_shardings)

  def has_vjp(self) -> bool:
    """Whether ``vjp()`` can give the exported VJP."""
    return self._get_vjp is not None

  def vjp(self) -> "Exported":
    """The exported VJP: it takes the flat primal arguments then one cotangent per flat
    result, and returns the flat arguments' cotangents."""
    if self._get_vjp is None:
      raise ValueError("No VJP is available")
    return self._get_vjp(self)

  def serialize(self, vjp_order: int = 0) -> bytearray:
    """Bytes for ``deserialize``, with ``vjp_order`` levels of VJPs (so that ``grad`` of
    the deserialized function can be taken that many times)."""
    return _serializer(self, vjp_order=vjp_order)

  def call(self, *args, **kwargs):
    """Run the exported function on ``args``/``kwargs`` (of the exported tree and types),
    from eager code or inside a traced function."""
    return call_exported(self)(*args, **kwargs)


def _no_serializer(exp, vjp_order=0):
  raise RuntimeError("hlox.export.serialization is not loaded (import hlox.export)")


# ``serialization.py`` (which builds on this module) hands its writer over when imported.
_serializer = _no_serializer


def set_serializer(fn) -> None:
  global _serializer
  _serializer = fn


def _on_mesh(s, mesh):
  if s is None or mesh is None:
    return s
  target = mesh.abstract_mesh if hasattr(mesh, "abstract_mesh") else mesh
  if (tuple(target.axis_sizes) != tuple(s.mesh.axis_sizes) or
      tuple(target.axis_names) != tuple(s.mesh.axis_names)):
    raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for "
                     f"export {s.mesh}.")
  return sharding_lib.NamedSharding(mesh, s.spec)


def default_export_platform() -> str:
  """The platform ``export`` lowers for by default: this process's default device's
  (``'cpu'``, ``'cuda'``, ``'rocm'`` or ``'tpu'``)."""
  return client.lowering_platform(client.default_device())


# Platforms whose runtimes can reuse a donated argument's buffer (JAX's list).
_DONATING_PLATFORMS = ("cpu", "cuda", "rocm", "tpu", "neuron")


def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
  """Export ``fun_jit`` (the result of ``jit``) for the argument types given next:
  ``export(jit(f))(*args_specs, **kwargs_specs)``, with ``ShapeDtypeStruct``s or arrays.

  ``platforms`` (some of ``'cpu'``, ``'cuda'``, ``'rocm'``, ``'tpu'``; default
  ``default_export_platform()``) need not be present here: the module is only lowered.
  ``disabled_checks``: ``DisabledSafetyCheck``s to skip.
  """
  wrapped = getattr(fun_jit, "_jit", None)
  if not isinstance(wrapped, JitWrapped):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  disabled_checks = tuple(disabled_checks)

  def do_export(*args_specs, **kwargs_specs) -> Exported:
    if platforms is None:
      targets = (default_export_platform(),)
    else:
      if isinstance(platforms, str) or not platforms:
        raise ValueError("export: platforms must be a non-empty sequence of platform names, "
                         f"got {platforms!r}")
      # JAX's set of platforms is open: a name hlox has no rules for lowers with the
      # rules every platform shares.
      targets = tuple(_PLATFORMS.get(p, p) for p in platforms)
    if (wrapped.donate_argnums or wrapped.donate_argnames) and len(
        {p in _DONATING_PLATFORMS for p in targets}) > 1:
      raise NotImplementedError(
          "In multi-platform lowering either all or no lowering platforms should support "
          f"donation. Lowering for {list(targets)} of which only "
          f"{[p for p in targets if p in _DONATING_PLATFORMS]} support donation")
    _check_one_scope(wrapped, args_specs, kwargs_specs)
    traced = fun_jit.trace(*args_specs, **kwargs_specs)
    return _export_traced(traced, targets, disabled_checks)
  return do_export


def _check_one_scope(wrapped, args_specs, kwargs_specs) -> None:
  """JAX's error for argument shapes whose symbolic dimensions come from several scopes
  (they could not be compared with each other)."""
  first = None
  for path, leaf in tree_util.tree_flatten_with_path((args_specs, kwargs_specs))[0]:
    for d in getattr(leaf, "shape", ()):
      if not is_symbolic_dim(d):
        continue
      if first is None:
        first = (d.scope, _args_kwargs_path(path))
      else:
        first[0]._check_same_scope(
            d, when=f"when exporting {getattr(wrapped, 'name', 'fun')}",
            self_descr=f"current (from {first[1]}) ", other_descr=_args_kwargs_path(path))


def _typed(aval, var):
  split = getattr(var, "sharding", None)
  if split is None or not isinstance(aval, ShapedArray):
    return aval
  return aval.update(sharding=sharding_lib.named_of_type(split, abstract=True))


def _export_traced(traced, platforms: tuple, disabled_checks: tuple) -> Exported:
  from hlox.config import config
  version = config._values["export_calling_convention_version"]
  if not (minimum_supported_calling_convention_version <= version <=
          maximum_supported_calling_convention_version):
    raise ValueError(
        f"The requested export calling convention version {version} is outside the range "
        f"of supported versions [{minimum_supported_calling_convention_version}.."
        f"{maximum_supported_calling_convention_version}]")
  inner = traced._traced  # the jaxpr (constants as leading arguments) and its types
  n_consts = len(inner.consts)
  with dim_lowering.wrapped_entry():  # (JAX's calling convention for symbolic shapes)
    lowereds = [_lower_for(traced, p) for p in platforms]
  first = lowereds[0]
  if first.replicas is not None:
    raise NotImplementedError("export of a function containing pmap is not supported")
  if any(lw.host_callbacks for lw in lowereds):
    raise NotImplementedError("serialization of host_callbacks is not yet implemented")
  kept = first.kept_var_idx
  kept_consts = [i for i in kept if i < n_consts]
  module_kept_var_idx = tuple(i - n_consts for i in kept if i >= n_consts)
  const_avals = inner.jaxpr.in_avals[:n_consts]
  module = exported_module.build_export_module(
      f"jit({traced.fun_name})", [lw.as_text(debug_info=True) for lw in lowereds],
      inner.consts, const_avals, kept_consts)
  _check_custom_calls(module, disabled_checks)
  serialized = exported_module.to_portable(module)

  # The types say how arguments and results are split over Explicit mesh axes, as JAX's
  # (the splits live on the jaxpr's variables).
  in_avals = tuple(map(_typed, inner.in_avals, inner.jaxpr.jaxpr.invars[n_consts:]))
  out_avals = tuple(map(_typed, inner.jaxpr.out_avals, inner.jaxpr.jaxpr.outvars))
  in_shardings, out_shardings, nr_devices = _shardings(first, traced, n_consts)
  jaxpr = inner.jaxpr
  consts = list(inner.consts)

  def get_vjp(primal: Exported) -> Exported:
    def flat_fun(*args):
      return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *args)
    return _export_vjp(primal, flat_fun)

  return Exported(
      fun_name=traced.fun_name, in_tree=traced.in_tree, in_avals=in_avals,
      out_tree=traced.out_tree, out_avals=out_avals, _has_named_shardings=True,
      _in_named_shardings=in_shardings, _out_named_shardings=out_shardings,
      in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
      nr_devices=nr_devices, platforms=tuple(platforms), ordered_effects=(),
      unordered_effects=(), disabled_safety_checks=disabled_checks,
      mlir_module_serialized=serialized, calling_convention_version=version,
      module_kept_var_idx=module_kept_var_idx,
      # (JAX's calling convention passes dimension variables as global constants too)
      uses_global_constants=len(platforms) > 1 or any(lw.shape_polymorphic
                                                      for lw in lowereds),
      _get_vjp=get_vjp)


def _lower_for(traced, platform: str):
  """``traced`` lowered for ``platform`` (hlox's lowering of this process's own platform
  for that one, so that it is the very program a call here would run)."""
  if platform in _PLATFORMS:
    return traced.lower(lowering_platforms=(platform,))._lowered
  return traced._wrapped._lower(traced._traced, *traced._call, platform=platform)._lowered


def _check_custom_calls(module, disabled_checks) -> None:
  allowed = set(_STABLE_TARGETS)
  allowed.update(t for t in (c.is_custom_call() for c in disabled_checks) if t is not None)
  if "ALL" in allowed:
    return
  bad = [text for target, text in exported_module.custom_call_targets(module)
         if target not in allowed]
  if bad:
    raise ValueError(
        "Cannot serialize code with custom calls whose targets have no compatibility "
        "guarantees. See https://docs.jax.dev/en/latest/export/export.html"
        "#compatibility-guarantees-for-custom-calls. Examples are:\n" + "\n".join(bad) + ".\n")


def _shardings(lowered, traced, n_consts):
  """The arguments' and results' shardings (NamedShardings over the abstract mesh; None
  where unspecified) and the number of devices the module is lowered for."""
  n_in, n_out = len(traced._traced.in_avals), len(traced._traced.jaxpr.out_avals)
  nr_devices = exported_module.device_count(lowered.module)
  if lowered.partitioned is None:
    return (None,) * n_in, (None,) * n_out, nr_devices
  _, sigs = lowered.partitioned
  in_shardings = tuple(_abstract_named(s[1]) if isinstance(s, tuple) else None
                       for s in sigs[n_consts:])
  # jit's ``out_shardings`` where it gives one, else the results' types
  declared = traced._wrapped._declared_result_shardings(traced._traced) or [None] * n_out
  out_shardings = tuple(_abstract_named(d) if d is not None else _result_sharding(v)
                        for d, v in zip(declared, traced._traced.jaxpr.jaxpr.outvars))
  return in_shardings, out_shardings, nr_devices


def _abstract_named(s):
  if not isinstance(s, sharding_lib.NamedSharding):
    return None
  mesh = s.mesh.abstract_mesh if hasattr(s.mesh, "abstract_mesh") else s.mesh
  return sharding_lib.NamedSharding(mesh, s.spec)


def _result_sharding(var):
  split = getattr(var, "sharding", None)
  if split is None:
    return None
  return _abstract_named(sharding_lib.named_of_type(split))


def _export_vjp(primal: Exported, flat_fun: Callable) -> Exported:
  """Export the VJP of ``flat_fun`` (the primal function on flat arguments, returning its
  flat results) for ``primal``'s types: ``(*primals, *out_cts) -> in_cts``."""
  n_in = len(primal.in_avals)

  def fun_vjp(*primals_and_cts):
    primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]
    _, pullback = autodiff.vjp(lambda *xs: list(flat_fun(*xs)), *primals)
    return tuple(pullback(list(cts)))

  fun_vjp.__name__ = f"{primal.fun_name}_vjp"
  # As JAX: the primals and cotangents laid out as the primal's arguments and results are,
  # the arguments' cotangents as its arguments.
  specs = [_spec(a, s) for a, s in zip(
      itertools.chain(primal.in_avals, (a.to_tangent_aval() for a in primal.out_avals)),
      itertools.chain(primal._in_named_shardings, primal._out_named_shardings))]
  out_shardings = tuple(primal._in_named_shardings)
  jitted = (jit(fun_vjp, out_shardings=out_shardings)
            if any(s is not None for s in out_shardings) else jit(fun_vjp))
  return export(jitted, platforms=primal.platforms,
                disabled_checks=primal.disabled_safety_checks)(*specs)


def _spec(aval: ShapedArray, sharding=None) -> ShapeDtypeStruct:
  return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type,
                          sharding=sharding)


def _args_kwargs_path(path) -> str:
  if not path:
    return "args and kwargs"
  head = "args" if path[0].idx == 0 else "kwargs"
  return head + tree_util.keystr(path[1:])


def call_exported(exported: Exported) -> Callable:
  """``exported`` as a function of its arguments' tree (``Exported.call``): bound as
  ``call_exported_p``; differentiable through the exported VJP."""
  if not isinstance(exported, Exported):
    raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")

  @custom_derivatives.custom_vjp
  def f_flat(*args_flat):
    return tuple(call_exported_p.bind(*args_flat, exported=exported))

  def f_flat_fwd(*args_flat):
    return f_flat(*args_flat), args_flat

  def f_flat_bwd(args_flat, cts_flat):
    exp_vjp = exported.vjp()
    return tuple(call_exported(exp_vjp)(*args_flat, *cts_flat))

  f_flat.defvjp(f_flat_fwd, f_flat_bwd)

  def f_imported(*args, **kwargs):
    args_flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
      given = in_tree.unflatten([0] * in_tree.num_leaves)
      wanted = exported.in_tree.unflatten([0] * exported.in_tree.num_leaves)
      diffs = "\n".join(
          f"   - {_args_kwargs_path(path)} is a {thing1} in the invocation and a {thing2} "
          f"when exported, so {explanation}.\n"
          for path, thing1, thing2, explanation in tree_util.equality_errors(given, wanted))
      raise ValueError(
          "The invocation args and kwargs must have the same pytree structure as when the "
          f"function '{exported.fun_name}' was exported, but they have the following "
          f"structural differences:\n{diffs}")
    return exported.out_tree.unflatten(list(f_flat(*args_flat)))
  return f_imported
