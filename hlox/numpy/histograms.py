"""Multi-dimensional histograms: ``histogramdd`` and ``histogram2d`` (the 1-d ``histogram``
and its bin edges live in ``statistics``)."""
from __future__ import annotations

import builtins
import math

import numpy as np

from hlox.core.tracer import get_aval
from hlox.numpy import (calculus, creation, index_tricks, searching, shapes, statistics,
                        ufuncs, util)

__all__ = ["histogramdd", "histogram2d"]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """The ``D``-dimensional histogram of ``N`` points.

  Each bin includes its left edge; the last bin along each dimension includes its right edge
  too. Points outside the range are not counted.

  Args:
    sample: array-like of shape ``(N, D)``: one point per row.
    bins: an int (the number of bins for every dimension), or one entry per dimension, each
      an int or a 1-d array of increasing edges.
    range: None, or per dimension a ``(lower, upper)`` pair or None (default: the data's
      minimum and maximum).
    weights: optional array-like of ``N`` weights, each point adding its weight instead of 1.
    density: if True, normalize so the histogram integrates to 1.

  Returns:
    A tuple ``(hist, edges)``: ``hist`` has one axis per dimension (integer counts;
    floating with ``weights`` or ``density``), and ``edges`` is a list of ``D`` 1-d arrays
    of bin edges.

  Examples:
    >>> pts = jnp.array([[0., 0.], [1., 1.], [1., 0.5]])
    >>> hist, edges = jnp.histogramdd(pts, bins=2)
    >>> hist
    Array([[1, 0],
           [0, 2]], dtype=int32)
    >>> edges
    [Array([0. , 0.5, 1. ], dtype=float32), Array([0. , 0.5, 1. ], dtype=float32)]
  """
  util.check_arraylike("histogramdd", sample, *(() if weights is None else (weights,)))
  sample = creation.asarray(sample)
  if weights is None:
    sample, = util.promote_dtypes_inexact(sample)
  else:
    weights = creation.asarray(weights)
    if get_aval(weights).shape != get_aval(sample).shape[:1]:
      raise ValueError(f"histogramdd: should have one weight for each sample; got weights "
                       f"of shape {get_aval(weights).shape} for sample of shape "
                       f"{get_aval(sample).shape}")
    sample, weights = util.promote_dtypes_inexact(sample, weights)
  if get_aval(sample).ndim != 2:
    raise ValueError(f"histogramdd: sample must be 2-d (N points of D coordinates), got "
                     f"shape {get_aval(sample).shape}")
  n, d = get_aval(sample).shape
  if range is not None and (len(range) != d or builtins.any(
      r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"histogramdd: for sample.shape={(n, d)}, range must be a sequence "
                     f"of {d} pairs or Nones; got range={range}")
  try:
    bins_per_dim = list(bins)
  except TypeError:  # one int for every dimension
    bins_per_dim = [bins] * d
  else:
    if len(bins_per_dim) != d:
      raise ValueError(f"histogramdd: should be a bin for each dimension; got {len(bins)} "
                       f"bins for {d} dimensions")

  indices, edges = [], []
  for i in builtins.range(d):
    coord = sample[:, i]
    edge = statistics.histogram_bin_edges(coord, bins_per_dim[i],
                                          None if range is None else range[i], weights)
    # Bin k + 1 holds [edge[k], edge[k+1]); 0 and len(edge) are the outside bins.
    idx = searching.searchsorted(edge, coord, side="right")
    idx = ufuncs.where(coord == edge[-1], idx - 1, idx)
    indices.append(idx)
    edges.append(edge)

  nbins = tuple(get_aval(e).shape[0] + 1 for e in edges)
  flat = index_tricks.ravel_multi_index(tuple(indices), nbins, mode="clip")
  hist = statistics.bincount(flat, weights, length=math.prod(nbins))
  hist = shapes.reshape(hist, nbins)[(slice(1, -1),) * d]
  if density:
    hist = hist.astype(get_aval(sample).dtype)
    hist = hist / hist.sum()
    for width in index_tricks.ix_(*(calculus.diff(e) for e in edges)):
      hist = hist / width
  return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """The 2-d histogram of the points ``(x[i], y[i])``.

  Args:
    x: 1-d array-like of first coordinates.
    y: 1-d array-like of second coordinates, as many as ``x``.
    bins: an int, a pair of ints, a pair of 1-d edge arrays, or one edge array for both axes.
    range: None, or a pair of ``(lower, upper)`` pairs (default: the data's extent).
    weights: optional array-like of weights, one per point.
    density: if True, normalize so the histogram integrates to 1.

  Returns:
    A tuple ``(hist, x_edges, y_edges)``: the 2-d counts (integer; floating with ``weights``
    or ``density``) and the two 1-d edge arrays.

  Examples:
    >>> hist, xe, ye = jnp.histogram2d(jnp.array([0., 1., 1.]), jnp.array([0., 1., 0.5]), bins=2)
    >>> hist
    Array([[1, 0],
           [0, 2]], dtype=int32)
    >>> xe
    Array([0. , 0.5, 1. ], dtype=float32)
  """
  util.check_arraylike("histogram2d", x, y)
  x, y = creation.asarray(x), creation.asarray(y)
  try:
    count = len(bins)
  except TypeError:
    count = 1
  if count not in (1, 2):  # one array of edges, used for both coordinates
    bins = [creation.asarray(bins)] * 2
  sample = shapes.stack([x, y], axis=1)
  hist, edges = histogramdd(sample, bins, range, weights, density)
  return hist, edges[0], edges[1]
