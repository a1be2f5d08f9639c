"""Reductions: sum, prod, max, min, all, any, mean, var, std, ptp, argmax, argmin,
count_nonzero, average, median, the nan-ignoring variants, and cumulative sums/products.

Dtype rules follow JAX: ``sum``/``prod`` of bool and of integers narrower than the default
integer give the default (u)int; ``mean``/``var``/``std`` of integers give the default float;
``max``/``min`` keep the dtype; ``argmax``/``argmin`` give the default int; float16/bfloat16
sums accumulate in float32. Results are strongly typed (as ``jax.numpy``'s are).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.shape_poly import dimension_as_value, is_symbolic_dim
from hlox.core.tracer import get_aval
from hlox.lax import reductions as _lax_red
from hlox.numpy import util
from hlox.numpy.util import (broadcast_to_shape, check_arraylike, ensure_array,
                             promote_dtypes_inexact)

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
           "ptp", "argmax", "argmin", "nanargmax", "nanargmin", "count_nonzero", "average",
           "median", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
           "cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum",
           "cumulative_prod"]

_py_any = builtins.any  # ``any`` is redefined below


# --- argument handling -------------------------------------------------------------------

def _arg(name, a):
  check_arraylike(name, a)
  return ensure_array(a)


def _check_out(name, out):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported "
                              "(hlox arrays are immutable).")


def _axis_tuple(name, axis, ndim):
  """``axis`` (None, int or sequence; negative allowed) as a sorted tuple of dimensions."""
  if axis is None:
    return tuple(range(ndim))
  axes = tuple(axis) if isinstance(axis, (tuple, list, range, np.ndarray)) else (axis,)
  out = []
  for a in axes:
    try:
      a = operator.index(a)
    except TypeError:
      raise TypeError(f"jnp.{name}: axis must be an integer or a tuple of integers, got "
                      f"{axis!r}") from None
    if not -ndim <= a < ndim:
      raise ValueError(f"jnp.{name}: axis {a} is out of bounds for array of dimension {ndim}")
    out.append(a % ndim if ndim else 0)
  if len(set(out)) != len(out):
    raise ValueError(f"jnp.{name}: duplicate value in 'axis': {axis}")
  return tuple(sorted(out))


def _user_dtype(name, dtype):
  if dtype is None:
    return None
  try:
    return dtypes.check_user_dtype(dtype, name)
  except TypeError:
    raise TypeError(f"jnp.{name}: dtype {dtype!r} is not a valid dtype") from None


def _check_where(name, where):
  if where is None:
    return None
  check_arraylike(name, where)
  where = ensure_array(where)
  if get_aval(where).dtype != dtypes.bool_:
    raise ValueError(f"jnp.{name}: where must be None or a boolean array; got dtype "
                     f"{get_aval(where).dtype.name}")
  return where


def _convert(x, dtype):
  return lax.convert_element_type(x, dtype)


def _full(shape, value, dtype):
  if is_symbolic_dim(value):  # a count known when the exported function runs
    return lax.full(shape, lax.convert_element_type(value, dtype), dtype)
  return lax.full(shape, np.asarray(value).astype(dtype), dtype)


def _select(pred, on_true, on_false):
  """``where(pred, on_true, on_false)`` for arrays of one shape and dtype."""
  return lax.select(pred, on_true, on_false)


def _masked(name, a, where, fill):
  """``a`` with the elements where ``where`` is False replaced by the scalar ``fill``."""
  aval = get_aval(a)
  try:
    mask = broadcast_to_shape(where, aval.shape)
  except ValueError:
    raise ValueError(f"jnp.{name}: where of shape {get_aval(where).shape} cannot be "
                     f"broadcast to the array's shape {aval.shape}") from None
  return _select(mask, a, _full(aval.shape, fill, aval.dtype))


def _isnan(x):
  return lax.ne(x, x)


def _upcast_f16(dtype):
  dtype = np.dtype(dtype)
  return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def _default_uint():
  return dtypes.uint64 if dtypes.x64_enabled() else dtypes.uint32


def _promote_integer(dtype):
  """bool and narrow integers widen to the default (u)int, as JAX's sum/prod do."""
  dtype = np.dtype(dtype)
  if dtype == dtypes.bool_:
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned_int(dtype):
    uint = _default_uint()
    return uint if dtype.itemsize < uint.itemsize else dtype
  if dtypes.is_signed_int(dtype):
    sint = dtypes.default_int_dtype()
    return sint if dtype.itemsize < sint.itemsize else dtype
  return dtype


def _to_numeric(a):
  """bool becomes the default int; other dtypes stay."""
  if get_aval(a).dtype == dtypes.bool_:
    return _convert(a, dtypes.default_int_dtype())
  return a


def _to_bool(a):
  if dtypes.is_complex(get_aval(a).dtype):
    # Nonzero means either part nonzero (NumPy); a cast to bool would look at the real part.
    return lax.ne(a, np.zeros((), get_aval(a).dtype))
  return _convert(a, dtypes.bool_)


def _is_inexact(a):
  return dtypes.is_inexact(get_aval(a).dtype)


# --- the generic reduction ---------------------------------------------------------------

_identities = {
    "sum": _lax_red._zero, "prod": _lax_red._one, "max": _lax_red._max_identity,
    "min": _lax_red._min_identity, "and": _lax_red._and_identity, "or": _lax_red._zero,
}
_bool_kinds = {"sum": "or", "prod": "and"}


def _reduce(kind, x, dims):
  return {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max,
          "min": lax.reduce_min, "and": lax.reduce_and, "or": lax.reduce_or}[kind](x, dims)


def _combine(kind, x, y):
  return {"sum": lambda: lax.add(x, y), "prod": lambda: lax.mul(x, y),
          "max": lambda: lax.max(x, y), "min": lambda: lax.min(x, y),
          "and": lambda: lax.bitwise_and(x, y), "or": lambda: lax.bitwise_or(x, y)}[kind]()


def _reduction(a, name, kind, *, has_identity=True, preproc=None, upcast_f16=False,
               axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
               promote_integers=False):
  _check_out(name, out)
  a = _arg(name, a)
  where = _check_where(name, where)
  if initial is None and not has_identity and where is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                     "where mask one has to specify 'initial'")
  if preproc is not None:
    a = preproc(a)
  aval = get_aval(a)
  dims = _axis_tuple(name, axis, aval.ndim)
  if initial is None and not has_identity and _py_any(aval.shape[d] == 0 for d in dims):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                     f"(array of shape {aval.shape}, axis={axis})")
  result_dtype = _user_dtype(name, dtype)
  if result_dtype is None:
    result_dtype = _promote_integer(aval.dtype) if promote_integers else aval.dtype
  computation_dtype = result_dtype
  if upcast_f16 and dtypes.is_inexact(result_dtype):
    computation_dtype = _upcast_f16(result_dtype)
  a = _convert(a, computation_dtype)
  if computation_dtype == dtypes.bool_:
    kind = _bool_kinds.get(kind, kind)
  if where is not None:
    a = _masked(name, a, where, _identities[kind](computation_dtype))
  result = _reduce(kind, a, dims)
  if initial is not None:
    initial = _convert(_arg(name, initial), computation_dtype)
    if get_aval(initial).shape != ():
      raise ValueError(f"initial value must be a scalar. Got array of shape "
                       f"{get_aval(initial).shape} (jnp.{name})")
    result = _combine(kind, initial, result)
  if keepdims:
    result = lax.expand_dims(result, dims)
  return _convert(result, result_dtype)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers=True):
  """Sum of array elements over the given axes.

  bool and integers narrower than the default integer sum in the default integer type (unless
  ``promote_integers`` is False); float16 and bfloat16 accumulate in float32 and are rounded
  back.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    promote_integers: if True (the default), bool and narrow integers accumulate in the default
      integer type (unsigned in the unsigned one); if False they keep their dtype.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.sum(x)
    Array(21, dtype=int32)
    >>> jnp.sum(x, axis=0)
    Array([5, 7, 9], dtype=int32)
    >>> jnp.sum(x, axis=1, keepdims=True, where=x > 1)
    Array([[ 5],
           [15]], dtype=int32)
  """
  return _reduction(a, "sum", "sum", preproc=_to_numeric, upcast_f16=dtype is None,
                    axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                    where=where, promote_integers=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of array elements over the given axes.

  The dtype rules are those of ``sum``.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    promote_integers: if True (the default), bool and narrow integers accumulate in the default
      integer type (unsigned in the unsigned one); if False they keep their dtype.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.prod(x)
    Array(720, dtype=int32)
    >>> jnp.prod(x, axis=1)
    Array([  6, 120], dtype=int32)
  """
  return _reduction(a, "prod", "prod", preproc=_to_numeric, upcast_f16=dtype is None,
                    axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                    where=where, promote_integers=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Maximum of array elements over the given axes.

  A NaN propagates to the result. Reducing an empty axis requires ``initial``
  (otherwise ``ValueError``).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part. An
      empty selection then needs ``initial``.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), with
    ``a``'s dtype.

  Examples:
    >>> x = jnp.array([[1, 5, 3], [4, 2, 6]])
    >>> jnp.max(x)
    Array(6, dtype=int32)
    >>> jnp.max(x, axis=0)
    Array([4, 5, 6], dtype=int32)
    >>> jnp.max(x, axis=1, initial=5, where=x < 5)
    Array([5, 5], dtype=int32)
  """
  return _reduction(a, "max", "max", has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Minimum of array elements over the given axes.

  A NaN propagates to the result. Reducing an empty axis requires ``initial``
  (otherwise ``ValueError``).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part. An
      empty selection then needs ``initial``.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), with
    ``a``'s dtype.

  Examples:
    >>> x = jnp.array([[1, 5, 3], [4, 2, 6]])
    >>> jnp.min(x)
    Array(1, dtype=int32)
    >>> jnp.min(x, axis=1)
    Array([1, 2], dtype=int32)
  """
  return _reduction(a, "min", "min", has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Alias of ``max``."""
  return max(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Alias of ``min``."""
  return min(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """Whether every element over the given axes is non-zero (True for empty reductions).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), of
    dtype bool.

  Examples:
    >>> x = jnp.array([[True, False], [True, True]])
    >>> jnp.all(x)
    Array(False, dtype=bool)
    >>> jnp.all(x, axis=1)
    Array([False,  True], dtype=bool)
  """
  return _reduction(a, "all", "and", preproc=_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """Whether any element over the given axes is non-zero (False for empty reductions).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), of
    dtype bool.

  Examples:
    >>> x = jnp.array([[0, 0], [0, 3]])
    >>> jnp.any(x)
    Array(True, dtype=bool)
    >>> jnp.any(x, axis=1)
    Array([False,  True], dtype=bool)
  """
  return _reduction(a, "any", "or", preproc=_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


# --- mean, var, std ----------------------------------------------------------------------

def _count(a, dims, keepdims, where, dtype):
  """How many elements each reduction sees: static without ``where``, else a sum."""
  aval = get_aval(a)
  if where is None:
    n = 1
    for d in dims:
      n *= aval.shape[d]
    if is_symbolic_dim(n):  # a size known only when the exported function is called
      return lax.convert_element_type(dimension_as_value(n), dtype)
    return np.array(n).astype(dtype)
  mask = broadcast_to_shape(where, aval.shape)
  return sum(mask, dims, dtype=dtype, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean over the given axes.

  Integer and bool inputs give the default floating dtype; float16 and bfloat16 accumulate in
  float32.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> x = jnp.array([[1, 2], [3, 4]])
    >>> jnp.mean(x)
    Array(2.5, dtype=float32)
    >>> jnp.mean(x, axis=0)
    Array([2., 3.], dtype=float32)
  """
  _check_out("mean", out)
  a = _arg("mean", a)
  where = _check_where("mean", where)
  aval = get_aval(a)
  dims = _axis_tuple("mean", axis, aval.ndim)
  result_dtype = _user_dtype("mean", dtype)
  upcast = result_dtype is None
  if result_dtype is None:
    result_dtype = dtypes.to_inexact_dtype(aval.dtype)
  computation_dtype = result_dtype
  if upcast and dtypes.is_inexact(result_dtype):
    computation_dtype = _upcast_f16(result_dtype)
  total = sum(a, dims, dtype=computation_dtype, keepdims=keepdims, where=where)
  count = _count(a, dims, keepdims, where, computation_dtype)
  return _convert(lax.div(total, count), result_dtype)


_mean = mean  # var's ``mean`` parameter shadows the function


def _var_dtypes(name, a_dtype, dtype):
  """(computation dtype, result dtype): real results for complex input, as NumPy gives."""
  if dtype is not None:
    if dtypes.is_complex(a_dtype) and not dtypes.is_complex(dtype):
      raise ValueError(f"jnp.{name}: a real dtype ({dtype.name}) for the variance of "
                       "complex values is not supported")
    computation, result = dtype, dtype
  elif not dtypes.is_inexact(a_dtype):
    computation = result = dtypes.to_inexact_dtype(a_dtype)
  else:
    computation = a_dtype
    result = np.finfo(a_dtype).dtype if dtypes.is_complex(a_dtype) else a_dtype
  return _upcast_f16(computation), np.dtype(result)


def _abs2(x):
  """``|x|**2``: a real square, or ``re(x * conj(x))`` for complex values."""
  if _is_inexact(x) and dtypes.is_complex(get_aval(x).dtype):
    return lax.real(lax.mul(x, lax.conj(x)))
  return lax.mul(x, x)


def _correction(ddof, correction):
  if correction is None:
    return ddof
  if not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Variance over the given axes.

  Computes ``sum(abs(x - mean)**2) / (N - correction)``; NaN where ``N - correction <= 0``.
  Complex input gives a real result.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    ddof: the degrees of freedom subtracted from the count (NumPy's name for ``correction``).
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    mean: optional precomputed mean of ``a`` over ``axis`` (with ``keepdims=True`` shape).
    correction: the array API's name for ``ddof`` (pass only one of them).

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> x = jnp.array([1., 2., 3., 4.])
    >>> jnp.var(x)
    Array(1.25, dtype=float32)
    >>> jnp.var(x, ddof=1)
    Array(1.6666667, dtype=float32)
  """
  _check_out("var", out)
  return _var_call(a, axis=_hashable_axis(axis), dtype=dtype,
                   correction=_correction(ddof, correction), keepdims=keepdims, where=where,
                   a_mean=mean)


def _hashable_axis(axis):
  return tuple(axis) if isinstance(axis, list) else axis


def _var_call(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None,
              a_mean=None, name="var"):
  """``var`` past its argument handling: JAX's jitted ``_var`` (staged as such, below), whose
  dynamic arguments are the array, the correction, ``where`` and the mean."""
  return _var(name, a, axis, dtype, correction, keepdims, where, a_mean)


def _std_call(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None,
              a_mean=None):
  """``std`` past its argument handling (JAX's jitted ``_std``): the root of ``_var``."""
  return lax.sqrt(_var_call(a, axis=axis, dtype=dtype, correction=correction,
                            keepdims=keepdims, where=where, a_mean=a_mean, name="std"))


def _var(name, a, axis, dtype, correction, keepdims, where, a_mean):
  a = _arg(name, a)
  where = _check_where(name, where)
  aval = get_aval(a)
  dims = _axis_tuple(name, axis, aval.ndim)
  computation_dtype, result_dtype = _var_dtypes(name, aval.dtype, _user_dtype(name, dtype))
  a = _convert(a, computation_dtype)
  if a_mean is None:
    a_mean = _mean(a, dims, dtype=computation_dtype, keepdims=True, where=where)
  else:
    a_mean = _convert(_arg(name, a_mean), computation_dtype)
  centered = lax.sub(a, a_mean)
  # (Real values are squared by ``square``, as in JAX's jaxprs.)
  centered = _abs2(centered) if dtypes.is_complex(get_aval(centered).dtype) else \
      lax.square(centered)
  real_dtype = get_aval(centered).dtype
  count = _count(a, dims, keepdims, where, real_dtype)
  normalizer = lax.sub(count, _convert(correction, real_dtype))
  total = sum(centered, dims, dtype=real_dtype, keepdims=keepdims, where=where)
  result = _convert(lax.div(total, normalizer), result_dtype)
  # NaN where nothing is left to divide by (JAX's ``_where``, staged as its own call).
  positive = lax.gt(normalizer, np.zeros((), real_dtype)[()])
  return util._where(positive, result, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Standard deviation over the given axes: ``sqrt(var(...))`` with the same arguments.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    ddof: the degrees of freedom subtracted from the count (NumPy's name for ``correction``).
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    mean: optional precomputed mean of ``a`` over ``axis`` (with ``keepdims=True`` shape).
    correction: the array API's name for ``ddof`` (pass only one of them).

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> x = jnp.array([[1., 3.], [2., 6.]])
    >>> jnp.std(x)
    Array(1.8708287, dtype=float32)
    >>> jnp.std(x, axis=0)
    Array([0.5, 1.5], dtype=float32)
  """
  _check_out("std", out)
  dtype = _user_dtype("std", dtype)
  if dtype is not None and not dtypes.is_inexact(dtype):
    raise ValueError(f"jnp.std: dtype must be inexact, got {dtype.name}")
  return _std_call(a, axis=_hashable_axis(axis), dtype=dtype,
                   correction=_correction(ddof, correction), keepdims=keepdims, where=where,
                   a_mean=mean)


def ptp(a, axis=None, out=None, keepdims=False):
  """Range of values (``max - min``) over the given axes.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), with
    ``a``'s dtype.

  Examples:
    >>> jnp.ptp(jnp.array([[4, 9, 2], [1, 1, 1]]), axis=1)
    Array([7, 0], dtype=int32)
  """
  _check_out("ptp", out)
  return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
  """Number of non-zero elements over the given axes.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    keepdims: if True, reduced axes stay in the result with size 1.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), of the
    default integer dtype.

  Examples:
    >>> x = jnp.array([[0, 1, 2], [0, 0, 3]])
    >>> jnp.count_nonzero(x)
    Array(3, dtype=int32)
    >>> jnp.count_nonzero(x, axis=0)
    Array([0, 1, 2], dtype=int32)
  """
  a = _arg("count_nonzero", a)
  return sum(_to_bool(a), axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted mean over the given axes.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    weights: optional array-like of weights: of ``a``'s shape or, with a single ``axis``, 1-d
      of that axis' length. None weighs every element equally.
    returned: if True, also return the sum of the weights (broadcast to the average's shape).
    keepdims: if True, reduced axes stay in the result with size 1.

  Returns:
    The average, of a floating dtype; with ``returned``, a tuple ``(average, sum_of_weights)``.

  Examples:
    >>> x = jnp.array([1., 2., 3.])
    >>> jnp.average(x)
    Array(2., dtype=float32)
    >>> jnp.average(x, weights=jnp.array([3., 1., 0.]))
    Array(1.25, dtype=float32)
    >>> jnp.average(x, weights=jnp.array([1., 1., 2.]), returned=True)
    (Array(2.25, dtype=float32), Array(4., dtype=float32))
  """
  a = _arg("average", a)
  ndim = get_aval(a).ndim
  dims = _axis_tuple("average", axis, ndim)
  if weights is None:
    a, = promote_dtypes_inexact(a)
    avg = mean(a, axis=dims, keepdims=keepdims)
    n = 1
    for d in dims:
      n *= get_aval(a).shape[d]
    weights_sum = _full((), n, get_aval(avg).dtype)
  else:
    weights = _arg("average", weights)
    a, weights = promote_dtypes_inexact(a, weights)
    shape, w_shape = get_aval(a).shape, get_aval(weights).shape
    if shape != w_shape:
      if axis is None:
        raise ValueError(f"jnp.average: axis must be specified when the shapes of a "
                         f"{shape} and weights {w_shape} differ")
      user_axes = _axis_order(axis, ndim)
      if w_shape != tuple(shape[d] for d in user_axes):
        raise ValueError(f"jnp.average: shape of weights {w_shape} must be consistent with "
                         f"the shape of a {shape} along axis {axis}")
      if len(user_axes) > 1:  # weights' dimensions follow the user's axis order
        weights = lax.transpose(weights, tuple(int(i) for i in np.argsort(user_axes)))
      weights = lax.reshape(weights, tuple(d if i in dims else 1
                                           for i, d in enumerate(shape)))
    weights_sum = sum(weights, axis=dims, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, weights), axis=dims, keepdims=keepdims), weights_sum)
  if returned:
    avg_shape = get_aval(avg).shape
    if get_aval(weights_sum).shape != avg_shape:
      weights_sum = broadcast_to_shape(weights_sum, avg_shape)
    return avg, weights_sum
  return avg


def _axis_order(axis, ndim):
  """The user's axes (normalized, in the order given), for weights laid out in that order."""
  axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
  return [operator.index(a) % ndim for a in axes]


# --- argmax / argmin ---------------------------------------------------------------------

def _argminmax(name, lax_fn, a, axis, out, keepdims):
  _check_out(name, out)
  a = _arg(name, a)
  aval = get_aval(a)
  if axis is None:
    dims = tuple(range(aval.ndim))
    a = lax.reshape(a, (aval.size,))
    axis = 0
  else:
    axis, = _axis_tuple(name, operator.index(axis), aval.ndim)
    dims = (axis,)
  if get_aval(a).shape[axis] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence (array of shape "
                     f"{aval.shape})")
  result = lax_fn(a, axis, dtypes.default_int_dtype())
  return lax.expand_dims(result, dims) if keepdims else result


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum along an axis (of the flattened array when ``axis`` is None).

  The first occurrence wins ties; a NaN counts as the maximum.

  Args:
    a: array-like input.
    axis: an int, or None to search the flattened array.
    out: unsupported; must be None.
    keepdims: if True, the reduced axis stays in the result with size 1.

  Returns:
    An array of the default integer dtype and ``a``'s shape without ``axis`` (a scalar when
    ``axis`` is None).

  Examples:
    >>> x = jnp.array([[1, 7, 3], [9, 2, 9]])
    >>> jnp.argmax(x)
    Array(3, dtype=int32)
    >>> jnp.argmax(x, axis=1)
    Array([1, 0], dtype=int32)
  """
  return _argminmax("argmax", lax.argmax, a, axis, out, bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum along an axis (of the flattened array when ``axis`` is None).

  The first occurrence wins ties; a NaN counts as the minimum.

  Args:
    a: array-like input.
    axis: an int, or None to search the flattened array.
    out: unsupported; must be None.
    keepdims: if True, the reduced axis stays in the result with size 1.

  Returns:
    An array of the default integer dtype and ``a``'s shape without ``axis`` (a scalar when
    ``axis`` is None).

  Examples:
    >>> x = jnp.array([[1, 7, 3], [9, 2, 9]])
    >>> jnp.argmin(x)
    Array(0, dtype=int32)
    >>> jnp.argmin(x, axis=1)
    Array([0, 1], dtype=int32)
  """
  return _argminmax("argmin", lax.argmin, a, axis, out, bool(keepdims))


def _nanargminmax(name, fn, fill, a, axis, out, keepdims):
  a = _arg(name, a)
  if not _is_inexact(a):
    return fn(a, axis=axis, out=out, keepdims=keepdims)
  nan_mask = _isnan(a)
  aval = get_aval(a)
  filled = _select(nan_mask, _full(aval.shape, fill, aval.dtype), a)
  result = fn(filled, axis=axis, out=out, keepdims=keepdims)
  all_nan = all(nan_mask, axis=axis, keepdims=keepdims)
  shape, dtype = get_aval(result).shape, get_aval(result).dtype
  return _select(all_nan, _full(shape, -1, dtype), result)


def nanargmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum along an axis, ignoring NaNs.

  Where a slice is entirely NaN the result is -1 (NumPy raises instead).

  Args:
    a: array-like input.
    axis: an int, or None to search the flattened array.
    out: unsupported; must be None.
    keepdims: if True, the reduced axis stays in the result with size 1.

  Returns:
    An array of the default integer dtype and ``a``'s shape without ``axis``.

  Examples:
    >>> x = jnp.array([[1., jnp.nan, 3.], [jnp.nan, jnp.nan, jnp.nan]])
    >>> jnp.nanargmax(x, axis=1)
    Array([ 2, -1], dtype=int32)
  """
  return _nanargminmax("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum along an axis, ignoring NaNs.

  Where a slice is entirely NaN the result is -1 (NumPy raises instead).

  Args:
    a: array-like input.
    axis: an int, or None to search the flattened array.
    out: unsupported; must be None.
    keepdims: if True, the reduced axis stays in the result with size 1.

  Returns:
    An array of the default integer dtype and ``a``'s shape without ``axis``.

  Examples:
    >>> x = jnp.array([[1., jnp.nan, 3.], [jnp.nan, jnp.nan, jnp.nan]])
    >>> jnp.nanargmin(x, axis=1)
    Array([ 0, -1], dtype=int32)
  """
  return _nanargminmax("nanargmin", argmin, np.inf, a, axis, out, keepdims)


# --- nan-ignoring reductions -------------------------------------------------------------

def _nan_reduction(a, name, reduction, fill, nan_if_all_nan, axis=None, keepdims=False,
                   where=None, **kwargs):
  a = _arg(name, a)
  where = _check_where(name, where)
  if not _is_inexact(a):
    return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
  aval = get_aval(a)
  nan_mask = _isnan(a)
  filled = _select(nan_mask, _full(aval.shape, fill, aval.dtype), a)
  result = reduction(filled, axis=axis, keepdims=keepdims, where=where, **kwargs)
  if not nan_if_all_nan:
    return result
  all_nan = all(nan_mask, axis=axis, keepdims=keepdims)
  r_aval = get_aval(result)
  return _select(all_nan, _full(r_aval.shape, np.nan, r_aval.dtype), result)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Sum over the given axes, treating NaNs as zero.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> jnp.nansum(jnp.array([1., jnp.nan, 3.]))
    Array(4., dtype=float32)
  """
  _check_out("nansum", out)
  return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, keepdims=keepdims,
                        where=where, dtype=dtype, initial=initial)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Product over the given axes, treating NaNs as one.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``).

  Examples:
    >>> jnp.nanprod(jnp.array([2., jnp.nan, 3.]))
    Array(6., dtype=float32)
  """
  _check_out("nanprod", out)
  return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, keepdims=keepdims,
                        where=where, dtype=dtype, initial=initial)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum over the given axes, ignoring NaNs.

  A slice that is entirely NaN gives NaN (unless ``initial`` is given).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), with
    ``a``'s dtype.

  Examples:
    >>> jnp.nanmax(jnp.array([[1., jnp.nan], [jnp.nan, jnp.nan]]), axis=1)
    Array([ 1., nan], dtype=float32)
  """
  _check_out("nanmax", out)
  return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis,
                        keepdims=keepdims, where=where, initial=initial)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum over the given axes, ignoring NaNs.

  A slice that is entirely NaN gives NaN (unless ``initial`` is given).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    initial: optional scalar starting value of the reduction (static).
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), with
    ``a``'s dtype.

  Examples:
    >>> jnp.nanmin(jnp.array([[1., jnp.nan], [jnp.nan, 4.]]), axis=1)
    Array([1., 4.], dtype=float32)
  """
  _check_out("nanmin", out)
  return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis,
                        keepdims=keepdims, where=where, initial=initial)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Mean of the non-NaN elements over the given axes (NaN where there are none).

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), of a
    floating dtype.

  Examples:
    >>> jnp.nanmean(jnp.array([1., jnp.nan, 3.]))
    Array(2., dtype=float32)
  """
  _check_out("nanmean", out)
  a = _arg("nanmean", a)
  where = _check_where("nanmean", where)
  if not _is_inexact(a):
    return mean(a, axis, dtype, keepdims=keepdims, where=where)
  dtype = _user_dtype("nanmean", dtype) or dtypes.to_inexact_dtype(get_aval(a).dtype)
  count = sum(lax.eq(_isnan(a), False), axis=axis, dtype=dtype, keepdims=keepdims,
              where=where)
  return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """Variance of the non-NaN elements over the given axes.

  NaN where fewer than ``ddof + 1`` non-NaN elements remain.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    ddof: the degrees of freedom subtracted from the count (NumPy's name for ``correction``).
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    mean: optional precomputed mean of ``a`` over ``axis`` (with ``keepdims=True`` shape).

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), real
    for complex input.

  Examples:
    >>> jnp.nanvar(jnp.array([1., jnp.nan, 3.]))
    Array(1., dtype=float32)
  """
  _check_out("nanvar", out)
  a = _arg("nanvar", a)
  where = _check_where("nanvar", where)
  aval = get_aval(a)
  dims = _axis_tuple("nanvar", axis, aval.ndim)
  computation_dtype, result_dtype = _var_dtypes("nanvar", aval.dtype,
                                                _user_dtype("nanvar", dtype))
  a = _convert(a, computation_dtype)
  if mean is None:
    mean = nanmean(a, dims, dtype=computation_dtype, keepdims=True, where=where)
  else:
    mean = _convert(_arg("nanvar", mean), computation_dtype)
  nan_mask = _isnan(a)
  centered = lax.sub(a, mean)
  centered = _select(nan_mask, _full(get_aval(centered).shape, 0, computation_dtype),
                     centered)
  centered = _abs2(centered)
  real_dtype = get_aval(centered).dtype
  count = sum(lax.eq(nan_mask, False), axis=dims, dtype=real_dtype, keepdims=keepdims,
              where=where)
  normalizer = lax.sub(count, _convert(ddof, real_dtype))
  total = sum(centered, dims, dtype=real_dtype, keepdims=keepdims, where=where)
  shape = get_aval(total).shape
  positive = lax.gt(normalizer, _full(shape, 0, real_dtype))
  result = _select(positive, lax.div(total, normalizer), _full(shape, np.nan, real_dtype))
  return _convert(result, result_dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """Standard deviation of the non-NaN elements: ``sqrt(nanvar(...))``.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    dtype: optional dtype of the accumulation and result.
    out: unsupported; must be None.
    ddof: the degrees of freedom subtracted from the count (NumPy's name for ``correction``).
    keepdims: if True, reduced axes stay in the result with size 1.
    where: optional boolean array broadcastable to ``a``: only its True elements take part.
    mean: optional precomputed mean of ``a`` over ``axis`` (with ``keepdims=True`` shape).

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), real
    for complex input.

  Examples:
    >>> jnp.nanstd(jnp.array([1., jnp.nan, 3.]))
    Array(1., dtype=float32)
  """
  return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                         where=where, mean=mean))


# --- median ------------------------------------------------------------------------------

def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """Median over the given axes.

  For an even count, the mean of the two middle values. A slice holding a NaN gives NaN;
  integers give the default floating dtype.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the axes to reduce (None: all of them).
    out: unsupported; must be None.
    overwrite_input: ignored (hlox arrays are immutable).
    keepdims: if True, reduced axes stay in the result with size 1.

  Returns:
    An array of ``a``'s shape without the reduced axes (kept with size 1 under ``keepdims``), of a
    floating dtype.

  Examples:
    >>> jnp.median(jnp.array([3, 1, 2, 10]))
    Array(2.5, dtype=float32)
    >>> jnp.median(jnp.array([[3., 1., 2.], [6., 5., 4.]]), axis=1)
    Array([2., 5.], dtype=float32)
  """
  _check_out("median", out)
  a = _arg("median", a)
  if dtypes.is_complex(get_aval(a).dtype):
    raise ValueError(f"jnp.median does not support complex input (got {get_aval(a).str_short()}): "
                     "the order of complex numbers is not defined")
  a, = promote_dtypes_inexact(a)
  a = _convert(a, get_aval(a).dtype)
  aval = get_aval(a)
  dims = _axis_tuple("median", axis, aval.ndim)
  kept = [d for d in range(aval.ndim) if d not in dims]
  n = 1
  for d in dims:
    n *= aval.shape[d]
  # Move the reduced axes last and merge them: one sort then gives every slice in order.
  x = lax.transpose(a, tuple(kept) + dims) if dims else a
  kept_shape = tuple(aval.shape[d] for d in kept)
  x = lax.reshape(x, kept_shape + (n,))
  if n == 0:
    # JAX rejects this (its gather of the middle element is out of range) with TypeError.
    raise TypeError(f"jnp.median: cannot take the median of zero elements (input "
                    f"{aval.str_short()}, axis={axis})")
  else:
    x = lax.sort(x, dimension=len(kept_shape))
    last = len(kept_shape)
    lo = lax.index_in_dim(x, (n - 1) // 2, axis=last, keepdims=False)
    hi = lax.index_in_dim(x, n // 2, axis=last, keepdims=False)
    half = _full(kept_shape, 0.5, aval.dtype)
    result = lax.mul(lax.add(lo, hi), half)
    # NaNs sort last, so a slice holds one exactly when its last element is NaN.
    has_nan = _isnan(lax.index_in_dim(x, n - 1, axis=last, keepdims=False))
    result = _select(has_nan, _full(kept_shape, np.nan, aval.dtype), result)
  if keepdims:
    # A 0-d input keeps shape (1,), as JAX (which ravels first).
    result = lax.expand_dims(result, dims) if aval.ndim else lax.reshape(result, (1,))
  return result


# --- cumulative reductions ---------------------------------------------------------------

def _cumulative(name, lax_fn, a, axis, dtype, out=None, fill_nan=False, fill_value=0,
                promote_integers=False):
  _check_out(name, out)
  a = _arg(name, a)
  aval = get_aval(a)
  # The axis is checked against the input's own rank (a 0-d input has no axis 0, as in JAX);
  # only axis=None flattens.
  if axis is not None:
    axis = operator.index(axis)
    if not -aval.ndim <= axis < aval.ndim:
      raise ValueError(f"jnp.{name}: axis {axis} is out of bounds for array of dimension "
                       f"{aval.ndim}")
  if axis is None:
    a = lax.reshape(a, (aval.size,))
  axis = 0 if axis is None else axis
  ndim = get_aval(a).ndim
  if not -ndim <= axis < ndim:
    raise ValueError(f"jnp.{name}: axis {axis} is out of bounds for array of dimension "
                     f"{ndim}")
  axis %= ndim
  a_dtype = get_aval(a).dtype
  if fill_nan and dtypes.is_inexact(a_dtype):
    shape = get_aval(a).shape
    a = _select(_isnan(a), _full(shape, fill_value, a_dtype), a)
  dtype = _user_dtype(name, dtype)
  if dtype is None:
    if promote_integers or a_dtype == dtypes.bool_:
      result_dtype = _promote_integer(a_dtype)
    else:
      result_dtype = a_dtype
    computation_dtype = result_dtype
  elif dtype == dtypes.bool_:
    # Accumulate whether values are nonzero (so [-1, 1] does not cancel), in integers.
    result_dtype = dtype
    if a_dtype != dtypes.bool_:
      a = _to_bool(a)
    computation_dtype = _promote_integer(dtypes.bool_)
  else:
    result_dtype = computation_dtype = dtype
  result = lax_fn(_convert(a, computation_dtype), axis)
  return _convert(result, result_dtype)


def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum of the elements along an axis.

  Args:
    a: array-like input.
    axis: the axis to accumulate along; None flattens ``a`` first.
    dtype: optional dtype of the accumulation and result (default: ``a``'s dtype, except
      that bool accumulates in the default integer type).
    out: unsupported; must be None.

  Returns:
    An array of ``a``'s shape (1-d of ``a.size`` elements when ``axis`` is None).

  Examples:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.cumsum(x)
    Array([ 1,  3,  6, 10, 15, 21], dtype=int32)
    >>> jnp.cumsum(x, axis=1)
    Array([[ 1,  3,  6],
           [ 4,  9, 15]], dtype=int32)
  """
  return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product of the elements along an axis.

  Args:
    a: array-like input.
    axis: the axis to accumulate along; None flattens ``a`` first.
    dtype: optional dtype of the accumulation and result (default: ``a``'s dtype, except
      that bool accumulates in the default integer type).
    out: unsupported; must be None.

  Returns:
    An array of ``a``'s shape (1-d of ``a.size`` elements when ``axis`` is None).

  Examples:
    >>> jnp.cumprod(jnp.array([1, 2, 3, 4]))
    Array([ 1,  2,  6, 24], dtype=int32)
  """
  return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along an axis, treating NaNs as zero.

  Args:
    a: array-like input.
    axis: the axis to accumulate along; None flattens ``a`` first.
    dtype: optional dtype of the accumulation and result (default: ``a``'s dtype, except
      that bool accumulates in the default integer type).
    out: unsupported; must be None.

  Returns:
    An array of ``a``'s shape (1-d of ``a.size`` elements when ``axis`` is None).

  Examples:
    >>> jnp.nancumsum(jnp.array([1., jnp.nan, 3.]))
    Array([1., 1., 4.], dtype=float32)
  """
  return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=True,
                     fill_value=0)


def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along an axis, treating NaNs as one.

  Args:
    a: array-like input.
    axis: the axis to accumulate along; None flattens ``a`` first.
    dtype: optional dtype of the accumulation and result (default: ``a``'s dtype, except
      that bool accumulates in the default integer type).
    out: unsupported; must be None.

  Returns:
    An array of ``a``'s shape (1-d of ``a.size`` elements when ``axis`` is None).

  Examples:
    >>> jnp.nancumprod(jnp.array([2., jnp.nan, 3.]))
    Array([2., 2., 6.], dtype=float32)
  """
  return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=True,
                     fill_value=1)


def _cumulative_api(name, lax_fn, identity, x, axis, dtype, include_initial,
                    promote_integers):
  x = _arg(name, x)
  aval = get_aval(x)
  if aval.ndim == 0:
    what = "product" if "prod" in name else "sum"
    raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a "
                     f"scalar value or scalar array was given (jnp.{name}).")
  if axis is None:
    if aval.ndim > 1:
      # Worded as JAX's message, which user code and tests match on.
      raise ValueError(f"The input array has rank {aval.ndim}, however axis was not set to "
                       "an explicit value. The axis argument is only optional for "
                       f"one-dimensional arrays (jnp.{name}).")
    axis = 0
  result = _cumulative(name, lax_fn, x, axis, dtype, promote_integers=promote_integers)
  if include_initial:
    axis = operator.index(axis) % aval.ndim
    r_aval = get_aval(result)
    shape = list(r_aval.shape)
    shape[axis] = 1
    result = lax.concatenate([_full(tuple(shape), identity, r_aval.dtype), result], axis)
  return result


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative sum along an axis (the array API's ``cumulative_sum``).

  Bool and integers narrower than the default integer accumulate in the default integer type.

  Args:
    x: an array.
    axis: keyword-only; the axis to accumulate along (may be omitted for 1-d input only).
    dtype: keyword-only optional dtype of the accumulation and result.
    include_initial: keyword-only; if True, the result starts with 0 (it is one longer
      along ``axis``).

  Returns:
    An array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).

  Examples:
    >>> jnp.cumulative_sum(jnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
    >>> jnp.cumulative_sum(jnp.array([[1, 2], [3, 4]]), axis=0, include_initial=True)
    Array([[0, 0],
           [1, 2],
           [4, 6]], dtype=int32)
  """
  return _cumulative_api("cumulative_sum", lax.cumsum, 0, x, axis, dtype, include_initial,
                         promote_integers=True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative product along an axis (the array API's ``cumulative_prod``).

  Integer inputs keep their dtype (as in JAX); bool accumulates in the default integer type.

  Args:
    x: an array.
    axis: keyword-only; the axis to accumulate along (may be omitted for 1-d input only).
    dtype: keyword-only optional dtype of the accumulation and result.
    include_initial: keyword-only; if True, the result starts with 1 (it is one longer
      along ``axis``).

  Returns:
    An array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).

  Examples:
    >>> jnp.cumulative_prod(jnp.array([1, 2, 3]), include_initial=True)
    Array([1, 1, 2, 6], dtype=int32)
  """
  return _cumulative_api("cumulative_prod", lax.cumprod, 1, x, axis, dtype, include_initial,
                         promote_integers=False)


# Eagerly, each reduction is one cached executable per argument signature (JAX jit-wraps its
# reductions the same way); ``initial`` and ``where`` stay traced arguments.
util.fuse_functions(globals(), __all__, {}, default_static=(
    "axis", "dtype", "out", "keepdims", "ddof", "correction", "returned", "include_initial",
    "promote_integers", "overwrite_input", "method"),
    staged={**{name: name for name in (
        "count_nonzero", "nanmin", "nanmax", "nansum", "nanprod", "nanmean", "nanvar",
        "nanstd", "cumsum", "cumprod", "nancumsum", "nancumprod", "median")},
            "ptp": "_ptp"})
# ``var`` and ``std`` (fused above, inlined when traced) call JAX's staged ``_var``/``_std``.
util.fuse_functions(globals(), ["_var_call", "_std_call"], {}, default_static=(
    "axis", "dtype", "keepdims", "name"), staged={"_var_call": "_var", "_std_call": "_std"})
