"""The primitives and rules of varying manual axes (``core/vma.py``) in shard_map bodies.

``pvary`` marks a value as possibly varying along more manual axes: the identity on values,
it exists for the types (and for autodiff: its transpose sums the cotangents over those
axes). ``psum_invariant`` is ``psum`` as a ``check_vma`` body binds it (JAX's name): a value
varying along the axes becomes the same on every device along them, so its transpose is a
``pvary`` rather than another sum (pmap's ``psum`` transposes to a ``psum``).

Each collective's vma rule says what it does to the manual axes it names: the reductions
(``psum``, ``pmax``, ``pmin``) make the value invariant along them (an operand invariant
along all of them is first ``pvary``-ed, one varying along only some is JAX's error);
``all_gather``, ``psum_scatter``, ``ppermute`` and ``all_to_all`` give values that vary along
their axes (the operand is ``pvary``-ed to them first); ``axis_index`` varies along its axis.
"""
from __future__ import annotations

from hlox.core import vma as vma_lib
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import parallel

__all__ = ["pvary_p", "psum_invariant_p"]


def _names(param) -> frozenset:
  return frozenset(param) if isinstance(param, (tuple, list)) else frozenset([param])


def _manual(param) -> frozenset:
  """The manual axes among a collective's axis names (others are vmap's, batched away)."""
  return (_names(param) & frozenset(vma_lib.manual_axes())) - vma_lib.dropped()


# --- pvary -------------------------------------------------------------------------------

pvary_p = Primitive("pvary")
pvary_p.def_impl(lambda x, *, axes: x)
pvary_p.def_abstract_eval(lambda x, *, axes: x)
xla.register_lowering(pvary_p, lambda ctx, x, *, axes: x)
batching.primitive_batchers[pvary_p] = lambda vals, dims, *, axes: (
    pvary_p.bind(vals[0], axes=axes), dims[0])
ad.deflinear(pvary_p, lambda ct, x, *, axes: [psum_invariant_p.bind(ct, axes=axes)])
vma_lib.pvary_p = pvary_p
vma_lib.rules[pvary_p] = lambda in_avals, *, axes: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]) | frozenset(axes))


# --- psum_invariant ----------------------------------------------------------------------

psum_invariant_p = Primitive("psum_invariant")
psum_invariant_p.def_impl(parallel._unbound_impl("psum"))
psum_invariant_p.def_abstract_eval(lambda x, *, axes: ShapedArray(x.shape, x.dtype))
_psum_lowering = parallel._all_reduce_lowering(parallel._hlo("add"))
xla.register_lowering(psum_invariant_p, lambda ctx, x, *, axes: _psum_lowering(
    ctx, x, axes=axes, axis_index_groups=None))
ad.deflinear(psum_invariant_p, lambda ct, x, *, axes: [pvary_p.bind(ct, axes=axes)])


def _psum_invariant_batch(axis_data, vals, dims, *, axes):
  if axis_data.name not in axes:
    return psum_invariant_p.bind(vals[0], axes=axes), dims[0]
  # Summing along a vmap axis too (a body's vmap with that name): psum's own rule.
  return batching.fancy_primitive_batchers[parallel.psum_p](
      axis_data, vals, dims, axes=axes, axis_index_groups=None)

batching.fancy_primitive_batchers[psum_invariant_p] = _psum_invariant_batch


def bind_psum(x, axes):
  """``psum`` in a check_vma body over its manual axes: partial sums (unreduced along
  ``axes``) are summed by ``unreduced_psum``, other values by ``psum_invariant``."""
  aval = get_aval(x)
  if getattr(aval, "_ur", ()) and state_of(aval, axes, "jax.lax.psum") == "unreduced":
    return unreduced_psum_p.bind(x, axes=tuple(axes))
  return psum_invariant_p.bind(x, axes=tuple(axes))


_STATE_ORDER = ("varying", "unreduced", "reduced", "invarying")


def state_of(aval, axes, name: str) -> str:
  """``'varying'``, ``'unreduced'``, ``'reduced'`` or ``'invarying'``: what ``aval`` is
  along all of ``axes`` (JAX's error when it differs between them)."""
  states = set()
  for a in axes:
    states.add("varying" if a in aval.vma else "unreduced" if a in aval.unreduced
               else "reduced" if a in aval.reduced else "invarying")
  if len(states) > 1:
    raise ValueError(
        f"{name} can only accept axis_name which corresponds to one of varying, unreduced, "
        f"reduced or invarying state of the input. Got input type: {aval}, axes: "
        f"{tuple(axes)} and input state: "
        f"{{{', '.join(repr(k) for k in _STATE_ORDER if k in states)}}}")
  return states.pop()

vma_lib.invariant_binders[parallel.psum_p] = bind_psum


# --- rules of the collectives ------------------------------------------------------------

_STATES = "{'varying', 'invarying'}"


def _reduction_rule(name, param="axes"):
  def rule(in_avals, /, **params):
    vma = vma_lib.of(in_avals[0])
    axes = _manual(params[param])
    if not axes & vma:  # invariant along all: each device contributes its (equal) copy
      vma = vma | axes
    elif not axes <= vma:
      raise ValueError(
          f"jax.lax.{name} can only accept axis_name which corresponds to one of varying, "
          "unreduced, reduced or invarying state of the input. Got input type: "
          f"{in_avals[0]}, axes: {tuple(params[param]) if isinstance(params[param], (tuple, list)) else (params[param],)} "
          f"and input state: {_STATES}")
    return [vma], vma - axes
  return rule


for _prim, _name in ((psum_invariant_p, "psum"), (parallel.psum_p, "psum"),
                     (parallel.pmax_p, "pmax"), (parallel.pmin_p, "pmin")):
  vma_lib.rules[_prim] = _reduction_rule(_name)


def _varying_rule(in_avals, /, *, axis_name, **params):
  vma = vma_lib.of(in_avals[0]) | _manual(axis_name)
  return [vma], vma

for _prim in (parallel.all_gather_p, parallel.reduce_scatter_p, parallel.ppermute_p,
              parallel.all_to_all_p):
  vma_lib.rules[_prim] = _varying_rule

vma_lib.rules[parallel.axis_index_p] = lambda in_avals, *, axis_name: (
    [], _manual(axis_name))


# --- unreduced and reduced manual axes ---------------------------------------------------
# A value *reduced* along a manual axis is the same on every device along it, but its
# cotangent there is a partial sum (*unreduced*: each device holds a term of the value).
# The casts between the states are the identity on values; what they change is the type
# (``ShapedArray.unreduced``/``reduced``) and so what autodiff does: a reduced input's
# cotangent stays a partial sum (the transpose of ``reduced_vary_cast`` is
# ``vary_unreduced_cast``) instead of being summed as an invariant input's is (``pvary``).

def _axes_set(axes) -> frozenset:
  return frozenset(axes if isinstance(axes, (tuple, list)) else (axes,))


def _check_partial_free(name, aval, axes):
  """JAX's check that a collective's operand is neither unreduced nor reduced along its
  axes."""
  for kind, have in (("unreduced", aval.unreduced), ("reduced", aval.reduced)):
    if have & axes:
      raise ValueError(f"{name} cannot accept args which are {kind}. Got "
                       f"{aval.str_short(True)} and axes={set(axes)}")


def _cast(name, frm: str, to: str, out_ur):
  """A no-op cast from state ``frm`` to ``to`` along ``axes`` (JAX's names and errors);
  ``out_ur(unreduced, reduced, axes)`` gives the result's unreduced and reduced axes."""
  prim = Primitive(name)
  prim.def_impl(lambda x, *, axes: x)
  prim.def_abstract_eval(lambda x, *, axes: x)
  xla.register_lowering(prim, lambda ctx, x, *, axes: x)

  def ur_rule(in_avals, *, axes):
    aval, axes = in_avals[0], frozenset(axes)
    state = {"varying": aval.vma, "reduced": aval.reduced, "unreduced": aval.unreduced}
    if frm != "invarying" and not (state[frm] & axes):
      raise ValueError(
          f"{name[:-2] if name.endswith('_p') else name} is a {frm.capitalize()}->"
          f"{to.capitalize()} collective. This means that the axis names mentioned in "
          f"`axes` passed to it must be present in `jax.typeof(x).mat.{frm}`. Got "
          f"axes={tuple(axes)} and jax.typeof(x).mat.{frm}={state[frm]}")
    if state[to] & axes:
      raise ValueError(f"{name} input cannot be {to} across the axis_name provided. Got "
                       f"x={aval.str_short(True)} and axis_name={tuple(axes)}")
    return out_ur(aval.unreduced, aval.reduced, axes)
  vma_lib.ur_rules[prim] = ur_rule
  vma_lib.ur_sources.add(prim)
  return prim


reduced_vary_cast_p = _cast("reduced_vary_cast_p", "reduced", "varying",
                            lambda u, r, axes: (u, r - axes))
vary_unreduced_cast_p = _cast("vary_unreduced_cast_p", "varying", "unreduced",
                              lambda u, r, axes: (u | axes, r))
preduced_p = _cast("preduced", "invarying", "reduced", lambda u, r, axes: (u, r | axes))
vma_lib.reduced_vary_cast_p = reduced_vary_cast_p
vma_lib.rules[reduced_vary_cast_p] = lambda in_avals, *, axes: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]) | frozenset(axes))
vma_lib.rules[vary_unreduced_cast_p] = lambda in_avals, *, axes: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]) - frozenset(axes))
vma_lib.rules[preduced_p] = lambda in_avals, *, axes: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]))


def _bind_cast(prim, x, axes):
  """``prim`` along the manual axes among ``axes`` in a check_vma body (elsewhere the
  value as it is: without types there is nothing to cast)."""
  axes = tuple(a for a in vma_lib.in_order(_axes_set(axes)) if a not in vma_lib.dropped())
  if not vma_lib.active[0] or not axes:
    return x
  return prim.bind(x, axes=axes)


def reduced_vary_cast(x, axes):
  return _bind_cast(reduced_vary_cast_p, x, axes)


def vary_unreduced_cast(x, axes):
  return _bind_cast(vary_unreduced_cast_p, x, axes)


def preduced(x, axes):
  return _bind_cast(preduced_p, x, axes)


# --- unreduced_psum: partial sums summed (unreduced -> invariant) ------------------------

unreduced_psum_p = Primitive("unreduced_psum")
unreduced_psum_p.def_impl(parallel._unbound_impl("psum"))
unreduced_psum_p.def_abstract_eval(lambda x, *, axes: ShapedArray(x.shape, x.dtype))
xla.register_lowering(unreduced_psum_p, lambda ctx, x, *, axes: _psum_lowering(
    ctx, x, axes=axes, axis_index_groups=None))
vma_lib.rules[unreduced_psum_p] = lambda in_avals, *, axes: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]))


def _unreduced_psum_ur(in_avals, *, axes):
  aval, axes = in_avals[0], frozenset(axes)
  if not aval.unreduced:
    raise ValueError("unreduced_psum only accepts inputs that are unreduced. Got "
                     f"{aval.str_short(True)}")
  if not aval.unreduced & axes:
    raise ValueError(
        "unreduced_psum is a Unreduced -> Invariant collective. This means that the "
        f"axes={tuple(axes)} passed to `unreduced_psum` must be present in "
        f"jax.typeof(x).mat.unreduced={aval.unreduced}")
  return aval.unreduced - axes, aval.reduced

vma_lib.ur_rules[unreduced_psum_p] = _unreduced_psum_ur
vma_lib.ur_sources.add(unreduced_psum_p)


def unreduced_psum(x, axes):
  return _bind_cast(unreduced_psum_p, x, axes)


ad.deflinear(reduced_vary_cast_p, lambda ct, x, *, axes: [vary_unreduced_cast(ct, axes)])
ad.deflinear(vary_unreduced_cast_p, lambda ct, x, *, axes: [reduced_vary_cast(ct, axes)])
ad.deflinear(preduced_p, lambda ct, x, *, axes: [unreduced_psum(ct, axes)])
ad.deflinear(unreduced_psum_p, lambda ct, x, *, axes: [preduced(ct, axes)])


# --- all_gather to reduced, and its transpose --------------------------------------------

all_gather_reduced_p = Primitive("all_gather_reduced")
all_gather_reduced_p.def_impl(parallel._unbound_impl("all_gather"))
all_gather_reduced_p.def_abstract_eval(parallel._all_gather_abstract_eval)
xla.register_lowering(all_gather_reduced_p, parallel._all_gather_lowering)
unreduced_reduce_scatter_p = Primitive("unreduced_reduce_scatter")
unreduced_reduce_scatter_p.def_impl(parallel._unbound_impl("psum_scatter"))
unreduced_reduce_scatter_p.def_abstract_eval(parallel._reduce_scatter_abstract_eval)
xla.register_lowering(unreduced_reduce_scatter_p, parallel._reduce_scatter_lowering)
vma_lib.rules[all_gather_reduced_p] = lambda in_avals, *, axis_name, **params: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]) - _axes_set(axis_name))
vma_lib.rules[unreduced_reduce_scatter_p] = lambda in_avals, *, axis_name, **params: (
    [vma_lib.of(in_avals[0])], vma_lib.of(in_avals[0]) | _axes_set(axis_name))


def _all_gather_reduced_ur(in_avals, *, axis_name, **params):
  aval, axes = in_avals[0], _axes_set(axis_name)
  if not aval.vma & axes:
    raise ValueError(
        "all_gather_reduced is a Varying -> Reduced collective. This means that the "
        f"axis_name={tuple(axes)} passed to `all_gather_reduced` must be present in "
        f"jax.typeof(x).mat.varying={aval.vma}")
  if aval.reduced & axes:
    raise ValueError("all_gather_reduced's input cannot be reduced across the axis_name "
                     f"provided. Got x={aval.str_short(True)} and axis_name={tuple(axes)}")
  return aval.unreduced, aval.reduced | axes


def _unreduced_reduce_scatter_ur(in_avals, *, axis_name, **params):
  aval, axes = in_avals[0], _axes_set(axis_name)
  if not aval.unreduced & axes:
    raise ValueError(
        "unreduced_psum_scatter is a Unreduced -> Varying collective. This means that the "
        f"axis_name={tuple(axes)} passed to `unreduced_psum_scatter` must be present in "
        f"jax.typeof(x).mat.unreduced={aval.unreduced}")
  return aval.unreduced - axes, aval.reduced

vma_lib.ur_rules[all_gather_reduced_p] = _all_gather_reduced_ur
vma_lib.ur_rules[unreduced_reduce_scatter_p] = _unreduced_reduce_scatter_ur
vma_lib.ur_sources.update((all_gather_reduced_p, unreduced_reduce_scatter_p))


def _gather_reduced(x, **params):
  if not vma_lib.active[0]:  # no types: an ordinary gather
    return parallel.all_gather_p.bind(x, **params)
  return all_gather_reduced_p.bind(x, **params)

parallel.gather_to["reduced"] = _gather_reduced


def _all_gather_reduced_transpose(ct, x, *, all_gather_dimension, **params):
  if not vma_lib.active[0]:
    return [parallel.reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension,
                                           **params)]
  return [unreduced_reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension,
                                          **params)]


def _unreduced_reduce_scatter_transpose(ct, x, *, scatter_dimension, **params):
  return [_gather_reduced(ct, all_gather_dimension=scatter_dimension, **params)]

ad.deflinear(all_gather_reduced_p, _all_gather_reduced_transpose)
ad.deflinear(unreduced_reduce_scatter_p, _unreduced_reduce_scatter_transpose)


# --- the other collectives keep the partial axes they do not run over --------------------

def _keep_partial(name, param):
  def rule(in_avals, **params):
    axes = _axes_set(params[param])
    for a in in_avals:
      _check_partial_free(name, a, axes)
    return in_avals[0].unreduced, in_avals[0].reduced
  return rule


for _prim, _name, _param in (
    (psum_invariant_p, "psum", "axes"), (parallel.psum_p, "psum", "axes"),
    (parallel.pmax_p, "pmax", "axes"), (parallel.pmin_p, "pmin", "axes"),
    (parallel.all_gather_p, "all_gather", "axis_name"),
    (parallel.reduce_scatter_p, "psum_scatter", "axis_name"),
    (parallel.ppermute_p, "ppermute", "axis_name"),
    (parallel.all_to_all_p, "all_to_all", "axis_name")):
  vma_lib.ur_rules[_prim] = _keep_partial(_name, _param)
vma_lib.ur_rules[pvary_p] = lambda in_avals, *, axes: (in_avals[0].unreduced,
                                                       in_avals[0].reduced)
