"""``hlox.scipy.linalg``: SciPy's linear-algebra API on ``hlox.lax.linalg`` (JAX's
``jax.scipy.linalg``).

SciPy's ``overwrite_*`` and ``check_finite`` arguments are accepted and ignored, as in JAX:
arrays are immutable and non-finite input simply gives non-finite output.
"""
from __future__ import annotations

from hlox.core.tracer import get_aval
from hlox.custom_derivatives import custom_jvp
from hlox.lax import linalg as lax_linalg
from hlox.numpy import creation, linalg as jnp_linalg, products, shapes, ufuncs
from hlox.numpy import util

__all__ = ["cholesky", "cho_factor", "cho_solve", "lu", "lu_factor", "lu_solve",
           "solve_triangular", "solve", "inv", "det", "qr", "block_diag"]

from hlox.scipy._linalg_spectral import *  # noqa: E402,F401,F403  (eigh, svd, schur, expm, ...)
from hlox.scipy._linalg_spectral import __all__ as _spectral_all  # noqa: E402
from hlox.scipy._linalg_special_matrices import *  # noqa: E402,F401,F403  (toeplitz, hankel, ...)
from hlox.scipy._linalg_special_matrices import __all__ as _special_all  # noqa: E402
from hlox.scipy._linalg_schur import *  # noqa: E402,F401,F403  (rsf2csf, funm, qr_multiply, ...)
from hlox.scipy._linalg_schur import __all__ as _schur_all  # noqa: E402
from hlox.scipy._linalg_tridiagonal import eigh_tridiagonal  # noqa: E402,F401
__all__ += _spectral_all + _special_all + _schur_all + ["eigh_tridiagonal"]


def _inexact(name, *args):
  util.check_arraylike(name, *args)
  return util.promote_dtypes_inexact(*[creation.asarray(a) for a in args])


def _mT(x):
  return shapes.swapaxes(x, -1, -2)


def _check_square(name, a):
  shape = get_aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"{name}: expected a (batch of) square matrices of shape [..., n, n], "
                     f"got {shape}")


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """Cholesky factor of Hermitian positive-definite ``a``: upper ``U`` with ``a = U^H U``
  (default) or lower ``L`` with ``a = L L^H``; only that triangle of ``a`` is read."""
  del overwrite_a, check_finite
  a, = _inexact("cholesky", a)
  _check_square("cholesky", a)
  l = lax_linalg.cholesky(a if lower else ufuncs.conj(_mT(a)), symmetrize_input=False)
  return l if lower else ufuncs.conj(_mT(l))


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """``(c, lower)`` for :func:`cho_solve` (``c`` is the Cholesky factor; unlike SciPy, the
  other triangle holds zeros)."""
  del overwrite_a, check_finite
  return cholesky(a, lower=lower), lower


def _broadcast_solve_operands(name, a, b):
  """Broadcast ``a`` [..., n, n] and ``b`` [..., n, k] (or [n]) to a common batch; returns
  them with ``b`` as matrices and whether ``b`` was a vector."""
  a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
  _check_square(name, a)
  n = a_shape[-1]
  vector = len(b_shape) == 1
  if (vector and b_shape[0] != n) or (not vector and (len(b_shape) < 2 or b_shape[-2] != n)):
    raise ValueError(f"{name}: incompatible shapes a={a_shape} and b={b_shape}: b must be "
                     "[..., n, k] or [n]")
  bm = b[:, None] if vector else b
  batch = util.broadcast_shapes(a_shape[:-2], get_aval(bm).shape[:-2])
  a = shapes.broadcast_to(a, batch + (n, n))
  bm = shapes.broadcast_to(bm, batch + get_aval(bm).shape[-2:])
  return a, bm, vector


def _cho_solve_matrix(c, b, lower):
  b = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  return lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=lower,
                                     conjugate_a=lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """Solve ``a x = b`` from ``cho_factor(a)``."""
  del overwrite_b, check_finite
  c, lower = c_and_lower
  c, b = _inexact("cho_solve", c, b)
  c, bm, vector = _broadcast_solve_operands("cho_solve", c, b)
  x = _cho_solve_matrix(c, bm, lower)
  return x[..., 0] if vector else x


def lu_factor(a, overwrite_a=False, check_finite=True):
  """``(lu, piv)``: the packed LU factors and LAPACK's (0-based) row swaps."""
  del overwrite_a, check_finite
  a, = _inexact("lu_factor", a)
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from
  :func:`lu_factor`'s result."""
  del overwrite_b, check_finite
  lu_, pivots = lu_and_piv
  lu_, b = _inexact("lu_solve", lu_, b)
  m = get_aval(lu_).shape[-2]
  perm = lax_linalg.lu_pivots_to_permutation(creation.asarray(pivots), m)
  lu_b, bm, vector = _broadcast_solve_operands("lu_solve", lu_, b)
  batch = get_aval(lu_b).shape[:-2]
  perm = shapes.broadcast_to(perm, batch + (m,))
  x = lax_linalg.lu_solve(lu_b, perm, bm, trans=trans)
  return x[..., 0] if vector else x


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """``(p, l, u)`` with ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
  del overwrite_a, check_finite
  a, = _inexact("lu", a)
  lu_, _, permutation = lax_linalg.lu(a)
  dtype = get_aval(a).dtype
  m, n = get_aval(a).shape[-2:]
  p = ufuncs.real((permutation[..., None, :] == creation.arange(m, dtype=permutation.dtype)
                   [:, None]).astype(dtype)).astype(dtype)
  k = min(m, n)
  l = creation.tril(lu_, -1)[..., :, :k] + creation.eye(m, k, dtype=dtype)
  u = creation.triu(lu_)[..., :k, :]
  if permute_l:
    return products.matmul(p, l, precision="highest"), u
  return p, l, u


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """Solve ``op(a) x = b`` for triangular ``a``; ``trans`` is 0/'N', 1/'T' or 2/'C'."""
  del overwrite_b, debug, check_finite
  if trans in (0, "N"):
    transpose_a, conjugate_a = False, False
  elif trans in (1, "T"):
    transpose_a, conjugate_a = True, False
  elif trans in (2, "C"):
    transpose_a, conjugate_a = True, True
  else:
    raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = _inexact("solve_triangular", a, b)
  a, bm, vector = _broadcast_solve_operands("solve_triangular", a, b)
  x = lax_linalg.triangular_solve(a, bm, left_side=True, lower=lower,
                                  transpose_a=transpose_a, conjugate_a=conjugate_a,
                                  unit_diagonal=unit_diagonal)
  return x[..., 0] if vector else x


def _pos_solve_fn(a, b, lower):
  return _cho_solve_matrix(cholesky(a, lower=lower), b, lower)


# One Cholesky factorization serves the solve and its derivative: dx = A^-1 (db - dA x).
_pos_solve = custom_jvp(_pos_solve_fn, nondiff_argnums=(2,))


@_pos_solve.defjvp
def _pos_solve_jvp(lower, primals, tangents):
  a, b = primals
  da, db = tangents
  c = cholesky(a, lower=lower)
  x = _cho_solve_matrix(c, b, lower)
  return x, _cho_solve_matrix(c, db - products.matmul(da, x), lower)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
  """Solve ``a x = b``; ``assume_a='pos'`` uses a Cholesky factorization (reading the
  ``lower`` or upper triangle of ``a``), the other kinds an LU factorization."""
  del overwrite_a, overwrite_b, debug, check_finite
  valid = ["gen", "sym", "her", "pos"]
  if assume_a not in valid:
    raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
  if assume_a != "pos":
    return jnp_linalg.solve(a, b)
  a, b = _inexact("solve", a, b)
  a, bm, vector = _broadcast_solve_operands("solve", a, b)
  x = _pos_solve(a, bm, bool(lower))
  return x[..., 0] if vector else x


def inv(a, overwrite_a=False, check_finite=True):
  """Inverse of square ``a``."""
  del overwrite_a, check_finite
  return jnp_linalg.inv(a)


def det(a, overwrite_a=False, check_finite=True):
  """Determinant of square ``a``."""
  del overwrite_a, check_finite
  return jnp_linalg.det(a)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """SciPy's QR: ``mode`` is ``'full'`` (square Q), ``'economic'``, or ``'r'`` (a 1-tuple
  ``(r,)``, as JAX returns); with ``pivoting`` the column permutation comes last."""
  del overwrite_a, lwork, check_finite
  if mode in ("full", "r"):
    full_matrices = True
  elif mode == "economic":
    full_matrices = False
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  a, = _inexact("qr", a)
  q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
  if mode == "r":
    return (r, p[0]) if pivoting else (r,)
  return (q, r, p[0]) if pivoting else (q, r)


def block_diag(*arrs):
  """A block-diagonal matrix of the (at most 2-d) arrays ``arrs``."""
  if not arrs:
    arrs = (creation.zeros((1, 0)),)
  util.check_arraylike("block_diag", *arrs)
  arrs = util.promote_dtypes(*[creation.asarray(a) for a in arrs])
  for i, a in enumerate(arrs):
    if get_aval(a).ndim > 2:
      raise ValueError("Arguments to hlox.scipy.linalg.block_diag must have at most 2 "
                       f"dimensions, got {get_aval(a).shape} at argument {i}.")
  arrs = [shapes.atleast_2d(a) for a in arrs]
  total = sum(get_aval(a).shape[1] for a in arrs)
  rows, col = [], 0
  for a in arrs:
    cols = get_aval(a).shape[1]
    rows.append(shapes.pad(a, ((0, 0), (col, total - cols - col))))
    col += cols
  return shapes.concatenate(rows, axis=0)


# The functions JAX jits without ``inline=True``: eagerly one cached executable each, and a
# nested ``jit`` equation (named as JAX's function is) when traced.
util.fuse_functions(
    globals(), ["cholesky", "lu", "qr", "solve", "solve_triangular", "block_diag",
                "lu_factor", "lu_solve"], {},
    default_static=("lower", "overwrite_a", "overwrite_b", "check_finite", "permute_l",
                    "lwork", "mode", "pivoting", "debug", "assume_a", "trans",
                    "unit_diagonal"),
    staged={"cholesky": "_cholesky", "lu": "lu", "qr": "_qr", "solve": "_solve",
            "solve_triangular": "_solve_triangular", "block_diag": "block_diag",
            "lu_factor": "lu_factor", "lu_solve": "lu_solve"})
