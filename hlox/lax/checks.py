"""Run-time checks: the ``check`` primitive and the automatic checks of ``checkify``.

``check_p`` carries an ``Error`` (``interpreters/checkify.py``) as its operands. Eagerly it
raises ``JaxRuntimeError`` when the error is set; under ``vmap`` the batch is reduced to one
error first; under ``jvp`` it checks the primals; lowered into a compiled program it cannot
raise, so it refuses with JAX's message telling the user to functionalize it with
``checkify`` (whose interpreter turns it into an update of the threaded error). A
``debug_check`` (``debug=True``) does nothing unless functionalized.

The automatic checks are the ``checkify`` rules of the arithmetic and indexing primitives:
NaNs out of the primitives that can make them (``nan_checks``), division by zero
(``div_checks``), out-of-bounds indices of gathers, scatters and dynamic slices
(``index_checks``). They sit together here, above every room whose primitives they watch,
as JAX keeps them together; the rules of primitives holding jaxprs (jit, control flow,
custom derivatives, remat) sit beside those primitives.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from hlox import _tree_transform as tree_util
from hlox.core import dtypes
from hlox.core.jaxpr import effectful_primitives
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.interpreters import ad, batching, checkify, xla
from hlox.interpreters.checkify import (DivisionByZeroError, JaxRuntimeError, NaNError,
                                        OOBError, assert_func, error_checks, init_error,
                                        update_error)
from hlox.lax import base as _base
from hlox.lax import cumulative as _cum
from hlox.lax.dot import dot_general_p
from hlox.lax import elementwise as _ew
from hlox.lax.fft import fft_p
from hlox.lax import indexing as _idx
from hlox.lax import parallel as _par
from hlox.lax import reductions as _red
from hlox.lax import rng as _rng
from hlox.lax import shapes as _shapes
from hlox.lax import solvers as _solvers
from hlox.lax import special as _special
from hlox.lax import windowed as _win
from hlox.lax import convolution as _conv

__all__ = ["check_p", "check_error_value", "functionalization_error"]


# --- small array helpers -------------------------------------------------------------------

def _full(shape, value, dtype):
  return _base.full(tuple(shape), value, dtype)


def _any(x):
  x = _to_array(x)
  ndim = len(get_aval(x).shape)
  return _red.reduce_or(x, tuple(range(ndim))) if ndim else x


def _to_array(x):
  return x if hasattr(x, "shape") and not isinstance(x, (bool, int, float)) else np.asarray(x)


def _broadcast_trailing(x, shape):
  """``x`` broadcast to ``shape`` as NumPy aligns shapes (from the last dimension)."""
  xshape = get_aval(x).shape
  if tuple(xshape) == tuple(shape):
    return x
  return _shapes.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - len(xshape),
                                                               len(shape))))


def _logical_or(a, b):
  a, b = _to_array(a), _to_array(b)
  shape = max(get_aval(a).shape, get_aval(b).shape, key=len)
  return _ew.bitwise_or(_broadcast_trailing(a, shape), _broadcast_trailing(b, shape))


def _select(pred, on_true, on_false):
  # A batched error (from pmap) may meet an unbatched update: the cases broadcast as NumPy
  # does, and a batched flag over batched payloads along their leading dimensions.
  on_true, on_false, pred = _to_array(on_true), _to_array(on_false), _to_array(pred)
  shape = max(get_aval(on_true).shape, get_aval(on_false).shape, key=len)
  on_true, on_false = _broadcast_trailing(on_true, shape), _broadcast_trailing(on_false, shape)
  pshape = get_aval(pred).shape
  if pshape not in ((), tuple(shape)):
    pred = _shapes.broadcast_in_dim(pred, tuple(shape), tuple(range(len(pshape))))
  return _ew.select_n(pred, on_false, on_true)


def _take_flat(values: np.ndarray | object, index):
  """``values.ravel()[index]`` for a traced scalar ``index`` (a one-hot sum, so it needs no
  gather, which would be checked itself)."""
  values = _to_array(values)
  aval = get_aval(values)
  flat = _shapes.reshape(values, (int(np.prod(aval.shape)),))
  n = get_aval(flat).shape[0]
  index = _shapes.broadcast_in_dim(_base.convert_element_type(index, np.int32), (n,), ())
  hit = _ew.eq(_shapes.iota(np.int32, n), index)
  picked = _ew.select_n(hit, _full((n,), 0, aval.dtype), flat)
  return _red.reduce_sum(picked, (0,))


def _oob_payload(oob_mask, indices, dims_map, operand_shape):
  """``[index, axis, axis size]`` of the first index out of bounds (int32)."""
  shape = get_aval(indices).shape
  size = int(np.prod(shape))
  flat_mask = _shapes.reshape(oob_mask, (size,))
  first = _red.argmin(_ew.bitwise_not(flat_mask), 0, np.int32)
  position = _ew.rem(first, np.int32(shape[-1])) if shape else first
  axis = _take_flat(np.asarray(dims_map, np.int32), position)
  axis_size = _take_flat(np.asarray(operand_shape, np.int32), axis)
  index = _base.convert_element_type(_take_flat(indices, first), np.int32)
  return _shapes.concatenate([_shapes.reshape(v, (1,)) for v in (index, axis, axis_size)], 0)


def _oob_error(error, prim_name, operand_shape, oob_mask, indices, dims_map):
  if int(np.prod(get_aval(indices).shape)) == 0:
    return error
  payload = _oob_payload(oob_mask, indices, dims_map, operand_shape)
  exc = OOBError(checkify.current_traceback(), prim_name, tuple(operand_shape), payload)
  return assert_func(error, _any(oob_mask), exc)


# --- check_p -------------------------------------------------------------------------------

class _CheckPrimitive(Primitive):
  multiple_results = True  # with no results

  def params_for_printing(self, params):
    return {"debug": params["debug"]}


check_p = _CheckPrimitive("check")
check_p.def_abstract_eval(lambda *avals, err_tree, debug: [])
effectful_primitives.add(check_p)  # it has no outputs: DCE must keep it

functionalization_error_text = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
    "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
    "functionalizing it through `checkify.checkify`.")


def functionalization_error() -> ValueError:
  return ValueError(functionalization_error_text)


def _check_impl(*args, err_tree, debug):
  if debug:  # a debug_check only acts when functionalized
    return []
  error = tree_util.tree_unflatten(err_tree, args)
  exc = error.get_exception()
  if exc is not None:
    raise JaxRuntimeError(str(exc)) from exc
  return []

check_p.def_impl(_check_impl)


def _check_lowering(ctx, *args, err_tree, debug):
  if debug:
    return []
  raise functionalization_error()

xla.register_lowering(check_p, _check_lowering)


def _check_jvp(primals, tangents, *, err_tree, debug):
  check_p.bind(*primals, err_tree=err_tree, debug=debug)
  return [], []

ad.primitive_jvps[check_p] = _check_jvp


def _check_batch(axis_data, vals, dims, *, err_tree, debug):
  vals = [batching.bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
  check_error_value(tree_util.tree_unflatten(err_tree, vals), debug=debug)
  return [], []

batching.fancy_primitive_batchers[check_p] = _check_batch


def _check_discharge(error, enabled_errors, *args, err_tree, debug):
  # Under checkify a check becomes part of the threaded error (the kinds not enabled are
  # dropped, as JAX does).
  new = tree_util.tree_unflatten(err_tree, args)
  for effect in new._pred:
    if effect.error_type in enabled_errors:
      error = update_error(error, new._pred[effect], new._code[effect], {},
                           new._payload[effect], effect)
  return checkify.merge_metadata(error, new), []

error_checks[check_p] = _check_discharge


def _pick_first_failing(error):
  """A batched error reduced to one member's: the last member whose flag is set (the
  first after a stable sort by flag, as JAX picks it), else the last member."""
  out = init_error
  for effect, pred in error._pred.items():
    pred = _to_array(pred)
    n = get_aval(pred).shape[0]
    positions = _ew.select_n(pred, _full((n,), -1, np.int32), _shapes.iota(np.int32, n))
    last = _red.reduce_max(positions, (0,))
    idx = _ew.select_n(_ew.lt(last, np.int32(0)), last, np.int32(n - 1))

    def at(x, idx=idx):
      x = _to_array(x)
      shape = get_aval(x).shape
      zeros = [np.int32(0)] * (len(shape) - 1)
      piece = _idx.dynamic_slice(x, [idx, *zeros], (1, *shape[1:]))
      return _shapes.reshape(piece, tuple(shape[1:]))
    out = out._update(effect, at(pred), at(error._code[effect]), {},
                      [at(p) for p in error._payload[effect]])
  return out._replace(_metadata=error._metadata)


def check_error_value(error, *, debug: bool = False) -> None:
  """Bind ``check_p`` on ``error``'s leaves (a batched error is reduced to one first)."""
  if any(np.shape(v) for v in error._pred.values()):
    error = _pick_first_failing(error)
  leaves, tree = tree_util.tree_flatten(error)
  check_p.bind(*leaves, err_tree=tree, debug=debug)


checkify.register_error_ops(logical_or=_logical_or, select=_select,
                            check_error=check_error_value)


# --- automatic checks ----------------------------------------------------------------------

def _has_nans(x):
  aval = get_aval(x)
  if not dtypes.is_inexact(aval.dtype):
    return None
  return _any(_ew.ne(x, x))


def check_nans(prim, error, enabled_errors, out):
  if NaNError not in enabled_errors:
    return error
  outs = out if prim.multiple_results else [out]
  flags = [f for f in (_has_nans(x) for x in outs) if f is not None]
  if not flags:
    return error
  any_nan = flags[0]
  for f in flags[1:]:
    any_nan = _ew.bitwise_or(any_nan, f)
  return assert_func(error, any_nan, NaNError(checkify.current_traceback(), prim.name))


def _nan_rule(prim, error, enabled_errors, *args, **params):
  out = prim.bind(*args, **params)
  return check_nans(prim, error, enabled_errors, out), out


_NAN_PRIMITIVES = [
    _ew.acos_p, _ew.acosh_p, _ew.add_p, _ew.asin_p, _ew.asinh_p, _ew.atan2_p, _ew.atan_p,
    _ew.atanh_p, _special.bessel_i0e_p, _special.bessel_i1e_p, _ew.cbrt_p,
    _conv.conv_general_dilated_p, _ew.cos_p, _ew.cosh_p, _cum.cumlogsumexp_p, _cum.cummax_p,
    _cum.cummin_p, _cum.cumprod_p, _cum.cumsum_p, _ew.digamma_p, dot_general_p,
    _ew.erf_inv_p, _ew.erf_p, _ew.erfc_p, _ew.exp_p, _ew.expm1_p, fft_p,
    _special.igamma_grad_a_p, _special.igamma_p, _special.igammac_p, _ew.integer_pow_p,
    _ew.lgamma_p, _solvers.linear_solve_p, _ew.log1p_p, _ew.log_p, _ew.logistic_p, _ew.mul_p,
    _shapes.pad_p, _ew.pow_p, _par.psum_p, _red.reduce_p, _red.reduce_prod_p,
    _base.reduce_sum_p, _win.reduce_window_p, _win.reduce_window_sum_p,
    _special.regularized_incomplete_beta_p, _ew.rem_p, _rng.rng_uniform_p, _ew.rsqrt_p,
    _ew.sin_p, _ew.sinh_p, _ew.sqrt_p, _ew.sub_p, _ew.tan_p, _ew.tanh_p,
]

for _prim in _NAN_PRIMITIVES:
  error_checks[_prim] = partial(_nan_rule, _prim)


def _div_rule(error, enabled_errors, x, y):
  if DivisionByZeroError in enabled_errors:
    aval = get_aval(y)
    zero = _full(aval.shape, 0, aval.dtype)
    error = assert_func(error, _any(_ew.eq(y, zero)),
                        DivisionByZeroError(checkify.current_traceback()))
  return _nan_rule(_ew.div_p, error, enabled_errors, x, y)

error_checks[_ew.div_p] = _div_rule


def _start_vector(starts):
  starts = [_base.convert_element_type(_to_array(s), np.int32) for s in starts]
  return _shapes.concatenate([_shapes.reshape(s, (1,)) for s in starts], 0)


def _dynamic_slice_rule(error, enabled_errors, operand, *starts, slice_sizes):
  out = _idx.dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
  if OOBError not in enabled_errors or not starts:
    return error, out
  shape = get_aval(operand).shape
  vec = _start_vector(starts)
  n = len(starts)
  limit = np.asarray([d - s for d, s in zip(shape, slice_sizes)], np.int32)
  mask = _ew.bitwise_or(_ew.lt(vec, _full((n,), 0, np.int32)), _ew.gt(vec, limit))
  return _oob_error(error, "dynamic_slice", shape, mask, vec, range(len(shape))), out

error_checks[_idx.dynamic_slice_p] = _dynamic_slice_rule


def _dynamic_update_slice_rule(error, enabled_errors, operand, update, *starts):
  out = _idx.dynamic_update_slice_p.bind(operand, update, *starts)
  if OOBError not in enabled_errors or not starts:
    return error, out
  shape, ushape = get_aval(operand).shape, get_aval(update).shape
  vec = _start_vector(starts)
  n = len(starts)
  limit = np.asarray([d - u for d, u in zip(shape, ushape)], np.int32)
  mask = _ew.bitwise_or(_ew.lt(vec, _full((n,), 0, np.int32)), _ew.gt(vec, limit))
  return _oob_error(error, "dynamic_update_slice", shape, mask, vec, range(len(shape))), out

error_checks[_idx.dynamic_update_slice_p] = _dynamic_update_slice_rule


def _index_mask(indices, upper):
  """Where ``indices`` (index vectors along the last axis) fall outside ``[0, upper]``."""
  aval = get_aval(indices)
  dtype = aval.dtype
  upper = np.minimum(np.asarray(upper, np.int64), np.iinfo(dtype).max).astype(dtype)
  bound = _shapes.broadcast_in_dim(upper, aval.shape, (len(aval.shape) - 1,))
  return _ew.bitwise_or(_ew.lt(indices, _full(aval.shape, 0, dtype)), _ew.gt(indices, bound))


def _gather_rule(error, enabled_errors, operand, indices, **params):
  out = _idx.gather_p.bind(operand, indices, **params)
  if OOBError not in enabled_errors:
    return error, out
  dnums = params["dimension_numbers"]
  shape = get_aval(operand).shape
  sizes = params["slice_sizes"]
  upper = [shape[d] - sizes[d] for d in dnums.start_index_map]
  mask = _index_mask(indices, upper)
  return _oob_error(error, "gather", shape, mask, indices, dnums.start_index_map), out

error_checks[_idx.gather_p] = _gather_rule


def _scatter_rule(prim, error, enabled_errors, operand, indices, updates, **params):
  out = prim.bind(operand, indices, updates, **params)
  if OOBError not in enabled_errors:
    return error, out
  dnums = params["dimension_numbers"]
  shape, ushape = get_aval(operand).shape, get_aval(updates).shape
  window = iter(dnums.update_window_dims)
  sizes = [1 if (d in dnums.inserted_window_dims or d in dnums.operand_batching_dims)
           else ushape[next(window)] for d in range(len(shape))]
  upper = [shape[d] - sizes[d] for d in dnums.scatter_dims_to_operand_dims]
  mask = _index_mask(indices, upper)
  error = _oob_error(error, prim.name, shape, mask, indices, dnums.scatter_dims_to_operand_dims)
  return check_nans(prim, error, enabled_errors, out), out

for _prim in (_idx.scatter_p, _idx.scatter_add_p, _idx.scatter_mul_p, _idx.scatter_min_p,
              _idx.scatter_max_p, _idx.scatter_apply_p, _idx.scatter_sub_p):
  error_checks[_prim] = partial(_scatter_rule, _prim)
