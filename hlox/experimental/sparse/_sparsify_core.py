"""The machinery under ``sparsify``: the environment of buffers, the values that point into
it, the rule tables, and the jaxpr interpreter (``jax.experimental.sparse.transform``'s
``SparsifyEnv``, ``SparsifyValue``, ``eval_sparse``, ``sparsify_raw``).

A sparse array is taken apart into its buffers (``data``, ``indices``, and for BCSR
``indptr``), which go into a ``SparsifyEnv``; a ``SparsifyValue`` names an array by the
positions of its buffers there, plus its static shape and index flags. Two values may share
a buffer: ``x * 2`` keeps ``x``'s indices, and an operation on two arrays with the same
indices buffer can then work on their data alone. Dense arrays are values with only a data
buffer. Rules (``rule(spenv, *spvalues, **params) -> [spvalue, ...]``) live in the tables
``sparse_rules_bcoo`` and ``sparse_rules_bcsr``, keyed by primitive, and are registered by
``_sparse_rules``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox._tree_transform import tree_flatten, tree_map, tree_unflatten
from hlox.core.avals import ShapedArray
from hlox.core.jaxpr import Literal, literal_value, trace_to_jaxpr
from hlox.core.tracer import get_aval
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo import BCOO
from hlox.experimental.sparse.bcsr import BCSR

__all__ = ["SparsifyEnv", "SparsifyValue", "arrays_to_spvalues", "eval_sparse",
           "sparse_rules_bcoo", "sparse_rules_bcsr", "sparsify_raw", "spvalues_to_arrays",
           "spvalues_to_avals"]

sparse_rules_bcoo: dict = {}
sparse_rules_bcsr: dict = {}

# Primitives whose result is nonzero where the operand is zero: a sparse rule would store
# every element, so sparsify refuses them rather than densify silently.
densifying_primitives = {lax.acos_p, lax.acosh_p, lax.bessel_i0e_p, lax.cos_p, lax.cosh_p,
                         lax.eq_p, lax.exp_p, lax.ge_p, lax.gt_p, lax.le_p, lax.lt_p,
                         lax.log_p, lax.ne_p, lax.xor_p}


def raise_unimplemented(primitive):
  """The NotImplementedError for a primitive without a sparse rule."""
  if primitive in densifying_primitives:
    raise NotImplementedError(
        f"sparse rule for {primitive} is not implemented because it would result in dense "
        "output. If this is your intent, use sparse.todense() to convert your arguments "
        "to dense matrices.")
  raise NotImplementedError(f"sparse rule for {primitive} is not implemented.")


class SparsifyEnv:
  """The buffers (arrays or tracers) that the ``SparsifyValue``s of one sparsify evaluation
  point into; ``bufs`` are the initial ones."""

  def __init__(self, bufs=()):
    self._buffers = list(bufs)

  def _push(self, arr) -> int:
    self._buffers.append(jnp.asarray(arr))
    return len(self._buffers) - 1

  def _get(self, ref, what):
    if ref is None:
      raise RuntimeError(f"Internal: requested {what} of a value that has none")
    return self._buffers[ref]

  def data(self, spvalue: SparsifyValue):
    """The data buffer of ``spvalue`` (the array itself for a dense value)."""
    return self._get(spvalue.data_ref, "data")

  def indices(self, spvalue: SparsifyValue):
    """The indices buffer of a sparse ``spvalue``."""
    return self._get(spvalue.indices_ref, "indices")

  def indptr(self, spvalue: SparsifyValue):
    """The indptr buffer of a BCSR ``spvalue``."""
    return self._get(spvalue.indptr_ref, "indptr")

  def dense(self, data) -> SparsifyValue:
    """A new dense value holding ``data``."""
    return SparsifyValue(np.shape(data), self._push(data))

  def sparse(self, shape, data=None, indices=None, indptr=None, *, data_ref=None,
             indices_ref=None, indptr_ref=None, indices_sorted=False,
             unique_indices=False) -> SparsifyValue:
    """A new sparse value of ``shape``: each buffer is given either as an array (pushed) or
    as the position of one already in the environment (``*_ref``)."""
    def ref(buf, buf_ref, what, required=True):
      if buf is not None:
        if buf_ref is not None:
          raise ValueError(f"give {what} or {what}_ref, not both")
        return self._push(buf)
      if buf_ref is None:
        if required:
          raise ValueError(f"a sparse value needs {what} or {what}_ref")
        return None
      if not 0 <= buf_ref < len(self._buffers):
        raise ValueError(f"{what}_ref={buf_ref} is not a buffer of this environment")
      return buf_ref
    data_ref = ref(data, data_ref, "data")
    indices_ref = ref(indices, indices_ref, "indices")
    indptr_ref = ref(indptr, indptr_ref, "indptr", required=False)
    return SparsifyValue(tuple(shape), data_ref, indices_ref, indptr_ref,
                         indices_sorted=indices_sorted, unique_indices=unique_indices)


class SparsifyValue(NamedTuple):
  """An array of a ``SparsifyEnv``: its shape and the positions of its buffers (only
  ``data_ref`` for a dense array; ``indptr_ref`` too for BCSR)."""
  shape: tuple
  data_ref: int | None
  indices_ref: int | None = None
  indptr_ref: int | None = None
  indices_sorted: bool | None = False
  unique_indices: bool | None = False

  @property
  def ndim(self) -> int:
    return len(self.shape)

  def is_sparse(self) -> bool:
    return self.indices_ref is not None

  def is_dense(self) -> bool:
    return self.indices_ref is None

  def is_bcoo(self) -> bool:
    return self.is_sparse() and self.indptr_ref is None

  def is_bcsr(self) -> bool:
    return self.is_sparse() and self.indptr_ref is not None


def is_sparse_obj(x) -> bool:
  return isinstance(x, (BCOO, BCSR))


def is_spvalue(x) -> bool:
  return isinstance(x, SparsifyValue)


def arrays_to_spvalues(spenv: SparsifyEnv, args: Any) -> Any:
  """``args`` (a pytree of dense and sparse arrays) as the same pytree of values of
  ``spenv``, their buffers pushed into it."""
  def to_spvalue(arg):
    if isinstance(arg, BCOO):
      return spenv.sparse(arg.shape, arg.data, arg.indices, indices_sorted=arg.indices_sorted,
                          unique_indices=arg.unique_indices)
    if isinstance(arg, BCSR):
      return spenv.sparse(arg.shape, arg.data, arg.indices, arg.indptr,
                          indices_sorted=arg.indices_sorted, unique_indices=arg.unique_indices)
    return spenv.dense(arg)
  return tree_map(to_spvalue, args, is_leaf=is_sparse_obj)


def spvalues_to_arrays(spenv: SparsifyEnv, spvalues: Any) -> Any:
  """The inverse of ``arrays_to_spvalues``: a pytree of values as dense and sparse arrays."""
  def to_array(spvalue):
    if spvalue.is_bcoo():
      return BCOO((spenv.data(spvalue), spenv.indices(spvalue)), shape=spvalue.shape,
                  indices_sorted=spvalue.indices_sorted, unique_indices=spvalue.unique_indices)
    if spvalue.is_bcsr():
      return BCSR((spenv.data(spvalue), spenv.indices(spvalue), spenv.indptr(spvalue)),
                  shape=spvalue.shape, indices_sorted=spvalue.indices_sorted,
                          unique_indices=spvalue.unique_indices)
    return spenv.data(spvalue)
  return tree_map(to_array, spvalues, is_leaf=is_spvalue)


def spvalues_to_avals(spenv: SparsifyEnv, spvalues: Any) -> Any:
  """The abstract values (shape, data dtype and weak type) of a pytree of values."""
  def to_aval(spvalue):
    data_aval = get_aval(spenv.data(spvalue))
    return ShapedArray(spvalue.shape, data_aval.dtype, data_aval.weak_type)
  return tree_map(to_aval, spvalues, is_leaf=is_spvalue)


def apply_rule(primitive, spenv: SparsifyEnv, spvalues, params):
  """The output values of ``primitive`` on ``spvalues``, at least one of them sparse."""
  if any(v.is_bcsr() for v in spvalues):
    table = sparse_rules_bcsr
  else:
    table = sparse_rules_bcoo
  rule = table.get(primitive)
  if rule is None:
    raise_unimplemented(primitive)
  return list(rule(spenv, *spvalues, **params))


def eval_sparse(jaxpr, consts, spvalues, spenv: SparsifyEnv) -> list:
  """Evaluate ``jaxpr`` on ``spvalues`` (its invars; ``consts`` are dense): equations on
  dense values run as they are, those with a sparse operand by their sparse rule."""
  env = {}

  def read(v):
    if type(v) is Literal:
      return spenv.dense(literal_value(v))
    return env[v]

  for var, val in zip(jaxpr.constvars, consts):
    env[var] = spenv.dense(val)
  if len(spvalues) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(spvalues)}")
  env.update(zip(jaxpr.invars, spvalues))
  for eqn in jaxpr.eqns:
    invals = [read(v) for v in eqn.invars]
    prim = eqn.primitive
    if any(v.is_sparse() for v in invals):
      outs = apply_rule(prim, spenv, invals, eqn.params)
    else:
      out = prim.bind(*(spenv.data(v) for v in invals), **eqn.params)
      outs = [spenv.dense(o) for o in (out if prim.multiple_results else [out])]
    if len(outs) != len(eqn.outvars):
      raise RuntimeError(f"Internal: sparse rule for {prim} gave {len(outs)} results, "
                         f"expected {len(eqn.outvars)}")
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def sparsify_raw(f):
  """``f`` on values of an environment: ``sparsify_raw(f)(spenv, *spvalues, **params)``
  traces ``f`` on dense stand-ins of the values, evaluates the jaxpr sparsely in
  ``spenv``, and returns ``(flat output values, output treedef)``."""

  def wrapped(spenv: SparsifyEnv, *spvalues, **params):
    flat, in_tree = tree_flatten((spvalues, {}), is_leaf=is_spvalue)
    in_avals = spvalues_to_avals(spenv, flat)
    out_trees = []

    def flat_fun(*args):
      a, kw = tree_unflatten(in_tree, args)
      leaves, out_tree = tree_flatten(f(*a, **kw, **params))
      out_trees.append(out_tree)
      return leaves

    name = getattr(f, "__name__", "fun")
    closed = trace_to_jaxpr(flat_fun, in_avals, f"sparsify({name})", "sparsify")
    return eval_sparse(closed.jaxpr, closed.consts, flat, spenv), out_trees[0]

  return wrapped


def forget_index_flags(tree):
  """``tree`` with its sparse arrays claiming neither sorted nor unique indices: always
  true, and the same pytree structure whatever a computation did to the flags (loop carries
  and branch outputs must agree in structure)."""
  def forget(x):
    if isinstance(x, JAXSparse) and (x.indices_sorted or x.unique_indices):
      leaves, treedef = tree_flatten(x)
      x = tree_unflatten(treedef, leaves)
      x.indices_sorted = x.unique_indices = False
    return x
  return tree_map(forget, tree, is_leaf=is_sparse_obj)


def jaxpr_as_sparse_fun(closed):
  """``closed`` as a function of dense and sparse arrays, evaluated sparsely: the body of a
  control-flow or call primitive run again under the matching user-level function."""
  def fun(*args):
    spenv = SparsifyEnv()
    spvalues = arrays_to_spvalues(spenv, list(args))
    return spvalues_to_arrays(spenv, eval_sparse(closed.jaxpr, closed.consts, spvalues, spenv))
  return fun
