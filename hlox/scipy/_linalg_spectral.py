"""The spectral part of ``hlox.scipy.linalg``: ``eigh``, ``svd``, ``schur``, ``hessenberg``,
``polar``, ``sqrtm``, ``expm`` and ``expm_frechet``, with JAX's semantics (``jax.scipy.linalg``)
on the ``hlox.lax.linalg`` primitives.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from hlox import api, autodiff, lax
from hlox.core.tracer import get_aval
from hlox.lax import linalg as lax_linalg
from hlox.numpy import linalg as jnp_linalg, util
import hlox.numpy as jnp

__all__ = ["eigh", "svd", "schur", "hessenberg", "polar", "sqrtm", "expm", "expm_frechet"]


def _inexact(a):
  a, = util.promote_dtypes_inexact(jnp.asarray(a))
  return a


def _H(x):
  return jnp.conj(jnp.swapaxes(x, -1, -2))


def _dot(a, b):
  return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
  """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix: ``(w, v)``, or ``w``
  with ``eigvals_only``. Only the standard problem (``b=None``, ``type=1``) is implemented,
  as in JAX."""
  del overwrite_a, overwrite_b, turbo, check_finite
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  v, w = lax_linalg.eigh(_inexact(a), lower=lower)
  return w if eigvals_only else (w, v)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """Singular value decomposition: ``(u, s, vh)``, or ``s`` without ``compute_uv``."""
  del overwrite_a, check_finite, lapack_driver
  return lax_linalg.svd(_inexact(a), full_matrices=full_matrices, compute_uv=compute_uv)


def schur(a, output="real"):
  """Schur decomposition ``a = z @ t @ z^H``: ``(t, z)``; ``output='complex'`` gives the
  complex (triangular) form of a real matrix. CPU only."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                     f"output={output!r}.")
  a = _inexact(a)
  if output == "complex":
    a = a.astype(np.result_type(get_aval(a).dtype, np.complex64))
  return lax_linalg.schur(a)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """Upper Hessenberg form ``h`` of a square matrix (and ``q`` with ``a = q @ h @ q^H`` when
  ``calc_q``). CPU only."""
  del overwrite_a, check_finite
  a = _inexact(a)
  n = get_aval(a).shape[-1]
  if n == 0:
    return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
  a_out, taus = lax_linalg.hessenberg(a)
  h = jnp.triu(a_out, -1)
  if not calc_q:
    return h
  dtype = get_aval(a_out).dtype
  q = lax_linalg.householder_product(a_out[..., 1:, :-1], taus)
  batch = get_aval(a_out).shape[:-2]
  top = jnp.concatenate([jnp.ones(batch + (1, 1), dtype), jnp.zeros(batch + (1, n - 1), dtype)],
                        axis=-1)
  bottom = jnp.concatenate([jnp.zeros(batch + (n - 1, 1), dtype), q], axis=-1)
  return h, jnp.concatenate([top, bottom], axis=-2)


# --- polar ---------------------------------------------------------------------------------

def _polar_svd(a, side):
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  s = s.astype(get_aval(u).dtype)
  unitary = _dot(u, vh)
  if side == "right":
    posdef = _dot(_H(vh) * s[..., None, :], vh)
  else:
    posdef = _dot(u * s[..., None, :], _H(u))
  return unitary, posdef


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
  """Polar decomposition ``a = u @ p`` (``side='right'``) or ``a = p @ u`` (``'left'``):
  ``u`` has orthonormal columns (rows), ``p`` is Hermitian positive semi-definite.

  Both methods are computed here through the SVD; ``method='qdwh'`` keeps JAX's shape
  restrictions for it.
  """
  del eps, max_iterations
  arr = _inexact(a)
  shape = get_aval(arr).shape
  if len(shape) < 2:
    raise ValueError("The input `a` must be at least a 2-D array.")
  if side not in ("right", "left"):
    raise ValueError("The argument `side` must be either 'right' or 'left'.")
  if method not in ("qdwh", "svd"):
    raise ValueError(f"Unknown polar decomposition method {method}.")
  m, n = shape[-2:]
  if method == "qdwh" and not ((m >= n and side == "right") or (m < n and side == "left")):
    raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where "
                              f"side='right' and m >= n side='left', got {shape} with "
                              f"side={side!r}")
  return _polar_svd(arr, side)


# --- sqrtm ---------------------------------------------------------------------------------

def _sqrtm_triu(t):
  """The upper-triangular square root of the upper-triangular ``t`` (Björck & Hammarling),
  column by column."""
  diag = jnp.sqrt(jnp.diagonal(t))
  n = get_aval(diag).shape[0]
  u = jnp.diag(diag)

  def i_loop(l, data):
    j, u = data
    i = j - 1 - l
    s = lax.fori_loop(i + 1, j, lambda k, val: val + u[i, k] * u[k, j],
                      jnp.zeros((), get_aval(t).dtype))
    value = jnp.where(t[i, j] == s, 0.0, (t[i, j] - s) / (diag[i] + diag[j]))
    return j, u.at[i, j].set(value)

  def j_loop(j, u):
    _, u = lax.fori_loop(0, j, i_loop, (j, u))
    return u

  return lax.fori_loop(0, n, j_loop, u)


def sqrtm(A, blocksize=1):
  """Principal square root of a square matrix, through the complex Schur form (complex
  result, as JAX). CPU only."""
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  a = _inexact(A)
  shape = get_aval(a).shape
  if len(shape) != 2 or shape[0] != shape[1]:
    raise ValueError(f"sqrtm: expected a square matrix, got shape {shape}")
  t, z = schur(a, output="complex")
  return _dot(_dot(z, _sqrtm_triu(t)), _H(z))


# --- expm ----------------------------------------------------------------------------------

# Padé coefficients b_0..b_m of the [m/m] approximants (Higham 2005).
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _pade(m, a):
  """``(U, V)``: the odd and even parts of the degree-``m`` Padé numerator."""
  b = _PADE[m]
  n = get_aval(a).shape[0]
  ident = jnp.eye(n, dtype=get_aval(a).dtype)
  a2 = _dot(a, a)
  if m == 13:
    a4 = _dot(a2, a2)
    a6 = _dot(a4, a2)
    u = _dot(a, _dot(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
             + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = (_dot(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2
         + b[0] * ident)
    return u, v
  powers = [ident, a2]
  while len(powers) <= m // 2:
    powers.append(_dot(powers[-1], a2))
  odd = sum(b[2 * k + 1] * powers[k] for k in range(m // 2 + 1))
  even = sum(b[2 * k] * powers[k] for k in range(m // 2 + 1))
  return _dot(a, odd), even


def _calc_p_q(a):
  a_l1 = jnp_linalg.norm(a, 1)
  dtype = get_aval(a).dtype
  if dtype in (np.float64, np.complex128):
    maxnorm = 5.371920351148152
    conds = np.array([1.495585217958292e-002, 2.539398330063230e-001,
                      9.504178996162932e-001, 2.097847961257068e+000])
    degrees = (3, 5, 7, 9, 13)
  elif dtype in (np.float32, np.complex64):
    maxnorm = 3.925724783138660
    conds = np.array([4.258730016922831e-001, 1.880152677804762e+000])
    degrees = (3, 5, 7)
  else:
    raise TypeError(f"A.dtype={dtype} is not supported.")
  n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(a_l1 / maxnorm)))
  a = a / (2 ** n_squarings).astype(dtype)
  idx = jnp.digitize(a_l1, conds.astype(get_aval(a_l1).dtype))
  u, v = lax.switch(idx, [partial(_pade, m) for m in degrees], a)
  return u + v, -u + v, n_squarings


def _squaring(r, n_squarings, max_squarings):
  def step(c, i):
    return lax.cond(i < n_squarings, lambda x: _dot(x, x), lambda x: x, c), None
  res, _ = lax.scan(step, r, jnp.arange(max_squarings, dtype=get_aval(n_squarings).dtype))
  return res


def expm(A, *, upper_triangular=False, max_squarings=16):
  """Matrix exponential by scaling and squaring with a Padé approximant (Higham 2005), as
  JAX: NaN when more than ``max_squarings`` squarings would be needed. Batched over leading
  dimensions."""
  a = _inexact(A)
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
  if len(shape) > 2:
    flat = jnp.reshape(a, (-1,) + shape[-2:])
    out = api.vmap(partial(expm, upper_triangular=upper_triangular,
                           max_squarings=max_squarings))(flat)
    return jnp.reshape(out, shape)
  p, q, n_squarings = _calc_p_q(a)

  def compute(args):
    p, q = args
    if upper_triangular:
      r = lax_linalg.triangular_solve(q, p, left_side=True, lower=False)
    else:
      r = jnp_linalg.solve(q, p)
    return _squaring(r, n_squarings, max_squarings)

  return lax.cond(n_squarings > max_squarings, lambda args: jnp.full_like(args[0], np.nan),
                  compute, (p, q))


def expm_frechet(A, E, *, method=None, compute_expm=True):
  """The Fréchet derivative of ``expm`` at ``A`` in direction ``E`` (a JVP of ``expm``):
  ``(expm(A), L(A, E))``, or only ``L(A, E)`` without ``compute_expm``."""
  del method
  a, e = jnp.asarray(A), jnp.asarray(E)
  a_shape, e_shape = get_aval(a).shape, get_aval(e).shape
  if len(a_shape) < 2 or a_shape[-2] != a_shape[-1]:
    raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={a_shape}")
  if len(e_shape) < 2 or e_shape[-2] != e_shape[-1]:
    raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={e_shape}")
  if a_shape != e_shape:
    raise ValueError(f"expected A and E to be the same shape, got A.shape={a_shape} "
                     f"E.shape={e_shape}")
  expm_a, frechet = autodiff.jvp(partial(expm, upper_triangular=False, max_squarings=16), (a,),
                            (e,))
  return (expm_a, frechet) if compute_expm else frechet


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["svd", "eigh", "schur", "expm", "expm_frechet", "polar", "sqrtm",
                "hessenberg"], {},
    default_static=("full_matrices", "compute_uv", "overwrite_a", "overwrite_b",
                    "check_finite", "lapack_driver", "lower", "eigvals_only", "turbo",
                    "eigvals", "type", "output", "upper_triangular", "max_squarings",
                    "method", "compute_expm", "side", "blocksize", "calc_q"),
    staged={"svd": "_svd", "eigh": "_eigh", "schur": "_schur", "expm": "expm",
            "expm_frechet": "expm_frechet", "polar": "polar", "sqrtm": "_sqrtm",
            "hessenberg": "hessenberg"})
