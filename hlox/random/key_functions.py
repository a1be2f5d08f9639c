"""``hlox.numpy`` and ``hlox.lax`` functions that move elements around, on typed key arrays
(as JAX allows): each acts on the keys' data (``uint32[*shape, *key_shape]``), whose trailing
key-data axes stay whole, and gives keys back. Axes given by the caller refer to the key
array's own (leading) axes; negative ones and "all axes" (None) are resolved against its
rank here, so they never reach into the key data. Each takes the arguments of the function
it stands for. Registered with ``core.extended_functions``, to which those functions hand
the calls they refused.
"""
from __future__ import annotations

import inspect

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core.extended_functions import register
from hlox.random.prng import PRNGKeyArray

__all__ = []


def _keys(name, arrays):
  """The key arrays ``arrays`` (a sequence), all of one implementation."""
  arrays = list(arrays)
  if not arrays or not all(isinstance(a, PRNGKeyArray) for a in arrays):
    raise TypeError(f"{name}: typed key arrays can only be combined with key arrays of the "
                    "same implementation")
  impl = arrays[0]._impl
  if any(a._impl is not impl for a in arrays):
    raise TypeError(f"{name}: key arrays of different implementations "
                    f"({', '.join(sorted({str(a.dtype) for a in arrays}))}) cannot be combined")
  return arrays, impl


def _axis(name, axis, ndim):
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
  return axis % ndim


def _axes(name, axis, ndim):
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (tuple, list)):
    return tuple(_axis(name, a, ndim) for a in axis)
  return (_axis(name, axis, ndim),)


def _on_data(k, fn, *args, **kwargs):
  return PRNGKeyArray(fn(k._base, *args, **kwargs), k._impl)


def _tail(k):
  return tuple(k._impl.key_shape)


def _flat(k):
  return k.reshape(-1)


# --- hlox.numpy ---------------------------------------------------------------------------

def _np_broadcast_to(array, shape, *, out_sharding=None):
  shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
  return _on_data(array, jnp.broadcast_to, shape + _tail(array))


def _np_concatenate(arrays, axis=0, dtype=None):
  keys, impl = _keys("concatenate", arrays)
  if axis is None:
    keys, axis = [_flat(k) for k in keys], 0
  axis = _axis("concatenate", axis, max(keys[0].ndim, 1))
  return PRNGKeyArray(jnp.concatenate([k._base for k in keys], axis=axis), impl)


def _np_stack(arrays, axis=0, out=None, dtype=None):
  keys, impl = _keys("stack", arrays)
  axis = _axis("stack", axis, keys[0].ndim + 1)
  return PRNGKeyArray(jnp.stack([k._base for k in keys], axis=axis), impl)


def _np_hstack(tup, dtype=None):
  keys, _ = _keys("hstack", tup)
  keys = [k.reshape(1) if k.ndim == 0 else k for k in keys]
  return _np_concatenate(keys, axis=0 if keys[0].ndim == 1 else 1)


def _np_vstack(tup, dtype=None):
  keys, _ = _keys("vstack", tup)
  return _np_concatenate([_np_atleast(2, k) for k in keys], axis=0)


def _np_expand_dims(a, axis):
  ndim = a.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1)
  return _on_data(a, lax.expand_dims, _axes("expand_dims", axis, ndim))


def _np_squeeze(a, axis=None):
  return a.squeeze(axis)


def _np_tile(A, reps):
  reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
  reps = (1,) * (A.ndim - len(reps)) + reps
  base = A._base.reshape((1,) * (len(reps) - A.ndim) + A._base.shape)
  return PRNGKeyArray(jnp.tile(base, reps + (1,) * len(_tail(A))), A._impl)


def _np_where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  if x is None or y is None:
    raise TypeError("where: a key array cannot be the condition")
  (x, y), impl = _keys("where", (x, y))
  condition = jnp.asarray(condition)
  shape = np.broadcast_shapes(condition.shape, x.shape, y.shape)
  pick = jnp.broadcast_to(condition, shape)[(...,) + (None,) * len(_tail(x))]
  bx = jnp.broadcast_to(x._base, shape + _tail(x))
  by = jnp.broadcast_to(y._base, shape + _tail(y))
  return PRNGKeyArray(jnp.where(pick, bx, by), impl)


def _np_take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
             indices_are_sorted=False, fill_value=None):
  if axis is None:
    a, axis = _flat(a), 0
  axis = _axis("take", axis, a.ndim)
  return _on_data(a, jnp.take, indices, axis=axis, mode=mode, unique_indices=unique_indices,
                  indices_are_sorted=indices_are_sorted)


def _np_transpose(a, axes=None):
  axes = tuple(reversed(range(a.ndim))) if axes is None else _axes("transpose", axes, a.ndim)
  return a.transpose(axes)


def _np_flip(m, axis=None):
  return _on_data(m, jnp.flip, _axes("flip", axis, m.ndim))


def _np_roll(a, shift, axis=None):
  if axis is None:
    return _np_roll(_flat(a), shift, 0).reshape(a.shape)
  return _on_data(a, jnp.roll, shift, _axes("roll", axis, a.ndim)
                  if isinstance(axis, (tuple, list)) else _axis("roll", axis, a.ndim))


def _np_repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  if axis is None:
    a, axis = _flat(a), 0
  return _on_data(a, jnp.repeat, repeats, axis=_axis("repeat", axis, a.ndim),
                  total_repeat_length=total_repeat_length)


def _np_swapaxes(a, axis1, axis2):
  return a.swapaxes(axis1, axis2)


def _np_moveaxis(a, source, destination):
  source = _axes("moveaxis", source, a.ndim)
  destination = _axes("moveaxis", destination, a.ndim)
  return _on_data(a, jnp.moveaxis, source, destination)


def _np_ravel(a, order="C", *, out_sharding=None):
  return _flat(a)


def _np_atleast(n, k):
  """NumPy's ``atleast_{n}d`` shapes: 0-d -> (1,)*n; (N,) -> (1, N) or (1, N, 1);
  (M, N) -> (M, N, 1)."""
  if k.ndim >= n:
    return k
  if k.ndim == 0:
    return k.reshape((1,) * n)
  if k.ndim == 1:
    return k.reshape((1,) + k.shape if n == 2 else (1,) + k.shape + (1,))
  return k.reshape(k.shape + (1,))


def _atleast(n):
  def impl(*arys):
    out = [_np_atleast(n, a) for a in arys]
    return out[0] if len(out) == 1 else out
  return impl


def _np_copy(a, order=None):
  return a.copy()


def _np_split(ary, indices_or_sections, axis=0):
  axis = _axis("split", axis, ary.ndim)
  return [PRNGKeyArray(b, ary._impl) for b in jnp.split(ary._base, indices_or_sections, axis)]


def _np_append(arr, values, axis=None):
  if axis is None:
    return _np_concatenate([_flat(arr), _flat(values)], axis=0)
  return _np_concatenate([arr, values], axis=axis)


def _shape(shape):
  return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def _filled(shape, fill_value, impl):
  """Keys of ``shape``: each a copy of key ``fill_value``, or all of whose data words are
  ``fill_value`` (a number: JAX's ``zeros``/``ones``/``full`` with a key dtype)."""
  if isinstance(fill_value, PRNGKeyArray):
    if fill_value._impl is not impl:
      raise TypeError(f"full: a key of dtype {fill_value.dtype} cannot fill keys of another "
                      "implementation")
    return _np_broadcast_to(fill_value, shape)
  return PRNGKeyArray(jnp.full(shape + tuple(impl.key_shape), fill_value, np.uint32), impl)


def _impl_of(dtype, like=None):
  impl = getattr(dtype, "_impl", None)
  if impl is None:
    if like is None or dtype is not None:
      raise TypeError(f"cannot make keys of dtype {dtype}")
    impl = like._impl
  return impl


def _creation(fill):
  def impl(shape, dtype=None, **kwargs):
    return _filled(_shape(shape), fill, _impl_of(dtype))
  return impl


def _np_full(shape, fill_value, dtype=None, **kwargs):
  if dtype is None:
    (fill_value,), impl = _keys("full", (fill_value,))
  else:
    impl = _impl_of(dtype)
  return _filled(_shape(shape), fill_value, impl)


def _like(fill):
  def impl(a, dtype=None, shape=None, **kwargs):
    if not isinstance(a, PRNGKeyArray):
      raise TypeError(f"cannot make keys like a value of type {type(a).__name__}")
    return _filled(a.shape if shape is None else _shape(shape), fill,
                   _impl_of(dtype, like=a) if dtype is not None else a._impl)
  return impl


def _np_full_like(a, fill_value, dtype=None, shape=None, **kwargs):
  impl = a._impl if dtype is None else _impl_of(dtype)
  return _filled(a.shape if shape is None else _shape(shape), fill_value, impl)


def _np_reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
  return a.reshape(shape if shape is not None else newshape)


def _np_broadcast_arrays(*args):
  keys, _ = _keys("broadcast_arrays", args)
  shape = np.broadcast_shapes(*(k.shape for k in keys))
  return [_np_broadcast_to(k, shape) for k in keys]


def _np_array_equal(a1, a2, equal_nan=False):
  if not (isinstance(a1, PRNGKeyArray) and isinstance(a2, PRNGKeyArray)):
    return jnp.asarray(False)
  if a1.shape != a2.shape or a1._impl is not a2._impl:
    return jnp.asarray(False)
  return jnp.array_equal(a1._base, a2._base)


def _np_compare(name, all_equal):
  def impl(x, y, /):
    (x, y), _ = _keys(name, (x, y))
    x, y = _np_broadcast_arrays(x, y)
    # Two keys are equal when every word of their data is.
    same = jnp.all(x._base == y._base, axis=tuple(range(-len(_tail(x)), 0)))
    return same if all_equal else jnp.logical_not(same)
  return impl


_NUMPY = {
    "broadcast_to": _np_broadcast_to, "concatenate": _np_concatenate, "stack": _np_stack,
    "hstack": _np_hstack, "vstack": _np_vstack, "expand_dims": _np_expand_dims,
    "squeeze": _np_squeeze, "tile": _np_tile, "where": _np_where, "take": _np_take, "transpose": _np_transpose,
    "permute_dims": _np_transpose, "flip": _np_flip, "roll": _np_roll, "repeat": _np_repeat,
    "swapaxes": _np_swapaxes, "moveaxis": _np_moveaxis, "ravel": _np_ravel,
    "atleast_1d": _atleast(1), "atleast_2d": _atleast(2), "atleast_3d": _atleast(3),
    "copy": _np_copy, "split": _np_split, "append": _np_append,
    "zeros_like": _like(0), "empty_like": _like(0), "ones_like": _like(1),
    "full_like": _np_full_like, "zeros": _creation(0), "empty": _creation(0),
    "ones": _creation(1), "full": _np_full, "reshape": _np_reshape,
    "broadcast_arrays": _np_broadcast_arrays,
    "array_equal": _np_array_equal,
    "equal": _np_compare("equal", True), "not_equal": _np_compare("not_equal", False),
}


# --- hlox.lax -----------------------------------------------------------------------------

def _lax_broadcast(operand, sizes, *args, **kwargs):
  return _on_data(operand, lax.broadcast, tuple(sizes))


def _lax_broadcast_in_dim(operand, shape, broadcast_dimensions, *args, **kwargs):
  shape, n = tuple(shape), len(_tail(operand))
  return _on_data(operand, lax.broadcast_in_dim, shape + _tail(operand),
                  tuple(broadcast_dimensions) + tuple(range(len(shape), len(shape) + n)))


def _lax_reshape(operand, new_sizes, dimensions=None, *args, **kwargs):
  if dimensions is not None:
    operand = operand.transpose(tuple(dimensions))
  return operand.reshape(tuple(new_sizes))


def _lax_transpose(operand, permutation):
  return operand.transpose(tuple(permutation))


def _lax_squeeze(array, dimensions):
  dims = (dimensions,) if isinstance(dimensions, int) else tuple(dimensions)
  for d in dims:
    if not -array.ndim <= d < array.ndim:
      raise ValueError(f"squeeze: axis {d} is out of bounds for array of dimension "
                       f"{array.ndim}")
  return _on_data(array, lax.squeeze, tuple(d % array.ndim for d in dims))


def _lax_concatenate(operands, dimension):
  first = next(o for o in operands if isinstance(o, PRNGKeyArray))
  if not all(isinstance(o, PRNGKeyArray) and o._impl is first._impl for o in operands):
    raise TypeError(f"concatenate: keys of dtype {first.dtype} can only be joined with keys "
                    "of that dtype")
  if not -first.ndim <= dimension < max(first.ndim, 1):
    raise ValueError(f"concatenate: dimension {dimension} is out of bounds for keys of "
                     f"dimension {first.ndim}")
  return PRNGKeyArray(lax.concatenate([o._base for o in operands], dimension % first.ndim),
                      first._impl)


def _lax_dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  n = len(_tail(operand))
  return _on_data(operand, lax.dynamic_slice, (*start_indices, *(0,) * n),
                  (*slice_sizes, *_tail(operand)),
                  allow_negative_indices=allow_negative_indices)


def _lax_dynamic_update_slice(operand, update, start_indices, *,
                              allow_negative_indices=True):
  if not isinstance(update, PRNGKeyArray) or update._impl is not operand._impl:
    raise TypeError(f"dynamic_update_slice: keys of dtype {operand.dtype} can only be "
                    "updated with keys of that dtype")
  n = len(_tail(operand))
  return _on_data(operand, lax.dynamic_update_slice, update._base,
                  (*start_indices, *(0,) * n), allow_negative_indices=allow_negative_indices)


def _lax_expand_dims(array, dimensions):
  return _np_expand_dims(array, tuple(dimensions))


def _lax_slice(operand, start_indices, limit_indices, strides=None):
  n = len(_tail(operand))
  strides = (1,) * operand.ndim if strides is None else tuple(strides)
  return _on_data(operand, lax.slice, tuple(start_indices) + (0,) * n,
                  tuple(limit_indices) + _tail(operand), strides + (1,) * n)


def _lax_rev(operand, dimensions):
  return _on_data(operand, lax.rev, _axes("rev", tuple(dimensions), operand.ndim))


def _lax_in_dim(fn):
  """``fn`` (``index_in_dim``, ``slice_in_dim``, ...: one axis of the operand) on the data,
  its ``axis`` (keyword or positional) resolved against the keys' rank."""
  signature = inspect.signature(fn)

  def impl(operand, *args, **kwargs):
    bound = signature.bind(operand, *args, **kwargs)
    bound.apply_defaults()
    bound.arguments["axis"] = _axis(fn.__name__, bound.arguments["axis"], operand.ndim)
    bound.arguments[next(iter(signature.parameters))] = operand._base
    return PRNGKeyArray(fn(*bound.args, **bound.kwargs), operand._impl)
  return impl


def _lax_dynamic_update_in_dim(fn):
  """``dynamic_update_slice_in_dim`` / ``dynamic_update_index_in_dim`` of keys by keys."""
  def impl(operand, update, index, axis, *, allow_negative_indices=True):
    (operand, update), key_impl = _keys(fn.__name__, (operand, update))
    return PRNGKeyArray(fn(operand._base, update._base, index,
                           _axis(fn.__name__, axis, operand.ndim),
                           allow_negative_indices=allow_negative_indices), key_impl)
  return impl


_LAX = {
    "broadcast": _lax_broadcast, "broadcast_in_dim": _lax_broadcast_in_dim,
    "reshape": _lax_reshape, "transpose": _lax_transpose, "expand_dims": _lax_expand_dims,
    "squeeze": _lax_squeeze, "concatenate": _lax_concatenate, "slice": _lax_slice,
    "rev": _lax_rev, "dynamic_slice": _lax_dynamic_slice,
    "dynamic_update_slice": _lax_dynamic_update_slice,
    "index_in_dim": _lax_in_dim(lax.index_in_dim),
    "dynamic_index_in_dim": _lax_in_dim(lax.dynamic_index_in_dim),
    "slice_in_dim": _lax_in_dim(lax.slice_in_dim),
    "dynamic_slice_in_dim": _lax_in_dim(lax.dynamic_slice_in_dim),
    "dynamic_update_slice_in_dim": _lax_dynamic_update_in_dim(lax.dynamic_update_slice_in_dim),
    "dynamic_update_index_in_dim": _lax_dynamic_update_in_dim(lax.dynamic_update_index_in_dim),
}

for _name, _impl in _NUMPY.items():
  register("hlox.numpy", _name, _impl)
for _name, _impl in _LAX.items():
  register("hlox.lax", _name, _impl)
