"""Products involving BCOO arrays beyond ``bcoo_dot_general``: element-wise products of two
sparse arrays (``bcoo_multiply_sparse``), contractions sampled at sparse positions
(``bcoo_dot_general_sampled``), 1-d sparse convolution (``bcoo_conv_general_dilated``), and
``@`` with NumPy's ``matmul`` rules for sparse operands."""
import operator

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox.api import ShapeDtypeStruct, eval_shape
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo import (
    BCOO, _bcoo_extract, bcoo_dot_general, bcoo_transpose)
from hlox.experimental.sparse.bcoo_layout import bcoo_update_layout

__all__ = ["bcoo_conv_general_dilated", "bcoo_dot_general_sampled", "bcoo_multiply_sparse"]


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
  """The element-wise product of two BCOO arrays, one of which has the shape of the result
  (the other may broadcast to it). The product is stored at that operand's entries: a zero
  of either factor makes a zero, so no other position can hold a nonzero."""
  out_shape = tuple(np.broadcast_shapes(lhs.shape, rhs.shape))
  if lhs.ndim != rhs.ndim:
    raise NotImplementedError("bcoo_multiply_sparse: arrays of different rank "
                              f"{lhs.shape} and {rhs.shape}")
  if lhs.shape != out_shape:
    if rhs.shape != out_shape:
      raise NotImplementedError("bcoo_multiply_sparse: one operand must have the shape of "
                                f"the result; got {lhs.shape} and {rhs.shape}")
    lhs, rhs = rhs, lhs
  dtype = jnp.result_type(lhs.dtype, rhs.dtype)
  # Products distribute over duplicate entries of lhs; duplicates of rhs add up densely.
  other = jnp.broadcast_to(rhs.todense(), out_shape).astype(dtype)
  data = lhs.data.astype(dtype) * _bcoo_extract(lhs.indices, other)
  return BCOO((data, lhs.indices), shape=out_shape, indices_sorted=lhs.indices_sorted,
              unique_indices=lhs.unique_indices)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
  """The values of ``lax.dot_general(A, B, dimension_numbers)`` at the BCOO ``indices``
  (the ``data`` of a BCOO array with those indices)."""
  A, B, indices = jnp.asarray(A), jnp.asarray(B), jnp.asarray(indices)
  return _bcoo_extract(indices, lax.dot_general(A, B, dimension_numbers))


# --- matmul -------------------------------------------------------------------------------

def _ndim(x) -> int:
  return x.ndim if isinstance(x, JAXSparse) else jnp.ndim(x)


def _as_bcoo_or_array(x):
  if isinstance(x, BCOO):
    return x
  if isinstance(x, JAXSparse):
    if not hasattr(x, "to_bcoo"):
      raise NotImplementedError(f"matmul of {type(x).__name__} arrays")
    return x.to_bcoo()
  return jnp.asarray(x)


def _dot(lhs, rhs, dn):
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dn)


def _move_free_axes(out, n_first: int, n_last: int):
  """``out`` with its first ``n_first`` axes moved after the next ``n_last``."""
  ndim = out.ndim
  perm = (*range(n_first, n_first + n_last), *range(n_first), *range(n_first + n_last, ndim))
  if isinstance(out, BCOO):
    return bcoo_transpose(out, permutation=perm)
  return out.transpose(perm)


def bcoo_matmul(lhs, rhs):
  """``lhs @ rhs`` where either may be sparse, with NumPy's rules: 1-d operands are vectors,
  and leading axes are batch axes (equal on both sides, or present on one side only)."""
  lhs, rhs = _as_bcoo_or_array(lhs), _as_bcoo_or_array(rhs)
  la, ra = _ndim(lhs), _ndim(rhs)
  if la == 0 or ra == 0:
    raise ValueError("matmul: operands must have at least one dimension (use * for scalars)")
  if la == 1 or ra == 1:
    return _dot(lhs, rhs, (((la - 1,), (max(ra - 2, 0),)), ((), ())))
  lb, rb = la - 2, ra - 2
  if lb == rb and lhs.shape[:lb] == rhs.shape[:rb]:
    batch = tuple(range(lb))
    return _dot(lhs, rhs, (((la - 1,), (ra - 2,)), (batch, batch)))
  if lb == 0:  # rows of lhs lead the result; rhs's batch axes must come first
    out = _dot(lhs, rhs, (((1,), (ra - 2,)), ((), ())))
    return _move_free_axes(out, 1, rb)
  if rb == 0:
    return _dot(lhs, rhs, (((la - 1,), (0,)), ((), ())))
  raise NotImplementedError(f"matmul of sparse operands with shapes {lhs.shape} and "
                            f"{rhs.shape}: batch axes must match or be on one side only")


# --- convolution --------------------------------------------------------------------------

def _conv_operand(x, index_dtype):
  """A 1-d BCOO array (entries and positions) from a ``(1, 1, n)`` operand."""
  if isinstance(x, BCOO):
    x = bcoo_update_layout(x, n_batch=2, n_dense=0)
    data, indices = x.data[0, 0], x.indices[0, 0]
    data = jnp.where(indices[:, 0] < x.shape[-1], data, jnp.zeros((), data.dtype))
    return data, indices[:, 0]
  x = jnp.asarray(x)
  return x[0, 0], jnp.arange(x.shape[-1], dtype=index_dtype)


def bcoo_conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, dimension_numbers=None,
                              feature_group_count=1, batch_group_count=1, precision=None,
                              preferred_element_type=None, out_sharding=None) -> BCOO:
  """``lax.conv_general_dilated`` where either operand may be a BCOO array, for 1-d
  convolutions of single ``(1, 1, n)`` signals with unit strides and no dilation (JAX's
  supported case). Every pair of stored entries contributes one output entry."""
  del precision, out_sharding
  shapes = [ShapeDtypeStruct(x.shape, x.dtype) for x in (lhs, rhs)]
  out = eval_shape(lambda a, b: lax.conv_general_dilated(
      a, b, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
      feature_group_count, batch_group_count,
      preferred_element_type=preferred_element_type), *shapes)
  ndim = len(lhs.shape)
  ones = (1,) * (ndim - 2)
  if ndim != 3:
    raise NotImplementedError("bcoo convolution is implemented for 1-d signals only")
  if tuple(lhs_dilation or ones) != ones or tuple(rhs_dilation or ones) != ones:
    raise NotImplementedError("bcoo convolution with lhs_dilation or rhs_dilation.")
  if tuple(window_strides) != ones:
    raise NotImplementedError("bcoo convolution with non-unit window_strides.")
  if feature_group_count != 1 or batch_group_count != 1:
    raise NotImplementedError("bcoo convolution with non-unit group counts.")
  if lhs.shape[:2] != (1, 1) or rhs.shape[:2] != (1, 1):
    raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1)")
  if dimension_numbers is not None:
    # The default layout spelled out (as the primitive's parameters give it) is no layout.
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    if tuple(dn.lhs_spec) != tuple(dn.rhs_spec) or tuple(dn.lhs_spec) != tuple(dn.out_spec) \
        or tuple(dn.lhs_spec) != tuple(range(ndim)):
      raise NotImplementedError("bcoo convolution with dimension_numbers")
  n_out = out.shape[-1]
  # The padding before the signal: whatever puts the last output at the right place.
  if isinstance(padding, str):
    pad_lo = {"VALID": 0}.get(padding.upper(), None)
    if pad_lo is None:  # SAME / SAME_LOWER: total padding split as lax does
      total = max(n_out - 1 + rhs.shape[-1] - lhs.shape[-1], 0)
      pad_lo = total // 2 if padding.upper() == "SAME" else total - total // 2
  else:
    (pad_lo, _), = padding
    pad_lo = operator.index(pad_lo)
  index_dtype = next((x.indices.dtype for x in (lhs, rhs) if isinstance(x, BCOO)), np.int32)
  l_data, l_pos = _conv_operand(lhs, index_dtype)
  r_data, r_pos = _conv_operand(rhs, index_dtype)
  dtype = out.dtype
  # lax's convolution is a cross-correlation: out[o] = sum_k lhs[o + k - pad_lo] rhs[k].
  data = (l_data[:, None].astype(dtype) * r_data[None, :].astype(dtype)).ravel()
  pos = (l_pos[:, None] - r_pos[None, :] + pad_lo).ravel()
  valid = (pos >= 0) & (pos < n_out)
  data = jnp.where(valid, data, jnp.zeros((), dtype))
  pos = jnp.where(valid, pos, n_out).astype(index_dtype)
  return BCOO((data[None, None], pos[None, None, :, None]), shape=out.shape)


# --- BCOO operators built on these products (installed here: bcoo.py cannot import this
# module, which needs the class) ---------------------------------------------------------------

_dense_mul = BCOO.__mul__


def _mul_method(self, other):
  if isinstance(other, BCOO):
    return bcoo_multiply_sparse(self, other)
  return _dense_mul(self, other)


BCOO.__mul__ = BCOO.__rmul__ = _mul_method
BCOO.__matmul__ = lambda self, other: bcoo_matmul(self, other)
BCOO.__rmatmul__ = lambda self, other: bcoo_matmul(other, self)
