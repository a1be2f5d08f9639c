"""Products and updates of factored matrices: ``ormqr`` (multiply by the ``Q`` of a
Householder QR without forming it), ``symmetric_product`` (``alpha A A^T + beta C``) and
``cholesky_update`` (a rank-1 update of a Cholesky factor).

As in JAX: ``ormqr`` lowers to LAPACK's ``?ormqr``/``?unmqr`` on CPU, cuSOLVER's (hipSOLVER's)
``ormqr`` on GPU and, elsewhere, to a loop that applies the reflectors one by one;
``symmetric_product`` to cuSOLVER's ``syrk`` on CUDA and ``cholesky_update`` to the CUDA
plugin's own kernel, both compositions of other primitives elsewhere.
"""
from __future__ import annotations

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, xla
from hlox.lax import control_flow, elementwise as ew, indexing, shapes
from hlox.lax.dot import Precision, dot_general
from hlox.lax.linalg import lapack
from hlox.lax.linalg.common import T, eye_like, linalg_primitive, matmul, tril
from hlox.lax.linalg.gpu import GPU_PREFIXES, register_gpu_lowering, solver_target
from hlox.lax.linalg.factorizations import triangular_solve

__all__ = ["ormqr", "ormqr_p", "symmetric_product", "symmetric_product_p", "cholesky_update",
           "cholesky_update_p"]


# --- ormqr ---------------------------------------------------------------------------------

def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
  """Multiplies ``c`` by the orthogonal ``Q`` of a packed QR factorization.

  ``Q`` is the product of the Householder reflectors stored below the diagonal of ``a`` and in
  ``taus``, as ``geqrf`` returns them. ``left`` computes ``Q @ c`` (else ``c @ Q``);
  ``transpose`` uses ``Q^T`` (``Q^H`` for complex types).

  Args:
    a: packed reflectors, of shape ``[..., m, n]``.
    taus: reflector scales, of shape ``[..., k]``.
    c: the matrix multiplied.
    left: keyword-only; multiply from the left.
    transpose: keyword-only; use the (conjugate) transpose of ``Q``.

  Returns:
    An array of ``c``'s shape.

  Examples:
    >>> a, taus = lax.linalg.geqrf(jnp.array([[3., 0.], [4., 5.]]))
    >>> lax.linalg.ormqr(a, taus, jnp.eye(2))
    Array([[-0.6, -0.8],
           [-0.8,  0.6]], dtype=float32)
  """
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr_core_shape(a_shape, taus_shape, c_shape, *, left, transpose):
  m = a_shape[0]
  if taus_shape[0] > min(a_shape):
    raise ValueError(f"ormqr: taus has {taus_shape[0]} reflectors but a has shape {a_shape}: "
                     "at most min(m, n) are stored")
  if left and c_shape[0] != m:
    raise ValueError("ormqr with left=True expects c to have the same number of rows as the "
                     f"Householder matrix a. Got a shape {a_shape} and c shape {c_shape}.")
  if not left and c_shape[1] != m:
    raise ValueError("ormqr with left=False expects c to have the same number of columns as "
                     f"the Householder matrix a has rows. Got a shape {a_shape} and c shape "
                     f"{c_shape}.")
  return c_shape


ormqr_p = linalg_primitive("ormqr", (2, 1, 2), _ormqr_core_shape)


def _expand(x, axis):
  shape = get_aval(x).shape
  axis = axis % (len(shape) + 1)
  return shapes.reshape(x, shape[:axis] + (1,) + shape[axis:])


def ormqr_composition(a, taus, c, *, left, transpose):
  """``ormqr`` as a loop over the reflectors ``H_i = I - tau_i v_i v_i^H`` (the lowering on
  platforms without a library call)."""
  a_shape = get_aval(a).shape
  batch, m = a_shape[:-2], a_shape[-2]
  k = get_aval(taus).shape[-1]
  nb = len(batch)
  complex_ = dtypes.is_complex(get_aval(a).dtype)
  a_k = shapes.slice(a, (0,) * len(a_shape), batch + (m, k))
  v_all = ew.add(tril(a_k, -1), eye_like(a_k))
  taus = ew.conj(taus) if transpose and complex_ else taus
  # Q = H_1 ... H_k: Q c and c Q^H take the reflectors from the last, Q^H c and c Q from
  # the first.
  reverse = left != transpose
  bdims = tuple(range(nb))

  def body(i, c):
    idx = (k - 1 - i) if reverse else i
    tau = indexing.dynamic_index_in_dim(taus, idx, nb, keepdims=False)
    v = indexing.dynamic_index_in_dim(v_all, idx, nb + 1, keepdims=False)
    v_h = ew.conj(v) if complex_ else v
    if left:  # c - tau v (v^H c)
      vhc = dot_general(v_h, c, (((nb,), (nb,)), (bdims, bdims)), precision=Precision.HIGHEST)
      update = ew.mul(_expand(v, -1), _expand(vhc, -2))
    else:  # c - tau (c v) v^H
      cv = dot_general(c, v, (((nb + 1,), (nb,)), (bdims, bdims)), precision=Precision.HIGHEST)
      update = ew.mul(_expand(cv, -1), _expand(v_h, -2))
    tau = _expand(_expand(tau, -1), -1)
    return ew.sub(c, ew.mul(tau, update))

  if k == 0:
    return c
  return control_flow.fori_loop(0, k, body, c)


xla.register_lowering(ormqr_p, xla.lower_fun(ormqr_composition, multiple_results=False))


def _ormqr_cpu_lowering(ctx, a, taus, c, *, left, transpose):
  a_aval, taus_aval, c_aval = ctx.avals_in
  if 0 in c_aval.shape or taus_aval.shape[-1] == 0:
    return xla.lower_fun(ormqr_composition, multiple_results=False)(
        ctx, a, taus, c, left=left, transpose=transpose)
  base = "unmqr" if lapack.is_complex(a_aval.dtype) else "ormqr"
  out, = lapack.ffi_call(lapack.lapack_target(base, a_aval.dtype), [a, taus, c],
                         ctx.avals_in, ctx.avals_out, operand_output_aliases={2: 0},
                         left=bool(left), transpose=bool(transpose))
  return out


def _ormqr_gpu_lowering(ctx, a, taus, c, *, left, transpose, target_name_prefix):
  # One handler for every dtype (ormqr or unmqr by the operands' type).
  out, = lapack.ffi_call(solver_target(target_name_prefix, "ormqr"), [a, taus, c],
                         ctx.avals_in, ctx.avals_out, operand_output_aliases={2: 0},
                         left=bool(left), transpose=bool(transpose))
  return out


xla.register_lowering(ormqr_p, _ormqr_cpu_lowering, platform="cpu")
register_gpu_lowering(ormqr_p, _ormqr_gpu_lowering)


def _ormqr_jvp(primals, tangents, *, left, transpose):
  a, taus, c = primals
  da, dtaus, dc = tangents
  if not (type(da) is ad.Zero and type(dtaus) is ad.Zero):
    # JAX defines no derivative of ormqr at all; the one in c (a linear map) is given.
    raise NotImplementedError("ormqr: differentiation with respect to the Householder "
                              "reflectors (a, taus) is not implemented; differentiate "
                              "through qr instead")
  out = ormqr_p.bind(a, taus, c, left=left, transpose=transpose)
  if type(dc) is ad.Zero:
    return out, dc
  return out, ormqr_p.bind(a, taus, dc, left=left, transpose=transpose)


ad.primitive_jvps[ormqr_p] = _ormqr_jvp


def _ormqr_transpose(ct, a, taus, c, *, left, transpose):
  # c -> op(Q) c is linear in c; its transpose is ct -> op(Q)^T ct = conj(op(Q)^H conj(ct)).
  if ad.is_undefined_primal(a) or ad.is_undefined_primal(taus):
    raise NotImplementedError("ormqr: transposition with respect to a or taus")
  if type(ct) is ad.Zero:
    return [None, None, ad.Zero(c.aval)]
  complex_ = dtypes.is_complex(get_aval(ct).dtype)
  conj = ew.conj if complex_ else (lambda x: x)
  ct_c = conj(ormqr_p.bind(a, taus, conj(ct), left=left, transpose=not transpose))
  return [None, None, ct_c]


ad.primitive_transposes[ormqr_p] = _ormqr_transpose


# --- symmetric_product ---------------------------------------------------------------------

def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1., beta: float = 0.,
                      symmetrize_output: bool = False):
  """The symmetric rank-k update ``alpha * a @ a^T + beta * c``.

  ``c`` is symmetric. As in JAX only the lower triangle of the result is promised on every
  platform; with ``symmetrize_output`` the upper triangle is made the lower one's transpose.

  Args:
    a_matrix: array of shape ``[..., m, n]``.
    c_matrix: symmetric array of shape ``[..., m, m]``.
    alpha: keyword-only; scale of ``a @ a^T``.
    beta: keyword-only; scale of ``c``.
    symmetrize_output: keyword-only; fill the upper triangle from the lower.

  Returns:
    An array of shape ``[..., m, m]``.

  Examples:
    >>> lax.linalg.symmetric_product(jnp.array([[1., 2.], [3., 4.]]), jnp.eye(2), beta=1.,
    ...                              symmetrize_output=True)
    Array([[ 6., 11.],
           [11., 26.]], dtype=float32)
  """
  result = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
  if symmetrize_output:
    result = ew.add(tril(result), T(tril(result, -1)))
  return result


def _symmetric_product_core_shape(a_shape, c_shape, **_):
  if a_shape[0] != c_shape[1] or c_shape[0] != c_shape[1]:
    raise ValueError("symmetric_product expects a rectangular matrix of shape (m, n) and a "
                     f"square matrix of shape (m, m). Got shapes {a_shape} and {c_shape}.")
  return c_shape


symmetric_product_p = linalg_primitive("symmetric_product", (2, 2),
                                       _symmetric_product_core_shape, kinds=("float",))


def _scaled(x, s):
  return ew.mul(shapes.full_like(x, s), x)


def _symmetric_product_composition(a, c, *, alpha, beta):
  return ew.add(_scaled(matmul(a, T(a)), alpha), _scaled(c, beta))


def _symmetric_product_cuda_lowering(ctx, a, c, *, alpha, beta):
  # cuSOLVER's syrk takes alpha and beta as scalar operands; all operands row-major.
  a_aval, c_aval = ctx.avals_in
  scalar = a_aval.update(shape=())
  alpha, beta = xla.full_like_aval(alpha, scalar), xla.full_like_aval(beta, scalar)
  out, = lapack.ffi_call(solver_target(GPU_PREFIXES["cuda"], "syrk"), [a, c, alpha, beta],
                         [a_aval, c_aval, scalar, scalar], ctx.avals_out, column_major=False,
                         operand_output_aliases={1: 0}, transpose=False)
  return out


xla.register_lowering(symmetric_product_p,
                      xla.lower_fun(_symmetric_product_composition, multiple_results=False))
xla.register_lowering(symmetric_product_p, _symmetric_product_cuda_lowering,
                      platform="cuda")


def _symmetric_product_jvp(primals, tangents, *, alpha, beta):
  a, c = primals
  da, dc = (ad.instantiate_zeros(t) for t in tangents)
  out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
  da_at = matmul(da, T(a))
  return out, ew.add(_scaled(ew.add(da_at, T(da_at)), alpha), _scaled(dc, beta))


ad.primitive_jvps[symmetric_product_p] = _symmetric_product_jvp


# --- cholesky_update -----------------------------------------------------------------------

def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of ``R^T R + w w^T``, given the upper factor ``R``.

  Computed in ``O(n^2)`` by Givens rotations, without refactorizing.

  Args:
    r_matrix: upper Cholesky factor ``R``, of shape ``[..., n, n]``.
    w_vector: the update vector ``w``, of shape ``[..., n]``.

  Returns:
    The updated upper factor, of ``R``'s shape.

  Examples:
    >>> lax.linalg.cholesky_update(jnp.array([[2., 1.], [0., 1.]]), jnp.array([1., 0.]))
    Array([[2.236068 , 0.8944272],
           [0.       , 1.095445 ]], dtype=float32)
  """
  return cholesky_update_p.bind(r_matrix, w_vector)


def _cholesky_update_core_shape(r_shape, w_shape):
  if r_shape[0] != r_shape[1] or w_shape[0] != r_shape[1]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r_shape} and {w_shape} "
                     "instead")
  return r_shape


cholesky_update_p = linalg_primitive("cholesky_update", (2, 1), _cholesky_update_core_shape,
                                     kinds=("float",))


def _cholesky_update_composition(r, z):
  shape = get_aval(r).shape
  n, nd = shape[-1], len(shape)
  rows = shapes.broadcasted_iota(dtypes.int32, shape, nd - 2)
  if n == 0:
    return r
  zero = shapes.full_like(_take(z, 0), 0)
  for k in range(n):
    x, y = _take(_row(r, k), k), _take(z, k)
    # A Givens rotation that zeroes z[k] against R[k, k], scaled to avoid overflow.
    ax, ay = ew.abs(x), ew.abs(y)
    denom = ew.select(ew.gt(ax, ay), ax, ay)
    safe = ew.select(ew.eq(y, zero), shapes.full_like(denom, 1), denom)
    xs, ys = ew.div(x, safe), ew.div(y, safe)
    rh = ew.rsqrt(ew.add(ew.mul(xs, xs), ew.mul(ys, ys)))
    c = ew.select(ew.eq(y, zero), shapes.full_like(x, 1), ew.mul(xs, rh))
    s = ew.select(ew.eq(y, zero), zero, ew.neg(ew.mul(ys, rh)))
    row_k = _row(r, k)
    c_, s_ = _expand(c, -1), _expand(s, -1)
    new_row = ew.sub(ew.mul(c_, row_k), ew.mul(s_, z))
    z = ew.add(ew.mul(c_, z), ew.mul(s_, row_k))
    r = ew.select(ew.eq(rows, shapes.full_like(rows, k)),
                  shapes.broadcast_in_dim(new_row, shape, tuple(range(nd - 2)) + (nd - 1,)), r)
  return r


def _row(r, k):
  return shapes.index_in_dim(r, k, get_aval(r).ndim - 2, keepdims=False)


def _take(v, k):
  return shapes.index_in_dim(v, k, get_aval(v).ndim - 1, keepdims=False)


_cholesky_update_lowering = xla.lower_fun(_cholesky_update_composition,
                                          multiple_results=False)


def _cholesky_update_cuda_lowering(ctx, r, w):
  # The kernel updates R and w in place (both row-major) and returns both; only R is ours.
  # It handles one matrix (JAX's primitive has no batch dimensions; the kernel's own batch
  # loop would update the first matrix again and again), so batches take the composition.
  if ctx.avals_in[0].ndim > 2:
    return _cholesky_update_lowering(ctx, r, w)
  r_out, _ = lapack.ffi_call(f"{GPU_PREFIXES['cuda']}_cholesky_update_ffi", [r, w],
                             ctx.avals_in, ctx.avals_in, column_major=False,
                             operand_output_aliases={0: 0, 1: 1})
  return r_out


xla.register_lowering(cholesky_update_p, _cholesky_update_lowering)
xla.register_lowering(cholesky_update_p, _cholesky_update_cuda_lowering, platform="cuda")


def _cholesky_update_jvp(primals, tangents):
  r, w = primals
  dr, dw = (ad.instantiate_zeros(t) for t in tangents)
  r_new = cholesky_update_p.bind(r, w)
  # A' = R^T R + w w^T, so dA' = dR^T R + R^T dR + dw w^T + w dw^T; the new lower factor
  # L' = R'^T moves by L' phi(L'^-1 dA' L'^-T) (phi: lower triangle, halved diagonal).
  rt_dr = matmul(T(r), dr)
  dw_wt = ew.mul(_expand(dw, -1), _expand(w, -2))
  da = ew.add(ew.add(rt_dr, T(rt_dr)), ew.add(dw_wt, T(dw_wt)))
  l_new = T(r_new)
  tmp = triangular_solve(l_new, da, left_side=False, transpose_a=True, lower=True)
  inner = triangular_solve(l_new, tmp, left_side=True, lower=True)
  halve = ew.add(shapes.full_like(inner, 1), eye_like(inner))
  dl = matmul(l_new, ew.div(tril(inner), halve))
  return r_new, T(dl)


ad.primitive_jvps[cholesky_update_p] = _cholesky_update_jvp
