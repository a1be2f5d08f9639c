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
  """The ``D``-dimensional histogram of the ``N`` points ``sample[N, D]``.

  ``bins`` is one int (bins per dimension), or one entry per dimension, each an int or an
  array of edges; ``range`` is a ``(lo, hi)`` pair or None per dimension. Returns
  ``(hist, edges)`` with ``edges`` a list of D arrays. Each bin includes its left edge and
  the last its right edge too; ``density`` normalises so the histogram integrates to 1.
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
  """The 2-d histogram of the points ``(x[i], y[i])``: ``(hist, x_edges, y_edges)``.

  ``bins`` is an int, a pair of ints or of edge arrays, or one edge array for both axes.
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
