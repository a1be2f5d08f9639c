"""``hlox.flatten_util``: ravel a pytree of arrays into one vector and back (``jax.flatten_util``).

``ravel_pytree`` concatenates the raveled leaves in tree order, promoting mixed dtypes with
JAX's rules (dtypes only, so Python scalars count as canonical arrays here); the function it
returns splits a vector of the same length back into the tree, restoring each leaf's dtype.
"""
from __future__ import annotations

import math

import numpy as np

from hlox import lax
from hlox.core import dtypes
from hlox.core.tracer import get_aval
from hlox._tree_transform import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
  """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated into one 1-D
  array (dtype: the promotion of the leaves' dtypes; float32 and empty when there are no
  leaves), and a function mapping such a vector back to a pytree like ``pytree``."""
  leaves, treedef = tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


class _HashablePartial:
  """``partial(fun, *args)`` equal to (and hashing like) another with the same function and
  arguments, so that two ``unravel`` functions of the same structure are one static argument
  to ``jit`` (no retrace), as in JAX."""

  __slots__ = ("fun", "args")

  def __init__(self, fun, *args):
    self.fun, self.args = fun, args

  def __call__(self, *more):
    return self.fun(*self.args, *more)

  def __eq__(self, other):
    return (type(other) is _HashablePartial and self.fun is other.fun
            and self.args == other.args)

  def __hash__(self):
    return hash((self.fun, self.args))

  def __repr__(self):
    return f"_HashablePartial({self.fun.__name__}, ...)"


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves):
  if not leaves:
    return lax.full((0,), 0, np.float32), _HashablePartial(_unravel_empty)
  avals = [get_aval(x) for x in leaves]
  from_dtypes = tuple(np.dtype(a.dtype) for a in avals)
  to_dtype = dtypes.result_type(*from_dtypes)
  shapes = tuple(tuple(a.shape) for a in avals)
  sizes = tuple(math.prod(s) for s in shapes)
  if all(d == to_dtype for d in from_dtypes):
    # One dtype in: leave the vector's dtype alone on the way back, so unravel works for
    # any dtype (tangents of another precision, say), as in JAX.
    flat = lax.concatenate([lax.reshape(x, (n,)) for x, n in zip(leaves, sizes)], 0)
    return flat, _HashablePartial(_unravel_list_single_dtype, sizes, shapes)
  flat = lax.concatenate([lax.convert_element_type(lax.reshape(x, (n,)), to_dtype)
                          for x, n in zip(leaves, sizes)], 0)
  return flat, _HashablePartial(_unravel_list, sizes, shapes, from_dtypes, to_dtype)


def _unravel_empty(flat):
  return []


def _split(flat, sizes, shapes):
  aval = get_aval(flat)
  if tuple(aval.shape) != (sum(sizes),):
    raise ValueError(f"unravel function given array of shape {tuple(aval.shape)}, but "
                     f"expected a 1-D array of length {sum(sizes)}")
  chunks, start = [], 0
  for n, shape in zip(sizes, shapes):
    chunks.append(lax.reshape(lax.slice(flat, (start,), (start + n,)), shape))
    start += n
  return chunks


def _unravel_list_single_dtype(sizes, shapes, flat):
  return _split(flat, sizes, shapes)


def _unravel_list(sizes, shapes, from_dtypes, to_dtype, flat):
  arr_dtype = np.dtype(get_aval(flat).dtype)
  if arr_dtype != to_dtype:
    raise TypeError(f"unravel function given array of dtype {arr_dtype}, but expected "
                    f"dtype {to_dtype}")
  chunks = _split(flat, sizes, shapes)
  # complex -> real drops the imaginary part on purpose (the leaf was real to begin with).
  return [lax.convert_element_type(lax.real(c) if dtypes.is_complex(to_dtype)
                                   and not dtypes.is_complex(d) else c, d)
          for c, d in zip(chunks, from_dtypes)]
