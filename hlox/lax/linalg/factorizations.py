"""Factorizations and solves: cholesky, triangular_solve, lu, lu_pivots_to_permutation, qr
(geqrf, householder_product), tridiagonal_solve.

Each primitive has its rules beside it: abstract evaluation over batch dimensions, JVP
(transpose where linear), batching, and a CPU lowering to jaxlib's LAPACK FFI kernels (see
``lapack.py``). Where JAX lowers a primitive by composition (``lu_pivots_to_permutation``,
``qr``) that composition is the platform-less default, so every platform has it.
"""
from __future__ import annotations

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import control_flow, elementwise as ew, indexing, shapes
from hlox.lax.linalg import lapack
from hlox.lax.linalg.common import (H, T, check_dtypes, eye_like, linalg_primitive, matmul,
                                    symmetrize, tril, triu)

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

__all__ = ["cholesky", "triangular_solve", "cholesky_p", "triangular_solve_p"]


# --- cholesky ------------------------------------------------------------------------------

def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor ``L`` of Hermitian positive-definite matrices
  ``x = L @ L^H`` (``[..., n, n]``).

  With ``symmetrize_input`` the factorization sees ``(x + x^H) / 2``; without, only the lower
  triangle of ``x`` is read. Matrices that are not positive definite give NaNs.
  """
  if symmetrize_input:
    x = symmetrize(x)
  return tril(cholesky_p.bind(x))


def _cholesky_core_shape(shape):
  if shape[0] != shape[1]:
    raise ValueError(f"The input to cholesky must be a square matrix. Got shape {shape}.")
  return shape


cholesky_p = linalg_primitive("cholesky", (2,), _cholesky_core_shape)


def _cholesky_jvp(primals, tangents):
  x, = primals
  dx, = tangents
  L = tril(cholesky_p.bind(x))
  # dL = L phi(L^-1 dX L^-H), phi taking the lower triangle with a halved diagonal
  # (Murray 2016, arXiv:1602.07527).
  tmp = triangular_solve(L, ad.instantiate_zeros(dx), left_side=False, transpose_a=True,
                         conjugate_a=True, lower=True)
  inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
  n = get_aval(x).shape[-1]
  halve = ew.add(shapes.full_like(inner, 1), eye_like(inner))
  return L, matmul(L, ew.div(tril(inner), halve)) if n else inner


ad.primitive_jvps[cholesky_p] = _cholesky_jvp


def _cholesky_cpu_lowering(ctx, x):
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  result, info = lapack.ffi_call(
      lapack.lapack_target("potrf", aval.dtype), [x], [aval],
      [aval, lapack.info_aval(batch)], operand_output_aliases={0: 0},
      uplo=lapack.uplo_attr(True))
  ok = lapack.info_ok(info, batch)
  return lapack.replace_not_ok_with_nan(result, ok, ctx.avals_out[0], batch)


xla.register_lowering(cholesky_p, _cholesky_cpu_lowering, platform="cpu")


def _cholesky_lowering(ctx, x):
  # The portable default (XLA expands it on platforms without a library call).
  return hlo.cholesky(x, lower=ir.BoolAttr.get(True))


xla.register_lowering(cholesky_p, _cholesky_lowering)


# --- triangular_solve ----------------------------------------------------------------------

def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
  """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``.

  ``a`` is ``[..., m, m]``; only its ``lower`` (or upper) triangle is read, and with
  ``unit_diagonal`` not its diagonal either. ``op`` transposes with ``transpose_a`` and
  conjugates with ``conjugate_a``. ``b`` is ``[..., m, n]`` (``left_side``) or
  ``[..., n, m]``; a ``b`` of one dimension less than ``a`` is a single vector.
  """
  a_aval, b_aval = get_aval(a), get_aval(b)
  conjugate_a = bool(conjugate_a) and dtypes.is_complex(a_aval.dtype)
  singleton = b_aval.ndim == a_aval.ndim - 1
  if singleton:
    b = shapes.expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    nd = get_aval(out).ndim
    out = shapes.squeeze(out, (nd - 1 if left_side else nd - 2,))
  return out


def _triangular_solve_core_shape(a_shape, b_shape, *, left_side, **_):
  if a_shape[0] != a_shape[1]:
    raise ValueError("The first input to triangular_solve must be a square matrix. Got "
                     f"shape {a_shape}.")
  common = b_shape[-2] if left_side else b_shape[-1]
  if a_shape[-1] != common:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a_shape} and "
                     f"{b_shape}.")
  return b_shape


triangular_solve_p = linalg_primitive("triangular_solve", (2, 2),
                                      _triangular_solve_core_shape)


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  m, n = get_aval(b).shape[-2:]
  k = 1 if unit_diagonal else 0
  g_a = tril(g_a, -k) if lower else triu(g_a, k)
  g_a = ew.neg(g_a)
  g_a = T(g_a) if transpose_a else g_a
  g_a = ew.conj(g_a) if conjugate_a else g_a

  def a_inverse(rhs):
    return triangular_solve(a, rhs, left_side=left_side, lower=lower,
                            transpose_a=transpose_a, conjugate_a=conjugate_a,
                            unit_diagonal=unit_diagonal)

  # d(A^-1 B) = -A^-1 dA A^-1 B: multiply in the cheaper order.
  if left_side:
    return a_inverse(matmul(g_a, ans)) if m > n else matmul(a_inverse(g_a), ans)
  return a_inverse(matmul(ans, g_a)) if m < n else matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
  return triangular_solve_p.bind(a, g_b, **params)


ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  # Linear in b only (like div in its numerator).
  if ad.is_undefined_primal(a):
    raise ValueError("triangular_solve is not linear in its first argument")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                 transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                 unit_diagonal=unit_diagonal)
  return [None, ct_b]


ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose


def _triangular_solve_batch_rule(vals, dims, **params):
  a, b = vals
  da, db = dims
  if da is None:
    # One matrix for the whole batch: fold the mapped axis of b into its right-hand sides
    # (columns when solving on the left, rows on the right), one call instead of many.
    b_aval = get_aval(b)
    nd = b_aval.ndim
    if params["left_side"]:
      b = batching.moveaxis(b, db, nd - 1)
      shape = get_aval(b).shape
      flat = shapes.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
      out = triangular_solve_p.bind(a, flat, **params)
      return shapes.reshape(out, shape), nd - 1
    b = batching.moveaxis(b, db, nd - 2)
    shape = get_aval(b).shape
    flat = shapes.reshape(b, shape[:-3] + (shape[-3] * shape[-2], shape[-1]))
    out = triangular_solve_p.bind(a, flat, **params)
    return shapes.reshape(out, shape), nd - 2
  size = get_aval(a).shape[da]
  a = batching.bdim_at_front(a, da, size)
  b = batching.bdim_at_front(b, db, size)
  return triangular_solve_p.bind(a, b, **params), 0


batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch_rule


def _conj_for_solve(a, aval, transpose_a, conjugate_a):
  # trsm conjugates only together with a transpose ('C'); conjugate first otherwise.
  if conjugate_a and not transpose_a:
    return chlo.conj(a), False
  return a, conjugate_a


def _triangular_solve_lowering(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
  a, conjugate_a = _conj_for_solve(a, ctx.avals_in[0], transpose_a, conjugate_a)
  transpose = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
  return hlo.triangular_solve(a, b, ir.BoolAttr.get(left_side), ir.BoolAttr.get(lower),
                              ir.BoolAttr.get(unit_diagonal),
                              hlo.TransposeAttr.get(transpose))


def _triangular_solve_cpu_lowering(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                   unit_diagonal):
  a_aval, b_aval = ctx.avals_in
  a, conjugate_a = _conj_for_solve(a, a_aval, transpose_a, conjugate_a)
  out, = lapack.ffi_call(
      lapack.lapack_target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval], [b_aval],
      operand_output_aliases={1: 0}, side=lapack.side_attr(left_side),
      uplo=lapack.uplo_attr(lower), trans_x=lapack.transpose_attr(transpose_a, conjugate_a),
      diag=lapack.diag_attr(unit_diagonal))
  return out


xla.register_lowering(triangular_solve_p, _triangular_solve_lowering)
xla.register_lowering(triangular_solve_p, _triangular_solve_cpu_lowering, platform="cpu")
