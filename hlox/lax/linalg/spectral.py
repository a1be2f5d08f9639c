"""Spectral decompositions: ``eigh``, ``svd``, ``eig``, ``schur``, ``hessenberg``, ``tridiagonal``.

Each primitive takes a batch of matrices ``[..., m, n]`` and has, beside its definition, its
abstract evaluation (batch dimensions pass through), its JVP where JAX has one, a batching rule
(the mapped axis moves to the front and becomes one more batch dimension) and a CPU lowering to
the LAPACK routine that jaxlib ships as an FFI custom-call target (``*syevd_ffi``/``*heevd_ffi``,
``*gesdd_ffi``/``*gesvd_ffi``, ``*geev_ffi``, ``*gees_ffi``, ``*gehrd_ffi``, ``*sytrd_ffi``/
``*hetrd_ffi``). Where LAPACK reports failure (``info != 0``) the affected batch entries come out
as NaN, as in JAX. Lowerings are registered per platform, so a GPU backend adds its own
(cuSOLVER) without touching the other rules.
"""
from __future__ import annotations

import enum
from functools import partial

import numpy as np

from hlox.core import dtypes
from hlox.core.avals import ShapedArray
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, xla
from hlox.lax import control_flow, elementwise as ew, indexing, reductions, shapes
from hlox.lax.cumulative import cumsum
from hlox.lax.sorting import sort_key_val
from hlox.lax.dot import Precision, dot_general
from hlox.lax.linalg import lapack
from hlox.lax.linalg import gpu
from hlox.lax.linalg.gpu import register_gpu_lowering, solver_target
from hlox.lax.linalg.common import H as _H, T as _T, diagonal as _extract_diagonal
from hlox.lax.linalg.common import linalg_batch_rule, split_batch, symmetrize
from hlox.lax.linalg.factorizations import lu, lu_solve, qr
from hlox.lax.linalg.qdwh import qdwh
from hlox.lax.utils import standard_primitive

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

__all__ = ["eigh", "svd", "eig", "schur", "hessenberg", "tridiagonal", "EigImplementation",
           "EighImplementation", "SvdAlgorithm", "eigh_p", "svd_p", "eig_p", "schur_p",
           "hessenberg_p", "tridiagonal_p"]


class EigImplementation(enum.Enum):
  """Algorithm for the general eigendecomposition (only ``LAPACK`` runs on CPU)."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """Algorithm for the Hermitian eigendecomposition (only ``QR`` runs on CPU)."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """Algorithm for the SVD (``DEFAULT``/``DIVIDE_AND_CONQUER`` use gesdd, ``QR`` gesvd)."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


# --- shared pieces -------------------------------------------------------------------------

def _is_lapack_dtype(dtype) -> bool:
  return np.dtype(dtype) in (np.float32, np.float64, np.complex64, np.complex128)


def _matrix_primitive(name, core_shape, core_dtypes):
  """A multi-result primitive over one batch of matrices ``[..., m, n]``.

  ``core_shape(m, n, **params)`` gives the results' trailing shapes and
  ``core_dtypes(dtype, **params)`` their dtypes. Rank < 2 and non-float inputs raise
  ``TypeError`` (JAX's classes and wording); batching moves the mapped axis to the front.
  Results are weakly typed when the input is, as JAX's standard weak-type rule has it.
  """
  def shape_rule(aval, **params):
    batch, (core,) = split_batch(name, [aval], (2,))
    return [batch + tuple(s) for s in core_shape(*core, **params)]

  def dtype_rule(aval, **params):
    if not (dtypes.is_float(aval.dtype) or dtypes.is_complex(aval.dtype)):
      raise TypeError(f"{name} does not accept dtype {np.dtype(aval.dtype).name}. Accepted "
                      "dtypes are subtypes of floating, complexfloating.")
    return [np.dtype(d) for d in core_dtypes(np.dtype(aval.dtype), **params)]

  prim = standard_primitive(shape_rule, dtype_rule, name, multiple_results=True)
  batching.primitive_batchers[prim] = partial(linalg_batch_rule, prim)
  return prim


def _matmul(a, b):
  """Batched ``a @ b`` at the highest precision (JAX's linalg JVPs do the same)."""
  nd = get_aval(a).ndim
  batch = tuple(range(nd - 2))
  return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)),
                     precision=Precision.HIGHEST)


def _real_dtype(dtype):
  return np.dtype(np.finfo(dtype).dtype) if dtypes.is_complex(dtype) else np.dtype(dtype)


def _complex_dtype(dtype):
  return np.dtype(np.result_type(dtype, np.complex64))


def _cast(x, dtype):
  return ew.convert_element_type(x, dtype) if get_aval(x).dtype != np.dtype(dtype) else x


def _eye_like(x, n):
  """The identity ``[n, n]`` in ``x``'s dtype, with size-1 batch dims of ``x``'s rank."""
  aval = get_aval(x)
  eye = ew.convert_element_type(
      ew.eq(shapes.broadcasted_iota(np.int32, (n, n), 0),
            shapes.broadcasted_iota(np.int32, (n, n), 1)), aval.dtype)
  return shapes.reshape(eye, (1,) * (aval.ndim - 2) + (n, n))


def _row(v):
  """``v[..., None, :]``."""
  return shapes.expand_dims(v, (get_aval(v).ndim - 1,))


def _col(v):
  """``v[..., :, None]``."""
  return shapes.expand_dims(v, (get_aval(v).ndim,))


def _construct_diagonal(v):
  """The diagonal matrices with ``v[..., i]`` on their diagonals."""
  return ew.mul(_col(v), _eye_like(_col(v), get_aval(v).shape[-1]))


# --- lowering helpers ----------------------------------------------------------------------

def _replace_not_ok_with_nan(ok, x, aval, batch_dims):
  return lapack.replace_not_ok_with_nan(x, ok, aval, batch_dims)


def _info_ok(info, batch_dims):
  return lapack.info_ok(info, batch_dims)


_u8 = lapack.char_attr


def _i32(v: int) -> ir.Attribute:
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


def _call(routine, dtype, operands, avals_in, avals_out, **kw):
  """One LAPACK FFI custom call (``routine`` without the dtype letter and ``_ffi``)."""
  return lapack.ffi_call(lapack.lapack_target(routine, dtype), operands, avals_in, avals_out,
                         **kw)


def _register_cpu(prim, rule):
  xla.register_lowering(prim, rule, platform="cpu")


def _check_lapack_dtype(name, aval):
  lapack.check_lapack_dtype(name, aval.dtype)


def _slice_last(x, aval_full, aval_out):
  """The leading part of ``x`` (of ``aval_full``) with ``aval_out``'s shape."""
  if aval_full.shape == aval_out.shape:
    return x
  nd = len(aval_full.shape)
  return hlo.slice(x, xla.dense_i64([0] * nd), xla.dense_i64(aval_out.shape),
                   xla.dense_i64([1] * nd))


def _slice_range(x, aval_full, axis, start, stop):
  nd = len(aval_full.shape)
  starts = [0] * nd
  limits = list(aval_full.shape)
  starts[axis], limits[axis] = start, stop
  return hlo.slice(x, xla.dense_i64(starts), xla.dense_i64(limits), xla.dense_i64([1] * nd))


# --- eigh: Hermitian eigendecomposition ----------------------------------------------------

def _eigh_shape_rule(m, n, *, subset_by_index, **_):
  if m != n:
    raise ValueError("Argument to symmetric eigendecomposition must have shape [..., n, n], "
                     f"got shape {(m, n)}")
  d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
  return (n, d), (d,)


def _eigh_dtype_rule(dtype, **_):
  return dtype, _real_dtype(dtype)


eigh_p = _matrix_primitive("eigh", _eigh_shape_rule, _eigh_dtype_rule)


def _check_subset(name, subset_by_index, n):
  if subset_by_index is None:
    return None
  start, stop = (int(i) for i in subset_by_index)
  if not 0 <= start <= stop <= n:
    raise ValueError(f"{name}: subset_by_index={tuple(subset_by_index)} must satisfy "
                     f"0 <= start <= end <= {n}")
  return (start, stop)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
  """Eigendecomposition of Hermitian (or real symmetric) matrices ``[..., n, n]``.

  Returns ``(v, w)``: ``v[..., :, i]`` is the unit eigenvector of eigenvalue ``w[..., i]``
  (real, ascending). ``symmetrize_input`` replaces ``x`` by ``(x + x^H) / 2`` first; otherwise
  only the triangle named by ``lower`` is read. ``subset_by_index=(start, end)`` keeps
  eigenpairs ``start..end-1``.

  Args:
    x: array of shape ``[..., n, n]``.
    lower: keyword-only; which triangle is read without ``symmetrize_input``.
    symmetrize_input: keyword-only; symmetrize ``x`` first.
    sort_eigenvalues: keyword-only; sort eigenvalues ascending.
    subset_by_index: keyword-only; optional ``(start, end)`` range of eigenpairs to keep.
    implementation: keyword-only; accepted for JAX compatibility.

  Returns:
    A pair ``(v, w)`` of eigenvectors ``[..., n, k]`` and real eigenvalues ``[..., k]``.

  Examples:
    >>> v, w = lax.linalg.eigh(jnp.array([[2., 1.], [1., 2.]]))
    >>> w
    Array([1., 3.], dtype=float32)
  """
  if symmetrize_input:
    x = symmetrize(x)
  aval = get_aval(x)
  subset = _check_subset("eigh", subset_by_index, aval.shape[-1] if aval.ndim else 0)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset, algorithm=implementation)
  return v, w


def _eigh_jvp_rule(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  a, = primals
  a_dot, = tangents
  n = get_aval(a).shape[-1]
  if not (subset_by_index is None or subset_by_index == (0, n)):
    raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
  a_dot = ad.instantiate_zeros(a_dot)
  # As JAX: the primal is recomputed from the symmetrized input, and first-order
  # (non-degenerate) perturbation theory gives the tangents; F[i, j] = 1 / (w_j - w_i) off the
  # diagonal and 0 on it, so equal eigenvalues give infinities, as in JAX.
  v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                          subset_by_index=subset_by_index, algorithm=algorithm)
  dtype = get_aval(a).dtype
  w = _cast(w_real, dtype)
  eye = _eye_like(a, n)
  fmat = ew.sub(ew.integer_pow(ew.add(eye, ew.sub(_row(w), _col(w))), -1), eye)
  vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
  dv = _matmul(v, ew.mul(fmat, vdag_adot_v))
  real_part = ew.real(vdag_adot_v) if dtypes.is_complex(dtype) else vdag_adot_v
  dw = _extract_diagonal(real_part)
  return [v, w_real], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp_rule


def _eigh_cpu_lowering(ctx, operand, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  del sort_eigenvalues  # LAPACK always sorts (ascending).
  if algorithm not in (None, EighImplementation.QR):
    raise NotImplementedError(f"eigh: implementation {algorithm} is not supported on CPU")
  operand_aval, = ctx.avals_in
  _check_lapack_dtype("eigh", operand_aval)
  batch_dims = operand_aval.shape[:-2]
  n = operand_aval.shape[-1]
  v_full = operand_aval
  w_full = ShapedArray(batch_dims + (n,), _real_dtype(operand_aval.dtype))
  info_aval = ShapedArray(batch_dims, np.int32)
  prefix = "he" if dtypes.is_complex(operand_aval.dtype) else "sy"
  v, w, info = _call(
      f"{prefix}evd", operand_aval.dtype, [operand], [operand_aval],
      [v_full, w_full, info_aval], operand_output_aliases={0: 0},
      mode=_u8("V"), uplo=_u8("L" if lower else "U"))
  ok = _info_ok(info, batch_dims)
  v = _replace_not_ok_with_nan(ok, v, v_full, batch_dims)
  w = _replace_not_ok_with_nan(ok, w, w_full, batch_dims)
  if subset_by_index is not None and subset_by_index != (0, n):
    start, stop = subset_by_index
    v = _slice_range(v, v_full, len(batch_dims) + 1, start, stop)
    w = _slice_range(w, w_full, len(batch_dims), start, stop)
  return [v, w]


_register_cpu(eigh_p, _eigh_cpu_lowering)


def _eigh_gpu_lowering(ctx, operand, *, lower, sort_eigenvalues, subset_by_index, algorithm,
                       target_name_prefix):
  del sort_eigenvalues  # cuSOLVER always sorts (ascending).
  operand_aval, = ctx.avals_in
  v_aval, w_aval = ctx.avals_out
  n = operand_aval.shape[-1]
  if not (subset_by_index is None or subset_by_index == (0, n)):
    raise NotImplementedError("subset_by_index not supported on CPU and GPU")
  if algorithm == EighImplementation.QDWH:
    raise NotImplementedError("QDWH implementation is only supported on TPU")
  batch_dims = operand_aval.shape[:-2]
  # The kernel's algorithm code: 0 lets it choose (syevj for small matrices, syevd
  # otherwise), 1 forces syevd (QR), 2 syevj (Jacobi).
  algo = 0 if algorithm is None else 2 if algorithm == EighImplementation.JACOBI else 1
  v, w, info = lapack.ffi_call(
      solver_target(target_name_prefix, "syevd"), [operand], [operand_aval],
      [v_aval, w_aval, lapack.info_aval(batch_dims)], operand_output_aliases={0: 0},
      lower=bool(lower), algorithm=lapack.enum_attr(algo))
  ok = _info_ok(info, batch_dims)
  return [_replace_not_ok_with_nan(ok, v, v_aval, batch_dims),
          _replace_not_ok_with_nan(ok, w, w_aval, batch_dims)]


register_gpu_lowering(eigh_p, _eigh_gpu_lowering)


# TPU: JAX's default (QDWH) runs the TPU's own Jacobi solver (the ``Eigh`` custom call) on
# matrices up to 256x256, and a QDWH-based spectral divide-and-conquer above that size.


def _eigh_tpu_jacobi(ctx, operand, lower, sort_eigenvalues):
  """The TPU's ``Eigh`` call: an opaque backend config "lower,sort,max sweeps,tolerance"."""
  operand_aval, = ctx.avals_in
  if operand_aval.shape[-1] == 0:
    w_shape = ShapedArray(operand_aval.shape[:-1], operand_aval.dtype)
    return [operand, hlo.real(hlo.reshape(xla.aval_to_ir_type(w_shape), operand))]
  attrs = {
      "call_target_name": ir.StringAttr.get("Eigh"),
      "has_side_effect": ir.BoolAttr.get(False),
      "api_version": xla.i32_attr(1),
      "backend_config": ir.StringAttr.get(f"{int(lower)},{int(sort_eigenvalues)},100,1e-6"),
  }
  op = hlo.CustomCallOp.build_generic(
      results=[xla.aval_to_ir_type(a) for a in ctx.avals_out], operands=[operand],
      attributes=attrs)
  return list(op.results)


def _reflect_triangle(x, lower):
  """The Hermitian matrix whose ``lower`` (or upper) triangle is that of ``x``; the diagonal's
  imaginary part is dropped."""
  n = get_aval(x).shape[-1]
  rows = shapes.broadcasted_iota(np.int32, (n, n), 0)
  cols = shapes.broadcasted_iota(np.int32, (n, n), 1)
  on_or_below = lambda k: ew.ge(ew.add(rows, shapes.full((n, n), k, np.int32)), cols)  # noqa: E731
  keep = on_or_below(0) if lower else ew.bitwise_not(on_or_below(-1))
  if not dtypes.is_complex(get_aval(x).dtype):
    return ew.select(keep, x, _T(x))
  strict = on_or_below(-1) if lower else ew.bitwise_not(on_or_below(0))
  re = ew.select(keep, ew.real(x), _T(ew.real(x)))
  im = ew.select(strict, ew.imag(x), shapes.full_like(ew.imag(x), 0))
  im = ew.select(keep, im, ew.neg(_T(im)))
  return ew.complex(re, im)


def _eigh_tpu_default(x, *, lower, sort_eigenvalues, subset_by_index):
  """JAX's default TPU eigh: one ``Eigh`` call, with ``subset_by_index`` taken from the
  sorted full decomposition, matrix by matrix. (Above 256x256 JAX
  splits the spectrum by QDWH first, which hlox does not implement: the Jacobi solver then
  takes the whole matrix, the same decomposition at a higher cost.)"""
  n = get_aval(x).shape[-1]
  if subset_by_index in (None, (0, n)):
    return eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                       subset_by_index=None, algorithm=EighImplementation.JACOBI)
  start, stop = subset_by_index
  if start >= stop:
    raise ValueError("Got empty index range in subset_by_index.")

  def one(a):
    if get_aval(a).ndim > 2:
      return control_flow.map(one, a)
    v, w = eigh_p.bind(_reflect_triangle(a, lower), lower=True, sort_eigenvalues=True,
                       subset_by_index=None, algorithm=EighImplementation.JACOBI)
    return shapes.slice_in_dim(v, start, stop, axis=1), shapes.slice_in_dim(w, start, stop)
  return one(x)


def _eigh_tpu_lowering(ctx, operand, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  if algorithm == EighImplementation.QR:
    raise NotImplementedError("QR algorithm is not supported on TPU")
  if algorithm == EighImplementation.JACOBI:
    return _eigh_tpu_jacobi(ctx, operand, lower, sort_eigenvalues)
  return xla.lower_fun(_eigh_tpu_default, multiple_results=True)(
      ctx, operand, lower=lower, sort_eigenvalues=sort_eigenvalues,
      subset_by_index=subset_by_index)


xla.register_lowering(eigh_p, _eigh_tpu_lowering, platform="tpu")


# --- svd -----------------------------------------------------------------------------------

def _svd_shape_rule(m, n, *, full_matrices, compute_uv, subset_by_index, **_):
  rank = min(m, n)
  if subset_by_index is not None:
    if full_matrices and tuple(subset_by_index) != (0, rank):
      raise ValueError("full_matrices and subset_by_index cannot both be set")
    rank = min(rank, subset_by_index[1] - subset_by_index[0])
  if compute_uv:
    return ((rank,), (m, m if full_matrices else rank), (n if full_matrices else rank, n))
  return ((rank,),)


def _svd_dtype_rule(dtype, *, compute_uv, **_):
  real = _real_dtype(dtype)
  return (real, dtype, dtype) if compute_uv else (real,)


svd_p = _matrix_primitive("svd", _svd_shape_rule, _svd_dtype_rule)


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
  """Singular value decomposition of matrices ``[..., m, n]``.

  Returns ``(u, s, vh)`` with ``x = u @ diag(s) @ vh`` (``s`` real, descending), or only
  ``s`` when ``compute_uv`` is false. ``full_matrices=False`` gives the reduced ``u``
  ``[..., m, k]`` and ``vh`` ``[..., k, n]``, ``k = min(m, n)``.

  Args:
    x: array of shape ``[..., m, n]``.
    full_matrices: keyword-only; return full ``u`` and ``vh`` (else reduced ones).
    compute_uv: keyword-only; also return ``u`` and ``vh``.
    subset_by_index: keyword-only; optional ``(start, end)`` range of singular values.
    algorithm: keyword-only; an ``SvdAlgorithm`` or None (the default).

  Returns:
    ``(u, s, vh)``, or ``s`` alone.

  Examples:
    >>> lax.linalg.svd(jnp.array([[3., 0.], [0., -2.]]), compute_uv=False)
    Array([3., 2.], dtype=float32)
  """
  aval = get_aval(x)
  subset = None
  if subset_by_index is not None:
    k = min(aval.shape[-2:]) if aval.ndim >= 2 else 0
    subset = _check_subset("svd", subset_by_index, k)
  result = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=subset, algorithm=algorithm)
  if compute_uv:
    s, u, vh = result
    return u, s, vh
  s, = result
  return s


def _svd_jvp_rule(primals, tangents, *, full_matrices, compute_uv, subset_by_index,
                  algorithm=None):
  a, = primals
  da, = tangents
  da = ad.instantiate_zeros(da)
  aval = get_aval(a)
  m, n = aval.shape[-2:]
  s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                        subset_by_index=subset_by_index, algorithm=algorithm)
  if compute_uv and full_matrices and m != n:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices")
  dtype = aval.dtype
  ut, v = _H(u), _H(vt)
  s_row = _row(s)
  ds_mat = _matmul(_matmul(ut, da), v)
  ds = _extract_diagonal(ew.real(ds_mat) if dtypes.is_complex(dtype) else ds_mat)
  if not compute_uv:
    return [s], [ds]
  # F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it (as JAX).
  k = get_aval(s).shape[-1]
  s_col = _T(s_row)
  s_diffs = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))
  eye_real = _eye_like(s_diffs, k)
  f = ew.sub(ew.div(shapes.full((), 1, get_aval(s).dtype), ew.add(s_diffs, eye_real)), eye_real)
  s_row_c = _cast(s_row, dtype)
  dss = ew.mul(s_row_c, ds_mat)
  sds = ew.mul(_T(s_row_c), ds_mat)
  s_zeros = _cast(ew.eq(s, shapes.full((), 0, get_aval(s).dtype)), get_aval(s).dtype)
  one = shapes.full((), 1, get_aval(s).dtype)
  s_inv = ew.sub(ew.div(one, ew.add(s, s_zeros)), s_zeros)
  s_inv_mat = _construct_diagonal(s_inv)
  half = shapes.full((), 0.5, dtype)
  dudv_diag = ew.mul(ew.mul(half, ew.sub(ds_mat, _H(ds_mat))), _cast(s_inv_mat, dtype))
  f_c = _cast(f, dtype)
  du = _matmul(u, ew.add(ew.mul(f_c, ew.add(dss, _H(dss))), dudv_diag))
  dv = _matmul(v, ew.mul(f_c, ew.add(sds, _H(sds))))
  if m > n:
    dav = _matmul(da, v)
    du = ew.add(du, ew.div(ew.sub(dav, _matmul(u, _matmul(ut, dav))), s_row_c))
  if n > m:
    dahu = _matmul(_H(da), u)
    dv = ew.add(dv, ew.div(ew.sub(dahu, _matmul(v, _matmul(vt, dahu))), s_row_c))
  return [s, u, vt], [ds, du, _H(dv)]


ad.primitive_jvps[svd_p] = _svd_jvp_rule


def _empty_svd(a, *, full_matrices, compute_uv):
  """The SVD of a matrix with a zero dimension (LAPACK is not called)."""
  aval = get_aval(a)
  batch = aval.shape[:-2]
  m, n = aval.shape[-2:]
  s = shapes.full(batch + (0,), 0, _real_dtype(aval.dtype))
  if not compute_uv:
    return [s]
  if full_matrices:
    size = max(m, n)
    eye = _eye_like(shapes.full((size, size), 0, aval.dtype), size)
    u = shapes.broadcast_in_dim(shapes.reshape(eye, (size, size)), batch + (size, size),
                                (len(batch), len(batch) + 1))
  else:
    u = shapes.full(batch + (m, n), 0, aval.dtype)
  v = shapes.full(batch + (0, 0), 0, aval.dtype)
  if m < n:
    u, v = v, u
  return [s, u, v]


def _svd_cpu_lowering(ctx, operand, *, full_matrices, compute_uv, subset_by_index,
                      algorithm=None):
  operand_aval, = ctx.avals_in
  m, n = operand_aval.shape[-2:]
  batch_dims = operand_aval.shape[:-2]
  k = min(m, n)
  if m == 0 or n == 0:
    return xla.lower_fun(_empty_svd, multiple_results=True)(
        ctx, operand, full_matrices=full_matrices, compute_uv=compute_uv)
  _check_lapack_dtype("svd", operand_aval)
  if algorithm in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
    routine = "gesdd"
  elif algorithm == SvdAlgorithm.QR:
    routine = "gesvd"
  else:
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")
  mode = "A" if full_matrices else "S"
  if not compute_uv:
    mode = "N"
  dtype = operand_aval.dtype
  s_aval = ShapedArray(batch_dims + (k,), _real_dtype(dtype))
  u_aval = ShapedArray(batch_dims + (m, m if full_matrices else k), dtype)
  vt_aval = ShapedArray(batch_dims + (n if full_matrices else k, n), dtype)
  info_aval = ShapedArray(batch_dims, np.int32)
  _, s, u, vt, info = _call(
      routine, dtype, [operand], [operand_aval],
      [operand_aval, s_aval, u_aval, vt_aval, info_aval], operand_output_aliases={0: 0},
      mode=_u8(mode))
  ok = _info_ok(info, batch_dims)
  results = [(s, s_aval)]
  if compute_uv:
    results += [(u, u_aval), (vt, vt_aval)]
  outs = []
  nb = len(batch_dims)
  for (x, aval), aval_out in zip(results, ctx.avals_out):
    x = _replace_not_ok_with_nan(ok, x, aval, batch_dims)
    if subset_by_index is not None and subset_by_index != (0, k):
      start, stop = subset_by_index
      axis = {0: nb, 1: nb + 1, 2: nb}[len(outs)]
      x = _slice_range(x, aval, axis, start, stop)
    outs.append(x)
  return outs


_register_cpu(svd_p, _svd_cpu_lowering)


def _gpu_svd_routine(prefix, algorithm, m, n):
  """The cuSOLVER/hipSOLVER routine JAX picks: the requested one, else Jacobi (gesvdj) up to
  1024x1024 and QR-based gesvd above (Jacobi is the faster of the two on small matrices)."""
  if algorithm in (None, SvdAlgorithm.DEFAULT):
    return "gesvdj" if m <= 1024 and n <= 1024 else "gesvd"
  if algorithm == SvdAlgorithm.DIVIDE_AND_CONQUER:
    if prefix != "hip":
      raise NotImplementedError(
          "Divide-and-conquer SVD (SvdAlgorithm.DIVIDE_AND_CONQUER) is only supported on AMD "
          "(ROCm) GPUs, not on NVIDIA CUDA.")
    return "gesdd"
  return {SvdAlgorithm.QR: "gesvd", SvdAlgorithm.JACOBI: "gesvdj",
          SvdAlgorithm.POLAR: "gesvdp"}[algorithm]


def _svd_gpu_lowering(ctx, operand, *, full_matrices, compute_uv, subset_by_index,
                      target_name_prefix, algorithm=None):
  operand_aval, = ctx.avals_in
  m, n = operand_aval.shape[-2:]
  k = min(m, n)
  if not (subset_by_index is None or subset_by_index == (0, k)):
    raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
  if m == 0 or n == 0:
    return xla.lower_fun(_empty_svd, multiple_results=True)(
        ctx, operand, full_matrices=full_matrices, compute_uv=compute_uv)
  batch_dims = operand_aval.shape[:-2]
  nb = len(batch_dims)
  dtype = operand_aval.dtype
  s_aval = ctx.avals_out[0]
  routine = _gpu_svd_routine(target_name_prefix, algorithm, m, n)
  econ = not full_matrices
  column_major = True
  extra = {}
  if routine in ("gesvdj", "gesvdp"):
    if routine == "gesvdj":
      # The batched Jacobi kernel (used up to 32x32) has no economic mode.
      econ = not full_matrices and m > 32 and n > 32
    # These kernels return V (not V^H) and always need room for U and V.
    u_aval = ShapedArray(batch_dims + (m, k if econ else m), dtype)
    v_aval = ShapedArray(batch_dims + (n, k if econ else n), dtype)
    vecs = [u_aval, v_aval]
  else:
    u_aval = ShapedArray(batch_dims + (m, m if full_matrices else k), dtype)
    vt_aval = ShapedArray(batch_dims + (n if full_matrices else k, n), dtype)
    if not compute_uv:  # unused placeholders, as JAX allocates them
      u_aval = vt_aval = ShapedArray((), dtype)
    # gesvd needs m >= n: a wide matrix is factored as its (row-major, hence transposed)
    # self, and U and V^H swap roles.
    transposed = routine == "gesvd" and m < n
    column_major = not transposed
    extra["transposed"] = transposed
    vecs = [vt_aval, u_aval] if transposed else [u_aval, vt_aval]
  _, s, u, vt, info = lapack.ffi_call(
      solver_target(target_name_prefix, routine), [operand], [operand_aval],
      [operand_aval, s_aval, *vecs, lapack.info_aval(batch_dims)],
      column_major=column_major, operand_output_aliases={0: 0},
      full_matrices=not econ, compute_uv=bool(compute_uv), **extra)
  if extra.get("transposed"):
    u, vt = vt, u
  if routine in ("gesvdj", "gesvdp") and compute_uv:
    # V -> V^H, and cut the full U, V down when the kernel could not be asked for the
    # reduced ones.
    vt = hlo.transpose(vt, xla.dense_i64(tuple(range(nb)) + (nb + 1, nb)))
    if dtypes.is_complex(dtype):
      vt = hlo.complex(hlo.real(vt), hlo.negate(hlo.imag(vt)))
    if not full_matrices and not econ:
      u = _slice_last(u, u_aval, ctx.avals_out[1])
      vt = _slice_last(vt, ShapedArray(batch_dims + (n, n), dtype), ctx.avals_out[2])
  ok = _info_ok(info, batch_dims)
  outs = [_replace_not_ok_with_nan(ok, s, s_aval, batch_dims)]
  if compute_uv:
    outs += [_replace_not_ok_with_nan(ok, u, ctx.avals_out[1], batch_dims),
             _replace_not_ok_with_nan(ok, vt, ctx.avals_out[2], batch_dims)]
  return outs


register_gpu_lowering(svd_p, _svd_gpu_lowering)


# TPU: JAX's SVD there is an algorithm on other primitives: a polar decomposition a = u_p h by
# QDWH, then the eigendecomposition h = v diag(s) v^H, so that a = (u_p v) diag(s) v^H
# (Nakatsukasa & Higham, SIAM J. Sci. Comput. 35(3), 2013).

def _svd_polar_tall(a, compute_uv, subset_by_index):
  """The SVD of one ``[m, n]`` matrix with ``m >= n``: ``(u [m, k], s [k], v [n, k])``
  (``v``, not ``v^H``), or ``s`` alone; ``subset_by_index`` counts eigenvalues of h
  (ascending)."""
  n = get_aval(a).shape[1]
  u_p, h, _, _ = qdwh(a, max_iterations=10)
  v, s = eigh(h, subset_by_index=subset_by_index, sort_eigenvalues=False)
  s = ew.max(s, shapes.full_like(s, 0))  # eigh may return tiny negative values
  # Descending singular values, and the eigenvectors in the same order.
  k = get_aval(s).shape[0]
  neg_s, perm = sort_key_val(ew.neg(s), shapes.broadcasted_iota(np.int32, (k,), 0))
  s = ew.neg(neg_s)
  if not compute_uv:
    return s
  v = _T(indexing.index_take(_T(v), [perm], (0,)))
  u = _matmul(u_p, v)

  # If a is (nearly) rank deficient, u_p v need not have orthonormal columns: re-orthonormalize
  # them once by QR, keeping each column's sign (ibid., section 5.5).
  def fix_columns(state):
    u, _ = state
    q, r = qr(u, full_matrices=False)
    d = _extract_diagonal(r)
    zero = shapes.full((k,), 0, _real_dtype(get_aval(d).dtype))
    if dtypes.is_complex(get_aval(d).dtype):  # d >= 0 as NumPy orders complex numbers
      nonneg = ew.select(ew.eq(ew.real(d), zero), ew.ge(ew.imag(d), zero),
                         ew.ge(ew.real(d), zero))
    else:
      nonneg = ew.ge(d, zero)
    signs = ew.select(nonneg, shapes.full((k,), 1, get_aval(q).dtype),
                      shapes.full((k,), -1, get_aval(q).dtype))
    return ew.mul(q, _row(signs)), shapes.full((), False, np.bool_)

  eps = float(np.finfo(np.dtype(get_aval(a).dtype)).eps)
  entry = lambda i: shapes.reshape(shapes.slice_in_dim(s, i, i + 1), ())  # noqa: E731
  deficient = ew.le(entry(k - 1), ew.mul(shapes.full((), n * eps, get_aval(s).dtype), entry(0)))
  u, _ = control_flow.while_loop(lambda state: state[1], fix_columns, (u, deficient))
  return u, s, v


def _svd_polar(a, *, full_matrices, compute_uv, subset_by_index):
  """JAX's TPU SVD of one matrix: ``(u, s, vh)`` or ``s``."""
  m, n = get_aval(a).shape
  k = min(m, n)
  if subset_by_index is not None:
    if subset_by_index[0] >= subset_by_index[1]:
      raise ValueError("Got empty index range in subset_by_index.")
    # Singular values are numbered in descending order, the eigenvalues of h ascending.
    subset_by_index = (k - subset_by_index[1], k - subset_by_index[0])
  flip = m < n
  if flip:  # factor a^H instead, and swap the roles of u and v
    a = _H(a)
    m, n = n, m
  q = u_null = None
  if full_matrices and m > n:
    # Reduce to the square factor of a full QR; its extra columns complete u.
    q_full, r = qr(a, full_matrices=True)
    q = shapes.slice_in_dim(q_full, 0, n, axis=1)
    u_null = shapes.slice_in_dim(q_full, n, m, axis=1)
    a = shapes.slice_in_dim(r, 0, n, axis=0)
  elif m > 1.15 * n:  # QR first pays off for clearly tall matrices (Nakatsukasa's choice)
    q, a = qr(a, full_matrices=False)
  if not compute_uv:
    return _svd_polar_tall(a, False, subset_by_index)
  u, s, v = _svd_polar_tall(a, True, subset_by_index)
  if q is not None:
    u = _matmul(q, u)
  if u_null is not None:
    u = shapes.concatenate([u, u_null], 1)
  # Non-finite input: every result is NaN.
  if dtypes.is_complex(get_aval(a).dtype):
    finite = ew.bitwise_and(ew.is_finite(ew.real(a)), ew.is_finite(ew.imag(a)))
  else:
    finite = ew.is_finite(a)
  finite = reductions.reduce_and(finite, (0, 1))
  u, s, v = (ew.select(shapes.broadcast_in_dim(finite, get_aval(x).shape, ()), x,
                       shapes.full_like(x, np.nan)) for x in (u, s, v))
  return (v, s, _H(u)) if flip else (u, s, _H(v))


def _svd_tpu(a, *, full_matrices, compute_uv, subset_by_index):
  fn = partial(_svd_polar, full_matrices=full_matrices, compute_uv=compute_uv,
               subset_by_index=subset_by_index)
  for _ in range(get_aval(a).ndim - 2):  # vmapped over the batch dimensions, as JAX
    fn = batching.map_leading_axis(fn)
  if compute_uv:
    u, s, vh = fn(a)
    return [s, u, vh]
  return [fn(a)]


def _svd_tpu_lowering(ctx, operand, *, full_matrices, compute_uv, subset_by_index,
                      algorithm=None):
  if algorithm not in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.POLAR):
    raise NotImplementedError(
        "Only the POLAR (which is also DEFAULT on TPU) SVD algorithm is supported on TPU.")
  m, n = ctx.avals_in[0].shape[-2:]
  fun = _empty_svd if m == 0 or n == 0 else partial(_svd_tpu, subset_by_index=subset_by_index)
  return xla.lower_fun(fun, multiple_results=True)(
      ctx, operand, full_matrices=full_matrices, compute_uv=compute_uv)


xla.register_lowering(svd_p, _svd_tpu_lowering, platform="tpu")


# --- eig: general eigendecomposition -------------------------------------------------------

def _eig_shape_rule(m, n, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
  if m != n:
    raise ValueError(f"The input to eig must be a square matrix. Got shape {(m, n)}.")
  count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
  return ((n,),) + ((n, n),) * count


def _eig_dtype_rule(dtype, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
  count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
  return (_complex_dtype(dtype),) * (1 + count)


eig_p = _matrix_primitive("eig", _eig_shape_rule, _eig_dtype_rule)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
  """Eigendecomposition of general square matrices ``[..., n, n]`` (CPU only).

  Returns ``[w, vl, vr]`` (complex): eigenvalues, left and right eigenvectors; the
  eigenvectors are left out when not requested. Failed entries are NaN.
  ``enable_eigvec_derivs`` allows differentiating eigenvectors (valid only for distinct
  eigenvalues, as JAX documents).

  Args:
    x: array of shape ``[..., n, n]``.
    compute_left_eigenvectors: keyword-only; include ``vl``.
    compute_right_eigenvectors: keyword-only; include ``vr``.
    enable_eigvec_derivs: keyword-only; allow differentiating the eigenvectors.
    implementation: keyword-only; accepted for JAX compatibility.
    use_magma: keyword-only; accepted for JAX compatibility (GPU only).

  Returns:
    A list ``[w]``, ``[w, vl]``, ``[w, vr]`` or ``[w, vl, vr]`` of complex arrays.

  Examples:
    >>> lax.linalg.eig(jnp.array([[2., 0.], [0., 1.]]), compute_left_eigenvectors=False)
    [Array([2.+0.j, 1.+0.j], dtype=complex64), Array([[1.+0.j, 0.+0.j],
           [0.+0.j, 1.+0.j]], dtype=complex64)]
  """
  if use_magma is not None:
    implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs),
                    implementation=implementation)


def _solve(a, b):
  """``a^{-1} b`` for square ``a`` and ``b`` ``[..., n, k]`` (same batch), through LU."""
  lu_, _, permutation = lu(a)
  return lu_solve(lu_, permutation, b)


def _eig_vec_jvp(w, v, da):
  # First-order perturbation theory for distinct eigenvalues. LAPACK's geev fixes each
  # eigenvector's free complex scale by unit 2-norm and a real largest-magnitude component;
  # the correction c_j below keeps the tangent consistent with that choice (as JAX).
  n = get_aval(w).shape[-1]
  nd = get_aval(v).ndim
  eye = _eye_like(v, n)
  fmat = ew.sub(ew.reciprocal(ew.add(eye, ew.sub(_row(w), _col(w)))), eye)
  p = _matmul(_solve(v, da), v)
  dw = _extract_diagonal(p)
  u = _matmul(v, ew.mul(fmat, p))
  k = reductions.argmax(ew.abs(v), nd - 2, np.int32)
  mask = _cast(ew.eq(shapes.broadcasted_iota(np.int32, get_aval(v).shape, nd - 2),
                     shapes.expand_dims(k, (nd - 2,))), get_aval(v).dtype)
  re = ew.neg(ew.real(reductions.reduce_sum(ew.mul(ew.conj(v), u), (nd - 2,))))
  im = ew.neg(ew.div(ew.imag(reductions.reduce_sum(ew.mul(mask, u), (nd - 2,))),
                     ew.real(reductions.reduce_sum(ew.mul(mask, v), (nd - 2,)))))
  c = ew.complex(re, im)
  return dw, ew.add(u, ew.mul(v, shapes.expand_dims(c, (nd - 2,))))


def _eig_jvp_rule(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
                  enable_eigvec_derivs, implementation):
  a, = primals
  da, = tangents
  if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
        "input that hlox cannot check (see the enable_eigvec_derivs argument to "
        "hlox.lax.linalg.eig). Pass enable_eigvec_derivs=True to hlox.lax.linalg.eig to opt "
        "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
  outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                    compute_right_eigenvectors=True,
                    enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
  w, vr = outs[0], outs[-1]
  da = _cast(ad.instantiate_zeros(da), get_aval(vr).dtype)
  if not (compute_left_eigenvectors or compute_right_eigenvectors):
    dw = reductions.reduce_sum(ew.mul(_solve(vr, da), _T(vr)), (get_aval(vr).ndim - 1,))
    return [w], [dw]
  dw, dvr = _eig_vec_jvp(w, vr, da)
  primal_out, tangent_out = [w], [dw]
  if compute_left_eigenvectors:
    vl = outs[1]
    _, dvl = _eig_vec_jvp(ew.conj(w), vl, _H(da))
    primal_out.append(vl)
    tangent_out.append(dvl)
  if compute_right_eigenvectors:
    primal_out.append(vr)
    tangent_out.append(dvr)
  return primal_out, tangent_out


ad.primitive_jvps[eig_p] = _eig_jvp_rule


def _eig_cpu_lowering(ctx, operand, *, compute_left_eigenvectors, compute_right_eigenvectors,
                      enable_eigvec_derivs, implementation):
  del enable_eigvec_derivs
  if implementation not in (None, EigImplementation.LAPACK):
    raise ValueError("Only the lapack implementation is supported on CPU.")
  operand_aval, = ctx.avals_in
  _check_lapack_dtype("eig", operand_aval)
  batch_dims = operand_aval.shape[:-2]
  dtype = operand_aval.dtype
  real = not dtypes.is_complex(dtype)
  w_aval = ShapedArray(operand_aval.shape[:-1], dtype)
  vec_aval = ShapedArray(operand_aval.shape, _complex_dtype(dtype))
  info_aval = ShapedArray(batch_dims, np.int32)
  avals_out = [w_aval, vec_aval, vec_aval, info_aval]
  if real:  # real and imaginary parts of the eigenvalues come separately
    avals_out = [w_aval] + avals_out
  compute = lambda flag: _u8("V" if flag else "N")  # noqa: E731
  *w, vl, vr, info = _call(
      "geev", dtype, [operand], [operand_aval], avals_out,
      compute_left=compute(compute_left_eigenvectors),
      compute_right=compute(compute_right_eigenvectors))
  w = hlo.complex(w[0], w[1]) if real else w[0]
  return _eig_outputs(_info_ok(info, batch_dims), batch_dims, w, ctx.avals_out[0],
                      vl if compute_left_eigenvectors else None,
                      vr if compute_right_eigenvectors else None, vec_aval)


def _eig_outputs(ok, batch_dims, w, w_aval, vl, vr, vec_aval) -> list:
  """eig's results (the eigenvectors asked for: not None), NaN for failed matrices."""
  out = [_replace_not_ok_with_nan(ok, w, w_aval, batch_dims)]
  out += [_replace_not_ok_with_nan(ok, v, vec_aval, batch_dims) for v in (vl, vr)
          if v is not None]
  return out


_register_cpu(eig_p, _eig_cpu_lowering)


def _unpack_conjugate_pairs(w, vr):
  """Complex eigenvectors from the packed real ones of ``geev`` (as LAPACK's): a conjugate
  pair ``w[j], w[j+1]`` shares columns ``j`` (real part) and ``j+1`` (imaginary part)."""
  vr_aval = get_aval(vr)
  nd = vr_aval.ndim
  if vr_aval.size == 0:
    return ew.complex(vr, shapes.full_like(vr, 0))
  is_real = ew.eq(ew.imag(w), shapes.full((), 0, get_aval(vr).dtype))
  # A complex eigenvalue starts a pair when it is the odd-numbered complex one so far.
  count = cumsum(_cast(ew.bitwise_not(is_real), np.int32), axis=nd - 2)
  pair_start = ew.eq(ew.rem(count, shapes.full((), 2, np.int32)),
                     shapes.full((), 1, np.int32))
  zero = shapes.full((), 0, vr_aval.dtype)
  no_pad = [(0, 0, 0)] * (nd - 1)
  next_col = shapes.pad(vr, zero, no_pad + [(-1, 1, 0)])  # column j+1 at j
  prev_col = shapes.pad(vr, zero, no_pad + [(1, -1, 0)])  # column j-1 at j
  dims = tuple(range(nd - 2)) + (nd - 1,)
  is_real = shapes.broadcast_in_dim(is_real, vr_aval.shape, dims)
  pair_start = shapes.broadcast_in_dim(pair_start, vr_aval.shape, dims)
  re = ew.select(ew.bitwise_or(is_real, pair_start), vr, prev_col)
  im = ew.select(pair_start, next_col, ew.neg(vr))
  im = ew.select(is_real, shapes.full_like(vr, 0), im)
  return ew.complex(re, im)


def _eig_gpu_lowering(ctx, operand, *, compute_left_eigenvectors, compute_right_eigenvectors,
                      enable_eigvec_derivs, implementation, target_name_prefix):
  del enable_eigvec_derivs
  operand_aval, = ctx.avals_in
  batch_dims = operand_aval.shape[:-2]
  n = operand_aval.shape[-1]
  dtype = np.dtype(operand_aval.dtype)
  if not _is_lapack_dtype(dtype):
    raise ValueError(f"Unsupported dtype: {dtype}")
  real = not dtypes.is_complex(dtype)
  complex_dtype = _complex_dtype(dtype)
  vec_aval = ShapedArray(batch_dims + (n, n), complex_dtype)
  # As JAX: cuSOLVER's geev (11.7.1 on) unless left eigenvectors are asked for; otherwise
  # the hybrid kernel (LAPACK on the host, or MAGMA).
  have_geev = target_name_prefix == "cu" and (gpu.cusolver_version() or 0) >= 11701
  if ((implementation is None and have_geev and not compute_left_eigenvectors)
      or implementation == EigImplementation.CUSOLVER):
    if not have_geev:
      raise RuntimeError("Nonsymmetric eigendecomposition requires cusolver 11.7.1 or newer")
    if compute_left_eigenvectors:
      raise NotImplementedError("Left eigenvectors are not supported by cusolver")
    mat_aval = ShapedArray(batch_dims + (n, n), dtype)
    w_aval = ShapedArray(batch_dims + (n,), complex_dtype)
    _, w, vl, vr, info = lapack.ffi_call(
        solver_target(target_name_prefix, "geev"), [operand], [operand_aval],
        [mat_aval, w_aval, mat_aval, mat_aval, lapack.info_aval(batch_dims)],
        left=bool(compute_left_eigenvectors), right=bool(compute_right_eigenvectors))
    if real and compute_right_eigenvectors:
      sub_ctx = ctx.replace(primitive=None, avals_in=[w_aval, mat_aval], avals_out=[vec_aval])
      vr = xla.lower_fun(_unpack_conjugate_pairs, multiple_results=False)(sub_ctx, w, vr)
  else:
    # 'auto' (JAX's default gpu_use_magma) lets the kernel use MAGMA for large matrices
    # when it is installed.
    magma = "auto"
    if implementation is not None:
      magma = "on" if implementation == EigImplementation.MAGMA else "off"
    w_aval = ShapedArray(batch_dims + (n,), dtype)
    avals_out = [w_aval, vec_aval, vec_aval, lapack.info_aval(batch_dims)]
    if real:  # real and imaginary parts of the eigenvalues come separately
      avals_out = [w_aval] + avals_out
    kind = "real" if real else "comp"
    *w, vl, vr, info = lapack.ffi_call(
        f"{target_name_prefix}hybrid_eig_{kind}", [operand], [operand_aval], avals_out,
        magma=magma, left=bool(compute_left_eigenvectors),
        right=bool(compute_right_eigenvectors))
    w = hlo.complex(*w) if real else w[0]
  return _eig_outputs(_info_ok(info, batch_dims), batch_dims, w,
                      ShapedArray(batch_dims + (n,), complex_dtype),
                      vl if compute_left_eigenvectors else None,
                      vr if compute_right_eigenvectors else None, vec_aval)


register_gpu_lowering(eig_p, _eig_gpu_lowering)


# --- schur ---------------------------------------------------------------------------------

def _schur_shape_rule(m, n, *, compute_schur_vectors, **_):
  if m != n:
    raise ValueError(f"The input to schur must be a square matrix. Got shape {(m, n)}.")
  return ((m, n), (m, n)) if compute_schur_vectors else ((m, n),)


def _schur_dtype_rule(dtype, *, compute_schur_vectors, **_):
  return (dtype, dtype) if compute_schur_vectors else (dtype,)


schur_p = _matrix_primitive("schur", _schur_shape_rule, _schur_dtype_rule)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
  """Schur decomposition ``x = q @ t @ q^H`` of square matrices (CPU only).

  Returns ``(t, q)`` (``t`` upper (quasi-)triangular; real input gives the real Schur form),
  or only ``t`` when ``compute_schur_vectors`` is false. ``sort_eig_vals`` and
  ``select_callable`` are accepted for JAX compatibility; sorting is not implemented.

  Args:
    x: array of shape ``[..., n, n]``.
    compute_schur_vectors: keyword-only; also return ``q``.
    sort_eig_vals: keyword-only; accepted for JAX compatibility.
    select_callable: keyword-only; accepted for JAX compatibility.

  Returns:
    ``(t, q)``, or ``t`` alone.

  Examples:
    >>> t, q = lax.linalg.schur(jnp.array([[1., 2.], [0., 3.]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
  """
  out = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                     sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
  return tuple(out) if compute_schur_vectors else out[0]


def _schur_cpu_lowering(ctx, operand, *, compute_schur_vectors, sort_eig_vals,
                        select_callable):
  del select_callable
  if sort_eig_vals:
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
  operand_aval, = ctx.avals_in
  _check_lapack_dtype("schur", operand_aval)
  batch_dims = operand_aval.shape[:-2]
  dtype = operand_aval.dtype
  info_aval = ShapedArray(batch_dims, np.int32)
  w_aval = ShapedArray(operand_aval.shape[:-1], dtype)
  if dtypes.is_complex(dtype):
    avals_out = [operand_aval, operand_aval, w_aval, info_aval, info_aval]
  else:
    avals_out = [operand_aval, operand_aval, w_aval, w_aval, info_aval, info_aval]
  t, q, *_, info = _call(
      "gees", dtype, [operand], [operand_aval], avals_out,
      operand_output_aliases={0: 0}, mode=_u8("V" if compute_schur_vectors else "N"),
      sort=_u8("N"))
  ok = _info_ok(info, batch_dims)
  out = [_replace_not_ok_with_nan(ok, t, operand_aval, batch_dims)]
  if compute_schur_vectors:
    out.append(_replace_not_ok_with_nan(ok, q, operand_aval, batch_dims))
  return out


_register_cpu(schur_p, _schur_cpu_lowering)
# No GPU kernel (JAX has no GPU rule): LAPACK on the host.
register_gpu_lowering(schur_p, gpu.host_lowering(schur_p))


# --- hessenberg ----------------------------------------------------------------------------

def _hessenberg_shape_rule(m, n, **_):
  if m != n:
    raise ValueError("Argument to Hessenberg reduction must have shape [..., n, n], "
                     f"got shape {(m, n)}")
  return (m, n), (max(n - 1, 0),)


def _hessenberg_dtype_rule(dtype, **_):
  return dtype, dtype


hessenberg_p = _matrix_primitive("hessenberg", _hessenberg_shape_rule, _hessenberg_dtype_rule)


def hessenberg(a):
  """Reduction of square matrices to upper Hessenberg form (CPU only).

  Returns ``(a, taus)`` in LAPACK's packed form: the Hessenberg matrix in the upper part and
  the Householder reflectors below the first subdiagonal, with their scales ``taus``.

  Args:
    a: array of shape ``[..., n, n]``.

  Returns:
    A pair ``(a, taus)``: the packed Hessenberg form and ``[..., n - 1]`` reflector scales.

  Examples:
    >>> h, taus = lax.linalg.hessenberg(jnp.array([[1., 2.], [3., 4.]]))
    >>> taus
    Array([0.], dtype=float32)
  """
  h, taus = hessenberg_p.bind(a)
  return h, taus


def _hessenberg_cpu_lowering(ctx, a):
  a_aval, = ctx.avals_in
  _check_lapack_dtype("hessenberg", a_aval)
  batch_dims = a_aval.shape[:-2]
  n = a_aval.shape[-1]
  info_aval = ShapedArray(batch_dims, np.int32)
  h, taus, info = _call(
      "gehrd", a_aval.dtype, [a], [a_aval], [*ctx.avals_out, info_aval],
      operand_output_aliases={0: 0}, low=_i32(1), high=_i32(n))
  ok = _info_ok(info, batch_dims)
  return [_replace_not_ok_with_nan(ok, h, ctx.avals_out[0], batch_dims),
          _replace_not_ok_with_nan(ok, taus, ctx.avals_out[1], batch_dims)]


_register_cpu(hessenberg_p, _hessenberg_cpu_lowering)
register_gpu_lowering(hessenberg_p, gpu.host_lowering(hessenberg_p))


# --- tridiagonal ---------------------------------------------------------------------------

def _tridiagonal_shape_rule(m, n, **_):
  if m != n or n == 0:
    raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {(m, n)}.")
  return (n, n), (n,), (n - 1,), (n - 1,)


def _tridiagonal_dtype_rule(dtype, **_):
  real = _real_dtype(dtype)
  return dtype, real, real, dtype


tridiagonal_p = _matrix_primitive("tridiagonal", _tridiagonal_shape_rule,
                                  _tridiagonal_dtype_rule)


def tridiagonal(a, *, lower: bool = True):
  """Reduction of Hermitian matrices to real symmetric tridiagonal form (``*sytrd``).

  Returns ``(arr, d, e, taus)``: the packed reflectors in ``arr``, the diagonal ``d``, the
  off-diagonal ``e`` and the reflector scales ``taus``; only the ``lower`` (or upper)
  triangle of ``a`` is read.

  Args:
    a: Hermitian matrices, ``[..., n, n]``.
    lower: keyword-only; which triangle is read.

  Returns:
    A tuple ``(arr, d, e, taus)``.

  Examples:
    >>> arr, d, e, taus = lax.linalg.tridiagonal(jnp.array([[2., 1.], [1., 2.]]))
    >>> d, e
    (Array([2., 2.], dtype=float32), Array([1.], dtype=float32))
  """
  arr, d, e, taus = tridiagonal_p.bind(a, lower=bool(lower))
  return arr, d, e, taus


def _tridiagonal_cpu_lowering(ctx, a, *, lower):
  a_aval, = ctx.avals_in
  _check_lapack_dtype("tridiagonal", a_aval)
  batch_dims = a_aval.shape[:-2]
  prefix = "he" if dtypes.is_complex(a_aval.dtype) else "sy"
  info_aval = ShapedArray(batch_dims, np.int32)
  *outs, info = _call(
      f"{prefix}trd", a_aval.dtype, [a], [a_aval], [*ctx.avals_out, info_aval],
      operand_output_aliases={0: 0}, uplo=_u8("L" if lower else "U"))
  ok = _info_ok(info, batch_dims)
  return [_replace_not_ok_with_nan(ok, x, aval, batch_dims)
          for x, aval in zip(outs, ctx.avals_out)]


_register_cpu(tridiagonal_p, _tridiagonal_cpu_lowering)


def _tridiagonal_gpu_lowering(ctx, a, *, lower, target_name_prefix):
  a_aval, = ctx.avals_in
  batch_dims = a_aval.shape[:-2]
  # One cuSOLVER handler for every dtype (sytrd, or hetrd for complex input).
  *outs, info = lapack.ffi_call(
      solver_target(target_name_prefix, "sytrd"), [a], [a_aval],
      [*ctx.avals_out, lapack.info_aval(batch_dims)], operand_output_aliases={0: 0},
      lower=bool(lower))
  ok = _info_ok(info, batch_dims)
  return [_replace_not_ok_with_nan(ok, x, aval, batch_dims)
          for x, aval in zip(outs, ctx.avals_out)]


register_gpu_lowering(tridiagonal_p, _tridiagonal_gpu_lowering)
