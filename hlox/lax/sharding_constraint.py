"""``with_sharding_constraint``: tell XLA's partitioner how an intermediate value should be
laid out over the mesh (``sdy.sharding_constraint``). Numerically the identity.

Eagerly it lays the value out (``device_put``); inside ``jit`` it makes the program a
partitioned one over the constraint's mesh (``interpreters/partitioned.py``). Its JVP and
transpose constrain tangents and cotangents the same way; under ``vmap`` the batch
dimension is left unsplit.
"""
from __future__ import annotations

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core.primitive import Primitive
from hlox.interpreters import ad, batching, partitioned, xla
from hlox.runtime import sharding as sharding_lib
from hlox.runtime import layout as layout_lib
from hlox.lax.entry_layout import entry_layout_p
from hlox.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from hlox.core.tracer import Tracer, get_aval
from hlox.runtime.array import Array, device_put

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

__all__ = ["with_sharding_constraint", "sharding_constraint_p", "reshard_p", "apply_out_sharding",
           "constrain"]

sharding_constraint_p = Primitive("sharding_constraint")


class _Reshard(Primitive):
  """``reshard`` (and the constraints hlox adds itself: transposes' cotangents, device_put
  inside a trace): the same rules as ``sharding_constraint``; printed as JAX prints it, by
  name alone."""

  def params_for_printing(self, params):
    return {}


reshard_p = _Reshard("reshard")


def has_partial_axes(sharding) -> bool:
  """Whether ``sharding`` holds values unreduced (partial sums) over some mesh axes."""
  return isinstance(sharding, sharding_lib.NamedSharding) and bool(sharding.spec.unreduced)


def _impl(x, *, sharding):
  if has_partial_axes(sharding) or has_partial_axes(getattr(x, "sharding", None)):
    return _partial_sums_moved(x, sharding)
  return device_put(x, sharding)


def _partial_sums_moved(x, sharding):
  """Eagerly, to or from unreduced axes: partial sums are added up (all-reduced) or made
  (the value on one device along the axes, zeros on the others) by a program over the mesh,
  as JAX's ``device_put`` runs one; no host copy could say which device holds what."""
  x = device_put(x) if not isinstance(x, Array) else x  # a host value: on a device first
  aval = get_aval(x)
  source = sharding_types.split_of(x)
  target = sharding_types.of_named(sharding, aval.ndim)
  invar, outvar = Var(aval, source), Var(aval, target)
  jaxpr = Jaxpr([], [invar], [outvar], [JaxprEqn([invar], [outvar], reshard_p,
                                                 {"sharding": sharding})])
  call = partitioned.compile_partitioned(ClosedJaxpr(jaxpr, []), [x._sig], "reshard",
                                         keep_unused=True)
  return call([x])[0]




def _lowering(ctx, x, *, sharding):
  mesh = ctx.module_context.mesh
  if mesh is None or not isinstance(sharding, sharding_lib.NamedSharding):
    return x  # a one-device (or replicated-pmap) program: nothing to partition
  if sharding.mesh.shape_tuple != mesh.shape_tuple:  # (``use_abstract_mesh``'s other view)
    sharding = sharding_lib.onto_mesh(sharding, mesh)
  attr = ir.Attribute.parse(sharding.sdy_text(ctx.avals_in[0].ndim))
  return sdy.ShardingConstraintOp(x, attr).result



def _bind(x, sharding):
  """A constraint of ``x`` to ``sharding``. A traced value made a partial sum over axes it
  is not one over yet is first constrained closed without them (as JAX lowers it): XLA's
  partitioner would otherwise carry the partial-sum layout back to where the value was
  replicated and every device would hold all of it (the pieces would add up to a multiple
  of the value) instead of one device holding it and the others zeros."""
  if has_partial_axes(sharding) and isinstance(x, Tracer):
    source = sharding_types.split_of(x)
    had = source.unreduced if source is not None else frozenset()
    if sharding.spec.unreduced - had:
      x = reshard_p.bind(x, sharding=sharding_lib.NamedSharding(
          sharding.mesh, sharding.spec.update(unreduced=sharding.spec.unreduced & had)))
  return reshard_p.bind(x, sharding=sharding)


def _batch_rule(prim):
  def batch(vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    if d is batching.not_mapped or not isinstance(sharding, sharding_lib.NamedSharding):
      return prim.bind(x, sharding=sharding), d
    spec = list(sharding.spec.partitions) + [None] * max(0, x.ndim - 1 - len(sharding.spec))
    # The batch dimension keeps the split its type has (vmap over a split dimension).
    split = sharding_types.split_of(x)
    spec.insert(d, None if split is None or split.mesh != sharding.mesh
                else _entry(split.entries[d]))
    batched = sharding_lib.NamedSharding(sharding.mesh, sharding_lib.PartitionSpec(
        *spec, unreduced=sharding.spec.unreduced, reduced=sharding.spec.reduced))
    return prim.bind(x, sharding=batched), d
  return batch


def _entry(axes):
  return None if not axes else axes[0] if len(axes) == 1 else tuple(axes)


def _reshard_transpose(ct, x, *, sharding):
  """The cotangent of a reshard over Explicit axes goes back to the operand's type (its
  split, or unsplit), as JAX's; a constraint over Auto axes transposes to itself."""
  if not (isinstance(sharding, sharding_lib.NamedSharding)
          and sharding_types.explicit_axes(sharding.mesh)):
    return [reshard_p.bind(ct, sharding=sharding)]
  aval = x.aval
  typed = getattr(aval, "_sharding", None)
  split = sharding_types.split_of_named(typed, aval.ndim) if typed is not None else None
  entries = split.entries if split is not None and split.mesh == sharding.mesh else ()
  target = sharding_lib.NamedSharding(sharding.mesh, sharding_lib.PartitionSpec(
      *map(_entry, entries)))
  return [reshard_p.bind(ct, sharding=target)]


ad.deflinear(sharding_constraint_p, lambda ct, x, *, sharding: [
    sharding_constraint_p.bind(ct, sharding=sharding)])
ad.deflinear(reshard_p, _reshard_transpose)
for _p in (sharding_constraint_p, reshard_p):
  _p.def_abstract_eval(lambda aval, *, sharding: aval)
  _p.def_impl(_impl)
  partitioned.sharding_params[_p] = lambda params: params["sharding"]
  partitioned.constrains_result.add(_p)
  xla.register_lowering(_p, _lowering)
  batching.primitive_batchers[_p] = _batch_rule(_p)
  sharding_types.sharding_rules[_p] = sharding_types.constraint_rule
  sharding_types.sources.add(_p)
  sharding_types.constraints.add(_p)
del _p


def _resolve(s, ndim: int, name: str = "with_sharding_constraint"):
  if isinstance(s, sharding_lib.PartitionSpec) or s is None:
    mesh = sharding_lib.current_mesh()
    if mesh is None:
      raise ValueError(
          f"{name} was given a PartitionSpec {s!r} without a mesh: use a NamedSharding, "
          "or call inside `with mesh:` / `hlox.sharding.set_mesh(mesh)`")
    s = sharding_lib.NamedSharding(mesh, s if s is not None else sharding_lib.PartitionSpec())
  if not isinstance(s, sharding_lib.Sharding):
    raise TypeError(f"{name}: expected a Sharding or a PartitionSpec, got "
                    f"{s!r} of type {type(s).__name__}")
  if isinstance(s, sharding_lib.NamedSharding):
    s.check_rank(ndim, name)
    if sharding_types.explicit_axes(s.mesh):
      sharding_types.active[0] = True  # types may be split from here on: run the rules
  return s


def canonical_out_sharding(s):
  """``s`` as an ``out_sharding=`` argument means it: None for a NamedSharding over the empty
  mesh (what ``typeof(x).sharding`` is outside any mesh), which asks for no layout at all."""
  if isinstance(s, sharding_lib.NamedSharding) and s.mesh.empty:
    return None
  return s


def apply_out_sharding(x, out_sharding, name: str):
  """``x``, the result of operation ``name``, laid out as its ``out_sharding=`` asks (a
  ``Sharding``, or a ``PartitionSpec`` over the current mesh): a sharding constraint inside
  ``jit``, a transfer outside. ``None`` leaves ``x`` as it is.

  hlox lets XLA propagate every mesh axis (JAX's ``Auto`` mode), so this sets the layout
  and never changes a value.
  """
  out_sharding = canonical_out_sharding(out_sharding)
  if out_sharding is None:
    return x
  ndim = len(getattr(x, "shape", ()))
  # (no closed constraint first: an operation asked for partial sums computes them)
  out_sharding = trim_spec(out_sharding, ndim)
  return sharding_constraint_p.bind(x, sharding=_resolve(out_sharding, ndim, name))


def trim_spec(s, ndim: int):
  """``s`` (a PartitionSpec or NamedSharding) without the unsplit entries past ``ndim``
  (a type's spec may be longer than an operation's result is deep, as JAX allows for
  ``out_sharding=`` and ``reshard``)."""
  spec = s.spec if isinstance(s, sharding_lib.NamedSharding) else s
  if not isinstance(spec, sharding_lib.PartitionSpec) or len(spec) <= ndim or any(
      e is not None for e in spec.partitions[ndim:]):
    return s
  trimmed = sharding_lib.PartitionSpec(*spec.partitions[:ndim])
  if isinstance(s, sharding_lib.NamedSharding):
    return sharding_lib.NamedSharding(s.mesh, trimmed)
  return trimmed


def _per_leaf(x, shardings):
  leaves, tree = tree_util.tree_flatten(x)
  # None stands for a whole subtree (replicated over the mesh), as at the top level.
  is_leaf = lambda s: s is None or isinstance(s, (sharding_lib.Sharding,
                                                  sharding_lib.PartitionSpec))
  if is_leaf(shardings):
    per_leaf = [shardings] * len(leaves)
  else:
    per_leaf = tree_util.broadcast_prefix(shardings, x, is_leaf=is_leaf)
  resolved = [_resolve(s, len(getattr(leaf, "shape", ()))) for leaf, s in zip(leaves, per_leaf)]
  return leaves, tree, resolved


def constrain(x, shardings):
  """Every array in the pytree ``x`` laid out as ``shardings`` (one for all, or a tree
  prefix of ``x``), its type split as they say over Explicit axes: what ``reshard``,
  ``device_put`` under a trace and jit's ``in/out_shardings`` do."""
  leaves, tree, resolved = _per_leaf(x, shardings)
  return tree.unflatten([_bind(leaf, s) for leaf, s in zip(leaves, resolved)])


def with_sharding_constraint(x, shardings):
  """Constrains how the arrays of ``x`` are laid out across devices; values are unchanged.

  ``shardings`` is one ``Sharding`` or ``PartitionSpec`` for every array, or a tree prefix of
  ``x`` giving one per subtree; a bare ``PartitionSpec`` needs a mesh in effect (``with
  mesh:`` or ``hlox.sharding.set_mesh``), else ``ValueError``. As in JAX it never changes a
  type: where every axis of the mesh in effect is Explicit it only checks that each array is
  split as asked (an ``AssertionError`` otherwise), and elsewhere its specs may name only
  Auto axes (``reshard`` changes types). A ``Format`` (``hlox.experimental.layout``)
  constrains the sharding to its own and, for a result of the jitted program, the layout
  too. Transparent to ``grad`` and ``vmap``.

  Args:
    x: array or pytree of arrays.
    shardings: a ``Sharding``, ``PartitionSpec`` or ``Format``, or a tree prefix of ``x`` of
      them.

  Returns:
    ``x``, with the same values.

  Examples:
    >>> from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P
    >>> mesh = Mesh(np.array(hlox.devices()[:1]), ('x',))
    >>> hlox.jit(lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P('x'))))(
    ...     jnp.ones(2))
    Array([2., 2.], dtype=float32)
  """
  if isinstance(shardings, layout_lib.Format):
    out = with_sharding_constraint(x, shardings.sharding)
    if not isinstance(shardings.layout, layout_lib.Layout):
      return out
    return tree_util.tree_map(
        lambda leaf: with_layout_constraint(leaf, shardings.layout), out)
  leaves, tree, resolved = _per_leaf(x, shardings)
  for s in resolved:
    if isinstance(s, sharding_lib.NamedSharding) and s.mesh.empty:
      # (JAX refuses it here, though it means "no layout" as an ``out_sharding=``)
      raise ValueError(f"One of shardings leaf specifications got an empty NamedSharding: "
                       f"{s} which is not allowed.")
  context = sharding_lib.get_abstract_mesh()
  all_explicit = bool(context.axis_types) and all(
      t == sharding_lib.AxisType.Explicit for t in context.axis_types)
  out = []
  for leaf, s in zip(leaves, resolved):
    if all_explicit and isinstance(s, sharding_lib.NamedSharding):
      _assert_split_as(leaf, s)
      out.append(leaf)
    else:
      _check_auto_only(s)
      if _type_spec(leaf, len(getattr(leaf, "shape", ()))) != sharding_lib.PartitionSpec(
          *[None] * len(getattr(leaf, "shape", ()))):
        out.append(leaf)  # split by its type, which a constraint over Auto axes keeps
      else:
        out.append(sharding_constraint_p.bind(leaf, sharding=s))
  return tree.unflatten(out)


def _type_spec(leaf, ndim: int) -> sharding_lib.PartitionSpec:
  """The spec of ``leaf``'s type (how it is split over Explicit axes)."""
  split = getattr(leaf, "type_sharding", None)
  if split is None and isinstance(getattr(leaf, "sharding", None), sharding_lib.NamedSharding):
    split = sharding_types.of_named(leaf.sharding, ndim)
  if split is None:
    return sharding_lib.PartitionSpec(*[None] * ndim)
  return sharding_lib.named_of_type(split).spec


def _assert_split_as(leaf, s) -> None:
  ndim = len(getattr(leaf, "shape", ()))
  have = _type_spec(leaf, ndim)
  asked = [None if e is sharding_lib.PartitionSpec.UNCONSTRAINED else e
           for e in s.spec.partitions]
  asked = sharding_lib.PartitionSpec(*asked, *[None] * (ndim - len(asked)))
  if sharding_types.drop_size_one_axes():  # compared as types are: size-1 axes left out
    split = sharding_types.of_named(sharding_lib.NamedSharding(s.mesh, asked), ndim)
    asked = (sharding_lib.named_of_type(split).spec if split is not None
             else sharding_lib.PartitionSpec(*[None] * ndim))
  for d in range(ndim):
    if have.axes_of(d) != asked.axes_of(d):
      raise AssertionError(
          "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
          f"`Explicit`. The array sharding: {have} did not match the sharding provided: "
          f"{asked}. Please use `hlox.sharding.reshard` to shard your input to the sharding "
          "you want.")


def _check_auto_only(s) -> None:
  if not isinstance(s, sharding_lib.NamedSharding):
    return
  types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
  if any(types[a] != sharding_lib.AxisType.Auto
         for d in range(len(s.spec)) for a in s.spec.axes_of(d)):
    raise ValueError(
        "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto "
        f"axes of the mesh. Got spec={s.spec} and mesh={s.mesh.abstract_mesh!r}. You "
        "probably meant to use `reshard` API?")


sharding_types.constrain = lambda x, split: _bind(x, sharding_lib.named_of_type(split))


def with_layout_constraint(x, layout):
  """``x`` (an array) whose device-local layout is ``layout`` (a ``Layout``) where it leaves
  the jitted program as a result; a value used only inside the program is laid out as XLA
  chooses (no result depends on it)."""
  if not isinstance(layout, layout_lib.Layout):
    raise TypeError("with_layout_constraint expects a `Layout` (not `Layout.AUTO` or a "
                    f"`Format`); got {layout!r} of type {type(layout)}")
  layout.check_compatible_aval(get_aval(x).shape)
  return entry_layout_p.bind(x, mode=layout_lib.layout_mode(layout, len(get_aval(x).shape)),
                             role="out")
