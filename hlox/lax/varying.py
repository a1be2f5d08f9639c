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
  return batching.axis_primitive_batchers[parallel.psum_p](
      axis_data, vals, dims, axes=axes, axis_index_groups=None)

batching.axis_primitive_batchers[psum_invariant_p] = _psum_invariant_batch


def bind_psum(x, axes):
  """``psum`` in a check_vma body over its manual axes."""
  return psum_invariant_p.bind(x, axes=tuple(axes))

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
