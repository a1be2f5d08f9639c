"""Sharding in types (JAX's explicit axes): how a traced value is split over the Explicit
axes of a mesh, carried by the jaxpr variable it is bound to (``Var.sharding``) and worked
out for each equation by its primitive's rule, as JAX does when ``make_mesh`` gives Explicit
axes (its default). Printed types show it (``f32[8@X,4]``) and ``typeof`` returns it.

Only the type is computed here: the program still leaves layouts to XLA's partitioner,
which the arguments' (and ``reshard``'s) shardings steer. Axes of type Auto never appear.

A rule is ``rule(in_avals, in_shardings, out_avals, **params)`` returning the output's
``TypeSharding`` (a list of them for primitives with several results), where the inputs'
are ``TypeSharding``s or None (not split); it may raise ``ShardingTypeError``. A primitive
without a rule gives unsplit results.
"""
from __future__ import annotations

import contextlib
import threading

from hlox.errors import ShardingTypeError

sharding_rules: dict = {}
# True once any value was split over an Explicit axis in this process: until then tracing
# skips the rules altogether (one list lookup per equation).
active = [False]
# ``value_split(x)``: the split of a concrete value (an Array), set by the runtime.
value_split = lambda x: None  # noqa: E731
# ``constrain(x, split)``: ``x`` with its type split as ``split`` (set by ``lax``: a sharding
# constraint).
constrain = None
# ``named_of_split(split)``: the NamedSharding (over the abstract mesh) a split stands for, as
# a type shows it (set by the runtime).
named_of_split = None
# ``concrete_mesh(mesh)``: a concrete ``Mesh`` for an ``AbstractMesh`` (over the devices of
# the mesh in effect), a concrete one as it is (set by the runtime).
concrete_mesh = lambda mesh: mesh  # noqa: E731
# ``drop_size_one_axes()``: whether mesh axes of size 1 are left out of types (the option
# ``remove_size_one_mesh_axis_from_type``; set by the API).
drop_size_one_axes = lambda: False  # noqa: E731
# The sharding-constraint primitives (``sharding_constraint``, ``reshard``; set by ``lax``):
# their lowering is the constraint itself.
constraints: set = set()
# Primitives whose results may be split although no operand is (``reshard``, a call of a
# jaxpr that splits its results): their rules run for every equation.
sources: set = set()


class TypeSharding:
  """``mesh`` (a ``Mesh``) and, per dimension, the tuple of Explicit mesh axes that split it
  (None when none does); ``unreduced``: the Explicit axes over which each device holds a
  partial sum of the value (printed ``{U:x}``), ``reduced``: those over which the value is
  the same on every device but its cotangent will be a partial sum (``{R:x}``)."""

  __slots__ = ("mesh", "entries", "unreduced", "reduced")

  def __init__(self, mesh, entries, unreduced=frozenset(), reduced=frozenset()):
    self.mesh = mesh
    self.entries = tuple(None if not e else tuple(e) for e in entries)
    self.unreduced = frozenset(unreduced)
    self.reduced = frozenset(reduced)
    active[0] = True

  def __eq__(self, other):
    return (isinstance(other, TypeSharding) and self.entries == other.entries
            and self.unreduced == other.unreduced and self.reduced == other.reduced
            and self.mesh == other.mesh)

  def __hash__(self):
    return hash((self.entries, self.unreduced, self.reduced))

  def __repr__(self):
    extra = "".join(f", {n}={set(v)}" for n, v in (("unreduced", self.unreduced),
                                                    ("reduced", self.reduced)) if v)
    return f"TypeSharding({self.entries}{extra})"

  def is_split(self) -> bool:
    return (any(e is not None for e in self.entries) or bool(self.unreduced)
            or bool(self.reduced))

  def with_entries(self, entries) -> "TypeSharding":
    """The same mesh and unreduced/reduced axes over new per-dimension entries."""
    return TypeSharding(self.mesh, entries, self.unreduced, self.reduced)

  def transposed(self) -> "TypeSharding":
    """The type of a cotangent: reduced axes become unreduced and unreduced ones reduced."""
    if not (self.reduced or self.unreduced):
      return self
    return TypeSharding(self.mesh, self.entries, self.reduced, self.unreduced)

  def suffix(self) -> str:
    """``{U:x}``, ``{R:(x,y)}``... as JAX prints the partial axes after a type's shape."""
    return partial_axes_str(self.mesh, (), self.unreduced, self.reduced)


def partial_axes_str(mesh, vma, unreduced, reduced) -> str:
  """``{V:i, U:x, R:y}`` (the parts present, each in the mesh's axis order), or ''."""
  order = tuple(getattr(mesh, "axis_names", ()))
  parts = []
  for prefix, axes in (("V", vma), ("U", unreduced), ("R", reduced)):
    if axes:
      names = [a for a in order if a in axes] + sorted(str(a) for a in axes if a not in order)
      joined = ",".join(map(str, names))
      parts.append(f"{prefix}:{joined if len(names) == 1 else f'({joined})'}")
  return "{" + ", ".join(parts) + "}" if parts else ""


def explicit_axes(mesh) -> frozenset:
  names = getattr(mesh, "axis_names", ())
  types = getattr(mesh, "axis_types", ())
  return frozenset(n for n, t in zip(names, types) if getattr(t, "name", None) == "Explicit")


def split_of(x) -> TypeSharding | None:
  """How the value ``x`` (a tracer, or an Array laid out over a mesh) is split over
  Explicit axes by its type, or None."""
  split = getattr(x, "type_sharding", None)
  return split if split is not None else value_split(x)


def of_named(sharding, ndim: int) -> TypeSharding | None:
  """The type sharding of a value laid out by ``sharding`` (a NamedSharding): its spec
  restricted to the mesh's Explicit axes, or None when none of them splits it (nor holds
  it unreduced or reduced)."""
  mesh = getattr(sharding, "mesh", None)
  spec = getattr(sharding, "spec", None)
  if mesh is None or spec is None:
    return None
  explicit = explicit_axes(mesh)
  if not explicit:
    return None
  entries = []
  for i in range(ndim):
    names = spec.axes_of(i) if i < len(spec) else ()
    kept = tuple(n for n in names if n in explicit)
    if kept and drop_size_one_axes():
      kept = tuple(n for n in kept if mesh.shape[n] != 1)
    entries.append(kept or None)
  result = TypeSharding(mesh, entries, frozenset(getattr(spec, "unreduced", ())) & explicit,
                        frozenset(getattr(spec, "reduced", ())) & explicit)
  return result if result.is_split() else None


def split_of_named(sharding, ndim: int) -> TypeSharding | None:
  """The split a type's NamedSharding records: the one it was made from (``named_of_split``
  keeps it, as its abstract mesh no longer names devices), else read off its spec."""
  split = getattr(sharding, "_type_split", None)
  return split if split is not None else of_named(sharding, ndim)


def dims_string(shape, sharding: TypeSharding | None) -> str:
  """``8@X,4`` (``8@(X,Y)`` for a dimension split by two axes), as JAX prints a type."""
  entries = sharding.entries if sharding is not None else (None,) * len(shape)
  parts = []
  for d, e in zip(shape, entries):
    if e is None:
      parts.append(str(d))
    elif len(e) == 1:
      parts.append(f"{d}@{e[0]}")
    else:
      parts.append(f"{d}@({','.join(e)})")
  return ",".join(parts)


def output_shardings(primitive, in_avals, in_shardings, out_avals, params):
  """The type shardings of an equation's results (a list), from its primitive's rule."""
  n = len(out_avals)
  rule = sharding_rules.get(primitive)
  if rule is None:
    return [None] * n
  out = rule(in_avals, in_shardings, out_avals, **params)
  outs = list(out) if primitive.multiple_results else [out]
  for aval, s in zip(out_avals, outs):
    if s is not None:
      _check_no_axis_twice(primitive, in_avals, in_shardings, aval, s)
  return [s if s is not None and s.is_split() else None for s in outs]


def _check_no_axis_twice(primitive, in_avals, in_shardings, aval, s: TypeSharding):
  seen = set()
  for e in s.entries:
    for name in e or ():
      if name in seen:
        inputs = ", ".join(f"{short(a)}[{dims_string(a.shape, t)}]"
                           for a, t in zip(in_avals, in_shardings))
        raise ShardingTypeError(
            f"{primitive} operation with inputs: {inputs} produces an illegally sharded "
            f"result: {short(aval)}[{dims_string(aval.shape, s)}]")
      seen.add(name)


def short(aval) -> str:
  return aval.str_short().split("[", 1)[0]


def mesh_of(shardings):
  """The one mesh of the split operands (None when none is split); two meshes are an
  error."""
  mesh = None
  for s in shardings:
    if s is not None:
      if mesh is not None and s.mesh != mesh:
        if s.mesh.abstract_mesh != mesh.abstract_mesh:
          raise ShardingTypeError(f"Mesh for all inputs should be equal. Got one mesh: "
                                  f"{mesh} and another mesh: {s.mesh}")
        if hasattr(mesh, "devices"):  # the same mesh, one seen without its devices
          continue
      mesh = s.mesh
  return mesh


def entries_of(s: TypeSharding | None, ndim: int) -> tuple:
  return s.entries if s is not None else (None,) * ndim


# --- generic rules (registered beside each primitive in ``lax``) ---------------------------

def _spec_str(entries) -> str:
  return "(" + ", ".join("None" if e is None else repr(e[0]) if len(e) == 1 else repr(e)
                         for e in entries) + ("," if len(entries) == 1 else "") + ")"


def broadcasting_rule(name):
  """Elementwise operations: each dimension is split as the operands that are not of size 1
  there split it; two different splits of one dimension are an error. Unreduced and reduced
  axes follow JAX's rules (``_partial_axes``)."""
  def rule(in_avals, in_shardings, out_avals, **params):
    mesh = mesh_of(in_shardings)
    if mesh is None:
      return [None] * len(out_avals) if len(out_avals) > 1 else None
    out_ndim = len(out_avals[0].shape)
    ranked = [(a, entries_of(s, len(a.shape))) for a, s in zip(in_avals, in_shardings)
              if len(a.shape) == out_ndim and out_ndim]
    result = []
    for i in range(out_ndim):
      chosen = None
      for a, entries in ranked:
        e = entries[i]
        if e is None:
          continue
        if chosen is not None and chosen != e:
          raise ShardingTypeError(
              f"{name} got incompatible shardings for broadcasting: "
              f"{', '.join(_spec_str(entries) for _, entries in ranked)}.")
        chosen = e
      result.append(chosen)
    unreduced, reduced = _partial_axes(name, in_avals, in_shardings)
    out = TypeSharding(mesh, result, unreduced, reduced)
    return [out] * len(out_avals) if len(out_avals) > 1 else out
  rule.elementwise = True  # (lowering constrains elementwise operands to the result's split)
  return rule


# Elementwise operations linear in each operand, which may take unreduced operands (as JAX:
# the rest raise). ``mul`` is linear in one operand at a time: the other must be reduced.
_UNREDUCED_LINEAR = frozenset({"add", "add_any", "convert_element_type", "copy"})


def _partial_axes(name, in_avals, in_shardings) -> tuple:
  """The unreduced and reduced axes of an elementwise result, with JAX's errors."""
  unreduced = [s.unreduced if s is not None else frozenset() for s in in_shardings]
  reduced = [s.reduced if s is not None else frozenset() for s in in_shardings]
  if not any(unreduced) and not any(reduced):
    return frozenset(), frozenset()
  types = [type_str(a, s) + (s.suffix() if s is not None else "")
           for a, s in zip(in_avals, in_shardings)]
  out_unreduced = frozenset()
  if any(unreduced):
    if name == "mul" and len(unreduced) == 2:
      for me, other, side, other_side in ((0, 1, "LHS", "RHS"), (1, 0, "RHS", "LHS")):
        if unreduced[me] and not unreduced[me] <= reduced[other]:
          raise ShardingTypeError(
              f"{other_side} should be reduced along the same axes {side} is unreduced on. "
              f"Got lhs={types[0]} and rhs={types[1]}")
      out_unreduced = unreduced[0] | unreduced[1]
      # the reduced axes the product consumed are not reduced in the result
      reduced = [r - out_unreduced for r in reduced]
    elif name in _UNREDUCED_LINEAR:
      if len(unreduced) == 2 and unreduced[0] != unreduced[1]:
        side, other = ("lhs", "rhs") if unreduced[0] else ("rhs", "lhs")
        raise ShardingTypeError(
            f"{side} is unreduced while {other} is not. `{name}` operation does not allow "
            f"this because there will be implicit communication. Please reduce {side} via "
            f"`reshard` before calling `{name}`.")
      out_unreduced = unreduced[0]
    else:
      raise NotImplementedError(f"unreduced rule for {name} is not implemented. Please file "
                                "an issue at https://github.com/jax-ml/jax/issues")
  out_reduced = frozenset().union(*reduced)
  if out_reduced:
    for a, s, r, t in zip(in_avals, in_shardings, reduced, types):
      if not a.shape or out_reduced <= r:
        continue  # scalars (Python numbers) go with anything
      split_axes = {n for e in entries_of(s, len(a.shape)) for n in (e or ())}
      if (out_reduced - r) & split_axes:
        raise ShardingTypeError(
            "Inputs cannot be sharded/varying on the same axes that another input is reduced "
            "on. Reshard the input which is reduced to be sharded on the mesh axes it is "
            "reduced on via `jax.sharding.reshard(inp, jax.P(...))`. Got input type: "
            f"{t} and reduced spec: {out_reduced}")
      raise ShardingTypeError(
          "Inputs cannot be replicated on the same axes that another input is reduced on. "
          f"Got input type: {t} and reduced spec: {out_reduced}")
  return out_unreduced, out_reduced


def same_as_operand_rule(in_avals, in_shardings, out_avals, **params):
  """Operations whose result is laid out as their first operand (cumulative sums, sorts
  along an axis, copies)."""
  s = in_shardings[0]
  return [s] * len(out_avals) if len(out_avals) > 1 else s


def reduction_rule(in_avals, in_shardings, out_avals, *, axes, **params):
  s = in_shardings[0]
  if s is None or getattr(_given, "value", False):
    return None  # (with ``out_sharding=``, the constraint that follows types the result)
  return s.with_entries([e for i, e in enumerate(s.entries) if i not in set(axes)])


def nonlinear_reduction_rule(name):
  """Reductions other than sums: as ``reduction_rule``, but a partial sum (unreduced) cannot
  be reduced this way."""
  def rule(in_avals, in_shardings, out_avals, **params):
    s = in_shardings[0]
    if s is not None and s.unreduced:
      raise NotImplementedError(f"unreduced rule for {name} is not implemented. Please file "
                                "an issue at https://github.com/jax-ml/jax/issues")
    return reduction_rule(in_avals, in_shardings, out_avals, **params)
  return rule


def transpose_rule(in_avals, in_shardings, out_avals, *, permutation, **params):
  s = in_shardings[0]
  return None if s is None else s.with_entries([s.entries[p] for p in permutation])


def broadcast_in_dim_rule(in_avals, in_shardings, out_avals, *, shape, broadcast_dimensions,
                          **params):
  s = in_shardings[0]
  if s is None:
    return None
  out = [None] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    if in_avals[0].shape[i] == shape[d]:
      out[d] = s.entries[i]
  return s.with_entries(out)


def squeeze_rule(in_avals, in_shardings, out_avals, *, dimensions, **params):
  s = in_shardings[0]
  if s is None:
    return None
  return s.with_entries([e for i, e in enumerate(s.entries) if i not in set(dimensions)])


def varying_shape_rule(name):
  """Slices, pads, reversals: the operand's split, which a dimension of another size keeps
  only when the split still divides it evenly (as JAX, which has no uneven splits)."""
  def rule(in_avals, in_shardings, out_avals, **params):
    s = in_shardings[0]
    if s is None:
      return None
    in_shape, out_shape = in_avals[0].shape, out_avals[0].shape
    if all(d == 1 for d in out_shape):
      return s.with_entries([None] * len(out_shape))
    for e, a, b in zip(s.entries, in_shape, out_shape):
      if a != b and e is not None and b % _axes_size(s.mesh, e):
        return _given_or_raise(
            f"{name} on sharded dims where out dim ({b}) is not divisible by mesh axes "
            f"({_axes_size(s.mesh, e)}) with spec ({_entry_str(e)}) is not implemented. Got "
            f"input type={short(in_avals[0])}[{dims_string(in_shape, s)}] and output "
            f"shape={tuple(out_shape)}")
    return s
  return rule


def cumulative_rule(in_avals, in_shardings, out_avals, *, axis, **params):
  s = in_shardings[0]
  if s is not None and s.entries[axis] is not None:
    raise ShardingTypeError(f"Input should be unsharded over the axis being reduced. Got "
                            f"input type={type_str(in_avals[0], s)} and axis={axis}")
  return s


def _axes_size(mesh, entry) -> int:
  return _prod(mesh.shape[name] for name in entry)


def _entry_str(entry) -> str:
  return entry[0] if len(entry) == 1 else repr(entry)


def type_str(aval, s) -> str:
  """``float32[8@X,4@Y]``: a type with its full dtype name, as JAX's errors print it."""
  return f"{aval.dtype.name}[{dims_string(aval.shape, s)}]"


def reshape_rule(in_avals, in_shardings, out_avals, **params):
  """A reshape of a split array, as JAX allows it: dimensions of size 1 come and go freely;
  a split dimension broken into several hands its mesh axes to them from the first (each
  taking axes while its size stays divisible); several merged into one give it their axes
  in order (the unsplit ones last). Anything else needs ``out_sharding=``."""
  s = in_shardings[0]
  if s is None:
    return None
  in_shape, out_shape = tuple(in_avals[0].shape), tuple(out_avals[0].shape)

  def fail():
    if getattr(_given, "value", False):
      return None  # ``out_sharding=`` sets the split
    raise ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        "`out_sharding` argument of jax.lax.reshape. Got operand type: "
        f"{type_str(in_avals[0], s)}, new sizes: {out_shape}")

  ins = [(d, e) for d, e in zip(in_shape, s.entries) if d != 1]
  outs = [d for d in out_shape if d != 1]
  out_entries, i, j = [], 0, 0
  while i < len(ins) or j < len(outs):
    # the smallest run of dimensions on each side holding the same number of elements
    gi, gj = [ins[i]] if i < len(ins) else [], [outs[j]] if j < len(outs) else []
    if not gi or not gj:
      return fail()
    while _prod(d for d, _ in gi) != _prod(gj):
      if _prod(d for d, _ in gi) < _prod(gj):
        if i + len(gi) >= len(ins):
          return fail()
        gi.append(ins[i + len(gi)])
      else:
        if j + len(gj) >= len(outs):
          return fail()
        gj.append(outs[j + len(gj)])
    i, j = i + len(gi), j + len(gj)
    axes = [a for _, e in gi for a in (e or ())]
    if not axes:
      out_entries += [None] * len(gj)
      continue
    if len(gi) > 1:  # a merge: only the trailing dimensions may be unsplit
      seen_unsplit = False
      for _, e in gi:
        if e is None:
          seen_unsplit = True
        elif seen_unsplit:
          return fail()
      if len(gj) > 1:
        return fail()
    remaining = list(axes)
    for size in gj:
      taken = []
      while size > 1 and remaining:
        size, rest = divmod(size, s.mesh.shape[remaining[0]])
        if rest:
          return fail()
        taken.append(remaining.pop(0))
      out_entries.append(tuple(taken) or None)
    if remaining:
      return fail()
  it = iter(out_entries)
  # a dimension of size 1 keeps the split of the operand's dimension of size 1 at its place
  # (as JAX, when the reshape splits or merges dimensions)
  keep_ones = len(ins) != len(outs) or any(d != e for (d, _), e in zip(ins, outs))
  return s.with_entries([
      next(it) if d != 1 else s.entries[i]
      if keep_ones and i < len(in_shape) and in_shape[i] == 1 else None
      for i, d in enumerate(out_shape)])


def _prod(xs) -> int:
  n = 1
  for x in xs:
    n *= x
  return n


_given = threading.local()


@contextlib.contextmanager
def result_sharding_given(given: bool = True):
  """While active, the operation being bound has an ``out_sharding=`` that sets its
  result's split right after: rules skip the errors that ask for one."""
  before = getattr(_given, "value", False)
  _given.value = before or given
  try:
    yield
  finally:
    _given.value = before


def result_sharding_is_given() -> bool:
  """Whether the operation being bound has its result's split set by an ``out_sharding=``."""
  return getattr(_given, "value", False)


def _conflicting(lhs_spec, rhs_spec) -> bool:
  """Two dimensions paired by a product, split by different mesh axes."""
  return any(a is not None and b is not None and a != b for a, b in zip(lhs_spec, rhs_spec))


def dot_general_rule(in_avals, in_shardings, out_avals, *, dimension_numbers,
                     out_sharding=None, **params):
  if out_sharding is not None:
    return of_named(out_sharding, len(out_avals[0].shape))
  if getattr(_given, "value", False):
    return None
  lhs_s, rhs_s = in_shardings
  mesh = mesh_of(in_shardings)
  if mesh is None:
    return None
  if any(s is not None and s.unreduced for s in in_shardings):
    raise ShardingTypeError(
        "lhs or rhs passed to dot_general cannot be unreduced. Got "
        f"lhs={_aval_repr(in_avals[0], lhs_s)} and rhs={_aval_repr(in_avals[1], rhs_s)}")
  lhs = entries_of(lhs_s, len(in_avals[0].shape))
  rhs = entries_of(rhs_s, len(in_avals[1].shape))
  (lc, rc), (lb, rb) = dimension_numbers
  lb_spec, rb_spec = tuple(lhs[i] for i in lb), tuple(rhs[i] for i in rb)
  if _conflicting(lb_spec, rb_spec):
    raise ShardingTypeError(
        "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
        f"consistent sharding, got {_spec_str(lb_spec)} and {_spec_str(rb_spec)}.")
  lc_spec, rc_spec = tuple(lhs[i] for i in lc), tuple(rhs[i] for i in rc)
  if _conflicting(lc_spec, rc_spec):
    raise ShardingTypeError(
        "dot_general requires contracting dimensions to have consistent sharding, got "
        f"{_spec_str(lc_spec)} and {_spec_str(rc_spec)}.")
  if any(a is not None and b is not None for a, b in zip(lc_spec, rc_spec)):
    raise ShardingTypeError(
        "Contracting dimensions are sharded and it is ambiguous how the output should be "
        "sharded. Please specify the output sharding via the `out_sharding` parameter. Got "
        f"lhs_contracting_spec={_spec_str(lc_spec)} and rhs_contracting_spec="
        f"{_spec_str(rc_spec)}")
  lhs_free = [e for i, e in enumerate(lhs) if i not in set(lc) | set(lb)]
  rhs_free = [e for i, e in enumerate(rhs) if i not in set(rc) | set(rb)]
  return TypeSharding(mesh, list(lb_spec) + lhs_free + rhs_free)


def constraint_rule(in_avals, in_shardings, out_avals, *, sharding, **params):
  """``reshard`` / ``with_sharding_constraint`` / ``out_sharding=``: the result is split as
  asked over Explicit axes. Partial sums over some axes can be summed (fewer unreduced axes)
  or made (more), not both at once: XLA's partitioner aborts the process on that, so it is
  an error here."""
  out = of_named(sharding, len(out_avals[0].shape))
  if out is not None and not hasattr(out.mesh, "devices"):  # over an AbstractMesh
    out = TypeSharding(concrete_mesh(out.mesh), out.entries, out.unreduced, out.reduced)
  source = in_shardings[0]
  was = source.unreduced if source is not None else frozenset()
  now = out.unreduced if out is not None else frozenset()
  if was - now and now - was:
    raise ShardingTypeError(
        f"Cannot reshard a value unreduced over {set(was)} to one unreduced over {set(now)}: "
        f"reshard it to unreduced over {set(was & now) or 'none'} first. Got input type "
        f"{type_str(in_avals[0], source)}{source.suffix()} and sharding {sharding}")
  return out


def call_rule(jaxpr_param: str):
  """A call of a jaxpr (jit, checkpoint, custom rules): results are split as the jaxpr's
  outputs are, given the operands' splits (when the jaxpr was traced without them, they
  are worked out by running the rules over its equations)."""
  def rule(in_avals, in_shardings, out_avals, **params):
    jaxpr = params[jaxpr_param]
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    own = [getattr(v, "sharding", None) for v in jaxpr.outvars]
    if any(s is not None for s in own) or not any(s is not None for s in in_shardings):
      return own
    return jaxpr_out_splits(jaxpr, in_shardings)
  return rule


def jaxpr_out_splits(jaxpr, in_splits) -> list:
  """The splits of ``jaxpr``'s outputs when its inputs are split as ``in_splits``: each
  equation's rule applied in order (nothing is traced again)."""
  env = {}

  def read(v):
    if v in env:
      return env[v]
    return getattr(v, "sharding", None)

  for v, s in zip(jaxpr.invars, in_splits):
    env[v] = s
  for eqn in jaxpr.eqns:
    ins = [read(v) if hasattr(v, "sharding") else None for v in eqn.invars]
    if any(s is not None for s in ins) or eqn.primitive in sources:
      outs = output_shardings(eqn.primitive, [v.aval for v in eqn.invars], ins,
                              [v.aval for v in eqn.outvars], eqn.params)
      for v, s in zip(eqn.outvars, outs):
        env[v] = s
  return [read(v) if hasattr(v, "sharding") else None for v in jaxpr.outvars]


def _split_alike(in_avals, in_shardings, op: str):
  """The operands' common split (entries per dimension) when ``op`` needs them split alike,
  or None outside a mesh; ShardingTypeError when they differ."""
  if mesh_of(in_shardings) is None:
    return None
  all_entries = [entries_of(s, len(a.shape)) for a, s in zip(in_avals, in_shardings)]
  if any(e != all_entries[0] for e in all_entries[1:]):
    raise ShardingTypeError(
        f"All operands should have the same sharding for {op}. Got "
        f"{', '.join(_spec_str(e) for e in all_entries)}")
  return all_entries[0]


def concatenate_rule(in_avals, in_shardings, out_avals, *, dimension, **params):
  """Operands joined along ``dimension`` must be split alike; the result is split as they
  are."""
  entries = _split_alike(in_avals, in_shardings, "concatenate")
  return None if entries is None else TypeSharding(mesh_of(in_shardings), entries)


def stack_rule(in_avals, in_shardings, out_avals, *, axis, **params):
  """Operands stacked along a new ``axis`` must be split alike; the new axis is whole."""
  entries = _split_alike(in_avals, in_shardings, "stack")
  if entries is None:
    return None
  entries = list(entries)
  entries.insert(axis, None)
  return TypeSharding(mesh_of(in_shardings), entries)


def unstack_rule(in_avals, in_shardings, out_avals, *, axis, **params):
  """The pieces keep the operand's split of the other dimensions; the unstacked axis must be
  whole (as JAX)."""
  s = in_shardings[0]
  if s is None:
    return None
  if s.entries[axis] is not None:
    raise ShardingTypeError(f"unstack operand cannot be sharded on the unstacking axis {axis}. "
                            f"Got operand type={type_str(in_avals[0], s)}")
  piece = s.with_entries([e for i, e in enumerate(s.entries) if i != axis])
  return [piece] * len(out_avals)


def _given_or_raise(message: str):
  if getattr(_given, "value", False):
    return None  # ``out_sharding=`` sets the split
  raise ShardingTypeError(message)


def _aval_repr(aval, s) -> str:
  return f"ShapedArray({type_str(aval, s)}{s.suffix() if s is not None else ''})"


def gather_rule(in_avals, in_shardings, out_avals, *, dimension_numbers, slice_sizes,
                **params):
  """A gather's result keeps the operand's split on the dimensions it takes whole and the
  indices' split on the dimensions they index by; gathering from a split dimension (or with
  split index vectors) needs ``out_sharding=``, as in JAX."""
  mesh = mesh_of(in_shardings)
  if mesh is None:
    return None
  (operand, indices), (op_s, ix_s) = in_avals, in_shardings
  op = list(entries_of(op_s, len(operand.shape)))
  ix = list(entries_of(ix_s, len(indices.shape)))
  dn = dimension_numbers
  ob, ib = tuple(dn.operand_batching_dims), tuple(dn.start_indices_batching_dims)
  ok = (all(slice_sizes[d] == operand.shape[d] or op[d] is None for d in dn.start_index_map)
        and all(ix[i] == op[o] or ix[i] is None or op[o] is None for o, i in zip(ob, ib))
        and all(e is None for i, e in enumerate(ix) if i not in ib))
  if not ok:
    return _given_or_raise(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={_aval_repr(operand, op_s)}, "
        f"indices={_aval_repr(indices, ix_s)}")
  for o, i in zip(ob, ib):
    ix[i] = ix[i] or op[o]
  kept = [d for d in range(len(operand.shape))
          if d not in dn.collapsed_slice_dims and d not in ob]
  kept_iter, ix_iter = iter(kept), iter(ix[:-1] if ix else [])
  out = [op[next(kept_iter)] if d in dn.offset_dims else next(ix_iter, None)
         for d in range(len(out_avals[0].shape))]
  return TypeSharding(mesh, out)


def scatter_rule(in_avals, in_shardings, out_avals, *, dimension_numbers, **params):
  """A scatter writes windows of ``updates`` into ``operand`` at ``indices``; its result is
  split as the operand, where each dimension's split is unambiguous without moving data:
  - paired batch dimensions of operand, indices and updates are split by at most one axis
    set (the result takes it);
  - an operand window dimension and its updates dimension are split alike over a whole
    window, or both unsplit (the result takes the split);
  - dimensions that only the indices and updates range over (queries that may write to the
    same place), inserted window dimensions and the index vector are unsplit.
  Otherwise it needs ``out_sharding=``, as in JAX."""
  mesh = mesh_of(in_shardings[:3])
  if mesh is None:
    return None
  operand, indices, updates = in_avals[:3]
  op_s, ix_s, up_s = in_shardings[:3]
  op = list(entries_of(op_s, len(operand.shape)))
  ix = entries_of(ix_s, len(indices.shape))
  up = entries_of(up_s, len(updates.shape))
  dn = dimension_numbers
  ob, ib = tuple(dn.operand_batching_dims), tuple(dn.scatter_indices_batching_dims)
  window_dims = tuple(dn.update_window_dims)
  # the updates dimension of each indices batch dimension (update dims that are not window
  # dims run over the indices' dimensions in order, the index vector left out)
  query_dims = [d for d in range(len(updates.shape)) if d not in window_dims]
  ub = tuple(query_dims[i] for i in ib)
  operand_windows = [d for d in range(len(operand.shape))
                     if d not in dn.inserted_window_dims and d not in ob]
  batch_ok = all(len({e for e in (op[o], ix[i], up[u]) if e is not None}) <= 1
                 for o, i, u in zip(ob, ib, ub))
  windows_ok = all((updates.shape[u] == operand.shape[o] and up[u] == op[o])
                   or (up[u] is None and op[o] is None)
                   for u, o in zip(window_dims, operand_windows))
  inserted_ok = all(op[d] is None for d in dn.inserted_window_dims)
  queries_ok = (all(up[d] is None for d in query_dims if d not in ub)
                and all(ix[d] is None for d in range(len(indices.shape) - 1) if d not in ib)
                and (not indices.shape or ix[-1] is None))
  if not (batch_ok and windows_ok and inserted_ok and queries_ok):
    return _given_or_raise(
        "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
        "the scatter update as out sharding could not be resolved unambiguously (or would "
        f"require collectives on inputs). Got operand={_aval_repr(operand, op_s)}, "
        f"indices={_aval_repr(indices, ix_s)}, updates={_aval_repr(updates, up_s)}")
  for o, i, u in zip(ob, ib, ub):
    op[o] = op[o] or ix[i] or up[u]
  for u, o in zip(window_dims, operand_windows):
    op[o] = op[o] or up[u]
  return TypeSharding(mesh, op)


def dynamic_update_slice_rule(in_avals, in_shardings, out_avals, **params):
  """The update is written in place: a split operand's update must be split as it is (an
  unsplit operand, such as a buffer hlox's own loops stack results into, gives an unsplit
  result)."""
  (operand, update), (op_s, up_s) = in_avals[:2], in_shardings[:2]
  op = entries_of(op_s, len(operand.shape))
  if op_s is not None and op != entries_of(up_s, len(update.shape)):
    return _given_or_raise(
        "dynamic_update_slice operand sharding must be equal to update sharding, got "
        f"operand sharding {short(operand)}[{dims_string(operand.shape, op_s)}] and update "
        f"sharding {short(update)}[{dims_string(update.shape, up_s)}].")
  return op_s if op_s is not None else None


def sort_rule(in_avals, in_shardings, out_avals, *, dimension, **params):
  for a, s in zip(in_avals, in_shardings):
    if s is not None and s.entries[dimension] is not None:
      raise ShardingTypeError(
          "Arguments to sort must be unsharded over the sorting dimension. Got arg "
          f"sharding={type_str(a, s)} and sorting dimension={dimension}")
  mesh = mesh_of(in_shardings)
  if mesh is None:
    return [None] * len(out_avals)
  first = next(s for s in in_shardings if s is not None)
  return [first] * len(out_avals)


# --- unreduced/reduced manual axes (a shard_map body's ``mat``) ------------------------------

class _ManualAxesMesh:
  """The manual axes of a body seen as a mesh by the Explicit-axis rules, so that a body's
  unreduced and reduced axes follow the same rules (and errors) as JAX's ``ur_rule``s."""

  __slots__ = ("axis_names", "shape")

  def __init__(self, axis_names):
    self.axis_names = tuple(axis_names)
    self.shape = {a: 1 for a in self.axis_names}


def manual_partial_axes(primitive, in_avals, out_avals, params, manual_axes) -> list:
  """Per result of ``primitive`` in a shard_map body, its ``(unreduced, reduced)`` manual
  axes, from the operands' (``ShapedArray.unreduced``/``reduced``) by the primitive's
  sharding rule, as JAX's unreduced/reduced rules run in Manual mode."""
  rule = sharding_rules.get(primitive)
  if rule is None and not any(getattr(a, "unreduced", None) for a in in_avals):
    # Only reduced operands: a value the same on every device, typed so no longer.
    return [(frozenset(), frozenset())] * len(out_avals)
  if rule is None:
    raise NotImplementedError(
        f"unreduced/reduced rule for {primitive.name} is not implemented. Please file an "
        "issue at https://github.com/jax-ml/jax/issues")
  mesh = _ManualAxesMesh(manual_axes)
  was_active = active[0]
  ins = [TypeSharding(mesh, (None,) * len(getattr(a, "shape", ())),
                      getattr(a, "unreduced", frozenset()), getattr(a, "reduced", frozenset()))
         for a in in_avals]
  active[0] = was_active  # (these are not Explicit-axis splits)
  out = rule(in_avals, [s if s.is_split() else None for s in ins], out_avals, **params)
  outs = list(out) if primitive.multiple_results else [out]
  return [(s.unreduced, s.reduced) if s is not None else (frozenset(), frozenset())
          for s in outs]


def windowed_rule(name):
  """Window reductions (one result per operand): each result split as the first operand,
  as a slice is (a dimension whose size changes keeps its split only when the split still
  divides it)."""
  varying = varying_shape_rule(name)

  def rule(in_avals, in_shardings, out_avals, **params):
    n = len(out_avals)
    s = varying(in_avals[:1], in_shardings[:1], out_avals[:1])
    return [s] * n if n > 1 else s
  return rule


def top_k_rule(in_avals, in_shardings, out_avals, *, axis=-1, **params):
  """The values and their indices are split as the operand, which must not be split along
  the axis the largest values are taken from."""
  s = in_shardings[0]
  if s is None:
    return [None, None]
  if s.entries[axis] is not None:
    raise ShardingTypeError(
        "The input should be unsharded over the axis along which to compute the top_k "
        f"values. Got input type={_aval_repr(in_avals[0], s)} and "
        f"axis={axis % len(s.entries)}")
  return [s, s]


def conv_rule(in_avals, in_shardings, out_avals, *, dimension_numbers, **params):
  """A convolution of an unsplit kernel with an input unsplit along its features is split
  as its input (a spatial dimension whose size changes keeps its split only when the split
  still divides it); anything else needs the output's split from the caller, as in JAX."""
  (lhs_s, rhs_s) = in_shardings[:2]
  if lhs_s is None and rhs_s is None:
    return None
  feature = dimension_numbers.lhs_spec[1] if dimension_numbers is not None else 1
  if (rhs_s is None or not rhs_s.is_split()) and (
      lhs_s is None or lhs_s.entries[feature] is None):
    if lhs_s is None:
      return None
    return varying_shape_rule("conv_general_dilated")(in_avals[:1], [lhs_s], out_avals)
  return _given_or_raise("Please specify the output sharding via `out_sharding` parameter of "
                         "`conv_general_dilated`")


def rng_bit_generator_rule(in_avals, in_shardings, out_avals, **params):
  """The new key is split as the key; the bits are not split (``out_sharding=`` splits
  them)."""
  return [in_shardings[0], None]
