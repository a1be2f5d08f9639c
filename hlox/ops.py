"""``hlox.ops``: segment reductions (JAX's ``jax.ops``).

``segment_sum(data, segment_ids, num_segments)`` reduces the rows of ``data`` that share a
segment id: ``out[s] = sum(data[i] for i where segment_ids[i] == s)``, as one scatter into an
array filled with the reduction's identity (so an empty segment holds 0 for a sum, 1 for a
product, the dtype's largest value for a min and its smallest for a max). Ids outside
``[0, num_segments)`` (negative ones included) are dropped by default (``mode='drop'``).
``bucket_size`` splits the rows into buckets reduced separately and then combined, which
keeps long float sums and products more accurate.
"""
from __future__ import annotations

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.lax.indexing import GatherScatterMode
from hlox.numpy import indexing as _indexing

__all__ = ["segment_sum", "segment_prod", "segment_min", "segment_max"]


def _identity(op: str, dtype):
  dtype = np.dtype(dtype)
  if op == "sum":
    return np.zeros((), dtype)
  if op == "prod":
    return np.ones((), dtype)
  if dtype == np.bool_:
    return np.array(op == "min")
  if dtypes.is_inexact(dtype):
    return np.array(np.inf if op == "min" else -np.inf, dtype)
  info = np.iinfo(dtype)
  return np.array(info.max if op == "min" else info.min, dtype)


_SCATTERS = {"sum": lax.scatter_add, "prod": lax.scatter_mul, "min": lax.scatter_min,
             "max": lax.scatter_max}
_REDUCERS = {"sum": jnp.sum, "prod": jnp.prod, "min": jnp.min, "max": jnp.max}


def _segment_reduce(op, data, segment_ids, num_segments, indices_are_sorted, unique_indices,
                    bucket_size, mode):
  name = f"segment_{op}"
  for what, value in (("data", data), ("segment_ids", segment_ids)):
    if not (hasattr(value, "shape") or isinstance(value, (int, float, bool, complex,
                                                          np.generic))):
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(value)} for "
                      f"{what}")
  data = jnp.asarray(data)
  segment_ids = jnp.asarray(segment_ids)
  if not dtypes.is_int(segment_ids.dtype) and not dtypes.is_unsigned_int(segment_ids.dtype):
    raise TypeError(f"{name}: segment_ids must be integers, got {segment_ids.dtype}")
  if num_segments is None:
    try:
      num_segments = int(np.max(np.asarray(segment_ids))) + 1
    except Exception as e:  # a traced segment_ids: the size is not known
      raise type(e)(f"{name}: num_segments must be given when segment_ids is traced "
                    f"({e})") from e
  num_segments = operator_index(num_segments, name)
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
  dtype = get_aval(data).dtype
  scatter = _SCATTERS[op]
  fill = _identity(op, dtype)
  if bucket_size is None:
    out = jnp.full((num_segments,) + data.shape[1:], fill, dtype=dtype)
    return _indexing._scatter_update(out, segment_ids, data, scatter,
                                     indices_are_sorted=indices_are_sorted,
                                     unique_indices=unique_indices, mode=mode, normalize=False)
  num_buckets = -(-segment_ids.size // bucket_size)
  out = jnp.full((num_buckets, num_segments) + data.shape[1:], fill, dtype=dtype)
  index = (jnp.arange(segment_ids.shape[0]) // bucket_size, segment_ids[None, :])
  out = _indexing._scatter_update(out, index, data, scatter,
                                  indices_are_sorted=indices_are_sorted,
                                  unique_indices=unique_indices, mode=mode, normalize=False)
  return _REDUCERS[op](out, axis=0).astype(dtype)


def operator_index(value, name) -> int:
  try:
    return int(np.asarray(value).item()) if hasattr(value, "shape") else int(value)
  except Exception as e:
    raise TypeError(f"{name}: num_segments must be a concrete integer, got {value!r}") from e


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Sum of the rows of ``data`` in each segment (see the module docstring)."""
  return _segment_reduce("sum", data, segment_ids, num_segments, indices_are_sorted,
                         unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
  """Product of the rows of ``data`` in each segment (1 for an empty one)."""
  return _segment_reduce("prod", data, segment_ids, num_segments, indices_are_sorted,
                         unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Minimum of the rows of ``data`` in each segment (the dtype's largest value, or
  ``inf``, for an empty one)."""
  return _segment_reduce("min", data, segment_ids, num_segments, indices_are_sorted,
                         unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Maximum of the rows of ``data`` in each segment (the dtype's smallest value, or
  ``-inf``, for an empty one)."""
  return _segment_reduce("max", data, segment_ids, num_segments, indices_are_sorted,
                         unique_indices, bucket_size, mode)
