"""The NumPy backend of ``hlox.fastmath``: every operation that needs no tracing, on plain
NumPy arrays, with the hlox backend's results.

It imports nothing of XLA (no ``jaxlib``, no ``hlox.runtime`` or ``hlox.lax``): errors
surface statement by statement and nothing compiles, which is what people switch to it for.
Convolutions, pooling and the ``index_*``/``dynamic_*`` updates follow XLA's semantics
(out-of-bounds updates dropped, dynamic starts clamped), control flow runs as Python loops,
``jit``/``remat`` are the identity, and random numbers come from a NumPy threefry that gives
``hlox.random``'s bits. What needs tracing (gradients, ``vmap``, ``pmap``) raises a
``NotImplementedError`` that names ``use_backend('hlox')``, when the transformed function is
called, so that library code wrapping functions at import time still imports.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from hlox.fastmath import nested
from hlox.fastmath import prng_numpy

__all__ = ["NUMPY_BACKEND"]


# --- special functions ---------------------------------------------------------------------

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
  """``log(sum(b * exp(a)))`` over ``axis`` without overflow (SciPy's signature)."""
  a = np.asarray(a)
  if not np.issubdtype(a.dtype, np.inexact):
    a = a.astype(np.float32 if a.dtype.itemsize <= 4 else np.float64)
  if b is not None:
    a, b = np.broadcast_arrays(a, np.asarray(b))
  axis = tuple(range(a.ndim)) if axis is None else axis
  amax = np.max(a, axis=axis, keepdims=True) if a.size else np.zeros(
      [1] * a.ndim, a.dtype)
  amax = np.where(np.isfinite(amax), amax, np.zeros_like(amax))
  with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
    e = np.exp(a - amax)
    if b is not None:
      e = e * b
    s = np.sum(e, axis=axis, keepdims=True)
    sign = np.sign(s)
    out = np.log(np.abs(s)) + amax
  if not keepdims:
    out, sign = np.squeeze(out, axis), np.squeeze(sign, axis)
  out = out.astype(a.dtype if b is None else np.result_type(a, b), copy=False)
  if return_sign:
    return out, sign.astype(out.dtype)
  if b is not None:
    out = np.where(sign < 0, np.array(np.nan, out.dtype), out)
  return out


def expit(x):
  """The logistic sigmoid ``1 / (1 + exp(-x))``, without overflow for large ``|x|``."""
  x = np.asarray(x)
  if not np.issubdtype(x.dtype, np.inexact):
    x = x.astype(np.float32)
  with np.errstate(over="ignore"):
    e = np.exp(-np.abs(x))
  return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _erf_scalar(v):
  return math.erf(v)


_erf_vec = np.frompyfunc(_erf_scalar, 1, 1)


def erf(x):
  """The error function (``math.erf`` per element: NumPy has none)."""
  x = np.asarray(x)
  dtype = x.dtype if np.issubdtype(x.dtype, np.inexact) else np.dtype(np.float32)
  return np.asarray(_erf_vec(x.astype(np.float64)), np.float64).astype(dtype)


# --- convolution and pooling ---------------------------------------------------------------

def _padtype_to_pads(in_shape, window_shape, strides, padding, name):
  """(low, high) padding per spatial dimension for 'VALID', 'SAME', 'SAME_LOWER' or pairs."""
  if isinstance(padding, str):
    mode = padding.upper()
    if mode == "VALID":
      return [(0, 0)] * len(in_shape)
    if mode in ("SAME", "SAME_LOWER"):
      pads = []
      for n, w, s in zip(in_shape, window_shape, strides):
        out = -(-n // s)
        total = max((out - 1) * s + w - n, 0)
        lo = total // 2 if mode == "SAME" else total - total // 2
        pads.append((lo, total - lo))
      return pads
    raise ValueError(f"{name}: padding must be 'VALID', 'SAME', 'SAME_LOWER' or a sequence "
                     f"of (low, high) pairs, got {padding!r}")
  pads = [tuple(int(v) for v in p) for p in padding]
  if len(pads) != len(in_shape) or any(len(p) != 2 for p in pads):
    raise ValueError(f"{name}: padding needs one (low, high) pair per spatial dimension "
                     f"({len(in_shape)}), got {padding!r}")
  return pads


def _pad_and_window(x, init, window, strides, pads, dilation=None):
  """Windows of ``x`` (padded with ``init``) as a view ``out_shape + window`` (strided)."""
  dilation = dilation or (1,) * x.ndim
  widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
  xp = np.pad(x, widths, constant_values=init) if any(map(any, widths)) else x
  # Negative padding crops.
  crop = tuple(slice(-min(lo, 0) or None, (min(hi, 0) or None)) for lo, hi in pads)
  xp = xp[crop]
  span = [(w - 1) * d + 1 for w, d in zip(window, dilation)]
  if any(n < s for n, s in zip(xp.shape, span)):
    out_shape = tuple(max(0, (n - s) // st + 1) for n, s, st in zip(xp.shape, span, strides))
    return np.zeros(out_shape + tuple(window), x.dtype)
  view = np.lib.stride_tricks.sliding_window_view(xp, span)
  view = view[tuple(slice(None, None, s) for s in strides)]
  return view[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]


def _reduce_window(x, init, reducer, window, strides, pads):
  windows = _pad_and_window(x, init, window, strides, pads)
  axes = tuple(range(x.ndim, 2 * x.ndim))
  if windows.size == 0:
    return np.full(windows.shape[:x.ndim], init, x.dtype)
  return reducer(windows, axis=axes).astype(x.dtype, copy=False)


def _pool_geometry(x, pool_size, strides, padding, name):
  pool_size = tuple(int(p) for p in pool_size)
  strides = tuple(int(s) for s in strides) if strides else (1,) * len(pool_size)
  if x.ndim != len(pool_size) + 2:
    raise ValueError(f"{name}: expects NHWC-style input with {len(pool_size)} spatial "
                     f"dimensions for pool_size {pool_size}, got shape {x.shape}")
  window = (1,) + pool_size + (1,)
  all_strides = (1,) + strides + (1,)
  if not isinstance(padding, str) and len(padding) == len(pool_size) + 2:
    padding = list(padding)[1:-1]  # full-rank pairs: the batch and feature ones are (0, 0)
  pads = [(0, 0)] + _padtype_to_pads(x.shape[1:-1], pool_size, strides, padding, name) + \
      [(0, 0)]
  return window, all_strides, pads


def max_pool(x, pool_size, strides, padding):
  """Maximum over each window of an NHWC-style array."""
  x = np.asarray(x)
  window, strides, pads = _pool_geometry(x, pool_size, strides, padding, "max_pool")
  if np.issubdtype(x.dtype, np.integer):
    init = np.iinfo(x.dtype).min
  elif x.dtype == np.bool_:
    init = False
  else:
    init = -np.inf
  return _reduce_window(x, init, np.max, window, strides, pads)


def sum_pool(x, pool_size, strides, padding):
  """Sum over each window of an NHWC-style array (padding counts as zero)."""
  x = np.asarray(x)
  window, strides, pads = _pool_geometry(x, pool_size, strides, padding, "sum_pool")
  return _reduce_window(x, 0, np.sum, window, strides, pads)


def avg_pool(x, pool_size, strides, padding):
  """Mean over the real (unpadded) elements of each window of an NHWC-style array."""
  x = np.asarray(x)
  window, all_strides, pads = _pool_geometry(x, pool_size, strides, padding, "avg_pool")
  sums = _reduce_window(x, 0, np.sum, window, all_strides, pads)
  counts = _reduce_window(np.ones(x.shape[1:-1], x.dtype), 0, np.sum, window[1:-1],
                          all_strides[1:-1], pads[1:-1])
  return (sums / counts[..., None]).astype(x.dtype, copy=False)


def _parse_dimension_numbers(dimension_numbers, ndim):
  lhs, rhs, out = dimension_numbers
  if not all(isinstance(s, str) for s in (lhs, rhs, out)):
    raise TypeError(f"conv: dimension_numbers must be three strings such as "
                    f"('NHWC', 'HWIO', 'NHWC'), got {dimension_numbers!r}")
  if not len(lhs) == len(rhs) == len(out) == ndim:
    raise ValueError(f"conv: dimension_numbers {dimension_numbers} must each have {ndim} "
                     f"letters, one per dimension")
  lhs_spatial = [i for i, c in enumerate(lhs) if c not in "NC"]
  # Spatial letters pair up by name, in the order the input lists them.
  names = [lhs[i] for i in lhs_spatial]
  rhs_spatial = [rhs.index(c) for c in names]
  out_spatial = [out.index(c) for c in names]
  return ((lhs.index("N"), lhs.index("C"), lhs_spatial),
          (rhs.index("O"), rhs.index("I"), rhs_spatial),
          (out.index("N"), out.index("C"), out_spatial))


def conv(inp, fltr, window_strides, padding, dimension_numbers, filter_dilation=None):
  """Cross-correlation of ``inp`` with ``fltr`` (``lax.conv_general_dilated`` without input
  dilation), dimension numbers in letter form such as ``('NHWC', 'HWIO', 'NHWC')``."""
  inp, fltr = np.asarray(inp), np.asarray(fltr)
  if inp.ndim != fltr.ndim:
    raise ValueError(f"conv: input and filter must have the same rank, got {inp.shape} and "
                     f"{fltr.shape}")
  if dimension_numbers is None:
    n = inp.ndim
    spatial = "".join("HWDXYZ"[i] for i in range(n - 2))
    dimension_numbers = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
  (ln, lc, ls), (ro, ri, rs), (on, oc, os_) = _parse_dimension_numbers(dimension_numbers,
                                                                       inp.ndim)
  x = np.transpose(inp, [ln, lc] + ls)  # N C spatial...
  w = np.transpose(fltr, [ro, ri] + rs)  # O I spatial...
  nsp = inp.ndim - 2
  strides = tuple(int(s) for s in window_strides)
  dilation = tuple(int(d) for d in filter_dilation) if filter_dilation else (1,) * nsp
  if x.shape[1] != w.shape[1]:
    raise ValueError(f"conv: input has {x.shape[1]} feature channels but the filter expects "
                     f"{w.shape[1]} (shapes {inp.shape} and {fltr.shape})")
  dilated = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dilation)]
  pads = _padtype_to_pads(x.shape[2:], dilated, strides, padding, "conv")
  windows = _pad_and_window(x, 0, (1, 1) + w.shape[2:], (1, 1) + strides,
                            [(0, 0), (0, 0)] + pads, (1, 1) + dilation)
  # windows: N, C, out..., 1, 1, k...  ->  contract C and k with the filter's I and k.
  windows = windows.reshape(windows.shape[:2 + nsp] + w.shape[2:])
  dtype = np.result_type(inp.dtype, fltr.dtype)
  y = np.tensordot(windows, w, axes=([1] + list(range(2 + nsp, 2 + 2 * nsp)),
                                     [1] + list(range(2, 2 + nsp))))
  # y: N, out..., O  ->  the requested output layout.
  y = np.moveaxis(y, -1, 1)  # N O out...
  order = [0] * inp.ndim
  order[on], order[oc] = 0, 1
  for k, d in enumerate(os_):
    order[d] = 2 + k
  return np.transpose(y, order).astype(dtype, copy=False)


# --- sorting -------------------------------------------------------------------------------

def _descending_key(x):
  if x.dtype == np.bool_:
    return ~x
  if np.issubdtype(x.dtype, np.integer):
    return np.invert(x)  # order-reversing for signed and unsigned, without overflow
  return -x


def top_k(operand, k):
  """The ``k`` largest entries along the last axis and their indices (ties: lower index
  first, as XLA's stable top-k)."""
  x = np.asarray(operand)
  if not 0 <= k <= (x.shape[-1] if x.ndim else 0):
    raise ValueError(f"top_k: k={k} must be between 0 and the size of the last axis of "
                     f"shape {x.shape}")
  idx = np.argsort(_descending_key(x), axis=-1, kind="stable")[..., :k]
  return np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)


def sort_key_val(keys, values, dimension=-1):
  """``keys`` sorted along ``dimension`` and ``values`` permuted the same way (stable)."""
  keys, values = np.asarray(keys), np.asarray(values)
  idx = np.argsort(keys, axis=dimension, kind="stable")
  return (np.take_along_axis(keys, idx, axis=dimension),
          np.take_along_axis(values, idx, axis=dimension))


# --- control flow as Python loops ----------------------------------------------------------

def _stack_leaves(ys):
  if not nested.tree_flatten(ys[0]):
    return ys[0]
  return nested.nested_map(lambda xs: np.stack([np.asarray(v) for v in xs]),
                           nested.nested_zip(list(ys)), level=1)


def _empty_leaves(y0):
  return nested.nested_map(lambda x: np.zeros((0,) + np.shape(x), np.asarray(x).dtype), y0)


def _leading_length(xs, name):
  lengths = {np.shape(x)[0] for x in nested.tree_leaves(xs) if np.ndim(x)}
  if len(lengths) > 1:
    raise ValueError(f"{name}: the arrays of xs have different leading sizes {sorted(lengths)}")
  if any(not np.ndim(x) for x in nested.tree_leaves(xs)):
    raise ValueError(f"{name}: every leaf of xs needs a leading axis to scan over")
  return lengths.pop() if lengths else None


def _slice(xs, i):
  return nested.nested_map(lambda x: np.asarray(x)[i], xs)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
  """``lax.scan`` as a Python loop: carry through ``f(carry, x) -> (carry, y)``, ys
  stacked."""
  del unroll
  n = _leading_length(xs, "scan") if xs is not None else None
  if n is None:
    if length is None:
      raise ValueError("scan: length must be given when xs has no arrays")
    n = int(length)
  elif length is not None and int(length) != n:
    raise ValueError(f"scan: length {length} does not match the leading size {n} of xs")
  carry, ys = init, []
  order = range(n - 1, -1, -1) if reverse else range(n)
  for i in order:
    carry, y = f(carry, None if xs is None else _slice(xs, i))
    ys.append(y)
  if reverse:
    ys.reverse()
  if not ys:
    # Without one step the structure of ys is unknown: run f once on zeros to see it.
    x0 = None if xs is None else nested.nested_map(
        lambda x: np.zeros(np.shape(x)[1:], np.asarray(x).dtype), xs)
    _, y0 = f(init, x0)
    return carry, _empty_leaves(y0)
  if all(y is None for y in ys):
    return carry, None
  return carry, _stack_leaves(ys)


def map_(f, xs):
  """``f`` over the leading axis of ``xs`` (a pytree), results stacked."""
  _, ys = scan(lambda _, x: ((), f(x)), (), xs)
  return ys


def fori_loop(lower, upper, body_fn, init_val):
  """``for i in range(lower, upper): val = body_fn(i, val)``."""
  val = init_val
  for i in range(int(lower), int(upper)):
    val = body_fn(i, val)
  return val


def cond(pred, true_fun, false_fun, *operands, **kwargs):
  """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; also the old form
  ``cond(pred, true_operand, true_fun, false_operand, false_fun)``."""
  if kwargs:
    names = ("true_operand", "true_fun", "false_operand", "false_fun")
    if set(kwargs) - set(names):
      raise TypeError(f"cond: unexpected keyword arguments {sorted(set(kwargs) - set(names))}")
    args = dict(zip(names, (true_fun, false_fun) + operands))
    args.update(kwargs)
    return args["true_fun"](args["true_operand"]) if bool(pred) else \
        args["false_fun"](args["false_operand"])
  if len(operands) == 2 and not callable(true_fun) and callable(false_fun) and \
      callable(operands[1]):
    true_op, true_f, false_op, false_f = true_fun, false_fun, operands[0], operands[1]
    return true_f(true_op) if bool(np.asarray(pred)) else false_f(false_op)
  if np.shape(pred):
    raise TypeError(f"cond: pred must be a scalar, got an array of shape {np.shape(pred)}")
  return true_fun(*operands) if bool(np.asarray(pred)) else false_fun(*operands)


# --- indexed updates (copies, XLA's out-of-bounds rules) -----------------------------------

def _expand_index(idx, ndim):
  """``idx`` as a tuple with one entry per dimension it consumes (Ellipsis expanded)."""
  idx = idx if isinstance(idx, tuple) else (idx,)
  consumed = sum(np.ndim(i) if isinstance(i, np.ndarray) and i.dtype == np.bool_ else
                 (0 if i is None or i is Ellipsis else 1) for i in idx)
  out = []
  for i in idx:
    if i is Ellipsis:
      out.extend([slice(None)] * (ndim - consumed))
    else:
      out.append(i)
  if not any(i is Ellipsis for i in idx):
    out.extend([slice(None)] * (ndim - consumed))
  return out


def _scatter(name, x, idx, y, apply):
  """A copy of ``x`` with ``apply(flat_view, positions, values)`` at ``x[idx]``; integer
  indices out of bounds are dropped (XLA's scatter), negative ones count from the end."""
  x = np.array(x, copy=True)
  parts = _expand_index(idx, x.ndim)
  # Integer-indexed dimensions get one extra slot where out-of-bounds updates land and are
  # then cut off; slices keep their usual meaning on the original size.
  ext_shape, mapped, dim = list(x.shape), [], 0
  for part in parts:
    if part is None:
      mapped.append(None)
      continue
    if isinstance(part, np.ndarray) and part.dtype == np.bool_:
      nz = np.nonzero(part)
      mapped.extend(nz)
      dim += part.ndim
      continue
    if isinstance(part, slice):
      mapped.append(part)
      dim += 1
      continue
    ind = np.asarray(part)
    if not np.issubdtype(ind.dtype, np.integer):
      raise TypeError(f"{name}: indices must be integers, slices, None, Ellipsis or boolean "
                      f"masks, got {ind.dtype}")
    n = x.shape[dim]
    ind = np.where(ind < 0, ind + n, ind)
    mapped.append(np.where((ind < 0) | (ind >= n), n, ind))
    ext_shape[dim] = n + 1
    dim += 1
  ext = np.zeros(ext_shape, x.dtype)
  ext[tuple(slice(0, n) for n in x.shape)] = x
  positions = np.arange(ext.size).reshape(ext_shape)[tuple(mapped)]
  values = np.broadcast_to(np.asarray(y).astype(x.dtype, copy=False), positions.shape)
  apply(ext.reshape(-1), positions.reshape(-1), values.reshape(-1))
  return ext[tuple(slice(0, n) for n in x.shape)].copy()


def _set(flat, pos, vals):
  flat[pos] = vals


def index_update(x, idx, y):
  """A copy of ``x`` with ``x[idx] = y`` (``x.at[idx].set(y)``)."""
  return _scatter("index_update", x, idx, y, _set)


def index_add(x, idx, y):
  """A copy of ``x`` with ``y`` added at ``idx`` (repeated indices accumulate)."""
  return _scatter("index_add", x, idx, y, np.add.at)


def index_min(x, idx, y):
  """A copy of ``x`` with ``minimum(x[idx], y)`` at ``idx``."""
  return _scatter("index_min", x, idx, y, np.minimum.at)


def index_max(x, idx, y):
  """A copy of ``x`` with ``maximum(x[idx], y)`` at ``idx``."""
  return _scatter("index_max", x, idx, y, np.maximum.at)


# --- dynamic slices (starts clamped as XLA clamps them) ------------------------------------

def _clamped_starts(name, shape, starts, sizes):
  starts = [int(s) for s in (starts.tolist() if isinstance(starts, np.ndarray) else starts)]
  if len(starts) != len(shape):
    raise TypeError(f"{name}: needs one start index per dimension of shape {shape}, got "
                    f"{len(starts)}")
  out = []
  for s, n, k in zip(starts, shape, sizes):
    if k > n:
      raise TypeError(f"{name}: slice size {k} exceeds the dimension size {n} "
                      f"(shape {shape})")
    s = s + n if s < 0 else s  # negative starts count from the end, as in hlox/JAX
    out.append(min(max(s, 0), n - k))
  return out


def dynamic_slice(operand, start_indices, slice_sizes):
  """``operand[start:start + size]`` per dimension, starts clamped into bounds."""
  x = np.asarray(operand)
  sizes = [int(k) for k in slice_sizes]
  starts = _clamped_starts("dynamic_slice", x.shape, start_indices, sizes)
  return x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))].copy()


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
  """``dynamic_slice`` along one ``axis``."""
  x = np.asarray(operand)
  axis = axis % x.ndim
  starts = [0] * x.ndim
  sizes = list(x.shape)
  starts[axis], sizes[axis] = int(start_index), int(slice_size)
  return dynamic_slice(x, starts, sizes)


def dynamic_update_slice(operand, update, start_indices):
  """A copy of ``operand`` with ``update`` written at the (clamped) ``start_indices``."""
  x = np.array(operand, copy=True)
  update = np.asarray(update)
  if update.ndim != x.ndim:
    raise TypeError(f"dynamic_update_slice: update of shape {update.shape} must have the "
                    f"operand's rank (shape {x.shape})")
  starts = _clamped_starts("dynamic_update_slice", x.shape, start_indices, update.shape)
  x[tuple(slice(s, s + k) for s, k in zip(starts, update.shape))] = update
  return x


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
  """``dynamic_update_slice`` with the start given along one ``axis`` (0 elsewhere)."""
  x = np.asarray(operand)
  axis = axis % x.ndim
  starts = [0] * x.ndim
  starts[axis] = int(start_index)
  return dynamic_update_slice(x, update, starts)


# --- transformations: identities, and clear errors for what needs tracing -------------------

_USED_BY = {"custom_grad": " (fastmath.custom_vjp is built on it here)"}


def _needs_tracing(op):
  return NotImplementedError(
      f"fastmath.{op} is not available on the NumPy backend: it needs tracing{_USED_BY.get(op, '')}. Run it "
      f"under the hlox backend with `with fastmath.use_backend('hlox'):` (or "
      f"fastmath.set_backend('hlox')).")


def _deferred(op):
  """A transformation that returns a function raising only when called."""
  def transform(fun=None, *args, **kwargs):
    if fun is None:  # used as functools.partial(transform, axis_name=...)-style decorator
      return functools.partial(transform, *args, **kwargs)

    @functools.wraps(fun)
    def raiser(*a, **k):
      raise _needs_tracing(op)
    return raiser
  transform.__name__ = op
  transform.__doc__ = f"Raises NotImplementedError when the {op}-transformed function runs."
  return transform


def _custom_grad(f_vjp, f_original):
  @functools.wraps(f_original)
  def raiser(*a, **k):
    raise _needs_tracing("custom_grad")
  return raiser


def _raising(op):
  def fn(*args, **kwargs):
    raise _needs_tracing(op)
  fn.__name__ = op
  return fn


def jit(fun=None, *args, **kwargs):
  """The identity: the NumPy backend runs every function eagerly."""
  if fun is None:
    return lambda f: f
  return fun


def remat(fun=None, *args, **kwargs):
  """The identity (nothing is saved for a backward pass that cannot run here)."""
  if fun is None:
    return lambda f: f
  return fun


def abstract_eval(f):
  """``f`` evaluated on zeros of the given shapes/dtypes, its outputs' ``ShapeDtype``s."""
  def shape_fun(*args, **kwargs):
    def zeros(x):
      if isinstance(x, nested.ShapeDtype) or hasattr(x, "shape") and hasattr(x, "dtype"):
        return np.zeros(x.shape, x.dtype)
      return x
    real = [nested.nested_map(zeros, a) for a in args]
    return nested.nested_map(nested.signature, f(*real, **kwargs))
  return shape_fun


def dataset_as_numpy(ds, batch_size=None):
  """The elements of ``ds`` (any iterable of pytrees, or a ``tf.data.Dataset``) with every
  leaf as a NumPy array."""
  del batch_size  # Trax's speed-up for TensorFlow only; the elements are the same.
  it = ds.as_numpy_iterator() if hasattr(ds, "as_numpy_iterator") else iter(ds)
  for example in it:
    yield nested.nested_map(lambda x: x if isinstance(x, np.ndarray) else np.asarray(
        x.numpy() if hasattr(x, "numpy") else x), example)


NUMPY_BACKEND = {
    "name": "numpy",
    "np": np,
    "abstract_eval": abstract_eval,
    "avg_pool": avg_pool,
    "cond": cond,
    "conv": conv,
    "custom_grad": _custom_grad,
    # No 'custom_vjp': fastmath.custom_vjp builds it from custom_grad here (Trax's path).
    "dataset_as_numpy": dataset_as_numpy,
    "dynamic_slice": dynamic_slice,
    "dynamic_slice_in_dim": dynamic_slice_in_dim,
    "dynamic_update_slice": dynamic_update_slice,
    "dynamic_update_slice_in_dim": dynamic_update_slice_in_dim,
    "erf": erf,
    "expit": expit,
    "fori_loop": fori_loop,
    "global_device_count": lambda: 1,
    "grad": _deferred("grad"),
    "value_and_grad": _deferred("value_and_grad"),
    "index_add": index_add,
    "index_max": index_max,
    "index_min": index_min,
    "index_update": index_update,
    "jit": jit,
    "local_device_count": lambda: 1,
    "logsumexp": logsumexp,
    "lt": np.less,
    "map": map_,
    "max_pool": max_pool,
    "pmap": _deferred("pmap"),
    "psum": _raising("psum"),
    "random_bernoulli": prng_numpy.bernoulli,
    "random_get_prng": prng_numpy.PRNGKey,
    "random_normal": prng_numpy.normal,
    "random_randint": prng_numpy.randint,
    "random_split": prng_numpy.split,
    "random_fold_in": prng_numpy.fold_in,
    "random_uniform": prng_numpy.uniform,
    "remat": remat,
    "scan": scan,
    "sort_key_val": sort_key_val,
    "stop_gradient": lambda x: x,
    "sum_pool": sum_pool,
    "top_k": top_k,
    "vjp": _raising("vjp"),
    "vmap": _deferred("vmap"),
}
