"""``hlox.scipy.cluster.vq``: vector quantization (``vq``), as ``jax.scipy.cluster.vq``."""
from __future__ import annotations

from hlox import numpy as jnp
from hlox.api import vmap
from hlox.numpy.util import check_arraylike, promote_dtypes_inexact

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
  """``(codes, distances)``: for each observation (a row of ``obs``, or an entry when 1-D)
  the index of the nearest code in ``code_book`` (Euclidean distance; the first on ties)
  and its distance. ``check_finite`` is ignored, as in JAX."""
  del check_finite
  check_arraylike("scipy.cluster.vq.vq", obs, code_book)
  obs, code_book = promote_dtypes_inexact(obs, code_book)
  if obs.ndim != code_book.ndim:
    raise ValueError("vq: observation and code_book should have the same rank, got shapes "
                     f"{obs.shape} and {code_book.shape}")
  if obs.ndim == 1:
    obs, code_book = obs[..., None], code_book[..., None]
  if obs.ndim != 2:
    raise ValueError(f"vq: ndim different than 1 or 2 are not supported, got {obs.ndim}")
  dist = vmap(lambda ob: jnp.linalg.norm(ob[None] - code_book, axis=-1))(obs)
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]
