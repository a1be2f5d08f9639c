"""Registrar helpers that keep each primitive's definition to a few lines.

``standard_primitive`` makes a primitive whose eager implementation is the cached
single-primitive executable and whose abstract evaluation is built from a shape rule and a
dtype rule. The elementwise helpers add the broadcasting shape rule and dtype checks.

The bottom of ``lax``: it imports no primitive module (every other module imports it).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.primitive import Primitive
from hlox.interpreters import batching, xla


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
      # JAX's wording, shapes spelled as Python tuples so the message can be searched.
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(a.shape) for a in avals)}.")
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


# The numpy function that does what a binary lax operation does, promoting its inputs, for
# the tip in the dtype-mismatch error (as JAX's message gives it).
_PROMOTING_EQUIVALENT = {
    "abs": "fabs", "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
    "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh", "div": "divide", "eq": "equal",
    "max": "maximum", "min": "minimum", "mul": "multiply", "ne": "not_equal", "neg": "negative",
    "pow": "float_power", "select": "where", "shift_left": "left_shift",
    "shift_right_logical": "right_shift", "shift_right_arithmetic": "right_shift",
    "sub": "subtract"}
_SAME_NAME_IN_NUMPY = frozenset(
    "add bitwise_and bitwise_not bitwise_or bitwise_xor cbrt ceil concatenate cos cosh exp "
    "expm1 floor greater greater_equal less less_equal log logical_and logical_not logical_or "
    "logical_xor log1p nextafter round sign sin sinh sqrt tan tanh".split())


def _accepts(kinds: Sequence[str], dtype) -> bool:
  return any(_dtype_kinds[k](dtype) for k in kinds)


def naryop_dtype_rule(name: str, kinds_per_arg: Sequence[Sequence[str]], *avals,
                      require_same: bool = True, **params):
  for i, (aval, kinds) in enumerate(zip(avals, kinds_per_arg)):
    if not _accepts(kinds, aval.dtype):
      if aval.dtype == dtypes.float0:
        raise dtypes.float0_error(name)
      raise TypeError(f"{name} does not accept dtype {aval.dtype.name} (argument {i}); "
                      f"accepted: {', '.join(kinds)} types")
  if require_same and len({a.dtype for a in avals}) > 1:
    msg = (f"lax.{name} requires arguments to have the same dtypes, got "
           f"{', '.join(a.dtype.name for a in avals)}.")
    equivalent = _PROMOTING_EQUIVALENT.get(name, name if name in _SAME_NAME_IN_NUMPY else None)
    if equivalent is not None:
      msg += (f" (Tip: jnp.{equivalent} is a similar function that does automatic type "
              "promotion on inputs).")
    raise TypeError(msg)
  return avals[0].dtype


_NARROW_INTS = dtypes.narrow_int_dtypes


def naryop(result_dtype: Callable | None, kinds: Sequence[Sequence[str]], name: str,
           require_same_dtypes: bool = True, narrow_ints: bool = True) -> Primitive:
  """An elementwise primitive with ``len(kinds)`` operands of the accepted dtype kinds.

  ``result_dtype(dtype)`` maps the (common) input dtype to the output dtype (e.g. comparisons
  return bool); ``None`` keeps the input dtype. ``narrow_ints=False``: int4/uint4 operands
  are refused (as JAX refuses them where backends lack the operation).
  """
  def dtype_rule(*avals, **params):
    dtype = naryop_dtype_rule(name, kinds, *avals, require_same=require_same_dtypes)
    if not narrow_ints and dtype in _NARROW_INTS:
      raise TypeError(f"{name} does not accept dtype {dtype.name}. Support for narrow-width "
                      "integers is platform-dependent and limited to a few specific "
                      "operations, e.g. basic arithmetic and type casting.")
    return dtype if result_dtype is None else result_dtype(dtype)

  # Weak only when every operand is weak; this holds for comparisons too (JAX: ``1.0 < 2.0``
  # is a weakly typed bool; a weak bool still promotes like bool).
  prim = standard_primitive(partial(broadcasting_shape_rule, name), dtype_rule, name)
  elementwise_primitives.append(prim)
  return prim


# Every ``naryop`` primitive: programs with pmaps run them on pieces of split values.
elementwise_primitives: list = []


def unop(kinds: Sequence[str], name: str, result_dtype: Callable | None = None,
         narrow_ints: bool = True) -> Primitive:
  return naryop(result_dtype, [kinds], name, narrow_ints=narrow_ints)


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
# (``defbroadcasting``, ``moveaxis`` and ``broadcast_batched`` need primitives: they are in
# ``hlox.lax.base``.)

def defvectorized(prim) -> None:
  """Batching for a unary elementwise primitive: apply it, keep the batch dimension."""
  def rule(vals, dims, **params):
    return prim.bind(*vals, **params), dims[0]
  batching.primitive_batchers[prim] = rule
