"""``sparsify``: run a function written for dense arrays on sparse ones
(``jax.experimental.sparse.sparsify``).

The function is traced to a jaxpr with every sparse argument standing in as a dense array of
its shape; the jaxpr is then evaluated with sparse values where they flow. Primitives with a
sparse rule below (zero-preserving elementwise ops, multiplication by dense values,
``dot_general``, ``transpose``, ``reduce_sum``, ``convert_element_type``) keep results sparse;
any other primitive sees its sparse operands densified, which is correct but not sparse.
"""
import functools

from hlox import lax
from hlox.api import ShapeDtypeStruct, make_jaxpr
from hlox.core.jaxpr import Literal
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse.bcoo import bcoo_dot_general, bcoo_reduce_sum, bcoo_transpose
from hlox._tree_transform import tree_flatten, tree_unflatten

__all__ = ["sparsify"]


def _is_sparse(x) -> bool:
  return isinstance(x, JAXSparse)


def sparsify(f):
  """``f`` accepting sparse (BCOO) arrays wherever it took dense ones; outputs of
  sparsity-preserving computations stay sparse."""

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    leaves, in_tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
    stand_ins = [ShapeDtypeStruct(x.shape, x.dtype) if _is_sparse(x) else x for x in leaves]

    def dense_fun(*flat):
      a, kw = tree_unflatten(in_tree, flat)
      return f(*a, **kw)

    closed, out_shape = make_jaxpr(dense_fun, return_shape=True)(*stand_ins)
    out_leaves = _eval_sparse(closed.jaxpr, closed.consts, leaves)
    return tree_unflatten(tree_flatten(out_shape)[1], out_leaves)

  return wrapped


def _densify(x):
  return x.todense() if _is_sparse(x) else x


def _eval_sparse(jaxpr, consts, args):
  env = {}
  read = lambda v: v.val if isinstance(v, Literal) else env[v]
  for var, val in zip(jaxpr.constvars, consts):
    env[var] = val
  for var, val in zip(jaxpr.invars, args):
    env[var] = val
  for eqn in jaxpr.eqns:
    invals = [read(v) for v in eqn.invars]
    rule = _sparse_rules.get(eqn.primitive.name)
    out = None
    if rule is not None and any(map(_is_sparse, invals)):
      out = rule(*invals, **eqn.params)
    if out is None:
      out = eqn.primitive.bind(*map(_densify, invals), **eqn.params)
    outs = out if eqn.primitive.multiple_results else [out]
    for var, val in zip(eqn.outvars, outs):
      env[var] = val
  return [read(v) for v in jaxpr.outvars]


# --- sparse rules: return None to fall back to the dense computation ---------------------

def _unary_on_data(prim_name):
  prim = getattr(lax, f"{prim_name}_p")

  def rule(x, **params):
    return x._with_data(prim.bind(x.data, **params))
  return rule


_ZERO_PRESERVING_UNARY = ("neg", "abs", "sign", "sin", "tan", "tanh", "asin", "atan", "sinh",
                          "asinh", "atanh", "expm1", "log1p", "sqrt", "cbrt", "real", "imag",
                          "conj", "round", "floor", "ceil", "integer_pow", "copy")


def _mul_rule(x, y):
  if _is_sparse(x) and _is_sparse(y):
    return None
  sp, dense = (x, y) if _is_sparse(x) else (y, x)
  return sp * dense


def _dot_general_rule(lhs, rhs, *, dimension_numbers, precision=None,
                      preferred_element_type=None, **_):
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                          preferred_element_type=preferred_element_type)


def _transpose_rule(x, *, permutation):
  try:
    return bcoo_transpose(x, permutation=permutation)
  except NotImplementedError:
    return None


def _reduce_sum_rule(x, *, axes, **_):
  out = bcoo_reduce_sum(x, axes=axes)
  return out.data.sum() if out.shape == () else out


def _convert_rule(x, *, new_dtype, **_):
  return x.astype(new_dtype)


_sparse_rules = {name: _unary_on_data(name) for name in _ZERO_PRESERVING_UNARY
                 if hasattr(lax, f"{name}_p")}
_sparse_rules.update(mul=_mul_rule, dot_general=_dot_general_rule, transpose=_transpose_rule,
                     reduce_sum=_reduce_sum_rule, convert_element_type=_convert_rule)
