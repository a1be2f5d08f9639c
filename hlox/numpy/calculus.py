"""Calculus on sampled data: differences (``diff``, ``ediff1d``), ``gradient``, phase
``unwrap``, the trapezoidal rule (``trapezoid``) and piecewise-linear ``interp``.
"""
from __future__ import annotations

import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.numpy import creation, reductions, searching, shapes, sorting, ufuncs, util

__all__ = ["diff", "ediff1d", "interp", "trapezoid", "gradient", "unwrap"]


def diff(a, n=1, axis=-1, prepend=None, append=None):
  """The ``n``-th discrete difference along an axis: ``a[1:] - a[:-1]``, applied ``n`` times.

  Boolean input gives ``a[1:] != a[:-1]`` (bool).

  Args:
    a: array-like input of at least one dimension.
    n: the number of times to difference (a non-negative static int).
    axis: the axis to difference along.
    prepend: optional values joined to the front of ``a`` along ``axis`` first (a scalar is
      broadcast to one slice).
    append: optional values joined to the back, like ``prepend``.

  Returns:
    An array shorter by ``n`` along ``axis`` (after prepending and appending), of ``a``'s dtype.

  Examples:
    >>> x = jnp.array([1, 4, 9, 16])
    >>> jnp.diff(x)
    Array([3, 5, 7], dtype=int32)
    >>> jnp.diff(x, n=2)
    Array([2, 2], dtype=int32)
    >>> jnp.diff(x, prepend=0)
    Array([1, 3, 5, 7], dtype=int32)
  """
  util.check_arraylike("diff", a)
  a = creation.asarray(a)
  n = operator.index(n)
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if n == 0:
    return a
  nd = get_aval(a).ndim
  if nd == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = util.canonicalize_axis_tuple(axis, nd, "diff")[0]
  parts = []
  for extra in (prepend, None, append):
    if extra is None:
      continue
    extra = creation.asarray(extra)
    if get_aval(extra).ndim == 0:
      shape = list(get_aval(a).shape)
      shape[axis] = 1
      extra = shapes.broadcast_to(extra, tuple(shape))
    parts.append(extra)
  if prepend is not None or append is not None:
    pieces = ([parts[0]] if prepend is not None else []) + [a] + (
        [parts[-1]] if append is not None else [])
    a = shapes.concatenate(pieces, axis)
  for _ in range(n):
    shape = get_aval(a).shape
    size = shape[axis]
    # The later entries first, then the earlier ones (JAX's order in its jaxprs).
    starts, limits = [0] * len(shape), list(shape)
    starts[axis] = min(1, size)
    hi = lax.slice(a, starts, limits)
    starts[axis], limits[axis] = 0, max(size - 1, 0)
    lo = lax.slice(a, starts, limits)
    a = ufuncs.not_equal(hi, lo) if get_aval(a).dtype == np.bool_ else ufuncs.subtract(hi, lo)
  return a


def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive entries of ``ravel(ary)``, with optional values at the ends.

  Args:
    ary: array-like input (flattened).
    to_end: optional values appended to the differences (cast to their dtype).
    to_begin: optional values put before the differences.

  Returns:
    A 1-d array of ``ary``'s dtype.

  Examples:
    >>> jnp.ediff1d(jnp.array([[1, 2], [4, 7]]))
    Array([1, 2, 3], dtype=int32)
    >>> jnp.ediff1d(jnp.array([1, 2, 4]), to_begin=0, to_end=jnp.array([9, 9]))
    Array([0, 1, 2, 9, 9], dtype=int32)
  """
  util.check_arraylike("ediff1d", ary)
  arr = shapes.ravel(ary)
  result = arr[1:] - arr[:-1]
  dtype = get_aval(result).dtype
  if to_begin is not None:
    result = shapes.concatenate([shapes.ravel(creation.asarray(to_begin)).astype(dtype),
                                 result])
  if to_end is not None:
    result = shapes.concatenate([result, shapes.ravel(creation.asarray(to_end)).astype(dtype)])
  return result


def gradient(f, *varargs, axis=None, edge_order=None):
  """The gradient of ``f`` by finite differences.

  Second-order central differences inside the array, first-order one-sided ones at the edges
  (``edge_order`` other than None raises ``NotImplementedError``).

  Args:
    f: array-like of samples, at least 2 along each differentiated axis.
    *varargs: the spacing: nothing (unit spacing), one value for every axis, or one per axis;
      each a scalar step or a 1-d array of coordinates along that axis.
    axis: keyword-only; an int or tuple of ints, the axes to differentiate (None: all).
    edge_order: keyword-only; must be None.

  Returns:
    One array of ``f``'s shape for a single axis, else a list of them, one per axis, of a
    floating dtype.

  Examples:
    >>> jnp.gradient(jnp.array([1., 4., 9., 16.]))
    Array([3., 4., 6., 7.], dtype=float32)
    >>> jnp.gradient(jnp.array([1., 4., 9., 16.]), 2.)
    Array([1.5, 2. , 3. , 3.5], dtype=float32)
    >>> jnp.gradient(jnp.array([[1., 2.], [3., 5.]]))
    [Array([[2., 3.],
           [2., 3.]], dtype=float32), Array([[1., 1.],
           [2., 2.]], dtype=float32)]
  """
  util.check_arraylike("gradient", f)
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  f = creation.asarray(f)
  nd = get_aval(f).ndim
  if f.dtype not in _inexact_set():
    f = f.astype(dtypes.to_inexact_dtype(f.dtype))
  axes = (tuple(range(nd)) if axis is None else
          util.canonicalize_axis_tuple(axis, nd, "gradient") if not isinstance(axis, int)
          else (axis % nd,))
  if isinstance(axis, (tuple, list)):
    axes = tuple(a % nd for a in axis)
  if not varargs:
    spacing = [1.0] * len(axes)
  elif len(varargs) == 1:
    spacing = list(varargs) * len(axes)
  elif len(varargs) == len(axes):
    spacing = list(varargs)
  else:
    raise TypeError("Invalid number of spacing arguments")
  outs = []
  for ax, h in zip(axes, spacing):
    size = get_aval(f).shape[ax]
    if size < 2:
      raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                       "(edge_order + 1) elements are required.")
    h = creation.asarray(h)
    if get_aval(h).ndim == 0:
      sl = lambda s, e: lax.slice_in_dim(f, s, e, axis=ax)
      inner = (sl(2, size) - sl(0, size - 2)) / (2 * h)
      first = (sl(1, 2) - sl(0, 1)) / h
      last = (sl(size - 1, size) - sl(size - 2, size - 1)) / h
      outs.append(shapes.concatenate([first, inner, last], axis=ax))
    else:
      # Non-uniform coordinates along the axis.
      dx = diff(h)
      sl = lambda s, e: lax.slice_in_dim(f, s, e, axis=ax)
      shape = [1] * nd
      shape[ax] = -1
      dx1 = shapes.reshape(dx[:-1], shape)
      dx2 = shapes.reshape(dx[1:], shape)
      a = -dx2 / (dx1 * (dx1 + dx2))
      b = (dx2 - dx1) / (dx1 * dx2)
      c = dx1 / (dx2 * (dx1 + dx2))
      inner = a * sl(0, size - 2) + b * sl(1, size - 1) + c * sl(2, size)
      first = (sl(1, 2) - sl(0, 1)) / shapes.reshape(dx[:1], shape)
      last = (sl(size - 1, size) - sl(size - 2, size - 1)) / shapes.reshape(dx[-1:], shape)
      outs.append(shapes.concatenate([first, inner, last], axis=ax))
  return outs[0] if len(outs) == 1 else outs


def _inexact_set():
  return {d for d in dtypes.all_dtypes if dtypes.is_inexact(d)}


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """Unwrap phase angles: jumps larger than ``discont`` are replaced by their ``period`` complement.

  Args:
    p: array-like of real angles (complex input raises ``ValueError``).
    discont: the largest jump left alone (default ``period / 2``).
    axis: the axis to unwrap along.
    period: the period of the values (default ``2 * pi``).

  Returns:
    An array of ``p``'s shape and (inexact) dtype.

  Examples:
    >>> jnp.unwrap(jnp.array([0., 3., 6., 9.]), period=4.)
    Array([ 0., -1., -2., -3.], dtype=float32)
  """
  util.check_arraylike("unwrap", p)
  p, period = util.promote_dtypes(creation.asarray(p), period)
  if dtypes.is_complex(get_aval(p).dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if discont is None:
    discont = period / 2
  interval = period // 2 if dtypes.is_int(get_aval(p).dtype) else period / 2
  dd = diff(p, axis=axis)
  ddmod = ufuncs.mod(dd + interval, period) - interval
  ddmod = ufuncs.where((ddmod == -interval) & (dd > 0), interval, ddmod)
  ph_correct = ufuncs.where(ufuncs.abs(dd) < discont, 0, ddmod - dd)
  axis = axis % get_aval(p).ndim
  first = lax.slice_in_dim(p, 0, 1, axis=axis)
  rest = lax.slice_in_dim(p, 1, get_aval(p).shape[axis], axis=axis)
  return shapes.concatenate([first, rest + reductions.cumsum(ph_correct, axis=axis)], axis=axis)


def interp(x, xp, fp, left=None, right=None, period=None):
  """One-dimensional piecewise-linear interpolation of the points ``(xp, fp)`` at ``x``.

  Args:
    x: array-like of points to evaluate at (real).
    xp: 1-d array-like of increasing sample points.
    fp: 1-d array-like of sample values, as many as ``xp``.
    left: the value for ``x < xp[0]`` (default ``fp[0]``), or ``'extrapolate'`` to continue
      the first segment's line.
    right: the value for ``x > xp[-1]`` (default ``fp[-1]``), or ``'extrapolate'``.
    period: optional scalar period of ``xp``: points are taken modulo it (``left`` and
      ``right`` are then ignored).

  Returns:
    An array of ``x``'s shape and ``fp``'s (inexact) dtype.

  Examples:
    >>> xp, fp = jnp.array([0., 1., 2.]), jnp.array([0., 10., 0.])
    >>> jnp.interp(jnp.array([-1., 0.5, 1.5, 3.]), xp, fp)
    Array([0., 5., 5., 0.], dtype=float32)
    >>> jnp.interp(jnp.array([-1., 3.]), xp, fp, left='extrapolate', right=-1.)
    Array([-10.,  -1.], dtype=float32)
  """
  util.check_arraylike("interp", x, xp, fp)
  x, xp, fp = creation.asarray(x), creation.asarray(xp), creation.asarray(fp)
  if get_aval(xp).ndim != 1 or get_aval(xp).shape != get_aval(fp).shape:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  if get_aval(xp).shape[0] == 0:
    raise ValueError("xp and fp must be non-empty")
  extrapolate = {}
  for side, value in (("left", left), ("right", right)):
    extrapolate[side] = isinstance(value, str)
    if isinstance(value, str) and value != "extrapolate":
      raise ValueError(f"the only valid string value of `{side}` is 'extrapolate', but got: "
                       f"{value!r}")
  if dtypes.is_complex(get_aval(x).dtype):
    raise ValueError("jnp.interp: complex x values not supported.")
  if dtypes.is_complex(get_aval(fp).dtype):
    dtype = dtypes.canonicalize_dtype(dtypes.result_type(x, xp, fp))
    x, xp = x.astype(dtypes.to_inexact_dtype(dtypes.result_type(x, xp))), xp
  else:
    dtype = dtypes.canonicalize_dtype(
        dtypes.to_inexact_dtype(dtypes.result_type(x, xp, fp)))
  x, xp, fp = x.astype(dtype) if not dtypes.is_complex(dtype) else x, \
      xp.astype(dtype) if not dtypes.is_complex(dtype) else xp, fp.astype(dtype)
  if period is not None:
    if get_aval(creation.asarray(period)).ndim != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = ufuncs.abs(period)
    x = x % period
    xp = xp % period
    order = sorting.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = shapes.concatenate([xp[-1:] - period, xp, xp[:1] + period])
    fp = shapes.concatenate([fp[-1:], fp, fp[:1]])
  i = ufuncs.clip(searching.searchsorted(xp, x, side="right"), 1, get_aval(xp).shape[0] - 1)
  dx = xp[i] - xp[i - 1]
  delta = x - xp[i - 1]
  # An absolute threshold (as JAX): steps below it take the left value, which also keeps
  # the gradient of delta / dx finite for tiny, close points.
  eps = np.spacing(np.finfo(np.dtype(dtypes.to_inexact_dtype(get_aval(xp).dtype))).eps)
  safe = ufuncs.abs(dx) > eps
  f = ufuncs.where(safe, fp[i - 1] + (delta / ufuncs.where(safe, dx, 1)) * (fp[i] - fp[i - 1]),
                fp[i - 1])
  if period is None:
    # Outside the range the clipped segment index already extends the end segments' lines.
    if not extrapolate["left"]:
      f = ufuncs.where(x < xp[0], fp[0] if left is None else left, f)
    if not extrapolate["right"]:
      f = ufuncs.where(x > xp[-1], fp[-1] if right is None else right, f)
  return f.astype(dtype) if f.dtype != dtype else f


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integrate ``y`` along an axis by the trapezoidal rule.

  Args:
    y: array-like of samples.
    x: optional array-like of sample points (broadcast against ``y`` along ``axis``); if
      None, samples are ``dx`` apart.
    dx: the spacing of the samples when ``x`` is None.
    axis: the axis to integrate along.

  Returns:
    An array of ``y``'s shape without ``axis``, of a floating dtype.

  Examples:
    >>> jnp.trapezoid(jnp.array([1., 2., 3.]))
    Array(4., dtype=float32)
    >>> jnp.trapezoid(jnp.array([1., 2., 3.]), x=jnp.array([0., 1., 3.]))
    Array(6.5, dtype=float32)
  """
  util.check_arraylike("trapezoid", y)
  y = creation.asarray(y)
  if x is None:
    y, = util.promote_dtypes_inexact(y)
    dx_arr = dx
    if np.ndim(dx) > 0:
      # An array of spacings broadcasts against y's steps (NumPy's rule): move its
      # integration axis last, as y's.
      dx_arr = creation.asarray(dx)
      dx_arr = shapes.reshape(dx_arr, (1,) * (get_aval(y).ndim - dx_arr.ndim) + dx_arr.shape)
      dx_arr = shapes.moveaxis(dx_arr, axis, -1)
      if dx_arr.shape[-1] != 1:
        y = shapes.moveaxis(y, axis, -1)
        return 0.5 * reductions.sum(dx_arr * (y[..., 1:] + y[..., :-1]), axis=-1)
      dx_arr = dx_arr[..., 0]
  else:
    y, x = util.promote_dtypes_inexact(y, creation.asarray(x))
    if get_aval(x).ndim == 1:
      dx_arr = diff(x)
    else:
      dx_arr = shapes.moveaxis(diff(x, axis=axis), axis, -1)
  y = shapes.moveaxis(y, axis, -1)
  if x is not None:
    return 0.5 * reductions.sum(dx_arr * (y[..., 1:] + y[..., :-1]), axis=-1)
  return 0.5 * dx_arr * reductions.sum(y[..., 1:] + y[..., :-1], axis=-1)


# As JAX's jitted functions: eagerly one cached executable each, a nested ``jit`` equation
# when traced.
util.fuse_functions(globals(), ["diff", "ediff1d", "gradient", "unwrap", "trapezoid"],
                    {"diff": ("n", "axis")}, default_static=("axis", "edge_order"),
                    staged=("diff", "ediff1d", "gradient", "unwrap", "trapezoid"))
