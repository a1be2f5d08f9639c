"""The sparse rules of ``sparsify``: how each primitive acts on sparse values.

A rule takes the environment and the operands' values (at least one sparse) and returns the
results' values. Elementwise operations that keep zeros at zero work on ``data`` alone and
share the operand's index buffers; those that are not linear first sum duplicate indices
(``f(a) + f(b) != f(a + b)``). Structural operations call the format's functions
(``bcoo_reshape``...). Control flow and calls run their bodies sparsely under the matching
user-level function (``while_loop``, ``switch``, ``scan``, ``jit``), so their sparse
operands travel as pytrees.
"""
import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox._tree_transform import tree_flatten, tree_structure
from hlox.api import eval_shape, jit
from hlox.core import dtypes
from hlox.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from hlox.experimental.sparse._base import JAXSparse
from hlox.experimental.sparse._sparsify_core import (
    arrays_to_spvalues, eval_sparse, forget_index_flags, jaxpr_as_sparse_fun,
    sparse_rules_bcoo, sparse_rules_bcsr, spvalues_to_arrays)
from hlox.experimental.sparse.api import todense_p
from hlox.experimental.sparse.bcoo import (bcoo_dot_general, bcoo_extract, bcoo_multiply_dense,
                                           bcoo_reduce_sum, bcoo_transpose)
from hlox.experimental.sparse.bcoo_layout import (
    bcoo_broadcast_in_dim, bcoo_concatenate, bcoo_dynamic_slice, bcoo_reshape, bcoo_rev,
    bcoo_slice, bcoo_squeeze)
from hlox.experimental.sparse.bcoo_products import (bcoo_conv_general_dilated,
                                                    bcoo_multiply_sparse)
from hlox.experimental.sparse.bcsr import (bcsr_broadcast_in_dim, bcsr_concatenate,
                                           bcsr_dot_general)
from hlox.lax.call import jit_p
from hlox.lax.control_flow import cond_p, scan_p, switch, while_p

_BOTH = (sparse_rules_bcoo, sparse_rules_bcsr)


def _register(prims, rule, tables=_BOTH):
  for prim in prims:
    for table in tables:
      table[prim] = rule


# --- elementwise --------------------------------------------------------------------------

def ensure_unique_indices(spenv, spvalue):
  """``spvalue`` with duplicate indices summed (unchanged if dense or known unique)."""
  if spvalue.is_dense() or spvalue.unique_indices:
    return spvalue
  arr = spvalues_to_arrays(spenv, spvalue)
  arr = arr.sum_duplicates(nse=arr.nse, remove_zeros=False)
  return arrays_to_spvalues(spenv, arr)


def _on_data(prim, linear):
  def rule(spenv, spvalue, **params):
    if not linear:
      spvalue = ensure_unique_indices(spenv, spvalue)
    data = prim.bind(spenv.data(spvalue), **params)
    return [spenv.sparse(spvalue.shape, data, indices_ref=spvalue.indices_ref,
                         indptr_ref=spvalue.indptr_ref, indices_sorted=spvalue.indices_sorted,
                         unique_indices=spvalue.unique_indices)]
  return rule


_LINEAR_UNARY = (lax.conj_p, lax.copy_p, lax.imag_p, lax.neg_p, lax.real_p)
_NONLINEAR_UNARY = (lax.abs_p, lax.asin_p, lax.asinh_p, lax.atan_p, lax.atanh_p,
                    lax.bessel_i1e_p, lax.expm1_p, lax.log1p_p, lax.sign_p, lax.sin_p,
                    lax.sinh_p, lax.sqrt_p, lax.square_p, lax.tan_p, lax.tanh_p,
                    lax.convert_element_type_p)
for _prim in _LINEAR_UNARY:
  _register([_prim], _on_data(_prim, linear=True))
for _prim in _NONLINEAR_UNARY:
  _register([_prim], _on_data(_prim, linear=False))


def _integer_pow(spenv, spvalue, *, y):
  if y <= 0:
    raise NotImplementedError(
        f"sparse rule for {lax.integer_pow_p} with non-positive exponent {y} is not "
        "implemented because it would result in dense output. If this is your intent, use "
        "sparse.todense() to convert your argument to a dense array.")
  return _on_data(lax.integer_pow_p, linear=False)(spenv, spvalue, y=y)


_register([lax.integer_pow_p], _integer_pow)


def _add(spenv, x, y):
  if x.is_sparse() and y.is_sparse():
    if x.shape != y.shape:
      raise NotImplementedError("Addition between sparse matrices of different shapes.")
    if x.indices_ref == y.indices_ref:
      data = lax.add(spenv.data(x), spenv.data(y))
      return [spenv.sparse(x.shape, data, indices_ref=x.indices_ref,
                           indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)]
    x_ind, y_ind = spenv.indices(x), spenv.indices(y)
    if x_ind.ndim != y_ind.ndim or spenv.data(x).ndim != spenv.data(y).ndim:
      raise NotImplementedError(
          "Addition between sparse matrices with different batch/dense dimensions.")
    # Entries of both, side by side: duplicates add up, so no merging is needed.
    axis = x_ind.ndim - 2
    x_arr, y_arr = spvalues_to_arrays(spenv, (x, y))
    x_arr, y_arr = _broadcast_batch(x_arr, y_arr)
    indices = lax.concatenate([x_arr.indices, y_arr.indices], axis)
    data = lax.concatenate([x_arr.data, y_arr.data], axis)
    return [spenv.sparse(x.shape, data, indices)]
  sp, dense = (x, y) if x.is_sparse() else (y, x)
  out_shape = lax.broadcast_shapes(x.shape, y.shape)
  if dense.shape != out_shape:
    raise NotImplementedError(
        "Addition between a sparse array X and a dense array Y is not implemented when the "
        "output shape is larger than Y.shape. This is to prevent silent densification of a "
        "large sparse array. If this is your intent, you can explicitly cast the sparse "
        "array to a dense matrix.")
  sp_arr = spvalues_to_arrays(spenv, sp)
  return [spenv.dense(lax.add(sp_arr.todense(), spenv.data(dense)))]


def _broadcast_batch(x, y):
  """``x`` and ``y`` with their buffers' batch dimensions of size 1 broadcast to match."""
  n_batch = x.indices.ndim - 2
  if n_batch == 0:
    return x, y
  batch = tuple(max(a, b, c, d) for a, b, c, d in zip(
      x.data.shape, x.indices.shape, y.data.shape, y.indices.shape))[:n_batch]
  def full(arr):
    data = jnp.broadcast_to(arr.data, batch + arr.data.shape[n_batch:])
    indices = jnp.broadcast_to(arr.indices, batch + arr.indices.shape[n_batch:])
    return type(arr)((data, indices), shape=arr.shape)
  return full(x), full(y)


def _sub(spenv, x, y):
  if x.is_sparse() and y.is_sparse():
    neg_y, = sparse_rules_bcoo[lax.neg_p](spenv, y)
    return _add(spenv, x, neg_y)
  raise NotImplementedError("Subtraction between sparse and dense array.")


def _mul(spenv, x, y):
  if x.is_sparse() and y.is_sparse():
    if x.indices_ref == y.indices_ref and x.unique_indices:
      data = lax.mul(spenv.data(x), spenv.data(y))
      return [spenv.sparse(x.shape, data, indices_ref=x.indices_ref,
                           indices_sorted=x.indices_sorted, unique_indices=True)]
    out = bcoo_multiply_sparse(*spvalues_to_arrays(spenv, (x, y)))
    return arrays_to_spvalues(spenv, [out])
  sp, dense = (x, y) if x.is_sparse() else (y, x)
  # Products distribute over duplicate entries: the indices stay as they are.
  data = bcoo_multiply_dense(spvalues_to_arrays(spenv, sp), spenv.data(dense))
  return [spenv.sparse(sp.shape, data, indices_ref=sp.indices_ref,
                       indices_sorted=sp.indices_sorted, unique_indices=sp.unique_indices)]


def _div(spenv, x, y):
  if y.is_sparse():
    raise NotImplementedError(
        "Division by a sparse array is not implemented because it would result in dense "
        "output. If this is your intent, use sparse.todense() to convert your arguments to "
        "a dense array.")
  divisor = spenv.data(y)
  if not dtypes.issubdtype(divisor.dtype, np.inexact):
    # Integer division does not distribute over duplicate entries.
    x = ensure_unique_indices(spenv, x)
  x_arr = spvalues_to_arrays(spenv, x)
  if divisor.ndim:
    if jnp.broadcast_shapes(divisor.shape, x.shape) != x.shape:
      raise NotImplementedError(
          "division of a sparse array by a dense one is only implemented where the output "
          f"shape is the sparse array's; got {x.shape} / {divisor.shape}")
    # The divisor where x stores entries (elsewhere the quotient is zero).
    divisor = bcoo_extract(x_arr, jnp.broadcast_to(divisor, x.shape)).data
  return [spenv.sparse(x.shape, lax.div(x_arr.data, divisor), indices_ref=x.indices_ref,
                       indices_sorted=x.indices_sorted, unique_indices=x.unique_indices)]


sparse_rules_bcoo.update({lax.add_p: _add, lax.sub_p: _sub, lax.mul_p: _mul,
                          lax.div_p: _div})


# --- structure ----------------------------------------------------------------------------

def _standard(op, multiple_results=False):
  """A rule calling ``op`` on the operands as arrays."""
  def rule(spenv, *spvalues, **params):
    out = op(*spvalues_to_arrays(spenv, spvalues), **params)
    return arrays_to_spvalues(spenv, list(out) if multiple_results else [out])
  return rule


def _transpose(spenv, x, *, permutation):
  permutation = tuple(permutation)
  mat = spvalues_to_arrays(spenv, x)
  out = bcoo_transpose(mat, permutation=permutation)
  n_batch, n_sparse = mat.n_batch, mat.n_sparse
  batch_kept = permutation[:n_batch] == tuple(range(n_batch))
  sparse_kept = (permutation[n_batch:n_batch + n_sparse]
                 == tuple(range(n_batch, n_batch + n_sparse)))
  dense_kept = permutation[n_batch + n_sparse:] == tuple(range(n_batch + n_sparse, mat.ndim))
  # Buffers that the permutation leaves alone are shared, not copied.
  data = dict(data_ref=x.data_ref) if batch_kept and dense_kept else dict(data=out.data)
  indices = (dict(indices_ref=x.indices_ref) if batch_kept and sparse_kept
             else dict(indices=out.indices))
  return [spenv.sparse(out.shape, **data, **indices, indices_sorted=out.indices_sorted,
                       unique_indices=out.unique_indices)]


def _reduce_sum(spenv, x, *, axes, **_):
  out = bcoo_reduce_sum(spvalues_to_arrays(spenv, x), axes=axes)
  if out.shape == ():
    return [spenv.dense(out.data.sum())]
  return [spenv.sparse(out.shape, out.data, out.indices)]


def _dot_general(op):
  def fn(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, **_):
    return op(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
              preferred_element_type=preferred_element_type)
  return fn


def _broadcast_in_dim(op):
  def fn(x, *, shape, broadcast_dimensions, **_):
    return op(x, shape=shape, broadcast_dimensions=broadcast_dimensions)
  return fn


def _concatenate(op):
  return lambda *xs, dimension: op(xs, dimension=dimension)


def _reshape(x, *, new_sizes, dimensions=None, **_):
  return bcoo_reshape(x, new_sizes=new_sizes, dimensions=dimensions)


def _dynamic_slice(x, *starts, slice_sizes):
  return bcoo_dynamic_slice(x, starts, slice_sizes=slice_sizes)


def _stack(broadcast_in_dim, concatenate):
  def rule(spenv, *spvalues, axis):
    arrays = spvalues_to_arrays(spenv, spvalues)
    shape = arrays[0].shape
    dims = tuple(d if d < axis else d + 1 for d in range(len(shape)))
    expanded = [broadcast_in_dim(a, shape=shape[:axis] + (1,) + shape[axis:],
                                 broadcast_dimensions=dims) for a in arrays]
    return arrays_to_spvalues(spenv, [concatenate(expanded, dimension=axis)])
  return rule


sparse_rules_bcoo.update({
    lax.transpose_p: _transpose,
    lax.reduce_sum_p: _reduce_sum,
    lax.dot_general_p: _standard(_dot_general(bcoo_dot_general)),
    lax.broadcast_in_dim_p: _standard(_broadcast_in_dim(bcoo_broadcast_in_dim)),
    lax.concatenate_p: _standard(_concatenate(bcoo_concatenate)),
    lax.reshape_p: _standard(_reshape),
    lax.squeeze_p: _standard(bcoo_squeeze),
    lax.rev_p: _standard(bcoo_rev),
    lax.slice_p: _standard(bcoo_slice),
    lax.dynamic_slice_p: _standard(_dynamic_slice),
    lax.conv_general_dilated_p: _standard(bcoo_conv_general_dilated),
    lax.stack_p: _stack(bcoo_broadcast_in_dim, bcoo_concatenate),
})

sparse_rules_bcsr.update({
    lax.dot_general_p: _standard(_dot_general(bcsr_dot_general)),
    lax.broadcast_in_dim_p: _standard(_broadcast_in_dim(bcsr_broadcast_in_dim)),
    lax.concatenate_p: _standard(_concatenate(bcsr_concatenate)),
    lax.stack_p: _stack(bcsr_broadcast_in_dim, bcsr_concatenate),
})


def _todense(spenv, x, *, tree):
  del tree  # the sparse value says what it is
  return [spenv.dense(spvalues_to_arrays(spenv, x).todense())]


_register([todense_p], _todense)


# --- calls and control flow ---------------------------------------------------------------

def _jit(spenv, *spvalues, jaxpr, name="jit", donated_invars=(), **_):
  if any(donated_invars):
    raise NotImplementedError("sparse xla_call with donated_invars")
  body = jaxpr_as_sparse_fun(jaxpr)
  body.__name__ = name
  outs = jit(body)(*spvalues_to_arrays(spenv, spvalues))
  return arrays_to_spvalues(spenv, list(outs))


def _inline_call(spenv, *spvalues, call_jaxpr, **_):
  # The body runs sparsely where the call is; its custom derivative rule is not carried
  # over (the sparse body is differentiated as written).
  return eval_sparse(call_jaxpr.jaxpr, call_jaxpr.consts, list(spvalues), spenv)


def _while(spenv, *spvalues, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  arrays = spvalues_to_arrays(spenv, spvalues)
  cond_consts = arrays[:cond_nconsts]
  body_consts = arrays[cond_nconsts:cond_nconsts + body_nconsts]
  init = forget_index_flags(tuple(arrays[cond_nconsts + body_nconsts:]))
  cond_fun, body_fun = jaxpr_as_sparse_fun(cond_jaxpr), jaxpr_as_sparse_fun(body_jaxpr)
  out = lax.while_loop(lambda carry: cond_fun(*cond_consts, *carry)[0],
                       lambda carry: forget_index_flags(tuple(body_fun(*body_consts, *carry))),
                       init)
  return arrays_to_spvalues(spenv, list(out))


def _cond(spenv, index, *spvalues, branches):
  operands = spvalues_to_arrays(spenv, spvalues)
  funs = [_branch_fun(b) for b in branches]
  shapes = [eval_shape(f, *operands) for f in funs]
  first = shapes[0]
  for other in shapes[1:]:
    if (tree_structure(first) != tree_structure(other) or
        [(a.shape, a.dtype) for a in tree_flatten(first)[0]]
        != [(a.shape, a.dtype) for a in tree_flatten(other)[0]]):
      raise TypeError(
          "sparsified true_fun output must have same type structure as sparsified false_fun "
          f"output, but there was a mismatch: {tree_structure(other)} vs "
          f"{tree_structure(first)}")
  out = switch(spenv.data(index), funs, *operands)
  return arrays_to_spvalues(spenv, list(out))


def _branch_fun(closed):
  fun = jaxpr_as_sparse_fun(closed)
  return lambda *ops: forget_index_flags(tuple(fun(*ops)))


def _scan(spenv, *spvalues, jaxpr, num_consts, num_carry, length, reverse, unroll, **_):
  xs_values = spvalues[num_consts + num_carry:]
  if any(v.is_sparse() for v in xs_values):
    raise NotImplementedError("sparse rule for scan with x values.")
  arrays = spvalues_to_arrays(spenv, spvalues)
  consts = arrays[:num_consts]
  init = forget_index_flags(tuple(arrays[num_consts:num_consts + num_carry]))
  xs = tuple(arrays[num_consts + num_carry:])
  body = jaxpr_as_sparse_fun(jaxpr)

  def step(carry, x):
    outs = body(*consts, *carry, *x)
    ys = outs[num_carry:]
    if any(isinstance(y, JAXSparse) for y in ys):
      raise NotImplementedError("sparse rule for scan with sparse per-step outputs.")
    return forget_index_flags(tuple(outs[:num_carry])), tuple(ys)

  carry, ys = lax.scan(step, init, xs, length=length, reverse=reverse, unroll=unroll)
  return arrays_to_spvalues(spenv, [*carry, *ys])


_register([jit_p], _jit)
_register([custom_jvp_call_p, custom_vjp_call_p], _inline_call)
sparse_rules_bcoo.update({while_p: _while, cond_p: _cond, scan_p: _scan})

