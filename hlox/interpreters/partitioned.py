"""Programs partitioned over a mesh by XLA's SPMD partitioner (Shardy), as ``jit`` runs a
function whose arguments are sharded arrays (or that constrains shardings inside).

The program is written for the whole (global) arrays; each argument's ``main`` parameter
carries its layout (``sdy.sharding``), the module declares the mesh, and XLA splits the
computation over the mesh's devices, inserting the collectives, and picks the layouts of
the results (reported as ``NamedSharding``s over the same mesh where one describes them).

Arguments already laid out as compiled are passed shard-wise, without a copy; others
(host values, arrays on one device) are copied to the mesh, replicated, first. An argument
committed to one device cannot join a program over other devices (JAX's rule).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from hlox import monitoring
from hlox.cache import LRUCache
from hlox.core import sharding_types
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from hlox.errors import DeletedArrayError
from hlox.interpreters import nan_checks, xla
from hlox.interpreters.pmap import subjaxprs
from hlox.runtime import spmd
from hlox.runtime import sharding as sharding_lib
from hlox.runtime.array import Array, deleted_message, put_with_sharding, wrap_partitioned

# primitive -> params -> the sharding it constrains to: the meshes a jaxpr names inside
# (``lax.with_sharding_constraint`` registers its primitive here).
sharding_params: dict = {}
# The primitives whose result is laid out as ``sharding_params`` says (a constraint's).
constrains_result: set = set()


def _is_sharding(s) -> bool:
  return isinstance(s, sharding_lib.Sharding) and not isinstance(
      s, sharding_lib.SingleDeviceSharding)


def jaxpr_meshes(jaxpr: Jaxpr) -> list:
  """The meshes of the sharding constraints in ``jaxpr`` and the jaxprs inside it."""
  found = []
  for eqn in jaxpr.eqns:
    get = sharding_params.get(eqn.primitive)
    if get is not None:
      s = get(eqn.params)
      if isinstance(s, sharding_lib.NamedSharding):
        # (one over an AbstractMesh, as a type's is, runs over the mesh in effect)
        found.append(sharding_lib.concrete_mesh_of(s.mesh))
    for sub in subjaxprs(eqn.params):
      found += jaxpr_meshes(sub)
  return found


def program_mesh(closed: ClosedJaxpr, sigs) -> sharding_lib.Mesh | None:
  """The mesh a program runs over: its sharded arguments' and its constraints' (None when
  it has neither: an ordinary one-device program)."""
  meshes = []
  for s in sigs:
    if type(s) is tuple and _is_sharding(s[1]):
      meshes.append(_mesh_of(s[1]))
  meshes += jaxpr_meshes(closed.jaxpr)
  if not meshes:
    return None
  first = meshes[0]
  for m in meshes[1:]:
    if m._flat_devices_tuple != first._flat_devices_tuple:
      raise ValueError(
          "Received incompatible devices for jitted computation. Got meshes over devices "
          f"{[d.id for d in first._flat_devices_tuple]} and "
          f"{[d.id for d in m._flat_devices_tuple]}")
    if (m.devices.shape != first.devices.shape or m.axis_names != first.axis_names) and (
        sharding_lib.axis_map(m, first) is None):  # (another view of the same devices)
      raise ValueError(f"jit: the arguments and constraints use different meshes over the "
                       f"same devices ({first} and {m}); use one mesh")
  return first


def _mesh_of(sharding) -> sharding_lib.Mesh:
  if isinstance(sharding, sharding_lib.NamedSharding):
    return sharding_lib.concrete_mesh_of(sharding.mesh)
  # A layout XLA chose that no spec described: a one-axis mesh of its devices.
  devices = np.empty(len(sharding._device_assignment), dtype=object)
  devices[:] = sharding._device_assignment
  return sharding_lib.Mesh(devices, ("_devices",))


class PartitionedCall:
  """A partitioned program with the interface of ``hlox.lax.call.CompiledCall``: call it
  with flat arguments; it returns flat Arrays laid out as XLA chose."""

  replicated = True  # it places its own arguments (``api`` puts its consts with ``place``)
  device = None
  device_key = None

  def __init__(self, closed: ClosedJaxpr, in_shardings, mesh, name, donated_invars,
               keep_unused, out_shardings=None, reported=None):
    self.mesh = mesh
    self.in_shardings = list(in_shardings)
    self.in_avals = closed.in_avals
    self.out_avals = closed.out_avals
    lowered = xla.lower_jaxpr_to_module(
        closed, name, donated_invars, keep_unused, mesh=mesh, arg_shardings=self.in_shardings,
        result_shardings=out_shardings, result_layouts_known=_constrained_results(closed))
    n_in = len(self.in_avals)
    self.kept = None if len(lowered.kept_var_idx) == n_in else list(lowered.kept_var_idx)
    self.positions = list(range(n_in)) if self.kept is None else self.kept
    self._internal = [sharding_lib.internal(s, a.ndim)
                      for s, a in zip(self.in_shardings, self.in_avals)]
    monitoring.test_event("compile")
    with lowered.context:
      loaded, out_hlos = spmd.compile_partitioned(
          lowered.as_text(), mesh._flat_devices_tuple, lowered.host_callbacks, lowered.module)
    if out_hlos is None:  # one device: every result is whole
      whole = sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec())
      out_hlos = [whole.hlo(a.ndim) for a in self.out_avals]
    # Typed results are laid out as their types say (XLA's HloSharding of an unreduced
    # result names no mesh axes to read back); the others as XLA chose.
    typed = list(reported or ()) + [None] * (len(self.out_avals) - len(reported or ()))
    self.out_shardings = [s if isinstance(s, sharding_lib.NamedSharding)
                          else _from_hlo(h, mesh, a.ndim, self.in_shardings, self.in_avals)
                          for s, h, a in zip(typed, out_hlos, self.out_avals)]
    internal_out = [sharding_lib.internal(s, a.ndim)
                    for s, a in zip(self.out_shardings, self.out_avals)]
    self.executable = spmd.Replicated(loaded, mesh._flat_devices_tuple, self.out_avals,
                                      internal_out)
    self.relaid = lowered.result_layouts  # as ``CompiledCall.relaid``
    self.arg_layouts = xla.expected_arg_layouts(loaded, lowered.arg_layouts)
    self.fast = self.__call__

  def place(self, x, i: int) -> Array:
    """Argument ``x`` of position ``i`` laid out as this program takes it."""
    want = self._internal[i]
    if type(x) is Array and x._multi is not None and x._multi._sharding is want:
      return x
    if type(x) is Array and type(x._sig) is tuple and hasattr(x._sig[1], "platform"):
      raise ValueError(
          "Received incompatible devices for jitted computation. Got argument of shape "
          f"{x.aval.str_short()} committed to device {x._sig[1]} and a program over the "
          f"devices {[d.id for d in self.mesh._flat_devices_tuple]} of {self.mesh}")
    return put_with_sharding(x, self.in_shardings[i])

  def __call__(self, args: Sequence) -> list:
    bufs = []
    internal = self._internal
    for i in self.positions:
      x = args[i]
      multi = x._multi if type(x) is Array else None
      if multi is None or multi._sharding is not internal[i]:  # not laid out as compiled
        x = self.place(x, i)
        multi = x._multi
      if multi.is_deleted():  # jaxlib crashes on deleted multi-device buffers
        raise DeletedArrayError(deleted_message(x.aval))
      bufs.append(multi)
    if self.arg_layouts:
      xla.check_arg_layouts(bufs, self.arg_layouts)
    outs = list(map(wrap_partitioned, self.executable.run(bufs), self.out_avals))
    if nan_checks.enabled:
      nan_checks.check_sharded(outs)
    return xla.relaid_results(outs, self.relaid) if self.relaid else outs


_calls = LRUCache()


def _in_shardings(mesh, sigs) -> list:
  """Each argument's layout: its own (a NamedSharding, over the program's mesh: one over
  another mesh of the same devices is the same layout named with this mesh's axes), else
  copied to every device."""
  replicated = sharding_lib.NamedSharding(mesh, sharding_lib.PartitionSpec())
  out = []
  for s in sigs:
    if type(s) is tuple and isinstance(s[1], sharding_lib.NamedSharding):
      own = _concrete(s[1])
      out.append(sharding_lib.onto_mesh(own, mesh) or own)
    else:
      out.append(replicated)
  return out


def _concrete(sharding):
  """A NamedSharding over a concrete mesh (one over an AbstractMesh, as a
  ``ShapeDtypeStruct`` may give, over the mesh that realizes it)."""
  if isinstance(sharding.mesh, sharding_lib.AbstractMesh):
    return sharding_lib.NamedSharding(sharding_lib.concrete_mesh_of(sharding.mesh),
                                      sharding.spec)
  return sharding


def _module_name(name: str) -> str:
  return name if name.startswith(("jit(", "pjit(")) else f"jit({name})"


def lower_partitioned(closed: ClosedJaxpr, sigs, name: str = "jit", donated_invars=(),
                      keep_unused: bool = False, platform: str | None = None,
                      result_shardings=None):
  """The partitioned module of ``closed`` (for ``Lowered``), or None when nothing in the
  arguments' signatures or in the jaxpr is sharded.

  As in JAX's text, only the arguments given a layout carry one, and the results carry
  ``result_shardings`` (per result, None for none: jit's ``out_shardings``); compiling goes
  through ``compile_partitioned``, which lays the other arguments out replicated."""
  mesh = program_mesh(closed, sigs)
  if mesh is None:
    # under ``use_abstract_mesh`` (as JAX): a program over that mesh's devices
    abstract = sharding_lib.context_abstract_mesh()
    if abstract is None or abstract.empty or abstract.size == 1:
      return None
    mesh = sharding_lib.concrete_mesh_of(abstract)
  if result_shardings is not None:
    result_shardings = [s if not isinstance(s, sharding_lib.NamedSharding)
                        else sharding_lib.onto_mesh(_concrete(s), mesh) or _concrete(s)
                        for s in result_shardings]
  lowered = xla.lower_jaxpr_to_module(closed, _module_name(name), donated_invars, keep_unused,
                                      mesh=mesh, arg_shardings=_in_shardings(mesh, sigs),
                                      platform=platform,
                                      result_layouts_known=_known_results(closed, mesh),
                                      result_shardings=result_shardings,
                                      annotated_args=[type(s) is tuple and _is_sharding(s[1])
                                                      for s in sigs])
  lowered.partitioned = (closed, tuple(sigs))
  return lowered


def compile_partitioned(closed: ClosedJaxpr, sigs, name: str = "jit", donated_invars=(),
                        keep_unused: bool = False, out_shardings=None):
  """The (cached) PartitionedCall of ``closed`` for arguments with these signatures, or
  None when nothing in them or in the jaxpr is sharded."""
  mesh = program_mesh(closed, sigs)
  if mesh is None:
    return None
  in_shardings = _in_shardings(mesh, sigs)
  if out_shardings is None:
    out_shardings = _typed_out_shardings(closed, mesh)
  lowered_out = out_shardings
  if out_shardings is not None:  # types over another view of the mesh: lowered over this one
    lowered_out = [s if not isinstance(s, sharding_lib.NamedSharding) else
                   sharding_lib.onto_mesh(s, mesh) for s in out_shardings]
  key = (closed, tuple(in_shardings), tuple(donated_invars), keep_unused,
         None if out_shardings is None else tuple(out_shardings))
  call = _calls.get(key)
  if call is None:
    call = PartitionedCall(closed, in_shardings, mesh, _module_name(name), donated_invars,
                           keep_unused, lowered_out, reported=out_shardings)
    _calls.put(key, call)
  return call


def _known_results(closed: ClosedJaxpr, mesh) -> list:
  """``_constrained_results`` with the types' layouts where no constraint fixes one."""
  typed = _typed_out_shardings(closed, mesh) or [None] * len(closed.jaxpr.outvars)
  return [k if k is not None or t is None else (sharding_lib.onto_mesh(t, mesh) or t, False)
          for k, t in zip(_constrained_results(closed), typed)]


def _constrained_results(closed: ClosedJaxpr) -> list:
  """Each result's layout as ``xla.lower_jaxpr_to_module``'s ``result_layouts_known``:
  ``(sharding, True)`` where a sharding constraint fixes it (as jit's ``out_shardings``
  do), else None (XLA's partitioner picks it)."""
  producer = {}
  for eqn in closed.jaxpr.eqns:
    if eqn.primitive in constrains_result:
      s = sharding_params[eqn.primitive](eqn.params)
      # (a spec leaving dimensions or sums to XLA does not fix the layout)
      if (isinstance(s, sharding_lib.NamedSharding) and not s.spec.unreduced
          and not s.spec.reduced
          and sharding_lib.PartitionSpec.UNCONSTRAINED not in s.spec.partitions):
        producer[eqn.outvars[0]] = (sharding_lib.NamedSharding(
            sharding_lib.concrete_mesh_of(s.mesh), s.spec), True)
        continue
    for v in eqn.outvars:
      producer.pop(v, None)
  return [None if type(v) is Literal else producer.get(v) for v in closed.jaxpr.outvars]


def _from_hlo(hlo, mesh, ndim: int, in_shardings, in_avals):
  """A result's sharding from its layout: an argument's NamedSharding when the result is
  laid out as that argument of its rank is (as JAX reports it: ``x + 1`` keeps ``x``'s
  spec, size-1 mesh axes included), else the one ``from_hlo`` reads off."""
  for s, a in zip(in_shardings, in_avals):
    if (isinstance(s, sharding_lib.NamedSharding) and a.ndim == ndim
        and s.mesh._flat_devices_tuple == mesh._flat_devices_tuple
        and sharding_lib.same_layout(s.hlo(ndim), hlo, mesh.size)):
      return s
  return sharding_lib.from_hlo(hlo, mesh, ndim)


def _typed_out_shardings(closed: ClosedJaxpr, mesh):
  """Results whose types are split over Explicit mesh axes (``core/sharding_types.py``) are
  laid out as their types say, as in JAX; the others as XLA chooses (None when none is)."""
  splits = [getattr(v, "sharding", None) for v in closed.jaxpr.outvars]
  same = lambda s: (s is not None and s.mesh._flat_devices_tuple == mesh._flat_devices_tuple
                    and sharding_lib.axis_map(s.mesh, mesh) is not None)
  # over a mesh of Explicit axes only, an unsplit type is a replicated layout (as in JAX)
  explicit = bool(mesh.axis_types) and all(
      t == sharding_lib.AxisType.Explicit for t in mesh.axis_types)
  if not explicit and not any(map(same, splits)):
    return None
  replicated = lambda v: sharding_lib.NamedSharding(  # noqa: E731
      mesh, sharding_lib.PartitionSpec(*[None] * len(v.aval.shape)))
  return [sharding_lib.named_of_type(s) if same(s)
          else replicated(v) if s is None and explicit else None
          for v, s in zip(closed.jaxpr.outvars, splits)]


def _eager_partitioned(closed: ClosedJaxpr, sigs, name: str):
  """One primitive on sharded arrays: a partitioned program (the result stays sharded)."""
  if not any(type(s) is tuple and _is_sharding(s[1]) for s in sigs):
    return None
  return compile_partitioned(closed, sigs, name, keep_unused=True,
                             out_shardings=_eager_out_shardings(closed, sigs))


def _eager_out_shardings(closed: ClosedJaxpr, sigs):
  """Sharding in types, eagerly: the primitive's rule checks its operands' splits over
  Explicit mesh axes (raising ``ShardingTypeError`` as under ``jit``) and its results are
  laid out as the rule says. None when no operand is split over an Explicit axis."""
  splits = [sharding_types.of_named(s[1], s[0].ndim)
            if type(s) is tuple and isinstance(s[1], sharding_lib.NamedSharding) else None
            for s in sigs]
  if not any(s is not None for s in splits):
    return None
  outs = sharding_types.jaxpr_out_splits(closed.jaxpr, splits)
  if not any(s is not None for s in outs):
    return None
  return [None if s is None else sharding_lib.named_of_type(s) for s in outs]


xla.partitioned_compiler = _eager_partitioned
