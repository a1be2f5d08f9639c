"""What the linear-algebra primitives share: the primitive maker, the batching rule and small
matrix helpers (transposes, triangles, products) written on other primitives.

Every linalg primitive takes operands whose trailing dimensions are the matrix (or vector)
dimensions and whose leading ones are a batch, the same for every operand. The LAPACK
kernels loop over that batch themselves, so ``vmap`` only needs to move the mapped dimension
to the front (``linalg_batch_rule``).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import numpy as np

from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox.interpreters import batching
from hlox.lax import elementwise as ew, reductions, shapes
from hlox.lax.dot import Precision, dot_general
from hlox.lax.utils import standard_primitive

float_or_complex = ("float", "complex")


def check_dtypes(name: str, avals, kinds=float_or_complex, same: bool = True) -> None:
  """Raise JAX's ``TypeError`` unless every aval's dtype is of ``kinds`` (and all agree)."""
  for i, aval in enumerate(avals):
    dt = aval.dtype
    ok = ("float" in kinds and dtypes.is_float(dt)) or \
         ("complex" in kinds and dtypes.is_complex(dt)) or \
         ("int" in kinds and dtypes.is_int(dt))
    if not ok:
      raise TypeError(f"{name} does not accept dtype {dt.name} (argument {i}); accepted: "
                      f"{', '.join(kinds)} types")
  if same and len({a.dtype for a in avals}) > 1:
    raise TypeError(f"{name} requires arguments to have the same dtype, got "
                    f"{', '.join(a.str_short() for a in avals)}")


def split_batch(name: str, avals, ranks: Sequence[int]) -> tuple:
  """``(batch_dims, [core dims per operand])``: operand ``i`` has ``ranks[i]`` core
  dimensions after a batch that all operands share (JAX's ``linalg_shape_rule``)."""
  batch, cores = None, []
  for i, (aval, rank) in enumerate(zip(avals, ranks)):
    shape = tuple(aval.shape)
    if len(shape) < rank:
      raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got "
                      f"shape={shape}")
    b, c = shape[:len(shape) - rank], shape[len(shape) - rank:]
    if batch is None:
      batch = b
    elif len(b) != len(batch):
      raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, "
                      f"but got {[len(a.shape) - r for a, r in zip(avals, ranks)]} batch "
                      "dimensions for the inputs.")
    elif b != batch:
      raise TypeError(f"All inputs to {name} must have the same batch dimensions, got "
                      f"{', '.join(str(tuple(a.shape)) for a in avals)}")
    cores.append(c)
  return batch or (), cores


def linalg_primitive(name: str, ranks: Sequence[int], core_shape: Callable,
                     dtype_rule: Callable | None = None, multiple_results: bool = False,
                     kinds=float_or_complex):
  """A batched linear-algebra primitive.

  ``core_shape(*core_dims, **params)`` maps the operands' matrix dimensions to the result's
  (a list of them with ``multiple_results``); the batch dimensions are put in front.
  ``dtype_rule(*avals, **params)`` defaults to the first operand's dtype (for every result).
  The batching rule moves mapped dimensions to the front.
  """
  def shape_rule(*avals, **params):
    batch, cores = split_batch(name, avals, ranks)
    out = core_shape(*cores, **params)
    if multiple_results:
      return [batch + tuple(s) for s in out]
    return batch + tuple(out)

  def default_dtype_rule(*avals, **params):
    check_dtypes(name, avals, kinds)
    if multiple_results:  # the operands' dtype for every result
      return [avals[0].dtype] * len(shape_rule(*avals, **params))
    return avals[0].dtype

  prim = standard_primitive(shape_rule, dtype_rule or default_dtype_rule, name,
                            weak_type_rule=_never_weak, multiple_results=multiple_results)
  batching.primitive_batchers[prim] = partial(linalg_batch_rule, prim)
  return prim


def _never_weak(*avals, **params):
  # Factorizations never return weak types (JAX's input arrays here are never weak: the
  # wrappers take arrays, and a weak float scalar is not a matrix).
  return False


def linalg_batch_rule(prim, vals, dims, **params):
  """Move every mapped dimension to the front (broadcasting unmapped operands): the
  primitive treats leading dimensions as a batch."""
  size = next(get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
  vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
  out = prim.bind(*vals, **params)
  if prim.multiple_results:
    return out, [0] * len(out)
  return out, 0


# --- small matrix helpers (on primitives; usable inside JVP rules and lower_fun) ----------

def T(x):
  """Swap the last two dimensions."""
  nd = get_aval(x).ndim
  return shapes.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def H(x):
  """Conjugate transpose of the matrices in the last two dimensions."""
  x = T(x)
  return ew.conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


def symmetrize(x):
  """``(x + x^H) / 2``."""
  return ew.div(ew.add(x, H(x)), shapes.full_like(x, 2))


def tri_mask(shape, k: int = 0):
  """A bool ``(..., n, m)`` array: ``True`` where ``col - row <= k`` (on or below the
  ``k``-th diagonal)."""
  n, m = shape[-2], shape[-1]
  rows = shapes.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = shapes.broadcasted_iota(dtypes.int32, (n, m), 1)
  mask = ew.ge(ew.add(rows, shapes.full((n, m), k, dtypes.int32)), cols)
  return shapes.broadcast_in_dim(mask, tuple(shape), (len(shape) - 2, len(shape) - 1))


def tril(x, k: int = 0):
  """The lower triangle of ``x`` (on and below diagonal ``k``), zeros elsewhere."""
  shape = get_aval(x).shape
  return ew.select(tri_mask(shape, k), x, shapes.full_like(x, 0))


def triu(x, k: int = 0):
  """The upper triangle of ``x`` (on and above diagonal ``k``), zeros elsewhere."""
  shape = get_aval(x).shape
  return ew.select(tri_mask(shape, k - 1), shapes.full_like(x, 0), x)


def eye_like(x, shape=None):
  """An identity matrix (or a batch of them) of ``x``'s dtype and shape (or ``shape``)."""
  shape = tuple(get_aval(x).shape if shape is None else shape)
  n, m = shape[-2], shape[-1]
  rows = shapes.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = shapes.broadcasted_iota(dtypes.int32, (n, m), 1)
  eye = ew.convert_element_type(ew.eq(rows, cols), get_aval(x).dtype)
  return shapes.broadcast_in_dim(eye, shape, (len(shape) - 2, len(shape) - 1))


def matmul(a, b):
  """Batched ``a @ b`` for ``(..., m, k)`` and ``(..., k, n)`` of equal batch shapes, at the
  highest precision (JAX's rules use ``Precision.HIGHEST`` too)."""
  nd = get_aval(a).ndim
  batch = tuple(range(nd - 2))
  return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)),
                     precision=Precision.HIGHEST)


def diagonal(x):
  """The main diagonals of the matrices in the last two dimensions: ``(..., min(n, m))``."""
  shape = get_aval(x).shape
  n, m = shape[-2], shape[-1]
  k = min(n, m)
  rows = shapes.broadcasted_iota(dtypes.int32, (n, m), 0)
  cols = shapes.broadcasted_iota(dtypes.int32, (n, m), 1)
  on_diag = shapes.broadcast_in_dim(ew.eq(rows, cols), tuple(shape),
                                    (len(shape) - 2, len(shape) - 1))
  # A select and a sum (not a product with the identity, which would turn inf into NaN)
  # keep this a composition of primitives that every transform handles.
  picked = ew.select(on_diag, x, shapes.full_like(x, 0))
  picked = shapes.slice(picked, (0,) * len(shape), tuple(shape[:-2]) + (k, k))
  return reductions.reduce_sum(picked, (len(shape) - 1,))


def real_dtype(dtype):
  return np.finfo(np.dtype(dtype)).dtype
