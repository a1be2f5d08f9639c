"""Sorting: sort, argsort, lexsort, partition, argpartition, unique.

All are written on ``lax.sort``: floats sort with -0.0 equal to 0.0 and NaNs last, complex
numbers by (real, imag). Sorts are stable by default, as in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import ConcretizationTypeError
from hlox.lax.utils import canonicalize_axis
from hlox.numpy import creation, reductions, shapes, ufuncs, util
from hlox.runtime.array import device_put

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "unique", "sort_complex"]


def _array(name, a):
  util.check_arraylike(name, a)
  return util.ensure_array(a)


def _check_kind_order(name, kind, order):
  if kind is not None:
    raise TypeError(f"'kind' argument to {name} is not supported; use stable=True or "
                    "stable=False to choose the sort's stability")
  if order is not None:
    raise TypeError(f"'order' argument to {name} is not supported")


def _flatten_for_axis(name, a, axis):
  """``(a, dimension)``: ``axis=None`` sorts the flattened array."""
  aval = get_aval(a)
  if axis is None:
    a = lax.reshape(a, (aval.size,))
    return a, 0
  if aval.ndim == 0:
    raise ValueError(f"{name}: axis {axis} is out of bounds for a 0-d array (use axis=None)")
  return a, canonicalize_axis(operator.index(axis), aval.ndim, name)


def _iota(dtype, shape, dimension):
  return lax.broadcasted_iota(dtype, shape, dimension)


def _index_dtype(dtype):
  if dtype is None:
    return dtypes.default_int_dtype()
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  if not dtypes.is_int(dtype):
    raise TypeError(f"argsort: dtype must be an integer dtype, got {dtype.name}")
  return dtype


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
         descending: bool = False):
  """A sorted copy of ``a`` along an axis.

  NaNs sort to the end (to the front with ``descending=True``); complex values sort by real
  part, then imaginary part.

  Args:
    a: array-like input.
    axis: the axis to sort along; None sorts the flattened array.
    kind: unsupported (raises ``TypeError``); use ``stable`` instead.
    order: unsupported (structured dtypes); must be None.
    stable: keyword-only; whether equal entries keep their relative order.
    descending: keyword-only; sort from largest to smallest.

  Returns:
    An array of ``a``'s shape and dtype (1-d when ``axis`` is None).

  Examples:
    >>> x = jnp.array([[3, 1, 2], [9, 8, 7]])
    >>> jnp.sort(x)
    Array([[1, 2, 3],
           [7, 8, 9]], dtype=int32)
    >>> jnp.sort(x, axis=None, descending=True)
    Array([9, 8, 7, 3, 2, 1], dtype=int32)
  """
  _check_kind_order("sort", kind, order)
  a = _array("sort", a)
  a, dim = _flatten_for_axis("sort", a, axis)
  result = lax.sort(a, dimension=dim, is_stable=stable)
  return lax.rev(result, (dim,)) if descending else result


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False, dtype=None):
  """The indices that sort ``a`` along an axis.

  Stable by default: equal entries keep their order, also with ``descending=True``.

  Args:
    a: array-like input.
    axis: the axis to sort along; None sorts the flattened array.
    kind: unsupported (raises ``TypeError``); use ``stable`` instead.
    order: unsupported (structured dtypes); must be None.
    stable: keyword-only; whether equal entries keep their relative order.
    descending: keyword-only; sort from largest to smallest.
    dtype: keyword-only optional integer dtype of the indices.

  Returns:
    An integer array of ``a``'s shape (1-d when ``axis`` is None) such that
    ``take_along_axis(a, result, axis)`` is sorted.

  Examples:
    >>> x = jnp.array([3, 1, 2, 1])
    >>> jnp.argsort(x)
    Array([1, 3, 2, 0], dtype=int32)
    >>> jnp.argsort(x, descending=True)
    Array([0, 2, 1, 3], dtype=int32)
  """
  _check_kind_order("argsort", kind, order)
  a = _array("argsort", a)
  a, dim = _flatten_for_axis("argsort", a, axis)
  shape = get_aval(a).shape
  iota = _iota(_index_dtype(dtype), shape, dim)
  if descending and stable:
    # Reversing before and after keeps equal entries in their original order.
    a, iota = lax.rev(a, (dim,)), lax.rev(iota, (dim,))
  _, indices = lax.sort_key_val(a, iota, dimension=dim, is_stable=stable)
  return lax.rev(indices, (dim,)) if descending else indices


def lexsort(keys, axis: int = -1):
  """Indices that sort by several keys, the *last* key being the primary one.

  Args:
    keys: a sequence of same-shaped array-likes, or a 2-d+ array whose leading axis indexes
      the keys.
    axis: the axis to sort along.

  Returns:
    An array of indices of the default integer dtype, of the keys' shape.

  Examples:
    >>> surname = jnp.array([2, 1, 2, 1])
    >>> first = jnp.array([0, 5, 1, 3])
    >>> jnp.lexsort((first, surname))
    Array([3, 1, 0, 2], dtype=int32)
  """
  if isinstance(keys, (list, tuple)):
    keys = [_array("lexsort", k) for k in keys]
  else:
    keys = _array("lexsort", keys)
    aval = get_aval(keys)
    if aval.ndim == 0:
      raise TypeError("lexsort: keys must be a sequence or an array of rank at least 1")
    keys = [lax.reshape(lax.slice(keys, (i,) + (0,) * (aval.ndim - 1),
                                  (i + 1,) + aval.shape[1:]), aval.shape[1:])
            for i in range(aval.shape[0])]
  if not keys:
    raise TypeError("lexsort requires at least one key")
  shapes = {get_aval(k).shape for k in keys}
  if len(shapes) != 1:
    raise ValueError(f"lexsort: all keys need the same shape, got {sorted(shapes)}")
  shape = shapes.pop()
  if len(shape) == 0:
    raise TypeError("lexsort: keys must be at least 1-d")
  dim = canonicalize_axis(axis, len(shape), "lexsort")
  iota = _iota(dtypes.default_int_dtype(), shape, dim)
  outs = lax.sort((*keys[::-1], iota), dimension=dim, num_keys=len(keys))
  return outs[-1]


def _check_kth(name, kth, n):
  kth = operator.index(kth)
  if not -n <= kth < n:
    raise ValueError(f"{name}: kth={kth} is out of bounds for an axis of size {n}")
  return kth % n


def partition(a, kth: int, axis: int = -1):
  """A copy of ``a`` with the ``kth`` entry in sorted position along an axis.

  Entries before position ``kth`` are no larger and those after it no smaller. The order
  within each side is unspecified (this implementation sorts fully, which satisfies that).

  Args:
    a: array-like input.
    kth: a static int, the position to place (negative counts from the end).
    axis: the axis to partition along.

  Returns:
    An array of ``a``'s shape and dtype.

  Examples:
    >>> jnp.partition(jnp.array([5, 1, 4, 2, 3]), 2)[2]
    Array(3, dtype=int32)
  """
  a = _array("partition", a)
  aval = get_aval(a)
  dim = canonicalize_axis(axis, aval.ndim, "partition")
  _check_kth("partition", kth, aval.shape[dim])
  return lax.sort(a, dimension=dim)


def argpartition(a, kth: int, axis: int = -1):
  """The indices that partition ``a`` about its ``kth`` entry along an axis.

  See :func:`hlox.numpy.partition`; ``a[result]`` is such a partition.

  Args:
    a: array-like input.
    kth: a static int, the position to place (negative counts from the end).
    axis: the axis to partition along.

  Returns:
    An array of indices of ``a``'s shape.

  Examples:
    >>> x = jnp.array([5, 1, 4, 2, 3])
    >>> x[jnp.argpartition(x, 1)[1]]
    Array(2, dtype=int32)
  """
  a = _array("argpartition", a)
  aval = get_aval(a)
  dim = canonicalize_axis(axis, aval.ndim, "argpartition")
  _check_kth("argpartition", kth, aval.shape[dim])
  return argsort(a, axis=dim)


def sort_complex(a):
  """Sort ``a`` along its last axis (real part first, then imaginary part), as a complex array.

  Args:
    a: array-like input.

  Returns:
    An array of ``a``'s shape and a complex dtype (complex64, or complex128 for 64-bit input
    with x64 enabled).

  Examples:
    >>> jnp.sort_complex(jnp.array([3, 1, 2]))
    Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    >>> jnp.sort_complex(jnp.array([1 + 2j, 1 - 1j, 0j]))
    Array([0.+0.j, 1.-1.j, 1.+2.j], dtype=complex64)
  """
  a = _array("sort_complex", a)
  result = sort(a, axis=-1)
  dtype = get_aval(result).dtype
  if not dtypes.is_complex(dtype):
    target = dtypes.canonicalize_dtype(np.complex128 if dtype.itemsize > 4 else np.complex64)
    result = lax.convert_element_type(result, target)
  return result


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value=None, sorted: bool = True):
  """The sorted unique entries of an array.

  Without ``size`` the values must be concrete (the result's length depends on them; a traced
  ``ar`` raises ``ConcretizationTypeError``). With a static ``size`` the result is padded (with
  ``fill_value``) or truncated to that length, and works under ``jit``.

  Args:
    ar: array-like input.
    return_index: also return the index of the first occurrence of each unique value.
    return_inverse: also return the indices that rebuild ``ar`` from the unique values.
    return_counts: also return how often each unique value occurs.
    axis: None to work on the flattened array, or an axis whose slices are compared.
    equal_nan: keyword-only; whether all NaNs count as one value.
    size: keyword-only static length of the result.
    fill_value: keyword-only padding value when ``size`` is larger than the number of unique
      values (default: the smallest value).
    sorted: keyword-only; accepted for compatibility (the values are always sorted).

  Returns:
    The unique values (an array of ``ar``'s dtype), or a tuple of it followed by the
    requested index, inverse and count arrays (of the default integer dtype).

  Examples:
    >>> x = jnp.array([3, 1, 3, 2, 1])
    >>> jnp.unique(x)
    Array([1, 2, 3], dtype=int32)
    >>> jnp.unique(x, return_counts=True)
    (Array([1, 2, 3], dtype=int32), Array([2, 1, 2], dtype=int32))
    >>> jnp.unique(x, size=5, fill_value=0)
    Array([1, 2, 3, 0, 0], dtype=int32)
  """
  ar = util.from_jax_array(ar)
  if isinstance(ar, Tracer) and size is not None:
    util.check_arraylike("unique", ar)
    return _unique_sized(ar, axis, size, fill_value, return_index, return_inverse,
                         return_counts, equal_nan)
  if isinstance(ar, Tracer):
    raise ConcretizationTypeError(ar, "unique needs concrete values to know its output "
                                  "size; call it outside jit")
  util.check_arraylike("unique", ar)
  x = np.asarray(ar)
  res = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis,
                  equal_nan=equal_nan)
  values, index, inverse, counts = res
  if size is not None:
    # Pad or cut along the unique axis (moved to the front meanwhile).
    ax = 0 if axis is None else canonicalize_axis(axis, x.ndim, "unique")
    values = np.moveaxis(values, ax, 0)
    n = len(values)
    if n == 0 and size and fill_value is None:
      raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                       "fill_value must be specified")
    if n >= size:
      values, index, counts = values[:size], index[:size], counts[:size]
    else:
      pad = size - n
      fill = values[:1] if fill_value is None else np.broadcast_to(
          np.asarray(fill_value, values.dtype), values.shape[1:])[None]
      values = np.concatenate([values, np.repeat(fill, pad, axis=0)])
      index = np.concatenate([index, np.full(pad, index[0] if len(index) else 0, index.dtype)])
      counts = np.concatenate([counts, np.zeros(pad, counts.dtype)])
    values = np.moveaxis(values, 0, ax)
  int_dtype = dtypes.default_int_dtype()
  outs = [device_put(values.astype(dtypes.canonicalize_dtype(values.dtype)))]
  if return_index:
    outs.append(device_put(index.astype(int_dtype)))
  if return_inverse:
    if axis is None:
      inverse = inverse.reshape(x.shape)
    outs.append(device_put(inverse.astype(int_dtype)))
  if return_counts:
    outs.append(device_put(counts.astype(int_dtype)))
  return outs[0] if len(outs) == 1 else tuple(outs)


def _unique_sized(ar, axis, size, fill_value, return_index, return_inverse, return_counts,
                  equal_nan):
  """``unique`` with a static result length: works on traced values. Along ``axis`` the
  unique entries are whole slices, ordered lexicographically."""
  arr = creation.asarray(ar)
  if axis is None:
    x, axis, inverse_shape = shapes.ravel(arr), 0, get_aval(arr).shape
  else:
    axis = canonicalize_axis(axis, get_aval(arr).ndim, "unique")
    x = shapes.moveaxis(arr, axis, 0)
    inverse_shape = (get_aval(x).shape[0],)
  n, rest = get_aval(x).shape[0], get_aval(x).shape[1:]
  dtype = get_aval(x).dtype
  idx_dtype = util.index_dtype()
  size = operator.index(size)
  if n == 0:
    if size and fill_value is None:
      raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                       "fill_value must be specified")
    zeros = creation.zeros((size,), idx_dtype)
    values = creation.full((size, *rest), 0 if fill_value is None else fill_value, dtype)
    outs = [shapes.moveaxis(values, 0, axis)] + ([zeros] if return_index else [])
    outs += [creation.zeros(inverse_shape, idx_dtype)] if return_inverse else []
    outs += [zeros] if return_counts else []
    return outs[0] if len(outs) == 1 else tuple(outs)
  m = int(np.prod(rest))
  rows = lax.reshape(x, (n, m))
  iota = lax.iota(idx_dtype, n)
  if m == 0:
    perm = iota  # every (empty) slice equals every other
  else:
    cols = [lax.reshape(lax.slice(rows, (0, j), (n, j + 1)), (n,)) for j in range(m)]
    perm = lax.sort((*cols, iota), num_keys=m)[-1]
  srows = rows[perm]
  differ = srows[1:] != srows[:-1]
  if equal_nan and dtypes.is_inexact(dtype):
    differ = differ & ~(ufuncs.isnan(srows[1:]) & ufuncs.isnan(srows[:-1]))
  new = shapes.concatenate([creation.ones((1,), bool), reductions.any(differ, axis=1)])
  pos, valid = ufuncs._nonzero_flat_positions(new, size)
  pos = ufuncs.minimum(pos, n - 1)
  values = srows[pos]
  if fill_value is None:
    fill = srows[0]
  else:
    fill = lax.reshape(shapes.broadcast_to(creation.asarray(fill_value, dtype), rest), (m,))
  values = ufuncs.where(valid[:, None], values, fill)
  outs = [shapes.moveaxis(lax.reshape(values, (size, *rest)), 0, axis)]
  if return_index:
    outs.append(ufuncs.where(valid, perm[pos], perm[0]))  # padding: the first's index, as JAX
  group = reductions.cumsum(new, dtype=idx_dtype) - 1  # group of each sorted entry
  if return_inverse:
    inverse = creation.zeros((n,), idx_dtype).at[perm].set(group)
    outs.append(shapes.reshape(inverse, inverse_shape))
  if return_counts:
    counts = creation.zeros((size,), idx_dtype).at[group].add(1, mode="drop")
    outs.append(counts)
  return outs[0] if len(outs) == 1 else tuple(outs)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["sort", "argsort", "partition", "argpartition", "sort_complex", "lexsort"], {},
    default_static=("axis", "kind", "order", "stable", "descending", "dtype", "kth"),
    staged=("sort", "argsort", "partition", "argpartition", "sort_complex", "lexsort"))
