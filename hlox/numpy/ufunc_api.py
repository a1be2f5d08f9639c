"""``hlox.numpy.ufunc``: NumPy's ufunc objects (``jnp.add.reduce``, ``jnp.multiply.outer``,
``jnp.add.at``, ...) and ``frompyfunc``.

As in JAX, fourteen of the elementwise functions are ufunc instances: ``add``, ``subtract``,
``multiply``, ``negative``, ``maximum``, ``minimum``, ``logaddexp``, ``logaddexp2`` and the
bitwise and logical and/or/xor. Each gets its own small subclass whose ``__call__`` is the
plain function from ``ufuncs`` set on the class, so calling ``jnp.add(x, y)`` runs exactly
that function (no extra Python frame, no argument re-packing) and eager dispatch stays as
fast as before. Their ``reduce``/``accumulate``/``at`` use the fast lax reductions,
cumulative ops and scatters where one exists; every other method (and every method of a
``frompyfunc`` ufunc) uses a generic loop (``lax.fori_loop``/``lax.scan``), like JAX.
"""
from __future__ import annotations

import inspect
import math
import operator

import numpy as np

from hlox import api, lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, functional, indexing, reductions, shapes, ufuncs
from hlox.numpy import util as _util
from hlox.numpy.util import (broadcast_to_shape, check_arraylike, ensure_array,
                             promote_dtypes_inexact)

__all__ = ["ufunc", "frompyfunc", "add", "subtract", "multiply", "negative", "maximum",
           "minimum", "logaddexp", "logaddexp2", "bitwise_and", "bitwise_or", "bitwise_xor",
           "logical_and", "logical_or", "logical_xor"]

_AT_INPLACE_ERROR = (
    "hlox arrays are immutable, so ufunc.at cannot update its argument in place as NumPy "
    "does; pass inplace=False to get the updated copy back.")


def _array(x):
  return creation.asarray(ensure_array(x))


def _one(x):
  """A 0-d array of ``x``'s dtype: the probe used to learn a function's result dtype."""
  return lax.full((), 1, get_aval(_array(x)).dtype)


def _moveaxis(x, src, dst):
  return x if src == dst else shapes.moveaxis(x, src, dst)


def _axis(name, axis, ndim):
  return _util.canonicalize_axis(axis, ndim, name)


class ufunc:
  """A NumPy-style universal function: an elementwise function of ``nin`` arrays with methods.

  Calling a ufunc broadcasts its inputs and applies the function elementwise. Binary ufuncs
  (``nin == 2``, ``nout == 1``) also have ``reduce``, ``accumulate``, ``reduceat`` and
  ``outer``; ``at`` works for unary ones too. ``hlox.numpy.add``, ``multiply``, ``subtract``,
  ``negative``, ``maximum``, ``minimum``, ``logaddexp``, ``logaddexp2`` and the bitwise and
  logical and/or/xor are instances whose methods use fast ``lax`` reductions, cumulative ops and
  scatters; :func:`hlox.numpy.frompyfunc` makes one from any function written with hlox
  operations, with methods built from generic loops. The properties are read-only, and ufuncs
  compare and hash by them, so a ufunc can be a static argument of ``jit``.

  Args:
    func: the elementwise function.
    nin: the number of inputs.
    nout: the number of outputs.
    name: the name shown in messages; default ``func.__name__``.
    nargs: the number of arguments; default ``nin``.
    identity: the identity of the binary operation, or None.
    call, reduce, accumulate, at, reduceat: optional fast implementations of the call and the
      methods (used by the built-in ufuncs); None selects the generic ones.

  Examples:
    >>> jnp.add.outer(jnp.array([1, 2]), jnp.array([10, 20]))
    Array([[11, 21],
           [12, 22]], dtype=int32)
    >>> jnp.frompyfunc(lambda x, y: x + 2 * y, 2, 1).accumulate(jnp.array([1, 1, 1]))
    Array([1, 3, 5], dtype=int32)
  """

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
               call=None, reduce=None, accumulate=None, at=None, reduceat=None):
    if not callable(func):
      raise TypeError(f"ufunc: func must be callable, got {type(func).__name__}")
    self.__doc__ = func.__doc__
    self.__name__ = name or func.__name__
    self._props = {"func": func, "nin": operator.index(nin), "nout": operator.index(nout),
                   "nargs": operator.index(nargs or nin), "identity": identity,
                   "call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                   "reduceat": reduceat}

  _func = property(lambda self: self._props["func"])
  nin = property(lambda self: self._props["nin"], doc="The number of inputs.")
  nout = property(lambda self: self._props["nout"], doc="The number of outputs.")
  nargs = property(lambda self: self._props["nargs"], doc="The number of arguments.")
  identity = property(lambda self: self._props["identity"],
                      doc="The identity of the binary operation (None when it has none).")

  def _key(self):
    return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, ufunc) and self._key() == other._key()

  def __repr__(self):
    return f"<hlox.numpy.ufunc '{self.__name__}'>"

  def __call__(self, *args, out=None, where=None):
    check_arraylike(self.__name__, *args)
    if out is not None:
      raise NotImplementedError(f"the 'out' argument of {self} is not supported")
    if where is not None:
      raise NotImplementedError(f"the 'where' argument of {self} is not supported")
    if len(args) != self.nin:
      raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
    call = self._props["call"] or functional.vectorize(self._func)
    return call(*args)

  def _check_binary(self, method):
    if self.nin != 2:
      raise ValueError(f"{self.__name__}.{method} is only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError(f"{self.__name__}.{method} is only supported for functions "
                       "returning a single value")

  def _result_dtype(self, *args):
    return api.eval_shape(self._func, *(_one(a) for a in args)).dtype

  # --- reduce ----------------------------------------------------------------------------

  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    """Reduce ``a`` along ``axis`` by applying the binary function repeatedly.

    The reduction starts from ``initial`` if given, else from the identity (for ``where`` masks
    and empty arrays) or the first element. ``add``, ``multiply``, ``maximum``, ``minimum``,
    ``logaddexp`` and the bitwise/logical ufuncs use ``lax`` reductions and accept a tuple of
    axes; other ufuncs run a ``lax.fori_loop`` over a single axis. A ufunc without identity needs
    ``initial`` for a ``where`` mask or an empty reduction (else ValueError).

    Args:
      a: the array to reduce.
      axis: the axis (an int; a tuple for the fast reductions) or None for all axes. Default 0.
      dtype: the dtype of the accumulation and result; None (default) uses the function's result
        dtype.
      out: unsupported; must be None (else NotImplementedError).
      keepdims: whether to keep the reduced axes with length 1. Default False.
      initial: the starting value of the reduction, or None.
      where: an optional bool mask (broadcast against ``a``) of the elements to include.

    Returns:
      An array of ``a``'s shape without the reduced axes (length 1 with ``keepdims``).

    Examples:
      >>> jnp.add.reduce(jnp.array([[1, 2], [3, 4]]), axis=1)
      Array([3, 7], dtype=int32)
      >>> jnp.maximum.reduce(jnp.array([3., 7., 5.]), initial=10.)
      Array(10., dtype=float32)
    """
    name = f"{self.__name__}.reduce"
    check_arraylike(name, a)
    self._check_binary("reduce")
    if out is not None:
      raise NotImplementedError(f"the 'out' argument of {name} is not supported")
    if initial is not None:
      check_arraylike(name, initial)
    if where is not None:
      check_arraylike(name, where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                         "identity, so to use a where mask one has to specify 'initial'.")
      if get_aval(_array(where)).dtype != dtypes.bool_:
        raise ValueError(f"{name}: where must have dtype bool; got dtype "
                         f"{get_aval(_array(where)).dtype}")
    reduce = self._props["reduce"] or self._reduce_via_loop
    return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_via_loop(self, a, axis=0, dtype=None, keepdims=False, initial=None,
                       where=None):
    name = f"{self.__name__}.reduce"
    arr = _array(a)
    aval = get_aval(arr)
    if initial is None:
      initial = self.identity
    if dtype is None:
      dtype = self._result_dtype(arr, arr)
    if where is not None:
      where = broadcast_to_shape(_array(where), aval.shape)
    if isinstance(axis, (tuple, list)):
      raise NotImplementedError(f"{name}: a tuple of axes is only supported by the "
                                "reductions of add, multiply, maximum, minimum and the "
                                "logical/bitwise ufuncs")
    if axis is None:
      final_shape = (1,) * aval.ndim if keepdims else ()
      arr = shapes.ravel(arr)
      where = None if where is None else shapes.ravel(where)
      axis = 0
    else:
      axis = _axis(name, axis, aval.ndim)
      final_shape = (*aval.shape[:axis], *((1,) if keepdims else ()), *aval.shape[axis + 1:])
      arr = _moveaxis(arr, axis, 0)
      where = None if where is None else _moveaxis(where, axis, 0)
    n = get_aval(arr).shape[0]
    if n == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                         "has no identity")
      return lax.full(final_shape, initial, dtype)

    def body(i, val):
      new = self(val, arr[i].astype(dtype))
      return new if where is None else ufuncs.where(where[i], new, val)

    if initial is None:
      start, init = 1, arr[0]
    else:
      start, init = 0, _array(initial)
    init = shapes.broadcast_to(init.astype(dtype), get_aval(arr).shape[1:])
    result = lax.fori_loop(start, n, body, init)
    return shapes.reshape(result, final_shape) if keepdims else result

  # --- accumulate ------------------------------------------------------------------------

  def accumulate(self, a, axis=0, dtype=None, out=None):
    """The running reduction of ``a`` along ``axis``: ``out[i] = f(out[i-1], a[i])``.

    ``add`` and ``multiply`` use ``cumsum`` and ``cumprod``; other ufuncs run a ``lax.scan``.

    Args:
      a: the array to accumulate.
      axis: a single int axis. Default 0 (None or a tuple raises ValueError).
      dtype: the dtype of the result; None (default) uses the function's result dtype.
      out: unsupported; must be None (else NotImplementedError).

    Returns:
      An array of ``a``'s shape.

    Examples:
      >>> jnp.add.accumulate(jnp.array([1, 2, 3, 4]))
      Array([ 1,  3,  6, 10], dtype=int32)
      >>> jnp.maximum.accumulate(jnp.array([1, 3, 2, 5]))
      Array([1, 3, 3, 5], dtype=int32)
    """
    name = f"{self.__name__}.accumulate"
    check_arraylike(name, a)
    self._check_binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"the 'out' argument of {name} is not supported")
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError(f"{name}: accumulate does not allow multiple axes")
    accumulate = self._props["accumulate"] or self._accumulate_via_scan
    return accumulate(a, axis=axis, dtype=dtype)

  def _accumulate_via_scan(self, a, axis=0, dtype=None):
    arr = _array(a)
    aval = get_aval(arr)
    if dtype is None:
      dtype = self._result_dtype(arr, arr)
    axis = _axis(f"{self.__name__}.accumulate", axis, aval.ndim)
    if math.prod(aval.shape) == 0:
      return lax.full(aval.shape, 0, dtype)
    arr = _moveaxis(arr, axis, 0).astype(dtype)

    def step(carry, x):
      y = self(carry, x).astype(dtype)
      return y, y

    first = arr[0]
    _, rest = lax.scan(step, first, arr[1:])
    result = shapes.concatenate([first[None], rest], axis=0)
    return _moveaxis(result, 0, axis)

  # --- at --------------------------------------------------------------------------------

  def at(self, a, indices, b=None, /, *, inplace=True):
    """Apply the function at ``indices``: ``a[indices] = f(a[indices], b)``, on a copy.

    Repeated indices are applied one after another, so ``add.at`` accumulates. hlox arrays are
    immutable: ``inplace=False`` is required, and the updated copy is returned.

    Args:
      a: the array to update.
      indices: an index expression into ``a`` (ints, arrays, slices, tuples of them).
      b: the second operand of a binary ufunc (broadcast against ``a[indices]``); omitted for
        unary ufuncs.
      inplace: must be False (the default True raises NotImplementedError).

    Returns:
      An array of ``a``'s shape with the updates applied, in the function's result dtype.

    Examples:
      >>> jnp.add.at(jnp.zeros(3), jnp.array([0, 0, 2]), 1., inplace=False)
      Array([2., 0., 1.], dtype=float32)
    """
    if inplace:
      raise NotImplementedError(_AT_INPLACE_ERROR)
    at = self._props["at"] or self._at_via_scan
    return at(a, indices) if b is None else at(a, indices, b)

  def _at_via_scan(self, a, indices, *args):
    check_arraylike(f"{self.__name__}.at", a, *args)
    dtype = self._result_dtype(a, *args)
    a = _array(a).astype(dtype)
    args = tuple(_array(arg).astype(dtype) for arg in args)
    if not isinstance(indices, tuple):
      indices = (indices,)
    if not indices:
      return a
    indices = tuple(i if isinstance(i, slice) or i is Ellipsis or i is None else _array(i)
                    for i in indices)
    idx_shapes = [get_aval(i).shape for i in indices if not isinstance(i, slice)
                  and i is not Ellipsis and i is not None]
    shape = shapes.broadcast_shapes(*idx_shapes) if idx_shapes else ()
    if not shape:
      ref = indexing._IndexUpdateRef(a, indices)
      return ref.set(self(ref.get(), *args))
    count = math.prod(shape)
    if args:
      arg = args[0]
      tail = get_aval(arg).shape[len(shape):]
      arg = shapes.broadcast_to(arg, (*shape, *tail))
      args = (shapes.reshape(arg, (count, *tail)),)
    flat = tuple(i if isinstance(i, slice) or i is Ellipsis or i is None
                 else shapes.ravel(shapes.broadcast_to(i, shape)) for i in indices)

    def step(carry, k):
      idx = tuple(i if isinstance(i, slice) or i is Ellipsis or i is None else i[k]
                  for i in flat)
      ref = indexing._IndexUpdateRef(carry, idx)
      return ref.set(self(ref.get(), *(arg[k] for arg in args))), None

    out, _ = lax.scan(step, a, creation.arange(count))
    return out

  # --- reduceat --------------------------------------------------------------------------

  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    """Reductions of the slices ``a[indices[i]:indices[i+1]]`` along ``axis``.

    The last slice runs to the end of the axis. Where ``indices[i] >= indices[i+1]`` the result is
    ``a[indices[i]]``, as in NumPy.

    Args:
      a: the array to reduce, with at least 1 dimension.
      indices: a 1-d integer array of slice starts.
      axis: a single int axis. Default 0.
      dtype: the dtype of the computation; None (default) keeps ``a``'s.
      out: unsupported; must be None (else NotImplementedError).

    Returns:
      An array of ``a``'s shape with the length of ``axis`` replaced by ``len(indices)``.

    Examples:
      >>> jnp.add.reduceat(jnp.arange(8), jnp.array([0, 4, 5]))
      Array([ 6,  4, 18], dtype=int32)
    """
    name = f"{self.__name__}.reduceat"
    self._check_binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"the 'out' argument of {name} is not supported")
    check_arraylike(name, a, indices)
    reduceat = self._props["reduceat"] or self._reduceat_via_loop
    return reduceat(a, indices, axis=axis, dtype=dtype)

  def _reduceat_via_loop(self, a, indices, axis=0, dtype=None):
    name = f"{self.__name__}.reduceat"
    a = _array(a)
    indices = _array(indices)
    aval = get_aval(a)
    if aval.ndim == 0:
      raise ValueError(f"{name}: a must have 1 or more dimension, got shape {aval.shape}")
    if get_aval(indices).ndim != 1:
      raise ValueError(f"{name}: indices must be one-dimensional, got shape "
                       f"{get_aval(indices).shape}")
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError(f"{name}: reduceat requires a single integer axis")
    axis = _axis(name, axis, aval.ndim)
    if dtype is not None:
      a = a.astype(dtype)
    result = indexing.take(a, indices, axis=axis)
    bounds = shapes.append(indices, aval.shape[axis])
    other = [d for d in range(get_aval(result).ndim) if d != axis]
    start = shapes.expand_dims(bounds[:-1], other)
    end = shapes.expand_dims(bounds[1:], other)

    def body(i, acc):
      row = indexing.take(a, shapes.expand_dims(i, 0), axis=axis)
      return ufuncs.where((i > start) & (i < end), self(acc, row), acc)

    return lax.fori_loop(0, aval.shape[axis], body, result)

  # --- outer -----------------------------------------------------------------------------

  def outer(self, A, B, /):
    """Apply the binary function to every pair ``(A[i...], B[j...])``.

    Args:
      A: the first array.
      B: the second array.

    Returns:
      An array of shape ``A.shape + B.shape``.

    Examples:
      >>> jnp.multiply.outer(jnp.array([1, 2, 3]), jnp.array([1, 10]))
      Array([[ 1, 10],
             [ 2, 20],
             [ 3, 30]], dtype=int32)
    """
    self._check_binary("outer")
    check_arraylike(f"{self.__name__}.outer", A, B)
    A, B = _array(A), _array(B)
    a_shape, b_shape = get_aval(A).shape, get_aval(B).shape
    if self._props["call"] is not None:
      # Broadcasting ufuncs: A's axes first, then B's, in one elementwise call.
      return self(shapes.reshape(A, (*a_shape, *(1,) * len(b_shape))), B)
    flat_a = shapes.reshape(A, (math.prod(a_shape),))
    flat_b = shapes.reshape(B, (math.prod(b_shape),))
    result = api.vmap(api.vmap(self, (None, 0)), (0, None))(flat_a, flat_b)
    return shapes.reshape(result, (*a_shape, *b_shape))


def frompyfunc(func, /, nin, nout, *, identity=None):
  """Create a :class:`hlox.numpy.ufunc` from a Python function of scalars.

  ``func`` is applied elementwise with :class:`hlox.numpy.vectorize`, so it must be written with
  hlox operations (it is traced, not called on Python numbers). The resulting ufunc broadcasts its
  ``nin`` inputs, and its ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at`` methods
  are built from generic loops (``lax.fori_loop`` and ``lax.scan``).

  Args:
    func: the elementwise function: ``nin`` scalars in, ``nout`` scalars out.
    nin: the number of inputs of ``func``.
    nout: the number of outputs of ``func``.
    identity: the identity of the (binary) operation, if any: it lets ``reduce`` handle empty
      arrays and ``where`` masks. Default None.

  Returns:
    A :class:`hlox.numpy.ufunc` wrapping ``func``.

  Examples:
    >>> mul = jnp.frompyfunc(lambda x, y: x * y, 2, 1, identity=1)
    >>> mul(jnp.array([1, 2, 3]), 2)
    Array([2, 4, 6], dtype=int32)
    >>> mul.reduce(jnp.array([1, 2, 3, 4]))
    Array(24, dtype=int32)
    >>> mul.outer(jnp.array([1, 2]), jnp.array([1, 2, 3]))
    Array([[1, 2, 3],
           [2, 4, 6]], dtype=int32)

  See also:
    :class:`hlox.numpy.vectorize`.
  """
  return ufunc(func, nin, nout, identity=identity)


# --- the built-in ufuncs -----------------------------------------------------------------

def _builtin(func, nin, identity=None, **methods):
  """A ufunc instance of a subclass whose ``__call__`` is ``func`` itself: one frame."""
  cls = type(f"_ufunc_{func.__name__}", (ufunc,),
             {"__call__": staticmethod(func), "__doc__": func.__doc__,
              "__module__": __name__, "__wrapped__": func})
  u = cls(func, nin, 1, identity=identity, call=func, **methods)
  # inspect would read the staticmethod as a bound method and drop ``x``.
  u.__signature__ = inspect.signature(func)
  return u


def _reducer(name, lax_reduce, lax_op, identity, preproc):
  """A ``reduce`` for the bitwise and logical ufuncs (lax's and/or/xor reductions)."""
  def reduce(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
    a = preproc(_array(a))
    aval = get_aval(a)
    dims = reductions._axis_tuple(name, axis, aval.ndim)
    result_dtype = reductions._user_dtype(name, dtype) or aval.dtype
    a = lax.convert_element_type(a, result_dtype)
    if where is not None:
      a = reductions._masked(name, a, _array(where), np.asarray(identity).astype(result_dtype))
    result = lax_reduce(a, dims)
    if initial is not None:
      result = lax_op(lax.convert_element_type(_array(initial), result_dtype), result)
    return lax.expand_dims(result, dims) if keepdims else result
  return reduce


def _require_integer(a):
  if not (dtypes.is_int(get_aval(a).dtype) or get_aval(a).dtype == dtypes.bool_):
    raise ValueError(f"integer argument required; got dtype={get_aval(a).dtype}")
  return a


def _to_bool(a):
  if dtypes.is_complex(get_aval(a).dtype):
    a = ufuncs.real(a)
  return lax.convert_element_type(a, dtypes.bool_)


def _sum_reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
  return reductions.sum(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                        where=where)


def _prod_reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
  return reductions.prod(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                         where=where)


def _minmax_reduce(fn):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
    result = fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return result if dtype is None else result.astype(dtype)
  return reduce


def _logsumexp(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
  """``log(sum(exp(a)))`` shifted by the (gradient-stopped) maximum for stability."""
  a, = promote_dtypes_inexact(_array(a))
  dims = reductions._axis_tuple("logaddexp.reduce", axis, get_aval(a).ndim)
  amax = reductions.max(ufuncs.real(a), axis=dims, keepdims=True, where=where,
                        initial=-np.inf)
  amax = lax.stop_gradient(ufuncs.where(ufuncs.isfinite(amax), amax, 0))
  sumexp = reductions.sum(ufuncs.exp(a - amax.astype(get_aval(a).dtype)), axis=dims,
                          keepdims=keepdims, where=where)
  shift = amax if keepdims else shapes.squeeze(amax, dims)
  result = ufuncs.log(sumexp) + shift.astype(get_aval(sumexp).dtype)
  return result if initial is None else ufuncs.logaddexp(initial, result)


def _logsumexp2(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
  ln2 = float(np.log(2))
  if initial is not None:
    initial = _array(initial) * ln2
  return _logsumexp(_array(a) * ln2, axis=axis, dtype=dtype, keepdims=keepdims,
                    initial=initial, where=where) / ln2


def _cumsum(a, axis=0, dtype=None):
  return reductions.cumsum(a, axis=axis, dtype=dtype)


def _cumprod(a, axis=0, dtype=None):
  return reductions.cumprod(a, axis=axis, dtype=dtype)


def _add_at(a, indices, b):
  a = _array(a)
  if get_aval(a).dtype == dtypes.bool_:
    ints = indexing._IndexUpdateRef(a.astype(np.int32), indices)
    return ints.add(_to_bool(_array(b)).astype(np.int32)).astype(dtypes.bool_)
  return indexing._IndexUpdateRef(a, indices).add(b)


def _multiply_at(a, indices, b):
  a = _array(a)
  if get_aval(a).dtype == dtypes.bool_:
    ints = indexing._IndexUpdateRef(a.astype(np.int32), indices)
    return ints.multiply(_to_bool(_array(b)).astype(np.int32)).astype(dtypes.bool_)
  return indexing._IndexUpdateRef(a, indices).multiply(b)


def _subtract_at(a, indices, b):
  return indexing._IndexUpdateRef(_array(a), indices).subtract(b)


add = _builtin(ufuncs.add, 2, 0, reduce=_sum_reduce, accumulate=_cumsum, at=_add_at)
multiply = _builtin(ufuncs.multiply, 2, 1, reduce=_prod_reduce, accumulate=_cumprod,
                    at=_multiply_at)
subtract = _builtin(ufuncs.subtract, 2, None, at=_subtract_at)
negative = _builtin(ufuncs.negative, 1)
maximum = _builtin(ufuncs.maximum, 2, None, reduce=_minmax_reduce(reductions.max))
minimum = _builtin(ufuncs.minimum, 2, None, reduce=_minmax_reduce(reductions.min))
logaddexp = _builtin(ufuncs.logaddexp, 2, -np.inf, reduce=_logsumexp)
logaddexp2 = _builtin(ufuncs.logaddexp2, 2, -np.inf, reduce=_logsumexp2)
bitwise_and = _builtin(ufuncs.bitwise_and, 2, -1, reduce=_reducer(
    "bitwise_and.reduce", lax.reduce_and, lax.bitwise_and, -1, _require_integer))
bitwise_or = _builtin(ufuncs.bitwise_or, 2, 0, reduce=_reducer(
    "bitwise_or.reduce", lax.reduce_or, lax.bitwise_or, 0, _require_integer))
bitwise_xor = _builtin(ufuncs.bitwise_xor, 2, 0, reduce=_reducer(
    "bitwise_xor.reduce", lax.reduce_xor, lax.bitwise_xor, 0, _require_integer))
logical_and = _builtin(ufuncs.logical_and, 2, True, reduce=_reducer(
    "logical_and.reduce", lax.reduce_and, lax.bitwise_and, True, _to_bool))
logical_or = _builtin(ufuncs.logical_or, 2, False, reduce=_reducer(
    "logical_or.reduce", lax.reduce_or, lax.bitwise_or, False, _to_bool))
logical_xor = _builtin(ufuncs.logical_xor, 2, False, reduce=_reducer(
    "logical_xor.reduce", lax.reduce_xor, lax.bitwise_xor, False, _to_bool))
