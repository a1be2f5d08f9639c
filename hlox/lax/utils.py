"""Registrar helpers that keep each primitive's definition to a few lines.

``standard_primitive`` makes a primitive whose eager implementation is the cached
single-primitive executable and whose abstract evaluation is built from a shape rule and a
dtype rule. The elementwise helpers add the broadcasting shape rule and dtype checks.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.interpreters import xla


def standard_primitive(shape_rule: Callable, dtype_rule: Callable, name: str,
                       weak_type_rule: Callable | None = None,
                       multiple_results: bool = False) -> Primitive:
  """A primitive with eager dispatch and abstract eval ``ShapedArray(shape_rule, dtype_rule)``.

  Rules take ``(*avals, **params)``. The default weak-type rule keeps the result weak only
  when every input is weak (as JAX does for elementwise operations).
  """
  prim = Primitive(name)
  prim.multiple_results = multiple_results
  prim.def_impl(partial(xla.apply_primitive, prim))
  weak_type_rule = weak_type_rule or _standard_weak_type_rule

  def abstract_eval(*avals, **params):
    shapes = shape_rule(*avals, **params)
    dts = dtype_rule(*avals, **params)
    weak = weak_type_rule(*avals, **params)
    if multiple_results:
      weaks = weak if isinstance(weak, (list, tuple)) else [weak] * len(shapes)
      return [ShapedArray(s, d, w) for s, d, w in zip(shapes, dts, weaks)]
    return ShapedArray(shapes, dts, weak)

  prim.def_abstract_eval(abstract_eval)
  return prim


def _standard_weak_type_rule(*avals, **params):
  return bool(avals) and all(a.weak_type for a in avals)


def shape_str(avals) -> str:
  return ", ".join(a.str_short() for a in avals)


# --- elementwise -------------------------------------------------------------------------

def broadcasting_shape_rule(name: str, *avals, **params) -> tuple:
  """Elementwise shapes: equal ranks broadcasting size-1 dims; scalars broadcast to any."""
  shapes = [a.shape for a in avals if a.shape]
  if not shapes:
    return ()
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions (or be "
                    f"scalars), got {shape_str(avals)}")
  result = []
  for dims in zip(*shapes):
    non_one = {d for d in dims if d != 1}
    if len(non_one) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: {shape_str(avals)}")
    result.append(non_one.pop() if non_one else 1)
  return tuple(result)


_dtype_kinds = {
    "float": lambda d: dtypes.is_float(d),
    "complex": lambda d: dtypes.is_complex(d),
    "int": lambda d: dtypes.is_int(d),
    "signed": lambda d: dtypes.is_signed_int(d),
    "unsigned": lambda d: dtypes.is_unsigned_int(d),
    "bool": lambda d: d == dtypes.bool_,
}


def _accepts(kinds: Sequence[str], dtype) -> bool:
  return any(_dtype_kinds[k](dtype) for k in kinds)


def naryop_dtype_rule(name: str, kinds_per_arg: Sequence[Sequence[str]], *avals,
                      require_same: bool = True, **params):
  for i, (aval, kinds) in enumerate(zip(avals, kinds_per_arg)):
    if not _accepts(kinds, aval.dtype):
      raise TypeError(f"{name} does not accept dtype {aval.dtype.name} (argument {i}); "
                      f"accepted: {', '.join(kinds)} types")
  if require_same and len({a.dtype for a in avals}) > 1:
    raise TypeError(f"{name} requires arguments to have the same dtype, got "
                    f"{shape_str(avals)} (convert with lax.convert_element_type or use "
                    "hlox.numpy, which promotes)")
  return avals[0].dtype


def naryop(result_dtype: Callable | None, kinds: Sequence[Sequence[str]], name: str,
           require_same_dtypes: bool = True) -> Primitive:
  """An elementwise primitive with ``len(kinds)`` operands of the accepted dtype kinds.

  ``result_dtype(dtype)`` maps the (common) input dtype to the output dtype (e.g. comparisons
  return bool); ``None`` keeps the input dtype.
  """
  def dtype_rule(*avals, **params):
    dtype = naryop_dtype_rule(name, kinds, *avals, require_same=require_same_dtypes)
    return dtype if result_dtype is None else result_dtype(dtype)

  # Weak only when every operand is weak; this holds for comparisons too (JAX: ``1.0 < 2.0``
  # is a weakly typed bool; a weak bool still promotes like bool).
  return standard_primitive(partial(broadcasting_shape_rule, name), dtype_rule, name)


def unop(kinds: Sequence[str], name: str, result_dtype: Callable | None = None) -> Primitive:
  return naryop(result_dtype, [kinds], name)


def binop(kinds: Sequence[str], name: str, result_dtype: Callable | None = None) -> Primitive:
  return naryop(result_dtype, [kinds, kinds], name)


def nary_lowering(hlo_op: Callable) -> Callable:
  """A lowering rule applying ``hlo_op`` to operands broadcast to the output shape."""
  def rule(ctx, *args, **params):
    aval_out = ctx.avals_out[0]
    args = xla.multi_broadcast(args, ctx.avals_in, aval_out.shape)
    return hlo_op(*args)
  return rule


float_kinds = ("float", "complex")
real_float = ("float",)
number_kinds = ("int", "float", "complex")
int_kinds = ("int",)
bool_or_int = ("bool", "int")
any_kinds = ("bool", "int", "float", "complex")


def canonicalize_axis(axis: int, ndim: int, name: str = "") -> int:
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name + ': ' if name else ''}axis {axis} is out of bounds for an "
                     f"array of dimension {ndim}")
  return axis % ndim if ndim else 0


# --- batching registrars -----------------------------------------------------------------

def moveaxis(x, src: int, dst: int):
  """``x`` with dimension ``src`` moved to position ``dst`` (a transpose)."""
  from hlox.lax.shapes import transpose
  from hlox.core.tracer import get_aval
  ndim = get_aval(x).ndim
  src, dst = src % ndim, dst % ndim
  if src == dst:
    return x
  perm = [d for d in range(ndim) if d != src]
  perm.insert(dst, src)
  return transpose(x, tuple(perm))


def broadcast_batched(x, size: int, dim: int):
  """Insert a mapped axis of ``size`` at ``dim`` into an unmapped value."""
  from hlox.lax.shapes import broadcast_in_dim
  from hlox.core.tracer import get_aval
  aval = get_aval(x)
  shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
  dims = tuple(d for d in range(len(shape)) if d != dim)
  return broadcast_in_dim(x, shape, dims)


def defvectorized(prim) -> None:
  """Batching for a unary elementwise primitive: apply it, keep the batch dimension."""
  from hlox.interpreters import batching

  def rule(vals, dims, **params):
    return prim.bind(*vals, **params), dims[0]
  batching.primitive_batchers[prim] = rule


def defbroadcasting(prim) -> None:
  """Batching for an n-ary elementwise primitive (operands of equal rank, or scalars).

  Batch dimensions go to the front; unbatched operands get a leading size-1 dimension (which
  the primitive broadcasts) and batched per-example scalars get trailing size-1 dimensions.
  """
  from hlox.interpreters import batching
  from hlox.lax.shapes import reshape
  from hlox.core.tracer import get_aval

  def rule(vals, dims, **params):
    ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims)]
    rank = max(ranks)
    batched_dims = {d for d in dims if d is not None}
    if len(batched_dims) == 1 and all(r == rank if d is not None else r == 0
                                      for d, r in zip(dims, ranks)):
      # Batched operands agree on the batch dimension, unbatched ones are scalars.
      return prim.bind(*vals, **params), next(iter(batched_dims))
    if any(r not in (0, rank) for r in ranks):
      shapes = ", ".join(str(get_aval(v).shape) + ("" if d is None else f" (batch dim {d})")
                         for v, d in zip(vals, dims))
      raise TypeError(f"{prim.name}: operands must have equal ranks or be scalars; got "
                      f"{shapes} under vmap")
    args = []
    for v, d, r in zip(vals, dims, ranks):
      shape = get_aval(v).shape
      if d is None:
        args.append(v if r == 0 else reshape(v, (1,) + shape))
      else:
        v = batching.moveaxis(v, d, 0)
        if r < rank:
          v = reshape(v, (get_aval(v).shape[0],) + (1,) * (rank - r) + get_aval(v).shape[1:])
        args.append(v)
    return prim.bind(*args, **params), 0
  batching.primitive_batchers[prim] = rule


def _register_batching_ops():
  from hlox.interpreters import batching
  batching.register_batching_ops(moveaxis, broadcast_batched)


_register_batching_ops()
