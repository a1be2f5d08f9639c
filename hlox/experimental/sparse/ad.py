"""Sparse-aware differentiation (``jax.experimental.sparse.grad`` and friends).

``hlox.grad`` of a function of a sparse array differentiates every buffer, indices included.
These versions differentiate a sparse argument through its ``data`` buffer only (the
derivative lives on the array's sparsity pattern) and hand the derivative back as a sparse
array of the same format: the argument with ``data`` replaced (for Jacobians, with the
output's axes as leading batch axes).
"""
import functools
import itertools
import operator

from hlox import autodiff
from hlox.api import vmap
from hlox.experimental.sparse._base import JAXSparse
from hlox._tree_transform import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["grad", "jacfwd", "jacobian", "jacrev", "value_and_grad"]


def _is_sparse(x) -> bool:
  return isinstance(x, JAXSparse)


def _argnums_tuple(argnums) -> tuple:
  if isinstance(argnums, (tuple, list)):
    return tuple(operator.index(a) for a in argnums)
  return (operator.index(argnums),)


def _flatten_for_sparse_ad(fun, argnums, args):
  """``(flat_fun, flat_argnums, flat_args, rebuild)``: ``fun`` on the flat buffers of
  ``args``, the positions of the buffers to differentiate (a sparse array's ``data`` only),
  and a function turning the derivatives of those buffers into derivatives shaped like the
  chosen arguments."""
  argnums = _argnums_tuple(argnums)
  if not all(0 <= a < len(args) for a in argnums):
    raise ValueError(f"argnums {argnums} out of range for {len(args)} positional arguments")
  # Level 1: sparse arrays are leaves; level 2: their buffers.
  outer, outer_tree = tree_flatten(args, is_leaf=_is_sparse)
  counts = [tree_flatten(a, is_leaf=_is_sparse)[1].num_leaves for a in args]
  starts = list(itertools.accumulate([0] + counts))
  chosen = [i for a in argnums for i in range(starts[a], starts[a + 1])]
  buffers = [tree_flatten(x)[0] for x in outer]
  buf_starts = list(itertools.accumulate([0] + [len(b) for b in buffers]))
  flat_args = [b for bufs in buffers for b in bufs]
  inner_trees = [tree_flatten(x)[1] for x in outer]
  flat_argnums = tuple(buf_starts[i] if _is_sparse(outer[i]) else j
                       for i in chosen
                       for j in range(buf_starts[i], buf_starts[i] + (
                           1 if _is_sparse(outer[i]) else len(buffers[i]))))

  def flat_fun(*flat, **kwargs):
    leaves = [tree_unflatten(t, flat[buf_starts[i]:buf_starts[i + 1]])
              for i, t in enumerate(inner_trees)]
    return fun(*tree_unflatten(outer_tree, leaves), **kwargs)

  def rebuild_one(i, deriv):
    bufs, tree = buffers[i], inner_trees[i]
    make = lambda d: tree_unflatten(tree, [d, *bufs[1:]])
    # Leading axes of a Jacobian become batch axes of the sparse derivative.
    for _ in range(deriv.ndim - bufs[0].ndim):
      make = vmap(make)
    return make(deriv)

  def rebuild(derivs):
    derivs = list(derivs)
    out = [None] * len(outer)
    for i in chosen:
      if _is_sparse(outer[i]):
        out[i] = rebuild_one(i, derivs.pop(0))
      else:
        out[i] = tree_unflatten(inner_trees[i], [derivs.pop(0) for _ in buffers[i]])
    per_arg = tree_unflatten(outer_tree, out)
    per_arg = tuple(a for a in per_arg if tree_leaves(a))
    return per_arg[0] if len(per_arg) == 1 else per_arg

  return flat_fun, flat_argnums, flat_args, rebuild


def _sparse_derivative(transform, fun, argnums, has_aux, kwargs, *, returns_value=False):
  @functools.wraps(fun)
  def wrapped(*args, **call_kwargs):
    flat_fun, flat_argnums, flat_args, rebuild = _flatten_for_sparse_ad(fun, argnums, args)
    out = transform(flat_fun, argnums=flat_argnums, has_aux=has_aux, **kwargs)(
        *flat_args, **call_kwargs)
    if returns_value:
      value, derivs = out
      return value, rebuild(derivs)
    if has_aux:
      return rebuild(out[0]), out[1]
    return rebuild(out)
  return wrapped


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
  """``hlox.value_and_grad`` where a sparse argument's gradient is taken with respect to its
  stored values and returned as a sparse array with the argument's sparsity pattern."""
  return _sparse_derivative(autodiff.value_and_grad, fun, argnums, has_aux, kwargs,
                            returns_value=True)


def grad(fun, argnums=0, has_aux=False, **kwargs):
  """``hlox.grad`` where a sparse argument's gradient is taken with respect to its stored
  values and returned as a sparse array with the argument's sparsity pattern."""
  return _sparse_derivative(autodiff.grad, fun, argnums, has_aux, kwargs)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
  """``hlox.jacfwd`` with sparse arguments differentiated through their stored values (the
  output's axes lead the sparse Jacobian's batch axes); outputs must be dense."""
  return _sparse_derivative(autodiff.jacfwd, fun, argnums, has_aux, kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
  """``hlox.jacrev`` with sparse arguments differentiated through their stored values (the
  output's axes lead the sparse Jacobian's batch axes); outputs must be dense."""
  return _sparse_derivative(autodiff.jacrev, fun, argnums, has_aux, kwargs)


jacobian = jacrev
