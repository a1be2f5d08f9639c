"""Products: dot, matmul, vdot, outer, inner, tensordot, einsum, kron, trace, matvec,
vecmat and cross.

Every contraction is one or more ``lax.dot_general`` calls (``cross`` is elementwise). As in
JAX, operands are not converted before the contraction: ``dot_general`` gets the promoted
dtype as its ``preferred_element_type`` (so mixed-dtype products compute in the result
dtype), and the result is given the promoted weak type afterwards.
"""
from __future__ import annotations

import functools

import operator
import string
from typing import Sequence

import numpy as np

from hlox import lax
from hlox.core import dtypes, sharding_types
from hlox.core.shape_poly import canonical_dim
from hlox.core.tracer import get_aval
from hlox.lax.dot import _type_rank
from hlox.numpy import creation, reductions, shapes, ufuncs, util

__all__ = ["dot", "matmul", "vdot", "vecdot", "outer", "inner", "tensordot", "einsum", "kron",
           "trace", "cross", "matvec", "vecmat", "einsum_path"]


# --- shared helpers ----------------------------------------------------------------------

def _arrays(name, *args):
  util.check_arraylike(name, *args)
  return [util.ensure_array(a) for a in args]


def _result_dtype(args, preferred_element_type):
  """The dtype and weak type of a product of ``args``."""
  if preferred_element_type is None:
    return dtypes.result_type(*args, return_weak_type_flag=True)
  return dtypes.canonicalize_dtype(np.dtype(preferred_element_type)), False


def _contract(a, b, dimension_numbers, precision, dtype):
  """``lax.dot_general`` computing in ``dtype``. Operands of different dtypes that
  ``dot_general`` cannot order (an ambiguous pair for XLA's rule) are converted first."""
  a_dtype, b_dtype = get_aval(a).dtype, get_aval(b).dtype
  if a_dtype != b_dtype and _type_rank(a_dtype) == _type_rank(b_dtype):
    a, b = lax.convert_element_type(a, dtype), lax.convert_element_type(b, dtype)
  return lax.dot_general(a, b, dimension_numbers, precision=precision,
                         preferred_element_type=dtype)


def _finish(x, dtype, weak):
  aval = get_aval(x)
  if aval.dtype == dtype and aval.weak_type == weak:
    return x
  return lax.convert_element_type(x, dtype, weak_type=weak)


def _transpose(x, perm):
  perm = tuple(int(p) for p in perm)
  if perm == tuple(range(len(perm))):
    return x
  return lax.transpose(x, perm)


def _reshape(x, shape):
  shape = tuple(map(canonical_dim, shape))
  if get_aval(x).shape == shape and hasattr(x, "aval"):
    return x
  return lax.reshape(x, shape)


def _ravel(x):
  return _reshape(x, (get_aval(x).size,))


def _conj(x):
  if dtypes.is_complex(get_aval(x).dtype):
    return lax.conj(x)
  return x


def _multiply(x, y):
  return ufuncs.multiply(x, y)


def _diagonal_mask(x, axis1, axis2, offset=0):
  """``x`` with everything off the ``offset`` diagonal of ``(axis1, axis2)`` set to zero.

  ``select`` (not a multiplication by the identity) keeps ``inf`` and ``nan`` on the diagonal
  from turning the zeros into NaNs.
  """
  aval = get_aval(x)
  n, m = aval.shape[axis1], aval.shape[axis2]
  eye = np.eye(n, m, k=offset, dtype=bool)
  if axis1 > axis2:
    eye, axis1, axis2 = eye.T, axis2, axis1
  mask = lax.broadcast_in_dim(eye, aval.shape, (axis1, axis2))
  zeros = lax.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())
  return lax.select_n(mask, zeros, x)


# --- dot, matmul -------------------------------------------------------------------------


def _out_sharding_sets_the_split(fn):
  """With ``out_sharding=``, the result's split over Explicit mesh axes is the one asked
  for, so operands split along contracting dimensions are no error (as in JAX)."""
  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    with sharding_types.result_sharding_given(kwargs.get("out_sharding") is not None):
      return fn(*args, **kwargs)
  return wrapper


@_out_sharding_sets_the_split
def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Dot product of two arrays, by NumPy's ``dot`` rules.

  A scalar operand multiplies the other; two 1-d arrays give their inner product; otherwise
  the last axis of ``a`` is contracted with ``b``'s only axis (1-d ``b``) or its second-to-last
  axis, and the remaining axes of ``a`` then ``b`` make the result.

  Args:
    a: array-like input.
    b: array-like input.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    The product, of the promoted dtype of ``a`` and ``b`` (or ``preferred_element_type``).

  Examples:
    >>> jnp.dot(jnp.array([1, 2, 3]), jnp.array([4, 5, 6]))
    Array(32, dtype=int32)
    >>> jnp.dot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
    Array([3, 7], dtype=int32)
    >>> jnp.dot(2, jnp.array([1., 2.]))
    Array([2., 4.], dtype=float32)

  See also: :func:`hlox.numpy.matmul`, :func:`hlox.numpy.vdot`.
  """
  a, b = _arrays("dot", a, b)
  dtype, weak = _result_dtype((a, b), preferred_element_type)
  a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
  if a_ndim == 0 or b_ndim == 0:
    contract = ((), ())
  elif b_ndim == 1:
    contract = ((a_ndim - 1,), (0,))
  else:
    contract = ((a_ndim - 1,), (b_ndim - 2,))
  _check_contraction("dot", a, b, contract)
  out = _contract(a, b, (contract, ((), ())), precision, dtype)
  return lax.apply_out_sharding(_finish(out, dtype, weak), out_sharding, "dot")


def _check_contraction(name, a, b, contract):
  a_aval, b_aval = get_aval(a), get_aval(b)
  sizes_a = [a_aval.shape[d] for d in contract[0]]
  sizes_b = [b_aval.shape[d] for d in contract[1]]
  if sizes_a != sizes_b:
    # A TypeError with dot_general's wording, as JAX raises (NumPy raises ValueError).
    raise TypeError(f"{name}: dot_general requires contracting dimensions to have the same "
                    f"shape, got {tuple(sizes_a)} and {tuple(sizes_b)}: shapes {a_aval.shape} "
                    f"and {b_aval.shape} are not aligned.")


@_out_sharding_sets_the_split
def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product (the ``@`` operator).

  Products over the trailing two axes, the leading (batch) axes broadcasting; a 1-d operand
  is a vector whose axis is removed from the result. Scalars are refused (``ValueError``).

  Args:
    a: array-like of at least one dimension.
    b: array-like of at least one dimension; ``a.shape[-1]`` must equal ``b``'s
      contracted axis length.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of shape ``broadcast(batch) + (a.shape[-2], b.shape[-1])`` (axes of 1-d
    operands dropped), of the promoted dtype.

  Examples:
    >>> a = jnp.array([[1, 2], [3, 4]])
    >>> jnp.matmul(a, a)
    Array([[ 7, 10],
           [15, 22]], dtype=int32)
    >>> jnp.matmul(a, jnp.array([1, 0]))
    Array([1, 3], dtype=int32)
    >>> jnp.matmul(jnp.ones((5, 2, 3)), jnp.ones((3, 4))).shape
    (5, 2, 4)
  """
  a, b = _arrays("matmul", a, b)
  a_aval, b_aval = get_aval(a), get_aval(b)
  for i, aval in enumerate((a_aval, b_aval)):
    if aval.ndim < 1:
      raise ValueError(f"matmul: input operand {i} must have ndim at least 1, but it has "
                       f"ndim {aval.ndim}")
  dtype, weak = _result_dtype((a, b), preferred_element_type)
  a_mat, b_mat = a_aval.ndim > 1, b_aval.ndim > 1
  k_a = a_aval.shape[-1]
  k_b = b_aval.shape[-2] if b_mat else b_aval.shape[0]
  if k_a != k_b:
    # A TypeError with dot_general's wording, as JAX raises (NumPy raises ValueError).
    raise TypeError(f"matmul: dot_general requires contracting dimensions to have the same "
                    f"shape, got {(k_a,)} and {(k_b,)} (shapes {a_aval.shape} and "
                    f"{b_aval.shape}).")
  a_lead = a_aval.shape[:-2] if a_mat else ()
  b_lead = b_aval.shape[:-2] if b_mat else ()
  nb = max(len(a_lead), len(b_lead))
  a_off, b_off = nb - len(a_lead), nb - len(b_lead)

  # Each broadcast batch position i is either shared (a dot_general batch dim), or real on one
  # side only (a free dim of that side), or size 1 / absent on both. Size-1 dims that only
  # broadcast are squeezed away; the final reshape puts them back.
  a_keep, b_keep = [], []  # batch dims of a and b that are not squeezed
  shared, a_only, b_only = [], [], []
  out_batch = []
  for i in range(nb):
    da = a_lead[i - a_off] if i >= a_off else None
    db = b_lead[i - b_off] if i >= b_off else None
    a_real, b_real = da not in (None, 1), db not in (None, 1)
    if a_real and b_real and da != db:
      raise ValueError(f"matmul: batch dimensions of shapes {a_aval.shape} and "
                       f"{b_aval.shape} cannot be broadcast together")
    if a_real:
      a_keep.append(i - a_off)
    if b_real:
      b_keep.append(i - b_off)
    if a_real and b_real:
      shared.append(i)
    elif a_real:
      a_only.append(i)
    elif b_real:
      b_only.append(i)
    out_batch.append(da if a_real else db if b_real else 1)

  # Squeeze a's and b's batch dims that are not kept, keeping their order.
  a_core = a_aval.shape[-2:] if a_mat else a_aval.shape
  b_core = b_aval.shape[-2:] if b_mat else b_aval.shape
  a = _reshape(a, tuple(a_aval.shape[j] for j in a_keep) + tuple(a_core))
  b = _reshape(b, tuple(b_aval.shape[j] for j in b_keep) + tuple(b_core))
  a_ndim, b_ndim = len(a_keep) + len(a_core), len(b_keep) + len(b_core)
  a_pos = {i: j for j, i in enumerate(i for i in range(nb) if i in shared or i in a_only)}
  b_pos = {i: j for j, i in enumerate(i for i in range(nb) if i in shared or i in b_only)}
  dnums = (((a_ndim - 1,), (b_ndim - 2 if b_mat else b_ndim - 1,)),
           (tuple(a_pos[i] for i in shared), tuple(b_pos[i] for i in shared)))
  out = _contract(a, b, dnums, precision, dtype)

  # dot_general gives (shared, a_only [, m], b_only [, n]); put the kept batch dims back in
  # their broadcast order, then reshape to insert the dims squeezed on both sides.
  order = list(shared) + list(a_only) + ([nb] if a_mat else []) + list(b_only) + \
      ([nb + 1] if b_mat else [])
  out = _transpose(out, np.argsort(order))
  out_shape = tuple(out_batch) + ((a_aval.shape[-2],) if a_mat else ()) + \
      ((b_aval.shape[-1],) if b_mat else ())
  out = _reshape(out, out_shape)
  return lax.apply_out_sharding(_finish(out, dtype, weak), out_sharding, "matmul")


def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Dot product of the flattened arrays, conjugating ``a`` first.

  Args:
    a: array-like input (flattened; complex values are conjugated).
    b: array-like input with ``a.size`` elements (flattened).
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.

  Returns:
    A scalar array of the promoted dtype.

  Examples:
    >>> jnp.vdot(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 1], [1, 1]]))
    Array(10, dtype=int32)
    >>> jnp.vdot(jnp.array([1j, 2]), jnp.array([1j, 1]))
    Array(3.+0.j, dtype=complex64)
  """
  a, b = _arrays("vdot", a, b)
  a_size, b_size = get_aval(a).size, get_aval(b).size
  if a_size != b_size:
    raise ValueError(f"vdot: arrays of sizes {a_size} and {b_size} (shapes "
                     f"{get_aval(a).shape} and {get_aval(b).shape}) cannot be multiplied")
  return dot(_conj(_ravel(a)), _ravel(b), precision=precision,
             preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
  """Batched vector dot product along an axis, conjugating ``x1``.

  Computes ``sum(conj(x1) * x2, axis=axis)``; the other axes broadcast together.

  Args:
    x1: array-like input.
    x2: array-like input with as many entries as ``x1`` along ``axis``.
    axis: keyword-only; the axis to contract.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.

  Returns:
    An array of the broadcast shape without ``axis``, of the promoted dtype.

  Examples:
    >>> jnp.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 10]))
    Array([21, 43], dtype=int32)
    >>> jnp.vecdot(jnp.array([1j, 2]), jnp.array([1j, 1]))
    Array(3.+0.j, dtype=complex64)
  """
  x1, x2 = _arrays("vecdot", x1, x2)
  a1, a2 = get_aval(x1), get_aval(x2)
  ax1 = lax.utils.canonicalize_axis(axis, a1.ndim, "vecdot")
  ax2 = lax.utils.canonicalize_axis(axis, a2.ndim, "vecdot")
  if a1.shape[ax1] != a2.shape[ax2]:
    raise ValueError(f"vecdot: axes must match; got shapes {a1.shape} and {a2.shape} with "
                     f"axis={axis}")
  x1 = _transpose(_conj(x1), [d for d in range(a1.ndim) if d != ax1] + [ax1])
  x2 = _transpose(x2, [d for d in range(a2.ndim) if d != ax2] + [ax2])
  # (..., n) @ (..., n, 1) -> (..., 1): matmul broadcasts the batch axes.
  x2 = _reshape(x2, get_aval(x2).shape + (1,))
  out = matmul(_reshape(x1, get_aval(x1).shape[:-1] + (1, a1.shape[ax1])), x2,
               precision=precision, preferred_element_type=preferred_element_type)
  return _reshape(out, get_aval(out).shape[:-2])


def outer(a, b, out=None):
  """Outer product of the flattened arrays: ``result[i, j] = a[i] * b[j]``.

  Args:
    a: array-like input (flattened).
    b: array-like input (flattened).
    out: unsupported; must be None.

  Returns:
    An ``(a.size, b.size)`` array of the promoted dtype.

  Examples:
    >>> jnp.outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))
    Array([[  1,  10, 100],
           [  2,  20, 200]], dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("outer: the 'out' argument is not supported")
  a, b = _arrays("outer", a, b)
  a, b = util.promote_dtypes(_ravel(a), _ravel(b))
  n, m = get_aval(a).size, get_aval(b).size
  return _multiply(lax.broadcast_in_dim(a, (n, m), (0,)), lax.broadcast_in_dim(b, (n, m), (1,)))


def inner(a, b, *, precision=None, preferred_element_type=None):
  """Inner product: the sum of products over the last axes of ``a`` and ``b``.

  A scalar operand multiplies the other instead.

  Args:
    a: array-like input.
    b: array-like input whose last axis matches ``a``'s.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.

  Returns:
    An array of shape ``a.shape[:-1] + b.shape[:-1]``, of the promoted dtype.

  Examples:
    >>> jnp.inner(jnp.array([1, 2, 3]), jnp.array([0, 1, 0]))
    Array(2, dtype=int32)
    >>> jnp.inner(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 0], [0, 1]]))
    Array([[1, 2],
           [3, 4]], dtype=int32)
  """
  a, b = _arrays("inner", a, b)
  if get_aval(a).ndim == 0 or get_aval(b).ndim == 0:
    if preferred_element_type is not None:
      a = lax.convert_element_type(a, preferred_element_type)
      b = lax.convert_element_type(b, preferred_element_type)
    return _multiply(a, b)
  return tensordot(a, b, (-1, -1), precision=precision,
                   preferred_element_type=preferred_element_type)


@_out_sharding_sets_the_split
def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Tensor contraction of ``a`` and ``b`` over the given axes.

  Args:
    a: array-like input.
    b: array-like input.
    axes: an int ``n`` (contract the last ``n`` axes of ``a`` with the first ``n`` of ``b``),
      a pair of ints, or a pair of equal-length sequences of axes.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    An array of ``a``'s free axes followed by ``b``'s, of the promoted dtype.

  Examples:
    >>> a = jnp.arange(6).reshape(2, 3)
    >>> jnp.tensordot(a, a, axes=([1], [1]))
    Array([[ 5, 14],
           [14, 50]], dtype=int32)
    >>> jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape
    (2, 5)
  """
  a, b = _arrays("tensordot", a, b)
  a_aval, b_aval = get_aval(a), get_aval(b)
  dtype, weak = _result_dtype((a, b), preferred_element_type)
  if isinstance(axes, (int, np.integer)):
    n = int(axes)
    if n < 0 or n > min(a_aval.ndim, b_aval.ndim):
      raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                      f"({a_aval.ndim} and {b_aval.ndim}), or is negative (shapes "
                      f"{a_aval.shape} and {b_aval.shape})")
    contract = (tuple(range(a_aval.ndim - n, a_aval.ndim)), tuple(range(n)))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if _is_int(ax1) and _is_int(ax2):
      ax1, ax2 = (ax1,), (ax2,)
    elif not (isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list))):
      raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                      f"lists, got {ax1!r} and {ax2!r}")
    if len(ax1) != len(ax2):
      raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} and "
                      f"{ax2}")
    contract = (tuple(lax.utils.canonicalize_axis(i, a_aval.ndim, "tensordot") for i in ax1),
                tuple(lax.utils.canonicalize_axis(i, b_aval.ndim, "tensordot") for i in ax2))
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    f"lists/tuples of ints, got {axes!r}")
  _check_contraction("tensordot", a, b, contract)
  out = _contract(a, b, (contract, ((), ())), precision, dtype)
  return lax.apply_out_sharding(_finish(out, dtype, weak), out_sharding, "tensordot")


def _is_int(x) -> bool:
  try:
    operator.index(x)
    return not isinstance(x, bool)
  except TypeError:
    return False


def kron(a, b):
  """Kronecker product: the blocks ``a[i, j, ...] * b`` laid out in ``a``'s pattern.

  Args:
    a: array-like input.
    b: array-like input (the lower-rank operand gets leading size-1 axes).

  Returns:
    An array whose shape is the elementwise product of the operands' shapes, of the
    promoted dtype.

  Examples:
    >>> jnp.kron(jnp.array([1, 10]), jnp.array([1, 2, 3]))
    Array([ 1,  2,  3, 10, 20, 30], dtype=int32)
    >>> jnp.kron(jnp.eye(2, dtype=int), jnp.array([[1, 2]]))
    Array([[1, 2, 0, 0],
           [0, 0, 1, 2]], dtype=int32)
  """
  a, b = _arrays("kron", a, b)
  a, b = util.promote_dtypes(a, b)
  a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
  nd = max(len(a_shape), len(b_shape))
  a_shape = (1,) * (nd - len(a_shape)) + tuple(a_shape)
  b_shape = (1,) * (nd - len(b_shape)) + tuple(b_shape)
  # Interleave: a's axes at even positions, b's at odd ones, then merge each pair.
  # (Each gets size-1 axes where the other's are; the product broadcasts them, as in JAX.)
  a = lax.broadcast_in_dim(_reshape(a, a_shape), tuple(d for n in a_shape for d in (n, 1)),
                           tuple(range(0, 2 * nd, 2)))
  b = lax.broadcast_in_dim(_reshape(b, b_shape), tuple(d for n in b_shape for d in (1, n)),
                           tuple(range(1, 2 * nd, 2)))
  return _reshape(_multiply(a, b), tuple(x * y for x, y in zip(a_shape, b_shape)))


# --- trace -------------------------------------------------------------------------------

def _sum_dtype(dtype):
  """NumPy's accumulator for ``sum``: bools and narrow integers widen to the default int."""
  dtype = np.dtype(dtype)
  if dtype == dtypes.bool_:
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned_int(dtype):
    default_uint = dtypes.canonicalize_dtype(np.uint64)
    return default_uint if dtype.itemsize < default_uint.itemsize else dtype
  if dtypes.is_signed_int(dtype):
    default = dtypes.default_int_dtype()
    return default if dtype.itemsize < default.itemsize else dtype
  return dtype


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
  """Sum along a diagonal of the plane of ``axis1`` and ``axis2``.

  Args:
    a: array-like of at least two dimensions.
    offset: the diagonal: 0 the main one, positive above it, negative below.
    axis1: the first axis of the plane.
    axis2: the second axis of the plane.
    dtype: optional dtype of the sum (default: as for ``sum``).
    out: unsupported; must be None.

  Returns:
    An array of ``a``'s other axes.

  Examples:
    >>> x = jnp.arange(9).reshape(3, 3)
    >>> jnp.trace(x)
    Array(12, dtype=int32)
    >>> jnp.trace(x, offset=1)
    Array(6, dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("trace: the 'out' argument is not supported")
  (a,) = _arrays("trace", a)
  aval = get_aval(a)
  if aval.ndim < 2:
    raise ValueError(f"trace requires an array of rank at least 2, got shape {aval.shape}")
  axis1 = lax.utils.canonicalize_axis(axis1, aval.ndim, "trace")
  axis2 = lax.utils.canonicalize_axis(axis2, aval.ndim, "trace")
  if axis1 == axis2:
    raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2} "
                     "(jnp.trace)")
  # The plane last, everything off the diagonal selected away (``where`` keeps an ``inf``
  # on it), then summed: as JAX composes it.
  n, m = aval.shape[axis1], aval.shape[axis2]
  a = shapes.moveaxis(a, (axis1, axis2), (-2, -1))
  a = ufuncs.where(creation.eye(n, m, k=offset, dtype=bool), a, creation.zeros_like(a))
  return reductions.sum(a, axis=(-2, -1), dtype=dtype)


# --- einsum ------------------------------------------------------------------------------

_letters = string.ascii_letters


def _sublist_to_subscripts(sublist) -> str:
  out = []
  for s in sublist:
    if s is Ellipsis:
      out.append("...")
    elif _is_int(s) and 0 <= operator.index(s) < len(_letters):
      out.append(_letters[operator.index(s)])
    else:
      raise ValueError(f"einsum: subscripts in a sublist must be Ellipsis or integers in "
                       f"[0, {len(_letters)}), got {s!r}")
  return "".join(out)


def _parse_einsum_args(subscripts, operands):
  """The ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` form as a string."""
  if isinstance(subscripts, str):
    return subscripts, list(operands)
  args = [subscripts, *operands]
  ops, subs = args[0::2], args[1::2]
  out = None
  if len(ops) > len(subs):
    out = ops.pop()
  spec = ",".join(_sublist_to_subscripts(s) for s in subs)
  if out is not None:
    spec += "->" + _sublist_to_subscripts(out)
  return spec, ops


def _expand_ellipses(spec: str, ndims: Sequence[int]):
  """Per-operand label lists and output labels, with ``...`` replaced by fresh labels
  (aligned right across operands, as broadcasting is)."""
  spec = spec.replace(" ", "")
  if "->" in spec:
    inputs, output = spec.split("->")
    if "->" in output or "-" in output or ">" in output:
      raise ValueError(f"einsum: subscripts {spec!r} contain more than one '->'")
  else:
    inputs, output = spec, None
  in_specs = inputs.split(",")
  if len(in_specs) != len(ndims):
    raise ValueError(f"einsum: subscripts {spec!r} name {len(in_specs)} operands but "
                     f"{len(ndims)} were given")
  used = set(c for c in spec if c.isalpha())
  fresh = [c for c in _letters if c not in used]
  ell_ndim = 0
  for s, nd in zip(in_specs, ndims):
    if "..." in s:
      ell_ndim = max(ell_ndim, nd - (len(s) - 3))
  if ell_ndim > len(fresh):
    raise ValueError("einsum: too many dimensions under '...'")
  ell_labels = fresh[:ell_ndim]

  def labels_of(s, nd=None):
    if s.count("...") > 1 or ("." in s.replace("...", "")):
      raise ValueError(f"einsum: invalid subscripts {s!r} (use '...' once per operand)")
    for c in s.replace("...", ""):
      if not c.isalpha():
        raise ValueError(f"einsum: invalid subscript {c!r} in {spec!r}; subscripts are "
                         "letters")
    if "..." not in s:
      return list(s)
    head, tail = s.split("...")
    n = ell_ndim if nd is None else nd - len(head) - len(tail)
    if n < 0:
      raise ValueError(f"einsum: operand has fewer dimensions than subscripts {s!r}")
    return list(head) + ell_labels[ell_ndim - n:] + list(tail)

  in_labels = []
  for i, (s, nd) in enumerate(zip(in_specs, ndims)):
    labels = labels_of(s, nd)
    if len(labels) != nd:
      raise ValueError(f"einsum: operand {i} has {nd} dimensions but subscripts {s!r} "
                       f"name {len(labels)}")
    in_labels.append(labels)
  if output is None:
    counts = {}
    for labels in in_labels:
      for c in labels:
        counts[c] = counts.get(c, 0) + 1
    out_labels = ell_labels + sorted(c for c, n in counts.items()
                                     if n == 1 and c not in ell_labels)
  else:
    out_labels = labels_of(output)
    if len(set(out_labels)) != len(out_labels):
      raise ValueError(f"einsum: output subscripts {output!r} repeat a label")
    all_in = set(c for labels in in_labels for c in labels)
    for c in out_labels:
      if c not in all_in:
        raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs of "
                         f"{spec!r}")
  return in_labels, out_labels


def _sum_axes(x, labels, axes, dtype):
  """Sum ``x`` over ``axes`` in ``dtype`` (widening ``x`` first if needed); booleans "or"."""
  if not axes:
    return x, labels
  x_dtype = get_aval(x).dtype
  if dtypes.promote_types(x_dtype, dtype) != x_dtype:
    x = lax.convert_element_type(x, dtype)
    x_dtype = dtype
  x = lax.reduce_or(x, tuple(axes)) if x_dtype == dtypes.bool_ else \
      lax.reduce_sum(x, tuple(axes))
  return x, [c for i, c in enumerate(labels) if i not in axes]


def _take_diagonals(x, labels, dtype):
  """Collapse repeated labels of one operand (``'ii->i'``) to their diagonal."""
  while len(set(labels)) != len(labels):
    c = next(c for c in labels if labels.count(c) > 1)
    i = labels.index(c)
    j = labels.index(c, i + 1)
    x = _diagonal_mask(x, i, j)
    x, labels = _sum_axes(x, labels, [j], dtype)
  return x, labels


@_out_sharding_sets_the_split
def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
  """Einstein summation over the operands' labelled axes.

  Supports ``...``, implicit outputs (labels seen once, in alphabetical order), repeated labels
  within one operand (diagonals), size-1 broadcasting, and the interleaved sublist form.
  Operands are contracted pairwise from left to right; ``optimize`` is accepted and ignored.

  Args:
    subscripts: the labels, e.g. ``'ij,jk->ik'`` (or, in the sublist form, the first
      operand followed by its list of axis labels, and so on).
    *operands: the array-likes, one per comma-separated term.
    out: unsupported; must be None.
    optimize: accepted for compatibility; the contraction order is always left to right.
    precision: keyword-only; None, a ``lax.Precision`` or a pair of them, for the
      accelerator's matrix unit.
    preferred_element_type: keyword-only; optional dtype to accumulate and return in.
    _dot_general: internal; the contraction primitive to use.
    out_sharding: keyword-only; sharding of the result (None: the default placement).

  Returns:
    The contraction, with the output labels' axes, of the promoted dtype.

  Examples:
    >>> a = jnp.array([[1, 2], [3, 4]])
    >>> jnp.einsum('ij,jk->ik', a, a)
    Array([[ 7, 10],
           [15, 22]], dtype=int32)
    >>> jnp.einsum('ii', a)
    Array(5, dtype=int32)
    >>> jnp.einsum('ij->j', a)
    Array([4, 6], dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("einsum: the 'out' argument is not supported")
  if isinstance(optimize, (list, tuple)) and any(
      isinstance(step, (list, tuple)) and len(step) > 2 for step in optimize):
    # An explicit path step joining 3+ operands at once: JAX contracts pairwise only.
    raise NotImplementedError("jax.numpy.einsum does not support simultaneous contraction of 3 "
                              f"or more operands (path {optimize!r}); give a path of pairs")
  spec, operands = _parse_einsum_args(subscripts, operands)
  if not operands:
    raise ValueError("einsum requires at least one operand")
  operands = _arrays("einsum", *operands)
  dtype, weak = _result_dtype(operands, preferred_element_type)
  in_labels, out_labels = _expand_ellipses(spec, [get_aval(x).ndim for x in operands])

  # One size per label; a size-1 axis broadcasts against a larger one (it is squeezed away).
  sizes = {}
  for x, labels in zip(operands, in_labels):
    for c, d in zip(labels, get_aval(x).shape):
      if sizes.get(c, 1) == 1:
        sizes[c] = d
      elif d not in (1, sizes[c]):
        raise ValueError(f"einsum: size of label {c!r} in {spec!r} differs between "
                         f"operands ({sizes[c]} vs {d}); shapes "
                         f"{[get_aval(o).shape for o in operands]}")
  ops = []
  for x, labels in zip(operands, in_labels):
    shape = get_aval(x).shape
    keep = [i for i, (c, d) in enumerate(zip(labels, shape)) if not (d == 1 and sizes[c] != 1)]
    if len(keep) != len(labels):
      x = _reshape(x, tuple(shape[i] for i in keep))
      labels = [labels[i] for i in keep]
    x, labels = _take_diagonals(x, list(labels), dtype)
    ops.append((x, labels))

  def needed_after(k):
    """Labels used by operands after the k-th one or by the output."""
    need = set(out_labels)
    for _, labels in ops[k + 1:]:
      need.update(labels)
    return need

  # Sum labels that only one operand has and nobody needs, then contract left to right.
  x, labels = ops[0]
  need = needed_after(0)
  x, labels = _sum_axes(x, labels, [i for i, c in enumerate(labels) if c not in need], dtype)
  for k in range(1, len(ops)):
    y, y_labels = ops[k]
    need = needed_after(k)
    y, y_labels = _sum_axes(y, y_labels, [i for i, c in enumerate(y_labels)
                                          if c not in need and c not in labels], dtype)
    shared = [c for c in labels if c in y_labels]
    batch = [c for c in shared if c in need]
    contract = [c for c in shared if c not in need]
    dnums = ((tuple(labels.index(c) for c in contract),
              tuple(y_labels.index(c) for c in contract)),
             (tuple(labels.index(c) for c in batch), tuple(y_labels.index(c) for c in batch)))
    x = _contract(x, y, dnums, precision, dtype)
    labels = batch + [c for c in labels if c not in shared] + \
        [c for c in y_labels if c not in shared]

  x = _transpose(x, [labels.index(c) for c in out_labels])
  return lax.apply_out_sharding(_finish(x, dtype, weak), out_sharding, "einsum")


def _shape_stand_in(x):
  """A NumPy array of ``x``'s shape and dtype that owns one element (a broadcast view), so
  the path search sees only shapes and works for traced operands too."""
  aval = get_aval(x)
  return np.broadcast_to(np.zeros((), aval.dtype), aval.shape)


def einsum_path(subscripts, /, *operands, optimize="greedy"):
  """The contraction order ``einsum`` with ``optimize`` would choose, in NumPy's format.

  Only the shapes of ``operands`` are used (they may be traced); the search is NumPy's.
  hlox's ``einsum`` contracts left to right whatever the path says.

  Args:
    subscripts: the labels, as for ``einsum``.
    *operands: the array-likes (or shape-carrying objects).
    optimize: keyword-only; ``'greedy'``, ``'optimal'``, True/False or an explicit path.

  Returns:
    A tuple ``(path, report)``: ``path`` is ``['einsum_path', (i, j), ...]`` where each pair
    names the operands contracted next, and ``report`` a readable string of FLOP counts and
    intermediates.

  Examples:
    >>> path, report = jnp.einsum_path('ij,jk,kl->il', jnp.ones((2, 3)), jnp.ones((3, 4)),
    ...                                jnp.ones((4, 5)))
    >>> path
    ['einsum_path', (1, 2), (0, 1)]
  """
  def stand_in(x):
    return _shape_stand_in(x) if util.is_arraylike(x) and not isinstance(x, list) else x
  if not isinstance(subscripts, str):  # the interleaved form: operand, sublist, ...
    subscripts = stand_in(subscripts)
  return np.einsum_path(subscripts, *map(stand_in, operands), optimize=optimize)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """Cross product of vectors of 3 (or 2) components.

  With 2-component vectors the missing z component is taken as zero; if both are 2-d
  vectors the result is the scalar z component.

  Args:
    a: array-like of vectors along ``axisa``.
    b: array-like of vectors along ``axisb``; the other axes broadcast with ``a``'s.
    axisa: the axis of ``a`` holding the components.
    axisb: the axis of ``b`` holding the components.
    axisc: the axis of the result holding the components.
    axis: if given, overrides ``axisa``, ``axisb`` and ``axisc``.

  Returns:
    An array of the broadcast vectors' shape, of the promoted dtype.

  Examples:
    >>> jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0]))
    Array([0, 0, 1], dtype=int32)
    >>> jnp.cross(jnp.array([1, 2]), jnp.array([3, 4]))
    Array(-2, dtype=int32)
  """
  util.check_arraylike("cross", a, b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = util.promote_dtypes(creation.asarray(a), creation.asarray(b))
  a = shapes.moveaxis(a, axisa, -1)
  b = shapes.moveaxis(b, axisb, -1)
  na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
  if na not in (2, 3) or nb not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")
  if na == 2 and nb == 2:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
  a0, a1 = a[..., 0], a[..., 1]
  a2 = a[..., 2] if na == 3 else creation.zeros_like(a0)
  b0, b1 = b[..., 0], b[..., 1]
  b2 = b[..., 2] if nb == 3 else creation.zeros_like(b0)
  # Joined by ``array`` first (expanded and concatenated, not a ``stack`` equation), then
  # moved to ``axisc`` (a transpose in the jaxpr): as JAX writes it.
  c = creation.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
  return shapes.moveaxis(c, 0, axisc)


def matvec(x1, x2, /):
  """Batched matrix-vector product: ``sum_j x1[..., i, j] * x2[..., j]``.

  Args:
    x1: array of at least two dimensions (the matrices in its last two axes).
    x2: array of at least one dimension; its last axis has ``x1.shape[-1]`` entries.

  Returns:
    An array of the broadcast batch shape plus ``(x1.shape[-2],)``, of the promoted dtype.

  Examples:
    >>> jnp.matvec(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
    Array([3, 7], dtype=int32)
  """
  util.check_arraylike("matvec", x1, x2)
  return matmul(x1, creation.asarray(x2)[..., None])[..., 0]


def vecmat(x1, x2, /):
  """Batched vector-matrix product: ``sum_j conj(x1[..., j]) * x2[..., j, i]``.

  Args:
    x1: array of at least one dimension (the vectors; complex ones are conjugated).
    x2: array of at least two dimensions; ``x2.shape[-2]`` equals ``x1.shape[-1]``.

  Returns:
    An array of the broadcast batch shape plus ``(x2.shape[-1],)``, of the promoted dtype.

  Examples:
    >>> jnp.vecmat(jnp.array([1, 1]), jnp.array([[1, 2], [3, 4]]))
    Array([4, 6], dtype=int32)
  """
  util.check_arraylike("vecmat", x1, x2)
  return matmul(ufuncs.conj(creation.asarray(x1))[..., None, :], x2)[..., 0, :]


# Eagerly, each product is one cached executable per argument signature, as JAX's jit-wrapped
# ``jnp.dot``/``matmul``/...; ``einsum`` (its subscripts are positional) and ``einsum_path``
# (host-side planning) are left as they are.
# (``trace``'s offset is a traced argument, as in JAX.)
util.fuse_functions(globals(), __all__, {"trace": ("axis1", "axis2", "dtype", "out")},
                    default_static=(
    "precision", "preferred_element_type", "out_sharding", "axis", "axes", "out", "offset",
    "axis1", "axis2", "dtype", "axisa", "axisb", "axisc"), skip=("einsum", "einsum_path"),
    staged=("trace", "cross", "kron", "matvec", "vecmat"))
