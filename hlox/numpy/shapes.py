"""Shape manipulation: reshape, ravel, transpose, swapaxes, moveaxis, expand_dims, squeeze,
broadcasting, concatenate/stack and friends, split, tile, repeat, flips, rot90, roll,
atleast_*d, astype, append, insert, pad, rollaxis, unstack, resize, block and trim_zeros.

Everything here is written on ``lax`` shape primitives with static (concrete) shapes,
sizes and axes; a traced value where one is needed raises ``ConcretizationTypeError``.
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings

import numpy as np

from hlox import lax
from hlox.core import dtypes, sharding_types
from hlox.core.shape_poly import is_symbolic_dim
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import ConcretizationTypeError, HloxTypeError, ShardingTypeError
from hlox.lax.indexing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from hlox.numpy import creation, reductions, util
from hlox.numpy.conversion import _put as _put_on
from hlox.numpy.creation import asarray, linspace
from hlox.runtime.array import Array
from hlox.core.extended_functions import refused as _refused

__all__ = ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "broadcast_shapes", "concatenate", "concat",
           "stack", "hstack", "vstack", "dstack", "column_stack", "split", "array_split",
           "hsplit", "vsplit", "dsplit", "tile", "repeat", "flip", "fliplr", "flipud",
           "rot90", "roll", "atleast_1d", "atleast_2d", "atleast_3d", "shape", "ndim", "size",
           "astype", "append", "insert", "pad", "permute_dims", "matrix_transpose", "rollaxis",
           "unstack", "resize", "block", "trim_zeros"]


# --- helpers -----------------------------------------------------------------------------

def _array(name: str, a):
  util.check_arraylike(name, a)
  return asarray(a)


def _axis(axis, ndim: int, name: str) -> int:
  try:
    axis = operator.index(axis)
  except HloxTypeError:
    raise
  except TypeError:
    raise TypeError(f"{name}: axis must be an integer, got {axis!r}") from None
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _axes(axes, ndim: int, name: str) -> tuple:
  """``axes`` (int or sequence) as non-negative ints in the given order; no repeats."""
  if isinstance(axes, (int, np.integer)):
    axes = (axes,)
  out = tuple(_axis(a, ndim, name) for a in axes)
  if len(set(out)) != len(out):
    raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
  return out


def _static_int(x, name: str, what: str) -> int:
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"the {what} argument of {name} must be concrete (it determines the shape of "
          "the result); pass it as a static argument")
    x = value
  if is_symbolic_dim(x):  # a symbolic size (shape polymorphism) stands for an int
    return x
  try:
    return operator.index(x)
  except TypeError:
    if isinstance(x, (np.ndarray, Array)) and np.ndim(x) == 0 and \
        np.issubdtype(np.asarray(x).dtype, np.integer):
      return int(np.asarray(x))
    raise TypeError(f"{name}: {what} must be an integer, got {x!r}") from None


def _static_ints(x, name: str, what: str) -> tuple:
  """A concrete int, or sequence or array of ints, as a tuple of Python ints."""
  x = util.from_jax_array(x)
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"the {what} argument of {name} must be concrete (it determines the shape of "
          "the result); pass it as a static argument")
    x = value
  if isinstance(x, (Array, np.ndarray, np.generic)):
    value = np.asarray(x)
    # The check is per element, as JAX's: an empty array (``np.cumsum([])`` is float64)
    # holds no non-integer.
    if value.dtype.kind not in "iu" and value.size:
      raise TypeError(f"{name}: {what} must be integers, got dtype {value.dtype}")
    return tuple(int(v) for v in value.reshape(-1))
  if isinstance(x, (int, np.integer)):
    return (operator.index(x),)
  if isinstance(x, (str, bytes)):
    raise TypeError(f"{name}: {what} must be an integer or a sequence of integers, got {x!r}")
  # As JAX: anything ``iter`` accepts is a sequence of dimensions (also the old protocol of
  # ``__len__`` + ``__getitem__``, like JAX's test ``ScalarShape``), anything else is one
  # dimension, which ``operator.index`` must accept.
  try:
    items = iter(x)
  except TypeError:
    if hasattr(type(x), "__index__"):
      return (operator.index(x),)
    raise TypeError(f"{name}: {what} must be an integer or a sequence of integers, "
                    f"got {x!r}") from None
  return tuple(_static_int(v, name, what) for v in items)


def _is_scalar_int(x) -> bool:
  if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
    return True
  return isinstance(x, (Array, Tracer, np.ndarray)) and np.ndim(x) == 0


# --- reshaping ---------------------------------------------------------------------------

def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None, out_sharding=None):
  """Give ``a`` a new shape without changing its data.

  The new shape must have the same number of elements; one entry may be -1 and is then
  inferred. A NumPy array input is reshaped by NumPy and stays a NumPy array.

  Args:
    a: array-like input.
    shape: the new shape, an int or a tuple of ints (at most one -1).
    order: 'C' to read and write elements in row-major order, 'F' in column-major order
      ('A' is not supported and raises ``NotImplementedError``).
    newshape: deprecated spelling of ``shape`` (pass only one of them).
    copy: accepted for NumPy compatibility; hlox arrays are immutable, so it has no effect.
    out_sharding: sharding for the result (None: the default placement).

  Returns:
    An array of shape ``shape`` and the dtype of ``a``.

  Examples:
    >>> jnp.reshape(jnp.arange(6), (2, 3))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    >>> jnp.arange(6).reshape(3, -1)
    Array([[0, 1],
           [2, 3],
           [4, 5]], dtype=int32)
    >>> jnp.reshape(jnp.arange(6), (2, 3), order='F')
    Array([[0, 2, 4],
           [1, 3, 5]], dtype=int32)
  """
  if newshape is not None:
    if shape is not None:
      raise TypeError("reshape: pass only one of shape and newshape")
    shape = newshape
  if shape is None:
    raise TypeError("reshape: missing required argument 'shape'")
  if out_sharding is None and isinstance(a, (np.ndarray, np.generic)):
    # As JAX does, a NumPy array is reshaped by its own method and stays a NumPy array, even
    # under a transformation: code that checks concrete values there (numpyro's support
    # checks under jit) relies on it.
    return a.reshape(shape, order=order)
  try:
    a = _array("reshape", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "reshape",
                    a, shape, order, newshape=newshape, copy=copy, out_sharding=out_sharding)
  _check_traced_dims(shape)
  shape = _infer_shape(a.shape, a.size, shape)
  if order == "C":
    return lax.reshape(a, shape, out_sharding=out_sharding)
  if order == "F":
    # Column-major: reverse the axes, reshape row-major to the reversed shape, reverse back.
    flipped = lax.transpose(a, tuple(reversed(range(a.ndim))))
    out = lax.reshape(flipped, tuple(reversed(shape)))
    out = lax.transpose(out, tuple(reversed(range(len(shape)))))
    return lax.apply_out_sharding(out, out_sharding, "reshape")
  if order == "A":
    raise NotImplementedError("reshape: order='A' is not supported (use 'C' or 'F')")
  raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")


def _check_traced_dims(shape) -> None:
  """JAX's TypeError (its text, the tracer's origin) for a shape with a traced dimension: a
  lone scalar is one dimension, shown as the list ``[dim]`` as JAX shows it."""
  dims = shape if isinstance(shape, (tuple, list)) else [shape] if np.ndim(shape) == 0 else ()
  if any(isinstance(d, Tracer) and d.to_concrete_value() is None for d in dims):
    raise creation._invalid_shape_error(dims, "reshape")


def _infer_shape(old_shape, size, shape) -> tuple:
  shape = _static_ints(shape, "reshape", "shape")
  if -1 in shape:
    if shape.count(-1) > 1:
      raise ValueError(f"reshape: can only specify one unknown dimension (-1), got {shape}")
    known = math.prod(d for d in shape if d != -1)
    if known < 0:
      raise ValueError(f"reshape: invalid shape {shape} (negative dimensions)")
    if known == 0 or size % known:
      raise TypeError(f"reshape: cannot reshape array of shape {old_shape} (size {size}) "
                      f"into shape {shape}")
    return tuple(size // known if d == -1 else d for d in shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"reshape: invalid shape {shape} (negative dimensions)")
  new_size = math.prod(shape)
  if new_size != size:
    # A TypeError, as JAX raises (NumPy raises ValueError).
    raise TypeError(f"reshape: cannot reshape array of shape {old_shape} (size {size}) into "
                    f"shape {shape} (size {new_size})")
  return shape


def ravel(a, order: str = "C", *, out_sharding=None):
  """Flatten ``a`` to one dimension.

  Args:
    a: array-like input.
    order: 'C' (row-major, the default) or 'F' (column-major) reading order.
    out_sharding: sharding for the result (None: the default placement).

  Returns:
    A 1-d array of ``a.size`` elements and the dtype of ``a``.

  Examples:
    >>> x = jnp.array([[1, 2], [3, 4]])
    >>> jnp.ravel(x)
    Array([1, 2, 3, 4], dtype=int32)
    >>> jnp.ravel(x, order='F')
    Array([1, 3, 2, 4], dtype=int32)
  """
  try:
    a = _array("ravel", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "ravel", a, order, out_sharding=out_sharding)
  return reshape(a, (a.size,), order=order, out_sharding=out_sharding)


def transpose(a, axes=None):
  """Permute the axes of ``a``.

  Args:
    a: array-like input.
    axes: a permutation of ``range(a.ndim)`` (negative axes allowed); None reverses the axes.

  Returns:
    An array with the dtype of ``a`` whose axis ``i`` is axis ``axes[i]`` of ``a``.

  Examples:
    >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
    >>> jnp.transpose(x)
    Array([[1, 4],
           [2, 5],
           [3, 6]], dtype=int32)
    >>> jnp.transpose(jnp.zeros((2, 3, 4)), (1, 2, 0)).shape
    (3, 4, 2)

  See also: :func:`hlox.numpy.moveaxis`, :func:`hlox.numpy.swapaxes`.
  """
  try:
    a = _array("transpose", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "transpose", a, axes)
  if axes is None:
    return lax.transpose(a, tuple(reversed(range(a.ndim))))
  axes = _static_ints(axes, "transpose", "axes")
  if len(axes) != a.ndim:
    raise ValueError(f"transpose: axes {axes} don't match array of dimension {a.ndim}")
  return lax.transpose(a, _axes(axes, a.ndim, "transpose"))


def permute_dims(a, /, axes):
  """Permute the axes of ``a`` (the array API name of ``transpose``).

  Args:
    a: array-like input.
    axes: a permutation of ``range(a.ndim)`` (required, unlike ``transpose``).

  Returns:
    An array with the dtype of ``a`` whose axis ``i`` is axis ``axes[i]`` of ``a``.

  Examples:
    >>> jnp.permute_dims(jnp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
  """
  return transpose(a, axes)  # (which takes typed keys too)


def matrix_transpose(x, /):
  """Swap the last two axes of ``x`` (transpose a stack of matrices).

  Args:
    x: an array of at least two dimensions; fewer raises ``ValueError``.

  Returns:
    An array of shape ``x.shape[:-2] + (x.shape[-1], x.shape[-2])`` and the dtype of ``x``.

  Examples:
    >>> jnp.matrix_transpose(jnp.array([[1, 2, 3], [4, 5, 6]]))
    Array([[1, 4],
           [2, 5],
           [3, 6]], dtype=int32)
    >>> jnp.matrix_transpose(jnp.zeros((5, 2, 3))).shape
    (5, 3, 2)
  """
  x = _array("matrix_transpose", x)
  if x.ndim < 2:
    raise ValueError(f"matrix_transpose: x must be at least 2-d, got shape {x.shape}")
  return swapaxes(x, -1, -2)


def swapaxes(a, axis1: int, axis2: int):
  """Interchange two axes of ``a``.

  Args:
    a: array-like input.
    axis1: the first axis (negative counts from the end).
    axis2: the second axis.

  Returns:
    An array with the dtype of ``a`` and axes ``axis1`` and ``axis2`` exchanged.

  Examples:
    >>> jnp.swapaxes(jnp.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    >>> jnp.swapaxes(jnp.array([[1, 2]]), 0, 1)
    Array([[1],
           [2]], dtype=int32)
  """
  try:
    a = _array("swapaxes", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "swapaxes", a, axis1, axis2)
  perm = list(range(a.ndim))
  i, j = _axis(axis1, a.ndim, "swapaxes"), _axis(axis2, a.ndim, "swapaxes")
  perm[i], perm[j] = perm[j], perm[i]
  return lax.transpose(a, perm)


def moveaxis(a, source, destination):
  """Move axes of ``a`` to new positions; the other axes keep their order.

  Args:
    a: array-like input.
    source: the axis or tuple of axes to move.
    destination: the position or tuple of positions (as many as ``source``) they move to.

  Returns:
    An array with the dtype of ``a`` and its axes rearranged.

  Examples:
    >>> jnp.moveaxis(jnp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    >>> jnp.moveaxis(jnp.zeros((2, 3, 4)), (0, 1), (2, 0)).shape
    (3, 4, 2)
  """
  try:
    a = _array("moveaxis", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "moveaxis", a, source, destination)
  source = _axes(_static_ints(source, "moveaxis", "source"), a.ndim, "moveaxis")
  destination = _axes(_static_ints(destination, "moveaxis", "destination"), a.ndim,
                      "moveaxis")
  if len(source) != len(destination):
    raise ValueError("moveaxis: source and destination arguments must have the same number "
                     f"of elements, got {source} and {destination}")
  perm = [i for i in range(a.ndim) if i not in source]
  for dest, src in sorted(zip(destination, source)):
    perm.insert(dest, src)
  return lax.transpose(a, perm)


def expand_dims(a, axis):
  """Insert size-1 axes into ``a``.

  Args:
    a: array-like input.
    axis: an int or tuple of ints: the positions of the new axes in the result (negative
      counts from the end of the result).

  Returns:
    An array of ``a.ndim + len(axis)`` dimensions with the data and dtype of ``a``.

  Examples:
    >>> x = jnp.array([1, 2, 3])
    >>> jnp.expand_dims(x, 0)
    Array([[1, 2, 3]], dtype=int32)
    >>> jnp.expand_dims(x, (0, -1)).shape
    (1, 3, 1)
  """
  try:
    a = _array("expand_dims", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "expand_dims", a, axis)
  axis = _static_ints(axis, "expand_dims", "axis")
  ndim_out = a.ndim + len(axis)
  return lax.expand_dims(a, _axes(axis, ndim_out, "expand_dims"))


def squeeze(a, axis=None):
  """Remove size-1 axes of ``a``.

  Args:
    a: array-like input.
    axis: None to remove every size-1 axis, or an int or tuple of ints naming axes that must
      have size 1 (otherwise ``ValueError``).

  Returns:
    An array with the data and dtype of ``a`` and those axes removed.

  Examples:
    >>> x = jnp.array([[[1], [2]]])
    >>> jnp.squeeze(x)
    Array([1, 2], dtype=int32)
    >>> jnp.squeeze(x, axis=2).shape
    (1, 2)
  """
  try:
    a = _array("squeeze", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "squeeze", a, axis)
  if axis is None:
    dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
  else:
    dims = _axes(_static_ints(axis, "squeeze", "axis"), a.ndim, "squeeze")
    bad = [i for i in dims if a.shape[i] != 1]
    if bad:
      raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not "
                       f"equal to one (axis {bad[0]} of shape {a.shape})")
  return lax.squeeze(a, dims)


def broadcast_shapes(*shapes) -> tuple:
  """The shape that arrays of the given shapes broadcast to.

  Args:
    *shapes: shapes as tuples of ints (a bare int counts as a 1-d shape). Incompatible
      shapes raise ``ValueError``.

  Returns:
    The broadcast shape, a tuple of ints.

  Examples:
    >>> jnp.broadcast_shapes((3, 1), (4,))
    (3, 4)
    >>> jnp.broadcast_shapes((2, 1, 5), (3, 1), 5)
    (2, 3, 5)
  """
  shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
  try:
    return util.broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_to(array, shape, *, out_sharding=None):
  """Broadcast ``array`` to ``shape`` by NumPy's rules.

  Args:
    array: array-like input.
    shape: the target shape, an int or a tuple of ints; it must be compatible with
      ``array``'s shape (otherwise ``ValueError``).
    out_sharding: sharding for the result (None: the default placement).

  Returns:
    An array of shape ``shape`` and the dtype of ``array``.

  Examples:
    >>> jnp.broadcast_to(jnp.array([1, 2, 3]), (2, 3))
    Array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    >>> jnp.broadcast_to(1.0, 2)
    Array([1., 1.], dtype=float32, weak_type=True)
  """
  try:
    a = _array("broadcast_to", array)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "broadcast_to", array, shape, out_sharding=out_sharding)
  shape = _static_ints(shape, "broadcast_to", "shape")
  if any(d < 0 for d in shape):
    raise ValueError(f"broadcast_to: negative dimensions in shape {shape}")
  if a.ndim > len(shape):
    raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={a.shape} "
                     f"shape={shape} (broadcast_to)")
  try:
    out = util.broadcast_to_shape(a, shape)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: {a.shape} and requested shape "
                     f"{shape} (broadcast_to)") from None
  return lax.apply_out_sharding(out, out_sharding, "broadcast_to")


def broadcast_arrays(*args):
  """Broadcast the arguments against each other.

  Args:
    *args: array-likes with mutually broadcastable shapes.

  Returns:
    A list of arrays, one per argument, each of the common broadcast shape and of its
    argument's dtype.

  Examples:
    >>> a, b = jnp.broadcast_arrays(jnp.array([1, 2]), jnp.array([[10], [20]]))
    >>> a
    Array([[1, 2],
           [1, 2]], dtype=int32)
    >>> b
    Array([[10, 10],
           [20, 20]], dtype=int32)
  """
  try:
    util.check_arraylike("broadcast_arrays", *args)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "broadcast_arrays", *args)
  arrays = [asarray(x) for x in args]
  shape = broadcast_shapes(*[x.shape for x in arrays])
  return [util.broadcast_to_shape(x, shape) for x in arrays]


# --- joining -----------------------------------------------------------------------------

def _sequence(name: str, arrays) -> list:
  if isinstance(arrays, (Array, Tracer, np.ndarray)):
    # An array is a sequence of its rows.
    if _ndim_of(arrays) == 0:
      raise ValueError(f"{name}: need a sequence of arrays, got a 0-d array")
    arrays = [lax.index_in_dim(arrays, i, 0, keepdims=False) for i in range(arrays.shape[0])]
  arrays = list(arrays)
  if not arrays:
    raise ValueError(f"{name}: need at least one array to join")
  util.check_arraylike(name, *arrays)
  return [asarray(x) for x in arrays]


def _promote(arrays, dtype, name: str) -> list:
  if dtype is not None:
    dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
    return [lax.convert_element_type(x, dtype) for x in arrays]
  return util.promote_dtypes(*arrays)


def concatenate(arrays, axis: int | None = 0, dtype=None):
  """Join arrays along an existing axis.

  The inputs' dtypes are promoted together (JAX's promotion rules) unless ``dtype`` is given.

  Args:
    arrays: a sequence of array-likes whose shapes agree except along ``axis``.
    axis: the axis to join along; None flattens every input first.
    dtype: optional dtype of the result.

  Returns:
    An array whose ``axis`` length is the sum of the inputs' lengths along it.

  Examples:
    >>> jnp.concatenate([jnp.array([1, 2]), jnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    >>> jnp.concatenate([jnp.ones((1, 2)), jnp.zeros((1, 2))], axis=1)
    Array([[1., 1., 0., 0.]], dtype=float32)
  """
  if isinstance(arrays, (Array, Tracer, np.ndarray)) and isinstance(arrays.dtype, np.dtype):
    return _concatenate_rows(arrays, axis, dtype)
  try:
    arrays = _sequence("concatenate", arrays)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "concatenate", arrays, axis, dtype)
  if axis is None:
    arrays = [ravel(x) for x in arrays]
    axis = 0
  if any(x.ndim == 0 for x in arrays):
    raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
  ndim = arrays[0].ndim
  if any(x.ndim != ndim for x in arrays):
    raise ValueError(f"concatenate: all input arrays must have the same number of "
                     f"dimensions, got shapes {[x.shape for x in arrays]}")
  axis = _axis(axis, ndim, "concatenate")
  rest = {x.shape[:axis] + x.shape[axis + 1:] for x in arrays}
  if len(rest) != 1:
    raise ValueError(f"concatenate: all input array dimensions except for the concatenation "
                     f"axis {axis} must match, got shapes {[x.shape for x in arrays]}")
  arrays = _promote(arrays, dtype, "concatenate")
  if len(arrays) == 1:
    return arrays[0]
  return lax.concatenate(arrays, axis)


def _concatenate_rows(arr, axis, dtype):
  # One array's rows joined: a single reshape (after moving the row axis next to ``axis``),
  # the jaxpr JAX writes, rather than one slice per row.
  arr = asarray(arr) if dtype is None else asarray(arr, dtype=dtype)
  shape = arr.shape
  if arr.ndim == 0 or shape[0] == 0:
    raise ValueError("concatenate: need at least one array to concatenate")
  if axis is None:
    return lax.reshape(arr, (math.prod(shape),))
  if arr.ndim == 1:
    raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
  axis = _axis(axis, arr.ndim - 1, "concatenate")
  new_shape = shape[1:axis + 1] + (shape[0] * shape[axis + 1],) + shape[axis + 2:]
  order = (*builtins.range(1, axis + 1), 0, *builtins.range(axis + 1, arr.ndim))
  return lax.reshape(arr, new_shape, order)


def concat(arrays, /, *, axis: int | None = 0):
  """Join arrays along an existing axis (the array API's ``concatenate``).

  A function of its own (not an alias), named ``concat`` as in JAX, so that code keying on
  ``__name__`` tells it from ``concatenate``.

  Args:
    arrays: a sequence of arrays whose shapes agree except along ``axis``.
    axis: keyword-only; the axis to join along (None flattens every input first).

  Returns:
    An array of the promoted dtype whose ``axis`` length is the sum of the inputs' lengths.

  Examples:
    >>> jnp.concat([jnp.array([[1, 2]]), jnp.array([[3, 4]])], axis=0)
    Array([[1, 2],
           [3, 4]], dtype=int32)
  """
  return concatenate(arrays, axis=axis)


def stack(arrays, axis: int = 0, out=None, dtype=None):
  """Join same-shaped arrays along a new axis.

  Args:
    arrays: a sequence (or an array, whose leading axis is iterated) of same-shaped array-likes.
    axis: the position of the new axis in the result.
    out: unsupported; must be None.
    dtype: optional dtype of the result (default: the inputs' promoted dtype).

  Returns:
    An array of ``ndim + 1`` dimensions, with ``len(arrays)`` entries along ``axis``.

  Examples:
    >>> x, y = jnp.array([1, 2]), jnp.array([3, 4])
    >>> jnp.stack([x, y])
    Array([[1, 2],
           [3, 4]], dtype=int32)
    >>> jnp.stack([x, y], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
  if isinstance(arrays, (Array, Tracer, np.ndarray)) and isinstance(arrays.dtype, np.dtype):
    # an array's rows joined again, written as JAX writes it
    axis = _axis(axis, arrays.ndim, "stack")
    return concatenate(expand_dims(arrays, axis + 1), axis=axis, dtype=dtype)
  try:
    arrays = _sequence("stack", arrays)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "stack", arrays, axis, out, dtype)
  shapes = {x.shape for x in arrays}
  if len(shapes) != 1:
    raise ValueError(f"stack: all input arrays must have the same shape, got "
                     f"{[x.shape for x in arrays]}")
  axis = _axis(axis, arrays[0].ndim + 1, "stack")
  # one ``stack`` equation, as in JAX's jaxprs
  return lax.stack(_promote(arrays, dtype, "stack"), axis)


def hstack(tup, dtype=None):
  """Stack arrays horizontally: along axis 1, or axis 0 for 1-d inputs.

  Args:
    tup: a sequence of array-likes (scalars count as 1-d).
    dtype: optional dtype of the result (default: the inputs' promoted dtype).

  Returns:
    The joined array.

  Examples:
    >>> jnp.hstack([jnp.array([1, 2]), jnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    >>> jnp.hstack([jnp.zeros((2, 1)), jnp.ones((2, 2))]).shape
    (2, 3)
  """
  try:
    arrays = atleast_1d(*_sequence("hstack", tup))
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "hstack", tup, dtype)
  arrays = arrays if isinstance(arrays, list) else [arrays]
  return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
  """Stack arrays vertically (along axis 0) after making them at least 2-d.

  Args:
    tup: a sequence of array-likes; 1-d inputs of length ``n`` become rows of shape ``(1, n)``.
    dtype: optional dtype of the result (default: the inputs' promoted dtype).

  Returns:
    The joined array, at least 2-d.

  Examples:
    >>> jnp.vstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 2],
           [3, 4]], dtype=int32)
  """
  try:
    arrays = atleast_2d(*_sequence("vstack", tup))
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "vstack", tup, dtype)
  arrays = arrays if isinstance(arrays, list) else [arrays]
  return concatenate(arrays, axis=0, dtype=dtype)


def dstack(tup, dtype=None):
  """Stack arrays depth-wise (along axis 2) after making them at least 3-d.

  Args:
    tup: a sequence of array-likes; ``(n,)`` becomes ``(1, n, 1)`` and ``(m, n)`` becomes
      ``(m, n, 1)``.
    dtype: optional dtype of the result (default: the inputs' promoted dtype).

  Returns:
    The joined array, at least 3-d.

  Examples:
    >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[[1, 3],
            [2, 4]]], dtype=int32)
  """
  arrays = atleast_3d(*_sequence("dstack", tup))
  arrays = arrays if isinstance(arrays, list) else [arrays]
  return concatenate(arrays, axis=2, dtype=dtype)


def column_stack(tup):
  """Stack 1-d arrays as the columns of a 2-d array.

  Args:
    tup: a sequence of array-likes; 1-d inputs become columns, 2-d inputs are joined as they
      are along axis 1.

  Returns:
    A 2-d array of the inputs' promoted dtype.

  Examples:
    >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 3],
           [2, 4]], dtype=int32)
  """
  arrays = [lax.reshape(x, (x.size, 1)) if x.ndim < 2 else x
            for x in _sequence("column_stack", tup)]
  return concatenate(arrays, axis=1)


def append(arr, values, axis: int | None = None):
  """Append ``values`` to the end of ``arr``.

  Args:
    arr: array-like input.
    values: array-like values to append.
    axis: the axis to append along (then ``values`` must match ``arr``'s shape elsewhere);
      None flattens both first.

  Returns:
    A new array of the promoted dtype of ``arr`` and ``values``.

  Examples:
    >>> jnp.append(jnp.array([1, 2]), 3)
    Array([1, 2, 3], dtype=int32)
    >>> jnp.append(jnp.array([[1, 2]]), jnp.array([[3, 4]]), axis=0)
    Array([[1, 2],
           [3, 4]], dtype=int32)
  """
  try:
    util.check_arraylike("append", arr, values)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "append", arr, values, axis)
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], axis=0)
  return concatenate([arr, values], axis=axis)


# --- splitting ---------------------------------------------------------------------------

def _split(name: str, ary, indices_or_sections, axis, even: bool) -> list:
  a = _array(name, ary)
  axis = _axis(axis, a.ndim, name)
  size = a.shape[axis]
  if not isinstance(indices_or_sections, (list, tuple)) and np.ndim(indices_or_sections) == 0:
    sections = _static_sections(indices_or_sections, name)
    if sections <= 0:
      raise ValueError(f"{name}: number of sections must be larger than 0, got {sections}")
    if even and size % sections:
      raise ValueError(f"{name}: array split does not result in an equal division "
                       f"({size} elements into {sections} sections)")
    small, extra = divmod(size, sections)
    sizes = [small + 1] * extra + [small] * (sections - extra)
    bounds = np.cumsum([0] + sizes).tolist()
  else:
    points = _static_ints(indices_or_sections, name, "indices_or_sections")
    bounds = [0, *points, size]
  out = []
  for start, stop in zip(bounds[:-1], bounds[1:]):
    # Python slicing semantics: negative indices wrap, out-of-range ones clamp.
    if not is_symbolic_dim(size):
      start, stop, _ = builtins.slice(start, stop).indices(size)
    out.append(lax.slice_in_dim(a, start, builtins.max(start, stop), 1, axis))
  return out


def _static_sections(x, name: str) -> int:
  """A number of sections: any concrete real scalar, truncated to an int (as JAX's int())."""
  if isinstance(x, Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(
          x, f"in jax.numpy.{name} argument 1: the number of sections fixes the result's "
          "shapes, so it must be concrete; pass it as a static argument")
    x = value
  try:
    return int(x)
  except (TypeError, ValueError):
    raise TypeError(f"{name}: indices_or_sections must be an integer or a sequence of "
                    f"integers, got {x!r}") from None


def split(ary, indices_or_sections, axis: int = 0):
  """Split an array into equal sections or at given indices.

  Args:
    ary: array-like input.
    indices_or_sections: an int ``N`` (the number of equal sections; it must divide the
      axis length, otherwise ``ValueError``) or a sequence of concrete indices to split at.
    axis: the axis to split along.

  Returns:
    A list of arrays (views of consecutive pieces of ``ary``), with ``ary``'s dtype.

  Examples:
    >>> jnp.split(jnp.arange(6), 3)
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
    >>> jnp.split(jnp.arange(5), [1, 3])
    [Array([0], dtype=int32), Array([1, 2], dtype=int32), Array([3, 4], dtype=int32)]

  See also: :func:`hlox.numpy.array_split`.
  """
  try:
    return _split("split", ary, indices_or_sections, axis, even=True)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis: int = 0):
  """Split an array into sections, which need not be of equal size.

  With an int ``N`` of sections for an axis of length ``L``, the first ``L % N`` sections get
  one element more than the others.

  Args:
    ary: array-like input.
    indices_or_sections: an int number of sections or a sequence of concrete indices.
    axis: the axis to split along.

  Returns:
    A list of arrays with ``ary``'s dtype.

  Examples:
    >>> jnp.array_split(jnp.arange(5), 3)
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4], dtype=int32)]
  """
  return _split("array_split", ary, indices_or_sections, axis, even=False)


def hsplit(ary, indices_or_sections):
  """Split an array horizontally: along axis 1 (axis 0 for 1-d arrays).

  Args:
    ary: array-like input of at least one dimension.
    indices_or_sections: an int number of equal sections or a sequence of indices.

  Returns:
    A list of arrays with ``ary``'s dtype.

  Examples:
    >>> jnp.hsplit(jnp.arange(4).reshape(2, 2), 2)
    [Array([[0],
           [2]], dtype=int32), Array([[1],
           [3]], dtype=int32)]
  """
  a = _array("hsplit", ary)
  if a.ndim == 0:  # IndexError as JAX's: a scalar has no axis to split along
    raise IndexError("hsplit: a 0-d array has no axis to split along")
  return split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
  """Split an array vertically (along axis 0).

  Args:
    ary: array-like input of at least one dimension.
    indices_or_sections: an int number of equal sections or a sequence of indices.

  Returns:
    A list of arrays with ``ary``'s dtype.

  Examples:
    >>> jnp.vsplit(jnp.arange(4).reshape(2, 2), 2)
    [Array([[0, 1]], dtype=int32), Array([[2, 3]], dtype=int32)]
  """
  a = _array("vsplit", ary)
  if a.ndim == 0:  # JAX splits 1-d arrays too (NumPy refuses them); a scalar has no axis 0
    raise IndexError("vsplit: a 0-d array has no axis 0 to split along")
  return split(a, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
  """Split an array depth-wise (along axis 2).

  Args:
    ary: array-like input of at least three dimensions (fewer raise ``IndexError``).
    indices_or_sections: an int number of equal sections or a sequence of indices.

  Returns:
    A list of arrays with ``ary``'s dtype.

  Examples:
    >>> [p.shape for p in jnp.dsplit(jnp.zeros((2, 2, 4)), 2)]
    [(2, 2, 2), (2, 2, 2)]
  """
  a = _array("dsplit", ary)
  if a.ndim < 3:  # IndexError as JAX's: there is no axis 2
    raise IndexError(f"dsplit: a {a.ndim}-d array has no axis 2 to split along")
  return split(a, indices_or_sections, axis=2)


# --- repetition --------------------------------------------------------------------------

def tile(A, reps):
  """Build an array by repeating ``A`` ``reps`` times along each axis.

  If ``reps`` is longer than ``A.ndim``, ``A`` gets leading size-1 axes; if shorter, ``reps``
  gets leading ones (NumPy's rule).

  Args:
    A: array-like input.
    reps: an int or a sequence of concrete non-negative ints.

  Returns:
    An array with ``A``'s dtype and ``max(A.ndim, len(reps))`` dimensions.

  Examples:
    >>> jnp.tile(jnp.array([1, 2]), 2)
    Array([1, 2, 1, 2], dtype=int32)
    >>> jnp.tile(jnp.array([1, 2]), (2, 1))
    Array([[1, 2],
           [1, 2]], dtype=int32)
  """
  try:
    a = _array("tile", A)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "tile", A, reps)
  reps = _static_ints(reps, "tile", "reps")
  if any(r < 0 for r in reps):
    raise ValueError(f"tile: reps must be non-negative, got {reps}")
  ndim = builtins.max(len(reps), a.ndim)
  reps = (1,) * (ndim - len(reps)) + reps
  shape = (1,) * (ndim - a.ndim) + a.shape
  # Broadcast to (r0, d0, r1, d1, ...) then merge each (r, d) pair.
  wide = [v for pair in zip(reps, shape) for v in pair]
  out = lax.broadcast_in_dim(lax.reshape(a, shape), wide, tuple(range(1, 2 * ndim, 2)))
  return lax.reshape(out, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None,
           out_sharding=None):
  """Repeat each element of an array.

  ``repeats`` must be concrete, unless ``total_repeat_length`` is given: then the counts may
  be traced and the result (whose length is fixed statically) is cut or padded with the last
  element to that length.

  Args:
    a: array-like input.
    repeats: an int, or a sequence with one non-negative count per element along ``axis``.
    axis: the axis to repeat along; None flattens ``a`` first.
    total_repeat_length: keyword-only static length of the result along ``axis``.
    out_sharding: sharding for the result (None: the default placement).

  Returns:
    An array with ``a``'s dtype, longer along ``axis`` (or 1-d when ``axis`` is None).

  Examples:
    >>> jnp.repeat(jnp.array([1, 2]), 2)
    Array([1, 1, 2, 2], dtype=int32)
    >>> jnp.repeat(jnp.array([[1, 2]]), jnp.array([1, 3]), axis=1)
    Array([[1, 2, 2, 2]], dtype=int32)
    >>> jnp.repeat(jnp.array([1, 2]), jnp.array([1, 3]), total_repeat_length=5)
    Array([1, 2, 2, 2, 2], dtype=int32)
  """
  try:
    a = _array("repeat", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "repeat",
                    a, repeats, axis, total_repeat_length=total_repeat_length, out_sharding=out_sharding)
  if axis is None:
    a, axis = ravel(a), 0
  axis = _axis(axis, a.ndim, "repeat")
  n = a.shape[axis]
  if total_repeat_length is not None and _is_traced(repeats):
    # Counts known only at run time: the static total fixes the result's length.
    out = _repeat_traced(a, repeats, axis, operator.index(total_repeat_length))
    return lax.apply_out_sharding(out, out_sharding, "repeat")
  counts = _static_ints(repeats, "repeat", "repeats")
  if any(c < 0 for c in counts):
    raise ValueError(f"repeat: repeats may not contain negative values, got {counts}")
  if len(counts) == 1 and is_symbolic_dim(n):  # a symbolic axis: every element alike
    out = _repeat_uniform(a, counts[0], axis)
    return lax.apply_out_sharding(out, out_sharding, "repeat")
  if len(counts) == 1:
    counts = counts * n
  elif len(counts) != n:
    raise ValueError(f"repeat: {len(counts)} repeats given for an axis of size {n}")
  if counts and len(set(counts)) == 1:
    out = _repeat_uniform(a, counts[0], axis)
  else:
    pieces = [lax.broadcast_in_dim(lax.slice_in_dim(a, i, i + 1, 1, axis),
                                   a.shape[:axis] + (c,) + a.shape[axis + 1:],
                                   tuple(range(a.ndim)))
              for i, c in enumerate(counts) if c]
    out = lax.concatenate(pieces, axis) if pieces else \
        lax.slice_in_dim(a, 0, 0, 1, axis)
  if total_repeat_length is not None:
    out = _fit_length(out, operator.index(total_repeat_length), axis)
  return lax.apply_out_sharding(out, out_sharding, "repeat")


def _is_traced(x) -> bool:
  if isinstance(x, (list, tuple)):
    return any(_is_traced(v) for v in x)
  return isinstance(x, Tracer) and x.to_concrete_value() is None


def _repeat_traced(a, repeats, axis, total):
  """``repeat`` with run-time counts and a static ``total`` length: element ``i`` starts at
  the running sum of the counts before it; positions past the counts' sum repeat the last
  element started (JAX's rule)."""
  n = a.shape[axis]
  idx_dtype = util.index_dtype()
  reps = asarray(repeats)
  if reps.ndim > 1:
    raise ValueError(f"repeat: repeats must be a scalar or 1-D, got shape {reps.shape}")
  reps = util.broadcast_to_shape(lax.convert_element_type(reps, idx_dtype), (n,))
  out_shape = a.shape[:axis] + (total,) + a.shape[axis + 1:]
  if total == 0 or n == 0:
    return lax.full(out_shape, 0, a.dtype) if total == 0 else \
        _fit_length(lax.slice_in_dim(a, 0, 0, 1, axis), total, axis)
  # A 1 where each element but the first starts; their running sum is the source index.
  starts = lax.slice_in_dim(lax.cumsum(reps, 0), 0, n - 1, 1, 0)
  marks = lax.scatter_add(
      lax.full((total,), 0, idx_dtype), lax.expand_dims(starts, (1,)),
      lax.full((n - 1,), 1, idx_dtype),
      ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                              scatter_dims_to_operand_dims=(0,)),
      mode=GatherScatterMode.FILL_OR_DROP)
  source = lax.cumsum(marks, 0)
  offset_dims = tuple(d for d in range(a.ndim) if d != axis)
  dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                 start_index_map=(axis,))
  slice_sizes = a.shape[:axis] + (1,) + a.shape[axis + 1:]
  # The offset dimensions skip ``axis``, so the gathered index dimension lands there.
  return lax.gather(a, lax.expand_dims(source, (1,)), dnums, slice_sizes,
                    mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def _repeat_uniform(a, count, axis):
  # Broadcast a new axis of size ``count`` after ``axis``, then merge the two.
  shape = a.shape[:axis + 1] + (count,) + a.shape[axis + 1:]
  dims = tuple(i for i in range(a.ndim + 1) if i != axis + 1)
  out = lax.broadcast_in_dim(a, shape, dims)
  return lax.reshape(out, a.shape[:axis] + (a.shape[axis] * count,) + a.shape[axis + 1:])


def _fit_length(x, length, axis):
  """Truncate to ``length`` along ``axis``, or extend by repeating the last element (JAX's
  ``total_repeat_length`` semantics)."""
  have = x.shape[axis]
  if have >= length:
    return lax.slice_in_dim(x, 0, length, 1, axis)
  if have == 0:
    raise ValueError("repeat: total_repeat_length exceeds an empty result")
  last = lax.slice_in_dim(x, have - 1, have, 1, axis)
  tail = lax.broadcast_in_dim(last, x.shape[:axis] + (length - have,) + x.shape[axis + 1:],
                              tuple(range(x.ndim)))
  return lax.concatenate([x, tail], axis)


# --- flips, rotations, rolls -------------------------------------------------------------

def flip(m, axis=None):
  """Reverse the order of elements along the given axes.

  Args:
    m: array-like input.
    axis: an int or tuple of ints, or None to reverse every axis.

  Returns:
    An array of the shape and dtype of ``m``.

  Examples:
    >>> x = jnp.array([[1, 2], [3, 4]])
    >>> jnp.flip(x)
    Array([[4, 3],
           [2, 1]], dtype=int32)
    >>> jnp.flip(x, axis=1)
    Array([[2, 1],
           [4, 3]], dtype=int32)
  """
  try:
    m = _array("flip", m)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "flip", m, axis)
  if axis is None:
    return lax.rev(m, tuple(range(m.ndim)))
  return lax.rev(m, _axes(_static_ints(axis, "flip", "axis"), m.ndim, "flip"))


def fliplr(m):
  """Reverse the order of columns (axis 1).

  Args:
    m: array-like input of at least two dimensions (fewer raises ``ValueError``).

  Returns:
    An array of the shape and dtype of ``m``.

  Examples:
    >>> jnp.fliplr(jnp.array([[1, 2], [3, 4]]))
    Array([[2, 1],
           [4, 3]], dtype=int32)
  """
  m = _array("fliplr", m)
  if m.ndim < 2:
    raise ValueError(f"fliplr: input must be at least 2-d, got shape {m.shape}")
  return lax.rev(m, (1,))


def flipud(m):
  """Reverse the order of rows (axis 0).

  Args:
    m: array-like input of at least one dimension (a scalar raises ``ValueError``).

  Returns:
    An array of the shape and dtype of ``m``.

  Examples:
    >>> jnp.flipud(jnp.array([[1, 2], [3, 4]]))
    Array([[3, 4],
           [1, 2]], dtype=int32)
  """
  m = _array("flipud", m)
  if m.ndim < 1:
    raise ValueError("flipud: input must be at least 1-d")
  return lax.rev(m, (0,))


def rot90(m, k: int = 1, axes=(0, 1)):
  """Rotate an array by 90 degrees in the plane of two axes.

  The rotation goes from the first axis of ``axes`` towards the second, ``k`` times.

  Args:
    m: array-like input of at least two dimensions.
    k: the number of quarter turns (any int; negative turns the other way).
    axes: two distinct axes spanning the plane of rotation.

  Returns:
    The rotated array, with ``m``'s dtype.

  Examples:
    >>> jnp.rot90(jnp.array([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    >>> jnp.rot90(jnp.array([[1, 2], [3, 4]]), k=2)
    Array([[4, 3],
           [2, 1]], dtype=int32)
  """
  m = _array("rot90", m)
  k = _static_int(k, "rot90", "k") % 4
  axes = _static_ints(axes, "rot90", "axes")
  if len(axes) != 2:
    raise ValueError(f"rot90: axes must have length 2, got {axes}")
  if m.ndim < 2:
    raise ValueError("rot90 requires its first argument to have ndim at least two, but got "
                     f"first argument of shape {m.shape}, which has ndim {m.ndim}")
  ax0, ax1 = _axis(axes[0], m.ndim, "rot90"), _axis(axes[1], m.ndim, "rot90")
  if ax0 == ax1:
    raise ValueError(f"rot90: axes must be different, got {axes}")
  if k == 0:
    return m
  if k == 2:
    return lax.rev(m, (ax0, ax1))
  perm = list(range(m.ndim))
  perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
  if k == 1:
    return lax.transpose(lax.rev(m, (ax1,)), perm)
  return lax.rev(lax.transpose(m, perm), (ax1,))


def roll(a, shift, axis=None):
  """Roll elements along axes, those shifted past the end coming back at the start.

  Args:
    a: array-like input.
    shift: an int or tuple of ints (one per axis in ``axis``); it may be traced.
    axis: an int or tuple of ints; None flattens ``a``, rolls it and restores its shape.

  Returns:
    An array of the shape and dtype of ``a``.

  Examples:
    >>> jnp.roll(jnp.array([1, 2, 3, 4]), 1)
    Array([4, 1, 2, 3], dtype=int32)
    >>> jnp.roll(jnp.array([[1, 2], [3, 4]]), -1, axis=1)
    Array([[2, 1],
           [4, 3]], dtype=int32)
  """
  try:
    a = _array("roll", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "roll", a, shift, axis)
  shift = util.from_jax_array(shift)
  if axis is None:
    return lax.reshape(roll(ravel(a), shift, 0), a.shape)
  axes = tuple(_axis(ax, a.ndim, "roll") for ax in _static_ints(axis, "roll", "axis"))
  if sharding_types.active[0]:
    split = sharding_types.split_of(a)
    if split is not None and any(split.entries[ax] is not None for ax in axes):
      raise ShardingTypeError(
          "`a` cannot be sharded on the axis being rolled over. Got arr type="
          f"{sharding_types.short(a.aval)}[{sharding_types.dims_string(a.shape, split)}] "
          f"and axis={axes}")
  if isinstance(shift, Tracer) and shift.to_concrete_value() is None:
    return _roll_traced(a, shift, axes)
  shifts = _static_ints(shift, "roll", "shift")
  try:
    pairs = np.broadcast(np.asarray(shifts), np.asarray(axes))
  except ValueError:
    raise ValueError(f"roll: shift {shifts} and axis {axes} must have matching lengths") \
        from None
  total = {}
  for s, ax in pairs:
    total[int(ax)] = total.get(int(ax), 0) + int(s)
  out = a
  for ax, s in total.items():
    n = a.shape[ax]
    if n == 0 or s % n == 0:
      continue
    s %= n
    out = lax.concatenate([lax.slice_in_dim(out, n - s, n, 1, ax),
                           lax.slice_in_dim(out, 0, n - s, 1, ax)], ax)
  return out


def _roll_traced(a, shift, axes):
  if not dtypes.is_int(shift.dtype) or shift.ndim > 1:
    raise TypeError(f"roll: shift must be an integer scalar or 1-d array, got "
                    f"{shift.aval.str_short()}")
  count = 1 if shift.ndim == 0 else shift.shape[0]
  if count != len(axes) and 1 not in (count, len(axes)):
    raise ValueError(f"roll: {count} shifts given for {len(axes)} axes")
  shift = lax.convert_element_type(shift, dtypes.int32)
  out = a
  for i, ax in enumerate(axes * count if len(axes) == 1 else axes):
    s = shift if shift.ndim == 0 else lax.index_in_dim(shift, i if count > 1 else 0,
                                                      keepdims=False)
    n = a.shape[ax]
    if n == 0:
      continue
    # The window of length n starting at n - (s mod n) in [a, a] is the rolled array.
    s = lax.rem(s, np.int32(n))
    s = lax.select(lax.lt(s, np.int32(0)), lax.add(s, np.int32(n)), s)
    doubled = lax.concatenate([out, out], ax)
    out = lax.dynamic_slice_in_dim(doubled, lax.sub(np.int32(n), s), n, ax)
  return out


# --- rank helpers ------------------------------------------------------------------------

def atleast_1d(*arys):
  """Convert the inputs to arrays of at least one dimension.

  Args:
    *arys: array-likes; scalars become shape ``(1,)``, others are unchanged.

  Returns:
    One array for one argument, a list of arrays for several.

  Examples:
    >>> jnp.atleast_1d(3)
    Array([3], dtype=int32, weak_type=True)
    >>> jnp.atleast_1d(1.0, jnp.array([2.0, 3.0]))
    [Array([1.], dtype=float32, weak_type=True), Array([2., 3.], dtype=float32)]
  """
  try:
    util.check_arraylike("atleast_1d", *arys)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "atleast_1d", *arys)
  out = [lax.reshape(x, (1,)) if x.ndim == 0 else x for x in map(asarray, arys)]
  return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
  """Convert the inputs to arrays of at least two dimensions.

  Args:
    *arys: array-likes; a scalar becomes shape ``(1, 1)`` and shape ``(n,)`` becomes
      ``(1, n)``.

  Returns:
    One array for one argument, a list of arrays for several.

  Examples:
    >>> jnp.atleast_2d(jnp.array([1, 2]))
    Array([[1, 2]], dtype=int32)
  """
  try:
    util.check_arraylike("atleast_2d", *arys)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "atleast_2d", *arys)
  out = [lax.reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x
         for x in map(asarray, arys)]
  return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
  """Convert the inputs to arrays of at least three dimensions.

  Args:
    *arys: array-likes; a scalar becomes ``(1, 1, 1)``, ``(n,)`` becomes ``(1, n, 1)`` and
      ``(m, n)`` becomes ``(m, n, 1)``.

  Returns:
    One array for one argument, a list of arrays for several.

  Examples:
    >>> jnp.atleast_3d(jnp.array([1, 2])).shape
    (1, 2, 1)
    >>> jnp.atleast_3d(jnp.ones((2, 3))).shape
    (2, 3, 1)
  """
  try:
    util.check_arraylike("atleast_3d", *arys)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "atleast_3d", *arys)
  out = []
  for x in map(asarray, arys):
    if x.ndim == 0:
      x = lax.reshape(x, (1, 1, 1))
    elif x.ndim == 1:
      x = lax.reshape(x, (1, x.shape[0], 1))
    elif x.ndim == 2:
      x = lax.reshape(x, x.shape + (1,))
    out.append(x)
  return out[0] if len(out) == 1 else out


def _warn_not_arraylike(name, a):
  # JAX deprecates lists and tuples here (2025-2): they still work, with a warning.
  if not util.is_arraylike(a) and not hasattr(a, "__jax_array__"):
    warnings.warn(f"{name} requires ndarray or scalar arguments, got {type(a)} at position 0. "
                  "In a future JAX release this will be an error.", DeprecationWarning,
                  stacklevel=3)


def shape(a) -> tuple:
  """The shape of ``a``.

  Args:
    a: an array, array-like (list, scalar) or any object with a ``shape`` attribute.

  Returns:
    A tuple of ints.

  Examples:
    >>> jnp.shape(jnp.zeros((2, 3)))
    (2, 3)
    >>> jnp.shape([[1, 2, 3]])
    (1, 3)
    >>> jnp.shape(1.0)
    ()
  """
  if hasattr(a, "aval"):
    return get_aval(a).shape
  if hasattr(a, "shape"):
    return tuple(a.shape)
  _warn_not_arraylike("shape", a)
  if hasattr(a, "__jax_array__"):
    a = a.__jax_array__()
  return np.shape(a)


def ndim(a) -> int:
  """The number of dimensions of ``a``.

  Args:
    a: an array, array-like (list, scalar) or any object with an ``ndim`` attribute.

  Returns:
    An int.

  Examples:
    >>> jnp.ndim(jnp.zeros((2, 3)))
    2
    >>> jnp.ndim(5)
    0
  """
  if hasattr(a, "ndim"):
    return a.ndim
  _warn_not_arraylike("ndim", a)
  if hasattr(a, "__jax_array__"):
    a = a.__jax_array__()
  return np.ndim(a)


def size(a, axis=None) -> int:
  """The number of elements of ``a``, in total or along some axes.

  Args:
    a: an array or array-like.
    axis: None for all elements, or an int or tuple of ints: the product of those axes'
      lengths.

  Returns:
    An int.

  Examples:
    >>> jnp.size(jnp.zeros((2, 3)))
    6
    >>> jnp.size(jnp.zeros((2, 3)), axis=1)
    3
  """
  _warn_not_arraylike("size", a)
  if not hasattr(a, "shape"):
    a = util.from_jax_array(a)
  if axis is None and hasattr(a, "size") and not isinstance(a, (list, tuple)):
    return int(a.size)
  s = shape(a) if hasattr(a, "shape") else np.shape(a)
  if axis is None:
    return math.prod(s)
  axes = (axis,) if _is_int_axis(axis) else tuple(axis)
  axes = tuple(_axis(ax, len(s), "size") for ax in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"repeated axis in jnp.size: {axis}")
  return math.prod(s[ax] for ax in axes)


def _is_int_axis(axis) -> bool:
  return isinstance(axis, (int, np.integer)) or (hasattr(axis, "__index__") and
                                                 np.ndim(axis) == 0)


def astype(x, dtype, /, *, copy: bool = False, device=None):
  """Convert ``x`` to ``dtype``.

  Complex to real keeps the real part and warns with JAX's ``DeprecationWarning`` (it will
  become an error: take ``real`` or ``imag`` first); complex to bool tests for non-zero.
  Floating-point to integer conversion rounds towards zero.

  Args:
    x: an array or array-like.
    dtype: the target dtype (64-bit types are narrowed to 32 bits unless x64 is enabled).
    copy: keyword-only; True returns a new buffer even when the dtype is unchanged.
    device: keyword-only; optional device or sharding to place the result on.

  Returns:
    An array of ``x``'s shape and dtype ``dtype``.

  Examples:
    >>> jnp.astype(jnp.array([1.7, -1.7]), jnp.int32)
    Array([ 1, -1], dtype=int32)
    >>> jnp.astype(jnp.array([0, 2]), bool)
    Array([False,  True], dtype=bool)
  """
  util.check_arraylike("astype", x)
  x = asarray(x)
  dtype = dtypes.default_float_dtype() if dtype is None else \
      dtypes.check_user_dtype(dtype, "astype")
  if dtypes.is_complex(get_aval(x).dtype):
    if dtype == np.bool_:
      x = lax.ne(x, lax.full_like(x, 0))
    elif not dtypes.is_complex(dtype):
      warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. Please "
                    "first use jnp.real or jnp.imag to take the real/imaginary component of "
                    "your input.", DeprecationWarning, stacklevel=2)
  out = lax.convert_element_type(x, dtype)
  if copy and out is x:
    out = lax.copy_p.bind(out)
  return _put_on(out, device) if device is not None else out


def insert(arr, obj, values, axis: int | None = None):
  """Insert values before the given indices along an axis.

  Args:
    arr: array-like input.
    obj: an int, slice or sequence of ints: the index or indices (into the original array)
      before which to insert.
    values: array-like values, broadcast to the inserted region and cast to ``arr``'s dtype.
    axis: the axis to insert along; None flattens ``arr`` first.

  Returns:
    A new array with ``arr``'s dtype, longer along ``axis``.

  Examples:
    >>> jnp.insert(jnp.array([1, 2, 3]), 1, 9)
    Array([1, 9, 2, 3], dtype=int32)
    >>> jnp.insert(jnp.array([1, 2, 3]), [0, 3], jnp.array([7, 8]))
    Array([7, 1, 2, 3, 8], dtype=int32)
  """
  a = _array("insert", arr)
  obj = util.from_jax_array(obj)
  if axis is None:
    a, axis = ravel(a), 0
  axis = _axis(axis, a.ndim, "insert")
  n = a.shape[axis]
  values = lax.convert_element_type(asarray(values), a.dtype)
  if isinstance(obj, builtins.slice):
    positions = list(range(*obj.indices(n)))
    scalar = False
  elif _is_traced(obj) and np.ndim(obj) == 0:
    return _insert_traced(a, obj, values, axis)
  else:
    scalar = _is_scalar_int(obj)
    positions = list(_static_ints(obj, "insert", "obj"))
  for p in positions:
    if not -n <= p <= n:
      raise IndexError(f"insert: index {p} is out of bounds for axis {axis} with size {n}")
  positions = [p + n if p < 0 else p for p in positions]
  if scalar:
    # A scalar index inserts all of ``values`` there (its first axis lies along ``axis``).
    v = values
    if v.ndim < a.ndim:
      v = lax.reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
    v = moveaxis(v, 0, axis) if v.ndim == a.ndim and v.ndim > 1 else v
    count = v.shape[axis] if v.ndim == a.ndim else 1
    block_shape = a.shape[:axis] + (count,) + a.shape[axis + 1:]
    blocks = [(positions[0], broadcast_to(v, block_shape))]
  else:
    # One value per index, in index order (stable for repeated indices).
    order = np.argsort(positions, kind="stable")
    count = len(positions)
    v_shape = a.shape[:axis] + (count,) + a.shape[axis + 1:]
    v = values
    if v.ndim == 1 and v.shape[0] == count and a.ndim > 1:
      v = lax.reshape(v, (1,) * axis + (count,) + (1,) * (a.ndim - axis - 1))
    v = broadcast_to(v, v_shape)
    blocks = [(positions[i], lax.slice_in_dim(v, int(i), int(i) + 1, 1, axis)) for i in order]
  pieces, prev = [], 0
  for p, block in blocks:
    pieces.append(lax.slice_in_dim(a, prev, p, 1, axis))
    pieces.append(block)
    prev = p
  pieces.append(lax.slice_in_dim(a, prev, n, 1, axis))
  pieces = [p for p in pieces if p.shape[axis]] or [pieces[0]]
  return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _insert_traced(a, obj, values, axis):
  """``insert`` at one run-time index: the result's length does not depend on it. ``values``
  is appended, then one gather puts every element in its place."""
  if not dtypes.is_int(get_aval(obj).dtype):
    raise IndexError(f"insert: index must be an integer, got {get_aval(obj).str_short()}")
  n = a.shape[axis]
  v = values
  if v.ndim < a.ndim:
    v = lax.reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
  v = moveaxis(v, 0, axis) if v.ndim == a.ndim and v.ndim > 1 else v
  count = v.shape[axis] if v.ndim == a.ndim else 1
  v = broadcast_to(v, a.shape[:axis] + (count,) + a.shape[axis + 1:])
  joined = lax.concatenate([a, v], axis)
  idx_dtype = util.index_dtype()
  p = lax.convert_element_type(obj, idx_dtype)
  p = lax.clamp(np.asarray(0, idx_dtype), lax.select(lax.lt(p, np.asarray(0, idx_dtype)),
                                                    lax.add(p, np.asarray(n, idx_dtype)), p),
                np.asarray(n, idx_dtype))
  j = lax.iota(idx_dtype, n + count)
  before = lax.lt(j, p)
  inside = lax.lt(j, lax.add(p, np.asarray(count, idx_dtype)))
  source = lax.select(before, j, lax.select(
      inside, lax.add(lax.sub(j, p), np.asarray(n, idx_dtype)),
      lax.sub(j, np.asarray(count, idx_dtype))))
  dnums = GatherDimensionNumbers(offset_dims=tuple(d for d in range(a.ndim) if d != axis),
                                 collapsed_slice_dims=(axis,), start_index_map=(axis,))
  return lax.gather(joined, lax.expand_dims(source, (1,)), dnums,
                    a.shape[:axis] + (1,) + a.shape[axis + 1:],
                    mode=GatherScatterMode.PROMISE_IN_BOUNDS)


# --- pad ---------------------------------------------------------------------------------

def _symbolic_pad_widths(pad_width, ndim: int):
  """NumPy's forms of ``pad_width`` with symbolic sizes among the widths (shape
  polymorphism) as one (before, after) pair per axis; None if it is not such a form."""
  def is_width(w):
    return is_symbolic_dim(w) or isinstance(w, (int, np.integer))
  if is_width(pad_width):
    pairs = [(pad_width, pad_width)] * ndim
  elif isinstance(pad_width, (tuple, list)) and len(pad_width) == 2 and all(
      map(is_width, pad_width)):
    pairs = [tuple(pad_width)] * ndim
  elif isinstance(pad_width, (tuple, list)) and len(pad_width) in (1, ndim) and all(
      isinstance(p, (tuple, list)) and len(p) in (1, 2) and all(map(is_width, p))
      for p in pad_width):
    pairs = [(p[0], p[-1]) for p in pad_width] * (ndim if len(pad_width) == 1 else 1)
  else:
    return None
  if not any(is_symbolic_dim(w) for p in pairs for w in p):
    return None
  return [tuple(w if is_symbolic_dim(w) else int(w) for w in p) for p in pairs]


def _pad_widths(pad_width, ndim: int, name: str = "pad") -> list:
  if isinstance(pad_width, Tracer):
    _static_ints(pad_width, name, "pad_width")  # raises with a helpful message
  try:
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu" and widths.size:
      raise TypeError
    widths = np.broadcast_to(widths.astype(np.int64), (ndim, 2))
  except (TypeError, ValueError):
    symbolic = _symbolic_pad_widths(pad_width, ndim)
    if symbolic is not None:
      return symbolic
    raise ValueError(f"{name}: pad_width {pad_width!r} must be an int, a (before, after) "
                     f"pair or one such pair per axis ({ndim} axes), of integers") from None
  if (widths < 0).any():
    raise ValueError(f"{name}: pad_width must be non-negative, got {widths.tolist()}")
  return [(int(lo), int(hi)) for lo, hi in widths]


def _pad_edge_symbolic(x, lo, hi, axis):
  shape = x.shape
  n = shape[axis]

  def edge(i, width):
    piece = lax.slice_in_dim(x, i, i + 1, axis=axis)
    return lax.broadcast_in_dim(piece, shape[:axis] + (width,) + shape[axis + 1:],
                                tuple(range(x.ndim)))
  return lax.concatenate([edge(0, lo), x, edge(n - 1, hi)], axis)


def pad(array, pad_width, mode: str = "constant", **kwargs):
  """Pad an array.

  Args:
    array: array-like input.
    pad_width: the widths to add before and after each axis, in NumPy's forms: an int, a
      ``(before, after)`` pair, or one pair per axis.
    mode: 'constant' (the default), 'empty', 'edge', 'wrap', 'reflect', 'symmetric',
      'maximum', 'minimum', 'mean', 'median', 'linear_ramp', or a function called as NumPy
      calls it (each 1-d vector, the widths, the axis and ``kwargs``). Others raise
      ``NotImplementedError``.
    **kwargs: the options of ``mode``: ``constant_values`` ('constant'), ``stat_length``
      ('maximum', 'minimum', 'mean', 'median'), ``end_values`` ('linear_ramp'),
      ``reflect_type`` ('reflect', 'symmetric'; only 'even' is supported). Others raise
      ``ValueError``.

  Returns:
    The padded array, with ``array``'s dtype.

  Examples:
    >>> jnp.pad(jnp.array([1, 2, 3]), 1)
    Array([0, 1, 2, 3, 0], dtype=int32)
    >>> jnp.pad(jnp.array([1, 2, 3]), (2, 1), mode='edge')
    Array([1, 1, 1, 2, 3, 3], dtype=int32)
    >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode='reflect')
    Array([3, 2, 1, 2, 3, 2, 1], dtype=int32)
  """
  a = _array("pad", array)
  widths = _pad_widths(pad_width, a.ndim)
  if callable(mode):
    return _pad_with_function(a, widths, mode, kwargs)
  allowed = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
             "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
             "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
             "median": {"stat_length"}, "linear_ramp": {"end_values"}}
  if mode not in allowed:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad. Use one of "
                              f"{sorted(allowed)}")
  unexpected = set(kwargs) - allowed[mode]
  if unexpected:
    raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                     f"{sorted(unexpected)}")
  if mode in ("constant", "empty"):
    return _pad_constant(a, widths, kwargs.get("constant_values", 0))
  if mode in ("maximum", "minimum", "mean", "median"):
    return _pad_stats(a, widths, mode, kwargs.get("stat_length"))
  if mode == "linear_ramp":
    return _pad_linear_ramp(a, widths, kwargs.get("end_values", 0))
  if kwargs.get("reflect_type", "even") != "even":
    raise NotImplementedError("pad: only reflect_type='even' is supported")
  out = a
  for axis, (lo, hi) in enumerate(widths):
    if lo == 0 and hi == 0:
      continue
    n = a.shape[axis]
    if n == 0:
      raise ValueError(f"pad: can't extend empty axis {axis} using modes other than "
                       "'constant' or 'empty'")
    if mode == "edge" and any(map(is_symbolic_dim, (lo, hi, n))):
      # Symbolic sizes (shape polymorphism): the first and last elements, broadcast.
      out = _pad_edge_symbolic(out, lo, hi, axis)
      continue
    # NumPy computes which source element each output position copies; it is a few
    # contiguous (or reversed, or repeated) runs, each one slice.
    index = np.pad(np.arange(n), (lo, hi), mode=mode)
    out = _gather_runs(out, index, axis)
  return out


def _pad_pairs(name, values, ndim):
  """``values`` (scalar, pair or per-axis pairs of static numbers) as ``ndim`` pairs."""
  arr = np.asarray(values)
  try:
    return np.broadcast_to(arr, (ndim, 2)).tolist()
  except ValueError:
    raise ValueError(f"pad: {name} {values} must broadcast to ({ndim}, 2)") from None


def _pad_stats(a, widths, mode, stat_length):
  """Pad each side with a statistic (max, min, mean, median) of the ``stat_length`` entries
  nearest to it, axis by axis as NumPy does."""
  lengths = (_pad_pairs("stat_length", stat_length, a.ndim) if stat_length is not None
             else [[None, None]] * a.ndim)
  stat = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean,
          "median": reductions.median}[mode]
  out = a
  for axis, ((lo, hi), (len_lo, len_hi)) in enumerate(zip(widths, lengths)):
    if lo == 0 and hi == 0:
      continue
    n = out.shape[axis]
    if n == 0:
      raise ValueError(f"pad: can't extend empty axis {axis} using modes other than "
                       "'constant' or 'empty'")
    pieces = []
    for width, length, side in ((lo, len_lo, 0), (hi, len_hi, 1)):
      if not width:
        continue
      k = n if length is None else builtins.max(1, builtins.min(int(length), n))
      start = 0 if side == 0 else n - k
      region = lax.slice_in_dim(out, start, start + k, axis=axis)
      v = stat(region, axis=axis, keepdims=True)
      if dtypes.is_int(out.dtype) and mode in ("mean", "median"):
        v = lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN)
      v = lax.convert_element_type(v, out.dtype)
      shape = out.shape[:axis] + (width,) + out.shape[axis + 1:]
      pieces.append((side, lax.broadcast_in_dim(v, shape, tuple(range(out.ndim)))))
    parts = [p for sd, p in pieces if sd == 0] + [out] + [p for sd, p in pieces if sd == 1]
    out = lax.concatenate(parts, axis)
  return out


def _pad_linear_ramp(a, widths, end_values):
  """Pad each side with a linear ramp from ``end_values`` to the edge value (exclusive),
  built with ``linspace`` in the array's dtype (so integer ramps round as JAX's do)."""
  ends = _pad_pairs("end_values", end_values, a.ndim)
  out = a
  for axis, ((lo, hi), (end_lo, end_hi)) in enumerate(zip(widths, ends)):
    if lo == 0 and hi == 0:
      continue
    n = out.shape[axis]
    if n == 0:
      raise ValueError(f"pad: can't extend empty axis {axis} using modes other than "
                       "'constant' or 'empty'")
    pieces = []
    for width, end, side in ((lo, end_lo, 0), (hi, end_hi, 1)):
      if not width:
        continue
      edge = lax.squeeze(lax.slice_in_dim(out, 0 if side == 0 else n - 1,
                                          1 if side == 0 else n, axis=axis), (axis,))
      ramp = linspace(end, edge, width, endpoint=False, dtype=out.dtype, axis=axis)
      if side == 1:
        ramp = lax.rev(ramp, (axis,))
      pieces.append((side, ramp))
    parts = [p for sd, p in pieces if sd == 0] + [out] + [p for sd, p in pieces if sd == 1]
    out = lax.concatenate(parts, axis)
  return out


def _pad_with_function(a, widths, func, kwargs):
  """NumPy's callable ``mode``: ``func(vector, (lo, hi), axis, kwargs)`` returns each 1-d
  slice along each axis of the zero-padded array with its pads filled (hlox arrays are
  immutable, so it returns the vector instead of writing into it). It is vmapped over the
  slices, so it is traced once per axis."""
  from hlox.api import vmap
  out = lax.pad(a, lax.full((), 0, a.dtype), [(lo, hi, 0) for lo, hi in widths])
  for axis, (lo, hi) in enumerate(widths):
    moved = moveaxis(out, axis, -1)
    rows = lax.reshape(moved, (math.prod(moved.shape[:-1]), moved.shape[-1]))
    def fill(vector, axis=axis, lo=lo, hi=hi):
      result = func(vector, (lo, hi), axis, kwargs)
      if result is None:
        raise TypeError("pad: a callable mode must return the padded vector (hlox arrays are "
                        "immutable: use vector.at[...].set(...))")
      return asarray(result)
    filled = vmap(fill)(rows) if rows.shape[0] else rows
    if get_aval(filled).shape != get_aval(rows).shape:
      raise ValueError(f"pad: the callable mode returned shape {get_aval(filled).shape[1:]} "
                       f"for vectors of shape {rows.shape[1:]}")
    out = moveaxis(lax.reshape(lax.convert_element_type(filled, a.dtype), moved.shape), -1,
                   axis)
  return out


def _pad_constant(a, widths, constant_values):
  if _ndim_of(constant_values) == 0:
    # The fill takes the array's type, weak type included (a weak array pads to a weak one).
    value = lax.convert_element_type(asarray(constant_values), a.dtype,
                                     weak_type=get_aval(a).weak_type)
    return lax.pad(a, value, [(lo, hi, 0) for lo, hi in widths])
  values = asarray(constant_values)
  if values.ndim > 2 or not all(d in (1, n) for d, n in
                                zip(values.shape, (a.ndim, 2)[2 - values.ndim:])):
    raise ValueError(f"pad: constant_values of shape {values.shape} must broadcast to "
                     f"({a.ndim}, 2)")
  values = broadcast_to(lax.convert_element_type(values, a.dtype), (a.ndim, 2))
  out = a
  # Axis by axis, so that later axes' values fill the corners (as NumPy does).
  for axis, (lo, hi) in enumerate(widths):
    pieces = []
    for width, side in ((lo, 0), (hi, 1)):
      if width:
        v = lax.reshape(lax.slice(values, (axis, side), (axis + 1, side + 1)), ())
        pieces.append((side, lax.broadcast_in_dim(
            v, out.shape[:axis] + (width,) + out.shape[axis + 1:], ())))
    if pieces:
      parts = [p for s, p in pieces if s == 0] + [out] + [p for s, p in pieces if s == 1]
      out = lax.concatenate(parts, axis)
  return out


def _ndim_of(x) -> int:
  return x.ndim if hasattr(x, "aval") else np.ndim(x)


def _gather_runs(x, index, axis):
  """``take(x, index, axis)`` for a static ``index`` made of runs with step 1, -1 or 0."""
  pieces = []
  i = 0
  while i < len(index):
    j = i + 1
    step = int(index[j] - index[i]) if j < len(index) else 1
    if step not in (-1, 0, 1):
      step = 1
    while j < len(index) and index[j] - index[j - 1] == step:
      j += 1
    first, last, count = int(index[i]), int(index[j - 1]), j - i
    if step == 1:
      piece = lax.slice_in_dim(x, first, last + 1, 1, axis)
    elif step == -1:
      piece = lax.rev(lax.slice_in_dim(x, last, first + 1, 1, axis), (axis,))
    else:
      one = lax.slice_in_dim(x, first, first + 1, 1, axis)
      piece = lax.broadcast_in_dim(one, x.shape[:axis] + (count,) + x.shape[axis + 1:],
                                   tuple(range(x.ndim)))
    pieces.append(piece)
    i = j
  return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def rollaxis(a, axis, start=0):
  """Move ``axis`` so that it comes before position ``start`` (NumPy's older ``moveaxis``).

  Args:
    a: array-like input.
    axis: the axis to move.
    start: the axis is moved to just before this position (measured before the move).

  Returns:
    An array with ``a``'s data and dtype, its axes rearranged.

  Examples:
    >>> jnp.rollaxis(jnp.zeros((2, 3, 4)), 2).shape
    (4, 2, 3)
    >>> jnp.rollaxis(jnp.zeros((2, 3, 4)), 0, 2).shape
    (3, 2, 4)

  See also: :func:`hlox.numpy.moveaxis`.
  """
  util.check_arraylike("rollaxis", a)
  a = asarray(a)
  nd = get_aval(a).ndim
  axis = util.canonicalize_axis_tuple(axis, nd, "rollaxis")[0]
  start = operator.index(start)
  if not -nd <= start <= nd:
    raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
  if start < 0:
    start += nd
  if start > axis:
    start -= 1
  return moveaxis(a, axis, start)


def unstack(x, /, *, axis=0):
  """Split ``x`` into its slices along an axis.

  Args:
    x: an array.
    axis: keyword-only; the axis to take slices along (it is removed from each slice).

  Returns:
    A tuple of ``x.shape[axis]`` arrays with ``x``'s dtype.

  Examples:
    >>> jnp.unstack(jnp.array([[1, 2], [3, 4]]))
    (Array([1, 2], dtype=int32), Array([3, 4], dtype=int32))
  """
  util.check_arraylike("unstack", x)
  x = asarray(x)
  if get_aval(x).ndim == 0:
    raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                     "passed.")
  return lax.unstack(x, axis)


def resize(a, new_shape):
  """An array of shape ``new_shape`` filled by repeating (or cutting) ``ravel(a)``.

  Unlike ``reshape``, the number of elements may change.

  Args:
    a: array-like input.
    new_shape: an int or tuple of non-negative ints.

  Returns:
    An array of shape ``new_shape`` and ``a``'s dtype.

  Examples:
    >>> jnp.resize(jnp.array([1, 2, 3]), (2, 4))
    Array([[1, 2, 3, 1],
           [2, 3, 1, 2]], dtype=int32)
  """
  util.check_arraylike("resize", a)
  new_shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else tuple(
      operator.index(d) for d in new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  a = ravel(a)
  size = math.prod(new_shape)
  n = get_aval(a).shape[0]
  if n == 0 or size == 0:
    return creation.zeros(new_shape, get_aval(a).dtype)
  reps = -(-size // n)
  return reshape(tile(a, reps)[:size], new_shape)


def trim_zeros(filt, trim="fb", axis=None):
  """Remove leading and/or trailing zeros.

  Along each axis in ``axis``, the slices at the front and back that are entirely zero are cut
  off (NumPy 2.2's n-dimensional rule). ``filt`` must be concrete, since the result's shape
  depends on its values.

  Args:
    filt: an array-like input.
    trim: 'f' to trim the front, 'b' the back, 'fb' (the default) both.
    axis: an int, a tuple of ints, or None for all axes.

  Returns:
    A slice of ``filt``, with its dtype.

  Examples:
    >>> jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0]))
    Array([1, 2], dtype=int32)
    >>> jnp.trim_zeros(jnp.array([0, 1, 0]), trim='f')
    Array([1, 0], dtype=int32)
  """
  util.check_arraylike("trim_zeros", filt)
  value = util.concrete_value("trim_zeros", filt)
  if value.ndim == 0:  # no axis to trim (NumPy >= 2.2 returns it as is)
    return asarray(filt)
  axes = tuple(range(value.ndim)) if axis is None else \
      tuple(_axis(ax, value.ndim, "trim_zeros") for ax in
            ((axis,) if isinstance(axis, (int, np.integer)) else axis))
  nz = np.nonzero(value)
  index = [builtins.slice(None)] * value.ndim
  for ax in axes:
    if nz[ax].size == 0:  # all zeros: NumPy empties the trimmed axes
      start, end = 0, 0
    else:
      start = int(nz[ax].min()) if "f" in trim.lower() else 0
      end = int(nz[ax].max()) + 1 if "b" in trim.lower() else value.shape[ax]
    index[ax] = builtins.slice(start, end)
  return asarray(filt)[tuple(index)]


def block(arrays):
  """Assemble an array from nested lists of blocks.

  The innermost lists are joined along the last axis, the next level along the one before it,
  and so on; all blocks are made to have the same number of dimensions first.

  Args:
    arrays: nested lists of array-likes, all lists at a level of the same depth.

  Returns:
    The assembled array, of the blocks' promoted dtype.

  Examples:
    >>> a = jnp.eye(2, dtype=int)
    >>> jnp.block([[a, jnp.zeros((2, 1), int)], [jnp.ones((1, 2), int), 5 * jnp.ones((1, 1), int)]])
    Array([[1, 0, 0],
           [0, 1, 0],
           [1, 1, 5]], dtype=int32)
  """
  def depth(x):
    return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)
  if isinstance(arrays, tuple):
    raise TypeError("jax.numpy.block does not allow tuples, got " + str(arrays))
  d = depth(arrays)
  def max_ndim(x):
    if isinstance(x, list):
      return builtins.max((max_ndim(y) for y in x), default=0)
    return get_aval(asarray(x)).ndim
  nd = builtins.max(max_ndim(arrays), d)
  def rec(x, level):
    if isinstance(x, list):
      if not x:
        raise ValueError("Lists cannot be empty")
      parts = [rec(y, level + 1) for y in x]
      return concatenate(parts, axis=-(d - level))
    x = asarray(x)
    return reshape(x, (1,) * (nd - get_aval(x).ndim) + get_aval(x).shape)
  return rec(arrays, 0)


# Functions made of several primitives run eagerly as one cached executable each (as JAX's
# jit-wrapped ones); single-primitive ones (reshape, transpose, ...) already dispatch once.
util.fuse_functions(globals(), ["stack", "hstack", "vstack", "dstack", "column_stack", "tile",
                                "flip", "fliplr", "flipud", "rot90", "append", "atleast_1d",
                                "atleast_2d", "atleast_3d", "resize", "block", "rollaxis"],
                    {"tile": ("reps",), "rot90": ("k", "axes"), "resize": ("new_shape",),
                     "rollaxis": ("axis", "start")},
                    default_static=("axis", "out", "dtype"),
                    # Those that JAX jits without ``inline=True``: a nested ``jit`` equation
                    # (named as JAX's function) when traced.
                    staged={"flip": "_flip", "fliplr": "_flip", "flipud": "_flip",
                            "rot90": "rot90", "append": "append", "atleast_1d": "atleast_1d",
                            "atleast_2d": "atleast_2d", "atleast_3d": "atleast_3d",
                            "resize": "resize", "block": "block", "rollaxis": "rollaxis"})
