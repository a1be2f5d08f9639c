"""Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``)."""
from __future__ import annotations

import math

import numpy as np

from hlox import numpy as jnp
from hlox import random
from hlox.core import dtypes
from hlox.numpy.util import check_arraylike, promote_dtypes_inexact
from hlox.scipy import special
from hlox._tree_transform import register_pytree_node_class

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
  """A Gaussian KDE of ``dataset`` (``(d, n)``: n points in d dimensions), SciPy's API:
  bandwidth ``'scott'`` (default), ``'silverman'``, a scalar factor or a callable of the
  KDE; optional ``weights``. A pytree, so it passes through ``jit`` and ``vmap``."""

  __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

  def __init__(self, dataset, bw_method=None, weights=None):
    check_arraylike("gaussian_kde", dataset)
    dataset = jnp.atleast_2d(dataset)
    if dtypes.issubdtype(dataset.dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("gaussian_kde: `dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is not None:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_dtypes_inexact(dataset, jnp.asarray(weights))
      weights = jnp.atleast_1d(weights)
      weights = weights / jnp.sum(weights)
      if weights.ndim != 1:
        raise ValueError("gaussian_kde: `weights` input should be one-dimensional.")
      if len(weights) != n:
        raise ValueError("gaussian_kde: `weights` input should be of length n")
    else:
      dataset, = promote_dtypes_inexact(dataset)
      weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
    neff = 1 / jnp.sum(weights ** 2)
    self._set("dataset", dataset)
    self._set("weights", weights)
    self._set("neff", neff)
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
      factor = jnp.power(neff, -1.0 / (d + 4))
    elif isinstance(bw_method, str) and bw_method == "silverman":
      factor = jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
    elif jnp.isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("gaussian_kde: `bw_method` should be 'scott', 'silverman', a scalar, "
                       "or a callable.")
    data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
    self._set("covariance", data_cov * factor ** 2)
    self._set("inv_cov", jnp.linalg.inv(data_cov) / factor ** 2)

  def _set(self, name, value):
    object.__setattr__(self, name, value)

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    del aux_data
    kde = cls.__new__(cls)
    for name, value in zip(cls.__slots__, children):
      kde._set(name, value)
    return kde

  @property
  def d(self):
    return self.dataset.shape[0]

  @property
  def n(self):
    return self.dataset.shape[1]

  def _points(self, points):
    points = jnp.asarray(points)
    if dtypes.issubdtype(points.dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    points = jnp.atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        points = jnp.reshape(points, (self.d, 1))
      else:
        raise ValueError(f"gaussian_kde: points have dimension {d}, dataset has dimension "
                         f"{self.d}")
    return points

  def _log_kernels(self, points):
    """``log(w_j) + log N(x_i; data_j, covariance)`` as an ``(m, n)`` array."""
    data, weights, xi, prec = promote_dtypes_inexact(self.dataset, self.weights, points,
                                                     self.inv_cov)
    # Whiten with the Cholesky factor of the precision: distances become Euclidean.
    whiten = jnp.linalg.cholesky(prec)
    data_w = data.T @ whiten
    xi_w = xi.T @ whiten
    log_norm = (jnp.sum(jnp.log(jnp.diagonal(whiten)))
                - 0.5 * self.d * math.log(2 * math.pi))
    sq = jnp.sum(jnp.square(xi_w[:, None, :] - data_w[None, :, :]), axis=-1)
    return jnp.log(weights)[None, :] + log_norm - 0.5 * sq

  def evaluate(self, points):
    """The estimated density at ``points`` (``(d, m)``)."""
    check_arraylike("evaluate", points)
    return jnp.sum(jnp.exp(self._log_kernels(self._points(points))), axis=1)

  __call__ = evaluate

  def pdf(self, x):
    """The estimated density (same as ``evaluate``)."""
    return self.evaluate(x)

  def logpdf(self, x):
    """Log of the estimated density, summed in log space."""
    check_arraylike("logpdf", x)
    return special.logsumexp(self._log_kernels(self._points(x)), axis=1)

  def _convolve(self, cov, mean_points, data, weights):
    """``sum_j w_j N(mean; data_j, cov)`` for each column of ``mean_points``."""
    chol = jnp.linalg.cholesky(cov)
    norm = 1.0 / (math.sqrt(2 * math.pi) ** self.d * jnp.prod(jnp.diagonal(chol)))
    diff = data[:, None, :] - mean_points[:, :, None]  # (d, m, n)
    z = jnp.linalg.solve(jnp.broadcast_to(chol, (diff.shape[1], self.d, self.d)),
                         jnp.moveaxis(diff, 0, 1))  # (m, d, n)
    quad = jnp.sum(z * z, axis=1)
    return norm * jnp.sum(jnp.exp(-0.5 * quad) * weights, axis=-1)

  def integrate_gaussian(self, mean, cov):
    """The integral of the KDE times the Gaussian N(mean, cov)."""
    mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
    cov = jnp.atleast_2d(jnp.asarray(cov))
    if mean.shape != (self.d,):
      raise ValueError(f"gaussian_kde.integrate_gaussian: mean does not have dimension "
                       f"{self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"gaussian_kde.integrate_gaussian: covariance does not have dimension "
                       f"{self.d}")
    return self._convolve(self.covariance + cov, mean[:, None], self.dataset, self.weights)[0]

  def integrate_box_1d(self, low, high):
    """The mass of a 1-D KDE between ``low`` and ``high``."""
    if self.d != 1:
      raise ValueError("gaussian_kde.integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("gaussian_kde.integrate_box_1d: the limits of integration must be "
                       "scalars")
    sigma = jnp.squeeze(jnp.sqrt(self.covariance))
    lo = jnp.squeeze((low - self.dataset) / sigma)
    hi = jnp.squeeze((high - self.dataset) / sigma)
    return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

  def integrate_kde(self, other):
    """The integral of the product of two KDEs."""
    if other.d != self.d:
      raise ValueError("gaussian_kde.integrate_kde: KDEs are not the same dimensionality")
    small, large = (self, other) if self.n < other.n else (other, self)
    per_point = self._convolve(self.covariance + other.covariance, small.dataset,
                               large.dataset, large.weights)
    return jnp.sum(per_point * small.weights)

  def resample(self, key, shape=()):
    """Draw ``shape`` samples (returned as ``(d,) + shape``): a data point by weight, plus
    Gaussian noise of the kernel's covariance."""
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
    eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                     self.covariance, shape=shape, dtype=self.dataset.dtype)
    return self.dataset[:, ind] + jnp.moveaxis(eps, -1, 0)

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not supported (as in JAX): use ``integrate_box_1d``."""
    del low_bounds, high_bounds, maxpts
    raise NotImplementedError("gaussian_kde: only 1D box integrations are supported; use "
                              "`integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    """Not supported (as in JAX): a KDE's bandwidth is fixed at construction."""
    del bw_method
    raise NotImplementedError("gaussian_kde: dynamically changing the bandwidth method is "
                              "not supported")
