"""Factorizations and solves: cholesky, triangular_solve, lu, lu_pivots_to_permutation, qr
(geqrf, householder_product), tridiagonal_solve.

Each primitive has its rules beside it: abstract evaluation over batch dimensions, JVP
(transpose where linear), batching, and lowerings as JAX's: on CPU to jaxlib's LAPACK FFI
kernels (see ``lapack.py``), on CUDA and ROCm to cuSOLVER/hipSOLVER, cuSPARSE and the GPU
plugins' own kernels (see ``gpu.py``), and on TPU to the custom calls XLA implements there
(``LuDecomposition``, ``Qr``, ``ProductOfElementaryHouseholderReflectors``). Where JAX lowers a
primitive by composition (``lu_pivots_to_permutation``, ``qr``, ``tridiagonal_solve`` on TPU)
that composition is the platform-less default, so every platform has it. Where JAX has no
rule for a platform (``geqp3`` on TPU) there is none here either.
"""
from __future__ import annotations

import math

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import control_flow, elementwise as ew, indexing, reductions, shapes, sorting
from hlox.lax.linalg import lapack
from hlox.lax.linalg.gpu import magma_attr, register_gpu_lowering, solver_target
from hlox.lax.linalg.common import (H, T, check_dtypes, eye_like, linalg_primitive, matmul,
                                    symmetrize, tril, triu)

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

__all__ = ["cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "lu_solve", "qr",
           "geqrf", "geqp3", "householder_product",
           "cholesky_p", "triangular_solve_p", "lu_p", "lu_pivots_to_permutation_p", "qr_p",
           "geqrf_p", "geqp3_p", "householder_product_p", "tridiagonal_solve",
           "tridiagonal_solve_p"]


def _xla_library_call(target: str, operands, avals_out, api_version: int = 1) -> list:
  """A custom call that XLA implements itself (on TPU: ``Qr``, ``LuDecomposition``...), as
  JAX emits it: no layouts, aliases or attributes, only the operands and result types."""
  op = hlo.CustomCallOp.build_generic(
      results=[xla.aval_to_ir_type(a) for a in avals_out], operands=list(operands),
      attributes={"call_target_name": ir.StringAttr.get(target),
                  "has_side_effect": ir.BoolAttr.get(False),
                  "api_version": xla.i32_attr(api_version),
                  "backend_config": ir.StringAttr.get("")})
  return list(op.results)


# --- cholesky ------------------------------------------------------------------------------

def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor ``L`` of Hermitian positive-definite matrices, ``x = L @ L^H``.

  With ``symmetrize_input`` the factorization sees ``(x + x^H) / 2``; without, only the lower
  triangle of ``x`` is read. Matrices that are not positive definite give NaNs (no error).
  Batched over leading dimensions; differentiable.

  Args:
    x: array of shape ``[..., n, n]``.
    symmetrize_input: keyword-only; symmetrize ``x`` first.

  Returns:
    The lower-triangular factor, of ``x``'s shape and dtype.

  Examples:
    >>> lax.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]))
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)
  """
  shape = get_aval(x).shape
  if symmetrize_input:
    if len(shape) >= 2 and shape[-1] != shape[-2]:
      # JAX fails here too, in the addition of x and x^H: the same class, a clearer message.
      raise TypeError(f"cholesky: the input must be a (batch of) square matrices, got shape "
                      f"{shape}")
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


def _potrf(ctx, x, target: str, **attributes):
  """A potrf kernel's lower factor, NaN for the matrices that are not positive definite."""
  aval, = ctx.avals_in
  batch = aval.shape[:-2]
  result, info = lapack.ffi_call(target, [x], [aval], [aval, lapack.info_aval(batch)],
                                 operand_output_aliases={0: 0}, **attributes)
  ok = lapack.info_ok(info, batch)
  return lapack.replace_not_ok_with_nan(result, ok, ctx.avals_out[0], batch)


def _cholesky_cpu_lowering(ctx, x):
  return _potrf(ctx, x, lapack.lapack_target("potrf", ctx.avals_in[0].dtype),
                uplo=lapack.uplo_attr(True))


def _cholesky_gpu_lowering(ctx, x, *, target_name_prefix):
  return _potrf(ctx, x, solver_target(target_name_prefix, "potrf"), lower=True)


xla.register_lowering(cholesky_p, _cholesky_cpu_lowering, platform="cpu")
register_gpu_lowering(cholesky_p, _cholesky_gpu_lowering)


def _cholesky_lowering(ctx, x):
  # The portable default, TPU's (XLA expands it on platforms without a library call).
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

  Args:
    a: triangular matrices, ``[..., m, m]``.
    b: right-hand sides.
    left_side: keyword-only; solve ``op(a) @ x = b`` (else ``x @ op(a) = b``).
    lower: keyword-only; ``a`` is lower triangular.
    transpose_a: keyword-only; use ``a``'s transpose.
    conjugate_a: keyword-only; use ``a``'s conjugate.
    unit_diagonal: keyword-only; assume a unit diagonal.

  Returns:
    The solution ``x``, of ``b``'s shape.

  Examples:
    >>> a = jnp.array([[2., 0.], [1., 1.]])
    >>> lax.linalg.triangular_solve(a, jnp.array([[2.], [3.]]), left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float32)
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


# On GPU and TPU, as in JAX, the default: XLA's own triangular solve (cuBLAS trsm on GPU).
xla.register_lowering(triangular_solve_p, _triangular_solve_lowering)
xla.register_lowering(triangular_solve_p, _triangular_solve_cpu_lowering, platform="cpu")


# --- lu and lu_pivots_to_permutation -------------------------------------------------------

def lu(x):
  """LU decomposition with partial pivoting, ``P @ x = L @ U``, of ``[..., m, n]`` matrices.

  Returns ``(lu, pivots, permutation)``: ``lu`` holds ``L`` (unit diagonal, not stored)
  below the diagonal and ``U`` on and above it; ``pivots`` (int32, ``[..., min(m, n)]``)
  are LAPACK's row swaps (0-based); ``permutation`` (int32, ``[..., m]``) is the same as a
  permutation: ``x[..., permutation, :] = L @ U``.

  Args:
    x: array of shape ``[..., m, n]``.

  Returns:
    A triple ``(lu, pivots, permutation)`` as described above.

  Examples:
    >>> lu, pivots, perm = lax.linalg.lu(jnp.array([[1., 2.], [3., 4.]]))
    >>> lu
    Array([[3.        , 4.        ],
           [0.33333334, 0.6666666 ]], dtype=float32)
    >>> pivots, perm
    (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
  """
  return tuple(lu_p.bind(x))


def _lu_core_shape(shape):
  m, n = shape
  return [shape, (min(m, n),), (m,)]


def _lu_dtype_rule(x):
  check_dtypes("lu", (x,))
  return [x.dtype, dtypes.int32, dtypes.int32]


lu_p = linalg_primitive("lu", (2,), _lu_core_shape, _lu_dtype_rule, multiple_results=True)


def permute_rows(x, permutation):
  """``x[..., permutation, :]`` for a batch of permutations (a gather, batched)."""
  shape = get_aval(x).shape
  nb = len(shape) - 2
  batch = tuple(range(nb))
  dn = indexing.GatherDimensionNumbers(
      offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
      operand_batching_dims=batch, start_indices_batching_dims=batch)
  idx = shapes.expand_dims(permutation, (nb + 1,))
  return indexing.gather(x, idx, dn, (1,) * nb + (1, shape[-1]), indices_are_sorted=False,
                         unique_indices=True)


def _lu_jvp(primals, tangents):
  # De Hoog, Anderssen & Lukas: with P A = L U, L^-1 P dA U^-1 = L^-1 dL + dU U^-1, whose
  # strictly lower part gives dL and upper part dU.
  a, = primals
  a_dot, = tangents
  lu_, pivots, permutation = lu_p.bind(a)
  a_dot = ad.instantiate_zeros(a_dot)
  shape = get_aval(a).shape
  batch, (m, n) = shape[:-2], shape[-2:]
  k = min(m, n)
  nb = len(batch)
  zero = shapes.full((), 0, get_aval(a).dtype)
  # L as an m x m unit lower-triangular matrix, U as n x n upper (padded with the identity).
  l = tril(shapes.slice(lu_, (0,) * len(shape), batch + (m, k)), -1)
  l = shapes.pad(l, zero, [(0, 0, 0)] * (nb + 1) + [(0, m - k, 0)])
  l = ew.add(l, eye_like(l))
  u = triu(shapes.slice(lu_, (0,) * len(shape), batch + (k, n)))
  u = shapes.pad(u, zero, [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
  if n > k:
    u_eye = shapes.pad(eye_like(u, batch + (n - k, n - k)), zero,
                       [(0, 0, 0)] * nb + [(k, 0, 0), (k, 0, 0)])
    u = ew.add(u, u_eye)
  la = triangular_solve(l, permute_rows(a_dot, permutation), left_side=True,
                        transpose_a=False, lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
  lu_dot = ew.add(matmul(l, tril(lau, -1)), matmul(triu(lau), u))
  return [lu_, pivots, permutation], [lu_dot, ad.Zero.from_primal_value(pivots),
                                      ad.Zero.from_primal_value(permutation)]


ad.primitive_jvps[lu_p] = _lu_jvp


def _getrf(ctx, x, target: str, to_permutation):
  """A getrf kernel's ``(lu, pivots, permutation)``: both LAPACK and cuSOLVER return 1-based
  pivots, made 0-based here; ``to_permutation(pivots, m)`` builds the permutation."""
  aval, = ctx.avals_in
  lu_aval, pivots_aval, perm_aval = ctx.avals_out
  batch = aval.shape[:-2]
  m = aval.shape[-2]
  lu_, pivots, info = lapack.ffi_call(
      target, [x], [aval], [lu_aval, pivots_aval, lapack.info_aval(batch)],
      operand_output_aliases={0: 0})
  pivots = hlo.subtract(pivots, xla.full_like_aval(1, pivots_aval))  # 1-based -> 0-based
  # info > 0 (an exactly zero pivot) still gives a valid factorization, as in JAX.
  ok = lapack.info_ok(info, batch, "GE")
  lu_ = lapack.replace_not_ok_with_nan(lu_, ok, lu_aval, batch)
  perm_rule = xla.lower_fun(lambda p: to_permutation(p, m), multiple_results=False)
  perm = perm_rule(ctx.replace(avals_in=[pivots_aval], avals_out=[perm_aval]), pivots)
  return [lu_, pivots, perm]


def _lu_cpu_lowering(ctx, x):
  return _getrf(ctx, x, lapack.lapack_target("getrf", ctx.avals_in[0].dtype),
                _pivots_to_permutation)


def _lu_gpu_lowering(ctx, x, *, target_name_prefix):
  # The permutation through the primitive, so that the GPU's kernel builds it (as in JAX).
  return _getrf(ctx, x, solver_target(target_name_prefix, "getrf"), lu_pivots_to_permutation)


def _lu_tpu_lowering(ctx, x):
  # XLA's TPU LU returns the (0-based) pivots and the permutation itself.
  return _xla_library_call("LuDecomposition", [x], ctx.avals_out, api_version=2)


xla.register_lowering(lu_p, _lu_cpu_lowering, platform="cpu")
register_gpu_lowering(lu_p, _lu_gpu_lowering)
xla.register_lowering(lu_p, _lu_tpu_lowering, platform="tpu")


def lu_pivots_to_permutation(pivots, permutation_size: int):
  """The permutation made by applying the row swaps ``pivots`` in order to ``0, 1, ...``.

  ``pivots`` are 0-based LAPACK-style swaps (row ``i`` with row ``pivots[i]``), as ``lu``
  returns them.

  Args:
    pivots: int32 array of shape ``[..., k]``, ``k <= permutation_size``.
    permutation_size: the length of the permutation (static).

  Returns:
    An int32 array of shape ``[..., permutation_size]``.

  Examples:
    >>> lax.linalg.lu_pivots_to_permutation(jnp.array([1, 1], jnp.int32), 3)
    Array([1, 0, 2], dtype=int32)
  """
  return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def _pivots_core_shape(shape, *, permutation_size):
  k, = shape
  if not permutation_size >= k:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                     f"trailing dimension of the pivots. Got pivots size {k}")
  return (permutation_size,)


def _pivots_dtype_rule(pivots, **params):
  if pivots.dtype != dtypes.int32:
    raise TypeError(f"lu_pivots_to_permutation does not accept dtype {pivots.dtype.name}; "
                    "accepted: int32")
  return dtypes.int32


lu_pivots_to_permutation_p = linalg_primitive(
    "lu_pivots_to_permutation", (1,), _pivots_core_shape, _pivots_dtype_rule)
ad.defjvp_zero(lu_pivots_to_permutation_p)


def _pivots_to_permutation(swaps, m: int):
  """Apply the swaps one after another: a loop of ``k`` steps, each reading and writing two
  entries per matrix with one-element gathers and scatters (constant work per step, where
  one-hot selects would cost ``O(m)``). The matrices' index is a batching dimension of the
  gathers and scatters, so a batch split over devices stays split."""
  shape = get_aval(swaps).shape
  batch, k = shape[:-1], shape[-1]
  nb = len(batch)
  perm = shapes.broadcasted_iota(dtypes.int32, batch + (m,), nb)
  if m == 0 or k == 0:
    return perm
  n = math.prod(batch)  # (symbolic when the batch is)
  swaps = shapes.reshape(swaps, (n, k))
  gather_dims = indexing.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
      operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  scatter_dims = indexing.ScatterDimensionNumbers(
      update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
      operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
  in_bounds = indexing.GatherScatterMode.PROMISE_IN_BOUNDS

  def read(p, at):
    return indexing.gather(p, at, gather_dims, (1, 1), mode=in_bounds)

  def write(p, at, values):
    return indexing.scatter(p, at, values, scatter_dims, unique_indices=True,
                            indices_are_sorted=True, mode=in_bounds)

  def body(i, p):
    i = ew.convert_element_type(i, dtypes.int32)  # the loop counter is int64 under x64
    at_j = indexing.dynamic_slice(swaps, (0, i), (n, 1))    # [n, 1]: row swapped with row i
    at_i = shapes.broadcast_in_dim(i, (n, 1), ())
    x, y = read(p, at_i), read(p, at_j)
    return write(write(p, at_i, y), at_j, x)

  out = control_flow.fori_loop(0, k, body, shapes.reshape(perm, (n, m)))
  return shapes.reshape(out, batch + (m,))


xla.register_lowering(lu_pivots_to_permutation_p, xla.lower_fun(
    lambda pivots, *, permutation_size: _pivots_to_permutation(pivots, permutation_size),
    multiple_results=False))


def _lu_pivots_to_permutation_gpu_lowering(ctx, pivots, *, permutation_size,
                                           target_name_prefix):
  # The kernel reads the permutation's size from its result's shape; all row-major.
  out, = lapack.ffi_call(f"{target_name_prefix}_lu_pivots_to_permutation", [pivots],
                         ctx.avals_in, ctx.avals_out, column_major=False)
  return out


register_gpu_lowering(lu_pivots_to_permutation_p, _lu_pivots_to_permutation_gpu_lowering)



# --- qr: geqrf / geqp3 + householder_product -----------------------------------------------

def geqrf(a):
  """LAPACK's Householder QR of ``[..., m, n]`` matrices: ``(a_out, taus)`` with ``R`` in
  the upper triangle of ``a_out`` and the reflectors below it and in ``taus``
  (``[..., min(m, n)]``)."""
  return tuple(geqrf_p.bind(a))


def _geqrf_core_shape(shape):
  m, n = shape
  return [shape, (min(m, n),)]


geqrf_p = linalg_primitive("geqrf", (2,), _geqrf_core_shape, multiple_results=True)


def _geqrf_cpu_lowering(ctx, a):
  aval, = ctx.avals_in
  return lapack.ffi_call(lapack.lapack_target("geqrf", aval.dtype), [a], [aval],
                         ctx.avals_out, operand_output_aliases={0: 0})


def _geqrf_gpu_lowering(ctx, a, *, target_name_prefix):
  return lapack.ffi_call(solver_target(target_name_prefix, "geqrf"), [a], ctx.avals_in,
                         ctx.avals_out, operand_output_aliases={0: 0})


def _geqrf_lowering(ctx, a):
  # The default (TPU's): XLA's own Householder QR, same outputs as LAPACK's geqrf.
  return _xla_library_call("Qr", [a], ctx.avals_out)


xla.register_lowering(geqrf_p, _geqrf_lowering)
xla.register_lowering(geqrf_p, _geqrf_cpu_lowering, platform="cpu")
register_gpu_lowering(geqrf_p, _geqrf_gpu_lowering)


def geqp3(a, jpvt, *, use_magma=None):
  """Column-pivoted Householder QR: ``(a_out, jpvt_out, taus)`` with
  ``a[..., jpvt_out - 1] = Q @ R`` (LAPACK's 1-based pivots; a zero in ``jpvt`` marks a
  free column). ``use_magma`` picks MAGMA (``True``) or LAPACK on the host (``False``) for
  the GPU kernel; ``None`` leaves the choice to it. Ignored on CPU."""
  return tuple(geqp3_p.bind(a, jpvt, use_magma=use_magma))


def _geqp3_core_shape(a_shape, jpvt_shape, **_):
  m, n = a_shape
  if jpvt_shape != (n,):
    raise ValueError(f"geqp3: jpvt must have shape [..., {n}], got [..., {jpvt_shape}]")
  return [a_shape, jpvt_shape, (min(m, n),)]


def _geqp3_dtype_rule(a, jpvt, **_):
  check_dtypes("geqp3", (a,))
  if jpvt.dtype != dtypes.int32:
    raise TypeError(f"geqp3: jpvt must be int32, got {jpvt.dtype.name}")
  return [a.dtype, dtypes.int32, a.dtype]


geqp3_p = linalg_primitive("geqp3", (2, 1), _geqp3_core_shape, _geqp3_dtype_rule,
                           multiple_results=True)


def _geqp3_cpu_lowering(ctx, a, jpvt, *, use_magma):
  aval, _ = ctx.avals_in
  return lapack.ffi_call(lapack.lapack_target("geqp3", aval.dtype), [a, jpvt], ctx.avals_in,
                         ctx.avals_out, operand_output_aliases={0: 0, 1: 1})


def _geqp3_gpu_lowering(ctx, a, jpvt, *, use_magma, target_name_prefix):
  # cuSOLVER has no pivoted QR: the plugin's hybrid kernel runs MAGMA's or LAPACK's.
  return lapack.ffi_call(f"{target_name_prefix}hybrid_geqp3", [a, jpvt], ctx.avals_in,
                         ctx.avals_out, operand_output_aliases={0: 0, 1: 1},
                         magma=magma_attr(use_magma))


# No default: JAX has no geqp3 on TPU (nor does XLA), so pivoted QR does not lower there.
xla.register_lowering(geqp3_p, _geqp3_cpu_lowering, platform="cpu")
register_gpu_lowering(geqp3_p, _geqp3_gpu_lowering)


def householder_product(a, taus):
  """The product of Householder reflectors ``Q = H_1 H_2 ... H_k``, first ``n`` columns.

  The reflectors are stored below the diagonal of ``a`` with scales ``taus``, as ``geqrf``
  returns them.

  Args:
    a: array of shape ``[..., m, n]`` with ``m >= n``.
    taus: reflector scales, of shape ``[..., k]``.

  Returns:
    An array of shape ``[..., m, n]``.

  Examples:
    >>> lax.linalg.householder_product(*lax.linalg.geqrf(jnp.array([[3., 0.], [4., 5.]])))
    Array([[-0.6, -0.8],
           [-0.8,  0.6]], dtype=float32)
  """
  return householder_product_p.bind(a, taus)


def _householder_product_core_shape(a_shape, taus_shape):
  m, n = a_shape
  if m < n:
    raise ValueError("The first argument to householder_product must have at least as many "
                     f"rows as columns, got shape {a_shape}")
  if taus_shape[0] > min(m, n):
    raise ValueError("The second argument to householder_product must not have more rows "
                     "than the minimum of the first argument's rows and columns.")
  return a_shape


householder_product_p = linalg_primitive("householder_product", (2, 1),
                                         _householder_product_core_shape)


def _householder_product_cpu_lowering(ctx, a, taus):
  aval, _ = ctx.avals_in
  base = "ungqr" if lapack.is_complex(aval.dtype) else "orgqr"
  out, = lapack.ffi_call(lapack.lapack_target(base, aval.dtype), [a, taus], ctx.avals_in,
                         ctx.avals_out, operand_output_aliases={0: 0})
  return out


def _householder_product_gpu_lowering(ctx, a, taus, *, target_name_prefix):
  # One handler for every dtype (orgqr or ungqr by the operands' type).
  out, = lapack.ffi_call(solver_target(target_name_prefix, "orgqr"), [a, taus], ctx.avals_in,
                         ctx.avals_out, operand_output_aliases={0: 0})
  return out


def _householder_product_lowering(ctx, a, taus):
  # The default (TPU's): XLA's own kernel.
  out, = _xla_library_call("ProductOfElementaryHouseholderReflectors", [a, taus],
                           ctx.avals_out)
  return out


xla.register_lowering(householder_product_p, _householder_product_lowering)
xla.register_lowering(householder_product_p, _householder_product_cpu_lowering,
                      platform="cpu")
register_gpu_lowering(householder_product_p, _householder_product_gpu_lowering)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
  """QR decomposition ``x = Q @ R`` of ``[..., m, n]`` matrices.

  ``Q`` is ``[..., m, m]`` (``full_matrices``) or ``[..., m, min(m, n)]``, ``R`` is
  ``[..., m, n]`` or ``[..., min(m, n), n]``. With ``pivoting`` also returns the column
  permutation ``p`` (int32, ``[..., n]``) with ``x[..., p] = Q @ R``. ``use_magma`` goes to
  the GPU's pivoted QR (see :func:`geqp3`).

  Args:
    x: array of shape ``[..., m, n]``.
    pivoting: keyword-only; use column pivoting and return the permutation.
    full_matrices: keyword-only; return the full ``Q`` (else the reduced one).
    use_magma: keyword-only; GPU option, accepted for compatibility.

  Returns:
    ``(q, r)``, or ``(q, r, p)`` with ``pivoting``.

  Examples:
    >>> q, r = lax.linalg.qr(jnp.array([[3., 0.], [4., 5.]]))
    >>> r
    Array([[-5., -4.],
           [ 0.,  3.]], dtype=float32)
  """
  outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                   use_magma=use_magma)
  return tuple(outs)


def _qr_core_shape(shape, *, pivoting, full_matrices, **_):
  m, n = shape
  k = m if full_matrices else min(m, n)
  return [(m, k), (k, n), (n,)] if pivoting else [(m, k), (k, n)]


def _qr_dtype_rule(x, *, pivoting, full_matrices, **_):
  check_dtypes("qr", (x,))
  return [x.dtype, x.dtype, dtypes.int32] if pivoting else [x.dtype, x.dtype]


qr_p = linalg_primitive("qr", (2,), _qr_core_shape, _qr_dtype_rule, multiple_results=True)


def _qr_composition(a, *, pivoting, full_matrices, use_magma):
  shape = get_aval(a).shape
  batch, (m, n) = shape[:-2], shape[-2:]
  nb = len(batch)
  dtype = get_aval(a).dtype
  if m == 0 or n == 0:
    k = m if full_matrices else min(m, n)
    q = eye_like(a, batch + (m, k))
    r = shapes.full(batch + (k, n), 0, dtype)
    if pivoting:
      return [q, r, shapes.full(batch + (n,), 0, dtypes.int32)]
    return [q, r]
  p = None
  if pivoting:
    r, p, taus = geqp3(a, shapes.full(batch + (n,), 0, dtypes.int32), use_magma=use_magma)
    p = ew.sub(p, shapes.full_like(p, 1))  # 1-based -> 0-based
  else:
    r, taus = geqrf(a)
  zero = shapes.full((), 0, dtype)
  if m < n:
    q = householder_product(shapes.slice(r, (0,) * len(shape), batch + (m, m)), taus)
  elif full_matrices:
    q = householder_product(shapes.pad(r, zero, [(0, 0, 0)] * (nb + 1) + [(0, m - n, 0)]),
                            taus)
  else:
    q = householder_product(r, taus)
    r = shapes.slice(r, (0,) * len(shape), batch + (n, n))
  r = triu(r)
  return [q, r, p] if pivoting else [q, r]


xla.register_lowering(qr_p, xla.lower_fun(_qr_composition, multiple_results=True))


def _thin_qr_jvp(q, r, dx):
  # For m >= n (j-towns.github.io/papers/qr-derivative.pdf): with C = Q^H dX R^-1,
  # dQ = Q (Ω - C) + dX R^-1 and dR = (C - Ω) R, Ω the skew-Hermitian part built from
  # the strictly lower triangle of C.
  dx_rinv = triangular_solve(r, dx)  # right-side solve with upper-triangular R
  c = matmul(H(q), dx_rinv)
  c_lower = tril(c, -1)
  omega = ew.sub(c_lower, H(c_lower))
  if dtypes.is_complex(get_aval(c).dtype):
    # The diagonal's imaginary part (unconstrained for real inputs) keeps R's diagonal real.
    imag_diag = ew.sub(c, ew.convert_element_type(ew.real(c), get_aval(c).dtype))
    omega = ew.add(omega, ew.mul(eye_like(c), imag_diag))
  dq = ew.add(matmul(q, ew.sub(omega, c)), dx_rinv)
  dr = matmul(ew.sub(c, omega), r)
  return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
  x, = primals
  dx = ad.instantiate_zeros(tangents[0])
  outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
  q, r = outs[0], outs[1]
  shape = get_aval(x).shape
  batch, (m, n) = shape[:-2], shape[-2:]
  nd = len(shape)
  origin = (0,) * nd
  if pivoting:
    dx = T(permute_rows(T(dx), outs[2]))  # dx[..., p]
  if m < n:
    # X = [X1 X2] = Q [R1 R2]: the square part is a QR, and R2 = Q^H X2.
    x2 = shapes.slice(x, (0,) * (nd - 1) + (m,), shape)
    dx1 = shapes.slice(dx, origin, batch + (m, m))
    dx2 = shapes.slice(dx, (0,) * (nd - 1) + (m,), shape)
    r1 = shapes.slice(r, origin, batch + (m, m))
    if pivoting:
      x2 = T(permute_rows(T(x), outs[2]))
      x2 = shapes.slice(x2, (0,) * (nd - 1) + (m,), shape)
    dq, dr1 = _thin_qr_jvp(q, r1, dx1)
    dr2 = ew.add(matmul(H(dq), x2), matmul(H(q), dx2))
    dr = shapes.concatenate([dr1, dr2], nd - 1)
  else:
    q_mn = shapes.slice(q, origin, batch + (m, n)) if full_matrices else q
    r_nn = shapes.slice(r, origin, batch + (n, n)) if full_matrices else r
    dq, dr = _thin_qr_jvp(q_mn, r_nn, dx)
    if full_matrices and m > n:
      # The last m - n columns of Q are only determined up to a rotation; follow JAX's
      # choice (arXiv:2409.13374, eqs. 32-33) so that tangents agree with it.
      q_nn = shapes.slice(q_mn, origin, batch + (n, n))
      q_pn = shapes.slice(q_mn, (0,) * (nd - 2) + (n, 0), batch + (m, n))
      q_mp = shapes.slice(q, (0,) * (nd - 1) + (n,), batch + (m, m))
      dq_nn = shapes.slice(dq, origin, batch + (n, n))
      dq_pn = shapes.slice(dq, (0,) * (nd - 2) + (n, 0), batch + (m, n))
      lu_, _, perm = lu(ew.sub(q_nn, eye_like(q_nn)))
      z_pn_h = lu_solve(lu_, perm, H(q_pn), trans=2)
      z_pn = H(z_pn_h)
      dq_mp = ew.sub(matmul(dq, z_pn_h),
                     matmul(ew.add(q_mn, matmul(q_mp, z_pn)),
                            H(ew.sub(dq_pn, matmul(z_pn, dq_nn)))))
      dq = shapes.concatenate([dq, dq_mp], nd - 1)
      dr = shapes.concatenate([dr, shapes.full(batch + (m - n, n), 0, get_aval(dr).dtype)],
                              nd - 2)
  tangents_out = [dq, dr]
  if pivoting:
    tangents_out.append(ad.Zero.from_primal_value(outs[2]))
  return list(outs), tangents_out


ad.primitive_jvps[qr_p] = _qr_jvp


def lu_solve(lu_, permutation, b, trans: int = 0):
  """Solve ``A x = b`` (``trans=0``), ``A^T x = b`` (1) or ``A^H x = b`` (2) from ``A``'s LU
  factorization (``lu_``, ``permutation`` as :func:`lu` returns them). ``b`` is
  ``[..., m, k]`` with the same batch dimensions as ``lu_``."""
  if trans == 0:
    x = permute_rows(b, permutation)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu_, x, left_side=True, lower=False)
  if trans in (1, 2):
    conj = trans == 2
    x = triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                         conjugate_a=conj)
    x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                         transpose_a=True, conjugate_a=conj)
    return permute_rows(x, inverse_permutation(permutation))
  raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")


def inverse_permutation(permutation):
  """``inv`` with ``inv[..., permutation[..., i]] = i``."""
  shape = get_aval(permutation).shape
  nb = len(shape) - 1
  iota = shapes.broadcasted_iota(dtypes.int32, shape, nb)
  _, inv = sorting.sort_key_val(permutation, iota, dimension=nb)
  return inv


# --- tridiagonal_solve ---------------------------------------------------------------------

def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
  """Solves tridiagonal systems ``A x = b``.

  ``dl``, ``d`` and ``du`` are the sub-, main and super-diagonals (``dl[..., 0]`` and
  ``du[..., m - 1]`` are ignored). Singular systems give NaNs, or, with ``perturb_singular``,
  LAPACK's solution with tiny pivots perturbed (as in inverse iteration).

  Args:
    dl: sub-diagonal, ``[..., m]``.
    d: main diagonal, ``[..., m]``.
    du: super-diagonal, ``[..., m]``.
    b: right-hand sides, ``[..., m, n]``.
    perturb_singular: keyword-only; perturb zero pivots instead of producing NaNs.

  Returns:
    The solution ``x``, of ``b``'s shape.

  Examples:
    >>> ones = jnp.ones(3)
    >>> lax.linalg.tridiagonal_solve(ones.at[0].set(0.), 2 * ones, ones.at[2].set(0.),
    ...                              jnp.array([[3.], [4.], [3.]]))
    Array([[1.],
           [1.],
           [1.]], dtype=float32)
  """
  return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


def _tridiagonal_solve_core_shape(dl, d, du, b, **_):
  if dl != d or dl != du:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    f"shape, got {dl}, {d} and {du}.")
  if dl != b[:-1]:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                    f"equal the dimensions of the diagonal arguments, got {dl} and {b}.")
  return b


tridiagonal_solve_p = linalg_primitive("tridiagonal_solve", (1, 1, 1, 2),
                                       _tridiagonal_solve_core_shape)


def _tridiagonal_product(dl, d, du, x):
  """``A @ x`` for the tridiagonal ``A`` (``[..., m]`` diagonals, ``x`` ``[..., m, n]``)."""
  shape = get_aval(x).shape
  nd = len(shape)
  m = shape[-2]
  y = ew.mul(shapes.expand_dims(d, (nd - 1,)), x)
  if m > 1:
    zero = shapes.full((), 0, get_aval(x).dtype)
    origin = (0,) * nd
    # Row i gets dl[i] x[i-1] (i >= 1) and du[i] x[i+1] (i < m - 1).
    x_up = shapes.pad(shapes.slice(x, origin, shape[:-2] + (m - 1, shape[-1])), zero,
                      [(0, 0, 0)] * (nd - 2) + [(1, 0, 0), (0, 0, 0)])
    x_down = shapes.pad(shapes.slice(x, (0,) * (nd - 2) + (1, 0), shape), zero,
                        [(0, 0, 0)] * (nd - 2) + [(0, 1, 0), (0, 0, 0)])
    mask_dl = ew.ne(shapes.broadcasted_iota(dtypes.int32, get_aval(dl).shape, nd - 2),
                    shapes.full(get_aval(dl).shape, 0, dtypes.int32))
    mask_du = ew.ne(shapes.broadcasted_iota(dtypes.int32, get_aval(du).shape, nd - 2),
                    shapes.full(get_aval(du).shape, m - 1, dtypes.int32))
    dl = ew.select(mask_dl, dl, shapes.full_like(dl, 0))
    du = ew.select(mask_du, du, shapes.full_like(du, 0))
    y = ew.add(y, ew.mul(shapes.expand_dims(dl, (nd - 1,)), x_up))
    y = ew.add(y, ew.mul(shapes.expand_dims(du, (nd - 1,)), x_down))
  return y


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
  *diags, _ = primals
  *diag_dots, b_dot = tangents
  ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
  if all(type(t) is ad.Zero for t in diag_dots):
    rhs = b_dot
  else:
    matvec_dot = _tridiagonal_product(*[ad.instantiate_zeros(t) for t in diag_dots], ans)
    rhs = ad.add_tangents(b_dot, ew.neg(matvec_dot))
  if type(rhs) is ad.Zero:
    return ans, rhs
  return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
  # Linear in b only; A^T has du shifted down as its sub-diagonal and dl shifted up.
  if any(ad.is_undefined_primal(x) for x in (dl, d, du)):
    raise ValueError("tridiagonal_solve is not linear in its diagonals")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  nd = get_aval(du).ndim
  m = get_aval(du).shape[-1]
  zero = shapes.full((), 0, get_aval(du).dtype)
  batch = get_aval(du).shape[:-1]
  dl_t = shapes.pad(shapes.slice(du, (0,) * nd, batch + (m - 1,)), zero,
                    [(0, 0, 0)] * (nd - 1) + [(1, 0, 0)])
  du_t = shapes.pad(shapes.slice(dl, (0,) * (nd - 1) + (1,), batch + (m,)), zero,
                    [(0, 0, 0)] * (nd - 1) + [(0, 1, 0)])
  return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                     perturb_singular=perturb_singular)]


ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose


def _tridiagonal_solve_cpu_lowering(ctx, dl, d, du, b, *, perturb_singular):
  b_aval = ctx.avals_in[-1]
  batch = b_aval.shape[:-2]
  if perturb_singular:
    out, = lapack.ffi_call("tridiagonal_solve_perturbed_ffi", [dl, d, du, b], ctx.avals_in,
                           [b_aval])
    return out
  *_, x, info = lapack.ffi_call(
      lapack.lapack_target("gtsv", b_aval.dtype), [dl, d, du, b], ctx.avals_in,
      [*ctx.avals_in, lapack.info_aval(batch)],
      operand_output_aliases={0: 0, 1: 1, 2: 2, 3: 3})
  return lapack.replace_not_ok_with_nan(x, lapack.info_ok(info, batch), b_aval, batch)


def _thomas_solve(dl, d, du, b):
  """Thomas's algorithm (elimination without pivoting), as JAX's generic rule: a forward scan
  over the rows computes the modified super-diagonal ``cp`` and right-hand sides ``dp``, a
  backward one substitutes."""
  shape = get_aval(b).shape
  nb, m = len(shape) - 2, shape[-2]
  if m == 0:
    return b
  rows_axis = (nb,) + tuple(range(nb))  # rows first, for the scans
  dl, d, du = (shapes.transpose(v, rows_axis) for v in (dl, d, du))
  b = shapes.transpose(b, rows_axis + (nb + 1,))
  row_shape = get_aval(b).shape[1:]  # batch + (n,)

  def per_row(v):  # one value per matrix, broadcast over the right-hand sides
    return shapes.broadcast_in_dim(v, row_shape, tuple(range(nb)))

  def forward(carry, row):
    cp, dp = carry
    lower, diag, upper, rhs = row
    denom = ew.sub(diag, ew.mul(lower, cp))
    dp_next = ew.div(ew.sub(rhs, ew.mul(per_row(lower), dp)), per_row(denom))
    return (ew.div(upper, denom), dp_next), (cp, dp)

  def first(v):
    return shapes.index_in_dim(v, 0, 0, keepdims=False)

  def rest(v):
    return shapes.slice_in_dim(v, 1, m, axis=0)

  init = (ew.div(first(du), first(d)), ew.div(first(b), per_row(first(d))))
  (_, last), (cps, dps) = control_flow.scan(forward, init, tuple(map(rest, (dl, d, du, b))),
                                            unroll=32)

  def backward(x_next, row):
    cp, dp = row
    return ew.sub(dp, ew.mul(per_row(cp), x_next)), x_next

  x0, xs = control_flow.scan(backward, last, (cps, dps), reverse=True, unroll=32)
  x = shapes.concatenate([shapes.expand_dims(x0, (0,)), xs], 0)
  return shapes.transpose(x, tuple(range(1, nb + 1)) + (0, nb + 1))


def _tridiagonal_solve_lowering(ctx, dl, d, du, b, *, perturb_singular):
  # The default (TPU's, and the GPU's for m <= 2), as in JAX.
  if perturb_singular:
    raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not supported on "
                              f"platform {ctx.module_context.platform!r}")
  return xla.lower_fun(_thomas_solve, multiple_results=False)(ctx, dl, d, du, b)


def _tridiagonal_solve_gpu_lowering(ctx, dl, d, du, b, *, perturb_singular,
                                    target_name_prefix):
  b_aval = ctx.avals_in[-1]
  if perturb_singular:
    out, = lapack.ffi_call(f"{target_name_prefix}_tridiagonal_solve_perturbed",
                           [dl, d, du, b], ctx.avals_in, [b_aval])
    return out
  if b_aval.shape[-2] <= 2:  # cuSPARSE's gtsv2 needs at least 3 rows
    return _tridiagonal_solve_lowering(ctx, dl, d, du, b, perturb_singular=False)
  # gtsv2 has no info output (a singular system is not detected), so no NaN masking here.
  out, = lapack.ffi_call(f"{target_name_prefix}sparse_gtsv2_ffi", [dl, d, du, b],
                         ctx.avals_in, [b_aval], operand_output_aliases={3: 0})
  return out


xla.register_lowering(tridiagonal_solve_p, _tridiagonal_solve_lowering)
xla.register_lowering(tridiagonal_solve_p, _tridiagonal_solve_cpu_lowering, platform="cpu")
register_gpu_lowering(tridiagonal_solve_p, _tridiagonal_solve_gpu_lowering)
