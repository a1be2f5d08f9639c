"""Array creation: array and asarray (defined in ``conversion``), copy, zeros/ones/full/empty
and their ``*_like`` forms, arange, linspace, logspace, geomspace, eye, identity, tri, tril,
triu, diag, diagonal, meshgrid, indices.

Constants are built from ``lax`` operations (``iota``, ``broadcast_in_dim``, comparisons), so
under ``jit`` they are computed by XLA rather than embedded as large host arrays. Results
follow JAX's dtype rules: 32-bit defaults unless x64 is enabled, and Python scalars weakly
typed.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.dims import step_is_forward
from hlox.core.shape_poly import canonical_dim, is_dim, is_symbolic_dim, max_dim
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import ConcretizationTypeError
from hlox.numpy import util
from hlox.numpy.conversion import _put, _python_scalars, _user_dtype, array, asarray
from hlox.runtime.array import Array
from hlox.core.extended_functions import refused as _refused

__all__ = ["array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "logspace", "geomspace", "eye",
           "identity", "tri", "tril", "triu", "diag", "diagonal", "meshgrid", "indices", "copy"]


# --- small private helpers ---------------------------------------------------------------

def _shape(shape, name: str) -> tuple:
  """An int or a sequence of static ints as a shape tuple (TypeError if negative)."""
  if (isinstance(shape, (int, np.integer)) or (hasattr(shape, "ndim") and shape.ndim == 0)
      or is_symbolic_dim(shape)):
    shape = (shape,)
  try:
    shape = tuple(shape)
  except TypeError:
    if not hasattr(type(shape), "__index__"):  # any ``__index__``-able object is one size
      raise _invalid_shape_error(shape, name) from None
    shape = (shape,)
  if any(isinstance(d, Tracer) and d.to_concrete_value() is None for d in shape):
    raise _invalid_shape_error(shape, name)
  try:
    shape = tuple(map(canonical_dim, shape))  # ints, or symbolic sizes (shape polymorphism)
  except TypeError:
    raise _invalid_shape_error(shape, name) from None
  if any(d < 0 for d in shape):
    # TypeError, the class JAX raises here (its shape check rejects the shape as a type).
    raise TypeError(f"{name}: negative dimensions are not allowed, got shape {shape}")
  return shape


def _check_forgot_shape_tuple(name, shape, dtype):
  if isinstance(dtype, int) and isinstance(shape, int) and not isinstance(dtype, bool):
    raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                    f"write `jax.numpy.{name}({shape}, {dtype})` when you meant "
                    f"`jax.numpy.{name}(({shape}, {dtype}))`, i.e. with a single tuple "
                    "argument for the shape? (hlox.numpy, like jax.numpy, takes the shape "
                    "as one tuple)")


def _invalid_shape_error(shape, name: str, context: str = ""):
  """JAX's TypeError for a shape that is not a sequence of concrete ints (``context``: what
  the shape was, after JAX's sentence)."""
  msg = f"Shapes must be 1D sequences of concrete values of integer type, got {shape!r}.{context}"
  tracers = [d for d in (shape if isinstance(shape, (tuple, list)) else (shape,))
             if isinstance(d, Tracer)]
  # JAX's advice, and where the first traced dimension came from; a value the trace knows
  # (a JVP's primal) is not a jit matter.
  tracers = [t for t in tracers if t.to_concrete_value() is None]
  if tracers:
    msg += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions." + tracers[0]._origin_msg())
  return TypeError(msg)


def _concrete_scalar(x, name: str, what: str):
  """A concrete Python number from ``x``; ConcretizationTypeError for traced values."""
  x = _concrete_value(x, name, what)
  return x if isinstance(x, _python_scalars) else x.item()


def _concrete_value(x, name: str, what: str, origin: str = ""):
  """``x`` as a Python scalar or a 0-d NumPy array (keeping its dtype for promotion).
  ``origin`` starts the error's text (JAX's phrase, which people search for)."""
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"{origin}the {what} argument of {name} must be a concrete value, because it "
          "determines the shape of the result. Pass it as a static argument (static_argnums) "
          "or compute it from shapes, e.g. x.shape[0]")
    x = value
  if type(x) in _python_scalars:
    return x
  value = np.asarray(x)
  if value.ndim != 0:
    raise ValueError(f"{name}: {what} must be a scalar, got an array of shape {value.shape}")
  return value


def _div_by_int(x, n: int):
  """``x / n`` for a static positive int ``n``, in ``x``'s (inexact) dtype."""
  return lax.div(x, np.asarray(n, get_aval(x).dtype))


# --- copies -------------------------------------------------------------------------------

def copy(a, order=None):
  """A copy of ``a`` in a fresh buffer.

  Args:
    a: array-like input.
    order: None or 'K' (others raise ``NotImplementedError``: hlox has one memory layout).

  Returns:
    An array equal to ``a``, with its shape and dtype.

  Examples:
    >>> jnp.copy(jnp.array([1, 2, 3]))
    Array([1, 2, 3], dtype=int32)
  """
  try:
    util.check_arraylike("copy", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "copy", a, order)
  return array(a, copy=True, order=order)


# --- filled arrays -----------------------------------------------------------------------

def _full(shape, fill_value, dtype, name):
  """``shape`` filled with a (non-weak) ``dtype`` scalar, built with lax."""
  return lax.full(_shape(shape, name), np.asarray(fill_value).astype(dtype)[()]
                  if not isinstance(fill_value, (Array, Tracer)) else fill_value, dtype)


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of the given shape filled with zeros.

  Args:
    shape: an int or a tuple of ints.
    dtype: optional dtype (default float32, or float64 with x64 enabled).
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of shape ``shape`` and dtype ``dtype``.

  Examples:
    >>> jnp.zeros(3)
    Array([0., 0., 0.], dtype=float32)
    >>> jnp.zeros((2, 2), dtype=int)
    Array([[0, 0],
           [0, 0]], dtype=int32)
  """
  _check_forgot_shape_tuple("zeros", shape, dtype)
  dtype = _user_dtype(dtype, "zeros") or dtypes.default_float_dtype()
  try:
    return _put(_full(shape, 0, dtype, "zeros"), device, out_sharding, "zeros")
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "zeros", shape, dtype, device=device, out_sharding=out_sharding)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of the given shape filled with ones.

  Args:
    shape: an int or a tuple of ints.
    dtype: optional dtype (default float32, or float64 with x64 enabled).
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of shape ``shape`` and dtype ``dtype``.

  Examples:
    >>> jnp.ones(3)
    Array([1., 1., 1.], dtype=float32)
    >>> jnp.ones((1, 2), dtype=bool)
    Array([[ True,  True]], dtype=bool)
  """
  _check_forgot_shape_tuple("ones", shape, dtype)
  dtype = _user_dtype(dtype, "ones") or dtypes.default_float_dtype()
  try:
    return _put(_full(shape, 1, dtype, "ones"), device, out_sharding, "ones")
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "ones", shape, dtype, device=device, out_sharding=out_sharding)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of the given shape whose values are unspecified.

  hlox has no uninitialized memory: the array is filled with zeros.

  Args:
    shape: an int or a tuple of ints.
    dtype: optional dtype (default float32, or float64 with x64 enabled).
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of shape ``shape`` and dtype ``dtype``.

  Examples:
    >>> jnp.empty(2)
    Array([0., 0.], dtype=float32)
  """
  _check_forgot_shape_tuple("empty", shape, dtype)
  dtype = _user_dtype(dtype, "empty") or dtypes.default_float_dtype()
  try:
    return _put(_full(shape, 0, dtype, "empty"), device, out_sharding, "empty")
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "empty", shape, dtype, device=device, out_sharding=out_sharding)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of the given shape filled with ``fill_value``.

  Without ``dtype`` the result takes ``fill_value``'s dtype, weak type included (a Python float
  gives a weakly typed default float array).

  Args:
    shape: an int or a tuple of ints.
    fill_value: a scalar, or an array broadcast to ``shape``.
    dtype: optional dtype of the result.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of shape ``shape``.

  Examples:
    >>> jnp.full(3, 7)
    Array([7, 7, 7], dtype=int32, weak_type=True)
    >>> jnp.full((2, 2), jnp.array([1., 2.]))
    Array([[1., 2.],
           [1., 2.]], dtype=float32)
  """
  try:
    dtype = _user_dtype(dtype, "full")
    util.check_arraylike("full", fill_value)
    if get_aval(fill_value).ndim == 0:
      out = lax.full(_shape(shape, "full"), fill_value, dtype)
    else:
      value = asarray(fill_value, dtype=dtype)
      shape = _shape(shape, "full")
      try:
        out = util.broadcast_to_shape(value, shape)
      except ValueError:
        raise ValueError(f"full: fill_value of shape {value.shape} cannot be broadcast to "
                         f"shape {shape}") from None
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "full",
                    shape, fill_value, dtype, device=device, out_sharding=out_sharding)
  return _put(out, device, out_sharding, "full")


def _like(name, a, fill_value, dtype, shape, device, out_sharding=None):
  if not (hasattr(a, "shape") and hasattr(a, "dtype")):
    a = util.from_jax_array(a)
  elif not isinstance(a, (Array, Tracer, np.ndarray, np.generic)):
    # Duck typing (as JAX): anything with a shape and a dtype, e.g. a ShapeDtypeStruct. They
    # are read even when ``a`` could turn itself into an array (``__jax_array__``), which
    # would cost a computation (or fail) to learn what the attributes already say.
    dtype = _user_dtype(dtype, name) or dtypes.canonicalize_dtype(np.dtype(a.dtype))
    shape = _shape(a.shape if shape is None else shape, name)
    return _put(lax.full(shape, fill_value, dtype), device, out_sharding, name)
  util.check_arraylike(name, a)
  dtype = _user_dtype(dtype, name)
  shape = None if shape is None else _shape(shape, name)
  out = lax.full_like(a, fill_value, dtype, shape)  # on a's device by default
  return _put(out, device, out_sharding, name)


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array of zeros with the shape and dtype of ``a``.

  Args:
    a: the array-like whose shape and dtype the result takes.
    dtype: optional dtype overriding ``a``'s.
    shape: optional shape overriding ``a``'s.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of the shape and dtype described.

  Examples:
    >>> jnp.zeros_like(jnp.array([1, 2]))
    Array([0, 0], dtype=int32)
    >>> jnp.zeros_like(jnp.array([1, 2]), dtype=jnp.float32, shape=(2, 1))
    Array([[0.],
           [0.]], dtype=float32)
  """
  try:
    return _like("zeros_like", a, 0, dtype, shape, device, out_sharding)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "zeros_like",
                    a, dtype, shape, device=device, out_sharding=out_sharding)


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array of ones with the shape and dtype of ``a``.

  Args:
    a: the array-like whose shape and dtype the result takes.
    dtype: optional dtype overriding ``a``'s.
    shape: optional shape overriding ``a``'s.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of the shape and dtype described.

  Examples:
    >>> jnp.ones_like(jnp.array([1.5, 2.5]))
    Array([1., 1.], dtype=float32)
  """
  try:
    return _like("ones_like", a, 1, dtype, shape, device, out_sharding)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "ones_like",
                    a, dtype, shape, device=device, out_sharding=out_sharding)


def empty_like(prototype, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array of the shape and dtype of ``prototype`` with unspecified values (zeros in hlox).

  Args:
    prototype: the array-like whose shape and dtype the result takes.
    dtype: optional dtype overriding ``prototype``'s.
    shape: optional shape overriding ``prototype``'s.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of the shape and dtype described.

  Examples:
    >>> jnp.empty_like(jnp.array([1, 2, 3]))
    Array([0, 0, 0], dtype=int32)
  """
  try:
    return _like("empty_like", prototype, 0, dtype, shape, device, out_sharding)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "empty_like",
                    prototype, dtype, shape, device=device, out_sharding=out_sharding)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array filled with ``fill_value``, with the shape and dtype of ``a``.

  Args:
    a: the array-like whose shape and dtype the result takes.
    fill_value: a scalar, or an array broadcast to the result's shape.
    dtype: optional dtype overriding ``a``'s.
    shape: optional shape overriding ``a``'s.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of the shape and dtype described.

  Examples:
    >>> jnp.full_like(jnp.array([1, 2, 3]), 9)
    Array([9, 9, 9], dtype=int32)
    >>> jnp.full_like(jnp.array([1, 2, 3]), 0.5)
    Array([0, 0, 0], dtype=int32)
  """
  try:
    fill_value = util.from_jax_array(fill_value)
    if get_aval(fill_value).ndim == 0:
      return _like("full_like", a, fill_value, dtype, shape, device, out_sharding)
    if isinstance(a, (Array, Tracer, np.ndarray, np.generic)) or not (
        hasattr(a, "shape") and hasattr(a, "dtype")):
      a = util.from_jax_array(a)
      util.check_arraylike("full_like", a, fill_value)
      a_shape, a_dtype = get_aval(a).shape, get_aval(a).dtype
    else:  # duck typed, as in ``_like``
      util.check_arraylike("full_like", fill_value)
      a_shape, a_dtype = tuple(a.shape), dtypes.canonicalize_dtype(np.dtype(a.dtype))
    dtype = _user_dtype(dtype, "full_like") or a_dtype
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "full_like",
                    a, fill_value, dtype, shape, device=device, out_sharding=out_sharding)
  shape = a_shape if shape is None else _shape(shape, "full_like")
  value = asarray(fill_value, dtype=dtype)
  try:
    out = util.broadcast_to_shape(value, shape)
  except ValueError:
    raise ValueError(f"full_like: fill_value of shape {value.shape} cannot be broadcast to "
                     f"shape {shape}") from None
  return _put(out, device, out_sharding, "full_like")


# --- ranges ------------------------------------------------------------------------------

def _symbolic_arange(start, stop, step, dtype):
  """``arange`` with a symbolic size among the arguments (shape polymorphism): every
  argument must be an integer or a symbolic size, and the sign of the step be decided."""
  if stop is None:
    start, stop = 0, start
  step = 1 if step is None else step
  if not all(map(is_dim, (start, stop, step))):
    raise ValueError("In arange with non-constant arguments all of start, stop, and step "
                     f"must be either dimension expressions or integers: start={start}, "
                     f"stop={stop}, step={step}")
  forward = step_is_forward(step, "arange with non-constant arguments", "arange has step == 0")
  gap, distance = (step, stop - start) if forward else (-step, start - stop)
  size = max_dim(0, distance + gap - 1) // gap
  dtype = dtype or dtypes.canonicalize_dtype(dtypes.int64)
  return lax.add(lax.convert_element_type(start, dtype),
                 lax.mul(lax.convert_element_type(step, dtype), lax.iota(dtype, size)))


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in the half-open interval ``[start, stop)``.

  The bounds must be concrete, since they fix the length. Without ``dtype``, integer arguments
  give the default integer dtype and any floating argument the default float dtype. Value
  ``i`` is ``start + i * step``.

  Args:
    start: the first value, or the end (``stop``) when it is the only bound given.
    stop: the end of the interval (not included).
    step: the spacing (default 1; must not be 0).
    dtype: optional dtype of the result.
    device: keyword-only; optional device or sharding to place the result on.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    A 1-d array of ``ceil((stop - start) / step)`` values.

  Examples:
    >>> jnp.arange(5)
    Array([0, 1, 2, 3, 4], dtype=int32)
    >>> jnp.arange(1, 2, 0.25)
    Array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    >>> jnp.arange(5, 0, -2, dtype=jnp.float32)
    Array([5., 3., 1.], dtype=float32)
  """
  if start is None:
    raise TypeError("arange: start must not be None")
  dtype = _user_dtype(dtype, "arange")
  if is_symbolic_dim(start) or is_symbolic_dim(stop) or is_symbolic_dim(step):
    return _put(_symbolic_arange(start, stop, step, dtype), device, out_sharding, "arange")
  # With one argument, ``start`` is the stop: errors name it as the user thinks of it.
  start_name = "stop" if stop is None and step is None else "start"
  names = {"start": start_name, "stop": "stop", "step": "step"}
  bounds = {"start": start, "stop": stop, "step": step}
  bounds = {k: None if v is None else _concrete_value(
      v, "arange", names[k], f"It arose in the jnp.arange argument '{names[k]}': ")
            for k, v in bounds.items()}
  if any(dtypes.is_complex(np.result_type(v)) for v in bounds.values() if v is not None):
    raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                     "starting in JAX v0.10.0 (use a real range and convert it, e.g. "
                     "jnp.arange(n).astype(complex))")
  if dtype is None:
    dtype = dtypes.result_type(*[v for v in bounds.values() if v is not None])
  start, stop, step = (v if v is None or type(v) in _python_scalars else v.item()
                       for v in bounds.values())
  if stop is None:
    start, stop = 0, start
  # As JAX's jaxprs: an explicit step gives ``start + step * iota``, none ``start + iota``
  # (just ``iota`` from 0).
  step_given = step is not None
  if step is None:
    step = 1
  if step == 0:
    raise ValueError("arange: step must not be zero")
  if dtypes.is_complex(dtype):
    # A real range with a complex dtype: NumPy decides on the host.
    out = asarray(np.arange(start, stop, step).astype(dtype))
    return _put(out, device, out_sharding, "arange")
  all_int = all(isinstance(x, (int, bool)) for x in (start, stop, step))
  if all_int:
    size = len(range(int(start), int(stop), int(step)))
  else:
    size = builtins.max(0, math.ceil((stop - start) / step))
  if dtypes.is_int(dtype) or dtype == dtypes.bool_:
    if not all_int:
      # NumPy's integer arange of float bounds steps by int(start + step) - int(start).
      out = asarray(np.arange(start, stop, step, dtype=dtype))
      return _put(out, device, out_sharding, "arange")
    out = _int_range(start, step if step_given else None, size, dtype)
  else:
    # Narrow floats step in float32 (their spacing would swallow large counts).
    compute = dtype if not step_given or dtypes.finfo(dtype).bits >= 32 else \
        dtypes.float32
    out = lax.convert_element_type(_affine_iota(start, step if step_given else None, size,
                                                compute), dtype)
  return _put(out, device, out_sharding, "arange")


def _affine_iota(start, step, size, dtype):
  """``start + step * iota`` (``step`` None: ``start + iota``; and 0 + iota is ``iota``)."""
  out = lax.iota(dtype, size)
  if step is not None:
    return lax.add(np.asarray(start, dtype), lax.mul(np.asarray(step, dtype), out))
  return out if start == 0 else lax.add(np.asarray(start, dtype), out)


def _int_range(start, step, size, dtype):
  if dtype == dtypes.bool_:
    if size > 2:
      raise ValueError("arange: a bool range can have at most 2 elements")
    return lax.convert_element_type(_int_range(start, step, size, dtypes.int32), dtype)
  if dtypes.is_unsigned_int(dtype) and step is not None and step < 0:
    # A negative step has no unsigned literal: count down from ``start``.
    out = lax.iota(dtype, size)
    if step != -1:
      out = lax.mul(out, np.asarray(-step, dtype))
    return lax.sub(np.asarray(start, dtype), out)
  return _affine_iota(start, step, size, dtype)


def _num(num, name: str) -> int:
  num = _concrete_scalar(num, name, "num")
  try:
    num = operator.index(num)
  except TypeError:
    raise TypeError(f"{name}: num must be an integer, got {num!r}") from None
  if num < 0:
    raise ValueError(f"{name}: number of samples, {num}, must be non-negative")
  return num


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
  """Evenly spaced samples over an interval.

  ``start`` and ``stop`` may be arrays (they broadcast; the samples run along ``axis``);
  ``num`` must be concrete.

  Args:
    start: the first sample.
    stop: the last sample (excluded when ``endpoint`` is False).
    num: the number of samples (non-negative int).
    endpoint: whether ``stop`` is the last sample.
    retstep: if True, also return the spacing between samples.
    dtype: optional dtype (default: the default float dtype).
    axis: where the samples' axis goes in the result.
    device: keyword-only; optional device or sharding to place the result on.

  Returns:
    An array of ``num`` samples along ``axis``; with ``retstep``, a tuple
    ``(samples, step)``.

  Examples:
    >>> jnp.linspace(0, 1, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    >>> jnp.linspace(0, 1, 4, endpoint=False, retstep=True)
    (Array([0.  , 0.25, 0.5 , 0.75], dtype=float32), Array(0.25, dtype=float32))
  """
  num = _num(num, "linspace")
  util.check_arraylike("linspace", start, stop)
  dtype = _user_dtype(dtype, "linspace") or \
      dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  compute = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dtype))
  start = lax.convert_element_type(asarray(start), compute)
  stop = lax.convert_element_type(asarray(stop), compute)
  bounds = list(util.broadcast_shapes(start.shape, stop.shape))
  start = util.broadcast_to_shape(start, bounds)
  stop = util.broadcast_to_shape(stop, bounds)
  axis = operator.index(axis)
  if not -(len(bounds) + 1) <= axis <= len(bounds):
    raise ValueError(f"linspace: axis {axis} is out of bounds for a result of dimension "
                     f"{len(bounds) + 1}")
  axis = axis % (len(bounds) + 1)
  expanded = bounds[:axis] + [1] + bounds[axis:]
  div = num - 1 if endpoint else num
  if num > 1:
    delta = _div_by_int(lax.sub(stop, start), div)
    real = np.finfo(compute).dtype if dtypes.is_complex(compute) else compute
    fraction_shape = [1] * len(expanded)
    fraction_shape[axis] = div
    fraction = lax.reshape(_div_by_int(lax.iota(real, div), div), fraction_shape)
    fraction = lax.convert_element_type(fraction, compute)
    # start * (1 - t) + stop * t recovers both endpoints exactly.
    out = lax.add(lax.mul(lax.reshape(start, expanded), lax.sub(np.asarray(1, compute),
                                                                  fraction)),
                  lax.mul(lax.reshape(stop, expanded), fraction))
    if endpoint:
      out = lax.concatenate([out, lax.expand_dims(stop, (axis,))], axis)
  elif num == 1:
    # (a scalar NaN step when there is no step, whatever the bounds' shape, as NumPy)
    delta = lax.full((), np.nan, compute) if endpoint else lax.sub(stop, start)
    out = lax.reshape(start, expanded)
  else:
    delta = lax.full((), np.nan, compute)
    out = lax.full(bounds[:axis] + [0] + bounds[axis:], 0, compute)
  if dtypes.is_int(dtype) and not dtypes.is_complex(compute):
    out = lax.floor(out)  # NumPy floors (conversion alone would truncate toward zero)
  out = _put(lax.convert_element_type(out, dtype), device)
  return (out, delta) if retstep else out


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
  """Samples evenly spaced on a log scale: ``base ** linspace(start, stop, num)``.

  Args:
    start: the exponent of the first sample.
    stop: the exponent of the last sample (excluded when ``endpoint`` is False).
    num: the number of samples.
    endpoint: whether ``base ** stop`` is the last sample.
    base: the base of the exponents.
    dtype: optional dtype (default: the default float dtype).
    axis: where the samples' axis goes in the result.

  Returns:
    An array of ``num`` samples along ``axis``.

  Examples:
    >>> jnp.logspace(0, 3, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float32)
    >>> jnp.logspace(0, 3, 4, base=2)
    Array([1., 2., 4., 8.], dtype=float32)
  """
  num = _num(num, "logspace")
  util.check_arraylike("logspace", start, stop, base)
  dtype = _user_dtype(dtype, "logspace") or \
      dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  compute = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dtype))
  lin = linspace(start, stop, num, endpoint=endpoint, dtype=compute, axis=axis)
  base = lax.convert_element_type(asarray(base), compute)
  base, lin = util.promote_shapes("logspace", base, lin)
  out = lax.pow(base, lin)
  return lax.convert_element_type(out, dtype)  # integer dtypes truncate, as in NumPy


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
  """Samples evenly spaced on a log scale from ``start`` to ``stop`` (a geometric progression).

  Args:
    start: the first sample (non-zero).
    stop: the last sample (non-zero, of the same sign as ``start``).
    num: the number of samples.
    endpoint: whether ``stop`` is the last sample.
    dtype: optional dtype (default: the default float dtype).
    axis: where the samples' axis goes in the result.

  Returns:
    An array of ``num`` samples along ``axis``.

  Examples:
    >>> jnp.geomspace(1, 8, 4)
    Array([1., 2., 4., 8.], dtype=float32)

  """
  num = _num(num, "geomspace")
  util.check_arraylike("geomspace", start, stop)
  for bound in (start, stop):
    if not isinstance(bound, Tracer) and np.any(np.asarray(bound) == 0):
      raise ValueError("geomspace: a geometric sequence cannot include zero")
  dtype = _user_dtype(dtype, "geomspace") or \
      dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  compute = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dtype))
  if dtypes.is_complex(compute):
    raise NotImplementedError("geomspace: complex bounds are not supported")
  start = lax.convert_element_type(asarray(start), compute)
  stop = lax.convert_element_type(asarray(stop), compute)
  bounds = util.broadcast_shapes(start.shape, stop.shape)
  start = util.broadcast_to_shape(start, bounds)
  stop = util.broadcast_to_shape(stop, bounds)
  # Both bounds share the sign of start: space the logs of the magnitudes, restore the sign.
  negative = lax.convert_element_type(lax.lt(start, np.asarray(0, compute)), compute)
  sign = lax.sub(np.asarray(1, compute), lax.mul(np.asarray(2, compute), negative))
  lin = linspace(lax.log(lax.mul(start, sign)), lax.log(lax.mul(stop, sign)), num,
                 endpoint=endpoint, axis=axis)
  axis = operator.index(axis) % (len(bounds) + 1)
  out = lax.mul(lax.exp(lin), lax.expand_dims(sign, (axis,)))
  # exp(log(x)) may be an ulp off: put the exact endpoints back, as NumPy does.
  if num >= 1:
    ends = [lax.expand_dims(start, (axis,))]
    middle_stop = num - 1 if endpoint and num >= 2 else num
    ends.append(lax.slice_in_dim(out, 1, middle_stop, 1, axis))
    if endpoint and num >= 2:
      ends.append(lax.expand_dims(stop, (axis,)))
    out = lax.concatenate(ends, axis)
  return lax.convert_element_type(out, dtype)  # integer dtypes truncate, as in NumPy


# --- matrices ----------------------------------------------------------------------------

def _static_dim(n, name: str, what: str) -> int:
  if is_symbolic_dim(n):  # a symbolic size (shape polymorphism)
    return n
  if isinstance(n, Tracer) and n.to_concrete_value() is None:
    raise _invalid_shape_error((n,), name, f" argument of '{what}' jnp.{name}().")
  n = _concrete_scalar(n, name, what)
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"{name}: {what} must be an integer, got {n!r}") from None
  if n < 0:
    raise ValueError(f"{name}: {what} must be non-negative, got {n}")
  return n


def _offset_mask(shape, k, name):
  """Boolean ``(N, M)`` mask pieces: the row iota plus ``k`` and the column iota."""
  rows = lax.broadcasted_iota(dtypes.int32, shape, 0)
  cols = lax.broadcasted_iota(dtypes.int32, shape, 1)
  if isinstance(k, (Array, Tracer)):
    if not (dtypes.is_int(k.dtype) and k.ndim == 0):
      raise TypeError(f"{name}: k must be an integer scalar, got {k.aval.str_short()}")
    k = lax.convert_element_type(k, dtypes.int32)
  else:
    k = operator.index(k)
    if all(type(d) is int for d in shape):
      # Offsets beyond the matrix behave like the nearest one that empties/fills it.
      k = np.int32(builtins.max(builtins.min(k, shape[1] + 1), -shape[0] - 1))
    else:
      k = np.int32(k)
  return lax.add(rows, k), cols


def eye(N, M=None, k=0, dtype=None, *, device=None):
  """A 2-d array with ones on one diagonal and zeros elsewhere.

  Args:
    N: the number of rows.
    M: the number of columns (default ``N``).
    k: the diagonal: 0 the main one, positive above it, negative below; it may be traced.
    dtype: optional dtype (default float32, or float64 with x64 enabled).
    device: keyword-only; optional device or sharding to place the result on.

  Returns:
    An ``(N, M)`` array.

  Examples:
    >>> jnp.eye(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    >>> jnp.eye(2, 3, k=1, dtype=int)
    Array([[0, 1, 0],
           [0, 0, 1]], dtype=int32)
  """
  dtype = _user_dtype(dtype, "eye") or dtypes.default_float_dtype()
  N = _static_dim(N, "eye", "N")
  M = N if M is None else _static_dim(M, "eye", "M")
  rows, cols = _offset_mask((N, M), k, "eye")
  return _put(lax.convert_element_type(lax.eq(rows, cols), dtype), device)


def identity(n, dtype=None):
  """The square identity matrix.

  Args:
    n: the number of rows and columns.
    dtype: optional dtype (default float32, or float64 with x64 enabled).

  Returns:
    An ``(n, n)`` array with ones on the main diagonal.

  Examples:
    >>> jnp.identity(2, dtype=int)
    Array([[1, 0],
           [0, 1]], dtype=int32)
  """
  return eye(n, dtype=_user_dtype(dtype, "identity"))


def tri(N, M=None, k=0, dtype=None):
  """A 2-d array with ones at and below a diagonal and zeros above it.

  Args:
    N: the number of rows.
    M: the number of columns (default ``N``).
    k: the diagonal: 0 the main one, positive above it, negative below.
    dtype: optional dtype (default float32, or float64 with x64 enabled).

  Returns:
    An ``(N, M)`` array.

  Examples:
    >>> jnp.tri(3, k=-1, dtype=int)
    Array([[0, 0, 0],
           [1, 0, 0],
           [1, 1, 0]], dtype=int32)
  """
  dtype = _user_dtype(dtype, "tri") or dtypes.default_float_dtype()
  N = _static_dim(N, "tri", "N")
  M = N if M is None else _static_dim(M, "tri", "M")
  rows, cols = _offset_mask((N, M), k, "tri")
  return lax.convert_element_type(lax.ge(rows, cols), dtype)


def _triangle(name, m, k, lower):
  util.check_arraylike(name, m)
  m = asarray(m)
  if m.ndim < 2:
    raise ValueError(f"{name}: argument must be at least 2-d, got shape {m.shape}")
  shape = m.shape[-2:]
  # Both are JAX's ``tri`` mask (j <= i + k: the row iota plus k, even 0, then the column
  # iota, as its jaxprs show): tril keeps it, triu zeroes the mask one diagonal lower.
  if isinstance(k, (Array, Tracer)):
    if not (dtypes.is_int(k.dtype) and k.ndim == 0):
      raise TypeError(f"{name}: k must be an integer scalar, got {k.aval.str_short()}")
    k = lax.convert_element_type(k, dtypes.int32)
    if not lower:
      k = lax.sub(k, np.int32(1))
  else:
    k = operator.index(k) - (0 if lower else 1)
    # Offsets beyond the matrix behave like the nearest one that empties/fills it.
    k = np.int32(builtins.max(builtins.min(k, shape[1] + 1), -shape[0] - 1))
  rows = lax.add(lax.broadcasted_iota(dtypes.int32, shape, 0), k)
  keep = lax.ge(rows, lax.broadcasted_iota(dtypes.int32, shape, 1))
  keep = lax.broadcast_in_dim(keep, m.shape, (m.ndim - 2, m.ndim - 1))
  zeros = lax.full(m.shape, 0, m.dtype)
  return lax.select(keep, m, zeros) if lower else lax.select(keep, zeros, m)


def tril(m, k=0):
  """The lower triangle of ``m``: entries above diagonal ``k`` set to zero.

  Args:
    m: array-like of at least two dimensions; the last two axes are the matrices.
    k: the diagonal: 0 the main one, positive above it, negative below.

  Returns:
    An array of ``m``'s shape and dtype.

  Examples:
    >>> jnp.tril(jnp.array([[1, 2], [3, 4]]))
    Array([[1, 0],
           [3, 4]], dtype=int32)
  """
  return _triangle("tril", m, k, True)


def triu(m, k=0):
  """The upper triangle of ``m``: entries below diagonal ``k`` set to zero.

  Args:
    m: array-like of at least two dimensions; the last two axes are the matrices.
    k: the diagonal: 0 the main one, positive above it, negative below.

  Returns:
    An array of ``m``'s shape and dtype.

  Examples:
    >>> jnp.triu(jnp.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), k=1)
    Array([[0, 2, 3],
           [0, 0, 6],
           [0, 0, 0]], dtype=int32)
  """
  return _triangle("triu", m, k, False)


def diag(v, k: int = 0):
  """Extract a diagonal of a 2-d array, or build a 2-d array with a given diagonal.

  Args:
    v: a 1-d array-like (placed on diagonal ``k`` of a square array of zeros) or a 2-d one
      (whose diagonal ``k`` is returned). Other ranks raise ``ValueError``.
    k: the diagonal: 0 the main one, positive above it, negative below.

  Returns:
    For 1-d ``v`` of length ``n``, an ``(n + abs(k), n + abs(k))`` array; for 2-d ``v``, the
    1-d diagonal. The dtype is ``v``'s.

  Examples:
    >>> jnp.diag(jnp.array([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    >>> jnp.diag(jnp.array([[1, 2], [3, 4]]), k=1)
    Array([2], dtype=int32)
  """
  util.check_arraylike("diag", v)
  v = asarray(v)
  k = operator.index(_concrete_scalar(k, "diag", "k"))
  if v.ndim == 2:
    return diagonal(v, offset=k)
  if v.ndim != 1:
    raise ValueError(f"diag: input must be 1-d or 2-d, got shape {v.shape}")
  length = v.shape[0]
  n = length + abs(k)
  # Interior padding of n zeros between elements puts them n + 1 apart in the flattened
  # n x n result, i.e. on a diagonal; the low padding picks which one.
  low = k if k >= 0 else -k * n
  if length == 0:
    return lax.full((n, n), 0, v.dtype)
  high = n * n - low - (length + (length - 1) * n)
  flat = lax.pad(v, np.zeros((), v.dtype), [(low, high, n)])
  return lax.reshape(flat, (n, n))


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
  """The diagonal ``a[..., i, i + offset]`` of the plane of ``axis1`` and ``axis2``.

  Args:
    a: array-like input of at least two dimensions.
    offset: the diagonal: 0 the main one, positive above it (towards larger ``axis2``
      indices), negative below.
    axis1: the first axis of the plane.
    axis2: the second axis of the plane.

  Returns:
    An array with ``a``'s dtype: ``a``'s other axes followed by the diagonal as the last axis.

  Examples:
    >>> x = jnp.arange(9).reshape(3, 3)
    >>> jnp.diagonal(x)
    Array([0, 4, 8], dtype=int32)
    >>> jnp.diagonal(x, offset=-1)
    Array([3, 7], dtype=int32)
  """
  util.check_arraylike("diagonal", a)
  a = asarray(a)
  if a.ndim < 2:
    raise ValueError(f"diagonal: array must be at least 2-d, got shape {a.shape}")
  offset = operator.index(_concrete_scalar(offset, "diagonal", "offset"))
  ax1 = _canonical_axis(axis1, a.ndim, "diagonal")
  ax2 = _canonical_axis(axis2, a.ndim, "diagonal")
  if ax1 == ax2:
    raise ValueError("diagonal: axis1 and axis2 cannot be the same")
  rest = [i for i in range(a.ndim) if i not in (ax1, ax2)]
  a = lax.transpose(a, (*rest, ax1, ax2))
  *batch, n, m = a.shape
  if offset >= 0:
    length, start = builtins.max(0, builtins.min(n, m - offset)), offset
  else:
    length, start = builtins.max(0, builtins.min(n + offset, m)), -offset * m
  # In the flattened plane the diagonal is a strided slice with stride m + 1.
  flat = lax.reshape(a, (*batch, n * m))
  if length == 0:
    start, limit = 0, 0
  else:
    limit = start + (length - 1) * (m + 1) + 1
  return lax.slice_in_dim(flat, start, limit, m + 1, axis=len(batch))


def _canonical_axis(axis, ndim, name):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


# --- grids -------------------------------------------------------------------------------

def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
  """Coordinate arrays from 1-d coordinate vectors.

  Args:
    *xi: 1-d array-likes, the coordinates along each dimension.
    copy: keyword-only; accepted for NumPy compatibility (results are always new arrays).
    sparse: keyword-only; if True, return broadcastable arrays with size-1 axes instead of
      full grids.
    indexing: keyword-only; 'xy' (Cartesian: the first two output axes swapped) or 'ij'
      (matrix indexing).

  Returns:
    A list of ``len(xi)`` arrays.

  Examples:
    >>> X, Y = jnp.meshgrid(jnp.array([1, 2, 3]), jnp.array([4, 5]))
    >>> X
    Array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    >>> Y
    Array([[4, 4, 4],
           [5, 5, 5]], dtype=int32)
    >>> [g.shape for g in jnp.meshgrid(jnp.arange(3), jnp.arange(2), indexing='ij')]
    [(3, 2), (3, 2)]
  """
  util.check_arraylike("meshgrid", *xi)
  if indexing not in ("xy", "ij"):
    raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
  arrays = [asarray(x) for x in xi]
  if any(a.ndim != 1 for a in arrays):
    raise ValueError(f"meshgrid: arguments must be 1-d, got shapes "
                     f"{[a.shape for a in arrays]}")
  shape = [a.shape[0] for a in arrays]
  dims = list(range(len(arrays)))
  if indexing == "xy" and len(arrays) >= 2:
    shape[0], shape[1] = shape[1], shape[0]
    dims[0], dims[1] = 1, 0
  out = []
  for a, d in zip(arrays, dims):
    if sparse:
      s = [1] * len(arrays)
      s[d] = a.shape[0]
      out.append(lax.reshape(a, s))
    else:
      out.append(lax.broadcast_in_dim(a, shape, (d,)))
  return out


def indices(dimensions, dtype=None, sparse: bool = False):
  """Index grids for an array of a given shape.

  Args:
    dimensions: a sequence of ints, the shape of the grid.
    dtype: optional integer dtype (default: the default integer dtype).
    sparse: if True, return one broadcastable array per dimension instead of a dense stack.

  Returns:
    A ``(len(dimensions),) + dimensions`` array whose slice ``i`` holds the index along axis
    ``i``; with ``sparse``, a tuple of arrays of shape ``(1, ..., n_i, ..., 1)``.

  Examples:
    >>> jnp.indices((2, 3))
    Array([[[0, 0, 0],
            [1, 1, 1]],
    <BLANKLINE>
           [[0, 1, 2],
            [0, 1, 2]]], dtype=int32)
    >>> jnp.indices((2, 3), sparse=True)
    (Array([[0],
           [1]], dtype=int32), Array([[0, 1, 2]], dtype=int32))
  """
  dtype = _user_dtype(dtype, "indices") or dtypes.default_int_dtype()
  dimensions = _shape(dimensions, "indices")
  n = len(dimensions)
  if sparse:
    out = []
    for i, d in enumerate(dimensions):
      s = [1] * n
      s[i] = d
      out.append(lax.broadcasted_iota(dtype, s, i))
    return tuple(out)
  if n == 0:
    return lax.full((0,), 0, dtype)
  grids = [lax.expand_dims(lax.broadcasted_iota(dtype, dimensions, i), (0,))
           for i in range(n)]
  return lax.concatenate(grids, 0)


# The functions JAX jits without ``inline=True`` (a nested ``jit`` equation in its jaxprs,
# named as JAX's function is): eagerly one cached executable each, staged when traced.
# (``geomspace`` is left as it is: it checks concrete bounds for zeros.)
util.fuse_functions(globals(), ["tril", "triu", "diag", "diagonal", "linspace", "logspace"],
                    {"tril": ("k",), "triu": ("k",), "diag": ("k",),
                     "diagonal": ("offset", "axis1", "axis2")},
                    default_static=("num", "endpoint", "retstep", "dtype", "axis", "device"),
                    staged={"tril": "tril", "triu": "triu", "diag": "_diag",
                            "diagonal": "diagonal", "linspace": "_linspace",
                            "logspace": "_logspace"})
