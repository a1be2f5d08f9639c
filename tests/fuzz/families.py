"""The fuzzer's table: families of functions with their shape and dtype rules.

A family draws one application from a seeded ``numpy.random.Generator``: the arguments, the
NumPy reference (None for invalid applications) and, for valid ones, the result dtype hlox
must give where the rule is hlox's own (``lax`` keeps dtypes; ``numpy`` results are checked
against JAX by the oracle test instead). Invalid applications break one rule of the family:
mixed dtypes in ``lax``, incompatible shapes, an axis out of range, a dtype of the wrong kind,
a bad static argument.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import hlox.numpy as jnp
from hlox import lax
from hlox.core import dtypes as core_dtypes

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(d) for d in ("float16", "float32")] + [BF16]
INTS = [np.dtype(d) for d in ("int8", "int16", "int32", "uint8", "uint16", "uint32")]
BOOL = [np.dtype(bool)]
COMPLEX = [np.dtype("complex64")]
NUMBERS = FLOATS + INTS + COMPLEX
ALL = NUMBERS + BOOL
SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1), (0, 3), (2, 2, 2)]


def values(rng, shape, dtype, positive=False):
  """Small values that every reference computes exactly (no overflow in any dtype)."""
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.integers(0, 2, shape).astype(bool)
  if dtype.kind == "u":
    return rng.integers(1 if positive else 0, 5, shape).astype(dtype)
  if dtype.kind == "i":
    return rng.integers(1 if positive else -3, 5, shape).astype(dtype)
  lo = 0.25 if positive else -2.0
  x = rng.uniform(lo, 2.0, shape)
  if dtype.kind == "c":
    x = x + 1j * rng.uniform(lo, 2.0, shape)
  return np.asarray(x).astype(dtype)


class App:
  """One application: ``fn(*args)``; ``reference`` is None for an invalid application."""
  __slots__ = ("family", "fn", "args", "reference", "dtype", "valid", "note")

  def __init__(self, family, fn, args, reference=None, dtype=None, valid=True, note=""):
    self.family, self.fn, self.args = family, fn, args
    self.reference, self.dtype, self.valid, self.note = reference, dtype, valid, note

  def describe(self):
    shapes = ", ".join(f"{np.dtype(a.dtype).name}{list(a.shape)}" if hasattr(a, "dtype")
                       else repr(a) for a in self.args)
    return f"{self.family}({shapes}){' ' + self.note if self.note else ''}"


def _other_dtype(rng, dtype, pool):
  return rng.choice([d for d in pool if d != dtype])


def _incompatible(rng, shape):
  """A shape that does not broadcast with ``shape`` (``shape`` has a dimension > 1)."""
  return shape[:-1] + (shape[-1] + 1,)


# --- lax elementwise: equal dtypes and shapes, no promotion -------------------------------

def lax_unary(name, ref, kinds, positive=False, out=None, also_valid=()):
  """``also_valid``: dtypes the function accepts that the table does not draw as valid (their
  result dtype differs, e.g. ``abs`` of complex), so never drawn as invalid either."""
  fn = getattr(lax, name)
  def draw(rng, valid):
    shape = SHAPES[rng.integers(len(SHAPES))]
    if valid:
      dtype = kinds[rng.integers(len(kinds))]
      x = values(rng, shape, dtype, positive)
      return App(f"lax.{name}", fn, (x,), lambda x: ref(x.astype(_wide(dtype))),
                 out or dtype)
    wrong = [d for d in ALL if d not in kinds and d not in also_valid]
    x = values(rng, shape, wrong[rng.integers(len(wrong))])
    return App(f"lax.{name}", fn, (x,), valid=False, note="wrong dtype kind")
  return draw


def lax_binary(name, ref, kinds, out=None):
  fn = getattr(lax, name)
  def draw(rng, valid):
    shape = SHAPES[rng.integers(len(SHAPES))]
    dtype = kinds[rng.integers(len(kinds))]
    x, y = values(rng, shape, dtype), values(rng, shape, dtype, positive=name in ("div", "rem"))
    if valid:
      # A Python scalar partner is valid only when its default dtype is the array's (float32
      # next to a Python float without x64).
      scalar = y.reshape(-1)[0].item() if y.size else 1
      if rng.random() < 0.2 and type(scalar) in (int, float) and \
          core_dtypes.python_scalar_dtype(scalar) == dtype:
        y = scalar
        yy = np.asarray(y, dtype)
        return App(f"lax.{name}", fn, (x, y), lambda x, y: ref(x.astype(_wide(dtype)),
                                                               yy.astype(_wide(dtype))),
                   out or dtype)
      return App(f"lax.{name}", fn, (x, y),
                 lambda x, y: ref(x.astype(_wide(dtype)), y.astype(_wide(dtype))), out or dtype)
    how = rng.integers(3)
    if how == 0:  # mixed dtypes: lax never promotes
      y = values(rng, shape, _other_dtype(rng, dtype, ALL))
      return App(f"lax.{name}", fn, (x, y), valid=False, note="mixed dtypes")
    if how == 1:  # a Python scalar of another kind
      scalar = {"b": 1, "i": 1.5, "u": -1.0, "f": 1, "c": 1, "V": 1}[dtype.kind]
      if dtype == np.float32:
        scalar = 2
      return App(f"lax.{name}", fn, (x, scalar), valid=False, note="scalar of another kind")
    big = (2, 3)
    x, y = values(rng, big, dtype), values(rng, _incompatible(rng, big), dtype)
    return App(f"lax.{name}", fn, (x, y), valid=False, note="shapes differ")
  return draw


def _wide(dtype):
  """The dtype a reference computes in: 64-bit of the same kind (NumPy would compute
  ``exp(uint8)`` in float16); integer results are compared modulo the result's width."""
  dtype = np.dtype(dtype)
  if dtype.kind == "c":
    return np.complex128
  if dtype.kind == "f" or dtype == BF16:
    return np.float64
  if dtype.kind == "u":
    return np.uint64
  if dtype.kind == "i":
    return np.int64
  return dtype


# --- numpy: promotion and broadcasting -----------------------------------------------------

def np_unary(name, ref, dtypes_=NUMBERS, positive=False):
  fn = getattr(jnp, name)
  def draw(rng, valid):
    shape = SHAPES[rng.integers(len(SHAPES))]
    dtype = dtypes_[rng.integers(len(dtypes_))]
    x = values(rng, shape, dtype, positive)
    if valid:
      return App(f"jnp.{name}", fn, (x,), lambda x: ref(x.astype(_wide(dtype))))
    return App(f"jnp.{name}", fn, ("not an array",), valid=False, note="a string operand")
  return draw


def np_binary(name, ref, dtypes_=NUMBERS, positive=False):
  fn = getattr(jnp, name)
  def draw(rng, valid):
    shape = SHAPES[rng.integers(1, len(SHAPES))]
    dx = dtypes_[rng.integers(len(dtypes_))]
    dy = dtypes_[rng.integers(len(dtypes_))]
    x = values(rng, shape, dx, positive)
    if valid:
      other = shape if rng.random() < 0.5 else shape[-1:]
      y = values(rng, other, dy, positive)
      return App(f"jnp.{name}", fn, (x, y),
                 lambda x, y: ref(x.astype(_wide(dx)), y.astype(_wide(dy))))
    big = (2, 3)
    x, y = values(rng, big, dx, positive), values(rng, _incompatible(rng, big), dy, positive)
    return App(f"jnp.{name}", fn, (x, y), valid=False, note="shapes do not broadcast")
  return draw


def np_reduction(name, ref, dtypes_=NUMBERS, nonempty=False, single_axis=False):
  fn = getattr(jnp, name)
  def draw(rng, valid):
    shape = SHAPES[rng.integers(len(SHAPES))]
    if nonempty and 0 in shape:
      shape = (2, 3)
    dtype = dtypes_[rng.integers(len(dtypes_))]
    x = values(rng, shape, dtype)
    nd = len(shape)
    if valid:
      axis = None if nd == 0 or rng.random() < 0.3 else int(rng.integers(-nd, nd))
      # NumPy keeps a 0-d input 0-d under keepdims; JAX (and hlox) give shape (1,).
      keepdims = bool(rng.integers(2)) and not single_axis and nd > 0
      kw = {"axis": axis} if single_axis else {"axis": axis, "keepdims": keepdims}
      return App(f"jnp.{name}", lambda x: fn(x, **kw), (x,),
                 lambda x: ref(x.astype(_wide(dtype)), **kw), note=f"{kw}")
    axis = nd + int(rng.integers(0, 2)) if rng.random() < 0.5 else -nd - 1
    return App(f"jnp.{name}", lambda x: fn(x, axis=axis), (x,), valid=False,
               note=f"axis={axis} out of range")
  return draw


def np_reshape(rng, valid):
  shape = SHAPES[rng.integers(len(SHAPES))]
  dtype = ALL[rng.integers(len(ALL))]
  x = values(rng, shape, dtype)
  size = x.size
  if valid:
    new = (size,) if rng.random() < 0.5 else (-1, 1)
    return App("jnp.reshape", lambda x: jnp.reshape(x, new), (x,),
               lambda x: np.reshape(x, new), dtype, note=f"{new}")
  new = (size + 1,)
  return App("jnp.reshape", lambda x: jnp.reshape(x, new), (x,), valid=False,
             note=f"to {new}")


def np_concatenate(rng, valid):
  shape = SHAPES[rng.integers(1, len(SHAPES))]
  dtype = ALL[rng.integers(len(ALL))]
  x, y = values(rng, shape, dtype), values(rng, shape, dtype)
  nd = len(shape)
  axis = int(rng.integers(-nd, nd))
  if valid:
    return App("jnp.concatenate", lambda x, y: jnp.concatenate([x, y], axis=axis), (x, y),
               lambda x, y: np.concatenate([x, y], axis=axis), dtype, note=f"axis={axis}")
  if rng.random() < 0.5:
    bad = nd
    return App("jnp.concatenate", lambda x, y: jnp.concatenate([x, y], axis=bad), (x, y),
               valid=False, note=f"axis={bad}")
  y = values(rng, shape + (1,), dtype)
  return App("jnp.concatenate", lambda x, y: jnp.concatenate([x, y], axis=0), (x, y),
             valid=False, note="ranks differ")


def np_matmul(rng, valid):
  m, k, n = (int(v) for v in rng.integers(1, 4, 3))
  dtype = NUMBERS[rng.integers(len(NUMBERS))]
  x = values(rng, (m, k), dtype)
  if valid:
    y = values(rng, (k, n), dtype)
    return App("jnp.matmul", jnp.matmul, (x, y),
               lambda x, y: x.astype(_wide(dtype)) @ y.astype(_wide(dtype)))
  y = values(rng, (k + 1, n), dtype)
  return App("jnp.matmul", jnp.matmul, (x, y), valid=False, note="inner sizes differ")


def np_take(rng, valid):
  shape = SHAPES[rng.integers(1, len(SHAPES))]
  dtype = ALL[rng.integers(len(ALL))]
  x = values(rng, shape, dtype)
  nd = len(shape)
  axis = int(rng.integers(-nd, nd))
  n = shape[axis]
  if valid:
    idx = rng.integers(0, max(n, 1), (2,)) if n else np.zeros((0,), np.int32)
    idx = idx.astype(np.int32)
    return App("jnp.take", lambda x, i: jnp.take(x, i, axis=axis), (x, idx),
               lambda x, i: np.take(x, i, axis=axis), dtype, note=f"axis={axis}")
  idx = np.zeros((2,), np.float32)
  return App("jnp.take", lambda x, i: jnp.take(x, i, axis=axis), (x, idx), valid=False,
             note="float indices")


def np_squeeze(rng, valid):
  x = values(rng, (2, 1, 3), ALL[rng.integers(len(ALL))])
  if valid:
    return App("jnp.squeeze", lambda x: jnp.squeeze(x, 1), (x,), lambda x: np.squeeze(x, 1),
               x.dtype)
  return App("jnp.squeeze", lambda x: jnp.squeeze(x, 0), (x,), valid=False,
             note="axis of size 2")


def lax_reduce_window(rng, valid):
  x = values(rng, (5, 4), np.float32)
  window = tuple(int(v) for v in rng.integers(1, 3, 2))
  strides = tuple(int(v) for v in rng.integers(1, 3, 2))
  if valid:
    fn = lambda x: lax.reduce_window(x, 0.0, lax.add, window, strides, "VALID")
    return App("lax.reduce_window", fn, (x,), lambda x: _np_window_sum(x, window, strides),
               np.dtype(np.float32))
  if rng.random() < 0.5:
    fn = lambda x: lax.reduce_window(x, np.int32(1), lax.add, window, strides, "VALID")
    return App("lax.reduce_window", fn, (x,), valid=False, note="init of another dtype")
  fn = lambda x: lax.reduce_window(x, 0.0, lax.add, window + (1,), strides, "VALID")
  return App("lax.reduce_window", fn, (x,), valid=False, note="window rank")


def _np_window_sum(x, window, strides):
  (h, w), (sh, sw) = window, strides
  rows = range(0, x.shape[0] - h + 1, sh)
  cols = range(0, x.shape[1] - w + 1, sw)
  return np.array([[x[i:i + h, j:j + w].astype(np.float64).sum() for j in cols]
                   for i in rows]).reshape(len(rows), len(cols))


def lax_top_k(rng, valid):
  x = values(rng, (2, 5), np.float32)
  if valid:
    k = int(rng.integers(0, 6))
    return App("lax.top_k", lambda x: lax.top_k(x, k)[0], (x,),
               lambda x: -np.sort(-x, axis=-1)[..., :k], np.dtype(np.float32), note=f"k={k}")
  k = [2.0, -1, 6][rng.integers(3)]
  return App("lax.top_k", lambda x: lax.top_k(x, k)[0], (x,), valid=False, note=f"k={k}")


def lax_convert(rng, valid):
  shape = SHAPES[rng.integers(len(SHAPES))]
  src = FLOATS[rng.integers(len(FLOATS))]
  dst = (INTS + BOOL + FLOATS)[rng.integers(len(INTS) + 1 + len(FLOATS))]
  x = values(rng, shape, src) * 2
  if valid:
    return App("lax.convert_element_type", lambda x: lax.convert_element_type(x, dst), (x,),
               lambda x: _np_convert(x, dst), np.dtype(dst), note=f"to {np.dtype(dst).name}")
  return App("lax.convert_element_type", lambda x: lax.convert_element_type(x, "not a dtype"),
             (x,), valid=False, note="bad dtype")


def _np_convert(x, dst):
  x = x.astype(np.float64)
  dst = np.dtype(dst)
  if dst.kind in "iu":
    info = np.iinfo(dst)
    return np.trunc(np.clip(x, info.min, info.max)).astype(dst)
  return x.astype(dst)



# --- cumulative reductions, transposing broadcasts, mixed-dtype contractions --------------

def _np_cumlogsumexp(x, axis):
  if x.dtype.kind != "c":
    return np.logaddexp.accumulate(x, axis=axis)
  out = np.log(np.cumsum(np.exp(x), axis=axis))  # principal branch: imag in (-pi, pi]
  return out.real + 1j * ((out.imag + np.pi) % (2 * np.pi) - np.pi)


_CUMULATIVE = {
    "cumsum": (lambda x, axis: np.cumsum(x, axis), NUMBERS),
    "cumprod": (lambda x, axis: np.cumprod(x, axis), NUMBERS),
    "cummax": (lambda x, axis: np.maximum.accumulate(x, axis), FLOATS + INTS + COMPLEX),
    "cummin": (lambda x, axis: np.minimum.accumulate(x, axis), FLOATS + INTS + COMPLEX),
    "cumlogsumexp": (_np_cumlogsumexp, FLOATS + COMPLEX),
}


def lax_cumulative(name):
  fn = getattr(lax, name)
  ref, kinds = _CUMULATIVE[name]
  def draw(rng, valid):
    shape = SHAPES[rng.integers(1, len(SHAPES))]
    nd = len(shape)
    if valid:
      dtype = kinds[rng.integers(len(kinds))]
      x = values(rng, shape, dtype)
      axis, reverse = int(rng.integers(nd)), bool(rng.integers(2))
      def reference(x):
        x = x.astype(_wide(dtype))
        out = ref(np.flip(x, axis) if reverse else x, axis)
        return np.flip(out, axis) if reverse else out
      return App(f"lax.{name}", lambda x: fn(x, axis, reverse), (x,), reference, dtype,
                 note=f"axis={axis} reverse={reverse}")
    if rng.random() < 0.5:
      wrong = [d for d in ALL if d not in kinds]
      x = values(rng, shape, wrong[rng.integers(len(wrong))])
      return App(f"lax.{name}", lambda x: fn(x, 0), (x,), valid=False, note="wrong dtype kind")
    x = values(rng, shape, kinds[rng.integers(len(kinds))])
    axis = [nd, -1][rng.integers(2)]
    return App(f"lax.{name}", lambda x: fn(x, axis), (x,), valid=False,
               note=f"axis={axis} out of range")
  return draw


def lax_broadcast_in_dim(rng, valid):
  """Operand dimension i goes to result dimension dims[i]: any unique dims, in any order
  (out of order, the broadcast also transposes)."""
  shape = SHAPES[rng.integers(len(SHAPES))]
  x = values(rng, shape, ALL[rng.integers(len(ALL))])
  nd = len(shape)
  out_nd = nd + int(rng.integers(0, 2))
  dims = tuple(int(d) for d in rng.permutation(out_nd)[:nd])
  out = [int(rng.integers(1, 3)) for _ in range(out_nd)]
  for i, d in enumerate(dims):
    out[d] = shape[i] if shape[i] != 1 else out[d]
  out = tuple(out)
  if valid:
    def reference(x):
      order = np.argsort(dims)              # operand dims in result order
      kept = np.transpose(x, order) if nd else x
      expanded = np.reshape(kept, [out[d] if d in dims and shape[dims.index(d)] != 1 else 1
                                   for d in range(out_nd)])
      return np.broadcast_to(expanded, out)
    return App("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, out, dims), (x,),
               reference, x.dtype, note=f"{out} dims={dims}")
  if nd >= 2 and rng.random() < 0.5:
    bad = (dims[0],) * nd
    return App("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, out, bad), (x,),
               valid=False, note=f"{out} repeated dims={bad}")
  if nd and shape[0] > 1:
    bad_out = tuple(v + 1 if d == dims[0] else v for d, v in enumerate(out))
    return App("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, bad_out, dims), (x,),
               valid=False, note=f"{bad_out} dims={dims} sizes differ")
  bad = dims + (out_nd,)
  return App("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, out, bad), (x,),
             valid=False, note=f"{out} dims={bad} too many/out of range")


_DOT_NUMBERS = (((1,), (0,)), ((), ()))


def lax_dot_general(rng, valid):
  """Contractions of mixed operand dtypes; with ``preferred_element_type`` int32 on mixed
  int/float operands both are converted to int32 first (JAX's CPU lowering)."""
  m, k, n = (int(v) for v in rng.integers(1, 4, 3))
  pool = NUMBERS + BOOL
  dx, dy = pool[rng.integers(len(pool))], pool[rng.integers(len(pool))]
  x, y = values(rng, (m, k), dx), values(rng, (k, n), dy)
  if valid:
    if dx.kind in "iub" and dy.kind in "iub" and rng.random() < 0.5:
      pref = np.dtype(np.int32)                # integers accumulate in int32
    elif (dx.kind == "f" or dx == BF16) != (dy.kind == "f" or dy == BF16) and \
        "c" not in (dx.kind, dy.kind) and rng.random() < 0.5:
      pref = np.dtype(np.int32)                # the case: mixed int/float -> int32
    elif dx.kind != "c" and dy.kind != "c" and rng.random() < 0.5:
      pref = np.dtype(np.float32)
    else:
      pref = None
    def reference(x, y):
      if pref is not None and x.dtype != y.dtype:
        x, y = _np_convert(x, pref), _np_convert(y, pref)
      wide = np.result_type(_wide(x.dtype), _wide(y.dtype))
      if wide.kind == "b":
        wide = np.int64
      return x.astype(wide) @ y.astype(wide)
    fn = lambda x, y: lax.dot_general(x, y, _DOT_NUMBERS, preferred_element_type=pref)
    return App("lax.dot_general", fn, (x, y), reference, pref,
               note=f"preferred={None if pref is None else pref.name}")
  if rng.random() < 0.5:
    y = values(rng, (k + 1, n), dy)
    return App("lax.dot_general", lambda x, y: lax.dot_general(x, y, _DOT_NUMBERS), (x, y),
               valid=False, note="contracting sizes differ")
  x, y = values(rng, (m, k), np.dtype(np.int32)), values(rng, (k, n), np.dtype(np.int32))
  fn = lambda x, y: lax.dot_general(x, y, _DOT_NUMBERS, preferred_element_type=np.int8)
  return App("lax.dot_general", fn, (x, y), valid=False, note="preferred int8 narrower")

INT_OR_BOOL = INTS + BOOL

FAMILIES = {
    # lax unary
    "lax.neg": lax_unary("neg", np.negative, NUMBERS),
    "lax.sin": lax_unary("sin", np.sin, FLOATS + COMPLEX),
    "lax.exp": lax_unary("exp", np.exp, FLOATS + COMPLEX),
    "lax.log": lax_unary("log", np.log, FLOATS + COMPLEX, positive=True),
    "lax.sqrt": lax_unary("sqrt", np.sqrt, FLOATS + COMPLEX, positive=True),
    "lax.tanh": lax_unary("tanh", np.tanh, FLOATS + COMPLEX),
    "lax.floor": lax_unary("floor", np.floor, FLOATS),
    "lax.abs": lax_unary("abs", np.abs, FLOATS + INTS[:3], also_valid=COMPLEX + INTS[3:]),
    "lax.not": lax_unary("bitwise_not", np.invert, INT_OR_BOOL),
    # lax binary
    "lax.add": lax_binary("add", np.add, NUMBERS),
    "lax.sub": lax_binary("sub", np.subtract, NUMBERS),
    "lax.mul": lax_binary("mul", np.multiply, NUMBERS),
    "lax.div": lax_binary("div", np.true_divide, FLOATS + COMPLEX),
    "lax.max": lax_binary("max", np.maximum, FLOATS + INTS),
    "lax.min": lax_binary("min", np.minimum, FLOATS + INTS),
    "lax.lt": lax_binary("lt", np.less, FLOATS + INTS, out=np.dtype(bool)),
    "lax.eq": lax_binary("eq", np.equal, ALL, out=np.dtype(bool)),
    "lax.atan2": lax_binary("atan2", np.arctan2, FLOATS),
    "lax.and": lax_binary("bitwise_and", np.bitwise_and, INT_OR_BOOL),
    # numpy unary
    "jnp.sin": np_unary("sin", np.sin), "jnp.exp": np_unary("exp", np.exp),
    "jnp.sqrt": np_unary("sqrt", np.sqrt, FLOATS + INTS, positive=True),
    "jnp.log1p": np_unary("log1p", np.log1p, FLOATS + INTS, positive=True),
    "jnp.arcsinh": np_unary("arcsinh", np.arcsinh, FLOATS + INTS),
    "jnp.deg2rad": np_unary("deg2rad", np.deg2rad, FLOATS + INTS + BOOL),
    "jnp.square": np_unary("square", np.square),
    "jnp.abs": np_unary("abs", np.abs),
    "jnp.negative": np_unary("negative", np.negative),
    "jnp.floor": np_unary("floor", np.floor, FLOATS + INTS),
    "jnp.exp2": np_unary("exp2", np.exp2, FLOATS + INTS + BOOL),
    "jnp.log10": np_unary("log10", np.log10, FLOATS + INTS, positive=True),
    # numpy binary
    "jnp.add": np_binary("add", np.add), "jnp.multiply": np_binary("multiply", np.multiply),
    "jnp.subtract": np_binary("subtract", np.subtract, FLOATS + INTS + COMPLEX),
    "jnp.true_divide": np_binary("true_divide", np.true_divide, positive=True),
    "jnp.maximum": np_binary("maximum", np.maximum, FLOATS + INTS),
    "jnp.arctan2": np_binary("arctan2", np.arctan2, FLOATS + INTS),
    "jnp.copysign": np_binary("copysign", np.copysign, FLOATS + INTS),
    "jnp.logaddexp": np_binary("logaddexp", np.logaddexp, FLOATS + INTS),
    "jnp.hypot": np_binary("hypot", np.hypot, FLOATS + INTS),
    # reductions
    "jnp.sum": np_reduction("sum", np.sum), "jnp.prod": np_reduction("prod", np.prod),
    "jnp.mean": np_reduction("mean", np.mean, FLOATS + INTS + BOOL, nonempty=True),
    "jnp.std": np_reduction("std", np.std, FLOATS + INTS, nonempty=True),
    "jnp.max": np_reduction("max", np.max, FLOATS + INTS, nonempty=True),
    "jnp.any": np_reduction("any", np.any, ALL), "jnp.all": np_reduction("all", np.all, ALL),
    "jnp.argmax": np_reduction("argmax", np.argmax, FLOATS + INTS, nonempty=True,
                               single_axis=True),
    "jnp.cumsum": np_reduction("cumsum", np.cumsum, FLOATS + INTS, single_axis=True),
    "jnp.median": np_reduction("median", np.median, FLOATS + INTS, nonempty=True),
    # shapes, indexing, products, windows
    "jnp.reshape": np_reshape, "jnp.concatenate": np_concatenate, "jnp.matmul": np_matmul,
    "jnp.take": np_take, "jnp.squeeze": np_squeeze, "lax.reduce_window": lax_reduce_window,
    "lax.top_k": lax_top_k, "lax.convert_element_type": lax_convert,
    "lax.broadcast_in_dim": lax_broadcast_in_dim, "lax.dot_general": lax_dot_general,
    **{f"lax.{name}": lax_cumulative(name) for name in _CUMULATIVE},
}
