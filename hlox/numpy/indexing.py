"""NumPy indexing on lax: ``x[idx]``, ``x.at[idx]`` updates, take, take_along_axis.

The semantics are JAX's:

* ``x[idx]`` accepts ints (negative count from the end), slices with any step, ``None``,
  ``Ellipsis``, integer arrays (NumPy arrays, Arrays, tracers, and lists *inside* a tuple),
  concrete boolean masks and traced integer scalars. Advanced indices broadcast together;
  their dimensions replace the indexed ones when the advanced indices are adjacent, and go
  first otherwise (NumPy's rule). A top-level list (``x[[0, 1]]``) is a TypeError, as in JAX:
  write ``x[np.array([0, 1])]`` or ``x[[0, 1],]``.
* The cheapest primitive is used: static ints and slices lower to ``lax.slice``/``lax.rev``/
  ``lax.reshape``; traced scalars to ``lax.dynamic_slice``; anything else to ``lax.gather``.
* Out of bounds: a static Python int out of range raises ``IndexError`` (like NumPy; JAX
  does this only under ``jax_check_static_indices``). Array and traced indices follow JAX's
  default ``mode=None`` (``promise_in_bounds``): XLA clamps them into range, no error is
  possible on device. ``x.at[idx].get(mode='fill', fill_value=...)`` returns ``fill_value``
  (default NaN / INT_MIN / UINT_MAX / True) instead, ``mode='clip'`` clamps explicitly.
* A boolean mask must be concrete (its True count is the result's size); a traced mask raises
  ``NonConcreteBooleanIndexError`` (a TypeError): use ``jnp.where`` instead.
* ``x.at[idx].set/add/multiply/divide/power/min/max/apply`` scatter into a copy of ``x``.
  Updates broadcast to the indexed shape and the result keeps ``x``'s dtype. Repeated
  indices accumulate (``add``: all updates are summed; ``set``: one of them wins).
  Out-of-bounds updates are dropped (``mode=None`` is ``'drop'``); ``mode='clip'`` clamps.
* ``take`` and ``take_along_axis`` default to ``mode='fill'``: out-of-bounds indices read the
  fill value.
"""
from __future__ import annotations

import operator
import string
import sys
import warnings
from typing import Any, NamedTuple

import numpy as np

from hlox import api, lax
from hlox.config import config
from hlox.core import dtypes, sharding_types, source_info
from hlox.core.dims import canonicalize_slice
from hlox.core.shape_poly import _DimExpr
from hlox.core.tracer import Tracer, get_aval
from hlox.errors import HloxTypeError, NonConcreteBooleanIndexError
from hlox.lax.dslice import Slice
from hlox.lax.indexing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from hlox.numpy import ufuncs, util
from hlox.numpy.conversion import asarray
from hlox.runtime.array import Array
from hlox.core.extended_functions import refused as _refused

__all__ = ["take", "take_along_axis", "put_along_axis", "index_exp", "s_"]

index_exp = np.index_exp
s_ = np.s_


# --- parsing -----------------------------------------------------------------------------

_NONE, _ELLIPSIS, _SLICE, _INT, _ARRAY, _BOOL = "none", "ellipsis", "slice", "int", "array", \
    "bool"
_DSLICE = "dynamic slice"  # ``ds(i, n)`` with a traced start: value (start, size, stride)
_PSLICE = "symbolic slice"  # a slice with symbolic bounds (shape polymorphism)


class _SymbolicBound(Exception):
  """A slice bound is a symbolic size: the slice is classified ``_PSLICE``."""


class _Index(NamedTuple):
  kind: str
  value: Any
  pos: int  # position in the user's index tuple (NumPy's adjacency rule is about positions)


def _is_array(x) -> bool:
  return isinstance(x, (Array, Tracer, np.ndarray))


def _sequence_to_array(seq, pos):
  """A list/tuple inside an index tuple becomes an array (of tracers too)."""
  try:
    return np.asarray(seq)
  except HloxTypeError:
    return asarray(seq)
  except ValueError as e:
    raise IndexError(f"index at position {pos} is a ragged sequence: {e}") from None


def _slice_bound(v, what):
  if v is None:
    return None
  if isinstance(v, Tracer):
    try:
      return operator.index(v)
    except HloxTypeError:
      raise IndexError(
          f"Array slice indices must have static start/stop/step to be used with NumPy "
          f"indexing syntax; the slice {what} is a traced value {v.aval.str_short()}. To "
          "index at a dynamic position with a static size, use lax.dynamic_slice or "
          "lax.dynamic_slice_in_dim (shapes must be static while tracing).") from None
  try:
    return operator.index(v)
  except TypeError:
    if type(v) is _DimExpr:
      raise _SymbolicBound from None
    raise TypeError(f"slice indices must be integers or None, got {v!r}") from None


def _classify(i, pos) -> _Index:
  if i is None:
    return _Index(_NONE, None, pos)
  if i is Ellipsis:
    return _Index(_ELLIPSIS, None, pos)
  if isinstance(i, slice):
    try:
      s = slice(_slice_bound(i.start, "start"), _slice_bound(i.stop, "stop"),
                _slice_bound(i.step, "step"))
    except _SymbolicBound:
      return _Index(_PSLICE, i, pos)
    if s.step == 0:
      raise ValueError("slice step cannot be zero")
    return _Index(_SLICE, s, pos)
  if type(i) is Slice:
    if i.is_dynamic_size:
      raise IndexError(f"the size of a Slice index must be static, got {i!r} at position "
                       f"{pos}")
    if not i.is_dynamic_start:
      return _Index(_SLICE, i.as_static_slice(), pos)
    return _Index(_DSLICE, (i.start, operator.index(i.size), i.stride), pos)
  if isinstance(i, (bool, np.bool_)):
    return _Index(_BOOL, bool(i), pos)
  if isinstance(i, (int, np.integer)):
    return _Index(_INT, int(i), pos)
  if isinstance(i, (list, tuple)):
    i = _sequence_to_array(i, pos)
    if isinstance(i, np.ndarray) and i.size == 0 and i.dtype.kind == "f":
      i = i.astype(np.int32)  # ``[]`` defaults to float in NumPy; as an index it is empty ints
  if _is_array(i):
    dtype = np.dtype(i.dtype)
    if dtype == np.bool_:
      return _Index(_BOOL, i, pos)
    if dtypes.is_int(dtype):
      if isinstance(i, np.ndarray) and i.ndim == 0:
        return _Index(_INT, int(i), pos)
      return _Index(_ARRAY, i, pos)
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{dtype.name} at position {pos}")
  if isinstance(i, str):
    raise TypeError(f"JAX does not support string indexing; got idx={i!r} (hlox, like JAX, "
                    "indexes by position only)")
  if isinstance(i, (float, complex, np.generic)):
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{np.dtype(type(i)).name} at position {pos}")
  raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
                   f"integer or boolean arrays are valid indices, got {i!r}")


def _consumed(e: _Index) -> int:
  if e.kind in (_INT, _ARRAY, _SLICE, _DSLICE, _PSLICE):
    return 1
  if e.kind == _BOOL:
    return np.ndim(e.value)
  return 0


def _parse(idx, shape) -> list:
  """The user's index as a list of ``_Index`` covering every dimension of ``shape`` (the
  Ellipsis, or the end, is expanded into full slices)."""
  if not isinstance(idx, tuple):
    if isinstance(idx, list):
      raise TypeError(
          "Using a non-tuple sequence for multidimensional indexing is not allowed; use "
          "`arr[tuple(seq)]` to index several dimensions, or `arr[array(seq)]` to index "
          "with an array (hlox follows JAX here, see https://github.com/jax-ml/jax/issues/4564).")
    idx = (idx,)
  entries = [_classify(i, pos) for pos, i in enumerate(idx)]
  ellipses = [e for e in entries if e.kind == _ELLIPSIS]
  if len(ellipses) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  used = sum(_consumed(e) for e in entries)
  if used > len(shape):
    raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {used} were "
                     "indexed")
  fill = len(shape) - used
  out = []
  for e in entries:
    if e.kind == _ELLIPSIS:
      out.extend(_Index(_SLICE, slice(None), e.pos) for _ in range(fill))
    else:
      out.append(e)
  if not ellipses:
    out.extend(_Index(_SLICE, slice(None), len(entries)) for _ in range(fill))
  return out


def _axes(entries):
  """Pairs (entry, axis of the array it indexes, or None for newaxis/scalar booleans)."""
  axis = 0
  for e in entries:
    n = _consumed(e)
    yield e, (axis if n else None)
    axis += n


def _normalize_static_ints(entries, shape, normalize: bool, mode) -> list:
  """Wrap negative static ints; out of range clamps (``promise_in_bounds``, ``clip``) or is
  left to the gather (``fill``); an index into a size-0 axis raises IndexError."""
  out = []
  for e, axis in _axes(entries):
    if e.kind == _INT:
      size = shape[axis]
      i = e.value + size if normalize and e.value < 0 else e.value
      if size == 0:
        raise IndexError(f"index {e.value} is out of bounds for axis {axis} with size 0")
      if type(size) is _DimExpr:
        pass  # a symbolic size: the gather clamps (or fills) when the program runs
      elif not 0 <= i < size:
        # JAX 0.10 clamps an out-of-range static int too (``arange(5)[10]`` is 4), as it
        # does for traced indices; only ``fill`` leaves it to the gather.
        if mode in (GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP):
          i = min(max(i, 0), size - 1)
      e = e._replace(value=i)
    out.append(e)
  return out


def _static_ints_in_range(entries, shape) -> bool:
  """Whether the static ints of ``entries`` (normalized) were in range before clamping."""
  return all(0 <= e.value < shape[axis] for e, axis in _axes(entries) if e.kind == _INT)


def _check_static_ints(entries, shape, normalize: bool) -> None:
  """IndexError for a static int index out of bounds (``config.check_static_indices``)."""
  for e, axis in _axes(entries):
    if e.kind == _INT:
      size = shape[axis]
      i = e.value + size if normalize and e.value < 0 else e.value
      if not 0 <= i < size:
        raise IndexError(f"index {e.value} out of bounds for axis {axis} with size {size} "
                         f"(normalize_indices={normalize})")


def _slice_extent(s: slice, size: int):
  """(first, step, count) of the elements a slice selects from a dimension of ``size``
  (symbolic when the size or a bound is)."""
  try:
    start, stop, step = s.indices(size)
  except TypeError:  # a symbolic size or bound
    return canonicalize_slice(s, size)
  return start, step, len(range(start, stop, step))


def _index_dtype(shape):
  for d in shape:
    # As JAX: the default integer from the first symbolic size on.
    if type(d) is _DimExpr or d >= 2 ** 31:
      return dtypes.canonicalize_dtype(np.int64)
  return dtypes.canonicalize_dtype(np.int32)


def _index_scalar(v, dtype):
  """A static index ``v`` (an int, or a symbolic size) as a scalar of ``dtype``."""
  if type(v) is _DimExpr:
    return lax.convert_element_type(v, dtype)
  return np.asarray(v, dtype)


def _normalize_array(a, size: int, dtype, normalize: bool):
  """Integer index array ``a`` as ``dtype``, negative entries counted from the end."""
  unsigned = dtypes.is_unsigned_int(np.dtype(a.dtype))
  if isinstance(a, np.ndarray) and type(size) is _DimExpr and normalize and not unsigned:
    a = asarray(a)  # counted from a size known when the program runs
  if isinstance(a, np.ndarray):
    a = a.astype(dtype)
    if normalize and not unsigned:
      a = np.where(a < 0, a + size, a).astype(dtype)
    return a
  a = lax.convert_element_type(a, dtype)
  if normalize and not unsigned:
    zero = np.zeros((), dtype)
    a = lax.select(lax.lt(a, zero), lax.add(a, lax.convert_element_type(size, dtype)), a)
  return a


# --- static and dynamic slicing ----------------------------------------------------------

def _static_slice(arr, entries, shape):
  starts, limits, strides, rev_dims, out_shape = [], [], [], [], []
  squeezed, new_dims = [], []  # the int-indexed axes; where None adds size-1 axes
  for e, axis in _axes(entries):
    if e.kind == _NONE:
      new_dims.append(len(out_shape))
      out_shape.append(1)
    elif e.kind == _INT:
      squeezed.append(axis)
      starts.append(e.value)
      limits.append(e.value + 1)
      strides.append(1)
    else:
      first, step, n = _slice_extent(e.value, shape[axis])
      if n == 0:
        starts.append(0)
        limits.append(0)
        strides.append(1)
      elif step > 0:
        starts.append(first)
        limits.append(first + (n - 1) * step + 1)
        strides.append(step)
      else:  # take the same elements in increasing order, then reverse them
        starts.append(first + (n - 1) * step)
        limits.append(first + 1)
        strides.append(-step)
        if n > 1:
          rev_dims.append(axis)
      out_shape.append(n)
  result = arr
  if starts != [0] * len(shape) or limits != list(shape) or any(s != 1 for s in strides):
    result = lax.slice(arr, starts, limits,
                       None if all(s == 1 for s in strides) else strides)
  if rev_dims:
    result = lax.rev(result, rev_dims)
  # As JAX: squeeze the int-indexed axes, then broadcast in the new ones.
  if squeezed:
    result = lax.squeeze(result, squeezed)
  if new_dims:
    result = lax.expand_dims(result, new_dims)
  return result


def _dynamic_slice(arr, entries, shape, normalize: bool):
  dtype = _index_dtype(shape)
  starts, sizes, rev_dims, out_shape = [], [], [], []
  squeezed, new_dims = [], []  # the scalar-indexed axes; where None adds size-1 axes
  for e, axis in _axes(entries):
    if e.kind == _NONE:
      new_dims.append(len(out_shape))
      out_shape.append(1)
    elif e.kind == _INT:
      squeezed.append(axis)
      # A normalized static int still negative was out of range: an array start, which
      # dynamic_slice clamps (a negative static start would count from the end again).
      starts.append(np.asarray(e.value, dtype)[()] if e.value >= 0
                    else lax.full((), e.value, dtype))
      sizes.append(1)
    elif e.kind == _ARRAY:
      if shape[axis] == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0")
      squeezed.append(axis)
      starts.append(_normalize_array(e.value, shape[axis], dtype, normalize))
      sizes.append(1)
    elif e.kind == _DSLICE:  # unit stride here: ``size`` elements from a traced start
      start, size, _ = e.value
      starts.append(_normalize_array(start, shape[axis], dtype, normalize))
      sizes.append(size)
      out_shape.append(size)
    else:
      first, step, n = _slice_extent(e.value, shape[axis])
      lo = first if step > 0 else first - (n - 1)
      starts.append(np.asarray(lo if n else 0, dtype)[()])
      sizes.append(n)
      if step < 0 and n > 1:
        rev_dims.append(axis)
      out_shape.append(n)
  # The starts are already normalized; dynamic_slice then clamps them into range.
  result = lax.dynamic_slice(arr, starts, sizes, allow_negative_indices=False)
  if rev_dims:
    result = lax.rev(result, rev_dims)
  # As JAX: squeeze the int-indexed axes, then broadcast in the new ones.
  if squeezed:
    result = lax.squeeze(result, squeezed)
  if new_dims:
    result = lax.expand_dims(result, new_dims)
  return result


# --- the general case: gather ------------------------------------------------------------

class _GatherPlan(NamedTuple):
  x_shape: tuple        # the operand's shape, with size-1 dims for scalar boolean indices
  indices: Any          # index vectors (NumPy array when every index was static)
  dnums: GatherDimensionNumbers
  slice_sizes: tuple
  gather_shape: tuple   # the gather's output shape
  result_shape: tuple   # ... with the newaxis dimensions
  unique_indices: bool
  indices_are_sorted: bool


def _concrete_mask(value):
  if isinstance(value, Tracer):
    concrete = value.to_concrete_value()
    if concrete is None:
      raise NonConcreteBooleanIndexError(value.aval)
    return np.asarray(concrete)
  return np.asarray(value)


def _expand_bools(entries, shape):
  """Boolean masks become the integer arrays of their True positions; a scalar boolean
  becomes ``arange(1)``/``arange(0)`` over a new size-1 dimension of the operand."""
  out, x_shape = [], []
  for e, axis in _axes(entries):
    if e.kind != _BOOL:
      out.append(e)
      if axis is not None:
        x_shape.append(shape[axis])
      continue
    mask = _concrete_mask(e.value)
    if mask.ndim == 0:
      x_shape.append(1)
      out.append(_Index(_ARRAY, np.arange(int(bool(mask)), dtype=np.int32), e.pos))
      continue
    expected = tuple(shape[axis:axis + mask.ndim])
    # An empty mask selects nothing whatever its shape (NumPy's rule).
    if mask.shape != expected and mask.size:
      raise IndexError(f"boolean index did not match shape of indexed array in index "
                       f"{e.pos}: mask shape {mask.shape}, array dimensions {expected}")
    for nz in np.nonzero(mask):
      out.append(_Index(_ARRAY, nz, e.pos))
    x_shape.extend(expected)
  return out, tuple(x_shape)


def _broadcast_index_shapes(arrays):
  try:
    return util.broadcast_shapes(*[np.shape(a) if isinstance(a, (int, np.integer)) else
                                   get_aval(a).shape for a in arrays])
  except ValueError:
    shapes = " ".join(str(get_aval(a).shape) for a in arrays)
    raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with "
                     f"shapes {shapes}") from None


def _stack_indices(components, batch_shape, dtype):
  """Index vectors of shape ``batch_shape + (len(components),)``; component ``(v, d)`` spans
  batch dimensions ``d, d+1, ...``."""
  full = tuple(batch_shape) + (1,)
  if not components:
    return np.zeros(tuple(batch_shape) + (0,), dtype)
  if all(isinstance(v, (np.ndarray, np.generic)) for v, _ in components):
    cols = []
    for v, d in components:
      v = np.asarray(v, dtype)
      lead, trail = d, len(batch_shape) - d - v.ndim
      cols.append(np.broadcast_to(v.reshape((1,) * lead + v.shape + (1,) * trail), batch_shape))
    return np.stack(cols, axis=-1)
  pieces = [lax.broadcast_in_dim(v, full, tuple(range(d, d + get_aval(v).ndim)))
            for v, d in components]
  return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, len(batch_shape))


def _gather_plan(entries, shape, normalize: bool) -> _GatherPlan:
  """NumPy indexing as one gather (JAX's construction): advanced indices broadcast into a
  block of batch dimensions; scalar indices and partial unit-step slices add start indices;
  strided slices become index arrays (in the slice's order, so no reverse is needed)."""
  entries, x_shape = _expand_bools(entries, shape)
  dtype = _index_dtype(x_shape)
  axes = list(_axes(entries))
  advanced = any(e.kind == _ARRAY and np.ndim(e.value) > 0 for e in entries)
  adv = [k for k, (e, _) in enumerate(axes) if advanced and e.kind in (_INT, _ARRAY)]
  positions = sorted({axes[k][0].pos for k in adv})
  adjacent = all(b - a == 1 for a, b in zip(positions, positions[1:]))
  adv_at = (adv[0] if adjacent else 0) if adv else None

  offset_dims, collapsed, start_index_map, slice_sizes = [], [], [], []
  components, batch_shape = [], []
  gather_shape, result_shape = [], []
  sorted_ok = not advanced
  for k, (e, axis) in enumerate(axes):
    if k == adv_at:
      values = []
      for j in adv:
        e2, ax = axes[j]
        if e2.kind == _INT:  # already normalized by _normalize_static_ints
          values.append(_index_scalar(e2.value, dtype))
        else:
          values.append(_normalize_array(e2.value, x_shape[ax], dtype, normalize))
        start_index_map.append(ax)
        collapsed.append(ax)
      adv_shape = _broadcast_index_shapes(values)
      start = len(batch_shape)
      for v in values:  # broadcasting aligns trailing dimensions
        components.append((v, start + len(adv_shape) - get_aval(v).ndim))
      batch_shape.extend(adv_shape)
      gather_shape.extend(adv_shape)
      result_shape.extend(adv_shape)
    if adv and e.kind in (_INT, _ARRAY):
      slice_sizes.append(1)
    elif e.kind in (_INT, _ARRAY):  # a scalar index, static or traced
      if x_shape[axis] == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0")
      value = _index_scalar(e.value, dtype) if e.kind == _INT else \
          _normalize_array(e.value, x_shape[axis], dtype, normalize)
      components.append((value, len(batch_shape)))
      start_index_map.append(axis)
      collapsed.append(axis)
      slice_sizes.append(1)
    elif e.kind == _NONE:
      result_shape.append(1)
    elif e.kind == _DSLICE:  # ``n`` elements from a traced start, by ``step``
      start, n, step = e.value
      first = _normalize_array(start, x_shape[axis], dtype, normalize)
      start_index_map.append(axis)
      if step == 1:
        components.append((first, len(batch_shape)))
        slice_sizes.append(n)
        offset_dims.append(len(gather_shape))
      else:
        offsets = (step * np.arange(n)).astype(dtype)
        components.append((lax.add(lax.broadcast(first, (n,)), offsets), len(batch_shape)))
        collapsed.append(axis)
        slice_sizes.append(1)
        batch_shape.append(n)
      gather_shape.append(n)
      result_shape.append(n)
    else:
      size = x_shape[axis]
      first, step, n = _slice_extent(e.value, size)
      if step == 1:
        if n != size:
          components.append((_index_scalar(first, dtype), len(batch_shape)))
          start_index_map.append(axis)
        slice_sizes.append(n)
        offset_dims.append(len(gather_shape))
      else:
        if type(n) is int and type(first) is int and type(step) is int:
          positions = (first + step * np.arange(n)).astype(dtype)
        else:  # symbolic: first + step * iota(n) in the program
          positions = lax.add(_index_scalar(first, dtype),
                              lax.mul(_index_scalar(step, dtype), lax.iota(dtype, n)))
        components.append((positions, len(batch_shape)))
        start_index_map.append(axis)
        collapsed.append(axis)
        slice_sizes.append(1)
        batch_shape.append(n)
        sorted_ok = sorted_ok and step > 0
      gather_shape.append(n)
      result_shape.append(n)
  indices = _stack_indices(components, batch_shape, dtype)
  dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                 collapsed_slice_dims=tuple(sorted(collapsed)),
                                 start_index_map=tuple(start_index_map))
  return _GatherPlan(x_shape, indices, dnums, tuple(slice_sizes), tuple(gather_shape),
                     tuple(result_shape), not advanced, sorted_ok)


def _reshape(x, shape):
  shape = tuple(shape)
  return x if get_aval(x).shape == shape else lax.reshape(x, shape)


def _parse_mode(mode):
  return GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else \
      GatherScatterMode.from_any(mode)


def _rewriting_take(arr, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
                    fill_value=None, normalize=True):
  """``arr[idx]`` with the cheapest primitive that can do it."""
  shape = get_aval(arr).shape
  gmode = _parse_mode(mode)
  parsed = _parse(idx, shape)
  if gmode is GatherScatterMode.PROMISE_IN_BOUNDS and config._values["check_static_indices"]:
    _check_static_ints(parsed, shape, normalize)
  entries = _normalize_static_ints(parsed, shape, normalize, gmode)
  kinds = {e.kind for e in entries}
  if _PSLICE in kinds or _DimExpr in map(type, shape):
    # Symbolic sizes or bounds (shape polymorphism): one gather, as JAX's, whose window
    # sizes and starts may be symbolic.
    return _take_by_gather(arr, _concrete_slices(entries), shape, normalize, mode,
                           fill_value, unique_indices, indices_are_sorted)
  sliceable = gmode is not GatherScatterMode.FILL_OR_DROP
  if sliceable and kinds <= {_NONE, _SLICE, _INT}:
    # As JAX: a static int out of range is a dynamic_slice start (clamped by XLA), which
    # checkify's index checks see.
    unclamped = _normalize_static_ints(parsed, shape, normalize, GatherScatterMode.FILL_OR_DROP)
    if _static_ints_in_range(unclamped, shape) or not all(
        e.value.step in (None, 1, -1) for e in entries if e.kind == _SLICE):
      return _static_slice(arr, entries, shape)
    return _dynamic_slice(arr, unclamped, shape, normalize)
  if sliceable and kinds <= {_NONE, _SLICE, _INT, _ARRAY, _DSLICE} and all(
      get_aval(e.value).ndim == 0 for e in entries if e.kind == _ARRAY) and all(
      e.value.step in (None, 1, -1) for e in entries if e.kind == _SLICE) and all(
      e.value[2] == 1 for e in entries if e.kind == _DSLICE):
    return _dynamic_slice(arr, entries, shape, normalize)
  return _take_by_gather(arr, entries, shape, normalize, mode, fill_value, unique_indices,
                         indices_are_sorted)


def _concrete_slices(entries):
  """Slices with symbolic bounds as plain slice entries (``_slice_extent`` reads them)."""
  return [e._replace(kind=_SLICE) if e.kind == _PSLICE else e for e in entries]


def _take_by_gather(arr, entries, shape, normalize, mode, fill_value, unique_indices,
                    indices_are_sorted):
  plan = _gather_plan(entries, shape, normalize)
  if any(d == 0 for d in plan.result_shape):
    return lax.full_like(arr, 0, shape=plan.result_shape)
  x = _reshape(arr, plan.x_shape)
  if plan.indices.shape[:-1] == () and plan.indices.shape[-1] == 0:
    y = x  # every dimension is a full slice
  else:
    y = lax.gather(x, plan.indices, plan.dnums, plan.slice_sizes,
                   unique_indices=unique_indices or plan.unique_indices,
                   indices_are_sorted=indices_are_sorted or plan.indices_are_sorted,
                   mode=mode, fill_value=fill_value)
  return _reshape(y, plan.result_shape)


def _getitem(x, idx):
  """``x[idx]`` (installed as ``__getitem__`` of Arrays and tracers)."""
  return _rewriting_take(x, idx)


# --- indexed updates ---------------------------------------------------------------------

def _as_update(y, x_dtype):
  """Updates as something ``lax`` takes: Python ints that fit an integer ``x`` take its dtype
  (JAX's rule), lists become arrays, other scalars stay weakly typed."""
  if type(y) is int and dtypes.is_int(x_dtype):
    info = dtypes.iinfo(x_dtype)
    if info.min <= y <= info.max:
      return np.asarray(y, x_dtype)[()]
  if isinstance(y, (list, tuple)):
    y = util.ensure_array(y)
  util.check_arraylike("at[].set/add/...", y)
  return y


def _check_safe_cast(y, x_dtype):
  """JAX's FutureWarning for updates whose dtype does not promote to ``x``'s (``x`` counted
  as strongly typed): they are cast down. Under strict promotion, an update of another
  strong dtype is an error when the user's code asked for it."""
  y_dtype = dtypes.dtype_of(y)
  if y_dtype == x_dtype:
    return
  if (config._values["numpy_dtype_promotion"] == "strict" and not dtypes.is_weakly_typed(y)
      and _update_called_by_user()):
    raise dtypes.TypePromotionError(
        f"Input dtypes ('{x_dtype}', '{y_dtype}') have no available implicit dtype promotion "
        "path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the "
        "desired output type, or set jax_numpy_dtype_promotion=standard.")
  if dtypes.result_type(y, x_dtype) == x_dtype or not _update_called_by_user():
    return
  warnings.warn("scatter inputs have incompatible types: cannot safely cast value from "
                f"dtype={y_dtype} to dtype={x_dtype} with jax_numpy_dtype_promotion="
                f"{config.numpy_dtype_promotion}. In future JAX releases this will result in "
                "an error.", FutureWarning, stacklevel=source_info.user_stacklevel())


def _update_called_by_user() -> bool:
  """Whether the ``x.at[...]`` update running was asked for by the user's code (the first
  frame outside this module), not by hlox's own implementation of something else."""
  frame = sys._getframe(1)
  while frame is not None and frame.f_code.co_filename == __file__:
    frame = frame.f_back
  return frame is None or source_info.is_user_file(frame.f_code.co_filename)


def _broadcast_updates(y, shape, index):
  aval = get_aval(y)
  yshape = aval.shape
  if len(yshape) > len(shape):  # NumPy drops leading size-1 dimensions of the values
    extra = len(yshape) - len(shape)
    if all(d == 1 for d in yshape[:extra]):
      y = lax.reshape(y, yshape[extra:])
  try:
    return util.broadcast_to_shape(y, shape)
  except ValueError:
    raise ValueError(f"x.at[{index!r}]: cannot broadcast updates of shape {yshape} to the "
                     f"indexed shape {tuple(shape)}") from None


def _split_updates(x, indices, y, dnums):
  """Under sharding in types, the updates split as the windows they write (as ``x`` is)
  and, along the dimensions the indices range over, as the indices are (JAX reshards the
  updates so, whatever their own split)."""
  x_split, ix_split = sharding_types.split_of(x), sharding_types.split_of(indices)
  if x_split is None and ix_split is None:
    return y
  mesh = (x_split or ix_split).mesh
  x_entries = sharding_types.entries_of(x_split, get_aval(x).ndim)
  ix_entries = sharding_types.entries_of(ix_split, get_aval(indices).ndim)
  windows = iter(d for d in range(len(x_entries)) if d not in dnums.inserted_window_dims)
  queries = iter(ix_entries[:-1])
  want = [x_entries[next(windows)] if d in dnums.update_window_dims else next(queries, None)
          for d in range(get_aval(y).ndim)]
  axes = [a for e in want for a in (e or ())]
  if len(axes) != len(set(axes)):  # no one split: the scatter's rule says what is wrong
    return y
  split = sharding_types.TypeSharding(mesh, want)
  have = sharding_types.split_of(y)
  if (have.entries if have is not None else (None,) * len(want)) == split.entries:
    return y
  return sharding_types.constrain(y, split)


def _scatter_update(x, idx, y, scatter_fn, *, indices_are_sorted=False,
                    unique_indices=False, mode=None, normalize=True):
  """``x[idx] (op)= y`` as a scatter, returning a new array of ``x``'s dtype."""
  aval = get_aval(x)
  y = _as_update(y, aval.dtype)
  _check_safe_cast(y, aval.dtype)
  smode = GatherScatterMode.from_any(mode)
  entries = _normalize_static_ints(_parse(idx, aval.shape), aval.shape, normalize, smode)
  plan = _gather_plan(_concrete_slices(entries), aval.shape, normalize)
  if any(d == 0 for d in plan.result_shape):
    return x
  xp, yp = util.promote_dtypes(x, y)
  yp = _broadcast_updates(yp, plan.result_shape, idx)
  yp = _reshape(yp, plan.gather_shape)
  dnums = ScatterDimensionNumbers(update_window_dims=plan.dnums.offset_dims,
                                  inserted_window_dims=plan.dnums.collapsed_slice_dims,
                                  scatter_dims_to_operand_dims=plan.dnums.start_index_map)
  xp = _reshape(xp, plan.x_shape)
  if sharding_types.active[0] and not sharding_types.result_sharding_is_given():
    yp = _split_updates(xp, plan.indices, yp, dnums)
  out = scatter_fn(xp, plan.indices, yp, dnums,
                   indices_are_sorted=indices_are_sorted or plan.indices_are_sorted,
                   unique_indices=unique_indices or plan.unique_indices, mode=smode)
  out = _reshape(out, aval.shape)
  return lax.convert_element_type(out, aval.dtype, aval.weak_type)


class _IndexUpdateHelper:
  """``x.at[idx]``: pure versions of NumPy's in-place indexed operations.

  ``x.at[idx].set(y)`` is ``x[idx] = y``, ``.add(y)`` is ``x[idx] += y``, likewise
  ``multiply``/``mul``, ``divide``, ``power``, ``min``, ``max``; ``.apply(f)`` is
  ``f.at(x, idx)``; ``.get()`` is ``x[idx]``. Each returns a new array. Repeated indices
  accumulate; out-of-bounds updates are dropped unless ``mode='clip'``.
  """

  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """``x.at[idx]``: the methods that read or update ``x`` at ``idx``."""

  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, wrap_negative_indices=True, out_sharding=None):
    """``x[idx]``; with ``mode='fill'`` out-of-bounds reads give ``fill_value``."""
    # ``out_sharding`` sets the split of the result, so the gather need not work one out.
    with sharding_types.result_sharding_given(out_sharding is not None):
      out = _rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                            normalize=wrap_negative_indices)
    return lax.apply_out_sharding(out, out_sharding, "at[].get")

  def _update(self, values, fn, indices_are_sorted, unique_indices, mode,
              wrap_negative_indices, out_sharding=None, name="at[].update"):
    with sharding_types.result_sharding_given(out_sharding is not None):
      out = _scatter_update(self.array, self.index, values, fn,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode,
                            normalize=wrap_negative_indices)
    return lax.apply_out_sharding(out, out_sharding, name)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True, out_sharding=None):
    """``x[idx] = values``."""
    return self._update(values, lax.scatter, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].set")

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True, out_sharding=None):
    """``x[idx] += values`` (every repeated index adds)."""
    return self._update(values, lax.scatter_add, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].add")

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
    """``x[idx] -= values``."""
    values = _as_update(values, get_aval(self.array).dtype)
    if isinstance(values, (Array, Tracer)):
      negated = lax.neg(values)
    elif hasattr(values, "dtype"):
      negated = -np.asarray(values)
    else:  # a Python scalar stays weakly typed
      negated = -values
    return self._update(negated, lax.scatter_add, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].subtract")

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True, out_sharding=None):
    """``x[idx] *= values``."""
    return self._update(values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].multiply")

  mul = multiply

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             wrap_negative_indices=True, out_sharding=None):
    """``x[idx] /= values`` (true division, so integer arrays give floats, as in JAX)."""
    with sharding_types.result_sharding_given(out_sharding is not None):
      out = ufuncs.true_divide(self.array, self._ones_times(
          values, indices_are_sorted, unique_indices, mode, wrap_negative_indices))
    return lax.apply_out_sharding(out, out_sharding, "at[].divide")

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True, out_sharding=None):
    """``x[idx] **= values``."""
    with sharding_types.result_sharding_given(out_sharding is not None):
      out = ufuncs.power(self.array, self._ones_times(
          values, indices_are_sorted, unique_indices, mode, wrap_negative_indices))
    return lax.apply_out_sharding(out, out_sharding, "at[].power")

  def _ones_times(self, values, indices_are_sorted, unique_indices, mode,
                  wrap_negative_indices):
    # Repeated indices multiply their values together first, as JAX does.
    ones = lax.full_like(self.array, 1)  # keeps the array's weak type
    return _scatter_update(ones, self.index, values, lax.scatter_mul,
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode,
                           normalize=wrap_negative_indices)

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True, out_sharding=None):
    """``x[idx] = minimum(x[idx], values)``."""
    return self._update(values, lax.scatter_min, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].min")

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True, out_sharding=None):
    """``x[idx] = maximum(x[idx], values)``."""
    return self._update(values, lax.scatter_max, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices, out_sharding, "at[].max")

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """``func.at(x, idx)`` for an elementwise ``func``: repeated indices apply it again."""
    def scatter_apply(x, indices, y, dnums, **kw):
      return lax.scatter_apply(x, indices, func, dnums, update_shape=get_aval(y).shape, **kw)
    zero = np.zeros((), get_aval(self.array).dtype)
    return self._update(zero, scatter_apply, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)


# --- take, take_along_axis, put_along_axis -----------------------------------------------

def _check_int_indices(name, indices):
  util.check_arraylike(name, indices)
  indices = util.ensure_array(indices)
  if isinstance(indices, (int, np.integer)) and not isinstance(indices, (bool, np.bool_)):
    indices = np.asarray(indices)
  aval = get_aval(indices)
  if not dtypes.is_int(aval.dtype):
    raise TypeError(f"{name} indices must be of integer type, got {aval.dtype} "
                    f"({aval.str_short()})")
  return indices


def _mod_index(indices, size: int, dtype):
  """``indices mod size`` in ``[0, size)`` (Python's sign rule)."""
  if isinstance(indices, np.ndarray):
    return np.mod(indices.astype(dtype), size).astype(dtype)
  indices = lax.convert_element_type(indices, dtype)
  n = np.asarray(size, dtype)[()]
  r = lax.rem(indices, n)
  return lax.select(lax.lt(r, np.zeros((), dtype)), lax.add(r, n), r)


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """Take elements of ``a`` at ``indices`` along an axis.

  Unlike NumPy, out-of-bounds indices do not raise (errors cannot be raised from device code):
  by default they read ``fill_value``.

  Args:
    a: array-like input.
    indices: integer array-like of indices.
    axis: the axis to take along; None takes from the flattened array.
    out: unsupported (raises ``NotImplementedError``).
    mode: None or 'fill' (the default: negative indices count from the end, out-of-bounds
      ones read ``fill_value``), 'clip' (clamped into range) or 'wrap' (taken modulo the
      axis length). 'raise' raises ``NotImplementedError``.
    unique_indices: promise that the indices are unique (may speed things up).
    indices_are_sorted: promise that the indices are sorted (may speed things up).
    fill_value: the value read out of bounds in 'fill' mode (default: NaN for inexact dtypes,
      the smallest value for signed integers, the largest for unsigned ones, True for bool).

  Returns:
    An array of ``a``'s dtype and shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.

  Examples:
    >>> x = jnp.array([[1., 2.], [3., 4.]])
    >>> jnp.take(x, jnp.array([3, 0, -1]))
    Array([4., 1., 4.], dtype=float32)
    >>> jnp.take(x, jnp.array([1, 5]), axis=1)
    Array([[ 2., nan],
           [ 4., nan]], dtype=float32)
    >>> jnp.take(x, jnp.array([1, 5]), axis=1, mode='clip')
    Array([[2., 2.],
           [4., 4.]], dtype=float32)
  """
  if out is not None:
    raise NotImplementedError("take: the 'out' argument is not supported (arrays are "
                              "immutable)")
  try:
    util.check_arraylike("take", a)
  except TypeError:  # typed keys: their own implementation
    return _refused("hlox.numpy", "take",
                    a, indices, axis, out, mode, unique_indices, indices_are_sorted, fill_value)
  a = util.ensure_array(a)
  indices = _check_int_indices("take", indices)
  aval = get_aval(a)
  if axis is None:
    a = _reshape(a, (aval.size,))
    axis = 0
  shape = get_aval(a).shape
  axis = lax.utils.canonicalize_axis(axis, len(shape), "take")
  size = shape[axis]
  dtype = _index_dtype(shape)
  if mode is None or mode == "fill":
    gmode = GatherScatterMode.FILL_OR_DROP
    if isinstance(indices, np.ndarray) or dtypes.is_unsigned_int(get_aval(indices).dtype):
      indices = _normalize_array(indices, size, dtype, True)
    else:  # negative indices wrapped with ``where``, as JAX's jaxprs show
      indices = lax.convert_element_type(indices, dtype)
      indices = ufuncs._where(lax.lt(indices, np.zeros((), dtype)),
                              lax.add(indices, lax.convert_element_type(size, dtype)), indices)
  elif mode == "clip":
    gmode = GatherScatterMode.CLIP
  elif mode == "wrap":
    gmode = GatherScatterMode.PROMISE_IN_BOUNDS
    indices = _mod_index(indices, size, dtype) if size else indices
  elif mode == "raise":
    raise NotImplementedError("take: mode='raise' is not supported (errors cannot be raised "
                              "from device code); use 'fill', 'clip' or 'wrap'")
  else:
    raise ValueError(f"take: invalid mode {mode!r}; use 'fill', 'clip' or 'wrap'")
  ishape = get_aval(indices).shape
  out_shape = shape[:axis] + ishape + shape[axis + 1:]
  if size == 0:
    if int(np.prod(ishape)) != 0:
      raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    return lax.full_like(a, 0, shape=out_shape)
  if int(np.prod(out_shape)) == 0:
    return lax.full_like(a, 0, shape=out_shape)
  slice_sizes = shape[:axis] + (1,) + shape[axis + 1:]
  nidx = len(ishape)
  dnums = GatherDimensionNumbers(
      offset_dims=tuple(range(axis)) + tuple(range(axis + nidx, len(shape) + nidx - 1)),
      collapsed_slice_dims=(axis,), start_index_map=(axis,))
  indices = lax.broadcast_in_dim(indices, ishape + (1,), tuple(range(nidx)))
  return lax.gather(a, indices, dnums, slice_sizes, mode=gmode, fill_value=fill_value,
                    unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
  """Index ``arr`` with ``indices`` along an axis, matching the other axes position by position.

  ``indices`` has ``arr``'s rank; along the other axes the two broadcast. This pairs with
  ``argsort``, ``argmax(keepdims=True)`` and the like.

  Args:
    arr: array-like input.
    indices: integer array-like of ``arr``'s rank (1-d when ``axis`` is None).
    axis: the axis to index along; None indexes the flattened array.
    mode: None or 'fill' (the default: out-of-bounds indices read ``fill_value``), 'clip'
      (clamped), 'promise_in_bounds', or 'one_hot' (computed as a product with one-hot
      vectors; out-of-bounds indices give 0).
    fill_value: the value read out of bounds in 'fill' mode (default as for ``take``).
    wrap_negative_indices: keyword-only; whether negative indices count from the end
      (NumPy's rule). Unset, they do, except with ``mode='promise_in_bounds'``.

  Returns:
    An array of ``arr``'s dtype and the broadcast shape of ``arr`` and ``indices`` with
    ``indices``' length along ``axis``.

  Examples:
    >>> x = jnp.array([[30, 10, 20], [5, 6, 4]])
    >>> jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)
    Array([[10, 20, 30],
           [ 4,  5,  6]], dtype=int32)
    >>> jnp.take_along_axis(x, jnp.array([[2], [0]]), axis=1)
    Array([[20],
           [ 5]], dtype=int32)
  """
  util.check_arraylike("take_along_axis", arr)
  a = util.ensure_array(arr)
  indices = _check_int_indices("take_along_axis", indices)
  # Staged as one nested ``jit`` (as JAX does), so a jaxpr shows the gather inside it.
  return _take_along_axis_jit(a, indices, axis=axis, mode=mode, fill_value=fill_value,
                              wrap_negative_indices=wrap_negative_indices)


def _take_along_axis(a, indices, *, axis, mode, fill_value, wrap_negative_indices):
  ishape = get_aval(indices).shape
  if axis is None:
    if len(ishape) != 1:
      raise ValueError(f"take_along_axis: indices must be 1-D when axis=None, got shape "
                       f"{ishape}")
    a = _reshape(a, (get_aval(a).size,))
    axis = 0
  aval = get_aval(a)
  rank = aval.ndim
  if len(ishape) != rank:
    raise ValueError(f"take_along_axis: indices and arr must have the same number of "
                     f"dimensions, got {len(ishape)} and {rank}")
  axis = lax.utils.canonicalize_axis(axis, rank, "take_along_axis")
  arr_shape = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
  try:
    out_shape = util.broadcast_shapes(ishape, arr_shape)
  except ValueError:
    raise ValueError(f"take_along_axis: indices of shape {ishape} do not broadcast with arr "
                     f"of shape {aval.shape} outside axis {axis}") from None
  size = aval.shape[axis]
  if size == 0 or int(np.prod(out_shape)) == 0:
    return lax.full(out_shape, 0, aval.dtype)
  one_hot = isinstance(mode, str) and mode == "one_hot"
  gmode = GatherScatterMode.FILL_OR_DROP if mode is None or one_hot else _parse_mode(mode)
  if wrap_negative_indices is None:
    wrap_negative_indices = gmode is not GatherScatterMode.PROMISE_IN_BOUNDS
  if wrap_negative_indices:
    indices = _normalize_array(indices, size, _index_dtype((size,)), True)
  if one_hot:
    return _take_along_axis_one_hot(a, indices, axis)
  # Dimensions where indices have size 1 take the whole of arr (offset dims); where arr has
  # size 1 it is squeezed and the indices' size is kept; elsewhere both are batch dims.
  index_dims = [i for i in range(rank) if i == axis or ishape[i] != 1]
  offset_dims, collapsed, start_index_map, slice_sizes = [], [], [], []
  operand_batching, indices_batching, squeeze = [], [], []
  new_i = j = 0
  for i in range(rank):
    if i == axis:
      slice_sizes.append(1)
      start_index_map.append(new_i)
      collapsed.append(new_i)
      new_i += 1
      j += 1
    elif ishape[i] == 1:
      offset_dims.append(i)
      slice_sizes.append(arr_shape[i])
      new_i += 1
    elif arr_shape[i] == 1:
      squeeze.append(i)
      j += 1
    else:
      slice_sizes.append(1)
      operand_batching.append(new_i)
      indices_batching.append(j)
      new_i += 1
      j += 1
  if squeeze:
    a = _reshape(a, [d for i, d in enumerate(aval.shape) if i not in squeeze])
  gather_indices = _reshape(indices, tuple(out_shape[i] for i in index_dims) + (1,))
  dnums = GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
      start_index_map=tuple(start_index_map), operand_batching_dims=tuple(operand_batching),
      start_indices_batching_dims=tuple(indices_batching))
  return lax.gather(a, gather_indices, dnums, tuple(slice_sizes), mode=gmode,
                    fill_value=fill_value)


_take_along_axis_jit = api.jit(
    _take_along_axis, static_argnames=("axis", "mode", "fill_value", "wrap_negative_indices"))


def _take_along_axis_one_hot(a, indices, axis):
  """take_along_axis as a contraction of ``a`` with one-hot vectors of ``indices`` (dense
  work, but a matrix product, which some accelerators do far faster than a gather)."""
  from hlox.numpy.products import einsum
  aval = get_aval(a)
  iaval = get_aval(indices)
  positions = lax.broadcasted_iota(iaval.dtype, iaval.shape + (aval.shape[axis],), iaval.ndim)
  hot = lax.convert_element_type(lax.eq(lax.expand_dims(indices, (iaval.ndim,)), positions),
                                 aval.dtype)
  if aval.ndim == 1:
    return einsum("...b,b->...", hot, a, preferred_element_type=aval.dtype)
  names = string.ascii_letters.replace("y", "").replace("z", "")
  if axis > len(names):
    raise ValueError(f"take_along_axis: mode='one_hot' supports at most {len(names)} "
                     f"leading dimensions, got axis={axis}")
  letters = names[:axis]
  return einsum(f"{letters}y...z,{letters}z...->{letters}y...", hot, a,
                precision=lax.Precision.HIGHEST, preferred_element_type=aval.dtype)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """``arr`` with ``values`` written at ``indices`` along an axis (NumPy's ``put_along_axis``).

  hlox arrays are immutable, so ``inplace=False`` is required (the default raises
  ``ValueError``) and a new array is returned.

  Args:
    arr: array-like input.
    indices: integer array-like of ``arr``'s rank (broadcast as in ``take_along_axis``).
    values: array-like of values, broadcast to ``indices``' shape.
    axis: the axis to index along; None indexes the flattened array.
    inplace: must be False.
    mode: keyword-only; how out-of-bounds indices are handled, as in ``x.at[...].set``
      (default: they are dropped).

  Returns:
    An array of ``arr``'s shape and dtype.

  Examples:
    >>> x = jnp.zeros((2, 3), int)
    >>> jnp.put_along_axis(x, jnp.array([[1], [2]]), 9, axis=1, inplace=False)
    Array([[0, 9, 0],
           [0, 0, 9]], dtype=int32)
  """
  if inplace:
    raise ValueError("put_along_axis cannot modify arrays in place (they are immutable); "
                     "pass inplace=False to get an updated copy")
  util.check_arraylike("put_along_axis", arr, values)
  a = util.ensure_array(arr)
  indices = _check_int_indices("put_along_axis", indices)
  shape = get_aval(a).shape
  if axis is None:
    a = _reshape(a, (get_aval(a).size,))
    axis = 0
  ashape = get_aval(a).shape
  ishape = get_aval(indices).shape
  if len(ishape) != len(ashape):
    raise ValueError(f"put_along_axis: arr and indices must have the same number of "
                     f"dimensions, got {len(ashape)} and {len(ishape)}")
  axis = lax.utils.canonicalize_axis(axis, len(ashape), "put_along_axis")
  values = util.ensure_array(values)
  try:
    values = util.broadcast_to_shape(values, util.broadcast_shapes(get_aval(values).shape,
                                                                   ishape))
  except ValueError:
    raise ValueError(f"put_along_axis: values of shape {get_aval(values).shape} do not "
                     f"broadcast to indices of shape {ishape}") from None
  idx = tuple(indices if i == axis else
              np.arange(d).reshape((1,) * i + (d,) + (1,) * (len(ashape) - i - 1))
              for i, d in enumerate(ashape))
  out = _IndexUpdateRef(a, idx).set(values, mode=mode)
  return _reshape(out, shape)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
# (``take_along_axis`` stages its own ``jit`` above.)
util.fuse_functions(
    globals(), ["take", "put_along_axis"], {},
    default_static=("axis", "out", "mode", "unique_indices", "indices_are_sorted",
                    "fill_value", "inplace"),
    staged={"take": "_take", "put_along_axis": "put_along_axis"})
