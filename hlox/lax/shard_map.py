"""``shard_map``: per-device code over a mesh. ``f`` sees each device's block of the
arguments (split as ``in_specs`` say) and returns blocks that ``out_specs`` put together;
collectives (``psum``, ``all_gather``, ``ppermute``, ``axis_index``...) act along the mesh's
axis names.

``shard_map_p`` carries the body traced on the blocks' (local) types. It lowers to Shardy's
``sdy.manual_computation`` in a program partitioned over the mesh (eagerly it runs as one),
its collectives across the program's partitions.

With ``check_vma`` (the default) the body's values carry in their types the manual axes
they vary along (``core/vma.py``; ``pvary`` and ``psum_invariant`` in ``lax/varying.py``):
an output varying along an axis its out_spec leaves out is JAX's error, and autodiff needs
nothing more (a transposed ``pvary`` sums cotangents, a transposed ``psum`` is a ``pvary``).
Without it, autodiff follows JAX's unchecked shard_map: the transpose divides the
cotangent of an output by the number of devices that hold copies of each of its blocks
(the mesh axes its spec leaves out), transposes the body per device, and sums an input's
cotangent over the axes its spec leaves out (every such device used the same block).
Partial evaluation passes the body's residuals between the known and unknown halves as one
block per device, stacked along a new leading dimension split over the mesh axes it may
vary along (all of them without check_vma).
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable

from hlox import _tree_transform as tree_util
from hlox.core import sharding_types
from hlox.core import vma as vma_lib
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import ClosedJaxpr, convert_constvars, eval_jaxpr, trace_to_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.tracer import (Tracer, current_trace, eval_trace, extend_axis_env, get_aval,
                              set_current_trace)
from hlox.core.refs import AbstractRef, is_ref_aval
from hlox.interpreters import ad, batching, partitioned, state_discharge, xla
from hlox.interpreters import partial_eval as pe
from hlox.lax.base import full_like, reshape
from hlox.lax.elementwise import div, eq, select_n
from hlox.lax import shard_map_eager, shard_map_types
from hlox.lax.parallel import axis_index
from hlox.lax.parallel import psum
from hlox.lax import varying
from hlox.lax.varying import pvary_p
from hlox.runtime import sharding as sharding_lib

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

__all__ = ["shard_map", "shard_map_p", "pcast", "pvary", "pbroadcast"]

P = sharding_lib.PartitionSpec


class _ShardMap(Primitive):
  multiple_results = True

  def params_for_printing(self, params):
    """As JAX prints them: the manual axes as ``newly_manual_axes=frozenset({...})``."""
    shown = {k: v for k, v in params.items() if k != "manual_axes"}
    shown["newly_manual_axes"] = _AxisSet(params["manual_axes"])
    return dict(sorted(shown.items()))


class _AxisSet(tuple):
  """Axis names printed as the frozenset JAX holds (in the mesh's order, to be stable)."""

  def __str__(self):
    return f"frozenset({{{', '.join(repr(a) for a in self)}}})" if self else "frozenset()"


shard_map_p = _ShardMap("shard_map")


# --- specs and block types ---------------------------------------------------------------

def _split_count(mesh, spec, dim: int) -> int:
  return math.prod(mesh.shape[a] for a in spec.axes_of(dim))


def _unmentioned(manual_axes, spec) -> tuple:
  """The manual axes ``spec`` does not split along: every device along them holds the same
  block."""
  used = {a for d in range(len(spec)) for a in spec.axes_of(d)}
  return tuple(a for a in manual_axes if a not in used)


def _local_aval(aval, mesh, spec, what: str):
  if is_ref_aval(aval):  # a reference: the body sees one to its block
    return AbstractRef(_local_aval(aval.inner_aval, mesh, spec, what))
  shape = list(aval.shape)
  if len(spec) > len(shape):
    raise ValueError(f"shard_map: {what} has rank {len(shape)} but its spec {spec} names "
                     f"{len(spec)} dimensions")
  for d in range(len(shape)):
    count = _split_count(mesh, spec, d)
    if shape[d] % count:
      raise ValueError(
          f"shard_map: {what} of shape {tuple(aval.shape)} has dimension {d} of size "
          f"{shape[d]}, not divisible by {count}, the product of the mesh axes "
          f"{spec.axes_of(d)} its spec {spec} splits it over (mesh {mesh})")
    shape[d] //= count
  return aval.update(shape=tuple(shape))


def _global_aval(aval, mesh, spec, manual_axes=()):
  if is_ref_aval(aval):
    return AbstractRef(_global_aval(aval.inner_aval, mesh, spec, manual_axes))
  shape = [n * _split_count(mesh, spec, d) for d, n in enumerate(aval.shape)]
  # The body's manual axes stay inside it (an enclosing body's remain).
  return aval.update(shape=tuple(shape),
                     vma=tuple(a for a in aval._vma if a not in manual_axes),
                     unreduced=aval.unreduced - set(manual_axes),
                     reduced=aval.reduced - set(manual_axes))


def _check_spec(mesh, manual_axes, spec, what: str):
  if not isinstance(spec, P):
    raise TypeError(f"shard_map: {what} must be a PartitionSpec, got {spec!r}")
  for d in range(len(spec)):
    for a in spec.axes_of(d):
      if a not in mesh.shape:
        raise ValueError(f"shard_map: {what} {spec} names the axis {a!r}, which is not in "
                         f"the mesh {mesh} (axes {mesh.axis_names})")
      if a not in manual_axes:
        raise ValueError(f"shard_map: {what} {spec} names the axis {a!r}, which is not one "
                         f"of the manual axes axis_names={set(manual_axes)}: specs may "
                         "only split over those")


def _is_spec(s) -> bool:
  return isinstance(s, P) or s is None


def _flat_specs(specs, value, what: str, of: str, tree) -> list:
  """One PartitionSpec per leaf of ``value`` from ``specs`` (one spec for all, or a tree
  prefix of ``value``; None stands for P())."""
  if isinstance(specs, P):
    return [specs] * tree.num_leaves
  try:
    flat = tree_util.broadcast_prefix(specs, value, is_leaf=_is_spec)
  except (ValueError, TypeError):
    raise ValueError(f"{what} {specs!r} must be a tree prefix of the {of} (of structure "
                     f"{tree})") from None
  return [P() if s is None else s for s in flat]


def _spec_of(x, mesh, manual_axes):
  """An argument's own layout over ``mesh`` along the manual axes, as a spec (P() when it
  has none there)."""
  split = getattr(x, "type_sharding", None)  # a traced value split over Explicit axes
  if split is None and not isinstance(x, Tracer) and _type_split(x) is not None:
    if _type_split(x).mesh == mesh:
      shard_map_types.check_manual_major(_type_split(x), manual_axes)
  if split is not None:
    if split.mesh != mesh:
      return P()
    shard_map_types.check_manual_major(split, manual_axes)
    return P(*[None if e is None or not (kept := tuple(a for a in e if a in manual_axes))
               else kept[0] if len(kept) == 1 else kept for e in split.entries],
             unreduced=split.unreduced & set(manual_axes),
             reduced=split.reduced & set(manual_axes))
  s = getattr(x, "sharding", None)  # other traced values have none (AttributeError)
  if not (isinstance(s, sharding_lib.NamedSharding) and s.mesh == mesh):
    return P()
  entries = []
  for d in range(len(s.spec)):
    kept = tuple(a for a in s.spec.axes_of(d) if a in manual_axes)
    entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
  return P(*entries, unreduced=s.spec.unreduced & set(manual_axes),
           reduced=s.spec.reduced & set(manual_axes))


@contextlib.contextmanager
def _mesh_axes(mesh, manual_axes):
  """Binds the manual axes' names (the body's collectives may name only those) and makes
  them Manual in the mesh in effect (``shard_map_types``)."""
  with contextlib.ExitStack() as stack:
    stack.enter_context(shard_map_types.manual_mesh(mesh, manual_axes))
    for name in manual_axes:
      stack.enter_context(extend_axis_env(name, mesh.shape[name]))
    yield


def _trace_body(fun: Callable, local_avals, mesh, manual_axes, name: str,
                check_vma: bool = False, in_specs=None, out_specs=None, in_splits=None):
  """The body traced on blocks of ``local_avals`` (split over the mesh's other Explicit
  axes as ``in_splits`` say). With ``check_vma`` its values' types say along which manual
  axes they vary (``core/vma.py``): the inputs along those their ``in_specs`` split over
  (else as ``local_avals`` say), and the outputs are ``pvary``-ed to the axes of
  ``out_specs`` (as JAX's, so that transposes sum what the specs split)."""
  if check_vma and out_specs is not None:
    fun = _outputs_like_specs(fun, out_specs, manual_axes)
  with _body_context(mesh, manual_axes, check_vma):
    if check_vma and in_specs is not None:  # (typed in the body: size-1 axes left out)
      local_avals = [_block_type(a, s, manual_axes) for a, s in zip(local_avals, in_specs)]
    closed = trace_to_jaxpr(fun, list(local_avals), f"shard_map {name}", "shard_map",
                            in_shardings=in_splits)
  return convert_constvars(closed)


# --- which values vary across devices (check_vma) ---------------------------------------

@contextlib.contextmanager
def _body_context(mesh, manual_axes, check_vma: bool):
  """The manual axes bound, and the body's values typed with their vma (or not at all);
  the manual axes of an enclosing check_vma body stay manual in a nested one."""
  if check_vma:
    inner = set(manual_axes) | set(vma_lib.manual_axes())
    axes = [a for a in mesh.axis_names if a in inner]
    axes += [a for a in inner if a not in mesh.shape]  # (a vmap's, say)
    types = vma_lib.tracking(axes, [a for a in axes if mesh.shape.get(a) == 1])
  with _mesh_axes(mesh, manual_axes), (types if check_vma else vma_lib.suspended()):
    yield


def _block_type(aval, spec, manual_axes):
  """A block's type: varying along the manual axes ``spec`` splits over (and, in a nested
  body, those along which the argument varies in the enclosing one)."""
  if is_ref_aval(aval):
    return AbstractRef(_block_type(aval.inner_aval, spec, manual_axes))
  vma = aval.vma | (_used_axes(spec) & set(manual_axes))
  return vma_lib.typed(aval.update(vma=()), vma).update(
      unreduced=aval.unreduced | (spec.unreduced & set(manual_axes)),
      reduced=aval.reduced | (spec.reduced & set(manual_axes)))


def _outputs_like_specs(fun, out_specs, manual_axes):
  def fun_out(*xs):
    return _match_out_vma(fun(*xs), out_specs, manual_axes)
  return fun_out


def _match_out_vma(outs, specs, manual_axes) -> list:
  """Outputs ``pvary``-ed along the manual axes their specs split over that they do not
  vary along yet, and cast to partial sums along those their specs say are unreduced
  (as JAX's)."""
  result = []
  for o, spec in zip(outs, specs):
    used = _used_axes(spec)
    missing = tuple(a for a in manual_axes if a in used and a not in get_aval(o).vma
                    and a not in vma_lib.dropped())
    o = pvary_p.bind(o, axes=missing) if missing else o
    unreduced = spec.unreduced & set(manual_axes)
    if unreduced - get_aval(o).unreduced:
      o = varying.vary_unreduced_cast(o, tuple(unreduced - get_aval(o).unreduced))
    result.append(o)
  return result


def _check_out_partial(outs, specs):
  """JAX's error for an output whose unreduced or reduced axes differ from its out_spec's."""
  for o, spec in zip(outs, specs):
    aval = get_aval(o)
    for kind in ("unreduced", "reduced"):
      if getattr(spec, kind) != getattr(aval, kind):
        raise ValueError(
            f"out_specs passed to shard_map should be equal to the {kind} present on the "
            f"out_aval. Got out_specs={spec} and out_aval={aval.str_short(True)}")


def _check_out_vma(name, mesh, manual_axes, outs, out_specs, spec_keys):
  """JAX's error for an output varying along a manual axis its out_spec leaves out."""
  fails = []
  for o, key, spec in zip(outs, spec_keys, out_specs):
    aval = get_aval(o)
    # (as JAX: unreduced or reduced along an axis is not the same on every device there)
    vary = aval.vma | (aval.unreduced - spec.unreduced) | (aval.reduced - spec.reduced)
    if any(a in vary for a in _unmentioned(manual_axes, spec)):
      fails.append((key, spec, vary))
  if fails:
    raise ValueError(_replication_message(name, mesh, fails))


def _replication_message(name, mesh, fails) -> str:
  """JAX's message for outputs that ``out_specs`` say are the same along mesh axes they
  may vary along; ``fails`` holds ``(key of the spec in out_specs, spec, varying axes)``."""
  in_order = lambda axes: ",".join(str(a) for a in mesh.axis_names if a in axes)
  msgs = []
  for key, spec, vary in fails:
    unmentioned = _unmentioned(mesh.axis_names, spec)
    if len(unmentioned) > 1:
      msgs.append(
          f"* out_specs{key} is {spec} which implies that the corresponding output value "
          f"is only varying across mesh axes {{{in_order(_used_axes(spec))}}} and not "
          f"{{{in_order([a for a in unmentioned if a in vary])}}}, but it was inferred to "
          f"be possibly varying over {{{in_order(vary)}}}")
    else:
      msgs.append(
          f"* out_specs{key} is {spec} which implies that the corresponding output value "
          f"is replicated across mesh axis '{unmentioned[0]}', but could not infer "
          "replication over any axes")
  if len(msgs) == 1:
    msgs = [msgs[0][2:]]  # as JAX: no bullet for a single problem
  return (f"shard_map applied to the function '{name}' was given out_specs which require "
          "replication which can't be statically inferred given the mesh:\n\nThe mesh "
          f"given has shape {tuple(mesh.shape.values())} with corresponding axis names "
          f"{mesh.axis_names}.\n\n" + "\n\n".join(msgs) + "\n\nCheck if these output "
          "values are meant to be replicated over those mesh axes. If not, consider "
          "revising the corresponding out_specs entries. If so, consider disabling the "
          "check by passing the check_vma=False argument to `jax.shard_map`.")


def _used_axes(spec) -> set:
  return {a for d in range(len(spec)) for a in spec.axes_of(d)}


def _spec_keys(out_specs, out, n: int) -> list:
  """Per output leaf, the path (``keystr``) of its spec within ``out_specs``."""
  if isinstance(out_specs, P):
    return [""] * n
  keyed = tree_util.tree_map_with_path(lambda p, s: tree_util.keystr(p), out_specs,
                                       is_leaf=_is_spec)
  try:
    return list(tree_util.broadcast_prefix(keyed, out, is_leaf=lambda x: x is None))
  except (ValueError, TypeError):
    return [""] * n


# --- marking values varying, broadcasting one device's ----------------------------------

_PCAST_TO = ("unreduced", "reduced", "varying")


def pcast(x, axis_name, *, to: str):
  """Casts ``x`` between the varying-across-devices states along ``axis_name``.

  In a ``shard_map`` body with ``check_vma``, ``to='varying'`` declares an invariant value
  varying along the axes (a ``pvary``, the identity on values); ``'reduced'`` and
  ``'unreduced'`` cast to those states. Elsewhere (no check, or outside ``shard_map``) the
  value is returned as it is. An unknown ``to`` raises ``ValueError``; a set of names
  ``TypeError``.

  Args:
    x: array or pytree of arrays.
    axis_name: an axis name or a tuple of names.
    to: keyword-only; ``'varying'``, ``'reduced'`` or ``'unreduced'``.

  Returns:
    ``x``, with its type cast.

  Examples:
    >>> lax.pcast(jnp.ones(2), 'i', to='varying')  # outside shard_map: unchanged
    Array([1., 1.], dtype=float32)
  """
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name} must be a tuple or a str. Got {axis_name}")
  if to not in _PCAST_TO:
    raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}")
  names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
  if not names:
    return x
  def leaf(v):
    if to == "varying" and (isinstance(v, shard_map_eager.ShardMapTracer)
                            or not vma_lib.active[0]):
      return _mark_varying(v, names)  # (an eager body's values record it)
    return _pcast_leaf(v, names, to) if vma_lib.active[0] else v
  return tree_util.tree_map(leaf, x)


def _pcast_leaf(x, names, to: str):
  """A cast between the states a value may be in along manual axes (JAX's four)."""
  frm = varying.state_of(get_aval(x), names, "jax.lax.pcast")
  if (frm, to) == ("invarying", "varying"):
    return _bind_pvary(x, names)
  cast = {("invarying", "reduced"): varying.preduced,
          ("varying", "unreduced"): varying.vary_unreduced_cast,
          ("reduced", "varying"): varying.reduced_vary_cast}.get((frm, to))
  if cast is None:
    raise ValueError(f"Unsupported pcast from={frm}, to={to!r}")
  return cast(x, names)


def _mark_varying(x, names):
  if isinstance(x, shard_map_eager.ShardMapTracer):
    return shard_map_eager.ShardMapTracer(x._trace, x.val, x.vma | set(names))
  if vma_lib.active[0]:
    return _bind_pvary(x, names)
  return x


def _bind_pvary(x, names):
  """``pvary`` in a traced check_vma body, with JAX's errors."""
  manual = vma_lib.manual_axes()
  for a in names:
    if a not in manual:  # JAX asserts it
      raise AssertionError(f"pcast: axis {a!r} is not a manual axis of the enclosing "
                           f"shard_map (its manual axes: {manual})")
  names = tuple(a for a in names if a not in vma_lib.dropped())
  if not names:  # only axes of size 1 (config.remove_size_one_mesh_axis_from_type)
    return x
  aval = get_aval(x)
  have = [a for a in names if a in aval.vma]
  if have and len(have) == len(names):
    raise ValueError("Unsupported pcast from=varying, to='varying'")
  if have:
    raise ValueError(
        "jax.lax.pcast can only accept axis_name which corresponds to one of varying, "
        f"unreduced, reduced or invarying state of the input. Got input type: {aval}, "
        f"axes: {tuple(names)} and input state: {{'varying', 'invarying'}}")
  return pvary_p.bind(x, axes=tuple(names))


def pvary(x, axis_name):
  """``pcast(x, axis_name, to='varying')``."""
  return pcast(x, axis_name, to="varying")


def pbroadcast(x, axis_name, source):
  """Gives every position along ``axis_name`` the value held at position ``source``.

  Works under any binding of the axis name (``vmap``, ``pmap``, ``shard_map``); implemented as
  a masked ``psum``. ``x`` may be a pytree.

  Args:
    x: array or pytree of arrays.
    axis_name: a mapped axis name.
    source: the position whose value is broadcast.

  Returns:
    ``source``'s value, at every position.

  Examples:
    >>> hlox.vmap(lambda v: lax.pbroadcast(v, 'i', 1), axis_name='i')(jnp.array([5, 6, 7]))
    Array([6, 6, 6], dtype=int32)
  """
  def leaf(v):
    keep = eq(axis_index(axis_name), full_like(axis_index(axis_name), source))
    return psum(select_n(keep, full_like(v, 0), v), axis_name)
  return tree_util.tree_map(leaf, x)


# --- the user's function -----------------------------------------------------------------

def shard_map(f: Callable | None = None, *, mesh=None, in_specs=None, out_specs,
              check_vma: bool = True, check_rep: bool | None = None, axis_names=None):
  """Map ``f`` over the blocks of its arguments on ``mesh``'s devices.

  Args:
    f: the per-device function (of blocks, returning blocks).
    mesh: the ``Mesh`` (default: the current one, from ``set_mesh``).
    in_specs: a ``PartitionSpec`` per argument (a tree prefix of the arguments): which
      mesh axes split each dimension. Unnamed axes give every device the same block.
      None: each argument as it is laid out over the mesh (else whole on every device).
    out_specs: a tree prefix of ``f``'s outputs, likewise, saying how the blocks join.
    check_vma: check that an output ``out_specs`` says is the same on every device along an
      axis it leaves out cannot differ along it (a conservative analysis of the body, as
      JAX's; a ``ValueError`` if it can). ``check_rep`` is its old name.
    axis_names: the mesh axes ``f`` is manual over (a set; default all of them). Over the
      others the body is ordinary global code that XLA partitions (specs may not name
      them, and collectives may not run over them).

  Returns:
    The mapped function, taking and returning global arrays (a decorator when ``f`` is
    None).

  Examples:
    >>> from hlox.sharding import PartitionSpec as P, AxisType
    >>> mesh = hlox.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
    >>> f = hlox.shard_map(lambda b: lax.psum(b.sum(), "x"), mesh=mesh, in_specs=P("x"),
    ...                    out_specs=P())
    >>> f(jnp.arange(4.))
    Array(6., dtype=float32)
  """
  if f is None:
    return lambda g: shard_map(g, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                               check_vma=check_vma, check_rep=check_rep,
                               axis_names=axis_names)
  given_mesh = mesh
  if mesh is not None and not isinstance(mesh, sharding_lib.Mesh):
    raise TypeError(f"shard_map: mesh must be a Mesh, got {type(mesh).__name__}")
  name = getattr(f, "__name__", "f")

  def mapped(*args):
    mesh = given_mesh if given_mesh is not None else sharding_lib.current_mesh()
    if mesh is None:  # as JAX: the mesh current when the function is called
      raise ValueError("The context mesh cannot be empty. Use `hlox.set_mesh(mesh)` to "
                       "enter into a mesh context (shard_map was given no mesh)")
    mesh = shard_map_types.in_context(mesh)
    leaves, in_tree = tree_util.tree_flatten(args)
    # As JAX: Explicit axes a vmap maps over are not the body's to go manual over.
    vmapped = shard_map_types.vmapped_axes(leaves)
    manual_axes = _manual_axes(mesh, axis_names, vmapped)
    if in_specs is None:
      flat_in = [_spec_of(x, mesh, manual_axes) for x in leaves]
    else:
      specs = tuple(in_specs) if isinstance(in_specs, list) else in_specs
      flat_in = _flat_specs(specs if isinstance(specs, (tuple, P)) else (specs,), args,
                            f"shard_map {name}: in_specs", "arguments", in_tree)
    avals = []
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(args)[0]]
    for i, (x, s, path) in enumerate(zip(leaves, flat_in, paths)):
      _check_spec(mesh, manual_axes, s, f"in_specs for args{path}")
      avals.append(_local_aval(get_aval(x), mesh, s, f"argument args{path}"))
    _check_against_types(mesh, manual_axes, leaves, flat_in, in_specs is None, vmapped)
    out_tree_box = []

    def flat_fun(*xs):
      out = f(*tree_util.tree_unflatten(in_tree, xs))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_tree_box.append((out, out_tree))
      return out_leaves
    checked = check_vma and (check_rep is None or check_rep)
    if _eager(leaves) and not shard_map_types.explicit_rest(mesh, manual_axes):
      with shard_map_types.manual_mesh(mesh, manual_axes):
        outs = shard_map_eager.run(flat_fun, leaves, mesh, manual_axes, flat_in, checked,
                                   current_trace())
      out, out_tree = out_tree_box[0]
      flat_out = _out_specs(name, mesh, manual_axes, out_specs, out, out_tree,
                            [get_aval(v).ndim - len(manual_axes) for v, _ in outs])
      return out_tree.unflatten(_eager_results(mesh, manual_axes, outs, flat_out, checked))

    def typed_fun(*xs):  # check_vma: the outputs' types against out_specs (as JAX)
      outs = flat_fun(*xs)
      out, out_tree = out_tree_box[-1]
      flat_out = _out_specs(name, mesh, manual_axes, out_specs, out, out_tree,
                            [get_aval(o).ndim for o in outs])
      outs = _match_out_vma(outs, flat_out, manual_axes)
      _check_out_vma(name, mesh, manual_axes, outs, flat_out,
                     _spec_keys(out_specs, out, len(flat_out)))
      _check_out_partial(outs, flat_out)
      return outs
    splits = [shard_map_types.body_in_split(_type_split(x), mesh, manual_axes, a.ndim)
              for x, a in zip(leaves, avals)]
    body, consts = _trace_body(typed_fun if checked else flat_fun, avals, mesh, manual_axes,
                               name, checked, flat_in,
                               in_splits=splits if any(s is not None for s in splits) else None)
    out, out_tree = out_tree_box[0]
    flat_out = _out_specs(name, mesh, manual_axes, out_specs, out, out_tree,
                          [a.ndim for a in body.out_avals])
    all_in = (P(),) * len(consts) + tuple(flat_in)
    outs = shard_map_p.bind(*consts, *leaves, jaxpr=body,
                            **_params(mesh, manual_axes, all_in, flat_out, check_vma))
    return out_tree.unflatten(outs)
  return mapped


def _out_specs(name, mesh, manual_axes, out_specs, out, out_tree, ranks) -> list:
  """One checked spec per output leaf (of rank ``ranks[i]`` in the body)."""
  flat_out = _flat_specs(out_specs, out, f"shard_map {name}: out_specs", "outputs",
                         out_tree)
  out_paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(out)[0]]
  for s, ndim, path in zip(flat_out, ranks, out_paths):
    _check_spec(mesh, manual_axes, s, f"out_specs for output{path}")
    if len(s) > ndim:
      raise ValueError(f"shard_map {name}: output{path} has rank {ndim} but its "
                       f"out_spec {s} names {len(s)} dimensions")
  return flat_out


def _eager(leaves) -> bool:
  """Whether a call runs eagerly: outside any transformation, on concrete arguments."""
  return current_trace() is eval_trace and not any(isinstance(x, Tracer) for x in leaves)


def _eager_results(mesh, manual_axes, outs, flat_out, checked) -> list:
  results = []
  for (stack, vma), spec in zip(outs, flat_out):
    if checked and any(a in vma for a in _unmentioned(manual_axes, spec)):
      # As JAX, whose eager path reports it from the helper joining the blocks.
      raise ValueError(_replication_message("_rem_singleton", mesh, [("", spec, vma)]))
    results.append(shard_map_eager.join(stack, mesh, manual_axes, spec))
  return results


def _check_against_types(mesh, manual_axes, leaves, flat_in, inferred: bool,
                         vmapped=()):
  """As JAX: over a mesh all of whose axes are manual and Explicit (but those a vmap maps
  over), the arguments' (per-example) types already say how they are split, and explicit
  ``in_specs`` must agree with them."""
  rest = set(mesh.axis_names) - set(vmapped)  # (an enclosing shard_map's axes count)
  if inferred or set(manual_axes) != rest:
    return
  if not all(t == sharding_lib.AxisType.Explicit for a, t in zip(mesh.axis_names,
                                                                 mesh.axis_types)
             if a in rest):
    return
  for x, spec in zip(leaves, flat_in):
    aval = get_aval(x)
    want = P(*spec.partitions, *[None] * (aval.ndim - len(spec)), unreduced=spec.unreduced,
             reduced=spec.reduced)
    if sharding_types.drop_size_one_axes():  # as types, specs leave size-1 axes out
      want = _without_size_one_axes(want, mesh)
    split = _type_split(x)
    have = P(*[None if e is None else e[0] if len(e) == 1 else e for e in split.entries],
             unreduced=split.unreduced, reduced=split.reduced) \
        if split is not None and split.mesh == mesh else P(*[None] * aval.ndim)
    if _normal(want) != _normal(have):
      typ = aval if split is None else aval.update(
          sharding=sharding_lib.named_of_type(split))
      raise ValueError(
          f"in_specs passed to shard_map: {want} does not match the specs of the input: "
          f"{have} for arg: {typ}. `in_specs` is an optional argument so you can omit "
          "specifying it and shard_map will infer the in_specs from the arguments. If you "
          "want to reshard your inputs, you can use `jax.reshard` on the arguments and "
          "then pass those args to shard_map.")


def _without_size_one_axes(spec, mesh):
  kept = lambda axes: tuple(a for a in axes if mesh.shape[a] != 1)  # noqa: E731
  return P(*[None if not (k := kept(spec.axes_of(d))) else k[0] if len(k) == 1 else k
             for d in range(len(spec))],
           unreduced=frozenset(kept(spec.unreduced)), reduced=frozenset(kept(spec.reduced)))


def _normal(spec) -> tuple:
  return tuple(spec.axes_of(d) for d in range(len(spec))), spec.unreduced, spec.reduced


def _type_split(x):
  """How ``x`` is split over Explicit axes by its type (a TypeSharding), or None."""
  return sharding_types.split_of(x)


def _manual_axes(mesh, axis_names, vmapped=()) -> tuple:
  """The mesh axes the body is manual over, in the mesh's order."""
  # Those an enclosing shard_map is manual over, or a vmap maps over.
  outer = shard_map_types.already_manual(mesh) + tuple(vmapped)
  if axis_names is None or (isinstance(axis_names, (set, frozenset)) and not axis_names):
    return tuple(a for a in mesh.axis_names if a not in outer)
  names = {axis_names} if isinstance(axis_names, str) else set(axis_names)
  unknown = sorted(str(a) for a in names if a not in mesh.shape)
  if unknown:
    raise ValueError(f"shard_map: axis_names {unknown} are not axes of the mesh {mesh} "
                     f"(axes {mesh.axis_names})")
  return tuple(a for a in mesh.axis_names if a in names and a not in outer)


# --- rules -------------------------------------------------------------------------------

def _abstract_eval(*avals, jaxpr, mesh, manual_axes, in_specs,
                   out_specs, check_vma):
  return [_global_aval(a, mesh, s, manual_axes) for a, s in zip(jaxpr.out_avals, out_specs)]

shard_map_p.def_abstract_eval(_abstract_eval)
partitioned.sharding_params[shard_map_p] = lambda params: sharding_lib.NamedSharding(
    params["mesh"], P())


def _impl(*args, **params):
  # Eagerly: a partitioned program holding just this shard_map.
  from hlox.core.jaxpr import Jaxpr, JaxprEqn, Var
  in_avals = [get_aval(x) for x in args]
  out_avals = _abstract_eval(*in_avals, **params)
  invars = [Var(a, _type_split(x)) for x, a in zip(args, in_avals)]
  # The results' layouts as their types say (the rule, over the arguments' splits).
  out_splits = sharding_types.output_shardings(
      shard_map_p, in_avals, [v.sharding for v in invars], out_avals, params)
  outvars = [Var(a, s) for a, s in zip(out_avals, out_splits)]
  jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(invars, outvars, shard_map_p, params)])
  sigs = [x._sig if hasattr(x, "_sig") else a for x, a in zip(args, in_avals)]
  call = partitioned.compile_partitioned(ClosedJaxpr(jaxpr, []), sigs, "shard_map",
                                         keep_unused=True)
  return call(list(args))

shard_map_p.def_impl(_impl)


def _discharge(refs, *args, jaxpr, in_specs, out_specs, **params):
  """On references: the body made pure takes each reference's block and hands back its
  final block after the outputs, joined as the reference was split."""
  def bind(pure, consts, positions):
    return shard_map_p.bind(
        *consts, *args, jaxpr=pure, in_specs=(P(),) * len(consts) + tuple(in_specs),
        out_specs=tuple(out_specs) + tuple(in_specs[i] for i in positions), **params)
  return state_discharge.discharge_call(jaxpr, len(args), bind)

state_discharge.register(shard_map_p, _discharge)


def _sdy_shardings(mesh, specs, avals, open_dims: bool) -> ir.Attribute:
  parts = []
  for s, a in zip(specs, avals):
    text = sharding_lib.NamedSharding(mesh, s).sdy_text(a.ndim, open_dims=open_dims)
    parts.append(text[len("#sdy.sharding"):])
  return ir.Attribute.parse(f"#sdy.sharding_per_value<[{', '.join(parts)}]>")


def _lowering(ctx, *args, jaxpr, mesh, manual_axes, in_specs,
              out_specs, check_vma):
  mctx = ctx.module_context
  if mctx.mesh is None:
    raise NotImplementedError("shard_map inside a pmap (or another program that is not "
                              "partitioned over a mesh) is not supported in hlox")
  if mctx.mesh._flat_devices_tuple != mesh._flat_devices_tuple:
    raise ValueError(f"shard_map over {mesh} inside a program over another mesh "
                     f"({mctx.mesh})")
  names = ", ".join(f'"{a}"' for a in manual_axes)
  # Over the other (auto) axes the body's values are laid out as XLA chooses: open dims.
  # Axes an enclosing shard_map's lowering is manual over are neither.
  enclosing = set(mesh.axis_names) - set(mctx.auto_axes) if mctx.manual else set()
  auto_axes = tuple(a for a in mesh.axis_names
                    if a not in manual_axes and a not in enclosing)
  auto = bool(auto_axes)
  op = sdy.ManualComputationOp(
      [xla.aval_to_ir_type(a) for a in ctx.avals_out], list(args),
      _sdy_shardings(mesh, in_specs, ctx.avals_in, auto),
      _sdy_shardings(mesh, out_specs, ctx.avals_out, auto),
      ir.Attribute.parse(f"#sdy<manual_axes{{{names}}}>"))
  block = op.body.blocks.append(*[xla.aval_to_ir_type(a) for a in jaxpr.in_avals])
  saved = (mctx.axis_env, mctx.num_replicas, mctx.manual, mctx.auto_axes)
  # All the mesh's axes, manual or not: collectives' groups and axis_index are positions
  # in the whole mesh (global device ids), as JAX lowers them.
  mctx.axis_env = tuple(mesh.shape.items())
  mctx.num_replicas = mesh.size
  mctx.manual = True
  mctx.auto_axes = auto_axes
  try:
    with ir.InsertionPoint(block):
      outs = xla.lower_jaxpr(mctx, jaxpr.jaxpr, [], list(block.arguments))
      sdy.ReturnOp(outs)
  finally:
    mctx.axis_env, mctx.num_replicas, mctx.manual, mctx.auto_axes = saved
  return list(op.results)

xla.register_lowering(shard_map_p, _lowering)


def _params(mesh, manual_axes, in_specs, out_specs, check_vma):
  return dict(mesh=mesh, manual_axes=tuple(manual_axes), in_specs=tuple(in_specs),
              out_specs=tuple(out_specs), check_vma=bool(check_vma))


def _jvp(primals, tangents, *, jaxpr, mesh, manual_axes, in_specs,
         out_specs, check_vma):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  with _body_context(mesh, manual_axes, check_vma):
    jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
  jvp_closed, consts = convert_constvars(jvp_closed)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  specs = [P()] * len(consts) + list(in_specs) + [s for s, nz in zip(in_specs, nonzeros) if nz]
  outs_specs = list(out_specs) + [s for s, nz in zip(out_specs, out_nz) if nz]
  outs = shard_map_p.bind(*consts, *primals, *nz_tangents, jaxpr=jvp_closed,
                          **_params(mesh, manual_axes, specs, outs_specs, check_vma))
  n = len(out_specs)
  it = iter(outs[n:])
  avals = _abstract_eval(jaxpr=jaxpr, mesh=mesh, manual_axes=manual_axes, in_specs=in_specs,
                         out_specs=out_specs, check_vma=check_vma)
  return outs[:n], [next(it) if nz else ad.Zero(a.to_tangent_aval())
                    for a, nz in zip(avals, out_nz)]

ad.primitive_jvps[shard_map_p] = _jvp


def _partial_eval(trace, *args, jaxpr, mesh, manual_axes, in_specs,
                  out_specs, check_vma):
  unknowns = [trace.is_unknown(x) for x in args]
  with _body_context(mesh, manual_axes, check_vma):
    known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns)
  n_known_out = len(known.out_avals) - num_res
  res_avals = known.out_avals[n_known_out:]
  # One block per device along a new leading dim, split over the axes a residual may vary
  # along (all manual axes without check_vma; with it, its type says which).
  res_specs = [_residual_spec(a, manual_axes, check_vma) for a in res_avals]

  def known_stacked(*xs):  # the residuals with a leading block dimension of 1
    outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
    res = [reshape(r, (1, *r.shape)) for r in outs[n_known_out:]]
    return [*outs[:n_known_out], *res]
  known_in = [a for a, u in zip(jaxpr.in_avals, unknowns) if not u]
  known_out_specs = [s for s, u in zip(out_specs, out_unknowns) if not u]
  known_body, known_consts = _trace_body(
      known_stacked, known_in, mesh, manual_axes, "known", check_vma,
      out_specs=known_out_specs + res_specs)
  known_args = [x for x, u in zip(args, unknowns) if not u]
  known_specs = [s for s, u in zip(in_specs, unknowns) if not u]
  with set_current_trace(trace.parent):
    known_outs = shard_map_p.bind(
        *known_consts, *known_args, jaxpr=known_body,
        **_params(mesh, manual_axes, [P()] * len(known_consts) + known_specs,
                  known_out_specs + res_specs, check_vma))
  residuals = known_outs[n_known_out:]

  def unknown_unstacked(*xs):
    res = [reshape(r, r.shape[1:]) for r in xs[:num_res]]
    return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[num_res:])
  unknown_in = [a.update(shape=(1, *a.shape)) for a in res_avals] + \
      [a for a, u in zip(jaxpr.in_avals, unknowns) if u]
  unknown_out_specs = [s for s, u in zip(out_specs, out_unknowns) if u]
  unknown_body, unknown_consts = _trace_body(unknown_unstacked, unknown_in, mesh,
                                             manual_axes, "unknown", check_vma,
                                             out_specs=unknown_out_specs)
  unknown_args = [*unknown_consts, *residuals, *[x for x, u in zip(args, unknowns) if u]]
  unknown_specs = [P()] * len(unknown_consts) + res_specs + \
      [s for s, u in zip(in_specs, unknowns) if u]
  unknown_outs = trace.record(shard_map_p, unknown_args, dict(
      jaxpr=unknown_body,
      **_params(mesh, manual_axes, unknown_specs, unknown_out_specs, check_vma)))
  known_it, unknown_it = iter(known_outs[:n_known_out]), iter(unknown_outs)
  return [next(unknown_it) if u else next(known_it) for u in out_unknowns]

pe.partial_eval_rules[shard_map_p] = _partial_eval


def _residual_spec(aval, manual_axes, check_vma):
  axes = tuple(a for a in manual_axes if not check_vma or a in aval.vma)
  partial = dict(unreduced=aval.unreduced, reduced=aval.reduced) if check_vma else {}
  return P(axes, **partial) if axes else P(**partial)


def _transpose(cts, *args, jaxpr, mesh, manual_axes, in_specs,
               out_specs, check_vma):
  undefined = [ad.is_undefined_primal(x) for x in args]
  defined_args = [x for x, u in zip(args, undefined) if not u]
  ct_nonzero = [type(ct) is not ad.Zero for ct in cts]
  nz_cts = [ct for ct in cts if type(ct) is not ad.Zero]
  n_def = len(defined_args)

  def body(*flat):
    defined, local_cts = iter(flat[:n_def]), iter(flat[n_def:])
    full_args = [ad.UndefinedPrimal(a) if u else next(defined)
                 for a, u in zip(jaxpr.in_avals, undefined)]
    full_cts = []
    for a, nz, spec in zip(jaxpr.out_avals, ct_nonzero, out_specs):
      if not nz:
        full_cts.append(ad.Zero(a.to_tangent_aval()))
        continue
      ct = next(local_cts)
      # With check_vma the types say it all: a transposed pvary sums what must be summed.
      copies = 1 if check_vma else math.prod(
          mesh.shape[n] for n in _unmentioned(manual_axes, _ct_spec(spec))
          if n not in _ct_spec(spec).unreduced)
      full_cts.append(div(ct, full_like(ct, copies)) if copies > 1 else ct)
    cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, full_args, full_cts)
    out = []
    for ct, u, spec, a in zip(cts_in, undefined, in_specs, jaxpr.in_avals):
      if not u:
        continue
      ct = _instantiate_ct(ct, _ct_spec(spec)) if type(ct) is ad.Zero else ct
      axes = () if check_vma else tuple(a for a in _unmentioned(manual_axes, _ct_spec(spec))
                                        if a not in _ct_spec(spec).unreduced)
      out.append(psum(ct, axes) if axes else ct)
    return out

  local_in = [_local_aval(get_aval(x), mesh, s, "argument")
              for x, s, u in zip(args, in_specs, undefined) if not u]
  local_in += [_local_aval(get_aval(ct), mesh, s, "cotangent")
               for ct, s, nz in zip(cts, out_specs, ct_nonzero) if nz]
  local_specs = [s for s, u in zip(in_specs, undefined) if not u] + \
      [_ct_spec(s) for s, nz in zip(out_specs, ct_nonzero) if nz]
  out_specs_t = [_ct_spec(s) for s, u in zip(in_specs, undefined) if u]
  t_body, consts = _trace_body(body, local_in, mesh, manual_axes, "transpose", check_vma,
                               local_specs, out_specs_t)
  specs = [P()] * len(consts) + local_specs
  outs = iter(shard_map_p.bind(*consts, *defined_args, *nz_cts, jaxpr=t_body,
                               **_params(mesh, manual_axes, specs, out_specs_t, check_vma)))
  return [next(outs) if u else None for u in undefined]

ad.primitive_transposes[shard_map_p] = _transpose


def _ct_spec(spec):
  """The spec of a cotangent: unreduced and reduced axes swapped (a reduced value's
  cotangent is a partial sum, an unreduced one's is reduced)."""
  if not spec.unreduced and not spec.reduced:
    return spec
  return spec.update(unreduced=spec.reduced, reduced=spec.unreduced)


def _instantiate_ct(ct, spec):
  """A zero cotangent made concrete, of the partial-sum type ``spec`` asks for (zeros are
  a valid partial sum)."""
  z = ad.instantiate_zeros(ct)
  if vma_lib.active[0] and spec.unreduced:
    missing = tuple(a for a in spec.unreduced if a not in get_aval(z).vma
                    and a not in get_aval(z).unreduced)
    z = pvary_p.bind(z, axes=vma_lib.in_order(missing)) if missing else z
  return z


def _batch(axis_data, vals, dims, *, jaxpr, mesh, manual_axes, in_specs,
           out_specs, check_vma):
  vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
  in_dims = [None if d is None else 0 for d in dims]
  with _body_context(mesh, manual_axes, check_vma):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, in_dims, instantiate=True)
  batched, consts = convert_constvars(batched)
  specs = [P()] * len(consts) + [s if d is None else P(None, *s)
                                 for s, d in zip(in_specs, in_dims)]
  outs_specs = [P(None, *s) for s in out_specs]
  outs = shard_map_p.bind(*consts, *vals, jaxpr=batched,
                          **_params(mesh, manual_axes, specs, outs_specs, check_vma))
  return shard_map_types.keep_batch_split(outs, vals, in_dims), [0] * len(outs)

batching.fancy_primitive_batchers[shard_map_p] = _batch


def _sharding_rule(in_avals, in_shardings, out_avals, *, mesh, manual_axes, out_specs,
                   jaxpr, **params):
  """The results are split as ``out_specs`` say over the mesh's Explicit axes, and over
  the Explicit axes the body is not manual over as the body's results are."""
  body = [getattr(v, "sharding", None) for v in jaxpr.jaxpr.outvars]
  return [shard_map_types.out_split(mesh, manual_axes, s, b, a.ndim)
          for a, s, b in zip(out_avals, out_specs, body)]

sharding_types.sharding_rules[shard_map_p] = _sharding_rule
sharding_types.sources.add(shard_map_p)
