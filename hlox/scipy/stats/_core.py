"""Sample statistics of ``jax.scipy.stats``: ``mode``, ``rankdata``, ``sem``."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlox import api
from hlox import lax
from hlox import numpy as jnp
from hlox.core import dtypes
from hlox.numpy.util import check_arraylike, promote_args_inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(name, nan_policy):
  if nan_policy not in _NAN_POLICIES:
    raise ValueError(f"{name}: illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "omit":
    raise NotImplementedError(f"{name}: nan_policy='omit' is not implemented")
  if nan_policy == "raise":
    raise NotImplementedError(f"{name}: nan_policy='raise' would need to look at the values; "
                              "check for NaNs outside the function")


class ModeResult(NamedTuple):
  mode: object
  count: object


def _canonical_axis(axis, ndim, name):
  if not -ndim <= axis < ndim:
    raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
  return axis % ndim


def _mode_1d(x):
  """The smallest most frequent value of a 1-D array and its count, by sorting: runs of
  equal values are counted with a scatter-add over their run index."""
  n = x.shape[0]
  s = jnp.sort(x)
  same = (s[1:] == s[:-1]) | (jnp.isnan(s[1:]) & jnp.isnan(s[:-1]))
  starts = jnp.concatenate([jnp.ones((1,), bool), ~same])
  run = jnp.cumsum(starts) - 1
  counts = jnp.zeros((n,), dtypes.canonicalize_dtype(np.int64)).at[run].add(1)
  best = jnp.argmax(counts)
  first = jnp.argmax(run == best)
  return s[first], counts[best]


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
  """The most common value along ``axis`` (the smallest one on ties) and how often it
  occurs, as ``ModeResult(mode, count)``; ``axis=None`` looks at the flattened array."""
  check_arraylike("mode", a)
  x = jnp.atleast_1d(a)
  _check_nan_policy("mode", nan_policy)
  if axis is not None:
    axis = _canonical_axis(axis, x.ndim, "mode")
  shape = x.shape
  if keepdims:
    out_shape = tuple(1 for _ in shape) if axis is None else tuple(
        1 if i == axis else s for i, s in enumerate(shape))
  else:
    out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
  if axis is None:
    x, axis = jnp.ravel(x), 0
  if x.size == 0:
    fdt = dtypes.canonicalize_dtype(np.float64)
    return ModeResult(jnp.full(out_shape, np.nan, fdt), jnp.zeros(out_shape, fdt))
  x = jnp.moveaxis(x, axis, 0)
  cols = x.reshape(x.shape[0], -1)
  vals, counts = api.vmap(_mode_1d, in_axes=1)(cols)
  return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def _rank_1d(a, method, out_dtype):
  n = a.shape[0]
  sorter = jnp.argsort(a, stable=True)
  s = a[sorter]
  inv = jnp.zeros((n,), sorter.dtype).at[sorter].set(jnp.arange(n, dtype=sorter.dtype))
  if method == "ordinal":
    return (inv + 1).astype(out_dtype)
  starts = jnp.concatenate([jnp.ones((1,), bool), s[1:] != s[:-1]])
  dense = jnp.cumsum(starts)[inv]
  if method == "dense":
    return dense.astype(out_dtype)
  # Where each run starts in sorted order, then n: run r covers [edge[r], edge[r + 1]).
  edge = jnp.nonzero(starts, size=n + 1, fill_value=n)[0].astype(out_dtype)
  if method == "max":
    return edge[dense]
  if method == "min":
    return edge[dense - 1] + 1
  return 0.5 * (edge[dense] + edge[dense - 1] + 1)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """Ranks of the data (1-based, ties by ``method``: 'average', 'min', 'max', 'dense' or
  'ordinal') over the flattened array or along ``axis``; all NaN if a NaN is present."""
  check_arraylike("rankdata", a)
  _check_nan_policy("rankdata", nan_policy)
  if method not in _RANK_METHODS:
    raise ValueError(f"rankdata: unknown method '{method}'")
  a = jnp.asarray(a)
  if axis is not None:
    return jnp.apply_along_axis(lambda v: rankdata(v, method), axis, a)
  a = jnp.ravel(a)
  out_dtype = dtypes.canonicalize_dtype(np.float64)
  ranks = _rank_1d(a, method, out_dtype)
  has_nan = jnp.any(jnp.isnan(a)) if dtypes.issubdtype(a.dtype, np.inexact) else False
  return jnp.where(has_nan, np.nan, ranks).astype(out_dtype)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """The standard error of the mean ``std(a, ddof) / sqrt(n)`` along ``axis``
  (``nan_policy='omit'`` ignores NaNs)."""
  b, = promote_args_inexact("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return jnp.std(b, axis, ddof=ddof, keepdims=keepdims) / np.sqrt(size).astype(b.dtype)
  if nan_policy == "omit":
    count = jnp.sum(~jnp.isnan(b), axis, keepdims=keepdims)
    return (jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
            / jnp.sqrt(count).astype(b.dtype))
  raise ValueError(f"sem: nan_policy={nan_policy!r} is not supported")


del lax
